//! `tracer record`: probes, watchpoints, sampled counters and scheduler/task records from one
//! run, on one clock (CLOCK_MONOTONIC: `bpf_ktime_get_ns()` in BPF, `use_clockid` on every
//! perf event), merged across CPUs into one ordered stream and written to a trace file.
//!
//! Two kinds of per-CPU rings are drained: the BPF output rings (probe and watchpoint hits, as
//! `tracer probe` and `tracer watch` produce them) and one "side" ring per CPU that a dummy
//! software event owns (comm/fork/exit and context-switch records) and every sampled counter
//! on that CPU writes into (`PERF_EVENT_IOC_SET_OUTPUT`, samples told apart by
//! `PERF_SAMPLE_IDENTIFIER`).

use std::collections::{HashMap, HashSet};
use std::io::Write;

use tracer_common::{Event, SlotConfig};

use crate::bpf::Bpf;
use crate::breakpoint::{self, Watch, WatchOptions};
use crate::cli::RecordArgs;
use crate::kernel::symbols::Process;
use crate::kernel::tracefs::Tracefs;
use crate::launch;
use crate::output::events::Format;
use crate::output::summary::{Banner, Summary, Table};
use crate::output::timeline::TimelineWriter;
use crate::perf::{self, BreakpointType, EventKind, Sampling};
use crate::plan::record::{record_plan, RecordPlan};
use crate::plan::stat::Source as StatSource;
use crate::plan::{build_filter, ProbeSpec};
use crate::probe::{self, AttachOptions, Attacher, Probe};
use crate::session::side::{CounterSpec, SideRings};
use crate::session::{self, Hold, Outcome, OutputRings, Session, Sink};
use crate::stacks::Symbolizer;
use crate::tracefile::items::ItemDecoder;
use crate::tracefile::{self, reorder::Reorder, Record, SourceKind};
use crate::Error;

pub fn run(args: RecordArgs) -> Result<i32, Error> {
    let plan = record_plan(&args, session::default_ring_pages())?;
    let fs = Tracefs::locate()?;
    let specs = probe::expand(&plan.probes, &fs)?;
    let counters = counters(&plan, &fs)?;
    // `-o -`: the data stream keeps standard output; the command prints to standard error.
    let data_out = match plan.file {
        None => Some(launch::take_stdout()?),
        Some(_) => None,
    };
    // Stopped at its exec (before any thread exists), so the watched symbols are mapped and
    // nothing it does is missed.
    let mut session = Session::start(&plan.command, plan.pid, Hold::AfterExec)?;
    let mut bpf = Bpf::load()?;
    let pages = plan.ring_pages;
    let mut rings = OutputRings::open(&mut bpf, pages, session::quarter_full(pages))?;
    let mut sources = Vec::new();
    let probes = attach_probes(
        &mut bpf,
        &fs,
        &plan,
        &specs,
        session.is_launched(),
        &mut sources,
    )?;
    let (watched, process) = attach_watches(&mut bpf, &plan, &session, &mut sources)?;
    let counter_ids = counter_sources(counters, plan.sampling, &mut sources);
    // `inherit`: threads and children created from now on are recorded too.
    let task = session.pid().map(|p| (p, true));
    let mut side = SideRings::open(&counter_ids, plan.sampling, plan.switches, task, pages)?;
    session.follow(&mut bpf, &fs)?;
    // Created once everything is attached: a failed start leaves no empty file behind.
    let out = create_output(&plan, data_out)?;
    let start_ns = session::monotonic_ns();
    let comms = session
        .pid()
        .map_or_else(Vec::new, |pid| current_comms(pid, start_ns));
    let writer = write_header(out, &plan, start_ns, &sources, &comms)?;
    for probe in &probes {
        probe.enable()?;
    }
    session.begin(&banner(&plan, &sources, session.whom()))?;
    // A data breakpoint traps after the access: the instruction that made it ends just before
    // the reported ip.
    let mut symbolizer = Symbolizer::default();
    symbolizer.trap_after = true;
    if let (Some(pid), Some(process)) = (session.pid(), process) {
        symbolizer.adopt(pid, process);
    }
    let live = match plan.live {
        true => Some(live_view(&sources, comms, start_ns)?),
        false => None,
    };
    let mut sink = RecordSink::new(
        live, &mut rings, &mut side, writer, &plan, &sources, symbolizer,
    );
    sink.watch_slots = watched.iter().map(|w| w.slot.id).collect();
    let mut fds = sink.rings.raw_fds();
    fds.extend(sink.side.raw_fds());
    let outcome = session.run(&mut sink, fds, plan.duration)?;
    sink.finish()?;
    let (records, bytes, stats, counts) = sink.close(&bpf)?;
    summary(&sources, &counts, &stats, (records, bytes), &outcome).print();
    Ok(outcome.exit_code())
}

