//! Tier 4: `tracer probe` as a user runs it, with exact counts from known workloads.

mod common;

use common::{text, tracer};

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};

use common::has;
use tracer::kernel::features::Feature;

fn json_events(out: &Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// (hits, printed, lost) from the summary table on stderr.
fn summary_row(out: &Output, probe: &str) -> (u64, u64, u64) {
    let stderr = text(&out.stderr);
    let row = stderr
        .lines()
        .find(|l| l.split_whitespace().next() == Some(probe))
        .unwrap_or_else(|| panic!("no summary row for {probe} in:\n{stderr}"));
    let n: Vec<u64> = row
        .split_whitespace()
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

#[test]
fn a_tracepoint_on_a_command_shows_its_opens_decoded() {
    if !has(Feature::Tracepoints, "probe_openat") {
        return;
    }
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_openat",
        "--",
        "cat",
        "/etc/hostname",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let events: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" syscalls:sys_enter_openat "))
        .collect();
    assert!(!events.is_empty());
    // Only the command is traced, and its open of /etc/hostname is decoded field by field.
    assert!(
        events
            .iter()
            .all(|l| l.split_whitespace().nth(3) == Some("cat")),
        "{stdout}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|l| l.ends_with(
                " syscalls:sys_enter_openat dfd=-100 filename=\"/etc/hostname\" flags=0x0 mode=0"
            ))
            .count(),
        1,
        "{stdout}"
    );
    assert!(stdout
        .lines()
        .next()
        .unwrap()
        .starts_with("TIME(s)    CPU PID/TID"));
    let (hits, printed, lost) = summary_row(&out, "syscalls:sys_enter_openat");
    assert_eq!(
        (hits, printed, lost),
        (events.len() as u64, events.len() as u64, 0)
    );
}

