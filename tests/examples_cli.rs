//! Tier 4: every example of `tracer --help`, of each `tracer SUBCOMMAND --help`, of README.md
//! and of docs/*.md runs as written and does what it says.
//!
//! The examples are read from the built binary's help, from README.md and from docs/*.md, so one
//! cannot be added without a check: [`EXAMPLES`] maps each example, word for word, to the
//! function that runs it, and [`every_example_has_a_check`] fails on an example without an entry
//! (and on an entry whose example is gone). Examples run in a directory holding `./prog` and
//! `./srv` (tests/workloads/prog.c and srv.c, built with the names and call counts the examples
//! assume), `./tracer-testprog` (the testprog workload), `./chain` and `./tracer-chain`
//! (tests/workloads/chain.c) and `./tl` (tests/workloads/timeline.c), so `./prog` is literally
//! `./prog`. What is substituted is said in each check: `1234` or `4422` becomes the pid of a
//! started workload, `make` runs a one-rule Makefile, and examples that trace the whole system
//! (no `-p`, no `-- COMMAND`) get a workload started after tracer's banner and, when they would
//! run until Ctrl-C, a SIGINT. Where a page shows output under an example, the check also
//! asserts that tracer prints those lines ([`assert_shown`]).
//!
//! Kernel-function examples need kprobes (or fentry): where the kernel has neither, each must
//! fail with the documented error and hints; they run for real in the VM tier
//! (tests/vm_kprobe.rs, `cargo xtask test`).

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{has, json_lines, testprog, text, tracer_bin, Workload};
use tracer::kernel::features::{Feature, Status};

type Check = fn(&Ctx, &str);

/// Every example, as printed, and its check. README examples are keyed as README shows them
/// (a fenced `sh` line, a `$ ` line or an inline `tracer ...` span).
const EXAMPLES: &[(&str, Check)] = &[
    // tracer --help
    ("tracer features", features_text),
    ("tracer features --json", features_json),
    // tracer features --help
    ("tracer features --json | jq .features.kprobes", features_jq),
    // tracer generate --help
    ("tracer generate complete-bash", generate_bash),
    ("tracer generate man ./man", generate_man),
    // tracer list --help
    ("tracer list 'syscalls:sys_enter_open*'", list_glob),
    ("tracer list -v sched_switch", list_verbose),
    ("tracer list --binary /usr/bin/bash 'read*'", list_binary),
    ("tracer list usdt:/usr/bin/python3", list_usdt_python),
    // tracer trace --help
    ("tracer trace -- cat /etc/hostname", trace_cat),
    ("tracer trace -e openat,read --failed -- cat /nope", trace_failed),
    ("tracer trace -e '!%memory,%signal' -- ls /etc", trace_all_but_classes),
    ("tracer trace -c -- ls /", trace_summary),
    (
        "tracer trace -e openat --filter 'filename ~ \"/etc/*\"' -- cat /etc/hostname",
        trace_filter,
    ),
    ("tracer trace -p 1234 -d 2s -o calls.txt", trace_pid),
    ("tracer trace --format json -o calls.json -- true", trace_json),
    // tracer probe --help
    (
        "tracer probe syscalls:sys_enter_openat -- cat /etc/hostname",
        probe_openat_cat,
    ),
    (
        "tracer probe 'syscalls:sys_enter_open*' -p 1234 -f json",
        probe_pid_json,
    ),
    (
        "tracer probe 'uprobe:bash:readline(str(arg0))' 'uretprobe:bash:readline(str(ret))'",
        probe_bash_readline,
    ),
    (
        "tracer probe -s user uprobe:./prog:handle -c 5",
        probe_user_stacks,
    ),
    (
        "tracer probe --count-by comm raw_syscalls:sys_enter -d 5",
        probe_count_by_comm,
    ),
    (
        "tracer probe --hist ret --count-by comm syscalls:sys_exit_read -I 1s",
        probe_hist_interval,
    ),
    (
        "tracer probe syscalls:sys_exit_openat --filter 'ret < 0' -- cat /nonexistent",
        probe_filter_failed_opens,
    ),
    (
        "tracer probe do_sys_openat2 do_sys_openat2%return -c 10",
        needs_kprobes,
    ),
    (
        "tracer probe 'do_sys_openat2(filename, how->flags)'",
        needs_kprobes,
    ),
    // tracer watch --help
    ("tracer watch counter -- ./prog", watch_counter),
    (
        "tracer watch -p 1234 -t rw libc.so.6:environ",
        watch_pid_environ,
    ),
    ("tracer watch -t x my_function -- ./prog", watch_execute),
    ("tracer watch -s counter -- ./prog", watch_stack),
    ("tracer watch --kernel jiffies -c 5", watch_kernel_jiffies),
    // tracer serve --help, docs/serve.md
    ("tracer serve serve.toml", serve_docs_config),
    ("tracer serve serve.toml --listen 0.0.0.0:9435", serve_docs_config),
    // tracer latency --help
    ("tracer latency vfs_read", needs_kprobes),
    (
        "tracer latency uprobe:./prog:handle --slower-than 10ms",
        latency_slow_calls,
    ),
    (
        "tracer latency --from syscalls:sys_enter_read --to syscalls:sys_exit_read -I 1s",
        latency_read_interval,
    ),
    (
        "tracer latency --from sched:sched_wakeup --to sched:sched_switch --key pid/next_pid",
        latency_wakeup,
    ),
    (
        "tracer latency --from block:block_rq_issue --to block:block_rq_complete --key dev,sector",
        latency_block,
    ),
    (
        "tracer latency --from uprobe:./srv:submit --to uprobe:./srv:complete --key arg0",
        latency_srv,
    ),
    (
        "tracer latency uprobe:./prog:handle --slower-than 10ms -s",
        latency_slow_stacks,
    ),
    // tracer stat --help
    ("tracer stat -- make", stat_make),
    (
        "tracer stat -e syscalls:sys_enter_openat,page-faults -- ls",
        stat_ls,
    ),
    (
        "tracer stat -e '{task-clock,page-faults}' -x, -- ./prog",
        stat_group_csv,
    ),
    ("tracer stat -a -A -e cs -I 1000", stat_per_cpu_interval),
    (
        "tracer stat -p 1234 --per-thread --timeout 5000",
        stat_pid_per_thread,
    ),
    ("tracer stat -r 5 -e page-faults:u -- ./prog", stat_repeat),
    (
        "tracer stat -a --per-core -e task-clock -I 1000",
        stat_per_core_interval,
    ),
    ("tracer stat -p 1234 -- sleep 1", stat_pid_with_command),
    (STAT_RECORD, stat_record),
    ("tracer stat report -i counts.json -A", stat_report_per_cpu),
    // tracer record --help
    (
        "tracer record -P syscalls:sys_enter_openat -- cat /etc/hostname",
        record_default_file,
    ),
    (
        "tracer record -o t.tracer -P syscalls:sys_enter_openat -- cat /etc/hostname",
        record_openat_cat,
    ),
    (
        "tracer record -o t.tracer -W counter -P uprobe:./prog:work -e task-clock -F 999 -- ./prog",
        record_prog,
    ),
    (
        "tracer record -o t.tracer -e page-faults --period 1 --switches -d 5",
        record_page_faults,
    ),
    (
        "tracer record -o t.tracer --live -P 'syscalls:sys_enter_open*' -d 5",
        record_live,
    ),
    (
        "tracer record -o - -P 'syscalls:sys_enter_open*' | tracer report -",
        record_pipe_report,
    ),
    // tracer report --help
    ("tracer report", report_default_file),
    ("tracer report t.tracer", report_text),
    (
        "tracer report t.tracer --pid 1234 --source 'watch:*' --since 0.5 --until 2",
        report_filtered,
    ),
    ("tracer report t.tracer -f json | jq .", report_json_jq),
    ("tracer report t.tracer --perfetto t.json", report_perfetto),
    // README.md
    (
        "cargo xtask run -- probe syscalls:sys_enter_openat -- cat /etc/hostname",
        xtask_run_probe,
    ),
    ("cargo xtask test", xtask_test),
    ("cargo xtask dist", xtask_dist),
    ("dpkg -i target/dist/tracer_0.1.0_amd64.deb", readme_dpkg),
    ("tracer probe do_sys_open", readme_no_kprobes),
    ("tracer probe --transport perf", readme_transport),
    ("tracer probe uprobe:./prog:handle", readme_uprobe_args),
    // docs/probe.md, USDT probes
    ("tracer list usdt:./usdt", shown_as_documented),
    (
        "tracer probe usdt:./usdt:tracer:tick 'usdt:./usdt:mixed(arg0, str(arg2))' usdt:./usdt:tracer:global -- ./usdt",
        usdt_mixed,
    ),
    (
        "tracer probe usdt:./usdt:tracer:guarded -- ./usdt 3",
        usdt_guarded,
    ),
    (
        "tracer probe usdt:/usr/bin/python3:python:function__entry -- /usr/bin/python3 ticks.py",
        usdt_python,
    ),
    (
        "tracer probe --count-by arg1 usdt:./usdt:tracer:tick -- ./usdt",
        usdt_count_by,
    ),
    (
        "tracer stat -e syscalls:sys_enter_getppid,page-faults -- ./prog",
        stat_getppid,
    ),
    ("tracer list [PATTERN]", readme_list),
    ("tracer watch --summary counter -- ./prog", readme_watch_summary),
    // docs/probe.md (its `tracer probe syscalls:sys_enter_openat -- cat /etc/hostname` and
    // `tracer probe do_sys_open` are README's too, checked above)
    (
        "tracer probe uprobe:./tracer-testprog:tracer_testprog_target uretprobe:./tracer-testprog:tracer_testprog_target -f json -- ./tracer-testprog call 3",
        docs_probe_call_json,
    ),
    (
        "tracer probe uprobe:./chain:chain_target uretprobe:./chain:chain_target -- ./chain 2",
        docs_probe_chain_typed,
    ),
    (
        "tracer probe syscalls:sys_enter_execve -- sh -c '/bin/true one two; exit 0'",
        docs_probe_execve_argv,
    ),
    (
        "tracer probe --count-by filename syscalls:sys_enter_openat -- ./tracer-testprog open 3 /etc/hostname",
        docs_probe_count_by_filename,
    ),
    (
        "tracer probe --strlen 8 -f json 'syscalls:sys_enter_openat(filename)' --filter 'filename ~ \"/etc/h*\"' -- cat /etc/hostname",
        docs_probe_strlen_json,
    ),
    (
        "tracer probe 'do_sys_openat2(filename, how->flags, how->mode)' -- cat /etc/hostname",
        needs_kprobes,
    ),
    (
        "tracer probe fentry:do_sys_openat2 fexit:do_sys_openat2 -- cat /etc/hostname",
        needs_fentry,
    ),
    (
        "tracer probe 'uprobe:./chain:chain_target(where->y, where->label, count)' -- ./chain 2",
        docs_probe_chain_members,
    ),
    (
        "tracer probe 'syscalls:sys_enter_openat(filename)' --count-by 'flags' -d 5",
        docs_probe_count_by_flags,
    ),
    (
        "tracer probe -s user uprobe:./tracer-chain:chain_b -c 1 -p 4422",
        docs_probe_stack_pid,
    ),
    (
        "tracer probe --count-by comm,probe syscalls:sys_enter_getppid syscalls:sys_enter_getpgid -- ./tracer-testprog getppid 1000",
        docs_probe_count_by_comm_probe,
    ),
    (
        "tracer probe --hist ret uretprobe:./tracer-testprog:tracer_testprog_target -- ./tracer-testprog call 20",
        docs_probe_hist_ret,
    ),
    (
        "tracer probe syscalls:sys_exit_openat --filter 'ret < 0' -- ./tracer-testprog open 3 /nonexistent",
        docs_probe_filter_ret,
    ),
    (
        "tracer probe uprobe:./tracer-testprog:tracer_testprog_target --filter 'a >= 98 || b == 10' -- ./tracer-testprog call 100",
        docs_probe_filter_uprobe,
    ),
    (
        "tracer probe syscalls:sys_enter_openat --filter 'filenme ~ \"/etc/*\"' -- true",
        docs_probe_filter_typo,
    ),
    (
        "tracer probe --count-by probe 'syscalls:sys_enter_*' -- ./tracer-testprog getppid 1000",
        docs_probe_every_syscall,
    ),
    ("tracer probe 'watchpoint:0x1000:8:w'", docs_probe_bpftrace_pointer),
    (
        "tracer probe 'tracepoint:syscalls:sys_exit_read { @bytes = lhist(args.ret, 0, 4096, 512); }'",
        docs_probe_bpftrace_pointer,
    ),
    ("tracer probe -C 63 syscalls:sys_enter_getppid", docs_probe_offline_cpu),
    (
        "tracer probe syscalls:sys_enter_getppid -f json -o hits.json -- ./tracer-testprog getppid 3",
        docs_probe_output_file,
    ),
    (
        "tracer probe --comm cat --count-by comm syscalls:sys_enter_openat -- sh -c 'cat /etc/hostname'",
        docs_probe_comm_note,
    ),
    (
        "tracer probe --hist arg0 --linear 10,0,50 uprobe:./tracer-testprog:tracer_testprog_target -- ./tracer-testprog call 100",
        docs_probe_hist_linear,
    ),
    (
        "tracer probe --hist count --comm dd syscalls:sys_enter_read -- dd if=/dev/zero of=/dev/null bs=64K count=5 status=none",
        docs_probe_hist_bytes,
    ),
    // docs/latency.md
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --slower-than 60ms -- ./tracer-testprog sleeps 1",
        docs_latency_sleeps,
    ),
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --linear 1ms -- ./tracer-testprog sleeps 1",
        docs_latency_linear,
    ),
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --filter 'us >= 17500' -- ./tracer-testprog sleeps 1",
        docs_latency_filter,
    ),
    // docs/record.md (its `tracer report t.tracer` is `tracer report --help`'s too)
    (DOCS_RECORD_TL, docs_record_timeline),
    (DOCS_RECORD_STACKS, docs_record_stacks),
    ("tracer report s.tracer", docs_report_stacks),
    // docs/stat.md
    (
        "tracer stat -e syscalls:sys_enter_getppid,task-clock,page-faults,cycles -- ./tracer-testprog getppid 1000",
        docs_stat_getppid,
    ),
    (
        "tracer stat -x, -e syscalls:sys_enter_getppid,cycles -- ./tracer-testprog getppid 1000",
        docs_stat_csv,
    ),
    (
        "tracer stat -a --per-socket -e task-clock -- ./tracer-testprog getppid 1000",
        docs_stat_per_socket,
    ),
    (
        "tracer stat -x, -I 100 --summary -e syscalls:sys_enter_getppid -- ./tracer-testprog getppid 1000",
        docs_stat_summary,
    ),
    (
        "tracer stat -a -A -I 100 --interval-count 2 --metric-only -x, -- sleep 1",
        docs_stat_metric_only,
    ),
    // docs/watch.md
    (
        "tracer watch tracer_testprog_counter -- ./tracer-testprog counter 6",
        docs_watch_counter,
    ),
    (
        "tracer watch tracer_testprog_counter --summary -- ./tracer-testprog counter 3000",
        docs_watch_summary,
    ),
    // tracer profile --help, README.md and docs/profile.md
    ("tracer profile -- ./busy", profile_command),
    ("tracer profile -a -d 2 -f svg -o cpu.svg", profile_all_svg),
    ("tracer profile -f svg -o cpu.svg -- ./busy", profile_command_svg),
    (
        "tracer profile -p 1234 -F 999 -d 10 -f folded",
        profile_pid_folded,
    ),
    (
        "tracer profile --off-cpu --min-block 1ms -p 1234 -d 10",
        profile_off_cpu_pid,
    ),
    ("tracer profile -a -d 2 -f pprof -o cpu.pb.gz", profile_all_pprof),
    (
        "tracer profile --call-graph dwarf -- gzip -9 -f -k big.txt",
        profile_dwarf,
    ),
    // docs/profile.md
    (
        "tracer profile -f pprof -o cpu.pb.gz -- ./busy",
        profile_command_pprof,
    ),
    ("go tool pprof -top cpu.pb.gz", profile_go_pprof_top),
    // docs/json.md
    (
        "tracer trace --format json -e openat -- head -c0 /etc/hostname | jq -c 'select(.args.filename == \"/etc/hostname\")'",
        docs_json_jq,
    ),
    // tracer serve --help, docs/serve.md
    ("tracer serve serve.toml --pprof", serve_docs_pprof),
    (
        "go tool pprof -top 'http://127.0.0.1:9435/debug/pprof/profile?seconds=5'",
        serve_docs_go_pprof,
    ),
];

