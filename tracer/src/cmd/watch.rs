//! `tracer watch`: hardware watchpoints on addresses or variables, reporting who touched them,
//! where, and the value before and after, without stopping the program.
//!
//! Each target gets a breakpoint perf event per thread (with `inherit`, so threads created later
//! are covered) and a BPF program (`PERF_EVENT_IOC_SET_BPF`) that records the instruction
//! pointer and the value after the access into the per-CPU output rings. With `--summary` the
//! program counts the hits in the kernel instead, keyed by thread and instruction, and only the
//! counts are read at the end.

use std::io::Write as _;

use tracer_common::{word, Event, SlotConfig, AGG_KEY_VALUE, AGG_PID, AGG_TID, SLOT_AGGREGATE};

use crate::bpf::{Bpf, Room, Rooms, Sizing};
use crate::breakpoint::{self, count_hits, kind_name, mask, Watch, WatchOptions};
use crate::cli::WatchArgs;
use crate::kernel::symbols::Process;
use crate::output::events::Format;
use crate::output::summary::{Banner, Summary};
use crate::output::watch::{self as out, Counts, Hit, PlaceHits, ThreadHits};
use crate::perf::BreakpointType;
use crate::plan::watch::{watch_plan, WatchPlan};
use crate::plan::Whom;
use crate::probe;
use crate::session::{self, Hold, Outcome, OutputRings, Session, Sink};
use crate::stacks::Symbolizer;
use crate::tracefile::reorder::Reorder;
use crate::Error;

pub fn run(args: WatchArgs) -> Result<i32, Error> {
    let plan = watch_plan(&args, &session::ThisMachine)?;
    let out = crate::output::destination(plan.output.file.as_deref())?;
    // `-- COMMAND`: started stopped right after its exec, so its symbols are mapped (PIE
    // included) and no write can be missed; it runs once the watchpoints are in place.
    let mut session = Session::start(&plan.whom, Hold::AfterExec, args.command_end.at_end())?;
    let mut process = match session.pid() {
        Some(pid) => Some(Process::adopt(pid)?),
        None => None,
    };
    // A streamed hit's comm comes from the per-CPU comm cache.
    let rename = match plan.summary {
        true => None,
        false => (crate::kernel::tracefs::Tracefs::locate().ok())
            .and_then(|fs| probe::rename_tracepoint(&fs)),
    };
    let mut bpf = Bpf::load_with(Sizing {
        rooms: Rooms::of([
            (Room::Stacks, plan.stack.is_some()),
            (Room::Counts, plan.summary),
        ]),
        uses: load_uses(plan.summary, rename.is_some(), copies_stack_top(&plan)),
        ..Sizing::default()
    })?;
    session.cache_comms(&mut bpf, rename)?;
    // 64 pages (256 KiB) per CPU hold about 1,100 hits: a burst of hits from several threads
    // must not outrun a reader that wakes at a quarter full (16 pages lost 2-6% of a 300-hit
    // burst from three threads on this 2-CPU machine).
    let mut rings = OutputRings::open(&mut bpf, 64, session::quarter_full(64))?;
    let options = watch_options(&plan, session.pid(), session.is_launched());
    let watches = (plan.targets.iter())
        .map(|target| breakpoint::attach(&mut bpf, target, &options, process.as_mut()))
        .collect::<Result<Vec<_>, _>>()?;
    let what: Vec<String> = (watches.iter())
        .map(|w| format!("{} ({:#x}/{})", w.name, w.addr, w.len))
        .collect();
    // The command's process tree is followed so that the guard (guard.rs) can end all of it
    // should tracer be killed; without tracefs, only the command dies with tracer.
    if let Ok(fs) = crate::kernel::tracefs::Tracefs::locate() {
        session.follow(&mut bpf, &fs)?;
    }
    // With user stacks: the mappings of the command's processes from the kernel's records,
    // so that a hit printed after its process exited still names its frames (opened before
    // the banner, to see the exec of a process started on seeing it).
    let tracker = match copies_stack_top(&plan) {
        true => Some(probe::profile::MapsTracker::open(session.pid())?),
        false => None,
    };
    session.begin(&Banner {
        verb: "Watching",
        what: what.join(", "),
        whom: session.whom().or(Some("the kernel".into())),
        detail: Some(format!("({})", kind_name(plan.kind))),
    })?;
    let mut sink = WatchSink::new(watches, &mut rings, &mut bpf, &plan, out)?;
    sink.tracker = tracker;
    if let (Some(pid), Some(process)) = (session.pid(), process) {
        sink.symbolizer.adopt(pid, process);
    }
    let ring_fds = sink.rings.raw_fds();
    let outcome = session.run(&mut sink, ring_fds, plan.duration)?;
    sink.finish(&outcome)?;
    Ok(outcome.exit_code())
}

