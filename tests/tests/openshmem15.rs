//! Job tests of the OpenSHMEM 1.5 calls the C binding maps onto (contexts, strided RMA,
//! the allocation variants, `ptr`, `global_exit`), 4 PEs on both conduits, through the
//! launcher library with its leak checks.

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{assert_all_ok, dump, run, run_with};
use std::time::Duration;

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

fn conduits() -> [(&'static str, &'static str); 2] {
    [("SHMEMPLUS_CONDUIT", "shm"), ("SHMEMPLUS_CONDUIT", "am")]
}

#[test]
fn puts_on_a_context_are_complete_after_its_quiet() {
    for env in conduits() {
        let r = run_with(PE, 4, Some(2), &["contexts"], &[env]);
        assert_all_ok(&r, "contexts", &format!("{env:?}"));
    }
}

#[test]
fn strided_puts_and_gets_check_every_index() {
    for env in conduits() {
        let r = run(PE, 4, &["strided"], &[env]);
        assert_all_ok(&r, "strided", &format!("{env:?}"));
    }
}

#[test]
fn calloc_realloc_align_and_hints_on_every_pe() {
    for env in conduits() {
        let r = run(
            PE,
            4,
            &["memory", "cpu"],
            &[env, ("SHMEM_SYMMETRIC_SIZE", "8M")],
        );
        assert_all_ok(&r, "memory", &format!("{env:?}"));
    }
    let r = run(PE, 4, &["memory", "fpga"], &[("SHMEMPLUS_FPGAS", "1")]);
    assert_all_ok(&r, "memory", "board 0");
}

#[test]
fn stores_through_ptr_are_seen_by_gets_and_am_has_no_pointers() {
    for (env, mapped) in [(conduits()[0], true), (conduits()[1], false)] {
        let r = run(PE, 4, &["ptr"], &[env]);
        assert_all_ok(&r, "ptr", &format!("{env:?}"));
        let said = format!("(mapped: {mapped})");
        assert!(r.stdout.iter().all(|o| o.contains(&said)), "{}", dump(&r));
    }
}

#[test]
fn global_exit_ends_the_job_with_its_code() {
    for env in conduits() {
        for code in [7, 0] {
            let r = run(PE, 4, &["global-exit", &code.to_string()], &[env]);
            match r.outcome {
                JobOutcome::GlobalExit { pe: 1, code: c, .. } if c == code => {}
                _ => panic!("{env:?} global_exit({code})\n{}", dump(&r)),
            }
            assert_eq!(r.exit_code(), code, "{}", dump(&r));
            // Flushed before the PE was ended.
            let line = format!("PE 1: global_exit({code})");
            assert!(r.stdout[1].contains(&line), "{}", dump(&r));
            // The others were in a barrier: the launcher ended them at once (a job
            // left to hang would end at the 60 s timeout).
            assert!(r.elapsed < Duration::from_secs(15), "took {:?}", r.elapsed);
        }
    }
}
