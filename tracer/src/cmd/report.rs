//! `tracer report`: reads a `tracer record` file (or a live pipe) and prints the merged
//! timeline, filtered, with per-source counts and the recording's losses; optionally as a
//! Perfetto (Chrome trace-event) JSON file.

use std::io::{Read, Write};

use crate::cli::ReportArgs;
use crate::output::timeline::{Item, TimelineWriter};
use crate::tracefile::items::ItemDecoder;
use crate::tracefile::{self, Ending, Reader, Record};
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
    let mut decoder = ItemDecoder::default();
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
