//! Soundness regressions of the job's edges: overlapping transfers within one PE's
//! memory, the job secret leaking to a PE's children, and a progress thread that
//! panics or never stops. Each test launches `shmemplus-misc-pe` jobs.

use shmemplus_cli::launcher::{ExitCause, JobOutcome};
use shmemplus_tests::{dump, run};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-misc-pe");

#[test]
fn overlapping_put_from_and_get_into_on_one_pe_are_memmoves() {
    // CPU over the shm conduit (one direct copy), CPU over the am conduit and a board
    // (staged in 1 MiB pieces): every route gives memmove's result.
    let runs: [(&str, &[(&str, &str)]); 3] = [
        ("cpu", &[("SHMEMPLUS_CONDUIT", "shm")]),
        ("cpu", &[("SHMEMPLUS_CONDUIT", "am")]),
        (
            "fpga",
            &[("SHMEMPLUS_CONDUIT", "shm"), ("SHMEMPLUS_FPGAS", "1")],
        ),
    ];
    for (place, env) in runs {
        let mut env = env.to_vec();
        env.push(("SHMEM_SYMMETRIC_SIZE", "8M"));
        let r = run(PE, 1, &["overlap", place], &env);
        assert_eq!(
            r.outcome,
            JobOutcome::Success,
            "{place} {env:?}\n{}",
            dump(&r)
        );
        assert!(
            r.stdout[0].contains("18 overlapping transfers"),
            "{place} {env:?}\n{}",
            dump(&r)
        );
    }
}

#[test]
fn programs_a_pe_starts_do_not_inherit_the_job_secret() {
    let r = run(PE, 2, &["secret"], &[]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    for (pe, out) in r.stdout.iter().enumerate() {
        assert!(
            out.contains(&format!("PE {pe}: secret gone after init (child saw none)")),
            "{}",
            dump(&r)
        );
    }
}

#[test]
fn a_panicking_progress_thread_ends_the_job_naming_its_pe() {
    if !cfg!(debug_assertions) {
        // The hook that makes the progress thread panic exists in debug builds only.
        eprintln!("skipped: needs a debug build of shmemplus");
        return;
    }
    let r = run(
        PE,
        2,
        &["progress-panic"],
        &[("SHMEMPLUS_TEST_PANIC_PROGRESS", "1")],
    );
    // Not a timeout: PE 1 ended itself, and the launcher ended the job on its account.
    assert_eq!(
        r.outcome,
        JobOutcome::PeFailed {
            pe: 1,
            pid: r.pids[1],
            cause: ExitCause::Code(70),
        },
        "{}",
        dump(&r)
    );
    assert!(r.message().starts_with("PE 1 "), "{}", dump(&r));
    assert!(
        r.stderr[1].contains("shmemplus: PE 1: the progress thread panicked"),
        "{}",
        dump(&r)
    );
}

#[test]
fn finalize_returns_when_a_handler_holds_the_progress_thread() {
    let r = run(PE, 1, &["blocked-handler"], &[]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(
        r.stdout[0].contains("finalize returned while the progress thread was blocked"),
        "{}",
        dump(&r)
    );
    assert!(
        r.stderr[0].contains("the progress thread did not stop"),
        "{}",
        dump(&r)
    );
}
