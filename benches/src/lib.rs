//! criterion benches for shmemplus (see `benches/benches`).
