//! The trace (`SHMEMPLUS_TRACE=PATH`, `shmemrun --trace PATH`): every hop charged on
//! a shared resource and every traced library call of this PE, written at `finalize`
//! as Chrome trace-event JSON (see [`file`] for the format and the merge of a launched
//! job's fragments).
//!
//! This module owns the process-global recorder: whether tracing is on (one relaxed
//! load when it is off), the events recorded (bounded: at most [`CAP_PER_PE`]; the
//! rest are counted as dropped and the file says so), and writing them. Times are ns
//! on the job clock's timelines (`JobClock::now_ns`: virtual ns, or monotonic ns on
//! the wall clock). It must not charge hops or move the clock (`emulate`, `clock`):
//! the hooks in `emulate`, `shmem::route`, `shmem::teams` and `shmem::p2p` hand it
//! intervals that already happened.

pub mod file;

pub use file::{fragment_path, merge_fragments, Event, Merged, OtherData, TraceFile, Track};

use crate::clock::{InCall, JobClock};
use crate::config::ClockKind;
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Events one PE keeps at most (about 50 MB); later ones are counted as dropped.
pub const CAP_PER_PE: usize = 1 << 20;

/// The environment variable that turns tracing on.
pub const ENV_TRACE: &str = "SHMEMPLUS_TRACE";

static ON: AtomicBool = AtomicBool::new(false);
static TRACER: OnceLock<Tracer> = OnceLock::new();

/// Where this PE writes its trace, validated at `init`.
#[derive(Debug)]
pub(crate) struct Request {
    path: PathBuf,
    /// A launched PE writes a fragment for the launcher to merge.
    fragment: bool,
}

/// Reads [`ENV_TRACE`]: `None` when unset. A launched PE (`launched` = its number)
/// writes the fragment `PATH.pe<N>`, a PE without a launcher `PATH` itself. The file
/// is created now, so an empty or unwritable path fails `init`.
pub(crate) fn request_from_env(launched: Option<u32>) -> Result<Option<Request>> {
    let Some(value) = std::env::var_os(ENV_TRACE) else {
        return Ok(None);
    };
    let bad = |why: String| Error::BadConfig {
        var: ENV_TRACE,
        why,
    };
    if value.is_empty() {
        return Err(bad("empty; give the file to write the trace to".into()));
    }
    let path = PathBuf::from(value);
    let path = match launched {
        Some(pe) => fragment_path(&path, pe),
        None => path,
    };
    std::fs::File::create(&path)
        .map_err(|e| bad(format!("cannot write {}: {e}", path.display())))?;
    Ok(Some(Request {
        fragment: launched.is_some(),
        path,
    }))
}

/// A hop's endpoints, for its name and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peers {
    /// A network transfer from one PE's node to another's.
    Net { from: u32, to: u32 },
    /// A DMA or kernel on a partition of PE `pe`.
    Board { pe: u32 },
}

/// One recorded interval (ns on the job clock).
#[derive(Debug, Clone, Copy)]
struct Rec {
    track: Track,
    name: &'static str,
    start: u64,
    end: u64,
    /// A hop's bytes and endpoints; `None` for a call.
    hop: Option<(u64, Peers)>,
}

/// The events of one PE, bounded.
#[derive(Debug)]
struct Recorder {
    me: u32,
    n_pes: u32,
    clock: ClockKind,
    profile: String,
    cap: usize,
    events: Mutex<Vec<Rec>>,
    dropped: AtomicU64,
}

