//! `shmemplus info`: what a cluster profile says: its topology, the form of each hop's
//! cost, and the modeled time and bandwidth of each hop at a few sizes. It reads
//! profiles through `netsim` and prints; it must not measure anything.

use shmemplus::netsim::{Cost, HopKind, Profile};
use std::fmt::Write;

/// Sizes at which `info` shows the modeled hop costs.
pub const SIZES: &[u64] = &[32, 1 << 10, 64 << 10, 1 << 20, 8 << 20, 32 << 20];

/// The report for `profile`, as printed by `shmemplus info`.
///
/// ```
/// let p = shmemplus::netsim::Profile::builtin("mu").unwrap();
/// let text = shmemplus_cli::info::describe(&p);
/// assert!(text.contains("net") && text.contains("fpga_write"));
/// ```
pub fn describe(profile: &Profile) -> String {
    let t = &profile.topology;
    let mut out = String::new();
    let _ = writeln!(out, "profile {} ({})", profile.name, profile.source);
    if !profile.description.is_empty() {
        let _ = writeln!(out, "  {}", profile.description.trim());
    }
    let _ = writeln!(
        out,
        "topology: {} nodes x {} PEs per node, {} boards per node of {} each, DMA minimum {} B, alignment {} B",
        t.nodes,
        t.pes_per_node,
        t.boards_per_node,
        human_bytes(t.board_memory),
        t.dma_min_bytes,
        t.dma_align
    );
    let hops = [HopKind::Net, HopKind::FpgaRead, HopKind::FpgaWrite];
    let _ = writeln!(out, "hop cost forms:");
    for hop in hops {
        let _ = writeln!(out, "  {:<10} {}", hop.name(), form(profile.cost(hop)));
    }
    let _ = writeln!(
        out,
        "modeled time of one transfer (and its bandwidth, MB/s = 10^6 bytes/s):"
    );
    let mut head = format!("  {:>8}", "bytes");
    for hop in hops {
        head += &format!(" {:>24}", hop.name());
    }
    let _ = writeln!(out, "{head}");
    for &bytes in SIZES {
        let mut line = format!("  {:>8}", human_bytes(bytes));
        for hop in hops {
            let cell = match profile.cost(hop) {
                None => "free".to_string(),
                Some(c) => {
                    let secs = c.time(bytes);
                    format!(
                        "{} ({:.0} MB/s)",
                        human_time(secs),
                        bytes as f64 / secs / 1e6
                    )
                }
            };
            line += &format!(" {cell:>24}");
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

fn form(cost: Option<&Cost>) -> String {
    match cost {
        None => "free (adds no cost)".into(),
        Some(Cost::LogGp {
            latency,
            overhead,
            gap,
            bandwidth,
        }) => format!(
            "LogGP: latency {}, overhead {}, gap {}, bandwidth {:.0} MB/s",
            human_time(*latency),
            human_time(*overhead),
            human_time(*gap),
            bandwidth / 1e6
        ),
        Some(Cost::Table { points }) => format!(
            "table of {} measured points, {} .. {} (log-log interpolation, linear beyond)",
            points.len(),
            points.first().map_or(String::new(), |p| human_bytes(p.0)),
            points.last().map_or(String::new(), |p| human_bytes(p.0)),
        ),
    }
}

/// Seconds with a unit that keeps 3-4 significant digits.
pub fn human_time(secs: f64) -> String {
    if secs == 0.0 {
        "0".into()
    } else if secs < 1e-3 {
        format!("{:.2} us", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.3} ms", secs * 1e3)
    } else {
        format!("{secs:.3} s")
    }
}

/// Bytes with a binary suffix where exact.
pub fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_is_free_everywhere() {
        let p = Profile::builtin("native").unwrap();
        let text = describe(&p);
        assert!(text.contains("free (adds no cost)"), "{text}");
        assert!(
            !text.contains("MB/s)"),
            "a free profile models no bandwidth:\n{text}"
        );
    }

    #[test]
    fn novo_g_shows_thesis_figures() {
        let text = describe(&Profile::builtin("novo-g").unwrap());
        // The 32-byte fpga hops carry the thesis's 644.92 us.
        assert!(text.contains("644.92 us"), "{text}");
        assert!(text.contains("table of"), "{text}");
    }

    #[test]
    fn units() {
        assert_eq!(human_time(3.76e-6), "3.76 us");
        assert_eq!(human_time(0.0227), "22.700 ms");
        assert_eq!(human_bytes(2 << 30), "2G");
        assert_eq!(human_bytes(1000), "1000");
    }
}
