//! Generates the RMA family (OpenSHMEM 1.5 section 9.5): put, get, their nbi forms,
//! p/g, iput/iget and put_signal[_nbi] in typed, sized and memory forms, each with
//! its context form (`shmem_ctx_...`). The bodies are in `src/rma.rs` and
//! `src/signal.rs`; each generated routine is one call of one of them.

use crate::types::{RMA, SIZED};
use std::fmt::Write;

/// How a routine set names and types its elements.
#[derive(Clone, Copy)]
enum Elems {
    /// `shmem_long_put`: TYPENAME, C type, Rust type.
    Typed(&'static str, &'static str, &'static str),
    /// `shmem_put64`: bits, Rust type of that size.
    Sized(u32, &'static str),
    /// `shmem_putmem`: bytes.
    Mem,
}

impl Elems {
    /// The routine's name for operation `op` (`put`, `put_nbi`, `iget`, ...).
    fn name(self, ctx: bool, op: &str) -> String {
        let shmem = if ctx { "shmem_ctx_" } else { "shmem_" };
        let (base, rest) = op.split_once('_').map_or((op, ""), |(b, r)| (b, r));
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!("_{rest}")
        };
        match self {
            Elems::Typed(name, ..) => format!("{shmem}{name}_{op}"),
            Elems::Sized(bits, _) => format!("{shmem}{base}{bits}{rest}"),
            Elems::Mem => format!("{shmem}{base}mem{rest}"),
        }
    }

    /// The Rust type of one element.
    fn rust(self) -> &'static str {
        match self {
            Elems::Typed(_, _, rust) | Elems::Sized(_, rust) => rust,
            Elems::Mem => "u8",
        }
    }

    /// The pointee of the C pointers (`void` for the sized and memory forms).
    fn pointee(self) -> &'static str {
        match self {
            Elems::Typed(_, _, rust) => rust,
            _ => "c_void",
        }
    }

    /// What one element is, for the doc line.
    fn what(self) -> String {
        match self {
            Elems::Typed(_, c, _) => format!("`{c}`"),
            Elems::Sized(bits, _) => format!("{bits}-bit element"),
            Elems::Mem => "byte".to_string(),
        }
    }

    /// The operations this set has.
    fn ops(self) -> &'static [&'static str] {
        const ALL: &[&str] = &[
            "put",
            "get",
            "put_nbi",
            "get_nbi",
            "iput",
            "iget",
            "put_signal",
            "put_signal_nbi",
            "p",
            "g",
        ];
        match self {
            // `long double` passes by value in x87 registers, which Rust cannot name:
            // its p and g are inline functions in shmem.h over the put and get here.
            Elems::Typed(_, _, "LongDouble") | Elems::Sized(..) => &ALL[..8],
            Elems::Typed(..) => ALL,
            Elems::Mem => &[
                "put",
                "get",
                "put_nbi",
                "get_nbi",
                "put_signal",
                "put_signal_nbi",
            ],
        }
    }
}

/// The Rust source of every routine of the family.
pub fn generate() -> String {
    let mut s = String::new();
    let sets = RMA
        .iter()
        .map(|t| Elems::Typed(t.name, t.c, t.rust))
        .chain(SIZED.iter().map(|&(bits, rust)| Elems::Sized(bits, rust)))
        .chain([Elems::Mem]);
    for elems in sets {
        for op in elems.ops() {
            routine(&mut s, elems, op, false);
            routine(&mut s, elems, op, true);
        }
    }
    s
}

