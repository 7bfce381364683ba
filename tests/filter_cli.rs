//! `--filter`: value predicates evaluated in the kernel, on workloads whose hits are known
//! one by one. Started without LD_LIBRARY_PATH (cargo sets one for tests, and the loader
//! would try each of its directories), tracer-testprog makes 4 openat calls of its own, all
//! with O_CLOEXEC and all succeeding (/etc/ld.so.cache, libgcc_s, libc, and /proc/self/maps
//! from Rust's start-up); `open N PATH` then makes exactly N calls with PATH and flags 0;
//! `call N` calls `tracer_testprog_target(i, 2 * i)` for i in 0..N.

mod common;

use common::{has, json_lines, testprog, text};
use std::process::Output;
use tracer::kernel::features::Feature;

/// (hits, printed, lost, filtered) from the summary table on stderr.
fn row(out: &Output, probe: &str) -> (u64, u64, u64, u64) {
    let stderr = text(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.split_whitespace().next() == Some(probe))
        .unwrap_or_else(|| panic!("no summary row for {probe} in:\n{stderr}"));
    let n: Vec<u64> = (line.split_whitespace().skip(1))
        .map(|n| n.parse().unwrap_or_else(|_| panic!("{line}")))
        .collect();
    assert_eq!(n.len(), 4, "HITS PRINTED LOST FILTERED: {line}");
    (n[0], n[1], n[2], n[3])
}

/// tracer, and the workload it starts, without cargo's LD_LIBRARY_PATH.
fn as_a_user(args: &[&str]) -> Output {
    common::Tracer::new(args).without_cargo_env().output()
}

