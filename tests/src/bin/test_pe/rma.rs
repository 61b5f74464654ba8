//! RMA scenarios on CPU memory: `rma` (random puts and gets of random sizes to every
//! PE, checked against a replay; typed `p`/`g`), `barrier` (barriers order puts) and
//! `nbi` (put_nbi/get_nbi complete at quiet, for every pair of places).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shmemplus::{Place, Shmem};
use shmemplus_tests::pe::e2s;

/// The byte writer `w` puts at position `pos` of its region on target `t` in op `k`.
fn pattern(w: usize, t: usize, k: usize, pos: usize) -> u8 {
    (w.wrapping_mul(131) ^ t.wrapping_mul(31) ^ k.wrapping_mul(7) ^ pos.wrapping_mul(13)) as u8 | 1
}

/// The random put ops writer `w` issues to target `t`: (offset, len) within a region.
fn ops(seed: u64, w: usize, t: usize, count: usize, region: usize) -> Vec<(usize, usize)> {
    let mut rng = StdRng::seed_from_u64(seed ^ ((w as u64) << 20) ^ ((t as u64) << 40));
    (0..count)
        .map(|k| {
            let off = rng.random_range(0..region);
            // Mostly small, sometimes spanning several AM records.
            let max = region - off;
            let len = if k % 4 == 0 {
                rng.random_range(0..=max)
            } else {
                rng.random_range(0..=max.min(300))
            };
            (off, len)
        })
        .collect()
}

/// What PE `t`'s array holds after every writer's puts, by replaying their ops.
fn expected(seed: u64, t: usize, n: usize, count: usize, region: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * region];
    for w in 0..n {
        for (k, (off, len)) in ops(seed, w, t, count, region).into_iter().enumerate() {
            for pos in off..off + len {
                v[w * region + pos] = pattern(w, t, k, pos);
            }
        }
    }
    v
}

/// Random puts and gets of random sizes and offsets to every PE (self included),
/// checked byte for byte against a replay; then typed `p`/`g` and offset puts.
pub(crate) fn rma(seed: u64, count: usize) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    let region = 160 << 10;
    let arr = shmem.alloc::<u8>(n * region, Place::Cpu).map_err(e2s)?;
    for t in 0..n {
        for (k, (off, len)) in ops(seed, me, t, count, region).into_iter().enumerate() {
            let data: Vec<u8> = (off..off + len).map(|pos| pattern(me, t, k, pos)).collect();
            shmem
                .put(&arr, me * region + off, &data, t as u32)
                .map_err(e2s)?;
        }
        shmem.fence().map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    let mine = shmem.local_to_vec(&arr).map_err(e2s)?;
    let want = expected(seed, me, n, count, region);
    if let Some(i) = (0..mine.len()).find(|&i| mine[i] != want[i]) {
        return Err(format!(
            "PE {me}: byte {i} (writer {}, offset {}) is {} but should be {}",
            i / region,
            i % region,
            mine[i],
            want[i]
        ));
    }
    println!(
        "PE {me}: local contents after puts verified ({} bytes)",
        mine.len()
    );
    // Gets of random ranges from every PE.
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(me as u64));
    for t in 0..n {
        let theirs = expected(seed, t, n, count, region);
        for _ in 0..count {
            let off = rng.random_range(0..theirs.len());
            let len = rng.random_range(0..=(theirs.len() - off).min(200_000));
            let mut buf = vec![0u8; len];
            shmem.get(&arr, off, &mut buf, t as u32).map_err(e2s)?;
            if buf[..] != theirs[off..off + len] {
                return Err(format!(
                    "PE {me}: get of {len} bytes at {off} from PE {t} differs"
                ));
            }
        }
    }
    println!("PE {me}: gets from every PE verified");
    // Typed single-element p/g and indexed puts of u64.
    let slots = shmem.alloc::<u64>(n + 8, Place::Cpu).map_err(e2s)?;
    for t in 0..n {
        shmem
            .p(&slots, me, (me * 1000 + t) as u64, t as u32)
            .map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for t in 0..n {
        for w in 0..n {
            let v = shmem.g(&slots, w, t as u32).map_err(e2s)?;
            if v != (w * 1000 + t) as u64 {
                return Err(format!(
                    "PE {me}: g(slot {w}) on PE {t} = {v}, want {}",
                    w * 1000 + t
                ));
            }
        }
    }
    println!("PE {me}: p/g verified");
    shmem.free(slots).map_err(e2s)?;
    shmem.free(arr).map_err(e2s)?;
    shmem.finalize().map_err(e2s)?;
    println!("PE {me}: rma ok");
    Ok(())
}

