//! `shmemplus-test-pe`: the PE program of the integration tests (`tests/jobs.rs`,
//! `tests/breadth.rs`, `tests/virtual_time.rs`). Each mode is one scenario, named by
//! the first argument; a PE prints what it checked and exits 0 only if every check
//! held, so the tests can assert on the job's outcome and on each PE's output. This
//! file only dispatches: the scenarios live in one module per feature, the harness
//! they share in `shmemplus_tests::pe`.

mod am;
mod atomics;
mod boards;
mod collectives;
mod cosched;
mod emulation;
mod errors;
mod lifecycle;
mod locks;
mod openshmem15;
mod rma;
mod scf;
mod signals;
mod teams;
mod tuning;
mod virtual_time;

use shmemplus_tests::pe::{exit_code, place_arg, with_handle};
use std::process::ExitCode;

/// The name failures are reported under.
const PROGRAM: &str = "test-pe";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let arg = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok());
    let place = |i: usize| place_arg(args.get(i).map(String::as_str));
    let on_handle =
        |scenario: &dyn Fn(&shmemplus::Shmem) -> Result<(), String>| with_handle(PROGRAM, scenario);
    let result =
        match mode {
            "rma" => rma::rma(arg(1).unwrap_or(1), arg(2).unwrap_or(20) as usize),
            "barrier" => rma::barrier_order(arg(1).unwrap_or(200)),
            "nbi" => on_handle(&|shmem| {
                rma::nbi(shmem, arg(1).unwrap_or(1), arg(2).unwrap_or(16) as usize)
            }),
            "nonsym-size" => errors::nonsym_size(),
            "nonsym-order" => errors::nonsym_order(),
            "bad-input" => errors::bad_input(),
            "breadth-errors" => on_handle(&errors::breadth_errors),
            "panic" => lifecycle::fail_after_barrier(arg(1).unwrap_or(1) as u32, false),
            "kill" => lifecycle::fail_after_barrier(arg(1).unwrap_or(1) as u32, true),
            "idle" => lifecycle::idle_barrier(),
            "exit-early" => lifecycle::exit_early(),
            "am" => am::am_messages(),
            "emulation" => emulation::emulation(),
            "emulated-idle" => emulation::emulated_idle(),
            "barrier-latency" => on_handle(&emulation::barrier_latency),
            "nbi-overlap" => on_handle(&emulation::nbi_overlap),
            "routes" => boards::routes(arg(1).unwrap_or(1), arg(2).unwrap_or(30) as usize),
            "board-errors" => boards::board_errors(),
            "board-memory" => boards::board_memory(),
            "staged-kernel" => boards::staged_kernel(),
            "tune" => tuning::tune_report(),
            "atomics" => place(1).and_then(|p| {
                on_handle(&|shmem| {
                    atomics::atomics(
                        shmem,
                        p,
                        arg(2).unwrap_or(2000) as usize,
                        arg(3).unwrap_or(200) as usize,
                        arg(4).unwrap_or(1),
                    )
                })
            }),
            "signals" => place(3).and_then(|data| {
                place(4).and_then(|sig| {
                    on_handle(&|shmem| {
                        signals::signals(
                            shmem,
                            arg(1).unwrap_or(200),
                            arg(2).unwrap_or(64 << 10) as usize,
                            data,
                            sig,
                        )
                    })
                })
            }),
            "waits" => place(1)
                .and_then(|p| on_handle(&|shmem| signals::waits(shmem, p, arg(2).unwrap_or(1)))),
            "collectives" => on_handle(&|shmem| {
                collectives::collectives(
                    shmem,
                    arg(1).unwrap_or(1),
                    arg(2).unwrap_or(40) as usize,
                    arg(3).unwrap_or(64) as usize,
                    args.get(4).map(String::as_str) == Some("mixed"),
                )
            }),
            "solo" => on_handle(&|shmem| collectives::solo(shmem, arg(1).unwrap_or(100))),
            "teams" => on_handle(&|shmem| teams::teams(shmem, arg(1).unwrap_or(40) as usize)),
            "locks" => place(2)
                .and_then(|p| on_handle(&|shmem| locks::locks(shmem, arg(1).unwrap_or(200), p))),
            "contexts" => on_handle(&openshmem15::contexts),
            "strided" => on_handle(&openshmem15::strided),
            "memory" => place(1).and_then(|p| on_handle(&|shmem| openshmem15::memory(shmem, p))),
            "ptr" => on_handle(&openshmem15::ptr),
            "global-exit" => {
                on_handle(&|shmem| openshmem15::global_exit(shmem, arg(1).unwrap_or(0) as i32))
            }
            "vt-model" => {
                let sizes: Vec<usize> = (1..args.len())
                    .filter_map(|i| arg(i).map(|s| s as usize))
                    .collect();
                on_handle(&|shmem| virtual_time::model(shmem, &sizes))
            }
            "vt-causality" => on_handle(&virtual_time::causality),
            "vt-barrier" => on_handle(&virtual_time::barrier),
            "vt-pattern" => on_handle(&|shmem| {
                let contended = args.get(2).map(String::as_str) == Some("contended");
                virtual_time::pattern(shmem, arg(1).unwrap_or(6), contended)
            }),
            "cosched" => on_handle(&|shmem| {
                let fail = match args.get(2).map(String::as_str) {
                    Some("fail") => cosched::Fail::One,
                    Some("fail-all") => cosched::Fail::All,
                    Some("fail-queued") => cosched::Fail::Queued,
                    Some("fail-first-finish") => cosched::Fail::FirstFinish,
                    Some("cpu-panics") => cosched::Fail::CpuPanics,
                    _ => cosched::Fail::Nothing,
                };
                let scope = match args.get(3).map(String::as_str) {
                    Some("pe") => shmemplus_cosched::Scope::Pe,
                    _ => shmemplus_cosched::Scope::Job,
                };
                let priced = match args.get(4).map(String::as_str) {
                    Some("priced") => cosched::Priced::GivenSamples,
                    Some("priced-default") => cosched::Priced::DefaultSamples,
                    Some("priced-background") => cosched::Priced::Background,
                    Some("priced-cold-cpu") => cosched::Priced::ColdCpu,
                    _ => cosched::Priced::No,
                };
                cosched::cosched(shmem, arg(1).unwrap_or(200_000), fail, scope, priced)
            }),
            "scf" => on_handle(&|shmem| {
                scf::scf(
                    shmem,
                    arg(1).unwrap_or(300),
                    args.get(2).map_or("cpu", String::as_str),
                    args.get(3).map_or("none", String::as_str),
                )
            }),
            "vt-cpu" => on_handle(&|shmem| virtual_time::cpu(shmem, arg(1).unwrap_or(50))),
            "vt-turns" => on_handle(&|shmem| virtual_time::turns(shmem, arg(1).unwrap_or(300))),
            other => Err(format!("unknown mode '{other}'")),
        };
    exit_code(PROGRAM, result)
}
