//! Probe events as text lines (`TIME CPU PID/TID COMM PROBE ARGS`) or JSON Lines.

use std::io::{self, Write};

use tracer_common::Event;

use crate::kernel::format::Value;

/// How events are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// One decoded event, ready to print.
pub struct Decoded<'a> {
    pub event: &'a Event,
    pub probe: &'a str,
    pub args: Vec<(&'a str, Value)>,
    pub ret: Option<Value>,
    /// The errno a typed return value stands for (`ENOENT`): text prints `-ENOENT (-2)`.
    pub errno: Option<&'static str>,
    /// With `-s`: kernel then user stack.
    pub stacks: Vec<crate::output::stack::Stack>,
}

/// Writes events in one format; text times are seconds since `start_ns` (CLOCK_MONOTONIC).
pub struct EventWriter<W: Write> {
    out: W,
    format: Format,
    start_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC: JSON's `time_unix_ns`.
    wall_offset_ns: Option<i64>,
}

pub(crate) fn json_value(value: &Value) -> serde_json::Value {
    match value {
        Value::Int(v) => (*v).into(),
        Value::Uint(v) => (*v).into(),
        Value::Hex(v) => (*v).into(),
        Value::Str(s) | Value::Cut(s) | Value::Word(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Named(v, name) => serde_json::json!({"value": v, "text": name}),
        Value::Array(items) => (items.iter())
            .filter(|v| **v != Value::Etc)
            .map(json_value)
            .collect::<Vec<_>>()
            .into(),
        Value::Etc => serde_json::Value::Null,
        Value::Missing => serde_json::Value::Null,
    }
}

/// The text line `tracer probe` prints and `tracer report` repeats:
/// `TIME CPU PID/TID COMM SOURCE name=value... [ret=VALUE | ret=-ERRNO (VALUE)]`.
pub(crate) struct TextLine<'a, N> {
    /// Seconds since the start of the run.
    pub secs: f64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub source: &'a str,
    pub args: &'a [(N, Value)],
    pub ret: Option<&'a Value>,
    pub errno: Option<&'a str>,
}

impl<N: std::fmt::Display> TextLine<'_, N> {
    pub(crate) fn write(&self, out: &mut impl Write) -> io::Result<()> {
        write!(
            out,
            "{:<10.6} {:<3} {:<15} {:<16} {}",
            self.secs,
            self.cpu,
            format!("{}/{}", self.pid, self.tid),
            self.comm,
            self.source
        )?;
        for (name, value) in self.args {
            write!(out, " {name}={value}")?;
        }
        match (self.ret, self.errno) {
            (Some(ret), Some(errno)) => write!(out, " ret=-{errno} ({ret})")?,
            (Some(ret), None) => write!(out, " ret={ret}")?,
            (None, _) => {}
        }
        writeln!(out)
    }
}

