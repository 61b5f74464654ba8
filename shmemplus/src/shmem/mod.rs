//! The user's handle: `init`, the job's identity, collective allocation of symmetric
//! objects, RMA (put/get, `p`/`g`), ordering and completion (`fence`, `quiet`),
//! `barrier_all`, local access to one's own symmetric memory, user active messages and
//! `finalize`.
//!
//! This module owns the public API and its argument checking, and sequences start-up
//! and shutdown; its submodules hold the atomics and point-to-point calls (`atomics`),
//! teams (`teams`) and collectives (`collectives`). It must not implement transports (`am`, `segment`), waiting (`sync`)
//! or allocation policy (`heap`); it calls them.
//!
//! # Memory model (OpenSHMEM 1.5, sections 9.5.x and 9.6)
//!
//! - A blocking `put` returns when the source buffer may be reused; the data is not
//!   necessarily visible at the target yet.
//! - `fence` orders: puts to one PE issued before it are delivered before puts to the
//!   same PE issued after it.
//! - `quiet` completes: every put issued before it is visible at its target.
//! - `barrier_all` is `quiet` followed by a synchronisation of all PEs: after it, every
//!   PE sees every put issued by any PE before the barrier.
//! - A blocking `get` returns with the data.

mod atomics;
mod collectives;
mod teams;

use crate::am::{AmEngine, H_ECHO, H_FPGA_GET, H_FPGA_PUT, USER_BASE};
use crate::bootstrap::{self, BootstrapConn, LaunchEnv, PeHello};
use crate::config::{Conduit, Config, PacketPolicy};
use crate::emulate::{Emulation, Hop, RmaOp};
use crate::error::{Error, Result};
use crate::fpga::Boards;
use crate::heap::HeapAllocator;
use crate::segment::{JobSegments, Layout, Segment};
use crate::sync::WaitPolicy;
use crate::team::TeamInner;
use crate::topology::Topology;
use bytemuck::Pod;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// Where memory lives in the multilevel address space (the SHMEM+ "affinity").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    /// The PE's host memory (its CPU symmetric heap).
    Cpu,
    /// This PE's partition of board `b` of its node (`shmemrun --fpgas N` or the
    /// profile sets the boards per node; a board that does not exist is
    /// [`Error::InvalidBoard`] or [`Error::NoBoards`]).
    Fpga(u32),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Cpu => write!(f, "Cpu"),
            Place::Fpga(b) => write!(f, "Fpga({b})"),
        }
    }
}

impl Place {
    /// The place as one word, as control blocks (symmetry records, collective call
    /// descriptors) and active-message arguments carry it: 0 is the CPU, `b + 1` is
    /// board `b`. [`Place::from_wire`] is its inverse; no other code encodes a place.
    pub(crate) fn to_wire(self) -> u64 {
        match self {
            Place::Cpu => 0,
            Place::Fpga(b) => 1 + u64::from(b),
        }
    }

    /// The place a word written by [`Place::to_wire`] names, or `None` for a word no
    /// place encodes to (a board number past `u32`): a word read from another process
    /// is refused, never truncated onto another board.
    pub(crate) fn from_wire(word: u64) -> Option<Place> {
        match word {
            0 => Some(Place::Cpu),
            w => u32::try_from(w - 1).ok().map(Place::Fpga),
        }
    }

    /// How a place word reads in a message, also when it names no place.
    pub(crate) fn wire_name(word: u64) -> String {
        match Place::from_wire(word) {
            Some(place) => place.to_string(),
            None => format!("unknown place word {word}"),
        }
    }
}

#[cfg(test)]
mod place_tests {
    use super::Place;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_place_comes_back_from_its_word(board in any::<u32>()) {
            for place in [Place::Cpu, Place::Fpga(board)] {
                prop_assert_eq!(Place::from_wire(place.to_wire()), Some(place));
            }
        }

        #[test]
        fn a_word_names_a_place_exactly_when_one_encodes_to_it(word in any::<u64>()) {
            match Place::from_wire(word) {
                Some(place) => prop_assert_eq!(place.to_wire(), word),
                None => prop_assert!(word > u64::from(u32::MAX) + 1),
            }
        }
    }

    #[test]
    fn the_edges_of_the_encoding() {
        assert_eq!(Place::Cpu.to_wire(), 0);
        assert_eq!(Place::Fpga(0).to_wire(), 1);
        assert_eq!(
            Place::from_wire(u64::from(u32::MAX) + 1),
            Some(Place::Fpga(u32::MAX))
        );
        assert_eq!(Place::from_wire(u64::from(u32::MAX) + 2), None);
        assert_eq!(Place::wire_name(2), "Fpga(1)");
        assert_eq!(
            Place::wire_name(u64::MAX),
            format!("unknown place word {}", u64::MAX)
        );
    }
}

/// A symmetric object: `len` elements of `T` at the same offset in every PE's heap.
///
/// Made by [`Shmem::alloc`] (collective) and returned with [`Shmem::free`]
/// (collective). It is a name for remote memory, not a borrow of it: read and write
/// it through the handle (`put`, `get`, `local_read`, ...). Dropping it without `free`
/// leaks its heap space until the job ends.
pub struct SymVec<T: Pod> {
    offset: usize,
    len: usize,
    place: Place,
    job: u64,
    _elem: PhantomData<fn() -> T>,
}

impl<T: Pod> SymVec<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the object lives.
    pub fn place(&self) -> Place {
        self.place
    }

    /// Byte offset of the object in the symmetric heap (the same on every PE).
    pub fn heap_offset(&self) -> usize {
        self.offset
    }
}

impl<T: Pod> fmt::Debug for SymVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymVec")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("place", &self.place)
            .field("heap_offset", &self.offset)
            .finish()
    }
}

/// Bytes staged at a time by transfers between two symmetric objects (a board read
/// feeding a network send, say): large enough to amortise each step, small enough to
/// stay in cache and never need a buffer the size of the transfer.
const STAGE_BYTES: usize = 1 << 20;

/// Kinds of collective call, as written in the symmetry records.
const COLL_ALLOC: u64 = 1;
const COLL_FREE: u64 = 2;
/// The size word of an allocation whose byte size overflows.
const OVERFLOWING_SIZE: u64 = u64::MAX;

/// State of the collective calls of this PE (one collective at a time per PE).
struct Collectives {
    /// Number of symmetry-checked collectives so far.
    seq: u64,
    /// One symmetric heap per place: index 0 is `Cpu`, 1 + b is `Fpga(b)`.
    heaps: Vec<PlaceHeap>,
    bootstrap: Option<BootstrapConn>,
}

/// The allocator of one place's symmetric heap.
struct PlaceHeap {
    alloc: HeapAllocator,
    /// Highest heap byte ever handed out: memory above it is still zero.
    high_water: usize,
}

struct Inner {
    me: u32,
    topology: Topology,
    config: Config,
    job: u64,
    segs: Arc<JobSegments>,
    am: Arc<AmEngine>,
    policy: WaitPolicy,
    finalized: AtomicBool,
    coll: Mutex<Collectives>,
    /// The progress thread, until `shutdown` has stopped it.
    progress: Mutex<Option<ProgressWatch>>,
    profile: netsim::Profile,
    /// Network emulation; `None` when the profile's network is free.
    emulation: Option<Emulation>,
    /// This PE's partitions of its node's boards.
    boards: Arc<Boards>,
    /// The packet policy, encoded by `PacketPolicy::encode`.
    packet_policy: std::sync::atomic::AtomicU64,
    /// Packet sizes the model chose, by route and size bucket.
    packet_cache: Mutex<std::collections::HashMap<PacketKey, usize>>,
    /// The result of the last self-tuning pass, if any.
    tuning: Mutex<Option<crate::tune::Tuning>>,
    /// The world team (slot 0): `barrier_all` and the allocation collectives use it.
    world: Arc<TeamInner>,
    /// The PEs of this node (slot 1).
    shared: Arc<TeamInner>,
    /// Team slots in use by this PE (bit i = slot i).
    team_slots: Mutex<u64>,
    /// Highest barrier epoch this PE used in any team: a new team starts above every
    /// member's, so stale flags in a reused slot never satisfy its barriers.
    epoch_high: std::sync::atomic::AtomicU64,
    /// The PEs this PE stored into since they were last woken (see `wake`).
    wakes: crate::wake::LazyWakes,
}

/// One probe transfer of the tuning pass, given a scratch buffer.
type Probe<'a> = dyn Fn(&mut [u8]) -> Result<()> + 'a;

/// Where the tuning in force came from (see [`Shmem::retune`]).
#[derive(Debug, Clone, PartialEq)]
pub enum TuneSource {
    /// Measured by this job (and cached when the cache directory was writable).
    Measured,
    /// Read from the tuning cache.
    Cached,
    /// No tuning: the reason (profile without costs, fewer than two nodes, no boards,
    /// `SHMEMPLUS_TUNE=off`).
    Skipped(String),
}

/// A route and size bucket for the packet cache: (put?, local place, remote place,
/// crosses nodes?, size rounded up to a power of two).
type PacketKey = (bool, Option<Place>, Place, bool, usize);

