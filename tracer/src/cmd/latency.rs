//! `tracer latency`: how long calls take, as in-kernel histograms: a function's entry and return,
//! or any start/end pair of probes and tracepoints, with outliers streamed as they happen.

use std::collections::BTreeMap;

use tracer_common::{
    word, Event, HistKey, HIST_BUCKETS, HIST_MAX, HIST_MIN, HIST_SUM, LATENCY_SLOT,
};

use crate::bpf::Bpf;
use crate::cli::LatencyArgs;
use crate::kernel::format::Value;
use crate::kernel::tracefs::Tracefs;
use crate::output::events::Format;
use crate::output::hist::Histogram;
use crate::output::latency::{Histograms, Outlier};
use crate::output::summary::{Banner, Summary};
use crate::plan::latency::{latency_plan, LatencyBy, LatencyPlan};
use crate::probe;
use crate::session::{self, Hold, Outcome, OutputRings, Session, Sink};

use crate::stacks::Symbolizer;
use crate::Error;

pub fn run(args: LatencyArgs) -> Result<i32, Error> {
    let plan = latency_plan(&args, &session::ThisMachine)?;
    plan.notes.iter().for_each(crate::output::notes::note);
    let out = crate::output::destination(plan.output.file.as_deref())?;
    let fs = Tracefs::locate()?;
    // Stopped right after its exec: its executable is mapped and can be read for the stacks
    // of outliers even if it exits before they are printed.
    let mut session = Session::start(&plan.whom, Hold::AfterExec, args.command_end.at_end())?;
    let (mut bpf, mut pair) = probe::latency::attach(&plan, &fs, session.is_launched())?;
    let mut rings = OutputRings::open(&mut bpf, 16, session::quarter_full(16))?;
    session.follow(&mut bpf, &fs)?;
    if let Some(pid) = plan.whom.pid().filter(|_| plan.follow) {
        session.follow_adopted(&mut bpf, &fs, &[pid])?;
    }
    let what = match &plan.by {
        Some(LatencyBy::Function(names)) => format!("latency of {}", names.join(", ")),
        _ => format!("latency of {} -> {}", plan.start, plan.end),
    };
    // Streamed user stacks: the mappings of the command's processes from the kernel's
    // records, for the libraries it maps after it was read. Opened before the banner: a
    // process started on seeing it has its exec and program recorded.
    let tracker = (probe::latency::copies_stack_top(&plan))
        .then(|| probe::profile::MapsTracker::open(session.pid()))
        .transpose()?;
    session.begin(&Banner {
        verb: "Tracing",
        what,
        whom: session.whom(),
        detail: probe::trampoline::banner_detail(pair.via.iter().copied()),
    })?;
    pair.enable()?;
    let values = std::iter::once(pair.start_values.take())
        .chain(pair.more.iter_mut().map(|more| more.values.take()))
        .collect();
    let start = (values, pair.start_format.take());
    let by_names = std::mem::take(&mut pair.by_names);
    let mut sink = LatencySink::new(&mut bpf, &mut rings, &plan, out, (start, by_names));
    // Read before it runs: a command that exits before its last outliers are printed still
    // resolves from this.
    let adopted = (session
        .pid()
        .filter(|_| plan.stack.is_some() && session.is_launched()))
    .and_then(|pid| Some((pid, crate::kernel::symbols::Process::new(pid).ok()?)));
    if let Some((pid, process)) = adopted {
        sink.symbolizer.adopt(pid, process);
    }
    sink.tracker = tracker;
    sink.follow = Some(Following {
        pair: &mut pair,
        fs: &fs,
        plan: &plan,
        checked: std::time::Instant::now(),
    });
    let ring_fds = sink.rings.raw_fds();
    let outcome = session.run(&mut sink, ring_fds, plan.duration)?;
    sink.print_histograms()?;
    sink.summary(&outcome, &plan)?.print();
    drop(sink);
    drop(pair);
    Ok(outcome.exit_code())
}

