//! The bootstrap server: the launcher's side of the protocol in [`shmemplus::launch`].
//! It listens on a Linux abstract socket `@shmemplus-<job id>`, authenticates each
//! connection (same user, the job secret, a PE rank not yet taken), runs the allgather
//! rounds and notes which PEs joined and finalized.
//!
//! This module owns connections, frames and rounds. It must not interpret the bytes
//! PEs gather (that is `shmemplus::bootstrap`), and it must not end the job: it reports
//! a PE that left without finalizing in [`Bootstrap::left_early`] and `supervise`
//! decides.

use std::collections::HashMap;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::sync::Arc;
use std::time::Duration;

use shmemplus::launch::{self, ToLauncher, ToPe};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An unauthenticated connection must send its `Auth` frame within this time.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest first (`Auth`) frame accepted: a stranger cannot make the launcher allocate
/// [`launch::MAX_FRAME_BYTES`] before proving it knows the secret.
const AUTH_MAX_FRAME: u32 = 4096;

/// The abstract socket name of a job (without the leading `@`).
pub fn socket_name(job_id: &str) -> String {
    format!("shmemplus-{job_id}")
}

/// Binds the abstract unix socket `@name` (no file: it vanishes with the listener).
pub(crate) fn bind_abstract(name: &str) -> io::Result<UnixListener> {
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr)?;
    listener.set_nonblocking(true)?;
    UnixListener::from_std(listener)
}

/// What a connection task reports to the supervision loop.
#[derive(Debug)]
pub(crate) enum ConnEvent {
    /// The first frame was `Auth`; `secret_ok` says whether it carried the job secret.
    Auth {
        conn: u64,
        pe: u32,
        pid: u32,
        secret_ok: bool,
    },
    Allgather {
        conn: u64,
        round: u32,
        data: Vec<u8>,
    },
    /// The PE sent `Finalized`.
    Finalized { conn: u64 },
    /// The PE sent `GlobalExit`.
    GlobalExit { conn: u64, code: i32 },
    /// The connection ended (EOF) or broke (`error`).
    Closed { conn: u64, error: Option<String> },
}

struct Conn {
    out: mpsc::UnboundedSender<Vec<u8>>,
    reader: JoinHandle<()>,
    pe: Option<u32>,
}

/// The launcher's side of the bootstrap protocol: connections and allgather rounds.
pub(crate) struct Bootstrap {
    n_pes: u32,
    secret: Arc<str>,
    uid: u32,
    next_conn: u64,
    conns: HashMap<u64, Conn>,
    /// The authenticated connection of each PE.
    by_pe: Vec<Option<u64>>,
    rounds: Rounds,
    events_tx: mpsc::UnboundedSender<ConnEvent>,
    pub(crate) events: mpsc::UnboundedReceiver<ConnEvent>,
    /// Per PE: it authenticated at some point (it is a shmemplus PE of this job).
    joined: Vec<bool>,
    /// Per PE: it sent `Finalized`.
    finalized: Vec<bool>,
    /// Per PE: it exited with status 0 while its connection was still open, so the
    /// verdict on finalize waits for the connection's last frames.
    exited_ok: Vec<bool>,
    /// PEs found to have exited 0 without finalizing, not yet acted on.
    pub(crate) left_early: Vec<u32>,
    /// The first PE that asked to end the job with `global_exit`, and its code, not
    /// yet acted on.
    pub(crate) global_exit: Option<(u32, i32)>,
}

impl Bootstrap {
    pub(crate) fn new(n_pes: u32, secret: String) -> Bootstrap {
        let (events_tx, events) = mpsc::unbounded_channel();
        Bootstrap {
            n_pes,
            secret: secret.into(),
            uid: rustix::process::geteuid().as_raw(),
            next_conn: 0,
            conns: HashMap::new(),
            by_pe: vec![None; n_pes as usize],
            rounds: Rounds::new(n_pes),
            events_tx,
            events,
            joined: vec![false; n_pes as usize],
            finalized: vec![false; n_pes as usize],
            exited_ok: vec![false; n_pes as usize],
            left_early: Vec::new(),
            global_exit: None,
        }
    }

    /// Records that `pe` exited with status 0. If it joined and has not finalized, it
    /// left early; when its connection is still open, its last frames (perhaps a
    /// `Finalized`) are still in flight, and the verdict waits for the connection to
    /// close (see `ConnEvent::Closed`).
    pub(crate) fn pe_exited_ok(&mut self, pe: u32) {
        let i = pe as usize;
        if !self.joined[i] || self.finalized[i] {
            return;
        }
        if self.by_pe[i].is_some() {
            self.exited_ok[i] = true;
        } else {
            self.left_early.push(pe);
        }
    }

    pub(crate) fn accept(&mut self, stream: UnixStream) {
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == self.uid => {}
            Ok(cred) => {
                tracing::warn!(
                    uid = cred.uid(),
                    "bootstrap connection from another user refused"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot identify bootstrap peer; refused");
                return;
            }
        }
        let conn = self.next_conn;
        self.next_conn += 1;
        tracing::debug!(conn, "bootstrap connection accepted");
        let (rd, wr) = stream.into_split();
        let (out, out_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(wr, out_rx));
        let reader = tokio::spawn(read_conn(
            conn,
            rd,
            self.secret.clone(),
            self.events_tx.clone(),
        ));
        self.conns.insert(
            conn,
            Conn {
                out,
                reader,
                pe: None,
            },
        );
    }

