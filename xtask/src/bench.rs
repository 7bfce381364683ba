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
const BENCHES: [(&str, Bench); 16] = [
    ("startup", crate::startup::startup),
    ("attach", crate::attach::attach),
    ("streaming", crate::streaming::streaming),
    ("ring_drain", ring_drain),
    ("uprobe_hit", crate::uprobe::uprobe_hit),
    // In VMs (kprobes and fentry are missing here): a few minutes.
    ("fentry_hit", crate::trampoline::fentry_hit),
    ("watch_hit", crate::peers::watch_hit),
    ("latency_call", crate::peers::latency_call),
    ("count_event", crate::peers::count_event),
    ("record_throughput", crate::peers::record_throughput),
    ("trace_call", crate::peers::trace_call),
    ("profile", crate::profile::profile),
    // A minute per tool.
    ("profile_memory", crate::profile::profile_memory),
    ("symbolize", crate::symbolize::symbolize),
    ("serve", crate::serve::serve),
    // Ten minutes: run only when named (`cargo xtask bench soak`).
    ("soak", crate::soak::soak),
];

/// Benchmarks a bare `cargo xtask bench` leaves out (they take minutes).
const ONLY_WHEN_NAMED: [&str; 1] = ["soak"];

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
        if args.is_empty() && ONLY_WHEN_NAMED.contains(&name) {
            println!("bench {name}: skipped, run it by name (cargo xtask bench {name})");
            continue;
        }
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

/// Writes a benchmark's JSON line, with the machine it ran on, to target/bench/NAME.json and
/// its tables as Markdown to target/bench/NAME.md, and renders every NAME.json there into
/// target/bench/benchmarks.md.
pub fn save(name: &str, json: &str) -> Result<()> {
    let dir = root().join("target/bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut value: serde_json::Value =
        serde_json::from_str(json).with_context(|| format!("{name}: the JSON does not parse"))?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("machine".into(), machine().into());
    }
    let path: PathBuf = dir.join(format!("{name}.json"));
    std::fs::write(&path, format!("{value}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let md = dir.join(format!("{name}.md"));
    std::fs::write(&md, markdown(name, &value))
        .with_context(|| format!("cannot write {}", md.display()))?;
    let mut all = String::from("# Benchmarks (generated by `cargo xtask bench`)\n");
    for (bench, _) in BENCHES {
        let json = std::fs::read_to_string(dir.join(format!("{bench}.json")));
        if let Ok(value) = json.as_deref().map(serde_json::from_str) {
            all.push('\n');
            all.push_str(&markdown(bench, &value.unwrap_or_default()));
        }
    }
    let all_path = dir.join("benchmarks.md");
    std::fs::write(&all_path, all)
        .with_context(|| format!("cannot write {}", all_path.display()))?;
    println!(
        "wrote {}, {} and {}",
        path.display(),
        md.display(),
        all_path.display()
    );
    Ok(())
}

/// The machine and time of a run: kernel, CPU model and count, UTC date.
fn machine() -> String {
    let output = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |m| m.trim().to_string());
    format!(
        "kernel {}, {} x {model}, {}",
        output("uname", &["-r"]),
        output("nproc", &[]),
        output("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    )
}

/// A benchmark's JSON as Markdown: each top-level array of objects (`rows`, `cases`, ...) as a
/// table, and each one an object holds (`rows.unpinned`, `rows.pinned`), the naming column
/// (`tool`, `case`) first; the other scalars as a list.
fn markdown(name: &str, value: &serde_json::Value) -> String {
    use serde_json::Value;
    let machine = value["machine"]
        .as_str()
        .unwrap_or("not recorded (an older run)");
    let mut text = format!("## {name}\n\nMachine: {machine}.\n");
    let Some(fields) = value.as_object() else {
        return text;
    };
    let mut facts = Vec::new();
    for (key, field) in fields {
        match field {
            Value::Array(rows) if is_table(rows) => table(&mut text, key, rows),
            Value::Object(parts) => {
                for (part, rows) in parts {
                    if let Value::Array(rows) = rows {
                        if is_table(rows) {
                            table(&mut text, &format!("{key}.{part}"), rows);
                        }
                    }
                }
            }
            Value::Array(_) => {}
            _ if key == "machine" => {}
            scalar => facts.push(format!("- {key}: {}", cell(scalar))),
        }
    }
    if !facts.is_empty() {
        text.push_str(&format!("\n{}\n", facts.join("\n")));
    }
    text
}

/// Whether a JSON array is a table: objects, at least one.
fn is_table(rows: &[serde_json::Value]) -> bool {
    !rows.is_empty() && rows.iter().all(serde_json::Value::is_object)
}

/// One Markdown table of `rows` under the heading `key`: a column per key any row has.
fn table(text: &mut String, key: &str, rows: &[serde_json::Value]) {
    let mut columns: Vec<&String> = Vec::new();
    for row in rows.iter().filter_map(serde_json::Value::as_object) {
        for column in row.keys() {
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
    }
    columns.sort_by_key(|c| (!matches!(c.as_str(), "tool" | "case"), c.to_string()));
    text.push_str(&format!("\n`{key}`:\n\n"));
    let names: Vec<&str> = columns.iter().map(|c| c.as_str()).collect();
    text.push_str(&format!("| {} |\n", names.join(" | ")));
    text.push_str(&format!("|{}\n", " --- |".repeat(columns.len())));
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| row.get(c.as_str()).map_or(String::new(), cell))
            .collect();
        text.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
}

/// A JSON value as a table cell.
fn cell(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::String(s) => s.replace('|', "\\|"),
        Value::Null => String::new(),
        Value::Number(n) if !n.is_u64() && !n.is_i64() => {
            format!("{:.1}", n.as_f64().unwrap_or(f64::NAN))
        }
        other => other.to_string(),
    }
}
