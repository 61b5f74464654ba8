//! The `hello` example as a real 4-PE job on 2 simulated nodes.

use shmemplus_cli::launcher::{run_job, JobOutcome, JobSpec, OutputMode};
use std::time::Duration;

#[test]
fn hello_runs_on_four_pes_on_two_nodes() {
    let mut spec = JobSpec::new(4, env!("CARGO_BIN_EXE_hello"));
    spec.pes_per_node = Some(2);
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    let r = run_job(&spec).unwrap();
    shmemplus_tests::assert_nothing_left(&r);
    assert_eq!(
        r.outcome,
        JobOutcome::Success,
        "{}",
        shmemplus_tests::dump(&r)
    );
    for pe in 0..4u32 {
        let next = (pe + 1) % 4;
        let line = format!(
            "hello from PE {pe} of 4 on node {}: PE {next} holds {}",
            pe / 2,
            100 * next + 1
        );
        assert!(
            r.stdout[pe as usize].contains(&line),
            "{}",
            shmemplus_tests::dump(&r)
        );
    }
}
