//! The `tracer record` file: a versioned header, then self-delimiting records (raw BPF events,
//! counter samples, scheduler and task records) and the descriptions needed to decode them
//! on another machine (sources with their decoders, symbol snapshots). A file cut short by a
//! killed recorder reads up to its last complete record.
//!
//! Layout (little-endian): `MAGIC` (8 bytes), format version (u32), header length (u32), then
//! records of `kind: u32, len: u32, payload[len]`. A reader skips record kinds it does not
//! know, so a newer writer can add kinds without bumping the version; the version changes when
//! an existing record's layout changes, and a newer version is refused.

mod desc;
pub mod items;
pub mod reorder;

use std::io::{self, Read, Write};

use bytes::{Buf, BufMut};
use serde::{Deserialize, Serialize};

use crate::probe::Decoder;

pub const MAGIC: &[u8; 8] = b"tracer\0T";
/// The layout version this build writes and reads (2: events carry any number of string
/// entries behind them, where 1 had one 64-byte string; 3: samples carry their instruction
/// pointer and call chain, where 2 had neither).
pub const VERSION: u32 = 3;
const HEADER_LEN: u32 = 16;

/// Record kinds.
mod kind {
    pub const META: u32 = 1;
    pub const SOURCE: u32 = 2;
    pub const EVENT: u32 = 3;
    pub const SAMPLE: u32 = 4;
    pub const SWITCH: u32 = 5;
    pub const TASK: u32 = 6;
    pub const SYMBOL: u32 = 7;
    pub const STATS: u32 = 8;
    pub const END: u32 = 9;
}

/// What a record kind is called in messages.
fn kind_name(k: u32) -> &'static str {
    match k {
        kind::META => "meta",
        kind::SOURCE => "source",
        kind::EVENT => "event",
        kind::SAMPLE => "sample",
        kind::SWITCH => "switch",
        kind::TASK => "task",
        kind::SYMBOL => "symbol",
        kind::STATS => "stats",
        kind::END => "end",
        _ => "unknown",
    }
}

/// The payload lengths this version writes for a fixed-layout kind (`None`: JSON or unknown
/// kinds, of any length up to [`MAX_PAYLOAD`]). A layout change bumps the version, so any
/// other length is a corrupt length, not a newer record.
fn fixed_lengths(k: u32) -> Option<&'static [u32]> {
    match k {
        kind::SWITCH => Some(&[24]),
        kind::TASK => Some(&[48]),
        kind::END => Some(&[0]),
        _ => None,
    }
}

/// Why a record header's length cannot be right, if it cannot.
fn bad_length(k: u32, len: u32) -> Option<String> {
    if len > MAX_PAYLOAD {
        return Some(format!("claims {len} bytes (at most {MAX_PAYLOAD})"));
    }
    if k == kind::SAMPLE {
        let max = SAMPLE_LEN + 8 * MAX_SAMPLE_FRAMES;
        return (!(SAMPLE_LEN..=max).contains(&len) || !(len - SAMPLE_LEN).is_multiple_of(8)).then(
            || {
                format!(
                    "claims {len} bytes; a sample record has {SAMPLE_LEN} and 8 per frame, up to \
                 {MAX_SAMPLE_FRAMES} frames ({max})"
                )
            },
        );
    }
    if k == kind::EVENT {
        let (min, max) = (
            tracer_common::Event::SIZE as u32,
            (tracer_common::Event::SIZE + tracer_common::STR_AREA) as u32,
        );
        return (!(min..=max).contains(&len))
            .then(|| format!("claims {len} bytes; an event record has {min} to {max}"));
    }
    let lengths = fixed_lengths(k)?;
    (!lengths.contains(&len)).then(|| {
        let valid: Vec<String> = lengths.iter().map(u32::to_string).collect();
        format!(
            "claims {len} bytes; a{} {} record has {}",
            if kind_name(k) == "event" { "n" } else { "" },
            kind_name(k),
            valid.join(" or ")
        )
    })
}

/// A JSON record cut off by the end of the file is a truncation, unless a whole JSON value ends
/// inside what is there with more bytes after it: then its length was wrong, not the file short.
fn json_ends_early(k: u32, partial: &[u8]) -> Option<usize> {
    if !matches!(k, kind::META | kind::SOURCE | kind::SYMBOL | kind::STATS) {
        return None;
    }
    let mut values =
        serde_json::Deserializer::from_slice(partial).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) if values.byte_offset() < partial.len() => Some(values.byte_offset()),
        _ => None,
    }
}

