//! Output forwarding: where the PEs' stdout and stderr go in each [`OutputMode`]
//! (inherited, `[pe N] `-tagged, or captured into the report).
//!
//! This module owns the tasks and writer threads that move PE output. It must not
//! print anything of its own (the launcher's messages are the caller's), and it must
//! never let a slow or closed terminal stall supervision: tagged lines go through
//! writer threads, and draining at the end is bounded by [`OUTPUT_DRAIN`].

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::OutputMode;

/// How long output forwarding may take to drain after the PEs are gone.
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// The output side of a job: where PE output goes and the tasks that move it.
pub(crate) struct Output {
    mode: OutputMode,
    /// Tagged mode: a writer thread per stream, so a blocked terminal never stalls
    /// supervision; lines are written whole, one at a time.
    tagged: Option<[LineWriter; 2]>,
    /// Capture mode: per PE (stdout, stderr) buffers; shared so that data read before an
    /// aborted task is kept.
    captured: Vec<[Arc<Mutex<Vec<u8>>>; 2]>,
}

struct LineWriter {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl LineWriter {
    fn spawn(to_stderr: bool) -> LineWriter {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in rx {
                let result = if to_stderr {
                    io::stderr().lock().write_all(&line)
                } else {
                    let mut out = io::stdout().lock();
                    out.write_all(&line).and_then(|()| out.flush())
                };
                if result.is_err() {
                    break; // our own stdout is gone; drop the rest
                }
            }
            let _ = done_tx.send(());
        });
        LineWriter { tx, done }
    }
}

impl Output {
    pub(crate) fn new(mode: OutputMode, n: usize) -> Output {
        Output {
            mode,
            tagged: (mode == OutputMode::Tagged)
                .then(|| [LineWriter::spawn(false), LineWriter::spawn(true)]),
            captured: if mode == OutputMode::Capture {
                (0..n).map(|_| Default::default()).collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Starts the tasks that read a freshly spawned PE's pipes.
    pub(crate) fn attach(&self, pe: u32, child: &mut tokio::process::Child) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        let streams: [Option<Box<dyn AsyncRead + Send + Unpin>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        for (i, stream) in streams.into_iter().enumerate() {
            let Some(stream) = stream else { continue };
            match self.mode {
                OutputMode::Inherit => {}
                OutputMode::Tagged => {
                    if let Some(writers) = &self.tagged {
                        let tx = writers[i].tx.clone();
                        tasks.push(tokio::spawn(forward_tagged(pe, stream, tx)));
                    }
                }
                OutputMode::Capture => {
                    let buf = self.captured[pe as usize][i].clone();
                    tasks.push(tokio::spawn(capture(stream, buf)));
                }
            }
        }
        tasks
    }

    /// Waits (bounded) for the output tasks to reach end of stream, then returns the
    /// captured output (empty vectors unless capturing).
    pub(crate) async fn finish(self, tasks: Vec<JoinHandle<()>>) -> (Vec<String>, Vec<String>) {
        let until = Instant::now() + OUTPUT_DRAIN;
        for task in tasks {
            let abort = task.abort_handle();
            if tokio::time::timeout_at(until, task).await.is_err() {
                tracing::warn!("PE output did not reach end of stream; dropping the rest");
                abort.abort();
            }
        }
        if let Some(writers) = self.tagged {
            for w in writers {
                drop(w.tx);
                // Bounded: a stuck terminal must not hang the launcher.
                let _ = w.done.recv_timeout(OUTPUT_DRAIN);
            }
        }
        let text = |b: &Arc<Mutex<Vec<u8>>>| match b.lock() {
            Ok(v) => String::from_utf8_lossy(&v).into_owned(),
            Err(poisoned) => String::from_utf8_lossy(&poisoned.into_inner()).into_owned(),
        };
        self.captured
            .iter()
            .map(|[out, err]| (text(out), text(err)))
            .unzip()
    }
}

async fn forward_tagged(
    pe: u32,
    stream: impl AsyncRead + Unpin,
    tx: std::sync::mpsc::Sender<Vec<u8>>,
) {
    let prefix = format!("[pe {pe}] ");
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = prefix.clone().into_bytes();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
            Err(e) => {
                tracing::debug!(pe, error = %e, "reading PE output failed");
                break;
            }
        }
    }
}

async fn capture(mut stream: impl AsyncRead + Unpin, buf: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(k) => match buf.lock() {
                Ok(mut b) => b.extend_from_slice(&chunk[..k]),
                Err(_) => break,
            },
        }
    }
}
