//! FastFit co-scheduling in real jobs: `shmemplus-test-pe cosched` (see
//! `src/bin/test_pe/cosched.rs`) on 2 nodes of 2 PEs with 2 boards each, with and
//! without a board that fails mid-loop. Each PE checks that every iteration of the
//! job's loop ran exactly once and prints "cosched ok".

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{dump, run_with};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

fn all_ok(r: &shmemplus_cli::launcher::JobReport) {
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(r));
    for (pe, out) in r.stdout.iter().enumerate() {
        assert!(out.contains(&format!("PE {pe}: cosched ok")), "{}", dump(r));
    }
}

#[test]
fn every_iteration_runs_once_on_cpus_and_boards() {
    let r = run_with(
        PE,
        4,
        Some(2),
        &["cosched", "200000"],
        &[("SHMEMPLUS_FPGAS", "2")],
    );
    all_ok(&r);
    // The boards of both nodes trained and took chunks.
    for node in 0..2 {
        for board in 0..2 {
            let line = format!("node {node} board {board} (PE {})", node * 2);
            let leader = &r.stdout[node * 2];
            assert!(
                leader
                    .lines()
                    .any(|l| l.contains(&line) && l.contains("model latency")),
                "{line}\n{}",
                dump(&r)
            );
            // A second loop started with what they learned: no training.
            let trained = format!("{line}: trained, first chunk");
            assert!(leader.contains(&trained), "{trained}\n{}", dump(&r));
        }
    }
}

#[test]
fn a_failing_board_is_retired_and_its_chunk_rerun() {
    let r = run_with(
        PE,
        4,
        Some(2),
        &["cosched", "100000", "fail"],
        &[("SHMEMPLUS_FPGAS", "2")],
    );
    all_ok(&r);
    assert!(
        r.stdout[0].contains("node 0 board 1 (PE 0) retired: failed on iterations"),
        "{}",
        dump(&r)
    );
}

#[test]
fn a_cpu_only_job_runs_the_loop() {
    let r = run_with(
        PE,
        3,
        None,
        &["cosched", "30000"],
        &[("SHMEMPLUS_FPGAS", "0")],
    );
    all_ok(&r);
}

#[test]
fn on_the_virtual_clock_the_model_is_the_kernels_own() {
    // One thread per PE drives its boards and its CPU; the fit is checked to 5%.
    let env = [("SHMEMPLUS_FPGAS", "2"), ("SHMEMPLUS_CLOCK", "virtual")];
    let r = run_with(PE, 4, Some(2), &["cosched", "200000"], &env);
    all_ok(&r);
    let r = run_with(PE, 4, Some(2), &["cosched", "100000", "fail"], &env);
    all_ok(&r);
    assert!(
        r.stdout[0].contains("node 0 board 1 (PE 0) retired: failed on iterations"),
        "{}",
        dump(&r)
    );
}

#[test]
fn on_one_driver_thread_the_cpu_waits_for_the_samples_before_its_first_chunk() {
    // 4 boards per node: two take the samples and two wait for the model; the CPU's
    // first chunk (10 us an iteration, its time not known yet) would hold the thread
    // while the samples' DONE came and the waiting boards idled. (The 2-board jobs
    // above check the same.) Given an estimate of its iteration, far shorter than the
    // samples, it runs beside them instead (a third loop of the job).
    cpu_first_chunks_checked("4", "200000");
}

#[test]
fn a_lone_board_trains_on_two_samples_in_turn_and_an_estimate_puts_the_cpu_beside_them() {
    // 1 board per node: it takes the small sample, then the large one; the CPU waits
    // for both without an estimate of its iteration and runs beside them with one.
    cpu_first_chunks_checked("1", "20000");
}

#[test]
fn a_lone_board_queues_its_large_sample_and_a_failure_of_either_loses_no_chunk() {
    // 1 board per node, virtual clock: the large sample starts behind the small one
    // (checked by every PE that drives a board). PE 0's board then fails the queued
    // sample's start, or the small one's fetch (the queued one fails over with it):
    // retired, both chunks rerun on the CPU path, every iteration once.
    let env = [("SHMEMPLUS_FPGAS", "1"), ("SHMEMPLUS_CLOCK", "virtual")];
    let r = run_with(PE, 2, Some(1), &["cosched", "20000"], &env);
    all_ok(&r);
    every_pe_says(&r, "the large sample queued behind the small one");
    let r = run_with(PE, 2, Some(1), &["cosched", "20000", "fail-queued"], &env);
    all_ok(&r);
    // The small sample completed; the large one ran on the CPU path.
    let out = &r.stdout[0];
    assert!(
        out.contains("node 0 board 0 (PE 0): 1 chunks, 100 iterations")
            && out.contains("node 0 board 0 (PE 0) retired: failed on iterations"),
        "{}",
        dump(&r)
    );
    let r = run_with(
        PE,
        2,
        Some(1),
        &["cosched", "20000", "fail-first-finish"],
        &env,
    );
    all_ok(&r);
    let out = &r.stdout[0];
    assert!(
        out.contains("node 0 board 0 (PE 0): 0 chunks, 0 iterations")
            && out.contains("node 0 board 0 (PE 0) retired: failed on iterations")
            && out.contains("(queued behind a chunk that failed (the results could not be read"),
        "{}",
        dump(&r)
    );
}

