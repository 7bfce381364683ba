//! `tracer record`: probes, watchpoints, sampled counters and scheduler/task records from one
//! run, on one clock (CLOCK_MONOTONIC: `bpf_ktime_get_ns()` in BPF, `use_clockid` on every
//! perf event), merged across CPUs into one ordered stream and written to a trace file.
//!
//! Two kinds of per-CPU rings are drained: the BPF output rings (probe and watchpoint hits, as
//! `tracer probe` and `tracer watch` produce them) and one "side" ring per CPU that a dummy
//! software event owns (comm/fork/exit and context-switch records) and every sampled counter
//! on that CPU writes into (`PERF_EVENT_IOC_SET_OUTPUT`, samples told apart by
//! `PERF_SAMPLE_IDENTIFIER`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::time::Instant;

use tracer_common::{Event, SlotConfig, TRACK_ACTIVE};

use crate::bpf::Bpf;
use crate::breakpoint::{self, Watch, WatchOptions};
use crate::cli::{RecordArgs, WatchType};
use crate::kernel::symbols::Process;
use crate::kernel::tracefs::Tracefs;
use crate::launch::{self, Launched};
use crate::output::events::Format;
use crate::output::timeline::TimelineWriter;
use crate::perf::{self, attr, record as rec, EventKind, Options, Ring, Sampling, Scope};
use crate::plan::{self, WatchTarget};
use crate::plan_stat::{self, Source as StatSource};
use crate::probe::{self, AttachOptions, Attacher, Probe};
use crate::session::{End, EventLoop, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::tracefile::items::ItemDecoder;
use crate::tracefile::{self, reorder::Reorder, Record, SourceKind};
use crate::Error;

/// The side rings' sample layout: the identifier first, so samples of several counters
/// sharing one ring can be told apart (perf_event_open(2), PERF_SAMPLE_IDENTIFIER).
const SIDE_SAMPLE_TYPE: u64 = attr::sample::IDENTIFIER
    | attr::sample::TID
    | attr::sample::TIME
    | attr::sample::CPU
    | attr::sample::PERIOD;

fn usage(message: impl Into<String>, hint: &str) -> Error {
    Error::usage(message, vec![hint.to_string()])
}

/// A watch target with its access type and length: `TARGET[:w|rw|x[:LEN]]`.
fn parse_watch(text: &str) -> Result<(WatchTarget, WatchType, Option<u64>), Error> {
    let mut parts: Vec<&str> = text.split(':').collect();
    let mut len = None;
    if parts.len() >= 3 {
        if let Ok(n) = parts[parts.len() - 1].parse::<u64>() {
            if matches!(parts[parts.len() - 2], "w" | "rw" | "x") {
                if ![1, 2, 4, 8].contains(&n) {
                    return Err(usage(
                        format!("watch length {n} in '{text}' is not 1, 2, 4 or 8"),
                        "watchpoints cover 1, 2, 4 or 8 aligned bytes",
                    ));
                }
                len = Some(n);
                parts.pop();
            }
        }
    }
    let kind = match parts.last().copied() {
        Some("w") if parts.len() > 1 => WatchType::W,
        Some("rw") if parts.len() > 1 => WatchType::Rw,
        Some("x") if parts.len() > 1 => WatchType::X,
        Some("r") if parts.len() > 1 => WatchType::R,
        _ => {
            return Ok((plan::parse_watch_target(text)?, WatchType::W, None));
        }
    };
    parts.pop();
    Ok((plan::parse_watch_target(&parts.join(":"))?, kind, len))
}

/// One sampled counter: its name, event and sampling.
struct CounterSpec {
    name: String,
    kind: EventKind,
    flags: u64,
}

fn counter_specs(args: &RecordArgs) -> Result<Vec<CounterSpec>, Error> {
    if args.events.is_empty() {
        if args.freq.is_some() || args.period.is_some() {
            return Err(usage(
                "-F/--period given without a counter",
                "name the counter to sample with -e, e.g. -e task-clock -F 999",
            ));
        }
        return Ok(Vec::new());
    }
    let mut fs = None;
    let mut out = Vec::new();
    for spec in plan_stat::parse_events(&args.events)? {
        let kind = match &spec.source {
            StatSource::Software(sw) => EventKind::Software(*sw),
            StatSource::Hardware(hw) => EventKind::Hardware(*hw),
            StatSource::Cache { id, op, result } => EventKind::HwCache {
                id: *id,
                op: *op,
                result: *result,
            },
            StatSource::Raw(config) => EventKind::Raw(*config),
            StatSource::Tracepoint { category, name } if !name.contains(['*', '?']) => {
                let fs = match &fs {
                    Some(fs) => fs,
                    None => fs.insert(Tracefs::locate()?),
                };
                let id = fs
                    .tracepoint_id(category, name)
                    .map_err(|e| probe::tracepoint_error(e, fs, category, name))?;
                EventKind::Tracepoint(id)
            }
            _ => {
                return Err(usage(
                    format!("-e {} cannot be sampled by tracer record", spec.name),
                    "sample software, hardware, cache, raw or single tracepoint events; probes go in -P",
                ))
            }
        };
        out.push(CounterSpec {
            name: spec.name.clone(),
            kind,
            flags: spec.modifiers.flags(),
        });
    }
    Ok(out)
}

/// The per-CPU side rings and the counters writing into them.
struct SideRings {
    rings: Vec<(u32, Ring)>,
    /// Sample identifier -> counter source id.
    ids: HashMap<u64, u32>,
    layout: rec::Layout,
    _counters: Vec<perf::Event>,
    lost: BTreeMap<u32, u64>,
    malformed: u64,
}

fn clock_options() -> Options {
    Options {
        sample_type: SIDE_SAMPLE_TYPE,
        clockid: Some(libc::CLOCK_MONOTONIC),
        ..Options::default()
    }
}

impl SideRings {
    /// One dummy event per CPU owns the ring and reports comm/fork/exit (and context switches
    /// with `switches`); counters on the same CPU write into it. `task`: the command or
    /// process recorded (`inherit` follows its children), else every task.
    fn open(
        counters: &[(u32, CounterSpec)],
        sampling: Sampling,
        switches: bool,
        task: Option<(u32, bool)>,
        pages: usize,
    ) -> Result<SideRings, Error> {
        let cpus = perf::cpus::online()?;
        let scope = |cpu| match task {
            Some((pid, _)) => Scope::Task {
                pid,
                cpu: Some(cpu),
            },
            None => Scope::Cpu(cpu),
        };
        let inherit = match task {
            Some((_, true)) => attr::flag::INHERIT,
            _ => 0,
        };
        let mut side = SideRings {
            rings: Vec::new(),
            ids: HashMap::new(),
            layout: rec::Layout {
                sample_type: SIDE_SAMPLE_TYPE,
                sample_id_all: true,
                ..rec::Layout::default()
            },
            _counters: Vec::new(),
            lost: BTreeMap::new(),
            malformed: 0,
        };
        for &cpu in &cpus {
            let mut flags = attr::flag::COMM | attr::flag::TASK | attr::flag::SAMPLE_ID_ALL;
            if switches {
                flags |= attr::flag::CONTEXT_SWITCH;
            }
            let options = Options {
                flags: flags | inherit,
                wakeup: crate::session::quarter_full(pages),
                ..clock_options()
            };
            let owner = perf::Event::open(
                format!("side-band ring on CPU {cpu}"),
                &EventKind::Software(perf::Software::Dummy),
                &options,
                &scope(cpu),
            )?;
            let ring = Ring::new(owner, pages)?;
            for (source, spec) in counters {
                let options = Options {
                    flags: spec.flags | attr::flag::SAMPLE_ID_ALL | inherit,
                    sampling,
                    ..clock_options()
                };
                let event =
                    perf::Event::open(spec.name.clone(), &spec.kind, &options, &scope(cpu))?;
                event.set_output(ring.event())?;
                side.ids.insert(event.id()?, *source);
                side._counters.push(event);
            }
            side.lost.insert(cpu, 0);
            side.rings.push((cpu, ring));
        }
        Ok(side)
    }

    fn raw_fds(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::{AsFd, AsRawFd};
        self.rings
            .iter()
            .map(|(_, r)| r.event().as_fd().as_raw_fd())
            .collect()
    }

    /// Parses every record available now into trace records.
    fn drain(&mut self, mut f: impl FnMut(Record)) {
        let layout = self.layout;
        for (cpu, ring) in self.rings.iter_mut() {
            let cpu = *cpu;
            let lost = self.lost.entry(cpu).or_default();
            let malformed = &mut self.malformed;
            let ids = &self.ids;
            let stats = ring.drain(|bytes| {
                let Ok(parsed) = rec::parse(bytes, &layout) else {
                    *malformed += 1;
                    return;
                };
                let id = parsed.sample_id;
                let (pid, tid, time) = (
                    id.pid.unwrap_or(0),
                    id.tid.unwrap_or(0),
                    id.time.unwrap_or(0),
                );
                let task = |what, pid, tid, ppid, ptid, time_ns, comm: [u8; 16]| {
                    Record::Task(tracefile::Task {
                        what,
                        cpu,
                        pid,
                        tid,
                        ppid,
                        ptid,
                        time_ns,
                        comm,
                    })
                };
                match parsed.record {
                    rec::Record::Sample(s) => {
                        let Some(source) = s.identifier.and_then(|i| ids.get(&i)) else {
                            *malformed += 1;
                            return;
                        };
                        f(Record::Sample(tracefile::Sample {
                            source: *source,
                            cpu: s.cpu.unwrap_or(cpu),
                            pid: s.pid.unwrap_or(0),
                            tid: s.tid.unwrap_or(0),
                            time_ns: s.time.unwrap_or(0),
                            period: s.period.unwrap_or(0),
                        }));
                    }
                    rec::Record::Comm {
                        pid: p,
                        tid: t,
                        comm,
                        ..
                    } => {
                        let mut name = [0u8; 16];
                        let n = comm
                            .iter()
                            .position(|&b| b == 0)
                            .unwrap_or(comm.len())
                            .min(15);
                        name[..n].copy_from_slice(&comm[..n]);
                        f(task(tracefile::TaskWhat::Comm, p, t, 0, 0, time, name));
                    }
                    rec::Record::Fork(t) => f(task(
                        tracefile::TaskWhat::Fork,
                        t.pid,
                        t.tid,
                        t.ppid,
                        t.ptid,
                        t.time,
                        [0; 16],
                    )),
                    rec::Record::Exit(t) => f(task(
                        tracefile::TaskWhat::Exit,
                        t.pid,
                        t.tid,
                        t.ppid,
                        t.ptid,
                        t.time,
                        [0; 16],
                    )),
                    rec::Record::Switch { out, preempt }
                    | rec::Record::SwitchCpuWide { out, preempt, .. } => {
                        f(Record::Switch(tracefile::Switch {
                            cpu,
                            pid,
                            tid,
                            out,
                            preempted: preempt,
                            time_ns: time,
                        }))
                    }
                    rec::Record::Lost { lost: n, .. } => *lost += n,
                    _ => {}
                }
            });
            if stats.corrupt {
                self.malformed += 1;
            }
        }
    }
}

pub fn run(args: RecordArgs) -> Result<i32, Error> {
    if args.probes.is_empty() && args.watches.is_empty() && args.events.is_empty() && !args.switches
    {
        return Err(usage(
            "nothing to record",
            "add probes (-P SPEC), watchpoints (-W TARGET), sampled counters (-e EVENT -F HZ) or --switches",
        ));
    }
    if args.pid.is_some() && !args.command.is_empty() {
        return Err(usage(
            "--pid and -- COMMAND cannot be combined",
            "record either a running process or a command tracer starts",
        ));
    }
    if !args.watches.is_empty() && args.pid.is_none() && args.command.is_empty() {
        return Err(usage(
            "watchpoints (-W) need the process whose memory they watch",
            "add -p PID or -- COMMAND",
        ));
    }
    let ring_pages = args
        .ring_pages
        .unwrap_or_else(crate::session::default_ring_pages);
    if !ring_pages.is_power_of_two() {
        return Err(usage(
            format!("--ring-pages {ring_pages} is not a power of two"),
            "use 8, 16, 64, 256...",
        ));
    }
    let watches: Vec<(WatchTarget, WatchType, Option<u64>)> = args
        .watches
        .iter()
        .map(|w| parse_watch(w))
        .collect::<Result<_, _>>()?;
    if watches.len() > tracer_common::PERF_EVENT_SLOTS as usize {
        return Err(usage(
            format!(
                "{} watchpoints given; x86 has 4 debug registers",
                watches.len()
            ),
            "watch at most 4 locations at once",
        ));
    }
    let sampling = match (args.freq, args.period) {
        (_, Some(0)) | (Some(0), _) => {
            return Err(usage(
                "a sampling rate of 0 samples nothing",
                "give -F HZ or --period N above 0",
            ))
        }
        (Some(hz), None) => Sampling::Frequency(hz),
        (None, Some(n)) => Sampling::Period(n),
        (None, None) => Sampling::Frequency(1000),
        (Some(_), Some(_)) => unreachable!("clap: conflicting"),
    };
    let counters = counter_specs(&args)?;
    let specs: Vec<plan::ProbeSpec> = args
        .probes
        .iter()
        .map(|s| plan::parse_spec(s))
        .collect::<Result<_, _>>()?;
    let stdout = args.output.as_os_str() == "-";
    if stdout && args.live {
        return Err(usage(
            "--live prints to standard output, where -o - writes the recording",
            "record to a file with --live, or pipe -o - into `tracer report -`",
        ));
    }
    let fs = Tracefs::locate()?;
    let specs = probe::expand(&specs, &fs)?;

    // `-o -`: the data stream keeps standard output; the command prints to standard error.
    let mut data_out = match stdout {
        true => Some(launch::take_stdout()?),
        false => None,
    };
    // Fork the command stopped at its exec (before any thread exists), so the watched
    // symbols are mapped and nothing it does is missed.
    let mut launched = match args.command.is_empty() {
        true => None,
        false => Some(launch::launch_stopped_at_exec(&args.command)?),
    };
    let pid = launched.as_ref().map(Launched::pid).or(args.pid);
    let mut bpf = Bpf::load()?;
    let mut rings = OutputRings::open(
        &mut bpf,
        ring_pages,
        crate::session::quarter_full(ring_pages),
    )?;
    let mut filter = plan::build_filter(args.pid, None, None, None, None)?;
    filter.exclude_tgid = std::process::id();
    if launched.is_some() {
        filter.flags |= tracer_common::SLOT_FILTER_TRACKED;
    }
    let mut sources = Vec::new();
    let mut attacher = Attacher::new(
        &fs,
        AttachOptions {
            base: filter,
            pid: args.pid,
            ..AttachOptions::default()
        },
    );
    let mut probes: Vec<Probe> = Vec::new();
    for spec in &specs {
        let probe = attacher.attach(&mut bpf, spec)?;
        sources.push(tracefile::Source {
            id: sources.len() as u32,
            name: probe.name.clone(),
            what: SourceKind::Probe {
                slot: probe.slot.id,
                decoder: probe.decoder.clone(),
            },
        });
        probes.push(probe);
    }
    let mut process = match pid {
        Some(pid) if !watches.is_empty() => {
            Some(Process::new(pid).map_err(|_| Error::Runtime {
                message: format!("no process {pid}"),
                hints: vec!["check the pid with `ps`; it may have exited".into()],
            })?)
        }
        _ => None,
    };
    let mut watched: Vec<Watch> = Vec::new();
    for (target, kind, len) in &watches {
        let options = WatchOptions {
            kind: breakpoint::bp_type(*kind)?,
            len: *len,
            pid,
            kernel: false,
            launched: launched.is_some(),
            template: SlotConfig::default(),
        };
        let w = breakpoint::attach(&mut bpf, target, &options, process.as_mut())?;
        sources.push(tracefile::Source {
            id: sources.len() as u32,
            name: format!("watch:{}", w.name),
            what: SourceKind::Watch {
                slot: w.slot.id,
                addr: w.addr,
                len: w.len,
                access: format!("{kind:?}").to_lowercase(),
                initial: w.last,
            },
        });
        watched.push(w);
    }
    let sampling_text = match sampling {
        Sampling::Frequency(hz) => format!("{hz} Hz"),
        Sampling::Period(n) => format!("every {n}"),
        Sampling::None => String::new(),
    };
    let mut counter_ids = Vec::new();
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
        counter_ids.push((id, spec));
    }
    // `inherit`: threads and children created from now on are recorded too.
    let task = pid.map(|p| (p, true));
    let mut side = SideRings::open(&counter_ids, sampling, args.switches, task, ring_pages)?;
    let mut _tracking = Vec::new();
    if let Some(child) = launched.as_ref() {
        _tracking = probe::start_tracking(&mut bpf, &fs)?;
        // Stopped after its exec: it is the command already.
        bpf.track(child.pid(), TRACK_ACTIVE)?;
    }

    // Created once everything is attached: a failed start leaves no empty file behind.
    let out: Box<dyn Write> = if let Some(data) = data_out.take() {
        Box::new(data)
    } else {
        Box::new(
            std::fs::File::create(&args.output).map_err(|e| Error::Runtime {
                message: format!("cannot create {}: {e}", args.output.display()),
                hints: vec!["check that the directory exists and is writable".into()],
            })?,
        )
    };
    let event_loop = EventLoop::new()?;
    let start_ns = crate::session::monotonic_ns();
    let mut writer = tracefile::Writer::new(std::io::BufWriter::with_capacity(1 << 20, out))
        .map_err(Error::Output)?;
    let meta = tracefile::Meta {
        tracer: env!("CARGO_PKG_VERSION").into(),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        argv: std::env::args().collect(),
        start_ns,
        cpus: perf::cpus::online()?,
        reorder_window_ns: args.reorder_window,
    };
    writer.write(&Record::Meta(meta)).map_err(Error::Output)?;
    for source in &sources {
        writer
            .write(&Record::Source(source.clone()))
            .map_err(Error::Output)?;
    }
    // Task names as they are now (perf only reports a comm when it changes), like perf
    // record's synthesized events.
    let comms = pid.map_or_else(Vec::new, |pid| current_comms(pid, start_ns));
    for record in &comms {
        writer.write(record).map_err(Error::Output)?;
    }
    writer.flush().map_err(Error::Output)?;
    for probe in &probes {
        probe.enable()?;
    }
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    let mut what = names.join(", ");
    if args.switches {
        what.push_str(if what.is_empty() {
            "context switches"
        } else {
            ", context switches"
        });
    }
    let target = match (&launched, args.pid) {
        (Some(_), _) => format!(" in `{}`", args.command.join(" ")),
        (None, Some(pid)) => format!(" in process {pid}"),
        (None, None) => String::new(),
    };
    eprintln!(
        "Recording {what}{target} to {}... Hit Ctrl-C to end.",
        if stdout {
            "standard output".into()
        } else {
            args.output.display().to_string()
        }
    );
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }
    let started = Instant::now();
    // A data breakpoint traps after the access: the instruction that made it ends just before
    // the reported ip.
    let mut symbolizer = Symbolizer::default();
    symbolizer.trap_after = true;
    if let (Some(pid), Some(process)) = (pid, process) {
        symbolizer.adopt(pid, process);
    }
    let live = match args.live {
        true => {
            let mut decoder = ItemDecoder::default();
            for source in &sources {
                decoder.item(Record::Source(source.clone()));
            }
            for comm in comms {
                decoder.item(comm);
            }
            let mut out = TimelineWriter::new(std::io::stdout().lock(), Format::Text, start_ns);
            out.header().map_err(Error::Output)?;
            Some((decoder, out))
        }
        false => None,
    };
    let mut sink = RecordSink {
        live,
        rings: &mut rings,
        side: &mut side,
        reorder: Reorder::new(args.reorder_window),
        writer,
        watch_slots: watched.iter().map(|w| w.slot.id).collect(),
        slots: sources
            .iter()
            .filter_map(|s| match s.what {
                SourceKind::Probe { slot, .. } | SourceKind::Watch { slot, .. } => {
                    Some((slot, s.id))
                }
                _ => None,
            })
            .collect(),
        per_source: vec![0; sources.len()],
        switches: 0,
        tasks: 0,
        symbolized: HashSet::new(),
        symbolizer,
        error: None,
    };
    let mut fds = sink.rings.raw_fds();
    fds.extend(sink.side.raw_fds());
    let end = event_loop.run(&mut sink, fds, launched.as_mut(), args.duration)?;
    sink.finish()?;
    let (produced, _) = bpf.stats()?;
    let lost_bpf = bpf.lost_per_cpu()?;
    let stats = tracefile::Stats {
        lost_side: sink.side.lost.iter().map(|(c, n)| (*c, *n)).collect(),
        lost_bpf: lost_bpf.clone(),
        late: sink.reorder.late,
        malformed: sink.side.malformed + sink.rings.losses().malformed,
        produced,
    };
    let RecordSink {
        mut writer,
        per_source,
        switches,
        tasks,
        ..
    } = sink;
    writer
        .write(&Record::Stats(stats.clone()))
        .map_err(Error::Output)?;
    let (records, bytes) = (writer.records + 1, writer.bytes + 8);
    writer.finish().map_err(Error::Output)?;
    summary(
        &sources,
        &per_source,
        switches,
        tasks,
        &stats,
        records,
        bytes,
        &end,
        started,
    );
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
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

