//! The registry: what a task of each kind does on a CPU (a [`CpuTask`]) and on a board
//! (a [`BoardKernel`]). A graph names kinds; the program that runs it supplies the
//! registry.
//!
//! Owns the kinds, the CPU task interface and the argument layout of board kernels
//! ([`BoardArgs`]). It must not move data (`channel`) nor schedule tasks (`run`).

use crate::graph::Device;
use shmemplus::fpga_mock::Kernel;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a task reports when the run ends (gathered to PE 0).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TaskOutcome {
    /// `Some(true)` if the task checked its results and they were right, `Some(false)`
    /// if they were wrong, `None` if it checks nothing.
    pub verified: Option<bool>,
    /// Anything worth printing (one line).
    pub summary: String,
}

/// A task's code on a CPU: called once per iteration with the task's context, through
/// which it receives and sends. Each iteration it must receive once on each of its
/// in-channels and send once on each of its out-channels (the run checks).
pub trait CpuTask: Send {
    /// One iteration.
    /// Return [`crate::ScfError::Failed`] for a failure of the task's own.
    fn step(&mut self, ctx: &mut crate::task::TaskCtx<'_>) -> crate::Result<()>;
    /// After the last iteration.
    fn finish(&mut self) -> TaskOutcome {
        TaskOutcome::default()
    }
}

/// Makes the [`CpuTask`] of one task of a kind (given the task's name).
pub type CpuFactory = Arc<dyn Fn(&str) -> Box<dyn CpuTask> + Send + Sync>;

/// A kind's board implementation: a kernel of the mock boards, run once per iteration
/// after every input has arrived on the board, with [`BoardArgs`] as its arguments; its
/// outputs are then sent from the board. Its modeled time (`kernel.timing` over
/// `kernel.elements(args)`) is the task's compute time on a board.
#[derive(Clone)]
pub struct BoardKernel {
    /// The kernel (its name must be unique in the registry).
    pub kernel: Kernel,
    /// Bytes of board memory the kernel keeps between iterations (zeroed at start).
    pub state_bytes: u64,
}

/// The arguments every board kernel of SCF receives, as `u64`s in this order:
/// `[iteration, state_offset, state_bytes, n_in, n_out, (offset, bytes) per input,
/// (offset, bytes) per output]`. Offsets are board heap offsets; inputs and outputs are
/// in channel order of the graph.
///
/// ```
/// use shmemplus_scf::registry::BoardArgs;
/// let a = BoardArgs { iteration: 3, state: (0, 64), inputs: vec![(128, 32)], outputs: vec![(256, 8), (512, 8)] };
/// let words = a.to_words();
/// assert_eq!(words, [3, 0, 64, 1, 2, 128, 32, 256, 8, 512, 8]);
/// assert_eq!(BoardArgs::from_words(&words)?, a);
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardArgs {
    /// The iteration, from 0.
    pub iteration: u64,
    /// The state region: (offset, bytes).
    pub state: (u64, u64),
    /// Each input message: (offset, bytes).
    pub inputs: Vec<(u64, u64)>,
    /// Each output message: (offset, bytes).
    pub outputs: Vec<(u64, u64)>,
}

impl BoardArgs {
    /// The arguments as the kernel receives them.
    pub fn to_words(&self) -> Vec<u64> {
        let mut w = vec![
            self.iteration,
            self.state.0,
            self.state.1,
            self.inputs.len() as u64,
            self.outputs.len() as u64,
        ];
        for &(o, b) in self.inputs.iter().chain(&self.outputs) {
            w.extend([o, b]);
        }
        w
    }

    /// Reads the arguments back (in a kernel), checking their count.
    pub fn from_words(w: &[u64]) -> Result<BoardArgs, String> {
        let bad = || format!("SCF board kernel: malformed arguments ({} words)", w.len());
        let (&[iteration, so, sb, n_in, n_out], rest) =
            w.split_first_chunk::<5>().ok_or_else(bad)?;
        let n = n_in.checked_add(n_out).ok_or_else(bad)?;
        if (rest.len() as u64) != n.checked_mul(2).ok_or_else(bad)? {
            return Err(bad());
        }
        let pairs: Vec<(u64, u64)> = rest.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let (inputs, outputs) = pairs.split_at(n_in as usize);
        Ok(BoardArgs {
            iteration,
            state: (so, sb),
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
        })
    }
}

/// The implementations of one kind.
#[derive(Clone, Default)]
pub struct Kind {
    /// On a CPU.
    pub cpu: Option<CpuFactory>,
    /// On a board.
    pub fpga: Option<BoardKernel>,
}

impl Kind {
    /// Whether this kind can run on `device`.
    pub fn runs_on(&self, device: Device) -> bool {
        match device {
            Device::Cpu => self.cpu.is_some(),
            Device::Fpga => self.fpga.is_some(),
        }
    }
}

/// Kinds by name.
#[derive(Clone, Default)]
pub struct Registry {
    kinds: BTreeMap<String, Kind>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Adds (or replaces) a kind.
    pub fn insert(&mut self, name: impl Into<String>, kind: Kind) -> &mut Registry {
        self.kinds.insert(name.into(), kind);
        self
    }

    /// Adds a CPU implementation to kind `name`.
    pub fn cpu<T, F>(&mut self, name: &str, make: F) -> &mut Registry
    where
        T: CpuTask + 'static,
        F: Fn(&str) -> T + Send + Sync + 'static,
    {
        let factory: CpuFactory = Arc::new(move |task| Box::new(make(task)));
        self.kinds.entry(name.to_string()).or_default().cpu = Some(factory);
        self
    }

    /// Adds a board implementation to kind `name`.
    pub fn fpga(&mut self, name: &str, kernel: BoardKernel) -> &mut Registry {
        self.kinds.entry(name.to_string()).or_default().fpga = Some(kernel);
        self
    }

    /// The kind named `name`.
    pub fn get(&self, name: &str) -> Option<&Kind> {
        self.kinds.get(name)
    }

    /// The kinds' names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.kinds.keys().map(String::as_str).collect()
    }

    /// Every board kernel, in kind order (one bitfile for the application).
    pub fn kernels(&self) -> Vec<Kernel> {
        self.kinds
            .values()
            .filter_map(|k| k.fpga.as_ref().map(|b| b.kernel.clone()))
            .collect()
    }
}