/// A `cosched` job of `n` iterations on 2 PEs, one per node, with `fpgas` boards per
/// node on the virtual clock: every PE checked its CPU's first chunk against the
/// boards' samples without an estimate of its iteration and with one.
fn cpu_first_chunks_checked(fpgas: &str, n: &str) {
    let env = [("SHMEMPLUS_FPGAS", fpgas), ("SHMEMPLUS_CLOCK", "virtual")];
    let r = run_with(PE, 2, Some(1), &["cosched", n], &env);
    all_ok(&r);
    every_pe_says(&r, "the CPU's first chunk at");
    every_pe_says(&r, "with an estimate, the CPU's first chunk at");
}

/// A `cosched` job of `n` iterations with priced transfers (`priced`: the mode's
/// variant) on novo-g: 2 PEs on 2 nodes of 2 boards, virtual clock.
/// Every PE printed "PE <its rank>: `what`".
fn every_pe_says(r: &shmemplus_cli::launcher::JobReport, what: &str) {
    for (pe, out) in r.stdout.iter().enumerate() {
        let line = format!("PE {pe}: {what}");
        assert!(out.contains(&line), "{line}\n{}", dump(r));
    }
}

fn novo_g_job(n: &str, priced: &str) -> shmemplus_cli::launcher::JobReport {
    novo_g_on("virtual", n, "none", priced)
}

/// `cosched` on 2 nodes of novo-g with 2 boards each, one PE per node, one pool for
/// the job, on `clock`.
fn novo_g_on(clock: &str, n: &str, fail: &str, priced: &str) -> shmemplus_cli::launcher::JobReport {
    let env = [
        ("SHMEMPLUS_FPGAS", "2"),
        ("SHMEMPLUS_CLOCK", clock),
        ("SHMEMPLUS_PROFILE", "novo-g"),
    ];
    run_with(PE, 2, Some(1), &["cosched", n, fail, "job", priced], &env)
}

#[test]
fn with_priced_transfers_a_board_trains_on_one_chunk() {
    // On novo-g (a modeled DMA of milliseconds per transfer) under virtual time, the
    // loop says what a chunk moves per iteration: every board's second sample is
    // modeled, not run, and its chunks still take what the model predicts.
    let r = novo_g_job("40000", "priced");
    all_ok(&r);
    for pe in 0..2 {
        for board in 0..2 {
            let line = format!("node {pe} board {board} (PE {pe}): second sample modeled");
            assert!(r.stdout[pe].contains(&line), "{line}\n{}", dump(&r));
        }
    }
    // The scheduler's own samples, for 16 KiB images: the default small sample is
    // 4000 / (64 * 6 workers) = 10 images. Of 10, 20, 40 and 80 (up to an eighth of
    // the 1024-image largest chunk) novo-g's DMA table prices 40 (640 KiB) cheapest
    // beyond the images' share at the largest chunk: about 2.3 ms against 2.7 for 10.
    // The CPU (200 us an image) is slower than the DMA, so the boards train.
    let r = novo_g_job("4000", "priced-default");
    all_ok(&r);
    for pe in 0..2 {
        let line = format!("node {pe} board 0 (PE {pe}): small sample 40,");
        assert!(r.stdout[pe].contains(&line), "{line}\n{}", dump(&r));
    }
}

