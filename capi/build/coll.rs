//! Generates the typed collectives (see `src/coll.rs` and `src/active_set.rs` for
//! their bodies): broadcast, collect, fcollect, alltoall(s) for every standard RMA
//! type, the reductions of Table 10, and the legacy sized and `_to_all` forms.

use crate::types::{
    Ty, REDUCE_ARITH, REDUCE_BITWISE, REDUCE_COMPLEX, RMA, TO_ALL_ARITH, TO_ALL_BITWISE,
};
use std::fmt::Write;

/// The Rust source of every generated collective.
pub fn generate() -> String {
    let mut s = String::new();
    for t in RMA {
        team_moves(&mut s, t);
    }
    let ops = |names: &[&'static str]| -> Vec<&'static str> { names.to_vec() };
    for (table, names, factor) in [
        (REDUCE_BITWISE, ops(&["and", "or", "xor"]), 1),
        (REDUCE_ARITH, ops(&["max", "min", "sum", "prod"]), 1),
        (REDUCE_COMPLEX, ops(&["sum", "prod"]), 1),
    ] {
        for t in table {
            for op in &names {
                reduce(&mut s, t, op, factor);
            }
        }
    }
    for (table, names, factor) in [
        (TO_ALL_BITWISE, ops(&["and", "or", "xor"]), 1),
        (TO_ALL_ARITH, ops(&["max", "min", "sum", "prod"]), 1),
        (REDUCE_COMPLEX, ops(&["sum", "prod"]), 1),
    ] {
        for t in table {
            for op in &names {
                to_all(&mut s, t, op, factor);
            }
        }
    }
    for (bits, rust) in [(32, "u32"), (64, "u64")] {
        legacy_moves(&mut s, bits, rust);
    }
    s
}

/// The Rust name of a reduction operator.
fn op_variant(op: &str) -> &'static str {
    match op {
        "and" => "And",
        "or" => "Or",
        "xor" => "Xor",
        "max" => "Max",
        "min" => "Min",
        "sum" => "Sum",
        _ => "Prod",
    }
}

/// broadcast, collect, fcollect, alltoall, alltoalls of one type over a team.
fn team_moves(s: &mut String, t: &Ty) {
    let (name, c, rust) = (t.name, t.c, t.rust);
    let team = "team: *const TeamHandle, dest: *mut";
    let _ = write!(
        s,
        r#"
/// `shmem_{name}_broadcast`: copies `nelems` `{c}`s of `source` on the team's PE `pe_root` into `dest` on every member.
///
/// # Safety
/// `team` must be a team handle; `dest` and `source` symmetric addresses.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_broadcast({team} {rust}, source: *const {rust}, nelems: usize, pe_root: i32) -> i32 {{
    // SAFETY: the caller's contract, passed on.
    unsafe {{ broadcast::<{rust}>("shmem_{name}_broadcast", team, dest.cast(), source.cast(), nelems, pe_root) }}
}}

/// `shmem_{name}_alltoalls`: the all-to-all exchange of `nelems` `{c}`s per block, `sst` apart in `source` and `dst` apart in `dest`.
///
/// # Safety
/// `team` must be a team handle; `dest` and `source` symmetric addresses.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_alltoalls({team} {rust}, source: *const {rust}, dst: isize, sst: isize, nelems: usize) -> i32 {{
    // SAFETY: the caller's contract, passed on.
    unsafe {{ alltoalls::<{rust}>("shmem_{name}_alltoalls", team, dest.cast(), source.cast(), dst, sst, nelems) }}
}}
"#
    );
    for (op, what) in [
        ("collect", "concatenates every member's `nelems` `{c}`s (counts may differ) into `dest` in team order"),
        ("fcollect", "concatenates `nelems` `{c}`s of every member into `dest` in team order"),
        ("alltoall", "sends block j (`nelems` `{c}`s) of every member's `source` to member j"),
    ] {
        let what = what.replace("{c}", c);
        let _ = write!(
            s,
            r#"
/// `shmem_{name}_{op}`: {what}.
///
/// # Safety
/// `team` must be a team handle; `dest` and `source` symmetric addresses.
#[no_mangle]
pub unsafe extern "C" fn shmem_{name}_{op}({team} {rust}, source: *const {rust}, nelems: usize) -> i32 {{
    // SAFETY: the caller's contract, passed on.
    unsafe {{ {op}::<{rust}>("shmem_{name}_{op}", team, dest.cast(), source.cast(), nelems) }}
}}
"#
        );
    }
}

