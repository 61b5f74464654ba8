//! The launch protocol: the environment contract between a launcher (`shmemrun`, whose
//! job runtime is the `shmemplus-runtime` crate) and a PE, and the messages they
//! exchange over the bootstrap socket.
//!
//! This module owns names and wire formats only. It must not hold launcher logic (that
//! is the `shmemplus_runtime` crate) or PE start-up logic (that is `bootstrap`).
//!
//! # Environment contract
//!
//! A launcher exports to every PE:
//!
//! | variable | meaning |
//! |---|---|
//! | `SHMEMPLUS_PE` | this PE's rank, `0..n_pes` |
//! | `SHMEMPLUS_N_PES` | number of PEs in the job |
//! | `SHMEMPLUS_PES_PER_NODE` | PEs per simulated node (PE `p` is on node `p / pes_per_node`) |
//! | `SHMEMPLUS_NODES` | number of simulated nodes |
//! | `SHMEMPLUS_JOB_ID` | job-unique id (lower-case hex); every shared-memory name of the job starts with `shmemplus-<job id>-` |
//! | `SHMEMPLUS_BOOTSTRAP` | the launcher's bootstrap socket: `@name` for a Linux abstract socket, else a path |
//! | `SHMEMPLUS_SECRET` | per-job secret (hex); the first frame of every connection must carry it. A PE removes it from its environment at start-up, so the programs it starts do not inherit it |
//!
//! # Wire format
//!
//! Each frame is a little-endian `u32` length followed by that many bytes of a
//! postcard-encoded [`ToLauncher`] or [`ToPe`]. The first frame a PE sends is
//! [`ToLauncher::Auth`]; the launcher answers [`ToPe::Welcome`] or [`ToPe::Rejected`]
//! and closes. After that the PE may run any number of allgather rounds: it sends
//! [`ToLauncher::Allgather`] with round `r` and its bytes; when every PE has sent round
//! `r` the launcher sends each PE [`ToPe::Allgathered`] with the bytes of all PEs in
//! rank order. The launcher knows nothing of what the bytes mean. At `finalize` the PE
//! sends [`ToLauncher::Finalized`] and closes the connection. A PE that calls
//! `global_exit` sends [`ToLauncher::GlobalExit`] instead, and the launcher ends the job
//! with its code.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// Env var: this PE's rank.
pub const ENV_PE: &str = "SHMEMPLUS_PE";
/// Env var: number of PEs.
pub const ENV_N_PES: &str = "SHMEMPLUS_N_PES";
/// Env var: PEs per simulated node.
pub const ENV_PES_PER_NODE: &str = "SHMEMPLUS_PES_PER_NODE";
/// Env var: number of simulated nodes.
pub const ENV_NODES: &str = "SHMEMPLUS_NODES";
/// Env var: job id (hex), the prefix of every shared-memory name of the job.
pub const ENV_JOB_ID: &str = "SHMEMPLUS_JOB_ID";
/// Whether an MPI launcher (mpirun, mpiexec, srun) started this process: then each
/// rank is a PE and, with the `mpi` feature, `init` forms the job from MPI.
pub use crate::bootstrap::started_by_mpi;

/// Whether this build has the MPI conduit (the cargo feature `mpi`).
pub const MPI_CONDUIT: bool = cfg!(feature = "mpi");

/// Env var: the bootstrap socket address (`@abstract-name` or a path).
pub const ENV_BOOTSTRAP: &str = "SHMEMPLUS_BOOTSTRAP";
/// Env var: the per-job secret (hex).
pub const ENV_SECRET: &str = "SHMEMPLUS_SECRET";

/// Largest frame either side accepts (guards against a corrupt length prefix).
pub const MAX_FRAME_BYTES: u32 = 64 << 20;

