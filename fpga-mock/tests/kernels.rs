//! GO/DONE behaviour of kernels on a board: results, modeled time, errors, recovery.

use fpga_mock::{
    kernels, Bitfile, Board, BoardConfig, BoardError, Kernel, KernelStatus, KernelTiming,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn board() -> Board {
    Board::new(BoardConfig {
        memory_bytes: 1 << 20,
        ..BoardConfig::default()
    })
    .expect("board")
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn read_words(board: &Board, offset: u64, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; n * 4];
    board.read(offset, &mut bytes).expect("read");
    bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// A timing whose modeled time is `ms` milliseconds for zero elements.
fn slow_timing(ms: f64) -> KernelTiming {
    KernelTiming {
        pipeline_latency_cycles: 150e6 * ms / 1e3,
        clock_hz: 150e6,
        ops_per_element: 1.0,
        ops_per_cycle: 1.0,
    }
}

/// A bitfile with "slow" (writes one byte, `ms` modeled) and "count" (records it ran).
fn slow_bitfile(ms: f64, ran: Arc<AtomicBool>) -> Bitfile {
    Bitfile {
        name: "slow".into(),
        kernels: vec![
            Kernel::new("slow", slow_timing(ms), |_| 0, |mem, _| mem.write(0, &[42])),
            Kernel::new(
                "count",
                slow_timing(0.0),
                |_| 0,
                move |_, _| {
                    ran.store(true, Ordering::SeqCst);
                    Ok(())
                },
            ),
        ],
    }
}

#[test]
fn add_one_computes_the_right_values() {
    let b = board();
    let values = [0u32, 1, 41, u32::MAX, 0xDEAD_BEEF, 7];
    // Misaligned offset, neighbours on both sides.
    b.write(98, &[0xCC; 2]).expect("write");
    b.write(100, &words(&values)).expect("write");
    b.write(124, &[0xCC; 2]).expect("write");
    b.configure(kernels::standard_bitfile()).expect("configure");
    let done = b
        .start(kernels::ADD_ONE, &[100, 6])
        .expect("GO")
        .wait()
        .expect("DONE");
    assert_eq!(done.kernel, "add-one");
    assert_eq!(done.elements, 6);
    assert!((done.modeled_s - kernels::STANDARD_TIMING.seconds(6)).abs() < 1e-15);
    assert_eq!(
        read_words(&b, 100, 6),
        [1, 2, 42, 0, 0xDEAD_BEF0, 8],
        "wrapping add of one"
    );
    let mut edges = [0u8; 2];
    b.read(98, &mut edges).expect("read");
    assert_eq!(edges, [0xCC; 2]);
    b.read(124, &mut edges).expect("read");
    assert_eq!(edges, [0xCC; 2]);
}

#[test]
fn add_one_over_many_chunks() {
    let b = board();
    let n = 50_000usize; // more than one 16 Ki-word chunk
    let values: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    b.write(4, &words(&values)).expect("write");
    b.configure(kernels::standard_bitfile()).expect("configure");
    b.start(kernels::ADD_ONE, &[4, n as u64])
        .expect("GO")
        .wait()
        .expect("DONE");
    let got = read_words(&b, 4, n);
    assert!(got
        .iter()
        .zip(&values)
        .all(|(g, v)| *g == v.wrapping_add(1)));
}

#[test]
fn add_one_rejects_bad_arguments_without_writing() {
    let b = board();
    b.configure(kernels::standard_bitfile()).expect("configure");
    b.write(0, &words(&[5, 5])).expect("write");
    for args in [
        vec![],
        vec![0],
        vec![0, 1, 2],
        vec![(1 << 20) - 4, 2],
        vec![0, u64::MAX],
    ] {
        let err = b
            .start(kernels::ADD_ONE, &args)
            .expect("GO")
            .wait()
            .unwrap_err();
        assert!(
            matches!(err, BoardError::KernelFailed { .. }),
            "{args:?}: {err}"
        );
    }
    assert_eq!(read_words(&b, 0, 2), [5, 5]);
}

#[test]
fn done_is_not_raised_before_the_modeled_time() {
    let b = board();
    b.configure(slow_bitfile(50.0, Arc::default()))
        .expect("configure");
    let t0 = Instant::now();
    let run = b.start("slow", &[]).expect("GO");
    let done = run.wait().expect("DONE");
    let waited = t0.elapsed().as_secs_f64();
    assert!((done.modeled_s - 0.05).abs() < 1e-9, "{}", done.modeled_s);
    assert!(
        waited >= done.modeled_s,
        "DONE after {waited} s < {} s",
        done.modeled_s
    );
    assert!(done.elapsed_s >= done.modeled_s);
    let mut byte = [0u8];
    b.read(0, &mut byte).expect("read");
    assert_eq!(byte, [42], "the result is in memory at DONE");
}

#[test]
fn a_go_for_a_later_instant_holds_the_kernel_not_the_caller() {
    let b = board();
    let ran = Arc::new(AtomicBool::new(false));
    b.configure(slow_bitfile(20.0, Arc::clone(&ran)))
        .expect("configure");
    // GO for 1 s from now: the call returns at once, the body has not run 100 ms
    // later (its thread has), and the board counts the run (it cannot be
    // reconfigured under a pending GO).
    let go = netsim::now_ns() + 1_000_000_000;
    let run = b.start_at("count", &[], go).expect("GO");
    assert!(netsim::now_ns() < go, "start_at held the caller until GO");
    std::thread::sleep(Duration::from_millis(100));
    assert!(!ran.load(Ordering::SeqCst), "the body ran before GO");
    assert_eq!(b.running_kernels(), 1);
    assert_eq!(
        b.configure(kernels::standard_bitfile()).unwrap_err(),
        BoardError::Busy
    );
    run.wait().expect("DONE");
    assert!(netsim::now_ns() >= go);
    assert!(ran.load(Ordering::SeqCst));
    // DONE is GO plus the modeled time, GO being the later instant.
    let go = netsim::now_ns() + 100_000_000;
    let done = b
        .start_at("slow", &[], go)
        .expect("GO")
        .wait()
        .expect("DONE");
    assert!(
        netsim::now_ns() >= go + 20_000_000,
        "DONE before GO + the modeled 20 ms"
    );
    assert!(done.elapsed_s >= done.modeled_s, "{done:?}");
    // A GO instant already past is now.
    let t0 = Instant::now();
    b.start_at("count", &[], 0)
        .expect("GO")
        .wait()
        .expect("DONE");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn done_at_compute_does_not_wait_for_the_modeled_time() {
    let b = Board::new(BoardConfig {
        memory_bytes: 1 << 20,
        done_waits_for_model: false,
        ..BoardConfig::default()
    })
    .expect("board");
    // 60 s modeled: the run must be DONE long before that, with the modeled time
    // known at GO for the caller's own clock.
    b.configure(slow_bitfile(60_000.0, Arc::default()))
        .expect("configure");
    let t0 = Instant::now();
    let run = b.start("slow", &[]).expect("GO");
    assert!((run.modeled_s() - 60.0).abs() < 1e-6, "{}", run.modeled_s());
    assert_eq!(run.elements(), 0);
    let done = run
        .wait_timeout(Duration::from_secs(20))
        .expect("DONE in time");
    let done = done.expect("the run succeeds");
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(done.modeled_s, run.modeled_s());
    assert!(done.elapsed_s < done.modeled_s, "{done:?}");
    assert_eq!(b.running_kernels(), 0);
    let mut byte = [0u8];
    b.read(0, &mut byte).expect("read");
    assert_eq!(byte, [42], "the result is in memory at DONE");
}

#[test]
fn test_is_none_right_after_go_for_a_long_kernel() {
    let b = board();
    // 3 s: the checks below run while the kernel is still running even when this
    // thread is descheduled for a long while on a loaded machine.
    b.configure(slow_bitfile(3000.0, Arc::default()))
        .expect("configure");
    let run = b.start("slow", &[]).expect("GO");
    assert!(run.test().is_none());
    assert_eq!(run.status(), KernelStatus::Running);
    assert!(run.wait_timeout(Duration::from_millis(10)).is_none());
    assert_eq!(b.running_kernels(), 1);
    // Reconfiguring while it runs is refused, and the bitfile stays.
    assert_eq!(
        b.configure(kernels::standard_bitfile()),
        Err(BoardError::Busy)
    );
    assert_eq!(b.bitfile().as_deref(), Some("slow"));
    // A clone of the handle sees the same run.
    let other = run.clone();
    let done = other
        .wait_timeout(Duration::from_secs(30))
        .expect("DONE")
        .expect("ok");
    assert_eq!(done.kernel, "slow");
    assert_eq!(run.status(), KernelStatus::Done);
    assert!(run.test().is_some_and(|r| r.is_ok()));
    // DONE seen: the board is free to reconfigure at once.
    assert_eq!(b.running_kernels(), 0);
    b.configure(kernels::standard_bitfile())
        .expect("configure after DONE");
}

#[test]
fn fail_and_panic_give_typed_errors_and_the_board_still_works() {
    let b = board();
    b.configure(kernels::standard_bitfile()).expect("configure");

    let run = b.start(kernels::FAIL, &[]).expect("GO");
    let err = run.wait().unwrap_err();
    assert_eq!(
        err,
        BoardError::KernelFailed {
            kernel: "fail".into(),
            why: "failed on purpose".into()
        }
    );
    assert!(matches!(run.status(), KernelStatus::Failed(m) if m.contains("failed on purpose")));

    let err = b
        .start(kernels::PANIC, &[])
        .expect("GO")
        .wait()
        .unwrap_err();
    match &err {
        BoardError::KernelPanicked { kernel, message } => {
            assert_eq!(kernel, "panic");
            assert!(message.contains("on purpose"), "{message}");
        }
        other => panic!("expected KernelPanicked, got {other:?}"),
    }

    // Still usable: a DMA and another kernel succeed, and it can be reconfigured.
    assert_eq!(b.running_kernels(), 0);
    b.write(200, &words(&[9])).expect("DMA after failures");
    b.start(kernels::ADD_ONE, &[200, 1])
        .expect("GO")
        .wait()
        .expect("DONE");
    assert_eq!(read_words(&b, 200, 1), [10]);
    b.configure(kernels::standard_bitfile())
        .expect("reconfigure");
}

#[test]
fn a_panicking_element_count_is_caught_too() {
    let b = board();
    let bitfile = Bitfile {
        name: "bad-count".into(),
        kernels: vec![Kernel::new(
            "k",
            slow_timing(0.0),
            |_| panic!("no count"),
            |_, _| Ok(()),
        )],
    };
    b.configure(bitfile).expect("configure");
    let run = b.start("k", &[]).expect("GO");
    assert_eq!(run.modeled_s(), 0.0);
    let err = run.wait().unwrap_err();
    assert!(matches!(err, BoardError::KernelPanicked { message, .. } if message == "no count"));
    assert_eq!(
        b.running_kernels(),
        0,
        "a run failed at GO does not count as running"
    );
}

#[test]
fn no_such_kernel_lists_the_available_ones() {
    let b = board();
    b.configure(kernels::standard_bitfile()).expect("configure");
    let err = b.start("add-two", &[0, 1]).unwrap_err();
    assert_eq!(
        err,
        BoardError::NoSuchKernel {
            kernel: "add-two".into(),
            bitfile: "shmemplus-standard".into(),
            available: vec!["add-one".into(), "fail".into(), "panic".into()],
        }
    );
    assert!(err.to_string().contains("add-one"));
}

#[test]
fn not_configured_before_configure() {
    let b = board();
    assert_eq!(b.bitfile(), None);
    assert_eq!(
        b.start(kernels::ADD_ONE, &[0, 1]).unwrap_err(),
        BoardError::NotConfigured
    );
    b.configure(kernels::standard_bitfile()).expect("configure");
    assert_eq!(b.bitfile().as_deref(), Some(kernels::STANDARD_BITFILE));
}

#[test]
fn configure_replaces_the_bitfile_and_refuses_bad_ones() {
    let b = board();
    let ran = Arc::new(AtomicBool::new(false));
    b.configure(kernels::standard_bitfile()).expect("configure");
    b.configure(slow_bitfile(1.0, Arc::clone(&ran)))
        .expect("replace");
    assert!(matches!(
        b.start(kernels::ADD_ONE, &[0, 1]),
        Err(BoardError::NoSuchKernel { .. })
    ));
    b.start("count", &[]).expect("GO").wait().expect("DONE");
    assert!(ran.load(Ordering::SeqCst));
    let mut bad = kernels::standard_bitfile();
    bad.kernels[0].timing.clock_hz = 0.0;
    assert!(matches!(b.configure(bad), Err(BoardError::BadConfig(_))));
    assert_eq!(
        b.bitfile().as_deref(),
        Some("slow"),
        "a refused bitfile changes nothing"
    );
}

#[test]
fn dropping_the_board_while_a_kernel_runs_is_safe() {
    let b = board();
    b.configure(slow_bitfile(30.0, Arc::default()))
        .expect("configure");
    let run = b.start("slow", &[]).expect("GO");
    drop(b);
    assert!(run.wait().is_ok());
}

#[test]
fn dma_from_several_threads_while_kernels_run() {
    let b = Arc::new(board());
    b.configure(kernels::standard_bitfile()).expect("configure");
    // The kernel works on [0, 64 KiB); four threads own disjoint 4 KiB regions above.
    b.write(0, &words(&vec![1u32; 16 * 1024])).expect("write");
    let run = b.start(kernels::ADD_ONE, &[0, 16 * 1024]).expect("GO");
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let b = Arc::clone(&b);
            s.spawn(move || {
                let base = (128 << 10) + t * 4096;
                for i in 0..200u64 {
                    let at = base + (i * 37) % 4000;
                    let data = [t as u8 + 1; 13];
                    b.write(at, &data).expect("write");
                    let mut back = [0u8; 13];
                    b.read(at, &mut back).expect("read");
                    assert_eq!(back, data);
                }
            });
        }
    });
    run.wait().expect("DONE");
    assert!(read_words(&b, 0, 16 * 1024).iter().all(|&w| w == 2));
}
