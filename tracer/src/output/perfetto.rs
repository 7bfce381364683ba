//! A timeline as Chrome trace-event JSON (the "JSON Object Format" that ui.perfetto.dev and
//! chrome://tracing open): a track per thread named by its comm, probe and watch hits as
//! instant events, entry/return pairs (probe and `%return`, `sys_enter_X` and `sys_exit_X`)
//! as complete slices, time on CPU (switch in to switch out) as `running` slices, and each
//! sampled counter as a counter track per process (running total), with each sample also an
//! instant on its thread carrying its ip and stack: as arguments (the frames, innermost first,
//! which Perfetto's UI lists) and as an `sf` reference into the trace's `stackFrames`
//! dictionary (the trace-event format's stacks, which chrome://tracing draws).

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value as Json};

use crate::output::events::json_value;
use crate::output::stack::{Frame, Space};
use crate::output::timeline::{Item, ItemKind};

/// The function (or syscall) a probe name is about, and whether it is its return side.
pub fn pair_key(source: &str) -> Option<(String, bool)> {
    if let Some(rest) = source.strip_prefix("syscalls:sys_enter_") {
        return Some((format!("syscall {rest}"), false));
    }
    if let Some(rest) = source.strip_prefix("syscalls:sys_exit_") {
        return Some((format!("syscall {rest}"), true));
    }
    if let Some(rest) = source.strip_prefix("uretprobe:") {
        return Some((rest.to_string(), true));
    }
    if let Some(rest) = source.strip_prefix("uprobe:") {
        return Some((rest.to_string(), false));
    }
    if let Some(rest) = source.strip_prefix("kretprobe:") {
        return Some((rest.to_string(), true));
    }
    if let Some(rest) = source.strip_suffix("%return") {
        return Some((rest.trim_start_matches("kprobe:").to_string(), true));
    }
    if source.contains(':') && !source.starts_with("kprobe:") {
        // Other tracepoints, watches, counters and scheduler records are points.
        return None;
    }
    Some((source.trim_start_matches("kprobe:").to_string(), false))
}

fn micros(time_ns: u64, start_ns: u64) -> f64 {
    (time_ns as i128 - start_ns as i128) as f64 / 1000.0
}

fn args_json(item: &Item) -> Map<String, Json> {
    let mut args: Map<String, Json> = (item.args.iter())
        .map(|(n, v)| (n.clone(), json_value(v)))
        .collect();
    if let Some(ret) = &item.ret {
        args.insert("ret".into(), json_value(ret));
    }
    if let Some(errno) = item.errno {
        args.insert("errno".into(), errno.into());
    }
    args.insert("cpu".into(), item.cpu.into());
    args
}

fn instant(item: &Item, start_ns: u64, category: &str) -> Json {
    json!({
        "name": item.source,
        "cat": category,
        "ph": "i",
        "s": "t",
        "ts": micros(item.time_ns, start_ns),
        "pid": item.pid,
        "tid": item.tid,
        "args": args_json(item),
    })
}

