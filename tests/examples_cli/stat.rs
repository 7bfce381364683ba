//! The examples of `tracer stat`: its help and docs/stat.md.

use super::*;

/// The count of `event` in a perf-stat-like report.
pub(crate) fn stat_count(report: &str, event: &str) -> u64 {
    report
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(event))
        .unwrap_or_else(|| panic!("no {event} line:\n{report}"))
        .split_whitespace()
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{event}: {e}\n{report}"))
}

pub(crate) fn stat_make(ctx: &Ctx, example: &str) {
    // make runs the Makefile of the examples' directory: one rule, `true`.
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains(" Performance counter stats for 'make':"),
        "{stderr}"
    );
    for event in ["context-switches", "cpu-migrations", "page-faults"] {
        stat_count(&stderr, event);
    }
    assert!(
        lines_with(&stderr, " msec task-clock ").len() == 1,
        "{stderr}"
    );
    for event in ["cycles", "instructions", "branches", "branch-misses"] {
        let line = stderr
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == event))
            .unwrap_or_else(|| panic!("no {event}:\n{stderr}"));
        assert!(
            line.contains("<not supported>") != available(Feature::HardwareCounters),
            "{line}"
        );
    }
}

pub(crate) fn stat_ls(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // As many as `tracer probe` sees ls open, in the same directory. Into a file: on
    // stdout, ls's listing can land between two of tracer's buffered writes, mid-line.
    ok(&ctx.run(&words(
        "tracer probe syscalls:sys_enter_openat -f json -o opens.json -- ls",
        &[],
    )));
    let opens = json_lines(
        std::fs::read_to_string(ctx.path("opens.json"))
            .unwrap()
            .as_bytes(),
    )
    .len() as u64;
    assert!(opens > 0);
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_openat"),
        opens,
        "{stderr}"
    );
    assert!(stat_count(&stderr, "page-faults") > 0, "{stderr}");
}

pub(crate) fn stat_getppid(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_getppid"),
        6,
        "{stderr}"
    );
    assert!(
        stat_count(&stderr, "page-faults") >= 64,
        "prog touches 64 pages\n{stderr}"
    );
}

pub(crate) fn stat_group_csv(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stderr}");
    assert_eq!((rows[0][1], rows[0][2]), ("msec", "task-clock"), "{stderr}");
    let msec: f64 = rows[0][0].parse().unwrap();
    assert!(msec >= 40.0, "prog spins 40 ms\n{stderr}");
    assert_eq!(rows[1][2], "page-faults", "{stderr}");
    assert!(rows[1][0].parse::<u64>().unwrap() >= 64, "{stderr}");
    // One group: both counted all the time.
    assert_eq!((rows[0][3], rows[0][4]), (rows[1][3], "100.00"), "{stderr}");
}

pub(crate) fn stat_per_cpu_interval(ctx: &Ctx, example: &str) {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let mut running = Running::spawn(ctx.command(&words(example, &[])));
    // Two intervals of one line per CPU.
    let seen = std::cell::Cell::new(0);
    running.wait_for(|l| {
        if l.split_whitespace().nth(3) == Some("cs") {
            seen.set(seen.get() + 1);
        }
        seen.get() == 2 * cpus
    });
    let (stdout, stderr) = running.interrupted();
    assert!(stdout.is_empty(), "{stdout}");
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.get(3) == Some(&"cs"))
        .collect();
    assert!(rows.len() >= 2 * cpus, "{stderr}");
    for (i, row) in rows.iter().take(2 * cpus).enumerate() {
        assert_eq!(row[1], format!("CPU{}", i % cpus), "{stderr}");
        row[2].replace(',', "").parse::<u64>().unwrap();
    }
}

pub(crate) fn stat_per_core_interval(ctx: &Ctx, example: &str) {
    let cpus = tracer::perf::cpus::online().unwrap().len();
    let mut running = Running::spawn(ctx.command(&words(example, &[])));
    // One interval: a line per core, whose CPU counts add up to the online CPUs.
    let seen = std::cell::Cell::new(0);
    running.wait_for(|l| {
        if let Some(n) = (l.contains(" msec task-clock "))
            .then(|| l.split_whitespace().nth(2)?.parse::<usize>().ok())
            .flatten()
        {
            seen.set(seen.get() + n);
        }
        seen.get() >= cpus
    });
    let (_, stderr) = running.interrupted();
    assert!(
        stderr.contains("#           time core            cpus"),
        "{stderr}"
    );
    let first = lines_with(&stderr, " msec task-clock ")[0];
    assert!(
        first
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("S0-D0-C"),
        "{stderr}"
    );
}

