//! Tier 4: `tracer profile` against tests/workloads/profile.c, which burns a known amount of
//! its own CPU time in two call chains (3:1) and sleeps known times in two functions.
//!
//! On-CPU expectations come from the clock: with cpu-clock (this kernel has no hardware
//! counters) at -F HZ, a command's or a process's tasks are sampled by per-task clock events,
//! which run only while their task does: a task that ran T s of CPU gets T * HZ samples, less
//! the part of one period left over at its end. The workload reports T itself (its thread CPU
//! time), so the total holds however busy the machine is: 5 samples or 10%, whichever is
//! more. Where the samples land between the two chains (3 ms and 1 ms of every 4 ms round,
//! sampled every 10.1 ms) drifts by a few samples, more under heavy load (`assert_chain`).
//! Off-CPU totals are at least the time asked for (nanosleep never returns early) and at most
//! the time the command ran (a block ends at the switch back in, after any wait on the run
//! queue).

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

use common::{profile_program, text, tracer, tracer_bin, tracer_started, Workload};

/// The tests that check samples against the clock (the chains' shares of CPU time, the time
/// slept) run alone ([`alone`]); the others share the machine ([`beside`]). Beside another
/// test's spinning workload on these 2 CPUs, preemptions stop landing at random within the
/// workload's rounds: the hot chain once got 186 samples where its CPU time said 153 +- 27
/// (CI of 2026-12-03), and the slept total once missed a block.
static CLOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    CLOCK.write().unwrap_or_else(|e| e.into_inner())
}

fn beside() -> std::sync::RwLockReadGuard<'static, ()> {
    CLOCK.read().unwrap_or_else(|e| e.into_inner())
}

/// `cpu_ns=N hot_ns=N cold_ns=N`, the workload's own account, from `stderr`.
fn cpu_account(stderr: &str) -> (u64, u64, u64) {
    let line = (stderr.lines())
        .find(|l| l.starts_with("cpu_ns="))
        .unwrap_or_else(|| panic!("no cpu_ns= line in:\n{stderr}"));
    let field = |name: &str| -> u64 {
        (line.split_whitespace())
            .find_map(|w| w.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {line}"))
    };
    (field("cpu_ns="), field("hot_ns="), field("cold_ns="))
}

/// Samples expected for `ns` of CPU time at `hz`.
fn expected(ns: u64, hz: u64) -> f64 {
    ns as f64 * hz as f64 / 1e9
}

fn assert_near(what: &str, got: u64, want: f64, context: &str) {
    let tolerance = (want * 0.10).max(5.0);
    // Emulated CPUs take a timer interrupt when the emulator gets to it, and a sampling timer
    // that fires more than a period late counts one sample for the periods it missed: a full
    // VM-tier run sampled 569 for 932 and 1805 for 2924 expected (5.10, both vCPUs and the
    // host busy), within 10% in a run of the suite alone. There samples are checked to be no
    // more than twice the CPU time's (the dynamic loader, outside the workload's account, is
    // slow there too: 394 for 354.6 on 5.10) and at least a third of them.
    if common::emulated(
        what,
        "samples checked within a third and twice the CPU time's (timer interrupts land late)",
    ) {
        assert!(
            got as f64 <= 2.0 * want + tolerance && got as f64 >= want / 3.0,
            "{what}: {got} samples, expected between a third and twice {want:.1}\n{context}"
        );
        return;
    }
    assert!(
        (got as f64 - want).abs() <= tolerance,
        "{what}: {got} samples, expected {want:.1} +- {tolerance:.1}\n{context}"
    );
}

/// Folded lines of `comm` as (frames, count).
fn folded(stdout: &str, comm: &str) -> Vec<(String, u64)> {
    (stdout.lines())
        .filter(|l| l.starts_with(&format!("{comm};")))
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("`stack N`");
            (stack.to_string(), n.parse().expect("a count"))
        })
        .collect()
}

/// Samples of folded lines whose stack runs through `chain` (`;main;f;g`), deeper frames
/// (a syscall or an interrupt under the leaf) included.
fn through(lines: &[(String, u64)], chain: &str) -> u64 {
    (lines.iter())
        .filter(|(stack, _)| stack.contains(&format!("{chain};")) || stack.ends_with(chain))
        .map(|(_, n)| n)
        .sum()
}

/// How far a chain's samples may stray from its CPU time. The workload alternates between
/// the chains every 0.33 and 0.11 ms, far below a period and in no simple ratio to it, so where
/// each period ends is as good as random: a chain with share p of `total` samples gets
/// total * p of them, with a standard deviation of sqrt(total * p * (1 - p)); the bound is 4 of
/// those (a false alarm about once in 16,000 runs), plus 2 for the end of the run.
///
/// On emulated CPUs the split is not checked (the total still is): the vCPUs take turns on one
/// host thread, and a timer interrupt is taken when the emulator next looks, well past the
/// point it fell due and not at random within a round. The VM tier measured the hot chain at
/// 8-9% over its CPU time on 5.10 and 6.12, and in another run the cold chain at 30 samples
/// for 95.6 ms of CPU (5.10).
fn assert_chain(what: &str, got: u64, want: f64, total: u64, context: &str) {
    if common::emulated(
        &format!("{what} chain"),
        "not checked: timer interrupts land late on emulated CPUs, skewing sub-ms shares",
    ) {
        return;
    }
    let p = want / total.max(1) as f64;
    let tolerance = 4.0 * (want * (1.0 - p)).max(0.0).sqrt() + 2.0;
    assert!(
        (got as f64 - want).abs() <= tolerance,
        "{what}: {got} samples, expected {want:.1} +- {tolerance:.1}\n{context}"
    );
}

const HOT: &str = ";main;profile_hot;profile_hot_inner;profile_spin";
const COLD: &str = ";main;profile_cold;profile_spin";

