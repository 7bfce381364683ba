//! `cargo xtask bench soak`: tracer left running on four loads at once, sampled every 10 s
//! (a benchmark, not a test: it takes `TRACER_SOAK_SECS`, 600 by default; #47 asks for 1,800).
//!
//! - streaming: `tracer probe -f json` on getppid at a moderate rate (a loop of 1,000 calls
//!   then 100 ms of sleep, in a fresh process each time);
//! - churn: `tracer probe --count-by comm,pid -s user -I 10s` on a uprobe hit once by each of
//!   10,000 short children, spread over the run;
//! - profile: `tracer profile -a -I 10s` of the whole (busy) machine: its count map is drained
//!   at each report, so it never fills;
//! - folds: `tracer profile -a -f folded` without `-I`, which folds its counts out of the maps
//!   as it goes (every 10 s, or sooner as they fill) and writes them all at the end;
//! - stacks: `tracer probe -s user -f json` on a uprobe hit once by each of 10,000 other short
//!   children (each its own stack, by ASLR): streamed stacks are recycled, so capture stays
//!   as good at the end as at the start.
//!
//! Each sample: each tracer's resident memory and open file descriptors, the churn run's keys
//! and uncounted hits from its last interval report, and the stacks run's events and stacks
//! not captured in the last 10 s. Printed as a series; the JSON keeps the series and the peaks,
//! and the profile's end-of-run accounting.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::peers::build;
use crate::section;

const CHILDREN: u32 = 10_000;

/// One sample of one tracer process.
#[derive(Clone, Copy, Default)]
struct Sample {
    rss_kib: u64,
    fds: u64,
}

fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = (status.lines())
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64);
    Sample { rss_kib, fds }
}

fn spawn(argv: &[String]) -> Result<Child> {
    Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {argv:?}"))
}

