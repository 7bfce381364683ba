//! The examples of `tracer list` and docs/usdt.md.

use super::*;

pub(crate) fn list_glob(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let fs = tracer::kernel::tracefs::Tracefs::locate().unwrap();
    let want: BTreeSet<String> = std::fs::read_dir(fs.root().join("events/syscalls"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sys_enter_open"))
        .map(|n| format!("tracepoint:syscalls:{n}"))
        .collect();
    let got: BTreeSet<String> = stdout.lines().map(str::to_string).collect();
    assert!(want.contains("tracepoint:syscalls:sys_enter_openat"));
    assert_eq!(got, want);
}

pub(crate) fn list_verbose(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "tracepoint:sched:sched_switch", "{stdout}");
    for field in [
        "char[16] prev_comm",
        "pid_t prev_pid",
        "char[16] next_comm",
        "pid_t next_pid",
    ] {
        assert!(
            lines.contains(&format!("    {field}").as_str()),
            "{field}:\n{stdout}"
        );
    }
}

pub(crate) fn list_binary(ctx: &Ctx, example: &str) {
    assert!(
        Path::new("/usr/bin/bash").exists(),
        "the example lists /usr/bin/bash"
    );
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stdout.lines().any(|l| l == "uprobe:/usr/bin/bash:readline"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with("uprobe:/usr/bin/bash:read")),
        "{stdout}"
    );
}

pub(crate) fn list_usdt_python(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    let python = std::fs::canonicalize("/usr/bin/python3").expect("/usr/bin/python3");
    let data = std::fs::read(&python).expect("read python3");
    let notes = tracer::kernel::usdt::notes(&data, &python).expect("python3's notes");
    if notes.is_empty() {
        // Not Debian's build: the documented refusal.
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("has no USDT probes"),
            "{}",
            text(&out.stderr)
        );
        return;
    }
    let (stdout, _) = ok(&out);
    // Every probe, by name, with Python's documented strings typed.
    let specs: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    let mut names: Vec<String> = notes
        .iter()
        .map(|n| format!("usdt:/usr/bin/python3:{}:{}", n.provider, n.name))
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(specs, names);
    let entry = stdout
        .split("usdt:/usr/bin/python3:python:function__entry\n")
        .nth(1)
        .expect("function__entry listed");
    let args: Vec<&str> = entry.lines().take(2).collect();
    assert!(args[0].starts_with("    char * arg0 ("), "{stdout}");
    assert!(args[1].starts_with("    char * arg1 ("), "{stdout}");
}

/// Runs the example as written and checks that it prints what its page shows.
pub(crate) fn shown_as_documented(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Runs the example and checks that it prints what its page shows, and the workload's own
/// line once: that lands among tracer's lines wherever the shared pipe puts it (the workload
/// flushes it at its exit, tracer prints events as it reads them).
pub(crate) fn shown_with_own_line(ctx: &Ctx, example: &str, own: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let times = stdout.lines().filter(|l| *l == own).count();
    assert_eq!(times, 1, "{own:?} once in:\n{stdout}");
    assert_shown(example, &stdout, &stderr, &[own]);
}

pub(crate) fn usdt_mixed(ctx: &Ctx, example: &str) {
    shown_with_own_line(ctx, example, "guarded 0");
}

pub(crate) fn usdt_guarded(ctx: &Ctx, example: &str) {
    // Untraced, the guarded code never runs; traced, it runs each time.
    let alone = Command::new(ctx.path("usdt")).arg("3").output().unwrap();
    assert_eq!(text(&alone.stdout), "guarded 0\n");
    shown_with_own_line(ctx, example, "guarded 3");
}

pub(crate) fn usdt_python(ctx: &Ctx, example: &str) {
    let python = std::fs::canonicalize("/usr/bin/python3").expect("/usr/bin/python3");
    let data = std::fs::read(&python).expect("read python3");
    let notes = tracer::kernel::usdt::notes(&data, &python).expect("python3's notes");
    if !notes.iter().any(|n| n.name == "function__entry") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {example}: /usr/bin/python3 has no function__entry probe (not Debian's build)"
        );
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // Python names the script by its absolute path: here, the examples' directory.
    let script = ctx.path("ticks.py").display().to_string();
    let ticks = lines_with(&stdout, "arg1=\"tick\" arg2=2");
    assert_eq!(ticks.len(), 3, "{stdout}");
    assert!(
        ticks.iter().all(|l| l.ends_with(&format!(
            " usdt:/usr/bin/python3:python:function__entry arg0=\"{script}\" arg1=\"tick\" arg2=2"
        ))),
        "{stdout}"
    );
    // The page shows the script in /home/me; the rest as printed.
    let shown = "0.025274   0   23633/23633     python3          usdt:/usr/bin/python3:python:function__entry arg0=\"/home/me/ticks.py\" arg1=\"tick\" arg2=2";
    assert_shown(example, &stdout, &stderr, &[shown]);
}

pub(crate) fn usdt_count_by(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let mut rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("ARG1"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    rows.sort();
    let rows: Vec<String> = rows
        .iter()
        .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows, ["-1 1", "-2 1", "-3 1", "-4 1", "0 1"], "{stdout}");
}

pub(crate) fn readme_list(ctx: &Ctx, _example: &str) {
    // `[PATTERN]` is optional: without one, and with one.
    let (all, _) = ok(&ctx.run(&words("tracer list", &[])));
    assert!(
        all.lines().any(|l| l == "tracepoint:sched:sched_switch"),
        "{all}"
    );
    assert!(all.lines().count() > 100, "{all}");
    let (some, _) = ok(&ctx.run(&words("tracer list sched_switch", &[])));
    assert_eq!(
        some.lines().collect::<Vec<_>>(),
        ["tracepoint:sched:sched_switch"]
    );
}
