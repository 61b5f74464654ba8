//! The `add-one` example as real jobs: on the native profile with remote boards, and on
//! the emulated novo-g cluster.

use shmemplus_cli::launcher::{run_job, JobOutcome, JobSpec, OutputMode};
use std::time::Duration;

fn add_one(n: u32, env: &[(&str, &str)]) -> shmemplus_cli::launcher::JobReport {
    shmemplus_tests::isolate_cache();
    let mut spec = JobSpec::new(n, env!("CARGO_BIN_EXE_add-one"));
    spec.args = vec!["2000".into()];
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    spec.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let r = run_job(&spec).unwrap();
    shmemplus_tests::assert_nothing_left(&r);
    r
}

#[test]
fn add_one_verifies_on_every_node_board() {
    for env in [
        vec![("SHMEMPLUS_FPGAS", "1")],
        vec![("SHMEMPLUS_PROFILE", "novo-g")],
    ] {
        let r = add_one(3, &env);
        assert_eq!(
            r.outcome,
            JobOutcome::Success,
            "{env:?}\n{}",
            shmemplus_tests::dump(&r)
        );
        assert!(
            r.stdout[0].contains("verified"),
            "{}",
            shmemplus_tests::dump(&r)
        );
        for node in 0..3 {
            assert!(
                r.stdout[0].contains(&format!("into board 0 of node {node}")),
                "{}",
                shmemplus_tests::dump(&r)
            );
        }
        assert!(r.stdout[2].contains("ran add-one on board 0 of node 2"));
    }
}

#[test]
fn add_one_without_boards_is_a_clear_error() {
    let r = add_one(2, &[("SHMEMPLUS_FPGAS", "0")]);
    assert!(matches!(r.outcome, JobOutcome::PeFailed { .. }));
    assert!(
        r.stderr.concat().contains("no FPGA boards"),
        "{}",
        shmemplus_tests::dump(&r)
    );
}
