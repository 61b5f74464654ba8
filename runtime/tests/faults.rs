//! The faults a newcomer meets, through the `shmemrun` binary: for each, the exact line
//! shmemrun prints, that it prints it once (no copy per PE, no log event repeating it,
//! no colour codes into a pipe), and the documented exit code (the README's "Exit
//! codes" table). Every wait is bounded (see `common`).

use std::process::Output;
use std::time::{Duration, Instant};

mod common;

use common::{alive, job_leftovers, shmemrun, shmemrun_with, start_tagged, wait_bounded, FAULT_PE};

/// shmemrun's stderr with every `pid N` written as `pid _`.
fn stderr_without_pids(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let mut result = String::new();
    let mut rest = text.as_ref();
    while let Some(i) = rest.find("pid ") {
        result.push_str(&rest[..i + 4]);
        rest = &rest[i + 4..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            result.push('_');
        }
        rest = &rest[digits..];
    }
    result.push_str(rest);
    result
}

/// Asserts that shmemrun printed exactly `line` (plus a newline) on stderr, nothing on
/// stdout, and exited with `code`.
fn assert_only_line(out: &Output, code: i32, line: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr, format!("{line}\n"), "exit status {:?}", out.status);
    assert!(
        !stderr.contains('\x1b'),
        "colour codes into a pipe: {stderr:?}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "a PE ran");
    assert_eq!(out.status.code(), Some(code), "{stderr}");
}

/// The lines of `out`'s stderr that shmemrun itself printed.
fn shmemrun_lines(out: &Output) -> Vec<String> {
    stderr_without_pids(out)
        .lines()
        .filter(|l| l.starts_with("shmemrun:"))
        .map(String::from)
        .collect()
}

#[test]
fn a_bad_size_is_reported_once_before_any_pe_starts() {
    let out = shmemrun_with(
        &[("SHMEM_SYMMETRIC_SIZE", "abc")],
        &["-n", "4", FAULT_PE, "hello"],
    );
    assert_only_line(
        &out,
        78,
        r#"shmemrun: bad value for SHMEM_SYMMETRIC_SIZE: "abc" is not a size (write e.g. 4096, "512K", "2G"); no PE was started"#,
    );
    // Any variable the library reads is checked the same way, also for programs that
    // are not shmemplus PEs (nothing starts, so nothing prints `started`).
    let out = shmemrun_with(
        &[("SHMEMPLUS_CONDUIT", "tcp")],
        &["-n", "2", "sh", "-c", "echo started"],
    );
    assert_only_line(
        &out,
        78,
        "shmemrun: bad value for SHMEMPLUS_CONDUIT: 'tcp' is not a conduit; use shm or am; no PE was started",
    );
}

#[test]
fn a_missing_program_is_one_plain_line() {
    let out = shmemrun(&["-n", "2", "/nonexistent/no-such-program"]);
    assert_only_line(
        &out,
        127,
        "shmemrun: program not found: /nonexistent/no-such-program (check the path)",
    );
    let out = shmemrun(&["-n", "2", "no-such-program-in-path"]);
    assert_only_line(
        &out,
        127,
        "shmemrun: program not found: no-such-program-in-path (give its path, or a name found in PATH)",
    );
    let out = shmemrun(&["-n", "2", "/dev/null"]);
    assert_only_line(
        &out,
        126,
        "shmemrun: program not executable: /dev/null (permission denied; check that it is a program with execute permission)",
    );
}

#[test]
fn a_bad_profile_is_a_usage_error_from_the_flag_and_a_configuration_error_from_the_environment() {
    let why = "nosuch: file: not a builtin profile (native, mu, novo-g) and cannot read it as a file: No such file or directory (os error 2)";
    let out = shmemrun(&["-n", "2", "--profile", "nosuch", "true"]);
    assert_only_line(&out, 2, &format!("shmemrun: bad --profile: {why}"));
    let out = shmemrun_with(&[("SHMEMPLUS_PROFILE", "nosuch")], &["-n", "2", "true"]);
    assert_only_line(
        &out,
        78,
        &format!("shmemrun: bad SHMEMPLUS_PROFILE in the environment: {why}"),
    );
}

