//! The examples of `tracer watch`: its help, the README and docs/watch.md.

use super::*;

pub(crate) const COUNTER_VALUES: [(u64, u64); 6] =
    [(0, 1), (1, 3), (3, 6), (6, 10), (10, 15), (15, 21)];

/// The `counter: OLD -> NEW at handle+0x..` lines, with the frames under each.
pub(crate) fn counter_hits(stdout: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = stdout.lines().collect();
    (0..lines.len())
        .filter(|&i| lines[i].contains(" prog             counter: "))
        .map(|i| {
            let what = lines[i].split_once("counter: ").unwrap().1.to_string();
            (
                what,
                frames_after(&lines, i)
                    .iter()
                    .map(|f| f.to_string())
                    .collect(),
            )
        })
        .collect()
}

pub(crate) fn check_counter(stdout: &str, stderr: &str, stacks: bool) {
    let hits = counter_hits(stdout);
    let at = prog_line("counter += count");
    let want: Vec<String> = COUNTER_VALUES
        .iter()
        .map(|(old, new)| format!("{old} -> {new} at handle+0x"))
        .collect();
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    for ((what, frames), want) in hits.iter().zip(&want) {
        assert!(what.starts_with(want.as_str()), "{what}, wanted {want}");
        assert!(what.ends_with(&format!("({at})")), "{what}");
        if stacks {
            assert!(frames[0].starts_with("handle+0x") && frames[0].ends_with(&format!("({at})")));
            assert!(frames[1].starts_with("work+0x"), "{frames:?}");
            assert!(frames[2].starts_with("main+0x"), "{frames:?}");
        } else {
            assert!(frames.is_empty(), "{frames:?}");
        }
    }
    assert!(
        stderr.contains("6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn watch_counter(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch counter") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_counter(&stdout, &stderr, false);
}

pub(crate) fn watch_stack(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -s") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_counter(&stdout, &stderr, true);
}

pub(crate) fn readme_watch_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch --summary") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // Only the counts, on stdout: six writes, by one thread, at one instruction.
    assert!(counter_hits(&stdout).is_empty(), "{stdout}");
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}\n{stderr}");
    assert!(
        lines[0][0] == "counter" && lines[0][2..] == ["6", "hits"],
        "{stdout}"
    );
    assert!(lines[1][0] == "thread" && lines[1][2] == "6", "{stdout}");
    assert_eq!(lines[2][0], "at", "{stdout}");
    assert!(
        lines[2][1].starts_with("handle+0x") && lines[2][2] == "6",
        "{stdout}"
    );
    assert!(
        stderr.contains("6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn watch_execute(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -t x") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let hits = lines_with(&stdout, " my_function");
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    assert!(stderr.contains("6 hits in "), "{stderr}");
}

pub(crate) fn watch_pid_environ(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -p") {
        return;
    }
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    // Ends by itself when the process exits.
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    // One read of `environ` per getenv call, none written.
    let hits = lines_with(&stdout, " libc.so.6:environ: ");
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    assert!(
        hits.iter().all(|h| h.contains(" (unchanged) at getenv+0x")),
        "{stdout}"
    );
    assert!(
        stderr.contains(&"6 hits in ".to_string())
            && stderr.contains(&format!("process {pid} exited")),
        "{stderr}"
    );
}

pub(crate) fn watch_kernel_jiffies(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch --kernel") {
        return;
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let listed = kallsyms.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() == 3 && f[2] == "jiffies" && !f[0].trim_start_matches('0').is_empty()
    });
    let out = ctx.run(&words(example, &[]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    if listed {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(lines_with(&stdout, " jiffies: ").len(), 5, "{stdout}");
    } else {
        // This kernel's kallsyms lists no variables (CONFIG_KALLSYMS_ALL unset): the error says
        // so; the VM tier's kernels list them and run the example.
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            [
                "error: no kernel symbol 'jiffies' (or its address is hidden)",
                "hint: this kernel's /proc/kallsyms lists no variables (CONFIG_KALLSYMS_ALL unset): give the address (0x...) from its System.map",
            ]
        );
        let vm = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/vm_kprobe.rs"
        ))
        .unwrap();
        assert!(
            vm.contains(&format!("{example:?}")),
            "tests/vm_kprobe.rs must run {example:?}"
        );
    }
}

pub(crate) fn docs_watch_counter(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example docs watch") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // Six writes, 0 -> 1 .. 5 -> 6, each made under a lock, so each trap reads its own value;
    // at the one writing instruction of tracer_testprog_bump.
    let at = format!(
        "({})",
        source_line("testprog/src/main.rs", "tracer_testprog_counter.fetch_add")
    );
    let hits: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|l| {
            let (who, what) = l.split_once(" tracer_testprog_counter: ")?;
            let f: Vec<&str> = who.split_whitespace().collect();
            assert_eq!(f[3], "tracer-testprog", "{l}");
            Some((f[2].split_once('/').unwrap().1, what))
        })
        .collect();
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    for (k, (_, what)) in hits.iter().enumerate() {
        assert!(
            what.starts_with(&format!("{k} -> {} at tracer_testprog_bump+0x", k + 1))
                && what.ends_with(&at),
            "{what}"
        );
    }
    // Three threads, two writes each: the per-thread counts of the summary.
    let mut per_thread: Vec<(String, usize)> = Vec::new();
    for (tid, _) in &hits {
        match per_thread.iter_mut().find(|(t, _)| t == tid) {
            Some((_, n)) => *n += 1,
            None => per_thread.push((tid.to_string(), 1)),
        }
    }
    per_thread.sort();
    assert!(
        per_thread.len() == 3 && per_thread.iter().all(|(_, n)| *n == 2),
        "{stdout}"
    );
    let summary: Vec<Vec<&str>> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("tracer_testprog_counter (0x"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(summary.len(), 5, "{stderr}");
    assert!(
        summary[0][1].ends_with("/8):")
            && summary[0][2..] == ["6", "hits", "(6", "trapped", "in", "the", "kernel)"],
        "{stderr}"
    );
    let threads: Vec<(String, usize)> = summary[1..4]
        .iter()
        .map(|r| {
            assert_eq!(r[0], "thread", "{stderr}");
            (r[1].to_string(), r[2].parse().unwrap())
        })
        .collect();
    assert_eq!(threads, per_thread, "{stderr}");
    assert!(
        summary[4][0] == "at"
            && summary[4][1].starts_with("tracer_testprog_bump+0x")
            && summary[4][2] == "6",
        "{stderr}"
    );
    assert!(
        stderr.contains("\n6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

pub(crate) fn docs_watch_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example docs watch --summary") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // Only the counts, on stdout: 3000 writes, 1000 by each of three threads, at one place.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5, "{stdout}\n{stderr}");
    assert!(
        rows[0][0] == "tracer_testprog_counter"
            && rows[0][1].starts_with("(0x")
            && rows[0][1].ends_with("/8):")
            && rows[0][2..] == ["3000", "hits"],
        "{stdout}"
    );
    for r in &rows[1..4] {
        assert!(r[0] == "thread" && r[2] == "1000", "{stdout}");
    }
    assert!(
        rows[4][0] == "at"
            && rows[4][1].starts_with("tracer_testprog_bump+0x")
            && rows[4][2] == "3000",
        "{stdout}"
    );
    assert!(
        stderr.contains("\n3000 hits in ")
            && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}
