//! Bad-input scenarios: `nonsym-size` and `nonsym-order` (non-symmetric allocations
//! detected on every PE), `bad-input` (each bad RMA call or allocation gets its typed
//! error and moves nothing) and `breadth-errors` (the same for atomics, signals,
//! locks, team splits and collectives).

use shmemplus::{Cmp, Error, Place, ReduceOp, Shmem, SignalOp};
use shmemplus_tests::ensure_eq;
use shmemplus_tests::pe::{e2s, expect_err, need_boards};

fn expect_nonsym<T>(r: shmemplus::Result<T>, me: u32) -> Result<(), String> {
    match r {
        Err(Error::NonSymmetric(msg)) => {
            println!("PE {me}: non-symmetric detected: {msg}");
            Ok(())
        }
        Err(e) => Err(format!("PE {me}: expected NonSymmetric, got {e}")),
        Ok(_) => Err(format!("PE {me}: non-symmetric allocation went undetected")),
    }
}

/// PE 0 asks a different size from everyone else.
pub(crate) fn nonsym_size() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let len = if me == 0 { 100 } else { 200 };
    expect_nonsym(shmem.alloc::<u32>(len, Place::Cpu), me)?;
    // The job is still usable afterwards: a symmetric call succeeds on every PE.
    let ok = shmem.alloc::<u32>(10, Place::Cpu).map_err(e2s)?;
    shmem.free(ok).map_err(e2s)?;
    shmem.finalize().map_err(e2s)
}

/// PE 0 allocates a then b; the others b then a.
pub(crate) fn nonsym_order() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let (first, second) = if me == 0 { (64, 4096) } else { (4096, 64) };
    expect_nonsym(shmem.alloc::<u8>(first, Place::Cpu), me)?;
    expect_nonsym(shmem.alloc::<u8>(second, Place::Cpu), me)?;
    shmem.finalize().map_err(e2s)
}

/// Every bad input gets its own error and leaves memory untouched.
pub(crate) fn bad_input() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let a = shmem.alloc::<u32>(16, Place::Cpu).map_err(e2s)?;
    let guard = shmem.alloc::<u32>(16, Place::Cpu).map_err(e2s)?;
    shmem.local_write(&guard, 0, &[0xfeed; 16]).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let next = (me + 1) % n;
    expect_err("invalid PE", shmem.put(&a, 0, &[1], n), |e| {
        matches!(e, Error::InvalidPe { .. })
    })?;
    expect_err("invalid PE get", shmem.g(&a, 0, n + 5), |e| {
        matches!(e, Error::InvalidPe { .. })
    })?;
    expect_err("put past the end", shmem.put(&a, 10, &[7; 7], next), |e| {
        matches!(
            e,
            Error::OutOfBounds {
                start: 10,
                end: 17,
                len: 16
            }
        )
    })?;
    let mut buf = [0u32; 4];
    expect_err("get past the end", shmem.get(&a, 14, &mut buf, next), |e| {
        matches!(e, Error::OutOfBounds { .. })
    })?;
    expect_err(
        "index overflow",
        shmem.put(&a, usize::MAX, &[1], next),
        |e| matches!(e, Error::OutOfBounds { .. }),
    )?;
    expect_err(
        "local write past the end",
        shmem.local_write(&a, 16, &[1]),
        |e| matches!(e, Error::OutOfBounds { .. }),
    )?;
    expect_err(
        "heap exhausted",
        shmem.alloc::<u8>(1 << 40, Place::Cpu),
        |e| {
            matches!(e, Error::HeapExhausted { .. })
                && e.to_string().contains("SHMEM_SYMMETRIC_SIZE")
        },
    )?;
    expect_err(
        "board out of range",
        shmem.alloc::<u8>(64, Place::Fpga(99)),
        |e| matches!(e, Error::InvalidBoard { .. } | Error::NoBoards),
    )?;
    expect_err("second init", shmemplus::init(), |e| {
        matches!(e, Error::AlreadyInitialized)
    })?;
    shmem.barrier_all().map_err(e2s)?;
    // Nothing of the refused writes landed: the object and its neighbour are intact.
    let a_now = shmem.local_to_vec(&a).map_err(e2s)?;
    let guard_now = shmem.local_to_vec(&guard).map_err(e2s)?;
    if a_now != vec![0; 16] || guard_now != vec![0xfeed; 16] {
        return Err(format!(
            "PE {me}: memory changed by refused calls: {a_now:?} {guard_now:?}"
        ));
    }
    let handle = shmem.clone();
    shmem.finalize().map_err(e2s)?;
    expect_err("use after finalize", handle.put(&a, 0, &[1], me), |e| {
        matches!(e, Error::Finalized)
    })?;
    expect_err("second finalize", handle.finalize(), |e| {
        matches!(e, Error::Finalized)
    })?;
    println!("PE {me}: bad input ok");
    Ok(())
}

