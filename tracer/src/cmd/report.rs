//! `tracer report`: reads a `tracer record` file (or a live pipe) and prints the merged
//! timeline, filtered, with per-source counts and the recording's losses; optionally as a
//! Perfetto (Chrome trace-event) JSON file.

use std::collections::HashMap;
use std::io::{Read, Write};

use tracer_common::Event;

use crate::cli::ReportArgs;
use crate::cmd::probe;
use crate::kernel::format::Value;
use crate::output::timeline::{Item, Kind, TimelineWriter};
use crate::tracefile::{self, Ending, Reader, Record, SourceKind};
use crate::Error;

/// The filters of a report.
struct Filter {
    pid: Option<u32>,
    tid: Option<u32>,
    comm: Option<String>,
    sources: Vec<String>,
    since_ns: Option<u64>,
    until_ns: Option<u64>,
}

impl Filter {
    fn new(args: &ReportArgs) -> Result<Filter, Error> {
        let seconds = |flag: &str, v: Option<f64>| match v {
            Some(s) if !(s >= 0.0 && s.is_finite()) => Err(Error::usage(
                format!("--{flag} {s} is not a time in the recording"),
                vec!["give seconds since the recording started, e.g. 0.5".into()],
            )),
            Some(s) => Ok(Some((s * 1e9) as u64)),
            None => Ok(None),
        };
        let filter = Filter {
            pid: args.pid,
            tid: args.tid,
            comm: args.comm.clone(),
            sources: (args.source.iter())
                .flat_map(|s| s.split(','))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            since_ns: seconds("since", args.since)?,
            until_ns: seconds("until", args.until)?,
        };
        if let (Some(a), Some(b)) = (filter.since_ns, filter.until_ns) {
            if b <= a {
                return Err(Error::usage(
                    "--until is not after --since",
                    vec!["the window is [--since, --until) in seconds".into()],
                ));
            }
        }
        Ok(filter)
    }

    fn keeps(&self, item: &Item, start_ns: u64) -> bool {
        let offset = item.time_ns.saturating_sub(start_ns);
        self.pid.is_none_or(|p| p == item.pid)
            && self.tid.is_none_or(|t| t == item.tid)
            && self.comm.as_ref().is_none_or(|c| *c == item.comm)
            && (self.sources.is_empty()
                || (self.sources.iter()).any(|s| crate::plan::glob_match(s, &item.source)))
            && self.since_ns.is_none_or(|s| offset >= s)
            && self.until_ns.is_none_or(|u| offset < u)
    }
}

/// Decodes records into timeline items: sources, symbol snapshots and task names are kept
/// as they stream by.
#[derive(Default)]
pub(crate) struct Decoder {
    sources: HashMap<u32, tracefile::Source>,
    /// BPF slot -> source id.
    slots: HashMap<u32, u32>,
    symbols: HashMap<(u32, u64), tracefile::Symbol>,
    comms: HashMap<u32, String>,
    /// The last value seen per watch source.
    last: HashMap<u32, Option<u64>>,
}

