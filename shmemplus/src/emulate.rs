//! Emulation of the simulated cluster's network: charges each transfer between PEs on
//! different simulated nodes to the nodes' NIC timelines (through `netsim`) and makes
//! the initiating thread wait for the modeled instants.
//!
//! This module owns the mapping from PEs to the shared timelines (the NIC of node k is
//! the pair of words in the control block of node k's first PE) and the cost of each
//! RMA operation as a sequence of hops. It must not move bytes (the conduits do) and
//! must not define costs (the profile does). With a free profile (`native`) it does
//! not exist at all: the library holds no `Emulation` and pays nothing.
//!
//! Costs per operation, for PEs on different nodes (PEs on one node pay nothing here):
//! - put of L bytes: one `net` transfer of L bytes, from the initiator's node NIC (send
//!   side) to the target's (receive side). `put` returns when the transfer has left
//!   the sender (its occupancy of the path ends); `quiet` waits until it is delivered
//!   (occupancy end + latency).
//! - get of L bytes: a request of 0 bytes to the target, then a transfer of L bytes
//!   back; `get` returns when the data is delivered. Modeled: `T_net(0) + T_net(L)`.
//! - a synchronisation message (a barrier flag): a `net` transfer of 8 bytes, waited
//!   for before the flag is written, so a barrier across nodes costs its rounds'
//!   latencies.
//!
//! The bytes themselves move at the machine's speed *within* the modeled window: the
//! clock starts before the copy, so the copy is hidden whenever the model is slower.

use crate::segment::JobSegments;
use crate::topology::Topology;
use netsim::{Cost, Profile};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A one-sided operation, for [`Emulation::modeled`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaOp {
    /// A put followed by `quiet`.
    Put,
    /// A blocking get.
    Get,
}

/// The network emulation of one PE.
pub struct Emulation {
    net: Cost,
    topology: Topology,
    segs: Arc<JobSegments>,
    /// The latest delivery instant of this PE's puts (what `quiet` waits for).
    undelivered_until: AtomicU64,
}

impl Emulation {
    /// The emulation for `profile`, or `None` when its network costs nothing.
    pub fn new(profile: &Profile, topology: Topology, segs: Arc<JobSegments>) -> Option<Emulation> {
        let net = profile.net.clone()?;
        Some(Emulation {
            net,
            topology,
            segs,
            undelivered_until: AtomicU64::new(0),
        })
    }

    /// The NIC timelines (send, receive) of the node of `pe`.
    fn nic(&self, pe: usize) -> (&AtomicU64, &AtomicU64) {
        let leader = (self.topology.node_of(pe as u32) * self.topology.pes_per_node) as usize;
        let c = self.segs.segs[leader].control();
        (&c.nic_send.0, &c.nic_recv.0)
    }

    fn crosses_nodes(&self, a: usize, b: usize) -> bool {
        self.topology.node_of(a as u32) != self.topology.node_of(b as u32)
    }

    /// Charges a transfer of `bytes` from `from` to `to` starting at `start_ns`.
    fn transfer(&self, from: usize, to: usize, start_ns: u64, bytes: u64) -> netsim::Charge {
        let (send, _) = self.nic(from);
        let (_, recv) = self.nic(to);
        netsim::charge_transfer(send, recv, start_ns, &self.net, bytes)
    }

    /// A put of `bytes` to `target` that started at `start_ns` (before the copy): waits
    /// until the transfer has left this PE and records its delivery for `quiet`.
    pub fn put(&self, target: usize, start_ns: u64, bytes: usize) {
        let me = self.segs.me;
        if !self.crosses_nodes(me, target) {
            return;
        }
        let charge = self.transfer(me, target, start_ns, bytes as u64);
        self.undelivered_until
            .fetch_max(charge.delivered_ns, Ordering::AcqRel);
        netsim::wait_until(charge.injected_ns);
    }

    /// A get of `bytes` from `target` that started at `start_ns`: waits until the reply
    /// is delivered.
    pub fn get(&self, target: usize, start_ns: u64, bytes: usize) {
        let me = self.segs.me;
        if !self.crosses_nodes(me, target) {
            return;
        }
        let request = self.transfer(me, target, start_ns, 0);
        let reply = self.transfer(target, me, request.delivered_ns, bytes as u64);
        netsim::wait_until(reply.delivered_ns);
    }

    /// A small synchronisation message to `target`: waits until it is delivered.
    pub fn message(&self, target: usize) {
        let me = self.segs.me;
        if !self.crosses_nodes(me, target) {
            return;
        }
        let charge = self.transfer(me, target, netsim::now_ns(), 8);
        netsim::wait_until(charge.delivered_ns);
    }

    /// Waits until every put issued so far is delivered.
    pub fn quiet(&self) {
        netsim::wait_until(self.undelivered_until.load(Ordering::Acquire));
    }

    /// The modeled time in seconds of one `op` of `bytes` between this PE and
    /// `target` on an idle network (0 within a node).
    pub fn modeled(&self, op: RmaOp, target: usize, bytes: usize) -> f64 {
        if !self.crosses_nodes(self.segs.me, target) {
            return 0.0;
        }
        match op {
            RmaOp::Put => self.net.time(bytes as u64),
            RmaOp::Get => self.net.time(0) + self.net.time(bytes as u64),
        }
    }
}
