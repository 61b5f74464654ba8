//! Scenarios of the OpenSHMEM 1.5 calls the C binding maps onto: `contexts` (puts on a
//! context, completed by its quiet; team contexts), `strided` (`iput`/`iget` with
//! strides 1, 2 and 3, refused ranges write nothing), `memory` (`alloc_zeroed` over a
//! dirtied block, `realloc` keeps the prefix, `alloc_aligned`, hints), `ptr` (stores
//! through `ptr` seen by a peer's get; `None` under `am`) and `global-exit`.

use shmemplus::{Conduit, CtxOptions, Error, MallocHints, Place, Shmem};
use shmemplus_tests::ensure_eq;
use shmemplus_tests::pe::{e2s, expect_err};

/// The value writer `w` puts at element `i` of its slots on target `t`.
fn value(w: u32, t: u32, i: usize) -> u64 {
    shmemplus_tests::hash(&[u64::from(w), u64::from(t), i as u64])
}

/// Every PE puts 4 values into its slots on every PE through a context, completes them
/// with the context's quiet, and after a barrier finds every writer's values. Then a
/// context on the even PEs' team, and the default context's rules.
pub(crate) fn contexts(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let slots = shmem
        .alloc::<u64>(4 * n as usize, Place::Cpu)
        .map_err(e2s)?;
    let ctx = shmem
        .ctx_create(CtxOptions::PRIVATE | CtxOptions::SERIALIZED)
        .map_err(e2s)?;
    ensure_eq!(ctx.team().n_pes(), n, "a world context's team");
    for t in 0..n {
        let vals: Vec<u64> = (0..4).map(|i| value(me, t, i)).collect();
        ctx.put(&slots, 4 * me as usize, &vals, t).map_err(e2s)?;
    }
    shmem.ctx_quiet(&ctx).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let got = shmem.local_to_vec(&slots).map_err(e2s)?;
    for w in 0..n {
        for i in 0..4 {
            ensure_eq!(
                got[4 * w as usize + i],
                value(w, me, i),
                "slot {i} of writer {w} on PE {me}"
            );
        }
    }
    // Atomics on a context reach the same memory (once every PE has checked).
    shmem.barrier_all().map_err(e2s)?;
    let next = (me + 1) % n;
    ctx.atomic_add(&slots, 4 * me as usize, 1u64, next)
        .map_err(e2s)?;
    ctx.quiet().map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let prev = (me + n - 1) % n;
    ensure_eq!(
        shmem
            .local_read_one(&slots, 4 * prev as usize)
            .map_err(e2s)?,
        value(prev, me, 0).wrapping_add(1),
        "atomic add on a context"
    );
    shmem.ctx_destroy(ctx).map_err(e2s)?;

    let world = shmem.team_world();
    let evens = shmem
        .team_split_strided(&world, 0, 2, n.div_ceil(2))
        .map_err(e2s)?;
    if let Some(team) = evens {
        let tctx = shmem
            .team_create_ctx(&team, CtxOptions::NOSTORE)
            .map_err(e2s)?;
        let t = tctx.team();
        ensure_eq!(
            (t.n_pes(), t.my_pe()),
            (n.div_ceil(2), me / 2),
            "team context's team"
        );
        ensure_eq!(
            t.translate_pe(t.my_pe(), &world),
            Some(me),
            "team ctx translate"
        );
        // A load on the NOSTORE context: the last even PE's slot of this PE.
        let last_even = 2 * (n.div_ceil(2) - 1);
        let v = tctx
            .g(&slots, 4 * me as usize + 1, last_even)
            .map_err(e2s)?;
        ensure_eq!(v, value(me, last_even, 1), "get on a team context");
        shmem.ctx_fence(&tctx).map_err(e2s)?;
        shmem.ctx_destroy(tctx).map_err(e2s)?;
        shmem.team_destroy(team).map_err(e2s)?;
        expect_err(
            "context on a destroyed team",
            shmem.team_create_ctx(&t, CtxOptions::NONE),
            |e| matches!(e, Error::InvalidTeam),
        )?;
    }
    expect_err(
        "destroying the default context",
        shmem.ctx_destroy(shmem.ctx_default()),
        |e| matches!(e, Error::InvalidContext(_)),
    )?;
    shmem.free(slots).map_err(e2s)?;
    println!("PE {me}: contexts ok");
    Ok(())
}

