//! `shmemplus-model`: the multilevel communication model (`docs/model.md`), closed-form
//! predictions of transfer, gather and kernel times from per-hop times. The library
//! re-exports it as `shmemplus::model`.
//!
//! This crate owns the model's equations, restated here with their numbers in
//! `docs/model.md`:
//!
//! - one transfer: `T_comm = f(T_net) + f(T_fpga_read) + f(T_fpga_write)` (4-1, 4-2),
//!   the sum of the non-overlapped part of each hop ([`route_time`]);
//! - a packetized, pipelined transfer of `D` bytes in `N = ceil(D / P)` packets
//!   ([`packets`], [`pipeline`], [`pipeline_from_costs`]), either in the SHMEM+ form
//!   `T = (t1 + t2) + (N - 1) * max(t1 + t2, t3) + t3` (4-15) or in the general k-stage
//!   form `T = sum_s t_s + (N - 1) * max_s t_s`; bandwidth `D / T`;
//! - the one search for the packet size that minimises a transfer's time
//!   ([`choose_packet`] over [`candidate_packets`], never below [`MIN_PACKET`]), which
//!   the model's own predictions ([`best_packet`], [`best_packet_with`]), the library's
//!   self-tuning pass, its emulation and the packet sweep of `shmemplus bench` all use
//!   with their own notion of time; and FastFit's lower
//!   bound on a chunk that reaches a fraction `rho` of a link's peak,
//!   `k >= (a / b) * rho / (1 - rho)` ([`chunk_for_fraction`]);
//! - gathering results from many boards on one root, approaches 1-3 with one or four
//!   boards per node (4-5 .. 4-10, [`gather`]);
//! - the RATSS kernel time `t = PL / F + N * ops / (F * R)` ([`kernel_time`]).
//!
//! It is pure arithmetic on times the caller supplies (seconds, bytes). It must not
//! measure anything, read clocks, files or profiles, touch symmetric memory or know of
//! PEs: per-hop times come from microbenchmarks or from [`netsim::Cost`] functions, never
//! from this crate. It is a leaf by construction: it depends on `netsim` (for [`Cost`])
//! and nothing of the library, which depends on it.

use netsim::Cost;
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
/// implementation actually does (`docs/model.md`, packetized pipelined transfers).
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
    /// use shmemplus_model::Stages;
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

/// `N = ceil(D / P)` (`docs/model.md`, packetized pipelined transfers). `p == 0` or `p >= d` means no packetization: one
/// packet of `d` bytes. `d == 0` gives 0 packets.
///
/// ```
/// use shmemplus_model::packets;
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
/// use shmemplus_model::packet_bytes;
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

/// A packetized, pipelined transfer of `d` bytes in packets of `p` bytes (`docs/model.md`, packetized pipelined transfers).
///
/// `steps_s` are the times in seconds of each step for ONE packet of `min(P, D)` bytes
/// (every packet is costed at that size, as in `docs/model.md`). With `N = ceil(D / P)`
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
/// use shmemplus_model::{pipeline, Stages};
/// // The worked example of `docs/model.md`: 16 MiB in 2 MiB packets, t1 = 3 ms, t2 = 1.45 ms, t3 = 8 ms.
/// let e = pipeline(16 << 20, 2 << 20, &[3e-3, 1.45e-3, 8e-3], Stages::Two)?;
/// assert_eq!(e.packets, 8);
/// assert!((e.time_s - 68.45e-3).abs() < 1e-12);
/// assert!((e.bandwidth_bps / 1e6 - 245.1).abs() < 0.05);
/// # Ok::<(), shmemplus_model::ModelError>(())
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
/// `t_s = costs[s].time(min(P, D))` (`docs/model.md`, packetized pipelined transfers; for the remote FPGA -> FPGA route the
/// costs are `fpga_read`, `net`, `fpga_write`).
///
/// ```
/// use shmemplus_model::{pipeline_from_costs, Stages};
/// use netsim::Cost;
/// // 1 GB/s links with no latency: 1 MiB packets take 1.048576 ms per step.
/// let link = Cost::LogGp { latency: 0.0, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// let e = pipeline_from_costs(4 << 20, 1 << 20, &[&link, &link, &link], Stages::Three)?;
/// assert_eq!(e.packets, 4);
/// assert!((e.time_s - 6.0 * 1.048576e-3).abs() < 1e-12); // 3 t + 3 t
/// # Ok::<(), shmemplus_model::ModelError>(())
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