/// The parts of the programs a watch loads: streamed hits take their comm from the cache
/// when its invalidating program is attached; counted hits of one thread at one instruction
/// in a row are counted as a run (`SLOT_RUN_KEYED`).
fn load_uses(summary: bool, comm_cache: bool, stack_top: bool) -> u32 {
    let mut uses = tracer_common::USES_ALL;
    if stack_top {
        uses |= tracer_common::USES_BUFFERS;
    }
    if comm_cache {
        uses |= tracer_common::USES_COMM_CACHE;
    }
    if summary {
        uses |= tracer_common::USES_RUN_KEYED;
    }
    uses
}

/// `--summary`'s slot: counted by process, thread and the trapping instruction pointer.
fn summary_template() -> SlotConfig {
    SlotConfig {
        flags: SLOT_AGGREGATE,
        agg: AGG_PID | AGG_TID | AGG_KEY_VALUE,
        key_src: tracer_common::SRC_WATCH_IP,
        ..SlotConfig::default()
    }
}

/// Whether streamed hits copy the top of the user stack, unwound by CFI where the frame-pointer
/// walk cannot go: with user stacks, on a user address.
fn copies_stack_top(plan: &WatchPlan) -> bool {
    let kernel = plan.whom == Whom::Everyone;
    let flags = crate::stacks::flags_for(plan.stack, !kernel);
    !plan.summary && !kernel && flags & tracer_common::SLOT_STACK_USER != 0
}

/// How the plan's watchpoints are placed: streamed with stacks, or counted by process, thread
/// and the trapping instruction pointer with `--summary`.
fn watch_options(plan: &WatchPlan, pid: Option<u32>, launched: bool) -> WatchOptions {
    let kernel = plan.whom == Whom::Everyone;
    let template = match plan.summary {
        true => summary_template(),
        false => {
            let mut strs = [tracer_common::StrRead::default(); tracer_common::STR_READS];
            if copies_stack_top(plan) {
                strs[0] = tracer_common::StrRead::STACK_TOP;
            }
            SlotConfig {
                flags: crate::stacks::flags_for(plan.stack, !kernel),
                strs,
                ..SlotConfig::default()
            }
        }
    };
    WatchOptions {
        kind: plan.kind,
        len: plan.len,
        pid,
        kernel,
        launched,
        template,
    }
}

struct WatchSink<'a, W: std::io::Write> {
    watches: Vec<Watch>,
    rings: &'a mut OutputRings,
    out: W,
    format: Format,
    start_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC: JSON's `time_unix_ns`.
    wall_offset_ns: i64,
    kind: BreakpointType,
    count: Option<u64>,
    delivered: u64,
    bpf: &'a mut Bpf,
    symbolizer: Symbolizer,
    /// With user stacks: the mappings of processes from the kernel's records.
    tracker: Option<probe::profile::MapsTracker>,
    /// Counted in the kernel (`--summary`): nothing streams, the counts are read at the end.
    summary: bool,
    /// Hits waiting until every CPU's earlier hits are in hand: a hit's old value is the
    /// value after the hit before it, so they are printed in the order they happened.
    order: Reorder<(Event, Option<Box<[u8]>>)>,
    /// The read that copies the user stack's top ([`copies_stack_top`]): its bytes wait
    /// with their hit in `order`.
    stack_top: Option<u8>,
    /// Per CPU: hits received, and the newest one's timestamp.
    received: Vec<(u64, u64)>,
    /// Per watch: the timestamp of the last hit printed.
    printed_ns: Vec<u64>,
    /// Hits printed after a later one of their watch (held past [`HOLD_NS`]): old value unknown.
    late: u64,
    /// The sources are stopped: the next drain is the last.
    stopped: bool,
}

