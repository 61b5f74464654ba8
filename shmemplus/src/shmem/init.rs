//! `init` and `init_with`: reads the configuration, maps every PE's symmetric heap
//! through the launcher's bootstrap (and, when asked, the program's data onto this
//! PE's static area), builds the handle's state and starts the progress thread, then
//! prints the start-up report (`SHMEM_INFO`, `SHMEM_VERSION`) and self-tunes.
//!
//! This module owns start-up and its order. It must not implement the bootstrap
//! protocol (`bootstrap`), the segments (`segment`), finding or remapping the
//! program's data (`statics`) or shutdown (`lifecycle`).

#[cfg(debug_assertions)]
use super::lifecycle::test_panic_progress_if_asked;
use super::lifecycle::watch_progress;
use super::{Collectives, Inner, PlaceHeap, Shmem, TuneSource};
use crate::am::AmEngine;
use crate::bootstrap::{self, BootstrapConn, LaunchEnv, PeHello};
use crate::clock::JobClock;
use crate::config::Config;
use crate::diag;
use crate::emulate::Emulation;
use crate::error::{Error, Result};
use crate::fpga::Boards;
use crate::heap::HeapAllocator;
use crate::segment::{JobSegments, Layout, Segment};
use crate::statics::{self, StaticRegion};
use crate::sync::WaitPolicy;
use crate::team::TeamInner;
use crate::topology::Topology;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Options of [`init_with`]; [`InitOptions::new`] gives what [`init`] does.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct InitOptions {
    symmetric_data: bool,
}

impl InitOptions {
    /// The options of [`init`]: no symmetric data.
    pub fn new() -> InitOptions {
        InitOptions::default()
    }

    /// Makes the executable's global and static data symmetric (what OpenSHMEM says
    /// of a C program's globals): its writable data (`.data` and `.bss`, not RELRO)
    /// becomes this PE's *static area*, CPU offsets `[static_offset, cpu_bytes)` after
    /// the heap, reachable by every PE with the normal calls through
    /// [`Shmem::place_space`] and [`Shmem::locate_addr`].
    ///
    /// Limits: only the main executable's data (not a shared library's); a Rust
    /// `static` is writable data only if it has interior mutability (atomics,
    /// `UnsafeCell`), and a peer's put into it is a write by another process, so use
    /// atomics or synchronise as with heap objects; every PE must run the same
    /// executable (a different data size is an error at `init`); and a thread of the
    /// program's own that writes a global while `init_with` runs may lose that write
    /// (call it first thing in `main`). The data stays shared memory after
    /// `finalize`, and a child made by `fork` shares it.
    pub fn symmetric_data(mut self, on: bool) -> InitOptions {
        self.symmetric_data = on;
        self
    }
}

/// Starts this PE: reads the launcher's environment (or runs as a one-PE job without
/// one), maps every PE's symmetric heap and starts the progress thread. Call once per
/// process; clone the handle to use it from several threads.
///
/// Environment: `SHMEM_SYMMETRIC_SIZE` (heap bytes, e.g. `512M`), `SHMEM_DEBUG` (debug
/// lines on stderr), `SHMEM_INFO` (print the configuration), `SHMEM_VERSION` (print
/// the version), `SHMEMPLUS_CONDUIT=shm|am`, `SHMEMPLUS_AM_RING` (bytes per AM ring).
///
/// The library installs no `tracing` subscriber. Its warnings and debug notes are
/// `tracing` events for a program that installs one (and filters them as it likes,
/// with `RUST_LOG` say); in a program that installs none, warnings go to stderr as
/// plain lines (`shmemplus: PE 0: warning: ...`), and debug notes too with
/// `SHMEM_DEBUG`.
///
/// `init` removes the job secret `SHMEMPLUS_SECRET` from the process environment, so
/// that programs this PE starts do not inherit it. Like `std::env::remove_var`, that
/// must not race with C code reading the environment (`getenv`) on another thread:
/// call `init` before starting threads that do, first thing in `main` at best.
pub fn init() -> Result<Shmem> {
    init_with(InitOptions::new())
}

