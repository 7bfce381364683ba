//! `tracer latency` input -> a latency plan: the start and end probes, how they are matched,
//! the histogram's buckets, the outlier threshold, the target.

use std::time::Duration;

use tracer_common::LAT_KEY_PARTS;

use super::{build_scope, parse_bare_spec, Machine, ProbeSpec, Target};
use crate::cli::LatencyArgs;
use crate::kernel::format::Format as RecordFormat;
use crate::stacks::Which;
use crate::units::parse_duration_ns;
use crate::Error;

/// What `tracer latency --by` groups the histograms by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatencyBy {
    Comm,
    Pid,
    Tid,
    Cpu,
    /// A field of the end's record or an argument (named, or `argN`), resolved once the
    /// probes are open.
    Value(String),
    /// `tracer latency F1 F2 ...`: by function, named in the order given.
    Function(Vec<String>),
}

impl LatencyBy {
    /// `--by KEY`: a task key by its name, else a value to resolve.
    pub fn parse(key: &str) -> Result<LatencyBy, Error> {
        Ok(match key.trim() {
            "comm" => LatencyBy::Comm,
            "pid" => LatencyBy::Pid,
            "tid" => LatencyBy::Tid,
            "cpu" => LatencyBy::Cpu,
            "" => {
                return Err(Error::usage_hints(
                    "--by takes a key",
                    &["comm, pid, tid, cpu, a field of the end's record or an argument: --by dev"],
                ))
            }
            name => LatencyBy::Value(name.to_string()),
        })
    }
}

/// A validated `tracer latency`.
#[derive(Clone, Debug)]
pub struct LatencyPlan {
    pub start: ProbeSpec,
    pub end: ProbeSpec,
    /// `tracer latency F1 F2 ...`: the functions after the first (`start`), each measured
    /// entry to return like it, in the same run, one histogram each.
    pub more: Vec<ProbeSpec>,
    /// `--key`: the names read at the start and at the end (resolved once the probes are open).
    pub key: Option<String>,
    /// `--by`: what the histograms are grouped by (one histogram without it).
    pub by: Option<LatencyBy>,
    pub linear_step: Option<u64>,
    pub slower_than: Option<u64>,
    pub stack: Option<Option<Which>>,
    /// `--stack-at start`: the stacks are the start's.
    pub stack_at_start: bool,
    pub interval: Option<Duration>,
    pub duration: Option<Duration>,
    pub whom: super::Whom,
    /// `--comm`, `-C`, `--cgroup`: the tasks and CPUs measured.
    pub scope: super::Scope,
    /// `-p PID` without `--no-inherit`: its children are followed too.
    pub follow: bool,
    pub output: super::Output,
    /// Notes to print before attaching: input that may match nothing.
    pub notes: Vec<String>,
    /// `--filter`: which calls are measured, decided in the kernel.
    pub value_filter: Option<super::filter::FilterPlan>,
    /// `--kprobe-interface`: how kernel functions are attached (default: fentry where
    /// permitted).
    pub kprobe_interface: Option<crate::cli::KprobeInterface>,
}

/// Every check of `tracer latency`'s input, before anything is opened.
pub fn latency_plan(args: &LatencyArgs, machine: &dyn Machine) -> Result<LatencyPlan, Error> {
    let output = super::output(&args.output)?;
    let (first, more) = match args.targets.split_first() {
        Some((first, more)) => (Some(first.as_str()), more),
        None => (None, &[][..]),
    };
    let (start, end) = pair(first, args.from.as_deref(), args.to.as_deref())?;
    let more = functions(more, &start, args)?;
    let scope = build_scope(&args.tasks, None, machine)?;
    if !start.args.is_empty() && args.slower_than.is_none() {
        return Err(Error::usage_hints(
            format!(
                "'{start}': the values in parentheses are shown with each slow call: add \
                 --slower-than"
            ),
            &["e.g. --slower-than 10ms, or --slower-than 0 for every call"],
        ));
    }
    let duration = |text: &Option<String>, example: &str| {
        (text.as_deref().map(parse_duration_ns).transpose())
            .map_err(|e| Error::usage_hints(e, &[example]))
    };
    let linear_step = duration(&args.linear, "e.g. --linear 1ms")?;
    // `--slower-than 0`: every call, as biosnoop and gethostlatency list them.
    let every = (args.slower_than.as_deref()).is_some_and(|t| t.trim() == "0");
    let slower_than = match every {
        true => Some(0),
        false => duration(
            &args.slower_than,
            "e.g. --slower-than 10ms, or 0 for every call",
        )?,
    };
    // Several functions: attached as kprobes with attach cookies (fentry programs are
    // loaded per function and would each need their own).
    let kprobe_interface = match (more.is_empty(), args.kprobe_interface) {
        (false, None) => Some(crate::cli::KprobeInterface::Pmu),
        (_, interface) => interface,
    };
    let by = match more.is_empty() {
        true => args.by.as_deref().map(LatencyBy::parse).transpose()?,
        false => Some(LatencyBy::Function(
            std::iter::once(&start)
                .chain(&more)
                .map(function_name)
                .collect(),
        )),
    };
    Ok(LatencyPlan {
        start,
        end,
        more,
        key: args.key.clone(),
        by,
        linear_step,
        slower_than,
        stack: args.stack.stack,
        stack_at_start: args.stack_at == Some(crate::cli::StackAt::Start),
        interval: args.interval,
        duration: args.duration,
        whom: super::Whom::of(&args.command, args.tasks.pid.as_slice()),
        scope,
        follow: super::follows_children(&args.tasks, None),
        output,
        kprobe_interface,
        notes: super::comm_note(args.tasks.comm.as_deref(), &args.command)
            .into_iter()
            .collect(),
        value_filter: (args.filter.as_deref())
            .map(super::filter::parse)
            .transpose()?,
    })
}

