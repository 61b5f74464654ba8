//! `fft2d` as real jobs: both devices on 1, 2 and 4 PEs, the emulated novo-g cluster,
//! the virtual clock, and the errors a user can cause.

mod common;

use common::{failed_with, job, scratch, verified, Shape};

const FFT2D: &str = env!("CARGO_BIN_EXE_fft2d");

#[test]
fn verifies_on_1_2_4_pes_on_both_devices() {
    for n in [1, 2, 4] {
        for device in ["cpu", "fpga"] {
            let shape = Shape {
                n,
                ..Shape::default()
            };
            let r = job(
                FFT2D,
                &shape,
                &[
                    "--size",
                    "64",
                    "--device",
                    device,
                    "--verify",
                    "--cpu-ns-per-point",
                    "2",
                ],
            );
            let out = verified(&r, &format!("{n} PEs, {device}"));
            assert!(out.contains("corner turns"), "{out}");
            assert!(out.contains("speedup"), "{out}");
            assert!(out.contains(&format!("device {device}")), "{out}");
        }
    }
}

#[test]
fn every_way_of_turning_gives_the_serial_result() {
    // 2 and 4 PEs, 60 x 60: R = 30 or 15 rows. The turns as phases of their own (the
    // default), slabs of 1 row, of 7 (which do not divide R) and of all rows; on the shm
    // conduit, the am conduit (every put an active message) and the novo-g profile
    // (non-blocking puts whose modeled time is waited for at quiet).
    let conduits: [&[(&str, &str)]; 3] = [
        &[],
        &[("SHMEMPLUS_CONDUIT", "am")],
        &[("SHMEMPLUS_PROFILE", "novo-g")],
    ];
    for env in conduits {
        for n in [2, 4] {
            for turning in [
                &[][..],
                &["--slab-rows", "1"],
                &["--slab-rows", "7"],
                &["--slab-rows", "60"],
            ] {
                let shape = Shape {
                    n,
                    pes_per_node: None,
                    env: env.to_vec(),
                };
                let mut args = vec!["--size", "60", "--device", "cpu", "--verify", "--json"];
                args.extend_from_slice(turning);
                let r = job(FFT2D, &shape, &args);
                let what = format!("{n} PEs, {env:?}, {turning:?}");
                common::succeeded(&r);
                let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).expect(&what);
                assert_eq!(v["verified"], true, "{what}");
                assert!(v["max_relative_error"].as_f64().unwrap() <= 1e-4, "{what}");
                let separate = turning.is_empty();
                assert_eq!(v["turns_in_passes"], !separate, "{what}");
                let phases = common::phase_names(&v);
                let want: &[&str] = if separate {
                    &["load", "row FFTs", "corner turns", "column FFTs"]
                } else {
                    &["load", "row FFTs + turn", "column FFTs + turn"]
                };
                assert_eq!(phases, want, "{what}");
                let (turn, share) = (
                    v["turn_s"].as_f64().unwrap(),
                    v["corner_turn_share"].as_f64().unwrap(),
                );
                assert!(
                    turn > 0.0 && share > 0.0 && share < 1.0,
                    "{what}: {turn} s, {share}"
                );
            }
        }
    }
}

#[test]
fn verifies_on_novo_g_with_four_boards_and_uneven_rows() {
    // 2 PEs of 30 rows each over 4 boards: 8, 8, 8 and 6 rows. Two PEs share a node.
    let shape = Shape {
        n: 2,
        pes_per_node: Some(2),
        env: vec![("SHMEMPLUS_PROFILE", "novo-g")],
    };
    let r = job(FFT2D, &shape, &["--size", "60", "--verify", "--json"]);
    common::succeeded(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["boards_per_node"], 4);
    assert!(v["max_relative_error"].as_f64().unwrap() <= 1e-4);
    assert!(v["kernel_modeled_s"].as_f64().unwrap() > 0.0);
    // The board passes turn as phases of their own.
    assert_eq!(v["turns_in_passes"], false);
    let turn = v["turn_s"].as_f64().unwrap();
    assert!(turn > 0.0 && turn < v["parallel_s"].as_f64().unwrap());
}

