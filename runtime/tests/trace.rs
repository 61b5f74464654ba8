//! `shmemrun --trace`: the PEs' fragments become one trace file and none is left
//! behind, also when a PE fails (the trace is then partial, and shmemrun says so).

use shmemplus::trace::{fragment_path, TraceFile};

mod common;

use common::{shmemrun, shmemrun_with, FAULT_PE};

#[test]
fn trace_merges_the_fragments_and_leaves_none_even_when_a_pe_fails() {
    let dir = std::env::temp_dir().join(format!("shmemrun-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("run.json");
    let shown = path.to_string_lossy().into_owned();
    let no_fragments = || (0..2).all(|pe| !fragment_path(&path, pe).exists());

    let out = shmemrun(&["--trace", &shown, "-n", "2", FAULT_PE, "hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.contains("trace written to"), "{stderr}");
    assert!(no_fragments());
    let trace = TraceFile::load(&path).expect("the trace parses");
    assert_eq!(trace.other_data.pes, 2);
    assert_eq!(trace.other_data.clock, "wall");
    let barriers: Vec<u64> = trace
        .trace_events
        .iter()
        .filter(|e| e.ph == "X" && e.name == "barrier")
        .map(|e| e.tid)
        .collect();
    // Both PEs' barriers (the program's and finalize's), on their own tracks.
    assert!(
        barriers.contains(&0) && barriers.contains(&1),
        "{barriers:?}"
    );
    // Wall-clock times start at 0.
    let first = trace
        .trace_events
        .iter()
        .filter(|e| e.ph == "X")
        .map(|e| e.ts);
    assert_eq!(first.fold(f64::INFINITY, f64::min), 0.0);

    // The variable does what the flag does; PE 1 panics, PE 0 is ended in a barrier.
    let out = shmemrun_with(
        &[("SHMEMPLUS_TRACE", &shown)],
        &["-n", "2", FAULT_PE, "panic", "1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(stderr.contains("is partial"), "{stderr}");
    assert!(no_fragments());
    let trace = TraceFile::load(&path).expect("a partial trace still parses");
    assert!(!trace.other_data.missing_pes.is_empty());

    // An unwritable path is refused before any PE starts.
    let out = shmemrun(&["--trace", "/nonexistent-dir/t.json", "-n", "1", "true"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
