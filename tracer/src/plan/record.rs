//! `tracer record` input -> a record plan: what to record (probes, watchpoints, sampled
//! counters, context switches), whose, where to, and how.

use std::path::PathBuf;
use std::time::Duration;

use super::profile::{call_graph as call_graph_mode, Unwind};
use super::stat::{parse_events, EventSpec, Source};
use super::watch::{breakpoint_type, parse_watch, WatchTarget};
use super::{parse_spec, ProbeSpec};
use crate::cli::RecordArgs;
use crate::perf::{BreakpointType, Sampling};
use crate::Error;

/// A validated `tracer record`.
#[derive(Clone, Debug)]
pub struct RecordPlan {
    pub probes: Vec<ProbeSpec>,
    /// Targets with their breakpoint type and length.
    pub watches: Vec<(WatchTarget, BreakpointType, Option<u64>)>,
    /// Sampled counters (software, hardware, cache, raw, single tracepoints).
    pub counters: Vec<EventSpec>,
    pub sampling: Sampling,
    /// `-g`, `--call-graph fp|dwarf[,SIZE]`: how samples carry their user call chains (the
    /// kernel's always by frame pointers); `None` without.
    pub call_graph: Option<Unwind>,
    pub switches: bool,
    pub whom: super::Whom,
    pub duration: Option<Duration>,
    /// Data pages per CPU ring (a power of two).
    pub ring_pages: usize,
    pub reorder_window_ns: u64,
    pub live: bool,
    /// `None`: standard output (`-o -`).
    pub file: Option<PathBuf>,
    /// `--filter`: which probe hits are recorded.
    pub value_filter: Option<super::filter::FilterPlan>,
}

/// Every check of `tracer record`'s input, before anything is opened; `default_pages` is the
/// ring size when `--ring-pages` is not given.
pub fn record_plan(args: &RecordArgs, machine: &dyn super::Machine) -> Result<RecordPlan, Error> {
    if args.probes.is_empty() && args.watches.is_empty() && args.events.is_empty() && !args.switches
    {
        return Err(Error::usage_hints("nothing to record", &["add probes (-P SPEC), watchpoints (-W TARGET), sampled counters (-e EVENT -F HZ) or --switches"]));
    }
    if !args.watches.is_empty() && args.pid.is_none() && args.command.is_empty() {
        return Err(Error::usage_hints(
            "watchpoints (-W) need the process whose memory they watch",
            &["add -p PID or -- COMMAND"],
        ));
    }
    // -p names a process, not a thread of one.
    let tasks = crate::cli::Tasks {
        pid: args.pid,
        ..Default::default()
    };
    super::build_scope(&tasks, None, machine)?;
    let ring_pages =
        (args.ring_pages).unwrap_or_else(|| super::default_ring_pages(machine.online_cpus()));
    if !ring_pages.is_power_of_two() {
        return Err(Error::usage_hints(
            format!("--ring-pages {ring_pages} is not a power of two"),
            &["use 8, 16, 64, 256..."],
        ));
    }
    let mut watches = Vec::new();
    for text in &args.watches {
        let (target, kind, len) = parse_watch(text)?;
        super::watch::check_user_addresses(std::slice::from_ref(&target))?;
        watches.push((target, breakpoint_type(kind)?, len));
    }
    if watches.len() > tracer_common::PERF_EVENT_SLOTS as usize {
        return Err(Error::usage_hints(
            format!(
                "{} watchpoints given; x86 has 4 debug registers",
                watches.len()
            ),
            &["watch at most 4 locations at once"],
        ));
    }
    let sampling = match (args.freq, args.period) {
        (_, Some(0)) | (Some(0), _) => {
            return Err(Error::usage_hints(
                "a sampling rate of 0 samples nothing",
                &["give -F HZ or --period N above 0"],
            ))
        }
        (Some(hz), _) => Sampling::Frequency(hz),
        (None, Some(n)) => Sampling::Period(n),
        (None, None) => Sampling::Frequency(1000),
    };
    let counters = counters(args)?;
    let call_graph = call_graph(args)?;
    if call_graph.is_some() && counters.is_empty() {
        return Err(Error::usage_hints(
            "-g records the call chains of sampled counters, and none is given",
            &["add a counter to sample, e.g. -e cpu-clock -F 999 -g"],
        ));
    }
    let stdout = crate::output::is_stdout(&args.output);
    if stdout && args.live {
        return Err(Error::usage_hints(
            "--live prints to standard output, where -o - writes the recording",
            &["record to a file with --live, or pipe -o - into `tracer report -`"],
        ));
    }
    Ok(RecordPlan {
        probes: args
            .probes
            .iter()
            .map(|s| parse_spec(s))
            .collect::<Result<_, _>>()?,
        watches,
        counters,
        sampling,
        call_graph,
        switches: args.switches,
        whom: super::Whom::of(&args.command, args.pid.as_slice()),
        duration: args.duration,
        ring_pages,
        reorder_window_ns: args.reorder_window,
        live: args.live,
        file: (!stdout).then(|| args.output.clone()),
        value_filter: args
            .filter
            .as_deref()
            .map(super::filter::parse)
            .transpose()?,
    })
}

