//! What the `shmemplus` binary's tests share: a bounded wait for a child.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

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
