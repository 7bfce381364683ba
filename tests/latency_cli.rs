//! Tier 4: `tracer latency` on a workload with known calls: exact bucket counts.
//!
//! The workload (`tracer-testprog sleeps 1`) calls `tracer_testprog_sleep(us)` for 4.5 ms x 20,
//! 17.5 ms x 10 and 70 ms x 5 (each just above a power of two, in the middle of its log2
//! bucket) and prints each call's duration as it measured it (`slept NS`, on stderr). The
//! expected histogram is computed from those measurements, so the comparison is exact whatever
//! the scheduler added; the timing tests also take a lock so they do not share the two CPUs.

mod common;

use common::{text, tracer};

use std::collections::BTreeMap;
use std::process::Output;

use common::has;
use tracer::kernel::features::Feature;

static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

/// (lo_ns, count) of every non-empty bucket of the one histogram printed as JSON.
fn buckets(out: &Output) -> Vec<(u64, u64)> {
    let line = text(&out.stdout)
        .lines()
        .find(|l| l.contains("\"buckets\""))
        .map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("no histogram: {}", text(&out.stderr)));
    let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
    doc["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["lo_ns"].as_u64().unwrap(), b["count"].as_u64().unwrap()))
        .collect()
}

/// The log2 histogram of the durations the workload measured.
fn measured(out: &Output) -> Vec<(u64, u64)> {
    measured_as(out, "slept ", 35)
}

/// The log2 histogram of the `PREFIX NS` durations a workload printed (`calls` of them).
fn measured_as(out: &Output, prefix: &str, calls: u64) -> Vec<(u64, u64)> {
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for line in text(&out.stderr).lines() {
        if let Some(ns) = line
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<u64>().ok())
        {
            *counts.entry(1u64 << (63 - ns.leading_zeros())).or_default() += 1;
        }
    }
    assert_eq!(counts.values().sum::<u64>(), calls, "the workload's calls");
    counts.into_iter().collect()
}

/// The outliers (`--slower-than`) among the JSON lines.
fn outliers(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"outlier\":true"))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `tracer latency ARGS -f json -- tracer-testprog sleeps 1`: its histogram has exactly the
/// buckets of the durations the workload measured.
fn matches_the_sleeps(args: &[&str]) {
    let prog = common::testprog().display().to_string();
    let mut full = vec!["latency"];
    full.extend(args);
    full.extend(["-f", "json", "--", &prog, "sleeps", "1"]);
    let out = tracer(&full);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(buckets(&out), measured(&out));
}

/// The line of `tests/workloads/latency.c` that contains `needle` (1-based).
fn latency_line(needle: &str) -> u64 {
    let source = std::fs::read_to_string(common::latency_source_path()).unwrap();
    source
        .lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("'{needle}' not in latency.c"))
}

