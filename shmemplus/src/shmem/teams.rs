//! The handle's team calls: the world and shared teams, `team_split_strided`,
//! `team_split_2d`, `team_destroy`, `team_sync` and `barrier`.
//!
//! This module owns how the members of a parent team agree on a slot for a new team
//! (each publishes its free slots and highest barrier epoch in the parent's scratch
//! words, then all combine the same values) and the checks on team arguments. It must
//! not implement the barrier protocol (`team`) or move user data (`collectives`).

use super::{Inner, Shmem};
use crate::error::{Error, Result};
use crate::segment::MAX_TEAMS;
use crate::team::{Team, TeamInner, TeamState};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

impl Shmem {
    /// The world team: every PE, numbered as `my_pe` (`SHMEM_TEAM_WORLD`).
    pub fn team_world(&self) -> Team {
        Team {
            inner: self.inner.world.clone(),
        }
    }

    /// The PEs of this PE's node, in world order (`SHMEM_TEAM_SHARED`): the PEs whose
    /// CPU heaps this one reaches without crossing the network.
    pub fn team_shared(&self) -> Team {
        Team {
            inner: self.inner.shared.clone(),
        }
    }

    /// Locks `team`'s counters for a collective, after checking the handle.
    pub(super) fn team_state<'t>(&self, team: &'t Team) -> Result<MutexGuard<'t, TeamState>> {
        self.live()?;
        if team.inner.job != self.inner.job {
            return Err(Error::InvalidTeam);
        }
        let state = team.inner.lock();
        if state.destroyed {
            return Err(Error::InvalidTeam);
        }
        Ok(state)
    }

    /// Synchronises the members of `team` (`shmem_team_sync`): returns when every
    /// member has called it. Does not complete puts (see [`Shmem::barrier`]).
    pub fn team_sync(&self, team: &Team) -> Result<()> {
        let mut state = self.team_state(team)?;
        self.inner.team_barrier(&team.inner, &mut state);
        Ok(())
    }

    /// `quiet`, then a synchronisation of `team`'s members: after it every put a
    /// member issued before the barrier is visible to every member.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// shmem.barrier(&shmem.team_shared())?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn barrier(&self, team: &Team) -> Result<()> {
        self.quiet()?;
        self.team_sync(team)
    }

    /// Splits `parent` (collective over it): the new team has the parent's PEs
    /// `start, start + stride, ...` (`size` of them, in parent numbering). Members get
    /// `Some(team)`, the other parent PEs `None` (`shmem_team_split_strided`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let world = shmem.team_world();
    /// // The even PEs of the world (here: PE 0 alone).
    /// let n_even = (shmem.n_pes() + 1) / 2;
    /// let evens = shmem.team_split_strided(&world, 0, 2, n_even)?;
    /// let evens = evens.expect("PE 0 is even");
    /// assert_eq!(evens.my_pe(), shmem.my_pe() / 2);
    /// shmem.team_destroy(evens)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn team_split_strided(
        &self,
        parent: &Team,
        start: u32,
        stride: u32,
        size: u32,
    ) -> Result<Option<Team>> {
        let p = &parent.inner;
        let last = u64::from(start) + u64::from(stride) * u64::from(size.max(1) - 1);
        if size == 0 || stride == 0 || last >= u64::from(p.size) {
            return Err(Error::InvalidArgument(format!(
                "team split: start {start}, stride {stride}, size {size} does not fit a parent of {} PEs (size and stride must be at least 1)",
                p.size
            )));
        }
        let geometry = (p.start + p.stride * start, p.stride * stride, size);
        let mut teams = self.split(parent, &[geometry_if_member(geometry, self.my_pe())])?;
        Ok(teams.pop().flatten())
    }

    /// Splits `parent` (collective over it) into a grid with `xrange` PEs per row:
    /// returns this PE's row team (consecutive parent PEs) and column team (parent PEs
    /// `xrange` apart) (`shmem_team_split_2d`). The last row may be short.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let (row, column) = shmem.team_split_2d(&shmem.team_world(), 2)?;
    /// assert_eq!(row.my_pe(), shmem.my_pe() % 2);
    /// assert_eq!(column.my_pe(), shmem.my_pe() / 2);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn team_split_2d(&self, parent: &Team, xrange: u32) -> Result<(Team, Team)> {
        let p = &parent.inner;
        if xrange == 0 {
            return Err(Error::InvalidArgument(
                "team split 2d: xrange must be at least 1".into(),
            ));
        }
        let xrange = xrange.min(p.size);
        let me = p.me;
        let row_start = me / xrange * xrange;
        let row = (
            p.start + p.stride * row_start,
            p.stride,
            xrange.min(p.size - row_start),
        );
        let col_start = me % xrange;
        let col = (
            p.start + p.stride * col_start,
            p.stride * xrange,
            (p.size - col_start).div_ceil(xrange),
        );
        let mut teams = self
            .split(parent, &[Some(row), Some(col)])?
            .into_iter()
            .flatten();
        match (teams.next(), teams.next()) {
            (Some(row), Some(col)) => Ok((row, col)),
            _ => Err(Error::InvalidArgument(
                "team split 2d: this PE is in no row".into(),
            )),
        }
    }

    /// Destroys `team` (collective over its members): synchronises them and frees the
    /// team's slot. The world and shared teams cannot be destroyed.
    pub fn team_destroy(&self, team: Team) -> Result<()> {
        if Arc::ptr_eq(&team.inner, &self.inner.world)
            || Arc::ptr_eq(&team.inner, &self.inner.shared)
        {
            return Err(Error::InvalidArgument(
                "the world and shared teams cannot be destroyed".into(),
            ));
        }
        self.quiet()?;
        let mut state = self.team_state(&team)?;
        self.inner.team_barrier(&team.inner, &mut state);
        state.destroyed = true;
        *self
            .inner
            .team_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner()) &= !(1u64 << team.inner.slot);
        Ok(())
    }

    /// The split protocol: every parent member calls it with the (world start,
    /// stride, size) of each new team it belongs to (`None` where it belongs to none;
    /// the list has the same length on every member). All members agree on one free
    /// slot per list position and a barrier epoch base above all their epochs.
    fn split(
        &self,
        parent: &Team,
        memberships: &[Option<(u32, u32, u32)>],
    ) -> Result<Vec<Option<Team>>> {
        let inner = &self.inner;
        let mut state = self.team_state(parent)?;
        let p = &parent.inner;
        let free = !*inner.team_slots.lock().unwrap_or_else(|e| e.into_inner()) & slot_mask();
        let scratch = &inner.segs.mine().control().teams[p.slot].scratch;
        scratch[0].store(free, Ordering::Relaxed);
        scratch[1].store(inner.epoch_high.load(Ordering::Relaxed), Ordering::Relaxed);
        inner.team_barrier(p, &mut state);
        let (mut common_free, mut epoch_base) = (slot_mask(), 0);
        for i in 0..p.size {
            let s = &inner.segs.segs[p.world(i)].control().teams[p.slot].scratch;
            common_free &= s[0].load(Ordering::Relaxed);
            epoch_base = epoch_base.max(s[1].load(Ordering::Relaxed));
        }
        // Nobody overwrites the scratch words before everyone has read them.
        inner.team_barrier(p, &mut state);
        drop(state);
        let mut slots = Vec::with_capacity(memberships.len());
        for _ in memberships {
            if common_free == 0 {
                return Err(Error::TeamsExhausted { max: MAX_TEAMS });
            }
            let slot = common_free.trailing_zeros() as usize;
            common_free &= !(1 << slot);
            slots.push(slot);
        }
        let me = self.my_pe();
        let mut out = Vec::with_capacity(memberships.len());
        for (geometry, slot) in memberships.iter().zip(slots) {
            out.push(geometry.map(|g| inner.new_team(g, me, slot, epoch_base)));
        }
        Ok(out)
    }
}

