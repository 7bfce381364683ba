//! `tracer trace`'s output: one line per system call as strace writes it (`openat(AT_FDCWD,
//! "/etc/hostname", O_RDONLY|O_CLOEXEC) = 3 <0.000012>`), or one JSON object per call; and
//! the `-c` table (strace -c's columns).

use std::io::{self, Write};

use hashbrown::HashSet;
use serde::Serialize;

use super::events::Format;

/// How a call ended, as far as the run saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallEnd {
    /// Returned: the return value and duration are known.
    Returned,
    /// Never returns (exit, exit_group).
    NoReturn,
    /// Still inside the call when tracing ended.
    Unfinished,
    /// Its task ended inside it (killed): strace's `<unfinished ...>) = ?`.
    Killed,
}

/// One argument: its name (the kernel's), the register's value as its kind reads it, and how
/// strace shows it.
#[derive(Clone, Debug)]
pub struct Shown {
    pub name: String,
    pub value: i128,
    pub text: String,
    /// A path's or argv's strings as read (lossy UTF-8), for JSON: `None` for other kinds and
    /// for a pointer that could not be read.
    pub strings: Option<Strings>,
    /// A file descriptor (or `*at`'s directory): `-y` shows what it refers to.
    pub fd: bool,
    /// Descriptors inside the text (a select's set, poll's `fd=`, an `SCM_RIGHTS` message's):
    /// the byte offsets just past each number, where `-y` shows what it refers to.
    pub inner_fds: Vec<usize>,
}

/// What was read of a `char *` or `char **` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strings {
    pub items: Vec<String>,
    /// `char **` (argv): a JSON array; else the one string.
    pub array: bool,
    /// Cut short by `-s`, or an array with more elements than were read.
    pub cut: bool,
}

impl Shown {
    /// The argument in the JSON model (docs/json.md): a string (a path) or an array of them
    /// (argv) as read; a number where strace prints the number itself; else the number beside
    /// strace's text (`{"value": 524288, "text": "O_RDONLY|O_CLOEXEC"}`).
    fn json(&self) -> serde_json::Value {
        match &self.strings {
            Some(s) if s.array => s.items.clone().into(),
            Some(s) if s.items.len() == 1 => s.items[0].clone().into(),
            _ if self.text == self.value.to_string() => json_number(self.value),
            _ => serde_json::json!({"value": json_number(self.value), "text": self.text}),
        }
    }
}

/// An i128 register value as a JSON number (it fits i64 or u64 by construction).
fn json_number(v: i128) -> serde_json::Value {
    match i64::try_from(v) {
        Ok(n) => n.into(),
        Err(_) => (v as u64).into(),
    }
}

/// The call's arguments as one JSON object, by name.
struct JsonArgs<'a>(&'a [Shown]);

impl Serialize for JsonArgs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|a| (a.name.as_str(), a.json())))
    }
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
    /// How many of `args` strace prints when the call enters (those before the first one the
    /// call fills): an unfinished call shows these, its resumed line the rest.
    pub at_entry: usize,
    pub end: CallEnd,
    /// Shown unfinished while it blocked: its end is strace's `<... NAME resumed>` line.
    pub resumed: bool,
    /// The return value as a signed number (`Returned`).
    pub ret: i64,
    /// The return value as strace shows it (`3`, `-1 ENOENT (...)`, `?`).
    pub ret_text: String,
    pub errno: Option<&'static str>,
    pub duration_ns: u64,
    /// `-k`: its user stack.
    pub stacks: Vec<super::stack::Stack>,
}

#[derive(Serialize)]
struct JsonCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    time_ns: u64,
    time_unix_ns: Option<u64>,
    pid: u32,
    tid: u32,
    comm: &'a str,
    name: &'a str,
    args: JsonArgs<'a>,
    ret: Option<i64>,
    errno: Option<&'static str>,
    duration_ns: Option<u64>,
    unfinished: bool,
    /// The arguments cut short (`-s`, argv's elements left out), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    truncated: Vec<&'a str>,
    /// `-k`: the frames, as `tracer probe -s` gives them.
    #[serde(skip_serializing_if = "Option::is_none")]
    stack: Option<serde_json::Value>,
}

/// What befell a task besides its calls: a signal delivered to it, or its exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskEvent {
    /// strace's `--- SIGUSR1 {si_signo=SIGUSR1, ...} ---`.
    Signal(Delivered),
    /// Its wait status (`exit_code`): strace's `+++ exited with 3 +++`, `+++ killed by
    /// SIGTERM +++`.
    Exit(u32),
    /// An exec by another thread of the process took its id: strace's `+++ superseded by
    /// execve in pid N +++`, N the thread's id before.
    Superseded(u32),
}

