//! Tier 4: tracer is invisible to the command it launches (issue #42). Every subcommand that
//! takes `-- COMMAND` starts it with the signal dispositions, signal mask, resource limits,
//! environment, umask, working directory and open files that its caller gave tracer, which is
//! what a shell would have given the command; and a closed stdout or stderr ends a run
//! quietly, never with a panic.

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{require_root, text};

/// How long one run may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Each subcommand that launches a command, with arguments that run on this kernel (no
/// kprobes needed). `watch` watches a global of Debian's bash (`EOF_Reached`, in its dynamic
/// symbol table), since the command is bash.
fn launchers(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let file = |name: &str| dir.join(name).display().to_string();
    let getppid = ["syscalls:sys_enter_getppid", "syscalls:sys_exit_getppid"];
    [
        ("probe", vec![getppid[0].to_string()]),
        ("trace", vec!["-o".into(), file("trace.txt")]),
        ("stat", vec!["-e".into(), "task-clock".into()]),
        (
            "latency",
            vec![
                "--from".into(),
                getppid[0].into(),
                "--to".into(),
                getppid[1].into(),
            ],
        ),
        ("profile", vec![]),
        (
            "record",
            vec![
                "-o".into(),
                file("run.tracer"),
                "-P".into(),
                getppid[0].into(),
            ],
        ),
        ("watch", vec!["EOF_Reached".into()]),
    ]
    .into_iter()
    .map(|(name, args)| {
        let mut all = vec![name.to_string()];
        all.extend(args);
        (name, all)
    })
    .collect()
}

/// What the command reports of itself into the file `$1`: its signal lines and umask (read
/// by bash itself before it forks anything: around a fork it blocks signals for a moment), its
/// limits, environment, working directory and open files (fd 1 is the report itself), and the
/// exit status of `yes` in `yes | head -1` (141, killed by SIGPIPE, when SIGPIPE is not
/// ignored; 1, with `yes: standard output: Broken pipe`, when it is).
const REPORT: &str = r#"exec > "$1"
while read -r key value; do
  case $key in SigIgn:|SigBlk:|Umask:) echo "$key $value";; esac
done < /proc/$$/status
cat /proc/$$/limits
env | grep -v '^_=' | sort
pwd
for f in /proc/$$/fd/*; do
  n=${f##*/}; [ "$n" = 1 ] && continue
  echo "fd $n $(readlink "$f" | sed 's/\[.*\]//')"
done
yes | head -1 > /dev/null; echo "yes: ${PIPESTATUS[0]}"
"#;

/// The caller's state, set on the process that runs tracer (or, for the reference, the
/// command itself): SIGHUP and SIGUSR2 ignored (as `nohup` and daemons leave them), SIGPIPE
/// not, SIGUSR1 blocked, umask 027, at most 200 open files (tracer raises its own limit when
/// it attaches many probes), a variable of its own and a directory of its own.
fn as_the_caller_left_it(cmd: &mut Command, dir: &Path) {
    cmd.current_dir(dir)
        .env("TRACER_LAUNCH_CHECK", "the caller's")
        .stdin(Stdio::null());
    // SAFETY: signal, sigprocmask, umask, getrlimit and setrlimit are async-signal-safe and
    // change only the child's own state, on structs of this frame.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::signal(libc::SIGUSR2, libc::SIG_IGN);
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            libc::umask(0o027);
            let mut files = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut files);
            files.rlim_cur = 200;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &files) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Waits for `child` at most [`TIMEOUT`]; its exit code (`None`: killed by a signal).
fn finish(mut child: std::process::Child, what: &str) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code();
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            panic!("{what} ran for {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn report_command(report: &Path) -> Vec<String> {
    ["bash", "-c", REPORT, "bash"]
        .into_iter()
        .map(String::from)
        .chain([report.display().to_string()])
        .collect()
}

