//! `tracer stat`'s counters: readings, multiplex scaling, aggregation, perf's derived metrics,
//! repeat statistics, and the three renderers (perf stat's human columns, `-x` CSV, `-j` JSON).
//!
//! The shapes are those of perf 6.1's `tools/perf/util/stat-display.c` (Debian's perf, which the
//! CLI tests compare against): column widths, the `<not counted>`/`<not supported>` lines, the
//! CSV field order and JSON keys, the footer. Where perf-stat(1)'s CSV FORMAT section and perf
//! itself disagree (the `-r` variance column comes right after the event name, before the run
//! time), the renderer follows perf: CSV consumers are written against its output.

use std::fmt::Write as _;

mod metric_only;
mod metrics;

pub use metrics::{metric, Metric, MetricFormat, MetricInput};

/// How counts are printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatFormat {
    /// perf stat's columns; `big_num` puts thousands separators in counts.
    Human { big_num: bool },
    /// `-x SEP`: perf stat's CSV (not quoted; SEP may be several characters).
    Csv { sep: String },
    /// `-j`: one JSON object per counter line, perf stat's keys.
    Json,
}

/// One counter's raw reading: value and the two times (perf_event_open(2), "Reading results").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    /// `time_enabled`, ns.
    pub enabled: u64,
    /// `time_running`, ns: below `enabled` when the counter was multiplexed.
    pub running: u64,
}

impl Reading {
    /// The sum of two readings (perf's AGGR_GLOBAL sums values and both times).
    pub fn plus(self, other: Reading) -> Reading {
        Reading {
            value: self.value.wrapping_add(other.value),
            enabled: self.enabled.wrapping_add(other.enabled),
            running: self.running.wrapping_add(other.running),
        }
    }

    /// What happened since `earlier` (interval mode: the kernel's counts only grow).
    pub fn since(self, earlier: Reading) -> Reading {
        Reading {
            value: self.value.saturating_sub(earlier.value),
            enabled: self.enabled.saturating_sub(earlier.enabled),
            running: self.running.saturating_sub(earlier.running),
        }
    }

    /// The multiplexing estimate `value * enabled / running` (perf's
    /// `perf_counts_values__scale`); `None` when the counter never ran (`<not counted>`).
    /// Without `scale` (`--no-scale`) the raw value, unless it never ran.
    pub fn scaled(&self, scale: bool) -> Option<f64> {
        if self.running == 0 {
            return None;
        }
        if scale && self.running < self.enabled {
            Some(self.value as f64 * self.enabled as f64 / self.running as f64)
        } else {
            Some(self.value as f64)
        }
    }
}

/// Sums readings (one counter over CPUs or threads).
pub fn aggregate<'a>(readings: impl IntoIterator<Item = &'a Reading>) -> Reading {
    readings
        .into_iter()
        .fold(Reading::default(), |sum, r| sum.plus(*r))
}

/// Running mean and variance (Welford), as perf's `update_stats`/`stddev_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    pub n: u64,
    pub mean: f64,
    m2: f64,
}

impl Stats {
    pub fn push(&mut self, value: f64) {
        self.n += 1;
        let delta = value - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (value - self.mean);
    }

    /// The standard error of the mean (perf's `stddev_stats`: sqrt(variance / n)), 0 below two
    /// samples.
    pub fn stddev_of_mean(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let variance = self.m2 / (self.n - 1) as f64;
        (variance / self.n as f64).sqrt()
    }

    /// [`Self::stddev_of_mean`] as a percentage of the mean (perf's `rel_stddev_stats`).
    pub fn relative_pct(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.stddev_of_mean() / self.mean
        }
    }
}

/// What a counter measures, for perf's derived metrics (`stat-shadow.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// task-clock or cpu-clock (nanoseconds).
    Clock,
    Cycles,
    Instructions,
    Branches,
    BranchMisses,
    CacheReferences,
    CacheMisses,
    StalledFrontend,
    StalledBackend,
    /// A hardware cache's read accesses (`L1-dcache-loads`), by cache id.
    CacheLoads(u8),
    /// A hardware cache's read misses (`L1-dcache-load-misses`), by cache id.
    CacheLoadMisses(u8),
    Other,
}

/// Which rows a line belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Everything summed (the default).
    Global,
    /// `-A`: one CPU.
    Cpu(u32),
    /// `--per-thread`: one thread.
    Thread { comm: String, tid: u32 },
    /// `--per-socket`, `--per-die`, `--per-core`, `--per-node`, `--per-cache`: a topology
    /// group and the number of CPUs summed into it.
    Group { id: TopoId, cpus: u32 },
}

/// A topology group, printed as perf names it (`S0`, `S0-D0`, `S0-D0-C1`, `N0`, `S0-D0-L3-ID0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TopoId {
    Socket(u32),
    Die {
        socket: u32,
        die: u32,
    },
    Core {
        socket: u32,
        die: u32,
        core: u32,
    },
    Node(u32),
    Cache {
        socket: u32,
        die: u32,
        level: u8,
        id: u32,
    },
}

