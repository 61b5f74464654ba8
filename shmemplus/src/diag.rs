//! The library's user-facing diagnostics: warnings (a /dev/shm too small, self-tuning
//! that failed, a tuning cache not usable, an AM put refused, ...) and the
//! `SHMEM_DEBUG` debug lines.
//!
//! Each is a `tracing` event, for programs that install a subscriber. A program that
//! installs none must still see its warnings, so then the line goes to stderr
//! plainly, in the format of the job's other messages (`shmemplus: PE 3: warning:
//! ...`; compare `fatal`), without colour codes; debug lines likewise when
//! `SHMEM_DEBUG` is set. This module must not install a subscriber (that is the
//! program's choice) and must not decide what is worth a warning (the callers do).

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `SHMEM_DEBUG` asked for debug lines (set once by `init`).
static DEBUG: AtomicBool = AtomicBool::new(false);

/// Turns the plain debug lines on or off (`init` does, from `SHMEM_DEBUG`).
pub(crate) fn set_debug(on: bool) {
    DEBUG.store(on, Ordering::Relaxed);
}

/// A warning from PE `pe`: a `tracing` event, and a plain line on stderr when the
/// program installed no subscriber.
pub(crate) fn warn(pe: impl Display, msg: impl Display) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!(pe = %pe, "{msg}");
    } else {
        plain(&line(&pe, "warning", &msg));
    }
}

/// A debug note from PE `pe` (formatted only when someone will read it).
pub(crate) fn debug(pe: impl Display, msg: impl Display) {
    if tracing::dispatcher::has_been_set() {
        tracing::debug!(pe = %pe, "{msg}");
    } else if DEBUG.load(Ordering::Relaxed) {
        plain(&line(&pe, "debug", &msg));
    }
}

/// One diagnostic line: `shmemplus: PE {pe}: {level}: {msg}`.
fn line(pe: &dyn Display, level: &str, msg: &dyn Display) -> String {
    format!("shmemplus: PE {pe}: {level}: {msg}")
}

/// Writes `line` to stderr. Not `eprintln!`: it panics when stderr is closed, and a
/// diagnostic must never end the program.
fn plain(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn a_line_names_the_pe_and_the_level_in_plain_text() {
        let l = line(
            &3,
            "warning",
            &format_args!("tuning not cached: {}", "no dir"),
        );
        assert_eq!(l, "shmemplus: PE 3: warning: tuning not cached: no dir");
        assert!(!l.contains('\x1b'), "no colour codes");
        assert_eq!(line(&0, "debug", &"x"), "shmemplus: PE 0: debug: x");
    }
}
