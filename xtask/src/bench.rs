//! `cargo xtask bench`: build in release mode, run the benchmarks, print their numbers and keep
//! each one's JSON line in target/bench/NAME.json.
//!
//! One function per benchmark in [`BENCHES`]. Comparisons with peers (bpftrace, perf, BCC on
//! the same workload) belong here too, as more entries: each prints its table and writes its
//! JSON with [`save`].

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{bail, Context, Result};

use crate::{root, run_cmd, section};

type Bench = fn() -> Result<()>;

/// Every benchmark, by the name `cargo xtask bench NAME` selects it with.
const BENCHES: [(&str, Bench); 8] = [
    ("startup", crate::startup::startup),
    ("streaming", crate::streaming::streaming),
    ("ring_drain", ring_drain),
    ("uprobe_hit", crate::uprobe::uprobe_hit),
    ("watch_hit", crate::peers::watch_hit),
    ("latency_call", crate::peers::latency_call),
    ("count_event", crate::peers::count_event),
    ("record_throughput", crate::peers::record_throughput),
];

/// Runs the benchmarks named in `args`, or all of them.
pub fn run(args: &[String]) -> Result<()> {
    let names: Vec<&str> = BENCHES.iter().map(|(name, _)| *name).collect();
    if let Some(bad) = args.iter().find(|a| !names.contains(&a.as_str())) {
        bail!(
            "unknown benchmark '{bad}'\nhint: benchmarks are: {}",
            names.join(", ")
        );
    }
    crate::setup::all()?;
    // A failed benchmark is reported and the others still run.
    let mut failed = Vec::new();
    for (name, bench) in BENCHES {
        if args.is_empty() || args.iter().any(|a| a == name) {
            if let Err(e) = bench() {
                println!("bench {name} failed: {e:#}");
                failed.push(name);
            }
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => bail!("benchmarks failed: {}", failed.join(", ")),
    }
}

/// Records per second through the ring protocol, the record parser and the `Event` decode
/// (tracer/benches/ring_drain.rs).
fn ring_drain() -> Result<()> {
    section("bench: ring drain and record parser (one core)");
    let bench = ["bench", "-p", "tracer", "--bench", "ring_drain"];
    // Build first with cargo's own output, so the measurement below runs alone.
    run_cmd(crate::cargo().args(bench).arg("--no-run"))?;
    let stdout = run_bench(&bench)?;
    let json = stdout
        .lines()
        .find(|l| l.starts_with("{\"bench\":\"ring_drain\""))
        .context("the ring_drain bench printed no JSON line")?;
    save("ring_drain", json)
}

/// Runs `cargo ARGS`, echoing its stdout line by line as it comes, and returns that stdout.
fn run_bench(args: &[&str]) -> Result<String> {
    let mut cmd = crate::cargo();
    cmd.args(args).stdout(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let mut stdout = String::new();
    let pipe = child.stdout.take().context("no stdout pipe")?;
    for line in BufReader::new(pipe).lines() {
        let line = line.context("cannot read the bench's output")?;
        println!("{line}");
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let status = child.wait().context("cannot wait for the bench")?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(stdout)
}

/// Writes a benchmark's JSON line to target/bench/NAME.json.
pub fn save(name: &str, json: &str) -> Result<()> {
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path: PathBuf = dir.join(format!("{name}.json"));
    std::fs::write(&path, format!("{json}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}