impl Recorder {
    fn new(me: u32, n_pes: u32, clock: ClockKind, profile: &str, cap: usize) -> Recorder {
        Recorder {
            me,
            n_pes,
            clock,
            profile: profile.into(),
            cap,
            events: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }

    fn record(&self, rec: Rec) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.len() < self.cap {
            events.push(rec);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The file of the events so far: a fragment (raw times) or a finished trace.
    fn to_file(&self, fragment: bool) -> TraceFile {
        let events = std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()));
        let mut tracks: Vec<Track> = events.iter().map(|r| r.track).collect();
        tracks.push(Track::Pe(self.me));
        tracks.sort_unstable();
        tracks.dedup();
        let mut out: Vec<Event> = tracks.into_iter().flat_map(Track::metadata).collect();
        out.extend(events.iter().map(|r| self.event(r)));
        let mut file = TraceFile {
            trace_events: out,
            display_time_unit: "ns".into(),
            other_data: OtherData {
                clock: self.clock.name().into(),
                profile: self.profile.clone(),
                pes: self.n_pes,
                events: events.len() as u64,
                dropped: self.dropped.load(Ordering::Relaxed),
                cap_per_pe: self.cap as u64,
                fragment: true,
                ..OtherData::default()
            },
        };
        if !fragment {
            file.finish();
        }
        file
    }

    fn event(&self, r: &Rec) -> Event {
        let us = |ns: u64| ns as f64 / 1000.0;
        let mut args = serde_json::Map::new();
        let (cat, name) = match r.hop {
            None => ("call", r.name.to_string()),
            Some((bytes, peers)) => {
                args.insert("bytes".into(), bytes.into());
                args.insert("by".into(), self.me.into());
                let name = match peers {
                    Peers::Net { from, to } => {
                        args.insert("from".into(), from.into());
                        args.insert("to".into(), to.into());
                        format!("PE {from} -> PE {to}")
                    }
                    Peers::Board { pe } => {
                        args.insert("pe".into(), pe.into());
                        format!("{} PE {pe}", r.name)
                    }
                };
                ("hop", name)
            }
        };
        Event {
            name,
            cat: cat.into(),
            ph: "X".into(),
            ts: us(r.start),
            dur: us(r.end.saturating_sub(r.start)),
            pid: r.track.pid(),
            tid: r.track.tid(),
            args,
        }
    }
}

/// The process's tracer: its recorder and where it writes.
#[derive(Debug)]
struct Tracer {
    recorder: Recorder,
    request: Request,
}

/// Turns tracing on for PE `me` (once `init` has finished its own traffic).
pub(crate) fn start(request: Request, (me, n_pes): (u32, u32), clock: ClockKind, profile: &str) {
    let recorder = Recorder::new(me, n_pes, clock, profile, CAP_PER_PE);
    if TRACER.set(Tracer { recorder, request }).is_ok() {
        ON.store(true, Ordering::Release);
    }
}

/// Whether tracing is on (one relaxed load).
#[inline(always)]
pub(crate) fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

fn tracer() -> Option<&'static Tracer> {
    TRACER.get().filter(|_| enabled())
}

/// Records that resource `track` was busy from `start` to `end` moving `bytes`.
pub(crate) fn hop(
    track: Track,
    name: &'static str,
    (start, end): (u64, u64),
    bytes: u64,
    peers: Peers,
) {
    if let Some(t) = tracer() {
        t.recorder.record(Rec {
            track,
            name,
            start,
            end,
            hop: Some((bytes, peers)),
        });
    }
}

/// Records a call of this PE from `start` to `end`.
pub(crate) fn call(name: &'static str, start: u64, end: u64) {
    if let Some(t) = tracer() {
        let track = Track::Pe(t.recorder.me);
        t.recorder.record(Rec {
            track,
            name,
            start,
            end,
            hop: None,
        });
    }
}

/// A traced call in progress: records `[start, clock now]` when dropped.
pub(crate) struct Span<'c> {
    /// Clock and start, when tracing (the guard keeps CPU time out of the call).
    open: Option<(&'c JobClock, u64, InCall)>,
    name: &'static str,
}

/// Opens a span named `name` on `clock` (nothing when tracing is off). Declare it
/// where the call starts; it ends where it is dropped.
#[inline]
pub(crate) fn span<'c>(name: &'static str, clock: &'c JobClock) -> Span<'c> {
    let open = enabled().then(|| {
        // Computation since the last call counts before the span starts.
        let guard = clock.enter();
        (clock, clock.now_ns(), guard)
    });
    Span { open, name }
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        if let Some((clock, start, _)) = &self.open {
            call(self.name, *start, clock.now_ns());
        }
    }
}

