//! The examples of `tracer record` and `tracer report`: their help and docs/record.md.

use super::*;

pub(crate) fn report_json(ctx: &Ctx, file: &str) -> Vec<serde_json::Value> {
    let (stdout, _) = ok(&ctx.run(&words(&format!("tracer report {file} -f json"), &[])));
    json_lines(stdout.as_bytes())
}

pub(crate) fn record_openat_cat(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(example, &[])));
    let records = report_json(ctx, "t.tracer");
    let hostname: Vec<_> = records
        .iter()
        .filter(|r| {
            r["probe"] == "syscalls:sys_enter_openat" && r["args"]["filename"] == "/etc/hostname"
        })
        .collect();
    assert_eq!(hostname.len(), 1, "{records:?}");
    assert_eq!(hostname[0]["comm"], "cat");
}

pub(crate) const RECORD_DEFAULT: &str =
    "tracer record -P syscalls:sys_enter_openat -- cat /etc/hostname";

/// Without `-o`, as perf record writes perf.data: tracer.data, and the one before kept as
/// tracer.data.old.
pub(crate) fn record_default_file(ctx: &Ctx, example: &str) {
    for _ in 0..2 {
        ok(&ctx.run(&words(example, &[])));
        let records = report_json(ctx, "tracer.data");
        let hostname = (records.iter())
            .filter(|r| r["args"]["filename"] == "/etc/hostname")
            .count();
        assert_eq!(hostname, 1, "{records:?}");
    }
    assert!(ctx.dir.path().join("tracer.data.old").is_file());
}

/// Without a file, tracer.data, as perf report reads perf.data.
pub(crate) fn report_default_file(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(RECORD_DEFAULT, &[])));
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let opens = (stdout.lines())
        .filter(|l| l.contains("syscalls:sys_enter_openat") && l.contains("/etc/hostname"))
        .count();
    assert_eq!(opens, 1, "{stdout}");
}

pub(crate) const RECORD_PROG: &str =
    "tracer record -o t.tracer -W counter -P uprobe:./prog:work -e task-clock -F 999 -- ./prog";

