//! `tracer latency`: how long calls take, as in-kernel histograms: a function's entry and return,
//! or any start/end pair of probes and tracepoints, with outliers streamed as they happen.

use std::collections::BTreeMap;

use tracer_common::{
    Event, HistKey, LatConfig, LatKeySrc, HIST_BUCKETS, HIST_MAX, HIST_SUM, LATENCY_SLOT,
    LAT_BY_COMM, LAT_BY_CPU, LAT_BY_NONE, LAT_BY_PID, LAT_BY_TID, LAT_KEY_PARTS,
    SLOT_FILTER_TRACKED, TRACK_ACTIVE,
};

use crate::bpf::{Bpf, Sizing, SlotKind};
use crate::cli::{LatencyArgs, LatencyBy};
use crate::kernel::format::Format as RecordFormat;
use crate::kernel::tracefs::Tracefs;
use crate::launch;
use crate::output::events::Format;
use crate::output::hist::{human, Histogram};
use crate::plan::{self, ProbeSpec, Target};
use crate::probe::{open_event, start_tracking};
use crate::session::{End, EventLoop, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::Error;

fn usage(message: String, hint: &str) -> Error {
    Error::usage(message, vec![hint.to_string()])
}

/// The start and end probes of what is measured.
fn pair(args: &LatencyArgs) -> Result<(ProbeSpec, ProbeSpec), Error> {
    match (&args.target, &args.from, &args.to) {
        (Some(target), None, None) => {
            let spec = plan::parse_bare_spec(target, "latency")?;
            match spec.target {
                Target::Kernel { .. } | Target::User { .. } if !spec.ret => {
                    let exit = ProbeSpec { ret: true, ..spec.clone() };
                    Ok((spec, exit))
                }
                _ => Err(usage(
                    format!("'{target}' is not a function"),
                    "give a kernel function (FUNC) or uprobe:PATH:SYMBOL, or a pair with --from SPEC --to SPEC",
                )),
            }
        }
        (None, Some(from), Some(to)) => Ok((
            plan::parse_bare_spec(from, "latency")?,
            plan::parse_bare_spec(to, "latency")?,
        )),
        _ => Err(usage(
            "give a function, or both --from and --to".into(),
            "e.g. tracer latency vfs_read, or --from syscalls:sys_enter_read --to syscalls:sys_exit_read",
        )),
    }
}

/// One end of the pair: its spec and, for a tracepoint, its record format.
type PairEnd<'a> = (&'a ProbeSpec, &'a Option<RecordFormat>);

/// `--key A[,B,C]` (the same names at both ends) or `START_KEYS/END_KEYS`: where each key part
/// is read at the start and at the end.
fn keys(key: &str, start: PairEnd, end: PairEnd) -> Result<(KeySrcs, KeySrcs), Error> {
    let (a, b) = key.split_once('/').unwrap_or((key, key));
    let (a, b) = (part_names(a), part_names(b));
    if a.len() != b.len() {
        return Err(usage(
            format!(
                "--key {key}: {} parts at the start, {} at the end",
                a.len(),
                b.len()
            ),
            "give the same number of comma-separated parts on both sides of /",
        ));
    }
    if a.len() > LAT_KEY_PARTS || a.iter().chain(&b).any(|n| n.is_empty()) {
        return Err(usage(
            format!("--key {key}: give 1 to {LAT_KEY_PARTS} names, comma-separated"),
            "e.g. --key dev,sector or --key pid/next_pid",
        ));
    }
    Ok((key_srcs(&a, start)?, key_srcs(&b, end)?))
}

type KeySrcs = [LatKeySrc; LAT_KEY_PARTS];

fn part_names(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).collect()
}

/// Where the named key parts are read at one end.
fn key_srcs(names: &[&str], (spec, format): PairEnd) -> Result<KeySrcs, Error> {
    let mut out = KeySrcs::default();
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = match format {
            Some(format) => {
                let Some(field) = format.field(name) else {
                    let names: Vec<&str> = format.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(usage(
                        format!("{} has no field '{name}'", format.name),
                        &format!("its fields: {}", names.join(", ")),
                    ));
                };
                if field.offset > 0xff || field.size == 0 || field.size > 8 {
                    return Err(usage(
                        format!(
                            "{}'s field '{name}' cannot be a key ({} bytes at offset {})",
                            format.name, field.size, field.offset
                        ),
                        "key by integer fields of up to 8 bytes in the first 256 bytes of the record",
                    ));
                }
                tracer_common::src(field.offset as u32, field.size as u32, false)
            }
            None if spec.ret => {
                return Err(usage(
                    format!("{spec} is a return probe: it has no '{name}' to key by"),
                    "a return probe's end is matched by thread: drop --key, or end at a probe or tracepoint that has the key",
                ))
            }
            None => match name.strip_prefix("arg").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n < 6 => tracer_common::src(8 * n, 8, false),
                _ => {
                    return Err(usage(
                        format!("{spec} has no key '{name}'"),
                        "probes are keyed by their argument registers: arg0..arg5",
                    ))
                }
            },
        };
    }
    Ok(out)
}

