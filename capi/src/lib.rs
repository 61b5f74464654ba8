//! The OpenSHMEM 1.5 C interface of shmemplus: `libshmemplus.so` and `libshmemplus.a`,
//! declared by `include/shmem.h` (and `include/shmemx.h` for the multilevel address
//! space). A C or C++ program built with `shmemcc`/`shmemc++` links this library and
//! runs under `shmemrun` like a Rust PE.
//!
//! This crate is a thin binding: every routine checks its C arguments, turns addresses
//! into (place, offset) and calls the Rust API (`shmemplus`, named `rust` here), which
//! owns every data path (the one Route). It must not move bytes itself, keep a second
//! copy of any state the Rust handle has, or implement a protocol.
//!
//! | module | owns |
//! |---|---|
//! | `state` | the process's one handle, init/finalize bookkeeping, fatal errors |
//! | `addr` | C addresses: which place and offset a pointer names (CPU heap, statics, board windows) |
//! | `setup` | init, finalize, my_pe, n_pes, query and the legacy start-up names |
//! | `memory` | shmem_malloc and friends, the live-allocation table |
//! | `rma` | put and get in every typed, sized, scalar, strided and context form |
//! | `signal` | put with signal, `shmem_signal_fetch` |
//! | `amo` | atomic memory operations: every typed, context, nbi and deprecated form |
//! | `sync` | point-to-point synchronization: waits, tests, `shmem_signal_wait_until` |
//! | `shmemx` | the `shmemx_` board routines: allocation on boards, places, kernel runs |
//! | `team` | `shmem_team_t` handles, `SHMEM_TEAM_WORLD`/`SHARED`, splits and queries |
//! | `ctx` | `shmem_ctx_t` handles, `SHMEM_CTX_DEFAULT`, create/destroy/get_team |
//! | `locks` | `shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock` |
//! | `coll` | team collectives: sync_all, broadcast, collect, alltoall(s), reductions |
//! | `active_set` | the legacy active-set collectives, over `pSync` (its module doc says why) |
//!
//! Errors follow OpenSHMEM practice: a call with a wrong PE, an address that is not
//! symmetric or an exhausted heap prints one line naming the PE, the routine and the
//! argument, and ends the job (exit status 70, which `shmemrun` reports).

mod active_set;
mod addr;
mod amo;
mod coll;
mod ctx;
mod locks;
mod memory;
mod rma;
mod setup;
mod shmemx;
mod signal;
mod state;
mod sync;
mod team;