/// The smallest packet size any packet search considers, in bytes: 4 KiB.
///
/// Why 4 KiB: it is the page size, and below a page a packet pays the library's whole
/// per-packet work (one active message, one DMA span, one reservation on each hop's
/// timeline) for less than a page of data, which no cost in the shipped profiles
/// rewards; it is also the smallest size the self-tuning pass measures, so its fitted
/// costs are never extrapolated below their first point when it chooses a packet. On
/// the shipped profiles, searches from 4 KiB and from 64 KiB chose the same packets;
/// the README's packet-sweep section gives the measurements.
pub const MIN_PACKET: u64 = 4 << 10;

/// How much faster a candidate with more packets must be, relatively, to be chosen
/// over one with fewer: 0.1%. A prediction (or a median of measurements) this close to
/// another is not a reason to pay for more packets.
pub const PACKET_MARGIN: f64 = 1e-3;

/// The packet sizes a packet search compares (`docs/model.md`, packetized pipelined
/// transfers): the powers of two from [`MIN_PACKET`] up to but excluding `d`,
/// ascending, then `0` meaning "no packetization" (one packet of `d` bytes).
///
/// ```
/// use shmemplus_model::candidate_packets;
/// assert_eq!(candidate_packets(20 << 10), vec![4 << 10, 8 << 10, 16 << 10, 0]);
/// assert_eq!(candidate_packets(16 << 10), vec![4 << 10, 8 << 10, 0]);
/// assert_eq!(candidate_packets(4 << 10), vec![0]);
/// ```
pub fn candidate_packets(d: u64) -> Vec<u64> {
    let mut out: Vec<u64> = std::iter::successors(Some(MIN_PACKET), |&p| p.checked_mul(2))
        .take_while(|&p| p < d)
        .collect();
    out.push(0);
    out
}

/// The one packet-size search: evaluates `time_s(p)` for every candidate `p` of
/// [`candidate_packets`] (`0`: no packetization), in that order, and returns the
/// chosen packet with every candidate's time in candidate order.
///
/// The choice is the fastest candidate, except that a candidate with more packets must
/// beat one with fewer by more than [`PACKET_MARGIN`] (so ties, and differences within
/// noise, go to fewer packets; no packetization is the default). What "time" means is
/// the caller's: the model's closed form, the tuner's fitted prediction, the
/// emulation's charging on private timelines, or a measured median. A NaN time never
/// wins. The first error of `time_s` ends the search.
///
/// ```
/// use shmemplus_model::choose_packet;
/// // 1 MiB over one hop of 10 us + 1 ns/B, in a 4-deep pipeline of equal stages.
/// let (best, all) = choose_packet(1 << 20, |p| {
///     let p = if p == 0 { 1 << 20 } else { p };
///     let n = ((1u64 << 20) / p) as f64;
///     Ok::<f64, ()>((n + 3.0) * (10e-6 + p as f64 * 1e-9))
/// })?;
/// assert_eq!(best, 64 << 10);
/// assert_eq!(all.len(), 9); // 4K .. 512K, then 0
/// # Ok::<(), ()>(())
/// ```
pub fn choose_packet<E>(
    d: u64,
    mut time_s: impl FnMut(u64) -> Result<f64, E>,
) -> Result<(u64, Vec<(u64, f64)>), E> {
    let mut all = Vec::new();
    for p in candidate_packets(d) {
        all.push((p, time_s(p)?));
    }
    // From fewest packets (no packetization, last) to most (the smallest packet, first).
    let mut best: Option<(u64, f64)> = None;
    for &(p, t) in all.iter().rev() {
        let better = match best {
            _ if t.is_nan() => false,
            None => true,
            Some((_, b)) => b.is_nan() || t < b * (1.0 - PACKET_MARGIN),
        };
        if better {
            best = Some((p, t));
        }
    }
    Ok((best.map_or(0, |(p, _)| p), all))
}

