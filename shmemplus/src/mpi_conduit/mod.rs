//! The MPI conduit (cargo feature `mpi`): a job started by `mpirun`, `mpiexec` or
//! `srun`, where each MPI rank is a PE. This module owns the MPI side of start-up and
//! shutdown: initialising MPI (`MPI_THREAD_MULTIPLE`), the library version check
//! between ranks, finding the hosts (ranks that share memory, or groups of
//! `SHMEMPLUS_RANKS_PER_HOST` ranks), rank 0's configuration for every rank, the
//! exchange of segment names, and ending the job through `MPI_Abort`. The transport
//! between hosts is [`link`].
//!
//! It must not map segments (`shmem::init` does, with `segment`) nor know what the
//! records it carries mean (the AM engine does).
//!
//! Every MPI call here is made on a duplicate of `MPI_COMM_WORLD` that only the
//! library uses, so a program that uses MPI itself never receives our messages. An
//! MPI error ends the job (MPI's default handler, `MPI_ERRORS_ARE_FATAL`), which is
//! what a failed transfer between hosts must do: nobody could wait for it otherwise.

pub(crate) mod link;

use crate::error::Error;
use crate::topology::Topology;
use mpi::ffi;
use std::ffi::c_int;
use std::sync::OnceLock;

/// A communicator handle. Open MPI's is a pointer, hence this wrapper.
#[derive(Clone, Copy)]
pub(crate) struct Comm(pub(crate) ffi::MPI_Comm);

// SAFETY: MPI was initialised with MPI_THREAD_MULTIPLE (`start` refuses anything
// less), under which any thread may make MPI calls on a communicator concurrently;
// the handle itself is never written after `start`.
unsafe impl Send for Comm {}
// SAFETY: as for `Send`.
unsafe impl Sync for Comm {}

/// The library's communicator once MPI is up (for `abort`), and whether this library
/// initialised MPI (and so must finalise it).
static LIBRARY_COMM: OnceLock<(Comm, bool)> = OnceLock::new();

/// Bytes of the fixed-size identity every rank sends first: the library version,
/// NUL-padded, so that ranks of different versions still understand each other.
const IDENTITY_BYTES: usize = 64;

/// A job formed from MPI.
pub(crate) struct MpiStart {
    /// This PE (its MPI rank).
    pub(crate) pe: u32,
    /// The job's shape: a node of the topology is a host.
    pub(crate) topology: Topology,
    /// Job id (prefix of the segment names), from rank 0.
    pub(crate) job_id: String,
    /// Rank 0's `SHMEM_*` and `SHMEMPLUS_*` variables, which configure every rank.
    pub(crate) vars: Vec<(String, String)>,
    /// Ranks on this machine (sharing its cores), whatever the simulated hosts.
    pub(crate) machine_ranks: usize,
    comm: Comm,
}

/// What rank 0 sends every rank.
#[derive(serde::Serialize, serde::Deserialize)]
struct JobSettings {
    job_id: String,
    vars: Vec<(String, String)>,
}

/// Ends the process's MPI job with `code` if this library brought MPI up; returns if
/// not (no MPI job to end).
pub(crate) fn abort(code: i32) {
    if let Some((comm, _)) = LIBRARY_COMM.get() {
        // SAFETY: MPI is initialised (LIBRARY_COMM is set after MPI_Init_thread) and
        // MPI_Abort may be called from any thread; it does not return normally.
        unsafe { ffi::MPI_Abort(comm.0, code) };
    }
}

/// How long `MPI_Finalize` may wait for the other ranks after this PE's final
/// barrier. Every PE leaves that barrier within moments of the others, so a longer
/// wait means the PEs disagree on the number of barriers (a PE that returned early
/// from its work, say): the other PEs wait in a barrier this PE will never enter.
const FINALIZE_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Shuts MPI down at `finalize` if this library initialised it (after every PE is
/// done with the link: the caller has passed the final barrier and settled the link).
/// `MPI_Finalize` waits for every rank; if they do not all come within
/// `FINALIZE_LIMIT`, this PE ends the job with a message naming it instead of
/// hanging (mpirun then ends the others).
///
/// A PE that is panicking does not finalize: the other PEs may wait for it in a
/// barrier it will never enter, and MPI_Finalize would wait for them. It ends the job
/// at once with a message naming it, as under `shmemrun`.
pub(crate) fn finalize(me: u32) {
    let Some((_, ours)) = LIBRARY_COMM.get() else {
        return;
    };
    if std::thread::panicking() {
        crate::fatal::end_job(me as usize, "panicked");
    }
    let mut done: c_int = 0;
    // SAFETY: a plain query, allowed at any time after MPI_Init_thread.
    unsafe { ffi::MPI_Finalized(&mut done) };
    if !*ours || done != 0 {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::Builder::new()
        .name("shmemplus-finalize".into())
        .spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(FINALIZE_LIMIT)
            {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "shmemplus: PE {me}: MPI_Finalize waited {FINALIZE_LIMIT:?} for the other \
                     ranks after this PE's final barrier: another PE failed without ending \
                     the job (an error returned from main?), or the PEs made different \
                     numbers of barriers; ending the job"
                );
                // SAFETY: `_exit` ends the process at once without running exit
                // handlers, one of which would wait for MPI again.
                unsafe { libc::_exit(crate::fatal::FATAL_EXIT_CODE) };
            }
        });
    // SAFETY: MPI_Finalize after MPI_Init_thread, once (the flag above), from the
    // thread that finalises the library, with no library thread in MPI any more (the
    // progress thread has stopped and the link is settled).
    unsafe { ffi::MPI_Finalize() };
    let _ = tx.send(());
    if let Ok(watchdog) = watchdog {
        let _ = watchdog.join();
    }
}

