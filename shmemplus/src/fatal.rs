//! Ending the job from inside a PE when a failure leaves it no correct way on: a
//! corrupt ring, a collective that failed after other PEs committed to it, a panic on
//! the progress thread. Its peers would otherwise wait for this PE forever.
//!
//! This module owns the one message and the exit code of such an end. It must not try
//! to recover or clean up shared state: the launcher ends the other PEs (naming this
//! one) and removes the job's shared memory.

/// Exit status of a PE that ended the job itself (`EX_SOFTWARE`): the launcher reports
/// "PE p exited with code 70" after this PE's own message.
pub const EXIT_FATAL: i32 = 70;

/// Prints `shmemplus: PE {pe}: {what}; ending the job` on stderr (one line, no
/// duplicate tracing event) and exits the process with [`EXIT_FATAL`]. Safe to call
/// from any thread: `exit` does not wait for other threads, and nothing here takes a
/// lock that a waiting thread of this PE could hold.
pub fn end_job(pe: usize, what: &str) -> ! {
    // Not `eprintln!`: it panics when stderr is closed, and this must reach the exit.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "shmemplus: PE {pe}: {what}; ending the job"
    );
    std::process::exit(EXIT_FATAL)
}
