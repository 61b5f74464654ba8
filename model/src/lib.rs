//! The multilevel communication model (`/work/shared/MODEL.md`): closed-form predictions
//! of transfer, gather and kernel times from per-hop times.
//!
//! This module owns the model's equations, restated here with their MODEL.md numbers:
//!
//! - one transfer: `T_comm = f(T_net) + f(T_fpga_read) + f(T_fpga_write)` (4-1, 4-2),
//!   the sum of the non-overlapped part of each hop ([`route_time`]);
//! - a packetized, pipelined transfer of `D` bytes in `N = ceil(D / P)` packets
//!   ([`packets`], [`pipeline`], [`pipeline_from_costs`]), either in the SHMEM+ form
//!   `T = (t1 + t2) + (N - 1) * max(t1 + t2, t3) + t3` (4-15) or in the general k-stage
//!   form `T = sum_s t_s + (N - 1) * max_s t_s`; bandwidth `D / T`;
//! - the choice of the packet size that minimises `T` over candidate sizes
//!   ([`candidate_packets`], [`best_packet`], [`best_packet_with`]), and FastFit's lower
//!   bound on a chunk that reaches a fraction `rho` of a link's peak,
//!   `k >= (a / b) * rho / (1 - rho)` ([`chunk_for_fraction`]);
//! - gathering results from many boards on one root, approaches 1-3 with one or four
//!   boards per node (4-5 .. 4-10, [`gather`]);
//! - the RATSS kernel time `t = PL / F + N * ops / (F * R)` ([`kernel_time`]).
//!
//! It is pure arithmetic on times the caller supplies (seconds, bytes). It must not
//! measure anything, read clocks, files or profiles, touch symmetric memory or know of
//! PEs: per-hop times come from microbenchmarks or from [`netsim::Cost`] functions, never
//! from this module.

use crate::netsim::Cost;
use std::fmt;

/// Why the model cannot evaluate its inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The two-stage form (4-15) was given other than three step times.
    #[error("the two-stage form (4-15) needs exactly 3 step times (t1, t2, t3), got {0}")]
    WrongStepCount(usize),
    /// A pipeline was given no step at all.
    #[error("the pipeline needs at least one step time")]
    NoSteps,
    /// A time (or another quantity that may be zero) is negative, NaN or infinite.
    #[error("{what} must be finite and non-negative, got {value}")]
    Negative {
        /// Which input.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// A quantity that must be positive (a clock, a rate, a slope) is not.
    #[error("{what} must be finite and positive, got {value}")]
    NotPositive {
        /// Which input.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// The gather model has cases for one or four boards per node only.
    #[error("boards per node must be 1 or 4 (the cases of 4-5 .. 4-10), got {0}")]
    BoardsPerNode(u32),
    /// The gather model needs at least one node.
    #[error("nodes must be at least 1")]
    NoNodes,
    /// Approach 3 with four boards per node needs `Tn'` (4-8).
    #[error(
        "approach 3 with 4 boards per node needs Tn', the net time of a node's combined \
         share (4-8)"
    )]
    MissingCombinedNet,
    /// FastFit's fraction of peak bandwidth must be in `[0, 1)`.
    #[error("the fraction of peak bandwidth must be in [0, 1), got {0}")]
    BadFraction(f64),
}

/// A predicted transfer: packets, seconds and bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// `N`, the number of packets (0 only for a transfer of 0 bytes).
    pub packets: u64,
    /// `T_comm` in seconds.
    pub time_s: f64,
    /// `D / T_comm` in bytes per second: 0 for `D = 0`, infinite when `T_comm = 0`
    /// with `D > 0` (every step free).
    pub bandwidth_bps: f64,
}

/// Which pipeline form [`pipeline`] uses; the model must describe what the
/// implementation actually does (MODEL.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stages {
    /// The SHMEM+ form (4-15): steps 1 and 2 run back to back on the source and overlap,
    /// as a unit, with step 3 on the target. Needs exactly three steps `t1, t2, t3`:
    /// `T = (t1 + t2) + (N - 1) * max(t1 + t2, t3) + t3`.
    Two,
    /// The general k-stage form, every step overlapping the others (three stages for the
    /// remote FPGA -> FPGA route, but any number of steps is accepted):
    /// `T = sum_s t_s + (N - 1) * max_s t_s`.
    Three,
}

