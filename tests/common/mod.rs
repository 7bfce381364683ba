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
        let mut child = cmd
            .args(args)
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

/// File offset of `symbol` in the workload program (for uprobes).
pub fn testprog_offset(symbol: &str) -> u64 {
    tracer::kernel::elf::symbol_offset(&testprog(), symbol).expect("symbol in tracer-testprog")
}

/// Runs the `tracer` binary (tier-2 and up tests are root) and collects its output.
pub fn tracer(args: &[&str]) -> std::process::Output {
    require_root();
    Command::new(tracer_bin())
        .args(args)
        .output()
        .expect("run tracer")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
