//! `shmemplus scf`: run a task graph under a mapping (`scf run`), and predict, rank and
//! optionally measure every mapping of a graph (`scf explore`). The launching side
//! starts the PEs through [`crate::launcher`]; each PE runs the hidden `scf pe`, which
//! runs the graph with the built-in task kinds (`shmemplus_scf::apps`).
//!
//! Owns the commands' arguments, their jobs and their output (text or JSON). It must
//! not simulate (`shmemplus_scf::predict`) nor run tasks (`shmemplus_scf::run`).

use crate::launcher::{apply_profile, run_job, JobOutcome, JobSpec, OutputMode};
use serde::Serialize;
use shmemplus::config::ClockKind;
use shmemplus_scf::predict::{predict, Costs};
use shmemplus_scf::{JobShape, Mapping, TaskGraph};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `shmemplus scf ...`
#[derive(Debug, clap::Args)]
pub struct ScfArgs {
    #[command(subcommand)]
    command: ScfCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ScfCommand {
    /// Run a task graph under a mapping on the PEs of a job this command launches.
    Run(RunArgs),
    /// Predict every mapping's time with the model, rank them, and with --measure run
    /// each and print predicted beside measured.
    Explore(ExploreArgs),
    /// One PE of an SCF job (started by `run` and `explore`, not by hand).
    #[command(hide = true)]
    Pe(PeArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The task graph (TOML).
    #[arg(value_name = "GRAPH.toml")]
    graph: PathBuf,
    /// The mapping (TOML); without it, every task that may run on either device runs
    /// on its CPU.
    #[arg(long, value_name = "MAP.toml")]
    mapping: Option<PathBuf>,
    /// Cluster profile: native, mu, novo-g or a TOML file (default: SHMEMPLUS_PROFILE,
    /// else native).
    #[arg(long, value_name = "NAME|PATH")]
    profile: Option<String>,
    /// The job clock: wall or virtual (default: SHMEMPLUS_CLOCK, else wall).
    #[arg(long)]
    clock: Option<String>,
    /// PEs to start (default: one more than the highest PE the graph places a task on).
    #[arg(short = 'n', long = "np")]
    n_pes: Option<u32>,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct ExploreArgs {
    /// The task graph (TOML).
    #[arg(value_name = "GRAPH.toml")]
    graph: PathBuf,
    /// Cluster profile: native, mu, novo-g or a TOML file (default: native).
    #[arg(long, value_name = "NAME|PATH", default_value = "native")]
    profile: String,
    /// Also run every mapping and print its measured time.
    #[arg(long)]
    measure: bool,
    /// The clock of measured runs (and of the one run that measures tasks without
    /// cpu_s): virtual (default: deterministic) or wall.
    #[arg(long, default_value = "virtual")]
    clock: String,
    /// PEs to start (default: one more than the highest PE the graph places a task on).
    #[arg(short = 'n', long = "np")]
    n_pes: Option<u32>,
    /// Print a JSON array, one object per mapping, best predicted first.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct PeArgs {
    #[arg(value_name = "GRAPH.toml")]
    graph: PathBuf,
    #[arg(long)]
    mapping: Option<PathBuf>,
    /// Instead of a mapping file: these tasks on boards, the others on CPUs.
    #[arg(long, value_delimiter = ',')]
    on_fpga: Option<Vec<String>>,
    #[arg(long)]
    json: bool,
}

/// Runs `shmemplus scf ...`.
pub fn run(args: &ScfArgs) -> Result<(), String> {
    match &args.command {
        ScfCommand::Run(a) => run_cmd(a),
        ScfCommand::Explore(a) => explore(a),
        ScfCommand::Pe(a) => pe(a),
    }
}

/// Writes `text` to standard output; a reader that went away (`| head`) is not an
/// error.
fn emit(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

fn load_graph(path: &Path) -> Result<TaskGraph, String> {
    TaskGraph::load(path).map_err(|e| e.to_string())
}

/// The PEs a graph needs: one more than the highest PE of any placement.
fn pes_needed(graph: &TaskGraph) -> u32 {
    graph
        .tasks
        .iter()
        .flat_map(|t| [t.cpu, t.fpga])
        .flatten()
        .map(|p| p.pe.saturating_add(1))
        .max()
        .unwrap_or(1)
}

/// What one SCF job runs.
struct ScfJob<'a> {
    graph: &'a Path,
    /// The CPU heap its channels need (`shmemplus_scf::run::cpu_heap_bytes`).
    heap: Option<u64>,
    mapping: MappingArg<'a>,
    profile: Option<&'a str>,
    clock: Option<&'a str>,
    n_pes: u32,
    json: bool,
    output: OutputMode,
}

enum MappingArg<'a> {
    File(&'a Path),
    OnFpga(Vec<String>),
}

/// Starts the job; returns its report or the launcher's message.
fn launch(job: &ScfJob<'_>) -> Result<crate::launcher::JobReport, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let abs = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut args: Vec<OsString> = vec!["scf".into(), "pe".into(), abs(job.graph)?.into()];
    match &job.mapping {
        MappingArg::File(m) => {
            args.push("--mapping".into());
            args.push(abs(m)?.into());
        }
        MappingArg::OnFpga(tasks) => {
            args.push(format!("--on-fpga={}", tasks.join(",")).into());
        }
    }
    if job.json {
        args.push("--json".into());
    }
    let mut spec = JobSpec::new(job.n_pes, exe);
    spec.args = args;
    let profile = job.profile.map(str::to_string).or_else(|| {
        std::env::var("SHMEMPLUS_PROFILE")
            .ok()
            .filter(|p| !p.is_empty())
    });
    if let Some(p) = &profile {
        apply_profile(&mut spec, p, Some(job.n_pes)).map_err(|e| e.to_string())?;
    }
    if let Some(clock) = job.clock {
        let kind = ClockKind::parse(clock).map_err(|why| format!("bad --clock: {why}"))?;
        spec.env
            .push(("SHMEMPLUS_CLOCK".into(), kind.name().into()));
    }
    // A larger heap than the default when the channels need it, unless the user set one.
    if std::env::var_os("SHMEM_SYMMETRIC_SIZE").is_none() {
        let default = shmemplus::config::DEFAULT_SYMMETRIC_SIZE as u64;
        if let Some(h) = job.heap.filter(|&h| h > default) {
            spec.env
                .push(("SHMEM_SYMMETRIC_SIZE".into(), h.to_string().into()));
        }
    }
    spec.output = job.output;
    spec.handle_signals = true;
    spec.timeout = Some(Duration::from_secs(900));
    spec.pe_config().map_err(|e| e.to_string())?;
    let report = run_job(&spec).map_err(|e| e.to_string())?;
    match report.outcome {
        JobOutcome::Success => Ok(report),
        _ => Err(format!(
            "SCF job failed: {}{}",
            report.message(),
            report
                .stderr
                .iter()
                .filter(|s| !s.trim().is_empty())
                .map(|s| format!("\n{}", s.trim_end()))
                .collect::<String>()
        )),
    }
}

fn run_cmd(a: &RunArgs) -> Result<(), String> {
    let graph = load_graph(&a.graph)?;
    let n_pes = a.n_pes.unwrap_or_else(|| pes_needed(&graph));
    // Checked here once, before any PE starts (the PEs check again, against the
    // boards they really have): the mapping's tasks and PEs, and the kinds.
    let mapping = match &a.mapping {
        Some(m) => Mapping::load(m).map_err(|e| e.to_string())?,
        None => Mapping::with_fpga_tasks(&graph, &[]),
    };
    let loose = JobShape {
        n_pes,
        pes_per_node: 1,
        boards_per_node: u32::MAX,
    };
    let places = mapping.resolve(&graph, &loose).map_err(|e| e.to_string())?;
    shmemplus_scf::run::check_kinds(&graph, &places, &shmemplus_scf::apps::registry())
        .map_err(|e| e.to_string())?;
    let job = ScfJob {
        graph: &a.graph,
        heap: shmemplus_scf::run::cpu_heap_bytes(&graph),
        mapping: match &a.mapping {
            Some(m) => MappingArg::File(m),
            None => MappingArg::OnFpga(Vec::new()),
        },
        profile: a.profile.as_deref(),
        clock: a.clock.as_deref(),
        n_pes,
        json: a.json,
        output: OutputMode::Inherit,
    };
    launch(&job).map(|_| ())
}

/// The PE side: runs the graph and, on PE 0, prints the report.
fn pe(a: &PeArgs) -> Result<(), String> {
    let graph = load_graph(&a.graph)?;
    let mapping = match (&a.mapping, &a.on_fpga) {
        (Some(m), _) => Mapping::load(m).map_err(|e| e.to_string())?,
        (None, names) => {
            let names = names.clone().unwrap_or_default();
            let mut on = Vec::new();
            for n in names.iter().filter(|n| !n.is_empty()) {
                on.push(
                    graph
                        .task_index(n)
                        .ok_or_else(|| format!("--on-fpga: no task {n:?} in the graph"))?,
                );
            }
            Mapping::with_fpga_tasks(&graph, &on)
        }
    };
    let shmem = shmemplus::init().map_err(|e| e.to_string())?;
    let report = shmemplus_scf::run(&shmem, &graph, &mapping, &shmemplus_scf::apps::registry())
        .map_err(|e| format!("PE {}: {e}", shmem.my_pe()))?;
    if let Some(r) = report {
        if a.json {
            let line = serde_json::to_string(&r).map_err(|e| format!("report: {e}"))?;
            emit(&format!("{line}\n"))?;
        } else {
            emit(&describe_run(&r))?;
        }
    }
    shmem.finalize().map_err(|e| e.to_string())
}

fn describe_run(r: &shmemplus_scf::RunReport) -> String {
    let mut s = format!(
        "scf: {} mapped by {} on {} ({} clock): {} iterations in {:.3} ms, verified: {}\n",
        r.graph,
        r.mapping,
        r.profile,
        r.clock,
        r.iterations,
        r.total_s * 1e3,
        match r.verified {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "not checked",
        }
    );
    s.push_str("  task        device  where            compute ms   comm ms  summary\n");
    for t in &r.tasks {
        s.push_str(&format!(
            "  {:<11} {:<7} {:<16} {:>10.3} {:>9.3}  {}\n",
            t.name,
            t.device.name(),
            t.placement.to_string(),
            t.compute_s * 1e3,
            t.comm_s * 1e3,
            t.summary
        ));
    }
    s.push_str("  channel               bytes  route                   modeled us/msg\n");
    for c in &r.channels {
        s.push_str(&format!(
            "  {:<21} {:>6}  {:<23} {:>10.2}\n",
            format!("{} -> {}", c.from, c.to),
            c.bytes,
            c.route,
            c.modeled_s * 1e6
        ));
    }
    s
}

/// One row of `scf explore` (the JSON contract: `mapping`, `fpga_tasks`,
/// `predicted_s`, and with --measure `measured_s`).
#[derive(Debug, Serialize)]
struct Explored {
    mapping: String,
    fpga_tasks: usize,
    fpga_task_names: Vec<String>,
    predicted_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verified: Option<bool>,
}

/// The report a job's PE 0 printed as JSON.
fn parse_report(report: &crate::launcher::JobReport) -> Result<serde_json::Value, String> {
    let out = report.stdout.first().map(String::as_str).unwrap_or("");
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("PE 0 printed no report:\n{out}"))?;
    serde_json::from_str(line).map_err(|e| format!("PE 0's report: {e}"))
}

fn explore(a: &ExploreArgs) -> Result<(), String> {
    let graph = load_graph(&a.graph)?;
    let profile = shmemplus::netsim::Profile::load(&a.profile).map_err(|e| e.to_string())?;
    let n_pes = a.n_pes.unwrap_or_else(|| pes_needed(&graph));
    let t = &profile.topology;
    let job = JobShape {
        n_pes,
        pes_per_node: t.pes_per_node,
        boards_per_node: t.boards_per_node,
    };
    let registry = shmemplus_scf::apps::registry();
    let mappings = Mapping::enumerate(&graph).map_err(|e| e.to_string())?;
    let run = |on_fpga: Vec<String>| -> Result<serde_json::Value, String> {
        let job = ScfJob {
            graph: &a.graph,
            heap: shmemplus_scf::run::cpu_heap_bytes(&graph),
            mapping: MappingArg::OnFpga(on_fpga),
            profile: Some(&a.profile),
            clock: Some(&a.clock),
            n_pes,
            json: true,
            output: OutputMode::Capture,
        };
        parse_report(&launch(&job)?)
    };
    // Tasks without cpu_s are measured once, all on CPUs.
    let measured: Option<Vec<f64>> = if graph
        .tasks
        .iter()
        .any(|t| t.cpu.is_some() && t.cpu_s.is_none())
    {
        let r = run(Vec::new())?;
        let iters = graph.iterations as f64;
        let per_task = graph
            .tasks
            .iter()
            .map(|t| {
                r["tasks"]
                    .as_array()
                    .and_then(|ts| ts.iter().find(|x| x["name"] == t.name.as_str()))
                    .and_then(|x| x["compute_s"].as_f64())
                    .map(|s| s / iters)
                    .unwrap_or(0.0)
            })
            .collect();
        Some(per_task)
    } else {
        None
    };
    let costs = Costs::of(&graph, &registry, measured.as_deref()).map_err(|e| e.to_string())?;
    let mut rows = Vec::with_capacity(mappings.len());
    for m in &mappings {
        let places = m.resolve(&graph, &job).map_err(|e| e.to_string())?;
        shmemplus_scf::run::check_kinds(&graph, &places, &registry).map_err(|e| e.to_string())?;
        let p = predict(&graph, &places, &job, &profile, &costs);
        let names: Vec<String> = m
            .places
            .iter()
            .filter(|p| p.device == shmemplus_scf::Device::Fpga)
            .map(|p| p.task.clone())
            .collect();
        let fpga_tasks = places.iter().filter(|p| p.board.is_some()).count();
        let (measured_s, verified) = if a.measure {
            let r = run(names.clone())?;
            (r["total_s"].as_f64(), r["verified"].as_bool())
        } else {
            (None, None)
        };
        if a.measure && verified == Some(false) {
            return Err(format!("mapping {}: the run's results were wrong", m.name));
        }
        rows.push(Explored {
            mapping: m.name.clone(),
            fpga_tasks,
            fpga_task_names: names,
            predicted_s: p.total_s,
            measured_s,
            verified,
        });
    }
    rows.sort_by(|x, y| x.predicted_s.total_cmp(&y.predicted_s));
    if a.json {
        let json = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        return emit(&format!("{json}\n"));
    }
    emit(&describe_explore(&graph, &profile, &rows, a))
}

fn describe_explore(
    graph: &TaskGraph,
    profile: &shmemplus::netsim::Profile,
    rows: &[Explored],
    a: &ExploreArgs,
) -> String {
    let all_cpu = rows
        .iter()
        .find(|r| r.fpga_tasks == 0 || r.mapping == "all-cpu");
    let base_pred = all_cpu.map(|r| r.predicted_s);
    let base_meas = all_cpu.and_then(|r| r.measured_s);
    let mut s = format!(
        "scf explore: {} on {} ({} mappings, {} iterations{}), best predicted first\n",
        graph.name,
        profile.name,
        rows.len(),
        graph.iterations,
        if a.measure {
            format!(", measured on the {} clock", a.clock)
        } else {
            String::new()
        }
    );
    s.push_str("  rank  mapping                  boards  predicted ms  speedup");
    if a.measure {
        s.push_str("  measured ms  speedup  rank measured");
    }
    s.push('\n');
    let mut by_measured: Vec<usize> = (0..rows.len()).collect();
    by_measured.sort_by(|&x, &y| {
        rows[x]
            .measured_s
            .unwrap_or(f64::INFINITY)
            .total_cmp(&rows[y].measured_s.unwrap_or(f64::INFINITY))
    });
    for (i, r) in rows.iter().enumerate() {
        let sp = |base: Option<f64>, v: Option<f64>| match (base, v) {
            (Some(b), Some(v)) if v > 0.0 => format!("{:>6.2}x", b / v),
            _ => "      -".to_string(),
        };
        s.push_str(&format!(
            "  {:>4}  {:<24} {:>6}  {:>12.3}  {}",
            i + 1,
            r.mapping,
            r.fpga_tasks,
            r.predicted_s * 1e3,
            sp(base_pred, Some(r.predicted_s))
        ));
        if a.measure {
            let rank = by_measured
                .iter()
                .position(|&k| k == i)
                .map_or(0, |p| p + 1);
            s.push_str(&format!(
                "  {:>11.3}  {}  {:>13}",
                r.measured_s.unwrap_or(f64::NAN) * 1e3,
                sp(base_meas, r.measured_s),
                rank
            ));
        }
        s.push('\n');
    }
    for rf in graph
        .references
        .iter()
        .filter(|r| r.profile == profile.name)
    {
        let ours = rows.first();
        s.push_str(&format!(
            "  reference ({}): best has {} task(s) on boards, {:.1}x over all-cpu; here: {} ({} on boards), {} predicted{}\n",
            rf.source,
            rf.fpga_tasks,
            rf.speedup,
            ours.map_or("-", |r| r.mapping.as_str()),
            ours.map_or(0, |r| r.fpga_tasks),
            match (base_pred, ours) {
                (Some(b), Some(r)) => format!("{:.1}x", b / r.predicted_s),
                _ => "-".into(),
            },
            match (base_meas, ours.and_then(|r| r.measured_s)) {
                (Some(b), Some(m)) => format!(", {:.1}x measured", b / m),
                _ => String::new(),
            }
        ));
    }
    s
}
