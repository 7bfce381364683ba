//! `tracer stat`: perf stat's counting. Each event is opened per task (a command and, by
//! inheritance, its children; processes; threads) or per CPU (system-wide, cgroups), groups
//! are read in one read(2) with `PERF_FORMAT_GROUP`, and the readings are summed, scaled for
//! multiplexing and printed with perf's derived metrics.
//!
//! `-- COMMAND` follows perf: the command is forked and held before its exec, the counters are
//! opened on its pid with `enable_on_exec` and `inherit`, then it is released; the counters
//! start at the exec, so tracer's own fork and the held child's wait are not counted.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::StatArgs;
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::tracefs::Tracefs;
use crate::launch::{self, Launched};
use crate::output::stat::{
    aggregate, metric, Count, Footer, Line, Metric, MetricInput, Reading, Renderer, Role, Slot,
    Stats,
};
use crate::perf::attr::{flag, format, CacheOp, CacheResult, Hardware, Software};
use crate::perf::{self, pmu::Pmus, Event, EventKind, Options, Scope};
use crate::plan;
use crate::plan::stat::{Aggregation, Destination, EventSpec, Source, StatPlan, Target};
use crate::Error;

/// One counter to open: an event resolved against this kernel.
struct Counter {
    name: String,
    kind: EventKind,
    /// Modifier flags (`exclude_*`, `pinned`).
    flags: u64,
    precise: u8,
    group: Option<usize>,
    role: Role,
    context: u8,
    unit: String,
    /// Display scale: 1e-6 turns task-clock's ns into msec.
    scale: f64,
    cgroup: Option<Arc<OwnedFd>>,
    cgroup_name: Option<String>,
}

/// Where one set of counters is opened.
#[derive(Clone, Debug)]
enum Place {
    Task(u32),
    Cpu(u32),
}

/// A group (or a lone event) opened on one place.
struct Unit {
    leader: Event,
    _members: Vec<Event>,
    /// Counter indices in read order, leader first.
    counters: Vec<usize>,
    place: usize,
}

/// The counters of one run.
struct Opened {
    units: Vec<Unit>,
    /// Per counter: opened on at least one place.
    supported: Vec<bool>,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    CommandExited(i32),
    Interrupted,
    Timeout,
    TargetGone,
    IntervalsDone,
}

/// perf stat treats these errnos from perf_event_open as "the event is not supported here"
/// (`stat_handle_error`): the run goes on and prints `<not supported>`.
const NOT_SUPPORTED: [i32; 6] = [
    libc::EINVAL,
    libc::ENOSYS,
    libc::ENOENT,
    libc::EOPNOTSUPP,
    libc::ENXIO,
    libc::ENODEV,
];

pub fn run(args: StatArgs) -> Result<i32, Error> {
    let plan = plan::stat::stat_plan(&args)?;
    let mut legacy = Vec::new();
    let counters = resolve(&plan, &mut legacy)?;
    let mut out = open_destination(&plan.destination)?;
    if let Destination::File { .. } = plan.destination {
        write(&mut out, &format!("# started on {}\n", os::ctime_now()))?;
    }
    let units: Vec<&str> = counters.iter().map(|c| c.unit.as_str()).collect();
    let renderer = Renderer::new(
        plan.format.clone(),
        &units,
        plan.repeat > 1,
        counters.iter().any(|c| c.cgroup_name.is_some()),
    );
    let mut state = State {
        plan: &plan,
        counters: &counters,
        renderer,
        out,
    };
    let mut event_loop = crate::session::EventLoop::new()?;
    let (runtime, mut signals) = event_loop.parts();

    let mut tallies: Vec<Vec<Tally>> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut supported = vec![true; counters.len()];
    let mut elapsed = Stats::default();
    let mut rusage = None;
    let mut status = 0;
    for _ in 0..plan.repeat {
        let outcome = state.run_once(runtime, signals)?;
        if state.plan.interval.is_none() {
            let (run_slots, values) = slot_readings(&plan, &outcome.places, &outcome.readings);
            if tallies.is_empty() {
                tallies = vec![vec![Tally::default(); run_slots.len()]; counters.len()];
                slots = run_slots;
            }
            for (c, per_slot) in values.iter().enumerate() {
                for (s, reading) in per_slot.iter().enumerate() {
                    if let (Some(t), Some(r)) = (tallies[c].get_mut(s), reading) {
                        t.push(*r, plan.scale);
                    }
                }
            }
            for (c, ok) in outcome.supported.iter().enumerate() {
                supported[c] &= *ok;
            }
        }
        elapsed.push(outcome.elapsed.as_nanos() as f64);
        rusage = outcome.rusage;
        status = match outcome.end {
            End::CommandExited(code) => code,
            _ => 0,
        };
        if outcome.end == End::Interrupted {
            break;
        }
    }
    if plan.interval.is_some() {
        return Ok(status);
    }
    let mut text = state.renderer.header(&plan.title, plan.repeat);
    if !plan.null_run {
        let lines = build_lines(
            &counters,
            &supported,
            &slots,
            &tallies,
            elapsed.mean,
            plan.repeat > 1,
        );
        for line in &lines {
            text.push_str(&state.renderer.line(line, None));
        }
    }
    // perf prints user and system time for a command it ran once, not system-wide.
    let rusage = match (&plan.target, plan.repeat) {
        (Target::Command, 1) => rusage,
        _ => None,
    };
    text.push_str(&state.renderer.footer(&Footer {
        elapsed,
        rusage,
        null_run: plan.null_run,
    }));
    write(&mut state.out, &text)?;
    Ok(status)
}

