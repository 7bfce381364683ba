//! `tracer watch` (and `record -W`) input -> a watch plan: targets, access type, length, whose
//! memory, and what each hit reports.

use std::fmt;
use std::time::Duration;

use super::{check_task, is_kernel_address, parse_number, valid_name, Machine, Whom};
use crate::cli::{WatchArgs, WatchType};
use crate::perf::BreakpointType;
use crate::stacks::Which;
use crate::Error;

/// x86 has four debug registers per CPU (one BPF slot each).
const MAX_TARGETS: usize = tracer_common::PERF_EVENT_SLOTS as usize;

/// A validated `tracer watch`.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchPlan {
    pub targets: Vec<WatchTarget>,
    pub kind: BreakpointType,
    pub len: Option<u64>,
    /// Whose memory is watched: `-- COMMAND` (started stopped right after its exec), `-p
    /// PID` (all its threads), or with `--kernel` the kernel's, in every task.
    pub whom: Whom,
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    pub output: super::Output,
    pub stack: Option<Option<Which>>,
    /// Counted in the kernel by thread and instruction; nothing streamed.
    pub summary: bool,
}

/// The breakpoint type of an access type; x86 has no read-only watchpoints.
pub fn breakpoint_type(kind: WatchType) -> Result<BreakpointType, Error> {
    match kind {
        WatchType::W => Ok(BreakpointType::Write),
        WatchType::Rw => Ok(BreakpointType::ReadWrite),
        WatchType::X => Ok(BreakpointType::Execute),
        WatchType::R if cfg!(target_arch = "x86_64") => Err(Error::usage_hints(
            "x86 has no read-only watchpoints",
            &["watch reads and writes with -t rw (a read then shows the value unchanged)"],
        )),
        WatchType::R => Ok(BreakpointType::Read),
    }
}

/// Every check of `tracer watch`'s input, before anything is opened.
pub fn watch_plan(args: &WatchArgs, machine: &dyn Machine) -> Result<WatchPlan, Error> {
    let output = super::output(&args.output)?;
    let kind = breakpoint_type(args.kind)?;
    let targets = (args.targets.iter())
        .map(|t| parse_watch_target(t))
        .collect::<Result<Vec<_>, _>>()?;
    if targets.len() > MAX_TARGETS {
        return Err(Error::usage_hints(
            format!(
                "{} targets given; x86 has {MAX_TARGETS} hardware breakpoint slots",
                targets.len()
            ),
            &["watch at most 4 locations at once"],
        ));
    }
    if let Some(len) = args.len {
        if ![1, 2, 4, 8].contains(&len) {
            return Err(Error::usage_hints(
                format!("--len {len} is not 1, 2, 4 or 8"),
                &["watchpoints cover 1, 2, 4 or 8 aligned bytes"],
            ));
        }
    }
    let whom = match (args.pid, args.command.is_empty(), args.kernel) {
        (Some(pid), true, false) => Whom::Processes(vec![pid]),
        (None, false, false) => Whom::Command(args.command.clone()),
        (None, true, true) => Whom::Everyone,
        _ => {
            return Err(Error::usage_hints("give exactly one of -p PID, -- COMMAND or --kernel", &["e.g. tracer watch counter -- ./prog, tracer watch -p 1234 counter, tracer watch --kernel jiffies"]))
        }
    };
    match &whom {
        Whom::Processes(pids) => {
            for &pid in pids {
                check_task(pid, false, machine)?;
            }
        }
        Whom::Everyone => {
            if let Some(addr) = (targets.iter()).find_map(|t| match t {
                WatchTarget::Address(a) if !is_kernel_address(*a) => Some(*a),
                _ => None,
            }) {
                return Err(Error::usage_hints(format!("--kernel {addr:#x}: {addr:#x} is not a kernel address"), &["kernel addresses have the top bit set (0xffff...); watch a kernel variable \
                     by name, e.g. tracer watch --kernel jiffies"]));
            }
        }
        Whom::Command(_) => {}
    }
    if whom != Whom::Everyone {
        check_user_addresses(&targets)?;
    }
    if args.summary && args.stop.count.is_some() {
        return Err(Error::usage_hints(
            "--summary counts every hit in the kernel; it cannot stop after N hits",
            &["bound the run with -d SECS, or drop --summary to stop after N printed hits"],
        ));
    }
    if args.summary && args.stack.stack.is_some() {
        return Err(Error::usage_hints(
            "--summary counts by thread and instruction, not by stack",
            &["drop -s, or drop --summary to see each hit with its stack"],
        ));
    }
    if args.stop.count == Some(0) {
        return Err(Error::usage_hints(
            "--count 0 would stop before the first hit",
            &["give a positive count"],
        ));
    }
    Ok(WatchPlan {
        targets,
        kind,
        len: args.len,
        whom,
        count: args.stop.count,
        duration: args.stop.duration,
        output,
        stack: args.stack.stack,
        summary: args.summary,
    })
}

