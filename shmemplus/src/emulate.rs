//! Emulation of the simulated cluster: charges every hop of a transfer to the shared
//! timelines of the resources it uses (through `netsim`) and makes the initiating
//! PE reach the modeled instants on its clock (`clock`: waits on the wall clock,
//! advances the virtual clock).
//!
//! This module owns the mapping from PEs and boards to the shared timelines (the NIC of
//! node k and the DMA channels of its boards are words in the control block of node
//! k's first PE) and the composition of a route's hops. It must not move bytes (the
//! conduits and boards do) and must not define costs (the profile does). With a free
//! profile (`native`) it does not exist at all: the library holds no `Emulation`.
//!
//! A route is a chain of hops, each starting when the previous one has delivered:
//! - `Net`: a transfer between two nodes, on the sender's NIC send side and the
//!   receiver's receive side (free within a node);
//! - `Read` / `Write`: a DMA on a board's read (board -> host) or write (host -> board)
//!   channel.
//!
//! A put returns when its first hop has taken the data (injected) and records the
//! route's delivery for `quiet`; a get returns when its last hop has delivered. The
//! clock of an operation starts before its copies, so the real copying hides inside
//! the modeled time. A get is a 0-byte request followed by the reply's hops.

use crate::clock::JobClock;
use crate::model;
use crate::segment::{Control, JobSegments};
use crate::topology::Topology;
use netsim::timeline::Timeline;
use netsim::{Calendar, Cost, Profile};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A one-sided operation, for [`crate::Shmem::modeled_seconds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaOp {
    /// A put followed by `quiet`.
    Put,
    /// A blocking get.
    Get,
}

impl RmaOp {
    /// The name a trace gives this operation on a route that `writes` the target, from
    /// a symmetric object of this PE (`from_object`: `put_from`, `get_into`) or a
    /// private buffer. A non-fetching atomic is modeled as (and shows as) a small put.
    pub fn call_name(self, writes: bool, from_object: bool) -> &'static str {
        match (self, writes, from_object) {
            (RmaOp::Put, _, true) => "put_from",
            (RmaOp::Get, _, true) => "get_into",
            (RmaOp::Put, _, false) => "put",
            (RmaOp::Get, true, false) => "atomic",
            (RmaOp::Get, false, false) => "get",
        }
    }
}

/// One hop of a route: a resource and the bytes it moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// Network transfer from PE `from`'s node to PE `to`'s node.
    Net {
        /// Sending PE.
        from: usize,
        /// Receiving PE.
        to: usize,
        /// Bytes.
        bytes: u64,
    },
    /// DMA read (board -> host) on board `board` of PE `pe`'s node.
    Read {
        /// A PE of the node.
        pe: usize,
        /// The board.
        board: u32,
        /// Bytes the DMA engine moves (the aligned span).
        bytes: u64,
    },
    /// DMA write (host -> board) on board `board` of PE `pe`'s node.
    Write {
        /// A PE of the node.
        pe: usize,
        /// The board.
        board: u32,
        /// Bytes the DMA engine moves (the aligned span).
        bytes: u64,
    },
}

/// Packets of one transfer in flight at most (see `Emulation::transfer_packets`).
pub const WINDOW: usize = 4;

/// Private timelines per resource kind for `modeled_packets` (boards of a node x 2).
const PRIVATE_SLOTS: usize = 2 * crate::segment::MAX_BOARDS + 2;

/// A shared resource with a timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resource {
    NicSend(u32),
    NicRecv(u32),
    DmaRead(u32, u32),
    DmaWrite(u32, u32),
}

/// The emulation of one PE.
pub struct Emulation {
    net: Option<Cost>,
    read: Option<Cost>,
    write: Option<Cost>,
    topology: Topology,
    segs: Arc<JobSegments>,
    clock: Arc<JobClock>,
    /// The latest delivery instant of this PE's puts (what `quiet` waits for).
    undelivered_until: AtomicU64,
    /// The latest delivery instant of this PE's puts to each PE (what a later write to
    /// that PE is stamped no earlier than, under the virtual clock). Puts into this
    /// PE's own boards count here only from the next `fence` (`undelivered_board`).
    undelivered_to: Vec<AtomicU64>,
    /// The latest delivery instant of this PE's puts into its own partition of each
    /// of its node's boards, by board (what a kernel it starts on that board starts
    /// no earlier than: see `Shmem::kernel_start`).
    undelivered_board: Vec<AtomicU64>,
    /// Per node on another host: a private, zeroed control block standing in for its
    /// leader's, whose timelines this PE charges alone (a host cannot reach another
    /// host's timelines at the cost of one word; see docs on the MPI conduit).
    shadows: Vec<Option<Box<Control>>>,
}

/// When a charged transfer completes (ns on the job clock's timelines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The last packet has left its source: the source may be reused.
    pub injected: u64,
    /// The last packet is in place at the target.
    pub delivered: u64,
}

impl Emulation {
    /// The emulation for `profile` with `boards` boards per node, or `None` when
    /// nothing in it costs anything.
    pub fn new(
        profile: &Profile,
        topology: Topology,
        boards: u32,
        segs: Arc<JobSegments>,
        clock: Arc<JobClock>,
    ) -> Option<Emulation> {
        if profile.is_free() {
            return None;
        }
        Some(Emulation {
            net: profile.net.clone(),
            read: profile.fpga_read.clone(),
            write: profile.fpga_write.clone(),
            shadows: (0..topology.nodes)
                .map(|n| match segs.peer((n * topology.pes_per_node) as usize) {
                    Some(_) => None,
                    None => Some(zeroed_control()),
                })
                .collect(),
            undelivered_to: (0..topology.n_pes).map(|_| AtomicU64::new(0)).collect(),
            undelivered_board: (0..boards).map(|_| AtomicU64::new(0)).collect(),
            topology,
            segs,
            clock,
            undelivered_until: AtomicU64::new(0),
        })
    }

    fn same_node(&self, a: usize, b: usize) -> bool {
        self.topology.node_of(a as u32) == self.topology.node_of(b as u32)
    }

    /// The cost of `hop`, or `None` when it is free.
    fn cost(&self, hop: &Hop) -> Option<&Cost> {
        match *hop {
            Hop::Net { from, to, .. } if self.same_node(from, to) => None,
            Hop::Net { .. } => self.net.as_ref(),
            Hop::Read { .. } => self.read.as_ref(),
            Hop::Write { .. } => self.write.as_ref(),
        }
    }

    /// The shared resources `hop` occupies (for a free hop, none).
    fn resources(&self, hop: &Hop) -> Vec<Resource> {
        let node = |pe: usize| self.topology.node_of(pe as u32);
        match *hop {
            _ if self.cost(hop).is_none() => Vec::new(),
            Hop::Net { from, to, .. } => {
                vec![Resource::NicSend(node(from)), Resource::NicRecv(node(to))]
            }
            Hop::Read { pe, board, .. } => vec![Resource::DmaRead(node(pe), board)],
            Hop::Write { pe, board, .. } => vec![Resource::DmaWrite(node(pe), board)],
        }
    }

    /// The control block of node `n`'s first PE, which holds the node's timelines.
    fn leader(&self, n: u32) -> &Control {
        match self.segs.peer((n * self.topology.pes_per_node) as usize) {
            Some(seg) => seg.control(),
            None => match self.shadows.get(n as usize) {
                Some(Some(shadow)) => shadow,
                // `new` made a shadow for every node whose leader is not mapped.
                _ => unreachable!("node {n} has neither a mapped leader nor a shadow"),
            },
        }
    }

    /// The wall clock's shared timeline of `r`: a busy-until word.
    fn timeline(&self, r: Resource) -> &AtomicU64 {
        match r {
            Resource::NicSend(n) => &self.leader(n).nic_send,
            Resource::NicRecv(n) => &self.leader(n).nic_recv,
            Resource::DmaRead(n, b) => &self.leader(n).dma_read[b as usize],
            Resource::DmaWrite(n, b) => &self.leader(n).dma_write[b as usize],
        }
    }

    /// The virtual clock's shared timeline of `r`: a gap-filling calendar, so that
    /// PEs whose virtual clocks differ get the same reservations whatever order they
    /// ask in, as long as their requests do not overlap in virtual time.
    fn calendar(&self, r: Resource) -> &Calendar {
        match r {
            Resource::NicSend(n) => &self.leader(n).calendars.nic_send,
            Resource::NicRecv(n) => &self.leader(n).calendars.nic_recv,
            Resource::DmaRead(n, b) => &self.leader(n).calendars.dma_read[b as usize],
            Resource::DmaWrite(n, b) => &self.leader(n).calendars.dma_write[b as usize],
        }
    }

    /// Charges the hops in sequence from `start_ns` on the timelines `line` gives;
    /// returns (injected instant of the first charged hop, delivered instant of the
    /// last), or `None` if all are free.
    fn charge_on<'t, L: Timeline + 't>(
        &self,
        hops: &[Hop],
        start_ns: u64,
        line: &impl Fn(Resource) -> &'t L,
    ) -> Option<(u64, u64)> {
        let mut at = start_ns;
        let mut injected = None;
        for hop in hops {
            let Some(cost) = self.cost(hop) else { continue };
            let res = self.resources(hop);
            let charge = match *hop {
                Hop::Net { bytes, .. } => {
                    netsim::charge_transfer(line(res[0]), line(res[1]), at, cost, bytes)
                }
                Hop::Read { bytes, .. } | Hop::Write { bytes, .. } => {
                    netsim::charge_hop(line(res[0]), at, cost, bytes)
                }
            };
            // The trace shows the shared timelines only, not the model's private ones.
            if crate::trace::enabled() && self.is_shared(line(res[0]), res[0]) {
                trace_hop(hop, &res, cost, charge.injected_ns);
            }
            injected.get_or_insert(charge.injected_ns);
            at = charge.delivered_ns;
        }
        injected.map(|i| (i, at))
    }

    /// Whether `line` is the job's shared timeline of `r` (not a private one of the
    /// model's): the wall clock's busy-until word or the virtual clock's calendar.
    fn is_shared<L>(&self, line: &L, r: Resource) -> bool {
        let shared: *const () = match self.clock.is_virtual() {
            true => std::ptr::from_ref(self.calendar(r)).cast(),
            false => std::ptr::from_ref(self.timeline(r)).cast(),
        };
        std::ptr::eq(std::ptr::from_ref(line).cast::<()>(), shared)
    }

    /// Charges `hops` from `start_ns` on the shared timelines of the job's clock.
    fn charge(&self, hops: &[Hop], start_ns: u64) -> Option<(u64, u64)> {
        match self.clock.is_virtual() {
            true => self.charge_on(hops, start_ns, &|r| self.calendar(r)),
            false => self.charge_on(hops, start_ns, &|r| self.timeline(r)),
        }
    }

    /// Charges a transfer of `bytes` split into packets of `packet` bytes, on the
    /// timelines `line` gives. `hops_of(offset, len)` are the hops of one packet. A
    /// packet starts no earlier than `start_ns` nor before the packet `WINDOW` places
    /// earlier is delivered (a bounded window in flight); the resources' timelines then
    /// make consecutive packets overlap stage by stage, as a k-stage pipeline:
    /// `T = sum_s t_s + (N - 1) * max_s t_s` when every stage is its own resource.
    /// Returns (injected instant of the last packet's first hop, delivered instant of
    /// the last packet), or `None` if the route is free.
    fn charge_packets_on<'t, L: Timeline + 't>(
        &self,
        bytes: usize,
        packet: usize,
        start_ns: u64,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
        line: &impl Fn(Resource) -> &'t L,
    ) -> Option<(u64, u64)> {
        let packet = if packet == 0 { bytes.max(1) } else { packet };
        let mut delivered: Vec<u64> = Vec::new();
        let mut last = None;
        let mut at = 0;
        loop {
            let len = packet.min(bytes - at);
            let earliest = match delivered.len().checked_sub(WINDOW) {
                Some(i) => start_ns.max(delivered[i]),
                None => start_ns,
            };
            if let Some((inj, del)) = self.charge_on(&hops_of(at, len), earliest, line) {
                delivered.push(del);
                last = Some((inj, del));
            }
            at += len;
            if at >= bytes {
                return last;
            }
        }
    }

    /// A packetized transfer (see `charge_packets_on`) with the waiting its operation
    /// needs: a put records the delivery for `quiet` and reaches the instant the last
    /// packet has left its source; a get reaches the last packet's delivery. A
    /// `deferred` (non-blocking) transfer of either kind only records its delivery for
    /// `quiet`, so several of them overlap on the cluster's resources. Returns when the
    /// transfer completes, or `None` if its route is free.
    pub fn transfer_packets(
        &self,
        op: RmaOp,
        bytes: usize,
        packet: usize,
        start_ns: u64,
        deferred: bool,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
    ) -> Option<Completion> {
        let (injected, delivered) = match self.clock.is_virtual() {
            true => self.charge_packets_on(bytes, packet, start_ns, hops_of, &|r| self.calendar(r)),
            false => {
                self.charge_packets_on(bytes, packet, start_ns, hops_of, &|r| self.timeline(r))
            }
        }?;
        match op {
            _ if deferred => {
                self.undelivered_until
                    .fetch_max(delivered, Ordering::AcqRel);
            }
            RmaOp::Put => {
                self.undelivered_until
                    .fetch_max(delivered, Ordering::AcqRel);
                self.clock.reach(injected);
            }
            RmaOp::Get => self.clock.reach(delivered),
        }
        Some(Completion {
            injected,
            delivered,
        })
    }

    /// The latest delivery instant of this PE's puts so far.
    pub fn undelivered_until(&self) -> u64 {
        self.undelivered_until.load(Ordering::Acquire)
    }

    /// Records that a put to PE `target` (its CPU or a board) is delivered at
    /// `delivered` (see [`Emulation::undelivered_to`]).
    pub fn record_delivery_to(&self, target: usize, delivered: u64) {
        if let Some(t) = self.undelivered_to.get(target) {
            t.fetch_max(delivered, Ordering::AcqRel);
        }
    }

    /// Records that a put of this PE into its own partition of board `board` is
    /// delivered at `delivered` (see [`Emulation::undelivered_to_board`]).
    pub fn record_delivery_to_board(&self, board: u32, delivered: u64) {
        if let Some(t) = self.undelivered_board.get(board as usize) {
            t.fetch_max(delivered, Ordering::AcqRel);
        }
    }

    /// The latest delivery instant of this PE's puts into its own partition of board
    /// `board` so far (0 if none was charged).
    pub fn undelivered_to_board(&self, board: u32) -> u64 {
        self.undelivered_board
            .get(board as usize)
            .map_or(0, |t| t.load(Ordering::Acquire))
    }

    /// The latest delivery instant of this PE's puts into its own partitions of any
    /// board (0 if none was charged).
    pub fn undelivered_to_boards(&self) -> u64 {
        self.undelivered_board
            .iter()
            .map(|t| t.load(Ordering::Acquire))
            .max()
            .unwrap_or(0)
    }

    /// The latest delivery instant of this PE's puts to PE `target` so far: a later
    /// write to `target` is not observed before it (OpenSHMEM orders puts to one PE by
    /// `fence`; puts to different PEs only by `quiet`, which reaches every delivery).
    pub fn undelivered_to(&self, target: usize) -> u64 {
        self.undelivered_to
            .get(target)
            .map_or_else(|| self.undelivered_until(), |t| t.load(Ordering::Acquire))
    }

    /// The modeled time of a packetized transfer on an idle cluster: the same
    /// charging as the real transfer, on private timelines starting at 0.
    pub fn modeled_packets(
        &self,
        bytes: usize,
        packet: usize,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
    ) -> f64 {
        let private: [AtomicU64; 2 * PRIVATE_SLOTS] = std::array::from_fn(|_| AtomicU64::new(0));
        let my_node = self.topology.node_of(self.segs.me as u32);
        let slot = |r: Resource| -> usize {
            match r {
                Resource::NicSend(_) => 0,
                Resource::NicRecv(_) => 1,
                Resource::DmaRead(_, b) => 2 + b as usize * 2,
                Resource::DmaWrite(_, b) => 3 + b as usize * 2,
            }
        };
        // A route touches this PE's node and at most one other: each resource of either
        // gets its own private timeline.
        let line = |r: Resource| {
            let node = match r {
                Resource::NicSend(n)
                | Resource::NicRecv(n)
                | Resource::DmaRead(n, _)
                | Resource::DmaWrite(n, _) => n,
            };
            &private[slot(r) * 2 + usize::from(node != my_node)]
        };
        self.charge_packets_on(bytes, packet, 0, hops_of, &line)
            .map_or(0.0, |(_, delivered)| delivered as f64 * 1e-9)
    }

    /// The packet size that the model's one packet search (`model::choose_packet`)
    /// finds fastest for `bytes` along the route `hops_of` describes, timing each
    /// candidate by this emulation's own charging on private timelines
    /// ([`Emulation::modeled_packets`]): a power of two from `model::MIN_PACKET` below
    /// `bytes`, or `bytes` (no packetization) when splitting does not pay.
    pub fn best_packet(
        &self,
        bytes: usize,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
    ) -> usize {
        // A candidate is below `bytes`, so it fits a usize; 0 is no packetization.
        let packet = |p: u64| usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(bytes);
        let Ok((best, _)) = model::choose_packet(bytes as u64, |p| {
            Ok::<f64, Infallible>(self.modeled_packets(bytes, packet(p), hops_of))
        });
        packet(best)
    }

    /// A blocking transfer along `hops` (a get, a local DMA): reaches its delivery,
    /// which it returns (`None` if the hops are free).
    pub fn blocking(&self, hops: &[Hop], start_ns: u64) -> Option<u64> {
        let (_, delivered) = self.charge(hops, start_ns)?;
        self.clock.reach(delivered);
        Some(delivered)
    }

    /// A small synchronisation message to `target`, sent after every put of this PE
    /// has been delivered (it follows the data): reaches its delivery, which it
    /// returns (`None` if the hop is free).
    pub fn message(&self, target: usize) -> Option<u64> {
        let hop = Hop::Net {
            from: self.segs.me,
            to: target,
            bytes: 8,
        };
        let start = self.clock.now_ns();
        let start = match self.clock.is_virtual() {
            true => start.max(self.undelivered_until()),
            false => start,
        };
        self.blocking(&[hop], start)
    }

    /// The modeled time of one small message between PEs on different nodes on an
    /// idle network (a barrier round), in ns; 0 when the network is free.
    pub fn message_ns(&self) -> u64 {
        self.net.as_ref().map_or(0, |c| {
            netsim::cost::secs_to_ns(c.occupancy(8))
                .saturating_add(netsim::cost::secs_to_ns(c.latency(8)))
        })
    }

    /// Reaches the delivery of every put issued so far.
    pub fn quiet(&self) {
        self.clock.reach(self.undelivered_until());
    }
}

/// Records `hop` on the trace, on each of its resources `res`: busy for its occupancy
/// up to `injected`. (That is the receive side's interval of a network hop; the send
/// side's is the same unless the receiver was still busy, when it started earlier.)
fn trace_hop(hop: &Hop, res: &[Resource], cost: &Cost, injected: u64) {
    use crate::trace::{Peers, Track};
    let (bytes, peers) = match *hop {
        Hop::Net { from, to, bytes } => {
            let (from, to) = (from as u32, to as u32);
            (bytes, Peers::Net { from, to })
        }
        Hop::Read { pe, bytes, .. } | Hop::Write { pe, bytes, .. } => {
            (bytes, Peers::Board { pe: pe as u32 })
        }
    };
    let start = injected.saturating_sub(netsim::cost::secs_to_ns(cost.occupancy(bytes)));
    for &r in res {
        let (track, name) = match r {
            Resource::NicSend(node) => (Track::NicSend { node }, "net"),
            Resource::NicRecv(node) => (Track::NicRecv { node }, "net"),
            Resource::DmaRead(node, board) => (Track::DmaRead { node, board }, "DMA read"),
            Resource::DmaWrite(node, board) => (Track::DmaWrite { node, board }, "DMA write"),
        };
        crate::trace::hop(track, name, (start, injected), bytes, peers);
    }
}

/// A control block in private memory, all zeros: the valid initial state of every
/// word in it, as in a fresh segment.
fn zeroed_control() -> Box<Control> {
    let layout = std::alloc::Layout::new::<Control>();
    // SAFETY: `Control` is not zero-sized, so `alloc_zeroed` with its layout is
    // defined; a null result is handled. `Control` is `repr(C)` and made only of
    // atomics, integers and arrays of them (`Segment::control` relies on the same
    // fact), for which all-zero bytes are a valid value, and `Box::from_raw` takes
    // memory from the global allocator with exactly that layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<Control>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(p)
    }
}

#[cfg(test)]
mod tests {
    use super::RmaOp;

    #[test]
    fn call_names_follow_the_operation() {
        assert_eq!(RmaOp::Put.call_name(true, false), "put");
        assert_eq!(RmaOp::Get.call_name(false, false), "get");
        assert_eq!(RmaOp::Get.call_name(true, false), "atomic");
        assert_eq!(RmaOp::Put.call_name(true, true), "put_from");
        assert_eq!(RmaOp::Get.call_name(false, true), "get_into");
    }
}
