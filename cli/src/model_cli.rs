//! `shmemplus model`: the multilevel communication model (`shmemplus::model`,
//! `docs/model.md`) on the command line: pipelined transfer times, the best packet
//! size, gather times and kernel times, printed as a few aligned lines or as one JSON
//! object (`--json`).
//!
//! It parses arguments, loads profiles through `netsim`, calls the pure functions of
//! `shmemplus::model` and formats their results; it must not measure anything. Sizes
//! accept B/KiB/MiB/GiB suffixes, times are in milliseconds and MB/s means 10^6 bytes
//! per second.

use crate::info::human_bytes;
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;
use shmemplus::model::{self, Estimate, GatherApproach, Stages};
use shmemplus::netsim::{Cost, Profile};

/// The route `--profile` models: remote FPGA -> FPGA (fpga_read, net, fpga_write).
pub const ROUTE: &str = "fpga-fpga-remote";

/// Arguments of `shmemplus model`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// What to model.
    #[command(subcommand)]
    pub command: ModelCommand,
}

/// The `shmemplus model` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ModelCommand {
    /// Time and bandwidth of a packetized, pipelined remote FPGA -> FPGA transfer
    /// (docs/model.md, packetized pipelined transfers: 4-15 and the k-stage form).
    Pipeline(PipelineArgs),
    /// Predicted time of every candidate packet size (powers of two from the model's
    /// minimum packet, 4 KiB, below the size, and no packetization) and the fastest one.
    BestPacket(BestPacketArgs),
    /// Time to gather results from many boards on one root (docs/model.md, gathering:
    /// 4-5 .. 4-10).
    Gather(GatherArgs),
    /// Kernel time on a board, RATSS model: PL / F + N * K / (F * R) (docs/model.md,
    /// kernel time on a board).
    Kernel(KernelArgs),
}

/// Where the per-packet step times come from.
#[derive(Debug, Clone, Args)]
pub struct StepSource {
    /// Step times in ms, comma-separated: t1 (source board -> source CPU), t2 (net),
    /// t3 (target CPU -> target board). With `pipeline` they are the times of ONE packet
    /// of min(P, D) bytes. Default stages with --step-ms: 2 (the SHMEM+ 4-15 form).
    #[arg(
        long,
        value_name = "T1,T2,T3",
        value_delimiter = ',',
        allow_negative_numbers = true,
        required_unless_present_any = ["profile", "tuning"],
        conflicts_with_all = ["profile", "tuning"]
    )]
    pub step_ms: Option<Vec<f64>>,
    /// Take the steps from a profile's fpga_read, net and fpga_write costs at the packet
    /// size (the remote FPGA -> FPGA route): native, mu, novo-g or a TOML file. Default
    /// stages with --profile: 3 (the library overlaps all three steps).
    #[arg(long, value_name = "NAME|PATH", conflicts_with = "tuning")]
    pub profile: Option<String>,
    /// Take the steps from a tuning result (a cache file written by the self-tuning
    /// pass, see `shmemplus tune`): the measured fpga_read, net and fpga_write costs.
    #[arg(long, value_name = "FILE")]
    pub tuning: Option<std::path::PathBuf>,
    /// Pipeline form: 2 = SHMEM+ 4-15 (steps 1 and 2 back to back, overlapping step 3),
    /// 3 = k-stage form (every step overlapped). Default: 2 with --step-ms, 3 with
    /// --profile.
    #[arg(long, value_name = "2|3", value_parser = clap::value_parser!(u8).range(2..=3))]
    pub stages: Option<u8>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `shmemplus model pipeline`.
#[derive(Debug, Clone, Args)]
pub struct PipelineArgs {
    /// Transfer size D (4096, 64K, 512KiB, 16MiB, 1GiB ...).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: u64,
    /// Packet size P; 0 = no packetization (only with --profile); P >= D is one packet.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub packet: u64,
    /// Step times and pipeline form.
    #[command(flatten)]
    pub steps: StepSource,
}

/// Arguments of `shmemplus model best-packet`.
#[derive(Debug, Clone, Args)]
pub struct BestPacketArgs {
    /// Transfer size D (4096, 64K, 512KiB, 16MiB, 1GiB ...).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: u64,
    /// With --step-ms: the packet size the step times were measured at. Each step is
    /// then scaled linearly with the packet size, t(P) = t * P / B (no latency term, so
    /// prefer --profile to find a real optimum). Required with --step-ms.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "profile")]
    pub step_bytes: Option<u64>,
    /// Step times and pipeline form.
    #[command(flatten)]
    pub steps: StepSource,
}

