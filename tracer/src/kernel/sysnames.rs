//! The value tables of system call arguments, as strace names them: ioctl requests, madvise
//! and fadvise advice, prctl options, epoll operations, mremap flags, statx masks, pipe2 and
//! faccessat2 flags, address families and protocols. Numbers come from the `libc` crate
//! (`libc_names!`, in lib.rs) where it has them; the few it lacks cite their kernel header.

/// ioctl(2) requests strace names that programs on a terminal, a socket or a block device
/// make most (its `ioctls_inc0.h` has thousands: the rest are shown in hex, as strace does
/// for a request it cannot name).
pub const IOCTLS: [(u64, &str); 49] = libc_names![u64;
    TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETA, TCSETA, TCSETAW, TCSETAF, TCSBRK, TCXONC,
    TCFLSH, TIOCEXCL, TIOCNXCL, TIOCSCTTY, TIOCGPGRP, TIOCSPGRP, TIOCOUTQ, TIOCSTI,
    TIOCGWINSZ, TIOCSWINSZ, TIOCMGET, TIOCMSET, FIONREAD, TIOCLINUX, TIOCCONS, FIONBIO,
    TIOCNOTTY, TIOCGSID, TIOCGPTN, TIOCSPTLCK, FIONCLEX, FIOCLEX, FIOASYNC, FICLONE,
    TIOCSBRK, TIOCCBRK, TCSBRKP, TIOCGETD, TIOCSETD, TIOCPKT, TIOCGSOFTCAR, TIOCSSOFTCAR,
    TIOCGLCKTRMIOS, TIOCSLCKTRMIOS, TIOCGEXCL, TIOCGDEV, TIOCMBIS, TIOCMBIC, TIOCGPTPEER,
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

/// mount(2)'s flags, in bit order as strace prints them (`MS_RDONLY|MS_NOSUID`).
pub const MOUNT_FLAGS: [(u64, &str); 25] = libc_names![u64;
    MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_SYNCHRONOUS, MS_REMOUNT, MS_MANDLOCK,
    MS_DIRSYNC, MS_NOSYMFOLLOW, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_MOVE, MS_REC, MS_SILENT,
    MS_POSIXACL, MS_UNBINDABLE, MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_RELATIME, MS_KERNMOUNT,
    MS_I_VERSION, MS_STRICTATIME, MS_LAZYTIME,
];

/// umount2(2)'s flags.
pub const UMOUNT_FLAGS: [(u64, &str); 4] =
    libc_names![u64; MNT_FORCE, MNT_DETACH, MNT_EXPIRE, UMOUNT_NOFOLLOW];

/// fcntl(2)'s `F_GETFD`/`F_SETFD` flag.
pub const FD_FLAGS: [(u64, &str); 1] = libc_names![u64; FD_CLOEXEC];

/// getrandom(2)'s flags.
pub const GRND_FLAGS: [(u64, &str); 3] =
    libc_names![u64; GRND_NONBLOCK, GRND_RANDOM, GRND_INSECURE];

/// epoll_create1(2)'s flag.
pub const EPOLL_CREATE_FLAGS: [(u64, &str); 1] = libc_names![u64; EPOLL_CLOEXEC];

/// eventfd2(2)'s flags, in strace's order.
pub const EFD_FLAGS: [(u64, &str); 3] = libc_names![u64; EFD_SEMAPHORE, EFD_CLOEXEC, EFD_NONBLOCK];

/// pkey_alloc(2)'s access rights (include/uapi/asm-generic/mman-common.h).
pub const PKEY_ACCESS: [(u64, &str); 2] = [(1, "PKEY_DISABLE_ACCESS"), (2, "PKEY_DISABLE_WRITE")];

/// The socket type's flags, in strace's order (`SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK`).
pub const SOCK_FLAGS: [(u64, &str); 2] = libc_names![u64; SOCK_CLOEXEC, SOCK_NONBLOCK];

/// send/recv flags (`MSG_DONTWAIT|MSG_NOSIGNAL`).
pub const MSG_FLAGS: [(u64, &str); 18] = libc_names![u64;
    MSG_OOB, MSG_PEEK, MSG_DONTROUTE, MSG_CTRUNC, MSG_TRUNC, MSG_DONTWAIT, MSG_EOR,
    MSG_WAITALL, MSG_FIN, MSG_SYN, MSG_CONFIRM, MSG_RST, MSG_ERRQUEUE, MSG_NOSIGNAL, MSG_MORE,
    MSG_WAITFORONE, MSG_FASTOPEN, MSG_CMSG_CLOEXEC,
];

/// preadv2's and pwritev2's flags (`RWF_HIPRI|RWF_NOWAIT`).
pub const RWF_FLAGS: [(u64, &str); 8] = libc_names![u64;
    RWF_HIPRI, RWF_DSYNC, RWF_SYNC, RWF_NOWAIT, RWF_APPEND, RWF_NOAPPEND, RWF_ATOMIC,
    RWF_DONTCACHE,
];

/// Socket option levels, as strace names them (`SOL_TCP` for IPPROTO_TCP).
pub const SOCKOPT_LEVELS: [(i64, &str); 6] =
    libc_names![i64; SOL_IP, SOL_SOCKET, SOL_TCP, SOL_UDP, SOL_IPV6, SOL_NETLINK];

/// SOL_SOCKET's options; the time options by strace's x86-64 names (`SO_RCVTIMEO_OLD`).
pub const SO_OPTIONS: [(i64, &str); 30] = {
    let named: [(i64, &str); 27] = libc_names![i64;
        SO_DEBUG, SO_REUSEADDR, SO_TYPE, SO_ERROR, SO_DONTROUTE, SO_BROADCAST, SO_SNDBUF,
        SO_RCVBUF, SO_KEEPALIVE, SO_OOBINLINE, SO_NO_CHECK, SO_PRIORITY, SO_LINGER,
        SO_BSDCOMPAT, SO_REUSEPORT, SO_PASSCRED, SO_PEERCRED, SO_RCVLOWAT, SO_SNDLOWAT,
        SO_BINDTODEVICE, SO_ACCEPTCONN, SO_PEERSEC, SO_SNDBUFFORCE, SO_RCVBUFFORCE,
        SO_PROTOCOL, SO_DOMAIN, SO_MARK,
    ];
    let mut all = [(0, ""); 30];
    let mut i = 0;
    while i < named.len() {
        all[i] = named[i];
        i += 1;
    }
    all[27] = (libc::SO_RCVTIMEO as i64, "SO_RCVTIMEO_OLD");
    all[28] = (libc::SO_SNDTIMEO as i64, "SO_SNDTIMEO_OLD");
    all[29] = (libc::SO_TIMESTAMP as i64, "SO_TIMESTAMP_OLD");
    all
};

/// SOL_TCP's options.
pub const TCP_OPTIONS: [(i64, &str); 14] = libc_names![i64;
    TCP_NODELAY, TCP_MAXSEG, TCP_CORK, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_SYNCNT,
    TCP_LINGER2, TCP_DEFER_ACCEPT, TCP_WINDOW_CLAMP, TCP_INFO, TCP_QUICKACK, TCP_CONGESTION,
    TCP_USER_TIMEOUT,
];

/// SOL_IP's options (include/uapi/linux/in.h, as strace's sockipoptions names them).
pub const IP_OPTIONS: [(i64, &str); 37] = libc_names![i64;
    IP_TOS, IP_TTL, IP_HDRINCL, IP_OPTIONS, IP_ROUTER_ALERT, IP_RECVOPTS, IP_RETOPTS,
    IP_PKTINFO, IP_PKTOPTIONS, IP_MTU_DISCOVER, IP_RECVERR, IP_RECVTTL, IP_RECVTOS, IP_MTU,
    IP_FREEBIND, IP_IPSEC_POLICY, IP_XFRM_POLICY, IP_PASSSEC, IP_TRANSPARENT, IP_ORIGDSTADDR,
    IP_MINTTL, IP_NODEFRAG, IP_CHECKSUM, IP_BIND_ADDRESS_NO_PORT, IP_RECVFRAGSIZE,
    IP_MULTICAST_IF, IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IP_ADD_MEMBERSHIP,
    IP_DROP_MEMBERSHIP, IP_UNBLOCK_SOURCE, IP_BLOCK_SOURCE, IP_ADD_SOURCE_MEMBERSHIP,
    IP_DROP_SOURCE_MEMBERSHIP, IP_MSFILTER, IP_MULTICAST_ALL, IP_UNICAST_IF,
];

/// SOL_IPV6's options.
pub const IPV6_OPTIONS: [(i64, &str); 6] = libc_names![i64;
    IPV6_UNICAST_HOPS, IPV6_MULTICAST_IF, IPV6_MULTICAST_HOPS, IPV6_MULTICAST_LOOP,
    IPV6_V6ONLY, IPV6_RECVERR,
];

/// epoll events, in strace's order (EPOLLET is bit 31: include/uapi/linux/eventpoll.h).
pub const EPOLL_EVENTS: [(u64, &str); 16] = [
    (libc::EPOLLIN as u64, "EPOLLIN"),
    (libc::EPOLLPRI as u64, "EPOLLPRI"),
    (libc::EPOLLOUT as u64, "EPOLLOUT"),
    (libc::EPOLLERR as u64, "EPOLLERR"),
    (libc::EPOLLHUP as u64, "EPOLLHUP"),
    (0x20, "EPOLLNVAL"),
    (libc::EPOLLRDNORM as u64, "EPOLLRDNORM"),
    (libc::EPOLLRDBAND as u64, "EPOLLRDBAND"),
    (libc::EPOLLWRNORM as u64, "EPOLLWRNORM"),
    (libc::EPOLLWRBAND as u64, "EPOLLWRBAND"),
    (libc::EPOLLMSG as u64, "EPOLLMSG"),
    (libc::EPOLLRDHUP as u64, "EPOLLRDHUP"),
    (libc::EPOLLEXCLUSIVE as u64, "EPOLLEXCLUSIVE"),
    (libc::EPOLLWAKEUP as u64, "EPOLLWAKEUP"),
    (libc::EPOLLONESHOT as u64, "EPOLLONESHOT"),
    (1 << 31, "EPOLLET"),
];

/// poll(2)'s events, in strace's order.
pub const POLL_EVENTS: [(u64, &str); 12] = [
    (libc::POLLIN as u64, "POLLIN"),
    (libc::POLLPRI as u64, "POLLPRI"),
    (libc::POLLOUT as u64, "POLLOUT"),
    (libc::POLLERR as u64, "POLLERR"),
    (libc::POLLHUP as u64, "POLLHUP"),
    (libc::POLLNVAL as u64, "POLLNVAL"),
    (libc::POLLRDNORM as u64, "POLLRDNORM"),
    (libc::POLLRDBAND as u64, "POLLRDBAND"),
    (libc::POLLWRNORM as u64, "POLLWRNORM"),
    (libc::POLLWRBAND as u64, "POLLWRBAND"),
    (0x400, "POLLMSG"),
    (libc::POLLRDHUP as u64, "POLLRDHUP"),
];

/// open(2)'s flags in the order strace writes them (its table's, checked against strace
/// 6.1 here: `O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY`); a composite (O_SYNC, O_TMPFILE)
/// before the flag whose bit it includes.
pub const OPEN_FLAGS: [(u64, &str); 17] = [
    (0o100, "O_CREAT"),
    (0o200, "O_EXCL"),
    (0o400, "O_NOCTTY"),
    (0o1000, "O_TRUNC"),
    (0o2000, "O_APPEND"),
    (0o4000, "O_NONBLOCK"),
    (0o4010000, "O_SYNC"),
    (0o10000, "O_DSYNC"),
    (0o40000, "O_DIRECT"),
    (0o100000, "O_LARGEFILE"),
    (0o400000, "O_NOFOLLOW"),
    (0o1000000, "O_NOATIME"),
    (0o2000000, "O_CLOEXEC"),
    (0o20000, "FASYNC"),
    (0o10000000, "O_PATH"),
    (0o20200000, "O_TMPFILE"),
    (0o200000, "O_DIRECTORY"),
];

pub const AT_FLAGS: [(u64, &str); 7] = [
    (0x100, "AT_SYMLINK_NOFOLLOW"),
    (0x200, "AT_REMOVEDIR"),
    (0x400, "AT_SYMLINK_FOLLOW"),
    (0x800, "AT_NO_AUTOMOUNT"),
    (0x1000, "AT_EMPTY_PATH"),
    (0x2000, "AT_STATX_FORCE_SYNC"),
    (0x4000, "AT_STATX_DONT_SYNC"),
];

pub const PROT: [(u64, &str); 5] = [
    (1, "PROT_READ"),
    (2, "PROT_WRITE"),
    (4, "PROT_EXEC"),
    (0x0100_0000, "PROT_GROWSDOWN"),
    (0x0200_0000, "PROT_GROWSUP"),
];

pub const MAP_FLAGS: [(u64, &str); 14] = [
    (0x10, "MAP_FIXED"),
    (0x20, "MAP_ANONYMOUS"),
    (0x40, "MAP_32BIT"),
    (0x100, "MAP_GROWSDOWN"),
    (0x800, "MAP_DENYWRITE"),
    (0x1000, "MAP_EXECUTABLE"),
    (0x2000, "MAP_LOCKED"),
    (0x4000, "MAP_NORESERVE"),
    (0x8000, "MAP_POPULATE"),
    (0x10000, "MAP_NONBLOCK"),
    (0x20000, "MAP_STACK"),
    (0x40000, "MAP_HUGETLB"),
    (0x80000, "MAP_SYNC"),
    (0x100000, "MAP_FIXED_NOREPLACE"),
];

pub const CLONE_FLAGS: [(u64, &str); 24] = [
    (0x100, "CLONE_VM"),
    (0x200, "CLONE_FS"),
    (0x400, "CLONE_FILES"),
    (0x800, "CLONE_SIGHAND"),
    (0x1000, "CLONE_PIDFD"),
    (0x2000, "CLONE_PTRACE"),
    (0x4000, "CLONE_VFORK"),
    (0x8000, "CLONE_PARENT"),
    (0x10000, "CLONE_THREAD"),
    (0x20000, "CLONE_NEWNS"),
    (0x40000, "CLONE_SYSVSEM"),
    (0x80000, "CLONE_SETTLS"),
    (0x100000, "CLONE_PARENT_SETTID"),
    (0x200000, "CLONE_CHILD_CLEARTID"),
    (0x400000, "CLONE_DETACHED"),
    (0x800000, "CLONE_UNTRACED"),
    (0x1000000, "CLONE_CHILD_SETTID"),
    (0x2000000, "CLONE_NEWCGROUP"),
    (0x4000000, "CLONE_NEWUTS"),
    (0x8000000, "CLONE_NEWIPC"),
    (0x10000000, "CLONE_NEWUSER"),
    (0x20000000, "CLONE_NEWPID"),
    (0x40000000, "CLONE_NEWNET"),
    (0x80000000, "CLONE_IO"),
];

pub const SIGNALS: [&str; 32] = [
    "0",
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// lseek(2)'s `whence`.
pub const WHENCE: [(i64, &str); 5] = [
    (0, "SEEK_SET"),
    (1, "SEEK_CUR"),
    (2, "SEEK_END"),
    (3, "SEEK_DATA"),
    (4, "SEEK_HOLE"),
];

/// rt_sigprocmask(2)'s `how`.
pub const SIG_HOW: [(i64, &str); 3] = [(0, "SIG_BLOCK"), (1, "SIG_UNBLOCK"), (2, "SIG_SETMASK")];

/// fcntl(2)'s commands.
pub const FCNTL_CMDS: [(i64, &str); 15] = [
    (0, "F_DUPFD"),
    (1, "F_GETFD"),
    (2, "F_SETFD"),
    (3, "F_GETFL"),
    (4, "F_SETFL"),
    (5, "F_GETLK"),
    (6, "F_SETLK"),
    (7, "F_SETLKW"),
    (8, "F_SETOWN"),
    (9, "F_GETOWN"),
    (1030, "F_DUPFD_CLOEXEC"),
    (1031, "F_SETPIPE_SZ"),
    (1032, "F_GETPIPE_SZ"),
    (1033, "F_ADD_SEALS"),
    (1034, "F_GET_SEALS"),
];

/// clock_gettime(2)'s clocks.
pub const CLOCKS: [(i64, &str); 8] = [
    (0, "CLOCK_REALTIME"),
    (1, "CLOCK_MONOTONIC"),
    (2, "CLOCK_PROCESS_CPUTIME_ID"),
    (3, "CLOCK_THREAD_CPUTIME_ID"),
    (4, "CLOCK_MONOTONIC_RAW"),
    (5, "CLOCK_REALTIME_COARSE"),
    (6, "CLOCK_MONOTONIC_COARSE"),
    (7, "CLOCK_BOOTTIME"),
];

/// getrlimit(2)'s resources.
pub const RLIMITS: [(i64, &str); 16] = [
    (0, "RLIMIT_CPU"),
    (1, "RLIMIT_FSIZE"),
    (2, "RLIMIT_DATA"),
    (3, "RLIMIT_STACK"),
    (4, "RLIMIT_CORE"),
    (5, "RLIMIT_RSS"),
    (6, "RLIMIT_NPROC"),
    (7, "RLIMIT_NOFILE"),
    (8, "RLIMIT_MEMLOCK"),
    (9, "RLIMIT_AS"),
    (10, "RLIMIT_LOCKS"),
    (11, "RLIMIT_SIGPENDING"),
    (12, "RLIMIT_MSGQUEUE"),
    (13, "RLIMIT_NICE"),
    (14, "RLIMIT_RTPRIO"),
    (15, "RLIMIT_RTTIME"),
];

/// The capabilities by number (include/uapi/linux/capability.h, 0 to 40 as of Linux 5.9):
/// a kernel function's `int cap` (cap_capable, ns_capable) prints as its name.
pub const CAPABILITIES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// arch_prctl(2)'s codes.
pub const ARCH_CODES: [(i64, &str); 12] = [
    (0x1001, "ARCH_SET_GS"),
    (0x1002, "ARCH_SET_FS"),
    (0x1003, "ARCH_GET_FS"),
    (0x1004, "ARCH_GET_GS"),
    (0x1011, "ARCH_GET_CPUID"),
    (0x1012, "ARCH_SET_CPUID"),
    (0x3001, "ARCH_CET_STATUS"),
    (0x5001, "ARCH_SHSTK_ENABLE"),
    (0x5002, "ARCH_SHSTK_DISABLE"),
    (0x5003, "ARCH_SHSTK_LOCK"),
    (0x5004, "ARCH_SHSTK_UNLOCK"),
    (0x5005, "ARCH_SHSTK_STATUS"),
];

/// wait4(2)'s options.
pub const WAIT_OPTIONS: [(u64, &str); 8] = [
    (1, "WNOHANG"),
    (2, "WSTOPPED"),
    (4, "WEXITED"),
    (8, "WCONTINUED"),
    (0x0100_0000, "WNOWAIT"),
    (0x2000_0000, "__WNOTHREAD"),
    (0x4000_0000, "__WALL"),
    (0x8000_0000, "__WCLONE"),
];

/// access(2)'s modes (`F_OK` when none).
pub const ACCESS_MODES: [(u64, &str); 3] = [(4, "R_OK"), (2, "W_OK"), (1, "X_OK")];

/// statfs(2)'s `f_type`, by the names strace gives them (include/uapi/linux/magic.h; ext2,
/// ext3 and ext4 share one number, which strace calls `EXT2_SUPER_MAGIC`). The libc crate
/// has most; the rest are the header's (configfs's is in its own source), checked against it
/// by a unit test where it is installed.
pub const FS_MAGICS: [(i64, &str); 58] = {
    let libc = crate::libc_names![i64;
        EXT2_SUPER_MAGIC, ADFS_SUPER_MAGIC, AFFS_SUPER_MAGIC, AFS_SUPER_MAGIC,
        AUTOFS_SUPER_MAGIC, BCACHEFS_SUPER_MAGIC, BPF_FS_MAGIC, BTRFS_SUPER_MAGIC,
        CGROUP2_SUPER_MAGIC, CGROUP_SUPER_MAGIC, CODA_SUPER_MAGIC, CRAMFS_MAGIC, DEBUGFS_MAGIC,
        DEVPTS_SUPER_MAGIC, ECRYPTFS_SUPER_MAGIC, EFS_SUPER_MAGIC, F2FS_SUPER_MAGIC,
        FUSE_SUPER_MAGIC, FUTEXFS_SUPER_MAGIC, HOSTFS_SUPER_MAGIC, HPFS_SUPER_MAGIC,
        HUGETLBFS_MAGIC, ISOFS_SUPER_MAGIC, JFFS2_SUPER_MAGIC, MINIX2_SUPER_MAGIC,
        MINIX3_SUPER_MAGIC, MINIX_SUPER_MAGIC, MSDOS_SUPER_MAGIC, NCP_SUPER_MAGIC,
        NFS_SUPER_MAGIC, NILFS_SUPER_MAGIC, OCFS2_SUPER_MAGIC, OPENPROM_SUPER_MAGIC,
        OVERLAYFS_SUPER_MAGIC, PROC_SUPER_MAGIC, QNX4_SUPER_MAGIC, QNX6_SUPER_MAGIC,
        RDTGROUP_SUPER_MAGIC, REISERFS_SUPER_MAGIC, SECURITYFS_MAGIC, SELINUX_MAGIC,
        SMACK_MAGIC, SMB_SUPER_MAGIC, SYSFS_MAGIC, TMPFS_MAGIC, TRACEFS_MAGIC,
        UDF_SUPER_MAGIC, USBDEVICE_SUPER_MAGIC, XENFS_SUPER_MAGIC, NSFS_MAGIC,
    ];
    let header: [(i64, &str); 8] = [
        (0x0102_1997, "V9FS_MAGIC"),
        (0x8584_58f6, "RAMFS_MAGIC"),
        (0x7371_7368, "SQUASHFS_MAGIC"),
        (0x6265_6570, "CONFIGFS_MAGIC"),
        (0x6165_676c, "PSTOREFS_MAGIC"),
        (0xde5e_81e4, "EFIVARFS_MAGIC"),
        (0x5846_5342, "XFS_SUPER_MAGIC"),
        (0x0904_1934, "ANON_INODE_FS_MAGIC"),
    ];
    let mut all = [(0i64, ""); 58];
    let mut i = 0;
    while i < libc.len() {
        all[i] = libc[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = header[i - libc.len()];
        i += 1;
    }
    all
};

/// statfs(2)'s `f_flags`, in bit order as strace lists them (`ST_VALID`, set by every
/// statfs since Linux 2.6.36, and `ST_NOSYMFOLLOW` are not in the libc crate).
pub const STATFS_FLAGS: [(u64, &str); 14] = {
    let libc = crate::libc_names![u64;
        ST_RDONLY, ST_NOSUID, ST_NODEV, ST_NOEXEC, ST_SYNCHRONOUS, ST_MANDLOCK, ST_WRITE,
        ST_APPEND, ST_IMMUTABLE, ST_NOATIME, ST_NODIRATIME, ST_RELATIME,
    ];
    [
        libc[0],
        libc[1],
        libc[2],
        libc[3],
        libc[4],
        (0x20, "ST_VALID"),
        libc[5],
        libc[6],
        libc[7],
        libc[8],
        libc[9],
        libc[10],
        libc[11],
        (0x2000, "ST_NOSYMFOLLOW"),
    ]
};

/// sigaltstack(2)'s `ss_flags`.
pub const SS_FLAGS: [(u64, &str); 3] = [
    (libc::SS_ONSTACK as u64, "SS_ONSTACK"),
    (libc::SS_DISABLE as u64, "SS_DISABLE"),
    (1 << 31, "SS_AUTODISARM"),
];

/// capget(2)'s and capset(2)'s header versions.
pub const CAP_VERSIONS: [(i64, &str); 3] = [
    (0x1998_0330, "_LINUX_CAPABILITY_VERSION_1"),
    (0x2007_1026, "_LINUX_CAPABILITY_VERSION_2"),
    (0x2008_0522, "_LINUX_CAPABILITY_VERSION_3"),
];
