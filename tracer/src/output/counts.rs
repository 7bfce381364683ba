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
    /// `--hist`: count per bucket of the report's [`Shape`], then of the values below its
    /// range (negative values of a log2 histogram) and from its end on (linear).
    pub buckets: Vec<u64>,
    pub below: u64,
    pub above: u64,
}

/// The buckets of a `--hist`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// [`tracer_common::AGG_LOG2_BUCKETS`] buckets: 0 alone, then `2^(k-1)..2^k - 1`.
    Log2,
    /// `buckets` buckets of `step` from `min` (`--linear STEP,MIN,MAX`).
    Linear { step: u64, min: i64, buckets: u64 },
}

/// How a report's histograms are bucketed and labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub scale: Scale,
    /// The value is a size in bytes: rows read `4K -> 8K` (from 4096 up to, not including,
    /// 8192) instead of `4096 -> 8191`.
    pub bytes: bool,
}

impl Shape {
    /// How many buckets a row holds (beside `below` and `above`).
    pub fn buckets(&self) -> usize {
        match self.scale {
            Scale::Log2 => tracer_common::AGG_LOG2_BUCKETS as usize,
            Scale::Linear { buckets, .. } => buckets as usize,
        }
    }

    /// `[lo, hi]` of bucket `b`, inclusive.
    pub fn range(&self, b: usize) -> (i128, i128) {
        match self.scale {
            Scale::Log2 => bucket_range(b),
            Scale::Linear { step, min, .. } => {
                let lo = i128::from(min) + b as i128 * i128::from(step);
                (lo, lo + i128::from(step) - 1)
            }
        }
    }

    /// Where the buckets begin and end: the bounds of the `below` and `above` rows.
    fn ends(&self) -> (i128, i128) {
        (self.range(0).0, self.range(self.buckets() - 1).1 + 1)
    }

    /// A bucket's label: `lo -> hi` (inclusive), a lone value, or for bytes `4K -> 8K`.
    fn label(&self, b: usize) -> String {
        let (lo, hi) = self.range(b);
        match (lo == hi, self.bytes) {
            (true, _) => number(lo, self.bytes),
            (false, false) => format!("{lo} -> {hi}"),
            (false, true) => format!("{} -> {}", number(lo, true), number(hi + 1, true)),
        }
    }
}

/// A number as a label: in bytes, a whole number of K, M, G, T, P or E (1024-based) when it is
/// one, else as it is.
fn number(n: i128, bytes: bool) -> String {
    if bytes && n != 0 {
        for (shift, unit) in [
            (60, "E"),
            (50, "P"),
            (40, "T"),
            (30, "G"),
            (20, "M"),
            (10, "K"),
        ] {
            if n % (1i128 << shift) == 0 {
                return format!("{}{unit}", n >> shift);
            }
        }
    }
    n.to_string()
}

/// A JSON number for a bucket bound (u64 or i64, whichever holds it).
fn json_number(n: i128) -> serde_json::Value {
    match u64::try_from(n) {
        Ok(n) => n.into(),
        Err(_) => i64::try_from(n).map_or_else(|_| n.to_string().into(), Into::into),
    }
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
    /// `--hist`: the buckets of every row.
    pub hist: Option<Shape>,
    /// Sorted by count, largest first, cut to `--top`.
    pub rows: Vec<Row>,
    /// Keys left out by `--top`.
    pub hidden: usize,
    /// Hits since the last report that the kernel could not count (the count map was full).
    pub uncounted: u64,
}

/// `[lo, hi]` of log2 bucket `b`: 0 holds 0 alone, `b` the values `2^(b-1)` to `2^b - 1`.
pub fn bucket_range(b: usize) -> (i128, i128) {
    match b {
        0 => (0, 0),
        _ => (1i128 << (b - 1), (1i128 << b) - 1),
    }
}