/// A sample record without frames: source, cpu, pid, tid, time, period, ip, and the number
/// of kernel and user frames that follow it.
const SAMPLE_LEN: u32 = 48;
/// The most frames a sample record holds (the deepest chain `tracer record` asks of perf).
pub const MAX_SAMPLE_FRAMES: u32 = crate::perf::record::callchain::MAX_STACK_DEPTH as u32;

/// A record's payload may not exceed this (a corrupt length must not allocate gigabytes).
const MAX_PAYLOAD: u32 = 16 << 20;
/// Nor may the header: what a newer writer adds to it is skipped, up to this length.
const MAX_HEADER: u32 = 4096;

/// What the recording was: written first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub tracer: String,
    /// `uname -r` of the recording machine.
    pub kernel: String,
    pub hostname: String,
    /// The command line that recorded it.
    pub argv: Vec<String>,
    /// CLOCK_MONOTONIC when recording started: report times are seconds since this.
    pub start_ns: u64,
    pub cpus: Vec<u32>,
    /// How long a record may arrive after a later-stamped one and still be put in order.
    pub reorder_window_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC when recording started: report's JSON
    /// `time_unix_ns`. Absent from recordings made before it was kept (then `null`).
    #[serde(default)]
    pub wall_offset_ns: Option<i64>,
}

/// One traced thing, described once, before its records. Written as a [`desc::SourceDesc`]:
/// the file's own description, not the probe layer's types.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "desc::SourceDesc", into = "desc::SourceDesc")]
pub struct Source {
    pub id: u32,
    pub name: String,
    pub what: SourceKind,
}

#[derive(Clone, Debug)]
pub enum SourceKind {
    /// A probe or tracepoint: its BPF events carry `slot`.
    Probe { slot: u32, decoder: Decoder },
    /// A hardware watchpoint: its BPF events carry `slot`.
    Watch {
        slot: u32,
        addr: u64,
        len: u64,
        /// `w`, `rw` or `x`.
        access: String,
        /// The value when recording started (user watches of a readable address).
        initial: Option<u64>,
    },
    /// A sampled counter: each sample adds `period` to it.
    Counter {
        event: String,
        /// `-F HZ` (`freq`) or `--period N`.
        sampling: String,
    },
}

/// A sampled counter's overflow (`PERF_RECORD_SAMPLE` with IP, TID, TIME, CPU, PERIOD, and
/// CALLCHAIN with `-g`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub source: u32,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub time_ns: u64,
    pub period: u64,
    /// The instruction the counter overflowed at.
    pub ip: u64,
    /// The call chain (`-g`), innermost first: kernel frames, then user frames (empty
    /// without `-g`; the first frame is `ip`'s). Together at most [`MAX_SAMPLE_FRAMES`].
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
}

/// `PERF_RECORD_SWITCH`: the thread on `cpu` was switched out or in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub out: bool,
    pub preempted: bool,
    pub time_ns: u64,
}

/// `PERF_RECORD_COMM`, `_FORK` and `_EXIT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub what: TaskWhat,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    /// Fork and exit: the parent.
    pub ppid: u32,
    pub ptid: u32,
    pub time_ns: u64,
    /// Comm: the new name (NUL-padded).
    pub comm: [u8; 16],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskWhat {
    Comm,
    Fork,
    Exit,
}

/// A symbol snapshot: what an address of a process meant when it was recorded (kernel
/// addresses under pid 0: they mean the same in every process).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    pub pid: u32,
    pub addr: u64,
    /// `function+0xoff`.
    pub at: String,
    /// `file:line`, when debug info had it.
    pub source: Option<String>,
}

/// Counts written at the end of a recording.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// BPF events lost per CPU (output ring full).
    pub lost_bpf: Vec<(u32, u64)>,
    /// Sample and scheduler records lost per CPU (`PERF_RECORD_LOST`).
    pub lost_side: Vec<(u32, u64)>,
    /// Records that arrived after their reorder window closed: written late, out of order.
    pub late: u64,
    /// Ring records that could not be parsed.
    pub malformed: u64,
    /// BPF events produced (the kernel's count of program outputs that passed the filters).
    pub produced: u64,
}

impl From<&Stats> for crate::output::report::Stats {
    fn from(s: &Stats) -> Self {
        crate::output::report::Stats {
            produced: s.produced,
            lost_bpf: s.lost_bpf.clone(),
            lost_side: s.lost_side.clone(),
            late: s.late,
        }
    }
}

/// One record.
#[derive(Clone, Debug)]
pub enum Record {
    Meta(Meta),
    Source(Source),
    /// A probe hit and its string entries.
    Event(Box<tracer_common::Event>, Vec<u8>),
    Sample(Sample),
    Switch(Switch),
    Task(Task),
    Symbol(Symbol),
    Stats(Stats),
    End,
    /// A kind this version does not know (written by a newer tracer): skipped.
    Unknown(u32),
}

