//! `soak`: a long-running mixed workload whose every result is checked exactly, run on
//! demand (`tests/tests/soak.rs` runs it for a few seconds):
//!
//! ```text
//! shmemrun --profile novo-g -n 8 target/release/soak --minutes 10 [--seed N]
//! ```
//!
//! Every PE runs the same sequence of rounds; what each PE does in a round comes from
//! a seeded generator of (seed, round, PE), so every PE can work out what every other
//! PE wrote and check its own memory and its reads exactly. A round has three phases,
//! each ended by a barrier:
//!
//! 1. RMA: each PE puts (blocking or `put_nbi`) up to four pieces into its own slot of
//!    another PE's buffer, on the CPU or on a board, and gets (blocking or `get_nbi`)
//!    pieces of the other buffer of random PEs and places (buffers alternate by round,
//!    so nobody writes what is read). Then each PE compares its buffer, whole, with
//!    the model of every writer's puts, and its gets with the model.
//! 2. Atomics: `atomic_fetch_add` and `atomic_add` on counters of random PEs and places;
//!    each PE then checks its counters equal the sum of every increment aimed at them,
//!    and each fetched value lies between the counter's values before and after the
//!    round. Then every PE races a `atomic_compare_swap` on one word: exactly one
//!    must win.
//! 3. Collectives: broadcast, fcollect, collect, alltoall and reduce over the world or
//!    this PE's half (even or odd PEs, a split team), random sizes, roots, operators
//!    and places, each checked against a serial reference.
//!
//! Whether to start another round is itself a collective decision (a max-reduction of
//! "my time is up or I saw a mismatch"), so every PE runs the same rounds. At the end
//! each PE prints a summary line and PE 0 prints `soak ok: R rounds, X ops, 0
//! mismatches`; a mismatch or an error makes every PE exit non-zero. Works on both
//! conduits (`SHMEMPLUS_CONDUIT=shm|am`) and with or without boards.

use rand::Rng;
use shmemplus::{Error, Place, ReduceOp, Shmem, SymVec, Team};
use shmemplus_tests::hash;
use shmemplus_tests::pe::{fail_now, seeded};
use shmemplus_tests::reference::{expected, Call, Collective};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Elements of one writer's slot in a buffer (four pieces of `PIECE`).
const SLOT: usize = 256;
/// Elements of one piece: one put writes inside one piece.
const PIECE: usize = SLOT / 4;
/// Counter words per place.
const COUNTERS: usize = 8;
/// Largest collective block (elements per member).
const BLOCK: usize = 48;
/// Mismatches printed in full (all are counted).
const PRINTED: u64 = 20;

fn main() -> ExitCode {
    let opts = match Opts::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}\nusage: soak [--minutes M | --seconds S] [--seed N]");
            return ExitCode::from(2);
        }
    };
    let shmem = match shmemplus::init() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("soak: init failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&shmem, &opts) {
        Ok(clean) => {
            if let Err(e) = shmem.finalize() {
                eprintln!("soak: PE {}: finalize: {e}", shmem.my_pe());
                return ExitCode::FAILURE;
            }
            if clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        // Exit at once: the launcher ends the PEs that wait for this one.
        Err(e) => fail_now("soak", &format!("PE {}: {e}", shmem.my_pe())),
    }
}

struct Opts {
    duration: Duration,
    seed: u64,
}

impl Opts {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Opts, String> {
        let mut opts = Opts {
            duration: Duration::from_secs(60),
            seed: 1,
        };
        while let Some(a) = args.next() {
            let mut value = |what: &str| args.next().ok_or(format!("{what} needs a value"));
            let secs = |v: String, scale: f64| -> Result<Duration, String> {
                v.parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .and_then(|s| Duration::try_from_secs_f64(s * scale).ok())
                    .ok_or(format!("bad duration '{v}'"))
            };
            match a.as_str() {
                "--minutes" => opts.duration = secs(value("--minutes")?, 60.0)?,
                "--seconds" => opts.duration = secs(value("--seconds")?, 1.0)?,
                "--seed" => {
                    let v = value("--seed")?;
                    opts.seed = v.parse().map_err(|_| format!("bad seed '{v}'"))?;
                }
                other => return Err(format!("unknown argument '{other}'")),
            }
        }
        Ok(opts)
    }
}