fn runtime_error(what: &str, e: std::io::Error) -> Error {
    Error::Runtime {
        message: format!("cannot {what}: {e}"),
        hints: Vec::new(),
    }
}

fn write(out: &mut Box<dyn Write>, text: &str) -> Result<(), Error> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Output)
}

/// One counter's readings over `-r` runs in one slot.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    value: Stats,
    enabled: Stats,
    running: Stats,
    counted: bool,
}

impl Tally {
    fn push(&mut self, reading: Reading, scale: bool) {
        let scaled = reading.scaled(scale);
        self.counted |= scaled.is_some();
        self.value.push(scaled.unwrap_or(0.0));
        self.enabled.push(reading.enabled as f64);
        self.running.push(reading.running as f64);
    }
}

/// Groups per-place readings into printed slots: the global sum, or one slot per CPU/thread.
/// Returns the slots and, per counter and slot, the reading (`None`: never opened there).
fn slot_readings(
    plan: &StatPlan,
    places: &[(Place, Slot)],
    readings: &[Vec<Option<Reading>>],
) -> (Vec<Slot>, Vec<Vec<Option<Reading>>>) {
    match plan.aggregation {
        Aggregation::Global => (
            vec![Slot::Global],
            readings
                .iter()
                .map(|per_place| {
                    let opened: Vec<&Reading> = per_place.iter().flatten().collect();
                    vec![(!opened.is_empty()).then(|| aggregate(opened))]
                })
                .collect(),
        ),
        Aggregation::PerCpu | Aggregation::PerThread => (
            places.iter().map(|(_, slot)| slot.clone()).collect(),
            readings.to_vec(),
        ),
    }
}

/// Lines in perf's order (event by event, then slot by slot; threads by decreasing count).
fn build_lines(
    counters: &[Counter],
    supported: &[bool],
    slots: &[Slot],
    tallies: &[Vec<Tally>],
    wall_ns: f64,
    repeated: bool,
) -> Vec<Line> {
    let mut lines = Vec::new();
    let metrics_of = |s: usize| -> Vec<MetricInput> {
        counters
            .iter()
            .enumerate()
            .map(|(c, counter)| MetricInput {
                role: counter.role,
                context: counter.context,
                value: (supported[c] && tallies[c][s].value.n > 0)
                    .then_some(tallies[c][s].value.mean),
            })
            .collect()
    };
    let inputs: Vec<Vec<MetricInput>> = (0..slots.len()).map(metrics_of).collect();
    for (c, counter) in counters.iter().enumerate() {
        let mut order: Vec<usize> = (0..slots.len()).collect();
        if matches!(slots.first(), Some(Slot::Thread { .. })) {
            order.sort_by(|&a, &b| {
                tallies[c][b]
                    .value
                    .mean
                    .total_cmp(&tallies[c][a].value.mean)
            });
        }
        for s in order {
            let tally = &tallies[c][s];
            let count = if !supported[c] {
                Count::NotSupported
            } else if !tally.counted {
                Count::NotCounted
            } else {
                Count::Value(tally.value.mean * counter.scale)
            };
            let (running, enabled) = match count {
                Count::NotSupported => (0, 0),
                _ => (tally.running.mean as u64, tally.enabled.mean as u64),
            };
            let noise = repeated.then(|| match slots[s] {
                Slot::Global if tally.counted => tally.value.relative_pct(),
                _ => 0.0,
            });
            let metric = match count {
                Count::Value(_) => metric(&inputs[s], c, wall_ns),
                _ => Metric::None,
            };
            lines.push(Line {
                slot: slots[s].clone(),
                count,
                unit: counter.unit.clone(),
                fractional: counter.scale.fract() != 0.0,
                event: counter.name.clone(),
                cgroup: counter.cgroup_name.clone(),
                running,
                enabled,
                noise,
                metric,
            });
        }
    }
    lines
}

/// What one run measured.
struct Outcome {
    places: Vec<(Place, Slot)>,
    /// Final readings, per counter and place.
    readings: Vec<Vec<Option<Reading>>>,
    supported: Vec<bool>,
    elapsed: Duration,
    rusage: Option<(f64, f64)>,
    end: End,
}

struct State<'a> {
    plan: &'a StatPlan,
    counters: &'a [Counter],
    renderer: Renderer,
    out: Box<dyn Write>,
}