impl Record {
    /// The record's timestamp, for the ones on the timeline.
    pub fn time_ns(&self) -> Option<u64> {
        match self {
            Record::Event(e, _) => Some(e.time_ns),
            Record::Sample(s) => Some(s.time_ns),
            Record::Switch(s) => Some(s.time_ns),
            Record::Task(t) => Some(t.time_ns),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a tracer recording (it does not start with the tracer file magic)")]
    NotATrace,
    #[error("written by a newer tracer (file format {found}; this tracer reads format {VERSION})")]
    Newer { found: u32 },
    #[error("written by an older tracer (file format {found}; this tracer reads format {VERSION}): record it again")]
    Older { found: u32 },
    #[error("the file ends before the end of the tracer header (empty or cut short)")]
    ShortHeader,
    #[error("the tracer header is corrupt: {why}")]
    BadHeader { why: String },
    #[error("record {index} (kind {kind}) at byte {offset} is corrupt: {why}")]
    Corrupt {
        index: u64,
        kind: u32,
        offset: u64,
        why: String,
    },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A record skipped because its payload was corrupt, though its length framed it (the records
/// after it were read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub index: u64,
    pub kind: u32,
    pub offset: u64,
    pub why: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "record {} (kind {}) at byte {}: {}",
            self.index, self.kind, self.offset, self.why
        )
    }
}

/// Encodes one record (header and payload) into `out`.
pub fn encode(record: &Record, out: &mut Vec<u8>) {
    let start = out.len();
    // Kind and length, filled in once the payload is written.
    out.put_u64_le(0);
    let json = |out: &mut Vec<u8>, v: &dyn erased::Json| v.write(out);
    let kind = match record {
        Record::Meta(m) => {
            json(out, m);
            kind::META
        }
        Record::Source(s) => {
            json(out, s);
            kind::SOURCE
        }
        Record::Symbol(s) => {
            json(out, s);
            kind::SYMBOL
        }
        Record::Stats(s) => {
            json(out, s);
            kind::STATS
        }
        Record::Event(e, strings) => {
            let mut e = **e;
            e.str_bytes = strings.len() as i32;
            out.extend_from_slice(&e.to_bytes());
            out.extend_from_slice(strings);
            kind::EVENT
        }
        Record::Sample(s) => {
            for v in [s.source, s.cpu, s.pid, s.tid] {
                out.put_u32_le(v);
            }
            out.put_u64_le(s.time_ns);
            out.put_u64_le(s.period);
            out.put_u64_le(s.ip);
            // A longer chain is cut at its outermost frames: the record stays readable.
            let kernel = &s.kernel[..s.kernel.len().min(MAX_SAMPLE_FRAMES as usize)];
            let room = MAX_SAMPLE_FRAMES as usize - kernel.len();
            let user = &s.user[..s.user.len().min(room)];
            out.put_u32_le(kernel.len() as u32);
            out.put_u32_le(user.len() as u32);
            for &ip in kernel.iter().chain(user) {
                out.put_u64_le(ip);
            }
            kind::SAMPLE
        }
        Record::Switch(s) => {
            let flags = u32::from(s.out) | (u32::from(s.preempted) << 1);
            for v in [s.cpu, s.pid, s.tid, flags] {
                out.put_u32_le(v);
            }
            out.put_u64_le(s.time_ns);
            kind::SWITCH
        }
        Record::Task(t) => {
            let what = match t.what {
                TaskWhat::Comm => 0,
                TaskWhat::Fork => 1,
                TaskWhat::Exit => 2,
            };
            for v in [what, t.cpu, t.pid, t.tid, t.ppid, t.ptid] {
                out.put_u32_le(v);
            }
            out.put_u64_le(t.time_ns);
            out.put_slice(&t.comm);
            kind::TASK
        }
        Record::End => kind::END,
        Record::Unknown(k) => *k,
    };
    let len = (out.len() - start - 8) as u32;
    let mut head = &mut out[start..start + 8];
    head.put_u32_le(kind);
    head.put_u32_le(len);
}

/// serde_json behind a trait object, so `encode` can take any of the JSON records.
mod erased {
    pub trait Json {
        fn write(&self, out: &mut Vec<u8>);
    }
    impl<T: serde::Serialize> Json for T {
        fn write(&self, out: &mut Vec<u8>) {
            serde_json::to_writer(out, self).expect("serializing to memory cannot fail");
        }
    }
}

/// The `i`th little-endian u32 of `p` (callers have checked its length).
fn u32_at(p: &[u8], i: usize) -> u32 {
    (&p[i * 4..]).get_u32_le()
}

/// Decodes a record payload of `kind`; `Err` names what is wrong.
pub fn decode(kind: u32, p: &[u8]) -> Result<Record, String> {
    let need = |n: usize| match p.len() >= n {
        true => Ok(()),
        false => Err(format!("{} bytes, needs {n}", p.len())),
    };
    let json_error = |e: serde_json::Error| e.to_string();
    Ok(match kind {
        kind::META => Record::Meta(serde_json::from_slice(p).map_err(json_error)?),
        kind::SOURCE => Record::Source(serde_json::from_slice(p).map_err(json_error)?),
        kind::SYMBOL => Record::Symbol(serde_json::from_slice(p).map_err(json_error)?),
        kind::STATS => Record::Stats(serde_json::from_slice(p).map_err(json_error)?),
        kind::EVENT => {
            let event = tracer_common::Event::from_bytes(p).ok_or_else(|| {
                format!(
                    "{} bytes, needs {} and the strings it claims",
                    p.len(),
                    tracer_common::Event::SIZE,
                )
            })?;
            let strings = event.strings(p).to_vec();
            Record::Event(Box::new(event), strings)
        }
        kind::SAMPLE => {
            need(SAMPLE_LEN as usize)?;
            let mut b = p;
            let (source, cpu, pid, tid) = (
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
            );
            let (time_ns, period, ip) = (b.get_u64_le(), b.get_u64_le(), b.get_u64_le());
            let (nk, nu) = (b.get_u32_le() as usize, b.get_u32_le() as usize);
            // The counts must add up to the frames the length framed (checked before any
            // is read, so a corrupt count allocates nothing).
            if nk.checked_add(nu) != Some(b.remaining() / 8) {
                return Err(format!(
                    "claims {nk} kernel and {nu} user frames; its length holds {}",
                    b.remaining() / 8
                ));
            }
            let mut frames = |n: usize| (0..n).map(|_| b.get_u64_le()).collect::<Vec<u64>>();
            let kernel = frames(nk);
            let user = frames(nu);
            Record::Sample(Sample {
                source,
                cpu,
                pid,
                tid,
                time_ns,
                period,
                ip,
                kernel,
                user,
            })
        }
        kind::SWITCH => {
            need(24)?;
            let mut b = p;
            let (cpu, pid, tid, flags) = (
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
            );
            Record::Switch(Switch {
                cpu,
                pid,
                tid,
                out: flags & 1 != 0,
                preempted: flags & 2 != 0,
                time_ns: b.get_u64_le(),
            })
        }
        kind::TASK => {
            need(48)?;
            let mut b = p;
            let what = match b.get_u32_le() {
                0 => TaskWhat::Comm,
                1 => TaskWhat::Fork,
                2 => TaskWhat::Exit,
                other => return Err(format!("unknown task record {other}")),
            };
            let (cpu, pid, tid, ppid, ptid) = (
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
                b.get_u32_le(),
            );
            let time_ns = b.get_u64_le();
            let mut comm = [0u8; 16];
            b.copy_to_slice(&mut comm);
            Record::Task(Task {
                what,
                cpu,
                pid,
                tid,
                ppid,
                ptid,
                time_ns,
                comm,
            })
        }
        kind::END => Record::End,
        other => Record::Unknown(other),
    })
}

/// Writes the header and then records; `finish` writes the end record and flushes.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    pub records: u64,
    pub bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W) -> io::Result<Writer<W>> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.put_slice(MAGIC);
        header.put_u32_le(VERSION);
        header.put_u32_le(HEADER_LEN);
        out.write_all(&header)?;
        Ok(Writer {
            out,
            buf: Vec::with_capacity(512),
            records: 0,
            bytes: u64::from(HEADER_LEN),
        })
    }

    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        self.buf.clear();
        encode(record, &mut self.buf);
        self.out.write_all(&self.buf)?;
        self.records += 1;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes the end record (its absence marks a recording cut off) and flushes.
    pub fn finish(mut self) -> io::Result<W> {
        self.write(&Record::End)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// How reading ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The end record was read: the recording finished.
    Complete,
    /// The file ends without an end record, after a whole record (the recorder was killed
    /// between writes, or is still writing to a pipe).
    Unfinished,
    /// The file ends inside a record: `partial` bytes of a record starting at `offset`.
    Truncated { offset: u64, partial: u64 },
}

