//! `tracer trace` arguments -> a validated plan: which system calls (`-e` names, strace's
//! `%classes`, `!` to leave out), the filters, and how the calls are shown.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::TraceArgs;
use crate::kernel::syscalls::{self, class};
use crate::output::events::Format;
use crate::plan::filter::FilterPlan;
use crate::Error;

/// Pages of the shared ring buffer when `--ring-pages` does not say: 2 MiB, room for about
/// 10,000 calls with their strings between two reads.
pub const RING_PAGES: usize = 512;

#[derive(Debug)]
pub struct TracePlan {
    /// The traced calls' numbers, ascending.
    pub calls: Vec<u32>,
    /// Only failed calls (`--failed`).
    pub failed: bool,
    pub filter: Option<FilterPlan>,
    /// `-c`: counted in the kernel, a table at the end.
    pub summary: bool,
    /// `-s`: bytes of a buffer shown.
    pub strsize: u32,
    /// `-t`: time of day before each line.
    pub time: bool,
    pub duration: Option<Duration>,
    pub format: Format,
    pub file: Option<PathBuf>,
    pub ring_pages: usize,
    /// `-p`: processes adopted.
    pub pids: Vec<u32>,
    pub command: Vec<String>,
}

pub fn trace_plan(args: &TraceArgs) -> Result<TracePlan, Error> {
    if args.command.is_empty() && args.pid.is_none() {
        return Err(Error::usage(
            "tracer trace needs a command to start or a process to adopt",
            vec![
                "tracer trace -- COMMAND ARGS...   (its children and threads too)".into(),
                "tracer trace -p PID[,PID]".into(),
            ],
        ));
    }
    let pids = match &args.pid {
        Some(list) => parse_pids(list)?,
        None => Vec::new(),
    };
    let ring_pages = args.ring_pages.unwrap_or(RING_PAGES);
    if !ring_pages.is_power_of_two() {
        return Err(Error::usage(
            format!("--ring-pages {ring_pages} is not a power of two"),
            vec![format!(
                "try --ring-pages {}",
                ring_pages.next_power_of_two()
            )],
        ));
    }
    if args.summary && args.format == Format::Json {
        return Err(Error::usage(
            "-c prints a table, not JSON",
            vec!["drop -f json, or drop -c for one JSON object per call".into()],
        ));
    }
    Ok(TracePlan {
        calls: selection(&args.sets)?,
        failed: args.failed,
        filter: args
            .filter
            .as_deref()
            .map(super::filter::parse)
            .transpose()?,
        summary: args.summary,
        strsize: args.strsize,
        time: args.time,
        duration: args.duration,
        format: args.format,
        file: args.file.clone(),
        ring_pages,
        pids,
        command: args.command.clone(),
    })
}

fn parse_pids(list: &str) -> Result<Vec<u32>, Error> {
    list.split(',')
        .map(|p| {
            p.trim()
                .parse::<u32>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| {
                    Error::usage(
                        format!("-p: '{p}' is not a process id"),
                        vec!["give process ids separated by commas: -p 1234,5678".into()],
                    )
                })
        })
        .collect()
}

/// The calls `-e` selects, strace's way: names and classes add, `!` items take away; with
/// only `!` items (or no `-e`), from every call.
pub fn selection(sets: &[String]) -> Result<Vec<u32>, Error> {
    let items: Vec<&str> = sets
        .iter()
        .map(|s| s.strip_prefix("trace=").unwrap_or(s))
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let everything = || {
        syscalls::all()
            .map(|(nr, _)| nr)
            .filter(|&nr| nr < tracer_common::SYSCALL_NRS)
    };
    let only_exclusions = items.iter().all(|i| i.starts_with('!'));
    let mut chosen: std::collections::BTreeSet<u32> = match only_exclusions {
        true => everything().collect(),
        false => Default::default(),
    };
    for item in &items {
        let (remove, name) = match item.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, *item),
        };
        let numbers: Vec<u32> = match name {
            "all" => everything().collect(),
            "none" => Vec::new(),
            _ => match name.strip_prefix('%') {
                Some(class_name) => class_calls(class_name)?,
                None => vec![call_number(name)?],
            },
        };
        for nr in numbers {
            match remove {
                true => chosen.remove(&nr),
                false => chosen.insert(nr),
            };
        }
    }
    if chosen.is_empty() {
        return Err(Error::usage(
            format!("-e {}: no system call is left to trace", sets.join(" -e ")),
            vec![
                "name calls (openat,read) or classes (%file), and `!` only to leave some out"
                    .into(),
            ],
        ));
    }
    Ok(chosen.into_iter().collect())
}

fn class_calls(name: &str) -> Result<Vec<u32>, Error> {
    let Some(&(_, bits)) = class::NAMES.iter().find(|(n, _)| *n == name) else {
        let names: Vec<String> = class::NAMES.iter().map(|(n, _)| format!("%{n}")).collect();
        let mut hints = Vec::new();
        if let Some(near) =
            super::did_you_mean(&format!("%{name}"), names.iter().map(String::as_str))
        {
            hints.push(near);
        }
        hints.push(format!("the classes: {}", names.join(", ")));
        return Err(Error::usage(format!("-e: no class '%{name}'"), hints));
    };
    Ok(syscalls::in_class(bits)
        .filter_map(syscalls::number)
        .collect())
}

fn call_number(name: &str) -> Result<u32, Error> {
    syscalls::number(syscalls::table_name(name)).ok_or_else(|| {
        let mut hints = Vec::new();
        if let Some(near) = super::did_you_mean(name, syscalls::all().map(|(_, n)| n)) {
            hints.push(near);
        }
        hints.push("`tracer list 'syscalls:sys_enter_*'` lists the calls this kernel has".into());
        Error::usage(format!("-e: no system call '{name}'"), hints)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sets: &[&str]) -> Vec<&'static str> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        selection(&sets)
            .unwrap()
            .into_iter()
            .map(|nr| syscalls::name(nr).unwrap())
            .collect()
    }

    #[test]
    fn names_classes_and_exclusions_select_as_strace_does() {
        assert_eq!(names(&["openat,read"]), ["read", "openat"]);
        assert_eq!(names(&["trace=close", "write"]), ["write", "close"]);
        let file = names(&["%file"]);
        assert!(file.contains(&"openat") && file.contains(&"execve"));
        let file_but_stat = names(&["%file", "!stat"]);
        assert_eq!(file_but_stat.len(), file.len() - 1);
        let all_but_read = names(&["!read"]);
        assert!(!all_but_read.contains(&"read") && all_but_read.contains(&"write"));
        assert!(names(&[]).len() > 300);
        // The kernel's event names are taken too.
        assert_eq!(names(&["newstat"]), ["stat"]);
    }

    #[test]
    fn a_wrong_name_says_what_is_near() {
        let e = selection(&["opnat".into()]).unwrap_err().to_string();
        assert!(e.contains("no system call 'opnat'"), "{e}");
        let Error::Usage { hints, .. } = selection(&["opnat".into()]).unwrap_err() else {
            panic!()
        };
        assert!(hints[0].contains("openat"), "{hints:?}");
        let Error::Usage { hints, .. } = selection(&["%fle".into()]).unwrap_err() else {
            panic!()
        };
        assert!(hints[0].contains("%file"), "{hints:?}");
        assert!(selection(&["!all".into()]).is_err());
        assert!(parse_pids("12,x").is_err());
        assert_eq!(parse_pids("12, 13").unwrap(), [12, 13]);
    }
}