/// Salts of the generators, one per use.
const S_RMA: u64 = 1;
const S_GET: u64 = 2;
const S_AMO: u64 = 3;
const S_CAS: u64 = 4;
const S_COLL: u64 = 5;
const S_DATA: u64 = 6;

/// One put of the RMA phase: writer's piece `piece` of its slot on `target`.
struct Put {
    target: u32,
    place: usize,
    piece: usize,
    at: usize,
    len: usize,
    nbi: bool,
}

/// The puts writer `w` makes in round `r`.
fn puts_of(seed: u64, r: u64, w: u32, n: u32, places: usize) -> Vec<Put> {
    let mut g = seeded(&[seed, S_RMA, r, u64::from(w)]);
    let count = g.random_range(1..=4);
    (0..count)
        .map(|piece| {
            let at = g.random_range(0..PIECE);
            Put {
                target: g.random_range(0..n),
                place: g.random_range(0..places),
                piece,
                at,
                len: g.random_range(1..=PIECE - at),
                nbi: g.random_bool(0.5),
            }
        })
        .collect()
}

/// The value writer `w` puts at element `i` of a buffer in round `r`.
fn datum(seed: u64, r: u64, w: u32, i: usize) -> u64 {
    hash(&[seed, S_DATA, r, u64::from(w), i as u64])
}

/// One atomic of the atomics phase.
struct Amo {
    target: u32,
    place: usize,
    word: usize,
    amount: u64,
    fetch: bool,
}

fn amos_of(seed: u64, r: u64, w: u32, n: u32, places: usize) -> Vec<Amo> {
    let mut g = seeded(&[seed, S_AMO, r, u64::from(w)]);
    let count = g.random_range(1..=6);
    (0..count)
        .map(|_| Amo {
            target: g.random_range(0..n),
            place: g.random_range(0..places),
            word: g.random_range(0..COUNTERS),
            amount: g.random_range(1..=1000),
            fetch: g.random_bool(0.5),
        })
        .collect()
}

/// Symmetric objects, per place (index 0 is the CPU, then the boards used).
struct Objs {
    places: Vec<Place>,
    /// Two RMA buffers per place (by round parity), `n * SLOT` elements.
    bufs: Vec<[SymVec<u64>; 2]>,
    counters: Vec<SymVec<u64>>,
    cas: Vec<SymVec<u64>>,
    /// Collective sources and destinations, `n * BLOCK` elements.
    coll_src: Vec<SymVec<u64>>,
    coll_dst: Vec<SymVec<u64>>,
    /// This PE's landing area of `get_nbi` (CPU), `4 * PIECE` elements.
    landing: SymVec<u64>,
    /// One word for the round decision and the final statistics (CPU).
    vote: SymVec<u64>,
    stats: SymVec<u64>,
    all_stats: SymVec<u64>,
}

impl Objs {
    fn new(shmem: &Shmem) -> Result<Objs, Error> {
        let n = shmem.n_pes() as usize;
        let mut places = vec![Place::Cpu];
        let boards = shmem.fpgas();
        if boards > 0 {
            places.push(Place::Fpga(0));
        }
        if boards > 1 {
            places.push(Place::Fpga(boards - 1));
        }
        let each = |len: usize| -> Result<Vec<SymVec<u64>>, Error> {
            places.iter().map(|&p| shmem.alloc(len, p)).collect()
        };
        let mut bufs = Vec::new();
        for &p in &places {
            bufs.push([shmem.alloc(n * SLOT, p)?, shmem.alloc(n * SLOT, p)?]);
        }
        Ok(Objs {
            bufs,
            counters: each(COUNTERS)?,
            cas: each(1)?,
            coll_src: each(n * BLOCK)?,
            coll_dst: each(n * BLOCK)?,
            landing: shmem.alloc(4 * PIECE, Place::Cpu)?,
            vote: shmem.alloc(1, Place::Cpu)?,
            stats: shmem.alloc(STATS, Place::Cpu)?,
            all_stats: shmem.alloc(STATS * n, Place::Cpu)?,
            places,
        })
    }
}

