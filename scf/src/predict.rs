//! Predicting a mapping's run time with the multilevel model, without running it.
//!
//! Owns the simulation of a run: the same steps as `run` and `channel` (each PE's
//! tasks in topological order per iteration; receive, compute, send; two slots per
//! channel; kernels on one board one after another), timed by the profile's hop costs
//! with the resources they occupy (each board's DMA read and write channels, each
//! node's network send and receive sides), a CPU task's cost (`cpu_s`, or measured) and
//! a board task's kernel time (RATSS). It must not run anything on the job.
//!
//! The steps are simulated as discrete events: of every PE's next step whose
//! inputs are known, the earliest is taken, so that shared resources are granted in
//! time order, as on the emulated cluster.

use crate::channel::SLOTS;
use crate::error::{Result, ScfError};
use crate::graph::{Placement, TaskGraph};
use crate::mapping::JobShape;
use crate::registry::{BoardArgs, Registry};
use crate::route::Route;
use shmemplus::netsim::{HopKind, Profile};
use std::collections::HashMap;

/// What the simulation needs besides the graph and the mapping.
pub struct Costs {
    /// Compute time per iteration of each task on a CPU (seconds).
    pub cpu_s: Vec<f64>,
    /// Kernel time per iteration of each task on a board (seconds; 0 if none).
    pub fpga_s: Vec<f64>,
}

impl Costs {
    /// The costs of `graph`'s tasks: `cpu_s` from the graph, else from `measured`
    /// (per-iteration compute from a run); kernel times from the registry's timing over
    /// the elements of the task's arguments.
    pub fn of(graph: &TaskGraph, registry: &Registry, measured: Option<&[f64]>) -> Result<Costs> {
        let mut cpu_s = Vec::with_capacity(graph.tasks.len());
        let mut fpga_s = Vec::with_capacity(graph.tasks.len());
        for (t, task) in graph.tasks.iter().enumerate() {
            let cpu = match (task.cpu.is_some(), task.cpu_s, measured) {
                (false, _, _) => 0.0,
                (true, Some(s), _) => s,
                (true, None, Some(m)) => m.get(t).copied().unwrap_or(0.0),
                (true, None, None) => {
                    return Err(ScfError::Kind {
                        task: task.name.clone(),
                        problem: "no cpu_s in the graph and no measurement to predict from".into(),
                    })
                }
            };
            cpu_s.push(cpu);
            let kernel = registry.get(&task.kind).and_then(|k| k.fpga.as_ref());
            let fpga = match (task.fpga.is_some(), kernel) {
                (true, Some(k)) => {
                    let args = BoardArgs {
                        iteration: 0,
                        state: (0, k.state_bytes),
                        inputs: graph.inputs(t).map(|c| (0, c.bytes)).collect(),
                        outputs: graph.outputs(t).map(|c| (0, c.bytes)).collect(),
                    };
                    k.kernel
                        .timing
                        .seconds((k.kernel.elements)(&args.to_words()))
                }
                _ => 0.0,
            };
            fpga_s.push(fpga);
        }
        Ok(Costs { cpu_s, fpga_s })
    }
}

/// A prediction.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// The whole run, first step to last, seconds.
    pub total_s: f64,
    /// Busy time of each task (compute or kernel) over the run, seconds.
    pub compute_s: Vec<f64>,
}

/// One step of a PE's program.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Wait for message `i` of a channel (a CPU receiver also releases it at once).
    Recv { c: usize, release: bool },
    /// Compute for the task's time.
    Compute { t: usize },
    /// A board kernel.
    Kernel { t: usize },
    /// A board receiver releases a message after its kernel.
    Release { c: usize },
    /// Send message `i` of a channel.
    Send { c: usize },
}

/// Busy-until instants of the shared resources.
#[derive(Default)]
struct Resources {
    free: HashMap<(u8, u32, u32), f64>,
}

impl Resources {
    /// Reserves `busy` seconds on `key` from no earlier than `at`; returns the start.
    fn reserve(&mut self, key: (u8, u32, u32), at: f64, busy: f64) -> f64 {
        let f = self.free.entry(key).or_insert(0.0);
        let start = at.max(*f);
        *f = start + busy;
        start
    }
}

