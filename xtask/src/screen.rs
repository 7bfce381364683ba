//! Event to screen at a low rate: a thread here opens `/tmp/tracer-screen-I` (I from 0) every
//! 3 ms, 600 times, under each tool with its output on a pipe; a line's delay is the time it
//! was read here minus the time of the open it names. A tool that holds sparse events for a
//! drain or a wakeup watermark shows it in the spread, which is why the table reports the
//! 90th percentile and the maximum besides the median.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::peers::{peer, s, Place};

const PREFIX: &str = "/tmp/tracer-screen-";
const OPENS: usize = 600;
const GAP: Duration = Duration::from_millis(3);

/// A tool: its name, its command, and the environment it needs.
type Tool = (String, Vec<String>, Vec<(&'static str, &'static str)>);

/// The tools, each with the command that prints every open of a `PREFIX` path by this process.
fn tools(tracer: &str) -> Vec<Tool> {
    let filter = format!("filename ~ \"{PREFIX}*\"");
    let mut tools = vec![(
        format!("tracer probe syscalls:sys_enter_openat --filter '{filter}'"),
        s(&[
            tracer,
            "probe",
            "syscalls:sys_enter_openat",
            "--filter",
            &filter,
        ]),
        Vec::new(),
    )];
    let pid = std::process::id();
    if peer("bpftrace", "bpftrace") {
        // -B line: bpftrace buffers a pipe fully unless told (a user at a terminal gets lines).
        let script = format!(
            "tracepoint:syscalls:sys_enter_openat /pid == {pid}/ {{ printf(\"%s\\n\", str(args->filename)); }}"
        );
        tools.push((
            "bpftrace -B line (printf of each open)".into(),
            s(&["bpftrace", "-B", "line", "-e", &script]),
            Vec::new(),
        ));
    }
    if peer("trace-bpfcc", "bpfcc-tools") && crate::peers::bcc_headers() {
        tools.push((
            "BCC trace -p PID 't:syscalls:sys_enter_openat'".into(),
            s(&[
                "trace-bpfcc",
                "-p",
                &pid.to_string(),
                "t:syscalls:sys_enter_openat \"%s\", args->filename",
            ]),
            // Python buffers a pipe fully unless told.
            vec![("PYTHONUNBUFFERED", "1")],
        ));
    }
    tools
}

/// One placement's rows, printed; returns them as JSON. perf trace is left out: on this
/// machine it prints openat's filename as a pointer, so a line cannot be matched to its open.
pub(crate) fn table(tracer: &str, place: Place) -> Vec<serde_json::Value> {
    println!(
        "{:<60} {:>7} {:>10} {:>8} {:>8}",
        "tool", "shown", "median ms", "p90 ms", "max ms"
    );
    let mut json = Vec::new();
    for (name, argv, env) in tools(tracer) {
        match delays(&place.tool(argv), &env, place) {
            Ok(mut ms) => {
                ms.sort_by(f64::total_cmp);
                let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
                let (median, p90, max) = (at(0.5), at(0.9), at(1.0));
                println!(
                    "{name:<60} {:>7} {median:>10.1} {p90:>8.1} {max:>8.1}",
                    format!("{}/{OPENS}", ms.len())
                );
                json.push(
                    serde_json::json!({"tool": name, "shown": ms.len(), "opens": OPENS,
                    "median_ms": median, "p90_ms": p90, "max_ms": max}),
                );
            }
            Err(e) => {
                println!("{name:<60} {:>7}   {e:#}", "failed");
                json.push(serde_json::json!({"tool": name, "error": format!("{e:#}")}));
            }
        }
    }
    json
}

/// Runs `argv` until it shows a warm-up open, then makes the timed opens (on CPU 0 when
/// pinned): the delay of each line shown, in ms.
fn delays(argv: &[String], env: &[(&str, &str)], place: Place) -> Result<Vec<f64>> {
    let (mut child, rx) = crate::startup::spawn_lines(argv, env)?;
    let done = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(Mutex::new(Vec::with_capacity(OPENS)));
    let warm = Arc::new(AtomicBool::new(true));
    let opener = {
        let (done, opened, warm) = (done.clone(), opened.clone(), warm.clone());
        std::thread::spawn(move || {
            if place == Place::Pinned {
                pin_to_cpu0();
            }
            while warm.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
                let _ = std::fs::File::open(format!("{PREFIX}warm"));
                std::thread::sleep(Duration::from_millis(10));
            }
            for i in 0..OPENS {
                if done.load(Ordering::Relaxed) {
                    break;
                }
                let path = format!("{PREFIX}{i}");
                opened.lock().unwrap().push(Instant::now());
                // The path does not exist: each try is one openat that fails with ENOENT.
                let _ = std::fs::File::open(path);
                std::thread::sleep(GAP);
            }
        })
    };
    let mut shown = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ready = false;
    let result = loop {
        // Once the opens are made, the lines still to come: until the pipes are quiet for 1 s.
        let wait = match opener.is_finished() {
            true => Duration::from_secs(1),
            false => deadline.saturating_duration_since(Instant::now()),
        };
        let Ok((at, line)) = rx.recv_timeout(wait) else {
            break match ready {
                true => Ok(()),
                false => Err(anyhow::anyhow!("no warm-up open shown within 30 s")),
            };
        };
        let Some(rest) = line.split(PREFIX).nth(1) else {
            continue;
        };
        if rest.starts_with("warm") {
            if !ready {
                ready = true;
                warm.store(false, Ordering::Relaxed);
            }
            continue;
        }
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(i) = digits.parse::<usize>() {
            shown.push((i, at));
            if i + 1 == OPENS {
                break Ok(());
            }
        }
    };
    done.store(true, Ordering::Relaxed);
    let _ = opener.join();
    crate::startup::stop(&mut child);
    result?;
    let opened = opened.lock().unwrap();
    if shown.is_empty() {
        bail!("none of the {OPENS} opens was shown");
    }
    Ok(shown
        .iter()
        .filter_map(|&(i, at)| Some(at.duration_since(*opened.get(i)?).as_secs_f64() * 1e3))
        .collect())
}

/// This thread on CPU 0.
fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it, and
    // sched_setaffinity reads `size_of` bytes of it for the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
