//! Setup, query, the symmetric heap and the fatal errors of the C interface, as
//! C programs under `tests/c/setup_*.c` run them on 4 PEs under both conduits; a
//! configure/make project built with `CC=shmemcc`; the wrapper's `-showme`.

mod common;

use common::{build, run_ok};
use shmemplus_runtime::JobOutcome;
use shmemplus_tests::{assert_all_ok, dump, run, run_with};
use std::path::{Path, PathBuf};
use std::process::Command;

const CONDUITS: [&[(&str, &str)]; 2] = [&[], &[("SHMEMPLUS_CONDUIT", "am")]];

#[test]
fn query_routines_answer_on_four_pes_under_both_conduits() {
    for env in CONDUITS {
        run_ok("setup_query.c", 4, env);
    }
}

#[test]
fn memory_routines_keep_their_promises_under_both_conduits() {
    for env in CONDUITS {
        run_ok("setup_memory.c", 4, env);
    }
    run_ok("setup_memory.c", 4, &[("SHMEMPLUS_PROFILE", "novo-g")]);
}

#[test]
fn shmem_ptr_and_globals_on_one_node_and_on_four_under_both_conduits() {
    let exe = build("setup_ptr.c", &[]);
    for env in CONDUITS {
        for ppn in [Some(4), None] {
            let report = run_with(&exe.to_string_lossy(), 4, ppn, &[], env);
            assert_all_ok(
                &report,
                "setup_ptr",
                &format!("{env:?}, {ppn:?} PEs per node"),
            );
        }
    }
    // Two nodes of two PEs on the emulated Mu cluster: the node peer has a pointer,
    // the PE across the network none.
    let env = [("SHMEMPLUS_PROFILE", "mu")];
    let report = run_with(&exe.to_string_lossy(), 4, Some(2), &[], &env);
    assert_all_ok(&report, "setup_ptr", "mu, 2 PEs per node");
}

#[test]
fn a_legacy_program_runs_without_shmem_finalize() {
    for env in CONDUITS {
        run_ok("setup_legacy.c", 4, env);
    }
}

#[test]
fn setup_compiles_as_cxx_with_the_overloads() {
    run_ok("setup_cxx.cpp", 4, &[]);
}

/// Runs `setup_errors.c` in `mode` on 4 PEs; asserts the job failed and its output
/// holds every one of `wanted`.
fn fails_with(mode: &str, wanted: &[&str]) {
    let exe = build("setup_errors.c", &[]);
    let report = run(&exe.to_string_lossy(), 4, &[mode], &[]);
    let all = dump(&report);
    assert_ne!(report.outcome, JobOutcome::Success, "{mode}: {all}");
    for w in wanted {
        assert!(all.contains(w), "{mode}: no {w:?} in\n{all}");
    }
}

#[test]
fn a_bad_pe_names_the_pe_the_routine_and_the_argument() {
    fails_with(
        "bad-pe",
        &["shmemplus: PE 1: shmem_long_put: argument pe: -3 is not a PE number"],
    );
}

#[test]
fn a_private_address_is_not_symmetric() {
    fails_with(
        "not-symmetric",
        &[
            "PE 1: shmem_long_put: argument dest:",
            "is not a symmetric address",
        ],
    );
}

#[test]
fn an_exhausted_heap_names_the_size_and_the_setting() {
    fails_with(
        "heap-exhausted",
        &[
            "shmem_malloc: symmetric heap exhausted",
            "SHMEM_SYMMETRIC_SIZE",
        ],
    );
}

#[test]
fn a_call_before_init_says_so_with_the_launchers_pe_number() {
    fails_with("before-init", &["shmem_malloc: called before shmem_init"]);
    // Every PE that got to say it named itself (the first to exit ends the others).
    let exe = build("setup_errors.c", &[]);
    let report = run(&exe.to_string_lossy(), 4, &["before-init"], &[]);
    let said: Vec<usize> = (0..4)
        .filter(|&pe| report.stderr[pe].contains("called before shmem_init"))
        .collect();
    assert!(!said.is_empty(), "{}", dump(&report));
    for pe in said {
        let line = format!("shmemplus: PE {pe}: shmem_malloc: called before shmem_init");
        assert!(report.stderr[pe].contains(&line), "{}", dump(&report));
    }
}