type Signals = (tokio::signal::unix::Signal, tokio::signal::unix::Signal);

impl State<'_> {
    fn run_once(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        signals: &mut Signals,
    ) -> Result<Outcome, Error> {
        let plan = self.plan;
        // The command is forked before the counters exist and held before its exec.
        let mut launched = match plan.command.is_empty() {
            true => None,
            false => Some(launch::launch(&plan.command)?),
        };
        let places = places(plan, launched.as_ref())?;
        let on_exec = plan.target == Target::Command && plan.delay.is_none();
        let opened = if plan.null_run {
            Opened {
                units: Vec::new(),
                supported: Vec::new(),
            }
        } else {
            open_all(plan, self.counters, &places, on_exec)?
        };
        let before = os::children_cpu_time();
        let started = Instant::now();
        if let Some(child) = launched.as_mut() {
            child.release()?;
        }
        if !on_exec && plan.delay.is_none() {
            enable(&opened, true)?;
        }
        // Tests (and users attaching with -p) wait for this line before starting the work.
        if plan.verbose && plan.delay.is_none() {
            eprintln!(
                "tracer stat: counting{}",
                if on_exec {
                    " from the command's exec"
                } else {
                    ""
                }
            );
        }
        let end = self.wait(
            runtime,
            signals,
            &opened,
            &places,
            launched.as_mut(),
            started,
        )?;
        // A command still running (timeout, Ctrl-C) is sent SIGTERM and reaped before the
        // counters are read, so that its children's counts are folded in.
        if matches!(end, End::Timeout | End::Interrupted | End::IntervalsDone) {
            drop(launched.take());
        }
        let elapsed = started.elapsed();
        enable(&opened, false)?;
        let readings = read_all(
            &opened,
            self.counters.len(),
            places.len(),
            plan.verbose,
            self.counters,
        )?;
        let after = os::children_cpu_time();
        // The command has been reaped: its CPU time is in RUSAGE_CHILDREN.
        let rusage = (!plan.command.is_empty()).then_some((after.0 - before.0, after.1 - before.1));
        if plan.verbose {
            eprintln!("tracer stat: run ended: {end:?}");
        }
        Ok(Outcome {
            places,
            readings,
            supported: opened.supported,
            elapsed,
            rusage,
            end,
        })
    }

    /// Runs until the command exits, the timeout, Ctrl-C, the targets exit or the last
    /// interval; prints interval rows on the way.
    fn wait(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        signals: &mut Signals,
        opened: &Opened,
        places: &[(Place, Slot)],
        mut launched: Option<&mut Launched>,
        started: Instant,
    ) -> Result<End, Error> {
        use tokio::time::{sleep_until, Instant as TokioInstant};
        let plan = self.plan;
        let start = TokioInstant::from_std(started);
        let far = start + Duration::from_secs(86_400 * 365);
        let io_error = |e: std::io::Error| runtime_error("wait for the command", e);
        let watched: Vec<u32> = match &plan.target {
            Target::Processes(pids) | Target::Threads(pids) => pids.clone(),
            _ => Vec::new(),
        };
        let mut previous = vec![vec![Reading::default(); places.len()]; self.counters.len()];
        let mut printed = 0u64;
        let (interrupt, terminate) = (&mut signals.0, &mut signals.1);
        runtime.block_on(async {
            let pidfd = match launched.as_ref() {
                Some(child) => Some(crate::session::readable(child.pidfd()?).map_err(io_error)?),
                None => None,
            };
            let mut delay = plan.delay.map(|d| start + d);
            let mut tick = plan.interval.map(|d| start + d);
            let deadline = plan.timeout.map(|d| start + d);
            let mut check = tokio::time::interval(Duration::from_millis(100));
            loop {
                tokio::select! {
                    _ = sleep_until(delay.unwrap_or(far)), if delay.is_some() => {
                        delay = None;
                        enable(opened, true)?;
                        if plan.verbose {
                            eprintln!("tracer stat: counting (after the -D delay)");
                        }
                    }
                    _ = sleep_until(tick.unwrap_or(far)), if tick.is_some() => {
                        self.print_interval(opened, places, &mut previous, started)?;
                        printed += 1;
                        if plan.interval_count.is_some_and(|n| printed >= n) {
                            return Ok(End::IntervalsDone);
                        }
                        tick = tick.zip(plan.interval).map(|(t, d)| t + d);
                    }
                    _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                        return Ok(End::Timeout);
                    }
                    _ = interrupt.recv() => return Ok(self.interrupted(launched.as_deref_mut()).await),
                    _ = terminate.recv() => return Ok(self.interrupted(launched.as_deref_mut()).await),
                    ready = async { pidfd.as_ref().expect("guarded").readable().await }, if pidfd.is_some() => {
                        let mut guard = ready.map_err(io_error)?;
                        guard.clear_ready();
                        if let Some(code) = launched.as_mut().and_then(|c| c.try_wait()) {
                            if tick.is_some() {
                                // The last, partial interval.
                                self.print_interval(opened, places, &mut previous, started)?;
                            }
                            return Ok(End::CommandExited(code));
                        }
                    }
                    _ = check.tick(), if !watched.is_empty() => {
                        if watched.iter().all(|&pid| !alive(pid)) {
                            if tick.is_some() {
                                self.print_interval(opened, places, &mut previous, started)?;
                            }
                            return Ok(End::TargetGone);
                        }
                    }
                }
            }
        })
    }

    /// Ctrl-C or SIGTERM: a command that got the same signal from the terminal is given a
    /// moment to exit so that its own status is reported.
    async fn interrupted(&mut self, launched: Option<&mut Launched>) -> End {
        if let Some(child) = launched {
            for _ in 0..20 {
                if let Some(code) = child.try_wait() {
                    return End::CommandExited(code);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        End::Interrupted
    }

    fn print_interval(
        &mut self,
        opened: &Opened,
        places: &[(Place, Slot)],
        previous: &mut [Vec<Reading>],
        started: Instant,
    ) -> Result<(), Error> {
        let plan = self.plan;
        let now = read_all(
            opened,
            self.counters.len(),
            places.len(),
            false,
            self.counters,
        )?;
        let at = started.elapsed().as_nanos() as u64;
        let deltas: Vec<Vec<Option<Reading>>> = now
            .iter()
            .zip(previous.iter_mut())
            .map(|(cur, prev)| {
                cur.iter()
                    .zip(prev.iter_mut())
                    .map(|(c, p)| {
                        c.map(|c| {
                            let d = c.since(*p);
                            *p = c;
                            d
                        })
                    })
                    .collect()
            })
            .collect();
        let (slots, values) = slot_readings(plan, places, &deltas);
        let tallies: Vec<Vec<Tally>> = values
            .iter()
            .map(|per_slot| {
                per_slot
                    .iter()
                    .map(|r| {
                        let mut t = Tally::default();
                        if let Some(r) = r {
                            t.push(*r, plan.scale);
                        }
                        t
                    })
                    .collect()
            })
            .collect();
        let wall = plan.interval.unwrap_or_default().as_nanos() as f64;
        let lines = build_lines(
            self.counters,
            &opened.supported,
            &slots,
            &tallies,
            wall,
            false,
        );
        let mut text = self
            .renderer
            .interval_header(slots.first().unwrap_or(&Slot::Global));
        for line in &lines {
            text.push_str(&self.renderer.line(line, Some(at)));
        }
        write(&mut self.out, &text)
    }
}

/// Is this process or thread still running (not gone, not a zombie)?
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| !matches!(state, "Z" | "X")),
        Err(_) => false,
    }
}

