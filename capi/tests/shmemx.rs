//! The `shmemx_` board routines from C: `tests/c/shmemx_*.c` on 4 PEs with boards
//! (`SHMEMPLUS_FPGAS`, what `shmemrun --fpgas` sets, or the `novo-g` profile's),
//! under both conduits, and their fatal errors.

mod common;

use common::{build, run_ok};
use shmemplus_runtime::JobOutcome;
use shmemplus_tests::{dump, run};

#[test]
fn boards_are_reached_from_cpu_and_from_boards_under_native_and_both_conduits() {
    run_ok("shmemx_boards.c", 4, &[("SHMEMPLUS_FPGAS", "2")]);
    run_ok(
        "shmemx_boards.c",
        4,
        &[("SHMEMPLUS_FPGAS", "1"), ("SHMEMPLUS_CONDUIT", "am")],
    );
}

#[test]
fn boards_are_reached_under_the_novo_g_profile() {
    run_ok("shmemx_boards.c", 4, &[("SHMEMPLUS_PROFILE", "novo-g")]);
}

/// Runs `shmemx_errors.c` in `mode` on 4 PEs with one board per node; asserts the
/// job failed and its output holds every one of `wanted`.
fn fails_with(mode: &str, wanted: &[&str]) {
    let exe = build("shmemx_errors.c", &[]);
    let report = run(
        &exe.to_string_lossy(),
        4,
        &[mode],
        &[("SHMEMPLUS_FPGAS", "1")],
    );
    let all = dump(&report);
    assert_ne!(report.outcome, JobOutcome::Success, "{mode}: {all}");
    for w in wanted {
        assert!(all.contains(w), "{mode}: no {w:?} in\n{all}");
    }
}

#[test]
fn a_board_that_does_not_exist_is_named() {
    fails_with(
        "bad-board",
        &["shmemx_fpga_malloc: argument board: 1 is not a board of this node (boards 0..1)"],
    );
}

#[test]
fn a_cpu_address_has_no_board_offset() {
    fails_with(
        "cpu-offset",
        &[
            "shmemplus: PE 1: shmemx_fpga_offset: argument addr:",
            "is CPU memory",
        ],
    );
}

#[test]
fn an_exhausted_board_heap_says_so() {
    fails_with(
        "board-exhausted",
        &["shmemx_fpga_malloc: FPGA heap of board 0 exhausted"],
    );
}

#[test]
fn board_routines_without_boards_end_the_job_clearly() {
    let exe = build("shmemx_errors.c", &[]);
    let report = run(
        &exe.to_string_lossy(),
        2,
        &["bad-board"],
        &[("SHMEMPLUS_FPGAS", "0")],
    );
    let all = dump(&report);
    assert_ne!(report.outcome, JobOutcome::Success, "{all}");
    assert!(
        all.contains("shmemx_fpga_malloc: argument board: 0: this job's nodes have no FPGA boards"),
        "{all}"
    );
}

#[test]
fn atomics_on_board_addresses_are_exact_under_both_conduits_and_novo_g() {
    run_ok("shmemx_atomics.c", 4, &[("SHMEMPLUS_FPGAS", "1")]);
    run_ok(
        "shmemx_atomics.c",
        4,
        &[("SHMEMPLUS_FPGAS", "2"), ("SHMEMPLUS_CONDUIT", "am")],
    );
    run_ok("shmemx_atomics.c", 4, &[("SHMEMPLUS_PROFILE", "novo-g")]);
}

#[test]
fn boards_shared_by_two_pes_of_a_node_keep_their_partitions_apart() {
    // Two PEs per node: each board of a node holds one partition per PE, and a put to
    // the node peer's board address must land in the peer's partition, not this PE's.
    for program in ["shmemx_boards.c", "shmemx_atomics.c"] {
        let exe = common::build(program, &[]);
        let name = program.trim_end_matches(".c");
        for conduit in ["shm", "am"] {
            let env = [("SHMEMPLUS_FPGAS", "1"), ("SHMEMPLUS_CONDUIT", conduit)];
            let report = shmemplus_tests::run_with(&exe.to_string_lossy(), 4, Some(2), &[], &env);
            shmemplus_tests::assert_all_ok(
                &report,
                name,
                &format!("{program}, 2 PEs per node, {conduit}"),
            );
        }
    }
}
