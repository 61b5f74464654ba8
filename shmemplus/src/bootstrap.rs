//! PE start-up: reading the launcher's environment, authenticating on the bootstrap
//! socket, and the allgather rounds that exchange segment names before the PEs map
//! each other's memory.
//!
//! This module owns the PE side of the launch protocol (`crate::launch`). It must not
//! map memory or start threads; `shmem::init` sequences those steps.

use crate::error::Error;
use crate::launch::{self, ToLauncher, ToPe};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::time::Duration;

/// How long a PE waits for the launcher to answer one bootstrap step.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// What the launcher told this PE through the environment.
#[derive(Debug, Clone)]
pub struct LaunchEnv {
    /// This PE.
    pub pe: u32,
    /// The job's shape.
    pub topology: Topology,
    /// Job id (prefix of the job's shared-memory names).
    pub job_id: String,
    /// Bootstrap socket address (`@name` = abstract).
    pub bootstrap: String,
    /// Job secret.
    pub secret: String,
}

impl LaunchEnv {
    /// Reads the launch environment. `Ok(None)` means no launcher: a one-PE job.
    pub fn from_env() -> Result<Option<LaunchEnv>, Error> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`LaunchEnv::from_env`], and removes `SHMEMPLUS_SECRET` from this process's
    /// environment, whatever the outcome: programs this PE starts must not inherit the
    /// job secret (it lets its holder join the job's bootstrap as any PE).
    ///
    /// Call it before any thread of the library exists (`shmem::init` does, first
    /// thing after reading its configuration). Rust's own environment functions are
    /// serialised by the standard library; what `remove_var` must not race with is C
    /// code calling `getenv` in another thread, and no library thread runs yet. The
    /// program's own threads are covered by `init`'s documented contract.
    pub fn take_from_env() -> Result<Option<LaunchEnv>, Error> {
        let env = Self::from_env();
        if std::env::var_os(launch::ENV_SECRET).is_some() {
            std::env::remove_var(launch::ENV_SECRET);
        }
        env
    }

    /// As [`LaunchEnv::from_env`], through a lookup function (for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<LaunchEnv>, Error> {
        let Some(pe) = get(launch::ENV_PE) else {
            return Ok(None);
        };
        let need = |k: &str| {
            get(k).ok_or_else(|| {
                Error::BadEnvironment(format!("{} is set but {k} is not", launch::ENV_PE))
            })
        };
        let num = |k: &str, v: String| {
            v.parse::<u32>()
                .map_err(|_| Error::BadEnvironment(format!("{k}='{v}' is not a number")))
        };
        let pe = num(launch::ENV_PE, pe)?;
        let n_pes = num(launch::ENV_N_PES, need(launch::ENV_N_PES)?)?;
        let ppn = get(launch::ENV_PES_PER_NODE)
            .map(|v| num(launch::ENV_PES_PER_NODE, v))
            .transpose()?;
        let nodes = get(launch::ENV_NODES)
            .map(|v| num(launch::ENV_NODES, v))
            .transpose()?;
        let topology = Topology::resolve(n_pes, ppn, nodes)?;
        if pe >= n_pes {
            return Err(Error::BadEnvironment(format!(
                "{}={pe} is not below {}={n_pes}",
                launch::ENV_PE,
                launch::ENV_N_PES
            )));
        }
        let job_id = need(launch::ENV_JOB_ID)?;
        if job_id.is_empty() || !job_id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::BadEnvironment(format!(
                "{}='{job_id}' must be letters and digits",
                launch::ENV_JOB_ID
            )));
        }
        Ok(Some(LaunchEnv {
            pe,
            topology,
            job_id,
            bootstrap: need(launch::ENV_BOOTSTRAP)?,
            secret: need(launch::ENV_SECRET)?,
        }))
    }
}

/// A second descriptor of this PE's connection to the launcher, for `global_exit`,
/// which must not wait for the lock that guards the connection (another thread may
/// hold it in a collective). Set when the connection is welcomed, cleared at
/// finalize; one process is one PE, so a process-wide value is this PE's.
static EXIT_LINE: Mutex<Option<UnixStream>> = Mutex::new(None);

/// How long `send_global_exit` waits for the launcher to end this PE.
const GLOBAL_EXIT_WAIT: Duration = Duration::from_secs(10);

fn exit_line() -> std::sync::MutexGuard<'static, Option<UnixStream>> {
    EXIT_LINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asks the launcher to end the job with `code` ([`ToLauncher::GlobalExit`]) and waits