/// The longest a hit waits for an earlier one that a CPU has counted but not yet written; a
/// hit that comes later still is printed with its old value unknown, and counted.
const HOLD_NS: u64 = 1_000_000_000;

impl<'a> WatchSink<'a, crate::output::Output> {
    /// The sink of a plan; the text header is printed (and flushed: the command writes to the
    /// same terminal) before the command runs.
    fn new(
        watches: Vec<Watch>,
        rings: &'a mut OutputRings,
        bpf: &'a mut Bpf,
        plan: &WatchPlan,
        mut out: crate::output::Output,
    ) -> Result<Self, Error> {
        if plan.output.format == Format::Text && !plan.summary {
            (out::header(&mut out).and_then(|()| out.flush())).map_err(Error::Output)?;
        }
        // The kernel names kernel frames: those of `-s` stacks, and with --kernel every hit's.
        let mut symbolizer = Symbolizer::for_stacks(bpf, plan.stack);
        if plan.whom == Whom::Everyone && plan.stack.is_none() {
            symbolizer.name_kernel_with(bpf.kernel_namer());
        }
        // A data breakpoint traps after the access: the instruction that made it ends just
        // before the reported ip, so that is where the hit's function and line are looked up.
        symbolizer.trap_after = plan.kind != BreakpointType::Execute;
        Ok(WatchSink {
            printed_ns: vec![0; watches.len()],
            watches,
            rings,
            out,
            format: plan.output.format,
            start_ns: session::monotonic_ns(),
            wall_offset_ns: session::wall_offset_ns(),
            kind: plan.kind,
            count: plan.count,
            delivered: 0,
            bpf,
            symbolizer,
            tracker: None,
            summary: plan.summary,
            order: Reorder::new(HOLD_NS),
            stack_top: copies_stack_top(plan).then_some(0),
            received: Vec::new(),
            late: 0,
            stopped: false,
        })
    }
}

