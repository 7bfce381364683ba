//! `-- COMMAND`: start a command held before its exec, so probes and the process filter are in
//! place before it runs its first instruction, then release it and wait for it.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::Error;

/// A forked child held before it runs the command: blocked on a pipe before `execvp`, or
/// (with [`launch_stopped_at_exec`]) stopped by ptrace right after it.
pub struct Launched {
    pid: u32,
    /// Write end of the go pipe; `None` once released.
    go: Option<OwnedFd>,
    /// Stopped under ptrace at its exec; `false` once detached.
    traced: bool,
    reaped: bool,
    /// Read end of a close-on-exec pipe: a successful exec closes it empty, a failed one
    /// leaves the errno in it.
    exec_status: Option<OwnedFd>,
    at_end: AtEnd,
}

/// What becomes of a command still running when tracing ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AtEnd {
    /// SIGTERM to it and its descendants, and it dies with tracer (`PR_SET_PDEATHSIG`).
    #[default]
    Stop,
    /// `--leave-running`: it runs on, untraced, and outlives tracer.
    LeaveRunning,
}

/// Why `execvp` failed, as a message and hints: the errnos of execve(2) a user meets.
pub fn exec_error(program: &str, errno: i32) -> Error {
    let (why, hint) = match errno {
        libc::ENOENT => (
            "no such file".to_string(),
            format!("check the name: '{program}' is neither a path to a file nor a program on PATH"),
        ),
        libc::EACCES => (
            "permission denied".to_string(),
            format!("it must be a regular file with execute permission (see `ls -l {program}`), in directories this user can search"),
        ),
        libc::ENOEXEC => (
            "not an executable format".to_string(),
            format!("a script needs a #! line naming its interpreter; check `file {program}`"),
        ),
        _ => (
            io::Error::from_raw_os_error(errno).to_string(),
            "check that the command runs without tracer".to_string(),
        ),
    };
    Error::Exec {
        message: format!("cannot execute '{program}': {why}"),
        hints: vec![hint],
        errno,
    }
}

/// Whether `execvp` can find `program` and may run it, asked before anything is attached, so
/// that every subcommand refuses a command that cannot run the same way, before its banner:
/// a name without `/` is looked up on PATH as execvp does. Only certain failures are
/// reported (not found; found but not an executable file); what only the exec can tell (a
/// format, a script's interpreter) is left to it.
pub fn check_executable(program: &str) -> Result<(), Error> {
    // Exists (`None` if not); a regular file this user may execute (access(2) asks as the
    // exec will, root included: some execute bit must be set).
    let runnable = |path: &std::path::Path| -> Option<bool> {
        let meta = std::fs::metadata(path).ok()?;
        let c = CString::new(path.as_os_str().as_encoded_bytes()).ok();
        // SAFETY: access(2) on a NUL-terminated path.
        let may = c.is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0);
        Some(meta.is_file() && may)
    };
    if program.is_empty() {
        return Err(exec_error(program, libc::ENOENT));
    }
    if program.contains('/') {
        return match runnable(std::path::Path::new(program)) {
            None => Err(exec_error(program, libc::ENOENT)),
            Some(false) => Err(exec_error(program, libc::EACCES)),
            Some(true) => Ok(()),
        };
    }
    // glibc's execvp without PATH: /bin:/usr/bin.
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    let mut denied = false;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            ".".into()
        } else {
            dir
        };
        match runnable(&dir.join(program)) {
            Some(true) => return Ok(()),
            Some(false) => denied = true,
            None => {}
        }
    }
    Err(exec_error(
        program,
        if denied { libc::EACCES } else { libc::ENOENT },
    ))
}

