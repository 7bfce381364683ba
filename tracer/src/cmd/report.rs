//! `tracer report`: reads a `tracer record` file (or a live pipe) and prints the merged
//! timeline, filtered, with per-source counts and the recording's losses; optionally as a
//! Perfetto (Chrome trace-event) JSON file.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;

use crate::cli::ReportArgs;
use crate::kernel;
use crate::output::report::ReportSummary;
use crate::output::timeline::{Item, TimelineWriter};
use crate::tracefile::items::ItemDecoder;
use crate::tracefile::{self, Reader, Record};
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
    if crate::output::is_stdout(&args.file) {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    // A recording is a file, or a stream of records from a pipe or FIFO (`tracer record -o -`);
    // a device or directory is refused before it is opened (/dev/zero would never end).
    if let Ok(meta) = std::fs::metadata(&args.file) {
        let kind = meta.file_type();
        if let (Some(what), false) = (kernel::file::not_regular(kind), kind.is_fifo()) {
            return Err(Error::usage(
                format!("{} is {what}, not a recording", args.file.display()),
                vec![
                    "give a file written by `tracer record -o FILE`, or pipe a recording into `tracer report -`"
                        .into(),
                ],
            ));
        }
    }
    let file = std::fs::File::open(&args.file).map_err(|e| Error::Runtime {
        message: format!("cannot open {}: {e}", args.file.display()),
        hints: vec!["record one with `tracer record -o FILE ...`".into()],
    })?;
    Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, file)))
}

/// `--perfetto FILE` and `-o FILE` must not be the recording: writing it would destroy what
/// is read.
fn check_perfetto(args: &ReportArgs) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let outputs = [
        (
            "--perfetto",
            &args.perfetto,
            "the Perfetto JSON",
            "trace.json",
        ),
        ("-o", &args.output.file, "the timeline", "timeline.txt"),
    ];
    for (flag, out, what, example) in outputs {
        let Some(out) = out else {
            continue;
        };
        let same = match (std::fs::metadata(&args.file), std::fs::metadata(out)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if same {
            return Err(Error::usage(
                format!(
                    "{flag} {} is the recording being read: writing it would destroy it",
                    out.display()
                ),
                vec![format!(
                    "write {what} to another file, e.g. {flag} {example}"
                )],
            ));
        }
    }
    Ok(())
}

pub fn run(args: ReportArgs) -> Result<i32, Error> {
    let output = crate::plan::output(&args.output)?;
    let filter = Filter::new(&args)?;
    check_perfetto(&args)?;
    let name = args.file.display().to_string();
    let mut reader = Reader::new(open(&args)?).map_err(|e| Error::Runtime {
        message: format!("cannot read {name}: {e}"),
        hints: vec![match e {
            tracefile::Error::Newer { .. } => {
                "report it with the tracer that recorded it, or a newer one".into()
            }
            _ => "tracer report reads files written by `tracer record -o FILE`".into(),
        }],
    })?;
    let mut summary = ReportSummary {
        name,
        ..ReportSummary::default()
    };
    let out = crate::output::destination(output.file.as_deref())?;
    let (kept, start_ns) = replay(&mut reader, &args, &filter, &mut summary, out)?;
    summary.records = reader.records;
    summary.ending = reader.ending().map(Into::into);
    summary.skipped = reader.skipped.iter().map(ToString::to_string).collect();
    summary.skipped_count = reader.skipped_count;
    if let Some(path) = &args.perfetto {
        let doc = crate::output::perfetto::document(&kept, start_ns);
        let text = serde_json::to_string(&doc).expect("JSON values serialize");
        crate::output::write_file(path, text.as_bytes())?;
        summary.perfetto = Some(path.clone());
    }
    summary.print();
    // The valid records were shown, but the file is damaged: say so to scripts too.
    Ok(match summary.corrupt() {
        true => 1,
        false => 0,
    })
}

/// Reads every record, printing the kept items' timeline lines (flushed per line from a
/// pipe); returns the kept items when `--perfetto` needs them, and the recording's start.
fn replay(
    reader: &mut Reader<Box<dyn Read>>,
    args: &ReportArgs,
    filter: &Filter,
    summary: &mut ReportSummary,
    out: crate::output::Output,
) -> Result<(Vec<Item>, u64), Error> {
    let mut out = TimelineWriter::new(out, args.output.format, 0);
    let mut decoder = ItemDecoder::default();
    let (mut start_ns, mut last_ns) = (None, 0u64);
    let mut kept = Vec::new();
    let live = crate::output::is_stdout(&args.file);
    loop {
        let record = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                summary.read_error = Some(e.to_string());
                break;
            }
        };
        match &record {
            Record::Meta(meta) => {
                start_ns = Some(meta.start_ns);
                out.set_start(meta.start_ns, meta.wall_offset_ns);
                out.header().map_err(Error::Output)?;
            }
            Record::Stats(s) => summary.stats = Some(s.into()),
            Record::Event(..) => summary.events += 1,
            Record::Unknown(kind) => summary.unknown_kind(*kind),
            _ => {}
        }
        let Some(item) = decoder.item(record) else {
            continue;
        };
        if item.time_ns < last_ns {
            summary.out_of_order += 1;
        }
        last_ns = last_ns.max(item.time_ns);
        if !filter.keeps(&item, start_ns.unwrap_or(0)) {
            continue;
        }
        summary.show(&item.source);
        out.write(&item).map_err(Error::Output)?;
        if live {
            out.flush().map_err(Error::Output)?;
        }
        if args.perfetto.is_some() {
            kept.push(item);
        }
    }
    out.flush().map_err(Error::Output)?;
    Ok((kept, start_ns.unwrap_or(0)))
}
