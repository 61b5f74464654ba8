//! Property tests of every size and offset a user can pass: element counts and indices
//! up to `usize::MAX`, several element types, on the CPU heap and on a board. Whatever
//! the request, `alloc` either returns an object that lies inside its heap or a typed
//! error (HeapExhausted / BoardHeapExhausted / SizeOverflow), and an out-of-range
//! access is OutOfBounds (or SizeOverflow) and changes nothing: never a panic, never a
//! wrapped size, in debug and in release builds.
//!
//! The program runs as a one-PE job (no launcher), with a 1 MiB CPU heap and a 1 MiB
//! board so that objects that fit stay cheap to zero. `init` may run once per process,
//! so every test shares one handle; tests run in parallel threads, so a request that
//! would fit an empty heap may still find it exhausted by another test's object.

use bytemuck::{Pod, Zeroable};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use shmemplus::{Error, Place, Shmem, SymVec};
use std::sync::OnceLock;

/// Bytes of the CPU heap and of the board partition of this job.
const HEAP: usize = 1 << 20;

/// A 24-byte element type.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Triple {
    a: u64,
    b: u64,
    c: u64,
}

/// The one handle of this process (a one-PE job with small heaps and one board) and
/// the objects the RMA property uses, made before any test can hold heap space.
struct Job {
    shmem: Shmem,
    cpu: Objects,
    fpga: Objects,
}

/// Two small objects of one place (never freed).
struct Objects {
    a: SymVec<u64>,
    b: SymVec<u64>,
}

/// Elements of each RMA object.
const LEN: usize = 16;

fn job() -> &'static Job {
    static JOB: OnceLock<Job> = OnceLock::new();
    JOB.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("shmemplus-sizes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let profile = dir.join("small-board.toml");
        std::fs::write(
            &profile,
            "name = \"small-board\"\n[topology]\nboards_per_node = 1\nboard_memory = \"1M\"\n",
        )
        .expect("the profile file is written");
        // Set before init reads them, while every other test waits on this OnceLock.
        std::env::set_var("SHMEMPLUS_PROFILE", &profile);
        std::env::set_var("SHMEM_SYMMETRIC_SIZE", HEAP.to_string());
        std::env::set_var("SHMEMPLUS_TUNE", "off");
        std::env::remove_var("SHMEMPLUS_FPGAS");
        let shmem = shmemplus::init().expect("a one-PE job starts");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(shmem.config().symmetric_size, HEAP);
        assert_eq!(shmem.fpga_heap_bytes(), HEAP as u64);
        let objects = |place| Objects {
            a: shmem.alloc::<u64>(LEN, place).expect("a small object"),
            b: shmem.alloc::<u64>(LEN, place).expect("a small object"),
        };
        let (cpu, fpga) = (objects(Place::Cpu), objects(Place::Fpga(0)));
        Job { shmem, cpu, fpga }
    })
}

fn shmem() -> &'static Shmem {
    &job().shmem
}

const PLACES: [Place; 2] = [Place::Cpu, Place::Fpga(0)];

/// Element counts that stress every boundary for elements of `elem` bytes: small
/// ones, ones up to and around the heap size, around the largest count whose byte size fits in
/// a usize (where rounding up to 64 overflows), just past it, and anything at all.
fn any_len(elem: usize) -> BoxedStrategy<usize> {
    let fit = HEAP / elem;
    let max = usize::MAX / elem;
    prop_oneof![
        0usize..64,
        0usize..=fit,
        fit.saturating_sub(64)..fit.saturating_add(64),
        max.saturating_sub(128)..=max,
        max.saturating_add(1)..=max.saturating_add(64),
        (usize::MAX - 64)..=usize::MAX,
        any::<usize>(),
    ]
    .boxed()
}

