//! `tracer trace`: a program's system calls, one strace line each. The `trace_enter` and
//! `trace_exit` programs pair each call's entry and exit per thread in the kernel and send it
//! whole through the shared ring buffer (in the order calls end); `-c` counts them in the
//! kernel instead. The calls go to stderr (or `-o FILE`), as strace's do.

use hashbrown::{HashMap, HashSet};

use tracer_common::{signal_word, trace_kind, trace_word, Event, TraceStart};

use crate::bpf::{Bpf, Room, Rooms, Sizing};
use crate::cli::TraceArgs;
use crate::kernel::fds;
use crate::kernel::task_memory::TaskMemory;
use crate::kernel::tracefs::Tracefs;
use crate::output::summary::{Banner, Summary};
use crate::output::trace::{
    self as show, CallEnd, CallWriter, Delivered, LineStyle, Row, TaskEvent,
};
use crate::plan::trace::{trace_plan, TracePlan};
use crate::probe::fds::FdTable;
use crate::probe::profile::{before_batch, MapsTracker};
use crate::probe::syscall::{self, Layout, Options};
use crate::session::{self, Hold, OutputRings, Session, Sink, Transport};
use crate::stacks::Symbolizer;
use crate::Error;

pub fn run(args: TraceArgs) -> Result<i32, Error> {
    let plan = trace_plan(&args)?;
    let fs = Tracefs::locate()?;
    let mut layouts = layouts(&plan, &fs);
    let mut filters = filters(&plan, &mut layouts)?;
    // The calls `-y` and `-P` need that `-e` left out: traced whole, never shown.
    let shown = layouts.len();
    layouts.extend(hidden_layouts(&plan, &fs));
    filters.resize(layouts.len(), None);
    let out = calls_output(&plan)?;
    let mut session = Session::start(&plan.whom, Hold::BeforeExec, args.command_end.at_end())?;
    let (options, configs) = configs(&plan, &layouts, shown);
    let rename = crate::probe::rename_tracepoint(&fs);
    let mut bpf = Bpf::load_with(sizing(&plan, &configs, rename.is_some()))?;
    let mut rings =
        OutputRings::for_transport(&mut bpf, Transport::Ringbuf, plan.ring_pages, None)?;
    session.cache_comms(&mut bpf, rename)?;
    session.guard(&bpf);
    if let Some(filter) = &plan.filter {
        bpf.set_globs(&filter.globs)?;
    }
    let loops = tracer_common::USES_DIRENTS | tracer_common::USES_IOVECS;
    let reads = (configs.iter()).any(|c| c.uses() & loops != 0);
    bpf.preload(&programs(&plan, reads))?;
    if reads {
        bpf.read_at_exit()?;
    }
    let mut by_slot = HashMap::new();
    for ((layout, config), filter) in layouts.iter().zip(configs).zip(&filters) {
        let slot = bpf.take_trace_slot(config, layout.nr, filter.as_ref())?;
        by_slot.insert(slot.id, by_slot.len());
    }
    // Before the tracking programs: the exit's program must see a task before they forget it.
    let task_slots = match plan.summary {
        true => TaskSlots::default(),
        false => TaskSlots::take(&mut bpf, &options, plan.signals)?,
    };
    session.follow(&mut bpf, &fs)?;
    session.follow_adopted(&mut bpf, &fs, plan.whom.pids())?;
    if plan.system_wide && plan.whom == crate::plan::Whom::Everyone {
        crate::probe::tasks::set_task_offsets(&mut bpf, &fs)?;
    }
    // Before the command is let go: -k's tracker must see its exec.
    let stacks = CallStacks::open(plan.stacks, session.pid())?;
    session.begin(&banner(&plan, &layouts[..shown], session.whom()))?;
    let style = line_style(&plan);
    let by_nr = (layouts.iter().enumerate().take(shown))
        .map(|(i, l)| (l.nr, i))
        .collect();
    let mut sink = TraceSink {
        bpf: &mut bpf,
        stacks,
        rings: &mut rings,
        layouts: &layouts,
        by_slot,
        by_nr,
        task_slots,
        signals: plan.signals,
        unfinished_after: (!plan.summary).then_some(plan.unfinished_after).flatten(),
        summary: plan.summary,
        tally: plan.tally.then(HashMap::new),
        blocked: HashSet::new(),
        exited: HashSet::new(),
        writer: CallWriter::new(out, plan.format, style),
        printed: 0,
        reported_lost: 0,
        shown,
        fds: fd_table(&plan, session.pid()),
        off_path: 0,
        held: Vec::new(),
        system_wide: plan.system_wide,
    };
    if plan.system_wide {
        sink.writer.name_every_task();
    }
    let ring_fds = sink.rings.raw_fds();
    let outcome = session.run(&mut sink, ring_fds, plan.duration)?;
    let unfinished = sink.unfinished()?;
    // The command's exit line came with its exit event, where the kernel has BTF for it.
    let exit_shown = session.pid().is_some_and(|pid| sink.exited.contains(&pid));
    if let (session::RunEnd::CommandExited(code), false, false) =
        (outcome.end, plan.summary, exit_shown)
    {
        let line = match code {
            0..=127 => format!("+++ exited with {code} +++"),
            _ => format!(
                "+++ killed by {} +++",
                crate::output::syscall::signal(code as u64 - 128)
            ),
        };
        sink.writer.text_line(&line).map_err(Error::Output)?;
    }
    // strace -c prints no table when it counted nothing.
    let rows = match (plan.summary, sink.tally.take()) {
        (true, _) => summary_rows(sink.bpf, &layouts, &sink.by_slot)?,
        (false, Some(tally)) => tally.into_values().collect(),
        (false, None) => Vec::new(),
    };
    if rows.iter().any(|r| r.calls > 0) {
        let table = show::summary_table_of(rows, plan.sort_by, &plan.columns);
        sink.writer
            .text_line(table.strip_suffix('\n').unwrap_or(&table))
            .map_err(Error::Output)?;
    }
    sink.writer.flush().map_err(Error::Output)?;
    let printed = (sink.printed, sink.off_path);
    let stacks = (sink.stacks.as_ref()).and_then(|s| s.symbolizer.summary());
    summary(&plan, &bpf, &outcome, (printed, unfinished), stacks)?.print();
    Ok(outcome.exit_code())
}

