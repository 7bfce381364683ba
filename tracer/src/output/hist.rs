//! Latency histograms: log2 (or linear) buckets of nanoseconds, rendered bcc-style with a
//! summary line; percentiles are estimated from the buckets and say so, the maximum is exact.

use std::fmt::Write;

/// One group's histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    pub max_ns: u64,
    /// Linear buckets of this many ns; log2 when `None`.
    pub linear_step: Option<u64>,
}

/// A duration for people: `950ns`, `12.3us`, `1.05ms`, `2.10s` (three significant digits).
pub fn human(ns: u64) -> String {
    let (value, unit) = match ns {
        0..=999 => return format!("{ns}ns"),
        1_000..=999_999 => (ns as f64 / 1e3, "us"),
        1_000_000..=999_999_999 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    if value >= 100.0 {
        format!("{value:.0}{unit}")
    } else if value >= 10.0 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.2}{unit}")
    }
}

impl Histogram {
    pub fn new(linear_step: Option<u64>) -> Histogram {
        Histogram {
            buckets: vec![0; tracer_common::HIST_BUCKETS as usize],
            linear_step,
            ..Histogram::default()
        }
    }

    /// The range `[lo, hi]` of bucket `b`, in ns.
    pub fn range(&self, b: usize) -> (u64, u64) {
        match self.linear_step {
            Some(step) => (b as u64 * step, (b as u64 + 1) * step - 1),
            None if b == 0 => (0, 1),
            None => (
                1u64 << b,
                ((1u128 << (b + 1)) - 1).min(u64::MAX as u128) as u64,
            ),
        }
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The `p`th percentile (0..=100), estimated as the upper bound of the bucket holding that
    /// rank, capped at the exact maximum.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = ((p / 100.0) * count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(self.range(b).1.min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// The bcc-style table (empty edge buckets trimmed) and the summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let used: Vec<usize> = (0..self.buckets.len())
            .filter(|&b| self.buckets[b] > 0)
            .collect();
        let (Some(&first), Some(&last)) = (used.first(), used.last()) else {
            return "no calls\n".into();
        };
        let peak = *self.buckets.iter().max().unwrap_or(&1);
        let _ = writeln!(out, "{:>24}   {:>8}  distribution", "duration", "count");
        for b in first..=last {
            let (lo, hi) = self.range(b);
            let n = self.buckets[b];
            let width = (n * 40).div_ceil(peak) as usize;
            let _ = writeln!(
                out,
                "{:>10} -> {:<10} : {n:>8}  |{:<40}|",
                human(lo),
                human(hi),
                "*".repeat(width)
            );
        }
        let count = self.count();
        let pct = |p| self.percentile(p).map_or("-".into(), human);
        let _ = writeln!(
            out,
            "count {count}, avg {}, p50 ~{}, p90 ~{}, p99 ~{} (estimated: bucket upper bounds), max {}",
            human(self.sum_ns / count.max(1)),
            pct(50.0),
            pct(90.0),
            pct(99.0),
            human(self.max_ns)
        );
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let buckets: Vec<serde_json::Value> = (0..self.buckets.len())
            .filter(|&b| self.buckets[b] > 0)
            .map(|b| {
                let (lo, hi) = self.range(b);
                serde_json::json!({"lo_ns": lo, "hi_ns": hi, "count": self.buckets[b]})
            })
            .collect();
        serde_json::json!({
            "buckets": buckets,
            "count": self.count(),
            "sum_ns": self.sum_ns,
            "avg_ns": self.sum_ns / self.count().max(1),
            "max_ns": self.max_ns,
            "p50_ns": self.percentile(50.0),
            "p90_ns": self.percentile(90.0),
            "p99_ns": self.percentile(99.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_ranges_and_human_units() {
        let h = Histogram::new(None);
        assert_eq!(h.range(0), (0, 1));
        assert_eq!(h.range(10), (1024, 2047));
        assert_eq!(h.range(63).1, u64::MAX);
        assert_eq!(human(999), "999ns");
        assert_eq!(human(1_048_576), "1.05ms");
        assert_eq!(human(33_554_431), "33.6ms");
        assert_eq!(human(2_500_000_000), "2.50s");
        let l = Histogram::new(Some(1000));
        assert_eq!(l.range(3), (3000, 3999));
    }

    #[test]
    fn table_summary_and_percentiles() {
        let mut h = Histogram::new(None);
        h.buckets[20] = 20; // 1.05ms .. 2.10ms
        h.buckets[22] = 10; // 4.19ms .. 8.39ms
        h.buckets[24] = 5; // 16.8ms .. 33.6ms
        h.sum_ns = 20 * 1_500_000 + 10 * 6_000_000 + 5 * 24_000_000;
        h.max_ns = 24_100_000;
        assert_eq!(h.count(), 35);
        assert_eq!(h.percentile(50.0), Some(2_097_151));
        assert_eq!(
            h.percentile(90.0),
            Some(24_100_000),
            "capped at the exact max"
        );
        let text = h.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            1 + 5 + 1,
            "header, buckets 20..=24, summary:\n{text}"
        );
        assert_eq!(
            lines[1],
            "    1.05ms -> 2.10ms     :       20  |****************************************|"
        );
        assert_eq!(
            lines[2],
            "    2.10ms -> 4.19ms     :        0  |                                        |"
        );
        assert_eq!(
            lines[3],
            "    4.19ms -> 8.39ms     :       10  |********************                    |"
        );
        assert_eq!(
            lines[6],
            "count 35, avg 6.00ms, p50 ~2.10ms, p90 ~24.1ms, p99 ~24.1ms (estimated: bucket upper bounds), max 24.1ms"
        );
        assert_eq!(Histogram::new(None).render(), "no calls\n");
    }
}
