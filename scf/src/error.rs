//! SCF's error type: every way a run can fail, each naming the task, channel or file.
//!
//! Owns the error values only; it must not decide what is an error.

use crate::graph::SpecError;

/// Why an SCF call failed.
#[derive(Debug, thiserror::Error)]
pub enum ScfError {
    /// A graph or mapping file is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The runtime refused an operation.
    #[error(transparent)]
    Shmem(#[from] shmemplus::Error),
    /// A task named a task it has no channel with.
    #[error("task {task:?} has no channel {direction} {other:?} in the graph (its {direction_plural}: {known})")]
    NoChannel {
        /// The calling task.
        task: String,
        /// `to` or `from`.
        direction: &'static str,
        /// `outputs` or `inputs`.
        direction_plural: &'static str,
        /// The task it named.
        other: String,
        /// The tasks it may name that way.
        known: String,
    },
    /// A message of the wrong size.
    #[error("task {task:?} sent {got} bytes to {to:?}; the graph's channel carries {want} bytes per message")]
    WrongSize {
        /// The sender.
        task: String,
        /// The receiver.
        to: String,
        /// Bytes given.
        got: u64,
        /// Bytes the channel carries.
        want: u64,
    },
    /// A channel used twice, or not at all, in one iteration.
    #[error("task {task:?}, iteration {iteration}: {problem}")]
    Protocol {
        /// The task.
        task: String,
        /// The iteration.
        iteration: u64,
        /// What went wrong.
        problem: String,
    },
    /// A task's kind is not in the registry, or cannot run where it is mapped.
    #[error("task {task:?}: {problem}")]
    Kind {
        /// The task.
        task: String,
        /// What is missing.
        problem: String,
    },
    /// What a task's own code returns when it fails (the run adds which task and
    /// iteration: [`ScfError::Task`]).
    #[error("{0}")]
    Failed(String),
    /// A task's own code failed (its message), or its board kernel did.
    #[error("task {task:?} failed in iteration {iteration}: {why}")]
    Task {
        /// The task.
        task: String,
        /// The iteration.
        iteration: u64,
        /// The task's message.
        why: String,
    },
}

/// SCF's result type.
pub type Result<T, E = ScfError> = std::result::Result<T, E>;