#[test]
fn the_virtual_clock_gives_the_same_result_in_virtual_time() {
    // novo-g, 4 PEs of one node each with 4 boards: the same result (so the same error
    // against the serial FFT) on both clocks, on the boards and on the CPUs; under
    // virtual time the kernels' DONE is their modeled time on the PEs' clocks.
    for device in ["fpga", "cpu"] {
        let mut errors = Vec::new();
        for clock in ["wall", "virtual"] {
            let shape = common::novo_g(4, clock);
            let r = job(
                FFT2D,
                &shape,
                &["--size", "64", "--device", device, "--verify", "--json"],
            );
            let what = format!("{device}, {clock}");
            common::succeeded(&r);
            let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).expect(&what);
            assert_eq!(v["verified"], true, "{what}");
            assert_eq!(v["clock"], clock, "{what}");
            let (m, d) = (
                v["kernel_modeled_s"].as_f64().unwrap(),
                v["kernel_done_after_s"].as_f64().unwrap(),
            );
            if device == "fpga" {
                assert!(m > 0.0 && d >= m - 1e-9, "{what}: {m} {d}");
                if clock == "virtual" {
                    assert!(d - m < 1e-6, "{what}: DONE {d} s, modeled {m} s");
                    assert!(v["cpu_basis"].as_str().unwrap().contains("cpu_speed 0.5"));
                }
            }
            assert!(v["parallel_s"].as_f64().unwrap() > 0.0, "{what}");
            errors.push(v["max_relative_error"].as_f64().unwrap());
        }
        assert_eq!(
            errors[0], errors[1],
            "{device}: the clocks gave different results"
        );
    }
}

#[test]
fn fastfit_shares_each_pes_rows_and_gives_the_serial_result() {
    // --schedule fastfit: each PE's rows go to its CPU or its boards chunk by chunk, in
    // both passes. Every row is transformed exactly once (PE 0's CPU and boards add up
    // to its rows, twice) and the result is the serial FFT's, on native (the boards
    // cheap: they take rows) and on novo-g under virtual time, where the model's DMA
    // alone costs the PE's thread more per row than the CPU path, so the boards do not
    // even train. There the image is 64 x 64: 32 rows of 512 bytes per PE, whose
    // largest chunk (16 KiB in, 16 KiB back) the model prices at about 84 us a row,
    // against a 64-point FFT's few us (about 20 in a debug build, at novo-g's CPU
    // speed 0.5); at 256 points a debug build's CPU is slower than the DMA. The
    // boards weigh the price against the CPU's typical time, not its first row's,
    // which pays first-use costs and can exceed the price (it did in a debug build,
    // and a board then trained on a one-row sample; at 1024 x 1024 in a release
    // build the same made a board take half a PE's rows and the pass 10 ms longer):
    // no board takes a row. On the wall clock the CPU may finish a pass before the boards' threads start:
    // there any split is right. On the virtual clock the boards train before the CPU's
    // first chunk on native (nothing is modeled).
    for (profile, clock, size, on_boards_expected) in [
        ("native", "wall", 256, None),
        ("native", "virtual", 256, Some(true)),
        ("novo-g", "virtual", 64, Some(false)),
    ] {
        let shape = Shape {
            n: 2,
            pes_per_node: None,
            env: vec![
                ("SHMEMPLUS_PROFILE", profile),
                ("SHMEMPLUS_CLOCK", clock),
                ("SHMEMPLUS_FPGAS", "2"),
            ],
        };
        let what = format!("{profile}, {clock}");
        let r = job(
            FFT2D,
            &shape,
            &[
                "--size",
                &size.to_string(),
                "--schedule",
                "fastfit",
                "--verify",
                "--json",
                "--cpu-ns-per-point",
                "2",
            ],
        );
        common::succeeded(&r);
        let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).expect(&what);
        assert_eq!(v["verified"], true, "{what}");
        assert_eq!(v["schedule"], "fastfit", "{what}");
        // PE 0's rows (half of them), in each of the two passes.
        let (cpu, on_boards) = (
            v["fastfit_rows"]["cpu"].as_u64().unwrap(),
            v["fastfit_rows"]["boards"].as_u64().unwrap(),
        );
        assert_eq!(cpu + on_boards, size, "{what}: {cpu} + {on_boards} rows");
        match on_boards_expected {
            // Both boards' objects can hold the rows, so both take (training).
            Some(true) => assert!(on_boards >= 2 * 2, "{what}: {on_boards} rows on the boards"),
            Some(false) => assert_eq!(on_boards, 0, "{what}: rows on the boards"),
            None => {}
        }
    }
}

