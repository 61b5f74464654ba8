//! The agreement on a collective call: each member's *descriptor* of its call (kind,
//! element size, count, root or operator, both objects), its encoding into the
//! team's call words, and the pure check every member runs on every member's
//! descriptor (`agree`, `validate`), so that all reach the same verdict.
//!
//! Length: about 440 lines of code and 170 of unit tests; the descriptors and the
//! agreement check that reads them are one protocol and stay together.
//!
//! Why every member reads every descriptor intact, and all read the same: member m
//! writes the copy of parity e % 2 for the call whose opening barrier has epoch e,
//! before it arrives at that barrier; the others read it after leaving the barrier
//! and before arriving at their next barrier of the team (epoch e + 1). m writes that
//! copy again only for a call opening with barrier e + 2, so after leaving barrier
//! e + 1, which no member leaves before every member has arrived there, that is,
//! finished reading. The barrier orders the writes before the reads (release/acquire
//! through its counters), and the descriptor's tag (its epoch) is written last with
//! release and read first with acquire. A member in another call of the team at
//! barrier e (`team_sync`, say) wrote no descriptor tagged e and cannot write that copy
//! before barrier e + 1 either, so every member sees the same stale tag and refuses
//! alike.
//!
//! This module owns the descriptors and the verdict. It must not move data or wait
//! (`collectives` does, once every member agreed), nor implement the barrier (`team`).

use super::Place;
use crate::error::{Error, Result};
use crate::reduce::ReduceOp;
use crate::segment::CALL_WORDS;
use crate::team::TeamInner;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// The kinds of collective, as written in descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Broadcast = 1,
    Fcollect = 2,
    Collect = 3,
    Alltoall = 4,
    Reduce = 5,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Broadcast => "broadcast",
            Kind::Fcollect => "fcollect",
            Kind::Collect => "collect",
            Kind::Alltoall => "alltoall",
            Kind::Reduce => "reduce",
        }
    }

    fn from_code(code: u64) -> Option<Kind> {
        [
            Kind::Broadcast,
            Kind::Fcollect,
            Kind::Collect,
            Kind::Alltoall,
            Kind::Reduce,
        ]
        .into_iter()
        .find(|k| *k as u64 == code)
    }
}

/// A symmetric object as a descriptor names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ObjDesc {
    /// Byte offset in its heap.
    pub(super) offset: u64,
    /// Length in elements.
    pub(super) len: u64,
    /// `Place::code`.
    pub(super) place: u64,
    /// The object belongs to another handle (its other fields mean nothing).
    pub(super) foreign: bool,
}

/// What one member says about its collective call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CallDesc {
    pub(super) kind: Kind,
    /// Element size in bytes.
    pub(super) elem: u64,
    /// Element count (`nelems`, `nreduce`).
    pub(super) nelems: u64,
    /// The broadcast root or the reduction operator (`op_code`); 0 otherwise.
    pub(super) arg: u32,
    pub(super) dest: ObjDesc,
    pub(super) source: ObjDesc,
    /// The reduction operator is not defined on the element type.
    pub(super) unsupported: bool,
    /// The element size or a place does not fit its field of the encoding (a type of
    /// 2^48 bytes or more, a board numbered 65535 or more).
    pub(super) unencodable: bool,
}

/// Words of a descriptor after its tag: with the tag, one cache line, so that reading
/// a member's descriptor costs one transfer.
const FIELDS: usize = CALL_WORDS - 1;

/// Bits of the element size and of a place code in the encoding.
const ELEM_BITS: u32 = 48;
const PLACE_BITS: u32 = 16;

impl CallDesc {
    /// Seven words: kind | flags << 8 | elem << 16; nelems; arg | dest place << 32 |
    /// source place << 48; dest offset, dest len, source offset, source len.
    fn encode(&self) -> [u64; FIELDS] {
        let fits = self.elem < 1 << ELEM_BITS
            && self.dest.place < 1 << PLACE_BITS
            && self.source.place < 1 << PLACE_BITS;
        let flags = u64::from(self.dest.foreign)
            | u64::from(self.source.foreign) << 1
            | u64::from(self.unsupported) << 2
            | u64::from(self.unencodable || !fits) << 3;
        let field = |v: u64, bits: u32| if fits { v & ((1 << bits) - 1) } else { 0 };
        [
            self.kind as u64 | flags << 8 | field(self.elem, ELEM_BITS) << 16,
            self.nelems,
            u64::from(self.arg)
                | field(self.dest.place, PLACE_BITS) << 32
                | field(self.source.place, PLACE_BITS) << 48,
            self.dest.offset,
            self.dest.len,
            self.source.offset,
            self.source.len,
        ]
    }

