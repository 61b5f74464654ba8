//! Error paths of the collectives: a bad argument on every PE or on one PE only,
//! arguments that differ between PEs, and a failure on one PE after the others have
//! committed to the call. Never a hang: every job must end on its own, well before the
//! launcher's 60 s timeout, either with the same error on every PE (the team then goes
//! on working) or with the job ended by the failing PE, which names itself and the call.
//! Jobs run `shmemplus-collective-errors-pe` on both conduits with one board per node.

use shmemplus_cli::launcher::{ExitCause, JobOutcome, JobReport};
use shmemplus_tests::{assert_all_ok, dump, run};

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-collective-errors-pe");

/// PEs per job: the world team, and the team of PEs 1.. (3 members).
const N: u32 = 4;

/// The bad calls of the PE program, as it names them.
const CASES: &[&str] = &[
    "broadcast-root",
    "broadcast-huge-root",
    "broadcast-count",
    "broadcast-board-count",
    "fcollect-overflow",
    "fcollect-dest-short",
    "fcollect-overlap",
    "collect-source-short",
    "collect-too-many",
    "collect-overlap",
    "alltoall-count",
    "alltoall-overflow",
    "alltoall-overlap",
    "alltoall-board-count",
    "reduce-xor-on-floats",
    "reduce-count",
];

fn envs() -> [[(&'static str, &'static str); 2]; 2] {
    [
        [("SHMEMPLUS_CONDUIT", "shm"), ("SHMEMPLUS_FPGAS", "1")],
        [("SHMEMPLUS_CONDUIT", "am"), ("SHMEMPLUS_FPGAS", "1")],
    ]
}

/// What PE `pe` printed after "PE <pe>: <key>: ", if it did.
fn said(r: &JobReport, pe: u32, key: &str) -> Option<String> {
    let prefix = format!("PE {pe}: {key}: ");
    r.stdout[pe as usize]
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
}

/// Asserts that the members of each team (the world, and PEs 1.. unless `world_only`)
/// printed one and the same message for every case, and returns the world team's
/// messages by case.
#[track_caller]
fn assert_same_everywhere(r: &JobReport, world_only: bool) -> Vec<String> {
    let mut world = Vec::new();
    for case in CASES {
        let teams = [("world", 0..N), ("tail", 1..N)];
        for (team, members) in &teams[..if world_only { 1 } else { 2 }] {
            let (team, members) = (*team, members.clone());
            let key = format!("{team} {case}");
            let first = members.start;
            let msg = said(r, first, &key)
                .unwrap_or_else(|| panic!("PE {first} printed nothing for {key}\n{}", dump(r)));
            for pe in members {
                assert_eq!(
                    said(r, pe, &key).as_deref(),
                    Some(msg.as_str()),
                    "PE {pe} vs PE {first} on {key}\n{}",
                    dump(r)
                );
            }
            if team == "world" {
                world.push(msg);
            }
        }
    }
    world
}

#[test]
fn a_bad_argument_on_every_pe_gives_every_pe_the_same_error_and_the_team_goes_on() {
    for env in envs() {
        let r = run(PE, N, &["all-bad"], &env);
        assert_all_ok(&r, "all-bad", &format!("{env:?}"));
        let msgs = assert_same_everywhere(&r, false);
        let root = &msgs[0];
        assert!(
            root.contains("broadcast root 4 is not in a team of 4 PEs")
                && root.contains("(passed by every member)"),
            "{root}"
        );
        for pe in 0..N {
            assert_eq!(
                said(&r, pe, "destroyed team_sync").as_deref(),
                Some("refused"),
                "{}",
                dump(&r)
            );
            let alloc = said(&r, pe, "alloc-overflow").unwrap_or_default();
            assert!(alloc.contains("overflow"), "PE {pe}: {alloc}");
        }
    }
}

