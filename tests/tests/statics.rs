//! Symmetric global data (`init_with(symmetric_data)`): Rust statics of
//! `shmemplus-statics-pe` written by other PEs through `locate_addr` and `cpu_space`,
//! under both conduits, in a one-PE job without a launcher, and refused when the PEs
//! disagree. `run` checks that every launched job left nothing in /dev/shm.

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{dump, run};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-statics-pe");

#[test]
fn globals_are_symmetric_under_both_conduits() {
    for conduit in ["shm", "am"] {
        let r = run(PE, 4, &["ring"], &[("SHMEMPLUS_CONDUIT", conduit)]);
        assert_eq!(r.outcome, JobOutcome::Success, "{conduit}\n{}", dump(&r));
        for (pe, out) in r.stdout.iter().enumerate() {
            let left = (pe + 3) % 4;
            assert!(
                out.contains(&format!(
                    "PE {pe}: statics ok: counter, 1024 slots from PE {left}"
                )),
                "{conduit}\n{}",
                dump(&r)
            );
        }
        assert!(
            r.stdout[0].contains("PE 0: counter after finalize 4"),
            "{conduit}\n{}",
            dump(&r)
        );
    }
}

#[test]
fn a_one_pe_job_without_a_launcher_puts_into_its_globals() {
    let out = std::process::Command::new(PE)
        .arg("solo")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("the PE program starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // A memory file, not a name in /dev/shm: nothing to leave behind.
    assert!(
        stdout.contains("globals backed by /memfd:shmemplus-solo"),
        "{stdout}"
    );
    assert!(stdout.contains("PE 0: solo statics ok"), "{stdout}");
}

#[test]
fn pes_that_differ_in_symmetric_data_are_refused() {
    let r = run(PE, 2, &["mismatch"], &[]);
    assert!(
        matches!(r.outcome, JobOutcome::PeFailed { .. }),
        "{}",
        dump(&r)
    );
    assert!(
        r.stderr
            .concat()
            .contains("PE 1 has 0 bytes of symmetric data (.data and .bss) but PE 0 has"),
        "{}",
        dump(&r)
    );
    assert!(!r.stdout.concat().contains("accepted"), "{}", dump(&r));
}
