//! `shmemplus-test-pe`: the PE program of the integration tests. Each mode is one
//! scenario; a PE prints what it checked and exits 0 only if every check held, so the
//! tests can assert on the job's outcome and on each PE's output.

use rand::{rngs::StdRng, Rng, SeedableRng};
use shmemplus::{AtomicInt, Cmp, Error, Place, ReduceOp, Shmem, SignalOp, SymVec, Team};
use shmemplus_tests::{hash, mix};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let arg = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok());
    let result = match mode {
        "rma" => rma(arg(1).unwrap_or(1), arg(2).unwrap_or(20) as usize),
        "barrier" => barrier_order(arg(1).unwrap_or(200)),
        "nonsym-size" => nonsym_size(),
        "nonsym-order" => nonsym_order(),
        "bad-input" => bad_input(),
        "panic" => fail_after_barrier(arg(1).unwrap_or(1) as u32, false),
        "kill" => fail_after_barrier(arg(1).unwrap_or(1) as u32, true),
        "idle" => idle_barrier(),
        "am" => am_messages(),
        "exit-early" => exit_early(),
        "emulation" => emulation(),
        "emulated-idle" => emulated_idle(),
        "routes" => routes(arg(1).unwrap_or(1), arg(2).unwrap_or(30) as usize),
        "board-errors" => board_errors(),
        "board-memory" => board_memory(),
        "tune" => tune_report(),
        "atomics" => place_arg(args.get(1)).and_then(|place| {
            on_handle(|shmem| {
                atomics(
                    shmem,
                    place,
                    arg(2).unwrap_or(2000) as usize,
                    arg(3).unwrap_or(200) as usize,
                    arg(4).unwrap_or(1),
                )
            })
        }),
        "signals" => place_arg(args.get(3)).and_then(|data| {
            place_arg(args.get(4)).and_then(|sig| {
                on_handle(|shmem| {
                    signals(
                        shmem,
                        arg(1).unwrap_or(200),
                        arg(2).unwrap_or(64 << 10) as usize,
                        data,
                        sig,
                    )
                })
            })
        }),
        "waits" => place_arg(args.get(1))
            .and_then(|p| on_handle(|shmem| waits(shmem, p, arg(2).unwrap_or(1)))),
        "collectives" => on_handle(|shmem| {
            collectives(
                shmem,
                arg(1).unwrap_or(1),
                arg(2).unwrap_or(40) as usize,
                arg(3).unwrap_or(64) as usize,
                args.get(4).map(String::as_str) == Some("mixed"),
            )
        }),
        "teams" => on_handle(|shmem| teams(shmem, arg(1).unwrap_or(40) as usize)),
        "locks" => place_arg(args.get(2))
            .and_then(|p| on_handle(|shmem| locks(shmem, arg(1).unwrap_or(200), p))),
        "nbi" => on_handle(|shmem| nbi(shmem, arg(1).unwrap_or(1), arg(2).unwrap_or(16) as usize)),
        "nbi-overlap" => on_handle(nbi_overlap),
        "barrier-latency" => on_handle(barrier_latency),
        "breadth-errors" => on_handle(breadth_errors),
        "solo" => on_handle(|shmem| solo(shmem, arg(1).unwrap_or(100))),
        other => Err(format!("unknown mode '{other}'")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("test-pe failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn e2s(e: Error) -> String {
    e.to_string()
}

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
fn rma(seed: u64, count: usize) -> Result<(), String> {
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
fn barrier_order(rounds: u64) -> Result<(), String> {
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
fn nonsym_size() -> Result<(), String> {
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
fn nonsym_order() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let (first, second) = if me == 0 { (64, 4096) } else { (4096, 64) };
    expect_nonsym(shmem.alloc::<u8>(first, Place::Cpu), me)?;
    expect_nonsym(shmem.alloc::<u8>(second, Place::Cpu), me)?;
    shmem.finalize().map_err(e2s)
}

fn expect_err<T>(
    what: &str,
    r: shmemplus::Result<T>,
    ok: impl Fn(&Error) -> bool,
) -> Result<(), String> {
    match r {
        Err(e) if ok(&e) => {
            println!("{what}: {e}");
            Ok(())
        }
        Err(e) => Err(format!("{what}: wrong error {e:?}")),
        Ok(_) => Err(format!("{what}: accepted")),
    }
}

/// Every bad input gets its own error and leaves memory untouched.
fn bad_input() -> Result<(), String> {
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

/// Every PE passes a barrier; then PE `victim` panics (or SIGKILLs itself) while the
/// others put in a loop and wait in barriers, which never complete.
fn fail_after_barrier(victim: u32, kill: bool) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let data = shmem.alloc::<u8>(1 << 20, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: pid {} past the first barrier", std::process::id());
    if me == victim {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if kill {
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL)
                .map_err(|e| e.to_string())?;
        }
        panic!("PE {me} fails on purpose");
    }
    let buf = vec![me as u8; 1 << 20];
    for _ in 0..200 {
        shmem.put(&data, 0, &buf, victim).map_err(e2s)?;
        shmem.quiet().map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    Err(format!("PE {me}: a barrier with a dead PE completed"))
}

/// PE 0 sleeps 2 s before the barrier; the others measure the CPU time they spend
/// waiting (all threads of the process, progress thread included) and fail above 10%
/// of one core.
fn idle_barrier() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        std::thread::sleep(std::time::Duration::from_secs(2));
        shmem.barrier_all().map_err(e2s)?;
        return shmem.finalize().map_err(e2s);
    }
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    shmem.barrier_all().map_err(e2s)?;
    let (used, wall) = (cpu_seconds() - c0, w0.elapsed().as_secs_f64());
    let share = used / wall;
    println!(
        "PE {me}: waited {wall:.2} s in a barrier using {:.1}% of a core",
        share * 100.0
    );
    if wall < 1.0 {
        return Err(format!(
            "PE {me}: barrier returned after {wall:.2} s, before PE 0 arrived"
        ));
    }
    if share > 0.10 {
        return Err(format!(
            "PE {me}: idle wait burned {:.1}% of a core",
            share * 100.0
        ));
    }
    shmem.finalize().map_err(e2s)
}

/// User active messages: a handler on every PE, requests to every PE, an unknown
/// handler and an oversized payload.
fn am_messages() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    shmem
        .am_register(3, move |src, payload| {
            let mut out = format!("PE {me} served PE {src}: ").into_bytes();
            out.extend_from_slice(payload);
            Ok(out)
        })
        .map_err(e2s)?;
    shmem
        .am_register(4, |_, _| Err("refused on purpose".into()))
        .map_err(e2s)?;
    shmem
        .am_register(5, |_, _| panic!("handler bug"))
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    for t in 0..n {
        let reply = shmem.am_request(t, 3, b"ping").map_err(e2s)?;
        let want = format!("PE {t} served PE {me}: ping");
        if reply != want.as_bytes() {
            return Err(format!(
                "reply {:?}, want {want:?}",
                String::from_utf8_lossy(&reply)
            ));
        }
        let big = vec![9u8; shmem.am_max_payload()];
        if shmem.am_echo(t, &big).map_err(e2s)? != big {
            return Err("echo of a full payload differs".into());
        }
    }
    expect_err(
        "unknown handler",
        shmem.am_request((me + 1) % n, 9, b"x"),
        |e| matches!(e, Error::NoHandler { handler: 9, .. }),
    )?;
    expect_err(
        "handler error",
        shmem.am_request((me + 1) % n, 4, b"x"),
        |e| matches!(e, Error::AmFailed { .. }) && e.to_string().contains("refused on purpose"),
    )?;
    expect_err(
        "panicking handler",
        shmem.am_request((me + 1) % n, 5, b"x"),
        |e| e.to_string().contains("panicked"),
    )?;
    // The progress thread survived the panic: AMs still work.
    if shmem.am_echo((me + 1) % n, b"still here").map_err(e2s)? != b"still here" {
        return Err("echo after a handler panic differs".into());
    }
    let too_big = vec![0u8; shmem.am_max_payload() + 1];
    expect_err("oversized payload", shmem.am_echo(0, &too_big), |e| {
        matches!(e, Error::InvalidArgument(_))
    })?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: am ok");
    shmem.finalize().map_err(e2s)
}

/// PE 1 leaves with status 0 right after `init`, skipping finalize; the others wait in
/// a barrier it will never enter. The launcher must end the job, naming PE 1.
fn exit_early() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    if shmem.my_pe() == 1 {
        std::process::exit(0);
    }
    shmem.barrier_all().map_err(e2s)?;
    Err(format!(
        "PE {}: a barrier without PE 1 completed",
        shmem.my_pe()
    ))
}

/// On an emulated profile with 2 PEs per node: PE 0 puts and gets 1 MiB to PE 1 (same
/// node) and PE 2 (other node). Remote must be slower than local, and no remote
/// transfer may beat its modeled time (emulation waits at least that long). Only
/// orderings and lower bounds: no upper bound on time.
fn emulation() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let bytes = 1 << 20;
    let obj = shmem.alloc::<u8>(bytes, Place::Cpu).map_err(e2s)?;
    if me == 0 {
        use shmemplus::RmaOp;
        let src = vec![5u8; bytes];
        let mut dst = vec![0u8; bytes];
        // One untimed run first (it pays the page faults of fresh memory), then the
        // fastest of five: a loaded machine only ever adds time, so the fastest run is
        // the one closest to the transfer's own cost, and it still obeys the model's
        // lower bound.
        let time = |f: &mut dyn FnMut() -> shmemplus::Result<()>| -> Result<f64, String> {
            f().map_err(e2s)?;
            let mut fastest = f64::INFINITY;
            for _ in 0..5 {
                let start = std::time::Instant::now();
                f().map_err(e2s)?;
                fastest = fastest.min(start.elapsed().as_secs_f64());
            }
            Ok(fastest)
        };
        let put_to = |pe| {
            time(&mut || {
                shmem.put(&obj, 0, &src, pe)?;
                shmem.quiet()
            })
        };
        let (put_local, put_remote) = (put_to(1)?, put_to(2)?);
        let mut get_from = |pe| time(&mut || shmem.get(&obj, 0, &mut dst, pe));
        let (get_local, get_remote) = (get_from(1)?, get_from(2)?);
        let model = |op, pe| shmem.modeled_seconds(op, pe, bytes).map_err(e2s);
        let (put_model, get_model) = (model(RmaOp::Put, 2)?, model(RmaOp::Get, 2)?);
        println!(
            "put local {put_local:.6} remote {put_remote:.6} model {put_model:?}; get local {get_local:.6} remote {get_remote:.6} model {get_model:?}"
        );
        let (Some(put_model), Some(get_model)) = (put_model, get_model) else {
            return Err("an emulated profile must model remote transfers".into());
        };
        if model(RmaOp::Put, 1)? != Some(0.0) {
            return Err("a transfer within a node must model as free".into());
        }
        if put_remote <= put_local || get_remote <= get_local {
            return Err("remote transfers must be slower than local ones".into());
        }
        if put_remote < put_model || get_remote < get_model {
            return Err(format!("a remote transfer beat its model: {put_remote} < {put_model} or {get_remote} < {get_model}"));
        }
        if dst != src {
            return Err("get returned wrong data".into());
        }
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: emulation ok");
    shmem.finalize().map_err(e2s)
}

/// CPU seconds of the whole process, all threads (utime + stime in /proc/self/stat,
/// in ticks of 1/100 s on Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat are the 12th and 13th after the command name.
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// On an emulated profile, every PE but 0 puts 8 MiB to PE 0 at once, 20 times; the
/// receive side serialises them, so most of each sender's time is an emulated wait.
/// A sender fails if it used more than 30% of a core over its transfers.
fn emulated_idle() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    let bytes = 8 << 20;
    let target = shmem.alloc::<u8>(n * bytes, Place::Cpu).map_err(e2s)?;
    let src = vec![1u8; bytes];
    shmem.barrier_all().map_err(e2s)?;
    if me != 0 {
        let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
        for _ in 0..20 {
            shmem.put(&target, me * bytes, &src, 0).map_err(e2s)?;
            shmem.quiet().map_err(e2s)?;
        }
        let (used, wall) = (cpu_seconds() - c0, w0.elapsed().as_secs_f64());
        let share = used / wall;
        println!(
            "PE {me}: {wall:.3} s of emulated transfers used {:.1}% of a core",
            share * 100.0
        );
        if share > 0.30 {
            return Err(format!(
                "PE {me}: emulated waits burned {:.1}% of a core",
                share * 100.0
            ));
        }
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.finalize().map_err(e2s)
}

/// The places every PE has an object on in the `routes` test.
const PLACES: [Place; 3] = [Place::Cpu, Place::Fpga(0), Place::Fpga(1)];
/// Bytes of the region each writer owns in every object.
const REGION: usize = 8 << 10;

/// One random put of writer `w` into region `w` of `(target, PLACES[place])`: from a
/// host buffer (`from == None`) or from the writer's own source object on
/// `PLACES[from]` (its fixed pattern), at `off` for `len` bytes, reading the source at
/// `src_off`.
#[derive(Debug, Clone, Copy)]
struct RoutePut {
    target: usize,
    place: usize,
    from: Option<usize>,
    off: usize,
    len: usize,
    src_off: usize,
}

/// The fixed content of writer `w`'s source object on place `p`.
fn source_byte(w: usize, p: usize, i: usize) -> u8 {
    (w * 59 + p * 17 + i * 31 + 1) as u8
}

/// The bytes written by put number `k` of writer `w`.
fn route_bytes(w: usize, k: usize, op: &RoutePut) -> Vec<u8> {
    match op.from {
        None => (0..op.len)
            .map(|i| (w * 13 + k * 7 + i * 3 + 2) as u8)
            .collect(),
        Some(p) => (0..op.len)
            .map(|i| source_byte(w, p, op.src_off + i))
            .collect(),
    }
}

fn route_ops(seed: u64, w: usize, n: usize, count: usize) -> Vec<RoutePut> {
    let mut rng = StdRng::seed_from_u64(seed ^ ((w as u64) << 32));
    (0..count)
        .map(|k| {
            let off = rng.random_range(0..REGION);
            let max = REGION - off;
            // Sizes below and around the 32-byte DMA minimum, odd sizes, and large ones.
            let len = match k % 3 {
                0 => rng.random_range(0..=max.min(40)),
                1 => rng.random_range(0..=max.min(700)),
                _ => rng.random_range(0..=max),
            };
            RoutePut {
                target: rng.random_range(0..n),
                place: rng.random_range(0..PLACES.len()),
                from: rng
                    .random_bool(0.5)
                    .then(|| rng.random_range(0..PLACES.len())),
                off,
                len,
                src_off: rng.random_range(0..=REGION - len),
            }
        })
        .collect()
}

/// What `(target, PLACES[place])` holds after every writer's puts: the reference model.
fn route_reference(seed: u64, target: usize, place: usize, n: usize, count: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * REGION];
    for w in 0..n {
        for (k, op) in route_ops(seed, w, n, count).iter().enumerate() {
            if op.target == target && op.place == place {
                let base = w * REGION + op.off;
                v[base..base + op.len].copy_from_slice(&route_bytes(w, k, op));
            }
        }
    }
    v
}

