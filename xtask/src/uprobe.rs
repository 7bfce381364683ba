//! Uprobe hits: the workload calls `tracer_testprog_target` N times; ns per hit over the
//! untraced run for tracer (streaming JSON, and counting in the kernel), bpftrace counting,
//! and perf stat on a `perf probe` uprobe event. The trap dominates for everyone; this shows
//! what each tool adds on top.

use std::process::Command;

use anyhow::{Context, Result};

use crate::peers::{build, launching, peer, per_event, pinned, report, s};
use crate::section;

const FUNC: &str = "tracer_testprog_target";

pub fn uprobe_hit() -> Result<()> {
    section("bench: uprobe hit (tracer_testprog_target called N times)");
    let (tracer, prog) = build()?;
    let spec = format!("uprobe:{prog}:{FUNC}");
    let work = |n: u64| s(&[&prog, "--elapsed", "--cpu", "0", "call", &n.to_string()]);
    let (big, small) = (60_000, 6_000);
    let mut rows = vec![
        (
            "tracer probe -f json uprobe:...".to_string(),
            per_event(
                &|n| pinned(launching(&[&tracer, "probe", "-f", "json", &spec], work(n))),
                &work,
                big,
                small,
            ),
        ),
        (
            "tracer probe --count-by comm uprobe:...".to_string(),
            per_event(
                &|n| {
                    pinned(launching(
                        &[&tracer, "probe", "--count-by", "comm", &spec],
                        work(n),
                    ))
                },
                &work,
                big,
                small,
            ),
        ),
    ];
    if peer("bpftrace", "bpftrace") {
        let script = format!("uprobe:{prog}:{FUNC} {{ @[comm] = count(); }}");
        rows.push((
            "bpftrace @[comm] = count()".to_string(),
            per_event(
                &|n| pinned(s(&["bpftrace", "-e", &script, "-c", &work(n).join(" ")])),
                &work,
                big,
                small,
            ),
        ));
    }
    if peer("perf", "linux-perf") {
        // perf probe names the event probe_<binary's first word>:<function>.
        let added = Command::new("perf")
            .args(["probe", "-q", "-x", &prog, FUNC])
            .status()
            .context("cannot run perf probe")?;
        let event = format!("probe_tracer:{FUNC}");
        let cost = if added.success() {
            per_event(
                &|n| pinned(launching(&["perf", "stat", "-x,", "-e", &event], work(n))),
                &work,
                big,
                small,
            )
        } else {
            Err(anyhow::anyhow!("perf probe -x {prog} {FUNC} failed"))
        };
        let _ = Command::new("perf")
            .args(["probe", "-q", "-d", &event])
            .status();
        rows.push((format!("perf stat -e {event}"), cost));
    }
    let json = report("uprobe: cost per hit, median of 5 rounds", "hit", &rows);
    crate::bench::save(
        "uprobe_hit",
        &serde_json::json!({"bench": "uprobe_hit", "version": 1, "rows": json}).to_string(),
    )
}