/// [`init`] with options: see [`InitOptions`]. A C program's `shmem_init` is
/// `init_with(InitOptions::new().symmetric_data(true))`.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static HITS: AtomicU64 = AtomicU64::new(0);
///
/// let shmem = shmemplus::init_with(shmemplus::InitOptions::new().symmetric_data(true))?;
/// let (lo, len) = shmem.static_region().expect("this program has globals");
/// let at = &HITS as *const AtomicU64 as usize;
/// assert!(at >= lo as usize && at < lo as usize + len);
/// // HITS is symmetric: every PE adds one to PE 0's copy.
/// let (_, offset) = shmem.locate_addr(at as *const u8).expect("a global is symmetric");
/// let space = shmem.place_space::<u64>(shmemplus::Place::Cpu)?;
/// shmem.atomic_fetch_add(&space, offset / 8, 1, 0)?;
/// shmem.barrier_all()?;
/// if shmem.my_pe() == 0 {
///     assert_eq!(HITS.load(Ordering::Relaxed), u64::from(shmem.n_pes()));
/// }
/// # Ok::<(), shmemplus::Error>(())
/// ```
pub fn init_with(options: InitOptions) -> Result<Shmem> {
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyInitialized);
    }
    // Before any thread of the library starts (see `take_from_env` for why that
    // makes removing the secret from the environment sound); MPI starts threads.
    let env = LaunchEnv::take_from_env()?;
    let mpi = start_from_mpi(env.is_some())?;
    let config = match &mpi {
        Some(job) => config_of_rank0(job)?,
        None => Config::from_env()?,
    };
    diag::set_debug(config.debug);
    let profile = netsim::Profile::load(&config.profile).map_err(|e| Error::BadConfig {
        var: "SHMEMPLUS_PROFILE",
        why: e.to_string(),
    })?;
    let (me, topology, job_id) = match (&env, &mpi) {
        (Some(e), _) => (e.pe, e.topology, Some(e.job_id.clone())),
        (None, Some(job)) => mpi_shape(job),
        (None, None) => (0, Topology::resolve(1, None, None)?, None),
    };
    let trace = crate::trace::request_from_env((env.is_some() || mpi.is_some()).then_some(me))?;
    if topology.nodes > 1 && mpi.is_some() && config.clock == crate::config::ClockKind::Virtual {
        return Err(Error::BadConfig {
            var: "SHMEMPLUS_CLOCK",
            why: "the virtual clock needs every PE on one host; under mpirun with several \
                  hosts use the wall clock"
                .into(),
        });
    }
    let n = topology.n_pes as usize;
    let data = match options.symmetric_data {
        true => statics::find_executable_data()?,
        false => None,
    };
    let static_bytes = data.map_or(0, |r| r.len);
    let layout = Layout::new(n, config.am_ring_bytes, config.symmetric_size, static_bytes)?;
    let mut link = None;
    let (segs, bootstrap) = match (&env, &mpi, job_id) {
        (Some(env), _, Some(job_id)) => map_job(env, &job_id, layout, &config, data)?,
        (None, Some(job), Some(job_id)) => {
            let (segs, host_link) = map_mpi_job(job, &job_id, layout, &config, data)?;
            link = host_link;
            (segs, None)
        }
        _ => {
            let seg = Segment::anonymous(0, layout)?;
            adopt_data(&seg, data)?;
            (JobSegments::new(0, vec![Some(seg)], data)?, None)
        }
    };
    let segs = Arc::new(segs);
    let clock = Arc::new(JobClock::new(config.clock, profile.cpu_speed));
    let board_count = config.fpgas.unwrap_or(profile.topology.boards_per_node);
    let emulation = Emulation::new(&profile, topology, board_count, segs.clone(), clock.clone());
    // The PEs that share this machine's cores: every PE under shmemrun.
    let machine_pes = mpi.as_ref().map_or(n, mpi_machine_ranks);
    let policy =
        WaitPolicy::for_host(machine_pes).with_overrides(config.wait_spin, config.wait_yield);
    if mpi.is_some() && segs.spans_hosts() && me == 0 {
        warn_if_one_core(me);
    }
    let am = Arc::new(AmEngine::new(segs.clone(), policy, link)?);
    let t = &profile.topology;
    let boards = Arc::new(Boards::new(
        board_count,
        t.board_memory,
        topology.pes_per_node,
        t.dma_min_bytes,
        t.dma_align,
        clock.is_virtual(),
    )?);
    boards.register_handlers(&am);
    crate::atomic::register_handler(&am, boards.clone());
    let progress = watch_progress(me, am.start()?).inspect_err(|_| am.stop())?;
    #[cfg(debug_assertions)]
    test_panic_progress_if_asked(&am, me);
    // Tags this handle's objects; only needs to differ from other handles' tags.
    let job = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 32)
        | 1;
    let shmem = Shmem {
        inner: Arc::new(Inner {
            me,
            topology,
            job,
            policy,
            am,
            segs,
            finalized: AtomicBool::new(false),
            world: Arc::new(TeamInner::new(
                job,
                (0, 1, topology.n_pes),
                me,
                0,
                |pe| topology.node_of(pe),
                (0, 0),
            )),
            shared: {
                let ppn = topology.pes_per_node;
                let start = topology.node_of(me) * ppn;
                let size = ppn.min(topology.n_pes - start);
                Arc::new(TeamInner::new(
                    job,
                    (start, 1, size),
                    me,
                    1,
                    |pe| topology.node_of(pe),
                    (0, 0),
                ))
            },
            team_slots: Mutex::new(0b11),
            epoch_high: std::sync::atomic::AtomicU64::new(0),
            wakes: crate::wake::LazyWakes::new(n),
            coll: Mutex::new(Collectives {
                seq: 0,
                heaps: std::iter::once(config.symmetric_size)
                    // Each board's partition is mapped, so its size fits in usize.
                    .chain((0..boards.count()).map(|_| boards.partition_bytes() as usize))
                    .map(|size| PlaceHeap {
                        alloc: HeapAllocator::new(size),
                        high_water: 0,
                    })
                    .collect(),
                bootstrap,
            }),
            progress: Mutex::new(Some(progress)),
            profile,
            emulation,
            untimed: AtomicBool::new(false),
            clock,
            boards,
            packet_policy: std::sync::atomic::AtomicU64::new(config.packet.encode()),
            packet_cache: Mutex::new(std::collections::HashMap::new()),
            tuning: Mutex::new(None),
            config,
        }),
    };
    shmem.announce();
    // The self-tuning pass times real transfers; under the virtual clock the packets
    // come from the profile's costs, which is the time the clock charges.
    let mode = match shmem.inner.clock.is_virtual() {
        true => crate::config::TuneMode::Off,
        false => shmem.inner.config.tune,
    };
    match shmem.retune(mode) {
        Ok(TuneSource::Measured) => diag::debug(me, "self-tuning pass measured the hops"),
        Ok(source) => diag::debug(me, format_args!("self-tuning: {source:?}")),
        Err(e) => diag::warn(
            me,
            format_args!("self-tuning failed, packets come from the profile: {e}"),
        ),
    }
    shmem.inner.clock.start();
    if let Some(req) = trace {
        let i = &shmem.inner;
        crate::trace::start(req, (me, i.topology.n_pes), i.clock.kind(), &i.profile.name);
    }
    let i = &shmem.inner;
    let untimed = i.emulation.is_none() && !i.clock.is_virtual() && !crate::trace::enabled();
    i.untimed.store(untimed, Ordering::Relaxed);
    Ok(shmem)
}

