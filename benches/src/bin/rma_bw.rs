//! OSU-style put/get latency and bandwidth between two PEs: the shmemplus twin of
//! `bench-oshmem/osh_rma.c` (same loops, same buffers, same JSON lines), so that
//! `bench-oshmem/rma.sh` can run the two in turn and compare them.
//!
//! Run as `shmemrun -n 2 target/release/rma_bw`. PE 0 does every transfer, to or from
//! PE 1; PE 1 only waits in barriers. The private side is one heap-allocated buffer of
//! the largest size (where the allocator puts large blocks: 16 bytes past a page
//! boundary with glibc), the remote side one symmetric object of the same size.
//! Environment: `OSH_RMA_REPS`, `OSH_RMA_ITERS`, `OSH_RMA_MIN`, `OSH_RMA_MAX`, read as
//! the C program reads them. It must not grow figures the C program does not have.

use shmemplus::Place;
use shmemplus_benches::median;
use std::time::Instant;

const WARMUP: usize = 3;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

fn emit(op: &str, bytes: usize, secs: f64, moved: Option<f64>) {
    let bw = match moved {
        Some(b) => format!("{:.2}", b / secs / 1e6),
        None => "null".into(),
    };
    println!(
        "{{\"impl\":\"shmemplus\",\"op\":\"{op}\",\"n_pes\":2,\"bytes\":{bytes},\"latency_us\":{:.4},\"bandwidth_mbps\":{bw}}}",
        secs * 1e6
    );
}

/// Median seconds of `reps` timed runs of `f` (after `WARMUP` untimed ones).
fn timed(reps: usize, mut f: impl FnMut() -> shmemplus::Result<()>) -> shmemplus::Result<f64> {
    let mut t = Vec::with_capacity(reps);
    for r in 0..WARMUP + reps {
        let start = Instant::now();
        f()?;
        if r >= WARMUP {
            t.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(median(t))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shmem = shmemplus::init()?;
    if shmem.n_pes() != 2 {
        return Err("rma_bw needs exactly 2 PEs (shmemrun -n 2)".into());
    }
    let reps = env_usize("OSH_RMA_REPS", 21).clamp(1, 101);
    let iters = env_usize("OSH_RMA_ITERS", 10_000).max(1);
    let min = env_usize("OSH_RMA_MIN", 4096).max(1);
    let max = env_usize("OSH_RMA_MAX", 32 << 20).max(8);

    let sym = shmem.alloc::<u8>(max, Place::Cpu)?;
    let src: Vec<u8> = (0..max).map(|i| (i * 7 + 1) as u8).collect();
    let mut dst = vec![0u8; max];
    let mut bad = false;
    if shmem.my_pe() == 0 {
        shmemplus::stderr_line(format_args!(
            "# rma_bw: reps={reps} iters={iters} sizes {min}..{max}; private buffers at page+{}",
            src.as_ptr() as usize & 4095
        ));
    }
    shmem.barrier_all()?;
    if shmem.my_pe() == 0 {
        let t = timed(reps, || {
            for _ in 0..iters {
                shmem.put(&sym, 0, &src[..8], 1)?;
                shmem.quiet()?;
            }
            Ok(())
        })?;
        emit("put_lat", 8, t / iters as f64, None);
        let t = timed(reps, || {
            for _ in 0..iters {
                shmem.get(&sym, 0, &mut dst[..8], 1)?;
            }
            Ok(())
        })?;
        emit("get_lat", 8, t / iters as f64, None);

        let mut n = min;
        while n <= max {
            let w = ((4 << 20) / n).clamp(1, 64);
            let t = timed(reps, || {
                for _ in 0..w {
                    shmem.put(&sym, 0, &src[..n], 1)?;
                }
                shmem.quiet()
            })?;
            emit("put", n, t / w as f64, Some(n as f64));
            let t = timed(reps, || {
                for _ in 0..w {
                    shmem.get(&sym, 0, &mut dst[..n], 1)?;
                }
                Ok(())
            })?;
            emit("get", n, t / w as f64, Some(n as f64));
            // The get brought back what the put wrote.
            bad |= dst[..n] != src[..n];
            dst[..n].fill(0);
            match n.checked_mul(2) {
                Some(next) => n = next,
                None => break,
            }
        }
    }
    shmem.barrier_all()?;
    shmem.finalize()?;
    if bad {
        return Err("put/get result check FAILED".into());
    }
    Ok(())
}