/// The lines a child prints when its exec fails, per errno, written before the fork: the child
/// may only make async-signal-safe calls, so it picks one (or the last, without a reason).
fn exec_failures(program: &str) -> Vec<(i32, Vec<u8>)> {
    let text = |err: &Error| {
        let mut text = format!("tracer: {err}\n");
        for hint in err.hints() {
            text.push_str(&format!("hint: {hint}\n"));
        }
        text.into_bytes()
    };
    let mut lines: Vec<(i32, Vec<u8>)> = [
        libc::ENOENT,
        libc::EACCES,
        libc::ENOEXEC,
        libc::ENOTDIR,
        libc::ETXTBSY,
        libc::ELOOP,
        libc::ENAMETOOLONG,
        libc::E2BIG,
        libc::ENOMEM,
        libc::EPERM,
    ]
    .into_iter()
    .map(|errno| (errno, text(&exec_error(program, errno))))
    .collect();
    lines.push((
        0,
        format!("tracer: cannot execute '{program}'\n").into_bytes(),
    ));
    lines
}

/// The line of `failures` for `errno` (async-signal-safe: no allocation).
fn exec_failure(failures: &[(i32, Vec<u8>)], errno: i32) -> &[u8] {
    let found = failures.iter().find(|(e, _)| *e == errno);
    match found.or(failures.last()) {
        Some((_, line)) => line,
        None => &[],
    }
}

/// Signals 1..=64: the real-time ones included (glibc keeps 32 and 33 for itself).
const SIGNALS: i32 = 64;
/// The resources of getrlimit(2) (`RLIM_NLIMITS`: RLIMIT_CPU = 0 .. RLIMIT_RTTIME = 15).
const LIMITS: usize = 16;

/// What the process that started tracer gave it, which is what a shell would have given the
/// command: the ignored signals, the signal mask and the resource limits. Rust's runtime
/// ignores SIGPIPE before `main` and tracer raises its own open-file limit, and ignored
/// signals, the mask and limits survive fork and exec: a command launched as tracer stands at
/// exec would write on after its reader is gone (`yes | head -1` printing `Broken pipe`)
/// and open more files than it may.
struct Inherited {
    /// Bit `n - 1` for signal `n` ignored.
    ignored: u64,
    mask: libc::sigset_t,
    /// `None` where getrlimit failed: that limit is left as it is.
    limits: [Option<libc::rlimit>; LIMITS],
}

static INHERITED: std::sync::OnceLock<Inherited> = std::sync::OnceLock::new();

impl Inherited {
    /// This process's state now.
    fn now() -> Inherited {
        let mut ignored = 0u64;
        for signal in 1..=SIGNALS {
            // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, no flags); sigaction
            // with a null new action only writes the current one into it.
            let ignores = unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            };
            if ignores {
                ignored |= 1 << (signal - 1);
            }
        }
        // SAFETY: an all-zero sigset_t is a valid (empty) set; pthread_sigmask with a null new
        // set only writes the current mask into it.
        let mask = unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            mask
        };
        let limits = std::array::from_fn(|resource| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes the struct it is given.
            let ok = unsafe { libc::getrlimit(resource as _, &mut limit) } == 0;
            ok.then_some(limit)
        });
        Inherited {
            ignored,
            mask,
            limits,
        }
    }

    /// In the child, right before its exec: its ignored signals, mask and limits set back to
    /// these (a signal tracer handles is reset by the exec itself).
    ///
    /// # Safety
    /// Only async-signal-safe calls (sigaction, pthread_sigmask, getrlimit, setrlimit): for
    /// the child of a fork.
    unsafe fn restore(&self) {
        // SAFETY: as above, on structs of this stack frame and of `self`.
        unsafe {
            for signal in 1..=SIGNALS {
                if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                    continue;
                }
                let mut now: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut now) != 0 {
                    continue;
                }
                let was_ignored = self.ignored & (1 << (signal - 1)) != 0;
                if (now.sa_sigaction == libc::SIG_IGN) != was_ignored {
                    let mut set: libc::sigaction = std::mem::zeroed();
                    set.sa_sigaction = match was_ignored {
                        true => libc::SIG_IGN,
                        false => libc::SIG_DFL,
                    };
                    libc::sigaction(signal, &set, std::ptr::null_mut());
                }
            }
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.mask, std::ptr::null_mut());
            for (resource, limit) in self.limits.iter().enumerate() {
                let Some(limit) = limit else { continue };
                let mut now = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                let changed = libc::getrlimit(resource as _, &mut now) != 0
                    || (now.rlim_cur, now.rlim_max) != (limit.rlim_cur, limit.rlim_max);
                if changed {
                    libc::setrlimit(resource as _, limit);
                }
            }
        }
    }
}

