//! SCF, the System Coordination Framework: an application is a graph of tasks, each
//! run by a CPU or a board; tasks exchange data only through `send`, `recv`,
//! `broadcast`, `scatter` and `gather`, by task name; a mapping file says which device
//! of which PE runs each task, so exploring mappings changes no source code.
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