/// Maps this PE's static area over the program's data (`data`, if any). Called once
/// this PE's segment exists, before any peer learns its name and before the library
/// starts a thread (the progress thread starts after `map_job`), which is what
/// `statics::adopt` needs.
fn adopt_data(seg: &Segment, data: Option<StaticRegion>) -> Result<()> {
    let Some(region) = data else {
        return Ok(());
    };
    let (area, fd, file_offset) = seg
        .static_area()
        .ok_or_else(|| Error::InvalidArgument("a peer's segment has no static area".into()))?;
    // SAFETY: `region` is this executable's data (`find_executable_data`), the
    // segment's static area was sized to it (`Layout::new(.., region.len)`), and no
    // thread of the library runs yet (see above); the program's own threads are the
    // documented limit of `InitOptions::symmetric_data`.
    unsafe { statics::adopt(region, area, fd, file_offset) }
}

/// Creates this PE's segment (with the program's data `data` mapped onto its static
/// area), exchanges names with every PE through the launcher, maps every segment,
/// and unlinks its own name once all PEs have mapped it.
pub(super) fn map_job(
    env: &LaunchEnv,
    job_id: &str,
    layout: Layout,
    config: &Config,
    data: Option<StaticRegion>,
) -> Result<(JobSegments, Option<BootstrapConn>)> {
    if env.pe == 0 {
        warn_if_shm_too_small(layout.total_bytes(), env.topology.n_pes as usize);
    }
    // An unguessable name, created exclusively: nobody can have made it first.
    // The data is adopted before the hello: no peer can write the static area yet.
    let mine = crate::segment::unique_name(job_id, env.pe)
        .and_then(|name| Segment::create(&name, env.pe, layout).map(|seg| (seg, name)))
        .and_then(|(seg, name)| adopt_data(&seg, data).map(|()| (seg, name)));
    let mut conn = BootstrapConn::connect(env)?;
    let hellos = exchange_hellos(&hello_of(&mine, layout, config), |b| conn.allgather(b))?;
    let mut mine = Some(mine?.0);
    bootstrap::check_hellos(&hellos)?;
    let mut segs = Vec::with_capacity(hellos.len());
    for (pe, h) in hellos.iter().enumerate() {
        match (&h.segment, mine.take_if(|_| pe == env.pe as usize)) {
            (_, Some(own)) => segs.push(Some(own)),
            (Ok(peer), None) => segs.push(Some(Segment::open(peer, pe as u32, layout)?)),
            (Err(why), None) => return Err(Error::Bootstrap(why.clone())),
        }
    }
    // Round 1: every PE has mapped every segment; the names can go.
    conn.allgather(Vec::new())?;
    if let Some(own) = &mut segs[env.pe as usize] {
        own.unlink()?;
    }
    diag::debug(env.pe, format_args!("mapped {} segments", segs.len()));
    Ok((JobSegments::new(env.pe as usize, segs, data)?, Some(conn)))
}

