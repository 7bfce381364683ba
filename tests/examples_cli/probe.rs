//! The examples of `tracer probe`: its help, the README and docs/probe.md.

use super::*;

/// The opens of `cat /etc/hostname`, as README shows them.
pub(crate) fn check_openat_cat(stdout: &str, stderr: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "TIME(s)    CPU PID/TID         COMM             PROBE ARGS",
        "{stdout}"
    );
    let events = lines_with(stdout, " syscalls:sys_enter_openat dfd=");
    let hostname = lines_with(stdout, "filename=\"/etc/hostname\"");
    assert_eq!(hostname.len(), 1, "{stdout}");
    assert!(hostname[0].contains(" cat "), "{stdout}");
    assert!(hostname[0].ends_with("dfd=-100 filename=\"/etc/hostname\" flags=0x0 mode=0"));
    // cat's own output passes through.
    let name = std::fs::read_to_string("/etc/hostname").unwrap();
    assert!(lines.contains(&name.trim()), "{stdout}");
    let n = events.len();
    assert!(
        stderr.contains(&format!("{n} events in ")),
        "{n} events printed\n{stderr}"
    );
    assert!(
        stderr.contains(", command exited with status 0; 0 lost"),
        "{stderr}"
    );
    let row = lines_with(stderr, "syscalls:sys_enter_openat ");
    let row: Vec<&str> = row.last().unwrap().split_whitespace().collect();
    assert_eq!(
        row[1..],
        [n.to_string(), n.to_string(), "0".to_string()],
        "{stderr}"
    );
}

pub(crate) fn probe_openat_cat(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_openat_cat(&stdout, &stderr);
    // README and docs/probe.md show it run on a machine named `vm`: cat's own line, whose
    // place among the events varies (check_openat_cat finds this machine's name).
    assert_shown(example, &stdout, &stderr, &["vm"]);
}

pub(crate) fn probe_pid_json(ctx: &Ctx, example: &str) {
    const OPENS: u64 = 23;
    let mut work = Workload::batched(OPENS, None, &["open", &OPENS.to_string(), "/etc/hostname"]);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    // `-p` runs until Ctrl-C, also after the process has exited.
    let (stdout, stderr) = running.interrupted();
    let events = json_lines(stdout.as_bytes());
    assert_eq!(events.len() as u64, OPENS, "{stdout}\n{stderr}");
    for e in &events {
        assert_eq!(e["probe"], "syscalls:sys_enter_openat", "{e}");
        assert_eq!(e["pid"].to_string(), pid, "{e}");
        assert_eq!(e["args"]["filename"], "/etc/hostname", "{e}");
    }
}

pub(crate) fn probe_bash_readline(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe bash readline") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    // An interactive bash reads its two lines with readline; `script` gives it a terminal.
    let mut script = Command::new("script")
        .args(["-qc", "bash --norc --noprofile -i", "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run script (bsdutils) for an interactive bash");
    script
        .stdin
        .take()
        .unwrap()
        .write_all(b"true\nexit\n")
        .unwrap();
    assert!(script.wait().unwrap().success());
    let (stdout, stderr) = running.interrupted();
    let entries = lines_with(&stdout, " uprobe:bash:readline ");
    let returns = lines_with(&stdout, " uretprobe:bash:readline ret=");
    // Other interactive shells may read lines too: at least ours, in pairs.
    assert!(entries.len() >= 2, "{stdout}\n{stderr}");
    assert_eq!(entries.len(), returns.len(), "{stdout}");
    assert!(entries.iter().all(|l| l.contains(" bash ")), "{stdout}");
    // The prompt read as a string, and the two lines typed, in order (bash has no DWARF:
    // `str()` says they are strings).
    assert!(entries.iter().all(|l| l.contains(" arg0=\"")), "{stdout}");
    let typed: Vec<&str> = (returns.iter())
        .filter_map(|l| l.split_once(" ret=").map(|(_, r)| r))
        .collect();
    assert!(
        typed.windows(2).any(|w| w == [r#""true""#, r#""exit""#]),
        "{stdout}"
    );
}

/// The frames printed under a hit: `        FUNC+0xOFF (prog.c:N)`.
pub(crate) fn frames_after<'a>(lines: &[&'a str], at: usize) -> Vec<&'a str> {
    // Frames are indented 8 and have no column gaps (a histogram's header has).
    lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with("        ") && !l.trim().contains("  "))
        .map(|l| l.trim())
        .collect()
}

