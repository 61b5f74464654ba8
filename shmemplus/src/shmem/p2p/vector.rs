//! The vector forms of the point-to-point waits and tests (OpenSHMEM 1.5
//! `shmem_wait_until_all_vector`, `_any_vector`, `_some_vector` and the `test` ones):
//! element `i` of the watched array is compared with its own value `values[i]`.
//!
//! This module owns the argument checks of those forms (one value per element); the
//! comparisons, reading the words and waiting are shared with the scalar forms
//! (`p2p`). It must not write the watched words.

use super::super::{Shmem, SymVec};
use crate::atomic::{AtomicInt, Cmp};
use crate::error::{Error, Result};

impl Shmem {
    /// The included indices of `ivars`, after checking that `values` has one entry per
    /// element.
    fn included_vector<T: AtomicInt>(
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        values: &[T],
    ) -> Result<Vec<usize>> {
        if values.len() != ivars.len() {
            return Err(Error::InvalidArgument(format!(
                "{} comparison values for {} variables",
                values.len(),
                ivars.len()
            )));
        }
        Self::included(ivars.len(), skip)
    }

    /// Waits until every included element `i` of this PE's own `ivars` satisfies
    /// `<cmp> values[i]` (`shmem_wait_until_all_vector`; `skip[i] == true` leaves
    /// element `i` out).
    ///
    /// ```
    /// use shmemplus::{Cmp, Place};
    /// let shmem = shmemplus::init()?;
    /// let v = shmem.alloc::<i64>(3, Place::Cpu)?;
    /// shmem.local_write(&v, 0, &[1, 5, -2])?;
    /// shmem.wait_until_all_vector(&v, None, Cmp::Ge, &[1, 5, -2])?;
    /// assert_eq!(shmem.test_any_vector(&v, Some(&[true, false, false]), Cmp::Eq, &[1, 0, -2])?, Some(2));
    /// assert_eq!(shmem.test_some_vector(&v, None, Cmp::Lt, &[2, 2, 2])?, [0, 2]);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn wait_until_all_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        let idx = Self::included_vector(ivars, skip, values)?;
        self.wait_all_of(ivars, &idx, cmp, |i| values[i])
    }

    /// Waits until some included element satisfies its comparison and returns its
    /// index, or `None` at once if every element is skipped
    /// (`shmem_wait_until_any_vector`).
    pub fn wait_until_any_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        let idx = Self::included_vector(ivars, skip, values)?;
        self.wait_any_of(ivars, &idx, cmp, |i| values[i])
    }

    /// Waits until at least one included element satisfies its comparison and
    /// returns the indices of all that do (`shmem_wait_until_some_vector`); empty at
    /// once if every element is skipped.
    pub fn wait_until_some_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        let idx = Self::included_vector(ivars, skip, values)?;
        self.wait_some_of(ivars, &idx, cmp, |i| values[i])
    }

    /// Whether every included element satisfies its comparison now
    /// (`shmem_test_all_vector`).
    pub fn test_all_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<bool> {
        let idx = Self::included_vector(ivars, skip, values)?;
        Ok(self.hits_now(ivars, &idx, cmp, |i| values[i])?.len() == idx.len())
    }

    /// An included element that satisfies its comparison now, if any
    /// (`shmem_test_any_vector`).
    pub fn test_any_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        let idx = Self::included_vector(ivars, skip, values)?;
        Ok(self
            .hits_now(ivars, &idx, cmp, |i| values[i])?
            .first()
            .copied())
    }

    /// The included elements that satisfy their comparison now
    /// (`shmem_test_some_vector`).
    pub fn test_some_vector<T: AtomicInt>(
        &self,
        ivars: &SymVec<T>,
        skip: Option<&[bool]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        let idx = Self::included_vector(ivars, skip, values)?;
        self.hits_now(ivars, &idx, cmp, |i| values[i])
    }
}

#[cfg(test)]
mod tests {
    use super::super::hits;
    use crate::Cmp;

    #[test]
    fn each_element_meets_its_own_value() {
        let words = [3u32, 7, 7, 1];
        let values = [3u32, 8, 7, 0];
        let own = |i: usize| values[i];
        assert_eq!(hits(&[0, 1, 2, 3], &words, Cmp::Eq, &own), [0, 2]);
        assert_eq!(hits(&[1, 3], &words, Cmp::Lt, &own), [1]);
        assert_eq!(hits(&[0, 2], &words, Cmp::Ne, &own), Vec::<usize>::new());
    }
}