/// Where the counters of this run go, and the slot each place prints in.
fn places(plan: &StatPlan, launched: Option<&Launched>) -> Result<Vec<(Place, Slot)>, Error> {
    let thread = |pid: u32, tid: u32| {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|c| c.trim_end().to_string())
            .unwrap_or_default();
        (Place::Task(tid), Slot::Thread { comm, tid })
    };
    let gone = |pid: u32, what: &str| Error::Runtime {
        message: format!("no {what} {pid}"),
        hints: vec!["check the id with `ps`; it may have exited".into()],
    };
    Ok(match &plan.target {
        Target::Command => {
            let pid = launched.expect("a command target has a command").pid();
            vec![(Place::Task(pid), Slot::Global)]
        }
        Target::Processes(pids) => {
            let mut out = Vec::new();
            for &pid in pids {
                let dir = std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map_err(|_| gone(pid, "process"))?;
                let mut tids: Vec<u32> = dir
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                    .collect();
                tids.sort_unstable();
                out.extend(tids.into_iter().map(|tid| thread(pid, tid)));
            }
            out
        }
        Target::Threads(tids) => {
            let mut out = Vec::new();
            for &tid in tids {
                if !std::path::Path::new(&format!("/proc/{tid}/task/{tid}")).exists() {
                    return Err(gone(tid, "thread"));
                }
                out.push(thread(tid, tid));
            }
            out
        }
        Target::Cpus(list) => {
            let cpus = match list {
                Some(cpus) => {
                    let online = perf::cpus::online()?;
                    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
                        return Err(Error::usage(
                            format!("CPU {bad} is not online"),
                            vec![format!(
                                "online CPUs: {}",
                                online
                                    .iter()
                                    .map(u32::to_string)
                                    .collect::<Vec<_>>()
                                    .join(",")
                            )],
                        ));
                    }
                    cpus.clone()
                }
                None => perf::cpus::online()?,
            };
            cpus.into_iter()
                .map(|c| (Place::Cpu(c), Slot::Cpu(c)))
                .collect()
        }
    })
}

