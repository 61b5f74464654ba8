//! Generates the typed atomic memory operations (see `src/amo.rs` for their bodies):
//! `shmem_TYPENAME_atomic_*`, their `shmem_ctx_` and `_nbi` forms, and the names
//! OpenSHMEM 1.4 deprecated (`shmem_int_fadd`, ...).

use crate::types::{Ty, AMO_BITWISE, AMO_DEPRECATED, AMO_EXTENDED_ONLY, AMO_STANDARD};
use std::fmt::Write;

/// One AMO of the specification.
struct Amo {
    /// The name after `atomic_` (`fetch_add`).
    name: &'static str,
    /// The `amo::Op` that does it.
    op: &'static str,
    /// Operands after the address, in C order (`cond`, `value`).
    operands: &'static [&'static str],
    /// Whether it returns the old value (and so has an `_nbi` form).
    fetching: bool,
    /// What it does, for the doc line.
    what: &'static str,
}

const fn amo(
    name: &'static str,
    op: &'static str,
    operands: &'static [&'static str],
    fetching: bool,
    what: &'static str,
) -> Amo {
    Amo {
        name,
        op,
        operands,
        fetching,
        what,
    }
}

/// The AMOs of the extended types.
const EXTENDED: &[Amo] = &[
    amo(
        "fetch",
        "Fetch",
        &[],
        true,
        "atomically reads `source` on PE `pe`",
    ),
    amo(
        "set",
        "Set",
        &["value"],
        false,
        "atomically writes `value` into `dest` on PE `pe`",
    ),
    amo(
        "swap",
        "Swap",
        &["value"],
        true,
        "atomically replaces `dest` on PE `pe` with `value` and returns the old value",
    ),
];

/// The AMOs of the standard types only.
const STANDARD: &[Amo] = &[
    amo("compare_swap", "CompareSwap", &["cond", "value"], true, "atomically replaces `dest` on PE `pe` with `value` if it equals `cond`; returns the old value"),
    amo("fetch_inc", "FetchInc", &[], true, "atomically increments `dest` on PE `pe` and returns the old value"),
    amo("inc", "Inc", &[], false, "atomically increments `dest` on PE `pe`"),
    amo("fetch_add", "FetchAdd", &["value"], true, "atomically adds `value` to `dest` on PE `pe` and returns the old value"),
    amo("add", "Add", &["value"], false, "atomically adds `value` to `dest` on PE `pe`"),
];

/// The AMOs of the bitwise types.
const BITWISE: &[Amo] = &[
    amo(
        "fetch_and",
        "FetchAnd",
        &["value"],
        true,
        "atomically ANDs `value` into `dest` on PE `pe` and returns the old value",
    ),
    amo(
        "and",
        "And",
        &["value"],
        false,
        "atomically ANDs `value` into `dest` on PE `pe`",
    ),
    amo(
        "fetch_or",
        "FetchOr",
        &["value"],
        true,
        "atomically ORs `value` into `dest` on PE `pe` and returns the old value",
    ),
    amo(
        "or",
        "Or",
        &["value"],
        false,
        "atomically ORs `value` into `dest` on PE `pe`",
    ),
    amo(
        "fetch_xor",
        "FetchXor",
        &["value"],
        true,
        "atomically XORs `value` into `dest` on PE `pe` and returns the old value",
    ),
    amo(
        "xor",
        "Xor",
        &["value"],
        false,
        "atomically XORs `value` into `dest` on PE `pe`",
    ),
];

/// The deprecated names and the AMO each is (`float` and `double` have only the
/// last three).
const DEPRECATED: &[(&str, &str)] = &[
    ("finc", "fetch_inc"),
    ("inc", "inc"),
    ("fadd", "fetch_add"),
    ("add", "add"),
    ("cswap", "compare_swap"),
    ("swap", "swap"),
    ("fetch", "fetch"),
    ("set", "set"),
];

