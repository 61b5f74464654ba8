//! The shipped bitfile: [`standard_bitfile`] (`"shmemplus-standard"`).
//!
//! This module owns the standard kernels' bodies, element counts and (illustrative)
//! timings. It must not reach anything but the [`KernelMemory`] it is given.

use crate::kernel::{Bitfile, Kernel, KernelMemory, KernelTiming};

/// Name of the standard bitfile.
pub const STANDARD_BITFILE: &str = "shmemplus-standard";
/// `add-one`: args `[offset_bytes, count]`; adds 1 (wrapping) to `count`
/// little-endian `u32` at `offset_bytes`; `count` elements.
pub const ADD_ONE: &str = "add-one";
/// `fail`: always fails with `"failed on purpose"` (for error paths).
pub const FAIL: &str = "fail";
/// `panic`: always panics (for error paths).
pub const PANIC: &str = "panic";

/// The timing of the standard kernels. Illustrative, not measured: a 100-cycle pipeline
/// at 150 MHz, one operation per element, one operation per cycle (so `add-one` over
/// `N` words models `(100 + N) / 150e6` seconds, e.g. about 7 ms for 2^20 words).
pub const STANDARD_TIMING: KernelTiming = KernelTiming {
    pipeline_latency_cycles: 100.0,
    clock_hz: 150e6,
    ops_per_element: 1.0,
    ops_per_cycle: 1.0,
};

/// Words processed per read-modify-write chunk of `add-one` (bounds its buffer to
/// 64 KiB whatever the count).
const ADD_ONE_CHUNK_WORDS: u64 = 16 * 1024;

/// The standard bitfile: kernels [`ADD_ONE`], [`FAIL`] and [`PANIC`], all with
/// [`STANDARD_TIMING`].
///
/// ```
/// use fpga_mock::kernels;
/// let b = kernels::standard_bitfile();
/// assert_eq!(b.name, "shmemplus-standard");
/// assert_eq!(b.kernel_names(), ["add-one", "fail", "panic"]);
/// ```
pub fn standard_bitfile() -> Bitfile {
    Bitfile {
        name: STANDARD_BITFILE.into(),
        kernels: vec![
            Kernel::new(
                ADD_ONE,
                STANDARD_TIMING,
                |args| args.get(1).copied().unwrap_or(0),
                add_one,
            ),
            Kernel::new(
                FAIL,
                STANDARD_TIMING,
                |_| 0,
                |_, _| Err("failed on purpose".into()),
            ),
            Kernel::new(
                PANIC,
                STANDARD_TIMING,
                |_| 0,
                |_, _| panic!("kernel \"panic\" panicked on purpose"),
            ),
        ],
    }
}

/// `add-one`: checks the whole range first, so bad arguments change nothing.
fn add_one(mem: &KernelMemory<'_>, args: &[u64]) -> Result<(), String> {
    let &[offset, count] = args else {
        return Err(format!(
            "add-one takes 2 arguments [offset_bytes, count], got {}",
            args.len()
        ));
    };
    let bytes = count
        .checked_mul(4)
        .ok_or_else(|| format!("add-one: count {count} is too large"))?;
    match offset.checked_add(bytes) {
        Some(end) if end <= mem.len() => {}
        _ => {
            return Err(format!(
                "add-one: {count} words at offset {offset} pass the board end ({} bytes)",
                mem.len()
            ))
        }
    }
    let mut buf = vec![0u8; (count.min(ADD_ONE_CHUNK_WORDS) * 4) as usize];
    let mut done = 0u64;
    while done < bytes {
        // At most 64 KiB: fits in usize.
        let n = (bytes - done).min(buf.len() as u64) as usize;
        let chunk = &mut buf[..n];
        mem.read(offset + done, chunk)?;
        for word in chunk.chunks_exact_mut(4) {
            let v = u32::from_le_bytes([word[0], word[1], word[2], word[3]]).wrapping_add(1);
            word.copy_from_slice(&v.to_le_bytes());
        }
        mem.write(offset + done, chunk)?;
        done += n as u64;
    }
    Ok(())
}
