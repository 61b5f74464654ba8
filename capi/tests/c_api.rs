//! The C interface, tested as users meet it: C and C++ programs under `tests/c/`,
//! compiled with `shmemcc`/`shmemc++` (the wrappers built with this crate) and run as
//! multi-PE jobs through the launcher. Each program checks its own results and prints
//! `PE <pe>: <name> ok`; a failed check exits the PE non-zero.

use shmemplus_tests::{assert_all_ok, dump, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `tests/c/<source>` with `shmemcc` (or `shmemc++` for `.cpp`) into this
/// test target's scratch directory and returns the program's path.
pub fn build(source: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(source);
    let shmemcc = PathBuf::from(env!("CARGO_BIN_EXE_shmemcc"));
    let cxx = source.ends_with(".cpp");
    let wrapper = if cxx {
        shmemcc.with_file_name("shmemc++")
    } else {
        shmemcc
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&out_dir).expect("scratch directory");
    let stem = Path::new(source).file_stem().expect("a file name");
    let suffix = extra.join("").replace(['-', '=', ' '], "_");
    let exe = out_dir.join(format!("{}{suffix}", stem.to_string_lossy()));
    let std = if cxx { "-std=c++11" } else { "-std=c11" };
    let output = Command::new(&wrapper)
        .args([std, "-O2", "-g", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("the wrapper runs");
    assert!(
        output.status.success(),
        "{} {} failed:\n{}{}",
        wrapper.display(),
        src.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Builds `source` and runs it as a job of `n` PEs with `env`; asserts every PE
/// reported `<name> ok`.
pub fn run_ok(source: &str, n: u32, env: &[(&str, &str)]) {
    let exe = build(source, &[]);
    let name = Path::new(source)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let report = run(&exe.to_string_lossy(), n, &[], env);
    assert_all_ok(&report, &name, &format!("{source} on {n} PEs with {env:?}"));
}

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
