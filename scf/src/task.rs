//! What a CPU task sees: [`TaskCtx`], its coordination primitives (`send`, `recv`,
//! `broadcast`, `scatter`, `gather`) by task name, and the accounting of one
//! iteration (which channels it used, its modeled compute, its time communicating).
//!
//! Owns the checks on a task's calls (a channel the graph has, the right size, once
//! per iteration). It must not move bytes itself (`channel` does) nor choose what runs
//! when (`run`).

use crate::channel::Channels;
use crate::error::{Result, ScfError};
use crate::graph::TaskGraph;
use shmemplus::Shmem;
use std::time::Duration;

/// A CPU task's handle for one iteration.
///
/// ```no_run
/// use shmemplus_scf::{task::TaskCtx, CpuTask, Result};
/// struct Doubler;
/// impl CpuTask for Doubler {
///     fn step(&mut self, ctx: &mut TaskCtx<'_>) -> Result<()> {
///         let x = ctx.recv("source")?;
///         let y: Vec<u8> = x.iter().map(|b| b.wrapping_mul(2)).collect();
///         ctx.send("sink", &y)
///     }
/// }
/// ```
pub struct TaskCtx<'a> {
    pub(crate) shmem: &'a Shmem,
    pub(crate) graph: &'a TaskGraph,
    pub(crate) chans: &'a Channels,
    pub(crate) task: usize,
    pub(crate) iteration: u64,
    /// Channels used this iteration (indexed by channel id).
    pub(crate) used: Vec<bool>,
    /// Modeled compute still to charge (charged before the first send).
    pub(crate) pending_compute: Option<Duration>,
    /// Time spent inside send and receive calls this iteration, on the job clock.
    pub(crate) comm: Duration,
    /// When the step began, on the job clock.
    pub(crate) started: Duration,
}

impl<'a> TaskCtx<'a> {
    /// This task's name.
    pub fn name(&self) -> &str {
        &self.graph.tasks[self.task].name
    }

    /// The current iteration, from 0.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Iterations in the run.
    pub fn iterations(&self) -> u64 {
        self.graph.iterations
    }