/// until it closes the connection, at most [`GLOBAL_EXIT_WAIT`] (it usually ends this
/// process first). Returns whether the request was sent: false without a launcher,
/// after finalize, or when the launcher is gone.
pub(crate) fn send_global_exit(code: i32) -> bool {
    let Some(mut line) = exit_line().take() else {
        return false;
    };
    if launch::write_frame(&mut line, &ToLauncher::GlobalExit { code }).is_err() {
        return false;
    }
    // Only the end of the stream (or the timeout) matters: the launcher sends nothing
    // more on this connection after the welcome and the allgathers it answered.
    let _ = line.set_read_timeout(Some(GLOBAL_EXIT_WAIT));
    let mut sink = [0u8; 64];
    let until = std::time::Instant::now() + GLOBAL_EXIT_WAIT;
    while std::time::Instant::now() < until {
        match std::io::Read::read(&mut line, &mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    true
}

/// An authenticated connection to the launcher.
pub struct BootstrapConn {
    stream: UnixStream,
    round: u32,
    n_pes: u32,
}

fn connect_addr(addr: &str) -> std::io::Result<UnixStream> {
    match addr.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let a = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            UnixStream::connect_addr(&a)
        }
        None => UnixStream::connect(addr),
    }
}

impl BootstrapConn {
    /// Connects to the launcher and authenticates as `env.pe`.
    pub fn connect(env: &LaunchEnv) -> Result<BootstrapConn, Error> {
        let fail = |what: &str, e: std::io::Error| {
            Error::Bootstrap(format!("{what} (launcher at {}): {e}", env.bootstrap))
        };
        let mut stream =
            connect_addr(&env.bootstrap).map_err(|e| fail("cannot reach the launcher", e))?;
        stream
            .set_read_timeout(Some(STEP_TIMEOUT))
            .map_err(|e| fail("socket setup", e))?;
        launch::write_frame(
            &mut stream,
            &ToLauncher::Auth {
                secret: env.secret.clone(),
                pe: env.pe,
                pid: std::process::id(),
            },
        )
        .map_err(|e| fail("sending credentials", e))?;
        match launch::read_frame::<_, ToPe>(&mut stream).map_err(|e| fail("awaiting welcome", e))? {
            ToPe::Welcome { n_pes } if n_pes == env.topology.n_pes => {
                *exit_line() = Some(
                    stream
                        .try_clone()
                        .map_err(|e| fail("duplicating the connection", e))?,
                );
                Ok(BootstrapConn {
                    stream,
                    round: 0,
                    n_pes,
                })
            }
            ToPe::Welcome { n_pes } => Err(Error::Bootstrap(format!(
                "launcher runs {n_pes} PEs but SHMEMPLUS_N_PES says {}",
                env.topology.n_pes
            ))),
            ToPe::Rejected { reason } => Err(Error::Bootstrap(format!(
                "launcher refused this PE: {reason}"
            ))),
            other => Err(Error::Bootstrap(format!(
                "unexpected first answer {other:?}"
            ))),
        }
    }

    /// Sends `data` as this PE's part of the next allgather round and returns every
    /// PE's part, in rank order.
    pub fn allgather(&mut self, data: Vec<u8>) -> Result<Vec<Vec<u8>>, Error> {
        let round = self.round;
        self.round += 1;
        let io = |e: std::io::Error| {
            Error::Bootstrap(format!(
                "allgather round {round} with the launcher failed: {e} (did another PE die during start-up?)"
            ))
        };
        launch::write_frame(&mut self.stream, &ToLauncher::Allgather { round, data })
            .map_err(io)?;
        match launch::read_frame::<_, ToPe>(&mut self.stream).map_err(io)? {
            ToPe::Allgathered { round: r, data }
                if r == round && data.len() == self.n_pes as usize =>
            {
                Ok(data)
            }
            other => Err(Error::Bootstrap(format!(
                "launcher answered allgather round {round} with {other:?}"
            ))),
        }
    }
}

impl BootstrapConn {
    /// Tells the launcher that this PE has finalized (best effort: the launcher may
    /// already be gone when the job is being torn down).
    pub fn finalized(&mut self) {
        // Closes `global_exit`'s descriptor, so the connection ends with this one.
        exit_line().take();
        if let Err(e) = launch::write_frame(&mut self.stream, &ToLauncher::Finalized) {
            tracing::debug!("could not tell the launcher about finalize: {e}");
        }
    }
}

/// What each PE publishes in the first allgather round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeHello {
    /// Process id.
    pub pid: u32,
    /// The PE's segment name in /dev/shm, or why it could not make one.
    pub segment: Result<String, String>,
    /// Bytes of symmetric heap.
    pub heap_bytes: u64,
    /// Bytes per AM ring.
    pub ring_bytes: u64,
    /// Bytes of the program's data made symmetric (0 without `init_with`'s option).
    pub static_bytes: u64,
    /// Conduit name.
    pub conduit: String,
    /// Library version.
    pub version: String,
    /// The cluster profile (`SHMEMPLUS_PROFILE` as given).
    pub profile: String,
}

