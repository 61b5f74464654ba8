//! Thread levels (OpenSHMEM `shmem_init_thread`, `shmem_query_thread`): [`ThreadLevel`],
//! [`init_thread`] and [`Shmem::query_thread`].
//!
//! This module owns the thread-safety claim the library makes (every level is
//! provided as `Multiple`) and the compile-time check behind it. It must not start
//! anything itself: `init_thread` is `init` plus that answer.

use super::{init, Shmem};
use crate::error::Result;

/// How much threading a program asks of the library (OpenSHMEM `SHMEM_THREAD_*`,
/// ordered from least to most).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// One thread in the process (`SHMEM_THREAD_SINGLE`).
    Single,
    /// Many threads; only the one that called `init` makes calls (`SHMEM_THREAD_FUNNELED`).
    Funneled,
    /// Many threads make calls, one at a time (`SHMEM_THREAD_SERIALIZED`).
    Serialized,
    /// Many threads make calls at once (`SHMEM_THREAD_MULTIPLE`).
    Multiple,
}

/// The level this library provides, whatever is requested.
const PROVIDED: ThreadLevel = ThreadLevel::Multiple;

// The claim behind `PROVIDED`: the handle may be shared (`Sync`) and moved (`Send`)
// between threads. Every call takes `&self`; the state it changes is atomic or behind
// a lock (the collective state, a team's counters, the progress watcher), so calls
// from several threads at once are safe. Two threads running collectives on the same
// team at once are serialised by the team's lock; OpenSHMEM leaves their order to the
// program, which must make it the same on every PE.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<Shmem>();
    shared_between_threads::<super::Ctx>();
};

/// `init` with a thread level (`shmem_init_thread`): starts this PE like
/// [`init`](crate::init) and returns the handle with the level provided, which is
/// always [`ThreadLevel::Multiple`] (the handle is `Send + Sync` and every call is
/// thread-safe), so any `requested` level is met.
///
/// ```
/// use shmemplus::ThreadLevel;
/// let (shmem, provided) = shmemplus::init_thread(ThreadLevel::Funneled)?;
/// assert_eq!(provided, ThreadLevel::Multiple);
/// assert!(provided >= ThreadLevel::Funneled);
/// assert_eq!(shmem.query_thread(), provided);
/// // Calls from another thread at once are fine.
/// let other = shmem.clone();
/// std::thread::spawn(move || other.my_pe()).join().unwrap();
/// # Ok::<(), shmemplus::Error>(())
/// ```
pub fn init_thread(requested: ThreadLevel) -> Result<(Shmem, ThreadLevel)> {
    let shmem = init()?;
    debug_assert!(PROVIDED >= requested);
    Ok((shmem, PROVIDED))
}

impl Shmem {
    /// The thread level this library provides (`shmem_query_thread`): always
    /// [`ThreadLevel::Multiple`], also for a handle made by [`init`](crate::init).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// assert_eq!(shmem.query_thread(), shmemplus::ThreadLevel::Multiple);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn query_thread(&self) -> ThreadLevel {
        PROVIDED
    }
}
