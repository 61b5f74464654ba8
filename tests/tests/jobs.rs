//! Integration tests that launch real multi-PE jobs of `shmemplus-test-pe` through the
//! launcher library, on both conduits, and check results, errors and leaks.

use shmemplus_cli::launcher::{ExitCause, JobOutcome};
use shmemplus_tests::{assert_all_ok, dump, run};
use std::time::Duration;

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

fn conduits() -> [(&'static str, &'static str); 2] {
    [("SHMEMPLUS_CONDUIT", "shm"), ("SHMEMPLUS_CONDUIT", "am")]
}

#[test]
fn random_put_get_to_every_pe_on_both_conduits() {
    for (n, seed) in [(2u32, 11u64), (3, 12), (5, 13)] {
        for env in conduits() {
            let seed = seed.to_string();
            let r = run(
                PE,
                n,
                &["rma", &seed, "24"],
                &[env, ("SHMEM_SYMMETRIC_SIZE", "8M")],
            );
            assert_all_ok(&r, "rma", &format!("{n} PEs {env:?}"));
        }
    }
}

#[test]
fn small_am_rings_still_carry_large_transfers() {
    // 4 KiB rings: every transfer above ~1 KiB is split into many records and the
    // producers wait for ring space all the time.
    let env = [
        ("SHMEMPLUS_CONDUIT", "am"),
        ("SHMEMPLUS_AM_RING", "4K"),
        ("SHMEM_SYMMETRIC_SIZE", "4M"),
    ];
    let r = run(PE, 3, &["rma", "99", "8"], &env);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
}

#[test]
fn barrier_orders_puts() {
    for env in conduits() {
        let r = run(PE, 4, &["barrier", "300"], &[env]);
        assert_eq!(r.outcome, JobOutcome::Success, "{env:?}\n{}", dump(&r));
        assert!(r
            .stdout
            .iter()
            .all(|o| o.contains("300 barrier rounds ordered")));
    }
}

#[test]
fn non_symmetric_allocation_is_reported_on_every_pe() {
    for mode in ["nonsym-size", "nonsym-order"] {
        let r = run(PE, 3, &[mode], &[]);
        assert_eq!(r.outcome, JobOutcome::Success, "{mode}\n{}", dump(&r));
        for (pe, out) in r.stdout.iter().enumerate() {
            assert!(
                out.contains(&format!("PE {pe}: non-symmetric detected")),
                "{mode}\n{}",
                dump(&r)
            );
        }
    }
    let r = run(PE, 2, &["nonsym-size"], &[]);
    assert!(
        r.stdout[1].contains("allocates 800 bytes") && r.stdout[1].contains("allocates 400 bytes"),
        "{}",
        dump(&r)
    );
}

#[test]
fn bad_inputs_get_clear_errors_on_both_conduits() {
    for env in conduits() {
        let r = run(
            PE,
            2,
            &["bad-input"],
            &[env, ("SHMEM_SYMMETRIC_SIZE", "1M")],
        );
        assert_eq!(r.outcome, JobOutcome::Success, "{env:?}\n{}", dump(&r));
        assert!(
            r.stdout.iter().all(|o| o.contains("bad input ok")),
            "{}",
            dump(&r)
        );
        assert!(
            r.stdout[0].contains("invalid PE 2: this job has PEs 0..2"),
            "{}",
            dump(&r)
        );
    }
}

#[test]
fn mismatched_heap_sizes_fail_at_start_on_every_pe() {
    // Only PE 1 sees a different SHMEM_SYMMETRIC_SIZE: the bootstrap check names it.
    let r = run(
        "sh",
        2,
        &[
            "-c",
            &format!(
                "[ $SHMEMPLUS_PE = 1 ] && export SHMEM_SYMMETRIC_SIZE=2M; exec {PE} barrier 1"
            ),
        ],
        &[("SHMEM_SYMMETRIC_SIZE", "1M")],
    );
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        dump(&r)
    );
    let all_err = r.stderr.concat();
    assert!(
        all_err.contains("PE 1 has SHMEM_SYMMETRIC_SIZE"),
        "{}",
        dump(&r)
    );
}