/// Random puts over every route and place (CPU and two boards, local and remote PEs,
/// from host buffers and from CPU or board objects), then random gets and get_intos,
/// all checked against a plain in-memory reference model.
fn routes(seed: u64, count: usize) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    if shmem.fpgas() < 2 {
        return Err("the routes test needs 2 boards per node (--fpgas 2)".into());
    }
    let objs = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(n * REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    let sources = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    for (p, src) in sources.iter().enumerate() {
        let pattern: Vec<u8> = (0..REGION).map(|i| source_byte(me, p, i)).collect();
        shmem.local_write(src, 0, &pattern).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for (k, op) in route_ops(seed, me, n, count).iter().enumerate() {
        let dest = &objs[op.place];
        let at = me * REGION + op.off;
        match op.from {
            None => shmem.put(dest, at, &route_bytes(me, k, op), op.target as u32),
            Some(p) => shmem.put_from(dest, at, &sources[p], op.src_off, op.len, op.target as u32),
        }
        .map_err(|e| format!("put {k} {op:?}: {e}"))?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for (p, obj) in objs.iter().enumerate() {
        let mine = shmem.local_to_vec(obj).map_err(e2s)?;
        let want = route_reference(seed, me, p, n, count);
        if let Some(i) = (0..mine.len()).find(|&i| mine[i] != want[i]) {
            return Err(format!(
                "PE {me} {:?}: byte {i} (writer {}, offset {}) is {} but should be {}",
                PLACES[p],
                i / REGION,
                i % REGION,
                mine[i],
                want[i]
            ));
        }
    }
    println!("PE {me}: {count} random puts per PE over every route verified");
    // Gets from every (PE, place), into host buffers and into this PE's objects.
    let scratch = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(n * REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(me as u64));
    for k in 0..count {
        let (t, p) = (rng.random_range(0..n), rng.random_range(0..PLACES.len()));
        let want = route_reference(seed, t, p, n, count);
        let off = rng.random_range(0..want.len());
        let len = rng.random_range(0..=(want.len() - off).min(if k % 2 == 0 { 64 } else { 5000 }));
        let got = if k % 2 == 0 {
            let mut buf = vec![0u8; len];
            shmem.get(&objs[p], off, &mut buf, t as u32).map_err(e2s)?;
            buf
        } else {
            let into = rng.random_range(0..PLACES.len());
            let at = rng.random_range(0..=scratch[into].len() - len);
            shmem
                .get_into(&scratch[into], at, &objs[p], off, len, t as u32)
                .map_err(e2s)?;
            let mut buf = vec![0u8; len];
            shmem
                .local_read(&scratch[into], at, &mut buf)
                .map_err(e2s)?;
            buf
        };
        if got[..] != want[off..off + len] {
            return Err(format!(
                "PE {me}: get {k} of {len} bytes at {off} from PE {t} {:?} differs",
                PLACES[p]
            ));
        }
    }
    println!("PE {me}: {count} random gets verified");
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: routes ok");
    shmem.finalize().map_err(e2s)
}

/// Each bad input of the boards gets its typed error, and the board stays usable.
fn board_errors() -> Result<(), String> {
    use shmemplus::fpga_mock::kernels::standard_bitfile;
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let boards = shmem.fpgas();
    if boards == 0 {
        expect_err("no boards", shmem.alloc::<u8>(64, Place::Fpga(0)), |e| {
            matches!(e, Error::NoBoards)
        })?;
        println!("PE {me}: board errors ok");
        return shmem.finalize().map_err(e2s);
    }
    expect_err(
        "board out of range",
        shmem.alloc::<u8>(64, Place::Fpga(boards)),
        |e| matches!(e, Error::InvalidBoard { .. }),
    )?;
    let v = shmem.alloc::<u32>(16, Place::Fpga(0)).map_err(e2s)?;
    expect_err(
        "FPGA put past the end",
        shmem.put(&v, 10, &[1; 7], (me + 1) % n),
        |e| matches!(e, Error::OutOfBounds { .. }),
    )?;
    expect_err(
        "FPGA heap exhausted",
        shmem.alloc::<u8>(1 << 40, Place::Fpga(0)),
        |e| matches!(e, Error::BoardHeapExhausted { .. }),
    )?;
    expect_err(
        "kernel before configure",
        shmem.fpga_start(0, "add-one", &[0, 1]),
        |e| e.to_string().contains("configure"),
    )?;
    shmem.fpga_configure(0, standard_bitfile()).map_err(e2s)?;
    expect_err("unknown kernel", shmem.fpga_start(0, "fft", &[]), |e| {
        e.to_string().contains("add-one")
    })?;
    let run = shmem.fpga_start(0, "panic", &[]).map_err(e2s)?;
    match run.wait() {
        Err(e) => println!("panicking kernel: {e}"),
        Ok(_) => return Err("a panicking kernel reported DONE".into()),
    }
    // The board is still usable: DMA and another kernel work.
    shmem.local_write(&v, 0, &[41; 16]).map_err(e2s)?;
    let run = shmem
        .fpga_start(0, "add-one", &[v.heap_offset() as u64, 16])
        .map_err(e2s)?;
    run.wait().map_err(|e| e.to_string())?;
    if shmem.local_to_vec(&v).map_err(e2s)? != vec![42; 16] {
        return Err("add-one after a panic gave wrong values".into());
    }
    expect_err(
        "board memory borrowed",
        // SAFETY: `v` is on a board, so the call must refuse and return no slice; if it
        // wrongly returned one, expect_err drops it unread, and no PE puts into `v`
        // between the DMA write above and the barrier below.
        unsafe { shmem.local_slice(&v) },
        |e| matches!(e, Error::PlaceUnavailable(_)),
    )?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: board errors ok");
    shmem.finalize().map_err(e2s)
}

/// A job whose nodes each carry 4 boards of 2 GiB: after start-up and a small object
/// on every board, the boards' resident memory (summed over the job's PEs, each
/// reporting its share) stays far below their size. Each PE fails above 25 MB, so a job
/// of 4 nodes stays under 100 MB.
fn board_memory() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let boards = shmem.fpgas();
    let objs = (0..boards)
        .map(|b| shmem.alloc::<u64>(1024, Place::Fpga(b)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    for o in &objs {
        shmem.local_write(o, 0, &[me as u64; 1024]).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    let resident = shmem.fpga_resident_bytes();
    let total = u64::from(boards) * shmem.fpga_heap_bytes();
    println!(
        "PE {me}: {boards} boards, {} MiB of board memory, {:.2} MiB resident",
        total >> 20,
        resident as f64 / (1 << 20) as f64
    );
    if total < (1 << 30) || resident > 25 << 20 {
        return Err(format!("PE {me}: {resident} bytes resident of {total}"));
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.finalize().map_err(e2s)
}

/// Reports where this job's tuning came from (per `SHMEMPLUS_TUNE`) and the chosen
/// packets; PE 0 also re-tunes on demand and checks the result is the same kind.
fn tune_report() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    if shmem.config().tune == shmemplus::TuneMode::Off {
        if shmem.tuning().is_some() {
            return Err("SHMEMPLUS_TUNE=off, yet a tuning is in force".into());
        }
        println!("PE {me}: tuning off");
        return shmem.finalize().map_err(e2s);
    }
    let t = shmem.tuning().ok_or("no tuning in force")?;
    let source = shmem.retune(shmemplus::TuneMode::Auto).map_err(e2s)?;
    let t2 = shmem.tuning().ok_or("no tuning after retune")?;
    if t2.packets != t.packets && source == shmemplus::TuneSource::Cached {
        return Err("a cached retune changed the packets".into());
    }
    println!(
        "PE {me}: tuned in {:.3} s; packets {:?}; retune source {source:?}",
        t.seconds, t.packets
    );
    shmem.finalize().map_err(e2s)
}

// ---------------------------------------------------------------------------------
// OpenSHMEM 1.5 breadth: atomics, point-to-point waits and signals, locks, teams,
// collectives and non-blocking RMA (run by `tests/tests/breadth.rs`).

/// Fails the current mode with a message when `got != want`.
macro_rules! ensure_eq {
    ($got:expr, $want:expr, $($what:tt)+) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: got {:?}, want {:?}", format!($($what)+), got, want));
        }
    }};
}

/// Runs a mode on a fresh handle and finalizes it. A failure is reported and ends this
/// PE at once: dropping the handle would finalize implicitly, which waits in a barrier
/// for PEs that may be blocked on this one, so the message would never appear.
fn on_handle(mode: impl FnOnce(&Shmem) -> Result<(), String>) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    if let Err(e) = mode(&shmem) {
        eprintln!("test-pe failed: {e}");
        std::process::exit(1);
    }
    shmem.finalize().map_err(e2s)
}

