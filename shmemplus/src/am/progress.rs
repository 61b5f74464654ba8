//! The per-PE progress thread: it serves the requests other PEs put in this PE's
//! request rings (running their handlers), drains replies while it is awake, and
//! sleeps on the progress signal when no request waits.
//!
//! This module owns the thread and its loop. It must not wait for anything but its own
//! signal (handlers never block: see `handlers`), and it never sends requests.

use super::ring::Ring;
use super::{AmEngine, AmHeader, Incoming};
use crate::error::Error;
use crate::sync::{notify, WaitPolicy};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// How long the idle progress thread sleeps between looks at the link to other hosts:
/// the latency a request from another host sees when it finds this PE idle.
const LINK_IDLE_SLICE: std::time::Duration = std::time::Duration::from_micros(200);

impl AmEngine {
    /// Serves every request waiting in this PE's request rings and on the link to
    /// other hosts. Returns whether any was served.
    fn serve_requests(&self) -> bool {
        let (me, n) = (self.me(), self.n());
        let mut did = false;
        for src in 0..n {
            let ring = Ring::of(&self.segs, me, src);
            let role = self.role(src, false);
            // Bounded batch per ring keeps service fair between senders.
            for _ in 0..64 {
                let Some((h, payload)) = ring.peek(role).unwrap_or_else(|e| self.corrupt(role, e))
                else {
                    break;
                };
                self.dispatch(src, &h, payload);
                ring.advance(&h);
                self.notify_space(src);
                did = true;
            }
        }
        if let Some(link) = &self.link {
            did |= link.poll(false, &mut super::RequestSink(self));
        }
        did
    }

    /// Runs the handler of one request from `src` (its header checked by the ring or
    /// the link), or replies that there is none.
    pub(super) fn dispatch(&self, src: usize, h: &AmHeader, payload: &[u8]) {
        match self.handlers.get(h.handler as usize).and_then(|s| s.get()) {
            Some(handler) => handler(
                self,
                Incoming {
                    src,
                    header: *h,
                    payload,
                },
            ),
            None => self.reply_result(
                src,
                h.token,
                Err(format!(
                    "no active-message handler {} is registered",
                    h.handler
                )),
            ),
        }
    }

    fn has_requests(&self) -> bool {
        let (me, n) = (self.me(), self.n());
        (0..n).any(|i| !Ring::of(&self.segs, me, i).is_empty())
    }

    /// The progress thread's loop: serve requests (and drain replies while awake),
    /// sleep when no request is waiting.
    fn progress_loop(&self) {
        let signal = &self.segs.mine().control().progress_signal;
        // With a link to other hosts nothing wakes this thread when a record arrives
        // there, so it sleeps in short slices and looks at the link after each.
        let idle = WaitPolicy {
            spin: self.policy.spin.min(std::time::Duration::from_micros(20)),
            sleep_slice: match self.link {
                Some(_) => LINK_IDLE_SLICE,
                None => self.policy.sleep_slice,
            },
            ..self.policy
        };
        while !self.shutdown.load(Ordering::Acquire) {
            let a = self.serve_requests();
            if a {
                // Served puts and atomics may be what a user thread here waits for.
                notify(&self.segs.mine().control().user_signal);
            }
            let b = self.pump_replies();
            if !(a || b) {
                idle.wait_until(
                    signal,
                    || {
                        self.shutdown.load(Ordering::Acquire)
                            || self.has_requests()
                            || self.link.as_ref().is_some_and(|l| l.has_incoming())
                    },
                    || false,
                );
            }
        }
    }

    /// Starts the progress thread of this PE.
    pub fn start(self: &Arc<Self>) -> Result<JoinHandle<()>, Error> {
        let me = self.clone();
        std::thread::Builder::new()
            .name(format!("shmemplus-progress-{}", self.me()))
            .spawn(move || me.progress_loop())
            .map_err(|e| Error::os("starting the progress thread", e))
    }

    /// Completes the link's sends still in flight (after the progress thread stopped).
    pub fn settle_link(&self) {
        if let Some(link) = &self.link {
            link.settle();
        }
    }

    /// Asks the progress thread to stop (it notices within one sleep slice at most).
    pub fn stop(&self) {
        self.shutdown.store(true, Ordering::Release);
        notify(&self.segs.mine().control().progress_signal);
    }
}
