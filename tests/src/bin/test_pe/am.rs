//! The `am` scenario: user active messages (handlers, replies, unknown handler, handler
//! errors and panics, oversized payloads).

use shmemplus::Error;
use shmemplus_tests::pe::{e2s, expect_err};

/// User active messages: a handler on every PE, requests to every PE, an unknown
/// handler and an oversized payload.
pub(crate) fn am_messages() -> Result<(), String> {
    let shmem = shmemplus::init().map_err(e2s)?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    shmem
        .am_register(3, move |src, payload| {
            let mut out = format!("PE {me} served PE {src}: ").into_bytes();
            out.extend_from_slice(payload);
            Ok(out)
        })
        .map_err(e2s)?;
    shmem
        .am_register(4, |_, _| Err("refused on purpose".into()))
        .map_err(e2s)?;
    shmem
        .am_register(5, |_, _| panic!("handler bug"))
        .map_err(e2s)?;
    shmem.barrier_all().map_err(e2s)?;
    for t in 0..n {
        let reply = shmem.am_request(t, 3, b"ping").map_err(e2s)?;
        let want = format!("PE {t} served PE {me}: ping");
        if reply != want.as_bytes() {
            return Err(format!(
                "reply {:?}, want {want:?}",
                String::from_utf8_lossy(&reply)
            ));
        }
        let big = vec![9u8; shmem.am_max_payload()];
        if shmem.am_echo(t, &big).map_err(e2s)? != big {
            return Err("echo of a full payload differs".into());
        }
    }
    expect_err(
        "unknown handler",
        shmem.am_request((me + 1) % n, 9, b"x"),
        |e| matches!(e, Error::NoHandler { handler: 9, .. }),
    )?;
    expect_err(
        "handler error",
        shmem.am_request((me + 1) % n, 4, b"x"),
        |e| matches!(e, Error::AmFailed { .. }) && e.to_string().contains("refused on purpose"),
    )?;
    expect_err(
        "panicking handler",
        shmem.am_request((me + 1) % n, 5, b"x"),
        |e| e.to_string().contains("panicked"),
    )?;
    // The progress thread survived the panic: AMs still work.
    if shmem.am_echo((me + 1) % n, b"still here").map_err(e2s)? != b"still here" {
        return Err("echo after a handler panic differs".into());
    }
    let too_big = vec![0u8; shmem.am_max_payload() + 1];
    expect_err("oversized payload", shmem.am_echo(0, &too_big), |e| {
        matches!(e, Error::InvalidArgument(_))
    })?;
    shmem.barrier_all().map_err(e2s)?;
    println!("PE {me}: am ok");
    shmem.finalize().map_err(e2s)
}
