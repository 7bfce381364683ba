//! `tracer stat` input -> a validated plan: the `-e` event grammar (`events`) and every
//! target and mode check, each in a builder of its own that `stat_plan` composes. No side
//! effects: what the kernel has (tracepoints, PMUs, symbols) is looked up by the command.

use std::path::PathBuf;
use std::time::Duration;

use crate::output::stat::StatFormat;
use crate::Error;

mod events;

pub(crate) use events::parse_number;
use events::{builtin, DETAILED};
pub use events::{
    builtin_names, cache_names, default_events, parse_cache, parse_events, EventSpec, Modifiers,
    PmuTerm, Source, ToolEvent, METRICS, TRANSACTION_EVENTS,
};

/// Whose events are counted. Not a [`super::Whom`]: perf stat counts threads and CPUs too,
/// and a `-- COMMAND` beside `-p`, `-t` or `-a` is how long the run lasts, not what it counts
/// (`perf stat -a -- sleep 1`); the plan's `command` says that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Counted {
    /// `-- COMMAND` alone: the command and (unless `-i`) its children.
    Command,
    /// `-p`: every thread of these processes.
    Processes(Vec<u32>),
    /// `-t`: these threads.
    Threads(Vec<u32>),
    /// `-a` or `-C`: every task on these CPUs (`None`: all online CPUs).
    Cpus(Option<Vec<u32>>),
}

/// How counts are grouped into lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    Global,
    /// `-A`
    PerCpu,
    /// `--per-thread`
    PerThread,
    /// `--per-socket`
    PerSocket,
    /// `--per-die`
    PerDie,
    /// `--per-core`
    PerCore,
    /// `--per-node`
    PerNode,
    /// `--per-cache[=LEVEL]`: `None` is the last level.
    PerCache(Option<u8>),
}

impl Aggregation {
    /// Counts summed over the CPUs of a topology group.
    pub fn is_topology(self) -> bool {
        matches!(
            self,
            Aggregation::PerSocket
                | Aggregation::PerDie
                | Aggregation::PerCore
                | Aggregation::PerNode
                | Aggregation::PerCache(_)
        )
    }
}

/// Where the report goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// perf stat's default: the command's own stdout stays clean.
    Stderr,
    File {
        path: PathBuf,
        append: bool,
    },
    Fd(i32),
}

/// A validated `tracer stat` invocation.
#[derive(Clone, Debug)]
pub struct StatPlan {
    pub events: Vec<EventSpec>,
    /// One entry per event (`-G`): the cgroup it is restricted to.
    pub cgroups: Vec<Option<String>>,
    pub counted: Counted,
    pub command: Vec<String>,
    /// The report title: `'cmd args'`, `'system wide'`, `process id '42'`...
    pub title: String,
    pub inherit: bool,
    pub aggregation: Aggregation,
    pub interval: Option<Duration>,
    pub interval_count: Option<u64>,
    pub timeout: Option<Duration>,
    pub delay: Option<Duration>,
    pub repeat: u32,
    pub null_run: bool,
    pub verbose: bool,
    pub scale: bool,
    pub format: StatFormat,
    pub destination: Destination,
    /// `--summary`: the totals after the intervals; `--no-csv-summary` drops their label.
    pub summary: bool,
    pub csv_summary_label: bool,
    /// `--interval-clear`
    pub interval_clear: bool,
    /// `--quiet`: no report.
    pub quiet: bool,
    /// `--pre`/`--post`: shell commands around each run.
    pub pre: Option<String>,
    pub post: Option<String>,
    /// `-M`: the known metrics asked for (their events are in `events`), and the names
    /// no metric has.
    pub metrics: Vec<&'static str>,
    pub unknown_metrics: Vec<String>,
    pub metric_only: bool,
    pub topdown: bool,
    pub transaction: bool,
    /// `tracer stat record -o FILE`: the counts are also written to FILE.
    pub record: Option<PathBuf>,
}

fn id_list(text: &str, what: &str) -> Result<Vec<u32>, Error> {
    let ids: Result<Vec<u32>, _> = text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<u32>())
        .collect();
    match ids {
        Ok(ids) if !ids.is_empty() && !ids.contains(&0) => Ok(ids),
        _ => Err(Error::usage_hints(
            format!("invalid {what} list '{text}'"),
            &["give comma-separated ids from `ps`, e.g. 1234,5678"],
        )),
    }
}