#[test]
fn a_bad_argument_on_one_pe_gives_every_pe_the_same_error_instead_of_a_hang() {
    // Before the agreement, the victim returned its error before the opening barrier
    // and the others waited there: with the root as the victim, the job hung until the
    // launcher's timeout; with another victim, its next barrier let the others through
    // and the root returned Ok from a broadcast that failed elsewhere.
    for env in envs() {
        for victim in [0, 1, N - 1] {
            let victim_s = victim.to_string();
            let r = run(PE, N, &["one-bad", &victim_s], &env);
            assert_all_ok(&r, "one-bad", &format!("victim {victim}, {env:?}"));
            // The victim's errors, the same on every PE of every team it is in.
            let msgs = assert_same_everywhere(&r, victim == 0);
            // The message names the PE at fault (team and world numbers).
            let root = &msgs[0];
            assert!(
                root.contains(&format!("(passed by team PE {victim} (world PE {victim}))")),
                "{root}"
            );
            if victim == 0 {
                continue;
            }
            let tail = said(&r, 1, "tail broadcast-root").unwrap_or_default();
            assert!(
                tail.contains("not in a team of 3 PEs")
                    && tail.contains(&format!(
                        "(passed by team PE {} (world PE {victim}))",
                        victim - 1
                    )),
                "{tail}"
            );
        }
    }
}

#[test]
fn arguments_that_differ_between_pes_are_refused_alike() {
    for env in envs() {
        let r = run(PE, N, &["mismatch", "2"], &env);
        assert_all_ok(&r, "mismatch", &format!("{env:?}"));
        // alloc's own symmetry check names this PE and the first that differs.
        for pe in 0..N {
            let msg = said(&r, pe, "alloc-overflow").unwrap_or_default();
            assert!(
                msg.starts_with("non-symmetric collective call")
                    && msg.contains(
                        "PE 2 allocates 4611686018427387903 elements, whose size overflows"
                    ),
                "PE {pe}: {msg}"
            );
        }
        for case in ["root", "count", "operator", "object", "kind"] {
            let msg = said(&r, 0, case).unwrap_or_default();
            assert!(
                msg.starts_with("non-symmetric collective call"),
                "{case}: {msg}"
            );
            assert!(msg.contains("team PE 2 (world PE 2)"), "{case}: {msg}");
            for pe in 1..N {
                assert_eq!(
                    said(&r, pe, case),
                    Some(msg.clone()),
                    "{case}\n{}",
                    dump(&r)
                );
            }
        }
        // The PE in team_sync passes its barrier; the PEs in the broadcast refuse, as
        // one, naming the PE that is not in the call.
        for (case, syncing) in [("sync-vs-broadcast", 2), ("broadcast-vs-sync", 0)] {
            let refusal = said(&r, if syncing == 0 { 2 } else { 0 }, case).unwrap_or_default();
            for pe in 0..N {
                let got = said(&r, pe, case).unwrap_or_default();
                let in_sync = (pe == 2) == (syncing == 2);
                if in_sync {
                    assert_eq!(got, "synced", "{case} PE {pe}\n{}", dump(&r));
                } else {
                    assert_eq!(got, refusal, "{case} PE {pe}\n{}", dump(&r));
                    assert!(got.contains("is not in this call"), "{case}: {got}");
                }
            }
        }
    }
}

#[test]
fn a_failure_after_the_others_committed_ends_the_job_naming_the_pe_and_the_call() {
    let victim = 2;
    for env in envs() {
        for call in [
            "broadcast",
            "fcollect",
            "collect",
            "alltoall",
            "reduce",
            "alloc",
        ] {
            let r = run(PE, N, &["abort", call, "2"], &env);
            // Not a timeout: the victim ended the job, and the launcher named it.
            assert_eq!(
                r.outcome,
                JobOutcome::PeFailed {
                    pe: victim,
                    pid: r.pids[victim as usize],
                    cause: ExitCause::Code(70),
                },
                "{call}\n{}",
                dump(&r)
            );
            let stderr = &r.stderr[victim as usize];
            assert!(
                stderr.contains(&format!("PE {victim}: {call} failed on this PE")),
                "{call}\n{}",
                dump(&r)
            );
            assert!(
                r.stdout.iter().all(|o| o.contains("ready")),
                "{call}\n{}",
                dump(&r)
            );
        }
    }
}