    fn decode(w: &[u64; FIELDS]) -> Option<CallDesc> {
        let flags = (w[0] >> 8) & 0xff;
        let place_mask = (1 << PLACE_BITS) - 1;
        Some(CallDesc {
            kind: Kind::from_code(w[0] & 0xff)?,
            elem: w[0] >> 16,
            nelems: w[1],
            arg: w[2] as u32,
            dest: ObjDesc {
                offset: w[3],
                len: w[4],
                place: (w[2] >> 32) & place_mask,
                foreign: flags & 1 != 0,
            },
            source: ObjDesc {
                offset: w[5],
                len: w[6],
                place: w[2] >> 48,
                foreign: flags & 2 != 0,
            },
            unsupported: flags & 4 != 0,
            unencodable: flags & 8 != 0,
        })
    }

    /// The arguments, for messages.
    fn summary(&self) -> String {
        let arg = match self.kind {
            Kind::Broadcast => format!("root {}, ", self.arg),
            Kind::Reduce => format!("operator {}, ", op_name(self.arg)),
            _ => String::new(),
        };
        format!(
            "{arg}{} elements of {} bytes, destination {}, source {}",
            self.nelems,
            self.elem,
            self.dest.summary(),
            self.source.summary()
        )
    }

    /// Whether `self` and `other` must be equal for the call to go ahead: every
    /// argument but a collect's own count.
    fn same_call(&self, other: &CallDesc) -> bool {
        let key = |d: &CallDesc| {
            let nelems = if d.kind == Kind::Collect { 0 } else { d.nelems };
            (
                d.kind,
                d.elem,
                nelems,
                d.arg,
                d.dest,
                d.source,
                d.unsupported,
            )
        };
        key(self) == key(other)
    }
}

impl ObjDesc {
    fn summary(&self) -> String {
        let place = Place::wire_name(self.place);
        format!(
            "{place} heap offset {} ({} elements)",
            self.offset, self.len
        )
    }

    /// The byte range of elements `0..count` of the object (`None` on overflow, which
    /// a count checked against the object cannot reach).
    fn bytes(&self, count: u64, elem: u64) -> Option<(u64, u64)> {
        let len = count.checked_mul(elem)?;
        Some((self.offset, self.offset.checked_add(len)?))
    }
}

/// Publishes `call` as this PE's descriptor for the call opening with barrier `epoch`.
/// The tag (the epoch) is cleared first and written last: a reader that sees the same
/// tag before and after reading the fields read them whole (a seqlock; by the module
/// doc's argument no writer overlaps a reader, this only makes that checkable).
pub(super) fn publish(words: &[AtomicU64; CALL_WORDS], epoch: u64, call: &CallDesc) {
    words[0].store(0, Ordering::Relaxed);
    fence(Ordering::Release);
    for (w, v) in words[1..].iter().zip(call.encode()) {
        w.store(v, Ordering::Relaxed);
    }
    words[0].store(epoch, Ordering::Release);
}

/// A member's descriptor for the call opening with barrier `epoch`, or `None` if it
/// wrote none for that call (or it could not be read whole).
pub(super) fn read(words: &[AtomicU64; CALL_WORDS], epoch: u64) -> Option<CallDesc> {
    let before = words[0].load(Ordering::Acquire);
    let mut fields = [0u64; FIELDS];
    for (f, w) in fields.iter_mut().zip(&words[1..]) {
        *f = w.load(Ordering::Relaxed);
    }
    fence(Ordering::Acquire);
    let after = words[0].load(Ordering::Relaxed);
    if before != epoch || after != epoch {
        return None;
    }
    CallDesc::decode(&fields)
}

/// [`read`] of the words' values, read whole by their owner (a member on another
/// host answers a read of all of them in one reply).
pub(super) fn read_values(words: &[u64], epoch: u64) -> Option<CallDesc> {
    let (&tag, fields) = words.split_first()?;
    let fields: &[u64; FIELDS] = fields.try_into().ok()?;
    (tag == epoch).then(|| CallDesc::decode(fields)).flatten()
}

