//! Start-up: from exec of the tool to the first event it shows, and its peak RSS by then, for
//! a tracepoint probe on `openat`. A thread here opens a marker path every 200 µs; the clock
//! stops at the first line of the tool's output (stdout or stderr) that names the marker.
//! Unpinned, then with the tool on CPU 1. Then event to screen at a low rate (`screen`), and
//! one event then exit (`exit_rows`).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::peers::{build, peer, s, Place, ROUNDS};
use crate::section;

const MARKER: &str = "/tmp/tracer-bench-startup-marker";

/// The pause before each round: a run starts as a user's does, after the last one's events
/// are gone. tracer closes its tracepoint events after it exits (`tracer-detach`), and a run
/// started within that close's grace period waits for it when it opens its own (the kernel's
/// trace event mutex): back to back, tracer's first event came after 42 ms instead of 19.
const SETTLE: Duration = Duration::from_millis(300);

/// One tool's start-up: (ms to the first event, peak RSS in KiB). The first event is the
/// first output line that contains every string of `event`.
fn one(argv: &[String], event: &[&str]) -> Result<(f64, u64)> {
    let start = Instant::now();
    let (mut child, found) =
        until_line(argv, start, |line| event.iter().all(|e| line.contains(e)))?;
    let rss = peak_rss_kib(child.id());
    stop(&mut child);
    let elapsed = found.map_err(|seen| {
        anyhow::anyhow!(
            "`{}` showed no line with {event:?} within 30 s; it said: {}",
            argv.join(" "),
            seen.join(" | ")
        )
    })?;
    Ok((elapsed.as_secs_f64() * 1e3, rss?))
}

/// Starts `argv` with its stdout and stderr read line by line, and waits (30 s at most from
/// `start`) for the first line `wanted` accepts: the child, still running, and the time from
/// `start` to that line, or the first lines it printed instead.
pub(crate) fn until_line(
    argv: &[String],
    start: Instant,
    wanted: impl Fn(&str) -> bool,
) -> Result<(Child, std::result::Result<Duration, Vec<String>>)> {
    let (child, rx) = spawn_lines(argv, &[])?;
    let deadline = start + Duration::from_secs(30);
    let mut seen = Vec::new();
    let found = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((_, line)) if wanted(&line) => break Ok(start.elapsed()),
            Ok((_, line)) => {
                if seen.len() < 5 {
                    seen.push(line);
                }
            }
            Err(_) => break Err(seen),
        }
    };
    Ok((child, found))
}

/// Starts `argv` (with `env` added) and reads its stdout and stderr line by line: the child,
/// and each line with the time it was read.
pub(crate) fn spawn_lines(
    argv: &[String],
    env: &[(&str, &str)],
) -> Result<(Child, mpsc::Receiver<(Instant, String)>)> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let (tx, rx) = mpsc::channel();
    let pipes: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().context("no stdout")?),
        Box::new(child.stderr.take().context("no stderr")?),
    ];
    for pipe in pipes {
        let tx = tx.clone();
        // Read to the end even once nobody listens: the tool keeps writing (its summary at
        // SIGINT) and must not meet a closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
    }
    Ok((child, rx))
}

/// VmHWM (the peak resident set) of a running process, in KiB.
fn peak_rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("cannot read /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/PID/status")
}

