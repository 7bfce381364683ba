//! The launched command's whole process tree dies with tracer, also when tracer is killed
//! outright (SIGKILL, the OOM killer, a crash) and runs no code of its own. The kernel kills
//! the command itself (`PR_SET_PDEATHSIG`, launch.rs), but what the command started is handed
//! to init and runs on, untraced (8 runs of 8 of a shell's background jobs did).
//!
//! A guard process, `tracer-guard`, started once the command is followed, holds the `TRACKED`
//! map (the processes tracer follows, kept by the tracking programs) and waits on a pipe whose
//! write end only tracer holds. A byte on it means the run ended as it should (the command's
//! end was tracer's business, launch.rs `stop`): the guard exits. The pipe's end without one
//! means tracer is gone: the guard stops (SIGSTOP) every process of the map and, level by
//! level, the children found under them (a process stopped forks no more), then kills them
//! all.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The guard's first argument: `tracer __guard GONE MAP` (the binary's main hands it over
/// before parsing a command line; no user types it).
pub const GUARD_ARG: &str = "__guard";

/// tracer's end of the pipe: dropped with a byte written when the run ends as it should.
#[derive(Debug)]
pub struct Guard {
    alive: OwnedFd,
}

impl Guard {
    /// Starts the guard of the processes in the `TRACKED` map `tracked`.
    pub fn spawn(tracked: BorrowedFd) -> std::io::Result<Guard> {
        let mut pipe = [0; 2];
        // SAFETY: `pipe` is a valid array of two fds for pipe2 to fill.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: two new fds that nothing else owns.
        let (gone, alive) =
            unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let map = tracked.try_clone_to_owned()?;
        let (gone_fd, map_fd) = (gone.as_raw_fd(), map.as_raw_fd());
        let mut command = Command::new("/proc/self/exe");
        command
            .args([GUARD_ARG, &gone_fd.to_string(), &map_fd.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: fcntl and setsid are async-signal-safe, on fds of this process. The two
        // fds are kept across the exec; the guard leaves tracer's session, so that Ctrl-C
        // and a hangup of tracer's terminal reach tracer and its command, not the guard.
        unsafe {
            command.pre_exec(move || {
                for fd in [gone_fd, map_fd] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                libc::setsid();
                Ok(())
            });
        }
        // Not waited for: it exits when tracer does, and init reaps it.
        command.spawn()?;
        Ok(Guard { alive })
    }
}

impl Drop for Guard {
    /// The run ended as it should: the guard leaves the processes be.
    fn drop(&mut self) {
        // SAFETY: a one-byte write from a valid buffer to our own fd.
        unsafe { libc::write(self.alive.as_raw_fd(), b"x".as_ptr().cast(), 1) };
    }
}

/// The guard process (`tracer __guard GONE MAP`): waits for tracer's end, and kills what is
/// left of the tree if tracer died. Returns its exit code.
pub fn run(args: &[OsString]) -> i32 {
    let fd = |i: usize| -> Option<RawFd> { args.get(i)?.to_str()?.parse().ok() };
    let (Some(gone), Some(map)) = (fd(0), fd(1)) else {
        return 2;
    };
    // SAFETY: PR_SET_NAME with a NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"tracer-guard".as_ptr()) };
    let mut byte = 0u8;
    loop {
        // SAFETY: a one-byte read into a valid buffer from an fd handed over by tracer.
        let n = unsafe { libc::read(gone, (&raw mut byte).cast(), 1) };
        match n {
            0 => break,
            n if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => return 0,
        }
    }
    // SAFETY: the map's fd, handed over by tracer, open for as long as this process runs.
    let map = unsafe { BorrowedFd::borrow_raw(map) };
    kill_tree(map);
    0
}

/// Stops every process of the `TRACKED` map `map` and the children under them, until no new
/// one is found, then kills them all.
fn kill_tree(map: BorrowedFd) {
    let mut tree: Vec<u32> = Vec::new();
    // A bound on the rounds: each finds at least one new process, and forks are stopped.
    for _ in 0..1000 {
        let mut found = crate::bpf::tracked_in(map);
        for &below in &tree {
            found.extend(crate::launch::descendants(below));
        }
        found.sort_unstable();
        found.dedup();
        found.retain(|p| !tree.contains(p) && crate::launch::alive(*p));
        if found.is_empty() {
            break;
        }
        for &p in &found {
            // SAFETY: kill with a pid and a signal number; a pid that has gone is ESRCH.
            unsafe { libc::kill(p as libc::pid_t, libc::SIGSTOP) };
        }
        tree.extend(found);
    }
    for &p in &tree {
        // SAFETY: as above.
        unsafe {
            libc::kill(p as libc::pid_t, libc::SIGKILL);
            libc::kill(p as libc::pid_t, libc::SIGCONT);
        }
    }
}