impl Stages {
    /// The number of pipeline stages the form has: 2 or 3.
    ///
    /// ```
    /// use shmemplus::model::Stages;
    /// assert_eq!(Stages::Two.count(), 2);
    /// assert_eq!(Stages::Three.count(), 3);
    /// ```
    pub fn count(self) -> u32 {
        match self {
            Stages::Two => 2,
            Stages::Three => 3,
        }
    }
}

impl fmt::Display for Stages {
    /// `2-stage (4-15)` or `3-stage (k-stage form)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stages::Two => f.write_str("2-stage (4-15)"),
            Stages::Three => f.write_str("3-stage (k-stage form)"),
        }
    }
}

/// `N = ceil(D / P)` (MODEL.md §3). `p == 0` or `p >= d` means no packetization: one
/// packet of `d` bytes. `d == 0` gives 0 packets.
///
/// ```
/// use shmemplus::model::packets;
/// assert_eq!(packets(16 << 20, 2 << 20), 8);
/// assert_eq!(packets(10, 4), 3);
/// assert_eq!(packets(10, 0), 1);  // no packetization
/// assert_eq!(packets(10, 64), 1); // P >= D
/// ```
pub fn packets(d: u64, p: u64) -> u64 {
    if d == 0 {
        0
    } else if p == 0 || p >= d {
        1
    } else {
        d.div_ceil(p)
    }
}

/// The size of one packet as the model costs it: `min(P, D)`, or `D` for `p == 0` (no
/// packetization).
///
/// ```
/// use shmemplus::model::packet_bytes;
/// assert_eq!(packet_bytes(16 << 20, 2 << 20), 2 << 20);
/// assert_eq!(packet_bytes(1000, 0), 1000);
/// assert_eq!(packet_bytes(1000, 4096), 1000);
/// ```
pub fn packet_bytes(d: u64, p: u64) -> u64 {
    if p == 0 {
        d
    } else {
        p.min(d)
    }
}

/// A packetized, pipelined transfer of `d` bytes in packets of `p` bytes (MODEL.md §3).
///
/// `steps_s` are the times in seconds of each step for ONE packet of `min(P, D)` bytes
/// (every packet is costed at that size, as in MODEL.md). With `N = ceil(D / P)`
/// ([`packets`]):
///
/// - [`Stages::Two`] (4-15, exactly three steps):
///   `T = (t1 + t2) + (N - 1) * max(t1 + t2, t3) + t3`;
/// - [`Stages::Three`] (k-stage form, any number of steps):
///   `T = sum_s t_s + (N - 1) * max_s t_s`.
///
/// The bandwidth is `D / T`. A transfer of 0 bytes takes no packets and no time.
///
/// ```
/// use shmemplus::model::{pipeline, Stages};
/// // MODEL.md's worked example: 16 MiB in 2 MiB packets, t1 = 3 ms, t2 = 1.45 ms, t3 = 8 ms.
/// let e = pipeline(16 << 20, 2 << 20, &[3e-3, 1.45e-3, 8e-3], Stages::Two)?;
/// assert_eq!(e.packets, 8);
/// assert!((e.time_s - 68.45e-3).abs() < 1e-12);
/// assert!((e.bandwidth_bps / 1e6 - 245.1).abs() < 0.05);
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn pipeline(d: u64, p: u64, steps_s: &[f64], stages: Stages) -> Result<Estimate, ModelError> {
    if steps_s.is_empty() {
        return Err(ModelError::NoSteps);
    }
    if stages == Stages::Two && steps_s.len() != 3 {
        return Err(ModelError::WrongStepCount(steps_s.len()));
    }
    for &t in steps_s {
        non_negative("a step time", t)?;
    }
    let n = packets(d, p);
    if n == 0 {
        return Ok(Estimate {
            packets: 0,
            time_s: 0.0,
            bandwidth_bps: 0.0,
        });
    }
    let rest = (n - 1) as f64;
    let time_s = match stages {
        Stages::Two => {
            let (source, t3) = (steps_s[0] + steps_s[1], steps_s[2]);
            source + rest * source.max(t3) + t3
        }
        Stages::Three => {
            let sum: f64 = steps_s.iter().sum();
            let max = steps_s.iter().copied().fold(0.0, f64::max);
            sum + rest * max
        }
    };
    Ok(Estimate {
        packets: n,
        time_s,
        bandwidth_bps: d as f64 / time_s,
    })
}