fn comm_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl Decoder {
    fn comm(&self, tid: u32) -> String {
        self.comms.get(&tid).cloned().unwrap_or_default()
    }

    /// The timeline item of a record (`None` for descriptions, which are kept).
    pub(crate) fn item(&mut self, record: Record) -> Option<Item> {
        match record {
            Record::Source(source) => {
                match &source.what {
                    SourceKind::Probe { slot, .. } => {
                        self.slots.insert(*slot, source.id);
                    }
                    SourceKind::Watch { slot, initial, .. } => {
                        self.slots.insert(*slot, source.id);
                        self.last.insert(source.id, *initial);
                    }
                    SourceKind::Counter { .. } => {}
                }
                self.sources.insert(source.id, source);
                None
            }
            Record::Symbol(s) => {
                self.symbols.insert((s.pid, s.addr), s);
                None
            }
            Record::Event(e) => self.event(&e),
            Record::Sample(s) => Some(Item {
                time_ns: s.time_ns,
                cpu: s.cpu,
                pid: s.pid,
                tid: s.tid,
                comm: self.comm(s.tid),
                source: (self.sources.get(&s.source))
                    .map_or_else(|| format!("counter#{}", s.source), |c| c.name.clone()),
                kind: Kind::Sample,
                args: vec![("period".into(), Value::Uint(s.period))],
                ret: None,
                errno: None,
            }),
            Record::Switch(s) => Some(Item {
                time_ns: s.time_ns,
                cpu: s.cpu,
                pid: s.pid,
                tid: s.tid,
                comm: self.comm(s.tid),
                source: if s.out {
                    "sched:switch-out"
                } else {
                    "sched:switch-in"
                }
                .into(),
                kind: Kind::Switch,
                args: if s.out {
                    vec![("preempted".into(), Value::Word(s.preempted.to_string()))]
                } else {
                    Vec::new()
                },
                ret: None,
                errno: None,
            }),
            Record::Task(t) => {
                let (source, args) = match t.what {
                    tracefile::TaskWhat::Comm => {
                        let name = comm_of(&t.comm);
                        self.comms.insert(t.tid, name.clone());
                        ("task:comm", vec![("comm".into(), Value::Str(name))])
                    }
                    tracefile::TaskWhat::Fork => {
                        if let Some(parent) = self.comms.get(&t.ptid).cloned() {
                            self.comms.entry(t.tid).or_insert(parent);
                        }
                        (
                            "task:fork",
                            vec![
                                ("parent_pid".into(), Value::Uint(t.ppid.into())),
                                ("parent_tid".into(), Value::Uint(t.ptid.into())),
                            ],
                        )
                    }
                    tracefile::TaskWhat::Exit => ("task:exit", Vec::new()),
                };
                Some(Item {
                    time_ns: t.time_ns,
                    cpu: t.cpu,
                    pid: t.pid,
                    tid: t.tid,
                    comm: self.comm(t.tid),
                    source: source.into(),
                    kind: Kind::Task,
                    args,
                    ret: None,
                    errno: None,
                })
            }
            Record::Meta(_) | Record::Stats(_) | Record::End | Record::Unknown(_) => None,
        }
    }

    fn event(&mut self, e: &Event) -> Option<Item> {
        let comm = comm_of(&e.comm);
        if !comm.is_empty() {
            self.comms.insert(e.tid(), comm.clone());
        }
        let id = *self.slots.get(&e.slot)?;
        let source = self.sources.get(&id)?;
        let mut item = Item {
            time_ns: e.time_ns,
            cpu: e.cpu,
            pid: e.pid(),
            tid: e.tid(),
            comm,
            source: source.name.clone(),
            kind: Kind::Probe,
            args: Vec::new(),
            ret: None,
            errno: None,
        };
        match &source.what {
            SourceKind::Probe { decoder, .. } => {
                if matches!(decoder, probe::Decoder::Return { .. }) {
                    item.kind = Kind::Return;
                }
                let (args, ret, errno) = probe::decode(decoder, e);
                item.args = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
                item.ret = ret;
                item.errno = errno;
            }
            SourceKind::Watch { len, access, .. } => {
                item.kind = Kind::Watch;
                let ip = e.data[0];
                // data[3] says whether the program could read the value after the access.
                let new = (e.data[3] == 1 && access != "x")
                    .then(|| crate::cmd::watch::mask(e.data[2], *len));
                let last = self.last.entry(id).or_default();
                let old = *last;
                if new.is_some() {
                    *last = new;
                }
                let shown = |v: Option<u64>| v.map_or(Value::Missing, Value::Uint);
                if access != "x" {
                    item.args.push(("old".into(), shown(old)));
                    item.args.push(("new".into(), shown(new)));
                }
                let at = match self.symbols.get(&(e.pid(), ip)) {
                    Some(s) => match &s.source {
                        Some(line) => format!("{} ({line})", s.at),
                        None => s.at.clone(),
                    },
                    None => format!("{ip:#x}"),
                };
                item.args.push(("at".into(), Value::Word(at)));
            }
            SourceKind::Counter { .. } => return None,
        }
        Some(item)
    }
}

fn open(args: &ReportArgs) -> Result<Box<dyn Read>, Error> {
    if args.file.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let file = std::fs::File::open(&args.file).map_err(|e| Error::Runtime {
        message: format!("cannot open {}: {e}", args.file.display()),
        hints: vec!["record one with `tracer record -o FILE ...`".into()],
    })?;
    Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, file)))
}

