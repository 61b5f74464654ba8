//! Multi-PE jobs for the OpenSHMEM 1.5 breadth of the API: atomics under contention and
//! against a serial model, put_signal ordering, the wait/test forms, collectives on
//! every kind of team against a serial reference, team translation and slot reuse,
//! locks, non-blocking RMA, an emulated two-node cluster, and bad inputs. Each job runs
//! `shmemplus-test-pe` in one mode; a PE prints "PE <pe>: <mode> ok" only if every
//! check it made held. CPU and board memory (`Place::Fpga(0)`), both conduits.

use shmemplus_cli::launcher::JobReport;
use shmemplus_tests::{assert_all_ok, run_with};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

/// One job: `n` PEs, `ppn` PEs per node (`None`: one PE per node, as `shmemrun`'s
/// default), extra environment; captured output and the 60 s launcher timeout of the
/// shared helpers, so no test can hang.
fn job(n: u32, ppn: Option<u32>, args: &[&str], env: &[(&str, &str)]) -> JobReport {
    run_with(PE, n, ppn, args, env)
}

/// Runs `args` on `n` PEs with the given conduit, PEs per node and profile, and
/// asserts success. Boards: native gets `SHMEMPLUS_FPGAS=1` (board 0 is what the
/// modes use), other profiles keep their own (novo-g: 4 per node).
#[track_caller]
fn run_case(n: u32, ppn: Option<u32>, conduit: &str, profile: &str, args: &[&str]) {
    let case = format!("{n} PEs, {ppn:?} per node, {conduit}, {profile}: {args:?}");
    let mut env = vec![
        ("SHMEMPLUS_CONDUIT", conduit),
        ("SHMEMPLUS_PROFILE", profile),
    ];
    if profile == "native" {
        env.push(("SHMEMPLUS_FPGAS", "1"));
    }
    let r = job(n, ppn, args, &env);
    assert_all_ok(&r, &mode_name(args[0]), &case);
}

/// The word a mode prints before "ok".
fn mode_name(mode: &str) -> String {
    match mode {
        "breadth-errors" => "breadth errors".into(),
        other => other.into(),
    }
}

// ------------------------------------------------------------------- atomics

#[test]
fn contended_atomics_sum_exactly_and_match_a_serial_model_on_cpu() {
    // (PEs, PEs per node, conduit, contended rounds per PE, serial steps per word).
    // Same host (all PEs on one node) and one PE per node. The shm conduit does the
    // rounds with CPU instructions, so it gets many more to really interleave.
    let cases = [
        (2, None, "shm", "20000", "300"),
        (3, Some(3), "shm", "20000", "300"),
        (5, None, "shm", "20000", "200"),
        (2, None, "am", "2000", "200"),
        (3, Some(3), "am", "2000", "200"),
        (5, None, "am", "2000", "100"),
    ];
    for (n, ppn, conduit, rounds, steps) in cases {
        run_case(
            n,
            ppn,
            conduit,
            "native",
            &["atomics", "cpu", rounds, steps, "1"],
        );
    }
}

#[test]
fn contended_atomics_sum_exactly_and_match_a_serial_model_on_board_memory() {
    let cases = [
        (2, None, "shm", "1000", "200"),
        (3, None, "am", "1000", "200"),
        (5, Some(5), "shm", "300", "100"),
    ];
    for (n, ppn, conduit, rounds, steps) in cases {
        run_case(
            n,
            ppn,
            conduit,
            "native",
            &["atomics", "fpga", rounds, steps, "2"],
        );
    }
}

#[test]
fn atomics_across_emulated_nodes() {
    // novo-g with one PE per node: every other PE is across the modeled network, and a
    // board atomic pays the modeled DMA (about 0.65 ms), so board rounds are few.
    let cases = [
        (3, "shm", "cpu", "300", "100"),
        (2, "am", "cpu", "200", "60"),
        (2, "shm", "fpga", "60", "30"),
    ];
    for (n, conduit, place, rounds, steps) in cases {
        run_case(
            n,
            Some(1),
            conduit,
            "novo-g",
            &["atomics", place, rounds, steps, "3"],
        );
    }
}

// ------------------------------------------------------------------- signals and waits

#[test]
fn put_signal_delivers_the_whole_payload_before_the_signal() {
    // 200 rounds of a 64 KiB payload that changes every round: a signal that overtook
    // its data would show a torn or stale payload.
    let cases = [
        (2, "shm", "cpu", "cpu"),
        (5, "shm", "cpu", "cpu"),
        (3, "am", "cpu", "cpu"),
        (3, "shm", "fpga", "cpu"),
        (3, "am", "fpga", "cpu"),
        (2, "shm", "cpu", "fpga"),
        (2, "am", "fpga", "fpga"),
    ];
    for (n, conduit, data, sig) in cases {
        run_case(
            n,
            None,
            conduit,
            "native",
            &["signals", "200", "65536", data, sig],
        );
    }
}

