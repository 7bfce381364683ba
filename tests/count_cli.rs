//! Tier 4: in-kernel aggregation through the real binary (`--count-by`, `--sum`, `--hist`,
//! `--top`, `-I`), checked against workloads whose counts and values are known exactly.

mod common;

use common::{has, testprog, text, tracer, Tracer};
use tracer::kernel::features::Feature;

/// Runs `tracer ARGS` to a successful end and returns its JSON reports.
fn counted(args: &[&str]) -> Vec<serde_json::Value> {
    let out = tracer(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The one report of `tracer probe --count-by comm syscalls:sys_enter_getppid -- sh -c SCRIPT`,
/// and the hits the kernel skipped tracer's program for (`N missed` in the summary: on kernels
/// that run syscall tracepoint programs preemptibly, Debian's 7.3, a task preempted inside the
/// program makes the kernel skip it for the other tasks on that CPU).
fn getppid_by_comm(script: &str) -> (serde_json::Value, u64) {
    let out = tracer(&[
        "probe",
        "--count-by",
        "comm",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut reports: Vec<serde_json::Value> = (text(&out.stdout).lines())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let missed = (stderr.split(" not counted, up to ").nth(1))
        .and_then(|rest| rest.split(" missed").next()?.parse().ok())
        .unwrap_or_else(|| panic!("no missed count in {stderr}"));
    if missed > 0 {
        assert!(
            stderr.contains(&format!("up to {missed} hits missed: ")),
            "{stderr}"
        );
    }
    (reports.remove(0), missed)
}

/// Each comm counted `want` times, or, when the kernel skipped tracer's program `missed` times,
/// each at most that, and the misses at least the calls not counted (at most: the program the
/// kernel skipped also serves the other system calls, whose skips are in `missed` too).
fn assert_counts(report: &serde_json::Value, missed: u64, want: &[(&str, u64)]) {
    let counts: Vec<u64> = want
        .iter()
        .map(|(comm, _)| count_of(report, comm).unwrap_or(0))
        .collect();
    let expected: Vec<u64> = want.iter().map(|(_, n)| *n).collect();
    if missed == 0 {
        assert_eq!(counts, expected, "{report}");
    } else {
        assert!(
            counts.iter().zip(&expected).all(|(c, e)| c <= e),
            "{report}"
        );
        let made: u64 = expected.iter().sum();
        assert!(
            counts.iter().sum::<u64>() + missed >= made,
            "{missed} missed: {report}"
        );
    }
}

/// The count of `comm`'s row in a `--count-by comm` report.
fn count_of(report: &serde_json::Value, comm: &str) -> Option<u64> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["comm"] == comm)
        .map(|r| r["count"].as_u64().unwrap())
}

/// `testprog` under another name: the kernel names a task after the file it executed.
fn renamed(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::os::unix::fs::symlink(testprog(), &path).unwrap();
    (dir, path)
}

#[test]
fn counts_by_comm_equal_each_process_s_syscalls() {
    if !has(Feature::Tracepoints, "count_by_comm") || !has(Feature::Bpf, "count_by_comm") {
        return;
    }
    let (_a_dir, a) = renamed("tracer-cnt-a");
    let (_b_dir, b) = renamed("tracer-cnt-b");
    // a renames itself to tracer-cnt-c after 100 calls (pinned: its later hits find its old
    // name cached on that CPU unless the rename invalidated it).
    let script = format!(
        "{} --cpu 0 --rename-at 100 tracer-cnt-c getppid 300 && {} getppid 700",
        a.display(),
        b.display()
    );
    let (report, missed) = getppid_by_comm(&script);
    // The shell (dash) calls getppid once, at its start.
    let want = [
        ("tracer-cnt-a", 100),
        ("tracer-cnt-c", 200),
        ("tracer-cnt-b", 700),
        ("sh", 1),
    ];
    assert_counts(&report, missed, &want);
    // Rows are sorted by count, largest first.
    assert_eq!(report["rows"][0]["comm"], "tracer-cnt-b");
}

#[test]
fn processes_taking_turns_on_one_cpu_are_each_counted_exactly() {
    if !has(Feature::Tracepoints, "count_turns") || !has(Feature::Bpf, "count_turns") {
        return;
    }
    // Both on CPU 0 at once: the scheduler switches between them many times, and every
    // switch ends the CPU's run of one process's hits and begins the other's.
    let (_a_dir, a) = renamed("tracer-turn-a");
    let (_b_dir, b) = renamed("tracer-turn-b");
    let script = format!(
        "{} --cpu 0 getppid 200000 & {} --cpu 0 getppid 300000; wait",
        a.display(),
        b.display()
    );
    let (report, missed) = getppid_by_comm(&script);
    assert_counts(
        &report,
        missed,
        &[
            ("tracer-turn-a", 200_000),
            ("tracer-turn-b", 300_000),
            ("sh", 1),
        ],
    );
}

/// The raw tracepoints (`tp_name`) of the BPF links process `pid` holds.
fn raw_tracepoint_links(pid: u32) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).unwrap() {
        let info = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
        if info.contains("link_type:\traw_tracepoint") {
            if let Some(name) = info.lines().find_map(|l| l.strip_prefix("tp_name:\t")) {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn syscall_counts_go_through_raw_tracepoints_and_stay_exact() {
    if !has(Feature::RawTracepoints, "count_raw") || !has(Feature::Bpf, "count_raw") {
        return;
    }
    use std::io::Read;
    let (_dir, prog) = renamed("tracer-cnt-raw");
    let (_zero_dir, zero) = renamed("tracer-cnt-zero");
    // The sleep keeps tracer running while its links are read. The same binary opening nothing
    // gives the opens its loader makes, so the 250 opens are counted exactly by difference.
    let script = format!(
        "sleep 1; {} getppid 400; {} open 250 /nonexistent; {} open 0 /nonexistent",
        prog.display(),
        prog.display(),
        zero.display()
    );
    let (mut child, mut stderr, banner) = common::tracer_started(&[
        "probe",
        "--count-by",
        "comm,probe",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "syscalls:sys_exit_getppid",
        "syscalls:sys_enter_openat",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    // Counting by task only: no trace record is needed (not even openat's filename string),
    // so each syscall tracepoint is a raw tracepoint program filtering by syscall number.
    let links = raw_tracepoint_links(child.id());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(0), "{banner}{rest}");
    // Beside them, the comm cache's program and the -- COMMAND tracking programs, raw too.
    assert_eq!(
        links,
        [
            "sched_process_exec",
            "sched_process_exit",
            "sched_process_fork",
            "sys_enter",
            "sys_enter",
            "sys_exit",
            "task_rename"
        ]
    );
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let mut rows: Vec<(String, u64)> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["comm"] == "tracer-cnt-raw")
        .map(|r| {
            (
                r["probe"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    let loader_opens = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["comm"] == "tracer-cnt-zero" && r["probe"] == "syscalls:sys_enter_openat")
        .map_or(0, |r| r["count"].as_u64().unwrap());
    assert_eq!(
        rows,
        [
            ("syscalls:sys_enter_getppid".to_string(), 400),
            // Two runs of the binary: each makes the loader's opens.
            (
                "syscalls:sys_enter_openat".to_string(),
                250 + 2 * loader_opens
            ),
            ("syscalls:sys_exit_getppid".to_string(), 400),
        ],
        "{report}"
    );
}

#[test]
fn a_histogram_of_return_values_has_the_known_buckets() {
    if !has(Feature::UprobePmu, "hist_ret") || !has(Feature::Bpf, "hist_ret") {
        return;
    }
    let prog = testprog();
    let spec = format!("uretprobe:{}:tracer_testprog_target", prog.display());
    // `call 20` calls target(i, 2i) for i in 0..20, which returns 3i: 0, 3, 6, ..., 57.
    let reports = counted(&[
        "probe",
        "--hist",
        "ret",
        "-f",
        "json",
        &spec,
        "--",
        prog.to_str().unwrap(),
        "call",
        "20",
    ]);
    let row = &reports[0]["rows"][0];
    let buckets: Vec<(u64, u64, u64)> = row["hist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["lo"].as_u64().unwrap(),
                b["hi"].as_u64().unwrap(),
                b["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(u64, u64, u64)> = {
        let mut counts = std::collections::BTreeMap::new();
        for v in (0..20u64).map(|i| 3 * i) {
            // 0 alone, then 2^(b-1) .. 2^b - 1.
            let b = 64 - v.leading_zeros();
            *counts.entry(b).or_insert(0u64) += 1;
        }
        counts
            .into_iter()
            .map(|(b, n)| match b {
                0 => (0, 0, n),
                b => (1 << (b - 1), (1 << b) - 1, n),
            })
            .collect()
    };
    assert_eq!(buckets, expected);
    assert_eq!(row["count"], 20);
    assert_eq!(row["sum"], 3 * (0..20).sum::<u64>());
    assert_eq!(row["negative"], 0);
}

/// The `(lo, hi, count)` rows of a report's first histogram.
fn hist_rows(report: &serde_json::Value) -> Vec<(i64, i64, u64)> {
    (report["rows"][0]["hist"].as_array().unwrap().iter())
        .map(|b| {
            (
                b["lo"].as_i64().unwrap(),
                b["hi"].as_i64().unwrap(),
                b["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `call 5` passes arg0 = 0, 1, 2, 3, 4: log2 buckets keep 0 and 1 apart.
#[test]
fn log2_histograms_keep_0_and_1_apart() {
    if !has(Feature::UprobePmu, "hist_zero_one") || !has(Feature::Bpf, "hist_zero_one") {
        return;
    }
    let prog = testprog();
    let spec = format!("uprobe:{}:tracer_testprog_target", prog.display());
    let run = ["--", prog.to_str().unwrap(), "call", "5"];
    let reports = counted(&[&["probe", "--hist", "arg0", "-f", "json", &spec][..], &run].concat());
    assert_eq!(
        hist_rows(&reports[0]),
        [(0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 1)]
    );
    let out = tracer(&[&["probe", "--hist", "arg0", &spec][..], &run].concat());
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(1).take(4).collect();
    assert_eq!(
        rows,
        [
            "                           0  :        1  |********************                    |",
            "                           1  :        1  |********************                    |",
            "                      2 -> 3  :        2  |****************************************|",
            "                      4 -> 7  :        1  |********************                    |",
        ],
        "{stdout}"
    );
}

/// `--linear 10,0,50` on arg0 = 0..99 (`call 100`): five rows of exactly 10, and the 50
/// values from 50 on in the overflow row; the same in text, with the row that says so.
#[test]
fn linear_histograms_count_exactly_with_an_overflow_row() {
    if !has(Feature::UprobePmu, "hist_linear") || !has(Feature::Bpf, "hist_linear") {
        return;
    }
    let prog = testprog();
    let spec = format!("uprobe:{}:tracer_testprog_target", prog.display());
    let run = ["--", prog.to_str().unwrap(), "call", "100"];
    let hist = ["probe", "--hist", "arg0", "--linear", "10,0,50"];
    let reports = counted(&[&hist[..], &["-f", "json", &spec], &run].concat());
    let row = &reports[0]["rows"][0];
    assert_eq!(
        hist_rows(&reports[0]),
        [
            (0, 9, 10),
            (10, 19, 10),
            (20, 29, 10),
            (30, 39, 10),
            (40, 49, 10)
        ]
    );
    assert_eq!(
        (row["above"].as_u64(), row["below"].as_u64()),
        (Some(50), Some(0))
    );
    assert_eq!(
        (row["count"].as_u64(), row["sum"].as_u64()),
        (Some(100), Some(4950))
    );
    let out = tracer(&[&hist[..], &[spec.as_str()], &run].concat());
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[5..7],
        [
            "                    40 -> 49  :       10  |********                                |",
            "                       >= 50  :       50  |****************************************|",
        ],
        "{stdout}"
    );
    // Values below MIN go to their own row: `--linear 10,20,50` puts 0..19 there.
    let reports = counted(
        &[
            &[
                "probe", "--hist", "arg0", "--linear", "10,20,50", "-f", "json", &spec,
            ][..],
            &run,
        ]
        .concat(),
    );
    let row = &reports[0]["rows"][0];
    assert_eq!(
        hist_rows(&reports[0]),
        [(20, 29, 10), (30, 39, 10), (40, 49, 10)]
    );
    assert_eq!(
        (row["below"].as_u64(), row["above"].as_u64()),
        (Some(20), Some(50))
    );
}

/// `count` of read(2) is a size: rows read `64K -> 128K`. dd reads its five 64 KiB blocks
/// with count 65536 (the dynamic loader's and stdio's own reads are smaller).
#[test]
fn byte_sized_values_get_human_rows() {
    if !has(Feature::Tracepoints, "hist_bytes") || !has(Feature::Bpf, "hist_bytes") {
        return;
    }
    let dd = [
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=64K",
        "count=5",
        "status=none",
    ];
    let hist = [
        "probe",
        "--hist",
        "count",
        "--comm",
        "dd",
        "syscalls:sys_enter_read",
    ];
    let out = tracer(&[&hist[..], &dd].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("               count (bytes)       count  distribution\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n                 64K -> 128K  :        5  |"),
        "{stdout}"
    );
    let reports = counted(&[&hist[..], &["-f", "json"], &dd].concat());
    assert!(
        hist_rows(&reports[0]).contains(&(65536, 131071, 5)),
        "{reports:?}"
    );
}

#[test]
fn sums_and_keys_of_arguments_are_exact() {
    if !has(Feature::UprobePmu, "sum_args") || !has(Feature::Bpf, "sum_args") {
        return;
    }
    let prog = testprog();
    let spec = format!("uprobe:{}:tracer_testprog_target", prog.display());
    // target(i, 2i): keyed by arg0 there are 12 rows of one call each; the sum of arg1 is 2i.
    let reports = counted(&[
        "probe",
        "--count-by",
        "arg0",
        "--sum",
        "arg1",
        "--top",
        "5",
        "-f",
        "json",
        &spec,
        "--",
        prog.to_str().unwrap(),
        "call",
        "12",
    ]);
    let rows = reports[0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "--top 5");
    assert_eq!(reports[0]["hidden"], 7);
    // Equal counts are ordered by key text: "0", "1", "10", "11", "2".
    let keys: Vec<i64> = rows.iter().map(|r| r["arg0"].as_i64().unwrap()).collect();
    assert_eq!(keys, [0, 1, 10, 11, 2]);
    for row in rows {
        let i: i64 = row["arg0"].as_i64().unwrap();
        assert_eq!(
            (row["count"].as_u64(), row["sum"].as_i64()),
            (Some(1), Some(2 * i))
        );
    }
}

#[test]
fn interval_reports_add_up_to_every_hit() {
    if !has(Feature::Tracepoints, "count_interval") || !has(Feature::Bpf, "count_interval") {
        return;
    }
    // spin: getppid in a loop for 700 ms, then the number of calls on stdout.
    let out = tracer(&[
        "probe",
        "--count-by",
        "comm",
        "-I",
        "200ms",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        testprog().to_str().unwrap(),
        "spin",
        "700",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The workload's own count is the one non-JSON line.
    let (calls, json): (Vec<&str>, Vec<&str>) = stdout.lines().partition(|l| !l.starts_with('{'));
    let calls: u64 = calls[0].trim().parse().unwrap();
    let reports: Vec<serde_json::Value> = json
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(reports.len() >= 3, "{stdout}");
    let counted: u64 = reports
        .iter()
        .flat_map(|r| r["rows"].as_array().unwrap().iter())
        .filter(|r| r["comm"] == "tracer-testprog")
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, calls);
}

/// More distinct keys than the count map holds (10,240): the hits that found no room are
/// counted as uncounted, report by report, and every hit is either in a row or uncounted.
#[test]
fn hits_the_full_count_map_cannot_hold_are_reported_per_interval() {
    if !has(Feature::UprobePmu, "count_map_full") {
        return;
    }
    let prog = testprog();
    let spec = format!("uprobe:{}:tracer_testprog_target", prog.display());
    let out = tracer(&[
        "probe",
        "--count-by",
        "arg0",
        &spec,
        "-I",
        "100",
        "-f",
        "json",
        "--",
        &prog.display().to_string(),
        "call",
        "12000",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reports: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let counted: u64 = (reports.iter())
        .flat_map(|r| r["rows"].as_array().unwrap())
        .map(|row| row["count"].as_u64().unwrap())
        .sum();
    let uncounted: u64 = reports
        .iter()
        .map(|r| r["uncounted"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 10_240, "{stderr}");
    assert_eq!(uncounted, 12_000 - 10_240, "{stderr}");
    assert!(stderr.contains("; 1760 not counted"), "{stderr}");
    assert!(stderr.contains("it does not empty the map"), "{stderr}");
}

/// `-I` forgets processes that have exited once their counts are printed: 12 processes one
/// after the other, each counting 1,000 keys, make 12,000 keys in the run, more than the
/// count map holds (10,240), and every hit is counted, each process's exactly, its stack
/// still shown. Without the eviction, 1,760 went uncounted.
#[test]
fn exited_processes_make_room_in_the_count_map_at_each_interval() {
    if !has(Feature::UprobePmu, "count_map_evicted") {
        return;
    }
    let prog = testprog().display().to_string();
    let spec = format!("uprobe:{prog}:tracer_testprog_target");
    // Each process runs for a few ms; the pauses span several intervals, so that at most a
    // few processes' keys are in the map at once.
    let script = format!(
        "i=0; while [ $i -lt 12 ]; do {prog} call 1000 >/dev/null; sleep 0.3; i=$((i+1)); done"
    );
    let out = tracer(&[
        "probe",
        "--count-by",
        "pid,arg0",
        "-s",
        "user",
        "-I",
        "100ms",
        "-f",
        "json",
        &spec,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reports: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut by_pid = std::collections::BTreeMap::<String, u64>::new();
    for row in reports.iter().flat_map(|r| r["rows"].as_array().unwrap()) {
        *by_pid
            .entry(row["pid"].as_u64().unwrap().to_string())
            .or_default() += row["count"].as_u64().unwrap();
        let stack = row["stack"].as_array().unwrap();
        assert!(
            !stack.is_empty() && stack.iter().all(|f| f.get("error").is_none()),
            "{row}"
        );
    }
    let uncounted: u64 = reports
        .iter()
        .map(|r| r["uncounted"].as_u64().unwrap())
        .sum();
    assert_eq!(uncounted, 0, "{stderr}");
    assert_eq!(by_pid.len(), 12, "{by_pid:?}");
    assert!(by_pid.values().all(|&n| n == 1000), "{by_pid:?}");
    assert!(
        stderr.contains("12000 hits counted in the kernel"),
        "{stderr}"
    );
    assert!(stderr.contains("; 0 not counted"), "{stderr}");
    assert!(!stderr.contains("stacks lost"), "{stderr}");
}

#[test]
fn bad_aggregations_are_usage_errors_that_say_what_exists() {
    let prog = testprog();
    let uprobe = format!("uprobe:{}:tracer_testprog_target", prog.display());
    let cases: [(&[&str], &str); 9] = [
        (
            &["--hist", "filename", "syscalls:sys_enter_openat"],
            "--hist filename: 'filename' of syscalls:sys_enter_openat is a string (const char *), not a number",
        ),
        (
            &["--sum", "how", "syscalls:sys_enter_openat2"],
            "--sum how: 'how' of syscalls:sys_enter_openat2 is a pointer (struct open_how *), not a number",
        ),
        (
            &["--count-by", "common_pid", "syscalls:sys_enter_getppid"],
            "'common_pid' of syscalls:sys_enter_getppid cannot be read: syscall tracepoints hand BPF programs a registers pointer in place of the common fields",
        ),
        (
            &["--linear", "10", "--count-by", "comm", "syscalls:sys_enter_getppid"],
            "--linear shapes a --hist histogram",
        ),
        (
            &["--hist", "count", "--linear", "5,-10,10", "syscalls:sys_enter_read"],
            "--linear starts at -10, but 'count' of syscalls:sys_enter_read is unsigned",
        ),
        (
            &["--count-by", "comm,bogus-key", "syscalls:sys_enter_getppid"],
            "'bogus-key' is not a --count-by key",
        ),
        (
            &["--sum", "ret", &uprobe],
            "the probe is not a return probe",
        ),
        (
            &["--count-by", "nosuchfield", "syscalls:sys_enter_openat"],
            "has no field 'nosuchfield'",
        ),
        (
            &[
                "--count-by",
                "comm",
                "-c",
                "5",
                "syscalls:sys_enter_getppid",
            ],
            "-c counts printed events",
        ),
    ];
    for (args, message) in cases {
        let mut full = vec!["probe"];
        full.extend_from_slice(args);
        let out = tracer(&full);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(stderr.contains("hint:"), "{args:?}: {stderr}");
    }
    let out = tracer(&[
        "probe",
        "--count-by",
        "nosuchfield",
        "syscalls:sys_enter_openat",
    ]);
    assert!(
        text(&out.stderr).contains("its fields: dfd, filename, flags, mode"),
        "{}",
        text(&out.stderr)
    );
}

/// `--count-by container,pod`: six cgroups laid out as Docker (both drivers), containerd and
/// CRI-O under Kubernetes (both drivers) and Podman name theirs, a shell moved into each
/// before it runs a known number of getppid calls: each row is one container, with its pod
/// where it has one, and exactly its calls. `--container PREFIX` then counts one of them only.
#[test]
fn counts_by_container_and_pod_in_every_runtime_layout() {
    common::require_root();
    let Some((root, mounted)) = common::cgroup2_root() else {
        return;
    };
    let id = |n: u8| format!("{:02x}{}", n, "c0ffee".repeat(10) + "00");
    let (uid1, uid2, uid3) = (
        "0d9c1e6a-3b2f-4c5d-8e7f-112233445566",
        "7e2b9f10-aaaa-4bbb-8ccc-0123456789ab",
        "c4d5e6f7-1111-4222-9333-444455556666",
    );
    let base = format!("tracer-test-{}", std::process::id());
    let layouts: Vec<(String, String, &str, u64)> = vec![
        (format!("system.slice/docker-{}.scope", id(1)), id(1), "", 11),
        (format!("docker/{}", id(2)), id(2), "", 12),
        (
            format!(
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{}.scope",
                uid1.replace('-', "_"),
                id(3)
            ),
            id(3),
            uid1,
            13,
        ),
        (format!("kubepods/besteffort/pod{uid2}/{}", id(4)), id(4), uid2, 14),
        (
            format!("kubepods.slice/kubepods-pod{}.slice/crio-{}.scope", uid3.replace('-', "_"), id(5)),
            id(5),
            uid3,
            15,
        ),
        (format!("machine.slice/libpod-{}.scope", id(6)), id(6), "", 16),
    ];
    let mut cgroups = common::Cgroups {
        dirs: Vec::new(),
        mounted,
    };
    for (path, _, _, _) in &layouts {
        let mut dir = root.clone();
        for part in std::iter::once(base.as_str()).chain(path.split('/')) {
            dir = dir.join(part);
            if !dir.exists() {
                std::fs::create_dir(&dir).unwrap();
                cgroups.dirs.push(dir.clone());
            }
        }
    }
    // Each `sh -c` moves itself into its cgroup, then becomes the workload.
    let mut moves = String::new();
    for (path, _, _, calls) in &layouts {
        let dir = root.join(&base).join(path);
        moves.push_str(&format!(
            "sh -c 'echo $$ > {}/cgroup.procs && exec {} getppid {calls}'; ",
            dir.display(),
            testprog().display()
        ));
    }
    let reports = counted(&[
        "probe",
        "--count-by",
        "container,pod",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        &moves,
    ]);
    let rows = reports[0]["rows"].as_array().unwrap();
    for (path, container, pod, calls) in &layouts {
        let row = (rows.iter())
            .find(|r| r["container"] == container.as_str())
            .unwrap_or_else(|| panic!("{path}: no row in {rows:?}"));
        assert_eq!(row["pod"], *pod, "{path}: {row}");
        assert_eq!(row["count"], *calls, "{path}: {row}");
    }
    // The rest are the shells' own calls (dash asks getppid for $PPID), before they moved.
    let others: Vec<_> = (rows.iter())
        .filter(|r| {
            !layouts
                .iter()
                .any(|(_, c, _, _)| r["container"] == c.as_str())
        })
        .collect();
    assert!(
        others
            .iter()
            .all(|r| r["container"] == "" && r["pod"] == ""),
        "{rows:?}"
    );
    // A target: the Podman container by the first 12 digits of its id.
    let podman = root.join(&base).join(&layouts[5].0);
    let docker = root.join(&base).join(&layouts[0].0);
    let both = format!(
        "sh -c 'echo $$ > {}/cgroup.procs && exec {} getppid 7'; sh -c 'echo $$ > {}/cgroup.procs && exec {} getppid 5'",
        podman.display(),
        testprog().display(),
        docker.display(),
        testprog().display()
    );
    let reports = counted(&[
        "probe",
        "--container",
        &id(6)[..12],
        "--count-by",
        "container",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        &both,
    ]);
    let rows = reports[0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["container"], id(6).as_str());
    assert_eq!(rows[0]["count"], 7);
}

/// A field that cannot be counted in the kernel (an array of bytes here; a `__data_loc`
/// string or a `char[N]` is counted by its content) is refused with the fields that can be,
/// and only those: the hint used to list the field itself.
#[test]
fn an_uncountable_field_is_refused_with_the_countable_ones() {
    if !has(Feature::Tracepoints, "count_uncountable") {
        return;
    }
    let out = tracer(&[
        "probe",
        "--count-by",
        "saddr_v6",
        "sock:inet_sock_set_state",
        "-d",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: field 'saddr_v6' of sock:inet_sock_set_state (__u8[16], at byte 40) cannot be counted\n\
         hint: count by an integer field within the first 64 bytes of the record: skaddr, oldstate, newstate, sport, dport, family, protocol\n"
    );
}

/// A program replaced at its path during a system-wide `tracer probe` (a deploy: a new file
/// renamed over the old) is probed in its new file once the run notes it (one note for the
/// file's two probes), and a process of the old file is still counted: 3 calls before, 5 in
/// the new file, 4 in the old one, each hit at the entry and the return.
#[test]
fn a_replaced_binary_is_followed_by_a_long_run() {
    if !has(Feature::UprobePmu, "replaced_binary") || !has(Feature::Bpf, "replaced_binary") {
        return;
    }
    let deploy = common::Deploy::new();
    let spec = format!("uprobe:{}:tracer_testprog_target", deploy.app.display());
    let ret = format!("uretprobe:{}:tracer_testprog_target", deploy.app.display());
    let args = ["probe", "--count-by", "comm", "-f", "json", &spec, &ret];
    let (child, mut stderr, _) = common::tracer_started(&args);
    let notes = deploy.replace_during(&mut stderr, 1);
    assert!(
        notes[0].starts_with(&format!(
            "note: 2 probes: {} was replaced (inode ",
            deploy.app.display()
        )),
        "{notes:?}"
    );
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let reports = common::json_lines(&out.stdout);
    assert_eq!(
        count_of(&reports[0], "followed-app"),
        Some(24),
        "{reports:?}"
    );
}

/// A `__data_loc` string of a tracepoint (sched_process_exec's `filename`) is counted by its
/// content, and filtered on: the shell's own exec (the launched command's: its tracking
/// program runs before the probe's), then the two `/bin/true` it runs (its last command
/// execed in place or in a child, either way one exec each); and the shell's exec again while
/// another run probes the tracepoint.
#[test]
fn a_data_loc_string_is_counted_and_filtered_by_its_content() {
    if !has(Feature::Tracepoints, "data_loc_count") {
        return;
    }
    let run = |filter: &str| {
        let reports = counted(&[
            "probe",
            "--count-by",
            "filename",
            "--filter",
            filter,
            "-f",
            "json",
            "sched:sched_process_exec",
            "--",
            "/bin/sh",
            "-c",
            "/bin/true; /bin/true",
        ]);
        let mut rows: Vec<(String, u64)> = (reports[0]["rows"].as_array().unwrap().iter())
            .map(|r| {
                let name = r["filename"].as_str().unwrap().to_string();
                (name, r["count"].as_u64().unwrap())
            })
            .collect();
        rows.sort();
        rows
    };
    let row = |name: &str, n| (name.to_string(), n);
    assert_eq!(run("pid > 0"), [row("/bin/sh", 1), row("/bin/true", 2)]);
    assert_eq!(run("filename ~ \"*/sh\""), [row("/bin/sh", 1)]);
    assert_eq!(
        run("filename ~ \"/bin/t*\" && comm == true"),
        [row("/bin/true", 2)]
    );
    // Beside another run's perf event on the tracepoint, the kernel's perf callback for it is
    // registered before this run's tracking program and runs first: the shell's exec is still
    // the command's (SLOT_AT_EXEC), not missed.
    let (mut other, _, _) =
        Tracer::new(["probe", "sched:sched_process_exec", "--", "sleep", "30"]).started();
    let beside = run("filename ~ \"*/sh\"");
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(beside, [row("/bin/sh", 1)]);
}

/// A `char[N]` field of a tracepoint (task_rename's `newcomm`) is counted by its content: the
/// workload renames itself once, to `renamed`.
#[test]
fn a_char_array_field_is_counted_by_its_content() {
    if !has(Feature::Tracepoints, "char_array_count") {
        return;
    }
    let prog = testprog().display().to_string();
    let reports = counted(&[
        "probe",
        "--count-by",
        "newcomm",
        "-f",
        "json",
        "task:task_rename",
        "--",
        &prog,
        "--rename-at",
        "3",
        "renamed",
        "getppid",
        "10",
    ]);
    assert_eq!(
        reports[0]["rows"],
        serde_json::json!([{"newcomm": "renamed", "count": 1}]),
        "{}",
        reports[0]
    );
}
