//! Tier 4: `tracer stat` against Debian's `perf stat` on deterministic workloads: exact counts,
//! the same CSV/JSON/human columns, intervals that sum to the total, repeats, exit statuses.
//!
//! Page faults. A command's start-up faults vary from run to run by a few pages (ASLR, and
//! fault-around mapping more or fewer page-cache pages at once): `perf stat` itself gives
//! 71..76 for `tracer-testprog touch 0` here. So the exact comparison counts *one* run with
//! both tools at once: the workload is held (`--batch`), `tracer stat -p` and
//! `perf stat -p -D -1 --control` attach and start counting, then it touches its pages. Both
//! must report the same number, which is N plus the constant faults of the program's exit path
//! (2 here). For `-- COMMAND` runs the documented tolerance is 4 pages between the medians of 5
//! runs of each tool.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{has, testprog, text, Workload};
use tracer::kernel::features::{Feature, Status};

const PERF: &str = "/usr/bin/perf";

/// `tracer stat ARGS`.
fn stat(args: &[&str]) -> Output {
    common::Tracer::new(["stat"].iter().chain(args)).output()
}

/// Debian's perf: `cargo xtask setup` installs it (linux-perf), so its absence is a failure.
fn perf(args: &[&str]) -> Output {
    common::require_root();
    assert!(
        Path::new(PERF).exists(),
        "{PERF} is missing: the comparison tests need Debian's perf; run `cargo xtask setup` \
         (it installs linux-perf) or `apt-get install linux-perf`"
    );
    Command::new(PERF)
        .arg("stat")
        .args(args)
        .output()
        .expect("run perf stat")
}

fn tp() -> String {
    testprog().display().to_string()
}

/// CSV rows of a report (perf and tracer print the report on stderr); other stderr lines
/// (warnings, `-v`) have fewer fields, or are tracer's notes.
fn rows(out: &Output, sep: char) -> Vec<Vec<String>> {
    text(&out.stderr)
        .lines()
        .filter(|l| {
            !["tracer stat:", "note:", "hint:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .filter(|l| l.split(sep).count() >= 6)
        .map(|l| l.split(sep).map(|f| f.trim().to_string()).collect())
        .collect()
}

/// The row of `event`, and its count.
fn count(rows: &[Vec<String>], event: &str) -> u64 {
    let row = rows
        .iter()
        .find(|r| r.get(2).map(String::as_str) == Some(event))
        .unwrap_or_else(|| panic!("no row for {event} in {rows:?}"));
    row[0]
        .parse()
        .unwrap_or_else(|_| panic!("{event}: count {:?} is not a number", row[0]))
}

fn numeric(field: &str) -> bool {
    field.trim_end_matches('%').parse::<f64>().is_ok()
}

/// `K/sec` and `/sec` name the same metric at different magnitudes.
fn metric_unit(field: &str) -> &str {
    field.strip_suffix("/sec").map_or(field, |_| "/sec")
}

/// Same number of rows and fields; every field numeric in both, or equal.
fn assert_columns_line_up(ours: &[Vec<String>], perfs: &[Vec<String>], what: &str) {
    assert_eq!(
        ours.len(),
        perfs.len(),
        "{what}: row counts differ\ntracer: {ours:?}\nperf:   {perfs:?}"
    );
    for (a, b) in ours.iter().zip(perfs) {
        assert_eq!(
            a.len(),
            b.len(),
            "{what}: field counts differ\n{a:?}\n{b:?}"
        );
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let same = (numeric(x) && numeric(y))
                || x == y
                || (i == a.len() - 1 && metric_unit(x) == metric_unit(y));
            assert!(
                same,
                "{what}: field {i} differs: {x:?} vs {y:?}\n{a:?}\n{b:?}"
            );
        }
    }
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

#[test]
fn a_tracepoint_counts_exactly_the_syscalls_and_agrees_with_perf() {
    if !has(Feature::Tracepoints, "stat_tracepoint") {
        return;
    }
    let args = [
        "-x,",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &tp(),
        "getppid",
        "1000",
    ];
    let ours = stat(&args);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let theirs = perf(&args);
    assert_eq!(count(&rows(&ours, ','), "syscalls:sys_enter_getppid"), 1000);
    assert_eq!(
        count(&rows(&theirs, ','), "syscalls:sys_enter_getppid"),
        1000
    );
}

/// Starts `perf stat -p PID -D -1 --control fifo:...` and enables it; returns once perf has
/// acknowledged that its counters are on.
fn perf_attached(pid: u32, events: &str, dir: &Path) -> std::process::Child {
    assert!(
        Path::new(PERF).exists(),
        "{PERF} is missing: run `cargo xtask setup`"
    );
    let (ctl, ack) = (dir.join("ctl"), dir.join("ack"));
    for fifo in [&ctl, &ack] {
        let status = Command::new("mkfifo").arg(fifo).status().expect("mkfifo");
        assert!(status.success());
    }
    // Opened before perf starts, without blocking: ack for reading, ctl read-write.
    let mut ack_file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&ack)
        .expect("open ack fifo");
    let mut ctl_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&ctl)
        .expect("open ctl fifo");
    let control = format!("fifo:{},{}", ctl.display(), ack.display());
    let child = Command::new(PERF)
        .args([
            "stat",
            "-x,",
            "-e",
            events,
            "-p",
            &pid.to_string(),
            "-D",
            "-1",
        ])
        .args(["--control", &control])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn perf stat");
    ctl_file.write_all(b"enable\n").expect("send enable");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut reply = Vec::new();
    while !String::from_utf8_lossy(&reply).contains("ack") {
        assert!(
            Instant::now() < deadline,
            "perf never acknowledged 'enable'"
        );
        let mut buf = [0u8; 16];
        match ack_file.read(&mut buf) {
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("read ack: {e}"),
        }
    }
    child
}

/// Starts `tracer stat -v -p PID` and returns once it says it is counting.
#[allow(clippy::zombie_processes)] // the caller waits; a failed assert ends the test process
fn tracer_attached(
    pid: u32,
    extra: &[&str],
) -> (std::process::Child, BufReader<std::process::ChildStderr>) {
    common::require_root();
    let mut child = common::Tracer::new(["stat", "-v", "-x,", "-p", &pid.to_string()])
        .command()
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tracer stat");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut line = String::new();
    loop {
        line.clear();
        let n = stderr.read_line(&mut line).expect("read tracer stderr");
        assert!(n > 0, "tracer stat ended before counting");
        if line.starts_with("tracer stat: counting") {
            return (child, stderr);
        }
    }
}

#[test]
fn page_faults_of_one_run_agree_exactly_with_perf() {
    common::require_root();
    let events = "page-faults,minor-faults,page-faults:u";
    let dir = tempfile::tempdir().unwrap();
    let mut work = Workload::batched(512, None, &["touch", "512"]);
    let theirs = perf_attached(work.pid(), events, dir.path());
    let (ours, mut our_stderr) = tracer_attached(work.pid(), &["-e", events]);
    work.run_batch();
    work.finish();
    // Both end by themselves once the process is gone.
    let theirs = theirs.wait_with_output().expect("perf stat");
    let mut rest = String::new();
    our_stderr.read_to_string(&mut rest).unwrap();
    let ours = ours.wait_with_output().expect("tracer stat");
    assert_eq!(ours.status.code(), Some(0), "{rest}");
    let ours = Output {
        stderr: rest.into_bytes(),
        ..ours
    };
    let (ours, theirs) = (rows(&ours, ','), rows(&theirs, ','));
    for event in ["page-faults", "minor-faults", "page-faults:u"] {
        assert_eq!(count(&ours, event), count(&theirs, event), "{event}");
    }
    let faults = count(&ours, "page-faults");
    assert!(
        (512..=516).contains(&faults),
        "512 touched pages and the exit path's few: {faults}"
    );
}

#[test]
fn page_faults_of_a_command_agree_with_perf_within_tolerance() {
    let args = ["-x,", "-e", "page-faults", "--", &tp(), "touch", "512"];
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        ours.push(count(&rows(&stat(&args), ','), "page-faults"));
        theirs.push(count(&rows(&perf(&args), ','), "page-faults"));
    }
    let (a, b) = (median(ours.clone()), median(theirs.clone()));
    assert!(
        a.abs_diff(b) <= 4,
        "medians {a} vs {b} (tracer {ours:?}, perf {theirs:?}); tolerance 4 pages"
    );
    assert!(a >= 512, "{ours:?}");
}

