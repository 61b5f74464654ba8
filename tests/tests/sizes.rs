//! Jobs with absurd sizes: a `SHMEM_SYMMETRIC_SIZE` or `SHMEMPLUS_AM_RING` no segment
//! can hold is refused at `init` with a message naming the variable (never a panic,
//! never a job running with a wrapped size), and symmetric allocations whose size
//! overflows fail alike on every PE without desynchronising the job.

use shmemplus_cli::launcher::{ExitCause, JobOutcome, JobReport};
use shmemplus_tests::{dump, run};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-sizes-pe");

/// Asserts that the job failed at init because of `var`: the first PE to fail exited
/// with code 1 (a handled error, not a panic's 101 or a signal) and said why, naming
/// the variable, and no PE succeeded.
fn assert_refused(r: &JobReport, var: &str, value: &str) {
    let JobOutcome::PeFailed { pe, cause, .. } = r.outcome else {
        panic!("{var}={value} was not refused\n{}", dump(r));
    };
    assert_eq!(cause, ExitCause::Code(1), "{var}={value}\n{}", dump(r));
    let said = &r.stderr[pe as usize];
    assert!(
        said.contains(&format!("bad value for {var}")),
        "{var}={value}: the message must name the variable\n{}",
        dump(r)
    );
    assert!(!said.contains("panicked"), "{}", dump(r));
    assert!(
        r.exits.iter().all(|e| *e != Some(ExitCause::Code(0))),
        "{var}={value}: a PE ran to the end\n{}",
        dump(r)
    );
    assert!(
        r.stdout.iter().all(|o| !o.contains("hello ok")),
        "{}",
        dump(r)
    );
}

#[test]
fn absurd_symmetric_sizes_are_refused_at_init() {
    for value in [
        // u64::MAX: rounding it to a page wrapped, and the job ran on a tiny heap.
        "18446744073709551615",
        // Just below the limit: a page multiple whose sum with the rings overflows.
        "18446744073709547520",
        // The largest size the suffix syntax can spell.
        "16777215T",
        // Fits the arithmetic but not a mapping (isize::MAX).
        "9223372036854775807",
        // No such suffix.
        "16E",
    ] {
        let r = run(PE, 2, &["hello"], &[("SHMEM_SYMMETRIC_SIZE", value)]);
        assert_refused(&r, "SHMEM_SYMMETRIC_SIZE", value);
    }
}

#[test]
fn absurd_ring_sizes_are_refused_at_init() {
    for value in ["18446744073709551615", "16777215T", "16E"] {
        let r = run(PE, 2, &["hello"], &[("SHMEMPLUS_AM_RING", value)]);
        assert_refused(&r, "SHMEMPLUS_AM_RING", value);
    }
}

#[test]
fn a_sane_size_still_runs() {
    let r = run(PE, 2, &["hello"], &[("SHMEM_SYMMETRIC_SIZE", "2M")]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(
        r.stdout.iter().all(|o| o.contains("hello ok")),
        "{}",
        dump(&r)
    );
}

#[test]
fn overflowing_allocations_fail_alike_on_every_pe() {
    for conduit in ["shm", "am"] {
        let r = run(
            PE,
            3,
            &["alloc-overflow"],
            &[
                ("SHMEMPLUS_CONDUIT", conduit),
                ("SHMEM_SYMMETRIC_SIZE", "4M"),
                ("SHMEMPLUS_FPGAS", "1"),
            ],
        );
        assert_eq!(r.outcome, JobOutcome::Success, "{conduit}\n{}", dump(&r));
        for (pe, out) in r.stdout.iter().enumerate() {
            for place in ["Cpu", "Fpga(0)"] {
                assert!(
                    out.contains(&format!("PE {pe}: {place} overflow ok")),
                    "{conduit}\n{}",
                    dump(&r)
                );
            }
        }
    }
}