/// The job as MPI formed it, when `mpirun`, `mpiexec` or `srun` started this process
/// (feature `mpi`); uninhabited without the feature.
#[cfg(feature = "mpi")]
type MpiJob = crate::mpi_conduit::MpiStart;
#[cfg(not(feature = "mpi"))]
enum MpiJob {}

/// Forms the job from MPI when an MPI launcher (and not `shmemrun`) started this
/// process. Without the `mpi` feature that is an error saying how to build with it:
/// every rank would otherwise run alone as a job of one PE.
fn start_from_mpi(by_shmemrun: bool) -> Result<Option<MpiJob>> {
    if by_shmemrun || !bootstrap::started_by_mpi(|k| std::env::var(k).ok()) {
        return Ok(None);
    }
    #[cfg(feature = "mpi")]
    return crate::mpi_conduit::start(|k| std::env::var(k).ok()).map(Some);
    #[cfg(not(feature = "mpi"))]
    Err(Error::Bootstrap(
        "this program was started by mpirun or srun (each rank a PE), but shmemplus was \
         built without its `mpi` feature: rebuild with `cargo build --release --workspace \
         --features shmemplus/mpi`, or start it with shmemrun"
            .into(),
    ))
}

/// The configuration under MPI: rank 0's `SHMEM_*` and `SHMEMPLUS_*` variables, so
/// that every rank runs with the same (hosts reached over ssh do not inherit the
/// launching shell's environment).
fn config_of_rank0(job: &MpiJob) -> Result<Config> {
    #[cfg(feature = "mpi")]
    return Config::from_lookup(|k| {
        let ours = k.starts_with("SHMEM_") || k.starts_with("SHMEMPLUS_");
        match ours {
            true => job
                .vars
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone()),
            false => std::env::var(k).ok(),
        }
    });
    #[cfg(not(feature = "mpi"))]
    match *job {}
}

