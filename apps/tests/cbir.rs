//! `cbir` as real jobs: every device on 1, 2 and 4 PEs (also with two PEs per node),
//! the three gather approaches on the emulated novo-g cluster, the virtual clock, a
//! directory of real images, and the errors a user can cause.

mod common;

use common::{failed_with, job, scratch, verified, Shape};
use shmemplus_apps::cbir::generator::Synthetic;
use shmemplus_apps::cbir::palette::colour;
use shmemplus_apps::cbir::SIDE;
use std::path::PathBuf;

const CBIR: &str = env!("CARGO_BIN_EXE_cbir");
/// Small and fixed: no start-up measurement, a few images per share.
const SMALL: [&str; 4] = ["--images", "150", "--cpu-ns-per-pixel", "5"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    SMALL.iter().copied().chain(extra.iter().copied()).collect()
}

#[test]
fn verifies_on_1_2_4_pes_on_every_device() {
    for n in [1, 2, 4] {
        for device in ["cpu", "fpga", "hybrid"] {
            let shape = Shape {
                n,
                ..Shape::default()
            };
            let r = job(CBIR, &shape, &args(&["--verify", "--device", device]));
            let out = verified(&r, &format!("{n} PEs, {device}"));
            assert!(out.contains("all ranked first"), "{out}");
            assert!(out.contains(&format!("{n} PEs on {n} nodes")), "{out}");
            if device == "cpu" {
                assert!(out.contains("all 150 images on CPUs"), "{out}");
            } else {
                assert!(out.contains("gather"), "{out}");
            }
        }
    }
}

#[test]
fn verifies_with_two_pes_per_node_and_two_boards() {
    // Node leaders drive the boards; the other PE of each node computes on its CPU.
    let shape = Shape {
        n: 4,
        pes_per_node: Some(2),
        env: vec![("SHMEMPLUS_FPGAS", "2")],
    };
    for g in ["1", "2", "3"] {
        let r = job(
            CBIR,
            &shape,
            &args(&["--verify", "--gather", g, "--board-speedup", "2"]),
        );
        let out = verified(&r, &format!("gather {g}"));
        assert!(out.contains("2 board(s) per node"), "{out}");
        assert!(
            out.contains("the model has cases for 1 or 4 boards"),
            "{out}"
        );
    }
}

#[test]
fn gather_approaches_on_novo_g_report_the_model() {
    // 4 nodes x 4 boards: every approach verifies and prints its prediction.
    let shape = Shape {
        n: 4,
        env: vec![("SHMEMPLUS_PROFILE", "novo-g")],
        ..Shape::default()
    };
    let formulas = ["(4-6)", "(4-10)", "(4-8)"];
    for (g, formula) in ["1", "2", "3"].into_iter().zip(formulas) {
        let r = job(CBIR, &shape, &args(&["--verify", "--gather", g]));
        let out = verified(&r, &format!("novo-g, gather {g}"));
        assert!(out.contains(&format!("approach {g}:")), "{out}");
        assert!(out.contains(formula), "{out}");
        assert!(out.contains("measured/model"), "{out}");
    }
}

#[test]
fn json_report() {
    let shape = Shape {
        n: 2,
        env: vec![("SHMEMPLUS_PROFILE", "novo-g")],
        ..Shape::default()
    };
    let r = job(CBIR, &shape, &args(&["--verify", "--json", "--top-k", "3"]));
    common::succeeded(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["top"].as_array().unwrap().len(), 3);
    assert_eq!(v["gather"]["approach"], 2);
    assert!(v["gather"]["predicted"]["seconds"].as_f64().unwrap() > 0.0);
    let phases = common::phase_names(&v);
    assert_eq!(phases, ["load", "compute", "gather", "gather cpus", "sort"]);
}

