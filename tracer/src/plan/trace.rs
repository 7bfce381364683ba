//! `tracer trace` arguments -> a validated plan: which system calls (`-e` names, strace's
//! `%classes`, `!` to leave out), the filters, and how the calls are shown.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::TraceArgs;
use crate::kernel::syscalls::{self, class};
use crate::output::events::Format;
use crate::output::trace::{Column, SortBy, Stamp};
use crate::plan::filter::FilterPlan;
use crate::Error;

/// Pages of the shared ring buffer when `--ring-pages` does not say: 2 MiB, room for about
/// 10,000 calls with their strings between two reads.
pub const RING_PAGES: usize = 512;

/// The largest `--ring-pages`: 256 MiB, as `tracer probe` allows.
pub const MAX_RING_PAGES: usize = 1 << 16;

#[derive(Debug)]
pub struct TracePlan {
    /// The traced calls' numbers, ascending.
    pub calls: Vec<u32>,
    /// Only failed calls (`--failed`).
    pub failed: bool,
    pub filter: Option<FilterPlan>,
    /// `-c`: counted in the kernel, a table at the end.
    pub summary: bool,
    /// `-C`: the calls shown, and counted as they are for a table at the end.
    pub tally: bool,
    /// `-S`: the order of `-c`'s rows.
    pub sort_by: SortBy,
    /// `-U`: `-c`'s columns, in order.
    pub columns: Vec<Column>,
    /// `-s`: bytes of a buffer shown.
    pub strsize: u32,
    /// `-t`, `-tt`, `-ttt`: the time before each line.
    pub stamp: Option<Stamp>,
    /// `-r`: the time since the previous line's call began, before each line.
    pub relative: bool,
    /// `-T`: the time in each call after it.
    pub durations: bool,
    /// `-x` (1), `-xx` (2): strings in hexadecimal.
    pub hex: u8,
    /// Calls blocked this long are shown unfinished at once.
    pub unfinished_after: Option<Duration>,
    /// `-e signal=`: bit `n - 1` for signal `n` shown.
    pub signals: u64,
    pub duration: Option<Duration>,
    pub format: Format,
    pub file: Option<PathBuf>,
    pub ring_pages: usize,
    pub whom: super::Whom,
    /// `-a`: every process, not only `whom`'s (which, with a command, says how long).
    pub system_wide: bool,
    /// `-w`: `-c` sums the time from entry to exit (strace's -w), not the CPU time.
    pub wall_clock: bool,
    /// `-y` (1), `-yy` (2): what file descriptors refer to.
    pub decode_fds: u8,
    /// `-P`: only the calls on these paths.
    pub paths: Vec<PathBuf>,
    /// `-k`: the user stack of each call shown.
    pub stacks: bool,
    /// `-y` or `-P` without `-c`: the run keeps a table of each process's descriptors.
    pub fd_table: bool,
    /// The calls traced only to keep the descriptor table of `-y` and `-P`, not shown
    /// (those of [`FD_MAKERS`] and [`FD_BOOKKEEPING`] that `-e` left out), ascending.
    pub bookkeeping: Vec<u32>,
}

impl TracePlan {
    /// Whether a call's time is the CPU time it spent (what `-c` and `-C` sum, as strace's
    /// do), not the time from its entry to its exit: not with `-w`, nor when `-T` shows each
    /// call's time beside `-C`'s table.
    pub fn cpu_time(&self) -> bool {
        (self.summary || (self.tally && !self.durations)) && !self.wall_clock
    }
}

/// The calls that return a new descriptor when they succeed (fcntl only for F_DUPFD*).
pub const FD_MAKERS: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "open_by_handle_at",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "socket",
    "accept",
    "accept4",
    "epoll_create",
    "epoll_create1",
    "eventfd",
    "eventfd2",
    "signalfd",
    "signalfd4",
    "timerfd_create",
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
    "memfd_create",
    "memfd_secret",
    "pidfd_open",
    "pidfd_getfd",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "fsopen",
    "fsmount",
    "fspick",
    "open_tree",
    "mq_open",
    "landlock_create_ruleset",
];