    fn send(&self, conn: u64, msg: &ToPe) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        match launch::encode(msg) {
            Ok(frame) => {
                let _ = c.out.send(frame);
            }
            Err(e) => tracing::error!(conn, error = %e, "cannot encode bootstrap reply"),
        }
    }

    /// Drops a connection: queued frames are still written, then the socket closes.
    fn close(&mut self, conn: u64) {
        if let Some(c) = self.conns.remove(&conn) {
            c.reader.abort();
            if let Some(pe) = c.pe {
                if self.by_pe[pe as usize] == Some(conn) {
                    self.by_pe[pe as usize] = None;
                }
            }
        }
    }

    pub(crate) fn close_all(&mut self) {
        let all: Vec<u64> = self.conns.keys().copied().collect();
        for conn in all {
            self.close(conn);
        }
    }

    fn reject(&mut self, conn: u64, reason: String) {
        tracing::warn!(conn, %reason, "bootstrap connection rejected");
        self.send(conn, &ToPe::Rejected { reason });
        self.close(conn);
    }

    pub(crate) fn handle(&mut self, event: ConnEvent) {
        match event {
            ConnEvent::Auth {
                conn,
                pe,
                pid,
                secret_ok,
            } => {
                if !self.conns.contains_key(&conn) {
                    return;
                }
                if !secret_ok {
                    self.reject(conn, "wrong job secret".into());
                } else if pe >= self.n_pes {
                    self.reject(
                        conn,
                        format!("PE {pe} is out of range for a job of {} PEs", self.n_pes),
                    );
                } else if self.by_pe[pe as usize].is_some() {
                    self.reject(conn, format!("PE {pe} is already connected"));
                } else {
                    tracing::debug!(conn, pe, pid, "PE authenticated");
                    self.by_pe[pe as usize] = Some(conn);
                    self.joined[pe as usize] = true;
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.pe = Some(pe);
                    }
                    self.send(conn, &ToPe::Welcome { n_pes: self.n_pes });
                }
            }
            ConnEvent::Allgather { conn, round, data } => {
                // Events queued by a connection that was closed meanwhile are ignored.
                let Some(pe) = self.conns.get(&conn).and_then(|c| c.pe) else {
                    return;
                };
                tracing::debug!(pe, round, bytes = data.len(), "allgather contribution");
                match self.rounds.contribute(pe, round, data) {
                    Ok(None) => {}
                    Ok(Some((round, data))) => {
                        tracing::debug!(round, "allgather round complete");
                        match launch::encode(&ToPe::Allgathered { round, data }) {
                            Ok(frame) => {
                                for c in self.by_pe.iter().flatten() {
                                    if let Some(c) = self.conns.get(c) {
                                        let _ = c.out.send(frame.clone());
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::error!(round, error = %e, "cannot send allgather result; closing every bootstrap connection");
                                self.close_all();
                            }
                        }
                    }
                    Err(why) => {
                        tracing::warn!(pe, conn, %why, "bootstrap protocol error; closing the connection");
                        self.close(conn);
                    }
                }
            }
            ConnEvent::Finalized { conn } => {
                if let Some(pe) = self.conns.get(&conn).and_then(|c| c.pe) {
                    tracing::debug!(pe, "PE finalized");
                    self.finalized[pe as usize] = true;
                }
            }
            ConnEvent::GlobalExit { conn, code } => {
                if let Some(pe) = self.conns.get(&conn).and_then(|c| c.pe) {
                    tracing::debug!(pe, code, "PE called global_exit");
                    // It makes no more calls: its exit, with any status, strands no one.
                    self.finalized[pe as usize] = true;
                    self.global_exit.get_or_insert((pe, code));
                }
            }
            ConnEvent::Closed { conn, error } => {
                let pe = self.conns.get(&conn).and_then(|c| c.pe);
                if let Some(pe) = pe {
                    let i = pe as usize;
                    if self.exited_ok[i] && !self.finalized[i] {
                        self.left_early.push(pe);
                    }
                }
                match error {
                    None => tracing::debug!(conn, ?pe, "bootstrap connection closed"),
                    Some(e) => tracing::warn!(conn, ?pe, error = %e, "bootstrap connection failed"),
                }
                self.close(conn);
            }
        }
    }
}

/// A completed allgather round: its number and every PE's bytes in rank order.
type Gathered = (u32, Vec<Vec<u8>>);

/// The state of the job's allgather rounds (pure logic, no I/O).
#[derive(Debug)]
struct Rounds {
    round: u32,
    data: Vec<Option<Vec<u8>>>,
    have: usize,
}

impl Rounds {
    fn new(n_pes: u32) -> Rounds {
        Rounds {
            round: 0,
            data: vec![None; n_pes as usize],
            have: 0,
        }
    }