#[test]
fn a_bad_clock_is_one_line_and_starts_nothing() {
    // The PE program is a real shmemplus PE: had one started, it would have printed
    // `ready` and made its segment.
    let out = shmemrun(&["-n", "2", "--clock", "sundial", FAULT_PE, "hello"]);
    assert_only_line(
        &out,
        2,
        "shmemrun: bad --clock: 'sundial' is not a clock; use wall or virtual",
    );
    let out = shmemrun_with(
        &[("SHMEMPLUS_CLOCK", "sundial")],
        &["-n", "2", FAULT_PE, "hello"],
    );
    assert_only_line(
        &out,
        78,
        "shmemrun: bad value for SHMEMPLUS_CLOCK: 'sundial' is not a clock; use wall or virtual; no PE was started",
    );
    // A good name reaches every PE (over the environment's) and the job leaves nothing.
    let out = shmemrun_with(
        &[("SHMEMPLUS_CLOCK", "wall")],
        &[
            "-n",
            "2",
            "--clock",
            "virtual",
            "sh",
            "-c",
            "echo $SHMEMPLUS_CLOCK",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "virtual\nvirtual\n");
    assert_eq!(out.status.code(), Some(0));
    let out = shmemrun(&["-n", "2", "--clock", "virtual", FAULT_PE, "hello"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let jobs: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ready ")?.split_whitespace().nth(1))
        .collect();
    assert_eq!(jobs.len(), 2, "{stdout}");
    assert_eq!(job_leftovers(jobs[0]), Vec::<String>::new());
}

#[test]
fn impossible_job_shapes_are_usage_errors() {
    let out = shmemrun(&["-n", "0", "true"]);
    assert_only_line(
        &out,
        2,
        "shmemrun: bad topology: the job needs at least one PE (-n 1 or more)",
    );
    let out = shmemrun(&["-n", "4", "--pes-per-node", "2", "--nodes", "3", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("shmemrun: bad topology: "), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(out.status.code(), Some(2));
    let out = shmemrun(&["true"]);
    assert_only_line(
        &out,
        2,
        "shmemrun: give the number of PEs with -n N (or a --profile)",
    );
    let out = shmemrun(&["-n", "1", "--fpgas", "17", "true"]);
    assert_only_line(&out, 2, "shmemrun: --fpgas 17: at most 16 boards per node");
}

#[test]
fn every_pes_line_reaches_the_shared_stderr_whole() {
    // Eight PEs write a formatted line each at once, right after one barrier, on the
    // stderr they all inherit from shmemrun. Written in pieces (as `eprintln!` writes
    // a formatted line), such lines interleaved mid-line in a third of the jobs of
    // `cbir` that refused an argument on 8 PEs; written whole
    // (`shmemplus::stderr_line`), never.
    for _ in 0..8 {
        let out = shmemrun(&["-n", "8", FAULT_PE, "complain"]);
        let stderr = stderr_without_pids(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let mut pes: Vec<u32> = stderr
            .lines()
            .map(|line| {
                let pe = line
                    .strip_prefix("fault-pe: PE ")
                    .and_then(|rest| {
                        rest.strip_suffix(" of 8: complaining on purpose, as every PE does at once")
                    })
                    .and_then(|pe| pe.parse().ok());
                pe.unwrap_or_else(|| {
                    panic!("a line not whole: {line:?}; the whole stderr:\n{stderr}")
                })
            })
            .collect();
        pes.sort_unstable();
        assert_eq!(pes, (0..8).collect::<Vec<u32>>(), "{stderr}");
    }
}

#[test]
fn a_panicking_pe_ends_the_job_with_its_code_and_one_line() {
    let out = shmemrun_with(
        &[("RUST_BACKTRACE", "0")],
        &["-n", "3", FAULT_PE, "panic", "1"],
    );
    assert_eq!(out.status.code(), Some(101), "{out:?}");
    assert_eq!(
        shmemrun_lines(&out),
        ["shmemrun: PE 1 (pid _) exited with code 101; ending the job (code 101 is a Rust panic: the PE's panic message is above)"]
    );
    // The PE's own message comes once, before shmemrun's line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let own = "fault-pe: PE 1 panics on purpose";
    assert_eq!(stderr.matches(own).count(), 1, "{stderr}");
    assert!(stderr.find(own) < stderr.find("shmemrun:"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

/// SIGKILL of one PE of a running shmemplus job (heaps mapped, the others in barrier
/// loops): the job ends promptly with one line naming the PE and the signal, exit
/// status 128 + 9, and nothing is left: no process, no `/dev/shm` entry, no socket.
#[test]
fn a_killed_pe_ends_the_job_promptly_naming_it_and_leaks_nothing() {
    let (mut child, lines) = start_tagged(3, &[FAULT_PE, "barrier-loop"]);
    // Each PE printed `ready <pid> <job id>` once its heap was mapped; kill the first
    // one to print (the line must then name it by its pid).
    let pids: Vec<u32> = lines.iter().map(|w| w[1].parse().unwrap()).collect();
    let job = lines[0][2].clone();
    let victim = pids[0];
    let start = Instant::now();
    // SAFETY: kill(2) takes no pointers; `victim` is a PE of our own job, still
    // running its loop, so the signal reaches no other process.
    let killed = unsafe { libc::kill(victim as libc::pid_t, libc::SIGKILL) };
    assert_eq!(killed, 0);
    let status = wait_bounded(&mut child);
    let took = start.elapsed();
    let out = child.wait_with_output().unwrap();
    let out = Output { status, ..out };
    assert_eq!(status.code(), Some(137), "{out:?}");
    // Promptly: the others get SIGTERM at once (0.5 s grace before SIGKILL).
    assert!(
        took < Duration::from_secs(5),
        "the job took {took:?} to end"
    );
    let named = shmemrun_lines(&out);
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(
        named[0].starts_with("shmemrun: PE ")
            && named[0].contains(" (pid _) was killed by signal 9 (SIGKILL); ending the job (SIGKILL came from outside the job"),
        "{named:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("(pid {victim})")),
        "the line names another PE: {out:?}"
    );
    for pid in pids {
        assert!(!alive(pid), "PE process {pid} survived the job");
    }
    assert_eq!(job_leftovers(&job), Vec::<String>::new());
}

/// `global_exit(code)` on PE 1 while the others wait in a barrier it never enters: the
/// job ends promptly with exactly that code (0 too) and no line from shmemrun, the
/// caller's unflushed output arrives, and nothing is left behind.
#[test]
fn global_exit_ends_every_pe_with_its_code_and_leaks_nothing() {
    for code in ["7", "0"] {
        let start = Instant::now();
        let out = shmemrun(&["-n", "3", FAULT_PE, "global-exit", "1", code]);
        // Start-up included; a job left to hang would end at the 25 s timeout.
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(code.parse().unwrap()), "{out:?}");
        assert!(
            took < Duration::from_secs(10),
            "the job took {took:?} to end"
        );
        assert_eq!(shmemrun_lines(&out), Vec::<String>::new(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&format!("global exit {code}")), "{stdout}");
        // Every PE printed `ready <pid> <job id>` after its first barrier.
        let ready: Vec<Vec<&str>> = stdout
            .lines()
            .filter_map(|l| l.split("ready ").nth(1))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(ready.len(), 3, "{stdout}");
        for words in &ready {
            let pid: u32 = words[0].parse().unwrap();
            assert!(!alive(pid), "PE process {pid} survived the job");
        }
        assert_eq!(job_leftovers(ready[0][1]), Vec::<String>::new());
    }
}