/// Tracepoint fields as the kernel's print format shows them: by the names its
/// `__print_symbolic` tables give (`TCP_SYN_SENT`, `AF_INET`), and as IP addresses (`%pI4`:
/// `127.0.0.1`), on python3 connecting to its own listener on 127.0.0.1.
#[test]
fn tracepoint_fields_read_as_the_print_format_names_them() {
    if !has(Feature::Bpf, "print_format_names") || !has(Feature::Tracepoints, "print_format_names")
    {
        return;
    }
    // The port in one write: tracer's JSON lines share the pipe, and with PYTHONUNBUFFERED
    // (set on CI's machines) print() writes the number and its newline apart, so a line of
    // tracer's came between them once (`42231{"type":"event",...`).
    let script = "import os, socket\n\
                  s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
                  os.write(1, b'%d\\n' % s.getsockname()[1])\n\
                  c = socket.create_connection(('127.0.0.1', s.getsockname()[1]))\n\
                  a, _ = s.accept(); c.close(); a.close()\n";
    // The client's SYN_SENT -> ESTABLISHED comes in softirq, which can run on a CPU where
    // another BPF program is running (an interrupt in the middle of one): the kernel then
    // skips the tracepoint's program, which kernels before 6.7 do not count (seen once in
    // the 5.10 VM, where both ESTABLISHED transitions went missing). Three tries.
    for attempt in 1..=3 {
        match connect_states(script) {
            Ok(()) => break,
            Err(missing) if attempt < 3 => {
                eprintln!("try {attempt}: {missing}; the kernel may have skipped it, trying again")
            }
            Err(missing) => panic!("{missing}"),
        }
    }

    // Counted by a named field: the keys read as the events do.
    let out = tracer(&[
        "probe",
        "--count-by",
        "newstate",
        "sock:inet_sock_set_state",
        "--",
        "python3",
        "-c",
        script,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let counts: Vec<(&str, u64)> = (stdout.lines())
        .filter_map(|l| l.split_once(' ').map(|(k, n)| (k, n.trim().parse().ok())))
        .filter_map(|(k, n)| Some((k, n?)))
        .collect();
    assert!(counts.contains(&("TCP_LISTEN", 1)), "{stdout}");
    assert!(counts.contains(&("TCP_SYN_SENT", 1)), "{stdout}");
    assert!(
        counts.iter().all(|(k, _)| k.starts_with("TCP_")),
        "{stdout}"
    );
}

/// One run of [`tracepoint_fields_read_as_the_print_format_names_them`]'s script under
/// `probe -f json sock:inet_sock_set_state`: the listener's and the client's transitions
/// asserted, the client's SYN_SENT -> ESTABLISHED returned as missing.
fn connect_states(script: &str) -> Result<(), String> {
    let out = tracer(&[
        "probe",
        "-f",
        "json",
        "sock:inet_sock_set_state",
        "--",
        "python3",
        "-c",
        script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let port: u64 = (stdout.lines())
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port printed: {stdout}"));
    let changes: Vec<(String, String, u64, u64, String, String)> = (stdout.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "event")
        .map(|e| {
            let a = &e["args"];
            let text = |v: &serde_json::Value| v.as_str().unwrap_or("?").to_string();
            assert_eq!(
                (&a["family"]["text"], &a["protocol"]["text"]),
                (&"AF_INET".into(), &"IPPROTO_TCP".into()),
                "{e}"
            );
            (
                text(&a["oldstate"]["text"]),
                text(&a["newstate"]["text"]),
                a["sport"].as_u64().unwrap(),
                a["dport"].as_u64().unwrap(),
                text(&a["saddr"]),
                text(&a["daddr"]),
            )
        })
        .collect();
    let ours = |(old, new, sport, dport, saddr, daddr): (&str, &str, u64, u64, &str, &str)| {
        (
            old.into(),
            new.into(),
            sport,
            dport,
            saddr.into(),
            daddr.into(),
        )
    };
    // The listener, then the client's connect, as they happened.
    let listen = ours(("TCP_CLOSE", "TCP_LISTEN", port, 0, "127.0.0.1", "0.0.0.0"));
    let syn = ours((
        "TCP_CLOSE",
        "TCP_SYN_SENT",
        0,
        port,
        "127.0.0.1",
        "127.0.0.1",
    ));
    let at = |wanted: &(String, String, u64, u64, String, String)| {
        (changes.iter())
            .position(|c| c == wanted)
            .unwrap_or_else(|| panic!("no {wanted:?} in {changes:#?}"))
    };
    assert!(at(&listen) < at(&syn), "{changes:#?}");
    let established = (changes.iter().skip(at(&syn)))
        .any(|c| (c.0.as_str(), c.1.as_str(), c.3) == ("TCP_SYN_SENT", "TCP_ESTABLISHED", port));
    match established {
        true => Ok(()),
        false => Err(format!("no SYN_SENT -> ESTABLISHED in {changes:#?}")),
    }
}

#[test]
fn the_command_exit_status_passes_through() {
    if !has(Feature::Tracepoints, "probe_exit_status") {
        return;
    }
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_getpid",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("command exited with status 3"));
}

#[test]
fn uprobe_and_uretprobe_report_every_call_with_arguments_and_returns() {
    if !has(Feature::UprobePmu, "probe_uprobe") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let entry = format!("uprobe:{prog}:tracer_testprog_target");
    let ret = format!("uretprobe:{prog}:tracer_testprog_target");
    let out = tracer(&[
        "probe", &entry, &ret, "-f", "json", "--", &prog, "call", "5",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut events = json_events(&out);
    events.sort_by_key(|e| e["time_ns"].as_u64());
    // The workload has DWARF: `tracer_testprog_target(a: u64, b: u64)` prints named integers.
    let calls: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["probe"] == entry.as_str())
        .map(|e| {
            (
                e["args"]["a"].as_u64().unwrap(),
                e["args"]["b"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(u64, u64)> = (0..5u64).map(|i| (i, 2 * i)).collect();
    assert_eq!(calls, expected);
    let rets: Vec<i64> = events
        .iter()
        .filter(|e| e["probe"] == ret.as_str())
        .map(|e| e["ret"].as_i64().unwrap())
        .collect();
    assert_eq!(rets, vec![0, 3, 6, 9, 12]);
    assert!(events.iter().all(|e| e["comm"] == "tracer-testprog"));
}

#[test]
fn children_of_the_command_are_traced_and_its_shell_is_not_mixed_in() {
    if !has(Feature::Tracepoints, "probe_children") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let script = format!("{prog} getppid 7 && {prog} getppid 5");
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_getppid",
        "-f",
        "json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_events(&out);
    let from_prog: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["comm"] == "tracer-testprog")
        .collect();
    assert_eq!(from_prog.len(), 12, "{events:?}");
    let mut pids: Vec<u64> = from_prog
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    pids.dedup();
    assert_eq!(pids.len(), 2, "two children, 7 then 5 calls");
}

#[test]
fn count_stops_after_exactly_n_events() {
    if !has(Feature::Tracepoints, "probe_count") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_getppid",
        "-c",
        "3",
        "-f",
        "json",
        "--",
        &prog,
        "getppid",
        "10",
    ]);
    assert_eq!(json_events(&out).len(), 3);
    assert!(
        text(&out.stderr).contains("after 3 events (-c)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn every_event_of_a_flood_on_both_cpus_is_delivered_or_counted_lost() {
    if !has(Feature::Tracepoints, "probe_flood") {
        return;
    }
    // Small rings, so that the flood overflows them: 2 pages per CPU, or one page shared.
    for (transport, pages) in [("perf", "2"), ("ringbuf", "1")] {
        flood(transport, pages);
    }
}

fn flood(transport: &str, pages: &str) {
    let prog = common::testprog().display().to_string();
    const N: u64 = 100_000;
    let script = format!("{prog} --cpu 0 getppid {N} & {prog} --cpu 1 getppid {N}; wait");
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_getppid",
        "--comm",
        "tracer-testprog",
        "--transport",
        transport,
        "--ring-pages",
        pages,
        "-f",
        "json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{transport}: {}",
        text(&out.stderr)
    );
    let printed = json_events(&out).len() as u64;
    let (hits, printed_row, lost) = summary_row(&out, "syscalls:sys_enter_getppid");
    assert_eq!(
        hits,
        2 * N,
        "{transport}: the in-kernel counter saw every call"
    );
    assert_eq!(printed_row, printed, "{transport}");
    assert_eq!(
        printed + lost,
        hits,
        "{transport}: delivered + lost == produced"
    );
    if lost > 0 {
        assert!(
            text(&out.stderr).contains("raise --ring-pages"),
            "{transport}: losses come with the flag that fixes them"
        );
    }
}

/// Stopped while events still flow (-d, SIGINT, SIGTERM, -c), on both transports: every hit
/// the kernel counted is printed, counted lost, or (after -c) counted as not printed. The
/// probes are stopped in the kernel before the last drain, so none is left unaccounted.
#[test]
fn every_stop_while_events_flow_accounts_for_every_hit() {
    if !has(Feature::Tracepoints, "probe_stop_accounting") {
        return;
    }
    let prog = common::testprog().display().to_string();
    for transport in ["perf", "ringbuf"] {
        for stop in ["-d", "SIGINT", "SIGTERM", "-c"] {
            let mut args = vec![
                "probe",
                "syscalls:sys_enter_getppid",
                "--transport",
                transport,
                "-f",
                "json",
            ];
            match stop {
                "-d" => args.extend(["-d", "0.5"]),
                "-c" => args.extend(["-c", "5000"]),
                _ => {}
            }
            // Flat out, for longer than any of these runs lasts (tracer ends the command with
            // SIGTERM when the run ends first).
            args.extend(["--", &prog, "getppid", "1000000000"]);
            let mut child = common::Tracer::new(&args)
                .command()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let seen = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let counted = seen.clone();
            let lines = std::thread::spawn(move || {
                let events = BufReader::new(stdout)
                    .lines()
                    .map_while(Result::ok)
                    .filter(|l| l.starts_with('{'));
                events.fold(0u64, |n, _| {
                    counted.store(n + 1, std::sync::atomic::Ordering::Relaxed);
                    n + 1
                })
            });
            // Stderr read as it comes: the banner says the probes are on (and the signal
            // handlers set), however long start-up takes (seconds in an emulated VM).
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut head = String::new();
            while !head.contains("Hit Ctrl-C to end.") {
                if stderr.read_line(&mut head).unwrap() == 0 {
                    break;
                }
            }
            let rest = std::thread::spawn(move || {
                let mut rest = String::new();
                let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
                rest
            });
            if let Some(signal) = match stop {
                "SIGINT" => Some(libc::SIGINT),
                "SIGTERM" => Some(libc::SIGTERM),
                _ => None,
            } {
                // Events flowing when the signal comes: more than 5,000 printed (a fixed
                // 300 ms saw 4,128 in the 6.1 VM with two test runs sharing this machine),
                // within 30 s.
                let start = std::time::Instant::now();
                while seen.load(std::sync::atomic::Ordering::Relaxed) <= 5000
                    && start.elapsed() < std::time::Duration::from_secs(30)
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                // SAFETY: a plain signal to our own child.
                unsafe { libc::kill(child.id() as i32, signal) };
            }
            let mut out = child.wait_with_output().unwrap();
            out.stderr = (head + &rest.join().unwrap()).into_bytes();
            let printed = lines.join().unwrap();
            let what = format!("{transport} {stop}: {}", text(&out.stderr));
            assert_eq!(out.status.code(), Some(0), "{what}");
            let (hits, printed_row, lost) = summary_row(&out, "syscalls:sys_enter_getppid");
            assert_eq!(printed_row, printed, "{what}");
            let after_c = match stop {
                "-c" => {
                    assert_eq!(printed, 5000, "{what}");
                    let note = text(&out.stderr).lines().find_map(|l| {
                        l.strip_prefix("not printed, after -c 5000: ")
                            .map(String::from)
                    });
                    note.map_or(0, |n| n.split_whitespace().next().unwrap().parse().unwrap())
                }
                _ => 0,
            };
            assert!(hits > 5000, "{what}");
            assert_eq!(printed + lost + after_c, hits, "{what}");
        }
    }
}

/// Whether `pid` is running (a zombie, or a pid that is gone, is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) && running(pid) {
            found.push(pid);
        }
    }
    found
}

/// When -c ends tracing, the command and everything it started are stopped, and the
/// headline says so: a shell's background jobs do not run on untraced.
#[test]
fn the_command_and_its_children_are_stopped_when_tracing_ends() {
    if !has(Feature::Tracepoints, "command_stopped") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // A count no other test uses marks the workload's processes.
    let script = format!("{prog} getppid 999999937 & {prog} getppid 999999937; wait");
    let out = tracer(&[
        "probe",
        "-c",
        "1",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("after 1 events (-c), command stopped (SIGTERM to it and its children)"),
        "{stderr}"
    );
    assert_eq!(processes_with("999999937"), Vec::<u32>::new(), "{stderr}");
}

/// With --leave-running, -c ends tracing but not the command: it is not signalled, and it
/// outlives tracer (no PR_SET_PDEATHSIG: tracer's exit would have sent it SIGKILL), and the
/// headline gives its pid.
#[test]
fn leave_running_leaves_the_command_running_when_tracing_ends() {
    if !has(Feature::Tracepoints, "leave_running") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // A count no other test uses marks the workload; its output does not hold tracer's pipes
    // open (the test reads them to their end).
    let script = format!("exec {prog} getppid 999999913 >/dev/null 2>&1");
    let out = tracer(&[
        "probe",
        "-c",
        "1",
        "--leave-running",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let pid: u32 = stderr
        .split_once("after 1 events (-c), command left running (pid ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(pid, _)| pid.parse().ok())
        .unwrap_or_else(|| panic!("no left-running headline: {stderr}"));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    // Running, and no SIGKILL on its way (bit 9 of the pending sets): tracer has exited.
    let pending_kill = status
        .lines()
        .filter_map(|l| l.strip_prefix("SigPnd:").or(l.strip_prefix("ShdPnd:")))
        .any(|mask| u64::from_str_radix(mask.trim(), 16).unwrap_or(0) & (1 << 8) != 0);
    let alive = running(pid);
    let found = processes_with("999999913");
    // SAFETY: a plain signal to the test's workload, whatever the assertions find.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(alive && !pending_kill, "{status}\n{stderr}");
    assert_eq!(found, vec![pid], "{stderr}");
}

/// tracer killed outright (SIGKILL) takes its command along (PR_SET_PDEATHSIG); SIGHUP and
/// SIGQUIT end a run cleanly, with the summary, like SIGTERM.
#[test]
fn the_command_dies_with_tracer_and_hangup_and_quit_end_cleanly() {
    if !has(Feature::Tracepoints, "command_dies_with_tracer") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // Not common::tracer_started: stdout goes to /dev/null here, since nothing reads the
    // flood of events while the test waits.
    let start = || {
        let mut child = common::Tracer::new([
            "probe",
            "-f",
            "json",
            "syscalls:sys_enter_getppid",
            "--",
            &prog,
            "getppid",
            "999999929",
        ])
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut banner = String::new();
        stderr.read_line(&mut banner).unwrap();
        assert!(banner.contains("Hit Ctrl-C to end."), "{banner}");
        (child, stderr)
    };
    let (mut killed, _stderr) = start();
    // Until it execs, tracer's child has tracer's command line too: wait for the one command.
    let mut command = Vec::new();
    for _ in 0..200 {
        command = (processes_with("999999929").into_iter())
            .filter(|&p| p != killed.id())
            .collect();
        if command.len() == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(command.len(), 1, "{command:?}");
    killed.kill().unwrap();
    killed.wait().unwrap();
    let gone = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        !running(command[0])
    });
    assert!(gone, "the command ran on after tracer was killed");
    for signal in [libc::SIGHUP, libc::SIGQUIT] {
        let (child, mut stderr) = start();
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: a plain signal to our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "signal {signal}: {rest}");
        assert!(
            rest.contains("interrupted, command stopped"),
            "signal {signal}: {rest}"
        );
        assert!(
            rest.contains("syscalls:sys_enter_getppid "),
            "signal {signal}: {rest}"
        );
        assert_eq!(processes_with("999999929"), Vec::<u32>::new());
    }
}

/// tracer killed outright takes the command's whole tree along: a shell's background jobs,
/// which the kernel's parent-death signal does not reach (it kills the shell alone, and the
/// jobs ran on under init in 8 runs of 8), are killed by tracer's guard process, under
/// `probe`, `watch` (bash's own variable: dash has no symbols to watch) and `stat` (which
/// loads the tracking programs for it alone). A run that ends as it should leaves no guard
/// behind.
#[test]
fn the_commands_whole_tree_dies_with_a_killed_tracer() {
    if !has(Feature::Tracepoints, "tree_dies_with_tracer") {
        return;
    }
    let probe = ["probe", "syscalls:sys_enter_getppid", "--", "sh"];
    tree_dies_with_a_killed_tracer(&probe, '1');
    tree_dies_with_a_killed_tracer(&["watch", "shell_initialized", "--", "bash"], '3');
    tree_dies_with_a_killed_tracer(&["stat", "--", "sh"], '5');
    guard_leaves_with_a_run_that_ends();
}

/// Kills `tracer ARGS -c SCRIPT` (ARGS ending in a shell) once the script's two background
/// jobs run, and finds them gone, and its guard too. `tag` sets the jobs' sleeps apart.
fn tree_dies_with_a_killed_tracer(args: &[&str], tag: char) {
    // Sleeps no other run has: this test process's id in their lengths.
    let (a, b) = (
        format!("9{:09}{tag}1", std::process::id()),
        format!("9{:09}{tag}2", std::process::id()),
    );
    let script = format!("sleep {a} & sleep {b} & echo started; wait");
    let mut tracer = common::Tracer::new(args.iter().copied().chain(["-c", &script]))
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(tracer.stdout.take().unwrap());
    // The column heads, then the shell's line.
    let mut line = String::new();
    while line != "started\n" {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "no `started` line"
        );
    }
    let jobs = || {
        let mut found = processes_with(&format!("sleep\0{a}"));
        found.extend(processes_with(&format!("sleep\0{b}")));
        found
    };
    // The jobs' forks may not have exec'd sleep yet.
    let mut started = jobs();
    for _ in 0..200 {
        if started.len() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        started = jobs();
    }
    assert_eq!(started.len(), 2, "{started:?}");
    // Each thread's children: the guard is started by the thread that follows the command.
    let guards = |pid: u32| {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
        let children: String = (tasks.flatten())
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .collect::<Vec<String>>()
            .join(" ");
        (children.split_whitespace())
            .filter_map(|c| c.parse::<u32>().ok())
            .filter(|c| {
                std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|comm| comm == "tracer-guard\n")
            })
            .collect::<Vec<u32>>()
    };
    // The guard names itself once its exec is done, which a loaded machine may not have
    // reached yet.
    let mut guard = guards(tracer.id());
    for _ in 0..300 {
        if !guard.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        guard = guards(tracer.id());
    }
    tracer.kill().unwrap();
    tracer.wait().unwrap();
    let gone = (0..300).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        jobs().is_empty()
    });
    assert!(
        gone,
        "{args:?}: {:?} ran on after tracer was killed",
        jobs()
    );
    assert_eq!(
        guard.len(),
        1,
        "{args:?}: tracer's children: no tracer-guard"
    );
    let guard_gone = (0..300).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        !running(guard[0])
    });
    assert!(guard_gone, "{args:?}: the guard ran on");
}

