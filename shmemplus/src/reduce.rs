//! Reduction operators and the element types they apply to: how two arrays are
//! combined element by element (OpenSHMEM's `shmem_<op>_reduce` for the standard RMA
//! types). Owns the arithmetic only; moving the operands is `shmem::collectives`' job.

use bytemuck::Pod;

/// A reduction operator of [`Shmem::reduce`](crate::Shmem::reduce).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum (wrapping on integers).
    Sum,
    /// Product (wrapping on integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise AND (integers only).
    And,
    /// Bitwise OR (integers only).
    Or,
    /// Bitwise XOR (integers only).
    Xor,
}

impl ReduceOp {
    /// Every operator, in declaration order (the order of their codes in collective
    /// call descriptors).
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
    ];

    /// The operator's name, as in OpenSHMEM's routine names.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of reductions: the integer types (every operator), `f32`, `f64`
/// (sum, prod, min, max) and the complex types [`Complex32`], [`Complex64`] (sum,
/// prod).
pub trait Reducible: Pod + sealed::Sealed {
    /// Whether `op` is defined on the type.
    fn supports(op: ReduceOp) -> bool;
    /// `acc[i] = acc[i] op other[i]`; `op` must be supported and the lengths equal.
    fn combine(op: ReduceOp, acc: &mut [Self], other: &[Self]);
}

macro_rules! int_reducible {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            fn supports(_: ReduceOp) -> bool {
                true
            }
            fn combine(op: ReduceOp, acc: &mut [Self], other: &[Self]) {
                let f: fn($t, $t) -> $t = match op {
                    ReduceOp::Sum => <$t>::wrapping_add,
                    ReduceOp::Prod => <$t>::wrapping_mul,
                    ReduceOp::Min => |a, b| a.min(b),
                    ReduceOp::Max => |a, b| a.max(b),
                    ReduceOp::And => |a, b| a & b,
                    ReduceOp::Or => |a, b| a | b,
                    ReduceOp::Xor => |a, b| a ^ b,
                };
                for (a, &b) in acc.iter_mut().zip(other) {
                    *a = f(*a, b);
                }
            }
        }
    )*};
}
int_reducible!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Min | ReduceOp::Max)
            }
            fn combine(op: ReduceOp, acc: &mut [Self], other: &[Self]) {
                let f: fn($t, $t) -> $t = match op {
                    ReduceOp::Sum => |a, b| a + b,
                    ReduceOp::Prod => |a, b| a * b,
                    ReduceOp::Min => <$t>::min,
                    ReduceOp::Max => <$t>::max,
                    // Refused by `supports` before any data moves.
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => |a, _| a,
                };
                for (a, &b) in acc.iter_mut().zip(other) {
                    *a = f(*a, b);
                }
            }
        }
    )*};
}
float_reducible!(f32, f64);

macro_rules! complex {
    ($(#[$doc:meta] $name:ident($t:ty)),*) => {$(
        #[$doc]
        ///
        /// Laid out as C's `_Complex` of the same float (real part first), so a C
        /// array of them is a slice of this type.
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Zeroable, bytemuck::Pod)]
        pub struct $name {
            /// The real part.
            pub re: $t,
            /// The imaginary part.
            pub im: $t,
        }

        impl sealed::Sealed for $name {}
        impl Reducible for $name {
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Sum | ReduceOp::Prod)
            }
            fn combine(op: ReduceOp, acc: &mut [Self], other: &[Self]) {
                let f: fn($name, $name) -> $name = match op {
                    ReduceOp::Sum => |a, b| $name { re: a.re + b.re, im: a.im + b.im },
                    ReduceOp::Prod => |a, b| $name {
                        re: a.re * b.re - a.im * b.im,
                        im: a.re * b.im + a.im * b.re,
                    },
                    // Refused by `supports` before any data moves.
                    _ => |a, _| a,
                };
                for (a, &b) in acc.iter_mut().zip(other) {
                    *a = f(*a, b);
                }
            }
        }
    )*};
}
complex!(
    /// A complex number of two `f32`s, for sum and product reductions.
    Complex32(f32),
    /// A complex number of two `f64`s, for sum and product reductions.
    Complex64(f64)
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combines_each_operator() {
        let mut a = [5i32, -2, 7];
        i32::combine(ReduceOp::Sum, &mut a, &[1, 2, 3]);
        assert_eq!(a, [6, 0, 10]);
        i32::combine(ReduceOp::Min, &mut a, &[7, -1, 11]);
        assert_eq!(a, [6, -1, 10]);
        let mut u = [0b1100u8];
        u8::combine(ReduceOp::Xor, &mut u, &[0b1010]);
        assert_eq!(u, [0b0110]);
        let mut m = [u8::MAX];
        u8::combine(ReduceOp::Prod, &mut m, &[2]);
        assert_eq!(m, [254], "wrapping");
        let mut f = [1.5f64, 2.0];
        f64::combine(ReduceOp::Max, &mut f, &[1.0, 3.0]);
        assert_eq!(f, [1.5, 3.0]);
        assert!(!f32::supports(ReduceOp::Xor) && f32::supports(ReduceOp::Prod));
    }

    #[test]
    fn complex_products_multiply_as_complex_numbers() {
        let i = Complex64 { re: 0.0, im: 1.0 };
        let mut a = [Complex64 { re: 1.0, im: 2.0 }, i];
        Complex64::combine(
            ReduceOp::Prod,
            &mut a,
            &[Complex64 { re: 3.0, im: -1.0 }, i],
        );
        // (1 + 2i)(3 - i) = 3 - i + 6i - 2i^2 = 5 + 5i; i * i = -1.
        assert_eq!(
            a,
            [
                Complex64 { re: 5.0, im: 5.0 },
                Complex64 { re: -1.0, im: 0.0 }
            ]
        );
        Complex64::combine(ReduceOp::Sum, &mut a, &[Complex64 { re: 1.0, im: 1.0 }; 2]);
        assert_eq!(a[0], Complex64 { re: 6.0, im: 6.0 });
        assert!(Complex32::supports(ReduceOp::Prod) && !Complex32::supports(ReduceOp::Max));
    }
}
