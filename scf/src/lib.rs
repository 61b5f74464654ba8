//! SCF, the System Coordination Framework: an application is a graph of tasks, each
//! run by a CPU or a board; tasks exchange data only through `send`, `recv`,
//! `broadcast`, `scatter` and `gather`, by task name; a mapping file says which device
//! of which PE runs each task, so exploring mappings changes no source code
//! (`docs/scf.md` has the file formats, the runtime and the case studies).
//!
//! ```no_run
//! use shmemplus_scf::{CpuTask, Mapping, Result, TaskCtx, TaskGraph};
//!
//! struct Doubler;
//! impl CpuTask for Doubler {
//!     fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
//!         let x = ctx.recv("source")?; // by task name
//!         let y: Vec<u8> = x.iter().map(|b| b.wrapping_mul(2)).collect();
//!         ctx.send("sink", &y) // exactly the edge's bytes
//!     }
//! }
//!
//! fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
//!     let shmem = shmemplus::init()?;
//!     let graph = TaskGraph::load("graph.toml".as_ref())?;
//!     let mapping = Mapping::load("map.toml".as_ref())?;
//!     let mut registry = shmemplus_scf::apps::registry(); // relay, tracking, backprojection
//!     registry.cpu("doubler", |_task_name| Doubler);
//!     if let Some(report) = shmemplus_scf::run(&shmem, &graph, &mapping, &registry)? {
//!         println!("{} in {:.3} ms", report.mapping, report.total_s * 1e3);
//!     }
//!     Ok(shmem.finalize()?)
//! }
//! ```
//!
//! The crate is SCF on the shmemplus runtime, beside SHMEM+ (the PGAS model of the
//! library itself). Its modules:
//! - [`graph`]: the task graph file and its checks;
//! - [`mapping`]: mapping files, the mappings a graph allows, their resolution;
//! - [`registry`]: what each kind of task does on a CPU and on a board;
//! - [`task`]: what a CPU task sees (send, recv, broadcast, scatter, gather);
//! - `channel`: the message queues between tasks, on symmetric memory;
//! - [`error`]: the error type;
//! - [`apps`]: the shipped applications' kinds (relay, target tracking, backprojection).

pub mod apps;
pub(crate) mod channel;
pub mod error;
pub mod graph;
pub mod mapping;
pub mod predict;
pub mod registry;
pub mod route;
pub mod run;
pub mod task;

pub use error::{Result, ScfError};
pub use registry::{BoardArgs, BoardKernel, CpuTask, Kind, Registry, TaskOutcome};
pub use run::{run, RunReport};
pub use task::TaskCtx;

pub use graph::{Channel, Device, Pattern, Placement, Reference, SpecError, Task, TaskGraph};
pub use mapping::{JobShape, MappedTask, Mapping};
