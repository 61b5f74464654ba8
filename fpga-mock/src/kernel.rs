//! Kernels and their execution: the RATSS timing model ([`KernelTiming`]), kernels and
//! bitfiles ([`Kernel`], [`Bitfile`]), the memory view a kernel sees
//! ([`KernelMemory`]), and the GO/DONE handle of a run ([`KernelRun`]).
//!
//! This module owns what happens between GO and DONE on a worker thread: record the
//! result, catch a panicking body, wait (sleeping, not spinning) until the modeled time
//! has elapsed unless the board says not to (`BoardConfig::done_waits_for_model`), then
//! raise DONE. It must not decide which bitfile is loaded or whether a
//! kernel may start (the board does), and a kernel must reach nothing but board memory.

use crate::error::BoardError;
use crate::memory::Mapping;
use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The RATSS node model of a kernel's time (docs/model.md §6):
/// `t = PL / F + N * ops_per_element / (F * R)`.
///
/// ```
/// use fpga_mock::KernelTiming;
/// let t = KernelTiming {
///     pipeline_latency_cycles: 100.0,
///     clock_hz: 100e6,
///     ops_per_element: 2.0,
///     ops_per_cycle: 4.0,
/// };
/// // 100 / 1e8 + 1000 * 2 / (1e8 * 4) = 1 us + 5 us
/// assert!((t.seconds(1000) - 6e-6).abs() < 1e-15);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelTiming {
    /// `PL`: pipeline latency in clock cycles (finite, >= 0).
    pub pipeline_latency_cycles: f64,
    /// `F`: clock frequency in Hz (finite, > 0).
    pub clock_hz: f64,
    /// Operations per element processed (finite, >= 0).
    pub ops_per_element: f64,
    /// `R`: operations completed per cycle (parallel kernels x operations per kernel;
    /// finite, > 0).
    pub ops_per_cycle: f64,
}

impl KernelTiming {
    /// Modeled seconds from GO to DONE for `elements` elements.
    pub fn seconds(&self, elements: u64) -> f64 {
        self.pipeline_latency_cycles / self.clock_hz
            + elements as f64 * self.ops_per_element / (self.clock_hz * self.ops_per_cycle)
    }

    /// Checks the fields' ranges (see the field docs); the message names the field.
    ///
    /// ```
    /// use fpga_mock::KernelTiming;
    /// let bad = KernelTiming {
    ///     pipeline_latency_cycles: 1.0, clock_hz: 0.0, ops_per_element: 1.0, ops_per_cycle: 1.0,
    /// };
    /// assert!(bad.validate().unwrap_err().contains("clock_hz"));
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        let fields = [
            (
                "pipeline_latency_cycles",
                self.pipeline_latency_cycles,
                false,
            ),
            ("clock_hz", self.clock_hz, true),
            ("ops_per_element", self.ops_per_element, false),
            ("ops_per_cycle", self.ops_per_cycle, true),
        ];
        for (name, v, positive) in fields {
            if !v.is_finite() || v < 0.0 || (positive && v == 0.0) {
                let want = if positive {
                    "finite and > 0"
                } else {
                    "finite and >= 0"
                };
                return Err(format!("{name} must be {want}, got {v}"));
            }
        }
        Ok(())
    }
}

/// How many elements a kernel processes for given arguments (the `N` of the timing).
pub type ElementsFn = Arc<dyn Fn(&[u64]) -> u64 + Send + Sync>;