impl From<&Ending> for crate::output::report::Ending {
    fn from(e: &Ending) -> Self {
        use crate::output::report::Ending as Model;
        match *e {
            Ending::Complete => Model::Complete,
            Ending::Unfinished => Model::Unfinished,
            Ending::Truncated { offset, partial } => Model::Truncated { offset, partial },
        }
    }
}

/// Reads records in order; a file cut off mid-record ends with [`Ending::Truncated`], and every
/// complete record before it is returned.
pub struct Reader<R: Read> {
    input: R,
    /// Records read whole (skipped corrupt ones included): the next record's index.
    pub records: u64,
    pub offset: u64,
    ending: Option<Ending>,
    payload: Vec<u8>,
    /// The next record's header and how many of its bytes the file had, read ahead to check
    /// that a corrupt record ends where its length says.
    ahead: Option<([u8; 8], usize)>,
    /// A record's length was corrupt: nothing after it can be framed.
    broken: bool,
    /// Corrupt records skipped (their framing intact), the first [`Reader::SKIPPED_KEPT`].
    pub skipped: Vec<Skipped>,
    /// All corrupt records skipped.
    pub skipped_count: u64,
}

/// Reads up to `buf.len()` bytes; fewer only at end of input.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match input.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

impl<R: Read> Reader<R> {
    /// Checks the header: the magic, and a version this build reads.
    pub fn new(mut input: R) -> Result<Reader<R>, Error> {
        let mut header = [0u8; HEADER_LEN as usize];
        let n = read_full(&mut input, &mut header)?;
        let m = n.min(MAGIC.len());
        if header[..m] != MAGIC[..m] {
            return Err(Error::NotATrace);
        }
        if n < header.len() {
            return Err(Error::ShortHeader);
        }
        let version = u32_at(&header, 2);
        if version > VERSION {
            return Err(Error::Newer { found: version });
        }
        if (1..VERSION).contains(&version) {
            return Err(Error::Older { found: version });
        }
        if version == 0 {
            return Err(Error::BadHeader {
                why: "it claims file format 0 (formats start at 1)".into(),
            });
        }
        let header_len = u32_at(&header, 3);
        if !(HEADER_LEN..=MAX_HEADER).contains(&header_len) {
            return Err(Error::BadHeader {
                why: format!(
                    "it claims {header_len} bytes ({HEADER_LEN} to {MAX_HEADER} are valid)"
                ),
            });
        }
        // A longer header (a future minor addition) is skipped.
        let rest = u64::from(header_len - HEADER_LEN);
        if io::copy(&mut (&mut input).take(rest), &mut io::sink())? < rest {
            return Err(Error::ShortHeader);
        }
        Ok(Reader {
            input,
            records: 0,
            offset: u64::from(header_len),
            ending: None,
            payload: Vec::new(),
            ahead: None,
            broken: false,
            skipped: Vec::new(),
            skipped_count: 0,
        })
    }