/// The maps and programs the run needs: what the slots use, the comm cache where the kernel
/// renames tasks through a tracepoint (`comm_cache`), stacks for `-k`, counts for `-c`.
fn sizing(plan: &TracePlan, configs: &[tracer_common::SlotConfig], comm_cache: bool) -> Sizing {
    let uses = (configs.iter()).fold(tracer_common::USES_TRACE, |u, c| u | c.uses());
    let cache = match comm_cache {
        true => tracer_common::USES_COMM_CACHE,
        false => 0,
    };
    Sizing {
        rooms: Rooms::of([
            (Room::Trace, true),
            (Room::Counts, plan.summary),
            (Room::Stacks, plan.stacks),
        ]),
        uses: uses | cache,
        ringbuf: Some(session::ringbuf_size(plan.ring_pages, None)),
        filter_globs: plan.filter.as_ref().map(|f| f.sizing()),
    }
}

/// What the run traces, and of whom.
fn banner(plan: &TracePlan, layouts: &[Layout], whom: Option<String>) -> Banner {
    Banner {
        verb: if plan.summary { "Counting" } else { "Tracing" },
        what: match layouts {
            [one] => format!("{} calls", one.name),
            _ if layouts.len() <= 4 => {
                let names: Vec<&str> = layouts.iter().map(|l| l.name).collect();
                format!("system calls ({})", names.join(", "))
            }
            _ => format!("{} system calls", layouts.len()),
        },
        whom: match (plan.system_wide, whom) {
            (true, Some(command)) => Some(format!("every process while {command} runs")),
            (true, None) => Some("every process".into()),
            (false, whom) => whom.or_else(|| {
                (plan.whom.pids().len() > 1)
                    .then(|| format!("processes {}", join(plan.whom.pids())))
            }),
        },
        detail: None,
    }
}

