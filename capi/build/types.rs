//! The OpenSHMEM 1.5 tables of types (its Tables 5, 6, 7, 8 and 10, and the legacy
//! `_to_all` reductions): each row is the TYPENAME in routine names, the C type, and
//! the Rust type of the same size and alignment that carries it.

/// One row of a table.
pub struct Ty {
    /// TYPENAME, as in `shmem_TYPENAME_put`.
    pub name: &'static str,
    /// The C type.
    pub c: &'static str,
    /// A Rust type of the same size and alignment.
    pub rust: &'static str,
}

const fn ty(name: &'static str, c: &'static str, rust: &'static str) -> Ty {
    Ty { name, c, rust }
}

/// Standard RMA types (Table 5), which also serve the collectives.
pub const RMA: &[Ty] = &[
    ty("float", "float", "f32"),
    ty("double", "double", "f64"),
    ty("longdouble", "long double", "LongDouble"),
    ty("char", "char", "i8"),
    ty("schar", "signed char", "i8"),
    ty("short", "short", "i16"),
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
    ty("uchar", "unsigned char", "u8"),
    ty("ushort", "unsigned short", "u16"),
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int8", "int8_t", "i8"),
    ty("int16", "int16_t", "i16"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint8", "uint8_t", "u8"),
    ty("uint16", "uint16_t", "u16"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
    ty("size", "size_t", "usize"),
    ty("ptrdiff", "ptrdiff_t", "isize"),
];

/// Standard AMO types (Table 6): every AMO but the bitwise ones. `size_t` and
/// `ptrdiff_t` travel as the 64-bit integers they are on the LP64 targets this
/// library builds for (`src/amo.rs` asserts the width).
pub const AMO_STANDARD: &[Ty] = &[
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
    ty("size", "size_t", "u64"),
    ty("ptrdiff", "ptrdiff_t", "i64"),
];

/// The extended AMO types (Table 7) beyond the standard ones: fetch, set and swap
/// only, carried as the bits of the same-width integer.
pub const AMO_EXTENDED_ONLY: &[Ty] = &[ty("float", "float", "f32"), ty("double", "double", "f64")];

/// Bitwise AMO types (Table 8): and, or, xor.
pub const AMO_BITWISE: &[Ty] = &[
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
];

/// The types of the AMO names deprecated in OpenSHMEM 1.4 (`shmem_int_fadd`, ...),
/// which are the OpenSHMEM 1.3 ones: `finc`, `inc`, `fadd`, `add`, `cswap` for
/// these; `fetch`, `set`, `swap` for these and `float`, `double`.
pub const AMO_DEPRECATED: &[Ty] = &[
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
];

/// Point-to-point synchronization types (Table 10): wait and test.
pub const P2P: &[Ty] = &[
    ty("short", "short", "i16"),
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
    ty("ushort", "unsigned short", "u16"),
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
    ty("size", "size_t", "u64"),
    ty("ptrdiff", "ptrdiff_t", "i64"),
];

/// The sized RMA routines (`shmem_put8` ... `shmem_put128`): bits and a Rust type of
/// that size.
pub const SIZED: &[(u32, &str)] = &[
    (8, "u8"),
    (16, "u16"),
    (32, "u32"),
    (64, "u64"),
    (128, "u128"),
];

/// Types of the bitwise reductions (`and`, `or`, `xor`; Table 10).
pub const REDUCE_BITWISE: &[Ty] = &[
    ty("uchar", "unsigned char", "u8"),
    ty("ushort", "unsigned short", "u16"),
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int8", "int8_t", "i8"),
    ty("int16", "int16_t", "i16"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint8", "uint8_t", "u8"),
    ty("uint16", "uint16_t", "u16"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
    ty("size", "size_t", "usize"),
];

/// Types of the `max`, `min`, `sum` and `prod` reductions (Table 10), less `long
/// double`, which the Rust API cannot combine (x87 extended precision).
pub const REDUCE_ARITH: &[Ty] = &[
    ty("char", "char", "i8"),
    ty("schar", "signed char", "i8"),
    ty("short", "short", "i16"),
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
    ty("ptrdiff", "ptrdiff_t", "isize"),
    ty("uchar", "unsigned char", "u8"),
    ty("ushort", "unsigned short", "u16"),
    ty("uint", "unsigned int", "u32"),
    ty("ulong", "unsigned long", "u64"),
    ty("ulonglong", "unsigned long long", "u64"),
    ty("int8", "int8_t", "i8"),
    ty("int16", "int16_t", "i16"),
    ty("int32", "int32_t", "i32"),
    ty("int64", "int64_t", "i64"),
    ty("uint8", "uint8_t", "u8"),
    ty("uint16", "uint16_t", "u16"),
    ty("uint32", "uint32_t", "u32"),
    ty("uint64", "uint64_t", "u64"),
    ty("size", "size_t", "usize"),
    ty("float", "float", "f32"),
    ty("double", "double", "f64"),
];

/// Complex types of the `sum` and `prod` reductions: the Rust types lay out like C's
/// `_Complex` (real part first) and multiply as complex numbers.
pub const REDUCE_COMPLEX: &[Ty] = &[
    ty("complexd", "double _Complex", "rust::Complex64"),
    ty("complexf", "float _Complex", "rust::Complex32"),
];

/// Types of the legacy bitwise `_to_all` reductions.
pub const TO_ALL_BITWISE: &[Ty] = &[
    ty("short", "short", "i16"),
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
];

/// Types of the legacy `max`, `min`, `sum` and `prod` `_to_all` reductions, less
/// `long double` (see [`REDUCE_ARITH`]).
pub const TO_ALL_ARITH: &[Ty] = &[
    ty("short", "short", "i16"),
    ty("int", "int", "i32"),
    ty("long", "long", "i64"),
    ty("longlong", "long long", "i64"),
    ty("float", "float", "f32"),
    ty("double", "double", "f64"),
];
