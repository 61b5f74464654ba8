//! The atomic memory operations from C (OpenSHMEM 1.5 section 9.7): C programs under
//! `tests/c/amo_*` run as 4-PE jobs under both conduits, and one on the `novo-g`
//! profile, whose PEs are on different nodes.

mod common;

use common::{build, run_ok};
use shmemplus_tests::{dump, run};

const AM: &[(&str, &str)] = &[("SHMEMPLUS_CONDUIT", "am")];
const NOVO_G: &[(&str, &str)] = &[("SHMEMPLUS_PROFILE", "novo-g")];

#[test]
fn four_pes_hammering_one_pe_get_exact_totals_under_both_conduits() {
    run_ok("amo_counters.c", 4, &[]);
    run_ok("amo_counters.c", 4, AM);
    run_ok("amo_counters.c", 4, NOVO_G);
}