/// The handle of an initialized PE. Cheap to clone (all clones are the same PE);
/// the PE is finalized by [`Shmem::finalize`] or when the last clone is dropped.
///
/// ```
/// let shmem = shmemplus::init()?;
/// let me = shmem.my_pe();
/// let n = shmem.n_pes();
/// // A symmetric array of 4 u64 on every PE; write my rank into the next PE's copy.
/// let slots = shmem.alloc::<u64>(4, shmemplus::Place::Cpu)?;
/// shmem.p(&slots, 0, me as u64, (me + 1) % n)?;
/// shmem.barrier_all()?;
/// let from_left = shmem.local_read_one(&slots, 0)?;
/// assert_eq!(from_left, ((me + n - 1) % n) as u64);
/// shmem.free(slots)?;
/// shmem.finalize()?;
/// # Ok::<(), shmemplus::Error>(())
/// ```
#[derive(Clone)]
pub struct Shmem {
    inner: Arc<Inner>,
}

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// Starts this PE: reads the launcher's environment (or runs as a one-PE job without
/// one), maps every PE's symmetric heap and starts the progress thread. Call once per
/// process; clone the handle to use it from several threads.
///
/// Environment: `SHMEM_SYMMETRIC_SIZE` (heap bytes, e.g. `512M`), `SHMEM_DEBUG` or
/// `RUST_LOG` (logs), `SHMEM_INFO` (print the configuration), `SHMEM_VERSION` (print
/// the version), `SHMEMPLUS_CONDUIT=shm|am`, `SHMEMPLUS_AM_RING` (bytes per AM ring).
///
/// `init` removes the job secret `SHMEMPLUS_SECRET` from the process environment, so
/// that programs this PE starts do not inherit it. Like `std::env::remove_var`, that
/// must not race with C code reading the environment (`getenv`) on another thread:
/// call `init` before starting threads that do, first thing in `main` at best.
pub fn init() -> Result<Shmem> {
    if INITIALIZED.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyInitialized);
    }
    let config = Config::from_env()?;
    init_logging(&config);
    let profile = netsim::Profile::load(&config.profile).map_err(|e| Error::BadConfig {
        var: "SHMEMPLUS_PROFILE",
        why: e.to_string(),
    })?;
    // Before any thread of the library starts (see `take_from_env` for why that
    // makes removing the secret from the environment sound).
    let env = LaunchEnv::take_from_env()?;
    let (me, topology, job_id) = match &env {
        Some(e) => (e.pe, e.topology, Some(e.job_id.clone())),
        None => (0, Topology::resolve(1, None, None)?, None),
    };
    let n = topology.n_pes as usize;
    let layout = Layout::new(n, config.am_ring_bytes, config.symmetric_size)?;
    let (segs, bootstrap) = match (&env, job_id) {
        (Some(env), Some(job_id)) => map_job(env, &job_id, layout, &config)?,
        _ => (
            JobSegments {
                me: 0,
                segs: vec![Segment::anonymous(0, layout)?],
            },
            None,
        ),
    };
    let segs = Arc::new(segs);
    let emulation = Emulation::new(&profile, topology, segs.clone());
    let policy = WaitPolicy::for_host(n).with_overrides(config.wait_spin, config.wait_yield);
    let am = Arc::new(AmEngine::new(segs.clone(), policy));
    let t = &profile.topology;
    let boards = Arc::new(Boards::new(
        config.fpgas.unwrap_or(t.boards_per_node),
        t.board_memory,
        topology.pes_per_node,
        t.dma_min_bytes,
        t.dma_align,
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
            boards,
            packet_policy: std::sync::atomic::AtomicU64::new(config.packet.encode()),
            packet_cache: Mutex::new(std::collections::HashMap::new()),
            tuning: Mutex::new(None),
            config,
        }),
    };
    shmem.announce();
    let mode = shmem.inner.config.tune;
    match shmem.retune(mode) {
        Ok(TuneSource::Measured) => tracing::info!("self-tuning pass measured the hops"),
        Ok(source) => tracing::debug!(?source, "self-tuning"),
        Err(e) => tracing::warn!("self-tuning failed, packets come from the profile: {e}"),
    }
    Ok(shmem)
}

/// How long `shutdown` waits for the progress thread to stop before leaving it behind
/// (it notices a stop within one sleep slice; only a handler that blocks holds it).
const PROGRESS_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The progress thread as the handle holds it: a watcher thread joins it, so that
///
/// - a panic on it ends this PE at once, with a message naming the PE (its peers
///   would otherwise wait forever for AMs it no longer serves, and the launcher ends
///   the job when a PE exits non-zero, naming it);
/// - `shutdown` can wait for it with a timeout, which `JoinHandle::join` cannot.
struct ProgressWatch {
    /// Gets a message when the progress thread has returned normally.
    stopped: std::sync::mpsc::Receiver<()>,
}

/// Starts the watcher of the progress thread `thread` of PE `me`.
///
/// Protocol: the watcher is the only joiner. When the progress thread returns, the
/// watcher sends one message on a channel of capacity 1 (never blocks) and ends;
/// `shutdown` waits for that message with a timeout. When it panics, the watcher
/// reports and exits the process instead, so no message is ever sent: a `shutdown`
/// waiting then either sees the process end or times out, both harmless.
fn watch_progress(me: u32, thread: JoinHandle<()>) -> Result<ProgressWatch> {
    let (tx, stopped) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("shmemplus-watch-{me}"))
        .spawn(move || match thread.join() {
            Ok(()) => {
                let _ = tx.send(());
            }
            Err(payload) => {
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                crate::fatal::end_job(
                    me as usize,
                    &format!(
                        "the progress thread panicked ({why}); its peers would otherwise wait for it forever"
                    ),
                );
            }
        })
        .map_err(|e| Error::os("starting the progress thread's watcher", e))?;
    Ok(ProgressWatch { stopped })
}

/// Test hook, in debug builds only: `SHMEMPLUS_TEST_PANIC_PROGRESS=<pe>` makes PE
/// `<pe>`'s progress thread panic as soon as it runs, so that the integration tests
/// can check that the PE ends the job instead of stranding its peers.
#[cfg(debug_assertions)]
fn test_panic_progress_if_asked(am: &AmEngine, me: u32) {
    /// A built-in handler slot no module uses (ids below `USER_BASE`).
    const H_TEST_PANIC: u16 = crate::am::USER_BASE - 1;
    let asked = std::env::var("SHMEMPLUS_TEST_PANIC_PROGRESS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    if asked == Some(me) {
        am.register_builtin(
            H_TEST_PANIC,
            Arc::new(|_, _| panic!("SHMEMPLUS_TEST_PANIC_PROGRESS asked for a panic")),
        );
        am.post(me as usize, H_TEST_PANIC, [0; 4], &[]);
    }
}

