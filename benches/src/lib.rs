//! criterion benches for shmemplus: `cargo bench -p shmemplus-benches`.
//!
//! They run as a one-PE job (no launcher), so they measure the library's own overhead
//! on each path: argument checks, the shared-mapping copy, the AM round trip through
//! the rings and the progress thread, and collective allocation. Multi-PE figures come
//! from `shmemplus bench`, which launches a real job.
