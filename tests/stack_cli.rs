//! Tier 4: `-s/--stack` through the real binary: the user stacks of a known call chain
//! (main -> chain_a -> chain_b -> chain_target in tests/workloads/chain.c) from a uprobe and
//! from a watchpoint, and kernel stacks of a syscall tracepoint.

mod common;

use common::{
    chain_line, chain_program, expected_chain, has, json_lines, text, traced_chain as traced,
    user_frames,
};
use tracer::kernel::features::Feature;

/// `latency -s`: each slow call's stack is taken at its end, here chain_target's first
/// instruction; the chain is whole, down to main, with lines (the VM tier runs this on 5.10,
/// whose kernel does not put the direct caller back itself).
#[test]
fn latency_outlier_stacks_at_a_function_entry_keep_the_direct_caller() {
    if !has(Feature::UprobePmu, "latency_stacks") || !has(Feature::Bpf, "latency_stacks") {
        return;
    }
    let first = chain_line("_Bool odd, enum color shade) {");
    for outlier in common::chain_latency_outliers(3) {
        assert!(outlier["duration_ns"].as_u64().unwrap() > 0, "{outlier}");
        assert_eq!(
            user_frames(&outlier)[..4],
            expected_chain(first)[..],
            "{outlier}"
        );
    }
}

/// The chain built without frame pointers as every frame of its stack must name it, from the
/// probed function to the program's entry through libc.
const WHOLE_CHAIN: [&str; 7] = [
    "chain_target",
    "chain_b",
    "chain_a",
    "main",
    "__libc_start_call_main",
    "__libc_start_main",
    "_start",
];

