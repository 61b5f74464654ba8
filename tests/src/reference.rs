//! Serial references the PE programs check collectives against: the collective kinds,
//! the element types with an independent fold of each reduction, one description of a
//! call ([`Call`]) that both makes the library call and predicts its result. It owns
//! no scenario and no data: the callers say what each PE's source holds.

use shmemplus::{Error, ReduceOp, Reducible, Shmem, SymVec, Team};

/// The collectives of the API whose results a serial reference can predict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// `broadcast`: the root's block to every member.
    Broadcast,
    /// `fcollect`: every member's block, equal sizes, in team order.
    Fcollect,
    /// `collect`: every member's block, sizes of its own, in team order.
    Collect,
    /// `alltoall`: block j of member i to block i of member j.
    Alltoall,
    /// `reduce`: the element-wise reduction of every member's block.
    Reduce,
}

impl Collective {
    /// Every kind, in declaration order (so `kind as usize` indexes it).
    pub const ALL: [Collective; 5] = [
        Collective::Broadcast,
        Collective::Fcollect,
        Collective::Collect,
        Collective::Alltoall,
        Collective::Reduce,
    ];
}

/// Element types of the collective tests, with an independent serial reference.
pub trait Elem: shmemplus::Reducible + PartialEq + std::fmt::Debug {
    /// A value from a hash (exactly representable for floats).
    fn gen(h: u64) -> Self;
    /// What a destination holds where no collective should write.
    fn sentinel() -> Self;
    /// Whether the type has reduction `op`.
    fn has(op: ReduceOp) -> bool;
    /// `a op b`, the reference.
    fn fold(op: ReduceOp, a: Self, b: Self) -> Self;
}

/// `has` and `fold` of an integer type: every operator, wrapping arithmetic.
macro_rules! integer_reference {
    () => {
        fn has(_: ReduceOp) -> bool {
            true
        }
        fn fold(op: ReduceOp, a: Self, b: Self) -> Self {
            match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
                ReduceOp::And => a & b,
                ReduceOp::Or => a | b,
                ReduceOp::Xor => a ^ b,
            }
        }
    };
}

impl Elem for i32 {
    fn gen(h: u64) -> i32 {
        if h % 16 == 0 {
            (h >> 8) as i32
        } else {
            ((h >> 8) % 2001) as i32 - 1000
        }
    }
    fn sentinel() -> i32 {
        0x5a5a_5a5a
    }
    integer_reference!();
}

impl Elem for u64 {
    fn gen(h: u64) -> u64 {
        if h % 16 == 0 {
            h
        } else {
            (h >> 8) % 1000
        }
    }
    fn sentinel() -> u64 {
        0xdead_beef_dead_beef
    }
    integer_reference!();
}

impl Elem for f64 {
    /// Quarters in [-8, 8): sums and products of up to 5 of them are exact.
    fn gen(h: u64) -> f64 {
        ((h >> 8) % 64) as f64 * 0.25 - 8.0
    }
    fn sentinel() -> f64 {
        -12345.5
    }
    fn has(op: ReduceOp) -> bool {
        matches!(
            op,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Min | ReduceOp::Max
        )
    }
    fn fold(op: ReduceOp, a: f64, b: f64) -> f64 {
        match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
            // Callers ask `has` first; a bitwise operator has no meaning on floats.
            ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => f64::NAN,
        }
    }
}

/// One collective call as every member sees it, for [`expected`].
pub struct Call<'a> {
    /// Which collective.
    pub kind: Collective,
    /// The world PE of each team member, in team order.
    pub members: &'a [u32],
    /// The team index of the member whose destination is predicted.
    pub me: usize,
    /// Elements per block (every kind but `Collect`).
    pub nelems: usize,
    /// The team index of a broadcast's root.
    pub root: usize,
    /// A reduction's operator.
    pub op: ReduceOp,
}

impl Call<'_> {
    /// Makes this call on `team`, this PE being member `self.me`; `collect` is (what
    /// this PE contributes, the total a collect must report) and is ignored by the
    /// other kinds.
    pub fn run<T: Reducible>(
        &self,
        shmem: &Shmem,
        team: &Team,
        dst: &SymVec<T>,
        src: &SymVec<T>,
        collect: (usize, usize),
    ) -> shmemplus::Result<()> {
        let n = self.nelems;
        match self.kind {
            Collective::Broadcast => {
                let root = u32::try_from(self.root).unwrap_or(u32::MAX);
                shmem.broadcast(team, dst, src, n, root)
            }
            Collective::Fcollect => shmem.fcollect(team, dst, src, n),
            Collective::Collect => shmem.collect(team, dst, src, collect.0).and_then(|total| {
                if total == collect.1 {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument(format!(
                        "collect returned {total} elements, want {}",
                        collect.1
                    )))
                }
            }),
            Collective::Alltoall => shmem.alltoall(team, dst, src, n),
            Collective::Reduce => shmem.reduce(team, dst, src, n, self.op),
        }
    }
}

/// What `call` leaves at the start of member `call.me`'s destination, computed serially
/// from `val(w, i)`, element `i` of world PE `w`'s source, and (for `Collect`)
/// `count_of(w)`, the elements world PE `w` contributes.
pub fn expected<T: Elem>(
    call: &Call<'_>,
    count_of: impl Fn(u32) -> usize,
    val: impl Fn(u32, usize) -> T,
) -> Vec<T> {
    let (members, n) = (call.members, call.nelems);
    match call.kind {
        Collective::Broadcast => members
            .get(call.root)
            .map_or_else(Vec::new, |&w| (0..n).map(|i| val(w, i)).collect()),
        Collective::Fcollect => members
            .iter()
            .flat_map(|&w| (0..n).map(move |i| (w, i)))
            .map(|(w, i)| val(w, i))
            .collect(),
        Collective::Collect => members
            .iter()
            .flat_map(|&w| (0..count_of(w)).map(move |i| (w, i)))
            .map(|(w, i)| val(w, i))
            .collect(),
        Collective::Alltoall => members
            .iter()
            .flat_map(|&w| (0..n).map(move |i| (w, call.me * n + i)))
            .map(|(w, i)| val(w, i))
            .collect(),
        Collective::Reduce => match members.split_first() {
            None => Vec::new(),
            Some((&first, rest)) => (0..n)
                .map(|i| {
                    rest.iter()
                        .fold(val(first, i), |acc, &w| T::fold(call.op, acc, val(w, i)))
                })
                .collect(),
        },
    }
}