    /// Records PE `pe`'s bytes for `round`. Returns the completed round (its number and
    /// every PE's bytes in rank order) when this was the last contribution, or an error
    /// message when the contribution breaks the protocol.
    fn contribute(
        &mut self,
        pe: u32,
        round: u32,
        data: Vec<u8>,
    ) -> Result<Option<Gathered>, String> {
        if round != self.round {
            return Err(format!(
                "PE {pe} sent allgather round {round} while the job is in round {}",
                self.round
            ));
        }
        let slot = self
            .data
            .get_mut(pe as usize)
            .ok_or_else(|| format!("PE {pe} is out of range"))?;
        if slot.is_some() {
            return Err(format!("PE {pe} sent allgather round {round} twice"));
        }
        *slot = Some(data);
        self.have += 1;
        if self.have < self.data.len() {
            return Ok(None);
        }
        let all = self
            .data
            .iter_mut()
            .map(|d| d.take().unwrap_or_default())
            .collect();
        let done = self.round;
        self.round += 1;
        self.have = 0;
        Ok(Some((done, all)))
    }
}

async fn write_frames(mut wr: OwnedWriteHalf, mut frames: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(frame) = frames.recv().await {
        if let Err(e) = wr.write_all(&frame).await {
            tracing::debug!(error = %e, "bootstrap write failed");
            return;
        }
    }
    let _ = wr.shutdown().await;
}

async fn read_conn(
    conn: u64,
    mut rd: OwnedReadHalf,
    secret: Arc<str>,
    events: mpsc::UnboundedSender<ConnEvent>,
) {
    let closed = |error: Option<String>| ConnEvent::Closed { conn, error };
    let first = match tokio::time::timeout(AUTH_TIMEOUT, read_frame(&mut rd, AUTH_MAX_FRAME)).await
    {
        Ok(Ok(Some(msg))) => msg,
        Ok(Ok(None)) => {
            let _ = events.send(closed(None));
            return;
        }
        Ok(Err(e)) => {
            let _ = events.send(closed(Some(e.to_string())));
            return;
        }
        Err(_) => {
            let _ = events.send(closed(Some("no Auth frame within the time limit".into())));
            return;
        }
    };
    match first {
        ToLauncher::Auth {
            secret: given,
            pe,
            pid,
        } => {
            let secret_ok = constant_time_eq(given.as_bytes(), secret.as_bytes());
            let _ = events.send(ConnEvent::Auth {
                conn,
                pe,
                pid,
                secret_ok,
            });
        }
        ToLauncher::Allgather { .. } | ToLauncher::Finalized | ToLauncher::GlobalExit { .. } => {
            let _ = events.send(closed(Some("first frame was not Auth".into())));
            return;
        }
    }
    loop {
        let event = match read_frame(&mut rd, launch::MAX_FRAME_BYTES).await {
            Ok(Some(ToLauncher::Allgather { round, data })) => {
                ConnEvent::Allgather { conn, round, data }
            }
            Ok(Some(ToLauncher::Finalized)) => ConnEvent::Finalized { conn },
            Ok(Some(ToLauncher::GlobalExit { code })) => ConnEvent::GlobalExit { conn, code },
            Ok(Some(ToLauncher::Auth { .. })) => closed(Some("Auth sent twice".into())),
            Ok(None) => closed(None),
            Err(e) => closed(Some(e.to_string())),
        };
        let last = matches!(event, ConnEvent::Closed { .. });
        if events.send(event).is_err() || last {
            return;
        }
    }
}

/// Reads one frame; `Ok(None)` at end of stream (also mid-frame: the PE went away).
async fn read_frame(rd: &mut (impl AsyncRead + Unpin), max: u32) -> io::Result<Option<ToLauncher>> {
    let mut len = [0u8; 4];
    match rd.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut body = vec![0u8; launch::frame_len(len, max)?];
    match rd.read_exact(&mut body).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    launch::decode(&body).map(Some)
}

/// Compares two byte strings in time that depends only on their lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_gather_in_rank_order() {
        let mut r = Rounds::new(3);
        assert_eq!(r.contribute(2, 0, vec![2]), Ok(None));
        assert_eq!(r.contribute(0, 0, vec![0]), Ok(None));
        assert_eq!(
            r.contribute(1, 0, vec![1, 1]),
            Ok(Some((0, vec![vec![0], vec![1, 1], vec![2]])))
        );
        // Next round starts empty.
        assert_eq!(r.contribute(0, 1, vec![]), Ok(None));
        assert!(r.contribute(0, 1, vec![]).unwrap_err().contains("twice"));
        assert!(r.contribute(1, 0, vec![]).unwrap_err().contains("round 0"));
        assert!(r.contribute(1, 2, vec![]).is_err());
        assert!(r.contribute(7, 1, vec![]).is_err());
        assert_eq!(r.contribute(1, 1, vec![]), Ok(None));
        assert_eq!(
            r.contribute(2, 1, vec![9]),
            Ok(Some((1, vec![vec![], vec![], vec![9]])))
        );
    }

    #[test]
    fn secret_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
