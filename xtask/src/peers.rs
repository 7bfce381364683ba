//! Per-event overhead of tracer and its peers (perf, bpftrace) on the same workloads, measured
//! in one run: each tool traces the workload at two sizes, and the difference (which cancels
//! start-up) minus the untraced difference, divided by the extra events, is its cost per event.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{root, run_cmd, section};

pub(crate) const ROUNDS: usize = 5;

/// Median, min and max of the rounds.
pub(crate) type Spread = (f64, f64, f64);

/// One run of `argv` (stdout discarded): the workload's own time when it reports one (the
/// testprog's `--elapsed` line, which the tools pass through on stderr), else the wall time.
/// A tool's start-up and exit work are not the traced workload's cost: perf record's exit
/// processing alone took a flat second here, whatever the number of events.
pub(crate) fn time(argv: &[String]) -> Result<f64> {
    let start = Instant::now();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let wall = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("`{}` failed: {}", argv.join(" "), out.status);
    }
    Ok(elapsed(&String::from_utf8_lossy(&out.stderr)).unwrap_or(wall))
}

/// The workload's own seconds from its `elapsed_ns N` line (the last one).
pub(crate) fn elapsed(stderr: &str) -> Option<f64> {
    stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("elapsed_ns ")?.trim().parse::<u64>().ok())
        .map(|ns| ns as f64 / 1e9)
}

/// Runs `argv` once; its stdout and stderr, and the wall time.
pub(crate) fn capture(argv: &[String]) -> Result<(String, String, f64)> {
    let start = Instant::now();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        secs,
    ))
}

/// `argv` on CPU 1 (the workloads pin themselves to CPU 0).
pub(crate) fn pinned(argv: Vec<String>) -> Vec<String> {
    [s(&["taskset", "-c", "1"]), argv].concat()
}

/// Where a per-event bench runs the tool and the workload: as a user runs them (the scheduler
/// places both, and the tool's work may land on the workload's CPU), or pinned (the workload on
/// CPU 0, the tool on CPU 1), which separates the tool's own work from migrations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Unpinned,
    Pinned,
}

impl Place {
    /// Both, in the order every bench reports them.
    pub(crate) const BOTH: [Place; 2] = [Place::Unpinned, Place::Pinned];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Place::Unpinned => "unpinned",
            Place::Pinned => "pinned",
        }
    }

    /// The tool's command line: on CPU 1 when pinned.
    pub(crate) fn tool(self, argv: Vec<String>) -> Vec<String> {
        match self {
            Place::Unpinned => argv,
            Place::Pinned => pinned(argv),
        }
    }

    /// tracer-testprog's placement flags: `--cpu 0` when pinned.
    pub(crate) fn cpu(self) -> Vec<String> {
        match self {
            Place::Unpinned => Vec::new(),
            Place::Pinned => s(&["--cpu", "0"]),
        }
    }
}

/// The command of `tool` launching `work(n)`, placed.
pub(crate) fn placed<'a>(
    place: Place,
    tool: &'a [&'a str],
    work: &'a dyn Fn(u64) -> Vec<String>,
) -> impl Fn(u64) -> Vec<String> + 'a {
    move |n| place.tool(launching(tool, work(n)))
}

/// Measures and prints `rows` unpinned, then pinned: the JSON of both tables by placement.
pub(crate) fn both_places(
    title: &str,
    unit: &str,
    rows: &dyn Fn(Place) -> Vec<(String, Result<Spread>)>,
) -> serde_json::Value {
    let mut tables = serde_json::Map::new();
    for place in Place::BOTH {
        let title = format!("{title}, {}, median of {ROUNDS} rounds", place.name());
        tables.insert(place.name().into(), report(&title, unit, &rows(place)));
        println!();
    }
    serde_json::Value::Object(tables)
}

/// Seconds from `argv`'s start to the first line on its stderr that shows a call (`name(...)`,
/// after any notes), and to its exit.
pub(crate) fn first_line(argv: &[String]) -> Result<(f64, f64)> {
    let start = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let mut first = None;
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line?;
            if first.is_none() && line.contains('(') && line.contains(") = ") {
                first = Some(start.elapsed().as_secs_f64());
            }
        }
    }
    let status = child.wait()?;
    let exit = start.elapsed().as_secs_f64();
    match (status.success(), first) {
        (true, Some(first)) => Ok((first, exit)),
        (false, _) => bail!("`{}` failed: {status}", argv.join(" ")),
        (true, None) => bail!("`{}` printed no call", argv.join(" ")),
    }
}

/// Median, min and max ns per event of `tool` over `baseline`, with `big` and `small` events.
pub(crate) fn per_event(
    tool: &dyn Fn(u64) -> Vec<String>,
    baseline: &dyn Fn(u64) -> Vec<String>,
    big: u64,
    small: u64,
) -> Result<Spread> {
    let mut costs = Vec::new();
    for _ in 0..ROUNDS {
        let traced = time(&tool(big))? - time(&tool(small))?;
        let untraced = time(&baseline(big))? - time(&baseline(small))?;
        costs.push((traced - untraced) * 1e9 / (big - small) as f64);
    }
    costs.sort_by(f64::total_cmp);
    Ok((costs[ROUNDS / 2], costs[0], costs[ROUNDS - 1]))
}

