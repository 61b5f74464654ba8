//! Cost functions of one hop: how many seconds a transfer of `L` bytes takes.
//!
//! This module owns the two cost forms of the multilevel model (docs/model.md §1): the
//! LogGP-style latency/bandwidth form and the measured table interpolated log-log, and
//! the split of a hop's time into the part that *occupies* the hop's resource
//! (bandwidth-bound, serialised by contention) and the part that is pure *latency*
//! (overlaps with other transfers). It is pure arithmetic: it must not read clocks,
//! touch timelines, parse files or know anything of PEs or routes.

use std::fmt;

/// The cost of one hop as a function of the message size.
///
/// All times are in seconds, sizes in bytes, bandwidths in bytes per second.
///
/// # Examples
///
/// ```
/// use netsim::cost::Cost;
///
/// // 2 us of wire latency, 1 GB/s.
/// let net = Cost::LogGp { latency: 2e-6, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
/// assert!((net.time(1000) - 3e-6).abs() < 1e-12);
///
/// // Measured points, interpolated log-log between them.
/// let dma = Cost::Table { points: vec![(32, 1e-4), (1 << 20, 2e-3)] };
/// assert_eq!(dma.time(32), 1e-4);
/// assert_eq!(dma.time(1), 1e-4); // below the first point: its time (a latency floor)
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Cost {
    /// `T(L) = latency + overhead + max(gap, L / bandwidth)`. Seconds, bytes/second.
    LogGp {
        /// Wire latency in seconds: time in flight, not occupying the resource.
        latency: f64,
        /// Per-message overhead in seconds (occupies the resource).
        overhead: f64,
        /// Minimum time between two messages in seconds (occupies the resource).
        gap: f64,
        /// Bandwidth in bytes per second.
        bandwidth: f64,
    },
    /// Measured `(bytes, seconds)` points, strictly increasing in bytes and
    /// non-decreasing in time, every time positive.
    ///
    /// Between two points the time is interpolated log-log (a straight line in
    /// `ln T` over `ln L`). Below the first point the time is the first point's time (a
    /// latency floor). Beyond the last point it is extrapolated linearly in `L` with
    /// the slope of the last segment; with a single point, `T(L) = t0 * L / L0` beyond
    /// it.
    Table {
        /// `(bytes, seconds)` points; see [`Cost::validate`] for the rules.
        points: Vec<(u64, f64)>,
    },
}

