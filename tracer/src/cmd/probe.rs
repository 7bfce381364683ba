//! `tracer probe`: kernel functions, user functions and tracepoints, one typed line per hit, or
//! counted in the kernel (`--count-by/--sum/--hist`).
//!
//! Each probe opens one perf event (pid -1, CPU 0: a probe's BPF program runs for every hit
//! anyway) and attaches its own program slot with `PERF_EVENT_IOC_SET_BPF`; the pid, tid,
//! comm, CPU, cgroup and `-- COMMAND` filters run in the BPF program.

use hashbrown::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use tracer_common::AggValue;

use crate::bpf::Bpf;
use crate::cli::ProbeArgs;
use crate::kernel::tracefs::Tracefs;
use crate::output::counts::Stamp;
use crate::output::events::{Decoded, EventWriter, Format as OutputFormat};
use crate::output::summary::{Banner, Summary, Table};
use crate::plan::{self, Aggregation, ProbePlan};
use crate::probe::aggregate::{self, Counted};
use crate::probe::follow::Follower;
use crate::probe::values::Values;
use crate::probe::{self, AttachOptions, Attacher, Probe};
use crate::session::{self, Hold, Outcome, OutputRings, RunEnd, Session, Sink, Transport};
use crate::stacks::Symbolizer;
use crate::Error;

pub fn run(args: ProbeArgs) -> Result<i32, Error> {
    let plan = plan::probe_plan(&args, &session::ThisMachine)?;
    plan.notes.iter().for_each(crate::output::notes::note);
    let out = crate::output::destination(plan.output.file.as_deref())?;
    let fs = Tracefs::locate()?;
    let specs = probe::expand(&plan.specs, &fs)?;
    crate::launch::raise_open_files(specs.len() as u64);
    // Fork the command (held before exec) before any thread exists.
    let mut session = Session::start(&plan.whom, Hold::BeforeExec, args.command_end.at_end())?;
    let rename = probe::rename_tracepoint(&fs);
    let mut options = attach_options(&plan, session.is_launched());
    options.dispatch = probe::attach::dispatch(&specs);
    let ringbuf = (plan.transport == Transport::Ringbuf)
        .then(|| session::ringbuf_size(plan.ring_pages, plan.wakeup_events));
    let sizing = options.sizing(&specs, &fs, rename.is_some(), plan.debug_bpf, ringbuf);
    let mut bpf = Bpf::load_with(sizing)?;
    let mut rings = OutputRings::for_transport(
        &mut bpf,
        plan.transport,
        plan.ring_pages,
        plan.wakeup_events,
    )?;
    // Before any probe: raw tracepoint slots run from their attach on.
    session.cache_comms(&mut bpf, rename)?;
    session.follow_before_probes(&mut bpf, &fs)?;
    let attaching = std::time::Instant::now();
    let many = specs.len() > tracer_common::TRACEPOINT_SLOTS as usize;
    if many {
        crate::output::notes::attaching(specs.len());
    }
    let probes = Attacher::new(&fs, options).attach_all(&mut bpf, &specs)?;
    if many {
        crate::output::notes::attached(probes.len(), attaching.elapsed());
    }
    session.follow(&mut bpf, &fs)?;
    if plan.follow {
        session.follow_adopted(&mut bpf, &fs, plan.whom.pids())?;
    }
    let banner = banner(&plan, &probes, session.whom());
    session.begin(&banner)?;
    for probe in &probes {
        probe.enable()?;
    }
    match plan.counted_in_kernel() {
        Some(_) => count(session, &mut bpf, &probes, &plan, &rings, out, &fs),
        None => stream(session, &mut bpf, probes, &plan, &mut rings, out, &fs),
    }
}

