//! Metrics as Prometheus scrapes them (`tracer serve`): one model of families and labelled
//! series, rendered by the official `prometheus-client` encoders in the Prometheus text format
//! (0.0.4) or OpenMetrics, and the `/` page that lists them.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// What a family is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Exported with `_total`.
    Counter,
    Gauge,
    Histogram,
    /// A constant 1 whose labels say something (`tracer_build_info`).
    Info,
}

/// One value of a series.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(u64),
    /// Buckets as (upper bound, count in that bucket alone), ascending; the last bound is
    /// `f64::INFINITY`. The encoder makes them cumulative.
    Histogram {
        sum: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

/// A labelled series of a family.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub value: Value,
}

/// A metric family: its name (without a counter's `_total`, an info's `_info`), help, kind
/// and series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: String,
    pub help: String,
    pub kind: MetricKind,
    pub series: Vec<Series>,
}

/// The two text formats a scraper may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    /// `text/plain; version=0.0.4`: what Prometheus asks for by default.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Exposition {
    /// The format an `Accept` header asks for: OpenMetrics when it names it (Prometheus sends
    /// `application/openmetrics-text;version=1.0.0,...;q=0.5,text/plain;version=0.0.4;q=0.4`
    /// by default since 2.5), else the Prometheus text format.
    pub fn from_accept(accept: Option<&str>) -> Exposition {
        match accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            true => Exposition::OpenMetrics,
            false => Exposition::Prometheus,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The families of one scrape, handed to the registry as a collector.
#[derive(Debug)]
struct Scrape(Vec<Family>);

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in &self.0 {
            let kind = match family.kind {
                MetricKind::Counter => MetricType::Counter,
                MetricKind::Gauge => MetricType::Gauge,
                MetricKind::Histogram => MetricType::Histogram,
                MetricKind::Info => MetricType::Info,
            };
            let mut metric = encoder.encode_descriptor(&family.name, &family.help, None, kind)?;
            for series in &family.series {
                if family.kind == MetricKind::Info {
                    metric.encode_info(&series.labels)?;
                    continue;
                }
                let mut one = metric.encode_family(&series.labels)?;
                match (&series.value, family.kind) {
                    (Value::Number(n), MetricKind::Counter) => {
                        one.encode_counter::<NoLabelSet, u64, u64>(n, None)?
                    }
                    (Value::Number(n), _) => one.encode_gauge(&(*n as i64))?,
                    (
                        Value::Histogram {
                            sum,
                            count,
                            buckets,
                        },
                        _,
                    ) => one.encode_histogram::<NoLabelSet>(
                        *sum,
                        *count,
                        buckets,
                        None::<&std::collections::HashMap<usize, Exemplar<NoLabelSet, f64>>>,
                    )?,
                }
            }
        }
        Ok(())
    }
}

/// The exposition of `families` in `format`.
pub fn render(mut families: Vec<Family>, format: Exposition) -> String {
    // The Prometheus text encoder escapes `# HELP`; the OpenMetrics one writes it as given,
    // so a newline in a config's `help` would start a line of its own.
    if format == Exposition::OpenMetrics {
        for family in &mut families {
            family.help = openmetrics_escaped(&family.help);
        }
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(families)));
    let mut text = String::new();
    // Writing to a String fails only on a formatting bug of the encoder.
    let _ = match format {
        Exposition::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
        }
        Exposition::OpenMetrics => prometheus_client::encoding::text::encode(&mut text, &registry),
    };
    text
}

/// `text` as OpenMetrics escapes a `# HELP` text: `\\`, `\n` and `\"`.
fn openmetrics_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// A row of the `/` page: a metric, its kind and what it probes.
pub struct IndexRow {
    pub name: String,
    pub kind: &'static str,
    pub help: String,
    pub probes: Vec<String>,
    pub series: usize,
}