/// Arguments of `shmemplus model gather`.
#[derive(Debug, Clone, Args)]
pub struct GatherArgs {
    /// 1: the root gets from every board in turn; 2: every node puts from its boards
    /// to the root; 3: every node collects its boards, then one put per node.
    #[arg(long, value_name = "1|2|3", value_parser = clap::value_parser!(u8).range(1..=3))]
    pub approach: u8,
    /// Number of nodes n (the root's included).
    #[arg(long, value_name = "N")]
    pub nodes: u32,
    /// Boards per node: 1 or 4.
    #[arg(long, value_name = "1|4")]
    pub boards_per_node: u32,
    /// Tr: ms to read one board's share (fpga_read).
    #[arg(long, value_name = "MS")]
    pub read_ms: f64,
    /// Tn: ms to send one per-node share over the network.
    #[arg(long, value_name = "MS")]
    pub net_ms: f64,
    /// Tn': ms to send a node's combined share (approach 3 with 4 boards only).
    #[arg(long, value_name = "MS")]
    pub combined_net_ms: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `shmemplus model kernel`.
#[derive(Debug, Clone, Args)]
pub struct KernelArgs {
    /// PL: pipeline latency in cycles.
    #[arg(long, value_name = "CYCLES")]
    pub pipeline_latency: f64,
    /// F: clock in Hz (e.g. 100e6).
    #[arg(long, value_name = "HZ")]
    pub clock_hz: f64,
    /// N: elements processed.
    #[arg(long, value_name = "N")]
    pub elements: u64,
    /// K: operations per element.
    #[arg(long, value_name = "K")]
    pub ops_per_element: f64,
    /// R: operations completed per cycle (parallel kernels x operations per kernel).
    #[arg(long, value_name = "R")]
    pub ops_per_cycle: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A size argument (any `shmemplus::config::parse_size` syntax) as bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    shmemplus::config::parse_size(text).map(|n| n as u64)
}

/// `shmemplus model`: computes and prints (text or JSON). Errors are for the user, to
/// be printed as `shmemplus: {error}` with exit code 2.
pub fn run(args: &ModelArgs) -> Result<(), String> {
    let report = compute(args)?;
    if wants_json(args) {
        println!("{}", report.json);
    } else {
        print!("{}", report.text);
    }
    Ok(())
}

/// What `shmemplus model` prints: the JSON object and the human text.
#[derive(Debug, Clone)]
pub struct Report {
    /// The `--json` output.
    pub json: Value,
    /// The text output (aligned lines, ending in a newline).
    pub text: String,
}

fn wants_json(args: &ModelArgs) -> bool {
    match &args.command {
        ModelCommand::Pipeline(a) => a.steps.json,
        ModelCommand::BestPacket(a) => a.steps.json,
        ModelCommand::Gather(a) => a.json,
        ModelCommand::Kernel(a) => a.json,
    }
}

/// Runs the model for `args` without printing.
pub fn compute(args: &ModelArgs) -> Result<Report, String> {
    match &args.command {
        ModelCommand::Pipeline(a) => pipeline(a),
        ModelCommand::BestPacket(a) => best_packet(a),
        ModelCommand::Gather(a) => gather(a),
        ModelCommand::Kernel(a) => kernel(a),
    }
}

/// The step source resolved: fixed step times or a profile's route costs.
enum Steps {
    Fixed(Vec<f64>),
    Profile {
        name: String,
        costs: [Option<Cost>; 3],
    },
}

impl Steps {
    fn resolve(src: &StepSource) -> Result<(Steps, Stages), String> {
        if let Some(path) = &src.tuning {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--tuning {}: {e}", path.display()))?;
            let t: shmemplus::tune::Tuning = serde_json::from_str(&text)
                .map_err(|e| format!("--tuning {}: not a tuning result: {e}", path.display()))?;
            let steps = Steps::Profile {
                name: format!("the tuning of {}", t.key),
                costs: [t.cost("fpga_read"), t.cost("net"), t.cost("fpga_write")],
            };
            let stages = if src.stages == Some(2) {
                Stages::Two
            } else {
                Stages::Three
            };
            return Ok((steps, stages));
        }
        let steps = match (&src.step_ms, &src.profile) {
            (Some(ms), None) => {
                if let Some(bad) = ms.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
                    return Err(format!(
                        "--step-ms: step times must be finite and non-negative, got {bad}"
                    ));
                }
                Steps::Fixed(ms.iter().map(|t| t * 1e-3).collect())
            }
            (None, Some(name)) => {
                let p = Profile::load(name).map_err(|e| format!("--profile: {e}"))?;
                if p.fpga_read.is_none() && p.net.is_none() && p.fpga_write.is_none() {
                    return Err(format!(
                        "profile {} models no cost on the {ROUTE} route (fpga_read, net and \
                         fpga_write are all free): there is no time to predict",
                        p.name
                    ));
                }
                Steps::Profile {
                    name: p.name,
                    costs: [p.fpga_read, p.net, p.fpga_write],
                }
            }
            _ => return Err("give either --step-ms or --profile".into()),
        };
        let stages = match (src.stages, &steps) {
            (Some(2), _) | (None, Steps::Fixed(_)) => Stages::Two,
            _ => Stages::Three,
        };
        if let (Stages::Two, Steps::Fixed(t)) = (stages, &steps) {
            if t.len() != 3 {
                return Err(format!(
                    "--step-ms: the 2-stage form (4-15) needs exactly 3 step times \
                     (t1,t2,t3), got {}",
                    t.len()
                ));
            }
        }
        Ok((steps, stages))
    }

