//! Tests of the `shmemrun` binary: exit statuses, messages, tagged output and Ctrl-C.
//! Every wait is bounded: jobs carry `--timeout`, and the test kills a `shmemrun` that
//! does not end in time.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use common::{alive, group_members};

const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");
/// Bound on every wait for shmemrun: loose enough for a loaded 2-core machine, below
/// the jobs' `--timeout 25` and the `sleep 30` a broken teardown would wait for.
const LIMIT: Duration = Duration::from_secs(20);

/// Runs shmemrun to completion (bounded by its own --timeout 25 and by `LIMIT` here).
/// The output must fit in the pipes (64 KiB), as it is read after the exit.
fn shmemrun(args: &[&str]) -> Output {
    let mut child = spawn_shmemrun(&[&["--timeout", "25"], args].concat());
    wait_bounded(&mut child);
    child.wait_with_output().unwrap()
}

/// Starts shmemrun with `args`, stdin closed and both outputs piped.
fn spawn_shmemrun(args: &[&str]) -> Child {
    Command::new(SHMEMRUN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` at most `LIMIT`; kills it and fails the test otherwise.
fn wait_bounded(child: &mut Child) -> ExitStatus {
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("shmemrun did not end within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `shmemrun --tag-output -n N ARGS...` whose PEs each print one line first, and
/// returns the child and those first lines' words after the `[pe N]` tag (one line per
/// PE, in arrival order). Bounded by `LIMIT`.
fn start_tagged(n: usize, args: &[&str]) -> (Child, Vec<Vec<String>>) {
    let n_text = n.to_string();
    let mut child =
        spawn_shmemrun(&[&["-n", &n_text, "--timeout", "25", "--tag-output"], args].concat());
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    while lines.len() < n {
        let Ok(line) = rx.recv_timeout(LIMIT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("PEs did not start");
        };
        lines.push(line.split_whitespace().skip(2).map(String::from).collect());
    }
    (child, lines)
}

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
fn missing_program_and_bad_topology_are_clear_errors() {
    let out = shmemrun(&["-n", "2", "/nonexistent/no-such-program"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "stderr: {stderr}");
    assert!(stderr.contains("/nonexistent/no-such-program"), "{stderr}");

    let out = shmemrun(&["-n", "4", "--pes-per-node", "2", "--nodes", "3", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("bad topology"), "{stderr}");
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
    let tool = env!("CARGO_BIN_EXE_shmemplus");
    let script = r#"echo "$$ $SHMEMPLUS_JOB_ID"; exec "$0" bench-pe --ops barrier --reps 1000000"#;
    let (mut child, lines) = start_tagged(3, &["sh", "-c", script, tool]);
    let pids: Vec<u32> = lines.iter().map(|w| w[0].parse().unwrap()).collect();
    let job = lines[0][1].clone();
    // Let the PEs map each other's heaps and enter their barrier loops.
    std::thread::sleep(Duration::from_millis(500));
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = wait_bounded(&mut child);
    assert_eq!(status.code(), Some(130));
    for pid in pids {
        assert!(!alive(pid), "PE {pid} survived Ctrl-C");
    }
    let prefix = format!("shmemplus-{job}-");
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
    let sockets = std::fs::read_to_string("/proc/net/unix").unwrap();
    assert!(
        !sockets.contains(&format!("@shmemplus-{job}")),
        "socket left"
    );
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