/// The candidate packet size ([`candidate_packets`]) that minimises the predicted
/// [`pipeline_from_costs`] time of `d` bytes over the hops `costs` ([`choose_packet`]'s
/// rule), and every candidate's estimate in candidate order. `0` means no
/// packetization.
///
/// ```
/// use shmemplus_model::{best_packet, Stages};
/// use netsim::Cost;
/// // A large per-message latency: splitting never pays.
/// let slow = Cost::LogGp { latency: 1.0, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// let (best, all) = best_packet(1 << 20, &[&slow, &slow, &slow], Stages::Three)?;
/// assert_eq!(best, 0);
/// assert_eq!(all.len(), 9); // 4K .. 512K, then 0
/// # Ok::<(), shmemplus_model::ModelError>(())
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
/// use shmemplus_model::{best_packet_with, Stages};
/// // Three steps of 2 us + 1 ns per byte: for 1 MiB the best packet is 32 KiB
/// // (T = D a / P + D b + 2 a + 2 b P is least near sqrt(D a / (2 b)) = 32 KiB).
/// let (best, _) = best_packet_with(1 << 20, Stages::Three, |bytes| {
///     vec![2048e-9 + bytes as f64 * 1e-9; 3]
/// })?;
/// assert_eq!(best, 32 << 10);
/// # Ok::<(), shmemplus_model::ModelError>(())
/// ```
pub fn best_packet_with(
    d: u64,
    stages: Stages,
    step_times_s: impl Fn(u64) -> Vec<f64>,
) -> Result<(u64, Vec<(u64, Estimate)>), ModelError> {
    let mut all = Vec::new();
    let (best, _) = choose_packet(d, |p| {
        let e = pipeline(d, p, &step_times_s(packet_bytes(d, p)), stages)?;
        all.push((p, e));
        Ok(e.time_s)
    })?;
    Ok((best, all))
}

/// One transfer over a route: the sum of the non-overlapped part of each hop's time,
/// `T_comm = f(T_net) + f(T_fpga_read) + f(T_fpga_write)` (4-1, 4-2). The caller gives
/// each `f(T_h)` (the hop's time less what other communication hides); a hop the route
/// does not use is simply left out (it contributes 0).
///
/// ```
/// use shmemplus_model::route_time;
/// assert!((route_time(&[2.0e-3, 0.73e-3, 4.99e-3]) - 7.72e-3).abs() < 1e-15);
/// assert_eq!(route_time(&[]), 0.0);
/// ```
pub fn route_time(hop_times_s: &[f64]) -> f64 {
    hop_times_s.iter().sum()
}

/// How `n` nodes' boards deliver their results to the root PE (`docs/model.md`, gathering results from many boards).
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
    /// The approach with its number in `docs/model.md` (1, 2 or 3).
    ///
    /// ```
    /// use shmemplus_model::GatherApproach;
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

    /// The approach's number in `docs/model.md` (1, 2 or 3).
    ///
    /// ```
    /// use shmemplus_model::GatherApproach;
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
    /// form), as `docs/model.md` writes it, with its number, for reports.
    ///
    /// ```
    /// use shmemplus_model::GatherApproach;
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
/// one root (`docs/model.md`, gathering results from many boards), with `tr_s = T_fpga_read(per-board share)`,
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
/// use shmemplus_model::{gather, GatherApproach};
/// // 16 nodes, one board each, Tr = 2 ms, Tn = 0.5 ms: 15 * 2.5 + 2 = 39.5 ms.
/// let t = gather(GatherApproach::OneGetEach, 16, 1, 2e-3, 0.5e-3, None)?;
/// assert!((t - 39.5e-3).abs() < 1e-12);
/// let t = gather(GatherApproach::CollectThenPut, 16, 4, 2e-3, 0.5e-3, Some(1.5e-3))?;
/// assert!((t - 30.5e-3).abs() < 1e-12); // 4 * 2 + 15 * 1.5
/// # Ok::<(), shmemplus_model::ModelError>(())
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

/// The RATSS kernel time on a board (`docs/model.md`, kernel time on a board):
/// `t_kernel = PL / F + (N_elem * ops_per_elem) / (F * R)`, with `PL` the pipeline
/// latency in cycles, `F` the clock in Hz, `N_elem` the elements processed,
/// `ops_per_elem` operations per element and `R` the operations completed per cycle.
///
/// ```
/// use shmemplus_model::kernel_time;
/// // 100 cycles at 100 MHz, then 1e6 elements x 2 ops at 4 ops per cycle.
/// let t = kernel_time(100.0, 100e6, 1_000_000, 2.0, 4.0)?;
/// assert!((t - 5.001e-3).abs() < 1e-15);
/// # Ok::<(), shmemplus_model::ModelError>(())
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

/// FastFit's chunk rule (`docs/model.md`, packetized pipelined transfers): over one link with `T(k) = a + b * k`, a chunk
/// reaches a fraction `rho` of the link's peak bandwidth `1 / b` when
/// `k >= (a / b) * rho / (1 - rho)`. Returns that least `k` in bytes (a lower bound for
/// the packet size; 0 for `rho = 0`).
///
/// ```
/// use shmemplus_model::chunk_for_fraction;
/// // 10 us latency, 1 GB/s: 90% of the peak needs 90 000-byte chunks.
/// let k = chunk_for_fraction(10e-6, 1e-9, 0.9)?;
/// assert!((k - 90_000.0).abs() < 1e-6);
/// # Ok::<(), shmemplus_model::ModelError>(())
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