/// Whether an MPI launcher started this process as one rank of a job: `mpirun` or
/// `mpiexec` of Open MPI (`OMPI_COMM_WORLD_SIZE`), of MPICH and others through PMI
/// (`PMI_SIZE`) or PMIx (`PMIX_RANK`), or `srun` with more than one task
/// (`SLURM_NTASKS`). `get` reads the environment.
///
/// ```
/// # use std::collections::HashMap;
/// let env: HashMap<&str, &str> = [("OMPI_COMM_WORLD_SIZE", "4")].into();
/// let get = |k: &str| env.get(k).map(|v| v.to_string());
/// assert!(shmemplus::launch::started_by_mpi(get));
/// assert!(!shmemplus::launch::started_by_mpi(|_| None));
/// ```
pub fn started_by_mpi(get: impl Fn(&str) -> Option<String>) -> bool {
    let set = |k: &str| get(k).is_some_and(|v| !v.is_empty());
    let many = |k: &str| {
        get(k)
            .and_then(|v| v.parse::<u32>().ok())
            .is_some_and(|n| n > 1)
    };
    set("OMPI_COMM_WORLD_SIZE") || set("PMI_SIZE") || set("PMIX_RANK") || many("SLURM_NTASKS")
}

/// Ranks per simulated host: `SHMEMPLUS_RANKS_PER_HOST` when set (its groups must not
/// straddle real machines), else the real machines' sizes, which must be equal with
/// each machine's ranks consecutive (the topology numbers PEs node by node). `hosts`
/// gives each rank's machine (any id shared by the ranks of one machine).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn ranks_per_host(hosts: &[u32], asked: Option<String>) -> Result<u32, Error> {
    let bad = |why: String| Error::BadConfig {
        var: "SHMEMPLUS_RANKS_PER_HOST",
        why,
    };
    let Some(&host0) = hosts.first() else {
        return Err(bad("a job of no ranks".into()));
    };
    let (k, from_machines) = match asked {
        Some(v) => match v.trim().parse::<u32>() {
            Ok(k) if k >= 1 => (k, false),
            _ => {
                return Err(bad(format!(
                    "'{v}' is not a whole number of ranks of at least 1"
                )))
            }
        },
        None => (
            hosts.iter().take_while(|&&h| h == host0).count() as u32,
            true,
        ),
    };
    for (rank, &host) in hosts.iter().enumerate() {
        let first = (rank as u32 / k * k) as usize;
        if host != hosts[first] {
            return Err(bad(format!(
                "ranks {first} and {rank} would be one host ({k} ranks per host), but MPI put \
                 them on different machines: place each machine's ranks consecutively \
                 (mpirun --map-by slot) and set SHMEMPLUS_RANKS_PER_HOST to a divisor of \
                 the ranks per machine"
            )));
        }
        let on_machine = || hosts.iter().filter(|&&h| h == host).count() as u32;
        if from_machines && rank == first && on_machine() != k {
            return Err(bad(format!(
                "the machines do not run {k} consecutive ranks each (the first does, the \
                 one of rank {rank} runs {}): place each machine's ranks consecutively \
                 (mpirun --map-by slot) or set SHMEMPLUS_RANKS_PER_HOST",
                on_machine()
            )));
        }
    }
    Ok(k)
}

