//! Streaming every event to userspace: a workload calls getppid N times and the tool delivers
//! one record per call; first as a user runs it (no pinning), then with the workload pinned to
//! CPU 0 and the tool to CPU 1. Cost per event as in
//! [`crate::peers::per_event`] (two sizes, so start-up cancels out), plus delivered and lost
//! events of one run at the larger size, counted from each tool's own output.
//!
//! BCC's tools cannot launch a command, so the BCC rows attach first (a small Python script
//! per buffer kind, started on CPU 1 and waited for) and time the workload alone.

use anyhow::{Context, Result};

use crate::peers::{build, capture, launching, peer, per_event, s, Place, Spread, ROUNDS};
use crate::section;

const TP: &str = "syscalls:sys_enter_getppid";
const BIG: u64 = 1_000_000;
const SMALL: u64 = 100_000;

type Delivered = (u64, u64, f64);

/// One row: cost per event and what one run at `BIG` delivered.
struct Row {
    tool: String,
    cost: Result<Spread>,
    /// Delivered, lost, and the run's wall seconds.
    delivered: Result<Delivered>,
}

/// The number just before `label` in `text` (`"123 events in"`).
fn number_before(text: &str, label: &str) -> Option<u64> {
    let head = &text[..text.find(label)?];
    let digits: String = head
        .chars()
        .rev()
        .skip_while(|c| c.is_whitespace())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

pub fn streaming() -> Result<()> {
    section("bench: streaming every event (getppid), as a user runs it and pinned");
    let (tracer, prog) = build()?;
    let mut modes = serde_json::Map::new();
    // As a user runs it (the scheduler places tool and workload), then pinned (workload on
    // CPU 0, tool on CPU 1), which separates the tool's own work from migrations.
    for place in Place::BOTH {
        println!("\nstreaming, {}:", place.name());
        modes.insert(
            place.name().into(),
            serde_json::Value::Array(table(place, &tracer, &prog)),
        );
    }
    crate::bench::save(
        "streaming",
        &serde_json::json!({"bench": "streaming", "version": 2, "rounds": ROUNDS, "modes": modes})
            .to_string(),
    )
}

/// One mode's rows, printed; returns them as JSON.
fn table(place: Place, tracer: &str, prog: &str) -> Vec<serde_json::Value> {
    let work = |n: u64| crate::peers::getppid(prog, place, n);
    let mut rows = Vec::new();
    // Another tracer binary (e.g. an earlier commit's) measured in the same run: A/B of a change.
    let baseline = std::env::var("TRACER_BENCH_BASELINE").ok();
    let builds =
        std::iter::once(("", tracer.to_string())).chain(baseline.map(|b| ("baseline ", b)));
    // `--filter`: every hit refused in the kernel (what a filtered-out hit costs), and every
    // hit passed (what the comparison adds to a printed one). tracer's own pid is never 1.
    let filters: [(&str, Vec<&str>); 3] = [
        ("", Vec::new()),
        (" --filter 'pid == 1'", vec!["--filter", "pid == 1"]),
        (" --filter 'pid != 1'", vec!["--filter", "pid != 1"]),
    ];
    let runs = builds.flat_map(|b| {
        let filtered = (b.0.is_empty())
            .then(|| filters[1..].to_vec())
            .into_iter()
            .flatten();
        [
            (b.clone(), "perf", filters[0].clone()),
            (b.clone(), "ringbuf", filters[0].clone()),
            // A user stack per event, symbolized as it is read (`probe -s`'s hot path: the
            // same stack every time, from the symbolizer's caches).
            (b.clone(), "ringbuf", (" -s user", vec!["-s", "user"])),
        ]
        .into_iter()
        .chain(filtered.map(move |f| (b.clone(), "perf", f)))
        .collect::<Vec<_>>()
    });
    for ((label, binary), transport, (shown, filter)) in runs {
        // The output format flag of this binary: `-f` since the flags got one meaning each,
        // `-o` before (a baseline may be older).
        let help = capture(&s(&[&binary, "probe", "--help"])).map(|(out, _, _)| out);
        let format = match help.is_ok_and(|h| h.contains("--format")) {
            true => "-f",
            false => "-o",
        };
        let tracer_cmd = |n: u64| {
            let mut argv = vec![
                binary.as_str(),
                "probe",
                "--transport",
                transport,
                format,
                "json",
            ];
            argv.extend(filter.iter().copied());
            argv.push(TP);
            place.tool(launching(&argv, work(n)))
        };
        rows.push(Row {
            tool: format!("{label}tracer probe --transport {transport}{shown}"),
            cost: per_event(&tracer_cmd, &work, BIG, SMALL),
            delivered: capture(&tracer_cmd(BIG)).and_then(|(_, err, secs)| {
                let delivered = number_before(&err, " events in").context("no event count")?;
                let lost = number_before(&err, " lost").context("no lost count")?;
                Ok((delivered, lost, secs))
            }),
        });
    }

    if peer("bpftrace", "bpftrace") {
        let script = format!("tracepoint:{TP} /pid == cpid/ {{ printf(\"%d %d\\n\", pid, tid); }}");
        let cmd = |n: u64| place.tool(s(&["bpftrace", "-e", &script, "-c", &work(n).join(" ")]));
        rows.push(Row {
            tool: "bpftrace printf".into(),
            cost: per_event(&cmd, &work, BIG, SMALL),
            delivered: capture(&cmd(BIG)).map(|(out, err, secs)| {
                let delivered = out.lines().filter(|l| l.contains(' ')).count() as u64;
                // bpftrace warns "Lost N events" when its perf buffer overflowed.
                let lost = number_after_word(&err, "Lost").unwrap_or(0);
                (delivered, lost, secs)
            }),
        });
    }

    if peer("perf", "linux-perf") {
        let data = crate::root().join("target/bench/streaming-perf.data");
        let data = data.display().to_string();
        let cmd = |n: u64| {
            place.tool(launching(
                &["perf", "record", "-q", "-o", &data, "-e", TP],
                work(n),
            ))
        };
        rows.push(Row {
            tool: format!("perf record -e {TP}"),
            cost: per_event(&cmd, &work, BIG, SMALL),
            delivered: capture(&cmd(BIG)).and_then(|(_, _, secs)| {
                let (stats, _, _) = capture(&s(&["perf", "report", "--stats", "-i", &data]))?;
                let delivered = crate::peers::number_after(&stats, "SAMPLE events:")
                    .context("no SAMPLE count in perf report --stats")?;
                // perf counts LOST records, not samples: lost is what is missing.
                Ok((delivered, BIG.saturating_sub(delivered), secs))
            }),
        });
    }

    // BCC's rows attach first and pin themselves: measured once, with the pinned table.
    if place == Place::Pinned && peer("trace-bpfcc", "bpfcc-tools") && crate::peers::bcc_headers() {
        for kind in ["perf", "ring"] {
            rows.push(bcc_row(kind, &work));
        }
    }

    println!(
        "{:<34} {:>10} {:>18} {:>10} {:>9} {:>12}",
        "tool", "ns/event", "min..max", "delivered", "lost", "delivered/s"
    );
    let mut json = Vec::new();
    for row in &rows {
        let cost = match &row.cost {
            Ok((median, min, max)) => (format!("{median:.0}"), format!("{min:.0}..{max:.0}")),
            Err(e) => ("failed".into(), format!("{e:#}")),
        };
        let (delivered, lost, rate) = match &row.delivered {
            Ok((d, l, secs)) => (
                d.to_string(),
                l.to_string(),
                format!("{:.0}", *d as f64 / secs),
            ),
            Err(e) => ("?".into(), "?".into(), format!("{e:#}")),
        };
        println!(
            "{:<34} {:>10} {:>18} {:>10} {:>9} {:>12}",
            row.tool, cost.0, cost.1, delivered, lost, rate
        );
        json.push(serde_json::json!({
            "tool": row.tool,
            "ns_per_event": row.cost.as_ref().ok().map(|c| c.0.round()),
            "min_ns": row.cost.as_ref().ok().map(|c| c.1.round()),
            "max_ns": row.cost.as_ref().ok().map(|c| c.2.round()),
            "error": row.cost.as_ref().err().map(|e| format!("{e:#}")),
            "produced": BIG,
            "delivered": row.delivered.as_ref().ok().map(|d| d.0),
            "lost": row.delivered.as_ref().ok().map(|d| d.1),
        }));
    }
    json
}

/// The number after the word `word` on the first line that has it (`"Lost 12 events"`).
fn number_after_word(text: &str, word: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        words.find(|w| *w == word)?;
        words.next()?.parse().ok()
    })
}