/// What every traced call shares, and each call's slot configuration (the calls only `-y`
/// and `-P` need, `layouts[shown..]`, neither filtered nor narrowed to failures).
fn configs(
    plan: &TracePlan,
    layouts: &[Layout],
    shown: usize,
) -> (Options, Vec<tracer_common::SlotConfig>) {
    let options = Options {
        tracked: !plan.system_wide,
        failed: plan.failed,
        filter: plan.filter.is_some(),
        summary: plan.summary,
        cpu_time: plan.cpu_time(),
        fd_inodes: plan.fd_table,
        strsize: plan.strsize,
        stacks: plan.stacks,
    };
    let bookkeeping = Options {
        failed: false,
        filter: false,
        stacks: false,
        ..options
    };
    let configs = (layouts.iter().enumerate())
        .map(|(i, l)| l.config(if i < shown { &options } else { &bookkeeping }))
        .collect();
    (options, configs)
}

/// How each line begins and ends: `-t`/`-tt`/`-ttt`, `-r`, `-T`.
fn line_style(plan: &TracePlan) -> LineStyle {
    let wall_offset_ns = session::wall_offset_ns();
    LineStyle {
        stamp: (plan.stamp).map(|stamp| {
            (
                stamp,
                i128::from(wall_offset_ns),
                crate::counter::os::utc_offset_secs(),
            )
        }),
        durations: plan.durations,
        relative: plan.relative,
        wall_offset_ns: Some(wall_offset_ns),
    }
}

/// How each traced call reads (the calls this kernel's tracefs does not know are left out),
/// its strings in hexadecimal as `-x` says, its arrays as long as `-s` says.
fn layouts(plan: &TracePlan, fs: &Tracefs) -> Vec<Layout> {
    (plan.calls.iter())
        .filter_map(|&nr| Layout::of(nr, fs))
        .map(|layout| Layout {
            hex: plan.hex,
            strsize: plan.strsize,
            ..layout
        })
        .collect()
}

/// The layouts of the calls traced only for `-y`'s and `-P`'s descriptor table.
fn hidden_layouts(plan: &TracePlan, fs: &Tracefs) -> Vec<Layout> {
    (plan.bookkeeping.iter())
        .filter_map(|&nr| Layout::of(nr, fs))
        .collect()
}

/// `-y` and `-P`'s table of descriptors, seeded with what the traced processes start with:
/// the launched command inherits tracer's standard streams and directory; an adopted
/// process has what `/proc` lists.
fn fd_table(plan: &TracePlan, launched: Option<u32>) -> Option<FdTable> {
    if !plan.fd_table {
        return None;
    }
    let mut table = FdTable::new(plan.decode_fds, &plan.paths);
    let own = std::process::id();
    if let Some(pid) = launched {
        let stdio = (0..3).filter_map(|fd| Some((fd, fds::fd_link(own, fd)?)));
        table.seed(pid, stdio.collect(), fds::cwd(own));
    }
    for &pid in plan.whom.pids() {
        table.seed(pid, fds::open_fds(pid), fds::cwd(pid));
    }
    Some(table)
}

