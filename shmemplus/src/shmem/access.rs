//! Direct access to other PEs' memory (OpenSHMEM `shmem_ptr`, `shmem_pe_accessible`,
//! `shmem_addr_accessible`): `ptr`, `ptr_addr`, `pe_accessible`, `addr_accessible`.
//!
//! This module owns the answer to "can this process load and store that PE's copy
//! directly?", which it takes from the route (`Reach::Mapped`: a CPU heap under the
//! `shm` conduit), so it never disagrees with how puts travel. It must not move data
//! or make any promise about accesses through the pointers it returns: those are the
//! program's, as in OpenSHMEM.

use super::route::Reach;
use super::{Place, Shmem, SymVec};
use bytemuck::Pod;

impl Shmem {
    /// The address of element `index` of PE `pe`'s copy of `obj`, when this process
    /// can load and store it directly (`shmem_ptr`): a CPU object under the `shm`
    /// conduit (every peer's heap is mapped), and this PE's own CPU copy under any
    /// conduit. `None` for board memory, for other PEs under the `am` conduit, for a
    /// PE on another node when the profile emulates the network between nodes (as
    /// on a real cluster), and for an invalid PE, object or index.
    ///
    /// Accesses through the pointer bypass the library: they are not ordered by
    /// `fence`, nor charged to an emulated network, and they race with other PEs'
    /// accesses like any load or store (use atomics, or a barrier between phases).
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let me = shmem.my_pe();
    /// let x = shmem.alloc::<u32>(4, shmemplus::Place::Cpu)?;
    /// let p = shmem.ptr(&x, 2, me).expect("a PE's own CPU copy is always reachable");
    /// // SAFETY (of the example): element 2 of this PE's copy, which nothing else
    /// // accesses meanwhile.
    /// unsafe { p.write(7) };
    /// assert_eq!(shmem.g(&x, 2, me)?, 7);
    /// assert_eq!(shmem.ptr(&x, 4, me), None); // past the end
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ptr<T: Pod>(&self, obj: &SymVec<T>, index: usize, pe: u32) -> Option<*mut T> {
        let (offset, _) = self.locate(obj, index, 1).ok()?;
        self.mapped_addr(obj.place, offset, pe).map(|p| p.cast())
    }

    /// `ptr` for a raw address (`shmem_ptr` as C calls it): `addr` is an address of
    /// this PE's symmetric heap ([`Shmem::local_addr`] and offsets into it); returns
    /// the address of the same byte in PE `pe`'s heap when it is directly accessible.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let x = shmem.alloc::<u64>(2, shmemplus::Place::Cpu)?;
    /// let mine = shmem.local_addr(&x)?.cast::<u8>();
    /// assert_eq!(shmem.ptr_addr(mine, shmem.my_pe()), Some(mine));
    /// let private = 0u64;
    /// assert_eq!(shmem.ptr_addr((&private as *const u64).cast(), 0), None);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn ptr_addr(&self, addr: *const u8, pe: u32) -> Option<*mut u8> {
        let (place, offset) = self.locate_addr(addr)?;
        self.mapped_addr(place, offset, pe)
    }

    /// Whether PE `pe` can be reached by this PE's RMA and atomics
    /// (`shmem_pe_accessible`): every PE of the job can, on both conduits.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// assert!(shmem.pe_accessible(0));
    /// assert!(!shmem.pe_accessible(shmem.n_pes()));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn pe_accessible(&self, pe: u32) -> bool {
        self.live().is_ok() && self.check_pe(pe).is_ok()
    }

    /// Whether `addr`, an address in this process, is symmetric and so can name PE
    /// `pe`'s copy in RMA calls (`shmem_addr_accessible`): it lies in this PE's CPU
    /// symmetric heap and `pe` is accessible.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let x = shmem.alloc::<u8>(16, shmemplus::Place::Cpu)?;
    /// let a = shmem.local_addr(&x)?;
    /// assert!(shmem.addr_accessible(a.wrapping_add(15), 0));
    /// let private = [0u8; 4];
    /// assert!(!shmem.addr_accessible(private.as_ptr(), 0));
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn addr_accessible(&self, addr: *const u8, pe: u32) -> bool {
        self.pe_accessible(pe) && self.locate_addr(addr).is_some()
    }

    /// The address of byte `offset` of `place` on PE `pe` in this process, when the
    /// route reaches it by a mapping (or it is this PE's own CPU heap).
    fn mapped_addr(&self, place: Place, offset: usize, pe: u32) -> Option<*mut u8> {
        let inner = self.live().ok()?;
        let target = self.check_pe(pe).ok()?;
        let own_cpu = place == Place::Cpu && target == inner.segs.me;
        let route = inner.route(None, target, place);
        let mapped = matches!(route.reach, Reach::Mapped { .. });
        // On an emulated cluster a PE of another node is across the network: a real
        // cluster could not load from it, so neither does a program here (its
        // accesses would also escape the emulated costs).
        let across_emulated_network = inner.emulation.is_some() && route.crosses_nodes(inner);
        if !(own_cpu || mapped) || across_emulated_network {
            return None;
        }
        let seg = inner.segs.seg(target);
        // CPU offsets run through the heap and then the static area (symmetric data).
        if offset >= seg.cpu_bytes() {
            return None;
        }
        // SAFETY: `offset` is below the target's CPU bytes (checked just above), so the
        // result stays inside its mapping, which lives as long as `inner`.
        Some(unsafe { seg.heap_base().add(offset) })
    }
}