/// A BCC tool per buffer kind: counts this workload's getppid calls (by comm) in a perf
/// buffer or a BPF ring buffer and prints `delivered N lost M` at the end.
const BCC_SCRIPT: &str = r#"
import sys, signal
from bcc import BPF
kind = sys.argv[1]
decl = "BPF_PERF_OUTPUT(events);" if kind == "perf" else "BPF_RINGBUF_OUTPUT(events, 64);"
out = "events.perf_submit(args, &e, sizeof(e));" if kind == "perf" else "events.ringbuf_output(&e, sizeof(e), 0);"
text = """
struct ev { u32 pid; u32 tid; };
%s
TRACEPOINT_PROBE(syscalls, sys_enter_getppid) {
    char comm[16];
    bpf_get_current_comm(&comm, sizeof(comm));
    if (comm[0] != 't' || comm[6] != '-' || comm[7] != 't' || comm[11] != 'p') return 0;
    u64 id = bpf_get_current_pid_tgid();
    struct ev e = { .pid = id >> 32, .tid = (u32)id };
    %s
    return 0;
}
""" % (decl, out)
b = BPF(text=text)
n = [0, 0]
def got(cpu, data, size): n[0] += 1
def got_ring(ctx, data, size): n[0] += 1
def lost(count): n[1] += count
if kind == "perf":
    b["events"].open_perf_buffer(got, lost_cb=lost)
    poll = lambda: b.perf_buffer_poll(timeout=50)
