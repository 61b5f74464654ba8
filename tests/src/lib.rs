//! Helpers shared by the integration tests: run a job of the test PE program through
//! the launcher library (the code path of `shmemrun`) and check that it left nothing
//! behind.

use shmemplus_cli::launcher::{run_job, JobReport, JobSpec, OutputMode};
use std::time::Duration;

/// Runs `program args...` as a job of `n` PEs with captured output, extra environment
/// `env`, and a 60 s timeout so that no test can hang.
pub fn run(program: &str, n: u32, args: &[&str], env: &[(&str, &str)]) -> JobReport {
    let mut spec = JobSpec::new(n, program);
    spec.args = args.iter().map(Into::into).collect();
    spec.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    let report = run_job(&spec).expect("the launcher could start the job");
    assert_nothing_left(&report);
    report
}

/// Asserts that a finished job left no shared memory, no process and no listening
/// socket behind.
pub fn assert_nothing_left(report: &JobReport) {
    let prefix = shmemplus::launch::shm_prefix(&report.job_id);
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .expect("/dev/shm is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix))
        .collect();
    assert!(
        left.is_empty(),
        "job {} left {left:?} in /dev/shm",
        report.job_id
    );
    for &pid in &report.pids {
        let alive = rustix::process::test_kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("pids are positive"),
        )
        .is_ok();
        assert!(
            !alive,
            "PE process {pid} of job {} still exists",
            report.job_id
        );
    }
    let sockets = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    assert!(
        !sockets.contains(&format!("@shmemplus-{}", report.job_id)),
        "the bootstrap socket of job {} is still listening",
        report.job_id
    );
}

/// A one-line summary of a report's output, for assertion messages.
pub fn dump(report: &JobReport) -> String {
    let mut s = format!("outcome: {}\n", report.message());
    for (pe, (o, e)) in report.stdout.iter().zip(&report.stderr).enumerate() {
        s += &format!("--- PE {pe} stdout:\n{o}--- PE {pe} stderr:\n{e}");
    }
    s
}