#[test]
fn csv_columns_line_up_with_perfs() {
    if !has(Feature::Tracepoints, "stat_csv") {
        return;
    }
    let tp = tp();
    let events = "task-clock,page-faults,syscalls:sys_enter_getppid,cycles,instructions";
    // Plain, with -r (the variance column), with another separator.
    for extra in [&["-x,"][..], &["-x,", "-r", "2"], &["-x;"]] {
        let sep = if extra.contains(&"-x;") { ';' } else { ',' };
        let mut args: Vec<&str> = extra.to_vec();
        args.extend(["-e", events, "--", &tp, "getppid", "1000"]);
        let (ours, theirs) = (stat(&args), perf(&args));
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        assert_columns_line_up(
            &rows(&ours, sep),
            &rows(&theirs, sep),
            &format!("{extra:?}"),
        );
    }
    // perf's default events.
    let args = ["-x,", "--", &tp, "getppid", "10"];
    let (ours, theirs) = (rows(&stat(&args), ','), rows(&perf(&args), ','));
    let names = |r: &[Vec<String>]| r.iter().map(|r| r[2].clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    // Per-CPU rows: a CPU column first.
    let args = ["-x,", "-a", "-A", "-e", "cpu-clock", "--", "sleep", "0.05"];
    let (ours, theirs) = (rows(&stat(&args), ','), rows(&perf(&args), ','));
    let online = tracer::perf::cpus::online().unwrap().len();
    assert_eq!(ours.len(), online);
    assert_columns_line_up(&ours, &theirs, "-a -A");
    assert!(ours.iter().all(|r| r[0].starts_with("CPU")), "{ours:?}");
    // Interval rows: a timestamp column first.
    let args = [
        "-x,",
        "-I",
        "100",
        "--interval-count",
        "2",
        "-a",
        "-e",
        "cpu-clock",
    ];
    let (ours, theirs) = (rows(&stat(&args), ','), rows(&perf(&args), ','));
    assert_eq!(ours.len(), 2, "{ours:?}");
    assert_columns_line_up(&ours, &theirs, "-I");
}

#[test]
fn human_columns_line_up_with_perfs() {
    if !has(Feature::Tracepoints, "stat_human") {
        return;
    }
    // Debian's perf runs in the C locale here: no thousands separators.
    let args = [
        "--no-big-num",
        "-e",
        "task-clock,page-faults,syscalls:sys_enter_getppid,cycles",
        "--",
        &tp(),
        "getppid",
        "1000",
    ];
    let ours = text(&stat(&args[..]).stderr);
    let theirs = text(&perf(&args[1..]).stderr);
    let shape = |report: &str| -> Vec<(usize, Option<usize>, Option<usize>)> {
        report
            .lines()
            // Counter lines and the elapsed/user/sys lines; not the title.
            .filter(|l| l.starts_with("   "))
            .map(|l| (l.len(), l.find('#'), l.find("seconds")))
            .collect()
    };
    assert_eq!(
        shape(&ours),
        shape(&theirs),
        "\ntracer:\n{ours}\nperf:\n{theirs}"
    );
    assert!(ours.contains(" Performance counter stats for '"));
    assert!(ours.contains("<not supported>      cycles"));
}

#[test]
fn json_lines_have_perfs_keys() {
    let args = ["-j", "-e", "task-clock,page-faults,cycles", "--", "true"];
    let objects = |out: Output| -> Vec<serde_json::Value> {
        text(&out.stderr)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    };
    let (ours, theirs) = (objects(stat(&args)), objects(perf(&args)));
    assert_eq!(ours.len(), 3);
    for (a, b) in ours.iter().zip(&theirs) {
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(a), keys(b));
        assert_eq!(a["event"], b["event"]);
        assert_eq!(a["unit"], b["unit"]);
    }
    assert_eq!(ours[2]["counter-value"], "<not supported>");
}

#[test]
fn a_group_is_read_with_one_read() {
    let out = stat(&[
        "-v",
        "-x,",
        "-e",
        "{task-clock,page-faults},cs",
        "--",
        &tp(),
        "touch",
        "64",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("opened page-faults (group member, read_format TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|GROUP"),
        "{stderr}"
    );
    assert!(
        stderr.contains("read {task-clock,page-faults}: one read(2), 2 values"),
        "{stderr}"
    );
    assert!(
        stderr.contains("read {cs}: one read(2), 1 value\n"),
        "{stderr}"
    );
    // Group members share the leader's times: the same run-time column.
    let rows = rows(&out, ',');
    assert_eq!(rows[0][3], rows[1][3], "{rows:?}");
    assert!(count(&rows, "page-faults") >= 64);
}

#[test]
fn interval_deltas_sum_to_the_total() {
    if !has(Feature::Tracepoints, "stat_interval") {
        return;
    }
    // `spin 1000` calls getppid for one second and prints how many times it did.
    let out = stat(&[
        "-x,",
        "-I",
        "100",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &tp(),
        "spin",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let total: u64 = text(&out.stdout)
        .trim()
        .parse()
        .expect("spin prints its count");
    let rows = rows(&out, ',');
    assert!(
        (9..=12).contains(&rows.len()),
        "about 10 intervals in 1 s: {rows:?}"
    );
    // When the command exits just after an interval boundary, the last, near-empty interval
    // has no running time and is `<not counted>` (as perf prints it): it adds nothing.
    let sum: u64 = rows
        .iter()
        .enumerate()
        .map(|(i, r)| match r[1].parse::<u64>() {
            Ok(n) => n,
            // An interval in which the workload never ran (a loaded machine) counts nothing.
            Err(_) if r[1] == "<not counted>" => 0,
            Err(_) => panic!("row {i} has no count: {r:?}"),
        })
        .sum();
    assert_eq!(sum, total, "{rows:?}");
    // Timestamps grow by about 100 ms.
    let times: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] > w[0]));
    assert!((times[0] - 0.1).abs() < 0.05, "{times:?}");
}

