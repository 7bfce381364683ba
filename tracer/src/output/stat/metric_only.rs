//! `--metric-only`: one column per metric, as perf stat prints them.

use std::fmt::Write as _;

use super::{
    fixunit, json_string, timestamp, valid_only_metric, Count, Line, Metric, Renderer, Slot,
    StatFormat, TopoId, METRIC_ONLY_LEN,
};

/// One metric-only column.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum OnlyColumn {
    /// A counter that did not count in the period.
    Empty,
    /// A metric: perf's formatted value (empty where its other operand was not counted) and
    /// its name, whose length can widen the column.
    Value { text: String, unit: String },
}

impl OnlyColumn {
    /// The number alone, as perf's CSV and JSON print it (`  1.23%` -> `1.23`).
    fn digits(&self) -> String {
        match self {
            OnlyColumn::Empty => String::new(),
            OnlyColumn::Value { text, .. } => (text.trim_start().chars())
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect(),
        }
    }
}

/// A line's metric-only columns.
pub(super) fn metric_only_columns(line: &Line) -> Vec<OnlyColumn> {
    if !matches!(line.count, Count::Value(_)) {
        return vec![OnlyColumn::Empty];
    }
    let (text, unit) = match &line.metric {
        Metric::Value {
            value,
            format,
            unit,
        } => (format.apply(*value), unit.as_str()),
        Metric::Blank(unit) => (String::new(), *unit),
        Metric::None => return Vec::new(),
    };
    match valid_only_metric(unit) {
        true => vec![OnlyColumn::Value {
            text,
            unit: fixunit(unit, &line.event),
        }],
        false => Vec::new(),
    }
}

/// perf 6.1's `print_interval` columns before a metric-only header's names.
fn metric_only_interval_columns(slot: &Slot) -> String {
    match slot {
        Slot::Global => "#           time".into(),
        Slot::Cpu(_) => "#           time CPU    ".into(),
        Slot::Thread { .. } => "#           time             comm-pid".into(),
        Slot::Group { id, .. } => id.interval_header().into(),
    }
}

/// perf 6.1's `aggr_header_lens`: the indent of a metric-only header outside interval mode
/// (`--per-cache`, not in 6.1, as wide as `--per-core`'s).
fn metric_only_indent(slot: &Slot) -> usize {
    match slot {
        Slot::Global | Slot::Thread { .. } => 0,
        Slot::Cpu(_) => 6,
        Slot::Group { id, .. } => match id {
            TopoId::Socket(_) => 12,
            TopoId::Die { .. } => 18,
            TopoId::Core { .. } | TopoId::Cache { .. } => 24,
            TopoId::Node(_) => 6,
        },
    }
}

/// perf 6.1's `aggr_header_csv`, commas and all (whatever -x says; `--per-cache`, not in
/// 6.1, named as the others).
fn metric_only_csv_columns(slot: &Slot) -> &'static str {
    match slot {
        Slot::Global | Slot::Thread { .. } => "",
        Slot::Cpu(_) => "cpu,",
        Slot::Group { id, .. } => match id {
            TopoId::Socket(_) => "socket,cpus",
            TopoId::Die { .. } => "die,cpus",
            TopoId::Core { .. } => "core,cpus,",
            TopoId::Cache { .. } => "cache,cpus,",
            TopoId::Node(_) => "node,",
        },
    }
}

impl Renderer {
    /// `--metric-only`'s header line: in interval mode perf 6.1's `print_interval` columns
    /// (the human `#  time` columns on the first of every 25 intervals, CSV's `time,`), then its
    /// `print_metric_headers`: the aggregation's columns and one name per metric column.
    /// `units` are the names counter by counter (see `tally::metric_header_units`); human and
    /// CSV headers leave out what [`valid_only_metric`] leaves out, JSON's keep all of them.
    /// Empty in interval mode between repeats of the header.
    pub fn metric_only_header(&mut self, slot: &Slot, units: &[String], interval: bool) -> String {
        // perf counts its metric-only reports (`num_print_iv`, 26 to a cycle) and heads a
        // report outside interval mode on the first of a cycle only: a `--summary` after
        // intervals has no header.
        let report = self.metric_only_reports;
        self.metric_only_reports = (report + 1) % 26;
        if interval && !self.interval_turn() || !interval && report != 0 {
            return String::new();
        }
        let named: Vec<&str> = match self.format {
            StatFormat::Json => units.iter().map(String::as_str).collect(),
            _ => (units.iter())
                .map(String::as_str)
                .filter(|u| valid_only_metric(u))
                .collect(),
        };
        match &self.format {
            StatFormat::Human { .. } => {
                let mut out = match interval {
                    // `print_interval`'s columns, then the headers' " " prefix.
                    true => format!("{} ", metric_only_interval_columns(slot)),
                    false => " ".repeat(metric_only_indent(slot)),
                };
                for unit in named {
                    let _ = write!(out, "{unit:>METRIC_ONLY_LEN$} ");
                }
                out.push('\n');
                out
            }
            StatFormat::Csv { sep } => {
                let mut out = match interval {
                    // perf writes these commas whatever -x says.
                    true => " time,".to_string(),
                    false => String::new(),
                };
                out.push_str(metric_only_csv_columns(slot));
                for unit in named {
                    let _ = write!(out, "{unit}{sep}");
                }
                out.push('\n');
                out
            }
            StatFormat::Json => {
                let indent = match interval {
                    true => String::new(),
                    false => " ".repeat(metric_only_indent(slot)),
                };
                let keys: Vec<String> = (named.iter())
                    .map(|u| format!("\"unit\" : {}", json_string(u)))
                    .collect();
                format!("{{{indent}{}}}\n", keys.join(", "))
            }
        }
    }

