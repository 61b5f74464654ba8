//! SCF runs (`tests/tests/scf.rs`): a fan-out, chain and fan-in graph whose messages
//! are checked byte for byte by the sink, under a mapping given by name: every worker
//! on a CPU, every worker on a board, or mixed. With 2 message slots and hundreds of
//! iterations, every step of the channel protocol waits on its partner many times.

use shmemplus::fpga_mock::KernelTiming;
use shmemplus::Shmem;
use shmemplus_scf::{
    BoardKernel, CpuTask, Mapping, Registry, Result, ScfError, TaskCtx, TaskGraph, TaskOutcome,
};

/// The graph: src scatters to w1 and w2; w1 sends to w3; w2 and w3 gather to sink.
/// Each worker adds 1 to every byte, so the sink knows what each message must hold.
const GRAPH: &str = r#"
name = "fan"
iterations = ITER

[[task]]
name = "src"
kind = "source"
cpu = { pe = 0 }

[[task]]
name = "w1"
kind = "step"
cpu = { pe = 1 }
fpga = { pe = 1, board = 0 }

[[task]]
name = "w2"
kind = "step"
cpu = { pe = 2 }
fpga = { pe = 2, board = 0 }

[[task]]
name = "w3"
kind = "step"
cpu = { pe = 3 }
fpga = { pe = 3, board = 1 }

[[task]]
name = "sink"
kind = "sink"
cpu = { pe = 0 }

[[edge]]
from = "src"
to = ["w1", "w2"]
pattern = "scatter"
bytes = 1000

[[edge]]
from = "w1"
to = "w3"
pattern = "send"
bytes = 1000

[[edge]]
from = ["w2", "w3"]
to = "sink"
pattern = "gather"
bytes = 1000
"#;

/// The byte `j` of part `part` in iteration `i`.
fn pattern(i: u64, part: u64, j: usize) -> u8 {
    (i.wrapping_mul(31) ^ part.wrapping_mul(7) ^ j as u64) as u8
}

struct Source;

impl CpuTask for Source {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let i = ctx.iteration();
        let parts: Vec<Vec<u8>> = (0..2)
            .map(|p| (0..1000).map(|j| pattern(i, p, j)).collect())
            .collect();
        ctx.scatter(&["w1", "w2"], &[&parts[0], &parts[1]])
    }
}

/// A fault to inject into one worker, to check that the job ends naming it.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// w2's CPU code fails in iteration 5.
    CpuFails,
    /// w2's kernel fails in iteration 5.
    KernelFails,
    /// w1 does not send in iteration 3.
    SkipsSend,
}

/// The worker on a CPU: every byte of its input plus one, to its one output.
struct Step {
    name: String,
    fault: Fault,
}

impl CpuTask for Step {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let from = ctx.inputs()[0];
        let to = ctx.outputs()[0];
        let x = ctx.recv(from)?;
        let i = ctx.iteration();
        if self.fault == Fault::CpuFails && self.name == "w2" && i == 5 {
            return Err(ScfError::Failed("failed on purpose".into()));
        }
        if self.fault == Fault::SkipsSend && self.name == "w1" && i == 3 {
            return Ok(());
        }
        let y: Vec<u8> = x.iter().map(|b| b.wrapping_add(1)).collect();
        ctx.send(to, &y)
    }
}

/// The same worker as a board kernel (one input, one output of the same size).
fn step_kernel(fault: Fault) -> BoardKernel {
    let timing = KernelTiming {
        pipeline_latency_cycles: 100.0,
        clock_hz: 150e6,
        ops_per_element: 1.0,
        ops_per_cycle: 1.0,
    };
    shmemplus_scf::apps::map_kernel("scf-test-step", timing, move |iteration, bytes| {
        if fault == Fault::KernelFails && iteration == 5 {
            return Err("kernel failed on purpose".into());
        }
        bytes.iter_mut().for_each(|b| *b = b.wrapping_add(1));
        Ok(())
    })
}

/// Checks every message: w2's is part 1 plus one, w3's part 0 plus two.
#[derive(Default)]
struct Sink {
    checked: u64,
    wrong: Vec<String>,
}

impl CpuTask for Sink {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let i = ctx.iteration();
        let got = ctx.gather(&["w2", "w3"])?;
        for (k, (msg, (part, plus))) in got.iter().zip([(1u64, 1u8), (0, 2)]).enumerate() {
            for (j, &b) in msg.iter().enumerate() {
                if b != pattern(i, part, j).wrapping_add(plus) {
                    self.wrong
                        .push(format!("iteration {i}, message {k}, byte {j}"));
                    break;
                }
            }
            self.checked += 1;
        }
        Ok(())
    }

    fn finish(&mut self) -> TaskOutcome {
        TaskOutcome {
            verified: Some(self.wrong.is_empty() && self.checked > 0),
            summary: format!("{} messages checked, wrong: {:?}", self.checked, self.wrong),
        }
    }
}

/// The test registry.
fn registry(fault: Fault) -> Registry {
    let mut r = Registry::new();
    r.cpu("source", |_| Source)
        .cpu("step", move |name| Step {
            name: name.to_string(),
            fault,
        })
        .fpga("step", step_kernel(fault))
        .cpu("sink", |_| Sink::default());
    r
}

/// Runs the graph for `iterations` under mapping `which` (`cpu`, `fpga`, `mixed`) and
/// checks PE 0's report: verified, and the mapping's board count. `fault` (`none`,
/// `cpu-fails`, `kernel-fails`, `skips-send`) makes a worker fail: the run must then
/// end with an error naming it.
pub fn scf(
    shmem: &Shmem,
    iterations: u64,
    which: &str,
    fault: &str,
) -> std::result::Result<(), String> {
    let fault = match fault {
        "none" => Fault::None,
        "cpu-fails" => Fault::CpuFails,
        "kernel-fails" => Fault::KernelFails,
        "skips-send" => Fault::SkipsSend,
        other => return Err(format!("unknown fault {other}")),
    };
    let graph = TaskGraph::from_toml_str(&GRAPH.replace("ITER", &iterations.to_string()), "fan")
        .map_err(|e| e.to_string())?;
    let on_fpga: Vec<usize> = match which {
        "cpu" => vec![],
        "fpga" => vec![1, 2, 3],
        "mixed" => vec![2],
        other => return Err(format!("unknown mapping {other}")),
    };
    let mapping = Mapping::with_fpga_tasks(&graph, &on_fpga);
    let report = shmemplus_scf::run(shmem, &graph, &mapping, &registry(fault))
        .map_err(|e: ScfError| e.to_string())?;
    if let Some(r) = report {
        if r.verified != Some(true) {
            return Err(format!("not verified: {:?}", r.tasks));
        }
        if r.fpga_tasks != on_fpga.len() {
            return Err(format!(
                "{} board tasks, expected {}",
                r.fpga_tasks,
                on_fpga.len()
            ));
        }
        let sink = r.tasks.iter().find(|t| t.name == "sink").ok_or("no sink")?;
        println!(
            "PE 0: scf {} verified in {:.3} ms: {}",
            r.mapping,
            r.total_s * 1e3,
            sink.summary
        );
    }
    println!("PE {}: scf ok", shmem.my_pe());
    Ok(())
}