/// A delivered signal: its number, `si_code`, and the siginfo's union words (bytes 16..48).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub signo: u32,
    pub code: i32,
    pub words: [u64; 4],
}

impl Delivered {
    /// The siginfo as strace prints it: the fields its `si_code` says are set.
    pub fn siginfo(&self) -> String {
        use crate::output::syscall::signal;
        let name = signal(u64::from(self.signo));
        let low = |w: u64| w as u32;
        let high = |w: u64| (w >> 32) as u32;
        let (pid, uid) = (low(self.words[0]), high(self.words[0]));
        let mut text = format!("si_signo={name}, si_code={}", self.code_name());
        let fault = [
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGTRAP,
        ];
        match self.code {
            // SI_USER, SI_TKILL, SI_QUEUE, SI_MESGQ: who sent it.
            0 | -6 | -1 | -3 => {
                text.push_str(&format!(", si_pid={pid}, si_uid={uid}"));
                if self.code == -1 {
                    let value = self.words[1];
                    text.push_str(&format!(", si_int={}, si_ptr={value:#x}", value as i32));
                }
            }
            // SI_TIMER
            -2 => text.push_str(&format!(
                ", si_timerid={:#x}, si_overrun={}, si_int={}, si_ptr={:#x}",
                low(self.words[0]),
                high(self.words[0]) as i32,
                self.words[1] as i32,
                self.words[1]
            )),
            code if code > 0 && self.signo == libc::SIGCHLD as u32 => {
                let status = low(self.words[1]) as i32;
                let status = match code {
                    // CLD_EXITED: the exit code; otherwise the signal.
                    1 => status.to_string(),
                    _ => signal(status as u64),
                };
                text.push_str(&format!(
                    ", si_pid={pid}, si_uid={uid}, si_status={status}, si_utime={}, si_stime={}",
                    ticks(self.words[2]),
                    ticks(self.words[3])
                ));
            }
            code if code > 0 && fault.contains(&(self.signo as i32)) => {
                text.push_str(&format!(
                    ", si_addr={}",
                    super::syscall::pointer(self.words[0])
                ));
            }
            _ => {}
        }
        format!("{{{text}}}")
    }

    /// `SI_USER`, `CLD_EXITED`, `SEGV_MAPERR`..., else the number.
    fn code_name(&self) -> String {
        let general = match self.code {
            0 => Some("SI_USER"),
            0x80 => Some("SI_KERNEL"),
            -1 => Some("SI_QUEUE"),
            -2 => Some("SI_TIMER"),
            -3 => Some("SI_MESGQ"),
            -4 => Some("SI_ASYNCIO"),
            -5 => Some("SI_SIGIO"),
            -6 => Some("SI_TKILL"),
            _ => None,
        };
        let by_signal: &[&str] = match self.signo as i32 {
            libc::SIGCHLD => &[
                "CLD_EXITED",
                "CLD_KILLED",
                "CLD_DUMPED",
                "CLD_TRAPPED",
                "CLD_STOPPED",
                "CLD_CONTINUED",
            ],
            libc::SIGSEGV => &["SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR"],
            libc::SIGBUS => &["BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR"],
            libc::SIGFPE => &[
                "FPE_INTDIV",
                "FPE_INTOVF",
                "FPE_FLTDIV",
                "FPE_FLTOVF",
                "FPE_FLTUND",
                "FPE_FLTRES",
                "FPE_FLTINV",
                "FPE_FLTSUB",
            ],
            libc::SIGILL => &[
                "ILL_ILLOPC",
                "ILL_ILLOPN",
                "ILL_ILLADR",
                "ILL_ILLTRP",
                "ILL_PRVOPC",
                "ILL_PRVREG",
                "ILL_COPROC",
                "ILL_BADSTK",
            ],
            libc::SIGTRAP => &["TRAP_BRKPT", "TRAP_TRACE", "TRAP_BRANCH", "TRAP_HWBKPT"],
            _ => &[],
        };
        let specific = (self.code > 0)
            .then(|| by_signal.get(self.code as usize - 1))
            .flatten();
        match (general, specific) {
            (Some(name), _) | (None, Some(&name)) => name.to_string(),
            (None, None) => self.code.to_string(),
        }
    }
}

