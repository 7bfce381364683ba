//! `tracer trace`'s output: one line per system call as strace writes it (`openat(AT_FDCWD,
//! "/etc/hostname", O_RDONLY|O_CLOEXEC) = 3 <0.000012>`), or one JSON object per call; and
//! the `-c` table (strace -c's columns).

use std::io::{self, Write};

use hashbrown::HashSet;
use serde::Serialize;

use super::events::Format;

/// How a call ended, as far as the run saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Returned: the return value and duration are known.
    Returned,
    /// Never returns (exit, exit_group).
    NoReturn,
    /// Still inside the call when tracing ended.
    Unfinished,
}

/// One argument: its name (the kernel's), the register's value as its kind reads it, and how
/// strace shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Shown {
    pub name: String,
    pub value: i128,
    pub text: String,
}

/// One system call.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// Entry time, CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub comm: &'a str,
    pub name: &'a str,
    pub args: Vec<Shown>,
    pub end: End,
    /// The return value as a signed number (`Returned`).
    pub ret: i64,
    /// The return value as strace shows it (`3`, `-1 ENOENT (...)`, `?`).
    pub ret_text: String,
    pub errno: Option<&'static str>,
    pub duration_ns: u64,
}

#[derive(Serialize)]
struct JsonCall<'a> {
    time_ns: u64,
    pid: u32,
    tid: u32,
    comm: &'a str,
    name: &'a str,
    args: &'a [Shown],
    ret: Option<i64>,
    errno: Option<&'static str>,
    duration_ns: Option<u64>,
    unfinished: bool,
}

/// Writes calls as they come.
pub struct CallWriter<W: Write> {
    out: W,
    format: Format,
    /// `-t`: CLOCK_REALTIME minus CLOCK_MONOTONIC, to show entry times as the time of day.
    wall_offset_ns: Option<i128>,
    /// Threads seen: once there are two, every line names its thread (strace's `[pid N]`).
    tasks: HashSet<u32>,
}

impl<W: Write> CallWriter<W> {
    pub fn new(out: W, format: Format, wall_offset_ns: Option<i128>) -> CallWriter<W> {
        CallWriter {
            out,
            format,
            wall_offset_ns,
            tasks: HashSet::new(),
        }
    }

    /// Makes the thread prefix appear from the first line on (the run already has several
    /// threads, e.g. `-p` of a threaded process).
    pub fn seen(&mut self, tid: u32) {
        self.tasks.insert(tid);
    }

    pub fn write(&mut self, call: &Call<'_>) -> io::Result<()> {
        self.tasks.insert(call.tid);
        match self.format {
            Format::Json => {
                let line = JsonCall {
                    time_ns: call.time_ns,
                    pid: call.pid,
                    tid: call.tid,
                    comm: call.comm,
                    name: call.name,
                    args: &call.args,
                    ret: (call.end == End::Returned).then_some(call.ret),
                    errno: call.errno,
                    duration_ns: (call.end == End::Returned).then_some(call.duration_ns),
                    unfinished: call.end == End::Unfinished,
                };
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")
            }
            Format::Text => {
                let line = self.line(call);
                self.out.write_all(line.as_bytes())
            }
        }
    }

    /// A call's text line: `[pid TID COMM] ` once several threads were seen, the time of day
    /// with `-t`, then the call.
    fn line(&self, call: &Call<'_>) -> String {
        let mut line = String::new();
        if self.tasks.len() > 1 {
            line.push_str(&format!("[pid {:>5} {}] ", call.tid, call.comm));
        }
        if let Some(offset) = self.wall_offset_ns {
            line.push_str(&time_of_day(call.time_ns as i128 + offset));
            line.push(' ');
        }
        line.push_str(call.name);
        line.push('(');
        let args: Vec<&str> = call.args.iter().map(|a| a.text.as_str()).collect();
        line.push_str(&args.join(", "));
        match call.end {
            End::Returned => line.push_str(&format!(
                ") = {} <{}.{:06}>",
                call.ret_text,
                call.duration_ns / 1_000_000_000,
                call.duration_ns % 1_000_000_000 / 1000
            )),
            End::NoReturn => line.push_str(") = ?"),
            End::Unfinished => line.push_str(" <unfinished ...>)"),
        }
        line.push('\n');
        line
    }

    /// A line of its own, in the calls' stream (`+++ exited with 0 +++`).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        match self.format {
            Format::Text => writeln!(self.out, "{text}"),
            Format::Json => Ok(()),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `HH:MM:SS.uuuuuu` (UTC) of a CLOCK_REALTIME time in ns.
fn time_of_day(realtime_ns: i128) -> String {
    let us = (realtime_ns / 1000).max(0) as u64;
    let secs = us / 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60,
        us % 1_000_000
    )
}

