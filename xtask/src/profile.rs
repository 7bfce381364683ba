//! `profile`: what sampling stacks costs a CPU-bound workload at 99 and 999 Hz, tracer against
//! `perf record -g` and bpftrace's `profile:hz`, and with stacks copied for DWARF unwinding
//! (`--call-graph dwarf`, tracer's and perf's), in one run; and `profile_memory`: tracer's
//! memory over a 60 s profile of a shell that starts 1,000 short children, each a process whose
//! mappings the symbolizer must know while it is sampled (and, with `--call-graph dwarf`, whose
//! files' unwind tables it reads), of the shell's tree and of every task.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::peers::{build, peer, s, Spread, ROUNDS};
use crate::section;

/// Units of `tracer-testprog work` (about 2 s of arithmetic here, no system call).
const UNITS: &str = "6000000";
const PERF_DATA: &str = "/tmp/tracer-bench-profile.data";

/// CPU seconds (user + system) of this process's waited-for children so far: a tool's own and
/// those of the workload it waited for.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given; a zeroed rusage is a valid value.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// One run of `argv`: the workload's own seconds (its `elapsed_ns` line), the CPU seconds the
/// run took in all (tool and workload), and its stdout and stderr.
fn run(argv: &[String]) -> Result<(f64, f64, String, String)> {
    let cpu = children_cpu();
    let start = Instant::now();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let wall = start.elapsed().as_secs_f64();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if !out.status.success() {
        bail!(
            "`{}` failed: {}: {}",
            argv.join(" "),
            out.status,
            stderr.trim()
        );
    }
    let elapsed = crate::peers::elapsed(&stderr).unwrap_or(wall);
    Ok((elapsed, children_cpu() - cpu, stdout, stderr))
}

/// A profiler of the workload: its command line for a rate, and how many samples a run took
/// (from its output), and the command (if any) that turns its data into the report.
struct Tool {
    name: String,
    argv: Box<dyn Fn(u32, Vec<String>) -> Vec<String>>,
    samples: fn(&str, &str) -> Option<u64>,
    report: Option<Vec<String>>,
}

/// One tool at one rate over `ROUNDS` rounds: the workload's slowdown in percent, the CPU it
/// added (ms, its report step included), and the samples of the last round.
struct Measured {
    slowdown: Spread,
    cpu_ms: Spread,
    samples: Option<u64>,
}