/// The `/` page: what is exported, and a link to `/metrics`.
pub fn index_html(rows: &[IndexRow], config: &str) -> String {
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tracer serve</title></head>\n<body>\n<h1>tracer serve</h1>\n",
    );
    html.push_str(&format!(
        "<p>Metrics of <code>{}</code>: <a href=\"/metrics\">/metrics</a></p>\n<table>\n<tr><th>METRIC</th><th>TYPE</th><th>SERIES</th><th>PROBES</th><th>HELP</th></tr>\n",
        escape(config)
    ));
    for row in rows {
        html.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
            escape(&row.name),
            row.kind,
            row.series,
            escape(&row.probes.join(", ")),
            escape(&row.help)
        ));
    }
    html.push_str("</table>\n</body></html>\n");
    html
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        vec![
            Family {
                name: "tracer_getppid".into(),
                help: "getppid calls".into(),
                kind: MetricKind::Counter,
                series: vec![Series {
                    labels: vec![("comm".into(), "a \"b\"".into())],
                    value: Value::Number(7),
                }],
            },
            Family {
                name: "tracer_read_bytes".into(),
                help: "read sizes".into(),
                kind: MetricKind::Histogram,
                series: vec![Series {
                    labels: vec![],
                    value: Value::Histogram {
                        sum: 10.0,
                        count: 3,
                        buckets: vec![(1.0, 1), (3.0, 2), (f64::INFINITY, 0)],
                    },
                }],
            },
            Family {
                name: "tracer_build".into(),
                help: "tracer's version".into(),
                kind: MetricKind::Info,
                series: vec![Series {
                    labels: vec![("version".into(), "0.1.0".into())],
                    value: Value::Number(1),
                }],
            },
        ]
    }

    #[test]
    fn prometheus_text() {
        assert_eq!(
            render(families(), Exposition::Prometheus),
            "# HELP tracer_getppid_total getppid calls\n\
             # TYPE tracer_getppid_total counter\n\
             tracer_getppid_total{comm=\"a \\\"b\\\"\"} 7\n\
             # HELP tracer_read_bytes read sizes\n\
             # TYPE tracer_read_bytes histogram\n\
             tracer_read_bytes_bucket{le=\"1\"} 1\n\
             tracer_read_bytes_bucket{le=\"3\"} 3\n\
             tracer_read_bytes_bucket{le=\"+Inf\"} 3\n\
             tracer_read_bytes_sum 10.0\n\
             tracer_read_bytes_count 3\n\
             # HELP tracer_build_info tracer's version\n\
             # TYPE tracer_build_info gauge\n\
             tracer_build_info{version=\"0.1.0\"} 1\n"
        );
    }

    #[test]
    fn openmetrics_text() {
        let text = render(families(), Exposition::OpenMetrics);
        assert!(text.starts_with(
            "# HELP tracer_getppid getppid calls\n# TYPE tracer_getppid counter\ntracer_getppid_total{comm=\"a \\\"b\\\"\"} 7\n"
        ), "{text}");
        assert!(text.contains("# TYPE tracer_build info\ntracer_build_info{version=\"0.1.0\"} 1\n"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn accept_headers() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(
            Exposition::from_accept(Some(prometheus)),
            Exposition::OpenMetrics
        );
        assert_eq!(Exposition::from_accept(Some("*/*")), Exposition::Prometheus);
        assert_eq!(Exposition::from_accept(None), Exposition::Prometheus);
    }

    #[test]
    fn the_index_escapes() {
        let html = index_html(
            &[IndexRow {
                name: "tracer_x".into(),
                kind: "counter",
                help: "a < b".into(),
                probes: vec!["uprobe:/bin/x:f".into()],
                series: 2,
            }],
            "s.toml",
        );
        assert!(html.contains("<td>a &lt; b</td>"));
        assert!(html.contains("<a href=\"/metrics\">/metrics</a>"));
    }

    /// A newline in a help text stays in its `# HELP` line, in both formats.
    #[test]
    fn help_texts_are_escaped() {
        let mut families = families();
        families[0].help = "two\nlines \\ and \"quotes\"".into();
        let text = render(families.clone(), Exposition::OpenMetrics);
        assert!(
            text.contains("# HELP tracer_getppid two\\nlines \\\\ and \\\"quotes\\\"\n"),
            "{text}"
        );
        let text = render(families, Exposition::Prometheus);
        assert!(
            text.contains("# HELP tracer_getppid_total two\\nlines \\\\ and \"quotes\"\n"),
            "{text}"
        );
    }
}
