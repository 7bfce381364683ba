//! Tier 4: `tracer record` and `tracer report` on a workload that does known things in a known
//! order on two CPUs: exact order, tids, CPUs, interleaved counter samples, filters, the
//! Perfetto export, truncated and foreign files.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{has, json_lines, text, timeline_program, tracer};
use tracer::kernel::features::Feature;

const ROUNDS: usize = 3;

/// The workload's tids, from its first two lines.
struct Tids {
    main: u64,
    worker: u64,
}

fn tids(stdout: &[u8]) -> Tids {
    let out = text(stdout);
    let find = |who: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(who)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no '{who}' line in the workload's output: {out}"))
    };
    Tids {
        main: find("main "),
        worker: find("worker "),
    }
}

fn available(test: &str) -> bool {
    has(Feature::Bpf, test)
        && has(Feature::UprobePmu, test)
        && has(Feature::Breakpoints, test)
        && has(Feature::Tracepoints, test)
        && has(Feature::SoftwareEvents, test)
}

fn two_cpus(test: &str) -> bool {
    let cpus = tracer::perf::cpus::online().expect("online CPUs");
    if cpus.len() < 2 || cpus[..2] != [0, 1] {
        eprintln!(
            "SKIPPED {test}: the workload pins threads to CPUs 0 and 1; online CPUs are {cpus:?}"
        );
        return false;
    }
    true
}

