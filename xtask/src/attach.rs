//! `attach`: how long probes take to attach and to detach, by kind and count: from the
//! tool's exec to its ready line (tracer's banner; bpftrace's `BEGIN`, which runs once every
//! probe is attached), from SIGINT to its exit, and from SIGINT until every probe is closed
//! (tracer hands its slow closes to a `tracer-detach` child that outlives it). tracer against
//! bpftrace on the same probes, in one run, unpinned and then with the tool on CPU 1.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::peers::{build, peer, s, Place, Spread, ROUNDS};
use crate::section;
use crate::startup::until_line;

/// Whether a `tracer-detach` child is still closing a run's events. One that has exited is
/// done, though a zombie until its new parent reaps it (this sandbox's init reaps late).
fn closing() -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        // "PID (COMM) STATE ...".
        std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.split_once(" (tracer-detach) ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    })
}

/// Waits (a minute at most) until no `tracer-detach` child is left.
fn until_closed() {
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while closing() && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// One run, after the last one's probes are all closed (each round starts on a clean kernel):
/// ms from exec to the first line containing `ready`, from SIGINT to exit, and from SIGINT
/// until every probe is closed.
fn one(argv: &[String], ready: &str) -> Result<(f64, f64, f64)> {
    until_closed();
    let (mut child, attached) = until_line(argv, Instant::now(), |line| line.contains(ready))?;
    let attached = match attached {
        Ok(attached) => attached,
        Err(seen) => {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "`{}` never printed {ready:?}: {}",
                argv.join(" "),
                seen.join(" | ")
            );
        }
    };
    let signalled = Instant::now();
    // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid is its.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().context("cannot wait for the tool")?;
    let detached = signalled.elapsed();
    if !status.success() && status.code() != Some(130) {
        bail!("`{}` failed at SIGINT: {status}", argv.join(" "));
    }
    until_closed();
    let closed = signalled.elapsed();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    Ok((ms(attached), ms(detached), ms(closed)))
}

fn spread(mut v: Vec<f64>) -> Spread {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Medians over `ROUNDS` runs: (attach, detach, closed).
fn measure(argv: &[String], ready: &str) -> Result<(Spread, Spread, Spread)> {
    let (mut attach, mut detach, mut closed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (a, d, c) = one(argv, ready)?;
        attach.push(a);
        detach.push(d);
        closed.push(c);
    }
    Ok((spread(attach), spread(detach), spread(closed)))
}

pub fn attach() -> Result<()> {
    section("bench: attach and detach time by probe kind and count");
    let (tracer, _) = build()?;
    let syscalls = std::fs::read_dir("/sys/kernel/tracing/events/syscalls")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("sys_enter_"))
                .count()
        })
        .unwrap_or(0);
    let libc = "/lib/x86_64-linux-gnu/libc.so.6";
    let uprobes = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("{tracer} list --binary {libc} 'str*' | wc -l"),
        ])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<usize>()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    // (case, tracer's probe spec, bpftrace's probe)
    let cases = [
        (
            "1 tracepoint".to_string(),
            "syscalls:sys_enter_getppid".to_string(),
            "tracepoint:syscalls:sys_enter_getppid".to_string(),
        ),
        (
            format!("{syscalls} tracepoints (syscalls:sys_enter_*)"),
            "syscalls:sys_enter_*".to_string(),
            "tracepoint:syscalls:sys_enter_*".to_string(),
        ),
        (
            "1 uprobe (libc strlen)".to_string(),
            format!("uprobe:{libc}:strlen"),
            format!("uprobe:{libc}:strlen"),
        ),
        (
            format!("{uprobes} uprobes (libc str*)"),
            format!("uprobe:{libc}:str*"),
            format!("uprobe:{libc}:str*"),
        ),
    ];
    let bpftrace = peer("bpftrace", "bpftrace");
    let mut tables = serde_json::Map::new();
    for place in Place::BOTH {
        println!(
            "\nattach and detach, {} (the tool on CPU 1 when pinned):",
            place.name()
        );
        println!(
            "{:<44} {:<9} {:>10} {:>15} {:>10} {:>15} {:>10}",
            "case", "tool", "attach ms", "min..max", "detach ms", "min..max", "closed ms"
        );
        let mut rows = Vec::new();
        for (case, spec, probe) in &cases {
            let mut tools = vec![(
                "tracer",
                s(&[&tracer, "probe", "--count-by", "comm", spec]),
                "Hit Ctrl-C to end.",
            )];
            if bpftrace {
                let script =
                    format!("{probe} {{ @[comm] = count(); }} BEGIN {{ printf(\"ready\\n\"); }}");
                tools.push(("bpftrace", s(&["bpftrace", "-e", &script]), "ready"));
            }
            for (tool, argv, ready) in tools {
                match measure(&place.tool(argv), ready) {
                    Ok((a, d, c)) => {
                        println!(
                            "{case:<44} {tool:<9} {:>10.0} {:>15} {:>10.0} {:>15} {:>10.0}",
                            a.0,
                            format!("{:.0}..{:.0}", a.1, a.2),
                            d.0,
                            format!("{:.0}..{:.0}", d.1, d.2),
                            c.0
                        );
                        rows.push(serde_json::json!({
                            "case": format!("{case}: {tool}"),
                            "attach_ms": a.0.round(), "attach_min": a.1.round(), "attach_max": a.2.round(),
                            "detach_ms": d.0.round(), "detach_min": d.1.round(), "detach_max": d.2.round(),
                            "closed_ms": c.0.round(),
                        }));
                    }
                    Err(e) => {
                        println!("{case:<44} {tool:<9} failed: {e:#}");
                        rows.push(serde_json::json!({"case": format!("{case}: {tool}"), "error": format!("{e:#}")}));
                    }
                }
            }
        }
        tables.insert(place.name().into(), rows.into());
    }
    crate::bench::save(
        "attach",
        &serde_json::json!({"bench": "attach", "version": 2, "rows": tables}).to_string(),
    )
}
