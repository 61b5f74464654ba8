//! Generates the typed point-to-point synchronization routines (see `src/sync.rs` for
//! their bodies): `shmem_TYPENAME_wait_until`, `_test` and their all/any/some and
//! vector forms, and the deprecated `shmem_TYPENAME_wait`.

use crate::types::P2P;
use std::fmt::Write;

/// One multi-variable routine: its name after the type, whether it waits, its `Mode`,
/// whether it takes `indices` and whether it compares with a vector of values.
struct Many {
    name: &'static str,
    wait: bool,
    mode: &'static str,
    vector: bool,
}

const fn many(name: &'static str, wait: bool, mode: &'static str, vector: bool) -> Many {
    Many {
        name,
        wait,
        mode,
        vector,
    }
}

const MANY: &[Many] = &[
    many("wait_until_all", true, "All", false),
    many("wait_until_any", true, "Any", false),
    many("wait_until_some", true, "Some", false),
    many("wait_until_all_vector", true, "All", true),
    many("wait_until_any_vector", true, "Any", true),
    many("wait_until_some_vector", true, "Some", true),
    many("test_all", false, "All", false),
    many("test_any", false, "Any", false),
    many("test_some", false, "Some", false),
    many("test_all_vector", false, "All", true),
    many("test_any_vector", false, "Any", true),
    many("test_some_vector", false, "Some", true),
];

/// The Rust source of every typed wait and test.
pub fn generate() -> String {
    let mut s = String::new();
    for t in P2P {
        let (name, c, rust) = (t.name, t.c, t.rust);
        let _ = write!(
            s,
            r#"
/// `shmem_{name}_wait_until`: waits until this PE's `ivar <cmp> cmp_value`; elements are `{c}`s.
///
/// # Safety
/// `ivar` must be a symmetric address of this PE.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_wait_until(ivar: *mut {rust}, cmp: i32, cmp_value: {rust}) {{
    wait_until::<{rust}>("shmem_{name}_wait_until", ivar.cast(), cmp, cmp_value)
}}

/// `shmem_{name}_wait` (deprecated): waits until this PE's `ivar` differs from `cmp_value`.
///
/// # Safety
/// `ivar` must be a symmetric address of this PE.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_wait(ivar: *mut {rust}, cmp_value: {rust}) {{
    wait_until::<{rust}>("shmem_{name}_wait", ivar.cast(), CMP_NE, cmp_value)
}}

/// `shmem_{name}_test`: 1 if this PE's `ivar <cmp> cmp_value` holds now, else 0.
///
/// # Safety
/// `ivar` must be a symmetric address of this PE.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_test(ivar: *mut {rust}, cmp: i32, cmp_value: {rust}) -> i32 {{
    test::<{rust}>("shmem_{name}_test", ivar.cast(), cmp, cmp_value)
}}
"#
        );
        for m in MANY {
            let f = format!("shmem_{name}_{}", m.name);
            let indices = m.mode == "Some";
            let mut params = vec![format!("ivars: *mut {rust}"), "nelems: usize".to_string()];
            if indices {
                params.push("indices: *mut usize".to_string());
            }
            params.push("status: *const i32".to_string());
            params.push("cmp: i32".to_string());
            let values = if m.vector {
                params.push(format!("cmp_values: *mut {rust}"));
                "Values::Each(cmp_values)"
            } else {
                params.push(format!("cmp_value: {rust}"));
                "Values::One(cmp_value)"
            };
            // `watch` gives the C result; a waiting `_all` has none, a testing one is an int.
            let (ret, head, tail) = match (m.mode, m.wait) {
                ("All", true) => ("", "", ";"),
                ("All", false) => (" -> i32", "let all = ", ";\n    i32::from(all != 0)"),
                _ => (" -> usize", "", ""),
            };
            let what = match (m.mode, m.wait) {
                ("All", true) => "waits until every included element of this PE's `ivars` satisfies the comparison",
                ("Any", true) => "waits until an included element satisfies the comparison and returns its index (`SIZE_MAX` if none is included)",
                ("Some", true) => "waits until some included elements satisfy the comparison, stores their indices in `indices` and returns how many",
                ("All", false) => "1 if every included element of this PE's `ivars` satisfies the comparison now, else 0",
                ("Any", false) => "the index of an included element that satisfies the comparison now, or `SIZE_MAX`",
                _ => "stores in `indices` the indices of the included elements that satisfy the comparison now and returns how many",
            };
            let each = if m.vector {
                " (element `i` against `cmp_values[i]`)"
            } else {
                ""
            };
            let idx = if indices {
                "indices, "
            } else {
                "std::ptr::null_mut(), "
            };
            let _ = write!(
                s,
                r#"
/// `{f}`: {what}{each}; elements are `{c}`s.
///
/// # Safety
/// `ivars` must be a symmetric address of this PE with `nelems` elements; `status`
/// null or `nelems` ints; the `indices` and `cmp_values` arrays, when taken, `nelems` long.
#[no_mangle]
pub unsafe extern "C" fn {f}({params}){ret} {{
    // SAFETY: the caller's contract, passed on.
    {head}unsafe {{ watch::<{rust}>("{f}", {wait}, Mode::{mode}, ivars.cast_const(), nelems, {idx}status, cmp, {values}) }}{tail}
}}
"#,
                params = params.join(", "),
                wait = m.wait,
                mode = m.mode,
            );
        }
    }
    s
}