/// What every probe of the run shares: the filters (tracer's own work is never reported; a
/// `-- COMMAND` is followed in BPF), stacks and aggregation.
fn attach_options(plan: &ProbePlan, launched: bool) -> AttachOptions<'_> {
    let base = tracer_common::SlotConfig {
        strlen: plan.strlen,
        ..crate::probe::attach::base_config(&plan.whom, &plan.scope, plan.follow, launched)
    };
    AttachOptions {
        base,
        pid: plan.whom.pid(),
        kprobe_interface: plan.kprobe_interface,
        stack: plan.stack,
        aggregation: plan.counted_in_kernel(),
        filter: plan.value_filter.as_ref(),
        dispatch: false,
        whole_record: false,
    }
}

fn banner(plan: &ProbePlan, probes: &[Probe], whom: Option<String>) -> Banner {
    let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
    Banner {
        verb: match plan.aggregation {
            Some(_) => "Counting",
            None => "Tracing",
        },
        what: match names.as_slice() {
            [one] => one.to_string(),
            _ if names.len() <= 4 => format!("{} probes ({})", names.len(), names.join(", ")),
            // Hundreds of names say less than the patterns that chose them.
            _ => {
                let specs: Vec<String> = plan.specs.iter().map(ToString::to_string).collect();
                format!("{} probes ({})", names.len(), specs.join(", "))
            }
        },
        whom,
        detail: probe::trampoline::banner_detail(probes.iter().map(|p| p.via)),
    }
}

/// Streams every hit as a line (or JSON object), then the per-probe summary.
fn stream(
    mut session: Session,
    bpf: &mut Bpf,
    probes: Vec<Probe>,
    plan: &ProbePlan,
    rings: &mut OutputRings,
    out: crate::output::Output,
    fs: &Tracefs,
) -> Result<i32, Error> {
    let start_ns = session::monotonic_ns();
    let mut writer = EventWriter::new(out, plan.output.format, start_ns, session::wall_offset_ns());
    // `--call-graph dwarf` counts: the hits stream to a tally, reported at the end.
    let tally = plan.aggregation.as_ref().map(probe::tally::Tally::new);
    if tally.is_none() {
        // Flushed before the command runs: it writes to the same terminal.
        (writer.header().and_then(|()| writer.flush())).map_err(Error::Output)?;
    }
    let by_slot = (probes.iter().enumerate())
        .map(|(i, p)| (p.slot.id, i))
        .collect();
    // Streamed user stacks of a process gone before its events are read (a short command, a
    // loaded machine) are named from the kernel's mmap records, as counted ones are.
    let tracker = match user_stacks(plan) {
        true => Some(probe::profile::MapsTracker::open(session.pid())?),
        false => None,
    };
    let symbolizer = Symbolizer::for_stacks(bpf, plan.stack);
    let mut state = LoopState {
        tracker,
        by_slot,
        probes: (probes.into_iter())
            .map(|probe| Streamed {
                named: probe.decoder.symbol_columns(),
                probe,
                delivered: 0,
                faults: 0,
                after_count: 0,
            })
            .collect(),
        rings,
        writer: &mut writer,
        bpf,
        count: plan.count,
        delivered: 0,
        reported_lost: 0,
        started: Instant::now(),
        hinted: false,
        symbolizer,
        follower: Follower::new(fs),
        tally,
    };
    let ring_fds = state.rings.raw_fds();
    let mut outcome = session.run(&mut state, ring_fds, plan.duration)?;
    if let Some(tally) = &state.tally {
        let stamp = Stamp {
            time_s: state.started.elapsed().as_secs_f64(),
            number: 1,
            header: false,
            last: true,
        };
        let text = tally.report().render(plan.output.format, &stamp);
        let out = state.writer.out();
        (out.write_all(text.as_bytes()).and_then(|()| out.flush())).map_err(Error::Output)?;
    }
    debug_notes(
        state.bpf,
        state
            .probes
            .iter()
            .map(|p| (p.probe.slot.id, p.probe.name.as_str())),
    );
    if state.count.is_some_and(|n| state.delivered >= n) {
        outcome.end = RunEnd::Count;
    }
    stream_summary(&state, &outcome, plan)?.print();
    let (_, lost) = state.bpf.stats()?;
    if plan.fail_on_loss && lost > 0 {
        return Err(Error::Runtime {
            message: format!("{lost} events were lost (--fail-on-loss)"),
            hints: vec![format!("raise --ring-pages (now {})", plan.ring_pages)],
        });
    }
    Ok(outcome.exit_code())
}

