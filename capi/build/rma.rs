//! Generates the typed and sized put/get routines (see `src/rma.rs` for their bodies).

use crate::types::{RMA, SIZED};
use std::fmt::Write;

/// The Rust source of every typed and sized put/get, p/g and their nbi forms.
pub fn generate() -> String {
    let mut s = String::new();
    for t in RMA {
        let (name, c, rust) = (t.name, t.c, t.rust);
        block(&mut s, &format!("shmem_{name}"), c, rust);
        // `long double` passes by value in x87 registers, which Rust cannot name: its
        // p and g are inline functions in shmem.h over the put and get here.
        if rust != "LongDouble" {
            let _ = write!(
                s,
                r#"
/// `shmem_{name}_p`: puts one `{c}` into `dest` on PE `pe`.
///
/// # Safety
/// `dest` must be a symmetric address.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_p(dest: *mut {rust}, value: {rust}, pe: i32) {{
    // SAFETY: `value` lives on this frame for the whole call.
    unsafe {{ put("shmem_{name}_p", dest.cast(), (&raw const value).cast(), 1, size_of::<{rust}>(), pe, false) }}
}}

/// `shmem_{name}_g`: gets one `{c}` from `source` on PE `pe`.
///
/// # Safety
/// `source` must be a symmetric address.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_g(source: *const {rust}, pe: i32) -> {rust} {{
    let mut value = <{rust} as bytemuck::Zeroable>::zeroed();
    // SAFETY: `value` is this frame's, writable and of the element's size.
    unsafe {{ get("shmem_{name}_g", (&raw mut value).cast(), source.cast(), 1, size_of::<{rust}>(), pe, false) }};
    value
}}
"#
            );
        }
    }
    for &(bits, rust) in SIZED {
        block(
            &mut s,
            &format!("shmem_{bits}"),
            &format!("{bits}-bit"),
            rust,
        );
    }
    s.push_str(&block_of("shmem_mem", "byte", "u8", "mem"));
    s
}

fn block(s: &mut String, prefix: &str, what: &str, rust: &str) {
    s.push_str(&block_of(prefix, what, rust, ""));
}

/// put, get, put_nbi, get_nbi for one type. `prefix` is `shmem_long` (typed: names
/// `shmem_long_put`) or `shmem_64` (sized: names `shmem_put64`); `mem` only makes the
/// nbi forms of `putmem`/`getmem` (the blocking ones are written by hand).
fn block_of(prefix: &str, what: &str, rust: &str, mem: &str) -> String {
    let mut s = String::new();
    let name = |op: &str| -> String {
        if let Some(bits) = prefix
            .strip_prefix("shmem_")
            .filter(|b| b.parse::<u32>().is_ok())
        {
            let (base, nbi) = op.split_once('_').map_or((op, ""), |(b, n)| (b, n));
            if nbi.is_empty() {
                format!("shmem_{base}{bits}")
            } else {
                format!("shmem_{base}{bits}_{nbi}")
            }
        } else if mem == "mem" {
            let (base, nbi) = op.split_once('_').map_or((op, ""), |(b, n)| (b, n));
            format!("shmem_{base}mem_{nbi}")
        } else {
            format!("{prefix}_{op}")
        }
    };
    let ops: &[(&str, bool, bool)] = if mem == "mem" {
        &[("put_nbi", true, true), ("get_nbi", false, true)]
    } else {
        &[
            ("put", true, false),
            ("get", false, false),
            ("put_nbi", true, true),
            ("get_nbi", false, true),
        ]
    };
    for &(op, is_put, nbi) in ops {
        let f = name(op);
        let (dir, body, dest_ty, src_ty) = if is_put {
            (
                "copies `nelems` elements from `source` into the symmetric `dest` on PE `pe`",
                "put",
                "*mut",
                "*const",
            )
        } else {
            (
                "copies `nelems` elements of the symmetric `source` on PE `pe` into `dest`",
                "get",
                "*mut",
                "*const",
            )
        };
        let when = if nbi {
            " (non-blocking: complete at the next quiet)"
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"
/// `{f}`: {dir}{when}; elements are {what}s.
///
/// # Safety
/// The private buffer must be valid for `nelems` elements; the other address must be symmetric.
#[no_mangle]
pub unsafe extern "C" fn {f}(dest: {dest_ty} {rust}, source: {src_ty} {rust}, nelems: usize, pe: i32) {{
    // SAFETY: the caller's contract, passed on.
    unsafe {{ {body}("{f}", dest.cast(), source.cast(), nelems, size_of::<{rust}>(), pe, {nbi}) }}
}}
"#
        );
    }
    s
}