/// A CPU time in clock ticks (`USER_HZ`, 100 a second) as strace writes it: the number, and
/// when it is not 0 the seconds (`1 /* 0.01 s */`).
fn ticks(value: u64) -> String {
    match value {
        0 => "0".into(),
        v => format!("{v} /* {}.{:02} s */", v / 100, v % 100),
    }
}

/// An exit status (`exit_code`) as strace ends a task: `exited with 3`, `killed by SIGSEGV
/// (core dumped)`.
pub fn exit_text(status: u32) -> String {
    let signal = status & 0x7f;
    match signal {
        0 => format!("+++ exited with {} +++", (status >> 8) & 0xff),
        _ => format!(
            "+++ killed by {}{} +++",
            crate::output::syscall::signal(u64::from(signal)),
            if status & 0x80 != 0 {
                " (core dumped)"
            } else {
                ""
            }
        ),
    }
}

#[derive(Serialize)]
struct JsonTaskEvent<'a> {
    /// "signal", "exit" or "superseded".
    #[serde(rename = "type")]
    kind: &'static str,
    time_ns: u64,
    time_unix_ns: Option<u64>,
    pid: u32,
    tid: u32,
    comm: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    siginfo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    killed_by: Option<String>,
    /// The thread whose exec took this id.
    #[serde(skip_serializing_if = "Option::is_none")]
    superseded_by: Option<u32>,
}

/// strace's `-t`, `-tt` and `-ttt`: the time of day in seconds, with microseconds, or the
/// seconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    Seconds,
    Micros,
    Epoch,
}

/// How each line starts and ends besides the call: `-t`'s stamp (with CLOCK_REALTIME minus
/// CLOCK_MONOTONIC, and the local time zone's offset from UTC), `-T`'s time in the call.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineStyle {
    pub stamp: Option<(Stamp, i128, i64)>,
    /// strace's `-r`: the time since the previous line's began, before each line.
    pub relative: bool,
    pub durations: bool,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC: JSON's `time_unix_ns`.
    pub wall_offset_ns: Option<i64>,
}

/// Writes calls as they come.
pub struct CallWriter<W: Write> {
    out: W,
    format: Format,
    style: LineStyle,
    /// Threads seen: once there are two, every line names its thread (strace's `[pid N]`).
    tasks: HashSet<u32>,
    /// Every line names its thread from the first (`-a`: many processes, always).
    name_every_task: bool,
    /// `-r`: when the last line's call began (CLOCK_MONOTONIC ns).
    last_ns: Option<u64>,
}

impl<W: Write> CallWriter<W> {
    pub fn new(out: W, format: Format, style: LineStyle) -> CallWriter<W> {
        CallWriter {
            out,
            format,
            style,
            tasks: HashSet::new(),
            last_ns: None,
            name_every_task: false,
        }
    }

