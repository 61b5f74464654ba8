//! The C interface, tested as users meet it: C and C++ programs under `tests/c/`,
//! compiled with `shmemcc`/`shmemc++` (the wrappers built with this crate) and run as
//! multi-PE jobs through the launcher. Each program checks its own results and prints
//! `PE <pe>: <name> ok`; a failed check exits the PE non-zero.

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};
use std::process::Command;

#[test]
fn hello_runs_on_four_pes_under_both_conduits() {
    run_ok("hello.c", 4, &[]);
    run_ok("hello.c", 4, &[("SHMEMPLUS_CONDUIT", "am")]);
}

#[test]
fn a_program_runs_without_a_launcher_as_one_pe() {
    let exe = build("hello.c", &[]);
    let out = Command::new(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("runs");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("PE 0: hello ok"),
        "{out:?}"
    );
}

#[test]
fn a_bad_pe_ends_the_job_naming_the_pe_the_routine_and_the_argument() {
    let exe = build("bad_pe.c", &[]);
    let report = run(&exe.to_string_lossy(), 2, &[], &[]);
    let all = dump(&report);
    assert!(
        all.contains("PE 1: shmem_long_p:") && all.contains("invalid PE 7"),
        "{all}"
    );
    assert_ne!(
        report.outcome,
        shmemplus_runtime::JobOutcome::Success,
        "{all}"
    );
}

#[test]
fn the_readme_quick_start_prints_what_each_left_neighbour_sent() {
    // capi/examples/hello.c (the README's C program); the define only gives its
    // binary a name of its own beside tests/c/hello.c's.
    let exe = build("../../examples/hello.c", &["-DQUICK_START"]);
    let report = run(&exe.to_string_lossy(), 4, &[], &[]);
    for (me, out) in report.stdout.iter().enumerate() {
        let left = (me + 3) % 4;
        let line = format!("PE {me} of 4: PE {left} sent {left} and {}", left * left);
        assert!(out.contains(&line), "no {line:?}\n{}", dump(&report));
    }
}
