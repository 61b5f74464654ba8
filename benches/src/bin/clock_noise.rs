//! What the job clock counts beyond a program's own work on this host: stalls.
//!
//! Under `--clock virtual` a PE's clock advances by the calling thread's CPU time
//! between library calls. On a virtual machine that time also holds what the host
//! takes while the thread is on its core (the hypervisor running something else,
//! interrupts handled on the thread's time): the thread computes nothing, its CPU
//! time runs on. No reading tells the two apart (there is no instruction counter in
//! such a guest), so every CPU phase of a virtual-clock job carries them, while a
//! board's modeled time never does. This bench measures how often and how long.
//!
//! Each PE runs `--rows` rows of work over a private buffer (by default rows of
//! 8 KiB, the 2D FFT's 1024-point complex rows, cycling through 8 MiB), each timed on
//! the job clock (`Shmem::now` before and after it). A row that took more than the
//! PE's median row by `--stall-us` or more is a *stall*; its time beyond the median is
//! what the stall added. On the wall clock the same figures also count a PE's time off
//! its core (more PEs than cores), so read them under `--clock virtual`.
//!
//! Run as `shmemrun -n 4 --clock virtual target/release/clock_noise`. PE 0 prints one
//! JSON line: `{"clock", "n_pes", "rows", "row_bytes", "median_row_us",
//! "stalls", "stalls_per_ms", "stall_share", "largest_stall_us", "pes": [...]}`: rows
//! timed on all PEs, the median of the PEs' median rows, the stalls of all PEs, how
//! many per millisecond of counted time, the share of all counted time that stalls
//! added, the longest stall (us), and per PE its `median_row_us`, `stalls`,
//! `counted_ms`.

use shmemplus::{Place, Shmem};
use shmemplus_benches::median;

/// How often the job clock counts stalls of the host in a PE's computation (run it
/// under `shmemrun --clock virtual`; PE 0 prints one JSON line).
#[derive(clap::Parser)]
#[command(version)]
struct Args {
    /// Rows each PE times (at most 10 million: their times are kept, 8 bytes each).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    rows: u64,
    /// Bytes of a row (a multiple of 4, at least 64).
    #[arg(long, default_value_t = 8192)]
    row_bytes: usize,
    /// MiB of the buffer the rows cycle through (at least one row).
    #[arg(long, default_value_t = 8)]
    buffer_mib: usize,
    /// A row that takes this many microseconds more than the median is a stall.
    #[arg(long, default_value_t = 20.0)]
    stall_us: f64,
}

/// One PE's rows, summed up.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stalls {
    rows: u64,
    median_us: f64,
    stalls: u64,
    /// All rows' time (us).
    counted_us: f64,
    /// What the stalls took beyond the median row (us).
    added_us: f64,
    largest_us: f64,
}

/// Per-PE figures gathered to PE 0, in this order.
const FIELDS: usize = 6;

impl Stalls {
    /// The rows' times (us, any order) summed up with stalls of `stall_us` or more
    /// above their median.
    fn of(times_us: &[f64], stall_us: f64) -> Stalls {
        let median_us = if times_us.is_empty() {
            0.0
        } else {
            median(times_us.to_vec())
        };
        let over: Vec<f64> = times_us
            .iter()
            .filter(|&&t| t >= median_us + stall_us)
            .map(|&t| t - median_us)
            .collect();
        Stalls {
            rows: times_us.len() as u64,
            median_us,
            stalls: over.len() as u64,
            counted_us: times_us.iter().sum(),
            added_us: over.iter().sum(),
            largest_us: over.iter().copied().fold(0.0, f64::max),
        }
    }

    fn to_words(self) -> [f64; FIELDS] {
        [
            self.rows as f64,
            self.median_us,
            self.stalls as f64,
            self.counted_us,
            self.added_us,
            self.largest_us,
        ]
    }

    fn from_words(w: &[f64]) -> Option<Stalls> {
        let &[rows, median_us, stalls, counted_us, added_us, largest_us] = w else {
            return None;
        };
        Some(Stalls {
            rows: rows as u64,
            median_us,
            stalls: stalls as u64,
            counted_us,
            added_us,
            largest_us,
        })
    }
}

/// The job's figures from every PE's (see the module doc), as JSON fields.
fn summary(pes: &[Stalls]) -> String {
    let median_row_us = median(pes.iter().map(|p| p.median_us).collect());
    let rows: u64 = pes.iter().map(|p| p.rows).sum();
    let stalls: u64 = pes.iter().map(|p| p.stalls).sum();
    let counted_us: f64 = pes.iter().map(|p| p.counted_us).sum();
    let added_us: f64 = pes.iter().map(|p| p.added_us).sum();
    let largest = pes.iter().map(|p| p.largest_us).fold(0.0, f64::max);
    let per = |x: f64| {
        if counted_us > 0.0 {
            x / counted_us
        } else {
            0.0
        }
    };
    let each: Vec<String> = pes
        .iter()
        .map(|p| {
            format!(
                "{{\"median_row_us\":{:.3},\"stalls\":{},\"counted_ms\":{:.3}}}",
                p.median_us,
                p.stalls,
                p.counted_us / 1e3
            )
        })
        .collect();
    format!(
        "\"rows\":{rows},\"median_row_us\":{median_row_us:.3},\"stalls\":{stalls},\"stalls_per_ms\":{:.4},\"stall_share\":{:.4},\"largest_stall_us\":{largest:.1},\"pes\":[{}]",
        per(stalls as f64 * 1e3),
        per(added_us),
        each.join(",")
    )
}