/// Length of the strided scenario's symmetric array.
const STRIDED_LEN: usize = 64;

/// For strides 1, 2 and 3: every PE `iput`s 8 elements into the next PE and `iget`s 8
/// from the previous one, each checked element by element (untouched elements stay
/// zero); then refused ranges and strides, which must write nothing.
pub(crate) fn strided(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let dest = shmem.alloc::<u32>(STRIDED_LEN, Place::Cpu).map_err(e2s)?;
    let nelems = 8;
    let tag = |pe: u32, stride: usize, i: usize| pe * 10_000 + stride as u32 * 100 + i as u32;
    for stride in [1usize, 2, 3] {
        let src_stride = 4 - stride; // 3, 2, 1: the two sides differ
        let src: Vec<u32> = (0..nelems * src_stride)
            .map(|j| {
                if j % src_stride == 0 {
                    tag(me, stride, j / src_stride)
                } else {
                    u32::MAX
                }
            })
            .collect();
        shmem
            .iput(&dest, 1, stride, &src, src_stride, nelems, next)
            .map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let got = shmem.local_to_vec(&dest).map_err(e2s)?;
        for (k, &v) in got.iter().enumerate() {
            let want = match k.checked_sub(1) {
                Some(d) if d % stride == 0 && d / stride < nelems => tag(prev, stride, d / stride),
                _ => 0,
            };
            ensure_eq!(v, want, "iput stride {stride}: element {k} on PE {me}");
        }
        // The previous PE's copy holds its own previous PE's values: read them back
        // with the strides swapped.
        let mut back = vec![7u32; nelems * src_stride];
        shmem
            .iget(&mut back, src_stride, &dest, 1, stride, nelems, prev)
            .map_err(e2s)?;
        let prev2 = (prev + n - 1) % n;
        for (j, &v) in back.iter().enumerate() {
            let want = if j % src_stride == 0 {
                tag(prev2, stride, j / src_stride)
            } else {
                7
            };
            ensure_eq!(v, want, "iget stride {stride}: element {j} from PE {prev}");
        }
        shmem.barrier_all().map_err(e2s)?;
        shmem
            .local_write(&dest, 0, &[0u32; STRIDED_LEN])
            .map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
    }
    let src = [1u32; 16];
    // Last element 1 + 7 * 9 = 64: one past the end.
    expect_err(
        "iput past the end",
        shmem.iput(&dest, 1, 9, &src, 1, 8, next),
        |e| {
            matches!(
                e,
                Error::OutOfBounds {
                    end: 65,
                    len: 64,
                    ..
                }
            )
        },
    )?;
    expect_err(
        "iput past a short private buffer",
        shmem.iput(&dest, 0, 1, &src[..3], 2, 3, next),
        |e| matches!(e, Error::OutOfBounds { end: 5, len: 3, .. }),
    )?;
    expect_err(
        "iput with stride 0",
        shmem.iput(&dest, 0, 0, &src, 1, 2, next),
        |e| matches!(e, Error::InvalidArgument(_)),
    )?;
    expect_err(
        "iput with an overflowing stride",
        shmem.iput(&dest, 0, usize::MAX, &src, 1, 2, next),
        |e| matches!(e, Error::OutOfBounds { .. }),
    )?;
    let mut buf = [5u32; 4];
    expect_err(
        "iget into a short private buffer",
        shmem.iget(&mut buf, 2, &dest, 0, 1, 3, next),
        |e| matches!(e, Error::OutOfBounds { end: 5, len: 4, .. }),
    )?;
    ensure_eq!(buf, [5u32; 4], "a refused iget wrote nothing");
    shmem.barrier_all().map_err(e2s)?;
    let got = shmem.local_to_vec(&dest).map_err(e2s)?;
    ensure_eq!(
        got,
        vec![0u32; STRIDED_LEN],
        "refused iputs wrote nothing on PE {me}"
    );
    shmem.free(dest).map_err(e2s)?;
    println!("PE {me}: strided ok");
    Ok(())
}

