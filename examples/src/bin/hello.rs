//! `hello`: every PE publishes a value in a symmetric variable, then fetches the value
//! of the next PE and prints one line.
//!
//! ```text
//! shmemrun -n 4 target/release/hello
//! ```

use shmemplus::Place;

fn main() {
    if let Err(e) = run() {
        shmemplus::stderr_line(format_args!("hello: {e}"));
        std::process::exit(1);
    }
}

fn run() -> shmemplus::Result<()> {
    let shmem = shmemplus::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let value = shmem.alloc::<u64>(1, Place::Cpu)?;
    // Each PE's published value: 100 times its rank plus one.
    shmem.local_write(&value, 0, &[100 * u64::from(me) + 1])?;
    shmem.barrier_all()?;
    let next = (me + 1) % n;
    let fetched = shmem.g(&value, 0, next)?;
    println!(
        "hello from PE {me} of {n} on node {}: PE {next} holds {fetched}",
        shmem.node()
    );
    shmem.free(value)?;
    shmem.finalize()
}