fn init_logging(config: &Config) {
    use tracing_subscriber::EnvFilter;
    let filter = match EnvFilter::try_from_default_env() {
        Ok(f) => f,
        Err(_) if config.debug => EnvFilter::new("shmemplus=debug"),
        Err(_) => EnvFilter::new("warn"),
    };
    // A program with its own subscriber keeps it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Creates this PE's segment, exchanges names with every PE through the launcher, maps
/// every segment, and unlinks its own name once all PEs have mapped it.
fn map_job(
    env: &LaunchEnv,
    job_id: &str,
    layout: Layout,
    config: &Config,
) -> Result<(JobSegments, Option<BootstrapConn>)> {
    if env.pe == 0 {
        warn_if_shm_too_small(layout.total_bytes(), env.topology.n_pes as usize);
    }
    // An unguessable name, created exclusively: nobody can have made it first.
    let mine = crate::segment::unique_name(job_id, env.pe)
        .and_then(|name| Segment::create(&name, env.pe, layout).map(|seg| (seg, name)));
    let mut conn = BootstrapConn::connect(env)?;
    let hello = PeHello {
        pid: std::process::id(),
        segment: mine
            .as_ref()
            .map(|(_, name)| name.clone())
            .map_err(|e| e.to_string()),
        heap_bytes: config.symmetric_size as u64,
        ring_bytes: config.am_ring_bytes as u64,
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
    tracing::debug!(pe = env.pe, "mapped {} segments", segs.len());
    Ok((
        JobSegments {
            me: env.pe as usize,
            segs,
        },
        Some(conn),
    ))
}

/// Heaps are backed lazily, so a /dev/shm smaller than the job's heaps only fails when
/// the pages are touched (SIGBUS). Say so up front.
fn warn_if_shm_too_small(segment_bytes: usize, n_pes: usize) {
    let Ok(st) = rustix::fs::statvfs("/dev/shm") else {
        return;
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let need = (segment_bytes as u64).saturating_mul(n_pes as u64);
    if free < need {
        tracing::warn!(
            "/dev/shm has {free} bytes free but {n_pes} PEs may use {need}: a PE that fills its \
             heap past the free space dies with SIGBUS; lower SHMEM_SYMMETRIC_SIZE or grow /dev/shm"
        );
    }
}

impl Shmem {
    fn announce(&self) {
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

    fn live(&self) -> Result<&Inner> {
        if self.inner.finalized.load(Ordering::Relaxed) {
            return Err(Error::Finalized);
        }
        Ok(&self.inner)
    }

    /// This PE's rank, `0..n_pes`.
    pub fn my_pe(&self) -> u32 {
        self.inner.me
    }

    /// Number of PEs in the job.
    pub fn n_pes(&self) -> u32 {
        self.inner.topology.n_pes
    }

    /// The simulated node this PE is on.
    pub fn node(&self) -> u32 {
        self.inner.topology.node_of(self.inner.me)
    }

    /// The job's topology (nodes, PEs per node).
    pub fn topology(&self) -> Topology {
        self.inner.topology
    }

    /// The configuration this PE runs with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The cluster profile this job emulates (`SHMEMPLUS_PROFILE`; `native` by default).
    pub fn profile(&self) -> &netsim::Profile {
        &self.inner.profile
    }

    /// The modeled time, in seconds, of one `op` of `bytes` between this PE and PE
    /// `pe` on an idle emulated network: `None` when the profile's network is free
    /// (nothing is modeled), `Some(0.0)` between PEs of one node.
    ///
    /// ```
    /// let shmem = shmemplus::init()?; // native profile: nothing is modeled
    /// assert_eq!(shmem.modeled_seconds(shmemplus::RmaOp::Put, 0, 1024)?, None);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn modeled_seconds(&self, op: RmaOp, pe: u32, bytes: usize) -> Result<Option<f64>> {
        self.modeled_route_seconds(op, None, Place::Cpu, pe, bytes)
    }

    /// As [`Shmem::modeled_seconds`] for any pair of places: `local` is this PE's side
    /// (`None` for a private host buffer, else a place of this PE), `remote` the place
    /// on PE `pe`. A put goes local -> remote, a get remote -> local (at offset 0). The
    /// model is the one the transfer itself is charged by, packetized under the
    /// current packet policy.
    pub fn modeled_route_seconds(
        &self,
        op: RmaOp,
        local: Option<Place>,
        remote: Place,
        pe: u32,
        bytes: usize,
    ) -> Result<Option<f64>> {
        let target = self.check_pe(pe)?;
        let Some(emu) = &self.inner.emulation else {
            return Ok(None);
        };
        self.check_route_bytes(local, remote, bytes)?;
        self.hops(op, local.map(|p| (p, 0)), (target, remote, 0), bytes)?;
        let mut hops_of = |at: usize, len: usize| {
            self.hops(op, local.map(|p| (p, at)), (target, remote, at), len)
                .unwrap_or_default()
        };
        let packet = self.packet_size(op, local, (target, remote), bytes, &mut hops_of);
        Ok(Some(emu.modeled_packets(bytes, packet, &mut hops_of)))
    }

    /// The packet size this PE uses for a transfer of `bytes` on a route under the
    /// current policy (`bytes` means no packetization), as `modeled_route_seconds`.
    pub fn route_packet_bytes(
        &self,
        op: RmaOp,
        local: Option<Place>,
        remote: Place,
        pe: u32,
        bytes: usize,
    ) -> Result<usize> {
        let target = self.check_pe(pe)?;
        if self.inner.emulation.is_some() {
            // The model will be consulted: the route must be one a transfer can take.
            self.check_route_bytes(local, remote, bytes)?;
            self.hops(op, local.map(|p| (p, 0)), (target, remote, 0), bytes)?;
        }
        let mut hops_of = |at: usize, len: usize| {
            self.hops(op, local.map(|p| (p, at)), (target, remote, at), len)
                .unwrap_or_default()
        };
        Ok(self.packet_size(op, local, (target, remote), bytes, &mut hops_of))
    }

    /// Refuses a modeled transfer that no object could take part in: one larger than
    /// the CPU symmetric heap at a CPU end (a board end is checked by the board's DMA
    /// span rule in `hops`). This bounds the model's work and keeps its sizes far from
    /// overflow.
    fn check_route_bytes(&self, local: Option<Place>, remote: Place, bytes: usize) -> Result<()> {
        let heap = self.inner.segs.mine().heap_bytes();
        if bytes > heap && (local == Some(Place::Cpu) || remote == Place::Cpu) {
            return Err(Error::InvalidArgument(format!(
                "a transfer of {bytes} bytes to or from the CPU heap: the heap has {heap} bytes \
                 (SHMEM_SYMMETRIC_SIZE), so no object can take part in it"
            )));
        }
        Ok(())
    }

    // ---------------------------------------------------------------- boards

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

    fn coll(&self) -> MutexGuard<'_, Collectives> {
        self.inner.coll.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_pe(&self, pe: u32) -> Result<usize> {
        if pe >= self.n_pes() {
            return Err(Error::InvalidPe {
                pe,
                n_pes: self.n_pes(),
            });
        }
        Ok(pe as usize)
    }

    /// Checks `obj[index..index + count]` and returns its byte offset in the heap and
    /// its byte length.
    fn locate<T: Pod>(
        &self,
        obj: &SymVec<T>,
        index: usize,
        count: usize,
    ) -> Result<(usize, usize)> {
        if obj.job != self.inner.job {
            return Err(Error::ForeignObject);
        }
        if index.checked_add(count).is_none_or(|end| end > obj.len) {
            return Err(Error::OutOfBounds {
                start: index,
                end: index.saturating_add(count),
                len: obj.len,
            });
        }
        // index + count <= len, and the object's len * elem bytes lie inside the heap,
        // so none of these can overflow for an object `alloc` made; they are checked
        // all the same, so that a wrong object can only ever be an error.
        let elem = size_of::<T>();
        let located = index.checked_mul(elem).and_then(|at| {
            let bytes = count.checked_mul(elem)?;
            Some((obj.offset.checked_add(at)?, bytes))
        });
        located.ok_or_else(|| overflowing_range(obj.offset, index, count, elem))
    }

    // ---------------------------------------------------------------- collectives

    /// Allocates a symmetric object of `len` elements on every PE (collective: every
    /// PE must call it with the same `len`, `T` size and place, in the same order).
    ///
    /// The object is 64-byte aligned (4 KiB aligned from 64 KiB up), zero-filled, and
    /// ready for remote access when the call returns on every PE (it ends with a
    /// barrier). A mismatch between PEs returns [`Error::NonSymmetric`] on every PE;
    /// an exhausted heap returns [`Error::HeapExhausted`] (on a board,
    /// [`Error::BoardHeapExhausted`]) on every PE, and a `len` whose size in bytes
    /// overflows returns [`Error::SizeOverflow`] on every PE.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<f64>(1024, shmemplus::Place::Cpu)?;
    /// assert_eq!(v.len(), 1024);
    /// assert_eq!(v.heap_offset() % 64, 0);
    /// // Too big for the heap: a clear error, nothing allocated.
    /// let err = shmem.alloc::<u8>(1 << 40, shmemplus::Place::Cpu).unwrap_err();
    /// assert!(err.to_string().contains("SHMEM_SYMMETRIC_SIZE"));
    /// // Too big for any heap: the size itself overflows.
    /// let err = shmem.alloc::<u64>(usize::MAX / 4, shmemplus::Place::Cpu).unwrap_err();
    /// assert!(matches!(err, shmemplus::Error::SizeOverflow { .. }));
    /// shmem.free(v)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, len: usize, place: Place) -> Result<SymVec<T>> {
        let inner = self.live()?;
        // A size that overflows is not returned yet: this PE must still take part in
        // the symmetry check, or the PEs that did not overflow would wait for it
        // forever. It is published as a size no request can have (`u64::MAX`, with
        // the element count beside it), so PEs that all overflow alike pass the check
        // and all return SizeOverflow below, and PEs that differ all get NonSymmetric.
        let bytes = Error::bytes_of(len, size_of::<T>());
        let align = align_of::<T>();
        let mut coll = self.coll();
        let slot = self.heap_slot(place);
        let planned = match (&slot, &bytes) {
            (Ok(i), Ok(bytes)) => match coll.heaps[*i].alloc.plan(*bytes, align) {
                Ok(off) => off as u64,
                Err(_) => u64::MAX,
            },
            (Err(_), _) => u64::MAX - 1,
            (Ok(_), Err(_)) => u64::MAX - 2,
        };
        let (size_word, len_word) = match &bytes {
            Ok(b) => (*b as u64, 0),
            Err(_) => (OVERFLOWING_SIZE, len as u64),
        };
        self.symmetric_check(
            &mut coll,
            [
                COLL_ALLOC,
                size_word,
                align as u64,
                place.to_wire(),
                planned,
                len_word,
            ],
        )?;
        let bytes = bytes?;
        let slot = slot?;
        let heap = &mut coll.heaps[slot];
        let offset = heap.alloc.alloc(bytes, align).map_err(|e| match place {
            Place::Cpu => Error::HeapExhausted {
                requested: e.requested,
                largest_free: e.largest_free,
                heap: heap.alloc.size(),
            },
            Place::Fpga(board) => Error::BoardHeapExhausted {
                board,
                requested: e.requested,
                largest_free: e.largest_free,
                partition: heap.alloc.size(),
            },
        })?;
        // Memory below the high-water mark was used before: clear it so the object
        // starts zeroed on every PE. Above it the memory is still fresh zeros. The
        // allocator placed [offset, offset + bytes) inside the heap: the end fits.
        let end = offset.saturating_add(bytes);
        let reused_end = end.min(heap.high_water);
        heap.high_water = heap.high_water.max(end);
        let zeroed = if reused_end > offset {
            self.zero(place, offset, reused_end - offset)
        } else {
            Ok(())
        };
        // Every PE is committed to the closing barrier now: a failure here is this
        // PE's alone and must not leave the others waiting in it.
        crate::fatal::committed(inner.me, "alloc", zeroed);
        self.barrier_locked(&mut coll);
        tracing::debug!(pe = inner.me, offset, bytes, "symmetric alloc");
        Ok(SymVec {
            offset,
            len,
            place,
            job: inner.job,
            _elem: PhantomData,
        })
    }

    /// Frees a symmetric object (collective: every PE frees the same objects in the
    /// same order). Completes outstanding puts first (`quiet`) and synchronises, so no
    /// PE can still be writing into the object.
    pub fn free<T: Pod>(&self, obj: SymVec<T>) -> Result<()> {
        let inner = self.live()?;
        if obj.job != inner.job {
            return Err(Error::ForeignObject);
        }
        // A failed earlier put is reported after the collective part, which the other
        // PEs wait for.
        let completed = self.quiet();
        let mut coll = self.coll();
        // `alloc` checked this product; an object cannot hold more than the heap.
        let bytes = obj.len.saturating_mul(size_of::<T>());
        self.symmetric_check(
            &mut coll,
            [
                COLL_FREE,
                obj.offset as u64,
                bytes as u64,
                obj.place.to_wire(),
                0,
                0,
            ],
        )?;
        let slot = self.heap_slot(obj.place)?;
        if !coll.heaps[slot].alloc.free(obj.offset) {
            return Err(Error::ForeignObject);
        }
        completed
    }

    /// The index of `place`'s heap in `Collectives::heaps`, or why the place does not
    /// exist in this job.
    fn heap_slot(&self, place: Place) -> Result<usize> {
        match place {
            Place::Cpu => Ok(0),
            Place::Fpga(b) => self.inner.boards.board(b).map(|_| 1 + b as usize),
        }
    }

    /// Clears `len` bytes of this PE's `place` memory at `offset` (a block being
    /// reused by a new object; nobody else may touch it yet).
    fn zero(&self, place: Place, offset: usize, len: usize) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: offset..offset+len lies inside this PE's heap (the allocator
                // only hands out in-bounds blocks) and belongs to the new object, which
                // no PE may touch before the allocation's closing barrier.
                unsafe {
                    std::ptr::write_bytes(self.inner.segs.mine().heap_base().add(offset), 0, len)
                };
                Ok(())
            }
            Place::Fpga(b) => {
                let board = self.inner.boards.board(b)?;
                let zeros = vec![0u8; len.min(1 << 20)];
                for start in (0..len).step_by(zeros.len().max(1)) {
                    let n = zeros.len().min(len - start);
                    board
                        .write((offset + start) as u64, &zeros[..n])
                        .map_err(|source| Error::Board { board: b, source })?;
                }
                Ok(())
            }
        }
    }

    /// Publishes this PE's description of the current collective, synchronises, and
    /// compares it with every other PE's. On a mismatch every PE returns an error that
    /// names the first PE that differs.
    fn symmetric_check(&self, coll: &mut Collectives, words: [u64; 6]) -> Result<()> {
        let inner = &self.inner;
        coll.seq += 1;
        let seq = coll.seq;
        let slot = (seq % 2) as usize;
        let rec = &inner.segs.mine().control().coll[slot];
        for (w, v) in rec.words.iter().zip(words) {
            w.store(v, Ordering::Relaxed);
        }
        rec.seq.store(seq, Ordering::Release);
        self.barrier_locked(coll);
        for (pe, seg) in inner.segs.segs.iter().enumerate() {
            let r = &seg.control().coll[slot];
            let theirs: Vec<u64> = r.words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            if r.seq.load(Ordering::Acquire) != seq || theirs != words {
                return Err(Error::NonSymmetric(format!(
                    "collective call #{seq}: PE {} {} but PE {pe} {}",
                    inner.me,
                    describe(&words),
                    describe(&theirs)
                )));
            }
        }
        Ok(())
    }

    /// Waits until every PE has called `barrier_all`, after completing this PE's puts
    /// (`quiet`). Every put issued by any PE before the barrier is visible everywhere
    /// after it.
    pub fn barrier_all(&self) -> Result<()> {
        self.live()?.barrier_all()
    }

    fn barrier_locked(&self, _coll: &mut Collectives) {
        self.inner.world_barrier()
    }

    // ---------------------------------------------------------------- RMA

    /// Copies `src` into `dest[index..index + src.len()]` on PE `pe`. Returns when
    /// `src` may be reused; use [`Shmem::quiet`] (or a barrier) for completion.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let dest = shmem.alloc::<u32>(8, shmemplus::Place::Cpu)?;
    /// shmem.put(&dest, 2, &[7, 8, 9], shmem.my_pe())?;
    /// shmem.quiet()?;
    /// let mut back = [0u32; 4];
    /// shmem.get(&dest, 1, &mut back, shmem.my_pe())?;
    /// assert_eq!(back, [0, 7, 8, 9]);
    /// // Out of range: an error, nothing written.
    /// assert!(shmem.put(&dest, 6, &[1, 2, 3], 0).is_err());
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn put<T: Pod>(&self, dest: &SymVec<T>, index: usize, src: &[T], pe: u32) -> Result<()> {
        self.put_with(dest, index, src, pe, false)
    }

    /// `put`, whose modeled time is waited for now or (`deferred`, for `put_nbi`) at
    /// the next `quiet`.
    pub(super) fn put_with<T: Pod>(
        &self,
        dest: &SymVec<T>,
        index: usize,
        src: &[T],
        pe: u32,
        deferred: bool,
    ) -> Result<()> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, bytes) = self.locate(dest, index, src.len())?;
        let src_bytes: &[u8] = bytemuck::cast_slice(src);
        debug_assert_eq!(src_bytes.len(), bytes);
        // The modeled clock starts before the copy, so the copy hides in the model.
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        self.move_in(target, dest.place, offset, src_bytes)?;
        if let Some(start) = start {
            let remote = (target, dest.place, offset);
            self.emulate(RmaOp::Put, None, remote, bytes, start, deferred);
        }
        Ok(())
    }

    /// Copies `src[index..index + dst.len()]` from PE `pe` into `dst`; returns with the
    /// data. `src` may live on the CPU or on a board of `pe`'s node.
    pub fn get<T: Pod>(&self, src: &SymVec<T>, index: usize, dst: &mut [T], pe: u32) -> Result<()> {
        let inner = self.live()?;
        let target = self.check_pe(pe)?;
        let (offset, bytes) = self.locate(src, index, dst.len())?;
        let start = inner.emulation.as_ref().map(|_| netsim::now_ns());
        self.move_out(target, src.place, offset, bytemuck::cast_slice_mut(dst))?;
        if let Some(start) = start {
            self.emulate(
                RmaOp::Get,
                None,
                (target, src.place, offset),
                bytes,
                start,
                false,
            );
        }
        Ok(())
    }

    /// Copies `count` elements from this PE's own copy of `src` (at `src_index`; on the
    /// CPU or on one of this node's boards) into `dest[dest_index..]` on PE `pe`: the
    /// SHMEM+ transfer between any two places, e.g. from a local board to a remote
    /// board. Returns when the source may be reused; `quiet` completes it.
    ///
    /// ```
    /// use shmemplus::Place;
    /// let shmem = shmemplus::init()?;
    /// let (a, b) = (shmem.alloc::<u8>(64, Place::Cpu)?, shmem.alloc::<u8>(64, Place::Cpu)?);
    /// shmem.local_write(&a, 0, &[1, 2, 3])?;
    /// shmem.put_from(&b, 10, &a, 0, 3, shmem.my_pe())?;
    /// shmem.quiet()?;
    /// assert_eq!(shmem.local_to_vec(&b)?[10..13], [1, 2, 3]);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn put_from<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<()> {
        self.live()?;
        let target = self.check_pe(pe)?;
        let (src_off, bytes) = self.locate(src, src_index, count)?;
        let (dest_off, _) = self.locate(dest, dest_index, count)?;
        let (local, remote) = ((src.place, src_off), (target, dest.place, dest_off));
        self.transfer_between(RmaOp::Put, local, remote, bytes, false)
    }

    /// Copies `count` elements of `src[src_index..]` on PE `pe` into this PE's own copy
    /// of `dest` at `dest_index` (either on the CPU or on one of this node's boards);
    /// returns when the data is in place.
    pub fn get_into<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<()> {
        let (local, remote, bytes) = self.get_route(dest, dest_index, src, src_index, count, pe)?;
        self.transfer_between(RmaOp::Get, local, remote, bytes, false)
    }

    /// The checked (local, remote, bytes) of a get from `src[src_index..]` on PE `pe`
    /// into this PE's `dest[dest_index..]`.
    #[allow(clippy::type_complexity)]
    pub(super) fn get_route<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        src: &SymVec<T>,
        src_index: usize,
        count: usize,
        pe: u32,
    ) -> Result<((Place, usize), (usize, Place, usize), usize)> {
        self.live()?;
        let target = self.check_pe(pe)?;
        let (src_off, bytes) = self.locate(src, src_index, count)?;
        let (dest_off, _) = self.locate(dest, dest_index, count)?;
        Ok(((dest.place, dest_off), (target, src.place, src_off), bytes))
    }

    /// A transfer between this PE's own `local` (place, offset) and `remote` (PE,
    /// place, offset), staged in `STAGE_BYTES` pieces: a put reads local and writes
    /// remote, a get the other way round. Offsets were checked by the caller.
    pub(super) fn transfer_between(
        &self,
        op: RmaOp,
        (place, offset): (Place, usize),
        remote: (usize, Place, usize),
        bytes: usize,
        deferred: bool,
    ) -> Result<()> {
        let start = self.inner.emulation.as_ref().map(|_| netsim::now_ns());
        let (target, remote_place, remote_offset) = remote;
        let inner = &self.inner;
        if (place, remote_place, inner.config.conduit) == (Place::Cpu, Place::Cpu, Conduit::Shm) {
            // Both ends are mapped CPU heaps: one copy, no staging.
            let mine = inner.segs.mine().heap_base();
            let theirs = inner.segs.segs[target].heap_base();
            // SAFETY: both ranges were checked against their objects by the caller, so
            // they lie inside mapped heaps. They can only overlap when the target is
            // this PE, and `ptr::copy` (memmove) is used then.
            unsafe {
                let (from, to) = match op {
                    RmaOp::Put => (mine.add(offset), theirs.add(remote_offset)),
                    RmaOp::Get => (theirs.add(remote_offset), mine.add(offset)),
                };
                if target == inner.segs.me {
                    std::ptr::copy(from, to, bytes);
                } else {
                    crate::copy::copy_bytes(from, to, bytes);
                }
            }
            if op == RmaOp::Put {
                inner.wake_later(target);
            }
            if let Some(start) = start {
                self.emulate(op, Some((place, offset)), remote, bytes, start, deferred);
            }
            return Ok(());
        }
        // A transfer from this PE's memory to the same memory (`put_from`/`get_into`
        // of one object to itself) may read and write overlapping ranges; the result
        // must be that of `memmove`. Each piece is read whole into the stage before it
        // is written, so only the order of the pieces matters: when the destination
        // lies above an overlapping source, go from the last piece to the first, so
        // that no piece is written over source bytes a later piece has yet to read
        // (forward order is right in every other case). That holds even when the
        // writes are AMs applied later: they only ever land on bytes already read.
        let (src_off, dst_off) = match op {
            RmaOp::Put => (offset, remote_offset),
            RmaOp::Get => (remote_offset, offset),
        };
        let same_memory = target == inner.segs.me && place == remote_place;
        let backward = same_memory && dst_off > src_off && dst_off - src_off < bytes;
        let pieces = bytes.div_ceil(STAGE_BYTES);
        let mut stage = vec![0u8; bytes.min(STAGE_BYTES)];
        // at < bytes, and the caller checked offset + bytes (and remote_offset + bytes)
        // against their objects, so the sums below cannot overflow.
        for k in 0..pieces {
            // Below `bytes` (piece index < pieces), so neither step can overflow.
            let index = if backward { pieces - 1 - k } else { k };
            let at = index * STAGE_BYTES;
            let piece = &mut stage[..STAGE_BYTES.min(bytes - at)];
            match op {
                RmaOp::Put => {
                    self.move_out_own(place, offset + at, piece)?;
                    self.move_in(target, remote_place, remote_offset + at, piece)?;
                }
                RmaOp::Get => {
                    self.move_out(target, remote_place, remote_offset + at, piece)?;
                    self.move_in_own(place, offset + at, piece)?;
                }
            }
        }
        if let Some(start) = start {
            self.emulate(op, Some((place, offset)), remote, bytes, start, deferred);
        }
        Ok(())
    }

    /// Moves `src` into `place` memory of PE `target` at byte `offset` (checked by the
    /// caller against the object): a copy into a mapped CPU heap, an AM, or a DMA write
    /// into one of this PE's boards.
    fn move_in(&self, target: usize, place: Place, offset: usize, src: &[u8]) -> Result<()> {
        let inner = &self.inner;
        match place {
            Place::Cpu => match inner.config.conduit {
                Conduit::Shm => {
                    // SAFETY: offset..offset+len is inside the target's heap (`locate`
                    // checked it against the object, which the allocator placed inside
                    // the heap) and the target's segment stays mapped while `inner`
                    // lives. Safe code has no slice into a symmetric heap, and the
                    // unsafe `local_slice*` contract forbids puts into memory such a
                    // slice covers while it lives; should a source overlap the range
                    // anyway, `copy_may_overlap` moves it as `memmove` would. Concurrent
                    // access to the target range by other PEs is the program's race, as
                    // in OpenSHMEM; we never create a Rust reference to shared bytes.
                    unsafe {
                        copy_may_overlap(
                            src.as_ptr(),
                            inner.segs.segs[target].heap_base().add(offset),
                            src.len(),
                            target == inner.segs.me,
                        )
                    };
                    inner.wake_later(target);
                    Ok(())
                }
                Conduit::Am => {
                    inner.am.put(target, offset, src);
                    Ok(())
                }
            },
            Place::Fpga(b) => {
                let board = inner.boards.board(b)?;
                if target == inner.segs.me {
                    board
                        .write(offset as u64, src)
                        .map(|_| ())
                        .map_err(|source| Error::Board { board: b, source })
                } else {
                    inner
                        .am
                        .put_via(target, H_FPGA_PUT, u64::from(b), offset, src);
                    Ok(())
                }
            }
        }
    }

    /// Moves `src` into this PE's own `place` memory at `offset` directly (no conduit:
    /// it is this PE's memory), complete on return.
    fn move_in_own(&self, place: Place, offset: usize, src: &[u8]) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: in bounds of this PE's heap (checked by the caller against the
                // object); `src` is `transfer_between`'s private staging buffer (the
                // only caller), so the ranges cannot overlap.
                unsafe {
                    crate::copy::copy_bytes(
                        src.as_ptr(),
                        self.inner.segs.mine().heap_base().add(offset),
                        src.len(),
                    )
                };
                Ok(())
            }
            Place::Fpga(_) => self.move_in(self.inner.segs.me, place, offset, src),
        }
    }

    /// Moves bytes out of this PE's own `place` memory at `offset` directly.
    fn move_out_own(&self, place: Place, offset: usize, dst: &mut [u8]) -> Result<()> {
        match place {
            Place::Cpu => {
                // SAFETY: as in `move_in_own`, in the other direction.
                unsafe {
                    crate::copy::copy_bytes(
                        self.inner.segs.mine().heap_base().add(offset),
                        dst.as_mut_ptr(),
                        dst.len(),
                    )
                };
                Ok(())
            }
            Place::Fpga(_) => self.move_out(self.inner.segs.me, place, offset, dst),
        }
    }

    /// Moves bytes out of `place` memory of PE `target` at `offset` into `dst`.
    fn move_out(&self, target: usize, place: Place, offset: usize, dst: &mut [u8]) -> Result<()> {
        let inner = &self.inner;
        match place {
            Place::Cpu => match inner.config.conduit {
                Conduit::Shm => {
                    // SAFETY: as in `move_in`, with the roles swapped: the source range
                    // is in bounds of the target's mapped heap, and `dst` is an
                    // exclusive buffer of exactly that many bytes (overlap, which the
                    // `local_slice_mut` contract rules out, would still be a memmove).
                    unsafe {
                        copy_may_overlap(
                            inner.segs.segs[target].heap_base().add(offset),
                            dst.as_mut_ptr(),
                            dst.len(),
                            target == inner.segs.me,
                        )
                    };
                    Ok(())
                }
                Conduit::Am => inner.am.get(target, offset, dst),
            },
            Place::Fpga(b) => {
                let board = inner.boards.board(b)?;
                if target == inner.segs.me {
                    board
                        .read(offset as u64, dst)
                        .map(|_| ())
                        .map_err(|source| Error::Board { board: b, source })
                } else {
                    inner
                        .am
                        .get_via(target, H_FPGA_GET, u64::from(b), offset, dst)
                }
            }
        }
    }

    /// Charges an operation's route to the emulated cluster and waits as its semantics
    /// say (a put until its source is free, a get until its data is in place),
    /// packetized as the packet policy decides. Offsets were checked by the caller.
    fn emulate(
        &self,
        op: RmaOp,
        local: Option<(Place, usize)>,
        remote: (usize, Place, usize),
        bytes: usize,
        start: u64,
        deferred: bool,
    ) {
        let Some(emu) = &self.inner.emulation else {
            return;
        };
        let (pe, place, offset) = remote;
        let mut hops_of = |at: usize, len: usize| {
            self.hops(
                op,
                local.map(|(l, o)| (l, o + at)),
                (pe, place, offset + at),
                len,
            )
            .unwrap_or_default()
        };
        let packet = self.packet_size(op, local.map(|l| l.0), (pe, place), bytes, &mut hops_of);
        emu.transfer_packets(op, bytes, packet, start, deferred, &mut hops_of);
    }

    /// The packet size for a transfer of `bytes` on a route (`bytes` = one packet).
    fn packet_size(
        &self,
        op: RmaOp,
        local: Option<Place>,
        (pe, place): (usize, Place),
        bytes: usize,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
    ) -> usize {
        let Some(emu) = &self.inner.emulation else {
            return bytes;
        };
        match self.packet_policy() {
            PacketPolicy::Off => bytes,
            PacketPolicy::Bytes(p) => p.clamp(1, bytes.max(1)),
            PacketPolicy::Auto => {
                let remote_node = self.inner.topology.node_of(pe as u32) != self.node();
                let key = (
                    op == RmaOp::Put,
                    local,
                    place,
                    remote_node,
                    // A size past 2^63 has no power of two: it is its own bucket.
                    bytes.checked_next_power_of_two().unwrap_or(bytes),
                );
                let mut cache = self
                    .inner
                    .packet_cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let tuned = self
                    .inner
                    .tuning
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .and_then(|t| {
                        // The tuning pass measured the three-stage board-to-board route.
                        let board_to_board =
                            matches!((local, place), (Some(Place::Fpga(_)), Place::Fpga(_)));
                        (board_to_board && remote_node)
                            .then(|| t.packet_for(bytes))
                            .flatten()
                    });
                if let Some(p) = tuned {
                    return p.min(bytes.max(1));
                }
                let packet = *cache.entry(key).or_insert_with(|| {
                    // Chosen for the size bucket's top; applied to every size in it.
                    emu.best_packet(key.4, hops_of)
                });
                packet.min(bytes.max(1))
            }
        }
    }

    /// Runs the self-tuning pass (MODEL.md section 5; collective: every PE calls it):
    /// PE 0 measures each hop (`net` to a PE of another node, `fpga_read` and
    /// `fpga_write` on its board 0) at a few sizes, fits their costs, and chooses the
    /// board-to-board packet size per size bucket with the k-stage model; the result
    /// is cached (`SHMEMPLUS_CACHE_DIR`, else the XDG cache directory) under a key of
    /// profile, topology and library version, and shared with every PE. With
    /// `TuneMode::Auto` a valid cached result is used instead of measuring; a corrupt
    /// or stale cache is rebuilt with a warning. `init` calls this per
    /// `SHMEMPLUS_TUNE`.
    pub fn retune(&self, mode: crate::TuneMode) -> Result<TuneSource> {
        use crate::tune;
        let inner = self.live()?;
        let t = inner.topology;
        let skip = if mode == crate::TuneMode::Off {
            Some("SHMEMPLUS_TUNE=off")
        } else if inner.emulation.is_none() {
            Some("the profile adds no cost")
        } else if t.nodes < 2 {
            Some("the job has one node")
        } else if self.fpgas() == 0 {
            Some("the nodes have no boards")
        } else {
            None
        };
        if let Some(why) = skip {
            return Ok(TuneSource::Skipped(why.into()));
        }
        let key = format!(
            "profile {} ({}), {} nodes x {} PEs, {} boards, shmemplus {}",
            inner.profile.name,
            inner.profile.source,
            t.nodes,
            t.pes_per_node,
            self.fpgas(),
            env!("CARGO_PKG_VERSION")
        );
        let probe_max = *tune::PROBE_SIZES.last().unwrap_or(&(8 << 20)) as usize;
        let board = self.alloc::<u8>(probe_max, Place::Fpga(0))?;
        let cpu = self.alloc::<u8>(probe_max, Place::Cpu)?;
        let wire = self.alloc::<u8>(64 << 10, Place::Cpu)?;
        let mut source = TuneSource::Measured;
        let outcome = (|| -> Result<()> {
            if self.my_pe() == 0 {
                let dir = tune::cache_dir();
                let cached = match (&dir, mode) {
                    (Some(d), crate::TuneMode::Auto) => match tune::load(d, &key) {
                        Ok(t) => Some(t),
                        Err(tune::CacheMiss::Missing) => None,
                        Err(miss) => {
                            tracing::warn!("tuning cache not usable ({miss:?}); tuning again");
                            None
                        }
                    },
                    _ => None,
                };
                let result = match cached {
                    Some(t) => {
                        source = TuneSource::Cached;
                        t
                    }
                    None => {
                        let t = self.measure_hops(key.clone(), &board, &cpu)?;
                        match dir.as_deref().map(|d| tune::store(d, &t)) {
                            Some(Ok(path)) => {
                                tracing::debug!("tuning cached in {}", path.display())
                            }
                            Some(Err(e)) => tracing::warn!("tuning not cached: {e}"),
                            None => tracing::warn!(
                                "tuning not cached: no cache directory (set SHMEMPLUS_CACHE_DIR)"
                            ),
                        }
                        t
                    }
                };
                let bytes = serde_json::to_vec(&result)
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
                if bytes.len() + 16 > wire.len() {
                    return Err(Error::InvalidArgument(
                        "tuning result too large to share".into(),
                    ));
                }
                // Wire: length (8 bytes), cached flag (8 bytes), the JSON result.
                let mut head = (bytes.len() as u64).to_le_bytes().to_vec();
                head.extend_from_slice(&u64::from(source == TuneSource::Cached).to_le_bytes());
                for pe in 0..self.n_pes() {
                    self.put(&wire, 0, &head, pe)?;
                    self.put(&wire, 16, &bytes, pe)?;
                }
            }
            Ok(())
        })();
        // Every PE reaches this barrier, whatever PE 0's outcome, so none is stranded.
        self.barrier_all()?;
        let mut head = [0u8; 16];
        self.local_read(&wire, 0, &mut head)?;
        let len = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8])) as usize;
        let cached = head[8] == 1;
        let fits = len.checked_add(16).is_some_and(|end| end <= wire.len());
        let shared = if outcome.is_ok() && len > 0 && fits {
            let mut bytes = vec![0u8; len];
            self.local_read(&wire, 16, &mut bytes)?;
            serde_json::from_slice::<tune::Tuning>(&bytes).ok()
        } else {
            None
        };
        self.free(wire)?;
        self.free(cpu)?;
        self.free(board)?;
        outcome?;
        let Some(result) = shared else {
            return Err(Error::InvalidArgument(
                "PE 0 shared no tuning result".into(),
            ));
        };
        *inner.tuning.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        inner
            .packet_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        Ok(if cached {
            TuneSource::Cached
        } else {
            TuneSource::Measured
        })
    }

    /// PE 0's measurements of the tuning pass: the median of 3 transfers of each probe
    /// size on each hop, through the library's own put/get paths (so on an emulated
    /// profile they include everything a transfer pays).
    fn measure_hops(
        &self,
        key: String,
        board: &SymVec<u8>,
        cpu: &SymVec<u8>,
    ) -> Result<crate::tune::Tuning> {
        let started = std::time::Instant::now();
        let t = self.inner.topology;
        let peer = t.pes_per_node; // the first PE of node 1
        let before = self.packet_policy();
        self.set_packet_policy(PacketPolicy::Off);
        let mut buf = vec![0u8; board.len()];
        let mut median = |f: &mut dyn FnMut(&mut [u8]) -> Result<()>| -> Result<f64> {
            let mut samples = [0.0f64; 3];
            for s in &mut samples {
                let t0 = std::time::Instant::now();
                f(&mut buf)?;
                *s = t0.elapsed().as_secs_f64();
            }
            samples.sort_by(f64::total_cmp);
            Ok(samples[1])
        };
        let names = ["net", "fpga_read", "fpga_write"];
        let mut hops: Vec<(String, Vec<(u64, f64)>)> = names
            .iter()
            .flat_map(|n| [n.to_string(), format!("{n}/occupancy")])
            .map(|n| (n, Vec::new()))
            .collect();
        let me = self.my_pe();
        // Back-to-back transfers per occupancy probe.
        const WINDOW: usize = 4;
        for &size in &crate::tune::PROBE_SIZES {
            let n = size as usize;
            // One transfer alone, then WINDOW back to back: the extra time per
            // transfer is what holds the hop (its latency overlaps the next one).
            let ops: [&Probe<'_>; 3] = [
                &|b| self.put(cpu, 0, &b[..n], peer),
                // A board read that returns when the read is done: to this PE's CPU.
                &|_| self.put_from(cpu, 0, board, 0, n, me),
                &|b| self.put(board, 0, &b[..n], me),
            ];
            for (i, op) in ops.iter().enumerate() {
                let single = median(&mut |b| {
                    op(b)?;
                    self.quiet()
                })?;
                let window = median(&mut |b| {
                    for _ in 0..WINDOW {
                        op(b)?;
                    }
                    self.quiet()
                })?;
                let occupancy = ((window - single) / (WINDOW - 1) as f64).clamp(0.0, single);
                hops[2 * i].1.push((size, single));
                hops[2 * i + 1].1.push((size, occupancy));
            }
        }
        self.set_packet_policy(before);
        Ok(crate::tune::Tuning::from_measurements(
            key,
            hops,
            started.elapsed().as_secs_f64(),
        ))
    }

    /// The tuning in force (from the last [`Shmem::retune`]), if any.
    pub fn tuning(&self) -> Option<crate::tune::Tuning> {
        self.inner
            .tuning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How multi-hop transfers are split into pipelined packets.
    pub fn packet_policy(&self) -> PacketPolicy {
        PacketPolicy::decode(self.inner.packet_policy.load(Ordering::Relaxed))
    }

    /// Sets the packet policy of this PE (as `SHMEMPLUS_PACKET` does at `init`).
    pub fn set_packet_policy(&self, policy: PacketPolicy) {
        self.inner
            .packet_policy
            .store(policy.encode(), Ordering::Relaxed);
    }

    /// The hops of a transfer of `bytes` between this PE and `(pe, place, offset)`:
    /// for a put, from this PE's `local` place (a host buffer when `None`) to the
    /// remote one; for a get, the request, then from the remote place back to `local`.
    /// DMA hops are charged on the span the board's engine really moves.
    fn hops(
        &self,
        op: RmaOp,
        local: Option<(Place, usize)>,
        (pe, place, offset): (usize, Place, usize),
        bytes: usize,
    ) -> Result<Vec<Hop>> {
        let me = self.inner.segs.me;
        let span = |b: u32, off: usize| -> Result<u64> {
            let board = self.inner.boards.board(b)?;
            board
                .span(off as u64, bytes as u64)
                .map(|s| s.len)
                .map_err(|source| Error::Board { board: b, source })
        };
        let l = bytes as u64;
        let mut hops = Vec::with_capacity(4);
        match op {
            RmaOp::Put => {
                if let Some((Place::Fpga(b), off)) = local {
                    hops.push(Hop::Read {
                        pe: me,
                        board: b,
                        bytes: span(b, off)?,
                    });
                }
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: l,
                });
                if let Place::Fpga(b) = place {
                    hops.push(Hop::Write {
                        pe,
                        board: b,
                        bytes: span(b, offset)?,
                    });
                }
            }
            RmaOp::Get => {
                hops.push(Hop::Net {
                    from: me,
                    to: pe,
                    bytes: 0,
                });
                if let Place::Fpga(b) = place {
                    hops.push(Hop::Read {
                        pe,
                        board: b,
                        bytes: span(b, offset)?,
                    });
                }
                hops.push(Hop::Net {
                    from: pe,
                    to: me,
                    bytes: l,
                });
                if let Some((Place::Fpga(b), off)) = local {
                    hops.push(Hop::Write {
                        pe: me,
                        board: b,
                        bytes: span(b, off)?,
                    });
                }
            }
        }
        Ok(hops)
    }

    /// Puts one element (OpenSHMEM `p`).
    pub fn p<T: Pod>(&self, dest: &SymVec<T>, index: usize, value: T, pe: u32) -> Result<()> {
        self.put(dest, index, std::slice::from_ref(&value), pe)
    }

    /// Gets one element (OpenSHMEM `g`).
    pub fn g<T: Pod>(&self, src: &SymVec<T>, index: usize, pe: u32) -> Result<T> {
        let mut v = T::zeroed();
        self.get(src, index, std::slice::from_mut(&mut v), pe)?;
        Ok(v)
    }

    /// Orders puts: puts to a PE issued before `fence` are delivered before puts to the
    /// same PE issued after it.
    pub fn fence(&self) -> Result<()> {
        let inner = self.live()?;
        match inner.config.conduit {
            // Shared-memory puts are stores; a release fence orders them. Puts to
            // boards travel as AMs, which a later store could overtake: complete them.
            Conduit::Shm => {
                fence(Ordering::Release);
                inner.flush_wakes();
                inner.am.quiet()?;
            }
            // AMs from one PE to another are served in order (one FIFO ring per pair).
            Conduit::Am => {}
        }
        Ok(())
    }

    /// Completes every put this PE issued: after `quiet` they are visible at their
    /// targets.
    pub fn quiet(&self) -> Result<()> {
        self.live()?.quiet()
    }

    // ---------------------------------------------------------------- local access

    fn local_ptr<T: Pod>(&self, obj: &SymVec<T>, index: usize, count: usize) -> Result<*mut u8> {
        let inner = self.live()?;
        if let Place::Fpga(b) = obj.place {
            return Err(Error::PlaceUnavailable(format!(
                "board {b} memory has no CPU address: copy it with local_read/local_write or get/put"
            )));
        }
        let (offset, _) = self.locate(obj, index, count)?;
        // SAFETY: `locate` checked the range against the object, which lies inside this
        // PE's heap.
        Ok(unsafe { inner.segs.mine().heap_base().add(offset) })
    }

    /// Copies `obj[index..index + dst.len()]` of this PE's own copy into `dst` (a local
    /// load, no conduit involved; for an object on a board, a DMA read).
    pub fn local_read<T: Pod>(&self, obj: &SymVec<T>, index: usize, dst: &mut [T]) -> Result<()> {
        if obj.place != Place::Cpu {
            return self.get(obj, index, dst, self.my_pe());
        }
        let p = self.local_ptr(obj, index, dst.len())?;
        let dst: &mut [u8] = bytemuck::cast_slice_mut(dst);
        // SAFETY: `p` points at dst.len() in-bounds bytes of our own heap; `dst` is a
        // private exclusive buffer. No reference to the shared bytes is created.
        unsafe { crate::copy::copy_bytes(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Reads one element of this PE's own copy.
    pub fn local_read_one<T: Pod>(&self, obj: &SymVec<T>, index: usize) -> Result<T> {
        let mut v = T::zeroed();
        self.local_read(obj, index, std::slice::from_mut(&mut v))?;
        Ok(v)
    }

    /// Copies this PE's whole copy of `obj` into a new vector.
    pub fn local_to_vec<T: Pod>(&self, obj: &SymVec<T>) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); obj.len()];
        self.local_read(obj, 0, &mut v)?;
        Ok(v)
    }

    /// Copies `src` into this PE's own copy at `index` (a local store).
    pub fn local_write<T: Pod>(&self, obj: &SymVec<T>, index: usize, src: &[T]) -> Result<()> {
        if obj.place != Place::Cpu {
            // A DMA write into this PE's board, complete on return.
            self.put(obj, index, src, self.my_pe())?;
            return self.quiet();
        }
        let p = self.local_ptr(obj, index, src.len())?;
        let src: &[u8] = bytemuck::cast_slice(src);
        // SAFETY: as in `local_read`, in the other direction.
        unsafe { crate::copy::copy_bytes(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// Borrows this PE's own copy of `obj` as a slice, without copying.
    ///
    /// # Safety
    /// Other PEs can write this memory at any time with `put`. The caller must make sure
    /// none does while the slice lives (for example: between two `barrier_all` calls
    /// in a phase where no PE puts into `obj`), this PE included: no put, atomic or
    /// `local_write` into `obj` on this PE while the slice lives. Prefer
    /// [`Shmem::local_read`].
    pub unsafe fn local_slice<T: Pod>(&self, obj: &SymVec<T>) -> Result<&[T]> {
        let p = self.local_ptr(obj, 0, obj.len())?;
        // SAFETY: in bounds and aligned (heap blocks are 64-byte aligned, T: Pod); the
        // absence of concurrent writers is the caller's obligation (see above).
        Ok(unsafe { std::slice::from_raw_parts(p as *const T, obj.len()) })
    }

    /// Borrows this PE's own copy of `obj` mutably, without copying.
    ///
    /// # Safety
    /// As [`Shmem::local_slice`], and no other PE may read the memory either while the
    /// slice lives, nor this PE other than through the slice (no `get`, `put_from` or
    /// `local_read` of `obj` on this PE); and the caller must not hold two slices of
    /// one object at once.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn local_slice_mut<T: Pod>(&self, obj: &SymVec<T>) -> Result<&mut [T]> {
        let p = self.local_ptr(obj, 0, obj.len())?;
        // SAFETY: as in `local_slice`; exclusivity is the caller's obligation.
        Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut T, obj.len()) })
    }

    // ---------------------------------------------------------------- active messages

    /// Registers handler `id` (`0..64`) for user active messages on this PE. The
    /// handler runs on this PE's progress thread with the sender's PE and payload and
    /// returns the reply payload (or an error message for the sender). It must not call
    /// blocking shmemplus operations. Register the same handlers on every PE, then
    /// synchronise (`barrier_all`) before sending.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// shmem.am_register(0, |src, payload| Ok(payload.iter().rev().copied().collect()))?;
    /// shmem.barrier_all()?;
    /// let reply = shmem.am_request(shmem.my_pe(), 0, b"abc")?;
    /// assert_eq!(reply, b"cba");
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn am_register(
        &self,
        id: u16,
        handler: impl Fn(u32, &[u8]) -> std::result::Result<Vec<u8>, String> + Send + Sync + 'static,
    ) -> Result<()> {
        self.live()?.am.register_user(id, Box::new(handler))
    }

    /// Sends `payload` to user handler `id` on PE `pe` and waits for its reply.
    pub fn am_request(&self, pe: u32, id: u16, payload: &[u8]) -> Result<Vec<u8>> {
        let inner = self.live()?;
        let to = self.check_pe(pe)?;
        if id >= crate::am::USER_HANDLERS {
            return Err(Error::InvalidArgument(format!(
                "active-message handler id {id} is out of range 0..64"
            )));
        }
        inner
            .am
            .request(to, USER_BASE + id, payload)
            .map_err(|e| match e {
                Error::AmFailed { why, .. } if why.starts_with("no active-message handler") => {
                    Error::NoHandler { handler: id, pe }
                }
                other => other,
            })
    }

    /// Sends `payload` to PE `pe`'s built-in echo handler and returns the echoed bytes
    /// (one AM round trip; used to measure the AM layer).
    pub fn am_echo(&self, pe: u32, payload: &[u8]) -> Result<Vec<u8>> {
        let inner = self.live()?;
        let to = self.check_pe(pe)?;
        inner.am.request(to, H_ECHO, payload)
    }

    /// The address of this PE's own copy of `obj` in this process (for interfaces
    /// that deal in raw addresses, such as a C ABI). Valid while the handle lives.
    pub fn local_addr<T: Pod>(&self, obj: &SymVec<T>) -> Result<*mut T> {
        Ok(self.local_ptr(obj, 0, 0)?.cast())
    }

    /// Translates an address in this process back to (place, heap offset) if it lies
    /// inside this PE's symmetric heap: the inverse of [`Shmem::local_addr`].
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<u32>(8, shmemplus::Place::Cpu)?;
    /// let p = shmem.local_addr(&v)?;
    /// let third = p.wrapping_add(2) as *const u8;
    /// assert_eq!(shmem.locate_addr(third), Some((shmemplus::Place::Cpu, v.heap_offset() + 8)));
    /// assert_eq!(shmem.locate_addr(std::ptr::null()), None);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn locate_addr(&self, addr: *const u8) -> Option<(Place, usize)> {
        let seg = self.inner.segs.mine();
        let base = seg.heap_base() as usize;
        let off = (addr as usize).checked_sub(base)?;
        (off < seg.heap_bytes()).then_some((Place::Cpu, off))
    }

    /// Largest payload of one active message.
    pub fn am_max_payload(&self) -> usize {
        self.inner.am.max_payload()
    }

    // ---------------------------------------------------------------- shutdown

    /// Ends this PE's participation (collective: completes its puts and waits for every
    /// PE, then stops the progress thread). Any later call on any clone of the handle,
    /// including a second `finalize`, returns [`Error::Finalized`]. The progress
    /// thread gets a few seconds to stop; one held by an active-message handler that
    /// never returns is left behind with a warning, so `finalize` always returns.
    pub fn finalize(&self) -> Result<()> {
        if self.inner.finalized.load(Ordering::Acquire) {
            return Err(Error::Finalized);
        }
        let result = self.inner.barrier_all();
        if self.inner.finalized.swap(true, Ordering::AcqRel) {
            return Err(Error::Finalized);
        }
        self.inner.shutdown();
        result
    }
}