#[test]
fn every_launching_subcommand_starts_the_command_as_its_caller_would() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference");
    let command = report_command(&reference);
    let mut bare = Command::new(&command[0]);
    bare.args(&command[1..]);
    as_the_caller_left_it(&mut bare, dir.path());
    // Its stdout and stderr pipes, as tracer's below: the command inherits those.
    let status = bare.output().expect("run bash").status;
    assert!(status.success(), "the report failed: {status}");
    let expected = std::fs::read_to_string(&reference).unwrap();
    // The reference itself holds what the caller set: the check below cannot pass for a
    // state nobody set.
    let line = |key: &str| {
        (expected.lines())
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in:\n{expected}"))
            .to_string()
    };
    let mask = |key: &str| u64::from_str_radix(line(key).split_whitespace().nth(1).unwrap(), 16);
    let bit = |signal: i32| 1u64 << (signal - 1);
    let ignored = mask("SigIgn:").unwrap();
    assert_eq!(
        ignored & (bit(libc::SIGHUP) | bit(libc::SIGUSR2) | bit(libc::SIGPIPE)),
        bit(libc::SIGHUP) | bit(libc::SIGUSR2),
        "{expected}"
    );
    assert_ne!(mask("SigBlk:").unwrap() & bit(libc::SIGUSR1), 0);
    assert_eq!(line("Umask:"), "Umask: 0027");
    assert!(line("Max open files").split_whitespace().nth(3) == Some("200"));
    assert!(expected.contains("\nTRACER_LAUNCH_CHECK=the caller's\n"));
    assert!(expected.contains(&format!("\n{}\n", dir.path().display())));
    assert!(expected.ends_with("yes: 141\n"), "{expected}");

    for (name, args) in launchers(dir.path()) {
        let report = dir.path().join(format!("{name}.report"));
        let mut traced = common::Tracer::new(&args).command();
        traced
            .arg("--")
            .args(report_command(&report))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        as_the_caller_left_it(&mut traced, dir.path());
        let output = traced.output().expect("run tracer");
        assert_eq!(
            output.status.code(),
            Some(0),
            "tracer {name}:\n{}",
            text(&output.stderr)
        );
        let seen = std::fs::read_to_string(&report).unwrap_or_else(|e| {
            panic!("tracer {name}: no report ({e}):\n{}", text(&output.stderr))
        });
        assert_eq!(seen, expected, "the command under `tracer {name}`");
    }
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-int array it is given. Close-on-exec: the other test's
    // commands, spawned meanwhile, must not inherit it.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe returned two new fds that nothing else owns.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

/// `tracer ... 2>&1 | head` once head has gone: every launching subcommand, and those that
/// only print, end with status 0 (CONTRIBUTING.md: a closed pipe is a normal end), not 101 with a
/// panic; likewise when only stderr is closed.
#[test]
fn a_closed_stdout_or_stderr_ends_every_subcommand_quietly() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let command = ["bash", "-c", "for i in 1 2 3; do :; done"];
    let mut runs: Vec<(String, Vec<String>)> = launchers(dir.path())
        .into_iter()
        .map(|(name, mut args)| {
            args.push("--".into());
            args.extend(command.map(String::from));
            (name.to_string(), args)
        })
        .collect();
    for args in [
        &["features"][..],
        &["list", "syscalls:*"],
        &["probe", "--help"],
        &["probe", "syscalls:sys_enter_nope"],
    ] {
        runs.push((args.join(" "), args.iter().map(|a| a.to_string()).collect()));
    }
    for (name, args) in &runs {
        for stdout_closed in [true, false] {
            let stderr = closed_pipe();
            let stdout = match stdout_closed {
                true => Stdio::from(stderr.try_clone().unwrap()),
                false => Stdio::null(),
            };
            let child = common::Tracer::new(args)
                .command()
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(Stdio::from(stderr))
                .spawn()
                .expect("run tracer");
            let code = finish(child, name);
            // A usage error keeps its status; every other run ends as it would have.
            let expected = match name.as_str() {
                "probe syscalls:sys_enter_nope" => 2,
                _ => 0,
            };
            assert_eq!(
                code,
                Some(expected),
                "tracer {name} with stderr{} closed",
                if stdout_closed { " and stdout" } else { "" }
            );
        }
    }
}