pub fn run(args: LatencyArgs) -> Result<i32, Error> {
    let (start, end) = pair(&args)?;
    if args.pid.is_some() && !args.command.is_empty() {
        return Err(usage(
            "--pid and -- COMMAND cannot be combined".into(),
            "measure a running process or a command",
        ));
    }
    let mut filter = plan::build_filter(
        args.pid,
        None,
        args.comm.as_deref(),
        args.cpus.as_deref(),
        args.cgroup.as_deref(),
    )?;
    let linear_step = args
        .linear
        .as_deref()
        .map(plan::parse_duration_ns)
        .transpose()
        .map_err(|e| usage(e, "e.g. --linear 1ms"))?;
    let slower_than = args
        .slower_than
        .as_deref()
        .map(plan::parse_duration_ns)
        .transpose()
        .map_err(|e| usage(e, "e.g. --slower-than 10ms"))?;
    if args.stack.is_some() && slower_than.is_none() {
        return Err(usage(
            "-s prints the stacks of outliers: it needs --slower-than".into(),
            "e.g. --slower-than 10ms -s",
        ));
    }
    let fs = Tracefs::locate()?;

    let mut launched = if args.command.is_empty() {
        None
    } else {
        // Stopped right after its exec: its executable is mapped and can be read for the
        // stacks of outliers even if it exits before they are printed.
        Some(launch::launch_stopped_at_exec(&args.command)?)
    };
    let mut bpf = Bpf::load_with(Sizing {
        latency: true,
        stacks: args.stack.is_some(),
        ..Sizing::default()
    })?;
    let mut rings = OutputRings::open(&mut bpf, 16, crate::session::quarter_full(16))?;
    filter.exclude_tgid = std::process::id();
    if launched.is_some() {
        filter.flags |= SLOT_FILTER_TRACKED;
    }
    let mut interface = None;
    let pid = args.pid;
    let entry = open_event(&fs, &start, &mut interface, None, pid, 0)?;
    let exit = open_event(&fs, &end, &mut interface, None, pid, 1)?;
    let (entry_key, exit_key) = match &args.key {
        None => Default::default(),
        Some(key) => keys(key, (&start, &entry.format), (&end, &exit.format))?,
    };
    let by = match args.by {
        None => LAT_BY_NONE,
        Some(LatencyBy::Comm) => LAT_BY_COMM,
        Some(LatencyBy::Pid) => LAT_BY_PID,
        Some(LatencyBy::Tid) => LAT_BY_TID,
        Some(LatencyBy::Cpu) => LAT_BY_CPU,
    };
    let stack_flags =
        crate::stacks::flags_for(args.stack, matches!(end.target, Target::User { .. }));
    let config = LatConfig {
        filter,
        by,
        stack_flags,
        entry_key,
        exit_key,
        linear_step: linear_step.unwrap_or(0),
        slower_than: slower_than.unwrap_or(0),
    };
    let kind = |format: &Option<RecordFormat>| {
        if format.is_some() {
            SlotKind::Tracepoint
        } else {
            SlotKind::Probe
        }
    };
    let (entry_prog, exit_prog) =
        bpf.load_latency(kind(&entry.format), kind(&exit.format), end.ret, config)?;
    entry.event.set_bpf(bpf.named_program_fd(entry_prog)?)?;
    exit.event.set_bpf(bpf.named_program_fd(exit_prog)?)?;
    let _tracking = match launched.as_mut() {
        Some(child) => {
            let events = start_tracking(&mut bpf, &fs)?;
            // Stopped after its exec: it is the command already.
            bpf.track(child.pid(), TRACK_ACTIVE)?;
            events
        }
        None => Vec::new(),
    };
    let event_loop = EventLoop::new()?;
    // Exit first: an end with no start is only counted, never mismatched.
    exit.event.enable(false)?;
    entry.event.enable(false)?;
    eprintln!("Tracing latency of {start} -> {end}... Hit Ctrl-C to end.");
    // Read before it runs: a command that exits before its last outliers are printed still
    // resolves from this.
    let adopted = launched
        .as_ref()
        .filter(|_| args.stack.is_some())
        .and_then(|c| Some((c.pid(), crate::kernel::symbols::Process::new(c.pid()).ok()?)));
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }
    let mut sink = LatencySink {
        bpf: &mut bpf,
        rings: &mut rings,
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        format: args.output,
        linear_step,
        by,
        interval: args.interval,
        last_interval: std::time::Instant::now(),
        previous: Default::default(),
        start_ns: crate::session::monotonic_ns(),
        outliers: 0,
        watched_pid: args.pid,
        start_args: !matches!(start.target, Target::Tracepoint { .. }),
        end_ret: end.ret,
        symbolizer: Symbolizer::default(),
    };
    if let Some((pid, process)) = adopted {
        sink.symbolizer.adopt(pid, process);
    }
    let ring_fds = sink.rings.raw_fds();
    let end_reason = event_loop.run(&mut sink, ring_fds, launched.as_mut(), args.duration)?;
    sink.print_histograms()?;
    let [entries, exits, no_entry, outliers_lost, replaced] = sink.bpf.latency_stats()?;
    let in_flight = sink.bpf.latency_in_flight()?;
    let why = match end_reason {
        End::CommandExited(code) => format!("command exited with status {code}"),
        End::Duration => "duration reached (-d)".into(),
        End::TargetGone => format!("process {} exited", args.pid.unwrap_or(0)),
        _ => "interrupted".into(),
    };
    let unmatched = match args.key {
        Some(_) => "tracing began mid-call, or no start had its key",
        None => "tracing began mid-call",
    };
    eprintln!("\n{exits} calls measured, {why}; {entries} starts, {no_entry} ends without a start ({unmatched})");
    if replaced > 0 {
        eprintln!(
            "{replaced} starts had no end before the next start of the same key: their end was missed (kretprobe maxactive overflow, recursion, or a call left another way)"
        );
    }
    if in_flight > 0 {
        eprintln!(
            "{in_flight} calls had no end: still running at exit, or their thread exited mid-call"
        );
    }
    if slower_than.is_some() {
        eprintln!(
            "{} outliers shown, {outliers_lost} lost (ring full)",
            sink.outliers
        );
    }
    if let Some(line) = sink.symbolizer.summary() {
        eprintln!("stacks: {line}");
    }
    drop(sink);
    drop((entry, exit));
    Ok(match end_reason {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

struct LatencySink<'a, W: std::io::Write> {
    bpf: &'a mut Bpf,
    rings: &'a mut OutputRings,
    out: W,
    format: Format,
    linear_step: Option<u64>,
    by: u32,
    interval: Option<std::time::Duration>,
    last_interval: std::time::Instant,
    start_ns: u64,
    outliers: u64,
    /// -p: the run ends when this process exits.
    watched_pid: Option<u32>,
    /// Totals at the last report, per cell (-I prints differences).
    previous: std::collections::HashMap<HistKey, u64>,
    /// The start is a probe: outliers show its argument registers.
    start_args: bool,
    /// The end is a return probe: outliers show the return value.
    end_ret: bool,
    /// Outlier stacks (-s).
    symbolizer: Symbolizer,
}

impl<W: std::io::Write> LatencySink<'_, W> {
    fn group_name(&self, key: &HistKey) -> String {
        let number = u64::from_ne_bytes(key.group[..8].try_into().expect("8 bytes"));
        match self.by {
            LAT_BY_COMM => {
                let end = key.group.iter().position(|&b| b == 0).unwrap_or(16);
                format!("comm {}", String::from_utf8_lossy(&key.group[..end]))
            }
            LAT_BY_PID => format!("pid {number}"),
            LAT_BY_TID => format!("tid {number}"),
            LAT_BY_CPU => format!("cpu {number}"),
            _ => String::new(),
        }
    }

    /// Reads the in-kernel histograms and prints one per group: with -I, what changed since
    /// the last report (differences of running totals, and the maximum since then).
    fn print_histograms(&mut self) -> Result<(), Error> {
        let totals = self.bpf.latency_histogram(self.interval.is_some())?;
        let mut cells = Vec::new();
        let mut called = std::collections::HashSet::new();
        for (key, total) in totals {
            let value = match key.bucket {
                HIST_MAX => total,
                _ => total - self.previous.insert(key, total).unwrap_or(0),
            };
            if key.bucket < HIST_BUCKETS && value > 0 {
                called.insert(key.group);
            }
            cells.push((key, value));
        }
        // Groups with no call since the last report are left out.
        cells.retain(|(key, _)| called.contains(&key.group));
        let mut groups: BTreeMap<[u8; 16], Histogram> = BTreeMap::new();
        for (key, value) in cells {
            let h = groups
                .entry(key.group)
                .or_insert_with(|| Histogram::new(self.linear_step));
            match key.bucket {
                HIST_SUM => h.sum_ns = value,
                HIST_MAX => h.max_ns = value,
                b if b < HIST_BUCKETS => h.buckets[b as usize] = value,
                _ => {}
            }
        }
        let stamp = (crate::session::monotonic_ns() - self.start_ns) as f64 / 1e9;
        if groups.is_empty() && self.format == Format::Text {
            writeln!(self.out, "no calls").map_err(Error::Output)?;
        }
        for (group, h) in &groups {
            let name = self.group_name(&HistKey {
                group: *group,
                bucket: 0,
            });
            match self.format {
                Format::Text => {
                    if self.interval.is_some() {
                        writeln!(self.out, "\n[{stamp:.3} s]").map_err(Error::Output)?;
                    }
                    if !name.is_empty() {
                        writeln!(self.out, "\n{name}").map_err(Error::Output)?;
                    }
                    write!(self.out, "{}", h.render()).map_err(Error::Output)?;
                }
                Format::Json => {
                    let mut v = h.json();
                    v["group"] = name.into();
                    v["time_s"] = stamp.into();
                    writeln!(self.out, "{v}").map_err(Error::Output)?;
                }
            }
        }
        self.out.flush().map_err(Error::Output)
    }
}

