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
                short(i["probe"].as_str().unwrap()).to_string(),
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
        .filter(|i| short(i["probe"].as_str().unwrap()) == "watch")
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
    let at = items
        .iter()
        .find(|i| short(i["probe"].as_str().unwrap()) == "watch")
        .unwrap()["args"]["at"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        at.starts_with("main+0x") && at.ends_with(&format!("(timeline.c:{line})")),
        "{at}"
    );
    let rounds: Vec<i64> = (items.iter())
        .filter(|i| i["type"] == "event" && short(i["probe"].as_str().unwrap()) == "uprobe")
        .map(|i| i["args"]["round"].as_i64().unwrap())
        .collect();
    assert_eq!(rounds, vec![1, 2, 3]);
    let rets: Vec<i64> = (items.iter())
        .filter(|i| short(i["probe"].as_str().unwrap()) == "uretprobe")
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
        let source = short(item["probe"].as_str().unwrap());
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
    let kinds: Vec<(&str, &str)> = (items.iter())
        .map(|i| {
            (
                i["type"].as_str().unwrap(),
                short(i["probe"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("event", "uprobe"), ("event", "uretprobe")].repeat(ROUNDS)
    );
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
        format!("error: cannot read {}: written by a newer tracer (file format 7; this tracer reads format 3)", cut.display())
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
    let mut record = common::Tracer::new([
        "record",
        "-o",
        "-",
        "-W",
        "timeline_counter",
        "-P",
        "syscalls:sys_enter_getppid",
        "--",
    ])
    .command()
    .arg(&program)
    .arg(ROUNDS.to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let piped = common::Tracer::new([
        "report",
        "-",
        "-f",
        "json",
        "--source",
        "watch:*,syscalls:*",
    ])
    .command()
    .stdin(record.stdout.take().unwrap())
    .output()
    .unwrap();
    let recorded = record.wait_with_output().unwrap();
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    let sources: Vec<String> = json_lines(&piped.stdout)
        .iter()
        .map(|i| short(i["probe"].as_str().unwrap()).to_string())
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
            vec!["record", "-o", "/tmp/x.tracer", "--switches", "-g"],
            "error: -g records the call chains of sampled counters, and none is given",
        ),
        (
            vec![
                "record",
                "-o",
                "/tmp/x.tracer",
                "-e",
                "cpu-clock",
                "--call-graph",
                "lbr",
            ],
            "error: --call-graph lbr needs Intel's last branch records, which tracer does not read",
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

/// The size of `function` in `program` (`nm -S`), to check that sampled ips fall inside it.
fn function_size(program: &Path, function: &str) -> u64 {
    let out = Command::new("nm")
        .args(["-S", "--defined-only"])
        .arg(program)
        .output()
        .expect("run nm (binutils, installed with cc)");
    let listing = text(&out.stdout);
    listing
        .lines()
        .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, size, _, name] if name == function => u64::from_str_radix(size, 16).ok(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {function} with a size in nm's listing:\n{listing}"))
}

/// Records the spin workload, already running before the recording starts, while it runs
/// spin_inner once (with `markers`, a uprobe and a uretprobe on it mark when); `extra` adds
/// to the command line.
/// Returns the report's JSON lines, the workload's pid and tracer record's stderr.
fn record_spin(
    dir: &Path,
    name: &str,
    (system_wide, markers): (bool, bool),
    extra: &[&str],
) -> (Vec<serde_json::Value>, u32, String) {
    use std::io::Read;
    let program = common::spin_program();
    let mut cmd = Command::new(&program);
    cmd.arg("300");
    let mut work = common::Workload::start(cmd);
    let pid = work.pid();
    let file = dir.join(name);
    let uprobe = format!("uprobe:{}:spin_inner", program.display());
    let uretprobe = format!("uretprobe:{}:spin_inner", program.display());
    let pid_arg = pid.to_string();
    let mut args = vec!["record", "-o", file.to_str().unwrap()];
    if markers {
        args.extend(["-P", &uprobe, "-P", &uretprobe]);
    }
    if !system_wide {
        args.extend(["-p", &pid_arg]);
    }
    args.extend(extra);
    let (child, mut stderr, banner) = common::tracer_started(&args);
    assert!(banner.starts_with("Recording "), "{banner}");
    // spin_inner runs and returns while the recording runs.
    work.run_batch();
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let mut rest = banner;
    stderr.read_to_string(&mut rest).unwrap();
    work.finish();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let (items, _) = report(&[file.to_str().unwrap(), "--pid", &pid_arg]);
    (items, pid, rest)
}

/// The samples of `pid` taken while spin_inner ran (between its uprobe and uretprobe hits).
fn inside_spin_inner(items: &[serde_json::Value], context: &str) -> Vec<serde_json::Value> {
    let time_of = |prefix: &str| -> u64 {
        let hits: Vec<u64> = (items.iter())
            .filter(|i| i["probe"].as_str().unwrap().starts_with(prefix))
            .map(|i| i["time_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(hits.len(), 1, "one {prefix} hit: {context}");
        hits[0]
    };
    let (entry, exit) = (time_of("uprobe:"), time_of("uretprobe:"));
    let inside: Vec<serde_json::Value> = (items.iter())
        .filter(|i| i["type"] == "sample")
        .filter(|i| (entry..exit).contains(&i["time_ns"].as_u64().unwrap()))
        .cloned()
        .collect();
    assert!(
        !inside.is_empty(),
        "no cpu-clock sample while spin_inner ran (300 million iterations): {context}"
    );
    inside
}

/// `function+0xOFF` -> OFF, asserting the function.
fn offset_in(place: &str, function: &str) -> u64 {
    let place = place.split(' ').next().unwrap();
    let offset = place
        .strip_prefix(&format!("{function}+0x"))
        .unwrap_or_else(|| panic!("{place} is not in {function}"));
    u64::from_str_radix(offset, 16).unwrap()
}

#[test]
fn sampled_stacks_of_a_running_process_end_in_its_known_chain() {
    const TEST: &str = "sampled_stacks_of_a_running_process_end_in_its_known_chain";
    if !(has(Feature::Bpf, TEST)
        && has(Feature::UprobePmu, TEST)
        && has(Feature::SoftwareEvents, TEST))
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // User-mode samples only (`:u`): a sample taken while the kernel preempts the loop has
    // kernel frames on top.
    let (items, pid, stderr) = record_spin(
        dir.path(),
        "g.tracer",
        (false, true),
        &["-e", "cpu-clock:u", "-F", "999", "-g"],
    );
    let context = format!("{stderr}\n{items:#?}");
    let size = function_size(&common::spin_program(), "spin_inner");
    // The process was running before the recording: its name comes from the start-up comm
    // records, on every record of it.
    assert!(
        items.iter().all(|i| i["comm"] == "tracer-spin"),
        "{context}"
    );
    let samples: Vec<&serde_json::Value> = items.iter().filter(|i| i["type"] == "sample").collect();
    assert!(
        samples
            .iter()
            .all(|s| s["pid"] == pid && s["probe"] == "cpu-clock:u"),
        "{context}"
    );
    // Before 6.11 the kernel's user stacks show the uretprobe trampoline in place of the
    // return address it replaced: the caller of a function whose uretprobe is pending.
    let caller = match common::kernel_version() < (6, 11) {
        true => "[uprobes]",
        false => "spin_outer",
    };
    let (mut in_loop, mut prologue) = (0, 0);
    for sample in inside_spin_inner(&items, &context) {
        let ip = sample["args"]["ip"].as_str().unwrap();
        // The timer can fire in the uprobes page: in the out-of-line copy of spin_inner's
        // first instruction after its uprobe, or in the return trampoline before its
        // uretprobe (seen under emulation, whose timer ticks coarsely). From 6.11 the kernel
        // puts the return address the trampoline stands for in its place: the caller.
        if ip.starts_with("[uprobes]+0x") {
            let first = sample["stack"][0]["symbol"].as_str();
            assert!(
                first == Some("[uprobes]") || first == Some(caller),
                "{sample}"
            );
            continue;
        }
        let offset = offset_in(ip, "spin_inner");
        assert!(offset < size, "{ip} past spin_inner's {size} bytes");
        // Before `push %rbp; mov %rsp,%rbp` (offsets 0 and 1), and at the `ret` after
        // `pop %rbp` (the last byte), the frame pointer holds the caller's frame, so a
        // frame-pointer walk (the kernel's, as perf's) goes from spin_inner to main: seen on
        // 5.10 under emulation, right after the uprobe's out-of-line step of the first
        // instruction.
        if offset < 4 || offset == size - 1 {
            assert_eq!(sample["stack"][1]["symbol"], "main", "{sample}");
            prologue += 1;
            continue;
        }
        in_loop += 1;
        // spin.c's lines 18 to 21 are spin_inner.
        let line: u32 = (ip.split_once("(spin.c:"))
            .and_then(|(_, l)| l.strip_suffix(')')?.parse().ok())
            .unwrap_or_else(|| panic!("{ip} has no spin.c line"));
        assert!((18..=21).contains(&line), "{ip}");
        let stack = sample["stack"].as_array().expect("a stack with -g");
        assert!(stack.iter().all(|f| f["space"] == "user"), "{sample}");
        let symbols: Vec<&str> = stack
            .iter()
            .map(|f| f["symbol"].as_str().unwrap_or("?"))
            .collect();
        // Innermost first: the loop, its caller, main (then libc's start-up frames).
        assert_eq!(symbols[..3], ["spin_inner", caller, "main"], "{sample}");
        assert_eq!(
            format!("spin_inner+{:#x}", stack[0]["offset"].as_u64().unwrap()),
            ip.split(' ').next().unwrap()
        );
        if caller == "spin_outer" {
            assert_eq!(
                (stack[1]["file"].as_str(), stack[1]["line"].as_u64()),
                (Some("spin.c"), Some(23))
            );
        }
    }
    assert!(in_loop > 0, "no sample in spin_inner's loop: {context}");

    // The Perfetto export: each sample an instant whose `sf` names a node of `stackFrames`,
    // whose parents lead to the root without a cycle.
    let file = dir.path().join("g.tracer");
    let json = dir.path().join("g.json");
    let out = tracer(&[
        "report",
        file.to_str().unwrap(),
        "--perfetto",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let frames = doc["stackFrames"]
        .as_object()
        .expect("a stackFrames dictionary");
    for (id, node) in frames {
        assert!(
            node["name"].is_string() && node["category"].is_string(),
            "{id}: {node}"
        );
        if let Some(parent) = node.get("parent") {
            assert!(
                frames.contains_key(parent.as_str().unwrap()),
                "{id}: dangling parent {parent}"
            );
        }
    }
    let chain = |sf: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut at = Some(sf.to_string());
        while let Some(id) = at {
            assert!(out.len() <= frames.len(), "a cycle through {id}");
            let node = &frames[&id];
            out.push(node["name"].as_str().unwrap().to_string());
            at = node.get("parent").map(|p| p.as_str().unwrap().to_string());
        }
        out
    };
    let exported: Vec<&serde_json::Value> = (doc["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["cat"] == "sample" && e["pid"] == pid)
        .collect();
    assert_eq!(exported.len(), samples.len(), "one instant per sample");
    let mut in_loop = 0;
    for event in &exported {
        assert_eq!(
            (&event["ph"], &event["s"], &event["tid"]),
            (&"i".into(), &"t".into(), &pid.into())
        );
        assert!(event["ts"].is_f64(), "{event}");
        let names = chain(event["sf"].as_str().expect("sf on every sample"));
        assert_eq!(
            names.len(),
            event["args"]["stack"].as_array().unwrap().len(),
            "{event}"
        );
        if names[0] == "spin_inner" && names[1] == "main" && prologue > 0 {
            // A sample in the prologue (above).
            prologue -= 1;
        } else if names[0] == "spin_inner" {
            assert_eq!(names[..3], ["spin_inner", caller, "main"], "{event}");
            in_loop += 1;
        }
    }
    assert!(in_loop >= 1, "no exported sample in spin_inner");
}

/// Debian's gzip is built without frame pointers and stripped. With `--call-graph dwarf`
/// each sample carries gzip's user registers and stack top, unwound as the rings are drained:
/// every sample in gzip's own code has a stack through libc to gzip's entry point (`_start`,
/// unnamed in the stripped file: `gzip+0xENTRY`), as profile's and perf's `--call-graph
/// dwarf` give on the same command (profile_cli compares with perf); with `-g` almost none
/// gets there. The summary says how every stack unwound.
#[test]
fn dwarf_call_graphs_give_whole_stacks_of_a_debian_binary() {
    const TEST: &str = "dwarf_call_graphs_give_whole_stacks_of_a_debian_binary";
    if !has(Feature::SoftwareEvents, TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.txt");
    std::fs::write(&input, common::hex_text(4_000_000, 0x9e37_79b9_7f4a_7c15)).unwrap();
    let script = format!("gzip -9 -c {} > /dev/null", input.display());
    let file = dir.path().join("g.tracer");
    let run = |mode: &[&str]| {
        let mut args = vec!["record", "-o", file.to_str().unwrap(), "-e", "cpu-clock"];
        args.extend(["-F", "999"]);
        args.extend(mode);
        args.extend(["--", "sh", "-c", &script]);
        let out = tracer(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let (items, _) = report(&[file.to_str().unwrap()]);
        (items, stderr)
    };
    let elf = std::fs::read("/usr/bin/gzip").unwrap();
    let entry = u64::from_le_bytes(elf[24..32].try_into().unwrap());
    let start = format!("gzip+{entry:#x}");
    // Samples in gzip's own code, and those whose stack goes through libc's start to gzip's
    // entry.
    let whole_of = |items: &[serde_json::Value]| {
        let symbols = |s: &serde_json::Value| -> Vec<String> {
            (s["stack"].as_array().into_iter().flatten())
                .filter(|f| f["space"] == "user")
                .map(|f| f["symbol"].as_str().unwrap_or("?").to_string())
                .collect()
        };
        let in_gzip: Vec<Vec<String>> = (items.iter())
            .filter(|i| i["type"] == "sample" && i["comm"] == "gzip")
            .map(symbols)
            .filter(|s| s.first().is_some_and(|f| f.starts_with("gzip+0x")))
            .collect();
        let whole = (in_gzip.iter())
            .filter(|s| {
                s.ends_with(&[
                    "__libc_start_call_main".into(),
                    "__libc_start_main".into(),
                    start.clone(),
                ])
            })
            .count();
        (whole, in_gzip.len())
    };
    let (items, stderr) = run(&["--call-graph", "dwarf"]);
    let context = format!("{stderr}\n{items:#?}");
    let (whole, total) = whole_of(&items);
    assert!(total >= 50, "{context}");
    assert!(whole * 100 >= total * 98, "{whole} of {total}: {context}");
    // Every sample of the run is in the summary's count of how its stack unwound.
    let samples = (items.iter()).filter(|i| i["type"] == "sample").count() as u64;
    let said = (stderr.lines())
        .find_map(|l| l.strip_prefix("user stacks unwound from .eh_frame: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let (w, rest) = said.split_once(" whole, ").unwrap();
    let cut: u64 = rest.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(w.parse::<u64>().unwrap() + cut, samples, "{stderr}");

    let (items, stderr) = run(&["-g"]);
    let (fp_whole, fp_total) = whole_of(&items);
    assert!(fp_total >= 50, "{stderr}");
    assert!(fp_whole * 10 < fp_total, "{fp_whole} of {fp_total}");
}

#[test]
fn every_sample_has_its_ip_and_no_stack_without_g() {
    const TEST: &str = "every_sample_has_its_ip_and_no_stack_without_g";
    if !(has(Feature::Bpf, TEST)
        && has(Feature::UprobePmu, TEST)
        && has(Feature::SoftwareEvents, TEST))
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (items, _, stderr) = record_spin(
        dir.path(),
        "ip.tracer",
        (false, true),
        &["-e", "cpu-clock:u", "-F", "999"],
    );
    let context = format!("{stderr}\n{items:#?}");
    let size = function_size(&common::spin_program(), "spin_inner");
    for sample in inside_spin_inner(&items, &context) {
        assert!(sample.get("stack").is_none(), "{sample}");
        // Or in the uprobes page (see sampled_stacks_of_a_running_process_end_in_its_known_chain).
        let ip = sample["args"]["ip"].as_str().unwrap();
        if !ip.starts_with("[uprobes]+0x") {
            assert!(offset_in(ip, "spin_inner") < size, "{ip}");
        }
    }
}

#[test]
fn samples_of_tasks_running_before_a_system_wide_recording_have_their_comm() {
    const TEST: &str = "samples_of_tasks_running_before_a_system_wide_recording_have_their_comm";
    if !(has(Feature::Bpf, TEST)
        && has(Feature::UprobePmu, TEST)
        && has(Feature::SoftwareEvents, TEST))
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Every task on the machine, and no probe (a probe hit carries its task's name): the
    // workload never changes its name during the recording, so only the start-up comm
    // records can name its samples.
    let (items, pid, stderr) = record_spin(
        dir.path(),
        "all.tracer",
        (true, false),
        &["-e", "cpu-clock", "-F", "999"],
    );
    let context = format!("{stderr}\n{items:#?}");
    let samples: Vec<&serde_json::Value> = items.iter().filter(|i| i["type"] == "sample").collect();
    assert!(
        !samples.is_empty(),
        "no sample of the workload in 300 million iterations: {context}"
    );
    assert!(
        samples
            .iter()
            .all(|s| s["pid"] == pid && s["comm"] == "tracer-spin"),
        "{context}"
    );
    assert!(
        items.iter().all(|i| i["comm"] == "tracer-spin"),
        "{context}"
    );
}

#[test]
fn kernel_frames_come_first_and_are_named_from_kallsyms() {
    const TEST: &str = "kernel_frames_come_first_and_are_named_from_kallsyms";
    if !(has(Feature::Bpf, TEST) && has(Feature::SoftwareEvents, TEST)) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.tracer");
    // Kernel-mode samples only, of a program that spends its time in getppid(2).
    let out = tracer(&[
        "record",
        "-o",
        file.to_str().unwrap(),
        "-e",
        "cpu-clock:k",
        "-F",
        "999",
        "-g",
        "--",
        common::testprog().to_str().unwrap(),
        "getppid",
        "200000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (items, _) = report(&[file.to_str().unwrap()]);
    let context = format!("{items:#?}");
    let samples: Vec<&serde_json::Value> = items.iter().filter(|i| i["type"] == "sample").collect();
    assert!(
        !samples.is_empty(),
        "no kernel-mode sample in 200000 getppid calls"
    );
    let mut in_getppid = 0;
    for sample in &samples {
        let stack = sample["stack"].as_array().expect("a stack with -g");
        let spaces: Vec<&str> = stack.iter().map(|f| f["space"].as_str().unwrap()).collect();
        // Taken in the kernel: its frames first (the first is the ip), then the user ones.
        assert_eq!(spaces[0], "kernel", "{sample}");
        let kernel = spaces.iter().take_while(|&&s| s == "kernel").count();
        assert!(spaces[kernel..].iter().all(|&s| s == "user"), "{sample}");
        assert!(
            stack[..kernel].iter().all(|f| f["symbol"].is_string()),
            "a kernel frame kallsyms does not name: {sample}"
        );
        let ip = sample["args"]["ip"].as_str().unwrap();
        assert_eq!(
            ip,
            format!(
                "{}+{:#x}",
                stack[0]["symbol"].as_str().unwrap(),
                stack[0]["offset"].as_u64().unwrap()
            )
        );
        // Inside getppid(2): the user side is libc's getppid, named from libc's symbols.
        let through = |name: &str| stack[..kernel].iter().any(|f| f["symbol"] == name);
        if through("__x64_sys_getppid") {
            assert_eq!(stack[kernel]["symbol"], "getppid", "{sample}");
        }
        if through("do_syscall_64") && stack[kernel]["symbol"] == "getppid" {
            in_getppid += 1;
        }
    }
    // Nearly all of its kernel time is in its getppid calls.
    assert!(
        in_getppid >= 1,
        "no sample in a getppid system call: {context}"
    );
}

#[test]
fn a_short_lived_child_is_named_from_its_mmap_records() {
    const TEST: &str = "a_short_lived_child_is_named_from_its_mmap_records";
    if !(has(Feature::Bpf, TEST) && has(Feature::SoftwareEvents, TEST) && two_cpus(TEST)) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("child.tracer");
    // The shell forks a child that execs the workload, which lives for milliseconds: gone
    // before its samples are named, its frames can only come from the kernel's mmap records.
    let script = format!("{} {ROUNDS} >/dev/null; true", timeline_program().display());
    let out = tracer(&[
        "record",
        "-o",
        file.to_str().unwrap(),
        "-e",
        "page-faults",
        "--period",
        "1",
        "-g",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (items, _) = report(&[file.to_str().unwrap(), "--comm", "tracer-timeline"]);
    let context = format!("{items:#?}");
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/timeline.c"),
    )
    .unwrap();
    let line = 1 + source
        .lines()
        .position(|l| l.contains("fresh[p * page] = 1;"))
        .unwrap();
    // Each round touches 4 fresh pages in main, at that line.
    let touches: Vec<&serde_json::Value> = (items.iter())
        .filter(|i| i["type"] == "sample")
        .filter(|i| {
            let ip = i["args"]["ip"].as_str().unwrap();
            ip.starts_with("main+0x") && ip.ends_with(&format!("(timeline.c:{line})"))
        })
        .collect();
    assert_eq!(touches.len(), 4 * ROUNDS, "{context}");
    for sample in touches {
        assert_eq!(sample["stack"][0]["symbol"], "main", "{sample}");
    }
}

/// Recordings written by earlier builds, one per file format this build reads
/// (tests/fixtures/format-N.tracer, made as tests/fixtures/README.md says), report what they
/// reported when they were written: the file's description types are its own
/// (`tracefile::desc`), so renaming a field of the probe layer cannot change what an old
/// recording decodes to, as a round trip through one build would not show.
#[test]
fn recordings_of_every_format_this_build_reads_report_as_when_written() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut versions: Vec<u32> = (std::fs::read_dir(&fixtures).expect("tests/fixtures"))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("format-")?
                .strip_suffix(".tracer")?
                .parse()
                .ok()
        })
        .collect();
    versions.sort();
    // This build reads its own version only (older ones are refused with a hint to record
    // again): a new version adds its fixture, and keeps the old one only while it is read.
    assert_eq!(
        versions,
        [tracer::tracefile::VERSION],
        "fixtures of {versions:?}"
    );
    for version in versions {
        let file = fixtures.join(format!("format-{version}.tracer"));
        let file = file.to_str().expect("a UTF-8 path");
        for (format, golden) in [("json", "report.json"), ("text", "report.txt")] {
            let out = tracer(&["report", "-f", format, file]);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let expected =
                std::fs::read_to_string(fixtures.join(format!("format-{version}.{golden}")))
                    .expect("the golden report");
            assert_eq!(
                text(&out.stdout),
                expected,
                "report -f {format} of format {version}"
            );
        }
    }
    // What the golden reports hold, as the workload made it (tests/fixtures/README.md):
    // `timeline 3`, three rounds of a watched write, a probed call and a getppid.
    let (items, _) = report(&[fixtures.join("format-3.tracer").to_str().unwrap()]);
    let of = |probe: &str| -> Vec<&serde_json::Value> {
        (items.iter())
            .filter(|i| short(i["probe"].as_str().unwrap_or_default()) == probe)
            .collect()
    };
    let rounds: Vec<i64> = of("uprobe")
        .iter()
        .map(|i| i["args"]["round"].as_i64().unwrap())
        .collect();
    assert_eq!(rounds, [1, 2, 3]);
    let returns: Vec<i64> = of("uretprobe")
        .iter()
        .map(|i| i["ret"].as_i64().unwrap())
        .collect();
    assert_eq!(returns, [2, 4, 6]);
    let writes: Vec<(i64, i64)> = (of("watch").iter())
        .map(|i| {
            (
                i["args"]["old"].as_i64().unwrap(),
                i["args"]["new"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(writes, [(0, 1), (1, 2), (2, 3)]);
    assert_eq!(of("getppid").len(), 3);
    let opened: Vec<&str> = (of("syscalls:sys_enter_openat").iter())
        .map(|i| i["args"]["filename"].as_str().unwrap())
        .collect();
    assert_eq!(
        opened,
        ["/etc/ld.so.cache", "/lib/x86_64-linux-gnu/libc.so.6"]
    );
    assert_eq!(of("page-faults").len(), 72);
}

/// A program replaced at its path during a system-wide `tracer record` (a deploy: a new file
/// renamed over the old) is recorded in its new file once the run notes it, and a process of
/// the old file is still recorded: 3 calls before, 5 in the new file, 4 in the old one, 12
/// hits in the recording (7 before: the new file's 5 were missed without a word).
#[test]
fn a_replaced_binary_is_followed_by_a_long_recording() {
    if !has(Feature::UprobePmu, "record_replaced") || !has(Feature::Bpf, "record_replaced") {
        return;
    }
    let deploy = common::Deploy::new();
    let spec = format!("uprobe:{}:tracer_testprog_target", deploy.app.display());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("followed.trace");
    let file = file.to_str().unwrap();
    // -d: a run that never notes the file ends, and the test with it.
    let args = ["record", "-o", file, "-P", &spec, "-d", "60"];
    let (child, mut stderr, _) = common::tracer_started(&args);
    let notes = deploy.replace_during(&mut stderr, 1);
    let want = format!(
        "note: {spec}: {} was replaced (inode ",
        deploy.app.display()
    );
    assert!(notes[0].starts_with(&want), "{notes:?}");
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let (items, summary) = report(&[file]);
    let hits = (items.iter())
        .filter(|i| i["probe"].as_str() == Some(spec.as_str()))
        .count();
    assert_eq!(hits, 12, "{summary}");
}
