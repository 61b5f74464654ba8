//! User active messages: `am_register`, `am_request`, the built-in echo and the
//! largest payload.
//!
//! This module owns the checks of handler ids and PEs and the mapping of a missing
//! handler to [`Error::NoHandler`]. It must not implement the AM engine (`am`).

use super::Shmem;
use crate::am::{H_ECHO, USER_BASE};
use crate::error::{Error, Result};

impl Shmem {
    /// Registers handler `id` (`0..64`) for user active messages on this PE. The
    /// handler runs on this PE's progress thread with the sender's PE and payload and
    /// returns the reply payload (or an error message for the sender). It must not call
    /// blocking shmemplus operations. Register the same handlers on every PE, then
    /// synchronise (`barrier_all`) before sending.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// shmem.am_register(0, |src, payload| Ok(payload.iter().rev().copied().collect()))?;
    /// shmem.barrier_all()?;
    /// let reply = shmem.am_request(shmem.my_pe(), 0, b"abc")?;
    /// assert_eq!(reply, b"cba");
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn am_register(
        &self,
        id: u16,
        handler: impl Fn(u32, &[u8]) -> std::result::Result<Vec<u8>, String> + Send + Sync + 'static,
    ) -> Result<()> {
        self.live()?.am.register_user(id, Box::new(handler))
    }

    /// Sends `payload` to user handler `id` on PE `pe` and waits for its reply.
    pub fn am_request(&self, pe: u32, id: u16, payload: &[u8]) -> Result<Vec<u8>> {
        let inner = self.live()?;
        let to = self.check_pe(pe)?;
        if id >= crate::am::USER_HANDLERS {
            return Err(Error::InvalidArgument(format!(
                "active-message handler id {id} is out of range 0..64"
            )));
        }
        inner
            .am
            .request(to, USER_BASE + id, payload)
            .map_err(|e| match e {
                Error::AmFailed { why, .. } if why.starts_with("no active-message handler") => {
                    Error::NoHandler { handler: id, pe }
                }
                other => other,
            })
    }

    /// Sends `payload` to PE `pe`'s built-in echo handler and returns the echoed bytes
    /// (one AM round trip; used to measure the AM layer).
    pub fn am_echo(&self, pe: u32, payload: &[u8]) -> Result<Vec<u8>> {
        let inner = self.live()?;
        let to = self.check_pe(pe)?;
        inner.am.request(to, H_ECHO, payload)
    }

    /// Largest payload of one active message.
    pub fn am_max_payload(&self) -> usize {
        self.inner.am.max_payload()
    }
}
