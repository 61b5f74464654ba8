//! Integration tests of the launcher library with real processes (`sh -c` scripts and the
//! `shmemplus-bootstrap-probe` test tool). Every job carries a timeout, so no test can hang;
//! the time bounds asserted are an order of magnitude looser than the expected times and
//! far below the `sleep 30` a broken teardown would wait for.

use std::path::Path;
use std::time::Duration;

mod common;

use common::{alive, group_members};
use shmemplus_runtime::{run_job, ExitCause, JobOutcome, JobSpec, LaunchError, OutputMode};

/// Safety net for every job: far longer than any test needs, shorter than `sleep 30`.
const JOB_TIMEOUT: Duration = Duration::from_secs(25);
/// Teardown must be much faster than this (it takes about a second): the bound is loose
/// enough for a loaded 2-core machine and still below `JOB_TIMEOUT` and the `sleep 30`
/// a broken teardown would wait for.
const PROMPT: Duration = Duration::from_secs(20);

fn sh_job(n: u32, script: &str) -> JobSpec {
    let mut spec = JobSpec::new(n, "sh");
    spec.args = vec!["-c".into(), script.into()];
    spec.output = OutputMode::Capture;
    spec.timeout = Some(JOB_TIMEOUT);
    spec
}

fn probe_job(n: u32, mode: &str) -> JobSpec {
    let mut spec = JobSpec::new(n, env!("CARGO_BIN_EXE_shmemplus-bootstrap-probe"));
    spec.args = vec![mode.into()];
    spec.output = OutputMode::Capture;
    spec.timeout = Some(JOB_TIMEOUT);
    spec
}

/// Shell snippet: mark this PE ready (a job-prefixed `/dev/shm` file, so the launcher's
/// sweep removes it).
const READY: &str = "touch /dev/shm/shmemplus-${SHMEMPLUS_JOB_ID}-ready$SHMEMPLUS_PE";

/// Shell snippet: wait until `n` PEs are ready (bounded by the job timeout).
fn wait_ready(n: u32) -> String {
    format!(
        "until [ $(ls /dev/shm/shmemplus-${{SHMEMPLUS_JOB_ID}}-ready* 2>/dev/null | wc -l) -ge {n} ]; \
         do sleep 0.02; done"
    )
}

/// Asserts that nothing of any PE of the job is left running.
fn assert_all_gone(pids: &[u32]) {
    for &pid in pids {
        assert!(!alive(pid), "PE process {pid} is still running");
        assert_eq!(
            group_members(pid),
            Vec::<u32>::new(),
            "group {pid} not empty"
        );
    }
}

/// The pids a PE script printed, one per line.
fn printed_pids(out: &str) -> Vec<u32> {
    out.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// Each PE printed the pid of one background child: none may survive, the job must
/// have ended promptly, and no PE may be left.
fn assert_background_children_gone(report: &shmemplus_runtime::JobReport) {
    for (pe, out) in report.stdout.iter().enumerate() {
        let pids = printed_pids(out);
        assert_eq!(pids.len(), 1);
        assert!(!alive(pids[0]), "background sleep of PE {pe} survived");
    }
    assert!(report.elapsed < PROMPT, "took {:?}", report.elapsed);
    assert_all_gone(&report.pids);
}

#[test]
fn all_pes_succeed_and_see_their_environment() {
    let mut spec = sh_job(
        3,
        "echo \"$SHMEMPLUS_PE $SHMEMPLUS_N_PES $SHMEMPLUS_PES_PER_NODE $SHMEMPLUS_NODES \
         $SHMEMPLUS_JOB_ID $SHMEMPLUS_BOOTSTRAP ${#SHMEMPLUS_SECRET} $EXTRA\"; echo err$SHMEMPLUS_PE >&2",
    );
    spec.pes_per_node = Some(2);
    spec.env = vec![("EXTRA".into(), "extra-value".into())];
    let report = run_job(&spec).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success, "{}", report.message());
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.exits, vec![Some(ExitCause::Code(0)); 3]);
    assert_eq!(report.job_id.len(), 16);
    for pe in 0..3 {
        let want = format!(
            "{pe} 3 2 2 {id} @shmemplus-{id} 64 extra-value\n",
            id = report.job_id
        );
        assert_eq!(report.stdout[pe], want);
        assert_eq!(report.stderr[pe], format!("err{pe}\n"));
    }
    assert_all_gone(&report.pids);
}

