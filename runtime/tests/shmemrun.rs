//! Tests of the `shmemrun` binary: exit statuses, messages, tagged output and Ctrl-C.
//! Every wait is bounded: jobs carry `--timeout`, and the test kills a `shmemrun` that
//! does not end in time.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::{
    alive, group_members, job_leftovers, shmemrun, start_tagged, wait_bounded, FAULT_PE, LIMIT,
    SHMEMRUN,
};

#[test]
fn failing_pe_sets_the_exit_status_and_is_named() {
    let out = shmemrun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $SHMEMPLUS_PE = 1 ]; then exit 7; fi; sleep 30",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "stderr: {stderr}");
    assert!(
        stderr.contains("shmemrun: PE 1 (pid ") && stderr.contains("exited with code 7"),
        "stderr: {stderr}"
    );
}

#[test]
fn success_exits_zero_and_tagged_output_is_prefixed() {
    let out = shmemrun(&[
        "--np",
        "2",
        "--tag-output",
        "--",
        "sh",
        "-c",
        "printf 'a\\nb'; echo oops >&2",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["[pe 0] a", "[pe 0] b", "[pe 1] a", "[pe 1] b"]);
    assert!(stdout.ends_with('\n'), "partial last line not completed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut err: Vec<&str> = stderr.lines().collect();
    err.sort();
    assert_eq!(err, ["[pe 0] oops", "[pe 1] oops"]);
}

#[test]
fn inherited_output_and_arguments_pass_through() {
    let out = shmemrun(&["-n", "1", "sh", "-c", "echo \"$0 $1\"", "x", "-y"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "x -y\n");
}

#[test]
fn timeout_exits_124() {
    let out = Command::new(SHMEMRUN)
        .args(["-n", "2", "--timeout", "0.3", "sh", "-c", "sleep 30"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    assert!(String::from_utf8_lossy(&out.stderr).contains("timeout of 300ms"));
}

#[test]
fn sigint_ends_the_job_and_its_pes() {
    let (mut child, lines) = start_tagged(2, &["sh", "-c", "echo $$; sleep 30"]);
    let pids: Vec<u32> = lines.iter().map(|w| w[0].parse().unwrap()).collect();
    let start = Instant::now();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = wait_bounded(&mut child);
    assert!(start.elapsed() < LIMIT);
    assert_eq!(status.code(), Some(130));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains("interrupted by signal 2 (SIGINT)"),
        "{stderr}"
    );
    for pid in pids {
        assert!(!alive(pid), "PE {pid} survived Ctrl-C");
        assert_eq!(
            group_members(pid),
            Vec::<u32>::new(),
            "PE {pid}'s sleep survived"
        );
    }
}

#[test]
fn pes_die_when_the_launcher_is_killed() {
    // PR_SET_PDEATHSIG covers the PE processes themselves (not their own children: a
    // SIGKILLed launcher cannot run any cleanup), hence `exec`.
    let (mut child, lines) = start_tagged(2, &["sh", "-c", "echo $$; exec sleep 30"]);
    let pids: Vec<u32> = lines.iter().map(|w| w[0].parse().unwrap()).collect();
    child.kill().unwrap(); // SIGKILL: no cleanup code of the launcher runs
    child.wait().unwrap();
    let until = Instant::now() + LIMIT;
    while pids.iter().any(|&p| alive(p)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<u32> = pids.into_iter().filter(|&p| alive(p)).collect();
    for &pid in &survivors {
        // SAFETY: plain syscall; do not leave the survivor behind.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    assert!(
        survivors.is_empty(),
        "PEs {survivors:?} outlived their SIGKILLed launcher"
    );
}

/// Ctrl-C while real shmemplus PEs sit in barrier loops with their heaps mapped: the
/// job ends with 130, no PE survives, and nothing of the job is left in /dev/shm or as
/// a listening socket.
#[test]
fn sigint_during_a_shmemplus_job_leaks_nothing() {
    // The PEs print `ready <pid> <job id>` once their heaps are mapped and a first
    // barrier is done; then they loop in barriers.
    let (mut child, lines) = start_tagged(3, &[FAULT_PE, "barrier-loop"]);
    let pids: Vec<u32> = lines.iter().map(|w| w[1].parse().unwrap()).collect();
    let job = lines[0][2].clone();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = wait_bounded(&mut child);
    assert_eq!(status.code(), Some(130));
    for pid in pids {
        assert!(!alive(pid), "PE {pid} survived Ctrl-C");
    }
    assert_eq!(job_leftovers(&job), Vec::<String>::new());
}

#[test]
fn profile_sets_the_default_topology_and_reaches_the_pes() {
    let out = shmemrun(&[
        "--profile",
        "mu",
        "sh",
        "-c",
        "echo $SHMEMPLUS_N_PES $SHMEMPLUS_PES_PER_NODE $SHMEMPLUS_PROFILE",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    // The mu profile has 4 nodes of 1 PE each: 4 PEs, each printing the same line.
    assert_eq!(text.lines().filter(|l| *l == "4 1 mu").count(), 4, "{text}");
    // -n overrides the profile's size.
    let out = shmemrun(&[
        "-n",
        "2",
        "--profile",
        "novo-g",
        "sh",
        "-c",
        "echo $SHMEMPLUS_N_PES",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    let out = shmemrun(&["--profile", "no-such-cluster", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-cluster"),
        "{out:?}"
    );
    let out = shmemrun(&["true"]);
    assert_eq!(out.status.code(), Some(2), "no -n and no profile");
}
