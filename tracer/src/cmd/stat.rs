//! `tracer stat`: perf stat's counting. Each event is opened per task (a command and, by
//! inheritance, its children; processes; threads) or per CPU (system-wide, cgroups), groups
//! are read in one read(2) with `PERF_FORMAT_GROUP`, and the readings are summed, scaled for
//! multiplexing and printed with perf's derived metrics.
//!
//! `-- COMMAND` follows perf: the command is forked and held before its exec, the counters are
//! opened on its pid with `enable_on_exec` and `inherit`, then it is released; the counters
//! start at the exec, so tracer's own fork and the held child's wait are not counted.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::counter::open::{enable, open_all, places, read_all};
use crate::counter::resolve::resolve;
use crate::counter::{os, Counter, Opened, Place};

use crate::cli::StatArgs;
use crate::launch::{self, Launched};
use crate::output::stat::{
    aggregate, metric, Count, Footer, Line, Metric, MetricInput, Reading, Renderer, Slot, Stats,
};
use crate::plan;
use crate::plan::stat::{Aggregation, Destination, StatPlan, Target};
use crate::Error;

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    CommandExited(i32),
    Interrupted,
    Timeout,
    TargetGone,
    IntervalsDone,
}

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
    let (runtime, signals) = event_loop.parts();

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