    /// Every line names its thread from the first on (`tracer trace -a`).
    pub fn name_every_task(&mut self) {
        self.name_every_task = true;
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
                    kind: "call",
                    time_ns: call.time_ns,
                    time_unix_ns: super::json::unix_ns(call.time_ns, self.style.wall_offset_ns),
                    pid: call.pid,
                    tid: call.tid,
                    comm: call.comm,
                    name: call.name,
                    args: JsonArgs(&call.args),
                    ret: (call.end == CallEnd::Returned).then_some(call.ret),
                    errno: call.errno,
                    duration_ns: (call.end == CallEnd::Returned).then_some(call.duration_ns),
                    unfinished: matches!(call.end, CallEnd::Unfinished | CallEnd::Killed),
                    truncated: (call.args.iter())
                        .filter(|a| a.strings.as_ref().is_some_and(|s| s.cut))
                        .map(|a| a.name.as_str())
                        .collect(),
                    stack: (!call.stacks.is_empty()).then(|| super::stack::json(&call.stacks)),
                };
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")
            }
            Format::Text => {
                let line = self.line(call);
                self.out.write_all(line.as_bytes())?;
                super::stack::write_strace(&mut self.out, &call.stacks)
            }
        }
    }

    /// A signal or an exit of task `tid`, at `time_ns` (CLOCK_MONOTONIC).
    pub fn task_event(
        &mut self,
        time_ns: u64,
        (pid, tid): (u32, u32),
        comm: &str,
        event: &TaskEvent,
    ) -> io::Result<()> {
        self.tasks.insert(tid);
        match self.format {
            Format::Json => {
                let signal = |n: u32| crate::output::syscall::signal(u64::from(n));
                let line = match event {
                    TaskEvent::Signal(d) => JsonTaskEvent {
                        kind: "signal",
                        signal: Some(signal(d.signo)),
                        siginfo: Some(d.siginfo()),
                        ..JsonTaskEvent::new(time_ns, self.style.wall_offset_ns, (pid, tid), comm)
                    },
                    TaskEvent::Superseded(by) => JsonTaskEvent {
                        kind: "superseded",
                        superseded_by: Some(*by),
                        ..JsonTaskEvent::new(time_ns, self.style.wall_offset_ns, (pid, tid), comm)
                    },
                    TaskEvent::Exit(status) => JsonTaskEvent {
                        kind: "exit",
                        exit_code: (status & 0x7f == 0).then_some((status >> 8) & 0xff),
                        killed_by: (status & 0x7f != 0).then(|| signal(status & 0x7f)),
                        ..JsonTaskEvent::new(time_ns, self.style.wall_offset_ns, (pid, tid), comm)
                    },
                };
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")
            }
            Format::Text => {
                let mut line = self.prefix(time_ns, tid, comm);
                match event {
                    TaskEvent::Signal(d) => line.push_str(&format!(
                        "--- {} {} ---",
                        crate::output::syscall::signal(u64::from(d.signo)),
                        d.siginfo()
                    )),
                    TaskEvent::Exit(status) => line.push_str(&exit_text(*status)),
                    TaskEvent::Superseded(by) => {
                        line.push_str(&format!("+++ superseded by execve in pid {by} +++"))
                    }
                }
                line.push('\n');
                self.out.write_all(line.as_bytes())
            }
        }
    }

    /// `[pid TID COMM] ` once several threads were seen, then `-t`'s time.
    fn prefix(&mut self, time_ns: u64, tid: u32, comm: &str) -> String {
        let mut line = String::new();
        if self.name_every_task || self.tasks.len() > 1 {
            line.push_str(&format!("[pid {tid:>5} {comm}] "));
        }
        let relative = self.style.relative.then(|| {
            // Lines come as calls return: one that began before the last line's is 0 after it.
            let since = self.last_ns.map_or(0, |last| time_ns.saturating_sub(last));
            self.last_ns = Some(self.last_ns.map_or(time_ns, |last| last.max(time_ns)));
            format!(
                "{:>6}.{:06}",
                since / 1_000_000_000,
                since / 1000 % 1_000_000
            )
        });
        match (self.style.stamp, relative) {
            (Some((stamp, wall_offset, zone_offset)), relative) => {
                line.push_str(&stamped(stamp, time_ns as i128 + wall_offset, zone_offset));
                if let Some(relative) = relative {
                    line.push_str(&format!(" (+{relative})"));
                }
                line.push(' ');
            }
            (None, Some(relative)) => {
                line.push_str(&relative);
                line.push(' ');
            }
            (None, None) => {}
        }
        line
    }

    /// A call's text line, as strace writes it: an unfinished call ends after the arguments
    /// it had at entry (`read(0,  <unfinished ...>`), its resumed end starts `<... read
    /// resumed>` with the rest.
    fn line(&mut self, call: &Call<'_>) -> String {
        let mut line = self.prefix(call.time_ns, call.tid, call.comm);
        let texts: Vec<&str> = call.args.iter().map(|a| a.text.as_str()).collect();
        let at_entry = call.at_entry.min(texts.len());
        match call.resumed {
            // Known from its entry only: strace's `<... read resumed> <unfinished ...>) = ?`.
            true if call.end == CallEnd::Killed => {
                line.push_str(&format!("<... {} resumed> <unfinished ...>", call.name));
            }
            true => {
                line.push_str(&format!("<... {} resumed>", call.name));
                line.push_str(&texts[at_entry..].join(", "));
            }
            // The arguments known at entry, and the separator before the rest when there is
            // a rest (`read(0,  <unfinished ...>`, `write(1, "x", 1 <unfinished ...>`); a
            // killed call's line goes on with `) = ?`.
            false if matches!(call.end, CallEnd::Unfinished | CallEnd::Killed) => {
                line.push_str(call.name);
                line.push('(');
                line.push_str(&texts[..at_entry].join(", "));
                if at_entry < texts.len() {
                    line.push_str(", ");
                }
                line.push_str(" <unfinished ...>");
                if call.end == CallEnd::Unfinished {
                    line.push('\n');
                    return line;
                }
            }
            false => {
                line.push_str(call.name);
                line.push('(');
                line.push_str(&texts.join(", "));
            }
        }
        match call.end {
            CallEnd::Returned => {
                line.push_str(&format!(") = {}", call.ret_text));
                if self.style.durations {
                    line.push_str(&format!(
                        " <{}.{:06}>",
                        call.duration_ns / 1_000_000_000,
                        call.duration_ns % 1_000_000_000 / 1000
                    ));
                }
            }
            _ => line.push_str(") = ?"),
        }
        line.push('\n');
        line
    }

    /// A text line of its own in the calls' stream, not a call (`+++ exited with 0 +++`, `-c`'s
    /// table); JSON has its own lines for these.
    pub fn text_line(&mut self, text: &str) -> io::Result<()> {
        match self.format {
            Format::Text => writeln!(self.out, "{text}"),
            Format::Json => Ok(()),
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<'a> JsonTaskEvent<'a> {
    fn new(
        time_ns: u64,
        wall_offset_ns: Option<i64>,
        (pid, tid): (u32, u32),
        comm: &'a str,
    ) -> JsonTaskEvent<'a> {
        JsonTaskEvent {
            kind: "",
            time_ns,
            time_unix_ns: super::json::unix_ns(time_ns, wall_offset_ns),
            pid,
            tid,
            comm,
            signal: None,
            siginfo: None,
            exit_code: None,
            killed_by: None,
            superseded_by: None,
        }
    }
}

/// A CLOCK_REALTIME time in ns as `-t` (`HH:MM:SS`), `-tt` (`HH:MM:SS.uuuuuu`) or `-ttt`
/// (`SECONDS.uuuuuu`) writes it; the time of day is local, `zone_offset` seconds east of UTC.
fn stamped(stamp: Stamp, realtime_ns: i128, zone_offset: i64) -> String {
    let us = (realtime_ns / 1000).max(0) as u64;
    if stamp == Stamp::Epoch {
        return format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    }
    let secs = (us / 1_000_000) as i64 + zone_offset;
    let of_day = secs.rem_euclid(86_400);
    let clock = format!(
        "{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    match stamp {
        Stamp::Micros => format!("{clock}.{:06}", us % 1_000_000),
        _ => clock,
    }
}

/// One row of `-c`: a call's count, errors and time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    /// The call's number (`-S nothing` keeps their order).
    pub nr: u32,
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
}