/// The rest of a `--count-by`/`--sum`/`--hist` run: nothing is streamed; the counts are read
/// every interval and at the end, then a summary of hits and of hits that could not be
/// counted (map full).
fn count(
    mut session: Session,
    bpf: &mut Bpf,
    probes: &[Probe],
    plan: &ProbePlan,
    rings: &OutputRings,
    out: crate::output::Output,
    fs: &Tracefs,
) -> Result<i32, Error> {
    let agg = (plan.aggregation.as_ref()).expect("counted runs have an aggregation");
    // Counted user stacks are symbolized at the reports, when short processes are gone:
    // their mappings come from the kernel's mmap/exec/fork records (opened before the
    // command is let go, to see its exec).
    let tracker = match user_stacks(plan) {
        true => Some(probe::profile::MapsTracker::open(session.pid())?),
        false => None,
    };
    let started = Instant::now();
    let symbolizer = Symbolizer::for_stacks(bpf, plan.stack);
    let mut sink = CountSink {
        tracker,
        bpf,
        probes: (probes.iter())
            .map(|p| Counted {
                name: &p.name,
                slot: &p.slot,
                sources: &p.sources,
                decoder: &p.decoder,
            })
            .collect(),
        agg,
        symbolizer,
        out,
        format: plan.output.format,
        started,
        last: started,
        intervals: 0,
        previous: Default::default(),
        uncounted: 0,
        attached: probes,
        follower: Follower::new(fs),
    };
    let outcome = session.run(&mut sink, rings.raw_fds(), plan.duration)?;
    debug_notes(sink.bpf, sink.probes.iter().map(|p| (p.slot.id, p.name)));
    sink.print(false)?;
    let bpf = &*sink.bpf;
    let (hits, failed) = bpf.stats()?;
    let filtered = bpf.filtered()?;
    let missed = bpf.missed();
    let mut notes = crate::output::notes::skipped(missed, bpf.bookkeeping_missed());
    if failed > 0 {
        notes.push(format!(
            "not counted: the count map holds {} keys, each kept while its process runs (-I reports what changed; it does not empty the map: it frees the keys of processes that have exited); use fewer or coarser --count-by keys",
            tracer_common::AGG_ENTRIES
        ));
    }
    notes.extend(
        sink.symbolizer
            .summary()
            .map(|line| format!("stacks: {line}")),
    );
    let tail = match plan.value_filter {
        Some(_) => format!("{failed} not counted, up to {missed} missed, {filtered} filtered out"),
        None => format!("{failed} not counted, up to {missed} missed"),
    };
    Summary {
        count: hits - filtered,
        unit: "hits counted in the kernel".into(),
        seconds: outcome.elapsed.as_secs_f64(),
        why: outcome.why(0, "events"),
        tail,
        table: None,
        notes,
    }
    .print();
    Ok(outcome.exit_code())
}

/// A probe and what the streamed run printed of it.
struct Streamed {
    /// The values `usym()` names, by index (`Decoder::symbol_columns`).
    named: Vec<usize>,
    probe: Probe,
    delivered: u64,
    /// Struct member reads that failed (bad pointers), printed as `?`.
    faults: u64,
    /// Events that arrived after `-c` was reached: drained, counted, not printed.
    after_count: u64,
}

/// Whether user addresses are named (user stacks, `usym()` values): the mappings of the
/// traced processes are then followed, so that one gone before its events are read is named.
fn user_stacks(plan: &ProbePlan) -> bool {
    plan.specs.iter().any(|spec| {
        let user = matches!(spec.target, plan::Target::User { .. });
        let usym = (spec.args.iter()).any(|a| plan::reader(a).0 == plan::Reader::Usym);
        usym || crate::stacks::flags_for(plan.stack, user) & tracer_common::SLOT_STACK_USER != 0
    })
}