/// `-g` (frame pointers, as `perf record -g`) or `--call-graph MODE`.
fn call_graph(args: &RecordArgs) -> Result<Option<Unwind>, Error> {
    match args.call_graph.as_deref() {
        None => Ok(args.call_graph_fp.then_some(Unwind::FramePointers)),
        Some(mode) => call_graph_mode(mode).map(Some),
    }
}

/// The sampled counters: events `tracer record` can sample (a probe goes in -P).
fn counters(args: &RecordArgs) -> Result<Vec<EventSpec>, Error> {
    if args.events.is_empty() {
        if args.freq.is_some() || args.period.is_some() {
            return Err(Error::usage_hints(
                "-F/--period given without a counter",
                &["name the counter to sample with -e, e.g. -e task-clock -F 999"],
            ));
        }
        return Ok(Vec::new());
    }
    let specs = parse_events(&args.events)?;
    for spec in &specs {
        match &spec.source {
            Source::Software(_) | Source::Hardware(_) | Source::Cache { .. } | Source::Raw(_) => {}
            Source::Tracepoint { name, .. } if !name.contains(['*', '?']) => {}
            _ => {
                return Err(Error::usage_hints(format!("-e {} cannot be sampled by tracer record", spec.name), &["sample software, hardware, cache, raw or single tracepoint events; probes go in -P"]))
            }
        }
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(line: &[&str]) -> Result<RecordPlan, Error> {
        let cli = crate::cli::Cli::try_parse_from(
            ["tracer", "record"].iter().chain(line.iter()).copied(),
        )
        .expect("parses");
        match cli.command {
            crate::cli::Command::Record(args) => {
                record_plan(&args, &crate::plan::tests::FakeMachine::CPUS_128)
            }
            _ => unreachable!("a record command"),
        }
    }

    #[test]
    fn a_record_plan_says_what_whose_and_where() {
        let p = plan(&[
            "-o",
            "t.tracer",
            "-W",
            "counter:rw:4",
            "-e",
            "page-faults",
            "--period",
            "1",
            "--",
            "./prog",
        ])
        .unwrap();
        assert_eq!(p.watches.len(), 1);
        assert_eq!(
            (p.watches[0].1, p.watches[0].2),
            (BreakpointType::ReadWrite, Some(4))
        );
        assert_eq!(p.sampling, Sampling::Period(1));
        assert_eq!(
            (p.ring_pages, p.file.clone()),
            (64, Some(PathBuf::from("t.tracer")))
        );
        assert_eq!(plan(&["-o", "-", "--switches"]).unwrap().file, None);
    }

    #[test]
    fn bad_record_input_is_explained() {
        let err = |line: &[&str]| plan(line).unwrap_err().to_string();
        assert_eq!(err(&["-o", "t"]), "nothing to record");
        assert_eq!(
            err(&["-o", "t", "-W", "x"]),
            "watchpoints (-W) need the process whose memory they watch"
        );
        assert_eq!(
            err(&["-o", "t", "--switches", "--ring-pages", "3"]),
            "--ring-pages 3 is not a power of two"
        );
        assert_eq!(
            err(&["-o", "t", "-e", "page-faults", "-F", "0"]),
            "a sampling rate of 0 samples nothing"
        );
        assert_eq!(
            err(&["-o", "t", "--switches", "-F", "9"]),
            "-F/--period given without a counter"
        );
        assert_eq!(
            err(&["-o", "-", "--live", "--switches"]),
            "--live prints to standard output, where -o - writes the recording"
        );
        assert_eq!(
            err(&["-o", "t", "--switches", "-g"]),
            "-g records the call chains of sampled counters, and none is given"
        );
        assert_eq!(
            err(&["-o", "t", "-e", "cpu-clock", "--call-graph", "dwarf,100"]),
            "--call-graph dwarf,100: the stack size must be a multiple of 8 from 8 to 65528"
        );
        assert_eq!(
            err(&["-o", "t", "-e", "cpu-clock", "--call-graph", "fq"]),
            "unknown --call-graph mode 'fq'"
        );
    }

    #[test]
    fn call_chains_are_asked_with_g_or_call_graph() {
        let g = |line: &[&str]| plan(line).unwrap().call_graph;
        assert_eq!(g(&["-o", "t", "-e", "cpu-clock"]), None);
        let fp = Some(Unwind::FramePointers);
        assert_eq!(g(&["-o", "t", "-e", "cpu-clock", "-g"]), fp);
        assert_eq!(g(&["-o", "t", "-e", "cpu-clock", "--call-graph", "fp"]), fp);
        assert_eq!(
            g(&["-o", "t", "-e", "cpu-clock", "--call-graph", "dwarf"]),
            Some(Unwind::Dwarf { stack_bytes: 8192 })
        );
        assert_eq!(
            g(&["-o", "t", "-e", "cpu-clock", "--call-graph", "dwarf,4096"]),
            Some(Unwind::Dwarf { stack_bytes: 4096 })
        );
    }
}
