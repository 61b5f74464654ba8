//! Existing OpenSHMEM programs, unmodified: the two C benchmarks of `bench-oshmem/`,
//! written for Open MPI's OSHMEM, built with `shmemcc` and run under the launcher with
//! small iteration counts. `osh_rma.c` checks the data of its puts and gets itself;
//! `osh_bench.c` runs atomics, barriers and collectives, once through the 1.5 team
//! routines (what it picks for a 1.5 `shmem.h`) and once through the 1.4 active-set
//! routines with `pSync` (`-DOSH_BENCH_LEGACY`).

mod common;

use common::build;
use shmemplus_runtime::JobOutcome;
use shmemplus_tests::{dump, run};

/// Builds `bench-oshmem/<name>.c` with `extra` flags (the impl label included).
fn build_bench(name: &str, extra: &[&str]) -> std::path::PathBuf {
    let mut flags = vec![
        "-DOSH_RMA_IMPL=\"shmemplus-c\"",
        "-DOSH_BENCH_IMPL=\"shmemplus-c\"",
    ];
    flags.extend_from_slice(extra);
    build(&format!("../../../bench-oshmem/{name}.c"), &flags)
}

/// Asserts the job succeeded and PE 0 printed a result line for each of `ops`.
fn assert_reported(report: &shmemplus_runtime::JobReport, ops: &[&str], case: &str) {
    let all = dump(report);
    assert_eq!(report.outcome, JobOutcome::Success, "{case}\n{all}");
    assert!(!all.contains("FAILED"), "{case}\n{all}");
    for op in ops {
        let line = format!("{{\"impl\":\"shmemplus-c\",\"op\":\"{op}\"");
        assert!(
            report.stdout[0].contains(&line),
            "{case}: no {op} line\n{all}"
        );
    }
}

#[test]
fn osh_rma_runs_unmodified_and_its_data_checks_pass() {
    let exe = build_bench("osh_rma", &[]);
    let knobs = [
        ("OSH_RMA_REPS", "3"),
        ("OSH_RMA_ITERS", "200"),
        ("OSH_RMA_MIN", "8"),
        ("OSH_RMA_MAX", "65536"),
    ];
    for extra in [
        None,
        Some(("SHMEMPLUS_CONDUIT", "am")),
        Some(("SHMEMPLUS_PROFILE", "novo-g")),
    ] {
        let env: Vec<(&str, &str)> = knobs.iter().copied().chain(extra).collect();
        let report = run(&exe.to_string_lossy(), 2, &[], &env);
        let ops = ["put_lat", "get_lat", "put", "get"];
        assert_reported(&report, &ops, &format!("osh_rma with {extra:?}"));
    }
}

#[test]
fn osh_bench_runs_unmodified_on_team_and_active_set_collectives() {
    let knobs = [
        ("OSH_BENCH_REPS", "3"),
        ("OSH_BENCH_AMO_ITERS", "200"),
        ("OSH_BENCH_BAR_ITERS", "50"),
        ("OSH_BENCH_MAX_BYTES", "65536"),
    ];
    let ops = [
        "fetch_add",
        "barrier_all",
        "broadcast",
        "fcollect",
        "alltoall",
    ];
    for (flags, label) in [
        (&[][..], "teams"),
        (&["-DOSH_BENCH_LEGACY"][..], "active sets"),
    ] {
        let exe = build_bench("osh_bench", flags);
        for extra in [None, Some(("SHMEMPLUS_CONDUIT", "am"))] {
            let env: Vec<(&str, &str)> = knobs.iter().copied().chain(extra).collect();
            let report = run(&exe.to_string_lossy(), 4, &[], &env);
            assert_reported(
                &report,
                &ops,
                &format!("osh_bench ({label}) with {extra:?}"),
            );
        }
    }
}
