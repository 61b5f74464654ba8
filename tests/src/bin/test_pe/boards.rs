//! Board (mock FPGA) scenarios: `routes` (random puts and gets over every route and
//! place against a reference model), `board-errors` (each bad board input gets its
//! typed error, the board stays usable), `board-memory` (boards start lazily) and
//! `staged-kernel` (a kernel is ordered after the PE's puts into its board).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shmemplus::{Error, Place};
use shmemplus_tests::pe::{e2s, expect_err};

/// The places every PE has an object on in the `routes` test.
const PLACES: [Place; 3] = [Place::Cpu, Place::Fpga(0), Place::Fpga(1)];

/// Bytes of the region each writer owns in every object.
const REGION: usize = 8 << 10;

/// One random put of writer `w` into region `w` of `(target, PLACES[place])`: from a
/// host buffer (`from == None`) or from the writer's own source object on
/// `PLACES[from]` (its fixed pattern), at `off` for `len` bytes, reading the source at
/// `src_off`.
#[derive(Debug, Clone, Copy)]
struct RoutePut {
    target: usize,
    place: usize,
    from: Option<usize>,
    off: usize,
    len: usize,
    src_off: usize,
}

/// The fixed content of writer `w`'s source object on place `p`.
fn source_byte(w: usize, p: usize, i: usize) -> u8 {
    (w * 59 + p * 17 + i * 31 + 1) as u8
}

/// The bytes written by put number `k` of writer `w`.
fn route_bytes(w: usize, k: usize, op: &RoutePut) -> Vec<u8> {
    match op.from {
        None => (0..op.len)
            .map(|i| (w * 13 + k * 7 + i * 3 + 2) as u8)
            .collect(),
        Some(p) => (0..op.len)
            .map(|i| source_byte(w, p, op.src_off + i))
            .collect(),
    }
}

fn route_ops(seed: u64, w: usize, n: usize, count: usize) -> Vec<RoutePut> {
    let mut rng = StdRng::seed_from_u64(seed ^ ((w as u64) << 32));
    (0..count)
        .map(|k| {
            let off = rng.random_range(0..REGION);
            let max = REGION - off;
            // Sizes below and around the 32-byte DMA minimum, odd sizes, and large ones.
            let len = match k % 3 {
                0 => rng.random_range(0..=max.min(40)),
                1 => rng.random_range(0..=max.min(700)),
                _ => rng.random_range(0..=max),
            };
            RoutePut {
                target: rng.random_range(0..n),
                place: rng.random_range(0..PLACES.len()),
                from: rng
                    .random_bool(0.5)
                    .then(|| rng.random_range(0..PLACES.len())),
                off,
                len,
                src_off: rng.random_range(0..=REGION - len),
            }
        })
        .collect()
}

/// What `(target, PLACES[place])` holds after every writer's puts: the reference model.
fn route_reference(seed: u64, target: usize, place: usize, n: usize, count: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * REGION];
    for w in 0..n {
        for (k, op) in route_ops(seed, w, n, count).iter().enumerate() {
            if op.target == target && op.place == place {
                let base = w * REGION + op.off;
                v[base..base + op.len].copy_from_slice(&route_bytes(w, k, op));
            }
        }
    }
    v
}