/// A kernel's computation over board memory; `Err(why)` fails the run.
pub type KernelBody = Arc<dyn Fn(&KernelMemory<'_>, &[u64]) -> Result<(), String> + Send + Sync>;

/// A kernel: a name, a timing model, an element count and a body over board memory.
///
/// ```
/// use fpga_mock::{Kernel, KernelTiming};
/// let zero = Kernel::new(
///     "zero-byte",
///     KernelTiming { pipeline_latency_cycles: 10.0, clock_hz: 1e8, ops_per_element: 1.0, ops_per_cycle: 1.0 },
///     |_args| 1,
///     |mem, args| mem.write(args.first().copied().unwrap_or(0), &[0]),
/// );
/// assert_eq!(zero.name, "zero-byte");
/// assert_eq!((zero.elements)(&[]), 1);
/// ```
#[derive(Clone)]
pub struct Kernel {
    /// The name [`crate::Board::start`] looks up.
    pub name: String,
    /// The timing model: DONE is not raised before `timing.seconds(elements(args))`.
    pub timing: KernelTiming,
    /// The element count for the arguments.
    pub elements: ElementsFn,
    /// The computation.
    pub body: KernelBody,
}

impl Kernel {
    /// A kernel from plain closures.
    pub fn new(
        name: impl Into<String>,
        timing: KernelTiming,
        elements: impl Fn(&[u64]) -> u64 + Send + Sync + 'static,
        body: impl Fn(&KernelMemory<'_>, &[u64]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            name: name.into(),
            timing,
            elements: Arc::new(elements),
            body: Arc::new(body),
        }
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

/// A named set of kernels, loaded with [`crate::Board::configure`].
#[derive(Debug, Clone)]
pub struct Bitfile {
    /// The bitfile's name (reported by [`crate::Board::bitfile`]).
    pub name: String,
    /// Its kernels; names must be distinct.
    pub kernels: Vec<Kernel>,
}

impl Bitfile {
    /// The kernels' names, in order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.kernels.iter().map(|k| k.name.clone()).collect()
    }

    /// Checks the bitfile: a non-empty name, distinct kernel names, valid timings.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("the bitfile has an empty name".into());
        }
        for (i, k) in self.kernels.iter().enumerate() {
            if self.kernels[..i].iter().any(|other| other.name == k.name) {
                return Err(format!(
                    "bitfile {:?} has two kernels named {:?}",
                    self.name, k.name
                ));
            }
            k.timing
                .validate()
                .map_err(|why| format!("bitfile {:?}, kernel {:?}: {why}", self.name, k.name))?;
        }
        Ok(())
    }
}

/// What a kernel sees: the board's memory, nothing else. Accesses are bounds-checked
/// and exact (no DMA alignment inside the board); errors are strings so that a body can
/// pass them on with `?`.
pub struct KernelMemory<'a> {
    mem: &'a Mapping,
}

impl KernelMemory<'_> {
    pub(crate) fn new(mem: &Mapping) -> KernelMemory<'_> {
        KernelMemory { mem }
    }

    /// Board memory size in bytes.
    pub fn len(&self) -> u64 {
        self.mem.len()
    }

    /// Whether the board has no memory (never: a board has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.mem.len() == 0
    }

    /// Copies `out.len()` bytes at `offset` into `out`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), String> {
        self.mem.copy_out(offset, out).map_err(|e| e.to_string())
    }

    /// Copies `data` to `offset`; nothing is written if it does not fit.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), String> {
        self.mem.copy_in(offset, data).map_err(|e| e.to_string())
    }
}

/// A finished run (DONE).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDone {
    /// The kernel's name.
    pub kernel: String,
    /// Elements processed (the timing's `N`).
    pub elements: u64,
    /// Modeled seconds from GO to DONE ([`KernelTiming::seconds`]).
    pub modeled_s: f64,
    /// Measured seconds from GO to DONE (`netsim::now_ns` clock); not less than
    /// `modeled_s` when DONE waits for the modeled time (the default,
    /// `BoardConfig::done_waits_for_model`), else the time the body took.
    pub elapsed_s: f64,
}

/// The state of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelStatus {
    /// GO was given; DONE was not raised yet.
    Running,
    /// DONE: the result is in board memory and the modeled time has elapsed (unless
    /// the board does not wait for it: `BoardConfig::done_waits_for_model`).
    Done,
    /// The kernel failed or panicked; the message says how.
    Failed(String),
}

/// The GO/DONE handle of one kernel run. Cheap to clone; all clones see the same run.
///
/// ```
/// use fpga_mock::{kernels, Board, BoardConfig, KernelStatus};
/// let board = Board::new(BoardConfig { memory_bytes: 4096, ..BoardConfig::default() })?;
/// board.configure(kernels::standard_bitfile())?;
/// let run = board.start(kernels::ADD_ONE, &[0, 4])?;
/// let done = run.wait()?;
/// assert_eq!(done.elements, 4);
/// assert_eq!(run.status(), KernelStatus::Done);
/// assert!(run.test().is_some());
/// # Ok::<(), fpga_mock::BoardError>(())
/// ```
#[derive(Clone)]
pub struct KernelRun {
    shared: Arc<RunShared>,
}

