//! `symbolize`: tracer's symbolizer against blazesym on the same addresses (the `symbench`
//! crate, built only here): kernel addresses from kallsyms, and the function addresses of a
//! running process's executable (with DWARF) and libraries. Each implementation runs in its
//! own process: time for a cold pass (files read) and a warm one (lookups only), peak memory
//! growth, how many addresses each named (and with a source line), and how often the two
//! agree on the name.

use std::collections::HashMap;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::peers::{s, ROUNDS};
use crate::{root, run_cmd, section};

/// One symbench run's JSON line.
fn symbench(args: &[String]) -> Result<serde_json::Value> {
    let bin = root().join("target/release/symbench");
    let out = Command::new(&bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    if !out.status.success() {
        bail!(
            "symbench {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("symbench printed no JSON")
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

pub fn symbolize() -> Result<()> {
    section("bench: symbolization, tracer (stacks.rs) vs blazesym, same addresses");
    run_cmd(crate::cargo().args(["build", "--release", "-p", "symbench"]))?;
    // A process to symbolize: the profile workload (frame pointers, DWARF) napping 60 s.
    let busy = crate::profile::busy()?;
    let mut target = Command::new(&busy)
        .args(["0", "1", "60000", "0", "0"])
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the workload")?;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = target.id().to_string();
    let result = (|| -> Result<Vec<serde_json::Value>> {
        let mut rows = Vec::new();
        for kind in ["kernel", "user"] {
            let mut names: HashMap<&str, serde_json::Value> = HashMap::new();
            let mut measured = Vec::new();
            for which in ["tracer", "blazesym"] {
                let args = match kind {
                    "kernel" => s(&[kind, which]),
                    _ => s(&[kind, which, &pid]),
                };
                let (mut cold, mut warm, mut peak) = (Vec::new(), Vec::new(), Vec::new());
                let mut last = serde_json::Value::Null;
                for _ in 0..ROUNDS {
                    let run = symbench(&args)?;
                    cold.push(run["cold_ms"].as_f64().unwrap_or(f64::NAN));
                    warm.push(run["warm_ms"].as_f64().unwrap_or(f64::NAN));
                    peak.push(run["peak_growth_kib"].as_f64().unwrap_or(f64::NAN));
                    last = run;
                }
                names.insert(which, last["names"].take());
                measured.push((which, median(cold), median(warm), median(peak), last));
            }
            // The same address named the same (function and line) by both, or by neither.
            let (a, b) = (&names["tracer"], &names["blazesym"]);
            let pairs = a
                .as_array()
                .zip(b.as_array())
                .map_or(0, |(a, b)| a.len().min(b.len()));
            let same = (0..pairs).filter(|&i| a[i] == b[i]).count();
            let same_name = (0..pairs).filter(|&i| a[i][1][0] == b[i][1][0]).count();
            let disagreements: Vec<String> = (0..pairs)
                .filter(|&i| a[i][1][0] != b[i][1][0])
                .take(5)
                .map(|i| {
                    format!(
                        "{:#x}: tracer {} blazesym {}",
                        a[i][0].as_u64().unwrap_or(0),
                        a[i][1],
                        b[i][1]
                    )
                })
                .collect();
            println!(
                "\n{kind}: {pairs} addresses; same function name {same_name} ({:.1}%), same name and line {same} ({:.1}%)",
                same_name as f64 * 100.0 / pairs.max(1) as f64,
                same as f64 * 100.0 / pairs.max(1) as f64
            );
            for d in &disagreements {
                println!("  differs: {d}");
            }
            println!(
                "{:<10} {:>9} {:>15} {:>9} {:>13} {:>12} {:>8} {:>10}",
                "impl",
                "cold ms",
                "min..max",
                "warm ms",
                "min..max",
                "peak +MiB",
                "named",
                "with line"
            );
            for (which, cold, warm, peak, last) in measured {
                println!(
                    "{which:<10} {:>9.1} {:>15} {:>9.1} {:>13} {:>12.1} {:>8} {:>10}",
                    cold.0,
                    format!("{:.1}..{:.1}", cold.1, cold.2),
                    warm.0,
                    format!("{:.1}..{:.1}", warm.1, warm.2),
                    peak.0 / 1024.0,
                    last["named"],
                    last["with_line"]
                );
                rows.push(serde_json::json!({
                    "case": format!("{kind}: {which}"),
                    "addresses": last["addresses"],
                    "cold_ms": (cold.0 * 10.0).round() / 10.0,
                    "warm_ms": (warm.0 * 10.0).round() / 10.0,
                    "peak_growth_mib": (peak.0 / 102.4).round() / 10.0,
                    "named": last["named"], "with_line": last["with_line"],
                    "same_name_pct": (same_name as f64 * 1000.0 / pairs.max(1) as f64).round() / 10.0,
                }));
            }
        }
        Ok(rows)
    })();
    let _ = target.kill();
    let _ = target.wait();
    let rows = result?;
    crate::bench::save(
        "symbolize",
        &serde_json::json!({"bench": "symbolize", "version": 1, "rows": rows}).to_string(),
    )
}
