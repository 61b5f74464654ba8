//! The board: its configuration ([`BoardConfig`]), the DMA engine (aligned spans,
//! exact-byte transfers) and the control registers (configure a bitfile, GO a kernel).
//!
//! This module owns the DMA span rule (how many bytes the engine really moves for a
//! request, which is what a caller charges time for), the bounds checks of host
//! transfers, and which bitfile is loaded and how many kernels run. It must not know
//! PEs, networks or routes and must not touch the mapping except through `memory`.
//!
//! It must not cost DMA time either. The one source of a DMA's time is the cluster
//! profile's `fpga_read` / `fpga_write` cost (`netsim`), which the library's emulation
//! charges and the model (`shmemplus-model`) predicts with. A board cannot own that
//! cost: the library charges a whole route at its initiator, including DMA on boards of
//! other nodes that the initiating process does not hold, so the cost must be readable
//! where no board is.
//!
//! Length: about 390 lines of code and 230 of unit tests.

use crate::error::BoardError;
use crate::kernel::{self, Bitfile, KernelRun};
use crate::memory::Mapping;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A board's settings.
///
/// ```
/// use fpga_mock::BoardConfig;
/// let c = BoardConfig::default();
/// assert_eq!((c.memory_bytes, c.dma_min_bytes, c.dma_align), (2 << 30, 32, 32));
/// assert!(c.done_waits_for_model);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BoardConfig {
    /// Board memory in bytes (default 2 GiB). Must be positive and a multiple of
    /// `dma_align`. Only the pages touched cost RAM.
    pub memory_bytes: u64,
    /// Smallest span the DMA engine moves, in bytes (default 32). Rounded up to
    /// `dma_align`; must then fit in `memory_bytes`.
    pub dma_min_bytes: u64,
    /// Alignment of DMA spans in bytes (default 32): a power of two.
    pub dma_align: u64,
    /// Whether DONE waits (sleeping) until GO + the kernel's modeled time (default
    /// `true`: the board keeps wall-clock time). `false` raises DONE as soon as the
    /// body has computed, for a caller that accounts for the modeled time itself on a
    /// clock of its own (a virtual clock): [`KernelRun::modeled_s`] gives it at GO.
    pub done_waits_for_model: bool,
}

impl Default for BoardConfig {
    fn default() -> Self {
        BoardConfig {
            memory_bytes: 2 << 30,
            dma_min_bytes: 32,
            dma_align: 32,
            done_waits_for_model: true,
        }
    }
}

impl BoardConfig {
    /// Checks the settings (see the field docs) and returns the effective minimum span
    /// (`dma_min_bytes` rounded up to `dma_align`).
    fn validate(&self) -> Result<u64, BoardError> {
        let bad = |s: String| Err(BoardError::BadConfig(s));
        if self.memory_bytes == 0 {
            return bad("memory_bytes is 0: give the board some memory".into());
        }
        if !self.dma_align.is_power_of_two() {
            return bad(format!(
                "dma_align {} is not a power of two (use e.g. 32)",
                self.dma_align
            ));
        }
        if self.memory_bytes % self.dma_align != 0 {
            return bad(format!(
                "memory_bytes {} is not a multiple of dma_align {}: round it down to {}",
                self.memory_bytes,
                self.dma_align,
                self.memory_bytes / self.dma_align * self.dma_align
            ));
        }
        let min_span = round_up(self.dma_min_bytes, self.dma_align)
            .filter(|&m| m <= self.memory_bytes)
            .ok_or_else(|| {
                BoardError::BadConfig(format!(
                    "dma_min_bytes {} (rounded up to dma_align {}) exceeds memory_bytes {}",
                    self.dma_min_bytes, self.dma_align, self.memory_bytes
                ))
            })?;
        Ok(min_span)
    }
}

/// `x` rounded up to a multiple of `align` (a power of two); `None` on overflow.
fn round_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

/// The aligned span the DMA engine actually moves for a request (what a caller charges
/// DMA time for, with the profile's cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DmaSpan {
    /// Start of the span in board memory (a multiple of `dma_align`).
    pub offset: u64,
    /// Length of the span in bytes (a multiple of `dma_align`; 0 only for an empty
    /// request).
    pub len: u64,
}

