//! Collectives over teams: broadcast, collect, fcollect, alltoall and reductions, on
//! symmetric objects that may live on the CPU or on a board.
//!
//! Every collective opens with the team's barrier (so every member's destination is
//! free and no member can run more than one collective ahead of another), then moves
//! data one-sidedly and counts *arrivals*: a member that put data into another's
//! destination bumps the arrivals word of the team's slot in that member's control
//! block, after the data (the same order as `put_signal`). A member returns once its
//! own data is in. The data movement is spread over the members, never funnelled
//! through one PE:
//!
//! - broadcast: a binomial tree from the root, in pipelined chunks for large sizes
//!   (each member forwards a chunk as soon as it has it), ceil(log2 n) steps deep;
//! - fcollect / collect / alltoall: each member puts its block(s) straight into every
//!   other member's destination, starting with its right neighbour (n - 1 puts each,
//!   all members in parallel);
//! - reductions: reduce-scatter then allgather: member i combines chunk i of every
//!   member's source (n - 1 gets), then puts the result chunk to every member. Each
//!   member moves 2(n - 1)/n of the data, the bandwidth-optimal amount.
//!
//! Source and destination may be the same object for reductions and broadcast (in
//! place) but must not otherwise overlap; for the other collectives they must not
//! overlap at all. As in OpenSHMEM, every member must call the same collective with
//! the same arguments; the destination must not be in use.
//!
//! # An error never leaves a member waiting
//!
//! Before the opening barrier every member publishes a *descriptor* of its call (kind,
//! element size, count, root or operator, both objects) in its copy of the team's slot
//! (`TeamSync::calls`, the copy of the opening barrier epoch's parity). After the
//! barrier every member checks every member's descriptor, in team order, with the same
//! pure function of the descriptors. So a bad argument, whether every member or a
//! single one passed it, and a disagreement between members (another root, count or
//! object, or a member in another call of the team) give the *same* error on every
//! member, before any member has moved data or waits for any: the team stays in step
//! and can be used again. Past that check every member is committed, and a failure
//! can only be this PE's own (a board DMA failing, say): it ends the job with a message
//! naming the PE and the call (`fatal::abort_job`), since returning would leave the
//! other members waiting forever. Failures of puts this PE issued *before* the call are
//! flushed out first (a `quiet` before the descriptor is published) and returned once
//! the collective has completed, so they never count as the collective's own. The
//! check costs each member one cache line per member (a descriptor is 8 words).
//!
//! Why every member reads every descriptor intact, and all read the same, is argued
//! in `calls`, beside the code that writes and reads them.
//!
//! Two things remain the program's duty, as in OpenSHMEM: the members make matching
//! sequences of team calls (a member that calls `team_sync` where the others call a
//! collective returns from its barrier without error, while the others refuse), and a
//! finalized handle or a destroyed team is refused by this PE before the call begins,
//! without a word to the others (finalize and team_destroy are collective themselves,
//! so in a correct program every member refuses alike).
//!
//! This module owns those algorithms and the order of a call's steps (publish,
//! barrier, agree, move, count arrivals). It must not implement the barrier (`team`),
//! the descriptors and the verdict on them (`calls`) or the transfers themselves
//! (`rma`, `route`).

use super::calls::{
    agree, block_index, op_code, overflow, publish, read, read_values, to_usize, CallDesc, Kind,
    ObjDesc,
};
use super::{Inner, Shmem, SymVec};
use crate::am::{ControlOp, Wake};
use crate::error::{Error, Result};
use crate::fatal;
use crate::reduce::{ReduceOp, Reducible};
use crate::team::{Team, TeamInner, TeamState};
use bytemuck::Pod;
use std::sync::atomic::{fence, Ordering};
use std::sync::MutexGuard;

/// Broadcasts larger than this move in chunks of this many bytes, so that the tree's
/// levels work at once.
const BROADCAST_CHUNK: usize = 256 << 10;

