//! `tracer serve` input -> a serve plan: the TOML config's `[[metric]]` tables checked one by
//! one into the probes each attaches, what it counts, and how it is exported. Every error names
//! the config's line and key; nothing is attached until the whole file is valid.

use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::filter::FilterPlan;
use super::latency::{LatencyBy, LatencyPlan};
use super::{aggregation, linear, parse_spec, Aggregation, KeyPart, ProbeSpec, ValueOp};
use crate::Error;

pub use crate::cli::DEFAULT_LISTEN;
/// Label sets one metric exports at most, unless its table or the file says otherwise.
pub const DEFAULT_MAX_SERIES: usize = 10_000;
/// How long a label set that stopped counting (an exited process) stays exported.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// The names tracer's own metrics take: a configured metric may not be exported as one.
const OWN_METRICS: [&str; 7] = [
    "build",
    "probe_attached",
    "dropped_series",
    "hits",
    "filtered_hits",
    "lost_hits",
    "series",
];

/// `/debug/pprof/profile`'s `seconds` when the query has none: net/http/pprof's default, which
/// `go tool pprof` asks for too.
pub const PROFILE_DEFAULT_SECONDS: u64 = 30;
/// The longest profile one request may ask for (a connection lives 300 s).
pub const PROFILE_MAX_SECONDS: u64 = 120;
/// `hz` when the query has none: `tracer profile`'s default.
pub const PROFILE_DEFAULT_HZ: u64 = super::profile::DEFAULT_HZ;
/// The highest rate a request may ask for: every CPU is sampled, for whoever can connect.
pub const PROFILE_MAX_HZ: u64 = 1000;

/// A `/debug/pprof/profile` request, checked: how long and how often to sample every CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileRequest {
    pub seconds: u64,
    pub hz: u64,
}

/// `/debug/pprof/profile`'s query (`seconds=N&hz=N`, as net/http/pprof takes it; other keys
/// are left alone), bounded.
pub fn profile_request(query: Option<&str>) -> Result<ProfileRequest, Error> {
    let mut request = ProfileRequest {
        seconds: PROFILE_DEFAULT_SECONDS,
        hz: PROFILE_DEFAULT_HZ,
    };
    for pair in query.unwrap_or_default().split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (field, max) = match key {
            "seconds" => (&mut request.seconds, PROFILE_MAX_SECONDS),
            "hz" => (&mut request.hz, PROFILE_MAX_HZ),
            _ => continue,
        };
        *field = match value.parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                return Err(Error::usage(
                    format!("{key}={value}: give a whole number from 1 to {max}"),
                    vec![format!(
                        "e.g. /debug/pprof/profile?seconds={PROFILE_DEFAULT_SECONDS}&hz={PROFILE_DEFAULT_HZ}"
                    )],
                ))
            }
        };
    }
    Ok(request)
}

/// A validated `tracer serve`.
#[derive(Clone, Debug)]
pub struct ServePlan {
    pub listen: SocketAddr,
    /// Series without a change for this long are dropped (their cells freed in the kernel).
    pub idle_timeout: Duration,
    pub metrics: Vec<MetricPlan>,
}

/// One `[[metric]]` table, checked.
#[derive(Clone, Debug)]
pub struct MetricPlan {
    /// As configured; exported as `tracer_NAME` (`tracer_NAME_total` for a counter).
    pub name: String,
    pub help: String,
    /// The line of its `[[metric]]` header.
    pub line: usize,
    pub max_series: usize,
    /// The label names, one per key part, in order.
    pub labels: Vec<String>,
    pub source: Source,
    /// The table's settings in one canonical text: a reload keeps counting a metric whose
    /// identity did not change.
    pub identity: String,
}