impl<W: std::io::Write> Sink for LatencySink<'_, W> {
    /// Outliers (calls slower than --slower-than), as they happen.
    fn drain(&mut self) -> Result<bool, Error> {
        let mut batch: Vec<Event> = Vec::new();
        self.rings.drain(|e| batch.push(*e));
        batch.sort_by_key(|e| e.time_ns);
        for e in batch.iter().filter(|e| e.slot == LATENCY_SLOT) {
            self.outliers += 1;
            let comm = String::from_utf8_lossy(e.comm()).into_owned();
            let args: Vec<String> = match self.start_args {
                true => e.data[1..7].iter().map(|a| format!("{a:#x}")).collect(),
                false => Vec::new(),
            };
            let ret = self.end_ret.then_some(e.data[7] as i64);
            let stacks = self.symbolizer.stacks(self.bpf, e)?;
            let time_s = e.time_ns.saturating_sub(self.start_ns) as f64 / 1e9;
            match self.format {
                Format::Text => {
                    let mut line = format!(
                        "slow: {time_s:<10.6} {}/{} {comm} took {}",
                        e.pid(),
                        e.tid(),
                        human(e.data[0])
                    );
                    if self.start_args {
                        line += &format!(" args ({})", args.join(", "));
                    }
                    if let Some(ret) = ret {
                        line += &format!(" ret {ret}");
                    }
                    writeln!(self.out, "{line}").map_err(Error::Output)?;
                    crate::output::stack::write_text(&mut self.out, &stacks)
                        .map_err(Error::Output)?;
                }
                Format::Json => {
                    let mut v = serde_json::json!({"outlier": true, "time_ns": e.time_ns, "pid": e.pid(), "tid": e.tid(), "comm": comm, "duration_ns": e.data[0]});
                    if self.start_args {
                        v["args"] = args.into();
                    }
                    if let Some(ret) = ret {
                        v["ret"] = ret.into();
                    }
                    if !stacks.is_empty() {
                        v["stack"] = crate::output::stack::json(&stacks);
                    }
                    writeln!(self.out, "{v}").map_err(Error::Output)?;
                }
            }
        }
        self.out.flush().map_err(Error::Output)?;
        Ok(false)
    }

    /// -I: print and reset the histograms every interval. With -p, the process's exit ends
    /// the run.
    fn tick(&mut self) -> Result<bool, Error> {
        if let Some(interval) = self.interval {
            if self.last_interval.elapsed() >= interval {
                self.last_interval = std::time::Instant::now();
                self.print_histograms()?;
            }
        }
        Ok(self
            .watched_pid
            .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists()))
    }
}
