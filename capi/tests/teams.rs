//! Teams, contexts and locks from C (`tests/c/team_*.c`): splits with positive and
//! negative strides, 2-D grids, translation, configuration, contexts on teams, and a
//! lock around a non-atomic counter update, on 4 and 8 PEs under both conduits and the
//! novo-g profile (one PE per node: the teams span nodes).

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};

const AM: &[(&str, &str)] = &[("SHMEMPLUS_CONDUIT", "am")];
const NOVO_G: &[(&str, &str)] = &[("SHMEMPLUS_PROFILE", "novo-g")];

#[test]
fn splits_translate_and_destroy_on_4_and_8_pes() {
    run_ok("team_split.c", 4, &[]);
    run_ok("team_split.c", 4, AM);
    run_ok("team_split.c", 8, &[]);
    run_ok("team_split.c", 8, NOVO_G);
}

#[test]
fn contexts_are_made_on_teams_and_destroyed() {
    run_ok("team_ctx.c", 4, &[]);
    run_ok("team_ctx.c", 4, AM);
}

#[test]
fn a_lock_makes_a_read_modify_write_exact() {
    run_ok("team_lock.c", 4, &[]);
    run_ok("team_lock.c", 4, AM);
    run_ok("team_lock.c", 4, NOVO_G);
}

#[test]
fn a_destroyed_context_or_team_ends_the_job_with_a_message() {
    let exe = build("team_destroyed.c", &[]);
    for (what, routine, why) in [
        ("ctx", "shmem_ctx_quiet", "a destroyed context"),
        ("team", "shmem_team_sync", "a destroyed team"),
    ] {
        let report = run(&exe.to_string_lossy(), 2, &[what], &[]);
        let all = dump(&report);
        assert!(
            all.contains(&format!("{routine}: argument {}: {why}", what)),
            "{all}"
        );
        assert_ne!(
            report.outcome,
            shmemplus_runtime::JobOutcome::Success,
            "{all}"
        );
    }
}