/// Writes this PE's trace (at `finalize`) and turns tracing off; a failure to write
/// is a warning, as `finalize` must go on.
pub(crate) fn finish() {
    if !ON.swap(false, Ordering::AcqRel) {
        return;
    }
    let Some(t) = TRACER.get() else { return };
    let file = t.recorder.to_file(t.request.fragment);
    if let Err(e) = file.save(&t.request.path) {
        crate::diag::warn(
            t.recorder.me,
            format_args!("cannot write the trace {}: {e}", t.request.path.display()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_rec(pe: u32, name: &'static str, start: u64, end: u64) -> Rec {
        Rec {
            track: Track::Pe(pe),
            name,
            start,
            end,
            hop: None,
        }
    }

    fn net_rec(node: u32, start: u64, end: u64) -> Rec {
        Rec {
            track: Track::NicSend { node },
            name: "net",
            start,
            end,
            hop: Some((4096, Peers::Net { from: 0, to: 1 })),
        }
    }

    /// Serialises `file` and parses it back as untyped JSON.
    fn json(file: &TraceFile) -> serde_json::Value {
        let text = serde_json::to_string(file).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or_default()
    }

    #[test]
    fn every_event_has_the_chrome_fields_and_tracks_are_named() {
        let r = Recorder::new(0, 2, ClockKind::Virtual, "novo-g", 100);
        r.record(call_rec(0, "put", 1_000, 3_500));
        r.record(net_rec(0, 1_500, 2_500));
        r.record(Rec {
            track: Track::DmaWrite { node: 1, board: 2 },
            name: "DMA write",
            start: 0,
            end: 10,
            hop: Some((64, Peers::Board { pe: 1 })),
        });
        let v = json(&r.to_file(false));
        assert_eq!(v["displayTimeUnit"], "ns");
        assert_eq!(v["otherData"]["clock"], "virtual");
        assert_eq!(v["otherData"]["profile"], "novo-g");
        assert_eq!(v["otherData"]["events"], 3);
        let events = v["traceEvents"].as_array().cloned().unwrap_or_default();
        for e in &events {
            for key in ["name", "ph", "ts", "dur", "pid", "tid"] {
                assert!(e.get(key).is_some(), "{key} missing in {e}");
            }
        }
        let named = |what: &str| -> Vec<String> {
            events
                .iter()
                .filter(|e| e["name"] == what)
                .map(|e| e["args"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        };
        let threads = named("thread_name");
        for t in ["PE 0", "NIC send", "board 2 DMA write"] {
            assert!(threads.contains(&t.to_string()), "{threads:?}");
        }
        let processes = named("process_name");
        assert!(processes.contains(&"node 1".to_string()), "{processes:?}");
        let put = events.iter().find(|e| e["name"] == "put").cloned();
        let put = put.unwrap_or_default();
        assert_eq!(
            (put["ts"].as_f64(), put["dur"].as_f64()),
            (Some(1.0), Some(2.5))
        );
        assert_eq!(put["cat"], "call");
        let hop = events
            .iter()
            .find(|e| e["cat"] == "hop" && e["args"]["from"] == 0);
        let hop = hop.cloned().unwrap_or_default();
        assert_eq!(hop["args"]["bytes"], 4096);
        assert_eq!(hop["args"]["to"], 1);
        assert_eq!(hop["name"], "PE 0 -> PE 1");
        // Virtual times are kept as they are.
        assert_eq!(hop["ts"].as_f64(), Some(1.5));
    }

    #[test]
    fn the_cap_bounds_memory_and_the_file_says_what_was_dropped() {
        let r = Recorder::new(3, 4, ClockKind::Virtual, "mu", 5);
        for i in 0..8 {
            r.record(call_rec(3, "get", i, i + 1));
        }
        let f = r.to_file(false);
        assert_eq!(f.other_data.events, 5);
        assert_eq!(f.other_data.dropped, 3);
        assert!(
            f.other_data.note.contains("3 events were dropped"),
            "{}",
            f.other_data.note
        );
        assert_eq!(
            f.trace_events.iter().filter(|e| !e.is_metadata()).count(),
            5
        );
    }

    #[test]
    fn wall_clock_times_start_at_zero_but_fragments_stay_raw() {
        let base = 7_000_000_000u64;
        let make = || {
            let r = Recorder::new(0, 1, ClockKind::Wall, "native", 10);
            r.record(call_rec(0, "quiet", base + 4_000, base + 6_000));
            r.record(call_rec(0, "barrier", base + 2_000, base + 3_000));
            r
        };
        let f = make().to_file(false);
        let spans: Vec<&Event> = f.trace_events.iter().filter(|e| !e.is_metadata()).collect();
        // Sorted by start, the earliest at 0, durations kept.
        assert_eq!(spans[0].name, "barrier");
        assert_eq!((spans[0].ts, spans[0].dur), (0.0, 1.0));
        assert_eq!((spans[1].ts, spans[1].dur), (2.0, 2.0));
        assert!(!f.other_data.fragment);
        let frag = make().to_file(true);
        assert!(frag.other_data.fragment);
        let min = frag
            .trace_events
            .iter()
            .filter(|e| !e.is_metadata())
            .map(|e| e.ts);
        assert_eq!(
            min.fold(f64::INFINITY, f64::min),
            (base + 2_000) as f64 / 1000.0
        );
    }

    #[test]
    fn merging_two_fragments_gives_one_normalised_trace_and_removes_them() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("out.json");
        for pe in 0..2u32 {
            let r = Recorder::new(pe, 3, ClockKind::Wall, "mu", 10);
            let t0 = 5_000_000 + u64::from(pe) * 1_000;
            r.record(call_rec(pe, "put", t0, t0 + 500));
            r.record(net_rec(0, t0 + 100, t0 + 300));
            let saved = r.to_file(true).save(&fragment_path(&path, pe));
            assert!(saved.is_ok(), "{saved:?}");
        }
        // PE 2 left no fragment: the trace is partial.
        let merged = merge_fragments(&path, 3).unwrap_or_else(|e| panic!("merge: {e}"));
        assert_eq!(merged.missing, vec![2]);
        assert_eq!(merged.events, 4);
        for pe in 0..3 {
            assert!(
                !fragment_path(&path, pe).exists(),
                "fragment {pe} left behind"
            );
        }
        let f = TraceFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.other_data.missing_pes, vec![2]);
        assert!(
            f.other_data.note.contains("partial"),
            "{}",
            f.other_data.note
        );
        let threads: Vec<&Event> = f
            .trace_events
            .iter()
            .filter(|e| e.name == "thread_name")
            .collect();
        // PE 0, PE 1 and node 0's NIC send, each named once.
        assert_eq!(threads.len(), 3, "{threads:?}");
        let spans: Vec<&Event> = f.trace_events.iter().filter(|e| !e.is_metadata()).collect();
        assert_eq!(spans[0].ts, 0.0);
        assert_eq!(spans.last().map(|e| e.ts), Some(1.1));
        assert!(spans.windows(2).all(|w| w[0].ts <= w[1].ts));
    }

    #[test]
    fn tracks_have_distinct_ids() {
        let tracks = [
            Track::Pe(0),
            Track::Pe(5),
            Track::NicSend { node: 0 },
            Track::NicRecv { node: 0 },
            Track::NicSend { node: 1 },
            Track::DmaRead { node: 0, board: 0 },
            Track::DmaWrite { node: 0, board: 0 },
            Track::Kernel { node: 0, board: 0 },
            Track::DmaRead { node: 0, board: 1 },
        ];
        let ids: std::collections::HashSet<(u64, u64)> =
            tracks.iter().map(|t| (t.pid(), t.tid())).collect();
        assert_eq!(ids.len(), tracks.len());
        let tids: std::collections::HashSet<u64> = tracks.iter().map(|t| t.tid()).collect();
        assert_eq!(
            tids.len(),
            tracks.len(),
            "thread ids are unique across processes"
        );
        assert_eq!(Track::Pe(5).pid(), file::PE_PROCESS);
        assert_eq!(Track::NicRecv { node: 3 }.process_name(), "node 3");
    }
}