/// Opens every counter on every place: each group on one place is a leader and members.
fn open_all(
    plan: &StatPlan,
    counters: &[Counter],
    places: &[(Place, Slot)],
    on_exec: bool,
) -> Result<Opened, Error> {
    // Counters in units: a group's members together, lone events alone.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, counter) in counters.iter().enumerate() {
        match (
            counter.group,
            i.checked_sub(1).and_then(|p| counters[p].group),
        ) {
            (Some(g), Some(prev)) if g == prev => groups.last_mut().expect("previous").push(i),
            _ => groups.push(vec![i]),
        }
    }
    let mut supported = vec![false; counters.len()];
    let mut errors: Vec<Option<perf::Error>> = (0..counters.len()).map(|_| None).collect();
    let mut units = Vec::new();
    let task = matches!(
        plan.target,
        Target::Command | Target::Processes(_) | Target::Threads(_)
    );
    for (p, (place, _)) in places.iter().enumerate() {
        for members in &groups {
            let grouped = counters[members[0]].group.is_some();
            let mut read_format = format::TOTAL_TIME_ENABLED | format::TOTAL_TIME_RUNNING;
            if grouped {
                read_format |= format::GROUP;
            }
            let mut leader: Option<Event> = None;
            let mut opened_members = Vec::new();
            let mut order = Vec::new();
            for &c in members {
                let counter = &counters[c];
                let scope = match (place, &counter.cgroup) {
                    (Place::Task(tid), _) => Scope::Task {
                        pid: *tid,
                        cpu: None,
                    },
                    (Place::Cpu(cpu), Some(dir)) => Scope::Cgroup {
                        dir: dir.clone(),
                        cpu: *cpu,
                    },
                    (Place::Cpu(cpu), None) => Scope::Cpu(*cpu),
                };
                let mut flags = counter.flags;
                if task && plan.inherit {
                    flags |= flag::INHERIT;
                }
                // Only leaders start disabled (and enable at exec): members follow them.
                if leader.is_none() {
                    flags |= flag::DISABLED;
                    if on_exec {
                        flags |= flag::ENABLE_ON_EXEC;
                    }
                }
                let options = Options {
                    flags,
                    read_format,
                    precise_ip: counter.precise,
                    ..Options::default()
                };
                let result = match leader.as_mut() {
                    None => Event::open(counter.name.clone(), &counter.kind, &options, &scope),
                    Some(l) => {
                        Event::open_member(l, counter.name.clone(), &counter.kind, &options, &scope)
                    }
                };
                match result {
                    Ok(event) => {
                        if plan.verbose && p == 0 {
                            eprintln!(
                                "tracer stat: opened {} ({}, read_format {}{})",
                                counter.name,
                                if leader.is_none() {
                                    "leader"
                                } else {
                                    "group member"
                                },
                                read_format_names(read_format),
                                match place {
                                    Place::Task(t) => format!(", task {t}"),
                                    Place::Cpu(c) => format!(", CPU {c}"),
                                }
                            );
                        }
                        supported[c] = true;
                        order.push(c);
                        match leader {
                            None => leader = Some(event),
                            Some(_) => opened_members.push(event),
                        }
                    }
                    Err(e) if e.errno().is_some_and(|n| NOT_SUPPORTED.contains(&n)) => {
                        errors[c].get_or_insert(e);
                    }
                    // A thread of a -p process that exited since it was listed.
                    Err(e)
                        if e.errno() == Some(libc::ESRCH)
                            && matches!(plan.target, Target::Processes(_)) =>
                    {
                        errors[c].get_or_insert(e);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if let Some(leader) = leader {
                units.push(Unit {
                    leader,
                    _members: opened_members,
                    counters: order,
                    place: p,
                });
            }
        }
    }
    for (c, error) in errors.iter().enumerate() {
        if let (false, Some(e)) = (supported[c], error) {
            if plan.verbose {
                eprintln!(
                    "tracer stat: {} is not supported: {}",
                    counters[c].name,
                    crate::describe(e)
                );
                for hint in e.hints() {
                    eprintln!("hint: {hint}");
                }
            }
        }
    }
    Ok(Opened { units, supported })
}

fn read_format_names(read_format: u64) -> String {
    let mut names = vec!["TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING"];
    if read_format & format::GROUP != 0 {
        names.push("GROUP");
    }
    names.join("|")
}

/// Enables (or disables) every leader: members follow their leader, and an ioctl on a
/// counter applies to the copies its inherited children got.
fn enable(opened: &Opened, on: bool) -> Result<(), Error> {
    for unit in &opened.units {
        let result = if on {
            unit.leader.enable(false)
        } else {
            unit.leader.disable(false)
        };
        // Disabling a counter whose task has exited can fail; its counts are final anyway.
        if on {
            result?;
        }
    }
    Ok(())
}

/// Reads every unit with one read(2) each; returns readings per counter and place.
fn read_all(
    opened: &Opened,
    counters: usize,
    places: usize,
    verbose: bool,
    defs: &[Counter],
) -> Result<Vec<Vec<Option<Reading>>>, Error> {
    let mut readings = vec![vec![None; places]; counters];
    for unit in &opened.units {
        let counts = unit.leader.read()?;
        if verbose && unit.place == 0 {
            let names: Vec<&str> = unit
                .counters
                .iter()
                .map(|&c| defs[c].name.as_str())
                .collect();
            eprintln!(
                "tracer stat: read {{{}}}: one read(2), {} value{}",
                names.join(","),
                counts.values.len(),
                if counts.values.len() == 1 { "" } else { "s" }
            );
        }
        for (k, &c) in unit.counters.iter().enumerate() {
            if let Some(value) = counts.values.get(k) {
                readings[c][unit.place] = Some(Reading {
                    value: value.value,
                    enabled: counts.time_enabled.unwrap_or(0),
                    running: counts.time_running.unwrap_or(0),
                });
            }
        }
    }
    Ok(readings)
}

fn open_destination(destination: &Destination) -> Result<Box<dyn Write>, Error> {
    Ok(match destination {
        Destination::Stderr => Box::new(std::io::stderr()),
        Destination::File { path, append } => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(*append)
                .truncate(!*append)
                .open(path)
                .map_err(|e| Error::Runtime {
                    message: format!("cannot write {}: {e}", path.display()),
                    hints: vec!["check the directory exists and is writable".into()],
                })?;
            Box::new(std::io::BufWriter::new(file))
        }
        Destination::Fd(fd) => Box::new(os::file_from_fd(*fd).map_err(|e| {
            Error::usage(
                format!("--log-fd {fd}: {e}"),
                vec![format!(
                    "open it in the shell first: tracer stat --log-fd {fd} ... {fd}>FILE"
                )],
            )
        })?),
    })
}

/// The cgroup filesystem's mount point (cgroup v2, else v1's perf_event hierarchy).
fn cgroup_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut v1 = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        match fields[2] {
            "cgroup2" => return Some(fields[1].into()),
            "cgroup" if fields[3].split(',').any(|o| o == "perf_event") => {
                v1 = Some(fields[1].into())
            }
            _ => {}
        }
    }
    v1
}