/// Installs a peer's Debian package when its command is missing; `false` (with the reason
/// printed) when it cannot run here.
pub(crate) fn peer(command: &str, package: &str) -> bool {
    if std::env::var_os("TRACER_BENCH_NO_PEERS").is_some() {
        println!("bench: {command} skipped (TRACER_BENCH_NO_PEERS is set)");
        return false;
    }
    let present = |c: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {c}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if present(command) {
        return true;
    }
    println!("bench: installing {package} for {command}");
    let ok = Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends", package])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success());
    if !ok || !present(command) {
        println!("bench: skipping {command}: the {package} package could not be installed");
        return false;
    }
    true
}

/// BCC compiles its programs against kernel headers, and this kernel ships none (no
/// /lib/modules/RELEASE/build, no CONFIG_IKHEADERS): give it Debian's current headers package
/// through the build/source links it looks for. Its tracepoint structs come from the running
/// kernel's tracefs formats, so older headers serve tracepoint tools. `false` (with the reason
/// printed) when that cannot be done.
pub(crate) fn bcc_headers() -> bool {
    let release = match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(r) => r.trim().to_string(),
        Err(e) => {
            println!("bench: skipping BCC: cannot read the kernel release: {e}");
            return false;
        }
    };
    let modules = std::path::PathBuf::from(format!("/lib/modules/{release}"));
    if modules.join("build/include/generated/autoconf.h").exists() {
        return true;
    }
    let found = |suffix: &str| {
        std::fs::read_dir("/usr/src").ok().and_then(|dir| {
            let mut names: Vec<_> = dir
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("linux-headers-") && n.ends_with(suffix))
                })
                .collect();
            names.sort();
            names.pop()
        })
    };
    if found("-amd64").is_none() {
        println!("bench: BCC needs kernel headers; installing Debian's linux-headers-amd64");
        let _ = Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-qq",
                "--no-install-recommends",
                "linux-headers-amd64",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    let (Some(build), Some(source)) = (found("-amd64"), found("-common")) else {
        println!("bench: skipping BCC: no kernel headers for {release} and none installable");
        return false;
    };
    let link = |target: &std::path::Path, name: &str| {
        let path = modules.join(name);
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(target, &path)
    };
    if let Err(e) = std::fs::create_dir_all(&modules)
        .and_then(|()| link(&build, "build"))
        .and_then(|()| link(&source, "source"))
    {
        println!(
            "bench: skipping BCC: cannot link headers into {}: {e}",
            modules.display()
        );
        return false;
    }
    println!(
        "bench: BCC compiles against {} (this kernel, {release}, ships no headers)",
        build.display()
    );
    true
}

/// `tool ARGS -- WORKLOAD`: a tool that launches the workload itself.
pub(crate) fn launching(tool: &[&str], workload: Vec<String>) -> Vec<String> {
    [s(tool), s(&["--"]), workload].concat()
}