/// A process's watch targets: a kernel address is not in its memory.
pub fn check_user_addresses(targets: &[WatchTarget]) -> Result<(), Error> {
    for target in targets {
        if let WatchTarget::Address(addr) = target {
            if is_kernel_address(*addr) {
                return Err(Error::usage_hints(
                    format!("{addr:#x} is a kernel address, not one of the process's"),
                    &["watch kernel memory with --kernel (and no -p or command)"],
                ));
            }
        }
    }
    Ok(())
}

/// What `tracer watch` watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchTarget {
    Address(u64),
    /// `[FILE:]SYMBOL[+OFF]`: FILE is a path or a library name prefix (`libc`).
    Symbol {
        file: Option<String>,
        name: String,
        offset: u64,
    },
}

impl fmt::Display for WatchTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchTarget::Address(addr) => write!(f, "{addr:#x}"),
            WatchTarget::Symbol { file, name, offset } => {
                if let Some(file) = file {
                    write!(f, "{file}:")?;
                }
                write!(f, "{name}")?;
                if *offset != 0 {
                    write!(f, "+{offset:#x}")?;
                }
                Ok(())
            }
        }
    }
}

/// Parses a watch target: `0xADDR`, `SYMBOL`, `SYMBOL+OFF`, `LIB:SYMBOL`.
pub fn parse_watch_target(text: &str) -> Result<WatchTarget, Error> {
    let hint =
        "targets are 0xADDR, SYMBOL, SYMBOL+OFF or LIB:SYMBOL, e.g. `counter` or `libc.so.6:errno`";
    if text.starts_with("0x") {
        return parse_number(text)
            .map(WatchTarget::Address)
            .ok_or_else(|| Error::usage_hints(format!("invalid address '{text}'"), &[hint]));
    }
    let (file, rest) = match text.rsplit_once(':') {
        Some((file, rest)) if !file.is_empty() => (Some(file.to_string()), rest),
        Some(_) => {
            return Err(Error::usage_hints(
                format!("invalid watch target '{text}'"),
                &[hint],
            ))
        }
        None => (None, text),
    };
    let (name, offset) = match rest.split_once('+') {
        Some((name, off)) => (
            name,
            parse_number(off).ok_or_else(|| {
                Error::usage_hints(format!("invalid offset in '{text}'"), &[hint])
            })?,
        ),
        None => (rest, 0),
    };
    if !valid_name(name) || name.contains(['*', '?']) {
        return Err(Error::usage_hints(
            format!("invalid symbol name '{name}'"),
            &[hint],
        ));
    }
    Ok(WatchTarget::Symbol {
        file,
        name: name.to_string(),
        offset,
    })
}