/// docs/record.md's example, its `\` continuation lines joined.
const DOCS_RECORD_TL: &str = "tracer record -o t.tracer -W timeline_counter -P uprobe:./tl:timeline_step -P uretprobe:./tl:timeline_step -P syscalls:sys_enter_getppid -e page-faults --period 1 --switches -- ./tl 3";

/// The subcommands whose help is searched (besides the top-level help).
fn subcommands(help: &str) -> Vec<String> {
    let mut subs = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line == "Commands:" {
            in_commands = true;
        } else if in_commands {
            let Some(name) = line
                .strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
            else {
                break;
            };
            if name != "help" {
                subs.push(name.to_string());
            }
        }
    }
    assert!(subs.len() >= 8, "subcommands in --help: {subs:?}\n{help}");
    subs
}

/// The `Examples:` lines of one help text, without their descriptions (which follow after two
/// or more spaces).
fn help_examples(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_examples = false;
    for line in help.lines() {
        if line == "Examples:" {
            in_examples = true;
        } else if in_examples {
            // The section ends at the first line that is not an indented example.
            let Some(example) = line.strip_prefix("  ") else {
                in_examples = false;
                continue;
            };
            let command = example.split("  ").next().unwrap().trim_end();
            assert!(command.starts_with("tracer "), "an example line: {line:?}");
            out.push(command.to_string());
        }
    }
    out
}

fn help_of(args: &[&str]) -> String {
    let out = Command::new(tracer_bin())
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Every example in the help texts, with where it was found.
fn examples_in_help() -> Vec<(String, String)> {
    let top = help_of(&[]);
    let mut out: Vec<(String, String)> = help_examples(&top)
        .into_iter()
        .map(|e| (e, "tracer --help".to_string()))
        .collect();
    for sub in subcommands(&top) {
        let examples = help_examples(&help_of(&[&sub]));
        assert!(
            !examples.is_empty(),
            "`tracer {sub} --help` has no examples"
        );
        out.extend(
            examples
                .into_iter()
                .map(|e| (e, format!("tracer {sub} --help"))),
        );
    }
    out
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// docs/*.md as (`docs/NAME.md`, text), by name.
fn docs() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (format!("docs/{name}"), std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 5, "docs/*.md: {pages:?}");
    pages
}

/// A command shown in a Markdown page: where (`PAGE:LINE`), and for a `$ ` line the lines
/// shown under it (up to the next `$ ` line or the end of its block).
struct Shown {
    command: String,
    at: String,
    output: Vec<String>,
}

/// The shell commands of a Markdown page: each command line of a fenced `sh` block (comments
/// dropped), each `$ ` line of another fenced block, a line ending in `\` joined with the
/// next, and with `spans`, each inline code span outside the blocks that is a `tracer` command
/// with arguments (a bare `tracer SUBCOMMAND` names a command; it is no example). README's
/// spans are examples; docs/ pages mention flags in spans (`tracer probe -s`), so theirs are
/// not.
fn shown_in_markdown(page: &str, text: &str, spans: bool) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    let mut fence: Option<String> = None;
    // The command being continued (its line ended in `\`), and whether the last `$ ` command
    // is still taking output lines.
    let mut continued = false;
    let mut taking_output = false;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{page}:{}", n + 1);
        if let Some(lang) = line.strip_prefix("```") {
            fence = match fence {
                None => Some(lang.trim().to_string()),
                Some(_) => None,
            };
            continued = false;
            taking_output = false;
            continue;
        }
        if continued {
            let last = out.last_mut().unwrap();
            let rest = line.trim();
            continued = rest.ends_with('\\');
            last.command.push(' ');
            last.command
                .push_str(rest.trim_end_matches('\\').trim_end());
            continue;
        }
        let command = match fence.as_deref() {
            Some("sh") => {
                let command = line.split(" #").next().unwrap().trim();
                (!command.is_empty() && !command.starts_with('#')).then_some(command)
            }
            Some(_) => match line.strip_prefix("$ ") {
                Some(command) => Some(command.trim()),
                None => {
                    if taking_output {
                        out.last_mut().unwrap().output.push(line.to_string());
                    }
                    None
                }
            },
            None => {
                if spans {
                    for (i, span) in line.split('`').enumerate() {
                        if i % 2 == 1
                            && span.starts_with("tracer ")
                            && span.split_whitespace().count() > 2
                        {
                            out.push(Shown {
                                command: span.to_string(),
                                at: at.clone(),
                                output: Vec::new(),
                            });
                        }
                    }
                }
                None
            }
        };
        if let Some(command) = command {
            continued = command.ends_with('\\');
            taking_output = fence.as_deref() != Some("sh");
            out.push(Shown {
                command: command.trim_end_matches('\\').trim_end().to_string(),
                at,
                output: Vec::new(),
            });
        }
    }
    for shown in &mut out {
        while shown.output.last().is_some_and(|l| l.trim().is_empty()) {
            shown.output.pop();
        }
    }
    out
}

fn examples_of(shown: Vec<Shown>) -> Vec<(String, String)> {
    shown.into_iter().map(|s| (s.command, s.at)).collect()
}

/// The shell examples of README.md ([`shown_in_markdown`] with inline spans).
fn examples_in_readme(readme: &str) -> Vec<(String, String)> {
    examples_of(shown_in_markdown("README.md", readme, true))
}

/// The shell examples of docs/*.md ([`shown_in_markdown`] without inline spans).
fn examples_in_docs() -> Vec<(String, String)> {
    docs()
        .iter()
        .flat_map(|(page, text)| examples_of(shown_in_markdown(page, text, false)))
        .collect()
}

/// Every place README.md or a docs page shows `example` as a `$ ` line, with its output.
fn shown_places(example: &str) -> Vec<Shown> {
    let mut pages = vec![("README.md".to_string(), readme())];
    pages.extend(docs());
    pages
        .iter()
        .flat_map(|(page, text)| shown_in_markdown(page, text, page == "README.md"))
        .filter(|s| s.command == example && !s.output.is_empty())
        .collect()
}

/// `line` with what changes from run to run masked: hex numbers (`0x#`), decimal numbers
/// (`#`: times, pids, counts, sizes; not a digit inside a name such as `openat2` or `x86_64`,
/// nor the line of a `FILE.EXT:LINE` location, which must match) and runs of blanks.
fn masked(line: &str) -> String {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_name = i > 0 && (chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_');
        if c.is_whitespace() {
            out.push(' ');
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else if c == '0' && chars.get(i + 1) == Some(&'x') && !in_name {
            out.push_str("0x#");
            i += 2;
            while i < chars.len() && chars[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else if c.is_ascii_digit() && !in_name && !after_location(&out) {
            out.push('#');
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], '.' | ',')
                        && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// True when `text` ends with `NAME.EXT:` (a source location's file, before its line).
fn after_location(text: &str) -> bool {
    let Some(file) = text.strip_suffix(':') else {
        return false;
    };
    let name = file
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .next()
        .unwrap_or("");
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=3).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_lowercase())
    })
}

/// Asserts that every line a page shows under `example` is printed: in order, within stdout or
/// within stderr, equal once masked ([`masked`]). `...` lines (and `... (note)`) stand for lines
/// left out, a line starting with `... ` shows the end of one, blank lines are not compared,
/// and lines in `skip` (compared masked) are left to the check: a command's own output, whose
/// place among tracer's lines varies.
fn assert_shown(example: &str, stdout: &str, stderr: &str, skip: &[&str]) {
    let places = shown_places(example);
    assert!(!places.is_empty(), "no page shows output under {example:?}");
    let streams: [Vec<String>; 2] = [stdout, stderr].map(|s| s.lines().map(masked).collect());
    let skip: Vec<String> = skip.iter().map(|s| masked(s)).collect();
    for place in places {
        let mut next = [0usize; 2];
        for line in &place.output {
            let trimmed = line.trim();
            if trimmed.is_empty()
                || trimmed == "..."
                || trimmed.starts_with("... (")
                || skip.contains(&masked(line))
            {
                continue;
            }
            let found = match trimmed.strip_prefix("... ") {
                Some(end) => {
                    let end = masked(end);
                    find_line(&streams, &mut next, |l| l.ends_with(&format!(" {end}")))
                }
                None => {
                    let want = masked(line);
                    find_line(&streams, &mut next, |l| *l == want)
                }
            };
            assert!(
                found,
                "{} shows a line tracer did not print (or not in this order):\n  {line}\n\
                 stdout:\n{stdout}\nstderr:\n{stderr}",
                place.at
            );
        }
    }
}

/// Finds the next line matching `pred` in stdout, else in stderr, from where each was left.
fn find_line(
    streams: &[Vec<String>; 2],
    next: &mut [usize; 2],
    pred: impl Fn(&String) -> bool,
) -> bool {
    for (stream, at) in streams.iter().zip(next.iter_mut()) {
        if let Some(i) = stream[*at..].iter().position(&pred) {
            *at += i + 1;
            return true;
        }
    }
    false
}

#[test]
fn every_example_has_a_check() {
    let mut found = examples_in_help();
    found.extend(examples_in_readme(&readme()));
    found.extend(examples_in_docs());
    let missing: Vec<String> = found
        .iter()
        .filter(|(e, _)| !EXAMPLES.iter().any(|(k, _)| k == e))
        .map(|(e, at)| format!("  {e:?} ({at})"))
        .collect();
    assert!(
        missing.is_empty(),
        "examples without a check: add each to EXAMPLES in tests/examples_cli.rs\n{}",
        missing.join("\n")
    );
    let stale: Vec<&str> = EXAMPLES
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !found.iter().any(|(e, _)| e == k))
        .collect();
    assert!(
        stale.is_empty(),
        "checks of examples no longer shown: {stale:?}"
    );
    let keys: BTreeSet<&str> = EXAMPLES.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys.len(), EXAMPLES.len(), "an example is listed twice");
}

#[test]
fn readme_examples_are_found() {
    let found = examples_in_readme(
        "a `tracer probe` and `tracer x -p 1`\n```sh\ncargo a   # b\n\n```\n```\n$ tracer y\nout\n```\n",
    );
    let found: Vec<&str> = found.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(found, ["tracer x -p 1", "cargo a", "tracer y"]);
}

#[test]
fn docs_examples_are_found() {
    let page = "a `tracer probe -s` and `tracer x -p 1`\n\
        ```\ntracer SYNOPSIS [OPTIONS]\n```\n\
        ```sh\ncargo a   # b\ncargo c \\\n  d\n```\n\
        ```\n$ tracer y \\\n    --z 1 \\\n    -- w\nout 1\n\n...\n\n$ tracer v\n```\n";
    let found = shown_in_markdown("docs/t.md", page, false);
    let got: Vec<(&str, &str, Vec<&str>)> = found
        .iter()
        .map(|s| {
            let output = s.output.iter().map(String::as_str).collect();
            (s.command.as_str(), s.at.as_str(), output)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("cargo a", "docs/t.md:6", vec![]),
            ("cargo c d", "docs/t.md:7", vec![]),
            (
                "tracer y --z 1 -- w",
                "docs/t.md:11",
                vec!["out 1", "", "..."]
            ),
            ("tracer v", "docs/t.md:18", vec![]),
        ]
    );
    // The docs show every example their pages hold.
    let docs = examples_in_docs();
    assert!(
        docs.iter()
            .any(|(e, at)| e == DOCS_RECORD_TL && at.starts_with("docs/record.md:")),
        "{docs:?}"
    );
    assert!(docs.iter().all(|(e, _)| !e.contains("...")), "{docs:?}");
}

#[test]
fn masking_keeps_names_and_source_lines() {
    assert_eq!(
        masked("0.001134   0   29791/29793     tracer-testprog  x: 0 -> 1 at f+0x54 (main.rs:38)"),
        "# # #/# tracer-testprog x: # -> # at f+0x# (main.rs:38)"
    );
    assert_eq!(
        masked("  1,000      sys_enter_openat2 x86_64 #  603.735 K/sec"),
        "# sys_enter_openat2 x86_64 # # K/sec"
    );
    assert_eq!(masked(r#"{"pid":8552,"a":-1}"#), r#"{"pid":#,"a":-#}"#);
}

/// Runs every example (`EXAMPLE=substring` runs only those containing it).
#[test]
fn examples_run_as_documented() {
    common::require_root();
    let only = std::env::var("EXAMPLE").ok();
    let ctx = Ctx::new();
    let mut failed = Vec::new();
    for (example, check) in EXAMPLES {
        if only.as_deref().is_some_and(|o| !example.contains(o)) {
            continue;
        }
        let _ = writeln!(std::io::stderr(), "example: {example}");
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&ctx, example)));
        if run.is_err() {
            failed.push(*example);
        }
    }
    assert!(
        failed.is_empty(),
        "examples that failed:\n  {}",
        failed.join("\n  ")
    );
}

/// Where the examples run: a directory with `./prog`, `./srv`, a Makefile, and the docs'
/// `./tracer-testprog`, `./chain`, `./tracer-chain` and `./tl`.
struct Ctx {
    dir: tempfile::TempDir,
}

impl Ctx {
    fn new() -> Ctx {
        // Not tmpfs: the block-layer example needs its writes to reach a disk.
        let dir = tempfile::Builder::new()
            .prefix("examples-")
            .tempdir_in(common::bin_dir())
            .unwrap();
        let workloads = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads");
        for (name, extra) in [("prog", &[][..]), ("srv", &["-pthread"][..])] {
            let status = Command::new("cc")
                .args(["-g", "-O0", "-fno-omit-frame-pointer"])
                .args(extra)
                .arg("-o")
                .arg(dir.path().join(name))
                .arg(workloads.join(format!("{name}.c")))
                .status()
                .expect("run cc: the example workloads need a C compiler (apt-get install gcc)");
            assert!(status.success(), "cc failed on {name}.c");
        }
        std::fs::write(dir.path().join("Makefile"), "all:\n\t@true\n").unwrap();
        // docs/probe.md's Python script: the generator `tick` started three times.
        std::fs::write(
            dir.path().join("ticks.py"),
            "def tick(n):\n    yield n * 2\n\nfor i in range(3):\n    next(tick(i))\n",
        )
        .unwrap();
        // The docs' workloads, under the names the docs give them.
        for (name, built) in [
            ("tracer-testprog", testprog()),
            ("chain", common::chain_program()),
            ("tracer-chain", common::chain_program()),
            ("tl", common::timeline_program()),
            ("usdt", common::usdt_program()),
            ("busy", common::profile_program()),
            ("spin", common::spin_program()),
        ] {
            std::fs::copy(&built, dir.path().join(name))
                .unwrap_or_else(|e| panic!("copy {} to {name}: {e}", built.display()));
        }
        Ctx { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `tracer ARGS` in the examples' directory.
    fn tracer(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(tracer_bin());
        cmd.args(args).current_dir(self.dir.path());
        cmd
    }

    fn run(&self, args: &[String]) -> Output {
        self.tracer(args).output().unwrap()
    }

    /// Starts `tracer ARGS` and waits for its banner on stderr.
    fn start(&self, args: &[String]) -> Running {
        let mut running = Running::spawn(self.tracer(args));
        running.wait_for(|l| {
            l.starts_with("Tracing")
                || l.starts_with("Watching")
                || l.starts_with("Counting")
                || l.starts_with("Recording")
                || l.starts_with("Sampling")
                || l.starts_with("Timing")
        });
        running
    }

    /// Runs `./prog` (or any command) in the examples' directory; returns its pid.
    fn workload(&self, program: &str, args: &[&str]) -> u32 {
        let mut child = Command::new(program)
            .args(args)
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        let pid = child.id();
        let status = child.wait().unwrap();
        assert!(status.success(), "{program}: {status}");
        pid
    }

    /// `./prog --wait` ready to be traced by pid.
    fn waiting_prog(&self) -> Workload {
        let mut cmd = Command::new(self.path("prog"));
        cmd.arg("--wait");
        Workload::start(cmd)
    }
}

/// A running tracer whose stderr lines are collected as they come.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: String,
    /// Taken by [`Running::finish`].
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// A check that fails (panics) before `finish` leaves no tracer behind: a `tracer serve`
/// still listening on its port would fail the next example that wants it.
impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tracer");
        let (tx, lines) = mpsc::channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines() {
                if tx.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            buf
        });
        Running {
            child,
            lines,
            stderr: String::new(),
            stdout: Some(stdout),
        }
    }

    /// Waits (at most 60 s in all) for a stderr line matching `pred`; on a timeout the tracer
    /// is killed, so a failed check leaves nothing running.
    fn wait_for(&mut self, pred: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = pred(&line);
                    self.stderr.push_str(&line);
                    self.stderr.push('\n');
                    if hit {
                        return;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!("tracer's stderr: {e}; so far:\n{}", self.stderr)
                }
            }
        }
    }

    fn interrupt(&self) {
        // SAFETY: kill(2) on our own child's pid, which it keeps until we wait for it.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }

    /// Waits for the exit; returns the status, stdout and the whole stderr.
    fn finish(mut self) -> (ExitStatus, String, String) {
        let status = self.child.wait().unwrap();
        let stdout = self.stdout.take().expect("finished once").join().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.stderr.push_str(&line);
            self.stderr.push('\n');
        }
        (status, text(&stdout), std::mem::take(&mut self.stderr))
    }

    fn interrupted(self) -> (String, String) {
        self.interrupt();
        let (status, stdout, stderr) = self.finish();
        assert_eq!(status.code(), Some(0), "Ctrl-C ends a run with 0\n{stderr}");
        (stdout, stderr)
    }
}