/// `geometry` if world PE `me` is in it.
fn geometry_if_member((start, stride, size): (u32, u32, u32), me: u32) -> Option<(u32, u32, u32)> {
    let rel = me.checked_sub(start)?;
    (rel % stride == 0 && rel / stride < size).then_some((start, stride, size))
}

/// Bits of the usable team slots.
fn slot_mask() -> u64 {
    if MAX_TEAMS >= 64 {
        u64::MAX
    } else {
        (1u64 << MAX_TEAMS) - 1
    }
}

impl Inner {
    /// A team this PE is a member of, in `slot`, marking the slot used.
    fn new_team(&self, geometry: (u32, u32, u32), me: u32, slot: usize, epoch_base: u64) -> Team {
        *self.team_slots.lock().unwrap_or_else(|e| e.into_inner()) |= 1 << slot;
        // No collective of an earlier team in this slot is in flight (it was
        // destroyed with a barrier), so the arrivals word is quiescent.
        let arrivals = self.segs.mine().control().teams[slot]
            .arrivals
            .load(Ordering::Acquire);
        let topology = self.topology;
        Team {
            inner: Arc::new(TeamInner::new(
                self.job,
                geometry,
                me,
                slot,
                |pe| topology.node_of(pe),
                (epoch_base, arrivals),
            )),
        }
    }
}