/// A watch target with its access type and length: `TARGET[:w|rw|x[:LEN]]`.
pub fn parse_watch(text: &str) -> Result<(WatchTarget, WatchType, Option<u64>), Error> {
    let mut parts: Vec<&str> = text.split(':').collect();
    let mut len = None;
    if parts.len() >= 3 {
        if let Ok(n) = parts[parts.len() - 1].parse::<u64>() {
            if matches!(parts[parts.len() - 2], "w" | "rw" | "x") {
                if ![1, 2, 4, 8].contains(&n) {
                    return Err(Error::usage_hints(
                        format!("watch length {n} in '{text}' is not 1, 2, 4 or 8"),
                        &["watchpoints cover 1, 2, 4 or 8 aligned bytes"],
                    ));
                }
                len = Some(n);
                parts.pop();
            }
        }
    }
    let kind = match parts.last().copied() {
        Some("w") if parts.len() > 1 => WatchType::W,
        Some("rw") if parts.len() > 1 => WatchType::Rw,
        Some("x") if parts.len() > 1 => WatchType::X,
        Some("r") if parts.len() > 1 => WatchType::R,
        _ => {
            return Ok((parse_watch_target(text)?, WatchType::W, None));
        }
    };
    parts.pop();
    Ok((parse_watch_target(&parts.join(":"))?, kind, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn watch_targets() {
        assert_eq!(
            parse_watch_target("0x1000").unwrap(),
            WatchTarget::Address(0x1000)
        );
        assert_eq!(
            parse_watch_target("libc.so.6:errno+4").unwrap(),
            WatchTarget::Symbol {
                file: Some("libc.so.6".into()),
                name: "errno".into(),
                offset: 4
            }
        );
        assert_eq!(
            parse_watch_target("counter").unwrap().to_string(),
            "counter"
        );
        for bad in ["0xzz", ":x", "a b", "c*", "x+q"] {
            assert!(
                matches!(parse_watch_target(bad), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn watch_targets_take_an_access_type_and_length() {
        let sym = |name: &str| WatchTarget::Symbol {
            file: None,
            name: name.into(),
            offset: 0,
        };
        let (t, k, l) = parse_watch("counter").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::W, None));
        let (t, k, l) = parse_watch("counter:rw").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::Rw, None));
        let (t, k, l) = parse_watch("counter:w:4").unwrap();
        assert_eq!((t, k, l), (sym("counter"), WatchType::W, Some(4)));
        let (t, k, _) = parse_watch("libc.so.6:errno:rw").unwrap();
        assert_eq!(
            (t, k),
            (
                WatchTarget::Symbol {
                    file: Some("libc.so.6".into()),
                    name: "errno".into(),
                    offset: 0
                },
                WatchType::Rw
            )
        );
        let (t, _, _) = parse_watch("libc.so.6:errno").unwrap();
        assert!(matches!(t, WatchTarget::Symbol { file: Some(_), .. }));
        let err = parse_watch("counter:w:3").unwrap_err().to_string();
        assert_eq!(err, "watch length 3 in 'counter:w:3' is not 1, 2, 4 or 8");
    }

    fn plan(line: &[&str]) -> Result<WatchPlan, Error> {
        let cli =
            crate::cli::Cli::try_parse_from(["tracer", "watch"].iter().chain(line.iter()).copied())
                .expect("parses");
        match cli.command {
            crate::cli::Command::Watch(args) => {
                watch_plan(&args, &crate::plan::tests::FakeMachine::CPUS_128)
            }
            _ => unreachable!("a watch command"),
        }
    }

    #[test]
    fn a_watch_plan_names_whose_memory() {
        let p = plan(&["counter", "--", "./prog"]).unwrap();
        assert_eq!(p.whom, Whom::Command(vec!["./prog".into()]));
        assert_eq!(p.kind, BreakpointType::Write);
        assert_eq!(
            plan(&["-p", "100", "-t", "rw", "x"]).unwrap().whom,
            Whom::Processes(vec![100])
        );
        assert_eq!(plan(&["--kernel", "jiffies"]).unwrap().whom, Whom::Everyone);
        let err = |line: &[&str]| plan(line).unwrap_err().to_string();
        assert_eq!(
            err(&["counter"]),
            "give exactly one of -p PID, -- COMMAND or --kernel"
        );
        assert_eq!(
            err(&["-p", "100", "--kernel", "x"]),
            "give exactly one of -p PID, -- COMMAND or --kernel"
        );
        assert_eq!(
            err(&["-l", "3", "-p", "100", "x"]),
            "--len 3 is not 1, 2, 4 or 8"
        );
        assert_eq!(
            err(&["-c", "0", "-p", "100", "x"]),
            "--count 0 would stop before the first hit"
        );
        assert_eq!(
            err(&["--summary", "-c", "5", "-p", "100", "x"]),
            "--summary counts every hit in the kernel; it cannot stop after N hits"
        );
        assert_eq!(
            err(&["-p", "100", "a", "b", "c", "d", "e"]),
            "5 targets given; x86 has 4 hardware breakpoint slots"
        );
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            err(&["-t", "r", "-p", "100", "x"]),
            "x86 has no read-only watchpoints"
        );
        assert_eq!(err(&["-p", "12345", "x"]), "no process 12345");
        assert_eq!(
            err(&["--kernel", "0x0"]),
            "--kernel 0x0: 0x0 is not a kernel address"
        );
        assert_eq!(
            err(&["-p", "100", "0xffffffff81000000"]),
            "0xffffffff81000000 is a kernel address, not one of the process's"
        );
        assert_eq!(
            plan(&["--kernel", "0xffffffff82000000"]).unwrap().targets,
            vec![WatchTarget::Address(0xffff_ffff_8200_0000)]
        );
    }
}
