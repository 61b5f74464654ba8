//! Start-up under an MPI launcher, as far as a build without MPI can see it: a rank
//! of `mpirun` must not silently run as a job of one PE. (The MPI conduit itself is
//! exercised under `mpirun` by `.ci/mpi-jobs`, with a build that has the feature.)

use std::process::Command;

const PE: &str = env!("CARGO_BIN_EXE_shmemplus-test-pe");

#[test]
fn a_rank_of_mpirun_without_the_mpi_feature_says_how_to_build() {
    if shmemplus::launch::MPI_CONDUIT {
        // With the feature the program really starts MPI; `.ci/mpi-jobs` covers that.
        return;
    }
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"] {
        let out = Command::new(PE)
            .arg("rma")
            .env(var, "4")
            .output()
            .expect("the PE program runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{var}: {stderr}");
        assert!(
            stderr.contains("built without its `mpi` feature")
                && stderr.contains("--features shmemplus/mpi"),
            "{var}: {stderr}"
        );
    }
    // srun with one task is not an MPI job: the program runs as a job of one PE.
    let out = Command::new(PE)
        .arg("rma")
        .env("SLURM_NTASKS", "1")
        .output()
        .expect("the PE program runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
