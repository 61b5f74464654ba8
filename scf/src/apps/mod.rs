//! The applications shipped with SCF: [`registry`] holds every kind they use, so a graph
//! file under `examples/scf/` runs with no code of its own.
//!
//! - `relay` (here): a CPU and board kind whose outputs are a fixed function of its
//!   inputs and the iteration ([`relay_output`]), for graphs that only move data;
//! - [`tracking`]: the target-tracking case study (`sensor`, `kalman`, `tracker`);
//! - [`backprojection`]: the parallel-beam backprojection case study (`projector`,
//!   `backproject`, `assembler`).
//!
//! Owns the kinds' code and the helpers their CPU tasks and board kernels share (the
//! checked reading of [`BoardArgs`], little-endian number conversion). It must not move
//! data other than through [`TaskCtx`] and [`KernelMemory`], nor decide where a task
//! runs (the mapping does) or when (the runtime does).

pub mod backprojection;
pub mod tracking;

use crate::registry::{BoardArgs, BoardKernel, CpuTask, Registry};
use crate::task::TaskCtx;
use crate::{Result, ScfError};
use shmemplus::fpga_mock::{Kernel, KernelMemory, KernelTiming};

/// The kind every graph can use to move data without code of its own.
pub const RELAY: &str = "relay";

/// Every kind of the shipped applications: [`RELAY`], the kinds of [`tracking`] and
/// those of [`backprojection`].
///
/// ```
/// let r = shmemplus_scf::apps::registry();
/// assert_eq!(
///     r.names(),
///     ["assembler", "backproject", "kalman", "projector", "relay", "sensor", "tracker"]
/// );
/// ```
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.cpu(RELAY, |_| RelayTask);
    r.fpga(
        RELAY,
        BoardKernel {
            kernel: relay_kernel(),
            state_bytes: 0,
        },
    );
    tracking::register(&mut r);
    backprojection::register(&mut r);
    r
}

/// The relay's function: every output byte `j` is the xor of byte `j mod len` of each
/// input (inputs of any lengths), or the iteration's low byte if there is no input.
/// Every output gets the same bytes (as many as it holds).
///
/// ```
/// use shmemplus_scf::apps::relay_output;
/// let mut out = [0u8; 3];
/// relay_output(7, &[&[1, 2], &[4]], &mut out);
/// assert_eq!(out, [1 ^ 4, 2 ^ 4, 1 ^ 4]);
/// relay_output(258, &[], &mut out);
/// assert_eq!(out, [2, 2, 2]);
/// ```
pub fn relay_output(iteration: u64, inputs: &[&[u8]], out: &mut [u8]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = if inputs.is_empty() {
            iteration as u8
        } else {
            inputs
                .iter()
                .filter(|i| !i.is_empty())
                .fold(0u8, |acc, i| acc ^ i[j % i.len()])
        };
    }
}

/// The relay on a CPU: receives every input, sends [`relay_output`] on every output.
struct RelayTask;

impl CpuTask for RelayTask {
    fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
        let inputs = ctx.inputs();
        let got = ctx.gather(&inputs)?;
        let views: Vec<&[u8]> = got.iter().map(Vec::as_slice).collect();
        for (to, bytes) in output_sizes(ctx)? {
            let mut out = vec![0u8; bytes];
            relay_output(ctx.iteration(), &views, &mut out);
            ctx.send(to, &out)?;
        }
        Ok(())
    }
}

/// The relay kernel's timing: one byte per element, one per cycle after a 100-cycle
/// pipeline at 150 MHz. Illustrative, not measured (the mock boards' standard timing).
pub const RELAY_TIMING: KernelTiming = KernelTiming {
    pipeline_latency_cycles: 100.0,
    clock_hz: 150e6,
    ops_per_element: 1.0,
    ops_per_cycle: 1.0,
};

/// The relay's board kernel (`scf-relay`): elements are the output bytes.
fn relay_kernel() -> Kernel {
    Kernel::new(
        "scf-relay",
        RELAY_TIMING,
        |words| {
            BoardArgs::from_words(words)
                .map(|a| a.outputs.iter().fold(0u64, |s, o| s.saturating_add(o.1)))
                .unwrap_or(0)
        },
        |mem, words| {
            let args = checked_args("relay", mem, words, None, None)?;
            let inputs = args
                .inputs
                .iter()
                .map(|&r| read_region(mem, r))
                .collect::<Result<Vec<_>, String>>()?;
            let views: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            for &(offset, bytes) in &args.outputs {
                let mut out = vec![0u8; region_len(bytes)?];
                relay_output(args.iteration, &views, &mut out);
                mem.write(offset, &out)?;
            }
            Ok(())
        },
    )
}

