//! Multi-PE jobs on the virtual clock (`SHMEMPLUS_CLOCK=virtual`): transfers take
//! exactly their modeled time, a PE that waited for data is never earlier than its
//! delivery, a barrier leaves every member at one instant, a fixed communication
//! pattern ends at identical virtual times run after run (on a loaded machine too),
//! data is bit-identical under both clocks, faults end the job as on the wall clock,
//! and computation advances the clock by its CPU time. Each job runs one `vt-*` mode
//! of `shmemplus-test-pe` (`src/bin/test_pe/virtual_time.rs`) under the 60 s timeout
//! of the shared helpers; the tests compare what the PEs print.

use shmemplus_cli::launcher::{JobOutcome, JobReport, JobSpec};
use shmemplus_tests::{assert_all_ok, dump, run_with};
use std::process::{Child, Command, Stdio};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

/// One job of `n` PEs (`ppn` per node, `None`: one per node) on `profile` with the
/// given clock and conduit, one board per node (what the modes use), extra `env`.
fn job(
    n: u32,
    ppn: Option<u32>,
    (profile, clock, conduit): (&str, &str, &str),
    args: &[&str],
) -> JobReport {
    let env = [
        ("SHMEMPLUS_PROFILE", profile),
        ("SHMEMPLUS_CLOCK", clock),
        ("SHMEMPLUS_CONDUIT", conduit),
        ("SHMEMPLUS_FPGAS", "1"),
    ];
    run_with(PE, n, ppn, args, &env)
}

/// The number right after "PE `pe`: `label` " on every line of PE `pe`'s output
/// that starts so, in order.
fn ns_after(report: &JobReport, pe: usize, label: &str) -> Vec<u64> {
    let prefix = format!("PE {pe}: {label} ");
    report.stdout[pe]
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|rest| {
            let number = rest.split_whitespace().next().unwrap_or("");
            number
                .parse()
                .unwrap_or_else(|_| panic!("no number in {rest:?}\n{}", dump(report)))
        })
        .collect()
}

/// What each PE of a `vt-pattern` job printed: (final clock in ns, data checksum).
fn pattern_result(report: &JobReport, case: &str) -> Vec<(u64, String)> {
    assert_all_ok(report, "vt-pattern", case);
    (0..report.stdout.len())
        .map(|pe| {
            let clock = ns_after(report, pe, "final clock");
            let sum = report.stdout[pe]
                .lines()
                .find_map(|l| l.strip_prefix(&format!("PE {pe}: checksum ")))
                .unwrap_or_else(|| panic!("{case}: PE {pe} printed no checksum\n{}", dump(report)));
            assert_eq!(clock.len(), 1, "{case}\n{}", dump(report));
            (clock[0], sum.to_string())
        })
        .collect()
}

// ------------------------------------------------------------------- the model

#[test]
fn puts_and_gets_take_exactly_their_modeled_virtual_time() {
    // 2 PEs on 2 nodes; each direction, five sizes from 8 B to 3 MiB + 5 B: a put +
    // quiet and a get between CPUs, a put to a board, a put and a get between boards.
    for (profile, conduit) in [("mu", "shm"), ("novo-g", "shm"), ("novo-g", "am")] {
        let case = format!("{profile}, {conduit}");
        let r = job(2, None, (profile, "virtual", conduit), &["vt-model"]);
        assert_all_ok(&r, "vt-model", &case);
        for pe in 0..2 {
            let checked = r.stdout[pe].matches(" ns, modeled ").count();
            assert_eq!(checked, 25, "{case}: PE {pe} checked\n{}", dump(&r));
        }
    }
}

// ------------------------------------------------------------------- causality

#[test]
fn a_pe_that_waited_is_never_earlier_than_the_delivery_it_saw() {
    // put + flag, put_signal, an atomic add, and a lock handed over in both directions,
    // each after the sender's 1 s of modeled work.
    for conduit in ["shm", "am"] {
        let r = job(2, None, ("novo-g", "virtual", conduit), &["vt-causality"]);
        assert_all_ok(&r, "vt-causality", conduit);
        let waiter = &r.stdout[1];
        for step in [
            "put + flag:",
            "put_signal:",
            "atomic add:",
            "lock from PE 0:",
        ] {
            assert!(
                waiter.contains(step),
                "{conduit}: no '{step}'\n{}",
                dump(&r)
            );
        }
        assert!(r.stdout[0].contains("lock from PE 1:"), "{}", dump(&r));
    }
}

