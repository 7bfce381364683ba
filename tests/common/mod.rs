//! Helpers shared by the integration tests: the workload program, privilege and feature gates.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use tracer::kernel::features::{Feature, Status};

/// `target/<profile>/`, where cargo puts the workspace's binaries.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .to_path_buf()
}

/// A file or directory a test made for itself (beside the binaries, where it can be executed),
/// removed when the test ends, passed or not.
pub struct RemovedAtEnd(pub PathBuf);

impl std::ops::Deref for RemovedAtEnd {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for RemovedAtEnd {
    fn drop(&mut self) {
        let _ = match self.0.is_dir() {
            true => std::fs::remove_dir_all(&self.0),
            false => std::fs::remove_file(&self.0),
        };
    }
}

/// The deterministic workload program (workspace member `testprog`).
pub fn testprog() -> PathBuf {
    let path = bin_dir().join("tracer-testprog");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p testprog` (cargo xtask test does)",
        path.display()
    );
    path
}

/// The `tracer` binary under test.
pub fn tracer_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tracer"))
}

/// Tier-2 tests open real perf events and load BPF: they need root.
pub fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "host-kernel tests need root (perf events and BPF): run `sudo cargo xtask test`"
    );
}

/// True when `feature` works here; otherwise prints why the test is skipped. Features named in
/// `TRACER_REQUIRE` (comma-separated labels, set by the VM runner) must exist: a skip there
/// would hide a broken test, so it fails instead.
pub fn has(feature: Feature, test: &str) -> bool {
    require_root();
    match feature.check() {
        Status::Available { .. } => true,
        Status::Unavailable { reason, .. } => {
            let required = std::env::var("TRACER_REQUIRE").unwrap_or_default();
            if required.split(',').any(|f| f == feature.label()) {
                panic!(
                    "{test}: {} is required here (TRACER_REQUIRE) but unavailable: {reason}",
                    feature.label()
                );
            }
            // Straight to stderr: libtest captures eprintln! of passing tests, and a skip must show.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: {} unavailable on this kernel: {reason}",
                feature.label()
            );
            false
        }
    }
}

/// Prints why a test (or part of one) is skipped, straight to stderr: libtest captures
/// `eprintln!` of passing tests, and a skip must show.
pub fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "{why}");
}

/// `go tool pprof ARGS` (Debian's golang-go, which `cargo xtask setup` installs): its stdout,
/// or `None`, saying why, where Go is not installed. Its cache and fetched profiles go to a
/// directory of their own, not the user's home.
pub fn go_pprof(test: &str, args: &[&str]) -> Option<String> {
    go_pprof_in(test, None, args).map(|(stdout, _)| stdout)
}

/// [`go_pprof`] run in `dir`: its stdout and stderr (a fetch says where from on stderr).
pub fn go_pprof_in(
    test: &str,
    dir: Option<&std::path::Path>,
    args: &[&str],
) -> Option<(String, String)> {
    if !std::path::Path::new("/usr/bin/go").exists() {
        skip(&format!(
            "SKIPPED {test}'s go tool pprof checks: /usr/bin/go not installed (cargo xtask setup installs golang-go)"
        ));
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let mut go = Command::new("/usr/bin/go");
    go.args(["tool", "pprof"])
        .args(args)
        .env("HOME", home.path())
        .env("PPROF_TMPDIR", home.path())
        .env("GOCACHE", home.path().join("cache"));
    if let Some(dir) = dir {
        go.current_dir(dir);
    }
    let out = go.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "go tool pprof {args:?}: {stderr}");
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), stderr))
}

/// `go tool pprof -traces`' samples: (value, comm label, frames innermost first), in its order.
pub fn pprof_traces(traces: &str) -> Vec<(u64, String, Vec<String>)> {
    let mut out: Vec<(u64, String, Vec<String>)> = Vec::new();
    let mut comm = String::new();
    for line in traces.lines() {
        let trimmed = line.trim();
        if line.starts_with("-----") {
            comm.clear();
        } else if let Some(value) = trimmed.strip_prefix("comm:") {
            comm = value.trim().to_string();
        } else if trimmed.is_empty()
            || !line.starts_with(' ')
            || trimmed
                .split_whitespace()
                .next()
                .is_some_and(|w| w.ends_with(':'))
        {
            // Another label (`pid:`, `cgroup:`), or a header.
            continue;
        } else if line.starts_with("             ") {
            if let Some(last) = out.last_mut() {
                last.2.push(trimmed.to_string());
            }
        } else if let Some((value, frame)) = trimmed.split_once(char::is_whitespace) {
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("a count in {line:?}"));
            out.push((value, comm.clone(), vec![frame.trim().to_string()]));
        }
    }
    out
}

/// True inside the VM tier's guests (TRACER_EMULATED, set by the VM runner), whose two CPUs
/// are emulated by one host thread taking turns: a vCPU can stand still for milliseconds
/// while the other runs, and a timer interrupt lands late. A test that loosens a timing
/// check there says which and why (`what`), on stderr, so the run shows it.
pub fn emulated(test: &str, what: &str) -> bool {
    let on = std::env::var_os("TRACER_EMULATED").is_some();
    if on {
        let _ = writeln!(std::io::stderr(), "EMULATED {test}: {what}");
    }
    on
}

/// A workload child started in `--batch` mode: each `run_batch` lets it do one batch.
pub struct Workload {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
}

impl Workload {
    /// Starts `tracer-testprog --batch K [--cpu C] ARGS...`; it waits for the first go byte.
    pub fn batched(batch: u64, cpu: Option<u32>, args: &[&str]) -> Workload {
        let mut cmd = Command::new(testprog());
        cmd.arg("--batch").arg(batch.to_string());
        if let Some(cpu) = cpu {
            cmd.arg("--cpu").arg(cpu.to_string());
        }
        cmd.args(args);
        Workload::start(cmd)
    }

    /// Starts any program that speaks the batch protocol (ready byte, then go/done per batch,
    /// exit when stdin closes), such as the C workload of [`chain_program`].
    pub fn start(mut cmd: Command) -> Workload {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn tracer-testprog");
        let stdin = child.stdin.take();
        let mut stdout = child.stdout.take().expect("piped stdout");
        // The child says it is ready once started: the dynamic loader's opens are over.
        let mut ready = [0u8; 1];
        stdout.read_exact(&mut ready).expect("workload started");
        Workload {
            child,
            stdin,
            stdout,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets the child run one batch and waits until it has finished it.
    pub fn run_batch(&mut self) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(b"g")
            .and_then(|()| stdin.flush())
            .expect("send go");
        let mut done = [0u8; 1];
        self.stdout
            .read_exact(&mut done)
            .expect("child finished its batch");
    }

    /// Waits for exit and asserts success.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for child");
        assert!(status.success(), "workload failed: {status}");
    }
}

/// Compiles `source` into the test binaries' directory as `name`, with DWARF and frame
/// pointers as a user would build a program to trace, plus `extra` flags.
fn build_c(name: &str, source: &std::path::Path, extra: &[&str]) -> PathBuf {
    let out = bin_dir().join(name);
    // Built already, from this source as it is now (by another suite, or by the host tier
    // for the VM tier, where gcc under emulation takes seconds per file): each name is one
    // source with fixed flags.
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let inputs = std::iter::once(source).chain(extra.iter().map(std::path::Path::new));
    let written = inputs.filter(|p| p.is_file()).map(modified).max().flatten();
    if let (Some(built), Some(written)) = (modified(&out), written) {
        if built >= written {
            return out;
        }
    }
    // Build beside the final name and rename: test binaries may race for it.
    let tmp = bin_dir().join(format!("{name}.{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-g", "-O0", "-fno-omit-frame-pointer"])
        .args(extra)
        .arg("-o")
        .arg(&tmp)
        .arg(source)
        .status()
        .expect("run cc: the C workload needs a C compiler (apt-get install gcc)");
    assert!(status.success(), "cc failed on {}", source.display());
    std::fs::rename(&tmp, &out).expect("move the built workload in place");
    out
}

/// The C workload `tests/workloads/chain.c` (main -> chain_a -> chain_b -> chain_target),
/// compiled once per test binary.
pub fn chain_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build_c("tracer-chain", &chain_source_path(), &[]))
        .clone()
}

/// tests/workloads/chain.c as distributions build programs: optimised (`-O2`), without frame
/// pointers (`-fomit-frame-pointer`), with its calls kept calls (`-fno-optimize-sibling-calls`,
/// else `return chain_b(i)` is a jump and chain_a leaves the stack).
pub fn chain_program_without_frame_pointers() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls"];
    BUILT
        .get_or_init(|| build_c("tracer-chain-nofp", &chain_source_path(), &flags))
        .clone()
}

/// The C workload `tests/workloads/deep.c` (a chain deeper than a probe's copy of the stack's
/// top), built without frame pointers as `chain_program_without_frame_pointers` is.
#[allow(dead_code)]
pub fn deep_program_without_frame_pointers() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/deep.c");
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls"];
    BUILT
        .get_or_init(|| build_c("tracer-deep-nofp", &source, &flags))
        .clone()
}

/// The C workload `tests/workloads/timeline.c` (two threads on two CPUs doing steps in a
/// known order), compiled once per test binary.
pub fn timeline_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/timeline.c");
    BUILT
        .get_or_init(|| build_c("tracer-timeline", &source, &["-pthread"]))
        .clone()
}

/// The C workload `tests/workloads/latency.c` (outliers behind known call sites, requests
/// handed between two threads), compiled once per test binary.
pub fn latency_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build_c("tracer-latency", &latency_source_path(), &["-pthread"]))
        .clone()
}

/// The C workload `tests/workloads/usdt.c` with `usdt_guarded.c` (USDT probes with known
/// arguments, one behind a semaphore), compiled once per test binary. Needs <sys/sdt.h>
/// (Debian's systemtap-sdt-dev, which `cargo xtask setup` installs).
#[allow(dead_code)]
pub fn usdt_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads");
    let header = Command::new("sh")
        .args([
            "-c",
            "echo '#include <sys/sdt.h>' | cc -E -x c - -o /dev/null",
        ])
        .status()
        .expect("run cc");
    assert!(
        header.success(),
        "the USDT workload needs <sys/sdt.h>: apt-get install systemtap-sdt-dev (cargo xtask setup does)"
    );
    let guarded = dir.join("usdt_guarded.c").display().to_string();
    BUILT
        .get_or_init(|| build_c("tracer-usdt", &dir.join("usdt.c"), &[&guarded]))
        .clone()
}

/// The C workload `tests/workloads/syscalls.c` (a fixed sequence of system calls), compiled
/// once per test binary.
#[allow(dead_code)]
pub fn syscalls_program() -> PathBuf {
    c_workload("syscalls")
}

/// The C workload `tests/workloads/NAME.c`, compiled once per test binary as `tracer-NAME`.
pub fn c_workload(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<std::collections::BTreeMap<String, PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeMap::new());
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/workloads")
        .join(format!("{name}.c"));
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    (built.entry(name.to_string()))
        .or_insert_with(|| build_c(&format!("tracer-{name}"), &source, &[]))
        .clone()
}

/// `tests/workloads/latency.c`.
pub fn latency_source_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/latency.c")
}

/// `tests/workloads/chain.c`.
pub fn chain_source_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/chain.c")
}

/// The line of `tests/workloads/chain.c` that contains `needle` (1-based).
/// The (symbol, line) of each user frame of an event's `stack`.
pub fn user_frames(event: &serde_json::Value) -> Vec<(String, Option<u64>)> {
    event["stack"]
        .as_array()
        .unwrap_or_else(|| panic!("no stack in {event}"))
        .iter()
        .filter(|f| f["space"] == "user")
        .map(|f| {
            (
                f["symbol"].as_str().unwrap_or("[unknown]").to_string(),
                f["line"].as_u64(),
            )
        })
        .collect()
}

/// The chain as the stack must show it, innermost first, with the line of each call site.
pub fn expected_chain(innermost_line: u32) -> Vec<(String, Option<u64>)> {
    vec![
        ("chain_target".into(), Some(innermost_line as u64)),
        (
            "chain_b".into(),
            Some(chain_line("return chain_target(i,") as u64),
        ),
        (
            "chain_a".into(),
            Some(chain_line("return chain_b(i);") as u64),
        ),
        ("main".into(), Some(chain_line("sum += chain_a(i)") as u64)),
    ]
}

pub fn chain_line(needle: &str) -> u32 {
    let text = std::fs::read_to_string(chain_source_path()).expect("read chain.c");
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("'{needle}' not in chain.c"))
}

/// Spawns `tracer ARGS` with piped stdout and stderr and waits for its banner (the first
/// stderr line that is not a `note:`, printed once everything is attached); returns the child
/// and the stderr text read so far, ending with the banner.
pub fn tracer_started(
    args: &[&str],
) -> (Child, std::io::BufReader<std::process::ChildStderr>, String) {
    Tracer::new(args).started()
}

/// File offset of `symbol` in the workload program (for uprobes).
pub fn testprog_offset(symbol: &str) -> u64 {
    tracer::kernel::elf::symbol_offset(&testprog(), symbol).expect("symbol in tracer-testprog")
}

/// Link-time address of `symbol` in the workload program.
pub fn testprog_symbol(symbol: &str) -> u64 {
    let data = std::fs::read(testprog()).expect("read tracer-testprog");
    tracer::kernel::elf::symbol_address(&data, &testprog(), symbol)
        .expect("symbol in tracer-testprog")
}

/// The running kernel's (major, minor) version, from /proc/sys/kernel/osrelease.
#[allow(dead_code)]
pub fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>());
    let mut next = || {
        numbers
            .next()
            .and_then(Result::ok)
            .expect("a version number")
    };
    (next(), next())
}

/// Runs `tracer ARGS` as root and collects its output ([`Tracer`]).
pub fn tracer(args: &[&str]) -> std::process::Output {
    Tracer::new(args).output()
}

/// tracer as a test starts it. Every suite starts tracer through this one builder, so that
/// what differs between two runs (privilege, environment, directory, stdio) is said where the
/// test says it, not in a local helper of the same name that behaves otherwise
/// (`tests/layers.rs` checks that no other file builds a command of the binary).
pub struct Tracer {
    command: Command,
}

impl Tracer {
    /// `tracer ARGS` as root (tier 2 and up: perf events and BPF); stdio as `Command`'s.
    pub fn new<I, S>(args: I) -> Tracer
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        require_root();
        Tracer::anyone(args)
    }

    /// `tracer ARGS` by whoever runs the test (usage errors, `--help`, a refusal to a user).
    pub fn anyone<I, S>(args: I) -> Tracer
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new(tracer_bin());
        command.args(args);
        Tracer { command }
    }

    /// Without cargo's `LD_LIBRARY_PATH`, as a user's shell starts it: the loader of a traced
    /// command then makes the opens it makes outside `cargo test`.
    pub fn without_cargo_env(mut self) -> Tracer {
        self.command.env_remove("LD_LIBRARY_PATH");
        self
    }

    /// Started in `dir`.
    pub fn dir(mut self, dir: &std::path::Path) -> Tracer {
        self.command.current_dir(dir);
        self
    }

    /// The command, for what the builder does not say (stdio, signals, other variables).
    pub fn command(self) -> Command {
        self.command
    }

    /// Runs it to its end and collects its output.
    pub fn output(mut self) -> std::process::Output {
        self.command.output().expect("run tracer")
    }

    /// Runs it to its end, asserts that it exited 0 (its stderr in the message), and gives
    /// its output.
    pub fn success(self) -> std::process::Output {
        let out = self.output();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out
    }

    /// Spawns it with stdout and stderr piped.
    pub fn spawn(mut self) -> Child {
        (self.command.stdout(Stdio::piped()).stderr(Stdio::piped()))
            .spawn()
            .expect("run tracer")
    }

    /// Spawns it (piped) and waits for its banner: the first stderr line that is not a
    /// `note:`, printed once everything is attached. Gives the child and the stderr text read
    /// so far, ending with the banner.
    pub fn started(self) -> (Child, std::io::BufReader<std::process::ChildStderr>, String) {
        use std::io::BufRead;
        let mut child = self.spawn();
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped stderr"));
        // `note:` lines (e.g. about arguments) may come before the banner; they are kept in
        // front.
        let mut banner = String::new();
        loop {
            let start = banner.len();
            stderr.read_line(&mut banner).expect("tracer's banner");
            if !banner[start..].starts_with("note: ") {
                break;
            }
        }
        (child, stderr, banner)
    }
}

/// How long a `tracer latency` outlier line says its call took (`... took 4.56ms, ended in
/// ...` or `... took 4.56ms args (...)`), in nanoseconds.
pub fn took_ns(line: &str) -> Option<u64> {
    let took = line.split_once(" took ")?.1.split_whitespace().next()?;
    tracer::units::parse_duration_ns(took.trim_end_matches(',')).ok()
}

/// What `tracer-testprog sleeps 1` says of its 35 sleeps on stderr (`slept NS DELAY BLOCKS`:
/// 20 of 4.5 ms, 10 of 17.5 ms, 5 of 70 ms, in that order): how many of each class blocked
/// (BLOCKS above 0) and did not wait for a CPU meanwhile (DELAY 0). A sleep that waited was
/// preempted on its way to block, so from the switch that blocked it to its wakeup it may
/// measure under its length (under wakeuptime's 3 ms); one that never blocked (its timer
/// expired first, the vCPU held by the hypervisor) has no switch to measure from: the sleeps
/// a switch-to-wakeup pair shows are at least these.
pub fn undelayed_sleeps(stderr: &str) -> [usize; 3] {
    let sleeps: Vec<(u64, u64)> = (stderr.lines())
        .filter_map(|l| {
            let mut words = l.strip_prefix("slept ")?.split_whitespace().skip(1);
            Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .collect();
    assert_eq!(
        sleeps.len(),
        35,
        "testprog's report of its sleeps:\n{stderr}"
    );
    let classes = [0; 20].into_iter().chain([1; 10]).chain([2; 5]);
    let mut undelayed = [0; 3];
    for (class, (delay, blocks)) in classes.zip(&sleeps) {
        undelayed[class] += (*delay == 0 && *blocks > 0) as usize;
    }
    undelayed
}

/// Runs `program ARGS` (a test's workload) to its end, and asserts that it succeeded.
pub fn run_ok(program: &str, args: &[&str]) {
    let status =
        (Command::new(program).args(args).status()).unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

/// The text histograms of `tracer latency --by` (or of several functions) headed `WORD NAME`:
/// each group's NAME and its count of calls (`count N, ...`), in the order printed.
pub fn group_counts<'a>(stdout: &'a str, word: &str) -> Vec<(&'a str, u64)> {
    let heading = format!("\n{word} ");
    (stdout.split(heading.as_str()).skip(1))
        .filter_map(|group| {
            let (name, rest) = group.split_once('\n')?;
            let count = rest.lines().find_map(|l| l.strip_prefix("count "))?;
            Some((name, count.split(',').next()?.parse().ok()?))
        })
        .collect()
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// JSON Lines output, parsed.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Runs the chain workload for `calls` calls under `tracer ARGS -p PID` (which must stop by
/// itself after `-c`), returning tracer's output and its whole stderr.
pub fn traced_chain(calls: u32, args: &[&str]) -> (std::process::Output, String) {
    traced_chain_of(&chain_program(), calls, args)
}

/// [`traced_chain`] of another build of the chain workload (`program`).
pub fn traced_chain_of(
    program: &std::path::Path,
    calls: u32,
    args: &[&str],
) -> (std::process::Output, String) {
    let mut cmd = Command::new(program);
    cmd.arg(calls.to_string());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["-p", &pid]);
    let (child, mut stderr, banner) = tracer_started(&full);
    let last = banner.lines().last().unwrap_or("");
    assert!(
        last.starts_with("Tracing") || last.starts_with("Watching"),
        "{banner}"
    );
    work.run_batch();
    let out = child.wait_with_output().expect("tracer ends after -c");
    let mut rest = banner;
    stderr.read_to_string(&mut rest).unwrap();
    work.finish();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    (out, rest)
}

/// `tracer latency --from FROM --to TO --slower-than 1ns -s user -f json`: every call an
/// outlier, streamed with its user stack; the caller adds whose calls.
#[allow(dead_code)]
pub fn chain_latency_args<'a>(from: &'a str, to: &'a str) -> Vec<&'a str> {
    vec![
        "latency",
        "--from",
        from,
        "--to",
        to,
        "--slower-than",
        "1ns",
        "-s",
        "user",
        "-f",
        "json",
    ]
}

/// `tracer latency --from chain_a --to chain_target --slower-than 1ns -s user -p PID` over
/// `calls` calls of the chain workload, stopped with SIGINT: every call is an outlier, its stack
/// taken at the end, a uprobe on chain_target's first instruction (where the frame-pointer walk
/// skips the direct caller, chain_b, unless the kernel or tracer puts it back). Returns the
/// outlier lines.
#[allow(dead_code)]
pub fn chain_latency_outliers(calls: u32) -> Vec<serde_json::Value> {
    chain_latency_outliers_of(&chain_program(), calls)
}

/// [`chain_latency_outliers`] of another build of the chain workload (`program`).
pub fn chain_latency_outliers_of(program: &std::path::Path, calls: u32) -> Vec<serde_json::Value> {
    let chain = program.display().to_string();
    let mut cmd = Command::new(program);
    cmd.arg(calls.to_string());
    let mut work = Workload::start(cmd);
    let pid = work.pid().to_string();
    let (from, to) = (
        format!("uprobe:{chain}:chain_a"),
        format!("uprobe:{chain}:chain_target"),
    );
    let mut args = chain_latency_args(&from, &to);
    args.extend(["-p", &pid]);
    let (child, mut stderr, banner) = tracer_started(&args);
    work.run_batch();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("tracer ends on SIGINT");
    let mut rest = banner;
    stderr.read_to_string(&mut rest).unwrap();
    work.finish();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    // The outliers, then the histogram.
    let lines = json_lines(&out.stdout);
    let (outliers, histograms): (Vec<_>, Vec<_>) =
        lines.into_iter().partition(|l| l["type"] == "outlier");
    assert_eq!(histograms.len(), 1, "{histograms:?}\n{rest}");
    assert_eq!(outliers.len(), calls as usize, "{outliers:?}\n{rest}");
    outliers
}

/// `tracer probe --debug-bpf` with a `--comm` that matches nothing: the workload's hits are all
/// dropped, and the programs say so, one `bpf:` line each naming the probe and the filter.
/// Returns those lines and the run's stderr.
#[allow(dead_code)]
pub fn debug_bpf_drops(spec: &str, workload: &[&str]) -> (Vec<String>, String) {
    let prog = testprog().display().to_string();
    let out = Tracer::new([
        "probe",
        "--debug-bpf",
        "--comm",
        "nothere",
        spec,
        "--",
        &prog,
    ])
    .command()
    .args(workload)
    .output()
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        text(&out.stdout).lines().all(|l| !l.starts_with("0.")),
        "nothing passes: {}",
        text(&out.stdout)
    );
    let lines = (stderr.lines())
        .filter(|l| l.starts_with("bpf: "))
        .map(String::from)
        .collect();
    (lines, stderr)
}

/// The C workload `tests/workloads/spin.c` (main -> spin_outer -> spin_inner, a loop with no
/// calls), compiled once per test binary.
pub fn spin_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/spin.c");
    BUILT
        .get_or_init(|| build_c("tracer-spin", &source, &[]))
        .clone()
}

/// The C workload `tests/workloads/profile.c` (known CPU shares in known call chains, known
/// sleeps), compiled once per test binary.
pub fn profile_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/profile.c");
    BUILT
        .get_or_init(|| build_c("tracer-profile", &source, &[]))
        .clone()
}

/// The C workload `tests/workloads/clock.c` (reads the clock for MS milliseconds in
/// `clock_reader`), built as distributions build programs: optimized, without frame pointers.
#[allow(dead_code)]
pub fn clock_program_without_frame_pointers() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/clock.c");
    let flags = ["-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls"];
    BUILT
        .get_or_init(|| build_c("tracer-clock-nofp", &source, &flags))
        .clone()
}

