//! What every C test needs: compiling a program under `tests/c/` with the wrappers
//! and running it as a job.

#![allow(dead_code)] // each test target uses its own part

use shmemplus_tests::{assert_all_ok, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `tests/c/<source>` with `shmemcc` (or `shmemc++` for `.cpp`) into this
/// test target's scratch directory and returns the program's path.
pub fn build(source: &str, extra: &[&str]) -> PathBuf {
    ensure_library();
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
    // Once per test process: tests run in parallel, and rewriting a program another
    // test is starting fails that start with "Text file busy".
    static BUILT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.contains(&exe) {
        return exe;
    }
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
    built.push(exe.clone());
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

/// Builds `libshmemplus.so` once per test run: Cargo builds a test's binaries but not
/// the C library of its own package, which the wrappers link. A test compiled without
/// debug assertions is a release build, so the library is built for that profile.
fn ensure_library() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(["build", "--quiet", "-p", "shmemplus-capi", "--lib"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if !cfg!(debug_assertions) {
            command.arg("--release");
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building libshmemplus failed: {status}");
    });
}
