//! `netsim`: cluster profiles and the emulation of hop costs (latency, bandwidth,
//! contention) for shmemplus.
//!
//! **Status: empty.** Profiles and emulation arrive with the netsim issue; today every
//! transfer runs at the machine's own speed (what the `native` profile will mean). This
//! crate must stay ignorant of PEs: the library charges hops through it.
