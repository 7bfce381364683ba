//! Counters opened where they count (tasks, CPUs, cgroups), enabled and read.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::run::runtime_error;
use super::*;
use crate::launch::Launched;
use crate::output::notes;
use crate::output::stat::{Reading, Slot};
use crate::perf::attr::{flag, format};
use crate::perf::{self, Event, Options, Scope};
use crate::plan::stat::{Aggregation, Counted, StatPlan};
use crate::Error;

/// Where the counters of this run go, and the slot each place prints in.
pub fn places(plan: &StatPlan, launched: Option<&Launched>) -> Result<Vec<(Place, Slot)>, Error> {
    let held = launched.map(|l| l.pid());
    let thread = |pid: u32, tid: u32| {
        let comm = match held == Some(tid) {
            // Held before its exec, the command still has tracer's name: it will have the
            // program's (the kernel keeps 15 bytes of the file name).
            true => (plan.command.first())
                .map(|p| p.rsplit('/').next().unwrap_or(p).chars().take(15).collect())
                .unwrap_or_default(),
            false => std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .map(|c| c.trim_end().to_string())
                .unwrap_or_default(),
        };
        (Place::Task(tid), Slot::Thread { comm, tid })
    };
    let gone = |pid: u32, what: &str| Error::Runtime {
        message: format!("no {what} {pid}"),
        hints: vec!["check the id with `ps`; it may have exited".into()],
    };
    Ok(match &plan.counted {
        Counted::Command => {
            let pid = launched.expect("a command target has a command").pid();
            vec![(Place::Task(pid), Slot::Global)]
        }
        Counted::Processes(pids) => {
            let mut out = Vec::new();
            for &pid in pids {
                let dir = std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map_err(|_| gone(pid, "process"))?;
                let mut tids: Vec<u32> = dir
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                    .collect();
                tids.sort_unstable();
                out.extend(tids.into_iter().map(|tid| thread(pid, tid)));
            }
            out
        }
        Counted::Threads(tids) => {
            let mut out = Vec::new();
            for &tid in tids {
                if !std::path::Path::new(&format!("/proc/{tid}/task/{tid}")).exists() {
                    return Err(gone(tid, "thread"));
                }
                out.push(thread(tid, tid));
            }
            out
        }
        // perf's `-a --per-thread`: every thread there is when counting starts.
        Counted::Cpus(None) if plan.aggregation == Aggregation::PerThread => {
            let mut out = Vec::new();
            let mut pids: Vec<u32> = std::fs::read_dir("/proc")
                .map_err(|e| runtime_error("list /proc", e))?
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect();
            pids.sort_unstable();
            for pid in pids {
                let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                    continue;
                };
                let mut tids: Vec<u32> = dir
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                    .collect();
                tids.sort_unstable();
                out.extend(tids.into_iter().map(|tid| thread(pid, tid)));
            }
            out
        }
        Counted::Cpus(list) => {
            let cpus = match list {
                Some(cpus) => {
                    let online = perf::cpus::online()?;
                    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
                        return Err(Error::usage(
                            format!("CPU {bad} is not online"),
                            vec![format!(
                                "online CPUs: {}",
                                online
                                    .iter()
                                    .map(u32::to_string)
                                    .collect::<Vec<_>>()
                                    .join(",")
                            )],
                        ));
                    }
                    cpus.clone()
                }
                None => perf::cpus::online()?,
            };
            cpus.into_iter()
                .map(|c| (Place::Cpu(c), Slot::Cpu(c)))
                .collect()
        }
    })
}