/// The sampled counters' perf events (tracepoints by their id).
fn counters(plan: &RecordPlan, fs: &Tracefs) -> Result<Vec<CounterSpec>, Error> {
    let mut out = Vec::new();
    for spec in &plan.counters {
        let kind = match &spec.source {
            StatSource::Software(sw) => EventKind::Software(*sw),
            StatSource::Hardware(hw) => EventKind::Hardware(*hw),
            StatSource::Cache { id, op, result } => EventKind::HwCache {
                id: *id,
                op: *op,
                result: *result,
            },
            StatSource::Raw(config) => EventKind::Raw(*config),
            StatSource::Tracepoint { category, name } => {
                let id = fs
                    .tracepoint_id(category, name)
                    .map_err(|e| probe::tracepoint_error(e, fs, category, name))?;
                EventKind::Tracepoint(id)
            }
            _ => unreachable!("the plan keeps sampled events only"),
        };
        out.push(CounterSpec {
            name: spec.name.clone(),
            kind,
            flags: spec.modifiers.flags(),
        });
    }
    Ok(out)
}

/// Attaches the probes (filtered to the process or the command), each described as a source.
fn attach_probes(
    bpf: &mut Bpf,
    fs: &Tracefs,
    plan: &RecordPlan,
    specs: &[ProbeSpec],
    launched: bool,
    sources: &mut Vec<tracefile::Source>,
) -> Result<Vec<Probe>, Error> {
    let mut filter = build_filter(plan.pid, None, None, None, None)?;
    filter.exclude_tgid = std::process::id();
    if launched {
        filter.flags |= tracer_common::SLOT_FILTER_TRACKED;
    }
    let options = AttachOptions {
        base: filter,
        pid: plan.pid,
        ..AttachOptions::default()
    };
    let probes = Attacher::new(fs, options).attach_all(bpf, specs)?;
    for probe in &probes {
        sources.push(tracefile::Source {
            id: sources.len() as u32,
            name: probe.name.clone(),
            what: SourceKind::Probe {
                slot: probe.slot.id,
                decoder: probe.decoder.clone(),
            },
        });
    }
    Ok(probes)
}

/// Places the watchpoints in the recorded process, each described as a source; returns them
/// and the process (its symbols name the hits).
fn attach_watches(
    bpf: &mut Bpf,
    plan: &RecordPlan,
    session: &Session,
    sources: &mut Vec<tracefile::Source>,
) -> Result<(Vec<Watch>, Option<Process>), Error> {
    let pid = session.pid();
    let mut process = match pid {
        Some(pid) if !plan.watches.is_empty() => {
            Some(Process::new(pid).map_err(|_| Error::Runtime {
                message: format!("no process {pid}"),
                hints: vec!["check the pid with `ps`; it may have exited".into()],
            })?)
        }
        _ => None,
    };
    let mut watched = Vec::new();
    for (target, kind, len) in &plan.watches {
        let options = WatchOptions {
            kind: *kind,
            len: *len,
            pid,
            kernel: false,
            launched: session.is_launched(),
            template: SlotConfig::default(),
        };
        let w = breakpoint::attach(bpf, target, &options, process.as_mut())?;
        sources.push(tracefile::Source {
            id: sources.len() as u32,
            name: format!("watch:{}", w.name),
            what: SourceKind::Watch {
                slot: w.slot.id,
                addr: w.addr,
                len: w.len,
                access: access_name(*kind).into(),
                initial: w.last,
            },
        });
        watched.push(w);
    }
    Ok((watched, process))
}

