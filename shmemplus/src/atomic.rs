//! Atomic memory operations on one word: the integer types they apply to, the
//! operations and comparison operators (OpenSHMEM's `shmem_atomic_*` and `SHMEM_CMP_*`),
//! how an operation is applied to a word of a CPU heap (a real atomic instruction on
//! the shared mapping) or of board memory (read-modify-write serialised by the owning
//! PE), and the active-message handler through which the owner serves other PEs.
//!
//! This module owns the meaning of an operation on a word. It must not decide routes
//! (which PE applies the operation: `shmem` does) or charge modeled time (`emulate`).

use crate::am::{AmEngine, Handler, Incoming, H_ATOMIC};
use crate::fpga::Boards;
use crate::Place;
use bytemuck::Pod;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// The integer types atomic operations and point-to-point waits apply to: 16-, 32- and
/// 64-bit, signed and unsigned (OpenSHMEM's standard AMO types, and the 16-bit
/// `short` types of its point-to-point waits).
pub trait AtomicInt:
    Pod + PartialOrd + Eq + std::fmt::Debug + Send + Sync + sealed::Sealed
{
    /// Bytes of the word (2, 4 or 8).
    const WIDTH: usize;
    /// The bits of the value, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value of the low `WIDTH` bytes of `bits`.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! atomic_int {
    ($($t:ty => $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicInt for $t {
            const WIDTH: usize = size_of::<$t>();
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
    )*};
}
atomic_int!(i16 => u16, u16 => u16, i32 => u32, u32 => u32, i64 => u64, u64 => u64);

/// A comparison operator of `wait_until`, `test` and `signal_wait_until`
/// (OpenSHMEM's `SHMEM_CMP_EQ` ... `SHMEM_CMP_LE`): the condition is
/// `word <op> value`.
///
/// ```
/// use shmemplus::Cmp;
/// assert!(Cmp::Ge.holds(5, 5) && Cmp::Lt.holds(-1i32, 0) && !Cmp::Ne.holds(3u64, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `word == value`
    Eq,
    /// `word != value`
    Ne,
    /// `word > value`
    Gt,
    /// `word >= value`
    Ge,
    /// `word < value`
    Lt,
    /// `word <= value`
    Le,
}

impl Cmp {
    /// Whether `word <op> value` holds.
    pub fn holds<T: PartialOrd>(self, word: T, value: T) -> bool {
        match self {
            Cmp::Eq => word == value,
            Cmp::Ne => word != value,
            Cmp::Gt => word > value,
            Cmp::Ge => word >= value,
            Cmp::Lt => word < value,
            Cmp::Le => word <= value,
        }
    }
}

/// How `put_signal` updates the signal word (OpenSHMEM's `SHMEM_SIGNAL_SET` and
/// `SHMEM_SIGNAL_ADD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    /// The signal word becomes the value.
    Set,
    /// The value is added to the signal word (atomically).
    Add,
}

/// An atomic operation on one word; every one returns the word's previous value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomicOp {
    Fetch,
    Set,
    Swap,
    /// Replace with the operand if the word equals `cond`.
    CompareSwap,
    Add,
    And,
    Or,
    Xor,
}

impl AtomicOp {
    fn code(self) -> u64 {
        self as u64
    }

    fn from_code(code: u64) -> Option<AtomicOp> {
        use AtomicOp::*;
        [Fetch, Set, Swap, CompareSwap, Add, And, Or, Xor]
            .into_iter()
            .find(|op| op.code() == code)
    }

    /// The new word from the old one (on the low `width` bytes).
    fn next(self, old: u64, operand: u64, cond: u64, width: usize) -> u64 {
        let mask = if width == 8 {
            u64::MAX
        } else {
            (1 << (width * 8)) - 1
        };
        let new = match self {
            AtomicOp::Fetch => old,
            AtomicOp::Set | AtomicOp::Swap => operand,
            AtomicOp::CompareSwap => {
                if old & mask == cond & mask {
                    operand
                } else {
                    old
                }
            }
            AtomicOp::Add => old.wrapping_add(operand),
            AtomicOp::And => old & operand,
            AtomicOp::Or => old | operand,
            AtomicOp::Xor => old ^ operand,
        };
        new & mask
    }
}