/// The prefix of every `/dev/shm` name that belongs to job `job_id`.
///
/// ```
/// assert_eq!(shmemplus::launch::shm_prefix("ab12"), "shmemplus-ab12-");
/// ```
pub fn shm_prefix(job_id: &str) -> String {
    format!("shmemplus-{job_id}-")
}

/// A message from a PE to the launcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToLauncher {
    /// First frame of a connection: who the PE is and the job secret.
    Auth {
        /// The job secret from `SHMEMPLUS_SECRET`.
        secret: String,
        /// The PE's rank.
        pe: u32,
        /// The PE's process id (for messages and liveness).
        pid: u32,
    },
    /// This PE's contribution to allgather round `round`.
    Allgather {
        /// Round number; rounds are numbered from 0 and run in order.
        round: u32,
        /// Opaque bytes.
        data: Vec<u8>,
    },
    /// The PE has finalized: it will make no more collective calls, so its exit cannot
    /// strand the others. A PE that authenticated and then exits with status 0
    /// without sending this while other PEs still run ends the job (the others would
    /// wait for it forever).
    Finalized,
    /// The PE called `global_exit(code)`: the launcher ends every PE of the job and
    /// exits with `code`. The PE then waits (bounded) for the launcher to end it, or
    /// for the connection to close, and exits with `code` itself.
    GlobalExit {
        /// The exit code the job ends with.
        code: i32,
    },
}

/// A message from the launcher to a PE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToPe {
    /// The PE is authenticated.
    Welcome {
        /// Number of PEs in the job.
        n_pes: u32,
    },
    /// The connection is refused; the launcher closes it after this frame.
    Rejected {
        /// Why, for the PE's error message.
        reason: String,
    },
    /// Result of allgather round `round`: one entry per PE, in rank order.
    Allgathered {
        /// Round number.
        round: u32,
        /// The bytes every PE sent for this round, indexed by PE.
        data: Vec<Vec<u8>>,
    },
}

/// Writes one frame (length prefix + postcard body) to a blocking writer.
pub fn write_frame<W: Write, M: Serialize>(w: &mut W, msg: &M) -> io::Result<()> {
    w.write_all(&encode(msg)?)?;
    w.flush()
}

/// Checks a frame's length prefix against `max` and returns the body length.
pub fn frame_len(prefix: [u8; 4], max: u32) -> io::Result<usize> {
    let len = u32::from_le_bytes(prefix);
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bootstrap frame of {len} bytes exceeds the limit of {max}"),
        ));
    }
    Ok(len as usize)
}

/// Reads one frame from a blocking reader.
pub fn read_frame<R: Read, M: for<'de> Deserialize<'de>>(r: &mut R) -> io::Result<M> {
    let mut prefix = [0u8; 4];
    r.read_exact(&mut prefix)?;
    let mut body = vec![0u8; frame_len(prefix, MAX_FRAME_BYTES)?];
    r.read_exact(&mut body)?;
    decode(&body)
}

/// Decodes a frame body (without its length prefix); for async readers that read the
/// prefix and body themselves.
pub fn decode<M: for<'de> Deserialize<'de>>(body: &[u8]) -> io::Result<M> {
    postcard::from_bytes(body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Encodes a message as a whole frame (length prefix + body); for async writers.
pub fn encode<M: Serialize>(msg: &M) -> io::Result<Vec<u8>> {
    let body = postcard::to_allocvec(msg).map_err(io::Error::other)?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| l <= MAX_FRAME_BYTES)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let msg = ToLauncher::Allgather {
            round: 7,
            data: vec![1, 2, 3],
        };
        let mut buf = Vec::new();
        write_frame(&mut buf, &msg).unwrap();
        assert_eq!(buf, encode(&msg).unwrap());
        let back: ToLauncher = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn oversized_length_is_rejected() {
        let mut buf = (MAX_FRAME_BYTES + 1).to_le_bytes().to_vec();
        buf.extend_from_slice(&[0; 8]);
        let err = read_frame::<_, ToPe>(&mut buf.as_slice()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
