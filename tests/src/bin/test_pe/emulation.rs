//! Scenarios on emulated profiles, checking orderings and lower bounds, never upper
//! bounds on wall-clock time: `emulation` (remote slower than local, never faster
//! than modeled), `emulated-idle` (emulated waits burn no core), `barrier-latency` (a
//! barrier across nodes costs at least a modeled message) and `nbi-overlap` (board
//! reads overlap in modeled time).

use shmemplus::{Place, Shmem};
use shmemplus_tests::pe::{cpu_share, e2s};

/// On an emulated profile with 2 PEs per node: PE 0 puts and gets 1 MiB to PE 1 (same
/// node) and PE 2 (other node). Remote must be slower than local, and no remote
/// transfer may beat its modeled time (emulation waits at least that long). Only
/// orderings and lower bounds: no upper bound on time.
pub(crate) fn emulation() -> Result<(), String> {
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

/// On an emulated profile, every PE but 0 puts 8 MiB to PE 0 at once, 20 times; the
/// receive side serialises them, so most of each sender's time is an emulated wait.
/// A sender fails if it used more than 30% of a core over its transfers.
pub(crate) fn emulated_idle() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    let bytes = 8 << 20;
    let target = shmem.alloc::<u8>(n * bytes, Place::Cpu).map_err(e2s)?;
    let src = vec![1u8; bytes];
    shmem.barrier_all().map_err(e2s)?;
    if me != 0 {
        let (sent, wall, share) = cpu_share(|| {
            for _ in 0..20 {
                shmem.put(&target, me * bytes, &src, 0)?;
                shmem.quiet()?;
            }
            Ok(())
        });
        sent.map_err(e2s)?;
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

/// On an emulated profile with several nodes: a barrier of the world (which spans
/// nodes) never takes less than one modeled network message.
pub(crate) fn barrier_latency(shmem: &Shmem) -> Result<(), String> {
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

/// Reads 1 MiB from each of this PE's boards, once with blocking `get_into` and once
/// with `get_nbi` + `quiet`, on an emulated profile: the boards' DMA channels are
/// separate resources, so the non-blocking reads overlap in modeled time and take a
/// fraction of the blocking ones (a ratio of the fastest of three runs each, not a
/// wall-clock bound).
pub(crate) fn nbi_overlap(shmem: &Shmem) -> Result<(), String> {
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
