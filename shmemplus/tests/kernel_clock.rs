//! Board kernels on the job clock ([`shmemplus::Shmem::kernel_start`]): on the wall
//! clock DONE comes after the modeled time in real time; on the virtual clock DONE
//! comes as soon as the kernel has computed and the PE's clock moves by the modeled
//! time instead, runs on one board following each other and runs on different boards
//! overlapping.
//!
//! `init` runs once per process, so the test runs the one-PE job twice, once per clock,
//! as child processes of this test binary (the ignored test `one_clock`).

use shmemplus::fpga_mock::{Bitfile, Kernel, KernelTiming};
use shmemplus::Place;
use std::process::Command;
use std::time::{Duration, Instant};

/// The clock the child runs on (unset: not a child).
const CHILD: &str = "SHMEMPLUS_TEST_KERNEL_CLOCK";

/// A bitfile whose kernel "mark" writes its argument's low byte at offset 0 and is
/// modeled at `ms` milliseconds.
fn bitfile(ms: f64) -> Bitfile {
    let timing = KernelTiming {
        pipeline_latency_cycles: 150e6 * ms / 1e3,
        clock_hz: 150e6,
        ops_per_element: 1.0,
        ops_per_cycle: 1.0,
    };
    Bitfile {
        name: "clocked".into(),
        kernels: vec![Kernel::new(
            "mark",
            timing,
            |_| 0,
            |mem, args| mem.write(0, &[args.first().copied().unwrap_or(0) as u8]),
        )],
    }
}

#[test]
fn kernels_on_both_clocks() {
    let exe = std::env::current_exe().expect("the test binary's path");
    for clock in ["wall", "virtual"] {
        let out = Command::new(&exe)
            .args(["--ignored", "--exact", "one_clock", "--nocapture"])
            .env(CHILD, clock)
            .env("SHMEMPLUS_CLOCK", clock)
            .env("SHMEMPLUS_FPGAS", "2")
            .env("SHMEMPLUS_TUNE", "off")
            .env("SHMEM_SYMMETRIC_SIZE", (4 << 20).to_string())
            .env_remove("SHMEMPLUS_PROFILE")
            .output()
            .expect("the child test runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{clock} clock:\n{text}");
        assert!(text.contains("1 passed"), "{clock} clock:\n{text}");
        assert!(
            text.contains(&format!("kernel clock ok: {clock}")),
            "{text}"
        );
    }
}

#[test]
#[ignore = "a child of kernels_on_both_clocks, which sets its clock"]
fn one_clock() {
    let Ok(clock) = std::env::var(CHILD) else {
        return;
    };
    let shmem = shmemplus::init().expect("a one-PE job starts");
    assert_eq!(shmem.clock().name(), clock);
    assert_eq!(shmem.fpgas(), 2);
    let virtual_clock = clock == "virtual";
    // Long enough on the virtual clock that computing it in real time would show.
    let ms = if virtual_clock { 4000.0 } else { 150.0 };
    let v = shmem.alloc::<u8>(64, Place::Fpga(0)).expect("board 0");
    let w = shmem.alloc::<u8>(64, Place::Fpga(1)).expect("board 1");
    for b in 0..2 {
        shmem.fpga_configure(b, bitfile(ms)).expect("configure");
    }
    let modeled = ms / 1e3;
    let (real, t0) = (Instant::now(), shmem.now());
    // Two runs on board 0, one on board 1.
    let a = shmem.kernel_start(0, "mark", &[1]).expect("GO a");
    let b = shmem.kernel_start(0, "mark", &[2]).expect("GO b");
    let c = shmem.kernel_start(1, "mark", &[3]).expect("GO c");
    assert!((a.modeled_s() - modeled).abs() < 1e-9, "{}", a.modeled_s());
    let (da, db, dc) = (
        a.wait().expect("a"),
        b.wait().expect("b"),
        c.wait().expect("c"),
    );
    let (real, job) = (real.elapsed(), shmem.now() - t0);
    let at0 = shmem.local_read_one(&v, 0).expect("read");
    assert!(at0 == 2 || at0 == 1, "board 0 holds a run's mark: {at0}");
    assert_eq!(shmem.local_read_one(&w, 0).expect("read"), 3);
    for d in [&da, &db, &dc] {
        assert!(d.elapsed_s >= d.modeled_s - 1e-9, "{d:?}");
    }
    if virtual_clock {
        // Board 0's runs follow each other: 2 x modeled; board 1's overlaps them.
        let want = Duration::from_secs_f64(2.0 * modeled);
        assert!(job >= want, "virtual {job:?} < {want:?}");
        assert!(job < want + Duration::from_millis(500), "virtual {job:?}");
        assert!((db.elapsed_s - 2.0 * modeled).abs() < 0.5, "{db:?}");
        assert!((dc.elapsed_s - modeled).abs() < 0.5, "{dc:?}");
        assert!(real < Duration::from_secs_f64(modeled), "slept: {real:?}");
        // A failing run charges nothing and reports the board.
        let t1 = shmem.now();
        let bad = shmem.kernel_start(0, "nope", &[]).unwrap_err();
        assert!(
            matches!(bad, shmemplus::Error::Board { board: 0, .. }),
            "{bad}"
        );
        assert!(shmem.now() - t1 < Duration::from_millis(100));
    } else {
        // The wall clock is as before: DONE after the modeled time, boards in parallel.
        assert!(real >= Duration::from_secs_f64(modeled), "{real:?}");
        assert!(job >= Duration::from_secs_f64(modeled), "{job:?}");
    }
    println!("kernel clock ok: {clock}");
    shmem.free(w).expect("free");
    shmem.free(v).expect("free");
    shmem.finalize().expect("finalize");
}
