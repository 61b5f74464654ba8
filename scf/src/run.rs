//! Running a mapped graph on the PEs of a shmemplus job: [`run`] (collective).
//!
//! Owns the order of a run: check the mapping and the kinds on every PE alike, load
//! the application's bitfile, allocate channels and board buffers, run every
//! iteration of this PE's tasks in the graph's topological order (the order the
//! channel protocol's no-deadlock argument needs), then collect each task's outcome on
//! PE 0. It must not define the protocol (`channel`) nor what tasks do (`registry`).

use crate::channel::Channels;
use crate::error::{Result, ScfError};
use crate::graph::{Device, Placement, TaskGraph};
use crate::mapping::{JobShape, Mapping};
use crate::registry::{BoardArgs, CpuTask, Registry};
use crate::route::Route;
use crate::task::TaskCtx;
use serde::Serialize;
use shmemplus::fpga_mock::Bitfile;
use shmemplus::{Place, Shmem, SymVec};
use std::time::Duration;

/// Bytes of each task's summary line carried to PE 0 (longer ones are cut).
const SUMMARY_BYTES: usize = 160;
/// Words per task in the outcome table: verified code, compute ns, communication ns.
const OUTCOME_WORDS: usize = 3;

/// What one task did in a run.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// `cpu` or `fpga`.
    pub device: Device,
    /// Where it ran.
    pub placement: Placement,
    /// Compute time over the run (modeled for `cpu_s` tasks and kernels), seconds.
    pub compute_s: f64,
    /// Time inside send and receive (waiting included), seconds.
    pub comm_s: f64,
    /// Its own check, if it made one.
    pub verified: Option<bool>,
    /// Its summary line.
    pub summary: String,
}

/// One channel of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelReport {
    /// Sender.
    pub from: String,
    /// Receiver.
    pub to: String,
    /// Bytes per message.
    pub bytes: u64,
    /// The hops of its route (`host` for none).
    pub route: String,
    /// One message's modeled time on that route, hops one after the other, seconds.
    pub modeled_s: f64,
}

/// A run's report (built on PE 0).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The graph's name.
    pub graph: String,
    /// The mapping's name.
    pub mapping: String,
    /// The profile the job emulates.
    pub profile: String,
    /// The job clock (`wall` or `virtual`).
    pub clock: String,
    /// Iterations run.
    pub iterations: u64,
    /// From the start barrier to the end barrier, on the job clock, seconds.
    pub total_s: f64,
    /// True if every task that checks its results found them right (and at least one
    /// checked), false if any found them wrong, null if none checks.
    pub verified: Option<bool>,
    /// Tasks on boards.
    pub fpga_tasks: usize,
    /// Each task.
    pub tasks: Vec<TaskReport>,
    /// Each channel.
    pub channels: Vec<ChannelReport>,
}

/// The CPU symmetric heap a run of `graph` allocates at most, in bytes (every channel's
/// slots as if its receiver were on a CPU, the counters, the outcome table), or `None`
/// if that does not fit a `u64`. A launcher sizes `SHMEM_SYMMETRIC_SIZE` with it.
///
/// ```
/// use shmemplus_scf::{run::cpu_heap_bytes, TaskGraph};
/// let g = TaskGraph::from_toml_str(
///     "name = \"g\"\n[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 0 }\n[[task]]\nname = \"b\"\nkind = \"k\"\ncpu = { pe = 1 }\n[[edge]]\nfrom = \"a\"\nto = \"b\"\npattern = \"send\"\nbytes = 100000000",
///     "g",
/// )?;
/// assert!(cpu_heap_bytes(&g).unwrap() >= 200_000_000);
/// # Ok::<(), shmemplus_scf::SpecError>(())
/// ```
pub fn cpu_heap_bytes(graph: &TaskGraph) -> Option<u64> {
    let slots = crate::channel::SLOTS;
    let mut total: u64 = 0;
    for c in &graph.channels {
        let stride = c.bytes.checked_next_multiple_of(64)?;
        // Each allocation may be padded to its alignment: a page each, generously.
        total = total.checked_add(stride.checked_mul(slots)?.checked_add(4096)?)?;
    }
    let n = graph.tasks.len() as u64;
    let counters = (graph.channels.len() as u64)
        .checked_mul(slots)?
        .checked_mul(8)?
        .checked_next_multiple_of(4096)?
        .checked_mul(2)?;
    let table = n.checked_mul(OUTCOME_WORDS as u64 * 8 + SUMMARY_BYTES as u64)?;
    total
        .checked_add(counters)?
        .checked_add(table)?
        .checked_add(1 << 20)
}