/// Why a [`Cost`] built in code is unusable (see [`Cost::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct CostError {
    /// The offending field: `latency`, `overhead`, `gap`, `bandwidth`, `points` or
    /// `points[i]`.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl Cost {
    /// Seconds for one transfer of `bytes` over this hop, without contention.
    ///
    /// Never panics. For a cost that fails [`Cost::validate`] the result is
    /// unspecified (but not a panic): an empty table costs 0.
    ///
    /// ```
    /// use netsim::cost::Cost;
    /// let c = Cost::LogGp { latency: 1e-6, overhead: 1e-6, gap: 4e-6, bandwidth: 1e9 };
    /// // Short message: the gap dominates L / bandwidth.
    /// assert!((c.time(100) - 6e-6).abs() < 1e-15);
    /// ```
    pub fn time(&self, bytes: u64) -> f64 {
        match self {
            Cost::LogGp { latency, .. } => latency + self.occupancy(bytes),
            Cost::Table { points } => table_time(points, bytes),
        }
    }

    /// The part of [`Cost::time`] during which the hop's resource is busy and cannot
    /// serve another transfer: LogGP `overhead + max(gap, L / bandwidth)`; a table:
    /// all of it (a measured curve does not separate latency from occupancy).
    ///
    /// ```
    /// use netsim::cost::Cost;
    /// let c = Cost::LogGp { latency: 5e-6, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
    /// assert!((c.occupancy(1000) - 1e-6).abs() < 1e-15);
    /// ```
    pub fn occupancy(&self, bytes: u64) -> f64 {
        match self {
            Cost::LogGp {
                overhead,
                gap,
                bandwidth,
                ..
            } => overhead + gap.max(bytes as f64 / bandwidth),
            Cost::Table { points } => table_time(points, bytes),
        }
    }

    /// The rest of [`Cost::time`]: `time() - occupancy()`. Pure latency that overlaps
    /// with other transfers (LogGP: `latency`; a table: 0).
    ///
    /// ```
    /// use netsim::cost::Cost;
    /// let c = Cost::LogGp { latency: 5e-6, overhead: 0.0, gap: 0.0, bandwidth: 1e9 };
    /// assert_eq!(c.latency(1000), 5e-6);
    /// assert_eq!(Cost::Table { points: vec![(32, 1e-3)] }.latency(32), 0.0);
    /// ```
    pub fn latency(&self, bytes: u64) -> f64 {
        let _ = bytes;
        match self {
            Cost::LogGp { latency, .. } => *latency,
            Cost::Table { .. } => 0.0,
        }
    }

    /// Checks that the cost is usable: LogGP times finite and non-negative, bandwidth
    /// finite and positive; a table non-empty, bytes positive and strictly increasing,
    /// times finite, positive and non-decreasing.
    ///
    /// ```
    /// use netsim::cost::Cost;
    /// let bad = Cost::Table { points: vec![(64, 1e-3), (32, 2e-3)] };
    /// let err = bad.validate().unwrap_err();
    /// assert_eq!(err.field, "points[1]");
    /// ```
    pub fn validate(&self) -> Result<(), CostError> {
        match self {
            Cost::LogGp {
                latency,
                overhead,
                gap,
                bandwidth,
            } => {
                for (field, v) in [("latency", latency), ("overhead", overhead), ("gap", gap)] {
                    if let Some(problem) = non_negative_problem(*v) {
                        return Err(CostError {
                            field: field.into(),
                            problem,
                        });
                    }
                }
                if let Some(problem) = positive_problem(*bandwidth) {
                    return Err(CostError {
                        field: "bandwidth".into(),
                        problem,
                    });
                }
                Ok(())
            }
            Cost::Table { points } => validate_points(points).map_err(|e| CostError {
                field: match e.index {
                    Some(i) => format!("points[{i}]"),
                    None => "points".into(),
                },
                problem: e.problem,
            }),
        }
    }
}

impl fmt::Display for Cost {
    /// A short human description, e.g. `loggp(latency 7.94 us, bandwidth 1466 MB/s)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cost::LogGp {
                latency,
                overhead,
                gap,
                bandwidth,
            } => {
                write!(f, "loggp(latency {} us", latency * 1e6)?;
                if *overhead != 0.0 {
                    write!(f, ", overhead {} us", overhead * 1e6)?;
                }
                if *gap != 0.0 {
                    write!(f, ", gap {} us", gap * 1e6)?;
                }
                write!(f, ", bandwidth {} MB/s)", bandwidth / 1e6)
            }
            Cost::Table { points } => write!(f, "table({} points)", points.len()),
        }
    }
}

/// Converts seconds to whole nanoseconds, rounding to the nearest; negative or NaN
/// gives 0, too large or infinite saturates at `u64::MAX`.
///
/// ```
/// assert_eq!(netsim::cost::secs_to_ns(1.5e-6), 1500);
/// assert_eq!(netsim::cost::secs_to_ns(-1.0), 0);
/// ```
pub fn secs_to_ns(seconds: f64) -> u64 {
    // `as` saturates for out-of-range floats and maps NaN to 0.
    (seconds * 1e9).round() as u64
}

/// A problem with a table's points: which point (None: the table as a whole) and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PointsProblem {
    pub(crate) index: Option<usize>,
    pub(crate) problem: String,
}