/// Applies `op` to the `width`-byte word at `ptr` with one atomic instruction and
/// returns the old word.
///
/// # Safety
/// `ptr` must be aligned to `width` (2, 4 or 8) and point at `width` bytes of mapped
/// memory that every other accessor of the word also accesses atomically or through
/// plain copies the program orders itself (OpenSHMEM makes mixing AMOs and puts on one
/// word without ordering the program's race).
pub(crate) unsafe fn apply_at(
    ptr: *mut u8,
    width: usize,
    op: AtomicOp,
    operand: u64,
    cond: u64,
) -> u64 {
    const ORD: Ordering = Ordering::AcqRel;
    macro_rules! apply {
        ($a:ty, $v:ty) => {{
            // SAFETY: alignment and validity are the caller's obligation (above); the
            // word lives in a shared mapping, which is what from_ptr's "no non-atomic
            // concurrent access" contract is about: the caller vouches for it.
            let a = unsafe { <$a>::from_ptr(ptr.cast::<$v>()) };
            let (x, c) = (operand as $v, cond as $v);
            (match op {
                AtomicOp::Fetch => a.load(Ordering::Acquire),
                AtomicOp::Set => {
                    a.store(x, Ordering::Release);
                    0
                }
                AtomicOp::Swap => a.swap(x, ORD),
                AtomicOp::CompareSwap => a
                    .compare_exchange(c, x, ORD, Ordering::Acquire)
                    .unwrap_or_else(|v| v),
                AtomicOp::Add => a.fetch_add(x, ORD),
                AtomicOp::And => a.fetch_and(x, ORD),
                AtomicOp::Or => a.fetch_or(x, ORD),
                AtomicOp::Xor => a.fetch_xor(x, ORD),
            }) as u64
        }};
    }
    match width {
        8 => apply!(AtomicU64, u64),
        2 => apply!(AtomicU16, u16),
        _ => apply!(AtomicU32, u32),
    }
}

/// Applies `op` to the word at `offset` of `board`'s memory (this PE's partition),
/// serialised with every other atomic on this PE's boards, and returns the old word.
pub(crate) fn apply_on_board(
    boards: &Boards,
    board: u32,
    offset: u64,
    width: usize,
    op: AtomicOp,
    operand: u64,
    cond: u64,
) -> Result<u64, crate::Error> {
    let b = boards.board(board)?;
    let _serial = boards.atomic_lock();
    let mut word = [0u8; 8];
    b.read(offset, &mut word[..width])
        .map_err(|source| crate::Error::Board { board, source })?;
    let old = u64::from_le_bytes(word);
    if op != AtomicOp::Fetch {
        let new = op.next(old, operand, cond, width).to_le_bytes();
        b.write(offset, &new[..width])
            .map_err(|source| crate::Error::Board { board, source })?;
    }
    Ok(old)
}

/// The arguments of an atomic carried by an AM: `[offset, place, op | width << 8,
/// operand]`, with `cond` as the 8-byte payload. `place` is 0 for the CPU heap and
/// 1 + b for board b.
pub(crate) fn am_args(
    offset: usize,
    place: u64,
    op: AtomicOp,
    width: usize,
    operand: u64,
) -> [u64; 4] {
    [
        offset as u64,
        place,
        op.code() | (width as u64) << 8,
        operand,
    ]
}