/// The verdict on a call from every member's descriptor (team order), the same on
/// every member since it depends on nothing else but the team size and the element
/// type's name: the descriptors, or the error every member returns. In order: a
/// member not in this call, members in different collectives, the first member whose
/// own arguments are bad, the first member whose arguments differ from team PE 0's,
/// and for collect the counts of all members together.
pub(super) fn agree(
    t: &TeamInner,
    calls: &[Option<CallDesc>],
    ty: &'static str,
) -> Result<Vec<CallDesc>> {
    let n = t.size;
    let who = |i: usize| format!("team PE {i} (world PE {})", t.world(i as u32));
    let mut known = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        match c {
            Some(c) => known.push(*c),
            None => {
                let call = calls
                    .iter()
                    .flatten()
                    .next()
                    .map_or("collective", |c| c.kind.name());
                return Err(Error::NonSymmetric(format!(
                    "{call} on a team of {n} PEs: {} is not in this call (it is in another call on the team, such as team_sync)",
                    who(i)
                )));
            }
        }
    }
    let Some(first) = known.first().copied() else {
        return Err(Error::InvalidTeam);
    };
    if let Some(i) = known.iter().position(|c| c.kind != first.kind) {
        return Err(Error::NonSymmetric(format!(
            "team PE 0 calls {} but {} calls {} on the same team",
            first.kind.name(),
            who(i),
            known[i].kind.name()
        )));
    }
    let verdicts: Vec<Result<()>> = known.iter().map(|c| validate(c, n, ty)).collect();
    if let Some(i) = verdicts.iter().position(Result::is_err) {
        let bad: Vec<usize> = (0..verdicts.len())
            .filter(|&j| verdicts[j].is_err())
            .collect();
        let by = if bad.len() == verdicts.len() {
            "every member".to_string()
        } else {
            let list: Vec<String> = bad.iter().map(|&j| who(j)).collect();
            list.join(", ")
        };
        return Err(match verdicts.into_iter().nth(i) {
            Some(Err(Error::InvalidArgument(why))) => {
                Error::InvalidArgument(format!("{why} (passed by {by})"))
            }
            Some(Err(e)) => e,
            _ => Error::InvalidArgument(format!("{} refused", first.kind.name())),
        });
    }
    if let Some(i) = known.iter().position(|c| !c.same_call(&first)) {
        return Err(Error::NonSymmetric(format!(
            "{} on a team of {n} PEs: team PE 0 passes {} but {} passes {}",
            first.kind.name(),
            first.summary(),
            who(i),
            known[i].summary()
        )));
    }
    if first.kind == Kind::Collect {
        let total = known
            .iter()
            .try_fold(0u64, |sum, c| sum.checked_add(c.nelems))
            .ok_or_else(|| overflow("collect: the members' element counts"))?;
        if total > first.dest.len {
            return Err(Error::InvalidArgument(format!(
                "collect: {total} elements in all do not fit a destination of {}",
                first.dest.len
            )));
        }
    }
    Ok(known)
}

/// Checks one member's call on its own: objects of this job, counts within the
/// objects, a root in the team, a reduction defined on the type, and no overlap
/// between destination and source beyond what the call allows.
fn validate(c: &CallDesc, n: u32, ty: &'static str) -> Result<()> {
    let name = c.kind.name();
    if c.dest.foreign || c.source.foreign {
        return Err(Error::ForeignObject);
    }
    if c.unencodable {
        return Err(Error::InvalidArgument(format!(
            "{name}: an element type of 2^{ELEM_BITS} bytes or more, or a board numbered \
             2^{PLACE_BITS} - 1 or more, cannot take part in a collective"
        )));
    }
    let n = u64::from(n);
    // (elements of dest the call may write, elements of source it reads, whether
    // dest and source may be the same object)
    let (dest_count, source_count, in_place) = match c.kind {
        Kind::Broadcast => {
            if u64::from(c.arg) >= n {
                return Err(Error::InvalidArgument(format!(
                    "broadcast root {} is not in a team of {n} PEs",
                    c.arg
                )));
            }
            (c.nelems, c.nelems, true)
        }
        Kind::Fcollect => {
            let total = c
                .nelems
                .checked_mul(n)
                .ok_or_else(|| overflow("fcollect size"))?;
            (total, c.nelems, false)
        }
        // The destination is checked against the sum of all counts in `agree`; no
        // source may overlap any of it.
        Kind::Collect => (c.dest.len, c.nelems, false),
        Kind::Alltoall => {
            let total = c
                .nelems
                .checked_mul(n)
                .ok_or_else(|| overflow("alltoall size"))?;
            (total, total, false)
        }
        Kind::Reduce => {
            if c.unsupported {
                return Err(Error::UnsupportedReduction {
                    op: op_name(c.arg),
                    ty,
                });
            }
            (c.nelems, c.nelems, true)
        }
    };
    fits(&c.dest, dest_count)?;
    fits(&c.source, source_count)?;
    let same = c.dest.place == c.source.place && c.dest.offset == c.source.offset;
    if !(in_place && same) && overlap(&c.dest, dest_count, &c.source, source_count, c.elem) {
        let allowed = if in_place {
            "they may be the same object but must not otherwise overlap"
        } else {
            "they must not overlap"
        };
        return Err(Error::InvalidArgument(format!(
            "{name}: destination ({}) and source ({}) overlap; {allowed}",
            c.dest.summary(),
            c.source.summary()
        )));
    }
    Ok(())
}

