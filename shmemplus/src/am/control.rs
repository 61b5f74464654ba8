//! The control path between PEs: words of a peer's control block (barrier flags,
//! collective arrivals, published descriptors) read and written directly when the
//! peer's segment is mapped here, and through the `H_CONTROL` active message, which
//! the owner applies to its own block, when the peer is on another host.
//!
//! This module owns [`PeerWord`] and the `H_CONTROL` handler, including the validation
//! of the offset and the signal a remote request names. It must not decide what the
//! words mean (`team`, `shmem::alloc`, `shmem::collectives` do).

use super::{AmEngine, Incoming, H_CONTROL};
use crate::error::Result;
use crate::segment::SignalWord;
use crate::segment::{Control, MAX_TEAMS};
use crate::sync::notify;
use std::sync::atomic::{AtomicU64, Ordering};

/// What to do to a control word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlOp {
    /// Read it.
    Load = 0,
    /// Overwrite it (Release).
    Store = 1,
    /// Add the operand (AcqRel).
    Add = 2,
    /// Raise it to the operand (AcqRel).
    Max = 3,
    /// Read `operand` consecutive words (at most `MAX_READ_WORDS`).
    Read = 4,
}

/// Most words one `ControlOp::Read` returns.
const MAX_READ_WORDS: u64 = 16;

impl ControlOp {
    fn from_wire(v: u64) -> Option<ControlOp> {
        Some(match v {
            0 => ControlOp::Load,
            1 => ControlOp::Store,
            2 => ControlOp::Add,
            3 => ControlOp::Max,
            4 => ControlOp::Read,
            _ => return None,
        })
    }

    /// Applies the operation to `word`; returns the old value.
    fn apply(self, word: &AtomicU64, operand: u64) -> u64 {
        match self {
            ControlOp::Load | ControlOp::Read => word.load(Ordering::Acquire),
            ControlOp::Store => word.swap(operand, Ordering::AcqRel),
            ControlOp::Add => word.fetch_add(operand, Ordering::AcqRel),
            ControlOp::Max => word.fetch_max(operand, Ordering::AcqRel),
        }
    }
}

/// Which of the owner's signals an operation wakes after it is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// None.
    Nobody,
    /// The owner's user threads (`Control::user_signal`).
    User,
    /// The waiters of team slot `slot` (`TeamSync::signal`).
    Team(usize),
}

impl Wake {
    fn to_wire(self) -> u64 {
        match self {
            Wake::Nobody => 0,
            Wake::User => 1,
            Wake::Team(slot) => 2 + slot as u64,
        }
    }

    fn from_wire(v: u64) -> Option<Wake> {
        match v {
            0 => Some(Wake::Nobody),
            1 => Some(Wake::User),
            v => {
                let slot = usize::try_from(v - 2).ok()?;
                (slot < MAX_TEAMS).then_some(Wake::Team(slot))
            }
        }
    }

    fn signal(self, control: &Control) -> Option<&SignalWord> {
        match self {
            Wake::Nobody => None,
            Wake::User => Some(&control.user_signal),
            Wake::Team(slot) => Some(&control.teams[slot].signal),
        }
    }
}

/// One word of one PE's control block, wherever that PE is.
pub(crate) enum PeerWord<'a> {
    /// In a segment mapped here (the owner's own block).
    Mapped(&'a AtomicU64, &'a Control),
    /// At byte `offset` of the control block of `pe`, on another host.
    Remote {
        engine: &'a AmEngine,
        pe: usize,
        offset: u64,
    },
}

impl AmEngine {
    /// The word `of` picks in PE `pe`'s control block. For a PE of another host, `of`
    /// is applied to this PE's own block (the layout is the same) to find the offset.
    pub(crate) fn control_word<'a>(
        &'a self,
        pe: usize,
        of: impl Fn(&Control) -> &AtomicU64,
    ) -> PeerWord<'a> {
        match self.segs.peer(pe) {
            Some(seg) => PeerWord::Mapped(of(seg.control()), seg.control()),
            None => {
                let mine = self.segs.mine().control();
                let offset = (of(mine) as *const AtomicU64 as usize)
                    .wrapping_sub(mine as *const Control as usize);
                debug_assert!(offset + 8 <= size_of::<Control>());
                PeerWord::Remote {
                    engine: self,
                    pe,
                    offset: offset as u64,
                }
            }
        }
    }
}