/// Words of the final statistics: rounds, rma, atomics, collectives, barriers,
/// mismatches.
const STATS: usize = 6;

/// Counts of what this PE did and found.
#[derive(Default)]
struct Tally {
    rounds: u64,
    rma: u64,
    amo: u64,
    coll: u64,
    sync: u64,
    mismatches: u64,
}

impl Tally {
    fn ops(&self) -> u64 {
        self.rma + self.amo + self.coll + self.sync
    }

    /// Records a mismatch (printed in full for the first few).
    fn mismatch(&mut self, me: u32, what: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.mismatches <= PRINTED {
            eprintln!("soak: PE {me}: MISMATCH: {}", what());
        }
    }
}

/// What every PE knows of every PE's memory: the RMA buffers and counters.
struct Model {
    /// [place][parity][pe] -> buffer contents.
    bufs: Vec<[Vec<Vec<u64>>; 2]>,
    /// [place][pe][word].
    counters: Vec<Vec<[u64; COUNTERS]>>,
    /// [place][pe]: the compare-and-swap word.
    cas: Vec<Vec<u64>>,
}

impl Model {
    fn new(n: usize, places: usize) -> Model {
        Model {
            bufs: (0..places)
                .map(|_| [vec![vec![0; n * SLOT]; n], vec![vec![0; n * SLOT]; n]])
                .collect(),
            counters: vec![vec![[0; COUNTERS]; n]; places],
            cas: vec![vec![0; n]; places],
        }
    }
}

/// The soak: returns whether it ended without a mismatch (an error ends it at once).
fn run(shmem: &Shmem, opts: &Opts) -> Result<bool, String> {
    let start = Instant::now();
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let nu = n as usize;
    let o = Objs::new(shmem).map_err(|e| format!("allocating: {e}"))?;
    let np = o.places.len();
    let world = shmem.team_world();
    // This PE's half of the world: the even or the odd PEs (a split team).
    let evens = shmem
        .team_split_strided(&world, 0, 2, n.div_ceil(2))
        .map_err(|e| format!("split: {e}"))?;
    let odds = if n > 1 {
        shmem
            .team_split_strided(&world, 1, 2, n / 2)
            .map_err(|e| format!("split: {e}"))?
    } else {
        None
    };
    let half = evens.or(odds).ok_or("this PE is in neither half")?;
    let mut model = Model::new(nu, np);
    let mut t = Tally::default();
    let deadline = start + opts.duration;
    loop {
        // Another round? Every PE votes; all follow the max.
        let vote = u64::from(Instant::now() >= deadline || t.mismatches > 0);
        check(shmem.local_write(&o.vote, 0, &[vote]), "vote")?;
        check(
            shmem.reduce(&world, &o.vote, &o.vote, 1, ReduceOp::Max),
            "vote reduce",
        )?;
        t.coll += 1;
        if check(shmem.local_read_one(&o.vote, 0), "vote read")? != 0 {
            break;
        }
        t.rounds += 1;
        let r = t.rounds;
        rma_phase(shmem, opts.seed, r, &o, &mut model, &mut t)?;
        amo_phase(shmem, opts.seed, r, &o, &mut model, &mut t)?;
        coll_phase(shmem, opts.seed, r, &o, [&world, &half], &mut t)?;
        check(shmem.barrier_all(), "end of round")?;
        t.sync += 1;
    }
    // Statistics: every PE's to every PE; PE 0 prints the totals.
    let secs = start.elapsed().as_secs_f64();
    let mine = [t.rounds, t.rma, t.amo, t.coll, t.sync, t.mismatches];
    check(shmem.local_write(&o.stats, 0, &mine), "stats")?;
    check(
        shmem.fcollect(&world, &o.all_stats, &o.stats, STATS),
        "stats fcollect",
    )?;
    let all = check(shmem.local_to_vec(&o.all_stats), "stats read")?;
    println!(
        "PE {me}: {} rounds, {} ops ({} rma, {} atomics, {} collectives, {} barriers), {} mismatches, {secs:.1} s, places {:?}",
        t.rounds,
        t.ops(),
        t.rma,
        t.amo,
        t.coll,
        t.sync,
        t.mismatches,
        o.places
    );
    check(shmem.barrier_all(), "summary")?;
    let ops: u64 = all.chunks(STATS).map(|s| s[1..5].iter().sum::<u64>()).sum();
    let mismatches: u64 = all.chunks(STATS).map(|s| s[5]).sum();
    let rounds_agree = all.chunks(STATS).all(|s| s[0] == t.rounds);
    if me == 0 {
        if mismatches == 0 && rounds_agree {
            println!("soak ok: {} rounds, {ops} ops, 0 mismatches", t.rounds);
        } else {
            println!(
                "soak FAILED: {} rounds, {ops} ops, {mismatches} mismatches{}",
                t.rounds,
                if rounds_agree {
                    ""
                } else {
                    ", PEs ran different numbers of rounds"
                }
            );
        }
    }
    Ok(mismatches == 0 && rounds_agree)
}

