//! `tracer probe`: kernel functions, user functions and tracepoints, one typed line per hit.
//!
//! Each probe opens one perf event (pid -1, CPU 0: a probe's BPF program runs for every hit
//! anyway) and attaches its own program slot with `PERF_EVENT_IOC_SET_BPF`; the pid, tid,
//! comm, CPU, cgroup and `-- COMMAND` filters run in the BPF program.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use tracer_common::{AggKey, AggValue, Event, TRACK_PENDING};

use crate::bpf::{Bpf, RingBufSize, Sizing};
use crate::cli::{ProbeArgs, Transport};
use crate::kernel::tracefs::Tracefs;
use crate::launch;
use crate::output::events::{Decoded, EventWriter, Format as OutputFormat};
use crate::perf::Wakeup;
use crate::plan::{self, Aggregation, ProbePlan};
use crate::probe::aggregate::{self, Counted};
use crate::probe::values::Values;
use crate::probe::{self, AttachOptions, Attacher, Probe};
use crate::session::{End, EventLoop, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::Error;

pub fn run(args: ProbeArgs) -> Result<i32, Error> {
    let plan = plan::probe_plan(&args)?;
    let fs = Tracefs::locate()?;
    let specs = probe::expand(&plan.specs, &fs)?;

    // Fork the command (held before exec) before any thread exists.
    let mut launched = match plan.command.is_empty() {
        true => None,
        false => Some(launch::launch(&plan.command)?),
    };
    let mut base = plan.filter;
    // tracer's own work (reading formats, draining rings) is never reported.
    base.exclude_tgid = std::process::id();
    if launched.is_some() {
        base.flags |= tracer_common::SLOT_FILTER_TRACKED;
    }
    // The comm of each hit comes from a per-CPU cache, kept right by a program on
    // task:task_rename (every kernel tracer supports has it; without it, the helper each time).
    let rename_tracepoint = fs.tracepoint_id("task", "task_rename").ok();
    // Counted hits of one task in a row on one CPU are added up in a per-CPU run first, kept
    // right by the same program (and the tracking programs, which also move the generation).
    let comm_cache = match (rename_tracepoint, &plan.aggregation) {
        (Some(_), Some(_)) => tracer_common::USES_COMM_CACHE | tracer_common::USES_RUN_COUNT,
        (Some(_), None) => tracer_common::USES_COMM_CACHE,
        (None, _) => 0,
    };
    let options = AttachOptions {
        base,
        pid: (plan.filter.tgid != 0).then_some(plan.filter.tgid),
        kprobe_interface: plan.kprobe_interface,
        stack: plan.stack,
        aggregation: plan.aggregation.as_ref(),
    };
    let mut bpf = Bpf::load_with(Sizing {
        stacks: plan.stack.is_some() || options.stack_keys(),
        counts: plan.aggregation.is_some(),
        latency: false,
        uses: options.uses(&specs) | comm_cache,
        ringbuf: ringbuf_size(&plan),
    })?;
    let mut rings = match plan.transport {
        Transport::Ringbuf => OutputRings::open_ringbuf(&mut bpf)?,
        Transport::Perf => {
            let wakeup = match plan.wakeup_events {
                Some(n) => Wakeup::Events(n),
                // Wake the reader when a quarter of the ring is full; a 100 ms tick drains the
                // rest.
                None => crate::session::quarter_full(plan.ring_pages),
            };
            OutputRings::open(&mut bpf, plan.ring_pages, wakeup)?
        }
    };
    // Before any probe: raw tracepoint slots run from their attach on, and a rename the cache's
    // program missed would leave a stale name cached.
    let _comm_cache = match rename_tracepoint {
        Some(id) => Some(probe::start_comm_cache(&mut bpf, id)?),
        None => None,
    };
    let probes = Attacher::new(&fs, options).attach_all(&mut bpf, &specs)?;
    // `-- COMMAND`: follow the command's process tree, from its exec on.
    let mut _tracking = Vec::new();
    if let Some(child) = launched.as_mut() {
        _tracking = probe::start_tracking(&mut bpf, &fs)?;
        bpf.track(child.pid(), TRACK_PENDING)?;
    }

    let event_loop = EventLoop::new()?;
    for probe in &probes {
        probe.enable()?;
    }
    let start_ns = crate::session::monotonic_ns();
    let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
    let what = if names.len() == 1 {
        names[0].to_string()
    } else {
        format!("{} probes ({})", names.len(), names.join(", "))
    };
    let verb = match plan.aggregation {
        Some(_) => "Counting",
        None => "Tracing",
    };
    match &launched {
        Some(_) => eprintln!(
            "{verb} {what} in `{}`... Hit Ctrl-C to end.",
            plan.command.join(" ")
        ),
        None => eprintln!("{verb} {what}... Hit Ctrl-C to end."),
    }
    if let Some(agg) = &plan.aggregation {
        return run_counts(bpf, &probes, agg, &plan, launched, event_loop, &rings);
    }
    let mut writer = EventWriter::new(
        std::io::BufWriter::new(std::io::stdout().lock()),
        plan.output,
        start_ns,
    );
    // Flushed before the command runs: it writes to the same terminal.
    writer
        .header()
        .and_then(|()| writer.flush())
        .map_err(Error::Output)?;
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }

    let started = Instant::now();
    let mut state = LoopState {
        probes: probes
            .into_iter()
            .map(|probe| Streamed {
                probe,
                delivered: 0,
                faults: 0,
            })
            .collect(),
        rings: &mut rings,
        writer: &mut writer,
        bpf: &bpf,
        count: plan.count,
        delivered: 0,
        reported_lost: 0,
        started,
        hinted: false,
        symbolizer: Symbolizer::default(),
    };
    let ring_fds = state.rings.raw_fds();
    let end = event_loop.run(&mut state, ring_fds, launched.as_mut(), plan.duration)?;
    let elapsed = started.elapsed();
    summary(&state, &bpf, elapsed, &end, &plan)?;
    let (_, lost) = bpf.stats()?;
    if plan.fail_on_loss && lost > 0 {
        return Err(Error::Runtime {
            message: format!("{lost} events were lost (--fail-on-loss)"),
            hints: vec![format!("raise --ring-pages (now {})", plan.ring_pages)],
        });
    }
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

/// The BPF ring buffer of `--transport ringbuf`: `--ring-pages` pages, waking the reader when
/// a quarter is full, or with `--wakeup-events N` once N events' worth of bytes (counted at the
/// size of an event without a string) are waiting.
fn ringbuf_size(plan: &ProbePlan) -> Option<RingBufSize> {
    if plan.transport != Transport::Ringbuf {
        return None;
    }
    let bytes = plan.ring_pages * crate::perf::sys::page_size();
    let wakeup_bytes = match plan.wakeup_events {
        Some(n) => u64::from(n) * Event::SHORT_SIZE as u64,
        None => bytes as u64 / 4,
    };
    Some(RingBufSize {
        bytes: bytes as u32,
        // 0 would mean the perf rings to the programs.
        wakeup_bytes: wakeup_bytes.max(1),
    })
}

/// The rest of a `--count-by`/`--sum`/`--hist` run: nothing is streamed; the counts are read
/// every interval and at the end, then a summary of hits and of hits that could not be
/// counted (map full).
fn run_counts(
    bpf: Bpf,
    probes: &[Probe],
    agg: &Aggregation,
    plan: &ProbePlan,
    mut launched: Option<launch::Launched>,
    event_loop: EventLoop,
    rings: &OutputRings,
) -> Result<i32, Error> {
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }
    let started = Instant::now();
    let mut sink = CountSink {
        bpf: &bpf,
        probes: probes
            .iter()
            .map(|p| Counted {
                name: &p.name,
                slot: &p.slot,
                sources: p.sources,
            })
            .collect(),
        agg,
        symbolizer: Symbolizer::default(),
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        format: plan.output,
        started,
        last: started,
        intervals: 0,
        previous: Default::default(),
    };
    let end = event_loop.run(&mut sink, rings.raw_fds(), launched.as_mut(), plan.duration)?;
    sink.print(false)?;
    let stacks = sink.symbolizer.summary();
    drop(sink);
    let why = end_reason(&end, started.elapsed(), 0);
    let (hits, failed) = bpf.stats()?;
    eprintln!(
        "\n{hits} hits counted in the kernel in {:.2} s, {why}; {failed} not counted",
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        eprintln!(
            "not counted: the count map holds {} keys; use fewer or coarser --count-by keys, or -I to empty it each interval",
            tracer_common::AGG_ENTRIES
        );
    }
    if let Some(line) = stacks {
        eprintln!("stacks: {line}");
    }
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

/// Why a run ended, for its summary line.
fn end_reason(end: &End, elapsed: Duration, events: u64) -> String {
    match end {
        End::Interrupted => "interrupted".to_string(),
        End::Duration => format!("after {:.1} s (-d)", elapsed.as_secs_f64()),
        End::Count => format!("after {events} events (-c)"),
        End::CommandExited(code) => format!("command exited with status {code}"),
        End::TargetGone => "the target is gone".to_string(),
    }
}
/// A probe and what the streamed run printed of it.
struct Streamed {
    probe: Probe,
    delivered: u64,
    /// Struct member reads that failed (bad pointers), printed as `?`.
    faults: u64,
}

struct LoopState<'a, W: std::io::Write> {
    probes: Vec<Streamed>,
    rings: &'a mut OutputRings,
    writer: &'a mut EventWriter<W>,
    bpf: &'a Bpf,
    count: Option<u64>,
    delivered: u64,
    reported_lost: u64,
    started: Instant,
    hinted: bool,
    symbolizer: Symbolizer,
}

