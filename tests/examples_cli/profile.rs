//! The examples of `tracer profile`: its help and docs/profile.md.

use super::*;

/// The user frames under the `#1` line of `tracer profile`'s text report.
pub(crate) fn top_stack(stdout: &str) -> (String, Vec<String>) {
    let mut lines = stdout.lines();
    let head = lines.next().unwrap_or_default().to_string();
    let frames = lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().split(" (").next().unwrap().to_string())
        .collect();
    (head, frames)
}

/// The samples of every stack `tracer profile`'s text report shows, with its frames.
pub(crate) fn shown_stacks(stdout: &str) -> Vec<(u64, Vec<String>)> {
    let mut stacks = Vec::new();
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with('#') {
            continue;
        }
        let samples = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let frames = lines
            .by_ref()
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.trim().split(" (").next().unwrap().to_string())
            .collect();
        stacks.push((samples, frames));
    }
    stacks
}

/// `./busy` (tests/workloads/profile.c) burns 1 s of CPU, 3:1 in its hot and cold chains: the
/// report's first stack is the hot chain, and the hot chain (with the samples that land in the
/// kernel's clock_gettime above it, more of them on a loaded machine) has about 3/4 of the
/// samples. About 99 of them on a quiet machine; more where the VM's CPU is stolen (the
/// sampling clock runs on while the thread's CPU clock, which the workload spends, does not:
/// 137 in a CI run, 102 of them hot), so the share is checked, and a floor on the count.
pub(crate) fn profile_command(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let (head, frames) = top_stack(&stdout);
    assert!(
        head.starts_with("#1 ") && head.contains(" busy ["),
        "{stdout}"
    );
    assert_eq!(
        frames[..4],
        ["profile_spin", "profile_hot_inner", "profile_hot", "main"],
        "{stdout}"
    );
    let hot: u64 = shown_stacks(&stdout)
        .iter()
        .filter(|(_, frames)| frames.iter().any(|f| f == "profile_hot"))
        .map(|(samples, _)| samples)
        .sum();
    let all: u64 = shown_stacks(&stdout)
        .iter()
        .map(|(samples, _)| samples)
        .sum();
    let share = hot as f64 / all.max(1) as f64;
    assert!(
        all >= 80 && (0.65..=0.85).contains(&share),
        "{hot} hot samples of {all}: {stdout}"
    );
    assert!(stderr.contains("command exited with status 0"), "{stderr}");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Debian's gzip, built without frame pointers and stripped, on 8 MB of text (about a second
/// here): its stacks unwound from .eh_frame reach main's caller in libc, and its own unnamed
/// frames show as `gzip+0xOFFSET`.
pub(crate) fn profile_dwarf(ctx: &Ctx, example: &str) {
    let text = common::hex_text(8_000_000, 0x2545_f491_4f6c_dd1d);
    std::fs::write(ctx.path("big.txt"), text).unwrap();
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let stacks = shown_stacks(&stdout);
    let total: u64 = stacks.iter().map(|(n, _)| n).sum();
    let whole: u64 = (stacks.iter())
        .filter(|(_, frames)| frames.iter().any(|f| f == "__libc_start_call_main"))
        .map(|(n, _)| n)
        .sum();
    assert!(
        total >= 20 && whole * 100 >= total * 95,
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\n    gzip+0x"), "{stdout}");
    assert!(
        stderr.contains("user stacks unwound from .eh_frame: "),
        "{stderr}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Every CPU for 2 s, with `./busy` started after the banner: the SVG names its hot chain.
pub(crate) fn profile_all_svg(ctx: &Ctx, example: &str) {
    let svg = ctx.path("cpu.svg");
    let _ = std::fs::remove_file(&svg);
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./busy", &["400", "0", "0", "0", "0"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let svg = std::fs::read_to_string(&svg).expect("cpu.svg written");
    assert!(svg.starts_with("<?xml") && svg.contains("On-CPU profile"));
    assert!(svg.contains("<title>profile_hot_inner ("), "{stderr}");
    assert!(stderr.contains("of the idle task left out") || stderr.contains("samples counted"));
}

/// `./busy 500 ...` run by pid (1234): folded lines of its chains, about 999 * 0.5 samples.
pub(crate) fn profile_pid_folded(ctx: &Ctx, example: &str) {
    let mut cmd = Command::new(ctx.path("busy"));
    cmd.args(["500", "0", "0", "0", "0"]).stderr(Stdio::null());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("process {pid} exited")),
        "{stderr}"
    );
    let lines: Vec<(&str, u64)> = (stdout.lines())
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack, n.parse().unwrap())
        })
        .collect();
    assert!(
        lines.iter().all(|(stack, _)| stack.starts_with("busy;")),
        "{stdout}"
    );
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    // 500 ms of CPU at 999 Hz; the kernel's frequency mode starts each event with a short
    // period and lengthens it, which adds samples at first (532 in one run on a 2026-11-29
    // machine, 520 at most before).
    assert!((420..=560).contains(&total), "{total}\n{stdout}");
    let hot: u64 = (lines.iter())
        .filter(|(s, _)| s.contains(";main;profile_hot;profile_hot_inner;profile_spin"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        hot * 100 >= total * 65 && hot * 100 <= total * 85,
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// docs/profile.md's flame graph of `./busy`: written to cpu.svg, nothing on stdout.
pub(crate) fn profile_command_svg(ctx: &Ctx, example: &str) {
    let svg = ctx.path("cpu.svg");
    let _ = std::fs::remove_file(&svg);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let svg = std::fs::read_to_string(&svg).expect("cpu.svg written");
    assert!(svg.contains("<title>profile_hot_inner ("), "{svg}");
    assert!(svg.contains("<title>profile_cold ("), "{svg}");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// `./busy 0 3 100 2 20` by pid: 300 ms blocked in profile_nap (3 blocks), 40 in profile_doze.
pub(crate) fn profile_off_cpu_pid(ctx: &Ctx, example: &str) {
    let mut cmd = Command::new(ctx.path("busy"));
    cmd.args(["0", "3", "100", "2", "20"]).stderr(Stdio::null());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let (head, frames) = top_stack(&stdout);
    // With stderr: its summary says what was missed or lost when a block is not there (a
    // block whose end the kernel's sched_switch did not show, about 1 in 1,000 here).
    let unshown = stderr.contains(" whose end the kernel's sched_switch did not show");
    assert!(
        head.contains(" in 3 blocks (") || unshown,
        "{stdout}\n{stderr}"
    );
    let user = frames.iter().skip_while(|f| *f != "--").skip(1);
    assert_eq!(
        user.take(2).collect::<Vec<_>>(),
        ["profile_nap", "main"],
        "{stdout}"
    );
    assert!(
        stdout.contains(" in 2 blocks (") || unshown,
        "{stdout}\n{stderr}"
    );
    // The page shows a run with every block: one left out (said above) changes its lines.
    if !unshown {
        assert_shown(example, &stdout, &stderr, &[]);
    }
}

/// Every CPU for 2 s as pprof, with `./busy` started after the banner: a gzipped profile.proto
/// (read by `go tool pprof` in [`profile_go_pprof_top`] and tests/profile_cli.rs).
pub(crate) fn profile_all_pprof(ctx: &Ctx, example: &str) {
    let file = ctx.path("cpu.pb.gz");
    let _ = std::fs::remove_file(&file);
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./busy", &["400", "0", "0", "0", "0"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let gz = std::fs::read(&file).expect("cpu.pb.gz written");
    assert_eq!(&gz[..2], [0x1f, 0x8b], "gzip");
    if let Some(top) = go_pprof(ctx, &["-top", "-tagfocus", "comm=busy", "cpu.pb.gz"]) {
        assert!(top.contains("profile_spin"), "{top}");
    }
}

/// docs/profile.md: `./busy` as pprof, the banner and summary as shown.
pub(crate) fn profile_command_pprof(ctx: &Ctx, example: &str) {
    let _ = std::fs::remove_file(ctx.path("cpu.pb.gz"));
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let gz = std::fs::read(ctx.path("cpu.pb.gz")).expect("cpu.pb.gz written");
    assert_eq!(&gz[..2], [0x1f, 0x8b], "gzip");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// `go tool pprof ARGS` in the examples' directory (its cache in a directory of its own):
/// stdout, or `None` where Go is not installed (said on stderr).
pub(crate) fn go_pprof(ctx: &Ctx, args: &[&str]) -> Option<String> {
    go_pprof_run(ctx, args).map(|(stdout, _)| stdout)
}

pub(crate) fn go_pprof_run(ctx: &Ctx, args: &[&str]) -> Option<(String, String)> {
    common::go_pprof_in(
        &format!("example go tool pprof {args:?}"),
        Some(ctx.dir.path()),
        args,
    )
}

/// docs/profile.md: the file of the example above read by `go tool pprof`, as shown.
pub(crate) fn profile_go_pprof_top(ctx: &Ctx, example: &str) {
    profile_command_pprof(ctx, "tracer profile -f pprof -o cpu.pb.gz -- ./busy");
    let args = shell_words(example, &[]);
    let args: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    let Some((stdout, stderr)) = go_pprof_run(ctx, &args) else {
        return;
    };
    assert!(stdout.contains("Type: cpu"), "{stdout}");
    assert!(
        first_top_line(&stdout).ends_with(" profile_spin"),
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// The first function of `go tool pprof -top`'s table.
pub(crate) fn first_top_line(stdout: &str) -> &str {
    (stdout.lines())
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_default()
}
