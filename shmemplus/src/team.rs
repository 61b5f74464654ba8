//! Teams: ordered subsets of the world's PEs given by (start, stride, size), where team
//! PE `i` is world PE `start + stride * i` and the stride may be negative (a team
//! numbered downwards, as `shmem_team_split_strided` allows), each with a slot of synchronisation words in every member's control block, and the team barrier
//! over those words.
//!
//! The barrier is hierarchical, as the hardware is: the members on one node (a *group*)
//! meet at a counter in their group leader's control block; the last to arrive runs a
//! dissemination barrier with the other groups' last arrivers (ceil(log2 g) rounds of
//! one flag each, charged to the emulated network) and then releases its group. On one
//! node that is one atomic add per PE and one release store, which suits PEs that
//! outnumber the cores (each PE only has to run once to arrive and once to leave).
//!
//! This module owns team geometry, PE translation and the barrier protocol. It must not
//! move user data (collectives do) and must not choose team slots (the split in
//! `shmem::teams` agrees on them).

use crate::am::{AmEngine, ControlOp, Wake};
use crate::segment::{JobSegments, MAX_BARRIER_ROUNDS};
use crate::sync::{dissemination_barrier, notify, WaitPolicy};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

/// A team of PEs (OpenSHMEM `shmem_team_t`): the world team, the node's shared team, or
/// one made by [`Shmem::team_split_strided`](crate::Shmem::team_split_strided) /
/// [`Shmem::team_split_2d`](crate::Shmem::team_split_2d). Only members hold a handle.
/// Cloning gives another handle to the same team; after
/// [`Shmem::team_destroy`](crate::Shmem::team_destroy) every handle is refused.
///
/// ```
/// let shmem = shmemplus::init()?;
/// let world = shmem.team_world();
/// assert_eq!(world.n_pes(), shmem.n_pes());
/// assert_eq!(world.my_pe(), shmem.my_pe());
/// // The PEs of this node; on one node that is the world.
/// let node = shmem.team_shared();
/// assert_eq!(node.translate_pe(node.my_pe(), &world), Some(shmem.my_pe()));
/// # Ok::<(), shmemplus::Error>(())
/// ```
#[derive(Clone)]
pub struct Team {
    pub(crate) inner: Arc<TeamInner>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.inner;
        f.debug_struct("Team")
            .field("start", &t.start)
            .field("stride", &t.stride)
            .field("size", &t.size)
            .field("my_pe", &t.me)
            .finish()
    }
}

/// The members on one node: they meet at a counter in their leader's control block.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// World PE of the group's first member.
    pub leader: usize,
    /// Number of members in the group.
    pub members: u64,
}

/// What a team's members agree on, plus this PE's own counters.
pub(crate) struct TeamInner {
    /// The handle's owner job (objects of another `init` are refused).
    pub job: u64,
    /// World PE of team PE 0.
    pub start: u32,
    /// World PE of team PE `i + 1` minus that of team PE `i` (never 0 when size > 1).
    pub stride: i64,
    pub size: u32,
    /// This PE's number in the team.
    pub me: u32,
    /// The team's slot in the members' control blocks.
    pub slot: usize,
    pub groups: Vec<Group>,
    pub my_group: usize,
    pub state: Mutex<TeamState>,
}

/// Per-PE counters of a team, held for the whole of a collective call (so two threads
/// cannot interleave collectives on one team).
pub(crate) struct TeamState {
    /// Epoch of the last barrier (starts at the base the members agreed on).
    pub epoch: u64,
    /// Data arrivals at this PE expected so far (the `arrivals` word reaches it when
    /// every collective's data is in).
    pub arrivals: u64,
    pub destroyed: bool,
}

