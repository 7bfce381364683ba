//! `tracer latency` output: the histograms (at the end, or each `-I` interval), and the calls
//! slower than `--slower-than`, as they happen.

use std::io::{self, Write};

use serde::Serialize;

use super::events::Format;
use super::hist::{human, Histogram};
use super::stack::{self, Stack};
use crate::kernel::format::Value;

/// The histograms of one report: one per group (`--by`), or one unnamed.
pub struct Histograms<'a> {
    /// Seconds since the run began.
    pub time_s: f64,
    /// A `-I` report (its text starts with the time).
    pub interval: bool,
    /// Each group's name (empty without `--by`) and histogram; groups without a call are left
    /// out by the caller.
    pub groups: Vec<(String, &'a Histogram)>,
}

impl Histograms<'_> {
    /// Text: each histogram under its group's name (`no calls` when there is none); JSON: one
    /// object per group with its `group` and `time_s`.
    pub fn write(&self, out: &mut dyn Write, format: Format) -> io::Result<()> {
        let time_s = self.time_s;
        if self.groups.is_empty() && format == Format::Text {
            writeln!(out, "no calls")?;
        }
        for (name, h) in &self.groups {
            match format {
                Format::Text => {
                    if self.interval {
                        writeln!(out, "\n[{time_s:.3} s]")?;
                    }
                    if !name.is_empty() {
                        writeln!(out, "\n{name}")?;
                    }
                    write!(out, "{}", h.render())?;
                }
                Format::Json => {
                    let mut v = h.json();
                    v["type"] = "histogram".into();
                    v["group"] = name.as_str().into();
                    v["time_s"] = time_s.into();
                    writeln!(out, "{v}")?;
                }
            }
        }
        Ok(())
    }
}

/// The task a call ended in ([`Outlier::ended_in`]).
#[derive(Clone, Debug, Serialize)]
pub struct EndTask {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
}

/// One slow call (JSON `"type":"outlier"`).
#[derive(Clone, Debug, Serialize)]
pub struct Outlier {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub time_ns: u64,
    /// JSON's wall-clock time (docs/json.md).
    pub time_unix_ns: Option<u64>,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub duration_ns: u64,
    /// The task the call ended in, where it is not the one that started it (a request
    /// completed in an interrupt, a task woken by another): JSON's `ended_in`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_in: Option<EndTask>,
    /// The function, of several measured in the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The start probe's arguments, named and typed (a probe start only).
    #[serde(skip)]
    pub args: Option<Vec<(String, Value)>>,
    /// The end's return value (a return probe end only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ret: Option<i64>,
    #[serde(skip)]
    pub stacks: Vec<Stack>,
}

impl Outlier {
    /// Writes the call; `start_ns` is the run's start, for the text line's seconds.
    pub fn write(&self, out: &mut dyn Write, format: Format, start_ns: u64) -> io::Result<()> {
        match format {
            Format::Text => {
                let time_s = self.time_ns.saturating_sub(start_ns) as f64 / 1e9;
                let mut line = format!(
                    "slow: {time_s:<10.6} {}/{} {} took {}",
                    self.pid,
                    self.tid,
                    self.comm,
                    human(self.duration_ns)
                );
                if let Some(function) = &self.function {
                    line += &format!(" in {function}");
                }
                if let Some(end) = &self.ended_in {
                    line += &format!(", ended in {} {}/{}", end.comm, end.pid, end.tid);
                }
                if let Some(args) = &self.args {
                    let args: Vec<String> = (args.iter())
                        .map(|(name, value)| format!("{name}={value}"))
                        .collect();
                    line += &format!(" args ({})", args.join(", "));
                }
                if let Some(ret) = self.ret {
                    line += &format!(" ret {ret}");
                }
                writeln!(out, "{line}")?;
                stack::write_text(out, &self.stacks)
            }
            Format::Json => {
                let mut v = serde_json::to_value(self).expect("an outlier serializes");
                if let Some(args) = &self.args {
                    v["args"] = (args.iter())
                        .map(|(name, value)| (name.clone(), super::events::json_value(value)))
                        .collect::<serde_json::Map<_, _>>()
                        .into();
                }
                if !self.stacks.is_empty() {
                    v["stack"] = stack::json(&self.stacks);
                }
                writeln!(out, "{v}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outliers_render_as_text_and_json() {
        let outlier = Outlier {
            kind: "outlier",
            time_ns: 1_500_000_000,
            time_unix_ns: Some(1_700_000_001_500_000_000),
            pid: 5,
            tid: 6,
            comm: "prog".into(),
            duration_ns: 12_000_000,
            ended_in: None,
            function: Some("read".into()),
            args: Some(vec![
                ("fd".into(), Value::Int(3)),
                ("buf".into(), Value::Hex(0x10)),
            ]),
            ret: Some(-2),
            stacks: Vec::new(),
        };
        let mut text = Vec::new();
        outlier.write(&mut text, Format::Text, 500_000_000).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.starts_with("slow: 1.000000   5/6 prog took "),
            "{text}"
        );
        assert!(
            text.ends_with("12.0ms in read args (fd=3, buf=0x10) ret -2\n"),
            "{text}"
        );
        let mut json = Vec::new();
        outlier.write(&mut json, Format::Json, 0).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            "{\"args\":{\"buf\":16,\"fd\":3},\"comm\":\"prog\",\"duration_ns\":12000000,\"function\":\"read\",\"pid\":5,\"ret\":-2,\"tid\":6,\"time_ns\":1500000000,\"time_unix_ns\":1700000001500000000,\"type\":\"outlier\"}\n"
        );
    }

    #[test]
    fn histograms_render_per_group_as_text_and_json() {
        let mut h = Histogram::new(None);
        h.buckets[0] = 3;
        h.sum_ns = 3;
        h.max_ns = 1;
        let report = Histograms {
            time_s: 1.5,
            interval: true,
            groups: vec![("comm prog".to_string(), &h)],
        };
        let mut text = Vec::new();
        report.write(&mut text, Format::Text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("\n[1.500 s]\n\ncomm prog\n"), "{text:?}");
        assert!(text.ends_with(&h.render()), "{text:?}");
        let mut json = Vec::new();
        report.write(&mut json, Format::Json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["type"], "histogram");
        assert_eq!(
            (v["group"].as_str(), v["time_s"].as_f64()),
            (Some("comm prog"), Some(1.5))
        );
        let mut none = Vec::new();
        let empty = Histograms {
            time_s: 0.0,
            interval: false,
            groups: Vec::new(),
        };
        empty.write(&mut none, Format::Text).unwrap();
        assert_eq!(none, b"no calls\n");
    }
}