/// Notes what this process was started with, before Rust's runtime or tracer change it: the
/// binary runs this from `.init_array`, ahead of `main`.
pub extern "C" fn note_inherited() {
    let _ = INHERITED.set(Inherited::now());
}

/// What tracer was started with. A program that links this library without running
/// [`note_inherited`] first gets its state now, with SIGPIPE as Rust's own
/// `std::process::Command` leaves it for a child: not ignored.
fn inherited() -> &'static Inherited {
    INHERITED.get_or_init(|| {
        let mut now = Inherited::now();
        now.ignored &= !(1 << (libc::SIGPIPE - 1));
        now
    })
}

fn errno_error(what: &str) -> Error {
    Error::Runtime {
        message: format!("{what}: {}", io::Error::last_os_error()),
        hints: Vec::new(),
    }
}

/// Takes standard output for the caller's data stream and points file descriptor 1 at
/// standard error, so that a command launched afterwards prints to the terminal instead of
/// into the data (`tracer record -o -`).
pub fn take_stdout() -> Result<std::fs::File, Error> {
    use std::os::fd::AsFd;
    let data = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::Runtime {
            message: format!("cannot duplicate standard output: {e}"),
            hints: Vec::new(),
        })?;
    // SAFETY: dup2 on two descriptors this process has open (0..2 exist for any process
    // started normally); fd 1 is replaced atomically and stays open.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(errno_error("cannot redirect standard output"));
    }
    Ok(std::fs::File::from(data))
}

/// Forks a child that waits for [`Launched::release`] and then executes `argv`; it is
/// stopped if it still runs when tracing ends.
///
/// Must be called before any other thread exists (before the async runtime starts): after
/// fork the child only makes async-signal-safe calls (read, execvp, write, _exit).
pub fn launch(argv: &[String]) -> Result<Launched, Error> {
    launch_held(argv, AtEnd::Stop)
}

