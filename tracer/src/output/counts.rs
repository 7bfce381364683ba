//! In-kernel counts as tables (`--count-by`, `--sum`) or value histograms (`--hist`), sorted by
//! count, as text or one JSON object per report.

use std::fmt::Write as _;

use crate::output::stack::{self, Stack};

/// One key's totals. `keys` holds the rendered key columns in the order of `Report::columns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub keys: Vec<String>,
    pub stacks: Vec<Stack>,
    pub count: u64,
    /// `--sum` / `--hist`: the values added up (signed sources as two's complement).
    pub sum: Option<i128>,
    /// `--hist`: count per log2 bucket (index 0 holds 0 and 1), and of negative values.
    pub buckets: Vec<u64>,
    pub negative: u64,
}

/// When a report was taken: its time, and with `-I` its number and whether it is the last.
pub struct Stamp {
    /// Seconds since the run began.
    pub time_s: f64,
    /// Reports printed so far, this one included.
    pub number: u64,
    /// Text: start with a `--- T s (interval N) ---` line (`-I` runs).
    pub header: bool,
    /// The report at the end of the run.
    pub last: bool,
}

/// One report: the whole run, or one `-I` interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Upper-case names of the key columns (`COMM`, `ARG2`, ...).
    pub columns: Vec<String>,
    /// The summed or histogrammed value's name (`ret`), if any.
    pub value: Option<String>,
    pub hist: bool,
    /// Sorted by count, largest first, cut to `--top`.
    pub rows: Vec<Row>,
    /// Keys left out by `--top`.
    pub hidden: usize,
    /// Hits since the last report that the kernel could not count (the count map was full).
    pub uncounted: u64,
}

/// `[lo, hi]` of log2 bucket `b` (bucket 0 holds 0 and 1).
pub fn bucket_range(b: usize) -> (u64, u64) {
    match b {
        0 => (0, 1),
        63.. => (1 << 63, u64::MAX),
        _ => (1 << b, (1 << (b + 1)) - 1),
    }
}

