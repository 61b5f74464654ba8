//! The handle's board calls: how many boards, their partition size, loading a
//! bitfile and starting a kernel (GO / DONE).
//!
//! This module owns argument checking of those calls. It must not move data to or
//! from boards (`route` does) nor implement a board (`fpga`, `fpga-mock`).

use super::Shmem;
use crate::error::{Error, Result};

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

    /// Bytes of this PE's board memory backed by RAM now (boards are lazily backed).
    pub fn fpga_resident_bytes(&self) -> u64 {
        self.inner.boards.resident_bytes()
    }
}