struct RunShared {
    kernel: String,
    /// Elements and modeled seconds, known at GO (zero for a run that failed there).
    elements: u64,
    modeled_s: f64,
    outcome: Mutex<Option<Result<KernelDone, BoardError>>>,
    done: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something did, the data (a plain
    // value) is still consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KernelRun {
    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.shared.kernel
    }

    /// Elements this run processes (the timing's `N`), known at GO.
    pub fn elements(&self) -> u64 {
        self.shared.elements
    }

    /// The run's modeled seconds from GO to DONE ([`KernelTiming::seconds`]), known at
    /// GO: what a caller keeping its own clock charges for the run. 0 for a run whose
    /// element count panicked (it fails at once).
    ///
    /// ```
    /// use fpga_mock::{kernels, Board, BoardConfig};
    /// let board = Board::new(BoardConfig {
    ///     memory_bytes: 4096,
    ///     done_waits_for_model: false,
    ///     ..BoardConfig::default()
    /// })?;
    /// board.configure(kernels::standard_bitfile())?;
    /// let run = board.start(kernels::ADD_ONE, &[0, 4])?;
    /// let done = run.wait()?;
    /// assert_eq!(run.modeled_s(), done.modeled_s);
    /// # Ok::<(), fpga_mock::BoardError>(())
    /// ```
    pub fn modeled_s(&self) -> f64 {
        self.shared.modeled_s
    }