/// How `-c`'s rows are ordered (strace's `-S`): by time (the default), average time, calls
/// or errors, most first; by name; or by the calls' numbers (`nothing`, strace's table order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    #[default]
    Time,
    AvgTime,
    Calls,
    Errors,
    Name,
    Nothing,
}

/// A column of `-c`'s table (strace's `-U`): the call's share of the time, its total time,
/// the average per call, calls, errors, the call's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    TimePercent,
    TotalTime,
    AvgTime,
    Calls,
    Errors,
    Name,
}

impl Column {
    /// strace -c's columns when `-U` is not given.
    pub const DEFAULT: [Column; 6] = [
        Column::TimePercent,
        Column::TotalTime,
        Column::AvgTime,
        Column::Calls,
        Column::Errors,
        Column::Name,
    ];

    /// The heading and width strace gives the column.
    fn head(self) -> (&'static str, usize) {
        match self {
            Column::TimePercent => ("% time", 6),
            Column::TotalTime => ("seconds", 11),
            Column::AvgTime => ("usecs/call", 11),
            Column::Calls => ("calls", 9),
            Column::Errors => ("errors", 9),
            Column::Name => ("syscall", 16),
        }
    }

    /// Row `r`'s cell, `share` its percentage of the time, as strace prints it (errors blank
    /// when none; the name left-aligned, unpadded when last).
    fn cell(self, r: &Row, share: f64, last: bool) -> String {
        let (_, width) = self.head();
        match self {
            Column::TimePercent => format!("{share:>width$.2}"),
            Column::TotalTime => format!("{:>width$.6}", r.total_ns as f64 / 1e9),
            Column::AvgTime => format!("{:>width$}", r.total_ns / 1000 / r.calls.max(1)),
            Column::Calls => format!("{:>width$}", r.calls),
            Column::Errors => match r.errors {
                0 => " ".repeat(width),
                n => format!("{n:>width$}"),
            },
            Column::Name if last => r.name.clone(),
            Column::Name => format!("{:<width$}", r.name),
        }
    }
}

