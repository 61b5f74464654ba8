//! The library's error type. Owns the error vocabulary and its messages; every message
//! says what went wrong and what to do. It must not hold recovery logic.

use std::io;

/// Everything that can go wrong in a shmemplus call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The launcher options or environment describe an impossible job shape.
    #[error("bad topology: {0}")]
    BadTopology(String),
    /// The environment set by the launcher is missing or malformed.
    #[error("bad launch environment: {0} (start the program with shmemrun, or without any SHMEMPLUS_* variables for a one-PE job)")]
    BadEnvironment(String),
    /// A configuration variable has a value that cannot be used.
    #[error("bad value for {var}: {why}")]
    BadConfig {
        /// The environment variable.
        var: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// Talking to the launcher failed during start-up.
    #[error("bootstrap failed: {0}")]
    Bootstrap(String),
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What the library was doing.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `init` was called while a handle is alive, or after the job was finalized.
    #[error("shmemplus is already initialized in this process (one init per process; clone the handle to share it)")]
    AlreadyInitialized,
    /// The handle was finalized; no further calls are possible.
    #[error("shmemplus was finalized; no call may follow finalize")]
    Finalized,
    /// A PE number outside `0..n_pes`.
    #[error("invalid PE {pe}: this job has PEs 0..{n_pes}")]
    InvalidPe {
        /// The PE asked for.
        pe: u32,
        /// Number of PEs in the job.
        n_pes: u32,
    },
    /// An element range that does not fit in the symmetric object.
    #[error("out of bounds: elements {start}..{end} of a symmetric object of {len} elements")]
    OutOfBounds {
        /// First element of the access.
        start: usize,
        /// One past the last element of the access.
        end: usize,
        /// Length of the object in elements.
        len: usize,
    },
    /// An operation that a place does not support (e.g. borrowing board memory).
    #[error("{0}")]
    PlaceUnavailable(String),
    /// A board index outside the boards of the node.
    #[error("invalid board {board}: each node has boards 0..{boards} (shmemrun --fpgas or the profile sets the count)")]
    InvalidBoard {
        /// The board asked for.
        board: u32,
        /// Boards per node.
        boards: u32,
    },
    /// The job's nodes have no boards.
    #[error("this job's nodes have no FPGA boards (run with shmemrun --fpgas N or a profile with boards_per_node > 0)")]
    NoBoards,
    /// A board refused an operation (range, kernel, configuration).
    #[error("board {board}: {source}")]
    Board {
        /// The board.
        board: u32,
        /// What the board said.
        #[source]
        source: fpga_mock::BoardError,
    },
    /// The symmetric heap has no room for the allocation.
    #[error("symmetric heap exhausted: {requested} bytes requested, largest free block {largest_free} of {heap} bytes; raise SHMEM_SYMMETRIC_SIZE")]
    HeapExhausted {
        /// Bytes asked for (after alignment).
        requested: usize,
        /// The largest free block.
        largest_free: usize,
        /// The heap size.
        heap: usize,
    },
    /// A board partition has no room for the allocation.
    #[error("FPGA heap of board {board} exhausted: {requested} bytes requested, largest free block {largest_free} of this PE's {partition}-byte partition; raise the profile's board_memory or run fewer PEs per node")]
    BoardHeapExhausted {
        /// The board.
        board: u32,
        /// Bytes asked for (after alignment).
        requested: usize,
        /// The largest free block.
        largest_free: usize,
        /// This PE's partition of the board.
        partition: usize,
    },
    /// A size or offset computed from the call's arguments does not fit in a machine
    /// word (e.g. an element count times the element size): no heap could hold it.
    #[error("size overflow: {what} does not fit in {bits}-bit arithmetic, so no heap can hold it; ask for fewer elements", bits = usize::BITS)]
    SizeOverflow {
        /// The computation that overflowed, with its operands.
        what: String,
    },
    /// PEs made different collective calls (sizes, order or kind).
    #[error("non-symmetric collective call: {0}")]
    NonSymmetric(String),
    /// A symmetric object used with a handle or job it does not belong to.
    #[error("symmetric object does not belong to this job or was freed")]
    ForeignObject,
    /// An active message named a handler that is not registered on the target.
    #[error("no active-message handler {handler} is registered on PE {pe}")]
    NoHandler {
        /// The handler id.
        handler: u16,
        /// The target PE.
        pe: u32,
    },
    /// An active message was malformed or refused by the target.
    #[error("active message failed on PE {pe}: {why}")]
    AmFailed {
        /// The target PE.
        pe: u32,
        /// The target's reason.
        why: String,
    },
    /// An argument outside what the call accepts.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The team was destroyed (or belongs to another `init`).
    #[error("the team was destroyed or does not belong to this job")]
    InvalidTeam,

    /// Every team slot is in use on some PE of the parent team.
    #[error("no free team slot: at most {max} teams per PE (world and shared included); destroy teams you no longer need")]
    TeamsExhausted {
        /// Teams a PE can belong to at once.
        max: usize,
    },

    /// A communication context that was destroyed, belongs to another `init`, or may
    /// not be used for the call (the default context cannot be destroyed).
    #[error("invalid context: {0}")]
    InvalidContext(String),

    /// The element type does not support the reduction (a bitwise one on floats).
    #[error("reduction {op} is not defined on {ty}")]
    UnsupportedReduction {
        /// The reduction.
        op: &'static str,
        /// The element type.
        ty: &'static str,
    },
}

impl Error {
    pub(crate) fn os(what: impl Into<String>, source: impl Into<io::Error>) -> Error {
        Error::Os {
            what: what.into(),
            source: source.into(),
        }
    }

    /// The byte size of `count` elements of `elem` bytes each, or
    /// [`Error::SizeOverflow`] naming the request when the product overflows.
    pub(crate) fn bytes_of(count: usize, elem: usize) -> Result<usize> {
        count.checked_mul(elem).ok_or_else(|| Error::SizeOverflow {
            what: format!("{count} elements of {elem} bytes"),
        })
    }
}

/// Shorthand for results of shmemplus calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;