/// `shmem_TYPE_OP_reduce`; `factor` Rust elements per C element.
fn reduce(s: &mut String, t: &Ty, op: &str, factor: usize) {
    let (name, c, rust) = (t.name, t.c, t.rust);
    let f = format!("shmem_{name}_{op}_reduce");
    let variant = op_variant(op);
    let _ = write!(
        s,
        r#"
/// `{f}`: combines `nreduce` `{c}`s of every member's `source` with `{op}` into `dest`.
///
/// # Safety
/// `team` must be a team handle; `dest` and `source` symmetric addresses.
#[no_mangle]
pub unsafe extern "C" fn {f}(team: *const TeamHandle, dest: *mut c_void, source: *const c_void, nreduce: usize) -> i32 {{
    let n = crate::addr::bytes_of("{f}", nreduce, {factor});
    // SAFETY: the caller's contract, passed on.
    unsafe {{ reduce::<{rust}>("{f}", team, dest, source, n, ReduceOp::{variant}) }}
}}
"#
    );
}

/// The legacy `shmem_TYPE_OP_to_all` over an active set.
fn to_all(s: &mut String, t: &Ty, op: &str, factor: usize) {
    let (name, c, rust) = (t.name, t.c, t.rust);
    let f = format!("shmem_{name}_{op}_to_all");
    let variant = op_variant(op);
    let _ = write!(
        s,
        r#"
/// `{f}`: combines `nreduce` `{c}`s of every active-set member's `source` with `{op}` into `dest` (legacy).
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses; `p_wrk` is not used.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn {f}(dest: *mut c_void, source: *const c_void, nreduce: i32, pe_start: i32, log_pe_stride: i32, pe_size: i32, p_wrk: *mut c_void, p_sync: *mut c_long) {{
    let _ = p_wrk;
    let set = crate::active_set::ActiveSet::new("{f}", pe_start, log_pe_stride, pe_size);
    // SAFETY: the caller's contract, passed on.
    unsafe {{ crate::active_set::to_all::<{rust}>("{f}", set, dest, source, nreduce, {factor}, ReduceOp::{variant}, p_sync) }}
}}
"#
    );
}

/// The legacy sized broadcast, collect, fcollect, alltoall, alltoalls over an active set.
fn legacy_moves(s: &mut String, bits: u32, rust: &str) {
    let set = "pe_start: i32, log_pe_stride: i32, pe_size: i32, p_sync: *mut c_long";
    let _ = write!(
        s,
        r#"
/// `shmem_broadcast{bits}`: copies `nelems` {bits}-bit elements of `source` on the active set's PE `pe_root` into `dest` on the other members (legacy).
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn shmem_broadcast{bits}(dest: *mut c_void, source: *const c_void, nelems: usize, pe_root: i32, {set}) {{
    let set = crate::active_set::ActiveSet::new("shmem_broadcast{bits}", pe_start, log_pe_stride, pe_size);
    // SAFETY: the caller's contract, passed on.
    unsafe {{ crate::active_set::broadcast::<{rust}>("shmem_broadcast{bits}", set, dest, source, nelems, pe_root, p_sync) }}
}}

/// `shmem_alltoalls{bits}`: the all-to-all exchange of `nelems` {bits}-bit elements per block, `sst` apart in `source` and `dst` apart in `dest` (legacy).
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the C signature
pub unsafe extern "C" fn shmem_alltoalls{bits}(dest: *mut c_void, source: *const c_void, dst: isize, sst: isize, nelems: usize, {set}) {{
    let set = crate::active_set::ActiveSet::new("shmem_alltoalls{bits}", pe_start, log_pe_stride, pe_size);
    // SAFETY: the caller's contract, passed on.
    unsafe {{ crate::active_set::alltoalls::<{rust}>("shmem_alltoalls{bits}", set, dest, source, dst, sst, nelems, p_sync) }}
}}
"#
    );
    for op in ["collect", "fcollect", "alltoall"] {
        let _ = write!(
            s,
            r#"
/// `shmem_{op}{bits}`: the legacy {op} of `nelems` {bits}-bit elements over an active set.
///
/// # Safety
/// `dest`, `source` and `p_sync` must be symmetric addresses.
#[no_mangle]
pub unsafe extern "C" fn shmem_{op}{bits}(dest: *mut c_void, source: *const c_void, nelems: usize, {set}) {{
    let set = crate::active_set::ActiveSet::new("shmem_{op}{bits}", pe_start, log_pe_stride, pe_size);
    // SAFETY: the caller's contract, passed on.
    unsafe {{ crate::active_set::{op}::<{rust}>("shmem_{op}{bits}", set, dest, source, nelems, p_sync) }}
}}
"#
        );
    }
}