/// strace -c's table, ordered as `sort` says (ties by calls, then name), with `columns` in
/// their order (strace's `-U`; the name last when not among them); a total row.
pub fn summary_table_of(mut rows: Vec<Row>, sort: SortBy, columns: &[Column]) -> String {
    let mut columns = columns.to_vec();
    if !columns.contains(&Column::Name) {
        columns.push(Column::Name);
    }
    let avg = |r: &Row| r.total_ns / r.calls.max(1);
    rows.sort_by(|a, b| {
        let key = match sort {
            SortBy::Time => b.total_ns.cmp(&a.total_ns),
            SortBy::AvgTime => avg(b).cmp(&avg(a)),
            SortBy::Calls => b.calls.cmp(&a.calls),
            SortBy::Errors => b.errors.cmp(&a.errors),
            SortBy::Name => a.name.cmp(&b.name),
            SortBy::Nothing => a.nr.cmp(&b.nr),
        };
        key.then(b.calls.cmp(&a.calls)).then(a.name.cmp(&b.name))
    });
    let total_ns: u64 = rows.iter().map(|r| r.total_ns).sum();
    let line = |cells: Vec<String>| cells.join(" ") + "\n";
    let last = columns.len() - 1;
    let heads = (columns.iter().enumerate()).map(|(k, c)| match (c.head(), *c) {
        ((head, _), Column::Name) if k == last => head.to_string(),
        ((head, width), Column::Name) => format!("{head:<width$}"),
        ((head, width), _) => format!("{head:>width$}"),
    });
    let mut out = line(heads.collect());
    let rule = line(columns.iter().map(|c| "-".repeat(c.head().1)).collect());
    out.push_str(&rule);
    let row = |r: &Row, share: f64| -> String {
        let cells = columns.iter().enumerate();
        line(cells.map(|(k, c)| c.cell(r, share, k == last)).collect())
    };
    for r in &rows {
        let share = match total_ns {
            0 => 0.0,
            t => 100.0 * r.total_ns as f64 / t as f64,
        };
        out.push_str(&row(r, share));
    }
    out.push_str(&rule);
    let total = Row {
        name: "total".into(),
        nr: 0,
        calls: rows.iter().map(|r| r.calls).sum(),
        errors: rows.iter().map(|r| r.errors).sum(),
        total_ns,
    };
    // The total's share is 100.00 even when no time was counted, as strace prints it.
    out.push_str(&row(&total, 100.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(end: CallEnd) -> Call<'static> {
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
                    strings: None,
                    fd: true,
                    inner_fds: Vec::new(),
                },
                Shown {
                    name: "filename".into(),
                    value: 0x1000,
                    text: "\"/nope\"".into(),
                    strings: Some(Strings {
                        items: vec!["/nope".into()],
                        array: false,
                        cut: false,
                    }),
                    fd: false,
                    inner_fds: Vec::new(),
                },
            ],
            at_entry: 2,
            end,
            resumed: false,
            ret: -2,
            ret_text: "-1 ENOENT (No such file or directory)".into(),
            errno: Some("ENOENT"),
            duration_ns: 12_345,
            stacks: Vec::new(),
        }
    }

    fn text(calls: &[Call<'_>]) -> String {
        let mut out = Vec::new();
        let style = LineStyle {
            durations: true,
            ..LineStyle::default()
        };
        let mut w = CallWriter::new(&mut out, Format::Text, style);
        for c in calls {
            w.write(c).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_read_as_strace_writes_them() {
        assert_eq!(
            text(&[call(CallEnd::Returned)]),
            "openat(AT_FDCWD, \"/nope\") = -1 ENOENT (No such file or directory) <0.000012>\n"
        );
        assert_eq!(
            text(&[call(CallEnd::Unfinished)]),
            "openat(AT_FDCWD, \"/nope\" <unfinished ...>\n"
        );
        let mut read = call(CallEnd::Unfinished);
        read.name = "read";
        read.at_entry = 1;
        assert_eq!(text(&[read.clone()]), "read(AT_FDCWD,  <unfinished ...>\n");
        read.end = CallEnd::Returned;
        read.resumed = true;
        assert_eq!(
            text(&[read.clone()]),
            "<... read resumed>\"/nope\") = -1 ENOENT (No such file or directory) <0.000012>\n"
        );
        let mut killed = read.clone();
        killed.end = CallEnd::Killed;
        killed.resumed = false;
        assert_eq!(
            text(&[killed.clone()]),
            "read(AT_FDCWD,  <unfinished ...>) = ?\n"
        );
        killed.resumed = true;
        assert_eq!(
            text(&[killed]),
            "<... read resumed> <unfinished ...>) = ?\n"
        );
        let mut other = call(CallEnd::NoReturn);
        other.tid = 8;
        other.name = "exit_group";
        other.args.truncate(0);
        let both = text(&[call(CallEnd::Returned), other]);
        assert!(
            both.ends_with("\n[pid     8 cat] exit_group() = ?\n"),
            "{both}"
        );
    }

    #[test]
    fn json_has_every_field() {
        let mut out = Vec::new();
        let style = LineStyle {
            wall_offset_ns: Some(1_700_000_000_000_000_000),
            ..LineStyle::default()
        };
        let mut mode = call(CallEnd::Returned);
        mode.args.push(Shown {
            name: "mode".into(),
            value: 0,
            text: "0".into(),
            strings: None,
            fd: false,
            inner_fds: Vec::new(),
        });
        mode.args.push(Shown {
            name: "flags".into(),
            value: 0o2_000_000,
            text: "O_RDONLY|O_CLOEXEC".into(),
            strings: None,
            fd: false,
            inner_fds: Vec::new(),
        });
        CallWriter::new(&mut out, Format::Json, style)
            .write(&mode)
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["type"], "call");
        assert_eq!(v["time_unix_ns"], 1_700_000_000_000_000_000u64);
        assert_eq!(v["name"], "openat");
        assert_eq!(v["ret"], -2);
        assert_eq!(v["errno"], "ENOENT");
        assert_eq!(v["duration_ns"], 12_345);
        assert_eq!(
            v["args"],
            serde_json::json!({
                "dfd": {"value": -100, "text": "AT_FDCWD"},
                "filename": "/nope",
                "mode": 0,
                "flags": {"value": 0o2_000_000, "text": "O_RDONLY|O_CLOEXEC"},
            })
        );
        assert_eq!(v["unfinished"], false);
        assert!(v.get("truncated").is_none());
    }

    /// As strace 6.1 printed them for tests/workloads/signals.c.
    #[test]
    fn signals_and_exits_read_as_strace_writes_them() {
        let mut out = Vec::new();
        let mut w = CallWriter::new(&mut out, Format::Text, LineStyle::default());
        let sent = |signo: i32, code: i32, words: [u64; 4]| {
            TaskEvent::Signal(Delivered {
                signo: signo as u32,
                code,
                words,
            })
        };
        let me = (389, 389);
        w.task_event(0, me, "signals", &sent(libc::SIGUSR1, 0, [389, 0, 0, 0]))
            .unwrap();
        w.task_event(0, me, "signals", &sent(libc::SIGUSR2, -6, [389, 0, 0, 0]))
            .unwrap();
        w.task_event(0, me, "signals", &sent(libc::SIGCHLD, 1, [390, 3, 0, 0]))
            .unwrap();
        w.task_event(0, me, "signals", &sent(libc::SIGCHLD, 1, [390, 3, 1, 250]))
            .unwrap();
        w.task_event(0, me, "signals", &sent(libc::SIGSEGV, 1, [0x10, 0, 0, 0]))
            .unwrap();
        w.task_event(0, me, "signals", &sent(libc::SIGALRM, 0x80, [0; 4]))
            .unwrap();
        w.task_event(0, me, "signals", &TaskEvent::Exit(3 << 8))
            .unwrap();
        w.task_event(0, me, "signals", &TaskEvent::Exit(15))
            .unwrap();
        w.task_event(0, me, "signals", &TaskEvent::Exit(0x80 | 11))
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "--- SIGUSR1 {si_signo=SIGUSR1, si_code=SI_USER, si_pid=389, si_uid=0} ---\n\
             --- SIGUSR2 {si_signo=SIGUSR2, si_code=SI_TKILL, si_pid=389, si_uid=0} ---\n\
             --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=390, si_uid=0, \
             si_status=3, si_utime=0, si_stime=0} ---\n\
             --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=390, si_uid=0, \
             si_status=3, si_utime=1 /* 0.01 s */, si_stime=250 /* 2.50 s */} ---\n\
             --- SIGSEGV {si_signo=SIGSEGV, si_code=SEGV_MAPERR, si_addr=0x10} ---\n\
             --- SIGALRM {si_signo=SIGALRM, si_code=SI_KERNEL} ---\n\
             +++ exited with 3 +++\n\
             +++ killed by SIGTERM +++\n\
             +++ killed by SIGSEGV (core dumped) +++\n"
        );
    }

    #[test]
    fn stamps_are_strace_t_tt_and_ttt() {
        // 1970-01-02 03:04:05.678901 UTC, in a zone an hour east.
        let ns = (86_400 + 3 * 3600 + 4 * 60 + 5) as i128 * 1_000_000_000 + 678_901_000;
        assert_eq!(stamped(Stamp::Seconds, ns, 3600), "04:04:05");
        assert_eq!(stamped(Stamp::Micros, ns, 3600), "04:04:05.678901");
        assert_eq!(stamped(Stamp::Micros, ns, -4 * 3600), "23:04:05.678901");
        assert_eq!(stamped(Stamp::Epoch, ns, 3600), "97445.678901");
    }

    /// strace's -r: the time since the previous line's call began, alone or after -t's clock.
    #[test]
    fn relative_stamps_are_strace_r() {
        let lines = |stamp: Option<(Stamp, i128, i64)>| {
            let mut out = Vec::new();
            let style = LineStyle {
                stamp,
                relative: true,
                ..LineStyle::default()
            };
            let mut w = CallWriter::new(&mut out, Format::Text, style);
            // Entered at 1 s, 1.000170 s, and (returned last) 1.000100 s: not before the last.
            for at in [1_000_000_000, 1_000_170_000, 1_000_100_000] {
                w.write(&Call {
                    time_ns: at,
                    ..call(CallEnd::Returned)
                })
                .unwrap();
            }
            w.task_event(1_002_000_000, (7, 7), "cat", &TaskEvent::Exit(0))
                .unwrap();
            String::from_utf8(out).unwrap()
        };
        let call = "openat(AT_FDCWD, \"/nope\") = -1 ENOENT (No such file or directory)";
        assert_eq!(
            lines(None),
            format!(
                "     0.000000 {call}\n     0.000170 {call}\n     0.000000 {call}\n     \
                 0.001830 +++ exited with 0 +++\n"
            )
        );
        assert_eq!(
            lines(Some((Stamp::Seconds, 0, 0))).lines().nth(1).unwrap(),
            format!("00:00:01 (+     0.000170) {call}")
        );
    }

    #[test]
    fn the_summary_is_strace_c_table() {
        let rows = || {
            vec![
                Row {
                    name: "read".into(),
                    nr: 0,
                    calls: 4,
                    errors: 0,
                    total_ns: 1_000_000,
                },
                Row {
                    name: "openat".into(),
                    nr: 257,
                    calls: 3,
                    errors: 1,
                    total_ns: 3_000_000,
                },
                Row {
                    name: "close".into(),
                    nr: 3,
                    calls: 1,
                    errors: 0,
                    total_ns: 2_000_000,
                },
            ]
        };
        let order = |sort: SortBy| -> Vec<String> {
            let table = summary_table_of(rows(), sort, &Column::DEFAULT);
            let body = table.lines().skip(2).take(3);
            body.map(|l| l.rsplit(' ').next().unwrap().to_string())
                .collect()
        };
        assert_eq!(order(SortBy::Time), ["openat", "close", "read"]);
        assert_eq!(order(SortBy::AvgTime), ["close", "openat", "read"]);
        assert_eq!(order(SortBy::Calls), ["read", "openat", "close"]);
        assert_eq!(order(SortBy::Errors), ["openat", "read", "close"]);
        assert_eq!(order(SortBy::Name), ["close", "openat", "read"]);
        assert_eq!(order(SortBy::Nothing), ["read", "close", "openat"]);
        let mut two = rows();
        two.pop();
        let table = summary_table_of(two.clone(), SortBy::Time, &Column::DEFAULT);
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

    /// `-U`'s columns as strace 6.1 lays them out (its `-c -U name,calls,errors` and
    /// `-U calls,time-percent,avg-time,total-time` tables, heads and rows copied).
    #[test]
    fn chosen_columns_are_laid_out_as_strace_lays_them() {
        let rows = || {
            vec![
                Row {
                    name: "read".into(),
                    nr: 0,
                    calls: 1,
                    errors: 0,
                    total_ns: 0,
                },
                Row {
                    name: "access".into(),
                    nr: 21,
                    calls: 1,
                    errors: 1,
                    total_ns: 0,
                },
            ]
        };
        use Column::*;
        let table = summary_table_of(rows(), SortBy::Nothing, &[Name, Calls, Errors]);
        assert_eq!(
            table,
            "syscall              calls    errors\n\
             ---------------- --------- ---------\n\
             read                     1          \n\
             access                   1         1\n\
             ---------------- --------- ---------\n\
             total                    2         1\n"
        );
        let table = summary_table_of(
            rows(),
            SortBy::Nothing,
            &[Calls, TimePercent, AvgTime, TotalTime],
        );
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "    calls % time  usecs/call     seconds syscall");
        assert_eq!(
            lines[1],
            "--------- ------ ----------- ----------- ----------------"
        );
        assert_eq!(lines[2], "        1   0.00           0    0.000000 read");
        assert_eq!(lines[5], "        2 100.00           0    0.000000 total");
    }
}
