//! Communication contexts (OpenSHMEM 1.5 section 9.4): [`Ctx`], [`CtxOptions`],
//! `ctx_create`, `team_create_ctx`, `ctx_destroy`, `ctx_default`, `ctx_quiet` and
//! `ctx_fence`.
//!
//! A context is a handle that issues RMA and atomics: it dereferences to [`Shmem`], so
//! `ctx.put(..)`, `ctx.atomic_fetch_add(..)` and every other call take the one data
//! path (`route`). Its `quiet` and `fence` are its own methods; they complete (order)
//! every operation of this PE, a superset of the context's own, which is what the
//! specification asks of them. This module owns the contexts' validity (a context of
//! another `init`, or the default one given to `ctx_destroy`, is an error) and their
//! options; it must not move data or keep per-context queues.

use super::Shmem;
use crate::error::{Error, Result};
use crate::team::Team;
use std::sync::atomic::{AtomicU64, Ordering};

/// Options of a context (`SHMEM_CTX_*`), a set of bit flags with the values Sandia
/// OpenSHMEM uses: `SERIALIZED` 1, `PRIVATE` 2, `NOSTORE` 4. The library accepts each
/// (they allow optimisations it does not need: every context is thread-safe and
/// completes its stores at `quiet`); unknown bits are an error.
///
/// ```
/// use shmemplus::CtxOptions;
/// let o = CtxOptions::PRIVATE | CtxOptions::NOSTORE;
/// assert_eq!(o.bits(), 6);
/// assert!(o.contains(CtxOptions::PRIVATE) && !o.contains(CtxOptions::SERIALIZED));
/// assert_eq!(CtxOptions::from_bits(1)?, CtxOptions::SERIALIZED);
/// assert!(CtxOptions::from_bits(8).is_err());
/// # Ok::<(), shmemplus::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CtxOptions(u64);

impl CtxOptions {
    /// No option (what `shmem_ctx_create(0, ..)` asks for).
    pub const NONE: CtxOptions = CtxOptions(0);
    /// The program issues calls on the context from one thread at a time.
    pub const SERIALIZED: CtxOptions = CtxOptions(1);
    /// Only the thread that created the context uses it.
    pub const PRIVATE: CtxOptions = CtxOptions(2);
    /// The context issues no store (put) operations, only loads and atomics.
    pub const NOSTORE: CtxOptions = CtxOptions(4);
    const ALL: u64 = 1 | 2 | 4;

    /// The options of a C `long` of flags, or [`Error::InvalidArgument`] naming the
    /// bits no option has.
    pub fn from_bits(bits: u64) -> Result<CtxOptions> {
        match bits & !Self::ALL {
            0 => Ok(CtxOptions(bits)),
            unknown => Err(Error::InvalidArgument(format!(
                "context options {bits:#x} have unknown bits {unknown:#x} (SERIALIZED 1, PRIVATE 2, NOSTORE 4)"
            ))),
        }
    }

    /// The flags as a word.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: CtxOptions) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CtxOptions {
    type Output = CtxOptions;
    fn bitor(self, rhs: CtxOptions) -> CtxOptions {
        CtxOptions(self.0 | rhs.0)
    }
}

/// Numbers contexts for `Debug` (0 is the default context of every handle).
static NEXT_CTX: AtomicU64 = AtomicU64::new(1);

/// A communication context (`shmem_ctx_t`): made by [`Shmem::ctx_create`],
/// [`Shmem::team_create_ctx`] or [`Shmem::ctx_default`], ended by
/// [`Shmem::ctx_destroy`] (which consumes it, so a destroyed context cannot be used
/// again). It dereferences to the handle: RMA and atomics on a context are the
/// handle's calls (`ctx.put`, `ctx.g`, `ctx.atomic_fetch_add`, ...). Its
/// [`Ctx::quiet`] and [`Ctx::fence`] are its own; they complete (order) at least the
/// context's operations, in fact every operation of this PE.
///
/// A context holds a clone of the handle: the PE is finalized implicitly only when
/// the contexts are gone too (an explicit [`Shmem::finalize`] ends them all).
///
/// ```
/// let shmem = shmemplus::init()?;
/// let ctx = shmem.ctx_create(shmemplus::CtxOptions::PRIVATE)?;
/// let x = shmem.alloc::<u64>(4, shmemplus::Place::Cpu)?;
/// ctx.p(&x, 1, 42, shmem.my_pe())?;
/// ctx.quiet()?;
/// assert_eq!(ctx.g(&x, 1, shmem.my_pe())?, 42);
/// assert_eq!(ctx.team().n_pes(), shmem.n_pes());
/// shmem.ctx_destroy(ctx)?;
/// # Ok::<(), shmemplus::Error>(())
/// ```
pub struct Ctx {
    shmem: Shmem,
    team: Team,
    options: CtxOptions,
    /// 0 for the default context.
    id: u64,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("id", &self.id)
            .field("options", &self.options)
            .field("team", &self.team)
            .finish()
    }
}

impl std::ops::Deref for Ctx {
    type Target = Shmem;
    fn deref(&self) -> &Shmem {
        &self.shmem
    }
}

impl Ctx {
    /// The team the context was made on (`shmem_ctx_get_team`): the world team for
    /// [`Shmem::ctx_create`] and [`Shmem::ctx_default`].
    pub fn team(&self) -> Team {
        self.team.clone()
    }

    /// The options the context was made with.
    pub fn options(&self) -> CtxOptions {
        self.options
    }

    /// Whether this is the default context (`SHMEM_CTX_DEFAULT`).
    pub fn is_default(&self) -> bool {
        self.id == 0
    }