    /// How many skipped records are described; the rest are counted.
    pub const SKIPPED_KEPT: usize = 10;

    /// The next record header (read ahead or read now) and how many of its bytes there were.
    fn head(&mut self) -> io::Result<([u8; 8], usize)> {
        if let Some(ahead) = self.ahead.take() {
            return Ok(ahead);
        }
        let mut head = [0u8; 8];
        let n = read_full(&mut self.input, &mut head)?;
        Ok((head, n))
    }

    /// The record at the current place is corrupt past reading on.
    fn broken(&mut self, kind: u32, why: String) -> Error {
        self.broken = true;
        Error::Corrupt {
            index: self.records,
            kind,
            offset: self.offset,
            why,
        }
    }

    /// How the input ended (`None` while records remain).
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    /// The next record; `Ok(None)` at the end (see [`Reader::ending`]). A record whose payload
    /// is corrupt but whose length frames it (the next record starts where it says) is
    /// skipped and kept in [`Reader::skipped`]; a corrupt length is an error, after which
    /// nothing more can be read.
    pub fn next_record(&mut self) -> Result<Option<Record>, Error> {
        loop {
            if self.ending.is_some() || self.broken {
                return Ok(None);
            }
            let (head, n) = self.head()?;
            if n == 0 {
                self.ending = Some(Ending::Unfinished);
                return Ok(None);
            }
            if n < head.len() {
                self.ending = Some(Ending::Truncated {
                    offset: self.offset,
                    partial: n as u64,
                });
                return Ok(None);
            }
            let (kind, len) = (u32_at(&head, 0), u32_at(&head, 1));
            if let Some(why) = bad_length(kind, len) {
                return Err(self.broken(kind, why));
            }
            // Read, not preallocated: a length past the end of the file costs only what is
            // there.
            self.payload.clear();
            let got = (&mut self.input)
                .take(u64::from(len))
                .read_to_end(&mut self.payload)?;
            if got < len as usize {
                if let Some(end) = json_ends_early(kind, &self.payload) {
                    let why = format!(
                        "claims {len} bytes, but its JSON ends after {end} and the file {} later",
                        got - end
                    );
                    return Err(self.broken(kind, why));
                }
                self.ending = Some(Ending::Truncated {
                    offset: self.offset,
                    partial: 8 + got as u64,
                });
                return Ok(None);
            }
            match decode(kind, &self.payload) {
                Ok(record) => {
                    self.records += 1;
                    self.offset += 8 + u64::from(len);
                    if matches!(record, Record::End) {
                        self.ending = Some(Ending::Complete);
                    }
                    return Ok(Some(record));
                }
                Err(why) => {
                    // Framed if what follows is the end of the file or a header that can be
                    // one; otherwise the length was wrong (a truncated next header is a cut).
                    let (next, m) = self.head()?;
                    self.ahead = Some((next, m));
                    if m == next.len() && bad_length(u32_at(&next, 0), u32_at(&next, 1)).is_some() {
                        let why = format!(
                            "{why}, and the record after it does not start where its length ends"
                        );
                        return Err(self.broken(kind, why));
                    }
                    if self.skipped.len() < Self::SKIPPED_KEPT {
                        self.skipped.push(Skipped {
                            index: self.records,
                            kind,
                            offset: self.offset,
                            why,
                        });
                    }
                    self.skipped_count += 1;
                    self.records += 1;
                    self.offset += 8 + u64::from(len);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time_ns: u64) -> tracer_common::Event {
        let mut e = tracer_common::Event::from_bytes(&[0u8; tracer_common::Event::SIZE]).unwrap();
        e.time_ns = time_ns;
        e.pid_tgid = (7u64 << 32) | 8;
        e.comm[..4].copy_from_slice(b"prog");
        e.data[1] = 0xdead_beef;
        e
    }

    fn sample_records() -> Vec<Record> {
        vec![
            Record::Meta(Meta {
                tracer: "0.1.0".into(),
                kernel: "6.18".into(),
                start_ns: 5,
                cpus: vec![0, 1],
                ..Meta::default()
            }),
            Record::Source(Source {
                id: 3,
                name: "counter".into(),
                what: SourceKind::Watch {
                    slot: 16,
                    addr: 0x4010,
                    len: 4,
                    access: "w".into(),
                    initial: Some(0),
                },
            }),
            Record::Event(Box::new(event(100)), Vec::new()),
            Record::Sample(Sample {
                source: 4,
                cpu: 1,
                pid: 7,
                tid: 9,
                time_ns: 101,
                period: 1_000_123,
                ip: 0xffff_ffff_8100_0010,
                kernel: vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0200],
                user: vec![0x40_1136, 0x40_1200],
            }),
            Record::Switch(Switch {
                cpu: 0,
                pid: 7,
                tid: 8,
                out: true,
                preempted: true,
                time_ns: 102,
            }),
            Record::Task(Task {
                what: TaskWhat::Fork,
                cpu: 1,
                pid: 7,
                tid: 10,
                ppid: 7,
                ptid: 8,
                time_ns: 103,
                comm: *b"prog\0\0\0\0\0\0\0\0\0\0\0\0",
            }),
            Record::Symbol(Symbol {
                pid: 7,
                addr: 0x1139,
                at: "main+0x10".into(),
                source: Some("chain.c:12".into()),
            }),
            Record::Stats(Stats {
                lost_bpf: vec![(0, 2), (1, 0)],
                late: 1,
                ..Stats::default()
            }),
        ]
    }

    fn file(records: &[Record], end: bool) -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        if end {
            w.finish().unwrap()
        } else {
            w.out
        }
    }

    fn read_all(bytes: &[u8]) -> (Vec<Record>, Ending) {
        let mut r = Reader::new(bytes).unwrap();
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(rec);
        }
        (out, r.ending().unwrap().clone())
    }