pub(crate) fn probe_user_stacks(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe -s user") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./prog", &[]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" uprobe:./prog:handle "))
        .collect();
    assert_eq!(hits.len(), 5, "{stdout}");
    for (n, &i) in hits.iter().enumerate() {
        assert!(
            lines[i].contains(&format!(" count={} ", n + 1)),
            "{}",
            lines[i]
        );
        let frames = frames_after(&lines, i);
        assert_eq!(
            frames[0],
            format!("handle+0x0 ({})", prog_line("long handle("))
        );
        assert!(frames[1].starts_with("work+0x"), "{frames:?}");
        assert!(frames[1].ends_with(&format!("({})", prog_line("sum += handle("))));
        assert!(frames[2].starts_with("main+0x"), "{frames:?}");
    }
    assert!(
        stderr.contains("5 events in ") && stderr.contains("after 5 events (-c)"),
        "{stderr}"
    );
}

/// docs/tools.md's stackcount: prog's 6 calls of libc's getenv, each from work, counted by
/// process and user stack: one row of 6 under the stack, innermost first.
pub(crate) fn probe_stackcount(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example stackcount") || !has(Feature::Bpf, "example stackcount") {
        return;
    }
    let out = ctx.command(&words(example, &[])).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let columns = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(columns(lines[0]), ["COMM", "COUNT"], "{stdout}");
    assert_eq!(columns(lines[1]), ["prog", "6"], "{stdout}");
    let frames = frames_after(&lines, 1);
    assert!(frames[0].starts_with("getenv+0x0 ("), "{stdout}");
    assert!(frames[1].starts_with("work+0x"), "{stdout}");
    let call = format!("({})", prog_line("sum += getenv("));
    assert!(frames[1].ends_with(&call), "{stdout}");
    assert!(frames[2].starts_with("main+0x"), "{stdout}");
    assert!(stderr.contains("6 hits counted in the kernel"), "{stderr}");
}

/// docs/tools.md's threadsnoop: testprog's `counter` starts three threads, each through
/// pthread_create with Rust's std `thread_start` as the start routine, named.
pub(crate) fn probe_threadsnoop(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example threadsnoop") || !has(Feature::Bpf, "example threadsnoop")
    {
        return;
    }
    let out = ctx.command(&words(example, &[])).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let starts: Vec<&str> = (stdout.lines())
        .filter_map(|l| l.split_once(" uprobe:libc.so.6:pthread_create arg2="))
        .map(|(_, name)| name)
        .collect();
    assert_eq!(starts.len(), 3, "{stdout}");
    assert!(
        starts.iter().all(|name| name.ends_with("::thread_start")),
        "{stdout}"
    );
}

pub(crate) fn readme_uprobe_args(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe uprobe args") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./prog", &[]);
    let (stdout, _) = running.interrupted();
    let args: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_once(" uprobe:./prog:handle ").map(|(_, a)| a))
        .collect();
    let want: Vec<String> = (1..=6)
        .map(|i| {
            let odd = if i % 2 == 1 { "true" } else { "false" };
            format!("count={i} name=\"chain\" odd={odd} shade=GREEN")
        })
        .collect();
    // README's words: `count=1 name="chain" odd=true shade=GREEN`.
    assert_eq!(args, want, "{stdout}");
}

