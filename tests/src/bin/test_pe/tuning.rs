//! The `tune` scenario: where the job's tuning came from, and a retune on demand.

use shmemplus_tests::pe::e2s;

/// Reports where this job's tuning came from (per `SHMEMPLUS_TUNE`) and the chosen
/// packets; PE 0 also re-tunes on demand and checks the result is the same kind.
pub(crate) fn tune_report() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    if shmem.config().tune == shmemplus::TuneMode::Off {
        if shmem.tuning().is_some() {
            return Err("SHMEMPLUS_TUNE=off, yet a tuning is in force".into());
        }
        println!("PE {me}: tuning off");
        return shmem.finalize().map_err(e2s);
    }
    let t = shmem.tuning().ok_or("no tuning in force")?;
    let source = shmem.retune(shmemplus::TuneMode::Auto).map_err(e2s)?;
    let t2 = shmem.tuning().ok_or("no tuning after retune")?;
    if t2.packets != t.packets && source == shmemplus::TuneSource::Cached {
        return Err("a cached retune changed the packets".into());
    }
    println!(
        "PE {me}: tuned in {:.3} s; packets {:?}; retune source {source:?}",
        t.seconds, t.packets
    );
    shmem.finalize().map_err(e2s)
}