/// What a metric counts.
// One per metric, built once per (re)load: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Source {
    /// Hits of probes counted in the kernel by key: a counter, or with `hist` a histogram.
    Counted {
        specs: Vec<ProbeSpec>,
        aggregation: Aggregation,
        filter: Option<FilterPlan>,
    },
    /// `tracer latency`'s in-kernel histogram, exported in seconds.
    Latency(Box<LatencyPlan>),
}

impl MetricPlan {
    /// The exported family name (without a counter's `_total`).
    pub fn family(&self) -> String {
        format!("tracer_{}", self.name)
    }

    /// Whether the metric is a histogram (else a counter).
    pub fn is_histogram(&self) -> bool {
        match &self.source {
            Source::Counted { aggregation, .. } => aggregation.value.is_some(),
            Source::Latency(_) => true,
        }
    }

    /// The probe specs, as the `/` page and `tracer_probe_attached` name them.
    pub fn probe_names(&self) -> Vec<String> {
        match &self.source {
            Source::Counted { specs, .. } => specs.iter().map(ToString::to_string).collect(),
            Source::Latency(plan) => vec![plan.start.to_string(), plan.end.to_string()],
        }
    }
}

/// The file as TOML gives it: every value with its place, for errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    idle_timeout: Option<Spanned<String>>,
    max_series: Option<Spanned<i64>>,
    #[serde(default)]
    metric: Vec<Spanned<RawMetric>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: Spanned<String>,
    help: Option<Spanned<String>>,
    probe: Option<Spanned<OneOrMany>>,
    count_by: Option<Spanned<OneOrMany>>,
    filter: Option<Spanned<String>>,
    hist: Option<Spanned<String>>,
    linear: Option<Spanned<Number>>,
    latency: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    key: Option<Spanned<OneOrMany>>,
    max_series: Option<Spanned<i64>>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn list(&self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one.clone()],
            OneOrMany::Many(many) => many.clone(),
        }
    }
}

/// `linear = 10` or `linear = "4K,0,64K"` (a latency's: `"1ms"`).
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Text(String),
}

impl Number {
    fn text(&self) -> String {
        match self {
            Number::Int(n) => n.to_string(),
            Number::Text(t) => t.clone(),
        }
    }
}

/// Where errors point: the file's name and text.
struct Place<'a> {
    path: &'a str,
    text: &'a str,
}

impl Place<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        let at = span.start.min(self.text.len());
        self.text[..at].matches('\n').count() + 1
    }

    /// `PATH:LINE: key 'KEY' of metric 'NAME': MESSAGE`, with the hints.
    fn error(
        &self,
        span: Range<usize>,
        key: &str,
        metric: Option<&str>,
        message: impl std::fmt::Display,
        hints: Vec<String>,
    ) -> Error {
        let of = metric.map_or(String::new(), |m| format!(" of metric '{m}'"));
        Error::usage(
            format!(
                "{}:{}: key '{key}'{of}: {message}",
                self.path,
                self.line(span)
            ),
            hints,
        )
    }

    /// A lower layer's usage error (a probe spec, a filter, count_by), placed: its flag names
    /// become the config's keys.
    fn wrap(&self, span: Range<usize>, key: &str, metric: &str, err: Error) -> Error {
        match err {
            Error::Usage { message, hints } => self.error(
                span,
                key,
                Some(metric),
                as_keys(&message),
                hints.iter().map(|h| as_keys(h)).collect(),
            ),
            other => other,
        }
    }

    /// TOML's own error (syntax, a wrong type, an unknown or missing key), with its line and the
    /// key it is about.
    fn toml(&self, err: &toml::de::Error) -> Error {
        let message = err
            .message()
            .trim()
            .replace('`', "'")
            .replace(
                "data did not match any variant of untagged enum OneOrMany",
                "expected a string or a list of strings",
            )
            .replace(
                "data did not match any variant of untagged enum Number",
                "expected a number or a string",
            );
        let span = err.span().unwrap_or(0..0);
        // serde names a missing or unknown key in its message; otherwise the key is the one
        // assigned on the line the span points at.
        let named = ["missing field '", "unknown field '"]
            .iter()
            .find_map(|p| message.strip_prefix(p))
            .and_then(|rest| rest.split('\'').next())
            .map(str::to_string);
        let key = named.or_else(|| self.key_on_line(span.start));
        let hints = match message.starts_with("unknown field") {
            true => vec![
                "a [[metric]] takes name, help, probe, count_by, filter, hist, linear, latency, from, to, key and max_series; the file idle_timeout and max_series".into(),
            ],
            false => Vec::new(),
        };
        let line = self.line(span);
        Error::usage(
            match key {
                Some(key) => format!("{}:{line}: key '{key}': {message}", self.path),
                None => format!("{}:{line}: {message}", self.path),
            },
            hints,
        )
    }

    /// The key of a `key = value` line holding byte `at`.
    fn key_on_line(&self, at: usize) -> Option<String> {
        let at = at.min(self.text.len());
        let start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next().unwrap_or("");
        let (key, _) = line.split_once('=')?;
        let key = key.trim().trim_matches(['"', '\'']);
        (!key.is_empty() && !key.starts_with('[')).then(|| key.to_string())
    }
}

