//! The trace file: Chrome trace-event JSON (the format Perfetto and chrome://tracing
//! open), its tracks, and merging the fragments the PEs of a launched job write.
//!
//! This module owns the format: the events ([`Event`], complete `"ph":"X"` events and
//! `"ph":"M"` names), the track of each resource ([`Track`]: its process and thread
//! ids and names), the file's `otherData` ([`OtherData`]), reading and writing a file,
//! and [`merge_fragments`]. It must not record anything (the parent module does) nor
//! know the library's state: it is plain data, shared with the launcher and the tool.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The process id of the PEs' process (one thread per PE); node `k` is process `2 + k`.
pub const PE_PROCESS: u64 = 1;

/// Thread ids of node `k`'s resources start at `(k + 1) * NODE_TIDS`, so they never
/// collide with a PE's (thread id = PE number) in viewers that take thread ids as
/// global.
pub const NODE_TIDS: u64 = 1_000_000;

/// One timeline of the trace: a PE, or a resource of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Track {
    /// The library calls of a PE.
    Pe(u32),
    /// The send side of node `node`'s NIC.
    NicSend {
        /// The node.
        node: u32,
    },
    /// The receive side of node `node`'s NIC.
    NicRecv {
        /// The node.
        node: u32,
    },
    /// The DMA read channel (board -> host) of board `board` of node `node`.
    DmaRead {
        /// The node.
        node: u32,
        /// The board.
        board: u32,
    },
    /// The DMA write channel (host -> board) of board `board` of node `node`.
    DmaWrite {
        /// The node.
        node: u32,
        /// The board.
        board: u32,
    },
    /// The kernel unit of board `board` of node `node`.
    Kernel {
        /// The node.
        node: u32,
        /// The board.
        board: u32,
    },
}

impl Track {
    /// The node of a resource, `None` for a PE.
    fn node(self) -> Option<u32> {
        match self {
            Track::Pe(_) => None,
            Track::NicSend { node }
            | Track::NicRecv { node }
            | Track::DmaRead { node, .. }
            | Track::DmaWrite { node, .. }
            | Track::Kernel { node, .. } => Some(node),
        }
    }

    /// The position of a resource among its node's tracks (NIC first, then each board's
    /// read, write and kernel).
    fn index(self) -> u64 {
        match self {
            Track::Pe(pe) => u64::from(pe),
            Track::NicSend { .. } => 0,
            Track::NicRecv { .. } => 1,
            Track::DmaRead { board, .. } => 2 + 3 * u64::from(board),
            Track::DmaWrite { board, .. } => 3 + 3 * u64::from(board),
            Track::Kernel { board, .. } => 4 + 3 * u64::from(board),
        }
    }

    /// The trace-event process id: [`PE_PROCESS`] for PEs, `2 + k` for node `k`.
    pub fn pid(self) -> u64 {
        self.node().map_or(PE_PROCESS, |k| 2 + u64::from(k))
    }

    /// The trace-event thread id (also its sort index within its process).
    pub fn tid(self) -> u64 {
        match self.node() {
            None => self.index(),
            Some(k) => (u64::from(k) + 1) * NODE_TIDS + self.index(),
        }
    }

    /// The name of the track's process: "PEs" or "node k".
    pub fn process_name(self) -> String {
        self.node()
            .map_or_else(|| "PEs".to_string(), |k| format!("node {k}"))
    }

    /// The name of the track: "PE n", "NIC send", "board b DMA read", ...
    pub fn thread_name(self) -> String {
        match self {
            Track::Pe(pe) => format!("PE {pe}"),
            Track::NicSend { .. } => "NIC send".into(),
            Track::NicRecv { .. } => "NIC recv".into(),
            Track::DmaRead { board, .. } => format!("board {board} DMA read"),
            Track::DmaWrite { board, .. } => format!("board {board} DMA write"),
            Track::Kernel { board, .. } => format!("board {board} kernel"),
        }
    }

    /// The four metadata events that name this track and its process and fix their
    /// order in a viewer.
    pub fn metadata(self) -> [Event; 4] {
        let (pid, tid) = (self.pid(), self.tid());
        let meta = |name: &str, key: &str, value: serde_json::Value| Event {
            name: name.into(),
            cat: String::new(),
            ph: "M".into(),
            ts: 0.0,
            dur: 0.0,
            pid,
            tid,
            args: serde_json::Map::from_iter([(key.to_string(), value)]),
        };
        [
            meta("process_name", "name", self.process_name().into()),
            meta("process_sort_index", "sort_index", pid.into()),
            meta("thread_name", "name", self.thread_name().into()),
            meta("thread_sort_index", "sort_index", tid.into()),
        ]
    }
}

/// One trace event. Times are in microseconds (the format's unit), as floats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// What happened: a call ("put", "barrier", ...), a hop ("PE 0 -> PE 1"), or a
    /// metadata key ("thread_name").
    pub name: String,
    /// "call" or "hop" (empty for metadata).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cat: String,
    /// "X" (complete event: `ts` to `ts + dur`) or "M" (metadata).
    pub ph: String,
    /// Start, in microseconds.
    #[serde(default)]
    pub ts: f64,
    /// Duration, in microseconds.
    #[serde(default)]
    pub dur: f64,
    /// Process id (see [`Track::pid`]).
    #[serde(default)]
    pub pid: u64,
    /// Thread id (see [`Track::tid`]).
    #[serde(default)]
    pub tid: u64,
    /// Details: a hop's `bytes`, `from`/`to` PEs, the PE `by` which it was charged.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub args: serde_json::Map<String, serde_json::Value>,
}

