//! Latency histograms: log2 (or linear) buckets of nanoseconds, rendered bcc-style with a
//! summary line; percentiles are estimated from the buckets and say so, the minimum and maximum
//! are exact, and no estimate falls outside them. Linear histograms end in an overflow row.

use std::fmt::Write;

/// One group's histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    pub max_ns: u64,
    /// The shortest call (0 with no call).
    pub min_ns: u64,
    /// Linear buckets of this many ns; log2 when `None`. The last linear bucket
    /// ([`tracer_common::HIST_OVERFLOW`]) holds every call from its low end on.
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
    // By the rounded value: 9.999 ms is `10.0ms`, not `10.00ms`.
    if value >= 99.95 {
        format!("{value:.0}{unit}")
    } else if value >= 9.995 {
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

    /// Whether bucket `b` is the overflow row of a linear histogram.
    pub fn is_overflow(&self, b: usize) -> bool {
        self.linear_step.is_some() && b as u64 == tracer_common::HIST_OVERFLOW
    }

    /// The range `[lo, hi]` of bucket `b`, in ns (the overflow row reaches the maximum).
    pub fn range(&self, b: usize) -> (u64, u64) {
        match self.linear_step {
            Some(step) if self.is_overflow(b) => {
                (b as u64 * step, self.max_ns.max(b as u64 * step))
            }
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
    /// rank, kept within the exact minimum and maximum.
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
                return Some(self.range(b).1.min(self.max_ns).max(self.min_ns));
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
            // The overflow row's top is the exact maximum, and says so.
            let hi = match self.is_overflow(b) {
                true => format!("max {}", human(hi)),
                false => human(hi),
            };
            let _ = writeln!(
                out,
                "{:>10} -> {:<10} : {n:>8}  |{:<40}|",
                human(lo),
                hi,
                "*".repeat(width)
            );
        }
        let count = self.count();
        let pct = |p| self.percentile(p).map_or("-".into(), human);
        let _ = writeln!(
            out,
            "count {count}, min {}, avg {}, p50 ~{}, p90 ~{}, p99 ~{} (estimated: bucket upper bounds), max {}",
            human(self.min_ns),
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
                let mut v = serde_json::json!({"lo_ns": lo, "hi_ns": hi, "count": self.buckets[b]});
                if self.is_overflow(b) {
                    v["overflow"] = true.into();
                }
                v
            })
            .collect();
        serde_json::json!({
            "buckets": buckets,
            "count": self.count(),
            "sum_ns": self.sum_ns,
            "avg_ns": self.sum_ns / self.count().max(1),
            "min_ns": self.min_ns,
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
        assert_eq!(human(9_999_999), "10.0ms");
        assert_eq!(human(99_999_999), "100ms");
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
        h.min_ns = 1_400_000;
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
            "count 35, min 1.40ms, avg 6.00ms, p50 ~2.10ms, p90 ~24.1ms, p99 ~24.1ms (estimated: bucket upper bounds), max 24.1ms"
        );
        assert_eq!(Histogram::new(None).render(), "no calls\n");
    }

    /// The case that used to lie: 1 ms steps, calls of 100 ms in what read as a "63-64 ms"
    /// row, with p50 at 64 ms and max at 100 ms.
    #[test]
    fn linear_overflow_has_its_own_row_and_percentiles_stay_within_min_and_max() {
        let mut h = Histogram::new(Some(1_000_000));
        h.buckets[2] = 1; // one 2.5 ms call
        h.buckets[63] = 4; // four 100 ms calls
        h.sum_ns = 2_500_000 + 4 * 100_000_000;
        h.min_ns = 2_500_000;
        h.max_ns = 100_000_000;
        assert_eq!(h.range(63), (63_000_000, 100_000_000));
        assert_eq!(h.percentile(10.0), Some(2_999_999));
        assert_eq!(h.percentile(50.0), Some(100_000_000));
        let text = h.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "    2.00ms -> 3.00ms     :        1  |**********                              |"
        );
        assert_eq!(
            lines[62],
            "    63.0ms -> max 100ms  :        4  |****************************************|"
        );
        assert_eq!(
            lines[63],
            "count 5, min 2.50ms, avg 80.5ms, p50 ~100ms, p90 ~100ms, p99 ~100ms (estimated: bucket upper bounds), max 100ms"
        );
        let json = h.json();
        assert_eq!(
            json["buckets"][1],
            serde_json::json!({"lo_ns": 63_000_000u64, "hi_ns": 100_000_000u64, "count": 4, "overflow": true})
        );
        assert_eq!(json["min_ns"], 2_500_000);
        // One call: every estimate is that call.
        let mut one = Histogram::new(None);
        one.buckets[21] = 1;
        (one.sum_ns, one.min_ns, one.max_ns) = (3_000_000, 3_000_000, 3_000_000);
        assert_eq!(one.percentile(1.0), Some(3_000_000));
        assert_eq!(one.percentile(99.0), Some(3_000_000));
    }
}