/// tests/workloads/profile.c as distributions build programs (`-O2 -fomit-frame-pointer`, calls
/// kept calls), sleeping through libc's nanosleep (`-DLIBC_SLEEP`).
#[allow(dead_code)]
pub fn profile_program_without_frame_pointers() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads/profile.c");
    let flags = [
        "-O2",
        "-fomit-frame-pointer",
        "-fno-optimize-sibling-calls",
        "-DLIBC_SLEEP",
    ];
    BUILT
        .get_or_init(|| build_c("tracer-profile-nofp", &source, &flags))
        .clone()
}

/// A trace with strace's split calls put back together: a thread's `NAME(ARGS,  <unfinished
/// ...>` and its later `<... NAME resumed>REST` become one line, `NAME(ARGS, REST`.
pub fn joined(trace: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut open: std::collections::HashMap<String, usize> = Default::default();
    for line in trace.lines() {
        // strace -f's `PID ` in a file, tracer's `[pid N comm] `, or none.
        let split = match line.strip_prefix("[pid ") {
            Some(rest) => rest.find("] ").map(|at| "[pid ".len() + at + 2),
            None => line
                .find(' ')
                .filter(|&at| line[..at].chars().all(|c| c.is_ascii_digit())),
        };
        let (prefix, body) = line.split_at(split.unwrap_or(0));
        let body = body.trim_start();
        let thread = prefix
            .trim()
            .trim_start_matches("[pid ")
            .split(' ')
            .next()
            .unwrap();
        if let Some(call) = body.strip_suffix(" <unfinished ...>") {
            open.insert(thread.to_string(), out.len());
            out.push(format!("{prefix} {call}"));
        } else if let Some(rest) = body.strip_prefix("<... ") {
            let rest = rest.split_once(" resumed>").map_or(rest, |(_, r)| r);
            match open.remove(thread) {
                Some(at) => out[at].push_str(rest),
                None => out.push(line.to_string()),
            }
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

/// The cgroup2 hierarchy's root: where it is mounted, or a mount made for the test (the VM
/// guests' init mounts none). `None`, said, where cgroup2 cannot be mounted.
pub fn cgroup2_root() -> Option<(std::path::PathBuf, Option<tempfile::TempDir>)> {
    if let Some(root) = tracer::kernel::cgroups::mount() {
        return Some((root, None));
    }
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mount")
        .args(["-t", "cgroup2", "none"])
        .arg(dir.path())
        .status()
        .unwrap();
    if !status.success() {
        skip("SKIPPED the container tests: no cgroup2 mount, and none could be made");
        return None;
    }
    Some((dir.path().to_path_buf(), Some(dir)))
}

/// Made cgroups, removed (innermost first) with the test; a mount made for it, unmounted.
pub struct Cgroups {
    pub dirs: Vec<std::path::PathBuf>,
    pub mounted: Option<tempfile::TempDir>,
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for dir in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
        if let Some(dir) = &self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(dir.path())
                .status();
        }
    }
}

/// `len` bytes of hex digits in 64-character lines from a xorshift generator seeded with
/// `seed`: text that compressors work hard at, the same in every run.
pub fn hex_text(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 65 {
                64 => b'\n',
                _ => b"0123456789abcdef"[(x & 15) as usize],
            }
        })
        .collect()
}

