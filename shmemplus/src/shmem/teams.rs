//! The handle's team calls: the world and shared teams, `team_split_strided`,
//! `team_split_2d`, `team_destroy`, `team_sync`, `barrier` and `barrier_all`.
//!
//! This module owns how the members of a parent team agree on a split (each publishes
//! the call it makes, its free slots and highest barrier epoch in the parent's scratch
//! words, all combine the same values, then each claims the chosen slots; see
//! `Shmem::split`) and the checks on team arguments. It must
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
        // A failed earlier put is reported after the synchronisation, which the other
        // members wait for.
        let completed = self.quiet();
        self.team_sync(team)?;
        completed
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
        match i32::try_from(stride) {
            Ok(stride) => self.team_split_strided_signed(parent, start, stride, size),
            // No team of two members or more has such a stride; a one-PE team may name
            // any stride, and only the sign shows (in `Team::world_geometry`).
            Err(_) if size == 1 => self.team_split_strided_signed(parent, start, i32::MAX, 1),
            Err(_) => self.team_split_strided_signed(parent, start, 0, size),
        }
    }

    /// [`Shmem::team_split_strided`] with a stride that may be negative, as
    /// OpenSHMEM's `shmem_team_split_strided` allows: the new team's PE `i` is the
    /// parent's PE `start + stride * i`, so a negative stride numbers the team
    /// downwards from `start`. A stride of 0 is refused, as by the unsigned form.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let world = shmem.team_world();
    /// let last = shmem.n_pes() - 1;
    /// // Every PE, numbered from the last down.
    /// let down = shmem.team_split_strided_signed(&world, last, -1, shmem.n_pes())?;
    /// let down = down.expect("every PE is a member");
    /// assert_eq!(down.my_pe(), last - shmem.my_pe());
    /// assert_eq!(down.world_geometry(), (last, -1, shmem.n_pes()));
    /// shmem.team_destroy(down)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn team_split_strided_signed(
        &self,
        parent: &Team,
        start: u32,
        stride: i32,
        size: u32,
    ) -> Result<Option<Team>> {
        let p = &parent.inner;
        let last = i64::from(start) + i64::from(stride) * i64::from(size.max(1) - 1);
        let call = SplitCall::Strided {
            start,
            stride,
            size,
        };
        // A bad geometry is not returned here: the other members are entering the
        // split, so this PE enters it too and all of them refuse it together.
        let fits =
            size > 0 && stride != 0 && start < p.size && (0..i64::from(p.size)).contains(&last);
        let memberships = if !fits {
            Err(Error::InvalidArgument(format!(
                "team split: start {start}, stride {stride}, size {size} does not fit a parent of {} PEs (size and the stride's magnitude must be at least 1)",
                p.size
            )))
        } else {
            // Parent PEs `start` and `last` are inside the parent, so every member is
            // a world PE. A one-PE team may name any stride, which only shows in
            // `world_geometry`; it saturates instead of overflowing.
            let world_stride = p.stride.saturating_mul(i64::from(stride));
            let geometry = (p.world(start) as u32, world_stride, size);
            Ok(vec![geometry_if_member(geometry, self.my_pe())])
        };
        let mut teams = self.split(parent, call, memberships)?;
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
        let call = SplitCall::TwoD { xrange };
        let memberships = if xrange == 0 {
            Err(Error::InvalidArgument(
                "team split 2d: xrange must be at least 1".into(),
            ))
        } else {
            let xrange = xrange.min(p.size);
            let me = p.me;
            let row_start = me / xrange * xrange;
            let row = (
                p.world(row_start) as u32,
                p.stride,
                xrange.min(p.size - row_start),
            );
            let col_start = me % xrange;
            // xrange <= p.size, so p.stride * xrange is at most a world PE distance.
            let col = (
                p.world(col_start) as u32,
                p.stride * i64::from(xrange),
                (p.size - col_start).div_ceil(xrange),
            );
            Ok(vec![Some(row), Some(col)])
        };
        let mut teams = self.split(parent, call, memberships)?.into_iter().flatten();
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
        // As in `barrier`: the synchronisation first, a failed earlier put after it.
        let completed = self.quiet();
        let mut state = self.team_state(&team)?;
        self.inner.team_barrier(&team.inner, &mut state);
        state.destroyed = true;
        *self
            .inner
            .team_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner()) &= !(1u64 << team.inner.slot);
        completed
    }

    /// The split protocol: every parent member calls it with the call it makes and
    /// the (world start, stride, size) of each new team it belongs to (`None` where it
    /// belongs to none; the list has the same length on every member), or the error
    /// its own arguments gave. All members agree on the outcome: the same error on
    /// every member, or one free slot per list position and a barrier epoch base above
    /// all their epochs.
    ///
    /// Rounds of four parent barriers, each round:
    /// 1. publish (this PE's free slots | the call's descriptor) and the highest epoch;
    ///    barrier; every member combines the same words, so all agree on whether the
    ///    call is valid and identical everywhere, and on the slots to try;
    /// 2. barrier (everyone has read), then *claim* the slots in this PE's table under
    ///    its lock: another thread of this PE may have taken one since step 1 (it
    ///    splits another parent at the same time); publish whether the claim held;
    /// 3. barrier; read every member's answer; barrier (everyone has read);
    /// 4. if every member claimed, the teams are made; otherwise each member gives its
    ///    claim back and the round starts again with fresh free sets. The slot a
    ///    concurrent split took stays taken, so the next round avoids it; when both
    ///    gave theirs back, their different starting points (below) separate them.
    fn split(
        &self,
        parent: &Team,
        call: SplitCall,
        memberships: Result<Vec<Option<(u32, i64, u32)>>>,
    ) -> Result<Vec<Option<Team>>> {
        /// Rounds before a split gives up on slots that concurrent splits keep taking.
        const MAX_ROUNDS: usize = 64;
        let inner = &self.inner;
        let mut state = self.team_state(parent)?;
        let p = &parent.inner;
        let wanted = memberships.as_ref().map_or(0, Vec::len);
        let descriptor = u64::from(call.descriptor(memberships.is_ok())) << 32;
        let scratch = &inner.segs.mine().control().teams[p.slot].scratch;
        // Each member's two scratch words: loads here, round trips to another host.
        let members = || {
            (0..p.size)
                .map(|i| {
                    let word = |k: usize| {
                        inner
                            .am
                            .control_word(p.world(i), |c| &c.teams[p.slot].scratch[k])
                            .load()
                    };
                    Ok([word(0)?, word(1)?])
                })
                .collect::<Result<Vec<[u64; 2]>>>()
        };
        for round in 0..MAX_ROUNDS {
            let free = !*inner.team_slots.lock().unwrap_or_else(|e| e.into_inner()) & slot_mask();
            scratch[0].store(descriptor | free, Ordering::Relaxed);
            scratch[1].store(inner.epoch_high.load(Ordering::Relaxed), Ordering::Relaxed);
            inner.team_barrier(p, &mut state);
            let (mut common_free, mut epoch_base) = (slot_mask(), 0);
            let mut differs = None;
            for (i, s) in members()?.into_iter().enumerate() {
                let word = s[0];
                if word >> 32 != descriptor >> 32 && differs.is_none() {
                    differs = Some(i);
                }
                common_free &= word & slot_mask();
                epoch_base = epoch_base.max(s[1]);
            }
            // Nobody overwrites the scratch words before everyone has read them.
            inner.team_barrier(p, &mut state);
            // Every member saw the same words: if any descriptor differs (another call,
            // other arguments, or arguments invalid on some member), every member
            // returns an error; if all are equal, all are valid or all invalid.
            let list = match (&memberships, differs) {
                (Ok(list), None) => list,
                _ => {
                    return Err(match memberships {
                        Err(e) => e,
                        Ok(_) => Error::InvalidArgument(format!(
                            "team split: the members of the parent team disagree: this PE (team PE {}) called {call}, team PE {} made another call or passed arguments that do not fit",
                            p.me,
                            differs.unwrap_or(0)
                        )),
                    })
                }
            };
            if (common_free.count_ones() as usize) < wanted {
                return Err(Error::TeamsExhausted { max: MAX_TEAMS });
            }
            // Splits of different parents look for slots from different places
            // (the parent's slot times 5, coprime to the 32 slots, moved on each
            // round), so two that keep colliding do not pick the same slot forever.
            let from = (p.slot * 5 + round * 11) % MAX_TEAMS;
            let slots: Vec<usize> = (0..MAX_TEAMS)
                .map(|k| (from + k) % MAX_TEAMS)
                .filter(|&s| common_free & 1 << s != 0)
                .take(wanted)
                .collect();
            let chosen = slots.iter().fold(0u64, |m, &s| m | 1 << s);
            let claimed = {
                let mut used = inner.team_slots.lock().unwrap_or_else(|e| e.into_inner());
                let ok = *used & chosen == 0;
                if ok {
                    *used |= chosen;
                }
                ok
            };
            scratch[0].store(u64::from(claimed), Ordering::Relaxed);
            inner.team_barrier(p, &mut state);
            let all_claimed = members()?.iter().all(|s| s[0] == 1);
            inner.team_barrier(p, &mut state);
            if all_claimed {
                drop(state);
                // A member keeps its claim until `team_destroy`; a non-member of a new
                // team gives the slot back now (it holds no handle to destroy, and the
                // members' own claims keep the slot out of later agreements).
                let not_member = list
                    .iter()
                    .zip(&slots)
                    .filter(|(geometry, _)| geometry.is_none())
                    .fold(0u64, |m, (_, &s)| m | 1 << s);
                *inner.team_slots.lock().unwrap_or_else(|e| e.into_inner()) &= !not_member;
                let me = self.my_pe();
                return Ok(list
                    .iter()
                    .zip(slots)
                    .map(|(geometry, slot)| {
                        geometry.map(|g| inner.new_team(g, me, slot, epoch_base))
                    })
                    .collect());
            }
            if claimed {
                *inner.team_slots.lock().unwrap_or_else(|e| e.into_inner()) &= !chosen;
            }
            std::thread::yield_now();
        }
        Err(Error::TeamsExhausted { max: MAX_TEAMS })
    }
}

