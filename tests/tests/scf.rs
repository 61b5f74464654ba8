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