/// The trace-event format's `stackFrames` dictionary: one node per (caller node, frame), so
/// stacks that share their outer frames share nodes; ids are strings, as the format has them.
#[derive(Default)]
struct StackFrames {
    ids: HashMap<(Option<usize>, String, &'static str), usize>,
    nodes: Map<String, Json>,
}

impl StackFrames {
    /// The id of the innermost node of `frames` (innermost first), adding the nodes missing.
    fn intern(&mut self, frames: &[Frame]) -> Option<usize> {
        let mut parent = None;
        for frame in frames.iter().rev() {
            let name = match &frame.symbol {
                Some(symbol) => symbol.clone(),
                None => format!("[unknown] {:#x}", frame.addr),
            };
            let category = match frame.space {
                Space::Kernel => "kernel",
                Space::User => "user",
            };
            let next = self.ids.len();
            let id = *(self.ids.entry((parent, name.clone(), category))).or_insert(next);
            if id == next {
                let mut node = json!({ "name": name, "category": category });
                if let Some(p) = parent {
                    node["parent"] = p.to_string().into();
                }
                self.nodes.insert(id.to_string(), node);
            }
            parent = Some(id);
        }
        parent
    }
}

/// A sample as an instant on its thread: its arguments, its frames, and its stack node.
fn sample_instant(item: &Item, start_ns: u64, frames: &mut StackFrames) -> Json {
    let mut event = instant(item, start_ns, "sample");
    if !item.stack.is_empty() {
        let texts: Vec<String> = item.stack.iter().map(Frame::text).collect();
        event["args"]["stack"] = texts.into();
    }
    if let Some(id) = frames.intern(&item.stack) {
        event["sf"] = id.to_string().into();
    }
    event
}

/// The whole trace document for `items` (in time order); times are microseconds since
/// `start_ns`.
pub fn document(items: &[Item], start_ns: u64) -> Json {
    let mut events: Vec<Json> = Vec::new();
    let mut frames = StackFrames::default();
    // Open entries per (tid, function): the entry item, awaiting its return.
    let mut open: HashMap<(u32, String), Vec<&Item>> = HashMap::new();
    // Switch-in per tid.
    let mut running: HashMap<u32, &Item> = HashMap::new();
    let mut totals: HashMap<(u32, &str), u64> = HashMap::new();
    let mut threads: BTreeMap<(u32, u32), &str> = BTreeMap::new();
    for item in items {
        if !item.comm.is_empty() {
            threads.insert((item.pid, item.tid), &item.comm);
        } else {
            threads.entry((item.pid, item.tid)).or_insert("");
        }
        match item.kind {
            ItemKind::Probe | ItemKind::Return => match pair_key(&item.source) {
                Some((function, false)) => open.entry((item.tid, function)).or_default().push(item),
                Some((function, true)) => {
                    match open
                        .get_mut(&(item.tid, function.clone()))
                        .and_then(Vec::pop)
                    {
                        Some(entry) => {
                            let mut args = args_json(entry);
                            for (k, v) in args_json(item) {
                                if k != "cpu" {
                                    args.insert(k, v);
                                }
                            }
                            events.push(json!({
                                "name": function,
                                "cat": "probe",
                                "ph": "X",
                                "ts": micros(entry.time_ns, start_ns),
                                "dur": micros(item.time_ns, entry.time_ns),
                                "pid": item.pid,
                                "tid": item.tid,
                                "args": args,
                            }));
                        }
                        None => events.push(instant(item, start_ns, "probe")),
                    }
                }
                None => events.push(instant(item, start_ns, "probe")),
            },
            ItemKind::Watch => events.push(instant(item, start_ns, "watch")),
            ItemKind::Task => events.push(instant(item, start_ns, "task")),
            ItemKind::Switch => {
                let out = item.source.ends_with("out");
                match (out, running.remove(&item.tid)) {
                    (false, _) => {
                        running.insert(item.tid, item);
                    }
                    (true, Some(start)) => events.push(json!({
                        "name": "running",
                        "cat": "sched",
                        "ph": "X",
                        "ts": micros(start.time_ns, start_ns),
                        "dur": micros(item.time_ns, start.time_ns),
                        "pid": item.pid,
                        "tid": item.tid,
                        "args": { "cpu": start.cpu },
                    })),
                    (true, None) => events.push(instant(item, start_ns, "sched")),
                }
            }
            ItemKind::Sample => {
                let period = match item.args.first() {
                    Some((_, crate::kernel::format::Value::Uint(p))) => *p,
                    _ => 0,
                };
                let total = totals.entry((item.pid, item.source.as_str())).or_default();
                *total += period;
                events.push(json!({
                    "name": item.source,
                    "cat": "counter",
                    "ph": "C",
                    "ts": micros(item.time_ns, start_ns),
                    "pid": item.pid,
                    "args": { "total": *total },
                }));
                // Recordings before samples had an ip (file format 2) have only the counter.
                if item.args.iter().any(|(name, _)| name == "ip") {
                    events.push(sample_instant(item, start_ns, &mut frames));
                }
            }
        }
    }
    // Entries whose return was not recorded, and threads still on a CPU at the end, are
    // points in time.
    let mut unreturned: Vec<&Item> = open.into_values().flatten().collect();
    unreturned.extend(running.into_values());
    unreturned.sort_by_key(|i| i.time_ns);
    events.extend(unreturned.into_iter().map(|i| {
        let category = if i.kind == ItemKind::Switch {
            "sched"
        } else {
            "probe"
        };
        instant(i, start_ns, category)
    }));
    for ((pid, tid), comm) in &threads {
        if pid == tid || !threads.contains_key(&(*pid, *pid)) {
            events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": format!("{comm} ({pid})")}}));
        }
        events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": format!("{comm} {tid}")}}));
    }
    let mut doc = json!({ "traceEvents": events, "displayTimeUnit": "ns" });
    if !frames.nodes.is_empty() {
        doc["stackFrames"] = Json::Object(frames.nodes);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::format::Value;

    fn item(time_ns: u64, tid: u32, source: &str, kind: ItemKind) -> Item {
        Item {
            time_ns,
            cpu: tid % 2,
            pid: 10,
            tid,
            comm: "prog".into(),
            source: source.into(),
            kind,
            args: Vec::new(),
            ret: None,
            errno: None,
            stack: Vec::new(),
        }
    }

    fn frame(symbol: &str, space: Space) -> Frame {
        Frame {
            addr: 0x10,
            space,
            symbol: Some(symbol.into()),
            offset: 4,
            file: None,
            line: None,
            build_id: None,
            mapped: None,
            function: None,
        }
    }

    #[test]
    fn samples_share_stack_frame_nodes_from_the_root() {
        let sample = |time_ns, stack: &[(&str, Space)]| {
            let mut s = item(time_ns, 11, "cpu-clock", ItemKind::Sample);
            s.args = vec![
                ("period".into(), Value::Uint(1)),
                ("ip".into(), Value::Word(format!("{}+0x4", stack[0].0))),
            ];
            s.stack = stack.iter().map(|(n, sp)| frame(n, *sp)).collect();
            s
        };
        let user = Space::User;
        let items = vec![
            sample(1_000, &[("hot", user), ("outer", user), ("main", user)]),
            sample(2_000, &[("cold", user), ("outer", user), ("main", user)]),
            sample(
                3_000,
                &[
                    ("tick", Space::Kernel),
                    ("hot", user),
                    ("outer", user),
                    ("main", user),
                ],
            ),
        ];
        let doc = document(&items, 0);
        let frames = doc["stackFrames"].as_object().unwrap();
        // main, outer, hot, cold, tick: shared outer frames are one node each.
        assert_eq!(frames.len(), 5);
        let chain = |sf: &Json| {
            let mut out = Vec::new();
            let mut at = sf.as_str().map(str::to_string);
            while let Some(id) = at {
                let node = &frames[&id];
                out.push(format!(
                    "{}:{}",
                    node["category"].as_str().unwrap(),
                    node["name"].as_str().unwrap()
                ));
                at = node["parent"].as_str().map(str::to_string);
            }
            out.join(" ")
        };
        let samples: Vec<&Json> = (doc["traceEvents"].as_array().unwrap().iter())
            .filter(|e| e["cat"] == "sample")
            .collect();
        let chains: Vec<String> = samples.iter().map(|e| chain(&e["sf"])).collect();
        assert_eq!(
            chains,
            [
                "user:hot user:outer user:main",
                "user:cold user:outer user:main",
                "kernel:tick user:hot user:outer user:main"
            ]
        );
        assert_eq!(samples[0]["ph"], "i");
        assert_eq!(samples[0]["args"]["ip"], "hot+0x4");
        assert_eq!(
            samples[0]["args"]["stack"],
            json!(["hot+0x4", "outer+0x4", "main+0x4"])
        );
        // The counter track is still there.
        assert_eq!(
            (doc["traceEvents"].as_array().unwrap().iter())
                .filter(|e| e["ph"] == "C")
                .count(),
            3
        );
    }

    #[test]
    fn probe_names_pair_entries_with_returns() {
        assert_eq!(
            pair_key("do_sys_openat2"),
            Some(("do_sys_openat2".into(), false))
        );
        assert_eq!(
            pair_key("do_sys_openat2%return"),
            Some(("do_sys_openat2".into(), true))
        );
        assert_eq!(
            pair_key("kretprobe:vfs_read"),
            Some(("vfs_read".into(), true))
        );
        assert_eq!(
            pair_key("uprobe:/bin/x:f"),
            Some(("/bin/x:f".into(), false))
        );
        assert_eq!(
            pair_key("uretprobe:/bin/x:f"),
            Some(("/bin/x:f".into(), true))
        );
        assert_eq!(
            pair_key("syscalls:sys_exit_read"),
            Some(("syscall read".into(), true))
        );
        assert_eq!(pair_key("sched:sched_switch"), None);
        assert_eq!(pair_key("watch:counter"), None);
    }

    #[test]
    fn slices_instants_counters_and_names() {
        let mut ret = item(5_000, 11, "uretprobe:/bin/x:f", ItemKind::Return);
        ret.ret = Some(Value::Int(7));
        let mut sample = item(6_000, 11, "task-clock", ItemKind::Sample);
        sample.args = vec![("period".into(), Value::Uint(250))];
        let mut sample2 = sample.clone();
        sample2.time_ns = 7_000;
        let items = vec![
            item(1_000, 11, "uprobe:/bin/x:f", ItemKind::Probe),
            item(2_000, 12, "switch-in", ItemKind::Switch),
            item(3_000, 11, "watch:counter", ItemKind::Watch),
            item(4_000, 12, "switch-out", ItemKind::Switch),
            ret,
            sample,
            sample2,
            item(8_000, 10, "syscalls:sys_enter_getppid", ItemKind::Probe),
        ];
        let doc = document(&items, 0);
        let events = doc["traceEvents"].as_array().unwrap();
        let find = |ph: &str, name: &str| -> Vec<&Json> {
            events
                .iter()
                .filter(|e| e["ph"] == ph && e["name"] == name)
                .collect()
        };
        let slice = find("X", "/bin/x:f");
        assert_eq!(slice.len(), 1);
        assert_eq!(
            (slice[0]["ts"].as_f64(), slice[0]["dur"].as_f64()),
            (Some(1.0), Some(4.0))
        );
        assert_eq!(slice[0]["args"]["ret"], 7);
        let running = find("X", "running");
        assert_eq!(
            (running[0]["ts"].as_f64(), running[0]["dur"].as_f64()),
            (Some(2.0), Some(2.0))
        );
        assert_eq!(running[0]["tid"], 12);
        assert_eq!(find("i", "watch:counter")[0]["s"], "t");
        // An entry never returned is an instant.
        assert_eq!(find("i", "syscalls:sys_enter_getppid").len(), 1);
        let counter: Vec<u64> = find("C", "task-clock")
            .iter()
            .map(|e| e["args"]["total"].as_u64().unwrap())
            .collect();
        assert_eq!(counter, vec![250, 500]);
        let names: Vec<String> = find("M", "thread_name")
            .iter()
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, vec!["prog 10", "prog 11", "prog 12"]);
        assert_eq!(find("M", "process_name").len(), 1);
        assert_eq!(doc["displayTimeUnit"], "ns");
    }
}
