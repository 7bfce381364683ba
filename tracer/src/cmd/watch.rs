//! `tracer watch`: hardware watchpoints on addresses or variables, reporting who touched them,
//! where, and the value before and after, without stopping the program.
//!
//! Each target gets a breakpoint perf event per thread (with `inherit`, so threads created later
//! are covered) and a BPF program (`PERF_EVENT_IOC_SET_BPF`) that records the instruction
//! pointer and the value after the access into the per-CPU output rings. With `--summary` the
//! program counts the hits in the kernel instead, keyed by thread and instruction, and only the
//! counts are read at the end.

use std::io::Write as _;
use std::time::Instant;

use tracer_common::{Event, SlotConfig, AGG_KEY_VALUE, AGG_PID, AGG_TID, SLOT_AGGREGATE};

use crate::bpf::{Bpf, Sizing};
use crate::breakpoint::{
    self, bp_type, count_hits, kind_name, mask, Watch, WatchOptions, MAX_TARGETS,
};
use crate::cli::WatchArgs;
use crate::kernel::symbols::Process;
use crate::launch::{self, Launched};
use crate::output::events::Format;
use crate::perf::BreakpointType;
use crate::plan;
use crate::probe;
use crate::session::{End, EventLoop, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::Error;

fn usage(message: String, hint: &str) -> Error {
    Error::usage(message, vec![hint.to_string()])
}

pub fn run(args: WatchArgs) -> Result<i32, Error> {
    let kind = bp_type(args.kind)?;
    let targets = args
        .targets
        .iter()
        .map(|t| plan::parse_watch_target(t))
        .collect::<Result<Vec<_>, _>>()?;
    if targets.len() > MAX_TARGETS {
        return Err(usage(
            format!(
                "{} targets given; x86 has {MAX_TARGETS} hardware breakpoint slots",
                targets.len()
            ),
            "watch at most 4 locations at once",
        ));
    }
    if let Some(len) = args.len {
        if ![1, 2, 4, 8].contains(&len) {
            return Err(usage(
                format!("--len {len} is not 1, 2, 4 or 8"),
                "watchpoints cover 1, 2, 4 or 8 aligned bytes",
            ));
        }
    }
    let modes = usize::from(args.pid.is_some())
        + usize::from(!args.command.is_empty())
        + usize::from(args.kernel);
    if modes != 1 {
        return Err(usage(
            "give exactly one of -p PID, -- COMMAND or --kernel".into(),
            "e.g. tracer watch counter -- ./prog, tracer watch -p 1234 counter, tracer watch --kernel jiffies",
        ));
    }
    if args.summary && args.count.is_some() {
        return Err(usage(
            "--summary counts every hit in the kernel; it cannot stop after N hits".into(),
            "bound the run with -d SECS, or drop --summary to stop after N printed hits",
        ));
    }
    if args.summary && args.stack.is_some() {
        return Err(usage(
            "--summary counts by thread and instruction, not by stack".into(),
            "drop -s, or drop --summary to see each hit with its stack",
        ));
    }
    if args.count == Some(0) {
        return Err(usage(
            "--count 0 would stop before the first hit".into(),
            "give a positive count",
        ));
    }

    // `-- COMMAND`: start it stopped right after its exec, so its symbols are mapped (PIE
    // included) and no write can be missed; it runs once the watchpoints are in place.
    let mut launched = if args.command.is_empty() {
        None
    } else {
        Some(launch::launch_stopped_at_exec(&args.command)?)
    };
    let pid = launched.as_ref().map(Launched::pid).or(args.pid);
    let mut process = match pid {
        Some(pid) => Some(Process::new(pid).map_err(|_| Error::Runtime {
            message: format!("no process {pid}"),
            hints: vec!["check the pid with `ps`; it may have exited".into()],
        })?),
        None => None,
    };

    // A streamed hit's comm comes from the per-CPU cache that `tracer probe` uses, kept right
    // by a program on task:task_rename (without that tracepoint: the helper each time).
    let rename_tracepoint = match args.summary {
        true => None,
        false => crate::kernel::tracefs::Tracefs::locate()
            .and_then(|fs| fs.tracepoint_id("task", "task_rename"))
            .ok(),
    };
    let mut bpf = Bpf::load_with(Sizing {
        stacks: args.stack.is_some(),
        counts: args.summary,
        uses: tracer_common::USES_ALL
            | rename_tracepoint.map_or(0, |_| tracer_common::USES_COMM_CACHE),
        ..Sizing::default()
    })?;
    // Before any watchpoint, so that no rename is missed.
    let _comm_cache = match rename_tracepoint {
        Some(id) => Some(probe::start_comm_cache(&mut bpf, id)?),
        None => None,
    };
    let template = if args.summary {
        // Keyed by process, thread and the trapping instruction pointer (data word 0).
        SlotConfig {
            flags: SLOT_AGGREGATE,
            agg: AGG_PID | AGG_TID | AGG_KEY_VALUE,
            key_src: tracer_common::src(0, 8, false),
            ..SlotConfig::default()
        }
    } else {
        SlotConfig {
            flags: crate::stacks::flags_for(args.stack, !args.kernel),
            ..SlotConfig::default()
        }
    };
    // 64 pages (256 KiB) per CPU hold about 1,100 hits: a burst of hits from several threads
    // must not outrun a reader that wakes at a quarter full (16 pages lost 2-6% of a 300-hit
    // burst from three threads on this 2-CPU machine).
    let mut rings = OutputRings::open(&mut bpf, 64, crate::session::quarter_full(64))?;
    let mut watches = Vec::new();
    let options = WatchOptions {
        kind,
        len: args.len,
        pid,
        kernel: args.kernel,
        launched: launched.is_some(),
        template,
    };
    for target in &targets {
        watches.push(breakpoint::attach(
            &mut bpf,
            target,
            &options,
            process.as_mut(),
        )?);
    }
    let event_loop = EventLoop::new()?;
    let what: Vec<String> = watches
        .iter()
        .map(|w| format!("{} ({:#x}/{})", w.name, w.addr, w.len))
        .collect();
    let whom = match (&launched, pid) {
        (Some(_), _) => format!("`{}`", args.command.join(" ")),
        (None, Some(pid)) => format!("process {pid}"),
        (None, None) => "the kernel".into(),
    };
    eprintln!(
        "Watching {} in {whom} ({}). Hit Ctrl-C to end.",
        what.join(", "),
        kind_name(kind)
    );
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.output == Format::Text && !args.summary {
        writeln!(
            out,
            "{:<10} {:<3} {:<15} {:<16} WATCH",
            "TIME(s)", "CPU", "PID/TID", "COMM"
        )
        .map_err(Error::Output)?;
        out.flush().map_err(Error::Output)?;
    }
    let start_ns = crate::session::monotonic_ns();
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }
    let started = Instant::now();
    let mut sink = WatchSink {
        watches,
        rings: &mut rings,
        out,
        format: args.output,
        start_ns,
        kind,
        count: args.count,
        delivered: 0,
        watched_pid: if launched.is_none() { args.pid } else { None },
        bpf: &bpf,
        symbolizer: Symbolizer::default(),
        summary: args.summary,
    };
    // A data breakpoint traps after the access: the instruction that made it ends just before
    // the reported ip, so that is where the hit's function and line are looked up.
    sink.symbolizer.trap_after = kind != BreakpointType::Execute;
    if let (Some(pid), Some(process)) = (pid, process) {
        sink.symbolizer.adopt(pid, process);
    }
    let ring_fds = sink.rings.raw_fds();
    let end = event_loop.run(&mut sink, ring_fds, launched.as_mut(), args.duration)?;
    summary(&mut sink, &bpf, started.elapsed().as_secs_f64(), end)?;
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

struct WatchSink<'a, W: std::io::Write> {
    watches: Vec<Watch>,
    rings: &'a mut OutputRings,
    out: W,
    format: Format,
    start_ns: u64,
    kind: BreakpointType,
    count: Option<u64>,
    delivered: u64,
    watched_pid: Option<u32>,
    bpf: &'a Bpf,
    symbolizer: Symbolizer,
    /// Counted in the kernel (`--summary`): nothing streams, the counts are read at the end.
    summary: bool,
}