/// [`pipeline`] with each step's time taken from a hop cost at the packet size:
/// `t_s = costs[s].time(min(P, D))` (MODEL.md §3; for the remote FPGA -> FPGA route the
/// costs are `fpga_read`, `net`, `fpga_write`).
///
/// ```
/// use shmemplus::model::{pipeline_from_costs, Stages};
/// use shmemplus::netsim::Cost;
/// // 1 GB/s links with no latency: 1 MiB packets take 1.048576 ms per step.
/// let link = Cost::LogGp { latency: 0.0, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// let e = pipeline_from_costs(4 << 20, 1 << 20, &[&link, &link, &link], Stages::Three)?;
/// assert_eq!(e.packets, 4);
/// assert!((e.time_s - 6.0 * 1.048576e-3).abs() < 1e-12); // 3 t + 3 t
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn pipeline_from_costs(
    d: u64,
    p: u64,
    costs: &[&Cost],
    stages: Stages,
) -> Result<Estimate, ModelError> {
    let bytes = packet_bytes(d, p);
    let steps: Vec<f64> = costs.iter().map(|c| c.time(bytes)).collect();
    pipeline(d, p, &steps, stages)
}

/// The smallest candidate packet size: 4 KiB.
pub const MIN_CANDIDATE_PACKET: u64 = 4 << 10;

/// The packet sizes [`best_packet`] compares (MODEL.md §3): the powers of two from
/// 4 KiB up to but excluding `d`, ascending, then `0` meaning "no packetization" (one
/// packet of `d` bytes).
///
/// ```
/// use shmemplus::model::candidate_packets;
/// assert_eq!(candidate_packets(20 << 10), vec![4 << 10, 8 << 10, 16 << 10, 0]);
/// assert_eq!(candidate_packets(16 << 10), vec![4 << 10, 8 << 10, 0]);
/// assert_eq!(candidate_packets(4 << 10), vec![0]);
/// ```
pub fn candidate_packets(d: u64) -> Vec<u64> {
    let mut out: Vec<u64> =
        std::iter::successors(Some(MIN_CANDIDATE_PACKET), |&p| p.checked_mul(2))
            .take_while(|&p| p < d)
            .collect();
    out.push(0);
    out
}

/// The candidate packet size ([`candidate_packets`]) that minimises the predicted
/// [`pipeline_from_costs`] time of `d` bytes over the hops `costs`, and every
/// candidate's estimate in candidate order. `0` means no packetization. Ties go to the
/// candidate with fewer packets.
///
/// ```
/// use shmemplus::model::{best_packet, Stages};
/// use shmemplus::netsim::Cost;
/// // A large per-message latency: splitting never pays.
/// let slow = Cost::LogGp { latency: 1.0, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// let (best, all) = best_packet(1 << 20, &[&slow, &slow, &slow], Stages::Three)?;
/// assert_eq!(best, 0);
/// assert_eq!(all.len(), 9); // 4K .. 512K, then 0
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn best_packet(
    d: u64,
    costs: &[&Cost],
    stages: Stages,
) -> Result<(u64, Vec<(u64, Estimate)>), ModelError> {
    best_packet_with(d, stages, |bytes| {
        costs.iter().map(|c| c.time(bytes)).collect()
    })
}

/// [`best_packet`] with the step times of one packet given by a function of the packet
/// size in bytes (`min(P, D)`, or `D` for no packetization), e.g. steps measured at one
/// size and scaled linearly.
///
/// ```
/// use shmemplus::model::{best_packet_with, Stages};
/// // Three steps of 2 us + 1 ns per byte: for 1 MiB the best packet is 32 KiB
/// // (T = D a / P + D b + 2 a + 2 b P is least near sqrt(D a / (2 b)) = 32 KiB).
/// let (best, _) = best_packet_with(1 << 20, Stages::Three, |bytes| {
///     vec![2048e-9 + bytes as f64 * 1e-9; 3]
/// })?;
/// assert_eq!(best, 32 << 10);
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn best_packet_with(
    d: u64,
    stages: Stages,
    step_times_s: impl Fn(u64) -> Vec<f64>,
) -> Result<(u64, Vec<(u64, Estimate)>), ModelError> {
    let mut all = Vec::new();
    for p in candidate_packets(d) {
        let steps = step_times_s(packet_bytes(d, p));
        all.push((p, pipeline(d, p, &steps, stages)?));
    }
    let mut best = (0u64, None::<Estimate>);
    for &(p, e) in &all {
        let better = match best.1 {
            None => true,
            Some(b) => e.time_s < b.time_s || (e.time_s == b.time_s && e.packets < b.packets),
        };
        if better {
            best = (p, Some(e));
        }
    }
    Ok((best.0, all))
}

