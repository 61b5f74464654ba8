//! The trace of a real job (`SHMEMPLUS_TRACE`, what `shmemrun --trace` sets): each PE
//! writes a fragment at `finalize`, the launcher's merge (`merge_fragments`, which
//! `shmemrun` calls) makes one Chrome trace of them, and `shmemplus trace-plot` draws
//! it. Runs the `rma` scenario of `shmemplus-test-pe` on two nodes of novo-g under the
//! virtual clock.

use shmemplus::netsim::{cost::secs_to_ns, HopKind, Profile};
use shmemplus::trace::{fragment_path, merge_fragments, TraceFile, Track};
use shmemplus_tests::{assert_all_ok, run_with};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

#[test]
fn a_virtual_time_job_traces_every_pe_and_its_nic_hops_at_the_profiles_cost() {
    let dir = std::env::temp_dir().join(format!("shmemplus-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("job.json");
    let shown = path.to_string_lossy().into_owned();
    let env = [
        ("SHMEMPLUS_PROFILE", "novo-g"),
        ("SHMEMPLUS_CLOCK", "virtual"),
        ("SHMEMPLUS_TRACE", shown.as_str()),
    ];
    // The test-pe program runs under the launcher: each PE writes `job.json.pe<N>`.
    let r = run_with(PE, 2, Some(1), &["rma", "5", "12"], &env);
    assert_all_ok(&r, "rma", "2 PEs on 2 nodes of novo-g, virtual clock");
    let merged = merge_fragments(&path, 2).expect("the merged trace is written");
    assert!(merged.missing.is_empty(), "{merged:?}");
    assert_eq!(merged.dropped, 0);
    for pe in 0..2 {
        assert!(
            !fragment_path(&path, pe).exists(),
            "fragment of PE {pe} left behind"
        );
    }

    let trace = TraceFile::load(&path).expect("the merged file parses");
    assert_eq!(trace.other_data.clock, "virtual");
    assert_eq!(trace.other_data.profile, "novo-g");
    assert_eq!(trace.other_data.pes, 2);
    let pe_tracks: Vec<&str> = trace
        .trace_events
        .iter()
        .filter(|e| e.name == "thread_name" && e.pid == Track::Pe(0).pid())
        .filter_map(|e| e.args.get("name").and_then(|n| n.as_str()))
        .collect();
    assert_eq!(pe_tracks, ["PE 0", "PE 1"]);
    let spans: Vec<_> = trace.trace_events.iter().filter(|e| e.ph == "X").collect();
    for call in ["put", "get", "barrier"] {
        assert!(
            spans.iter().any(|e| e.cat == "call" && e.name == call),
            "no {call} call traced"
        );
    }
    assert!(spans.iter().all(|e| e.ts >= 0.0 && e.dur >= 0.0));

    // Every network hop sits on a NIC track and is busy for the profile's occupancy of
    // its bytes.
    let net = Profile::load("novo-g")
        .ok()
        .and_then(|p| p.cost(HopKind::Net).cloned())
        .expect("novo-g models the network");
    let nic: Vec<u64> = (0..2)
        .flat_map(|node| [Track::NicSend { node }, Track::NicRecv { node }])
        .map(|t| t.tid())
        .collect();
    let hops: Vec<_> = spans
        .iter()
        .filter(|e| e.cat == "hop" && nic.contains(&e.tid))
        .collect();
    assert!(hops.len() >= 24, "{} NIC hop events", hops.len());
    for h in &hops {
        let bytes = h
            .args
            .get("bytes")
            .and_then(|b| b.as_u64())
            .expect("a hop has bytes");
        let from = h.args.get("from").and_then(|b| b.as_u64());
        let to = h.args.get("to").and_then(|b| b.as_u64());
        assert!(
            matches!((from, to), (Some(0), Some(1)) | (Some(1), Some(0))),
            "{h:?}"
        );
        let want = secs_to_ns(net.occupancy(bytes));
        assert_eq!((h.dur * 1000.0).round() as u64, want, "{h:?}");
    }

    let png = dir.join("timeline.png");
    shmemplus_cli::trace_plot::plot_trace(&path, &png).expect("trace-plot draws it");
    let bytes = std::fs::read(&png).expect("the PNG exists");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let _ = std::fs::remove_dir_all(&dir);
}