#[test]
fn the_oracle_times_every_split_and_checks_every_run() {
    // --schedule oracle: 11 static splits of each PE's rows (0% to 100% on its CPU),
    // the assumed split and FastFit, in one job on the virtual clock, three times
    // each in shuffled rounds; every run's result is checked against the serial FFT,
    // and the report is the best split's median run.
    let shape = Shape {
        n: 2,
        pes_per_node: Some(1),
        env: vec![
            ("SHMEMPLUS_PROFILE", "native"),
            ("SHMEMPLUS_CLOCK", "virtual"),
            ("SHMEMPLUS_FPGAS", "1"),
        ],
    };
    let r = job(
        FFT2D,
        &shape,
        &[
            "--size",
            "256",
            "--schedule",
            "oracle",
            "--split-assume",
            "3",
            "--oracle-rounds",
            "3",
            "--verify",
            "--json",
            "--cpu-ns-per-point",
            "2",
        ],
    );
    common::succeeded(&r);
    let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["schedule"], "oracle");
    let sweep = v["sweep"].as_array().unwrap();
    let shares: Vec<f64> = sweep
        .iter()
        .map(|t| t["cpu_share"].as_f64().unwrap())
        .collect();
    let expected: Vec<f64> = (0..=10).map(|k| f64::from(k) / 10.0).collect();
    assert_eq!(shares, expected);
    let times: Vec<f64> = sweep
        .iter()
        .map(|t| t["parallel_s"].as_f64().unwrap())
        .collect();
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(best > 0.0, "{times:?}");
    assert_eq!(
        v["parallel_s"].as_f64().unwrap(),
        best,
        "the report is the best split's"
    );
    assert_eq!(v["split_assume"].as_f64().unwrap(), 3.0);
    assert!(v["static_s"].as_f64().unwrap() > 0.0);
    assert!(v["fastfit_s"].as_f64().unwrap() > 0.0);
    // The passes alone: part of each run's time, the corner turns left out.
    for t in sweep {
        let (passes, all) = (
            t["passes_s"].as_f64().unwrap(),
            t["parallel_s"].as_f64().unwrap(),
        );
        assert!(passes > 0.0 && passes < all, "{t}");
    }
    for (passes, all) in [
        ("static_passes_s", "static_s"),
        ("fastfit_passes_s", "fastfit_s"),
        ("fastfit_trained_passes_s", "fastfit_trained_s"),
    ] {
        let (passes, all) = (v[passes].as_f64().unwrap(), v[all].as_f64().unwrap());
        assert!(passes > 0.0 && passes < all, "{passes} of {all}");
    }
    let rows = &v["fastfit_rows"];
    assert_eq!(
        rows["cpu"].as_u64().unwrap() + rows["boards"].as_u64().unwrap(),
        2 * 128,
        "FastFit's run: every row of PE 0 once per pass"
    );
    // The speed ratio its devices measured, there when a CPU ran rows (its size is
    // not checked: a board's slope over chunks of a few 256-point rows, 50 ns each
    // beside a 10 us latency, is mostly the host's noise).
    if rows["cpu"].as_u64().unwrap() > 0 {
        let ratio = v["fastfit_speed_ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
    }
}