/// Ended as it should (the command exits): the guard, one of tracer's children the command
/// lists, leaves too.
fn guard_leaves_with_a_run_that_ends() {
    let out = common::Tracer::new([
        "probe",
        "syscalls:sys_enter_getppid",
        "--",
        "sh",
        "-c",
        // children files end without a newline: echo gives the line one.
        "echo $(cat /proc/$PPID/task/*/children)",
    ])
    .command()
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The line of pids: numbers only (the shell's getppid for $PPID is an event line, printed
    // before or after it).
    let stdout = text(&out.stdout);
    let line = (stdout.lines())
        .find(|l| !l.trim().is_empty() && l.split_whitespace().all(|w| w.parse::<u32>().is_ok()))
        .unwrap_or_else(|| panic!("no line of pids in {stdout}"));
    let children: Vec<u32> = line
        .split_whitespace()
        .map(|c| c.parse().unwrap())
        .collect();
    assert_eq!(children.len(), 2, "the guard and the command: {children:?}");
    let guard_left = |c: &u32| {
        running(*c)
            && std::fs::read_to_string(format!("/proc/{c}/comm"))
                .is_ok_and(|comm| comm == "tracer-guard\n")
    };
    let left = (0..300).all(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        children.iter().any(guard_left)
    });
    assert!(!left, "a guard ran on after tracer's end: {children:?}");
}