/// Records prog as the record example does; returns its pid.
pub(crate) fn record_prog_file(ctx: &Ctx) -> u64 {
    ok(&ctx.run(&words(RECORD_PROG, &[])));
    let records = report_json(ctx, "t.tracer");
    let works: Vec<u64> = records
        .iter()
        .filter(|r| r["probe"] == "uprobe:./prog:work")
        .map(|r| r["args"]["i"].as_u64().unwrap())
        .collect();
    assert_eq!(works, [1, 2, 3, 4, 5, 6]);
    let writes: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| r["probe"] == "watch:counter")
        .map(|r| {
            (
                r["args"]["old"].as_u64().unwrap(),
                r["args"]["new"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(writes, COUNTER_VALUES);
    // 40 ms of spinning at 999 Hz: about 40 samples.
    let samples = records
        .iter()
        .filter(|r| r["probe"] == "task-clock")
        .count();
    assert!((10..=80).contains(&samples), "{samples} task-clock samples");
    records.iter().find(|r| r["comm"] == "prog").unwrap()["pid"]
        .as_u64()
        .unwrap()
}

pub(crate) fn record_prog(ctx: &Ctx, example: &str) {
    assert_eq!(example, RECORD_PROG);
    record_prog_file(ctx);
}

pub(crate) fn record_page_faults(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload("./prog", &[]) as u64;
    let (status, _, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let records = report_json(ctx, "t.tracer");
    let of_prog = |source: &str| {
        records
            .iter()
            .filter(|r| {
                r["pid"] == pid && r["probe"].as_str().is_some_and(|s| s.starts_with(source))
            })
            .count()
    };
    assert!(
        of_prog("page-faults") >= 64,
        "prog touches 64 pages\n{stderr}"
    );
    // prog sleeps 700 ms: switched out and back in at least once.
    assert!(
        of_prog("sched:") + of_prog("switch") >= 2,
        "{stderr}\n{:?}",
        &records[..records.len().min(5)]
    );
}

pub(crate) fn opens_23(ctx: &Ctx) -> u32 {
    ctx.workload(
        &testprog().display().to_string(),
        &["open", "23", "/etc/hostname"],
    )
}

pub(crate) fn record_live(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = opens_23(ctx);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let live = lines_with(&stdout, &format!(" {pid}/{pid} "));
    let opens = lines_with(&live.join("\n"), "filename=\"/etc/hostname\"").len();
    assert_eq!(opens, 23, "{stdout}");
    // The file holds the same.
    let recorded = report_json(ctx, "t.tracer")
        .iter()
        .filter(|r| r["pid"] == pid && r["args"]["filename"] == "/etc/hostname")
        .count();
    assert_eq!(recorded, 23);
}

pub(crate) fn record_pipe_report(ctx: &Ctx, example: &str) {
    let (record, report) = example.split_once(" | ").unwrap();
    let mut report = ctx.command(&words(report, &[]));
    let mut record = ctx
        .command(&words(record, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = record.stdout.take().unwrap();
    let reporter = report
        .stdin(pipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(record.stderr.take().unwrap());
    let mut banner = String::new();
    // A note on what the glob matched comes first.
    while !banner.lines().last().unwrap_or("").starts_with("Recording") {
        let before = banner.len();
        err.read_line(&mut banner).unwrap();
        assert!(banner.len() > before, "no banner:\n{banner}");
    }
    let pid = opens_23(ctx);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(record.id() as i32, libc::SIGINT) };
    assert_eq!(record.wait().unwrap().code(), Some(0));
    let out = reporter.wait_with_output().unwrap();
    let (stdout, _) = ok(&out);
    let opens = lines_with(&stdout, &format!(" {pid}/{pid} "))
        .iter()
        .filter(|l| l.contains("filename=\"/etc/hostname\""))
        .count();
    assert_eq!(opens, 23, "{stdout}");
}

pub(crate) fn report_text(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let sources: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(4).unwrap())
        .filter(|s| *s == "uprobe:./prog:work" || *s == "watch:counter")
        .collect();
    // Each work(i) before its write of the counter.
    assert_eq!(
        sources,
        ["uprobe:./prog:work", "watch:counter"].repeat(6),
        "{stdout}"
    );
    // docs/record.md shows it after its own recording.
    docs_report_timeline(ctx, example);
}

pub(crate) fn report_filtered(ctx: &Ctx, example: &str) {
    let pid = record_prog_file(ctx).to_string();
    let (stdout, _) = ok(&ctx.run(&words(example, &[("1234", &pid)])));
    let at = prog_line("counter += count");
    let got: Vec<String> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_once(" prog ").unwrap().1.trim().to_string())
        .collect();
    // Calls 4-6 come after prog's 700 ms pause: the writes between 0.5 s and 2 s.
    let want: Vec<String> = COUNTER_VALUES[3..]
        .iter()
        .map(|(o, n)| format!("watch:counter old={o} new={n} at=handle+0x"))
        .collect();
    assert_eq!(got.len(), 3, "{stdout}");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            g.starts_with(w.as_str()) && g.ends_with(&format!("({at})")),
            "{g}"
        );
    }
}

pub(crate) fn report_json_jq(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let records = jq_or_parse(ctx, example);
    // jq 1.6 reads numbers as doubles: `time_unix_ns` (about 1.8e18) comes out rounded to
    // 128 ns (docs/json.md), every other field as tracer wrote it.
    let exact = |mut records: Vec<serde_json::Value>| {
        records.iter_mut().for_each(|r| {
            r.as_object_mut().unwrap().remove("time_unix_ns");
        });
        records
    };
    assert_eq!(exact(records.clone()), exact(report_json(ctx, "t.tracer")));
    let from = |prefix: &str| {
        (records.iter())
            .filter(|r| r["type"] == "event" && r["probe"].as_str().unwrap().starts_with(prefix))
            .count()
    };
    assert_eq!(from("watch:"), 6);
    assert_eq!(from("uprobe:"), 6);
}

pub(crate) fn report_perfetto(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("wrote t.json (open it in https://ui.perfetto.dev"),
        "{stderr}"
    );
    // Opening it in ui.perfetto.dev is left to a person: the file's trace-event shape is checked.
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ctx.path("t.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let named = |name: &str| events.iter().filter(|e| e["name"] == name).count();
    assert_eq!(named("watch:counter"), 6);
    assert!(named("task-clock") >= 10);
    assert!(events
        .iter()
        .all(|e| e["ph"].is_string() && e["pid"].is_number()));
}

/// CPUs 0 and 1 are online (./tl pins its threads to them).
pub(crate) fn two_cpus(what: &str) -> bool {
    let cpus = tracer::perf::cpus::online().expect("online CPUs");
    if cpus.len() < 2 || cpus[..2] != [0, 1] {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {what}: ./tl pins threads to CPUs 0 and 1; online CPUs are {cpus:?}"
        );
        return false;
    }
    true
}

/// Runs docs/record.md's recording of `./tl 3` (into t.tracer) and checks what it prints;
/// returns the (main, worker) thread ids, or `None` where it cannot run.
pub(crate) fn record_timeline(ctx: &Ctx) -> Option<(u64, u64)> {
    let what = "example docs record ./tl";
    if !has(Feature::UprobePmu, what) || !has(Feature::Breakpoints, what) || !two_cpus(what) {
        return None;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(DOCS_RECORD_TL, &[])));
    assert_shown(DOCS_RECORD_TL, &stdout, &stderr, &[]);
    // ./tl's own output (tracer's stdout, as the file is named): its threads' ids.
    let tid = |who: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(who)?.parse().ok())
            .unwrap_or_else(|| panic!("no '{who}' line:\n{stdout}"))
    };
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    let (main, worker) = (tid("main "), tid("worker "));
    let count = |source: &str| -> u64 {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("  {source} ")))
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_else(|| panic!("no {source} row:\n{stderr}"))
            .parse()
            .unwrap()
    };
    // Three rounds: a write, a call and its return, a getppid each.
    for source in [
        "uprobe:./tl:timeline_step",
        "uretprobe:./tl:timeline_step",
        "syscalls:sys_enter_getppid",
        "watch:timeline_counter",
    ] {
        assert_eq!(count(source), 3, "{source}\n{stderr}");
    }
    // 4 fresh pages a round, besides the process's start-up; the worker waits for the main
    // thread each round: switched out and back in.
    assert!(count("page-faults") >= 12, "{stderr}");
    assert!(count("context switches") >= 6, "{stderr}");
    // The worker's fork and both threads' exits (the names written at the start are not
    // counted here; `tracer report` counts them as task:comm).
    assert_eq!(count("comm/fork/exit"), 3, "{stderr}");
    assert!(
        stderr.contains(" written in ") && stderr.contains(", command exited with status 0\n"),
        "{stderr}"
    );
    Some((main, worker))
}