fn check(rc: c_int, what: &str) -> Result<(), Error> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::Bootstrap(format!("{what} failed (MPI error {rc})")))
    }
}

/// Brings MPI up and forms the job: see the module doc. `local` reads this process's
/// environment (rank 0's is what counts).
pub(crate) fn start(local: impl Fn(&str) -> Option<String>) -> Result<MpiStart, Error> {
    let mut inited: c_int = 0;
    let mut provided: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time; MPI_Init_thread with null
    // argc/argv is allowed by MPI-2 and later, and is called only if MPI is not up.
    let ours = unsafe {
        check(ffi::MPI_Initialized(&mut inited), "MPI_Initialized")?;
        if inited == 0 {
            check(
                ffi::MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    ffi::RSMPI_THREAD_MULTIPLE,
                    &mut provided,
                ),
                "MPI_Init_thread",
            )?;
            true
        } else {
            check(ffi::MPI_Query_thread(&mut provided), "MPI_Query_thread")?;
            false
        }
    };
    // SAFETY: reading an MPI constant after initialisation.
    if provided < unsafe { ffi::RSMPI_THREAD_MULTIPLE } {
        return Err(Error::Bootstrap(format!(
            "the MPI library gives thread level {provided}, but shmemplus needs \
             MPI_THREAD_MULTIPLE (its progress thread and the program's threads call MPI)"
        )));
    }
    let mut comm = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: MPI is up; the out-pointers are valid for one write each.
    let comm = unsafe {
        check(
            ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, comm.as_mut_ptr()),
            "MPI_Comm_dup",
        )?;
        let comm = Comm(comm.assume_init());
        check(ffi::MPI_Comm_rank(comm.0, &mut rank), "MPI_Comm_rank")?;
        check(ffi::MPI_Comm_size(comm.0, &mut size), "MPI_Comm_size")?;
        comm
    };
    let _ = LIBRARY_COMM.set((comm, ours));
    // A PE that ends the job (`fatal::end_job`) ends every rank through MPI.
    crate::fatal::set_job_abort(abort);
    let (pe, n) = (rank as u32, size as u32);
    check_versions(comm, n)?;
    let settings = settings_from_rank0(comm, pe, &local)?;
    let var = |k: &str| {
        settings
            .vars
            .iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    };
    let hosts = host_of_each_rank(comm, n)?;
    let per_host = crate::bootstrap::ranks_per_host(&hosts, var("SHMEMPLUS_RANKS_PER_HOST"))?;
    let topology = Topology::resolve(n, Some(per_host), None)?;
    let machine_ranks = hosts.iter().filter(|&&h| h == hosts[pe as usize]).count();
    Ok(MpiStart {
        pe,
        topology,
        job_id: settings.job_id,
        vars: settings.vars,
        machine_ranks,
        comm,
    })
}

/// Every rank sends its library version in a fixed-size record; any difference is
/// the same error on every rank, naming the first rank that differs from rank 0.
fn check_versions(comm: Comm, n: u32) -> Result<(), Error> {
    let mut mine = [0u8; IDENTITY_BYTES];
    // A test hook: `SHMEMPLUS_TEST_VERSION` stands for this rank's version, so that a
    // job of mismatched ranks can be tried with one build.
    let version = match std::env::var("SHMEMPLUS_TEST_VERSION") {
        Ok(v) => format!("shmemplus {v}"),
        Err(_) => concat!("shmemplus ", env!("CARGO_PKG_VERSION")).to_string(),
    };
    let version = &version.as_bytes()[..version.len().min(IDENTITY_BYTES)];
    mine[..version.len()].copy_from_slice(version);
    let all = allgather_fixed(comm, n, &mine)?;
    let text = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .trim_end_matches('\0')
            .to_string()
    };
    let first = text(&all[..IDENTITY_BYTES]);
    for (rank, id) in all.chunks_exact(IDENTITY_BYTES).enumerate() {
        if id != &all[..IDENTITY_BYTES] {
            return Err(Error::Bootstrap(format!(
                "mismatched library versions: rank 0 runs {first} but rank {rank} runs {}; \
                 build every rank from the same shmemplus",
                text(id)
            )));
        }
    }
    Ok(())
}