/// A flag of `tracer probe`/`latency` in a message, as the config's key.
fn as_keys(text: &str) -> String {
    text.replace("--count-by", "count_by")
        .replace("--hist", "hist")
        .replace("--linear", "linear")
        .replace("--filter", "filter")
        .replace("--key", "key")
}

/// A duration of seconds to hours: `90s`, `10m`, `1h`, or any other unit of
/// `parse_duration_ns`.
fn long_duration(text: &str) -> Option<Duration> {
    crate::units::parse_duration_ns(text)
        .ok()
        .map(Duration::from_nanos)
}

/// A metric name: exported as `tracer_NAME`, so letters, digits and `_`, not starting with a
/// digit.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A key part's label name: Prometheus label names are `[a-zA-Z_][a-zA-Z0-9_]*`, so a member
/// access (`how->flags`) becomes `how_flags`.
fn label_name(part: &KeyPart) -> Option<String> {
    Some(match part {
        KeyPart::Comm => "comm".into(),
        KeyPart::Pid => "pid".into(),
        KeyPart::Tid => "tid".into(),
        KeyPart::Cpu => "cpu".into(),
        KeyPart::Probe => "probe".into(),
        KeyPart::Syscall => "syscall".into(),
        KeyPart::Cgroup => "cgroup".into(),
        KeyPart::Container => "container".into(),
        KeyPart::Pod => "pod".into(),
        KeyPart::Stack => return None,
        KeyPart::Value(name) => {
            let mut label: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            while label.contains("__") {
                label = label.replace("__", "_");
            }
            label.trim_matches('_').to_string()
        }
    })
}

