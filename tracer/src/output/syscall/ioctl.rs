//! ioctl(2)'s request and argument as strace's ioctl.c writes them: common requests by name
//! (`TCGETS`), others split (`_IOC(_IOC_READ, 0x54, 0x13, 0x8)`), and the `int` some of them
//! point at (`FIONBIO, [1]`).

use super::{arg as plain, pointer, Read};
use crate::kernel::syscalls::Arg;
use crate::kernel::sysnames;

/// The argument of request `request` (its low 32 bits), register `raw`, with the 4 bytes the
/// exit read at it: the `int *` strace reads, given (FIONBIO, FIOASYNC) or filled (FIONREAD,
/// TIOCOUTQ, when the call succeeded), as `[1]`; FICLONE's source descriptor; an address for
/// the other requests strace names, a number for those it does not (it cannot know it is
/// one).
pub(super) fn arg(request: u64, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let int = match read.and_then(|r| r.entries.first()) {
        Some((bytes, 0)) if bytes.len() >= 4 && raw != 0 => {
            Some(i32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes")))
        }
        _ => None,
    };
    let filled = [libc::FIONREAD, libc::TIOCOUTQ];
    let given = [libc::FIONBIO, libc::FIOASYNC];
    match (int, sysnames::IOCTLS.iter().any(|(r, _)| *r == request)) {
        _ if request == libc::FICLONE => (raw as u32 as i32).to_string(),
        (Some(n), _) if given.contains(&request) => format!("[{n}]"),
        (Some(n), _) if filled.contains(&request) && ret == Some(0) => format!("[{n}]"),
        (_, true) => pointer(raw),
        (_, false) => plain(Arg::Hex, raw, None, None),
    }
}

/// An ioctl request strace's common ones do not name, as strace splits it:
/// `_IOC(_IOC_READ, 0x54, 0x13, 0x8)` (direction, type, number, size).
pub(super) fn request(raw: u64) -> String {
    let request = raw & 0xffff_ffff;
    if request == libc::FICLONE {
        // Two names for one number; strace gives both.
        return "BTRFS_IOC_CLONE or FICLONE".into();
    }
    if let Some((_, name)) = sysnames::IOCTLS.iter().find(|(r, _)| *r == request) {
        return (*name).into();
    }
    let direction = match request >> 30 {
        0 => "_IOC_NONE",
        1 => "_IOC_WRITE",
        2 => "_IOC_READ",
        _ => "_IOC_READ|_IOC_WRITE",
    };
    let hex = |v: u64| match v {
        0 => "0".to_string(),
        v => format!("{v:#x}"),
    };
    format!(
        "_IOC({direction}, {}, {}, {})",
        hex((request >> 8) & 0xff),
        hex(request & 0xff),
        hex((request >> 16) & 0x3fff)
    )
}
