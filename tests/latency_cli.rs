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
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for line in text(&out.stderr).lines() {
        if let Some(ns) = line
            .strip_prefix("slept ")
            .and_then(|n| n.parse::<u64>().ok())
        {
            *counts.entry(1u64 << (63 - ns.leading_zeros())).or_default() += 1;
        }
    }
    assert_eq!(counts.values().sum::<u64>(), 35, "the workload's 35 calls");
    counts.into_iter().collect()
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
        "-o",
        "json",
        "--",
        &prog,
        "sleeps",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(buckets(&out), measured(&out));
    let slow: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"outlier\":true"))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(slow.len(), 5, "exactly the five 70 ms calls");
    for call in &slow {
        assert_eq!(call["args"][0], "0x11170", "the argument: 70000 us");
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
    let prog = common::testprog().display().to_string();
    let out = tracer(&[
        "latency",
        "--from",
        "syscalls:sys_enter_clock_nanosleep",
        "--to",
        "syscalls:sys_exit_clock_nanosleep",
        "-o",
        "json",
        "--",
        &prog,
        "sleeps",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(buckets(&out), measured(&out));
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
    assert!(summary.starts_with("count 35, avg "), "{stdout}");
    assert!(
        summary.contains("(estimated: bucket upper bounds), max "),
        "{stdout}"
    );
}

#[test]
fn bad_latency_requests_are_usage_errors() {
    for args in [
        vec!["latency"],
        vec!["latency", "syscalls:sys_enter_read"],
        vec!["latency", "vfs_read", "--slower-than", "10"],
        vec!["latency", "--from", "syscalls:sys_enter_read"],
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
        "latency", &target, "-I", "0.2", "-o", "json", "--", &prog, "sleeps", "1",
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
    let times: Vec<f64> = rows.iter().map(|r| r["time_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
}
