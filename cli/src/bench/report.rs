//! The records and outputs of `shmemplus bench`: the JSON record of one figure, the
//! deviation from the model printed in tables, the machine line of report headers, and
//! the plot and JSON file written at the end of a run.
//!
//! Owns the JSON fields (scripts read them: do not rename) and the files a run writes;
//! it must not measure anything.

use super::route::Collective;
use super::route::Route;
use super::BenchOptions;
use serde::Serialize;

/// One measured figure.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    /// Route name (`cpu-cpu`; later issues add the FPGA routes).
    pub route: String,
    /// `put`, `get`, `memcpy`, `barrier` or `am_roundtrip`.
    pub op: String,
    /// Transfer size in bytes.
    pub bytes: usize,
    /// Median latency of one operation, microseconds.
    pub latency_us: f64,
    /// Median bandwidth, 10^6 bytes per second (0 where it does not apply).
    pub bandwidth_mbps: f64,
    /// Bandwidth relative to memcpy of the same size: the median over repetitions of
    /// (memcpy time / operation time), each pair measured back to back.
    pub ratio_to_memcpy: Option<f64>,
    /// Conduit the job ran with.
    pub conduit: String,
    /// PEs in the job.
    pub n_pes: u32,
    /// The cluster profile the job emulated.
    pub profile: String,
    /// The modeled latency of the operation on an idle emulated network, where the
    /// profile models one (`None` for the native profile and for memcpy).
    pub modeled_us: Option<f64>,
    /// The packet size of a packetized transfer (packet sweeps only; the size itself
    /// means no packetization).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_bytes: Option<usize>,
    /// The clock every time of the record was read on: `wall` or `virtual`.
    pub clock: String,
}

/// Makes a record: (route, op, bytes, seconds, bytes per second, ratio to memcpy,
/// modeled seconds).
pub(super) type RecordFn<'a> =
    dyn Fn(&str, &str, usize, f64, f64, Option<f64>, Option<f64>) -> Record + 'a;

/// Measured against modeled, in percent.
pub(super) fn deviation(measured: f64, modeled: f64) -> f64 {
    if modeled > 0.0 {
        (measured / modeled - 1.0) * 100.0
    } else {
        0.0
    }
}

/// The machine the job runs on, for report headers: PEs, cores, and a warning when the
/// PEs outnumber the cores.
pub(super) fn machine_context(n_pes: u32, cores: usize) -> String {
    let mut s = format!("{n_pes} PEs on {cores} cores (available_parallelism)");
    if n_pes as usize > cores {
        s += &format!(
            "; {n_pes} PEs > {cores} cores: the PEs take turns on the cores, so any figure \
             where a PE waits for another measures the OS scheduler more than the library"
        );
    }
    s
}

/// Cores this process may run on.
pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

/// Writes what `--plot` and `--json` ask for (PE 0, after every measurement).
pub(super) fn write_outputs(opts: &BenchOptions, records: &[Record]) -> Result<(), String> {
    if let Some(path) = &opts.plot {
        plot(path, records)?;
        println!("drew {}", path.display());
    }
    if let Some(path) = &opts.json {
        let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {} records to {}", records.len(), path.display());
    }
    Ok(())
}

pub(super) fn plot(path: &std::path::Path, records: &[Record]) -> Result<(), String> {
    let mut curves = Vec::new();
    for route in Route::ALL {
        for op in ["put", "get"] {
            let points: Vec<(u64, f64)> = records
                .iter()
                .filter(|r| r.route == route.name() && r.op == op)
                .map(|r| (r.bytes as u64, r.bandwidth_mbps))
                .collect();
            if !points.is_empty() {
                curves.push(crate::plot::Curve {
                    label: format!("{} {op}", route.name()),
                    points,
                });
            }
        }
    }
    for coll in Collective::ALL {
        let points: Vec<(u64, f64)> = records
            .iter()
            .filter(|r| r.route == "collectives" && r.op == coll.name())
            .map(|r| (r.bytes as u64, r.bandwidth_mbps))
            .collect();
        if !points.is_empty() {
            curves.push(crate::plot::Curve {
                label: coll.name().to_string(),
                points,
            });
        }
    }
    let profile = records.first().map_or("native", |r| r.profile.as_str());
    crate::plot::plot_bandwidth(
        path,
        &format!("shmemplus bandwidth, profile {profile}"),
        &curves,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_context_warns_when_oversubscribed() {
        assert!(!machine_context(2, 2).contains("scheduler"));
        let s = machine_context(8, 2);
        assert!(
            s.starts_with("8 PEs on 2 cores") && s.contains("scheduler"),
            "{s}"
        );
    }
}