struct LoopState<'a, W: std::io::Write> {
    /// With user stacks: the mappings of processes from the kernel's records.
    tracker: Option<probe::profile::MapsTracker>,
    probes: Vec<Streamed>,
    /// Index in `probes` by slot id: a run may have hundreds of probes.
    by_slot: HashMap<u32, usize>,
    rings: &'a mut OutputRings,
    writer: &'a mut EventWriter<W>,
    bpf: &'a mut Bpf,
    count: Option<u64>,
    delivered: u64,
    reported_lost: u64,
    started: Instant,
    hinted: bool,
    symbolizer: Symbolizer,
    /// User probes follow their files (a deploy, an upgrade) in long runs.
    follower: Follower,
    /// `--call-graph dwarf` counts: each hit is counted here instead of printed.
    tally: Option<probe::tally::Tally>,
}

impl<W: std::io::Write> Sink for LoopState<'_, W> {
    fn stop(&mut self) -> Result<(), Error> {
        Ok(self.bpf.stop()?)
    }

    fn drain(&mut self) -> Result<bool, Error> {
        self.print_events()
    }

    fn tick(&mut self) -> Result<bool, Error> {
        debug_notes(
            self.bpf,
            self.probes
                .iter()
                .map(|p| (p.probe.slot.id, p.probe.name.as_str())),
        );
        self.report_losses()?;
        let probes = self.probes.iter().map(|s| &s.probe);
        (self.follower.check(self.bpf, probes))
            .into_iter()
            .for_each(crate::output::notes::note);
        // Records drained on time, whether events come or not (its rings are not woken).
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.drain();
        }
        if !self.hinted && self.started.elapsed() > Duration::from_secs(3) {
            self.hinted = true;
            self.no_hit_hints();
        }
        Ok(false)
    }
}

impl<W: std::io::Write> LoopState<'_, W> {
    /// Reports losses since the last report, from the exact BPF-side counters.
    fn report_losses(&mut self) -> Result<(), Error> {
        let (_, lost) = self.bpf.stats()?;
        if lost > self.reported_lost {
            crate::output::notes::lost(format_args!(
                "lost {} events (ring full): raise --ring-pages",
                lost - self.reported_lost
            ));
            self.reported_lost = lost;
        }
        Ok(())
    }

    /// Drains every ring, prints the events in time order; true once `-c` is reached.
    fn print_events(&mut self) -> Result<bool, Error> {
        let mut batch = self.rings.drain_batch();
        batch.events.sort_by_key(|(e, _)| e.time_ns);
        let tracker = self.tracker.as_mut();
        let symbolizer = &mut self.symbolizer;
        let now = session::monotonic_ns;
        probe::profile::before_batch(tracker, symbolizer, self.bpf, &batch.events, now)?;
        let strings = &batch.strings;
        for (event, range) in &batch.events {
            let Some(streamed) = (self.by_slot.get(&event.slot)).map(|&i| &mut self.probes[i])
            else {
                continue;
            };
            if self.count.is_some_and(|n| self.delivered >= n) {
                streamed.after_count += 1;
                continue;
            }
            streamed.delivered += 1;
            streamed.faults += u64::from(Values::faults(event));
            self.delivered += 1;
            let probe = &streamed.probe;
            let (strings, top) =
                probe::strings::split_top(&strings[range.clone()], probe.stack_top);
            let (mut args, ret, errno) = probe::decode(&probe.decoder, event, strings);
            let symbolizer = &mut self.symbolizer;
            probe::decode::name_functions(&mut args, &streamed.named, event.pid(), symbolizer);
            let entry_ret = match probe.at_entry {
                true => event.data[tracer_common::word::ENTRY_RET],
                false => 0,
            };
            let stacks = self.symbolizer.stacks(self.bpf, event, entry_ret, top)?;
            if let Some(tally) = self.tally.as_mut() {
                tally.add(event, &probe.name, stacks);
                continue;
            }
            let decoded = Decoded {
                event,
                probe: &probe.name,
                args,
                ret,
                errno,
                stacks,
            };
            self.writer.write(&decoded).map_err(Error::Output)?;
        }
        self.writer.flush().map_err(Error::Output)?;
        Ok(self.count.is_some_and(|n| self.delivered >= n))
    }

    /// One hint per kernel probe that has not fired in its first seconds.
    fn no_hit_hints(&self) {
        for probe in self.probes.iter().map(|s| &s.probe) {
            let Some(function) = &probe.kernel_function else {
                continue;
            };
            let hits = self.bpf.slot_stats(&probe.slot).map_or(1, |(hits, _)| hits);
            if hits == 0 {
                crate::output::notes::hint(format_args!(
                    "{} has not fired in 3 s: the function may be inlined into its callers on this kernel{}",
                    probe.name,
                    if function == "do_sys_open" { "; try do_sys_openat2" } else { "; try its callers" }
                ));
            }
        }
    }
}