#[test]
fn failing_pe_ends_the_job_and_kills_the_others() {
    let spec = sh_job(
        4,
        &format!(
            "echo $$; if [ \"$SHMEMPLUS_PE\" = 2 ]; then {}; exit 3; fi; \
             sleep 30 & echo $!; {READY}; wait",
            wait_ready(3)
        ),
    );
    let report = run_job(&spec).unwrap();
    assert_eq!(
        report.outcome,
        JobOutcome::PeFailed {
            pe: 2,
            pid: report.pids[2],
            cause: ExitCause::Code(3)
        }
    );
    assert_eq!(report.exit_code(), 3);
    assert!(report.elapsed < PROMPT, "took {:?}", report.elapsed);
    assert_eq!(
        report.message(),
        format!("PE 2 (pid {}) exited with code 3", report.pids[2])
    );
    for pe in [0, 1, 3] {
        assert_eq!(report.exits[pe], Some(ExitCause::Signal(libc::SIGTERM)));
        let pids = printed_pids(&report.stdout[pe]);
        assert_eq!(pids.len(), 2, "PE {pe} printed {:?}", report.stdout[pe]);
        assert_eq!(pids[0], report.pids[pe]);
        assert!(!alive(pids[1]), "PE {pe}'s sleep {} survived", pids[1]);
    }
    assert_all_gone(&report.pids);
}

#[test]
fn pe_killed_by_a_signal_is_reported() {
    let spec = sh_job(
        3,
        "if [ \"$SHMEMPLUS_PE\" = 1 ]; then kill -9 $$; fi; sleep 30",
    );
    let report = run_job(&spec).unwrap();
    assert_eq!(
        report.outcome,
        JobOutcome::PeFailed {
            pe: 1,
            pid: report.pids[1],
            cause: ExitCause::Signal(9)
        }
    );
    assert_eq!(report.exit_code(), 137);
    assert!(report
        .message()
        .ends_with("was killed by signal 9 (SIGKILL)"));
    assert!(report.elapsed < PROMPT, "took {:?}", report.elapsed);
    assert_all_gone(&report.pids);
}

#[test]
fn timeout_ends_the_job() {
    let mut spec = sh_job(2, "sleep 30");
    spec.timeout = Some(Duration::from_millis(300));
    let report = run_job(&spec).unwrap();
    assert_eq!(
        report.outcome,
        JobOutcome::TimedOut {
            after: Duration::from_millis(300)
        }
    );
    assert_eq!(report.exit_code(), 124);
    assert_eq!(report.message(), "job exceeded the timeout of 300ms");
    assert!(report.elapsed >= Duration::from_millis(300));
    assert!(report.elapsed < PROMPT, "took {:?}", report.elapsed);
    assert_all_gone(&report.pids);
}

#[test]
fn pe_that_ignores_sigterm_is_killed() {
    let mut spec = sh_job(2, "trap '' TERM; echo ready; while :; do sleep 0.05; done");
    spec.timeout = Some(Duration::from_millis(300));
    let report = run_job(&spec).unwrap();
    assert!(matches!(report.outcome, JobOutcome::TimedOut { .. }));
    assert!(
        report.stdout.iter().all(|s| s == "ready\n"),
        "{:?}",
        report.stdout
    );
    assert!(report
        .exits
        .iter()
        .all(|e| *e == Some(ExitCause::Signal(libc::SIGKILL))));
    assert!(report.elapsed < PROMPT, "took {:?}", report.elapsed);
    assert_all_gone(&report.pids);
}

#[test]
fn background_children_are_killed_with_a_failing_pe() {
    let spec = sh_job(
        2,
        &format!(
            "sleep 30 & echo $!; {READY}; if [ \"$SHMEMPLUS_PE\" = 0 ]; then {}; exit 1; fi; wait",
            wait_ready(2)
        ),
    );
    let report = run_job(&spec).unwrap();
    assert!(matches!(
        report.outcome,
        JobOutcome::PeFailed {
            pe: 0,
            cause: ExitCause::Code(1),
            ..
        }
    ));
    assert_background_children_gone(&report);
}

#[test]
fn background_children_do_not_outlive_a_successful_job() {
    let spec = sh_job(2, "sleep 30 & echo $!; exit 0");
    let report = run_job(&spec).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success);
    assert_background_children_gone(&report);
}