/// The start and end probes of what is measured: a function, or a `from`/`to` pair.
pub fn pair(
    target: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(ProbeSpec, ProbeSpec), Error> {
    match (target, from, to) {
        (Some(target), None, None) => {
            let spec = start_spec(target)?;
            match spec.target {
                Target::Kernel { .. } | Target::User { .. } if !spec.ret => {
                    let exit = ProbeSpec {
                        ret: true,
                        args: Vec::new(),
                        ..spec.clone()
                    };
                    Ok((spec, exit))
                }
                Target::Kernel { .. }
                | Target::User { .. }
                | Target::KernelAddr(_)
                | Target::Tracepoint { .. } => Err(Error::usage_hints(format!("'{target}' is not a function"), &["give a kernel function (FUNC) or uprobe:PATH:SYMBOL, or a pair with --from SPEC --to SPEC"])),
            }
        }
        (None, Some(from), Some(to)) => Ok((start_spec(from)?, parse_bare_spec(to, "latency")?)),
        _ => Err(Error::usage_hints("give a function, or both --from and --to", &["e.g. tracer latency vfs_read, or --from syscalls:sys_enter_read --to syscalls:sys_exit_read"])),
    }
}

/// The functions after the first of `tracer latency F1 F2 ...`: each a function of the same
/// side (kernel or user) as the first, without the options that tell one pair's start from
/// its end or read what one function's arguments are.
fn functions(
    more: &[String],
    first: &ProbeSpec,
    args: &LatencyArgs,
) -> Result<Vec<ProbeSpec>, Error> {
    if more.is_empty() {
        return Ok(Vec::new());
    }
    let refuse = |what: &str, hint: &str| {
        Err(Error::usage_hints(
            format!("several functions, each measured entry to return, take no {what}"),
            &[hint],
        ))
    };
    if args.from.is_some() || args.to.is_some() {
        return refuse("--from/--to", "give functions, or one --from/--to pair");
    }
    if args.key.is_some() || args.by.is_some() {
        return refuse(
            "--key or --by",
            "each function has its own histogram: measure one function to group it --by",
        );
    }
    if args.filter.is_some() {
        return refuse("--filter", "measure one function to filter its calls");
    }
    if more.len() >= tracer_common::LAT_FUNCTIONS_MAX as usize {
        return Err(Error::usage_hints(
            format!(
                "{} functions: one run measures at most {}",
                more.len() + 1,
                tracer_common::LAT_FUNCTIONS_MAX
            ),
            &["measure the rest in another run"],
        ));
    }
    if args.kprobe_interface == Some(crate::cli::KprobeInterface::Fentry) {
        return refuse(
            "--kprobe-interface fentry",
            "they are attached as kprobes, told apart by attach cookies (Linux 5.15): \
             leave --kprobe-interface out, or give pmu",
        );
    }
    let user = matches!(first.target, Target::User { .. });
    more.iter()
        .map(|text| {
            let spec = start_spec(text)?;
            let function = matches!(spec.target, Target::Kernel { .. } | Target::User { .. });
            if !function || spec.ret || matches!(spec.target, Target::User { .. }) != user {
                return Err(Error::usage_hints(
                    format!("'{text}': several functions are all kernel or all user functions"),
                    &["e.g. tracer latency vfs_read vfs_write, or uprobe:libssl.so.3:SSL_read uprobe:libssl.so.3:SSL_write"],
                ));
            }
            Ok(spec)
        })
        .collect()
}

/// A measured function's name as its histogram is headed: the symbol.
fn function_name(spec: &ProbeSpec) -> String {
    match &spec.target {
        Target::Kernel { function, .. } => function.clone(),
        Target::User {
            at: super::spec::UserAt::Symbol { name, .. },
            ..
        } => name.clone(),
        _ => spec.to_string(),
    }
}

/// The start of the pair: a function or probe may select the values its outliers show
/// (`getaddrinfo(str(arg0))`, as `tracer probe` spells it); a tracepoint shows its fields.
fn start_spec(text: &str) -> Result<ProbeSpec, Error> {
    let spec = super::parse_spec(text)?;
    if matches!(spec.target, Target::Tracepoint { .. }) && !spec.args.is_empty() {
        return Err(Error::usage_hints(
            format!(
                "'{text}': a tracepoint start's outliers show all its fields: drop '({})'",
                spec.args.join(", ")
            ),
            &["values in parentheses select a function's arguments"],
        ));
    }
    Ok(spec)
}

/// One end of the pair: its spec and, for a tracepoint, its record format.
pub type PairEnd<'a> = (&'a ProbeSpec, &'a Option<RecordFormat>);

/// `--key A[,B,C]` (the same names at both ends) or `START_KEYS/END_KEYS`: where each key part
/// is read at the start and at the end.
pub fn keys(key: &str, start: PairEnd, end: PairEnd) -> Result<(KeySources, KeySources), Error> {
    let (a, b) = key.split_once('/').unwrap_or((key, key));
    let (a, b) = (part_names(a), part_names(b));
    if a.len() != b.len() {
        return Err(Error::usage_hints(
            format!(
                "--key {key}: {} parts at the start, {} at the end",
                a.len(),
                b.len()
            ),
            &["give the same number of comma-separated parts on both sides of /"],
        ));
    }
    if a.len() > LAT_KEY_PARTS || a.iter().chain(&b).any(|n| n.is_empty()) {
        return Err(Error::usage_hints(
            format!("--key {key}: give 1 to {LAT_KEY_PARTS} names, comma-separated"),
            &["e.g. --key dev,sector or --key pid/next_pid"],
        ));
    }
    Ok((key_sources(&a, start)?, key_sources(&b, end)?))
}

/// Where `--by NAME` reads each call's group, and whether from the start: a field of the end's
/// record (a tracepoint: `dev`, `vec`), else an argument of the start (named as `start_params`
/// names the registers, or `argN`), else an argument of the end (a probe that is not a return
/// probe).
pub fn by_source(
    name: &str,
    start: PairEnd,
    end: PairEnd,
    start_params: &[String],
) -> Result<(KeySource, bool), Error> {
    let (start_spec, start_format) = start;
    let (end_spec, end_format) = end;
    if end_format.as_ref().is_some_and(|f| f.field(name).is_some()) {
        let [source, ..] = key_sources(&[name], end)?;
        return Ok((source, false));
    }
    let arg = |name: &str| match name.strip_prefix("arg").and_then(|n| n.parse::<u32>().ok()) {
        Some(n) if n < 6 => Some(n),
        _ => None,
    };
    if start_format.is_none() && !start_spec.ret {
        let named = (start_params.iter().position(|p| p == name)).map(|n| n as u32);
        if let Some(n) = arg(name).or(named).filter(|&n| n < 6) {
            return Ok((KeySource::Arg(n), true));
        }
    }
    if end_format.is_none() && !end_spec.ret {
        if let Some(n) = arg(name) {
            return Ok((KeySource::Arg(n), false));
        }
    }
    let mut hints = Vec::new();
    if let Some(format) = end_format {
        let names: Vec<&str> = format.fields.iter().map(|f| f.name.as_str()).collect();
        hints.push(format!("{end_spec}'s fields: {}", names.join(", ")));
    }
    if start_format.is_none() && !start_spec.ret {
        let mut names = start_params.to_vec();
        names.extend((0..6).map(|n| format!("arg{n}")));
        names.dedup();
        hints.push(format!("{start_spec}'s arguments: {}", names.join(", ")));
    }
    hints.push("or comm, pid, tid, cpu".into());
    Err(Error::usage(
        format!("--by {name}: {start_spec} -> {end_spec} has no field or argument '{name}'"),
        hints,
    ))
}

/// Where one part of a latency key is read at one end of the pair (the BPF word is made of it
/// where the programs are configured, probe::latency).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeySource {
    /// Past the parts given.
    #[default]
    Unused,
    /// The thread id (a tracepoint's `common_pid`).
    Tid,
    /// An integer field of a tracepoint's record: its offset and size in bytes.
    Field { offset: u32, size: u32 },
    /// A probe's argument register, arg0..arg5.
    Arg(u32),
}