impl<W: std::io::Write> WatchSink<'_, W> {
    fn print(&mut self, event: &Event) -> Result<(), Error> {
        let Some(index) = self.watches.iter().position(|w| w.slot.id == event.slot) else {
            return Ok(());
        };
        let ip = event.data[0];
        let frame = self.symbolizer.frame(event.pid(), ip);
        let (at, source) = (frame.place(), frame.source());
        let place = match &source {
            Some(line) => format!("{at} ({line})"),
            None => at.clone(),
        };
        let kind = self.kind;
        let watch = &mut self.watches[index];
        let new = (event.data[3] == 1 && kind != BreakpointType::Execute)
            .then(|| mask(event.data[2], watch.len));
        let old = watch.last;
        watch.hits += 1;
        *watch.by_tid.entry(event.tid()).or_default() += 1;
        watch.by_ip.entry(ip).or_insert((0, at.clone())).0 += 1;
        if new.is_some() {
            watch.last = new;
        }
        let show = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let change = match (kind, old, new) {
            (BreakpointType::Execute, _, _) => "executed".to_string(),
            (BreakpointType::ReadWrite, Some(o), Some(n)) if o == n => format!("{n} (unchanged)"),
            (_, old, new) => format!("{} -> {}", show(old), show(new)),
        };
        let comm = String::from_utf8_lossy(event.comm()).into_owned();
        let stacks = self.symbolizer.stacks(self.bpf, event)?;
        match self.format {
            Format::Text => {
                let secs = event.time_ns.saturating_sub(self.start_ns) as f64 / 1e9;
                writeln!(
                    self.out,
                    "{secs:<10.6} {:<3} {:<15} {comm:<16} {}: {change} at {place}",
                    event.cpu,
                    format!("{}/{}", event.pid(), event.tid()),
                    watch.name
                )
                .and_then(|()| crate::output::stack::write_text(&mut self.out, &stacks))
            }
            Format::Json => {
                let mut line = serde_json::json!({
                    "time_ns": event.time_ns,
                    "cpu": event.cpu,
                    "pid": event.pid(),
                    "tid": event.tid(),
                    "comm": comm,
                    "target": watch.name,
                    "addr": format!("{:#x}", watch.addr),
                    "old": old,
                    "new": new,
                    "ip": format!("{ip:#x}"),
                    "at": at,
                    "source": source,
                });
                if !stacks.is_empty() {
                    line["stack"] = crate::output::stack::json(&stacks);
                }
                writeln!(self.out, "{line}")
            }
        }
        .map_err(Error::Output)
    }
}