/// The end-of-run summary: every call printed (or counted), lost, filtered, unfinished or
/// ended without its start, with what to do about losses.
fn summary(
    plan: &TracePlan,
    bpf: &Bpf,
    outcome: &session::Outcome,
    ((printed, off_path), unfinished): ((u64, u64), u64),
    stacks: Option<String>,
) -> Result<Summary, Error> {
    let (hits, lost) = bpf.stats()?;
    let filtered = bpf.filtered()? + off_path;
    let stats = bpf.trace_stats()?;
    let no_entry = stats[tracer_common::trace_stat::NO_ENTRY as usize];
    let mut notes = Vec::new();
    if lost > 0 {
        notes.push(format!(
            "lost {lost} calls: the ring buffer was full; raise --ring-pages (now {})",
            plan.ring_pages
        ));
    }
    // Calls the kernel never showed tracer's programs (one preempted inside them on that CPU).
    notes.extend(crate::output::notes::skipped(
        bpf.missed(),
        bpf.bookkeeping_missed(),
    ));
    let vmlinux = std::path::Path::new(crate::kernel::btf::BTF_DIR).join("vmlinux");
    if plan.tally && plan.durations && !plan.wall_clock {
        notes.push("-C's table sums each call's time from its entry to its exit, as -T shows it (-w's time); without -T it sums the CPU time spent in the call".into());
    }
    if plan.cpu_time() && !vmlinux.exists() {
        notes.push(
            "this kernel has no BTF to find a task's CPU time: the times are from each call's entry to its exit (as -w's)".into(),
        );
    }
    notes.extend(stacks.map(|line| format!("stacks: {line}")));
    let unpaired = stats[tracer_common::trace_stat::START_FULL as usize];
    if unpaired > 0 {
        notes.push(format!(
            "{unpaired} calls found {} calls in flight already and were not paired",
            tracer_common::TRACE_ENTRIES
        ));
    }
    let unsaved = stats[tracer_common::trace_stat::IOVECS_FULL as usize];
    if unsaved > 0 {
        notes.push(format!(
            "{unsaved} calls' iovec arrays found {} saved already (calls preempted between their two exit programs) and are shown as addresses",
            tracer_common::TRACE_SAVED_ENTRIES
        ));
    }
    let unsaved = stats[tracer_common::trace_stat::FDSETS_FULL as usize];
    if unsaved > 0 {
        notes.push(format!(
            "{unsaved} selects' fd sets found {} selects waiting already and are shown as addresses",
            tracer_common::TRACE_FDSETS_ENTRIES
        ));
    }
    let (count, unit) = match plan.summary {
        true => (hits - filtered - lost, "calls counted in the kernel"),
        false => (printed, "calls"),
    };
    Ok(Summary {
        count,
        unit: unit.into(),
        seconds: outcome.elapsed.as_secs_f64(),
        why: outcome.why(0, "calls"),
        tail: format!(
            "{lost} lost, {filtered} filtered out, {unfinished} unfinished, {no_entry} ended without their start"
        ),
        table: None,
        notes,
    })
}

/// `--filter` per call: a call without an argument of a name the filter uses cannot pass and
/// is not traced (said once); none left is an error.
fn filters(
    plan: &TracePlan,
    layouts: &mut Vec<Layout>,
) -> Result<Vec<Option<tracer_common::Filter>>, Error> {
    let Some(filter) = &plan.filter else {
        return Ok(vec![None; layouts.len()]);
    };
    let mut kept = Vec::new();
    let mut filters = Vec::new();
    let mut dropped = 0;
    // The names some selected call has, for the message when no call has them all.
    let mut known: hashbrown::HashSet<String> = ["ret", "duration", "comm", "pid", "tid", "cpu"]
        .map(String::from)
        .into();
    for layout in layouts.drain(..) {
        let params = layout.filter_params();
        known.extend(params.iter().map(|p| p.name.to_string()));
        known.extend((0..params.len()).map(|i| format!("arg{i}")));
        match crate::probe::filter::resolve_trace(filter, layout.name, &params)? {
            Some(f) => {
                filters.push(Some(f));
                kept.push(layout);
            }
            None => dropped += 1,
        }
    }
    if kept.is_empty() {
        let mut names: Vec<&str> = filter.atoms.iter().map(|a| a.name.as_str()).collect();
        names.dedup();
        let unknown: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !known.contains(*n))
            .collect();
        let error = match unknown.is_empty() {
            // Each name is some call's, but no one call has them all.
            true => format!(
                "--filter: no traced call has all of the arguments {}",
                names.join(", ")
            ),
            false => format!(
                "--filter: no traced call has an argument named {}",
                unknown.join(" or ")
            ),
        };
        return Err(Error::usage(
            error,
            vec![
                "name arguments as the calls' tracepoints do (`tracer list -v syscalls:sys_enter_openat`), or ret, duration, comm, pid, tid, cpu".into(),
            ],
        ));
    }
    if dropped > 0 {
        crate::output::notes::note(format!(
            "--filter: {dropped} of the selected calls have no such argument and are not traced"
        ));
    }
    *layouts = kept;
    Ok(filters)
}