/// `alloc_zeroed` over the block of a freed, dirtied object reads zero; `realloc`
/// keeps the prefix on every PE and the new tail is reachable by peers;
/// `alloc_aligned` aligns and refuses a non power of two on every PE; unknown hints
/// are refused on every PE.
pub(crate) fn memory(shmem: &Shmem, place: Place) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let dirty = shmem.alloc::<u8>(8192, place).map_err(e2s)?;
    let at = dirty.heap_offset();
    shmem.local_write(&dirty, 0, &[0xab; 8192]).map_err(e2s)?;
    shmem.free(dirty).map_err(e2s)?;
    let clean = shmem.alloc_zeroed::<u8>(8192, place).map_err(e2s)?;
    ensure_eq!(clean.heap_offset(), at, "calloc reuses the freed block");
    let bytes = shmem.local_to_vec(&clean).map_err(e2s)?;
    ensure_eq!(
        bytes.iter().filter(|&&b| b != 0).count(),
        0,
        "nonzero bytes after calloc"
    );

    let mut v = shmem.alloc::<u64>(10, place).map_err(e2s)?;
    let mine: Vec<u64> = (0..10).map(|i| value(me, me, i)).collect();
    shmem.local_write(&v, 0, &mine).map_err(e2s)?;
    shmem.realloc(&mut v, 1000).map_err(e2s)?;
    ensure_eq!(v.len(), 1000, "grown length");
    let got = shmem.local_to_vec(&v).map_err(e2s)?;
    ensure_eq!(
        got[..10],
        mine[..],
        "prefix kept by growing realloc on PE {me}"
    );
    ensure_eq!(
        got[10..].iter().filter(|&&x| x != 0).count(),
        0,
        "grown tail is zero"
    );
    let next = (me + 1) % n;
    // Once every PE has checked its own copy, a put into the next PE's new tail.
    shmem.barrier_all().map_err(e2s)?;
    shmem.p(&v, 999, u64::from(me) + 1, next).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    ensure_eq!(
        shmem.local_read_one(&v, 999).map_err(e2s)?,
        u64::from((me + n - 1) % n) + 1,
        "a peer's put into the grown object"
    );
    shmem.realloc(&mut v, 4).map_err(e2s)?;
    ensure_eq!(
        shmem.local_to_vec(&v).map_err(e2s)?,
        mine[..4],
        "shrinking realloc"
    );
    shmem.free(v).map_err(e2s)?;

    let aligned = shmem.alloc_aligned::<u32>(3, 1 << 16, place).map_err(e2s)?;
    ensure_eq!(aligned.heap_offset() % (1 << 16), 0, "64 KiB alignment");
    expect_err(
        "alignment 96",
        shmem.alloc_aligned::<u32>(3, 96, place),
        |e| matches!(e, Error::InvalidArgument(_)),
    )?;
    let hinted = shmem
        .alloc_with_hints::<u64>(
            2,
            MallocHints::ATOMICS_REMOTE | MallocHints::SIGNAL_REMOTE,
            place,
        )
        .map_err(e2s)?;
    expect_err(
        "unknown hint bits",
        shmem.alloc_with_hints::<u64>(2, MallocHints(1 << 40), place),
        |e| matches!(e, Error::InvalidArgument(_)),
    )?;
    // The refused calls left the PEs in step: a last collective allocation works.
    let last = shmem.alloc::<u8>(64, place).map_err(e2s)?;
    shmem.free(last).map_err(e2s)?;
    shmem.free(hinted).map_err(e2s)?;
    shmem.free(aligned).map_err(e2s)?;
    shmem.free(clean).map_err(e2s)?;
    println!("PE {me}: memory ok");
    Ok(())
}