/// A board kernel of one input and one output of the same size: the output is the
/// input transformed in place by `f(iteration, bytes)`; its element count is the
/// message's bytes. For kinds whose board side is a byte-wise map (a copy, an
/// increment); arguments are checked before anything is written.
///
/// ```
/// use shmemplus::fpga_mock::kernels::STANDARD_TIMING;
/// let echo = shmemplus_scf::apps::map_kernel("echo", STANDARD_TIMING, |_, _| Ok(()));
/// assert_eq!(echo.kernel.name, "echo");
/// assert_eq!(echo.state_bytes, 0);
/// ```
pub fn map_kernel(
    name: &str,
    timing: KernelTiming,
    f: impl Fn(u64, &mut [u8]) -> std::result::Result<(), String> + Send + Sync + 'static,
) -> BoardKernel {
    let what = name.to_string();
    let kernel = Kernel::new(
        name,
        timing,
        |words| BoardArgs::from_words(words).map_or(0, |a| a.inputs.first().map_or(0, |i| i.1)),
        move |mem, words| {
            let args = checked_args(&what, mem, words, Some(1), Some(1))?;
            let (input, output) = (args.inputs[0], args.outputs[0]);
            if input.1 != output.1 {
                return Err(format!(
                    "{what} kernel: input of {} bytes, output of {}",
                    input.1, output.1
                ));
            }
            let mut buf = read_region(mem, input)?;
            f(args.iteration, &mut buf)?;
            mem.write(output.0, &buf)
        },
    );
    BoardKernel {
        kernel,
        state_bytes: 0,
    }
}

/// This task's out-channels as (destination, bytes per message), in channel order: what
/// a task that makes data (rather than transforms a message) needs to size it.
pub(crate) fn output_sizes<'a>(ctx: &TaskCtx<'a>) -> Result<Vec<(&'a str, usize)>> {
    ctx.outputs()
        .into_iter()
        .map(|to| {
            let bytes = ctx
                .message_bytes(to)
                .ok_or_else(|| ScfError::Failed(format!("no channel to {to:?} in the graph")))?;
            Ok((to, bytes))
        })
        .collect()
}

/// A kernel's arguments, read and checked before anything is written: the counts of
/// inputs and outputs (when the kernel fixes them) and every region (state, inputs,
/// outputs) inside board memory, with checked arithmetic. `what` names the kernel in
/// the messages.
pub(crate) fn checked_args(
    what: &str,
    mem: &KernelMemory<'_>,
    words: &[u64],
    n_in: Option<usize>,
    n_out: Option<usize>,
) -> Result<BoardArgs, String> {
    let args = BoardArgs::from_words(words)?;
    for (count, want, name) in [
        (args.inputs.len(), n_in, "inputs"),
        (args.outputs.len(), n_out, "outputs"),
    ] {
        if let Some(want) = want {
            if count != want {
                return Err(format!(
                    "{what} kernel: {count} {name}, it takes {want} (check the graph's edges)"
                ));
            }
        }
    }
    let regions = std::iter::once(("state", args.state))
        .chain(args.inputs.iter().map(|&r| ("input", r)))
        .chain(args.outputs.iter().map(|&r| ("output", r)));
    for (name, (offset, bytes)) in regions {
        match offset.checked_add(bytes) {
            Some(end) if end <= mem.len() => {}
            _ => {
                return Err(format!(
                    "{what} kernel: {name} region of {bytes} bytes at offset {offset} passes the board end ({} bytes)",
                    mem.len()
                ))
            }
        }
    }
    Ok(args)
}

/// A region's length as `usize` (a region checked by [`checked_args`] lies in board
/// memory, so this fails only on a machine too small to map the board).
pub(crate) fn region_len(bytes: u64) -> Result<usize, String> {
    usize::try_from(bytes).map_err(|_| format!("a region of {bytes} bytes does not fit in memory"))
}

/// Reads a whole (checked) region of board memory.
pub(crate) fn read_region(
    mem: &KernelMemory<'_>,
    (offset, bytes): (u64, u64),
) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; region_len(bytes)?];
    mem.read(offset, &mut buf)?;
    Ok(buf)
}

/// Little-endian `f64`s from bytes (a trailing partial number is ignored: callers check
/// the length first).
pub(crate) fn f64s_from_le(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            f64::from_le_bytes(w)
        })
        .collect()
}