/// `tracer profile -F 999 -f folded -- PROG CPU_MS 0 0 0 0` (its comm `comm`): the total is
/// the workload's CPU time at 999 Hz and the chains share it as the workload says. Returns
/// stdout, stderr and the folded lines.
fn on_cpu_shares(prog: &str, comm: &str, cpu_ms: &str) -> (String, String, Vec<(String, u64)>) {
    // `-g` as perf users type it (stacks are always taken).
    let out = tracer(&[
        "profile", "-g", "-F", "999", "-f", "folded", "--", prog, cpu_ms, "0", "0", "0", "0",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let (cpu, hot, cold) = cpu_account(&stderr);
    let lines = folded(&stdout, comm);
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    assert_near("all", total, expected(cpu, 999), &context);
    let (hot, cold) = (expected(hot, 999), expected(cold, 999));
    assert_chain("hot", through(&lines, HOT), hot, total, &context);
    assert_chain("cold", through(&lines, COLD), cold, total, &context);
    (stdout, stderr, lines)
}

#[test]
fn on_cpu_shares_of_a_command_follow_its_cpu_time() {
    let _clock = alone();
    let prog = profile_program().display().to_string();
    let (stdout, stderr, lines) = on_cpu_shares(&prog, "tracer-profile", "1000");
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    // The heaviest line is the hot chain exactly, root first, down to the leaf.
    assert!(lines[0].0.ends_with(HOT), "{context}");
    // Nothing else was profiled: the command only.
    assert!(
        stdout.lines().all(|l| l.starts_with("tracer-profile;")),
        "{context}"
    );
    // Every sample accounted: the summary's count is the folded total.
    assert!(
        stderr.contains(&format!("\n{total} samples in ")),
        "{context}"
    );
    assert!(stderr.contains("0 not counted (map full)"), "{context}");
}

#[test]
fn on_cpu_of_a_running_process_as_json() {
    let _clock = alone();
    let mut cmd = Command::new(profile_program());
    cmd.args(["1000", "0", "0", "0", "0"])
        .stderr(Stdio::piped());
    let mut work = Workload::start(cmd);
    let mut work_err = work.child.stderr.take().unwrap();
    let pid = work.pid().to_string();
    let (child, mut stderr, banner) =
        tracer_started(&["profile", "-p", &pid, "-F", "199", "-f", "json"]);
    assert!(
        banner.contains(&format!("Sampling on-CPU stacks in process {pid}")),
        "{banner}"
    );
    work.run_batch();
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let mut rest = banner;
    stderr.read_to_string(&mut rest).unwrap();
    work.finish();
    let mut account = String::new();
    work_err.read_to_string(&mut account).unwrap();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let stdout = text(&out.stdout);
    let context = format!("stdout:\n{stdout}\nstderr:\n{rest}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let (cpu, hot, _) = cpu_account(&account);
    assert_eq!(json["mode"], "on-cpu");
    assert_eq!(json["hz"], 199);
    let stacks = json["stacks"].as_array().unwrap();
    let samples: u64 = stacks.iter().map(|s| s["value"].as_u64().unwrap()).sum();
    assert_near("all", samples, expected(cpu, 199), &context);
    // Innermost first: the hot chain's user frames, as the text report lists them.
    let user = |s: &serde_json::Value| -> Vec<String> {
        (s["frames"].as_array().unwrap().iter())
            .filter(|f| f["space"] == "user")
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    let hot_samples: u64 = (stacks.iter())
        .filter(|s| {
            user(s)
                .windows(4)
                .any(|w| w == ["profile_spin", "profile_hot_inner", "profile_hot", "main"])
        })
        .map(|s| s["value"].as_u64().unwrap())
        .sum();
    assert_chain("hot", hot_samples, expected(hot, 199), samples, &context);
    assert!(stacks
        .iter()
        .all(|s| s["pid"].as_u64() == Some(work_pid(&pid))));
    // Every sample the program counted is in a stack, idle or not counted.
    let a = &json["accounting"];
    let counted: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(
        a["counted"].as_u64().unwrap(),
        counted
            + a["idle"].as_u64().unwrap()
            + a["own"].as_u64().unwrap()
            + a["not_counted"].as_u64().unwrap(),
        "{context}"
    );
}

fn work_pid(pid: &str) -> u64 {
    pid.parse().unwrap()
}

#[test]
fn off_cpu_totals_are_the_time_slept_where_it_was_slept() {
    let _clock = alone();
    let prog = profile_program().display().to_string();
    let out = tracer(&[
        "profile",
        "--off-cpu",
        "--min-block",
        "1ms",
        "-f",
        "json",
        "--",
        &prog,
        "0",
        "5",
        "200",
        "4",
        "50",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let stacks = json["stacks"].as_array().unwrap();
    // (microseconds, blocks) of the stacks where the user function slept in the kernel's
    // sleep; frames are innermost first.
    let slept = |function: &str| -> (u64, u64) {
        (stacks.iter())
            .filter(|s| {
                let names: Vec<&str> = (s["frames"].as_array().unwrap().iter())
                    .map(|f| f["name"].as_str().unwrap())
                    .collect();
                names.windows(2).any(|w| w == [function, "main"]) && names.contains(&"do_nanosleep")
            })
            .map(|s| {
                (
                    s["value"].as_u64().unwrap() / 1000,
                    s["count"].as_u64().unwrap(),
                )
            })
            .fold((0, 0), |(us, n), (u, c)| (us + u, n + c))
    };
    // Each block lasts at least the time asked for; it ends when the task is switched back
    // in, so it also holds the wait on the run queue after the wakeup: about 50 us on an
    // idle machine, 16 ms a block at a load average of 6 on these 2 CPUs. So the upper bound
    // is the run itself: blocked time cannot exceed the time the command ran.
    let ((nap, naps), (doze, dozes)) = (slept("profile_nap"), slept("profile_doze"));
    let ran_us = (stderr.split(" blocks in ").nth(1))
        .and_then(|rest| rest.split(" s,").next())
        .and_then(|s| s.parse::<f64>().ok())
        .map(|s| (s * 1e6) as u64)
        .expect("N blocks in S s");
    // The workload counts its own sleeps that blocked (voluntary context switches): 9, unless
    // a sleep was preempted before it blocked and kept off the CPU past its end (a loaded
    // machine), which is time waiting for a CPU, not blocked. A block is lost only with a
    // context switch the kernel did not run the program for (another BPF program was running
    // on that CPU), and the summary says so. The command blocks elsewhere too where its
    // files are slow to open (the VM tier's root is on 9p): those are not the sleeps'.
    let blocked: u64 = (stderr.lines())
        .find_map(|l| l.strip_prefix("blocked=")?.parse().ok())
        .expect("the workload's blocked= line");
    assert!(blocked <= 9, "{context}");
    let missed = stderr.contains("context switches missed");
    // A block whose end the kernel's tracepoint did not show (about 1 in 1,000 here) is
    // counted apart, and said.
    let a = &json["accounting"];
    let unended = a["unended"].as_u64().unwrap();
    assert!(naps + dozes + unended == blocked || missed, "{context}");
    assert!(
        unended == 0 || stderr.contains(" whose end the kernel's sched_switch did not show"),
        "{context}"
    );
    // Every block of the summary's count is in a stack, or accounted as not in one.
    let counted = a["counted"].as_u64().unwrap();
    let in_stacks: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    let elsewhere: u64 = (["idle", "own", "not_counted"].iter())
        .map(|k| a[k].as_u64().unwrap())
        .sum();
    assert_eq!(counted, in_stacks + elsewhere, "{context}");
    assert!(
        stderr.contains(&format!("\n{counted} blocks in ")),
        "{context}"
    );
    if blocked == 9 && !missed && unended == 0 {
        // A block is timed from the switch out, a sleep from when its timer was armed: on
        // real CPUs microseconds apart; on the VM tier's emulated ones up to a millisecond
        // (a 7.3 run counted its four 50 ms dozes as 198.65 ms).
        let slack = match common::emulated(
            "off-CPU minimum",
            "each block may start up to 1 ms after its sleep's timer was armed",
        ) {
            true => 1_000,
            false => 0,
        };
        assert!(
            nap + naps * slack >= 1_000_000 && doze + dozes * slack >= 200_000,
            "{context}"
        );
    }
    assert!(nap + doze <= ran_us + 10_000, "{context}");
}

#[test]
fn off_cpu_text_names_the_blocks() {
    let _clock = beside();
    let prog = profile_program().display().to_string();
    let out = tracer(&[
        "profile",
        "--off-cpu",
        "--user-only",
        "--",
        &prog,
        "0",
        "3",
        "100",
        "0",
        "0",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let first: Vec<&str> = stdout.lines().take(3).collect();
    assert!(
        first[0].starts_with("#1   ") && first[0].contains(" in 3 blocks ("),
        "{stdout}\n{stderr}"
    );
    assert!(
        first[0].contains(" ms in ") || first[0].contains(" s in "),
        "{stdout}\n{stderr}"
    );
    assert!(
        first[1].trim().starts_with("profile_nap (profile.c:"),
        "{stdout}\n{stderr}"
    );
    assert!(
        first[2].trim().starts_with("main (profile.c:"),
        "{stdout}\n{stderr}"
    );
}

/// `-f pprof` read by `go tool pprof`, as a user reads it: the samples it shows add up to the
/// run's own count (stderr, the same run) and to the workload's CPU time; the heaviest trace
/// is the hot chain; kernel frames are there; every sample carries its comm.
#[test]
fn pprof_files_read_in_go_tool_pprof() {
    let _clock = alone();
    let prog = profile_program().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cpu.pb.gz");
    let file = file.to_str().unwrap();
    let out = tracer(&[
        "profile", "-F", "999", "-f", "pprof", "-o", file, "--", &prog, "1000", "0", "0", "0", "0",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out.stdout.is_empty(), "-o takes the data");
    let gz = std::fs::read(file).unwrap();
    assert_eq!(&gz[..2], [0x1f, 0x8b], "gzipped");
    // `N samples counted: M in K stacks`.
    let counted = (stderr.lines())
        .find_map(|l| l.split_once(" samples counted: ")?.1.split_once(" in "))
        .and_then(|(m, rest)| {
            Some((
                m.parse::<u64>().ok()?,
                rest.split(' ').next()?.parse::<usize>().ok()?,
            ))
        })
        .unwrap_or_else(|| panic!("the accounting line in {stderr}"));
    let test = "pprof_files_read_in_go_tool_pprof";
    let Some(traces) = common::go_pprof(test, &["-traces", "-sample_index=samples", file]) else {
        return;
    };
    let context = format!("go tool pprof -traces:\n{traces}\nstderr:\n{stderr}");
    assert!(traces.contains("Type: samples"), "{context}");
    let samples = common::pprof_traces(&traces);
    assert_eq!(samples.len(), counted.1, "one trace per stack: {context}");
    let total: u64 = samples.iter().map(|(n, _, _)| n).sum();
    assert_eq!(total, counted.0, "{context}");
    let (cpu, _, _) = cpu_account(&stderr);
    assert_near("pprof total", total, expected(cpu, 999), &context);
    assert!(
        samples.iter().all(|(_, comm, _)| comm == "tracer-profile"),
        "{context}"
    );
    let heaviest = samples.iter().max_by_key(|(n, _, _)| *n).unwrap();
    assert_eq!(
        heaviest.2[..4],
        ["profile_spin", "profile_hot_inner", "profile_hot", "main"],
        "{context}"
    );
    // The workload asks the kernel for its CPU time: some samples are in the system call.
    assert!(
        samples
            .iter()
            .any(|(_, _, f)| f.iter().any(|n| n == "do_syscall_64")),
        "kernel frames: {context}"
    );
    // The default sample type is CPU time, one period (1/999 s) per sample.
    let top = common::go_pprof(test, &["-top", file]).unwrap();
    let ms = (counted.0 * 1_001_001) as f64 / 1e6;
    assert!(top.contains("Type: cpu"), "{top}");
    assert!(
        top.contains(&format!("Total samples = {ms:.2}ms"))
            || top.contains(&format!("Total samples = {:.2}s", ms / 1e3)),
        "{ms} ms in {top}"
    );
}

#[test]
fn the_flame_graph_is_an_svg_of_the_stacks() {
    let _clock = beside();
    let prog = profile_program().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("cpu.svg");
    let out = tracer(&[
        "profile",
        "-f",
        "svg",
        "-o",
        svg.to_str().unwrap(),
        "--",
        &prog,
        "300",
        "0",
        "0",
        "0",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "-o takes the data");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..200.min(svg.len())]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("On-CPU profile"));
    assert!(svg.contains("<title>profile_hot_inner ("), "{svg}");
}

#[test]
fn bad_input_is_refused_with_a_hint() {
    let _clock = beside();
    let usage = |args: &[&str], message: &str, hint: &str| {
        let out = common::Tracer::new(args).command().output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("hint: {hint}")),
            "{args:?}: {stderr}"
        );
    };
    usage(
        &["profile", "-F", "0"],
        "error: -F 0: the sampling rate must be 1 to 50000 per second",
        "99 (the default)",
    );
    usage(
        &["profile", "--off-cpu", "-F", "99"],
        "--off-cpu measures every block, unsampled",
        "drop -F",
    );
    usage(
        &["profile", "--min-block", "1ms"],
        "--min-block filters the blocks of --off-cpu",
        "add --off-cpu",
    );
    usage(
        &["profile", "--off-cpu", "--min-block", "soon"],
        "soon",
        "e.g. --min-block 1ms",
    );
    usage(
        &["profile", "-o", "folded"],
        "'folded' is a format",
        "for folded output use -f folded",
    );
    usage(
        &["profile", "-p", "1", "--", "true"],
        "cannot be used with",
        "trace either a running process (-p) or a command tracer starts (-- COMMAND)",
    );
    // Gzipped protobuf is not for a terminal (a pseudo-terminal, through script(1)): refused
    // before anything runs.
    let command = format!("{} profile -f pprof -- true", tracer_bin().display());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("-f pprof writes a gzipped protobuf, not for a terminal"),
        "{shown}"
    );
    assert!(
        shown.contains("hint: write it to a file: -f pprof -o cpu.pb.gz"),
        "{shown}"
    );
    assert!(!shown.contains("Sampling"), "{shown}");
}

#[test]
fn every_cpu_sample_is_accounted_for() {
    let _clock = beside();
    // Each sample the program counted is in a stack, the idle task's, tracer's own, or not
    // counted; and no CPU's clock gave more than HZ a second. (Fewer, on an idle machine: a
    // whole idle CPU's samples were seen to stop, 199 of 398 in one run, probably perf's
    // throttling, which is lifted only at a scheduler tick, and an idle CPU has none.)
    let out = tracer(&["profile", "-a", "-d", "1", "-F", "199", "-f", "json"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let a = &json["accounting"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    let stacks: u64 = (json["stacks"].as_array().unwrap().iter())
        .map(|s| n(&s["count"]))
        .sum();
    assert_eq!(
        n(&a["counted"]),
        stacks + n(&a["idle"]) + n(&a["own"]) + n(&a["not_counted"]),
        "{stderr}"
    );
    let cpus = tracer::perf::cpus::online().unwrap().len() as f64;
    let clock = cpus * 199.0 * json["seconds"].as_f64().unwrap();
    let counted = n(&a["counted"]) as f64;
    // A period per CPU at each end of the run (enabled before it starts, stopped after); on
    // an emulated CPU, whose start takes longer and whose timers land late, two at each end
    // (6.12's VM counted 404 where the clocks gave 400 and this allowed 403.9).
    let ends = match common::emulated("every_cpu_sample", "two periods per CPU at each end") {
        true => 4.0,
        false => 2.0,
    };
    assert!(
        counted <= clock + ends * cpus && counted >= 1.0,
        "{counted} samples counted, the clocks gave {clock:.0}\n{stderr}"
    );
}

#[test]
fn short_lived_children_are_symbolized() {
    let _clock = alone();
    // 20 children of 20 ms of CPU each, every one gone long before the end of the run: their
    // mappings come from the kernel's mmap records, so their frames are named.
    let prog = profile_program().display().to_string();
    // Each child's own account of its CPU time goes to a file: `hot_ns` and `cold_ns`, the two
    // chains'. The dynamic loader's share before them is about 1 ms here and 30-50 ms on an
    // emulated CPU, so the total of the samples is not a child's 20 ms.
    let dir = tempfile::tempdir().unwrap();
    let accounts = dir.path().join("accounts");
    let script = format!(
        "for i in $(seq 20); do {prog} 20 0 0 0 0 2>>{}; done",
        accounts.display()
    );
    let out = tracer(&[
        "profile", "-F", "999", "-f", "folded", "--", "sh", "-c", &script,
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let mut chains = 0;
    let accounts = std::fs::read_to_string(&accounts).unwrap();
    for line in accounts.lines().filter(|l| l.starts_with("cpu_ns=")) {
        let (_, hot, cold) = cpu_account(line);
        chains += hot + cold;
    }
    assert_eq!(accounts.matches("cpu_ns=").count(), 20, "{accounts}");
    let lines = folded(&stdout, "tracer-profile");
    // The two chains' samples, named, are the chains' CPU time: without the mmap records, or
    // with them applied out of order across CPUs (an exec on one, the new program's mappings
    // on another), up to a quarter of them were unnamed.
    let named = through(&lines, HOT) + through(&lines, COLD);
    assert_near("children's chains", named, expected(chains, 999), &context);
    // And no sample has libc calling an unnamed `main`: the program's own mappings were known
    // for every child (the dynamic loader's entry, before libc, has no symbol).
    let unnamed: u64 = (lines.iter())
        .filter(|(stack, _)| stack.contains("__libc_start_call_main;[unknown]"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(unnamed, 0, "{context}");
    assert!(!stderr.contains("exited before"), "{context}");
}

#[test]
fn interval_reports_add_up_to_the_run() {
    let _clock = alone();
    let prog = profile_program().display().to_string();
    let out = tracer(&[
        "profile", "-I", "300ms", "--top", "1000", "--", &prog, "1000", "0", "0", "0", "0",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let heads: Vec<&str> = stdout.lines().filter(|l| l.starts_with("--- ")).collect();
    // At least the first and the last (a busy machine slows the reports of a debug build).
    assert!(heads.len() >= 2, "{stdout}");
    assert!(heads[0].ends_with("s (interval 1) ---"), "{stdout}");
    assert!(heads.last().unwrap().contains("(last interval"), "{stdout}");
    // Every sample of the run is in exactly one interval's stacks.
    let samples: u64 = (stdout.lines())
        .filter(|l| l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(
        stderr.contains(&format!("\n{samples} samples in ")),
        "{samples}\n{stdout}\n{stderr}"
    );
    let (cpu, _, _) = cpu_account(&stderr);
    assert_near("all", samples, expected(cpu, 99), &stderr);
}

/// Runs a toolchain command (cc, objcopy, strip) in `dir`; it must succeed.
fn toolchain(dir: &std::path::Path, cmd: &mut Command) {
    let status = cmd.current_dir(dir).status().expect("run the toolchain");
    assert!(status.success(), "{cmd:?}");
}

/// A stripped copy of the workload whose debug info is in `.debug/busy.debug` beside it, found
/// through its `.gnu_debuglink` (as Debian's -dbg packages are found by build-id): its
/// functions are named, with lines, in profiles and uprobe stacks, and can be probed by name.
/// Without the debug file neither holds. (Arguments are not typed from a debug file: each
/// function would walk the whole file's DWARF again; they print as arg0..arg5.)
#[test]
fn a_stripped_program_is_named_from_its_debug_file() {
    let _clock = beside();
    let dir = tempfile::tempdir().unwrap();
    let busy = dir.path().join("busy");
    let debug = dir.path().join(".debug");
    std::fs::create_dir(&debug).unwrap();
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/profile.c");
    let run = |cmd: &mut Command| toolchain(dir.path(), cmd);
    run(Command::new("cc")
        .args(["-g", "-O0", "-fno-omit-frame-pointer", "-o", "busy"])
        .arg(&source));
    run(Command::new("objcopy").args(["--only-keep-debug", "busy", ".debug/busy.debug"]));
    run(Command::new("strip").args(["--strip-all", "busy"]));
    run(Command::new("objcopy").args(["--add-gnu-debuglink=.debug/busy.debug", "busy"]));
    let prog = busy.display().to_string();

    on_cpu_shares(&prog, "busy", "300");

    // Two 1 ms naps, then a 300 ms doze: the process is still there when its hits are read
    // (a streamed stack is named from /proc/PID/maps; one of a process already gone is
    // [unknown], and said so, which is not what this test is about).
    let probe = |function: &str| {
        let spec = format!("uprobe:{prog}:{function}");
        tracer(&[
            "probe", "-s", "user", &spec, "--", &prog, "0", "2", "1", "1", "300",
        ])
    };
    let out = probe("profile_nap");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let hits: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(":profile_nap "))
        .collect();
    assert_eq!(hits.len(), 2, "{stdout}");
    assert!(
        hits.iter().all(|l| l.contains(":profile_nap arg0=0x1 ")),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n        profile_nap+0x0 (profile.c:"),
        "{stdout}"
    );
    assert!(stdout.contains("\n        main+0x"), "{stdout}");

    // Without the debug file: no names of its own, and nothing to probe by name.
    std::fs::remove_dir_all(&debug).unwrap();
    let out = tracer(&[
        "profile", "-F", "999", "-f", "folded", "--", &prog, "100", "0", "0", "0", "0",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!stdout.contains("profile_"), "{stdout}");
    let out = probe("profile_nap");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("error: no function 'profile_nap' in "),
        "{}",
        text(&out.stderr)
    );
}

/// The build-id of the ELF file at `path`, as readelf prints it.
fn build_id(path: &std::path::Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    let notes = text(&out.stdout);
    let line = notes
        .lines()
        .find(|l| l.contains("Build ID: "))
        .expect(&notes);
    line.split("Build ID: ").nth(1).unwrap().trim().to_string()
}

/// A local debuginfod (Debian's) serving the files under `served` on a free port of
/// 127.0.0.1, stopped when dropped.
struct Debuginfod {
    child: std::process::Child,
    url: String,
}

impl Debuginfod {
    /// The server, once it answers for `build_id`; `None`, saying why, where debuginfod is
    /// not installed.
    fn serving(served: &std::path::Path, db: &std::path::Path, build_id: &str) -> Option<Self> {
        // A bind alone passes in the test VMs (lo is down there); the connect is what fails.
        let loopback = std::net::TcpListener::bind("127.0.0.1:0").and_then(|listener| {
            std::net::TcpStream::connect(listener.local_addr()?).map(|_| listener)
        });
        let Ok(listener) = loopback else {
            common::skip(
                "SKIPPED a_stripped_program_is_named_through_debuginfod: no loopback \
                 interface here (the test VMs bring up none)",
            );
            return None;
        };
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let child = Command::new("debuginfod")
            .args(["-F", "-t", "0", "-g", "0", "-p", &port.to_string(), "-d"])
            .arg(db)
            .arg(served)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            common::skip(
                "SKIPPED a_stripped_program_is_named_through_debuginfod: no debuginfod \
                 (Debian's package debuginfod, which cargo xtask setup installs)",
            );
            return None;
        };
        let server = Debuginfod {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let address = format!("{}/buildid/{build_id}/debuginfo", server.url);
        let start = std::time::Instant::now();
        loop {
            let got = Command::new("curl")
                .args(["-sf", "-o", "/dev/null", &address])
                .status()
                .is_ok_and(|s| s.success());
            if got {
                return Some(server);
            }
            assert!(
                start.elapsed().as_secs() < 60,
                "debuginfod never served {address}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

impl Drop for Debuginfod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stripped program whose debug file only a debuginfod server has (Debian's debuginfod
/// serving a directory on 127.0.0.1, as debuginfod.debian.net serves the archive's): with
/// `DEBUGINFOD_URLS` set, tracer fetches it by build-id into elfutils' cache, says so, and
/// names the program's functions from it, which can then be probed by name. A second run
/// reads the cache with the server gone. A build-id the server lacks leaves elfutils'
/// negative entry; with neither server nor cache, nothing is named, and each is said.
#[test]
fn a_stripped_program_is_named_through_debuginfod() {
    let _clock = beside();
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/profile.c");
    let run = |cmd: &mut Command| toolchain(dir.path(), cmd);
    // `other` is the same program under another build-id; only busy's debug file is served.
    let other_id = "0123456789abcdef0123456789abcdef01234567";
    for (name, flag) in [
        ("busy", "-Wl,--build-id"),
        ("other", &format!("-Wl,--build-id=0x{other_id}")),
    ] {
        run(Command::new("cc")
            .args(["-g", "-O0", "-fno-omit-frame-pointer", flag, "-o", name])
            .arg(&source));
        run(Command::new("objcopy").args(["--only-keep-debug", name, &format!("{name}.debug")]));
        run(Command::new("strip").args(["--strip-all", name]));
    }
    std::fs::rename(dir.path().join("busy.debug"), served.join("busy.debug")).unwrap();
    let (busy, other) = (dir.path().join("busy"), dir.path().join("other"));
    let id = build_id(&busy);
    assert_eq!(build_id(&other), other_id);
    let Some(server) = Debuginfod::serving(&served, &dir.path().join("db.sqlite"), &id) else {
        return;
    };
    let cache = dir.path().join("cache");
    let entry = cache.join(&id).join("debuginfo");
    let probe = |prog: &std::path::Path, urls: &str| {
        let prog = prog.display().to_string();
        let spec = format!("uprobe:{prog}:profile_nap");
        let args = [
            "probe", "-s", "user", &spec, "--", &prog, "0", "2", "1", "1", "300",
        ];
        let out = common::Tracer::new(args)
            .command()
            .env("DEBUGINFOD_URLS", urls)
            .env("DEBUGINFOD_CACHE_PATH", &cache)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let named = |code: Option<i32>, stdout: &str, stderr: &str| {
        assert_eq!(code, Some(0), "{stderr}");
        let hits = stdout
            .lines()
            .filter(|l| l.contains(":profile_nap "))
            .count();
        assert_eq!(hits, 2, "{stdout}");
        assert!(
            stdout.contains("\n        profile_nap+0x0 (profile.c:"),
            "{stdout}"
        );
        assert!(stdout.contains("\n        main+0x"), "{stdout}");
    };

    let (code, stdout, stderr) = probe(&busy, &server.url);
    named(code, &stdout, &stderr);
    let said = [
        format!(
            "note: downloading debug info for {} (build-id {id}) from {}\n",
            busy.display(),
            server.url
        ),
        format!("note: kept {} (", entry.display()),
    ];
    for line in &said {
        assert!(stderr.contains(line.as_str()), "{line}\n{stderr}");
    }
    assert_eq!(
        std::fs::read(&entry).unwrap(),
        std::fs::read(served.join("busy.debug")).unwrap()
    );

    // A build-id the server has not: its 404 said, and kept as elfutils' negative entry.
    let (code, _, stderr) = probe(&other, &server.url);
    assert_eq!(code, Some(2), "{stderr}");
    let miss = format!(
        "note: no debug info for {} (build-id {other_id}) from DEBUGINFOD_URLS: {}: 404",
        other.display(),
        server.url
    );
    assert!(stderr.contains(&miss), "{stderr}");
    assert!(
        stderr.contains("error: no function 'profile_nap' in "),
        "{stderr}"
    );
    let hint = format!(
        "hint: {} is stripped and has no debug file here: install its debug package \
         (Debian's -dbgsym)\n",
        other.display()
    );
    assert!(stderr.contains(&hint), "{stderr}");
    let negative = std::fs::metadata(cache.join(other_id).join("debuginfo")).unwrap();
    assert_eq!(negative.len(), 0);

    // The server gone: the cache serves, and nothing is downloaded.
    let url = server.url.clone();
    drop(server);
    let (code, stdout, stderr) = probe(&busy, &url);
    named(code, &stdout, &stderr);
    assert!(!stderr.contains("downloading"), "{stderr}");

    // Neither: the unanswered server said, nothing named.
    std::fs::remove_dir_all(&cache).unwrap();
    let (code, _, stderr) = probe(&busy, &url);
    assert_eq!(code, Some(2), "{stderr}");
    let refused = format!(
        "note: no debug info for {} (build-id {id}) from DEBUGINFOD_URLS: {url}: ",
        busy.display()
    );
    assert!(stderr.contains(&refused), "{stderr}");
    assert!(
        !entry.exists(),
        "an unanswered request leaves no negative entry"
    );
}

/// A command that moves itself into a cgroup laid out as a Kubernetes pod's containerd
/// container: its stacks carry the cgroup, the container id and the pod UID (JSON), and text
/// heads them `in container ID of pod UID`.
#[test]
fn stacks_carry_their_container_and_pod() {
    let _clock = beside();
    common::require_root();
    let Some((root, mounted)) = common::cgroup2_root() else {
        return;
    };
    let id = "ab".repeat(32);
    let uid = "0d9c1e6a-3b2f-4c5d-8e7f-112233445566";
    let path = format!(
        "tracer-test-{}/kubepods.slice/kubepods-pod{}.slice/cri-containerd-{id}.scope",
        std::process::id(),
        uid.replace('-', "_")
    );
    let mut cgroups = common::Cgroups {
        dirs: Vec::new(),
        mounted,
    };
    let mut dir = root.clone();
    for part in path.split('/') {
        dir = dir.join(part);
        std::fs::create_dir(&dir).unwrap();
        cgroups.dirs.push(dir.clone());
    }
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} 300 0 0 0 0",
        dir.display(),
        profile_program().display()
    );
    let out = tracer(&[
        "profile", "-F", "999", "-f", "json", "--", "sh", "-c", &script,
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let stacks = json["stacks"].as_array().unwrap();
    let busy: Vec<_> = (stacks.iter())
        .filter(|s| s["comm"] == "tracer-profile")
        .collect();
    assert!(!busy.is_empty(), "{stdout}");
    for stack in busy {
        assert_eq!(stack["container"], id.as_str(), "{stack}");
        assert_eq!(stack["pod"], uid, "{stack}");
        assert_eq!(stack["cgroup"], format!("/{path}").as_str(), "{stack}");
    }
    let out = tracer(&["profile", "-F", "999", "--", "sh", "-c", &script]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("tracer-profile [")
            && stdout.contains(&format!("] in container {} of pod {uid}\n", &id[..12])),
        "{stdout}"
    );
    drop(cgroups);
}

/// Of the samples of `lines` taken in gzip's own code (the innermost user frame is
/// `gzip+0x...`: its compression, not its start in the dynamic loader or an exec), how many
/// reach `root`, and how many there are.
fn in_gzip_through(lines: &[(String, u64)], root: &str) -> (u64, u64) {
    let in_gzip = |stack: &str| {
        let user = stack.split(';').rfind(|f| !f.ends_with("_[k]"));
        user.is_some_and(|f| f.starts_with("gzip+0x"))
    };
    let mine: Vec<(String, u64)> = (lines.iter())
        .filter(|(stack, _)| in_gzip(stack))
        .cloned()
        .collect();
    let total = mine.iter().map(|(_, n)| n).sum();
    (through(&mine, root), total)
}

/// Debian's gzip is built without frame pointers and stripped. With `--call-graph dwarf`
/// every sample of its own code unwinds from gzip's .eh_frame through libc to main's caller,
/// as perf's `--call-graph dwarf` does on the same command; unnamed frames are
/// `gzip+0xOFFSET`. Walked by frame pointers, almost none gets there, and those walks are cut
/// where they leave gzip's code, and counted. 4 MB of text at
/// `gzip -9` is about 0.3 s of CPU here: some 300 samples at 999 Hz. (Under the VM tier's
/// emulation, the dynamic loader's start and the exec take a large share of the samples:
/// they are left out of the shares, not of the accounting.)
#[test]
fn dwarf_unwinding_gives_whole_stacks_of_a_debian_binary() {
    let _clock = beside();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.txt");
    let bytes = common::hex_text(4_000_000, 0x9e37_79b9_7f4a_7c15);
    std::fs::write(&input, bytes).unwrap();
    let script = format!("gzip -9 -c {} > /dev/null", input.display());
    let profile = |extra: &[&str]| {
        let mut args = vec!["profile", "-F", "999", "-f", "folded"];
        args.extend(extra);
        args.extend(["--", "sh", "-c", &script]);
        let out = tracer(&args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        (folded(&stdout, "gzip"), stdout, stderr)
    };
    let (lines, stdout, stderr) = profile(&["--call-graph", "dwarf"]);
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    let (whole, total) = in_gzip_through(&lines, "__libc_start_call_main");
    assert!(total >= 50, "{context}");
    // 99.6% to 100% in runs here; perf's share is asserted the same way below.
    assert!(whole * 100 >= total * 98, "{whole} of {total}: {context}");
    // gzip's stacks start at its entry point (`_start`, which has no symbol in the stripped
    // file): named by the function's start, from its FDE, as every unnamed frame is.
    let elf = std::fs::read("/usr/bin/gzip").unwrap();
    let entry = u64::from_le_bytes(elf[24..32].try_into().unwrap());
    let root = format!("gzip;gzip+{entry:#x};__libc_start_main;__libc_start_call_main;gzip+0x");
    let rooted: u64 = (lines.iter())
        .filter(|(stack, _)| stack.starts_with(&root))
        .map(|(_, n)| n)
        .sum();
    assert!(rooted >= whole, "{root}: {context}");
    // The accounting says how every user stack ended: every sample is in one count (a
    // command's events sample no kernel thread).
    let counted: u64 = (stderr.lines())
        .find_map(|l| l.split_once(" samples counted: "))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{context}"));
    let said = (stderr.lines())
        .find_map(|l| l.strip_prefix("user stacks unwound from .eh_frame: "))
        .unwrap_or_else(|| panic!("{context}"));
    let (w, rest) = said.split_once(" whole, ").unwrap();
    let cut: u64 = rest.split(' ').next().unwrap().parse().unwrap();
    let w: u64 = w.parse().unwrap();
    assert_eq!(w + cut, counted, "{context}");

    let (lines, stdout, stderr) = profile(&[]);
    let (fp_whole, fp_total) = in_gzip_through(&lines, "__libc_start_call_main");
    assert!(fp_total >= 50, "{stdout}\n{stderr}");
    assert!(
        fp_whole * 10 < fp_total,
        "{fp_whole} of {fp_total}: {stdout}"
    );
    // The walk that left gzip's code ends there, said, rather than going on through
    // addresses outside every mapping (`[unknown]` frames, 1,996 of 2,000 samples before):
    // no `[unknown]` outside a user frame. (One alone may be the innermost, the old image's
    // address of a sample in an exec.)
    let outer_unknown = |stack: &str| {
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        let user_after = |i: usize| frames[i + 1..].iter().any(|f| !f.ends_with("_[k]"));
        (0..frames.len()).any(|i| frames[i] == "[unknown]" && user_after(i))
    };
    assert!(
        !lines.iter().any(|(stack, _)| outer_unknown(stack)),
        "{stdout}"
    );
    let astray = (stderr.lines())
        .find_map(|l| l.split_once(" with a user stack that left the process's code"))
        .map(|(n, _)| n.parse::<u64>().unwrap())
        .unwrap_or_else(|| panic!("{stderr}"));
    let samples: u64 = lines.iter().map(|(_, n)| n).sum();
    assert!(
        astray > 0 && astray <= samples,
        "{astray} of {samples}: {stderr}"
    );

    // perf on the same command, as the peer users trust: the same share reaches main's
    // caller (perf names the frame above it `__libc_start_main_impl (inlined)` in some runs).
    let data = dir.path().join("perf.data");
    let recorded = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "999",
            "--call-graph",
            "dwarf",
            "-o",
        ])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .status();
    if !recorded.is_ok_and(|s| s.success()) {
        eprintln!("skipped the comparison with perf: perf record did not run here");
        return;
    }
    let script = Command::new("perf")
        .args(["script", "-F", "comm,ip,sym,dso", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    // Each sample's first user frame (kernel addresses start ffffffff) in gzip's own file.
    let samples: Vec<String> = text(&script.stdout)
        .split("\n\n")
        .filter(|s| s.trim_start().starts_with("gzip"))
        .filter(|s| {
            let user = (s.lines().skip(1)).find(|l| !l.trim_start().starts_with("ffffffff"));
            user.is_some_and(|l| l.ends_with("(/usr/bin/gzip)"))
        })
        .map(str::to_string)
        .collect();
    let perf_whole = (samples.iter())
        .filter(|s| s.contains("__libc_start_call_main"))
        .count();
    assert!(samples.len() >= 50, "{}", text(&script.stdout));
    assert!(
        perf_whole * 100 >= samples.len() * 98,
        "perf: {perf_whole} of {}",
        samples.len()
    );
}

/// A program without frame pointers that reads the clock for a second (tests/workloads/
/// clock.c): most of its samples are in the vDSO's clock_gettime, whose code and unwind
/// information are in the kernel's image mapped into it, not in a file. With `--call-graph
/// dwarf` they unwind from that image's .eh_frame (read from the process's memory) through
/// libc's clock_gettime and `clock_reader` to `__libc_start_call_main`, every one of them.
/// Without it, framehop's frame-pointer guess carried most through, and 1 to 2% ended in the
/// vDSO, "at code without unwind information".
#[test]
fn dwarf_unwinding_goes_through_the_vdso() {
    let _clock = beside();
    let prog = common::clock_program_without_frame_pointers();
    let prog = prog.display().to_string();
    let out = tracer(&[
        "profile",
        "-F",
        "999",
        "-f",
        "folded",
        "--call-graph",
        "dwarf",
        "--",
        &prog,
        "1000",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{context}");
    // The comm is the file's name, cut to 15 bytes.
    let lines = folded(&stdout, "tracer-clock-no");
    // A sample's user frames: the innermost is in the vDSO where it is named so.
    let user_leaf = |stack: &str| {
        stack
            .split(';')
            .rfind(|f| !f.ends_with("_[k]"))
            .map(str::to_string)
    };
    let in_vdso: Vec<&(String, u64)> = (lines.iter())
        .filter(|(stack, _)| user_leaf(stack).is_some_and(|f| f.starts_with("__vdso_")))
        .collect();
    let total: u64 = in_vdso.iter().map(|(_, n)| n).sum();
    let whole: u64 = (in_vdso.iter())
        .filter(|(stack, _)| stack.contains(";__libc_start_call_main;main;clock_reader;"))
        .map(|(_, n)| n)
        .sum();
    // Every one of them: without the vDSO's CFI, 7 to 17 in a second ended in the vDSO.
    assert!(total >= 200, "{total} samples in the vDSO: {context}");
    assert_eq!(whole, total, "{context}");
}

/// profile.c as distributions build programs (no frame pointers, sleeping through libc's
/// nanosleep), off-CPU: with `--call-graph dwarf` each block's user stack unwinds from libc's
/// clock_nanosleep through the sleeping function and main to `_start`, and each function's
/// total is its sleeps'; walked by frame pointers, every block stops in clock_nanosleep (the
/// nine blocks in one stack, naps and dozes alike).
#[test]
fn off_cpu_dwarf_unwinding_gives_whole_stacks_without_frame_pointers() {
    let _clock = alone();
    let prog = common::profile_program_without_frame_pointers()
        .display()
        .to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["profile", "--off-cpu", "--min-block", "1ms", "-f", "json"];
        args.extend(extra);
        args.extend(["--", &prog, "0", "5", "200", "4", "50"]);
        let out = tracer(&args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let json: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
        (
            json,
            format!("stdout:\n{stdout}\nstderr:\n{stderr}"),
            stderr,
        )
    };
    // (blocks, microseconds) in the stacks whose user frames end with `function` called from
    // main, down to the entry point; frames are innermost first.
    let rooted = |json: &serde_json::Value, function: &str| -> (u64, u64) {
        let tail = [
            function,
            "main",
            "__libc_start_call_main",
            "__libc_start_main",
            "_start",
        ];
        (json["stacks"].as_array().unwrap().iter())
            .filter(|s| {
                let names: Vec<&str> = (s["frames"].as_array().unwrap().iter())
                    .map(|f| f["name"].as_str().unwrap())
                    .collect();
                names.ends_with(&tail) && names.contains(&"do_nanosleep")
            })
            .map(|s| {
                (
                    s["count"].as_u64().unwrap(),
                    s["value"].as_u64().unwrap() / 1000,
                )
            })
            .fold((0, 0), |(n, us), (c, u)| (n + c, us + u))
    };
    let (json, context, stderr) = run(&["--call-graph", "dwarf"]);
    let ((naps, nap), (dozes, doze)) =
        (rooted(&json, "profile_nap"), rooted(&json, "profile_doze"));
    // The sleeps that blocked, as the workload counted them (voluntary switches): every one
    // is a block, none is lost (the summary's `0 lost`: no ring was full).
    let blocked: u64 = (stderr.lines())
        .find_map(|l| l.strip_prefix("blocked=")?.parse().ok())
        .expect("the workload's blocked= line");
    assert!(stderr.contains("; 0 lost\n"), "{context}");
    assert_eq!(naps + dozes, blocked, "{context}");
    let unwound = &json["accounting"]["unwound"];
    assert!(unwound["whole"].as_u64().unwrap() >= blocked, "{context}");
    if blocked == 9 {
        // Timed from the switch out to the switch back in: at least the sleep, and on the
        // VM tier's emulated CPUs the switch may come up to a millisecond after the timer
        // was armed (as `off_cpu_totals_are_the_time_slept_where_it_was_slept` says).
        let slack = match common::emulated(
            "off-CPU minimum",
            "each block may start up to 1 ms after its sleep's timer was armed",
        ) {
            true => 1_000,
            false => 0,
        };
        assert!(nap + naps * slack >= 1_000_000, "{context}");
        assert!(doze + dozes * slack >= 200_000, "{context}");
    }
    let ran_us = (stderr.split(" blocks in ").nth(1))
        .and_then(|rest| rest.split(" s,").next())
        .and_then(|s| s.parse::<f64>().ok())
        .map(|s| (s * 1e6) as u64)
        .expect("N blocks in S s");
    assert!(nap + doze <= ran_us + 10_000, "{context}");

    // By frame pointers the same blocks stop in libc: none reaches the sleeping function.
    let (json, context, _) = run(&[]);
    assert_eq!(rooted(&json, "profile_nap").0, 0, "{context}");
    assert_eq!(rooted(&json, "profile_doze").0, 0, "{context}");
}

/// Debian's python3, built without frame pointers: with `--call-graph dwarf,16384` the
/// interpreter's C stacks unwind through the evaluation loop to `Py_BytesMain` and the entry
/// point (walked by frame pointers, a sample had one named frame over `[unknown]`s). Python's
/// stacks are deep: the 8 KiB default leaves a few percent past the copy here.
#[test]
fn dwarf_unwinding_gives_whole_stacks_of_python() {
    let _clock = beside();
    if std::env::var_os("TRACER_EMULATED").is_some() {
        common::skip(
            "dwarf_unwinding_gives_whole_stacks_of_python: skipped in the VM tier: the kernel's \
             part (registers and stack copies) is the gzip test's, run there; unwinding is user \
             space, and python under TCG took 28 s",
        );
        return;
    }
    // Long enough that the start's deep import stacks (past the 16 KiB copy) stay a small
    // share: with a third of this work, a loaded CI machine saw 14 of 242 cut (5.8%).
    let script = "import json\n\
                  def f(n):\n    return sum(len(json.dumps({'a': i, 'b': [i] * 5})) for i in range(n))\n\
                  print(f(300000))";
    let out = tracer(&[
        "profile",
        "-F",
        "999",
        "--call-graph",
        "dwarf,16384",
        "-f",
        "folded",
        "--",
        "python3",
        "-c",
        script,
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines = folded(&stdout, "python3");
    // The interpreter's own samples: those in its evaluation loop.
    let evaluating: Vec<(String, u64)> = (lines.iter())
        .filter(|(stack, _)| stack.contains(";_PyEval_EvalFrameDefault"))
        .cloned()
        .collect();
    let total: u64 = evaluating.iter().map(|(_, n)| n).sum();
    let whole = through(&evaluating, ";Py_BytesMain");
    assert!(total >= 50, "{stdout}\n{stderr}");
    assert!(
        whole * 100 >= total * 95,
        "{whole} of {total}: {stdout}\n{stderr}"
    );
}

/// `-p PID` profiles the children the process starts from then on (as `tracer probe -p`,
/// `tracer stat -p` and perf do), `-i` the process alone: a shell that waits for a file the
/// test makes once tracer profiles it, then runs ./spin (80 million additions in spin_inner).
/// Followed, spin_inner's samples are the child's; with -i there are none, and every sample
/// is the shell's.
#[test]
fn a_process_is_profiled_into_its_children_unless_no_inherit() {
    let _clock = beside();
    common::require_root();
    if std::env::var_os("TRACER_EMULATED").is_some() {
        // 19 s of the 7.3 kernel's chain, which holds the CI budget: the following is the
        // tracked-task map's, which probe_cli's -p children test checks on 5.10 and 7.3.
        common::skip(
            "a_process_is_profiled_into_its_children_unless_no_inherit: skipped in the VM tier: \
             profile -p follows children through the tracked-task map, which \
             probe_cli checks on 5.10 and 7.3; the host tier runs this",
        );
        return;
    }
    let spin = common::spin_program().display().to_string();
    for (extra, followed) in [(None, true), (Some("-i"), false)] {
        let mut args = vec!["-F", "999", "-f", "json"];
        args.extend(extra);
        let (pid, out, stderr) =
            common::tracer_of_a_waiting_shell(&format!("{spin} 80"), "profile", &args);
        let context = format!("{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{context}");
        let profile: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one object");
        let stacks = profile["stacks"].as_array().unwrap();
        let in_spin: Vec<&serde_json::Value> = (stacks.iter())
            .filter(|s| (s["frames"].as_array().unwrap().iter()).any(|f| f["name"] == "spin_inner"))
            .collect();
        let samples: u64 = in_spin.iter().map(|s| s["value"].as_u64().unwrap()).sum();
        match followed {
            // 80 million additions take tens of ms even emulated: dozens of samples at 999 Hz.
            true => {
                assert!(samples >= 10, "{samples} samples in spin_inner: {context}");
                assert!(
                    in_spin
                        .iter()
                        .all(|s| s["pid"].as_u64() != pid.parse().ok()),
                    "{context}"
                );
            }
            false => {
                assert_eq!(samples, 0, "{context}");
                assert!(
                    stacks.iter().all(|s| s["pid"].as_u64() == pid.parse().ok()),
                    "{context}"
                );
            }
        }
    }
}

/// `-I` takes each interval's counts out of the map once reported, so a run of any length
/// never fills it: tests/workloads/stackmix.c sampled at 4,999 Hz for 8 s (about 40,000
/// samples over more distinct stacks than the count map's 10,240 keys). Every sample counted
/// is in an interval's report, none is "not counted (map full)"; without the draining, 1,510
/// of 39,966 were. Within an interval the counts are also taken out as the stack map fills
/// (held for the interval's report), looked at after every 32 new count cells: fewer than
/// 1.5% of the samples lose their stack to a taken bucket (0.5-0.7% measured; 2.3-3.3% when
/// the maps were looked at every 250 ms; 10.7% when they stayed for the whole interval).
#[test]
fn interval_reports_never_fill_the_count_map() {
    let Some((out, line, in_stacks)) = stackmix_for_8_s("interval_map_drain", &["-I", "2s"]) else {
        return;
    };
    // Reports every 2 s and the last one's remainder: at least two (each takes a while to
    // symbolize its thousands of deep stacks, so how many fit in 8 s varies).
    let reports = (text(&out.stdout).lines())
        .filter(|l| l.starts_with("--- ") && l.contains("interval "))
        .count();
    assert!(reports >= 2, "{reports} reports\n{line}");
    assert!(stacks_lost(&line) * 1000 < in_stacks * 15, "{line}");
}

/// The samples of a summary line `... N with a stack lost` (0 when not said).
fn stacks_lost(line: &str) -> u64 {
    said_count(line, " with a stack lost")
}

/// The N of a summary line's part `N<what>` (0 when not said).
fn said_count(line: &str, what: &str) -> u64 {
    line.split(", ")
        .find_map(|part| part.strip_suffix(what))
        .map_or(0, |n| n.parse::<u64>().unwrap())
}

/// tests/workloads/stackmix.c sampled at 4,999 Hz for 8 s with `args` (about 40,000 samples
/// over more distinct stacks than the count map's 10,240 keys), checked to have counted
/// every sample in a stack (but those said lost as their cell left the map) and none "not
/// counted (map full)": the run, its summary line and the samples in stacks. `None` (said) under emulation.
fn stackmix_for_8_s(name: &str, args: &[&str]) -> Option<(std::process::Output, String, u64)> {
    let _clock = beside();
    common::require_root();
    if common::emulated(
        name,
        "skipped: 40,000 samples at 4,999 Hz take minutes under TCG",
    ) {
        return None;
    }
    let program = common::c_workload("stackmix");
    let mut tracer_args = vec!["profile", "-F", "4999", "-d", "8"];
    tracer_args.extend(args);
    tracer_args.push("--");
    let out = common::Tracer::new(tracer_args)
        .command()
        .args([program.to_str().unwrap(), "100000000000", "0", "0"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = (stderr.lines())
        .find(|l| l.contains(" samples counted: "))
        .unwrap_or_else(|| panic!("{stderr}"))
        .to_string();
    let words: Vec<&str> = line.split_whitespace().collect();
    let (counted, in_stacks): (u64, u64) = (words[0].parse().unwrap(), words[3].parse().unwrap());
    // A sample that lands in a cell as the cell is taken out of the map is lost with it, and
    // counted: the summary says how many (1 of 38,958 in one run of CI; 0 in six runs here).
    let raced = said_count(&line, " lost as their cell left the count map");
    assert_eq!(counted, in_stacks + raced, "{line}");
    assert!(raced * 10_000 <= counted, "{line}");
    assert!(counted > 20_000, "{line}");
    assert!(line.contains(", 0 not counted (map full), "), "{line}");
    Some((out, line, in_stacks))
}

/// Without `-I`, the run folds: its counts leave the maps every 10 s, or as soon as the count
/// map is half full or 128 stacks are held (looked at after every 32 new count cells), and
/// are kept by tracer for the end. The same 40,000 samples over more distinct stacks than the
/// count map holds: every one is in the folded output, none "not counted (map full)" (1,496
/// were before), and fewer than 1.5% lost their stack to a taken bucket (0.5-0.7% measured;
/// 27% when the stack map was never emptied, 2.6-4.1% when looked at every 250 ms).
#[test]
fn a_run_without_intervals_never_fills_its_maps() {
    let Some((out, line, in_stacks)) = stackmix_for_8_s("fold_map_drain", &["-f", "folded"]) else {
        return;
    };
    let stdout = text(&out.stdout);
    let folded: u64 = (stdout.lines())
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(folded, in_stacks, "{line}");
    // A stack a fold took out of the stack map as a new cell began to count it is `[lost]`
    // (and counted so), never a line without frames.
    let frameless: Vec<&str> = (stdout.lines()).filter(|l| !l.contains(';')).collect();
    assert!(frameless.is_empty(), "{frameless:?}\n{line}");
    assert!(stacks_lost(&line) * 1000 < in_stacks * 15, "{line}");
}

/// `--call-graph dwarf` names tasks from the kernel's comm records, which come when a task is
/// named (its exec, a rename), else from /proc when its first sample is read. A task is
/// sampled after its exit record too (the rest of do_exit: `exit_mmap`, `put_files_struct`),
/// and those samples went under `[unknown]`, its name dropped at the record; so did the
/// samples of a task started before the run and gone before they were read. Names are now
/// kept a drain past the exit, and read for every task when the run starts.
#[test]
fn a_task_started_before_the_run_keeps_its_name_once_gone() {
    let _clock = alone();
    // Started before the run; counts for about 40 ms once told to, in the run, and exits.
    let mut spinner = Command::new("python3")
        .args([
            "-c",
            "import sys\nsys.stdin.read(1)\nx = 0\nfor i in range(100000):\n    x += i\n",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Its exec and start-up over before the run.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (child, mut stderr, banner) = tracer_started(&[
        "profile",
        "-a",
        "-d",
        "1",
        "-F",
        "999",
        "--call-graph",
        "dwarf",
        "-f",
        "json",
    ]);
    // Into the run, where the rings are drained as it goes.
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::io::Write::write_all(spinner.stdin.as_mut().unwrap(), b"g").unwrap();
    assert!(spinner.wait().unwrap().success());
    let out = child.wait_with_output().unwrap();
    let mut rest = banner;
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let pid = u64::from(spinner.id());
    let mut names = std::collections::BTreeMap::new();
    for stack in (json["stacks"].as_array().unwrap().iter()).filter(|s| s["pid"] == pid) {
        *names
            .entry(stack["comm"].as_str().unwrap().to_string())
            .or_insert(0) += stack["count"].as_u64().unwrap();
    }
    // About 40 samples, all under its name.
    let names: Vec<(String, u64)> = names.into_iter().collect();
    assert!(
        names.len() == 1 && names[0].0 == "python3" && names[0].1 >= 10,
        "{names:?}\n{rest}"
    );
}