/// `Ok` if elements `0..count` lie within `obj`.
fn fits(obj: &ObjDesc, count: u64) -> Result<()> {
    if count <= obj.len {
        return Ok(());
    }
    Err(Error::OutOfBounds {
        start: 0,
        end: usize::try_from(count).unwrap_or(usize::MAX),
        len: usize::try_from(obj.len).unwrap_or(usize::MAX),
    })
}

/// Whether elements `0..a_count` of `a` and `0..b_count` of `b` share a byte.
fn overlap(a: &ObjDesc, a_count: u64, b: &ObjDesc, b_count: u64, elem: u64) -> bool {
    if a.place != b.place {
        return false;
    }
    match (a.bytes(a_count, elem), b.bytes(b_count, elem)) {
        (Some((a0, a1)), Some((b0, b1))) => a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1,
        // Cannot happen for counts within their objects; refuse rather than guess.
        _ => true,
    }
}

/// Element index `i * nelems` of block `i`, checked.
pub(super) fn block_index(i: u32, nelems: usize) -> Result<usize> {
    (i as usize)
        .checked_mul(nelems)
        .ok_or_else(|| overflow("block index"))
}

pub(super) fn to_usize(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| overflow("element count"))
}

pub(super) fn overflow(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} overflows"))
}

pub(super) fn op_code(op: ReduceOp) -> u32 {
    ReduceOp::ALL.iter().position(|&o| o == op).unwrap_or(0) as u32
}

