//! `shmemplus-bootstrap-probe`: a test tool, not for users. A minimal PE that speaks the
//! bootstrap protocol of `shmemplus::launch` with blocking std I/O, so the launcher's side
//! can be tested without the library's own bootstrap. Run it under the launcher.
//!
//! Modes (one argument, default `gather`); everything it learns goes to stdout:
//!
//! - `gather`: Auth, then round 0 with its rank and round 1 with its rank squared (each a
//!   little-endian `u32`); prints `welcome n_pes=N`, `round 0: [..]`, `round 1: [..]`.
//! - `wrong-secret`: Auth with a wrong secret; prints `rejected: <reason>`.
//! - `twice`: Auth, then a second connection as the same PE; prints `second: rejected:
//!   <reason>`.
//! - `bad-round`: Auth, then round 5 first; prints `closed` if the launcher hangs up.
//!
//! Exits 0 when the launcher behaved as the mode expects, 1 otherwise. Every read has a
//! 10 s timeout, so it never hangs.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::ExitCode;
use std::time::Duration;

use shmemplus::launch::{self, ToLauncher, ToPe};

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set (run me under the launcher)"))
}

fn connect() -> Result<UnixStream, String> {
    let address = env(launch::ENV_BOOTSTRAP)?;
    let name = address
        .strip_prefix('@')
        .ok_or_else(|| format!("{address} is not an abstract socket address"))?;
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string())?;
    let stream = UnixStream::connect_addr(&addr).map_err(|e| format!("connect {address}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

fn auth(stream: &mut UnixStream, secret: String, pe: u32) -> Result<ToPe, String> {
    let msg = ToLauncher::Auth {
        secret,
        pe,
        pid: std::process::id(),
    };
    launch::write_frame(stream, &msg).map_err(|e| format!("send Auth: {e}"))?;
    launch::read_frame(stream).map_err(|e| format!("read Auth reply: {e}"))
}

fn decode_u32s(data: &[Vec<u8>]) -> Vec<u32> {
    data.iter()
        .map(|d| {
            d.as_slice()
                .try_into()
                .map(u32::from_le_bytes)
                .unwrap_or(u32::MAX)
        })
        .collect()
}

fn run(mode: &str) -> Result<(), String> {
    let pe: u32 = env(launch::ENV_PE)?
        .parse()
        .map_err(|e| format!("bad PE: {e}"))?;
    let secret = env(launch::ENV_SECRET)?;
    let mut stream = connect()?;
    if mode == "wrong-secret" {
        return match auth(&mut stream, format!("{secret}-not"), pe)? {
            ToPe::Rejected { reason } => {
                println!("rejected: {reason}");
                Ok(())
            }
            other => Err(format!("wrong secret was answered with {other:?}")),
        };
    }
    match auth(&mut stream, secret.clone(), pe)? {
        ToPe::Welcome { n_pes } => println!("welcome n_pes={n_pes}"),
        other => return Err(format!("Auth answered with {other:?}")),
    }
    let finalize = |stream: &mut std::os::unix::net::UnixStream| {
        launch::write_frame(stream, &ToLauncher::Finalized).map_err(|e| format!("send: {e}"))
    };
    match mode {
        "gather" => {
            for (round, value) in [(0u32, pe), (1, pe * pe)] {
                let msg = ToLauncher::Allgather {
                    round,
                    data: value.to_le_bytes().to_vec(),
                };
                launch::write_frame(&mut stream, &msg).map_err(|e| format!("send: {e}"))?;
                match launch::read_frame(&mut stream).map_err(|e| format!("read: {e}"))? {
                    ToPe::Allgathered { round: r, data } if r == round => {
                        println!("round {round}: {:?}", decode_u32s(&data));
                    }
                    other => return Err(format!("round {round} answered with {other:?}")),
                }
            }
            finalize(&mut stream)
        }
        "leave-early" => {
            // PE 0 stays (bounded by the job's timeout); the others leave at once
            // without `Finalized`, which must end the job.
            if pe == 0 {
                std::thread::sleep(std::time::Duration::from_secs(20));
                finalize(&mut stream)?;
            }
            Ok(())
        }
        "twice" => {
            let mut second = connect()?;
            match auth(&mut second, secret, pe)? {
                ToPe::Rejected { reason } => {
                    println!("second: rejected: {reason}");
                    finalize(&mut stream)
                }
                other => Err(format!("second connection answered with {other:?}")),
            }
        }
        "bad-round" => {
            let msg = ToLauncher::Allgather {
                round: 5,
                data: vec![1],
            };
            launch::write_frame(&mut stream, &msg).map_err(|e| format!("send: {e}"))?;
            match launch::read_frame::<_, ToPe>(&mut stream) {
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    println!("closed");
                    Ok(())
                }
                other => Err(format!("bad round answered with {other:?}")),
            }
        }
        other => Err(format!("unknown mode {other:?}")),
    }
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "gather".into());
    match run(&mode) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            shmemplus::stderr_line(format_args!("shmemplus-bootstrap-probe: {e}"));
            ExitCode::FAILURE
        }
    }
}