/// `cpu` (default) or `fpga` (board 0) from a mode argument.
fn place_arg(a: Option<&String>) -> Result<Place, String> {
    match a.map(String::as_str) {
        None | Some("cpu") => Ok(Place::Cpu),
        Some("fpga") => Ok(Place::Fpga(0)),
        Some(other) => Err(format!("unknown place '{other}' (cpu or fpga)")),
    }
}

fn need_boards(shmem: &Shmem, place: Place) -> Result<(), String> {
    match place {
        Place::Fpga(b) if b >= shmem.fpgas() => Err(format!(
            "this mode needs board {b} ({} boards per node): run with --fpgas",
            shmem.fpgas()
        )),
        _ => Ok(()),
    }
}

// ------------------------------------------------------------------- atomics

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
fn atomics(shmem: &Shmem, place: Place, m: usize, steps: usize, seed: u64) -> Result<(), String> {
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

// ------------------------------------------------------------------- signals

/// Rounds of put_signal around the ring: PE i sends a `bytes` payload (different in
/// every round) to PE i+1 with a signal, alternating set, add and the nbi form; the
/// receiver waits for the signal, then the payload must be entirely there. The
/// receiver acknowledges so the sender never overwrites a payload still being read.
fn signals(
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

// ------------------------------------------------------------------- waits

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

fn waits(shmem: &Shmem, place: Place, seed: u64) -> Result<(), String> {
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

// ------------------------------------------------------------------- collectives

/// Element types of the collective tests, with an independent serial reference.
trait Elem: shmemplus::Reducible + PartialEq + std::fmt::Debug {
    /// A value from a hash (exactly representable for floats).
    fn gen(h: u64) -> Self;
    /// What a destination holds where no collective should write.
    fn sentinel() -> Self;
    /// Whether the type has reduction `op`.
    fn has(op: ReduceOp) -> bool;
    /// `a op b`, the reference.
    fn fold(op: ReduceOp, a: Self, b: Self) -> Self;
}

impl Elem for i32 {
    fn gen(h: u64) -> i32 {
        if h % 16 == 0 {
            (h >> 8) as i32
        } else {
            ((h >> 8) % 2001) as i32 - 1000
        }
    }
    fn sentinel() -> i32 {
        0x5a5a_5a5a
    }
    fn has(_: ReduceOp) -> bool {
        true
    }
    fn fold(op: ReduceOp, a: i32, b: i32) -> i32 {
        match op {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Prod => a.wrapping_mul(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
            ReduceOp::And => a & b,
            ReduceOp::Or => a | b,
            ReduceOp::Xor => a ^ b,
        }
    }
}

impl Elem for u64 {
    fn gen(h: u64) -> u64 {
        if h % 16 == 0 {
            h
        } else {
            (h >> 8) % 1000
        }
    }
    fn sentinel() -> u64 {
        0xdead_beef_dead_beef
    }
    fn has(_: ReduceOp) -> bool {
        true
    }
    fn fold(op: ReduceOp, a: u64, b: u64) -> u64 {
        match op {
            ReduceOp::Sum => a.wrapping_add(b),
            ReduceOp::Prod => a.wrapping_mul(b),
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
            ReduceOp::And => a & b,
            ReduceOp::Or => a | b,
            ReduceOp::Xor => a ^ b,
        }
    }
}

impl Elem for f64 {
    /// Quarters in [-8, 8): sums and products of up to 5 of them are exact.
    fn gen(h: u64) -> f64 {
        ((h >> 8) % 64) as f64 * 0.25 - 8.0
    }
    fn sentinel() -> f64 {
        -12345.5
    }
    fn has(op: ReduceOp) -> bool {
        matches!(
            op,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Min | ReduceOp::Max
        )
    }
    fn fold(op: ReduceOp, a: f64, b: f64) -> f64 {
        match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
            _ => unreachable!("bitwise reduction on f64"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CollKind {
    Broadcast,
    Fcollect,
    Collect,
    Alltoall,
    Reduce,
}

const COLL_KINDS: [CollKind; 5] = [
    CollKind::Broadcast,
    CollKind::Fcollect,
    CollKind::Collect,
    CollKind::Alltoall,
    CollKind::Reduce,
];

/// Elements of the large broadcasts and reductions (several 256 KiB broadcast chunks).
const BIG_ELEMS: usize = 70_000;
/// Elements past the end of each result that must keep their old contents.
const TAIL: usize = 8;

/// The random choices of one round, the same on every PE (one seeded generator).
#[derive(Debug, Clone, Copy)]
struct CollRound {
    k: u64,
    kind: CollKind,
    team: usize,
    ty: usize,
    size_pick: u32,
    size_rand: usize,
    root_raw: u32,
    src_place: usize,
    dst_place: usize,
    in_place: bool,
    op_pick: usize,
}

/// Source and destination objects of one element type on every place of the test.
struct Bufs<T: Elem> {
    src: Vec<SymVec<T>>,
    dst: Vec<SymVec<T>>,
}

impl<T: Elem> Bufs<T> {
    fn new(shmem: &Shmem, places: &[Place], cap: usize) -> Result<Bufs<T>, String> {
        let mut b = Bufs {
            src: Vec::new(),
            dst: Vec::new(),
        };
        for &p in places {
            b.src.push(shmem.alloc::<T>(cap, p).map_err(e2s)?);
            b.dst.push(shmem.alloc::<T>(cap, p).map_err(e2s)?);
        }
        Ok(b)
    }
}

/// One collective of round `r` on `team` with element type `T`, checked element by
/// element (and `TAIL` elements past the result) against a serial reference computed
/// from every member's data, which any PE can regenerate.
fn coll_round<T: Elem>(
    shmem: &Shmem,
    (team_name, team): (&str, &Team),
    b: &Bufs<T>,
    r: &CollRound,
    seed: u64,
    max_e: usize,
) -> Result<usize, String> {
    let m = team.n_pes() as usize;
    let me_t = team.my_pe() as usize;
    let my_w = shmem.my_pe();
    let world: Vec<u32> = (0..m as u32)
        .map(|j| {
            team.world_pe(j)
                .ok_or(format!("world_pe({j}) of a team of {m}"))
        })
        .collect::<Result<_, _>>()?;
    ensure_eq!(world[me_t], my_w, "team {team_name}: world_pe(my_pe)");
    let val = |w: u32, i: usize| T::gen(hash(&[seed, r.k, u64::from(w), i as u64]));
    let big = matches!(r.kind, CollKind::Broadcast | CollKind::Reduce);
    let nelems = match r.size_pick {
        0 => 0,
        1 => 1,
        2 => m.saturating_sub(1),
        3 => m + 1,
        4 => 2 * m + 1,
        5 if big => BIG_ELEMS,
        _ => 2 + r.size_rand % (max_e - 1),
    };
    let count_of = |w: u32| -> usize {
        if r.size_pick == 0 {
            0
        } else {
            (hash(&[seed, r.k, u64::from(w), 77]) % (max_e as u64 + 1)) as usize
        }
    };
    let counts: Vec<usize> = world.iter().map(|&w| count_of(w)).collect();
    let in_place = r.in_place && r.kind == CollKind::Reduce;
    let src = &b.src[r.src_place];
    let dst = if in_place { src } else { &b.dst[r.dst_place] };
    let cap = src.len();
    let root = r.root_raw % m as u32;
    let ops: Vec<ReduceOp> = ReduceOp::ALL.into_iter().filter(|&o| T::has(o)).collect();
    let op = ops[r.op_pick % ops.len()];
    let (src_fill, out) = match r.kind {
        CollKind::Broadcast | CollKind::Reduce => (nelems, nelems),
        CollKind::Fcollect => (nelems, nelems * m),
        CollKind::Collect => (counts[me_t], counts.iter().sum()),
        CollKind::Alltoall => (nelems * m, nelems * m),
    };
    let src_vals: Vec<T> = (0..(src_fill + TAIL).min(cap))
        .map(|i| val(my_w, i))
        .collect();
    shmem.local_write(src, 0, &src_vals).map_err(e2s)?;
    let dst_n = (out + TAIL).min(cap);
    if !in_place {
        shmem
            .local_write(dst, 0, &vec![T::sentinel(); dst_n])
            .map_err(e2s)?;
    }
    let what = || {
        format!(
            "PE {my_w} round {} {:?} of {} on team {team_name} (team PE {me_t} of {m}): nelems {nelems}, root {root}, {} -> {}{}{}",
            r.k,
            r.kind,
            std::any::type_name::<T>(),
            src.place(),
            dst.place(),
            if in_place { " in place" } else { "" },
            if r.kind == CollKind::Reduce { format!(", {op:?}") } else { String::new() },
        )
    };
    match r.kind {
        CollKind::Broadcast => shmem.broadcast(team, dst, src, nelems, root),
        CollKind::Fcollect => shmem.fcollect(team, dst, src, nelems),
        CollKind::Collect => shmem
            .collect(team, dst, src, counts[me_t])
            .and_then(|total| {
                if total == out {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument(format!(
                        "collect returned {total} elements, want {out}"
                    )))
                }
            }),
        CollKind::Alltoall => shmem.alltoall(team, dst, src, nelems),
        CollKind::Reduce => shmem.reduce(team, dst, src, nelems, op),
    }
    .map_err(|e| format!("{}: {e}", what()))?;
    let mut want: Vec<T> = if in_place {
        src_vals[..dst_n].to_vec()
    } else {
        vec![T::sentinel(); dst_n]
    };
    match r.kind {
        CollKind::Broadcast => {
            for (i, w) in want[..nelems].iter_mut().enumerate() {
                *w = val(world[root as usize], i);
            }
        }
        CollKind::Fcollect => {
            for (j, &w) in world.iter().enumerate() {
                for i in 0..nelems {
                    want[j * nelems + i] = val(w, i);
                }
            }
        }
        CollKind::Collect => {
            let mut at = 0;
            for (j, &w) in world.iter().enumerate() {
                for i in 0..counts[j] {
                    want[at + i] = val(w, i);
                }
                at += counts[j];
            }
        }
        CollKind::Alltoall => {
            for (j, &w) in world.iter().enumerate() {
                for i in 0..nelems {
                    want[j * nelems + i] = val(w, me_t * nelems + i);
                }
            }
        }
        CollKind::Reduce => {
            for (i, x) in want[..nelems].iter_mut().enumerate() {
                *x = world[1..]
                    .iter()
                    .fold(val(world[0], i), |acc, &w| T::fold(op, acc, val(w, i)));
            }
        }
    }
    let mut got = vec![T::zeroed(); dst_n];
    shmem.local_read(dst, 0, &mut got).map_err(e2s)?;
    if let Some(i) = (0..dst_n).find(|&i| got[i] != want[i]) {
        return Err(format!(
            "{}: element {i} of {dst_n} checked is {:?}, want {:?}",
            what(),
            got[i],
            want[i]
        ));
    }
    Ok(nelems)
}

/// The teams of the collective tests: world, shared, the even PEs and the odd PEs
/// (strided, non-power-of-two sizes), rows and columns of a 2-wide grid, and a team
/// split from a column (all but its first PE). `None` where this PE is no member.
fn test_teams(shmem: &Shmem) -> Result<Vec<(&'static str, Option<Team>)>, String> {
    let n = shmem.n_pes();
    let world = shmem.team_world();
    let even = shmem
        .team_split_strided(&world, 0, 2, n.div_ceil(2))
        .map_err(e2s)?;
    let odd = if n >= 2 {
        shmem.team_split_strided(&world, 1, 2, n / 2).map_err(e2s)?
    } else {
        None
    };
    let (row, col) = shmem.team_split_2d(&world, 2).map_err(e2s)?;
    let nested = if col.n_pes() >= 2 {
        shmem
            .team_split_strided(&col, 1, 1, col.n_pes() - 1)
            .map_err(e2s)?
    } else {
        None
    };
    Ok(vec![
        ("world", Some(world)),
        ("shared", Some(shmem.team_shared())),
        ("even", even),
        ("odd", odd),
        ("row", Some(row)),
        ("column", Some(col)),
        ("column-tail", nested),
    ])
}

/// `rounds` random collectives (kind, team, element type, size, root, places, in
/// place or not, reduction) against a serial reference. `mixed` puts sources and
/// destinations on the CPU or on board 0 at random.
fn collectives(
    shmem: &Shmem,
    seed: u64,
    rounds: usize,
    max_e: usize,
    mixed: bool,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let places = if mixed {
        need_boards(shmem, Place::Fpga(0))?;
        vec![Place::Cpu, Place::Fpga(0)]
    } else {
        vec![Place::Cpu]
    };
    let max_e = max_e.max(2);
    let cap = (max_e * n as usize).max(BIG_ELEMS) + TAIL;
    let b32 = Bufs::<i32>::new(shmem, &places, cap)?;
    let b64 = Bufs::<u64>::new(shmem, &places, cap)?;
    let bf = Bufs::<f64>::new(shmem, &places, cap)?;
    let teams = test_teams(shmem)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut ran, mut big) = ([0usize; 5], 0);
    let start = std::time::Instant::now();
    for k in 0..rounds as u64 {
        let r = CollRound {
            k,
            kind: COLL_KINDS[rng.random_range(0..COLL_KINDS.len())],
            team: rng.random_range(0..teams.len()),
            ty: rng.random_range(0..3),
            size_pick: rng.random_range(0..10),
            size_rand: rng.random_range(0..1 << 20),
            root_raw: rng.random(),
            src_place: rng.random_range(0..places.len()),
            dst_place: rng.random_range(0..places.len()),
            in_place: rng.random_bool(0.4),
            op_pick: rng.random_range(0..ReduceOp::ALL.len()),
        };
        let (name, Some(team)) = (teams[r.team].0, &teams[r.team].1) else {
            continue;
        };
        let nelems = match r.ty {
            0 => coll_round(shmem, (name, team), &b32, &r, seed, max_e),
            1 => coll_round(shmem, (name, team), &b64, &r, seed, max_e),
            _ => coll_round(shmem, (name, team), &bf, &r, seed, max_e),
        }?;
        ran[r.kind as usize] += 1;
        big += usize::from(nelems == BIG_ELEMS);
    }
    shmem.barrier_all().map_err(e2s)?;
    println!(
        "PE {me}: {rounds} rounds in {:.3} s; broadcast/fcollect/collect/alltoall/reduce ran {ran:?} ({big} of {BIG_ELEMS} elements)",
        start.elapsed().as_secs_f64()
    );
    println!("PE {me}: collectives ok");
    Ok(())
}

// ------------------------------------------------------------------- teams

/// Team geometry and PE translation of world, shared, strided, nested and 2-D teams;
/// `cycles` create/use/destroy cycles (more than the team slots); destroyed handles
/// refused; slot exhaustion and recovery.
fn teams(shmem: &Shmem, cycles: usize) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let ppn = shmem.topology().pes_per_node;
    let world = shmem.team_world();
    ensure_eq!(
        (world.my_pe(), world.n_pes(), world.world_stride()),
        (me, n, (0, 1, n)),
        "world geometry"
    );
    for i in 0..n {
        ensure_eq!(world.world_pe(i), Some(i), "world.world_pe({i})");
        ensure_eq!(world.translate_pe(i, &world), Some(i), "world -> world {i}");
    }
    ensure_eq!(world.world_pe(n), None, "world.world_pe(n)");
    ensure_eq!(world.translate_pe(n, &world), None, "world -> world n");
    let shared = shmem.team_shared();
    let node_start = me / ppn * ppn;
    ensure_eq!(
        (shared.my_pe(), shared.world_stride()),
        (me - node_start, (node_start, 1, ppn.min(n - node_start))),
        "shared team with {ppn} PEs per node"
    );
    for w in 0..n {
        let want = (w / ppn == me / ppn).then(|| w - node_start);
        ensure_eq!(world.translate_pe(w, &shared), want, "world {w} -> shared");
    }
    // Strided: the even PEs (3 of 5 with stride 2), and a team split from it.
    let n_even = n.div_ceil(2);
    let even = shmem
        .team_split_strided(&world, 0, 2, n_even)
        .map_err(e2s)?;
    ensure_eq!(even.is_some(), me % 2 == 0, "PE {me} in the even team");
    if let Some(t) = &even {
        ensure_eq!(
            (t.my_pe(), t.n_pes(), t.world_stride()),
            (me / 2, n_even, (0, 2, n_even)),
            "even team geometry"
        );
        for i in 0..n_even {
            ensure_eq!(t.world_pe(i), Some(2 * i), "even.world_pe({i})");
            ensure_eq!(t.translate_pe(i, &world), Some(2 * i), "even {i} -> world");
            let in_shared = (2 * i / ppn == me / ppn).then(|| 2 * i - node_start);
            ensure_eq!(t.translate_pe(i, &shared), in_shared, "even {i} -> shared");
        }
        ensure_eq!(t.world_pe(n_even), None, "even.world_pe(size)");
        for w in 0..n {
            ensure_eq!(
                world.translate_pe(w, t),
                (w % 2 == 0).then_some(w / 2),
                "world {w} -> even"
            );
        }
        if n_even >= 2 {
            let tail = shmem.team_split_strided(t, 1, 1, n_even - 1).map_err(e2s)?;
            ensure_eq!(tail.is_some(), me != 0, "PE {me} in the even team's tail");
            if let Some(tt) = tail {
                ensure_eq!(
                    (tt.my_pe(), tt.world_stride()),
                    (me / 2 - 1, (2, 2, n_even - 1)),
                    "tail of the even team"
                );
                for j in 0..n_even - 1 {
                    ensure_eq!(tt.translate_pe(j, t), Some(j + 1), "tail {j} -> even");
                }
                ensure_eq!(t.translate_pe(0, &tt), None, "even 0 -> tail");
                shmem.team_sync(&tt).map_err(e2s)?;
                shmem.team_destroy(tt).map_err(e2s)?;
            }
        }
    }
    // 2-D grids of 2 and 3 columns: rows, columns, and their crossing.
    let v = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    for x in [2u32, 3] {
        let (row, col) = shmem.team_split_2d(&world, x).map_err(e2s)?;
        let xe = x.min(n);
        let row_start = me / xe * xe;
        ensure_eq!(
            (row.my_pe(), row.world_stride()),
            (me % xe, (row_start, 1, xe.min(n - row_start))),
            "row of a {x}-wide grid"
        );
        ensure_eq!(
            (col.my_pe(), col.world_stride()),
            (me / xe, (me % xe, xe, (n - me % xe).div_ceil(xe))),
            "column of a {x}-wide grid"
        );
        for j in 0..row.n_pes() {
            let want = (j == row.my_pe()).then_some(col.my_pe());
            ensure_eq!(row.translate_pe(j, &col), want, "row {j} -> column");
        }
        // Both work: a sum of (world PE + 1) over each.
        for (name, t) in [("row", &row), ("column", &col)] {
            shmem
                .local_write(&v, 0, &[u64::from(me) + 1])
                .map_err(e2s)?;
            shmem.reduce(t, &v, &v, 1, ReduceOp::Sum).map_err(e2s)?;
            let want: u64 = (0..t.n_pes())
                .map(|i| u64::from(t.world_pe(i).unwrap_or(0)) + 1)
                .sum();
            ensure_eq!(
                shmem.local_read_one(&v, 0).map_err(e2s)?,
                want,
                "sum over the {name} of a {x}-wide grid"
            );
            shmem.barrier(t).map_err(e2s)?;
        }
        shmem.team_destroy(row).map_err(e2s)?;
        shmem.team_destroy(col).map_err(e2s)?;
    }
    if let Some(t) = &even {
        // A grid over a strided parent: rows and columns in world numbers (the
        // xrange is clamped to the parent's size).
        let (row, col) = shmem.team_split_2d(t, 2).map_err(e2s)?;
        let (m, i) = (t.n_pes(), t.my_pe());
        let xe = 2.min(m);
        let row_start = i / xe * xe;
        ensure_eq!(
            (row.my_pe(), row.world_stride()),
            (i % xe, (2 * row_start, 2, xe.min(m - row_start))),
            "row of a grid over the even team"
        );
        ensure_eq!(
            (col.my_pe(), col.world_stride()),
            (i / xe, (2 * (i % xe), 2 * xe, (m - i % xe).div_ceil(xe))),
            "column of a grid over the even team"
        );
        shmem.team_destroy(row).map_err(e2s)?;
        shmem.team_destroy(col).map_err(e2s)?;
    }
    // An xrange wider than the parent: one row (the parent), columns of one PE.
    let (row, col) = shmem.team_split_2d(&world, n + 3).map_err(e2s)?;
    ensure_eq!(
        (row.world_stride(), col.world_stride(), col.my_pe()),
        ((0, 1, n), (me, n, 1), 0),
        "grid with xrange n + 3"
    );
    shmem.team_destroy(row).map_err(e2s)?;
    shmem.team_destroy(col).map_err(e2s)?;
    if let Some(t) = even {
        shmem.team_destroy(t).map_err(e2s)?;
    }
    // Create, use, destroy: more cycles than slots, so slots are reused.
    let src = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let dst = shmem.alloc::<u64>(2, Place::Cpu).map_err(e2s)?;
    for c in 0..cycles as u32 {
        let (start, stride) = (c % n, 1 + (c / n) % 2);
        let size = (n - 1 - start) / stride + 1;
        let t = shmem
            .team_split_strided(&world, start, stride, size)
            .map_err(|e| format!("cycle {c}: split: {e}"))?;
        let member = me >= start && (me - start) % stride == 0;
        ensure_eq!(t.is_some(), member, "cycle {c}: PE {me} a member");
        let Some(t) = t else { continue };
        ensure_eq!(
            (t.my_pe(), t.n_pes()),
            ((me - start) / stride, size),
            "cycle {c}: team geometry"
        );
        shmem
            .local_write(&src, 0, &[u64::from(me) * 1000 + u64::from(c)])
            .map_err(e2s)?;
        shmem
            .reduce(&t, &dst, &src, 1, ReduceOp::Sum)
            .map_err(|e| format!("cycle {c}: reduce: {e}"))?;
        let want: u64 = (0..size)
            .map(|i| u64::from(start + i * stride) * 1000 + u64::from(c))
            .sum();
        ensure_eq!(
            shmem.local_read_one(&dst, 0).map_err(e2s)?,
            want,
            "cycle {c}: sum over the team"
        );
        let root = c % size;
        shmem
            .broadcast(&t, &dst, &src, 1, root)
            .map_err(|e| format!("cycle {c}: broadcast: {e}"))?;
        ensure_eq!(
            shmem.local_read_one(&dst, 0).map_err(e2s)?,
            u64::from(start + root * stride) * 1000 + u64::from(c),
            "cycle {c}: broadcast from team PE {root}"
        );
        // barrier(team) completes puts among the members: each puts into the next.
        let next = t.world_pe((t.my_pe() + 1) % size).ok_or("world_pe")?;
        let token = 7_000_000 + u64::from(c) * 100 + u64::from(me);
        shmem.p(&dst, 1, token, next).map_err(e2s)?;
        shmem.barrier(&t).map_err(e2s)?;
        let left = t
            .world_pe((t.my_pe() + size - 1) % size)
            .ok_or("world_pe")?;
        ensure_eq!(
            shmem.local_read_one(&dst, 1).map_err(e2s)?,
            7_000_000 + u64::from(c) * 100 + u64::from(left),
            "cycle {c}: put from team neighbour PE {left} after barrier(team)"
        );
        shmem.barrier(&t).map_err(e2s)?;
        let kept = t.clone();
        shmem
            .team_destroy(t)
            .map_err(|e| format!("cycle {c}: destroy: {e}"))?;
        let refused = |e: &Error| matches!(e, Error::InvalidTeam);
        expect_err("sync of a destroyed team", shmem.team_sync(&kept), refused)?;
        expect_err("barrier of a destroyed team", shmem.barrier(&kept), refused)?;
        expect_err(
            "reduce on a destroyed team",
            shmem.reduce(&kept, &dst, &src, 1, ReduceOp::Sum),
            refused,
        )?;
        expect_err(
            "broadcast on a destroyed team",
            shmem.broadcast(&kept, &dst, &src, 1, 0),
            refused,
        )?;
        expect_err(
            "split of a destroyed team",
            shmem.team_split_strided(&kept, 0, 1, 1),
            refused,
        )?;
        expect_err("second destroy", shmem.team_destroy(kept), refused)?;
    }
    // Exhaustion: world and shared hold 2 of the 32 slots; the 31st team is refused on
    // every PE, and destroying gives the slots back.
    let mut held = Vec::new();
    let err = loop {
        match shmem.team_split_strided(&world, 0, 1, n) {
            Ok(Some(t)) => held.push(t),
            Ok(None) => return Err("PE missing from a full split".into()),
            Err(e) => break e,
        }
        if held.len() > 64 {
            return Err("team slots never ran out".into());
        }
    };
    if !matches!(err, Error::TeamsExhausted { max: 32 }) {
        return Err(format!("after {} teams: wrong error {err:?}", held.len()));
    }
    ensure_eq!(held.len(), 30, "teams created before exhaustion");
    shmem.team_sync(&held[29]).map_err(e2s)?;
    for t in held {
        shmem.team_destroy(t).map_err(e2s)?;
    }
    let again = shmem
        .team_split_strided(&world, 0, 1, n)
        .map_err(e2s)?
        .ok_or("PE missing from a full split")?;
    shmem.barrier(&again).map_err(e2s)?;
    shmem.team_destroy(again).map_err(e2s)?;
    let not_ours = |e: &Error| matches!(e, Error::InvalidArgument(_));
    expect_err(
        "destroy the world team",
        shmem.team_destroy(world),
        not_ours,
    )?;
    expect_err(
        "destroy the shared team",
        shmem.team_destroy(shared),
        not_ours,
    )?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: teams ok ({cycles} create/destroy cycles)");
    Ok(())
}

// ------------------------------------------------------------------- locks

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
fn locks(shmem: &Shmem, k: u64, place: Place) -> Result<(), String> {
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

// ------------------------------------------------------------------- nbi

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
/// Reads 1 MiB from each of this PE's boards, once with blocking `get_into` and once
/// with `get_nbi` + `quiet`, on an emulated profile: the boards' DMA channels are
/// separate resources, so the non-blocking reads overlap in modeled time and take a
/// fraction of the blocking ones (a ratio of the fastest of three runs each, not a
/// wall-clock bound).
fn nbi_overlap(shmem: &Shmem) -> Result<(), String> {
    const BYTES: usize = 1 << 20;
    let me = shmem.my_pe();
    let boards = shmem.fpgas().min(4);
    if boards < 2 {
        return Err(format!("PE {me}: nbi-overlap needs at least 2 boards"));
    }
    let srcs = (0..boards)
        .map(|b| shmem.alloc::<u8>(BYTES, Place::Fpga(b)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    let dst = shmem
        .alloc::<u8>(BYTES * boards as usize, Place::Cpu)
        .map_err(e2s)?;
    for (b, src) in srcs.iter().enumerate() {
        shmem
            .local_write(src, 0, &vec![b as u8 + 1; BYTES])
            .map_err(e2s)?;
    }
    let timed = |nbi: bool| -> Result<std::time::Duration, String> {
        let start = std::time::Instant::now();
        for (b, src) in srcs.iter().enumerate() {
            if nbi {
                shmem.get_nbi(&dst, b * BYTES, src, 0, BYTES, me)
            } else {
                shmem.get_into(&dst, b * BYTES, src, 0, BYTES, me)
            }
            .map_err(e2s)?;
        }
        shmem.quiet().map_err(e2s)?;
        Ok(start.elapsed())
    };
    // The fastest of three runs each: a loaded machine only adds time, so comparing
    // the fastest runs compares the transfers themselves, not the scheduler.
    let mut blocking = timed(false)?;
    let mut overlapped = timed(true)?;
    for _ in 0..2 {
        blocking = blocking.min(timed(false)?);
        overlapped = overlapped.min(timed(true)?);
    }
    let got = shmem.local_to_vec(&dst).map_err(e2s)?;
    if let Some(i) = (0..got.len()).find(|&i| got[i] != (i / BYTES) as u8 + 1) {
        return Err(format!(
            "PE {me}: byte {i} of the board reads is {}",
            got[i]
        ));
    }
    let ratio = overlapped.as_secs_f64() / blocking.as_secs_f64();
    if ratio > 0.75 {
        return Err(format!(
            "PE {me}: {boards} non-blocking board reads took {overlapped:?} against {blocking:?} blocking (ratio {ratio:.2}): they did not overlap"
        ));
    }
    println!("PE {me}: nbi-overlap ok ({boards} board reads of 1 MiB: blocking {blocking:?}, nbi {overlapped:?})");
    Ok(())
}

fn nbi(shmem: &Shmem, seed: u64, count: usize) -> Result<(), String> {
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

// ------------------------------------------------------------------- emulation

/// On an emulated profile with several nodes: a barrier of the world (which spans
/// nodes) never takes less than one modeled network message.
fn barrier_latency(shmem: &Shmem) -> Result<(), String> {
    use shmemplus::RmaOp;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let topo = shmem.topology();
    let other = (me + topo.pes_per_node) % n;
    if topo.node_of(other) == topo.node_of(me) {
        return Err("barrier-latency needs at least 2 nodes".into());
    }
    let model = shmem
        .modeled_seconds(RmaOp::Put, other, 8)
        .map_err(e2s)?
        .ok_or("the profile models no network")?;
    if model <= 0.0 {
        return Err(format!("modeled 8-byte message across nodes: {model} s"));
    }
    let mut times = Vec::new();
    for _ in 0..20 {
        let t = std::time::Instant::now();
        shmem.barrier_all().map_err(e2s)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "PE {me}: fastest of 20 world barriers {:.2} us, modeled message {:.2} us",
        fastest * 1e6,
        model * 1e6
    );
    if fastest < model * 0.999 {
        return Err(format!(
            "PE {me}: a barrier across nodes took {fastest:.9} s, less than one modeled message ({model:.9} s)"
        ));
    }
    // The node's own team needs no network and still works.
    shmem.barrier(&shmem.team_shared()).map_err(e2s)?;
    println!("PE {me}: barrier-latency ok");
    Ok(())
}

// ------------------------------------------------------------------- bad input

/// Each bad input of the breadth API gets its typed error, moves nothing, and leaves
/// the world team usable.
fn breadth_errors(shmem: &Shmem) -> Result<(), String> {
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

// ------------------------------------------------------------------- teams of one

/// Collectives on a team of one PE (this PE's row of a 1-wide grid), `rounds` times
/// each: when the call returns, this PE's own block must be in `dest` (OpenSHMEM: "on
/// return, dest contains ..."). Counts the calls that returned before it was.
fn solo(shmem: &Shmem, rounds: u64) -> Result<(), String> {
    let me = shmem.my_pe();
    let (row, col) = shmem.team_split_2d(&shmem.team_world(), 1).map_err(e2s)?;
    ensure_eq!(row.n_pes(), 1, "PE {me}: row of a 1-wide grid");
    let src = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let dst = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let names = ["broadcast", "fcollect", "collect", "alltoall", "reduce"];
    let mut early = [0u64; 5];
    let mut first = None;
    for r in 0..rounds {
        let v: Vec<u64> = (0..4).map(|i| r * 4 + i + 1).collect();
        shmem.local_write(&src, 0, &v).map_err(e2s)?;
        for (k, name) in names.iter().enumerate() {
            shmem.local_write(&dst, 0, &[0; 4]).map_err(e2s)?;
            match k {
                0 => shmem.broadcast(&row, &dst, &src, 4, 0),
                1 => shmem.fcollect(&row, &dst, &src, 4),
                2 => shmem.collect(&row, &dst, &src, 4).map(drop),
                3 => shmem.alltoall(&row, &dst, &src, 4),
                _ => shmem.reduce(&row, &dst, &src, 4, ReduceOp::Sum),
            }
            .map_err(|e| format!("{name}: {e}"))?;
            let got = shmem.local_to_vec(&dst).map_err(e2s)?;
            if got != v {
                early[k] += 1;
                first.get_or_insert(format!(
                    "round {r}: {name} returned with dest {got:?}, want {v:?}"
                ));
            }
        }
    }
    shmem.team_destroy(row).map_err(e2s)?;
    shmem.team_destroy(col).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if let Some(first) = first {
        return Err(format!(
            "PE {me}: on a team of one PE, calls returned before dest held this PE's block ({names:?}: {early:?} of {rounds} each); first: {first}"
        ));
    }
    println!("PE {me}: solo ok");
    Ok(())
}