// ------------------------------------------------------------------- barriers

#[test]
fn a_barrier_leaves_every_member_at_the_same_virtual_instant() {
    // (PEs, PEs per node, profile): across nodes only, two PEs per node, no network.
    for (n, ppn, profile) in [
        (4u32, None, "mu"),
        (4, Some(2), "novo-g"),
        (3, None, "native"),
    ] {
        let case = format!("{n} PEs, {ppn:?} per node, {profile}");
        let r = job(n, ppn, (profile, "virtual", "shm"), &["vt-barrier"]);
        assert_all_ok(&r, "vt-barrier", &case);
        let first = ns_after(&r, 0, "barrier 0 at");
        let second = ns_after(&r, 0, "barrier 1 at");
        assert_eq!((first.len(), second.len()), (1, 1), "{case}\n{}", dump(&r));
        for pe in 1..n as usize {
            assert_eq!(
                ns_after(&r, pe, "barrier 0 at"),
                first,
                "{case}: PE {pe}\n{}",
                dump(&r)
            );
            assert_eq!(
                ns_after(&r, pe, "barrier 1 at"),
                second,
                "{case}: PE {pe}\n{}",
                dump(&r)
            );
        }
        // PE n-1 worked (n-1) x 10 ms before the first, PE 0 as long before the second.
        let step = 10_000_000 * u64::from(n - 1);
        assert!(first[0] >= step, "{case}: {first:?}");
        assert!(
            second[0] >= first[0] + step,
            "{case}: {second:?} after {first:?}"
        );
    }
}

// ------------------------------------------------------------------- determinism

/// Two busy processes (`yes > /dev/null`), ended when dropped.
struct Busy(Vec<Child>);

