//! `shmemplus-collective-errors-pe`: the PE program of the collective error-path tests
//! (`tests/tests/collective_errors.rs`). Each mode makes collective calls with bad or
//! mismatched arguments, on every PE or on one, and checks that every PE gets an error
//! (printing it, so that the test can compare the PEs' messages) and that the team
//! still works afterwards; or provokes a failure past the point where the other PEs
//! have committed, which must end the job. A PE prints "PE <pe>: <mode> ok" only if
//! every check it made held.
//!
//! Modes:
//! - `all-bad`: every PE makes each bad call (`CASES`) with the same arguments;
//! - `one-bad <victim> [case]`: only world PE `victim` passes the bad arguments, the
//!   others good ones;
//! - `mismatch <victim>`: arguments each valid on their own but different on `victim`
//!   (another root, count, operator, object or call);
//! - `abort <call> <victim>`: `victim` fails a committed step of `call`.
//!
//! The calls run on the world team and on a team of the world's PEs 1.. (so that team
//! and world numbers differ); objects are on the CPU and on board 0 when the job has
//! boards.

use shmemplus::{Error, Place, ReduceOp, Shmem, SymVec, Team};
use shmemplus_tests::pe::{e2s, exit_code, with_handle};
use std::process::ExitCode;

/// Elements per block.
const B: usize = 4;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let num = |i: usize| args.get(i).and_then(|s| s.parse::<u32>().ok());
    let result = with_handle("collective-errors-pe", |shmem| match mode {
        "all-bad" => bad_calls(shmem, None, None),
        "one-bad" => match num(1) {
            Some(v) => bad_calls(shmem, Some(v), args.get(2).map(String::as_str)),
            None => Err("one-bad needs a victim PE".into()),
        },
        "mismatch" => match num(1) {
            Some(v) => mismatches(shmem, v),
            None => Err("mismatch needs a victim PE".into()),
        },
        "abort" => match (args.get(1), num(2)) {
            (Some(call), Some(v)) => abort(shmem, call, v),
            _ => Err("abort needs a call and a victim PE".into()),
        },
        other => Err(format!("unknown mode '{other}'")),
    });
    exit_code("collective-errors-pe", result)
}

/// The symmetric objects the calls use (allocated on the world team).
struct Objs {
    /// `B` elements: a block.
    block: SymVec<u64>,
    /// `2 * B` elements.
    two: SymVec<u64>,
    /// `n * B` elements (n = world size): room for every PE's block.
    all: SymVec<u64>,
    /// `n * B` elements: alltoall sources.
    all_src: SymVec<u64>,
    floats: SymVec<f64>,
    /// `n * B` elements on board 0, and `B`, when the job has boards.
    board: Option<(SymVec<u64>, SymVec<u64>)>,
}

impl Objs {
    fn new(shmem: &Shmem) -> Result<Objs, String> {
        let n = shmem.n_pes() as usize;
        let cpu = |len| shmem.alloc::<u64>(len, Place::Cpu).map_err(e2s);
        let board = if shmem.fpgas() > 0 {
            Some((
                shmem.alloc::<u64>(n * B, Place::Fpga(0)).map_err(e2s)?,
                shmem.alloc::<u64>(B, Place::Fpga(0)).map_err(e2s)?,
            ))
        } else {
            None
        };
        Ok(Objs {
            block: cpu(B)?,
            two: cpu(2 * B)?,
            all: cpu(n * B)?,
            all_src: cpu(n * B)?,
            floats: shmem.alloc::<f64>(B, Place::Cpu).map_err(e2s)?,
            board,
        })
    }
}

