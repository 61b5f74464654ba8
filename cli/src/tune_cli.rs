//! `shmemplus tune`: runs the self-tuning pass in a job of its own (2 PEs on 2 nodes
//! of the chosen profile), prints the measured hop costs and the chosen packets, and
//! with `--report` measures each chosen packet against its prediction. It drives the
//! library's `Shmem::retune`; it must not tune anything itself.

use crate::launcher::{apply_profile, run_job, JobOutcome, JobSpec, OutputMode};
use shmemplus::{Place, TuneMode};
use std::time::{Duration, Instant};

/// Options of `shmemplus tune`.
#[derive(Debug, Clone, clap::Args)]
pub struct TuneOptions {
    /// Cluster profile (default: SHMEMPLUS_PROFILE, else native, which has nothing to tune).
    #[arg(long, value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Also measure a remote FPGA -> FPGA put with each chosen packet and compare it
    /// with the predicted bandwidth.
    #[arg(long)]
    pub report: bool,
}

/// Launches the tuning job.
pub fn run(opts: &TuneOptions) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let mut spec = JobSpec::new(2, exe);
    spec.args = vec!["tune-pe".into()];
    if opts.report {
        spec.args.push("--report".into());
    }
    spec.nodes = Some(2);
    spec.output = OutputMode::Inherit;
    spec.handle_signals = true;
    spec.timeout = Some(Duration::from_secs(600));
    // The job tunes explicitly (forced), not at init.
    spec.env.push(("SHMEMPLUS_TUNE".into(), "off".into()));
    let profile = opts.profile.clone().or_else(|| {
        std::env::var("SHMEMPLUS_PROFILE")
            .ok()
            .filter(|p| !p.is_empty())
    });
    if let Some(p) = &profile {
        apply_profile(&mut spec, p, Some(2)).map_err(|e| e.to_string())?;
        spec.pes_per_node = Some(1);
    }
    let report = run_job(&spec).map_err(|e| e.to_string())?;
    match report.outcome {
        JobOutcome::Success => Ok(()),
        _ => Err(format!("tuning job failed: {}", report.message())),
    }
}

/// One PE of the tuning job.
pub fn run_pe(report: bool) -> Result<(), String> {
    let err = |e: shmemplus::Error| e.to_string();
    let shmem = shmemplus::init().map_err(err)?;
    let me = shmem.my_pe();
    let bar = (me == 0).then(|| {
        use std::io::IsTerminal;
        let bar = if std::io::stderr().is_terminal() {
            indicatif::ProgressBar::new_spinner()
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_message("measuring the hops");
        bar.enable_steady_tick(Duration::from_millis(100));
        bar
    });
    let started = Instant::now();
    let source = shmem.retune(TuneMode::Force).map_err(err)?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let Some(t) = shmem.tuning() else {
        if me == 0 {
            println!("nothing tuned: {source:?}");
        }
        return shmem.finalize().map_err(err);
    };
    if me == 0 {
        println!(
            "tuned profile {} in {:.3} s ({:?}); cache: {}",
            shmem.profile().name,
            started.elapsed().as_secs_f64(),
            source,
            shmemplus::tune::cache_dir().map_or("none".into(), |d| d.display().to_string())
        );
        println!("measured hop times (median of 3):");
        for (hop, points) in &t.hops {
            let cells: Vec<String> = points
                .iter()
                .map(|(b, s)| {
                    format!(
                        "{} {}",
                        crate::info::human_bytes(*b),
                        crate::info::human_time(*s)
                    )
                })
                .collect();
            println!("  {hop:<10} {}", cells.join(", "));
        }
    }
    let (src, dst) = (
        shmem.alloc::<u8>(32 << 20, Place::Fpga(0)).map_err(err)?,
        shmem.alloc::<u8>(32 << 20, Place::Fpga(0)).map_err(err)?,
    );
    if me == 0 {
        println!("remote FPGA -> FPGA put: chosen packet per size, predicted from the measured hop times and occupancies");
        let mut head = format!("  {:>8} {:>8} {:>14}", "size", "packet", "predicted MB/s");
        if report {
            head += &format!(" {:>13} {:>8}", "measured MB/s", "error");
        }
        println!("{head}");
        let mut errors = Vec::new();
        for &(size, packet) in &t.packets {
            let predicted_bw = size as f64 / t.predict(size, packet);
            let mut line = format!(
                "  {:>8} {:>8} {:>14.1}",
                crate::info::human_bytes(size),
                crate::info::human_bytes(packet),
                predicted_bw / 1e6
            );
            if report {
                let n = size as usize;
                let mut samples = Vec::new();
                for _ in 0..3 {
                    // On the job clock, like every figure of the bench.
                    let t0 = shmem.now();
                    shmem.put_from(&dst, 0, &src, 0, n, 1).map_err(err)?;
                    shmem.quiet().map_err(err)?;
                    samples.push(shmem.now().saturating_sub(t0).as_secs_f64());
                }
                let measured = size as f64 / crate::bench::median(&mut samples) / 1e6;
                let e = (predicted_bw / 1e6 / measured - 1.0) * 100.0;
                errors.push(e.abs());
                line += &format!(" {measured:>13.1} {e:>+7.1}%");
            }
            println!("{line}");
        }
        if report && !errors.is_empty() {
            println!(
                "mean absolute error of the predicted bandwidth: {:.1}%",
                errors.iter().sum::<f64>() / errors.len() as f64
            );
        }
    }
    shmem.barrier_all().map_err(err)?;
    shmem.free(dst).map_err(err)?;
    shmem.free(src).map_err(err)?;
    shmem.finalize().map_err(err)
}