/// Checks the whole config (`text`, read from `path`) and `--listen`.
pub fn serve_plan(path: &str, text: &str, listen: &str) -> Result<ServePlan, Error> {
    let listen: SocketAddr = listen.parse().map_err(|_| {
        Error::usage(
            format!("--listen '{listen}' is not an address and port"),
            vec![format!(
                "give IP:PORT, e.g. --listen {DEFAULT_LISTEN} (this machine only) or --listen 0.0.0.0:9435 (every interface)"
            )],
        )
    })?;
    let place = Place { path, text };
    let raw: RawConfig = toml::from_str(text).map_err(|e| place.toml(&e))?;
    let idle_timeout = match &raw.idle_timeout {
        None => DEFAULT_IDLE_TIMEOUT,
        Some(t) => match long_duration(t.get_ref()) {
            Some(d) if !d.is_zero() => d,
            _ => {
                return Err(place.error(
                    t.span(),
                    "idle_timeout",
                    None,
                    format!("'{}' is not a positive duration", t.get_ref()),
                    vec!["e.g. idle_timeout = \"10m\" (units: ns, us, ms, s, m, h)".into()],
                ))
            }
        },
    };
    let max_series =
        |value: &Option<Spanned<i64>>, metric: Option<&str>, default: usize| match value {
            None => Ok(default),
            Some(v) if *v.get_ref() > 0 => Ok(*v.get_ref() as usize),
            Some(v) => Err(place.error(
                v.span(),
                "max_series",
                metric,
                format!("{} would export nothing", v.get_ref()),
                vec!["give a positive number of label sets, e.g. max_series = 10000".into()],
            )),
        };
    let default_max = max_series(&raw.max_series, None, DEFAULT_MAX_SERIES)?;
    if raw.metric.is_empty() {
        return Err(Error::usage(
            format!("{path}: no [[metric]] table: nothing to export"),
            vec!["add one, e.g. [[metric]] name = \"getppid\" probe = \"syscalls:sys_enter_getppid\" count_by = [\"comm\"]".into()],
        ));
    }
    let mut metrics: Vec<MetricPlan> = Vec::new();
    for table in &raw.metric {
        let line = place.line(table.span());
        let m = table.get_ref();
        let name = m.name.get_ref();
        let bad_name = |message: String, hint: &str| {
            place.error(m.name.span(), "name", None, message, vec![hint.to_string()])
        };
        if !valid_name(name) {
            return Err(bad_name(
                format!("'{name}' is not a metric name"),
                "use letters, digits and _, not starting with a digit (exported as tracer_NAME)",
            ));
        }
        let bare = name.strip_suffix("_total").unwrap_or(name);
        if OWN_METRICS.contains(&bare) || bare.starts_with("build_") {
            return Err(bad_name(
                format!("tracer_{bare} is one of tracer's own metrics"),
                "pick another name",
            ));
        }
        if let Some(other) = metrics.iter().find(|o| o.name == bare) {
            return Err(bad_name(
                format!("'{bare}' is also the metric of line {}", other.line),
                "give every [[metric]] its own name",
            ));
        }
        let max = max_series(&m.max_series, Some(bare), default_max)?;
        let (source, labels) = source(&place, m, bare)?;
        metrics.push(MetricPlan {
            name: bare.to_string(),
            help: m.help.as_ref().map_or_else(
                || format!("{} (tracer serve)", m.probe_text()),
                |h| h.get_ref().clone(),
            ),
            line,
            max_series: max,
            labels,
            source,
            identity: m.identity(max),
        });
    }
    Ok(ServePlan {
        listen,
        idle_timeout,
        metrics,
    })
}

impl RawMetric {
    /// What the metric probes, for a default help text.
    fn probe_text(&self) -> String {
        if let Some(target) = &self.latency {
            return format!("latency of {}", target.get_ref());
        }
        if let (Some(from), Some(to)) = (&self.from, &self.to) {
            return format!("latency of {} -> {}", from.get_ref(), to.get_ref());
        }
        match &self.probe {
            Some(p) => format!("hits of {}", p.get_ref().list().join(", ")),
            None => "hits".into(),
        }
    }

    fn identity(&self, max_series: usize) -> String {
        let text = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.get_ref().clone());
        let list = |v: &Option<Spanned<OneOrMany>>| v.as_ref().map(|s| s.get_ref().list());
        format!(
            "{:?}",
            (
                self.name.get_ref(),
                text(&self.help),
                list(&self.probe),
                list(&self.count_by),
                text(&self.filter),
                text(&self.hist),
                self.linear.as_ref().map(|l| l.get_ref().text()),
                (text(&self.latency), text(&self.from), text(&self.to)),
                list(&self.key),
                max_series,
            )
        )
    }
}