#[test]
fn a_uprobe_pair_gives_exact_buckets_and_lists_exactly_the_slow_calls() {
    if !has(Feature::UprobePmu, "latency_uprobe") || !has(Feature::Bpf, "latency_uprobe") {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let target = format!("uprobe:{prog}:tracer_testprog_sleep");
    let out = tracer(&[
        "latency",
        &target,
        "--slower-than",
        "60ms",
        "-f",
        "json",
        "--",
        &prog,
        "sleeps",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(buckets(&out), measured(&out));
    let slow = outliers(&out);
    assert_eq!(slow.len(), 5, "exactly the five 70 ms calls");
    for call in &slow {
        // Named and typed from the function's DWARF, as `tracer probe` shows them.
        assert_eq!(call["args"], serde_json::json!({"us": 70000}), "{call}");
        assert_eq!(call["ret"], 70000);
        assert!(call["duration_ns"].as_u64().unwrap() >= 70_000_000);
    }
    assert!(
        text(&out.stderr).contains("35 calls measured"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_tracepoint_pair_gives_exact_buckets() {
    if !has(Feature::Tracepoints, "latency_tracepoints")
        || !has(Feature::Bpf, "latency_tracepoints")
    {
        return;
    }
    let _timing = timing();
    matches_the_sleeps(&[
        "--from",
        "syscalls:sys_enter_clock_nanosleep",
        "--to",
        "syscalls:sys_exit_clock_nanosleep",
    ]);
}

#[test]
fn the_text_histogram_reads_like_bcc() {
    if !has(Feature::UprobePmu, "latency_text") || !has(Feature::Bpf, "latency_text") {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let target = format!("uprobe:{prog}:tracer_testprog_sleep");
    let out = tracer(&["latency", &target, "--", &prog, "sleeps", "1"]);
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "                duration      count  distribution"
    );
    // The layout of the first and last rows; counts are checked exactly by the JSON tests.
    assert!(
        lines[1].starts_with("    4.19ms -> 8.39ms     : "),
        "{stdout}"
    );
    assert!(
        lines[1].ends_with("|****************************************|"),
        "the largest bucket fills the bar: {stdout}"
    );
    let summary = lines.last().unwrap();
    assert!(summary.starts_with("count 35, min "), "{stdout}");
    assert!(
        summary.contains("(estimated: bucket upper bounds), max "),
        "{stdout}"
    );
}

/// The durations (ns) the workload measured, as it printed them (`slept NS`).
fn slept(out: &Output) -> Vec<u64> {
    let mut ns: Vec<u64> = (text(&out.stderr).lines())
        .filter_map(|l| l.strip_prefix("slept ")?.parse().ok())
        .collect();
    ns.sort_unstable();
    ns
}

/// `--linear 1ms`: the 70 ms calls go to the overflow row (from 63 ms to the exact maximum),
/// not into a "63 ms -> 64 ms" row; min and max are exact and no percentile leaves them.
#[test]
fn linear_buckets_end_in_an_overflow_row_and_percentiles_stay_within_min_and_max() {
    if !has(Feature::UprobePmu, "latency_linear") || !has(Feature::Bpf, "latency_linear") {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let target = format!("uprobe:{prog}:tracer_testprog_sleep");
    let out = tracer(&[
        "latency", &target, "--linear", "1ms", "-f", "json", "--", &prog, "sleeps", "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line = (text(&out.stdout).lines())
        .find(|l| l.contains("\"buckets\""))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no histogram: {}", text(&out.stderr)));
    let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
    let ns = slept(&out);
    assert_eq!(ns.len(), 35);
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    for d in &ns {
        *expected.entry((d / 1_000_000).min(63)).or_default() += 1;
    }
    let rows: Vec<(u64, u64, bool)> = (doc["buckets"].as_array().unwrap().iter())
        .map(|b| {
            (
                b["lo_ns"].as_u64().unwrap(),
                b["count"].as_u64().unwrap(),
                b["overflow"] == true,
            )
        })
        .collect();
    let wanted: Vec<(u64, u64, bool)> = (expected.iter())
        .map(|(&b, &n)| (b * 1_000_000, n, b == 63))
        .collect();
    assert_eq!(rows, wanted);
    assert_eq!(
        rows.last(),
        Some(&(63_000_000, 5, true)),
        "the five 70 ms calls"
    );
    let (min, max) = (
        doc["min_ns"].as_u64().unwrap(),
        doc["max_ns"].as_u64().unwrap(),
    );
    let overflow = doc["buckets"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        overflow["hi_ns"].as_u64(),
        Some(max),
        "the overflow row ends at the max"
    );
    // The kernel times entry to return, the workload around the call: within microseconds.
    assert!(min.abs_diff(ns[0]) < 100_000, "min {min}, slept {ns:?}");
    assert!(max.abs_diff(ns[34]) < 100_000, "max {max}, slept {ns:?}");
    // p99 (rank 35) is in the overflow row: the max, not 64 ms.
    assert_eq!(doc["p99_ns"].as_u64(), Some(max));
    // p50 (rank 18) is among the 4.5 ms calls: the upper bound of its 1 ms bucket.
    assert_eq!(
        doc["p50_ns"].as_u64(),
        Some((ns[17] / 1_000_000 + 1) * 1_000_000 - 1)
    );
    for p in ["p50_ns", "p90_ns", "p99_ns"] {
        let v = doc[p].as_u64().unwrap();
        assert!((min..=max).contains(&v), "{p} {v} outside [{min}, {max}]");
    }
}

#[test]
fn bad_latency_requests_are_usage_errors() {
    for args in [
        vec!["latency"],
        vec!["latency", "syscalls:sys_enter_read"],
        vec!["latency", "vfs_read", "--slower-than", "10"],
        vec!["latency", "--from", "syscalls:sys_enter_read"],
        // -s lists the stacks of outliers: without --slower-than there are none.
        vec!["latency", "uprobe:/bin/true:main", "-s"],
        // A syscall tracepoint's common fields are not in its BPF context.
        vec![
            "latency",
            "--from",
            "syscalls:sys_enter_read",
            "--to",
            "syscalls:sys_exit_read",
            "--key",
            "common_type",
        ],
    ] {
        let out = tracer(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains("hint: "), "{args:?}");
    }
}

#[test]
fn interval_histograms_add_up_to_every_call() {
    if !has(Feature::UprobePmu, "latency_interval") || !has(Feature::Bpf, "latency_interval") {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let target = format!("uprobe:{prog}:tracer_testprog_sleep");
    let out = tracer(&[
        "latency", &target, "-I", "200ms", "-f", "json", "--", &prog, "sleeps", "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"buckets\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The workload runs about 0.9 s: several intervals, each histogram reset after printing.
    assert!(rows.len() >= 3, "{rows:?}");
    assert_eq!(
        rows.iter()
            .map(|r| r["count"].as_u64().unwrap())
            .sum::<u64>(),
        35
    );
    // Each interval's min and max are its own (both reset after each report), and its
    // percentiles stay between them.
    for r in &rows {
        let (min, max) = (r["min_ns"].as_u64().unwrap(), r["max_ns"].as_u64().unwrap());
        assert!(min > 4_000_000 && min <= max, "{r}");
        for p in ["p50_ns", "p90_ns", "p99_ns"] {
            assert!((min..=max).contains(&r[p].as_u64().unwrap()), "{p}: {r}");
        }
    }
    let times: Vec<f64> = rows.iter().map(|r| r["time_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
}

#[test]
fn requests_handed_between_threads_are_matched_by_an_argument_key() {
    if !has(Feature::UprobePmu, "latency_key_arg") || !has(Feature::Bpf, "latency_key_arg") {
        return;
    }
    let _timing = timing();
    let prog = common::latency_program().display().to_string();
    let (from, to) = (
        format!("uprobe:{prog}:lat_submit"),
        format!("uprobe:{prog}:lat_complete"),
    );
    let keyed = tracer(&[
        "latency", "--from", &from, "--to", &to, "--key", "arg0", "-f", "json", "--", &prog,
    ]);
    assert_eq!(keyed.status.code(), Some(0), "{}", text(&keyed.stderr));
    assert_eq!(buckets(&keyed), measured_as(&keyed, "handed ", 6));
    assert!(
        untimed(&text(&keyed.stderr)).contains(
            "6 calls measured, command exited with status 0; 6 starts, 0 ends without a start"
        ),
        "{}",
        text(&keyed.stderr)
    );

    // By thread (the default), no end meets its start: submit and complete run on two
    // threads. Each submit replaces the one before it, whose end never came on that thread.
    let by_thread = tracer(&["latency", "--from", &from, "--to", &to, "--", &prog]);
    let stderr = text(&by_thread.stderr);
    assert_eq!(by_thread.status.code(), Some(0), "{stderr}");
    assert!(
        untimed(&stderr).contains(
            "0 calls measured, command exited with status 0; 6 starts, 6 ends without a start"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("\n5 starts had no end before the next start of the same key"),
        "{stderr}"
    );
    assert!(stderr.contains("\n1 calls had no end"), "{stderr}");
}

#[test]
fn a_key_of_two_fields_matches_only_when_both_parts_do() {
    if !has(Feature::Tracepoints, "latency_key_fields") || !has(Feature::Bpf, "latency_key_fields")
    {
        return;
    }
    let _timing = timing();
    let pair = [
        "--from",
        "syscalls:sys_enter_clock_nanosleep",
        "--to",
        "syscalls:sys_exit_clock_nanosleep",
    ];
    // Another process sleeps meanwhile: its ends have other keys and must not take the
    // workload's starts. (A syscall tracepoint's BPF context holds a registers pointer where
    // common_pid would be: read from there, every task had the same "pid", and this other
    // process's ends matched the workload's starts.)
    let mut other = std::process::Command::new("sh")
        .args(["-c", "while :; do sleep 0.003; done"])
        .spawn()
        .unwrap();
    matches_the_sleeps(&[&pair[..], &["--key", "common_pid,__syscall_nr"]].concat());
    matches_the_sleeps(&[&pair[..], &["--key", "common_pid"]].concat());
    let _ = other.kill();
    let _ = other.wait();

    // The second part differs at the end (the return value 0, not the syscall number 230):
    // nothing matches, and every end is counted as one without a start.
    let prog = common::testprog().display().to_string();
    let key = ["--key", "common_pid,__syscall_nr/common_pid,ret"];
    let run = ["--", &prog, "sleeps", "1"];
    let second_differs = tracer(&[&["latency"][..], &pair, &key, &run].concat());
    let stderr = text(&second_differs.stderr);
    assert_eq!(second_differs.status.code(), Some(0), "{stderr}");
    assert!(
        untimed(&stderr).contains(
            "0 calls measured, command exited with status 0; 35 starts, 35 ends without a start"
        ),
        "{stderr}"
    );
}

#[test]
fn a_uprobe_start_pairs_with_a_tracepoint_end() {
    if !has(Feature::UprobePmu, "latency_mixed")
        || !has(Feature::Tracepoints, "latency_mixed")
        || !has(Feature::Bpf, "latency_mixed")
    {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let from = format!("uprobe:{prog}:tracer_testprog_sleep");
    matches_the_sleeps(&["--from", &from, "--to", "syscalls:sys_exit_clock_nanosleep"]);
}

#[test]
fn outliers_carry_the_stack_of_their_call_site() {
    if !has(Feature::UprobePmu, "latency_stack") || !has(Feature::Bpf, "latency_stack") {
        return;
    }
    let _timing = timing();
    let prog = common::latency_program().display().to_string();
    let target = format!("uprobe:{prog}:lat_work");
    let out = tracer(&[
        "latency",
        &target,
        "--slower-than",
        "50ms",
        "-s",
        "-f",
        "json",
        "--",
        &prog,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let slow = outliers(&out);
    assert_eq!(slow.len(), 2, "exactly the two 70 ms calls: {slow:?}");
    // Taken at the return: the caller, then its caller, each at the line of its call.
    let expected = [
        ("lat_slow", latency_line("lat_slow(void) {")),
        ("main", latency_line("sum += lat_slow();")),
    ];
    for call in &slow {
        assert_eq!(
            call["args"],
            serde_json::json!({"us": 70000}),
            "lat_work(70000): {call}"
        );
        assert_eq!(call["ret"], 70000);
        let frames: Vec<(&str, u64)> = call["stack"]
            .as_array()
            .unwrap()
            .iter()
            .take(2)
            .map(|f| {
                (
                    f["symbol"].as_str().unwrap_or("?"),
                    f["line"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(frames, expected, "{call}");
    }
}

/// The summary with its run time (` in 0.12 s`, which varies) taken out of the headline.
fn untimed(stderr: &str) -> String {
    let Some(at) = stderr.find(" calls measured in ") else {
        return stderr.to_string();
    };
    let rest = &stderr[at + " calls measured in ".len()..];
    let after = rest.find(" s,").map_or(0, |i| i + " s".len());
    format!("{} calls measured{}", &stderr[..at], &rest[after..])
}

/// `--filter` decides in the kernel, when a call ends, on the start's named arguments and the
/// end's return value: exactly the calls it names are measured, the others counted apart.
#[test]
fn a_filter_measures_exactly_the_calls_it_names() {
    if !has(Feature::UprobePmu, "latency_filter") || !has(Feature::Bpf, "latency_filter") {
        return;
    }
    let _timing = timing();
    let prog = common::testprog().display().to_string();
    let target = format!("uprobe:{prog}:tracer_testprog_sleep");
    // 20 calls of 4.5 ms, 10 of 17.5 ms, 5 of 70 ms: by argument, by return value, both.
    for (filter, measured) in [
        ("us >= 17500", 15),
        ("ret == 4500", 20),
        (
            "us > 4500 && ret < 70000 && comm == \"tracer-testprog\"",
            10,
        ),
    ] {
        let out = tracer(&[
            "latency", &target, "--filter", filter, "-f", "json", "--", &prog, "sleeps", "1",
        ]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&format!("{measured} calls measured in "))
                && stderr.contains(&format!(
                    "35 starts, {} calls filtered out, 0 ends without a start",
                    35 - measured
                )),
            "{filter}: {stderr}"
        );
        let counted: u64 = buckets(&out).iter().map(|(_, n)| n).sum();
        assert_eq!(counted, measured, "{filter}");
    }
    // What latency cannot see is refused before anything is attached.
    for (filter, says) in [
        ("name ~ \"x*\"", "has no parameter 'name'"),
        ("us->x == 1", "is a struct member: latency reads none"),
    ] {
        let out = tracer(&[
            "latency", &target, "--filter", filter, "--", &prog, "sleeps", "1",
        ]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{filter}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{filter}: {}",
            text(&out.stderr)
        );
    }
    let pair = ["--from", &target, "--to", &target];
    let out = tracer(
        &[
            &["latency"][..],
            &pair,
            &["--filter", "ret == 1", "--", &prog, "sleeps", "1"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is not a return probe"),
        "{}",
        text(&out.stderr)
    );
}
