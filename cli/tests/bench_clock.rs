//! `shmemplus bench --clock`, through the binary: under virtual time the figures are
//! the modeled costs (a single put + quiet or get takes exactly what the model says,
//! whatever the host's load) and two runs agree; every record says its clock; a bad
//! clock name is refused before any PE starts. Every run is bounded.

mod common;

use std::process::Output;
use std::time::Duration;

/// Bound on one bench run (a virtual-time run of these sizes takes about a second).
const LIMIT: Duration = Duration::from_secs(120);

/// Runs `shmemplus ARGS...` to completion within `LIMIT`.
fn shmemplus(args: &[&str]) -> Output {
    let child = common::spawn_shmemplus(args);
    common::output_within(child, LIMIT, &format!("shmemplus {args:?}"))
}

/// A virtual-time bench of two routes on novo-g; returns its JSON records.
fn virtual_bench(json: &std::path::Path) -> Vec<serde_json::Value> {
    let out = shmemplus(&[
        "bench",
        "--profile",
        "novo-g",
        "--clock",
        "virtual",
        "--routes",
        "cpu-cpu,fpga-fpga-remote",
        "--ops",
        "rma",
        "--min-size",
        "32",
        "--max-size",
        "64K",
        "--reps",
        "3",
        "--quick",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("profile novo-g, virtual clock"), "{stdout}");
    let text = std::fs::read_to_string(json).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn virtual_time_figures_are_the_model_and_repeat() {
    let dir = std::env::temp_dir().join(format!("shmemplus-bench-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = virtual_bench(&dir.join("a.json"));
    let second = virtual_bench(&dir.join("b.json"));
    let _ = std::fs::remove_dir_all(&dir);
    let comm = |rs: &[serde_json::Value]| -> Vec<(String, String, u64, f64, f64)> {
        rs.iter()
            .filter(|r| r["op"] == "put" || r["op"] == "get")
            .map(|r| {
                (
                    r["route"].as_str().unwrap().to_string(),
                    r["op"].as_str().unwrap().to_string(),
                    r["bytes"].as_u64().unwrap(),
                    r["latency_us"].as_f64().unwrap(),
                    r["bandwidth_mbps"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let (a, b) = (comm(&first), comm(&second));
    // Two routes, 32 B .. 64 KiB by 8 (--quick): 32, 256, 2K, 16K; put and get.
    assert_eq!(a.len(), 16, "{a:?}");
    assert_eq!(a, b, "two virtual-time runs differ");
    for r in &first {
        assert_eq!(r["clock"], "virtual", "{r}");
        if r["op"] == "put" || r["op"] == "get" {
            let (lat, model) = (
                r["latency_us"].as_f64().unwrap(),
                r["modeled_us"].as_f64().unwrap(),
            );
            assert!(
                (lat / model - 1.0).abs() < 1e-3,
                "latency {lat} us against the model's {model} us: {r}"
            );
        }
    }
}

#[test]
fn a_bad_clock_is_refused_before_any_pe_starts() {
    let out = shmemplus(&["bench", "--clock", "sundial", "--quick"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "a PE ran");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "shmemplus: bad --clock: 'sundial' is not a clock; use wall or virtual\n"
    );
}
