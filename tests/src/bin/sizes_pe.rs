//! `shmemplus-sizes-pe`: the PE program of the size tests (`tests/sizes.rs`). Each mode
//! is one scenario; a PE prints what it checked and exits 0 only if every check held,
//! and exits 1 with the error on stderr if `init` or a check fails.
//!
//! - `hello`: init, one symmetric word written by every PE to the next one, checked.
//! - `alloc-overflow`: symmetric allocations whose byte size overflows, or that no
//!   heap can hold, on every place of the job: every PE returns the same typed error
//!   (also when only one PE's size overflows), and the PEs stay in step afterwards.

use shmemplus::{Error, Place, Shmem};
use shmemplus_tests::pe::{e2s, exit_code, expect_err, with_handle};
use std::process::ExitCode;

/// The name failures are reported under.
const PROGRAM: &str = "sizes-pe";

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let result = with_handle(PROGRAM, |shmem| match mode.as_str() {
        "hello" => hello(shmem),
        "alloc-overflow" => alloc_overflow(shmem),
        other => Err(format!("unknown mode '{other}' (hello, alloc-overflow)")),
    });
    exit_code(PROGRAM, result)
}

/// Every PE writes 100 * rank + 1 into the next PE's word and checks its own.
fn hello(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let word = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    shmem
        .p(&word, 0, 100 * u64::from(me) + 1, (me + 1) % n)
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let got = shmem.local_read_one(&word, 0).map_err(e2s)?;
    let left = (me + n - 1) % n;
    if got != 100 * u64::from(left) + 1 {
        return Err(format!(
            "PE {me} holds {got}, PE {left} wrote {}",
            100 * left + 1
        ));
    }
    println!("PE {me}: hello ok");
    shmem.free(word).map_err(e2s)
}

fn alloc_overflow(shmem: &Shmem) -> Result<(), String> {
    let me = shmem.my_pe();
    let mut places = vec![Place::Cpu];
    if shmem.fpgas() > 0 {
        places.push(Place::Fpga(0));
    }
    for &place in &places {
        // The same overflowing size on every PE: SizeOverflow everywhere.
        let r = shmem.alloc::<u64>(usize::MAX / 4, place);
        expect_err(&format!("{place}: u64 x usize::MAX/4"), r, |e| {
            matches!(e, Error::SizeOverflow { .. })
        })?;
        // A size that fits in a usize but whose rounding to the heap's granule does
        // not (this wrapped to a 0-byte block in release builds): exhausted.
        let r = shmem.alloc::<u8>(usize::MAX - 10, place);
        expect_err(&format!("{place}: u8 x usize::MAX-10"), r, |e| {
            matches!(
                e,
                Error::HeapExhausted { .. } | Error::BoardHeapExhausted { .. }
            )
        })?;
        // Only PE 0's size overflows: every PE learns the call was not symmetric,
        // none waits for the others.
        let len = if me == 0 { usize::MAX / 4 } else { 8 };
        let r = shmem.alloc::<u64>(len, place);
        expect_err(&format!("{place}: only PE 0 overflows"), r, |e| {
            matches!(e, Error::NonSymmetric(_))
        })?;
        // The PEs are still in step: a real object works end to end.
        let v = shmem.alloc::<u64>(8, place).map_err(e2s)?;
        let n = shmem.n_pes();
        shmem
            .put(&v, 0, &[u64::from(me) + 7], (me + 1) % n)
            .map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let got = shmem.local_read_one(&v, 0).map_err(e2s)?;
        let left = (me + n - 1) % n;
        if got != u64::from(left) + 7 {
            return Err(format!("{place}: PE {me} holds {got} after the errors"));
        }
        shmem.free(v).map_err(e2s)?;
        println!("PE {me}: {place} overflow ok");
    }
    Ok(())
}