else:
    b["events"].open_ring_buffer(got_ring)
    poll = lambda: b.ring_buffer_poll(timeout=50)
stop = [False]
signal.signal(signal.SIGINT, lambda *a: stop.__setitem__(0, True))
print("READY", flush=True)
while not stop[0]:
    poll()
poll()
print("delivered %d lost %d" % (n[0], n[1]), flush=True)
"#;

fn bcc_row(kind: &str, work: &dyn Fn(u64) -> Vec<String>) -> Row {
    let tool = format!("BCC {kind} buffer (attached first)");
    let result = (|| -> Result<(Spread, Delivered)> {
        let (cost, summary, traced) = crate::peers::bcc_attached(BCC_SCRIPT, kind, work, BIG)?;
        let delivered = number_after_word(&summary, "delivered").unwrap_or(0);
        // The perf buffer reports its losses; BCC's ring buffer drops silently (a full
        // ring fails the output in BPF and nothing counts it): lost is what is missing.
        let reported = number_after_word(&summary, "lost").unwrap_or(0);
        let lost = reported.max(BIG.saturating_sub(delivered));
        Ok((cost, (delivered, lost, traced)))
    })();
    match result {
        Ok((cost, delivered)) => Row {
            tool,
            cost: Ok(cost),
            delivered: Ok(delivered),
        },
        Err(e) => Row {
            tool,
            delivered: Err(anyhow::anyhow!("{e:#}")),
            cost: Err(e),
        },
    }
}
