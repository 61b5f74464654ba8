//! The `atomics` scenario: contended counters, compare-swap and bitwise atomics, then
//! every atomic operation of the API against a serial model, for each integer type.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shmemplus::{AtomicInt, Place, Shmem, SymVec};
use shmemplus_tests::pe::{e2s, need_boards};
use shmemplus_tests::{ensure_eq, hash};

/// Every atomic operation of the API (compare-swap twice: one that matches, one not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Amo {
    Fetch,
    Set,
    Swap,
    CasHit,
    CasMiss,
    FetchAdd,
    Add,
    FetchInc,
    Inc,
    FetchAnd,
    And,
    FetchOr,
    Or,
    FetchXor,
    Xor,
}

const AMOS: [Amo; 15] = [
    Amo::Fetch,
    Amo::Set,
    Amo::Swap,
    Amo::CasHit,
    Amo::CasMiss,
    Amo::FetchAdd,
    Amo::Add,
    Amo::FetchInc,
    Amo::Inc,
    Amo::FetchAnd,
    Amo::And,
    Amo::FetchOr,
    Amo::Or,
    Amo::FetchXor,
    Amo::Xor,
];

/// One step of a serial atomic script: the operation, its operand and compare value
/// (as bits of the word), and the old value a correct implementation returns.
#[derive(Debug, Clone, Copy)]
struct AmoStep {
    op: Amo,
    operand: u64,
    cond: u64,
    old: u64,
}

/// A random script of `steps` atomics on one word of `width` bytes, starting at 0, with
/// the old value of each step and the final word computed by a plain serial model.
fn amo_script(seed: u64, width: usize, steps: usize) -> (Vec<AmoStep>, u64) {
    let mask = if width == 8 { u64::MAX } else { 0xffff_ffff };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cur = 0u64;
    let mut script = Vec::with_capacity(steps);
    for _ in 0..steps {
        let op = AMOS[rng.random_range(0..AMOS.len())];
        // Small, small negative (wrapping, sign bits set), one bit, or anything.
        let operand = match rng.random_range(0..4) {
            0 => rng.random_range(0..16u64),
            1 => rng.random_range(1..16u64).wrapping_neg(),
            2 => 1u64 << rng.random_range(0..width * 8),
            _ => rng.random(),
        } & mask;
        let cond = match op {
            Amo::CasHit => cur,
            Amo::CasMiss => cur ^ (1u64 << rng.random_range(0..width * 8)),
            _ => 0,
        };
        let old = cur;
        cur = match op {
            Amo::Fetch | Amo::CasMiss => cur,
            Amo::Set | Amo::Swap | Amo::CasHit => operand,
            Amo::FetchAdd | Amo::Add => cur.wrapping_add(operand),
            Amo::FetchInc | Amo::Inc => cur.wrapping_add(1),
            Amo::FetchAnd | Amo::And => cur & operand,
            Amo::FetchOr | Amo::Or => cur | operand,
            Amo::FetchXor | Amo::Xor => cur ^ operand,
        } & mask;
        script.push(AmoStep {
            op,
            operand,
            cond,
            old,
        });
    }
    (script, cur)
}

/// Runs `script` on `obj[index]` of PE `pe`, checking every returned old value; a
/// fence after each non-fetching operation orders it before the next one.
fn run_amo_script<T: AtomicInt>(
    shmem: &Shmem,
    obj: &SymVec<T>,
    index: usize,
    pe: u32,
    script: &[AmoStep],
    what: &str,
) -> Result<(), String> {
    for (k, s) in script.iter().enumerate() {
        let (v, c) = (T::from_bits(s.operand), T::from_bits(s.cond));
        let none = |r: shmemplus::Result<()>| r.map(|()| None);
        let got = match s.op {
            Amo::Fetch => shmem.atomic_fetch(obj, index, pe).map(Some),
            Amo::Set => none(shmem.atomic_set(obj, index, v, pe)),
            Amo::Swap => shmem.atomic_swap(obj, index, v, pe).map(Some),
            Amo::CasHit | Amo::CasMiss => shmem.atomic_compare_swap(obj, index, c, v, pe).map(Some),
            Amo::FetchAdd => shmem.atomic_fetch_add(obj, index, v, pe).map(Some),
            Amo::Add => none(shmem.atomic_add(obj, index, v, pe)),
            Amo::FetchInc => shmem.atomic_fetch_inc(obj, index, pe).map(Some),
            Amo::Inc => none(shmem.atomic_inc(obj, index, pe)),
            Amo::FetchAnd => shmem.atomic_fetch_and(obj, index, v, pe).map(Some),
            Amo::And => none(shmem.atomic_and(obj, index, v, pe)),
            Amo::FetchOr => shmem.atomic_fetch_or(obj, index, v, pe).map(Some),
            Amo::Or => none(shmem.atomic_or(obj, index, v, pe)),
            Amo::FetchXor => shmem.atomic_fetch_xor(obj, index, v, pe).map(Some),
            Amo::Xor => none(shmem.atomic_xor(obj, index, v, pe)),
        }
        .map_err(|e| format!("{what}: step {k} {s:?}: {e}"))?;
        match got {
            Some(old) => ensure_eq!(
                old.to_bits(),
                s.old,
                "{what}: step {k} {s:?} returned {old:?}"
            ),
            None => shmem.fence().map_err(e2s)?,
        }
    }
    Ok(())
}

