//! The few libc calls the commands need beyond the perf layer (`tracer stat`'s rusage, ctime
//! and log fd; `tracer trace`'s time zone).
#![allow(unsafe_code)]

use std::os::fd::{BorrowedFd, OwnedFd};

/// User and system CPU seconds of the reaped children so far (getrusage(2),
/// RUSAGE_CHILDREN): the difference over a run is the command's, as perf stat shows it.
pub fn children_cpu_time() -> (f64, f64) {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

/// The local time as ctime(3) prints it, with its newline (`Sun Nov 22 08:43:10 2026\n`).
pub fn ctime_now() -> String {
    let mut buf = [0 as libc::c_char; 64];
    // SAFETY: time(NULL) has no preconditions; ctime_r writes at most 26 bytes into a
    // 64-byte buffer and NUL-terminates it.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        if libc::ctime_r(&now, buf.as_mut_ptr()).is_null() {
            return "?\n".into();
        }
        std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

/// The local time zone's offset from UTC now, in seconds east (localtime_r(3)'s
/// `tm_gmtoff`): strace's `-t` prints the local time of day.
pub fn utc_offset_secs() -> i64 {
    // SAFETY: time(NULL) has no preconditions; tm is plain data that localtime_r fills.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        match libc::localtime_r(&now, &mut tm).is_null() {
            true => 0,
            false => tm.tm_gmtoff,
        }
    }
}

/// A duplicate of the caller's descriptor `fd` as a file (`--log-fd`).
pub fn file_from_fd(fd: i32) -> std::io::Result<std::fs::File> {
    // SAFETY: F_GETFD only inspects the descriptor table.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just checked to be open, and nothing closes it while it is
    // borrowed here for the duplication.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let owned: OwnedFd = borrowed.try_clone_to_owned()?;
    Ok(std::fs::File::from(owned))
}

/// The thousands separator of the user's locale (`LC_ALL`, `LC_NUMERIC`, `LANG`), as perf's
/// `%'` printf takes it from localeconv(3): empty in the C and POSIX locales.
pub fn thousands_separator() -> String {
    // SAFETY: setlocale with a NUL-terminated "" selects the environment's locale for
    // LC_NUMERIC (tracer is single-threaded here, before any counting thread); localeconv
    // returns a pointer to static data whose thousands_sep is a NUL-terminated string.
    unsafe {
        libc::setlocale(libc::LC_NUMERIC, c"".as_ptr());
        let conv = libc::localeconv();
        if conv.is_null() || (*conv).thousands_sep.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr((*conv).thousands_sep)
            .to_string_lossy()
            .into_owned()
    }
}
