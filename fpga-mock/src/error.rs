//! The errors of a board: [`BoardError`].
//!
//! This module owns the error type and its messages (each says what to do). It must not
//! decide when an error happens: the board and kernel modules do.

/// Why a board refused an operation.
///
/// ```
/// use fpga_mock::{Board, BoardConfig, BoardError};
/// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
/// let err = board.write(4090, &[0; 8]).unwrap_err();
/// assert_eq!(err, BoardError::OutOfRange { offset: 4090, len: 8, memory: 4096 });
/// assert!(err.to_string().contains("offset + len <= 4096"));
/// # Ok::<(), BoardError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    /// An access of `len` bytes at `offset` does not fit in the board's `memory` bytes
    /// (or `offset + len` overflows).
    #[error(
        "board access of {len} bytes at offset {offset} is out of range: the board has \
         {memory} bytes (keep offset + len <= {memory}, or give the board more memory \
         with BoardConfig::memory_bytes)"
    )]
    OutOfRange {
        /// Requested offset in bytes.
        offset: u64,
        /// Requested length in bytes.
        len: u64,
        /// The board's memory size in bytes.
        memory: u64,
    },
    /// A kernel was started before any bitfile was loaded.
    #[error(
        "no bitfile is loaded on this board: call Board::configure with a bitfile \
         (e.g. fpga_mock::kernels::standard_bitfile()) before starting kernels"
    )]
    NotConfigured,
    /// The loaded bitfile has no kernel of that name.
    #[error(
        "bitfile {bitfile:?} has no kernel {kernel:?}; it has {available:?} (start one of \
         those, or configure the board with a bitfile that contains {kernel:?})"
    )]
    NoSuchKernel {
        /// The kernel asked for.
        kernel: String,
        /// The loaded bitfile.
        bitfile: String,
        /// The kernels the loaded bitfile does have.
        available: Vec<String>,
    },
    /// The kernel body returned an error.
    #[error(
        "kernel {kernel:?} failed: {why} (check the kernel's arguments and the data on the board)"
    )]
    KernelFailed {
        /// The kernel.
        kernel: String,
        /// What the kernel said.
        why: String,
    },
    /// The kernel body (or its element count function) panicked.
    #[error(
        "kernel {kernel:?} panicked: {message} (a bug in the kernel; the board is still \
         usable, but the kernel's output in board memory may be partial)"
    )]
    KernelPanicked {
        /// The kernel.
        kernel: String,
        /// The panic message.
        message: String,
    },
    /// A kernel is running: the board cannot be reconfigured now.
    #[error(
        "a kernel is running on this board: wait for its DONE (KernelRun::wait) before \
         loading another bitfile"
    )]
    Busy,
    /// The board memory could not be mapped or inspected.
    #[error("board memory: {0}")]
    Memory(String),
    /// The board or bitfile configuration is unusable.
    #[error("bad board configuration: {0}")]
    BadConfig(String),
    /// No worker thread could be started for a kernel.
    #[error(
        "cannot start a worker thread for kernel {kernel:?}: {why} (too many threads? \
         wait for running kernels before starting more)"
    )]
    Spawn {
        /// The kernel.
        kernel: String,
        /// What the OS said.
        why: String,
    },
}