/// The access type as recordings name it (`w`, `rw`, `x`, `r`).
fn access_name(kind: BreakpointType) -> &'static str {
    match kind {
        BreakpointType::Write => "w",
        BreakpointType::ReadWrite => "rw",
        BreakpointType::Execute => "x",
        BreakpointType::Read => "r",
    }
}

/// Describes each sampled counter as a source; returns them with their source ids.
fn counter_sources(
    counters: Vec<CounterSpec>,
    sampling: Sampling,
    sources: &mut Vec<tracefile::Source>,
) -> Vec<(u32, CounterSpec)> {
    let sampling_text = match sampling {
        Sampling::Frequency(hz) => format!("{hz} Hz"),
        Sampling::Period(n) => format!("every {n}"),
        Sampling::None => String::new(),
    };
    let mut ids = Vec::new();
    for spec in counters {
        let id = sources.len() as u32;
        sources.push(tracefile::Source {
            id,
            name: spec.name.clone(),
            what: SourceKind::Counter {
                event: spec.name.clone(),
                sampling: sampling_text.clone(),
            },
        });
        ids.push((id, spec));
    }
    ids
}

fn create_output(
    plan: &RecordPlan,
    stdout: Option<std::fs::File>,
) -> Result<Box<dyn Write>, Error> {
    Ok(match (stdout, &plan.file) {
        (Some(data), _) => Box::new(data),
        (None, Some(path)) => {
            Box::new(std::fs::File::create(path).map_err(|e| Error::Runtime {
                message: format!("cannot create {}: {e}", path.display()),
                hints: vec!["check that the directory exists and is writable".into()],
            })?)
        }
        (None, None) => unreachable!("standard output is taken when there is no file"),
    })
}

/// Writes the recording's metadata, its sources and the task names as they are now (perf only
/// reports a comm when it changes), like perf record's synthesized events.
fn write_header(
    out: Box<dyn Write>,
    plan: &RecordPlan,
    start_ns: u64,
    sources: &[tracefile::Source],
    comms: &[Record],
) -> Result<tracefile::Writer<std::io::BufWriter<Box<dyn Write>>>, Error> {
    let mut writer = tracefile::Writer::new(std::io::BufWriter::with_capacity(1 << 20, out))
        .map_err(Error::Output)?;
    let meta = tracefile::Meta {
        tracer: env!("CARGO_PKG_VERSION").into(),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        argv: std::env::args().collect(),
        start_ns,
        cpus: perf::cpus::online()?,
        reorder_window_ns: plan.reorder_window_ns,
    };
    let sources = sources.iter().map(|s| Record::Source(s.clone()));
    for record in std::iter::once(Record::Meta(meta))
        .chain(sources)
        .chain(comms.iter().cloned())
    {
        writer.write(&record).map_err(Error::Output)?;
    }
    writer.flush().map_err(Error::Output)?;
    Ok(writer)
}

fn banner(plan: &RecordPlan, sources: &[tracefile::Source], whom: Option<String>) -> Banner {
    let mut what: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    if plan.switches {
        what.push("context switches");
    }
    let to = match &plan.file {
        Some(path) => path.display().to_string(),
        None => "standard output".into(),
    };
    Banner {
        verb: "Recording",
        what: what.join(", "),
        whom,
        detail: Some(format!("to {to}")),
    }
}

/// `--live`: a decoder that knows the sources and task names, and the timeline on stdout.
fn live_view(
    sources: &[tracefile::Source],
    comms: Vec<Record>,
    start_ns: u64,
) -> Result<Live, Error> {
    let mut decoder = ItemDecoder::default();
    for record in sources
        .iter()
        .map(|s| Record::Source(s.clone()))
        .chain(comms)
    {
        decoder.item(record);
    }
    let mut out = TimelineWriter::new(std::io::stdout().lock(), Format::Text, start_ns);
    out.header().map_err(Error::Output)?;
    Ok((decoder, out))
}