/// The table rules, shared by [`Cost::validate`] and the profile parser.
pub(crate) fn validate_points(points: &[(u64, f64)]) -> Result<(), PointsProblem> {
    if points.is_empty() {
        return Err(PointsProblem {
            index: None,
            problem: "empty table: give at least one [bytes, seconds] point".into(),
        });
    }
    for (i, &(bytes, secs)) in points.iter().enumerate() {
        let fail = |problem: String| PointsProblem {
            index: Some(i),
            problem,
        };
        if bytes == 0 {
            return Err(fail("bytes must be positive (the table is log-log)".into()));
        }
        if !(secs.is_finite() && secs > 0.0) {
            return Err(fail(format!(
                "seconds must be finite and positive (the table is log-log), got {secs}"
            )));
        }
        if i > 0 {
            let (prev_bytes, prev_secs) = points[i - 1];
            if bytes <= prev_bytes {
                return Err(fail(format!(
                    "points not increasing: {bytes} bytes after {prev_bytes} bytes \
                     (bytes must be strictly increasing)"
                )));
            }
            if secs < prev_secs {
                return Err(fail(format!(
                    "points not increasing: {secs} s after {prev_secs} s \
                     (time must not decrease as bytes grow)"
                )));
            }
        }
    }
    Ok(())
}

fn non_negative_problem(v: f64) -> Option<String> {
    if !v.is_finite() {
        Some(format!("must be finite, got {v}"))
    } else if v < 0.0 {
        Some(format!("must not be negative, got {v}"))
    } else {
        None
    }
}

fn positive_problem(v: f64) -> Option<String> {
    if !v.is_finite() {
        Some(format!("must be finite, got {v}"))
    } else if v <= 0.0 {
        Some(format!("must be positive, got {v}"))
    } else {
        None
    }
}