#[test]
fn repeats_print_means_and_relative_standard_errors() {
    let out = stat(&[
        "-r",
        "5",
        "-e",
        "task-clock,page-faults",
        "--",
        &tp(),
        "touch",
        "16",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(" (5 runs):"), "{stderr}");
    let task_clock = stderr.lines().find(|l| l.contains("task-clock")).unwrap();
    assert!(
        task_clock.contains("( +-") && task_clock.ends_with("% )"),
        "{stderr}"
    );
    let elapsed = stderr
        .lines()
        .find(|l| l.contains("seconds time elapsed"))
        .unwrap();
    assert!(elapsed.contains(" +- "), "{elapsed}");
    assert!(
        !stderr.contains("seconds user"),
        "perf prints no rusage for -r"
    );
    // CSV: the variance column, as perf prints it.
    let csv = rows(
        &stat(&[
            "-x,",
            "-r",
            "3",
            "-e",
            "page-faults",
            "--",
            &tp(),
            "touch",
            "16",
        ]),
        ',',
    );
    assert!(csv[0][3].ends_with('%') && numeric(&csv[0][3]), "{csv:?}");
}

#[test]
fn unsupported_hardware_counters_do_not_fail_the_run() {
    let out = stat(&["-x,", "-e", "cycles,instructions,task-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows(&out, ',');
    match Feature::HardwareCounters.check() {
        Status::Available { .. } => assert!(numeric(&rows[0][0]), "{rows:?}"),
        Status::Unavailable { .. } => {
            assert_eq!(rows[0][0], "<not supported>");
            assert_eq!(rows[1][0], "<not supported>");
        }
    }
    assert!(numeric(&rows[2][0]), "task-clock still counts: {rows:?}");
}

#[test]
fn the_commands_exit_status_passes_through() {
    let out = stat(&["-e", "task-clock", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let out = stat(&[
        "-x,",
        "-e",
        "task-clock",
        "--timeout",
        "100",
        "--",
        "sleep",
        "5",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a timeout ends the run normally, as in perf"
    );
}

#[test]
fn bad_events_are_usage_errors_with_suggestions() {
    // perf stat's usage errors exit 129 (its event syntax errors too).
    let out = stat(&["-e", "cycels", "--", "true"]);
    assert_eq!(out.status.code(), Some(129));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error: unknown event 'cycels'"), "{stderr}");
    assert!(stderr.contains("hint: did you mean: cycles"), "{stderr}");
    if has(Feature::Tracepoints, "stat_bad_tracepoint") {
        let out = stat(&["-e", "syscalls:sys_enter_getppi", "--", "true"]);
        assert_eq!(out.status.code(), Some(129));
        // The same did-you-mean as `tracer probe`.
        assert!(
            text(&out.stderr).contains("hint: did you mean: syscalls:sys_enter_getppid"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = stat(&["-e", "{task-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(129));
}

#[test]
fn uprobe_hits_are_counted_exactly() {
    if !has(Feature::UprobePmu, "stat_uprobe") {
        return;
    }
    let tp = tp();
    let event = format!("uprobe:{tp}:tracer_testprog_target");
    let out = stat(&["-x,", "-e", &event, "--", &tp, "call", "1000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(count(&rows(&out, ','), &event), 1000);
}

#[test]
fn per_thread_counts_of_a_running_process_are_exact() {
    if !has(Feature::Tracepoints, "stat_per_thread") {
        return;
    }
    let mut work = Workload::batched(1000, None, &["getppid", "1000"]);
    let pid = work.pid();
    let (ours, mut stderr) =
        tracer_attached(pid, &["--per-thread", "-e", "syscalls:sys_enter_getppid"]);
    work.run_batch();
    work.finish();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(ours.wait_with_output().unwrap().status.success(), "{rest}");
    let rows: Vec<Vec<&str>> = rest
        .lines()
        .filter(|l| !l.starts_with("tracer stat:") && l.contains(",syscalls:sys_enter_getppid,"))
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 1, "{rest}");
    assert!(rows[0][0].ends_with(&format!("-{pid}")), "{rest}");
    assert_eq!(rows[0][1], "1000", "{rest}");
}

#[test]
fn a_cgroup_counts_only_its_tasks() {
    if !has(Feature::Tracepoints, "stat_cgroup") {
        return;
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let Some(root) = mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&"cgroup2"))
        .map(|f| f[1].to_string())
    else {
        let _ = writeln!(std::io::stderr(), "SKIPPED stat_cgroup: no cgroup2 mount");
        return;
    };
    let name = format!("tracer-stat-test-{}", std::process::id());
    let dir = Path::new(&root).join(&name);
    std::fs::create_dir(&dir).expect("create a cgroup");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} getppid 1000",
        dir.display(),
        tp()
    );
    // One event in the cgroup, the same event everywhere.
    let groups = format!("{name},");
    let args = [
        "-x,",
        "-a",
        "-e",
        "syscalls:sys_enter_getppid,syscalls:sys_enter_getppid",
        "-G",
        &groups,
        "--",
        "sh",
        "-c",
        &script,
    ];
    let ours = stat(&args);
    let theirs = perf(&args);
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let (ours, theirs) = (rows(&ours, ','), rows(&theirs, ','));
    assert_eq!(ours[0][0], "1000", "{ours:?}");
    assert_eq!(ours[0][3], name);
    assert!(ours[1][0].parse::<u64>().unwrap() >= 1000);
    assert_eq!(theirs[0][0], "1000", "{theirs:?}");
    assert_columns_line_up(&ours[..1], &theirs[..1], "-G");
}

#[test]
fn reports_go_to_a_file_a_descriptor_or_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stat.txt");
    let path = file.to_str().unwrap();
    for append in [false, true] {
        let mut args = vec!["-o", path, "-x,", "-e", "page-faults"];
        if append {
            args.push("--append");
        }
        args.extend(["--", "true"]);
        let out = stat(&args);
        assert!(out.status.success());
        assert!(
            !text(&out.stderr).contains("page-faults"),
            "the report went to the file"
        );
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written.matches("# started on ").count(), 2, "{written}");
    assert_eq!(written.matches(",page-faults,").count(), 2, "{written}");
    // --log-fd: a descriptor the shell opened.
    let log = dir.path().join("fd.txt");
    let script = format!(
        "{} stat --log-fd 3 -x, -e page-faults -- true 3>{}",
        common::tracer_bin().display(),
        log.display()
    );
    assert!(Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap()
        .success());
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains(",page-faults,"));
    // -n: time only.
    let out = stat(&["-n", "--", "true"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("seconds time elapsed") && !stderr.contains("task-clock"),
        "{stderr}"
    );
}

// ---- perf stat's command line and exit behaviour (issue #26) ----

/// Runs `tracer stat` or `perf stat` with `args` and a piped stdout.
fn both(args: &[&str]) -> (Output, Output) {
    (stat(args), perf(args))
}

/// The keys of a JSON line, in order (`"key" : value`, as perf writes them).
fn json_keys(line: &str) -> Vec<String> {
    line.split("\", ")
        .flat_map(|part| part.split(", \""))
        .filter_map(|part| {
            let part = part.trim_start_matches(['{', '"']);
            part.split_once("\" : ").map(|(k, _)| k.to_string())
        })
        .collect()
}

/// Report lines that carry `needle` (the human report, on stderr).
fn lines_with(out: &Output, needle: &str) -> Vec<String> {
    text(&out.stderr)
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// The interval column headers of a report.
fn headers(out: &Output) -> Vec<String> {
    (text(&out.stderr).lines())
        .filter(|l| l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn unknown_options_exit_129_and_a_command_that_cannot_run_255() {
    let (ours, theirs) = both(&["--no-such-option", "true"]);
    assert_eq!(theirs.status.code(), Some(129));
    assert_eq!(ours.status.code(), Some(129), "{}", text(&ours.stderr));
    let (ours, theirs) = both(&["--", "/nonexistent/prog"]);
    assert_eq!(theirs.status.code(), Some(255));
    assert_eq!(ours.status.code(), Some(255), "{}", text(&ours.stderr));
    // No report: perf prints "Workload failed", tracer why the exec failed, once.
    let stderr = text(&ours.stderr);
    assert!(!stderr.contains("Performance counter stats"), "{stderr}");
    assert_eq!(stderr.matches("cannot execute").count(), 1, "{stderr}");
}

#[test]
fn a_pid_is_counted_for_as_long_as_the_command_runs() {
    if !has(Feature::Tracepoints, "stat_pid_and_command") {
        return;
    }
    common::require_root();
    let mut work = Workload::batched(1000, None, &["getppid", "1000"]);
    let pid = work.pid().to_string();
    // The command waits for a byte on stdin (tracer's, which it inherits), then makes 5
    // getppid calls of its own: those are not counted, the pid's 1000 are.
    let mut child = common::Tracer::new([
        "stat",
        "-v",
        "-x,",
        "-p",
        &pid,
        "-e",
        "syscalls:sys_enter_getppid",
    ])
    .command()
    .args(["--", &tp(), "--wait", "getppid", "5"])
    .stdin(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn tracer stat");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut line = String::new();
    while !line.starts_with("tracer stat: counting") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "ended early");
    }
    work.run_batch();
    child.stdin.take().unwrap().write_all(b"g").unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    // The command's end ends the run: the pid is still alive.
    assert!(child.wait().unwrap().success(), "{rest}");
    work.finish();
    let row: Vec<&str> = rest
        .lines()
        .find(|l| l.contains(",syscalls:sys_enter_getppid,"))
        .unwrap_or_else(|| panic!("{rest}"))
        .split(',')
        .collect();
    assert_eq!(row[0], "1000", "{rest}");
    // perf and tracer print the same report for a pid that does nothing meanwhile.
    let idle = Workload::batched(1, None, &["getppid", "1"]);
    let idle_pid = idle.pid().to_string();
    let args = [
        "-p",
        &idle_pid,
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        "true",
    ];
    let (ours, theirs) = both(&args);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let title = format!(" Performance counter stats for process id '{idle_pid}':");
    for out in [&ours, &theirs] {
        assert!(text(&out.stderr).contains(&title), "{}", text(&out.stderr));
        assert_eq!(lines_with(out, "<not counted>").len(), 1);
        assert!(!text(&out.stderr).contains("seconds user"));
    }
    idle.finish();
}

#[test]
fn topology_modes_have_perfs_columns_fields_and_keys() {
    if !has(Feature::Tracepoints, "stat_topology") {
        return;
    }
    let tp = tp();
    let events = "syscalls:sys_enter_getppid,task-clock";
    for mode in ["--per-socket", "--per-die", "--per-core", "--per-node"] {
        let work = ["--", tp.as_str(), "getppid", "1000"];
        let csv: Vec<&str> = ["-a", mode, "-x,", "-e", events]
            .into_iter()
            .chain(work)
            .collect();
        let (ours, theirs) = both(&csv);
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        let (ours, theirs) = (rows(&ours, ','), rows(&theirs, ','));
        assert_columns_line_up(&ours, &theirs, mode);
        // System-wide: the workload's 1000 calls, and those of the tests running beside it.
        let calls: u64 = (ours.iter())
            .filter(|r| r[4] == "syscalls:sys_enter_getppid")
            .map(|r| r[2].parse::<u64>().unwrap())
            .sum();
        assert!(calls >= 1000, "{mode}: {ours:?}");
        let cpus: u32 = (ours.iter())
            .filter(|r| r[4] == "task-clock")
            .map(|r| r[1].parse::<u32>().unwrap())
            .sum();
        assert_eq!(cpus as usize, tracer::perf::cpus::online().unwrap().len());

        let human: Vec<&str> = ["-a", mode, "-e", events].into_iter().chain(work).collect();
        let (ours, theirs) = both(&human);
        let (ours, theirs) = (
            lines_with(&ours, " task-clock "),
            lines_with(&theirs, " task-clock "),
        );
        assert_eq!(ours.len(), theirs.len(), "{mode}\n{ours:?}\n{theirs:?}");
        for (a, b) in ours.iter().zip(&theirs) {
            // The group name, its CPU count and the columns after them, where perf has them.
            let label = |l: &str| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            assert_eq!(label(a), label(b), "{mode}");
            assert_eq!(
                a.find("msec task-clock"),
                b.find("msec task-clock"),
                "{a}\n{b}"
            );
            assert_eq!(a.find(" # "), b.find(" # "), "{a}\n{b}");
        }

        let json: Vec<&str> = ["-a", mode, "-j", "-e", events]
            .into_iter()
            .chain(work)
            .collect();
        let (ours, theirs) = both(&json);
        let keys = |out: &Output| -> Vec<Vec<String>> {
            text(&out.stderr)
                .lines()
                .filter(|l| l.starts_with('{'))
                .map(json_keys)
                .collect()
        };
        assert_eq!(keys(&ours), keys(&theirs), "{mode}");
        assert_eq!(
            keys(&ours)[0][..2],
            ["socket", "aggregate-number"][..]
                .iter()
                .map(|k| {
                    match (mode, *k) {
                        ("--per-die", "socket") => "die".to_string(),
                        ("--per-core", "socket") => "core".to_string(),
                        ("--per-node", "socket") => "node".to_string(),
                        (_, k) => k.to_string(),
                    }
                })
                .collect::<Vec<_>>()[..],
            "{mode}"
        );

        let interval = [
            "-a",
            mode,
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "task-clock",
        ];
        let (ours, theirs) = both(&interval);
        assert_eq!(headers(&ours), headers(&theirs), "{mode}");
    }
}

#[test]
fn a_group_that_did_not_count_names_one_cpu_as_perf_does() {
    // perf counts a group's CPUs while summing its counter and stops at the first that did not
    // run: `S0,1,<not supported>,,cycles` beside `S0,2,...,task-clock`.
    for mode in ["--per-socket", "--per-die", "--per-node", "--per-core"] {
        let args = [
            "-a",
            mode,
            "-x,",
            "-e",
            "cycles,task-clock",
            "--",
            "sleep",
            "0.05",
        ];
        let (ours, theirs) = both(&args);
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        let named = |out: &Output| -> Vec<(String, String, String)> {
            (rows(out, ',').into_iter())
                .map(|r| (r[0].clone(), r[1].clone(), r[4].clone()))
                .collect()
        };
        assert_eq!(named(&ours), named(&theirs), "{mode}");
        if !matches!(Feature::HardwareCounters.check(), Status::Available { .. }) {
            assert!(named(&ours)
                .iter()
                .all(|(_, cpus, event)| event != "cycles" || cpus == "1"));
        }
    }
}

#[test]
fn the_interval_count_waits_for_the_command_as_perf_does() {
    // perf stops printing after the count and waits for the command: its output, its status.
    let args = [
        "-I",
        "100",
        "--interval-count",
        "1",
        "-x,",
        "-e",
        "task-clock",
        "--",
        "sh",
        "-c",
        "sleep 0.3; echo done; exit 3",
    ];
    let (ours, theirs) = both(&args);
    for out in [&ours, &theirs] {
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "done\n");
        assert_eq!(rows(out, ',').len(), 1, "{}", text(&out.stderr));
    }
}

#[test]
fn per_cache_groups_cpus_by_their_last_level_cache() {
    // perf 6.1 has no --per-cache (perf 6.3 added it): tracer's own structure, perf 6.3's.
    let out = stat(&["-a", "--per-cache", "-x,", "-e", "task-clock", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = rows(&out, ',');
    let cpus: usize = rows.iter().map(|r| r[1].parse::<usize>().unwrap()).sum();
    assert_eq!(
        cpus,
        tracer::perf::cpus::online().unwrap().len(),
        "{rows:?}"
    );
    for row in &rows {
        let (head, id) = row[0]
            .split_once("-ID")
            .unwrap_or_else(|| panic!("{row:?}"));
        assert!(
            head.starts_with('S') && head.contains("-D") && head.contains("-L"),
            "{row:?}"
        );
        assert!(id.parse::<u32>().is_ok(), "{row:?}");
        assert_eq!(row.len(), 9, "{row:?}");
    }
    let out = stat(&[
        "-a",
        "--per-cache=L1",
        "-j",
        "-e",
        "task-clock",
        "--",
        "true",
    ]);
    let first = text(&out.stderr)
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap()
        .to_string();
    assert_eq!(json_keys(&first)[..2], ["cache", "aggregate-number"]);
    assert!(first.contains("-L1-ID"), "{first}");
}

#[test]
fn per_thread_system_wide_prints_the_threads_that_counted() {
    if !has(Feature::Tracepoints, "stat_per_thread_all") {
        return;
    }
    // Under a name of its own: the tests beside it run tracer-testprog too.
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("per-thread-all");
    std::fs::copy(testprog(), &prog).unwrap();
    let prog = prog.display().to_string();
    let out = stat(&[
        "-a",
        "--per-thread",
        "-x,",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &prog,
        "getppid",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let threads = rows(&out, ',');
    let ours = threads
        .iter()
        .find(|r| r[0].starts_with("per-thread-all-"))
        .unwrap_or_else(|| panic!("{threads:?}"));
    // 1000, and one more when the launched child's own check that tracer is alive (a getppid
    // right after its fork, before its exec: launch.rs `tie_to_parent`) ran after counting
    // began: under -a it is a getppid of that thread too, named after its exec.
    assert!(["1000", "1001"].contains(&ours[1].as_str()), "{threads:?}");
    // Threads that counted nothing are left out, as perf leaves them out.
    assert!(threads.iter().all(|r| r[1] != "0"), "{threads:?}");
    // The rows have perf's fields.
    let (ours, theirs) = both(&[
        "-a",
        "--per-thread",
        "-x,",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "0.2",
    ]);
    // perf itself printed no row at all in about one run of five here (perf 6.x, `-a
    // --per-thread` around a 0.2 s command): tracer's rows must be there, perf's are checked
    // when it printed them.
    assert!(!rows(&ours, ',').is_empty(), "{}", text(&ours.stderr));
    for out in [&ours, &theirs] {
        let rows = rows(out, ',');
        assert!(
            rows.iter().all(|r| r.len() == 8 && r[3] == "task-clock"),
            "{rows:?}"
        );
    }
}

#[test]
fn detailed_runs_add_perfs_event_sets() {
    let tp = tp();
    for d in ["-d", "-dd", "-ddd"] {
        let (ours, theirs) = both(&[d, "-x,", "--", &tp, "getppid", "10"]);
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        let names = |out: &Output| -> Vec<(String, bool)> {
            rows(out, ',')
                .iter()
                .map(|r| (r[2].clone(), r[0] == "<not supported>"))
                .collect()
        };
        assert_eq!(names(&ours), names(&theirs), "{d}");
    }
}

#[test]
fn run_flags_behave_as_perfs() {
    if !has(Feature::Tracepoints, "stat_run_flags") {
        return;
    }
    let tp = tp();
    let getppid = [
        "-e",
        "syscalls:sys_enter_getppid,page-faults",
        "--",
        &tp,
        "getppid",
        "1000",
    ];
    // -B: separators as the locale has them; this machine's C locale has none, as perf shows.
    let args: Vec<&str> = ["-B"].into_iter().chain(getppid).collect();
    let (ours, theirs) = both(&args);
    let line = |out: &Output| lines_with(out, "syscalls:sys_enter_getppid")[0].clone();
    assert_eq!(line(&ours), line(&theirs));
    assert!(
        line(&ours).trim_start().starts_with("1000 "),
        "{}",
        line(&ours)
    );
    // --all-user/--all-kernel: the names are kept, the tracepoint still counts every call,
    // and user plus kernel page faults are all of them.
    for flag in ["--all-user", "--all-kernel"] {
        let args: Vec<&str> = [flag, "-x,"].into_iter().chain(getppid).collect();
        let (ours, theirs) = both(&args);
        let (ours, theirs) = (rows(&ours, ','), rows(&theirs, ','));
        assert_columns_line_up(&ours, &theirs, flag);
        assert_eq!(count(&ours, "syscalls:sys_enter_getppid"), 1000);
    }
    // --quiet: nothing at all, and the command's status.
    let args: Vec<&str> = ["--quiet"].into_iter().chain(getppid).collect();
    let (ours, theirs) = both(&args);
    for out in [&ours, &theirs] {
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stderr), "");
    }
    // --pre/--post around every run, on the command's stdout.
    let args = [
        "-r",
        "2",
        "--pre",
        "echo PRE",
        "--post",
        "echo POST",
        "-x,",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &tp,
        "getppid",
        "10",
    ];
    let (ours, theirs) = both(&args);
    assert_eq!(text(&ours.stdout), "PRE\nPOST\nPRE\nPOST\n");
    assert_eq!(text(&ours.stdout), text(&theirs.stdout));
    assert_columns_line_up(&rows(&ours, ','), &rows(&theirs, ','), "--pre/--post");
    let out = stat(&["--pre", "exit 3", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("the --pre command 'exit 3' failed (status 3)"));
}

#[test]
fn summaries_follow_the_intervals_as_perfs() {
    if !has(Feature::Tracepoints, "stat_summary") {
        return;
    }
    let tp = tp();
    let base = [
        "-I",
        "100",
        "--summary",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &tp,
        "getppid",
        // Long enough that perf has enabled its counters before the workload ends (with -I it
        // enables them itself after the fork; 1000 calls sometimes ended first: `<not
        // counted>`, no interval header).
        "20000",
    ];
    let with = |extra: &[&'static str]| -> Vec<String> {
        extra
            .iter()
            .map(|s| s.to_string())
            .chain(base.iter().map(|s| s.to_string()))
            .collect()
    };
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        both(&args)
    };
    let (ours, theirs) = run(&with(&["-x,"]));
    let (r, p) = (rows(&ours, ','), rows(&theirs, ','));
    // perf's own rows vary with how the workload was scheduled: compare the summary rows.
    let (last, theirs_last) = (r.last().unwrap(), p.last().unwrap());
    assert_eq!(last.len(), theirs_last.len(), "{r:?}\n{p:?}");
    assert_eq!(last[0], theirs_last[0], "{r:?}\n{p:?}");
    assert_eq!(
        last[..4],
        ["summary", "20000", "", "syscalls:sys_enter_getppid"],
        "{r:?}"
    );
    let (ours, theirs) = run(&with(&["-x,", "--no-csv-summary"]));
    let (r, p) = (rows(&ours, ','), rows(&theirs, ','));
    assert_eq!(r.last().unwrap().len(), p.last().unwrap().len());
    assert_eq!(
        r.last().unwrap()[..3],
        ["20000", "", "syscalls:sys_enter_getppid"],
        "{r:?}"
    );
    let (ours, theirs) = run(&with(&["-j"]));
    let keys = |out: &Output| -> Vec<Vec<String>> {
        text(&out.stderr)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(json_keys)
            .collect()
    };
    // How many 100 ms intervals a short workload spans depends on the load: compare the
    // summary's keys, and the shape of every interval line.
    assert_eq!(keys(&ours).last(), keys(&theirs).last());
    assert_ne!(keys(&ours).last().unwrap()[0], "interval");
    let (ours_keys, theirs_keys) = (keys(&ours), keys(&theirs));
    let intervals = (ours_keys.iter().rev().skip(1)).chain(theirs_keys.iter().rev().skip(1));
    for line in intervals {
        assert_eq!(line[0], "interval", "{ours_keys:?}\n{theirs_keys:?}");
        assert_eq!(line[1..], ours_keys.last().unwrap()[..]);
    }
    let (ours, theirs) = run(&with(&[]));
    for out in [&ours, &theirs] {
        let stderr = text(&out.stderr);
        assert_eq!(stderr.matches("#           time").count(), 1, "{stderr}");
        assert!(
            stderr.contains(" Performance counter stats for "),
            "{stderr}"
        );
        assert!(stderr.contains(" seconds time elapsed"), "{stderr}");
    }
}

#[test]
fn interval_clear_clears_the_screen_before_each_interval() {
    let args = [
        "-a",
        "-I",
        "100",
        "--interval-count",
        "2",
        "--interval-clear",
        "-e",
        "task-clock",
    ];
    let (ours, theirs) = both(&args);
    assert_eq!(text(&ours.stdout), "\x1b[H\x1b[2J\n".repeat(2));
    assert_eq!(lines_with(&ours, "#           time").len(), 2);
    // Debian's perf 6.1.192 refuses the flag whatever the output ("--interval-clear does not
    // work with output", with no -o given: its check reads the wrong option), where 6.1.187
    // cleared the screen as above; compared with a perf that accepts it.
    if text(&theirs.stderr).contains("--interval-clear does not work with output") {
        eprintln!("interval_clear: not compared with this perf, which refuses --interval-clear");
        return;
    }
    assert_eq!(text(&ours.stdout), text(&theirs.stdout));
    assert_eq!(headers(&ours), headers(&theirs));
}

#[test]
fn tool_events_are_perfs_duration_user_and_system_time() {
    let tp = tp();
    let args = [
        "-x,",
        "-e",
        "duration_time,user_time,system_time",
        "--",
        &tp,
        "spin",
        "100",
    ];
    let (ours, theirs) = both(&args);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let shape = |out: &Output| -> Vec<(String, String, usize)> {
        rows(out, ',')
            .iter()
            .map(|r| (r[1].clone(), r[2].clone(), r.len()))
            .collect()
    };
    assert_eq!(shape(&ours), shape(&theirs));
    // A counted tool event's run time is its value, as in perf.
    let r = rows(&ours, ',');
    assert_eq!(r[0][0], r[0][3], "{r:?}");
    let ns: f64 = r[0][0].parse().unwrap();
    assert!((1e8..2e9).contains(&ns), "spin 100 runs 100 ms: {r:?}");
    assert_eq!(r[1][0], r[1][3], "{r:?}");
}

#[test]
fn repeats_with_intervals_print_every_runs_intervals() {
    if !has(Feature::Tracepoints, "stat_repeat_interval") {
        return;
    }
    let out = stat(&[
        "-r",
        "2",
        "-I",
        "100",
        "-x,",
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        &tp(),
        "getppid",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sum: u64 = rows(&out, ',')
        .iter()
        .filter_map(|r| r[1].parse::<u64>().ok())
        .sum();
    assert_eq!(sum, 2000);
}

#[test]
fn metrics_are_noted_where_this_machine_lacks_their_events() {
    let tp = tp();
    let hw = matches!(Feature::HardwareCounters.check(), Status::Available { .. });
    let out = stat(&["-M", "IPC", "--", &tp, "getppid", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.contains("note: metric IPC (insn per cycle) is not computed: instructions, cycles <not supported> here"),
        !hw,
        "{stderr}"
    );
    assert_eq!(
        (lines_with(&out, "insn per cycle").iter())
            .filter(|l| !l.starts_with("note:"))
            .count(),
        usize::from(hw),
        "{stderr}"
    );
    // A name no metric has: perf's words, then perf's default events, in both. perf says so
    // where it has metric tables for the CPU (it did on an AMD family 19h machine); on this
    // session's Intel CPU, Debian's perf 6.1 said nothing and counted its default events.
    let (ours, theirs) = both(&["-M", "NoSuchMetric", "-x,", "--", &tp, "getppid", "10"]);
    let unknown = "Cannot find metric or group `NoSuchMetric'";
    assert!(
        text(&ours.stderr).contains(unknown),
        "{}",
        text(&ours.stderr)
    );
    if !text(&theirs.stderr).contains(unknown) {
        eprintln!("perf stat did not say `{unknown}` on this CPU: compared as to columns only");
    }
    for out in [&ours, &theirs] {
        assert_eq!(out.status.code(), Some(0));
    }
    assert_columns_line_up(&rows(&ours, ','), &rows(&theirs, ','), "-M unknown");
    // --metric-only: the metric columns perf prints there (none without hardware counters).
    let (ours, theirs) = both(&[
        "--metric-only",
        "-a",
        "-e",
        "task-clock,context-switches",
        "--",
        "sleep",
        "0.1",
    ]);
    let blank_run = |out: &Output| {
        let stderr = text(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let title = lines
            .iter()
            .position(|l| l.contains("Performance counter stats"))
            .unwrap();
        let elapsed = lines
            .iter()
            .position(|l| l.contains("seconds time elapsed"))
            .unwrap();
        lines[title + 1..elapsed]
            .iter()
            .map(|l| l.trim().to_string())
            .collect::<Vec<_>>()
    };
    if !hw {
        assert_eq!(blank_run(&ours), blank_run(&theirs));
    }
    // --topdown needs -a, in perf's words.
    let out = stat(&["--topdown", "--", "true"]);
    assert_eq!(out.status.code(), Some(129));
    assert!(
        text(&out.stderr).contains("top down event configuration requires system-wide mode (-a)")
    );
    // -T without TSX: perf's words.
    if !Path::new("/sys/bus/event_source/devices/cpu/events/tx-start").exists() {
        let (ours, theirs) = both(&["-T", "--", "true"]);
        for out in [&ours, &theirs] {
            assert!(
                text(&out.stderr).contains("Cannot set up transaction events"),
                "{}",
                text(&out.stderr)
            );
        }
        assert_eq!(ours.status.code(), Some(1));
    }
}

/// A report with its timestamps masked (`0.100441216` -> `T`): what must be the same in both.
fn masked(out: &Output) -> Vec<String> {
    (text(&out.stderr).lines())
        .map(|line| {
            let mut masked = String::new();
            let mut rest = line;
            while let Some(dot) = rest.find('.') {
                let digits = rest[..dot].len()
                    - rest[..dot]
                        .trim_end_matches(|c: char| c.is_ascii_digit())
                        .len();
                let frac = rest[dot + 1..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .count();
                if digits > 0 && frac == 9 {
                    masked.push_str(&rest[..dot - digits]);
                    masked.push('T');
                } else {
                    masked.push_str(&rest[..dot + 1 + frac]);
                }
                rest = &rest[dot + 1 + frac..];
            }
            masked.push_str(rest);
            masked
        })
        .collect()
}

#[test]
fn metric_only_intervals_are_perfs_rows() {
    // System-wide, every counter runs in every interval: each column is deterministic (a
    // counter that did not count is one empty column, task-clock and software rates have none).
    // Without a command both stop after --interval-count intervals.
    for mode in [
        &[][..],
        &["-A"],
        &["--per-core"],
        &["--per-socket"],
        &["--per-node"],
    ] {
        for format in [&[][..], &["-x,"], &["-x;"], &["-j"]] {
            let args: Vec<&str> = ["--metric-only", "-a", "-I", "100", "--interval-count", "2"]
                .into_iter()
                .chain(mode.iter().copied())
                .chain(format.iter().copied())
                .collect();
            let (ours, theirs) = both(&args);
            assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
            assert_eq!(masked(&ours), masked(&theirs), "{args:?}");
            // A header, then one row per slot and interval.
            let slots = match mode.first() {
                Some(&"-A") | Some(&"--per-core") => tracer::perf::cpus::online().unwrap().len(),
                _ => 1,
            };
            assert_eq!(masked(&ours).len(), 1 + 2 * slots, "{args:?}");
        }
    }
    // -A names the metrics of the counters as perf does, supported here or not.
    let args = [
        "--metric-only",
        "-a",
        "-A",
        "-I",
        "100",
        "--interval-count",
        "1",
        "-x,",
        "-e",
        "task-clock,cycles,instructions,branches,branch-misses",
    ];
    let (ours, theirs) = both(&args);
    assert_eq!(masked(&ours), masked(&theirs));
    let hw = matches!(Feature::HardwareCounters.check(), Status::Available { .. });
    if !hw {
        assert_eq!(
            masked(&ours)[0],
            " time,cpu,GHz,insn per cycle,branch-misses of all branches,"
        );
    }
    // --summary: the whole run's row after the intervals, without a header (in CSV labelled
    // before each counter, as perf labels it).
    for format in [&[][..], &["-x,"], &["-x,", "--no-csv-summary"]] {
        let args: Vec<&str> = [
            "--metric-only",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "--summary",
            "-e",
            "task-clock,cycles",
        ]
        .into_iter()
        .chain(format.iter().copied())
        .collect();
        let (ours, theirs) = both(&args);
        assert_eq!(masked(&ours), masked(&theirs), "{args:?}");
    }
    // The header comes again every 25 intervals, in both modes.
    for metric_only in [&["--metric-only"][..], &[]] {
        let args: Vec<&str> = (metric_only.iter().copied())
            .chain([
                "-a",
                "-I",
                "10",
                "--interval-count",
                "30",
                "-e",
                "task-clock",
            ])
            .collect();
        let (ours, theirs) = both(&args);
        let at = |out: &Output| -> Vec<usize> {
            (masked(out).iter().enumerate())
                .filter(|(_, l)| l.starts_with('#'))
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(at(&ours), vec![0, 26], "{args:?}");
        assert_eq!(at(&ours), at(&theirs), "{args:?}");
    }
    // perf's refusals, with perf's words (perf exits 234, tracer 129 as for every usage error).
    for (args, words) in [
        (
            &["-a", "--per-thread"][..],
            "--metric-only is not supported with --per-thread",
        ),
        (&["-r", "2"][..], "--metric-only is not supported with -r"),
    ] {
        let args: Vec<&str> = ["--metric-only"]
            .into_iter()
            .chain(args.iter().copied())
            .chain(["--", "true"])
            .collect();
        let (ours, theirs) = both(&args);
        for out in [&ours, &theirs] {
            assert!(text(&out.stderr).contains(words), "{}", text(&out.stderr));
        }
        assert_eq!(ours.status.code(), Some(129));
    }
}

/// `perf list metrics` / `perf list metricgroups`: the names perf's table for this CPU has.
fn perf_list(what: &str) -> Vec<String> {
    let out = Command::new(PERF)
        .args(["list", what])
        .output()
        .expect("run perf list");
    let listing = text(&out.stdout);
    match what {
        "metrics" => (listing.lines())
            .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with('['))
            .map(|l| l.trim().to_string())
            .collect(),
        _ => (listing.lines())
            .skip_while(|l| !l.starts_with("Metric Groups:"))
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().trim_end_matches(':').to_string())
            .collect(),
    }
}

#[test]
fn metrics_of_perfs_cpu_table_are_known_by_name() {
    use tracer::counter::cpu_metrics::running_table;
    let Some(table) = running_table() else {
        eprintln!(
            "skipped: tracer carries no perf metric table for this CPU (AMD family 19h only)"
        );
        return;
    };
    // The table is the one perf picks here: the same metric and group names.
    let mut names: Vec<String> = table.metrics.iter().map(|m| m.name.to_string()).collect();
    names.sort();
    let mut theirs = perf_list("metrics");
    theirs.sort();
    assert_eq!(names, theirs);
    assert_eq!(table.groups(), perf_list("metricgroups"));
    // Every name perf has is accepted, with a note saying why it is not computed; perf's
    // `Cannot find` for the names it has not; the default events counted in both.
    let cpu_pmu = Path::new("/sys/bus/event_source/devices/cpu").exists();
    let asked = (names.iter().cloned())
        .chain(table.groups().into_iter().map(|g| g.to_uppercase()))
        .chain(["all".into(), "TopdownL1".into(), "NoSuchMetric".into()]);
    for name in asked {
        let (ours, theirs) = both(&["-M", &name, "-x,", "--", "true"]);
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        let (stderr, perfs) = (text(&ours.stderr), text(&theirs.stderr));
        let unknown = format!("Cannot find metric or group `{name}'");
        assert_eq!(
            stderr.contains(&unknown),
            perfs.contains(&unknown),
            "{stderr}\n{perfs}"
        );
        if !perfs.contains(&unknown) {
            assert!(stderr.contains("is not computed"), "{stderr}");
            assert_eq!(stderr.contains("not supported here"), !cpu_pmu, "{stderr}");
        }
        assert_columns_line_up(&rows(&ours, ','), &rows(&theirs, ','), &name);
    }
}

#[test]
fn the_root_cgroup_keeps_its_slash() {
    let (ours, theirs) = both(&["-a", "-e", "cs", "-G", "/", "-x,", "--", "sleep", "0.05"]);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    for out in [&ours, &theirs] {
        let rows = rows(out, ',');
        assert_eq!(rows[0][3], "/", "{rows:?}");
    }
}

/// Sets kernel.perf_event_paranoid for the life of the value, and puts the old one back.
struct Paranoid(String);

impl Paranoid {
    const PATH: &'static str = "/proc/sys/kernel/perf_event_paranoid";
    fn set(level: &str) -> Paranoid {
        let old = std::fs::read_to_string(Self::PATH).unwrap();
        std::fs::write(Self::PATH, level).unwrap();
        Paranoid(old)
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        let _ = std::fs::write(Self::PATH, self.0.trim());
    }
}

#[test]
fn an_unprivileged_user_counts_user_space_as_perf_does() {
    common::require_root();
    // The workload where `nobody` may run it.
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("tracer-testprog");
    std::fs::copy(testprog(), &prog).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = prog.display().to_string();
    let _paranoid = Paranoid::set("2");
    let as_nobody = |program: &str| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                program,
                "stat",
                "-x,",
            ])
            .args(["--", &prog, "getppid", "10"])
            .output()
            .expect("run setpriv")
    };
    let ours = as_nobody(common::tracer_bin().to_str().unwrap());
    let theirs = as_nobody(PERF);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let (r, p) = (rows(&ours, ','), rows(&theirs, ','));
    assert_columns_line_up(&r, &p, "paranoid 2");
    assert_eq!(r[0][2], "task-clock:u", "{r:?}");
    // In human form tracer says why the names carry :u.
    let human = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::tracer_bin())
        .args(["stat", "-e", "task-clock", "--", &prog, "getppid", "10"])
        .output()
        .unwrap();
    assert!(
        text(&human.stderr).starts_with("note: kernel.perf_event_paranoid=2: falling back to excluding kernel and hypervisor samples"),
        "{}",
        text(&human.stderr)
    );
}

#[test]
fn named_event_terms_msr_s_modifier_and_globs_as_perf_writes_them() {
    if !has(Feature::Tracepoints, "stat_event_forms") {
        return;
    }
    let tp = tp();
    let mut events = String::from("task-clock/name=foo/,page-faults/period=1/,page-faults:S");
    if Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        events.push_str(",msr/tsc/");
    }
    let (ours, theirs) = both(&["-x,", "-e", &events, "--", &tp, "getppid", "10"]);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let names =
        |out: &Output| -> Vec<String> { rows(out, ',').iter().map(|r| r[2].clone()).collect() };
    assert_eq!(names(&ours), names(&theirs));
    assert_eq!(
        names(&ours)[..3],
        ["foo", "page-faults/period=1/", "page-faults:S"]
    );
    // A glob expands in the kernel's directory order, as perf's does.
    let glob = "syscalls:sys_enter_getp*";
    let (ours, theirs) = both(&["-x,", "-e", glob, "--", &tp, "getppid", "10"]);
    assert_eq!(names(&ours), names(&theirs));
    assert_eq!(count(&rows(&ours, ','), "syscalls:sys_enter_getppid"), 10);
    let out = stat(&["-e", "task-clock/bogus=1/", "--", "true"]);
    assert_eq!(out.status.code(), Some(129));
    assert!(text(&out.stderr).contains("error: unknown term 'bogus=1' in 'task-clock/bogus=1/'"));
}

#[test]
fn no_merge_prints_what_perf_prints() {
    // tracer opens one event per name: --no-merge has nothing to keep apart, as perf here.
    let tp = tp();
    for extra in [&["--no-merge"][..], &["--no-merge", "-a"][..]] {
        let args: Vec<&str> = (extra.iter().copied())
            .chain([
                "-x,",
                "-e",
                "task-clock,page-faults",
                "--",
                &tp,
                "getppid",
                "10",
            ])
            .collect();
        let (ours, theirs) = both(&args);
        assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
        assert_columns_line_up(&rows(&ours, ','), &rows(&theirs, ','), "--no-merge");
    }
}

#[test]
fn stat_record_writes_what_stat_report_prints_again() {
    if !has(Feature::Tracepoints, "stat_record_report") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counts.json");
    let file = file.to_str().unwrap();
    let tp = tp();
    let events = "syscalls:sys_enter_getppid,task-clock";
    // Recorded system-wide, so that the report can aggregate by CPU and core afterwards.
    let record = common::Tracer::new([
        "stat", "record", "-o", file, "-a", "-x,", "-e", events, "--", &tp, "getppid", "1000",
    ])
    .command()
    .output()
    .unwrap();
    assert_eq!(record.status.code(), Some(0), "{}", text(&record.stderr));
    let report = |extra: &[&str]| {
        common::Tracer::new(["stat", "report", "-i", file])
            .command()
            .args(extra)
            .output()
            .unwrap()
    };
    // The same rows as the run printed.
    let again = report(&["-x,"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(rows(&again, ','), rows(&record, ','));
    assert!(count(&rows(&again, ','), "syscalls:sys_enter_getppid") >= 1000);
    let cpus = tracer::perf::cpus::online().unwrap().len();
    assert_eq!(rows(&report(&["-x,", "-A"]), ',').len(), 2 * cpus);
    let cores = rows(&report(&["-x,", "--per-core"]), ',');
    assert!(
        cores.iter().all(|r| r[0].starts_with("S0-D0-C")),
        "{cores:?}"
    );
    // Human: perf's structure (title, rows, elapsed; no user and system lines in a report).
    let human = text(&report(&[]).stderr);
    assert!(
        human.contains(" Performance counter stats for 'system wide':"),
        "{human}"
    );
    assert!(human.contains(" seconds time elapsed") && !human.contains("seconds user"));

    // A recording of a command: perf stat report's note for an aggregation it cannot do,
    // and a report beside perf's own.
    let events = "task-clock,page-faults";
    let ours = common::Tracer::new([
        "stat", "record", "-o", file, "-e", events, "--", &tp, "getppid", "10",
    ])
    .command()
    .output()
    .unwrap();
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let ours = report(&["-A"]);
    let perf_file = dir.path().join("perf.data");
    let perf_file = perf_file.to_str().unwrap();
    let recorded = perf(&[
        "record", "-o", perf_file, "-e", events, "--", &tp, "getppid", "10",
    ]);
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    let theirs = perf(&["report", "-i", perf_file, "-A"]);
    assert!(text(&ours.stderr).contains("note: processing task data, aggregation mode not set"));
    assert!(
        text(&theirs.stderr).contains("warning: processing task data, aggregation mode not set")
    );
    for event in [" task-clock ", " page-faults "] {
        let (a, b) = (lines_with(&ours, event), lines_with(&theirs, event));
        assert_eq!((a.len(), b.len()), (1, 1), "{a:?} {b:?}");
        assert_eq!(a[0].find(event), b[0].find(event), "{a:?}\n{b:?}");
        assert_eq!(a[0].find(" # "), b[0].find(" # "), "{a:?}\n{b:?}");
    }
    // Exit codes: a record without -o and an unknown option are usage errors (129).
    assert_eq!(
        stat(&["record", "-e", "cs", "--", "true"]).status.code(),
        Some(129)
    );
    assert_eq!(report(&["--bogus"]).status.code(), Some(129));
    let not_ours = common::Tracer::new(["stat", "report", "-i", "/etc/hostname"])
        .command()
        .output()
        .unwrap();
    assert_eq!(not_ours.status.code(), Some(1));
    assert!(
        text(&not_ours.stderr).starts_with("error: /etc/hostname is not a tracer stat recording")
    );
}
