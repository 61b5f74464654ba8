//! Helpers shared by the integration tests: running `shmemrun` with every wait bounded,
//! and process liveness and job leftovers read from `/proc` and `/dev/shm`,
//! independently of the runtime's own bookkeeping.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");
/// A real shmemplus PE that fails on demand (`src/bin/fault_pe.rs`).
pub const FAULT_PE: &str = env!("CARGO_BIN_EXE_shmemplus-fault-pe");
/// Bound on every wait for shmemrun: loose enough for a loaded 2-core machine, below
/// the jobs' `--timeout 25` and the `sleep 30` a broken teardown would wait for.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Runs shmemrun to completion (bounded by its own --timeout 25 and by `LIMIT` here).
/// The output must fit in the pipes (64 KiB), as it is read after the exit.
pub fn shmemrun(args: &[&str]) -> Output {
    shmemrun_with(&[], args)
}

/// [`shmemrun`] with extra environment variables.
pub fn shmemrun_with(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut child = spawn_shmemrun_with(env, &[&["--timeout", "25"], args].concat());
    wait_bounded(&mut child);
    child.wait_with_output().unwrap()
}

/// Starts shmemrun with `args`, stdin closed and both outputs piped.
pub fn spawn_shmemrun(args: &[&str]) -> Child {
    spawn_shmemrun_with(&[], args)
}

/// [`spawn_shmemrun`] with extra environment variables.
pub fn spawn_shmemrun_with(env: &[(&str, &str)], args: &[&str]) -> Child {
    Command::new(SHMEMRUN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` at most `LIMIT`; kills it and fails the test otherwise.
pub fn wait_bounded(child: &mut Child) -> ExitStatus {
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
pub fn start_tagged(n: usize, args: &[&str]) -> (Child, Vec<Vec<String>>) {
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

/// Whether a process exists and is not a zombie (read independently of the launcher).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(i) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[i + 1..].split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X" {
            out.push(pid);
        }
    }
    out
}

/// What job `job` left behind: its `/dev/shm` entries and its bootstrap socket, if
/// still listed in `/proc/net/unix`.
pub fn job_leftovers(job: &str) -> Vec<String> {
    let prefix = format!("shmemplus-{job}-");
    let mut left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix))
        .collect();
    let socket = format!("@shmemplus-{job}");
    if std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .contains(&socket)
    {
        left.push(socket);
    }
    left
}