impl TeamInner {
    /// The team of world PEs `start + stride * i`, `i < size` (all of them world PEs),
    /// seen from world PE `me` (which must be a member), with barrier epochs from
    /// `epoch_base` and data arrivals counted from `arrivals_base`.
    pub fn new(
        job: u64,
        (start, stride, size): (u32, i64, u32),
        world_me: u32,
        slot: usize,
        node_of: impl Fn(u32) -> u32,
        (epoch_base, arrivals_base): (u64, u64),
    ) -> TeamInner {
        let me = member_index((start, stride, size), world_me).unwrap_or(0);
        let mut groups: Vec<(u32, Group)> = Vec::new();
        let mut my_group = 0;
        for i in 0..size {
            let pe = world_of((start, stride), i) as u32;
            let node = node_of(pe);
            let g = match groups.iter().position(|(n, _)| *n == node) {
                Some(g) => g,
                None => {
                    groups.push((
                        node,
                        Group {
                            leader: pe as usize,
                            members: 0,
                        },
                    ));
                    groups.len() - 1
                }
            };
            groups[g].1.members += 1;
            if i == me {
                my_group = g;
            }
        }
        TeamInner {
            job,
            start,
            stride,
            size,
            me,
            slot,
            groups: groups.into_iter().map(|(_, g)| g).collect(),
            my_group,
            state: Mutex::new(TeamState {
                epoch: epoch_base,
                arrivals: arrivals_base,
                destroyed: false,
            }),
        }
    }

    /// The world PE of team PE `i` (which must be `< size`).
    pub fn world(&self, i: u32) -> usize {
        world_of((self.start, self.stride), i)
    }

    /// The team PE of world PE `pe`, if it is a member.
    pub fn of_world(&self, pe: u32) -> Option<u32> {
        member_index((self.start, self.stride, self.size), pe)
    }

    /// Locks this PE's counters of the team for one collective.
    pub fn lock(&self) -> MutexGuard<'_, TeamState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Team {
    /// This PE's number in the team (`shmem_team_my_pe`).
    pub fn my_pe(&self) -> u32 {
        self.inner.me
    }

    /// Number of PEs in the team (`shmem_team_n_pes`).
    pub fn n_pes(&self) -> u32 {
        self.inner.size
    }

    /// The world PE number of the team's PE `pe`, or `None` if `pe` is out of range.
    pub fn world_pe(&self, pe: u32) -> Option<u32> {
        (pe < self.inner.size).then(|| self.inner.world(pe) as u32)
    }

    /// The number in `dest` of this team's PE `pe`, or `None` if `pe` is not in this
    /// team or not in `dest` (`shmem_team_translate_pe`).
    pub fn translate_pe(&self, pe: u32, dest: &Team) -> Option<u32> {
        dest.inner.of_world(self.world_pe(pe)?)
    }

    /// The team's PEs as a set, (lowest, stride, size) in world PE numbers: for a team
    /// numbered upwards that is its geometry; a team made with a negative stride has
    /// the same set numbered downwards (see [`Team::world_geometry`]).
    pub fn world_stride(&self) -> (u32, u32, u32) {
        let t = &self.inner;
        let lowest = if t.stride < 0 {
            self.world_pe(t.size.saturating_sub(1)).unwrap_or(t.start)
        } else {
            t.start
        };
        let stride = u32::try_from(t.stride.unsigned_abs()).unwrap_or(u32::MAX);
        (lowest, stride, t.size)
    }

    /// The team as (world PE of team PE 0, signed stride, size): team PE `i` is world
    /// PE `start + stride * i`.
    pub fn world_geometry(&self) -> (u32, i64, u32) {
        (self.inner.start, self.inner.stride, self.inner.size)
    }
}

/// World PE `start + stride * i` (the caller knows it is one: a team's members are).
pub(crate) fn world_of((start, stride): (u32, i64), i: u32) -> usize {
    (i64::from(start) + stride * i64::from(i)) as usize
}

/// The index `i < size` with `start + stride * i == pe`, if there is one.
pub(crate) fn member_index((start, stride, size): (u32, i64, u32), pe: u32) -> Option<u32> {
    let rel = i64::from(pe) - i64::from(start);
    if rel == 0 && size > 0 {
        return Some(0);
    }
    if stride == 0 || rel % stride != 0 {
        return None;
    }
    let i = rel / stride;
    (0..i64::from(size)).contains(&i).then_some(i as u32)
}