impl DmaSpan {
    /// One past the span's last byte. A span the board made lies inside its memory,
    /// so this never overflows; for a hand-made span past `u64::MAX` it saturates.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// What the board's control registers hold.
struct Control {
    bitfile: Option<Arc<Bitfile>>,
    running: usize,
}

fn lock(m: &Mutex<Control>) -> MutexGuard<'_, Control> {
    // Nothing panics while holding this lock (kernel bodies run without it).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Decrements the running-kernel count when dropped (by the worker, just before DONE).
struct RunningGuard(Arc<Mutex<Control>>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let mut control = lock(&self.0);
        control.running = control.running.saturating_sub(1);
    }
}

/// A mock FPGA board: memory, a DMA engine and kernels. `Send + Sync`: share it (e.g. in
/// an `Arc`) between a progress thread doing DMA, user threads and kernel workers.
///
/// Dropping the board while kernels run is allowed: their workers keep the memory
/// mapped until they finish.
///
/// ```
/// use fpga_mock::{Board, BoardConfig, DmaSpan};
/// let board = Board::new(BoardConfig::default())?; // 2 GiB, costs nothing until touched
/// let span = board.write(1000, b"hello")?;
/// assert_eq!(span, DmaSpan { offset: 992, len: 32 }); // the engine moved one aligned block
/// let mut out = [0u8; 7];
/// board.read(999, &mut out)?;
/// assert_eq!(&out, b"\0hello\0");
/// # Ok::<(), fpga_mock::BoardError>(())
/// ```
pub struct Board {
    config: BoardConfig,
    min_span: u64,
    mem: Arc<Mapping>,
    control: Arc<Mutex<Control>>,
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Board")
            .field("config", &self.config)
            .field("bitfile", &self.bitfile())
            .finish_non_exhaustive()
    }
}

impl Board {
    /// A board with zero-filled memory, no bitfile loaded.
    ///
    /// Memory is an anonymous private mapping with `MAP_NORESERVE`: only the pages
    /// touched cost RAM. Errors: [`BoardError::BadConfig`] for unusable settings,
    /// [`BoardError::Memory`] if the mapping is refused.
    ///
    /// ```
    /// use fpga_mock::{Board, BoardConfig, BoardError};
    /// let bad = BoardConfig { dma_align: 24, ..BoardConfig::default() };
    /// assert!(matches!(Board::new(bad), Err(BoardError::BadConfig(_))));
    /// ```
    pub fn new(config: BoardConfig) -> Result<Board, BoardError> {
        let min_span = config.validate()?;
        let mem = Arc::new(Mapping::new(config.memory_bytes)?);
        Ok(Board {
            config,
            min_span,
            mem,
            control: Arc::new(Mutex::new(Control {
                bitfile: None,
                running: 0,
            })),
        })
    }

    /// The board's settings.
    pub fn config(&self) -> &BoardConfig {
        &self.config
    }