/// Random puts over every route and place (CPU and two boards, local and remote PEs,
/// from host buffers and from CPU or board objects), then random gets and get_intos,
/// all checked against a plain in-memory reference model.
pub(crate) fn routes(seed: u64, count: usize) -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe() as usize, shmem.n_pes() as usize);
    if shmem.fpgas() < 2 {
        return Err("the routes test needs 2 boards per node (--fpgas 2)".into());
    }
    let objs = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(n * REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    let sources = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    for (p, src) in sources.iter().enumerate() {
        let pattern: Vec<u8> = (0..REGION).map(|i| source_byte(me, p, i)).collect();
        shmem.local_write(src, 0, &pattern).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for (k, op) in route_ops(seed, me, n, count).iter().enumerate() {
        let dest = &objs[op.place];
        let at = me * REGION + op.off;
        match op.from {
            None => shmem.put(dest, at, &route_bytes(me, k, op), op.target as u32),
            Some(p) => shmem.put_from(dest, at, &sources[p], op.src_off, op.len, op.target as u32),
        }
        .map_err(|e| format!("put {k} {op:?}: {e}"))?;
    }
    shmem.barrier_all().map_err(e2s)?;
    for (p, obj) in objs.iter().enumerate() {
        let mine = shmem.local_to_vec(obj).map_err(e2s)?;
        let want = route_reference(seed, me, p, n, count);
        if let Some(i) = (0..mine.len()).find(|&i| mine[i] != want[i]) {
            return Err(format!(
                "PE {me} {:?}: byte {i} (writer {}, offset {}) is {} but should be {}",
                PLACES[p],
                i / REGION,
                i % REGION,
                mine[i],
                want[i]
            ));
        }
    }
    println!("PE {me}: {count} random puts per PE over every route verified");
    // Gets from every (PE, place), into host buffers and into this PE's objects.
    let scratch = PLACES
        .iter()
        .map(|&p| shmem.alloc::<u8>(n * REGION, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(me as u64));
    for k in 0..count {
        let (t, p) = (rng.random_range(0..n), rng.random_range(0..PLACES.len()));
        let want = route_reference(seed, t, p, n, count);
        let off = rng.random_range(0..want.len());
        let len = rng.random_range(0..=(want.len() - off).min(if k % 2 == 0 { 64 } else { 5000 }));
        let got = if k % 2 == 0 {
            let mut buf = vec![0u8; len];
            shmem.get(&objs[p], off, &mut buf, t as u32).map_err(e2s)?;
            buf
        } else {
            let into = rng.random_range(0..PLACES.len());
            let at = rng.random_range(0..=scratch[into].len() - len);
            shmem
                .get_into(&scratch[into], at, &objs[p], off, len, t as u32)
                .map_err(e2s)?;
            let mut buf = vec![0u8; len];
            shmem
                .local_read(&scratch[into], at, &mut buf)
                .map_err(e2s)?;
            buf
        };
        if got[..] != want[off..off + len] {
            return Err(format!(
                "PE {me}: get {k} of {len} bytes at {off} from PE {t} {:?} differs",
                PLACES[p]
            ));
        }
    }
    println!("PE {me}: {count} random gets verified");
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: routes ok");
    shmem.finalize().map_err(e2s)
}

/// Each bad input of the boards gets its typed error, and the board stays usable.
pub(crate) fn board_errors() -> Result<(), String> {
    use shmemplus::fpga_mock::kernels::standard_bitfile;
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let boards = shmem.fpgas();
    if boards == 0 {
        expect_err("no boards", shmem.alloc::<u8>(64, Place::Fpga(0)), |e| {
            matches!(e, Error::NoBoards)
        })?;
        println!("PE {me}: board errors ok");
        return shmem.finalize().map_err(e2s);
    }
    expect_err(
        "board out of range",
        shmem.alloc::<u8>(64, Place::Fpga(boards)),
        |e| matches!(e, Error::InvalidBoard { .. }),
    )?;
    let v = shmem.alloc::<u32>(16, Place::Fpga(0)).map_err(e2s)?;
    expect_err(
        "FPGA put past the end",
        shmem.put(&v, 10, &[1; 7], (me + 1) % n),
        |e| matches!(e, Error::OutOfBounds { .. }),
    )?;
    expect_err(
        "FPGA heap exhausted",
        shmem.alloc::<u8>(1 << 40, Place::Fpga(0)),
        |e| matches!(e, Error::BoardHeapExhausted { .. }),
    )?;
    expect_err(
        "kernel before configure",
        shmem.fpga_start(0, "add-one", &[0, 1]),
        |e| e.to_string().contains("configure"),
    )?;
    shmem.fpga_configure(0, standard_bitfile()).map_err(e2s)?;
    expect_err("unknown kernel", shmem.fpga_start(0, "fft", &[]), |e| {
        e.to_string().contains("add-one")
    })?;
    let run = shmem.fpga_start(0, "panic", &[]).map_err(e2s)?;
    match run.wait() {
        Err(e) => println!("panicking kernel: {e}"),
        Ok(_) => return Err("a panicking kernel reported DONE".into()),
    }
    // The board is still usable: DMA and another kernel work.
    shmem.local_write(&v, 0, &[41; 16]).map_err(e2s)?;
    let run = shmem
        .fpga_start(0, "add-one", &[v.heap_offset() as u64, 16])
        .map_err(e2s)?;
    run.wait().map_err(|e| e.to_string())?;
    if shmem.local_to_vec(&v).map_err(e2s)? != vec![42; 16] {
        return Err("add-one after a panic gave wrong values".into());
    }
    expect_err(
        "board memory borrowed",
        // SAFETY: `v` is on a board, so the call must refuse and return no slice; if it
        // wrongly returned one, expect_err drops it unread, and no PE puts into `v`
        // between the DMA write above and the barrier below.
        unsafe { shmem.local_slice(&v) },
        |e| matches!(e, Error::PlaceUnavailable(_)),
    )?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: board errors ok");
    shmem.finalize().map_err(e2s)
}

/// A job whose nodes each carry 4 boards of 2 GiB: after start-up and a small object
/// on every board, the boards' resident memory (summed over the job's PEs, each
/// reporting its share) stays far below their size. Each PE fails above 25 MB, so a job
/// of 4 nodes stays under 100 MB.
pub(crate) fn board_memory() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    let boards = shmem.fpgas();
    let objs = (0..boards)
        .map(|b| shmem.alloc::<u64>(1024, Place::Fpga(b)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e2s)?;
    for o in &objs {
        shmem.local_write(o, 0, &[me as u64; 1024]).map_err(e2s)?;
    }
    shmem.barrier_all().map_err(e2s)?;
    let resident = shmem.fpga_resident_bytes();
    let total = u64::from(boards) * shmem.fpga_heap_bytes();
    println!(
        "PE {me}: {boards} boards, {} MiB of board memory, {:.2} MiB resident",
        total >> 20,
        resident as f64 / (1 << 20) as f64
    );
    if total < (1 << 30) || resident > 25 << 20 {
        return Err(format!("PE {me}: {resident} bytes resident of {total}"));
    }
    shmem.barrier_all().map_err(e2s)?;
    shmem.finalize().map_err(e2s)
}

/// `staged-kernel`: a kernel started right after a `put_nbi` into the PE's own board
/// (no `quiet`) sees the put's bytes and starts no earlier than the put's modeled
/// delivery (`Shmem::kernel_start`'s ordering rule), and the caller is not held by
/// the transfer (its clock after `kernel_start` is well short of the delivery), on
/// either clock. On the virtual clock, with 2 PEs, also
/// `own_writes_after_a_board_put`. Needs a profile that prices board transfers
/// (novo-g). Prints the instants it checked.
pub(crate) fn staged_kernel() -> Result<(), String> {
    use shmemplus::config::ClockKind;
    use shmemplus::fpga_mock::kernels::standard_bitfile;
    use shmemplus::RmaOp;
    // 16 MiB: on novo-g a DMA of about 50 ms, so that a caller held for it stands out
    // from a busy host's noise on the wall clock (with 4 MiB, 14 ms, a CI run on two
    // cores held a `kernel_start` that does not wait 9.5 ms: preempted, not waiting).
    const WORDS: usize = 1 << 22;
    let shmem = shmemplus::init().map_err(e2s)?;
    let me = shmem.my_pe();
    if shmem.fpgas() == 0 {
        return Err("this mode needs a board per node".into());
    }
    shmem.count_cpu_time(false);
    let v = shmem.alloc::<u32>(WORDS, Place::Fpga(0)).map_err(e2s)?;
    shmem.fpga_configure(0, standard_bitfile()).map_err(e2s)?;
    let put_s = shmem
        .modeled_route_seconds(RmaOp::Put, None, Place::Fpga(0), me, WORDS * 4)
        .map_err(e2s)?
        .filter(|&s| s > 0.0)
        .ok_or("the profile prices no board transfer (use novo-g)")?;
    let data: Vec<u32> = (0..WORDS as u32).map(|i| i.wrapping_mul(7) ^ me).collect();
    let t0 = shmem.now();
    shmem.put_nbi(&v, 0, &data, me).map_err(e2s)?;
    let issued = (shmem.now() - t0).as_secs_f64();
    let run = shmem
        .kernel_start(0, "add-one", &[v.heap_offset() as u64, WORDS as u64])
        .map_err(e2s)?;
    let started = (shmem.now() - t0).as_secs_f64();
    let done = run.wait().map_err(e2s)?;
    let ended = (shmem.now() - t0).as_secs_f64();
    println!(
        "PE {me}: put {put_s:.6} s modeled, kernel {:.6} s; after kernel_start {started:.6} \
         s, DONE at {ended:.6} s",
        done.modeled_s
    );
    // 1 ns of rounding per instant.
    if ended + 2e-9 < put_s + done.modeled_s {
        return Err(format!(
            "DONE at {ended} s, before the put's delivery ({put_s} s) plus the kernel's \
             {} s: the kernel started before its input arrived",
            done.modeled_s
        ));
    }
    // Timed from the put's return (on the wall clock the put's own copy takes real
    // time too): held for the delivery, the call would last what was left of it.
    let left = put_s - issued;
    if left > 0.0 && started - issued >= left / 2.0 {
        return Err(format!(
            "kernel_start held the caller {} s of the {left} s left of a {put_s} s \
             transfer ({:?} clock)",
            started - issued,
            shmem.clock()
        ));
    }
    let want: Vec<u32> = data.iter().map(|x| x.wrapping_add(1)).collect();
    if shmem.local_to_vec(&v).map_err(e2s)? != want {
        return Err("the kernel did not see the put's bytes".into());
    }
    shmem.quiet().map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if shmem.clock() == ClockKind::Virtual {
        // 256 KiB (a DMA of 2.7 ms) as before the kernel check grew.
        let small = &data[..64 << 10];
        let small_s = shmem
            .modeled_route_seconds(RmaOp::Put, None, Place::Fpga(0), me, small.len() * 4)
            .map_err(e2s)?
            .ok_or("the profile prices no board transfer")?;
        own_writes_after_a_board_put(&shmem, &v, small, small_s)?;
    }
    println!("PE {me}: staged kernel ok");
    shmem.finalize().map_err(e2s)
}

/// Virtual clock, 2 PEs: PE 0 puts `data` into its own board with `put_nbi` and then
/// sets a word in its own CPU memory, which PE 1 polls. Without a `fence` between
/// them, the word is not held back by the board's DMA (PE 1 sees it well before the
/// put's delivery, `put_s` after PE 0's put); with one, it is (PE 1 sees it no
/// earlier than the delivery).
fn own_writes_after_a_board_put(
    shmem: &shmemplus::Shmem,
    board: &shmemplus::SymVec<u32>,
    data: &[u32],
    put_s: f64,
) -> Result<(), String> {
    let me = shmem.my_pe();
    let word = shmem.alloc::<u64>(1, Place::Cpu).map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    for (round, fenced) in [(1u64, false), (2, true)] {
        let t0 = shmem.now();
        if me == 0 {
            shmem.put_nbi(board, 0, data, 0).map_err(e2s)?;
            if fenced {
                shmem.fence().map_err(e2s)?;
            }
            shmem.atomic_set(&word, 0, round, 0).map_err(e2s)?;
        } else {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while shmem.atomic_fetch(&word, 0, 0).map_err(e2s)? != round {
                if std::time::Instant::now() > deadline {
                    return Err(format!("PE 0's word never became {round}"));
                }
                std::thread::yield_now();
            }
            let saw = (shmem.now() - t0).as_secs_f64();
            println!("PE {me}: saw PE 0's word (fenced {fenced}) at {saw:.6} s");
            match fenced {
                false if saw >= put_s / 2.0 => {
                    return Err(format!(
                        "PE 0's write to itself, after a put_nbi into its board and no \
                         fence, was seen at {saw} s: held back by the {put_s} s DMA"
                    ))
                }
                true if saw + 2e-9 < put_s => {
                    return Err(format!(
                        "PE 0's write to itself after put_nbi + fence was seen at {saw} \
                         s, before the put's delivery at {put_s} s"
                    ))
                }
                _ => {}
            }
        }
        shmem.barrier_all().map_err(e2s)?;
    }
    shmem.free(word).map_err(e2s)
}
