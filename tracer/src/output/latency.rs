//! `tracer latency` output: the calls slower than `--slower-than`, as they happen.

use std::io::{self, Write};

use serde::Serialize;

use super::events::Format;
use super::hist::human;
use super::stack::{self, Stack};

/// One slow call.
#[derive(Clone, Debug, Serialize)]
pub struct Outlier {
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub duration_ns: u64,
    /// The start probe's argument registers (a probe start only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
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
                if let Some(args) = &self.args {
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
                v["outlier"] = true.into();
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
            time_ns: 1_500_000_000,
            pid: 5,
            tid: 6,
            comm: "prog".into(),
            duration_ns: 12_000_000,
            args: Some(vec!["0x1".into()]),
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
        assert!(text.ends_with(" args (0x1) ret -2\n"), "{text}");
        let mut json = Vec::new();
        outlier.write(&mut json, Format::Json, 0).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            "{\"args\":[\"0x1\"],\"comm\":\"prog\",\"duration_ns\":12000000,\"outlier\":true,\"pid\":5,\"ret\":-2,\"tid\":6,\"time_ns\":1500000000}\n"
        );
    }
}