pub(crate) fn stat_pid_with_command(ctx: &Ctx, example: &str) {
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let out = ctx.run(&words(example, &[("1234", &pid)]));
    let (_, stderr) = ok(&out);
    work.run_batch();
    work.finish();
    // The pid's counts, for the second the command ran.
    assert!(
        stderr.contains(&format!("Performance counter stats for process id '{pid}'")),
        "{stderr}"
    );
    let elapsed: f64 = lines_with(&stderr, "seconds time elapsed")[0]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.9..3.0).contains(&elapsed), "{stderr}");
}

pub(crate) fn stat_pid_per_thread(ctx: &Ctx, example: &str) {
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let mut running = Running::spawn(ctx.command(&words(example, &[("1234", &pid)])));
    // No banner: let it open its counters (it reads the process's threads at start).
    std::thread::sleep(Duration::from_millis(300));
    work.run_batch();
    work.finish();
    // The run ends when the process exits (before the 5 s timeout).
    running.wait_for(|l| l.contains("seconds time elapsed"));
    let (status, _, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("Performance counter stats for process id '{pid}'")),
        "{stderr}"
    );
    let thread = format!("prog-{pid}");
    let line = lines_with(&stderr, " page-faults ");
    assert_eq!(line.len(), 1, "{stderr}");
    assert_eq!(
        line[0].split_whitespace().next(),
        Some(thread.as_str()),
        "{stderr}"
    );
    let faults: u64 = line[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(faults >= 64, "prog touches 64 pages after the go\n{stderr}");
    let elapsed: f64 = lines_with(&stderr, "seconds time elapsed")[0]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(elapsed < 5.0, "{stderr}");
}

pub(crate) fn stat_repeat(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("Performance counter stats for './prog' (5 runs):"),
        "{stderr}"
    );
    let line = lines_with(&stderr, " page-faults:u ");
    assert_eq!(line.len(), 1, "{stderr}");
    // The spread, as perf prints it: only when the five counts were not all equal (a full
    // run once saw 115 faults in each of the five).
    if let Some((_, spread)) = line[0].split_once("( +-") {
        let pct: f64 = spread
            .trim()
            .trim_end_matches("% )")
            .trim()
            .parse()
            .unwrap();
        assert!(pct > 0.0, "{stderr}");
    }
    assert!(stat_count(&stderr, "page-faults:u") >= 64, "{stderr}");
    assert!(stderr.contains("seconds time elapsed  ( +-"), "{stderr}");
}

pub(crate) const STAT_RECORD: &str = "tracer stat record -o counts.json -a -e cs -- ./prog";

pub(crate) fn stat_record(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // The report as without `record`, and the file `stat report` reads.
    assert!(
        stderr.contains(" Performance counter stats for 'system wide':"),
        "{stderr}"
    );
    let again = ok(&ctx.run(&words("tracer stat report -i counts.json", &[]))).1;
    assert_eq!(
        lines_with(&again, " cs "),
        lines_with(&stderr, " cs "),
        "{again}\n{stderr}"
    );
}

pub(crate) fn stat_report_per_cpu(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(STAT_RECORD, &[])));
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let cpus = tracer::perf::cpus::online().unwrap();
    let rows = lines_with(&stderr, " cs ");
    assert_eq!(rows.len(), cpus.len(), "{stderr}");
    for (row, cpu) in rows.iter().zip(&cpus) {
        assert!(row.starts_with(&format!("CPU{cpu} ")), "{stderr}");
    }
}

pub(crate) fn docs_stat_getppid(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // docs/stat.md shows `cycles` as this machine prints it: without hardware counters.
    let hw = available(Feature::HardwareCounters);
    assert_shown(
        example,
        "",
        &stderr,
        if hw { &["<not supported> cycles"] } else { &[] },
    );
    assert!(
        stderr.contains(" Performance counter stats for './tracer-testprog getppid 1000':"),
        "{stderr}"
    );
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_getppid"),
        1000,
        "{stderr}"
    );
    assert_eq!(
        lines_with(&stderr, " msec task-clock ").len(),
        1,
        "{stderr}"
    );
    assert!(stat_count(&stderr, "page-faults") > 0, "{stderr}");
    let cycles = stderr
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == "cycles"))
        .unwrap_or_else(|| panic!("no cycles:\n{stderr}"));
    assert_eq!(cycles.contains("<not supported>"), !hw, "{cycles}");
}