    /// Blocks (without spinning) until DONE; the run's result.
    pub fn wait(&self) -> Result<KernelDone, BoardError> {
        let mut outcome = lock(&self.shared.outcome);
        loop {
            if let Some(result) = outcome.as_ref() {
                return result.clone();
            }
            outcome = self
                .shared
                .done
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks until DONE or until `timeout` has passed; `None` on timeout.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<KernelDone, BoardError>> {
        let Some(deadline) = Instant::now().checked_add(timeout) else {
            return Some(self.wait());
        };
        let mut outcome = lock(&self.shared.outcome);
        loop {
            if let Some(result) = outcome.as_ref() {
                return Some(result.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            if left.is_zero() {
                return None;
            }
            outcome = self
                .shared
                .done
                .wait_timeout(outcome, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Non-blocking DONE check: `None` while running.
    pub fn test(&self) -> Option<Result<KernelDone, BoardError>> {
        lock(&self.shared.outcome).clone()
    }

    /// Running, done, or failed (with the error's message).
    pub fn status(&self) -> KernelStatus {
        match lock(&self.shared.outcome).as_ref() {
            None => KernelStatus::Running,
            Some(Ok(_)) => KernelStatus::Done,
            Some(Err(e)) => KernelStatus::Failed(e.to_string()),
        }
    }
}

impl fmt::Debug for KernelRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelRun")
            .field("kernel", &self.shared.kernel)
            .field("status", &self.status())
            .finish()
    }
}

/// Starts `kernel` on a new worker thread, GO given for `go_ns` ([`netsim::now_ns`]
/// clock; the worker waits for it if it is still to come); with `hold`, DONE waits
/// for GO + the modeled time.
/// `finished` is dropped just before DONE is raised (or at once if the run fails at
/// GO or no thread can be started): the board uses it to count running kernels.
pub(crate) fn launch<G: Send + 'static>(
    mem: Arc<Mapping>,
    kernel: Kernel,
    args: Vec<u64>,
    go_ns: u64,
    hold: bool,
    finished: G,
) -> Result<KernelRun, BoardError> {
    // The element count (so the modeled time) is known at GO; a panicking count fails
    // the run at once, as a panicking body would at DONE.
    let counted = catch_unwind(AssertUnwindSafe(|| (kernel.elements)(&args)));
    let (elements, failed) = match counted {
        Ok(elements) => (elements, None),
        Err(payload) => (
            0,
            Some(BoardError::KernelPanicked {
                kernel: kernel.name.clone(),
                message: panic_message(payload.as_ref()),
            }),
        ),
    };
    let modeled_s = if failed.is_some() {
        0.0
    } else {
        kernel.timing.seconds(elements)
    };
    let shared = Arc::new(RunShared {
        kernel: kernel.name.clone(),
        elements,
        modeled_s,
        outcome: Mutex::new(failed.clone().map(Err)),
        done: Condvar::new(),
    });
    if failed.is_some() {
        drop(finished);
        return Ok(KernelRun { shared });
    }
    let worker_shared = Arc::clone(&shared);
    std::thread::Builder::new()
        .name(format!("fpga-kernel-{}", kernel.name))
        .spawn(move || {
            let outcome = run(&mem, &kernel, &args, elements, go_ns, hold);
            // The kernel no longer counts as running once DONE is visible, so a caller
            // that saw DONE may reconfigure the board at once.
            drop(finished);
            *lock(&worker_shared.outcome) = Some(outcome);
            worker_shared.done.notify_all();
        })
        .map_err(|e| BoardError::Spawn {
            kernel: shared.kernel.clone(),
            why: e.to_string(),
        })?;
    Ok(KernelRun { shared })
}

/// The worker's job: wait for GO (`go_ns`, maybe still to come), compute, then (with
/// `hold`) wait until GO + modeled time. Errors are reported as soon as they happen
/// (a failed kernel has no modeled completion time).
fn run(
    mem: &Mapping,
    kernel: &Kernel,
    args: &[u64],
    elements: u64,
    go_ns: u64,
    hold: bool,
) -> Result<KernelDone, BoardError> {
    netsim::wait_until(go_ns);
    let computed = catch_unwind(AssertUnwindSafe(|| {
        (kernel.body)(&KernelMemory::new(mem), args)
    }));
    match computed {
        Ok(Ok(())) => {}
        Ok(Err(why)) => {
            return Err(BoardError::KernelFailed {
                kernel: kernel.name.clone(),
                why,
            })
        }
        Err(payload) => {
            return Err(BoardError::KernelPanicked {
                kernel: kernel.name.clone(),
                message: panic_message(payload.as_ref()),
            })
        }
    };
    let modeled_s = kernel.timing.seconds(elements);
    if hold {
        // Rounded up, so that DONE is never raised before the modeled time; `as`
        // saturates.
        let modeled_ns = (modeled_s * 1e9).ceil() as u64;
        netsim::wait_until(go_ns.saturating_add(modeled_ns));
    }
    let elapsed_ns = netsim::now_ns().saturating_sub(go_ns);
    Ok(KernelDone {
        kernel: kernel.name.clone(),
        elements,
        modeled_s,
        elapsed_s: elapsed_ns as f64 / 1e9,
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> KernelTiming {
        KernelTiming {
            pipeline_latency_cycles: 100.0,
            clock_hz: 150e6,
            ops_per_element: 1.0,
            ops_per_cycle: 1.0,
        }
    }

    #[test]
    fn ratss_formula() {
        let t = timing();
        assert!((t.seconds(0) - 100.0 / 150e6).abs() < 1e-18);
        assert!((t.seconds(1_500_000) - (100.0 / 150e6 + 0.01)).abs() < 1e-12);
        let wide = KernelTiming {
            ops_per_cycle: 4.0,
            ops_per_element: 2.0,
            ..t
        };
        assert!((wide.seconds(1_500_000) - (100.0 / 150e6 + 0.005)).abs() < 1e-12);
    }

    #[test]
    fn timing_validation() {
        assert!(timing().validate().is_ok());
        for bad in [
            KernelTiming {
                clock_hz: 0.0,
                ..timing()
            },
            KernelTiming {
                ops_per_cycle: -1.0,
                ..timing()
            },
            KernelTiming {
                pipeline_latency_cycles: f64::NAN,
                ..timing()
            },
            KernelTiming {
                ops_per_element: f64::INFINITY,
                ..timing()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bitfile_validation() {
        let k = Kernel::new("k", timing(), |_| 0, |_, _| Ok(()));
        let dup = Bitfile {
            name: "b".into(),
            kernels: vec![k.clone(), k.clone()],
        };
        assert!(dup.validate().unwrap_err().contains("two kernels"));
        let unnamed = Bitfile {
            name: String::new(),
            kernels: vec![k.clone()],
        };
        assert!(unnamed.validate().is_err());
        let mut slow = k;
        slow.timing.clock_hz = -1.0;
        let bad = Bitfile {
            name: "b".into(),
            kernels: vec![slow],
        };
        assert!(bad.validate().unwrap_err().contains("clock_hz"));
    }

    #[test]
    fn panic_messages() {
        assert_eq!(panic_message(&"static"), "static");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&42u32), "(a panic without a message)");
    }
}
