//! criterion benches for shmemplus: `cargo bench -p shmemplus-benches`.
//!
//! They run as a one-PE job (no launcher), so they measure the library's own overhead
//! on each path: argument checks, the shared-mapping copy, the AM round trip through
//! the rings and the progress thread, and collective allocation. Multi-PE figures come
//! from `shmemplus bench`, which launches a real job.
//!
//! The crate also builds `rma_bw` (`src/bin/rma_bw.rs`), the shmemplus twin of
//! `bench-oshmem/osh_rma.c`: OSU-style put/get between two PEs, run by
//! `bench-oshmem/rma.sh` in turn with the OSHMEM program.