/// The words of an example as a shell splits them (single and double quotes), without the
/// leading `tracer`, with whole words replaced as `subs` says.
fn words(example: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let mut out = shell_words(example, subs);
    assert_eq!(out.first().map(String::as_str), Some("tracer"), "{example}");
    out.remove(0);
    out
}

/// Every word of `example` as the shell splits it (quotes removed), with `subs` applied.
fn shell_words(example: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in example.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, ' ') => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in {example:?}");
    out.extend(word);
    for w in &mut out {
        if let Some((_, to)) = subs.iter().find(|(from, _)| w == from) {
            *w = to.to_string();
        }
    }
    out
}

fn ok(out: &Output) -> (String, String) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Lines of `text` containing `needle`.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// `prog.c:N` for the first line of tests/workloads/prog.c containing `needle`.
fn prog_line(needle: &str) -> String {
    source_line("tests/workloads/prog.c", needle)
}

/// `NAME:N` for the first line of the repository's file `path` containing `needle`.
fn source_line(path: &str, needle: &str) -> String {
    let source = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(path),
    )
    .unwrap();
    let n = source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} in {path}"))
        + 1;
    let name = Path::new(path).file_name().unwrap().to_string_lossy();
    format!("{name}:{n}")
}

fn available(feature: Feature) -> bool {
    matches!(feature.check(), Status::Available { .. })
}

// ---- features and list ----

fn features_text(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    for feature in Feature::ALL {
        let want = if available(feature) {
            "available"
        } else {
            "unavailable"
        };
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(feature.label()))
            .unwrap_or_else(|| panic!("no {} line:\n{stdout}", feature.label()));
        assert_eq!(line.split_whitespace().nth(1), Some(want), "{line}");
    }
}

/// The script bash sources: `tracer pro<TAB>` offers probe and profile, `tracer trace
/// --fa<TAB>` --failed.
fn generate_bash(ctx: &Ctx, example: &str) {
    let (script, _) = ok(&ctx.run(&words(example, &[])));
    assert!(script.contains("complete -F _tracer"), "{script}");
    let file = ctx.dir.path().join("tracer.bash");
    std::fs::write(&file, &script).unwrap();
    for (line, want) in [
        ("tracer pro", "probe profile"),
        ("tracer trace --fa", "--failed"),
    ] {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
                 _tracer tracer \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\" | sort | paste -sd' '",
                file.display()
            ))
            .output()
            .unwrap();
        let (got, _) = ok(&out);
        assert_eq!(got.trim_end(), want, "completing `{line}`");
    }
}

/// One page per subcommand `tracer --help` lists, and tracer.1; a page's EXAMPLES are its
/// `--help` examples, line for line, as man shows them.
fn generate_man(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(example, &[])));
    let dir = ctx.dir.path().join("man");
    let (help, _) = ok(&ctx.run(&words("tracer --help", &[])));
    let subcommands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    let mut want: Vec<String> = subcommands
        .iter()
        .map(|s| format!("tracer-{s}.1"))
        .collect();
    want.push("tracer.1".into());
    want.sort();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(pages, want);
    let (help, _) = ok(&ctx.run(&words("tracer trace --help", &[])));
    let examples: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Examples:")
        .skip(1)
        .map(str::trim_end)
        .collect();
    assert!(examples.len() >= 5, "{help}");
    let out = Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(dir.join("tracer-trace.1"))
        .env("MANWIDTH", "200")
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let (page, _) = ok(&out);
    let shown: Vec<&str> = page
        .lines()
        .skip_while(|l| *l != "EXAMPLES")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.strip_prefix("       ").unwrap_or(l).trim_end())
        .collect();
    assert_eq!(shown, examples, "{page}");
}

fn features_json_value(ctx: &Ctx) -> serde_json::Value {
    let (stdout, _) = ok(&ctx.run(&words("tracer features --json", &[])));
    serde_json::from_str(&stdout).unwrap()
}

fn features_json(ctx: &Ctx, _example: &str) {
    let json = features_json_value(ctx);
    for feature in Feature::ALL {
        let want = if available(feature) {
            "available"
        } else {
            "unavailable"
        };
        assert_eq!(json["features"][feature.label()]["status"], want, "{json}");
    }
}

/// `| jq FILTER` through a shell when jq is installed; otherwise the JSON is parsed here.
fn jq_or_parse(ctx: &Ctx, example: &str) -> Vec<serde_json::Value> {
    let (tracer_part, _) = example.split_once(" | jq ").unwrap();
    let stdout = match jq_stdout(ctx, example) {
        Some(stdout) => stdout,
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "note: jq is not installed: `{tracer_part}` checked without the pipe"
            );
            ok(&ctx.run(&words(tracer_part, &[]))).0
        }
    };
    serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// `example` (a `tracer ... | jq ...` line) run by the shell as written: its stdout; `None`
/// without jq.
fn jq_stdout(ctx: &Ctx, example: &str) -> Option<String> {
    let jq = Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    jq.then(|| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(example.replacen("tracer", &tracer_bin().display().to_string(), 1))
            .current_dir(ctx.dir.path())
            .output()
            .unwrap();
        ok(&out).0
    })
}

fn features_jq(ctx: &Ctx, example: &str) {
    let values = jq_or_parse(ctx, example);
    let values = if values.len() == 1 && values[0].get("features").is_some() {
        vec![values[0]["features"]["kprobes"].clone()]
    } else {
        values
    };
    let want = if available(Feature::KprobePmu) {
        "available"
    } else {
        "unavailable"
    };
    assert_eq!(values.len(), 1, "{values:?}");
    assert_eq!(values[0]["status"], want, "{values:?}");
    assert_eq!(values[0], features_json_value(ctx)["features"]["kprobes"]);
}

/// docs/json.md's jq over `tracer trace`'s JSON: head's one open of /etc/hostname, its
/// arguments typed as the model says. Without jq, the lines are selected here.
fn docs_json_jq(ctx: &Ctx, example: &str) {
    let opens: Vec<serde_json::Value> = (jq_or_parse(ctx, example).into_iter())
        .filter(|c| c["args"]["filename"] == "/etc/hostname")
        .collect();
    assert_eq!(opens.len(), 1, "{opens:?}");
    let open = &opens[0];
    assert_eq!(
        (&open["type"], &open["name"], &open["comm"]),
        (&"call".into(), &"openat".into(), &"head".into())
    );
    assert_eq!(
        open["args"]["dfd"],
        serde_json::json!({"value": -100, "text": "AT_FDCWD"})
    );
    assert_eq!(
        open["args"]["flags"],
        serde_json::json!({"value": 0, "text": "O_RDONLY"})
    );
    assert!(open["ret"].as_i64().is_some_and(|fd| fd >= 0), "{open}");
    // The line as jq prints it, in tracer's key order, against the page's.
    if let Some(stdout) = jq_stdout(ctx, example) {
        assert_shown(example, &stdout, "", &[]);
    }
}

fn list_glob(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let fs = tracer::kernel::tracefs::Tracefs::locate().unwrap();
    let want: BTreeSet<String> = std::fs::read_dir(fs.root().join("events/syscalls"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sys_enter_open"))
        .map(|n| format!("tracepoint:syscalls:{n}"))
        .collect();
    let got: BTreeSet<String> = stdout.lines().map(str::to_string).collect();
    assert!(want.contains("tracepoint:syscalls:sys_enter_openat"));
    assert_eq!(got, want);
}

fn list_verbose(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "tracepoint:sched:sched_switch", "{stdout}");
    for field in [
        "char[16] prev_comm",
        "pid_t prev_pid",
        "char[16] next_comm",
        "pid_t next_pid",
    ] {
        assert!(
            lines.contains(&format!("    {field}").as_str()),
            "{field}:\n{stdout}"
        );
    }
}

fn list_binary(ctx: &Ctx, example: &str) {
    assert!(
        Path::new("/usr/bin/bash").exists(),
        "the example lists /usr/bin/bash"
    );
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stdout.lines().any(|l| l == "uprobe:/usr/bin/bash:readline"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .all(|l| l.starts_with("uprobe:/usr/bin/bash:read")),
        "{stdout}"
    );
}

fn list_usdt_python(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    let python = std::fs::canonicalize("/usr/bin/python3").expect("/usr/bin/python3");
    let data = std::fs::read(&python).expect("read python3");
    let notes = tracer::kernel::usdt::notes(&data, &python).expect("python3's notes");
    if notes.is_empty() {
        // Not Debian's build: the documented refusal.
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("has no USDT probes"),
            "{}",
            text(&out.stderr)
        );
        return;
    }
    let (stdout, _) = ok(&out);
    // Every probe, by name, with Python's documented strings typed.
    let specs: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    let mut names: Vec<String> = notes
        .iter()
        .map(|n| format!("usdt:/usr/bin/python3:{}:{}", n.provider, n.name))
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(specs, names);
    let entry = stdout
        .split("usdt:/usr/bin/python3:python:function__entry\n")
        .nth(1)
        .expect("function__entry listed");
    let args: Vec<&str> = entry.lines().take(2).collect();
    assert!(args[0].starts_with("    char * arg0 ("), "{stdout}");
    assert!(args[1].starts_with("    char * arg1 ("), "{stdout}");
}