/// A metric's probes and what they count, and its label names.
fn source(place: &Place<'_>, m: &RawMetric, name: &str) -> Result<(Source, Vec<String>), Error> {
    let latency = m.latency.is_some() || m.from.is_some() || m.to.is_some();
    let header = || m.name.span();
    if latency {
        if let Some(probe) = &m.probe {
            return Err(place.error(
                probe.span(),
                "probe",
                Some(name),
                "a latency metric takes its probes from latency, or from and to",
                vec!["drop probe, or make it a separate metric".into()],
            ));
        }
        if let Some(hist) = &m.hist {
            return Err(place.error(
                hist.span(),
                "hist",
                Some(name),
                "a latency metric is a histogram of durations already",
                vec!["drop hist; linear = \"1ms\" gives linear buckets".into()],
            ));
        }
        return latency_source(place, m, name);
    }
    if let Some(key) = &m.key {
        return Err(place.error(
            key.span(),
            "key",
            Some(name),
            "key matches the two ends of a latency metric",
            vec!["give latency = FUNC, or from and to, with it".into()],
        ));
    }
    let Some(probe) = &m.probe else {
        return Err(place.error(
            header(),
            "probe",
            Some(name),
            "missing: a metric needs probe, or latency (or from and to)",
            vec!["e.g. probe = \"syscalls:sys_enter_getppid\"".into()],
        ));
    };
    let specs = probe.get_ref().list();
    if specs.is_empty() {
        return Err(place.error(
            probe.span(),
            "probe",
            Some(name),
            "the list is empty",
            vec!["name at least one probe spec".into()],
        ));
    }
    let specs = (specs.iter())
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| place.wrap(probe.span(), "probe", name, e))?;
    let keys = m.count_by.as_ref().map(|k| k.get_ref().list().join(","));
    let hist = m.hist.as_ref().map(|h| h.get_ref().as_str());
    // Something to count by: no key at all is one series, the total.
    let agg = aggregation(Some(keys.as_deref().unwrap_or("")), None, hist, None, None);
    let at = |v: &Option<Spanned<OneOrMany>>| v.as_ref().map_or(header(), |s| s.span());
    let mut agg = agg
        .map_err(|e| match (&e, &m.hist) {
            (Error::Usage { message, .. }, Some(h)) if message.starts_with("--hist") => {
                place.wrap(h.span(), "hist", name, e)
            }
            _ => place.wrap(at(&m.count_by), "count_by", name, e),
        })?
        .unwrap_or(Aggregation {
            keys: Vec::new(),
            value: None,
            top: None,
            interval: None,
            linear: None,
        });
    if agg.keys.contains(&KeyPart::Stack) {
        return Err(place.error(
            at(&m.count_by),
            "count_by",
            Some(name),
            "a stack is not a label",
            vec!["use tracer profile or tracer probe --count-by stack for stacks".into()],
        ));
    }
    if let Some(l) = &m.linear {
        agg.linear = linear(Some(&l.get_ref().text()), m.hist.is_some())
            .map_err(|e| place.wrap(l.span(), "linear", name, e))?;
    }
    let labels: Vec<String> = agg.keys.iter().filter_map(label_name).collect();
    check_labels(place, &labels, at(&m.count_by), name, agg.value.is_some())?;
    let filter = (m.filter.as_ref())
        .map(|f| {
            super::filter::parse(f.get_ref()).map_err(|e| place.wrap(f.span(), "filter", name, e))
        })
        .transpose()?;
    debug_assert!(agg
        .value
        .as_ref()
        .is_none_or(|(op, _)| *op == ValueOp::Hist));
    Ok((
        Source::Counted {
            specs,
            aggregation: agg,
            filter,
        },
        labels,
    ))
}

/// Label names must differ, and a histogram's may not be `le`.
fn check_labels(
    place: &Place<'_>,
    labels: &[String],
    span: Range<usize>,
    name: &str,
    histogram: bool,
) -> Result<(), Error> {
    for (i, label) in labels.iter().enumerate() {
        if labels[..i].contains(label) || (histogram && label == "le") || label.is_empty() {
            return Err(place.error(
                span,
                "count_by",
                Some(name),
                format!("two keys, or a key and the histogram's bucket, make the label '{label}'"),
                vec!["count by keys whose names differ in letters and digits".into()],
            ));
        }
    }
    Ok(())
}