#[allow(clippy::too_many_arguments)]
fn summary(
    sources: &[tracefile::Source],
    per_source: &[u64],
    switches: u64,
    tasks: u64,
    stats: &tracefile::Stats,
    records: u64,
    bytes: u64,
    end: &End,
    started: Instant,
) {
    let why = match end {
        End::Interrupted => "interrupted".to_string(),
        End::Duration => "duration reached (-d)".to_string(),
        End::Count | End::TargetGone => "done".to_string(),
        End::CommandExited(code) => format!("command exited with status {code}"),
    };
    eprintln!(
        "\nRecorded {records} records ({:.1} KiB) in {:.2} s, {why}",
        bytes as f64 / 1024.0,
        started.elapsed().as_secs_f64()
    );
    for (source, n) in sources.iter().zip(per_source) {
        eprintln!("  {:<40} {n:>10}", source.name);
    }
    if switches > 0 {
        eprintln!("  {:<40} {switches:>10}", "context switches");
    }
    eprintln!("  {:<40} {tasks:>10}", "comm/fork/exit");
    let lost_bpf: u64 = stats.lost_bpf.iter().map(|(_, n)| n).sum();
    let lost_side: u64 = stats.lost_side.iter().map(|(_, n)| n).sum();
    if lost_bpf > 0 {
        let per_cpu: Vec<String> = (stats.lost_bpf.iter())
            .map(|(c, n)| format!("CPU {c}: {n}"))
            .collect();
        eprintln!(
            "lost {lost_bpf} probe/watch events ({}): raise --ring-pages",
            per_cpu.join(", ")
        );
    }
    if lost_side > 0 {
        eprintln!("lost {lost_side} sample/scheduler records: raise --ring-pages or lower -F");
    }
    if stats.late > 0 {
        eprintln!(
            "{} records arrived after their reorder window and are out of order: raise --reorder-window",
            stats.late
        );
    }
    if stats.malformed > 0 {
        eprintln!("{} ring records could not be parsed", stats.malformed);
    }
}