    /// Completes the context's puts (`shmem_ctx_quiet`): after it they are visible at
    /// their targets. Completes every other put of this PE too.
    pub fn quiet(&self) -> Result<()> {
        self.shmem.quiet()
    }

    /// Orders the context's puts to each PE (`shmem_ctx_fence`); orders every other
    /// put of this PE too.
    pub fn fence(&self) -> Result<()> {
        self.shmem.fence()
    }
}

impl Shmem {
    /// Makes a context on the world team (`shmem_ctx_create`). There is no limit on
    /// live contexts beyond memory: each is a handle clone and a team reference.
    ///
    /// ```
    /// use shmemplus::CtxOptions;
    /// let shmem = shmemplus::init()?;
    /// let ctx = shmem.ctx_create(CtxOptions::SERIALIZED | CtxOptions::NOSTORE)?;
    /// assert_eq!(ctx.options().bits(), 5);
    /// assert!(!ctx.is_default());
    /// assert_eq!(ctx.team().my_pe(), shmem.my_pe());
    /// ctx.fence()?;
    /// shmem.ctx_destroy(ctx)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ctx_create(&self, options: CtxOptions) -> Result<Ctx> {
        self.live()?;
        self.new_ctx(self.team_world(), options)
    }

    /// Makes a context on `team` (`shmem_team_create_ctx`); [`Error::InvalidTeam`] for
    /// a destroyed team or one of another `init`. Destroy the context before the team.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let ctx = shmem.team_create_ctx(&shmem.team_shared(), shmemplus::CtxOptions::NONE)?;
    /// assert_eq!(ctx.team().n_pes(), shmem.team_shared().n_pes());
    /// shmem.ctx_destroy(ctx)?;
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn team_create_ctx(&self, team: &Team, options: CtxOptions) -> Result<Ctx> {
        drop(self.team_state(team)?);
        self.new_ctx(team.clone(), options)
    }

    fn new_ctx(&self, team: Team, options: CtxOptions) -> Result<Ctx> {
        let options = CtxOptions::from_bits(options.bits())?;
        Ok(Ctx {
            shmem: self.clone(),
            team,
            options,
            id: NEXT_CTX.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The default context (`SHMEM_CTX_DEFAULT`): the handle's own calls, on the world
    /// team. It may not be destroyed.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let ctx = shmem.ctx_default();
    /// assert!(ctx.is_default());
    /// ctx.quiet()?;
    /// assert!(matches!(shmem.ctx_destroy(ctx), Err(shmemplus::Error::InvalidContext(_))));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ctx_default(&self) -> Ctx {
        Ctx {
            shmem: self.clone(),
            team: self.team_world(),
            options: CtxOptions::NONE,
            id: 0,
        }
    }

    /// Ends a context (`shmem_ctx_destroy`): completes its operations first (a
    /// `quiet`). The default context and a context of another `init` are
    /// [`Error::InvalidContext`].
    pub fn ctx_destroy(&self, ctx: Ctx) -> Result<()> {
        self.own_ctx(&ctx)?;
        if ctx.is_default() {
            return Err(Error::InvalidContext(
                "the default context cannot be destroyed".into(),
            ));
        }
        self.quiet()
    }

    /// `ctx.quiet()`, after checking that `ctx` is this handle's (`shmem_ctx_quiet`).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let ctx = shmem.ctx_create(shmemplus::CtxOptions::SERIALIZED)?;
    /// let x = shmem.alloc::<u8>(8, shmemplus::Place::Cpu)?;
    /// ctx.put(&x, 0, &[1, 2, 3], shmem.my_pe())?;
    /// shmem.ctx_fence(&ctx)?;
    /// ctx.put(&x, 3, &[4], shmem.my_pe())?;
    /// shmem.ctx_quiet(&ctx)?;
    /// assert_eq!(shmem.local_to_vec(&x)?[..4], [1, 2, 3, 4]);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ctx_quiet(&self, ctx: &Ctx) -> Result<()> {
        self.own_ctx(ctx)?;
        ctx.quiet()
    }

    /// `ctx.fence()`, after checking that `ctx` is this handle's (`shmem_ctx_fence`).
    /// A call after `finalize` is [`Error::Finalized`].
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let ctx = shmem.ctx_create(shmemplus::CtxOptions::NONE)?;
    /// shmem.ctx_fence(&ctx)?;
    /// shmem.finalize()?;
    /// assert!(matches!(shmem.ctx_fence(&ctx), Err(shmemplus::Error::Finalized)));
    /// assert!(matches!(ctx.quiet(), Err(shmemplus::Error::Finalized)));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ctx_fence(&self, ctx: &Ctx) -> Result<()> {
        self.own_ctx(ctx)?;
        ctx.fence()
    }

    fn own_ctx(&self, ctx: &Ctx) -> Result<()> {
        self.live()?;
        if ctx.shmem.inner.job != self.inner.job {
            return Err(Error::InvalidContext(
                "the context belongs to another init".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::CtxOptions;

    #[test]
    fn options_round_trip_and_refuse_unknown_bits() {
        for bits in 0..8 {
            assert_eq!(
                CtxOptions::from_bits(bits).map(|o| o.bits()).ok(),
                Some(bits)
            );
        }
        for bits in [8, 16, 1 << 63, u64::MAX] {
            let e = CtxOptions::from_bits(bits).unwrap_err().to_string();
            assert!(e.contains("unknown bits"), "{e}");
        }
        let all = CtxOptions::SERIALIZED | CtxOptions::PRIVATE | CtxOptions::NOSTORE;
        assert_eq!(all.bits(), 7);
        assert!(all.contains(CtxOptions::NOSTORE));
        assert!(CtxOptions::NONE.contains(CtxOptions::NONE));
        assert!(!CtxOptions::NONE.contains(CtxOptions::PRIVATE));
    }
}
