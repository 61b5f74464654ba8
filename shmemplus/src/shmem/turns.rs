//! Turns in virtual-time order: under the virtual clock, a program whose PEs race for
//! shared work (a work pool taken by atomics, say) must let them take it in the order
//! of their virtual clocks, not of real time, or a PE whose modeled work costs little
//! real time takes everything and the others' clocks jump to its stamps. A PE that
//! calls [`Shmem::wait_turn`] waits until every other PE has published a later clock
//! (ties: the lower PE first) or has left.
//!
//! Why it orders: each PE publishes its clock (`Control::turn_clock`) when it waits for
//! a turn, and its published values only grow (its clock is monotonic; leaving
//! publishes `u64::MAX`). A PE at `(t, p)` proceeds only when every other published
//! `(t', q)` is greater; any turn `q` takes later is at a clock at least its published
//! one, so turns are taken in increasing `(t, pe)`. Why it ends: a PE that is not
//! waiting is computing and will publish again or leave; of the waiting PEs, the one
//! with the least `(t, pe)` waits for nobody. Every PE of the job must take part
//! (call [`Shmem::join_turns`] at the start, [`Shmem::leave_turns`] at the end), as a
//! collective would.
//!
//! The published clocks are read from the other PEs' control blocks directly: the
//! virtual clock needs every PE on one host, so they are all mapped, and reading them
//! charges nothing (they are the simulation's bookkeeping, not the program's data).
//! On the wall clock, real time already orders the PEs and every call here returns at
//! once. This module owns that protocol. It must not charge time or move data.

use super::Shmem;
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// After this long polling the others' clocks, a waiter sleeps between polls.
const POLL_FOR: Duration = Duration::from_micros(200);
/// The sleep between polls after that.
const POLL_SLEEP: Duration = Duration::from_micros(50);

impl Shmem {
    /// Starts taking turns in virtual-time order (see [`Shmem::wait_turn`]): publishes
    /// this PE's clock. Every PE of the job calls it, then a barrier, before the first
    /// turn. Does nothing on the wall clock.
    pub fn join_turns(&self) -> Result<()> {
        self.publish_turn_clock(None)
    }

    /// Under the virtual clock, waits until this PE's clock is the earliest of the PEs
    /// that take turns (ties: the lowest PE), so that what it does next (take work
    /// from a shared pool) happens in virtual-time order; see the module doc of
    /// `shmem::turns` for why this orders and cannot deadlock. Returns at once on the
    /// wall clock.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// shmem.join_turns()?;
    /// shmem.barrier_all()?;
    /// shmem.wait_turn()?; // alone, or on the wall clock: at once
    /// shmem.leave_turns()?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn wait_turn(&self) -> Result<()> {
        let inner = self.live()?;
        if !inner.clock.is_virtual() {
            return Ok(());
        }
        // Inside a library call: the program's CPU time up to here is on the clock
        // before it is published, and the polling below is not counted as its work.
        let _call = inner.clock.enter();
        let me = inner.me as usize;
        let t = inner.clock.now_ns();
        self.publish_turn_clock(Some(t))?;
        let ahead = |pe: usize, clock: u64| clock > t || (clock == t && pe > me);
        let started = Instant::now();
        loop {
            let mut all_ahead = true;
            for pe in (0..inner.topology.n_pes as usize).filter(|&pe| pe != me) {
                let seg = inner.segs.peer(pe).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "turns in virtual-time order need every PE on this host; PE {pe} is not"
                    ))
                })?;
                if !ahead(pe, seg.control().turn_clock.load(Ordering::Acquire)) {
                    all_ahead = false;
                    break;
                }
            }
            if all_ahead {
                return Ok(());
            }
            if started.elapsed() < POLL_FOR {
                std::thread::yield_now();
            } else {
                std::thread::sleep(POLL_SLEEP);
            }
        }
    }

    /// Stops taking turns: the other PEs no longer wait for this one. Every PE that
    /// joined calls it when it will take no more turns.
    pub fn leave_turns(&self) -> Result<()> {
        self.publish_turn_clock(Some(u64::MAX))
    }

    /// Publishes `t` (default: this PE's clock now) as this PE's turn clock.
    fn publish_turn_clock(&self, t: Option<u64>) -> Result<()> {
        let inner = self.live()?;
        if inner.clock.is_virtual() {
            let _call = inner.clock.enter();
            let t = t.unwrap_or_else(|| inner.clock.now_ns());
            inner
                .segs
                .mine()
                .control()
                .turn_clock
                .store(t, Ordering::Release);
        }
        Ok(())
    }
}
