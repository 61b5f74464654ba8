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
//!
//! Every line goes out in one `write` ([`stderr_line`]): the job's PEs share the
//! launcher's stderr, and a line written in pieces (as `eprintln!` and `writeln!`
//! write a formatted line: a piece per argument, then the newline) interleaves with
//! the other PEs' lines mid-line. Eight PEs of `cbir` refusing the same argument
//! garbled their lines in 10 of 30 jobs that way.

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
        stderr_line(line(&pe, "warning", &msg));
    }
}

/// A debug note from PE `pe` (formatted only when someone will read it).
pub(crate) fn debug(pe: impl Display, msg: impl Display) {
    if tracing::dispatcher::has_been_set() {
        tracing::debug!(pe = %pe, "{msg}");
    } else if DEBUG.load(Ordering::Relaxed) {
        stderr_line(line(&pe, "debug", &msg));
    }
}

/// One diagnostic line: `shmemplus: PE {pe}: {level}: {msg}`.
fn line(pe: &dyn Display, level: &str, msg: &dyn Display) -> String {
    format!("shmemplus: PE {pe}: {level}: {msg}")
}

/// Writes `line` and a newline to stderr in one `write`, so that it does not
/// interleave mid-line with the lines of the job's other PEs, which share the
/// launcher's stderr (a pipe or terminal takes a write of up to 4096 bytes whole;
/// a longer line may still be split). Never panics, unlike `eprintln!`: a closed
/// stderr loses the line, as a diagnostic must never end the program.
///
/// ```
/// shmemplus::stderr_line(format_args!("my_program: {}: {}", "--size", "must be at least 1"));
/// ```
pub fn stderr_line(line: impl Display) {
    let _ = write_line(&mut std::io::stderr().lock(), line);
}

/// `line` and a newline as one `write_all` of one buffer.
fn write_line(out: &mut impl std::io::Write, line: impl Display) -> std::io::Result<()> {
    let mut whole = line.to_string();
    whole.push('\n');
    out.write_all(whole.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::{line, write_line};

    /// A writer that keeps each `write` call's bytes apart.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl std::io::Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_of_many_pieces_goes_out_in_one_write_with_its_newline() {
        let mut out = Writes::default();
        let pe = 3;
        write_line(
            &mut out,
            format_args!("cbir: PE {pe}: {}: {}", "--images", "bad"),
        )
        .unwrap();
        assert_eq!(out.0, vec![b"cbir: PE 3: --images: bad\n".to_vec()]);
    }

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