pub(crate) fn s(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

pub(crate) fn report(
    title: &str,
    unit: &str,
    rows: &[(String, Result<Spread>)],
) -> serde_json::Value {
    println!("{title}");
    println!("{:<44} {:>12}   min..max", "tool", format!("ns/{unit}"));
    let mut json = Vec::new();
    for (tool, result) in rows {
        match result {
            Ok((median, min, max)) => {
                println!("{tool:<44} {median:>12.0}   {min:.0}..{max:.0}");
                json.push(serde_json::json!({"tool": tool, "median_ns": median.round(), "min_ns": min.round(), "max_ns": max.round()}));
            }
            Err(e) => {
                println!("{tool:<44} {:>12}   {e:#}", "failed");
                json.push(serde_json::json!({"tool": tool, "error": format!("{e:#}")}));
            }
        }
    }
    serde_json::Value::Array(json)
}

pub(crate) fn build() -> Result<(String, String)> {
    run_cmd(crate::cargo().args(["build", "--release", "-p", "tracer", "-p", "testprog"]))?;
    // Where cargo put them: CARGO_TARGET_DIR when set (relative to the root, where cargo ran).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root().join("target"), |dir| root().join(dir));
    let tracer = target.join("release/tracer").display().to_string();
    let prog = target.join("release/tracer-testprog").display().to_string();
    Ok((tracer, prog))
}

/// Where the watch bench's perf record writes (and its hit count is read back from).
const WATCH_PERF_DATA: &str = "/tmp/tracer-bench-perf.data";

/// Watchpoint hits: 3 threads writing a counter under a lock, unpinned and then all on CPU 0
/// with the tool on CPU 1; tracer watch (streaming, and counting with `--summary`) vs perf's
/// breakpoint events on the same address and bpftrace's watchpoint probe (ASLR off, so the PIE
/// address is fixed). Each row also says how many of the hits the tool caught in one run.
pub fn watch_hit() -> Result<()> {
    section("bench: watchpoint hit (3 threads writing a global under a lock), unpinned and pinned");
    let (tracer, prog) = build()?;
    // With ASLR off, x86-64 PIE executables load at 0x555555554000.
    let nm = Command::new("nm")
        .arg(&prog)
        .output()
        .context("cannot run nm")?;
    let vaddr = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find(|l| l.ends_with(" tracer_testprog_counter"))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .context("no tracer_testprog_counter in tracer-testprog")?;
    let addr = 0x5555_5555_4000u64 + vaddr;
    let event = format!("mem:{addr:#x}:w");
    let norand = |rest: Vec<String>| [s(&["setarch", "x86_64", "-R"]), rest].concat();
    let work = |place: Place, n: u64| {
        [
            s(&[&prog, "--elapsed"]),
            place.cpu(),
            s(&["counter", &n.to_string()]),
        ]
        .concat()
    };
    let (big, small) = (60_000u64, 6_000u64);
    // A tool's command at n hits, and how to read how many hits it caught from its output.
    type Caught = fn(&str, &str) -> Option<u64>;
    type Argv<'a> = Box<dyn Fn(Place, u64) -> Vec<String> + 'a>;
    let launched = |argv: Vec<String>| -> Argv<'_> {
        Box::new(move |place, n| {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            norand(place.tool(launching(&argv, work(place, n))))
        })
    };
    let mut tools: Vec<(String, Argv<'_>, Caught)> = vec![
        (
            "tracer watch -f json".into(),
            launched(s(&[
                &tracer,
                "watch",
                "tracer_testprog_counter",
                "-f",
                "json",
            ])),
            |out, _| Some(out.lines().filter(|l| l.starts_with('{')).count() as u64),
        ),
        (
            "tracer watch --summary".into(),
            launched(s(&[
                &tracer,
                "watch",
                "tracer_testprog_counter",
                "--summary",
                "-f",
                "json",
            ])),
            |out, _| {
                let line: serde_json::Value = serde_json::from_str(out.lines().next()?).ok()?;
                line["hits"].as_u64()
            },
        ),
    ];
    if peer("perf", "linux-perf") {
        tools.push((
            format!("perf record -e {event}"),
            launched(s(&[
                "perf",
                "record",
                "-q",
                "-o",
                WATCH_PERF_DATA,
                "-e",
                &event,
            ])),
            |_, _| {
                let (stats, _, _) =
                    capture(&s(&["perf", "report", "--stats", "-i", WATCH_PERF_DATA])).ok()?;
                number_after(&stats, "SAMPLE events:")
            },
        ));
        tools.push((
            format!("perf stat -e {event}"),
            launched(s(&["perf", "stat", "-x,", "-e", &event])),
            // `-x,`: "COUNT,,EVENT,..." on stderr.
            |_, err| {
                err.lines()
                    .find(|l| l.contains(",mem:"))?
                    .split(',')
                    .next()?
                    .parse()
                    .ok()
            },
        ));
    }
    if peer("bpftrace", "bpftrace") {
        let script = format!("watchpoint:{addr:#x}:8:w {{ @[tid] = count(); }}");
        tools.push((
            "bpftrace watchpoint @[tid] = count()".into(),
            Box::new(move |place, n| {
                let workload = work(place, n).join(" ");
                norand(place.tool(s(&["bpftrace", "-e", &script, "-c", &workload])))
            }),
            // "@[TID]: N" per thread.
            |out, _| {
                Some(
                    out.lines()
                        .filter(|l| l.starts_with("@["))
                        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                        .sum(),
                )
            },
        ));
    }
    let rows = |place: Place| {
        let mut rows = Vec::new();
        for (name, cmd, caught) in &tools {
            let cost = per_event(&|n| cmd(place, n), &|n| norand(work(place, n)), big, small);
            let seen = capture(&cmd(place, big))
                .ok()
                .and_then(|(out, err, _)| caught(&out, &err));
            let seen = seen.map_or("?".to_string(), |n| n.to_string());
            rows.push((format!("{name} [caught {seen} of {big}]"), cost));
        }
        rows
    };
    let json = both_places("watch: cost per hit", "hit", &rows);
    // The target is a ratio at about the size of the run-to-run noise, so it is also measured
    // paired: each round times `--summary` and perf stat back to back (in turn first), against
    // the same untraced run, and the ratio of that round is kept; the ratio of their summed
    // costs weighs every round by its size, which a median of ratios does not.
    // Perf stat against itself in the same protocol (A/A) says how far this measure moves
    // with no difference at all.
    let find = |prefix: &str| tools.iter().find(|(name, _, _)| name.starts_with(prefix));
    let mut paired = serde_json::Map::new();
    let mut itself = serde_json::Map::new();
    if let (Some((_, summary, _)), Some((_, stat, _))) =
        (find("tracer watch --summary"), find("perf stat"))
    {
        for place in Place::BOTH {
            let untraced = |n| norand(work(place, n));
            for (label, a, into) in [
                ("watch --summary / perf stat", summary, &mut paired),
                ("perf stat / perf stat (A/A)", stat, &mut itself),
            ] {
                let ratios =
                    paired_ratios(&|n| a(place, n), &|n| stat(place, n), &untraced, big, small);
                let label = format!("{label}, {}", place.name());
                into.insert(place.name().into(), report_paired(&label, ratios));
            }
        }
    }
    crate::bench::save(
        "watch_hit",
        &serde_json::json!({"bench": "watch_hit", "version": 5, "rows": json,
            "summary_over_perf_stat": paired, "perf_stat_over_itself": itself})
        .to_string(),
    )
}

/// Rounds of [`paired_ratios`]: a round's ratio moves by 10-20 points here, so the median of
/// 9 (the first choice) still moved by about 5 between runs.
const PAIRED_ROUNDS: usize = 21;