    /// The span the DMA engine moves for a request of `len` bytes at `offset`.
    ///
    /// The rule, with `A = dma_align` and `M` = `dma_min_bytes` rounded up to `A`:
    /// 1. `offset + len` must not pass the memory end (checked arithmetic), else
    ///    [`BoardError::OutOfRange`].
    /// 2. An empty request moves nothing: `{ offset rounded down to A, len 0 }`.
    /// 3. Otherwise the start is `offset` rounded down to `A`, the end is
    ///    `offset + len` rounded up to `A` (never past the memory end, which is a
    ///    multiple of `A`).
    /// 4. A span shorter than `M` is extended to `M` past its start; if that would pass
    ///    the memory end, the span is instead the last `M` bytes of memory (its start
    ///    moves down, staying aligned). So a span is always aligned, at least `M` long,
    ///    inside memory, and covers the request.
    ///
    /// ```
    /// use fpga_mock::{Board, BoardConfig, DmaSpan};
    /// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
    /// assert_eq!(board.span(64, 64)?, DmaSpan { offset: 64, len: 64 });  // aligned
    /// assert_eq!(board.span(70, 64)?, DmaSpan { offset: 64, len: 96 });  // misaligned
    /// assert_eq!(board.span(4, 1)?, DmaSpan { offset: 0, len: 32 });     // short
    /// assert_eq!(board.span(4095, 1)?, DmaSpan { offset: 4064, len: 32 }); // last block
    /// assert!(board.span(4095, 2).is_err());
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn span(&self, offset: u64, len: u64) -> Result<DmaSpan, BoardError> {
        let memory = self.config.memory_bytes;
        let out_of_range = BoardError::OutOfRange {
            offset,
            len,
            memory,
        };
        let end = match offset.checked_add(len) {
            Some(end) if end <= memory => end,
            _ => return Err(out_of_range),
        };
        let mask = self.config.dma_align - 1;
        let start = offset & !mask;
        if len == 0 {
            return Ok(DmaSpan {
                offset: start,
                len: 0,
            });
        }
        // end <= memory, a multiple of the alignment: rounding up stays <= memory.
        let stop = round_up(end, self.config.dma_align).ok_or(out_of_range)?;
        if stop - start >= self.min_span {
            return Ok(DmaSpan {
                offset: start,
                len: stop - start,
            });
        }
        let start = match start.checked_add(self.min_span) {
            Some(stop) if stop <= memory => start,
            // min_span <= memory (checked by `new`), and both are aligned.
            _ => memory - self.min_span,
        };
        Ok(DmaSpan {
            offset: start,
            len: self.min_span,
        })
    }

    /// DMA write (host -> board) of exactly `data` at `offset`; returns the span the
    /// engine moved (for timing).
    ///
    /// The engine moves whole aligned blocks, so the edge blocks are read-modify-written;
    /// the net effect is exactly the requested bytes, and it is applied as such: bytes
    /// outside `[offset, offset + data.len())` never change, even if another thread
    /// writes them concurrently. A request past the memory end is
    /// [`BoardError::OutOfRange`] and writes nothing. No modeled time passes here (the
    /// caller charges the returned span).
    ///
    /// ```
    /// use fpga_mock::{Board, BoardConfig};
    /// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
    /// board.write(0, &[0xFF; 64])?;
    /// board.write(10, &[1, 2, 3])?;
    /// let mut out = [0u8; 5];
    /// board.read(9, &mut out)?;
    /// assert_eq!(out, [0xFF, 1, 2, 3, 0xFF]);
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<DmaSpan, BoardError> {
        let span = self.span(offset, byte_len(data.len()))?;
        self.mem.copy_in(offset, data)?;
        Ok(span)
    }

