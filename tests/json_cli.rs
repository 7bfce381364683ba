//! Every command's JSON against the one model, docs/schema/tracer.schema.json (docs/json.md):
//! each line of probe, trace, watch, latency, profile, report and features, on workloads
//! whose events are known, is valid against the schema, has the `type` it should, and carries
//! typed values and a wall-clock time that agree with the run.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use common::{chain_program, has, json_lines, spin_program, text, tracer};
use serde_json::{json, Value};
use tracer::kernel::features::Feature;

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schema/tracer.schema.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

/// The schema's definition a line of this `type` must match: the whole schema's `oneOf`
/// says only that some definition matched; this one says which field is wrong.
fn definition(kind: &str) -> &str {
    match kind {
        "sample" | "switch" | "task" => "event",
        other => other,
    }
}

/// The errors of `line` against the schema: against its type's definition, and against the
/// whole schema.
fn errors(line: &Value) -> Vec<String> {
    let whole = jsonschema::validator_for(schema()).expect("the schema compiles");
    let mut found: Vec<String> = whole.iter_errors(line).map(|e| e.to_string()).collect();
    if let Some(kind) = line["type"].as_str() {
        let mut one = json!({"$defs": schema()["$defs"].clone()});
        one["$schema"] = schema()["$schema"].clone();
        one["$ref"] = format!("#/$defs/{}", definition(kind)).into();
        let typed = jsonschema::validator_for(&one).expect("the definition compiles");
        found.extend(
            typed
                .iter_errors(line)
                .map(|e| format!("{kind}: {e} at {}", e.instance_path())),
        );
    }
    found
}