struct LatencySink<'a, W: std::io::Write> {
    bpf: &'a mut Bpf,
    rings: &'a mut OutputRings,
    out: W,
    format: Format,
    linear_step: Option<u64>,
    by: Option<crate::plan::latency::LatencyBy>,
    by_names: probe::latency::ValueNames,
    interval: Option<std::time::Duration>,
    last_interval: std::time::Instant,
    start_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC: JSON's `time_unix_ns`.
    wall_offset_ns: i64,
    outliers: u64,
    /// Totals at the last report, per cell (-I prints differences).
    previous: std::collections::HashMap<HistKey, u64>,
    /// The start is a probe: outliers show its arguments, named and typed (of each function,
    /// with several).
    start_values: Vec<Option<probe::values::Values>>,
    /// The start is a tracepoint: outliers show its record's fields.
    start_format: Option<crate::kernel::format::Format>,
    /// The end is a return probe: outliers show the return value.
    end_ret: bool,
    /// The end is the start function's return: its value is typed as the function returns it.
    own_ret: bool,
    /// `--stack-at start`: outliers' stacks are their start's.
    stack_at_start: bool,
    /// Outlier stacks (-s).
    symbolizer: Symbolizer,
    /// With streamed user stacks: the mappings of processes from the kernel's records.
    tracker: Option<probe::profile::MapsTracker>,
    /// The pair, whose user ends follow their files (a deploy, an upgrade) in long runs.
    follow: Option<Following<'a>>,
}

/// What following the pair's files takes, and when they were last checked (once a second:
/// a `stat` of each).
struct Following<'a> {
    pair: &'a mut probe::latency::LatencyPair,
    fs: &'a Tracefs,
    plan: &'a LatencyPlan,
    checked: std::time::Instant,
}