impl Inner {
    fn quiet(&self) -> Result<()> {
        if !self.flush_wakes() {
            fence(Ordering::SeqCst);
        }
        // AM puts: every put with the am conduit, and puts to other PEs' boards.
        self.am.quiet()?;
        if let Some(emu) = &self.emulation {
            emu.quiet();
        }
        Ok(())
    }

    fn barrier_all(&self) -> Result<()> {
        // A failed put is reported after the barrier: returning before it would leave
        // every other PE waiting in it.
        let completed = self.quiet();
        let _coll = self.coll.lock().unwrap_or_else(|e| e.into_inner());
        self.world_barrier();
        completed
    }

    /// A barrier of the world team (no quiet).
    fn world_barrier(&self) {
        let mut state = self.world.lock();
        self.team_barrier(&self.world, &mut state);
    }

    /// The next barrier of `team` (no quiet); the caller holds the team's counters.
    fn team_barrier(&self, team: &TeamInner, state: &mut crate::team::TeamState) {
        state.epoch += 1;
        self.epoch_high.fetch_max(state.epoch, Ordering::Relaxed);
        self.flush_wakes();
        crate::team::barrier(
            team,
            state.epoch,
            &self.segs,
            &self.policy,
            || self.am.pump_replies(),
            |to| {
                if let Some(emu) = &self.emulation {
                    emu.message(to);
                }
            },
        );
    }