/// `tracer SUBCOMMAND -p SHELL ARGS` of a shell that waits, once tracer's banner is out, for a
/// file the test makes, then runs `then` (a fixed pause was too short under load): the
/// shell's pid, tracer's output and its whole stderr. stderr is read on a thread of its own
/// while stdout is read, so that output larger than a pipe holds cannot stall tracer.
#[allow(dead_code)]
pub fn tracer_of_a_waiting_shell(
    then: &str,
    subcommand: &str,
    args: &[&str],
) -> (String, std::process::Output, String) {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.01; done; {then}",
        go.display()
    );
    require_root();
    let mut work = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let pid = work.id().to_string();
    let mut child = Tracer::new([subcommand, "-p", &pid])
        .command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    stderr.read_line(&mut banner).unwrap();
    std::fs::write(&go, b"").unwrap();
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        rest
    });
    let out = child.wait_with_output().unwrap();
    let rest = rest.join().unwrap();
    let _ = work.wait();
    (pid, out, banner + &rest)
}

/// Whether strace is missing (said: the side-by-side test is skipped).
pub fn strace_missing() -> bool {
    let missing = Command::new("strace").arg("-V").output().is_err();
    if missing {
        eprintln!("skipped: strace is not installed (cargo xtask setup installs it)");
    }
    missing
}