/// Before Linux 5.15 (no BPF attach cookies) more than 16 probes of a kind are refused, with
/// the reason and what to do: checked, and true, there (the VM tier's 5.10).
fn refused_without_cookies(args: &[&str], kind: &str) -> bool {
    if common::kernel_version() >= (5, 15) {
        return false;
    }
    let out = as_a_user(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error =
        format!("error: more than 16 {kind} in one run need BPF attach cookies (Linux 5.15)");
    assert!(
        stderr.contains(&error)
            && stderr.contains("hint: trace at most 16 such probes per run on this kernel"),
        "{stderr}"
    );
    true
}

fn run(args: &[&str]) -> Output {
    let out = as_a_user(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

#[test]
fn failed_opens_only() {
    if !has(Feature::Tracepoints, "failed_opens_only") {
        return;
    }
    let prog = testprog().display().to_string();
    let probe = "syscalls:sys_exit_openat";
    let out = run(&[
        "probe",
        probe,
        "--filter",
        "ret < 0",
        "-f",
        "json",
        "--",
        &prog,
        "open",
        "23",
        "/nonexistent/tracer-filter",
    ]);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 23, "{}", text(&out.stdout));
    assert!(events.iter().all(|e| e["args"]["ret"] == -2), "{events:?}");
    // The loader's 4 successful opens were seen and refused in the kernel.
    assert_eq!(row(&out, probe), (27, 23, 0, 4));
    assert!(
        text(&out.stderr).contains("\n23 events in "),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("; 0 lost, 4 filtered out\n"));
}

#[test]
fn strings_match_globs_and_numbers_match_bits() {
    if !has(Feature::Tracepoints, "strings_match_globs") {
        return;
    }
    let prog = testprog().display().to_string();
    let probe = "syscalls:sys_enter_openat";
    let workload = [prog.as_str(), "open", "23", "/nonexistent/tracer-filter"];
    let with = |filter: &str| {
        let mut args = vec!["probe", probe, "--filter", filter, "-f", "json", "--"];
        args.extend(workload);
        run(&args)
    };
    // The workload's own path, by glob: 23 of 27.
    let out = with(r#"filename ~ "/nonexistent/*""#);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 23);
    assert!(events
        .iter()
        .all(|e| e["args"]["filename"] == "/nonexistent/tracer-filter"));
    assert_eq!(row(&out, probe), (27, 23, 0, 4));
    // The loader opens with O_CLOEXEC (0x80000), the workload with 0: a bit test, and its
    // negation with a string match in parentheses.
    let out = with("flags & 0x80000");
    assert_eq!(row(&out, probe), (27, 4, 0, 23));
    assert!(json_lines(&out.stdout)
        .iter()
        .all(|e| e["args"]["filename"] != "/nonexistent/tracer-filter"));
    let out = with(r#"!(flags & 0x80000 || filename == "/etc/ld.so.cache") && dfd == -100"#);
    assert_eq!(row(&out, probe), (27, 23, 0, 4));
    // comm and pid are every probe's: the workload's name matches, tracer's pid never does.
    let out = with(r#"comm == "tracer-testprog" && pid != 1"#);
    assert_eq!(row(&out, probe), (27, 27, 0, 0));
    let out = with("comm ~ 'sh*'");
    assert_eq!(row(&out, probe), (27, 0, 0, 27));
}

#[test]
fn a_char_array_field_of_the_record_is_a_string() {
    if !has(Feature::Tracepoints, "a_char_array_field") {
        return;
    }
    let prog = testprog().display().to_string();
    let probe = "task:task_rename";
    // The workload renames itself once, to `renamed`.
    let rename = [
        prog.as_str(),
        "--rename-at",
        "3",
        "renamed",
        "getppid",
        "10",
    ];
    let with = |filter: &str| {
        let mut args = vec!["probe", probe, "--filter", filter, "--"];
        args.extend(rename);
        run(&args)
    };
    let out = with(r#"newcomm == "renamed" && oldcomm ~ "tracer-*""#);
    assert_eq!(row(&out, probe), (1, 1, 0, 0));
    assert!(text(&out.stdout).contains("oldcomm=\"tracer-testprog\" newcomm=\"renamed\""));
    let out = with("newcomm ~ 're?amed[!s]'");
    assert_eq!(row(&out, probe), (1, 0, 0, 1));
}

#[test]
fn a_threshold_on_a_uprobe_argument_and_counting_what_passes() {
    if !has(Feature::UprobePmu, "a_threshold_on_a_uprobe_argument") {
        return;
    }
    let prog = testprog().display().to_string();
    let probe = format!("uprobe:{prog}:tracer_testprog_target");
    // DWARF names the parameters a and b; b = 2a.
    let out = run(&[
        "probe",
        &probe,
        "--filter",
        "a >= 990 || b == 10",
        "-f",
        "json",
        "--",
        &prog,
        "call",
        "1000",
    ]);
    let a: Vec<u64> = (json_lines(&out.stdout).iter())
        .map(|e| e["args"]["a"].as_u64().expect("a"))
        .collect();
    let mut expected = vec![5];
    expected.extend(990..1000);
    assert_eq!(a, expected);
    assert_eq!(row(&out, &probe), (1000, 11, 0, 989));
    // Counted in the kernel: only what passes is counted.
    let out = run(&[
        "probe",
        &probe,
        "--filter",
        "a < 100",
        "--count-by",
        "comm",
        "--",
        &prog,
        "call",
        "1000",
    ]);
    assert!(
        text(&out.stdout).contains("tracer-testprog") && text(&out.stdout).contains(" 100\n"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("100 hits counted in the kernel")
            && text(&out.stderr).contains("0 not counted, up to 0 missed, 900 filtered out"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_recording_keeps_only_what_passes() {
    if !has(Feature::Tracepoints, "a_recording_keeps_only_what_passes") {
        return;
    }
    let prog = testprog().display().to_string();
    let file = std::env::temp_dir().join(format!("tracer-filter-{}.tracer", std::process::id()));
    let file_arg = file.display().to_string();
    let out = run(&[
        "record",
        "-o",
        &file_arg,
        "-P",
        "syscalls:sys_exit_openat",
        "--filter",
        "ret == -2",
        "--",
        &prog,
        "open",
        "23",
        "/nonexistent/tracer-filter",
    ]);
    assert!(
        text(&out.stderr).contains("; 4 probe hits filtered out\n"),
        "{}",
        text(&out.stderr)
    );
    let report = as_a_user(&["report", &file_arg]);
    let _ = std::fs::remove_file(&file);
    let stderr = text(&report.stderr);
    assert!(
        stderr.contains("probe/watch events: 23 produced, 23 recorded, 0 lost"),
        "{stderr}"
    );
}

#[test]
fn bad_expressions_point_at_the_column_and_name_what_exists() {
    if !has(Feature::Tracepoints, "bad_expressions_point_at_the_column") {
        return;
    }
    let error = |probe: &str, filter: &str| {
        let out = as_a_user(&["probe", probe, "--filter", filter, "--", "true"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{filter}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
        text(&out.stderr)
    };
    assert_eq!(
        error("syscalls:sys_enter_openat", r#"flags & 1 && filname ~ "/etc/*""#),
        "error: --filter: syscalls:sys_enter_openat has no field 'filname'\n    flags & 1 && filname ~ \"/etc/*\"\n                 ^^^^^^^\nhint: did you mean: filename\nhint: its fields: dfd, filename, flags, mode\nhint: every probe also has comm, pid, tid, cpu\n"
    );
    assert_eq!(
        error("syscalls:sys_enter_openat", "filename < 3"),
        "error: --filter: 'filename' is a string: compare it with ==, != or ~\n    filename < 3\n    ^^^^^^^^\nhint: e.g. 'filename ~ \"/etc/*\"'\n"
    );
    assert_eq!(
        error("syscalls:sys_exit_openat", "ret == 'x'"),
        "error: --filter: 'ret' of syscalls:sys_exit_openat is a number, not a string\n    ret == 'x'\n           ^^^\nhint: compare it with a number: 42, -2, 0x40\n"
    );
    assert_eq!(
        error("syscalls:sys_exit_openat", "(ret < 0 || cpu == 1"),
        "error: --filter: this parenthesis is not closed\n    (ret < 0 || cpu == 1\n    ^\nhint: add the ')' that ends it\n"
    );
    assert_eq!(
        error("syscalls:sys_exit_openat", "ret = -2"),
        "error: --filter: '=' is not an operator\n    ret = -2\n        ^\nhint: compare with ==\n"
    );
}

/// The tracepoint directories of `syscalls` whose names start with `prefix`.
fn syscall_tracepoints(prefix: &str) -> usize {
    std::fs::read_dir("/sys/kernel/tracing/events/syscalls")
        .expect("tracefs")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
        .count()
}

#[test]
fn every_syscall_tracepoint_in_one_run() {
    if !has(
        Feature::RawTracepoints,
        "every_syscall_tracepoint_in_one_run",
    ) {
        return;
    }
    let prog = testprog().display().to_string();
    // Counted: the workload's 1000 getppid calls, exactly, among 360-odd probes.
    let out = run(&[
        "probe",
        "--count-by",
        "probe",
        "syscalls:sys_enter_*",
        "--",
        &prog,
        "getppid",
        "1000",
    ]);
    let n = syscall_tracepoints("sys_enter_");
    assert!(n > 300, "{n} syscall entry tracepoints");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "note: 'syscalls:sys_enter_*' matches {n} probes\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("Counting {n} probes (syscalls:sys_enter_*) in `")),
        "{stderr}"
    );
    let stdout = text(&out.stdout);
    let getppid: Vec<&str> = (stdout.lines())
        .filter(|l| l.split_whitespace().next() == Some("syscalls:sys_enter_getppid"))
        .collect();
    assert_eq!(getppid.len(), 1, "{stdout}");
    assert_eq!(
        getppid[0].split_whitespace().nth(1),
        Some("1000"),
        "{stdout}"
    );
    // Streamed, entries and exits, decoded as their tracepoints' records: the workload's 23
    // opens of a missing file, each entry with its path and each exit with ENOENT.
    let out = run(&[
        "probe",
        "syscalls:sys_*",
        "--filter",
        "comm == 'tracer-testprog'",
        "-f",
        "json",
        "--",
        &prog,
        "open",
        "23",
        "/nonexistent/tracer-filter",
    ]);
    let events = json_lines(&out.stdout);
    let entries = (events.iter())
        .filter(|e| e["probe"] == "syscalls:sys_enter_openat")
        .filter(|e| e["args"]["filename"] == "/nonexistent/tracer-filter")
        .count();
    let exits = (events.iter())
        .filter(|e| e["probe"] == "syscalls:sys_exit_openat" && e["args"]["ret"] == -2)
        .count();
    assert_eq!((entries, exits), (23, 23), "{}", text(&out.stdout));
    // Every hit printed: the rows of the probes that fired add up to the events.
    let stderr = text(&out.stderr);
    let printed: u64 = (stderr.lines())
        .filter(|l| l.starts_with("syscalls:sys_"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(printed, events.len() as u64, "{stderr}");
    assert!(
        stderr.contains("probes without hits not listed\n"),
        "{stderr}"
    );
}

/// Past 16 tracepoints of other kinds than syscalls', each further one gets a slot of the
/// cookie program, attached through a BPF link whose cookie names the slot (Linux 5.15+).
#[test]
fn more_than_16_tracepoints_of_other_kinds_attach_through_cookies() {
    if !has(Feature::Tracepoints, "many_tracepoints_of_other_kinds") {
        return;
    }
    let prog = testprog().display().to_string();
    let args = [
        "probe", "-f", "json", "sched:*", "--", &prog, "getppid", "3",
    ];
    if refused_without_cookies(&args, "tracepoints other than syscalls'") {
        return;
    }
    let out = run(&args);
    let stderr = text(&out.stderr);
    let attached: usize = (stderr.split("Tracing ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(attached > 16, "{stderr}");
    // The command exits once: its one sched_process_exit, whichever slot it went through.
    let exits: Vec<_> = (json_lines(&out.stdout).into_iter())
        .filter(|e| e["probe"] == "sched:sched_process_exit")
        .collect();
    assert_eq!(exits.len(), 1, "{}", text(&out.stdout));
    assert_eq!(exits[0]["comm"], "tracer-testprog");
    assert!(stderr.contains("; 0 lost"), "{stderr}");
}

/// More than 16 user probes: the ones past the constant slots are attached through cookies,
/// and count exactly (the workload's target is listed last, so it gets one).
#[test]
fn more_than_16_uprobes_attach_through_cookies() {
    if !has(Feature::UprobePmu, "many_uprobes") {
        return;
    }
    let libc = "/lib/x86_64-linux-gnu/libc.so.6";
    if !std::path::Path::new(libc).exists() {
        eprintln!("skipped: more_than_16_uprobes needs {libc}");
        return;
    }
    let prog = testprog().display().to_string();
    let (many, target) = (
        format!("uprobe:{libc}:str*"),
        format!("uprobe:{prog}:tracer_testprog_target"),
    );
    let args = [
        "probe", "-f", "json", &many, &target, "--", &prog, "call", "5",
    ];
    if refused_without_cookies(&args, "kernel or user probes") {
        return;
    }
    let out = run(&args);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("uprobe:{libc}:str*' matches ")),
        "{stderr}"
    );
    let calls: Vec<(u64, u64)> = (json_lines(&out.stdout).into_iter())
        .filter(|e| {
            e["probe"]
                .as_str()
                .is_some_and(|p| p.ends_with(":tracer_testprog_target"))
        })
        .map(|e| {
            (
                e["args"]["a"].as_u64().unwrap(),
                e["args"]["b"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        (0..5).map(|i| (i, 2 * i)).collect::<Vec<_>>(),
        "{stderr}"
    );
    assert!(stderr.contains("; 0 lost"), "{stderr}");
}

#[test]
fn counting_by_syscall_names_each_syscall() {
    if !has(Feature::Tracepoints, "counting_by_syscall") {
        return;
    }
    let prog = testprog().display().to_string();
    let out = run(&[
        "probe",
        "--count-by",
        "syscall",
        "raw_syscalls:sys_enter",
        "--",
        &prog,
        "getppid",
        "1000",
    ]);
    let stdout = text(&out.stdout);
    let rows: Vec<Vec<&str>> = (stdout.lines())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["SYSCALL", "COUNT"], "{stdout}");
    assert_eq!(rows[1], ["getppid", "1000"], "{stdout}");
    // Every row a syscall's name (none unknown on this kernel), the openat calls among them.
    assert!(
        rows[1..].iter().all(|r| r[0]
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')),
        "{stdout}"
    );
    assert!(rows.iter().any(|r| r[0] == "openat"), "{stdout}");
    // The same through the syscalls:* tracepoints (their own number field).
    let out = run(&[
        "probe",
        "--count-by",
        "syscall",
        "syscalls:sys_enter_getppid",
        "--",
        &prog,
        "getppid",
        "7",
    ]);
    assert_eq!(text(&out.stdout), "SYSCALL  COUNT\ngetppid      7\n");
    let out = as_a_user(&[
        "probe",
        "--count-by",
        "syscall",
        "sched:sched_switch",
        "-d",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: --count-by syscall: sched:sched_switch is not a syscall tracepoint\nhint: count raw_syscalls:sys_enter (every syscall, by name) or syscalls:* tracepoints by syscall\n"
    );
}

/// A field the print format names values of (`__print_symbolic`) is compared with a name:
/// connect.c's one connection goes to TCP_SYN_SENT once (in connect(2) itself, not in a
/// softirq the kernel may skip), and every other transition is filtered out. A name the
/// field does not have is refused with the names it has.
#[test]
fn a_field_is_compared_with_the_names_of_its_values() {
    if !has(Feature::Tracepoints, "a_field_is_compared_with_names") {
        return;
    }
    let probe = "sock:inet_sock_set_state";
    let connect = common::c_workload("connect");
    let filter = "newstate == TCP_SYN_SENT && protocol == IPPROTO_TCP";
    let out = run(&[
        "probe",
        probe,
        "--filter",
        filter,
        "--",
        connect.to_str().unwrap(),
    ]);
    let (hits, printed, lost, filtered) = row(&out, probe);
    assert_eq!(
        (printed, lost, hits),
        (1, 0, printed + filtered),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(" oldstate=TCP_CLOSE newstate=TCP_SYN_SENT "),
        "{stdout}"
    );
    let out = as_a_user(&[
        "probe",
        probe,
        "--filter",
        "newstate == TCP_SYN_SNT",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: --filter: 'TCP_SYN_SNT' is not a value of 'newstate' of sock:inet_sock_set_state\n    newstate == TCP_SYN_SNT\n                ^^^^^^^^^^^\nhint: did you mean: TCP_SYN_SENT"
        ) && stderr.contains("\nhint: its values: TCP_ESTABLISHED, TCP_SYN_SENT, "),
        "{stderr}"
    );
}
