//! The RMA family of the C interface (OpenSHMEM 1.5 section 9.5), as C and C++
//! programs meet it: typed, sized and memory put/get, nbi, p/g, strided iput/iget,
//! put with signal and the context form of each, the C11 type-generic names and the
//! C++ overloads; run on 4 PEs under both conduits and on the novo-g cluster (one PE
//! per node, so every transfer crosses the network). Also: wrong arguments end the
//! job naming the routine and the argument.

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Runs `source` on 4 PEs under `shm` and `am`.
fn both_conduits(source: &str) {
    run_ok(source, 4, &[]);
    run_ok(source, 4, &[("SHMEMPLUS_CONDUIT", "am")]);
}

#[test]
fn typed_sized_and_memory_put_get_p_g_and_their_ctx_forms() {
    both_conduits("rma_typed.c");
}

#[test]
fn strided_iput_and_iget_with_strides_one_to_three() {
    both_conduits("rma_strided.c");
}

#[test]
fn put_signal_set_and_add_seen_through_signal_fetch_and_the_data() {
    both_conduits("rma_signal.c");
}

#[test]
fn c11_generic_names_with_and_without_a_context() {
    both_conduits("rma_generic.c");
}

#[test]
fn cxx_overloads_with_and_without_a_context() {
    both_conduits("rma_overloads.cpp");
}

#[test]
fn the_family_runs_across_the_novo_g_network() {
    for source in ["rma_typed.c", "rma_strided.c", "rma_signal.c"] {
        run_ok(source, 4, &[("SHMEMPLUS_PROFILE", "novo-g")]);
    }
}

/// Runs `rma_bad.c` in `mode` on 2 PEs; asserts the job failed and PE 1 said
/// `routine: argument arg: ...why...`.
fn ends_the_job(mode: &str, routine: &str, arg: &str, why: &str) {
    // Built once: the tests run in parallel and would write the same file.
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| build("rma_bad.c", &[]));
    let report = run(&exe.to_string_lossy(), 2, &[mode], &[]);
    let all = dump(&report);
    assert!(
        all.contains(&format!("PE 1: {routine}: argument {arg}: ")) && all.contains(why),
        "{all}"
    );
    assert_ne!(
        report.outcome,
        shmemplus_runtime::JobOutcome::Success,
        "{all}"
    );
}

#[test]
fn a_get_from_an_address_that_is_not_symmetric_ends_the_job() {
    ends_the_job(
        "source",
        "shmem_long_get",
        "source",
        "is not a symmetric address",
    );
}

#[test]
fn a_negative_stride_ends_the_job() {
    ends_the_job("stride", "shmem_long_iput", "dst", "-1 is not a stride");
}

#[test]
fn a_signal_operator_other_than_set_or_add_ends_the_job() {
    ends_the_job("sig_op", "shmem_long_put_signal", "sig_op", "7 is neither");
}

#[test]
fn every_rma_routine_the_header_declares_is_in_the_library() {
    build("rma_typed.c", &[]); // builds the library too
    let shmemcc = PathBuf::from(env!("CARGO_BIN_EXE_shmemcc"));
    let out = Command::new(&shmemcc)
        .args(["-std=c11", "-E", "-P", "-x", "c", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("piped")
                .write_all(b"#include <shmem.h>\n")?;
            child.wait_with_output()
        })
        .expect("the wrapper preprocesses");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    // `shmem_..._put(` and friends outside `static inline` definitions.
    let rma = |name: &str| {
        ["put", "get", "_p", "_g", "signal_fetch"]
            .iter()
            .any(|op| name.contains(op))
    };
    let declared: BTreeSet<String> = text
        .split(';')
        .filter(|decl| !decl.contains("static inline") && !decl.contains('{'))
        .filter_map(|decl| {
            let at = decl.find("shmem_")?;
            let name: String = decl[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            decl[at + name.len()..]
                .trim_start()
                .starts_with('(')
                .then_some(name)
        })
        .filter(|name| rma(name))
        .collect();
    assert!(
        declared.len() > 500,
        "{} RMA routines declared",
        declared.len()
    );
    let lib = shmemcc.with_file_name("libshmemplus.so");
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    let exported: BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let missing: Vec<_> = declared.difference(&exported).collect();
    assert!(missing.is_empty(), "declared, not exported: {missing:?}");
}