/// Checks every `tracer stat` argument and builds the plan, one part at a time (ripgrep's
/// `HiArgs` builds its options so): each builder checks its own flags against what the parts
/// before it decided.
pub fn stat_plan(args: &crate::cli::StatArgs) -> Result<StatPlan, Error> {
    let command = args.command.clone();
    let given = parse_events(&args.events)?;
    let counted = counted(args, &command)?;
    // -p/-t with a command: perf counts the tasks for as long as the command runs.
    let system_wide = matches!(counted, Counted::Cpus(_));
    let (events, metrics, unknown_metrics) = events(args, given, system_wide)?;
    let aggregation = aggregation(args, &counted, system_wide)?;
    let cgroups = cgroups(args, events.len(), system_wide)?;
    let (interval, timeout, delay) = timing(args)?;
    let repeat = repeat(args, &command, interval.is_some())?;
    let format = format(args)?;
    let (record, destination) = destinations(args)?;
    Ok(StatPlan {
        cgroups,
        events,
        title: title(args, &counted, &command),
        counted,
        command,
        inherit: !args.no_inherit,
        aggregation,
        interval,
        interval_count: args.interval_count,
        timeout,
        delay,
        repeat,
        null_run: args.null_run,
        verbose: args.verbose,
        scale: !args.no_scale,
        format,
        destination,
        summary: args.summary,
        csv_summary_label: !args.no_csv_summary,
        interval_clear: args.interval_clear,
        quiet: args.quiet,
        pre: args.pre.clone(),
        post: args.post.clone(),
        metrics,
        unknown_metrics,
        metric_only: args.metric_only,
        topdown: args.topdown,
        transaction: args.transaction,
        record,
    })
}

type Args = crate::cli::StatArgs;

/// Whose events are counted: `-p`, `-t`, `-a`/`-C`, or the command (the whole system
/// without one, as perf stat counts until Ctrl-C).
fn counted(args: &Args, command: &[String]) -> Result<Counted, Error> {
    Ok(
        match (&args.pid, &args.tid, args.all_cpus || args.cpus.is_some()) {
            (Some(_), Some(_), _) => {
                return Err(Error::usage_hints(
                    "-p and -t cannot be combined",
                    &["give threads with -t only"],
                ))
            }
            (Some(_), _, true) | (_, Some(_), true) => {
                return Err(Error::usage_hints(
                    "-p/-t cannot be combined with -a/-C",
                    &["count either tasks or CPUs"],
                ))
            }
            (Some(p), None, false) => Counted::Processes(id_list(p, "process id")?),
            (None, Some(t), false) => Counted::Threads(id_list(t, "thread id")?),
            (None, None, true) => Counted::Cpus(match &args.cpus {
                Some(list) => Some(crate::perf::cpus::parse_list(list).map_err(|e| {
                    Error::usage_hints(e.to_string(), &["CPU lists look like 0-3,5"])
                })?),
                None => None,
            }),
            (None, None, false) if command.is_empty() => Counted::Cpus(None),
            (None, None, false) => Counted::Command,
        },
    )
}

/// The report's title, as perf words it.
fn title(args: &Args, target: &Counted, command: &[String]) -> String {
    match (target, &args.cpus) {
        (Counted::Command, _) => format!("'{}'", command.join(" ")),
        (Counted::Processes(_), _) => format!("process id '{}'", args.pid.as_deref().unwrap_or("")),
        (Counted::Threads(_), _) => format!("thread id '{}'", args.tid.as_deref().unwrap_or("")),
        (Counted::Cpus(_), Some(list)) if !args.all_cpus => format!("'CPU(s) {list}'"),
        (Counted::Cpus(_), _) => "'system wide'".into(),
    }
}