impl TopoId {
    pub fn label(&self) -> String {
        match *self {
            TopoId::Socket(s) => format!("S{s}"),
            TopoId::Die { socket, die } => format!("S{socket}-D{die}"),
            TopoId::Core { socket, die, core } => format!("S{socket}-D{die}-C{core}"),
            TopoId::Node(n) => format!("N{n}"),
            TopoId::Cache {
                socket,
                die,
                level,
                id,
            } => match id {
                u32::MAX => format!("S{socket}-D{die}-L{level}-ID-1"),
                id => format!("S{socket}-D{die}-L{level}-ID{id}"),
            },
        }
    }

    /// perf's JSON key for the group.
    fn json_key(&self) -> &'static str {
        match self {
            TopoId::Socket(_) => "socket",
            TopoId::Die { .. } => "die",
            TopoId::Core { .. } => "core",
            TopoId::Node(_) => "node",
            TopoId::Cache { .. } => "cache",
        }
    }

    /// The human prefix: perf 6.1's `aggr_printout` widths (`--per-cache`, absent from 6.1,
    /// takes perf 6.3's 22-column name field).
    fn human(&self, cpus: u32) -> String {
        let text = match *self {
            TopoId::Socket(s) => format!("S{s:<5}"),
            TopoId::Die { socket, die } => format!("S{socket}-D{die:<8}"),
            TopoId::Core { socket, die, core } => format!("S{socket}-D{die}-C{core:<8}"),
            TopoId::Node(n) => format!("N{n:<5}"),
            TopoId::Cache { .. } => format!("{:<22}", self.label()),
        };
        format!("{text} {cpus:>4} ")
    }

    /// The interval header's columns before `counts` (perf 6.1's `print_interval`).
    fn interval_header(&self) -> &'static str {
        match self {
            TopoId::Socket(_) => "#           time socket cpus",
            TopoId::Die { .. } => "#           time die          cpus",
            TopoId::Core { .. } => "#           time core            cpus",
            TopoId::Node(_) => "#           time node   cpus",
            TopoId::Cache { .. } => "#           time cache                  cpus",
        }
    }
}

/// A counter's printed value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Count {
    /// In the display unit (msec for clocks).
    Value(f64),
    /// Opened, but never ran in the period.
    NotCounted,
    /// The kernel or CPU cannot count it (ENOENT, EOPNOTSUPP...).
    NotSupported,
}

/// One printed counter line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub slot: Slot,
    pub count: Count,
    /// `msec` for clocks, a PMU event's sysfs unit, else empty.
    pub unit: String,
    /// Print two decimals (clock counts in msec) instead of none.
    pub fractional: bool,
    pub event: String,
    pub cgroup: Option<String>,
    /// Running and enabled time, ns (for the run-time column and the running percentage).
    pub running: u64,
    pub enabled: u64,
    /// The relative standard error over `-r` runs, percent.
    pub noise: Option<f64>,
    pub metric: Metric,
}

/// The end of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct Footer {
    /// Elapsed wall time of each run, as statistics (one sample without `-r`).
    pub elapsed: Stats,
    /// The command's user and system CPU time, seconds (one run of a command, no `-a`).
    pub rusage: Option<(f64, f64)>,
    /// `-n`: no counter lines were printed.
    pub null_run: bool,
}

/// perf's `--interval-clear` sequence (home, clear screen), written with puts(3).
pub const CONSOLE_CLEAR: &str = "\x1b[H\x1b[2J\n";

/// perf 6.1's column widths.
const COUNTS_LEN: usize = 18;
const EVNAME_LEN: usize = 32;
/// Event name width of `<not counted>`/`<not supported>` lines.
const BAD_EVNAME_LEN: usize = 25;
const METRIC_LEN: usize = 35;
/// perf's `metric_only_len`: the narrowest metric-only column.
const METRIC_ONLY_LEN: usize = 20;

/// perf's `valid_only_metric`: rates per second and CPUs utilized are no metric-only columns.
pub fn valid_only_metric(unit: &str) -> bool {
    !unit.contains("/sec") && !unit.contains("CPUs utilized")
}

/// perf's `fixunit`: a ratio `of all ...` is named after its event in metric-only headers.
pub fn fixunit(unit: &str, event: &str) -> String {
    match unit.starts_with("of all") {
        true => format!("{event} {unit}"),
        false => unit.to_string(),
    }
}

/// Renders lines, headers and footers in one format.
#[derive(Clone, Debug)]
pub struct Renderer {
    pub format: StatFormat,
    /// Width of the unit column (perf: the longest unit, at least 4).
    pub unit_width: usize,
    /// `-r N` with N > 1: lines carry a variance.
    pub repeated: bool,
    /// `-G`: lines carry a cgroup column.
    pub cgroups: bool,
    /// Intervals printed so far, modulo perf's 25 between headers.
    intervals_printed: u32,
    /// `--metric-only` reports printed so far, modulo perf's 26.
    metric_only_reports: u32,
    /// `--interval-clear`: the header on every (cleared) screen.
    pub header_every_interval: bool,
    /// The locale's thousands separator (perf prints counts with `%'`): none in the C locale.
    pub thousands: String,
}

