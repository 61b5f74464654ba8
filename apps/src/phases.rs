//! Phase timing for the applications' reports: every phase starts and ends with
//! `barrier_all`, so its time on any PE is the time of the slowest PE (plus two
//! barriers), and the phases of a run add up to its total. Times are on the job clock
//! ([`Shmem::now`]): real time on the wall clock, this PE's virtual time under
//! `SHMEMPLUS_CLOCK=virtual`.
//!
//! This module owns how phases are measured and named. It must not decide what a phase
//! does (the applications do) and it prints nothing.

use serde::Serialize;
use shmemplus::Shmem;

/// One measured phase.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Phase {
    /// The phase's name in the report.
    pub name: String,
    /// Seconds on the job clock between its opening and closing barriers.
    pub seconds: f64,
}

/// Measures phases of a SPMD program (every PE must run the same phases in the same
/// order: each is a pair of barriers).
pub struct PhaseTimer {
    shmem: Shmem,
    phases: Vec<Phase>,
}

impl PhaseTimer {
    /// A timer with no phases yet.
    pub fn new(shmem: &Shmem) -> PhaseTimer {
        PhaseTimer {
            shmem: shmem.clone(),
            phases: Vec::new(),
        }
    }

    /// Runs `work` as phase `name` between two barriers and records its time. A phase
    /// of the same name as an earlier one adds to it (e.g. two corner turns).
    pub fn run<R, E>(
        &mut self,
        name: &str,
        work: impl FnOnce() -> Result<R, E>,
    ) -> anyhow::Result<R>
    where
        E: Into<anyhow::Error>,
    {
        self.shmem.barrier_all()?;
        let start = self.shmem.now();
        let out = work().map_err(Into::into)?;
        self.shmem.barrier_all()?;
        let seconds = (self.shmem.now().saturating_sub(start)).as_secs_f64();
        match self.phases.iter_mut().find(|p| p.name == name) {
            Some(p) => p.seconds += seconds,
            None => self.phases.push(Phase {
                name: name.to_string(),
                seconds,
            }),
        }
        Ok(out)
    }

    /// The phases so far, in first-run order.
    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// Seconds of phase `name` (0 if it never ran).
    pub fn seconds(&self, name: &str) -> f64 {
        self.phases
            .iter()
            .find(|p| p.name == name)
            .map_or(0.0, |p| p.seconds)
    }

    /// The sum of all phases.
    pub fn total(&self) -> f64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }
}

/// Milliseconds, formatted for a report column.
pub fn ms(seconds: f64) -> String {
    format!("{:.3}", seconds * 1e3)
}

/// `measured / predicted - 1` as a signed percentage, e.g. `+3.1%`.
pub fn deviation(measured: f64, predicted: f64) -> String {
    if predicted > 0.0 {
        format!("{:+.1}%", (measured / predicted - 1.0) * 100.0)
    } else {
        "n/a".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(ms(0.0012345), "1.234");
        assert_eq!(deviation(1.1, 1.0), "+10.0%");
        assert_eq!(deviation(0.9, 1.0), "-10.0%");
        assert_eq!(deviation(1.0, 0.0), "n/a");
    }
}