/// A comm record for each thread of `pid`, stamped `time_ns`.
fn current_comms(pid: u32, time_ns: u64) -> Vec<Record> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids.into_iter()
        .map(|tid| {
            let name = read_trim(&format!("/proc/{pid}/task/{tid}/comm"));
            let mut comm = [0u8; 16];
            let n = name.len().min(15);
            comm[..n].copy_from_slice(&name.as_bytes()[..n]);
            Record::Task(tracefile::Task {
                what: tracefile::TaskWhat::Comm,
                cpu: 0,
                pid,
                tid,
                ppid: 0,
                ptid: 0,
                time_ns,
                comm,
            })
        })
        .collect()
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// What was recorded, per source and in all, and every kind of loss with the flag that fixes
/// it.
fn summary(
    sources: &[tracefile::Source],
    counts: &Counts,
    stats: &tracefile::Stats,
    (records, bytes): (u64, u64),
    outcome: &Outcome,
) -> Summary {
    let mut rows: Vec<Vec<String>> = (sources.iter().zip(&counts.per_source))
        .map(|(source, n)| vec![format!("  {}", source.name), n.to_string()])
        .collect();
    if counts.switches > 0 {
        rows.push(vec![
            "  context switches".into(),
            counts.switches.to_string(),
        ]);
    }
    rows.push(vec!["  comm/fork/exit".into(), counts.tasks.to_string()]);
    let mut notes = Vec::new();
    let lost_bpf: u64 = stats.lost_bpf.iter().map(|(_, n)| n).sum();
    let lost_side: u64 = stats.lost_side.iter().map(|(_, n)| n).sum();
    if lost_bpf > 0 {
        let per_cpu: Vec<String> = (stats.lost_bpf.iter())
            .map(|(c, n)| format!("CPU {c}: {n}"))
            .collect();
        notes.push(format!(
            "lost {lost_bpf} probe/watch events ({}): raise --ring-pages",
            per_cpu.join(", ")
        ));
    }
    if lost_side > 0 {
        notes.push(format!(
            "lost {lost_side} sample/scheduler records: raise --ring-pages or lower -F"
        ));
    }
    if stats.late > 0 {
        notes.push(format!(
            "{} records arrived after their reorder window and are out of order: raise --reorder-window",
            stats.late
        ));
    }
    if stats.malformed > 0 {
        notes.push(format!(
            "{} ring records could not be parsed",
            stats.malformed
        ));
    }
    Summary {
        count: records,
        unit: format!("records ({:.1} KiB) written", bytes as f64 / 1024.0),
        seconds: outcome.elapsed.as_secs_f64(),
        why: outcome.why(0, "records"),
        tail: String::new(),
        table: Some(Table {
            header: Vec::new(),
            rows,
            widths: vec![10],
        }),
        notes,
    }
}

/// Records written per source, context switches, task records.
#[derive(Default)]
struct Counts {
    per_source: Vec<u64>,
    switches: u64,
    tasks: u64,
}

type Live = (ItemDecoder, TimelineWriter<std::io::StdoutLock<'static>>);

struct RecordSink<'a, W: Write> {
    /// `--live`: records are also decoded and printed as they are written.
    live: Option<Live>,
    rings: &'a mut OutputRings,
    side: &'a mut SideRings,
    reorder: Reorder<Record>,
    writer: tracefile::Writer<W>,
    watch_slots: Vec<u32>,
    /// BPF slot -> source id.
    slots: HashMap<u32, u32>,
    counts: Counts,
    /// (pid, ip) already written as symbol records.
    symbolized: HashSet<(u32, u64)>,
    symbolizer: Symbolizer,
    error: Option<std::io::Error>,
}

impl<'a, W: Write> RecordSink<'a, W> {
    fn new(
        live: Option<Live>,
        rings: &'a mut OutputRings,
        side: &'a mut SideRings,
        writer: tracefile::Writer<W>,
        plan: &RecordPlan,
        sources: &[tracefile::Source],
        symbolizer: Symbolizer,
    ) -> Self {
        RecordSink {
            live,
            rings,
            side,
            reorder: Reorder::new(plan.reorder_window_ns),
            writer,
            watch_slots: Vec::new(),
            slots: (sources.iter())
                .filter_map(|s| match s.what {
                    SourceKind::Probe { slot, .. } | SourceKind::Watch { slot, .. } => {
                        Some((slot, s.id))
                    }
                    _ => None,
                })
                .collect(),
            counts: Counts {
                per_source: vec![0; sources.len()],
                ..Counts::default()
            },
            symbolized: HashSet::new(),
            symbolizer,
            error: None,
        }
    }