/// Prints `label`'s paired ratios (the median, quartiles, range and the ratio of summed
/// costs, as percentages) and returns them for the bench's JSON.
fn report_paired(label: &str, ratios: Result<Paired>) -> serde_json::Value {
    let pct = |r: f64| (r - 1.0) * 100.0;
    match ratios {
        Ok(p) => {
            let r = &p.ratios;
            let (q1, median, q3) = (r[r.len() / 4], r[r.len() / 2], r[r.len() * 3 / 4]);
            let (min, max) = (r[0], r[r.len() - 1]);
            println!(
                "{label}, {PAIRED_ROUNDS} paired rounds: {:+.1}% (median; quartiles \
                 {:+.1}%..{:+.1}%, range {:+.1}%..{:+.1}%); summed costs {:+.1}%",
                pct(median),
                pct(q1),
                pct(q3),
                pct(min),
                pct(max),
                pct(p.summed),
            );
            serde_json::json!({"median": median, "q1": q1, "q3": q3, "min": min, "max": max,
                "summed": p.summed, "rounds": r})
        }
        Err(e) => {
            println!("{label}: {e:#}");
            serde_json::json!({"error": format!("{e:#}")})
        }
    }
}

/// [`paired_ratios`]' result.
struct Paired {
    /// Each round's ratio, sorted.
    ratios: Vec<f64>,
    /// The ratio of the two tools' added costs summed over the rounds.
    summed: f64,
}

/// Per round, `a`'s added cost over `b`'s, both timed back to back against one untraced run
/// (so that drift between rounds cancels), each first in every other round.
fn paired_ratios(
    a: &dyn Fn(u64) -> Vec<String>,
    b: &dyn Fn(u64) -> Vec<String>,
    baseline: &dyn Fn(u64) -> Vec<String>,
    big: u64,
    small: u64,
) -> Result<Paired> {
    let mut ratios = Vec::new();
    let (mut sum_a, mut sum_b) = (0.0, 0.0);
    for round in 0..PAIRED_ROUNDS {
        let untraced = time(&baseline(big))? - time(&baseline(small))?;
        let cost = |tool: &dyn Fn(u64) -> Vec<String>| -> Result<f64> {
            Ok(time(&tool(big))? - time(&tool(small))? - untraced)
        };
        let (a, b) = match round % 2 {
            0 => {
                let a = cost(a)?;
                (a, cost(b)?)
            }
            _ => {
                let b = cost(b)?;
                (cost(a)?, b)
            }
        };
        ratios.push(a / b);
        sum_a += a;
        sum_b += b;
    }
    ratios.sort_by(f64::total_cmp);
    Ok(Paired {
        ratios,
        summed: sum_a / sum_b,
    })
}

/// Latency mode: sys_enter_getppid -> sys_exit_getppid pairs into a log2 histogram, tracer vs
/// bpftrace's `@ = hist(nsecs - @start[tid])`, unpinned and pinned.
pub fn latency_call() -> Result<()> {
    section("bench: latency mode (getppid enter -> exit into a histogram), unpinned and pinned");
    let (tracer, prog) = build()?;
    let (big, small) = (1_000_000, 100_000);
    let bpftrace = peer("bpftrace", "bpftrace");
    let rows = |place: Place| {
        let base = |n: u64| getppid(&prog, place, n);
        let argv = [
            &tracer,
            "latency",
            "--from",
            "syscalls:sys_enter_getppid",
            "--to",
            "syscalls:sys_exit_getppid",
        ];
        let mut rows = vec![(
            "tracer latency --from ... --to ...".to_string(),
            per_event(
                &|n| place.tool(launching(&argv, base(n))),
                &base,
                big,
                small,
            ),
        )];
        if bpftrace {
            let script = "tracepoint:syscalls:sys_enter_getppid /comm == \"tracer-testprog\"/ { @s[tid] = nsecs; } \
                          tracepoint:syscalls:sys_exit_getppid /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }";
            let cmd = |n| {
                let workload = base(n).join(" ");
                place.tool(s(&["bpftrace", "-e", script, "-c", &workload]))
            };
            rows.push((
                "bpftrace hist(nsecs - @s[tid])".to_string(),
                per_event(&cmd, &base, big, small),
            ));
        }
        rows
    };
    let json = both_places("latency: cost per call", "call", &rows);
    crate::bench::save(
        "latency_call",
        &serde_json::json!({"bench": "latency_call", "version": 2, "rows": json}).to_string(),
    )
}

/// `tracer-testprog getppid N`, timing itself, on CPU 0 when pinned.
pub(crate) fn getppid(prog: &str, place: Place, n: u64) -> Vec<String> {
    [
        s(&[prog, "--elapsed"]),
        place.cpu(),
        s(&["getppid", &n.to_string()]),
    ]
    .concat()
}

