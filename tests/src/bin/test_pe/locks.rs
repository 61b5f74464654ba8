//! The `locks` scenario: set_lock/try_set_lock/clear_lock exclude each other and lose
//! no update of a counter on the CPU or a board.

use shmemplus::{Place, Shmem, SymVec};
use shmemplus_tests::ensure_eq;
use shmemplus_tests::pe::{e2s, need_boards};

/// The critical section of the lock test: an owner word proves exclusion; the
/// counter on PE 0 (at the test's place) is read with get and written with put.
fn critical_section(
    shmem: &Shmem,
    owner: &SymVec<u64>,
    counter: &SymVec<u64>,
) -> Result<(), String> {
    let me = u64::from(shmem.my_pe());
    let before = shmem.atomic_swap(owner, 0, me + 1, 0).map_err(e2s)?;
    if before != 0 {
        return Err(format!(
            "PE {me} entered the critical section held by PE {}",
            before - 1
        ));
    }
    let v = shmem.g(counter, 0, 0).map_err(e2s)?;
    shmem.p(counter, 0, v + 1, 0).map_err(e2s)?;
    let after = shmem.atomic_swap(owner, 0, 0, 0).map_err(e2s)?;
    ensure_eq!(
        after,
        me + 1,
        "PE {me}: owner word at the end of the section"
    );
    Ok(())
}

/// `k` rounds of set_lock / get / put / clear_lock and `k / 4` of try_set_lock per PE on
/// a counter of PE 0: it must end at n * (k + k / 4). Then try_set_lock in turns.
pub(crate) fn locks(shmem: &Shmem, k: u64, place: Place) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    need_boards(shmem, place)?;
    let lock = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let owner = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let counter = shmem.alloc::<u64>(1, place).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let start = std::time::Instant::now();
    for _ in 0..k {
        shmem.set_lock(&lock).map_err(e2s)?;
        critical_section(shmem, &owner, &counter)?;
        shmem.clear_lock(&lock).map_err(e2s)?;
    }
    let mut refused = 0u64;
    for _ in 0..k / 4 {
        while !shmem.try_set_lock(&lock).map_err(e2s)? {
            refused += 1;
            std::thread::yield_now();
        }
        critical_section(shmem, &owner, &counter)?;
        shmem.clear_lock(&lock).map_err(e2s)?;
    }
    let took = start.elapsed().as_secs_f64();
    shmem.barrier_all().map_err(e2s)?;
    ensure_eq!(
        shmem.g(&counter, 0, 0).map_err(e2s)?,
        u64::from(n) * (k + k / 4),
        "PE {me}: counter after every PE's locked increments"
    );
    for turn in 0..n {
        if me == turn {
            if !shmem.try_set_lock(&lock).map_err(e2s)? {
                return Err(format!("PE {me}: try_set_lock refused a free lock"));
            }
            if shmem.try_set_lock(&lock).map_err(e2s)? {
                return Err(format!("PE {me}: try_set_lock took a lock it holds"));
            }
        }
        shmem.barrier_all().map_err(e2s)?;
        if me != turn && shmem.try_set_lock(&lock).map_err(e2s)? {
            return Err(format!(
                "PE {me}: try_set_lock took the lock PE {turn} holds"
            ));
        }
        shmem.barrier_all().map_err(e2s)?;
        if me == turn {
            shmem.clear_lock(&lock).map_err(e2s)?;
        }
        shmem.barrier_all().map_err(e2s)?;
    }
    println!(
        "PE {me}: {k} set_lock and {} try_set_lock sections on a {place} counter in {took:.3} s ({refused} refusals)",
        k / 4
    );
    println!("PE {me}: locks ok");
    Ok(())
}
