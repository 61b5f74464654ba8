//! `netsim`: the simulated cluster of shmemplus: cluster profiles and the emulation of
//! hop costs (latency, bandwidth, contention).
//!
//! - [`cost`]: the cost of one hop as a function of the message size (LogGP or a
//!   measured table interpolated log-log).
//! - [`profile`]: the profile files (TOML; builtins `native`, `mu`, `novo-g`): topology
//!   and the cost of every hop.
//! - [`timeline`]: lock-free "busy until" timelines of shared resources (NIC sides, DMA
//!   channels), the [`Timeline`] trait, charging transfers and hops on any timeline, and
//!   waiting for modeled deadlines.
//! - [`calendar`]: gap-filling reservation calendars, the timelines of virtual time
//!   (exact whatever the real order of requests).
//!
//! This crate must stay ignorant of PEs, routes and conduits: the library decides which
//! hops a transfer takes and which timelines (in its own shared memory) stand for which
//! resource, and asks this crate what each hop costs and when it completes.
//!
//! ```
//! use std::sync::atomic::AtomicU64;
//! use netsim::{charge_transfer, HopKind, Profile};
//!
//! let profile = Profile::load("novo-g")?;
//! let net = profile.cost(HopKind::Net).expect("novo-g models the network");
//! // Two NIC sides, idle; a 1 MiB transfer charged at t = 0.
//! let (send, recv) = (AtomicU64::new(0), AtomicU64::new(0));
//! let charge = charge_transfer(&send, &recv, 0, net, 1 << 20);
//! assert!(charge.delivered_ns > 700_000); // about 0.72 ms
//! # Ok::<(), netsim::ProfileError>(())
//! ```

pub mod calendar;
pub mod cost;
pub mod profile;
pub mod timeline;

pub use calendar::{reserve_pair, Calendar};
pub use cost::{Cost, CostError};
pub use profile::{HopKind, Profile, ProfileError, TopologySpec};
pub use timeline::{charge_hop, charge_transfer, now_ns, reserve, wait_until, Charge, Timeline};