/// The events counted (`-e`'s, `given`; `-T`'s set, the events of `-M`'s metrics, perf's defaults,
/// `-d`'s sets, `--all-user`/`--all-kernel`), the known metrics asked for, and the names no
/// metric has.
#[allow(clippy::type_complexity)]
fn events(
    args: &Args,
    given: Vec<EventSpec>,
    system_wide: bool,
) -> Result<(Vec<EventSpec>, Vec<&'static str>, Vec<String>), Error> {
    let mut events = given;
    if args.null_run && !events.is_empty() {
        return Err(Error::usage_hints(
            "-n counts nothing, but events were given",
            &["drop -n to count the events, or -e to time the command only"],
        ));
    }
    if args.transaction {
        if !events.is_empty() {
            return Err(Error::usage_hints("-T counts its own events: drop -e", &[]));
        }
        events = parse_events(&[TRANSACTION_EVENTS.to_string()])?;
    }
    let (metrics, unknown_metrics) = metrics(args, &mut events);
    // perf counts its default events when no metric was found either.
    if events.is_empty() && !args.null_run {
        events = default_events(system_wide);
    }
    if args.topdown && !system_wide {
        return Err(Error::usage_hints(
            "top down event configuration requires system-wide mode (-a)",
            &["add -a"],
        ));
    }
    if args.null_run && args.detailed > 0 {
        return Err(Error::usage_hints(
            "-n counts nothing, but -d asks for more events",
            &[],
        ));
    }
    // -d appends its sets to the events given or the default ones, as perf's.
    for set in DETAILED.iter().take(args.detailed.min(3) as usize) {
        events.extend(set.iter().map(|name| built_in(name)));
    }
    if args.all_user || args.all_kernel {
        for event in &mut events {
            let m = &mut event.modifiers;
            m.exclude_user = args.all_kernel;
            m.exclude_kernel = args.all_user;
            m.exclude_hv = true;
        }
    }
    Ok((events, metrics, unknown_metrics))
}

/// A built-in event by its name, unmodified.
fn built_in(name: &str) -> EventSpec {
    EventSpec {
        name: name.to_string(),
        source: builtin(name).expect("built-in name"),
        modifiers: Modifiers::default(),
        group: None,
    }
}

/// `-M`: the known metrics asked for, whose events are added to `events` where missing, and
/// the names no metric has.
fn metrics(args: &Args, events: &mut Vec<EventSpec>) -> (Vec<&'static str>, Vec<String>) {
    let asked = (args.metrics.iter())
        .flat_map(|m| m.split(','))
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let (mut metrics, mut unknown) = (Vec::new(), Vec::new());
    for name in asked {
        let known = METRICS
            .iter()
            .find(|(m, _, _)| m.eq_ignore_ascii_case(name));
        let Some((metric, needs, _)) = known else {
            unknown.push(name.to_string());
            continue;
        };
        metrics.push(*metric);
        for need in *needs {
            if !events.iter().any(|e| e.name == *need) {
                events.push(built_in(need));
            }
        }
    }
    (metrics, unknown)
}

/// `--per-cache[=LEVEL]`: `Some(None)` is the last level cache.
fn per_cache(args: &Args) -> Result<Option<Option<u8>>, Error> {
    let Some(level) = args.per_cache.as_deref() else {
        return Ok(None);
    };
    if level.is_empty() {
        return Ok(Some(None));
    }
    let n = (level.strip_prefix(['L', 'l']).unwrap_or(level))
        .parse::<u8>()
        .ok()
        .filter(|n| (1..=4).contains(n));
    match n {
        Some(n) => Ok(Some(Some(n))),
        None => Err(Error::usage_hints(
            format!("--per-cache={level}: not a cache level"),
            &["give L1, L2 or L3, or no level for the last level cache"],
        )),
    }
}

/// How counts are grouped into lines: a topology (`--per-socket` ... `-A`), `--per-thread`,
/// or one total.
fn aggregation(args: &Args, target: &Counted, system_wide: bool) -> Result<Aggregation, Error> {
    let per_cache = per_cache(args)?;
    let topology = [
        (args.per_socket, "--per-socket", Aggregation::PerSocket),
        (args.per_die, "--per-die", Aggregation::PerDie),
        (args.per_core, "--per-core", Aggregation::PerCore),
        (args.per_node, "--per-node", Aggregation::PerNode),
        (
            per_cache.is_some(),
            "--per-cache",
            Aggregation::PerCache(per_cache.flatten()),
        ),
        (args.no_aggr, "-A", Aggregation::PerCpu),
    ]
    .into_iter()
    .find(|(on, _, _)| *on);
    let refused = |message: String, hints: &[&str]| Err(Error::usage_hints(message, hints));
    match (topology, args.per_thread) {
        (Some((_, flag, _)), true) => {
            refused(format!("{flag} and --per-thread cannot be combined"), &[])
        }
        // perf: "both cgroup and no-aggregation modes only available in system-wide mode".
        (Some((_, flag, _)), false) if !system_wide => refused(
            format!("{flag} needs system-wide counting"),
            &["add -a, or -C CPUS"],
        ),
        (Some((_, _, aggregation)), false) => Ok(aggregation),
        (None, true) if matches!(target, Counted::Cpus(Some(_))) => refused(
            "--per-thread with -C is not supported".into(),
            &["count every thread with -a --per-thread, or give -p/-t"],
        ),
        (None, true) if *target == Counted::Command => refused(
            "--per-thread needs threads to count: -p, -t or -a".into(),
            &["e.g. tracer stat --per-thread -p 1234"],
        ),
        // perf's words (it exits 234).
        (None, true) if args.metric_only => refused(
            "--metric-only is not supported with --per-thread".into(),
            &["drop --per-thread, or drop --metric-only"],
        ),
        (None, true) => Ok(Aggregation::PerThread),
        (None, false) => Ok(Aggregation::Global),
    }
}