/// Each bad input of the breadth API gets its typed error, moves nothing, and leaves
/// the world team usable.
pub(crate) fn breadth_errors(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let nu = n as usize;
    need_boards(shmem, Place::Fpga(0))?;
    let next = (me + 1) % n;
    let world = shmem.team_world();
    let invalid = |e: &Error| matches!(e, Error::InvalidArgument(_));
    let oob = |e: &Error| matches!(e, Error::OutOfBounds { .. });
    let a = shmem.alloc::<u64>(8, Place::Cpu).map_err(e2s)?;
    let d = shmem.alloc::<u64>(8 * nu, Place::Cpu).map_err(e2s)?;
    for root in [n, n + 1, u32::MAX] {
        expect_err(
            &format!("broadcast root {root}"),
            shmem.broadcast(&world, &d, &a, 4, root),
            invalid,
        )?;
    }
    let f = shmem.alloc::<f64>(4, Place::Cpu).map_err(e2s)?;
    for op in [ReduceOp::Xor, ReduceOp::And, ReduceOp::Or] {
        expect_err(
            &format!("{op:?} on f64"),
            shmem.reduce(&world, &f, &f, 4, op),
            |e| matches!(e, Error::UnsupportedReduction { .. }),
        )?;
    }
    let f32s = shmem.alloc::<f32>(4, Place::Cpu).map_err(e2s)?;
    expect_err(
        "Xor on f32",
        shmem.reduce(&world, &f32s, &f32s, 4, ReduceOp::Xor),
        |e| matches!(e, Error::UnsupportedReduction { .. }),
    )?;
    for (start, stride, size) in [
        (0, 1, n + 1),
        (n, 1, 1),
        (0, 0, 1),
        (0, 1, 0),
        (1, u32::MAX, 2),
        (0, 2, n.div_ceil(2) + 1),
    ] {
        expect_err(
            &format!("split start {start} stride {stride} size {size}"),
            shmem.team_split_strided(&world, start, stride, size),
            invalid,
        )?;
    }
    expect_err(
        "split_2d with xrange 0",
        shmem.team_split_2d(&world, 0),
        invalid,
    )?;
    let board_lock = shmem.alloc::<u64>(1, Place::Fpga(0)).map_err(e2s)?;
    expect_err("set_lock on a board", shmem.set_lock(&board_lock), invalid)?;
    expect_err(
        "try_set_lock on a board",
        shmem.try_set_lock(&board_lock),
        invalid,
    )?;
    expect_err(
        "clear_lock on a board",
        shmem.clear_lock(&board_lock),
        invalid,
    )?;
    // Atomics past the end: refused, nothing modified (not even the neighbour).
    for place in [Place::Cpu, Place::Fpga(0)] {
        let obj = shmem.alloc::<i64>(4, place).map_err(e2s)?;
        let guard = shmem.alloc::<i64>(4, place).map_err(e2s)?;
        shmem.local_write(&obj, 0, &[11, 12, 13, 14]).map_err(e2s)?;
        shmem
            .local_write(&guard, 0, &[21, 22, 23, 24])
            .map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        for pe in [me, next] {
            for idx in [4, 5, usize::MAX] {
                let what = |op: &str| format!("{op} at index {idx} of PE {pe}'s {place}");
                expect_err(&what("fetch"), shmem.atomic_fetch(&obj, idx, pe), oob)?;
                expect_err(&what("set"), shmem.atomic_set(&obj, idx, 1, pe), oob)?;
                expect_err(&what("swap"), shmem.atomic_swap(&obj, idx, 1, pe), oob)?;
                expect_err(
                    &what("compare_swap"),
                    shmem.atomic_compare_swap(&obj, idx, 0, 1, pe),
                    oob,
                )?;
                expect_err(
                    &what("fetch_add"),
                    shmem.atomic_fetch_add(&obj, idx, 1, pe),
                    oob,
                )?;
                expect_err(&what("add"), shmem.atomic_add(&obj, idx, 1, pe), oob)?;
                expect_err(
                    &what("fetch_inc"),
                    shmem.atomic_fetch_inc(&obj, idx, pe),
                    oob,
                )?;
                expect_err(&what("inc"), shmem.atomic_inc(&obj, idx, pe), oob)?;
                expect_err(
                    &what("fetch_and"),
                    shmem.atomic_fetch_and(&obj, idx, 0, pe),
                    oob,
                )?;
                expect_err(&what("and"), shmem.atomic_and(&obj, idx, 0, pe), oob)?;
                expect_err(
                    &what("fetch_or"),
                    shmem.atomic_fetch_or(&obj, idx, -1, pe),
                    oob,
                )?;
                expect_err(&what("or"), shmem.atomic_or(&obj, idx, -1, pe), oob)?;
                expect_err(
                    &what("fetch_xor"),
                    shmem.atomic_fetch_xor(&obj, idx, -1, pe),
                    oob,
                )?;
                expect_err(&what("xor"), shmem.atomic_xor(&obj, idx, -1, pe), oob)?;
            }
        }
        expect_err(
            "atomic on PE n",
            shmem.atomic_fetch_add(&obj, 0, 1, n),
            |e| matches!(e, Error::InvalidPe { .. }),
        )?;
        expect_err(
            "wait_until past the end",
            shmem.wait_until(&obj, 4, Cmp::Eq, 0),
            oob,
        )?;
        expect_err("test past the end", shmem.test(&obj, 4, Cmp::Eq, 0), oob)?;
        shmem.quiet().map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        ensure_eq!(
            (
                shmem.local_to_vec(&obj).map_err(e2s)?,
                shmem.local_to_vec(&guard).map_err(e2s)?
            ),
            (vec![11, 12, 13, 14], vec![21, 22, 23, 24]),
            "PE {me}: {place} memory after refused atomics"
        );
        shmem.barrier_all().map_err(e2s)?;
    }
    // Signals: a bad signal index or data range moves nothing.
    let data = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let sig = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    expect_err(
        "put_signal with the signal past the end",
        shmem.put_signal(&data, 0, &[9; 4], &sig, 1, 1, SignalOp::Set, next),
        oob,
    )?;
    expect_err(
        "put_signal with the data past the end",
        shmem.put_signal(&data, 2, &[9; 4], &sig, 0, 1, SignalOp::Add, next),
        oob,
    )?;
    expect_err(
        "put_signal_nbi to PE n",
        shmem.put_signal_nbi(&data, 0, &[9; 4], &sig, 0, 1, SignalOp::Set, n),
        |e| matches!(e, Error::InvalidPe { .. }),
    )?;
    expect_err(
        "signal_fetch past the end",
        shmem.signal_fetch(&sig, 1),
        oob,
    )?;
    expect_err(
        "signal_wait_until past the end",
        shmem.signal_wait_until(&sig, 1, Cmp::Eq, 0),
        oob,
    )?;
    expect_err(
        "test_all with a short skip mask",
        shmem.test_all(&data, Some(&[true; 3]), Cmp::Eq, 0),
        invalid,
    )?;
    shmem.quiet().map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    ensure_eq!(
        (
            shmem.local_to_vec(&data).map_err(e2s)?,
            shmem.local_to_vec(&sig).map_err(e2s)?
        ),
        (vec![0; 4], vec![0]),
        "PE {me}: data and signal after refused put_signals"
    );
    // Collectives whose destination is too small: refused on every PE alike.
    let cs = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let small = shmem.alloc::<u64>(4 * nu - 1, Place::Cpu).map_err(e2s)?;
    shmem
        .local_write(&cs, 0, &[u64::from(me); 4])
        .map_err(e2s)?;
    expect_err(
        "collect into a destination one short",
        shmem.collect(&world, &small, &cs, 4),
        invalid,
    )?;
    expect_err(
        "fcollect into a destination one short",
        shmem.fcollect(&world, &small, &cs, 4),
        oob,
    )?;
    expect_err(
        "alltoall from a source one short",
        shmem.alltoall(&world, &d, &small, 4),
        oob,
    )?;
    // The world team still works, and collect counts right after its refusal.
    let total = shmem.collect(&world, &d, &cs, 4).map_err(e2s)?;
    ensure_eq!(total, 4 * nu, "collect total after the refusals");
    let want: Vec<u64> = (0..nu as u64).flat_map(|pe| [pe; 4]).collect();
    let got = shmem.local_to_vec(&d).map_err(e2s)?;
    ensure_eq!(got[..4 * nu], want[..], "collect after the refusals");
    shmem.fcollect(&world, &d, &cs, 2).map_err(e2s)?;
    let got = shmem.local_to_vec(&d).map_err(e2s)?;
    let want: Vec<u64> = (0..nu as u64).flat_map(|pe| [pe; 2]).collect();
    ensure_eq!(got[..2 * nu], want[..], "fcollect after the refusals");
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: breadth errors ok");
    Ok(())
}
