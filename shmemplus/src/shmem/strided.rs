//! Strided RMA (OpenSHMEM `shmem_iput`, `shmem_iget`): `iput` and `iget`.
//!
//! This module owns the checks of strided accesses: strides of at least 1 element
//! and, with checked arithmetic, the last element `index + (nelems - 1) * stride` in
//! bounds on both sides, all before the first element moves (an error writes
//! nothing). It must not move bytes itself: each run goes through `put`/`get`, the
//! one data path.

use super::{Shmem, SymVec};
use crate::error::{Error, Result};
use bytemuck::Pod;

/// One side of a strided access: `nelems` elements of a sequence of `len`, the first
/// at `index`, `stride` elements apart.
#[derive(Debug, Clone, Copy)]
struct Strided {
    index: usize,
    stride: usize,
    len: usize,
}

impl Strided {
    /// Checks that all `nelems` elements lie inside the sequence.
    fn check(self, nelems: usize, what: &str) -> Result<()> {
        if self.stride == 0 {
            return Err(Error::InvalidArgument(format!(
                "{what} stride 0: strides count elements and must be at least 1"
            )));
        }
        let Some(steps) = nelems.checked_sub(1) else {
            return Ok(());
        };
        let last = steps
            .checked_mul(self.stride)
            .and_then(|span| self.index.checked_add(span));
        match last {
            Some(last) if last < self.len => Ok(()),
            _ => Err(Error::OutOfBounds {
                start: self.index,
                end: last.map_or(usize::MAX, |l| l.saturating_add(1)),
                len: self.len,
            }),
        }
    }

    /// The position of element `i` (checked by `check` for `i < nelems`).
    fn at(self, i: usize) -> usize {
        self.index + i * self.stride
    }
}

impl Shmem {
    /// Copies `nelems` elements of `src`, `src_stride` apart from `src[0]`, into
    /// `dest` on PE `pe`, `dst_stride` apart from `dest[dest_index]` (`shmem_iput`;
    /// strides in elements, at least 1). Every index is checked before anything
    /// moves: a stride of 0 or an element out of bounds on either side is an error
    /// and writes nothing. Returns when `src` may be reused; `quiet` completes it.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let me = shmem.my_pe();
    /// let dest = shmem.alloc::<i32>(8, shmemplus::Place::Cpu)?;
    /// // src[0], src[3], src[6] into dest[1], dest[3], dest[5].
    /// shmem.iput(&dest, 1, 2, &[10, 0, 0, 11, 0, 0, 12], 3, 3, me)?;
    /// shmem.quiet()?;
    /// assert_eq!(shmem.local_to_vec(&dest)?, [0, 10, 0, 11, 0, 12, 0, 0]);
    /// // dest[1 + 3 * 3] is past the end: an error, nothing written.
    /// assert!(shmem.iput(&dest, 1, 3, &[1, 2, 3, 4], 1, 4, me).is_err());
    /// assert_eq!(shmem.g(&dest, 1, me)?, 10);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn iput<T: Pod>(
        &self,
        dest: &SymVec<T>,
        dest_index: usize,
        dst_stride: usize,
        src: &[T],
        src_stride: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        let (to, from) = self.check_strided(
            (dest, dest_index, dst_stride),
            (src.len(), src_stride),
            nelems,
            pe,
        )?;
        if to.stride == 1 && from.stride == 1 {
            return self.put(dest, to.index, &src[..nelems], pe);
        }
        for i in 0..nelems {
            self.put(dest, to.at(i), std::slice::from_ref(&src[from.at(i)]), pe)?;
        }
        Ok(())
    }

    /// Copies `nelems` elements of `src` on PE `pe`, `src_stride` apart from
    /// `src[src_index]`, into `dest`, `dst_stride` apart from `dest[0]`
    /// (`shmem_iget`; strides in elements, at least 1); returns with the data. Checked
    /// like [`Shmem::iput`]: an error reads and writes nothing.
    ///
    /// ```
    /// let shmem = shmemplus::init()?;
    /// let me = shmem.my_pe();
    /// let src = shmem.alloc::<u16>(6, shmemplus::Place::Cpu)?;
    /// shmem.put(&src, 0, &[0, 1, 2, 3, 4, 5], me)?;
    /// shmem.quiet()?;
    /// let mut got = [9u16; 5];
    /// // src[1], src[3], src[5] into got[0], got[2], got[4].
    /// shmem.iget(&mut got, 2, &src, 1, 2, 3, me)?;
    /// assert_eq!(got, [1, 9, 3, 9, 5]);
    /// assert!(shmem.iget(&mut got, 0, &src, 0, 1, 2, me).is_err()); // stride 0
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn iget<T: Pod>(
        &self,
        dest: &mut [T],
        dst_stride: usize,
        src: &SymVec<T>,
        src_index: usize,
        src_stride: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        let (from, to) = self.check_strided(
            (src, src_index, src_stride),
            (dest.len(), dst_stride),
            nelems,
            pe,
        )?;
        if to.stride == 1 && from.stride == 1 {
            return self.get(src, from.index, &mut dest[..nelems], pe);
        }
        for i in 0..nelems {
            let one = std::slice::from_mut(&mut dest[to.at(i)]);
            self.get(src, from.at(i), one, pe)?;
        }
        Ok(())
    }

    /// Checks a strided access of `nelems` elements between a symmetric object
    /// (`obj`, first index, stride) and a private buffer (length, stride) on PE `pe`;
    /// returns both sides, symmetric first.
    fn check_strided<T: Pod>(
        &self,
        (obj, index, stride): (&SymVec<T>, usize, usize),
        (buf_len, buf_stride): (usize, usize),
        nelems: usize,
        pe: u32,
    ) -> Result<(Strided, Strided)> {
        self.live()?;
        self.check_pe(pe)?;
        // The object's identity (this handle's, not freed elsewhere) is checked
        // whatever the count.
        self.locate(obj, 0, 0)?;
        let sym = Strided {
            index,
            stride,
            len: obj.len(),
        };
        let buf = Strided {
            index: 0,
            stride: buf_stride,
            len: buf_len,
        };
        sym.check(nelems, "symmetric object's")?;
        buf.check(nelems, "private buffer's")?;
        Ok((sym, buf))
    }
}

#[cfg(test)]
mod tests {
    use super::Strided;
    use crate::error::Error;

    fn s(index: usize, stride: usize, len: usize) -> Strided {
        Strided { index, stride, len }
    }

    #[test]
    fn the_last_element_decides() {
        assert!(s(0, 1, 4).check(4, "x").is_ok());
        assert!(s(0, 1, 4).check(5, "x").is_err());
        assert!(s(1, 3, 11).check(4, "x").is_ok()); // last 10
        assert!(s(1, 3, 10).check(4, "x").is_err());
        assert!(s(9, 1, 10).check(1, "x").is_ok());
        assert!(s(10, 1, 10).check(1, "x").is_err());
        // No element: no bound, but a zero stride is still refused.
        assert!(s(usize::MAX, 5, 0).check(0, "x").is_ok());
        assert!(matches!(
            s(0, 0, 10).check(1, "x"),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn overflowing_strides_are_out_of_bounds_not_wrapped() {
        for (index, stride, n) in [
            (0, usize::MAX, 2),
            (usize::MAX, 1, 2),
            (1, usize::MAX / 2 + 1, 3),
        ] {
            match s(index, stride, 100).check(n, "x") {
                Err(Error::OutOfBounds { end, len: 100, .. }) => assert!(end > 100),
                other => panic!("{index} {stride} {n}: {other:?}"),
            }
        }
    }
}
