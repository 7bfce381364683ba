//! Uprobe hits: the workload calls `tracer_testprog_target` N times; ns per hit over the
//! untraced run for tracer (streaming JSON, and counting in the kernel), bpftrace counting,
//! and perf stat on a `perf probe` uprobe event, unpinned and pinned. The trap dominates for
//! everyone; this shows what each tool adds on top.

use std::process::Command;

use anyhow::{Context, Result};

use crate::peers::{both_places, build, peer, per_event, placed, s, Place};
use crate::section;

const FUNC: &str = "tracer_testprog_target";

pub fn uprobe_hit() -> Result<()> {
    section("bench: uprobe hit (tracer_testprog_target called N times), unpinned and pinned");
    let (tracer, prog) = build()?;
    let spec = format!("uprobe:{prog}:{FUNC}");
    let work = |place: Place, n: u64| {
        [
            s(&[&prog, "--elapsed"]),
            place.cpu(),
            s(&["call", &n.to_string()]),
        ]
        .concat()
    };
    let (big, small) = (60_000, 6_000);
    let bpftrace = peer("bpftrace", "bpftrace");
    // perf probe names the event probe_<binary's first word>:<function>.
    let event = format!("probe_tracer:{FUNC}");
    let perf_peer = peer("perf", "linux-perf");
    let perf = perf_peer
        && Command::new("perf")
            .args(["probe", "-q", "-x", &prog, FUNC])
            .status()
            .context("cannot run perf probe")?
            .success();
    let rows = |place: Place| {
        let base = |n| work(place, n);
        let mut rows = vec![
            (
                "tracer probe -f json uprobe:...".to_string(),
                per_event(
                    &placed(place, &[&tracer, "probe", "-f", "json", &spec], &base),
                    &base,
                    big,
                    small,
                ),
            ),
            (
                "tracer probe --count-by comm uprobe:...".to_string(),
                per_event(
                    &placed(
                        place,
                        &[&tracer, "probe", "--count-by", "comm", &spec],
                        &base,
                    ),
                    &base,
                    big,
                    small,
                ),
            ),
        ];
        if bpftrace {
            let script = format!("uprobe:{prog}:{FUNC} {{ @[comm] = count(); }}");
            let cmd = |n| {
                let workload = work(place, n).join(" ");
                place.tool(s(&["bpftrace", "-e", &script, "-c", &workload]))
            };
            rows.push((
                "bpftrace @[comm] = count()".to_string(),
                per_event(&cmd, &base, big, small),
            ));
        }
        if perf_peer {
            let cost = match perf {
                true => per_event(
                    &placed(place, &["perf", "stat", "-x,", "-e", &event], &base),
                    &base,
                    big,
                    small,
                ),
                false => Err(anyhow::anyhow!("perf probe -x {prog} {FUNC} failed")),
            };
            rows.push((format!("perf stat -e {event}"), cost));
        }
        rows
    };
    let json = both_places("uprobe: cost per hit", "hit", &rows);
    if perf {
        let _ = Command::new("perf")
            .args(["probe", "-q", "-d", &event])
            .status();
    }
    crate::bench::save(
        "uprobe_hit",
        &serde_json::json!({"bench": "uprobe_hit", "version": 2, "rows": json}).to_string(),
    )
}
