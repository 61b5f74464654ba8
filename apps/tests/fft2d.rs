//! `fft2d` as real jobs: both devices on 1, 2 and 4 PEs, the emulated novo-g cluster,
//! the virtual clock, and the errors a user can cause.

mod common;

use common::{failed_with, job, verified, Shape};

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
    // cheap: they take rows) and on novo-g under virtual time, where a row costs the
    // PE's thread more through the 0.6 ms DMA than on its CPU, so after their two
    // training chunks the boards stop taking.
    for (profile, clock, boards_cheap) in [("native", "wall", true), ("novo-g", "virtual", false)] {
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
                "256",
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
        let (cpu, on_boards) = (
            v["fastfit_rows"]["cpu"].as_u64().unwrap(),
            v["fastfit_rows"]["boards"].as_u64().unwrap(),
        );
        assert_eq!(cpu + on_boards, 2 * 128, "{what}: {cpu} + {on_boards} rows");
        if !boards_cheap {
            // The two boards' training chunks, in both passes: 256 / (64 * 3)
            // rounds to 1 row, 4 rows for the large sample.
            assert!(
                on_boards <= 2 * (1 + 4),
                "{what}: {on_boards} rows on the boards"
            );
        }
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
}