    /// Writes the loss counts and the end record; returns the records and bytes written, the
    /// stats, and the counts.
    fn close(self, bpf: &Bpf) -> Result<(u64, u64, tracefile::Stats, Counts), Error> {
        let (produced, _) = bpf.stats()?;
        let stats = tracefile::Stats {
            lost_side: self.side.lost.iter().map(|(c, n)| (*c, *n)).collect(),
            lost_bpf: bpf.lost_per_cpu()?,
            late: self.reorder.late,
            malformed: self.side.malformed + self.rings.losses().malformed,
            produced,
        };
        let mut writer = self.writer;
        writer
            .write(&Record::Stats(stats.clone()))
            .map_err(Error::Output)?;
        let (records, bytes) = (writer.records + 1, writer.bytes + 8);
        writer.finish().map_err(Error::Output)?;
        Ok((records, bytes, stats, self.counts))
    }

    fn collect(&mut self) {
        let reorder = &mut self.reorder;
        self.rings
            .drain(|e| reorder.push(e.time_ns, Record::Event(Box::new(*e))));
        self.side.drain(|r| {
            let t = r.time_ns().unwrap_or(0);
            reorder.push(t, r);
        });
    }

    fn write(&mut self, record: Record) {
        if self.error.is_some() {
            return;
        }
        match &record {
            Record::Event(e) => {
                if let Some(source) = self.slots.get(&e.slot) {
                    self.counts.per_source[*source as usize] += 1;
                }
                if self.watch_slots.contains(&e.slot) {
                    self.snapshot_symbol(e);
                }
            }
            Record::Sample(s) => self.counts.per_source[s.source as usize] += 1,
            Record::Switch(_) => self.counts.switches += 1,
            Record::Task(_) => self.counts.tasks += 1,
            _ => {}
        }
        if let Err(e) = self.writer.write(&record) {
            self.error = Some(e);
        }
        self.show(record);
    }

    /// `--live`: prints the record's timeline line.
    fn show(&mut self, record: Record) {
        if let Some((decoder, out)) = self.live.as_mut() {
            if let Some(item) = decoder.item(record) {
                if let Err(e) = out.write(&item) {
                    self.error.get_or_insert(e);
                }
            }
        }
    }

    /// A watch hit's instruction, named now (the process may be gone at report time).
    fn snapshot_symbol(&mut self, e: &Event) {
        let ip = e.data[0];
        if !self.symbolized.insert((e.pid(), ip)) {
            return;
        }
        let frame = self.symbolizer.frame(e.pid(), ip);
        let symbol = tracefile::Symbol {
            pid: e.pid(),
            addr: ip,
            at: frame.place(),
            source: frame.source(),
        };
        let record = Record::Symbol(symbol);
        if let Err(e) = self.writer.write(&record) {
            self.error = Some(e);
        }
        self.show(record);
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.collect();
        let mut ready = Vec::new();
        self.reorder.finish(|r| ready.push(r));
        for r in ready {
            self.write(r);
        }
        if let Some((_, out)) = self.live.as_mut() {
            out.flush().map_err(Error::Output)?;
        }
        match self.error.take() {
            Some(e) => Err(Error::Output(e)),
            None => Ok(()),
        }
    }
}

impl<W: Write> Sink for RecordSink<'_, W> {
    fn drain(&mut self) -> Result<bool, Error> {
        // Taken before draining: every record stamped earlier than this (minus the window
        // for records still being written on another CPU) is in hand after the drain.
        let now = session::monotonic_ns();
        self.collect();
        let mut ready = Vec::new();
        self.reorder.release(now, |r| ready.push(r));
        for r in ready {
            self.write(r);
        }
        self.writer.flush().map_err(Error::Output)?;
        if let Some((_, out)) = self.live.as_mut() {
            out.flush().map_err(Error::Output)?;
        }
        match self.error.take() {
            Some(e) => Err(Error::Output(e)),
            None => Ok(false),
        }
    }
}