impl<W: std::io::Write> WatchSink<'_, W> {
    fn print(&mut self, event: &Event, top: Option<&[u8]>) -> Result<(), Error> {
        let Some(index) = self.watches.iter().position(|w| w.slot.id == event.slot) else {
            return Ok(());
        };
        let ip = event.data[word::WATCH_IP];
        let frame = self.symbolizer.frame(event.pid(), ip);
        let at = frame.place();
        let kind = self.kind;
        let watch = &mut self.watches[index];
        let new = (event.data[word::WATCH_VALUE_READ] == 1 && kind != BreakpointType::Execute)
            .then(|| mask(event.data[word::WATCH_VALUE], watch.len));
        // A hit that happened before the last one printed (it came after its wait) does not
        // know the value before it, and does not change what the next hit follows.
        let in_order = event.time_ns >= self.printed_ns[index];
        let old = watch.last.filter(|_| in_order);
        watch.hits += 1;
        *watch.by_tid.entry(event.tid()).or_default() += 1;
        watch.by_ip.entry(ip).or_insert((0, at.clone())).0 += 1;
        match in_order {
            true => {
                self.printed_ns[index] = event.time_ns;
                if new.is_some() {
                    watch.last = new;
                }
            }
            false => self.late += 1,
        }
        let show = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let change = match (kind, old, new) {
            (BreakpointType::Execute, _, _) => "executed".to_string(),
            (BreakpointType::ReadWrite, Some(o), Some(n)) if o == n => format!("{n} (unchanged)"),
            (_, old, new) => format!("{} -> {}", show(old), show(new)),
        };
        let hit = Hit {
            time_ns: event.time_ns,
            time_unix_ns: crate::output::json::unix_ns(event.time_ns, Some(self.wall_offset_ns)),
            cpu: event.cpu,
            pid: event.pid(),
            tid: event.tid(),
            comm: String::from_utf8_lossy(event.comm()).into_owned(),
            target: &watch.name,
            addr: watch.addr,
            old,
            new,
            at: frame,
            change,
            // Set by the program only for an execute breakpoint at a function's entry.
            stacks: (self.symbolizer).stacks(self.bpf, event, event.data[word::ENTRY_RET], top)?,
        };
        (hit.write(&mut self.out, self.format, self.start_ns)).map_err(Error::Output)
    }

    /// The summary on stderr; the per-target counts on stdout with `--summary` (they are what
    /// was asked for), on stderr after streamed hits.
    fn finish(&mut self, outcome: &Outcome) -> Result<(), Error> {
        if self.summary {
            let counts = self.bpf.counts()?;
            for watch in &mut self.watches {
                count_hits(watch, &counts, &mut self.symbolizer);
            }
            self.delivered = self.watches.iter().map(|w| w.hits).sum();
        }
        let (_, lost) = self.bpf.stats()?;
        Summary {
            count: self.delivered,
            unit: "hits".into(),
            seconds: outcome.elapsed.as_secs_f64(),
            why: outcome.why(self.delivered, "hits"),
            tail: format!("{lost} lost"),
            table: None,
            notes: (self.symbolizer.summary())
                .map(|l| format!("stacks: {l}"))
                .into_iter()
                .chain(out::late_note(self.late))
                .chain(crate::output::notes::skipped(
                    self.bpf.missed(),
                    self.bpf.bookkeeping_missed(),
                ))
                .collect(),
        }
        .print();
        for watch in &self.watches {
            let trapped = match self.summary {
                true => None,
                false => Some(self.bpf.slot_stats(&watch.slot)?.0),
            };
            let counts = counts(watch, trapped);
            match self.summary {
                true => counts.write(&mut self.out, self.format),
                false => counts.write(&mut std::io::stderr().lock(), Format::Text),
            }
            .map_err(Error::Output)?;
        }
        self.out.flush().map_err(Error::Output)
    }
}

/// The newest time up to which every CPU's hits are in hand: `now` when each CPU's received
/// hits reach what it had written when `now` was taken; otherwise a CPU still writing holds
/// back everything after the newest hit received from it (its next one is stamped later).
fn settled_until(written: &[u64], received: &[(u64, u64)], now: u64) -> u64 {
    (written.iter().enumerate())
        .filter_map(|(cpu, &n)| {
            let (got, newest) = received.get(cpu).copied().unwrap_or((0, 0));
            (got < n).then_some(newest)
        })
        .fold(now, u64::min)
}

/// A watch's hits by thread and by instruction.
fn counts(watch: &Watch, trapped: Option<u64>) -> Counts<'_> {
    Counts {
        kind: "hits",
        target: &watch.name,
        addr: watch.addr,
        len: watch.len,
        hits: watch.hits,
        threads: (watch.by_tid.iter())
            .map(|(&tid, &hits)| ThreadHits { tid, hits })
            .collect(),
        at: (watch.by_ip.iter())
            .map(|(ip, (hits, at))| PlaceHits {
                ip: *ip,
                at: at.clone(),
                hits: *hits,
            })
            .collect(),
        trapped,
    }
}

