//! `tracer stat`: perf stat's counting. Each event is opened per task (a command and, by
//! inheritance, its children; processes; threads) or per CPU (system-wide, cgroups), groups
//! are read in one read(2) with `PERF_FORMAT_GROUP`, and the readings are summed, scaled for
//! multiplexing and printed with perf's derived metrics.
//!
//! `-- COMMAND` follows perf: the command is forked and held before its exec, the counters are
//! opened on its pid with `enable_on_exec` and `inherit`, then it is released; the counters
//! start at the exec, so tracer's own fork and the held child's wait are not counted.

use crate::cli::StatArgs;
use crate::counter::resolve::resolve;
use crate::counter::run::{open_destination, write, End, State};
use crate::counter::{os, tally::build_lines, tally::slot_readings, tally::Totals};
use crate::output::stat::{Footer, Renderer, Stats};
use crate::plan;
use crate::plan::stat::{Destination, Target};
use crate::Error;

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

    let mut totals = Totals::new(counters.len());
    let mut elapsed = Stats::default();
    let mut rusage = None;
    let mut status = 0;
    for _ in 0..plan.repeat {
        let outcome = state.run_once(runtime, signals)?;
        if state.plan.interval.is_none() {
            let places = &outcome.places;
            let (run_slots, values) = slot_readings(plan.aggregation, places, &outcome.readings);
            totals.fold(run_slots, &values, &outcome.supported, plan.scale);
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
            &totals.supported,
            &totals.slots,
            &totals.tallies,
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
