//! The job runtime, under its historical name: everything here is
//! [`shmemplus_runtime`], re-exported so that `shmemplus_cli::launcher::run_job` and
//! friends keep working. It must not grow code of its own; add it to the runtime crate.

pub use shmemplus_runtime::*;