fn spread(mut v: Vec<f64>) -> Spread {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Each round runs the workload untraced and then under the tool, so that each slowdown is
/// taken against a run made moments before it: this machine drifts by a percent or two over
/// minutes, as much as what is measured.
fn measure(tool: &Tool, hz: u32, pinned: bool, work: &[String]) -> Result<Measured> {
    let (mut slowdown, mut cpu_ms, mut samples) = (Vec::new(), Vec::new(), None);
    for _ in 0..ROUNDS {
        let (base, base_cpu, _, _) = run(work)?;
        let argv = (tool.argv)(hz, work.to_vec());
        let argv = match pinned {
            true => crate::peers::pinned(argv),
            false => argv,
        };
        let (elapsed, cpu, stdout, stderr) = run(&argv)?;
        let report_cpu = match &tool.report {
            Some(report) => run(report)?.1,
            None => 0.0,
        };
        slowdown.push((elapsed / base - 1.0) * 100.0);
        cpu_ms.push((cpu + report_cpu - base_cpu) * 1e3);
        samples = (tool.samples)(&stdout, &stderr);
    }
    Ok(Measured {
        slowdown: spread(slowdown),
        cpu_ms: spread(cpu_ms),
        samples,
    })
}

fn tools(tracer: &str) -> Vec<Tool> {
    let tracer = tracer.to_string();
    let dwarf = tracer.clone();
    let mut tools = vec![Tool {
        name: "tracer profile -F HZ".into(),
        argv: Box::new(move |hz, work| {
            [s(&[&tracer, "profile", "-F", &hz.to_string(), "--"]), work].concat()
        }),
        // "N samples in S s, ..."
        samples: |_, stderr| {
            stderr
                .lines()
                .find_map(|l| l.split_once(" samples in ")?.0.trim().parse().ok())
        },
        report: None,
    }];
    tools.push(Tool {
        name: "tracer profile --call-graph dwarf -F HZ".into(),
        argv: Box::new(move |hz, work| {
            let rate = hz.to_string();
            let tool = [
                &dwarf,
                "profile",
                "--call-graph",
                "dwarf",
                "-F",
                &rate,
                "--",
            ];
            [s(&tool), work].concat()
        }),
        samples: |_, stderr| {
            stderr
                .lines()
                .find_map(|l| l.split_once(" samples in ")?.0.trim().parse().ok())
        },
        report: None,
    });
    if peer("perf", "linux-perf") {
        // perf unwinds the copied stacks in `perf report`: its cost is counted with it.
        tools.push(Tool {
            name: "perf record --call-graph dwarf -F HZ + report".into(),
            argv: Box::new(|hz, work| {
                let rate = hz.to_string();
                let tool = [
                    "perf",
                    "record",
                    "--call-graph",
                    "dwarf",
                    "-F",
                    &rate,
                    "-o",
                    PERF_DATA,
                    "--",
                ];
                [s(&tool), work].concat()
            }),
            samples: |_, stderr| {
                let (_, tail) = stderr.rsplit_once(" (")?;
                tail.split_once(" samples)")?.0.parse().ok()
            },
            report: Some(s(&["perf", "report", "-i", PERF_DATA, "--stdio", "-g"])),
        });
        tools.push(Tool {
            name: "perf record -g -F HZ + perf report".into(),
            argv: Box::new(|hz, work| {
                let rate = hz.to_string();
                let tool = ["perf", "record", "-g", "-F", &rate, "-o", PERF_DATA, "--"];
                [s(&tool), work].concat()
            }),
            // "[ perf record: Captured and wrote 0.2 MB PATH (1888 samples) ]"
            samples: |_, stderr| {
                let (_, tail) = stderr.rsplit_once(" (")?;
                tail.split_once(" samples)")?.0.parse().ok()
            },
            report: Some(s(&["perf", "report", "-i", PERF_DATA, "--stdio", "-g"])),
        });
    }
    if peer("bpftrace", "bpftrace") {
        tools.push(Tool {
            name: "bpftrace profile:hz:HZ @[kstack,ustack,comm]".into(),
            argv: Box::new(|hz, work| {
                let script = format!(
                    "profile:hz:{hz} /pid == cpid/ {{ @[kstack, ustack, comm] = count(); @samples = count(); }}"
                );
                s(&["bpftrace", "-e", &script, "-c", &work.join(" ")])
            }),
            samples: |stdout, _| {
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("@samples: ")?.trim().parse().ok())
            },
            report: None,
        });
    }
    tools
}

