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
//! Source and destination may be the same object for reductions (in place); for the
//! other collectives they must not overlap. As in OpenSHMEM, every member must call
//! the same collective with the same arguments; the destination must not be in use.
//!
//! This module owns those algorithms. It must not implement the barrier (`team`) or
//! the transfers themselves (the RMA calls of `shmem`).

use super::{Inner, Shmem, SymVec};
use crate::error::{Error, Result};
use crate::reduce::{ReduceOp, Reducible};
use crate::sync::notify;
use crate::team::{Team, TeamInner, TeamState};
use bytemuck::Pod;
use std::sync::atomic::{fence, Ordering};

/// Broadcasts larger than this move in chunks of this many bytes, so that the tree's
/// levels work at once.
const BROADCAST_CHUNK: usize = 256 << 10;

impl Shmem {
    /// Copies `nelems` elements of `source` on the team's PE `root` into `dest` on
    /// every member, the root included (`shmem_broadcast`; collective over `team`).
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let (src, dst) = (shmem.alloc::<u32>(3, Place::Cpu)?, shmem.alloc::<u32>(3, Place::Cpu)?);
    /// shmem.local_write(&src, 0, &[7, 8, 9])?;
    /// shmem.broadcast(&shmem.team_world(), &dst, &src, 3, 0)?;
    /// assert_eq!(shmem.local_to_vec(&dst)?, [7, 8, 9]);
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
        self.locate(dest, 0, nelems)?;
        self.locate(source, 0, nelems)?;
        if root >= t.size {
            return Err(Error::InvalidArgument(format!(
                "broadcast root {root} is not in a team of {} PEs",
                t.size
            )));
        }
        let mut state = self.team_state(team)?;
        self.inner.team_barrier(t, &mut state);
        let n = t.size;
        let rel = (t.me + n - root) % n;
        let chunk = (BROADCAST_CHUNK / size_of::<T>().max(1)).max(1);
        let chunks = nelems.div_ceil(chunk).max(1);
        // Children in the binomial tree: rel + 2^k for every 2^k above rel's highest
        // bit, largest subtree first.
        let mut children = Vec::new();
        let mut k = 1u32;
        while k < n {
            if k > rel && rel + k < n {
                children.push(t.world((rel + k + root) % n) as u32);
            }
            k <<= 1;
        }
        children.reverse();
        let from_root = rel == 0;
        let base = state.arrivals;
        for c in 0..chunks {
            let lo = c * chunk;
            let cnt = chunk.min(nelems - lo);
            if from_root {
                self.put_from(dest, lo, source, lo, cnt, self.my_pe())?;
            } else {
                self.inner.await_arrivals(t, base + c as u64 + 1);
            }
            for &child in &children {
                let src = if from_root { source } else { dest };
                self.put_from(dest, lo, src, lo, cnt, child)?;
                self.inner.arrive(t, child as usize)?;
            }
        }
        if !from_root {
            state.arrivals += chunks as u64;
        }
        state.colls += 1;
        // This PE's own copy may have travelled as an AM (`am` conduit, boards).
        self.inner.am.quiet()
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
        let t = &team.inner;
        let total = nelems
            .checked_mul(t.size as usize)
            .ok_or_else(|| Error::InvalidArgument("fcollect size overflows".into()))?;
        self.locate(dest, 0, total)?;
        self.locate(source, 0, nelems)?;
        let mut state = self.team_state(team)?;
        self.inner.team_barrier(t, &mut state);
        let at = t.me as usize * nelems;
        self.exchange(t, &mut state, |to| Ok((dest, at, source, 0, nelems, to)))
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
        let t = &team.inner;
        self.locate(source, 0, nelems)?;
        let mut state = self.team_state(team)?;
        let inner = &self.inner;
        let parity = (state.colls % 2) as usize;
        inner.segs.mine().control().teams[t.slot].scratch[parity]
            .store(nelems as u64, Ordering::Relaxed);
        inner.team_barrier(t, &mut state);
        let counts: Vec<u64> = (0..t.size)
            .map(|i| {
                inner.segs.segs[t.world(i)].control().teams[t.slot].scratch[parity]
                    .load(Ordering::Relaxed)
            })
            .collect();
        let at: u64 = counts[..t.me as usize].iter().sum();
        let total: u64 = counts.iter().sum();
        if total > dest.len() as u64 {
            // Every member sees the same counts and lengths, so all fail alike.
            state.colls += 1;
            return Err(Error::InvalidArgument(format!(
                "collect: {total} elements in all do not fit a destination of {}",
                dest.len()
            )));
        }
        self.exchange(t, &mut state, |to| {
            Ok((dest, at as usize, source, 0, nelems, to))
        })?;
        Ok(total as usize)
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
        let t = &team.inner;
        let total = nelems
            .checked_mul(t.size as usize)
            .ok_or_else(|| Error::InvalidArgument("alltoall size overflows".into()))?;
        self.locate(dest, 0, total)?;
        self.locate(source, 0, total)?;
        let mut state = self.team_state(team)?;
        self.inner.team_barrier(t, &mut state);
        let at = t.me as usize * nelems;
        self.exchange(t, &mut state, |to| {
            let j = t.of_world(to).unwrap_or(0) as usize;
            Ok((dest, at, source, j * nelems, nelems, to))
        })
    }

    /// The all-members exchange of fcollect, collect and alltoall: for every member
    /// (this one first, then from its right neighbour on), `block(world pe)` says
    /// which (dest, dest index, source, source index, count) to put there; then waits
    /// for the n - 1 blocks of the others.
    #[allow(clippy::type_complexity)]
    fn exchange<'a, T: Pod>(
        &self,
        t: &TeamInner,
        state: &mut TeamState,
        block: impl Fn(u32) -> Result<(&'a SymVec<T>, usize, &'a SymVec<T>, usize, usize, u32)>,
    ) -> Result<()> {
        let n = t.size;
        for step in 0..n {
            let to = t.world((t.me + step) % n) as u32;
            let (dest, at, source, from, count, pe) = block(to)?;
            self.put_from(dest, at, source, from, count, pe)?;
            if step > 0 {
                self.inner.arrive(t, to as usize)?;
            }
        }
        state.arrivals += u64::from(n - 1);
        self.inner.await_arrivals(t, state.arrivals);
        state.colls += 1;
        // The block to this PE itself may have travelled as an AM.
        self.inner.am.quiet()
    }

    /// Combines `nreduce` elements of every member's `source` with `op` into `dest` on
    /// every member (`shmem_<op>_reduce`; `dest` and `source` may be the same object).
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
        if !T::supports(op) {
            return Err(Error::UnsupportedReduction {
                op: op.name(),
                ty: std::any::type_name::<T>(),
            });
        }
        let t = &team.inner;
        self.locate(dest, 0, nreduce)?;
        self.locate(source, 0, nreduce)?;
        let mut state = self.team_state(team)?;
        self.inner.team_barrier(t, &mut state);
        let n = t.size as usize;
        // Member i owns chunk i: the first nreduce % n chunks get one element more.
        let chunk_of = |i: usize| {
            let (q, r) = (nreduce / n, nreduce % n);
            let lo = i * q + i.min(r);
            (lo, q + usize::from(i < r))
        };
        let (lo, len) = chunk_of(t.me as usize);
        let mut acc = vec![T::zeroed(); len];
        let mut other = vec![T::zeroed(); len];
        if len > 0 {
            self.get(source, lo, &mut acc, self.my_pe())?;
            for step in 1..n as u32 {
                let from = t.world((t.me + step) % t.size) as u32;
                self.get(source, lo, &mut other, from)?;
                T::combine(op, &mut acc, &other);
            }
        }
        for step in 0..n as u32 {
            let to = t.world((t.me + step) % t.size) as u32;
            if len > 0 {
                self.put(dest, lo, &acc, to)?;
            }
            if step > 0 {
                self.inner.arrive(t, to as usize)?;
            }
        }
        state.arrivals += n as u64 - 1;
        self.inner.await_arrivals(t, state.arrivals);
        state.colls += 1;
        // Puts to other members completed before their arrival was signalled; the one
        // to this PE itself may have travelled as an AM.
        self.inner.am.quiet()
    }
}

impl Inner {
    /// Signals one data arrival to world PE `to` in `team`'s slot, after everything
    /// this PE put before (AM puts to boards are flushed; stores are released).
    fn arrive(&self, team: &TeamInner, to: usize) -> Result<()> {
        self.am.quiet()?;
        fence(Ordering::Release);
        if let Some(emu) = &self.emulation {
            // The flag follows the data through the emulated NIC, so it arrives after.
            emu.message(to);
        }
        let control = self.segs.segs[to].control();
        control.teams[team.slot]
            .arrivals
            .fetch_add(1, Ordering::Release);
        notify(&control.user_signal);
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
    }
}