/// Where the calls go: `-o FILE` (`-o -`: standard output); else text to standard error
/// (strace's habit: the program's own output stays alone on standard output) and JSON to
/// standard output, where `| jq` reads it.
fn calls_output(plan: &TracePlan) -> Result<crate::output::Output, Error> {
    match (&plan.file, plan.format) {
        (Some(path), _) => crate::output::destination(Some(path)),
        (None, crate::output::events::Format::Json) => crate::output::destination(None),
        (None, crate::output::events::Format::Text) => Ok(std::io::BufWriter::new(Box::new(
            crate::output::stderr_lines(),
        ))),
    }
}

fn join(pids: &[u32]) -> String {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    pids.join(",")
}

/// `-c`'s rows from the kernel's counts: each call's slot, failed or not, and its time.
fn summary_rows(
    bpf: &Bpf,
    layouts: &[Layout],
    by_slot: &HashMap<u32, usize>,
) -> Result<Vec<Row>, Error> {
    let mut rows: HashMap<usize, Row> = HashMap::new();
    for (key, value) in bpf.counts()? {
        let Some(&i) = by_slot.get(&key.slot) else {
            continue;
        };
        let row = rows.entry(i).or_insert_with(|| Row {
            name: layouts[i].name.to_string(),
            nr: layouts[i].nr,
            ..Row::default()
        });
        row.calls += value.count;
        row.total_ns += value.sum;
        if key.value != 0 {
            row.errors += value.count;
        }
    }
    Ok(rows.into_values().collect())
}

/// `-C`: a shown call counted in its row, as `-c` counts in the kernel: at its return (a
/// call that does not return, or was cut short, is not counted), failed when it returned
/// -4095..-1.
fn tally_call(tally: &mut HashMap<usize, Row>, (i, nr): (usize, u32), call: &show::Call<'_>) {
    if call.end != CallEnd::Returned {
        return;
    }
    let row = tally.entry(i).or_insert_with(|| Row {
        name: call.name.to_string(),
        nr,
        ..Row::default()
    });
    row.calls += 1;
    row.errors += u64::from((-4095..=-1).contains(&call.ret));
    row.total_ns += call.duration_ns;
}

/// The programs a run attaches (as [`TaskSlots::take`] and `Bpf::take_trace_slot` name
/// them), loaded side by side before they are attached in their order.
fn programs(plan: &TracePlan, reads: bool) -> Vec<&'static str> {
    let mut names = vec!["trace_exit", "trace_enter"];
    if reads {
        names.push("trace_exit_reads");
    }
    if !plan.summary {
        names.push("trace_task_exit");
        if plan.signals != 0 {
            names.extend(["trace_signal_sent", "trace_signal"]);
        }
    }
    names
}

/// The slots of a task's signals and exit (none for `-c`, or `-e signal=none`).
#[derive(Default)]
struct TaskSlots {
    signal: Option<u32>,
    exit: Option<u32>,
}

impl TaskSlots {
    fn take(bpf: &mut Bpf, options: &Options, signals: u64) -> Result<TaskSlots, Error> {
        let config = syscall::task_event_config(options);
        let mut take = |nr, programs: &[(&str, &str)]| {
            (bpf.take_trace_event_slot(config, nr, programs)).map(|slot| Some(slot.id))
        };
        Ok(TaskSlots {
            exit: take(
                tracer_common::TRACE_EXIT_NR,
                &[("trace_task_exit", "sched_process_exit")],
            )?,
            // A signal that kills is seen as it is sent (it is never delivered as itself).
            signal: match signals {
                0 => None,
                _ => take(
                    tracer_common::TRACE_SIGNAL_NR,
                    &[
                        ("trace_signal_sent", "signal_generate"),
                        ("trace_signal", "signal_deliver"),
                    ],
                )?,
            },
        })
    }
}