/// The job's shape as SCF checks mappings against it.
pub fn job_shape(shmem: &Shmem) -> JobShape {
    JobShape {
        n_pes: shmem.n_pes(),
        pes_per_node: shmem.topology().pes_per_node,
        boards_per_node: shmem.fpgas(),
    }
}

/// Checks that every task's kind is registered and runs where the mapping puts it.
pub fn check_kinds(graph: &TaskGraph, places: &[Placement], registry: &Registry) -> Result<()> {
    for (t, task) in graph.tasks.iter().enumerate() {
        let Some(kind) = registry.get(&task.kind) else {
            return Err(ScfError::Kind {
                task: task.name.clone(),
                problem: format!(
                    "kind {:?} is not registered (known kinds: {})",
                    task.kind,
                    registry.names().join(", ")
                ),
            });
        };
        let device = places[t].device();
        if !kind.runs_on(device) {
            return Err(ScfError::Kind {
                task: task.name.clone(),
                problem: format!(
                    "mapped to {} but kind {:?} has no {} implementation",
                    places[t],
                    task.kind,
                    device.name()
                ),
            });
        }
    }
    Ok(())
}

/// A board task's buffers on its board.
struct BoardBuffers {
    state: SymVec<u8>,
    out: SymVec<u8>,
    /// Offset of each out-channel's region in `out`, in channel order.
    regions: Vec<(usize, usize)>,
}

/// This PE's instance of a task.
enum Instance {
    Cpu(Box<dyn CpuTask>),
    Board {
        board: u32,
        kernel: String,
        state_bytes: u64,
    },
    Elsewhere,
}