/// Under `shm`, every PE stores into its slot of the next PE's copy through `ptr`,
/// and after a barrier a third PE's `get` sees it; under `am` only this PE's own copy
/// has an address. Accessibility answers for every PE.
pub(crate) fn ptr(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let next = (me + 1) % n;
    let x = shmem.alloc::<u64>(n as usize, Place::Cpu).map_err(e2s)?;
    let mapped = shmem.config().conduit == Conduit::Shm;
    // Under mpirun with SHMEMPLUS_RANKS_PER_HOST=k (the MPI conduit's CI jobs), PEs
    // share memory only with the PEs of their own host: groups of k consecutive ranks.
    let per_host = std::env::var("OMPI_COMM_WORLD_SIZE")
        .ok()
        .and(std::env::var("SHMEMPLUS_RANKS_PER_HOST").ok())
        .and_then(|k| k.parse::<u32>().ok())
        .filter(|&k| k > 0);
    let loadable = |a: u32, b: u32| a == b || (mapped && per_host.is_none_or(|k| a / k == b / k));
    for t in 0..n {
        let p = shmem.ptr(&x, me as usize, t);
        ensure_eq!(p.is_some(), loadable(me, t), "ptr to PE {t}'s copy");
        ensure_eq!(shmem.pe_accessible(t), true, "PE {t} accessible");
    }
    ensure_eq!(shmem.pe_accessible(n), false, "PE n accessible");
    let base = shmem.local_addr(&x).map_err(e2s)?.cast::<u8>();
    ensure_eq!(shmem.addr_accessible(base, next), true, "symmetric address");
    let private = 0u64;
    let private = std::ptr::from_ref(&private).cast::<u8>();
    ensure_eq!(
        shmem.addr_accessible(private, next),
        false,
        "private address"
    );
    ensure_eq!(
        shmem.ptr_addr(private, next),
        None,
        "ptr of a private address"
    );
    ensure_eq!(shmem.ptr(&x, n as usize, next), None, "ptr past the end");
    if let Some(p) = shmem.ptr(&x, me as usize, next) {
        // SAFETY: `p` is element `me` of PE `next`'s copy, mapped in this process for
        // the handle's lifetime and aligned; no other PE accesses that element before
        // the barrier below.
        unsafe { p.write_volatile(value(me, next, 0)) };
    }
    shmem.barrier_all().map_err(e2s)?;
    let writer = (me + n - 2) % n;
    let owner = (me + n - 1) % n;
    if loadable(writer, owner) {
        // A third PE (the one after `next`) reads what this PE stored into `next`.
        let v = shmem.g(&x, writer as usize, owner).map_err(e2s)?;
        ensure_eq!(
            v,
            value(writer, owner, 0),
            "store through ptr seen by a get"
        );
    }
    shmem.free(x).map_err(e2s)?;
    println!("PE {me}: ptr ok (mapped: {mapped})");
    Ok(())
}

/// PE 1 prints a line without a newline and calls `global_exit(code)` while the others
/// wait in a barrier it never enters.
pub(crate) fn global_exit(shmem: &Shmem, code: i32) -> Result<(), String> {
    let me = shmem.my_pe();
    shmem.barrier_all().map_err(e2s)?;
    if me == 1 {
        print!("PE 1: global_exit({code})");
        shmem.global_exit(code);
    }
    shmem.barrier_all().map_err(e2s)?;
    Err(format!("PE {me}: a barrier without PE 1 completed"))
}
