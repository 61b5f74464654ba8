//! Signals: the launcher's own SIGINT/SIGTERM/SIGHUP handlers (with
//! [`crate::JobSpec::handle_signals`]) and the names of Linux signal numbers.
//!
//! This module owns receiving signals sent to the launcher and naming signals in
//! messages. It must not send signals to PEs or decide what a signal means for the
//! job: `supervise` forwards an interrupt as SIGTERM to every PE group (`cleanup` sends
//! the signals).

use crate::LaunchError;

/// The signals that end a job when [`crate::JobSpec::handle_signals`] is set.
pub(crate) struct Signals(Vec<(i32, tokio::signal::unix::Signal)>);

impl Signals {
    pub(crate) fn new() -> Result<Signals, LaunchError> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut v = Vec::new();
        for (num, kind) in [
            (libc::SIGINT, SignalKind::interrupt()),
            (libc::SIGTERM, SignalKind::terminate()),
            (libc::SIGHUP, SignalKind::hangup()),
        ] {
            let s = signal(kind).map_err(|source| LaunchError::Os {
                what: "installing the launcher's signal handlers",
                source,
            })?;
            v.push((num, s));
        }
        Ok(Signals(v))
    }

    /// The next signal received; pending forever without handlers.
    pub(crate) async fn recv_opt(signals: &mut Option<Signals>) -> Option<i32> {
        let Some(Signals(list)) = signals else {
            return std::future::pending().await;
        };
        std::future::poll_fn(|cx| {
            for (num, s) in list.iter_mut() {
                if let std::task::Poll::Ready(Some(())) = s.poll_recv(cx) {
                    return std::task::Poll::Ready(Some(*num));
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// The name of a Linux signal number, e.g. `SIGKILL` for 9.
pub fn signal_name(sig: i32) -> &'static str {
    const NAMES: [&str; 32] = [
        "signal 0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(sig).ok().and_then(|i| NAMES.get(i)) {
        Some(name) if sig > 0 => name,
        _ if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&sig) => "a real-time signal",
        _ => "unknown signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGSYS), "SIGSYS");
        assert_eq!(signal_name(0), "unknown signal");
        assert_eq!(signal_name(-3), "unknown signal");
        assert_eq!(signal_name(libc::SIGRTMIN() + 1), "a real-time signal");
    }
}