/// Profiling overhead at 99 and 999 Hz: unpinned (as a user runs it) and pinned (the
/// workload on CPU 0, the tool on CPU 1).
pub fn profile() -> Result<()> {
    section("bench: profiling a CPU-bound workload at 99 and 999 Hz");
    let (tracer, prog) = build()?;
    let tools = tools(&tracer);
    let mut json = Vec::new();
    for pinned in [false, true] {
        let work = match pinned {
            true => s(&[&prog, "--elapsed", "--cpu", "0", "work", UNITS]),
            false => s(&[&prog, "--elapsed", "work", UNITS]),
        };
        let (base, base_cpu, _, _) = run(&work)?;
        let how = match pinned {
            true => "pinned: workload on CPU 0, tool on CPU 1",
            false => "not pinned",
        };
        println!(
            "\n{how}; untraced workload {:.3} s, {:.0} ms of CPU",
            base,
            base_cpu * 1e3
        );
        println!(
            "{:<48} {:>5} {:>10} {:>16} {:>10} {:>16} {:>8}",
            "tool", "Hz", "slowdown", "min..max", "+CPU ms", "min..max", "samples"
        );
        for tool in &tools {
            for hz in [99, 999] {
                match measure(tool, hz, pinned, &work) {
                    Ok(m) => {
                        println!(
                            "{:<48} {hz:>5} {:>9.2}% {:>16} {:>10.0} {:>16} {:>8}",
                            tool.name,
                            m.slowdown.0,
                            format!("{:.2}..{:.2}", m.slowdown.1, m.slowdown.2),
                            m.cpu_ms.0,
                            format!("{:.0}..{:.0}", m.cpu_ms.1, m.cpu_ms.2),
                            m.samples.map_or("-".into(), |n| n.to_string()),
                        );
                        json.push(serde_json::json!({
                            "tool": tool.name, "hz": hz, "pinned": pinned,
                            "slowdown_pct": (m.slowdown.0 * 100.0).round() / 100.0,
                            "slowdown_min": (m.slowdown.1 * 100.0).round() / 100.0,
                            "slowdown_max": (m.slowdown.2 * 100.0).round() / 100.0,
                            "cpu_ms": m.cpu_ms.0.round(),
                            "cpu_ms_min": m.cpu_ms.1.round(),
                            "cpu_ms_max": m.cpu_ms.2.round(),
                            "samples": m.samples,
                            "untraced_s": (base * 1000.0).round() / 1000.0,
                        }));
                    }
                    Err(e) => {
                        println!("{:<48} {hz:>5} failed: {e:#}", tool.name);
                        json.push(serde_json::json!({"tool": tool.name, "hz": hz, "pinned": pinned, "error": format!("{e:#}")}));
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_file(PERF_DATA);
    // Where a sample's cost goes, for the two BPF tools: the kernel's own accounting of the
    // program's run time (the stack walks and the count), pinned, at 999 Hz. bpftrace's
    // program also runs on the other CPU, where its pid test ends it early: its mean is lower
    // than the cost of a sample of the workload.
    let work = s(&[&prog, "--elapsed", "--cpu", "0", "work", UNITS]);
    let mut bpf_rows = vec![(
        "tracer profile -F 999".to_string(),
        crate::peers::bpf_run_time(
            &crate::peers::pinned(
                [s(&[&tracer, "profile", "-F", "999", "--"]), work.clone()].concat(),
            ),
            1500,
        ),
    )];
    if peer("bpftrace", "bpftrace") {
        let script = "profile:hz:999 /pid == cpid/ { @[kstack, ustack, comm] = count(); }";
        bpf_rows.push((
            "bpftrace profile:hz:999".to_string(),
            crate::peers::bpf_run_time(
                &crate::peers::pinned(s(&["bpftrace", "-e", script, "-c", &work.join(" ")])),
                1500,
            ),
        ));
    }
    let bpf_json = crate::peers::report(
        "profiling: BPF program run time per sample (kernel.bpf_stats_enabled), median of 5",
        "sample",
        &bpf_rows,
    );
    crate::bench::save(
        "profile",
        &serde_json::json!({"bench": "profile", "version": 1, "rows": json, "bpf_rows": bpf_json})
            .to_string(),
    )
}

/// tests/workloads/profile.c built as the tests build it (frame pointers, debug info):
/// `busy CPU_MS 0 0 0 0` burns CPU_MS of its CPU time in two call chains and exits.
pub(crate) fn busy() -> Result<std::path::PathBuf> {
    let out = crate::root().join("target/bench/tracer-profile");
    std::fs::create_dir_all(crate::root().join("target/bench"))?;
    let source = crate::root().join("tests/workloads/profile.c");
    crate::run_cmd(
        Command::new("cc")
            .args(["-g", "-O0", "-fno-omit-frame-pointer", "-o"])
            .arg(&out)
            .arg(source),
    )?;
    Ok(out)
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| {
            l.strip_prefix(name)?
                .trim()
                .strip_suffix(" kB")?
                .trim()
                .parse()
                .ok()
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// tracer's memory over a profile of a shell that starts `CHILDREN` processes one after
/// another, each burning 55 ms of CPU (a new process, with its own mappings, about every 60
/// ms): its RSS each second, which must stay flat, and what the report says it counted.
pub fn profile_memory() -> Result<()> {
    const CHILDREN: u32 = 1000;
    section("bench: memory of a 60 s profile of a process that starts 1,000 short children");
    let (tracer, _) = build()?;
    let busy = busy()?;
    let script = format!(
        "i=0; while [ $i -lt {CHILDREN} ]; do {} 55 0 0 0 0 2>/dev/null; i=$((i+1)); done",
        busy.display()
    );
    // bpftrace's -c splits its command at spaces, quotes and all: the loop goes in a file.
    let file = crate::root().join("target/bench/children.sh");
    std::fs::write(&file, &script).context("cannot write the children script")?;
    let mut rows = Vec::new();
    // (name, the tool's command line, whether the children run beside it rather than under
    // it: a system-wide profile for as long as they take).
    let mut tools: Vec<(String, Vec<String>, bool)> = vec![
        (
            "tracer profile -F 99".into(),
            s(&[&tracer, "profile", "-F", "99", "--", "sh", "-c", &script]),
            false,
        ),
        (
            "tracer profile --call-graph dwarf -F 99".into(),
            s(&[
                &tracer,
                "profile",
                "--call-graph",
                "dwarf",
                "-F",
                "99",
                "--",
                "sh",
                "-c",
                &script,
            ]),
            false,
        ),
        (
            "tracer profile -a --call-graph dwarf -F 99 (every task)".into(),
            s(&[
                &tracer,
                "profile",
                "-a",
                "--call-graph",
                "dwarf",
                "-F",
                "99",
            ]),
            true,
        ),
    ];
    if peer("perf", "linux-perf") {
        // perf's memory while it records; its report, which unwinds, runs after.
        tools.push((
            "perf record --call-graph dwarf -F 99 (record only)".into(),
            s(&[
                "perf",
                "record",
                "-q",
                "--call-graph",
                "dwarf",
                "-F",
                "99",
                "-o",
                PERF_DATA,
                "--",
                "sh",
                "-c",
                &script,
            ]),
            false,
        ));
    }
    if peer("bpftrace", "bpftrace") {
        let program = "profile:hz:99 { @[kstack, ustack, comm] = count(); }";
        tools.push((
            "bpftrace profile:hz:99 (every task)".into(),
            s(&[
                "bpftrace",
                "-e",
                program,
                "-c",
                &format!("/bin/sh {}", file.display()),
            ]),
            false,
        ));
    }
    for (name, argv, beside) in tools {
        let start = Instant::now();
        // Beside it: the children's shell, started once the tool has had a second to start;
        // the tool is stopped (SIGINT, its Ctrl-C) when the shell is done.
        let children = beside.then(|| {
            let mut shell = Command::new("sh");
            shell.arg(&file).stdin(Stdio::null()).stdout(Stdio::null());
            shell
        });
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {}", argv[0]))?;
        let pid = child.id();
        let mut series = Vec::new();
        let mut hwm = 0;
        let mut running = match children {
            Some(mut children) => {
                std::thread::sleep(Duration::from_secs(1));
                Some(
                    children
                        .spawn()
                        .context("cannot run the children's shell")?,
                )
            }
            None => None,
        };
        // Its stderr read aside: the tool is reaped by wait4 below, for its own peak.
        let mut pipe = child.stderr.take().context("piped stderr")?;
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
            text
        });
        let (status, max_rss) = loop {
            std::thread::sleep(Duration::from_secs(1));
            if let Some((rss, peak)) = rss_kib(pid) {
                series.push((start.elapsed().as_secs_f64(), rss));
                hwm = hwm.max(peak);
            }
            if let Some(shell) = running.as_mut() {
                if shell.try_wait()?.is_some() {
                    running = None;
                    // SAFETY: kill(2) on the tool's pid, a child not yet waited for.
                    unsafe { libc::kill(pid as i32, libc::SIGINT) };
                }
            }
            let mut status = 0;
            // SAFETY: a zeroed rusage is a valid value, which wait4 fills for the child.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: wait4 on our own child, with pointers to live locals.
            let done = unsafe { libc::wait4(pid as i32, &mut status, libc::WNOHANG, &mut usage) };
            if done == pid as i32 {
                // The peak over the whole run, its end included (the report, where a DWARF
                // profile symbolizes, comes after the last sample of the loop).
                break (status, usage.ru_maxrss as u64);
            }
        };
        hwm = hwm.max(max_rss);
        let stderr = reader.join().unwrap_or_default();
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            bail!(
                "`{name}` failed: wait status {status:#x}: {}",
                stderr.trim()
            );
        }
        let secs = start.elapsed().as_secs_f64();
        let at = |t: f64| {
            series
                .iter()
                .find(|(s, _)| *s >= t)
                .or(series.last())
                .map_or(0, |(_, rss)| *rss)
        };
        let (early, middle, last) = (at(10.0), at(30.0), series.last().map_or(0, |(_, rss)| *rss));
        let summary = stderr
            .lines()
            .find(|l| l.contains(" samples in "))
            .unwrap_or("")
            .to_string();
        println!(
            "{name:<40} {secs:>6.1} s  RSS at 10 s {:>6.1} MiB, at 30 s {:>6.1} MiB, at the end {:>6.1} MiB, peak {:>6.1} MiB  {summary}",
            early as f64 / 1024.0,
            middle as f64 / 1024.0,
            last as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
        rows.push(serde_json::json!({
            "tool": name, "seconds": (secs * 10.0).round() / 10.0,
            "rss_10s_mib": (early as f64 / 102.4).round() / 10.0,
            "rss_30s_mib": (middle as f64 / 102.4).round() / 10.0,
            "rss_end_mib": (last as f64 / 102.4).round() / 10.0,
            "peak_mib": (hwm as f64 / 102.4).round() / 10.0,
            "summary": summary,
        }));
    }
    crate::bench::save(
        "profile_memory",
        &serde_json::json!({"bench": "profile_memory", "version": 1, "children": CHILDREN, "rows": rows}).to_string(),
    )
}