/// An outlier's start record's fields: its bytes 8..56 are the start's argument words, 56..64
/// `word::LAT_START_EXTRA`; fields past them show as `?`, and variable-length ones
/// (`__data_loc`, stored past the fixed fields) are left out.
fn start_record(format: &crate::kernel::format::Format, e: &Event) -> Vec<(String, Value)> {
    use crate::kernel::format::FieldKind;
    let mut record = [0u8; 64];
    let words = (e.data[word::LAT_ARG0..word::LAT_ARG0 + word::ARGS].iter())
        .chain([&e.fields[word::LAT_START_EXTRA]]);
    for (chunk, w) in record[8..].chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let variable = |name: &str| {
        (format.field(name)).is_some_and(|f| matches!(f.kind, FieldKind::DataLoc { .. }))
    };
    (format.decode(&record).into_iter())
        .filter(|(name, _)| !name.starts_with("__") && !variable(name))
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

/// The task that started an outlier's call (pid, tid, comm); the end's where the start did not
/// say (no comm: outliers were not asked for when it started; an idle task's pid is 0).
fn start_task(e: &Event) -> (u32, u32, String) {
    let pid_tgid = e.fields[word::LAT_START_TASK];
    if e.fields[word::LAT_START_COMM] == 0 {
        let comm = String::from_utf8_lossy(e.comm()).into_owned();
        return (e.pid(), e.tid(), comm);
    }
    let mut comm = [0u8; 16];
    comm[..8].copy_from_slice(&e.fields[word::LAT_START_COMM].to_ne_bytes());
    comm[8..].copy_from_slice(&e.fields[word::LAT_START_COMM + 1].to_ne_bytes());
    let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
    let comm = String::from_utf8_lossy(&comm[..end]).into_owned();
    ((pid_tgid >> 32) as u32, pid_tgid as u32, comm)
}

/// When an outlier's call started: its end's time less its duration.
fn started_ns(e: &Event) -> u64 {
    e.time_ns.saturating_sub(e.data[word::LAT_DURATION])
}

/// An outlier's start arguments and members (`word::LAT_ARG0..`) as the start probe's values
/// decode them.
fn start_args(
    values: &probe::values::Values,
    e: &Event,
    read: &mut [Option<Value>; tracer_common::STR_READS],
) -> Vec<(String, Value)> {
    let call = probe::latency::outliers::start_event(values, e);
    (values.decode(&call, read).into_iter())
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

/// An outlier as drained: the event, its copy of the user stack's top, its strings by read.
type Outlying = (
    Event,
    Option<Box<[u8]>>,
    [Option<Value>; tracer_common::STR_READS],
);

/// How an outlier's start is shown: a probe's values (each function's), or a tracepoint's
/// format.
type StartDecoders = (
    Vec<Option<probe::values::Values>>,
    Option<crate::kernel::format::Format>,
);

impl<'a> LatencySink<'a, crate::output::Output> {
    fn new(
        bpf: &'a mut Bpf,
        rings: &'a mut OutputRings,
        plan: &LatencyPlan,
        out: crate::output::Output,
        (start, by_names): (StartDecoders, probe::latency::ValueNames),
    ) -> Self {
        let symbolizer = Symbolizer::for_stacks(bpf, plan.stack);
        LatencySink {
            bpf,
            rings,
            out,
            format: plan.output.format,
            linear_step: plan.linear_step,
            by: plan.by.clone(),
            by_names,
            interval: plan.interval,
            last_interval: std::time::Instant::now(),
            previous: Default::default(),
            start_ns: session::monotonic_ns(),
            wall_offset_ns: session::wall_offset_ns(),
            outliers: 0,
            start_values: start.0,
            start_format: start.1,
            end_ret: plan.end.ret,
            own_ret: plan.end.ret && plan.end.target == plan.start.target,
            stack_at_start: plan.stack_at_start,
            symbolizer,
            tracker: None,
            follow: None,
        }
    }
}

impl<W: std::io::Write> LatencySink<'_, W> {
    /// The direct caller an outlier's user stack is missing (`word::ENTRY_RET`, set by an end
    /// at a function's first instruction), or 0. At a return end that word is the return value.
    fn entry_ret(&self, e: &Event) -> u64 {
        match self.end_ret {
            true => 0,
            false => e.data[word::ENTRY_RET],
        }
    }

    /// An outlier's stacks: taken at its end, or at its start (`--stack-at start`), whose
    /// time is the end's less the call's duration.
    fn stacks_of(
        &mut self,
        e: &Event,
        top: Option<&[u8]>,
    ) -> Result<Vec<crate::output::stack::Stack>, Error> {
        if !self.stack_at_start {
            let entry_ret = self.entry_ret(e);
            return self.symbolizer.stacks(self.bpf, e, entry_ret, top);
        }
        let started = started_ns(e);
        let pid = start_task(e).0;
        (self.symbolizer).stacks_taken_at(self.bpf, (e, pid), (started, started))
    }

    /// Calls measured, starts, ends without a start, and what else went unmatched.
    fn summary(&self, outcome: &Outcome, plan: &LatencyPlan) -> Result<Summary, Error> {
        let [entries, exits, no_entry, outliers_lost, replaced, filtered] =
            self.bpf.latency_stats()?;
        let in_flight = self.bpf.latency_in_flight()?;
        let unmatched = match plan.key {
            Some(_) => "tracing began mid-call, or no start had its key",
            None => "tracing began mid-call",
        };
        let mut notes = Vec::new();
        if replaced > 0 {
            notes.push(format!(
                "{replaced} starts had no end before the next start of the same key: their end was missed (kretprobe maxactive overflow, recursion, or a call left another way)"
            ));
        }
        if in_flight > 0 {
            notes.push(format!(
                "{in_flight} calls had no end: still running at exit, or their thread exited mid-call"
            ));
        }
        if plan.slower_than.is_some() {
            notes.push(format!(
                "{} outliers shown, {outliers_lost} lost (ring full)",
                self.outliers
            ));
        }
        // Starts and ends the kernel never showed the programs (one already running there).
        notes.extend(crate::output::notes::skipped(
            self.bpf.missed(),
            self.bpf.bookkeeping_missed(),
        ));
        notes.extend(self.symbolizer.summary().map(|l| format!("stacks: {l}")));
        Ok(Summary {
            count: exits,
            unit: "calls measured".into(),
            seconds: outcome.elapsed.as_secs_f64(),
            why: outcome.why(exits, "calls"),
            tail: match plan.value_filter {
                Some(_) => format!(
                    "{entries} starts, {filtered} calls filtered out, {no_entry} ends without a start ({unmatched})"
                ),
                None => format!("{entries} starts, {no_entry} ends without a start ({unmatched})"),
            },
            table: None,
            notes,
        })
    }

    fn group_name(&self, key: &HistKey) -> String {
        probe::latency::group_name(self.by.as_ref(), &self.by_names, key)
    }

    /// Reads the in-kernel histograms and prints one per group: with -I, what changed since
    /// the last report (differences of running totals, and the maximum since then).
    fn print_histograms(&mut self) -> Result<(), Error> {
        let totals = self.bpf.latency_histogram(self.interval.is_some())?;
        let mut cells = Vec::new();
        let mut called = std::collections::HashSet::new();
        for (key, total) in totals {
            let value = match key.bucket {
                HIST_MAX | HIST_MIN => total,
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
                // Stored as `!min`, so the kernel keeps it by maximum.
                HIST_MIN => h.min_ns = !value,
                b if b < HIST_BUCKETS => h.buckets[b as usize] = value,
                _ => {}
            }
        }
        let report = Histograms {
            time_s: (session::monotonic_ns() - self.start_ns) as f64 / 1e9,
            interval: self.interval.is_some(),
            groups: (groups.iter())
                .map(|(group, h)| {
                    let key = HistKey {
                        group: *group,
                        bucket: 0,
                    };
                    (self.group_name(&key), h)
                })
                .collect(),
        };
        report
            .write(&mut self.out, self.format)
            .map_err(Error::Output)?;
        self.out.flush().map_err(Error::Output)
    }
}

impl<W: std::io::Write> Sink for LatencySink<'_, W> {
    fn stop(&mut self) -> Result<(), Error> {
        Ok(self.bpf.stop()?)
    }

    /// Outliers (calls slower than --slower-than), as they happen.
    fn drain(&mut self) -> Result<bool, Error> {
        // Each outlier with its copy of the user stack's top, where the end took one (read 0),
        // or else the start's strings.
        let mut batch: Vec<Outlying> = Vec::new();
        // The tracker is there exactly when outliers copy the user stack's top.
        let copies_top = self.tracker.is_some();
        self.rings.drain(|e, strings| {
            let (top, read) = match copies_top {
                true => (crate::probe::strings::split_top(strings, Some(0)).1, None),
                false => (None, Some(crate::probe::strings::values(strings))),
            };
            batch.push((*e, top.map(Box::from), read.unwrap_or_default()));
        });
        batch.sort_by_key(|(e, _, _)| e.time_ns);
        // Stacks are read by when they were taken: at the start, with --stack-at start.
        let taken = |e: &Event| match self.stack_at_start {
            true => Event {
                time_ns: started_ns(e),
                field_faults: 0,
                ..*e
            },
            false => *e,
        };
        let events: Vec<_> = batch.iter().map(|(e, _, _)| (taken(e), 0..0)).collect();
        let (tracker, clock) = (self.tracker.as_mut(), session::monotonic_ns);
        probe::profile::before_batch(tracker, &mut self.symbolizer, self.bpf, &events, clock)?;
        for (e, top, read) in batch.iter_mut().filter(|(e, _, _)| e.slot == LATENCY_SLOT) {
            self.outliers += 1;
            let (pid, tid, comm) = start_task(e);
            let ended_in = (tid != e.tid()).then(|| crate::output::latency::EndTask {
                pid: e.pid(),
                tid: e.tid(),
                comm: String::from_utf8_lossy(e.comm()).into_owned(),
            });
            // Several functions: which one, by the index its start kept.
            let (index, function) = match &self.by {
                Some(LatencyBy::Function(names)) => {
                    let index = e.fields[word::LAT_START_EXTRA];
                    (index as usize, names.get(index as usize).cloned())
                }
                _ => (0, None),
            };
            let values = self.start_values.get(index).and_then(Option::as_ref);
            let args = match (values, &self.start_format) {
                (Some(values), _) => Some(start_args(values, e, read)),
                (None, Some(format)) => Some(start_record(format, e)),
                (None, None) => None,
            };
            let outlier = Outlier {
                kind: "outlier",
                time_ns: e.time_ns,
                time_unix_ns: crate::output::json::unix_ns(e.time_ns, Some(self.wall_offset_ns)),
                pid,
                tid,
                comm,
                duration_ns: e.data[word::LAT_DURATION],
                ended_in,
                function,
                args,
                ret: (self.end_ret).then(|| {
                    let raw = e.data[word::LAT_RETURN];
                    (values.filter(|_| self.own_ret)).map_or(raw as i64, |v| v.returned(raw))
                }),
                stacks: self.stacks_of(e, top.as_deref())?,
            };
            (outlier.write(&mut self.out, self.format, self.start_ns)).map_err(Error::Output)?;
        }
        self.out.flush().map_err(Error::Output)?;
        Ok(false)
    }

    /// -I: print and reset the histograms every interval. With -p, the process's exit ends
    /// the run.
    fn tick(&mut self) -> Result<bool, Error> {
        // Records drained on time, whether outliers come or not (its rings are not woken).
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.drain();
        }
        if let Some(f) = (self.follow.as_mut()).filter(|f| f.checked.elapsed().as_secs() >= 1) {
            f.checked = std::time::Instant::now();
            (f.pair.follow(self.bpf, f.fs, f.plan))
                .into_iter()
                .for_each(crate::output::notes::note);
        }
        if let Some(interval) = self.interval {
            if self.last_interval.elapsed() >= interval {
                self.last_interval = std::time::Instant::now();
                self.print_histograms()?;
            }
        }
        Ok(false)
    }
}