impl Report {
    /// Sorts rows by count (then keys, so equal counts print in a stable order) and keeps the
    /// `top` largest.
    pub fn new(
        columns: Vec<String>,
        value: Option<String>,
        hist: bool,
        mut rows: Vec<Row>,
        top: Option<usize>,
    ) -> Report {
        rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.keys.cmp(&b.keys)));
        let hidden = top.map_or(0, |n| rows.len().saturating_sub(n));
        rows.truncate(rows.len() - hidden);
        Report {
            columns,
            value,
            hist,
            rows,
            hidden,
            uncounted: 0,
        }
    }

    /// The report as text (under its interval header with `-I`) or one JSON line with
    /// `time_s` and `interval`.
    pub fn render(&self, format: super::events::Format, stamp: &Stamp) -> String {
        match format {
            super::events::Format::Text => {
                let mut text = String::new();
                if stamp.header {
                    let what = if stamp.last {
                        "last interval"
                    } else {
                        "interval"
                    };
                    text = format!("--- {:.2} s ({what} {}) ---\n", stamp.time_s, stamp.number);
                }
                text += &self.text();
                if self.uncounted > 0 {
                    text += &format!(
                        "{} hits since the last report were not counted: the count map is full ({} keys); use fewer or coarser --count-by keys\n",
                        self.uncounted,
                        tracer_common::AGG_ENTRIES
                    );
                }
                text
            }
            super::events::Format::Json => {
                let mut extra = serde_json::Map::new();
                extra.insert("time_s".into(), stamp.time_s.into());
                extra.insert("interval".into(), stamp.number.into());
                extra.insert("uncounted".into(), self.uncounted.into());
                format!("{}\n", self.json(extra))
            }
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        if self.rows.is_empty() {
            return "no hits\n".into();
        }
        if self.hist {
            for row in &self.rows {
                self.hist_text(&mut out, row);
            }
        } else {
            self.table_text(&mut out);
        }
        if self.hidden > 0 {
            let _ = writeln!(out, "({} more keys not shown: --top)", self.hidden);
        }
        out
    }

    fn table_text(&self, out: &mut String) {
        let mut headers: Vec<String> = self.columns.clone();
        headers.push("COUNT".into());
        if let Some(value) = &self.value {
            headers.push(format!("SUM({value})"));
        }
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut cells = r.keys.clone();
                cells.push(r.count.to_string());
                if let Some(sum) = r.sum {
                    cells.push(sum.to_string());
                }
                cells
            })
            .collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|c| c[i].len())
                    .chain([headers[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let keys = self.columns.len();
        // Keys left-aligned, numbers right-aligned, like bcc's tables.
        let line = |cells: &[String]| -> String {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| match i < keys {
                    true => format!("{c:<w$}", w = widths[i]),
                    false => format!("{c:>w$}", w = widths[i]),
                })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(&headers));
        for (row, cells) in self.rows.iter().zip(&cells) {
            let _ = writeln!(out, "{}", line(cells));
            let mut frames = Vec::new();
            let _ = stack::write_text(&mut frames, &row.stacks);
            out.push_str(&String::from_utf8_lossy(&frames));
        }
    }

    fn hist_text(&self, out: &mut String, row: &Row) {
        let title: Vec<String> = self
            .columns
            .iter()
            .zip(&row.keys)
            .map(|(c, k)| format!("{}={k}", c.to_lowercase()))
            .collect();
        if !title.is_empty() {
            let _ = writeln!(out, "{}", title.join(" "));
        }
        let mut frames = Vec::new();
        let _ = stack::write_text(&mut frames, &row.stacks);
        out.push_str(&String::from_utf8_lossy(&frames));
        let value = self.value.as_deref().unwrap_or("value");
        let peak = row
            .buckets
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(row.negative)
            .max(1);
        let bar = |n: u64| "*".repeat((n * 40).div_ceil(peak) as usize);
        // Every row puts its colon at column 30 and ends its count at column 40.
        let _ = writeln!(out, "{value:>28}  {:>10}  distribution", "count");
        if row.negative > 0 {
            let _ = writeln!(
                out,
                "{:>28}  : {:>8}  |{:<40}|",
                "< 0",
                row.negative,
                bar(row.negative)
            );
        }
        let used: Vec<usize> = (0..row.buckets.len())
            .filter(|&b| row.buckets[b] > 0)
            .collect();
        if let (Some(&first), Some(&last)) = (used.first(), used.last()) {
            for b in first..=last {
                let (lo, hi) = bucket_range(b);
                let n = row.buckets[b];
                let _ = writeln!(out, "{lo:>12} -> {hi:<12}  : {n:>8}  |{:<40}|", bar(n));
            }
        }
        let sum = row.sum.unwrap_or(0);
        let _ = writeln!(
            out,
            "count {}, sum {sum}, avg {}\n",
            row.count,
            sum / i128::from(row.count.max(1))
        );
    }

    /// One JSON object: `{"rows": [{KEY: ..., "count": N, "sum": S, "hist": [...]}]}`; key
    /// fields are named by their lower-case column names.
    pub fn json(&self, extra: serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut obj = serde_json::Map::new();
                for (c, k) in self.columns.iter().zip(&r.keys) {
                    obj.insert(c.to_lowercase(), k.clone().into());
                }
                obj.insert("count".into(), r.count.into());
                if let Some(sum) = r.sum {
                    // i128 is not a JSON number type: sums fit i64 in practice, else a string.
                    let v = i64::try_from(sum).map_or_else(|_| sum.to_string().into(), Into::into);
                    obj.insert("sum".into(), v);
                }
                if !r.stacks.is_empty() {
                    obj.insert("stack".into(), stack::json(&r.stacks));
                }
                if self.hist {
                    let buckets: Vec<serde_json::Value> = (0..r.buckets.len())
                        .filter(|&b| r.buckets[b] > 0)
                        .map(|b| {
                            let (lo, hi) = bucket_range(b);
                            serde_json::json!({"lo": lo, "hi": hi, "count": r.buckets[b]})
                        })
                        .collect();
                    obj.insert("hist".into(), buckets.into());
                    obj.insert("negative".into(), r.negative.into());
                }
                obj.into()
            })
            .collect();
        let mut out = extra;
        out.insert("rows".into(), rows.into());
        out.insert("hidden".into(), self.hidden.into());
        out.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(keys: &[&str], count: u64, sum: Option<i128>) -> Row {
        Row {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            stacks: Vec::new(),
            count,
            sum,
            buckets: Vec::new(),
            negative: 0,
        }
    }

    #[test]
    fn tables_sort_by_count_align_numbers_and_cut_to_top() {
        let report = Report::new(
            vec!["COMM".into(), "PID".into()],
            Some("arg1".into()),
            false,
            vec![
                row(&["sh", "7"], 3, Some(30)),
                row(&["prog", "12"], 1000, Some(-5)),
                row(&["cat", "9"], 3, Some(1)),
            ],
            Some(2),
        );
        assert_eq!(
            report.text(),
            "COMM  PID  COUNT  SUM(arg1)\nprog  12    1000         -5\ncat   9        3          1\n(1 more keys not shown: --top)\n"
        );
        let v = report.json(serde_json::Map::new());
        assert_eq!(v["rows"][0]["comm"], "prog");
        assert_eq!(v["rows"][0]["sum"], -5);
        assert_eq!(v["hidden"], 1);
    }

    #[test]
    fn histograms_trim_empty_edges_and_show_negatives() {
        let mut r = row(&[], 6, Some(1 + 5 + 6 + 100 - 2 - 3));
        r.buckets = vec![0; 64];
        r.buckets[0] = 1;
        r.buckets[2] = 2;
        r.buckets[6] = 1;
        r.negative = 2;
        let report = Report::new(Vec::new(), Some("ret".into()), true, vec![r], None);
        let text = report.text();
        let lines: Vec<&str> = text.lines().collect();
        let expected = [
            "                         ret       count  distribution",
            "                         < 0  :        2  |****************************************|",
            "           0 -> 1             :        1  |********************                    |",
            "           2 -> 3             :        0  |                                        |",
            "           4 -> 7             :        2  |****************************************|",
        ];
        assert_eq!(lines[..5], expected, "{text}");
        assert!(
            lines[8].starts_with("          64 -> 127           :        1  |****"),
            "{text}"
        );
        assert_eq!(lines[9], "count 6, sum 107, avg 17");
        assert_eq!(bucket_range(63), (1 << 63, u64::MAX));
    }
}
