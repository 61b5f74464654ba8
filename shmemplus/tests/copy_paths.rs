//! The data path's copies seen through the API, in a one-PE job: every size from
//! none to a few KiB (so both sides of the 1 KiB line where the calibrated table takes
//! over), every misalignment of the private buffer against the heap (so both
//! placements of the table), and overlapping ranges within one PE's copy of an object
//! (the `memmove` path), each against what `copy_from_slice` / `copy_within` give.

use proptest::prelude::*;
use shmemplus::{Place, Shmem, SymVec};
use std::sync::OnceLock;

/// Bytes of the object the transfers use.
const LEN: usize = 16 << 10;
/// The largest transfer.
const MAX: usize = 6000;

struct Job {
    shmem: Shmem,
    obj: SymVec<u8>,
}

fn job() -> &'static Job {
    static JOB: OnceLock<Job> = OnceLock::new();
    JOB.get_or_init(|| {
        // Set before init reads it, while every other test waits on this OnceLock.
        std::env::set_var("SHMEMPLUS_TUNE", "off");
        let shmem = shmemplus::init().expect("a one-PE job starts");
        let obj = shmem.alloc::<u8>(LEN, Place::Cpu).expect("a 16 KiB object");
        Job { shmem, obj }
    })
}

/// A pattern that differs at every shift of interest (period 251, a prime), seeded.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// Tests share the one job, so each test case holds this while it uses the object.
fn object_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// put / get / local_write / local_read between a private buffer at any
    /// misalignment and the heap at any offset copy exactly the bytes asked for.
    #[test]
    fn private_buffer_transfers_copy_exactly(
        len in 0usize..MAX,
        buf_off in 0usize..4096,
        index in 0usize..(LEN - MAX),
        seed in any::<u8>(),
    ) {
        let _g = object_lock();
        let Job { shmem, obj } = job();
        let me = shmem.my_pe();
        let src = pattern(buf_off + len, seed);
        let mut want = shmem.local_to_vec(obj).unwrap();
        shmem.put(obj, index, &src[buf_off..], me).unwrap();
        shmem.quiet().unwrap();
        want[index..index + len].copy_from_slice(&src[buf_off..]);
        prop_assert_eq!(&shmem.local_to_vec(obj).unwrap(), &want);

        let mut back = vec![0xAAu8; buf_off + len + 64];
        shmem.get(obj, index, &mut back[buf_off..buf_off + len], me).unwrap();
        prop_assert_eq!(&back[buf_off..buf_off + len], &src[buf_off..]);
        prop_assert!(back[..buf_off].iter().chain(&back[buf_off + len..]).all(|&b| b == 0xAA));

        let other = pattern(buf_off + len, seed.wrapping_add(1));
        shmem.local_write(obj, index, &other[buf_off..]).unwrap();
        let mut read = vec![0u8; buf_off + len];
        shmem.local_read(obj, index, &mut read[buf_off..]).unwrap();
        prop_assert_eq!(&read[buf_off..], &other[buf_off..]);
    }

    /// put_from / get_into from this PE's copy of the object to an overlapping range
    /// of the same copy give what `copy_within` (memmove) gives.
    #[test]
    fn overlapping_ranges_are_memmoves(
        len in 0usize..MAX,
        from in 0usize..(LEN - MAX),
        shift in -600isize..600,
        get in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let to = from.saturating_add_signed(shift).min(LEN - MAX);
        let _g = object_lock();
        let Job { shmem, obj } = job();
        let me = shmem.my_pe();
        let mut want = pattern(LEN, seed);
        shmem.local_write(obj, 0, &want).unwrap();
        if get {
            shmem.get_into(obj, to, obj, from, len, me).unwrap();
        } else {
            shmem.put_from(obj, to, obj, from, len, me).unwrap();
            shmem.quiet().unwrap();
        }
        want.copy_within(from..from + len, to);
        prop_assert_eq!(&shmem.local_to_vec(obj).unwrap(), &want);
    }
}