/// The barrier of `team` with epoch `epoch` (see the module doc). `work` runs between
/// checks while waiting (reply draining); `message(pe)` runs before a flag is written
/// into the control block of world PE `pe` of another group (network emulation).
/// A group is one node, whose PEs share a host, so the group's own words are mapped
/// here; the flags of other groups' leaders go through `am` (stores into a mapped
/// block, or messages to another host).
pub(crate) fn barrier(
    team: &TeamInner,
    epoch: u64,
    am: &AmEngine,
    segs: &JobSegments,
    policy: &WaitPolicy,
    mut work: impl FnMut() -> bool,
    message: impl Fn(usize),
) {
    let group = &team.groups[team.my_group];
    let Some(leader) = segs.peer(group.leader) else {
        unreachable!("the leader of this PE's node group is on this host")
    };
    let mine = &leader.control().teams[team.slot];
    let arrived = mine.arrived.fetch_add(1, Ordering::AcqRel) + 1;
    if arrived == group.members {
        // Last of the group: nobody arrives for the next epoch before the release
        // below, so the counter can be reset for it now.
        mine.arrived.store(0, Ordering::Relaxed);
        let groups = team.groups.len();
        if groups > 1 {
            debug_assert!(groups <= 1 << MAX_BARRIER_ROUNDS);
            dissemination_barrier(
                team.my_group,
                groups,
                epoch,
                (&mine.rounds[..], &mine.signal.0),
                policy,
                &mut work,
                |g, round, epoch| {
                    let to = team.groups[g].leader;
                    message(to);
                    am.control_word(to, |c| &c.teams[team.slot].rounds[round])
                        .post(ControlOp::Max, epoch, Wake::Team(team.slot));
                },
            );
        }
        mine.released.store(epoch, Ordering::Release);
        notify(&mine.signal);
    } else {
        policy.wait_until(
            &mine.signal,
            || mine.released.load(Ordering::Acquire) >= epoch,
            work,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_and_groups() {
        // World PEs 1, 3, 5, 7 on nodes of 4 PEs: {1, 3} on node 0, {5, 7} on node 1.
        let t = TeamInner::new(1, (1, 2, 4), 5, 3, |pe| pe / 4, (10, 0));
        assert_eq!(t.me, 2);
        assert_eq!(t.world(3), 7);
        assert_eq!(t.of_world(7), Some(3));
        assert_eq!(t.of_world(4), None);
        assert_eq!(t.of_world(9), None);
        assert_eq!(t.of_world(0), None);
        assert_eq!(t.groups.len(), 2);
        assert_eq!((t.groups[1].leader, t.groups[1].members), (5, 2));
        assert_eq!(t.my_group, 1);
        assert_eq!(t.lock().epoch, 10);
    }

    #[test]
    fn a_negative_stride_numbers_the_team_downwards() {
        // World PEs 6, 4, 2, 0 (team PEs 0..4), seen from world PE 2, one node of 4 PEs
        // for PEs 0..4 and another for 4..8.
        let t = TeamInner::new(1, (6, -2, 4), 2, 3, |pe| pe / 4, (0, 0));
        assert_eq!(t.me, 2);
        assert_eq!((t.world(0), t.world(3)), (6, 0));
        assert_eq!(t.of_world(0), Some(3));
        assert_eq!(t.of_world(6), Some(0));
        assert_eq!(t.of_world(8), None);
        assert_eq!(t.of_world(3), None);
        // Groups in team order: node 1 (PEs 6, 4) first, then node 0 (PEs 2, 0).
        assert_eq!((t.groups[0].leader, t.groups[0].members), (6, 2));
        assert_eq!((t.groups[1].leader, t.groups[1].members), (2, 2));
        assert_eq!(t.my_group, 1);
        let team = Team {
            inner: std::sync::Arc::new(t),
        };
        assert_eq!(team.world_stride(), (0, 2, 4));
        assert_eq!(team.world_geometry(), (6, -2, 4));
        assert_eq!(member_index((5, 0, 1), 5), Some(0));
        assert_eq!(member_index((5, 0, 1), 6), None);
    }
}