fn check<T>(r: shmemplus::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Phase 1: puts into buffer `r % 2`, gets from buffer `(r + 1) % 2` (which nobody
/// writes this round), then checks.
fn rma_phase(
    shmem: &Shmem,
    seed: u64,
    r: u64,
    o: &Objs,
    model: &mut Model,
    t: &mut Tally,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let np = o.places.len();
    let (wb, rb) = ((r % 2) as usize, ((r + 1) % 2) as usize);
    for p in puts_of(seed, r, me, n, np) {
        let base = me as usize * SLOT + p.piece * PIECE + p.at;
        let data: Vec<u64> = (base..base + p.len)
            .map(|i| datum(seed, r, me, i))
            .collect();
        let dest = &o.bufs[p.place][wb];
        if p.nbi {
            check(shmem.put_nbi(dest, base, &data, p.target), "put_nbi")?;
        } else {
            check(shmem.put(dest, base, &data, p.target), "put")?;
        }
        t.rma += 1;
    }
    // Gets: up to four pieces of random PEs' other buffer.
    let mut g = seeded(&[seed, S_GET, r, u64::from(me)]);
    let mut pending = Vec::new();
    let mut got_now = Vec::new();
    for k in 0..g.random_range(1..=4usize) {
        let (pe, place) = (g.random_range(0..n), g.random_range(0..np));
        let len = g.random_range(1..=PIECE);
        let at = g.random_range(0..=n as usize * SLOT - len);
        let src = &o.bufs[place][rb];
        if g.random_bool(0.5) {
            check(
                shmem.get_nbi(&o.landing, k * PIECE, src, at, len, pe),
                "get_nbi",
            )?;
            pending.push((k, pe, place, at, len));
        } else {
            let mut out = vec![0u64; len];
            check(shmem.get(src, at, &mut out, pe), "get")?;
            got_now.push((pe, place, at, out));
        }
        t.rma += 1;
    }
    check(shmem.quiet(), "quiet")?;
    for (k, pe, place, at, len) in pending {
        let mut out = vec![0u64; len];
        check(shmem.local_read(&o.landing, k * PIECE, &mut out), "landing")?;
        got_now.push((pe, place, at, out));
    }
    for (pe, place, at, out) in got_now {
        let want = &model.bufs[place][rb][pe as usize][at..at + out.len()];
        if let Some(i) = (0..out.len()).find(|&i| out[i] != want[i]) {
            t.mismatch(me, || {
                format!(
                    "round {r}: get of PE {pe}'s {} buffer {rb} at {at}: element {} is {:#x}, want {:#x}",
                    o.places[place],
                    at + i,
                    out[i],
                    want[i]
                )
            });
        }
    }
    check(shmem.barrier_all(), "rma barrier")?;
    t.sync += 1;
    // Every writer's puts into the model, then this PE's buffers against it.
    for w in 0..n {
        for p in puts_of(seed, r, w, n, np) {
            let base = w as usize * SLOT + p.piece * PIECE + p.at;
            let buf = &mut model.bufs[p.place][wb][p.target as usize];
            for (i, slot) in buf[base..base + p.len].iter_mut().enumerate() {
                *slot = datum(seed, r, w, base + i);
            }
        }
    }
    for (place, bufs) in o.bufs.iter().enumerate() {
        let got = check(shmem.local_to_vec(&bufs[wb]), "own buffer")?;
        let want = &model.bufs[place][wb][me as usize];
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            let writer = i / SLOT;
            t.mismatch(me, || {
                format!(
                    "round {r}: own {} buffer {wb}: element {i} (slot of PE {writer}) is {:#x}, want {:#x}",
                    o.places[place], got[i], want[i]
                )
            });
        }
    }
    Ok(())
}

/// Phase 2: fetch-adds and adds on counters, then a compare-and-swap race.
fn amo_phase(
    shmem: &Shmem,
    seed: u64,
    r: u64,
    o: &Objs,
    model: &mut Model,
    t: &mut Tally,
) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let np = o.places.len();
    let before = model.counters.clone();
    // The counters after the round: every PE's increments.
    for w in 0..n {
        for a in amos_of(seed, r, w, n, np) {
            let c = &mut model.counters[a.place][a.target as usize][a.word];
            *c = c.wrapping_add(a.amount);
        }
    }
    for a in amos_of(seed, r, me, n, np) {
        let obj = &o.counters[a.place];
        if a.fetch {
            let old = check(
                shmem.atomic_fetch_add(obj, a.word, a.amount, a.target),
                "atomic_fetch_add",
            )?;
            let lo = before[a.place][a.target as usize][a.word];
            let hi = model.counters[a.place][a.target as usize][a.word];
            // No wrap in practice: at most 6 * 1000 per PE and round.
            if old < lo || old.wrapping_add(a.amount) > hi {
                t.mismatch(me, || {
                    format!(
                        "round {r}: fetch_add {} on PE {}'s {} counter {} returned {old}, outside {lo}..={}",
                        a.amount,
                        a.target,
                        o.places[a.place],
                        a.word,
                        hi - a.amount
                    )
                });
            }
        } else {
            check(
                shmem.atomic_add(obj, a.word, a.amount, a.target),
                "atomic_add",
            )?;
        }
        t.amo += 1;
    }
    // The race: every PE swaps in (old + 1 + its number) if the word still holds old.
    let mut g = seeded(&[seed, S_CAS, r]);
    let (home, place) = (g.random_range(0..n), g.random_range(0..np));
    let old = model.cas[place][home as usize];
    let seen = check(
        shmem.atomic_compare_swap(&o.cas[place], 0, old, old + 1 + u64::from(me), home),
        "atomic_compare_swap",
    )?;
    let won = seen == old;
    t.amo += 1;
    check(shmem.barrier_all(), "atomics barrier")?;
    t.sync += 1;
    let own = check(
        shmem.local_to_vec(&o.counters[0]).and_then(|cpu| {
            let mut all = vec![cpu];
            for c in &o.counters[1..] {
                all.push(shmem.local_to_vec(c)?);
            }
            Ok(all)
        }),
        "own counters",
    )?;
    for (place, got) in own.iter().enumerate() {
        let want = &model.counters[place][me as usize];
        if got[..] != want[..] {
            t.mismatch(me, || {
                format!(
                    "round {r}: own {} counters are {got:?}, want {want:?}",
                    o.places[place]
                )
            });
        }
    }
    let now = check(shmem.atomic_fetch(&o.cas[place], 0, home), "atomic_fetch")?;
    t.amo += 1;
    let winner = now.wrapping_sub(old).wrapping_sub(1);
    if winner >= u64::from(n) || (winner == u64::from(me)) != won {
        t.mismatch(me, || {
            format!(
                "round {r}: compare_swap race on PE {home}'s {}: word {now} after {old}, this PE {}",
                o.places[place],
                if won { "won" } else { "lost" }
            )
        });
    }
    model.cas[place][home as usize] = now;
    // Nobody races on the word again before everyone has read it.
    check(shmem.barrier_all(), "race barrier")?;
    t.sync += 1;
    Ok(())
}