/// In-kernel counting: every getppid counted by comm in a BPF map, nothing streamed. tracer
/// `--count-by comm` vs bpftrace's `@[comm] = count()`, with perf stat's counter on the same
/// tracepoint (no BPF) as the floor; unpinned and pinned (BCC, which attaches first and pins
/// itself, in the pinned table only).
pub fn count_event() -> Result<()> {
    section("bench: counting in the kernel (getppid by comm), unpinned and pinned");
    let (tracer, prog) = build()?;
    let (big, small) = (1_000_000, 100_000);
    let tp = "syscalls:sys_enter_getppid";
    let (bpftrace, perf) = (peer("bpftrace", "bpftrace"), peer("perf", "linux-perf"));
    let bcc = peer("trace-bpfcc", "bpfcc-tools") && bcc_headers();
    let rows = |place: Place| {
        let base = |n: u64| getppid(&prog, place, n);
        let mut rows = vec![(
            "tracer probe --count-by comm".to_string(),
            per_event(
                &placed(place, &[&tracer, "probe", "--count-by", "comm", tp], &base),
                &base,
                big,
                small,
            ),
        )];
        rows.push((
            format!("tracer stat -e {tp} (no BPF)"),
            per_event(
                &placed(place, &[&tracer, "stat", "-e", tp], &base),
                &base,
                big,
                small,
            ),
        ));
        if bpftrace {
            let script = format!("tracepoint:{tp} {{ @[comm] = count(); }}");
            let cmd = |n| {
                let workload = base(n).join(" ");
                place.tool(s(&["bpftrace", "-e", &script, "-c", &workload]))
            };
            rows.push((
                "bpftrace @[comm] = count()".to_string(),
                per_event(&cmd, &base, big, small),
            ));
        }
        if perf {
            rows.push((
                format!("perf stat -e {tp} (no BPF)"),
                per_event(
                    &placed(place, &["perf", "stat", "-x,", "-e", tp], &base),
                    &base,
                    big,
                    small,
                ),
            ));
        }
        if bcc && place == Place::Pinned {
            rows.push((
                "BCC BPF_HASH(comm).increment (attached first)".to_string(),
                bcc_count(&base, big),
            ));
        }
        rows
    };
    let json = both_places("counting: cost per event", "event", &rows);
    // Wall time on two shared cores swings by hundreds of ns per event between rounds; the
    // kernel's own accounting of each BPF program's run time is steadier.
    let runs = 1_000_000;
    let script = std::env::temp_dir().join("tracer-bench-getppid.sh");
    std::fs::write(&script, format!("{prog} getppid {runs}\nsleep 1\n"))
        .context("cannot write the workload script")?;
    let script = script.display().to_string();
    let mut bpf_rows = vec![(
        "tracer probe --count-by comm".to_string(),
        bpf_run_time(
            &s(&[
                &tracer,
                "probe",
                "--count-by",
                "comm",
                tp,
                "--",
                "/bin/sh",
                &script,
            ]),
            runs,
        ),
    )];
    if peer("bpftrace", "bpftrace") {
        let program = format!("tracepoint:{tp} {{ @[comm] = count(); }}");
        bpf_rows.push((
            "bpftrace @[comm] = count()".to_string(),
            bpf_run_time(
                &s(&[
                    "bpftrace",
                    "-e",
                    &program,
                    "-c",
                    &format!("/bin/sh {script}"),
                ]),
                runs,
            ),
        ));
    }
    let bpf_json = report(
        "counting: BPF program run time per hit (kernel.bpf_stats_enabled), median of 5",
        "hit",
        &bpf_rows,
    );
    crate::bench::save(
        "count_event",
        &serde_json::json!({"bench": "count_event", "version": 3, "rows": json, "bpf_rows": bpf_json})
            .to_string(),
    )
}

/// Runs the Python BCC script `script` with `arg` on CPU 1, waits for its `READY`, times
/// `work(n)` while it is attached, and stops it with SIGINT, `ROUNDS` times: ns per event over
/// the untraced run (BCC tools cannot launch a command, so the workload is timed alone), the
/// last round's summary line (the first line after READY) and its traced wall time.
pub(crate) fn bcc_attached(
    script: &str,
    arg: &str,
    work: &dyn Fn(u64) -> Vec<String>,
    n: u64,
) -> Result<(Spread, String, f64)> {
    let path = std::env::temp_dir().join("tracer-bench-bcc.py");
    std::fs::write(&path, script).context("cannot write the BCC script")?;
    let mut costs = Vec::new();
    let mut last = (String::new(), 0.0);
    for _ in 0..ROUNDS {
        let untraced = time(&work(n))?;
        let mut child = Command::new("taskset")
            .args(["-c", "1", "/usr/bin/python3"])
            .arg(&path)
            .arg(arg)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the BCC script")?;
        let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        match lines.next() {
            Some(Ok(l)) if l == "READY" => {}
            other => {
                let _ = child.kill();
                bail!("the BCC script did not start: {other:?}");
            }
        }
        let traced = time(&work(n))?;
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .context("cannot stop the BCC script")?;
        let summary = lines
            .map_while(Result::ok)
            .next()
            .context("the BCC script printed no summary")?;
        let _ = child.wait();
        last = (summary, traced);
        costs.push((traced - untraced) * 1e9 / n as f64);
    }
    costs.sort_by(f64::total_cmp);
    Ok((
        (costs[ROUNDS / 2], costs[0], costs[ROUNDS - 1]),
        last.0,
        last.1,
    ))
}

/// BCC counting by comm the way its tools do (a hash keyed by comm, `increment`), attached
/// before the workload runs alone (BCC tools cannot launch a command); the count it reads for
/// the workload's comm must be exactly `n`.
const BCC_COUNT_SCRIPT: &str = r#"
import sys, signal
from bcc import BPF
b = BPF(text="""
struct key { char comm[16]; };
BPF_HASH(counts, struct key, u64);
TRACEPOINT_PROBE(syscalls, sys_enter_getppid) {
    struct key k = {};
    bpf_get_current_comm(&k.comm, sizeof(k.comm));
    counts.increment(k);
    return 0;
}
""")
stop = [False]
signal.signal(signal.SIGINT, lambda *a: stop.__setitem__(0, True))
print("READY", flush=True)
while not stop[0]:
    signal.pause()
