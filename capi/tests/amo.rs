//! The atomic memory operations from C (OpenSHMEM 1.5 section 9.7): C and C++
//! programs under `tests/c/amo_*` run as 4-PE jobs under both conduits, and on the
//! `novo-g` profile, whose PEs are on different nodes.

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};

const AM: &[(&str, &str)] = &[("SHMEMPLUS_CONDUIT", "am")];
const NOVO_G: &[(&str, &str)] = &[("SHMEMPLUS_PROFILE", "novo-g")];

#[test]
fn four_pes_hammering_one_pe_get_exact_totals_under_both_conduits() {
    run_ok("amo_counters.c", 4, &[]);
    run_ok("amo_counters.c", 4, AM);
    run_ok("amo_counters.c", 4, NOVO_G);
}

#[test]
fn bitwise_float_nbi_and_deprecated_amos_under_both_conduits() {
    run_ok("amo_misc.c", 4, &[]);
    run_ok("amo_misc.c", 4, AM);
}

#[test]
fn globals_and_statics_are_targets_of_atomics_and_waits() {
    run_ok("amo_globals.c", 4, &[]);
    run_ok("amo_globals.c", 4, AM);
}

#[test]
fn the_cxx_overloads_pick_the_typed_routines() {
    run_ok("amo_sync_cxx.cpp", 4, &[]);
    run_ok("amo_sync_cxx.cpp", 4, AM);
}

/// Runs `amo_bad.c` on 2 PEs making the wrong call `what` and returns everything
/// the job printed; asserts the job failed.
fn bad_call(what: &str) -> String {
    let exe = build("amo_bad.c", &[]);
    let report = run(&exe.to_string_lossy(), 2, &[what], &[]);
    let all = dump(&report);
    assert_ne!(
        report.outcome,
        shmemplus_runtime::JobOutcome::Success,
        "{what}: {all}"
    );
    all
}

#[test]
fn a_wrong_amo_ends_the_job_naming_the_pe_the_routine_and_the_argument() {
    let all = bad_call("misaligned");
    assert!(
        all.contains("PE 1: shmem_long_atomic_add: argument dest:") && all.contains("not aligned"),
        "{all}"
    );
    let all = bad_call("private");
    assert!(
        all.contains("PE 1: shmem_long_atomic_inc: argument dest:")
            && all.contains("not a symmetric address"),
        "{all}"
    );
    let all = bad_call("pe");
    assert!(
        all.contains("PE 1: shmem_int_atomic_fetch_inc:") && all.contains("invalid PE 9"),
        "{all}"
    );
    let all = bad_call("ctx");
    assert!(
        all.contains("PE 1: shmem_ctx_long_atomic_inc: argument ctx: SHMEM_CTX_INVALID"),
        "{all}"
    );
}