/// A split call as its members must agree on it.
#[derive(Debug, Clone, Copy)]
enum SplitCall {
    Strided { start: u32, stride: i32, size: u32 },
    TwoD { xrange: u32 },
}

impl SplitCall {
    /// A 32-bit digest of the call and whether its arguments were valid here: equal on
    /// members that made the same valid call (FNV-1a over the arguments, top bit set
    /// for a valid call so a digest is never 0).
    fn descriptor(self, valid: bool) -> u32 {
        let words = match self {
            SplitCall::Strided {
                start,
                stride,
                size,
            } => [1, start, stride as u32, size],
            SplitCall::TwoD { xrange } => [2, xrange, 0, 0],
        };
        let mut h: u32 = 0x811c_9dc5;
        for b in words.iter().flat_map(|w| w.to_le_bytes()) {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        if valid {
            h | 1 << 31
        } else {
            h & !(1 << 31)
        }
    }
}

impl std::fmt::Display for SplitCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SplitCall::Strided {
                start,
                stride,
                size,
            } => {
                write!(
                    f,
                    "team_split_strided(start {start}, stride {stride}, size {size})"
                )
            }
            SplitCall::TwoD { xrange } => write!(f, "team_split_2d(xrange {xrange})"),
        }
    }
}

/// `geometry` if world PE `me` is in it.
fn geometry_if_member(geometry: (u32, i64, u32), me: u32) -> Option<(u32, i64, u32)> {
    crate::team::member_index(geometry, me).map(|_| geometry)
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
    /// A team this PE is a member of, in `slot` (which the split has claimed).
    fn new_team(&self, geometry: (u32, i64, u32), me: u32, slot: usize, epoch_base: u64) -> Team {
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

impl Shmem {
    /// Waits until every PE has called `barrier_all`, after completing this PE's puts
    /// (`quiet`). Every put issued by any PE before the barrier is visible everywhere
    /// after it.
    pub fn barrier_all(&self) -> Result<()> {
        self.live()?.barrier_all()
    }
}

impl Inner {
    pub(super) fn barrier_all(&self) -> Result<()> {
        // A failed put is reported after the barrier: returning before it would leave
        // every other PE waiting in it.
        let completed = self.quiet();
        let _coll = self.coll.lock().unwrap_or_else(|e| e.into_inner());
        self.world_barrier();
        completed
    }

    /// A barrier of the world team (no quiet).
    pub(super) fn world_barrier(&self) {
        let mut state = self.world.lock();
        self.team_barrier(&self.world, &mut state);
    }

    /// The next barrier of `team` (no quiet); the caller holds the team's counters.
    pub(super) fn team_barrier(&self, team: &TeamInner, state: &mut crate::team::TeamState) {
        state.epoch += 1;
        self.epoch_high.fetch_max(state.epoch, Ordering::Relaxed);
        self.flush_wakes();
        let _call = self.clock.enter();
        let _span = crate::trace::span("barrier", &self.clock);
        self.publish_barrier_clock(team, state.epoch);
        let virtual_clock = self.clock.is_virtual();
        crate::team::barrier(
            team,
            state.epoch,
            &self.am,
            &self.segs,
            &self.policy,
            || self.am.pump_replies(),
            |to| {
                // The virtual clock charges the rounds in `merge_barrier_clock`.
                if let (Some(emu), false) = (&self.emulation, virtual_clock) {
                    emu.message(to);
                }
            },
        );
        self.merge_barrier_clock(team, state.epoch);
    }
}