/// One row of `-c`: a call's count, errors and time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
}

/// strace -c's table: sorted by time, then calls, then name; a total row.
pub fn summary_table(mut rows: Vec<Row>) -> String {
    rows.sort_by(|a, b| {
        (b.total_ns, b.calls)
            .cmp(&(a.total_ns, a.calls))
            .then(a.name.cmp(&b.name))
    });
    let total_ns: u64 = rows.iter().map(|r| r.total_ns).sum();
    let rule = "------ ----------- ----------- --------- --------- ----------------\n";
    let mut out = String::from("% time     seconds  usecs/call     calls    errors syscall\n");
    out.push_str(rule);
    let errors = |n: u64| match n {
        0 => String::new(),
        n => n.to_string(),
    };
    for r in &rows {
        let share = match total_ns {
            0 => 0.0,
            t => 100.0 * r.total_ns as f64 / t as f64,
        };
        out.push_str(&format!(
            "{:>6.2} {:>11.6} {:>11} {:>9} {:>9} {}\n",
            share,
            r.total_ns as f64 / 1e9,
            r.total_ns / 1000 / r.calls.max(1),
            r.calls,
            errors(r.errors),
            r.name
        ));
    }
    out.push_str(rule);
    let calls: u64 = rows.iter().map(|r| r.calls).sum();
    let errs: u64 = rows.iter().map(|r| r.errors).sum();
    out.push_str(&format!(
        "{:>6.2} {:>11.6} {:>11} {:>9} {:>9} total\n",
        100.0,
        total_ns as f64 / 1e9,
        total_ns / 1000 / calls.max(1),
        calls,
        errors(errs)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(end: End) -> Call<'static> {
        Call {
            time_ns: 0,
            pid: 7,
            tid: 7,
            comm: "cat",
            name: "openat",
            args: vec![
                Shown {
                    name: "dfd".into(),
                    value: -100,
                    text: "AT_FDCWD".into(),
                },
                Shown {
                    name: "filename".into(),
                    value: 0x1000,
                    text: "\"/nope\"".into(),
                },
            ],
            end,
            ret: -2,
            ret_text: "-1 ENOENT (No such file or directory)".into(),
            errno: Some("ENOENT"),
            duration_ns: 12_345,
        }
    }

    fn text(calls: &[Call<'_>]) -> String {
        let mut out = Vec::new();
        let mut w = CallWriter::new(&mut out, Format::Text, None);
        for c in calls {
            w.write(c).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_read_as_strace_writes_them() {
        assert_eq!(
            text(&[call(End::Returned)]),
            "openat(AT_FDCWD, \"/nope\") = -1 ENOENT (No such file or directory) <0.000012>\n"
        );
        assert_eq!(
            text(&[call(End::Unfinished)]),
            "openat(AT_FDCWD, \"/nope\" <unfinished ...>)\n"
        );
        let mut other = call(End::NoReturn);
        other.tid = 8;
        other.name = "exit_group";
        other.args.truncate(0);
        let both = text(&[call(End::Returned), other]);
        assert!(
            both.ends_with("\n[pid     8 cat] exit_group() = ?\n"),
            "{both}"
        );
    }

    #[test]
    fn json_has_every_field() {
        let mut out = Vec::new();
        CallWriter::new(&mut out, Format::Json, None)
            .write(&call(End::Returned))
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["name"], "openat");
        assert_eq!(v["ret"], -2);
        assert_eq!(v["errno"], "ENOENT");
        assert_eq!(v["duration_ns"], 12_345);
        assert_eq!(v["args"][0]["name"], "dfd");
        assert_eq!(v["args"][0]["value"], -100);
        assert_eq!(v["args"][1]["text"], "\"/nope\"");
        assert_eq!(v["unfinished"], false);
    }

    #[test]
    fn the_summary_is_strace_c_table() {
        let table = summary_table(vec![
            Row {
                name: "read".into(),
                calls: 4,
                errors: 0,
                total_ns: 1_000_000,
            },
            Row {
                name: "openat".into(),
                calls: 3,
                errors: 1,
                total_ns: 3_000_000,
            },
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "% time     seconds  usecs/call     calls    errors syscall"
        );
        assert_eq!(
            lines[2],
            " 75.00    0.003000        1000         3         1 openat"
        );
        assert_eq!(
            lines[3],
            " 25.00    0.001000         250         4           read"
        );
        assert_eq!(
            lines[5],
            "100.00    0.004000         571         7         1 total"
        );
    }
}