/// [`launch`], with what becomes of the command when tracing ends first.
pub fn launch_held(argv: &[String], at_end: AtEnd) -> Result<Launched, Error> {
    let args: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| Error::usage("the command contains a NUL byte", Vec::new()))?;
    let Some(program) = args.first() else {
        return Err(Error::usage(
            "no command after --",
            vec!["e.g. tracer probe SPEC -- cat /etc/hostname".into()],
        ));
    };
    let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let failures = exec_failures(&argv[0]);
    let inherited = inherited();

    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno_error("cannot create a pipe"));
    }
    // SAFETY: pipe2 returned two new fds that nothing else owns.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut status_fds = [0; 2];
    // SAFETY: as above.
    if unsafe { libc::pipe2(status_fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno_error("cannot create a pipe"));
    }
    // SAFETY: pipe2 returned two new fds that nothing else owns.
    let (status_read, status_write) = unsafe {
        (
            OwnedFd::from_raw_fd(status_fds[0]),
            OwnedFd::from_raw_fd(status_fds[1]),
        )
    };

    // SAFETY: fork has no preconditions; the child branch below only calls async-signal-safe
    // functions on memory prepared before the fork, and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno_error("cannot fork"));
    }
    if pid == 0 {
        // SAFETY: in the child, prctl/getppid/read/close/sigaction/setrlimit/execvp/write/_exit
        // on fds and buffers prepared above.
        unsafe {
            tie_to_parent(parent, at_end);
            let mut byte = 0u8;
            libc::close(write_end.as_raw_fd());
            let n = libc::read(read_end.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
            if n != 1 {
                // tracer went away without releasing us: do not run untraced.
                libc::_exit(125);
            }
            libc::close(status_read.as_raw_fd());
            inherited.restore();
            libc::execvp(program.as_ptr(), ptrs.as_ptr());
            // The only report of the failure: the run then ends with the child's status 127.
            let errno = *libc::__errno_location();
            let failure = exec_failure(&failures, errno);
            libc::write(2, failure.as_ptr().cast(), failure.len());
            let bytes = errno.to_ne_bytes();
            libc::write(status_write.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
    }
    drop(read_end);
    drop(status_write);
    Ok(Launched {
        pid: pid as u32,
        go: Some(write_end),
        traced: false,
        reaped: false,
        exec_status: Some(status_read),
        at_end,
    })
}

/// Forks a child that executes `argv` under ptrace, and waits until the kernel stops it
/// right after the exec: the program and its dynamic loader are mapped, but no instruction of
/// it has run. [`Launched::release`] detaches and lets it run.
///
/// Must be called before any other thread exists (see [`launch`]).
pub fn launch_stopped_at_exec(argv: &[String], at_end: AtEnd) -> Result<Launched, Error> {
    let args: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()))
        .collect::<Result<_, _>>()
        .map_err(|_| Error::usage("the command contains a NUL byte", Vec::new()))?;
    let Some(program) = args.first() else {
        return Err(Error::usage("no command after --", Vec::new()));
    };
    let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let inherited = inherited();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // A failed exec's errno comes back through a pipe that a successful exec closes
    // (O_CLOEXEC): the parent words the error once, in its own error path.
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno_error("cannot create a pipe"));
    }
    // SAFETY: pipe2 returned two new fds that nothing else owns.
    let (errno_read, errno_write) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: as in `launch`: the child only makes async-signal-safe calls and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno_error("cannot fork"));
    }
    if pid == 0 {
        // SAFETY: in the child, prctl, ptrace(TRACEME), sigaction, setrlimit, execvp and write
        // on memory and fds prepared before the fork; a successful exec stops us with SIGTRAP for the parent.
        unsafe {
            tie_to_parent(parent, at_end);
            libc::ptrace(
                libc::PTRACE_TRACEME,
                0,
                std::ptr::null_mut::<libc::c_void>(),
                std::ptr::null_mut::<libc::c_void>(),
            );
            inherited.restore();
            libc::execvp(program.as_ptr(), ptrs.as_ptr());
            let errno = (*libc::__errno_location()).to_ne_bytes();
            libc::write(errno_write.as_raw_fd(), errno.as_ptr().cast(), errno.len());
            libc::_exit(127);
        }
    }
    drop(errno_write);
    let mut launched = Launched {
        pid: pid as u32,
        go: None,
        traced: true,
        reaped: false,
        exec_status: None,
        at_end,
    };
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid status pointer.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(errno_error("cannot wait for the command"));
    }
    if libc::WIFSTOPPED(status) && libc::WSTOPSIG(status) == libc::SIGTRAP {
        return Ok(launched);
    }
    launched.reaped = true;
    launched.traced = false;
    let mut errno = [0u8; 4];
    // SAFETY: reading into a valid 4-byte buffer from the pipe's read end, which we own; the
    // child has exited, so the read does not block.
    let n = unsafe { libc::read(errno_read.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
    let errno = match n {
        4 => i32::from_ne_bytes(errno),
        _ => 0,
    };
    Err(match errno {
        0 => Error::Runtime {
            message: format!("cannot execute '{}'", argv[0]),
            hints: vec!["check the command name and that it is executable".into()],
        },
        errno => exec_error(&argv[0], errno),
    })
}

/// In the child, before exec: the command dies with tracer. If tracer is killed (SIGKILL,
/// a crash), the kernel sends the command SIGKILL (PR_SET_PDEATHSIG, kept across exec), so
/// it never runs on untraced; with [`AtEnd::LeaveRunning`] it outlives tracer instead. tracer
/// may already have died between the fork and the prctl: then the child has been reparented
/// and exits at once.
///
/// # Safety
/// Only async-signal-safe calls: for the child of a fork.
unsafe fn tie_to_parent(parent: libc::pid_t, at_end: AtEnd) {
    // SAFETY: prctl with integer arguments and getppid/_exit have no memory preconditions.
    unsafe {
        if at_end == AtEnd::Stop {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        if libc::getppid() != parent {
            libc::_exit(125);
        }
    }
}

/// The processes below `pid` (children, their children...), read from
/// `/proc/PID/task/TID/children`, in the order found (at most 100,000).
pub(crate) fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut seen = hashbrown::HashSet::new();
    let mut next = vec![pid];
    while let Some(parent) = next.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                if found.len() < 100_000 && seen.insert(child) {
                    found.push(child);
                    next.push(child);
                }
            }
        }
    }
    found
}

