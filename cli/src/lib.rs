//! shmemplus-cli: the launcher library behind `shmemrun` (and behind the jobs that
//! `shmemplus bench` and the integration tests start), plus the `shmemplus` tool.

pub mod bench;
pub mod info;
pub mod launcher;
pub mod model_cli;
pub mod plot;
pub mod tune_cli;