pub type KeySources = [KeySource; LAT_KEY_PARTS];

fn part_names(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).collect()
}

/// Where the named key parts are read at one end.
fn key_sources(names: &[&str], (spec, format): PairEnd) -> Result<KeySources, Error> {
    let mut out = KeySources::default();
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = match format {
            Some(format) => {
                let Some(field) = format.field(name) else {
                    let names: Vec<&str> = format.fields.iter().map(|f| f.name.as_str()).collect();
                    return Err(Error::usage_hints(format!("{} has no field '{name}'", format.name), &[&format!("its fields: {}", names.join(", "))]));
                };
                // What common_pid holds (the thread id), from the helper: a syscall
                // tracepoint's BPF context has a pointer where the common fields are.
                if *name == "common_pid" {
                    *slot = KeySource::Tid;
                    continue;
                }
                let syscall = matches!(&spec.target, Target::Tracepoint { category, .. } if category == "syscalls");
                if syscall && name.starts_with("common_") {
                    return Err(Error::usage_hints(format!("{}'s field '{name}' cannot be a key: syscall tracepoints hand BPF programs a registers pointer in place of the common fields", format.name), &["key by the syscall's own fields, or by common_pid (the thread)"]));
                }
                if field.offset > 0xff || field.size == 0 || field.size > 8 {
                    return Err(Error::usage_hints(format!(
                            "{}'s field '{name}' cannot be a key ({} bytes at offset {})",
                            format.name, field.size, field.offset
                        ), &["key by integer fields of up to 8 bytes in the first 256 bytes of the record"]));
                }
                KeySource::Field {
                    offset: field.offset as u32,
                    size: field.size as u32,
                }
            }
            None if spec.ret => {
                return Err(Error::usage_hints(format!("{spec} is a return probe: it has no '{name}' to key by"), &["a return probe's end is matched by thread: drop --key, or end at a probe or tracepoint that has the key"]))
            }
            None => match name.strip_prefix("arg").and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if n < 6 => KeySource::Arg(n),
                _ => {
                    return Err(Error::usage_hints(format!("{spec} has no key '{name}'"), &["probes are keyed by their argument registers: arg0..arg5"]))
                }
            },
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(line: &[&str]) -> Result<LatencyPlan, Error> {
        let cli = crate::cli::Cli::try_parse_from(
            ["tracer", "latency"].iter().chain(line.iter()).copied(),
        )
        .expect("parses");
        match cli.command {
            crate::cli::Command::Latency(args) => {
                latency_plan(&args, &crate::plan::tests::FakeMachine::CPUS_128)
            }
            _ => unreachable!("a latency command"),
        }
    }

    #[test]
    fn a_function_is_measured_from_entry_to_return() {
        let p = plan(&["uprobe:/bin/true:main", "--linear", "1ms", "--by", "pid"]).unwrap();
        assert_eq!(p.start.to_string(), "uprobe:/bin/true:main");
        assert_eq!(p.end.to_string(), "uretprobe:/bin/true:main");
        assert_eq!(
            (p.linear_step, p.by),
            (Some(1_000_000), Some(LatencyBy::Pid))
        );
        let q = plan(&["--from", "sched:sched_wakeup", "--to", "sched:sched_switch"]).unwrap();
        assert_eq!(
            (q.start.to_string(), q.end.to_string()),
            ("sched:sched_wakeup".into(), "sched:sched_switch".into())
        );
    }

    #[test]
    fn bad_latency_input_is_explained() {
        let err = |line: &[&str]| plan(line).unwrap_err().to_string();
        assert_eq!(
            err(&["sched:sched_switch"]),
            "'sched:sched_switch' is not a function"
        );
        assert_eq!(
            err(&["--from", "sched:sched_wakeup"]),
            "give a function, or both --from and --to"
        );
        assert_eq!(
            err(&["f", "--linear", "5"]),
            "'5' needs a unit: ns, us, ms, s, m or h"
        );
    }
}
