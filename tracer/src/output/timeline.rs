//! A recorded trace's merged timeline: one item per probe hit, watch hit, counter sample,
//! context switch or task event, printed as `tracer probe` prints hits, or as JSON Lines.

use std::io::{self, Write};

use crate::kernel::format::Value;
use crate::output::events::{Format, JsonArgs, JsonValue, TextLine};
use crate::output::stack::Frame;

/// What kind of record an item came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// A probe or tracepoint hit (entry or single point).
    Probe,
    /// A return probe hit.
    Return,
    Watch,
    /// A sampled counter overflow.
    Sample,
    Switch,
    Task,
}

impl ItemKind {
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Probe => "probe",
            ItemKind::Return => "return",
            ItemKind::Watch => "watch",
            ItemKind::Sample => "sample",
            ItemKind::Switch => "switch",
            ItemKind::Task => "task",
        }
    }
}

/// One timeline entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub time_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    /// The probe, watch (`watch:NAME`), counter, `sched:switch` or `task:fork|exit|comm`.
    pub source: String,
    pub kind: ItemKind,
    pub args: Vec<(String, Value)>,
    pub ret: Option<Value>,
    pub errno: Option<&'static str>,
    /// A sample's call chain (`record -g`), innermost first: kernel frames, then user frames.
    pub stack: Vec<Frame>,
}

impl ItemKind {
    /// The JSON model's `type` (docs/json.md): a probe's hit or return, or a watchpoint's, is
    /// an `event` of its source, as `tracer probe` writes one (its text line is the same).
    fn json_type(self) -> &'static str {
        match self {
            ItemKind::Probe | ItemKind::Return | ItemKind::Watch => "event",
            ItemKind::Sample => "sample",
            ItemKind::Switch => "switch",
            ItemKind::Task => "task",
        }
    }
}

/// One `tracer report -f json` line, serialized straight into the output.
#[derive(serde::Serialize)]
struct JsonItem<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    time_ns: u64,
    time_unix_ns: Option<u64>,
    cpu: u32,
    pid: u32,
    tid: u32,
    comm: &'a str,
    /// What recorded it: the probe, watch or sampling event as `record` named it.
    probe: &'a str,
    args: JsonArgs<'a, String>,
    /// `null` but for returns, as in `tracer probe`'s lines.
    ret: Option<JsonValue<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errno: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    truncated: Vec<&'a str>,
    /// A sample's frames, as `tracer probe -s` writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    stack: Option<serde_json::Value>,
}

pub struct TimelineWriter<W: Write> {
    out: W,
    format: Format,
    start_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC of the recording: JSON's `time_unix_ns`.
    wall_offset_ns: Option<i64>,
}

impl<W: Write> TimelineWriter<W> {
    /// Times are shown from `start_ns` on (a recording's start, once its metadata is read).
    pub fn set_start(&mut self, start_ns: u64, wall_offset_ns: Option<i64>) {
        self.start_ns = start_ns;
        self.wall_offset_ns = wall_offset_ns;
    }

    pub fn new(out: W, format: Format, start_ns: u64) -> TimelineWriter<W> {
        TimelineWriter {
            out,
            format,
            start_ns,
            wall_offset_ns: None,
        }
    }

    pub fn header(&mut self) -> io::Result<()> {
        if self.format == Format::Text {
            writeln!(
                self.out,
                "{:<10} {:<3} {:<15} {:<16} SOURCE ARGS",
                "TIME(s)", "CPU", "PID/TID", "COMM"
            )?;
        }
        Ok(())
    }

    pub fn write(&mut self, item: &Item) -> io::Result<()> {
        match self.format {
            Format::Text => TextLine {
                // Signed: a record from before the start (a synthesized comm) stays readable.
                secs: (item.time_ns as i128 - self.start_ns as i128) as f64 / 1e9,
                cpu: item.cpu,
                pid: item.pid,
                tid: item.tid,
                comm: &item.comm,
                source: &item.source,
                args: &item.args,
                ret: item.ret.as_ref(),
                errno: item.errno,
            }
            .write(&mut self.out)
            .and_then(|()| {
                (item.stack.iter()).try_for_each(|f| writeln!(self.out, "        {}", f.text()))
            }),
            Format::Json => {
                let line = JsonItem {
                    kind: item.kind.json_type(),
                    time_ns: item.time_ns,
                    time_unix_ns: super::json::unix_ns(item.time_ns, self.wall_offset_ns),
                    cpu: item.cpu,
                    pid: item.pid,
                    tid: item.tid,
                    comm: &item.comm,
                    probe: &item.source,
                    args: JsonArgs(&item.args),
                    ret: item.ret.as_ref().map(JsonValue),
                    errno: item.errno,
                    truncated: super::events::truncated(&item.args, item.ret.as_ref()),
                    stack: (!item.stack.is_empty()).then(|| {
                        super::stack::json(&[super::stack::Stack::Frames(
                            super::stack::Frames::new(item.stack.clone()),
                        )])
                    }),
                };
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> Item {
        Item {
            time_ns: 2_500_000_000,
            cpu: 1,
            pid: 40,
            tid: 41,
            comm: "prog".into(),
            source: "watch:counter".into(),
            kind: ItemKind::Watch,
            args: vec![
                ("old".into(), Value::Uint(0)),
                ("new".into(), Value::Uint(1)),
                ("at".into(), Value::Word("work+0x12".into())),
            ],
            ret: None,
            errno: None,
            stack: Vec::new(),
        }
    }

    fn render(format: Format, item: &Item) -> String {
        let mut w = TimelineWriter::new(Vec::new(), format, 2_000_000_000);
        w.write(item).unwrap();
        String::from_utf8(w.out).unwrap()
    }

    #[test]
    fn text_lines_match_tracer_probe() {
        assert_eq!(
            render(Format::Text, &item()),
            "0.500000   1   40/41           prog             watch:counter old=0 new=1 at=work+0x12\n"
        );
    }

    #[test]
    fn json_lines_carry_the_type_and_typed_args() {
        let mut i = item();
        i.kind = ItemKind::Return;
        i.ret = Some(Value::Int(-2));
        i.errno = Some("ENOENT");
        let v: serde_json::Value = serde_json::from_str(&render(Format::Json, &i)).unwrap();
        assert_eq!(v["type"], "event");
        assert_eq!(v["probe"], "watch:counter");
        assert_eq!(v["time_unix_ns"], serde_json::Value::Null);
        assert_eq!(v["args"]["new"], 1);
        assert_eq!(v["args"]["at"], "work+0x12");
        assert_eq!(
            (v["ret"].as_i64(), v["errno"].as_str()),
            (Some(-2), Some("ENOENT"))
        );
        assert_eq!((v["pid"].as_u64(), v["tid"].as_u64()), (Some(40), Some(41)));
    }
}
