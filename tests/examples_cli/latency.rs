//! The examples of `tracer latency`: its help and docs/latency.md.

use super::*;

/// The `count N, ...` summary of a histogram and its `LO -> HI : COUNT` rows.
pub(crate) fn histogram(text: &str) -> (u64, Vec<(String, u64)>) {
    let rows = text
        .lines()
        .filter(|l| l.contains(" -> ") && l.contains(':'))
        .map(|l| {
            let (range, rest) = l.split_once(':').unwrap();
            let range = range.split_whitespace().collect::<Vec<_>>().join(" ");
            (
                range,
                rest.split_whitespace().next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let count = text
        .lines()
        .find_map(|l| l.strip_prefix("count "))
        .and_then(|l| l.split(',').next())
        .map(|n| n.parse().unwrap())
        .unwrap_or(0);
    (count, rows)
}

pub(crate) fn latency_prog(ctx: &Ctx, example: &str, stacks: bool) {
    if !has(Feature::UprobePmu, "example latency uprobe") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    // prog stays alive until tracer has printed: a stack is symbolized from the process's
    // mappings, and an exited process's frames are `[unknown]`.
    let mut work = ctx.waiting_prog();
    work.run_batch();
    let (stdout, stderr) = running.interrupted();
    work.finish();
    let (count, _) = histogram(&stdout);
    assert_eq!(count, 6, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let slow: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("slow: "))
        .collect();
    // Calls 5 and 6 spin 20 ms; the argument, named and typed from DWARF, is the call's number.
    assert_eq!(slow.len(), 2, "{stdout}");
    for (&i, n) in slow.iter().zip([5, 6]) {
        // At least 20 ms of wall time (20 ms of CPU time: more on a loaded machine).
        let took = lines[i]
            .split_once(" prog took ")
            .and_then(|(_, t)| t.split_whitespace().next())
            .unwrap_or_else(|| panic!("{}", lines[i]));
        assert!(
            tracer::units::parse_duration_ns(took).unwrap() >= 20_000_000,
            "{}",
            lines[i]
        );
        assert!(
            lines[i].contains(&format!("ms args (count={n}, ")),
            "{}",
            lines[i]
        );
        assert!(lines[i].ends_with(&format!(" ret {n}")), "{}", lines[i]);
        let frames = frames_after(&lines, i);
        if stacks {
            // Taken at the return: the caller first.
            assert!(frames[0].starts_with("work+0x"), "{frames:?}");
            assert!(frames[0].ends_with(&format!("({})", prog_line("sum += handle("))));
            assert!(frames[1].starts_with("main+0x"), "{frames:?}");
        } else {
            assert!(frames.is_empty(), "{frames:?}");
        }
    }
    assert!(stderr.contains("2 outliers shown"), "{stderr}");
}

pub(crate) fn latency_slow_calls(ctx: &Ctx, example: &str) {
    latency_prog(ctx, example, false);
}

pub(crate) fn latency_slow_stacks(ctx: &Ctx, example: &str) {
    latency_prog(ctx, example, true);
}

pub(crate) fn latency_read_interval(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let file = ctx.path("four-kib");
    std::fs::write(&file, vec![b'x'; 4096]).unwrap();
    ctx.workload("cat", &[&file.display().to_string()]);
    std::thread::sleep(Duration::from_millis(2100));
    let (stdout, stderr) = running.interrupted();
    let reports: Vec<&str> = stdout.split("\n[").skip(1).collect();
    let reports: Vec<&str> = if stdout.starts_with('[') {
        std::iter::once(stdout.as_str()).chain(reports).collect()
    } else {
        reports
    };
    assert!(
        reports.len() >= 2,
        "two interval reports at least:\n{stdout}\n{stderr}"
    );
    // The first second holds cat's reads at least.
    let (count, rows) = histogram(reports[0]);
    assert!(count >= 2, "{}", reports[0]);
    assert_eq!(
        rows.iter().map(|r| r.1).sum::<u64>(),
        count,
        "{}",
        reports[0]
    );
}

/// One histogram per softirq, headed by the name the tracepoint's print format gives its
/// vector (`vec TIMER`); every call measured is in one of them.
pub(crate) fn latency_softirqs(ctx: &Ctx, example: &str) {
    let format = std::fs::read_to_string("/sys/kernel/tracing/events/irq/softirq_entry/format")
        .expect("the softirq tracepoint's format");
    let running = ctx.start(&words(example, &[]));
    // Timers tick on an idle machine too; a file written and read makes more.
    let file = ctx.path("softirq-bytes");
    std::fs::write(&file, vec![b'x'; 1 << 20]).unwrap();
    ctx.workload("cat", &[&file.display().to_string()]);
    std::thread::sleep(Duration::from_millis(1500));
    let (stdout, stderr) = running.interrupted();
    let groups: Vec<&str> = stdout.split("\nvec ").skip(1).collect();
    let groups: Vec<&str> = match stdout.strip_prefix("vec ") {
        Some(first) => std::iter::once(first).chain(groups).collect(),
        None => groups,
    };
    assert!(
        !groups.is_empty(),
        "no softirq in 1.5 s:\n{stdout}\n{stderr}"
    );
    let mut total = 0;
    for group in &groups {
        let name = group.lines().next().unwrap();
        assert!(format.contains(&format!("\"{name}\"")), "{name}: {format}");
        let (count, rows) = histogram(group);
        assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{group}");
        total += count;
    }
    let measured: u64 = (stderr.lines())
        .find_map(|l| l.split_once(" calls measured"))
        .map(|(n, _)| n.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(total, measured, "{stdout}\n{stderr}");
}

/// docs/tools.md's writeback: a file's dirty pages written out by sync(1): at least one
/// writeback of reason `sync`, each start matched to its end by the superblock's device.
pub(crate) fn latency_writeback(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    std::fs::write(ctx.path("writeback-bytes"), vec![b'x'; 4 << 20]).unwrap();
    ctx.workload("sync", &[]);
    let (stdout, stderr) = running.interrupted();
    let mut groups = stdout.split("reason ");
    let sync = (groups.find(|group| group.starts_with("sync\n")))
        .unwrap_or_else(|| panic!("no sync writeback:\n{stdout}\n{stderr}"));
    let (count, rows) = histogram(sync);
    assert!(count >= 1, "{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{sync}");
}

pub(crate) fn latency_wakeup(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    // prog sleeps 700 ms once: a wakeup, then a switch to it.
    ctx.workload("./prog", &[]);
    let (stdout, stderr) = running.interrupted();
    let (count, rows) = histogram(&stdout);
    assert!(count >= 1, "{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{stdout}");
}

pub(crate) fn latency_block(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    ctx.direct_writes("blocks");
    let (stdout, stderr) = running.interrupted();
    let (count, rows) = histogram(&stdout);
    assert!(count >= 8, "{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{stdout}");
}

pub(crate) fn latency_srv(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example latency srv") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./srv", &[]);
    let (stdout, stderr) = running.interrupted();
    // Six requests matched by token across threads: four of 9 ms, two of 35 ms.
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 6, "{stdout}\n{stderr}");
    let bucket = |r: &str| rows.iter().find(|(range, _)| range == r).map_or(0, |x| x.1);
    assert_eq!(bucket("8.39ms -> 16.8ms"), 4, "{stdout}");
    assert_eq!(bucket("33.6ms -> 67.1ms"), 2, "{stdout}");
}

pub(crate) fn docs_latency_filter(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs latency --filter") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // The 10 calls of 17.5 ms and 5 of 70 ms; the 20 of 4.5 ms are refused.
    assert!(
        stderr.contains("15 calls measured in ")
            && stderr.contains("; 35 starts, 20 calls filtered out, 0 ends without a start"),
        "{stderr}"
    );
}

pub(crate) fn docs_latency_linear(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs latency --linear") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // `slept NS DELAY BLOCKS`: the duration is the first number.
    let slept: Vec<u64> = (stderr.lines())
        .filter_map(|l| {
            l.strip_prefix("slept ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(slept.len(), 35, "{stderr}");
    // The five 70 ms sleeps are past 63 steps of 1 ms: the overflow row, up to the max.
    let over = slept.iter().filter(|&&n| n >= 63_000_000).count() as u64;
    assert_eq!(over, 5, "{stderr}");
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 35, "{stdout}");
    let (last, n) = rows.last().unwrap();
    assert!(last.starts_with("63.0ms -> max "), "{stdout}");
    assert_eq!(*n, over, "{stdout}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("count 35, min "))
        .unwrap();
    let max = summary.rsplit("max ").next().unwrap();
    assert_eq!(
        last,
        &format!("63.0ms -> max {max}"),
        "the row ends at the max"
    );
    assert!(summary.contains(&format!("p99 ~{max} ")), "{summary}");
    let places = shown_places(example);
    assert!(!places.is_empty());
    // The page's rows are the workload's design; a run the scheduler delayed is checked above.
    let designed = slept
        .iter()
        .filter(|&&n| (4_000_000..5_000_000).contains(&n))
        .count()
        == 20;
    if designed {
        assert_shown(example, &stdout, &stderr, &[]);
    }
}

pub(crate) fn docs_latency_sleeps(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs latency") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The workload prints each sleep as it measured it (`slept NS`, on stderr): the histogram
    // holds exactly those, in log2 buckets of nanoseconds.
    let slept: Vec<u64> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("slept ")?.split_whitespace().next())
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(slept.len(), 35, "{stderr}");
    let log2 = |ns: u64| 63 - ns.leading_zeros();
    let (lo, hi) = (
        slept.iter().map(|&n| log2(n)).min().unwrap(),
        slept.iter().map(|&n| log2(n)).max().unwrap(),
    );
    let human = tracer::output::hist::human;
    let want: Vec<(String, u64)> = (lo..=hi)
        .map(|k| {
            (
                format!("{} -> {}", human(1 << k), human(1 << (k + 1))),
                slept.iter().filter(|&&n| log2(n) == k).count() as u64,
            )
        })
        .collect();
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 35, "{stdout}");
    assert_eq!(rows, want, "{stdout}\n{stderr}");
    // The calls of 60 ms or more, printed as they end with their argument (the sleep in us)
    // and return value: the five of 70 ms (and any the scheduler delayed that long).
    let us = |call: usize| match call {
        0..20 => 4_500u64,
        20..30 => 17_500,
        _ => 70_000,
    };
    let want_slow: Vec<u64> = (0..slept.len())
        .filter(|&i| slept[i] >= 60_000_000)
        .map(us)
        .collect();
    assert!(want_slow.ends_with(&[70_000; 5]), "{stderr}");
    let slow = lines_with(&stdout, "slow: ");
    assert_eq!(slow.len(), want_slow.len(), "{stdout}\n{stderr}");
    for (l, us) in slow.iter().zip(&want_slow) {
        assert!(
            l.contains(" tracer-testprog took ")
                && l.contains(&format!(" args (us={us}) "))
                && l.ends_with(&format!(" ret {us}")),
            "{l}"
        );
    }
    assert!(
        stderr.contains("35 calls measured in ")
            && stderr.contains(", command exited with status 0; 35 starts, 0 ends without a start (tracing began mid-call)")
            && stderr.contains(&format!("\n{} outliers shown, 0 lost (ring full)", slow.len())),
        "{stderr}"
    );
    // The page shows the workload's design, 20, 10 and 5 sleeps in three buckets: a run the
    // scheduler delayed out of it is checked against what the workload measured (above) only.
    let designed = [(22, 20), (24, 10), (26, 5)]
        .iter()
        .all(|&(k, n)| slept.iter().filter(|&&s| log2(s) == k).count() == n);
    let rows_shown: Vec<String> = if designed {
        Vec::new()
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "note: sleeps delayed out of their buckets: docs/latency.md's histogram rows not compared"
        );
        shown_places(example)
            .iter()
            .flat_map(|p| p.output.clone())
            .filter(|l| l.contains(" -> "))
            .collect()
    };
    let skip: Vec<&str> = rows_shown.iter().map(String::as_str).collect();
    assert_shown(example, &stdout, &stderr, &skip);
}