    #[test]
    fn every_record_kind_round_trips() {
        let records = sample_records();
        let (back, ending) = read_all(&file(&records, true));
        assert_eq!(ending, Ending::Complete);
        assert_eq!(back.len(), records.len() + 1);
        assert!(matches!(back.last(), Some(Record::End)));
        // Debug output covers every field of every record.
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }

    #[test]
    fn a_file_cut_anywhere_reads_up_to_its_last_whole_record() {
        let records = sample_records();
        let whole = file(&records, false);
        // Where each record ends.
        let mut ends = vec![16usize];
        let mut buf = Vec::new();
        for r in &records {
            buf.clear();
            encode(r, &mut buf);
            ends.push(ends.last().unwrap() + buf.len());
        }
        assert_eq!(*ends.last().unwrap(), whole.len());
        for cut in 16..whole.len() {
            let (back, ending) = read_all(&whole[..cut]);
            let complete = ends.iter().filter(|&&e| e <= cut).count() - 1;
            assert_eq!(back.len(), complete, "cut at {cut}");
            let last_end = ends[complete] as u64;
            if cut as u64 == last_end {
                assert_eq!(ending, Ending::Unfinished, "cut at {cut}");
            } else {
                assert_eq!(
                    ending,
                    Ending::Truncated {
                        offset: last_end,
                        partial: cut as u64 - last_end
                    },
                    "cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn a_newer_version_is_refused_and_unknown_kinds_are_skipped() {
        let mut bytes = file(&sample_records(), true);
        bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
        assert!(matches!(
            Reader::new(&bytes[..]).err(),
            Some(Error::Newer { found: 4 })
        ));
        for old in [1u32, 2] {
            bytes[8..12].copy_from_slice(&old.to_le_bytes());
            assert!(matches!(
                Reader::new(&bytes[..]).err(),
                Some(Error::Older { found }) if found == old
            ));
        }
        assert_eq!(
            Reader::new(&bytes[..]).err().unwrap().to_string(),
            "written by an older tracer (file format 2; this tracer reads format 3): record it again"
        );
        assert!(matches!(
            Reader::new(&b"#!/bin/sh\necho hello\n"[..]).err(),
            Some(Error::NotATrace)
        ));
        assert!(matches!(
            Reader::new(&MAGIC[..]).err(),
            Some(Error::ShortHeader)
        ));
        let mut unknown = file(&[], false);
        encode(&Record::Unknown(99), &mut unknown);
        unknown
            .extend_from_slice(&file(&[Record::Event(Box::new(event(1)), Vec::new())], true)[16..]);
        let (back, ending) = read_all(&unknown);
        assert!(matches!(back[0], Record::Unknown(99)));
        assert!(matches!(&back[1], Record::Event(e, _) if e.time_ns == 1));
        assert_eq!(ending, Ending::Complete);
    }

    #[test]
    fn lengths_past_the_end_of_the_file_allocate_nothing() {
        let mut bytes = file(&[], true);
        bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Reader::new(&bytes[..]).err().unwrap().to_string(),
            "the tracer header is corrupt: it claims 4294967295 bytes (16 to 4096 are valid)"
        );
        // A record that claims 16 MiB in a file that ends after 10 bytes of it.
        let mut bytes = file(&[], false);
        bytes.extend_from_slice(&99u32.to_le_bytes());
        bytes.extend_from_slice(&MAX_PAYLOAD.to_le_bytes());
        bytes.extend_from_slice(&[0; 10]);
        let mut r = Reader::new(&bytes[..]).unwrap();
        assert!(r.next_record().unwrap().is_none());
        assert!(r.payload.capacity() < 4096, "{}", r.payload.capacity());
    }

    fn sample(time_ns: u64) -> Record {
        Record::Sample(Sample {
            source: 1,
            cpu: 0,
            pid: 1,
            tid: 1,
            time_ns,
            period: 1,
            ip: 0x40_1136,
            kernel: Vec::new(),
            user: Vec::new(),
        })
    }

    fn meta() -> Record {
        Record::Meta(Meta {
            tracer: "0.1.0".into(),
            ..Meta::default()
        })
    }

    /// Reads to the end: the records, the skipped ones, and the error that stopped reading.
    fn read_damaged(bytes: &[u8]) -> (Vec<Record>, Vec<Skipped>, Option<String>, Option<Ending>) {
        let mut r = Reader::new(bytes).unwrap();
        let mut out = Vec::new();
        let error = loop {
            match r.next_record() {
                Ok(Some(rec)) => out.push(rec),
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        // Nothing is read after a corrupt length.
        assert!(r.next_record().unwrap().is_none());
        (out, r.skipped.clone(), error, r.ending().cloned())
    }

    #[test]
    fn a_corrupt_length_is_an_error_with_its_place_not_a_cut() {
        let mut bytes = file(&[sample(1), sample(2)], true);
        // The first sample's length: 4 bytes (too short), 52 (a flipped bit: not whole
        // frames) and 48 + 8 * 128 (more frames than a sample has).
        let sample_why = |len| {
            format!(
                "claims {len} bytes; a sample record has 48 and 8 per frame, up to 127 frames (1064)"
            )
        };
        for (len, why) in [
            (4u32, sample_why(4)),
            (52, sample_why(52)),
            (48 + 8 * 128, sample_why(48 + 8 * 128)),
            (
                48 | 1 << 30,
                "claims 1073741872 bytes (at most 16777216)".into(),
            ),
        ] {
            bytes[20..24].copy_from_slice(&len.to_le_bytes());
            let (back, skipped, error, ending) = read_damaged(&bytes);
            assert!(back.is_empty() && skipped.is_empty());
            assert_eq!(
                error.unwrap(),
                format!("record 0 (kind 4) at byte 16 is corrupt: {why}")
            );
            assert_eq!(ending, None);
        }
        // A JSON record whose length runs past the end of the file: its JSON ends first.
        let mut bytes = file(&[meta(), sample(1)], false);
        let json_len = u32_at(&bytes, 5);
        bytes[20..24].copy_from_slice(&(json_len + 1000).to_le_bytes());
        let (_, _, error, ending) = read_damaged(&bytes);
        assert_eq!(
            error.unwrap(),
            format!(
                "record 0 (kind 1) at byte 16 is corrupt: claims {} bytes, but its JSON ends \
                 after {json_len} and the file 56 later",
                json_len + 1000
            )
        );
        assert_eq!(ending, None);
        // Cut inside the same JSON: a cut.
        let whole = file(&[meta()], false);
        let (back, _, error, ending) = read_damaged(&whole[..whole.len() - 3]);
        assert!(back.is_empty() && error.is_none());
        assert_eq!(
            ending,
            Some(Ending::Truncated {
                offset: 16,
                partial: 8 + u64::from(json_len) - 3
            })
        );
    }

    #[test]
    fn a_corrupt_payload_is_skipped_and_the_records_after_it_are_read() {
        let task = Record::Task(Task {
            what: TaskWhat::Exit,
            cpu: 0,
            pid: 3,
            tid: 3,
            ppid: 1,
            ptid: 1,
            time_ns: 5,
            comm: [0; 16],
        });
        let mut bytes = file(&[meta(), task, sample(7)], true);
        let task_at = 16 + 8 + u32_at(&bytes, 5) as usize;
        // The task's `what` (its first payload word) is no task record.
        bytes[task_at + 8..task_at + 12].copy_from_slice(&9u32.to_le_bytes());
        let (back, skipped, error, ending) = read_damaged(&bytes);
        assert_eq!(error, None);
        assert_eq!(ending, Some(Ending::Complete));
        assert!(
            matches!(back[..], [Record::Meta(_), Record::Sample(ref s), Record::End] if s.time_ns == 7)
        );
        assert_eq!(
            skipped,
            vec![Skipped {
                index: 1,
                kind: 6,
                offset: task_at as u64,
                why: "unknown task record 9".into()
            }]
        );
        // The same damage, and the next header garbled too: the length cannot be trusted.
        let next_at = task_at + 8 + 48;
        bytes[next_at + 4..next_at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        let (back, skipped, error, _) = read_damaged(&bytes);
        assert_eq!(back.len(), 1);
        assert!(skipped.is_empty());
        assert_eq!(
            error.unwrap(),
            format!(
                "record 1 (kind 6) at byte {task_at} is corrupt: unknown task record 9, and the \
                 record after it does not start where its length ends"
            )
        );
    }

    #[test]
    fn sample_frame_counts_must_match_the_length_and_long_chains_are_cut() {
        let with_frames = |kernel: Vec<u64>, user: Vec<u64>| {
            Record::Sample(Sample {
                source: 1,
                cpu: 0,
                pid: 1,
                tid: 1,
                time_ns: 9,
                period: 1,
                ip: 0x10,
                kernel,
                user,
            })
        };
        let mut bytes = file(
            &[meta(), with_frames(vec![], vec![0x10, 0x20]), sample(10)],
            true,
        );
        let at = 16 + 8 + u32_at(&bytes, 5) as usize;
        // The user frame count (payload word 11) claims 3 where the length holds 2.
        bytes[at + 8 + 44..at + 8 + 48].copy_from_slice(&3u32.to_le_bytes());
        let (back, skipped, error, _) = read_damaged(&bytes);
        assert_eq!(error, None);
        assert!(
            matches!(back[..], [Record::Meta(_), Record::Sample(ref s), Record::End] if s.time_ns == 10)
        );
        assert_eq!(
            skipped[0].why,
            "claims 0 kernel and 3 user frames; its length holds 2"
        );
        // A chain deeper than a record holds keeps its innermost frames, kernel first.
        let deep = with_frames(vec![1; 100], (0..100).collect());
        let (back, _) = read_all(&file(&[deep], true));
        let Record::Sample(s) = &back[0] else {
            panic!("not a sample: {back:?}")
        };
        assert_eq!((s.kernel.len(), s.user.len()), (100, 27));
        assert_eq!(s.user, (0..27).collect::<Vec<u64>>());
    }

    #[test]
    fn format_zero_is_refused() {
        let mut bytes = file(&[], true);
        bytes[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Reader::new(&bytes[..]).err().unwrap().to_string(),
            "the tracer header is corrupt: it claims file format 0 (formats start at 1)"
        );
    }
}