/// Ctrl-C, then a kill if the tool has not exited within 5 s.
pub(crate) fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub fn startup() -> Result<()> {
    section("bench: start-up to the first event (tracepoint syscalls:sys_enter_openat)");
    let (tracer, prog) = build()?;
    let stop_opens = Arc::new(AtomicBool::new(false));
    let opener = {
        let stop = stop_opens.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // The path does not exist: each try is one openat that fails with ENOENT.
                let _ = std::fs::File::open(MARKER);
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    // (name, argv, what the line of the opener's event contains)
    let mut tools: Vec<(String, Vec<String>, Vec<&str>)> = vec![(
        "tracer probe syscalls:sys_enter_openat".into(),
        s(&[&tracer, "probe", "syscalls:sys_enter_openat"]),
        vec![MARKER],
    )];
    // Another tracer binary (e.g. an earlier commit's) measured in the same run: A/B of a change.
    if let Ok(baseline) = std::env::var("TRACER_BENCH_BASELINE") {
        tools.push((
            format!("baseline {baseline}"),
            s(&[&baseline, "probe", "syscalls:sys_enter_openat"]),
            vec![MARKER],
        ));
    }
    if peer("bpftrace", "bpftrace") {
        tools.push((
            "bpftrace -e 'tracepoint:...openat { printf }'".into(),
            s(&[
                "bpftrace",
                "-e",
                "tracepoint:syscalls:sys_enter_openat { printf(\"%d %s\\n\", pid, str(args->filename)); }",
            ]),
            vec![MARKER],
        ));
    }
    if peer("perf", "linux-perf") {
        // perf trace prints the filename as a pointer here; the opener is this process.
        tools.push((
            "perf trace -e openat".into(),
            s(&["perf", "trace", "-e", "openat"]),
            vec![" xtask/", "openat("],
        ));
    }
    if peer("trace-bpfcc", "bpfcc-tools") && crate::peers::bcc_headers() {
        tools.push((
            "BCC trace 't:syscalls:sys_enter_openat'".into(),
            s(&["trace-bpfcc", "t:syscalls:sys_enter_openat"]),
            vec![" xtask ", "sys_enter_openat"],
        ));
    }
    let mut tables = serde_json::Map::new();
    for place in Place::BOTH {
        println!(
            "\nstart-up, {} (the tool on CPU 1 when pinned):",
            place.name()
        );
        tables.insert(place.name().into(), table(place, &tools).into());
    }
    stop_opens.store(true, Ordering::Relaxed);
    let _ = opener.join();
    // Event to screen at a low rate, the same two ways (the marker opens above have stopped).
    let mut screen = serde_json::Map::new();
    for place in Place::BOTH {
        println!(
            "\nevent to screen, one open every 3 ms, {} (the opener on CPU 0 and the tool on CPU 1 when pinned):",
            place.name()
        );
        screen.insert(
            place.name().into(),
            crate::screen::table(&tracer, place).into(),
        );
    }
    let exit = exit_rows(&tracer, &prog)?;
    crate::bench::save(
        "startup",
        &serde_json::json!({"bench": "startup", "version": 2, "rows": tables, "screen": screen, "exit": exit})
            .to_string(),
    )
}

/// One placement's start-up rows, printed; returns them as JSON.
fn table(place: Place, tools: &[(String, Vec<String>, Vec<&str>)]) -> Vec<serde_json::Value> {
    println!(
        "{:<46} {:>14} {:>16} {:>14}",
        "tool", "ms (median)", "min..max", "peak RSS MiB"
    );
    let mut json = Vec::new();
    for (name, argv, event) in tools {
        let argv = place.tool(argv.clone());
        let mut runs = Vec::new();
        let mut failure = None;
        for _ in 0..ROUNDS {
            std::thread::sleep(SETTLE);
            match one(&argv, event) {
                Ok(run) => runs.push(run),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            println!("{name:<46} {:>14}   {e:#}", "failed");
            json.push(serde_json::json!({"tool": name, "error": format!("{e:#}")}));
            continue;
        }
        let mut ms: Vec<f64> = runs.iter().map(|r| r.0).collect();
        ms.sort_by(f64::total_cmp);
        let mut rss: Vec<u64> = runs.iter().map(|r| r.1).collect();
        rss.sort();
        let (median, min, max) = (ms[ROUNDS / 2], ms[0], ms[ROUNDS - 1]);
        let rss_mib = rss[ROUNDS / 2] as f64 / 1024.0;
        println!(
            "{name:<46} {median:>14.1} {:>16} {rss_mib:>14.1}",
            format!("{min:.1}..{max:.1}")
        );
        json.push(serde_json::json!({"tool": name, "median_ms": median, "min_ms": min, "max_ms": max, "peak_rss_kib": rss[ROUNDS / 2]}));
    }
    json
}

/// From exec to the first event and to the tool's exit, for one event and done: `tracer probe
/// -c 1` on a syscall tracepoint around a workload making one call (and the same with
/// TRACER_BENCH_BASELINE), and bpftrace's `exit()` after its first hit. Not pinned.
fn exit_rows(tracer: &str, prog: &str) -> Result<Vec<serde_json::Value>> {
    let workload = s(&[prog, "getppid", "1"]);
    let probe = |bin: &str| {
        let tool = s(&[
            bin,
            "probe",
            "-c",
            "1",
            "-f",
            "json",
            "syscalls:sys_enter_getppid",
        ]);
        [tool, s(&["--"]), workload.clone()].concat()
    };
    let mut tools = vec![("tracer probe -c 1".to_string(), probe(tracer), "{")];
    if let Ok(baseline) = std::env::var("TRACER_BENCH_BASELINE") {
        tools.push((format!("baseline {baseline}"), probe(&baseline), "{"));
    }
    if peer("bpftrace", "bpftrace") {
        let script =
            "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf(\"hit\\n\"); exit(); }";
        let argv = s(&["bpftrace", "-e", script, "-c", &workload.join(" ")]);
        tools.push(("bpftrace ... exit()".into(), argv, "hit"));
    }
    println!("\none event, then exit (median of {ROUNDS}, min..max, not pinned)");
    println!("{:<46} {:>22} {:>22}", "tool", "first event ms", "exit ms");
    let mut rows = Vec::new();
    for (name, argv, line) in &tools {
        let mut firsts = Vec::new();
        let mut exits = Vec::new();
        for _ in 0..ROUNDS {
            std::thread::sleep(SETTLE);
            let start = Instant::now();
            let (mut child, found) = until_line(argv, start, |l| l.contains(line))?;
            let status = child.wait()?;
            if let (Ok(first), true) = (found, status.success()) {
                firsts.push(first.as_secs_f64() * 1e3);
                exits.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        if firsts.is_empty() {
            println!("{name:<46} failed");
            continue;
        }
        let spread = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[0], v[v.len() - 1])
        };
        let (f, e) = (spread(&mut firsts), spread(&mut exits));
        println!(
            "{name:<46} {:>22} {:>22}",
            format!("{:.1} ({:.1}..{:.1})", f.0, f.1, f.2),
            format!("{:.1} ({:.1}..{:.1})", e.0, e.1, e.2)
        );
        rows.push(
            serde_json::json!({"tool": name, "first_ms": f.0, "exit_ms": e.0,
            "exit_min_ms": e.1, "exit_max_ms": e.2}),
        );
    }
    Ok(rows)
}