/// Rank 0's job id and configuration variables, broadcast to every rank.
fn settings_from_rank0(
    comm: Comm,
    pe: u32,
    local: &impl Fn(&str) -> Option<String>,
) -> Result<JobSettings, Error> {
    let mut bytes = Vec::new();
    if pe == 0 {
        let vars = std::env::vars()
            .filter(|(k, _)| {
                (k.starts_with("SHMEM_") || k.starts_with("SHMEMPLUS_")) && k != "SHMEMPLUS_SECRET"
            })
            .filter_map(|(k, _)| local(&k).map(|v| (k, v)))
            .collect();
        let settings = JobSettings {
            job_id: random_job_id()?,
            vars,
        };
        bytes = postcard::to_allocvec(&settings).map_err(|e| Error::Bootstrap(e.to_string()))?;
    }
    let mut len = bytes.len() as u64;
    // SAFETY: MPI is up; `len` is one u64 on every rank.
    let rc = unsafe {
        ffi::MPI_Bcast(
            (&mut len as *mut u64).cast(),
            1,
            ffi::RSMPI_UINT64_T,
            0,
            comm.0,
        )
    };
    check(rc, "MPI_Bcast")?;
    let len = c_int::try_from(len)
        .map_err(|_| Error::Bootstrap(format!("rank 0's settings of {len} bytes are too large")))?;
    bytes.resize(len as usize, 0);
    // SAFETY: `bytes` holds `len` bytes on every rank (resized above).
    let rc = unsafe {
        ffi::MPI_Bcast(
            bytes.as_mut_ptr().cast(),
            len,
            ffi::RSMPI_UINT8_T,
            0,
            comm.0,
        )
    };
    check(rc, "MPI_Bcast")?;
    postcard::from_bytes(&bytes)
        .map_err(|e| Error::Bootstrap(format!("malformed settings from rank 0: {e}")))
}

/// A fresh job id: 16 random hex digits (the segment names add 128 random bits more).
fn random_job_id() -> Result<String, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Bootstrap(format!("reading random bytes for a job id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// For each rank, the lowest rank on the same real host (ranks that can share
/// memory: `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`).
fn host_of_each_rank(comm: Comm, n: u32) -> Result<Vec<u32>, Error> {
    let mut shared = std::mem::MaybeUninit::<ffi::MPI_Comm>::uninit();
    let mut me: c_int = 0;
    let mut lowest: c_int = 0;
    // SAFETY: MPI is up; the split communicator is freed before returning.
    unsafe {
        check(ffi::MPI_Comm_rank(comm.0, &mut me), "MPI_Comm_rank")?;
        check(
            ffi::MPI_Comm_split_type(
                comm.0,
                ffi::RSMPI_COMM_TYPE_SHARED,
                me,
                ffi::RSMPI_INFO_NULL,
                shared.as_mut_ptr(),
            ),
            "MPI_Comm_split_type",
        )?;
        let mut shared = shared.assume_init();
        let rc = ffi::MPI_Allreduce(
            (&me as *const c_int).cast(),
            (&mut lowest as *mut c_int).cast(),
            1,
            ffi::RSMPI_INT32_T,
            ffi::RSMPI_MIN,
            shared,
        );
        ffi::MPI_Comm_free(&mut shared);
        check(rc, "MPI_Allreduce")?;
    }
    let all = allgather_fixed(comm, n, &(lowest as u32).to_le_bytes())?;
    Ok(all
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Gathers `mine` (the same size on every rank) from every rank, in rank order.
fn allgather_fixed(comm: Comm, n: u32, mine: &[u8]) -> Result<Vec<u8>, Error> {
    let each = c_int::try_from(mine.len())
        .map_err(|_| Error::Bootstrap("an allgather record is too large".into()))?;
    let mut all = vec![0u8; mine.len() * n as usize];
    // SAFETY: `mine` holds `each` bytes and `all` holds `each` bytes per rank.
    let rc = unsafe {
        ffi::MPI_Allgather(
            mine.as_ptr().cast(),
            each,
            ffi::RSMPI_UINT8_T,
            all.as_mut_ptr().cast(),
            each,
            ffi::RSMPI_UINT8_T,
            comm.0,
        )
    };
    check(rc, "MPI_Allgather")?;
    Ok(all)
}

impl MpiStart {
    /// Gathers a record of any size from every rank, in rank order.
    pub(crate) fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
        let n = self.topology.n_pes;
        let lens = allgather_fixed(self.comm, n, &(mine.len() as u64).to_le_bytes())?;
        let lens: Vec<usize> = lens
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()) as usize)
            .collect();
        let width = lens.iter().copied().max().unwrap_or(0);
        let mut padded = mine.to_vec();
        padded.resize(width, 0);
        let all = allgather_fixed(self.comm, n, &padded)?;
        Ok(lens
            .iter()
            .enumerate()
            .map(|(r, &len)| all[r * width..r * width + len].to_vec())
            .collect())
    }

    /// Waits until every rank has called it.
    pub(crate) fn barrier(&self) -> Result<(), Error> {
        // SAFETY: MPI is up; a collective on the library's communicator.
        check(unsafe { ffi::MPI_Barrier(self.comm.0) }, "MPI_Barrier")
    }

    /// The conduit between hosts on this job's communicator.
    pub(crate) fn link(&self) -> std::sync::Arc<link::MpiLink> {
        std::sync::Arc::new(link::MpiLink::new(self.pe as usize, self.comm))
    }
}
