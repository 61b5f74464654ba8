//! Point-to-point synchronisation scenarios: `signals` (put_signal delivers the whole
//! payload before the signal) and `waits` (every wait/test form and comparison, with
//! skip masks).

use rand::rngs::StdRng;
use rand::SeedableRng;
use shmemplus::{AtomicInt, Cmp, Error, Place, Shmem, SignalOp};
use shmemplus_tests::pe::{e2s, expect_err, need_boards};
use shmemplus_tests::{ensure_eq, hash, mix};

/// Rounds of put_signal around the ring: PE i sends a `bytes` payload (different in
/// every round) to PE i+1 with a signal, alternating set, add and the nbi form; the
/// receiver waits for the signal, then the payload must be entirely there. The
/// receiver acknowledges so the sender never overwrites a payload still being read.
pub(crate) fn signals(
    shmem: &Shmem,
    rounds: u64,
    bytes: usize,
    data_place: Place,
    sig_place: Place,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    need_boards(shmem, data_place)?;
    need_boards(shmem, sig_place)?;
    if n < 2 {
        return Err("signals needs at least 2 PEs".into());
    }
    let words = bytes / 8;
    let data = shmem.alloc::<u64>(words, data_place).map_err(e2s)?;
    let sig = shmem.alloc::<u64>(1, sig_place).map_err(e2s)?;
    let ack = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let payload = |from: u32, r: u64| -> Vec<u64> {
        let h = hash(&[u64::from(from), r]);
        (0..words as u64).map(|i| mix(h ^ i)).collect()
    };
    // Nothing is sent before the barrier below (alloc ended with one).
    if shmem.test(&sig, 0, Cmp::Ne, 0).map_err(e2s)? {
        return Err(format!("PE {me}: a signal is set before anything was sent"));
    }
    shmem.barrier_all().map_err(e2s)?;
    let start = std::time::Instant::now();
    for r in 1..=rounds {
        if r > 1 {
            shmem.wait_until(&ack, 0, Cmp::Ge, r - 1).map_err(e2s)?;
        }
        let p = payload(me, r);
        match r % 3 {
            0 => {
                shmem
                    .put_signal_nbi(&data, 0, &p, &sig, 0, r, SignalOp::Set, next)
                    .map_err(e2s)?;
                shmem.quiet().map_err(e2s)?;
            }
            1 => shmem
                .put_signal(&data, 0, &p, &sig, 0, 1, SignalOp::Add, next)
                .map_err(e2s)?,
            _ => shmem
                .put_signal(&data, 0, &p, &sig, 0, r, SignalOp::Set, next)
                .map_err(e2s)?,
        }
        let s = shmem.signal_wait_until(&sig, 0, Cmp::Ge, r).map_err(e2s)?;
        ensure_eq!(s, r, "PE {me}: round {r}: signal_wait_until");
        ensure_eq!(
            shmem.signal_fetch(&sig, 0).map_err(e2s)?,
            r,
            "PE {me}: round {r}: signal_fetch"
        );
        if !shmem.test(&sig, 0, Cmp::Eq, r).map_err(e2s)? {
            return Err(format!(
                "PE {me}: round {r}: test(Eq) false after the signal"
            ));
        }
        // PE prev cannot send round r + 1 before we acknowledge round r.
        if shmem.test(&sig, 0, Cmp::Gt, r).map_err(e2s)? {
            return Err(format!(
                "PE {me}: round {r}: test(Gt) true before round {}",
                r + 1
            ));
        }
        let got = shmem.local_to_vec(&data).map_err(e2s)?;
        let want = payload(prev, r);
        if let Some(i) = (0..words).find(|&i| got[i] != want[i]) {
            let stale = (1..r).rev().find(|&old| payload(prev, old)[i] == got[i]);
            return Err(format!(
                "PE {me}: round {r}: payload word {i} of {words} from PE {prev} is {:#x}, want {:#x} (from round {stale:?}): the signal overtook the data",
                got[i], want[i]
            ));
        }
        shmem.atomic_set(&ack, 0, r, prev).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    let ring_took = start.elapsed().as_secs_f64();
    // Fan-in: every PE (PE 0 too) put_signals a 4 KiB block into its own slot on PE 0
    // and adds 1 to one shared signal; when the signal reaches n * r, all n blocks of
    // round r must be there.
    const FAN: usize = 512;
    let fan = shmem
        .alloc::<u64>(FAN * n as usize, data_place)
        .map_err(e2s)?;
    let fan_sig = shmem.alloc::<u64>(1, sig_place).map_err(e2s)?;
    let block = |from: u32, r: u64| -> Vec<u64> {
        let h = hash(&[u64::from(from), r, 0xfa]);
        (0..FAN as u64).map(|i| mix(h ^ i)).collect()
    };
    let fan_rounds = rounds.min(40);
    for r in 1..=fan_rounds {
        shmem
            .put_signal(
                &fan,
                me as usize * FAN,
                &block(me, r),
                &fan_sig,
                0,
                1,
                SignalOp::Add,
                0,
            )
            .map_err(e2s)?;
        if me == 0 {
            let s = shmem
                .signal_wait_until(&fan_sig, 0, Cmp::Ge, u64::from(n) * r)
                .map_err(e2s)?;
            ensure_eq!(s, u64::from(n) * r, "fan-in round {r}: signal");
            let got = shmem.local_to_vec(&fan).map_err(e2s)?;
            for from in 0..n {
                let at = from as usize * FAN;
                if got[at..at + FAN] != block(from, r)[..] {
                    return Err(format!(
                        "fan-in round {r}: PE {from}'s block is not all there after the signal"
                    ));
                }
            }
        }
        // Nobody sends round r + 1 before PE 0 has checked round r.
        shmem.barrier_all().map_err(e2s)?;
    }
    println!(
        "PE {me}: {rounds} rounds of {bytes}-byte put_signal ({data_place} data, {sig_place} signal) in {ring_took:.3} s; {fan_rounds} fan-in rounds"
    );
    println!("PE {me}: signals ok");
    Ok(())
}

/// `test` with each comparison on a word holding `-3` (as `T`'s bits), against the
/// comparisons of `T` itself.
fn cmp_checks<T: AtomicInt>(shmem: &Shmem, place: Place, signed: bool) -> Result<(), String> {
    let me = shmem.my_pe();
    let x = shmem.alloc::<T>(1, place).map_err(e2s)?;
    let v = T::from_bits((-3i64) as u64);
    shmem.atomic_set(&x, 0, v, me).map_err(e2s)?;
    shmem.quiet().map_err(e2s)?;
    let zero = T::zeroed();
    let minus4 = T::from_bits((-4i64) as u64);
    for (cmp, w) in [
        (Cmp::Eq, v),
        (Cmp::Ne, v),
        (Cmp::Lt, zero),
        (Cmp::Le, v),
        (Cmp::Gt, zero),
        (Cmp::Ge, v),
        (Cmp::Gt, minus4),
        (Cmp::Lt, minus4),
        (Cmp::Eq, zero),
        (Cmp::Ne, zero),
    ] {
        let want = match cmp {
            Cmp::Eq => v == w,
            Cmp::Ne => v != w,
            Cmp::Lt => v < w,
            Cmp::Le => v <= w,
            Cmp::Gt => v > w,
            Cmp::Ge => v >= w,
        };
        ensure_eq!(
            shmem.test(&x, 0, cmp, w).map_err(e2s)?,
            want,
            "PE {me}: test({v:?} {cmp:?} {w:?})"
        );
    }
    // The signedness really reaches the comparison: -3 < 0 only for signed types.
    ensure_eq!(
        shmem.test(&x, 0, Cmp::Lt, zero).map_err(e2s)?,
        signed,
        "PE {me}: {} -3 < 0",
        std::any::type_name::<T>()
    );
    shmem.wait_until(&x, 0, Cmp::Eq, v).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    shmem.free(x).map_err(e2s)
}

/// PE 1 sets elements of PE 0's array one by one (atomic_set); PE 0's
/// wait_until_any/some/all and test_any/some/all must name exactly the right indices,
/// honouring skip masks.
fn waits_typed<T: AtomicInt>(shmem: &Shmem, place: Place, seed: u64) -> Result<(), String> {
    const K: usize = 8;
    let me = shmem.my_pe();
    let name = std::any::type_name::<T>();
    let iv = shmem.alloc::<T>(K, place).map_err(e2s)?;
    let ack = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let go = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let mut order: Vec<usize> = (0..K).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut StdRng::seed_from_u64(seed));
    let (zero, one, two, three) = (
        T::zeroed(),
        T::from_bits(1),
        T::from_bits(2),
        T::from_bits(3),
    );
    shmem.barrier_all().map_err(e2s)?;
    if me == 1 {
        for (s, &i) in order[..4].iter().enumerate() {
            shmem.atomic_set(&iv, i, one, 0).map_err(e2s)?;
            shmem
                .wait_until(&ack, 0, Cmp::Ge, s as u64 + 1)
                .map_err(e2s)?;
        }
        for &i in &order[4..7] {
            shmem.atomic_set(&iv, i, two, 0).map_err(e2s)?;
        }
        shmem.fence().map_err(e2s)?;
        shmem.atomic_set(&go, 0, 1, 0).map_err(e2s)?;
        shmem.wait_until(&ack, 0, Cmp::Ge, 5).map_err(e2s)?;
        shmem.atomic_set(&iv, order[7], three, 0).map_err(e2s)?;
        shmem.quiet().map_err(e2s)?;
    } else if me == 0 {
        let mut skip = [false; K];
        for (s, &i) in order[..4].iter().enumerate() {
            let got = shmem
                .wait_until_any(&iv, Some(&skip), Cmp::Eq, one)
                .map_err(e2s)?;
            ensure_eq!(got, Some(i), "{name}: wait_until_any step {s}");
            skip[i] = true;
            // PE 1 sets nothing more before our acknowledgement.
            ensure_eq!(
                shmem
                    .test_any(&iv, Some(&skip), Cmp::Eq, one)
                    .map_err(e2s)?,
                None,
                "{name}: test_any with the found elements skipped, step {s}"
            );
            ensure_eq!(
                shmem
                    .test_some(&iv, Some(&skip), Cmp::Eq, one)
                    .map_err(e2s)?,
                Vec::<usize>::new(),
                "{name}: test_some with the found elements skipped, step {s}"
            );
            let mut found: Vec<usize> = order[..=s].to_vec();
            found.sort_unstable();
            ensure_eq!(
                shmem.test_some(&iv, None, Cmp::Eq, one).map_err(e2s)?,
                found,
                "{name}: test_some without a mask, step {s}"
            );
            if shmem
                .test_all(&iv, Some(&skip), Cmp::Eq, one)
                .map_err(e2s)?
            {
                return Err(format!(
                    "{name}: test_all true with unset elements, step {s}"
                ));
            }
            shmem.atomic_set(&ack, 0, s as u64 + 1, 1).map_err(e2s)?;
        }
        shmem.wait_until(&go, 0, Cmp::Eq, 1).map_err(e2s)?;
        // order[6] is set too, but skipped.
        let mut skip2 = skip;
        skip2[order[6]] = true;
        let mut batch = vec![order[4], order[5]];
        batch.sort_unstable();
        let mut got = shmem
            .wait_until_some(&iv, Some(&skip2), Cmp::Gt, one)
            .map_err(e2s)?;
        got.sort_unstable();
        ensure_eq!(got, batch, "{name}: wait_until_some");
        let mut got = shmem
            .test_some(&iv, Some(&skip2), Cmp::Ge, two)
            .map_err(e2s)?;
        got.sort_unstable();
        ensure_eq!(got, batch, "{name}: test_some");
        let mut three_set: Vec<usize> = order[4..7].to_vec();
        three_set.sort_unstable();
        ensure_eq!(
            shmem.test_some(&iv, None, Cmp::Ge, two).map_err(e2s)?,
            three_set,
            "{name}: test_some without a mask"
        );
        if shmem.test_all(&iv, None, Cmp::Ne, zero).map_err(e2s)? {
            return Err(format!(
                "{name}: test_all true with element {} unset",
                order[7]
            ));
        }
        let mut skip_last = [false; K];
        skip_last[order[7]] = true;
        if !shmem
            .test_all(&iv, Some(&skip_last), Cmp::Ne, zero)
            .map_err(e2s)?
        {
            return Err(format!(
                "{name}: test_all false with the unset element skipped"
            ));
        }
        // Everything skipped: the waits return at once.
        let all = [true; K];
        ensure_eq!(
            shmem
                .wait_until_any(&iv, Some(&all), Cmp::Eq, three)
                .map_err(e2s)?,
            None,
            "{name}: wait_until_any with every element skipped"
        );
        ensure_eq!(
            shmem
                .wait_until_some(&iv, Some(&all), Cmp::Eq, three)
                .map_err(e2s)?,
            Vec::<usize>::new(),
            "{name}: wait_until_some with every element skipped"
        );
        shmem
            .wait_until_all(&iv, Some(&all), Cmp::Eq, three)
            .map_err(e2s)?;
        expect_err(
            "skip mask of the wrong length",
            shmem.wait_until_any(&iv, Some(&[false; K - 1]), Cmp::Eq, one),
            |e| matches!(e, Error::InvalidArgument(_)),
        )?;
        shmem.atomic_set(&ack, 0, 5, 1).map_err(e2s)?;
        shmem
            .wait_until_all(&iv, None, Cmp::Ne, zero)
            .map_err(e2s)?;
        let mut want = vec![zero; K];
        for &i in &order[..4] {
            want[i] = one;
        }
        for &i in &order[4..7] {
            want[i] = two;
        }
        want[order[7]] = three;
        ensure_eq!(
            shmem.local_to_vec(&iv).map_err(e2s)?,
            want,
            "{name}: final words"
        );
        if !shmem.test(&iv, order[7], Cmp::Ge, three).map_err(e2s)? {
            return Err(format!("{name}: test false after wait_until_all"));
        }
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.free(go).map_err(e2s)?;
    shmem.free(ack).map_err(e2s)?;
    shmem.free(iv).map_err(e2s)
}

pub(crate) fn waits(shmem: &Shmem, place: Place, seed: u64) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    need_boards(shmem, place)?;
    if n < 2 {
        return Err("waits needs at least 2 PEs".into());
    }
    cmp_checks::<i32>(shmem, place, true)?;
    cmp_checks::<u32>(shmem, place, false)?;
    cmp_checks::<i64>(shmem, place, true)?;
    cmp_checks::<u64>(shmem, place, false)?;
    waits_typed::<i32>(shmem, place, seed)?;
    waits_typed::<u32>(shmem, place, seed + 1)?;
    waits_typed::<i64>(shmem, place, seed + 2)?;
    waits_typed::<u64>(shmem, place, seed + 3)?;
    println!("PE {me}: waits ok");
    Ok(())
}