/// `probe -p PID` ends when the process exits (as watch and latency do), with every one of its
/// events.
#[test]
fn probe_of_a_process_ends_when_it_exits() {
    if !has(Feature::Tracepoints, "probe_pid_exit") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // Exec'd by the shell: the pid given to -p is the workload's, once tracer says it traces.
    let (pid, out, stderr) = probe_of_a_waiting_shell(
        &format!("exec {prog} getppid 9"),
        &["-f", "json", "syscalls:sys_enter_getppid"],
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "Tracing syscalls:sys_enter_getppid in process {pid}..."
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("9 events in ")
            && stderr.contains(&format!("process {pid} exited; 0 lost")),
        "{stderr}"
    );
    assert_eq!(json_events(&out).len(), 9);
}

/// tracer's programs on a tracepoint let the hit go on to everyone's perf events: a counter of
/// the same tracepoint beside a running `tracer probe` (here `tracer stat`, as `perf stat`
/// would) still counts every call. (A program that returns 0 hides the hit from them all.)
#[test]
fn a_peer_counting_the_same_tracepoint_still_sees_every_hit() {
    if !has(Feature::Tracepoints, "tracepoint_peers") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let (mut streaming, _stderr, _banner) = common::tracer_started(&[
        "probe",
        "-f",
        "json",
        "syscalls:sys_enter_getppid",
        "sched:sched_process_exec",
    ]);
    let stdout = streaming.stdout.take().unwrap();
    let reader =
        std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).count());
    let out = tracer(&[
        "stat",
        "-x,",
        "-e",
        "syscalls:sys_enter_getppid,sched:sched_process_exec",
        "--",
        &prog,
        "getppid",
        "1000",
    ]);
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(streaming.id() as i32, libc::SIGINT) };
    let _ = streaming.wait();
    let seen = reader.join().unwrap();
    let report = text(&out.stderr);
    // Once, in a whole VM-tier run on 6.1, `tracer stat` ended by a signal with nothing on
    // stderr (not reproduced in 17 runs alone): the status says which signal, next time.
    assert_eq!(out.status.code(), Some(0), "{:?}: {report}", out.status);
    let count = |event: &str| {
        (report.lines())
            .find(|l| l.split(',').nth(2) == Some(event))
            .and_then(|l| l.split(',').next()?.parse::<u64>().ok())
    };
    assert_eq!(count("syscalls:sys_enter_getppid"), Some(1000), "{report}");
    assert_eq!(count("sched:sched_process_exec"), Some(1), "{report}");
    assert!(seen >= 1001, "tracer probe saw {seen} events");
}