/// Runs the example as written and checks that it prints what its page shows.
fn shown_as_documented(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Runs the example and checks that it prints what its page shows, and the workload's own
/// line once: that lands among tracer's lines wherever the shared pipe puts it (the workload
/// flushes it at its exit, tracer prints events as it reads them).
fn shown_with_own_line(ctx: &Ctx, example: &str, own: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let times = stdout.lines().filter(|l| *l == own).count();
    assert_eq!(times, 1, "{own:?} once in:\n{stdout}");
    assert_shown(example, &stdout, &stderr, &[own]);
}

fn usdt_mixed(ctx: &Ctx, example: &str) {
    shown_with_own_line(ctx, example, "guarded 0");
}

fn usdt_guarded(ctx: &Ctx, example: &str) {
    // Untraced, the guarded code never runs; traced, it runs each time.
    let alone = Command::new(ctx.path("usdt")).arg("3").output().unwrap();
    assert_eq!(text(&alone.stdout), "guarded 0\n");
    shown_with_own_line(ctx, example, "guarded 3");
}

fn usdt_python(ctx: &Ctx, example: &str) {
    let python = std::fs::canonicalize("/usr/bin/python3").expect("/usr/bin/python3");
    let data = std::fs::read(&python).expect("read python3");
    let notes = tracer::kernel::usdt::notes(&data, &python).expect("python3's notes");
    if !notes.iter().any(|n| n.name == "function__entry") {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {example}: /usr/bin/python3 has no function__entry probe (not Debian's build)"
        );
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // Python names the script by its absolute path: here, the examples' directory.
    let script = ctx.path("ticks.py").display().to_string();
    let ticks = lines_with(&stdout, "arg1=\"tick\" arg2=2");
    assert_eq!(ticks.len(), 3, "{stdout}");
    assert!(
        ticks.iter().all(|l| l.ends_with(&format!(
            " usdt:/usr/bin/python3:python:function__entry arg0=\"{script}\" arg1=\"tick\" arg2=2"
        ))),
        "{stdout}"
    );
    // The page shows the script in /home/me; the rest as printed.
    let shown = "0.025274   0   23633/23633     python3          usdt:/usr/bin/python3:python:function__entry arg0=\"/home/me/ticks.py\" arg1=\"tick\" arg2=2";
    assert_shown(example, &stdout, &stderr, &[shown]);
}

fn usdt_count_by(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let mut rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("ARG1"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    rows.sort();
    let rows: Vec<String> = rows
        .iter()
        .map(|r| r.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows, ["-1 1", "-2 1", "-3 1", "-4 1", "0 1"], "{stdout}");
}

fn readme_list(ctx: &Ctx, _example: &str) {
    // `[PATTERN]` is optional: without one, and with one.
    let (all, _) = ok(&ctx.run(&words("tracer list", &[])));
    assert!(
        all.lines().any(|l| l == "tracepoint:sched:sched_switch"),
        "{all}"
    );
    assert!(all.lines().count() > 100, "{all}");
    let (some, _) = ok(&ctx.run(&words("tracer list sched_switch", &[])));
    assert_eq!(
        some.lines().collect::<Vec<_>>(),
        ["tracepoint:sched:sched_switch"]
    );
}

// ---- probe ----

/// The opens of `cat /etc/hostname`, as README shows them.
fn check_openat_cat(stdout: &str, stderr: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "TIME(s)    CPU PID/TID         COMM             PROBE ARGS",
        "{stdout}"
    );
    let events = lines_with(stdout, " syscalls:sys_enter_openat dfd=");
    let hostname = lines_with(stdout, "filename=\"/etc/hostname\"");
    assert_eq!(hostname.len(), 1, "{stdout}");
    assert!(hostname[0].contains(" cat "), "{stdout}");
    assert!(hostname[0].ends_with("dfd=-100 filename=\"/etc/hostname\" flags=0x0 mode=0"));
    // cat's own output passes through.
    let name = std::fs::read_to_string("/etc/hostname").unwrap();
    assert!(lines.contains(&name.trim()), "{stdout}");
    let n = events.len();
    assert!(
        stderr.contains(&format!("{n} events in ")),
        "{n} events printed\n{stderr}"
    );
    assert!(
        stderr.contains(", command exited with status 0; 0 lost"),
        "{stderr}"
    );
    let row = lines_with(stderr, "syscalls:sys_enter_openat ");
    let row: Vec<&str> = row.last().unwrap().split_whitespace().collect();
    assert_eq!(
        row[1..],
        [n.to_string(), n.to_string(), "0".to_string()],
        "{stderr}"
    );
}

fn probe_openat_cat(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_openat_cat(&stdout, &stderr);
    // README and docs/probe.md show it run on a machine named `vm`: cat's own line, whose
    // place among the events varies (check_openat_cat finds this machine's name).
    assert_shown(example, &stdout, &stderr, &["vm"]);
}

fn xtask_run_probe(ctx: &Ctx, example: &str) {
    // `cargo xtask run -- ARGS` sets up, builds in release mode and runs `tracer ARGS`: the
    // tracer part is checked here (the build is what `cargo xtask test` already does).
    let args = example.strip_prefix("cargo xtask run -- ").unwrap();
    let (stdout, stderr) = ok(&ctx.run(&words(&format!("tracer {args}"), &[])));
    check_openat_cat(&stdout, &stderr);
}

fn xtask_test(_ctx: &Ctx, example: &str) {
    // Not run from here: it runs every tier, this test among them.
    let _ = writeln!(
        std::io::stderr(),
        "note: `{example}` is the runner of this test; it is not run from inside it"
    );
}

/// `cargo xtask test` runs it before the tiers and names the directory in TRACER_DIST: the
/// binary is there and static, the package named by the version.
fn xtask_dist(_ctx: &Ctx, example: &str) {
    let Some(dist) = std::env::var_os("TRACER_DIST").map(PathBuf::from) else {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` is checked under `cargo xtask test` (TRACER_DIST), which runs it"
        );
        return;
    };
    let out = Command::new("file")
        .arg(dist.join("tracer"))
        .output()
        .unwrap();
    let (file, _) = ok(&out);
    assert!(file.contains("static"), "{file}");
    let deb = format!("tracer_{}_amd64.deb", env!("CARGO_PKG_VERSION"));
    assert!(dist.join(&deb).exists(), "no {deb} in {}", dist.display());
}

/// The package README names is the one `cargo xtask dist` writes (its version is this
/// build's); tests/dist_vm.rs installs it, in a throwaway root.
fn readme_dpkg(_ctx: &Ctx, example: &str) {
    let deb = format!("target/dist/tracer_{}_amd64.deb", env!("CARGO_PKG_VERSION"));
    assert_eq!(example, format!("dpkg -i {deb}"));
    if let Some(dist) = std::env::var_os("TRACER_DIST").map(PathBuf::from) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(
            std::fs::canonicalize(root.join(&deb)).unwrap(),
            std::fs::canonicalize(dist.join(deb.trim_start_matches("target/dist/"))).unwrap()
        );
    }
}

fn readme_transport(ctx: &Ctx, example: &str) {
    // README names the option; completed with the probe and command of its quick start.
    let full = format!("{example} syscalls:sys_enter_openat -- cat /etc/hostname");
    let (stdout, stderr) = ok(&ctx.run(&words(&full, &[])));
    check_openat_cat(&stdout, &stderr);
}

/// `tracer trace`'s call lines (on stderr): those that look like `name(...`.
fn call_lines(stderr: &str) -> Vec<&str> {
    (stderr.lines())
        .filter(|l| {
            l.split('(').next().is_some_and(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
        })
        .collect()
}

fn trace_cat(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // cat's output alone on stdout; the calls on stderr.
    let host = std::fs::read_to_string("/etc/hostname").unwrap();
    assert_eq!(stdout, host, "{stderr}");
    let opened = call_lines(&stderr)
        .into_iter()
        .filter(|l| *l == "openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3")
        .count();
    assert_eq!(opened, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "write(1, {:?}, {}) = {}",
            host,
            host.len(),
            host.len()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("+++ exited with 0 +++"), "{stderr}");
}

fn trace_failed(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    // cat's own status passes through.
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let calls = call_lines(&stderr);
    assert!(!calls.is_empty(), "{stderr}");
    assert!(calls.iter().all(|l| l.contains(") = -1 E")), "{stderr}");
    assert!(
        calls.contains(
            &"openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory)"
        ) || calls.iter().any(|l| l.starts_with(
            "openat(AT_FDCWD, \"/nope\", O_RDONLY) = -1 ENOENT (No such file or directory) <"
        )),
        "{stderr}"
    );
}

fn trace_all_but_classes(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = call_lines(&stderr);
    assert!(
        calls.iter().any(|l| l.starts_with(
            "openat(AT_FDCWD, \"/etc\", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3"
        )),
        "{stderr}"
    );
    // `!` before the set: every call but those of %memory and %signal, as in strace.
    let left_out = ["mmap(", "munmap(", "mprotect(", "brk(", "rt_sigaction("];
    assert!(
        calls
            .iter()
            .all(|l| !left_out.iter().any(|c| l.starts_with(c))),
        "{stderr}"
    );
    assert!(calls.iter().any(|l| l.starts_with("close(")), "{stderr}");
    assert!(
        calls.iter().any(|l| l.starts_with("getdents64(")),
        "{stderr}"
    );
    assert!(stdout.lines().any(|l| l == "hostname"), "{stdout}");
}

fn trace_summary(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("% time     seconds  usecs/call     calls    errors syscall"),
        "{stderr}"
    );
    let row = |name: &str| {
        stderr
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .map(|l| l.split_whitespace().nth(3).unwrap().to_string())
    };
    assert_eq!(row("execve").as_deref(), Some("1"), "{stderr}");
    assert_eq!(row("exit_group").as_deref(), Some("1"), "{stderr}");
    assert!(row("total").is_some(), "{stderr}");
    assert!(call_lines(&stderr).is_empty(), "{stderr}");
    assert!(stdout.lines().any(|l| l == "etc"), "{stdout}");
}

fn trace_filter(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = call_lines(&stderr);
    assert!(!calls.is_empty(), "{stderr}");
    assert!(
        calls
            .iter()
            .all(|l| l.starts_with("openat(AT_FDCWD, \"/etc/")),
        "{stderr}"
    );
    assert!(
        calls
            .iter()
            .any(|l| l.starts_with("openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 3")),
        "{stderr}"
    );
}

fn trace_pid(ctx: &Ctx, example: &str) {
    const OPENS: u64 = 23;
    let mut work = Workload::batched(OPENS, None, &["open", &OPENS.to_string(), "/etc/hostname"]);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let calls = std::fs::read_to_string(ctx.path("calls.txt")).unwrap();
    let opens = calls
        .lines()
        .filter(|l| l.contains("openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY"))
        .count();
    assert_eq!(opens as u64, OPENS, "{calls}");
}

fn trace_json(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let calls = json_lines(
        std::fs::read_to_string(ctx.path("calls.json"))
            .unwrap()
            .as_bytes(),
    );
    assert_eq!(calls[0]["name"], "execve", "{stderr}");
    assert_eq!(calls[0]["ret"], 0);
    assert_eq!(calls[0]["type"], "call");
    assert_eq!(calls[0]["args"]["argv"], serde_json::json!(["true"]));
    let last_call = calls.iter().rev().find(|c| c["type"] == "call").unwrap();
    assert_eq!(last_call["name"], "exit_group");
    assert!(last_call["ret"].is_null());
    let last = calls.last().unwrap();
    assert_eq!(
        (&last["type"], &last["exit_code"]),
        (&"exit".into(), &0.into())
    );
}

fn probe_pid_json(ctx: &Ctx, example: &str) {
    const OPENS: u64 = 23;
    let mut work = Workload::batched(OPENS, None, &["open", &OPENS.to_string(), "/etc/hostname"]);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    // `-p` runs until Ctrl-C, also after the process has exited.
    let (stdout, stderr) = running.interrupted();
    let events = json_lines(stdout.as_bytes());
    assert_eq!(events.len() as u64, OPENS, "{stdout}\n{stderr}");
    for e in &events {
        assert_eq!(e["probe"], "syscalls:sys_enter_openat", "{e}");
        assert_eq!(e["pid"].to_string(), pid, "{e}");
        assert_eq!(e["args"]["filename"], "/etc/hostname", "{e}");
    }
}

fn probe_bash_readline(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe bash readline") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    // An interactive bash reads its two lines with readline; `script` gives it a terminal.
    let mut script = Command::new("script")
        .args(["-qc", "bash --norc --noprofile -i", "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run script (bsdutils) for an interactive bash");
    script
        .stdin
        .take()
        .unwrap()
        .write_all(b"true\nexit\n")
        .unwrap();
    assert!(script.wait().unwrap().success());
    let (stdout, stderr) = running.interrupted();
    let entries = lines_with(&stdout, " uprobe:bash:readline ");
    let returns = lines_with(&stdout, " uretprobe:bash:readline ret=");
    // Other interactive shells may read lines too: at least ours, in pairs.
    assert!(entries.len() >= 2, "{stdout}\n{stderr}");
    assert_eq!(entries.len(), returns.len(), "{stdout}");
    assert!(entries.iter().all(|l| l.contains(" bash ")), "{stdout}");
    // The prompt read as a string, and the two lines typed, in order (bash has no DWARF:
    // `str()` says they are strings).
    assert!(entries.iter().all(|l| l.contains(" arg0=\"")), "{stdout}");
    let typed: Vec<&str> = (returns.iter())
        .filter_map(|l| l.split_once(" ret=").map(|(_, r)| r))
        .collect();
    assert!(
        typed.windows(2).any(|w| w == [r#""true""#, r#""exit""#]),
        "{stdout}"
    );
}

/// The frames printed under a hit: `        FUNC+0xOFF (prog.c:N)`.
fn frames_after<'a>(lines: &[&'a str], at: usize) -> Vec<&'a str> {
    // Frames are indented 8 and have no column gaps (a histogram's header has).
    lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with("        ") && !l.trim().contains("  "))
        .map(|l| l.trim())
        .collect()
}

fn probe_user_stacks(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe -s user") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./prog", &[]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" uprobe:./prog:handle "))
        .collect();
    assert_eq!(hits.len(), 5, "{stdout}");
    for (n, &i) in hits.iter().enumerate() {
        assert!(
            lines[i].contains(&format!(" count={} ", n + 1)),
            "{}",
            lines[i]
        );
        let frames = frames_after(&lines, i);
        assert_eq!(
            frames[0],
            format!("handle+0x0 ({})", prog_line("long handle("))
        );
        assert!(frames[1].starts_with("work+0x"), "{frames:?}");
        assert!(frames[1].ends_with(&format!("({})", prog_line("sum += handle("))));
        assert!(frames[2].starts_with("main+0x"), "{frames:?}");
    }
    assert!(
        stderr.contains("5 events in ") && stderr.contains("after 5 events (-c)"),
        "{stderr}"
    );
}

fn readme_uprobe_args(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example probe uprobe args") {
        return;
    }
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./prog", &[]);
    let (stdout, _) = running.interrupted();
    let args: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_once(" uprobe:./prog:handle ").map(|(_, a)| a))
        .collect();
    let want: Vec<String> = (1..=6)
        .map(|i| {
            let odd = if i % 2 == 1 { "true" } else { "false" };
            format!("count={i} name=\"chain\" odd={odd} shade=GREEN")
        })
        .collect();
    // README's words: `count=1 name="chain" odd=true shade=GREEN`.
    assert_eq!(args, want, "{stdout}");
}

fn probe_count_by_comm(ctx: &Ctx, example: &str) {
    // System-wide: the workload runs under a name of its own, which no other process has (a
    // tracer-testprog of a test run beside this one would share its row).
    let workload = ctx.path("ex-count-comm");
    std::fs::copy(testprog(), &workload).unwrap();
    let running = ctx.start(&words(example, &[]));
    ctx.workload(&workload.display().to_string(), &["getppid", "1000"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    // (The COUNT column widens with the largest count, another process's maybe.)
    assert_eq!(
        stdout
            .lines()
            .next()
            .map(|h| h.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["COMM", "COUNT"]),
        "{stdout}"
    );
    let row = lines_with(&stdout, "ex-count-comm ");
    assert_eq!(row.len(), 1, "{stdout}");
    let count: u64 = row[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    // Its 1000 getppid calls and its start-up's syscalls.
    assert!((1000..1200).contains(&count), "{stdout}");
}

fn probe_hist_interval(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let file = ctx.path("four-kib");
    std::fs::write(&file, vec![b'x'; 4096]).unwrap();
    ctx.workload("cat", &[&file.display().to_string()]);
    // Two interval reports (one a second), then Ctrl-C.
    std::thread::sleep(Duration::from_millis(2100));
    running.interrupt();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("--- 1.00 s (interval 1) ---"), "{stdout}");
    assert!(stdout.contains("(interval 2) ---"), "{stdout}");
    // cat's reads: its file in one read of 4096 bytes and the read of 0 at its end.
    let cat = stdout
        .split("comm=cat\n")
        .nth(1)
        .expect("a comm=cat histogram");
    let hist: Vec<&str> = cat
        .lines()
        .take_while(|l| !l.starts_with("count "))
        .collect();
    let bucket = |lo: &str| {
        hist.iter()
            .find(|l| l.split_whitespace().next() == Some(lo))
            .map(|l| {
                l.split(':')
                    .nth(1)
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .unwrap_or(0)
    };
    // `ret` of read is a size: its rows read `4K -> 8K`.
    assert!(bucket("4K") >= 1, "{cat}");
    assert!(bucket("0") >= 1, "{cat}");
}

/// An example the VM tier must run as written (tests/vm_kprobe.rs names it).
fn assert_runs_in_vm(example: &str) {
    let vm = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vm_kprobe.rs"
    ))
    .unwrap();
    assert!(
        vm.contains(&format!("{example:?}")),
        "tests/vm_kprobe.rs must run {example:?} in the VM tier"
    );
}

/// A fentry example: it runs in tests/vm_kprobe.rs where the kernel permits tracer's
/// trampoline programs; here (where it does not) it is refused with the reason, exit 1.
fn needs_fentry(ctx: &Ctx, example: &str) {
    assert_runs_in_vm(example);
    if available(Feature::Fentry) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` runs in tests/vm_kprobe.rs (fentry is available here too)"
        );
        return;
    }
    let out = ctx.tracer(&words(example, &[])).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot attach fentry:do_sys_openat2 through fentry/fexit: "),
        "{stderr}"
    );
}

fn needs_kprobes(ctx: &Ctx, example: &str) {
    assert_runs_in_vm(example);
    if available(Feature::KprobePmu) || available(Feature::KprobeEvents) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` runs in tests/vm_kprobe.rs (kprobes are available here too)"
        );
        return;
    }
    // No kprobes here: the documented error, its alternatives, exit 1.
    let mut cmd = ctx.tracer(&words(example, &[]));
    let out = cmd.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines[0].starts_with("error: cannot probe kernel function '"),
        "{stderr}"
    );
    assert!(lines[0].contains("this kernel has no kprobes"), "{stderr}");
    assert!(
        lines[1].starts_with(
            "hint: trace the syscalls that lead there instead: tracer probe syscalls:"
        ),
        "{stderr}"
    );
    assert_eq!(
        lines[2],
        "hint: user-space functions (uprobe:PATH:SYMBOL) and tracepoints (CAT:NAME) work here; see `tracer features`"
    );
    let _ = writeln!(
        std::io::stderr(),
        "note: `{example}` needs kprobes: checked for its error here, run in the VM tier"
    );
}

fn readme_no_kprobes(ctx: &Ctx, example: &str) {
    if available(Feature::KprobePmu) || available(Feature::KprobeEvents) {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` shows the no-kprobes error: kprobes exist here"
        );
        return;
    }
    // README and docs/probe.md show the whole message: it must be what this kernel prints.
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let places = shown_places(example);
    assert_eq!(
        places.len(),
        2,
        "README.md and docs/probe.md show {example}"
    );
    for place in places {
        assert_eq!(
            place.output.len(),
            3,
            "{}: the output of {example}",
            place.at
        );
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            place.output,
            "{}",
            place.at
        );
    }
}

// ---- watch ----

const COUNTER_VALUES: [(u64, u64); 6] = [(0, 1), (1, 3), (3, 6), (6, 10), (10, 15), (15, 21)];

/// The `counter: OLD -> NEW at handle+0x..` lines, with the frames under each.
fn counter_hits(stdout: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = stdout.lines().collect();
    (0..lines.len())
        .filter(|&i| lines[i].contains(" prog             counter: "))
        .map(|i| {
            let what = lines[i].split_once("counter: ").unwrap().1.to_string();
            (
                what,
                frames_after(&lines, i)
                    .iter()
                    .map(|f| f.to_string())
                    .collect(),
            )
        })
        .collect()
}

