//! SCF in real jobs: `shmemplus-test-pe scf ITER MAPPING` (see
//! `src/bin/test_pe/scf.rs`) on 4 PEs of 2 nodes with 2 boards each. The sink checks
//! every byte of every message; with 2 slots per channel and hundreds of iterations,
//! senders and receivers wait on each other throughout.

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{dump, run_with};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

fn runs_verified(mapping: &str, clock: &str, iterations: &str) {
    let r = run_with(
        PE,
        4,
        Some(2),
        &["scf", iterations, mapping],
        &[("SHMEMPLUS_FPGAS", "2"), ("SHMEMPLUS_CLOCK", clock)],
    );
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    for (pe, out) in r.stdout.iter().enumerate() {
        assert!(out.contains(&format!("PE {pe}: scf ok")), "{}", dump(&r));
    }
    assert!(r.stdout[0].contains("verified"), "{}", dump(&r));
}

#[test]
fn cpu_tasks_exchange_every_message_intact() {
    runs_verified("cpu", "wall", "400");
}

#[test]
fn board_tasks_exchange_every_message_intact() {
    runs_verified("fpga", "wall", "200");
}

#[test]
fn mixed_mapping_on_the_virtual_clock() {
    runs_verified("mixed", "virtual", "300");
}

/// A worker failing in iteration 5 (its code, or its kernel) or breaking the protocol
/// ends the job promptly, and the error names the task and the iteration.
fn fails_naming(mapping: &str, fault: &str, want: &[&str]) {
    let r = run_with(
        PE,
        4,
        Some(2),
        &["scf", "50", mapping, fault],
        &[("SHMEMPLUS_FPGAS", "2")],
    );
    assert_ne!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(
        r.stderr.iter().any(|e| want.iter().any(|w| e.contains(w))),
        "wanted {want:?}\n{}",
        dump(&r)
    );
    assert!(
        r.elapsed.as_secs() < 20,
        "took {:?}\n{}",
        r.elapsed,
        dump(&r)
    );
}

#[test]
fn a_failing_cpu_task_ends_the_job_naming_it() {
    fails_naming(
        "cpu",
        "cpu-fails",
        &["task \"w2\" failed in iteration 5: failed on purpose"],
    );
}

#[test]
fn a_failing_kernel_ends_the_job_naming_its_task() {
    // Every board worker's kernel fails in iteration 5: whichever PE stops first ends
    // the job.
    fails_naming(
        "fpga",
        "kernel-fails",
        &[
            "task \"w1\" failed in iteration 5: board 0: kernel",
            "task \"w2\" failed in iteration 5: board 0: kernel",
            "task \"w3\" failed in iteration 5: board 1: kernel",
        ],
    );
}

#[test]
fn a_task_that_skips_a_send_is_named() {
    fails_naming(
        "cpu",
        "skips-send",
        &["task \"w1\", iteration 3: did not send to \"w3\""],
    );
}