n = sum(v.value for k, v in b["counts"].items() if k.comm == sys.argv[1].encode())
print("counted %d" % n, flush=True)
"#;

fn bcc_count(work: &dyn Fn(u64) -> Vec<String>, n: u64) -> Result<Spread> {
    let (cost, summary, _) = bcc_attached(BCC_COUNT_SCRIPT, "tracer-testprog", work, n)?;
    let counted = number_after(&summary, "counted");
    if counted != Some(n) {
        bail!("BCC counted {counted:?} of the workload's {n} calls ({summary})");
    }
    Ok(cost)
}

/// Median, min and max ns per run of the busiest BPF program `argv` loads, from the run time
/// and count the kernel keeps per program while `kernel.bpf_stats_enabled` is 1 (read from the
/// tool's fdinfo once `runs` runs are counted). The workload must keep the tool alive a while
/// after its `runs` events.
pub(crate) fn bpf_run_time(argv: &[String], runs: u64) -> Result<Spread> {
    const STATS: &str = "/proc/sys/kernel/bpf_stats_enabled";
    let before = std::fs::read_to_string(STATS).context("no kernel.bpf_stats_enabled")?;
    std::fs::write(STATS, "1").context("cannot enable kernel.bpf_stats_enabled")?;
    let mut costs = Vec::new();
    let result = (|| -> Result<()> {
        for _ in 0..ROUNDS {
            costs.push(one_bpf_run_time(argv, runs)?);
        }
        Ok(())
    })();
    let _ = std::fs::write(STATS, before.trim());
    result?;
    costs.sort_by(f64::total_cmp);
    Ok((costs[ROUNDS / 2], costs[0], costs[ROUNDS - 1]))
}

fn one_bpf_run_time(argv: &[String], runs: u64) -> Result<f64> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let fdinfo = format!("/proc/{}/fdinfo", child.id());
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    let found = loop {
        // (run_time_ns, run_cnt) of the program with the most runs.
        let busiest = std::fs::read_dir(&fdinfo)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|text| {
                let field = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                };
                Some((field("run_time_ns:")?, field("run_cnt:")?))
            })
            .max_by_key(|&(_, count)| count);
        match busiest {
            Some((time, count)) if count >= runs => break Some(time as f64 / count as f64),
            _ if Instant::now() > deadline => break None,
            _ if child.try_wait().ok().flatten().is_some() => break None,
            _ => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    found.with_context(|| format!("`{}` never counted {runs} runs", argv.join(" ")))
}

/// The number after `label` on the first line of `text` that has it (`"  x   123"`, `"N records"`).
pub(crate) fn number_after(text: &str, label: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = &l[l.find(label)? + label.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())?
            .parse()
            .ok()
    })
}

/// Recording a flat-out event source into a file: the workload calls getppid `N` times as
/// fast as it can, each call one event. Produced is exact (the workload's call count), so
/// recorded + lost must equal it; the rate shows whether the file writer keeps up with the
/// ring drain. perf record on the same tracepoint is the peer. Unpinned, then pinned.
pub fn record_throughput() -> Result<()> {
    section("bench: record throughput (getppid flat out, one event per call)");
    let (tracer, prog) = build()?;
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let n: u64 = 2_000_000;
    let tp = "syscalls:sys_enter_getppid";
    let perf = peer("perf", "linux-perf");
    let mut tables = serde_json::Map::new();
    for place in Place::BOTH {
        println!("\nrecord throughput, {}:", place.name());
        println!(
            "{:<34} {:>10} {:>10} {:>8} {:>8} {:>12} {:>9}",
            "tool", "produced", "recorded", "lost", "secs", "events/s", "MB/s"
        );
        let mut json = Vec::new();
        let mut row = |tool: &str, recorded: u64, lost: u64, secs: f64, bytes: u64| {
            let rate = recorded as f64 / secs;
            let mbs = bytes as f64 / secs / 1e6;
            let check = if recorded + lost == n {
                ""
            } else {
                "  recorded + lost != produced"
            };
            println!(
                "{tool:<34} {n:>10} {recorded:>10} {lost:>8} {secs:>8.2} {rate:>12.0} {mbs:>9.1}{check}"
            );
            json.push(serde_json::json!({"tool": tool, "produced": n, "recorded": recorded, "lost": lost, "secs": secs, "events_per_s": rate.round(), "mb_per_s": mbs}));
        };
        let workload = [s(&[&prog]), place.cpu(), s(&["getppid", &n.to_string()])].concat();
        let workload: Vec<&str> = workload.iter().map(String::as_str).collect();
        for pages in ["64", "1024"] {
            let file = dir.join("record.tracer");
            let file_arg = file.display().to_string();
            let argv = place.tool(launching(
                &[
                    &tracer,
                    "record",
                    "-o",
                    &file_arg,
                    "--ring-pages",
                    pages,
                    "-P",
                    tp,
                ],
                s(&workload),
            ));
            // Its stdout is small (the events go to the file); it fails with its stderr.
            let (_, _, secs) = capture(&argv)?;
            let report = Command::new(&tracer)
                .arg("report")
                .arg(&file)
                .stdout(Stdio::null())
                .output()
                .context("run tracer report")?;
            let summary = String::from_utf8_lossy(&report.stderr).into_owned();
            let recorded = number_after(&summary, tp).context("no count in the report")?;
            // "probe/watch events: P produced, R recorded, L lost (...)".
            let lost =
                number_after(&summary, "recorded, ").context("no lost count in the report")?;
            let bytes = std::fs::metadata(&file)?.len();
            row(
                &format!("tracer record --ring-pages {pages}"),
                recorded,
                lost,
                secs,
                bytes,
            );
        }
        if perf {
            let file = dir.join("perf.data");
            let file_arg = file.display().to_string();
            let argv = place.tool(launching(
                &["perf", "record", "-q", "-e", tp, "-o", &file_arg],
                s(&workload),
            ));
            let recording = capture(&argv);
            if let Ok((_, _, secs)) = recording {
                let stats = Command::new("perf")
                    .args(["report", "--stats", "-i"])
                    .arg(&file)
                    .output()
                    .context("run perf report --stats")?;
                let text = String::from_utf8_lossy(&stats.stdout).into_owned();
                let recorded = number_after(&text, "SAMPLE events:").unwrap_or(0);
                // perf's stats count LOST records (chunks), not the samples in them: the lost
                // samples are what is missing from the known total.
                let chunks = number_after(&text, "LOST events:").unwrap_or(0);
                let bytes = std::fs::metadata(&file)?.len();
                row(
                    "perf record -e (per-CPU mmap)",
                    recorded,
                    // perf also records the calls its own launcher makes before the exec.
                    n.saturating_sub(recorded),
                    secs,
                    bytes,
                );
                println!(
                    "  (perf: {chunks} LOST records; its lost samples are produced - recorded)"
                );
            } else if let Err(e) = recording {
                println!("perf record failed: {e:#}");
            }
        }
        tables.insert(place.name().into(), serde_json::Value::Array(json));
    }
    crate::bench::save(
        "record_throughput",
        &serde_json::json!({"bench": "record_throughput", "version": 2, "rows": tables})
            .to_string(),
    )
}