    /// `--metric-only`'s rows: one per slot (the global sum, a CPU, a topology group), each
    /// counter's metric columns in counter order, with the interval timestamp in interval mode
    /// (perf 6.1's `print_metric_only*`, `print_no_aggr_metric` and `print_aggr`). A counter
    /// that did not count in the period (`<not supported>`, `<not counted>`) is one empty
    /// column; a counted one has a column per metric [`valid_only_metric`] keeps, none for
    /// rates per second and CPUs utilized.
    /// `summary`: `--summary`'s CSV label before each counter's columns, as perf's `printout`
    /// writes it.
    pub fn metric_only_rows(
        &self,
        lines: &[Line],
        interval_ns: Option<u64>,
        summary: bool,
    ) -> String {
        // A group's lines can differ in its CPU count (see `tally::build_lines`): the row is
        // the group's, named as its first counter's line names it.
        let same = |a: &Slot, b: &Slot| match (a, b) {
            (Slot::Group { id: x, .. }, Slot::Group { id: y, .. }) => x == y,
            (a, b) => a == b,
        };
        let mut slots: Vec<&Slot> = Vec::new();
        for line in lines {
            if !slots.iter().any(|s| same(s, &line.slot)) {
                slots.push(&line.slot);
            }
        }
        let mut out = String::new();
        for slot in slots {
            let row: Vec<&Line> = lines.iter().filter(|l| same(&l.slot, slot)).collect();
            out.push_str(&self.metric_only_prefix(slot, interval_ns));
            for line in row {
                if let (StatFormat::Csv { sep }, true) = (&self.format, summary) {
                    let _ = write!(out, "{:>16}{sep}", "summary");
                }
                for column in metric_only_columns(line) {
                    out.push_str(&self.metric_only_column(&column));
                }
            }
            out.push('\n');
        }
        out
    }

    /// The timestamp and the slot's name before a metric-only row.
    pub(super) fn metric_only_prefix(&self, slot: &Slot, interval_ns: Option<u64>) -> String {
        let mut out = String::new();
        match (&self.format, interval_ns) {
            (StatFormat::Human { .. }, Some(ns)) => {
                let _ = write!(out, "{:>16} ", timestamp(ns));
            }
            (StatFormat::Csv { sep }, Some(ns)) => {
                let _ = write!(out, "{:>16}{sep}", timestamp(ns));
            }
            (StatFormat::Json, Some(ns)) => {
                let _ = write!(out, "{{\"interval\" : {}}}", timestamp(ns));
            }
            // perf's `aggr_printout` opens the JSON object, outside interval mode only.
            (StatFormat::Json, None) if *slot != Slot::Global => out.push('{'),
            _ => {}
        }
        match (&self.format, slot) {
            (_, Slot::Global) | (_, Slot::Thread { .. }) => {}
            (StatFormat::Human { .. }, Slot::Cpu(cpu)) => {
                let _ = write!(out, "CPU{cpu:<7} ");
            }
            (StatFormat::Csv { sep }, Slot::Cpu(cpu)) => {
                let _ = write!(out, "CPU{cpu}{sep}");
            }
            (StatFormat::Json, Slot::Cpu(cpu)) => {
                let _ = write!(out, "\"cpu\" : \"{cpu}\", ");
            }
            (format, Slot::Group { id, cpus }) => match format {
                StatFormat::Human { .. } => out.push_str(&id.human(*cpus)),
                StatFormat::Csv { sep } => {
                    let _ = write!(out, "{}{sep}{cpus}{sep}", id.label());
                }
                StatFormat::Json => {
                    let _ = write!(
                        out,
                        "\"{}\" : \"{}\", \"aggregate-number\" : {cpus}, ",
                        id.json_key(),
                        id.label()
                    );
                }
            },
        }
        out
    }

    pub(super) fn metric_only_column(&self, column: &OnlyColumn) -> String {
        match (&self.format, column) {
            (StatFormat::Human { .. }, OnlyColumn::Empty) => format!("{:METRIC_ONLY_LEN$} ", ""),
            (StatFormat::Human { .. }, OnlyColumn::Value { text, unit }) => {
                // perf widens a column whose name is longer than the narrowest width.
                let width = match unit.len() > METRIC_ONLY_LEN {
                    true => unit.len() + 1,
                    false => METRIC_ONLY_LEN,
                };
                format!("{text:>width$} ")
            }
            (StatFormat::Csv { sep }, column) => format!("{}{sep}", column.digits()),
            (StatFormat::Json, column) => {
                format!("{{\"metric-value\" : {}}}", json_string(&column.digits()))
            }
        }
    }
}