fn check_counter(stdout: &str, stderr: &str, stacks: bool) {
    let hits = counter_hits(stdout);
    let at = prog_line("counter += count");
    let want: Vec<String> = COUNTER_VALUES
        .iter()
        .map(|(old, new)| format!("{old} -> {new} at handle+0x"))
        .collect();
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    for ((what, frames), want) in hits.iter().zip(&want) {
        assert!(what.starts_with(want.as_str()), "{what}, wanted {want}");
        assert!(what.ends_with(&format!("({at})")), "{what}");
        if stacks {
            assert!(frames[0].starts_with("handle+0x") && frames[0].ends_with(&format!("({at})")));
            assert!(frames[1].starts_with("work+0x"), "{frames:?}");
            assert!(frames[2].starts_with("main+0x"), "{frames:?}");
        } else {
            assert!(frames.is_empty(), "{frames:?}");
        }
    }
    assert!(
        stderr.contains("6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn watch_counter(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch counter") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_counter(&stdout, &stderr, false);
}

fn watch_stack(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -s") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    check_counter(&stdout, &stderr, true);
}

fn readme_watch_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch --summary") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // Only the counts, on stdout: six writes, by one thread, at one instruction.
    assert!(counter_hits(&stdout).is_empty(), "{stdout}");
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 3, "{stdout}\n{stderr}");
    assert!(
        lines[0][0] == "counter" && lines[0][2..] == ["6", "hits"],
        "{stdout}"
    );
    assert!(lines[1][0] == "thread" && lines[1][2] == "6", "{stdout}");
    assert_eq!(lines[2][0], "at", "{stdout}");
    assert!(
        lines[2][1].starts_with("handle+0x") && lines[2][2] == "6",
        "{stdout}"
    );
    assert!(
        stderr.contains("6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn watch_execute(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -t x") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let hits = lines_with(&stdout, " my_function");
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    assert!(stderr.contains("6 hits in "), "{stderr}");
}

fn watch_pid_environ(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch -p") {
        return;
    }
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    // Ends by itself when the process exits.
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    // One read of `environ` per getenv call, none written.
    let hits = lines_with(&stdout, " libc.so.6:environ: ");
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    assert!(
        hits.iter().all(|h| h.contains(" (unchanged) at getenv+0x")),
        "{stdout}"
    );
    assert!(
        stderr.contains(&"6 hits in ".to_string())
            && stderr.contains(&format!("process {pid} exited")),
        "{stderr}"
    );
}

fn watch_kernel_jiffies(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example watch --kernel") {
        return;
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let listed = kallsyms.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() == 3 && f[2] == "jiffies" && !f[0].trim_start_matches('0').is_empty()
    });
    let out = ctx.run(&words(example, &[]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    if listed {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(lines_with(&stdout, " jiffies: ").len(), 5, "{stdout}");
    } else {
        // This kernel's kallsyms lists no variables (CONFIG_KALLSYMS_ALL unset): the error says
        // so; the VM tier's kernels list them and run the example.
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            [
                "error: no kernel symbol 'jiffies' (or its address is hidden)",
                "hint: this kernel's /proc/kallsyms lists no variables (CONFIG_KALLSYMS_ALL unset): give the address (0x...) from its System.map",
            ]
        );
        let vm = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/vm_kprobe.rs"
        ))
        .unwrap();
        assert!(
            vm.contains(&format!("{example:?}")),
            "tests/vm_kprobe.rs must run {example:?}"
        );
    }
}

// ---- latency ----

/// The `count N, ...` summary of a histogram and its `LO -> HI : COUNT` rows.
fn histogram(text: &str) -> (u64, Vec<(String, u64)>) {
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

fn latency_prog(ctx: &Ctx, example: &str, stacks: bool) {
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

/// docs/serve.md's config, as the page shows it (the check fails when they differ).
const SERVE_TOML: &str = r#"[[metric]]
name = "syscalls_getppid"
help = "getppid calls by command"
probe = "syscalls:sys_enter_getppid"
count_by = ["comm"]
filter = 'comm != "sshd"'

[[metric]]
name = "read_bytes"
help = "bytes returned by read(2)"
probe = "syscalls:sys_exit_read"
hist = "ret"

[[metric]]
name = "read_latency_seconds"
help = "read(2) latency by command"
from = "syscalls:sys_enter_read"
to = "syscalls:sys_exit_read"
count_by = ["comm"]
"#;

/// `tracer serve serve.toml [--listen ...]` with the page's config: 500 getppid calls of
/// `./tracer-testprog` are on /metrics (loopback port 9435 either way), exactly; Ctrl-C ends it
/// with 0.
fn serve_docs_config(ctx: &Ctx, example: &str) {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/serve.md")).unwrap();
    assert!(
        page.contains(SERVE_TOML),
        "docs/serve.md's config is not SERVE_TOML"
    );
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.tracer(&words(example, &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    ctx.workload("./tracer-testprog", &["getppid", "500"]);
    let mut stream = std::net::TcpStream::connect("127.0.0.1:9435").unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).unwrap();
    assert!(
        body.contains("\ntracer_syscalls_getppid_total{comm=\"tracer-testprog\"} 500\n"),
        "{body}"
    );
    assert!(
        body.contains("\n# TYPE tracer_read_latency_seconds histogram\n"),
        "{body}"
    );
    let (stdout, stderr) = running.interrupted();
    assert_shown(example, &stdout, &stderr, &[]);
}

fn latency_slow_calls(ctx: &Ctx, example: &str) {
    latency_prog(ctx, example, false);
}

fn latency_slow_stacks(ctx: &Ctx, example: &str) {
    latency_prog(ctx, example, true);
}

fn latency_read_interval(ctx: &Ctx, example: &str) {
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

fn latency_wakeup(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    // prog sleeps 700 ms once: a wakeup, then a switch to it.
    ctx.workload("./prog", &[]);
    let (stdout, stderr) = running.interrupted();
    let (count, rows) = histogram(&stdout);
    assert!(count >= 1, "{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{stdout}");
}

fn latency_block(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    // Eight synchronous 4 KiB writes straight to the disk.
    let out = ctx.path("blocks");
    ctx.workload(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", out.display()),
            "bs=4096",
            "count=8",
            "oflag=direct,sync",
        ],
    );
    let (stdout, stderr) = running.interrupted();
    let (count, rows) = histogram(&stdout);
    assert!(count >= 8, "{stdout}\n{stderr}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), count, "{stdout}");
}

fn latency_srv(ctx: &Ctx, example: &str) {
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

// ---- stat ----

/// The count of `event` in a perf-stat-like report.
fn stat_count(report: &str, event: &str) -> u64 {
    report
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(event))
        .unwrap_or_else(|| panic!("no {event} line:\n{report}"))
        .split_whitespace()
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{event}: {e}\n{report}"))
}

fn stat_make(ctx: &Ctx, example: &str) {
    // make runs the Makefile of the examples' directory: one rule, `true`.
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains(" Performance counter stats for 'make':"),
        "{stderr}"
    );
    for event in ["context-switches", "cpu-migrations", "page-faults"] {
        stat_count(&stderr, event);
    }
    assert!(
        lines_with(&stderr, " msec task-clock ").len() == 1,
        "{stderr}"
    );
    for event in ["cycles", "instructions", "branches", "branch-misses"] {
        let line = stderr
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == event))
            .unwrap_or_else(|| panic!("no {event}:\n{stderr}"));
        assert!(
            line.contains("<not supported>") != available(Feature::HardwareCounters),
            "{line}"
        );
    }
}

fn stat_ls(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // As many as `tracer probe` sees ls open, in the same directory. Into a file: on
    // stdout, ls's listing can land between two of tracer's buffered writes, mid-line.
    ok(&ctx.run(&words(
        "tracer probe syscalls:sys_enter_openat -f json -o opens.json -- ls",
        &[],
    )));
    let opens = json_lines(
        std::fs::read_to_string(ctx.path("opens.json"))
            .unwrap()
            .as_bytes(),
    )
    .len() as u64;
    assert!(opens > 0);
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_openat"),
        opens,
        "{stderr}"
    );
    assert!(stat_count(&stderr, "page-faults") > 0, "{stderr}");
}

fn stat_getppid(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_getppid"),
        6,
        "{stderr}"
    );
    assert!(
        stat_count(&stderr, "page-faults") >= 64,
        "prog touches 64 pages\n{stderr}"
    );
}

fn stat_group_csv(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stderr}");
    assert_eq!((rows[0][1], rows[0][2]), ("msec", "task-clock"), "{stderr}");
    let msec: f64 = rows[0][0].parse().unwrap();
    assert!(msec >= 40.0, "prog spins 40 ms\n{stderr}");
    assert_eq!(rows[1][2], "page-faults", "{stderr}");
    assert!(rows[1][0].parse::<u64>().unwrap() >= 64, "{stderr}");
    // One group: both counted all the time.
    assert_eq!((rows[0][3], rows[0][4]), (rows[1][3], "100.00"), "{stderr}");
}

fn stat_per_cpu_interval(ctx: &Ctx, example: &str) {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let mut running = Running::spawn(ctx.tracer(&words(example, &[])));
    // Two intervals of one line per CPU.
    let seen = std::cell::Cell::new(0);
    running.wait_for(|l| {
        if l.split_whitespace().nth(3) == Some("cs") {
            seen.set(seen.get() + 1);
        }
        seen.get() == 2 * cpus
    });
    let (stdout, stderr) = running.interrupted();
    assert!(stdout.is_empty(), "{stdout}");
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.get(3) == Some(&"cs"))
        .collect();
    assert!(rows.len() >= 2 * cpus, "{stderr}");
    for (i, row) in rows.iter().take(2 * cpus).enumerate() {
        assert_eq!(row[1], format!("CPU{}", i % cpus), "{stderr}");
        row[2].replace(',', "").parse::<u64>().unwrap();
    }
}

fn stat_per_core_interval(ctx: &Ctx, example: &str) {
    let cpus = tracer::perf::cpus::online().unwrap().len();
    let mut running = Running::spawn(ctx.tracer(&words(example, &[])));
    // One interval: a line per core, whose CPU counts add up to the online CPUs.
    let seen = std::cell::Cell::new(0);
    running.wait_for(|l| {
        if let Some(n) = (l.contains(" msec task-clock "))
            .then(|| l.split_whitespace().nth(2)?.parse::<usize>().ok())
            .flatten()
        {
            seen.set(seen.get() + n);
        }
        seen.get() >= cpus
    });
    let (_, stderr) = running.interrupted();
    assert!(
        stderr.contains("#           time core            cpus"),
        "{stderr}"
    );
    let first = lines_with(&stderr, " msec task-clock ")[0];
    assert!(
        first
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("S0-D0-C"),
        "{stderr}"
    );
}

fn stat_pid_with_command(ctx: &Ctx, example: &str) {
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let out = ctx.run(&words(example, &[("1234", &pid)]));
    let (_, stderr) = ok(&out);
    work.run_batch();
    work.finish();
    // The pid's counts, for the second the command ran.
    assert!(
        stderr.contains(&format!("Performance counter stats for process id '{pid}'")),
        "{stderr}"
    );
    let elapsed: f64 = lines_with(&stderr, "seconds time elapsed")[0]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.9..3.0).contains(&elapsed), "{stderr}");
}

fn stat_pid_per_thread(ctx: &Ctx, example: &str) {
    let mut work = ctx.waiting_prog();
    let pid = work.pid().to_string();
    let mut running = Running::spawn(ctx.tracer(&words(example, &[("1234", &pid)])));
    // No banner: let it open its counters (it reads the process's threads at start).
    std::thread::sleep(Duration::from_millis(300));
    work.run_batch();
    work.finish();
    // The run ends when the process exits (before the 5 s timeout).
    running.wait_for(|l| l.contains("seconds time elapsed"));
    let (status, _, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("Performance counter stats for process id '{pid}'")),
        "{stderr}"
    );
    let thread = format!("prog-{pid}");
    let line = lines_with(&stderr, " page-faults ");
    assert_eq!(line.len(), 1, "{stderr}");
    assert_eq!(
        line[0].split_whitespace().next(),
        Some(thread.as_str()),
        "{stderr}"
    );
    let faults: u64 = line[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(faults >= 64, "prog touches 64 pages after the go\n{stderr}");
    let elapsed: f64 = lines_with(&stderr, "seconds time elapsed")[0]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(elapsed < 5.0, "{stderr}");
}

fn stat_repeat(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("Performance counter stats for './prog' (5 runs):"),
        "{stderr}"
    );
    let line = lines_with(&stderr, " page-faults:u ");
    assert_eq!(line.len(), 1, "{stderr}");
    // The spread, as perf prints it: only when the five counts were not all equal (a full
    // run once saw 115 faults in each of the five).
    if let Some((_, spread)) = line[0].split_once("( +-") {
        let pct: f64 = spread
            .trim()
            .trim_end_matches("% )")
            .trim()
            .parse()
            .unwrap();
        assert!(pct > 0.0, "{stderr}");
    }
    assert!(stat_count(&stderr, "page-faults:u") >= 64, "{stderr}");
    assert!(stderr.contains("seconds time elapsed  ( +-"), "{stderr}");
}

const STAT_RECORD: &str = "tracer stat record -o counts.json -a -e cs -- ./prog";

fn stat_record(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // The report as without `record`, and the file `stat report` reads.
    assert!(
        stderr.contains(" Performance counter stats for 'system wide':"),
        "{stderr}"
    );
    let again = ok(&ctx.run(&words("tracer stat report -i counts.json", &[]))).1;
    assert_eq!(
        lines_with(&again, " cs "),
        lines_with(&stderr, " cs "),
        "{again}\n{stderr}"
    );
}

fn stat_report_per_cpu(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(STAT_RECORD, &[])));
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let cpus = tracer::perf::cpus::online().unwrap();
    let rows = lines_with(&stderr, " cs ");
    assert_eq!(rows.len(), cpus.len(), "{stderr}");
    for (row, cpu) in rows.iter().zip(&cpus) {
        assert!(row.starts_with(&format!("CPU{cpu} ")), "{stderr}");
    }
}

// ---- record and report ----

fn report_json(ctx: &Ctx, file: &str) -> Vec<serde_json::Value> {
    let (stdout, _) = ok(&ctx.run(&words(&format!("tracer report {file} -f json"), &[])));
    json_lines(stdout.as_bytes())
}

fn record_openat_cat(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(example, &[])));
    let records = report_json(ctx, "t.tracer");
    let hostname: Vec<_> = records
        .iter()
        .filter(|r| {
            r["probe"] == "syscalls:sys_enter_openat" && r["args"]["filename"] == "/etc/hostname"
        })
        .collect();
    assert_eq!(hostname.len(), 1, "{records:?}");
    assert_eq!(hostname[0]["comm"], "cat");
}

const RECORD_DEFAULT: &str = "tracer record -P syscalls:sys_enter_openat -- cat /etc/hostname";

/// Without `-o`, as perf record writes perf.data: tracer.data, and the one before kept as
/// tracer.data.old.
fn record_default_file(ctx: &Ctx, example: &str) {
    for _ in 0..2 {
        ok(&ctx.run(&words(example, &[])));
        let records = report_json(ctx, "tracer.data");
        let hostname = (records.iter())
            .filter(|r| r["args"]["filename"] == "/etc/hostname")
            .count();
        assert_eq!(hostname, 1, "{records:?}");
    }
    assert!(ctx.dir.path().join("tracer.data.old").is_file());
}

/// Without a file, tracer.data, as perf report reads perf.data.
fn report_default_file(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(RECORD_DEFAULT, &[])));
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let opens = (stdout.lines())
        .filter(|l| l.contains("syscalls:sys_enter_openat") && l.contains("/etc/hostname"))
        .count();
    assert_eq!(opens, 1, "{stdout}");
}

const RECORD_PROG: &str =
    "tracer record -o t.tracer -W counter -P uprobe:./prog:work -e task-clock -F 999 -- ./prog";