fn open_cgroup(name: &str) -> Result<Arc<OwnedFd>, Error> {
    let root = cgroup_root().ok_or_else(|| Error::Runtime {
        message: "no cgroup filesystem is mounted".into(),
        hints: vec!["mount cgroup2: `mount -t cgroup2 none /sys/fs/cgroup`".into()],
    })?;
    let dir = root.join(name);
    let file = std::fs::File::open(&dir)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_dir()))
        .ok_or_else(|| {
            Error::usage(
                format!("no cgroup '{name}' (looked for {})", dir.display()),
                vec![format!(
                    "-G takes a cgroup path relative to {}",
                    root.display()
                )],
            )
        })?;
    Ok(Arc::new(OwnedFd::from(file)))
}

/// Resolves every event against this kernel: tracepoint ids, PMU types and terms, probe
/// targets, cgroup directories.
fn resolve(plan: &StatPlan, legacy: &mut Vec<LegacyKprobe>) -> Result<Vec<Counter>, Error> {
    let mut tracefs: Option<Tracefs> = None;
    let mut fs = || -> Result<Tracefs, Error> {
        if tracefs.is_none() {
            tracefs = Some(Tracefs::locate()?);
        }
        Ok(tracefs.clone().expect("set above"))
    };
    let pmus = Pmus::default();
    let mut cgroups: Vec<(String, Arc<OwnedFd>)> = Vec::new();
    let mut counters = Vec::new();
    for (index, (spec, cgroup)) in plan.events.iter().zip(&plan.cgroups).enumerate() {
        let cgroup = match cgroup {
            Some(name) => match cgroups.iter().find(|(n, _)| n == name) {
                Some((_, fd)) => Some((name.clone(), fd.clone())),
                None => {
                    let fd = open_cgroup(name)?;
                    cgroups.push((name.clone(), fd.clone()));
                    Some((name.clone(), fd))
                }
            },
            None => None,
        };
        for (name, kind, role, unit, scale) in resolve_one(spec, &mut fs, &pmus, legacy, index)? {
            let hardware = matches!(
                kind,
                EventKind::Hardware(_) | EventKind::HwCache { .. } | EventKind::Raw(_)
            );
            let mut flags = spec.modifiers.flags();
            // perf counts hardware events on the host only unless G/H/u say otherwise.
            if hardware && spec.modifiers == plan::stat::Modifiers::default() {
                flags |= flag::EXCLUDE_GUEST;
            }
            counters.push(Counter {
                name,
                kind,
                flags,
                precise: spec.modifiers.precise,
                group: spec.group,
                role,
                context: spec.modifiers.context(),
                unit,
                scale,
                cgroup: cgroup.as_ref().map(|(_, fd)| fd.clone()),
                cgroup_name: cgroup.as_ref().map(|(n, _)| n.clone()),
            });
        }
    }
    Ok(counters)
}

type Resolved = (String, EventKind, Role, String, f64);

