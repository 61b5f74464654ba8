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
/// 4 KiB rings (56 atomic records of 72 bytes) and waits that sleep at once: bursts of
/// 100 posted adds between fetches fill the rings and the senders sleep for space. A
/// record pushed twice makes the count too high (the code before the fix counted
/// 480327 adds and 4802 fetches where 480000 and 4800 were issued); a reply matched to
/// the wrong token shows in the fetched values. 6 PEs x (85 000 adds + 850 fetches) x
/// 2 places > 10^6 operations.
#[test]
fn am_atomics_are_applied_exactly_once_with_full_rings() {
    for place in ["cpu", "fpga"] {
        let r = run(
            PE,
            6,
            &["am-counters", place, "85000", "850"],
            &[
                ("SHMEMPLUS_CONDUIT", "am"),
                ("SHMEMPLUS_AM_RING", "4K"),
                SLEEPY[0],
                SLEEPY[1],
            ],
        );
        assert_eq!(r.outcome, JobOutcome::Success, "{place}\n{}", dump(&r));
        assert!(
            r.stdout[0].contains(&format!("am counters exact: {} operations", 6 * 85_850)),
            "{}",
            dump(&r)
        );
    }
}

/// Eight threads per PE, each a writer and a reader of its own 16-word block, for
/// 2000 rounds of put, quiet, flag: a `quiet` that returns while another thread's flush
/// is still in flight lets the flag overtake the put (the code before the fix failed 5
/// of 6 such runs, "its put is not applied (word 0 of 16 holds 1066)").
#[test]
fn quiet_from_several_threads_completes_each_threads_puts() {
    for n in [2u32, 3] {
        let r = run(PE, n, &["threaded-quiet", "8", "2000", "16"], &[]);
        assert_eq!(r.outcome, JobOutcome::Success, "{n} PEs\n{}", dump(&r));
        assert!(
            r.stdout
                .iter()
                .all(|o| o.contains("threaded quiet ordered 8 x 2000 puts of 16 words")),
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
