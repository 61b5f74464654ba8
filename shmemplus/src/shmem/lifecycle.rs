//! The end of a PE's life: the watcher of the progress thread (a panic there ends the
//! job naming the PE; `shutdown` waits for it with a bound), `finalize`, and the
//! implicit finalize when the last handle is dropped.
//!
//! This module owns shutdown. It must not start anything (`init` does) and every wait
//! in it has a bound: `finalize` always returns.

use super::{Inner, Shmem};
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

/// How long `shutdown` waits for the progress thread to stop before leaving it behind
/// (it notices a stop within one sleep slice; only a handler that blocks holds it).
pub(super) const PROGRESS_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The progress thread as the handle holds it: a watcher thread joins it, so that
///
/// - a panic on it ends this PE at once, with a message naming the PE (its peers
///   would otherwise wait forever for AMs it no longer serves, and the launcher ends
///   the job when a PE exits non-zero, naming it);
/// - `shutdown` can wait for it with a timeout, which `JoinHandle::join` cannot.
pub(super) struct ProgressWatch {
    /// Gets a message when the progress thread has returned normally.
    stopped: std::sync::mpsc::Receiver<()>,
}

/// Starts the watcher of the progress thread `thread` of PE `me`.
///
/// Protocol: the watcher is the only joiner. When the progress thread returns, the
/// watcher sends one message on a channel of capacity 1 (never blocks) and ends;
/// `shutdown` waits for that message with a timeout. When it panics, the watcher
/// reports and exits the process instead, so no message is ever sent: a `shutdown`
/// waiting then either sees the process end or times out, both harmless.
pub(super) fn watch_progress(me: u32, thread: JoinHandle<()>) -> Result<ProgressWatch> {
    let (tx, stopped) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("shmemplus-watch-{me}"))
        .spawn(move || match thread.join() {
            Ok(()) => {
                let _ = tx.send(());
            }
            Err(payload) => {
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                crate::fatal::end_job(
                    me as usize,
                    &format!(
                        "the progress thread panicked ({why}); its peers would otherwise wait for it forever"
                    ),
                );
            }
        })
        .map_err(|e| Error::os("starting the progress thread's watcher", e))?;
    Ok(ProgressWatch { stopped })
}

/// Test hook, in debug builds only: `SHMEMPLUS_TEST_PANIC_PROGRESS=<pe>` makes PE
/// `<pe>`'s progress thread panic as soon as it runs, so that the integration tests
/// can check that the PE ends the job instead of stranding its peers.
#[cfg(debug_assertions)]
pub(super) fn test_panic_progress_if_asked(am: &crate::am::AmEngine, me: u32) {
    /// A built-in handler slot no module uses (ids below `USER_BASE`).
    const H_TEST_PANIC: u16 = crate::am::USER_BASE - 1;
    let asked = std::env::var("SHMEMPLUS_TEST_PANIC_PROGRESS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    if asked == Some(me) {
        am.register_builtin(
            H_TEST_PANIC,
            std::sync::Arc::new(|_, _| panic!("SHMEMPLUS_TEST_PANIC_PROGRESS asked for a panic")),
        );
        am.post(me as usize, H_TEST_PANIC, [0; 4], &[]);
    }
}

impl Shmem {
    /// Ends this PE's participation (collective: completes its puts and waits for every
    /// PE, then stops the progress thread). Any later call on any clone of the handle,
    /// including a second `finalize`, returns [`Error::Finalized`]. The progress
    /// thread gets a few seconds to stop; one held by an active-message handler that
    /// never returns is left behind with a warning, so `finalize` always returns.
    pub fn finalize(&self) -> Result<()> {
        if self.inner.finalized.load(Ordering::Acquire) {
            return Err(Error::Finalized);
        }
        let result = self.inner.barrier_all();
        if self.inner.finalized.swap(true, Ordering::AcqRel) {
            return Err(Error::Finalized);
        }
        self.inner.shutdown();
        result
    }
}

impl Inner {
    pub(super) fn shutdown(&self) {
        crate::trace::finish();
        self.am.stop();
        let watch = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(watch) = watch {
            // Bounded: a handler that never returns must not hang finalize. Leaving
            // the thread behind is sound: it owns `Arc`s of everything it touches.
            use std::sync::mpsc::RecvTimeoutError;
            if let Err(RecvTimeoutError::Timeout) =
                watch.stopped.recv_timeout(PROGRESS_STOP_TIMEOUT)
            {
                crate::diag::warn(
                    self.me,
                    format_args!(
                        "the progress thread did not stop within {PROGRESS_STOP_TIMEOUT:?} (an \
                         active-message handler that blocks?); finalize goes on without it"
                    ),
                );
            }
        }
        // The link's sends in flight complete, then MPI ends (if the library began it).
        self.am.settle_link();
        #[cfg(feature = "mpi")]
        crate::mpi_conduit::finalize(self.me);
        // Tell the launcher this PE is done, then close the connection.
        let conn = self
            .coll
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bootstrap
            .take();
        if let Some(mut conn) = conn {
            conn.finalized();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        // Finalize on drop is collective like `finalize`, except on a panicking PE:
        // that one must not wait for others in a barrier (the launcher ends the job).
        if !std::thread::panicking() {
            if let Err(e) = self.barrier_all() {
                crate::diag::warn(self.me, format_args!("implicit finalize: {e}"));
            }
        }
        self.shutdown();
    }
}