    /// DMA read (board -> host) of exactly `out.len()` bytes at `offset` into `out`;
    /// returns the span the engine moved. On [`BoardError::OutOfRange`] `out` is
    /// untouched.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<DmaSpan, BoardError> {
        let span = self.span(offset, byte_len(out.len()))?;
        self.mem.copy_out(offset, out)?;
        Ok(span)
    }

    /// Loads a bitfile, replacing the previous one. [`BoardError::Busy`] while a kernel
    /// runs (the board keeps its bitfile), [`BoardError::BadConfig`] for a bitfile with
    /// an empty name, duplicate kernel names or an invalid timing. Board memory is kept.
    ///
    /// ```
    /// use fpga_mock::{kernels, Board, BoardConfig};
    /// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
    /// assert_eq!(board.bitfile(), None);
    /// board.configure(kernels::standard_bitfile())?;
    /// assert_eq!(board.bitfile().as_deref(), Some(kernels::STANDARD_BITFILE));
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn configure(&self, bitfile: Bitfile) -> Result<(), BoardError> {
        bitfile.validate().map_err(BoardError::BadConfig)?;
        let mut control = lock(&self.control);
        if control.running > 0 {
            return Err(BoardError::Busy);
        }
        control.bitfile = Some(Arc::new(bitfile));
        Ok(())
    }

    /// The name of the loaded bitfile, if any.
    pub fn bitfile(&self) -> Option<String> {
        lock(&self.control).bitfile.as_ref().map(|b| b.name.clone())
    }

    /// The number of kernels started and not yet DONE.
    pub fn running_kernels(&self) -> usize {
        lock(&self.control).running
    }

    /// GO: starts `kernel` of the loaded bitfile with `args` on a worker thread and
    /// returns its DONE handle. GO is recorded now; DONE is raised once the body has
    /// finished *and* `timing.seconds(elements(args))` has passed since GO (or, with
    /// [`BoardConfig::done_waits_for_model`] off, as soon as the body has finished). Several
    /// kernels may run at once; overlapping memory is their race.
    ///
    /// Errors: [`BoardError::NotConfigured`], [`BoardError::NoSuchKernel`] (listing
    /// the available kernels), [`BoardError::Spawn`]. A failing or panicking body is
    /// reported through the handle ([`BoardError::KernelFailed`],
    /// [`BoardError::KernelPanicked`]) as soon as it happens.
    ///
    /// ```
    /// use fpga_mock::{kernels, Board, BoardConfig, BoardError};
    /// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
    /// assert_eq!(board.start("add-one", &[]).unwrap_err(), BoardError::NotConfigured);
    /// board.configure(kernels::standard_bitfile())?;
    /// let err = board.start(kernels::FAIL, &[])?.wait().unwrap_err();
    /// assert!(matches!(err, BoardError::KernelFailed { .. }));
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn start(&self, kernel: &str, args: &[u64]) -> Result<KernelRun, BoardError> {
        self.start_at(kernel, args, 0)
    }

    /// GO at instant `go_ns` of [`netsim::now_ns`]'s clock, or now if it has passed: as
    /// [`Board::start`], but the kernel's body starts no earlier than `go_ns`, and with
    /// [`BoardConfig::done_waits_for_model`] DONE comes no earlier than `go_ns` plus
    /// the modeled time. The caller is not held: a host that queued a DMA into the
    /// board gives GO for the DMA's completion, as a board's in-order command queue
    /// would run it. The run counts as running from this call, so the board cannot be
    /// reconfigured under a pending GO.
    ///
    /// ```
    /// use fpga_mock::{kernels, Board, BoardConfig};
    /// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
    /// board.configure(kernels::standard_bitfile())?;
    /// let go = netsim::now_ns() + 2_000_000;
    /// let run = board.start_at("add-one", &[0, 0], go)?;
    /// run.wait()?;
    /// assert!(netsim::now_ns() >= go);
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn start_at(
        &self,
        kernel: &str,
        args: &[u64],
        go_ns: u64,
    ) -> Result<KernelRun, BoardError> {
        let go_ns = go_ns.max(netsim::now_ns());
        let found = {
            let mut control = lock(&self.control);
            let bitfile = control.bitfile.as_ref().ok_or(BoardError::NotConfigured)?;
            let found = bitfile
                .kernels
                .iter()
                .find(|k| k.name == kernel)
                .cloned()
                .ok_or_else(|| BoardError::NoSuchKernel {
                    kernel: kernel.to_string(),
                    bitfile: bitfile.name.clone(),
                    available: bitfile.kernel_names(),
                })?;
            control.running += 1;
            found
        };
        // From here the guard owns the "running" count: dropped by the worker just
        // before DONE, or right away if the worker cannot start.
        let guard = RunningGuard(Arc::clone(&self.control));
        let hold = self.config.done_waits_for_model;
        kernel::launch(
            Arc::clone(&self.mem),
            found,
            args.to_vec(),
            go_ns,
            hold,
            guard,
        )
    }

    /// Bytes of board memory backed by RAM now (`mincore(2)` on the mapping, whole
    /// pages). If the query fails (not expected on Linux) this reports the whole board,
    /// the safe over-estimate; see [`Board::try_resident_bytes`].
    ///
    /// ```
    /// use fpga_mock::{Board, BoardConfig};
    /// let board = Board::new(BoardConfig::default())?; // 2 GiB
    /// board.write(0, &[1u8; 4096])?;
    /// assert!(board.resident_bytes() < 64 << 20);
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn resident_bytes(&self) -> u64 {
        self.try_resident_bytes()
            .unwrap_or(self.config.memory_bytes)
    }

    /// [`Board::resident_bytes`], with the query's failure as [`BoardError::Memory`].
    pub fn try_resident_bytes(&self) -> Result<u64, BoardError> {
        self.mem.resident_bytes()
    }
}

