//! Tier 4: `tracer watch`, hardware watchpoints on a known workload with exact outcomes.

mod common;

use common::{text, tracer};

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{has, Workload};
use tracer::kernel::features::Feature;

const COUNTER: &str = "tracer_testprog_counter";

/// `main.rs:N` of the first line of testprog's source containing `needle` (DWARF line info
/// of the debug-built workload must point there).
fn source_line(needle: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../testprog/src/main.rs");
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains(needle))
        .expect("needle in testprog")
        + 1;
    format!("main.rs:{line}")
}

/// A hit's `at` frame (docs/json.md) as the text line shows it: `function+0xoff`.
fn place(hit: &serde_json::Value) -> String {
    let at = &hit["at"];
    format!(
        "{}+{:#x}",
        at["symbol"].as_str().unwrap_or("?"),
        at["offset"].as_u64().unwrap_or(0)
    )
}

/// A hit's `at` frame's `file:line`.
fn source_of(hit: &serde_json::Value) -> String {
    format!(
        "{}:{}",
        hit["at"]["file"].as_str().unwrap_or("?"),
        hit["at"]["line"]
    )
}

fn hits(stdout: &[u8]) -> Vec<serde_json::Value> {
    let mut events: Vec<serde_json::Value> = text(stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    events.sort_by_key(|e| e["time_ns"].as_u64());
    events
}

/// Every write from `tracer_testprog_bump`, values 1..=n each once, increasing per thread,
/// each hit's old value the previous hit's new one; returns the per-thread hit counts.
fn check_counter_hits(events: &[serde_json::Value], n: u64) -> BTreeMap<u64, u64> {
    assert_eq!(events.len() as u64, n);
    let new: Vec<u64> = events.iter().map(|e| e["new"].as_u64().unwrap()).collect();
    assert_eq!(new, (1..=n).collect::<Vec<_>>(), "values in time order");
    for pair in events.windows(2) {
        assert_eq!(pair[1]["old"], pair[0]["new"]);
    }
    let mut per_thread: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in events {
        per_thread
            .entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push(e["new"].as_u64().unwrap());
        assert_eq!(e["type"], "hit");
        assert!(place(e).starts_with("tracer_testprog_bump+0x"), "{e}");
        assert_eq!(
            source_of(e),
            source_line("tracer_testprog_counter.fetch_add("),
            "{e}"
        );
        assert_eq!(e["target"], COUNTER);
    }
    for values in per_thread.values() {
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "increasing per thread: {values:?}"
        );
    }
    per_thread
        .into_iter()
        .map(|(tid, v)| (tid, v.len() as u64))
        .collect()
}