/// `latency = FUNC` or `from`/`to` (with `key`), `count_by` one of comm, pid, tid or cpu,
/// `linear` a duration step, `filter` as tracer latency's.
fn latency_source(
    place: &Place<'_>,
    m: &RawMetric,
    name: &str,
) -> Result<(Source, Vec<String>), Error> {
    fn text(v: &Option<Spanned<String>>) -> Option<&str> {
        v.as_ref().map(|s| s.get_ref().as_str())
    }
    let span = |v: &Option<Spanned<String>>| v.as_ref().map_or(m.name.span(), |s| s.span());
    let (start, end) =
        super::latency::pair(text(&m.latency), text(&m.from), text(&m.to)).map_err(|e| {
            let key = match (&m.latency, &m.from) {
                (Some(_), _) => "latency",
                (None, Some(_)) => "from",
                (None, None) => "to",
            };
            let at = match key {
                "latency" => span(&m.latency),
                "from" => span(&m.from),
                _ => span(&m.to),
            };
            place.wrap(at, key, name, e)
        })?;
    let by_span = m.count_by.as_ref().map_or(m.name.span(), |s| s.span());
    let keys = m
        .count_by
        .as_ref()
        .map_or(Vec::new(), |k| k.get_ref().list());
    let (by, labels) = match keys.as_slice() {
        [] => (None, Vec::new()),
        [one] => (
            Some(match one.as_str() {
                "comm" => LatencyBy::Comm,
                "pid" => LatencyBy::Pid,
                "tid" => LatencyBy::Tid,
                "cpu" => LatencyBy::Cpu,
                other => {
                    return Err(place.error(
                        by_span,
                        "count_by",
                        Some(name),
                        format!("'{other}' is not a latency key"),
                        vec!["a latency metric is counted by one of comm, pid, tid or cpu".into()],
                    ))
                }
            }),
            vec![one.clone()],
        ),
        _ => {
            return Err(place.error(
                by_span,
                "count_by",
                Some(name),
                format!("{} keys: a latency metric takes one", keys.len()),
                vec!["count by one of comm, pid, tid or cpu".into()],
            ))
        }
    };
    let linear_step = match &m.linear {
        None => None,
        Some(l) => match crate::units::parse_duration_ns(&l.get_ref().text()) {
            Ok(ns) if ns > 0 => Some(ns),
            _ => {
                return Err(place.error(
                    l.span(),
                    "linear",
                    Some(name),
                    format!("'{}' is not a positive duration", l.get_ref().text()),
                    vec![
                        "a latency metric's linear is the bucket width, e.g. linear = \"1ms\""
                            .into(),
                    ],
                ))
            }
        },
    };
    let value_filter = (m.filter.as_ref())
        .map(|f| {
            super::filter::parse(f.get_ref()).map_err(|e| place.wrap(f.span(), "filter", name, e))
        })
        .transpose()?;
    let key = m.key.as_ref().map(|k| k.get_ref().list().join(","));
    Ok((
        Source::Latency(Box::new(LatencyPlan {
            start,
            end,
            more: Vec::new(),
            key,
            by,
            linear_step,
            slower_than: None,
            stack: None,
            stack_at_start: false,
            interval: None,
            duration: None,
            whom: super::Whom::Everyone,
            scope: super::Scope::default(),
            follow: false,
            output: super::Output {
                format: crate::output::events::Format::Text,
                file: None,
            },
            notes: Vec::new(),
            value_filter,
            kprobe_interface: None,
        })),
        labels,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_requests_take_seconds_and_hz_within_bounds() {
        let ok = |q| profile_request(q).unwrap();
        assert_eq!(
            ok(None),
            ProfileRequest {
                seconds: 30,
                hz: 99
            }
        );
        assert_eq!(
            ok(Some("seconds=2&hz=499&debug=1")),
            ProfileRequest {
                seconds: 2,
                hz: 499
            }
        );
        for bad in [
            "seconds=0",
            "seconds=121",
            "hz=1001",
            "hz=",
            "seconds=-1",
            "hz=9x",
        ] {
            let e = profile_request(Some(bad)).unwrap_err();
            assert!(crate::describe(&e).contains("whole number"), "{bad}");
        }
    }

    fn plan(text: &str) -> Result<ServePlan, String> {
        serve_plan("serve.toml", text, DEFAULT_LISTEN).map_err(|e| match e {
            Error::Usage { message, hints } => format!("{message} | {}", hints.join(" | ")),
            other => other.to_string(),
        })
    }

    fn message(text: &str) -> String {
        let err = plan(text).unwrap_err();
        err.split(" | ").next().unwrap().to_string()
    }

    const ISSUE_EXAMPLE: &str = r#"
[[metric]]
name = "syscalls_getppid"
help = "getppid calls by command"
probe = "syscalls:sys_enter_getppid"
count_by = ["comm"]
filter = "comm != \"tracer\""

[[metric]]
name = "read_bytes"
probe = "syscalls:sys_exit_read"
hist = "ret"

[[metric]]
name = "vfs_read_latency_seconds"
latency = "vfs_read"
"#;

    #[test]
    fn the_issue_example_is_three_metrics() {
        let plan = plan(ISSUE_EXAMPLE).unwrap();
        assert_eq!(plan.listen.to_string(), "127.0.0.1:9435");
        assert_eq!(plan.idle_timeout, DEFAULT_IDLE_TIMEOUT);
        let [a, b, c] = plan.metrics.as_slice() else {
            panic!("three metrics")
        };
        assert_eq!(
            (a.family(), a.line, a.is_histogram()),
            ("tracer_syscalls_getppid".into(), 2, false)
        );
        assert_eq!(a.labels, ["comm"]);
        assert_eq!(a.help, "getppid calls by command");
        assert_eq!(a.max_series, DEFAULT_MAX_SERIES);
        let Source::Counted {
            specs,
            aggregation,
            filter,
        } = &a.source
        else {
            panic!("counted")
        };
        assert_eq!(specs[0].to_string(), "syscalls:sys_enter_getppid");
        assert_eq!(aggregation.keys, [KeyPart::Comm]);
        assert!(filter.is_some());
        assert_eq!((b.line, b.is_histogram()), (9, true));
        assert!(b.labels.is_empty());
        assert_eq!(b.help, "hits of syscalls:sys_exit_read (tracer serve)");
        let Source::Latency(lat) = &c.source else {
            panic!("latency")
        };
        assert_eq!(lat.start.to_string(), "kprobe:vfs_read");
        assert!(lat.end.ret);
        assert_eq!(c.probe_names().len(), 2);
    }

    #[test]
    fn file_wide_settings_and_overrides() {
        let plan = plan(
            "idle_timeout = \"1.5m\"\nmax_series = 50\n[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\n[[metric]]\nname = \"b\"\nprobe = [\"syscalls:sys_enter_getppid\", \"syscalls:sys_enter_getpid\"]\ncount_by = \"probe\"\nmax_series = 7\nhist = \"__syscall_nr\"\nlinear = 1\n",
        )
        .unwrap();
        assert_eq!(plan.idle_timeout, Duration::from_secs(90));
        assert_eq!(long_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(long_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(long_duration("10"), None);
        assert_eq!(plan.metrics[0].max_series, 50);
        assert_eq!(plan.metrics[1].max_series, 7);
        assert_eq!(plan.metrics[1].labels, ["probe"]);
        let Source::Counted { aggregation, .. } = &plan.metrics[1].source else {
            panic!()
        };
        assert_eq!(aggregation.linear.map(|l| l.step), Some(1));
    }

    #[test]
    fn identity_changes_with_any_setting() {
        let one =
            plan("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\n").unwrap();
        let moved =
            plan("\n\n[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\n").unwrap();
        let other = plan("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\ncount_by = [\"pid\"]\n").unwrap();
        assert_eq!(one.metrics[0].identity, moved.metrics[0].identity);
        assert_ne!(one.metrics[0].identity, other.metrics[0].identity);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\ncount_by = [\"comm\", \"no such\"]\n"),
            "serve.toml:4: key 'count_by' of metric 'a': 'no such' is not a count_by key"
        );
        assert_eq!(
            message(
                "[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\ncount_by = 5\n"
            ),
            "serve.toml:4: key 'count_by': expected a string or a list of strings"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\ncout_by = [\"comm\"]\n"),
            "serve.toml:4: key 'cout_by': unknown field 'cout_by', expected one of 'name', 'help', 'probe', 'count_by', 'filter', 'hist', 'linear', 'latency', 'from', 'to', 'key', 'max_series'"
        );
        assert_eq!(
            message("[[metric]]\nprobe = \"syscalls:sys_enter_getppid\"\n"),
            "serve.toml:1: key 'name': missing field 'name'"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\ncount_by = [\"comm\"]\n"),
            "serve.toml:2: key 'probe' of metric 'a': missing: a metric needs probe, or latency (or from and to)"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a b\"\nprobe = \"x:y\"\n"),
            "serve.toml:2: key 'name': 'a b' is not a metric name"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\n[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getpid\"\n"),
            "serve.toml:5: key 'name': 'a' is also the metric of line 1"
        );
        assert_eq!(
            message("[[metric]]\nname = \"hits\"\nprobe = \"syscalls:sys_enter_getppid\"\n"),
            "serve.toml:2: key 'name': tracer_hits is one of tracer's own metrics"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\nfilter = \"comm ==\"\n"),
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\nfilter = \"comm ==\"\n")
        );
        assert!(message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\nfilter = \"comm ==\"\n")
            .starts_with("serve.toml:4: key 'filter' of metric 'a': "));
        assert_eq!(
            message("idle_timeout = \"soon\"\n[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\n"),
            "serve.toml:1: key 'idle_timeout': 'soon' is not a positive duration"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nlatency = \"vfs_read\"\ncount_by = [\"comm\", \"pid\"]\n"),
            "serve.toml:4: key 'count_by' of metric 'a': 2 keys: a latency metric takes one"
        );
        assert_eq!(
            message(
                "[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\nlinear = 10\n"
            ),
            "serve.toml:4: key 'linear' of metric 'a': linear shapes a hist histogram"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\ncount_by = [\"stack\"]\n"),
            "serve.toml:4: key 'count_by' of metric 'a': a stack is not a label"
        );
        assert_eq!(
            message("[[metric]]\nname = \"a\"\nprobe = \"syscalls:sys_enter_getppid\"\nmax_series = 0\n"),
            "serve.toml:4: key 'max_series' of metric 'a': 0 would export nothing"
        );
        assert_eq!(
            message("max_series = 3\n"),
            "serve.toml: no [[metric]] table: nothing to export"
        );
        assert!(message("[[metric]\n").starts_with("serve.toml:1: "));
    }

    #[test]
    fn listen_is_an_address() {
        let err = serve_plan("s.toml", "", "localhost").unwrap_err();
        assert_eq!(
            err.to_string(),
            "--listen 'localhost' is not an address and port"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn labels_are_prometheus_names() {
        let plan = plan("[[metric]]\nname = \"a\"\nprobe = \"do_sys_openat2\"\ncount_by = [\"how->flags\", \"cpu\"]\n").unwrap();
        assert_eq!(plan.metrics[0].labels, ["how_flags", "cpu"]);
    }
}