/// `tracer trace` against strace and perf trace: the time each adds per system call of a
/// workload making getppid calls (every call traced and written to /dev/null, or counted
/// with `-c`), workload on CPU 0 and tool on CPU 1; a run of `true` from the tool's start to
/// its exit (start-up, attach, teardown); and tracer's losses on the biggest run.
pub fn trace_call() -> Result<()> {
    section("bench: tracer trace vs strace and perf trace (getppid calls)");
    let (tracer, prog) = build()?;
    let (big, small) = (100_000, 10_000);
    let mut tools: Vec<(String, Vec<String>)> = vec![
        (
            "tracer trace -o /dev/null".into(),
            s(&[&tracer, "trace", "-o", "/dev/null"]),
        ),
        (
            "tracer trace -c".into(),
            s(&[&tracer, "trace", "-c", "-o", "/dev/null"]),
        ),
    ];
    if peer("strace", "strace") {
        tools.push((
            "strace -f -o /dev/null".into(),
            s(&["strace", "-f", "-o", "/dev/null"]),
        ));
        tools.push((
            "strace -f -c -o /dev/null".into(),
            s(&["strace", "-f", "-c", "-o", "/dev/null"]),
        ));
    }
    if peer("perf", "linux-perf") {
        tools.push((
            "perf trace -o /dev/null".into(),
            s(&["perf", "trace", "-o", "/dev/null"]),
        ));
    }
    // As a user runs it (the scheduler places tool and workload), then pinned (workload on
    // CPU 0, tool on CPU 1), which separates the tool's own work from migrations.
    let rows = |place: Place| {
        let base = |n: u64| getppid(&prog, place, n);
        let mut rows = Vec::new();
        for (name, argv) in &tools {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let tool = |n: u64| place.tool(launching(&argv, base(n)));
            rows.push((name.clone(), per_event(&tool, &base, big, small)));
        }
        rows
    };
    let per_call = both_places("trace: time added per traced call", "call", &rows);
    let base = |n: u64| s(&[&prog, "--elapsed", "getppid", &n.to_string()]);
    // Around `true`: the time to the first call's line (the exec), which is what a user waits
    // for, and to the tool's exit (start-up, attach, teardown). Each tool writes to stderr.
    println!("\ntracing `true`, median of 5 runs (min..max)");
    println!("{:<44} {:>14} {:>14}", "tool", "first line ms", "exit ms");
    let mut startup = Vec::new();
    for (name, argv) in tools.iter().filter(|(name, _)| !name.contains(" -c")) {
        let argv: Vec<&str> = argv
            .iter()
            .map(String::as_str)
            .filter(|a| !["-o", "/dev/null"].contains(a))
            .collect();
        let mut firsts = Vec::new();
        let mut exits = Vec::new();
        for _ in 0..5 {
            if let Ok((first, exit)) = first_line(&launching(&argv, s(&["true"]))) {
                firsts.push(first * 1e3);
                exits.push(exit * 1e3);
            }
        }
        let spread = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).map(|m| (*m, v[0], v[v.len() - 1]))
        };
        match (spread(&mut firsts), spread(&mut exits)) {
            (Some(f), Some(e)) => {
                println!(
                    "{name:<44} {:>14} {:>14}",
                    format!("{:.1} ({:.1}..{:.1})", f.0, f.1, f.2),
                    format!("{:.1} ({:.1}..{:.1})", e.0, e.1, e.2)
                );
                startup.push(serde_json::json!({"tool": name,
                    "first_line_ms": (f.0 * 10.0).round() / 10.0,
                    "first_line_min_ms": (f.1 * 10.0).round() / 10.0,
                    "first_line_max_ms": (f.2 * 10.0).round() / 10.0,
                    "exit_ms": (e.0 * 10.0).round() / 10.0}));
            }
            _ => println!("{name:<44} failed"),
        }
    }
    let (_, stderr, _) = capture(&launching(
        &[&tracer, "trace", "-o", "/dev/null"],
        base(big),
    ))?;
    let summary = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" lost, "))
        .unwrap_or("")
        .to_string();
    println!("\ntracer trace on {big} calls: {summary}");
    let programs = real_programs(&tracer)?;
    crate::bench::save(
        "trace_call",
        &serde_json::json!({"bench": "trace_call", "version": 2, "rows": per_call, "startup": startup, "summary": summary, "programs": programs}).to_string(),
    )
}

