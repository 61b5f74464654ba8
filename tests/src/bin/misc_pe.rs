//! `shmemplus-misc-pe`: PE programs for the soundness scenarios of `tests/misc.rs`
//! (overlapping transfers, the job secret, a progress thread that panics or blocks).
//! A PE prints what it checked and exits 0 only if every check held.

use shmemplus::{Place, Shmem, SymVec};
use shmemplus_tests::pe::{e2s, exit_code, place_arg};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let result = match mode {
        "overlap" => place_arg(args.get(1).map(String::as_str)).and_then(overlap),
        "secret" => secret(),
        "progress-panic" => progress_panic(),
        "blocked-handler" => blocked_handler(),
        other => Err(format!("unknown mode '{other}'")),
    };
    exit_code("misc-pe", result)
}

/// A byte pattern that differs at every shift of interest (period 251, a prime).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// `put_from` and `get_into` from this PE's copy of an object to an overlapping
/// range of the same copy must give what `memmove` (`copy_within`) gives: ranges above
/// and below, overlapping by little and by much, spanning several staging pieces
/// (1 MiB) and within one.
fn overlap(place: Place) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    const MIB: usize = 1 << 20;
    let len = 4 * MIB;
    let obj: SymVec<u8> = shmem.alloc(len, place).map_err(e2s)?;
    // (count, source index, destination index)
    let cases = [
        (3 * MIB + 100, 0, 4096 + 8),
        (3 * MIB + 100, 4096 + 8, 0),
        (2 * MIB + 1, 0, 1),
        (2 * MIB + 1, 1, 0),
        (3 * MIB, 0, MIB / 2),
        (3 * MIB, MIB / 2, 0),
        (1000, 10, 20),
        (1000, 20, 10),
        (MIB, 5, 5),
    ];
    let mut checked = 0;
    for &(count, from, to) in &cases {
        for op in ["put_from", "get_into"] {
            let mut want = pattern(len);
            shmem.local_write(&obj, 0, &want).map_err(e2s)?;
            want.copy_within(from..from + count, to);
            match op {
                "put_from" => shmem.put_from(&obj, to, &obj, from, count, me),
                _ => shmem.get_into(&obj, to, &obj, from, count, me),
            }
            .map_err(e2s)?;
            shmem.quiet().map_err(e2s)?;
            let got = shmem.local_to_vec(&obj).map_err(e2s)?;
            if let Some(i) = (0..len).find(|&i| got[i] != want[i]) {
                return Err(format!(
                    "{op} of {count} bytes from {from} to {to} on {place}: byte {i} is {} where memmove gives {}",
                    got[i], want[i]
                ));
            }
            checked += 1;
        }
    }
    shmem.free(obj).map_err(e2s)?;
    shmem.finalize().map_err(e2s)?;
    println!("PE {me}: {checked} overlapping transfers on {place} match memmove");
    Ok(())
}

/// What `sh` sees of `SHMEMPLUS_SECRET` in a child process.
fn child_sees_secret() -> Result<String, String> {
    let out = std::process::Command::new("sh")
        .args(["-c", "echo \"${SHMEMPLUS_SECRET:-none}\""])
        .output()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The launcher hands the secret to the PE; after `init` neither the PE's environment
/// nor a program it starts has it.
fn secret() -> Result<(), String> {
    let before = child_sees_secret()?;
    if before == "none" {
        return Err("the launcher did not export SHMEMPLUS_SECRET".into());
    }
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let after = child_sees_secret()?;
    if after != "none" {
        return Err(format!(
            "a child started after init sees SHMEMPLUS_SECRET={after}"
        ));
    }
    if std::env::var_os("SHMEMPLUS_SECRET").is_some() {
        return Err("SHMEMPLUS_SECRET is still in the PE's environment".into());
    }
    // The job still works without it: bootstrap is done.
    shmem.barrier_all().map_err(e2s)?;
    shmem.finalize().map_err(e2s)?;
    println!("PE {me}: secret gone after init (child saw {after})");
    Ok(())
}

/// Run with `SHMEMPLUS_TEST_PANIC_PROGRESS=1`: PE 1's progress thread panics right
/// after init. PE 0 keeps asking PE 1's progress thread for echoes, which never come
/// once it is dead; the job must end anyway, naming PE 1.
fn progress_panic() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    if shmem.my_pe() == 0 {
        let until = Instant::now() + Duration::from_secs(40);
        while Instant::now() < until {
            shmem.am_echo(1, b"ping").map_err(e2s)?;
        }
        return Err("PE 1's progress thread kept serving for 40 s".into());
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.finalize().map_err(e2s)
}

/// A user handler that never returns holds the progress thread; `finalize` must still
/// return (after a bounded wait), so the PE can exit.
fn blocked_handler() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let entered = Arc::new(AtomicBool::new(false));
    let flag = entered.clone();
    shmem
        .am_register(0, move |_, _| {
            flag.store(true, Ordering::SeqCst);
            loop {
                std::thread::park();
            }
        })
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    let requester: Shmem = shmem.clone();
    // Never answered: the thread waits until the process exits.
    std::thread::spawn(move || requester.am_request(me, 0, b"block"));
    let until = Instant::now() + Duration::from_secs(20);
    while !entered.load(Ordering::SeqCst) {
        if Instant::now() > until {
            return Err("the handler never ran".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    shmem.finalize().map_err(e2s)?;
    println!("PE {me}: finalize returned while the progress thread was blocked");
    Ok(())
}
