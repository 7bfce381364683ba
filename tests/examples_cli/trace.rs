//! The examples of `tracer trace`.

use super::*;

/// `tracer trace`'s call lines (on stderr): those that look like `name(...`.
pub(crate) fn call_lines(stderr: &str) -> Vec<&str> {
    (stderr.lines())
        .filter(|l| {
            l.split('(').next().is_some_and(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
        })
        .collect()
}

pub(crate) fn trace_cat(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // cat's output alone on stdout; the calls on stderr.
    let host = std::fs::read_to_string("/etc/hostname").unwrap();
    assert_eq!(stdout, host, "{stderr}");
    let opened = call_lines(&stderr)
        .into_iter()
        .filter(|l| *l == "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3")
        .count();
    assert_eq!(opened, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "write(1, {:?}, {}) = {}",
            host,
            host.len(),
            host.len()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("+++ exited with 0 +++"), "{stderr}");
}

/// `-P`: cat's six calls on the file (strace's, line for line), each descriptor named; the
/// rest counted as filtered out.
pub(crate) fn trace_one_path(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let host = std::fs::read_to_string("/etc/hostname").unwrap();
    assert_eq!(stdout, host, "{stderr}");
    let size = host.len();
    let calls = call_lines(&stderr);
    let dir = ctx.dir.path().canonicalize().unwrap();
    let first = format!(
        "openat(AT_FDCWD<{}>, \"/etc/hostname\", O_RDONLY) = 3</etc/hostname>",
        dir.display()
    );
    assert_eq!(calls.first().copied(), Some(first.as_str()), "{stderr}");
    assert!(
        calls[1].starts_with("newfstatat(3</etc/hostname>, \"\", {st_mode=S_IFREG"),
        "{stderr}"
    );
    let rest = [
        "fadvise64(3</etc/hostname>, 0, 0, POSIX_FADV_SEQUENTIAL) = 0".to_string(),
        format!("read(3</etc/hostname>, {host:?}, 131072) = {size}"),
        "read(3</etc/hostname>, \"\", 131072) = 0".into(),
        "close(3</etc/hostname>) = 0".into(),
    ];
    assert_eq!(calls[2..], rest, "{stderr}");
    let filtered: u64 = (stderr.split(" lost, ").nth(1))
        .and_then(|t| t.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(filtered > 0, "{stderr}");
}

/// `-k` on Debian's echo (stripped, no frame pointers): its write at exit, through libc's
/// stdio and exit handlers down to echo's `_start`, every frame by its file and offset.
pub(crate) fn trace_stacks(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_eq!(stdout, "hi\n", "{stderr}");
    let lines: Vec<&str> = (stderr.lines())
        .skip_while(|l| *l != "write(1, \"hi\\n\", 3) = 3")
        .skip(1)
        .take_while(|l| l.starts_with(" > "))
        .collect();
    assert!(lines.len() >= 10, "{stderr}");
    assert!(
        lines[0].starts_with(" > /usr/lib/x86_64-linux-gnu/libc.so.6(") && lines[0].ends_with(']'),
        "{stderr}"
    );
    assert!(
        lines.iter().any(|l| l.contains("(_IO_file_write+0x")),
        "{stderr}"
    );
    assert!(lines.iter().any(|l| l.contains("(exit+0x")), "{stderr}");
    assert!(
        lines.last().unwrap().starts_with(" > /usr/bin/echo() [0x"),
        "{stderr}"
    );
}

pub(crate) fn trace_failed(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    // cat's own status passes through.
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let calls = call_lines(&stderr);
    assert!(!calls.is_empty(), "{stderr}");
    assert!(calls.iter().all(|l| l.contains(") = -1 E")), "{stderr}");
    // cat writes its message in three writes (`cat: `, `/nope`, `: No such file...`): a call
    // line printed between two of them follows cat's part on the same terminal line, as under
    // strace (seen once in CI: `/nopeopenat(AT_FDCWD, "/nope", ...`).
    let nope = "openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory)";
    assert!(
        (stderr.lines()).any(|l| l.ends_with(nope) || l.contains(&format!("{nope} <"))),
        "{stderr}"
    );
}

pub(crate) fn trace_all_but_classes(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = call_lines(&stderr);
    assert!(
        calls.iter().any(|l| l.starts_with(
            "openat(AT_FDCWD, \"/etc\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3"
        )),
        "{stderr}"
    );
    // `!` before the set: every call but those of %memory and %signal, as in strace.
    let left_out = ["mmap(", "munmap(", "mprotect(", "brk(", "rt_sigaction("];
    assert!(
        calls
            .iter()
            .all(|l| !left_out.iter().any(|c| l.starts_with(c))),
        "{stderr}"
    );
    assert!(calls.iter().any(|l| l.starts_with("close(")), "{stderr}");
    assert!(
        calls.iter().any(|l| l.starts_with("getdents64(")),
        "{stderr}"
    );
    assert!(stdout.lines().any(|l| l == "hostname"), "{stdout}");
}

pub(crate) fn trace_summary(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("% time     seconds  usecs/call     calls    errors syscall"),
        "{stderr}"
    );
    let row = |name: &str| {
        stderr
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .map(|l| l.split_whitespace().nth(3).unwrap().to_string())
    };
    assert_eq!(row("execve").as_deref(), Some("1"), "{stderr}");
    // Counted at its return, as strace -c counts: exit_group never returns.
    assert_eq!(row("exit_group"), None, "{stderr}");
    assert!(row("total").is_some(), "{stderr}");
    assert!(call_lines(&stderr).is_empty(), "{stderr}");
    assert!(stdout.lines().any(|l| l == "etc"), "{stdout}");
}

pub(crate) fn trace_columns(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let table: Vec<&str> = (stderr.lines())
        .skip_while(|l| !l.starts_with("syscall "))
        .take_while(|l| !l.starts_with("total "))
        .collect();
    assert_eq!(
        table.first(),
        Some(&"syscall              calls    errors"),
        "{stderr}"
    );
    assert_eq!(
        table.get(1),
        Some(&"---------------- --------- ---------"),
        "{stderr}"
    );
    // One row per call, by name, execve's once; the total's calls are the rows' sum.
    let rows: Vec<(&str, u64)> = (table[2..table.len() - 1].iter())
        .map(|l| (&l[..16], l[17..26].trim().parse().unwrap()))
        .map(|(name, calls)| (name.trim_end(), calls))
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "{stderr}");
    assert!(rows.contains(&("execve", 1)), "{stderr}");
    let total = lines_with(&stderr, "total ");
    let sum: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(total[0][17..26].trim(), sum.to_string(), "{stderr}");
    assert!(!stderr.contains("% time"), "{stderr}");
    assert!(stdout.lines().any(|l| l == "etc"), "{stdout}");
}