/// Ordinary programs under `tracer trace` and `strace -f`, both writing every call to
/// /dev/null: the wall time of the whole run (the tool's start and exit included, as a user
/// waits for it) against the program alone, median of [`ROUNDS`], unpinned and pinned (the
/// program on CPU 0, the tool on CPU 1). `find /usr -type f` makes about 258,000 calls in
/// 0.4 s; `tar czf` of /usr/share/doc through a pipe (tar skips the reading when its archive
/// is /dev/null itself) about 69,000 in 3 s. tracer's summary line says what it lost.
fn real_programs(tracer: &str) -> Result<serde_json::Value> {
    let programs = [
        ("find /usr -type f", "find /usr -type f > /dev/null"),
        (
            "tar czf - /usr/share/doc | cat",
            "tar czf - /usr/share/doc 2>/dev/null | cat > /dev/null",
        ),
    ];
    let strace = peer("strace", "strace");
    let mut out = serde_json::Map::new();
    for place in Place::BOTH {
        println!(
            "\nordinary programs, {}: wall s, median of {ROUNDS} (min..max); added s; tracer's added / strace's",
            place.name()
        );
        let mut rows = Vec::new();
        for (name, script) in programs {
            let program = match place {
                Place::Unpinned => s(&["sh", "-c", script]),
                Place::Pinned => s(&["taskset", "-c", "0", "sh", "-c", script]),
            };
            let traced_argv = place.tool(launching(
                &[tracer, "trace", "-o", "/dev/null"],
                program.clone(),
            ));
            let strace_argv = place.tool(launching(
                &["strace", "-f", "-o", "/dev/null"],
                program.clone(),
            ));
            // One run untimed first (the page cache then holds what the program reads), then
            // the rounds with the three runs of each side by side: a drift of the machine over
            // the minute they take falls on all three alike. Run as three blocks, tar alone's
            // five runs spread over 1.2 s on 2026-12-05 and came out slower than under tracer.
            capture(&program)?;
            let (mut alone, mut traced, mut peer) = (Vec::new(), Vec::new(), Vec::new());
            let mut last = String::new();
            for _ in 0..ROUNDS {
                alone.push(capture(&program)?.2);
                let (_, stderr, secs) = capture(&traced_argv)?;
                traced.push(secs);
                last = stderr;
                if strace {
                    peer.push(capture(&strace_argv)?.2);
                }
            }
            // Median, min, max.
            let spread = |mut times: Vec<f64>| {
                times.sort_by(f64::total_cmp);
                (times[ROUNDS / 2], times[0], times[ROUNDS - 1])
            };
            let alone = spread(alone);
            let traced = spread(traced);
            let lost = (last.lines().rev())
                .find(|l| l.contains(" lost, "))
                .unwrap_or("")
                .to_string();
            let peer = strace.then(|| spread(peer));
            let added = |t: &(f64, f64, f64)| t.0 - alone.0;
            let shown = |t: &(f64, f64, f64)| format!("{:.3} ({:.3}..{:.3})", t.0, t.1, t.2);
            println!("  {name}");
            println!("    {:<28} {}", "alone", shown(&alone));
            println!(
                "    {:<28} {}  +{:.3}",
                "tracer trace -o /dev/null",
                shown(&traced),
                added(&traced)
            );
            let mut row = serde_json::json!({
                "program": name,
                "alone_s": alone.0, "alone_min_s": alone.1, "alone_max_s": alone.2,
                "tracer_s": traced.0, "tracer_min_s": traced.1, "tracer_max_s": traced.2,
                "tracer_summary": lost,
            });
            if let Some(peer) = &peer {
                let ratio = added(&traced) / added(peer).max(1e-9);
                println!(
                    "    {:<28} {}  +{:.3}",
                    "strace -f -o /dev/null",
                    shown(peer),
                    added(peer)
                );
                println!("    tracer's added time / strace's: {ratio:.3}");
                row["strace_s"] = peer.0.into();
                row["strace_min_s"] = peer.1.into();
                row["strace_max_s"] = peer.2.into();
                row["ratio"] = ratio.into();
            }
            println!("    tracer: {lost}");
            rows.push(row);
        }
        out.insert(place.name().into(), rows.into());
    }
    Ok(serde_json::Value::Object(out))
}
