//! Point-to-point synchronization from C (OpenSHMEM 1.5 section 9.10): PEs set flags
//! on each other and wait or test for them in every form, as 4-PE jobs under both
//! conduits and on the `novo-g` profile (PEs on different nodes).

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};

#[test]
fn every_wait_and_test_form_sees_the_other_pes_writes() {
    run_ok("sync_waits.c", 4, &[]);
    run_ok("sync_waits.c", 4, &[("SHMEMPLUS_CONDUIT", "am")]);
    run_ok("sync_waits.c", 4, &[("SHMEMPLUS_PROFILE", "novo-g")]);
}

#[test]
fn an_unknown_comparison_ends_the_job_naming_the_routine() {
    let exe = build("amo_bad.c", &[]);
    let report = run(&exe.to_string_lossy(), 2, &["cmp"], &[]);
    let all = dump(&report);
    assert!(
        all.contains("PE 1: shmem_int_wait_until: argument cmp: 42 is not a SHMEM_CMP_*"),
        "{all}"
    );
    assert_ne!(
        report.outcome,
        shmemplus_runtime::JobOutcome::Success,
        "{all}"
    );
}
