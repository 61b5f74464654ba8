//! The handle's board calls: how many boards, their partition size, loading a
//! bitfile and starting a kernel (GO / DONE), and [`BoardRun`], a run whose DONE is
//! reached on the job clock.
//!
//! This module owns argument checking of those calls and charging a kernel's modeled
//! time on the virtual clock. It must not move data to or from boards (`route` does)
//! nor implement a board (`fpga`, `fpga-mock`).

use super::Shmem;
use crate::error::{Error, Result};
use fpga_mock::{KernelDone, KernelRun};
use std::fmt;

/// A board kernel run started by [`Shmem::kernel_start`]: its DONE is reached on the
/// job clock.
///
/// On the wall clock it is the board's own run ([`fpga_mock::KernelRun`]): DONE comes
/// once the kernel has computed and its modeled time has passed in real time. On the
/// virtual clock the board raises DONE as soon as the kernel has computed, and the
/// PE's clock is moved instead: the run holds the board's kernel unit from GO (the
/// PE's clock at `kernel_start`, the modeled delivery of the PE's puts into the board
/// before it, or the end of the runs started on the same board before, whichever is
/// latest) for its modeled time, and [`BoardRun::wait`] reaches
/// that end on the PE's clock. Each PE keeps its boards' busy-until instants in its
/// own memory: a PE runs kernels only on its own partitions of its node's boards.
pub struct BoardRun {
    shmem: Shmem,
    board: u32,
    run: KernelRun,
    /// The job clock (ns) at `kernel_start`.
    started_ns: u64,
    /// GO on the job clock (ns): `started_ns`, or the delivery of this PE's puts into
    /// the board if that is later.
    go_ns: u64,
    /// Virtual clock: the instant DONE is modeled at. `None` on the wall clock.
    done_ns: Option<u64>,
}

impl BoardRun {
    /// The board the kernel runs on.
    pub fn board(&self) -> u32 {
        self.board
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        self.run.kernel()
    }

    /// The run's modeled seconds from GO to DONE (RATSS), known at GO.
    pub fn modeled_s(&self) -> f64 {
        self.run.modeled_s()
    }

    /// On the virtual clock, the instant DONE is modeled at, on the job clock (as
    /// [`Shmem::now`] reads it): a PE that drives several boards from one thread
    /// compares it with `now()` to see which run is done by now without moving its
    /// clock, and waits for the earliest. `None` on the wall clock, where DONE is
    /// real.
    pub fn done_at(&self) -> Option<std::time::Duration> {
        self.done_ns.map(std::time::Duration::from_nanos)
    }

    /// Blocks until DONE and returns the run's report. Its `elapsed_s` is the time on
    /// the job clock from `kernel_start` to DONE: on the wall clock real time (the
    /// wait for this PE's puts into the board included); on the virtual clock the
    /// modeled time plus any wait for those puts and for earlier runs on the board,
    /// which the PE's clock has reached on return. A failing or panicking kernel is
    /// [`Error::Board`] (and charges nothing).
    pub fn wait(&self) -> Result<KernelDone> {
        let _call = self.shmem.inner.clock.enter();
        let done = self.run.wait().map_err(|source| Error::Board {
            board: self.board,
            source,
        })?;
        Ok(self.reached(done))
    }

    /// Non-blocking DONE check: `Ok(None)` while the kernel computes; once it has, as
    /// [`BoardRun::wait`] (on the virtual clock, seeing DONE reaches its instant).
    pub fn test(&self) -> Result<Option<KernelDone>> {
        let _call = self.shmem.inner.clock.enter();
        match self.run.test() {
            None => Ok(None),
            Some(Ok(done)) => Ok(Some(self.reached(done))),
            Some(Err(source)) => Err(Error::Board {
                board: self.board,
                source,
            }),
        }
    }

    /// On the virtual clock: reaches DONE's instant and reports the time on it. On the
    /// wall clock the board measured from GO: the wait for GO is added.
    fn reached(&self, mut done: KernelDone) -> KernelDone {
        match self.done_ns {
            Some(t) => {
                self.shmem.inner.clock.reach(t);
                done.elapsed_s = t.saturating_sub(self.started_ns) as f64 / 1e9;
            }
            None => done.elapsed_s += self.go_ns.saturating_sub(self.started_ns) as f64 / 1e9,
        }
        done
    }
}

impl fmt::Debug for BoardRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoardRun")
            .field("board", &self.board)
            .field("run", &self.run)
            .field("started_ns", &self.started_ns)
            .field("done_ns", &self.done_ns)
            .finish()
    }
}

impl Shmem {
    /// Boards per node in this job (`shmemrun --fpgas`, else the profile's).
    pub fn fpgas(&self) -> u32 {
        self.inner.boards.count()
    }

    /// Bytes of this PE's partition of each board: its FPGA symmetric heap size.
    pub fn fpga_heap_bytes(&self) -> u64 {
        self.inner.boards.partition_bytes()
    }

    /// Loads a bitfile (a named set of kernels) into this PE's partition of board `b`.
    pub fn fpga_configure(&self, b: u32, bitfile: fpga_mock::Bitfile) -> Result<()> {
        self.live()?;
        self.inner
            .boards
            .board(b)?
            .configure(bitfile)
            .map_err(|source| Error::Board { board: b, source })
    }