#[test]
fn the_ring_buffer_transport_delivers_every_event_with_its_string() {
    if !has(Feature::Tracepoints, "probe_ringbuf") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_openat",
        "syscalls:sys_enter_getppid",
        "--transport",
        "ringbuf",
        "-f",
        "json",
        "--",
        "sh",
        "-c",
        &format!("{prog} open 40 /etc/hostname && {prog} getppid 60"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_events(&out);
    let from_prog = |probe: &str| -> Vec<&serde_json::Value> {
        events
            .iter()
            .filter(|e| e["probe"] == probe && e["comm"] == "tracer-testprog")
            .collect()
    };
    let opens: Vec<_> = from_prog("syscalls:sys_enter_openat")
        .into_iter()
        .filter(|e| e["args"]["filename"] == "/etc/hostname")
        .collect();
    assert_eq!(opens.len(), 40, "{}", text(&out.stdout));
    assert_eq!(from_prog("syscalls:sys_enter_getppid").len(), 60);
    // Printed in time order, though one ring holds every CPU's events.
    let times: Vec<u64> = events
        .iter()
        .map(|e| e["time_ns"].as_u64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    for probe in ["syscalls:sys_enter_openat", "syscalls:sys_enter_getppid"] {
        let (hits, printed, lost) = summary_row(&out, probe);
        let n = events.iter().filter(|e| e["probe"] == probe).count() as u64;
        assert_eq!((hits, printed, lost), (n, n, 0), "{probe}");
    }
}

#[test]
fn a_task_that_renames_itself_is_shown_by_its_new_name() {
    if !has(Feature::Tracepoints, "probe_rename") {
        return;
    }
    // Pinned to one CPU, so that every hit after the first finds the task's comm cached there.
    let prog = common::testprog().display().to_string();
    for transport in ["perf", "ringbuf"] {
        let out = tracer(&[
            "probe",
            "syscalls:sys_enter_getppid",
            "--transport",
            transport,
            "-f",
            "json",
            "--",
            &prog,
            "--cpu",
            "0",
            "--rename-at",
            "2",
            "renamed",
            "getppid",
            "5",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let comms: Vec<String> = json_events(&out)
            .iter()
            .map(|e| e["comm"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            comms,
            [
                "tracer-testprog",
                "tracer-testprog",
                "renamed",
                "renamed",
                "renamed"
            ],
            "{transport}"
        );
    }
}

#[test]
fn debug_bpf_says_which_filter_dropped_each_hit() {
    if !has(Feature::Tracepoints, "debug_bpf") {
        return;
    }
    // The workload makes exactly 7 getppid calls; --comm refuses each one.
    let (lines, stderr) = common::debug_bpf_drops("syscalls:sys_enter_getppid", &["getppid", "7"]);
    assert_eq!(lines.len(), 7, "{stderr}");
    for line in &lines {
        assert!(
            line.starts_with("bpf: syscalls:sys_enter_getppid: dropped a hit of ")
                && line.ends_with(": comm is not --comm"),
            "{line}"
        );
    }
    assert!(
        stderr.contains("syscalls:sys_enter_getppid                        0          0        0"),
        "{stderr}"
    );
    // Without the flag the programs say nothing (and the logging code is not even verified).
    let prog = common::testprog().display().to_string();
    let out = tracer(&[
        "probe",
        "--comm",
        "nothere",
        "syscalls:sys_enter_getppid",
        "--",
        &prog,
        "getppid",
        "7",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !text(&out.stderr).contains("bpf: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_unknown_tracepoint_is_a_usage_error_with_suggestions() {
    let out = tracer(&["probe", "syscalls:sys_enter_opnat"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: no tracepoint 'syscalls:sys_enter_opnat'\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: did you mean: syscalls:sys_enter_openat"),
        "{stderr}"
    );
}

#[test]
fn bad_specs_and_options_are_usage_errors() {
    for args in [
        vec!["probe", "uprobe:/bin/ls"],
        vec!["probe", "syscalls:sys_enter_openat", "--ring-pages", "3"],
        vec![
            "probe",
            "syscalls:sys_enter_openat",
            "--comm",
            "a-name-longer-than-15",
        ],
        vec![
            "probe",
            "syscalls:sys_enter_openat",
            "-p",
            "1",
            "--",
            "true",
        ],
        vec!["probe", "syscalls:sys_enter_openat", "-C", "0-99"],
    ] {
        let out = tracer(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains("hint: "), "{args:?}");
    }
}

#[test]
fn a_kernel_function_without_kprobes_fails_with_the_reason_and_alternatives() {
    common::require_root();
    if Feature::KprobePmu.check().is_available() || Feature::KprobeEvents.check().is_available() {
        eprintln!("SKIPPED probe_no_kprobes: this kernel has kprobes, so the no-kprobes path cannot be exercised");
        return;
    }
    let out = tracer(&["probe", "do_sys_open"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: cannot probe kernel function 'do_sys_open': this kernel has no kprobes (built without CONFIG_KPROBES)"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: trace the syscalls that lead there instead: tracer probe syscalls:sys_enter_open syscalls:sys_enter_openat syscalls:sys_enter_openat2 syscalls:sys_enter_creat"), "{stderr}");
}

#[test]
fn nothing_stays_attached_after_sigterm() {
    if !has(Feature::Tracepoints, "probe_cleanup") {
        return;
    }
    // A tracepoint no other test uses, so its program list is ours alone.
    let tracepoint = "syscalls:sys_enter_getpgid";
    let mut child = common::Tracer::new(["probe", tracepoint])
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    stderr.read_line(&mut banner).unwrap();
    assert!(
        banner.starts_with("Tracing syscalls:sys_enter_getpgid..."),
        "{banner}"
    );
    let attached = programs_on(tracepoint);
    assert_eq!(attached, 1, "tracer's program is attached while it runs");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(0));
    // The tracepoint's event is closed by tracer's `tracer-detach` child once tracer has
    // exited (its close waits for a grace period, ~60-100 ms): the program, stopped before the
    // last drain, is gone soon after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while programs_on(tracepoint) != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "tracer's program is still attached 10 s after it exited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// BPF programs attached to a tracepoint (PERF_EVENT_IOC_QUERY_BPF on a fresh event).
fn programs_on(tracepoint: &str) -> usize {
    use tracer::perf::{self, EventKind, Options, Scope};
    let (category, name) = tracepoint.split_once(':').unwrap();
    let id = tracer::kernel::tracefs::Tracefs::locate()
        .unwrap()
        .tracepoint_id(category, name)
        .unwrap();
    let event = perf::Event::open(
        tracepoint,
        &EventKind::Tracepoint(id),
        &Options::default(),
        &Scope::Cpu(0),
    )
    .unwrap();
    event.query_bpf().unwrap().len()
}

#[test]
fn list_shows_tracepoints_with_fields_and_binary_symbols() {
    if !has(Feature::Tracefs, "list") {
        return;
    }
    let out = tracer(&["list", "syscalls:sys_enter_openat"]);
    assert_eq!(text(&out.stdout), "tracepoint:syscalls:sys_enter_openat\n");
    let out = tracer(&["list", "-v", "syscalls:sys_enter_openat"]);
    assert_eq!(
        text(&out.stdout),
        "tracepoint:syscalls:sys_enter_openat\n    int dfd\n    const char * filename\n    int flags\n    umode_t mode\n"
    );
    let prog = common::testprog().display().to_string();
    let out = tracer(&["list", "--binary", &prog, "tracer_testprog_*"]);
    // Functions only: the data symbol tracer_testprog_counter is not listed.
    assert_eq!(
        text(&out.stdout),
        format!(
            "uprobe:{prog}:tracer_testprog_bump\nuprobe:{prog}:tracer_testprog_bump_unlocked\n\
             uprobe:{prog}:tracer_testprog_sleep\nuprobe:{prog}:tracer_testprog_target\nuprobe:{prog}:tracer_testprog_work\n"
        )
    );
    let out = tracer(&["list", "no_such_thing_anywhere"]);
    assert_eq!(out.status.code(), Some(2));
    // Kernel functions are listed only where a kprobe can attach to them.
    let kprobes =
        Feature::KprobePmu.check().is_available() || Feature::KprobeEvents.check().is_available();
    let out = tracer(&["list", "vfs_read"]);
    assert_eq!(
        text(&out.stdout).lines().any(|l| l == "kprobe:vfs_read"),
        kprobes
    );
}

/// Peak RSS (KiB) of `tracer ARGS`, from wait4's rusage.
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which also reads its rusage
fn peak_rss_kib(args: &[&str]) -> i64 {
    let child = common::Tracer::new(args)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain data; all zeros is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: we wait for our own child; the kernel writes status and usage, which outlive
    // the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    usage.ru_maxrss
}

#[test]
fn memory_does_not_grow_with_the_number_of_events() {
    if !has(Feature::Tracepoints, "probe_memory") {
        return;
    }
    let prog = common::testprog().display().to_string();
    let run = |n: u64| {
        let script = format!("{prog} --cpu 0 getppid {n} & {prog} --cpu 1 getppid {n}; wait");
        peak_rss_kib(&[
            "probe",
            "syscalls:sys_enter_getppid",
            "--comm",
            "tracer-testprog",
            "-f",
            "json",
            // A fixed, small ring: what is under test is that memory does not follow the
            // number of events. (The reader's memory does follow the ring size, up to a few
            // times it when the rings are full at every drain: the default 4 MiB per CPU
            // fills only in the larger run.)
            "--ring-pages",
            "64",
            "--",
            "sh",
            "-c",
            &script,
        ])
    };
    let small = run(25_000);
    let large = run(200_000);
    // Eight times the events: the rings are fixed, events are printed as they are drained.
    assert!(
        large <= small + 4096,
        "peak RSS {small} KiB for 50k events, {large} KiB for 400k"
    );
}

/// `tracer probe -p SHELL ARGS` of a shell that waits for tracer, then runs `then`
/// ([`common::tracer_of_a_waiting_shell`]).
fn probe_of_a_waiting_shell(then: &str, args: &[&str]) -> (String, std::process::Output, String) {
    common::tracer_of_a_waiting_shell(then, "probe", args)
}

/// `-p PID` follows the children the process starts from then on (as `tracer trace -p`,
/// `tracer stat -p` and perf do), and `-i/--no-inherit` keeps to the process itself: a shell
/// that runs the workload twice as children (4 and 3 getppid calls) gives 7 hits, and none
/// with `-i` (the shell makes no getppid call of its own).
#[test]
fn a_process_is_followed_into_its_children_unless_no_inherit() {
    if !has(Feature::Tracepoints, "pid_children") {
        return;
    }
    let prog = common::testprog().display().to_string();
    for (extra, want) in [(None, 7), (Some("-i"), 0)] {
        let mut args = vec!["-f", "json", "syscalls:sys_enter_getppid"];
        args.extend(extra);
        let (pid, out, stderr) =
            probe_of_a_waiting_shell(&format!("{prog} getppid 4; {prog} getppid 3"), &args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        let events = json_events(&out);
        assert_eq!(events.len(), want, "{args:?}: {stderr}");
        assert!(
            events.iter().all(|e| e["pid"].as_u64() != pid.parse().ok()),
            "{args:?}: the shell made no getppid call"
        );
    }
}