/// `f64`s as little-endian bytes.
pub(crate) fn f64s_to_le(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Little-endian `f32`s from bytes (a trailing partial number is ignored).
pub(crate) fn f32s_from_le(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `f32`s as little-endian bytes.
pub(crate) fn f32s_to_le(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Helpers for the applications' tests: a real mock board with every kernel of
/// [`registry`] loaded.
#[cfg(test)]
pub(crate) mod testing {
    use shmemplus::fpga_mock::{Bitfile, Board, BoardConfig, BoardError, KernelDone};

    /// Board memory of the test boards (1 MiB).
    pub const MEMORY: u64 = 1 << 20;

    /// A 1 MiB board that does not wait for modeled time, configured with every kernel
    /// of the registry.
    pub fn board() -> Board {
        let board = Board::new(BoardConfig {
            memory_bytes: MEMORY,
            done_waits_for_model: false,
            ..BoardConfig::default()
        })
        .expect("a test board");
        board
            .configure(Bitfile {
                name: "scf-apps".into(),
                kernels: super::registry().kernels(),
            })
            .expect("the registry's kernels make a valid bitfile");
        board
    }

    /// Runs `kernel` with `words` and waits for DONE.
    pub fn run(board: &Board, kernel: &str, words: &[u64]) -> Result<KernelDone, BoardError> {
        board.start(kernel, words)?.wait()
    }

    /// Reads `len` bytes at `offset`.
    pub fn read(board: &Board, offset: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        board.read(offset, &mut out).expect("read back");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{board, read, run, MEMORY};
    use super::*;
    use crate::graph::{Device, TaskGraph};

    #[test]
    fn relay_kernel_matches_the_function() {
        let b = board();
        let a: Vec<u8> = (0..40u8).collect();
        let c: Vec<u8> = (0..7u8).map(|x| x.wrapping_mul(37)).collect();
        b.write(0, &a).unwrap();
        b.write(100, &c).unwrap();
        let args = BoardArgs {
            iteration: 5,
            state: (0, 0),
            inputs: vec![(0, 40), (100, 7)],
            outputs: vec![(200, 33), (300, 64)],
        };
        let done = run(&b, "scf-relay", &args.to_words()).unwrap();
        assert_eq!(done.elements, 97);
        for (offset, len) in [(200, 33), (300, 64)] {
            let mut want = vec![0u8; len];
            relay_output(5, &[&a, &c], &mut want);
            assert_eq!(read(&b, offset, len), want);
        }
        // No inputs: the iteration's low byte.
        let args = BoardArgs {
            iteration: 0x1_23,
            state: (0, 0),
            inputs: vec![],
            outputs: vec![(400, 8)],
        };
        run(&b, "scf-relay", &args.to_words()).unwrap();
        assert_eq!(read(&b, 400, 8), [0x23; 8]);
    }

    #[test]
    fn relay_kernel_refuses_bad_args_and_writes_nothing() {
        let b = board();
        b.write(0, &[0xAB; 64]).unwrap();
        let past_end = BoardArgs {
            iteration: 0,
            state: (0, 0),
            inputs: vec![(MEMORY - 4, 8)],
            outputs: vec![(0, 64)],
        };
        let overflow = BoardArgs {
            iteration: 0,
            state: (0, 0),
            inputs: vec![],
            outputs: vec![(0, 64), (u64::MAX, 2)],
        };
        for args in [past_end, overflow] {
            let e = run(&b, "scf-relay", &args.to_words()).unwrap_err();
            assert!(e.to_string().contains("passes the board end"), "{e}");
        }
        let e = run(&b, "scf-relay", &[1, 2]).unwrap_err();
        assert!(e.to_string().contains("malformed"), "{e}");
        assert_eq!(read(&b, 0, 64), [0xAB; 64]);
    }

    #[test]
    fn number_conversions_round_trip() {
        let x = [1.5f64, -0.0, f64::MAX, 3e-300];
        assert_eq!(f64s_from_le(&f64s_to_le(&x)), x);
        let y = [1.5f32, -2.25, f32::MIN_POSITIVE];
        assert_eq!(f32s_from_le(&f32s_to_le(&y)), y);
    }

    /// Every shipped example graph loads, and the registry has each task's kind with
    /// the devices its placements need.
    #[test]
    fn example_graphs_run_on_the_registry() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let reg = registry();
        for name in ["target-tracking", "backprojection"] {
            let path = root.join("examples/scf").join(name).join("graph.toml");
            let g = TaskGraph::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(g.name, name);
            for t in &g.tasks {
                let kind = reg
                    .get(&t.kind)
                    .unwrap_or_else(|| panic!("{name}: task {}: no kind {:?}", t.name, t.kind));
                for device in [Device::Cpu, Device::Fpga] {
                    if t.placement(device).is_some() {
                        assert!(
                            kind.runs_on(device),
                            "{name}: task {} is placed on a {} but kind {} has no {} code",
                            t.name,
                            device.name(),
                            t.kind,
                            device.name()
                        );
                    }
                }
            }
            // The message sizes suit the applications.
            for c in &g.channels {
                let from = &g.tasks[c.from].kind;
                let to = &g.tasks[c.to].kind;
                match (from.as_str(), to.as_str()) {
                    ("sensor", "kalman") | ("kalman", "tracker") => {
                        tracking::samples_per_block(c.bytes).unwrap();
                    }
                    ("projector", "backproject") => {
                        backprojection::angles_per_block(c.bytes).unwrap();
                    }
                    ("backproject", "assembler") => {
                        backprojection::image_side(c.bytes).unwrap();
                    }
                    other => panic!("{name}: unexpected channel {other:?}"),
                }
            }
        }
    }
}
