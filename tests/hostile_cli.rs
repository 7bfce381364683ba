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

/// Runs `cmd` (tracer's `args`, shown in failures) with the time and memory limits; stdout
/// and stderr go to files (a full pipe must not look like a hang).
fn run_limited(mut cmd: Command, args: &[&str], dir: &Path) -> Run {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(dir.join("stdout")).unwrap();
    let err = std::fs::File::create(dir.join("stderr")).unwrap();
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
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
fn limited(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    run_limited(common::Tracer::new(args).command(), args, dir.path())
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
    limited(&["list", "--binary", "/dev/zero"])
        .fails(2, ZERO)
        .hints(HINT);
    limited(&["probe", "uprobe:/dev/zero:f", "-d", "1"]).fails(2, ZERO);
    limited(&["probe", "uprobe:/dev/zero:0x1000", "-d", "1"]).fails(2, ZERO);
    // perf stat's usage errors exit 129.
    limited(&["stat", "-e", "uprobe:/dev/zero:f", "--", "true"]).fails(129, ZERO);
    limited(&["latency", "uprobe:/dev/zero:f", "-d", "1"]).fails(2, ZERO);
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    limited(&["probe", &format!("uprobe:{}:f", fifo.display()), "-d", "1"]).fails(
        2,
        &format!("error: {} is a FIFO, not a regular file", fifo.display()),
    );
    let d = dir.path().display();
    limited(&["list", "--binary", &d.to_string()])
        .fails(2, &format!("error: {d} is a directory, not a regular file"));
}

#[test]
fn a_device_is_not_a_recording_and_a_corrupt_header_allocates_nothing() {
    limited(&["report", "/dev/zero"])
        .fails(2, "error: /dev/zero is a character device, not a recording")
        .hints("give a file written by `tracer record -o FILE`, or pipe a recording into `tracer report -`");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tracer");
    let mut bytes = tracer::tracefile::MAGIC.to_vec();
    bytes.extend_from_slice(&tracer::tracefile::VERSION.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&file, &bytes).unwrap();
    limited(&["report", file.to_str().unwrap()]).fails(
        1,
        &format!(
            "error: cannot read {}: the tracer header is corrupt: it claims 4294967295 bytes (16 to 4096 are valid)",
            file.display()
        ),
    );
}

/// `kernel.pid_max`: no process id reaches it.
fn pid_max() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A process id that ran and is gone (reaped).
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn pids_and_tids_that_name_no_running_task_are_refused() {
    let tp = "syscalls:sys_enter_getppid";
    let max = pid_max();
    let too_big = format!("{}", u64::from(max) * 3);
    for args in [
        vec!["probe", "-p", &too_big, tp, "-d", "1"],
        vec![
            "latency", "-p", &too_big, "--from", tp, "--to", tp, "-d", "1",
        ],
        vec![
            "record",
            "-o",
            "/dev/null",
            "-p",
            &too_big,
            "-P",
            tp,
            "-d",
            "1",
        ],
        vec!["watch", "-p", &too_big, "0x1000", "-d", "1"],
    ] {
        limited(&args)
            .fails(
                2,
                &format!(
                    "error: --pid {too_big} is not a process id: ids here are below {max} (kernel.pid_max)"
                ),
            )
            .hints("give a process id from `ps`");
    }
    limited(&["probe", "--tid", "0", tp, "-d", "1"])
        .fails(2, "error: --tid 0 is not a thread")
        .hints("give a thread id from `ps -eL`");
    let dead = dead_pid().to_string();
    limited(&["probe", "-p", &dead, tp, "-d", "1"])
        .fails(2, &format!("error: no process {dead}"))
        .hints("check the id with `ps`; it may have exited");
    limited(&["probe", "--tid", &dead, tp, "-d", "1"])
        .fails(2, &format!("error: no thread {dead}"));
    limited(&["watch", "-p", &dead, "0x1000", "-d", "1"])
        .fails(2, &format!("error: no process {dead}"));
    // A zombie: exited, its parent (this test) has not reaped it yet.
    let mut zombie = Command::new("true").spawn().unwrap();
    let id = zombie.id();
    let stat = || std::fs::read_to_string(format!("/proc/{id}/stat")).unwrap();
    let start = Instant::now();
    while !stat().contains(") Z ") {
        assert!(start.elapsed() < TIMEOUT, "{} never exited", id);
        std::thread::sleep(Duration::from_millis(5));
    }
    let run = limited(&["probe", "-p", &id.to_string(), tp, "-d", "1"]);
    zombie.wait().unwrap();
    run.fails(
        2,
        &format!("error: process {id} has exited (a zombie its parent has not reaped)"),
    );
}

#[test]
fn kernel_addresses_that_are_not_kernel_addresses_are_refused() {
    limited(&["probe", "kprobe:0x0", "-d", "1"])
        .fails(2, "error: probe 'kprobe:0x0': 0x0 is not a kernel address")
        .hints("kernel addresses have the top bit set (0xffff...); name the function instead, e.g. kprobe:do_sys_openat2 (see `tracer list 'kprobe:*'`)");
    limited(&["watch", "--kernel", "0x0", "-d", "1"])
        .fails(2, "error: --kernel 0x0: 0x0 is not a kernel address");
    let prog = common::testprog().display().to_string();
    limited(&["watch", "0xffffffff81000000", "-d", "1", "--", &prog]).fails(
        2,
        "error: 0xffffffff81000000 is a kernel address, not one of the process's",
    );
}

#[test]
fn a_uprobe_that_is_not_on_code_is_refused() {
    let prog = common::testprog();
    let p = prog.display();
    let hint = format!(
        "probe a function (see `tracer list --binary {p}`), or an instruction's address from `objdump -d {p}`"
    );
    // The ELF header's segment (read-only), a variable (read-write), past every segment.
    for (at, why) in [
        ("0x0", "its segment is r--, not executable"),
        ("0x40", "its segment is r--, not executable"),
        ("0xffffffff", "it is in no loaded segment"),
    ] {
        limited(&["probe", &format!("uprobe:{p}:{at}"), "-d", "1"])
            .fails(2, &format!("error: {at} in {p} is not code: {why}"))
            .hints(&hint);
    }
    let counter = common::testprog_symbol("tracer_testprog_counter");
    limited(&[
        "probe",
        &format!("uprobe:{p}:tracer_testprog_counter"),
        "-d",
        "1",
    ])
    .fails(
        2,
        &format!("error: {counter:#x} in {p} is not code: its segment is rw-, not executable"),
    );
    limited(&["stat", "-e", &format!("uprobe:{p}:0x0"), "--", "true"]).fails(
        129,
        &format!("error: 0x0 in {p} is not code: its segment is r--, not executable"),
    );
}

#[test]
fn a_command_that_cannot_run_is_explained_once() {
    let enoent = (
        "/nonexistent/prog",
        "cannot execute '/nonexistent/prog': no such file",
        "check the name: '/nonexistent/prog' is neither a path to a file nor a program on PATH",
    );
    let eacces = (
        "/etc/passwd",
        "cannot execute '/etc/passwd': permission denied",
        "it must be a regular file with execute permission (see `ls -l /etc/passwd`), in directories this user can search",
    );
    for (program, message, hint) in [enoent, eacces] {
        // Held before its exec: the child says it, and the run ends as perf stat's does
        // ("Workload failed"): no report, status 255.
        let run = limited(&["stat", "--", program]);
        assert_eq!(run.code, Some(255), "{}", run.stderr);
        assert!(
            !run.stderr.contains("Performance counter stats"),
            "{}",
            run.stderr
        );
        let lines: Vec<&str> = run.stderr.lines().collect();
        let said = lines
            .iter()
            .filter(|l| l.contains("cannot execute"))
            .count();
        assert_eq!(said, 1, "{}", run.stderr);
        assert!(
            lines.contains(&format!("tracer: {message}").as_str()),
            "{}",
            run.stderr
        );
        assert!(
            lines.contains(&format!("hint: {hint}").as_str()),
            "{}",
            run.stderr
        );
        // Every other subcommand: refused before anything is attached (no banner), said
        // once, with the shell's status: 127 not found, 126 found but not runnable.
        let code = if program == enoent.0 { 127 } else { 126 };
        for args in [
            &["watch", "0x1000"][..],
            &["probe", "syscalls:sys_enter_getppid"],
            &["trace"],
            &["profile"],
            &["latency", "uprobe:/bin/true:main"],
            &[
                "record",
                "-e",
                "syscalls:sys_enter_getppid",
                "-o",
                "/dev/null",
            ],
        ] {
            let mut argv = args.to_vec();
            argv.extend(["--", program]);
            let run = limited(&argv);
            run.fails(code, &format!("error: {message}")).hints(hint);
            assert_eq!(
                run.stderr.matches("cannot execute").count(),
                1,
                "{argv:?}: {}",
                run.stderr
            );
            assert!(
                !run.stderr.contains("Hit Ctrl-C"),
                "{argv:?}: {}",
                run.stderr
            );
        }
    }
    // A name looked up on PATH as execvp does.
    limited(&["trace", "--", "no-such-program-here"]).fails(
        127,
        "error: cannot execute 'no-such-program-here': no such file",
    );
}

#[test]
fn a_full_disk_names_the_file() {
    let run = limited(&["stat", "-o", "/dev/full", "--", "true"]);
    run.fails(
        1,
        "error: cannot write /dev/full: No space left on device (os error 28)",
    )
    .hints("the file system holding /dev/full is full: free space, or write elsewhere");
    if !common::has(
        tracer::kernel::features::Feature::Bpf,
        "a_full_disk_names_the_file",
    ) || !common::has(
        tracer::kernel::features::Feature::Tracepoints,
        "a_full_disk_names_the_file",
    ) {
        return;
    }
    let tp = "syscalls:sys_enter_getppid";
    limited(&["record", "-o", "/dev/full", "-P", tp, "-d", "0.2"])
        .fails(
            1,
            "error: cannot write /dev/full: No space left on device (os error 28)",
        )
        .hints("the file system holding /dev/full is full: free space, or write elsewhere");
    assert!(run.stdout.is_empty());
}

/// `tracer ARGS` as user nobody (65534, no groups), limited; `None` (and why, printed) when
/// this machine cannot run it so.
fn as_nobody(test: &str, args: &[&str]) -> Option<Run> {
    require_root();
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
    else {
        eprintln!("SKIPPED {test}: no setpriv (util-linux) to run tracer as an unprivileged user");
        return None;
    };
    let tracer = tracer_bin();
    let mut full = vec![
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        tracer.to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(setpriv);
    cmd.args(&full);
    Some(run_limited(cmd, args, dir.path()))
}

#[test]
fn an_unprivileged_user_is_told_what_grants_access() {
    const TEST: &str = "an_unprivileged_user_is_told_what_grants_access";
    use std::os::unix::fs::PermissionsExt;
    let fs = tracer::kernel::tracefs::Tracefs::locate().expect("tracefs, as root");
    let root = fs.root().display().to_string();
    let mode = std::fs::metadata(fs.root()).unwrap().permissions().mode();
    if mode & 0o001 != 0 {
        // The denied case is unit-tested (kernel::tracefs) whatever the mount's mode.
        eprintln!("SKIPPED {TEST}: tracefs at {root} is open to other users (mode {mode:o})");
        return;
    }
    let Some(run) = as_nobody(TEST, &["probe", "syscalls:sys_enter_getppid", "-d", "1"]) else {
        return;
    };
    let denied = format!("error: permission denied: this user cannot read tracefs at {root}");
    run.fails(1, &denied)
        .hints("run tracer as root (sudo): tracefs is root's alone by default (mode 0700)")
        .hints(&format!(
            "or let a group in: `mount -o remount,gid=GROUP,mode=0750 {root}` (as root) and add \
             the user to GROUP; probes then need CAP_BPF and CAP_PERFMON: `setcap \
             cap_bpf,cap_perfmon+ep $(command -v tracer)`"
        ));
    assert!(
        run.stderr.contains("perf_event_paranoid (now "),
        "{}",
        run.stderr
    );
    // `list` with a pattern: the match may be in what it could not read.
    as_nobody(TEST, &["list", "getppid"])
        .unwrap()
        .fails(1, &denied);
    // `list` alone: what it can list, and a note on what it cannot.
    let run = as_nobody(TEST, &["list"]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.lines().any(|l| l == "software:task-clock"));
    assert_eq!(
        run.stderr,
        format!(
            "note: tracepoints and kernel functions are not listed: permission denied: this \
             user cannot read tracefs at {root}\n"
        )
    );
    // Another user's process: it exists, and its memory map is not this user's to read.
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let run = as_nobody(TEST, &["watch", "-p", &pid, "0x1000", "-d", "1"]).unwrap();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    run.fails(
        1,
        &format!(
            "error: permission denied: this user cannot read the memory map of process {pid} \
             (/proc/{pid}/maps)"
        ),
    )
    .hints(
        "reading another user's process needs ptrace read access: run as its user, or as root \
         (CAP_SYS_PTRACE)",
    );
}

/// A finished recording made of `records`, written to `dir`.
fn recording(dir: &Path, name: &str, records: &[tracer::tracefile::Record]) -> PathBuf {
    let mut w = tracer::tracefile::Writer::new(Vec::new()).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    let path = dir.join(name);
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    path
}

fn sample(time_ns: u64) -> tracer::tracefile::Record {
    tracer::tracefile::Record::Sample(tracer::tracefile::Sample {
        source: 1,
        cpu: 0,
        pid: 7,
        tid: 7,
        time_ns,
        period: 1,
        ip: 0x40_1136,
        kernel: Vec::new(),
        user: Vec::new(),
    })
}

fn exit_task(tid: u32) -> tracer::tracefile::Record {
    tracer::tracefile::Record::Task(tracer::tracefile::Task {
        what: tracer::tracefile::TaskWhat::Exit,
        cpu: 0,
        pid: tid,
        tid,
        ppid: 1,
        ptid: 1,
        time_ns: 5,
        comm: [0; 16],
    })
}

/// Where the `index`th record of `path` starts (records after the 16-byte header).
fn record_at(path: &Path, index: usize) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 16;
    for _ in 0..index {
        at += 8 + u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    at
}

fn patch(path: &Path, at: usize, value: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn damaged_recordings_show_what_is_valid_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let records = [sample(10), exit_task(8), sample(20), sample(30)];
    // A task record whose kind of task is unknown: skipped, the samples around it shown.
    let file = recording(dir.path(), "payload.tracer", &records);
    let task_at = record_at(&file, 1);
    patch(&file, task_at + 8, 9);
    let p = file.display();
    let run = limited(&["report", &p.to_string(), "-f", "json"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let times: Vec<u64> = common::json_lines(run.stdout.as_bytes())
        .iter()
        .map(|i| i["time_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(times, [10, 20, 30]);
    assert_eq!(
        run.stderr.lines().take(2).collect::<Vec<_>>(),
        [
            format!("error: {p}: 1 corrupt records skipped; the records around them are shown"),
            format!("  record 1 (kind 6) at byte {task_at}: unknown task record 9"),
        ]
    );
    // A flipped bit in a sample's length: a corrupt length, not a cut file.
    let file = recording(dir.path(), "length.tracer", &records);
    let sample_at = record_at(&file, 2);
    patch(&file, sample_at + 4, 48 | 4);
    let p = file.display();
    let run = limited(&["report", &p.to_string()]);
    run.fails(
        1,
        &format!(
            "error: {p}: record 2 (kind 4) at byte {sample_at} is corrupt: claims 52 bytes; a \
             sample record has 48 and 8 per frame, up to 127 frames (1064); the records before \
             it are shown"
        ),
    );
    assert!(!run.stderr.contains("mid-write"), "{}", run.stderr);
    // The two records before it (no meta record: no header line).
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    // A kind this tracer does not know: skipped, and said.
    let file = recording(
        dir.path(),
        "unknown.tracer",
        &[
            sample(10),
            tracer::tracefile::Record::Unknown(99),
            sample(20),
        ],
    );
    let p = file.display();
    let run = limited(&["report", &p.to_string()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "note: {p}: 1 records of kinds this tracer does not know were skipped (kind 99: 1): \
             written by a newer tracer, or corrupt\n"
        )),
        "{}",
        run.stderr
    );
    // Format 0 does not exist.
    let file = recording(dir.path(), "v0.tracer", &records);
    patch(&file, 8, 0);
    let p = file.display();
    limited(&["report", &p.to_string()]).fails(
        1,
        &format!(
            "error: cannot read {p}: the tracer header is corrupt: it claims file format 0 \
             (formats start at 1)"
        ),
    );
}

#[test]
fn report_refuses_to_write_over_its_input_and_shows_produced_recorded_lost() {
    use tracer::tracefile::{Record, Stats};
    let dir = tempfile::tempdir().unwrap();
    let event = |time_ns| {
        let mut e = tracer_common::Event::from_bytes(&[0u8; tracer_common::Event::SIZE]).unwrap();
        e.time_ns = time_ns;
        Record::Event(Box::new(e), Vec::new())
    };
    let stats = Record::Stats(Stats {
        produced: 5,
        lost_bpf: vec![(0, 1), (1, 0)],
        ..Stats::default()
    });
    let file = recording(dir.path(), "t.tracer", &[event(1), event(2), stats]);
    let before = std::fs::read(&file).unwrap();
    let p = file.display().to_string();
    limited(&["report", &p, "--perfetto", &p])
        .fails(
            2,
            &format!(
                "error: --perfetto {p} is the recording being read: writing it would destroy it"
            ),
        )
        .hints("write the Perfetto JSON to another file, e.g. --perfetto trace.json");
    limited(&["report", &p, "-o", &p])
        .fails(
            2,
            &format!("error: -o {p} is the recording being read: writing it would destroy it"),
        )
        .hints("write the timeline to another file, e.g. -o timeline.txt");
    // The same file by another name.
    let link = dir.path().join("link.tracer");
    std::fs::hard_link(&file, &link).unwrap();
    limited(&["report", &p, "--perfetto", link.to_str().unwrap()]).fails(
        2,
        &format!(
            "error: --perfetto {} is the recording being read: writing it would destroy it",
            link.display()
        ),
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let run = limited(&["report", &p]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "probe/watch events: 5 produced, 2 recorded, 1 lost (CPU 0: 1, CPU 1: 0)\n  2 \
             produced are neither in the file nor counted lost\n"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn malformed_specs_and_filters_are_usage_errors() {
    let tp = "syscalls:sys_enter_getppid";
    let long = "a".repeat(100_000);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["probe", ""], "error: empty probe spec"),
        (
            vec!["probe", "a:b:c:d"],
            "error: invalid tracepoint 'a:b:c:d'",
        ),
        (
            vec!["probe", "kprobe:"],
            "error: invalid function name '' in probe 'kprobe:'",
        ),
        (
            vec!["probe", "uprobe::x"],
            "error: probe 'uprobe::x' needs PATH:SYMBOL",
        ),
        (
            vec!["probe", "f(a"],
            "error: probe 'f(a' has an unclosed or misplaced '('",
        ),
        (
            vec!["probe", "f(a,a)"],
            "error: 'a' is listed twice in probe 'f(a,a)'",
        ),
        (
            vec!["probe", "vfs_read+zz"],
            "error: invalid offset 'zz' in probe 'vfs_read+zz'",
        ),
        (
            vec!["probe", "kprobe:0xzz"],
            "error: invalid address in probe 'kprobe:0xzz'",
        ),
        (
            vec!["probe", "--comm", "", tp],
            "error: --comm '' must be 1 to 15 bytes",
        ),
        (
            vec!["probe", "-C", "99", tp],
            "error: CPU 99 cannot be filtered",
        ),
        (
            vec!["probe", "-C", "3-1", tp],
            "error: invalid CPU list '3-1': range '3-1' runs backwards",
        ),
        (
            vec!["probe", "--count-by", "co-mm", tp],
            "error: 'co-mm' is not a --count-by key",
        ),
        (
            vec!["probe", "--ring-pages", "3", tp],
            "error: --ring-pages 3 is not a power of two from 1 to 65536",
        ),
        (
            vec!["probe", "-c", "0", tp],
            "error: --count 0 would stop before the first event",
        ),
        (
            vec!["probe", "--call-graph", "lbr", "--count-by", "comm", "-s", "user", tp],
            "error: unknown --call-graph mode 'lbr'",
        ),
        (
            vec!["probe", "--call-graph", "dwarf", "-s", "user", tp],
            "error: --call-graph dwarf chooses how counted user stacks are taken",
        ),
        (
            vec!["probe", "--call-graph", "dwarf", "--count-by", "comm", "-s", "kernel", tp],
            "error: --call-graph dwarf chooses how counted user stacks are taken",
        ),
        (
            vec![
                "probe", "--call-graph", "dwarf", "--count-by", "comm,arg0", "-s", "user", tp,
            ],
            "error: --call-graph dwarf counts in tracer by comm, pid, tid, cpu and probe, and stack",
        ),
        (
            vec!["watch", "0xzz", "-p", "1"],
            "error: invalid address '0xzz'",
        ),
        (
            vec!["stat", "-p", "1,,0"],
            "error: invalid process id list '1,,0'",
        ),
        (
            vec!["stat", "-I", "0", "--", "true"],
            "error: -I 0: the print interval must be at least 10 ms",
        ),
        (
            vec!["record", "-o", "/dev/null", "-W", "counter"],
            "error: watchpoints (-W) need the process whose memory they watch",
        ),
    ];
    for (args, first_line) in cases {
        // perf stat's usage errors exit 129; tracer's other commands' exit 2.
        let code = if args[0] == "stat" { 129 } else { 2 };
        limited(&args).fails(code, first_line);
    }
    // A 100 kB name ends as fast as a short one.
    let run = limited(&["probe", &long]);
    assert_eq!(run.code, Some(2), "{}", &run.stderr[..200]);
    assert!(run.stderr.starts_with("error: invalid function name 'aaa"));
}