#[test]
fn an_alignment_above_what_heap_addresses_have_is_refused_on_every_pe() {
    fails_with(
        "big-alignment",
        &["shmem_align: invalid argument: alignment 4194304 is above 2097152"],
    );
}

#[test]
fn finalize_twice_and_calls_after_finalize_say_so() {
    fails_with(
        "finalize-twice",
        &["shmemplus: PE 1: shmem_finalize: called twice"],
    );
    fails_with(
        "after-finalize",
        &["shmemplus: PE 1: shmem_barrier_all: called after shmem_finalize"],
    );
}

#[test]
fn global_exit_ends_every_pe_with_its_status() {
    let exe = build("setup_errors.c", &[]);
    let report = run(&exe.to_string_lossy(), 4, &["global-exit"], &[]);
    assert!(
        matches!(
            report.outcome,
            JobOutcome::GlobalExit { pe: 2, code: 7, .. }
        ),
        "{}",
        dump(&report)
    );
}

#[test]
fn an_alignment_that_is_not_a_power_of_two_is_named() {
    fails_with(
        "bad-alignment",
        &["shmem_align: argument alignment: 48 is not a power of two"],
    );
}

#[test]
fn freeing_twice_names_the_pointer() {
    fails_with(
        "free-twice",
        &[
            "shmem_free: argument ptr:",
            "not the start of a live symmetric allocation",
        ],
    );
}

/// The wrapper `shmemcc` built with this crate.
fn shmemcc() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shmemcc"))
}

#[test]
fn showme_prints_the_command_it_would_run() {
    let out = Command::new(shmemcc())
        .args(["-showme", "-O2", "prog.c", "-o", "prog"])
        .output()
        .expect("shmemcc runs");
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for part in ["-I", "-O2 prog.c -o prog", "-lshmemplus", "-Wl,-rpath,"] {
        assert!(line.contains(part), "no {part:?} in {line}");
    }
    let compile_only = Command::new(shmemcc())
        .args(["-showme", "-c", "prog.c"])
        .output()
        .expect("shmemcc runs");
    let line = String::from_utf8_lossy(&compile_only.stdout);
    assert!(!line.contains("-lshmemplus"), "-c links: {line}");
}

/// Copies `tests/make_project` into a fresh scratch directory.
fn fresh_make_project() -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/make_project");
    let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join("make_project");
    let _ = std::fs::remove_dir_all(&to);
    std::fs::create_dir_all(&to).expect("scratch directory");
    for entry in std::fs::read_dir(&from).expect("tests/make_project") {
        let entry = entry.expect("a directory entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
    to
}

#[test]
fn a_configure_and_make_project_builds_with_cc_set_to_shmemcc_and_runs() {
    build("setup_query.c", &[]); // builds libshmemplus, which shmemcc links
    let dir = fresh_make_project();
    let sh = |script: &str| {
        let out = Command::new("sh")
            .args(["-c", script])
            .current_dir(&dir)
            .env("CC", shmemcc())
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{script} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let configured = sh("./configure");
    assert!(configured.contains("shmemcc"), "{configured}");
    let made = sh("make");
    assert!(made.contains("-c") && made.contains("-o"), "{made}");
    let exe = dir.join("ring");
    for env in CONDUITS {
        let report = run(&exe.to_string_lossy(), 4, &[], env);
        assert_all_ok(&report, "ring", "the make project's ring");
    }
    // The run path shmemcc linked with finds the library: no LD_LIBRARY_PATH needed.
    let alone = Command::new(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("runs");
    assert!(
        alone.status.success() && String::from_utf8_lossy(&alone.stdout).contains("PE 0: ring ok"),
        "{alone:?}"
    );
}