impl AmEngine {
    /// The values of the consecutive words `of` picks in PE `pe`'s control block
    /// (at most 16): loads here, one round trip to a PE of another host.
    pub(crate) fn control_words(
        &self,
        pe: usize,
        of: impl Fn(&Control) -> &[AtomicU64],
    ) -> Result<Vec<u64>> {
        if let Some(seg) = self.segs.peer(pe) {
            return Ok(of(seg.control())
                .iter()
                .map(|w| w.load(Ordering::Acquire))
                .collect());
        }
        let mine = self.segs.mine().control();
        let words = of(mine);
        debug_assert!(words.len() as u64 <= MAX_READ_WORDS);
        let offset = (words.as_ptr() as usize).wrapping_sub(mine as *const Control as usize) as u64;
        let args = [
            ControlOp::Read as u64,
            offset,
            words.len() as u64,
            Wake::Nobody.to_wire(),
        ];
        let bytes = self.call_bytes(pe, H_CONTROL, args)?;
        if bytes.len() != words.len() * 8 {
            return Err(crate::error::Error::AmFailed {
                pe: pe as u32,
                why: format!(
                    "control read returned {} bytes for {} words",
                    bytes.len(),
                    words.len()
                ),
            });
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect())
    }
}

impl PeerWord<'_> {
    /// Reads the word (a round trip for a PE of another host).
    pub(crate) fn load(&self) -> Result<u64> {
        match *self {
            PeerWord::Mapped(word, _) => Ok(word.load(Ordering::Acquire)),
            PeerWord::Remote { engine, pe, offset } => engine.call_word(
                pe,
                H_CONTROL,
                [ControlOp::Load as u64, offset, 0, Wake::Nobody.to_wire()],
                &[],
            ),
        }
    }

    /// Applies `op` with `operand` and wakes `wake` of the owner, without waiting
    /// for the result: to a PE of another host it is posted after this PE's earlier
    /// requests to it, and completed (its failure reported) by `quiet`, as a put.
    pub(crate) fn post(&self, op: ControlOp, operand: u64, wake: Wake) {
        match *self {
            PeerWord::Mapped(word, control) => {
                op.apply(word, operand);
                if let Some(signal) = wake.signal(control) {
                    notify(signal);
                }
            }
            PeerWord::Remote { engine, pe, offset } => engine.post(
                pe,
                H_CONTROL,
                [op as u64, offset, operand, wake.to_wire()],
                &[],
            ),
        }
    }
}

/// The `H_CONTROL` handler: checks the operation, the offset (a whole word inside the
/// control block) and the signal, applies the operation to this PE's own block, wakes
/// the signal and replies with the old value when asked.
pub(super) fn handle_control(engine: &AmEngine, m: Incoming<'_>) {
    let [op, offset, operand, wake] = m.header.args;
    let control = engine.segs.mine().control();
    let checked = (|| {
        let op = ControlOp::from_wire(op).ok_or(format!("unknown control operation {op}"))?;
        let wake = Wake::from_wire(wake).ok_or(format!("unknown signal {wake}"))?;
        Ok((op, wake))
    })();
    let out = checked.and_then(|(op, wake)| {
        let count = match op {
            ControlOp::Read if (1..=MAX_READ_WORDS).contains(&operand) => operand,
            ControlOp::Read => return Err(format!("a control read of {operand} words")),
            _ => 1,
        };
        let mut reply = Vec::with_capacity(count as usize * 8);
        for i in 0..count {
            let at = offset + 8 * i;
            if !is_peer_word(at) {
                return Err(format!(
                    "byte {at} of the control block is not a word other PEs may use"
                ));
            }
            // SAFETY: `is_peer_word` proved `at..at + 8` an 8-aligned word inside the
            // team slots or the collective records of the control block, outside
            // every signal: those regions hold only `AtomicU64` fields and the padding
            // of `Padded`, and the block lives in this PE's mapping (zero-filled, so
            // every word, padding included, is an initialised u64) for the engine's
            // life.
            let word = unsafe {
                &*((control as *const Control as *const u8).add(at as usize) as *const AtomicU64)
            };
            reply.extend_from_slice(&op.apply(word, operand).to_le_bytes());
        }
        if let Some(signal) = wake.signal(control) {
            notify(signal);
        }
        Ok(reply)
    });
    if let Err(why) = &out {
        if m.header.token == 0 {
            engine.record_put_failure(m.src, why.clone());
        }
    }
    engine.reply_result(m.src, m.header.token, out);
}

/// Whether byte `offset` of a control block starts a word another PE may read or
/// write through `H_CONTROL`: an 8-aligned word of the team slots (but not of a
/// signal, whose words are 32-bit futex words) or of the collective records.
fn is_peer_word(offset: u64) -> bool {
    use crate::segment::TeamSync;
    use std::mem::offset_of;
    let Ok(offset) = usize::try_from(offset) else {
        return false;
    };
    if offset % 8 != 0 {
        return false;
    }
    let teams = offset_of!(Control, teams);
    let coll = offset_of!(Control, coll);
    let in_range = |start: usize, len: usize| offset >= start && offset + 8 <= start + len;
    if in_range(teams, size_of::<[TeamSync; MAX_TEAMS]>()) {
        let within = (offset - teams) % size_of::<TeamSync>();
        let signal = offset_of!(TeamSync, signal);
        return !(within + 8 > signal
            && within < signal + size_of::<crate::segment::Padded<SignalWord>>());
    }
    in_range(
        coll,
        size_of::<[crate::segment::Padded<crate::segment::CollRecord>; 2]>(),
    )
}
