//! Collective scenarios: `collectives` (random collectives on every kind of team
//! against a serial reference) and `solo` (collectives on a team of one PE fill dest
//! before returning).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shmemplus::{Place, ReduceOp, Shmem, SymVec, Team};
use shmemplus_tests::pe::{e2s, need_boards};
use shmemplus_tests::reference::{expected, Call, Collective, Elem};
use shmemplus_tests::{ensure_eq, hash};

/// Elements of the large broadcasts and reductions (several 256 KiB broadcast chunks).
const BIG_ELEMS: usize = 70_000;

/// Elements past the end of each result that must keep their old contents.
const TAIL: usize = 8;

/// The random choices of one round, the same on every PE (one seeded generator).
#[derive(Debug, Clone, Copy)]
struct CollRound {
    k: u64,
    kind: Collective,
    team: usize,
    ty: usize,
    size_pick: u32,
    size_rand: usize,
    root_raw: u32,
    src_place: usize,
    dst_place: usize,
    in_place: bool,
    op_pick: usize,
}

/// Source and destination objects of one element type on every place of the test.
struct Bufs<T: Elem> {
    src: Vec<SymVec<T>>,
    dst: Vec<SymVec<T>>,
}

impl<T: Elem> Bufs<T> {
    fn new(shmem: &Shmem, places: &[Place], cap: usize) -> Result<Bufs<T>, String> {
        let mut b = Bufs {
            src: Vec::new(),
            dst: Vec::new(),
        };
        for &p in places {
            b.src.push(shmem.alloc::<T>(cap, p).map_err(e2s)?);
            b.dst.push(shmem.alloc::<T>(cap, p).map_err(e2s)?);
        }
        Ok(b)
    }
}

/// One collective of round `r` on `team` with element type `T`, checked element by
/// element (and `TAIL` elements past the result) against a serial reference computed
/// from every member's data, which any PE can regenerate.
fn coll_round<T: Elem>(
    shmem: &Shmem,
    (team_name, team): (&str, &Team),
    b: &Bufs<T>,
    r: &CollRound,
    seed: u64,
    max_e: usize,
) -> Result<usize, String> {
    let m = team.n_pes() as usize;
    let me_t = team.my_pe() as usize;
    let my_w = shmem.my_pe();
    let world: Vec<u32> = (0..m as u32)
        .map(|j| {
            team.world_pe(j)
                .ok_or(format!("world_pe({j}) of a team of {m}"))
        })
        .collect::<Result<_, _>>()?;
    ensure_eq!(world[me_t], my_w, "team {team_name}: world_pe(my_pe)");
    let val = |w: u32, i: usize| T::gen(hash(&[seed, r.k, u64::from(w), i as u64]));
    let big = matches!(r.kind, Collective::Broadcast | Collective::Reduce);
    let nelems = match r.size_pick {
        0 => 0,
        1 => 1,
        2 => m.saturating_sub(1),
        3 => m + 1,
        4 => 2 * m + 1,
        5 if big => BIG_ELEMS,
        _ => 2 + r.size_rand % (max_e - 1),
    };
    let count_of = |w: u32| -> usize {
        if r.size_pick == 0 {
            0
        } else {
            (hash(&[seed, r.k, u64::from(w), 77]) % (max_e as u64 + 1)) as usize
        }
    };
    let counts: Vec<usize> = world.iter().map(|&w| count_of(w)).collect();
    let in_place = r.in_place && r.kind == Collective::Reduce;
    let src = &b.src[r.src_place];
    let dst = if in_place { src } else { &b.dst[r.dst_place] };
    let cap = src.len();
    let root = r.root_raw % m as u32;
    let ops: Vec<ReduceOp> = ReduceOp::ALL.into_iter().filter(|&o| T::has(o)).collect();
    let op = ops[r.op_pick % ops.len()];
    let (src_fill, out) = match r.kind {
        Collective::Broadcast | Collective::Reduce => (nelems, nelems),
        Collective::Fcollect => (nelems, nelems * m),
        Collective::Collect => (counts[me_t], counts.iter().sum()),
        Collective::Alltoall => (nelems * m, nelems * m),
    };
    let src_vals: Vec<T> = (0..(src_fill + TAIL).min(cap))
        .map(|i| val(my_w, i))
        .collect();
    shmem.local_write(src, 0, &src_vals).map_err(e2s)?;
    let dst_n = (out + TAIL).min(cap);
    if !in_place {
        shmem
            .local_write(dst, 0, &vec![T::sentinel(); dst_n])
            .map_err(e2s)?;
    }
    let what = || {
        format!(
            "PE {my_w} round {} {:?} of {} on team {team_name} (team PE {me_t} of {m}): nelems {nelems}, root {root}, {} -> {}{}{}",
            r.k,
            r.kind,
            std::any::type_name::<T>(),
            src.place(),
            dst.place(),
            if in_place { " in place" } else { "" },
            if r.kind == Collective::Reduce { format!(", {op:?}") } else { String::new() },
        )
    };
    let call = Call {
        kind: r.kind,
        members: &world,
        me: me_t,
        nelems,
        root: root as usize,
        op,
    };
    call.run(shmem, team, dst, src, (counts[me_t], out))
        .map_err(|e| format!("{}: {e}", what()))?;
    let mut want: Vec<T> = if in_place {
        src_vals[..dst_n].to_vec()
    } else {
        vec![T::sentinel(); dst_n]
    };
    for (w, x) in want.iter_mut().zip(expected(&call, count_of, val)) {
        *w = x;
    }
    let mut got = vec![T::zeroed(); dst_n];
    shmem.local_read(dst, 0, &mut got).map_err(e2s)?;
    if let Some(i) = (0..dst_n).find(|&i| got[i] != want[i]) {
        return Err(format!(
            "{}: element {i} of {dst_n} checked is {:?}, want {:?}",
            what(),
            got[i],
            want[i]
        ));
    }
    Ok(nelems)
}