    /// GO: starts `kernel` of the loaded bitfile on board `b` with `args` (offsets are
    /// heap offsets of objects on that board: [`SymVec::heap_offset`]). Wait for DONE
    /// with the returned run's `wait` or `test`; a failing or panicking kernel reports
    /// its error there, and the board stays usable.
    ///
    /// This is the board's own run: its DONE does not move the virtual clock, and its
    /// GO does not wait for the modeled delivery of this PE's puts into the board (the
    /// bytes are in place when a put returns). Use [`Shmem::kernel_start`] to run
    /// kernels in the job's time on either clock.
    ///
    /// ```
    /// use shmemplus::{fpga_mock::kernels::standard_bitfile, Place};
    /// let shmem = shmemplus::init()?;
    /// if shmem.fpgas() > 0 {
    ///     let v = shmem.alloc::<u32>(4, Place::Fpga(0))?;
    ///     shmem.local_write(&v, 0, &[1, 2, 3, 4])?;
    ///     shmem.fpga_configure(0, standard_bitfile())?;
    ///     let run = shmem.fpga_start(0, "add-one", &[v.heap_offset() as u64, 4])?;
    ///     run.wait().map_err(|source| shmemplus::Error::Board { board: 0, source })?;
    ///     assert_eq!(shmem.local_to_vec(&v)?, [2, 3, 4, 5]);
    /// }
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn fpga_start(&self, b: u32, kernel: &str, args: &[u64]) -> Result<fpga_mock::KernelRun> {
        self.live()?;
        self.inner
            .boards
            .board(b)?
            .start(kernel, args)
            .map_err(|source| Error::Board { board: b, source })
    }

    /// GO on the job clock: starts `kernel` of the loaded bitfile on board `b` with
    /// `args`, as [`Shmem::fpga_start`], and returns a [`BoardRun`] whose
    /// [`wait`](BoardRun::wait) reaches DONE on the job clock. On the virtual clock the
    /// kernel's modeled time moves this PE's clock instead of passing in real time
    /// (runs on one board follow each other; runs on different boards overlap).
    ///
    /// **Ordering with this PE's puts into the board.** A kernel sees every put this
    /// PE issued into its own partition of board `b` before the GO, blocking or not
    /// ([`Shmem::put_nbi`]) and without a `quiet`: the board carries out one PE's
    /// commands in the order they were issued, as a DMA engine's queue does. So the
    /// kernel starts no earlier than the modeled delivery of the last of them. That
    /// delays the kernel, not the caller, on either clock (on the wall clock the
    /// board's worker waits for the delivery): a program can stage a board with
    /// `put_nbi`, start its kernel and compute on its CPU while the DMA runs.
    /// Puts by other PEs into the board are ordered by their own `quiet`, as in
    /// OpenSHMEM.
    ///
    /// ```
    /// use shmemplus::{fpga_mock::kernels::standard_bitfile, Place};
    /// let shmem = shmemplus::init()?;
    /// if shmem.fpgas() > 0 {
    ///     let v = shmem.alloc::<u32>(4, Place::Fpga(0))?;
    ///     shmem.local_write(&v, 0, &[1, 2, 3, 4])?;
    ///     shmem.fpga_configure(0, standard_bitfile())?;
    ///     let t0 = shmem.now();
    ///     let run = shmem.kernel_start(0, "add-one", &[v.heap_offset() as u64, 4])?;
    ///     let done = run.wait()?;
    ///     // On either clock, DONE is not before GO + the modeled time.
    ///     assert!((shmem.now() - t0).as_secs_f64() >= done.modeled_s - 1e-9);
    ///     assert_eq!(shmem.local_to_vec(&v)?, [2, 3, 4, 5]);
    /// }
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn kernel_start(&self, b: u32, kernel: &str, args: &[u64]) -> Result<BoardRun> {
        let inner = self.live()?;
        let clock = &inner.clock;
        let _call = clock.enter();
        // This PE's puts into the board come first (see the doc above).
        let staged_ns = inner
            .emulation
            .as_ref()
            .map_or(0, |e| e.undelivered_to_board(b));
        let started_ns = clock.now_ns();
        let go_ns = started_ns.max(staged_ns);
        // On the wall clock the board's worker waits for GO (the caller does not), and
        // its DONE is real; on the virtual clock the body runs now, DONE is modeled.
        let real_go_ns = if clock.is_virtual() { 0 } else { go_ns };
        let run = inner
            .boards
            .board(b)?
            .start_at(kernel, args, real_go_ns)
            .map_err(|source| Error::Board { board: b, source })?;
        // Rounded up, as the board rounds its own wait; `as` saturates.
        let modeled_ns = (run.modeled_s() * 1e9).ceil() as u64;
        let done_ns = clock
            .is_virtual()
            .then(|| self.inner.boards.reserve_kernel_unit(b, go_ns, modeled_ns));
        let end = done_ns.unwrap_or(go_ns.saturating_add(modeled_ns));
        crate::trace::hop(
            crate::trace::Track::Kernel {
                node: self.node(),
                board: b,
            },
            "kernel",
            (end.saturating_sub(modeled_ns), end),
            run.elements(),
            crate::trace::Peers::Board { pe: self.my_pe() },
        );
        Ok(BoardRun {
            shmem: self.clone(),
            board: b,
            run,
            started_ns,
            go_ns,
            done_ns,
        })
    }

    /// Bytes of this PE's board memory backed by RAM now (boards are lazily backed).
    pub fn fpga_resident_bytes(&self) -> u64 {
        self.inner.boards.resident_bytes()
    }
}