/// This PE, the job's shape and its id under MPI.
fn mpi_shape(job: &MpiJob) -> (u32, Topology, Option<String>) {
    #[cfg(feature = "mpi")]
    return (job.pe, job.topology, Some(job.job_id.clone()));
    #[cfg(not(feature = "mpi"))]
    match *job {}
}

/// Under MPI with several hosts: warns when the launcher bound this PE to one core of
/// several. The progress thread, which serves every request from another host, then
/// shares that core with the program's thread, and a small transfer between hosts
/// takes about four times as long (measured: 6.7 us against 1.5 us per 8-byte put +
/// quiet over shared memory). Open MPI binds each rank to a core when the ranks do not
/// outnumber the cores.
fn warn_if_one_core(me: u32) {
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: sysconf only reads a system setting.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if usable == 1 && online > 1 {
        crate::diag::warn(
            me,
            format_args!(
                "this PE may use one core of {online}, which its progress thread shares: \
                 transfers between hosts are slower; start with `mpirun --bind-to none` or \
                 give each rank two cores (`--map-by ...:PE=2`)"
            ),
        );
    }
}

/// The ranks on this machine under MPI.
fn mpi_machine_ranks(job: &MpiJob) -> usize {
    #[cfg(feature = "mpi")]
    return job.machine_ranks;
    #[cfg(not(feature = "mpi"))]
    match *job {}
}

/// [`map_job`] under MPI: creates this PE's segment, exchanges hellos with every rank,
/// maps the segments of the PEs on this host (this PE's node) and unlinks its own
/// name once they have; returns the segments and the link to the other hosts.
fn map_mpi_job(
    job: &MpiJob,
    job_id: &str,
    layout: Layout,
    config: &Config,
    data: Option<StaticRegion>,
) -> Result<(JobSegments, Option<Arc<dyn crate::am::HostLink>>)> {
    #[cfg(feature = "mpi")]
    {
        let me = job.pe;
        let topology = job.topology;
        if topology.local_rank(me) == 0 {
            warn_if_shm_too_small(layout.total_bytes(), topology.pes_per_node as usize);
        }
        let mine = crate::segment::unique_name(job_id, me)
            .and_then(|name| Segment::create(&name, me, layout).map(|seg| (seg, name)))
            .and_then(|(seg, name)| adopt_data(&seg, data).map(|()| (seg, name)));
        let hellos = exchange_hellos(&hello_of(&mine, layout, config), |b| job.allgather(&b))?;
        let mut mine = Some(mine?.0);
        bootstrap::check_hellos(&hellos)?;
        let node = topology.node_of(me);
        let mut segs = Vec::with_capacity(hellos.len());
        for (pe, h) in hellos.iter().enumerate() {
            let on_this_host = topology.node_of(pe as u32) == node;
            match (
                &h.segment,
                mine.take_if(|_| pe == me as usize),
                on_this_host,
            ) {
                (_, Some(own), _) => segs.push(Some(own)),
                (_, None, false) => segs.push(None),
                (Ok(peer), None, true) => segs.push(Some(Segment::open(peer, pe as u32, layout)?)),
                (Err(why), None, true) => return Err(Error::Bootstrap(why.clone())),
            }
        }
        // Every PE of every host has mapped its host's segments: the names can go.
        job.barrier()?;
        if let Some(own) = &mut segs[me as usize] {
            own.unlink()?;
        }
        let link: Arc<dyn crate::am::HostLink> = job.link();
        let segs = JobSegments::new(me as usize, segs, data)?;
        let link = segs.spans_hosts().then_some(link);
        diag::debug(
            me,
            format_args!(
                "MPI job: {} hosts of {} PEs",
                topology.nodes, topology.pes_per_node
            ),
        );
        Ok((segs, link))
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (job_id, layout, config, data);
        match *job {}
    }
}

