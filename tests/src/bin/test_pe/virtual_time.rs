//! Scenarios of the virtual clock (`SHMEMPLUS_CLOCK=virtual`), run by
//! `tests/virtual_time.rs`: `vt-model` (a put + quiet, a blocking get and board
//! transfers take exactly their modeled time), `vt-causality` (a PE that waited for
//! data is never earlier than its delivery: put + flag, put_signal, atomic add, a lock
//! handed over), `vt-barrier` (a barrier leaves every member at one instant, printed
//! for the job test to compare), `vt-pattern` (a fixed communication pattern whose
//! final clocks and data checksum are printed, for determinism across runs and
//! equality of data under both clocks) and `vt-cpu` (computation advances the clock
//! by its thread CPU time over the profile's CPU speed). A PE prints
//! "PE <pe>: <mode> ok" only if every check held. They check virtual instants only,
//! never wall-clock time.

use shmemplus::config::ClockKind;
use shmemplus::{Cmp, Place, RmaOp, Shmem, SignalOp};
use shmemplus_tests::pe::e2s;
use std::time::Duration;

/// Fails unless the job runs on the virtual clock (every mode but `vt-pattern` needs it).
fn need_virtual(shmem: &Shmem) -> Result<(), String> {
    match shmem.clock() {
        ClockKind::Virtual => Ok(()),
        other => Err(format!(
            "this mode needs SHMEMPLUS_CLOCK=virtual, not {}",
            other.name()
        )),
    }
}

/// Nanoseconds of a duration (virtual instants fit a u64 for 584 years).
fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The modeled nanoseconds of a transfer, as the library predicts it (an emulated
/// profile is required).
fn modeled_ns(m: shmemplus::Result<Option<f64>>, what: &str) -> Result<u64, String> {
    let secs = m
        .map_err(e2s)?
        .ok_or_else(|| format!("{what}: the profile models no cost (use mu or novo-g)"))?;
    Ok((secs * 1e9).round() as u64)
}

/// The other PE of a two-PE job on two nodes.
fn partner(shmem: &Shmem) -> Result<u32, String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let topo = shmem.topology();
    if n != 2 || topo.node_of(0) == topo.node_of(1) {
        return Err(format!("this mode needs 2 PEs on 2 nodes, not {n} PEs"));
    }
    Ok(1 - me)
}

/// Checks that `took` ns is within 1% of `want` ns (and that `want` is a real cost).
fn within_1pct(took: u64, want: u64, what: &str) -> Result<(), String> {
    println!("{what}: took {took} ns, modeled {want} ns");
    if want == 0 || took.abs_diff(want) * 100 > want {
        return Err(format!(
            "{what}: virtual time {took} ns is not within 1% of the model's {want} ns"
        ));
    }
    Ok(())
}