/// One JSON line (docs/json.md, `"type":"event"`), written straight into the output: the
/// fixed fields by hand, in the schema's order (`type`, `time_ns`, `time_unix_ns`, `cpu`,
/// `pid`, `tid`, `comm`, `probe`, `args`, `ret`, then `errno`, `stack` and `truncated` when
/// there are any), the values through serde_json. The
/// reader formats every streamed event, so this is its hot path: serde_json's generic map
/// (its state machine, each key escaped at run time) was about a third of its time, and
/// building a `serde_json::Value` per event before that most of it.
fn write_json_line(
    out: &mut impl Write,
    d: &Decoded<'_>,
    comm: &str,
    wall_offset_ns: Option<i64>,
) -> io::Result<()> {
    let e = d.event;
    let mut n = itoa::Buffer::new();
    out.write_all(b"{\"type\":\"event\",\"time_ns\":")?;
    out.write_all(n.format(e.time_ns).as_bytes())?;
    out.write_all(b",\"time_unix_ns\":")?;
    match super::json::unix_ns(e.time_ns, wall_offset_ns) {
        Some(wall) => out.write_all(n.format(wall).as_bytes())?,
        None => out.write_all(b"null")?,
    }
    out.write_all(b",\"cpu\":")?;
    out.write_all(n.format(e.cpu).as_bytes())?;
    out.write_all(b",\"pid\":")?;
    out.write_all(n.format(e.pid()).as_bytes())?;
    out.write_all(b",\"tid\":")?;
    out.write_all(n.format(e.tid()).as_bytes())?;
    out.write_all(b",\"comm\":")?;
    json_str(out, comm)?;
    out.write_all(b",\"probe\":")?;
    json_str(out, d.probe)?;
    out.write_all(b",\"args\":")?;
    match d.args.is_empty() {
        true => out.write_all(b"{}")?,
        false => serde_json::to_writer(&mut *out, &JsonArgs(&d.args))?,
    }
    out.write_all(b",\"ret\":")?;
    match &d.ret {
        Some(ret) => serde_json::to_writer(&mut *out, &JsonValue(ret))?,
        None => out.write_all(b"null")?,
    }
    if let Some(errno) = d.errno {
        out.write_all(b",\"errno\":")?;
        json_str(out, errno)?;
    }
    if !d.stacks.is_empty() {
        out.write_all(b",\"stack\":")?;
        crate::output::stack::write_json(&mut *out, &d.stacks)?;
    }
    // The values cut short (`--strlen`, array elements left out), by name; asked first, since
    // most lines have none and the names are collected into a list.
    let cut = |v: &Value| v.is_cut();
    if d.args.iter().any(|(_, v)| cut(v)) || d.ret.as_ref().is_some_and(cut) {
        out.write_all(b",\"truncated\":")?;
        serde_json::to_writer(&mut *out, &truncated(&d.args, d.ret.as_ref()))?;
    }
    out.write_all(b"}\n")
}

/// `s` as a JSON string: as it is between quotes when nothing in it needs an escape (the
/// usual comm and probe name), else escaped by serde_json (quotes, backslashes and control
/// characters; other bytes, UTF-8 included, are written as they are, as serde_json does).
fn json_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.write_all(b"\"")?;
        out.write_all(s.as_bytes())?;
        return out.write_all(b"\"");
    }
    serde_json::to_writer(out, s).map_err(io::Error::from)
}

/// The names of the values cut short, and the return value's as `ret`.
pub(crate) fn truncated<'a, N: AsRef<str>>(
    args: &'a [(N, Value)],
    ret: Option<&Value>,
) -> Vec<&'a str> {
    let mut names: Vec<&str> = (args.iter())
        .filter(|(_, v)| v.is_cut())
        .map(|(n, _)| n.as_ref())
        .collect();
    if ret.is_some_and(Value::is_cut) {
        names.push("ret");
    }
    names
}

/// Named values as a JSON object, written directly.
pub(crate) struct JsonArgs<'a, N>(pub(crate) &'a [(N, Value)]);

impl<N: AsRef<str>> serde::Serialize for JsonArgs<'_, N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            self.0
                .iter()
                .map(|(name, value)| (name.as_ref(), JsonValue(value))),
        )
    }
}

/// A value as [`json_value`] renders it, written directly.
pub(crate) struct JsonValue<'a>(pub(crate) &'a Value);

impl serde::Serialize for JsonValue<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Int(v) => s.serialize_i64(*v),
            Value::Uint(v) => s.serialize_u64(*v),
            Value::Hex(v) => s.serialize_u64(*v),
            Value::Str(text) | Value::Cut(text) | Value::Word(text) => s.serialize_str(text),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Named(v, name) => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("value", v)?;
                map.serialize_entry("text", name)?;
                map.end()
            }
            Value::Array(items) => {
                s.collect_seq(items.iter().filter(|v| **v != Value::Etc).map(JsonValue))
            }
            Value::Etc => s.serialize_none(),
            Value::Missing => s.serialize_none(),
        }
    }
}