/// Sends this PE's hello to every PE with `allgather` (the launcher's or MPI's) and
/// returns every PE's, decoded (the caller checks them against each other with
/// `bootstrap::check_hellos`, after its own segment's error if it has one).
fn exchange_hellos(
    hello: &PeHello,
    allgather: impl FnOnce(Vec<u8>) -> Result<Vec<Vec<u8>>>,
) -> Result<Vec<PeHello>> {
    let encoded = postcard::to_allocvec(hello).map_err(|e| Error::Bootstrap(e.to_string()))?;
    let hellos = allgather(encoded)?
        .iter()
        .map(|b| postcard::from_bytes::<PeHello>(b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Bootstrap(format!("malformed hello from a PE: {e}")))?;
    Ok(hellos)
}

/// This PE's hello: its segment (or why it has none) and what every PE must agree on.
fn hello_of(mine: &Result<(Segment, String)>, layout: Layout, config: &Config) -> PeHello {
    PeHello {
        pid: std::process::id(),
        segment: mine
            .as_ref()
            .map(|(_, name)| name.clone())
            .map_err(|e| e.to_string()),
        heap_bytes: config.symmetric_size as u64,
        ring_bytes: config.am_ring_bytes as u64,
        static_bytes: layout.static_bytes as u64,
        conduit: config.conduit.name().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        profile: config.profile.clone(),
    }
}

/// Heaps are backed lazily, so a /dev/shm smaller than the job's heaps only fails when
/// the pages are touched (SIGBUS). Say so up front.
pub(super) fn warn_if_shm_too_small(segment_bytes: usize, n_pes: usize) {
    let Ok(st) = rustix::fs::statvfs("/dev/shm") else {
        return;
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let need = (segment_bytes as u64).saturating_mul(n_pes as u64);
    if free < need {
        diag::warn(
            0,
            format_args!(
            "/dev/shm has {free} bytes free but {n_pes} PEs may use {need}: a PE that fills its \
             heap past the free space dies with SIGBUS; lower SHMEM_SYMMETRIC_SIZE or grow /dev/shm"
            ),
        );
    }
}

impl Shmem {
    pub(super) fn announce(&self) {
        let c = &self.inner.config;
        if self.inner.me != 0 {
            return;
        }
        if c.version {
            println!(
                "shmemplus {} (OpenSHMEM 1.5 API subset)",
                env!("CARGO_PKG_VERSION")
            );
        }
        if c.info {
            let t = &self.inner.topology;
            println!("shmemplus configuration:");
            println!("  version              {}", env!("CARGO_PKG_VERSION"));
            println!("  PEs                  {}", t.n_pes);
            println!(
                "  nodes                {} ({} PEs per node)",
                t.nodes, t.pes_per_node
            );
            println!("  SHMEM_SYMMETRIC_SIZE {} bytes", c.symmetric_size);
            if let Some(r) = self.inner.segs.statics {
                println!("  symmetric data       {} bytes (.data and .bss)", r.len);
            }
            println!("  SHMEMPLUS_CONDUIT    {}", c.conduit.name());
            if self.inner.segs.spans_hosts() {
                println!(
                    "  between hosts        mpi ({} hosts of {} PEs)",
                    t.nodes, t.pes_per_node
                );
            }
            println!("  SHMEMPLUS_AM_RING    {} bytes", c.am_ring_bytes);
            println!(
                "  SHMEMPLUS_PROFILE    {} ({})",
                self.inner.profile.name, self.inner.profile.source
            );
            println!(
                "  SHMEM_DEBUG          {}",
                if c.debug { "on" } else { "off" }
            );
        }
    }
}
