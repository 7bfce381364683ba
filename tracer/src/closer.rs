//! At exit: the tracepoint, kprobe and uprobe events whose close waits for the kernel
//! (`perf::deferred`) are closed by a child, `tracer-detach`, once tracer has exited.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Hands the set-aside files to a child that closes them once this process has exited; the
/// files are closed here and now when there is no child (fork failed).
pub fn close_after_exit(set: Vec<OwnedFd>) {
    if set.is_empty() {
        return;
    }
    let keep: Vec<RawFd> = set.iter().map(|fd| fd.as_raw_fd()).collect();
    // Everything else the child inherits, listed before the fork (no allocation after it).
    let others: Vec<RawFd> = match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => (dir.flatten())
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .filter(|fd| !keep.contains(fd))
            .collect(),
        Err(_) => return,
    };
    let mut pipe = [0; 2];
    // SAFETY: `pipe` is a valid array of two fds for pipe2 to fill.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    let [gone, alive] = pipe;
    let args = arguments_area();
    // SAFETY: a NUL-terminated path; the fd is checked below.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    // SAFETY: the child only makes async-signal-safe calls (setsid, prctl, dup2, close, read,
    // _exit) on fds listed before the fork, and never returns.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: this is the child of the fork, and `others` its inherited fds to close.
        unsafe { hold(&others, args, null, gone, alive) }
    }
    // SAFETY: our own fds, not used after. `alive`, the write end, stays open until this
    // process exits when there is a child: its close wakes the child.
    unsafe {
        libc::close(gone);
        if null >= 0 {
            libc::close(null);
        }
        if child < 0 {
            libc::close(alive);
        }
    }
    // With a child holding the files these closes only drop a reference; without one
    // (fork failed) they are the slow ones, here and now.
    drop(set);
}

/// The child: off the terminal and its signals, out of every pipe (a reader of tracer's output
/// must see its end when tracer exits), waiting for the parent's exit; its own exit closes the
/// files it kept.
///
/// Its command line is `tracer-detach` too: a `pgrep -f` of the traced command's line, just
/// after tracer has exited, must not find the child still holding tracer's.
///
/// # Safety
/// Only in the child of a fork, with `others` the fds to close and `args` this process's
/// argument strings as `arguments_area` read them.
unsafe fn hold(
    others: &[RawFd],
    args: Option<(usize, usize)>,
    null: RawFd,
    gone: RawFd,
    alive: RawFd,
) -> ! {
    // SAFETY: plain syscalls on fds of this process; see the caller. The arguments area is
    // this process's own writable stack memory (a copy-on-write copy of the parent's after the
    // fork), and the name is written within it, the rest zeroed: /proc/PID/cmdline reads it.
    unsafe {
        libc::setsid();
        libc::prctl(libc::PR_SET_NAME, c"tracer-detach".as_ptr());
        if let Some((start, end)) = args {
            let name = b"tracer-detach";
            let area = std::slice::from_raw_parts_mut(start as *mut u8, end - start);
            let n = name.len().min(area.len().saturating_sub(1));
            area[..n].copy_from_slice(&name[..n]);
            area[n..].fill(0);
        }
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            libc::close(null);
        }
        for &fd in others {
            if fd > 2 && fd != gone {
                libc::close(fd);
            }
        }
        libc::close(alive);
        let mut byte = 0u8;
        while libc::read(gone, (&mut byte as *mut u8).cast(), 1) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
        libc::_exit(0)
    }
}

/// Where the kernel keeps this process's argument strings (`arg_start` and `arg_end`, fields 48
/// and 49 of /proc/self/stat), read before the fork.
fn arguments_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields from the third (state) on follow the command name's closing parenthesis.
    let mut fields = stat.get(stat.rfind(')')? + 2..)?.split(' ');
    let start: usize = fields.nth(48 - 3)?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The area read from /proc/self/stat holds this process's command line, as the kernel
    /// shows it in /proc/self/cmdline.
    #[test]
    fn the_arguments_area_is_the_command_line() {
        let (start, end) = arguments_area().unwrap();
        // SAFETY: the kernel's own bounds of this process's argument strings, readable memory.
        let area = unsafe { std::slice::from_raw_parts(start as *const u8, end - start) };
        assert_eq!(area, std::fs::read("/proc/self/cmdline").unwrap());
    }
}