#[test]
fn fastfit_reports_every_device_of_both_passes() {
    // 2 PEs of one node each, 2 boards, 128 x 128 (64 rows per PE and pass), virtual
    // clock: the text report has a line per CPU and board, and --devices writes one
    // timeline of both passes whose chunks hold every row twice, each device's spans
    // adding up to its count, the column pass's chunks after the row pass's.
    let (out, text) = fastfit_timeline("fft2d-devices", "2", &["--size", "128"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("device") && l.contains("rows")),
        "{out}"
    );
    for device in ["PE 0 CPU", "PE 1 CPU", "node 1 board 1 (PE 1)"] {
        assert!(
            out.lines().any(|l| l.starts_with(device)),
            "{device}\n{out}"
        );
    }
    let timeline: serde_json::Value = serde_json::from_str(&text).unwrap();
    let devices = timeline["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2 + 2 * 2, "{text}");
    let mut spans = Vec::new();
    for d in devices {
        let mine = spans_of(d);
        let items: u64 = mine.iter().map(|s| s.2).sum();
        assert_eq!(items, d["items"].as_u64().unwrap(), "{d}");
        // A board's first chunk is a training sample: with 2 boards at most its even
        // share of the PE's rows (64 / 2 boards; the small sample a sixteenth of
        // it), not all of them.
        if d["device"]["kind"] == "board" {
            let first = mine.iter().min_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
            assert!(first.2 <= 32, "a first chunk of {} rows: {d}", first.2);
        }
        spans.extend(mine);
    }
    assert_eq!(spans.iter().map(|s| s.2).sum::<u64>(), 2 * 128, "{text}");
    // The row pass's chunks all end before the column pass's start (the corner turn
    // lies between): some instant splits them into two groups of 128 rows.
    assert!(column_pass_start(spans, 128).is_some(), "{text}");
    // Not for a static run.
    let r = job(
        FFT2D,
        &virtual_pes("2"),
        &["--size", "128", "--devices", "devices.json"],
    );
    failed_with(&r, "--devices applies to --schedule fastfit or oracle");
}

/// 2 PEs of one node each under virtual time, with `boards` boards per node.
fn virtual_pes(boards: &str) -> Shape<'_> {
    Shape {
        n: 2,
        pes_per_node: Some(1),
        env: vec![("SHMEMPLUS_FPGAS", boards), ("SHMEMPLUS_CLOCK", "virtual")],
    }
}

/// A verified `fft2d --schedule fastfit --devices FILE` run with `args` on
/// [`virtual_pes`]`(boards)`, in scratch directory `name`: its text report and the
/// timeline's JSON text.
fn fastfit_timeline(name: &str, boards: &str, args: &[&str]) -> (String, String) {
    let dir = scratch(name);
    let file = dir.join("devices.json").display().to_string();
    let mut all = vec!["--schedule", "fastfit", "--verify", "--devices", &file];
    all.extend_from_slice(args);
    let r = job(FFT2D, &virtual_pes(boards), &all);
    let out = verified(&r, &format!("fastfit --devices {args:?}"));
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (out, text)
}

/// A device's chunks in a `--devices` timeline: (start, end, rows).
fn spans_of(device: &serde_json::Value) -> Vec<(f64, f64, u64)> {
    device["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let f = |k: &str| s[k].as_f64().unwrap();
            (f("start_s"), f("end_s"), s["items"].as_u64().unwrap())
        })
        .collect()
}

/// The start of the column pass's first chunk: the instant after which come the
/// chunks of all but the first `rows` rows, every chunk before it having ended
/// (`None`: no such instant).
fn column_pass_start(mut spans: Vec<(f64, f64, u64)>, rows: u64) -> Option<f64> {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    (1..spans.len())
        .find(|&k| {
            let row_end = spans[..k].iter().map(|s| s.1).fold(0.0, f64::max);
            row_end <= spans[k].0 && spans[..k].iter().map(|s| s.2).sum::<u64>() == rows
        })
        .map(|k| spans[k].0)
}

#[test]
fn fastfit_measures_every_cpu_in_the_row_pass() {
    // One board per node on native under virtual time, 256 x 256 (128 rows per PE
    // and pass), the CPU path at 5 ns a point. The board's samples are due too soon
    // for the CPU's first row to run before them, so its model is fitted, and its
    // first production chunk sized, before the CPU has run a row. A CPU that has run
    // nothing counted for nothing in that chunk, which took the rest of the pass, and
    // the column pass, starting from the row pass's lines, still knew nothing of the
    // CPU: no CPU ran a row in either pass (at 1024 x 1024 the best static split
    // puts 10-20% of them there). The board leaves each CPU its first chunk: every
    // PE's CPU runs a row in the row pass.
    let (_, text) = fastfit_timeline(
        "fft2d-cpu-measured",
        "1",
        &["--size", "256", "--cpu-ns-per-point", "5"],
    );
    let timeline: serde_json::Value = serde_json::from_str(&text).unwrap();
    let devices = timeline["devices"].as_array().unwrap();
    let all: Vec<_> = devices.iter().flat_map(spans_of).collect();
    let columns_from = column_pass_start(all, 256).expect(&text);
    for d in devices.iter().filter(|d| d["device"]["kind"] == "cpu") {
        let in_row_pass: u64 = spans_of(d)
            .iter()
            .filter(|s| s.0 < columns_from)
            .map(|s| s.2)
            .sum();
        assert!(in_row_pass >= 1, "no row pass row on {d}\n{text}");
    }
}