/// Opens every counter on every place: each group on one place is a leader and members.
pub fn open_all(
    plan: &StatPlan,
    counters: &[Counter],
    places: &[(Place, Slot)],
    on_exec: bool,
) -> Result<Opened, Error> {
    let groups = units_of(counters);
    // Tracer's own measures (tool events) count whatever opens.
    let mut supported: Vec<bool> = counters.iter().map(|c| c.tool.is_some()).collect();
    let mut errors: Vec<Option<perf::Error>> = (0..counters.len()).map(|_| None).collect();
    let mut units = Vec::new();
    let task = matches!(
        plan.counted,
        Counted::Command | Counted::Processes(_) | Counted::Threads(_)
    );
    for (p, (place, _)) in places.iter().enumerate() {
        for members in &groups {
            let grouped = counters[members[0]].group.is_some();
            let mut read_format = format::TOTAL_TIME_ENABLED | format::TOTAL_TIME_RUNNING;
            if grouped {
                read_format |= format::GROUP;
            }
            let mut leader: Option<Event> = None;
            let mut opened_members = Vec::new();
            let mut order = Vec::new();
            for &c in members {
                let counter = &counters[c];
                let scope = scope(place, counter);
                let mut flags = counter.flags;
                if (task || matches!(place, Place::Task(_))) && plan.inherit {
                    flags |= flag::INHERIT;
                }
                // Only leaders start disabled (and enable at exec): members follow them.
                if leader.is_none() {
                    flags |= flag::DISABLED;
                    if on_exec {
                        flags |= flag::ENABLE_ON_EXEC;
                    }
                }
                let options = Options {
                    flags,
                    read_format,
                    precise_ip: counter.precise,
                    ..Options::default()
                };
                let result = match leader.as_mut() {
                    None => Event::open(counter.name.clone(), &counter.kind, &options, &scope),
                    Some(l) => {
                        Event::open_member(l, counter.name.clone(), &counter.kind, &options, &scope)
                    }
                };
                match result {
                    Ok(event) => {
                        if plan.verbose && p == 0 {
                            say_opened(counter, leader.is_none(), read_format, place);
                        }
                        supported[c] = true;
                        order.push(c);
                        match leader {
                            None => leader = Some(event),
                            Some(_) => opened_members.push(event),
                        }
                    }
                    Err(e) if e.errno().is_some_and(|n| NOT_SUPPORTED.contains(&n)) => {
                        errors[c].get_or_insert(e);
                    }
                    // A thread of a -p process that exited since it was listed.
                    Err(e)
                        if e.errno() == Some(libc::ESRCH)
                            && matches!(plan.counted, Counted::Processes(_) | Counted::Cpus(_)) =>
                    {
                        errors[c].get_or_insert(e);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if let Some(leader) = leader {
                units.push(Unit {
                    leader,
                    _members: opened_members,
                    counters: order,
                    place: p,
                });
            }
        }
    }
    if plan.verbose {
        say_unsupported(counters, &supported, &errors);
    }
    Ok(Opened { units, supported })
}

/// The counters in units opened together: a group's members, or a lone event (tracer's own
/// measures, the tool events, are in none).
fn units_of(counters: &[Counter]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, counter) in counters.iter().enumerate() {
        if counter.tool.is_some() {
            continue;
        }
        match (
            counter.group,
            i.checked_sub(1).and_then(|p| counters[p].group),
        ) {
            (Some(g), Some(prev)) if g == prev => groups.last_mut().expect("previous").push(i),
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// Where a counter counts at `place`: a task, a CPU, or a cgroup on a CPU.
fn scope(place: &Place, counter: &Counter) -> Scope {
    match (place, &counter.cgroup) {
        (Place::Task(tid), _) => Scope::Task {
            pid: *tid,
            cpu: None,
        },
        (Place::Cpu(cpu), Some(dir)) => Scope::Cgroup {
            dir: dir.clone(),
            cpu: *cpu,
        },
        (Place::Cpu(cpu), None) => Scope::Cpu(*cpu),
    }
}

/// `-v`: a counter opened, as the group's leader or a member.
fn say_opened(counter: &Counter, leader: bool, read_format: u64, place: &Place) {
    notes::progress(
        "stat",
        format_args!(
            "opened {} ({}, read_format {}{})",
            counter.name,
            if leader { "leader" } else { "group member" },
            read_format_names(read_format),
            match place {
                Place::Task(t) => format!(", task {t}"),
                Place::Cpu(c) => format!(", CPU {c}"),
            }
        ),
    );
}

/// `-v`: why each counter that opened nowhere is not supported, with the kernel's hints.
fn say_unsupported(counters: &[Counter], supported: &[bool], errors: &[Option<perf::Error>]) {
    for (c, error) in errors.iter().enumerate() {
        if let (false, Some(e)) = (supported[c], error) {
            notes::progress(
                "stat",
                format_args!(
                    "{} is not supported: {}",
                    counters[c].name,
                    crate::describe(e)
                ),
            );
            for hint in e.hints() {
                notes::hint(hint);
            }
        }
    }
}

pub fn read_format_names(read_format: u64) -> String {
    let mut names = vec!["TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING"];
    if read_format & format::GROUP != 0 {
        names.push("GROUP");
    }
    names.join("|")
}

/// Enables (or disables) every leader: members follow their leader, and an ioctl on a
/// counter applies to the copies its inherited children got.
pub fn enable(opened: &Opened, on: bool) -> Result<(), Error> {
    for unit in &opened.units {
        let result = if on {
            unit.leader.enable(false)
        } else {
            unit.leader.disable(false)
        };
        // Disabling a counter whose task has exited can fail; its counts are final anyway.
        if on {
            result?;
        }
    }
    Ok(())
}

/// Reads every unit with one read(2) each; returns readings per counter and place.
pub fn read_all(
    opened: &Opened,
    counters: usize,
    places: usize,
    verbose: bool,
    defs: &[Counter],
) -> Result<Vec<Vec<Option<Reading>>>, Error> {
    let mut readings = vec![vec![None; places]; counters];
    for unit in &opened.units {
        let counts = unit.leader.read()?;
        if verbose && unit.place == 0 {
            let names: Vec<&str> = unit
                .counters
                .iter()
                .map(|&c| defs[c].name.as_str())
                .collect();
            notes::progress(
                "stat",
                format_args!(
                    "read {{{}}}: one read(2), {} value{}",
                    names.join(","),
                    counts.values.len(),
                    if counts.values.len() == 1 { "" } else { "s" }
                ),
            );
        }
        for (k, &c) in unit.counters.iter().enumerate() {
            if let Some(value) = counts.values.get(k) {
                readings[c][unit.place] = Some(Reading {
                    value: value.value,
                    enabled: counts.time_enabled.unwrap_or(0),
                    running: counts.time_running.unwrap_or(0),
                });
            }
        }
    }
    Ok(readings)
}

/// The cgroup filesystem's mount point (cgroup v2, else v1's perf_event hierarchy).
pub fn cgroup_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut v1 = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        match fields[2] {
            "cgroup2" => return Some(fields[1].into()),
            "cgroup" if fields[3].split(',').any(|o| o == "perf_event") => {
                v1 = Some(fields[1].into())
            }
            _ => {}
        }
    }
    v1
}

pub fn open_cgroup(name: &str) -> Result<Arc<OwnedFd>, Error> {
    let root = cgroup_root().ok_or_else(|| Error::Runtime {
        message: "no cgroup filesystem is mounted".into(),
        hints: vec!["mount cgroup2: `mount -t cgroup2 none /sys/fs/cgroup`".into()],
    })?;
    let dir = root.join(name.trim_start_matches('/'));
    let file = std::fs::File::open(&dir)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_dir()))
        .ok_or_else(|| {
            Error::usage(
                format!("no cgroup '{name}' (looked for {})", dir.display()),
                vec![format!(
                    "-G takes a cgroup path relative to {}",
                    root.display()
                )],
            )
        })?;
    Ok(Arc::new(OwnedFd::from(file)))
}
