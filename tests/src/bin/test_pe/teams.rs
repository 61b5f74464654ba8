//! The `teams` scenario: team geometry and PE translation, create/destroy cycles past
//! the slot count, destroyed handles refused, slot exhaustion and recovery.

use shmemplus::{Error, Place, ReduceOp, Shmem};
use shmemplus_tests::ensure_eq;
use shmemplus_tests::pe::{e2s, expect_err};

/// Team geometry and PE translation of world, shared, strided, nested and 2-D teams;
/// `cycles` create/use/destroy cycles (more than the team slots); destroyed handles
/// refused; slot exhaustion and recovery.
pub(crate) fn teams(shmem: &Shmem, cycles: usize) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let ppn = shmem.topology().pes_per_node;
    let world = shmem.team_world();
    ensure_eq!(
        (world.my_pe(), world.n_pes(), world.world_stride()),
        (me, n, (0, 1, n)),
        "world geometry"
    );
    for i in 0..n {
        ensure_eq!(world.world_pe(i), Some(i), "world.world_pe({i})");
        ensure_eq!(world.translate_pe(i, &world), Some(i), "world -> world {i}");
    }
    ensure_eq!(world.world_pe(n), None, "world.world_pe(n)");
    ensure_eq!(world.translate_pe(n, &world), None, "world -> world n");
    let shared = shmem.team_shared();
    let node_start = me / ppn * ppn;
    ensure_eq!(
        (shared.my_pe(), shared.world_stride()),
        (me - node_start, (node_start, 1, ppn.min(n - node_start))),
        "shared team with {ppn} PEs per node"
    );
    for w in 0..n {
        let want = (w / ppn == me / ppn).then(|| w - node_start);
        ensure_eq!(world.translate_pe(w, &shared), want, "world {w} -> shared");
    }
    // A negative stride: every PE from the last down, and a reduction whose result
    // shows the order (team PE 0 is world PE n - 1).
    let down = shmem
        .team_split_strided_signed(&world, n - 1, -1, n)
        .map_err(e2s)?
        .ok_or("every PE is in the down team")?;
    ensure_eq!(
        (down.my_pe(), down.world_geometry(), down.world_pe(0)),
        (n - 1 - me, (n - 1, -1, n), Some(n - 1)),
        "down team"
    );
    let v = shmem.alloc::<u64>(n as usize, Place::Cpu).map_err(e2s)?;
    let all = shmem.alloc::<u64>(n as usize, Place::Cpu).map_err(e2s)?;
    shmem.local_write(&v, 0, &[u64::from(me)]).map_err(e2s)?;
    shmem.fcollect(&down, &all, &v, 1).map_err(e2s)?;
    let want: Vec<u64> = (0..n).rev().map(u64::from).collect();
    ensure_eq!(
        shmem.local_to_vec(&all).map_err(e2s)?,
        want,
        "fcollect in down order"
    );
    shmem.team_destroy(down).map_err(e2s)?;
    shmem.free(all).map_err(e2s)?;
    shmem.free(v).map_err(e2s)?;
    // Strided: the even PEs (3 of 5 with stride 2), and a team split from it.
    let n_even = n.div_ceil(2);
    let even = shmem
        .team_split_strided(&world, 0, 2, n_even)
        .map_err(e2s)?;
    ensure_eq!(even.is_some(), me % 2 == 0, "PE {me} in the even team");
    if let Some(t) = &even {
        ensure_eq!(
            (t.my_pe(), t.n_pes(), t.world_stride()),
            (me / 2, n_even, (0, 2, n_even)),
            "even team geometry"
        );
        for i in 0..n_even {
            ensure_eq!(t.world_pe(i), Some(2 * i), "even.world_pe({i})");
            ensure_eq!(t.translate_pe(i, &world), Some(2 * i), "even {i} -> world");
            let in_shared = (2 * i / ppn == me / ppn).then(|| 2 * i - node_start);
            ensure_eq!(t.translate_pe(i, &shared), in_shared, "even {i} -> shared");
        }
        ensure_eq!(t.world_pe(n_even), None, "even.world_pe(size)");
        for w in 0..n {
            ensure_eq!(
                world.translate_pe(w, t),
                (w % 2 == 0).then_some(w / 2),
                "world {w} -> even"
            );
        }
        if n_even >= 2 {
            let tail = shmem.team_split_strided(t, 1, 1, n_even - 1).map_err(e2s)?;
            ensure_eq!(tail.is_some(), me != 0, "PE {me} in the even team's tail");
            if let Some(tt) = tail {
                ensure_eq!(
                    (tt.my_pe(), tt.world_stride()),
                    (me / 2 - 1, (2, 2, n_even - 1)),
                    "tail of the even team"
                );
                for j in 0..n_even - 1 {
                    ensure_eq!(tt.translate_pe(j, t), Some(j + 1), "tail {j} -> even");
                }
                ensure_eq!(t.translate_pe(0, &tt), None, "even 0 -> tail");
                shmem.team_sync(&tt).map_err(e2s)?;
                shmem.team_destroy(tt).map_err(e2s)?;
            }
        }
    }
    // 2-D grids of 2 and 3 columns: rows, columns, and their crossing.
    let v = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    for x in [2u32, 3] {
        let (row, col) = shmem.team_split_2d(&world, x).map_err(e2s)?;
        let xe = x.min(n);
        let row_start = me / xe * xe;
        ensure_eq!(
            (row.my_pe(), row.world_stride()),
            (me % xe, (row_start, 1, xe.min(n - row_start))),
            "row of a {x}-wide grid"
        );
        ensure_eq!(
            (col.my_pe(), col.world_stride()),
            (me / xe, (me % xe, xe, (n - me % xe).div_ceil(xe))),
            "column of a {x}-wide grid"
        );
        for j in 0..row.n_pes() {
            let want = (j == row.my_pe()).then_some(col.my_pe());
            ensure_eq!(row.translate_pe(j, &col), want, "row {j} -> column");
        }
        // Both work: a sum of (world PE + 1) over each.
        for (name, t) in [("row", &row), ("column", &col)] {
            shmem
                .local_write(&v, 0, &[u64::from(me) + 1])
                .map_err(e2s)?;
            shmem.reduce(t, &v, &v, 1, ReduceOp::Sum).map_err(e2s)?;
            let want: u64 = (0..t.n_pes())
                .map(|i| u64::from(t.world_pe(i).unwrap_or(0)) + 1)
                .sum();
            ensure_eq!(
                shmem.local_read_one(&v, 0).map_err(e2s)?,
                want,
                "sum over the {name} of a {x}-wide grid"
            );
            shmem.barrier(t).map_err(e2s)?;
        }
        shmem.team_destroy(row).map_err(e2s)?;
        shmem.team_destroy(col).map_err(e2s)?;
    }
    if let Some(t) = &even {
        // A grid over a strided parent: rows and columns in world numbers (the
        // xrange is clamped to the parent's size).
        let (row, col) = shmem.team_split_2d(t, 2).map_err(e2s)?;
        let (m, i) = (t.n_pes(), t.my_pe());
        let xe = 2.min(m);
        let row_start = i / xe * xe;
        ensure_eq!(
            (row.my_pe(), row.world_stride()),
            (i % xe, (2 * row_start, 2, xe.min(m - row_start))),
            "row of a grid over the even team"
        );
        ensure_eq!(
            (col.my_pe(), col.world_stride()),
            (i / xe, (2 * (i % xe), 2 * xe, (m - i % xe).div_ceil(xe))),
            "column of a grid over the even team"
        );
        shmem.team_destroy(row).map_err(e2s)?;
        shmem.team_destroy(col).map_err(e2s)?;
    }
    // An xrange wider than the parent: one row (the parent), columns of one PE.
    let (row, col) = shmem.team_split_2d(&world, n + 3).map_err(e2s)?;
    ensure_eq!(
        (row.world_stride(), col.world_stride(), col.my_pe()),
        ((0, 1, n), (me, n, 1), 0),
        "grid with xrange n + 3"
    );
    shmem.team_destroy(row).map_err(e2s)?;
    shmem.team_destroy(col).map_err(e2s)?;
    if let Some(t) = even {
        shmem.team_destroy(t).map_err(e2s)?;
    }
    // Create, use, destroy: more cycles than slots, so slots are reused.
    let src = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    let dst = shmem.alloc::<u64>(2, Place::Cpu).map_err(e2s)?;
    for c in 0..cycles as u32 {
        let (start, stride) = (c % n, 1 + (c / n) % 2);
        let size = (n - 1 - start) / stride + 1;
        let t = shmem
            .team_split_strided(&world, start, stride, size)
            .map_err(|e| format!("cycle {c}: split: {e}"))?;
        let member = me >= start && (me - start) % stride == 0;
        ensure_eq!(t.is_some(), member, "cycle {c}: PE {me} a member");
        let Some(t) = t else { continue };
        ensure_eq!(
            (t.my_pe(), t.n_pes()),
            ((me - start) / stride, size),
            "cycle {c}: team geometry"
        );
        shmem
            .local_write(&src, 0, &[u64::from(me) * 1000 + u64::from(c)])
            .map_err(e2s)?;
        shmem
            .reduce(&t, &dst, &src, 1, ReduceOp::Sum)
            .map_err(|e| format!("cycle {c}: reduce: {e}"))?;
        let want: u64 = (0..size)
            .map(|i| u64::from(start + i * stride) * 1000 + u64::from(c))
            .sum();
        ensure_eq!(
            shmem.local_read_one(&dst, 0).map_err(e2s)?,
            want,
            "cycle {c}: sum over the team"
        );
        let root = c % size;
        shmem
            .broadcast(&t, &dst, &src, 1, root)
            .map_err(|e| format!("cycle {c}: broadcast: {e}"))?;
        ensure_eq!(
            shmem.local_read_one(&dst, 0).map_err(e2s)?,
            u64::from(start + root * stride) * 1000 + u64::from(c),
            "cycle {c}: broadcast from team PE {root}"
        );
        // barrier(team) completes puts among the members: each puts into the next.
        let next = t.world_pe((t.my_pe() + 1) % size).ok_or("world_pe")?;
        let token = 7_000_000 + u64::from(c) * 100 + u64::from(me);
        shmem.p(&dst, 1, token, next).map_err(e2s)?;
        shmem.barrier(&t).map_err(e2s)?;
        let left = t
            .world_pe((t.my_pe() + size - 1) % size)
            .ok_or("world_pe")?;
        ensure_eq!(
            shmem.local_read_one(&dst, 1).map_err(e2s)?,
            7_000_000 + u64::from(c) * 100 + u64::from(left),
            "cycle {c}: put from team neighbour PE {left} after barrier(team)"
        );
        shmem.barrier(&t).map_err(e2s)?;
        let kept = t.clone();
        shmem
            .team_destroy(t)
            .map_err(|e| format!("cycle {c}: destroy: {e}"))?;
        let refused = |e: &Error| matches!(e, Error::InvalidTeam);
        expect_err("sync of a destroyed team", shmem.team_sync(&kept), refused)?;
        expect_err("barrier of a destroyed team", shmem.barrier(&kept), refused)?;
        expect_err(
            "reduce on a destroyed team",
            shmem.reduce(&kept, &dst, &src, 1, ReduceOp::Sum),
            refused,
        )?;
        expect_err(
            "broadcast on a destroyed team",
            shmem.broadcast(&kept, &dst, &src, 1, 0),
            refused,
        )?;
        expect_err(
            "split of a destroyed team",
            shmem.team_split_strided(&kept, 0, 1, 1),
            refused,
        )?;
        expect_err("second destroy", shmem.team_destroy(kept), refused)?;
    }
    // Exhaustion: world and shared hold 2 of the 32 slots; the 31st team is refused on
    // every PE, and destroying gives the slots back.
    let mut held = Vec::new();
    let err = loop {
        match shmem.team_split_strided(&world, 0, 1, n) {
            Ok(Some(t)) => held.push(t),
            Ok(None) => return Err("PE missing from a full split".into()),
            Err(e) => break e,
        }
        if held.len() > 64 {
            return Err("team slots never ran out".into());
        }
    };
    if !matches!(err, Error::TeamsExhausted { max: 32 }) {
        return Err(format!("after {} teams: wrong error {err:?}", held.len()));
    }
    ensure_eq!(held.len(), 30, "teams created before exhaustion");
    shmem.team_sync(&held[29]).map_err(e2s)?;
    for t in held {
        shmem.team_destroy(t).map_err(e2s)?;
    }
    let again = shmem
        .team_split_strided(&world, 0, 1, n)
        .map_err(e2s)?
        .ok_or("PE missing from a full split")?;
    shmem.barrier(&again).map_err(e2s)?;
    shmem.team_destroy(again).map_err(e2s)?;
    let not_ours = |e: &Error| matches!(e, Error::InvalidArgument(_));
    expect_err(
        "destroy the world team",
        shmem.team_destroy(world),
        not_ours,
    )?;
    expect_err(
        "destroy the shared team",
        shmem.team_destroy(shared),
        not_ours,
    )?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: teams ok ({cycles} create/destroy cycles)");
    Ok(())
}
