//! The user's handle, [`Shmem`], and the state behind it ([`Inner`]).
//!
//! This module owns the two structs, the job's identity (`my_pe`, `n_pes`, ...) and
//! the list of the handle's concerns, one file each:
//!
//! | file | owns |
//! |---|---|
//! | `place` | [`Place`], [`SymVec`], a place's wire word, locating elements |
//! | `init` | `init`/`init_with`: configuration, mapping the job's heaps (and the program's data, `statics`), the start-up report |
//! | `lifecycle` | the progress thread's watcher, `finalize`, shutdown and `Drop` |
//! | `alloc` | collective `alloc`/`free` and the symmetry check |
//! | `alloc_variants` | `alloc_zeroed`, `alloc_aligned`, `alloc_with_hints`, `realloc` |
//! | `rma` | put/get, `p`/`g`, `put_from`/`get_into`, the non-blocking forms, `fence`, `quiet` |
//! | `route` | how bytes reach a place of a PE: conduit, boards, hops, ordering |
//! | `tuning` | the model's view of a route, packet sizes, self-tuning |
//! | `strided` | strided RMA: `iput`, `iget` |
//! | `ctx` | communication contexts ([`Ctx`]): create, destroy, their `quiet`/`fence` |
//! | `local` | access to this PE's own copy (`local_read`, `local_slice`, addresses, `place_space`) |
//! | `access` | direct access to other PEs' copies: `ptr`, `pe_accessible`, `addr_accessible` |
//! | `thread` | thread levels: `init_thread`, `query_thread` |
//! | `exit` | `global_exit` |
//! | `boards` | loading and starting board kernels, [`BoardRun`] on the job clock |
//! | `turns` | turns in virtual-time order (`join_turns`, `wait_turn`, `leave_turns`) |
//! | `user_am` | user active messages |
//! | `atomics`, `p2p`, `locks` | atomic operations, waits and signals, distributed locks |
//! | `teams`, `collectives`, `calls` | teams, barriers, collectives and their agreement |
//!
//! None of them implements a transport (`am`, `segment`), waiting (`sync`) or
//! allocation policy (`heap`); they call them.
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

mod access;
mod alloc;
mod alloc_variants;
mod atomics;
mod boards;
mod calls;
mod collectives;
mod ctx;
mod exit;
mod init;
mod lifecycle;
mod local;
mod locks;
mod p2p;
mod place;
mod rma;
mod route;
mod strided;
mod teams;
mod thread;
mod time;
mod tuning;
mod turns;
mod user_am;
mod vtime;

pub use alloc_variants::MallocHints;
pub use boards::BoardRun;
pub use ctx::{Ctx, CtxOptions};
pub use init::{init, init_with, InitOptions};
pub use local::{AddressMap, PlaceSpace};
pub use place::{Place, SymVec};
pub use thread::{init_thread, ThreadLevel};
pub use tuning::TuneSource;

use crate::am::AmEngine;
use crate::bootstrap::BootstrapConn;
use crate::config::Config;
use crate::emulate::Emulation;
use crate::error::{Error, Result};
use crate::fpga::Boards;
use crate::heap::HeapAllocator;
use crate::segment::JobSegments;
use crate::sync::WaitPolicy;
use crate::team::TeamInner;
use crate::topology::Topology;
use lifecycle::ProgressWatch;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tuning::PacketKey;

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
    /// The clock modeled time runs on (wall or this PE's virtual clock).
    clock: Arc<crate::clock::JobClock>,
    /// Nothing to charge, stamp or trace: no emulation, the wall clock, tracing off
    /// (set at the end of `init`; one load on the native fast path of every operation).
    untimed: AtomicBool,
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

impl Shmem {
    #[inline]
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

    #[inline]
    fn check_pe(&self, pe: u32) -> Result<usize> {
        if pe >= self.n_pes() {
            return Err(Error::InvalidPe {
                pe,
                n_pes: self.n_pes(),
            });
        }
        Ok(pe as usize)
    }
}