/// `-k`: each call's user stack, symbolized as its batch is read.
struct CallStacks {
    tracker: MapsTracker,
    symbolizer: Symbolizer,
}

impl CallStacks {
    /// With `-k`: the mappings of processes gone before /proc could be read come from the
    /// kernel's records of `launched` (every task's without a command), opened before it runs.
    fn open(wanted: bool, launched: Option<u32>) -> Result<Option<CallStacks>, Error> {
        Ok(match wanted {
            true => Some(CallStacks {
                tracker: MapsTracker::open(launched)?,
                symbolizer: Symbolizer::default(),
            }),
            false => None,
        })
    }
}

struct TraceSink<'a> {
    bpf: &'a mut Bpf,
    stacks: Option<CallStacks>,
    rings: &'a mut OutputRings,
    layouts: &'a [Layout],
    /// Index in `layouts` by slot id.
    by_slot: HashMap<u32, usize>,
    /// Index in `layouts` by syscall number (the calls in flight).
    by_nr: HashMap<u32, usize>,
    task_slots: TaskSlots,
    /// `-e signal=`: bit `n - 1` for signal `n` shown.
    signals: u64,
    /// Calls in flight this long are shown unfinished at once.
    unfinished_after: Option<std::time::Duration>,
    /// `-c`: calls are counted, not shown, those in flight at the end too.
    summary: bool,
    /// `-C`: the rows of the table, by index in `layouts`, counted as calls are shown.
    tally: Option<HashMap<usize, Row>>,
    /// The calls shown unfinished while they blocked (thread, entry time): their end is
    /// shown resumed.
    blocked: HashSet<(u64, u64)>,
    /// The tasks whose exit line was printed.
    exited: HashSet<u32>,
    writer: CallWriter<crate::output::Output>,
    printed: u64,
    reported_lost: u64,
    /// `layouts[shown..]` are traced for the descriptor table only.
    shown: usize,
    /// `-y`, `-P`: what the traced processes' descriptors refer to.
    fds: Option<FdTable>,
    /// Calls `-P` left out.
    off_path: u64,
    /// `-y`, `-P`: the events of processes whose fork the run has not shown yet.
    held: Vec<(Event, Vec<u8>)>,
    /// `-a`: processes come from anywhere, no event is held.
    system_wide: bool,
}

impl Sink for TraceSink<'_> {
    fn stop(&mut self) -> Result<(), Error> {
        Ok(self.bpf.stop()?)
    }

    fn drain(&mut self) -> Result<bool, Error> {
        let batch = self.rings.drain_batch();
        if let Some(fds) = &mut self.fds {
            fds.new_batch();
        }
        if let Some(CallStacks {
            tracker,
            symbolizer,
        }) = &mut self.stacks
        {
            let now = session::monotonic_ns;
            before_batch(Some(tracker), symbolizer, self.bpf, &batch.events, now)?;
        }
        for (event, range) in &batch.events {
            self.event(event, &batch.strings[range.clone()])?;
        }
        self.release_held(HELD_AT_MOST_NS)?;
        self.writer.flush().map_err(Error::Output)?;
        Ok(false)
    }

    /// strace -f: the run goes on after the command (or `-p` process) exits, until the last
    /// process it started has exited too. An entry whose exit the tracking program missed
    /// (see `notes::bookkeeping_missed`) is not waited for: only tasks still running count.
    fn followed_left(&self) -> Result<Option<usize>, Error> {
        let tasks = self.bpf.tracked();
        Ok(Some(
            tasks.into_iter().filter(|&t| session::alive(t)).count(),
        ))
    }

    fn tick(&mut self) -> Result<bool, Error> {
        self.show_blocked()?;
        let (_, lost) = self.bpf.stats()?;
        if lost > self.reported_lost {
            crate::output::notes::lost(format_args!(
                "lost {} calls (ring buffer full): raise --ring-pages",
                lost - self.reported_lost
            ));
            self.reported_lost = lost;
        }
        Ok(false)
    }
}

