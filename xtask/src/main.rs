//! Project tasks: `setup` a fresh machine, `test` every tier, `run` the tool, `vm` a command
//! in a distribution kernel.

mod attach;
mod bench;
mod dist;
mod fuzz;
mod peers;
mod profile;
mod screen;
mod serve;
mod setup;
mod soak;
mod startup;
mod streaming;
mod symbolize;
mod trampoline;
mod uprobe;
mod vm;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  setup                      install what builds and tests need (idempotent)
  test [--kernels LIST]      set up, then run every test tier: unit, host kernel, CLI, fuzz, VM
                             (VM kernels: 5.10, 6.1, 6.12 and 7.3, two at a time; --kernels
                             6.1,7.3 runs only those)
  run [-- ARGS...]           set up, build in release mode, run `tracer ARGS` (default: features)
  dist                       build target/dist/tracer (static, stripped) and the Debian package
                             target/dist/tracer_VERSION_amd64.deb
  vm KERNEL -- CMD...        run CMD as root inside a VM booting a Debian kernel
                             (KERNEL: 5.10, 6.1, 6.12, 7.3)
  bench [NAME...]            build in release mode and print benchmark numbers (soak, ten
                             minutes, only when named)";

fn main() {
    STARTED.get_or_init(std::time::Instant::now);
    if let Err(err) = run() {
        eprintln!("xtask: error: {err:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = args
        .split_first()
        .map_or(("help", &[][..]), |(c, r)| (c.as_str(), r));
    match command {
        "setup" => setup::all(),
        "test" => test(rest),
        "run" => run_tracer(rest),
        "vm" => vm_command(rest),
        "dist" => {
            setup::all()?;
            dist::run().map(|_| ())
        }
        "bench" => bench::run(rest),
        // Inside a VM, for `bench fentry_hit` (not for users).
        "guest-bench" => trampoline::guest(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown command '{other}'\n{USAGE}"),
    }
}

/// The workspace root (the parent of xtask/).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs a command, failing with its exit status when it fails.
pub fn run_cmd(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn test(args: &[String]) -> Result<()> {
    let kernels = match args {
        [] => vm::ALL_KERNELS
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>(),
        [flag, list] if flag == "--kernels" => {
            let kernels: Vec<String> = list.split(',').map(str::to_string).collect();
            if let Some(bad) = kernels
                .iter()
                .find(|k| !vm::ALL_KERNELS.contains(&k.as_str()))
            {
                bail!(
                    "unknown kernel '{bad}': choose from {}\n{USAGE}",
                    vm::ALL_KERNELS.join(",")
                );
            }
            kernels
        }
        _ => bail!("unknown test options '{}'\n{USAGE}", args.join(" ")),
    };
    setup::all()?;
    // First, so that tests/dist_vm.rs checks the static binary on every kernel and installs
    // the package on the host (TRACER_DIST).
    let dist = dist::run()?;
    section("tier 1, 2 and 4: unit, host-kernel and CLI tests");
    // The tests run the workload binary, which `cargo test` builds only as a test harness.
    // tracer itself is built by `cargo test`, for the integration tests: a `cargo build` of it
    // would be a second debug build of tracer, aya and inferno, since the dev-dependencies
    // (jsonschema) add features to serde_json and ahash (135 s of the 1,860 s run here, 2026-12-03).
    run_cmd(cargo().args(["build", "-p", "testprog", "--bins"]))?;
    // Debian's libdebuginfod-common sets DEBUGINFOD_URLS for login shells: tests talk to no
    // server but the local one tests/profile_cli.rs starts, and set it themselves.
    run_cmd(
        cargo()
            .arg("test")
            .env("TRACER_DIST", &dist)
            .env_remove("DEBUGINFOD_URLS"),
    )?;
    // The ring drain bench's records are built by hand: checked once, untimed. Like the VM
    // tier's test binaries, built for the whole workspace as `cargo test` was: `-p tracer`
    // unifies other features and built tracer a third time (112 s here, 2026-12-03).
    run_cmd(cargo().args(["test", "--bench", "ring_drain"]))?;

    section("fuzz: record parser and ring reader");
    fuzz::run(fuzz::DEFAULT_SECONDS)?;

    section("tier 3: VM tests on Debian kernels");
    let binaries = VM_SUITES
        .iter()
        .map(|name| Ok((*name, test_binary(name)?)))
        .collect::<Result<Vec<_>>>()?;
    let suites = |kernel: &str| -> Vec<&str> {
        let own = KERNEL_SUITES.iter().find(|(k, _)| *k == kernel);
        (VM_SUITES.iter().copied())
            .filter(|s| EVERY_KERNEL.contains(s) || own.is_none_or(|(_, own)| own.contains(s)))
            .collect()
    };
    // TRACER_REQUIRE turns a skip into a failure: inside the VM kprobes must exist.
    // and on the kernels whose BPF has what tracer's trampoline programs need (5.19+), so
    // must fentry and fexit.
    let cmd = |kernel: &str| {
        let required = match vm::has_trampolines(kernel) {
            true => "kprobes,kprobe_events,fentry,fexit",
            false => "kprobes,kprobe_events",
        };
        // Every suite runs, one after another, without the tests the host tier alone runs
        // ([`HOST_ONLY_TESTS`]); the VM's exit status is 1 if any failed.
        let mut script = String::from("rc=0; ");
        for (name, binary) in (binaries.iter()).filter(|(name, _)| suites(kernel).contains(name)) {
            script.push_str(&format!("'{}' --test-threads=1", binary.display()));
            let skips = HOST_ONLY_TESTS.iter().filter(|(suite, _)| suite == name);
            for (_, test) in skips.flat_map(|(suite, tests)| tests.iter().map(move |t| (suite, t)))
            {
                script.push_str(&format!(" --skip {test}"));
            }
            script.push_str(" || rc=1; ");
        }
        script.push_str("exit $rc");
        vec![
            "env".to_string(),
            format!("TRACER_REQUIRE={required}"),
            format!("TRACER_DIST={}", dist.display()),
            "sh".to_string(),
            "-c".to_string(),
            script,
        ]
    };
    // Two VMs at a time: each is one single-threaded TCG process, so two keep both cores
    // busy and four kernels take the time two took one after another. Their consoles are
    // told apart by a `[KERNEL SECONDS]` prefix.
    // The longest runs first (popped from the end): the full suite on the edge kernels,
    // then the shorter one on the middle kernels, one after each.
    let mut order = kernels.clone();
    order.sort_by_key(|k| suites(k).len());
    let queue = std::sync::Mutex::new(order);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..VM_PARALLEL.min(kernels.len()) {
            scope.spawn(|| loop {
                let Some(kernel) = queue.lock().expect("queue").pop() else {
                    break;
                };
                println!("--- kernel {kernel}: {}", suites(&kernel).join(", "));
                let failure = match vm::run(&kernel, &cmd(&kernel)) {
                    Ok(0) => None,
                    Ok(code) => Some(format!("exit status {code}")),
                    Err(err) => Some(format!("{err:#}")),
                };
                match failure {
                    None => println!("--- kernel {kernel}: passed"),
                    Some(why) => {
                        println!("--- kernel {kernel}: FAILED: {why}");
                        failed.lock().expect("failed").push(kernel);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().expect("failed");
    let passed = kernels.len() - failed.len();
    println!("vm: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        bail!("VM tests failed on kernel(s): {}", failed.join(", "));
    }
    Ok(())
}

/// The test suites the VM tier runs, each on the kernels [`EVERY_KERNEL`] and
/// [`KERNEL_SUITES`] give it: the kernel-function tests, the perf layer's own (events, rings,
/// breakpoints, the uprobe PMU), and the host suites of probes, stacks, strings, arguments,
/// counting, filters, recording, USDT, `tracer trace` (and its storm, alone), latency,
/// profiles and watchpoints. Where emulated
/// CPUs skew a timing (sub-ms CPU shares, sleeps that overshoot), the test says so on stderr
/// (`EMULATED ...`, from `common::emulated`) and checks what still holds.
const VM_SUITES: [&str; 17] = [
    "vm_kprobe",
    "dist_vm",
    "perf_host",
    "perf_host_more",
    "stack_cli",
    "probe_cli",
    "strings_cli",
    "args_cli",
    "count_cli",
    "filter_cli",
    "record_cli",
    "usdt_cli",
    "trace_cli",
    "storm_cli",
    "latency_cli",
    "profile_cli",
    "watch_cli",
];

/// The suites every kernel runs: kernel functions (kprobes, fentry/fexit, what the tier is
/// for), the static binary, and the perf layer's own events, rings and breakpoints.
const EVERY_KERNEL: [&str; 3] = ["vm_kprobe", "dist_vm", "perf_host"];

/// The other suites of [`VM_SUITES`], each on the kernels where it checks something the host
/// (6.18) cannot: the program variants (`USES` flags) of probes, strings, arguments, filters,
/// counting and `tracer trace` face the strictest verifier on 5.10; 7.3 (PREEMPT_LAZY) runs
/// probes, `tracer trace` and its storm, stacks and watchpoints, where preemption of the
/// programs showed; the middle kernels share out recordings, USDT, latency and profiles. A
/// kernel not listed runs every suite. The tier took 481-509 s per edge kernel with every
/// suite on both (2026-12-02), then 1,315-1,650 s on a host (and a CI host) 2.8 times slower
/// at emulation, with gcc taking 9 s per workload in the guest: over CI's 30 minutes. As
/// shared out here, 5.10 took 848 s and 7.3 704 s (2026-12-03), then 510 s and 432 s once the
/// trace entry program stopped verifying paths a run cannot take and the debug binary lost
/// its full debug info. A cold run here (2026-12-03, 22:00) took 286 s on 5.10, 241 s on 7.3,
/// 161 s on 6.1 and 166 s on 6.12, of which `vm_kprobe` 57 to 85 s each; stacks are not run
/// a third time on 6.12 (15 s), which has no stack path of its own.
const KERNEL_SUITES: [(&str, &[&str]); 4] = [
    (
        "5.10",
        &[
            "stack_cli",
            "probe_cli",
            "strings_cli",
            "args_cli",
            "filter_cli",
            "count_cli",
            "trace_cli",
        ],
    ),
    (
        "7.3",
        &[
            "perf_host_more",
            "stack_cli",
            "probe_cli",
            "trace_cli",
            "storm_cli",
            "watch_cli",
        ],
    ),
    ("6.1", &["record_cli", "usdt_cli", "latency_cli"]),
    ("6.12", &["profile_cli"]),
];

/// Tests the VM tier skips (`--skip`, a substring of the name): side-by-side comparisons
/// with strace and perf trace, and the text of usage errors, which check user space that the
/// host tier runs over the same programs; under emulation each took 12-39 s.
const HOST_ONLY_TESTS: [(&str, &[&str]); 1] = [(
    "trace_cli",
    &[
        "strace_agrees",
        "perf_trace_agrees",
        "agree_with_strace",
        "dash_p_keeps",
        "bad_input_gets",
        "trace_without_whom",
        "json_has_names",
        "a_count_of_nothing",
        "dash_big_c",
        "credentials_and_prctl",
    ],
)];

/// VMs booted at once by the VM tier.
const VM_PARALLEL: usize = 2;

/// Builds an integration test binary and returns its path (cargo's JSON artifact message).
fn test_binary(name: &str) -> Result<PathBuf> {
    let output = cargo()
        .args(["test", "--no-run", "--test", name, "--message-format=json"])
        .output()
        .context("cannot run cargo test --no-run")?;
    if !output.status.success() {
        bail!(
            "building test {name} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter(|l| {
            l.contains("\"reason\":\"compiler-artifact\"")
                && l.contains(&format!("\"name\":\"{name}\""))
        })
        .find_map(|l| {
            let key = "\"executable\":\"";
            let start = l.find(key)? + key.len();
            let end = l[start..].find('"')?;
            Some(PathBuf::from(&l[start..start + end]))
        })
        .with_context(|| format!("cargo did not report the executable of test {name}"))
}

fn run_tracer(args: &[String]) -> Result<()> {
    let args: Vec<String> = match args.first().map(String::as_str) {
        Some("--") => args[1..].to_vec(),
        _ => args.to_vec(),
    };
    let args = if args.is_empty() {
        vec!["features".to_string()]
    } else {
        args
    };
    setup::all()?;
    run_cmd(cargo().args(["build", "--release", "-p", "tracer"]))?;
    let status = Command::new(root().join("target/release/tracer"))
        .args(&args)
        .status()
        .context("cannot start target/release/tracer")?;
    std::process::exit(status.code().unwrap_or(1));
}

fn vm_command(args: &[String]) -> Result<()> {
    let Some((kernel, rest)) = args.split_first() else {
        bail!("which kernel?\n{USAGE}");
    };
    let cmd: Vec<String> = match rest.first().map(String::as_str) {
        Some("--") => rest[1..].to_vec(),
        _ => rest.to_vec(),
    };
    if cmd.is_empty() {
        bail!("no command to run in the VM\n{USAGE}");
    }
    setup::all()?;
    let code = vm::run(kernel, &cmd)?;
    std::process::exit(code);
}

/// The start of xtask's run, which [`section`] measures from.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// A heading, with the seconds since xtask started: a long run's log says where its time went.
pub fn section(title: &str) {
    let since = STARTED.get_or_init(std::time::Instant::now).elapsed();
    println!("\n=== [{:.0} s] {title}", since.as_secs_f64());
}