/// docs/record.md's sampled-stacks example.
pub(crate) const DOCS_RECORD_STACKS: &str =
    "tracer record -o s.tracer -e cpu-clock -F 999 -g -- ./spin";

/// Records ./spin as docs/record.md does and checks what it shows; returns the report's JSON.
pub(crate) fn record_stacks(ctx: &Ctx) -> Vec<serde_json::Value> {
    let (stdout, stderr) = ok(&ctx.run(&words(DOCS_RECORD_STACKS, &[])));
    assert_shown(DOCS_RECORD_STACKS, &stdout, &stderr, &[]);
    let records = report_json(ctx, "s.tracer");
    let samples: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["type"] == "sample").collect();
    assert!(!samples.is_empty(), "{stderr}");
    // The command, named from the start; every sample taken in the loop has its chain.
    assert!(samples.iter().all(|s| s["comm"] == "spin"), "{records:?}");
    let in_loop: Vec<&&serde_json::Value> = (samples.iter())
        .filter(|s| s["args"]["ip"].as_str().unwrap().starts_with("spin_inner+"))
        .collect();
    assert!(!in_loop.is_empty(), "{records:?}");
    for sample in in_loop {
        let symbols: Vec<&str> = (sample["stack"].as_array().unwrap().iter())
            .filter(|f| f["space"] == "user")
            .map(|f| f["symbol"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(
            symbols[..3],
            ["spin_inner", "spin_outer", "main"],
            "{sample}"
        );
    }
    records
}

pub(crate) fn docs_record_stacks(ctx: &Ctx, example: &str) {
    assert_eq!(example, DOCS_RECORD_STACKS);
    record_stacks(ctx);
}

/// `tracer report s.tracer` as docs/record.md shows it.
pub(crate) fn docs_report_stacks(ctx: &Ctx, example: &str) {
    let records = record_stacks(ctx);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // One line per record, and one per frame under each sample.
    let frames: usize = (records.iter())
        .map(|r| r["stack"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(
        stdout.lines().count(),
        1 + records.len() + frames,
        "{stdout}"
    );
}

pub(crate) fn docs_record_timeline(ctx: &Ctx, example: &str) {
    assert_eq!(example, DOCS_RECORD_TL);
    record_timeline(ctx);
}

/// `tracer report t.tracer` as docs/record.md shows it: the recording of `./tl 3`.
pub(crate) fn docs_report_timeline(ctx: &Ctx, example: &str) {
    let Some((main, worker)) = record_timeline(ctx) else {
        return;
    };
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "TIME(s)    CPU PID/TID         COMM             SOURCE ARGS",
        "{stdout}"
    );
    // (CPU, tid, source, args) of each record.
    let items: Vec<(u64, u64, &str, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[3], "tl", "{l}");
            let tid = f[2].split_once('/').unwrap().1.parse().unwrap();
            (f[1].parse().unwrap(), tid, f[4], f[5..].join(" "))
        })
        .collect();
    assert_eq!(
        (items[0].2, items[0].3.as_str()),
        ("task:comm", "comm=\"tl\"")
    );
    // Probe, watch and tracepoint records in program order, each on its thread's CPU.
    let at = format!(
        "({})",
        source_line("tests/workloads/timeline.c", "timeline_counter = i;")
    );
    let got: Vec<String> = items
        .iter()
        .filter(|i| !i.2.starts_with("task:") && !i.2.starts_with("sched:") && i.2 != "page-faults")
        .map(|(cpu, tid, source, args)| format!("{cpu} {tid} {source} {args}").trim().to_string())
        .collect();
    let want: Vec<String> = (1..=3)
        .flat_map(|k| {
            [
                format!(
                    "0 {main} watch:timeline_counter old={} new={k} at=main+0x",
                    k - 1
                ),
                format!("1 {worker} uprobe:./tl:timeline_step round={k}"),
                format!("1 {worker} uretprobe:./tl:timeline_step ret={}", 2 * k),
                format!("0 {main} syscalls:sys_enter_getppid"),
            ]
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{stdout}");
    for (g, w) in got.iter().zip(&want) {
        let same = if w.contains(" watch:") {
            g.starts_with(w.as_str()) && g.ends_with(&at)
        } else {
            g == w
        };
        assert!(same, "{g}, wanted {w}");
    }
    // Between a step's return and the main thread's getppid: its 4 page faults, in order.
    let mut faults = Vec::new();
    let mut counting: Option<u32> = None;
    for (_, tid, source, _) in &items {
        match *source {
            "uretprobe:./tl:timeline_step" => counting = Some(0),
            "page-faults" if *tid == main => {
                if let Some(n) = counting.as_mut() {
                    *n += 1;
                }
            }
            "syscalls:sys_enter_getppid" => faults.push(counting.take().expect("a return first")),
            _ => {}
        }
    }
    assert_eq!(faults, [4, 4, 4], "{stdout}");
    assert!(
        stderr.contains(&format!("\n{} records shown\n", items.len())),
        "{stderr}"
    );
    // Three rounds of a watch hit, an entry, a return and a getppid: 12 BPF events.
    assert!(
        stderr.contains("\nprobe/watch events: 12 produced, 12 recorded, 0 lost (CPU 0: 0, CPU 1: 0)\nsample/scheduler records: 0 lost (CPU 0: 0, CPU 1: 0); 0 late (out of order)"),
        "{stderr}"
    );
}
