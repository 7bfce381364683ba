//! `tracer stat`: perf stat's counting. Each event is opened per task (a command and, by
//! inheritance, its children; processes; threads) or per CPU (system-wide, cgroups), groups
//! are read in one read(2) with `PERF_FORMAT_GROUP`, and the readings are summed, scaled for
//! multiplexing and printed with perf's derived metrics.
//!
//! `-- COMMAND` follows perf: the command is forked and held before its exec, the counters are
//! opened on its pid with `enable_on_exec` and `inherit`, then it is released; the counters
//! start at the exec, so tracer's own fork and the held child's wait are not counted.

use crate::cli::{StatArgs, StatReportArgs};
use crate::counter::resolve::{resolve, user_only_fallback};
use crate::counter::run::{open_destination, skip_zero, write, CountEnd, State};
use crate::counter::saved::Saved;
use crate::counter::tally::{build_lines, metric_header_units, slot_readings, Totals};
use crate::counter::Counter;
use crate::counter::Place;
use crate::counter::{cpu_metrics, os, topology};
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::output::notes;
use crate::output::stat::StatFormat;
use crate::output::stat::{Footer, Renderer, Slot, Stats};
use crate::plan;
use crate::plan::stat::Aggregation;
use crate::plan::stat::{Counted, Destination, StatPlan, METRICS};
use crate::Error;

pub fn run(args: StatArgs) -> Result<i32, Error> {
    let plan = plan::stat::stat_plan(&args)?;
    note_metrics_asked(&plan);
    // Kept open until tracer exits: the legacy kprobes the counters use.
    let mut legacy = Vec::new();
    let counters = counters(&plan, &mut legacy)?;
    let mut out = match plan.quiet {
        true => Box::new(std::io::sink()),
        false => open_destination(&plan.destination)?,
    };
    if let Destination::File { .. } = plan.destination {
        write(&mut out, &format!("# started on {}\n", os::ctime_now()))?;
    }
    let units: Vec<&str> = counters.iter().map(|c| c.unit.as_str()).collect();
    let mut renderer = Renderer::new(
        plan.format.clone(),
        &units,
        plan.repeat > 1,
        counters.iter().any(|c| c.cgroup_name.is_some()),
    );
    renderer.header_every_interval = plan.interval_clear;
    renderer.thousands = os::thousands_separator();
    let topology = match plan.aggregation.is_topology() {
        true => topology::read_live(&crate::perf::cpus::online()?),
        false => Vec::new(),
    };
    let mut state = State {
        plan: &plan,
        counters: &counters,
        renderer,
        out,
        topology,
    };
    // Kept to the end: a signal while the report is written still ends the run cleanly.
    let mut event_loop = crate::session::EventLoop::new()?;
    let Some(runs) = run_all(&mut state, &mut event_loop)? else {
        // perf stat: "Workload failed", no report, status 255 (the child said why).
        return Ok(255);
    };
    // Every run is read: tracepoint counters close after tracer exits.
    crate::perf::deferred::defer_closes();
    if let (Some(path), Some(file)) = (&plan.record, &runs.saved) {
        file.write(path)?;
    }
    if plan.interval.is_none() || plan.summary {
        let text = final_report(&mut state, &runs);
        write(&mut state.out, &text)?;
    }
    Ok(runs.status)
}

/// What `-r` runs add up to.
struct Runs {
    totals: Totals,
    elapsed: Stats,
    /// The last run's user and system time.
    rusage: Option<(f64, f64)>,
    /// The last run's command's exit status (0 without a command).
    status: i32,
    /// `stat record`'s file, filled run by run.
    saved: Option<Saved>,
}

