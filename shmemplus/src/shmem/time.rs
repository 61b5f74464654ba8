//! The job clock as programs see it: which clock runs ([`Shmem::clock`]), the time on
//! it ([`Shmem::now`]), modeled work ([`Shmem::advance`]) and whether computation counts
//! ([`Shmem::count_cpu_time`]). Owns only these entry points; the clock itself is
//! `clock`, and how operations advance it is `route` and `vtime`.

use super::Shmem;
use crate::config::ClockKind;
use std::time::Duration;

impl Shmem {
    /// The clock this job's modeled time runs on (`SHMEMPLUS_CLOCK`, `shmemrun --clock`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// println!("modeled time runs on the {} clock", shmem.clock().name());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn clock(&self) -> ClockKind {
        self.inner.clock.kind()
    }

    /// The time on this PE's job clock since `init`: real time on the wall clock,
    /// this PE's virtual time on the virtual clock (counting the computation since the
    /// last library call). Time every phase of a program with it, so that its report
    /// is in the clock the job runs on.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let t0 = shmem.now();
    /// shmem.barrier_all()?;
    /// assert!(shmem.now() >= t0);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn now(&self) -> Duration {
        let _call = self.inner.clock.enter();
        self.inner.clock.elapsed()
    }

    /// Models `work` of computation that the host does not do (a kernel of the
    /// cluster being simulated, say): adds it to the virtual clock, or sleeps for it on
    /// the wall clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// let shmem = shmemplus::init()?;
    /// let t0 = shmem.now();
    /// shmem.advance(Duration::from_micros(50));
    /// assert!(shmem.now() - t0 >= Duration::from_micros(50));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn advance(&self, work: Duration) {
        let _call = self.inner.clock.enter();
        self.inner.clock.advance(work);
    }

    /// Whether computation between library calls advances the virtual clock (on by
    /// default; no effect on the wall clock). A benchmark that times communication
    /// alone turns it off around its loops; the time spent so far is not counted
    /// either way.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// shmem.count_cpu_time(false);
    /// let t0 = shmem.now();
    /// let mut x = 0u64;
    /// for i in 0..100_000u64 {
    ///     x = std::hint::black_box(x.wrapping_add(i));
    /// }
    /// if shmem.clock() == shmemplus::config::ClockKind::Virtual {
    ///     assert_eq!(shmem.now(), t0);
    /// }
    /// shmem.count_cpu_time(true);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn count_cpu_time(&self, on: bool) {
        self.inner.clock.count_cpu_time(on);
    }

    /// Whether computation between library calls advances the virtual clock now (see
    /// [`Shmem::count_cpu_time`]; always false on the wall clock). A library that turns
    /// counting off for a while restores what it found.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let before = shmem.counts_cpu_time();
    /// shmem.count_cpu_time(false);
    /// assert!(!shmem.counts_cpu_time());
    /// shmem.count_cpu_time(before);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn counts_cpu_time(&self) -> bool {
        self.inner.clock.counts_cpu_time()
    }
}