#[test]
fn the_virtual_clock_gives_the_same_results_in_virtual_time() {
    // novo-g, 4 nodes x 4 boards, hybrid, approach 3: the same top k on both clocks;
    // under virtual time the report says so and every kernel's DONE is its modeled time
    // after its inputs' DMA on the PE's clock (one run per board), inside the compute
    // phase.
    let mut tops = Vec::new();
    for clock in ["wall", "virtual"] {
        let shape = common::novo_g(4, clock);
        let r = job(
            CBIR,
            &shape,
            &args(&["--verify", "--json", "--gather", "3", "--device", "hybrid"]),
        );
        common::succeeded(&r);
        let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
        assert_eq!(v["verified"], true, "{clock}");
        assert_eq!(v["clock"], clock);
        assert_eq!(v["gather"]["approach"], 3);
        let kernels = v["kernels"].as_array().unwrap();
        assert_eq!(kernels.len(), 16, "{clock}");
        let compute = v["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "compute")
            .unwrap()["seconds"]
            .as_f64()
            .unwrap();
        for k in kernels {
            let (m, d) = (
                k["modeled_s"].as_f64().unwrap(),
                k["done_after_s"].as_f64().unwrap(),
            );
            assert!(m > 0.0 && d >= m - 1e-9, "{clock}: {k}");
            assert!(compute >= m, "{clock}: compute {compute} s < kernel {m} s");
            if clock == "virtual" {
                // The kernel starts once its board's images are in (put_nbi, which
                // kernel_start is ordered after): its DONE, counted from kernel_start,
                // is that wait plus its modeled time, and within the compute phase.
                assert!(d > m + 1e-6, "virtual DONE after the inputs' DMA: {k}");
                assert!(
                    d <= compute + 1e-9,
                    "{clock}: compute {compute} s < DONE {d} s"
                );
            }
        }
        tops.push(v["top"].clone());
    }
    assert_eq!(tops[0], tops[1], "the clocks gave different results");
}

/// Writes synthetic images as PNG files (palette colours, so they quantise back to
/// the same indices); returns the planted positions.
fn write_images(dir: &std::path::Path, n: u32) -> Vec<u32> {
    let db = Synthetic::new(4, n, 2);
    let save = |img: &shmemplus_apps::cbir::IndexedImage, path: PathBuf| {
        let rgb = image::RgbImage::from_fn(SIDE as u32, SIDE as u32, |x, y| {
            image::Rgb(colour(img.pixels()[y as usize * SIDE + x as usize]))
        });
        rgb.save(path).unwrap();
    };
    for i in 0..n {
        save(&db.image(i), dir.join(format!("img{i:03}.png")));
    }
    save(&db.query(), dir.join("query.ppm"));
    db.planted().to_vec()
}

#[test]
fn a_directory_of_images() {
    let dir = scratch("cbir-dir");
    let planted = write_images(&dir, 12);
    let query = dir.join("query.ppm");
    let shape = Shape {
        n: 2,
        ..Shape::default()
    };
    let d = dir.to_str().unwrap();
    let q = query.to_str().unwrap();
    let r = job(
        CBIR,
        &shape,
        &[
            "--dir", d, "--images", "12", "--query", q, "--verify", "--top-k", "2", "--json",
        ],
    );
    common::succeeded(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["images"], 12);
    // The query file is in the directory too (as query.ppm, sorted after the PNGs) but
    // only the first 12 images are used; its near-duplicates come first.
    let mut top: Vec<u64> = v["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_u64().unwrap())
        .collect();
    top.sort_unstable();
    assert_eq!(
        top,
        planted.iter().map(|&p| u64::from(p)).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn loader_errors_end_the_job_with_the_path() {
    let shape = Shape {
        n: 2,
        ..Shape::default()
    };
    let r = job(CBIR, &shape, &["--dir", "/nonexistent/shmemplus-cbir"]);
    failed_with(
        &r,
        "cannot read the image directory /nonexistent/shmemplus-cbir",
    );

    let dir = scratch("cbir-corrupt");
    write_images(&dir, 6);
    let bad = dir.join("img004.png");
    std::fs::write(&bad, b"\x89PNG\r\n\x1a\nnot really a png").unwrap();
    let r = job(CBIR, &shape, &["--dir", dir.to_str().unwrap()]);
    failed_with(&r, &format!("cannot load the image {}", bad.display()));

    let r = job(
        CBIR,
        &shape,
        &["--dir", dir.to_str().unwrap(), "--images", "99"],
    );
    failed_with(&r, "holds only 7 images");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn user_errors() {
    let one = Shape {
        n: 1,
        env: vec![("SHMEMPLUS_FPGAS", "0")],
        ..Shape::default()
    };
    let r = job(CBIR, &one, &args(&["--device", "fpga"]));
    failed_with(&r, "--device fpga needs boards");
    // Without boards, hybrid runs on the CPUs.
    let r = job(CBIR, &one, &args(&["--verify"]));
    verified(&r, "hybrid without boards");
    let r = job(CBIR, &one, &args(&["--board-speedup", "0"]));
    failed_with(&r, "speedup must be finite and > 0");
    let r = job(CBIR, &one, &["--images", "0"]);
    failed_with(&r, "--images must be at least 1");
    for rho in ["--rho=1", "--rho=0", "--rho=-0.5", "--rho=NaN"] {
        let r = job(CBIR, &one, &args(&["--schedule", "fastfit", rho]));
        failed_with(&r, "rho must be in (0, 1)");
    }
}

#[test]
fn fastfit_verifies_on_cpus_and_boards_and_reports_every_device() {
    // 2 nodes of 2 PEs, 2 boards each: 4 CPUs and 4 boards share one pool.
    let shape = Shape {
        n: 4,
        pes_per_node: Some(2),
        env: vec![("SHMEMPLUS_FPGAS", "2")],
    };
    for device in ["hybrid", "fpga", "cpu"] {
        let r = job(
            CBIR,
            &shape,
            &args(&["--verify", "--schedule", "fastfit", "--device", device]),
        );
        let out = verified(&r, &format!("fastfit, {device}"));
        assert!(out.contains("schedule fastfit"), "{out}");
        let devices = |prefix: &str| out.lines().filter(|l| l.starts_with(prefix)).count();
        let (cpus, boards) = match device {
            "hybrid" => (4, 4),
            "fpga" => (0, 4),
            _ => (4, 0),
        };
        assert_eq!(devices("PE "), cpus, "{device}\n{out}");
        assert_eq!(devices("node "), boards, "{device}\n{out}");
        // Every image was computed somewhere: the devices' images add up.
        let images: u64 = out
            .lines()
            .filter(|l| l.starts_with("PE ") || l.starts_with("node "))
            .map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                let at = if l.starts_with("PE ") { 4 } else { 7 };
                cols[at].parse::<u64>().unwrap()
            })
            .sum();
        assert_eq!(images, 150, "{device}\n{out}");
    }
}

#[test]
fn split_assume_moves_the_static_split() {
    let shape = Shape {
        n: 2,
        ..Shape::default()
    };
    let split = |extra: &[&str]| {
        let r = job(CBIR, &shape, &args(&[&["--verify"], extra].concat()));
        let out = verified(&r, &format!("{extra:?}"));
        out.lines()
            .find(|l| l.starts_with("split ("))
            .map(str::to_string)
            .unwrap()
    };
    // Boards 20x a core: 1 part in 21 of each node's 75 images on its CPU (3 each);
    // assuming 1x: about half (37 each).
    let true_split = split(&[]);
    assert!(true_split.contains("6 images on CPUs"), "{true_split}");
    let half = split(&["--split-assume", "1"]);
    assert!(
        half.contains("split assuming 1x") && half.contains("74 images on CPUs"),
        "{half}"
    );
    let r = job(CBIR, &shape, &args(&["--split-assume", "0"]));
    failed_with(&r, "speedup");
    let r = job(CBIR, &shape, &args(&["--oracle-rounds", "2"]));
    failed_with(&r, "--oracle-rounds applies to --schedule oracle");
    for bad in ["0", "1001"] {
        let flag = format!("--oracle-rounds={bad}");
        let r = job(CBIR, &shape, &args(&["--schedule", "oracle", &flag]));
        failed_with(&r, "--oracle-rounds");
    }
}

#[test]
fn the_oracle_reports_every_split_and_the_best_as_total() {
    let shape = Shape {
        n: 2,
        ..Shape::default()
    };
    let r = job(
        CBIR,
        &shape,
        &args(&[
            "--verify",
            "--schedule",
            "oracle",
            "--oracle-rounds",
            "2",
            "--json",
        ]),
    );
    assert_eq!(
        r.outcome,
        shmemplus_cli::launcher::JobOutcome::Success,
        "{}",
        shmemplus_tests::dump(&r)
    );
    let json: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(json["schedule"], "oracle");
    assert_eq!(json["verified"], true);
    let sweep = json["sweep"].as_array().unwrap();
    let shares: Vec<f64> = sweep
        .iter()
        .map(|t| t["cpu_share"].as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 11, "{shares:?}");
    assert!(shares
        .iter()
        .enumerate()
        .all(|(i, &f)| (f - i as f64 / 10.0).abs() < 1e-9));
    let best = sweep
        .iter()
        .map(|t| t["total_s"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(json["total_s"].as_f64().unwrap(), best);
    assert!(json["static_s"].as_f64().unwrap() > 0.0);
    assert!(json["fastfit_s"].as_f64().unwrap() > 0.0);
    // What FastFit put on the CPUs, within the images.
    let on_cpus = json["fastfit_images_on_cpus"].as_u64().unwrap();
    assert!(on_cpus <= json["images"].as_u64().unwrap(), "{on_cpus}");
    // The speed ratio its devices measured, there when the CPUs ran images (per
    // image it may be below 1 here: a board's slope counts its transfers, and 150
    // images give each a few short chunks).
    if on_cpus > 0 {
        let ratio = json["fastfit_speed_ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
    }
}

#[test]
fn fastfit_hands_over_a_boards_records_when_its_memory_is_full() {
    // One node with one board of 24 KiB: chunks of 1 image (16 KiB), and room for
    // the records of about 600 of the 1 000 (a quarter of its memory), so the board
    // hands its records over once mid-loop and once at the end. Records written on
    // past that room would pass the board's end (about 900 fit after the image and
    // the query): the kernel would fail and its chunk run on the CPU path.
    let dir = scratch("cbir-small-board");
    let profile = dir.join("small.toml");
    std::fs::write(
        &profile,
        "name = \"small-board\"\ndescription = \"a board of 24 KiB\"\n\
         [topology]\nnodes = 1\npes_per_node = 1\nboards_per_node = 1\n\
         board_memory = \"24K\"\n",
    )
    .unwrap();
    let profile_arg = profile.to_string_lossy().into_owned();
    let shape = Shape {
        n: 1,
        pes_per_node: None,
        env: vec![
            ("SHMEMPLUS_PROFILE", &profile_arg),
            ("SHMEMPLUS_CLOCK", "virtual"),
        ],
    };
    let r = job(
        CBIR,
        &shape,
        &[
            "--images",
            "1000",
            "--cpu-ns-per-pixel",
            "5",
            "--schedule",
            "fastfit",
            "--device",
            "fpga",
            "--verify",
            "--json",
        ],
    );
    common::succeeded(&r);
    let _ = std::fs::remove_dir_all(&dir);
    let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["max_per_board"], 1, "{v}");
    assert_eq!(v["images_on_boards"], 1000, "{v}");
    assert_eq!(v["images_on_cpus"], 0, "{v}");
    assert!(common::phase_names(&v).contains(&"records"), "{v}");
}

#[test]
fn fastfit_keeps_its_trained_lines_in_a_file_for_the_next_run() {
    // --trained FILE: the first run trains and writes its lines; the second starts
    // from them and takes no training chunk: every board's line still goes through
    // the file's small sample, time for time (a new one would be timed anew).
    let dir = scratch("cbir-trained");
    let (file, devices) = (dir.join("lines.json"), dir.join("devices.json"));
    let file_arg = file.display().to_string();
    let shape = Shape {
        n: 2,
        pes_per_node: None,
        env: vec![("SHMEMPLUS_CLOCK", "virtual")],
    };
    let fastfit = |extra: &[&str]| {
        let r = job(
            CBIR,
            &shape,
            &args(&[&["--verify", "--json", "--schedule", "fastfit"], extra].concat()),
        );
        common::succeeded(&r);
        let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
        assert_eq!(v["verified"], true, "{v}");
        v
    };
    common::trained_twice(fastfit, &file, &devices, 2);
    // Lines learned with one board per node are refused by a job with two.
    let two_boards = Shape {
        env: vec![("SHMEMPLUS_CLOCK", "virtual"), ("SHMEMPLUS_FPGAS", "2")],
        ..shape.clone()
    };
    let r = job(
        CBIR,
        &two_boards,
        &args(&["--schedule", "fastfit", "--trained", &file_arg]),
    );
    failed_with(&r, "1 board(s) per node; this run is");
    // A file that is not what a run writes is refused, naming it.
    std::fs::write(&file, r#"{"kernel": []}"#).unwrap();
    let r = job(
        CBIR,
        &shape,
        &args(&["--schedule", "fastfit", "--trained", &file_arg]),
    );
    failed_with(&r, "--trained");
    let r = job(CBIR, &shape, &args(&["--trained", &file_arg]));
    failed_with(&r, "--trained applies to --schedule fastfit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fastfit_writes_every_devices_timeline() {
    let dir = scratch("cbir-devices");
    let file = dir.join("devices.json");
    let shape = Shape {
        n: 4,
        pes_per_node: Some(2),
        env: vec![("SHMEMPLUS_FPGAS", "2")],
    };
    let file_arg = file.to_string_lossy().into_owned();
    let r = job(
        CBIR,
        &shape,
        &args(&["--verify", "--schedule", "fastfit", "--devices", &file_arg]),
    );
    verified(&r, "fastfit --devices");
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap_or_default()).unwrap();
    let devices = t["devices"].as_array().unwrap();
    // 4 CPUs and 2 boards on each of 2 nodes, each with its chunks.
    assert_eq!(devices.len(), 8, "{t}");
    let spans_items: u64 = devices
        .iter()
        .flat_map(|d| d["spans"].as_array().unwrap())
        .map(|s| s["items"].as_u64().unwrap())
        .sum();
    assert_eq!(spans_items, 150, "{t}");
    let _ = std::fs::remove_dir_all(&dir);
    // --devices belongs to FastFit (and the oracle's FastFit run): not to a static split.
    let r = job(CBIR, &shape, &args(&["--devices", &file_arg]));
    failed_with(&r, "--devices applies to --schedule fastfit");
}