/// `vt-model`: each PE in turn (the other waits in a barrier) puts (followed by
/// `quiet`) and gets every size of `sizes` between its CPU and the other PE's, and,
/// with boards, from a private buffer to the other PE's board and between the two
/// PEs' boards; the virtual time of each is within 1% of `modeled_route_seconds`.
/// Gets check the bytes they fetched. No sizes: 8 B, 1000 B, 64 KiB, 1 MiB, 3 MiB + 5 B.
pub(crate) fn model(shmem: &Shmem, sizes: &[usize]) -> Result<(), String> {
    const DEFAULT_SIZES: [usize; 5] = [8, 1000, 64 << 10, 1 << 20, (3 << 20) + 5];
    let sizes = if sizes.is_empty() {
        &DEFAULT_SIZES[..]
    } else {
        sizes
    };
    need_virtual(shmem)?;
    shmem.count_cpu_time(false);
    let me = shmem.my_pe();
    let other = partner(shmem)?;
    let max = sizes.iter().copied().max().unwrap_or(8);
    let cpu = shmem.alloc::<u8>(max, Place::Cpu).map_err(e2s)?;
    let boards = shmem.fpgas() > 0;
    let (bsrc, bdst) = if boards {
        let board = || shmem.alloc::<u8>(max, Place::Fpga(0)).map_err(e2s);
        (Some(board()?), Some(board()?))
    } else {
        (None, None)
    };
    let pattern = |pe: u32, i: usize| (i as u8).wrapping_mul(31).wrapping_add(pe as u8);
    let mine: Vec<u8> = (0..max).map(|i| pattern(me, i)).collect();
    shmem.local_write(&cpu, 0, &mine).map_err(e2s)?;
    if let Some(bsrc) = &bsrc {
        shmem.local_write(bsrc, 0, &mine).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for turn in 0..2 {
        if me == turn {
            for &bytes in sizes {
                // Runs `op` and returns the virtual ns it took.
                let timed = |op: &mut dyn FnMut() -> shmemplus::Result<()>| {
                    let t0 = shmem.now();
                    op().map_err(e2s)?;
                    Ok::<u64, String>(ns(shmem.now() - t0))
                };
                let model = |op, local, remote| {
                    modeled_ns(
                        shmem.modeled_route_seconds(op, local, remote, other, bytes),
                        "model",
                    )
                };
                let took = timed(&mut || {
                    shmem.put(&cpu, 0, &mine[..bytes], other)?;
                    shmem.quiet()
                })?;
                let want = model(RmaOp::Put, None, Place::Cpu)?;
                within_1pct(took, want, &format!("PE {me}: put {bytes} B + quiet"))?;
                let mut got = vec![0u8; bytes];
                let took = timed(&mut || shmem.get(&cpu, 0, &mut got, other))?;
                let want = model(RmaOp::Get, None, Place::Cpu)?;
                within_1pct(took, want, &format!("PE {me}: get {bytes} B"))?;
                // The put just before it wrote this PE's own bytes there.
                if got != mine[..bytes] {
                    return Err(format!("PE {me}: get of {bytes} B returned wrong bytes"));
                }
                let (Some(bsrc), Some(bdst)) = (&bsrc, &bdst) else {
                    continue;
                };
                let took = timed(&mut || {
                    shmem.put(bdst, 0, &mine[..bytes], other)?;
                    shmem.quiet()
                })?;
                let want = model(RmaOp::Put, None, Place::Fpga(0))?;
                within_1pct(took, want, &format!("PE {me}: put {bytes} B to a board"))?;
                let took = timed(&mut || {
                    shmem.put_from(bdst, 0, bsrc, 0, bytes, other)?;
                    shmem.quiet()
                })?;
                let want = model(RmaOp::Put, Some(Place::Fpga(0)), Place::Fpga(0))?;
                within_1pct(
                    took,
                    want,
                    &format!("PE {me}: board-to-board put {bytes} B"),
                )?;
                let took = timed(&mut || shmem.get_into(bdst, 0, bsrc, 0, bytes, other))?;
                let want = model(RmaOp::Get, Some(Place::Fpga(0)), Place::Fpga(0))?;
                within_1pct(
                    took,
                    want,
                    &format!("PE {me}: board-to-board get {bytes} B"),
                )?;
                let theirs: Vec<u8> = (0..bytes).map(|i| pattern(other, i)).collect();
                let mut back = vec![0u8; bytes];
                shmem.local_read(bdst, 0, &mut back).map_err(e2s)?;
                if back != theirs {
                    return Err(format!(
                        "PE {me}: board get of {bytes} B returned wrong bytes"
                    ));
                }
            }
        }
        shmem.barrier_all().map_err(e2s)?;
    }
    println!("PE {me}: vt-model ok");
    Ok(())
}

/// One step of `vt-causality` on the receiving PE: `after` (its clock once it saw the
/// data) must be no earlier than `sent` (the sender's clock when it started) plus
/// `modeled` ns, nor later than that plus `flag` ns (one more small message: the
/// flag or signal that followed the data); `sent` must include the sender's 1 s of
/// modeled work.
fn causal(what: &str, sent: u64, (modeled, flag): (u64, u64), after: u64) -> Result<(), String> {
    println!("{what}: sent at {sent} ns, modeled {modeled} ns, seen at {after} ns");
    if sent < 1_000_000_000 {
        return Err(format!(
            "{what}: the sender's clock {sent} ns lacks its 1 s of work"
        ));
    }
    let delivered = sent.saturating_add(modeled);
    if after < delivered {
        return Err(format!(
            "{what}: seen at {after} ns, before the delivery at {sent} + {modeled} ns"
        ));
    }
    if after > delivered.saturating_add(flag) {
        return Err(format!(
            "{what}: seen at {after} ns, later than the delivery at {delivered} ns and a {flag} ns message"
        ));
    }
    Ok(())
}

/// One handoff of `vt-causality`: PE 0 models 1 s of work and runs `send` with its
/// clock; PE 1 runs `receive`, which waits for what was sent and returns the
/// sender's clock found in it, and checks its own clock then (see [`causal`], with
/// the modeled ns of the transfer and of the message after it). Ends with a barrier.
fn handoff(
    shmem: &Shmem,
    (what, modeled, flag): (&str, u64, u64),
    send: impl FnOnce(u64) -> shmemplus::Result<()>,
    receive: impl FnOnce() -> shmemplus::Result<u64>,
) -> Result<(), String> {
    if shmem.my_pe() == 0 {
        shmem.advance(Duration::from_secs(1));
        send(ns(shmem.now())).map_err(e2s)?;
    } else {
        let sent = receive().map_err(e2s)?;
        causal(what, sent, (modeled, flag), ns(shmem.now()))?;
    }
    shmem.barrier_all().map_err(e2s)
}

/// `vt-causality` (2 PEs on 2 nodes, an emulated profile): PE 0 models 1 s of work,
/// then sends to PE 1, which waits; PE 1's clock after its wait is no earlier than
/// PE 0's clock at sending plus the modeled transfer. Four ways: a 64 KiB put then a
/// flag put, `put_signal`, an atomic add, and a lock PE 0 holds over its 1 s (then
/// the same with the roles swapped, the lock homed on the waiter).
pub(crate) fn causality(shmem: &Shmem) -> Result<(), String> {
    const BYTES: usize = 64 << 10;
    need_virtual(shmem)?;
    shmem.count_cpu_time(false);
    let me = shmem.my_pe();
    partner(shmem)?;
    let data = shmem.alloc::<u64>(BYTES / 8, Place::Cpu).map_err(e2s)?;
    let words = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let lock = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let second = Duration::from_secs(1);
    let now_ns = || ns(shmem.now());
    let put_model = |bytes| modeled_ns(shmem.modeled_seconds(RmaOp::Put, 1 - me, bytes), "put");
    // The payload: the sender's clock at sending, then filler.
    let payload = |sent: u64| -> Vec<u64> {
        (0..BYTES as u64 / 8)
            .map(|i| if i == 0 { sent } else { i })
            .collect()
    };
    shmem.barrier_all().map_err(e2s)?;

    let flag = put_model(8)?;
    // 1. A put of data, then a flag.
    handoff(
        shmem,
        ("put + flag", put_model(BYTES)?, flag),
        |sent| {
            shmem.put(&data, 0, &payload(sent), 1)?;
            shmem.p(&words, 0, 1u64, 1)?;
            shmem.quiet()
        },
        || {
            shmem.wait_until(&words, 0, Cmp::Eq, 1)?;
            shmem.local_read_one(&data, 0)
        },
    )?;
    // 2. put_signal.
    handoff(
        shmem,
        ("put_signal", put_model(BYTES)?, flag),
        |sent| shmem.put_signal(&data, 0, &payload(sent), &words, 1, 1, SignalOp::Set, 1),
        || {
            shmem.signal_wait_until(&words, 1, Cmp::Eq, 1)?;
            shmem.local_read_one(&data, 0)
        },
    )?;
    // 3. An atomic add whose operand is the sender's clock.
    handoff(
        shmem,
        ("atomic add", flag, 0),
        |sent| shmem.atomic_add(&words, 2, sent, 1),
        || {
            shmem.wait_until(&words, 2, Cmp::Ne, 0)?;
            shmem.local_read_one(&words, 2)
        },
    )?;

    // 4. A lock held over 1 s of work, then released to the other PE; first by PE 0
    //    (the lock's home), then by PE 1. The barrier leaves both PEs at one instant,
    //    so the waiter acquires no earlier than 1 s after it.
    for holder in [0, 1] {
        if me == holder {
            shmem.set_lock(&lock).map_err(e2s)?;
        }
        shmem.barrier_all().map_err(e2s)?;
        let start = now_ns();
        if me == holder {
            shmem.advance(second);
            shmem.clear_lock(&lock).map_err(e2s)?;
        } else {
            shmem.set_lock(&lock).map_err(e2s)?;
            let after = now_ns();
            shmem.clear_lock(&lock).map_err(e2s)?;
            println!("lock from PE {holder}: waited from {start} ns to {after} ns");
            if after < start + 1_000_000_000 {
                return Err(format!(
                    "lock from PE {holder}: acquired at {after} ns, before the holder's release at {start} + 1 s"
                ));
            }
            // A few small messages after the release, not real time.
            if after > start + 1_001_000_000 {
                return Err(format!(
                    "lock from PE {holder}: acquired at {after} ns, over 1 ms after the release at {start} + 1 s"
                ));
            }
        }
        shmem.barrier_all().map_err(e2s)?;
    }
    println!("PE {me}: vt-causality ok");
    Ok(())
}

/// `vt-barrier`: twice, PE k models k x 10 ms of work (then, the second time,
/// (n-1-k) x 10 ms) and enters a world barrier; every PE prints its clock after the
/// barrier ("barrier R at N ns", compared across PEs by the job test) and checks it is
/// at least the barrier's start plus the longest work.
pub(crate) fn barrier(shmem: &Shmem) -> Result<(), String> {
    need_virtual(shmem)?;
    shmem.count_cpu_time(false);
    let (me, n) = (u64::from(shmem.my_pe()), u64::from(shmem.n_pes()));
    const STEP: u64 = 10_000_000;
    shmem.barrier_all().map_err(e2s)?;
    for (round, k) in [(0, me), (1, n - 1 - me)] {
        let start = ns(shmem.now());
        shmem.advance(Duration::from_nanos(k * STEP));
        shmem.barrier_all().map_err(e2s)?;
        let after = ns(shmem.now());
        println!("PE {me}: barrier {round} at {after} ns");
        if after < start + (n - 1) * STEP {
            return Err(format!(
                "PE {me}: barrier {round} left at {after} ns, before the last arrival at {start} + {} ns",
                (n - 1) * STEP
            ));
        }
    }
    println!("PE {me}: vt-barrier ok");
    Ok(())
}

/// `vt-pattern` (any clock, any profile, 2 or more PEs, one per node): a
/// communication pattern fixed in advance, `rounds` times: a ring of puts (PE k to
/// k+1) completed by `quiet` and a barrier, gets within pairs of PEs (2j from 2j+1,
/// then back), a broadcast from a root that changes every round, and with boards a
/// round trip through this PE's board 0, then a put from it to the next PE's board.
/// Then prints "PE k: final clock N ns" (CPU time not counted) and "PE k: checksum X"
/// over every byte it holds, and checks the data it can predict.
///
/// Phases are separated by barriers so that no two PEs use one resource of the
/// cluster (a NIC side, a DMA channel) in the same phase: the resources' timelines
/// are reserved in the order the PEs reach them in real time, so PEs contending for
/// one can be served in either order and the final clocks vary from run to run.
/// `contended` puts to the next PE's board while that PE uses it, which shows it.
pub(crate) fn pattern(shmem: &Shmem, rounds: u64, contended: bool) -> Result<(), String> {
    const WORDS: usize = 4096;
    shmem.count_cpu_time(false);
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let value =
        |pe: u32, round: u64, i: usize| shmemplus_tests::hash(&[u64::from(pe), round, i as u64]);
    let wrong = |what: &str, r: u64| Err(format!("PE {me}: {what} of round {r} is wrong"));
    let ring = shmem.alloc::<u64>(WORDS, Place::Cpu).map_err(e2s)?;
    let source = shmem.alloc::<u64>(WORDS, Place::Cpu).map_err(e2s)?;
    let bcast = shmem.alloc::<u64>(WORDS, Place::Cpu).map_err(e2s)?;
    let board = if shmem.fpgas() > 0 {
        let a = shmem.alloc::<u64>(WORDS, Place::Fpga(0)).map_err(e2s)?;
        Some((a, shmem.alloc::<u64>(WORDS, Place::Fpga(0)).map_err(e2s)?))
    } else {
        None
    };
    let mut fetched = vec![0u64; WORDS / 2];
    let mut back = vec![0u64; WORDS];
    shmem.barrier_all().map_err(e2s)?;
    for r in 0..rounds {
        let mine: Vec<u64> = (0..WORDS).map(|i| value(me, r, i)).collect();
        shmem.local_write(&source, 0, &mine).map_err(e2s)?;
        // Ring of puts, a different length each round.
        let len = WORDS >> (r % 4);
        shmem.put(&ring, 0, &mine[..len], next).map_err(e2s)?;
        shmem.quiet().map_err(e2s)?;
        shmem.barrier_all().map_err(e2s)?;
        let got = shmem.local_to_vec(&ring).map_err(e2s)?;
        if (0..len).any(|i| got[i] != value(prev, r, i)) {
            return wrong("ring data", r);
        }
        // Gets within pairs: the even PE first, then the odd one.
        let pair = me ^ 1;
        for turn in 0..2 {
            if pair < n && me % 2 == turn {
                shmem.get(&source, 0, &mut fetched, pair).map_err(e2s)?;
                if (0..fetched.len()).any(|i| fetched[i] != value(pair, r, i)) {
                    return wrong("get", r);
                }
            }
            shmem.barrier_all().map_err(e2s)?;
        }
        // Broadcast from a root that moves.
        let root = (r % u64::from(n)) as u32;
        shmem
            .broadcast(&shmem.team_world(), &bcast, &source, WORDS / 4, root)
            .map_err(e2s)?;
        let got = shmem.local_to_vec(&bcast).map_err(e2s)?;
        if me != root && (0..WORDS / 4).any(|i| got[i] != value(root, r, i)) {
            return wrong("broadcast", r);
        }
        // Boards: this PE's board and back, then on to the next PE's board.
        if let Some((a, b)) = &board {
            shmem.put_from(a, 0, &source, 0, WORDS, me).map_err(e2s)?;
            shmem.quiet().map_err(e2s)?;
            shmem.get_into(&source, 0, a, 0, WORDS, me).map_err(e2s)?;
            if contended {
                shmem.put_from(b, 0, a, 0, WORDS / 2, next).map_err(e2s)?;
            }
            shmem.get(a, 0, &mut back, me).map_err(e2s)?;
            if back != mine {
                return wrong("board round trip", r);
            }
            shmem.barrier_all().map_err(e2s)?;
            if !contended {
                shmem.put_from(b, 0, a, 0, WORDS / 2, next).map_err(e2s)?;
            }
            shmem.barrier_all().map_err(e2s)?;
            let got = shmem.local_to_vec(b).map_err(e2s)?;
            if (0..WORDS / 2).any(|i| got[i] != value(prev, r, i)) {
                return wrong("board put", r);
            }
        }
        shmem.barrier_all().map_err(e2s)?;
    }
    let mut sum = 0u64;
    let mut fold = |v: Vec<u64>| sum = shmemplus_tests::hash(&[sum, shmemplus_tests::hash(&v)]);
    fold(shmem.local_to_vec(&ring).map_err(e2s)?);
    fold(shmem.local_to_vec(&source).map_err(e2s)?);
    fold(shmem.local_to_vec(&bcast).map_err(e2s)?);
    fold(fetched);
    if let Some((a, b)) = &board {
        fold(shmem.local_to_vec(a).map_err(e2s)?);
        fold(shmem.local_to_vec(b).map_err(e2s)?);
    }
    println!("PE {me}: final clock {} ns", ns(shmem.now()));
    println!("PE {me}: checksum {sum:016x}");
    println!("PE {me}: vt-pattern ok");
    Ok(())
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// `vt-cpu` (2 PEs, CPU time counted): PE 0 computes for `ms` of its thread's CPU
/// time, then puts a flag holding its clock from before the computation; PE 1's clock
/// once it saw the flag is at least that plus `ms` / the profile's `cpu_speed`, and so
/// is PE 0's own after the computation.
pub(crate) fn cpu(shmem: &Shmem, ms: u64) -> Result<(), String> {
    need_virtual(shmem)?;
    let me = shmem.my_pe();
    if shmem.n_pes() != 2 {
        return Err("vt-cpu needs 2 PEs".into());
    }
    let flag = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let speed = shmem.profile().cpu_speed;
    let work = Duration::from_millis(ms);
    let modeled = ns(work.div_f64(speed));
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        let start = ns(shmem.now());
        let t0 = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - t0 < work {
            for i in 0..1000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
        let after = ns(shmem.now());
        println!("PE 0: computed {ms} ms of CPU from {start} ns to {after} ns (cpu_speed {speed})");
        if after < start + modeled {
            return Err(format!(
                "PE 0: clock {after} ns after computing, less than {start} + {modeled} ns"
            ));
        }
        shmem.p(&flag, 0, start + 1, 1).map_err(e2s)?;
        shmem.quiet().map_err(e2s)?;
    } else {
        shmem.wait_until(&flag, 0, Cmp::Ne, 0).map_err(e2s)?;
        let after = ns(shmem.now());
        let start = shmem.local_read_one(&flag, 0).map_err(e2s)? - 1;
        println!("PE 1: saw the flag at {after} ns; PE 0 started computing at {start} ns");
        if after < start + modeled {
            return Err(format!(
                "PE 1: saw the flag at {after} ns, before PE 0 finished computing at {start} + {modeled} ns"
            ));
        }
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: vt-cpu ok");
    Ok(())
}

/// `vt-turns` (2 PEs): a wait for a turn is not computation. PE 0 is ahead (1 ms of
/// modeled work) and waits for its turn while PE 1, behind it, sleeps `ms` of real
/// time before leaving the turns; PE 0's clock must not grow by the CPU time its
/// polling took (a few hundred microseconds of yields, then a sleep per poll), only
/// by the wait's nothing: it stays within 1 ms of where it was.
pub(crate) fn turns(shmem: &Shmem, ms: u64) -> Result<(), String> {
    need_virtual(shmem)?;
    if shmem.n_pes() != 2 {
        return Err("vt-turns needs 2 PEs".into());
    }
    let me = shmem.my_pe();
    shmem.count_cpu_time(true);
    shmem.join_turns().map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        shmem.advance(Duration::from_millis(1));
        let before = ns(shmem.now());
        let cpu0 = thread_cpu();
        shmem.wait_turn().map_err(e2s)?;
        let polled = thread_cpu() - cpu0;
        let after = ns(shmem.now());
        println!(
            "PE 0: waited for its turn from {before} ns to {after} ns, polling {} us of CPU",
            polled.as_micros()
        );
        if after > before + 1_000_000 {
            return Err(format!(
                "PE 0: its clock grew from {before} to {after} ns while it waited for a turn \
                 (its polling took {} us of CPU)",
                polled.as_micros()
            ));
        }
    } else {
        std::thread::sleep(Duration::from_millis(ms));
    }
    shmem.leave_turns().map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: vt-turns ok");
    Ok(())
}