/// Checks that every PE can join the same job: same heap size, symmetric data size,
/// ring size, conduit and library version, and every segment created. The error names the first PE that
/// differs and is the same on every PE.
pub fn check_hellos(hellos: &[PeHello]) -> Result<(), Error> {
    let first = &hellos[0];
    for (pe, h) in hellos.iter().enumerate() {
        if let Err(why) = &h.segment {
            return Err(Error::Bootstrap(format!(
                "PE {pe} could not create its symmetric heap: {why}"
            )));
        }
        let differs = |what: &str, a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
            Err(Error::Bootstrap(format!(
                "PE {pe} has {what} {b} but PE 0 has {a}; every PE must use the same setting"
            )))
        };
        if h.heap_bytes != first.heap_bytes {
            return differs("SHMEM_SYMMETRIC_SIZE", &first.heap_bytes, &h.heap_bytes);
        }
        if h.static_bytes != first.static_bytes {
            return Err(Error::Bootstrap(format!(
                "PE {pe} has {} bytes of symmetric data (.data and .bss) but PE 0 has {}; \
                 every PE must run the same program and ask for symmetric data alike",
                h.static_bytes, first.static_bytes
            )));
        }
        if h.ring_bytes != first.ring_bytes {
            return differs("SHMEMPLUS_AM_RING", &first.ring_bytes, &h.ring_bytes);
        }
        if h.conduit != first.conduit {
            return differs("SHMEMPLUS_CONDUIT", &first.conduit, &h.conduit);
        }
        if h.version != first.version {
            return differs("library version", &first.version, &h.version);
        }
        if h.profile != first.profile {
            return differs("SHMEMPLUS_PROFILE", &first.profile, &h.profile);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> Result<Option<LaunchEnv>, Error> {
        let m: HashMap<&str, &str> = pairs.iter().copied().collect();
        LaunchEnv::from_lookup(|k| m.get(k).map(|v| v.to_string()))
    }

    #[test]
    fn no_launcher_means_one_pe() {
        assert!(env(&[]).unwrap().is_none());
    }

    #[test]
    fn reads_full_environment() {
        let e = env(&[
            ("SHMEMPLUS_PE", "3"),
            ("SHMEMPLUS_N_PES", "4"),
            ("SHMEMPLUS_PES_PER_NODE", "2"),
            ("SHMEMPLUS_NODES", "2"),
            ("SHMEMPLUS_JOB_ID", "abc123"),
            ("SHMEMPLUS_BOOTSTRAP", "@shmemplus-abc123"),
            ("SHMEMPLUS_SECRET", "00ff"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(e.pe, 3);
        assert_eq!(e.topology.node_of(3), 1);
    }

    #[test]
    fn partial_or_bad_environment_is_an_error() {
        assert!(matches!(
            env(&[("SHMEMPLUS_PE", "0")]),
            Err(Error::BadEnvironment(_))
        ));
        let bad_pe = env(&[
            ("SHMEMPLUS_PE", "4"),
            ("SHMEMPLUS_N_PES", "4"),
            ("SHMEMPLUS_JOB_ID", "a"),
            ("SHMEMPLUS_BOOTSTRAP", "@x"),
            ("SHMEMPLUS_SECRET", "s"),
        ]);
        assert!(matches!(bad_pe, Err(Error::BadEnvironment(_))));
    }

    #[test]
    fn hosts_group_consecutive_ranks() {
        // Two machines of two ranks each: found from the machines, or asked for.
        let two_by_two = [0, 0, 2, 2];
        assert_eq!(ranks_per_host(&two_by_two, None).unwrap(), 2);
        assert_eq!(ranks_per_host(&two_by_two, Some("2".into())).unwrap(), 2);
        // Every rank its own host on one machine (the test set-up of the conduit).
        assert_eq!(ranks_per_host(&[0, 0, 0, 0], Some("1".into())).unwrap(), 1);
        assert_eq!(ranks_per_host(&[0, 0, 0, 0], None).unwrap(), 4);
        // A group that would straddle two machines.
        let err = ranks_per_host(&two_by_two, Some("3".into())).unwrap_err();
        assert!(err.to_string().contains("different machines"), "{err}");
        // Machines of different sizes, or ranks of one machine not consecutive.
        let err = ranks_per_host(&[0, 0, 2, 2, 2], None).unwrap_err();
        assert!(err.to_string().contains("consecutive ranks each"), "{err}");
        let err = ranks_per_host(&[0, 1, 0, 1], None).unwrap_err();
        assert!(err.to_string().contains("consecutive ranks each"), "{err}");
        for bad in ["0", "-1", "two", ""] {
            assert!(
                ranks_per_host(&two_by_two, Some(bad.into())).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn mpi_launchers_are_recognised() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(started_by_mpi(env(&[("OMPI_COMM_WORLD_SIZE", "2")])));
        assert!(started_by_mpi(env(&[("PMI_SIZE", "4")])));
        assert!(started_by_mpi(env(&[("PMIX_RANK", "0")])));
        assert!(started_by_mpi(env(&[("SLURM_NTASKS", "8")])));
        // One Slurm task is a plain program under srun, not an MPI job.
        assert!(!started_by_mpi(env(&[("SLURM_NTASKS", "1")])));
        assert!(!started_by_mpi(env(&[("SHMEMPLUS_PE", "0")])));
    }

    #[test]
    fn hello_mismatch_names_the_pe() {
        let h = |heap| PeHello {
            pid: 1,
            segment: Ok("s".into()),
            heap_bytes: heap,
            ring_bytes: 4096,
            static_bytes: 8192,
            conduit: "shm".into(),
            version: "1".into(),
            profile: "native".into(),
        };
        assert!(check_hellos(&[h(10), h(10)]).is_ok());
        let e = check_hellos(&[h(10), h(10), h(20)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("PE 2") && e.contains("SHMEM_SYMMETRIC_SIZE"),
            "{e}"
        );
        let mut other_program = h(10);
        other_program.static_bytes = 4096;
        let e = check_hellos(&[h(10), other_program])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("PE 1") && e.contains("symmetric data") && e.contains("4096"),
            "{e}"
        );
        let mut bad = h(10);
        bad.segment = Err("no space".into());
        let e = check_hellos(&[h(10), bad]).unwrap_err().to_string();
        assert!(e.contains("PE 1") && e.contains("no space"), "{e}");
    }
}
