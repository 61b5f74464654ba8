//! shmemplus-cli: the `shmemplus` tool, and `launcher`, the job runtime (the
//! `shmemplus-runtime` crate behind `shmemrun`) under its historical name.

pub mod bench;
pub mod cosched_plot;
pub mod info;
pub mod launcher;
pub mod model_cli;
pub mod plot;
pub mod scf_cli;
pub mod trace_plot;
pub mod tune_cli;