/// One transfer over a route: the sum of the non-overlapped part of each hop's time,
/// `T_comm = f(T_net) + f(T_fpga_read) + f(T_fpga_write)` (4-1, 4-2). The caller gives
/// each `f(T_h)` (the hop's time less what other communication hides); a hop the route
/// does not use is simply left out (it contributes 0).
///
/// ```
/// use shmemplus::model::route_time;
/// assert!((route_time(&[2.0e-3, 0.73e-3, 4.99e-3]) - 7.72e-3).abs() < 1e-15);
/// assert_eq!(route_time(&[]), 0.0);
/// ```
pub fn route_time(hop_times_s: &[f64]) -> f64 {
    hop_times_s.iter().sum()
}

/// How `n` nodes' boards deliver their results to the root PE (MODEL.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GatherApproach {
    /// Approach 1: the root `get`s from every board in turn; everything is serialised
    /// (4-5, 4-6).
    OneGetEach,
    /// Approach 2: every node `put`s from its boards straight to the root; reads
    /// overlap across nodes (4-9, 4-10).
    PutFromEachBoard,
    /// Approach 3: every node first collects its boards into its CPU, then one put per
    /// node (4-7, 4-8).
    CollectThenPut,
}

impl GatherApproach {
    /// The approach with MODEL.md's number (1, 2 or 3).
    ///
    /// ```
    /// use shmemplus::model::GatherApproach;
    /// assert_eq!(GatherApproach::from_number(3), Some(GatherApproach::CollectThenPut));
    /// assert_eq!(GatherApproach::from_number(4), None);
    /// ```
    pub fn from_number(n: u8) -> Option<Self> {
        match n {
            1 => Some(GatherApproach::OneGetEach),
            2 => Some(GatherApproach::PutFromEachBoard),
            3 => Some(GatherApproach::CollectThenPut),
            _ => None,
        }
    }

    /// MODEL.md's number of the approach (1, 2 or 3).
    ///
    /// ```
    /// use shmemplus::model::GatherApproach;
    /// assert_eq!(GatherApproach::OneGetEach.number(), 1);
    /// ```
    pub fn number(self) -> u8 {
        match self {
            GatherApproach::OneGetEach => 1,
            GatherApproach::PutFromEachBoard => 2,
            GatherApproach::CollectThenPut => 3,
        }
    }

    /// The approach's equation for `boards_per_node` boards (1, else the four-board
    /// form), as MODEL.md writes it, with its number, for reports.
    ///
    /// ```
    /// use shmemplus::model::GatherApproach;
    /// assert_eq!(GatherApproach::PutFromEachBoard.formula(4), "4*[Tr + (n-1)*Tn]  (4-10)");
    /// ```
    pub fn formula(self, boards_per_node: u32) -> &'static str {
        match (self, boards_per_node) {
            (GatherApproach::OneGetEach, 1) => "(n-1)*(Tr+Tn) + Tr  (4-5)",
            (GatherApproach::OneGetEach, _) => "4*[(n-1)*(Tr+Tn) + Tr]  (4-6)",
            (GatherApproach::PutFromEachBoard, 1) => "Tr + (n-1)*Tn  (4-9)",
            (GatherApproach::PutFromEachBoard, _) => "4*[Tr + (n-1)*Tn]  (4-10)",
            (GatherApproach::CollectThenPut, 1) => "Tr + (n-1)*Tn  (4-7)",
            (GatherApproach::CollectThenPut, _) => "4*Tr + (n-1)*Tn'  (4-8)",
        }
    }
}

