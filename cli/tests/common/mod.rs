//! What the `shmemplus` binary's tests share: starting it with a clean environment,
//! and a bounded wait for it.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts `shmemplus ARGS...` without the clock and profile variables of the
/// environment the tests run in, its output piped.
pub fn spawn_shmemplus(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_shmemplus"))
        .args(args)
        .env_remove("SHMEMPLUS_CLOCK")
        .env_remove("SHMEMPLUS_PROFILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to end within `limit` (killing it and failing the test past
/// that), and collects its output. `what` names it in the failure.
pub fn output_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
