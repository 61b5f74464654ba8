//! `shmemplus bench` as a report tool: an unknown `--ops` name is refused before any PE
//! starts (a typo must not measure nothing and succeed), and so is a misalignment of a
//! page or more; a reader that goes away (`shmemplus bench | head`) ends the job with
//! a message naming the PE and the signal, not a panic. Every run is bounded.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::time::{Duration, Instant};

/// Bound on one bench run (a quick run takes a few seconds).
const LIMIT: Duration = Duration::from_secs(120);

fn bench(args: &[&str]) -> Child {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    common::spawn_shmemplus(&all)
}

/// Waits for `child` within `LIMIT`; its exit status and standard error.
fn finish(child: Child) -> (std::process::ExitStatus, String) {
    let out = common::output_within(child, LIMIT, "shmemplus bench");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_op_is_refused_before_any_pe_starts() {
    let started = Instant::now();
    let (status, stderr) = finish(bench(&["-n", "2", "--ops", "rma,bariier"]));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown op 'bariier'") && stderr.contains("barrier, am"),
        "{stderr}"
    );
    // Refused by the launching side: no job ran (a job of 2 PEs takes far longer).
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_reader_that_goes_away_ends_the_job_without_a_panic() {
    let mut child = bench(&["-n", "2", "--quick", "--ops", "rma,barrier"]);
    // Read the report's first line, then close the pipe, as `head -1` does.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("shmemplus bench:"), "{first}");
    let (status, stderr) = finish(child);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // PE 0 ends by SIGPIPE at its next line and the launcher names it; a report that
    // fit in the pipe before it closed ends normally.
    assert!(
        status.success() || stderr.contains("PE 0") && stderr.contains("SIGPIPE"),
        "{status}: {stderr}"
    );
}

#[test]
fn a_misalignment_of_a_page_or_more_is_refused_before_any_pe_starts() {
    // The private buffers are a page larger than the largest transfer: an offset of a
    // page or more would reach past them (and a huge one overflowed their size).
    for misalign in ["4096", "18446744073709551615"] {
        let started = Instant::now();
        let (status, stderr) = finish(bench(&["-n", "2", "--quick", "--misalign", misalign]));
        assert_eq!(status.code(), Some(2), "{misalign}: {stderr}");
        assert!(stderr.contains("--misalign"), "{misalign}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
