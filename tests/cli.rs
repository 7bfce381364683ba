//! Tier 4: the real `tracer` binary, checked for what a user sees (output, exit status).

mod common;

use std::process::{Command, Output};

use tracer::kernel::features::{Feature, Status};

/// `tracer ARGS` by whoever runs the tests: usage errors and help need no privilege.
fn anyone(args: &[&str]) -> Output {
    common::Tracer::anyone(args).output()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn features_text_agrees_with_the_feature_checks() {
    common::require_root();
    let out = anyone(&["features"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        text.starts_with(&format!("kernel               {}\n", release.trim())),
        "{text}"
    );
    for feature in Feature::ALL {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(feature.label()))
            .unwrap_or_else(|| panic!("no line for {}", feature.label()));
        let word = line.split_whitespace().nth(1).unwrap();
        let expected = if feature.check().is_available() {
            "available"
        } else {
            "unavailable"
        };
        assert_eq!(word, expected, "{line}");
    }
    // Every unavailable feature says what the user loses.
    for feature in Feature::ALL {
        if let Status::Unavailable { .. } = feature.check() {
            assert!(
                text.contains(&format!("-> {}", feature.consequence())),
                "{}",
                feature.label()
            );
        }
    }
}

#[test]
fn features_json_is_one_versioned_object() {
    common::require_root();
    let out = anyone(&["features", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "one JSON object on one line");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&doc["type"], &doc["version"]),
        (&"features".into(), &2.into())
    );
    assert_eq!(
        doc["features"].as_object().unwrap().len(),
        Feature::ALL.len()
    );
    let kprobes = &doc["features"]["kprobes"];
    match Feature::KprobePmu.check() {
        Status::Available { detail } => assert_eq!(kprobes["detail"], detail.as_str()),
        Status::Unavailable { reason, .. } => assert_eq!(kprobes["reason"], reason.as_str()),
    }
    assert!(doc["settings"]["cap_bpf"].is_boolean());
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let out = anyone(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unrecognized subcommand 'no-such-command'"),
        "{}",
        stderr(&out)
    );
    let out = anyone(&["features", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `-a`, as perf spells system-wide, is taken by every command that traces tasks (it is their
/// default); beside -p or -- COMMAND it is refused with the way out.
#[test]
fn dash_a_is_every_task_and_refused_beside_a_process() {
    let given = [
        &["probe", "-a", "sched:sched_process_exec"][..],
        &["latency", "-a", "uprobe:/bin/true:main"],
        &["record", "-a", "-e", "page-faults"],
        &["profile", "-a"],
    ];
    for args in given {
        for whom in [&["-p", "1"][..], &["--", "true"]] {
            let out = anyone(&[args, whom].concat());
            assert_eq!(out.status.code(), Some(2), "{args:?} {whom:?}");
            assert!(
                stderr(&out).contains("hint: -a traces every task, the default"),
                "{args:?} {whom:?}: {}",
                stderr(&out)
            );
        }
    }
    common::require_root();
    if !common::has(Feature::Tracepoints, "dash_a") {
        return;
    }
    // A shell that runs /bin/true twice, beside a system-wide count of execs by file name.
    let args = [
        "probe",
        "-a",
        "--count-by",
        "filename",
        "sched:sched_process_exec",
        "-d",
        "2s",
    ];
    let (tracer, _stderr, _banner) = common::Tracer::new(args).started();
    common::run_ok("sh", &["-c", "/bin/true; /bin/true"]);
    let out = tracer.wait_with_output().unwrap();
    assert!(out.status.success());
    let row = (stdout(&out).lines())
        .find(|l| l.split_whitespace().next() == Some("\"/bin/true\""))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string());
    assert_eq!(row.as_deref(), Some("2"), "{}", stdout(&out));
}

#[test]
fn help_ends_with_examples() {
    let out = anyone(&["features", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(
        help.trim_end()
            .ends_with("tracer features --json | jq .features.kprobes"),
        "{help}"
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    common::require_root();
    // `true` exits at once, while tracer is still running its checks: tracer's write then fails
    // with EPIPE, which must end it quietly with status 0.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} features | true; echo \"${{PIPESTATUS[0]}}\"",
            common::tracer_bin().display()
        ))
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "0");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

/// `-o FILE` writes the data to FILE in every command that has data (stdout then carries
/// none), `-f json` is the format, and `-o json` is refused with the way to say it.
#[test]
fn dash_o_is_a_file_and_dash_f_the_format_everywhere() {
    common::require_root();
    for command in ["probe", "watch", "latency", "report"] {
        let out = anyone(&[command, "x", "-o", "json"]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "error: -o writes the output to a file; 'json' is a format\nhint: for json output use -f json (to write a file named json, give -o ./json)\n",
            "{command}"
        );
    }
    if !common::has(Feature::Tracepoints, "dash_o_file")
        || !common::has(Feature::Bpf, "dash_o_file")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = common::testprog().display().to_string();
    let tp = "syscalls:sys_enter_getppid";
    // probe, streamed: seven JSON lines in the file, none on stdout.
    let file = dir.path().join("hits.json");
    let path = file.to_str().unwrap();
    let out = anyone(&[
        "probe", tp, "-f", "json", "-o", path, "--", &prog, "getppid", "7",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let written = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<serde_json::Value> = (written.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 7, "{written}");
    assert!(lines.iter().all(|l| l["probe"] == tp), "{written}");
    // probe, counted, as text.
    let file = dir.path().join("counts.txt");
    let path = file.to_str().unwrap();
    let out = anyone(&[
        "probe",
        "--count-by",
        "probe",
        tp,
        "-o",
        path,
        "--",
        &prog,
        "getppid",
        "9",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "PROBE                       COUNT\nsyscalls:sys_enter_getppid      9\n"
    );
    // latency: its histogram.
    let file = dir.path().join("latency.json");
    let path = file.to_str().unwrap();
    let to = "syscalls:sys_exit_getppid";
    let out = anyone(&[
        "latency", "--from", tp, "--to", to, "-f", "json", "-o", path, "--", &prog, "getppid", "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let doc: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&file).unwrap().trim()).unwrap();
    assert_eq!(doc["count"], 5);
    // report: the timeline of a recording of four getppid calls.
    let recording = dir.path().join("t.tracer");
    let recording = recording.to_str().unwrap();
    let out = anyone(&[
        "record", "-o", recording, "-P", tp, "--", &prog, "getppid", "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = dir.path().join("timeline.json");
    let path = file.to_str().unwrap();
    let out = anyone(&["report", recording, "-f", "json", "-o", path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let timeline = std::fs::read_to_string(&file).unwrap();
    let probes = (timeline.lines())
        .filter(|l| l.contains(&format!("\"probe\":\"{tp}\"")))
        .count();
    assert_eq!(probes, 4, "{timeline}");
    // watch: each of the six writes of the counter.
    if !common::has(Feature::Breakpoints, "dash_o_watch") {
        return;
    }
    let file = dir.path().join("writes.json");
    let path = file.to_str().unwrap();
    let out = anyone(&[
        "watch",
        "tracer_testprog_counter",
        "-f",
        "json",
        "-o",
        path,
        "--",
        &prog,
        "counter",
        "6",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let writes: Vec<serde_json::Value> = (std::fs::read_to_string(&file).unwrap().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut new: Vec<u64> = writes.iter().map(|w| w["new"].as_u64().unwrap()).collect();
    new.sort_unstable();
    assert_eq!(new, [1, 2, 3, 4, 5, 6]);
}

/// bpftrace's spellings of what tracer does another way get a pointer to it, not "no such
/// tracepoint", in every command that takes a probe spec.
#[test]
fn bpftrace_probe_types_point_at_the_tracer_way() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["probe", "watchpoint:0x1000:8:w"],
            "error: 'watchpoint:0x1000:8:w': hardware watchpoints are `tracer watch`\nhint: e.g. tracer watch -t rw 0x1000\n",
        ),
        (
            &["probe", "software:page-faults:100"],
            "error: 'software:page-faults:100': software and hardware events are counted by `tracer stat` and sampled by `tracer record`\nhint: e.g. tracer stat -e page-faults, tracer record -o t.tracer -e page-faults\n",
        ),
        (
            &["probe", "hardware:cache-misses:1000"],
            "error: 'hardware:cache-misses:1000': software and hardware events are counted by `tracer stat` and sampled by `tracer record`\nhint: e.g. tracer stat -e cache-misses, tracer record -o t.tracer -e cache-misses\n",
        ),
        (
            &["probe", "interval:s:1"],
            "error: 'interval:s:1': periodic output is the -I flag\nhint: e.g. tracer probe --count-by comm -I 1s CAT:NAME\n",
        ),
        (
            &["latency", "fentry:vfs_read+4"],
            "error: probe 'fentry:vfs_read+4': fentry attaches to a function by name, at its entry or return\nhint: name the function alone (fentry:vfs_read), or use kprobe:FUNC+OFF / kprobe:0xADDR\n",
        ),
        (
            &["probe", "profile:hz:99"],
            "error: 'profile:hz:99': CPU profiles are `tracer profile`\nhint: e.g. tracer profile -F 99 -- COMMAND\n",
        ),
        (
            &["probe", "kretprobe:vfs_read { @ns = hist(nsecs); }"],
            "error: 'kretprobe:vfs_read { @ns = hist(nsecs); }' is a bpftrace program\nhint: tracer takes probe specs and flags, not programs: tracer probe 'kretprobe:vfs_read' prints each hit; hist(x) is --hist x; timing a function is tracer latency FUNC\n",
        ),
    ];
    for (args, expected) in cases {
        let out = anyone(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}");
    }
}

/// Input that cannot match anything is refused before anything is attached: a CPU that is
/// not online; `--comm` that is not the command's name is noted (a child may still match).
#[test]
fn input_that_cannot_match_is_refused_or_noted() {
    common::require_root();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let out = anyone(&["probe", "-C", "1000", "syscalls:sys_enter_getppid"]);
    assert_eq!(out.status.code(), Some(2));
    // CPU 1000 is past -C's 64 CPUs; one past the last online CPU is refused as offline.
    let last: u32 = (online
        .trim()
        .split(',')
        .next_back()
        .unwrap()
        .split('-')
        .next_back())
    .unwrap()
    .parse()
    .unwrap();
    let beyond = (last + 1).to_string();
    let out = anyone(&["probe", "-C", &beyond, "syscalls:sys_enter_getppid"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: -C {beyond}: CPU {beyond} is not online: nothing would ever be seen there\nhint: CPUs online here: {} (/sys/devices/system/cpu/online)\n",
            online.trim()
        )
    );
    if !common::has(Feature::Tracepoints, "comm_note") || !common::has(Feature::Bpf, "comm_note") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let out = anyone(&[
        "probe",
        "--comm",
        "nope",
        "--count-by",
        "comm",
        "syscalls:sys_enter_getppid",
        "--",
        &prog,
        "getppid",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "note: --comm nope is not the name of `{prog} getppid 3` (its task is named tracer-testprog): only its children (or itself after a rename) named nope will count\n"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "no hits\n");
}

/// `-I` takes a unit in stat too (a bare number stays milliseconds, as in perf stat).
#[test]
fn stat_intervals_take_units() {
    common::require_root();
    let out = anyone(&[
        "stat",
        "-I",
        "200ms",
        "--interval-count",
        "2",
        "-x,",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let times: Vec<f64> = (stderr(&out).lines())
        .filter_map(|l| l.split(',').next()?.trim().parse().ok())
        .collect();
    assert_eq!(times.len(), 2, "{}", stderr(&out));
    assert!((0.19..0.3).contains(&times[0]), "{times:?}");
    assert!((0.39..0.5).contains(&times[1]), "{times:?}");
}

/// `tracer stat -f json` is `-j`, as the format is spelled in the other commands.
#[test]
fn stat_takes_dash_f_json() {
    common::require_root();
    let run = |format: &str| {
        let out = anyone(&["stat", format, "json", "-e", "page-faults", "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let line = stderr(&out).lines().next().unwrap_or("").to_string();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        v["event"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(run("-f"), "page-faults");
    assert_eq!(run("--format"), "page-faults");
    // A usage error of stat exits 129, as perf stat's do.
    let out = anyone(&["stat", "-f", "text", "-j", "--", "true"]);
    assert_eq!(out.status.code(), Some(129));
}

/// A return probe that asks for arguments: a uretprobe never has them (usage error, with the
/// entry probe to add); a kernel function's return has them only through fexit, so where the
/// kernel refuses fentry (this host) the refusal and its reason are the error.
#[test]
fn arguments_at_a_return_need_fexit() {
    common::require_root();
    let prog = common::testprog().display().to_string();
    let spec = format!("uretprobe:{prog}:tracer_testprog_target(a)");
    let out = anyone(&["probe", &spec, "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let expected = format!(
        "error: uretprobe:{prog}:tracer_testprog_target sees only the return value; 'a' is gone \
         by then\nhint: probe the entry too: 'uprobe:{prog}:tracer_testprog_target(a)' beside \
         the return probe\n"
    );
    assert_eq!(stderr(&out), expected);
    let Status::Unavailable { reason, .. } = Feature::Fexit.check() else {
        eprintln!("SKIPPED the kernel half: fexit is permitted here (tests/vm_kprobe.rs runs it)");
        return;
    };
    let out = anyone(&["probe", "vfs_read%return(count)", "--", "true"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "error: cannot read the arguments of kretprobe:vfs_read at its return: fexit was refused ({reason})"
        )),
        "{}",
        stderr(&out)
    );
}

/// `-o -` is standard output in every command that writes data (it created a file named `-`
/// in probe, trace and stat), and `trace --format json` without `-o` writes to standard output,
///  jq` reads it; trace| jq` reads it; trace's text stays on standard error, as strace's does.
#[test]
fn dash_o_dash_is_standard_output_in_every_command() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let prog = common::testprog().display().to_string();
    let getppid = "syscalls:sys_enter_getppid";
    let runs: [&[&str]; 6] = [
        &["probe", "-f", "json", "-o", "-", getppid],
        &["trace", "--format", "json", "-e", "getppid", "-o", "-"],
        &["trace", "--format", "json", "-e", "getppid"],
        &[
            "latency",
            "-f",
            "json",
            "-o",
            "-",
            "--from",
            getppid,
            "--to",
            "syscalls:sys_exit_getppid",
        ],
        &["profile", "-f", "json", "-o", "-"],
        &["stat", "-j", "-e", getppid, "-o", "-"],
    ];
    for args in runs {
        let out = common::Tracer::anyone(args)
            .dir(dir.path())
            .command()
            .args(["--", &prog, "getppid", "3"])
            .output()
            .expect("run tracer");
        let name = args.join(" ");
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let lines: Vec<serde_json::Value> = (stdout(&out).lines())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}")))
            .collect();
        assert!(!lines.is_empty(), "{name}: nothing on stdout");
        let calls = |key: &str, value: &str| (lines.iter()).filter(|l| l[key] == value).count();
        match args[0] {
            "probe" => assert_eq!(calls("probe", getppid), 3, "{name}"),
            "trace" => assert_eq!(calls("name", "getppid"), 3, "{name}"),
            _ => {}
        }
        assert!(
            !dir.path().join("-").exists(),
            "{name} created a file named -"
        );
    }
    // Text stays on stderr.
    let out = anyone(&["trace", "-e", "getppid", "--", &prog, "getppid", "3"]);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out).matches("getppid() = ").count(),
        3,
        "{}",
        stderr(&out)
    );
}

/// docs/flags.md's table of short flags against the command line itself: every short flag of
/// every subcommand it lists has a row, and each cell says `-` exactly where the subcommand
/// has no such flag.
#[test]
fn the_flag_table_is_the_command_line() {
    use clap::CommandFactory;
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/flags.md")).unwrap();
    let mut rows = page.lines().filter(|l| l.starts_with("| "));
    let header: Vec<&str> = rows.next().unwrap().split('|').map(str::trim).collect();
    let commands = &header[2..header.len() - 1];
    assert_eq!(commands.len(), 8, "{header:?}");
    let cli = tracer::cli::Cli::command();
    let shorts = |name: &str| -> std::collections::BTreeSet<char> {
        let sub = cli
            .find_subcommand(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"));
        (sub.get_arguments())
            .filter_map(|a| a.get_short())
            .filter(|&c| c != 'h')
            .collect()
    };
    let mut listed: std::collections::BTreeMap<&str, std::collections::BTreeSet<char>> =
        commands.iter().map(|c| (*c, Default::default())).collect();
    for row in rows.filter(|r| !r.starts_with("| ---")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let flag = cells[1].trim_matches('`');
        let short = flag
            .strip_prefix('-')
            .and_then(|f| f.chars().next())
            .unwrap();
        for (command, cell) in commands.iter().zip(&cells[2..cells.len() - 1]) {
            let has = shorts(command).contains(&short);
            assert_eq!(
                *cell != "-",
                has,
                "docs/flags.md: `{flag}` of {command} is {cell:?}"
            );
            if has {
                listed.get_mut(command).unwrap().insert(short);
            }
        }
    }
    for command in commands {
        assert_eq!(
            listed[command],
            shorts(command),
            "docs/flags.md lacks a row for {command}"
        );
    }
}