impl Shmem {
    /// Copies `nelems` elements of `source` on the team's PE `root` into `dest` on
    /// every member, the root included (`shmem_broadcast`; collective over `team`).
    /// `dest` and `source` may be the same object.
    ///
    /// A bad argument (a root outside the team, a count past either object, objects
    /// that partly overlap) or members that disagree on the arguments give the same
    /// error on every member, which can then go on using the team.
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let (src, dst) = (shmem.alloc::<u32>(3, Place::Cpu)?, shmem.alloc::<u32>(3, Place::Cpu)?);
    /// shmem.local_write(&src, 0, &[7, 8, 9])?;
    /// shmem.broadcast(&shmem.team_world(), &dst, &src, 3, 0)?;
    /// assert_eq!(shmem.local_to_vec(&dst)?, [7, 8, 9]);
    /// // A root outside the team: refused (on every member), and the team still works.
    /// assert!(shmem.broadcast(&shmem.team_world(), &dst, &src, 3, 1).is_err());
    /// shmem.broadcast(&shmem.team_world(), &dst, &src, 3, 0)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn broadcast<T: Pod>(
        &self,
        team: &Team,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nelems: usize,
        root: u32,
    ) -> Result<()> {
        let t = &team.inner;
        let call = self.describe_call(Kind::Broadcast, dest, source, nelems, root);
        let (mut c, _) = self.begin::<T>(team, call)?;
        let n = u64::from(t.size);
        let me = u64::from(t.me);
        // The agreement checked root < n, so rel < n.
        let rel = (me + n - u64::from(root)) % n;
        let chunk = (BROADCAST_CHUNK / size_of::<T>().max(1)).max(1);
        let chunks = nelems.div_ceil(chunk).max(1);
        // Children in the binomial tree: rel + 2^k for every 2^k above rel's highest
        // bit, largest subtree first.
        let mut children = Vec::new();
        let mut k = 1u64;
        while k < n {
            if k > rel && rel + k < n {
                children.push(t.world(((rel + k + u64::from(root)) % n) as u32) as u32);
            }
            k <<= 1;
        }
        children.reverse();
        let from_root = rel == 0;
        let base = c.state.arrivals;
        for i in 0..chunks {
            // i < chunks = ceil(nelems / chunk), so lo < nelems (or both are 0).
            let lo = i * chunk;
            let cnt = chunk.min(nelems - lo);
            if from_root {
                c.step(self.put_from(dest, lo, source, lo, cnt, self.my_pe()));
            } else {
                self.inner.await_arrivals(t, base + i as u64 + 1);
            }
            for &child in &children {
                let src = if from_root { source } else { dest };
                c.step(self.put_from(dest, lo, src, lo, cnt, child));
                c.step(self.inner.arrive(t, child as usize));
            }
        }
        if !from_root {
            c.state.arrivals += chunks as u64;
        }
        // This PE's own copy may have travelled as an AM (`am` conduit, boards).
        c.finish(&self.inner)
    }

    /// Concatenates `nelems` elements of every member's `source` into `dest` on every
    /// member, in team order (`shmem_fcollect`; `dest` holds `n_pes * nelems`).
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let n = shmem.n_pes() as usize;
    /// let (src, dst) = (shmem.alloc::<u64>(2, Place::Cpu)?, shmem.alloc::<u64>(2 * n, Place::Cpu)?);
    /// let me = shmem.my_pe() as u64;
    /// shmem.local_write(&src, 0, &[me, me * 10])?;
    /// shmem.fcollect(&shmem.team_world(), &dst, &src, 2)?;
    /// assert_eq!(shmem.local_read_one(&dst, 1)?, 0);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn fcollect<T: Pod>(
        &self,
        team: &Team,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nelems: usize,
    ) -> Result<()> {
        let call = self.describe_call(Kind::Fcollect, dest, source, nelems, 0);
        let (c, _) = self.begin::<T>(team, call)?;
        let at = c.step(block_index(team.inner.me, nelems));
        self.exchange(c, dest, source, |_| Ok((at, 0, nelems)))
    }

    /// Concatenates every member's `source[..nelems]`, where `nelems` may differ
    /// between members, into `dest` on every member in team order (`shmem_collect`);
    /// returns the total number of elements.
    pub fn collect<T: Pod>(
        &self,
        team: &Team,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nelems: usize,
    ) -> Result<usize> {
        let call = self.describe_call(Kind::Collect, dest, source, nelems, 0);
        let (c, calls) = self.begin::<T>(team, call)?;
        // The agreement checked that the counts add up within `dest`.
        let at = calls[..team.inner.me as usize]
            .iter()
            .map(|d| d.nelems)
            .sum::<u64>();
        let total = calls.iter().map(|d| d.nelems).sum::<u64>();
        let at = c.step(to_usize(at));
        let total = c.step(to_usize(total));
        self.exchange(c, dest, source, |_| Ok((at, 0, nelems)))?;
        Ok(total)
    }

    /// Sends block j (`nelems` elements at `j * nelems`) of every member's `source` to
    /// member j, where it lands at block i of `dest` for sender i (`shmem_alltoall`).
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let n = shmem.n_pes() as usize;
    /// let (src, dst) = (shmem.alloc::<u32>(n, Place::Cpu)?, shmem.alloc::<u32>(n, Place::Cpu)?);
    /// let me = shmem.my_pe();
    /// let blocks: Vec<u32> = (0..n as u32).map(|j| me * 100 + j).collect();
    /// shmem.local_write(&src, 0, &blocks)?;
    /// shmem.alltoall(&shmem.team_world(), &dst, &src, 1)?;
    /// assert_eq!(shmem.local_read_one(&dst, 0)?, me); // block `me` of PE 0
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alltoall<T: Pod>(
        &self,
        team: &Team,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nelems: usize,
    ) -> Result<()> {
        let call = self.describe_call(Kind::Alltoall, dest, source, nelems, 0);
        let (c, _) = self.begin::<T>(team, call)?;
        let at = c.step(block_index(team.inner.me, nelems));
        self.exchange(c, dest, source, |j| {
            Ok((at, block_index(j, nelems)?, nelems))
        })
    }

    /// The all-members exchange of fcollect, collect and alltoall: for every member j
    /// (this one first, then from its right neighbour on), `block(j)` says which
    /// (dest index, source index, count) to put there; then waits for the n - 1 blocks
    /// of the others. The agreement checked every range.
    fn exchange<T: Pod>(
        &self,
        mut c: Committed<'_>,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        block: impl Fn(u32) -> Result<(usize, usize, usize)>,
    ) -> Result<()> {
        let t = c.team;
        let n = t.size;
        for step in 0..n {
            let j = ((u64::from(t.me) + u64::from(step)) % u64::from(n)) as u32;
            let to = t.world(j) as u32;
            let (at, from, count) = c.step(block(j));
            c.step(self.put_from(dest, at, source, from, count, to));
            if step > 0 {
                c.step(self.inner.arrive(t, to as usize));
            }
        }
        c.state.arrivals += u64::from(n - 1);
        self.inner.await_arrivals(t, c.state.arrivals);
        // The block to this PE itself may have travelled as an AM.
        c.finish(&self.inner)
    }

    /// Combines `nreduce` elements of every member's `source` with `op` into `dest` on
    /// every member (`shmem_<op>_reduce`; `dest` and `source` may be the same object,
    /// but must not otherwise overlap).
    ///
    /// ```
    /// use shmemplus::{Place, ReduceOp};
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<i64>(2, Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[1, shmem.my_pe() as i64])?;
    /// shmem.reduce(&shmem.team_world(), &v, &v, 2, ReduceOp::Sum)?; // in place
    /// assert_eq!(shmem.local_read_one(&v, 0)?, shmem.n_pes() as i64);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn reduce<T: Reducible>(
        &self,
        team: &Team,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nreduce: usize,
        op: ReduceOp,
    ) -> Result<()> {
        let t = &team.inner;
        let mut call = self.describe_call(Kind::Reduce, dest, source, nreduce, op_code(op));
        call.unsupported = !T::supports(op);
        let (mut c, _) = self.begin::<T>(team, call)?;
        let n = t.size as usize;
        // Member i owns chunk i: the first nreduce % n chunks get one element more.
        // lo = i * q + min(i, r) <= nreduce for i < n, so nothing here overflows; the
        // checked forms keep it so by construction.
        let chunk_of = |i: usize| -> Result<(usize, usize)> {
            let (q, r) = (nreduce / n, nreduce % n);
            let lo = i
                .checked_mul(q)
                .and_then(|x| x.checked_add(i.min(r)))
                .ok_or_else(|| overflow("reduce chunk"))?;
            Ok((lo, q + usize::from(i < r)))
        };
        let (lo, len) = c.step(chunk_of(t.me as usize));
        let mut acc = vec![T::zeroed(); len];
        let mut other = vec![T::zeroed(); len];
        if len > 0 {
            c.step(self.get(source, lo, &mut acc, self.my_pe()));
            for step in 1..t.size {
                let from = t.world(((u64::from(t.me) + u64::from(step)) % n as u64) as u32);
                c.step(self.get(source, lo, &mut other, from as u32));
                T::combine(op, &mut acc, &other);
            }
        }
        for step in 0..t.size {
            let to = t.world(((u64::from(t.me) + u64::from(step)) % n as u64) as u32) as u32;
            if len > 0 {
                c.step(self.put(dest, lo, &acc, to));
            }
            if step > 0 {
                c.step(self.inner.arrive(t, to as usize));
            }
        }
        c.state.arrivals += n as u64 - 1;
        self.inner.await_arrivals(t, c.state.arrivals);
        // Puts to other members completed before their arrival was signalled; the one
        // to this PE itself may have travelled as an AM.
        c.finish(&self.inner)
    }

    /// Arms a one-shot failure of this PE's next *committed* step of `call` (one of
    /// `"broadcast"`, `"fcollect"`, `"collect"`, `"alltoall"`, `"reduce"`, `"alloc"`):
    /// the step fails as a board DMA could, after the other PEs committed to the call,
    /// and so ends the job with a message naming this PE and the call. A test hook for
    /// that path; a program has no use for it.
    #[doc(hidden)]
    pub fn inject_local_failure(&self, call: &str) {
        fatal::inject(call);
    }

    /// This PE's descriptor of a call on `dest` and `source`.
    fn describe_call<T: Pod>(
        &self,
        kind: Kind,
        dest: &SymVec<T>,
        source: &SymVec<T>,
        nelems: usize,
        arg: u32,
    ) -> CallDesc {
        let obj = |o: &SymVec<T>| ObjDesc {
            offset: o.offset as u64,
            len: o.len as u64,
            place: o.place.to_wire(),
            foreign: o.job != self.inner.job,
        };
        CallDesc {
            kind,
            elem: size_of::<T>() as u64,
            nelems: nelems as u64,
            arg,
            dest: obj(dest),
            source: obj(source),
            unsupported: false,
            unencodable: false,
        }
    }

    /// Opens a collective: flushes this PE's earlier puts, publishes `call`, passes
    /// the team's barrier and checks every member's descriptor (see the module doc).
    /// Returns the committed call and every member's descriptor in team order, or the
    /// error every member returns alike.
    fn begin<'t, T: Pod>(
        &self,
        team: &'t Team,
        call: CallDesc,
    ) -> Result<(Committed<'t>, Vec<CallDesc>)> {
        let t = &team.inner;
        let inner = &self.inner;
        let mut state = self.team_state(team)?;
        // Failures of earlier puts surface here, not in the collective's own flushes
        // (where they would be fatal); they are returned after the call.
        let earlier = inner.am.quiet().err();
        let epoch = state.epoch + 1;
        let slot = (epoch % 2) as usize;
        publish(
            &inner.segs.mine().control().teams[t.slot].calls[slot],
            epoch,
            &call,
        );
        inner.team_barrier(t, &mut state);
        debug_assert_eq!(state.epoch, epoch);
        let calls: Vec<Option<CallDesc>> = (0..t.size)
            .map(|i| match inner.segs.peer(t.world(i)) {
                Some(seg) => Ok(read(&seg.control().teams[t.slot].calls[slot], epoch)),
                // A member on another host: its words in one round trip, which its
                // progress thread answers whole (no writer overlaps it, as above).
                None => inner
                    .am
                    .control_words(t.world(i), |c| &c.teams[t.slot].calls[slot][..])
                    .map(|words| read_values(&words, epoch)),
            })
            .collect::<Result<_>>()?;
        match agree(t, &calls, std::any::type_name::<T>()) {
            Ok(calls) => Ok((
                Committed {
                    me: inner.me,
                    call: call.kind.name(),
                    team: t,
                    state,
                    earlier,
                },
                calls,
            )),
            Err(e) => {
                if let Some(earlier) = earlier {
                    crate::diag::warn(
                        inner.me,
                        format_args!(
                            "a put before a refused {} failed: {earlier}",
                            call.kind.name()
                        ),
                    );
                }
                Err(e)
            }
        }
    }
}