impl Busy {
    fn start() -> Busy {
        Busy(
            (0..2)
                .map(|_| {
                    Command::new("yes")
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("yes starts")
                })
                .collect(),
        )
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `vt-pattern` with `args` twice more on 4 `mu` nodes and asserts every PE's
/// final clock and checksum equal `reference`'s.
fn assert_two_more_runs_match(args: &[&str], reference: &[(u64, String)]) {
    for run in 2..=3 {
        let r = job(4, None, ("mu", "virtual", "shm"), args);
        assert_eq!(
            pattern_result(&r, "run"),
            reference,
            "run {run}\n{}",
            dump(&r)
        );
    }
}

#[test]
fn a_fixed_pattern_ends_at_identical_virtual_times_run_after_run() {
    // 4 PEs on 4 nodes of mu with a board each: ring puts, gets, broadcasts, board
    // transfers, barriers. Three runs, one beside two busy processes, one on the am
    // conduit: every PE's final clock and data are the same each time.
    let args = ["vt-pattern", "6"];
    let reference = pattern_result(&job(4, None, ("mu", "virtual", "shm"), &args), "run 1");
    assert!(reference.iter().all(|(t, _)| *t > 0), "{reference:?}");
    assert_two_more_runs_match(&args, &reference);
    let loaded = {
        let _busy = Busy::start();
        job(4, None, ("mu", "virtual", "shm"), &args)
    };
    assert_eq!(
        pattern_result(&loaded, "loaded"),
        reference,
        "beside two busy processes\n{}",
        dump(&loaded)
    );
    let am = job(4, None, ("mu", "virtual", "am"), &args);
    assert_eq!(
        pattern_result(&am, "am"),
        reference,
        "am conduit\n{}",
        dump(&am)
    );
}

#[test]
fn contending_pes_still_end_at_identical_virtual_times() {
    // Each PE puts to the next PE's board while that PE uses its own: the board's DMA
    // channels are asked for by two PEs whose virtual clocks differ, in whatever order
    // the host runs them. The calendars give each request the same interval either way.
    let args = ["vt-pattern", "6", "contended"];
    let reference = pattern_result(&job(4, None, ("mu", "virtual", "shm"), &args), "run 1");
    assert_two_more_runs_match(&args, &reference);
}

#[test]
fn data_is_bit_identical_under_the_wall_and_the_virtual_clock() {
    let args = ["vt-pattern", "4"];
    let wall = pattern_result(&job(4, None, ("mu", "wall", "shm"), &args), "wall");
    let virt = pattern_result(&job(4, None, ("mu", "virtual", "shm"), &args), "virtual");
    let sums = |v: &[(u64, String)]| v.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>();
    assert_eq!(sums(&wall), sums(&virt));
    // The clocks differ: wall time is real.
    assert_ne!(wall, virt);
}

// ------------------------------------------------------------------- faults

#[test]
fn an_unknown_clock_is_refused_naming_the_variable() {
    // By the PEs at init (`run_job` does not pre-check the configuration)...
    let r = run_with(
        PE,
        2,
        None,
        &["barrier", "2"],
        &[("SHMEMPLUS_CLOCK", "sundial")],
    );
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        dump(&r)
    );
    let said = r.stderr.concat();
    assert!(
        said.contains("SHMEMPLUS_CLOCK")
            && said.contains("sundial")
            && said.contains("wall or virtual"),
        "{}",
        dump(&r)
    );
    // ... and by shmemrun's check before it starts any PE.
    let mut spec = JobSpec::new(2, PE);
    spec.env.push(("SHMEMPLUS_CLOCK".into(), "sundial".into()));
    let err = spec
        .pe_config()
        .expect_err("sundial is not a clock")
        .to_string();
    assert!(err.starts_with("bad value for SHMEMPLUS_CLOCK"), "{err}");
}

/// A job's outcome message with the failed PE's pid taken out (it differs per run).
fn without_pid(r: &JobReport) -> String {
    match &r.outcome {
        JobOutcome::PeFailed { pid, .. } => r.message().replace(&pid.to_string(), "<pid>"),
        _ => r.message(),
    }
}

#[test]
fn a_dead_pe_ends_a_virtual_time_job_as_under_the_wall_clock() {
    // PE 1 SIGKILLs itself, or PE 2 panics, while the others put to it and wait in a
    // barrier: the same outcome and message on both clocks, and nothing left behind
    // (`run_with` checks /dev/shm, the PEs and the socket).
    for args in [["kill", "1"], ["panic", "2"]] {
        let env = |clock| [("SHMEMPLUS_CLOCK", clock)];
        let wall = run_with(PE, 3, None, &args, &env("wall"));
        let virt = run_with(PE, 3, None, &args, &env("virtual"));
        assert!(
            matches!(wall.outcome, JobOutcome::PeFailed { .. }),
            "{}",
            dump(&wall)
        );
        assert_eq!(
            without_pid(&virt),
            without_pid(&wall),
            "{args:?}\n{}",
            dump(&virt)
        );
        if args[0] == "panic" {
            assert!(
                virt.stderr[2].contains("PE 2 fails on purpose"),
                "{}",
                dump(&virt)
            );
        }
    }
}

// ------------------------------------------------------------------- computation

#[test]
fn computation_advances_the_virtual_clock_by_its_cpu_time() {
    // 50 ms of thread CPU time before a put: native runs at this host's speed, mu's
    // CPUs at half of it (100 ms of virtual time).
    for profile in ["native", "mu"] {
        let r = job(2, None, (profile, "virtual", "shm"), &["vt-cpu", "50"]);
        assert_all_ok(&r, "vt-cpu", profile);
        let saw = ns_after(&r, 1, "saw the flag at");
        let want = if profile == "mu" {
            100_000_000
        } else {
            50_000_000
        };
        assert!(saw.len() == 1 && saw[0] >= want, "{profile}\n{}", dump(&r));
    }
}

#[test]
fn a_wait_for_a_turn_does_not_count_as_computation() {
    // PE 0 polls for its turn for 300 ms of real time: that CPU time is the
    // simulation's, not the program's, and must not move its clock.
    let r = job(2, None, ("native", "virtual", "shm"), &["vt-turns", "300"]);
    assert_all_ok(&r, "vt-turns", "native");
    assert!(r.stdout[0].contains("waited for its turn"), "{}", dump(&r));
}
