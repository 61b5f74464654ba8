//! `shmemplus-test-pe`: the PE program of the integration tests. Each mode is one
//! scenario; a PE prints what it checked and exits 0 only if every check held, so the
//! tests can assert on the job's outcome and on each PE's output.

use rand::{rngs::StdRng, Rng, SeedableRng};
use shmemplus::{Error, Place};
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
        // median of three.
        let time = |f: &mut dyn FnMut() -> shmemplus::Result<()>| -> Result<f64, String> {
            f().map_err(e2s)?;
            let mut t = Vec::new();
            for _ in 0..3 {
                let start = std::time::Instant::now();
                f().map_err(e2s)?;
                t.push(start.elapsed().as_secs_f64());
            }
            t.sort_by(f64::total_cmp);
            Ok(t[1])
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