/// A collective past its agreement: every member has committed to moving data, so a
/// failure from here on is this PE's alone and ends the job (`step`).
struct Committed<'t> {
    me: u32,
    call: &'static str,
    team: &'t TeamInner,
    state: MutexGuard<'t, TeamState>,
    /// The failure of a put issued before the call, returned after it.
    earlier: Option<Error>,
}

impl Committed<'_> {
    /// `r`'s value; an error ends the job (the other members wait for this PE).
    fn step<T>(&self, r: Result<T>) -> T {
        fatal::committed(self.me, self.call, r)
    }

    /// Completes this PE's part: flushes its AM transfers (the copy to itself may be
    /// one); returns the failure of an earlier put, if any.
    fn finish(mut self, inner: &Inner) -> Result<()> {
        self.step(inner.am.quiet());
        match self.earlier.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Inner {
    /// Signals one data arrival to world PE `to` in `team`'s slot, after everything
    /// this PE put before (AM puts to boards are flushed; stores are released).
    fn arrive(&self, team: &TeamInner, to: usize) -> Result<()> {
        self.am.quiet()?;
        fence(Ordering::Release);
        let _call = self.clock.enter();
        // The flag follows the data through the emulated NIC, so it arrives after.
        let delivered = self.emulation.as_ref().and_then(|emu| emu.message(to));
        self.stamp_arrival(team, to, delivered);
        self.am
            .control_word(to, |c| &c.teams[team.slot].arrivals)
            .post(ControlOp::Add, 1, Wake::User);
        Ok(())
    }

    /// Waits until this PE's arrivals word of `team`'s slot reaches `expected`.
    fn await_arrivals(&self, team: &TeamInner, expected: u64) {
        let control = self.segs.mine().control();
        let word = &control.teams[team.slot].arrivals;
        self.flush_wakes();
        self.policy.wait_until(
            &control.user_signal,
            || word.load(Ordering::Acquire) >= expected,
            || {
                self.flush_wakes();
                self.am.pump_replies()
            },
        );
        self.observe_arrivals(team);
    }
}