pub fn run(args: ReportArgs) -> Result<i32, Error> {
    let filter = Filter::new(&args)?;
    let name = args.file.display().to_string();
    let mut reader = Reader::new(open(&args)?).map_err(|e| match e {
        tracefile::Error::Newer { .. } => Error::Runtime {
            message: format!("cannot read {name}: {e}"),
            hints: vec!["report it with the tracer that recorded it, or a newer one".into()],
        },
        _ => Error::Runtime {
            message: format!("cannot read {name}: {e}"),
            hints: vec!["tracer report reads files written by `tracer record -o FILE`".into()],
        },
    })?;
    let mut decoder = Decoder::default();
    let mut start_ns = None;
    let mut stats = None;
    let mut out = TimelineWriter::new(
        std::io::BufWriter::new(std::io::stdout().lock()),
        args.output,
        0,
    );
    let mut shown: Vec<(String, u64)> = Vec::new();
    let mut kept = Vec::new();
    let mut out_of_order = 0u64;
    let mut last_ns = 0u64;
    let live = args.file.as_os_str() == "-";
    loop {
        let record = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                eprintln!("error: {name}: {e}; the records before it are shown");
                break;
            }
        };
        match &record {
            Record::Meta(meta) => {
                start_ns = Some(meta.start_ns);
                out = TimelineWriter::new(
                    std::io::BufWriter::new(std::io::stdout().lock()),
                    args.output,
                    meta.start_ns,
                );
                out.header().map_err(Error::Output)?;
            }
            Record::Stats(s) => stats = Some(s.clone()),
            _ => {}
        }
        let Some(item) = decoder.item(record) else {
            continue;
        };
        if item.time_ns < last_ns {
            out_of_order += 1;
        }
        last_ns = last_ns.max(item.time_ns);
        if !filter.keeps(&item, start_ns.unwrap_or(0)) {
            continue;
        }
        match shown.iter_mut().find(|(s, _)| *s == item.source) {
            Some((_, n)) => *n += 1,
            None => shown.push((item.source.clone(), 1)),
        }
        out.write(&item).map_err(Error::Output)?;
        if live {
            out.flush().map_err(Error::Output)?;
        }
        if args.perfetto.is_some() {
            kept.push(item);
        }
    }
    out.flush().map_err(Error::Output)?;
    let mut err = std::io::stderr().lock();
    let total: u64 = shown.iter().map(|(_, n)| n).sum();
    let _ = writeln!(err, "\n{total} records shown");
    for (source, n) in &shown {
        let _ = writeln!(err, "  {source:<40} {n:>10}");
    }
    match &stats {
        Some(s) => {
            let lost_bpf: u64 = s.lost_bpf.iter().map(|(_, n)| n).sum();
            let lost_side: u64 = s.lost_side.iter().map(|(_, n)| n).sum();
            let per_cpu = |l: &[(u32, u64)]| {
                l.iter()
                    .map(|(c, n)| format!("CPU {c}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                err,
                "lost while recording: {lost_bpf} probe/watch events ({}), {lost_side} sample/scheduler records ({}); {} late (out of order)",
                per_cpu(&s.lost_bpf),
                per_cpu(&s.lost_side),
                s.late
            );
        }
        None => {
            let _ = writeln!(err, "no loss counts: the recording did not finish");
        }
    }
    if out_of_order > s_late(&stats) {
        let _ = writeln!(err, "{out_of_order} records are out of time order");
    }
    match reader.ending() {
        Some(Ending::Truncated { offset, partial }) => {
            let _ = writeln!(
                err,
                "{name} ends inside a record: recovered {} records up to byte {offset}; the last {partial} bytes are an incomplete record (the recorder was stopped mid-write)",
                reader.records
            );
        }
        Some(Ending::Unfinished) => {
            let _ = writeln!(
                err,
                "{name} has no end record: recovered {} complete records (the recorder did not finish)",
                reader.records
            );
        }
        Some(Ending::Complete) | None => {}
    }
    if let Some(path) = &args.perfetto {
        let doc = crate::output::perfetto::document(&kept, start_ns.unwrap_or(0));
        let text = serde_json::to_string(&doc).expect("JSON values serialize");
        std::fs::write(path, text).map_err(|e| Error::Runtime {
            message: format!("cannot write {}: {e}", path.display()),
            hints: Vec::new(),
        })?;
        let _ = writeln!(
            err,
            "wrote {} (open it in https://ui.perfetto.dev or chrome://tracing)",
            path.display()
        );
    }
    Ok(0)
}

fn s_late(stats: &Option<tracefile::Stats>) -> u64 {
    stats.as_ref().map_or(0, |s| s.late)
}