/// `-M`: says of each name no metric of tracer's has what perf would; and of `--topdown` on
/// a CPU without its events.
fn note_metrics_asked(plan: &StatPlan) {
    let table = match plan.unknown_metrics.is_empty() {
        true => None,
        false => cpu_metrics::running_table(),
    };
    for name in &plan.unknown_metrics {
        // perf's words; it then counts as if -M had not been given.
        match table.map(|t| (t, t.lookup(name))) {
            Some((table, found)) if !found.is_empty() => note_table_metric(name, table, &found),
            Some(_) => notes::note(format_args!("Cannot find metric or group `{name}'")),
            None => {
                notes::note(format_args!("Cannot find metric or group `{name}'"));
                notes::hint(
                    "tracer has perf's metric names for AMD family 19h CPUs only: \
                     `perf list metrics` lists this CPU's",
                );
            }
        }
    }
    if plan.topdown && !std::path::Path::new(TOPDOWN_EVENT).exists() {
        notes::note("System does not support topdown: --topdown needs the CPU's topdown events");
    }
}

/// The plan's events as counters of this machine, user space only where the kernel's
/// paranoia refuses the rest (as perf stat falls back, and says so).
fn counters(plan: &StatPlan, legacy: &mut Vec<LegacyKprobe>) -> Result<Vec<Counter>, Error> {
    let mut counters = resolve(plan, legacy).map_err(|e| match plan.transaction {
        // perf's words for -T on a CPU without TSX.
        true => Error::Runtime {
            message: format!("Cannot set up transaction events: {}", crate::describe(&e)),
            hints: vec![
                "-T needs Intel TSX events (cpu/tx-start/ and others in `tracer list`)".into(),
            ],
        },
        false => e,
    })?;
    if let Some(level) = user_only_fallback(&mut counters) {
        // perf says this only with -v; tracer says it unless the output is CSV or JSON,
        // whose consumers read stderr as data.
        if plan.verbose || matches!(plan.format, StatFormat::Human { .. }) && !plan.quiet {
            notes::note(format_args!(
                "kernel.perf_event_paranoid={level}: falling back to excluding kernel and \
                 hypervisor samples (events marked :u), as perf stat does"
            ));
            notes::hint(
                "count kernel space too as root, with CAP_PERFMON, or after \
                 `sysctl kernel.perf_event_paranoid=1`",
            );
        }
    }
    Ok(counters)
}

/// Runs the counting `-r` times (until an interrupt), adding each run to the totals and to
/// `stat record`'s file; `None` when the command could not be executed.
fn run_all(
    state: &mut State<'_>,
    event_loop: &mut crate::session::EventLoop,
) -> Result<Option<Runs>, Error> {
    let (plan, counters) = (state.plan, state.counters);
    let (runtime, signals) = event_loop.parts();
    let mut runs = Runs {
        totals: Totals::new(counters.len()),
        elapsed: Stats::default(),
        rusage: None,
        status: 0,
        saved: None,
    };
    for _ in 0..plan.repeat {
        let outcome = state.run_once(runtime, signals)?;
        if outcome.exec_failed {
            return Ok(None);
        }
        if plan.record.is_some() {
            let file = runs.saved.get_or_insert_with(|| {
                Saved::new(
                    &plan.title,
                    plan.counted == Counted::Command,
                    counters,
                    &outcome.places,
                    &topology::read_live(&crate::perf::cpus::online().unwrap_or_default()),
                )
            });
            file.push_run(
                outcome.elapsed.as_nanos() as u64,
                outcome.rusage,
                &outcome.supported,
                &outcome.readings,
            );
        }
        if plan.interval.is_none() || plan.summary {
            let places = &outcome.places;
            let (run_slots, values) =
                slot_readings(plan.aggregation, places, &outcome.readings, &state.topology);
            (runs.totals).fold(run_slots, &values, &outcome.supported, plan.scale);
        }
        runs.elapsed.push(outcome.elapsed.as_nanos() as f64);
        runs.rusage = outcome.rusage;
        runs.status = match outcome.end {
            CountEnd::CommandExited(code) => code,
            _ => 0,
        };
        if outcome.end == CountEnd::Interrupted {
            break;
        }
    }
    Ok(Some(runs))
}