pub fn soak() -> Result<()> {
    let secs: u64 = std::env::var("TRACER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    section(&format!(
        "bench: soak ({secs} s of streaming and of {CHILDREN} short children, sampled every 10 s)"
    ));
    let (tracer, prog) = build()?;
    let stream_load = format!("while :; do {prog} getppid 1000; sleep 0.1; done");
    // The children are spread over the run: CHILDREN of them in `secs` seconds.
    let pause = secs as f64 / f64::from(CHILDREN);
    let churn_load = format!(
        "i=0; while [ $i -lt {CHILDREN} ]; do {prog} call 1 >/dev/null; sleep {pause:.4}; i=$((i+1)); done; sleep 3600"
    );
    let uprobe = format!("uprobe:{prog}:tracer_testprog_target");
    // A copy of the workload for the stacks run: its uprobe is its own.
    let stacks_prog = format!("{prog}-stacks");
    std::fs::copy(&prog, &stacks_prog).context("copy the workload")?;
    let stacks_load = churn_load.replace(&prog, &stacks_prog);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut streaming = spawn(&s(&[
        &tracer,
        "probe",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        &stream_load,
    ]))?;
    let mut churn = spawn(&s(&[
        &tracer,
        "probe",
        "--count-by",
        "comm,pid",
        "-s",
        "user",
        "-I",
        "10s",
        "-f",
        "json",
        &uprobe,
        "--",
        "sh",
        "-c",
        &churn_load,
    ]))?;
    let mut profile = spawn(&s(&[&tracer, "profile", "-a", "-I", "10s"]))?;
    let folds = spawn(&s(&[
        &tracer,
        "profile",
        "-a",
        "-f",
        "folded",
        "-o",
        "/dev/null",
    ]))?;
    let stacks_uprobe = format!("uprobe:{stacks_prog}:tracer_testprog_target");
    let mut stacks = spawn(&s(&[
        &tracer,
        "probe",
        "-s",
        "user",
        "-f",
        "json",
        &stacks_uprobe,
        "--",
        "sh",
        "-c",
        &stacks_load,
    ]))?;
    // The stacks run's (events, stacks not captured) so far.
    let captured = Arc::new(Mutex::new((0u64, 0u64)));
    let out = stacks.stdout.take().context("stdout")?;
    let counts = Arc::clone(&captured);
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let mut counts = counts.lock().unwrap();
            counts.0 += 1;
            counts.1 += u64::from(line.contains("\"error\":"));
        }
    });
    // The profile's reports are only drained (the accounting is at its end, on stderr).
    let out = profile.stdout.take().context("stdout")?;
    std::thread::spawn(move || for _ in BufReader::new(out).lines().map_while(Result::ok) {});
    // Read both outputs as they come: the streaming one is only counted, the churn reports
    // are kept (the last one's keys and uncounted hits go into each sample).
    let events = Arc::new(Mutex::new(0u64));
    // (keys in the last report, uncounted hits over every report so far)
    let reports = Arc::new(Mutex::new((0u64, 0u64)));
    let out = streaming.stdout.take().context("stdout")?;
    let counter = Arc::clone(&events);
    std::thread::spawn(move || {
        for _ in BufReader::new(out).lines().map_while(Result::ok) {
            *counter.lock().unwrap() += 1;
        }
    });
    let out = churn.stdout.take().context("stdout")?;
    let seen = Arc::clone(&reports);
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                let mut seen = seen.lock().unwrap();
                seen.0 = v["rows"].as_array().map_or(0, |r| r.len() as u64);
                seen.1 += v["uncounted"].as_u64().unwrap_or(0);
            }
        }
    });
    println!(
        "{:>6} {:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>15} {:>6} {:>9} {:>12}",
        "s",
        "events",
        "stream RSS",
        "churn RSS",
        "profile RSS",
        "folds RSS",
        "stacks RSS",
        "fds",
        "keys",
        "uncounted",
        "stacks lost"
    );
    let start = Instant::now();
    let mut series = Vec::new();
    let mut before = (0, 0);
    while start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_secs(10));
        let [a, b, c, d] = [&streaming, &churn, &profile, &stacks].map(|t| sample(t.id()));
        let f = sample(folds.id());
        let (keys, uncounted) = *reports.lock().unwrap();
        let at = start.elapsed().as_secs();
        let events = *events.lock().unwrap();
        let now = *captured.lock().unwrap();
        // The stacks run's last 10 s: events, and those without their stack.
        let (hits, lost) = (now.0 - before.0, now.1 - before.1);
        before = now;
        println!(
            "{at:>6} {events:>10} {:>7} KiB {:>7} KiB {:>7} KiB {:>7} KiB {:>7} KiB {:>3}/{:<3}/{:<3}/{:<3} {keys:>6} {uncounted:>9} {lost:>5}/{hits:<6}",
            a.rss_kib, b.rss_kib, c.rss_kib, f.rss_kib, d.rss_kib, a.fds, b.fds, c.fds, d.fds
        );
        series.push(serde_json::json!({
            "s": at, "events": events,
            "stream_rss_kib": a.rss_kib, "stream_fds": a.fds,
            "churn_rss_kib": b.rss_kib, "churn_fds": b.fds,
            "profile_rss_kib": c.rss_kib, "profile_fds": c.fds,
            "folds_rss_kib": f.rss_kib, "folds_fds": f.fds,
            "stacks_rss_kib": d.rss_kib, "stacks_fds": d.fds,
            "keys": keys, "uncounted": uncounted,
            "stacks_events": hits, "stacks_not_captured": lost,
        }));
    }
    for child in [&streaming, &churn, &profile, &folds, &stacks] {
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
    }
    let mut tail = String::new();
    let (mut profile_end, mut folds_end) = (String::new(), String::new());
    for (name, mut child) in [
        ("streaming", streaming),
        ("churn", churn),
        ("profile", profile),
        ("folds", folds),
        ("stacks", stacks),
    ] {
        if let Some(err) = child.stderr.take() {
            let lines: Vec<String> = BufReader::new(err).lines().map_while(Result::ok).collect();
            let end = lines[lines.len().saturating_sub(4)..].join("\n");
            match name {
                "profile" => profile_end = end.clone(),
                "folds" => folds_end = end.clone(),
                _ => {}
            }
            tail += &format!("{name}:\n{end}\n");
        }
        let _ = child.wait();
    }
    println!("end of the runs:\n{tail}");
    let peak = |key: &str| {
        series
            .iter()
            .filter_map(|s| s[key].as_u64())
            .max()
            .unwrap_or(0)
    };
    let json = serde_json::json!({
        "bench": "soak",
        "seconds": secs,
        "children": CHILDREN,
        "peak_stream_rss_kib": peak("stream_rss_kib"),
        "peak_churn_rss_kib": peak("churn_rss_kib"),
        "peak_fds": peak("stream_fds").max(peak("churn_fds")),
        "uncounted_total": reports.lock().unwrap().1,
        "peak_profile_rss_kib": peak("profile_rss_kib"),
        "peak_stacks_rss_kib": peak("stacks_rss_kib"),
        "profile_end": profile_end,
        "peak_folds_rss_kib": peak("folds_rss_kib"),
        "folds_end": folds_end,
        "series": series,
    });
    crate::bench::save("soak", &json.to_string())
}