impl Report {
    /// Sorts rows by count (then keys, so equal counts print in a stable order) and keeps the
    /// `top` largest.
    pub fn new(
        columns: Vec<String>,
        value: Option<String>,
        hist: Option<Shape>,
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
                extra.insert("type".into(), "counts".into());
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
        if let Some(shape) = &self.hist {
            for row in &self.rows {
                self.hist_text(&mut out, row, shape);
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

    fn hist_text(&self, out: &mut String, row: &Row, shape: &Shape) {
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
        let value = match shape.bytes {
            true => format!("{value} (bytes)"),
            false => value.to_string(),
        };
        let peak = (row.buckets.iter().copied())
            .chain([row.below, row.above, 1])
            .max()
            .unwrap_or(1);
        let bar = |n: u64| "*".repeat((n * 40).div_ceil(peak) as usize);
        // Every row puts its colon at column 30 and ends its count at column 40.
        let _ = writeln!(out, "{value:>28}  {:>10}  distribution", "count");
        let (start, end) = shape.ends();
        let line = |out: &mut String, label: &str, n: u64| {
            let _ = writeln!(out, "{label:>28}  : {n:>8}  |{:<40}|", bar(n));
        };
        if row.below > 0 {
            line(out, &format!("< {}", number(start, shape.bytes)), row.below);
        }
        let used: Vec<usize> = (0..row.buckets.len())
            .filter(|&b| row.buckets[b] > 0)
            .collect();
        // Empty rows between the first and last used ones are shown, with a count of 0.
        if let (Some(&first), Some(&last)) = (used.first(), used.last()) {
            for b in first..=last {
                line(out, &shape.label(b), row.buckets[b]);
            }
        }
        if row.above > 0 {
            line(out, &format!(">= {}", number(end, shape.bytes)), row.above);
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
                let mut truncated = Vec::new();
                for (c, k) in self.columns.iter().zip(&r.keys) {
                    // A string key (`"text"`, cut `"text"...`) as the string itself; a cut one
                    // is named in `truncated`, as in event lines.
                    let (text, cut) = match k.strip_suffix("...") {
                        Some(quoted) if quoted.starts_with('"') => (quoted, true),
                        _ => (k.as_str(), false),
                    };
                    // Names stay strings (a comm may be all digits); numbers, flags and
                    // booleans of the other columns are typed (docs/json.md).
                    let names = ["COMM", "PROBE", "SYSCALL", "CGROUP", "CONTAINER", "POD"];
                    let value = match text.starts_with('"') && text.ends_with('"') {
                        true => serde_json::from_str::<String>(text).map_or(k.clone(), |s| s).into(),
                        false if names.contains(&c.as_str()) => k.clone().into(),
                        false => super::json::typed_text(k),
                    };
                    if cut {
                        truncated.push(serde_json::Value::from(c.to_lowercase()));
                    }
                    obj.insert(c.to_lowercase(), value);
                }
                if !truncated.is_empty() {
                    obj.insert("truncated".into(), truncated.into());
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
                if let Some(shape) = &self.hist {
                    let buckets: Vec<serde_json::Value> = (0..r.buckets.len())
                        .filter(|&b| r.buckets[b] > 0)
                        .map(|b| {
                            let (lo, hi) = shape.range(b);
                            serde_json::json!({"lo": json_number(lo), "hi": json_number(hi), "count": r.buckets[b]})
                        })
                        .collect();
                    obj.insert("hist".into(), buckets.into());
                    // Below the range: negative values (log2) or under MIN (linear).
                    obj.insert("below".into(), r.below.into());
                    obj.insert("above".into(), r.above.into());
                    if shape.scale == Scale::Log2 {
                        obj.insert("negative".into(), r.below.into());
                    }
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
            below: 0,
            above: 0,
        }
    }

    #[test]
    fn tables_sort_by_count_align_numbers_and_cut_to_top() {
        let report = Report::new(
            vec!["COMM".into(), "PID".into()],
            Some("arg1".into()),
            None,
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
        assert_eq!(v["rows"][0]["pid"], 12);
        assert_eq!(v["rows"][0]["sum"], -5);
        assert_eq!(v["hidden"], 1);
    }

    const LOG2: Shape = Shape {
        scale: Scale::Log2,
        bytes: false,
    };

    #[test]
    fn histograms_trim_empty_edges_keep_0_and_1_apart_and_show_negatives() {
        let mut r = row(&[], 7, Some(1 + 5 + 6 + 100 - 2 - 3));
        r.buckets = vec![0; 65];
        r.buckets[0] = 1; // 0
        r.buckets[1] = 1; // 1
        r.buckets[3] = 2; // 5, 6
        r.buckets[7] = 1; // 100
        r.below = 2;
        let report = Report::new(Vec::new(), Some("ret".into()), Some(LOG2), vec![r], None);
        let text = report.text();
        let lines: Vec<&str> = text.lines().collect();
        let expected = [
            "                         ret       count  distribution",
            "                         < 0  :        2  |****************************************|",
            "                           0  :        1  |********************                    |",
            "                           1  :        1  |********************                    |",
            "                      2 -> 3  :        0  |                                        |",
            "                      4 -> 7  :        2  |****************************************|",
            "                     8 -> 15  :        0  |                                        |",
            "                    16 -> 31  :        0  |                                        |",
            "                    32 -> 63  :        0  |                                        |",
            "                   64 -> 127  :        1  |********************                    |",
            "count 7, sum 107, avg 15",
            "",
        ];
        assert_eq!(lines, expected, "{text}");
        assert_eq!(bucket_range(64), (1 << 63, u64::MAX as i128));
        let v = report.json(serde_json::Map::new());
        assert_eq!(
            v["rows"][0]["hist"][0],
            serde_json::json!({"lo": 0, "hi": 0, "count": 1})
        );
        assert_eq!(v["rows"][0]["negative"], 2);
    }

    #[test]
    fn linear_histograms_have_edge_rows_and_bytes_read_as_sizes() {
        let shape = Shape {
            scale: Scale::Linear {
                step: 10,
                min: 0,
                buckets: 5,
            },
            bytes: false,
        };
        let mut r = row(&[], 9, Some(0));
        r.buckets = vec![3, 0, 2, 0, 0];
        r.above = 4;
        let report = Report::new(Vec::new(), Some("arg0".into()), Some(shape), vec![r], None);
        let lines: Vec<String> = report.text().lines().map(String::from).collect();
        assert_eq!(
            lines[1..5],
            [
                "                      0 -> 9  :        3  |******************************          |",
                "                    10 -> 19  :        0  |                                        |",
                "                    20 -> 29  :        2  |********************                    |",
                "                       >= 50  :        4  |****************************************|",
            ]
        );
        let v = report.json(serde_json::Map::new());
        assert_eq!(
            (
                v["rows"][0]["above"].as_u64(),
                v["rows"][0]["below"].as_u64()
            ),
            (Some(4), Some(0))
        );
        let bytes = Shape {
            scale: Scale::Log2,
            bytes: true,
        };
        assert_eq!(bytes.label(13), "4K -> 8K");
        assert_eq!(bytes.label(21), "1M -> 2M");
        assert_eq!(bytes.label(1), "1");
        assert_eq!(bytes.label(2), "2 -> 4");
        assert_eq!(bytes.label(64), "8E -> 16E");
        let linear_bytes = Shape {
            scale: Scale::Linear {
                step: 1536,
                min: 0,
                buckets: 2,
            },
            bytes: true,
        };
        assert_eq!(linear_bytes.label(1), "1536 -> 3K");
        assert_eq!(linear_bytes.ends(), (0, 3072));
    }
}