/// What a bad call must return.
#[derive(Clone, Copy)]
enum Want {
    Invalid(&'static str),
    OutOfBounds,
    Unsupported,
}

impl Want {
    fn matches(self, e: &Error) -> bool {
        match (self, e) {
            (Want::Invalid(s), Error::InvalidArgument(m)) => m.contains(s),
            (Want::OutOfBounds, Error::OutOfBounds { .. }) => true,
            (Want::Unsupported, Error::UnsupportedReduction { .. }) => true,
            _ => false,
        }
    }
}

/// A collective call with bad arguments (`bad`) or the matching good ones.
type Call = fn(&Shmem, &Team, &Objs, bool) -> shmemplus::Result<()>;

/// Every bad call: (name, what it must return, the call).
const CASES: &[(&str, Want, Call)] = &[
    (
        "broadcast-root",
        Want::Invalid("broadcast root"),
        |s, t, o, bad| {
            let root = if bad { t.n_pes() } else { 0 };
            s.broadcast(t, &o.block, &o.two, B, root)
        },
    ),
    (
        "broadcast-huge-root",
        Want::Invalid("broadcast root"),
        |s, t, o, bad| {
            let root = if bad { u32::MAX } else { 0 };
            s.broadcast(t, &o.block, &o.two, B, root)
        },
    ),
    ("broadcast-count", Want::OutOfBounds, |s, t, o, bad| {
        let n = if bad { B + 1 } else { B };
        s.broadcast(t, &o.block, &o.two, n, 0)
    }),
    (
        "broadcast-board-count",
        Want::OutOfBounds,
        |s, t, o, bad| match &o.board {
            Some((all, block)) => s.broadcast(t, block, all, if bad { B + 1 } else { B }, 0),
            None => s.broadcast(t, &o.block, &o.two, if bad { B + 1 } else { B }, 0),
        },
    ),
    (
        "fcollect-overflow",
        Want::Invalid("fcollect size overflows"),
        |s, t, o, bad| {
            let n = if bad { usize::MAX / 2 + 1 } else { B };
            s.fcollect(t, &o.all, &o.block, n)
        },
    ),
    ("fcollect-dest-short", Want::OutOfBounds, |s, t, o, bad| {
        let n = if bad { 2 * B } else { B };
        s.fcollect(t, &o.all, &o.two, n)
    }),
    (
        "fcollect-overlap",
        Want::Invalid("overlap"),
        |s, t, o, bad| {
            let src = if bad { &o.all } else { &o.block };
            s.fcollect(t, &o.all, src, 1)
        },
    ),
    ("collect-source-short", Want::OutOfBounds, |s, t, o, bad| {
        let n = if bad { B + 1 } else { B };
        s.collect(t, &o.all, &o.block, n).map(drop)
    }),
    (
        "collect-too-many",
        Want::Invalid("do not fit"),
        |s, t, o, bad| {
            let n = if bad { o.all_src.len() } else { B };
            s.collect(t, &o.all, &o.all_src, n).map(drop)
        },
    ),
    (
        "collect-overlap",
        Want::Invalid("overlap"),
        |s, t, o, bad| {
            let src = if bad { &o.all } else { &o.block };
            s.collect(t, &o.all, src, 1).map(drop)
        },
    ),
    ("alltoall-count", Want::OutOfBounds, |s, t, o, bad| {
        let n = if bad { B * 2 } else { B };
        s.alltoall(t, &o.all, &o.all_src, n)
    }),
    (
        "alltoall-overflow",
        Want::Invalid("alltoall size overflows"),
        |s, t, o, bad| {
            let n = if bad { usize::MAX / 2 + 1 } else { B };
            s.alltoall(t, &o.all, &o.all_src, n)
        },
    ),
    (
        "alltoall-overlap",
        Want::Invalid("overlap"),
        |s, t, o, bad| {
            let src = if bad { &o.all } else { &o.all_src };
            s.alltoall(t, &o.all, src, 1)
        },
    ),
    (
        "alltoall-board-count",
        Want::OutOfBounds,
        |s, t, o, bad| match &o.board {
            Some((all, _)) => s.alltoall(t, all, &o.all_src, if bad { 2 * B } else { B }),
            None => s.alltoall(t, &o.all, &o.all_src, if bad { 2 * B } else { B }),
        },
    ),
    ("reduce-xor-on-floats", Want::Unsupported, |s, t, o, bad| {
        let op = if bad { ReduceOp::Xor } else { ReduceOp::Sum };
        s.reduce(t, &o.floats, &o.floats, B, op)
    }),
    ("reduce-count", Want::OutOfBounds, |s, t, o, bad| {
        let n = if bad { B + 1 } else { B };
        s.reduce(t, &o.two, &o.block, n, ReduceOp::Max)
    }),
];

/// The teams the calls run on: the world, and the world's PEs 1.. (`None` on PE 0).
fn teams(shmem: &Shmem) -> Result<Vec<(&'static str, Option<Team>)>, String> {
    let world = shmem.team_world();
    let tail = shmem
        .team_split_strided(&world, 1, 1, shmem.n_pes() - 1)
        .map_err(e2s)?;
    Ok(vec![("world", Some(world)), ("tail", tail)])
}

/// Whether world PE `pe` is a member of `team`.
fn has(team: &Team, pe: u32) -> bool {
    let (start, stride, size) = team.world_stride();
    pe.checked_sub(start)
        .is_some_and(|rel| rel % stride.max(1) == 0 && rel / stride.max(1) < size)
}

/// Each case of `CASES` (or only `only`) on each team: bad arguments on every PE
/// (`victim` None) or on `victim` only; every PE must get the case's error, printed as
/// "PE <pe>: <team> <case>: <message>". Then the team must still work.
fn bad_calls(shmem: &Shmem, victim: Option<u32>, only: Option<&str>) -> Result<(), String> {
    let me = shmem.my_pe();
    let objs = Objs::new(shmem)?;
    for (team_name, team) in teams(shmem)? {
        let Some(team) = team else {
            continue;
        };
        if victim.is_some_and(|v| !has(&team, v)) {
            // Nothing is bad in a team without the victim.
            continue;
        }
        for &(case, want, call) in CASES {
            if only.is_some_and(|o| o != case) {
                continue;
            }
            let bad = victim.is_none_or(|v| v == me);
            match call(shmem, &team, &objs, bad) {
                Ok(()) => {
                    return Err(format!(
                        "PE {me}: {team_name} {case}: accepted (bad arguments on this PE: {bad})"
                    ))
                }
                Err(e) if want.matches(&e) => println!("PE {me}: {team_name} {case}: {e}"),
                Err(e) => return Err(format!("PE {me}: {team_name} {case}: wrong error: {e}")),
            }
            // The team goes on: a barrier, the good call, and a checked collective.
            shmem.barrier(&team).map_err(e2s)?;
            call(shmem, &team, &objs, false)
                .map_err(|e| format!("PE {me}: {team_name} {case}: good call after: {e}"))?;
            check_team(shmem, &team, &objs).map_err(|e| format!("{team_name} {case}: {e}"))?;
        }
    }
    if victim.is_none() {
        // An allocation whose size overflows on every PE: the same error everywhere.
        match shmem.alloc::<u64>(usize::MAX / 4, Place::Cpu) {
            Err(e @ Error::SizeOverflow { .. }) => println!("PE {me}: alloc-overflow: {e}"),
            other => return Err(format!("PE {me}: alloc-overflow: {other:?}")),
        }
        // A destroyed team is refused by every member alike, and nothing waits.
        let world = shmem.team_world();
        let gone = shmem
            .team_split_strided(&world, 0, 1, shmem.n_pes())
            .map_err(e2s)?;
        let gone = gone.ok_or("every PE is in a team of all PEs")?;
        shmem.team_destroy(gone.clone()).map_err(e2s)?;
        for (what, r) in [
            ("team_sync", shmem.team_sync(&gone)),
            (
                "broadcast",
                shmem.broadcast(&gone, &objs.block, &objs.two, 1, 0),
            ),
        ] {
            match r {
                Err(Error::InvalidTeam) => println!("PE {me}: destroyed {what}: refused"),
                other => return Err(format!("PE {me}: {what} on a destroyed team: {other:?}")),
            }
        }
        check_team(shmem, &world, &objs)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    println!(
        "PE {me}: {} ok",
        if victim.is_some() {
            "one-bad"
        } else {
            "all-bad"
        }
    );
    Ok(())
}

/// A broadcast, an fcollect and a reduce on `team` with checked results.
fn check_team(shmem: &Shmem, team: &Team, o: &Objs) -> Result<(), String> {
    let (me, n) = (team.my_pe() as u64, team.n_pes() as u64);
    let mine: Vec<u64> = (0..B as u64).map(|i| 1000 * me + i).collect();
    shmem.local_write(&o.two, 0, &mine).map_err(e2s)?;
    shmem.barrier(team).map_err(e2s)?;
    shmem.broadcast(team, &o.block, &o.two, B, 0).map_err(e2s)?;
    let got = shmem.local_to_vec(&o.block).map_err(e2s)?;
    let want: Vec<u64> = (0..B as u64).collect();
    if got != want {
        return Err(format!("broadcast after the error: {got:?}, want {want:?}"));
    }
    shmem.fcollect(team, &o.all, &o.two, B).map_err(e2s)?;
    let got = shmem.local_to_vec(&o.all).map_err(e2s)?;
    let want: Vec<u64> = (0..n)
        .flat_map(|pe| (0..B as u64).map(move |i| 1000 * pe + i))
        .collect();
    if got[..want.len()] != want[..] {
        return Err(format!("fcollect after the error: {got:?}, want {want:?}"));
    }
    shmem
        .reduce(team, &o.block, &o.two, B, ReduceOp::Sum)
        .map_err(e2s)?;
    let got = shmem.local_to_vec(&o.block).map_err(e2s)?;
    let want: Vec<u64> = (0..B as u64)
        .map(|i| (0..n).map(|pe| 1000 * pe + i).sum())
        .collect();
    if got != want {
        return Err(format!("reduce after the error: {got:?}, want {want:?}"));
    }
    shmem.barrier(team).map_err(e2s)
}

/// Calls each valid on its own that `victim` makes differently from the others: every
/// PE making the collective must get the same `NonSymmetric` error, printed as
/// "PE <pe>: <case>: <message>"; a PE in a plain `team_sync` while the others are in a
/// collective returns from it, and the others refuse.
fn mismatches(shmem: &Shmem, victim: u32) -> Result<(), String> {
    let me = shmem.my_pe();
    let odd = me == victim;
    let o = Objs::new(shmem)?;
    let world = shmem.team_world();
    let t = &world;
    let cases: Vec<(&str, shmemplus::Result<()>)> = vec![
        (
            "root",
            shmem.broadcast(t, &o.block, &o.two, B, u32::from(odd)),
        ),
        (
            "count",
            shmem.fcollect(t, &o.all, &o.two, if odd { B - 1 } else { B }),
        ),
        (
            "operator",
            shmem.reduce(
                t,
                &o.block,
                &o.two,
                B,
                if odd { ReduceOp::Max } else { ReduceOp::Sum },
            ),
        ),
        (
            "object",
            if odd {
                shmem.alltoall(t, &o.all_src, &o.all, 1)
            } else {
                shmem.alltoall(t, &o.all, &o.all_src, 1)
            },
        ),
        (
            "kind",
            if odd {
                shmem.alltoall(t, &o.all, &o.all_src, 1)
            } else {
                shmem.fcollect(t, &o.all, &o.block, 1)
            },
        ),
    ];
    for (case, r) in cases {
        match r {
            Err(e @ Error::NonSymmetric(_)) => println!("PE {me}: {case}: {e}"),
            other => return Err(format!("PE {me}: mismatched {case}: {other:?}")),
        }
        check_team(shmem, t, &o).map_err(|e| format!("{case}: {e}"))?;
    }
    // An allocation whose size overflows on one PE: refused by the symmetry check on
    // every PE (before, the victim returned at once and left the others waiting).
    let len = if odd { usize::MAX / 4 } else { 4 };
    match shmem.alloc::<u64>(len, Place::Cpu) {
        Err(e @ Error::NonSymmetric(_)) => println!("PE {me}: alloc-overflow: {e}"),
        other => return Err(format!("PE {me}: mismatched alloc-overflow: {other:?}")),
    }
    check_team(shmem, t, &o).map_err(|e| format!("alloc-overflow: {e}"))?;
    // One PE in team_sync, the others in a broadcast (and the other way round).
    for sync_on_victim in [true, false] {
        let case = if sync_on_victim {
            "sync-vs-broadcast"
        } else {
            "broadcast-vs-sync"
        };
        let r = if odd == sync_on_victim {
            shmem.team_sync(t).map(|()| "synced")
        } else {
            shmem
                .broadcast(t, &o.block, &o.two, B, 0)
                .map(|()| "broadcast")
        };
        match r {
            Ok("synced") => println!("PE {me}: {case}: synced"),
            Err(e @ Error::NonSymmetric(_)) => println!("PE {me}: {case}: {e}"),
            other => return Err(format!("PE {me}: {case}: {other:?}")),
        }
        check_team(shmem, t, &o).map_err(|e| format!("{case}: {e}"))?;
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: mismatch ok");
    Ok(())
}

/// `victim` fails a committed step of `call` (a test hook of the library); the job must
/// end with its message. No PE may get past the call.
fn abort(shmem: &Shmem, call: &str, victim: u32) -> Result<(), String> {
    let me = shmem.my_pe();
    let o = Objs::new(shmem)?;
    let world = shmem.team_world();
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: ready");
    if me == victim {
        shmem.inject_local_failure(call);
    }
    let r = match call {
        "broadcast" => shmem.broadcast(&world, &o.block, &o.two, B, victim),
        "fcollect" => shmem.fcollect(&world, &o.all, &o.block, B),
        "collect" => shmem.collect(&world, &o.all, &o.block, B).map(drop),
        "alltoall" => shmem.alltoall(&world, &o.all, &o.all_src, B),
        "reduce" => shmem.reduce(&world, &o.block, &o.two, B, ReduceOp::Sum),
        "alloc" => {
            let place = if shmem.fpgas() > 0 {
                Place::Fpga(0)
            } else {
                Place::Cpu
            };
            shmem.alloc::<u64>(B, place).map(drop)
        }
        other => return Err(format!("unknown call '{other}'")),
    };
    // The victim never gets here; the others may (the call completes on them) but must
    // then be ended by the launcher, so wait for that in a barrier.
    r.map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    Err(format!("PE {me}: the job went on past the failed {call}"))
}