/// Records the workload with a watch, a uprobe and a uretprobe on its step function, the
/// getppid tracepoint and page-fault samples; returns the file, the tids and tracer's stderr.
fn record(dir: &Path) -> (PathBuf, Tids, String) {
    let program = timeline_program();
    let file = dir.join("t.tracer");
    let uprobe = format!("uprobe:{}:timeline_step", program.display());
    let uretprobe = format!("uretprobe:{}:timeline_step", program.display());
    let out = tracer(&[
        "record",
        "-o",
        file.to_str().unwrap(),
        "-W",
        "timeline_counter",
        "-P",
        &uprobe,
        "-P",
        &uretprobe,
        "-P",
        "syscalls:sys_enter_getppid",
        "-e",
        "page-faults",
        "--period",
        "1",
        "--",
        program.to_str().unwrap(),
        &ROUNDS.to_string(),
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "record failed: {stderr}");
    (file, tids(&out.stdout), stderr)
}

fn report(args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let out = tracer(&[&["report", "-f", "json"], args].concat());
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    (json_lines(&out.stdout), text(&out.stderr))
}

fn short(source: &str) -> &str {
    match source {
        s if s.starts_with("uprobe:") => "uprobe",
        s if s.starts_with("uretprobe:") => "uretprobe",
        s if s.starts_with("watch:") => "watch",
        "syscalls:sys_enter_getppid" => "getppid",
        other => other,
    }
}

#[test]
fn watch_uprobe_and_tracepoint_come_out_in_program_order_across_cpus() {
    const TEST: &str = "watch_uprobe_and_tracepoint_come_out_in_program_order_across_cpus";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, tids, stderr) = record(dir.path());
    assert!(stderr.contains("Recording uprobe:"), "{stderr}");
    let (items, summary) = report(&[
        file.to_str().unwrap(),
        "--source",
        "watch:*,uprobe:*,uretprobe:*,syscalls:*",
    ]);
    let got: Vec<(String, u64, u64)> = items
        .iter()
        .map(|i| {
            (
                short(i["source"].as_str().unwrap()).to_string(),
                i["tid"].as_u64().unwrap(),
                i["cpu"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want = Vec::new();
    for _ in 0..ROUNDS {
        want.push(("watch".to_string(), tids.main, 0));
        want.push(("uprobe".to_string(), tids.worker, 1));
        want.push(("uretprobe".to_string(), tids.worker, 1));
        want.push(("getppid".to_string(), tids.main, 0));
    }
    assert_eq!(got, want, "{summary}");
    // Values: the watch saw 0 -> 1 -> 2 -> 3, the step took and returned its round.
    let watch: Vec<(u64, u64)> = (items.iter())
        .filter(|i| i["type"] == "watch")
        .map(|i| {
            (
                i["args"]["old"].as_u64().unwrap(),
                i["args"]["new"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(watch, vec![(0, 1), (1, 2), (2, 3)]);
    let line = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/timeline.c"),
    )
    .unwrap()
    .lines()
    .position(|l| l.contains("timeline_counter = i;"))
    .unwrap()
        + 1;
    let at = items.iter().find(|i| i["type"] == "watch").unwrap()["args"]["at"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        at.starts_with("main+0x") && at.ends_with(&format!("(timeline.c:{line})")),
        "{at}"
    );
    let rounds: Vec<i64> = (items.iter())
        .filter(|i| i["type"] == "probe" && short(i["source"].as_str().unwrap()) == "uprobe")
        .map(|i| i["args"]["round"].as_i64().unwrap())
        .collect();
    assert_eq!(rounds, vec![1, 2, 3]);
    let rets: Vec<i64> = (items.iter())
        .filter(|i| i["type"] == "return")
        .map(|i| i["ret"].as_i64().unwrap())
        .collect();
    assert_eq!(rets, vec![2, 4, 6]);
    assert!(
        summary.contains("probe/watch events: 12 produced, 12 recorded, 0 lost (CPU 0: 0, CPU 1: 0)\nsample/scheduler records: 0 lost (CPU 0: 0, CPU 1: 0); 0 late (out of order)"),
        "{summary}"
    );
}

#[test]
fn counter_samples_interleave_with_bpf_events_on_one_clock() {
    const TEST: &str = "counter_samples_interleave_with_bpf_events_on_one_clock";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, tids, _) = record(dir.path());
    let (items, summary) = report(&[file.to_str().unwrap()]);
    // The whole merged stream is in time order.
    let times: Vec<u64> = items
        .iter()
        .map(|i| i["time_ns"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(summary.contains("0 late (out of order)"), "{summary}");
    assert!(!summary.contains("out of time order"), "{summary}");
    // Between each round's return of the step (CPU 1) and its getppid (CPU 0), the main
    // thread touched 4 fresh pages: exactly 4 page-fault samples of the main thread, stamped
    // by perf between two BPF timestamps. A clock mismatch (perf's default clock is about
    // milliseconds off CLOCK_MONOTONIC) would put them elsewhere.
    let mut faults_per_round = Vec::new();
    let mut counting: Option<usize> = None;
    for item in &items {
        let source = short(item["source"].as_str().unwrap());
        match source {
            "uretprobe" => counting = Some(0),
            "page-faults" if item["tid"].as_u64() == Some(tids.main) => {
                if let Some(n) = counting.as_mut() {
                    *n += 1;
                }
            }
            "getppid" => faults_per_round.push(counting.take().expect("a return before getppid")),
            _ => {}
        }
    }
    assert_eq!(faults_per_round, vec![4; ROUNDS], "{summary}");
    // Samples carry a period of 1 each.
    assert!(items
        .iter()
        .filter(|i| i["type"] == "sample")
        .all(|i| i["args"]["period"] == 1));
}

#[test]
fn report_filters_by_thread_source_and_time() {
    const TEST: &str = "report_filters_by_thread_source_and_time";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, tids, _) = record(dir.path());
    let path = file.to_str().unwrap();
    let worker = tids.worker.to_string();
    let (items, _) = report(&[path, "--tid", &worker, "--source", "u*probe:*"]);
    let kinds: Vec<&str> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["probe", "return"].repeat(ROUNDS));
    let (all, _) = report(&[path, "--source", "watch:*"]);
    assert_eq!(all.len(), ROUNDS);
    let (with_pid, _) = report(&[
        path,
        "--pid",
        &tids.main.to_string(),
        "--source",
        "syscalls:*",
    ]);
    assert_eq!(with_pid.len(), ROUNDS);
    let (none, summary) = report(&[path, "--pid", "1"]);
    assert!(none.is_empty(), "{none:?}");
    assert!(summary.contains("0 records shown"), "{summary}");
    let (comm, _) = report(&[path, "--comm", "tracer-timeline", "--source", "watch:*"]);
    assert_eq!(comm.len(), ROUNDS);
    // --since/--until: offsets from the recording's start; the text output's first column.
    let out = tracer(&["report", path, "--source", "watch:*"]);
    let lines: Vec<String> = text(&out.stdout)
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    let offsets: Vec<f64> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), ROUNDS);
    // Midway between hits (printed to the microsecond; rounds are ~100 us apart).
    let since = format!("{:.9}", (offsets[0] + offsets[1]) / 2.0);
    let until = format!("{:.9}", (offsets[1] + offsets[2]) / 2.0);
    let (window, _) = report(&[
        path, "--source", "watch:*", "--since", &since, "--until", &until,
    ]);
    let news: Vec<u64> = window
        .iter()
        .map(|i| i["args"]["new"].as_u64().unwrap())
        .collect();
    assert_eq!(news, vec![2], "window [{since}, {until}) of {offsets:?}");
}

#[test]
fn perfetto_export_has_tracks_slices_instants_and_counters() {
    const TEST: &str = "perfetto_export_has_tracks_slices_instants_and_counters";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, tids, _) = record(dir.path());
    let json = dir.path().join("t.json");
    let out = tracer(&[
        "report",
        file.to_str().unwrap(),
        "--perfetto",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    // Every event has what the trace-event format requires of its phase.
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(e["name"].is_string() && e["pid"].is_u64(), "{e}");
        match ph {
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            "X" => assert!(
                e["ts"].as_f64().unwrap() >= 0.0
                    && e["dur"].as_f64().unwrap() >= 0.0
                    && e["tid"].is_u64(),
                "{e}"
            ),
            "i" => assert!(
                e["ts"].is_f64() && e["s"] == "t" && e["tid"].is_u64(),
                "{e}"
            ),
            "C" => assert!(e["ts"].is_f64() && e["args"]["total"].is_u64(), "{e}"),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    let of = |ph: &str, name_part: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["name"].as_str().unwrap().contains(name_part))
            .collect()
    };
    // Entry/return pairs of the step are slices on the worker's track, with the return value.
    let slices = of("X", "timeline_step");
    assert_eq!(slices.len(), ROUNDS);
    assert!(slices
        .iter()
        .all(|s| s["tid"].as_u64() == Some(tids.worker)));
    let rets: Vec<i64> = slices
        .iter()
        .map(|s| s["args"]["ret"].as_i64().unwrap())
        .collect();
    assert_eq!(rets, vec![2, 4, 6]);
    let watches = of("i", "watch:timeline_counter");
    assert_eq!(watches.len(), ROUNDS);
    assert!(watches.iter().all(|w| w["tid"].as_u64() == Some(tids.main)));
    assert_eq!(of("i", "sys_enter_getppid").len(), ROUNDS);
    // The page-fault counter track only grows.
    let totals: Vec<u64> = of("C", "page-faults")
        .iter()
        .map(|c| c["args"]["total"].as_u64().unwrap())
        .collect();
    assert!(
        totals.len() >= 4 * ROUNDS && totals.windows(2).all(|w| w[0] < w[1]),
        "{totals:?}"
    );
    // One named track per thread.
    let threads: Vec<u64> = of("M", "thread_name")
        .iter()
        .map(|m| m["tid"].as_u64().unwrap())
        .collect();
    assert!(
        threads.contains(&tids.main) && threads.contains(&tids.worker),
        "{threads:?}"
    );
}

#[test]
fn truncated_newer_and_foreign_files() {
    const TEST: &str = "truncated_newer_and_foreign_files";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, _, _) = record(dir.path());
    let path = file.to_str().unwrap();
    let whole = std::fs::read(&file).unwrap();
    let (full, _) = report(&[path]);
    // Cut 10 bytes: the end record (8) and the tail of the loss counts. Every timeline record
    // is still there.
    let cut = dir.path().join("cut.tracer");
    std::fs::write(&cut, &whole[..whole.len() - 10]).unwrap();
    let (recovered, summary) = report(&[cut.to_str().unwrap()]);
    assert_eq!(recovered, full);
    let message = summary
        .lines()
        .find(|l| l.contains("ends inside a record"))
        .unwrap_or_else(|| panic!("{summary}"));
    // "... recovered N records up to byte B; the last P bytes are an incomplete record ..."
    let number_after = |word: &str| -> u64 {
        message
            .split(word)
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches(';')
            .parse()
            .unwrap()
    };
    assert_eq!(
        number_after("up to byte ") + number_after("the last "),
        whole.len() as u64 - 10,
        "{message}"
    );
    assert!(
        summary.contains("no loss counts: the recording did not finish"),
        "{summary}"
    );
    // Cut in the middle: a prefix of the timeline, never a garbled record.
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let (half, _) = report(&[cut.to_str().unwrap()]);
    assert!(!half.is_empty() && half.len() < full.len());
    assert_eq!(half[..], full[..half.len()]);

    let mut newer = whole.clone();
    newer[8..12].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&cut, &newer).unwrap();
    let out = tracer(&["report", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).lines().next().unwrap(),
        format!("error: cannot read {}: written by a newer tracer (file format 7; this tracer reads format 2)", cut.display())
    );
    let out = tracer(&["report", "/etc/hostname"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not a tracer recording"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_live_recording_pipes_into_report() {
    const TEST: &str = "a_live_recording_pipes_into_report";
    if !available(TEST) || !two_cpus(TEST) {
        return;
    }
    let program = timeline_program();
    let mut record = Command::new(common::tracer_bin())
        .args([
            "record",
            "-o",
            "-",
            "-W",
            "timeline_counter",
            "-P",
            "syscalls:sys_enter_getppid",
            "--",
        ])
        .arg(&program)
        .arg(ROUNDS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let piped = Command::new(common::tracer_bin())
        .args([
            "report",
            "-",
            "-f",
            "json",
            "--source",
            "watch:*,syscalls:*",
        ])
        .stdin(record.stdout.take().unwrap())
        .output()
        .unwrap();
    let recorded = record.wait_with_output().unwrap();
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    let sources: Vec<String> = json_lines(&piped.stdout)
        .iter()
        .map(|i| short(i["source"].as_str().unwrap()).to_string())
        .collect();
    assert_eq!(sources, ["watch", "getppid"].repeat(ROUNDS));

    // --live prints the same lines while writing the file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.tracer");
    let out = tracer(&[
        "record",
        "-o",
        file.to_str().unwrap(),
        "--live",
        "-W",
        "timeline_counter",
        "-P",
        "syscalls:sys_enter_getppid",
        "--",
        program.to_str().unwrap(),
        &ROUNDS.to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let live: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|s| s.starts_with("watch:") || s.starts_with("syscalls:"))
        .map(short)
        .collect();
    assert_eq!(live, ["watch", "getppid"].repeat(ROUNDS), "{stdout}");
    let (recorded, _) = report(&[file.to_str().unwrap(), "--source", "watch:*,syscalls:*"]);
    assert_eq!(recorded.len(), 2 * ROUNDS);
}

#[test]
fn bad_record_and_report_input_is_a_usage_error() {
    for (args, message) in [
        (
            vec!["record", "-o", "/tmp/x.tracer"],
            "error: nothing to record",
        ),
        (
            vec!["record", "-o", "/tmp/x.tracer", "-W", "counter"],
            "error: watchpoints (-W) need the process whose memory they watch",
        ),
        (
            vec![
                "record",
                "-o",
                "/tmp/x.tracer",
                "-W",
                "counter:w:3",
                "--",
                "true",
            ],
            "error: watch length 3 in 'counter:w:3' is not 1, 2, 4 or 8",
        ),
        (
            vec![
                "record",
                "-o",
                "/tmp/x.tracer",
                "-e",
                "task-clock",
                "-F",
                "0",
            ],
            "error: a sampling rate of 0 samples nothing",
        ),
        (
            vec!["record", "-o", "-", "--live", "--switches"],
            "error: --live prints to standard output, where -o - writes the recording",
        ),
        (
            vec!["report", "/tmp/x.tracer", "--since", "2", "--until", "1"],
            "error: --until is not after --since",
        ),
    ] {
        let out = tracer(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr).lines().next(), Some(message), "{args:?}");
        assert!(!Path::new("/tmp/x.tracer").exists(), "{args:?} left a file");
    }
}
