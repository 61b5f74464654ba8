//! The order statistics the crate's modules share: the median of a few timings.
//!
//! This module owns that arithmetic only. It must not know what the numbers measure
//! (the sizers' ratios, the reports' chunks): its callers do.

/// The median of `v` (the upper one of an even count; it sorts `v`), `None` if empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_upper_of_two() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(median(&mut []), None);
    }
}