fn op_name(code: u32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| ReduceOp::ALL.get(i))
        .map_or("unknown", |op| op.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(offset: u64, len: u64) -> ObjDesc {
        ObjDesc {
            offset,
            len,
            place: 0,
            foreign: false,
        }
    }

    fn call(kind: Kind, nelems: u64, arg: u32) -> CallDesc {
        CallDesc {
            kind,
            elem: 8,
            nelems,
            arg,
            dest: obj(0, 64),
            source: obj(1024, 64),
            unsupported: false,
            unencodable: false,
        }
    }

    /// A team of world PEs 2, 4, 6, 8 seen from world PE 4.
    fn team() -> TeamInner {
        TeamInner::new(1, (2, 2, 4), 4, 5, |_| 0, (0, 0))
    }

    #[test]
    fn descriptors_survive_encoding() {
        let mut c = call(Kind::Reduce, u64::MAX, 6);
        c.dest = ObjDesc {
            offset: u64::MAX - 7,
            len: 3,
            place: 0xffff,
            foreign: true,
        };
        c.source.place = 17;
        c.elem = (1 << ELEM_BITS) - 1;
        c.unsupported = true;
        assert_eq!(CallDesc::decode(&c.encode()), Some(c));
        // What does not fit its field is flagged (and refused), never truncated.
        for big in [
            |c: &mut CallDesc| c.elem = 1 << ELEM_BITS,
            |c: &mut CallDesc| c.source.place = 1 << PLACE_BITS,
        ] {
            let mut c = call(Kind::Broadcast, 4, 0);
            big(&mut c);
            let back = CallDesc::decode(&c.encode()).expect("a known kind");
            assert!(back.unencodable);
            assert!(matches!(
                validate(&back, 4, "T"),
                Err(Error::InvalidArgument(_))
            ));
        }
        // An unknown kind is no descriptor.
        let mut words = call(Kind::Fcollect, 1, 0).encode();
        words[0] = (words[0] & !0xff) | 9;
        assert_eq!(CallDesc::decode(&words), None);
    }

    #[test]
    fn every_member_reaches_the_same_verdict() {
        let t = team();
        let good = call(Kind::Broadcast, 8, 1);
        let all = vec![Some(good); 4];
        assert_eq!(agree(&t, &all, "u64").map(|v| v.len()).ok(), Some(4));
        // A bad root on team PE 2 alone: an error naming it.
        let mut one = all.clone();
        one[2] = Some(call(Kind::Broadcast, 8, 4));
        let e = agree(&t, &one, "u64").unwrap_err().to_string();
        assert!(
            e.contains("root 4 is not in a team of 4 PEs")
                && e.contains("(passed by team PE 2 (world PE 6))"),
            "{e}"
        );
        // A valid but different root: non-symmetric, naming the member.
        let mut other = all.clone();
        other[3] = Some(call(Kind::Broadcast, 8, 0));
        let e = agree(&t, &other, "u64").unwrap_err();
        assert!(
            matches!(&e, Error::NonSymmetric(m) if m.contains("team PE 3 (world PE 8) passes root 0")),
            "{e}"
        );
        // A member without a descriptor for this call.
        let mut missing = all.clone();
        missing[1] = None;
        let e = agree(&t, &missing, "u64").unwrap_err();
        assert!(
            matches!(&e, Error::NonSymmetric(m) if m.contains("team PE 1 (world PE 4) is not in this call")),
            "{e}"
        );
        // Another collective.
        let mut kind = all;
        kind[0] = Some(call(Kind::Alltoall, 8, 0));
        assert!(matches!(
            agree(&t, &kind, "u64"),
            Err(Error::NonSymmetric(_))
        ));
    }

    #[test]
    fn collect_counts_may_differ_but_must_fit_together() {
        let t = team();
        let counts = |c: [u64; 4]| -> Vec<Option<CallDesc>> {
            c.iter().map(|&n| Some(call(Kind::Collect, n, 0))).collect()
        };
        assert!(agree(&t, &counts([10, 20, 30, 4]), "u64").is_ok());
        assert!(matches!(
            agree(&t, &counts([10, 20, 30, 5]), "u64"),
            Err(Error::InvalidArgument(m)) if m.contains("65 elements in all")
        ));
        assert!(matches!(
            agree(&t, &counts([u64::MAX, 1, 0, 0]), "u64"),
            Err(Error::OutOfBounds { .. })
        ));
    }

    #[test]
    fn sizes_overlaps_and_operators_are_checked() {
        let n = 4;
        let mut c = call(Kind::Fcollect, u64::MAX / 2, 0);
        assert!(
            matches!(validate(&c, n, "u64"), Err(Error::InvalidArgument(m)) if m.contains("overflows"))
        );
        c.nelems = 17; // 68 > 64
        assert!(matches!(
            validate(&c, n, "u64"),
            Err(Error::OutOfBounds {
                end: 68,
                len: 64,
                ..
            })
        ));
        c.nelems = 16;
        assert!(validate(&c, n, "u64").is_ok());
        // Overlap: the source inside the bytes the call writes ...
        c.source = obj(8 * 60, 4);
        c.nelems = 4;
        assert!(validate(&c, n, "u64").is_ok(), "past them: no overlap");
        c.source = obj(8 * 15, 4);
        c.nelems = 4;
        assert!(
            matches!(validate(&c, n, "u64"), Err(Error::InvalidArgument(m)) if m.contains("overlap"))
        );
        // ... on another place, no overlap.
        c.source.place = 1;
        assert!(validate(&c, n, "u64").is_ok());
        // In place: allowed for reduce and broadcast, partial overlap never.
        let mut r = call(Kind::Reduce, 8, op_code(ReduceOp::Sum));
        r.source = r.dest;
        assert!(validate(&r, n, "u64").is_ok());
        r.source.offset = 8;
        assert!(
            matches!(validate(&r, n, "u64"), Err(Error::InvalidArgument(m)) if m.contains("must not otherwise overlap"))
        );
        r.source = obj(1024, 64);
        r.unsupported = true;
        r.arg = op_code(ReduceOp::Xor);
        assert!(matches!(
            validate(&r, n, "f64"),
            Err(Error::UnsupportedReduction {
                op: "xor",
                ty: "f64"
            })
        ));
    }
}