    /// Step times in seconds for one packet of `bytes` (free hops cost 0).
    fn at(&self, bytes: u64) -> Vec<f64> {
        match self {
            Steps::Fixed(t) => t.clone(),
            Steps::Profile { costs, .. } => costs
                .iter()
                .map(|c| c.as_ref().map_or(0.0, |c| c.time(bytes)))
                .collect(),
        }
    }

    fn route(&self) -> Option<&'static str> {
        match self {
            Steps::Fixed(_) => None,
            Steps::Profile { .. } => Some(ROUTE),
        }
    }

    fn describe(&self) -> String {
        match self {
            Steps::Fixed(_) => "given step times".into(),
            Steps::Profile { name, .. } => {
                format!("{ROUTE} (fpga_read, net, fpga_write of profile {name})")
            }
        }
    }
}

fn formula(stages: Stages) -> &'static str {
    match stages {
        Stages::Two => "T = (t1+t2) + (N-1)*max(t1+t2, t3) + t3",
        Stages::Three => "T = sum(t) + (N-1)*max(t)",
    }
}

fn mbps(e: &Estimate) -> f64 {
    e.bandwidth_bps / 1e6
}

fn ms_list(steps_s: &[f64]) -> String {
    steps_s
        .iter()
        .map(|t| format!("{:.3}", t * 1e3))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_size(size: u64) -> Result<(), String> {
    if size == 0 {
        Err("--size must be positive: there is nothing to transfer".into())
    } else {
        Ok(())
    }
}

fn check_time(e: &Estimate) -> Result<(), String> {
    if e.time_s > 0.0 {
        Ok(())
    } else {
        Err(
            "every step is free (0 ms): the modeled time is 0 and the bandwidth \
             unbounded; give non-zero step times"
                .into(),
        )
    }
}

#[derive(Serialize)]
struct PipelineJson {
    packets: u64,
    time_ms: f64,
    bandwidth_mbps: f64,
    stages: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    route: Option<&'static str>,
}

fn pipeline(a: &PipelineArgs) -> Result<Report, String> {
    check_size(a.size)?;
    let (steps, stages) = Steps::resolve(&a.steps)?;
    if a.packet == 0 && matches!(steps, Steps::Fixed(_)) {
        return Err(
            "--packet 0 (no packetization) needs --profile: --step-ms gives the \
                    times of one packet, so for one packet write --packet equal to --size"
                .into(),
        );
    }
    let bytes = model::packet_bytes(a.size, a.packet);
    let t = steps.at(bytes);
    let e = model::pipeline(a.size, a.packet, &t, stages).map_err(|e| e.to_string())?;
    check_time(&e)?;
    let json = serde_json::to_value(PipelineJson {
        packets: e.packets,
        time_ms: e.time_s * 1e3,
        bandwidth_mbps: mbps(&e),
        stages: stages.count(),
        route: steps.route(),
    })
    .map_err(|e| e.to_string())?;
    let packet = if a.packet == 0 || a.packet >= a.size {
        format!("none (one packet of {})", human_bytes(a.size))
    } else {
        format!("{} x {} packets", human_bytes(a.packet), e.packets)
    };
    let text = format!(
        "route      {}\n\
         size       {} ({} B)\n\
         packet     {packet}\n\
         steps      {} ms (t1, t2, t3 for {} B)\n\
         form       {stages}: {}\n\
         packets    {}\n\
         time       {:.3} ms\n\
         bandwidth  {:.1} MB/s\n",
        steps.describe(),
        human_bytes(a.size),
        a.size,
        ms_list(&t),
        bytes,
        formula(stages),
        e.packets,
        e.time_s * 1e3,
        mbps(&e),
    );
    Ok(Report { json, text })
}

#[derive(Serialize)]
struct CandidateJson {
    packet_bytes: u64,
    packets: u64,
    time_ms: f64,
    bandwidth_mbps: f64,
}

#[derive(Serialize)]
struct BestPacketJson {
    best_packet_bytes: u64,
    candidates: Vec<CandidateJson>,
    stages: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    route: Option<&'static str>,
}

fn best_packet(a: &BestPacketArgs) -> Result<Report, String> {
    check_size(a.size)?;
    let (steps, stages) = Steps::resolve(&a.steps)?;
    let (best, all) = match (&steps, a.step_bytes) {
        (Steps::Fixed(_), None) => {
            return Err(
                "best-packet with --step-ms needs --step-bytes B, the packet size \
                        the step times were measured at (each step is then scaled as \
                        t * P / B); or use --profile"
                    .into(),
            )
        }
        (Steps::Fixed(_), Some(0)) => return Err("--step-bytes must be positive".into()),
        (Steps::Fixed(t), Some(b)) => model::best_packet_with(a.size, stages, |bytes| {
            t.iter().map(|t| t * bytes as f64 / b as f64).collect()
        }),
        (Steps::Profile { .. }, _) => model::best_packet_with(a.size, stages, |b| steps.at(b)),
    }
    .map_err(|e| e.to_string())?;
    let best_e = all
        .iter()
        .find(|(p, _)| *p == best)
        .map(|(_, e)| *e)
        .ok_or("no candidate packet size")?;
    check_time(&best_e)?;
    let json = serde_json::to_value(BestPacketJson {
        best_packet_bytes: best,
        candidates: all
            .iter()
            .map(|(p, e)| CandidateJson {
                packet_bytes: *p,
                packets: e.packets,
                time_ms: e.time_s * 1e3,
                bandwidth_mbps: mbps(e),
            })
            .collect(),
        stages: stages.count(),
        route: steps.route(),
    })
    .map_err(|e| e.to_string())?;
    let source = match (&steps, a.step_bytes) {
        (Steps::Fixed(t), Some(b)) => format!(
            "steps {} ms at {} B, scaled linearly with the packet size",
            ms_list(t),
            b
        ),
        _ => steps.describe(),
    };
    let name = |p: u64| {
        if p == 0 {
            "none".to_string()
        } else {
            human_bytes(p)
        }
    };
    let mut text = format!(
        "route      {source}\n\
         size       {} ({} B)\n\
         form       {stages}: {}\n\
         \n  {:>8} {:>8} {:>12} {:>10}\n",
        human_bytes(a.size),
        a.size,
        formula(stages),
        "packet",
        "packets",
        "time (ms)",
        "MB/s"
    );
    for (p, e) in &all {
        text += &format!(
            "{} {:>8} {:>8} {:>12.3} {:>10.1}\n",
            if *p == best { "*" } else { " " },
            name(*p),
            e.packets,
            e.time_s * 1e3,
            mbps(e)
        );
    }
    text += &format!(
        "best packet: {} ({} packets): {:.3} ms, {:.1} MB/s\n",
        if best == 0 {
            "none (no packetization)".to_string()
        } else {
            human_bytes(best)
        },
        best_e.packets,
        best_e.time_s * 1e3,
        mbps(&best_e)
    );
    Ok(Report { json, text })
}

#[derive(Serialize)]
struct GatherJson {
    time_ms: f64,
    approach: u8,
    nodes: u32,
    boards_per_node: u32,
    read_ms: f64,
    net_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    combined_net_ms: Option<f64>,
}

fn gather(a: &GatherArgs) -> Result<Report, String> {
    let approach = GatherApproach::from_number(a.approach)
        .ok_or_else(|| format!("--approach must be 1, 2 or 3, got {}", a.approach))?;
    if a.nodes == 0 {
        return Err("--nodes must be at least 1".into());
    }
    if a.boards_per_node != 1 && a.boards_per_node != 4 {
        return Err(format!(
            "--boards-per-node must be 1 or 4 (the model's cases), got {}",
            a.boards_per_node
        ));
    }
    let uses_combined = approach == GatherApproach::CollectThenPut && a.boards_per_node == 4;
    if uses_combined && a.combined_net_ms.is_none() {
        return Err(
            "approach 3 with 4 boards per node needs --combined-net-ms, Tn': the \
                    net time of a node's combined share (4-8)"
                .into(),
        );
    }
    if !uses_combined && a.combined_net_ms.is_some() {
        return Err("--combined-net-ms is used only by approach 3 with 4 boards per node".into());
    }
    let t = model::gather(
        approach,
        a.nodes,
        a.boards_per_node,
        a.read_ms * 1e-3,
        a.net_ms * 1e-3,
        a.combined_net_ms.map(|t| t * 1e-3),
    )
    .map_err(|e| e.to_string())?;
    let eq = approach.formula(a.boards_per_node);
    let json = serde_json::to_value(GatherJson {
        time_ms: t * 1e3,
        approach: a.approach,
        nodes: a.nodes,
        boards_per_node: a.boards_per_node,
        read_ms: a.read_ms,
        net_ms: a.net_ms,
        combined_net_ms: a.combined_net_ms,
    })
    .map_err(|e| e.to_string())?;
    let mut inputs = format!("Tr {} ms, Tn {} ms", a.read_ms, a.net_ms);
    if let Some(t2) = a.combined_net_ms {
        inputs += &format!(", Tn' {t2} ms");
    }
    let text = format!(
        "approach   {} ({})\n\
         nodes      {} x {} board(s) per node\n\
         inputs     {inputs}\n\
         formula    T = {eq}\n\
         time       {:.3} ms\n",
        a.approach,
        match approach {
            GatherApproach::OneGetEach => "root gets from every board in turn",
            GatherApproach::PutFromEachBoard => "every board's node puts to the root",
            GatherApproach::CollectThenPut => "each node collects its boards, then one put",
        },
        a.nodes,
        a.boards_per_node,
        t * 1e3,
    );
    Ok(Report { json, text })
}

fn kernel(a: &KernelArgs) -> Result<Report, String> {
    let t = model::kernel_time(
        a.pipeline_latency,
        a.clock_hz,
        a.elements,
        a.ops_per_element,
        a.ops_per_cycle,
    )
    .map_err(|e| e.to_string())?;
    let json = serde_json::json!({ "time_ms": t * 1e3 });
    let text = format!(
        "formula    t = PL/F + N*K/(F*R)  (RATSS)\n\
         inputs     PL {} cycles, F {} Hz, N {}, K {}, R {}\n\
         time       {:.6} ms\n",
        a.pipeline_latency,
        a.clock_hz,
        a.elements,
        a.ops_per_element,
        a.ops_per_cycle,
        t * 1e3
    );
    Ok(Report { json, text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    fn parse(line: &str) -> ModelArgs {
        let argv = std::iter::once("model").chain(line.split_whitespace());
        Cli::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .model
    }

    fn json(line: &str) -> Value {
        compute(&parse(line))
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .json
    }

    fn err(line: &str) -> String {
        compute(&parse(line)).expect_err(line)
    }

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v
            .as_object()
            .expect("an object")
            .keys()
            .map(|k| k.as_str())
            .collect();
        k.sort();
        k
    }

    fn num(v: &Value, key: &str) -> f64 {
        v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
    }

    #[test]
    fn pipeline_worked_example() {
        let v = json("pipeline --size 16MiB --packet 2MiB --step-ms 3,1.45,8 --json");
        assert_eq!(keys(&v), ["bandwidth_mbps", "packets", "stages", "time_ms"]);
        assert_eq!(v["packets"], 8);
        assert_eq!(v["stages"], 2);
        assert!((num(&v, "time_ms") - 68.45).abs() < 1e-9, "{v}");
        assert!((num(&v, "bandwidth_mbps") - 245.1).abs() < 0.05, "{v}");
        // The k-stage form gives the same here (12.45 + 7 * 8).
        let v = json("pipeline --size 16M --packet 2M --step-ms 3,1.45,8 --stages 3");
        assert_eq!(v["stages"], 3);
        assert!((num(&v, "time_ms") - 68.45).abs() < 1e-9, "{v}");
    }

    #[test]
    fn pipeline_text() {
        let r = compute(&parse(
            "pipeline --size 16MiB --packet 2MiB --step-ms 3,1.45,8",
        ))
        .unwrap();
        assert!(r.text.contains("68.450 ms"), "{}", r.text);
        assert!(r.text.contains("245.1 MB/s"), "{}", r.text);
        assert!(r.text.contains("2M x 8 packets"), "{}", r.text);
    }

    #[test]
    fn pipeline_one_packet_when_p_covers_d() {
        let v = json("pipeline --size 1MiB --packet 4MiB --step-ms 1,2,3");
        assert_eq!(v["packets"], 1);
        assert!((num(&v, "time_ms") - 6.0).abs() < 1e-9);
    }

    #[test]
    fn steps_from_a_tuning_result() {
        let points = |scale: f64| -> Vec<(u64, f64)> {
            [
                (4096u64, 1e-4),
                (65536, 2e-4),
                (524288, 1e-3),
                (2 << 20, 4e-3),
                (8 << 20, 16e-3),
            ]
            .iter()
            .map(|&(b, t)| (b, t * scale))
            .collect()
        };
        let hops = vec![
            ("fpga_read".to_string(), points(1.0)),
            ("net".to_string(), points(0.5)),
            ("fpga_write".to_string(), points(2.0)),
        ];
        let t = shmemplus::tune::Tuning::from_measurements("test".into(), hops, 0.0);
        let path = std::env::temp_dir().join(format!(
            "shmemplus-model-tuning-{}.json",
            std::process::id()
        ));
        std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
        let v = json(&format!(
            "best-packet --size 32MiB --tuning {} --json",
            path.display()
        ));
        let best = num(&v, "best_packet_bytes") as u64;
        assert!(best == 0 || best.is_power_of_two(), "{v}");
        assert_eq!(v["route"], "fpga-fpga-remote");
        std::fs::write(&path, "not json").unwrap();
        let e = err(&format!(
            "pipeline --size 1MiB --packet 64KiB --tuning {}",
            path.display()
        ));
        assert!(e.contains("not a tuning result"), "{e}");
        let _ = std::fs::remove_file(&path);
        let e = err("pipeline --size 1MiB --packet 64KiB --tuning /nonexistent/tuning.json");
        assert!(e.contains("/nonexistent/tuning.json"), "{e}");
    }

    #[test]
    fn pipeline_with_profile() {
        let v = json("pipeline --size 16MiB --packet 2MiB --profile novo-g --json");
        assert_eq!(
            keys(&v),
            ["bandwidth_mbps", "packets", "route", "stages", "time_ms"]
        );
        assert_eq!(v["route"], ROUTE);
        assert_eq!(v["stages"], 3);
        assert_eq!(v["packets"], 8);
        // novo-g at 2 MiB: 3 ms + about 1.44 ms + 8 ms; the k-stage form gives about
        // 12.44 + 7 * 8 = 68.44 ms.
        let p = Profile::load("novo-g").unwrap();
        let t: Vec<f64> = [&p.fpga_read, &p.net, &p.fpga_write]
            .iter()
            .map(|c| c.as_ref().unwrap().time(2 << 20))
            .collect();
        let want = (t.iter().sum::<f64>() + 7.0 * 8e-3) * 1e3;
        assert!((num(&v, "time_ms") - want).abs() < 1e-9, "{v} vs {want}");
        assert!((num(&v, "time_ms") - 68.44).abs() < 0.05, "{v}");
        // --stages 2 on a profile is the 4-15 form.
        let v = json("pipeline --size 16MiB --packet 2MiB --profile novo-g --stages 2");
        assert_eq!(v["stages"], 2);
        // --packet 0 with a profile: no packetization.
        let v = json("pipeline --size 16MiB --packet 0 --profile novo-g");
        assert_eq!(v["packets"], 1);
    }

    #[test]
    fn gather_json() {
        let v = json(
            "gather --approach 1 --nodes 16 --boards-per-node 1 --read-ms 2 --net-ms 0.5 --json",
        );
        assert_eq!(
            keys(&v),
            [
                "approach",
                "boards_per_node",
                "net_ms",
                "nodes",
                "read_ms",
                "time_ms"
            ]
        );
        assert!((num(&v, "time_ms") - 39.5).abs() < 1e-9, "{v}");
        let cases = [
            ("1", "4", "", 158.0),
            ("2", "1", "", 9.5),
            ("2", "4", "", 38.0),
            ("3", "1", "", 9.5),
            ("3", "4", "--combined-net-ms 1.5", 30.5),
        ];
        for (a, b, extra, want) in cases {
            let v = json(&format!(
                "gather --approach {a} --nodes 16 --boards-per-node {b} --read-ms 2 --net-ms 0.5 {extra}"
            ));
            assert!((num(&v, "time_ms") - want).abs() < 1e-9, "{a} x{b}: {v}");
        }
        let v = json("gather --approach 3 --nodes 16 --boards-per-node 4 --read-ms 2 --net-ms 0.5 --combined-net-ms 1.5");
        assert_eq!(v["combined_net_ms"], 1.5);
    }

    #[test]
    fn kernel_json() {
        let v = json("kernel --pipeline-latency 100 --clock-hz 100e6 --elements 1000000 --ops-per-element 2 --ops-per-cycle 4 --json");
        assert_eq!(keys(&v), ["time_ms"]);
        assert!((num(&v, "time_ms") - 5.001).abs() < 1e-9, "{v}");
    }

    #[test]
    fn best_packet_novo_g() {
        let v = json("best-packet --size 16MiB --profile novo-g --json");
        assert_eq!(
            keys(&v),
            ["best_packet_bytes", "candidates", "route", "stages"]
        );
        let best = v["best_packet_bytes"].as_u64().unwrap();
        assert!(best == 0 || best.is_power_of_two(), "{best}");
        let cands = v["candidates"].as_array().unwrap();
        assert_eq!(cands.len(), model::candidate_packets(16 << 20).len()); // 4K .. 8M, none
        let mut min = f64::INFINITY;
        let mut best_time = None;
        for c in cands {
            assert_eq!(
                keys(c),
                ["bandwidth_mbps", "packet_bytes", "packets", "time_ms"]
            );
            let t = num(c, "time_ms");
            min = min.min(t);
            if c["packet_bytes"].as_u64() == Some(best) {
                best_time = Some(t);
            }
            let bw = 16.0 * (1 << 20) as f64 / (t * 1e-3) / 1e6;
            assert!((num(c, "bandwidth_mbps") - bw).abs() < 1e-6);
        }
        // The model's search: the fastest, unless more packets win by less than the margin.
        let best_time = best_time.expect("the best is a candidate");
        assert!(
            best_time <= min / (1.0 - model::PACKET_MARGIN),
            "{best_time} vs {min}"
        );
        let last = cands.last().unwrap();
        assert_eq!(last["packet_bytes"], 0);
        assert_eq!(last["packets"], 1);
    }

    #[test]
    fn best_packet_text_marks_the_best() {
        let r = compute(&parse("best-packet --size 16MiB --profile novo-g")).unwrap();
        assert!(r.text.contains("best packet: "), "{}", r.text);
        assert_eq!(r.text.lines().filter(|l| l.starts_with('*')).count(), 1);
    }

    #[test]
    fn best_packet_with_step_bytes_scales_linearly() {
        // Linear steps with no latency: smaller packets overlap more; the smallest
        // candidate (the model's minimum, 4 KiB) wins. At P = 4K (t = 1, 2, 3 ms * 4K / 1M),
        // 256 packets, k-stage: sum + 255 * max.
        let v = json("best-packet --size 1MiB --step-ms 1,2,3 --step-bytes 1MiB --stages 3");
        assert_eq!(v["best_packet_bytes"], model::MIN_PACKET);
        let c0 = &v["candidates"][0];
        assert_eq!(c0["packets"], 256);
        let s = 4096.0 / (1 << 20) as f64;
        let want = (6.0 + 255.0 * 3.0) * s;
        assert!((num(c0, "time_ms") - want).abs() < 1e-9, "{c0}");
        assert!(v.get("route").is_none());
    }

    #[test]
    fn bad_inputs() {
        let e = err("pipeline --size 0 --packet 2MiB --step-ms 3,1.45,8");
        assert_eq!(e, "--size must be positive: there is nothing to transfer");
        let e = err("pipeline --size 16MiB --packet 0 --step-ms 3,1.45,8");
        assert!(
            e.starts_with("--packet 0 (no packetization) needs --profile"),
            "{e}"
        );
        let e = err("pipeline --size 16MiB --packet 2MiB --step-ms 3,8");
        assert_eq!(
            e,
            "--step-ms: the 2-stage form (4-15) needs exactly 3 step times (t1,t2,t3), got 2"
        );
        let e = err("pipeline --size 16MiB --packet 2MiB --step-ms 3,-1,8");
        assert!(e.contains("non-negative, got -1"), "{e}");
        let e = err("pipeline --size 16MiB --packet 2MiB --profile no-such-profile");
        assert!(e.starts_with("--profile: no-such-profile"), "{e}");
        assert!(e.contains("native, mu, novo-g"), "{e}");
        let e = err("pipeline --size 16MiB --packet 2MiB --profile native");
        assert!(e.contains("models no cost"), "{e}");
        let e = err("pipeline --size 16MiB --packet 2MiB --step-ms 0,0,0");
        assert!(e.contains("every step is free"), "{e}");
        let e = err("gather --approach 3 --nodes 16 --boards-per-node 4 --read-ms 2 --net-ms 0.5");
        assert_eq!(
            e,
            "approach 3 with 4 boards per node needs --combined-net-ms, Tn': the net time \
             of a node's combined share (4-8)"
        );
        let e = err("gather --approach 1 --nodes 16 --boards-per-node 2 --read-ms 2 --net-ms 0.5");
        assert_eq!(
            e,
            "--boards-per-node must be 1 or 4 (the model's cases), got 2"
        );
        let e = err("gather --approach 1 --nodes 0 --boards-per-node 1 --read-ms 2 --net-ms 0.5");
        assert_eq!(e, "--nodes must be at least 1");
        let e = err("gather --approach 2 --nodes 4 --boards-per-node 4 --read-ms 2 --net-ms 0.5 --combined-net-ms 1");
        assert!(e.contains("used only by approach 3 with 4 boards"), "{e}");
        let e = err("gather --approach 2 --nodes 4 --boards-per-node 1 --read-ms=-2 --net-ms 0.5");
        assert_eq!(e, "Tr must be finite and non-negative, got -0.002");
        let e = err("kernel --pipeline-latency 1 --clock-hz 0 --elements 1 --ops-per-element 1 --ops-per-cycle 1");
        assert_eq!(e, "the clock must be finite and positive, got 0");
        let e = err("best-packet --size 16MiB --step-ms 3,1.45,8");
        assert!(
            e.starts_with("best-packet with --step-ms needs --step-bytes B"),
            "{e}"
        );
        let e = err("best-packet --size 16MiB --step-ms 3,1.45,8 --step-bytes 0");
        assert_eq!(e, "--step-bytes must be positive");
        let e = err("best-packet --size 0 --profile novo-g");
        assert!(e.starts_with("--size must be positive"), "{e}");
    }

    #[test]
    fn argument_errors_are_caught_by_clap() {
        let bad = [
            "pipeline --size 16MiB --packet 2MiB",
            "pipeline --size 16MiB --packet 2MiB --step-ms 1,2,3 --profile novo-g",
            "pipeline --size 2X --packet 2MiB --step-ms 1,2,3",
            "pipeline --size 16MiB --packet 2MiB --step-ms 1,2,3 --stages 4",
            "gather --approach 4 --nodes 16 --boards-per-node 1 --read-ms 2 --net-ms 0.5",
            "best-packet --size 16MiB --profile novo-g --step-bytes 1M",
        ];
        for line in bad {
            let argv = std::iter::once("model").chain(line.split_whitespace());
            let e = Cli::try_parse_from(argv).expect_err(line);
            assert_eq!(e.exit_code(), 2, "{line}");
        }
    }
}