impl<W: std::io::Write> Sink for WatchSink<'_, W> {
    fn streams(&self) -> bool {
        !self.summary
    }

    fn stop(&mut self) -> Result<(), Error> {
        self.stopped = true;
        Ok(self.bpf.stop()?)
    }

    fn tick(&mut self) -> Result<bool, Error> {
        // Records drained on time, whether hits come or not (its rings are not woken).
        if let Some(tracker) = self.tracker.as_mut() {
            tracker.drain();
        }
        Ok(false)
    }

    fn drain(&mut self) -> Result<bool, Error> {
        // Read before the rings: every hit stamped before `now` was counted by then.
        let now = session::monotonic_ns();
        let written = match self.stopped {
            true => None,
            false => Some(self.bpf.written_per_cpu()?),
        };
        let (order, received, stack_top) = (&mut self.order, &mut self.received, self.stack_top);
        let mut fresh = Vec::new();
        self.rings.drain(|e, strings| {
            fresh.push((*e, 0..0));
            let cpu = e.cpu as usize;
            if received.len() <= cpu {
                received.resize(cpu + 1, (0, 0));
            }
            received[cpu].0 += 1;
            received[cpu].1 = received[cpu].1.max(e.time_ns);
            let top = probe::strings::split_top(strings, stack_top).1;
            order.push(e.time_ns, (*e, top.map(Box::from)));
        });
        // The stacks and mappings of the hits just read, while their processes live; the
        // hits themselves wait in `order`.
        let (tracker, clock) = (self.tracker.as_mut(), session::monotonic_ns);
        probe::profile::before_batch(tracker, &mut self.symbolizer, self.bpf, &fresh, clock)?;
        let mut ready = Vec::new();
        match written {
            // The last drain after the sources stopped: everything is in hand.
            None => self.order.finish(|e| ready.push(e)),
            Some(written) => {
                let limit = settled_until(&written, &self.received, now);
                (self.order)
                    .release_until(limit.max(now.saturating_sub(HOLD_NS)), |e| ready.push(e));
            }
        }
        for (event, top) in &ready {
            if self.count.is_some_and(|n| self.delivered >= n) {
                break;
            }
            self.delivered += 1;
            self.print(event, top.as_deref())?;
        }
        self.out.flush().map_err(Error::Output)?;
        Ok(self.count.is_some_and(|n| self.delivered >= n))
    }
}

#[cfg(test)]
mod tests {
    use super::{load_uses, settled_until, summary_template};
    use tracer_common::{USES_COMM_CACHE, USES_RUN_COUNT, USES_RUN_KEYED};

    #[test]
    fn summaries_count_runs_of_one_key() {
        // The summary's key allows runs of a key, and its load has them; a streamed watch
        // does not load them, and neither loads runs of a task (they need `comm_renamed`).
        assert!(summary_template().may_count_keyed_runs());
        assert!(!summary_template().may_count_runs());
        // Breakpoint hits of the run's thread at its instruction continue it first thing.
        assert!(summary_template().may_count_runs_at_ip());
        assert_eq!(
            load_uses(true, false, false) & USES_RUN_KEYED,
            USES_RUN_KEYED
        );
        assert_eq!(load_uses(false, true, false) & USES_RUN_KEYED, 0);
        assert_eq!(load_uses(true, true, false) & USES_RUN_COUNT, 0);
        assert_eq!(
            load_uses(false, true, false) & USES_COMM_CACHE,
            USES_COMM_CACHE
        );
    }

    #[test]
    fn hits_wait_for_a_cpu_that_has_counted_more_than_it_delivered() {
        // Every CPU delivered what it had counted: everything up to `now` is in hand.
        assert_eq!(settled_until(&[3, 2], &[(3, 90), (2, 95)], 100), 100);
        // CPU 1 counted a third hit it has not written yet: it is stamped after 95.
        assert_eq!(settled_until(&[3, 3], &[(3, 90), (2, 95)], 100), 95);
        // A CPU nothing has come from yet holds back everything.
        assert_eq!(settled_until(&[3, 1], &[(3, 90)], 100), 0);
        // A CPU that has not counted anything holds back nothing.
        assert_eq!(settled_until(&[3, 0, 0], &[(3, 90)], 100), 100);
    }
}