/// The Rust source of every typed AMO.
pub fn generate() -> String {
    let mut s = String::new();
    let extended = AMO_STANDARD.iter().chain(AMO_EXTENDED_ONLY);
    for t in extended {
        for a in EXTENDED {
            forms(&mut s, t, a);
        }
    }
    for t in AMO_STANDARD {
        for a in STANDARD {
            forms(&mut s, t, a);
        }
    }
    for t in AMO_BITWISE {
        for a in BITWISE {
            forms(&mut s, t, a);
        }
    }
    let all: Vec<&Amo> = EXTENDED.iter().chain(STANDARD).collect();
    let find = |name: &str| all.iter().find(|a| a.name == name).copied();
    for t in AMO_DEPRECATED.iter().chain(AMO_EXTENDED_ONLY) {
        let float = AMO_EXTENDED_ONLY.iter().any(|f| f.name == t.name);
        for &(old, new) in DEPRECATED {
            if float && !matches!(old, "swap" | "fetch" | "set") {
                continue;
            }
            if let Some(a) = find(new) {
                let f = format!("shmem_{}_{old}", t.name);
                routine(
                    &mut s,
                    &f,
                    t,
                    a,
                    false,
                    false,
                    &format!("deprecated name of `shmem_{}_atomic_{new}`", t.name),
                );
            }
        }
    }
    // The untyped `long` swap of the earliest SHMEM (C11 programs reach the
    // type-generic macro of the same name instead).
    if let (Some(t), Some(a)) = (
        AMO_DEPRECATED.iter().find(|t| t.name == "long"),
        find("swap"),
    ) {
        routine(
            &mut s,
            "shmem_swap",
            t,
            a,
            false,
            false,
            "deprecated untyped `long` swap",
        );
    }
    s
}

/// The blocking, context and (for fetching AMOs) non-blocking forms of `a` on `t`.
fn forms(s: &mut String, t: &Ty, a: &Amo) {
    for ctx in [false, true] {
        let pre = if ctx { "shmem_ctx_" } else { "shmem_" };
        let f = format!("{pre}{}_atomic_{}", t.name, a.name);
        routine(s, &f, t, a, ctx, false, a.what);
        if a.fetching {
            let f = format!("{f}_nbi");
            let what = format!(
                "{}, stored into `fetch` (non-blocking form; it completes before returning, which the specification allows)",
                a.what
            );
            routine(s, &f, t, a, ctx, true, &what);
        }
    }
}

/// One routine: its C signature in Rust and one call of `amo` or `amo_nbi`.
fn routine(s: &mut String, f: &str, t: &Ty, a: &Amo, ctx: bool, nbi: bool, what: &str) {
    let (c, rust) = (t.c, t.rust);
    let target = if a.name == "fetch" { "source" } else { "dest" };
    let mut params = Vec::new();
    if ctx {
        params.push("ctx: *const CtxHandle".to_string());
    }
    if nbi {
        params.push(format!("fetch: *mut {rust}"));
    }
    let mutability = if a.name == "fetch" { "const" } else { "mut" };
    params.push(format!("{target}: *{mutability} {rust}"));
    for o in a.operands {
        params.push(format!("{o}: {rust}"));
    }
    params.push("pe: i32".to_string());
    let value = if a.operands.contains(&"value") {
        "value"
    } else {
        "Default::default()"
    };
    let cond = if a.operands.contains(&"cond") {
        "cond"
    } else {
        "Default::default()"
    };
    let ctx_arg = if ctx { "Some(ctx)" } else { "None" };
    let ret = if a.fetching && !nbi {
        format!(" -> {rust}")
    } else {
        String::new()
    };
    let call = if nbi {
        format!("amo_nbi::<{rust}>(\"{f}\", {ctx_arg}, fetch, {target}.cast(), Op::{}, {value}, {cond}, pe)", a.op)
    } else if a.fetching {
        format!(
            "amo::<{rust}>(\"{f}\", {ctx_arg}, {target}.cast(), Op::{}, {value}, {cond}, pe)",
            a.op
        )
    } else {
        format!("{{ amo::<{rust}>(\"{f}\", {ctx_arg}, {target}.cast(), Op::{}, {value}, {cond}, pe); }}", a.op)
    };
    let extra = match (ctx, nbi) {
        (true, true) => " `ctx` must be a live context; `fetch` must be writable.",
        (true, false) => " `ctx` must be a live context.",
        (false, true) => " `fetch` must be writable.",
        (false, false) => "",
    };
    let _ = write!(
        s,
        r#"
/// `{f}`: {what}; elements are `{c}`s.
///
/// # Safety
/// `{target}` must be a symmetric address of a `{c}`.{extra}
#[no_mangle]
pub unsafe extern "C" fn {f}({params}){ret} {{
    // SAFETY: the caller's contract, passed on.
    unsafe {{ {call} }}
}}
"#,
        params = params.join(", ")
    );
}