/// Checks every line against the schema; returns how many lines of each `type` there were.
fn conforming(lines: &[Value]) -> BTreeMap<String, usize> {
    let mut types = BTreeMap::new();
    for line in lines {
        let errors = errors(line);
        assert!(errors.is_empty(), "{line}\n{}", errors.join("\n"));
        *types
            .entry(line["type"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    types
}

fn counted(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

/// Each timed line's wall-clock time lies within the run (a minute's slack either side), and
/// is its monotonic time plus one offset for the whole run.
fn wall_clock_agrees(lines: &[Value]) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128;
    let minute = 60_000_000_000i128;
    let offsets: std::collections::BTreeSet<i128> = (lines.iter())
        .filter(|l| l.get("time_ns").is_some())
        .map(|l| {
            let wall = l["time_unix_ns"].as_u64().expect("a wall-clock time") as i128;
            assert!((now - minute..now + minute).contains(&wall), "{l}");
            wall - l["time_ns"].as_u64().unwrap() as i128
        })
        .collect();
    assert!(offsets.len() <= 1, "one offset per run: {offsets:?}");
}

fn chain() -> String {
    chain_program().display().to_string()
}

fn succeeded(out: &std::process::Output) -> Vec<Value> {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    json_lines(&out.stdout)
}

/// The schema is strict: lines of version 1's shapes fail it, so a test above that passes
/// does so because the output has the model's shape.
#[test]
fn the_schema_refuses_what_version_1_wrote() {
    let v1_event = json!({"time_ns": 1, "cpu": 0, "pid": 1, "tid": 1, "comm": "cat",
        "probe": "syscalls:sys_enter_openat", "args": {"flags": "0x0"}, "ret": null});
    assert!(!errors(&v1_event).is_empty(), "no type");
    let mut typed = v1_event.clone();
    typed["type"] = "event".into();
    typed["time_unix_ns"] = Value::Null;
    assert!(errors(&typed).is_empty(), "{:?}", errors(&typed));
    // A frame of version 1 (`addr` a hex string, no `name`).
    typed["stack"] = json!([{"addr": "0x401136", "space": "user", "symbol": "b", "offset": 29,
        "file": null, "line": null, "build_id": null}]);
    assert!(!errors(&typed).is_empty());
    // trace's version 1 `args`: an array of {name, value, text}.
    let v1_call = json!({"type": "call", "time_ns": 1, "time_unix_ns": 2, "pid": 1, "tid": 1,
        "comm": "cat", "name": "close", "args": [{"name": "fd", "value": 3, "text": "3"}],
        "ret": 0, "errno": null, "duration_ns": 5, "unfinished": false});
    assert!(!errors(&v1_call).is_empty());
    // A named value has exactly its number and its text.
    let mut named = v1_call.clone();
    named["args"] = json!({"fd": {"value": 3, "name": "x"}});
    assert!(!errors(&named).is_empty());
    named["args"] = json!({"fd": {"value": 3, "text": "3"}});
    assert!(errors(&named).is_empty(), "{:?}", errors(&named));
}

/// `tracer probe -f json`: typed arguments (a bool, an enum's number and name, a pointer as a
/// number), returns with errnos, stacks of the one frame shape; and `--count-by` reports.
#[test]
fn probe_events_and_counts_follow_the_schema() {
    if !has(Feature::UprobePmu, "json probe") || !has(Feature::Bpf, "json probe") {
        return;
    }
    let chain = chain();
    let target = format!("uprobe:{chain}:chain_target");
    let fail = format!("uretprobe:{chain}:chain_fail");
    let out = tracer(&[
        "probe", "-f", "json", "-s", "user", &target, &fail, "--", &chain, "4",
    ]);
    let events = succeeded(&out);
    assert_eq!(conforming(&events), counted(&[("event", 8)]));
    wall_clock_agrees(&events);
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["probe"] == target.as_str())
        .collect();
    for (i, call) in (1..).zip(&calls) {
        assert_eq!(call["args"]["count"], i);
        assert_eq!(call["args"]["odd"], i % 2 == 1);
        assert_eq!(call["args"]["shade"], json!({"value": 5, "text": "GREEN"}));
        assert!(call["args"]["where"].is_u64(), "{call}");
        let frames = call["stack"].as_array().unwrap();
        let names: Vec<&str> = frames.iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(names[..3], ["chain_target", "chain_b", "chain_a"], "{call}");
        assert!(
            frames[0]["module"]
                .as_str()
                .unwrap()
                .ends_with("/tracer-chain"),
            "{call}"
        );
    }
    let errnos: Vec<&Value> = (events.iter())
        .filter(|e| e["probe"] == fail.as_str())
        .map(|e| &e["errno"])
        .collect();
    assert_eq!(
        errnos,
        [
            &json!("ENOENT"),
            &Value::Null,
            &json!("ENOENT"),
            &Value::Null
        ]
    );

    let out = tracer(&[
        "probe",
        "-f",
        "json",
        "--count-by",
        "comm,odd",
        &target,
        "--",
        &chain,
        "4",
    ]);
    let reports = succeeded(&out);
    assert_eq!(conforming(&reports), counted(&[("counts", 1)]));
    // A numeric key is a number (a bool argument's key is its 0 or 1, as the text table
    // shows it), the comm a string; two calls each.
    let mut rows: Vec<String> = (reports[0]["rows"].as_array().unwrap().iter())
        .map(|r| format!("{} {} {}", r["comm"], r["odd"], r["count"]))
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        ["\"tracer-chain\" 0 2", "\"tracer-chain\" 1 2"],
        "{}",
        reports[0]
    );
}

/// `tracer trace --format json`: calls with typed arguments, a handled signal, every exit.
#[test]
fn trace_calls_signals_and_exits_follow_the_schema() {
    common::require_root();
    let script = "trap : USR1; kill -USR1 $$; cat /etc/hostname >/dev/null; exit 3";
    let out = tracer(&["trace", "--format", "json", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let lines = json_lines(&out.stdout);
    let types = conforming(&lines);
    // The USR1 it sent itself, and cat's SIGCHLD.
    assert_eq!(types.get("signal"), Some(&2), "{types:?}");
    // sh and cat, each with its exit.
    assert_eq!(types.get("exit"), Some(&2), "{types:?}");
    assert!(types["call"] > 20, "{types:?}");
    wall_clock_agrees(&lines);
    let signals: Vec<&Value> = (lines.iter().filter(|l| l["type"] == "signal"))
        .map(|l| &l["signal"])
        .collect();
    assert_eq!(signals, [&json!("SIGUSR1"), &json!("SIGCHLD")]);
    let exits: Vec<&Value> = (lines.iter().filter(|l| l["type"] == "exit"))
        .map(|l| &l["exit_code"])
        .collect();
    assert_eq!(exits, [&json!(0), &json!(3)]);
    let open = (lines.iter())
        .find(|l| l["name"] == "openat" && l["args"]["filename"] == "/etc/hostname")
        .expect("cat's open");
    assert_eq!(
        open["args"]["dfd"],
        json!({"value": -100, "text": "AT_FDCWD"})
    );
    assert_eq!(
        open["args"]["flags"],
        json!({"value": 0, "text": "O_RDONLY"})
    );
    let exec = lines.iter().find(|l| l["name"] == "execve").unwrap();
    // Cut at strace's default -s 32, and said so.
    assert_eq!(exec["args"]["argv"], json!(["sh", "-c", &script[..32]]));
    assert_eq!(exec["truncated"], json!(["argv"]));
}

/// `tracer watch -f json`: each hit with its `at` frame, and the summary's `hits`.
#[test]
fn watch_hits_and_summaries_follow_the_schema() {
    if !has(Feature::Breakpoints, "json watch") || !has(Feature::Bpf, "json watch") {
        return;
    }
    let chain = chain();
    let out = tracer(&["watch", "chain_counter", "-f", "json", "--", &chain, "4"]);
    let hits = succeeded(&out);
    assert_eq!(conforming(&hits), counted(&[("hit", 4)]));
    wall_clock_agrees(&hits);
    let values: Vec<(u64, u64)> = (hits.iter())
        .map(|h| (h["old"].as_u64().unwrap(), h["new"].as_u64().unwrap()))
        .collect();
    assert_eq!(values, [(0, 1), (1, 3), (3, 6), (6, 10)]);
    assert!(hits
        .iter()
        .all(|h| h["at"]["symbol"] == "chain_target" && h["at"]["file"] == "chain.c"));
    let out = tracer(&[
        "watch",
        "chain_counter",
        "--summary",
        "-f",
        "json",
        "--",
        &chain,
        "4",
    ]);
    let summary = succeeded(&out);
    assert_eq!(conforming(&summary), counted(&[("hits", 1)]));
    assert_eq!(summary[0]["hits"], 4);
}

/// `tracer latency -f json`: the outliers as they happen, then the histogram.
#[test]
fn latency_outliers_and_histograms_follow_the_schema() {
    if !has(Feature::UprobePmu, "json latency") || !has(Feature::Bpf, "json latency") {
        return;
    }
    let chain = chain();
    let (from, to) = (
        format!("uprobe:{chain}:chain_a"),
        format!("uprobe:{chain}:chain_target"),
    );
    let mut args = common::chain_latency_args(&from, &to);
    args.extend(["--", &chain, "3"]);
    let out = tracer(&args);
    let lines = succeeded(&out);
    assert_eq!(
        conforming(&lines),
        counted(&[("histogram", 1), ("outlier", 3)])
    );
    wall_clock_agrees(&lines);
    assert_eq!(lines.last().unwrap()["type"], "histogram");
    assert_eq!(lines.last().unwrap()["count"], 3);
}

/// Outliers of a pair that ends in another task (the waker of each of testprog's 35 sleeps:
/// `ended_in`), and of several functions in one run (`function`), follow the schema. The
/// sleeps shown are at least those during which testprog blocked and did not wait for a CPU
/// (a preempted one may measure under the 3 ms asked, one that never blocked has no switch to
/// measure from: `common::undelayed_sleeps`), at most 35.
#[test]
fn outliers_say_where_they_ended_and_in_which_function() {
    if !has(Feature::Tracepoints, "json outliers") || !has(Feature::UprobePmu, "json outliers") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // Run again when the summary says a pair may be missing: the kernel skipped the programs
    // ("hits missed", as trace_cli does), or a start had no end before the next (as the
    // wakeuptime example does: `examples_cli::tools::latency_wakeuptime`).
    let mut tries = 0;
    let out = loop {
        tries += 1;
        let out = tracer(&[
            "latency",
            "--from",
            "sched:sched_switch",
            "--to",
            "sched:sched_waking",
            "--key",
            "prev_pid/pid",
            "--slower-than",
            "3ms",
            "-f",
            "json",
            "--",
            &prog,
            "sleeps",
            "1",
        ]);
        let stderr = text(&out.stderr);
        let least: usize = common::undelayed_sleeps(&stderr).iter().sum();
        let outliers = (json_lines(&out.stdout).iter())
            .filter(|l| l["type"] == "outlier")
            .count();
        let said = stderr.contains(" hits missed: ")
            || stderr.contains(" starts had no end before the next start");
        if outliers >= least || tries == 3 || !said {
            break out;
        }
    };
    let lines = succeeded(&out);
    let kinds = conforming(&lines);
    let least: usize = common::undelayed_sleeps(&text(&out.stderr)).iter().sum();
    let outliers = kinds.get("outlier").copied().unwrap_or(0);
    assert!(
        (least..=35).contains(&outliers) && kinds.get("histogram") == Some(&1),
        "{kinds:?}, at least {least} outliers"
    );
    // Each sleep ends in the task the timer interrupted, never the sleeper itself.
    let sleeper = lines[0]["tid"].clone();
    assert!(
        (lines.iter().filter(|l| l["type"] == "outlier"))
            .all(|l| l["tid"] == sleeper && l["ended_in"]["tid"] != sleeper),
        "{lines:?}"
    );
    let chain = chain();
    let functions: Vec<String> = ["chain_a", "chain_target"]
        .iter()
        .map(|f| format!("uprobe:{chain}:{f}"))
        .collect();
    let out = tracer(&[
        "latency",
        &functions[0],
        &functions[1],
        "--slower-than",
        "0",
        "-f",
        "json",
        "--",
        &chain,
        "3",
    ]);
    let lines = succeeded(&out);
    assert_eq!(
        conforming(&lines),
        counted(&[("histogram", 2), ("outlier", 6)])
    );
    let named = |f: &str| (lines.iter()).filter(|l| l["function"] == f).count();
    assert_eq!((named("chain_a"), named("chain_target")), (3, 3));
}

/// `tracer profile -f json` and `tracer features --json`: one object each.
#[test]
fn profiles_and_features_follow_the_schema() {
    if !has(Feature::Bpf, "json profile") {
        return;
    }
    let spin = spin_program().display().to_string();
    let out = tracer(&["profile", "-f", "json", "-F", "499", "--", &spin, "20"]);
    let profile = succeeded(&out);
    assert_eq!(conforming(&profile), counted(&[("profile", 1)]));
    let hot = (profile[0]["stacks"].as_array().unwrap().iter())
        .flat_map(|s| s["frames"].as_array().unwrap())
        .find(|f| f["name"] == "spin_inner")
        .unwrap_or_else(|| panic!("spin_inner sampled: {}", profile[0]));
    assert_eq!(
        (&hot["space"], &hot["symbol"]),
        (&json!("user"), &json!("spin_inner"))
    );
    let features = succeeded(&tracer(&["features", "--json"]));
    assert_eq!(conforming(&features), counted(&[("features", 1)]));
}

/// `tracer report -f json` of a recording: probe, return and watch items are events, page
/// faults samples, with the recording's wall clock.
#[test]
fn report_items_follow_the_schema() {
    if !has(Feature::UprobePmu, "json report")
        || !has(Feature::Breakpoints, "json report")
        || !has(Feature::Bpf, "json report")
    {
        return;
    }
    let chain = chain();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.tracer");
    let file = file.to_str().unwrap();
    let (call, ret) = (
        format!("uprobe:{chain}:chain_target"),
        format!("uretprobe:{chain}:chain_target"),
    );
    let out = tracer(&[
        "record",
        "-o",
        file,
        "-W",
        "chain_counter",
        "-P",
        &call,
        "-P",
        &ret,
        "-e",
        "page-faults",
        "--",
        &chain,
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let items = succeeded(&tracer(&["report", "-f", "json", file]));
    let types = conforming(&items);
    assert_eq!(types.get("event"), Some(&9), "{types:?}");
    assert!(types.get("sample").is_some_and(|&n| n > 0), "{types:?}");
    wall_clock_agrees(&items);
    let rets: Vec<&Value> = (items.iter())
        .filter(|i| i["probe"].as_str().unwrap().starts_with("uretprobe:"))
        .map(|i| &i["ret"])
        .collect();
    assert_eq!(rets, [&json!(3), &json!(6), &json!(9)]);
    let odd: Vec<&Value> = (items.iter())
        .filter(|i| i["probe"] == call.as_str())
        .map(|i| &i["args"]["odd"])
        .collect();
    assert_eq!(odd, [&json!(true), &json!(false), &json!(true)]);
}