/// The teams of the collective tests: world, shared, the even PEs and the odd PEs
/// (strided, non-power-of-two sizes), rows and columns of a 2-wide grid, and a team
/// split from a column (all but its first PE). `None` where this PE is no member.
fn test_teams(shmem: &Shmem) -> Result<Vec<(&'static str, Option<Team>)>, String> {
    let n = shmem.n_pes();
    let world = shmem.team_world();
    let even = shmem
        .team_split_strided(&world, 0, 2, n.div_ceil(2))
        .map_err(e2s)?;
    let odd = if n >= 2 {
        shmem.team_split_strided(&world, 1, 2, n / 2).map_err(e2s)?
    } else {
        None
    };
    let (row, col) = shmem.team_split_2d(&world, 2).map_err(e2s)?;
    let nested = if col.n_pes() >= 2 {
        shmem
            .team_split_strided(&col, 1, 1, col.n_pes() - 1)
            .map_err(e2s)?
    } else {
        None
    };
    Ok(vec![
        ("world", Some(world)),
        ("shared", Some(shmem.team_shared())),
        ("even", even),
        ("odd", odd),
        ("row", Some(row)),
        ("column", Some(col)),
        ("column-tail", nested),
    ])
}

/// `rounds` random collectives (kind, team, element type, size, root, places, in
/// place or not, reduction) against a serial reference. `mixed` puts sources and
/// destinations on the CPU or on board 0 at random.
pub(crate) fn collectives(
    shmem: &Shmem,
    seed: u64,
    rounds: usize,
    max_e: usize,
    mixed: bool,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let places = if mixed {
        need_boards(shmem, Place::Fpga(0))?;
        vec![Place::Cpu, Place::Fpga(0)]
    } else {
        vec![Place::Cpu]
    };
    let max_e = max_e.max(2);
    let cap = (max_e * n as usize).max(BIG_ELEMS) + TAIL;
    let b32 = Bufs::<i32>::new(shmem, &places, cap)?;
    let b64 = Bufs::<u64>::new(shmem, &places, cap)?;
    let bf = Bufs::<f64>::new(shmem, &places, cap)?;
    let teams = test_teams(shmem)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut ran, mut big) = ([0usize; 5], 0);
    let start = std::time::Instant::now();
    for k in 0..rounds as u64 {
        let r = CollRound {
            k,
            kind: Collective::ALL[rng.random_range(0..Collective::ALL.len())],
            team: rng.random_range(0..teams.len()),
            ty: rng.random_range(0..3),
            size_pick: rng.random_range(0..10),
            size_rand: rng.random_range(0..1 << 20),
            root_raw: rng.random(),
            src_place: rng.random_range(0..places.len()),
            dst_place: rng.random_range(0..places.len()),
            in_place: rng.random_bool(0.4),
            op_pick: rng.random_range(0..ReduceOp::ALL.len()),
        };
        let (name, Some(team)) = (teams[r.team].0, &teams[r.team].1) else {
            continue;
        };
        let nelems = match r.ty {
            0 => coll_round(shmem, (name, team), &b32, &r, seed, max_e),
            1 => coll_round(shmem, (name, team), &b64, &r, seed, max_e),
            _ => coll_round(shmem, (name, team), &bf, &r, seed, max_e),
        }?;
        ran[r.kind as usize] += 1;
        big += usize::from(nelems == BIG_ELEMS);
    }
    shmem.barrier_all().map_err(e2s)?;
    println!(
        "PE {me}: {rounds} rounds in {:.3} s; broadcast/fcollect/collect/alltoall/reduce ran {ran:?} ({big} of {BIG_ELEMS} elements)",
        start.elapsed().as_secs_f64()
    );
    println!("PE {me}: collectives ok");
    Ok(())
}