/// `strace -q FLAGS -o OUT COMMAND...`, its stdout and stderr to /dev/null: its status.
pub fn strace_into(
    out: &std::path::Path,
    flags: &[&str],
    command: &[&str],
) -> std::process::ExitStatus {
    Command::new("strace")
        .arg("-q")
        .args(flags)
        .arg("-o")
        .arg(out)
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
}

/// The frames of `-k` lines (` > FILE(FUNCTION+0xOFF) [0xOFFSET]`), each call's as
/// (file, offset in it): what strace and tracer must agree on. The function names may differ
/// where a symbol has aliases (strace reads libc's dynamic symbols; tracer its debug file,
/// libc6-dbg, so `__libc_start_call_main` where strace says `__libc_init_first`).
pub fn stack_frames(trace: &str) -> Vec<Vec<(String, String)>> {
    let mut calls: Vec<Vec<(String, String)>> = Vec::new();
    for line in trace.lines() {
        match line.strip_prefix(" > ") {
            Some(frame) => {
                let file = frame.split('(').next().unwrap_or_default().to_string();
                let offset = frame.rsplit('[').next().unwrap_or_default();
                let offset = offset.trim_end_matches(']').to_string();
                calls
                    .last_mut()
                    .expect("a frame under a call")
                    .push((file, offset));
            }
            None if line.contains(" = ") => calls.push(Vec::new()),
            None => {}
        }
    }
    calls
}

