//! The built-in active-message handlers for the CPU heap: put, get, flush and echo.
//! (The boards' DMA handlers live in `fpga`, the atomic handler in `atomic`.)
//!
//! This module owns what the target does for each built-in request. A handler runs on
//! the target's progress thread: it must not send requests (only replies) nor wait.

use super::ring::RawBytes;
use super::{AmEngine, Incoming};

pub(super) fn handle_put(engine: &AmEngine, m: Incoming<'_>) {
    match engine.heap_range(m.header.args[0], m.payload.len()) {
        // SAFETY: `dst` is in bounds of this PE's heap (checked by heap_range); the
        // payload lives in the ring, which never overlaps the heap.
        Ok(dst) => unsafe { crate::copy::copy_bytes(m.payload.as_ptr(), dst, m.payload.len()) },
        Err(why) => engine.record_put_failure(m.src, why),
    }
    engine.reply_result(m.src, m.header.token, Ok(Vec::new()));
}

pub(super) fn handle_get(engine: &AmEngine, m: Incoming<'_>) {
    let (offset, len) = (m.header.args[0], m.header.args[1] as usize);
    match engine.heap_range(offset, len) {
        Ok(src) => {
            // SAFETY: `src..src+len` is inside this PE's heap (checked above), which
            // stays mapped for the engine's life. Other PEs may write it concurrently,
            // as with any SHMEM get racing a put, so it is copied raw into the ring and
            // never viewed as a slice.
            let bytes = unsafe { RawBytes::heap(src, len) };
            engine.reply_raw(m.src, m.header.token, bytes);
        }
        Err(why) => engine.reply_error(m.src, m.header.token, &why),
    }
}

pub(super) fn handle_flush(engine: &AmEngine, m: Incoming<'_>) {
    let failed = engine.failed_puts[m.src]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let out = match failed {
        Some(why) => Err(format!("an earlier put failed: {why}")),
        None => Ok(Vec::new()),
    };
    engine.reply_result(m.src, m.header.token, out);
}

pub(super) fn handle_echo(engine: &AmEngine, m: Incoming<'_>) {
    // Straight from the request ring into the reply ring: the payload stays in place
    // until this handler returns.
    if m.header.token != 0 {
        engine.reply_data(m.src, m.header.token, m.payload);
    }
}
