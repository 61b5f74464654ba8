//! Build script of the C interface. It owns two things:
//!
//! - the typed C routines (`shmem_long_put`, `shmem_int_atomic_fetch_add`, ...): the
//!   OpenSHMEM 1.5 tables of types (`types.rs`) times the routine families (one file
//!   each) give Rust source in `OUT_DIR`, which the crate's modules `include!`. Each
//!   generated routine is one line that calls the family's generic body, so the
//!   tables, not hundreds of hand-written copies, say which routines exist;
//! - the other names of the tools in the output directory: `shmemc++` (a Cargo
//!   binary's name cannot hold `+`), `oshcc`, `oshc++` and `oshrun`, as symbolic
//!   links beside `shmemcc` and `shmemrun`.
//!
//! It must not compile C or touch anything outside `OUT_DIR` and the output directory.

mod amo;
mod coll;
mod rma;
mod sync;
mod types;

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    write(&out, "rma_typed.rs", &rma::generate());
    write(&out, "amo_typed.rs", &amo::generate());
    write(&out, "sync_typed.rs", &sync::generate());
    write(&out, "coll_typed.rs", &coll::generate());
    link_tool_names(&out);
}

/// Writes one generated file (only when its text changed, so that builds stay
/// incremental).
fn write(out: &Path, name: &str, text: &str) {
    let path = out.join(name);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        std::fs::write(&path, text).expect("OUT_DIR is writable");
    }
}

/// Creates `shmemc++`, `oshcc`, `oshc++` (links to `shmemcc`) and `oshrun` (to
/// `shmemrun`) in the profile's output directory (`target/<profile>`), which is three
/// levels above `OUT_DIR`. Links are relative, so the directory can be moved.
fn link_tool_names(out: &Path) {
    let Some(dir) = out.ancestors().nth(3) else {
        return;
    };
    for (name, to) in [
        ("shmemc++", "shmemcc"),
        ("oshcc", "shmemcc"),
        ("oshc++", "shmemcc"),
        ("oshrun", "shmemrun"),
    ] {
        let link = dir.join(name);
        if std::fs::read_link(&link).is_ok_and(|t| t == Path::new(to)) {
            continue;
        }
        let _ = std::fs::remove_file(&link);
        if let Err(e) = std::os::unix::fs::symlink(to, &link) {
            println!("cargo:warning=cannot create {}: {e}", link.display());
        }
    }
}