#[test]
fn every_write_of_three_threads_to_a_global_is_reported_with_values_and_writer() {
    if !has(Feature::Breakpoints, "watch_command") || !has(Feature::Bpf, "watch_command") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let out = tracer(&[
        "watch", COUNTER, "-f", "json", "--", &prog, "counter", "300",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = hits(&out.stdout);
    assert_eq!(events.len(), 300, "{}", text(&out.stderr));
    let per_thread = check_counter_hits(&events, 300);
    assert_eq!(
        per_thread.values().copied().collect::<Vec<_>>(),
        vec![100, 100, 100],
        "three threads, 100 writes each"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("300 hits in"), "{stderr}");
    assert!(stderr.contains(&format!("{COUNTER} (0x")), "{stderr}");
}

/// `tracer watch COUNTER --summary -f json -- tracer-testprog WORKLOAD...`, which must exit 0
/// having counted `hits`, with none lost: its one line (one target, no line per hit).
fn summary_of(workload: &[&str], hits: u64) -> serde_json::Value {
    let prog = common::testprog().display().to_string();
    let mut args = vec!["watch", COUNTER, "--summary", "-f", "json", "--", &prog];
    args.extend_from_slice(workload);
    let out = tracer(&args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&format!("\n{hits} hits in ")), "{stderr}");
    assert!(stderr.ends_with("; 0 lost\n"), "{stderr}");
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let counts: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(counts["hits"], hits, "{counts}");
    counts
}

#[test]
fn a_summary_counts_every_write_in_the_kernel_by_thread_and_instruction() {
    if !has(Feature::Breakpoints, "watch_summary") || !has(Feature::Bpf, "watch_summary") {
        return;
    }
    let counts = summary_of(&["counter", "3000"], 3000);
    assert_eq!(
        (&counts["type"], &counts["target"]),
        (&"hits".into(), &COUNTER.into())
    );
    let threads: Vec<u64> = counts["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["hits"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, vec![1000, 1000, 1000], "{counts}");
    let at = counts["at"].as_array().unwrap();
    assert_eq!(at.len(), 1, "one writing instruction: {counts}");
    assert_eq!(at[0]["hits"], 3000);
    assert!(
        at[0]["at"]
            .as_str()
            .unwrap()
            .starts_with("tracer_testprog_bump+0x"),
        "{counts}"
    );
}

#[test]
fn a_summary_tells_a_threads_writing_instructions_apart_hit_by_hit() {
    if !has(Feature::Breakpoints, "watch_summary_ips") || !has(Feature::Bpf, "watch_summary_ips") {
        return;
    }
    // One thread, two writing instructions taking turns: every hit ends the run of the one
    // before (the same thread, another instruction), so each must be told apart by its ip.
    let counts = summary_of(&["alternate", "1001"], 1001);
    assert_eq!(counts["threads"].as_array().unwrap().len(), 1, "{counts}");
    assert_eq!(counts["threads"][0]["hits"], 1001, "{counts}");
    let mut at: Vec<(String, u64)> = counts["at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let name = a["at"].as_str().unwrap();
            let function = name.split('+').next().unwrap().to_string();
            (function, a["hits"].as_u64().unwrap())
        })
        .collect();
    at.sort();
    assert_eq!(
        at,
        vec![
            ("tracer_testprog_bump".to_string(), 501),
            ("tracer_testprog_bump_unlocked".to_string(), 500)
        ],
        "{counts}"
    );
}

#[test]
fn a_running_process_is_watched_in_existing_and_new_threads_until_it_exits() {
    if !has(Feature::Breakpoints, "watch_pid") || !has(Feature::Bpf, "watch_pid") {
        return;
    }
    // The workload has its first worker thread already; it creates two more after `go`.
    let mut work = Workload::batched(1, None, &["counter", "90"]);
    let pid = work.pid().to_string();
    let mut child = common::Tracer::new(["watch", "-p", &pid, COUNTER, "-f", "json"])
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    stderr.read_line(&mut banner).unwrap();
    assert!(
        banner.starts_with(&format!("Watching {COUNTER} (0x")),
        "{banner}"
    );
    work.run_batch();
    work.finish();
    // tracer ends by itself when the process is gone.
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    assert!(rest.contains(&format!("process {pid} exited")), "{rest}");
    let per_thread = check_counter_hits(&hits(&out.stdout), 90);
    assert_eq!(
        per_thread.len(),
        3,
        "the existing thread and the two created later"
    );
}

#[test]
fn read_write_and_execute_watchpoints_count_exactly() {
    if !has(Feature::Breakpoints, "watch_types") || !has(Feature::Bpf, "watch_types") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // fetch_add reads and writes in one instruction: one hit each.
    let out = tracer(&[
        "watch", "-t", "rw", COUNTER, "-f", "json", "--", &prog, "counter", "30",
    ]);
    assert_eq!(hits(&out.stdout).len(), 30, "{}", text(&out.stderr));
    // An execute breakpoint on a function counts its calls.
    let out = tracer(&[
        "watch",
        "-t",
        "x",
        "tracer_testprog_target",
        "-f",
        "json",
        "--",
        &prog,
        "call",
        "7",
    ]);
    let calls = hits(&out.stdout);
    assert_eq!(calls.len(), 7, "{}", text(&out.stderr));
    assert!(calls
        .iter()
        .all(|e| place(e) == "tracer_testprog_target+0x0"));
    let first_line = source_line("pub extern \"C\" fn tracer_testprog_target(");
    assert!(
        calls.iter().all(|e| source_of(e) == first_line),
        "{calls:?}"
    );
}

#[test]
fn bad_targets_are_explained() {
    common::require_root();
    let prog = common::testprog().display().to_string();
    let misaligned = format!("{COUNTER}+1");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["watch", "-t", "r", COUNTER, "--", &prog, "counter", "3"],
            2,
            "error: x86 has no read-only watchpoints\nhint: watch reads and writes with -t rw",
        ),
        (
            vec![
                "watch",
                "tracer_testprog_countr",
                "--",
                &prog,
                "counter",
                "3",
            ],
            2,
            "hint: did you mean: tracer_testprog_counter",
        ),
        (
            vec!["watch", "0x10", "--", &prog, "counter", "3"],
            1,
            "error: address 0x10 is not mapped in process",
        ),
        (
            vec!["watch", "-p", "999999999", COUNTER],
            2,
            "error: --pid 999999999 is not a process id: ids here are below",
        ),
        (
            vec!["watch", "a", "b", "c", "d", "e", "-p", "1"],
            2,
            "x86 has 4 hardware breakpoint slots",
        ),
        (
            vec!["watch", "-l", "3", COUNTER, "-p", "1"],
            2,
            "--len 3 is not 1, 2, 4 or 8",
        ),
        (
            vec!["watch", COUNTER],
            2,
            "give exactly one of -p PID, -- COMMAND or --kernel",
        ),
        (
            vec!["watch", COUNTER, "--summary", "-c", "5", "-p", "1"],
            2,
            "error: --summary counts every hit in the kernel; it cannot stop after N hits\nhint: bound the run with -d SECS",
        ),
        (
            vec!["watch", COUNTER, "--summary", "-s", "-p", "1"],
            2,
            "error: --summary counts by thread and instruction, not by stack\nhint: drop -s",
        ),
        (
            vec!["watch", &misaligned, "--", &prog, "counter", "3"],
            2,
            "not aligned to the watch length 8",
        ),
    ];
    for (args, code, needle) in cases {
        let out = tracer(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
