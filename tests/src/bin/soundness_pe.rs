//! A PE program for the soundness tests (`tests/tests/soundness.rs`): scenarios that
//! stress the protocols whose failures lose or duplicate work: AM delivery under full
//! rings, `quiet` called by several threads of one PE, concurrent team splits, and
//! split calls whose arguments differ between PEs. Each mode prints one line per PE
//! on success and exits non-zero with a message on the first wrong result.

use shmemplus::{Place, ReduceOp, Shmem, SymVec};
use shmemplus_tests::pe::{e2s, exit_code, place_arg, with_handle};
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| {
        args.get(i)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let result = with_handle("soundness-pe", |shmem| {
        let me = shmem.my_pe();
        let line = match args.first().map(String::as_str) {
            Some("am-counters") => place_arg(args.get(1).map(String::as_str))
                .and_then(|place| am_counters(shmem, place, arg(2, 20_000), arg(3, 2_000))),
            Some("threaded-quiet") => {
                threaded_quiet(shmem, arg(1, 4) as usize, arg(2, 300), arg(3, 1) as usize)
            }
            Some("split-race") => split_race(shmem, arg(1, 30)),
            Some("split-mismatch") => split_mismatch(shmem),
            other => Err(format!("unknown mode {other:?}")),
        }
        .map_err(|e| format!("PE {me}: {e}"))?;
        println!("PE {me}: {line}");
        Ok(())
    });
    exit_code("soundness-pe", result)
}

/// Every PE posts `adds` non-fetching `atomic_add(1)` and makes `fetches`
/// `atomic_fetch_add(1)` on counters owned by PE 0 (on `place`), with many records in
/// flight so the AM rings fill and waits for ring space reach their sleep phase. A
/// record pushed twice, or a reply matched to the wrong operation, shows as a final
/// count off by some, or as fetched values that repeat or go backwards.
fn am_counters(shmem: &Shmem, place: Place, adds: u64, fetches: u64) -> Result<String, String> {
    let (me, n) = (shmem.my_pe(), u64::from(shmem.n_pes()));
    // [0]: the non-fetching adds; [1]: the fetching adds.
    let counters = shmem.alloc::<u64>(2, place).map_err(e2s)?;
    // Each PE's sum of fetched values, gathered on PE 0 to prove each value was handed
    // out exactly once.
    let sums = shmem.alloc::<u64>(n as usize, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let (mut fetched_sum, mut last) = (0u64, None);
    let (mut a, mut f) = (0, 0);
    // Interleave: bursts of posted adds between fetches keep the rings full.
    let burst = adds.checked_div(fetches.max(1)).unwrap_or(adds).max(1);
    while a < adds || f < fetches {
        for _ in 0..burst.min(adds - a) {
            shmem.atomic_add(&counters, 0, 1u64, 0).map_err(e2s)?;
            a += 1;
        }
        if f < fetches {
            let old = shmem.atomic_fetch_add(&counters, 1, 1u64, 0).map_err(e2s)?;
            if last.is_some_and(|l| old <= l) {
                return Err(format!("fetch_add went backwards: {old} after {last:?}"));
            }
            last = Some(old);
            fetched_sum = fetched_sum.wrapping_add(old);
            f += 1;
        }
    }
    shmem.quiet().map_err(e2s)?;
    shmem
        .put(&sums, me as usize, &[fetched_sum], 0)
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        let mut got = [0u64; 2];
        shmem.get(&counters, 0, &mut got, 0).map_err(e2s)?;
        let want = [adds * n, fetches * n];
        if got != want {
            return Err(format!(
                "counters hold {got:?}, {want:?} operations were issued"
            ));
        }
        let total = fetches * n;
        // 0 + 1 + ... + (total - 1): every value handed out exactly once.
        let want_sum = (u128::from(total) * u128::from(total.saturating_sub(1)) / 2) as u64;
        let sum = shmem
            .local_to_vec(&sums)
            .map_err(e2s)?
            .into_iter()
            .fold(0u64, u64::wrapping_add);
        if sum != want_sum {
            return Err(format!(
                "fetched values sum to {sum}, {want_sum} if each was handed out once"
            ));
        }
    }
    Ok(format!(
        "am counters exact: {} operations on {place}",
        (adds + fetches) * n
    ))
}

