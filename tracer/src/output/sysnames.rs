//! The value tables of system call arguments, as strace names them: ioctl requests, madvise
//! and fadvise advice, prctl options, epoll operations, mremap flags, statx masks, pipe2 and
//! faccessat2 flags, address families and protocols. Numbers come from the `libc` crate
//! (`libc_names!`, in lib.rs) where it has them; the few it lacks cite their kernel header.

/// ioctl(2) requests strace names that programs on a terminal, a socket or a block device
/// make most (its `ioctls_inc0.h` has thousands: the rest are shown in hex, as strace does
/// for a request it cannot name).
pub const IOCTLS: [(u64, &str); 34] = libc_names![u64;
    TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETA, TCSETA, TCSETAW, TCSETAF, TCSBRK, TCXONC,
    TCFLSH, TIOCEXCL, TIOCNXCL, TIOCSCTTY, TIOCGPGRP, TIOCSPGRP, TIOCOUTQ, TIOCSTI,
    TIOCGWINSZ, TIOCSWINSZ, TIOCMGET, TIOCMSET, FIONREAD, TIOCLINUX, TIOCCONS, FIONBIO,
    TIOCNOTTY, TIOCGSID, TIOCGPTN, TIOCSPTLCK, FIONCLEX, FIOCLEX, FIOASYNC, FICLONE,
];

/// madvise(2)'s advice.
pub const MADVISE: [(i64, &str); 21] = libc_names![i64;
    MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED, MADV_FREE,
    MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK, MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE,
    MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK, MADV_COLD,
    MADV_PAGEOUT, MADV_HWPOISON, MADV_SOFT_OFFLINE,
];

/// posix_fadvise(2)'s advice (fadvise64 on x86-64).
pub const FADVISE: [(i64, &str); 6] = libc_names![i64;
    POSIX_FADV_NORMAL, POSIX_FADV_RANDOM, POSIX_FADV_SEQUENTIAL, POSIX_FADV_WILLNEED,
    POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE,
];

/// prctl(2)'s options.
pub const PRCTL: [(i64, &str); 40] = libc_names![i64;
    PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_GET_UNALIGN,
    PR_SET_UNALIGN, PR_GET_KEEPCAPS, PR_SET_KEEPCAPS, PR_GET_FPEMU, PR_SET_FPEMU,
    PR_GET_FPEXC, PR_SET_FPEXC, PR_GET_TIMING, PR_SET_TIMING, PR_SET_NAME, PR_GET_NAME,
    PR_GET_ENDIAN, PR_SET_ENDIAN, PR_GET_SECCOMP, PR_SET_SECCOMP, PR_CAPBSET_READ,
    PR_CAPBSET_DROP, PR_GET_TSC, PR_SET_TSC, PR_GET_SECUREBITS, PR_SET_SECUREBITS,
    PR_SET_TIMERSLACK, PR_GET_TIMERSLACK, PR_TASK_PERF_EVENTS_DISABLE,
    PR_TASK_PERF_EVENTS_ENABLE, PR_MCE_KILL, PR_MCE_KILL_GET, PR_SET_MM,
    PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS,
    PR_SET_THP_DISABLE, PR_GET_THP_DISABLE, PR_CAP_AMBIENT,
];

/// epoll_ctl(2)'s operations.
pub const EPOLL_OPS: [(i64, &str); 3] =
    libc_names![i64; EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD];

/// mremap(2)'s flags (MREMAP_DONTUNMAP: include/uapi/linux/mman.h, Linux 5.7).
pub const MREMAP_FLAGS: [(u64, &str); 3] = [
    (libc::MREMAP_MAYMOVE as u64, "MREMAP_MAYMOVE"),
    (libc::MREMAP_FIXED as u64, "MREMAP_FIXED"),
    (4, "MREMAP_DONTUNMAP"),
];