    /// Notes that this PE stored into PE `to`'s CPU heap, so that `to` is woken if
    /// it sleeps in a wait (done lazily by `flush_wakes`: a put stays a plain copy).
    #[inline]
    fn wake_later(&self, to: usize) {
        self.wakes.note(to);
    }

    /// Wakes the PEs this PE stored into since the last call, if they sleep (the
    /// protocol and its argument are in `wake`). Runs in `quiet`, `fence`, barriers
    /// and before this PE waits, so a PE asleep in `wait_until` learns of a put
    /// promptly. Returns whether it issued a SeqCst fence.
    fn flush_wakes(&self) -> bool {
        self.wakes
            .flush(|pe| crate::sync::notify_fenced(&self.segs.segs[pe].control().user_signal))
    }

    fn shutdown(&self) {
        self.am.stop();
        let watch = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(watch) = watch {
            // Bounded: a handler that never returns must not hang finalize. Leaving
            // the thread behind is sound: it owns `Arc`s of everything it touches.
            use std::sync::mpsc::RecvTimeoutError;
            if let Err(RecvTimeoutError::Timeout) =
                watch.stopped.recv_timeout(PROGRESS_STOP_TIMEOUT)
            {
                tracing::warn!(
                    pe = self.me,
                    "the progress thread did not stop within {PROGRESS_STOP_TIMEOUT:?} (an \
                     active-message handler that blocks?); finalize goes on without it"
                );
            }
        }
        // Tell the launcher this PE is done, then close the connection.
        let conn = self
            .coll
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bootstrap
            .take();
        if let Some(mut conn) = conn {
            conn.finalized();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        // Finalize on drop is collective like `finalize`, except on a panicking PE:
        // that one must not wait for others in a barrier (the launcher ends the job).
        if !std::thread::panicking() {
            if let Err(e) = self.barrier_all() {
                tracing::warn!(pe = self.me, "implicit finalize: {e}");
            }
        }
        self.shutdown();
    }
}

/// Copies `len` bytes from `src` to `dst` as `memmove` does when the two ranges
/// overlap (`ptr::copy`), else with the data path's `copy::copy_bytes`. For copies
/// whose ranges are not known to be disjoint (a caller's buffer against this PE's own
/// heap); the check is two comparisons. Only this PE's own heap can overlap a
/// caller's buffer (safe code reaches no other mapping), so the callers pass
/// `may_overlap = false` for another PE's heap and skip the check.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
#[inline]
unsafe fn copy_may_overlap(src: *const u8, dst: *mut u8, len: usize, may_overlap: bool) {
    if !may_overlap {
        // SAFETY: forwarded to the caller, who knows the ranges are disjoint.
        return unsafe { crate::copy::copy_bytes(src, dst, len) };
    }
    let (s, d) = (src as usize, dst as usize);
    // Ranges of live memory do not wrap the address space, so neither sum overflows.
    let overlap = s < d.wrapping_add(len) && d < s.wrapping_add(len);
    if overlap {
        // SAFETY: forwarded to the caller; `ptr::copy` allows overlap.
        unsafe { std::ptr::copy(src, dst, len) }
    } else {
        // SAFETY: forwarded to the caller, and the ranges are disjoint.
        unsafe { crate::copy::copy_bytes(src, dst, len) }
    }
}

/// The error of an element range whose bytes cannot be counted (kept out of line:
/// `locate` is on every put and get).
#[cold]
#[inline(never)]
fn overflowing_range(offset: usize, index: usize, count: usize, elem: usize) -> Error {
    Error::SizeOverflow {
        what: format!("elements {index}..+{count} of {elem} bytes at heap offset {offset}"),
    }
}

fn describe(words: &[u64]) -> String {
    match words[0] {
        COLL_ALLOC if words[1] == OVERFLOWING_SIZE => format!(
            "allocates {} elements, whose size overflows, on {}",
            words[5],
            Place::wire_name(words[3])
        ),
        COLL_ALLOC => format!(
            "allocates {} bytes (alignment {}) on {}",
            words[1],
            words[2],
            Place::wire_name(words[3])
        ),
        COLL_FREE => format!(
            "frees the object at heap offset {} ({} bytes)",
            words[1], words[2]
        ),
        0 => "has not made this collective call".to_string(),
        k => format!("makes collective call of kind {k}"),
    }
}