impl<W: std::io::Write> Sink for LoopState<'_, W> {
    fn drain(&mut self) -> Result<bool, Error> {
        self.print_events()
    }

    fn tick(&mut self) -> Result<bool, Error> {
        self.report_losses()?;
        if !self.hinted && self.started.elapsed() > Duration::from_secs(3) {
            self.hinted = true;
            no_hit_hints(self);
        }
        Ok(false)
    }
}

impl<W: std::io::Write> LoopState<'_, W> {
    /// Reports losses since the last report, from the exact BPF-side counters.
    fn report_losses(&mut self) -> Result<(), Error> {
        let (_, lost) = self.bpf.stats()?;
        if lost > self.reported_lost {
            eprintln!(
                "lost {} events (ring full): raise --ring-pages",
                lost - self.reported_lost
            );
            self.reported_lost = lost;
        }
        Ok(())
    }

    /// Drains every ring, prints the events in time order; true once `-c` is reached.
    fn print_events(&mut self) -> Result<bool, Error> {
        let mut batch: Vec<Event> = Vec::new();
        self.rings.drain(|e| batch.push(*e));
        batch.sort_by_key(|e| e.time_ns);
        for event in &batch {
            if self.count.is_some_and(|n| self.delivered >= n) {
                break;
            }
            let Some(streamed) = self
                .probes
                .iter_mut()
                .find(|p| p.probe.slot.id == event.slot)
            else {
                continue;
            };
            streamed.delivered += 1;
            streamed.faults += u64::from(Values::faults(event));
            self.delivered += 1;
            let probe = &streamed.probe;
            let (args, ret, errno) = probe::decode(&probe.decoder, event);
            let stacks = self.symbolizer.stacks(self.bpf, event)?;
            self.writer
                .write(&Decoded {
                    event,
                    probe: &probe.name,
                    args,
                    ret,
                    errno,
                    stacks,
                })
                .map_err(Error::Output)?;
        }
        self.writer.flush().map_err(Error::Output)?;
        Ok(self.count.is_some_and(|n| self.delivered >= n))
    }
}
/// One hint per kernel probe that has not fired in its first seconds.
fn no_hit_hints<W: std::io::Write>(state: &LoopState<'_, W>) {
    let bpf = state.bpf;
    for probe in state.probes.iter().map(|s| &s.probe) {
        let Some(function) = &probe.kernel_function else {
            continue;
        };
        if bpf
            .slot_stats(&probe.slot)
            .map(|(hits, _)| hits)
            .unwrap_or(1)
            == 0
        {
            eprintln!(
                "hint: {} has not fired in 3 s: the function may be inlined into its callers on this kernel{}",
                probe.name,
                if function == "do_sys_open" { "; try do_sys_openat2" } else { "; try its callers" }
            );
        }
    }
}