fn resolve_one(
    spec: &EventSpec,
    fs: &mut dyn FnMut() -> Result<Tracefs, Error>,
    pmus: &Pmus,
    legacy: &mut Vec<LegacyKprobe>,
    index: usize,
) -> Result<Vec<Resolved>, Error> {
    let plain =
        |kind: EventKind, role: Role| vec![(spec.name.clone(), kind, role, String::new(), 1.0)];
    Ok(match &spec.source {
        Source::Software(sw) => {
            if matches!(sw, Software::TaskClock | Software::CpuClock) {
                vec![(
                    spec.name.clone(),
                    EventKind::Software(*sw),
                    Role::Clock,
                    "msec".into(),
                    1e-6,
                )]
            } else {
                plain(EventKind::Software(*sw), Role::Other)
            }
        }
        Source::Hardware(hw) => plain(
            EventKind::Hardware(*hw),
            match hw {
                Hardware::CpuCycles => Role::Cycles,
                Hardware::Instructions => Role::Instructions,
                Hardware::BranchInstructions => Role::Branches,
                Hardware::BranchMisses => Role::BranchMisses,
                Hardware::CacheReferences => Role::CacheReferences,
                Hardware::CacheMisses => Role::CacheMisses,
                Hardware::StalledCyclesFrontend => Role::StalledFrontend,
                Hardware::StalledCyclesBackend => Role::StalledBackend,
                _ => Role::Other,
            },
        ),
        Source::Cache { id, op, result } => plain(
            EventKind::HwCache {
                id: *id,
                op: *op,
                result: *result,
            },
            match (op, result) {
                (CacheOp::Read, CacheResult::Access) => Role::CacheLoads(*id as u8),
                (CacheOp::Read, CacheResult::Miss) => Role::CacheLoadMisses(*id as u8),
                _ => Role::Other,
            },
        ),
        Source::Raw(config) => plain(EventKind::Raw(*config), Role::Other),
        Source::Breakpoint { kind, addr, len } => plain(
            EventKind::Breakpoint {
                kind: *kind,
                addr: *addr,
                len: *len,
            },
            Role::Other,
        ),
        Source::Pmu { pmu, terms } => {
            let found = pmus.get(pmu)?.ok_or_else(|| {
                let names = pmus.names();
                let similar = plan::similar(pmu, names.iter().map(String::as_str), 3);
                let mut hints = vec![format!("PMUs here: {}", names.join(", "))];
                if let Some(best) = similar.first() {
                    hints.insert(0, format!("did you mean '{best}'?"));
                }
                Error::usage(format!("no PMU '{pmu}' in event '{}'", spec.name), hints)
            })?;
            let (words, unit, scale) = encode_pmu(pmus, &found, terms, &spec.name)?;
            vec![(
                spec.name.clone(),
                EventKind::Pmu {
                    pmu_type: found.type_,
                    config: words[0],
                    config1: words[1],
                    config2: words[2],
                },
                Role::Other,
                unit,
                scale,
            )]
        }
        Source::Tracepoint { category, name } => {
            let fs = fs()?;
            let glob = |s: &str| s.contains(['*', '?']);
            if glob(category) || glob(name) {
                let matches: Vec<(String, String)> = fs
                    .tracepoints()
                    .into_iter()
                    .filter(|(c, n)| plan::glob_match(category, c) && plan::glob_match(name, n))
                    .collect();
                if matches.is_empty() {
                    return Err(Error::usage(
                        format!("'{category}:{name}' matches no tracepoint"),
                        vec![format!("list them with `tracer list '{category}:*'`")],
                    ));
                }
                let mut out = Vec::new();
                for (c, n) in matches {
                    let id = fs.tracepoint_id(&c, &n)?;
                    out.push((
                        format!("{c}:{n}"),
                        EventKind::Tracepoint(id),
                        Role::Other,
                        String::new(),
                        1.0,
                    ));
                }
                out
            } else {
                // The same did-you-mean as `tracer probe`.
                let id = fs
                    .tracepoint_id(category, name)
                    .map_err(|e| crate::probe::tracepoint_error(e, &fs, category, name))?;
                plain(EventKind::Tracepoint(id), Role::Other)
            }
        }
        Source::Probe(probe) => resolve_probe(spec, probe, fs, legacy, index)?,
    })
}