/// A slice length as u64 (saturating: a slice longer than u64::MAX cannot exist, and a
/// saturated length is out of range anyway).
fn byte_len(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(memory_bytes: u64) -> Board {
        Board::new(BoardConfig {
            memory_bytes,
            ..BoardConfig::default()
        })
        .expect("board")
    }

    fn span(offset: u64, len: u64) -> DmaSpan {
        DmaSpan { offset, len }
    }

    #[test]
    fn board_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Board>();
        check::<KernelRun>();
    }

    #[test]
    fn span_aligned() {
        let b = board(4096);
        assert_eq!(b.span(0, 32), Ok(span(0, 32)));
        assert_eq!(b.span(64, 128), Ok(span(64, 128)));
        assert_eq!(b.span(0, 4096), Ok(span(0, 4096)));
    }

    #[test]
    fn span_misaligned_start_and_end() {
        let b = board(4096);
        assert_eq!(b.span(33, 31), Ok(span(32, 32)), "start only");
        assert_eq!(b.span(32, 33), Ok(span(32, 64)), "end only");
        assert_eq!(b.span(31, 2), Ok(span(0, 64)), "straddles a block edge");
        assert_eq!(b.span(100, 1000), Ok(span(96, 1024)));
    }

    #[test]
    fn span_shorter_than_minimum() {
        // Minimum 128 bytes, alignment 32.
        let b = Board::new(BoardConfig {
            memory_bytes: 4096,
            dma_min_bytes: 128,
            ..BoardConfig::default()
        })
        .expect("board");
        assert_eq!(b.span(40, 1), Ok(span(32, 128)));
        assert_eq!(b.span(40, 100), Ok(span(32, 128)));
        assert_eq!(
            b.span(40, 200),
            Ok(span(32, 224)),
            "longer than the minimum"
        );
        // A minimum that is not a multiple of the alignment is rounded up to it.
        let odd = Board::new(BoardConfig {
            memory_bytes: 4096,
            dma_min_bytes: 40,
            ..BoardConfig::default()
        })
        .expect("board");
        assert_eq!(odd.span(0, 1), Ok(span(0, 64)));
        // No minimum: one block.
        let none = Board::new(BoardConfig {
            memory_bytes: 4096,
            dma_min_bytes: 0,
            ..BoardConfig::default()
        })
        .expect("board");
        assert_eq!(none.span(5, 1), Ok(span(0, 32)));
    }

    #[test]
    fn span_at_the_end_of_memory() {
        let b = Board::new(BoardConfig {
            memory_bytes: 4096,
            dma_min_bytes: 128,
            ..BoardConfig::default()
        })
        .expect("board");
        // The last byte: the minimum would pass the end, so the span is the last 128.
        assert_eq!(b.span(4095, 1), Ok(span(3968, 128)));
        assert_eq!(b.span(4000, 96), Ok(span(3968, 128)));
        // Ends exactly at the memory end, long enough.
        assert_eq!(b.span(3900, 196), Ok(span(3872, 224)));
        // Empty request at the very end: in range, moves nothing.
        assert_eq!(b.span(4096, 0), Ok(span(4096, 0)));
        assert_eq!(b.span(70, 0), Ok(span(64, 0)));
        // The whole board.
        assert_eq!(b.span(0, 4096), Ok(span(0, 4096)));
    }

    #[test]
    fn every_span_covers_the_request_and_stays_aligned() {
        let b = Board::new(BoardConfig {
            memory_bytes: 1024,
            dma_min_bytes: 96,
            ..BoardConfig::default()
        })
        .expect("board");
        for offset in 0..1024u64 {
            for len in [1u64, 2, 31, 32, 33, 95, 96, 97, 200] {
                let Ok(s) = b.span(offset, len) else {
                    assert!(offset + len > 1024);
                    continue;
                };
                assert_eq!(s.offset % 32, 0);
                assert_eq!(s.len % 32, 0);
                assert!(s.len >= 96);
                assert!(s.offset <= offset && s.end() >= offset + len);
                assert!(s.end() <= 1024);
            }
        }
    }

    #[test]
    fn out_of_range() {
        let b = board(4096);
        let oor = |offset, len| BoardError::OutOfRange {
            offset,
            len,
            memory: 4096,
        };
        assert_eq!(b.span(4096, 1), Err(oor(4096, 1)));
        assert_eq!(b.span(4000, 97), Err(oor(4000, 97)));
        assert_eq!(
            b.span(u64::MAX, 1),
            Err(oor(u64::MAX, 1)),
            "offset + len overflows"
        );
        assert_eq!(b.span(1, u64::MAX), Err(oor(1, u64::MAX)));
        assert_eq!(b.span(4097, 0), Err(oor(4097, 0)));
        // No partial write: the in-range part of a refused write is untouched.
        assert_eq!(b.write(4090, &[9; 8]), Err(oor(4090, 8)));
        assert_eq!(b.write(u64::MAX - 2, &[9; 8]), Err(oor(u64::MAX - 2, 8)));
        let mut out = [1u8; 6];
        b.read(4090, &mut out).expect("read");
        assert_eq!(out, [0; 6]);
        // A refused read leaves the buffer alone.
        let mut out = [7u8; 8];
        assert_eq!(b.read(4090, &mut out), Err(oor(4090, 8)));
        assert_eq!(out, [7; 8]);
    }

    #[test]
    fn edge_blocks_keep_their_neighbours() {
        let b = board(4096);
        b.write(0, &[0xEE; 4096]).expect("fill");
        // The last block, partly: the span reaches the end, the neighbours stay.
        assert_eq!(b.write(4070, &[1, 2, 3]), Ok(span(4064, 32)));
        let mut tail = [0u8; 32];
        b.read(4064, &mut tail).expect("read");
        let mut want = [0xEE; 32];
        want[6..9].copy_from_slice(&[1, 2, 3]);
        assert_eq!(tail, want);
        // The very last byte.
        b.write(4095, &[5]).expect("write");
        b.read(4064, &mut tail).expect("read");
        want[31] = 5;
        assert_eq!(tail, want);
    }

    #[test]
    fn bad_configs() {
        let bad = |c: BoardConfig| matches!(Board::new(c), Err(BoardError::BadConfig(_)));
        let d = BoardConfig::default;
        assert!(bad(BoardConfig {
            memory_bytes: 0,
            ..d()
        }));
        assert!(bad(BoardConfig {
            dma_align: 0,
            ..d()
        }));
        assert!(bad(BoardConfig {
            dma_align: 48,
            ..d()
        }));
        assert!(
            bad(BoardConfig {
                memory_bytes: 4100,
                ..d()
            }),
            "not a multiple of 32"
        );
        assert!(bad(BoardConfig {
            memory_bytes: 64,
            dma_min_bytes: 65,
            ..d()
        }));
        assert!(bad(BoardConfig {
            dma_min_bytes: u64::MAX,
            ..d()
        }));
        // Alignment 1 and a minimum equal to the memory are fine.
        let b = Board::new(BoardConfig {
            memory_bytes: 100,
            dma_min_bytes: 100,
            dma_align: 1,
            ..BoardConfig::default()
        })
        .expect("board");
        assert_eq!(b.span(50, 1), Ok(span(0, 100)));
    }

    #[test]
    fn a_2_gib_board_costs_only_what_is_touched() {
        let b = Board::new(BoardConfig::default()).expect("2 GiB board");
        assert_eq!(b.config().memory_bytes, 2 << 30);
        let before = b.try_resident_bytes().expect("mincore");
        assert_eq!(before, 0);
        let data = vec![0xA5u8; 1 << 20];
        // Spread over the board: 16 pieces of 64 KiB, 128 MiB apart.
        for i in 0..16u64 {
            let piece = &data[(i as usize) << 16..((i as usize) + 1) << 16];
            b.write(i * (128 << 20) + 12_345, piece).expect("write");
        }
        let resident = b.resident_bytes();
        assert!(resident >= 1 << 20, "{resident}");
        assert!(resident < 64 << 20, "{resident}");
        let mut back = vec![0u8; 1 << 16];
        b.read(15 * (128 << 20) + 12_345, &mut back).expect("read");
        assert!(back.iter().all(|&x| x == 0xA5));
    }
}
