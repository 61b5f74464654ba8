//! A short run of the `soak` program (mixed put/get, atomics and collectives on the CPU
//! and a board, every result checked exactly) on 4 PEs, on both conduits. The long run
//! is on demand (see the README's "Soak test").

use shmemplus_cli::launcher::JobOutcome;
use shmemplus_tests::{dump, run};

const SOAK: &str = env!("CARGO_BIN_EXE_soak");

#[test]
fn a_short_soak_ends_with_exact_results_on_both_conduits() {
    for conduit in ["shm", "am"] {
        let env = [("SHMEMPLUS_CONDUIT", conduit), ("SHMEMPLUS_FPGAS", "1")];
        let r = run(SOAK, 4, &["--seconds", "3", "--seed", "7"], &env);
        assert_eq!(r.outcome, JobOutcome::Success, "{conduit}\n{}", dump(&r));
        let last = r.stdout[0]
            .lines()
            .find(|l| l.starts_with("soak "))
            .unwrap_or_default();
        // "soak ok: R rounds, X ops, 0 mismatches"
        let words: Vec<&str> = last.split_whitespace().collect();
        assert!(
            matches!(
                words[..],
                ["soak", "ok:", _, "rounds,", _, "ops,", "0", "mismatches"]
            ),
            "{conduit}: {last:?}\n{}",
            dump(&r)
        );
        let rounds: u64 = words[2].parse().unwrap_or(0);
        let ops: u64 = words[4].parse().unwrap_or(0);
        assert!(rounds >= 1 && ops > rounds, "{conduit}: {last}");
        for (pe, out) in r.stdout.iter().enumerate() {
            assert!(
                out.contains(&format!("PE {pe}: {rounds} rounds,"))
                    && out.contains("0 mismatches")
                    && out.contains("Fpga(0)"),
                "{conduit}: PE {pe}\n{}",
                dump(&r)
            );
        }
    }
}
