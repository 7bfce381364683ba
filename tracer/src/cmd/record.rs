//! `tracer record`: probes, watchpoints, sampled counters and scheduler/task records from one
//! run, on one clock (CLOCK_MONOTONIC: `bpf_ktime_get_ns()` in BPF, `use_clockid` on every
//! perf event), merged across CPUs into one ordered stream and written to a trace file.
//!
//! Two kinds of per-CPU rings are drained: the BPF output rings (probe and watchpoint hits, as
//! `tracer probe` and `tracer watch` produce them) and one "side" ring per CPU that a dummy
//! software event owns (comm/fork/exit and context-switch records) and every sampled counter
//! on that CPU writes into (`PERF_EVENT_IOC_SET_OUTPUT`, samples told apart by
//! `PERF_SAMPLE_IDENTIFIER`).

use tracer_common::SlotConfig;

use crate::bpf::{Bpf, Room, Rooms, Sizing};
use crate::breakpoint::{self, Watch, WatchOptions};
use crate::cli::RecordArgs;
use crate::kernel::symbols::Process;
use crate::kernel::tracefs::Tracefs;
use crate::launch;
use crate::output::summary::{Banner, Summary, Table};
use crate::perf::{BreakpointType, EventKind, Sampling};
use crate::plan::record::{record_plan, RecordPlan};
use crate::plan::stat::Source as StatSource;
use crate::plan::{ProbeSpec, Scope};
use crate::probe::profile::MapsTracker;
use crate::probe::{self, AttachOptions, Attacher, Probe};
use crate::session::recorder::{self, Counts, RecordSink};
use crate::session::side::{CounterSpec, SideRings};
use crate::session::{self, Hold, Outcome, OutputRings, Session};
use crate::stacks::Symbolizer;
use crate::tracefile::{self, SourceKind};
use crate::Error;

pub fn run(args: RecordArgs) -> Result<i32, Error> {
    let plan = record_plan(&args, &session::ThisMachine)?;
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
    let mut session = Session::start(&plan.whom, Hold::AfterExec, args.command_end.at_end())?;
    let mut bpf = Bpf::load_with(Sizing {
        uses: uses(&plan, &specs, &fs),
        filter_globs: (plan.value_filter.as_ref()).map(|f| f.sizing()),
        rooms: Rooms::of([(Room::Dispatch, probe::attach::dispatch(&specs))]),
        ..Sizing::default()
    })?;
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
    let mut side = SideRings::open(
        &counter_ids,
        plan.sampling,
        (plan.switches, plan.call_graph),
        task,
        pages,
    )?;
    session.follow(&mut bpf, &fs)?;
    // The mappings every process makes from now on (perf record's mmap records): a process
    // gone before its samples are named, or a library it mapped after its last sample was
    // read, is still named from them.
    let maps = match plan.counters.is_empty() {
        true => None,
        false => Some(MapsTracker::open(session.pid())?),
    };
    // Created once everything is attached: a failed start leaves no empty file behind.
    let out = recorder::create_output(&plan, data_out)?;
    let start_ns = session::monotonic_ns();
    // The names of the tasks running now: the recorded process's threads, or every task.
    let comms = match session.pid() {
        Some(pid) => recorder::current_comms(pid, start_ns),
        None => recorder::all_comms(start_ns),
    };
    let writer = recorder::write_header(out, &plan, start_ns, &sources, &comms)?;
    for probe in &probes {
        probe.enable()?;
    }
    // A data breakpoint traps after the access: the instruction that made it ends just before
    // the reported ip.
    let mut symbolizer = Symbolizer::default();
    symbolizer.trap_after = true;
    // With -g, the kernel names the kernel frames of the samples' call chains.
    if plan.call_graph.is_some() {
        symbolizer.name_kernel_with(bpf.kernel_namer());
    }
    if let (Some(pid), Some(process)) = (session.pid(), process) {
        symbolizer.adopt(pid, process);
    }
    // Samples are named as they are drained: a command that has exited by then is still
    // named from its program's mappings, read now, while it is held at its exec (read once
    // it runs, they could catch the dynamic loader mid-way; libraries it maps later are read
    // when its first sample is, while it lives).
    if let (Some(pid), false) = (session.pid(), plan.counters.is_empty()) {
        symbolizer.remember(pid);
    }
    session.begin(&banner(&plan, &sources, session.whom()))?;
    let live = match plan.live {
        true => Some(recorder::live_view(&sources, comms, start_ns)?),
        false => None,
    };
    let mut sink = RecordSink::new(
        live,
        recorder::Inputs {
            rings: &mut rings,
            side: &mut side,
            bpf: &bpf,
        },
        writer,
        &plan,
        &sources,
        symbolizer,
    );
    sink.watch_slots = watched.iter().map(|w| w.slot.id).collect();
    sink.maps = maps;
    sink.follow = Some((&probes, probe::follow::Follower::new(&fs)));
    let mut fds = sink.rings.raw_fds();
    fds.extend(sink.side.raw_fds());
    let outcome = session.run(&mut sink, fds, plan.duration)?;
    sink.finish()?;
    let (records, bytes, stats, counts) = sink.close(&bpf)?;
    let mut summary = summary(&sources, &counts, &stats, (records, bytes), &outcome);
    if plan.value_filter.is_some() {
        summary.tail = format!("{} probe hits filtered out", bpf.filtered()?);
    }
    (summary.notes).extend(crate::output::notes::skipped(
        bpf.missed(),
        bpf.bookkeeping_missed(),
    ));
    summary.print();
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

/// The parts of the programs a recording uses. Without watchpoints, what its probes need (as
/// `tracer probe` works it out): with `--filter`, 5.10's verifier did not finish the
/// tracepoint program in a minute when every other part was in it too (stacks, member reads,
/// counting), and finishes at once without them.
fn uses(plan: &RecordPlan, specs: &[ProbeSpec], fs: &Tracefs) -> u32 {
    let filter = (plan.value_filter.as_ref()).map_or(0, |_| tracer_common::USES_VALUE_FILTER);
    if !plan.watches.is_empty() {
        let usdt = AttachOptions::default().uses(specs, fs) & tracer_common::USES_USDT;
        return tracer_common::USES_ALL | filter | usdt;
    }
    let options = AttachOptions {
        base: probe::attach::base_config(&plan.whom, &Scope::default(), false, true),
        filter: plan.value_filter.as_ref(),
        ..AttachOptions::default()
    };
    options.uses(specs, fs) | tracer_common::USES_TRACKED
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
    let options = AttachOptions {
        base: probe::attach::base_config(&plan.whom, &Scope::default(), false, launched),
        pid: plan.whom.pid(),
        filter: plan.value_filter.as_ref(),
        dispatch: probe::attach::dispatch(specs),
        whole_record: true,
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
        Some(pid) if !plan.watches.is_empty() => Some(Process::adopt(pid)?),
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
    if counts.maps_lost > 0 {
        notes.push(format!(
            "lost {} mmap records: frames of processes that exited may be unnamed",
            counts.maps_lost
        ));
    }
    if let Some(unwound) = &counts.unwound {
        notes.extend(unwound.said());
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