/// Rounds of "put my round number into the next PE, barrier, check the previous PE's
/// value arrived": a barrier that let a PE through early, or did not complete puts,
/// shows up as a stale value.
pub(crate) fn barrier_order(rounds: u64) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let slot = shmem.alloc::<u64>(2, Place::Cpu).map_err(e2s)?;
    for r in 1..=rounds {
        let parity = (r % 2) as usize;
        shmem.p(&slot, parity, r, (me + 1) % n).map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let got = shmem.local_read_one(&slot, parity).map_err(e2s)?;
        if got != r {
            return Err(format!("PE {me}: round {r}: slot holds {got}"));
        }
        // Second barrier: nobody writes round r+2 into this parity slot before we read.
        shmem.barrier_all().map_err(e2s)?;
    }
    println!("PE {me}: {rounds} barrier rounds ordered");
    shmem.finalize().map_err(e2s)
}

/// Splits `0..len` into `pieces` consecutive random ranges, in random order.
fn pieces(rng: &mut StdRng, len: usize, pieces: usize) -> Vec<(usize, usize)> {
    let mut cuts: Vec<usize> = (0..pieces.saturating_sub(1))
        .map(|_| rng.random_range(0..=len))
        .collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    let mut v: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
    rand::seq::SliceRandom::shuffle(&mut v[..], rng);
    v
}

/// put_nbi of `count` pieces to the next PE (the source buffer scribbled over after
/// each call), one quiet, a barrier: all there. get_nbi of pieces from every PE into
/// a local symmetric object, one quiet: all there. For every pair of places.
pub(crate) fn nbi(shmem: &Shmem, seed: u64, count: usize) -> Result<(), String> {
    const R: usize = 24 << 10;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (nu, meu) = (n as usize, me as usize);
    let mut places = vec![Place::Cpu];
    if shmem.fpgas() > 0 {
        places.push(Place::Fpga(0));
    }
    let next = (me + 1) % n;
    let prev = ((me + n - 1) % n) as usize;
    let byte = |w: usize, tag: usize, i: usize| (w * 37 + tag * 101 + i * 7 + i / 251) as u8;
    let mut rng = StdRng::seed_from_u64(seed ^ u64::from(me));
    for (pi, &place) in places.iter().enumerate() {
        let dst = shmem.alloc::<u8>(nu * R, place).map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let mut buf = vec![0u8; R];
        for (off, len) in pieces(&mut rng, R, count) {
            for (i, b) in buf[..len].iter_mut().enumerate() {
                *b = byte(meu, pi, off + i);
            }
            shmem
                .put_nbi(&dst, meu * R + off, &buf[..len], next)
                .map_err(e2s)?;
            // The source may be reused as soon as put_nbi returns.
            buf.fill(0xee);
        }
        shmem.quiet().map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let got = shmem.local_to_vec(&dst).map_err(e2s)?;
        for w in 0..nu {
            for i in 0..R {
                let want = if w == prev { byte(w, pi, i) } else { 0 };
                if got[w * R + i] != want {
                    return Err(format!(
                        "PE {me}: put_nbi into {place}: byte {i} of writer {w} is {}, want {want}",
                        got[w * R + i]
                    ));
                }
            }
        }
        shmem.barrier_all().map_err(e2s)?;
        shmem.free(dst).map_err(e2s)?;
    }
    println!("PE {me}: put_nbi verified on {} places", places.len());
    for (si, &src_place) in places.iter().enumerate() {
        for &into in &places {
            let src = shmem.alloc::<u8>(R, src_place).map_err(e2s)?;
            let scratch = shmem.alloc::<u8>(nu * R, into).map_err(e2s)?;
            let mine: Vec<u8> = (0..R).map(|i| byte(meu, 10 + si, i)).collect();
            shmem.local_write(&src, 0, &mine).map_err(e2s)?;
            shmem.barrier_all().map_err(e2s)?;
            for t in 0..nu {
                for (off, len) in pieces(&mut rng, R, count) {
                    shmem
                        .get_nbi(&scratch, t * R + off, &src, off, len, t as u32)
                        .map_err(e2s)?;
                }
            }
            shmem.quiet().map_err(e2s)?;
            let got = shmem.local_to_vec(&scratch).map_err(e2s)?;
            for t in 0..nu {
                if let Some(i) = (0..R).find(|&i| got[t * R + i] != byte(t, 10 + si, i)) {
                    return Err(format!(
                        "PE {me}: get_nbi from PE {t}'s {src_place} into {into}: byte {i} is {}, want {}",
                        got[t * R + i],
                        byte(t, 10 + si, i)
                    ));
                }
            }
            shmem.barrier_all().map_err(e2s)?;
            shmem.free(scratch).map_err(e2s)?;
            shmem.free(src).map_err(e2s)?;
        }
    }
    println!("PE {me}: get_nbi verified for every pair of places");
    println!("PE {me}: nbi ok");
    Ok(())
}
