//! `shmemplus-statics-pe`: PE programs for `tests/statics.rs`, on symmetric global
//! data (`init_with(symmetric_data)`): Rust statics reached by other PEs through
//! `locate_addr` and `place_space`, as a C program's globals are. A PE prints what it
//! checked and exits 0 only if every check held.

use shmemplus::{Cmp, InitOptions, Place, Shmem};
use shmemplus_tests::ensure_eq;
use shmemplus_tests::pe::{e2s, exit_code, fail_now};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

const PROGRAM: &str = "statics-pe";
const SLOTS: usize = 1024;

/// Zero-initialised (`.bss`): every PE adds one to PE 0's copy.
static COUNTER: AtomicU64 = AtomicU64::new(0);
/// 8 KiB of `.bss`: PE i puts into PE i + 1's copy.
static SLOTS_OF_LEFT: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Initialised (`.data`): its value must survive the remap.
static INITIAL: AtomicU64 = AtomicU64::new(0x5eed_0000_0000_0001);
/// Written before `init`: that write must survive the remap too.
static BEFORE_INIT: AtomicU64 = AtomicU64::new(0);
/// Set by PE 0 on every PE after the barrier; each PE waits for it.
static GO: AtomicU64 = AtomicU64::new(0);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str).unwrap_or("") {
        "ring" => ring(),
        "solo" => solo(),
        "mismatch" => mismatch(),
        other => Err(format!("unknown mode '{other}'")),
    };
    exit_code(PROGRAM, result)
}

fn symmetric() -> Result<Shmem, String> {
    shmemplus::init_with(InitOptions::new().symmetric_data(true)).map_err(e2s)
}

/// The CPU offset of a global, checked to be in the static region and 8-aligned.
fn offset_of<T>(shmem: &Shmem, global: &T, what: &str) -> Result<usize, String> {
    let addr = global as *const T as *const u8;
    let (lo, len) = shmem
        .static_region()
        .ok_or("no static region after init_with(symmetric_data)")?;
    if !(lo as usize..lo as usize + len).contains(&(addr as usize)) {
        return Err(format!("{what} at {addr:p} is outside {lo:p}+{len}"));
    }
    match shmem.locate_addr(addr) {
        Some((Place::Cpu, off)) if off % 8 == 0 => Ok(off),
        other => Err(format!("locate_addr({what}) = {other:?}")),
    }
}

/// The line of /proc/self/maps of the mapping that holds `addr`.
fn mapping_of(addr: usize) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .find(|l| {
            let range = l.split_whitespace().next().unwrap_or("");
            let mut ends = range
                .split('-')
                .map(|x| usize::from_str_radix(x, 16).unwrap_or(0));
            let (a, b) = (ends.next().unwrap_or(0), ends.next().unwrap_or(0));
            (a..b).contains(&addr)
        })
        .unwrap_or("")
        .to_string()
}

/// Values and mapping before anything moves: written before init, read after.
fn check_survivors(shmem: &Shmem, backing: &str) -> Result<(), String> {
    ensure_eq!(
        INITIAL.load(Ordering::Relaxed),
        0x5eed_0000_0000_0001,
        "initialised global after init"
    );
    ensure_eq!(
        BEFORE_INIT.load(Ordering::Relaxed),
        0xbef0_4e00,
        "global written before init"
    );
    let map = mapping_of(&COUNTER as *const _ as usize);
    let shared = map
        .split_whitespace()
        .nth(1)
        .is_some_and(|p| p.ends_with('s'));
    if !shared || !map.contains(backing) {
        return Err(format!("globals are not in the segment: '{map}'"));
    }
    println!("PE {}: globals backed by {backing}", shmem.my_pe());
    Ok(())
}

/// PE i puts into PE i + 1's array, every PE adds one to PE 0's counter, each PE gets
/// back what it put; then PE 0 reads its counter through the static itself.
fn ring() -> Result<(), String> {
    BEFORE_INIT.store(0xbef0_4e00, Ordering::Relaxed);
    let shmem = symmetric()?;
    let me = shmem.my_pe();
    if let Err(e) = ring_on(&shmem) {
        fail_now(PROGRAM, &e);
    }
    shmem.finalize().map_err(e2s)?;
    // The globals stay valid and keep their values after finalize.
    if me == 0 {
        let n = COUNTER.load(Ordering::Relaxed);
        println!("PE 0: counter after finalize {n}");
    }
    Ok(())
}