/// Events printed, hits and losses per probe, stacks resolved, failed member reads, and the
/// losses per CPU with the flag that fixes them.
fn stream_summary<W: std::io::Write>(
    state: &LoopState<'_, W>,
    outcome: &Outcome,
    plan: &ProbePlan,
) -> Result<Summary, Error> {
    let bpf = &*state.bpf;
    let (_, lost) = bpf.stats()?;
    let filtering = plan.value_filter.is_some();
    let shown = match state.tally {
        Some(_) => "COUNTED",
        None => "PRINTED",
    };
    let mut table = Table {
        header: ["PROBE", "HITS", shown, "LOST"].map(String::from).to_vec(),
        rows: Vec::new(),
        widths: vec![10, 10, 8],
    };
    if filtering {
        table.header.push("FILTERED".into());
        table.widths.push(10);
    }
    let mut filtered_total = 0;
    // Hundreds of probes: the rows of those that fired, and how many did not.
    let quiet_rows = state.probes.len() > tracer_common::TRACEPOINT_SLOTS as usize;
    let mut silent = 0;
    for s in &state.probes {
        let (hits, failed) = bpf.slot_stats(&s.probe.slot)?;
        if quiet_rows && hits == 0 {
            silent += 1;
            continue;
        }
        let mut row = vec![
            s.probe.name.clone(),
            hits.to_string(),
            s.delivered.to_string(),
            failed.to_string(),
        ];
        if filtering {
            let filtered = bpf.slot_filtered(&s.probe.slot)?;
            filtered_total += filtered;
            row.push(filtered.to_string());
        }
        table.rows.push(row);
    }
    let mut notes: Vec<String> = state
        .symbolizer
        .summary()
        .map(|l| format!("stacks: {l}"))
        .into_iter()
        .collect();
    if silent > 0 {
        notes.push(format!("{silent} probes without hits not listed"));
    }
    notes.extend(crate::output::notes::skipped(
        bpf.missed(),
        bpf.bookkeeping_missed(),
    ));
    for s in state.probes.iter().filter(|p| p.faults > 0) {
        notes.push(format!(
            "{}: {} struct member reads failed (bad or paged-out pointers), printed as ?",
            s.probe.name, s.faults
        ));
    }
    let after: Vec<String> = (state.probes.iter())
        .filter(|s| s.after_count > 0)
        .map(|s| format!("{} {}", s.after_count, s.probe.name))
        .collect();
    if !after.is_empty() {
        notes.push(format!(
            "not printed, after -c {}: {} (HITS = PRINTED + LOST{} + these)",
            plan.count.unwrap_or_default(),
            after.join(", "),
            if filtering { " + FILTERED" } else { "" }
        ));
    }
    if lost > 0 {
        let per_cpu: Vec<String> = (bpf.lost_per_cpu()?.iter())
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("CPU {c}: {n}"))
            .collect();
        notes.push(format!(
            "lost per CPU: {}; raise --ring-pages (now {}) or trace fewer events",
            per_cpu.join(", "),
            plan.ring_pages
        ));
    }
    Ok(Summary {
        count: state.delivered,
        unit: match state.tally {
            Some(_) => "hits counted in tracer".into(),
            None => "events".into(),
        },
        seconds: outcome.elapsed.as_secs_f64(),
        why: outcome.why(state.delivered, "events"),
        tail: match filtering {
            true => format!("{lost} lost, {filtered_total} filtered out"),
            false => format!("{lost} lost"),
        },
        table: Some(table),
        notes,
    })
}