/// `latency -s` in the chain built without frame pointers (`-O2`): the end (a uprobe on
/// chain_target's first instruction) copies the top of the user stack, unwound by CFI, so each
/// outlier's stack is the whole chain to `_start`.
#[test]
fn latency_outlier_stacks_of_a_program_without_frame_pointers_are_whole() {
    if !has(Feature::UprobePmu, "latency_nofp_stacks") || !has(Feature::Bpf, "latency_nofp_stacks")
    {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    for outlier in common::chain_latency_outliers_of(&program, 3) {
        let names: Vec<String> = (user_frames(&outlier).into_iter())
            .map(|(s, _)| s)
            .collect();
        assert_eq!(names, WHOLE_CHAIN, "{outlier}");
    }
}

/// A chain deeper than the 956 bytes of stack a hit copies, in code without frame pointers:
/// each stack is unwound as far as the copy goes, and the summary says so of every one.
#[test]
fn stacks_deeper_than_the_copy_are_said_to_be_cut_short() {
    if !has(Feature::UprobePmu, "deep_stacks") || !has(Feature::Bpf, "deep_stacks") {
        return;
    }
    let program = common::deep_program_without_frame_pointers();
    let spec = format!("uprobe:{}:deep_leaf", program.display());
    let out = common::tracer(&[
        "probe",
        "-s",
        "user",
        "-f",
        "json",
        &spec,
        "--",
        program.to_str().unwrap(),
        "3",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    for event in &events {
        let names: Vec<String> = (user_frames(event).into_iter()).map(|(s, _)| s).collect();
        // deep_leaf, then as many of deep_step's 80-byte frames as the copy holds.
        assert_eq!(names[0], "deep_leaf", "{event}");
        let steps = names[1..].iter().take_while(|n| *n == "deep_step").count();
        assert!((8..=14).contains(&steps), "{names:?}");
        assert!(!names.contains(&"main".to_string()), "{names:?}");
    }
    let said = "stacks: user stacks unwound from .eh_frame: 0 whole, 0 joined to the \
                frame-pointer walk, 3 cut short (3 past the copy of the stack's top)";
    assert!(stderr.lines().any(|l| l == said), "{stderr}");
}

/// The same chain with the end at chain_target's return (a uretprobe, whose registers are
/// the caller's at the return address), through `-- COMMAND`: the outliers are printed after
/// the command exited, its libraries known from the kernel's mmap records. Each stack is the
/// chain from chain_b, where chain_target returned to, down to `_start`.
#[test]
fn latency_outlier_stacks_at_a_return_of_a_command_that_exited_are_whole() {
    if !has(Feature::UprobePmu, "latency_ret_stacks") || !has(Feature::Bpf, "latency_ret_stacks") {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    let chain = program.display().to_string();
    let (from, to) = (
        format!("uprobe:{chain}:chain_a"),
        format!("uretprobe:{chain}:chain_target"),
    );
    let mut args = common::chain_latency_args(&from, &to);
    args.extend(["--", &chain, "3"]);
    let out = common::tracer(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let outliers: Vec<serde_json::Value> = (json_lines(&out.stdout).into_iter())
        .filter(|v| v["type"] == "outlier")
        .collect();
    assert_eq!(outliers.len(), 3, "{stderr}");
    for outlier in &outliers {
        let names: Vec<String> = (user_frames(outlier).into_iter()).map(|(s, _)| s).collect();
        assert_eq!(names, WHOLE_CHAIN[1..], "{outlier}");
    }
}

#[test]
fn uprobe_user_stacks_list_the_call_chain_in_order_with_source_lines() {
    if !has(Feature::UprobePmu, "uprobe_stacks") || !has(Feature::Bpf, "uprobe_stacks") {
        return;
    }
    let spec = format!("uprobe:{}:chain_target", chain_program().display());
    let (out, stderr) = traced(3, &["probe", "-s", "user", "-c", "3", "-f", "json", &spec]);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    // A uprobe fires on the function's first instruction, which DWARF puts on the line of `{`.
    let first = chain_line("_Bool odd, enum color shade) {");
    for event in &events {
        let frames = user_frames(event);
        assert!(frames.len() >= 4, "{frames:?}");
        assert_eq!(frames[..4], expected_chain(first)[..], "{event}");
    }
}

/// The same uprobe in the chain built as distributions build programs (`-O2`, no frame
/// pointers): the frame-pointer walk alone gives chain_target and its caller read at the
/// stack pointer; the copy of the stack's top, unwound by CFI, gives the whole chain to
/// main and on through libc to `_start`, with the same call-site lines.
#[test]
fn uprobe_stacks_of_a_program_without_frame_pointers_are_whole() {
    if !has(Feature::UprobePmu, "uprobe_nofp_stacks") || !has(Feature::Bpf, "uprobe_nofp_stacks") {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    let spec = format!("uprobe:{}:chain_target", program.display());
    let args = ["probe", "-s", "user", "-c", "3", "-f", "json", &spec];
    let (out, stderr) = common::traced_chain_of(&program, 3, &args);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    // The summary says how each copied top unwound.
    let said = "stacks: user stacks unwound from .eh_frame: 3 whole, 0 joined to the \
                frame-pointer walk, 0 cut short";
    assert!(stderr.lines().any(|l| l == said), "{stderr}");
    for event in &events {
        let names: Vec<String> = (user_frames(event).into_iter()).map(|(s, _)| s).collect();
        assert_eq!(names, WHOLE_CHAIN, "{event}");
        let lines: Vec<Option<u64>> = (user_frames(event).into_iter()).map(|(_, l)| l).collect();
        let call_sites = [
            chain_line("return chain_target(i,"),
            chain_line("return chain_b(i);"),
            chain_line("sum += chain_a(i)"),
        ];
        assert_eq!(
            lines[1..4],
            call_sites.map(|l| Some(u64::from(l)))[..],
            "{event}"
        );
    }
}

/// stackcount on the chain built without frame pointers: counted in the kernel, its user
/// stack is walked by frame pointers and ends early; with `--call-graph dwarf` each hit
/// streams with the top of its stack and is counted in tracer by the stack unwound from CFI:
/// one row of the 3 calls, the whole chain to `_start`, and the summary says where they were
/// counted.
#[test]
fn counted_stacks_are_whole_with_call_graph_dwarf() {
    if !has(Feature::UprobePmu, "counted_dwarf_stacks")
        || !has(Feature::Bpf, "counted_dwarf_stacks")
    {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    let spec = format!("uprobe:{}:chain_target", program.display());
    let program = program.display().to_string();
    let run = |dwarf: bool| {
        let mut args = vec!["probe", "--count-by", "comm", "-s", "user", "-f", "json"];
        if dwarf {
            args.extend(["--call-graph", "dwarf"]);
        }
        args.extend([spec.as_str(), "--", program.as_str(), "3"]);
        let out = common::tracer(&args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let reports = json_lines(&out.stdout);
        assert_eq!(reports.len(), 1, "{stderr}");
        let rows = reports[0]["rows"].as_array().cloned().unwrap_or_default();
        (rows, stderr)
    };
    let (rows, stderr) = run(true);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["count"], 3, "{rows:?}");
    let names: Vec<String> = (user_frames(&rows[0]).into_iter())
        .map(|(s, _)| s)
        .collect();
    assert_eq!(names, WHOLE_CHAIN, "{rows:?}");
    assert!(stderr.contains("3 hits counted in tracer"), "{stderr}");
    let said = "stacks: user stacks unwound from .eh_frame: 3 whole, 0 joined to the \
                frame-pointer walk, 0 cut short";
    assert!(stderr.lines().any(|l| l == said), "{stderr}");

    let (rows, stderr) = run(false);
    let counted: u64 = rows.iter().filter_map(|r| r["count"].as_u64()).sum();
    assert_eq!(counted, 3, "{rows:?}");
    for row in &rows {
        let names: Vec<String> = (user_frames(row).into_iter()).map(|(s, _)| s).collect();
        assert_eq!(names[0], "chain_target", "{row}");
        assert!(names.len() < WHOLE_CHAIN.len(), "{row}");
    }
    assert!(stderr.contains("3 hits counted in the kernel"), "{stderr}");
}

#[test]
fn watchpoint_user_stacks_show_who_wrote_and_through_which_calls() {
    if !has(Feature::Breakpoints, "watch_stacks") || !has(Feature::Bpf, "watch_stacks") {
        return;
    }
    let (out, stderr) = traced(
        4,
        &["watch", "-s", "-c", "4", "-f", "json", "chain_counter"],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 4, "{stderr}");
    let write = chain_line("chain_counter += count;");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["new"], (1..=i as u64 + 1).sum::<u64>(), "{event}");
        let frames = user_frames(event);
        assert!(frames.len() >= 4, "{frames:?}");
        assert_eq!(frames[..4], expected_chain(write)[..], "{event}");
    }
}

/// `watch -s` in the chain built without frame pointers (`-O2`): the hit copies the top of the
/// user stack at the trap, and its unwinding by CFI names the whole chain that wrote, to
/// `_start`, where the frame-pointer walk gives the writing function alone.
#[test]
fn watchpoint_stacks_of_a_program_without_frame_pointers_are_whole() {
    if !has(Feature::Breakpoints, "watch_nofp_stacks") || !has(Feature::Bpf, "watch_nofp_stacks") {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    let args = ["watch", "-s", "-c", "3", "-f", "json", "chain_counter"];
    let (out, stderr) = common::traced_chain_of(&program, 3, &args);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["new"], (1..=i as u64 + 1).sum::<u64>(), "{event}");
        let names: Vec<String> = (user_frames(event).into_iter()).map(|(s, _)| s).collect();
        assert_eq!(names, WHOLE_CHAIN, "{event}");
    }
}

/// The same through `-- COMMAND`: the command exits right after its writes, so the hits are
/// printed once it is gone, and its libraries, mapped after tracer adopted it at its exec,
/// are known from the kernel's mmap records (they were `[unknown]`, and the unwind stopped
/// at main).
#[test]
fn watchpoint_stacks_of_a_command_that_exited_are_whole() {
    if !has(Feature::Breakpoints, "watch_exited_stacks")
        || !has(Feature::Bpf, "watch_exited_stacks")
    {
        return;
    }
    let program = common::chain_program_without_frame_pointers();
    let program = program.display().to_string();
    let out = common::tracer(&[
        "watch",
        "-s",
        "-f",
        "json",
        "chain_counter",
        "--",
        &program,
        "3",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    for event in &events {
        let names: Vec<String> = (user_frames(event).into_iter()).map(|(s, _)| s).collect();
        assert_eq!(names, WHOLE_CHAIN, "{event}");
    }
}

/// An execute breakpoint on chain_target's first instruction traps before the function
/// pushed its frame: the frame-pointer walk from there skips chain_b (the kernel repairs this
/// for uprobes, not for breakpoints), and the caller read at the stack pointer puts it back.
/// Through `-p` (per-CPU breakpoints): the same chain as the uprobe's. With `-s both`, the
/// kernel side of a trap taken in user mode has no frames (not a stack lost).
#[test]
fn execute_breakpoint_stacks_at_a_function_entry_keep_the_direct_caller() {
    if !has(Feature::Breakpoints, "exec_stacks") || !has(Feature::Bpf, "exec_stacks") {
        return;
    }
    let (out, stderr) = traced(
        3,
        &[
            "watch",
            "-t",
            "x",
            "-s",
            "both",
            "-c",
            "3",
            "-f",
            "json",
            "chain_target",
        ],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 3, "{stderr}");
    assert!(!stderr.contains("not captured"), "{stderr}");
    let first = chain_line("_Bool odd, enum color shade) {");
    for event in &events {
        let frames = user_frames(event);
        assert!(frames.len() >= 4, "{frames:?}");
        assert_eq!(frames[..4], expected_chain(first)[..], "{event}");
        let stack = event["stack"].as_array().unwrap();
        assert!(stack.iter().all(|f| f["space"] == "user"), "{event}");
    }
}

#[test]
fn text_output_prints_each_frame_under_its_event() {
    if !has(Feature::UprobePmu, "stack_text") || !has(Feature::Bpf, "stack_text") {
        return;
    }
    let spec = format!("uprobe:{}:chain_b", chain_program().display());
    let (out, _) = traced(1, &["probe", "--stack", "user", "-c", "1", &spec]);
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // Header, the event, then its frames indented by 8 spaces: chain_b, chain_a, main.
    assert!(
        lines[1].contains("uprobe:") && lines[1].contains(":chain_b"),
        "{stdout}"
    );
    let call = chain_line("return chain_b(i);");
    assert!(
        lines[2].starts_with("        chain_b+0x0 (chain.c:"),
        "{stdout}"
    );
    assert_eq!(
        lines[3].trim_start().split_once(" (").map(|(_, l)| l),
        Some(format!("chain.c:{call})").as_str()),
        "{stdout}"
    );
    assert!(lines[3].trim_start().starts_with("chain_a+0x"), "{stdout}");
    assert!(lines[4].trim_start().starts_with("main+0x"), "{stdout}");
}

/// `tracer probe -s -f json PROBE...` over two getppid calls: its output and its two events.
fn stacks_of_two_getppids(probe: &[&str]) -> (std::process::Output, Vec<serde_json::Value>) {
    let prog = common::testprog();
    let mut args = vec!["probe", "-s", "-f", "json"];
    args.extend(probe);
    args.extend(["--", prog.to_str().unwrap(), "getppid", "2"]);
    let out = common::tracer(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 2, "{}", text(&out.stderr));
    (out, events)
}

#[test]
fn kernel_stacks_of_a_syscall_tracepoint_go_through_the_syscall_entry() {
    if !has(Feature::Tracepoints, "kernel_stacks") || !has(Feature::Bpf, "kernel_stacks") {
        return;
    }
    let (out, events) = stacks_of_two_getppids(&["syscalls:sys_enter_getppid"]);
    // Before 6.12 the kernel hands a syscall tracepoint's BPF program the user registers, so
    // it walks no kernel frames (5.10 and 6.1 in the VM tier): said, never silent.
    if common::kernel_version() < (6, 12) {
        for event in &events {
            let error = serde_json::json!([{"error": "the kernel gave no frames here"}]);
            assert_eq!(event["stack"], error, "{event}");
        }
        assert!(
            text(&out.stderr).contains("2 hits without frames: the kernel gave no stack there"),
            "{}",
            text(&out.stderr)
        );
        // The way round the note names: the raw syscall tracepoint has kernel stacks there.
        let (_, events) =
            stacks_of_two_getppids(&["raw_syscalls:sys_enter", "--filter", "id == 110"]);
        for event in &events {
            let frames = event["stack"].as_array().expect("stack");
            assert!(
                frames.iter().any(|f| f["symbol"] == "do_syscall_64"),
                "{event}"
            );
        }
        return;
    }
    for event in &events {
        let frames = event["stack"].as_array().expect("stack");
        assert!(frames.iter().all(|f| f["space"] == "kernel"), "{event}");
        // Every frame resolves to a kernel symbol, and the syscall entry is among them.
        assert!(frames.iter().all(|f| f["symbol"].is_string()), "{event}");
        assert!(
            frames.iter().any(|f| f["symbol"] == "do_syscall_64"),
            "{event}"
        );
    }
}

#[test]
fn uprobe_arguments_and_returns_are_named_and_typed_from_dwarf() {
    if !has(Feature::UprobePmu, "dwarf_args") || !has(Feature::Bpf, "dwarf_args") {
        return;
    }
    let chain = chain_program().display().to_string();
    let (out, stderr) = traced(
        4,
        &[
            "probe",
            "-c",
            "8",
            "-f",
            "json",
            &format!("uprobe:{chain}:chain_target"),
            &format!("uretprobe:{chain}:chain_fail"),
        ],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 8, "{stderr}");
    let (calls, fails): (Vec<_>, Vec<_>) = events
        .iter()
        .partition(|e| e["probe"].as_str().unwrap().ends_with(":chain_target"));
    for (i, call) in (1..).zip(&calls) {
        let args = &call["args"];
        assert_eq!(args["count"], i, "{call}");
        assert_eq!(args["name"], "chain", "{call}");
        // Typed as the model says (docs/json.md): a bool, an enum's number and name, a
        // pointer as a number.
        assert_eq!(args["odd"], i % 2 == 1, "{call}");
        assert_eq!(args["shade"]["text"], "GREEN", "{call}");
        assert!(args["shade"]["value"].is_i64(), "{call}");
        assert!(
            args["where"].as_u64().unwrap() >= 0x7ff0_0000_0000,
            "{call}"
        );
    }
    // chain_fail returns int: -2 on odd calls is -ENOENT, i on even ones.
    for (i, fail) in (1..).zip(&fails) {
        match i % 2 {
            1 => assert_eq!(
                (&fail["ret"], &fail["errno"]),
                (&(-2).into(), &"ENOENT".into())
            ),
            _ => assert_eq!((&fail["ret"], fail.get("errno")), (&i.into(), None)),
        }
    }
}

#[test]
fn a_binary_replaced_on_disk_while_running_is_read_from_the_mapped_file() {
    if !has(Feature::Breakpoints, "replaced_binary") || !has(Feature::Bpf, "replaced_binary") {
        return;
    }
    // The workload runs from its own copy, which is then replaced by another program at the
    // same path (a new inode, as an upgrade does): its symbols, lines and build-id must come
    // from the file the process has mapped, not from what the path names now.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tracer-chain-upgraded");
    std::fs::copy(chain_program(), &path).unwrap();
    let mut cmd = std::process::Command::new(&path);
    cmd.arg("4");
    let mut work = common::Workload::start(cmd);
    let other = dir.path().join("other");
    std::fs::copy("/bin/true", &other).unwrap();
    std::fs::rename(&other, &path).unwrap();

    let pid = work.pid().to_string();
    let (child, mut stderr, banner) = common::tracer_started(&[
        "watch",
        "-s",
        "-c",
        "4",
        "-f",
        "json",
        "chain_counter",
        "-p",
        &pid,
    ]);
    work.run_batch();
    let out = child.wait_with_output().expect("tracer ends after -c");
    let mut rest = banner;
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    work.finish();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 4, "{rest}");
    let write = chain_line("chain_counter += count;");
    let build_id = tracer::kernel::symbols::ElfSymbols::load(&chain_program())
        .unwrap()
        .build_id
        .expect("gcc writes a build-id note");
    for event in &events {
        assert_eq!(
            user_frames(event)[..4],
            expected_chain(write)[..],
            "{event}"
        );
        let first = &event["stack"].as_array().unwrap()[0];
        assert_eq!(first["build_id"], build_id.as_str(), "{event}");
    }
}

/// Streamed user stacks of processes gone before their events are read are named from the
/// kernel's mmap and exec records too. Two runs of the chain under a shell, 2 and 3 calls:
/// each exits within microseconds of its hits, long before the reader wakes (every frame was
/// `[unknown]` when only /proc was read).
#[test]
fn streamed_stacks_of_processes_gone_before_the_read_are_named() {
    if !has(Feature::UprobePmu, "streamed_gone") || !has(Feature::Bpf, "streamed_gone") {
        return;
    }
    common::require_root();
    let chain = chain_program();
    let spec = format!("uprobe:{}:chain_target", chain.display());
    let c = chain.display();
    let script = format!("{c} 2 </dev/null >/dev/null; {c} 3 </dev/null >/dev/null");
    let out = common::Tracer::new(["probe", "-s", "user", "-f", "json", &spec])
        .command()
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = (text(&out.stdout).lines())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let mut pids: Vec<u64> = events.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    pids.dedup();
    assert_eq!(
        (events.len(), pids.len()),
        (5, 2),
        "5 hits of 2 processes: {}",
        text(&out.stdout)
    );
    let first = chain_line("_Bool odd, enum color shade) {");
    for event in &events {
        assert_eq!(
            user_frames(event)[..4],
            expected_chain(first)[..],
            "{event}"
        );
    }
}

/// Counted user stacks are symbolized at the report, when the short processes that made them
/// are gone: their mappings come from the kernel's mmap and exec records. Two runs of the
/// chain under a shell, 2 and 3 calls: one row each, both named down to main.
#[test]
fn counted_stacks_of_processes_gone_by_the_report_are_named() {
    if !has(Feature::UprobePmu, "counted_stacks") || !has(Feature::Bpf, "counted_stacks") {
        return;
    }
    counted_stacks_of_short_runs_are_named(&chain_program());
}

/// The same from a program on overlayfs, as in a container: the kernel's mmap records give the
/// device of the layer the file is on, `stat` the overlay's; the file is known by its build-id
/// (5.12+), or by its inode number on overlayfs. (The VM tier's root is an overlay too.)
#[test]
fn counted_stacks_of_gone_processes_on_overlayfs_are_named() {
    if !has(Feature::UprobePmu, "overlay_stacks") || !has(Feature::Bpf, "overlay_stacks") {
        return;
    }
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let [lower, upper, work, merged] = ["lower", "upper", "work", "merged"].map(|d| {
        let path = dir.path().join(d);
        std::fs::create_dir(&path).unwrap();
        path
    });
    std::fs::copy(chain_program(), lower.join("tracer-chain")).unwrap();
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    let mounted = std::process::Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o", &options])
        .arg(&merged)
        .status()
        .unwrap();
    if !mounted.success() {
        println!("SKIPPED overlay_stacks: cannot mount overlayfs here");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            // Lazily: a process of the test may still hold the binary for a moment, and a
            // plain umount then failed with EBUSY and left the mount behind on the host.
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(self.0)
                .status();
        }
    }
    let _unmount = Unmount(&merged);
    counted_stacks_of_short_runs_are_named(&merged.join("tracer-chain"));
}

/// Two runs of the chain at `chain` under a shell, 2 and 3 calls, counted by stack: one row
/// each, both named down to main at the report, when both processes are gone.
fn counted_stacks_of_short_runs_are_named(chain: &std::path::Path) {
    common::require_root();
    let spec = format!("uprobe:{}:chain_target", chain.display());
    let c = chain.display();
    let script = format!("{c} 2 </dev/null >/dev/null; {c} 3 </dev/null >/dev/null");
    let out = common::Tracer::new([
        "probe",
        "--count-by",
        "comm",
        "-s",
        "user",
        "-f",
        "json",
        &spec,
    ])
    .command()
    .args(["--", "sh", "-c", &script])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let rows = report["rows"].as_array().expect("rows");
    let mut counts: Vec<u64> = rows.iter().map(|r| r["count"].as_u64().unwrap()).collect();
    counts.sort();
    assert_eq!(counts, [2, 3], "one row per process: {report}");
    let first = chain_line("_Bool odd, enum color shade) {");
    for row in rows {
        assert_eq!(user_frames(row)[..4], expected_chain(first)[..], "{row}");
    }
}

/// `PROGRAM ARGS` found on PATH, else `None` with the skip said.
fn installed(program: &str, args: &[&str], why: &str) -> bool {
    let found = std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: {program} is not installed ({why})");
    }
    found
}

/// True, with the reason printed, in the VM tier, for a test of what user space does with
/// addresses it already has (demangling, perf maps): the same on every kernel, and the slowest
/// tests of the tier under TCG (node's start alone: 38 s of 84 s for this suite on 6.1).
fn user_space_only(test: &str) -> bool {
    let emulated = std::env::var_os("TRACER_EMULATED").is_some();
    if emulated {
        common::skip(&format!(
            "{test}: skipped in the VM tier: naming is user space, the same on every kernel; \
             the host tier runs it"
        ));
    }
    emulated
}

/// C++ frames read as c++filt (binutils, what perf report uses) writes them: each frame of
/// tests/workloads/cxx.cc's stack under getppid (a namespace, a class template's const
/// method, a lambda, std::function's call operator) has c++filt's name for one of the
/// binary's symbols, in the order of the calls.
#[test]
fn cxx_frames_read_as_cxxfilt_writes_them() {
    common::require_root();
    if user_space_only("C++ names") {
        return;
    }
    if !installed("c++", &["--version"], "apt-get install g++")
        || !installed("c++filt", &["--version"], "apt-get install binutils")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = dir.path().join("cxx");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/cxx.cc");
    let status = std::process::Command::new("c++")
        .args(["-g", "-O0", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success());
    let out = common::tracer(&[
        "probe",
        "-s",
        "user",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "--",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 1, "{}", text(&out.stderr));
    let frames: Vec<String> = user_frames(&events[0]).into_iter().map(|f| f.0).collect();
    // c++filt's names of every symbol the binary defines.
    let nm = std::process::Command::new("nm")
        .arg("--defined-only")
        .arg(&prog)
        .output()
        .unwrap();
    let mangled: Vec<String> = (text(&nm.stdout).lines())
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let filt = std::process::Command::new("c++filt")
        .args(&mangled)
        .output()
        .unwrap();
    let names: std::collections::BTreeSet<String> =
        text(&filt.stdout).lines().map(str::to_string).collect();
    let libc = [
        "getppid",
        "__libc_start_call_main",
        "__libc_start_main_impl",
        "_start",
    ];
    for frame in &frames {
        assert!(
            names.contains(frame) || libc.contains(&frame.as_str()),
            "{frame} is not c++filt's name of a symbol of the binary\n{frames:#?}"
        );
    }
    let calls = [
        "shapes::Box<double>::measure(char const*, double) const::{lambda(int)#1}::operator()(int) const",
        "std::function<long (int)>::operator()(int) const",
        "shapes::Box<double>::measure(char const*, double) const",
        "run(int)",
        "main",
    ];
    let at: Vec<usize> = (calls.iter())
        .map(|c| {
            (frames.iter().position(|f| f == c))
                .unwrap_or_else(|| panic!("no frame {c}\n{frames:#?}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{frames:#?}");
}

/// Code a JIT generated is named from its perf map (`/tmp/perf-PID.map`, written by Node's
/// `--perf-basic-prof`): a JavaScript function that stats a file shows in the stack of its
/// statx calls by its name and source line.
#[test]
fn jit_frames_are_named_from_the_perf_map() {
    common::require_root();
    if user_space_only("JIT names") {
        return;
    }
    if !installed("node", &["--version"], "apt-get install nodejs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hot.js");
    std::fs::write(
        &script,
        "const fs = require('fs');\n\
         function tracerHotLoop(n) {\n\
         \x20 let t = 0;\n\
         \x20 for (let i = 0; i < n; i++) t += fs.statSync('/etc/hostname').size;\n\
         \x20 return t;\n\
         }\n\
         for (let k = 0; k < 200; k++) tracerHotLoop(50);\n",
    )
    .unwrap();
    // From the script's directory: node also leaves an isolate-*-v8.log in its cwd.
    let out = common::Tracer::new([
        "probe",
        "-s",
        "user",
        "-f",
        "json",
        "--filter",
        "comm == \"node\"",
        // Each hit also carries 956 bytes of the user stack's top: the 10,000 stats, in a
        // burst of about 0.1 s on one CPU, overran the default 2,048 pages (2,671 lost).
        "--ring-pages",
        "4096",
        "syscalls:sys_enter_statx",
        "--",
        "node",
        "--perf-basic-prof",
        "--interpreted-frames-native-stack",
        script.to_str().unwrap(),
    ])
    .command()
    .current_dir(dir.path())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_lines(&out.stdout);
    // Node writes its map as /tmp/perf-PID.map and leaves it.
    if let Some(pid) = events.first().and_then(|e| e["pid"].as_u64()) {
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }
    let hot = format!("tracerHotLoop {}:2:", script.display());
    let named = (events.iter())
        .filter(|e| {
            user_frames(e)
                .iter()
                .any(|f| f.0.starts_with("JS:") && f.0.contains(&hot))
        })
        .count();
    // 10,000 stats in the function; all but the first few run its compiled code.
    assert!(events.len() >= 10_000, "{}", events.len());
    assert!(
        named * 10 >= events.len() * 9,
        "{named} of {} named\n{:#?}",
        events.len(),
        user_frames(&events[events.len() - 1])
    );
}

/// Streamed stacks leave the stack map once read (stacks.rs, `recycle`), so a long run's
/// stacks never fill it: 20,000 distinct stacks (more than its 16,384 entries), each made
/// once, 20 every 10 ms. Each one captured is exactly its call's chain (none shown as
/// another's after its id was reused), and the few lost to a hash bucket taken by a stack not
/// read yet are under 10% of all and 25% of the last quarter. Without recycling, the map held
/// the first 16,384 stacks and about 40% of the rest were lost, most of the last quarter
/// (23-221 of 20,000 when only the printed ones were recycled, 15-39 now, 594 and 2,341 in
/// loaded CI runs at 20 every 5 ms: a stack waits in the map until the reader reaches its
/// event, so a reader behind by a second holds 4,000 of them there at that rate, and a new
/// stack finds its bucket taken that much more often).
#[test]
fn streamed_stacks_stay_captured_past_the_stack_maps_size() {
    if !has(Feature::UprobePmu, "stack_recycling") || !has(Feature::Bpf, "stack_recycling") {
        return;
    }
    if common::emulated(
        "stack_recycling",
        "skipped: 20,000 calls in batches 5 ms apart would take minutes under TCG",
    ) {
        return;
    }
    common::require_root();
    let program = common::c_workload("stackmix");
    let spec = format!("uprobe:{}:stackmix_target(n)", program.display());
    let calls = 20_000;
    let out = common::Tracer::new(["probe", "-s", "user", "-f", "json", &spec])
        .command()
        .args([
            "--",
            program.to_str().unwrap(),
            &calls.to_string(),
            "20",
            "10000",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), calls, "{stderr}");
    let mut lost = [0usize; 4];
    for event in &events {
        let n = event["args"]["n"]
            .as_u64()
            .unwrap_or_else(|| panic!("{event}"));
        let stack = event["stack"].as_array().unwrap();
        if stack.len() == 1 && stack[0]["error"].is_string() {
            // A taken bucket (EEXIST), or, rarely, an id reused with another stack while the
            // hit took it: shown as unknown, never as another call's.
            let error = stack[0]["error"].as_str().unwrap();
            assert!(
                error.contains("File exists") || error.contains("reused around the time"),
                "{event}"
            );
            lost[n as usize * 4 / calls] += 1;
            continue;
        }
        let chain: Vec<String> = (user_frames(event).into_iter())
            .map(|(symbol, _)| symbol)
            .filter(|s| s.starts_with("stackmix_"))
            .collect();
        let want: Vec<String> = std::iter::once("stackmix_target".to_string())
            .chain((0..16).rev().map(|bit| match n >> bit & 1 {
                1 => "stackmix_a".to_string(),
                _ => "stackmix_b".to_string(),
            }))
            .collect();
        assert_eq!(chain, want, "call {n}: {event}");
    }
    // How many meet in a bucket depends on how far behind the reader is (other tests run
    // beside this one): 0.1-0.2% alone, 3% and 11.7% (17% of the last quarter) in loaded CI
    // runs at twice this rate; without recycling about 40%, and most of the last quarter.
    let total: usize = lost.iter().sum();
    assert!(total * 10 < calls, "{lost:?} of {calls} lost");
    assert!(lost[3] * 4 < calls / 4, "{lost:?} of {calls} lost");
}

/// `probe -s` at a uprobe in code built without frame pointers: libc's `write` under Debian's
/// echo (its one write, at exit, through stdio and the exit handlers; echo is stripped too).
/// The hit copies the top of the user stack, which tracer unwinds by the files' CFI, so its
/// stack goes through the same files, frame for frame, as strace -k's at that write's system
/// call, down to echo's `_start` (strace's first frame is inside `write`, ours its first
/// instruction). A frame-pointer walk alone gives write and its direct caller.
#[test]
fn uprobe_stacks_through_code_without_frame_pointers_agree_with_strace() {
    common::require_root();
    if !has(Feature::UprobePmu, "uprobe_cfi_stacks")
        || !has(Feature::Bpf, "uprobe_cfi_stacks")
        || common::strace_missing()
    {
        return;
    }
    let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    echo_write_stack_agrees_with_strace(&format!("uprobe:{}:write", libc.display()));
}

/// The same write, at the syscall's tracepoint (`syscalls:sys_enter_write`): the copy starts at
/// the user registers the task entered the kernel with (`task_pt_regs`, found through the
/// BTF offset of `task_struct.stack`). A frame-pointer walk alone gave `write` and one wrong
/// frame.
#[test]
fn tracepoint_stacks_through_code_without_frame_pointers_agree_with_strace() {
    common::require_root();
    if !has(Feature::Bpf, "tracepoint_cfi_stacks") || common::strace_missing() {
        return;
    }
    echo_write_stack_agrees_with_strace("syscalls:sys_enter_write");
}

/// The same write, at a kernel function (`vfs_write`): through a kprobe (Debian's 5.10) or
/// its BPF trampoline (7.3), the copy starts at the registers the task entered the kernel
/// with, as at a tracepoint. A frame-pointer walk alone gave `write` and one wrong frame.
#[test]
fn kernel_function_stacks_through_code_without_frame_pointers_agree_with_strace() {
    common::require_root();
    if !has(Feature::KprobePmu, "kernel_function_cfi_stacks")
        || !has(Feature::Bpf, "kernel_function_cfi_stacks")
        || common::strace_missing()
    {
        return;
    }
    echo_write_stack_agrees_with_strace("vfs_write");
}

/// `probe -s user SPEC -- /bin/echo hi`, SPEC a probe on echo's one write: its stack goes
/// through the same files as strace -k's of that write, and starts in libc's `write`.
fn echo_write_stack_agrees_with_strace(spec: &str) {
    let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    let echo = std::fs::canonicalize("/bin/echo").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("probe.json");
    let out = common::tracer(&[
        "probe",
        "-s",
        "user",
        "-f",
        "json",
        "-o",
        ours.to_str().unwrap(),
        spec,
        "--",
        echo.to_str().unwrap(),
        "hi",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&std::fs::read(&ours).unwrap());
    assert_eq!(events.len(), 1, "{stderr}");
    let command = [echo.to_str().unwrap(), "hi"];
    let frames = same_files_as_strace(&events[0], "write", &command);
    let libc = libc.to_str().unwrap();
    assert!(
        frames[0].0 == libc && frames[0].1.ends_with("write"),
        "{frames:?}"
    );
    assert!(
        frames.iter().any(|(_, symbol)| symbol == "_IO_file_write"),
        "{frames:?}"
    );
}

/// The user frames of `event` (file, symbol), asserted to go through the same files, frame
/// for frame, as strace -k's stack of `command`'s one call of `call`.
fn same_files_as_strace(
    event: &serde_json::Value,
    call: &str,
    command: &[&str],
) -> Vec<(String, String)> {
    let frames: Vec<(String, String)> = (event["stack"].as_array().unwrap().iter())
        .filter(|f| f["space"] == "user")
        .map(|f| {
            let module = f["module"].as_str().unwrap_or("[unknown]").to_string();
            (module, f["symbol"].as_str().unwrap_or("").to_string())
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("strace.txt");
    let trace = format!("trace={call}");
    assert!(common::strace_into(&theirs, &["-k", "-e", &trace], command).success());
    let theirs = std::fs::read_to_string(&theirs).unwrap();
    let straces = common::stack_frames(&theirs);
    assert_eq!(straces.len(), 1, "{theirs}");
    let files: Vec<&str> = frames.iter().map(|(module, _)| module.as_str()).collect();
    let strace_files: Vec<&str> = straces[0].iter().map(|(file, _)| file.as_str()).collect();
    assert!(strace_files.len() >= 5, "{theirs}");
    assert_eq!(files, strace_files, "tracer: {frames:?}\nstrace:\n{theirs}");
    frames
}

/// A latency outlier whose end is a tracepoint: Debian's sleep (no frame pointers) in its
/// clock_nanosleep. The stack at the end is copied from the registers the task entered the
/// kernel with and unwound by CFI: the same files as strace -k's stack of that call, down to
/// sleep's `_start`.
#[test]
fn latency_outlier_stacks_at_a_tracepoint_agree_with_strace() {
    common::require_root();
    if !has(Feature::Bpf, "latency_tp_stacks") || common::strace_missing() {
        return;
    }
    let sleep = std::fs::canonicalize("/bin/sleep").unwrap();
    let sleep = sleep.to_str().unwrap();
    let mut args = common::chain_latency_args(
        "syscalls:sys_enter_clock_nanosleep",
        "syscalls:sys_exit_clock_nanosleep",
    );
    args.extend(["--", sleep, "0.1"]);
    let out = common::tracer(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let outliers: Vec<serde_json::Value> = (json_lines(&out.stdout).into_iter())
        .filter(|v| v["type"] == "outlier")
        .collect();
    assert_eq!(outliers.len(), 1, "{stderr}");
    let frames = same_files_as_strace(&outliers[0], "clock_nanosleep", &[sleep, "0.1"]);
    assert!(frames[0].1.contains("clock_nanosleep"), "{frames:?}");
    assert_eq!(frames.last().unwrap().0, sleep, "{frames:?}");
}