fn summary<W: std::io::Write>(
    state: &LoopState<'_, W>,
    bpf: &Bpf,
    elapsed: Duration,
    end: &End,
    plan: &ProbePlan,
) -> Result<(), Error> {
    let (_, lost) = bpf.stats()?;
    let count_reached = state.count.is_some_and(|n| state.delivered >= n);
    let why = match count_reached {
        true => format!("after {} events (-c)", state.delivered),
        false => end_reason(end, elapsed, state.delivered),
    };
    eprintln!(
        "\n{} events in {:.2} s, {why}; {lost} lost",
        state.delivered,
        elapsed.as_secs_f64(),
    );
    eprintln!(
        "{:<40} {:>10} {:>10} {:>8}",
        "PROBE", "HITS", "PRINTED", "LOST"
    );
    for s in &state.probes {
        let (hits, failed) = bpf.slot_stats(&s.probe.slot)?;
        eprintln!(
            "{:<40} {:>10} {:>10} {:>8}",
            s.probe.name, hits, s.delivered, failed
        );
    }
    if let Some(line) = state.symbolizer.summary() {
        eprintln!("stacks: {line}");
    }
    for s in state.probes.iter().filter(|p| p.faults > 0) {
        eprintln!(
            "{}: {} struct member reads failed (bad or paged-out pointers), printed as ?",
            s.probe.name, s.faults
        );
    }
    if lost > 0 {
        let per_cpu: Vec<String> = bpf
            .lost_per_cpu()?
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("CPU {c}: {n}"))
            .collect();
        eprintln!(
            "lost per CPU: {}; raise --ring-pages (now {}) or trace fewer events",
            per_cpu.join(", "),
            plan.ring_pages
        );
    }
    Ok(())
}