/// Evaluates a table (see [`Cost::Table`]).
fn table_time(points: &[(u64, f64)], bytes: u64) -> f64 {
    let (Some(&(first_b, first_t)), Some(&(last_b, last_t))) = (points.first(), points.last())
    else {
        return 0.0;
    };
    if bytes <= first_b {
        return first_t;
    }
    if bytes >= last_b {
        let extra = (bytes - last_b) as f64;
        return match points.len() {
            1 => first_t * bytes as f64 / first_b as f64,
            n => {
                let (prev_b, prev_t) = points[n - 2];
                let slope = (last_t - prev_t) / (last_b - prev_b) as f64;
                last_t + extra * slope
            }
        };
    }
    // first_b < bytes < last_b: the segment [i - 1, i] holds `bytes`.
    let i = points.partition_point(|&(b, _)| b < bytes);
    let (b1, t1) = points[i];
    if b1 == bytes {
        return t1;
    }
    let (b0, t0) = points[i - 1];
    let frac = ((bytes as f64).ln() - (b0 as f64).ln()) / ((b1 as f64).ln() - (b0 as f64).ln());
    (t0.ln() + frac * (t1.ln() - t0.ln())).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
    }

    #[test]
    fn loggp_without_gap() {
        let c = Cost::LogGp {
            latency: 2e-6,
            overhead: 0.5e-6,
            gap: 0.0,
            bandwidth: 1e9,
        };
        // 2 us + 0.5 us + 4000 B / 1e9 B/s = 6.5 us
        assert!(close(c.time(4000), 6.5e-6), "{}", c.time(4000));
        assert!(close(c.occupancy(4000), 4.5e-6));
        assert_eq!(c.latency(4000), 2e-6);
        // Zero bytes: latency + overhead.
        assert!(close(c.time(0), 2.5e-6));
    }

    #[test]
    fn loggp_with_gap() {
        let c = Cost::LogGp {
            latency: 1e-6,
            overhead: 0.0,
            gap: 3e-6,
            bandwidth: 1e9,
        };
        // 1000 B take 1 us on the wire, but the gap is 3 us.
        assert!(close(c.time(1000), 4e-6));
        // 5000 B take 5 us > gap.
        assert!(close(c.time(5000), 6e-6));
        assert!(close(c.occupancy(1000), 3e-6));
    }

    fn two_points() -> Cost {
        Cost::Table {
            points: vec![(100, 1e-3), (10_000, 4e-3), (20_000, 6e-3)],
        }
    }

    #[test]
    fn table_exact_points() {
        let c = two_points();
        assert_eq!(c.time(100), 1e-3);
        assert_eq!(c.time(10_000), 4e-3);
        assert_eq!(c.time(20_000), 6e-3);
    }

    #[test]
    fn table_log_log_midpoint() {
        let c = two_points();
        // 1000 is the log-midpoint of 100 and 10_000, so T is the geometric mean of
        // 1 ms and 4 ms: sqrt(4e-6) = 2 ms.
        assert!(close(c.time(1000), 2e-3), "{}", c.time(1000));
        // On [10_000, 20_000]: T(L) = 4e-3 * (6e-3 / 4e-3)^(log2(L / 10_000)).
        let l = 14_142u64;
        let frac = ((l as f64) / 10_000.0).ln() / 2f64.ln();
        let want = 4e-3 * 1.5f64.powf(frac);
        assert!(close(c.time(l), want));
        assert!(c.time(l) > 4e-3 && c.time(l) < 6e-3);
    }

    #[test]
    fn table_below_first_point_is_a_floor() {
        let c = two_points();
        assert_eq!(c.time(0), 1e-3);
        assert_eq!(c.time(1), 1e-3);
        assert_eq!(c.time(99), 1e-3);
    }

    #[test]
    fn table_beyond_last_point_is_linear() {
        let c = two_points();
        // Last segment slope: 2e-3 s over 10_000 B = 2e-7 s/B.
        assert!(close(c.time(30_000), 8e-3));
        assert!(close(c.time(120_000), 26e-3));
    }

    #[test]
    fn single_point_table() {
        let c = Cost::Table {
            points: vec![(1000, 1e-3)],
        };
        assert_eq!(c.time(10), 1e-3);
        assert_eq!(c.time(1000), 1e-3);
        assert!(close(c.time(3000), 3e-3));
    }

    #[test]
    fn occupancy_plus_latency_is_time() {
        let costs = [
            Cost::LogGp {
                latency: 3e-6,
                overhead: 1e-6,
                gap: 2e-6,
                bandwidth: 850e6,
            },
            two_points(),
        ];
        for c in &costs {
            for bytes in [0u64, 1, 32, 100, 999, 1000, 12_345, 1 << 20, 1 << 30] {
                let sum = c.occupancy(bytes) + c.latency(bytes);
                assert!(close(sum, c.time(bytes)), "{c} at {bytes}");
            }
        }
        assert_eq!(two_points().latency(5000), 0.0);
        assert_eq!(two_points().occupancy(5000), two_points().time(5000));
    }

    #[test]
    fn empty_table_costs_nothing_and_fails_validation() {
        let c = Cost::Table { points: vec![] };
        assert_eq!(c.time(100), 0.0);
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "points");
        assert!(e.problem.contains("empty table"), "{}", e.problem);
    }

    #[test]
    fn validate_catches_bad_values() {
        let bw0 = Cost::LogGp {
            latency: 1e-6,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: 0.0,
        };
        let e = bw0.validate().unwrap_err();
        assert_eq!(e.field, "bandwidth");
        assert!(e.problem.contains("positive"));
        let neg = Cost::LogGp {
            latency: -1e-6,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: 1e9,
        };
        assert_eq!(neg.validate().unwrap_err().field, "latency");
        let dec = Cost::Table {
            points: vec![(32, 2e-3), (64, 1e-3)],
        };
        let e = dec.validate().unwrap_err();
        assert_eq!(e.field, "points[1]");
        assert!(e.problem.contains("time must not decrease"));
        assert!(two_points().validate().is_ok());
    }

    #[test]
    fn secs_to_ns_rounds_and_saturates() {
        assert_eq!(secs_to_ns(1e-6), 1000);
        assert_eq!(secs_to_ns(0.4e-9), 0);
        assert_eq!(secs_to_ns(f64::NAN), 0);
        assert_eq!(secs_to_ns(f64::INFINITY), u64::MAX);
    }
}