/// Whether process or thread `pid` still runs: not gone, not a zombie (it has exited and
/// only awaits its reaper).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name's closing parenthesis.
        Ok(stat) => (stat.rsplit_once(')'))
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| !matches!(state, "Z" | "X")),
        Err(_) => false,
    }
}

/// What became of a launched command when tracing ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It had exited by itself (or was never started).
    Exited,
    /// It was still running: it and its descendants were sent SIGTERM (SIGKILL after a
    /// second for those that did not end).
    Stopped,
    /// It was still running and was left so (`--leave-running`): not signalled, not reaped.
    LeftRunning,
}

impl Launched {
    /// Ends the command if it still runs when tracing ends: SIGTERM to it and every process
    /// it started (a shell's background jobs would otherwise run on untraced), SIGKILL after
    /// a second to what is left; then it is reaped. A command never released is killed; a
    /// released one launched with [`AtEnd::LeaveRunning`] is left to run.
    pub fn stop(&mut self) -> Fate {
        if self.reaped || self.try_wait().is_some() {
            return Fate::Exited;
        }
        // A ptrace-stopped child cannot act on SIGTERM until its tracer lets it run, nor can
        // one still held before its exec: only SIGKILL ends them.
        let held = self.go.is_some() || self.traced;
        if !held && self.at_end == AtEnd::LeaveRunning {
            // Nothing waits for it any more: when tracer exits, init reaps it.
            self.reaped = true;
            return Fate::LeftRunning;
        }
        let pid = self.pid as libc::pid_t;
        let signal = if held { libc::SIGKILL } else { libc::SIGTERM };
        // Found before any is signalled, while the command still holds them as its children,
        // and frozen first (SIGSTOP, level by level): a process forked after the list was read
        // would otherwise be missed, and its parent's death would hand it to init, running
        // (a shell's second background job did, under emulation).
        let stop = |p: libc::pid_t| {
            // SAFETY: kill with a pid and a signal number; a pid that has gone is ESRCH.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        };
        stop(pid);
        let mut tree: Vec<u32> = Vec::new();
        loop {
            let found: Vec<u32> = (descendants(self.pid).into_iter())
                .filter(|p| !tree.contains(p))
                .collect();
            if found.is_empty() {
                break;
            }
            found.iter().for_each(|&p| stop(p as libc::pid_t));
            tree.extend(found);
        }
        for &below in &tree {
            // SAFETY: as above.
            unsafe {
                libc::kill(below as libc::pid_t, signal);
                libc::kill(below as libc::pid_t, libc::SIGCONT);
            }
        }
        // SAFETY: as above; our child is not reaped yet, so its pid is still its own.
        unsafe {
            libc::kill(pid, signal);
            libc::kill(pid, libc::SIGCONT);
        }
        // The whole tree, not only our child: once the command is reaped its children are
        // init's, and a run that ends must not leave them running past "command stopped"
        // (under emulation one outlived tracer's exit).
        for _ in 0..100 {
            // Reaped now or on an earlier turn (`try_wait` answers once).
            let reaped = self.try_wait().is_some() || self.reaped;
            if reaped && !tree.iter().any(|&p| alive(p)) {
                return Fate::Stopped;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let mut left = descendants(self.pid);
        left.extend(tree.iter().copied().filter(|&p| alive(p)));
        for &below in &left {
            // SAFETY: as above: processes of the command's tree still running.
            unsafe { libc::kill(below as libc::pid_t, libc::SIGKILL) };
        }
        if !self.reaped {
            let mut status = 0;
            // SAFETY: our own unreaped child: SIGKILL ends it, waitpid reaps it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            self.reaped = true;
        }
        // SIGKILL cannot be refused: wait for them to be gone, a second at most.
        for _ in 0..100 {
            if !left.iter().any(|&p| alive(p)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Fate::Stopped
    }

    /// The child's exit status if it exits within `wait` (Ctrl-C reaches the command too,
    /// in the same process group: a moment for it to exit on its own, so that its status is
    /// the one reported).
    pub fn exits_within(&mut self, wait: std::time::Duration) -> Option<i32> {
        let start = std::time::Instant::now();
        loop {
            if let Some(code) = self.try_wait() {
                return Some(code);
            }
            if start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// What becomes of the command if tracing ends first.
    pub fn at_end(&self) -> AtEnd {
        self.at_end
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The errno of a failed exec, once the child has exited (it wrote its own line on
    /// stderr already); `None` if the command ran.
    pub fn exec_failed(&mut self) -> Option<i32> {
        let fd = self.exec_status.take()?;
        let mut bytes = [0u8; 4];
        // SAFETY: reading up to 4 bytes into a valid buffer from an fd we own; the child has
        // exited, so the write end is closed and the read does not block.
        let n = unsafe { libc::read(fd.as_raw_fd(), bytes.as_mut_ptr().cast(), bytes.len()) };
        (n == 4).then(|| i32::from_ne_bytes(bytes))
    }

    /// Lets the child execute (or, stopped at its exec, continue) the command.
    pub fn release(&mut self) -> Result<(), Error> {
        if self.traced {
            // SAFETY: detaching our stopped tracee resumes it; no pointers are passed.
            let ret = unsafe {
                libc::ptrace(
                    libc::PTRACE_DETACH,
                    self.pid as libc::pid_t,
                    std::ptr::null_mut::<libc::c_void>(),
                    std::ptr::null_mut::<libc::c_void>(),
                )
            };
            if ret != 0 {
                return Err(errno_error("cannot resume the command (ptrace detach)"));
            }
            self.traced = false;
        }
        if let Some(go) = self.go.take() {
            // SAFETY: writing one byte from a valid buffer to an fd we own.
            let n = unsafe { libc::write(go.as_raw_fd(), b"g".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(errno_error("cannot start the command"));
            }
        }
        Ok(())
    }

    /// A pidfd for the child: readable once it has exited (pidfd_open(2), Linux 5.3).
    pub fn pidfd(&self) -> Result<OwnedFd, Error> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(errno_error("cannot watch the command (pidfd_open)"));
        }
        // SAFETY: a new fd that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// Reaps the child if it has exited: its exit code, or 128 + the signal that killed it.
    pub fn try_wait(&mut self) -> Option<i32> {
        if self.reaped {
            return None;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        let ret = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut status, libc::WNOHANG) };
        if ret != self.pid as libc::pid_t {
            return None;
        }
        self.reaped = true;
        Some(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            128 + libc::WTERMSIG(status)
        })
    }
}

impl Drop for Launched {
    /// A command still running when tracer is done with it is not left running untraced.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Raises this process's soft limit on open files to its hard limit when `needed` more than
/// are open may not fit (a perf event per probe: hundreds of tracepoints in one run), as
/// bpftrace and perf do. A limit that cannot be raised is left: opening then fails with
/// EMFILE, whose hint names `ulimit -n`.
pub fn raise_open_files(needed: u64) {
    // The limit a launched command gets back, noted before it is raised.
    let _ = inherited();
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given; setrlimit reads it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        if limit.rlim_cur >= needed.saturating_add(256) || limit.rlim_cur == limit.rlim_max {
            return;
        }
        limit.rlim_cur = limit.rlim_max;
        let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}

/// This process's open files now, and the most it may have (its soft `RLIMIT_NOFILE`).
pub fn open_files() -> (u64, u64) {
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count() as u64);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let limit = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur,
        _ => u64::MAX,
    };
    (open, limit)
}

#[cfg(test)]
mod tests {
    use super::alive;

    #[test]
    fn a_process_runs_until_it_exits_and_a_zombie_does_not() {
        assert!(alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie, which `alive` does not count.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive(pid) {
            assert!(std::time::Instant::now() < deadline, "`true` ran for 10 s");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            std::fs::metadata(format!("/proc/{pid}")).is_ok(),
            "still unreaped"
        );
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}
