//! Helpers shared by the integration tests, once: in the crate root, the job side (run
//! a job of a PE program through the launcher library, the code path of `shmemrun`,
//! check that it left nothing behind and what its PEs said) and the seeded hash every
//! PE derives its data from; in [`pe`], the harness of the PE programs; in
//! [`reference`], the serial references they check results against.

pub mod pe;
pub mod reference;

use shmemplus_cli::launcher::{run_job, JobOutcome, JobReport, JobSpec, OutputMode};
use std::time::Duration;

/// Points the tuning cache of every job this test process starts at a private
/// directory, so tests neither read a developer's cache nor write into their home.
pub fn isolate_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // One fixed directory: a cache, reused by later test runs, never a leak that grows.
        let dir = std::env::temp_dir().join("shmemplus-test-cache");
        // Set before any job starts (inside call_once); PEs inherit it.
        std::env::set_var("SHMEMPLUS_CACHE_DIR", dir);
    });
}

/// Runs `program args...` as a job of `n` PEs with captured output, extra environment
/// `env`, and a 60 s timeout so that no test can hang.
pub fn run(program: &str, n: u32, args: &[&str], env: &[(&str, &str)]) -> JobReport {
    run_with(program, n, None, args, env)
}

/// [`run`] with `ppn` PEs per node (`None`: one PE per node, `shmemrun`'s default).
pub fn run_with(
    program: &str,
    n: u32,
    ppn: Option<u32>,
    args: &[&str],
    env: &[(&str, &str)],
) -> JobReport {
    isolate_cache();
    let mut spec = JobSpec::new(n, program);
    spec.args = args.iter().map(Into::into).collect();
    spec.pes_per_node = ppn;
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
        // A zombie (exited, not yet reaped by whoever inherited it) holds nothing.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        let alive = !matches!(state, None | Some("Z") | Some("X"));
        assert!(
            !alive,
            "PE process {pid} of job {} still exists",
            report.job_id
        );
    }
    // Other tests of this process launch jobs concurrently; a child they are forking
    // holds copies of every descriptor (ours included) until its exec closes them. So
    // give the socket a bounded moment to go, then insist.
    let name = format!("@shmemplus-{}", report.job_id);
    let listed = || {
        std::fs::read_to_string("/proc/net/unix")
            .unwrap_or_default()
            .contains(&name)
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while listed() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        !listed(),
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

/// Asserts the job succeeded and every PE printed "PE <pe>: `mode` ok" (`case` names
/// the job in the failure message).
#[track_caller]
pub fn assert_all_ok(report: &JobReport, mode: &str, case: &str) {
    assert_eq!(
        report.outcome,
        JobOutcome::Success,
        "{case}\n{}",
        dump(report)
    );
    for (pe, out) in report.stdout.iter().enumerate() {
        assert!(
            out.contains(&format!("PE {pe}: {mode} ok")),
            "{case}: PE {pe} did not report '{mode} ok'\n{}",
            dump(report)
        );
    }
}

/// splitmix64: a well-mixed function of `x` (the PE programs derive their data from it,
/// so that every PE can recompute what any other PE wrote).
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of several words, built on [`mix`].
pub fn hash(parts: &[u64]) -> u64 {
    parts.iter().fold(0x5eed, |h, &p| mix(h ^ p))
}