/// Registers the handler that applies other PEs' atomics to this PE's CPU heap (with
/// the `am` conduit) and boards. The reply (if asked for) is the old word.
pub(crate) fn register_handler(am: &AmEngine, boards: Arc<Boards>) {
    let handler: Handler = Arc::new(move |engine: &AmEngine, m: Incoming<'_>| {
        let [offset, place, opw, operand] = m.header.args;
        let cond = m
            .payload
            .get(..8)
            .map_or(0, |c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        let width = (opw >> 8) as usize;
        let result = match AtomicOp::from_code(opw & 0xff) {
            None => Err(format!("unknown atomic operation {}", opw & 0xff)),
            Some(_) if ![2, 4, 8].contains(&width) => Err(format!("atomic width {width}")),
            Some(op) if place == 0 => match engine.heap_range(offset, width) {
                Ok(ptr) if ptr as usize % width == 0 => {
                    // SAFETY: heap_range checked the word's `width` bytes are inside this
                    // PE's mapped heap, and the guard checked its alignment to `width`.
                    Ok(unsafe { apply_at(ptr, width, op, operand, cond) })
                }
                Ok(_) => Err(format!("misaligned atomic at heap offset {offset}")),
                Err(why) => Err(why),
            },
            // A board number past u32 is refused, never truncated.
            Some(op) => match Place::from_wire(place) {
                Some(Place::Fpga(board)) => {
                    apply_on_board(&boards, board, offset, width, op, operand, cond)
                        .map_err(|e| e.to_string())
                }
                _ => Err(Place::wire_name(place)),
            },
        };
        match result {
            Ok(old) => engine.reply_result(m.src, m.header.token, Ok(old.to_le_bytes().to_vec())),
            Err(why) if m.header.token == 0 => engine.record_put_failure(m.src, why),
            Err(why) => engine.reply_error(m.src, m.header.token, &why),
        }
    });
    am.register_builtin(H_ATOMIC, handler);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_word_of_each_op() {
        use AtomicOp::*;
        assert_eq!(Add.next(u32::MAX as u64, 1, 0, 4), 0, "32-bit add wraps");
        assert_eq!(Add.next(u64::MAX, 2, 0, 8), 1);
        assert_eq!(CompareSwap.next(5, 9, 5, 8), 9);
        assert_eq!(CompareSwap.next(5, 9, 4, 8), 5);
        assert_eq!(And.next(0b1100, 0b1010, 0, 8), 0b1000);
        assert_eq!(Or.next(0b1100, 0b1010, 0, 8), 0b1110);
        assert_eq!(Xor.next(0b1100, 0b1010, 0, 8), 0b0110);
        assert_eq!(Swap.next(1, 2, 0, 4), 2);
        assert_eq!(Fetch.next(7, 2, 0, 4), 7);
    }

    #[test]
    fn apply_at_is_a_real_atomic() {
        let mut w = [0u64; 1];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: p is an aligned, exclusive 8-byte word.
        unsafe {
            assert_eq!(apply_at(p, 8, AtomicOp::Add, 5, 0), 0);
            assert_eq!(apply_at(p, 8, AtomicOp::CompareSwap, 9, 5), 5);
            assert_eq!(apply_at(p, 8, AtomicOp::Fetch, 0, 0), 9);
            assert_eq!(apply_at(p, 4, AtomicOp::Add, 1, 0), 9);
        }
        assert_eq!(w[0], 10);
    }

    #[test]
    fn sixteen_bit_words_leave_their_neighbours_alone() {
        let mut w = [0u16; 4];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: p + 2 is a 2-aligned, exclusive 2-byte word inside `w`.
        unsafe {
            assert_eq!(apply_at(p.add(2), 2, AtomicOp::Add, 0xffff, 0), 0);
            assert_eq!(
                apply_at(p.add(2), 2, AtomicOp::Add, 2, 0),
                0xffff,
                "wraps at 16 bits"
            );
            assert_eq!(apply_at(p.add(2), 2, AtomicOp::CompareSwap, 9, 1), 1);
        }
        assert_eq!(w, [0, 9, 0, 0]);
        assert_eq!(AtomicOp::Add.next(0xffff, 1, 0, 2), 0);
        assert_eq!(i16::from_bits((-3i16).to_bits()), -3);
        assert_eq!((-1i16).to_bits(), 0xffff);
    }

    #[test]
    fn signed_bits_round_trip() {
        assert_eq!(i32::from_bits((-3i32).to_bits()), -3);
        assert_eq!((-1i32).to_bits(), 0xffff_ffff);
        assert_eq!(i64::from_bits((-3i64).to_bits()), -3);
    }
}