/// What `alloc::<T>(len, place)` did, checked against what it may do.
fn check_alloc<T: Pod>(len: usize, place: Place) -> Result<(), TestCaseError> {
    let shmem = shmem();
    let elem = size_of::<T>();
    let bytes = len.checked_mul(elem);
    match shmem.alloc::<T>(len, place) {
        Ok(v) => {
            let bytes = bytes.ok_or_else(|| {
                TestCaseError::fail(format!(
                    "{len} x {elem} bytes overflow, yet alloc succeeded"
                ))
            })?;
            prop_assert_eq!(v.len(), len);
            prop_assert_eq!(v.heap_offset() % 64, 0);
            let end = v.heap_offset().checked_add(bytes);
            prop_assert!(
                end.is_some_and(|e| e <= HEAP),
                "{len} x {elem} bytes at {} pass the {HEAP}-byte heap on {place}",
                v.heap_offset()
            );
            // The object's last element is real memory: it starts zeroed and keeps
            // what is written.
            if len > 0 {
                let last = shmem.local_read_one(&v, len - 1).map_err(fail)?;
                prop_assert!(bytemuck::bytes_of(&last).iter().all(|&b| b == 0));
                let mut ones = T::zeroed();
                bytemuck::bytes_of_mut(&mut ones).fill(0xA5);
                shmem.local_write(&v, len - 1, &[ones]).map_err(fail)?;
                let back = shmem.local_read_one(&v, len - 1).map_err(fail)?;
                prop_assert_eq!(bytemuck::bytes_of(&back), bytemuck::bytes_of(&ones));
            }
            shmem.free(v).map_err(fail)?;
        }
        Err(Error::SizeOverflow { what }) => {
            prop_assert!(bytes.is_none(), "SizeOverflow ({what}) for {len} x {elem}");
        }
        Err(Error::HeapExhausted { requested, .. }) if place == Place::Cpu => {
            let bytes = bytes.ok_or_else(|| {
                TestCaseError::fail(format!("{len} x {elem} overflows: expected SizeOverflow"))
            })?;
            prop_assert!(requested >= bytes, "{requested} < {bytes}");
        }
        Err(Error::BoardHeapExhausted {
            board: 0,
            requested,
            partition,
            ..
        }) if place == Place::Fpga(0) => {
            let bytes = bytes.ok_or_else(|| {
                TestCaseError::fail(format!("{len} x {elem} overflows: expected SizeOverflow"))
            })?;
            prop_assert!(requested >= bytes, "{requested} < {bytes}");
            prop_assert_eq!(partition, HEAP);
        }
        Err(other) => {
            return Err(TestCaseError::fail(format!(
                "alloc of {len} x {elem} bytes on {place}: unexpected error {other:?}"
            )))
        }
    }
    Ok(())
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

macro_rules! alloc_property {
    ($name:ident, $t:ty) => {
        proptest! {
            /// alloc of any count of this type on any place fits its heap or is a
            /// typed error.
            #[test]
            fn $name(len in any_len(size_of::<$t>()), place in prop::sample::select(&PLACES[..])) {
                check_alloc::<$t>(len, place)?;
            }
        }
    };
}

alloc_property!(alloc_u8_fits_or_fails_typed, u8);
alloc_property!(alloc_u32_fits_or_fails_typed, u32);
alloc_property!(alloc_u64_fits_or_fails_typed, u64);
alloc_property!(alloc_triple_fits_or_fails_typed, Triple);
alloc_property!(alloc_page_fits_or_fails_typed, [u8; 4096]);

#[test]
fn overflowing_sizes_are_size_overflow_on_every_place() {
    let shmem = shmem();
    for place in PLACES {
        for len in [usize::MAX, usize::MAX / 2, usize::MAX / 8 + 1] {
            let e = shmem.alloc::<u64>(len, place).unwrap_err();
            assert!(
                matches!(e, Error::SizeOverflow { .. }),
                "{place} {len}: {e}"
            );
            assert!(e.to_string().contains(&len.to_string()), "{e}");
        }
        // Rounding the byte size up to the heap's 64-byte granule overflows: this
        // wrapped to a 0-byte block in release builds and panicked in debug ones.
        for len in [usize::MAX, usize::MAX - 62] {
            let e = shmem.alloc::<u8>(len, place).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::HeapExhausted { .. } | Error::BoardHeapExhausted { .. }
                ),
                "{place} {len}: {e}"
            );
        }
    }
}