/// `-G`: one cgroup per event in order, a single one for all; empty entries mean none.
fn cgroups(args: &Args, events: usize, system_wide: bool) -> Result<Vec<Option<String>>, Error> {
    let names: Vec<&str> = args.cgroup.iter().flat_map(|g| g.split(',')).collect();
    if names.is_empty() {
        return Ok(vec![None; events]);
    }
    if !system_wide {
        return Err(Error::usage_hints(
            "-G (cgroup) counting needs system-wide counting",
            &["add -a: cgroup events count on every CPU"],
        ));
    }
    if names.len() > events {
        return Err(Error::usage_hints(
            format!("{} cgroups for {events} events", names.len()),
            &["each cgroup applies to the event in the same position; one cgroup applies to all"],
        ));
    }
    // Kept as given: perf prints `/` for the root cgroup (the counter layer opens it
    // relative to the cgroup mount).
    let cgroup = |n: &str| (!n.trim().is_empty()).then(|| n.trim().to_string());
    Ok(match names.len() {
        1 => vec![cgroup(names[0]); events],
        _ => (0..events)
            .map(|i| names.get(i).and_then(|n| cgroup(n)))
            .collect(),
    })
}

/// When counts are printed and the run ends: `-I` with `--interval-count`, `--timeout`, and
/// `-D`'s delay before counting starts.
#[allow(clippy::type_complexity)]
fn timing(args: &Args) -> Result<(Option<Duration>, Option<Duration>, Option<Duration>), Error> {
    let interval = match args.interval {
        Some(ms) if ms < 10 => {
            return Err(Error::usage_hints(
                format!("-I {ms}: the print interval must be at least 10 ms"),
                &["e.g. -I 100"],
            ))
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    if args.interval_count.is_some() && interval.is_none() {
        return Err(Error::usage_hints(
            "--interval-count needs -I",
            &["e.g. -I 100 --interval-count 10"],
        ));
    }
    if args.interval_count == Some(0) {
        return Err(Error::usage_hints(
            "--interval-count 0 would print nothing",
            &["give a positive count"],
        ));
    }
    let timeout = match args.timeout {
        Some(_) if interval.is_some() => {
            return Err(Error::usage_hints(
                "--timeout cannot be combined with -I",
                &["stop interval printing with --interval-count N"],
            ))
        }
        Some(ms) if ms < 10 => {
            return Err(Error::usage_hints(
                format!("--timeout {ms}: the minimum is 10 ms"),
                &[],
            ))
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    let delay = match args.delay {
        Some(-1) => {
            return Err(Error::usage_hints(
                "-D -1 (start disabled) needs --control, which tracer stat does not implement",
                &["delay by a fixed time instead: -D MSECS"],
            ))
        }
        Some(ms) if ms < 0 => {
            return Err(Error::usage_hints(
                format!("-D {ms} is not a delay"),
                &["-D MSECS"],
            ))
        }
        Some(0) | None => None,
        Some(ms) => Some(Duration::from_millis(ms as u64)),
    };
    Ok((interval, timeout, delay))
}

/// `-r`: how many runs of the command; and the flags that need a command (`--pre`, `--post`)
/// or intervals (`--summary`).
fn repeat(args: &Args, command: &[String], intervals: bool) -> Result<u32, Error> {
    let repeat = args.repeat.unwrap_or(1);
    if repeat == 0 || repeat > 100 {
        return Err(Error::usage_hints(
            format!("-r {repeat}: repeat between 1 and 100 times"),
            &["tracer stat does not repeat forever (perf's -r 0)"],
        ));
    }
    if repeat > 1 && args.metric_only {
        // perf's words (it exits 234).
        return Err(Error::usage_hints(
            "--metric-only is not supported with -r",
            &["drop -r, or drop --metric-only"],
        ));
    }
    if repeat > 1 && command.is_empty() {
        return Err(Error::usage_hints(
            "-r repeats a command: give one after --",
            &[],
        ));
    }
    if args.summary && !intervals {
        return Err(Error::usage_hints(
            "--summary prints the totals after interval rows: it needs -I",
            &["e.g. -I 1000 --summary"],
        ));
    }
    if (args.pre.is_some() || args.post.is_some()) && command.is_empty() {
        return Err(Error::usage_hints(
            "--pre/--post run around a command: give one after --",
            &[],
        ));
    }
    Ok(repeat)
}

/// The report's form: perf's human table, CSV (`-x`) or JSON (`-j`, or `-f json` as the
/// other commands spell it).
fn format(args: &Args) -> Result<StatFormat, Error> {
    let json = match (args.format, args.json) {
        (Some(crate::output::events::Format::Text), true) => {
            return Err(Error::usage_hints("-f text and -j cannot be combined", &[]))
        }
        (format, json) => json || format == Some(crate::output::events::Format::Json),
    };
    match (&args.separator, json) {
        (Some(_), true) => Err(Error::usage_hints("-x and -j cannot be combined", &[])),
        (Some(sep), false) if sep.is_empty() => Err(Error::usage_hints(
            "-x needs a separator",
            &["e.g. -x, or -x ';'"],
        )),
        (Some(sep), false) => Ok(StatFormat::Csv { sep: sep.clone() }),
        (None, true) => Ok(StatFormat::Json),
        (None, false) => Ok(StatFormat::Human {
            big_num: !args.no_big_num,
        }),
    }
}

/// `stat record`'s recording (-o names it, as perf stat record's -o names perf.data), and
/// where the report goes (-o without `record`, `--log-fd`, else stderr).
fn destinations(args: &Args) -> Result<(Option<PathBuf>, Destination), Error> {
    let record = match (args.record, &args.output) {
        (true, Some(path)) => Some(path.clone()),
        (true, None) => {
            return Err(Error::usage_hints("tracer stat record needs -o FILE for the recording", &["e.g. tracer stat record -o counts.json -- ./prog, then tracer stat report -i counts.json"]))
        }
        (false, _) => None,
    };
    let report_file = args.output.as_ref().filter(|_| record.is_none());
    let destination = match (report_file, args.log_fd) {
        (Some(_), Some(_)) => {
            return Err(Error::usage_hints(
                "-o and --log-fd cannot be combined",
                &["choose one destination"],
            ))
        }
        (Some(path), None) if crate::output::is_stdout(path) => Destination::Fd(1),
        (Some(path), None) => Destination::File {
            path: path.clone(),
            append: args.append,
        },
        (None, Some(fd)) if fd < 0 => {
            return Err(Error::usage_hints(
                format!("--log-fd {fd} is not a file descriptor"),
                &[],
            ))
        }
        (None, Some(fd)) => Destination::Fd(fd),
        (None, None) => Destination::Stderr,
    };
    Ok((record, destination))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::attr::{
        flag, BreakpointType, CacheId, CacheOp, CacheResult, Hardware, Software,
    };

    fn events(text: &str) -> Vec<EventSpec> {
        parse_events(&[text.to_string()]).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn one(text: &str) -> EventSpec {
        let mut all = events(text);
        assert_eq!(all.len(), 1, "{text}");
        all.remove(0)
    }

    fn usage_hints(text: &str) -> Vec<String> {
        match parse_events(&[text.to_string()]) {
            Err(Error::Usage { hints, .. }) => hints,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn names_and_aliases() {
        assert_eq!(one("faults").source, Source::Software(Software::PageFaults));
        assert_eq!(
            one("cs").source,
            Source::Software(Software::ContextSwitches)
        );
        assert_eq!(one("cycles").source, Source::Hardware(Hardware::CpuCycles));
        assert_eq!(one("r1a8").source, Source::Raw(0x1a8));
        assert_eq!(
            one("ref-cycles").source,
            Source::Hardware(Hardware::RefCpuCycles)
        );
        assert_eq!(
            one("LLC-load-misses").source,
            Source::Cache {
                id: CacheId::Ll,
                op: CacheOp::Read,
                result: CacheResult::Miss
            }
        );
        assert_eq!(
            one("L1-dcache-stores").source,
            Source::Cache {
                id: CacheId::L1d,
                op: CacheOp::Write,
                result: CacheResult::Access
            }
        );
        assert_eq!(
            one("dTLB-prefetch-misses").source,
            Source::Cache {
                id: CacheId::Dtlb,
                op: CacheOp::Prefetch,
                result: CacheResult::Miss
            }
        );
        assert_eq!(
            one("LLC-misses").source,
            Source::Cache {
                id: CacheId::Ll,
                op: CacheOp::Read,
                result: CacheResult::Miss
            }
        );
        assert!(
            parse_cache("L1-icache-stores").is_none(),
            "L1i has no writes"
        );
        assert!(parse_cache("L1-dcache-loadz").is_none());
        // Every canonical cache name parses back.
        for name in cache_names() {
            assert!(parse_cache(&name).is_some(), "{name}");
        }
    }

    #[test]
    fn modifiers_follow_perf() {
        let u = one("page-faults:u");
        assert_eq!(u.name, "page-faults:u");
        assert!(u.modifiers.exclude_kernel && u.modifiers.exclude_hv && !u.modifiers.exclude_user);
        let uk = one("cycles:uk").modifiers;
        assert!(!uk.exclude_user && !uk.exclude_kernel && uk.exclude_hv);
        let k = one("cs:k").modifiers;
        assert_eq!(
            k.flags(),
            flag::EXCLUDE_USER | flag::EXCLUDE_HV,
            "k counts the kernel only"
        );
        let g = one("cycles:G").modifiers;
        assert!(g.exclude_host && !g.exclude_guest);
        let h = one("cycles:H").modifiers;
        assert!(!h.exclude_host && h.exclude_guest);
        assert_eq!(one("cycles:ppp").modifiers.precise, 3);
        assert!(one("cycles:D").modifiers.pinned);
        assert!(one("task-clock").modifiers.flags() == 0);
        assert!(matches!(
            parse_events(&["cycles:pppp".into()]),
            Err(Error::Usage { .. })
        ));
        assert!(usage_hints("cycles:z")[0].contains("modifiers"));
        assert_ne!(
            one("cycles:u").modifiers.context(),
            one("cycles").modifiers.context()
        );
    }

    #[test]
    fn groups_share_an_index_and_take_group_modifiers() {
        let all = events("{task-clock,page-faults}:u,cs,{cycles,instructions}");
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["task-clock", "page-faults", "cs", "cycles", "instructions"]
        );
        let groups: Vec<Option<usize>> = all.iter().map(|e| e.group).collect();
        assert_eq!(groups, [Some(0), Some(0), None, Some(1), Some(1)]);
        assert!(all[0].modifiers.exclude_kernel && all[1].modifiers.exclude_kernel);
        assert!(!all[2].modifiers.exclude_kernel);
        // Several -e, each comma-separated.
        let many = parse_events(&["task-clock".into(), "faults,cs".into()]).unwrap();
        assert_eq!(many.len(), 3);
        for bad in ["{a,{b}}", "{task-clock", "task-clock}", "{}", "{cs}x"] {
            assert!(
                matches!(parse_events(&[bad.into()]), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn pmu_breakpoint_tracepoint_and_probe_events() {
        let pmu = one("cpu/event=0x3c,umask=1,edge/");
        assert_eq!(pmu.name, "cpu/event=0x3c,umask=1,edge/");
        assert_eq!(
            pmu.source,
            Source::Pmu {
                pmu: "cpu".into(),
                terms: vec![
                    PmuTerm {
                        name: "event".into(),
                        value: Some(0x3c)
                    },
                    PmuTerm {
                        name: "umask".into(),
                        value: Some(1)
                    },
                    PmuTerm {
                        name: "edge".into(),
                        value: None
                    },
                ]
            }
        );
        // A PMU's commas do not split the list; name= renames; modifiers after the slash.
        let two = events("msr/tsc/,software/config=2,name=faults2/:u");
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].name, "faults2");
        assert!(two[1].modifiers.exclude_kernel);
        let bp = one("mem:0x1000/8:w");
        assert_eq!(
            bp.source,
            Source::Breakpoint {
                kind: BreakpointType::Write,
                addr: 0x1000,
                len: 8
            }
        );
        assert_eq!(
            one("mem:0x1000").source,
            Source::Breakpoint {
                kind: BreakpointType::ReadWrite,
                addr: 0x1000,
                len: 4
            }
        );
        let bpu = one("mem:0x1000:rw:u");
        assert_eq!(bpu.name, "mem:0x1000:rw");
        assert!(bpu.modifiers.exclude_kernel);
        for bad in ["mem:0x1001/4", "mem:0x1000/3", "mem:zz", "mem:0x1000:rx"] {
            assert!(
                matches!(parse_events(&[bad.into()]), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
        let tp = one("syscalls:sys_enter_getppid");
        assert_eq!(
            tp.source,
            Source::Tracepoint {
                category: "syscalls".into(),
                name: "sys_enter_getppid".into()
            }
        );
        assert!(one("syscalls:sys_enter_getppid:u").modifiers.exclude_kernel);
        assert!(matches!(
            one("sched:sched_*").source,
            Source::Tracepoint { .. }
        ));
        let up = one("uprobe:/bin/bash:readline");
        assert!(matches!(up.source, Source::Probe(_)));
        assert!(matches!(
            one("kprobe:do_sys_openat2").source,
            Source::Probe(_)
        ));
        assert!(matches!(
            parse_events(&["kprobe:vfs_*".into()]),
            Err(Error::Usage { .. })
        ));
    }

    #[test]
    fn unknown_names_suggest_similar_ones() {
        let hints = usage_hints("cycels");
        assert!(hints[0].starts_with("did you mean: cycles"), "{hints:?}");
        let hints = usage_hints("page-fault");
        assert!(
            hints[0].starts_with("did you mean: page-faults"),
            "{hints:?}"
        );
        assert!(usage_hints("zzzzzz")
            .iter()
            .any(|h| h.contains("tracer list")));
    }

    #[test]
    fn fentry_names_point_at_the_kprobe_counter() {
        assert_eq!(
            usage_hints("fexit:vfs_read"),
            ["tracer stat -e kretprobe:vfs_read, or count through fentry with tracer probe --count-by comm fexit:vfs_read"]
        );
        assert!(usage_hints("kfunc:vfs_read")[0].starts_with("tracer stat -e kprobe:vfs_read,"));
    }

    #[test]
    fn default_events_are_perfs() {
        let names: Vec<String> = default_events(false).into_iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "task-clock",
                "context-switches",
                "cpu-migrations",
                "page-faults",
                "cycles",
                "instructions",
                "branches",
                "branch-misses"
            ]
        );
        assert_eq!(default_events(true)[0].name, "cpu-clock");
    }

    fn args(line: &[&str]) -> crate::cli::StatArgs {
        use clap::Parser;
        let mut argv = vec!["tracer", "stat"];
        argv.extend(line);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parses")
            .command
        {
            crate::cli::Command::Stat(args) => args,
            _ => unreachable!(),
        }
    }

    fn plan_error(line: &[&str]) -> String {
        match stat_plan(&args(line)) {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("{line:?} gave {other:?}"),
        }
    }

    #[test]
    fn targets_and_modes() {
        let p = stat_plan(&args(&["-e", "cs", "--", "true", "x"])).unwrap();
        assert_eq!(p.counted, Counted::Command);
        assert_eq!(p.title, "'true x'");
        let p = stat_plan(&args(&["-a", "-A", "-e", "cs"])).unwrap();
        assert_eq!(p.counted, Counted::Cpus(None));
        assert_eq!(p.aggregation, Aggregation::PerCpu);
        assert_eq!(p.title, "'system wide'");
        let p = stat_plan(&args(&["-C", "1"])).unwrap();
        assert_eq!(p.counted, Counted::Cpus(Some(vec![1])));
        assert_eq!(p.title, "'CPU(s) 1'");
        assert_eq!(p.events[0].name, "cpu-clock");
        let p = stat_plan(&args(&["-p", "42,43", "--per-thread"])).unwrap();
        assert_eq!(p.counted, Counted::Processes(vec![42, 43]));
        assert_eq!(p.title, "process id '42,43'");
        let p = stat_plan(&args(&["-x", ";", "-r", "3", "true"])).unwrap();
        assert_eq!(p.format, StatFormat::Csv { sep: ";".into() });
        assert_eq!(p.repeat, 3);
        assert_eq!(p.command, ["true"]);
        let p = stat_plan(&args(&["-n", "--", "true"])).unwrap();
        assert!(p.events.is_empty() && p.null_run);
        let p = stat_plan(&args(&["-a", "-G", "a,,b", "-e", "cs,cs,cs"])).unwrap();
        assert_eq!(p.cgroups, [Some("a".into()), None, Some("b".into())]);
        let p = stat_plan(&args(&["-a", "-G", "/a", "-e", "cs,faults"])).unwrap();
        assert_eq!(p.cgroups, [Some("/a".into()), Some("/a".into())]);
        assert!(plan_error(&["-A", "--", "true"]).contains("-A"));
        assert!(plan_error(&["--per-thread", "--", "true"]).contains("--per-thread"));
        assert_eq!(
            plan_error(&["-a", "--per-thread", "--metric-only"]),
            "--metric-only is not supported with --per-thread"
        );
        assert_eq!(
            plan_error(&["--metric-only", "-r", "2", "--", "true"]),
            "--metric-only is not supported with -r"
        );
        let p = stat_plan(&args(&["-a", "-A", "--metric-only", "-I", "100"])).unwrap();
        assert!(p.metric_only && p.interval.is_some());
        assert!(plan_error(&["-I", "5", "true"]).contains("10 ms"));
        assert!(plan_error(&["-I", "100", "--timeout", "100", "true"]).contains("--timeout"));
        assert!(plan_error(&["--interval-count", "2", "true"]).contains("-I"));
        assert!(plan_error(&["-r", "0", "true"]).contains("-r 0"));
        assert!(plan_error(&["-r", "2", "-a"]).contains("command"));
        assert_eq!(
            stat_plan(&args(&["-r", "2", "-I", "100", "true"]))
                .unwrap()
                .repeat,
            2
        );
        assert!(plan_error(&["-x,", "-j", "true"]).contains("-x"));
        let p = stat_plan(&args(&["-p", "1", "--", "true"])).unwrap();
        assert_eq!(p.counted, Counted::Processes(vec![1]));
        assert_eq!(p.command, ["true"]);
        let p = stat_plan(&args(&["-a", "--per-core", "-d", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerCore);
        assert_eq!(p.events.len(), 5);
        let p = stat_plan(&args(&["-a", "--per-cache=L2", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerCache(Some(2)));
        let p = stat_plan(&args(&["-a", "--per-thread", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerThread);
        let p = stat_plan(&args(&["--all-user", "-e", "cs,faults:k", "true"])).unwrap();
        assert!(p.events.iter().all(|e| e.modifiers.exclude_kernel));
        assert!(p.events.iter().all(|e| !e.modifiers.exclude_user));
        let p = stat_plan(&args(&["-M", "IPC,nope", "true"])).unwrap();
        assert_eq!(p.metrics, ["IPC"]);
        assert_eq!(p.unknown_metrics, ["nope"]);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["instructions", "cycles"]);
        let p = stat_plan(&args(&["-e", "duration_time,user_time", "true"])).unwrap();
        assert_eq!(p.events[0].source, Source::Tool(ToolEvent::DurationTime));
        assert!(plan_error(&["--per-socket", "--", "true"]).contains("system-wide"));
        assert!(plan_error(&["-a", "--per-cache=L9"]).contains("L9"));
        assert!(plan_error(&["--summary", "true"]).contains("-I"));
        assert!(plan_error(&["--pre", "true", "-a"]).contains("--pre"));
        assert!(plan_error(&["--topdown", "true"]).contains("system-wide"));
        assert!(plan_error(&["-n", "-e", "cs", "true"]).contains("-n"));
        assert!(plan_error(&["-D", "-1", "true"]).contains("--control"));
        assert!(plan_error(&["-G", "a", "true"]).contains("-G"));
        assert!(plan_error(&["-o", "f", "--log-fd", "3", "true"]).contains("--log-fd"));
        assert!(plan_error(&["-p", "x"]).contains("process id"));
    }
}