/// Times `rows` rows of `row` floats each, cycling through `buffer`.
fn time_rows(shmem: &Shmem, buffer: &mut [f32], row: usize, rows: u64) -> Vec<f64> {
    let in_buffer = (buffer.len() / row).max(1);
    let mut times = Vec::with_capacity(usize::try_from(rows).unwrap_or(0));
    for i in 0..rows {
        let at = (i % in_buffer as u64) as usize * row;
        let r = &mut buffer[at..at + row];
        let t0 = shmem.now();
        // A pass that reads a neighbour and writes every element: memory traffic
        // like an FFT stage's, a few microseconds a row.
        for k in 0..row {
            let neighbour = r[(k * 7) % row];
            r[k] = r[k] * 0.999 + neighbour;
        }
        std::hint::black_box(&r[0]);
        times.push(shmem.now().saturating_sub(t0).as_secs_f64() * 1e6);
    }
    times
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    if args.row_bytes < 64 || args.row_bytes % 4 != 0 {
        return Err(format!(
            "--row-bytes must be a multiple of 4, at least 64, got {}",
            args.row_bytes
        )
        .into());
    }
    if !(args.stall_us.is_finite() && args.stall_us > 0.0) {
        return Err(format!("--stall-us must be finite and > 0, got {}", args.stall_us).into());
    }
    let buffer_bytes = args
        .buffer_mib
        .checked_mul(1 << 20)
        .filter(|&b| b >= args.row_bytes && b <= 1 << 32)
        .ok_or_else(|| {
            format!(
                "--buffer-mib must hold one row and be at most 4096, got {}",
                args.buffer_mib
            )
        })?;
    let shmem = shmemplus::init()?;
    let row = args.row_bytes / 4;
    // Touched before the timing: first-touch page faults are not the host's.
    let mut buffer = vec![1.0f32; buffer_bytes / 4];
    // One untimed pass over the buffer, then the timed rows.
    let warm = (buffer.len() / row) as u64;
    time_rows(&shmem, &mut buffer, row, warm);
    let times = time_rows(&shmem, &mut buffer, row, args.rows);
    let mine = Stalls::of(&times, args.stall_us);
    let n = shmem.n_pes() as usize;
    let src = shmem.alloc::<f64>(FIELDS, Place::Cpu)?;
    let all = shmem.alloc::<f64>(FIELDS * n, Place::Cpu)?;
    shmem.local_write(&src, 0, &mine.to_words())?;
    shmem.fcollect(&shmem.team_world(), &all, &src, FIELDS)?;
    if shmem.my_pe() == 0 {
        let mut words = vec![0.0; FIELDS * n];
        shmem.local_read(&all, 0, &mut words)?;
        let pes: Vec<Stalls> = words
            .chunks(FIELDS)
            .map(Stalls::from_words)
            .collect::<Option<_>>()
            .ok_or("a PE's figures are incomplete")?;
        println!(
            "{{\"clock\":\"{}\",\"n_pes\":{n},\"row_bytes\":{},{}}}",
            if shmem.clock() == shmemplus::config::ClockKind::Virtual {
                "virtual"
            } else {
                "wall"
            },
            args.row_bytes,
            summary(&pes)
        );
    }
    shmem.finalize()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_are_the_rows_a_margin_above_the_median() {
        // Four rows of 2 us, one of 3 (no stall at a 20 us margin), one of 152.
        let t = [2.0, 152.0, 2.0, 3.0, 2.0, 2.0];
        let s = Stalls::of(&t, 20.0);
        assert_eq!(s.rows, 6);
        assert_eq!(s.median_us, 2.0);
        assert_eq!(s.stalls, 1);
        assert_eq!(s.counted_us, 163.0);
        assert_eq!(s.added_us, 150.0);
        assert_eq!(s.largest_us, 150.0);
        // A margin of 1 us: the 3 us row is one too.
        let s = Stalls::of(&t, 1.0);
        assert_eq!((s.stalls, s.added_us), (2, 151.0));
        // No rows: nothing.
        assert_eq!(Stalls::of(&[], 20.0).stalls, 0);
        // The words PE 0 gathers give the same figures back, and a short list none.
        let s = Stalls::of(&t, 20.0);
        assert_eq!(Stalls::from_words(&s.to_words()), Some(s));
        assert_eq!(Stalls::from_words(&[1.0; FIELDS - 1]), None);
    }

    #[test]
    fn the_summary_adds_the_pes_up() {
        let a = Stalls::of(&[2.0, 2.0, 102.0], 20.0);
        let b = Stalls::of(&[4.0, 4.0, 4.0, 4.0], 20.0);
        let json: serde_json::Value =
            serde_json::from_str(&format!("{{{}}}", summary(&[a, b]))).unwrap();
        assert_eq!(json["rows"], 7);
        assert_eq!(json["stalls"], 1);
        // 1 stall in 122 us of counted time; it added 100 of them.
        assert!((json["stalls_per_ms"].as_f64().unwrap() - 1e3 / 122.0).abs() < 1e-3);
        assert!((json["stall_share"].as_f64().unwrap() - 100.0 / 122.0).abs() < 1e-3);
        assert_eq!(json["largest_stall_us"], 100.0);
        // The median of the PEs' medians (2 and 4): the upper one.
        assert_eq!(json["median_row_us"], 4.0);
        assert_eq!(json["pes"].as_array().unwrap().len(), 2);
    }
}