/// Indices and counts around every boundary of an object of `len` elements.
fn any_index(len: usize) -> BoxedStrategy<usize> {
    prop_oneof![
        0..=len + 2,
        (usize::MAX - 8)..=usize::MAX,
        (usize::MAX / 8 - 4)..=(usize::MAX / 8 + 4),
        any::<usize>(),
    ]
    .boxed()
}

/// Whether `index..index + count` lies inside `len` elements.
fn in_bounds(index: usize, count: usize, len: usize) -> bool {
    index.checked_add(count).is_some_and(|end| end <= len)
}

/// Asserts `r` is Ok when the range is in bounds, else OutOfBounds / SizeOverflow.
fn expect_bounds<R>(what: &str, r: shmemplus::Result<R>, ok: bool) -> Result<(), TestCaseError> {
    match r {
        Ok(_) if ok => Ok(()),
        Err(Error::OutOfBounds { .. } | Error::SizeOverflow { .. }) if !ok => Ok(()),
        Ok(_) => Err(TestCaseError::fail(format!("{what}: out of range, yet Ok"))),
        Err(e) => Err(TestCaseError::fail(format!("{what}: {e:?}"))),
    }
}

proptest! {
    /// put/get/p/g/local_read/local_write/put_from/get_into/atomics with any index and
    /// count: in bounds they succeed; out of bounds they are OutOfBounds or
    /// SizeOverflow and the objects keep their contents.
    #[test]
    fn rma_with_any_index_is_checked(
        index in any_index(LEN),
        other in any_index(LEN),
        count in any_index(LEN),
        k in 0usize..=LEN + 1,
        place in prop::sample::select(&PLACES[..]),
    ) {
        let shmem = shmem();
        let me = shmem.my_pe();
        let Objects { a, b } = if place == Place::Cpu { &job().cpu } else { &job().fpga };
        // Every test thread shares the objects: hold their state still.
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let marks: Vec<u64> = (0..LEN as u64).map(|i| 0xC0DE_0000 + i).collect();
        shmem.local_write(a, 0, &marks).map_err(fail)?;
        shmem.local_write(b, 0, &marks).map_err(fail)?;
        let src = vec![7u64; k];
        let mut dst = vec![0u64; k];
        let fits = in_bounds(index, k, LEN);
        expect_bounds("put", shmem.put(a, index, &src, me).and_then(|_| shmem.quiet()), fits)?;
        expect_bounds("get", shmem.get(a, index, &mut dst, me), fits)?;
        expect_bounds("local_read", shmem.local_read(a, index, &mut dst), fits)?;
        expect_bounds("local_write", shmem.local_write(b, index, &src), fits)?;
        let one = in_bounds(index, 1, LEN);
        expect_bounds("p", shmem.p(a, index, 9, me).and_then(|_| shmem.quiet()), one)?;
        expect_bounds("g", shmem.g(a, index, me), one)?;
        expect_bounds("atomic_fetch_add", shmem.atomic_fetch_add(a, index, 1, me), one)?;
        let both = in_bounds(index, count, LEN) && in_bounds(other, count, LEN);
        expect_bounds(
            "put_from",
            shmem.put_from(a, index, b, other, count, me).and_then(|_| shmem.quiet()),
            both,
        )?;
        expect_bounds("get_into", shmem.get_into(a, index, b, other, count, me), both)?;
        // A refused call wrote nothing: where every call was refused, the marks stand.
        if !fits && !one && !both {
            prop_assert_eq!(shmem.local_to_vec(a).map_err(fail)?, marks.clone());
            prop_assert_eq!(shmem.local_to_vec(b).map_err(fail)?, marks);
        }
    }
}
