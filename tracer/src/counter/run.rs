//! One counting run: launch the command held before its exec, open the counters on their
//! places, enable them (at the exec, at once, or after `-D`), wait for the end (the command's
//! exit, `--timeout`, Ctrl-C, the targets gone, the last `-I` interval) printing interval rows
//! on the way, and read the counters.

use std::io::Write;
use std::time::{Duration, Instant};

use super::open::{enable, open_all, places, read_all};
use super::tally::{build_lines, metric_header_units, slot_readings, Tally};
use super::topology::CpuPlace;
use super::{os, Counter, Opened, Place};
use crate::launch::{self, Launched};
use crate::output::notes;
use crate::output::stat::{Reading, Renderer, Slot, CONSOLE_CLEAR};
use crate::plan::stat::{Aggregation, Counted, Destination, StatPlan, ToolEvent};
use crate::session::{self, Signals};
use crate::Error;

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountEnd {
    CommandExited(i32),
    Interrupted,
    Timeout,
    TargetGone,
    IntervalsDone,
}

pub fn runtime_error(what: &str, e: std::io::Error) -> Error {
    Error::Runtime {
        message: format!("cannot {what}: {e}"),
        hints: Vec::new(),
    }
}

pub fn write(out: &mut Box<dyn Write>, text: &str) -> Result<(), Error> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Output)
}

/// What one run measured.
pub struct Outcome {
    pub places: Vec<(Place, Slot)>,
    /// Final readings, per counter and place.
    pub readings: Vec<Vec<Option<Reading>>>,
    pub supported: Vec<bool>,
    pub elapsed: Duration,
    pub rusage: Option<(f64, f64)>,
    pub end: CountEnd,
    /// The command could not be executed (its child said why): perf prints no report.
    pub exec_failed: bool,
}

pub struct State<'a> {
    pub plan: &'a StatPlan,
    pub counters: &'a [Counter],
    pub renderer: Renderer,
    pub out: Box<dyn Write>,
    /// Where each CPU sits, for the topology aggregations (empty otherwise).
    pub topology: Vec<(u32, CpuPlace)>,
}

/// Runs a `--pre`/`--post` shell command; perf stops when one fails.
fn hook(flag: &str, command: &str) -> Result<(), Error> {
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .status()
        .map_err(|e| runtime_error(&format!("run the {flag} command '{command}'"), e))?;
    match status.code() {
        Some(0) => Ok(()),
        code => Err(Error::Runtime {
            message: format!(
                "the {flag} command '{command}' failed ({})",
                code.map_or("killed by a signal".into(), |c| format!("status {c}"))
            ),
            hints: vec![format!("check it alone: sh -c '{command}'")],
        }),
    }
}

/// The readings of the tool events (perf's `duration_time`, `user_time`, `system_time`):
/// value, enabled and running all the measured ns, as perf prints them.
pub fn tool_readings(
    counters: &[Counter],
    readings: &mut [Vec<Option<Reading>>],
    elapsed_ns: u64,
    rusage: Option<(f64, f64)>,
) {
    for (c, counter) in counters.iter().enumerate() {
        let Some(tool) = counter.tool else { continue };
        let ns = match tool {
            ToolEvent::DurationTime => elapsed_ns,
            ToolEvent::UserTime => rusage.map_or(0, |r| (r.0 * 1e9).round() as u64),
            ToolEvent::SystemTime => rusage.map_or(0, |r| (r.1 * 1e9).round() as u64),
        };
        if let Some(first) = readings[c].first_mut() {
            *first = Some(Reading {
                value: ns,
                enabled: ns,
                running: ns,
            });
        }
    }
}