/// The event loop's sink in aggregation mode: nothing is streamed; reports are printed every
/// interval and once at the end.
struct CountSink<'a, W: Write> {
    /// With user stacks: the mappings of processes from the kernel's records.
    tracker: Option<probe::profile::MapsTracker>,
    /// Hits not counted (count map full) up to the last report.
    uncounted: u64,
    bpf: &'a mut Bpf,
    probes: Vec<Counted<'a>>,
    agg: &'a Aggregation,
    symbolizer: Symbolizer,
    out: W,
    format: OutputFormat,
    started: Instant,
    last: Instant,
    intervals: u64,
    /// Totals at the last report (intervals print the difference).
    previous: HashMap<aggregate::CellKey, AggValue>,
    /// The probes, whose user files are followed (a deploy, an upgrade) in long runs.
    attached: &'a [Probe],
    follower: Follower,
}

impl<W: Write> CountSink<'_, W> {
    /// Prints a report of what was counted since the last one (`interval`) or in all.
    fn print(&mut self, interval: bool) -> Result<(), Error> {
        // Interval reports forget exited processes once their last hits are printed (the run
        // holds the recent ones only); asked before the read, which then has all their hits.
        let gone = match interval {
            true => aggregate::gone(&self.previous),
            false => Default::default(),
        };
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.lend_to(&mut self.symbolizer);
        }
        let mut report = aggregate::report(
            self.bpf,
            &self.probes,
            self.agg,
            &mut self.symbolizer,
            &mut self.previous,
        )?;
        let (_, failed) = self.bpf.stats()?;
        report.uncounted = failed - std::mem::replace(&mut self.uncounted, failed);
        let stamp = Stamp {
            time_s: self.started.elapsed().as_secs_f64(),
            number: self.intervals + 1,
            header: self.agg.interval.is_some(),
            last: !interval,
        };
        let text = report.render(self.format, &stamp);
        self.intervals += 1;
        (self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush()))
        .map_err(Error::Output)?;
        if !gone.is_empty() {
            aggregate::evict(self.bpf, &mut self.previous, &gone, &mut self.symbolizer)?;
        }
        if let Some(tracker) = self.tracker.as_mut() {
            // Exited processes that own no cell are not wanted again; those printed and
            // evicted are forgotten with them; the symbolizer keeps only the owners' maps.
            let owners = aggregate::owners(&self.previous);
            tracker.forget(&gone);
            tracker.prune(&owners);
            let unowned = tracker.take_back(&owners);
            self.symbolizer.forget(&unowned, &Default::default());
        }
        Ok(())
    }
}

impl<W: Write> Sink for CountSink<'_, W> {
    fn streams(&self) -> bool {
        false
    }

    fn stop(&mut self) -> Result<(), Error> {
        Ok(self.bpf.stop()?)
    }

    fn drain(&mut self) -> Result<bool, Error> {
        Ok(false)
    }

    fn tick(&mut self) -> Result<bool, Error> {
        debug_notes(self.bpf, self.probes.iter().map(|p| (p.slot.id, p.name)));
        (self.follower.check(self.bpf, self.attached))
            .into_iter()
            .for_each(crate::output::notes::note);
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.drain();
        }
        if let Some(interval) = self.agg.interval {
            if self.last.elapsed() >= interval {
                self.last = Instant::now();
                self.print(true)?;
            }
        }
        Ok(false)
    }
}

/// `--debug-bpf`: what the programs said since the last tick, as `bpf:` notes, each naming
/// its probe (the programs log numbers only: the slot, the reason, the CPU and the task).
fn debug_notes<'a>(bpf: &Bpf, probes: impl Iterator<Item = (u32, &'a str)> + Clone) {
    for message in bpf.debug_messages() {
        crate::output::notes::bpf(crate::output::notes::describe_drop(
            &message,
            probes.clone(),
        ));
    }
}