#[test]
fn user_active_messages() {
    let r = run(PE, 3, &["am"], &[]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(r.stdout.iter().all(|o| o.contains("am ok")), "{}", dump(&r));
}

#[test]
fn panicking_pe_ends_the_job_promptly_and_is_named() {
    for env in conduits() {
        let r = run(PE, 3, &["panic", "2"], &[env]);
        match r.outcome {
            JobOutcome::PeFailed {
                pe: 2,
                cause: ExitCause::Code(101),
                ..
            } => {}
            _ => panic!("{env:?}\n{}", dump(&r)),
        }
        assert!(r.message().contains("PE 2"), "{}", r.message());
        // The others were blocked on the dead PE; the launcher ended them instead of
        // the 60 s timeout (the outcome says so; the bound holds on a loaded machine).
        assert!(r.elapsed < Duration::from_secs(30), "took {:?}", r.elapsed);
    }
}

#[test]
fn pe_killed_mid_transfer_ends_the_job_and_leaks_nothing() {
    for env in conduits() {
        let r = run(PE, 3, &["kill", "1"], &[env]);
        match r.outcome {
            JobOutcome::PeFailed {
                pe: 1,
                cause: ExitCause::Signal(9),
                ..
            } => {}
            _ => panic!("{env:?}\n{}", dump(&r)),
        }
        assert!(r.message().contains("SIGKILL"), "{}", r.message());
    }
}

#[test]
fn idle_barrier_does_not_burn_a_core() {
    let r = run(PE, 2, &["idle"], &[]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
}

#[test]
fn openshmem_environment_variables_are_honoured() {
    let env = [
        ("SHMEM_INFO", "1"),
        ("SHMEM_VERSION", "1"),
        ("SHMEM_DEBUG", "1"),
        ("SHMEM_SYMMETRIC_SIZE", "3M"),
    ];
    let r = run(PE, 2, &["barrier", "2"], &env);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(
        r.stdout[0].contains("SHMEM_SYMMETRIC_SIZE 3145728 bytes"),
        "{}",
        dump(&r)
    );
    assert!(
        r.stdout[0].contains(&format!("shmemplus {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        dump(&r)
    );
    assert!(
        !r.stdout[1].contains("configuration"),
        "only PE 0 prints it"
    );
    // The test program installs no tracing subscriber: the library prints plain lines.
    assert!(
        r.stderr[1].contains("shmemplus: PE 1: debug: mapped 2 segments"),
        "SHMEM_DEBUG turns on debug lines\n{}",
        dump(&r)
    );
    let r = run(
        PE,
        1,
        &["barrier", "1"],
        &[("SHMEM_SYMMETRIC_SIZE", "lots")],
    );
    assert!(matches!(r.outcome, JobOutcome::PeFailed { .. }));
    assert!(r.stderr[0].contains("SHMEM_SYMMETRIC_SIZE"), "{}", dump(&r));
}

#[test]
fn pe_exiting_zero_without_finalize_ends_the_job() {
    let r = run(PE, 3, &["exit-early"], &[]);
    match r.outcome {
        JobOutcome::PeLeftEarly { pe: 1, .. } => {}
        _ => panic!("{}", dump(&r)),
    }
    // Half the job timeout: generous on a loaded machine, and a job left to hang
    // would end at 60 s.
    assert!(r.elapsed < Duration::from_secs(30), "took {:?}", r.elapsed);
}

#[test]
fn emulated_profiles_make_remote_slower_than_local() {
    for profile in ["novo-g", "mu"] {
        shmemplus_tests::isolate_cache();
        let mut spec = shmemplus_cli::launcher::JobSpec::new(4, PE);
        spec.args = vec!["emulation".into()];
        spec.pes_per_node = Some(2);
        spec.output = shmemplus_cli::launcher::OutputMode::Capture;
        spec.timeout = Some(Duration::from_secs(60));
        spec.env = vec![("SHMEMPLUS_PROFILE".into(), profile.into())];
        let r = shmemplus_cli::launcher::run_job(&spec).unwrap();
        shmemplus_tests::assert_nothing_left(&r);
        assert_eq!(r.outcome, JobOutcome::Success, "{profile}\n{}", dump(&r));
        assert!(
            r.stdout.iter().all(|o| o.contains("emulation ok")),
            "{}",
            dump(&r)
        );
    }
}

#[test]
fn unknown_profile_is_a_clear_error() {
    let r = run(
        PE,
        1,
        &["barrier", "1"],
        &[("SHMEMPLUS_PROFILE", "no-such-cluster")],
    );
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        dump(&r)
    );
    assert!(r.stderr[0].contains("SHMEMPLUS_PROFILE"), "{}", dump(&r));
}

#[test]
fn emulated_waits_do_not_burn_cores() {
    let r = run(
        PE,
        4,
        &["emulated-idle"],
        &[("SHMEMPLUS_PROFILE", "mu"), ("SHMEM_SYMMETRIC_SIZE", "64M")],
    );
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
}

#[test]
fn random_transfers_over_every_route_and_place_match_a_reference_model() {
    // (PEs, PEs per node, conduit, profile, ops): remote boards, boards shared by the
    // PEs of a node, the AM conduit, and an emulated profile.
    // The last case packetizes in 1000-byte packets: not a multiple of the 32-byte DMA
    // minimum nor of most transfer sizes.
    let cases = [
        (3, "1", "shm", "native", "40", "auto"),
        (4, "2", "shm", "native", "40", "auto"),
        (3, "1", "am", "native", "30", "auto"),
        (2, "1", "shm", "mu", "12", "auto"),
        (2, "1", "shm", "novo-g", "6", "1000"),
    ];
    for (n, ppn, conduit, profile, ops, packet) in cases {
        shmemplus_tests::isolate_cache();
        let mut spec = shmemplus_cli::launcher::JobSpec::new(n, PE);
        spec.args = vec!["routes".into(), "7".into(), ops.into()];
        spec.pes_per_node = Some(ppn.parse().unwrap());
        spec.output = shmemplus_cli::launcher::OutputMode::Capture;
        spec.timeout = Some(Duration::from_secs(120));
        spec.env = vec![
            ("SHMEMPLUS_FPGAS".into(), "2".into()),
            ("SHMEMPLUS_CONDUIT".into(), conduit.into()),
            ("SHMEMPLUS_PROFILE".into(), profile.into()),
            ("SHMEMPLUS_PACKET".into(), packet.into()),
        ];
        let r = shmemplus_cli::launcher::run_job(&spec).unwrap();
        shmemplus_tests::assert_nothing_left(&r);
        assert_eq!(
            r.outcome,
            JobOutcome::Success,
            "{n} PEs {conduit} {profile}\n{}",
            dump(&r)
        );
        assert!(
            r.stdout.iter().all(|o| o.contains("routes ok")),
            "{}",
            dump(&r)
        );
    }
}

#[test]
fn board_bad_inputs_get_typed_errors() {
    for fpgas in ["2", "0"] {
        let r = run(PE, 2, &["board-errors"], &[("SHMEMPLUS_FPGAS", fpgas)]);
        assert_eq!(
            r.outcome,
            JobOutcome::Success,
            "--fpgas {fpgas}\n{}",
            dump(&r)
        );
        assert!(
            r.stdout.iter().all(|o| o.contains("board errors ok")),
            "{}",
            dump(&r)
        );
    }
}

#[test]
fn four_nodes_of_four_2gib_boards_start_lazily() {
    // novo-g: 4 boards of 2 GiB per node; 4 nodes of one PE each.
    let r = run(PE, 4, &["board-memory"], &[("SHMEMPLUS_PROFILE", "novo-g")]);
    assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
    assert!(
        r.stdout.iter().all(|o| o.contains("4 boards, 8192 MiB")),
        "{}",
        dump(&r)
    );
}

#[test]
fn a_kernel_started_after_a_put_nbi_into_its_board_waits_for_the_delivery() {
    // novo-g prices the DMA into a board (about 14 ms for 4 MiB); 2 PEs on 2 nodes,
    // one board each. On either clock the caller goes on during the transfer, DONE
    // comes after the delivery plus the kernel, and the kernel saw the bytes. On the
    // virtual clock
    // PE 0's later write to its own memory is not held back by the DMA, unless a
    // fence stands between them.
    for clock in ["virtual", "wall"] {
        let env = [
            ("SHMEMPLUS_PROFILE", "novo-g"),
            ("SHMEMPLUS_CLOCK", clock),
            ("SHMEMPLUS_FPGAS", "1"),
        ];
        let r = run(PE, 2, &["staged-kernel"], &env);
        assert_eq!(r.outcome, JobOutcome::Success, "{clock}\n{}", dump(&r));
        assert!(
            r.stdout.iter().all(|o| o.contains("staged kernel ok")),
            "{clock}\n{}",
            dump(&r)
        );
    }
}

#[test]
fn tuning_cache_is_written_reused_and_rebuilt() {
    let dir = std::env::temp_dir().join(format!("shmemplus-tune-job-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = dir.to_string_lossy().into_owned();
    let job = |tune: &str| {
        let env = [
            ("SHMEMPLUS_PROFILE", "novo-g"),
            ("SHMEMPLUS_FPGAS", "1"),
            ("SHMEMPLUS_TUNE", tune),
            ("SHMEMPLUS_CACHE_DIR", cache.as_str()),
        ];
        let r = run(PE, 2, &["tune"], &env);
        assert_eq!(r.outcome, JobOutcome::Success, "{}", dump(&r));
        r
    };
    let files = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    // Off: nothing measured, nothing cached.
    job("off");
    assert!(files().is_empty(), "{:?}", files());
    // Force: measured and cached (one file, valid JSON with packets).
    let r = job("force");
    assert!(r.stdout[0].contains("packets [("), "{}", dump(&r));
    let cached = files();
    assert_eq!(cached.len(), 1, "{cached:?}");
    let text = std::fs::read_to_string(&cached[0]).unwrap();
    assert!(text.contains("\"packets\""), "{text}");
    // Auto with a valid cache: used as is (file untouched).
    let before = std::fs::metadata(&cached[0]).unwrap().modified().unwrap();
    let r = job("auto");
    assert!(r.stdout[0].contains("retune source Cached"), "{}", dump(&r));
    assert_eq!(
        std::fs::metadata(&cached[0]).unwrap().modified().unwrap(),
        before
    );
    // Corrupt, then stale: a warning, then rebuilt, never a crash.
    for bad in [
        "{ not json",
        r#"{"format":1,"key":"another cluster","hops":[],"packets":[],"seconds":0.0}"#,
    ] {
        std::fs::write(&cached[0], bad).unwrap();
        let r = job("auto");
        // The test program installs no tracing subscriber: the warning still reaches
        // stderr, as one plain line without colour codes.
        assert!(
            r.stderr[0].contains("shmemplus: PE 0: warning: tuning cache not usable"),
            "{}",
            dump(&r)
        );
        assert!(!r.stderr[0].contains('\x1b'), "{}", dump(&r));
        let text = std::fs::read_to_string(&cached[0]).unwrap();
        assert!(text.contains("novo-g"), "cache not rebuilt: {text}");
    }
    // A cache directory that cannot be created: tuned anyway, with a warning.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::write(&dir, b"a file where the directory should be").unwrap();
    let r = job("force");
    assert!(
        r.stderr[0].contains("shmemplus: PE 0: warning: tuning not cached"),
        "{}",
        dump(&r)
    );
    let _ = std::fs::remove_file(&dir);
}