/// `1234567.891` -> `1,234,567.891` with `sep` `,` (the integer part grouped by three).
pub fn group_thousands(text: &str, sep: &str) -> String {
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (int, frac) = match rest.find('.') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push_str(sep);
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}{frac}")
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// `secs.nanos` with perf's `%lu.%09lu`.
fn timestamp(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// perf's running percentage in CSV and JSON: `100 * run / ena` in integer arithmetic.
fn csv_running_pct(running: u64, enabled: u64) -> f64 {
    if running == enabled || enabled == 0 {
        100.0
    } else {
        (100u128 * running as u128 / enabled as u128) as f64
    }
}

impl Renderer {
    pub fn new(format: StatFormat, units: &[&str], repeated: bool, cgroups: bool) -> Renderer {
        let unit_width = units.iter().map(|u| u.len()).max().unwrap_or(0).max(4);
        Renderer {
            format,
            unit_width,
            repeated,
            cgroups,
            intervals_printed: 0,
            metric_only_reports: 0,
            header_every_interval: false,
            thousands: ",".into(),
        }
    }

    /// `\n Performance counter stats for 'X' (N runs):\n\n` (human output only).
    pub fn header(&self, title: &str, runs: u32) -> String {
        match self.format {
            StatFormat::Human { .. } => {
                let runs = if runs > 1 {
                    format!(" ({runs} runs)")
                } else {
                    String::new()
                };
                format!("\n Performance counter stats for {title}{runs}:\n\n")
            }
            _ => String::new(),
        }
    }

    /// Whether this interval prints the header: perf prints it on the first of every 25
    /// intervals (`print_interval`'s `num_print_interval`), or on every one with
    /// `--interval-clear`.
    fn interval_turn(&mut self) -> bool {
        let first = self.intervals_printed == 0;
        self.intervals_printed = (self.intervals_printed + 1) % 25;
        first || self.header_every_interval
    }

    /// The column header of interval output (human only; repeated every 25 intervals).
    pub fn interval_header(&mut self, slot: &Slot) -> String {
        if !self.interval_turn() || !matches!(self.format, StatFormat::Human { .. }) {
            return String::new();
        }
        let slot = match slot {
            Slot::Global => "#           time".to_string(),
            Slot::Cpu(_) => format!("#{:>15} {:<10}", "time", "CPU"),
            Slot::Thread { .. } => format!("#{:>15} {:>16}-{:<8}", "time", "comm", "pid"),
            Slot::Group { id, .. } => id.interval_header().to_string(),
        };
        format!(
            "{slot} {:>COUNTS_LEN$} {:>w$} events\n",
            "counts",
            "unit",
            w = self.unit_width
        )
    }

    /// One counter line, with the interval timestamp (ns since the start) in interval mode.
    pub fn line(&self, line: &Line, interval_ns: Option<u64>) -> String {
        match &self.format {
            StatFormat::Human { big_num } => {
                let sep = Some(self.thousands.as_str()).filter(|s| *big_num && !s.is_empty());
                self.human_line(line, interval_ns, sep)
            }
            StatFormat::Csv { sep } => self.csv_line(line, interval_ns, sep),
            StatFormat::Json => self.json_line(line, interval_ns),
        }
    }

    fn value_text(line: &Line, thousands: Option<&str>) -> Option<String> {
        match line.count {
            Count::Value(v) => {
                let text = if line.fractional {
                    format!("{v:.2}")
                } else {
                    format!("{v:.0}")
                };
                Some(match thousands {
                    Some(sep) => group_thousands(&text, sep),
                    None => text,
                })
            }
            _ => None,
        }
    }

    fn bad_text(count: Count) -> &'static str {
        match count {
            Count::NotSupported => "<not supported>",
            _ => "<not counted>",
        }
    }

    fn human_line(&self, line: &Line, interval_ns: Option<u64>, thousands: Option<&str>) -> String {
        let mut out = String::new();
        if let Some(ns) = interval_ns {
            let _ = write!(out, "{:>16} ", timestamp(ns));
        }
        match &line.slot {
            Slot::Global => {}
            Slot::Cpu(cpu) => {
                let _ = write!(out, "CPU{cpu:<7} ");
            }
            Slot::Thread { comm, tid } => {
                let _ = write!(out, "{comm:>16}-{tid:<8} ");
            }
            Slot::Group { id, cpus } => out.push_str(&id.human(*cpus)),
        }
        let value = Self::value_text(line, thousands);
        let counted = value.is_some();
        let value = value.unwrap_or_else(|| Self::bad_text(line.count).into());
        let name_width = if counted { EVNAME_LEN } else { BAD_EVNAME_LEN };
        let _ = write!(
            out,
            "{value:>COUNTS_LEN$} {:<uw$} {:<name_width$}",
            line.unit,
            line.event,
            uw = self.unit_width
        );
        if let Some(cgroup) = &line.cgroup {
            let _ = write!(out, " {cgroup}");
        } else if self.cgroups {
            out.push(' ');
        }
        match (&line.metric, counted) {
            (
                Metric::Value {
                    value,
                    format,
                    unit,
                },
                true,
            ) => {
                let text = format!(" # {}", format.apply(*value));
                let pad = METRIC_LEN.saturating_sub(text.len() + 1);
                let _ = write!(out, "{text} {unit:<pad$}");
            }
            _ => out.push_str(&" ".repeat(METRIC_LEN)),
        }
        if let Some(pct) = line.noise {
            if pct != 0.0 {
                let _ = write!(out, "  ( +-{pct:6.2}% )");
            }
        }
        if line.running != line.enabled && line.enabled > 0 {
            let _ = write!(
                out,
                "  ({:.2}%)",
                100.0 * line.running as f64 / line.enabled as f64
            );
        }
        out.push('\n');
        out
    }

    fn csv_line(&self, line: &Line, interval_ns: Option<u64>, sep: &str) -> String {
        let mut out = String::new();
        if let Some(ns) = interval_ns {
            let _ = write!(out, "{:>16}{sep}", timestamp(ns));
        }
        match &line.slot {
            Slot::Global => {}
            Slot::Cpu(cpu) => {
                let _ = write!(out, "CPU{cpu}{sep}");
            }
            Slot::Thread { comm, tid } => {
                let _ = write!(out, "{comm}-{tid}{sep}");
            }
            Slot::Group { id, cpus } => {
                let _ = write!(out, "{}{sep}{cpus}{sep}", id.label());
            }
        }
        let value = Self::value_text(line, None);
        let counted = value.is_some();
        let value = value.unwrap_or_else(|| Self::bad_text(line.count).into());
        let _ = write!(out, "{value}{sep}{}{sep}{}", line.unit, line.event);
        if self.cgroups {
            let _ = write!(out, "{sep}{}", line.cgroup.as_deref().unwrap_or(""));
        }
        if self.repeated {
            let _ = write!(out, "{sep}{:.2}%", line.noise.unwrap_or(0.0));
        }
        let _ = write!(
            out,
            "{sep}{}{sep}{:.2}",
            line.running,
            csv_running_pct(line.running, line.enabled)
        );
        match (&line.metric, counted) {
            (
                Metric::Value {
                    value,
                    format,
                    unit,
                },
                true,
            ) => {
                // perf keeps the number's digits only: `  1.23%` -> `1.23`.
                let text = format.apply(*value);
                let digits: String = text
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let _ = write!(out, "{sep}{digits}{sep}{}", unit.trim_start());
            }
            _ => {
                let _ = write!(out, "{sep}{sep}");
            }
        }
        out.push('\n');
        out
    }

    fn json_line(&self, line: &Line, interval_ns: Option<u64>) -> String {
        let mut out = String::from("{");
        if let Some(ns) = interval_ns {
            let _ = write!(out, "\"interval\" : {}, ", timestamp(ns));
        }
        match &line.slot {
            Slot::Global => {}
            Slot::Cpu(cpu) => {
                let _ = write!(out, "\"cpu\" : \"{cpu}\", ");
            }
            Slot::Thread { comm, tid } => {
                let _ = write!(
                    out,
                    "\"thread\" : {}, ",
                    json_string(&format!("{comm}-{tid}"))
                );
            }
            Slot::Group { id, cpus } => {
                let _ = write!(
                    out,
                    "\"{}\" : \"{}\", \"aggregate-number\" : {cpus}, ",
                    id.json_key(),
                    id.label()
                );
            }
        }
        let counted = matches!(line.count, Count::Value(_));
        let value = match line.count {
            Count::Value(v) => format!("{v:.6}"),
            bad => Self::bad_text(bad).into(),
        };
        let _ = write!(
            out,
            "\"counter-value\" : \"{value}\", \"unit\" : \"{}\", \"event\" : {}, ",
            line.unit,
            json_string(&line.event)
        );
        if self.cgroups {
            let _ = write!(
                out,
                "\"cgroup\" : {}, ",
                json_string(line.cgroup.as_deref().unwrap_or(""))
            );
        }
        if self.repeated {
            let _ = write!(out, "\"variance\" : {:.2}, ", line.noise.unwrap_or(0.0));
        }
        let _ = write!(
            out,
            "\"event-runtime\" : {}, \"pcnt-running\" : {:.2}, ",
            line.running,
            csv_running_pct(line.running, line.enabled)
        );
        let (value, unit) = match (&line.metric, counted) {
            (Metric::Value { value, unit, .. }, true) => (*value, unit.as_str()),
            (Metric::Blank(unit), true) => (0.0, *unit),
            _ => (0.0, ""),
        };
        let _ = write!(
            out,
            "\"metric-value\" : {value:.6}, \"metric-unit\" : {}}}",
            json_string(unit)
        );
        out.push('\n');
        out
    }

    /// The elapsed/user/sys block (human output only; interval mode has none).
    pub fn footer(&self, footer: &Footer) -> String {
        if !matches!(self.format, StatFormat::Human { .. }) {
            return String::new();
        }
        let mut out = String::new();
        if !footer.null_run {
            out.push('\n');
        }
        let elapsed = &footer.elapsed;
        if elapsed.n <= 1 {
            let _ = write!(out, " {:17.9} seconds time elapsed", elapsed.mean / 1e9);
            if let Some((user, sys)) = footer.rusage {
                let _ = write!(
                    out,
                    "\n\n {user:17.9} seconds user\n {sys:17.9} seconds sys\n"
                );
            }
        } else {
            let sd = elapsed.stddev_of_mean() / 1e9;
            // perf: two more significant digits than the standard deviation's first one.
            let precision = if sd > 1.0 || sd <= 0.0 {
                2
            } else {
                (-sd.log10()).ceil() as usize + 2
            };
            let _ = write!(
                out,
                " {:17.p$} +- {sd:.p$} seconds time elapsed",
                elapsed.mean / 1e9,
                p = precision
            );
            let pct = elapsed.relative_pct();
            if pct != 0.0 {
                let _ = write!(out, "  ( +-{pct:6.2}% )");
            }
        }
        out.push_str("\n\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::metrics::per_second;
    use super::*;

    fn line(event: &str, count: Count, metric: Metric) -> Line {
        Line {
            slot: Slot::Global,
            count,
            unit: String::new(),
            fractional: false,
            event: event.into(),
            cgroup: None,
            running: 1_262_000,
            enabled: 1_262_000,
            noise: None,
            metric,
        }
    }

    fn rate(value: f64, unit: &str) -> Metric {
        Metric::Value {
            value,
            format: MetricFormat::Ratio,
            unit: unit.into(),
        }
    }

    fn task_clock() -> Line {
        Line {
            unit: "msec".into(),
            fractional: true,
            ..line(
                "task-clock",
                Count::Value(1.26),
                rate(0.623, "CPUs utilized"),
            )
        }
    }

    fn human() -> Renderer {
        Renderer::new(StatFormat::Human { big_num: true }, &["msec"], false, false)
    }

    fn csv() -> Renderer {
        Renderer::new(StatFormat::Csv { sep: ",".into() }, &["msec"], false, false)
    }

    #[test]
    fn scaling_follows_perf_counts_values_scale() {
        let full = Reading {
            value: 100,
            enabled: 1000,
            running: 1000,
        };
        assert_eq!(full.scaled(true), Some(100.0));
        let quarter = Reading {
            running: 250,
            ..full
        };
        assert_eq!(quarter.scaled(true), Some(400.0));
        assert_eq!(quarter.scaled(false), Some(100.0));
        let never = Reading { running: 0, ..full };
        assert_eq!(never.scaled(true), None);
        assert_eq!(never.scaled(false), None);
        // Global aggregation sums values and times, then scales once: (10 + 30) * 2000 / 1000.
        let cpus = [
            Reading {
                value: 10,
                enabled: 1000,
                running: 500,
            },
            Reading {
                value: 30,
                enabled: 1000,
                running: 500,
            },
        ];
        assert_eq!(aggregate(&cpus).scaled(true), Some(80.0));
        // Interval deltas: what happened since the previous reading.
        let later = Reading {
            value: 150,
            enabled: 3000,
            running: 1500,
        };
        assert_eq!(
            later.since(full),
            Reading {
                value: 50,
                enabled: 2000,
                running: 500
            }
        );
        assert_eq!(later.since(full).scaled(true), Some(200.0));
    }

    #[test]
    fn stats_give_perf_relative_standard_error() {
        let mut stats = Stats::default();
        for v in [10.0, 12.0, 14.0] {
            stats.push(v);
        }
        assert_eq!(stats.mean, 12.0);
        // sample variance 4, / n = 4/3, sqrt = 1.1547; relative to 12 -> 9.62 %.
        assert!((stats.stddev_of_mean() - 1.154_700_5).abs() < 1e-6);
        assert!((stats.relative_pct() - 9.622_504).abs() < 1e-5);
        let mut one = Stats::default();
        one.push(5.0);
        assert_eq!(one.stddev_of_mean(), 0.0);
    }

    #[test]
    fn metrics_are_perfs() {
        let input = |role, value| MetricInput {
            role,
            context: 0,
            value,
        };
        let slot = [
            input(Role::Clock, Some(1_262_000.0)),
            input(Role::Other, Some(1000.0)),
            input(Role::Cycles, Some(2_524_000.0)),
            input(Role::Instructions, Some(5_048_000.0)),
            input(Role::BranchMisses, Some(5.0)),
            input(Role::Branches, Some(1000.0)),
            input(Role::Other, None),
        ];
        assert_eq!(
            metric(&slot, 0, 2_020_769.0),
            rate(1_262_000.0 / 2_020_769.0, "CPUs utilized")
        );
        // 1000 events in 1.262 ms: 792.393 K/sec.
        match metric(&slot, 1, 2e6) {
            Metric::Value { value, unit, .. } => {
                assert!((value - 792.393).abs() < 1e-3);
                assert_eq!(unit, "K/sec");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(metric(&slot, 2, 1.0), rate(2.0, "GHz"));
        assert_eq!(
            metric(&slot, 3, 1.0),
            Metric::Value {
                value: 2.0,
                format: MetricFormat::PerCycle,
                unit: "insn per cycle".into()
            }
        );
        assert_eq!(
            metric(&slot, 4, 1.0),
            Metric::Value {
                value: 0.5,
                format: MetricFormat::Percent,
                unit: "of all branches".into()
            }
        );
        assert_eq!(metric(&slot, 6, 1.0), Metric::None);
        // Without a clock there is no rate; without cycles, IPC is blank.
        let alone = [
            input(Role::Other, Some(1000.0)),
            input(Role::Instructions, Some(1.0)),
        ];
        assert_eq!(metric(&alone, 0, 1.0), Metric::None);
        assert_eq!(metric(&alone, 1, 1.0), Metric::Blank("insn per cycle"));
        // Pairs only within one privilege context (cycles:u does not divide instructions:k).
        let mixed = [
            MetricInput {
                context: 1,
                ..input(Role::Cycles, Some(10.0))
            },
            input(Role::Instructions, Some(20.0)),
        ];
        assert_eq!(metric(&mixed, 1, 1.0), Metric::Blank("insn per cycle"));
        assert_eq!(per_second(3.2e9).1, "G/sec");
        assert_eq!(per_second(999.0).1, "/sec");
    }

    #[test]
    fn human_lines_match_perf_6_1_columns() {
        // Captured from `perf stat -e task-clock,syscalls:sys_enter_getppid,page-faults,cycles`
        // (Debian's perf in the C locale: no thousands separators).
        let r = Renderer::new(
            StatFormat::Human { big_num: false },
            &["msec"],
            false,
            false,
        );
        assert_eq!(
            r.line(&task_clock(), None),
            "              1.26 msec task-clock                       #    0.623 CPUs utilized          \n"
        );
        assert_eq!(
            r.line(
                &line(
                    "syscalls:sys_enter_getppid",
                    Count::Value(1000.0),
                    rate(794.496, "K/sec")
                ),
                None
            ),
            "              1000      syscalls:sys_enter_getppid       #  794.496 K/sec                  \n"
        );
        assert_eq!(
            r.line(&line("cycles", Count::NotSupported, Metric::None), None),
            "   <not supported>      cycles                                                      \n"
        );
        assert_eq!(
            r.line(
                &line("syscalls:sys_enter_getppid", Count::Value(1000.0), Metric::None),
                None
            ),
            "              1000      syscalls:sys_enter_getppid                                         \n"
        );
        // Thousands separators, and --no-big-num.
        let big = line("page-faults", Count::Value(1234567.0), Metric::None);
        assert!(human()
            .line(&big, None)
            .starts_with("         1,234,567      page-faults"));
        let plain = Renderer::new(StatFormat::Human { big_num: false }, &[], false, false);
        assert!(plain
            .line(&big, None)
            .starts_with("           1234567      page-faults"));
    }

    #[test]
    fn human_multiplexing_noise_slots_and_intervals() {
        let r = Renderer::new(StatFormat::Human { big_num: true }, &["msec"], true, false);
        let mut l = task_clock();
        l.noise = Some(5.43);
        l.value_for_test(2.01, 0.776);
        assert_eq!(
            r.line(&l, None),
            "              2.01 msec task-clock                       #    0.776 CPUs utilized            ( +-  5.43% )\n"
        );
        // Runs that all counted the same show no spread, as perf's `print_noise_pct` prints
        // it only when it is not zero.
        let mut same = line("page-faults:u", Count::Value(115.0), Metric::None);
        same.noise = Some(0.0);
        assert!(!r.line(&same, None).contains("( +-"));
        // Multiplexed: running below enabled appends the running percentage.
        let mut m = line("page-faults", Count::Value(73.0), rate(40.809, "K/sec"));
        m.running = 250;
        m.enabled = 1000;
        assert!(r
            .line(&m, None)
            .ends_with("K/sec                    (25.00%)\n"));
        // -A and --per-thread prefixes (perf 6.1: `CPU%-7d `, `%16s-%-8d `).
        let mut cpu = task_clock();
        cpu.slot = Slot::Cpu(0);
        cpu.value_for_test(52.09, 1.0);
        assert_eq!(
            human().line(&cpu, None),
            "CPU0                    52.09 msec task-clock                       #    1.000 CPUs utilized          \n"
        );
        let thread = Line {
            slot: Slot::Thread {
                comm: "sleep".into(),
                tid: 5210,
            },
            unit: "msec".into(),
            ..line("task-clock", Count::NotCounted, Metric::None)
        };
        assert_eq!(
            human().line(&thread, None),
            "           sleep-5210          <not counted> msec task-clock                                                  \n"
        );
        // Interval rows and headers.
        let mut iv = human();
        assert_eq!(
            iv.interval_header(&Slot::Global),
            "#           time             counts unit events\n"
        );
        assert_eq!(iv.interval_header(&Slot::Global), "");
        let mut tc = task_clock();
        tc.value_for_test(99.67, 0.997);
        assert_eq!(
            iv.line(&tc, Some(100_190_741)),
            "     0.100190741              99.67 msec task-clock                       #    0.997 CPUs utilized          \n"
        );
        assert_eq!(
            human().interval_header(&Slot::Cpu(0)),
            "#           time CPU                    counts unit events\n"
        );
        assert_eq!(
            human().interval_header(&Slot::Thread {
                comm: String::new(),
                tid: 0
            }),
            "#           time             comm-pid                  counts unit events\n"
        );
        // The header repeats every 25 intervals.
        let mut many = human();
        let printed: Vec<bool> = (0..60)
            .map(|_| !many.interval_header(&Slot::Global).is_empty())
            .collect();
        let at: Vec<usize> = (0..60).filter(|&i| printed[i]).collect();
        assert_eq!(at, vec![0, 25, 50]);
    }

    #[test]
    fn metric_only_columns_are_perfs() {
        let at = |slot: Slot, l: Line| Line { slot, ..l };
        let ipc = Line {
            metric: Metric::Value {
                value: 0.625,
                format: MetricFormat::PerCycle,
                unit: "insn per cycle".into(),
            },
            ..line("instructions", Count::Value(5.0), Metric::None)
        };
        let misses = line(
            "branch-misses",
            Count::Value(3.0),
            Metric::Value {
                value: 1.5,
                format: MetricFormat::Percent,
                unit: "of all branches".into(),
            },
        );
        let cycles = line("cycles", Count::NotSupported, Metric::None);
        let blank = line("cycles", Count::Value(1.0), Metric::Blank("Ghz"));
        let rates = line("cs", Count::Value(1.0), rate(2.0, "K/sec"));
        let lines = [task_clock(), ipc, misses, cycles, blank, rates];
        // Human: 20 columns, wider for a longer name; perf's formats kept whole; an empty
        // column for the counter that did not count; none for CPUs utilized and rates.
        let row = human().metric_only_rows(&lines, None, false);
        assert_eq!(
            row,
            format!(
                "{:>20} {:>30} {:20} {:20} \n",
                "   0.62 ", "   1.50%", "", ""
            )
        );
        let row = csv().metric_only_rows(&lines, Some(100_000_000), false);
        assert_eq!(row, "     0.100000000,0.62,1.50,,,\n");
        let json = Renderer::new(StatFormat::Json, &[], false, false);
        assert_eq!(
            json.metric_only_rows(&lines[1..4], None, false),
            "{\"metric-value\" : \"0.62\"}{\"metric-value\" : \"1.50\"}{\"metric-value\" : \"\"}\n"
        );
        // One row per CPU; a group's row named by its first counter's line.
        let per_cpu: Vec<Line> = (0..2)
            .flat_map(|cpu| {
                [at(
                    Slot::Cpu(cpu),
                    line("cycles", Count::NotSupported, Metric::None),
                )]
            })
            .collect();
        assert_eq!(
            csv().metric_only_rows(&per_cpu, None, false),
            "CPU0,,\nCPU1,,\n"
        );
        let socket = Slot::Group {
            id: TopoId::Socket(0),
            cpus: 2,
        };
        let alone = Slot::Group {
            id: TopoId::Socket(0),
            cpus: 1,
        };
        let grouped = [
            at(alone, line("cycles", Count::NotSupported, Metric::None)),
            at(socket, task_clock()),
        ];
        assert_eq!(csv().metric_only_rows(&grouped, None, false), "S0,1,,\n");
        assert_eq!(
            json.metric_only_rows(&grouped, Some(1_000_000_000), false),
            "{\"interval\" : 1.000000000}\"socket\" : \"S0\", \"aggregate-number\" : 1, {\"metric-value\" : \"\"}\n"
        );
        // --summary's CSV label before each counter, as perf writes it.
        let summed = [
            task_clock(),
            line("cycles", Count::NotSupported, Metric::None),
        ];
        assert_eq!(
            csv().metric_only_rows(&summed, None, true),
            "         summary,         summary,,\n"
        );
        // Headers: perf's columns, names filtered as in the rows (not in JSON).
        let units: Vec<String> = ["CPUs utilized", "GHz", "branch-misses of all branches"]
            .map(String::from)
            .into();
        assert_eq!(
            human().metric_only_header(&Slot::Cpu(0), &units, false),
            format!(
                "{:6}{:>20} {:>20} \n",
                "", "GHz", "branch-misses of all branches"
            )
        );
        assert_eq!(
            human().metric_only_header(&Slot::Cpu(0), &units, true),
            format!(
                "#           time CPU     {:>20} {:>20} \n",
                "GHz", "branch-misses of all branches"
            )
        );
        let mut semi = Renderer::new(StatFormat::Csv { sep: ";".into() }, &[], false, false);
        assert_eq!(
            semi.metric_only_header(&Slot::Cpu(0), &units, true),
            " time,cpu,GHz;branch-misses of all branches;\n"
        );
        assert_eq!(semi.metric_only_header(&Slot::Cpu(0), &units, true), "");
        let mut json = json;
        assert_eq!(
            json.metric_only_header(&Slot::Cpu(0), &units[..2], false),
            "{      \"unit\" : \"CPUs utilized\", \"unit\" : \"GHz\"}\n"
        );
        // A report after intervals (--summary) has no header.
        let mut after = human();
        after.metric_only_header(&Slot::Global, &[], true);
        assert_eq!(after.metric_only_header(&Slot::Global, &[], false), "");
    }

    impl Line {
        fn value_for_test(&mut self, value: f64, metric: f64) {
            self.count = Count::Value(value);
            if let Metric::Value { value, .. } = &mut self.metric {
                *value = metric;
            }
        }
    }

    #[test]
    fn csv_fields_are_perfs() {
        let r = csv();
        assert_eq!(
            r.line(&task_clock(), None),
            "1.26,msec,task-clock,1262000,100.00,0.623,CPUs utilized\n"
        );
        assert_eq!(
            r.line(&line("cycles", Count::NotSupported, Metric::None), None),
            "<not supported>,,cycles,1262000,100.00,,\n"
        );
        assert_eq!(
            r.line(
                &line(
                    "syscalls:sys_enter_getppid",
                    Count::Value(1000.0),
                    Metric::None
                ),
                None
            ),
            "1000,,syscalls:sys_enter_getppid,1262000,100.00,,\n"
        );
        // Percent metrics keep their digits only; multiplexed percentages are whole numbers
        // (perf computes `100 * run / ena` in integers).
        let mut misses = line(
            "branch-misses",
            Count::Value(5.0),
            Metric::Value {
                value: 2.98,
                format: MetricFormat::Percent,
                unit: "of all branches".into(),
            },
        );
        misses.running = 2;
        misses.enabled = 3;
        assert_eq!(
            r.line(&misses, None),
            "5,,branch-misses,2,66.00,2.98,of all branches\n"
        );
        // -r: the variance comes after the event name (perf's order, see the module docs).
        let rep = Renderer::new(StatFormat::Csv { sep: ";".into() }, &["msec"], true, false);
        let mut l = task_clock();
        l.noise = Some(2.4);
        assert_eq!(
            rep.line(&l, None),
            "1.26;msec;task-clock;2.40%;1262000;100.00;0.623;CPUs utilized\n"
        );
        // Interval and CPU prefixes; thousands are never grouped in CSV.
        let mut cpu = line("cs", Count::Value(12345.0), rate(166.585, "/sec"));
        cpu.slot = Slot::Cpu(1);
        assert_eq!(
            r.line(&cpu, Some(100_182_365)),
            "     0.100182365,CPU1,12345,,cs,1262000,100.00,166.585,/sec\n"
        );
        let nc = Line {
            unit: "msec".into(),
            running: 0,
            enabled: 0,
            ..line("task-clock", Count::NotCounted, Metric::None)
        };
        assert_eq!(
            r.line(&nc, Some(200_530_933)),
            "     0.200530933,<not counted>,msec,task-clock,0,100.00,,\n"
        );
        let thread = Line {
            slot: Slot::Thread {
                comm: "sleep".into(),
                tid: 3571,
            },
            ..nc
        };
        assert_eq!(
            r.line(&thread, None),
            "sleep-3571,<not counted>,msec,task-clock,0,100.00,,\n"
        );
    }

    #[test]
    fn json_objects_are_perfs() {
        let r = Renderer::new(StatFormat::Json, &["msec"], false, false);
        let mut tc = task_clock();
        tc.count = Count::Value(0.500098);
        tc.running = 500098;
        tc.enabled = 500098;
        tc.metric = rate(0.414988, "CPUs utilized");
        assert_eq!(
            r.line(&tc, None),
            "{\"counter-value\" : \"0.500098\", \"unit\" : \"msec\", \"event\" : \"task-clock\", \"event-runtime\" : 500098, \"pcnt-running\" : 100.00, \"metric-value\" : 0.414988, \"metric-unit\" : \"CPUs utilized\"}\n"
        );
        let ns = line("cycles", Count::NotSupported, Metric::None);
        let text = r.line(&ns, Some(100_199_458));
        assert!(text.starts_with(
            "{\"interval\" : 0.100199458, \"counter-value\" : \"<not supported>\", \"unit\" : \"\", \"event\" : \"cycles\", "
        ));
        assert!(text.ends_with("\"metric-value\" : 0.000000, \"metric-unit\" : \"\"}\n"));
        let rep = Renderer::new(StatFormat::Json, &[], true, false);
        let mut cpu = line("page-faults", Count::Value(73.0), rate(78.77, "K/sec"));
        cpu.slot = Slot::Cpu(1);
        cpu.noise = Some(0.79);
        let value: serde_json::Value =
            serde_json::from_str(rep.line(&cpu, None).trim()).expect("valid JSON");
        assert_eq!(value["cpu"], "1");
        assert_eq!(value["variance"], 0.79);
        assert_eq!(value["counter-value"], "73.000000");
    }

    #[test]
    fn headers_and_footers() {
        let r = human();
        assert_eq!(
            r.header("'true'", 1),
            "\n Performance counter stats for 'true':\n\n"
        );
        assert_eq!(
            r.header("'sleep 0.05'", 3),
            "\n Performance counter stats for 'sleep 0.05' (3 runs):\n\n"
        );
        assert_eq!(csv().header("'true'", 1), "");
        let mut one = Stats::default();
        one.push(2_020_769.0);
        assert_eq!(
            r.footer(&Footer {
                elapsed: one,
                rusage: Some((0.00212, 0.0)),
                null_run: false
            }),
            "\n       0.002020769 seconds time elapsed\n\n       0.002120000 seconds user\n       0.000000000 seconds sys\n\n\n"
        );
        assert_eq!(
            r.footer(&Footer {
                elapsed: one,
                rusage: None,
                null_run: true
            }),
            "       0.002020769 seconds time elapsed\n\n"
        );
        let mut runs = Stats::default();
        for ns in [2_461_000.0, 2_585_000.0, 2_709_000.0] {
            runs.push(ns);
        }
        // sd of the mean 71.6 us: precision ceil(-log10(7.16e-5)) + 2 = 7.
        assert_eq!(
            r.footer(&Footer {
                elapsed: runs,
                rusage: None,
                null_run: false
            }),
            "\n         0.0025850 +- 0.0000716 seconds time elapsed  ( +-  2.77% )\n\n"
        );
        assert_eq!(
            csv().footer(&Footer {
                elapsed: one,
                rusage: None,
                null_run: false
            }),
            ""
        );
        assert_eq!(group_thousands("1234567.89", ","), "1,234,567.89");
        assert_eq!(group_thousands("123", ","), "123");
        assert_eq!(group_thousands("-1000", ","), "-1,000");
        assert_eq!(group_thousands("1234567", "."), "1.234.567");
    }
}