fn ring_on(shmem: &Shmem) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    check_survivors(shmem, "/dev/shm/shmemplus-")?;
    let counter = offset_of(shmem, &COUNTER, "COUNTER")? / 8;
    let slots = offset_of(shmem, &SLOTS_OF_LEFT, "SLOTS_OF_LEFT")? / 8;
    let go = offset_of(shmem, &GO, "GO")? / 8;
    let space = shmem
        .place_space::<u64>(shmemplus::Place::Cpu)
        .map_err(e2s)?;
    // A heap object is reached through the same space at its own offset.
    let heap = shmem.alloc::<u64>(4, Place::Cpu).map_err(e2s)?;
    let heap_at = shmem
        .locate_addr(shmem.local_addr(&heap).map_err(e2s)?.cast())
        .ok_or("heap object not located")?
        .1
        / 8;
    let right = (me + 1) % n;
    let mine: Vec<u64> = (0..SLOTS as u64).map(|k| u64::from(me) << 32 | k).collect();
    shmem.put(&space, slots, &mine, right).map_err(e2s)?;
    shmem
        .p(&space, heap_at + 1, u64::from(me) + 100, right)
        .map_err(e2s)?;
    shmem
        .atomic_fetch_add(&space, counter, 1u64, 0)
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    if me == 0 {
        // A plain load through the static: every PE's add landed in the variable.
        ensure_eq!(
            COUNTER.load(Ordering::Relaxed),
            u64::from(n),
            "PE 0's counter"
        );
        for pe in 0..n {
            shmem.p(&space, go, 1u64, pe).map_err(e2s)?;
        }
    }
    shmem.wait_until(&space, go, Cmp::Eq, 1u64).map_err(e2s)?;
    ensure_eq!(GO.load(Ordering::Acquire), 1, "GO through the static");
    let left = (me + n - 1) % n;
    for (k, slot) in SLOTS_OF_LEFT.iter().enumerate() {
        ensure_eq!(
            slot.load(Ordering::Relaxed),
            u64::from(left) << 32 | k as u64,
            "slot {k} from PE {left}"
        );
    }
    ensure_eq!(
        shmem.local_read_one(&heap, 1).map_err(e2s)?,
        u64::from(left) + 100,
        "heap slot put through the CPU space"
    );
    // A get of the right neighbour's array returns what this PE put there.
    let mut back = vec![0u64; SLOTS];
    shmem.get(&space, slots, &mut back, right).map_err(e2s)?;
    ensure_eq!(back, mine, "get of PE {right}'s array");
    // The end of CPU memory is a bound, not a suggestion.
    if shmem.p(&space, space.len(), 1u64, right).is_ok() {
        return Err("a put past the end of CPU memory was accepted".into());
    }
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: statics ok: counter, {SLOTS} slots from PE {left}, heap slot, get, wait");
    Ok(())
}

/// A one-PE job without a launcher: the segment is a memory file, and a put to self
/// into a global is visible through the global.
fn solo() -> Result<(), String> {
    BEFORE_INIT.store(0xbef0_4e00, Ordering::Relaxed);
    let shmem = symmetric()?;
    check_survivors(&shmem, "/memfd:shmemplus-solo")?;
    let space = shmem
        .place_space::<u64>(shmemplus::Place::Cpu)
        .map_err(e2s)?;
    let slots = offset_of(&shmem, &SLOTS_OF_LEFT, "SLOTS_OF_LEFT")? / 8;
    shmem.p(&space, slots + 7, 4242u64, 0).map_err(e2s)?;
    shmem.quiet().map_err(e2s)?;
    ensure_eq!(
        SLOTS_OF_LEFT[7].load(Ordering::Relaxed),
        4242,
        "put to self"
    );
    SLOTS_OF_LEFT[8].store(99, Ordering::Relaxed);
    ensure_eq!(
        shmem.g(&space, slots + 8, 0).map_err(e2s)?,
        99u64,
        "get of a store"
    );
    shmem.finalize().map_err(e2s)?;
    ensure_eq!(
        SLOTS_OF_LEFT[7].load(Ordering::Relaxed),
        4242,
        "after finalize"
    );
    println!("PE 0: solo statics ok");
    Ok(())
}

/// PE 0 asks for symmetric data, the others do not: init must fail (this program
/// then exits 1 with init's error), never run with misaligned globals.
fn mismatch() -> Result<(), String> {
    let pe0 = std::env::var("SHMEMPLUS_PE").as_deref() == Ok("0");
    let r = match pe0 {
        true => symmetric(),
        false => shmemplus::init().map_err(e2s),
    };
    match r {
        Err(e) => Err(format!("init refused: {e}")),
        Ok(_) => {
            println!("init accepted PEs that differ in symmetric data");
            Ok(())
        }
    }
}