impl Event {
    /// Whether this is a metadata event.
    pub fn is_metadata(&self) -> bool {
        self.ph == "M"
    }
}

/// What the file says about the run (`otherData`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OtherData {
    /// The job clock: "wall" or "virtual".
    pub clock: String,
    /// The cluster profile's name.
    pub profile: String,
    /// PEs in the job.
    pub pes: u32,
    /// Events recorded (metadata excluded).
    pub events: u64,
    /// Events not recorded because a PE had reached its cap (see `cap_per_pe`).
    pub dropped: u64,
    /// Events a PE keeps at most.
    pub cap_per_pe: u64,
    /// One PE's fragment of a launched job: wall-clock times are still raw monotonic
    /// times (the launcher's merge makes them start at 0).
    #[serde(default)]
    pub fragment: bool,
    /// PEs whose fragment was missing or unreadable when the launcher merged the trace
    /// (a PE that died before `finalize` writes none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_pes: Vec<u32>,
    /// What a reader should know (times' origin, drops, partial trace).
    #[serde(default)]
    pub note: String,
}

/// A whole trace file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    /// The events: metadata first, then complete events by start time.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<Event>,
    /// "ns": how viewers display times (the events' unit stays microseconds).
    #[serde(rename = "displayTimeUnit", default)]
    pub display_time_unit: String,
    /// About the run.
    #[serde(rename = "otherData", default)]
    pub other_data: OtherData,
}

impl TraceFile {
    /// Reads a trace file.
    pub fn load(path: &Path) -> Result<TraceFile, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&text).map_err(|e| format!("{} is not a trace: {e}", path.display()))
    }

    /// Writes the file (creating or truncating it).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        serde_json::to_writer(&mut out, self)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// Puts metadata first (each once) and complete events in order of start time;
    /// on the wall clock, moves the times so that the earliest event starts at 0 and
    /// notes the origin. Marks the file complete (not a fragment).
    pub fn finish(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let (mut meta, mut spans): (Vec<Event>, Vec<Event>) =
            std::mem::take(&mut self.trace_events)
                .into_iter()
                .partition(Event::is_metadata);
        // A process's names once per process, a thread's once per thread.
        meta.retain(|e| {
            let tid = if e.name.starts_with("process_") {
                0
            } else {
                e.tid
            };
            seen.insert((e.name.clone(), e.pid, tid))
        });
        meta.sort_by_key(|e| (e.pid, e.tid));
        let d = &mut self.other_data;
        d.note = match d.clock.as_str() {
            "wall" => {
                let origin = spans.iter().map(|e| e.ts).fold(f64::INFINITY, f64::min);
                if origin.is_finite() {
                    // Rounded to whole ns, as recorded.
                    let shift = |ts: f64| ((ts - origin) * 1000.0).round() / 1000.0;
                    spans.iter_mut().for_each(|e| e.ts = shift(e.ts));
                }
                "wall clock: 0 is the first recorded event".into()
            }
            "virtual" => "virtual clock: 0 is the job's start on every PE's clock".into(),
            _ => "no events".into(),
        };
        if d.dropped > 0 {
            d.note += &format!(
                "; {} events were dropped (each PE keeps at most {})",
                d.dropped, d.cap_per_pe
            );
        }
        if !d.missing_pes.is_empty() {
            d.note += &format!("; partial: no events from PEs {:?}", d.missing_pes);
        }
        d.fragment = false;
        spans.sort_by(|a, b| a.ts.total_cmp(&b.ts));
        d.events = spans.len() as u64;
        meta.extend(spans);
        self.trace_events = meta;
    }
}

/// The file PE `pe` of a launched job writes for the trace `path`: `path.pe<N>`.
pub fn fragment_path(path: &Path, pe: u32) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(".pe{pe}"));
    PathBuf::from(name)
}

/// What [`merge_fragments`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// PEs in the job.
    pub pes: u32,
    /// PEs without a readable fragment (the trace is partial when any).
    pub missing: Vec<u32>,
    /// Events in the merged file (metadata excluded).
    pub events: u64,
    /// Events the PEs dropped at their cap.
    pub dropped: u64,
}

/// Merges the fragments `path.pe0` .. `path.pe<n_pes - 1>` of a launched job into
/// `path` and deletes them, readable or not. Missing or unreadable fragments make a
/// partial trace (said in [`Merged::missing`] and in the file's `otherData`); with no
/// fragment at all the file is a valid, empty trace. Fails only if `path` cannot be
/// written.
pub fn merge_fragments(path: &Path, n_pes: u32) -> std::io::Result<Merged> {
    let mut merged = TraceFile {
        display_time_unit: "ns".into(),
        ..TraceFile::default()
    };
    let d = &mut merged.other_data;
    d.pes = n_pes;
    for pe in 0..n_pes {
        let frag = fragment_path(path, pe);
        let read = TraceFile::load(&frag);
        let _ = std::fs::remove_file(&frag);
        match read {
            Ok(f) => {
                let o = f.other_data;
                if d.clock.is_empty() {
                    (d.clock, d.profile) = (o.clock, o.profile);
                }
                d.dropped = d.dropped.saturating_add(o.dropped);
                d.cap_per_pe = d.cap_per_pe.max(o.cap_per_pe);
                merged.trace_events.extend(f.trace_events);
            }
            Err(_) => d.missing_pes.push(pe),
        }
    }
    merged.finish();
    merged.save(path)?;
    let d = merged.other_data;
    Ok(Merged {
        pes: n_pes,
        missing: d.missing_pes,
        events: d.events,
        dropped: d.dropped,
    })
}