/// The event loop's sink in aggregation mode: nothing is streamed; reports are printed every
/// interval and once at the end.
struct CountSink<'a, W: Write> {
    bpf: &'a Bpf,
    probes: Vec<Counted<'a>>,
    agg: &'a Aggregation,
    symbolizer: Symbolizer,
    out: W,
    format: OutputFormat,
    started: Instant,
    last: Instant,
    intervals: u64,
    /// Totals at the last report (intervals print the difference).
    previous: HashMap<AggKey, AggValue>,
}

impl<W: Write> CountSink<'_, W> {
    /// Prints a report of what was counted since the last one (`interval`) or in all.
    fn print(&mut self, interval: bool) -> Result<(), Error> {
        let report = aggregate::report(
            self.bpf,
            &self.probes,
            self.agg,
            &mut self.symbolizer,
            &mut self.previous,
        )?;
        let at = self.started.elapsed().as_secs_f64();
        match self.format {
            OutputFormat::Text => {
                if self.agg.interval.is_some() {
                    let what = if interval {
                        "interval"
                    } else {
                        "last interval"
                    };
                    writeln!(
                        self.out,
                        "--- {at:.2} s ({what} {}) ---",
                        self.intervals + 1
                    )
                    .map_err(Error::Output)?;
                }
                write!(self.out, "{}", report.text()).map_err(Error::Output)?;
            }
            OutputFormat::Json => {
                let mut extra = serde_json::Map::new();
                extra.insert("time_s".into(), at.into());
                extra.insert("interval".into(), (self.intervals + 1).into());
                writeln!(self.out, "{}", report.json(extra)).map_err(Error::Output)?;
            }
        }
        self.intervals += 1;
        self.out.flush().map_err(Error::Output)
    }
}

impl<W: Write> Sink for CountSink<'_, W> {
    fn drain(&mut self) -> Result<bool, Error> {
        Ok(false)
    }

    fn tick(&mut self) -> Result<bool, Error> {
        if let Some(interval) = self.agg.interval {
            if self.last.elapsed() >= interval {
                self.last = Instant::now();
                self.print(true)?;
            }
        }
        Ok(false)
    }
}
