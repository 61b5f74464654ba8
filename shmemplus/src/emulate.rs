//! Emulation of the simulated cluster: charges every hop of a transfer to the shared
//! timelines of the resources it uses (through `netsim`) and makes the initiating
//! thread wait for the modeled instants.
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

use crate::segment::JobSegments;
use crate::topology::Topology;
use netsim::{Cost, Profile};
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

/// The emulation of one PE.
pub struct Emulation {
    net: Option<Cost>,
    read: Option<Cost>,
    write: Option<Cost>,
    topology: Topology,
    segs: Arc<JobSegments>,
    /// The latest delivery instant of this PE's puts (what `quiet` waits for).
    undelivered_until: AtomicU64,
}

impl Emulation {
    /// The emulation for `profile`, or `None` when nothing in it costs anything.
    pub fn new(profile: &Profile, topology: Topology, segs: Arc<JobSegments>) -> Option<Emulation> {
        if profile.is_free() {
            return None;
        }
        Some(Emulation {
            net: profile.net.clone(),
            read: profile.fpga_read.clone(),
            write: profile.fpga_write.clone(),
            topology,
            segs,
            undelivered_until: AtomicU64::new(0),
        })
    }

    fn leader(&self, pe: usize) -> &crate::segment::Control {
        let leader = (self.topology.node_of(pe as u32) * self.topology.pes_per_node) as usize;
        self.segs.segs[leader].control()
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

    /// Charges the hops in sequence from `start_ns`; returns (injected instant of the
    /// first charged hop, delivered instant of the last), or `None` if all are free.
    fn charge(&self, hops: &[Hop], start_ns: u64) -> Option<(u64, u64)> {
        let mut at = start_ns;
        let mut injected = None;
        for hop in hops {
            let Some(cost) = self.cost(hop) else { continue };
            let charge = match *hop {
                Hop::Net { from, to, bytes } => netsim::charge_transfer(
                    &self.leader(from).nic_send,
                    &self.leader(to).nic_recv,
                    at,
                    cost,
                    bytes,
                ),
                Hop::Read { pe, board, bytes } => {
                    netsim::charge_hop(&self.leader(pe).dma_read[board as usize], at, cost, bytes)
                }
                Hop::Write { pe, board, bytes } => {
                    netsim::charge_hop(&self.leader(pe).dma_write[board as usize], at, cost, bytes)
                }
            };
            injected.get_or_insert(charge.injected_ns);
            at = charge.delivered_ns;
        }
        injected.map(|i| (i, at))
    }

    /// A put along `hops` that started at `start_ns`: waits until the first hop has
    /// taken the data and records the delivery for `quiet`.
    pub fn put(&self, hops: &[Hop], start_ns: u64) {
        if let Some((injected, delivered)) = self.charge(hops, start_ns) {
            self.undelivered_until
                .fetch_max(delivered, Ordering::AcqRel);
            netsim::wait_until(injected);
        }
    }

    /// A blocking transfer along `hops` (a get, a local DMA): waits until delivered.
    pub fn blocking(&self, hops: &[Hop], start_ns: u64) {
        if let Some((_, delivered)) = self.charge(hops, start_ns) {
            netsim::wait_until(delivered);
        }
    }

    /// A small synchronisation message to `target`: waits until it is delivered.
    pub fn message(&self, target: usize) {
        let hop = Hop::Net {
            from: self.segs.me,
            to: target,
            bytes: 8,
        };
        self.blocking(&[hop], netsim::now_ns());
    }

    /// Waits until every put issued so far is delivered.
    pub fn quiet(&self) {
        netsim::wait_until(self.undelivered_until.load(Ordering::Acquire));
    }

    /// The modeled time in seconds of `hops` on an idle cluster.
    pub fn modeled(&self, hops: &[Hop]) -> f64 {
        hops.iter()
            .filter_map(|h| {
                let bytes = match *h {
                    Hop::Net { bytes, .. } | Hop::Read { bytes, .. } | Hop::Write { bytes, .. } => {
                        bytes
                    }
                };
                self.cost(h).map(|c| c.time(bytes))
            })
            .sum()
    }
}