/// statx(2)'s mask, composites first (strace writes `STATX_BASIC_STATS|STATX_BTIME`;
/// STATX_MNT_ID_UNIQUE and later from include/uapi/linux/stat.h).
pub const STATX_MASK: [(u64, &str); 18] = [
    (libc::STATX_ALL as u64, "STATX_ALL"),
    (libc::STATX_BASIC_STATS as u64, "STATX_BASIC_STATS"),
    (libc::STATX_TYPE as u64, "STATX_TYPE"),
    (libc::STATX_MODE as u64, "STATX_MODE"),
    (libc::STATX_NLINK as u64, "STATX_NLINK"),
    (libc::STATX_UID as u64, "STATX_UID"),
    (libc::STATX_GID as u64, "STATX_GID"),
    (libc::STATX_ATIME as u64, "STATX_ATIME"),
    (libc::STATX_MTIME as u64, "STATX_MTIME"),
    (libc::STATX_CTIME as u64, "STATX_CTIME"),
    (libc::STATX_INO as u64, "STATX_INO"),
    (libc::STATX_SIZE as u64, "STATX_SIZE"),
    (libc::STATX_BLOCKS as u64, "STATX_BLOCKS"),
    (libc::STATX_BTIME as u64, "STATX_BTIME"),
    (libc::STATX_MNT_ID as u64, "STATX_MNT_ID"),
    (libc::STATX_DIOALIGN as u64, "STATX_DIOALIGN"),
    (0x4000, "STATX_MNT_ID_UNIQUE"),
    (0x8000, "STATX_SUBVOL"),
];

/// pipe2(2)'s flags (0 is `0`, not an access mode), in strace's order.
pub const PIPE_FLAGS: [(u64, &str); 3] = libc_names![u64; O_NONBLOCK, O_DIRECT, O_CLOEXEC];

/// faccessat2(2)'s flags: 0x200 is AT_EACCESS here (AT_REMOVEDIR in unlinkat).
pub const ACCESS_AT_FLAGS: [(u64, &str); 3] = libc_names![u64;
    AT_SYMLINK_NOFOLLOW, AT_EACCESS, AT_EMPTY_PATH,
];

/// Address families (socket, socketpair).
pub const FAMILIES: [(i64, &str); 30] = libc_names![i64;
    AF_UNSPEC, AF_UNIX, AF_INET, AF_AX25, AF_IPX, AF_APPLETALK, AF_NETROM, AF_BRIDGE,
    AF_ATMPVC, AF_X25, AF_INET6, AF_ROSE, AF_DECnet, AF_NETBEUI, AF_SECURITY, AF_KEY,
    AF_NETLINK, AF_PACKET, AF_ASH, AF_ECONET, AF_ATMSVC, AF_RDS, AF_SNA, AF_IRDA, AF_PPPOX,
    AF_WANPIPE, AF_LLC, AF_CAN, AF_BLUETOOTH, AF_ALG,
];

/// The protocols of AF_INET and AF_INET6 sockets (0 is IPPROTO_IP, as strace shows it).
pub const IP_PROTOCOLS: [(i64, &str); 9] = libc_names![i64;
    IPPROTO_IP, IPPROTO_ICMP, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_IPV6, IPPROTO_ICMPV6,
    IPPROTO_SCTP, IPPROTO_UDPLITE, IPPROTO_RAW,
];

/// The protocols of AF_NETLINK sockets.
pub const NETLINK_PROTOCOLS: [(i64, &str); 12] = libc_names![i64;
    NETLINK_ROUTE, NETLINK_USERSOCK, NETLINK_FIREWALL, NETLINK_SOCK_DIAG, NETLINK_NFLOG,
    NETLINK_XFRM, NETLINK_SELINUX, NETLINK_ISCSI, NETLINK_AUDIT, NETLINK_FIB_LOOKUP,
    NETLINK_KOBJECT_UEVENT, NETLINK_GENERIC,
];

/// fcntl(2)'s `F_GETFD`/`F_SETFD` flag.
pub const FD_FLAGS: [(u64, &str); 1] = libc_names![u64; FD_CLOEXEC];
