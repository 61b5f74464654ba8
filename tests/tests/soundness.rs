//! Job tests for the soundness fixes: AM records delivered exactly once under full
//! rings, `quiet` from several threads of a PE, concurrent team splits, and splits whose
//! arguments differ between PEs (an error on every PE, never a hang).

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{dump, run};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-soundness-pe");

/// Waits that sleep at once (no spin, no yield phase): every wait for ring space or a
/// reply goes through the sleep phase, where a thrown-away answer used to repeat a push.
const SLEEPY: [(&str, &str); 2] = [
    ("SHMEMPLUS_WAIT_SPIN_US", "0"),
    ("SHMEMPLUS_WAIT_YIELD_US", "0"),
];

/// Oversubscribed (6 PEs, each with a progress thread, on this machine's cores), with
/// 4 KiB rings (a record of 64 bytes: 64 in a ring) and waits that sleep at once: the
/// posted adds fill the rings and the senders sleep for space. A record pushed twice
/// makes the count too high; a reply matched to the wrong token shows in the fetched
/// values. 6 PEs x (80 000 adds + 4 000 fetches) x 2 places > 10^6 operations.
#[test]
fn am_atomics_are_applied_exactly_once_with_full_rings() {
    for place in ["cpu", "fpga"] {
        let r = run(
            PE,
            6,
            &["am-counters", place, "80000", "4000"],
            &[
                ("SHMEMPLUS_CONDUIT", "am"),
                ("SHMEMPLUS_AM_RING", "4K"),
                SLEEPY[0],
                SLEEPY[1],
            ],
        );
        assert_eq!(r.outcome, JobOutcome::Success, "{place}\n{}", dump(&r));
        assert!(
            r.stdout[0].contains(&format!("am counters exact: {} operations", 6 * 84_000)),
            "{}",
            dump(&r)
        );
    }
}

/// Four threads per PE, each a writer and a reader of its own 8 KiB block, through
/// 4 KiB rings: a `quiet` that returns while another thread's flush is still in flight
/// lets the flag overtake the put's last records.
#[test]
fn quiet_from_several_threads_completes_each_threads_puts() {
    for n in [2u32, 3] {
        let r = run(
            PE,
            n,
            &["threaded-quiet", "4", "300", "1024"],
            &[("SHMEMPLUS_AM_RING", "4K"), SLEEPY[0], SLEEPY[1]],
        );
        assert_eq!(r.outcome, JobOutcome::Success, "{n} PEs\n{}", dump(&r));
        assert!(
            r.stdout
                .iter()
                .all(|o| o.contains("threaded quiet ordered 4 x 300 puts of 1024 words")),
            "{}",
            dump(&r)
        );
    }
}

/// Two threads per PE split two parents concurrently, 40 times each; teams that got
/// the same slot would corrupt each other's reductions or hang.
#[test]
fn concurrent_splits_get_distinct_slots() {
    for n in [2u32, 4] {
        let r = run(PE, n, &["split-race", "40"], &[]);
        assert_eq!(r.outcome, JobOutcome::Success, "{n} PEs\n{}", dump(&r));
        assert!(
            r.stdout.iter().all(|o| o.contains("sums exact")),
            "{}",
            dump(&r)
        );
    }
}

/// A split whose arguments are invalid, or different, on one PE only returns an error
/// on every PE (before the fix the others waited forever), and later splits work.
#[test]
fn a_split_with_arguments_bad_on_one_pe_fails_everywhere() {
    let r = run(PE, 3, &["split-mismatch"], &[]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    for (pe, out) in r.stdout.iter().enumerate() {
        assert!(
            out.contains("split mismatch refused on every PE"),
            "PE {pe}\n{}",
            dump(&r)
        );
    }
    assert!(r.stdout[1].contains("stride 0"), "{}", dump(&r));
    assert!(r.stdout[1].contains("disagree"), "{}", dump(&r));
}