pub(crate) fn trace_filter(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = call_lines(&stderr);
    assert!(!calls.is_empty(), "{stderr}");
    assert!(
        calls
            .iter()
            .all(|l| l.starts_with("openat(AT_FDCWD, \"/etc/")),
        "{stderr}"
    );
    assert!(
        calls
            .iter()
            .any(|l| l.starts_with("openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3")),
        "{stderr}"
    );
}

pub(crate) fn trace_pid(ctx: &Ctx, example: &str) {
    const OPENS: u64 = 23;
    let mut work = Workload::batched(OPENS, None, &["open", &OPENS.to_string(), "/etc/hostname"]);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let calls = std::fs::read_to_string(ctx.path("calls.txt")).unwrap();
    let opens = calls
        .lines()
        .filter(|l| l.contains("openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY"))
        .count();
    assert_eq!(opens as u64, OPENS, "{calls}");
}

pub(crate) fn trace_json(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = json_lines(
        std::fs::read_to_string(ctx.path("calls.json"))
            .unwrap()
            .as_bytes(),
    );
    assert_eq!(calls[0]["name"], "execve", "{stderr}");
    assert_eq!(calls[0]["ret"], 0);
    assert_eq!(calls[0]["type"], "call");
    assert_eq!(calls[0]["args"]["argv"], serde_json::json!(["true"]));
    let last_call = calls.iter().rev().find(|c| c["type"] == "call").unwrap();
    assert_eq!(last_call["name"], "exit_group");
    assert!(last_call["ret"].is_null());
    let last = calls.last().unwrap();
    assert_eq!(
        (&last["type"], &last["exit_code"]),
        (&"exit".into(), &0.into())
    );
}

/// System-wide: a `cat` the test starts after the banner (not tracer's child) shows its exec
/// and its open of the file, each line naming it, then its exit.
pub(crate) fn trace_all(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload("cat", &["/etc/hostname"]);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let prefix = format!("[pid {pid:>5} cat] ");
    let mine: Vec<&str> = (stderr.lines())
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect();
    let exec = (mine.iter())
        .filter(|l| l.starts_with("execve(\"") && l.ends_with(") = 0"))
        .filter(|l| l.contains("cat\", [\"cat\", \"/etc/hostname\"], 0x"))
        .count();
    assert_eq!(exec, 1, "{stderr}");
    let opens = (mine.iter())
        .filter(|l| **l == "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3")
        .count();
    assert_eq!(opens, 1, "{stderr}");
    assert_eq!(mine.last(), Some(&"+++ exited with 0 +++"), "{stderr}");
}

/// `tracer trace -a ...` while `program ARGS` runs (its command name `comm`): that process's
/// lines, their `[pid N comm] ` head taken off, and tracer's stderr.
fn lines_of_one(
    ctx: &Ctx,
    example: &str,
    (program, args, comm): (&str, &[&str], &str),
) -> (Vec<String>, String) {
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload(program, args);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let prefix = format!("[pid {pid:>5} {comm}] ");
    let mine = (stderr.lines())
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .collect();
    (mine, stderr)
}