/// Records prog as the record example does; returns its pid.
fn record_prog_file(ctx: &Ctx) -> u64 {
    ok(&ctx.run(&words(RECORD_PROG, &[])));
    let records = report_json(ctx, "t.tracer");
    let works: Vec<u64> = records
        .iter()
        .filter(|r| r["probe"] == "uprobe:./prog:work")
        .map(|r| r["args"]["i"].as_u64().unwrap())
        .collect();
    assert_eq!(works, [1, 2, 3, 4, 5, 6]);
    let writes: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| r["probe"] == "watch:counter")
        .map(|r| {
            (
                r["args"]["old"].as_u64().unwrap(),
                r["args"]["new"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(writes, COUNTER_VALUES);
    // 40 ms of spinning at 999 Hz: about 40 samples.
    let samples = records
        .iter()
        .filter(|r| r["probe"] == "task-clock")
        .count();
    assert!((10..=80).contains(&samples), "{samples} task-clock samples");
    records.iter().find(|r| r["comm"] == "prog").unwrap()["pid"]
        .as_u64()
        .unwrap()
}

fn record_prog(ctx: &Ctx, example: &str) {
    assert_eq!(example, RECORD_PROG);
    record_prog_file(ctx);
}

fn record_page_faults(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = ctx.workload("./prog", &[]) as u64;
    let (status, _, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let records = report_json(ctx, "t.tracer");
    let of_prog = |source: &str| {
        records
            .iter()
            .filter(|r| {
                r["pid"] == pid && r["probe"].as_str().is_some_and(|s| s.starts_with(source))
            })
            .count()
    };
    assert!(
        of_prog("page-faults") >= 64,
        "prog touches 64 pages\n{stderr}"
    );
    // prog sleeps 700 ms: switched out and back in at least once.
    assert!(
        of_prog("sched:") + of_prog("switch") >= 2,
        "{stderr}\n{:?}",
        &records[..records.len().min(5)]
    );
}

fn opens_23(ctx: &Ctx) -> u32 {
    ctx.workload(
        &testprog().display().to_string(),
        &["open", "23", "/etc/hostname"],
    )
}

fn record_live(ctx: &Ctx, example: &str) {
    let running = ctx.start(&words(example, &[]));
    let pid = opens_23(ctx);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let live = lines_with(&stdout, &format!(" {pid}/{pid} "));
    let opens = lines_with(&live.join("\n"), "filename=\"/etc/hostname\"").len();
    assert_eq!(opens, 23, "{stdout}");
    // The file holds the same.
    let recorded = report_json(ctx, "t.tracer")
        .iter()
        .filter(|r| r["pid"] == pid && r["args"]["filename"] == "/etc/hostname")
        .count();
    assert_eq!(recorded, 23);
}

fn record_pipe_report(ctx: &Ctx, example: &str) {
    let (record, report) = example.split_once(" | ").unwrap();
    let mut report = ctx.tracer(&words(report, &[]));
    let mut record = ctx
        .tracer(&words(record, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = record.stdout.take().unwrap();
    let reporter = report
        .stdin(pipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(record.stderr.take().unwrap());
    let mut banner = String::new();
    // A note on what the glob matched comes first.
    while !banner.lines().last().unwrap_or("").starts_with("Recording") {
        let before = banner.len();
        err.read_line(&mut banner).unwrap();
        assert!(banner.len() > before, "no banner:\n{banner}");
    }
    let pid = opens_23(ctx);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(record.id() as i32, libc::SIGINT) };
    assert_eq!(record.wait().unwrap().code(), Some(0));
    let out = reporter.wait_with_output().unwrap();
    let (stdout, _) = ok(&out);
    let opens = lines_with(&stdout, &format!(" {pid}/{pid} "))
        .iter()
        .filter(|l| l.contains("filename=\"/etc/hostname\""))
        .count();
    assert_eq!(opens, 23, "{stdout}");
}

fn report_text(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    let sources: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(4).unwrap())
        .filter(|s| *s == "uprobe:./prog:work" || *s == "watch:counter")
        .collect();
    // Each work(i) before its write of the counter.
    assert_eq!(
        sources,
        ["uprobe:./prog:work", "watch:counter"].repeat(6),
        "{stdout}"
    );
    // docs/record.md shows it after its own recording.
    docs_report_timeline(ctx, example);
}

fn report_filtered(ctx: &Ctx, example: &str) {
    let pid = record_prog_file(ctx).to_string();
    let (stdout, _) = ok(&ctx.run(&words(example, &[("1234", &pid)])));
    let at = prog_line("counter += count");
    let got: Vec<String> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_once(" prog ").unwrap().1.trim().to_string())
        .collect();
    // Calls 4-6 come after prog's 700 ms pause: the writes between 0.5 s and 2 s.
    let want: Vec<String> = COUNTER_VALUES[3..]
        .iter()
        .map(|(o, n)| format!("watch:counter old={o} new={n} at=handle+0x"))
        .collect();
    assert_eq!(got.len(), 3, "{stdout}");
    for (g, w) in got.iter().zip(&want) {
        assert!(
            g.starts_with(w.as_str()) && g.ends_with(&format!("({at})")),
            "{g}"
        );
    }
}

fn report_json_jq(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let records = jq_or_parse(ctx, example);
    // jq 1.6 reads numbers as doubles: `time_unix_ns` (about 1.8e18) comes out rounded to
    // 128 ns (docs/json.md), every other field as tracer wrote it.
    let exact = |mut records: Vec<serde_json::Value>| {
        records.iter_mut().for_each(|r| {
            r.as_object_mut().unwrap().remove("time_unix_ns");
        });
        records
    };
    assert_eq!(exact(records.clone()), exact(report_json(ctx, "t.tracer")));
    let from = |prefix: &str| {
        (records.iter())
            .filter(|r| r["type"] == "event" && r["probe"].as_str().unwrap().starts_with(prefix))
            .count()
    };
    assert_eq!(from("watch:"), 6);
    assert_eq!(from("uprobe:"), 6);
}

fn report_perfetto(ctx: &Ctx, example: &str) {
    record_prog_file(ctx);
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(
        stderr.contains("wrote t.json (open it in https://ui.perfetto.dev"),
        "{stderr}"
    );
    // Opening it in ui.perfetto.dev is left to a person: the file's trace-event shape is checked.
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ctx.path("t.json")).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let named = |name: &str| events.iter().filter(|e| e["name"] == name).count();
    assert_eq!(named("watch:counter"), 6);
    assert!(named("task-clock") >= 10);
    assert!(events
        .iter()
        .all(|e| e["ph"].is_string() && e["pid"].is_number()));
}

// ---- docs/*.md ----

/// What tracer prints after `probe` on the lines of `comm`'s hits of it.
fn hit_args<'a>(stdout: &'a str, comm: &str, probe: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| l.contains(&format!(" {comm} ")))
        .filter_map(|l| l.split_once(&format!(" {probe} ")).map(|(_, a)| a))
        .collect()
}

fn docs_probe_call_json(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe -f json") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // tracer_testprog_target(a, b) is called with (i, 2 * i) and returns 3 * i, i = 0, 1, 2;
    // its parameters are named and typed from testprog's DWARF.
    let events = json_lines(stdout.as_bytes());
    let got: Vec<(&str, &serde_json::Value, &serde_json::Value)> = events
        .iter()
        .map(|e| (e["probe"].as_str().unwrap(), &e["args"], &e["ret"]))
        .collect();
    let want: Vec<(&str, serde_json::Value, serde_json::Value)> = (0..3u64)
        .flat_map(|i| {
            [
                (
                    "uprobe:./tracer-testprog:tracer_testprog_target",
                    serde_json::json!({"a": i, "b": 2 * i}),
                    serde_json::Value::Null,
                ),
                (
                    "uretprobe:./tracer-testprog:tracer_testprog_target",
                    serde_json::json!({}),
                    serde_json::json!(3 * i),
                ),
            ]
        })
        .collect();
    let want: Vec<(&str, &serde_json::Value, &serde_json::Value)> =
        want.iter().map(|(p, a, r)| (*p, a, r)).collect();
    assert_eq!(got, want, "{stdout}");
    for e in &events {
        assert_eq!(e["comm"], "tracer-testprog", "{e}");
        assert_eq!(
            (&e["pid"], &e["tid"]),
            (&events[0]["pid"], &events[0]["pid"]),
            "{e}"
        );
    }
    assert!(
        stderr.contains("6 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn docs_probe_execve_argv(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe execve") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let lines = lines_with(&stdout, " syscalls:sys_enter_execve ");
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(
        lines[0].contains(r#" filename="/bin/true" argv=["/bin/true", "one", "two"] envp=0x"#),
        "{stdout}"
    );
}

fn docs_probe_count_by_filename(ctx: &Ctx, example: &str) {
    if !has(
        Feature::Tracepoints,
        "example docs probe --count-by filename",
    ) {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The row of the 3 opens (the loader's own opens are rows of their own, in any order).
    let rows: Vec<Vec<&str>> = (stdout.lines().skip(1))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.iter().any(|r| *r == ["\"/etc/hostname\"", "3"]),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout
            .lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["FILENAME", "COUNT"]),
        "{stdout}"
    );
}

fn docs_probe_strlen_json(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --strlen") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // cat opens /etc/hostname once; the loader's opens do not match. (cat prints the
    // hostname to the same stdout.)
    let json: String = (stdout.lines())
        .filter(|l| l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    let events = json_lines(json.as_bytes());
    assert_eq!(events.len(), 1, "{stdout}");
    assert_eq!(
        events[0]["args"],
        serde_json::json!({"filename": "/etc/hos"})
    );
    assert_eq!(events[0]["truncated"], serde_json::json!(["filename"]));
}

fn docs_probe_chain_typed(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe chain") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // chain_target(count=i, "chain", &{i, -i, "b-point"}, i % 2, GREEN) returns 3 * i. The first
    // call's string is in read-only data the process has not touched yet: a pointer, as
    // docs/probe.md explains.
    let calls = hit_args(&stdout, "chain", "uprobe:./chain:chain_target");
    let want = [
        ("count=1", "name=0x", "odd=true"),
        ("count=2", "name=\"chain\"", "odd=false"),
    ];
    assert_eq!(calls.len(), want.len(), "{stdout}\n{stderr}");
    for (args, (count, name, odd)) in calls.iter().zip(want) {
        let w: Vec<&str> = args.split(' ').collect();
        assert_eq!(w.len(), 5, "{args}");
        assert!(
            w[0] == count && w[1].starts_with(name) && w[2].starts_with("where=0x7ff"),
            "{args}"
        );
        assert_eq!(w[3..], [odd, "shade=GREEN"], "{args}");
    }
    assert_eq!(
        hit_args(&stdout, "chain", "uretprobe:./chain:chain_target"),
        ["ret=3", "ret=6"],
        "{stdout}"
    );
    // Each call's return right after it.
    let kinds: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|p| p.ends_with(":./chain:chain_target"))
        .collect();
    assert_eq!(
        kinds,
        [
            "uprobe:./chain:chain_target",
            "uretprobe:./chain:chain_target"
        ]
        .repeat(2)
    );
    assert!(
        stderr.contains("4 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn docs_probe_chain_members(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe chain members") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // where = &{i, -i, "b-point"}; the first call's label is not readable yet (a pointer).
    let calls = hit_args(&stdout, "chain", "uprobe:./chain:chain_target");
    assert_eq!(calls.len(), 2, "{stdout}\n{stderr}");
    let first: Vec<&str> = calls[0].split(' ').collect();
    assert!(
        first.len() == 3
            && first[0] == "where->y=-1"
            && first[1].starts_with("where->label=0x")
            && first[2] == "count=1",
        "{}",
        calls[0]
    );
    assert_eq!(calls[1], "where->y=-2 where->label=\"b-point\" count=2");
    assert!(
        stderr.contains("2 events in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn docs_probe_count_by_flags(ctx: &Ctx, example: &str) {
    // System-wide for 5 s: 23 opens of /etc/hostname with O_RDONLY (flags 0) after the banner.
    let running = ctx.start(&words(example, &[]));
    opens_23(ctx);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["FLAGS", "COUNT"], "{stdout}");
    let counts: Vec<(&str, u64)> = rows[1..]
        .iter()
        .map(|r| {
            assert_eq!(r.len(), 2, "{stdout}");
            (r[0], r[1].parse().unwrap())
        })
        .collect();
    // Other processes open files read-only too: ours are 23 of them at least.
    let read_only = counts.iter().find(|(f, _)| *f == "0x0").map_or(0, |c| c.1);
    assert!(read_only >= 23, "{stdout}");
    assert!(
        counts.windows(2).all(|w| w[0].1 >= w[1].1),
        "largest first:\n{stdout}"
    );
    // Every hit is in a row.
    let total: u64 = counts.iter().map(|c| c.1).sum();
    // The run's length is measured to its end: 5.00 s, or 5.01 on a loaded machine.
    let counted = format!("\n{total} hits counted in the kernel in 5.0");
    assert!(
        stderr.contains(&counted) && stderr.contains(" s, after 5.0 s (-d); 0 not counted"),
        "{total}\n{stderr}"
    );
}

fn docs_probe_stack_pid(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe -s -p") {
        return;
    }
    // `4422` becomes the pid of a started ./tracer-chain making one call; it stays alive until
    // tracer has printed (its stack is symbolized from the process's mappings).
    let mut cmd = Command::new(ctx.path("tracer-chain"));
    cmd.arg("1").current_dir(ctx.dir.path());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("4422", &pid)]));
    work.run_batch();
    // Ends by itself after the one event (-c 1).
    let (status, stdout, stderr) = running.finish();
    work.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_shown(example, &stdout, &stderr, &[]);
    let lines: Vec<&str> = stdout.lines().collect();
    let hits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(" uprobe:./tracer-chain:chain_b "))
        .collect();
    assert_eq!(hits.len(), 1, "{stdout}");
    let hit = lines[hits[0]];
    assert!(
        hit.contains(&format!(" {pid}/{pid} "))
            && hit.ends_with(" tracer-chain     uprobe:./tracer-chain:chain_b i=1"),
        "{hit}"
    );
    let line = |needle| format!("(chain.c:{})", common::chain_line(needle));
    let frames = frames_after(&lines, hits[0]);
    assert_eq!(frames.len(), 4, "{stdout}");
    assert_eq!(frames[0], format!("chain_b+0x0 {}", line("long chain_b(")));
    assert!(
        frames[1].starts_with("chain_a+0x") && frames[1].ends_with(&line("return chain_b(i)")),
        "{frames:?}"
    );
    assert!(
        frames[2].starts_with("main+0x") && frames[2].ends_with(&line("sum += chain_a(")),
        "{frames:?}"
    );
    // libc's __libc_start_call_main, a local symbol the stripped libc does not carry: named
    // from libc6-dbg's debug file (found by build-id), which `cargo xtask test` installs.
    assert!(
        frames[3].starts_with("__libc_start_call_main+0x")
            && frames[3].ends_with(" (libc_start_call_main.h:58)"),
        "{frames:?}"
    );
    assert!(
        stderr.contains("1 events in ") && stderr.contains("after 1 events (-c); 0 lost"),
        "{stderr}"
    );
}

fn docs_probe_count_by_comm_probe(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // 1000 getppid calls and no getpgid: a key without hits has no row.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["COMM", "PROBE", "COUNT"],
            ["tracer-testprog", "syscalls:sys_enter_getppid", "1000"]
        ],
        "{stdout}"
    );
    assert!(
        stderr.contains("1000 hits counted in the kernel in ")
            && stderr.contains("command exited with status 0; 0 not counted"),
        "{stderr}"
    );
}