/// A program deployed over itself while a long run probes it: a copy of the workload program
/// (`app`) that [`Deploy::replace_during`] replaces at its path as a deploy or a package
/// upgrade does (a new file renamed over the old), with calls before, in the new file, and in
/// a process still running the old one.
#[allow(dead_code)]
pub struct Deploy {
    pub app: PathBuf,
    dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl Deploy {
    pub fn new() -> Deploy {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("followed-app");
        std::fs::copy(testprog(), &app).unwrap();
        Deploy { app, dir }
    }

    /// `tracer_testprog_target` of `app` called `calls` times, in a process of its own.
    fn run(&self, calls: &str) {
        let status = Command::new(&self.app)
            .args(["call", calls])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// With a tracer started on `app` (its stderr): 3 calls, then a process of the file that
    /// waits; the file replaced; tracer's stderr read until it has said `notes` times that the
    /// file was replaced (those lines returned); then 5 calls in the new file and 4 in the
    /// waiting process of the old one: 12 in all.
    pub fn replace_during(
        &self,
        stderr: &mut std::io::BufReader<std::process::ChildStderr>,
        notes: usize,
    ) -> Vec<String> {
        use std::io::BufRead;
        self.run("3");
        let mut old = Command::new(&self.app)
            .args(["--wait", "call", "4"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let staged = self.dir.path().join("followed-app.new");
        std::fs::copy(testprog(), &staged).unwrap();
        std::fs::rename(&staged, &self.app).unwrap();
        let mut said = Vec::new();
        while said.len() < notes {
            let mut line = String::new();
            assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "notes: {said:?}");
            if line.contains("was replaced") {
                said.push(line);
            }
        }
        self.run("5");
        old.stdin.take().unwrap().write_all(b"x").unwrap();
        assert!(old.wait().unwrap().success());
        said
    }
}