/// The report after the runs (or after the intervals, with `--summary`): perf stat's header,
/// a line per counter (or `--metric-only`'s), and its footer.
fn final_report(state: &mut State<'_>, runs: &Runs) -> String {
    let (plan, counters, totals) = (state.plan, state.counters, &runs.totals);
    let lines = match plan.null_run {
        true => Vec::new(),
        false => build_lines(
            counters,
            &totals.supported,
            &totals.slots,
            &totals.tallies,
            runs.elapsed.mean,
            plan.repeat > 1,
            skip_zero(plan),
        ),
    };
    note_missing_metrics(plan, counters, &totals.supported);
    let summary_rows = plan.interval.is_some();
    let mut text = match (summary_rows, &plan.format) {
        // perf's --summary: CSV rows labelled `summary` where the timestamp was.
        (true, StatFormat::Csv { .. }) | (true, StatFormat::Json) => String::new(),
        _ => state.renderer.header(&plan.title, plan.repeat),
    };
    if plan.metric_only {
        let units = metric_header_units(
            counters,
            &totals.supported,
            &totals.slots,
            &totals.tallies,
            runs.elapsed.mean,
        );
        let slot = totals.slots.first().unwrap_or(&Slot::Global);
        text.push_str(&state.renderer.metric_only_header(slot, &units, false));
        let label = summary_rows && plan.csv_summary_label;
        text.push_str(&state.renderer.metric_only_rows(&lines, None, label));
    } else {
        for line in &lines {
            let row = state.renderer.line(line, None);
            match (&plan.format, summary_rows && plan.csv_summary_label) {
                (StatFormat::Csv { sep }, true) => {
                    text.push_str(&format!("{:>16}{sep}{row}", "summary"))
                }
                _ => text.push_str(&row),
            }
        }
    }
    // perf prints user and system time for a command it ran once, not system-wide.
    let rusage = match (&plan.counted, plan.repeat) {
        (Counted::Command, 1) => runs.rusage,
        _ => None,
    };
    text.push_str(&state.renderer.footer(&Footer {
        elapsed: runs.elapsed,
        rusage,
        null_run: plan.null_run,
    }));
    text
}

/// Says of each `-M` metric whose events this machine does not count that it is left out.
fn note_missing_metrics(plan: &StatPlan, counters: &[Counter], supported: &[bool]) {
    for metric in &plan.metrics {
        let (_, needs, unit) = METRICS
            .iter()
            .find(|(m, _, _)| m == metric)
            .expect("the plan's metrics are known");
        let missing: Vec<&str> = (needs.iter())
            .filter(|n| (counters.iter().zip(supported)).any(|(c, ok)| c.name == **n && !ok))
            .copied()
            .collect();
        if !missing.is_empty() {
            notes::note(format_args!(
                "metric {metric} ({unit}) is not computed: {} <not supported> here",
                missing.join(", ")
            ));
        }
    }
}

/// `-M NAME` where NAME is a metric or group of perf's table for this CPU: tracer has the
/// names, not the events' encodings, and counts what perf counts when it cannot set a metric
/// up (the events given, or the default ones). perf says `Cannot find PMU` of the first
/// event it cannot parse; tracer names the metrics and what they need.
fn note_table_metric(name: &str, table: &cpu_metrics::Table, found: &[&cpu_metrics::TableMetric]) {
    let what = match found {
        [one] if one.name.eq_ignore_ascii_case(name) => format!("metric {}", one.name),
        _ => {
            let names: Vec<&str> = found.iter().map(|m| m.name).collect();
            format!("metric group {name} ({})", names.join(", "))
        }
    };
    let mut events: Vec<&str> = found
        .iter()
        .flat_map(|m| m.events.iter().copied())
        .collect();
    let mut seen = std::collections::HashSet::new();
    events.retain(|e| seen.insert(*e));
    // A group's events can run to dozens: the first few name the kind.
    let mut events: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    if events.len() > 6 {
        let more = events.len() - 4;
        events.truncate(4);
        events.push(format!("{more} more"));
    }
    match std::path::Path::new(CPU_PMU).exists() {
        false => notes::note(format_args!(
            "{what} of perf's {} table for this CPU is not computed: its events are not \
             supported here, without the CPU's PMU ({})",
            table.name,
            events.join(", ")
        )),
        true => {
            notes::note(format_args!(
                "{what} of perf's {} table for this CPU is not computed: tracer has perf's \
                 metric names, not its event tables ({})",
                table.name,
                events.join(", ")
            ));
            notes::hint(format_args!("`perf stat -M {name}` computes it"));
        }
    }
}

