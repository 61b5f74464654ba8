//! `global_exit` (OpenSHMEM `shmem_global_exit`): ending every PE of the job from one.
//!
//! This module owns the PE's side of it: flush this process's output, ask the
//! launcher to end the job with the code (`bootstrap::send_global_exit`), and exit.
//! It must not signal other processes itself (the launcher ends them, and cleans up
//! the job's shared memory) nor take any lock a thread of this PE could hold.

use super::Shmem;
use std::io::Write;

impl Shmem {
    /// Ends every PE of the job, promptly, with exit code `code`
    /// (`shmem_global_exit`): `shmemrun` exits with `code`, also 0, whatever the other
    /// PEs are doing (waiting in a barrier, say). This PE's Rust `stdout` and `stderr`
    /// are flushed first; output other PEs have not flushed may be lost, as their
    /// processes are ended. Callable from any thread, also while another thread of this
    /// PE is inside a call; it takes no lock of the handle.
    ///
    /// Under a launcher the PE sends the request on its bootstrap connection and waits
    /// (at most 10 s) for the launcher to end it; without one (a one-PE job), or after
    /// `finalize`, it is `std::process::exit(code)`.
    ///
    /// ```
    /// let shmem = shmemplus::init().expect("a one-PE job starts without a launcher");
    /// let done = true; // the program found it has nothing left to do
    /// if done {
    ///     // Without a launcher this process exits here, with status 0.
    ///     shmem.global_exit(0);
    /// }
    /// unreachable!("global_exit returned");
    /// ```
    pub fn global_exit(&self, code: i32) -> ! {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        crate::diag::debug(
            self.inner.me,
            format_args!("global_exit({code}): ending the job"),
        );
        crate::bootstrap::send_global_exit(code);
        // Under mpirun: MPI_Abort ends every rank, and mpirun exits with `code`.
        #[cfg(feature = "mpi")]
        crate::mpi_conduit::abort(code);
        std::process::exit(code)
    }
}