/// Seconds to gather results from `nodes` nodes of `boards_per_node` boards (1 or 4) on
/// one root (MODEL.md §4), with `tr_s = T_fpga_read(per-board share)`,
/// `tn_s = T_net(per-node share)` and, for approach 3 with four boards, `tn_combined_s`
/// = `Tn'` (the net time of a node's combined share; ignored otherwise):
///
/// | approach | one board per node | four boards per node |
/// |---|---|---|
/// | 1 | `(n - 1) * (Tr + Tn) + Tr` (4-5) | `4 * [(n - 1) * (Tr + Tn) + Tr]` (4-6) |
/// | 2 | `Tr + (n - 1) * Tn` (4-9) | `4 * [Tr + (n - 1) * Tn]` (4-10) |
/// | 3 | `Tr + (n - 1) * Tn` (4-7) | `4 * Tr + (n - 1) * Tn'` (4-8) |
///
/// ```
/// use shmemplus::model::{gather, GatherApproach};
/// // 16 nodes, one board each, Tr = 2 ms, Tn = 0.5 ms: 15 * 2.5 + 2 = 39.5 ms.
/// let t = gather(GatherApproach::OneGetEach, 16, 1, 2e-3, 0.5e-3, None)?;
/// assert!((t - 39.5e-3).abs() < 1e-12);
/// let t = gather(GatherApproach::CollectThenPut, 16, 4, 2e-3, 0.5e-3, Some(1.5e-3))?;
/// assert!((t - 30.5e-3).abs() < 1e-12); // 4 * 2 + 15 * 1.5
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn gather(
    approach: GatherApproach,
    nodes: u32,
    boards_per_node: u32,
    tr_s: f64,
    tn_s: f64,
    tn_combined_s: Option<f64>,
) -> Result<f64, ModelError> {
    if nodes == 0 {
        return Err(ModelError::NoNodes);
    }
    if boards_per_node != 1 && boards_per_node != 4 {
        return Err(ModelError::BoardsPerNode(boards_per_node));
    }
    non_negative("Tr", tr_s)?;
    non_negative("Tn", tn_s)?;
    let rest = f64::from(nodes - 1);
    let four = boards_per_node == 4;
    let single = match approach {
        GatherApproach::OneGetEach => rest * (tr_s + tn_s) + tr_s,
        GatherApproach::PutFromEachBoard => tr_s + rest * tn_s,
        GatherApproach::CollectThenPut if four => {
            let tn2 = tn_combined_s.ok_or(ModelError::MissingCombinedNet)?;
            non_negative("Tn'", tn2)?;
            return Ok(4.0 * tr_s + rest * tn2);
        }
        GatherApproach::CollectThenPut => tr_s + rest * tn_s,
    };
    Ok(if four { 4.0 * single } else { single })
}

/// The RATSS kernel time on a board (MODEL.md §6):
/// `t_kernel = PL / F + (N_elem * ops_per_elem) / (F * R)`, with `PL` the pipeline
/// latency in cycles, `F` the clock in Hz, `N_elem` the elements processed,
/// `ops_per_elem` operations per element and `R` the operations completed per cycle.
///
/// ```
/// use shmemplus::model::kernel_time;
/// // 100 cycles at 100 MHz, then 1e6 elements x 2 ops at 4 ops per cycle.
/// let t = kernel_time(100.0, 100e6, 1_000_000, 2.0, 4.0)?;
/// assert!((t - 5.001e-3).abs() < 1e-15);
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn kernel_time(
    pipeline_latency_cycles: f64,
    clock_hz: f64,
    elements: u64,
    ops_per_element: f64,
    ops_per_cycle: f64,
) -> Result<f64, ModelError> {
    non_negative("the pipeline latency", pipeline_latency_cycles)?;
    positive("the clock", clock_hz)?;
    non_negative("the operations per element", ops_per_element)?;
    positive("the operations per cycle", ops_per_cycle)?;
    Ok(pipeline_latency_cycles / clock_hz
        + (elements as f64 * ops_per_element) / (clock_hz * ops_per_cycle))
}

/// FastFit's chunk rule (MODEL.md §3): over one link with `T(k) = a + b * k`, a chunk
/// reaches a fraction `rho` of the link's peak bandwidth `1 / b` when
/// `k >= (a / b) * rho / (1 - rho)`. Returns that least `k` in bytes (a lower bound for
/// the packet size; 0 for `rho = 0`).
///
/// ```
/// use shmemplus::model::chunk_for_fraction;
/// // 10 us latency, 1 GB/s: 90% of the peak needs 90 000-byte chunks.
/// let k = chunk_for_fraction(10e-6, 1e-9, 0.9)?;
/// assert!((k - 90_000.0).abs() < 1e-6);
/// # Ok::<(), shmemplus::model::ModelError>(())
/// ```
pub fn chunk_for_fraction(a_s: f64, b_s_per_byte: f64, rho: f64) -> Result<f64, ModelError> {
    non_negative("the latency a", a_s)?;
    positive("the time per byte b", b_s_per_byte)?;
    if !(0.0..1.0).contains(&rho) {
        return Err(ModelError::BadFraction(rho));
    }
    Ok((a_s / b_s_per_byte) * rho / (1.0 - rho))
}

fn non_negative(what: &'static str, value: f64) -> Result<(), ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ModelError::Negative { what, value })
    }
}

