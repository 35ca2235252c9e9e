//! Order statistics of timing samples.

use std::time::Duration;

/// Timing samples, kept sorted.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    sorted: Vec<f64>,
}

impl Samples {
    /// Samples from values in any order (NaNs are dropped).
    pub fn new(mut values: Vec<f64>) -> Self {
        values.retain(|v| !v.is_nan());
        values.sort_by(f64::total_cmp);
        Samples { sorted: values }
    }

    /// Samples of durations, in microseconds.
    pub fn micros(values: &[Duration]) -> Self {
        Self::new(values.iter().map(|d| d.as_secs_f64() * 1e6).collect())
    }

    /// Samples of durations, in milliseconds.
    pub fn millis(values: &[Duration]) -> Self {
        Self::new(values.iter().map(|d| d.as_secs_f64() * 1e3).collect())
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// `true` without samples.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The `p`-th percentile (0–100), nearest rank; NaN without samples.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    /// The median.
    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    /// The smallest sample.
    pub fn min(&self) -> f64 {
        self.sorted.first().copied().unwrap_or(f64::NAN)
    }

    /// The largest sample.
    pub fn max(&self) -> f64 {
        self.sorted.last().copied().unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = Samples::new((1..=100).rev().map(f64::from).collect());
        assert_eq!(s.median(), 50.0);
        assert_eq!(s.percentile(99.0), 99.0);
        assert_eq!(s.percentile(100.0), 100.0);
        assert_eq!(s.percentile(0.0), 1.0);
        assert_eq!(s.min(), 1.0);
        assert_eq!(s.max(), 100.0);
        assert!(Samples::default().median().is_nan());
    }
}