/// Simulates the run of `graph` with every task at `places` on a job of shape `job`
/// emulating `profile`.
pub fn predict(
    graph: &TaskGraph,
    places: &[Placement],
    job: &JobShape,
    profile: &Profile,
    costs: &Costs,
) -> Prediction {
    let n_pes = places.iter().map(|p| p.pe + 1).max().unwrap_or(1) as usize;
    let iters = graph.iterations;
    // Each PE's program for one iteration (the same every iteration).
    let mut program: Vec<Vec<Step>> = vec![Vec::new(); n_pes];
    for &t in &graph.order {
        let prog = &mut program[places[t].pe as usize];
        let on_board = places[t].board.is_some();
        for c in graph.inputs(t) {
            prog.push(Step::Recv {
                c: c.id,
                release: !on_board,
            });
        }
        if on_board {
            prog.push(Step::Kernel { t });
            for c in graph.inputs(t) {
                prog.push(Step::Release { c: c.id });
            }
        } else {
            prog.push(Step::Compute { t });
        }
        for c in graph.outputs(t) {
            prog.push(Step::Send { c: c.id });
        }
    }
    let routes: Vec<Route> = graph
        .channels
        .iter()
        .map(|c| Route::between(places[c.from], places[c.to], job))
        .collect();
    let signal_s = |c: usize| -> f64 {
        // The counter update after the data: one small message if the ends' nodes differ.
        let (a, b) = (
            places[graph.channels[c].from].pe,
            places[graph.channels[c].to].pe,
        );
        if job.node_of(a) != job.node_of(b) {
            profile.cost(HopKind::Net).map_or(0.0, |n| n.time(8))
        } else {
            0.0
        }
    };
    let n_ch = graph.channels.len();
    let mut delivered: Vec<Vec<Option<f64>>> = vec![vec![None; iters as usize]; n_ch];
    let mut released: Vec<Vec<Option<f64>>> = vec![vec![None; iters as usize]; n_ch];
    let mut clock = vec![0.0f64; n_pes];
    let mut pc = vec![(0u64, 0usize); n_pes]; // (iteration, step)
    let mut res = Resources::default();
    let mut compute_s = vec![0.0; graph.tasks.len()];
    let total_steps: usize = program.iter().map(Vec::len).sum();

    loop {
        // The earliest ready step over all PEs.
        let mut best: Option<(f64, usize)> = None;
        for pe in 0..n_pes {
            let (i, s) = pc[pe];
            if i >= iters || program[pe].is_empty() {
                continue;
            }
            let ready = match program[pe][s] {
                Step::Recv { c, .. } => delivered[c][i as usize].map(|d| d.max(clock[pe])),
                Step::Send { c } => match i.checked_sub(SLOTS) {
                    Some(prev) => released[c][prev as usize].map(|r| r.max(clock[pe])),
                    None => Some(clock[pe]),
                },
                _ => Some(clock[pe]),
            };
            if let Some(at) = ready {
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, pe));
                }
            }
        }
        let Some((at, pe)) = best else { break };
        let (i, s) = pc[pe];
        let iu = i as usize;
        let mut now = at;
        match program[pe][s] {
            Step::Recv { c, release } => {
                if release {
                    released[c][iu] = Some(now + signal_s(c));
                }
            }
            Step::Release { c } => released[c][iu] = Some(now + signal_s(c)),
            Step::Compute { t } => {
                now += costs.cpu_s[t];
                compute_s[t] += costs.cpu_s[t];
            }
            Step::Kernel { t } => {
                let p = places[t];
                let node = job.node_of(p.pe);
                let start = res.reserve((0, node, p.board.unwrap_or(0)), now, costs.fpga_s[t]);
                now = start + costs.fpga_s[t];
                compute_s[t] += costs.fpga_s[t];
            }
            Step::Send { c } => {
                let ch = &graph.channels[c];
                let (from, to) = (places[ch.from], places[ch.to]);
                // Hop after hop, each on its resource; the message is there one
                // latency after the last hop's occupancy. The sender is held until
                // its data has left: through the network hop if there is one (the
                // target's progress thread does the board write on its node), else
                // through the last hop.
                let mut latency = 0.0;
                let mut sender_free = None;
                for &hop in &routes[c].hops {
                    let Some(cost) = profile.cost(hop) else {
                        continue;
                    };
                    now += latency;
                    let busy = cost.occupancy(ch.bytes);
                    let start = match hop {
                        HopKind::FpgaRead => res.reserve(
                            (1, job.node_of(from.pe), from.board.unwrap_or(0)),
                            now,
                            busy,
                        ),
                        HopKind::FpgaWrite => {
                            res.reserve((2, job.node_of(to.pe), to.board.unwrap_or(0)), now, busy)
                        }
                        HopKind::Net => {
                            let (sn, rn) = (job.node_of(from.pe), job.node_of(to.pe));
                            let f_send = res.free.get(&(3, sn, 0)).copied().unwrap_or(0.0);
                            let f_recv = res.free.get(&(4, rn, 0)).copied().unwrap_or(0.0);
                            let start = now.max(f_send).max(f_recv);
                            res.free.insert((3, sn, 0), start + busy);
                            res.free.insert((4, rn, 0), start + busy);
                            start
                        }
                    };
                    now = start + busy;
                    latency = cost.latency(ch.bytes);
                    if hop == HopKind::Net {
                        sender_free = Some(now);
                    }
                }
                delivered[c][iu] = Some(now + latency + signal_s(c));
                now = sender_free.unwrap_or(now);
            }
        }
        clock[pe] = now;
        pc[pe] = if s + 1 == program[pe].len() {
            (i + 1, 0)
        } else {
            (i, s + 1)
        };
    }
    debug_assert!(
        pc.iter()
            .enumerate()
            .all(|(pe, &(i, _))| i >= iters || program[pe].is_empty()),
        "the simulation stalled ({total_steps} steps per iteration)"
    );
    Prediction {
        total_s: clock.iter().copied().fold(0.0, f64::max),
        compute_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Mapping;

    const GRAPH: &str = r#"
        name = "chain"
        iterations = 10
        [[task]]
        name = "a"
        kind = "relay"
        cpu_s = 0.001
        cpu = { pe = 0 }
        [[task]]
        name = "b"
        kind = "relay"
        cpu_s = 0.001
        cpu = { pe = 1 }
        fpga = { pe = 1, board = 0 }
        [[task]]
        name = "c"
        kind = "relay"
        cpu_s = 0.001
        cpu = { pe = 2 }
        fpga = { pe = 2, board = 0 }
        [[edge]]
        from = "a"
        to = ["b", "c"]
        pattern = "broadcast"
        bytes = 1000000
    "#;

    fn setup(on_fpga: &[usize], fpga_s: f64) -> (TaskGraph, Vec<Placement>, JobShape, Costs) {
        let g = TaskGraph::from_toml_str(GRAPH, "g").unwrap();
        let job = JobShape {
            n_pes: 3,
            pes_per_node: 3,
            boards_per_node: 1,
        };
        let places = Mapping::with_fpga_tasks(&g, on_fpga)
            .resolve(&g, &job)
            .unwrap();
        let costs = Costs {
            cpu_s: vec![0.001; 3],
            fpga_s: vec![0.0, fpga_s, fpga_s],
        };
        (g, places, job, costs)
    }

    #[test]
    fn free_hops_pipeline_the_iterations() {
        let (g, places, job, costs) = setup(&[], 0.0);
        let p = predict(
            &g,
            &places,
            &job,
            &Profile::builtin("native").unwrap(),
            &costs,
        );
        // a computes 10 x 1 ms; b and c finish 1 ms after a's last send.
        assert!((p.total_s - 0.011).abs() < 1e-12, "{p:?}");
        assert!((p.compute_s[1] - 0.01).abs() < 1e-12);
    }

    #[test]
    fn kernels_on_one_board_follow_each_other() {
        let (g, places, job, costs) = setup(&[1, 2], 0.004);
        let p = predict(
            &g,
            &places,
            &job,
            &Profile::builtin("native").unwrap(),
            &costs,
        );
        // Two 4 ms kernels per iteration on one board: 80 ms, a little more to start.
        assert!(p.total_s >= 0.080 && p.total_s < 0.0815, "{p:?}");
    }

    #[test]
    fn a_slow_link_to_the_board_is_charged_once_per_message() {
        let (g, places, job, costs) = setup(&[1], 0.0);
        let mu = Profile::builtin("mu").unwrap();
        let write = mu.cost(HopKind::FpgaWrite).unwrap().occupancy(1_000_000);
        let p = predict(&g, &places, &job, &mu, &costs);
        // a blocks on each 1 MB write to the board (~3.6 ms at 275 MB/s): the write,
        // not a's 1 ms compute, sets the pace.
        assert!(
            p.total_s > 10.0 * write && p.total_s < 10.0 * (write + 0.001) + 0.01,
            "{p:?} {write}"
        );
    }
}
