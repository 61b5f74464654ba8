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

/// Element types of reductions: the integer types (every operator) and `f32`, `f64`
/// (sum, prod, min, max).
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
}