pub(crate) fn probe_count_by_comm(ctx: &Ctx, example: &str) {
    // System-wide: the workload runs under a name of its own, which no other process has (a
    // tracer-testprog of a test run beside this one would share its row).
    let workload = ctx.path("ex-count-comm");
    std::fs::copy(testprog(), &workload).unwrap();
    let running = ctx.start(&words(example, &[]));
    ctx.workload(&workload.display().to_string(), &["getppid", "1000"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    // (The COUNT column widens with the largest count, another process's maybe.)
    assert_eq!(
        stdout
            .lines()
            .next()
            .map(|h| h.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["COMM", "COUNT"]),
        "{stdout}"
    );
    let row = lines_with(&stdout, "ex-count-comm ");
    assert_eq!(row.len(), 1, "{stdout}");
    let count: u64 = row[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    // Its 1000 getppid calls and its start-up's syscalls.
    assert!((1000..1200).contains(&count), "{stdout}");
}

pub(crate) fn probe_hist_interval(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let file = ctx.path("four-kib");
    std::fs::write(&file, vec![b'x'; 4096]).unwrap();
    ctx.workload("cat", &[&file.display().to_string()]);
    // Two interval reports (one a second), then Ctrl-C.
    std::thread::sleep(Duration::from_millis(2100));
    running.interrupt();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("--- 1.00 s (interval 1) ---"), "{stdout}");
    assert!(stdout.contains("(interval 2) ---"), "{stdout}");
    // cat's reads: its file in one read of 4096 bytes and the read of 0 at its end.
    let cat = stdout
        .split("comm=cat\n")
        .nth(1)
        .expect("a comm=cat histogram");
    let hist: Vec<&str> = cat
        .lines()
        .take_while(|l| !l.starts_with("count "))
        .collect();
    let bucket = |lo: &str| {
        hist.iter()
            .find(|l| l.split_whitespace().next() == Some(lo))
            .map(|l| {
                l.split(':')
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .unwrap_or(0)
    };
    // `ret` of read is a size: its rows read `4K -> 8K`.
    assert!(bucket("4K") >= 1, "{cat}");
    assert!(bucket("0") >= 1, "{cat}");
}

/// An example the VM tier must run as written (tests/vm_kprobe.rs names it).
pub(crate) fn assert_runs_in_vm(example: &str) {
    let vm = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vm_kprobe.rs"
    ))
    .unwrap();
    assert!(
        vm.contains(&format!("{example:?}")),
        "tests/vm_kprobe.rs must run {example:?} in the VM tier"
    );
}

/// A fentry example: it runs in tests/vm_kprobe.rs where the kernel permits tracer's
/// trampoline programs; here (where it does not) it is refused with the reason, exit 1.
pub(crate) fn needs_fentry(ctx: &Ctx, example: &str) {
    assert_runs_in_vm(example);
    if available(Feature::Fentry) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` runs in tests/vm_kprobe.rs (fentry is available here too)"
        );
        return;
    }
    let out = ctx.command(&words(example, &[])).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot attach fentry:do_sys_openat2 through fentry/fexit: "),
        "{stderr}"
    );
}

pub(crate) fn needs_kprobes(ctx: &Ctx, example: &str) {
    assert_runs_in_vm(example);
    if available(Feature::KprobePmu) || available(Feature::KprobeEvents) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` runs in tests/vm_kprobe.rs (kprobes are available here too)"
        );
        return;
    }
    // No kprobes here: the documented error, its alternatives, exit 1.
    let mut cmd = ctx.command(&words(example, &[]));
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // A glob's expansion is said first (`note: 'kprobe:vfs_*' matches 82 probes`).
    let lines: Vec<&str> = (stderr.lines())
        .filter(|l| !l.starts_with("note: '"))
        .collect();
    assert!(
        lines[0].starts_with("error: cannot probe kernel function '"),
        "{stderr}"
    );
    assert!(lines[0].contains("this kernel has no kprobes"), "{stderr}");
    // The syscalls near the function's name, where its name has any (not cap_capable).
    let syscalls = "hint: trace the syscalls that lead there instead: tracer probe syscalls:";
    let last = match lines.len() {
        3 if lines[1].starts_with(syscalls) => lines[2],
        2 => lines[1],
        _ => panic!("{stderr}"),
    };
    assert_eq!(
        last,
        "hint: user-space functions (uprobe:PATH:SYMBOL) and tracepoints (CAT:NAME) work here; see `tracer features`"
    );
    let _ = writeln!(
        std::io::stderr(),
        "note: `{example}` needs kprobes: checked for its error here, run in the VM tier"
    );
}