/// Every operation on `T` words, from a serial script each PE runs on its own slot of
/// an object on itself and on its right neighbour; returned values, the final fetch
/// and the owner's view after a barrier must all match the model, and the slots of
/// other PEs (neighbouring words) must stay untouched.
fn amo_serial<T: AtomicInt>(
    shmem: &Shmem,
    place: Place,
    steps: usize,
    seed: u64,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let name = std::any::type_name::<T>();
    let tag = name.bytes().fold(0u64, |h, b| h * 31 + u64::from(b));
    let near = shmem.alloc::<T>(n as usize, place).map_err(e2s)?;
    let far = shmem.alloc::<T>(n as usize, place).map_err(e2s)?;
    let script = |w: u32, remote: bool| {
        amo_script(
            hash(&[seed, tag, u64::from(w), u64::from(remote)]),
            T::WIDTH,
            steps,
        )
    };
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    for (obj, target, remote) in [(&near, me, false), (&far, next, true)] {
        let (steps, last) = script(me, remote);
        let what = format!("PE {me}: {name} on {place} of PE {target}");
        run_amo_script(shmem, obj, me as usize, target, &steps, &what)?;
        let now = shmem.atomic_fetch(obj, me as usize, target).map_err(e2s)?;
        ensure_eq!(now.to_bits(), last, "{what}: final fetch");
    }
    shmem.barrier_all().map_err(e2s)?;
    for (obj, writer, remote) in [(&near, me, false), (&far, prev, true)] {
        let words: Vec<u64> = shmem
            .local_to_vec(obj)
            .map_err(e2s)?
            .into_iter()
            .map(AtomicInt::to_bits)
            .collect();
        let mut want = vec![0u64; n as usize];
        want[writer as usize] = script(writer, remote).1;
        ensure_eq!(
            words,
            want,
            "PE {me}: {name} words on {place} after PE {writer}'s script"
        );
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.free(far).map_err(e2s)?;
    shmem.free(near).map_err(e2s)
}

/// Atomics under contention on counters of PE 0 at `place` (`m` rounds per PE), a
/// compare-swap counter, bitwise contention; then every operation against a serial
/// model (`steps` per word) for i32, u32, i64 and u64.
pub(crate) fn atomics(
    shmem: &Shmem,
    place: Place,
    m: usize,
    steps: usize,
    seed: u64,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    need_boards(shmem, place)?;
    let (nu, meu) = (n as usize, me as usize);
    let c64 = shmem.alloc::<u64>(1, place).map_err(e2s)?;
    let c32 = shmem.alloc::<i32>(1, place).map_err(e2s)?;
    let cas = shmem.alloc::<u32>(1, place).map_err(e2s)?;
    let sum = shmem.alloc::<i64>(1, place).map_err(e2s)?;
    let bits = shmem.alloc::<u64>(2, place).map_err(e2s)?;
    let olds64 = shmem.alloc::<u64>(nu * m, Place::Cpu).map_err(e2s)?;
    let olds32 = shmem.alloc::<i32>(nu * m, Place::Cpu).map_err(e2s)?;
    let add_of = |pe: usize, i: usize| -> i64 {
        if i % 3 == 0 {
            -7 * (pe as i64 + 1)
        } else {
            pe as i64 + 1
        }
    };
    shmem.barrier_all().map_err(e2s)?;
    let start = std::time::Instant::now();
    let old_or = shmem
        .atomic_fetch_or(&bits, 0, 1 << (me % 64), 0)
        .map_err(e2s)?;
    if old_or & (1 << (me % 64)) != 0 {
        return Err(format!("PE {me}: my bit was set before my fetch_or"));
    }
    let (mut mine64, mut mine32) = (Vec::with_capacity(m), Vec::with_capacity(m));
    for i in 0..m {
        mine64.push(shmem.atomic_fetch_add(&c64, 0, 1, 0).map_err(e2s)?);
        mine32.push(shmem.atomic_fetch_inc(&c32, 0, 0).map_err(e2s)?);
        shmem.atomic_add(&sum, 0, add_of(meu, i), 0).map_err(e2s)?;
        shmem.atomic_inc(&sum, 0, 0).map_err(e2s)?;
        shmem.atomic_xor(&bits, 1, 1 << (me % 64), 0).map_err(e2s)?;
    }
    // A counter incremented only through compare-and-swap loops.
    let mut guess = 0u32;
    let mut retries = 0u64;
    for _ in 0..m / 4 {
        loop {
            let seen = shmem
                .atomic_compare_swap(&cas, 0, guess, guess.wrapping_add(1), 0)
                .map_err(e2s)?;
            if seen == guess {
                guess = guess.wrapping_add(1);
                break;
            }
            retries += 1;
            guess = seen;
        }
    }
    shmem.quiet().map_err(e2s)?;
    let took = start.elapsed().as_secs_f64();
    if let Some(i) = (1..m).find(|&i| mine64[i] <= mine64[i - 1]) {
        return Err(format!(
            "PE {me}: fetch_add returned {} after {}",
            mine64[i],
            mine64[i - 1]
        ));
    }
    if let Some(i) = (1..m).find(|&i| mine32[i] <= mine32[i - 1]) {
        return Err(format!(
            "PE {me}: fetch_inc returned {} after {}",
            mine32[i],
            mine32[i - 1]
        ));
    }
    shmem.put(&olds64, meu * m, &mine64, 0).map_err(e2s)?;
    shmem.put(&olds32, meu * m, &mine32, 0).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    // Every PE reads the totals (remotely, except PE 0).
    let total = (nu * m) as u64;
    ensure_eq!(
        shmem.atomic_fetch(&c64, 0, 0).map_err(e2s)?,
        total,
        "PE {me}: u64 fetch_add counter"
    );
    ensure_eq!(
        shmem.atomic_fetch(&c32, 0, 0).map_err(e2s)?,
        total as i32,
        "PE {me}: i32 fetch_inc counter"
    );
    ensure_eq!(
        shmem.atomic_fetch(&cas, 0, 0).map_err(e2s)?,
        (nu * (m / 4)) as u32,
        "PE {me}: compare-swap counter"
    );
    let want_sum: i64 = (0..nu)
        .flat_map(|pe| (0..m).map(move |i| (pe, i)))
        .map(|(pe, i)| add_of(pe, i) + 1)
        .sum();
    ensure_eq!(
        shmem.atomic_fetch(&sum, 0, 0).map_err(e2s)?,
        want_sum,
        "PE {me}: i64 add/inc sum"
    );
    let all_bits = (0..n).fold(0u64, |b, pe| b | 1 << (pe % 64));
    ensure_eq!(
        shmem.atomic_fetch(&bits, 0, 0).map_err(e2s)?,
        all_bits,
        "PE {me}: fetch_or bits"
    );
    ensure_eq!(
        shmem.atomic_fetch(&bits, 1, 0).map_err(e2s)?,
        if m % 2 == 1 { all_bits } else { 0 },
        "PE {me}: xor toggles"
    );
    if me == 0 {
        let mut all = shmem.local_to_vec(&olds64).map_err(e2s)?;
        all.sort_unstable();
        if let Some(i) = (0..all.len()).find(|&i| all[i] != i as u64) {
            return Err(format!(
                "fetch_add old values are not 0..{total}: sorted position {i} holds {}",
                all[i]
            ));
        }
        let mut all = shmem.local_to_vec(&olds32).map_err(e2s)?;
        all.sort_unstable();
        if let Some(i) = (0..all.len()).find(|&i| all[i] != i as i32) {
            return Err(format!(
                "fetch_inc old values are not 0..{total}: sorted position {i} holds {}",
                all[i]
            ));
        }
    }
    println!(
        "PE {me}: {m} contended rounds on {place} in {took:.3} s ({retries} compare-swap retries)"
    );
    shmem.barrier_all().map_err(e2s)?;
    amo_serial::<i32>(shmem, place, steps, seed)?;
    amo_serial::<u32>(shmem, place, steps, seed)?;
    amo_serial::<i64>(shmem, place, steps, seed)?;
    amo_serial::<u64>(shmem, place, steps, seed)?;
    println!("PE {me}: serial scripts of {steps} atomics per word verified");
    println!("PE {me}: atomics ok");
    Ok(())
}