/// One routine: `op` on `elems`, the context form when `ctx`.
fn routine(s: &mut String, elems: Elems, op: &str, ctx: bool) {
    let f = elems.name(ctx, op);
    let (r, e, what) = (elems.rust(), elems.pointee(), elems.what());
    let size = format!("size_of::<{r}>()");
    let nbi = op.ends_with("_nbi");
    let when = if nbi {
        " (non-blocking: complete at the next quiet)"
    } else {
        ""
    };
    let (doc, params, ret, call) = match op {
        "put" | "put_nbi" => (
            format!("copies `nelems` {what}s from `source` into the symmetric `dest` on PE `pe`{when}"),
            format!("dest: *mut {e}, source: *const {e}, nelems: usize, pe: i32"),
            "",
            format!("put(\"{f}\", dest.cast(), source.cast(), nelems, {size}, pe, {nbi})"),
        ),
        "get" | "get_nbi" => (
            format!("copies `nelems` {what}s of the symmetric `source` on PE `pe` into `dest`{when}"),
            format!("dest: *mut {e}, source: *const {e}, nelems: usize, pe: i32"),
            "",
            format!("get(\"{f}\", dest.cast(), source.cast(), nelems, {size}, pe, {nbi})"),
        ),
        "iput" => (
            format!("copies `nelems` {what}s from `source`, `sst` apart, into the symmetric `dest` on PE `pe`, `dst` apart"),
            format!("dest: *mut {e}, source: *const {e}, dst: isize, sst: isize, nelems: usize, pe: i32"),
            "",
            format!("iput::<[u8; {size}]>(\"{f}\", dest.cast(), source.cast(), dst, sst, nelems, pe)"),
        ),
        "iget" => (
            format!("copies `nelems` {what}s of the symmetric `source` on PE `pe`, `sst` apart, into `dest`, `dst` apart"),
            format!("dest: *mut {e}, source: *const {e}, dst: isize, sst: isize, nelems: usize, pe: i32"),
            "",
            format!("iget::<[u8; {size}]>(\"{f}\", dest.cast(), source.cast(), dst, sst, nelems, pe)"),
        ),
        "put_signal" | "put_signal_nbi" => (
            format!("puts `nelems` {what}s from `source` into the symmetric `dest` on PE `pe`, then updates the signal `sig_addr` there{when}"),
            format!("dest: *mut {e}, source: *const {e}, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: i32, pe: i32"),
            "",
            format!("crate::signal::put_signal(\"{f}\", dest.cast(), source.cast(), nelems, {size}, sig_addr, signal, sig_op, pe, {nbi})"),
        ),
        "p" => (
            format!("puts one {what} into the symmetric `dest` on PE `pe`"),
            format!("dest: *mut {r}, value: {r}, pe: i32"),
            "",
            format!("put(\"{f}\", dest.cast(), (&raw const value).cast(), 1, {size}, pe, false)"),
        ),
        "g" => (
            format!("gets one {what} from the symmetric `source` on PE `pe`"),
            format!("source: *const {r}, pe: i32"),
            " -> {r}",
            format!("get(\"{f}\", (&raw mut value).cast(), source.cast(), 1, {size}, pe, false)"),
        ),
        other => unreachable!("no RMA operation {other}"),
    };
    let (ctx_param, ctx_doc, ctx_check) = if ctx {
        (
            "ctx: *const crate::ctx::CtxHandle, ",
            " on context `ctx`",
            format!(
                "    // SAFETY: the caller's contract: `ctx` is SHMEM_CTX_DEFAULT or a live context.\n    unsafe {{ crate::ctx::check(\"{f}\", ctx) }};\n"
            ),
        )
    } else {
        ("", "", String::new())
    };
    let body = if op == "g" {
        format!(
            "    let mut value = <{r} as bytemuck::Zeroable>::zeroed();\n    // SAFETY: `value` is this frame's, writable and of the element's size; the rest is the caller's contract.\n    unsafe {{ {call} }};\n    value\n"
        )
    } else {
        format!("    // SAFETY: the caller's contract, passed on.\n    unsafe {{ {call} }}\n")
    };
    let ret = ret.replace("{r}", r);
    let _ = write!(
        s,
        r#"
/// `{f}`: {doc}{ctx_doc}.
///
/// # Safety
/// The private buffer must be valid for the elements named; the other address must be symmetric.
#[no_mangle]
pub unsafe extern "C" fn {f}({ctx_param}{params}){ret} {{
{ctx_check}{body}}}
"#
    );
}
