//! How a job ends or waits: `panic` and `kill` (a PE dies after a barrier; the job must
//! end), `exit-early` (a PE exits 0 without finalize) and `idle` (a PE waiting in a
//! barrier burns no core).

use shmemplus::Place;
use shmemplus_tests::pe::{cpu_share, e2s};

/// Every PE passes a barrier; then PE `victim` panics (or SIGKILLs itself) while the
/// others put in a loop and wait in barriers, which never complete.
pub(crate) fn fail_after_barrier(victim: u32, kill: bool) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let data = shmem.alloc::<u8>(1 << 20, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: pid {} past the first barrier", std::process::id());
    if me == victim {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if kill {
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL)
                .map_err(|e| e.to_string())?;
        }
        panic!("PE {me} fails on purpose");
    }
    let buf = vec![me as u8; 1 << 20];
    for _ in 0..200 {
        shmem.put(&data, 0, &buf, victim).map_err(e2s)?;
        shmem.quiet().map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    Err(format!("PE {me}: a barrier with a dead PE completed"))
}

/// PE 0 sleeps 2 s before the barrier; the others measure the CPU time they spend
/// waiting (all threads of the process, progress thread included) and fail above 10%
/// of one core.
pub(crate) fn idle_barrier() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        std::thread::sleep(std::time::Duration::from_secs(2));
        shmem.barrier_all().map_err(e2s)?;
        return shmem.finalize().map_err(e2s);
    }
    let (waited, wall, share) = cpu_share(|| shmem.barrier_all());
    waited.map_err(e2s)?;
    println!(
        "PE {me}: waited {wall:.2} s in a barrier using {:.1}% of a core",
        share * 100.0
    );
    if wall < 1.0 {
        return Err(format!(
            "PE {me}: barrier returned after {wall:.2} s, before PE 0 arrived"
        ));
    }
    if share > 0.10 {
        return Err(format!(
            "PE {me}: idle wait burned {:.1}% of a core",
            share * 100.0
        ));
    }
    shmem.finalize().map_err(e2s)
}

/// PE 1 leaves with status 0 right after `init`, skipping finalize; the others wait in
/// a barrier it will never enter. The launcher must end the job, naming PE 1.
pub(crate) fn exit_early() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    if shmem.my_pe() == 1 {
        std::process::exit(0);
    }
    shmem.barrier_all().map_err(e2s)?;
    Err(format!(
        "PE {}: a barrier without PE 1 completed",
        shmem.my_pe()
    ))
}