fn docs_probe_hist_ret(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --hist ret") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // The returns are 3 * i for i = 0..20: 0 | (no 1) | 3 | 6 | 9 12 15 | 18 .. 30 | 33 .. 57.
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 20, "{stdout}");
    assert!(
        stdout.contains("\n                           0  :        1  |*****")
            && stdout.contains("\n                           1  :        0  |     "),
        "0 and 1 are rows of their own: {stdout}"
    );
    let want = [
        ("2 -> 3", 1),
        ("4 -> 7", 1),
        ("8 -> 15", 3),
        ("16 -> 31", 5),
        ("32 -> 63", 9),
    ];
    assert_eq!(rows, want.map(|(r, c)| (r.to_string(), c)), "{stdout}");
    assert!(stdout.contains("\ncount 20, sum 570, avg 28\n"), "{stdout}");
    assert!(
        stderr.contains("20 hits counted in the kernel in ")
            && stderr.contains("command exited with status 0; 0 not counted"),
        "{stderr}"
    );
}

/// (HITS, PRINTED, LOST, FILTERED) of `probe`'s summary row.
fn filter_row(stderr: &str, probe: &str) -> Vec<u64> {
    let row = lines_with(stderr, probe)
        .into_iter()
        .find(|l| l.starts_with(probe))
        .unwrap_or_else(|| panic!("no row for {probe}:\n{stderr}"));
    (row.split_whitespace().skip(1))
        .map(|n| n.parse().unwrap())
        .collect()
}

fn probe_filter_failed_opens(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example probe --filter") {
        return;
    }
    let out = ctx.run(&words(example, &[]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // cat's own status: it could not open /nonexistent.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let events = lines_with(&stdout, " syscalls:sys_exit_openat ");
    // Its loader's and locale's opens succeed (or, under cargo's LD_LIBRARY_PATH, some fail):
    // every printed one failed, /nonexistent's with ENOENT, and the rest were refused.
    assert!(!events.is_empty(), "{stdout}");
    assert!(events.iter().all(|l| l.ends_with(" ret=-2")), "{stdout}");
    let row = filter_row(&stderr, "syscalls:sys_exit_openat");
    assert_eq!(row[1], events.len() as u64, "{stderr}");
    assert_eq!(row[0], row[1] + row[2] + row[3], "{stderr}");
    assert!(row[3] > 0, "{stderr}");
}

fn docs_probe_filter_ret(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --filter ret") {
        return;
    }
    // Without cargo's LD_LIBRARY_PATH, as a user runs it: the loader then makes the opens the
    // page counts.
    let mut cmd = ctx.tracer(&words(example, &[]));
    let (stdout, stderr) = ok(&cmd.env_remove("LD_LIBRARY_PATH").output().unwrap());
    assert_shown(example, &stdout, &stderr, &[]);
    assert_eq!(lines_with(&stdout, " ret=-2").len(), 3, "{stdout}");
    assert_eq!(
        filter_row(&stderr, "syscalls:sys_exit_openat"),
        [7, 3, 0, 4]
    );
}

fn docs_probe_filter_uprobe(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --filter uprobe") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let args: Vec<&str> = (stdout.lines().skip(1))
        .map(|l| l.split_once("tracer_testprog_target ").unwrap().1)
        .collect();
    assert_eq!(args, ["a=5 b=10", "a=98 b=196", "a=99 b=198"], "{stdout}");
    assert_eq!(
        filter_row(&stderr, "uprobe:./tracer-testprog:tracer_testprog_target"),
        [100, 3, 0, 97]
    );
}

fn docs_probe_filter_typo(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --filter typo") {
        return;
    }
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_shown(example, "", &stderr, &[]);
    assert_eq!(stderr.lines().count(), 6, "{stderr}");
}

fn docs_probe_every_syscall(ctx: &Ctx, example: &str) {
    if !has(Feature::RawTracepoints, "example docs probe every syscall") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The count of syscall entry tracepoints is this kernel's: masked as a number.
    assert_shown(example, &stdout, &stderr, &[]);
    assert_eq!(
        lines_with(&stdout, "syscalls:sys_enter_getppid "),
        ["syscalls:sys_enter_getppid             1000"],
        "{stdout}"
    );
}

/// A bpftrace spelling: refused as a usage error, with exactly the page's error and hint.
fn docs_probe_bpftrace_pointer(ctx: &Ctx, example: &str) {
    let out = ctx.run(&words(example, &[]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 2, "an error and its hint: {stderr}");
    assert!(
        stderr.starts_with("error: '") && stderr.contains("\nhint: "),
        "{stderr}"
    );
    assert_shown(example, "", &stderr, &[]);
}

/// `-o FILE`: the events go to the file (stdout has none), the summary to stderr.
fn docs_probe_output_file(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe -o FILE") {
        return;
    }
    let file = ctx.path("hits.json");
    let _ = std::fs::remove_file(&file);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_eq!(stdout, "", "the data went to the file");
    assert_shown(example, &stdout, &stderr, &[]);
    let written = std::fs::read_to_string(&file).unwrap();
    let events: Vec<serde_json::Value> = (written.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{written}");
    assert!(
        (events.iter())
            .all(|e| e["probe"] == "syscalls:sys_enter_getppid" && e["comm"] == "tracer-testprog"),
        "{written}"
    );
}

fn docs_probe_offline_cpu(ctx: &Ctx, example: &str) {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if tracer::perf::cpus::online().is_ok_and(|cpus| cpus.contains(&63)) {
        let _ = writeln!(
            std::io::stderr(),
            "note: CPU 63 is online here: {example} not checked"
        );
        return;
    }
    let out = ctx.run(&words(example, &[]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr,
        format!("error: -C 63: CPU 63 is not online: nothing would ever be seen there\nhint: CPUs online here: {} (/sys/devices/system/cpu/online)\n", online.trim())
    );
    assert_shown(example, "", &stderr, &[]);
}

fn docs_probe_comm_note(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --comm note") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // The page shows cat's own count on this machine; the count depends on its libraries.
    let count = lines_with(&stdout, "cat ");
    assert_eq!(count.len(), 1, "{stdout}");
    // cat's own output (the host name) comes first, on the same stdout.
    assert!(stdout.contains("\nCOMM  COUNT\ncat "), "{stdout}");
    assert!(
        stderr.starts_with("note: --comm cat is not the name of `sh -c cat /etc/hostname` (its task is named sh): only its children (or itself after a rename) named cat will count\n"),
        "{stderr}"
    );
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap();
    assert_shown(example, &stdout, &stderr, &[hostname.trim()]);
}

fn docs_probe_hist_linear(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs probe --linear") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // arg0 is 0..99: ten in each of the five buckets, fifty from 50 on.
    let (count, rows) = histogram(&stdout);
    assert_eq!(count, 100, "{stdout}");
    let want = ["0 -> 9", "10 -> 19", "20 -> 29", "30 -> 39", "40 -> 49"];
    assert_eq!(rows, want.map(|r| (r.to_string(), 10)), "{stdout}");
    assert!(
        stdout.contains("\n                       >= 50  :       50  |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\ncount 100, sum 4950, avg 49\n"),
        "{stdout}"
    );
}

fn docs_probe_hist_bytes(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs probe --hist bytes") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let (_, rows) = histogram(&stdout);
    assert!(
        rows.contains(&("64K -> 128K".to_string(), 5)),
        "dd's five reads of 64 KiB: {stdout}"
    );
}

fn docs_latency_filter(ctx: &Ctx, example: &str) {
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

fn docs_latency_linear(ctx: &Ctx, example: &str) {
    if !has(Feature::UprobePmu, "example docs latency --linear") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    // `slept NS DELAY`: the duration is the first number.
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

fn docs_latency_sleeps(ctx: &Ctx, example: &str) {
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

/// CPUs 0 and 1 are online (./tl pins its threads to them).
fn two_cpus(what: &str) -> bool {
    let cpus = tracer::perf::cpus::online().expect("online CPUs");
    if cpus.len() < 2 || cpus[..2] != [0, 1] {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {what}: ./tl pins threads to CPUs 0 and 1; online CPUs are {cpus:?}"
        );
        return false;
    }
    true
}

/// Runs docs/record.md's recording of `./tl 3` (into t.tracer) and checks what it prints;
/// returns the (main, worker) thread ids, or `None` where it cannot run.
fn record_timeline(ctx: &Ctx) -> Option<(u64, u64)> {
    let what = "example docs record ./tl";
    if !has(Feature::UprobePmu, what) || !has(Feature::Breakpoints, what) || !two_cpus(what) {
        return None;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(DOCS_RECORD_TL, &[])));
    assert_shown(DOCS_RECORD_TL, &stdout, &stderr, &[]);
    // ./tl's own output (tracer's stdout, as the file is named): its threads' ids.
    let tid = |who: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(who)?.parse().ok())
            .unwrap_or_else(|| panic!("no '{who}' line:\n{stdout}"))
    };
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    let (main, worker) = (tid("main "), tid("worker "));
    let count = |source: &str| -> u64 {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("  {source} ")))
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_else(|| panic!("no {source} row:\n{stderr}"))
            .parse()
            .unwrap()
    };
    // Three rounds: a write, a call and its return, a getppid each.
    for source in [
        "uprobe:./tl:timeline_step",
        "uretprobe:./tl:timeline_step",
        "syscalls:sys_enter_getppid",
        "watch:timeline_counter",
    ] {
        assert_eq!(count(source), 3, "{source}\n{stderr}");
    }
    // 4 fresh pages a round, besides the process's start-up; the worker waits for the main
    // thread each round: switched out and back in.
    assert!(count("page-faults") >= 12, "{stderr}");
    assert!(count("context switches") >= 6, "{stderr}");
    // The worker's fork and both threads' exits (the names written at the start are not
    // counted here; `tracer report` counts them as task:comm).
    assert_eq!(count("comm/fork/exit"), 3, "{stderr}");
    assert!(
        stderr.contains(" written in ") && stderr.contains(", command exited with status 0\n"),
        "{stderr}"
    );
    Some((main, worker))
}

/// docs/record.md's sampled-stacks example.
const DOCS_RECORD_STACKS: &str = "tracer record -o s.tracer -e cpu-clock -F 999 -g -- ./spin";

/// Records ./spin as docs/record.md does and checks what it shows; returns the report's JSON.
fn record_stacks(ctx: &Ctx) -> Vec<serde_json::Value> {
    let (stdout, stderr) = ok(&ctx.run(&words(DOCS_RECORD_STACKS, &[])));
    assert_shown(DOCS_RECORD_STACKS, &stdout, &stderr, &[]);
    let records = report_json(ctx, "s.tracer");
    let samples: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["type"] == "sample").collect();
    assert!(!samples.is_empty(), "{stderr}");
    // The command, named from the start; every sample taken in the loop has its chain.
    assert!(samples.iter().all(|s| s["comm"] == "spin"), "{records:?}");
    let in_loop: Vec<&&serde_json::Value> = (samples.iter())
        .filter(|s| s["args"]["ip"].as_str().unwrap().starts_with("spin_inner+"))
        .collect();
    assert!(!in_loop.is_empty(), "{records:?}");
    for sample in in_loop {
        let symbols: Vec<&str> = (sample["stack"].as_array().unwrap().iter())
            .filter(|f| f["space"] == "user")
            .map(|f| f["symbol"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(
            symbols[..3],
            ["spin_inner", "spin_outer", "main"],
            "{sample}"
        );
    }
    records
}

fn docs_record_stacks(ctx: &Ctx, example: &str) {
    assert_eq!(example, DOCS_RECORD_STACKS);
    record_stacks(ctx);
}

/// `tracer report s.tracer` as docs/record.md shows it.
fn docs_report_stacks(ctx: &Ctx, example: &str) {
    let records = record_stacks(ctx);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // One line per record, and one per frame under each sample.
    let frames: usize = (records.iter())
        .map(|r| r["stack"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(
        stdout.lines().count(),
        1 + records.len() + frames,
        "{stdout}"
    );
}

fn docs_record_timeline(ctx: &Ctx, example: &str) {
    assert_eq!(example, DOCS_RECORD_TL);
    record_timeline(ctx);
}

/// `tracer report t.tracer` as docs/record.md shows it: the recording of `./tl 3`.
fn docs_report_timeline(ctx: &Ctx, example: &str) {
    let Some((main, worker)) = record_timeline(ctx) else {
        return;
    };
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "TIME(s)    CPU PID/TID         COMM             SOURCE ARGS",
        "{stdout}"
    );
    // (CPU, tid, source, args) of each record.
    let items: Vec<(u64, u64, &str, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[3], "tl", "{l}");
            let tid = f[2].split_once('/').unwrap().1.parse().unwrap();
            (f[1].parse().unwrap(), tid, f[4], f[5..].join(" "))
        })
        .collect();
    assert_eq!(
        (items[0].2, items[0].3.as_str()),
        ("task:comm", "comm=\"tl\"")
    );
    // Probe, watch and tracepoint records in program order, each on its thread's CPU.
    let at = format!(
        "({})",
        source_line("tests/workloads/timeline.c", "timeline_counter = i;")
    );
    let got: Vec<String> = items
        .iter()
        .filter(|i| !i.2.starts_with("task:") && !i.2.starts_with("sched:") && i.2 != "page-faults")
        .map(|(cpu, tid, source, args)| format!("{cpu} {tid} {source} {args}").trim().to_string())
        .collect();
    let want: Vec<String> = (1..=3)
        .flat_map(|k| {
            [
                format!(
                    "0 {main} watch:timeline_counter old={} new={k} at=main+0x",
                    k - 1
                ),
                format!("1 {worker} uprobe:./tl:timeline_step round={k}"),
                format!("1 {worker} uretprobe:./tl:timeline_step ret={}", 2 * k),
                format!("0 {main} syscalls:sys_enter_getppid"),
            ]
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{stdout}");
    for (g, w) in got.iter().zip(&want) {
        let same = if w.contains(" watch:") {
            g.starts_with(w.as_str()) && g.ends_with(&at)
        } else {
            g == w
        };
        assert!(same, "{g}, wanted {w}");
    }
    // Between a step's return and the main thread's getppid: its 4 page faults, in order.
    let mut faults = Vec::new();
    let mut counting: Option<u32> = None;
    for (_, tid, source, _) in &items {
        match *source {
            "uretprobe:./tl:timeline_step" => counting = Some(0),
            "page-faults" if *tid == main => {
                if let Some(n) = counting.as_mut() {
                    *n += 1;
                }
            }
            "syscalls:sys_enter_getppid" => faults.push(counting.take().expect("a return first")),
            _ => {}
        }
    }
    assert_eq!(faults, [4, 4, 4], "{stdout}");
    assert!(
        stderr.contains(&format!("\n{} records shown\n", items.len())),
        "{stderr}"
    );
    // Three rounds of a watch hit, an entry, a return and a getppid: 12 BPF events.
    assert!(
        stderr.contains("\nprobe/watch events: 12 produced, 12 recorded, 0 lost (CPU 0: 0, CPU 1: 0)\nsample/scheduler records: 0 lost (CPU 0: 0, CPU 1: 0); 0 late (out of order)"),
        "{stderr}"
    );
}

fn docs_stat_getppid(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // docs/stat.md shows `cycles` as this machine prints it: without hardware counters.
    let hw = available(Feature::HardwareCounters);
    assert_shown(
        example,
        "",
        &stderr,
        if hw { &["<not supported> cycles"] } else { &[] },
    );
    assert!(
        stderr.contains(" Performance counter stats for './tracer-testprog getppid 1000':"),
        "{stderr}"
    );
    assert_eq!(
        stat_count(&stderr, "syscalls:sys_enter_getppid"),
        1000,
        "{stderr}"
    );
    assert_eq!(
        lines_with(&stderr, " msec task-clock ").len(),
        1,
        "{stderr}"
    );
    assert!(stat_count(&stderr, "page-faults") > 0, "{stderr}");
    let cycles = stderr
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == "cycles"))
        .unwrap_or_else(|| panic!("no cycles:\n{stderr}"));
    assert_eq!(cycles.contains("<not supported>"), !hw, "{cycles}");
}

