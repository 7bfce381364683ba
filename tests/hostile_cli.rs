//! Tier 4: hostile input (issue #27). Malformed specs, filters and files, unprivileged users and
//! dead processes: each run must end within a time and memory limit with the exit status and
//! the message a user should see, never a panic, a hang or memory running out.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{require_root, text, tracer_bin};

/// How long one run may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The address space one run may use: reading a device whole would pass it at once.
const MEMORY: u64 = 2 << 30;

/// One finished run.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the exit status and stderr's first line (`error: ...`), and no panic.
    fn fails(&self, code: i32, first_line: &str) -> &Run {
        assert_eq!(self.code, Some(code), "{}", self.stderr);
        assert_eq!(
            self.stderr.lines().next().unwrap_or(""),
            first_line,
            "{}",
            self.stderr
        );
        self
    }

    /// Asserts a `hint:` line among stderr's lines.
    fn hints(&self, hint: &str) -> &Run {
        assert!(
            self.stderr.lines().any(|l| l == format!("hint: {hint}")),
            "no 'hint: {hint}' in:\n{}",
            self.stderr
        );
        self
    }
}

/// Runs `program ARGS` with the time and memory limits; stdout and stderr go to files (a
/// full pipe must not look like a hang).
fn run_limited(program: &Path, args: &[&str], dir: &Path) -> Run {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(dir.join("stdout")).unwrap();
    let err = std::fs::File::create(dir.join("stderr")).unwrap();
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            match libc::setrlimit(libc::RLIMIT_AS, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut child = cmd.spawn().expect("run tracer");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
            panic!(
                "`tracer {}` hung ({TIMEOUT:?}); stderr:\n{stderr}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run {
        code: status.code(),
        stdout: text(&std::fs::read(dir.join("stdout")).unwrap()),
        stderr: text(&std::fs::read(dir.join("stderr")).unwrap()),
    };
    assert!(
        !run.stderr.contains("panicked") && run.code != Some(101),
        "`tracer {}` panicked:\n{}",
        args.join(" "),
        run.stderr
    );
    run
}

/// `tracer ARGS` as root, limited.
fn tracer(args: &[&str]) -> Run {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    run_limited(&tracer_bin(), args, dir.path())
}

/// A FIFO in `dir`: opening it for reading blocks until a writer comes.
fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("fifo");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    path
}

#[test]
fn devices_fifos_and_directories_are_refused_as_elf_files() {
    const HINT: &str = "name an ELF program or shared library, e.g. uprobe:/usr/bin/bash:readline";
    const ZERO: &str = "error: /dev/zero is a character device, not a regular file";
    tracer(&["list", "--binary", "/dev/zero"])
        .fails(2, ZERO)
        .hints(HINT);
    tracer(&["probe", "uprobe:/dev/zero:f", "-d", "1"]).fails(2, ZERO);
    tracer(&["probe", "uprobe:/dev/zero:0x1000", "-d", "1"]).fails(2, ZERO);
    tracer(&["stat", "-e", "uprobe:/dev/zero:f", "--", "true"]).fails(2, ZERO);
    tracer(&["latency", "uprobe:/dev/zero:f", "-d", "1"]).fails(2, ZERO);
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    tracer(&["probe", &format!("uprobe:{}:f", fifo.display()), "-d", "1"]).fails(
        2,
        &format!("error: {} is a FIFO, not a regular file", fifo.display()),
    );
    let d = dir.path().display();
    tracer(&["list", "--binary", &d.to_string()])
        .fails(2, &format!("error: {d} is a directory, not a regular file"));
}

#[test]
fn a_device_is_not_a_recording_and_a_corrupt_header_allocates_nothing() {
    tracer(&["report", "/dev/zero"])
        .fails(2, "error: /dev/zero is a character device, not a recording")
        .hints("give a file written by `tracer record -o FILE`, or pipe a recording into `tracer report -`");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tracer");
    let mut bytes = tracer::tracefile::MAGIC.to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&file, &bytes).unwrap();
    tracer(&["report", file.to_str().unwrap()]).fails(
        1,
        &format!(
            "error: cannot read {}: the tracer header is corrupt: it claims 4294967295 bytes (16 to 4096 are valid)",
            file.display()
        ),
    );
}
