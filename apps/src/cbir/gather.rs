//! Gathering the boards' results on the root PE, in the three ways of docs/model.md §4,
//! and the model's prediction of each.
//!
//! - Approach 1 ([`GatherApproach::OneGetEach`]): the root `get`s from every board of
//!   every node in turn, straight into its result array (`get_into`).
//! - Approach 2 ([`GatherApproach::PutFromEachBoard`]): each node's leader puts every
//!   board's results straight from board memory into the root's array (`put_from`).
//! - Approach 3 ([`GatherApproach::CollectThenPut`]): each node's leader first copies
//!   its boards' results into its CPU memory (`get_into` from its own boards), then
//!   sends them to the root in one `put_from`.
//!
//! This module owns those transfer patterns and the prediction
//! ([`predict`]), which takes the per-hop times from the library's model of the running
//! profile (`Shmem::modeled_route_seconds`) and the equations from
//! `shmemplus::model::gather`. It must not time anything or synchronise: the caller
//! brackets the gather with barriers and measures it.

use super::plan::Plan;
use serde::Serialize;
use shmemplus::model::{self, GatherApproach};
use shmemplus::{Place, RmaOp, Shmem, SymVec};

/// The PE that gathers the results.
pub const ROOT: u32 = 0;

/// Bytes of one result record.
pub const RECORD_BYTES: u64 = 8;

/// The symmetric buffers a gather uses.
pub struct Buffers<'a> {
    /// Per board `b`, on `Place::Fpga(b)`: the results the board's kernel wrote
    /// (meaningful on node leaders).
    pub board_results: &'a [SymVec<u64>],
    /// On the CPU: the root's array of every board's results, laid out by
    /// [`Plan::board_offset`].
    pub root_results: &'a SymVec<u64>,
    /// On the CPU: a leader's staging area for its node's results (approach 3).
    pub node_stage: &'a SymVec<u64>,
}

/// Moves every board's results into the root's `root_results` with `approach`; returns
/// when this PE's part is complete (its puts included). Every PE calls it.
pub fn gather(
    shmem: &Shmem,
    plan: &Plan,
    approach: GatherApproach,
    bufs: &Buffers<'_>,
) -> shmemplus::Result<()> {
    let me = shmem.my_pe();
    let node = shmem.node();
    let is_leader = plan.leader(node) == me;
    match approach {
        GatherApproach::OneGetEach => {
            if me == ROOT {
                for n in 0..plan.nodes() {
                    for (b, results) in (0..plan.boards()).zip(bufs.board_results) {
                        let count = plan.board_share(n, b).count as usize;
                        if count > 0 {
                            let at = plan.board_offset(n, b) as usize;
                            shmem.get_into(
                                bufs.root_results,
                                at,
                                results,
                                0,
                                count,
                                plan.leader(n),
                            )?;
                        }
                    }
                }
            }
        }
        GatherApproach::PutFromEachBoard => {
            if is_leader {
                for (b, results) in (0..plan.boards()).zip(bufs.board_results) {
                    let count = plan.board_share(node, b).count as usize;
                    if count > 0 {
                        let at = plan.board_offset(node, b) as usize;
                        shmem.put_from(bufs.root_results, at, results, 0, count, ROOT)?;
                    }
                }
            }
        }
        GatherApproach::CollectThenPut => {
            if is_leader {
                let mut staged = 0;
                for (b, results) in (0..plan.boards()).zip(bufs.board_results) {
                    let count = plan.board_share(node, b).count as usize;
                    if count > 0 {
                        shmem.get_into(bufs.node_stage, staged, results, 0, count, me)?;
                        staged += count;
                    }
                }
                if staged > 0 {
                    let at = plan.board_offset(node, 0) as usize;
                    shmem.put_from(bufs.root_results, at, bufs.node_stage, 0, staged, ROOT)?;
                }
            }
        }
    }
    shmem.quiet()
}

/// The model's prediction of a gather and what it was computed from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prediction {
    /// Predicted seconds.
    pub seconds: f64,
    /// The equation, as in docs/model.md §4.
    pub formula: &'static str,
    /// `Tr`: seconds to read one board's share into its host (`fpga_read`).
    pub tr_s: f64,
    /// `Tn`: seconds to send one board's share to another node (`net`).
    pub tn_s: f64,
    /// `Tn'`: seconds to send a node's combined share (approach 3 with 4 boards).
    pub tn_combined_s: Option<f64>,
    /// Bytes of one board's share (the largest one).
    pub board_share_bytes: u64,
}

/// What each approach does, in a few words.
pub fn describe(approach: GatherApproach) -> &'static str {
    match approach {
        GatherApproach::OneGetEach => "the root gets from every board in turn",
        GatherApproach::PutFromEachBoard => "every node puts from each board to the root",
        GatherApproach::CollectThenPut => "each node collects its boards, then one put",
    }
}

/// The model's prediction for gathering `plan`'s board results with `approach` on
/// this job, or why there is none (a profile without modeled costs such as `native`,
/// a board count the model has no case for, nothing on the boards). Call it on the
/// root: `Tr` is the root's own board 0 read into its CPU, `Tn` a put from the root's
/// CPU to the leader of node 1.
pub fn predict(shmem: &Shmem, plan: &Plan, approach: GatherApproach) -> Result<Prediction, String> {
    let boards = plan.boards();
    if !plan.uses_boards() {
        return Err("no results on boards".into());
    }
    if boards != 1 && boards != 4 {
        return Err(format!(
            "the model has cases for 1 or 4 boards per node, not {boards}"
        ));
    }
    let bytes = u64::from(plan.max_board_share()) * RECORD_BYTES;
    let modeled = |op, local, remote, pe, bytes: u64| -> Result<f64, String> {
        shmem
            .modeled_route_seconds(op, local, remote, pe, bytes as usize)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("profile {} models no transfer costs", shmem.profile().name))
    };
    let me = shmem.my_pe();
    let tr = modeled(RmaOp::Get, Some(Place::Cpu), Place::Fpga(0), me, bytes)?;
    let (tn, tn_combined) = if plan.nodes() > 1 {
        let other = plan.leader(1);
        let tn = modeled(RmaOp::Put, None, Place::Cpu, other, bytes)?;
        let combined = if approach == GatherApproach::CollectThenPut && boards == 4 {
            Some(modeled(
                RmaOp::Put,
                None,
                Place::Cpu,
                other,
                u64::from(boards) * bytes,
            )?)
        } else {
            None
        };
        (tn, combined)
    } else {
        let none = (approach == GatherApproach::CollectThenPut && boards == 4).then_some(0.0);
        (0.0, none)
    };
    let seconds = model::gather(approach, plan.nodes(), boards, tr, tn, tn_combined)
        .map_err(|e| e.to_string())?;
    Ok(Prediction {
        seconds,
        formula: approach.formula(boards),
        tr_s: tr,
        tn_s: tn,
        tn_combined_s: tn_combined,
        board_share_bytes: bytes,
    })
}