/// The calls besides [`FD_MAKERS`] that change what a process's descriptors or working
/// directory refer to. Both lists are traced, though not shown, when `-y` or `-P` needs
/// `probe::fds`'s table and `-e` left them out.
pub const FD_BOOKKEEPING: &[&str] = &[
    "close",
    "close_range",
    "chdir",
    "fchdir",
    "execve",
    "execveat",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "socketpair",
    "pipe",
    "pipe2",
];

pub fn trace_plan(args: &TraceArgs) -> Result<TracePlan, Error> {
    if args.command.is_empty() && args.pid.is_none() && !args.all {
        return Err(Error::usage(
            "tracer trace needs a command to start, a process to adopt, or -a",
            vec![
                "tracer trace -- COMMAND ARGS...   (its children and threads too)".into(),
                "tracer trace -p PID[,PID]".into(),
                "tracer trace -a -d 5   (every process, as perf trace -a)".into(),
            ],
        ));
    }
    let pids = match &args.pid {
        Some(list) => parse_pids(list)?,
        None => Vec::new(),
    };
    let ring_pages = args.ring_pages.unwrap_or(RING_PAGES);
    // As `tracer probe`'s bound: the kernel refuses a BPF ring of 4 GiB (1048576 pages) with
    // EINVAL, which read as "no ring buffer on this kernel".
    if !ring_pages.is_power_of_two() || ring_pages > MAX_RING_PAGES {
        let hint = match ring_pages > MAX_RING_PAGES {
            true => format!("at most --ring-pages {MAX_RING_PAGES} (256 MiB)"),
            false => format!("try --ring-pages {}", ring_pages.next_power_of_two()),
        };
        return Err(Error::usage(
            format!("--ring-pages {ring_pages} is not a power of two from 1 to {MAX_RING_PAGES}"),
            vec![hint],
        ));
    }
    let table = args.summary || args.summary_with_calls;
    if table && args.format == Format::Json {
        let flag = if args.summary { "-c" } else { "-C" };
        return Err(Error::usage(
            format!("{flag} prints a table, not JSON"),
            vec![format!(
                "drop --format json, or drop {flag} for one JSON object per call"
            )],
        ));
    }
    if args.wall_clock && !table {
        return Err(Error::usage(
            "-w says what -c and -C sum: it goes with one of them",
            vec![
                "tracer trace -c -w -- COMMAND   (the time from each call's entry to its exit)"
                    .into(),
            ],
        ));
    }
    let (sort_by, columns) = table_layout(args)?;
    if args.summary && !args.paths.is_empty() {
        return Err(Error::usage(
            "-c counts in the kernel, where -P cannot see which file a descriptor is",
            vec!["drop -c to see the calls on the path, or drop -P to count every call".into()],
        ));
    }
    if let Some(empty) = args.paths.iter().find(|p| p.as_os_str().is_empty()) {
        return Err(Error::usage(
            format!("-P '{}': an empty path", empty.display()),
            vec!["give the file's path: -P /etc/hostname".into()],
        ));
    }
    let exprs = expressions(&args.sets)?;
    if args.summary {
        counted(args, &exprs.calls)?;
    }
    let fd_table = (args.decode_fds > 0 || !args.paths.is_empty()) && !args.summary;
    let bookkeeping = match fd_table {
        true => (FD_MAKERS.iter().chain(FD_BOOKKEEPING))
            .filter_map(|name| syscalls::number(name))
            .filter(|nr| !exprs.calls.contains(nr))
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .collect(),
        false => Vec::new(),
    };
    Ok(TracePlan {
        wall_clock: args.wall_clock,
        decode_fds: args.decode_fds.min(2),
        paths: args.paths.clone(),
        stacks: args.stack_trace,
        fd_table,
        bookkeeping,
        calls: match args.summary {
            true => exprs.calls.into_iter().filter(|&nr| returns(nr)).collect(),
            false => exprs.calls,
        },
        failed: args.failed || exprs.failed,
        signals: exprs.signals,
        filter: args
            .filter
            .as_deref()
            .map(super::filter::parse)
            .transpose()?,
        summary: args.summary,
        tally: args.summary_with_calls,
        sort_by,
        columns,
        strsize: args.strsize,
        stamp: match args.time {
            0 => None,
            1 => Some(Stamp::Seconds),
            2 => Some(Stamp::Micros),
            _ => Some(Stamp::Epoch),
        },
        durations: args.durations,
        relative: args.relative,
        hex: args.hex.min(2),
        unfinished_after: (!args.unfinished_after.is_zero()).then_some(args.unfinished_after),
        duration: args.duration,
        format: args.format,
        file: args.file.clone(),
        ring_pages,
        whom: super::Whom::of(&args.command, &pids),
        system_wide: args.all,
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

/// What `-e` says, strace's way: `[QUALIFIER=][!]VALUE[,VALUE...]`, where the qualifier is
/// `trace` (the default), `signal` or `status`; each `-e` of a qualifier replaces the one
/// before it, and a leading `!` takes the set's complement.
#[derive(Debug, Default)]
pub struct Expressions {
    /// `trace=`: the calls, ascending.
    pub calls: Vec<u32>,
    /// `signal=`: bit `n - 1` for signal `n` shown (`--- SIGX ... ---` lines).
    pub signals: u64,
    /// `status=failed`: only calls that failed.
    pub failed: bool,
}

/// Every signal's bit in [`Expressions::signals`].
const ALL_SIGNALS: u64 = u64::MAX;

pub fn expressions(exprs: &[String]) -> Result<Expressions, Error> {
    let mut trace: Option<&str> = None;
    let mut signal: Option<&str> = None;
    let mut failed = false;
    for expr in exprs {
        let (qualifier, set) = match expr.split_once('=') {
            Some((q, set)) if !q.contains(',') => (q, set),
            _ => ("trace", expr.as_str()),
        };
        match qualifier {
            "trace" | "t" => trace = Some(set),
            "signal" | "signals" | "s" => signal = Some(set),
            "status" => match set {
                "failed" => failed = true,
                "all" | "!none" => failed = false,
                _ => {
                    return Err(Error::usage(
                        format!("-e status={set}: tracer trace takes status=failed or all"),
                        vec!["status=failed keeps the calls that returned an error (-Z)".into()],
                    ))
                }
            },
            other => {
                return Err(Error::usage(
                    format!("-e {other}=: tracer trace does not take this qualifier"),
                    vec![
                        "it takes trace= (the default), signal= and status=failed, as strace does"
                            .into(),
                    ],
                ))
            }
        }
    }
    Ok(Expressions {
        calls: selection(trace.unwrap_or("all"))?,
        signals: match signal {
            Some(set) => signal_set(set)?,
            None => ALL_SIGNALS,
        },
        failed,
    })
}

/// What `-c` refuses: a set of calls none of which returns (it counts a call at its
/// return, as strace -c does), and `-k` (it shows no call).
fn counted(args: &TraceArgs, calls: &[u32]) -> Result<(), Error> {
    if args.stack_trace {
        return Err(Error::usage(
            "-c counts calls in the kernel and shows none: it has no stacks to show (-k)",
            vec!["drop -c to see each call with its stack, or drop -k to count them".into()],
        ));
    }
    if calls.iter().any(|&nr| returns(nr)) {
        return Ok(());
    }
    let names: Vec<&str> = calls.iter().filter_map(|&nr| syscalls::name(nr)).collect();
    Err(Error::usage(
        format!(
            "-c counts a call when it returns, and {} never returns: nothing is left to count",
            names.join(" and ")
        ),
        vec![format!(
            "count its entries instead: tracer stat -e syscalls:sys_enter_{} -- COMMAND",
            names.first().copied().unwrap_or("exit_group")
        )],
    ))
}

/// A set of one qualifier: its values, and whether a leading `!` takes their complement.
fn values(set: &str) -> (bool, Vec<&str>) {
    let (negated, rest) = match set.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, set),
    };
    let items = (rest.split(',').map(str::trim))
        .filter(|s| !s.is_empty())
        .collect();
    (negated, items)
}

/// Whether call `nr` returns: `-c` counts a call at its return, as strace's does, so exit and
/// exit_group are not in its table.
fn returns(nr: u32) -> bool {
    let shape = syscalls::name(nr).and_then(syscalls::shape_of);
    shape.is_none_or(|s| s.ret != syscalls::Ret::None)
}

/// The calls a `trace=` set selects: names, `%classes`, `all`, `none`; `?` before a name
/// that may not exist here; `!` before the set for every other call.
pub fn selection(set: &str) -> Result<Vec<u32>, Error> {
    let (negated, items) = values(set);
    let everything = || {
        syscalls::all()
            .map(|(nr, _)| nr)
            .filter(|&nr| nr < tracer_common::SYSCALL_NRS)
    };
    let mut named = std::collections::BTreeSet::new();
    for item in items {
        let (optional, name) = match item.strip_prefix('?') {
            Some(rest) => (true, rest),
            None => (false, item),
        };
        let numbers: Vec<u32> = match name {
            "all" => everything().collect(),
            "none" => Vec::new(),
            _ => match (name.strip_prefix('%'), optional) {
                (Some(class_name), _) => class_calls(class_name)?,
                (None, false) => vec![call_number(name)?],
                (None, true) => call_number(name).into_iter().collect(),
            },
        };
        named.extend(numbers);
    }
    let chosen: Vec<u32> = match negated {
        true => everything().filter(|nr| !named.contains(nr)).collect(),
        false => named.into_iter().collect(),
    };
    if chosen.is_empty() {
        return Err(Error::usage(
            format!("-e trace={set}: no system call is left to trace"),
            vec![
                "name calls (openat,read) or classes (%file); `!` before the set traces every other call"
                    .into(),
            ],
        ));
    }
    Ok(chosen)
}

/// The signals a `signal=` set shows: names with or without `SIG`, numbers, `all`, `none`;
/// `!` before the set for every other signal.
fn signal_set(set: &str) -> Result<u64, Error> {
    let (negated, items) = values(set);
    let mut mask = 0u64;
    for item in items {
        mask |= match item {
            "all" => ALL_SIGNALS,
            "none" => 0,
            _ => 1 << (signal_number(item)? - 1),
        };
    }
    Ok(if negated { !mask } else { mask })
}

fn signal_number(name: &str) -> Result<u32, Error> {
    if let Ok(n) = name.parse::<u32>() {
        if (1..=64).contains(&n) {
            return Ok(n);
        }
    }
    let upper = name.to_ascii_uppercase();
    let full = match upper.starts_with("SIG") {
        true => upper,
        false => format!("SIG{upper}"),
    };
    (1..=64u32)
        .find(|&n| crate::output::syscall::signal(u64::from(n)) == full)
        .ok_or_else(|| {
            Error::usage(
                format!("-e signal=: no signal '{name}'"),
                vec!["name signals as kill -l does (USR1, SIGTERM) or by number".into()],
            )
        })
}

fn class_calls(name: &str) -> Result<Vec<u32>, Error> {
    if let Some((_, calls)) = class::LISTS.iter().find(|(n, _)| *n == name) {
        return Ok(calls.iter().filter_map(|c| syscalls::number(c)).collect());
    }
    let Some(&(_, bits)) = class::NAMES.iter().find(|(n, _)| *n == name) else {
        let names: Vec<String> = (class::NAMES.iter().map(|(n, _)| *n))
            .chain(class::LISTS.iter().map(|(n, _)| *n))
            .map(|n| format!("%{n}"))
            .collect();
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

/// `-S` and `-U`: how `-c`'s table is ordered and which columns it has (both only with -c).
fn table_layout(args: &TraceArgs) -> Result<(SortBy, Vec<Column>), Error> {
    let sort_by = match &args.sort_by {
        Some(_) if !args.summary && !args.summary_with_calls => {
            return Err(Error::usage(
                "-S orders -c's table: it goes with -c or -C",
                vec!["tracer trace -c -S calls -- COMMAND   (the most called first)".into()],
            ))
        }
        Some(word) => sort_by(word)?,
        None => SortBy::Time,
    };
    let columns = match &args.columns {
        Some(_) if !args.summary && !args.summary_with_calls => {
            return Err(Error::usage(
                "-U picks -c's columns: it goes with -c or -C",
                vec!["tracer trace -c -U calls,errors,name -- COMMAND".into()],
            ))
        }
        Some(list) => columns(list)?,
        None => Column::DEFAULT.to_vec(),
    };
    Ok((sort_by, columns))
}

/// `-U`'s list of columns, as strace spells them (with its other names for each); each once.
fn columns(list: &str) -> Result<Vec<Column>, Error> {
    let mut out = Vec::new();
    for word in list.split(',').map(str::trim) {
        let column = match word {
            "time-percent" | "time" => Column::TimePercent,
            "total-time" | "time-total" => Column::TotalTime,
            "avg-time" | "time-avg" => Column::AvgTime,
            "calls" | "count" => Column::Calls,
            "errors" | "error" => Column::Errors,
            "name" | "syscall" | "syscall-name" => Column::Name,
            "min-time" | "shortest" | "time-min" | "max-time" | "longest" | "time-max" => {
                return Err(Error::usage(
                    format!("-U {word}: tracer -c keeps each call's total time, not its extremes"),
                    vec![COLUMN_NAMES.into()],
                ))
            }
            _ => {
                return Err(Error::usage(
                    format!("-U {list}: no column '{word}'"),
                    vec![COLUMN_NAMES.into()],
                ))
            }
        };
        if out.contains(&column) {
            return Err(Error::usage(
                format!("-U {list}: '{word}' is given more than once"),
                vec!["name each column once".into()],
            ));
        }
        out.push(column);
    }
    Ok(out)
}

/// The columns `-U` takes, as a hint.
const COLUMN_NAMES: &str =
    "columns: time-percent, total-time, avg-time, calls, errors, name (strace's words)";

/// `-S`'s word, as strace spells it (with its other names for each order).
fn sort_by(word: &str) -> Result<SortBy, Error> {
    Ok(match word {
        "time" | "time-percent" | "time-total" | "total-time" => SortBy::Time,
        "avg-time" | "time-avg" => SortBy::AvgTime,
        "calls" | "count" => SortBy::Calls,
        "errors" | "error" => SortBy::Errors,
        "name" | "syscall" | "syscall-name" => SortBy::Name,
        "nothing" | "none" => SortBy::Nothing,
        "min-time" | "shortest" | "time-min" | "max-time" | "longest" | "time-max" => {
            return Err(Error::usage(
                format!("-S {word}: tracer -c keeps each call's total time, not its extremes"),
                vec!["sort by time, avg-time, calls, errors, name or nothing".into()],
            ))
        }
        _ => {
            return Err(Error::usage(
                format!("-S {word}: no such order"),
                vec![
                    "sort by time, avg-time, calls, errors, name or nothing (strace's words)"
                        .into(),
                ],
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_s_takes_strace_s_words() {
        let words = [
            (
                &["time", "time-percent", "time-total", "total-time"][..],
                SortBy::Time,
            ),
            (&["avg-time", "time-avg"], SortBy::AvgTime),
            (&["calls", "count"], SortBy::Calls),
            (&["errors", "error"], SortBy::Errors),
            (&["name", "syscall", "syscall-name"], SortBy::Name),
            (&["nothing", "none"], SortBy::Nothing),
        ];
        for (spellings, order) in words {
            for word in spellings {
                assert_eq!(sort_by(word).unwrap(), order, "{word}");
            }
        }
        for word in ["min-time", "shortest", "time-max", "longest", "fastest"] {
            assert!(sort_by(word).is_err(), "{word}");
        }
    }

    #[test]
    fn dash_u_takes_straces_column_words() {
        use Column::*;
        assert_eq!(
            columns("calls,time,syscall").unwrap(),
            [Calls, TimePercent, Name]
        );
        assert_eq!(
            columns("time-total,time-avg,count,error").unwrap(),
            [TotalTime, AvgTime, Calls, Errors]
        );
        for bad in [
            "calls,min-time",
            "longest",
            "calls,calls",
            "count,calls",
            "bogus",
            "",
        ] {
            assert!(columns(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_calls_that_return_are_counted() {
        let numbers = |names: &[&str]| -> Vec<u32> {
            names.iter().map(|n| syscalls::number(n).unwrap()).collect()
        };
        assert!(returns(numbers(&["read"])[0]) && returns(numbers(&["execve"])[0]));
        assert!(!returns(numbers(&["exit"])[0]) && !returns(numbers(&["exit_group"])[0]));
    }

    fn names(sets: &[&str]) -> Vec<&'static str> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        expressions(&sets)
            .unwrap()
            .calls
            .into_iter()
            .map(|nr| syscalls::name(nr).unwrap())
            .collect()
    }

    #[test]
    fn names_classes_and_exclusions_select_as_strace_does() {
        assert_eq!(names(&["openat,read"]), ["read", "openat"]);
        // Each -e trace= replaces the one before, as in strace.
        assert_eq!(names(&["trace=close", "write"]), ["write"]);
        let file = names(&["%file"]);
        assert!(file.contains(&"openat") && file.contains(&"execve"));
        assert!(file.contains(&"getxattr") && file.contains(&"lremovexattr"));
        // `!` takes the whole set's complement: every call but these.
        let all_but = names(&["!read,%file"]);
        assert!(!all_but.contains(&"read") && !all_but.contains(&"openat"));
        assert!(all_but.contains(&"write") && all_but.contains(&"close"));
        assert_eq!(names(&["%file", "!read"]).len(), names(&[]).len() - 1);
        assert!(names(&[]).len() > 300);
        // The kernel's event names are taken too; `?` forgives a name this table lacks.
        assert_eq!(names(&["newstat"]), ["stat"]);
        assert_eq!(names(&["read,?nosuchcall"]), ["read"]);
        // The classes that are lists, as strace 6 has them on x86-64.
        assert_eq!(names(&["%stat"]), ["stat"]);
        assert_eq!(names(&["%fstat"]), ["fstat", "newfstatat", "statx"]);
        assert_eq!(
            names(&["%%stat"]),
            ["stat", "fstat", "lstat", "newfstatat", "statx"]
        );
        assert_eq!(names(&["%%statfs"]), ["ustat", "statfs", "fstatfs"]);
        assert_eq!(names(&["%clock"]).len(), 8);
        assert!(names(&["%creds"]).contains(&"capget"));
        assert!(!names(&["!%%stat"]).contains(&"statx"));
    }

    #[test]
    fn signal_and_status_qualifiers_are_straces() {
        let e =
            |exprs: &[&str]| expressions(&exprs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(e(&[]).unwrap().signals, u64::MAX);
        assert_eq!(e(&["signal=none"]).unwrap().signals, 0);
        assert_eq!(
            e(&["signal=USR1,SIGTERM,2"]).unwrap().signals,
            (1 << 9) | (1 << 14) | 2
        );
        assert_eq!(e(&["signal=!SIGCHLD"]).unwrap().signals, !(1 << 16));
        assert!(e(&["status=failed"]).unwrap().failed);
        assert!(e(&["signal=SIGNOPE"]).is_err());
        assert!(e(&["status=unfinished"]).is_err());
        assert!(e(&["inject=open:error=ENOENT"]).is_err());
        assert_eq!(e(&["trace=read", "signal=none"]).unwrap().calls.len(), 1);
    }

    #[test]
    fn a_wrong_name_says_what_is_near() {
        let e = selection("opnat").unwrap_err().to_string();
        assert!(e.contains("no system call 'opnat'"), "{e}");
        let Error::Usage { hints, .. } = selection("opnat").unwrap_err() else {
            panic!()
        };
        assert!(hints[0].contains("openat"), "{hints:?}");
        let Error::Usage { hints, .. } = selection("%fle").unwrap_err() else {
            panic!()
        };
        assert!(hints[0].contains("%file"), "{hints:?}");
        assert!(selection("!all").is_err());
        assert!(parse_pids("12,x").is_err());
        assert_eq!(parse_pids("12, 13").unwrap(), [12, 13]);
    }
}