/// Phase 3: two random collectives over the world or this PE's half.
fn coll_phase(
    shmem: &Shmem,
    seed: u64,
    r: u64,
    o: &Objs,
    teams: [&Team; 2],
    t: &mut Tally,
) -> Result<(), String> {
    let me = shmem.my_pe();
    let np = o.places.len();
    for c in 0..2u64 {
        // The same choice on every PE (the halves differ only in membership).
        let mut g = seeded(&[seed, S_COLL, r, c]);
        let kind = Collective::ALL[g.random_range(0..Collective::ALL.len())];
        let team = teams[g.random_range(0..2)];
        let (sp, dp) = (g.random_range(0..np), g.random_range(0..np));
        let in_place = g.random_bool(0.25);
        let nelems = g.random_range(0..=BLOCK);
        let op = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Xor][g.random_range(0..4)];
        let root_raw = g.random_range(0..u32::MAX);
        let m = team.n_pes() as usize;
        let me_t = team.my_pe() as usize;
        let root = root_raw % m as u32;
        let world_of = |j: usize| team.world_pe(j as u32).unwrap_or(u32::MAX);
        let val = |w: u32, i: usize| hash(&[seed, S_COLL, r, c, u64::from(w), i as u64]);
        // Collect: a count of every member's own.
        let count_of =
            |w: u32| (hash(&[seed, S_COLL, r, c, u64::from(w)]) % (BLOCK as u64 + 1)) as usize;
        let (src_len, out_len) = match kind {
            Collective::Broadcast | Collective::Reduce => (nelems, nelems),
            Collective::Fcollect => (nelems, nelems * m),
            Collective::Collect => (count_of(me), (0..m).map(|j| count_of(world_of(j))).sum()),
            Collective::Alltoall => (nelems * m, nelems * m),
        };
        let src = &o.coll_src[sp];
        let same = in_place && matches!(kind, Collective::Broadcast | Collective::Reduce);
        let dst = if same { src } else { &o.coll_dst[dp] };
        let mine: Vec<u64> = (0..src_len).map(|i| val(me, i)).collect();
        check(shmem.local_write(src, 0, &mine), "collective source")?;
        let what = format!(
            "round {r}: {kind:?} of {nelems} on a team of {m} (root {root}, {op:?}), {} -> {}{}",
            src.place(),
            dst.place(),
            if same { " in place" } else { "" }
        );
        let members: Vec<u32> = (0..m).map(world_of).collect();
        let call = Call {
            kind,
            members: &members,
            me: me_t,
            nelems,
            root: root as usize,
            op,
        };
        call.run(shmem, team, dst, src, (src_len, out_len))
            .map_err(|e| format!("{what}: {e}"))?;
        t.coll += 1;
        let want = expected(&call, count_of, val);
        let mut got = vec![0u64; out_len];
        check(shmem.local_read(dst, 0, &mut got), "collective result")?;
        if let Some(i) = (0..out_len).find(|&i| got[i] != want[i]) {
            t.mismatch(me, || {
                format!("{what}: element {i} is {:#x}, want {:#x}", got[i], want[i])
            });
        }
        // Nobody overwrites a source or destination another member still reads.
        check(shmem.barrier(team), "collective barrier")?;
        t.sync += 1;
    }
    Ok(())
}