#[test]
fn a_board_is_weighed_against_the_cpus_typical_time_not_its_first_call() {
    // novo-g, 16 KiB images: the CPU takes 10 us an image, a fifth of the boards'
    // modeled DMA (about 50 us), but its first call 2 ms more (a loop's first piece
    // pays first-use costs). Weighed against that first piece, the boards trained,
    // paying a DMA latency for a sample and then taking what the CPU would have done
    // faster (the 2D FFT on novo-g: a pass 10 ms longer); against the CPU's typical
    // time none takes an image.
    let r = novo_g_job("4000", "priced-cold-cpu");
    all_ok(&r);
    every_pe_says(&r, "no board trained");
    // Told the CPU's time (`Options::cpu_item_estimate_s`), the boards stop before
    // the loop: their modeled transfers cost the thread more than twice that.
    every_pe_says(
        &r,
        "on the estimate: never trained: the model's transfers alone",
    );
    // On the wall clock each board has a thread of its own and the CPU path has
    // another, so a board's transfers do not hold the CPU; but a loop the CPUs
    // finish before a training sample's modeled DMA alone (2.4 ms) would end with the
    // sample instead. A board that trained at once (as before) held the loop's end
    // for it; the 2D FFT on novo-g: 1.24-1.52x the best split. Each board waits for
    // the CPU's typical time first. Here the loop is 3 images: each PE's CPU takes
    // one (its first call sleeps 2 ms) and one of them the last, so no CPU loop has
    // the two later pieces a typical time needs, and the boards wait until the loop
    // has ended, whatever the host's load; the boards of the code before took their
    // samples during those first calls. (With 30 images the check was timing's: the
    // CPUs' part outlasted the sample once a 10 us sleep took 170 us, and a CI run
    // beside the test made it 210 us. The rule itself is the sizer's unit test
    // `on_its_own_thread_a_board_whose_sample_outlasts_the_cpus_never_trains`.)
    let r = novo_g_on("wall", "3", "none", "priced-cold-cpu");
    all_ok(&r);
    every_pe_says(&r, "no board trained");
    // Told the CPU's time, the boards stop before the loop, no thread waiting: the
    // CPUs would do the 3 images at twice it long before a sample's DMA.
    every_pe_says(
        &r,
        "on the estimate: never trained: the CPUs do the 3 iterations",
    );
}

#[test]
fn a_cpu_path_that_panics_ends_the_job_while_a_board_waits_for_its_time() {
    // Wall clock, novo-g, a loop long enough that the boards would train: each board
    // thread waits for the CPU loop's typical time before its first chunk, and the
    // CPU path panics in its first call. The panic ends the CPU loop; the waiting
    // boards must stop waiting, so that the PE's panic ends the job (and the
    // launcher names the PE), not the job's timeout.
    let started = std::time::Instant::now();
    let r = novo_g_on("wall", "4000", "cpu-panics", "priced-cold-cpu");
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        dump(&r)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "took {:?}\n{}",
        started.elapsed(),
        dump(&r)
    );
    assert!(
        r.stderr.iter().any(|e| e.contains("the CPU path panics")),
        "{}",
        dump(&r)
    );
}

#[test]
fn with_inputs_staged_in_the_background_every_board_samples_while_the_cpu_runs() {
    // novo-g, 2 boards per node, virtual time: the boards' inputs (16 KiB images) go
    // out with put_nbi and their kernels start at the delivery. Both boards begin
    // with a sample (none waits for the other's model: a chunk costs the thread only
    // its copy), and the CPU's first chunk runs during the samples' DMA, before the
    // first production chunk, so that chunk is sized knowing the CPU's speed.
    let r = novo_g_job("4000", "priced-background");
    all_ok(&r);
    every_pe_says(&r, "2 boards sampled");
}

#[test]
fn when_every_board_fails_the_cpus_drain_the_loop() {
    // The CPUs are left out of the loop, and every board fails on its first chunk:
    // the chunks rerun on the CPU path and the final drain runs the rest.
    for clock in ["wall", "virtual"] {
        let env = [("SHMEMPLUS_FPGAS", "2"), ("SHMEMPLUS_CLOCK", clock)];
        let r = run_with(PE, 4, Some(2), &["cosched", "20000", "fail-all"], &env);
        all_ok(&r);
        for node in 0..2 {
            for board in 0..2 {
                let line = format!("node {node} board {board} (PE {}) retired", node * 2);
                assert!(
                    r.stdout[node * 2].contains(&line),
                    "{clock}: {line}\n{}",
                    dump(&r)
                );
            }
        }
    }
}

#[test]
fn a_loop_per_pe_runs_each_pes_iterations_once_on_its_own_devices() {
    // Scope::Pe: every PE drives its own partitions of its node's two boards (on
    // the wall clock from a thread per board, on the virtual clock from its one
    // thread), each PE's iterations run exactly once, and a failing board is retired.
    for clock in ["wall", "virtual"] {
        let env = [("SHMEMPLUS_FPGAS", "2"), ("SHMEMPLUS_CLOCK", clock)];
        let r = run_with(PE, 4, Some(2), &["cosched", "50000", "none", "pe"], &env);
        all_ok(&r);
        for pe in 0..4 {
            let line = format!("node {} board 1 (PE {pe})", pe / 2);
            let trained = format!("{line}: trained, first chunk");
            assert!(
                r.stdout[pe].contains(&trained),
                "{clock}: {trained}\n{}",
                dump(&r)
            );
            assert!(
                r.stdout[pe].contains(&line),
                "{clock}: {line}\n{}",
                dump(&r)
            );
        }
        if clock == "virtual" {
            every_pe_says(
                &r,
                "a trained round with failing boards ran every iteration once",
            );
        }
        let r = run_with(PE, 4, Some(2), &["cosched", "50000", "fail", "pe"], &env);
        all_ok(&r);
        assert!(
            r.stdout[0].contains("node 0 board 1 (PE 0) retired: failed on iterations"),
            "{clock}\n{}",
            dump(&r)
        );
    }
}
