//! `shmemcc` (and, by the name it is called with, `shmemc++`, `oshcc`, `oshc++`): the
//! compiler wrapper for OpenSHMEM C and C++ programs, in the style of Open MPI's
//! `oshcc`. It passes every argument to the system compiler and adds what a shmemplus
//! program needs: the include directory of `shmem.h` and, when it links, the library
//! with a run path, so that the program runs without `LD_LIBRARY_PATH`.
//!
//! It owns finding the headers and the library and building the command line. It
//! must not interpret the compiler's own arguments beyond spotting a compile-only
//! build (`-c`, `-S`, `-E`, `-M`, `-MM`), in which no link flags are added.
//!
//! Options of its own (removed before the compiler sees the rest): `-showme` or
//! `--showme` print the whole command instead of running it, `--showme:compile` and
//! `--showme:link` the flags it adds. The compiler is `cc` for C and `c++` for C++,
//! or `SHMEMPLUS_CC` / `SHMEMPLUS_CXX` (split at spaces, so `ccache gcc` works).

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Where `shmem.h` lives in the source tree this wrapper was built from.
const SOURCE_INCLUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

fn main() -> ExitCode {
    let mut argv = std::env::args_os();
    let called = argv.next().unwrap_or_else(|| OsString::from("shmemcc"));
    let cxx = is_cxx(Path::new(&called));
    let mut args: Vec<OsString> = argv.collect();
    let showme = take_showme(&mut args);
    let exe_dir = match std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        Some(dir) => dir,
        None => return fail("cannot find the directory of this program"),
    };
    let Some(include) = find_include(&exe_dir) else {
        return fail(&format!(
            "cannot find shmem.h (looked in {}/../include and {SOURCE_INCLUDE})",
            exe_dir.display()
        ));
    };
    let Some(lib) = find_lib(&exe_dir) else {
        return fail(&format!(
            "cannot find libshmemplus.so beside {} (build it with `cargo build --workspace`)",
            exe_dir.display()
        ));
    };
    let compile_flags = vec![OsString::from(format!("-I{}", include.display()))];
    let link_flags = vec![
        OsString::from(format!("-L{}", lib.display())),
        OsString::from(format!("-Wl,-rpath,{}", lib.display())),
        OsString::from("-lshmemplus"),
    ];
    let links = !args.iter().any(|a| is_compile_only(a));
    let compiler = compiler(cxx);
    let mut command: Vec<OsString> = compiler;
    command.extend(compile_flags.iter().cloned());
    command.extend(args);
    if links {
        command.extend(link_flags.iter().cloned());
    }
    match showme {
        Showme::No => {}
        Showme::All => return print_words(&command),
        Showme::Compile => return print_words(&compile_flags),
        Showme::Link => return print_words(&link_flags),
    }
    let err = Command::new(&command[0]).args(&command[1..]).exec();
    fail(&format!(
        "cannot run {}: {err}",
        command[0].to_string_lossy()
    ))
}

/// Whether the wrapper was called by a C++ name (`shmemc++`, `oshc++`, `*cxx`, `oshCC`).
fn is_cxx(called: &Path) -> bool {
    let name = called
        .file_name()
        .map(OsStr::to_string_lossy)
        .unwrap_or_default();
    name.ends_with("++") || name.ends_with("cxx") || name.ends_with("CC")
}

/// What `-showme` asked for.
enum Showme {
    No,
    All,
    Compile,
    Link,
}

/// Removes this wrapper's own options from `args`.
fn take_showme(args: &mut Vec<OsString>) -> Showme {
    let mut showme = Showme::No;
    args.retain(|a| {
        let which = match a.to_str() {
            Some("-showme" | "--showme" | "-show") => Showme::All,
            Some("--showme:compile" | "-showme:compile") => Showme::Compile,
            Some("--showme:link" | "-showme:link") => Showme::Link,
            _ => return true,
        };
        showme = which;
        false
    });
    showme
}

/// An argument after which the compiler does not link.
fn is_compile_only(arg: &OsStr) -> bool {
    matches!(arg.to_str(), Some("-c" | "-S" | "-E" | "-M" | "-MM"))
}

/// The compiler command: `SHMEMPLUS_CC`/`SHMEMPLUS_CXX` split at spaces, else
/// `cc`/`c++`.
fn compiler(cxx: bool) -> Vec<OsString> {
    let (var, default) = if cxx {
        ("SHMEMPLUS_CXX", "c++")
    } else {
        ("SHMEMPLUS_CC", "cc")
    };
    let chosen = std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    let text = chosen.as_deref().unwrap_or(default);
    text.split_whitespace().map(OsString::from).collect()
}

/// The include directory: `../include` beside an installed wrapper, else the source
/// tree's.
fn find_include(exe_dir: &Path) -> Option<PathBuf> {
    [exe_dir.join("../include"), PathBuf::from(SOURCE_INCLUDE)]
        .into_iter()
        .find(|dir| dir.join("shmem.h").is_file())
        .map(|dir| dir.canonicalize().unwrap_or(dir))
}

/// The library directory: the wrapper's own (Cargo's `target/<profile>`), else
/// `../lib` beside an installed wrapper.
fn find_lib(exe_dir: &Path) -> Option<PathBuf> {
    [exe_dir.to_path_buf(), exe_dir.join("../lib")]
        .into_iter()
        .find(|dir| dir.join("libshmemplus.so").is_file())
        .map(|dir| dir.canonicalize().unwrap_or(dir))
}

fn print_words(words: &[OsString]) -> ExitCode {
    let line: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    println!("{}", line.join(" "));
    ExitCode::SUCCESS
}

fn fail(why: &str) -> ExitCode {
    eprintln!("shmemcc: {why}");
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cxx_names_are_recognised() {
        for name in ["shmemc++", "/x/oshc++", "shmemcxx", "oshCC"] {
            assert!(is_cxx(Path::new(name)), "{name}");
        }
        for name in ["shmemcc", "/x/oshcc"] {
            assert!(!is_cxx(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn showme_options_are_taken_out_and_the_rest_kept() {
        let mut args: Vec<OsString> = ["-O2", "--showme:link", "a.c"].map(OsString::from).to_vec();
        assert!(matches!(take_showme(&mut args), Showme::Link));
        assert_eq!(args, ["-O2", "a.c"].map(OsString::from).to_vec());
    }

    #[test]
    fn compile_only_flags_stop_linking() {
        assert!(is_compile_only(OsStr::new("-c")));
        assert!(!is_compile_only(OsStr::new("-o")));
    }
}