impl<W: std::io::Write> Sink for WatchSink<'_, W> {
    fn drain(&mut self) -> Result<bool, Error> {
        let mut batch: Vec<Event> = Vec::new();
        self.rings.drain(|e| batch.push(*e));
        batch.sort_by_key(|e| e.time_ns);
        for event in &batch {
            if self.count.is_some_and(|n| self.delivered >= n) {
                break;
            }
            self.delivered += 1;
            self.print(event)?;
        }
        self.out.flush().map_err(Error::Output)?;
        Ok(self.count.is_some_and(|n| self.delivered >= n))
    }

    /// A watched process (-p) that exits ends the run.
    fn tick(&mut self) -> Result<bool, Error> {
        Ok(self
            .watched_pid
            .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists()))
    }
}

fn summary<W: std::io::Write>(
    sink: &mut WatchSink<'_, W>,
    bpf: &Bpf,
    secs: f64,
    end: End,
) -> Result<(), Error> {
    let why = match end {
        End::Interrupted => "interrupted".to_string(),
        End::Duration => "duration reached (-d)".to_string(),
        End::Count => format!("after {} hits (-c)", sink.delivered),
        End::CommandExited(code) => format!("command exited with status {code}"),
        End::TargetGone => format!("process {} exited", sink.watched_pid.unwrap_or(0)),
    };
    if sink.summary {
        let counts = bpf.counts()?;
        for watch in &mut sink.watches {
            count_hits(watch, &counts, &mut sink.symbolizer);
        }
        sink.delivered = sink.watches.iter().map(|w| w.hits).sum();
    }
    let (_, lost) = bpf.stats()?;
    eprintln!(
        "\n{} hits in {secs:.2} s, {why}; {lost} lost",
        sink.delivered
    );
    if let Some(line) = sink.symbolizer.summary() {
        eprintln!("stacks: {line}");
    }
    if sink.summary {
        // The counts are what was asked for: on stdout.
        for watch in &sink.watches {
            match sink.format {
                Format::Text => write_counts(&mut sink.out, watch, None),
                Format::Json => writeln!(sink.out, "{}", counts_json(watch)),
            }
            .map_err(Error::Output)?;
        }
        return sink.out.flush().map_err(Error::Output);
    }
    for watch in &sink.watches {
        // The kernel-side count of traps that passed the filters, next to what was printed.
        let (trapped, _) = bpf.slot_stats(&watch.slot)?;
        write_counts(&mut std::io::stderr().lock(), watch, Some(trapped)).map_err(Error::Output)?;
    }
    Ok(())
}

/// A watch's hits by thread and by instruction; `trapped` is the kernel's count next to the
/// printed hits (streaming).
fn write_counts(
    out: &mut dyn std::io::Write,
    watch: &Watch,
    trapped: Option<u64>,
) -> std::io::Result<()> {
    let trapped = trapped.map_or(String::new(), |n| format!(" ({n} trapped in the kernel)"));
    writeln!(
        out,
        "{} ({:#x}/{}): {} hits{trapped}",
        watch.name, watch.addr, watch.len, watch.hits
    )?;
    for (tid, n) in &watch.by_tid {
        writeln!(out, "  thread {tid:<10} {n:>10}")?;
    }
    for (n, at) in watch.by_ip.values() {
        writeln!(out, "  at {at:<40} {n:>10}")?;
    }
    Ok(())
}

fn counts_json(watch: &Watch) -> serde_json::Value {
    serde_json::json!({
        "target": watch.name,
        "addr": format!("{:#x}", watch.addr),
        "len": watch.len,
        "hits": watch.hits,
        "threads": watch.by_tid.iter().map(|(tid, n)| serde_json::json!({"tid": tid, "hits": n})).collect::<Vec<_>>(),
        "at": watch.by_ip.iter().map(|(ip, (n, at))| serde_json::json!({"ip": format!("{ip:#x}"), "at": at, "hits": n})).collect::<Vec<_>>(),
    })
}