#[test]
fn user_errors() {
    let four = Shape {
        n: 4,
        ..Shape::default()
    };
    let r = job(FFT2D, &four, &["--size", "30"]);
    failed_with(&r, "--size 30 is not a multiple of the 4 PEs");
    let none = Shape {
        n: 1,
        env: vec![("SHMEMPLUS_FPGAS", "0")],
        ..Shape::default()
    };
    let r = job(FFT2D, &none, &["--size", "8", "--device", "fpga"]);
    failed_with(&r, "--device fpga needs boards");
    let r = job(
        FFT2D,
        &none,
        &["--size", "8", "--device", "cpu", "--verify"],
    );
    verified(&r, "cpu without boards");
    let r = job(FFT2D, &none, &["--size", "8", "--schedule", "fastfit"]);
    failed_with(&r, "--schedule fastfit needs boards");
    let r = job(
        FFT2D,
        &none,
        &["--size", "8", "--schedule", "fastfit", "--device", "cpu"],
    );
    failed_with(
        &r,
        "--schedule fastfit shares rows between the CPUs and the boards",
    );
    let r = job(FFT2D, &none, &["--size", "8", "--schedule", "oracle"]);
    failed_with(&r, "--schedule oracle needs boards");
    let r = job(FFT2D, &four, &["--size", "8", "--split-assume", "3"]);
    failed_with(
        &r,
        "--split-assume sets the static split the oracle compares with",
    );
    for bad in ["0", "-2", "NaN", "inf"] {
        let flag = format!("--split-assume={bad}");
        let r = job(
            FFT2D,
            &four,
            &["--size", "8", "--schedule", "oracle", &flag],
        );
        failed_with(&r, "a speed ratio must be a positive number");
    }
    let r = job(FFT2D, &four, &["--size", "8", "--oracle-rounds", "2"]);
    failed_with(&r, "--oracle-rounds applies to --schedule oracle");
    for bad in ["0", "1001", "-1"] {
        let flag = format!("--oracle-rounds={bad}");
        let r = job(
            FFT2D,
            &four,
            &["--size", "8", "--schedule", "oracle", &flag],
        );
        failed_with(&r, "--oracle-rounds");
    }
}

#[test]
fn fastfit_keeps_its_trained_lines_in_a_file_for_the_next_run() {
    // --trained FILE: the first run trains and writes the lines its boards had at the
    // column pass's end; the second starts its row pass from them (its boards' lines
    // still go through the file's small sample, time for time: a new one would be
    // timed anew), verifies, and writes its own back.
    let dir = scratch("fft2d-trained");
    let (file, devices) = (dir.join("lines.json"), dir.join("devices.json"));
    let file_arg = file.display().to_string();
    let shape = Shape {
        n: 2,
        pes_per_node: Some(1),
        env: vec![("SHMEMPLUS_FPGAS", "1"), ("SHMEMPLUS_CLOCK", "virtual")],
    };
    let fastfit = |extra: &[&str]| {
        let base = [
            "--size",
            "128",
            "--schedule",
            "fastfit",
            "--verify",
            "--json",
        ];
        let r = job(FFT2D, &shape, &[&base[..], extra].concat());
        common::succeeded(&r);
        let v: serde_json::Value = serde_json::from_str(&r.stdout[0]).unwrap();
        assert_eq!(v["verified"], true, "{v}");
        v
    };
    common::trained_twice(fastfit, &file, &devices, 2);
    // Lines learned on 128 x 128 are refused by a run of 64 x 64.
    let r = job(
        FFT2D,
        &shape,
        &[
            "--size",
            "64",
            "--schedule",
            "fastfit",
            "--trained",
            &file_arg,
        ],
    );
    failed_with(&r, "learned by fft2d on 128 x 128");
    std::fs::write(&file, "{}").unwrap();
    let r = job(
        FFT2D,
        &shape,
        &[
            "--size",
            "128",
            "--schedule",
            "fastfit",
            "--trained",
            &file_arg,
        ],
    );
    failed_with(&r, "--trained");
    let r = job(FFT2D, &shape, &["--size", "128", "--trained", &file_arg]);
    failed_with(&r, "--trained applies to --schedule fastfit");
    let _ = std::fs::remove_dir_all(&dir);
}