#[test]
fn wait_and_test_forms_name_the_right_elements_and_honour_skip_masks() {
    let cases = [
        (2, "shm", "cpu"),
        (3, "am", "cpu"),
        (2, "shm", "fpga"),
        (2, "am", "fpga"),
    ];
    for (n, conduit, place) in cases {
        run_case(n, None, conduit, "native", &["waits", place, "5"]);
    }
}

// ------------------------------------------------------------------- collectives

/// (PEs, PEs per node, seed, places): 1, 2, 3 and 5 PEs, one PE per node and several,
/// CPU only and sources and destinations at random on the CPU or board 0.
const COLLECTIVE_CASES: [(u32, Option<u32>, &str, &str); 6] = [
    (1, None, "21", "mixed"),
    (2, None, "22", "mixed"),
    (3, Some(3), "23", "mixed"),
    (3, None, "24", "cpu"),
    (5, Some(2), "25", "mixed"),
    (5, None, "26", "cpu"),
];

#[test]
fn collectives_match_a_serial_reference_on_shm() {
    for (n, ppn, seed, places) in COLLECTIVE_CASES {
        run_case(
            n,
            ppn,
            "shm",
            "native",
            &["collectives", seed, "250", "64", places],
        );
    }
}

#[test]
fn collectives_match_a_serial_reference_on_am() {
    // Fails today: see `collectives_on_a_team_of_one_pe_fill_dest_before_returning`.
    for (n, ppn, seed, places) in COLLECTIVE_CASES {
        run_case(
            n,
            ppn,
            "am",
            "native",
            &["collectives", seed, "250", "64", places],
        );
    }
}

#[test]
fn collectives_on_a_team_of_one_pe_fill_dest_before_returning() {
    // Every PE alone in its team (rows of a 1-wide grid), 100 calls of each
    // collective: dest must hold the PE's own block when the call returns.
    for (n, conduit) in [(1, "shm"), (2, "shm"), (1, "am"), (2, "am")] {
        run_case(n, None, conduit, "native", &["solo", "100"]);
    }
}

#[test]
fn collectives_on_an_emulated_two_node_cluster() {
    // novo-g, 4 PEs on 2 nodes: teams span nodes, boards pay modeled DMA.
    run_case(
        4,
        Some(2),
        "shm",
        "novo-g",
        &["collectives", "31", "40", "64", "mixed"],
    );
    // A world barrier crosses nodes: never faster than one modeled network message.
    run_case(4, Some(2), "shm", "novo-g", &["barrier-latency"]);
}

// ------------------------------------------------------------------- teams

#[test]
fn teams_translate_pes_and_reuse_slots_on_shm() {
    for (n, ppn) in [(1, None), (3, Some(2)), (5, Some(2)), (5, None)] {
        run_case(n, ppn, "shm", "native", &["teams", "40"]);
    }
}

#[test]
fn teams_translate_pes_and_reuse_slots_on_am() {
    // Fails today like `collectives_match_a_serial_reference_on_am`: the cycles
    // include teams of one PE (start = n - 1).
    for (n, ppn) in [(3, Some(2)), (5, None)] {
        run_case(n, ppn, "am", "native", &["teams", "40"]);
    }
}

// ------------------------------------------------------------------- locks

#[test]
fn locks_exclude_and_lose_no_update() {
    // (PEs, PEs per node, conduit, rounds per PE, counter place). Without mutual
    // exclusion the get/put increments would lose updates and the owner word would
    // see two holders.
    let cases = [
        (2, None, "shm", "20000", "cpu"),
        (5, Some(5), "shm", "4000", "cpu"),
        (3, None, "shm", "500", "fpga"),
        (3, None, "am", "200", "cpu"),
        (5, None, "am", "150", "fpga"),
    ];
    for (n, ppn, conduit, rounds, place) in cases {
        run_case(n, ppn, conduit, "native", &["locks", rounds, place]);
    }
}

// ------------------------------------------------------------------- nbi

#[test]
fn nbi_puts_and_gets_are_complete_after_quiet() {
    for (n, ppn, conduit) in [(2, None, "shm"), (3, None, "am"), (5, Some(5), "shm")] {
        run_case(n, ppn, conduit, "native", &["nbi", "4", "16"]);
    }
}

#[test]
fn nbi_board_reads_overlap_in_modeled_time() {
    run_case(1, None, "shm", "novo-g", &["nbi-overlap"]);
}

// ------------------------------------------------------------------- bad input

#[test]
fn breadth_bad_inputs_get_typed_errors_and_move_nothing() {
    for (n, conduit) in [(1, "shm"), (2, "shm"), (3, "am")] {
        run_case(n, None, conduit, "native", &["breadth-errors"]);
    }
}