impl<W: Write> EventWriter<W> {
    /// Text times are seconds since `start_ns`; JSON's `time_unix_ns` adds `wall_offset_ns`.
    pub fn new(out: W, format: Format, start_ns: u64, wall_offset_ns: i64) -> EventWriter<W> {
        EventWriter {
            out,
            format,
            start_ns,
            wall_offset_ns: Some(wall_offset_ns),
        }
    }

    /// The column header (text only).
    pub fn header(&mut self) -> io::Result<()> {
        if self.format == Format::Text {
            writeln!(
                self.out,
                "{:<10} {:<3} {:<15} {:<16} PROBE ARGS",
                "TIME(s)", "CPU", "PID/TID", "COMM"
            )?;
        }
        Ok(())
    }

    pub fn write(&mut self, d: &Decoded<'_>) -> io::Result<()> {
        let e = d.event;
        let comm = String::from_utf8_lossy(e.comm());
        match self.format {
            Format::Text => {
                TextLine {
                    secs: e.time_ns.saturating_sub(self.start_ns) as f64 / 1e9,
                    cpu: e.cpu,
                    pid: e.pid(),
                    tid: e.tid(),
                    comm: &comm,
                    source: d.probe,
                    args: &d.args,
                    ret: d.ret.as_ref(),
                    errno: d.errno,
                }
                .write(&mut self.out)?;
                crate::output::stack::write_text(&mut self.out, &d.stacks)
            }
            Format::Json => write_json_line(&mut self.out, d, &comm, self.wall_offset_ns),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output itself, for what is not an event (a report at the end).
    pub fn out(&mut self) -> &mut W {
        &mut self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        let mut comm = [0u8; 16];
        comm[..3].copy_from_slice(b"cat");
        Event {
            time_ns: 1_012_345_000,
            pid_tgid: (4242u64 << 32) | 4243,
            data: [0; 8],
            slot: 16,
            cpu: 1,
            str_bytes: 0,
            kstack: tracer_common::NO_STACK,
            ustack: tracer_common::NO_STACK,
            fields: [0; tracer_common::FIELD_READS],
            field_faults: 0,
            comm,
        }
    }

    fn render(format: Format, d: &Decoded<'_>) -> String {
        let mut w = EventWriter::new(Vec::new(), format, 1_000_000_000, 1_700_000_000_000_000_000);
        w.write(d).unwrap();
        String::from_utf8(w.out).unwrap()
    }

    #[test]
    fn text_line_has_the_columns_and_typed_args() {
        let e = event();
        let d = Decoded {
            event: &e,
            probe: "syscalls:sys_enter_openat",
            args: vec![
                ("dfd", Value::Int(-100)),
                ("filename", Value::Str("/etc/hostname".into())),
                ("flags", Value::Hex(0)),
                ("mode", Value::Uint(0)),
            ],
            ret: None,
            errno: None,
            stacks: Vec::new(),
        };
        assert_eq!(
            render(Format::Text, &d),
            "0.012345   1   4242/4243       cat              syscalls:sys_enter_openat dfd=-100 filename=\"/etc/hostname\" flags=0x0 mode=0\n"
        );
    }

    #[test]
    fn json_line_has_stable_field_names() {
        let e = event();
        let d = Decoded {
            event: &e,
            probe: "uretprobe:/bin/x:f",
            args: vec![
                ("arg0", Value::Hex(0x10)),
                ("x", Value::Missing),
                ("odd", Value::Bool(true)),
                ("shade", Value::Named(5, "GREEN".into())),
            ],
            ret: Some(Value::Int(-2)),
            errno: Some("ENOENT"),
            stacks: Vec::new(),
        };
        let v: serde_json::Value = serde_json::from_str(&render(Format::Json, &d)).unwrap();
        assert_eq!(v["type"], "event");
        assert_eq!(v["time_ns"], 1_012_345_000u64);
        assert_eq!(v["time_unix_ns"], 1_700_000_001_012_345_000u64);
        assert_eq!(
            (v["pid"].as_u64(), v["tid"].as_u64()),
            (Some(4242), Some(4243))
        );
        assert_eq!(v["comm"], "cat");
        assert_eq!(v["args"]["arg0"], 0x10);
        assert!(v["args"]["x"].is_null());
        assert_eq!(v["args"]["odd"], true);
        assert_eq!(
            v["args"]["shade"],
            serde_json::json!({"value": 5, "text": "GREEN"})
        );
        assert_eq!(v["ret"], -2);
        assert_eq!(v["errno"], "ENOENT");
        assert!(v.get("truncated").is_none(), "nothing was cut");
    }

    #[test]
    fn json_lines_are_written_byte_for_byte_in_the_schemas_order() {
        // The hand-written line against the text the derived serializer wrote before it: the
        // same bytes, escapes included, for a bare event and for one with every part.
        let mut e = event();
        let d = Decoded {
            event: &e,
            probe: "syscalls:sys_enter_getppid",
            args: Vec::new(),
            ret: None,
            errno: None,
            stacks: Vec::new(),
        };
        assert_eq!(
            render(Format::Json, &d),
            "{\"type\":\"event\",\"time_ns\":1012345000,\"time_unix_ns\":1700000001012345000,\"cpu\":1,\"pid\":4242,\"tid\":4243,\"comm\":\"cat\",\
             \"probe\":\"syscalls:sys_enter_getppid\",\"args\":{},\"ret\":null}\n"
        );
        e.comm[..6].copy_from_slice(b"a\"b\\\n\xc3");
        e.comm[6] = 0xa9;
        e.time_ns = u64::MAX;
        e.cpu = u32::MAX;
        let d = Decoded {
            event: &e,
            probe: "uprobe:/tmp/x y:f",
            args: vec![
                ("s", Value::Cut("t\tab".into())),
                ("n", Value::Int(i64::MIN)),
                ("a", Value::Array(vec![Value::Uint(1), Value::Etc])),
            ],
            ret: Some(Value::Int(-2)),
            errno: Some("ENOENT"),
            stacks: vec![crate::output::stack::Stack::NotCaptured(-14)],
        };
        let stack = serde_json::to_string(&crate::output::stack::json(&d.stacks)).unwrap();
        assert_eq!(
            render(Format::Json, &d),
            format!(
                "{{\"type\":\"event\",\"time_ns\":18446744073709551615,\"time_unix_ns\":null,\"cpu\":4294967295,\"pid\":4242,\
                 \"tid\":4243,\"comm\":\"a\\\"b\\\\\\n\u{e9}\",\"probe\":\"uprobe:/tmp/x y:f\",\
                 \"args\":{{\"s\":\"t\\tab\",\"n\":-9223372036854775808,\"a\":[1]}},\
                 \"ret\":-2,\"errno\":\"ENOENT\",\"stack\":{stack},\"truncated\":[\"s\",\"a\"]}}\n"
            )
        );
    }

    #[test]
    fn cut_strings_are_marked_in_text_and_named_in_json() {
        let e = event();
        let d = Decoded {
            event: &e,
            probe: "syscalls:sys_enter_execve",
            args: vec![
                ("filename", Value::Cut("/usr/".into())),
                (
                    "argv",
                    Value::Array(vec![Value::Str("ls".into()), Value::Etc]),
                ),
                ("envp", Value::Hex(0x7ffd_0000)),
            ],
            ret: None,
            errno: None,
            stacks: Vec::new(),
        };
        assert!(render(Format::Text, &d)
            .ends_with(" filename=\"/usr/\"... argv=[\"ls\", ...] envp=0x7ffd0000\n"));
        let v: serde_json::Value = serde_json::from_str(&render(Format::Json, &d)).unwrap();
        assert_eq!(v["args"]["filename"], "/usr/");
        assert_eq!(v["args"]["argv"], serde_json::json!(["ls"]));
        assert_eq!(v["args"]["envp"], 0x7ffd_0000);
        assert_eq!(v["truncated"], serde_json::json!(["filename", "argv"]));
    }
}