pub(crate) fn readme_no_kprobes(ctx: &Ctx, example: &str) {
    if available(Feature::KprobePmu) || available(Feature::KprobeEvents) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` shows the no-kprobes error: kprobes exist here"
        );
        return;
    }
    // README and docs/probe.md show the whole message: it must be what this kernel prints.
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let places = shown_places(example);
    assert_eq!(
        places.len(),
        2,
        "README.md and docs/probe.md show {example}"
    );
    for place in places {
        assert_eq!(
            place.output.len(),
            3,
            "{}: the output of {example}",
            place.at
        );
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            place.output,
            "{}",
            place.at
        );
    }
}

/// What tracer prints after `probe` on the lines of `comm`'s hits of it.
pub(crate) fn hit_args<'a>(stdout: &'a str, comm: &str, probe: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| l.contains(&format!(" {comm} ")))
        .filter_map(|l| l.split_once(&format!(" {probe} ")).map(|(_, a)| a))
        .collect()
}

pub(crate) fn docs_probe_call_json(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe -f json") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // tracer_testprog_target(a, b) is called with (i, 2 * i) and returns 3 * i, i = 0, 1, 2;
    // its parameters are named and typed from testprog's DWARF.
    let events = json_lines(stdout.as_bytes());
    let got: Vec<(&str, &serde_json::Value, &serde_json::Value)> = events
        .iter()
        .map(|e| (e["probe"].as_str().unwrap(), &e["args"], &e["ret"]))
        .collect();
    let want: Vec<(&str, serde_json::Value, serde_json::Value)> = (0..3u64)
        .flat_map(|i| {
            [
                (
                    "uprobe:./tracer-testprog:tracer_testprog_target",
                    serde_json::json!({"a": i, "b": 2 * i}),
                    serde_json::Value::Null,
                ),
                (
                    "uretprobe:./tracer-testprog:tracer_testprog_target",
                    serde_json::json!({}),
                    serde_json::json!(3 * i),
                ),
            ]
        })
        .collect();
    let want: Vec<(&str, &serde_json::Value, &serde_json::Value)> =
        want.iter().map(|(p, a, r)| (*p, a, r)).collect();
    assert_eq!(got, want, "{stdout}");
    for e in &events {
        assert_eq!(e["comm"], "tracer-testprog", "{e}");
        assert_eq!(
            (&e["pid"], &e["tid"]),
            (&events[0]["pid"], &events[0]["pid"]),
            "{e}"
        );
    }
    assert!(
        stderr.contains("6 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn docs_probe_execve_argv(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe execve") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let lines = lines_with(&stdout, " syscalls:sys_enter_execve ");
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(
        lines[0].contains(r#" filename="/bin/true" argv=["/bin/true", "one", "two"] envp=0x"#),
        "{stdout}"
    );
}

pub(crate) fn docs_probe_count_by_filename(ctx: &Ctx, example: &str) {
    if !has(
        Feature::Tracepoints,
        "example docs probe --count-by filename",
    ) {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The row of the 3 opens (the loader's own opens are rows of their own, in any order).
    let rows: Vec<Vec<&str>> = (stdout.lines().skip(1))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.iter().any(|r| *r == ["\"/etc/hostname\"", "3"]),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout
            .lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["FILENAME", "COUNT"]),
        "{stdout}"
    );
}

pub(crate) fn docs_probe_strlen_json(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --strlen") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // cat opens /etc/hostname once; the loader's opens do not match. (cat prints the
    // hostname to the same stdout.)
    let json: String = (stdout.lines())
        .filter(|l| l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    let events = json_lines(json.as_bytes());
    assert_eq!(events.len(), 1, "{stdout}");
    assert_eq!(
        events[0]["args"],
        serde_json::json!({"filename": "/etc/hos"})
    );
    assert_eq!(events[0]["truncated"], serde_json::json!(["filename"]));
}

pub(crate) fn docs_probe_chain_typed(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe chain") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // chain_target(count=i, "chain", &{i, -i, "b-point"}, i % 2, GREEN) returns 3 * i. The first
    // call's string is in read-only data the process has not touched yet: a pointer, as
    // docs/probe.md explains.
    let calls = hit_args(&stdout, "chain", "uprobe:./chain:chain_target");
    let want = [
        ("count=1", "name=0x", "odd=true"),
        ("count=2", "name=\"chain\"", "odd=false"),
    ];
    assert_eq!(calls.len(), want.len(), "{stdout}\n{stderr}");
    for (args, (count, name, odd)) in calls.iter().zip(want) {
        let w: Vec<&str> = args.split(' ').collect();
        assert_eq!(w.len(), 5, "{args}");
        assert!(
            w[0] == count && w[1].starts_with(name) && w[2].starts_with("where=0x7ff"),
            "{args}"
        );
        assert_eq!(w[3..], [odd, "shade=GREEN"], "{args}");
    }
    assert_eq!(
        hit_args(&stdout, "chain", "uretprobe:./chain:chain_target"),
        ["ret=3", "ret=6"],
        "{stdout}"
    );
    // Each call's return right after it.
    let kinds: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|p| p.ends_with(":./chain:chain_target"))
        .collect();
    assert_eq!(
        kinds,
        [
            "uprobe:./chain:chain_target",
            "uretprobe:./chain:chain_target"
        ]
        .repeat(2)
    );
    assert!(
        stderr.contains("4 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn docs_probe_chain_members(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe chain members") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // where = &{i, -i, "b-point"}; the first call's label is not readable yet (a pointer).
    let calls = hit_args(&stdout, "chain", "uprobe:./chain:chain_target");
    assert_eq!(calls.len(), 2, "{stdout}\n{stderr}");
    let first: Vec<&str> = calls[0].split(' ').collect();
    assert!(
        first.len() == 3
            && first[0] == "where->y=-1"
            && first[1].starts_with("where->label=0x")
            && first[2] == "count=1",
        "{}",
        calls[0]
    );
    assert_eq!(calls[1], "where->y=-2 where->label=\"b-point\" count=2");
    assert!(
        stderr.contains("2 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn docs_probe_count_by_flags(ctx: &Ctx, example: &str) {
    // System-wide for 2 s: 23 opens of /etc/hostname with O_RDONLY (flags 0) after the banner.
    let running = ctx.start(&words(example, &[]));
    opens_23(ctx);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["FLAGS", "COUNT"], "{stdout}");
    let counts: Vec<(&str, u64)> = rows[1..]
        .iter()
        .map(|r| {
            assert_eq!(r.len(), 2, "{stdout}");
            (r[0], r[1].parse().unwrap())
        })
        .collect();
    // Other processes open files read-only too: ours are 23 of them at least.
    let read_only = counts.iter().find(|(f, _)| *f == "0x0").map_or(0, |c| c.1);
    assert!(read_only >= 23, "{stdout}");
    assert!(
        counts.windows(2).all(|w| w[0].1 >= w[1].1),
        "largest first:\n{stdout}"
    );
    // Every hit is in a row.
    let total: u64 = counts.iter().map(|c| c.1).sum();
    // The run's length is measured to its end: 2.00 s, or 2.01 on a loaded machine.
    let counted = format!("\n{total} hits counted in the kernel in 2.0");
    assert!(
        stderr.contains(&counted) && stderr.contains(" s, after 2.0 s (-d); 0 not counted"),
        "{total}\n{stderr}"
    );
}

pub(crate) fn docs_probe_stack_pid(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe -s -p") {
        return;
    }
    // `4422` becomes the pid of a started ./tracer-chain making one call; it stays alive until
    // tracer has printed (its stack is symbolized from the process's mappings).
    let mut cmd = Command::new(ctx.path("tracer-chain"));
    cmd.arg("1").current_dir(ctx.dir.path());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("4422", &pid)]));
    work.run_batch();
    // Ends by itself after the one event (-c 1).
    let (status, stdout, stderr) = running.finish();
    work.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_shown(example, &stdout, &stderr, &[]);
    let lines: Vec<&str> = stdout.lines().collect();
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" uprobe:./tracer-chain:chain_b "))
        .collect();
    assert_eq!(hits.len(), 1, "{stdout}");
    let hit = lines[hits[0]];
    assert!(
        hit.contains(&format!(" {pid}/{pid} "))
            && hit.ends_with(" tracer-chain     uprobe:./tracer-chain:chain_b i=1"),
        "{hit}"
    );
    let line = |needle| format!("(chain.c:{})", common::chain_line(needle));
    let frames = frames_after(&lines, hits[0]);
    assert_eq!(frames.len(), 4, "{stdout}");
    assert_eq!(frames[0], format!("chain_b+0x0 {}", line("long chain_b(")));
    assert!(
        frames[1].starts_with("chain_a+0x") && frames[1].ends_with(&line("return chain_b(i)")),
        "{frames:?}"
    );
    assert!(
        frames[2].starts_with("main+0x") && frames[2].ends_with(&line("sum += chain_a(")),
        "{frames:?}"
    );
    // libc's __libc_start_call_main, a local symbol the stripped libc does not carry: named
    // from libc6-dbg's debug file (found by build-id), which `cargo xtask test` installs.
    assert!(
        frames[3].starts_with("__libc_start_call_main+0x")
            && frames[3].ends_with(" (libc_start_call_main.h:58)"),
        "{frames:?}"
    );
    assert!(
        stderr.contains("1 events in ") && stderr.contains("after 1 events (-c); 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn docs_probe_count_by_comm_probe(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // 1000 getppid calls and no getpgid: a key without hits has no row.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["COMM", "PROBE", "COUNT"],
            ["tracer-testprog", "syscalls:sys_enter_getppid", "1000"]
        ],
        "{stdout}"
    );
    assert!(
        stderr.contains("1000 hits counted in the kernel in ")
            && stderr.contains("command exited with status 0; 0 not counted"),
        "{stderr}"
    );
}

pub(crate) fn docs_probe_hist_ret(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --hist ret") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // The returns are 3 * i for i = 0..20: 0 | (no 1) | 3 | 6 | 9 12 15 | 18 .. 30 | 33 .. 57.
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 20, "{stdout}");
    assert!(
        stdout.contains("\n                           0  :        1  |*****")
            && stdout.contains("\n                           1  :        0  |     "),
        "0 and 1 are rows of their own: {stdout}"
    );
    let want = [
        ("2 -> 3", 1),
        ("4 -> 7", 1),
        ("8 -> 15", 3),
        ("16 -> 31", 5),
        ("32 -> 63", 9),
    ];
    assert_eq!(rows, want.map(|(r, c)| (r.to_string(), c)), "{stdout}");
    assert!(stdout.contains("\ncount 20, sum 570, avg 28\n"), "{stdout}");
    assert!(
        stderr.contains("20 hits counted in the kernel in ")
            && stderr.contains("command exited with status 0; 0 not counted"),
        "{stderr}"
    );
}

/// (HITS, PRINTED, LOST, FILTERED) of `probe`'s summary row.
pub(crate) fn filter_row(stderr: &str, probe: &str) -> Vec<u64> {
    let row = lines_with(stderr, probe)
        .into_iter()
        .find(|l| l.starts_with(probe))
        .unwrap_or_else(|| panic!("no row for {probe}:\n{stderr}"));
    (row.split_whitespace().skip(1))
        .map(|n| n.parse().unwrap())
        .collect()
}

pub(crate) fn probe_filter_failed_opens(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example probe --filter") {
        return;
    }
    let out = ctx.run(&words(example, &[]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // cat's own status: it could not open /nonexistent.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let events = lines_with(&stdout, " syscalls:sys_exit_openat ");
    // Its loader's and locale's opens succeed (or, under cargo's LD_LIBRARY_PATH, some fail):
    // every printed one failed, /nonexistent's with ENOENT, and the rest were refused.
    assert!(!events.is_empty(), "{stdout}");
    assert!(events.iter().all(|l| l.ends_with(" ret=-2")), "{stdout}");
    let row = filter_row(&stderr, "syscalls:sys_exit_openat");
    assert_eq!(row[1], events.len() as u64, "{stderr}");
    assert_eq!(row[0], row[1] + row[2] + row[3], "{stderr}");
    assert!(row[3] > 0, "{stderr}");
}

pub(crate) fn docs_probe_filter_ret(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --filter ret") {
        return;
    }
    // Without cargo's LD_LIBRARY_PATH, as a user runs it: the loader then makes the opens the
    // page counts.
    let mut cmd = ctx.command(&words(example, &[]));
    let (stdout, stderr) = ok(&cmd.env_remove("LD_LIBRARY_PATH").output().unwrap());
    assert_shown(example, &stdout, &stderr, &[]);
    assert_eq!(lines_with(&stdout, " ret=-2").len(), 3, "{stdout}");
    assert_eq!(
        filter_row(&stderr, "syscalls:sys_exit_openat"),
        [7, 3, 0, 4]
    );
}

pub(crate) fn docs_probe_filter_uprobe(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --filter uprobe") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let args: Vec<&str> = (stdout.lines().skip(1))
        .map(|l| l.split_once("tracer_testprog_target ").unwrap().1)
        .collect();
    assert_eq!(args, ["a=5 b=10", "a=98 b=196", "a=99 b=198"], "{stdout}");
    assert_eq!(
        filter_row(&stderr, "uprobe:./tracer-testprog:tracer_testprog_target"),
        [100, 3, 0, 97]
    );
}

pub(crate) fn docs_probe_filter_typo(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --filter typo") {
        return;
    }
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_shown(example, "", &stderr, &[]);
    assert_eq!(stderr.lines().count(), 6, "{stderr}");
}

pub(crate) fn docs_probe_every_syscall(ctx: &Ctx, example: &str) {
    if !has(Feature::RawTracepoints, "example docs probe every syscall") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The count of syscall entry tracepoints is this kernel's: masked as a number.
    assert_shown(example, &stdout, &stderr, &[]);
    assert_eq!(
        lines_with(&stdout, "syscalls:sys_enter_getppid "),
        ["syscalls:sys_enter_getppid             1000"],
        "{stdout}"
    );
}

/// A bpftrace spelling: refused as a usage error, with exactly the page's error and hint.
pub(crate) fn docs_probe_bpftrace_pointer(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 2, "an error and its hint: {stderr}");
    assert!(
        stderr.starts_with("error: '") && stderr.contains("\nhint: "),
        "{stderr}"
    );
    assert_shown(example, "", &stderr, &[]);
}

/// `-o FILE`: the events go to the file (stdout has none), the summary to stderr.
pub(crate) fn docs_probe_output_file(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe -o FILE") {
        return;
    }
    let file = ctx.path("hits.json");
    let _ = std::fs::remove_file(&file);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_eq!(stdout, "", "the data went to the file");
    assert_shown(example, &stdout, &stderr, &[]);
    let written = std::fs::read_to_string(&file).unwrap();
    let events: Vec<serde_json::Value> = (written.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{written}");
    assert!(
        (events.iter())
            .all(|e| e["probe"] == "syscalls:sys_enter_getppid" && e["comm"] == "tracer-testprog"),
        "{written}"
    );
}

pub(crate) fn docs_probe_offline_cpu(ctx: &Ctx, example: &str) {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if tracer::perf::cpus::online().is_ok_and(|cpus| cpus.contains(&63)) {
        let _ = writeln!(
            std::io::stderr(),
            "note: CPU 63 is online here: {example} not checked"
        );
        return;
    }
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr,
        format!("error: -C 63: CPU 63 is not online: nothing would ever be seen there\nhint: CPUs online here: {} (/sys/devices/system/cpu/online)\n", online.trim())
    );
    assert_shown(example, "", &stderr, &[]);
}

pub(crate) fn docs_probe_comm_note(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --comm note") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The page shows cat's own count on this machine; the count depends on its libraries.
    let count = lines_with(&stdout, "cat ");
    assert_eq!(count.len(), 1, "{stdout}");
    // cat's own output (the host name) comes first, on the same stdout.
    assert!(stdout.contains("\nCOMM  COUNT\ncat "), "{stdout}");
    assert!(
        stderr.starts_with("note: --comm cat is not the name of `sh -c cat /etc/hostname` (its task is named sh): only its children (or itself after a rename) named cat will count\n"),
        "{stderr}"
    );
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap();
    assert_shown(example, &stdout, &stderr, &[hostname.trim()]);
}

pub(crate) fn docs_probe_hist_linear(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --linear") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // arg0 is 0..99: ten in each of the five buckets, fifty from 50 on.
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 100, "{stdout}");
    let want = ["0 -> 9", "10 -> 19", "20 -> 29", "30 -> 39", "40 -> 49"];
    assert_eq!(rows, want.map(|r| (r.to_string(), 10)), "{stdout}");
    assert!(
        stdout.contains("\n                       >= 50  :       50  |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ncount 100, sum 4950, avg 49\n"),
        "{stdout}"
    );
}

pub(crate) fn docs_probe_hist_bytes(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --hist bytes") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let (_, rows) = histogram(&stdout);
    assert!(
        rows.contains(&("64K -> 128K".to_string(), 5)),
        "dd's five reads of 64 KiB: {stdout}"
    );
}

/// docs/tools.md's bitesize: dd's eight direct 4 KiB writes are eight requests of 8 sectors,
/// in the `8` row of dd's histogram (any other process's requests in their own).
pub(crate) fn probe_block_sizes(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    ctx.direct_writes("bite-blocks");
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let dd = (stdout.split("comm=dd\n").nth(1)).unwrap_or_else(|| panic!("{stdout}\n{stderr}"));
    let eight = (dd.lines())
        .take_while(|l| !l.starts_with("count "))
        .find(|l| l.split_whitespace().next() == Some("8"))
        .and_then(|l| {
            l.split(':')
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    assert!(eight >= 8, "{dd}");
}