/// Encodes `pmu/terms/`: format fields, `config*` words directly, and event aliases from
/// `events/NAME` (with their `.unit` and `.scale`).
fn encode_pmu(
    pmus: &Pmus,
    pmu: &perf::pmu::Pmu,
    terms: &[plan::stat::PmuTerm],
    event: &str,
) -> Result<([u64; 3], String, f64), Error> {
    let mut words = [0u64; 3];
    let mut fields: Vec<(String, u64)> = Vec::new();
    let (mut unit, mut scale) = (String::new(), 1.0);
    let events_dir = pmus.root().join(&pmu.name).join("events");
    for term in terms {
        match (term.name.as_str(), term.value) {
            ("config", Some(v)) => words[0] |= v,
            ("config1", Some(v)) => words[1] |= v,
            ("config2", Some(v)) => words[2] |= v,
            (name, Some(v)) => fields.push((name.to_string(), v)),
            (name, None) if pmu.format.contains_key(name) => fields.push((name.to_string(), 1)),
            (name, None) => {
                let alias = std::fs::read_to_string(events_dir.join(name)).map_err(|_| {
                    let mut known: Vec<String> = pmu.format.keys().cloned().collect();
                    if let Ok(dir) = std::fs::read_dir(&events_dir) {
                        known.extend(
                            dir.flatten()
                                .map(|e| e.file_name().to_string_lossy().into_owned())
                                .filter(|n| !n.contains('.')),
                        );
                    }
                    let similar = plan::similar(name, known.iter().map(String::as_str), 1);
                    let mut hints = vec![format!(
                        "{} knows: {}",
                        pmu.name,
                        if known.is_empty() {
                            "no terms".to_string()
                        } else {
                            known.join(", ")
                        }
                    )];
                    if let Some(best) = similar.first() {
                        hints.insert(0, format!("did you mean '{best}'?"));
                    }
                    Error::usage(format!("unknown term '{name}' in event '{event}'"), hints)
                })?;
                for part in alias.trim().split(',').filter(|p| !p.is_empty()) {
                    let (key, value) = part.split_once('=').unwrap_or((part, "1"));
                    let value = plan::stat::parse_number(value).ok_or_else(|| Error::Runtime {
                        message: format!("cannot parse {}/{name}: '{part}'", events_dir.display()),
                        hints: Vec::new(),
                    })?;
                    match key {
                        "config" => words[0] |= value,
                        "config1" => words[1] |= value,
                        "config2" => words[2] |= value,
                        _ => fields.push((key.to_string(), value)),
                    }
                }
                if let Ok(u) = std::fs::read_to_string(events_dir.join(format!("{name}.unit"))) {
                    unit = u.trim().to_string();
                }
                if let Ok(s) = std::fs::read_to_string(events_dir.join(format!("{name}.scale"))) {
                    scale = s.trim().parse().unwrap_or(1.0);
                }
            }
        }
    }
    let encoded = pmu.encode(&fields).map_err(|e| match e {
        perf::Error::Invalid { what, reason } => {
            Error::usage(format!("invalid {what} in event '{event}'"), vec![reason])
        }
        other => other.into(),
    })?;
    for (w, e) in words.iter_mut().zip(encoded) {
        *w |= e;
    }
    Ok((words, unit, scale))
}

/// `kprobe:`/`uprobe:` events, resolved exactly as `tracer probe` resolves them (kprobe PMU or
/// `kprobe_events`, the same errors and alternatives); the legacy kprobe is kept in `legacy`
/// for as long as the counters live.
fn resolve_probe(
    spec: &EventSpec,
    probe: &plan::ProbeSpec,
    fs: &mut dyn FnMut() -> Result<Tracefs, Error>,
    legacy: &mut Vec<LegacyKprobe>,
    index: usize,
) -> Result<Vec<Resolved>, Error> {
    let fs = fs()?;
    let resolved = crate::probe::event_kind(&fs, probe, &mut None, None, index)?;
    legacy.extend(resolved.legacy);
    Ok(vec![(
        spec.name.clone(),
        resolved.kind,
        Role::Other,
        String::new(),
        1.0,
    )])
}

/// The few libc calls `tracer stat` needs beyond the perf layer.
mod os {
    #![allow(unsafe_code)]

    use std::os::fd::{BorrowedFd, OwnedFd};

    /// User and system CPU seconds of the reaped children so far (getrusage(2),
    /// RUSAGE_CHILDREN): the difference over a run is the command's, as perf stat shows it.
    pub fn children_cpu_time() -> (f64, f64) {
        // SAFETY: rusage is plain data; getrusage fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid `who` and a valid out-pointer.
        if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
            return (0.0, 0.0);
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (secs(usage.ru_utime), secs(usage.ru_stime))
    }

    /// The local time as ctime(3) prints it, with its newline (`Sun Nov 22 08:43:10 2026\n`).
    pub fn ctime_now() -> String {
        let mut buf = [0 as libc::c_char; 64];
        // SAFETY: time(NULL) has no preconditions; ctime_r writes at most 26 bytes into a
        // 64-byte buffer and NUL-terminates it.
        unsafe {
            let now = libc::time(std::ptr::null_mut());
            if libc::ctime_r(&now, buf.as_mut_ptr()).is_null() {
                return "?\n".into();
            }
            std::ffi::CStr::from_ptr(buf.as_ptr())
                .to_string_lossy()
                .into_owned()
        }
    }

    /// A duplicate of the caller's descriptor `fd` as a file (`--log-fd`).
    pub fn file_from_fd(fd: i32) -> std::io::Result<std::fs::File> {
        // SAFETY: F_GETFD only inspects the descriptor table.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just checked to be open, and nothing closes it while it is
        // borrowed here for the duplication.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let owned: OwnedFd = borrowed.try_clone_to_owned()?;
        Ok(std::fs::File::from(owned))
    }
}