/// How many of `lines` are `line`.
fn times(lines: &[String], line: &str) -> usize {
    lines.iter().filter(|l| *l == line).count()
}

/// docs/tools.md's killsnoop: a shell's `kill -0 $$`.
pub(crate) fn trace_all_kill(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload("sh", &["-c", "kill -0 $$"]);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let line = format!("[pid {pid:>5} sh] kill({pid}, 0) = 0");
    assert_eq!(stderr.lines().filter(|l| *l == line).count(), 1, "{stderr}");
}

/// docs/tools.md's statsnoop: coreutils' `stat /etc/hostname` stats it once, and succeeds.
pub(crate) fn trace_all_stat(ctx: &Ctx, example: &str) {
    let (mine, stderr) = lines_of_one(ctx, example, ("stat", &["/etc/hostname"], "stat"));
    let stats = (mine.iter())
        .filter(|l| l.contains("\"/etc/hostname\"") && l.ends_with(") = 0"))
        .count();
    assert_eq!(stats, 1, "{stderr}");
}

/// docs/tools.md's syncsnoop: `sync` calls sync() once.
pub(crate) fn trace_all_sync(ctx: &Ctx, example: &str) {
    let (mine, stderr) = lines_of_one(ctx, example, ("sync", &[], "sync"));
    assert_eq!(times(&mine, "sync() = 0"), 1, "{stderr}");
}

/// docs/tools.md's mountsnoop: `unshare -m` makes its mounts private, then python3 (the same
/// process, execed) mounts a tmpfs and unmounts it: each call with its strings and flags, as
/// strace shows them.
pub(crate) fn trace_all_mounts(ctx: &Ctx, example: &str) {
    let script = "import ctypes; libc = ctypes.CDLL(None); \
                  assert libc.mount(b'tracer', b'/mnt', b'tmpfs', 0, None) == 0; \
                  assert libc.umount2(b'/mnt', 0) == 0";
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload("unshare", &["-m", "/usr/bin/python3", "-c", script]);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let lines: Vec<String> = stderr.lines().map(str::to_string).collect();
    let of = |comm: &str, call: &str| times(&lines, &format!("[pid {pid:>5} {comm}] {call}"));
    let private = "mount(\"none\", \"/\", NULL, MS_REC|MS_PRIVATE, NULL) = 0";
    assert_eq!(of("unshare", private), 1, "{stderr}");
    let tmpfs = "mount(\"tracer\", \"/mnt\", \"tmpfs\", 0, NULL) = 0";
    assert_eq!(of("python3", tmpfs), 1, "{stderr}");
    assert_eq!(of("python3", "umount2(\"/mnt\", 0) = 0"), 1, "{stderr}");
}

/// docs/tools.md's setuids: python3 sets its group ids, then its user id (to what they are).
pub(crate) fn trace_all_creds(ctx: &Ctx, example: &str) {
    let script = "import os; os.setresgid(0, 0, 0); os.setuid(0)";
    let (mine, stderr) = lines_of_one(ctx, example, ("python3", &["-c", script], "python3"));
    assert_eq!(times(&mine, "setresgid(0, 0, 0) = 0"), 1, "{stderr}");
    assert_eq!(times(&mine, "setuid(0) = 0"), 1, "{stderr}");
}

/// docs/tools.md's naptime: `sleep 0.1`'s one sleep, its length as given.
pub(crate) fn trace_all_sleep(ctx: &Ctx, example: &str) {
    let (mine, stderr) = lines_of_one(ctx, example, ("sleep", &["0.1"], "sleep"));
    let sleeps = (mine.iter())
        .filter(|l| {
            l.starts_with("clock_nanosleep(CLOCK_REALTIME, 0, {tv_sec=0, tv_nsec=100000000}, ")
                && l.ends_with(") = 0")
        })
        .count();
    assert_eq!(sleeps, 1, "{stderr}");
}

/// docs/tools.md's exitsnoop: `true` exits, and how it ended follows.
pub(crate) fn trace_all_exit(ctx: &Ctx, example: &str) {
    let (mine, stderr) = lines_of_one(ctx, example, ("true", &[], "true"));
    assert_eq!(
        mine,
        ["exit_group(0) = ?", "+++ exited with 0 +++"],
        "{stderr}"
    );
}

/// docs/tools.md's syscount: the table of every process's calls holds the workload's 1,000
/// getppid calls (and any other process's).
pub(crate) fn trace_all_summary(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./tracer-testprog", &["getppid", "1000"]);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let row = (stderr.lines())
        .find(|l| l.split_whitespace().last() == Some("getppid"))
        .unwrap_or_else(|| panic!("no getppid row:\n{stderr}"));
    let calls: u64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(calls >= 1000, "{row}\n{stderr}");
}