struct RecordSink<'a, W: Write> {
    /// `--live`: records are also decoded and printed as they are written.
    live: Option<(ItemDecoder, TimelineWriter<std::io::StdoutLock<'static>>)>,
    rings: &'a mut OutputRings,
    side: &'a mut SideRings,
    reorder: Reorder<Record>,
    writer: tracefile::Writer<W>,
    watch_slots: Vec<u32>,
    /// BPF slot -> source id.
    slots: HashMap<u32, u32>,
    per_source: Vec<u64>,
    switches: u64,
    tasks: u64,
    /// (pid, ip) already written as symbol records.
    symbolized: HashSet<(u32, u64)>,
    symbolizer: Symbolizer,
    error: Option<std::io::Error>,
}

impl<W: Write> RecordSink<'_, W> {
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
                    self.per_source[*source as usize] += 1;
                }
                if self.watch_slots.contains(&e.slot) {
                    self.snapshot_symbol(e);
                }
            }
            Record::Sample(s) => self.per_source[s.source as usize] += 1,
            Record::Switch(_) => self.switches += 1,
            Record::Task(_) => self.tasks += 1,
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
        let now = crate::session::monotonic_ns();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_targets_take_an_access_type_and_length() {
        let sym = |name: &str| WatchTarget::Symbol {
            file: None,
            name: name.into(),
            offset: 0,
        };
        let (t, k, l) = parse_watch("counter").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::W, None));
        let (t, k, l) = parse_watch("counter:rw").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::Rw, None));
        let (t, k, l) = parse_watch("counter:w:4").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::W, Some(4)));
        let (t, k, _) = parse_watch("libc.so.6:errno:rw").unwrap();
        assert_eq!(
            (t, k),
            (
                WatchTarget::Symbol {
                    file: Some("libc.so.6".into()),
                    name: "errno".into(),
                    offset: 0
                },
                WatchType::Rw
            )
        );
        let (t, _, _) = parse_watch("libc.so.6:errno").unwrap();
        assert!(matches!(t, WatchTarget::Symbol { file: Some(_), .. }));
        let err = parse_watch("counter:w:3").unwrap_err().to_string();
        assert_eq!(err, "watch length 3 in 'counter:w:3' is not 1, 2, 4 or 8");
    }
}
