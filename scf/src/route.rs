//! Which hops a message crosses between two task placements, and what the profile
//! says one message costs on them.
//!
//! Owns the choice of route. It must not move data (`channel`) nor simulate a whole run
//! (`predict`).
//!
//! # The cheapest route
//!
//! A message goes from the sender's place to the receiver's: CPU or board, same node or
//! not. Two routes exist in the multilevel address space:
//! - direct: one transfer between the two places (`put` from the host, `put_from` from
//!   a board), crossing `fpga_read` if the sender is on a board, `net` if the nodes
//!   differ, `fpga_write` if the receiver is on a board; shmemplus pipelines the hops
//!   of one transfer in packets;
//! - through the host CPUs: the same hops as separate transfers, staged in host memory,
//!   each waiting for the previous one.
//!
//! The direct route exists between every pair of places of a shmemplus job (a board's
//! memory is reachable from every PE), and it crosses the same hops as the staged one
//! with overlap where the staged one has none, so its modeled time is never larger:
//! SCF always takes it. [`Route`] names the hops so that reports and predictions can
//! say what a channel costs.

use crate::graph::Placement;
use crate::mapping::JobShape;
use shmemplus::netsim::{HopKind, Profile};

/// The hops of one channel's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The hops crossed, in order (empty: both ends are host memory of one node).
    pub hops: Vec<HopKind>,
}

impl Route {
    /// The direct route from `from` to `to`.
    ///
    /// ```
    /// use shmemplus::netsim::HopKind;
    /// use shmemplus_scf::{route::Route, JobShape, Placement};
    /// let job = JobShape { n_pes: 4, pes_per_node: 2, boards_per_node: 1 };
    /// let cpu0 = Placement { pe: 0, board: None };
    /// let board_of_pe3 = Placement { pe: 3, board: Some(0) };
    /// assert_eq!(Route::between(cpu0, board_of_pe3, &job).hops, [HopKind::Net, HopKind::FpgaWrite]);
    /// assert_eq!(Route::between(board_of_pe3, cpu0, &job).name(), "fpga_read+net");
    /// ```
    pub fn between(from: Placement, to: Placement, job: &JobShape) -> Route {
        let mut hops = Vec::with_capacity(3);
        if from.board.is_some() {
            hops.push(HopKind::FpgaRead);
        }
        if job.node_of(from.pe) != job.node_of(to.pe) {
            hops.push(HopKind::Net);
        }
        if to.board.is_some() {
            hops.push(HopKind::FpgaWrite);
        }
        Route { hops }
    }

    /// `fpga_read+net+fpga_write`, or `host` for no hop.
    pub fn name(&self) -> String {
        if self.hops.is_empty() {
            return "host".into();
        }
        self.hops
            .iter()
            .map(|h| h.name())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// One message's time on each hop, by the profile's costs (0 for a hop it leaves
    /// free).
    pub fn hop_times(&self, profile: &Profile, bytes: u64) -> Vec<f64> {
        self.hops
            .iter()
            .map(|&h| profile.cost(h).map_or(0.0, |c| c.time(bytes)))
            .collect()
    }

    /// One message's modeled time with the hops one after the other (the model's
    /// `T_comm`, the staged route's time and a bound on the direct one's).
    pub fn time(&self, profile: &Profile, bytes: u64) -> f64 {
        // + 0.0: a sum of no hops is -0.0, which would print as "-0.00".
        shmemplus::model::route_time(&self.hop_times(profile, bytes)) + 0.0
    }
}