    /// The tasks this one receives from, in channel order.
    pub fn inputs(&self) -> Vec<&'a str> {
        let g = self.graph;
        g.inputs(self.task)
            .map(|c| g.tasks[c.from].name.as_str())
            .collect()
    }

    /// The tasks this one sends to, in channel order.
    pub fn outputs(&self) -> Vec<&'a str> {
        let g = self.graph;
        g.outputs(self.task)
            .map(|c| g.tasks[c.to].name.as_str())
            .collect()
    }

    /// The size of the messages between this task and `other` (either way), if the
    /// graph has a channel between them.
    pub fn message_bytes(&self, other: &str) -> Option<usize> {
        let g = self.graph;
        let o = g.task_index(other)?;
        g.channel(self.task, o)
            .or_else(|| g.channel(o, self.task))
            .map(|c| self.chans.bytes(c.id))
    }

    /// The handle of the runtime under SCF (for the job clock, say); moving data
    /// through it instead of the primitives bypasses the mapping.
    pub fn shmem(&self) -> &Shmem {
        self.shmem
    }

    /// The channel from this task to `to` (or from `from` to this task), marked used.
    fn channel(&mut self, other: &str, outgoing: bool) -> Result<usize> {
        let g = self.graph;
        let found = g.task_index(other).and_then(|o| {
            if outgoing {
                g.channel(self.task, o)
            } else {
                g.channel(o, self.task)
            }
        });
        let Some(c) = found else {
            let known = if outgoing {
                self.outputs()
            } else {
                self.inputs()
            };
            return Err(ScfError::NoChannel {
                task: self.name().to_string(),
                direction: if outgoing { "to" } else { "from" },
                direction_plural: if outgoing { "outputs" } else { "inputs" },
                other: other.to_string(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            });
        };
        if std::mem::replace(&mut self.used[c.id], true) {
            return Err(ScfError::Protocol {
                task: self.name().to_string(),
                iteration: self.iteration,
                problem: format!(
                    "{} {other:?} a second time (one message per channel per iteration)",
                    if outgoing { "sent to" } else { "received from" }
                ),
            });
        }
        Ok(c.id)
    }

    /// Receives this iteration's message from task `from`.
    pub fn recv(&mut self, from: &str) -> Result<Vec<u8>> {
        let c = self.channel(from, false)?;
        let t0 = self.shmem.now();
        self.chans.wait_message(self.shmem, c, self.iteration)?;
        let data = self.chans.read(self.shmem, c, self.iteration)?;
        self.chans.release(self.shmem, c, self.iteration)?;
        self.comm += self.shmem.now().saturating_sub(t0);
        Ok(data)
    }

    /// Sends `data` (exactly the channel's size) to task `to` as this iteration's
    /// message. Returns when `data` may be reused; the receiver may not have it yet.
    pub fn send(&mut self, to: &str, data: &[u8]) -> Result<()> {
        let c = self.channel(to, true)?;
        let want = self.chans.bytes(c);
        if data.len() != want {
            return Err(ScfError::WrongSize {
                task: self.name().to_string(),
                to: to.to_string(),
                got: data.len() as u64,
                want: want as u64,
            });
        }
        self.charge_compute();
        let t0 = self.shmem.now();
        self.chans.wait_slot(self.shmem, c, self.iteration)?;
        self.chans.deliver(self.shmem, c, self.iteration, data)?;
        self.comm += self.shmem.now().saturating_sub(t0);
        Ok(())
    }

    /// Sends the same `data` to every task of `to`, in order.
    pub fn broadcast(&mut self, to: &[&str], data: &[u8]) -> Result<()> {
        for t in to {
            self.send(t, data)?;
        }
        Ok(())
    }

    /// Sends `parts[k]` to `to[k]`.
    pub fn scatter(&mut self, to: &[&str], parts: &[&[u8]]) -> Result<()> {
        if to.len() != parts.len() {
            return Err(ScfError::Protocol {
                task: self.name().to_string(),
                iteration: self.iteration,
                problem: format!("scatter to {} tasks with {} parts", to.len(), parts.len()),
            });
        }
        for (t, p) in to.iter().zip(parts) {
            self.send(t, p)?;
        }
        Ok(())
    }

    /// Receives one message from each task of `from`, in order.
    pub fn gather(&mut self, from: &[&str]) -> Result<Vec<Vec<u8>>> {
        from.iter().map(|f| self.recv(f)).collect()
    }

    /// Charges the task's modeled compute, once, before its first send: what is left
    /// of it after the time the step has already computed (on the wall clock the real
    /// computation counts towards it; on the virtual clock it does not move the clock,
    /// so the whole modeled time is added).
    pub(crate) fn charge_compute(&mut self) {
        if let Some(d) = self.pending_compute.take() {
            let spent = self
                .shmem
                .now()
                .saturating_sub(self.started)
                .saturating_sub(self.comm);
            self.shmem.advance(d.saturating_sub(spent));
        }
    }

    /// The channels of this task left unused this iteration, as an error.
    pub(crate) fn check_complete(&self) -> Result<()> {
        let g = self.graph;
        let missing: Vec<String> = g
            .channels
            .iter()
            .filter(|c| (c.from == self.task || c.to == self.task) && !self.used[c.id])
            .map(|c| {
                if c.from == self.task {
                    format!("did not send to {:?}", g.tasks[c.to].name)
                } else {
                    format!("did not receive from {:?}", g.tasks[c.from].name)
                }
            })
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ScfError::Protocol {
                task: self.name().to_string(),
                iteration: self.iteration,
                problem: format!(
                    "{} (each iteration uses every channel of the task once)",
                    missing.join(", ")
                ),
            })
        }
    }
}
