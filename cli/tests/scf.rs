//! `shmemplus scf` as a user runs it: the target-tracking case study explored and
//! measured on its three systems (the ranking of the predictions must be the ranking
//! of the measurements, and the best mapping must be the dissertation's), both case
//! studies run verified on the native and novo-g profiles, and the errors a user can
//! cause.

use std::path::PathBuf;
use std::process::{Command, Output};

const SHMEMPLUS: &str = env!("CARGO_BIN_EXE_shmemplus");

fn example(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/scf")
        .join(path)
}

fn shmemplus(args: &[&str]) -> Output {
    Command::new(SHMEMPLUS)
        .args(args)
        .output()
        .expect("shmemplus runs")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn explore_ranks_the_tracking_mappings_as_measured_and_as_the_thesis() {
    let graph = example("target-tracking/graph.toml");
    // (system, FPGA filters of the best mapping in the dissertation's table 5-2)
    for (system, best) in [("system-1", 3), ("system-2", 2), ("system-3", 1)] {
        let profile = example(&format!("target-tracking/{system}.toml"));
        let o = shmemplus(&[
            "scf",
            "explore",
            graph.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "--measure",
            "--json",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let rows = rows.as_array().expect("an array");
        assert_eq!(rows.len(), 4, "0 to 3 filters on the board: {}", text(&o));
        let field = |r: &serde_json::Value, k: &str| {
            r[k].as_f64()
                .unwrap_or_else(|| panic!("{k} missing: {}", text(&o)))
        };
        for r in rows {
            assert!(r["mapping"].is_string() && r["fpga_tasks"].is_u64(), "{r}");
            assert_eq!(r["verified"], true, "{r}");
            let (p, m) = (field(r, "predicted_s"), field(r, "measured_s"));
            assert!(
                (m / p - 1.0).abs() < 0.02,
                "{system} {}: measured {m} vs predicted {p}",
                r["mapping"]
            );
        }
        // Best predicted first; the measured times in the same order.
        let measured: Vec<f64> = rows.iter().map(|r| field(r, "measured_s")).collect();
        assert!(
            measured.windows(2).all(|w| w[0] < w[1]),
            "{system}: measured {measured:?} not in the predicted order"
        );
        assert_eq!(rows[0]["fpga_tasks"], best, "{system}: {}", text(&o));
    }
}

#[test]
fn both_case_studies_run_verified_on_native_and_novo_g() {
    for profile in ["native", "novo-g"] {
        for (graph, mapping) in [
            (
                "target-tracking/graph.toml",
                "target-tracking/mappings/two-fpga.toml",
            ),
            (
                "backprojection/graph.toml",
                "backprojection/mappings/all-fpga.toml",
            ),
            (
                "backprojection/graph.toml",
                "backprojection/mappings/all-cpu.toml",
            ),
        ] {
            let o = shmemplus(&[
                "scf",
                "run",
                example(graph).to_str().unwrap(),
                "--mapping",
                example(mapping).to_str().unwrap(),
                "--profile",
                profile,
                "--clock",
                "virtual",
                "--json",
            ]);
            assert!(o.status.success(), "{}", text(&o));
            let out = String::from_utf8_lossy(&o.stdout);
            let line = out
                .lines()
                .find(|l| l.starts_with('{'))
                .unwrap_or_else(|| panic!("no report: {}", text(&o)));
            let r: serde_json::Value = serde_json::from_str(line).expect("JSON");
            assert_eq!(r["verified"], true, "{profile} {graph}: {line}");
            assert_eq!(r["profile"], profile);
            assert!(r["total_s"].as_f64().is_some_and(|t| t > 0.0), "{line}");
        }
    }
}

#[test]
fn bad_graphs_and_mappings_are_refused_naming_the_problem() {
    let dir = std::env::temp_dir().join(format!("scf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let graph = example("target-tracking/graph.toml");
    let bad_board = dir.join("bad-board.toml");
    std::fs::write(
        &bad_board,
        "name = \"x\"\n[[place]]\ntask = \"kf1\"\ndevice = \"fpga\"\nboard = 7\n[[place]]\ntask = \"kf2\"\ndevice = \"cpu\"\n[[place]]\ntask = \"kf3\"\ndevice = \"cpu\"\n",
    )
    .unwrap();
    let twice = dir.join("twice.toml");
    std::fs::write(
        &twice,
        "name = \"x\"\n[[place]]\ntask = \"kf1\"\ndevice = \"cpu\"\n[[place]]\ntask = \"kf1\"\ndevice = \"fpga\"\n",
    )
    .unwrap();
    let cycle = dir.join("cycle.toml");
    std::fs::write(
        &cycle,
        "name = \"c\"\n[[task]]\nname = \"a\"\nkind = \"relay\"\ncpu = { pe = 0 }\n[[task]]\nname = \"b\"\nkind = \"relay\"\ncpu = { pe = 1 }\n[[edge]]\nfrom = \"a\"\nto = \"b\"\npattern = \"send\"\nbytes = 8\n[[edge]]\nfrom = \"b\"\nto = \"a\"\npattern = \"send\"\nbytes = 8\n",
    )
    .unwrap();
    let unknown_kind = dir.join("kind.toml");
    std::fs::write(
        &unknown_kind,
        "name = \"k\"\n[[task]]\nname = \"a\"\nkind = \"teleport\"\ncpu = { pe = 0 }\n",
    )
    .unwrap();
    let g = graph.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["scf", "run", g, "--mapping", bad_board.to_str().unwrap()],
            "board 7 does not exist",
        ),
        (
            vec!["scf", "run", g, "--mapping", twice.to_str().unwrap()],
            "mapped twice",
        ),
        (
            vec!["scf", "explore", cycle.to_str().unwrap()],
            "cycle (a -> b -> a)",
        ),
        (
            vec!["scf", "run", unknown_kind.to_str().unwrap()],
            "kind \"teleport\" is not registered",
        ),
    ];
    for (args, want) in cases {
        let o = shmemplus(&args);
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{args:?}: wanted {want:?}\n{}",
            text(&o)
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn explore_measures_tasks_without_a_modeled_cost_once() {
    let dir = std::env::temp_dir().join(format!("scf-measure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let graph = dir.join("g.toml");
    // "b" has no cpu_s: explore runs the graph once, all on CPUs, to measure it.
    std::fs::write(
        &graph,
        "name = \"m\"\niterations = 4\n[[task]]\nname = \"a\"\nkind = \"relay\"\ncpu_s = 0.001\ncpu = { pe = 0 }\n[[task]]\nname = \"b\"\nkind = \"relay\"\ncpu = { pe = 1 }\nfpga = { pe = 1, board = 0 }\n[[edge]]\nfrom = \"a\"\nto = \"b\"\npattern = \"send\"\nbytes = 4096\n",
    )
    .unwrap();
    let o = shmemplus(&["scf", "explore", graph.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 2, "{}", text(&o));
    for r in rows {
        // At least a's 4 x 1 ms of modeled compute.
        let p = r["predicted_s"].as_f64().expect("predicted_s");
        assert!(p >= 0.004, "{r}");
        assert!(r.get("measured_s").is_none(), "{r}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