pub(crate) fn docs_stat_csv(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let hw = available(Feature::HardwareCounters);
    assert_shown(
        example,
        "",
        &stderr,
        if hw {
            &["<not supported>,,cycles,0,100.00,,"]
        } else {
            &[]
        },
    );
    // perf stat -x's fields: value, unit, event, run time (ns), % of it counted, metric, unit.
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stderr}");
    assert_eq!(
        rows[0][..3],
        ["1000", "", "syscalls:sys_enter_getppid"],
        "{stderr}"
    );
    assert!(rows[0][3].parse::<u64>().unwrap() > 0, "{stderr}");
    assert_eq!(rows[0][4..], ["100.00", "", ""], "{stderr}");
    if hw {
        assert_eq!(rows[1][2], "cycles", "{stderr}");
        rows[1][0].parse::<u64>().unwrap();
    } else {
        assert_eq!(
            rows[1],
            ["<not supported>", "", "cycles", "0", "100.00", "", ""],
            "{stderr}"
        );
    }
}

pub(crate) fn docs_stat_per_socket(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, "", &stderr, &[]);
    // One socket here: its row counts every online CPU.
    let row = lines_with(&stderr, " msec task-clock ");
    assert_eq!(row.len(), 1, "{stderr}");
    let fields: Vec<&str> = row[0].split_whitespace().collect();
    assert_eq!(fields[0], "S0", "{stderr}");
    let cpus = tracer::perf::cpus::online().unwrap().len().to_string();
    assert_eq!(fields[1], cpus, "{stderr}");
}

pub(crate) fn docs_stat_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs stat summary") {
        return;
    }
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, "", &stderr, &[]);
    let rows: Vec<Vec<&str>> = stderr.lines().map(|l| l.split(',').collect()).collect();
    let last = rows.last().unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(
        last[..4],
        ["         summary", "1000", "", "syscalls:sys_enter_getppid"],
        "{stderr}"
    );
}

pub(crate) fn docs_stat_metric_only(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // docs/stat.md shows this machine: two CPUs, no hardware counters, so empty columns.
    let hw = available(Feature::HardwareCounters);
    let online = tracer::perf::cpus::online().unwrap();
    if !hw && online.len() == 2 {
        assert_shown(example, "", &stderr, &[]);
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * online.len(), "{stderr}");
    assert_eq!(
        lines[0], " time,cpu,GHz,insn per cycle,branch-misses of all branches,",
        "{stderr}"
    );
    for (i, row) in lines[1..].iter().enumerate() {
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(
            fields[1],
            format!("CPU{}", online[i % online.len()]),
            "{stderr}"
        );
        // Counted, cycles, instructions and branch-misses have a column each (branches has a
        // rate per second, none); not counted, each of the four is one empty column.
        assert_eq!(fields.len(), if hw { 6 } else { 7 }, "{stderr}");
    }
}

/// docs/tools.md's pidpersec: the machine's forks each second, among them a shell's five
/// children and the shell itself.
pub(crate) fn stat_forks_per_second(ctx: &Ctx, example: &str) {
    let mut running = Running::spawn(ctx.command(&words(example, &[])));
    let fork_row = |l: &str| l.split_whitespace().nth(2) == Some("sched:sched_process_fork");
    running.wait_for(fork_row);
    ctx.workload("sh", &["-c", "for i in 1 2 3 4 5; do /bin/true; done"]);
    // Two more intervals: the one the forks fell in is printed.
    let seen = std::cell::Cell::new(0);
    running.wait_for(|l| {
        seen.set(seen.get() + usize::from(fork_row(l)));
        seen.get() == 2
    });
    let (stdout, stderr) = running.interrupted();
    assert!(stdout.is_empty(), "{stdout}");
    let forks: u64 = (stderr.lines())
        .filter(|l| fork_row(l))
        .map(|l| {
            l.split_whitespace()
                .nth(1)
                .unwrap()
                .replace(',', "")
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(forks >= 6, "{stderr}");
}