fn docs_stat_csv(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    let hw = available(Feature::HardwareCounters);
    assert_shown(
        example,
        "",
        &stderr,
        if hw {
            &["<not supported>,,cycles,0,100.00,,"]
        } else {
            &[]
        },
    );
    // perf stat -x's fields: value, unit, event, run time (ns), % of it counted, metric, unit.
    let rows: Vec<Vec<&str>> = stderr
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stderr}");
    assert_eq!(
        rows[0][..3],
        ["1000", "", "syscalls:sys_enter_getppid"],
        "{stderr}"
    );
    assert!(rows[0][3].parse::<u64>().unwrap() > 0, "{stderr}");
    assert_eq!(rows[0][4..], ["100.00", "", ""], "{stderr}");
    if hw {
        assert_eq!(rows[1][2], "cycles", "{stderr}");
        rows[1][0].parse::<u64>().unwrap();
    } else {
        assert_eq!(
            rows[1],
            ["<not supported>", "", "cycles", "0", "100.00", "", ""],
            "{stderr}"
        );
    }
}

fn docs_stat_per_socket(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, "", &stderr, &[]);
    // One socket here: its row counts every online CPU.
    let row = lines_with(&stderr, " msec task-clock ");
    assert_eq!(row.len(), 1, "{stderr}");
    let fields: Vec<&str> = row[0].split_whitespace().collect();
    assert_eq!(fields[0], "S0", "{stderr}");
    let cpus = tracer::perf::cpus::online().unwrap().len().to_string();
    assert_eq!(fields[1], cpus, "{stderr}");
}

fn docs_stat_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Tracepoints, "example docs stat summary") {
        return;
    }
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, "", &stderr, &[]);
    let rows: Vec<Vec<&str>> = stderr.lines().map(|l| l.split(',').collect()).collect();
    let last = rows.last().unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(
        last[..4],
        ["         summary", "1000", "", "syscalls:sys_enter_getppid"],
        "{stderr}"
    );
}

fn docs_stat_metric_only(ctx: &Ctx, example: &str) {
    let (_, stderr) = ok(&ctx.run(&words(example, &[])));
    // docs/stat.md shows this machine: two CPUs, no hardware counters, so empty columns.
    let hw = available(Feature::HardwareCounters);
    let online = tracer::perf::cpus::online().unwrap();
    if !hw && online.len() == 2 {
        assert_shown(example, "", &stderr, &[]);
    }
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * online.len(), "{stderr}");
    assert_eq!(
        lines[0], " time,cpu,GHz,insn per cycle,branch-misses of all branches,",
        "{stderr}"
    );
    for (i, row) in lines[1..].iter().enumerate() {
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(
            fields[1],
            format!("CPU{}", online[i % online.len()]),
            "{stderr}"
        );
        // Counted, cycles, instructions and branch-misses have a column each (branches has a
        // rate per second, none); not counted, each of the four is one empty column.
        assert_eq!(fields.len(), if hw { 6 } else { 7 }, "{stderr}");
    }
}

fn docs_watch_counter(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example docs watch") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // Six writes, 0 -> 1 .. 5 -> 6, each made under a lock, so each trap reads its own value;
    // at the one writing instruction of tracer_testprog_bump.
    let at = format!(
        "({})",
        source_line("testprog/src/main.rs", "tracer_testprog_counter.fetch_add")
    );
    let hits: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|l| {
            let (who, what) = l.split_once(" tracer_testprog_counter: ")?;
            let f: Vec<&str> = who.split_whitespace().collect();
            assert_eq!(f[3], "tracer-testprog", "{l}");
            Some((f[2].split_once('/').unwrap().1, what))
        })
        .collect();
    assert_eq!(hits.len(), 6, "{stdout}\n{stderr}");
    for (k, (_, what)) in hits.iter().enumerate() {
        assert!(
            what.starts_with(&format!("{k} -> {} at tracer_testprog_bump+0x", k + 1))
                && what.ends_with(&at),
            "{what}"
        );
    }
    // Three threads, two writes each: the per-thread counts of the summary.
    let mut per_thread: Vec<(String, usize)> = Vec::new();
    for (tid, _) in &hits {
        match per_thread.iter_mut().find(|(t, _)| t == tid) {
            Some((_, n)) => *n += 1,
            None => per_thread.push((tid.to_string(), 1)),
        }
    }
    per_thread.sort();
    assert!(
        per_thread.len() == 3 && per_thread.iter().all(|(_, n)| *n == 2),
        "{stdout}"
    );
    let summary: Vec<Vec<&str>> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("tracer_testprog_counter (0x"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(summary.len(), 5, "{stderr}");
    assert!(
        summary[0][1].ends_with("/8):")
            && summary[0][2..] == ["6", "hits", "(6", "trapped", "in", "the", "kernel)"],
        "{stderr}"
    );
    let threads: Vec<(String, usize)> = summary[1..4]
        .iter()
        .map(|r| {
            assert_eq!(r[0], "thread", "{stderr}");
            (r[1].to_string(), r[2].parse().unwrap())
        })
        .collect();
    assert_eq!(threads, per_thread, "{stderr}");
    assert!(
        summary[4][0] == "at"
            && summary[4][1].starts_with("tracer_testprog_bump+0x")
            && summary[4][2] == "6",
        "{stderr}"
    );
    assert!(
        stderr.contains("\n6 hits in ") && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

fn docs_watch_summary(ctx: &Ctx, example: &str) {
    if !has(Feature::Breakpoints, "example docs watch --summary") {
        return;
    }
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert_shown(example, &stdout, &stderr, &[]);
    // Only the counts, on stdout: 3000 writes, 1000 by each of three threads, at one place.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5, "{stdout}\n{stderr}");
    assert!(
        rows[0][0] == "tracer_testprog_counter"
            && rows[0][1].starts_with("(0x")
            && rows[0][1].ends_with("/8):")
            && rows[0][2..] == ["3000", "hits"],
        "{stdout}"
    );
    for r in &rows[1..4] {
        assert!(r[0] == "thread" && r[2] == "1000", "{stdout}");
    }
    assert!(
        rows[4][0] == "at"
            && rows[4][1].starts_with("tracer_testprog_bump+0x")
            && rows[4][2] == "3000",
        "{stdout}"
    );
    assert!(
        stderr.contains("\n3000 hits in ")
            && stderr.contains("command exited with status 0; 0 lost"),
        "{stderr}"
    );
}

/// The user frames under the `#1` line of `tracer profile`'s text report.
fn top_stack(stdout: &str) -> (String, Vec<String>) {
    let mut lines = stdout.lines();
    let head = lines.next().unwrap_or_default().to_string();
    let frames = lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().split(" (").next().unwrap().to_string())
        .collect();
    (head, frames)
}

/// The samples of every stack `tracer profile`'s text report shows, with its frames.
fn shown_stacks(stdout: &str) -> Vec<(u64, Vec<String>)> {
    let mut stacks = Vec::new();
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with('#') {
            continue;
        }
        let samples = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let frames = lines
            .by_ref()
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.trim().split(" (").next().unwrap().to_string())
            .collect();
        stacks.push((samples, frames));
    }
    stacks
}

/// `./busy` (tests/workloads/profile.c) burns 1 s of CPU, 3:1 in its hot and cold chains: the
/// report's first stack is the hot chain, and the hot chain (with the samples that land in the
/// kernel's clock_gettime above it, more of them on a loaded machine) has about 3/4 of about
/// 99 samples.
fn profile_command(ctx: &Ctx, example: &str) {
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let (head, frames) = top_stack(&stdout);
    assert!(
        head.starts_with("#1 ") && head.contains(" busy ["),
        "{stdout}"
    );
    assert_eq!(
        frames[..4],
        ["profile_spin", "profile_hot_inner", "profile_hot", "main"],
        "{stdout}"
    );
    let hot: u64 = shown_stacks(&stdout)
        .iter()
        .filter(|(_, frames)| frames.iter().any(|f| f == "profile_hot"))
        .map(|(samples, _)| samples)
        .sum();
    assert!((60..=85).contains(&hot), "{hot} hot samples: {stdout}");
    assert!(stderr.contains("command exited with status 0"), "{stderr}");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Debian's gzip, built without frame pointers and stripped, on 8 MB of text (about a second
/// here): its stacks unwound from .eh_frame reach main's caller in libc, and its own unnamed
/// frames show as `gzip+0xOFFSET`.
fn profile_dwarf(ctx: &Ctx, example: &str) {
    let text = common::hex_text(8_000_000, 0x2545_f491_4f6c_dd1d);
    std::fs::write(ctx.path("big.txt"), text).unwrap();
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    let stacks = shown_stacks(&stdout);
    let total: u64 = stacks.iter().map(|(n, _)| n).sum();
    let whole: u64 = (stacks.iter())
        .filter(|(_, frames)| frames.iter().any(|f| f == "__libc_start_call_main"))
        .map(|(n, _)| n)
        .sum();
    assert!(
        total >= 20 && whole * 100 >= total * 95,
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\n    gzip+0x"), "{stdout}");
    assert!(
        stderr.contains("user stacks unwound from .eh_frame: "),
        "{stderr}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Every CPU for 2 s, with `./busy` started after the banner: the SVG names its hot chain.
fn profile_all_svg(ctx: &Ctx, example: &str) {
    let svg = ctx.path("cpu.svg");
    let _ = std::fs::remove_file(&svg);
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./busy", &["400", "0", "0", "0", "0"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let svg = std::fs::read_to_string(&svg).expect("cpu.svg written");
    assert!(svg.starts_with("<?xml") && svg.contains("On-CPU profile"));
    assert!(svg.contains("<title>profile_hot_inner ("), "{stderr}");
    assert!(stderr.contains("of the idle task left out") || stderr.contains("samples counted"));
}

/// `./busy 500 ...` run by pid (1234): folded lines of its chains, about 999 * 0.5 samples.
fn profile_pid_folded(ctx: &Ctx, example: &str) {
    let mut cmd = Command::new(ctx.path("busy"));
    cmd.args(["500", "0", "0", "0", "0"]).stderr(Stdio::null());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("process {pid} exited")),
        "{stderr}"
    );
    let lines: Vec<(&str, u64)> = (stdout.lines())
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack, n.parse().unwrap())
        })
        .collect();
    assert!(
        lines.iter().all(|(stack, _)| stack.starts_with("busy;")),
        "{stdout}"
    );
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    assert!((420..=520).contains(&total), "{total}\n{stdout}");
    let hot: u64 = (lines.iter())
        .filter(|(s, _)| s.contains(";main;profile_hot;profile_hot_inner;profile_spin"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        hot * 100 >= total * 65 && hot * 100 <= total * 85,
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// docs/profile.md's flame graph of `./busy`: written to cpu.svg, nothing on stdout.
fn profile_command_svg(ctx: &Ctx, example: &str) {
    let svg = ctx.path("cpu.svg");
    let _ = std::fs::remove_file(&svg);
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let svg = std::fs::read_to_string(&svg).expect("cpu.svg written");
    assert!(svg.contains("<title>profile_hot_inner ("), "{svg}");
    assert!(svg.contains("<title>profile_cold ("), "{svg}");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// `./busy 0 3 100 2 20` by pid: 300 ms blocked in profile_nap (3 blocks), 40 in profile_doze.
fn profile_off_cpu_pid(ctx: &Ctx, example: &str) {
    let mut cmd = Command::new(ctx.path("busy"));
    cmd.args(["0", "3", "100", "2", "20"]).stderr(Stdio::null());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let running = ctx.start(&words(example, &[("1234", &pid)]));
    work.run_batch();
    work.finish();
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let (head, frames) = top_stack(&stdout);
    // With stderr: its summary says what was missed or lost when a block is not there.
    assert!(head.contains(" in 3 blocks ("), "{stdout}\n{stderr}");
    let user = frames.iter().skip_while(|f| *f != "--").skip(1);
    assert_eq!(
        user.take(2).collect::<Vec<_>>(),
        ["profile_nap", "main"],
        "{stdout}"
    );
    assert!(stdout.contains(" in 2 blocks ("), "{stdout}\n{stderr}");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// Every CPU for 2 s as pprof, with `./busy` started after the banner: a gzipped profile.proto
/// (read by `go tool pprof` in [`profile_go_pprof_top`] and tests/profile_cli.rs).
fn profile_all_pprof(ctx: &Ctx, example: &str) {
    let file = ctx.path("cpu.pb.gz");
    let _ = std::fs::remove_file(&file);
    let running = ctx.start(&words(example, &[]));
    ctx.workload("./busy", &["400", "0", "0", "0", "0"]);
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let gz = std::fs::read(&file).expect("cpu.pb.gz written");
    assert_eq!(&gz[..2], [0x1f, 0x8b], "gzip");
    if let Some(top) = go_pprof(ctx, &["-top", "-tagfocus", "comm=busy", "cpu.pb.gz"]) {
        assert!(top.contains("profile_spin"), "{top}");
    }
}

/// docs/profile.md: `./busy` as pprof, the banner and summary as shown.
fn profile_command_pprof(ctx: &Ctx, example: &str) {
    let _ = std::fs::remove_file(ctx.path("cpu.pb.gz"));
    let (stdout, stderr) = ok(&ctx.run(&words(example, &[])));
    assert!(stdout.is_empty(), "-o takes the data: {stdout}");
    let gz = std::fs::read(ctx.path("cpu.pb.gz")).expect("cpu.pb.gz written");
    assert_eq!(&gz[..2], [0x1f, 0x8b], "gzip");
    assert_shown(example, &stdout, &stderr, &[]);
}

/// `go tool pprof ARGS` in the examples' directory (its cache in a directory of its own):
/// stdout, or `None` where Go is not installed (said on stderr).
fn go_pprof(ctx: &Ctx, args: &[&str]) -> Option<String> {
    go_pprof_run(ctx, args).map(|(stdout, _)| stdout)
}

fn go_pprof_run(ctx: &Ctx, args: &[&str]) -> Option<(String, String)> {
    common::go_pprof_in(
        &format!("example go tool pprof {args:?}"),
        Some(ctx.dir.path()),
        args,
    )
}

/// docs/profile.md: the file of the example above read by `go tool pprof`, as shown.
fn profile_go_pprof_top(ctx: &Ctx, example: &str) {
    profile_command_pprof(ctx, "tracer profile -f pprof -o cpu.pb.gz -- ./busy");
    let args = shell_words(example, &[]);
    let args: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    let Some((stdout, stderr)) = go_pprof_run(ctx, &args) else {
        return;
    };
    assert!(stdout.contains("Type: cpu"), "{stdout}");
    assert!(
        first_top_line(&stdout).ends_with(" profile_spin"),
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}

/// The first function of `go tool pprof -top`'s table.
fn first_top_line(stdout: &str) -> &str {
    (stdout.lines())
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_default()
}

/// `tracer serve serve.toml --pprof`: the page's config, its banner naming the profile path,
/// and a profile of every CPU answered there while `./busy` runs.
fn serve_docs_pprof(ctx: &Ctx, example: &str) {
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.tracer(&words(example, &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    let mut busy = Command::new(ctx.path("busy"))
        .args(["3000", "0", "0", "0", "0"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stream = std::net::TcpStream::connect("127.0.0.1:9435").unwrap();
    stream
        .write_all(b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let _ = busy.kill();
    let _ = busy.wait();
    let head = String::from_utf8_lossy(&response[..response.len().min(200)]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("application/octet-stream"), "{head}");
    let (stdout, stderr) = running.interrupted();
    assert_shown(example, &stdout, &stderr, &[]);
}

/// docs/serve.md: `go tool pprof` fetching 5 s of every CPU from `tracer serve --pprof` while
/// `./busy` spins: its hot function is on top, as shown.
fn serve_docs_go_pprof(ctx: &Ctx, example: &str) {
    if !Path::new("/usr/bin/go").exists() {
        go_pprof_run(ctx, &[]);
        return;
    }
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.tracer(&words("tracer serve serve.toml --pprof", &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    let mut busy = Command::new(ctx.path("busy"))
        .args(["8000", "0", "0", "0", "0"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let args = shell_words(example, &[]);
    let args: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    let fetched = go_pprof_run(ctx, &args);
    let _ = busy.kill();
    let _ = busy.wait();
    let _ = running.interrupted();
    let (stdout, stderr) = fetched.unwrap();
    assert!(
        first_top_line(&stdout).ends_with(" profile_spin"),
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}
