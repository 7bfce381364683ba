//! Tier 4: USDT probes through the real binary: a C workload's probes (tests/workloads/usdt.c)
//! with known arguments in every operand form, one behind a semaphore, and Python's
//! `function__entry`, each hit exactly once with its arguments decoded.

mod common;

use std::process::Output;

use common::{has, text, tracer, usdt_program};
use tracer::kernel::features::Feature;

/// The ARGS of each event line of `probe` on stdout, in order.
fn hits(out: &Output, probe: &str) -> Vec<String> {
    let marker = format!(" {probe} ");
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(&marker).map(|(_, args)| args.to_string()))
        .collect()
}

/// The USDT workload, copied for one test: a probe traced by one test raises its semaphore
/// in every process of that file (uprobes are armed by inode, and a `-- COMMAND` run arms
/// them system-wide, filtering in BPF), so tests that run side by side use their own files.
fn prog_for(test: &str) -> (String, common::RemovedAtEnd) {
    let copy = common::bin_dir().join(format!("tracer-usdt-{test}.{}", std::process::id()));
    std::fs::copy(usdt_program(), &copy).expect("copy the USDT workload");
    (copy.display().to_string(), common::RemovedAtEnd(copy))
}

#[test]
fn usdt_arguments_are_decoded_from_their_specs() {
    if !has(
        Feature::UprobePmu,
        "usdt_arguments_are_decoded_from_their_specs",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("decoded");
    let tick = format!("usdt:{prog}:tracer:tick");
    let mixed = format!("usdt:{prog}:mixed(arg0, arg1, str(arg2))");
    let global = format!("usdt:{prog}:tracer:global");
    let out = tracer(&["probe", &tick, &mixed, &global, "--", &prog]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // -4@-4(%rbp) and -4@%eax: memory at a register plus a displacement, and a register.
    let expected: Vec<String> = (0..5).map(|i| format!("arg0={i} arg1={}", -i)).collect();
    assert_eq!(hits(&out, &tick), expected);
    // -4@$42, -8@%rax and a string at 8@-32(%rbp), named without its provider.
    let expected: Vec<String> = (1..=3)
        .map(|i| format!("arg0=42 arg1={i} arg2=\"chain\""))
        .collect();
    assert_eq!(hits(&out, &format!("usdt:{prog}:tracer:mixed")), expected);
    // -8@counter(%rip) and -2@6+small(%rip): globals read where the file is loaded (PIE).
    assert_eq!(hits(&out, &global), ["arg0=3 arg1=-4"]);
    // The guarded probe was not traced: its semaphore stayed 0, its code never ran.
    assert!(
        text(&out.stdout).contains("guarded 0\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_semaphore_guarded_probe_fires_only_while_traced() {
    if !has(
        Feature::UprobePmu,
        "a_semaphore_guarded_probe_fires_only_while_traced",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("semaphore");
    let alone = std::process::Command::new(&prog)
        .arg("7")
        .output()
        .expect("run the USDT workload");
    assert_eq!(text(&alone.stdout), "guarded 0\n");
    let guarded = format!("usdt:{prog}:tracer:guarded");
    let out = tracer(&["probe", &guarded, "--", &prog, "7"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected: Vec<String> = (0..7).map(|i| format!("arg0={i}")).collect();
    assert_eq!(hits(&out, &guarded), expected);
    assert!(
        text(&out.stdout).contains("guarded 7\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_probe_compiled_in_twice_is_two_sites() {
    if !has(Feature::UprobePmu, "a_probe_compiled_in_twice_is_two_sites") {
        return;
    }
    let (prog, _copy) = prog_for("sites");
    let out = tracer(&["probe", &format!("usdt:{prog}:twice"), "--", &prog]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let site = |n: u32| format!("usdt:{prog}:tracer:twice#{n}");
    assert_eq!(hits(&out, &site(0)), ["arg0=1"]);
    assert_eq!(hits(&out, &site(1)), ["arg0=2"]);
    assert!(
        text(&out.stderr).starts_with(&format!(
            "note: 'usdt:{prog}:twice' matches 2 probe sites\n"
        )),
        "{}",
        text(&out.stderr)
    );
    let out = tracer(&["probe", &site(1), "--", &prog]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(hits(&out, &site(0)), Vec::<String>::new());
    assert_eq!(hits(&out, &site(1)), ["arg0=2"]);
    // A command that attaches to one site is told to pick.
    let out = tracer(&[
        "latency",
        "--from",
        &format!("usdt:{prog}:twice"),
        "--to",
        &site(1),
        "--",
        &prog,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: usdt:{prog}:twice names 2 probe sites; this command attaches to one\n\
             hint: pick one: usdt:{prog}:twice#0, usdt:{prog}:twice#1\n"
        )
    );
}

#[test]
fn usdt_arguments_are_counted_in_the_kernel() {
    if !has(
        Feature::UprobePmu,
        "usdt_arguments_are_counted_in_the_kernel",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("counted");
    let tick = format!("usdt:{prog}:tracer:tick");
    let out = tracer(&["probe", "--count-by", "arg1", &tick, "--", &prog, "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut rows: Vec<(i64, u64)> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("ARG1"))
        .skip(1)
        .filter_map(|l| {
            let mut cells = l.split_whitespace();
            Some((cells.next()?.parse().ok()?, cells.next()?.parse().ok()?))
        })
        .collect();
    rows.sort();
    assert_eq!(rows, [(-3, 1), (-2, 1), (-1, 1), (0, 1)], "{stdout}");
}

#[test]
fn list_shows_each_probe_with_its_argument_specs() {
    let (prog, _copy) = prog_for("list");
    let out = tracer(&["list", &format!("usdt:{prog}")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The semaphore's address is the linker's to choose: read it from the note.
    let data = std::fs::read(&prog).expect("read the workload");
    let notes = tracer::kernel::usdt::notes(&data, std::path::Path::new(&prog)).expect("notes");
    let semaphore = notes
        .iter()
        .find(|n| n.name == "guarded")
        .expect("guarded")
        .semaphore;
    assert_eq!(
        text(&out.stdout),
        format!(
            "usdt:{prog}:tracer:global\n    s64 arg0 (-8@counter(%rip))\n    s16 arg1 (-2@6+small(%rip))\n\
             usdt:{prog}:tracer:guarded\n    s32 arg0 (-4@-4(%rbp))\n    semaphore {semaphore:#x} (raised while traced)\n\
             usdt:{prog}:tracer:mixed\n    s32 arg0 (-4@$42)\n    s64 arg1 (-8@%rax)\n    u64 arg2 (8@-32(%rbp))\n\
             usdt:{prog}:tracer:tick\n    s32 arg0 (-4@-4(%rbp))\n    s32 arg1 (-4@%eax)\n\
             usdt:{prog}:tracer:twice#0\n    s32 arg0 (-4@-40(%rbp))\n\
             usdt:{prog}:tracer:twice#1\n    s32 arg0 (-4@-36(%rbp))\n"
        )
    );
}

#[test]
fn unknown_probes_and_binaries_without_notes_are_explained() {
    let (prog, _copy) = prog_for("unknown");
    let out = tracer(&["probe", &format!("usdt:{prog}:tracer:tik"), "--", &prog]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: no USDT probe 'tracer:tik' in {prog}\n\
             hint: did you mean: tracer:tick\n\
             hint: its probes: tracer:global, tracer:guarded, tracer:mixed, tracer:tick, tracer:twice\n"
        )
    );
    let plain = common::testprog().display().to_string();
    let out = tracer(&["probe", &format!("usdt:{plain}:tick"), "--", &plain]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {plain} has no USDT probes (no .note.stapsdt section)\n\
             hint: USDT probes are compiled in with <sys/sdt.h> (DTRACE_PROBE, STAP_PROBE); Debian's python3 has them\n\
             hint: probe its functions instead: tracer list --binary {plain}\n"
        )
    );
}

/// Debian's python3, if it has USDT probes (other builds may not).
fn python() -> Option<String> {
    let path = std::fs::canonicalize("/usr/bin/python3").ok()?;
    let data = std::fs::read(&path).ok()?;
    let notes = tracer::kernel::usdt::notes(&data, &path).ok()?;
    notes
        .iter()
        .any(|n| n.provider == "python" && n.name == "function__entry")
        .then(|| path.display().to_string())
}

#[test]
fn python_function_entry_names_the_file_function_and_line() {
    let test = "python_function_entry_names_the_file_function_and_line";
    if !has(Feature::UprobePmu, test) {
        return;
    }
    let Some(python) = python() else {
        // Straight to stderr: libtest captures eprintln! of passing tests, and a skip must show.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("SKIPPED {test}: /usr/bin/python3 has no python:function__entry USDT probe (not Debian's build)\n").as_bytes(),
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("ticks.py");
    // A generator's frame starts in the interpreter loop, where Python 3.11 fires
    // function__entry (calls of plain functions from Python code are inlined there and fire
    // nothing, for bpftrace too).
    std::fs::write(
        &script,
        "def tick(n):\n    yield n * 2\n\nfor i in range(7):\n    next(tick(i))\n",
    )
    .expect("write the script");
    let script = script.display().to_string();
    let probe = format!("usdt:{python}:python:function__entry");
    // The file and the function are both read (two strings of the hit), and
    // the line: (char *filename, char *funcname, int lineno).
    let out = tracer(&["probe", &probe, "--", &python, &script]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ticks: Vec<String> = (hits(&out, &probe).into_iter())
        .filter(|h| h.contains("arg1=\"tick\""))
        .collect();
    assert_eq!(
        ticks,
        vec![format!("arg0=\"{script}\" arg1=\"tick\" arg2=2"); 7]
    );
    // The interpreter's own frames come from its frozen modules, none from the script.
    let from_script = hits(&out, &probe)
        .iter()
        .filter(|h| h.starts_with(&format!("arg0=\"{script}\"")))
        .count();
    assert_eq!(from_script, 7);
}

/// tests/workloads/usdt_lib.c built as a shared library and a program linked to it, in a
/// directory of this test binary's, removed when the test ends.
fn library_program() -> (String, String, common::RemovedAtEnd) {
    let source =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/usdt_lib.c");
    let dir = common::bin_dir().join(format!("usdt-lib.{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the library's directory");
    let lib = dir.join("libtracer-usdt.so");
    let prog = dir.join("usdt-lib-prog");
    let cc = |args: &[&str]| {
        let status = std::process::Command::new("cc")
            .args(args)
            .status()
            .expect("run cc");
        assert!(status.success(), "cc {args:?}");
    };
    let (src, lib_s, prog_s) = (
        source.display().to_string(),
        lib.display().to_string(),
        prog.display().to_string(),
    );
    cc(&["-g", "-O0", "-shared", "-fPIC", "-o", &lib_s, &src]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    cc(&[
        "-g",
        "-O0",
        "-DMAIN",
        "-o",
        &prog_s,
        &src,
        &libdir,
        "-ltracer-usdt",
        &rpath,
    ]);
    (lib_s, prog_s, common::RemovedAtEnd(dir))
}

#[test]
fn a_library_probe_in_a_running_process_raises_its_semaphore_only_while_traced() {
    use std::io::{BufRead, Read, Write};
    let test = "a_library_probe_in_a_running_process_raises_its_semaphore_only_while_traced";
    if !has(Feature::UprobePmu, test) {
        return;
    }
    let (lib, prog, _dir) = library_program();
    let mut child = std::process::Command::new(&prog)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the library workload");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ready");
    assert_eq!(line, "ready\n");
    let mut batch = |line: &mut String| {
        line.clear();
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .expect("send go");
        stdout.read_line(line).expect("the batch's count");
        line.clone()
    };
    assert_eq!(batch(&mut line), "guarded 0\n", "untraced");
    let pid = child.id().to_string();
    // Named by its path: the probe is in the library, armed in this process only.
    let spec = format!("usdt:{lib}:tick");
    let (tracer, mut stderr, banner) =
        common::tracer_started(&["probe", "-p", &pid, "-c", "5", &spec]);
    assert!(banner.contains("Tracing"), "{banner}");
    assert_eq!(batch(&mut line), "guarded 5\n", "traced");
    let out = tracer.wait_with_output().expect("tracer ends after -c 5");
    let mut rest = banner;
    stderr.read_to_string(&mut rest).expect("stderr");
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let expected: Vec<String> = (0..5).map(|i| format!("arg0={i}")).collect();
    assert_eq!(hits(&out, &format!("usdt:{lib}:tracer_lib:tick")), expected);
    // Detached: the kernel lowered the semaphore again.
    assert_eq!(batch(&mut line), "guarded 0\n", "after tracing");
    drop(stdin);
    assert!(child.wait().expect("wait").success());
}

#[test]
fn usdt_latency_pairs_starts_and_ends_by_an_argument() {
    if !has(
        Feature::UprobePmu,
        "usdt_latency_pairs_starts_and_ends_by_an_argument",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("latency");
    let from = format!("usdt:{prog}:tracer:tick");
    let to = format!("usdt:{prog}:tracer:guarded");
    let out = tracer(&[
        "latency",
        "--from",
        &from,
        "--to",
        &to,
        "--key",
        "arg0",
        "--slower-than",
        "1ns",
        "--",
        &prog,
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // tick(i) pairs with guarded(i): each start's arguments are the note's (sized and signed
    // as its argument specs say), not registers.
    let stdout = text(&out.stdout);
    let starts: Vec<&str> = (stdout.lines())
        .filter_map(|l| l.split_once(" args (")?.1.strip_suffix(')'))
        .collect();
    let expected: Vec<String> = (0..5i32)
        .map(|i| format!("arg0={i}, arg1={}", -i))
        .collect();
    assert_eq!(starts, expected, "{stdout}");
    assert!(stderr.contains("\n5 calls measured"), "{stderr}");
}

/// The USDT argument reads are verified once per argument, not once per path through the
/// arguments before it.
#[test]
fn usdt_argument_reads_cost_the_verifier_little() {
    use tracer::bpf::{Bpf, Sizing, SlotKind};
    use tracer_common::{SlotConfig, SLOT_USDT, USES_STREAM, USES_STRINGS, USES_USDT};
    if !has(Feature::Bpf, "usdt_argument_reads_cost_the_verifier_little") {
        return;
    }
    let verified = |uses, flags| {
        let mut bpf = Bpf::load_with(Sizing {
            uses,
            ..Sizing::default()
        })
        .unwrap();
        let config = SlotConfig {
            flags,
            ..Default::default()
        };
        let slot = bpf.take_slot(SlotKind::Probe, config).unwrap();
        bpf.verified_instructions(&slot).unwrap()
    };
    let Some(plain) = verified(USES_STREAM | USES_STRINGS, 0) else {
        // Straight to stderr: libtest captures the output of passing tests.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED usdt_argument_reads_cost_the_verifier_little: this kernel does not say \
             how many instructions its verifier walked (bpf_prog_info.verified_insns, 5.16+)"
        );
        return;
    };
    let usdt = verified(USES_STREAM | USES_STRINGS | USES_USDT, SLOT_USDT).unwrap();
    println!("verifier: {plain} instructions for a uprobe slot, {usdt} with USDT arguments");
    // 1,694 and 4,886 here (kernel 6.18); 38,827 when each argument's paths were walked once
    // per path through the arguments before it (50 ms of start-up instead of 6).
    assert!(usdt < 5 * plain, "{usdt} !< 5 * {plain}");
}

#[test]
fn stat_counts_usdt_probes_and_raises_their_semaphores() {
    if !has(
        Feature::UprobePmu,
        "stat_counts_usdt_probes_and_raises_their_semaphores",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("stat");
    let guarded = format!("usdt:{prog}:tracer:guarded");
    let tick = format!("usdt:{prog}:tracer:tick");
    let out = tracer(&[
        "stat",
        "-x,",
        "-e",
        &format!("{guarded},{tick}"),
        "--",
        &prog,
        "7",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "guarded 7\n");
    // perf stat's CSV: value,unit,event,...
    let counts: Vec<(String, String)> = stderr
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            Some((cells.get(2)?.to_string(), cells.first()?.to_string()))
        })
        .filter(|(event, _)| event.starts_with("usdt:"))
        .collect();
    assert_eq!(
        counts,
        [(guarded, "7".to_string()), (tick, "7".to_string())],
        "{stderr}"
    );
}

#[test]
fn a_global_argument_of_a_stripped_binary_is_said_and_shown_raw() {
    if !has(
        Feature::UprobePmu,
        "a_global_argument_of_a_stripped_binary_is_said_and_shown_raw",
    ) {
        return;
    }
    let (prog, _copy) = prog_for("stripped");
    let status = std::process::Command::new("strip")
        .arg(&prog)
        .status()
        .expect("run strip (binutils)");
    assert!(status.success());
    let global = format!("usdt:{prog}:tracer:global");
    let out = tracer(&["probe", &global, "--", &prog]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // `counter` and `small` were in .symtab only: said once each, read as nothing.
    for symbol in ["counter", "small"] {
        let note = format!(
            "note: {global}: no symbol '{symbol}' in {prog} (stripped?): an argument read at it prints as 0x0\n"
        );
        assert_eq!(stderr.matches(&note).count(), 1, "{stderr}");
    }
    assert_eq!(hits(&out, &global), ["arg0=0x0 arg1=0x0"]);
}