/// How long `-y` holds back a new process's events waiting for the fork that made it (its
/// parent's call may end after the child's first calls, on the other CPU).
const HELD_AT_MOST_NS: u64 = 200_000_000;

impl TraceSink<'_> {
    /// One event: a call shown (or left out by `-P`, or only kept for `-y`'s table), or a
    /// signal or exit.
    fn event(&mut self, event: &Event, strings: &[u8]) -> Result<(), Error> {
        if self.fds.as_ref().is_some_and(|f| !f.knows(event.pid())) && !self.system_wide {
            self.held.push((*event, strings.to_vec()));
            return Ok(());
        }
        let comm = String::from_utf8_lossy(event.comm());
        let Some(&i) = self.by_slot.get(&event.slot) else {
            return self.task_event(event, &comm);
        };
        let mut call = self.layouts[i].call(event, strings, &comm);
        call.resumed = self.blocked.remove(&(event.pid_tgid, event.time_ns));
        let inodes = [trace_word::INODES, trace_word::INODES + 1].map(|w| event.fields[w]);
        let on_path = (self.fds.as_mut()).is_none_or(|fds| fds.observe(&mut call, inodes));
        let child = match call.name {
            "clone" | "clone3" | "fork" | "vfork" if call.ret > 0 => Some(call.ret as u32),
            _ => None,
        };
        if i < self.shown && on_path {
            if let Some(stacks) = &mut self.stacks {
                let top = self.layouts[i].stack_top(strings);
                call.stacks = stacks.symbolizer.stacks(self.bpf, event, 0, top)?;
            }
            if let Some(tally) = &mut self.tally {
                tally_call(tally, (i, self.layouts[i].nr), &call);
            }
            self.writer.write(&call).map_err(Error::Output)?;
            self.printed += 1;
        }
        self.off_path += u64::from(i < self.shown && !on_path);
        // The child's table is its parent's copy now: what it did meanwhile is shown.
        if let Some(child) = child {
            let (mine, others) = std::mem::take(&mut self.held)
                .into_iter()
                .partition(|(e, _)| e.pid() == child);
            self.held = others;
            for (event, strings) in mine {
                self.event(&event, &strings)?;
            }
        }
        Ok(())
    }

    /// Shows the held events older than `age_ns` (all with 0): a process whose fork the run
    /// did not see gets its table from `/proc` as its calls are shown.
    fn release_held(&mut self, age_ns: u64) -> Result<(), Error> {
        let now = session::monotonic_ns();
        let Some(fds) = &mut self.fds else {
            return Ok(());
        };
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(e, _)| now.saturating_sub(e.time_ns) >= age_ns);
        self.held = kept;
        for (event, _) in &due {
            fds.adopt(event.pid());
        }
        for (event, strings) in due {
            self.event(&event, &strings)?;
        }
        Ok(())
    }

    /// A signal delivered to a task, or its exit, as strace shows them.
    fn task_event(&mut self, event: &Event, comm: &str) -> Result<(), Error> {
        let is = |slot: Option<u32>| slot == Some(event.slot);
        let task_event = match event.fields[trace_word::KIND] {
            trace_kind::SIGNAL if is(self.task_slots.signal) => {
                let signo = event.data[signal_word::SIGNO] as u32;
                if signo == 0 || signo > 64 || self.signals & (1 << (signo - 1)) == 0 {
                    return Ok(());
                }
                let union = &event.data[signal_word::UNION..][..signal_word::UNION_WORDS];
                TaskEvent::Signal(Delivered {
                    signo,
                    code: event.data[signal_word::CODE] as u32 as i32,
                    words: union.try_into().expect("four words"),
                })
            }
            trace_kind::SUPERSEDED if is(self.task_slots.exit) => {
                TaskEvent::Superseded(event.data[0] as u32)
            }
            trace_kind::EXIT if is(self.task_slots.exit) => {
                self.exited.insert(event.tid());
                // -a's processes come and go without end; a traced tree's tables stay (its
                // leader may exit before its other threads do).
                let leader = event.tid() == event.pid();
                if let (Some(fds), true, true) = (&mut self.fds, leader, self.system_wide) {
                    fds.exited(event.pid());
                }
                TaskEvent::Exit(event.data[0] as u32)
            }
            _ => return Ok(()),
        };
        let task = (event.pid(), event.tid());
        (self
            .writer
            .task_event(event.time_ns, task, comm, &task_event))
        .map_err(Error::Output)
    }

    /// Shows the calls blocked for `unfinished_after` and not shown yet, as strace shows a
    /// call another task's line interrupts: `read(0,  <unfinished ...>`.
    fn show_blocked(&mut self) -> Result<(), Error> {
        let Some(after) = self.unfinished_after else {
            return Ok(());
        };
        let now = session::monotonic_ns();
        let mut open: Vec<(u64, TraceStart)> = (self.bpf.trace_in_flight()?.into_iter())
            .filter(|(_, s)| now.saturating_sub(s.time_ns) >= after.as_nanos() as u64)
            .filter(|(tid, s)| !self.blocked.contains(&(*tid, s.time_ns)))
            .collect();
        open.sort_by_key(|(_, s)| s.time_ns);
        for (pid_tgid, start) in open {
            if self.write_in_flight(pid_tgid, &start, false)? {
                self.blocked.insert((pid_tgid, start.time_ns));
            }
        }
        self.writer.flush().map_err(Error::Output)
    }

    /// Prints the calls still in flight when tracing ended, oldest first (those already
    /// shown blocked are not shown twice); returns how many.
    fn unfinished(&mut self) -> Result<u64, Error> {
        self.release_held(0)?;
        let mut open: Vec<(u64, TraceStart)> = self.bpf.trace_in_flight()?;
        open.sort_by_key(|(_, s)| s.time_ns);
        let mut count = 0;
        for (pid_tgid, start) in &open {
            let shown = self.blocked.contains(&(*pid_tgid, start.time_ns));
            if shown || self.write_in_flight(*pid_tgid, start, true)? {
                count += 1;
            }
        }
        Ok(count)
    }

    /// A call in flight, as far as its entry tells (counted only, with `-c`); `false` if it is
    /// not one of the run's, or `-P` leaves it out (counted `at_end`).
    fn write_in_flight(
        &mut self,
        pid_tgid: u64,
        start: &TraceStart,
        at_end: bool,
    ) -> Result<bool, Error> {
        let Some(&i) = self.by_nr.get(&start.nr) else {
            return Ok(false);
        };
        if self.summary {
            return Ok(true);
        }
        let mut event = Event::from_bytes(&[0u8; Event::SIZE]).expect("a zeroed event");
        event.pid_tgid = pid_tgid;
        event.time_ns = start.time_ns;
        event.data[..tracer_common::word::ARGS].copy_from_slice(&start.args);
        event.fields[trace_word::ENTRY_INT] = start.entry_int;
        let comm = task_comm(pid_tgid as u32);
        let memory = TaskMemory::open(pid_tgid as u32);
        let layout = &self.layouts[i];
        let mut call = layout.in_flight(&event, memory.as_ref(), &comm, CallEnd::Unfinished);
        if let Some(fds) = &mut self.fds {
            if !fds.observe(&mut call, [0, 0]) {
                // Counted once, when tracing ends (a blocked call is looked at every tick).
                self.off_path += u64::from(at_end);
                return Ok(false);
            }
        }
        self.writer.write(&call).map_err(Error::Output)?;
        Ok(true)
    }
}

/// A thread's name now (for calls still in flight, which sent no event).
fn task_comm(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}