/// Runs `graph` mapped by `mapping` on every PE of the job (collective: every PE calls
/// it with the same graph, mapping and registry). Returns the report on PE 0, `None`
/// elsewhere. A bad mapping or kind is reported on every PE before anything runs.
pub fn run(
    shmem: &Shmem,
    graph: &TaskGraph,
    mapping: &Mapping,
    registry: &Registry,
) -> Result<Option<RunReport>> {
    let job = job_shape(shmem);
    let places = mapping.resolve(graph, &job)?;
    check_kinds(graph, &places, registry)?;
    let me = shmem.my_pe();
    let n = graph.tasks.len();

    // This PE's instances, and its boards' bitfile.
    let mut instances: Vec<Instance> = Vec::with_capacity(n);
    let mut my_boards: Vec<u32> = Vec::new();
    for (t, task) in graph.tasks.iter().enumerate() {
        let kind = registry.get(&task.kind);
        instances.push(match (places[t].pe == me, places[t].board, kind) {
            (true, None, Some(k)) => match &k.cpu {
                Some(make) => Instance::Cpu(make(&task.name)),
                None => Instance::Elsewhere,
            },
            (true, Some(b), Some(k)) => match &k.fpga {
                Some(bk) => {
                    if !my_boards.contains(&b) {
                        my_boards.push(b);
                    }
                    Instance::Board {
                        board: b,
                        kernel: bk.kernel.name.clone(),
                        state_bytes: bk.state_bytes,
                    }
                }
                None => Instance::Elsewhere,
            },
            _ => Instance::Elsewhere,
        });
    }
    for &b in &my_boards {
        shmem.fpga_configure(
            b,
            Bitfile {
                name: format!("scf-{}", graph.name),
                kernels: registry.kernels(),
            },
        )?;
    }

    // Collective allocations, the same on every PE: channels, then each board task's
    // state and output regions (in task order), then the outcome table.
    let chans = Channels::alloc(shmem, graph, &places, crate::channel::SLOTS)?;
    let mut boards: Vec<Option<BoardBuffers>> = Vec::with_capacity(n);
    for (t, task) in graph.tasks.iter().enumerate() {
        let Some(b) = places[t].board else {
            boards.push(None);
            continue;
        };
        let state_bytes = registry
            .get(&task.kind)
            .and_then(|k| k.fpga.as_ref())
            .map_or(0, |k| k.state_bytes);
        let state_len =
            usize::try_from(state_bytes.max(1)).map_err(|_| shmemplus::Error::SizeOverflow {
                what: format!("state of {state_bytes} bytes for task {:?}", task.name),
            })?;
        let mut regions = Vec::new();
        let mut end = 0usize;
        for c in graph.outputs(t) {
            let len = chans.bytes(c.id);
            regions.push((end, len));
            end = len
                .checked_next_multiple_of(64)
                .and_then(|l| l.checked_add(end))
                .ok_or_else(|| shmemplus::Error::SizeOverflow {
                    what: format!("output regions of task {:?}", task.name),
                })?;
        }
        let state = shmem.alloc::<u8>(state_len, Place::Fpga(b))?;
        let out = shmem.alloc::<u8>(end.max(1), Place::Fpga(b))?;
        boards.push(Some(BoardBuffers {
            state,
            out,
            regions,
        }));
    }
    let table_len = n
        .checked_mul(OUTCOME_WORDS)
        .ok_or_else(|| shmemplus::Error::SizeOverflow {
            what: format!("outcome table of {n} tasks"),
        })?;
    let table = shmem.alloc::<u64>(table_len, Place::Cpu)?;
    let summaries = shmem.alloc::<u8>(
        n.checked_mul(SUMMARY_BYTES)
            .ok_or_else(|| shmemplus::Error::SizeOverflow {
                what: format!("summaries of {n} tasks"),
            })?,
        Place::Cpu,
    )?;

    // The run. The runtime's own bookkeeping is not the application's time: the
    // virtual clock counts CPU time only inside tasks without a modeled cost.
    let mut compute = vec![Duration::ZERO; n];
    let mut comm = vec![Duration::ZERO; n];
    let counted = shmem.counts_cpu_time();
    shmem.count_cpu_time(false);
    shmem.barrier_all()?;
    let t0 = shmem.now();
    let result = (|| -> Result<()> {
        for i in 0..graph.iterations {
            for &t in &graph.order {
                match &mut instances[t] {
                    Instance::Elsewhere => {}
                    Instance::Cpu(task) => {
                        let mut ctx = TaskCtx {
                            shmem,
                            graph,
                            chans: &chans,
                            task: t,
                            iteration: i,
                            used: vec![false; graph.channels.len()],
                            pending_compute: graph.tasks[t].cpu_s.map(Duration::from_secs_f64),
                            comm: Duration::ZERO,
                            started: shmem.now(),
                        };
                        let start = ctx.started;
                        let measured = graph.tasks[t].cpu_s.is_none();
                        shmem.count_cpu_time(measured);
                        let stepped = task.step(&mut ctx);
                        shmem.count_cpu_time(false);
                        stepped.map_err(|e| match e {
                            ScfError::Failed(why) => ScfError::Task {
                                task: graph.tasks[t].name.clone(),
                                iteration: i,
                                why,
                            },
                            other => other,
                        })?;
                        ctx.charge_compute();
                        ctx.check_complete()?;
                        let spent = shmem.now().saturating_sub(start);
                        compute[t] += spent.saturating_sub(ctx.comm);
                        comm[t] += ctx.comm;
                    }
                    Instance::Board {
                        board,
                        kernel,
                        state_bytes,
                    } => {
                        let bufs = boards[t].as_ref().ok_or_else(|| ScfError::Kind {
                            task: graph.tasks[t].name.clone(),
                            problem: "board buffers missing".into(),
                        })?;
                        let start = shmem.now();
                        let mut inputs = Vec::new();
                        for c in graph.inputs(t) {
                            chans.wait_message(shmem, c.id, i)?;
                            inputs.push(chans.located(c.id, i));
                        }
                        let received = shmem.now();
                        let out_base = bufs.out.heap_offset() as u64;
                        let args = BoardArgs {
                            iteration: i,
                            state: (bufs.state.heap_offset() as u64, *state_bytes),
                            inputs,
                            outputs: bufs
                                .regions
                                .iter()
                                .map(|&(o, l)| (out_base + o as u64, l as u64))
                                .collect(),
                        };
                        let fail = |why: String| ScfError::Task {
                            task: graph.tasks[t].name.clone(),
                            iteration: i,
                            why,
                        };
                        shmem
                            .kernel_start(*board, kernel, &args.to_words())
                            .and_then(|run| run.wait())
                            .map_err(|e| fail(e.to_string()))?;
                        let computed = shmem.now();
                        for c in graph.inputs(t) {
                            chans.release(shmem, c.id, i)?;
                        }
                        for (k, c) in graph.outputs(t).enumerate() {
                            chans.wait_slot(shmem, c.id, i)?;
                            chans.deliver_from(shmem, c.id, i, &bufs.out, bufs.regions[k].0)?;
                        }
                        compute[t] += computed.saturating_sub(received);
                        comm[t] +=
                            received.saturating_sub(start) + shmem.now().saturating_sub(computed);
                    }
                }
            }
        }
        Ok(())
    })();
    // A failed task fails its PE, and the launcher ends the job; nothing below is
    // collective until every PE got here.
    let finished = result.and_then(|()| {
        shmem.quiet()?;
        shmem.barrier_all()?;
        Ok(shmem.now().saturating_sub(t0))
    });
    shmem.count_cpu_time(counted);
    let total = finished?;

    // Outcomes to PE 0.
    for (t, inst) in instances.iter_mut().enumerate() {
        let outcome = match inst {
            Instance::Elsewhere => continue,
            Instance::Cpu(task) => task.finish(),
            Instance::Board { .. } => Default::default(),
        };
        let code = match outcome.verified {
            None => 0,
            Some(true) => 1,
            Some(false) => 2,
        };
        let words = [
            code,
            compute[t].as_nanos() as u64,
            comm[t].as_nanos() as u64,
        ];
        shmem.put(&table, t * OUTCOME_WORDS, &words, 0)?;
        let mut line = outcome.summary.into_bytes();
        let mut cut = line.len().min(SUMMARY_BYTES);
        while cut > 0 && std::str::from_utf8(&line[..cut]).is_err() {
            cut -= 1;
        }
        line.truncate(cut);
        line.resize(SUMMARY_BYTES, 0);
        shmem.put(&summaries, t * SUMMARY_BYTES, &line, 0)?;
    }
    shmem.barrier_all()?;

    let report = if me == 0 {
        let words = shmem.local_to_vec(&table)?;
        let text = shmem.local_to_vec(&summaries)?;
        let mut tasks = Vec::with_capacity(n);
        for (t, task) in graph.tasks.iter().enumerate() {
            let w = &words[t * OUTCOME_WORDS..(t + 1) * OUTCOME_WORDS];
            let s = &text[t * SUMMARY_BYTES..(t + 1) * SUMMARY_BYTES];
            let s = &s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())];
            tasks.push(TaskReport {
                name: task.name.clone(),
                kind: task.kind.clone(),
                device: places[t].device(),
                placement: places[t],
                compute_s: w[1] as f64 * 1e-9,
                comm_s: w[2] as f64 * 1e-9,
                verified: match w[0] {
                    1 => Some(true),
                    2 => Some(false),
                    _ => None,
                },
                summary: String::from_utf8_lossy(s).into_owned(),
            });
        }
        let checks: Vec<bool> = tasks.iter().filter_map(|t| t.verified).collect();
        let verified = if checks.is_empty() {
            None
        } else {
            Some(checks.iter().all(|&v| v))
        };
        let profile = shmem.profile();
        let channels = graph
            .channels
            .iter()
            .map(|c| {
                let route = Route::between(places[c.from], places[c.to], &job);
                ChannelReport {
                    from: graph.tasks[c.from].name.clone(),
                    to: graph.tasks[c.to].name.clone(),
                    bytes: c.bytes,
                    route: route.name(),
                    modeled_s: route.time(profile, c.bytes),
                }
            })
            .collect();
        Some(RunReport {
            graph: graph.name.clone(),
            mapping: mapping.name.clone(),
            profile: profile.name.clone(),
            clock: shmem.clock().name().to_string(),
            iterations: graph.iterations,
            total_s: total.as_secs_f64(),
            verified,
            fpga_tasks: places.iter().filter(|p| p.board.is_some()).count(),
            tasks,
            channels,
        })
    } else {
        None
    };

    // Free in reverse order of allocation (collective).
    shmem.free(summaries)?;
    shmem.free(table)?;
    for b in boards.into_iter().rev().flatten() {
        shmem.free(b.out)?;
        shmem.free(b.state)?;
    }
    chans.free(shmem)?;
    Ok(report)
}
