//! Running the applications as real jobs through the launcher library (the code path of
//! `shmemrun`), each bounded by a timeout and checked for leftovers.

#![allow(dead_code)] // each test file uses a part

use shmemplus_cli::launcher::{run_job, JobOutcome, JobReport, JobSpec, OutputMode};
use std::path::PathBuf;
use std::time::Duration;

/// A job's shape and environment.
#[derive(Default, Clone)]
pub struct Shape<'a> {
    pub n: u32,
    pub pes_per_node: Option<u32>,
    pub env: Vec<(&'a str, &'a str)>,
}

/// `n` PEs, one per node, on the emulated novo-g cluster (4 boards per node) with
/// `clock` (`wall` or `virtual`).
pub fn novo_g(n: u32, clock: &str) -> Shape<'_> {
    Shape {
        n,
        pes_per_node: None,
        env: vec![("SHMEMPLUS_PROFILE", "novo-g"), ("SHMEMPLUS_CLOCK", clock)],
    }
}

/// Runs `program args...` with `shape`, captured output and a 60 s timeout; asserts
/// that the job left nothing behind.
pub fn job(program: &str, shape: &Shape<'_>, args: &[&str]) -> JobReport {
    shmemplus_tests::isolate_cache();
    let mut spec = JobSpec::new(shape.n, program);
    spec.pes_per_node = shape.pes_per_node;
    spec.args = args.iter().map(Into::into).collect();
    spec.env = shape
        .env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    let report = run_job(&spec).expect("the launcher could start the job");
    shmemplus_tests::assert_nothing_left(&report);
    report
}

/// Asserts success and that PE 0 printed `verified`; returns PE 0's output.
pub fn verified(r: &JobReport, what: &str) -> String {
    assert_eq!(
        r.outcome,
        JobOutcome::Success,
        "{what}\n{}",
        shmemplus_tests::dump(r)
    );
    assert!(
        r.stdout[0].lines().any(|l| l == "verified"),
        "{what}\n{}",
        shmemplus_tests::dump(r)
    );
    r.stdout[0].clone()
}

/// Asserts that the job failed and that some PE's stderr contains `needle`.
pub fn failed_with(r: &JobReport, needle: &str) {
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        shmemplus_tests::dump(r)
    );
    assert!(
        r.stderr.concat().contains(needle),
        "wanted {needle:?}\n{}",
        shmemplus_tests::dump(r)
    );
}

/// Asserts that the job succeeded.
pub fn succeeded(r: &JobReport) {
    assert_eq!(
        r.outcome,
        JobOutcome::Success,
        "{}",
        shmemplus_tests::dump(r)
    );
}

/// The phase names of a JSON report, in order.
pub fn phase_names(report: &serde_json::Value) -> Vec<&str> {
    report["phases"]
        .as_array()
        .expect("the report has phases")
        .iter()
        .map(|p| p["name"].as_str().expect("a phase has a name"))
        .collect()
}

/// A fresh directory under the system's temporary directory, named for the test
/// (`name`) and this process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shmemplus-apps-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `--trained FILE` across two runs of `fastfit(extra args)` (a FastFit run that
/// verifies and returns its JSON report): the first trains and writes `file`; the
/// second starts from it, writing its timeline to `devices`, and every one of its
/// `boards` boards' lines goes through the file's small sample, time for time (a new
/// sample would be timed anew).
pub fn trained_twice(
    fastfit: impl Fn(&[&str]) -> serde_json::Value,
    file: &std::path::Path,
    devices: &std::path::Path,
    boards: usize,
) {
    let (file_arg, devices_arg) = (file.display().to_string(), devices.display().to_string());
    let first = fastfit(&["--trained", &file_arg]);
    assert_eq!(first["trained"]["started_trained"], false, "{first}");
    assert_eq!(first["trained"]["written"], true, "{first}");
    // The file: the setting the lines were learned in, and the lines.
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert!(stored["setting"]["app"].is_string(), "{stored}");
    let small = shmemplus_cosched::Trained::from_json(&stored["lines"].to_string())
        .unwrap_or_else(|e| panic!("{e}: {stored}"))
        .samples()[0];
    let second = fastfit(&["--trained", &file_arg, "--devices", &devices_arg]);
    assert_eq!(second["trained"]["started_trained"], true, "{second}");
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(devices).unwrap()).unwrap();
    let on_boards: Vec<&serde_json::Value> = t["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["device"]["kind"] == "board")
        .collect();
    assert_eq!(on_boards.len(), boards, "{t}");
    for b in on_boards {
        let sample = &b["fit"]["samples"][0];
        assert_eq!(sample["items"].as_u64(), Some(small.items), "{b}");
        assert_eq!(sample["seconds"].as_f64(), Some(small.seconds), "{b}");
    }
}