#[test]
fn shared_memory_of_the_job_is_removed_and_others_are_kept() {
    let unrelated = format!("/dev/shm/shmemplus-notthisjob{}-keep", std::process::id());
    std::fs::write(&unrelated, b"x").unwrap();
    let spec = sh_job(
        3,
        &format!(
            "f=/dev/shm/shmemplus-${{SHMEMPLUS_JOB_ID}}-heap$SHMEMPLUS_PE; touch $f && ls $f; \
             {READY}; if [ \"$SHMEMPLUS_PE\" = 1 ]; then {}; exit 1; fi; sleep 30",
            wait_ready(3)
        ),
    );
    let report = run_job(&spec).unwrap();
    let kept = Path::new(&unrelated).exists();
    let _ = std::fs::remove_file(&unrelated);
    assert!(matches!(report.outcome, JobOutcome::PeFailed { pe: 1, .. }));
    for pe in 0..3 {
        let path = format!("/dev/shm/shmemplus-{}-heap{pe}", report.job_id);
        assert_eq!(
            report.stdout[pe],
            format!("{path}\n"),
            "PE {pe} did not create it"
        );
        assert!(!Path::new(&path).exists(), "{path} was left behind");
    }
    assert!(kept, "the sweep removed another job's segment");
}

#[test]
fn missing_program_is_a_spawn_error_naming_it() {
    let spec = JobSpec::new(2, "/nonexistent/shmemplus-no-such-program");
    match run_job(&spec) {
        Err(e @ LaunchError::Spawn { pe: 0, .. }) => {
            assert!(e.to_string().contains("shmemplus-no-such-program"), "{e}");
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

#[test]
fn programs_that_never_connect_are_fine() {
    let report = run_job(&sh_job(2, "exit 0")).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success);
}

#[test]
fn bootstrap_allgather_gives_every_pe_all_ranks() {
    let report = run_job(&probe_job(4, "gather")).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success, "{:?}", report.stderr);
    for pe in 0..4 {
        assert_eq!(
            report.stdout[pe], "welcome n_pes=4\nround 0: [0, 1, 2, 3]\nround 1: [0, 1, 4, 9]\n",
            "PE {pe}, stderr {:?}",
            report.stderr[pe]
        );
    }
}

#[test]
fn bootstrap_rejects_a_wrong_secret() {
    let report = run_job(&probe_job(2, "wrong-secret")).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success, "{:?}", report.stderr);
    for pe in 0..2 {
        assert_eq!(report.stdout[pe], "rejected: wrong job secret\n");
    }
}

#[test]
fn bootstrap_rejects_a_pe_connecting_twice() {
    let report = run_job(&probe_job(2, "twice")).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success, "{:?}", report.stderr);
    for pe in 0..2 {
        assert_eq!(
            report.stdout[pe],
            format!("welcome n_pes=2\nsecond: rejected: PE {pe} is already connected\n")
        );
    }
}

#[test]
fn bootstrap_closes_a_connection_that_skips_rounds() {
    let report = run_job(&probe_job(1, "bad-round")).unwrap();
    assert_eq!(report.outcome, JobOutcome::Success, "{:?}", report.stderr);
    assert_eq!(report.stdout[0], "welcome n_pes=1\nclosed\n");
}

#[test]
fn probe_failure_is_a_failed_pe() {
    // A PE that exits 1 (the probe given an unknown mode) fails the job.
    let mut spec = probe_job(2, "no-such-mode");
    spec.output = OutputMode::Capture;
    let report = run_job(&spec).unwrap();
    assert!(matches!(
        report.outcome,
        JobOutcome::PeFailed {
            cause: ExitCause::Code(1),
            ..
        }
    ));
    assert!(report.stderr.iter().any(|s| s.contains("unknown mode")));
}

#[test]
fn pe_that_exits_without_finalizing_ends_the_job() {
    let start = std::time::Instant::now();
    let mut spec = probe_job(3, "leave-early");
    spec.timeout = Some(Duration::from_secs(25));
    let report = run_job(&spec).unwrap();
    match report.outcome {
        JobOutcome::PeLeftEarly { pe, .. } => assert!(pe == 1 || pe == 2, "{pe}"),
        ref other => panic!("{other:?} {:?}", report.stderr),
    }
    assert!(
        report.message().contains("without finalizing"),
        "{}",
        report.message()
    );
    assert_eq!(report.exit_code(), 1);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "PE 0 was not ended promptly"
    );
}