impl State<'_> {
    pub fn run_once(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        signals: &mut Signals,
    ) -> Result<Outcome, Error> {
        let plan = self.plan;
        if let Some(pre) = &plan.pre {
            hook("--pre", pre)?;
        }
        // The command is forked before the counters exist and held before its exec.
        let mut launched = match plan.command.is_empty() {
            true => None,
            false => Some(launch::launch(&plan.command)?),
        };
        // Its whole tree dies with tracer, should tracer be killed (guard.rs).
        let _tree = (launched.as_ref()).and_then(|child| session::guard_tree(child.pid()));
        let places = places(plan, launched.as_ref())?;
        let on_exec = plan.counted == Counted::Command && plan.delay.is_none();
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
        // Counters not enabled by the exec (-a, -p with a command) are on before the command
        // runs its first instruction.
        if !on_exec && plan.delay.is_none() {
            enable(&opened, true)?;
        }
        if let Some(child) = launched.as_mut() {
            child.release()?;
        }
        // Tests (and users attaching with -p) wait for this line before starting the work.
        if plan.verbose && plan.delay.is_none() {
            let from = if on_exec {
                " from the command's exec"
            } else {
                ""
            };
            notes::progress("stat", format_args!("counting{from}"));
        }
        let end = self.wait(
            runtime,
            signals,
            &opened,
            &places,
            launched.as_mut(),
            started,
        )?;
        let exec_failed = matches!(end, CountEnd::CommandExited(_))
            && launched.as_mut().and_then(|c| c.exec_failed()).is_some();
        // A command still running (timeout, Ctrl-C) is sent SIGTERM and reaped before the
        // counters are read, so that its children's counts are folded in.
        if matches!(
            end,
            CountEnd::Timeout | CountEnd::Interrupted | CountEnd::IntervalsDone
        ) {
            drop(launched.take());
        }
        let elapsed = started.elapsed();
        enable(&opened, false)?;
        let mut readings = read_all(
            &opened,
            self.counters.len(),
            places.len(),
            plan.verbose,
            self.counters,
        )?;
        let after = os::children_cpu_time();
        // The command has been reaped: its CPU time is in RUSAGE_CHILDREN.
        let rusage = (!plan.command.is_empty()).then_some((after.0 - before.0, after.1 - before.1));
        tool_readings(
            self.counters,
            &mut readings,
            elapsed.as_nanos() as u64,
            rusage,
        );
        if let Some(post) = &plan.post {
            hook("--post", post)?;
        }
        if plan.verbose {
            notes::progress("stat", format_args!("run ended: {end:?}"));
        }
        Ok(Outcome {
            places,
            readings,
            supported: opened.supported,
            elapsed,
            rusage,
            end,
            exec_failed,
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
    ) -> Result<CountEnd, Error> {
        use tokio::time::{sleep_until, Instant as TokioInstant};
        let plan = self.plan;
        let start = TokioInstant::from_std(started);
        let far = start + Duration::from_secs(86_400 * 365);
        let io_error = |e: std::io::Error| runtime_error("wait for the command", e);
        // With a command, the command's end is the run's end (perf's `-p PID -- CMD`).
        let watched: Vec<u32> = match &plan.counted {
            Counted::Processes(pids) | Counted::Threads(pids) if plan.command.is_empty() => {
                pids.clone()
            }
            _ => Vec::new(),
        };
        let mut previous = vec![vec![Reading::default(); places.len()]; self.counters.len()];
        let mut printed = 0u64;
        runtime.block_on(async {
            let pidfd = match launched.as_ref() {
                Some(child) => Some(session::readable(child.pidfd()?).map_err(io_error)?),
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
                            notes::progress("stat", "counting (after the -D delay)");
                        }
                    }
                    _ = sleep_until(tick.unwrap_or(far)), if tick.is_some() => {
                        self.print_interval(opened, places, &mut previous, started)?;
                        printed += 1;
                        tick = tick.zip(plan.interval).map(|(t, d)| t + d);
                        if plan.interval_count.is_some_and(|n| printed >= n) {
                            // perf stops printing and, with a command, waits for it
                            // (`wait4` after its loop): its status is the run's.
                            if launched.is_none() {
                                return Ok(CountEnd::IntervalsDone);
                            }
                            tick = None;
                        }
                    }
                    _ = sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                        return Ok(CountEnd::Timeout);
                    }
                    _ = signals.recv() => return Ok(self.interrupted(launched.as_deref_mut()).await),
                    ready = async { pidfd.as_ref().expect("guarded").readable().await }, if pidfd.is_some() => {
                        let mut guard = ready.map_err(io_error)?;
                        guard.clear_ready();
                        if let Some(code) = launched.as_mut().and_then(|c| c.try_wait()) {
                            if tick.is_some() {
                                // The last, partial interval.
                                self.print_interval(opened, places, &mut previous, started)?;
                            }
                            return Ok(CountEnd::CommandExited(code));
                        }
                    }
                    _ = check.tick(), if !watched.is_empty() => {
                        if watched.iter().all(|&pid| !session::alive(pid)) {
                            if tick.is_some() {
                                self.print_interval(opened, places, &mut previous, started)?;
                            }
                            return Ok(CountEnd::TargetGone);
                        }
                    }
                }
            }
        })
    }

    /// Ctrl-C or SIGTERM: a command that got the same signal from the terminal is given a
    /// moment to exit so that its own status is reported.
    async fn interrupted(&mut self, launched: Option<&mut Launched>) -> CountEnd {
        match launched.and_then(|child| child.exits_within(Duration::from_millis(200))) {
            Some(code) => CountEnd::CommandExited(code),
            None => CountEnd::Interrupted,
        }
    }

    fn print_interval(
        &mut self,
        opened: &Opened,
        places: &[(Place, Slot)],
        previous: &mut [Vec<Reading>],
        started: Instant,
    ) -> Result<(), Error> {
        let plan = self.plan;
        let mut now = read_all(
            opened,
            self.counters.len(),
            places.len(),
            false,
            self.counters,
        )?;
        let at = started.elapsed().as_nanos() as u64;
        tool_readings(self.counters, &mut now, at, None);
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
        let (slots, values) = slot_readings(plan.aggregation, places, &deltas, &self.topology);
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
            skip_zero(plan),
        );
        if plan.interval_clear {
            // perf's CONSOLE_CLEAR, with puts(3)'s newline, on standard output.
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(CONSOLE_CLEAR.as_bytes());
            let _ = stdout.flush();
        }
        let slot = slots.first().unwrap_or(&Slot::Global);
        let text = match plan.metric_only {
            true => {
                let units =
                    metric_header_units(self.counters, &opened.supported, &slots, &tallies, wall);
                let mut text = self.renderer.metric_only_header(slot, &units, true);
                text.push_str(&self.renderer.metric_only_rows(&lines, Some(at), false));
                text
            }
            false => {
                let mut text = self.renderer.interval_header(slot);
                for line in &lines {
                    text.push_str(&self.renderer.line(line, Some(at)));
                }
                text
            }
        };
        write(&mut self.out, &text)
    }
}

/// perf leaves out zero counts of `-a --per-thread` (every thread of the system).
pub fn skip_zero(plan: &StatPlan) -> bool {
    plan.aggregation == Aggregation::PerThread && matches!(plan.counted, Counted::Cpus(_))
}

pub fn open_destination(destination: &Destination) -> Result<Box<dyn Write>, Error> {
    Ok(match destination {
        Destination::Stderr => Box::new(crate::output::stderr_lines()),
        Destination::File { path, append } => {
            let existing = match append {
                true => crate::output::Existing::Append,
                false => crate::output::Existing::Truncate,
            };
            Box::new(std::io::BufWriter::new(crate::output::create(
                path, existing,
            )?))
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