/// Collectives on a team of one PE (this PE's row of a 1-wide grid), `rounds` times
/// each: when the call returns, this PE's own block must be in `dest` (OpenSHMEM: "on
/// return, dest contains ..."). Counts the calls that returned before it was.
pub(crate) fn solo(shmem: &Shmem, rounds: u64) -> Result<(), String> {
    let me = shmem.my_pe();
    let (row, col) = shmem.team_split_2d(&shmem.team_world(), 1).map_err(e2s)?;
    ensure_eq!(row.n_pes(), 1, "PE {me}: row of a 1-wide grid");
    let src = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let dst = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let names = ["broadcast", "fcollect", "collect", "alltoall", "reduce"];
    let mut early = [0u64; 5];
    let mut first = None;
    for r in 0..rounds {
        let v: Vec<u64> = (0..4).map(|i| r * 4 + i + 1).collect();
        shmem.local_write(&src, 0, &v).map_err(e2s)?;
        for (k, name) in names.iter().enumerate() {
            shmem.local_write(&dst, 0, &[0; 4]).map_err(e2s)?;
            match k {
                0 => shmem.broadcast(&row, &dst, &src, 4, 0),
                1 => shmem.fcollect(&row, &dst, &src, 4),
                2 => shmem.collect(&row, &dst, &src, 4).map(drop),
                3 => shmem.alltoall(&row, &dst, &src, 4),
                _ => shmem.reduce(&row, &dst, &src, 4, ReduceOp::Sum),
            }
            .map_err(|e| format!("{name}: {e}"))?;
            let got = shmem.local_to_vec(&dst).map_err(e2s)?;
            if got != v {
                early[k] += 1;
                first.get_or_insert(format!(
                    "round {r}: {name} returned with dest {got:?}, want {v:?}"
                ));
            }
        }
    }
    shmem.team_destroy(row).map_err(e2s)?;
    shmem.team_destroy(col).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if let Some(first) = first {
        return Err(format!(
            "PE {me}: on a team of one PE, calls returned before dest held this PE's block ({names:?}: {early:?} of {rounds} each); first: {first}"
        ));
    }
    println!("PE {me}: solo ok");
    Ok(())
}
