//! Collectives from C (`tests/c/coll_*.c`, `coll_cxx.cpp`): the 1.5 team forms on the
//! world, a negative-stride team and the even PEs, every reduction operator, the
//! legacy active-set forms on the even PEs while the odd ones run their own set, and
//! the C++ overloads; 4 and 8 PEs, both conduits, and the novo-g profile (one PE per
//! node, so every transfer crosses the emulated network).

mod common;

use common::run_ok;

const AM: &[(&str, &str)] = &[("SHMEMPLUS_CONDUIT", "am")];
const NOVO_G: &[(&str, &str)] = &[("SHMEMPLUS_PROFILE", "novo-g")];

#[test]
fn team_collectives_and_reductions() {
    run_ok("coll_team.c", 4, &[]);
    run_ok("coll_team.c", 4, AM);
    run_ok("coll_team.c", 8, &[]);
    run_ok("coll_team.c", 4, NOVO_G);
}

#[test]
fn legacy_active_set_collectives_on_even_and_odd_pes() {
    run_ok("coll_legacy.c", 4, &[]);
    run_ok("coll_legacy.c", 4, AM);
    run_ok("coll_legacy.c", 8, &[]);
    run_ok("coll_legacy.c", 8, NOVO_G);
}

#[test]
fn cxx_overloads() {
    run_ok("coll_cxx.cpp", 4, &[]);
    run_ok("coll_cxx.cpp", 4, AM);
}

#[test]
fn globals_and_statics_are_collective_and_lock_targets() {
    run_ok("coll_statics.c", 4, &[]);
    run_ok("coll_statics.c", 4, AM);
}
