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
    let config = Config::from_env()?;
    diag::set_debug(config.debug);
    let profile = netsim::Profile::load(&config.profile).map_err(|e| Error::BadConfig {
        var: "SHMEMPLUS_PROFILE",
        why: e.to_string(),
    })?;
    // Before any thread of the library starts (see `take_from_env` for why that
    // makes removing the secret from the environment sound).
    let env = LaunchEnv::take_from_env()?;
    let trace = crate::trace::request_from_env(env.as_ref().map(|e| e.pe))?;
    let (me, topology, job_id) = match &env {
        Some(e) => (e.pe, e.topology, Some(e.job_id.clone())),
        None => (0, Topology::resolve(1, None, None)?, None),
    };
    let n = topology.n_pes as usize;
    let data = match options.symmetric_data {
        true => statics::find_executable_data()?,
        false => None,
    };
    let static_bytes = data.map_or(0, |r| r.len);
    let layout = Layout::new(n, config.am_ring_bytes, config.symmetric_size, static_bytes)?;
    let (segs, bootstrap) = match (&env, job_id) {
        (Some(env), Some(job_id)) => map_job(env, &job_id, layout, &config, data)?,
        _ => {
            let seg = Segment::anonymous(0, layout)?;
            adopt_data(&seg, data)?;
            (
                JobSegments {
                    me: 0,
                    segs: vec![seg],
                    statics: data,
                },
                None,
            )
        }
    };
    let segs = Arc::new(segs);
    let clock = Arc::new(JobClock::new(config.clock, profile.cpu_speed));
    let emulation = Emulation::new(&profile, topology, segs.clone(), clock.clone());
    let policy = WaitPolicy::for_host(n).with_overrides(config.wait_spin, config.wait_yield);
    let am = Arc::new(AmEngine::new(segs.clone(), policy));
    let t = &profile.topology;
    let boards = Arc::new(Boards::new(
        config.fpgas.unwrap_or(t.boards_per_node),
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
    let hello = PeHello {
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
    };
    let encode =
        |h: &PeHello| postcard::to_allocvec(h).map_err(|e| Error::Bootstrap(e.to_string()));
    let all = conn.allgather(encode(&hello)?)?;
    let hellos = all
        .iter()
        .map(|b| postcard::from_bytes::<PeHello>(b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Bootstrap(format!("malformed hello from a PE: {e}")))?;
    let mut mine = Some(mine?.0);
    bootstrap::check_hellos(&hellos)?;
    let mut segs = Vec::with_capacity(hellos.len());
    for (pe, h) in hellos.iter().enumerate() {
        match (&h.segment, mine.take_if(|_| pe == env.pe as usize)) {
            (_, Some(own)) => segs.push(own),
            (Ok(peer), None) => segs.push(Segment::open(peer, pe as u32, layout)?),
            (Err(why), None) => return Err(Error::Bootstrap(why.clone())),
        }
    }
    // Round 1: every PE has mapped every segment; the names can go.
    conn.allgather(Vec::new())?;
    segs[env.pe as usize].unlink()?;
    diag::debug(env.pe, format_args!("mapped {} segments", segs.len()));
    Ok((
        JobSegments {
            me: env.pe as usize,
            segs,
            statics: data,
        },
        Some(conn),
    ))
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