/// `threads` threads per PE each put a block of `words` words into the next PE's board
/// through AMs (posted, completed only by `quiet`), call `quiet`, then raise a flag on
/// the target's CPU heap with a direct atomic that does not travel behind the put. The
/// target reads the block as soon as it sees the flag: a `quiet` that returned before
/// the put was applied (another thread's quiet had taken the work) shows as a stale
/// word, most likely at the block's end (its last records).
fn threaded_quiet(
    shmem: &Shmem,
    threads: usize,
    rounds: u64,
    words: usize,
) -> Result<String, String> {
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    if shmem.fpgas() == 0 {
        return Err("threaded-quiet needs a board per node".into());
    }
    let to = (me + 1) % n;
    let from = (me + n - 1) % n;
    let data = shmem
        .alloc::<u64>(threads * words, Place::Fpga(0))
        .map_err(e2s)?;
    let flags = shmem.alloc::<u64>(threads, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let (data, flags) = (Arc::new(data), Arc::new(flags));
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for t in 0..threads {
            let (shmem, data, flags) = (shmem.clone(), data.clone(), flags.clone());
            workers.push(scope.spawn(move || -> Result<(), String> {
                let mut block = vec![0u64; words];
                for r in 1..=rounds {
                    // Writer: my block on the next PE's board, then its flag.
                    block.fill(r);
                    shmem.put(&data, t * words, &block, to as u32).map_err(e2s)?;
                    shmem.quiet().map_err(e2s)?;
                    shmem.atomic_set(&flags, t, r, to as u32).map_err(e2s)?;
                    // Reader: the previous PE's word on my board, once its flag says so.
                    shmem
                        .wait_until(&flags, t, shmemplus::Cmp::Ge, r)
                        .map_err(e2s)?;
                    shmem.local_read(&data, t * words, &mut block).map_err(e2s)?;
                    if let Some(i) = block.iter().position(|&w| w < r) {
                        return Err(format!(
                            "thread {t} round {r}: PE {from}'s flag was raised after its quiet, but its put is not applied (word {i} of {words} holds {})",
                            block[i]
                        ));
                    }
                }
                Ok(())
            }));
        }
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect::<Result<Vec<()>, String>>()
    })?;
    shmem.barrier_all().map_err(e2s)?;
    Ok(format!(
        "threaded quiet ordered {threads} x {rounds} puts of {words} words"
    ))
}

/// Two threads per PE split two different parents at the same time, over and over,
/// and run a reduction on each new team. Teams that shared a slot would mix their
/// barrier and arrival words: wrong sums or a hang.
fn split_race(shmem: &Shmem, rounds: u64) -> Result<String, String> {
    let world = shmem.team_world();
    let n = world.n_pes();
    let parents = [
        shmem
            .team_split_strided(&world, 0, 1, n)
            .map_err(e2s)?
            .ok_or("not in the first parent")?,
        shmem
            .team_split_strided(&world, 0, 1, n)
            .map_err(e2s)?
            .ok_or("not in the second parent")?,
    ];
    let buffers: Vec<(SymVec<u64>, SymVec<u64>)> = (0..2)
        .map(|_| {
            Ok((
                shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?,
                shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?,
            ))
        })
        .collect::<Result<_, String>>()?;
    std::thread::scope(|scope| {
        let workers: Vec<_> = parents
            .iter()
            .zip(&buffers)
            .enumerate()
            .map(|(k, (parent, (src, dst)))| {
                let shmem = shmem.clone();
                scope.spawn(move || -> Result<(), String> {
                    for r in 0..rounds {
                        let team = shmem
                            .team_split_strided(parent, 0, 1, n)
                            .map_err(e2s)?
                            .ok_or("not in the new team")?;
                        let value = (k as u64 + 1) * 1000 + r + u64::from(team.my_pe());
                        shmem.local_write(src, 0, &[value]).map_err(e2s)?;
                        shmem
                            .reduce(&team, dst, src, 1, ReduceOp::Sum)
                            .map_err(e2s)?;
                        let n64 = u64::from(n);
                        let want = n64 * ((k as u64 + 1) * 1000 + r) + n64 * (n64 - 1) / 2;
                        let got = shmem.local_read_one(dst, 0).map_err(e2s)?;
                        if got != want {
                            return Err(format!(
                                "parent {k} round {r}: the team's sum is {got}, want {want}"
                            ));
                        }
                        shmem.team_destroy(team).map_err(e2s)?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect::<Result<Vec<()>, String>>()
    })?;
    Ok(format!(
        "split race: 2 x {rounds} concurrent splits, sums exact"
    ))
}

/// Split calls whose arguments are bad, or differ, on one PE only: every PE must get
/// an error from the same call (none may wait for the others forever), and the job
/// must go on working afterwards.
fn split_mismatch(shmem: &Shmem) -> Result<String, String> {
    let world = shmem.team_world();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    // PE 1 passes stride 0 (invalid), the others a valid split.
    let stride = if me == 1 { 0 } else { 1 };
    let bad_on_one = shmem.team_split_strided(&world, 0, stride, n);
    // PE 0 passes another (valid) size than the others.
    let size = if me == 0 { n - 1 } else { n };
    let differs = shmem.team_split_strided(&world, 0, 1, size);
    // All agree: works.
    let good = shmem
        .team_split_strided(&world, 0, 1, n)
        .map_err(e2s)?
        .ok_or("not in the agreed team")?;
    shmem.barrier(&good).map_err(e2s)?;
    shmem.team_destroy(good).map_err(e2s)?;
    match (bad_on_one, differs) {
        (Err(a), Err(b)) => Ok(format!("split mismatch refused on every PE: {a} | {b}")),
        (a, b) => Err(format!(
            "a mismatched split succeeded here: stride-0 call {:?}, size call {:?}",
            a.map(|t| t.is_some()),
            b.map(|t| t.is_some())
        )),
    }
}
