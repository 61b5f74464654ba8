//! shmemplus: a SHMEM+ style PGAS communication library (see the crate README).

pub mod error;
pub mod launch;
mod topology;

pub use error::{Error, Result};
pub use topology::Topology;
