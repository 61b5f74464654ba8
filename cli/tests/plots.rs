//! The plotting commands as a user runs them, each in a fresh process (a font a test
//! registered earlier in the same process would hide a missing registration).

mod common;

use common::{output_within, spawn_shmemplus};
use std::time::Duration;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

#[test]
fn cosched_plot_writes_an_svg_that_names_every_device() {
    let dir = std::env::temp_dir().join(format!("plots-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, svg) = (dir.join("devices.json"), dir.join("devices.svg"));
    let span = |start: f64, end: f64, items: u64| serde_json::json!({ "start_s": start, "end_s": end, "items": items });
    let device = |device: serde_json::Value, spans: Vec<serde_json::Value>| {
        serde_json::json!({
            "device": device, "chunks": spans.len(), "items": 1, "busy_s": 0.01,
            "idle_s": 0.03, "spans": spans, "fit": null, "failed": null,
        })
    };
    let timeline = serde_json::json!({
        "title": "a loop",
        "clock": "virtual",
        "devices": [
            device(serde_json::json!({ "kind": "cpu", "pe": 0 }), vec![span(0.0, 0.01, 3)]),
            device(
                serde_json::json!({ "kind": "board", "pe": 0, "node": 0, "board": 1 }),
                vec![span(0.0, 0.002, 40), span(0.002, 0.004, 40)],
            ),
        ],
    });
    std::fs::write(&json, timeline.to_string()).unwrap();
    let args = [
        "cosched-plot",
        json.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ];
    let out = output_within(
        spawn_shmemplus(&args),
        Duration::from_secs(60),
        "cosched-plot",
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let drawn = std::fs::read_to_string(&svg).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if !std::path::Path::new(FONT).exists() {
        assert!(!out.status.success());
        assert!(stderr.contains("fonts-dejavu-core"), "{stderr}");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    for name in [
        "PE 0 CPU",
        "node 0 board 1 (PE 0)",
        "a loop (virtual clock)",
    ] {
        assert!(
            drawn.contains(&format!("\n{name}\n")),
            "{name} not in the SVG"
        );
    }
}