/// The CPU's core PMU, where the kernel lists it: the events of perf's tables are its.
const CPU_PMU: &str = "/sys/bus/event_source/devices/cpu";

/// Where the kernel lists a CPU's topdown events (perf's `topdown_sys_has_perf_metrics`).
const TOPDOWN_EVENT: &str = "/sys/bus/event_source/devices/cpu/events/topdown-total-slots";

/// `tracer stat report -i FILE`: a recording's report, aggregated as asked.
pub fn report(args: StatReportArgs) -> Result<i32, Error> {
    let saved = Saved::read(&args.input)?;
    let counters = saved.counters();
    let places = saved.places();
    let topology = saved.topology();
    let per_cpu = !places.is_empty() && places.iter().all(|(p, _)| matches!(p, Place::Cpu(_)));
    let per_thread = places
        .iter()
        .any(|(_, s)| matches!(s, crate::output::stat::Slot::Thread { .. }));
    let asked = [
        (args.no_aggr, Aggregation::PerCpu),
        (args.per_socket, Aggregation::PerSocket),
        (args.per_die, Aggregation::PerDie),
        (args.per_core, Aggregation::PerCore),
        (args.per_node, Aggregation::PerNode),
    ]
    .into_iter()
    .find(|(on, _)| *on)
    .map(|(_, a)| a);
    let aggregation = match (asked, per_cpu) {
        (Some(a), true) => a,
        (Some(_), false) => {
            // perf stat report's words.
            notes::note("processing task data, aggregation mode not set");
            Aggregation::Global
        }
        (None, _) if per_thread => Aggregation::PerThread,
        (None, _) => Aggregation::Global,
    };
    let format = match (&args.separator, args.json) {
        (Some(sep), _) if sep.is_empty() => {
            return Err(Error::usage(
                "-x needs a separator",
                vec!["e.g. -x,".into()],
            ))
        }
        (Some(sep), _) => StatFormat::Csv { sep: sep.clone() },
        (None, true) => StatFormat::Json,
        (None, false) => StatFormat::Human { big_num: true },
    };
    let units: Vec<&str> = counters.iter().map(|c| c.unit.as_str()).collect();
    let runs = saved.runs.len() as u32;
    let mut renderer = Renderer::new(
        format,
        &units,
        runs > 1,
        counters.iter().any(|c| c.cgroup_name.is_some()),
    );
    renderer.thousands = os::thousands_separator();
    let mut totals = Totals::new(counters.len());
    let mut elapsed = Stats::default();
    for run in &saved.runs {
        let (slots, values) = slot_readings(aggregation, &places, &run.readings(), &topology);
        totals.fold(slots, &values, &run.supported, true);
        elapsed.push(run.elapsed_ns as f64);
    }
    let lines = build_lines(
        &counters,
        &totals.supported,
        &totals.slots,
        &totals.tallies,
        elapsed.mean,
        runs > 1,
        false,
    );
    let mut text = renderer.header(&saved.title, runs.max(1));
    for line in &lines {
        text.push_str(&renderer.line(line, None));
    }
    // perf stat report prints no user and system lines.
    text.push_str(&renderer.footer(&Footer {
        elapsed,
        rusage: None,
        null_run: false,
    }));
    let mut out = open_destination(&Destination::Stderr)?;
    write(&mut out, &text)?;
    Ok(0)
}
