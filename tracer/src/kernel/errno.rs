//! Linux's errno names (x86-64 numbering), as strace and perf print them. The numbers come from
//! the `libc` crate's constants, not typed here; the kernel-internal codes that only reach a
//! tracer (a syscall interrupted by a signal returns ERESTARTSYS to the kernel, not to the
//! program) are in include/linux/errno.h, which libc does not carry.

/// Every errno of include/uapi/asm-generic/errno-base.h and errno.h, without the aliases
/// (EWOULDBLOCK is EAGAIN, EDEADLOCK is EDEADLK, ENOTSUP is EOPNOTSUPP: strace prints the
/// first names).
const USER: [(i64, &str); 131] = crate::libc_names![i64;
    EPERM, ENOENT, ESRCH, EINTR, EIO, ENXIO, E2BIG, ENOEXEC, EBADF, ECHILD, EAGAIN, ENOMEM,
    EACCES, EFAULT, ENOTBLK, EBUSY, EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ENFILE,
    EMFILE, ENOTTY, ETXTBSY, EFBIG, ENOSPC, ESPIPE, EROFS, EMLINK, EPIPE, EDOM, ERANGE, EDEADLK,
    ENAMETOOLONG, ENOLCK, ENOSYS, ENOTEMPTY, ELOOP, ENOMSG, EIDRM, ECHRNG, EL2NSYNC, EL3HLT,
    EL3RST, ELNRNG, EUNATCH, ENOCSI, EL2HLT, EBADE, EBADR, EXFULL, ENOANO, EBADRQC, EBADSLT,
    EBFONT, ENOSTR, ENODATA, ETIME, ENOSR, ENONET, ENOPKG, EREMOTE, ENOLINK, EADV, ESRMNT,
    ECOMM, EPROTO, EMULTIHOP, EDOTDOT, EBADMSG, EOVERFLOW, ENOTUNIQ, EBADFD, EREMCHG, ELIBACC,
    ELIBBAD, ELIBSCN, ELIBMAX, ELIBEXEC, EILSEQ, ERESTART, ESTRPIPE, EUSERS, ENOTSOCK,
    EDESTADDRREQ, EMSGSIZE, EPROTOTYPE, ENOPROTOOPT, EPROTONOSUPPORT, ESOCKTNOSUPPORT,
    EOPNOTSUPP, EPFNOSUPPORT, EAFNOSUPPORT, EADDRINUSE, EADDRNOTAVAIL, ENETDOWN, ENETUNREACH,
    ENETRESET, ECONNABORTED, ECONNRESET, ENOBUFS, EISCONN, ENOTCONN, ESHUTDOWN, ETOOMANYREFS,
    ETIMEDOUT, ECONNREFUSED, EHOSTDOWN, EHOSTUNREACH, EALREADY, EINPROGRESS, ESTALE, EUCLEAN,
    ENOTNAM, ENAVAIL, EISNAM, EREMOTEIO, EDQUOT, ENOMEDIUM, EMEDIUMTYPE, ECANCELED, ENOKEY,
    EKEYEXPIRED, EKEYREVOKED, EKEYREJECTED, EOWNERDEAD, ENOTRECOVERABLE, ERFKILL, EHWPOISON,
];

/// The highest errno a program can see.
const USER_MAX: usize = 133;

/// [`USER`] by number: built at compile time.
const BY_NUMBER: [&str; USER_MAX + 1] = {
    let mut names = [""; USER_MAX + 1];
    let mut i = 0;
    while i < USER.len() {
        names[USER[i].0 as usize] = USER[i].1;
        i += 1;
    }
    names
};

/// include/linux/errno.h: codes the kernel uses inside and for NFS, from 512; a few reach
/// user space (ENOTSUPP from BPF and NFS) and every tracer sees the restart codes at a
/// syscall's exit.
const KERNEL: [&str; 19] = [
    "ERESTARTSYS",
    "ERESTARTNOINTR",
    "ERESTARTNOHAND",
    "ENOIOCTLCMD",
    "ERESTART_RESTARTBLOCK",
    "EPROBE_DEFER",
    "EOPENSTALE",
    "ENOPARAM",
    "",
    "EBADHANDLE",
    "ENOTSYNC",
    "EBADCOOKIE",
    "ENOTSUPP",
    "ETOOSMALL",
    "ESERVERFAULT",
    "EBADTYPE",
    "EJUKEBOX",
    "EIOCBQUEUED",
    "ERECALLCONFLICT",
];

/// The name of errno `errno` (`ENOENT` for 2), user-visible or kernel-internal.
pub fn name(errno: i64) -> Option<&'static str> {
    let name = match errno {
        1..=133 => BY_NUMBER[errno as usize],
        512..=530 => KERNEL[(errno - 512) as usize],
        _ => "",
    };
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_errno_a_program_can_see_has_its_one_name() {
        // 41 and 58 are unused (EWOULDBLOCK and EDEADLOCK are aliases of 11 and 35).
        for errno in (1..=133).filter(|n| ![41, 58].contains(n)) {
            let name = name(errno).unwrap_or_else(|| panic!("errno {errno} has no name"));
            assert!(name.starts_with('E'), "{errno}: {name}");
        }
        let mut names: Vec<&str> = USER.iter().map(|(_, n)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), USER.len(), "a name twice");
        assert_eq!(name(2), Some("ENOENT"));
        assert_eq!(name(11), Some("EAGAIN"));
        assert_eq!(name(88), Some("ENOTSOCK"));
        assert_eq!(name(95), Some("EOPNOTSUPP"));
        assert_eq!(name(107), Some("ENOTCONN"));
        assert_eq!(name(113), Some("EHOSTUNREACH"));
        assert_eq!(name(133), Some("EHWPOISON"));
        assert_eq!(name(512), Some("ERESTARTSYS"));
        assert_eq!(name(524), Some("ENOTSUPP"));
        assert_eq!(
            (name(0), name(41), name(134), name(520)),
            (None, None, None, None)
        );
    }
}