fn positive(what: &'static str, value: f64) -> Result<(), ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ModelError::NotPositive { what, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
    }

    #[test]
    fn packets_rounds_up_and_handles_no_packetization() {
        assert_eq!(packets(16 * MIB, 2 * MIB), 8);
        assert_eq!(packets(16 * MIB + 1, 2 * MIB), 9);
        assert_eq!(packets(1, 1), 1);
        assert_eq!(packets(5 * MIB, 0), 1);
        assert_eq!(packets(5 * MIB, 5 * MIB), 1);
        assert_eq!(packets(5 * MIB, 64 * MIB), 1);
        assert_eq!(packets(0, 4096), 0);
        assert_eq!(packets(0, 0), 0);
    }

    #[test]
    fn worked_example_two_stage() {
        // MODEL.md: 4.45 + 7 * 8 + 8 = 68.45 ms, 16 MiB / 68.45 ms = 245.1 MB/s.
        let e = pipeline(16 * MIB, 2 * MIB, &[3e-3, 1.45e-3, 8e-3], Stages::Two).unwrap();
        assert_eq!(e.packets, 8);
        assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
        assert!(close(e.bandwidth_bps, 16_777_216.0 / 68.45e-3));
        assert_eq!(format!("{:.1}", e.bandwidth_bps / 1e6), "245.1");
    }

    #[test]
    fn worked_example_three_stage() {
        // sum = 3 + 1.45 + 8 = 12.45 ms; max = 8 ms; 12.45 + 7 * 8 = 68.45 ms. The same
        // as 4-15 here because t3 dominates both t1 + t2 and every single step.
        let e = pipeline(16 * MIB, 2 * MIB, &[3e-3, 1.45e-3, 8e-3], Stages::Three).unwrap();
        assert_eq!(e.packets, 8);
        assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
    }

    #[test]
    fn two_and_three_stage_differ_when_the_source_dominates() {
        // t1 + t2 = 6 > t3 = 4, max single step 5: two-stage 6 + 3 * 6 + 4 = 28;
        // three-stage 10 + 3 * 5 = 25.
        let steps = [5.0, 1.0, 4.0];
        let two = pipeline(4, 1, &steps, Stages::Two).unwrap();
        let three = pipeline(4, 1, &steps, Stages::Three).unwrap();
        assert!(close(two.time_s, 28.0));
        assert!(close(three.time_s, 25.0));
        assert!(close(two.bandwidth_bps, 4.0 / 28.0));
    }

    #[test]
    fn one_packet_is_the_sum_of_the_steps() {
        for p in [0, 16 * MIB, 32 * MIB] {
            for stages in [Stages::Two, Stages::Three] {
                let e = pipeline(16 * MIB, p, &[3e-3, 1.45e-3, 8e-3], stages).unwrap();
                assert_eq!(e.packets, 1);
                assert!(close(e.time_s, 12.45e-3), "{p} {stages}: {}", e.time_s);
            }
        }
    }

    #[test]
    fn k_stage_form_takes_any_number_of_steps() {
        let e = pipeline(10, 2, &[1.0, 3.0], Stages::Three).unwrap();
        assert!(close(e.time_s, 4.0 + 4.0 * 3.0)); // 5 packets
        let e = pipeline(10, 2, &[2.0], Stages::Three).unwrap();
        assert!(close(e.time_s, 10.0));
    }

    #[test]
    fn pipeline_rejects_bad_steps() {
        assert_eq!(
            pipeline(10, 2, &[1.0, 2.0], Stages::Two),
            Err(ModelError::WrongStepCount(2))
        );
        assert_eq!(
            pipeline(10, 2, &[1.0; 4], Stages::Two),
            Err(ModelError::WrongStepCount(4))
        );
        assert_eq!(
            pipeline(10, 2, &[], Stages::Three),
            Err(ModelError::NoSteps)
        );
        let e = pipeline(10, 2, &[1.0, -1.0, 1.0], Stages::Two).unwrap_err();
        assert!(e.to_string().contains("non-negative"), "{e}");
        assert!(pipeline(10, 2, &[f64::NAN], Stages::Three).is_err());
    }

    #[test]
    fn zero_bytes_take_no_time() {
        let e = pipeline(0, 4096, &[1.0, 1.0, 1.0], Stages::Two).unwrap();
        assert_eq!((e.packets, e.time_s, e.bandwidth_bps), (0, 0.0, 0.0));
    }

    #[test]
    fn free_steps_give_infinite_bandwidth() {
        let e = pipeline(10, 0, &[0.0, 0.0, 0.0], Stages::Two).unwrap();
        assert_eq!(e.time_s, 0.0);
        assert!(e.bandwidth_bps.is_infinite());
    }

    #[test]
    fn pipeline_from_costs_uses_min_of_packet_and_size() {
        let table = Cost::Table {
            points: vec![(MIB, 2e-3), (2 * MIB, 3e-3)],
        };
        let net = Cost::LogGp {
            latency: 0.0,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: 2.0 * MIB as f64 / 1.45e-3,
        };
        let write = Cost::Table {
            points: vec![(MIB, 4.99e-3), (2 * MIB, 8e-3)],
        };
        // The worked example again, from costs.
        let e =
            pipeline_from_costs(16 * MIB, 2 * MIB, &[&table, &net, &write], Stages::Two).unwrap();
        assert_eq!(e.packets, 8);
        assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
        // P > D: every step costed at D = 1 MiB; one packet.
        let e = pipeline_from_costs(MIB, 4 * MIB, &[&table, &net, &write], Stages::Two).unwrap();
        assert_eq!(e.packets, 1);
        assert!(close(e.time_s, 2e-3 + 0.725e-3 + 4.99e-3), "{}", e.time_s);
        // P = 0: no packetization, same thing.
        let e0 = pipeline_from_costs(MIB, 0, &[&table, &net, &write], Stages::Three).unwrap();
        assert!(close(e0.time_s, e.time_s));
    }

    #[test]
    fn candidates() {
        let c = candidate_packets(16 * MIB);
        assert_eq!(c.len(), 13); // 4K .. 8M, then 0
        assert_eq!(c[0], 4096);
        assert_eq!(c[11], 8 * MIB);
        assert_eq!(c[12], 0);
        assert_eq!(candidate_packets(0), vec![0]);
        assert_eq!(candidate_packets(4097), vec![4096, 0]);
        assert_eq!(*candidate_packets(u64::MAX).iter().max().unwrap(), 1 << 63);
    }

    fn linear(a: f64, b: f64) -> Cost {
        Cost::LogGp {
            latency: a,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: 1.0 / b,
        }
    }

    #[test]
    fn best_packet_middle_wins() {
        // Three equal steps a + b P: T = (D/P + 2)(a + b P) = D a / P + D b + 2 a + 2 b P,
        // least at P = sqrt(D a / (2 b)). D = 1 MiB, a / b = 2048 B: P = 32 KiB, where
        // D a / P + 2 b P = (65536 + 65536) ns against 163840 ns at 16 KiB and 64 KiB.
        let c = linear(2048e-9, 1e-9);
        let (best, all) = best_packet(MIB, &[&c, &c, &c], Stages::Three).unwrap();
        assert_eq!(best, 32 << 10);
        assert_eq!(all.len(), 9);
        let at = |p: u64| all.iter().find(|(q, _)| *q == p).unwrap().1;
        let want = (MIB as f64 + 4096.0 + 131_072.0) * 1e-9;
        assert!(
            (at(32 << 10).time_s - want).abs() < 1e-12,
            "{}",
            at(32 << 10).time_s
        );
        assert_eq!(at(32 << 10).packets, 32);
        let neighbour = (MIB as f64 + 4096.0 + 163_840.0) * 1e-9;
        assert!((at(16 << 10).time_s - neighbour).abs() < 1e-12);
        assert!((at(64 << 10).time_s - neighbour).abs() < 1e-12);
        // No packetization: 3 (a + b D).
        assert!((at(0).time_s - 3.0 * (2048.0 + MIB as f64) * 1e-9).abs() < 1e-12);
        assert_eq!(at(0).packets, 1);
    }

    #[test]
    fn best_packet_no_packetization_wins() {
        // One second per message: any split pays at least one more latency.
        let c = linear(1.0, 1e-9);
        let (best, all) = best_packet(MIB, &[&c, &c, &c], Stages::Two).unwrap();
        assert_eq!(best, 0);
        let min = all
            .iter()
            .map(|(_, e)| e.time_s)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(all.last().unwrap().1.time_s, min);
    }

    #[test]
    fn best_packet_ties_go_to_fewer_packets() {
        let (best, _) = best_packet_with(MIB, Stages::Three, |_| vec![0.0; 3]).unwrap();
        assert_eq!(best, 0);
    }

    #[test]
    fn best_packet_propagates_errors() {
        let c = linear(1.0, 1e-9);
        assert_eq!(
            best_packet(MIB, &[&c, &c], Stages::Two),
            Err(ModelError::WrongStepCount(2))
        );
    }

    #[test]
    fn route_time_sums() {
        assert!(close(route_time(&[1.0, 2.5, 0.5]), 4.0));
    }

    #[test]
    fn gather_all_approaches_n16() {
        // n = 16, Tr = 2 ms, Tn = 0.5 ms, Tn' = 1.5 ms (made up), by hand:
        let (tr, tn, tn2) = (2e-3, 0.5e-3, Some(1.5e-3));
        let cases = [
            (GatherApproach::OneGetEach, 1, 39.5e-3),  // 15 * 2.5 + 2
            (GatherApproach::OneGetEach, 4, 158.0e-3), // 4 * 39.5
            (GatherApproach::PutFromEachBoard, 1, 9.5e-3), // 2 + 15 * 0.5
            (GatherApproach::PutFromEachBoard, 4, 38.0e-3), // 4 * 9.5
            (GatherApproach::CollectThenPut, 1, 9.5e-3), // 2 + 15 * 0.5
            (GatherApproach::CollectThenPut, 4, 30.5e-3), // 4 * 2 + 15 * 1.5
        ];
        for (a, boards, want) in cases {
            let t = gather(a, 16, boards, tr, tn, tn2).unwrap();
            assert!(close(t, want), "{a:?} x{boards}: {t} != {want}");
        }
        // Tn' is used only by approach 3 with four boards.
        let t = gather(GatherApproach::CollectThenPut, 16, 1, tr, tn, None).unwrap();
        assert!(close(t, 9.5e-3));
        // One node: only the reads.
        let t = gather(GatherApproach::OneGetEach, 1, 4, tr, tn, None).unwrap();
        assert!(close(t, 8e-3));
    }

    #[test]
    fn gather_errors() {
        let g = |a, n, b, tn2| gather(a, n, b, 1e-3, 1e-3, tn2);
        assert_eq!(
            g(GatherApproach::OneGetEach, 16, 2, None),
            Err(ModelError::BoardsPerNode(2))
        );
        assert_eq!(
            g(GatherApproach::OneGetEach, 0, 1, None),
            Err(ModelError::NoNodes)
        );
        assert_eq!(
            g(GatherApproach::CollectThenPut, 16, 4, None),
            Err(ModelError::MissingCombinedNet)
        );
        assert!(gather(GatherApproach::OneGetEach, 2, 1, -1.0, 0.0, None).is_err());
        assert!(g(GatherApproach::CollectThenPut, 2, 4, Some(f64::NAN)).is_err());
        assert_eq!(GatherApproach::from_number(0), None);
        for n in 1..=3 {
            assert_eq!(GatherApproach::from_number(n).unwrap().number(), n);
        }
    }

    #[test]
    fn kernel() {
        // 100 / 100 MHz = 1 us; 1e6 * 2 / (100 MHz * 4) = 5 ms.
        let t = kernel_time(100.0, 100e6, 1_000_000, 2.0, 4.0).unwrap();
        assert!(close(t, 5.001e-3), "{t}");
        // No elements: just the pipeline latency.
        assert!(close(kernel_time(250.0, 125e6, 0, 8.0, 1.0).unwrap(), 2e-6));
        assert!(kernel_time(1.0, 0.0, 1, 1.0, 1.0).is_err());
        assert!(kernel_time(1.0, 1e6, 1, 1.0, 0.0).is_err());
        assert!(kernel_time(-1.0, 1e6, 1, 1.0, 1.0).is_err());
    }

    #[test]
    fn fastfit_chunk() {
        // a = 10 us, b = 1 ns/B (1 GB/s), rho = 0.9: 1e4 * 9 = 90 000 B, and such a
        // chunk indeed runs at 90 000 B / (10 us + 90 us) = 0.9 GB/s.
        let k = chunk_for_fraction(10e-6, 1e-9, 0.9).unwrap();
        assert!((k - 90_000.0).abs() < 1e-6);
        assert!(close(k / (10e-6 + k * 1e-9), 0.9e9));
        assert_eq!(chunk_for_fraction(10e-6, 1e-9, 0.0).unwrap(), 0.0);
        assert_eq!(
            chunk_for_fraction(10e-6, 1e-9, 1.0),
            Err(ModelError::BadFraction(1.0))
        );
        assert!(chunk_for_fraction(10e-6, 0.0, 0.5).is_err());
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            ModelError::WrongStepCount(2).to_string(),
            "the two-stage form (4-15) needs exactly 3 step times (t1, t2, t3), got 2"
        );
        assert!(ModelError::MissingCombinedNet.to_string().contains("Tn'"));
        assert_eq!(Stages::Two.to_string(), "2-stage (4-15)");
    }
}
