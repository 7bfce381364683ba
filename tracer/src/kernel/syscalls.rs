//! What the x86-64 system calls take and return, as strace shows them: each common call's
//! arguments by kind (a path, a buffer, open flags, a signal...), its return value's kind, and
//! strace's classes (`%file`, `%process`, `%network`, `%memory`, `%signal`, `%desc`). Calls not
//! listed are shown from their tracepoint's format (`const char *` a path, pointers in hex,
//! numbers in decimal).

use ::syscalls::Sysno;

/// How one argument is read and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A signed int (the low 32 bits of the register).
    Int,
    /// A size or count (`size_t`, the whole register).
    UInt,
    /// A signed long (offsets).
    Long,
    /// An address or other opaque number, in hex; NULL for 0.
    Ptr,
    /// A flag word shown in hex.
    Hex,
    /// A file descriptor.
    Fd,
    /// A directory fd of the `*at` calls: `AT_FDCWD` by name.
    DirFd,
    /// A NUL-terminated path or name, read after the call (before it for execve).
    Path,
    /// Bytes given to the call, as long as argument `.0` says (write's buffer).
    BufIn(usize),
    /// Bytes the call filled, as long as it returned (read's buffer).
    BufOut,
    /// A structure the call is given, read after the call (its memory is the caller's,
    /// unchanged) and shown as strace does.
    In(Struct),
    /// A structure the call fills, read after it returns; shown as its address when the call
    /// failed, as strace does.
    Out(Struct),
    /// A `char **` array: argv.
    Argv,
    /// A `char **` array: envp, shown as its length (strace's `/* N vars */`).
    Envp,
    /// rt_sigreturn's signal mask, which its entry reads from the signal frame into the first
    /// argument word (the second is 1 once read): `{mask=[INT]}`.
    SigreturnMask,
    /// The directory entries a getdents call filled: their address, and how many when it
    /// succeeded (strace's `/* 144 entries */`, counted in the kernel).
    Dirents,
    /// A file mode in octal.
    Mode,
    /// open(2)'s flags (`O_RDONLY|O_CLOEXEC`).
    OpenFlags,
    /// open(2)'s mode: shown only when the flags create a file (argument `.0` is the flags).
    OpenMode(usize),
    /// `AT_*` flags.
    AtFlags,
    /// access(2)'s mode (`R_OK|W_OK`, `F_OK`).
    AccessMode,
    /// `PROT_*`.
    Prot,
    /// `MAP_*`.
    MapFlags,
    /// `CLONE_*` and the exit signal.
    CloneFlags,
    /// A signal number (`SIGTERM`).
    Signal,
    /// lseek(2)'s whence (`SEEK_SET`).
    Whence,
    /// sigprocmask's how (`SIG_BLOCK`).
    SigHow,
    /// An address family (`AF_INET`).
    Domain,
    /// A socket type and its flags (`SOCK_STREAM|SOCK_CLOEXEC`).
    SockType,
    /// fcntl(2)'s command (`F_GETFL`).
    FcntlCmd,
    /// A clock id (`CLOCK_MONOTONIC`).
    Clock,
    /// futex(2)'s operation (`FUTEX_WAIT_PRIVATE`).
    FutexOp,
    /// futex(2)'s later arguments, shown as strace shows them for the operation (argument
    /// `.1`): only those it uses (`futex(0x..., FUTEX_WAKE_PRIVATE, 1)`), the timeout as a
    /// timespec, `val2` as a number.
    Futex(FutexArg, usize),
    /// A resource limit (`RLIMIT_NOFILE`).
    Rlimit,
    /// arch_prctl(2)'s code (`ARCH_SET_FS`).
    ArchCode,
    /// wait4's options (`WNOHANG`).
    WaitOptions,
    /// An ioctl(2) request (`TCGETS`), in hex when strace's common ones do not name it.
    Ioctl,
    /// ioctl(2)'s argument (argument `.0` is the request): the `int` it points at for the
    /// requests strace reads one of (`FIONBIO, [1]`: 4 bytes read after the call), an
    /// address for the other requests strace names, a number for one it does not (it cannot
    /// know it is one).
    IoctlArg(usize),
    /// shutdown(2)'s how (`SHUT_RDWR`).
    ShutdownHow,
    /// madvise(2)'s advice (`MADV_DONTNEED`).
    Madvise,
    /// posix_fadvise(2)'s advice (`POSIX_FADV_SEQUENTIAL`).
    Fadvise,
    /// prctl(2)'s option (`PR_SET_NAME`).
    Prctl,
    /// prctl(2)'s argument `.0` (1 to 4), as its option (argument 0) reads it
    /// (`PR_CAPBSET_READ, CAP_CHOWN`), or not shown where strace shows none. The first is
    /// read as a string at the exit (PR_SET_NAME's and PR_GET_NAME's name).
    PrctlArg(u8),
    /// epoll_ctl(2)'s operation (`EPOLL_CTL_ADD`).
    EpollOp,
    /// mremap(2)'s flags (`MREMAP_MAYMOVE`).
    MremapFlags,
    /// mremap(2)'s new address: shown only with MREMAP_FIXED among the flags (argument `.0`).
    MremapAddr(usize),
    /// statx(2)'s mask (`STATX_BASIC_STATS|STATX_BTIME`).
    StatxMask,
    /// statx(2)'s flags: the sync type first (`AT_STATX_SYNC_AS_STAT` for none), then the
    /// `AT_*` flags.
    StatxFlags,
    /// pipe2(2)'s flags (`O_CLOEXEC`; `0`).
    PipeFlags,
    /// faccessat2(2)'s flags (`AT_EACCESS`).
    AccessAtFlags,
    /// A socket's protocol, named by its address family (argument `.0`): `IPPROTO_TCP`,
    /// `NETLINK_ROUTE`; a number otherwise.
    Protocol(usize),
    /// fcntl(2)'s third argument, read by its command (argument `.0`): not shown for the
    /// commands that take none (`F_GETFL`), `FD_CLOEXEC` for F_SETFD, open flags for F_SETFL.
    FcntlArg(usize),
    /// A flag word named by a table of `kernel::sysnames` (`GRND_NONBLOCK`), `0` for none.
    Flags(&'static [(u64, &'static str)]),
    /// One value of a table of `kernel::sysnames` (`SOL_SOCKET`), else the number.
    Named(&'static [(i64, &'static str)]),
    /// A socket option's name, by its level (argument `.0`): `SO_REUSEADDR`, `TCP_NODELAY`.
    SockOpt(usize),
    /// One of clone(2)'s registers, shown in strace's order and words, which is not the
    /// kernel's: `child_stack=NULL, flags=...|SIGCHLD, child_tidptr=0x...`.
    Clone(CloneArg),
    /// A sockaddr the call fills (accept, getsockname, recvfrom), as long as the
    /// [`Arg::SockLen`] at argument `.0` says after the call and at most as long as it said
    /// before (strace's `ulen > rlen ? rlen : ulen`), read whole after the call.
    SockName(usize),
    /// The `socklen_t *` of a [`Arg::SockName`], which the call reads and writes: `[16]`, or
    /// `[128 => 16]` when the call changed it (its entry reads the value it was given:
    /// `SlotConfig::entry_int`). A failed call shows what [`SockLenFailed`] says.
    SockLen(SockLenFailed),
    /// A `struct iovec` array the call is given (writev), as long as argument `.0` says:
    /// `[{iov_base="ab", iov_len=2}, ...]`, each element's bytes cut at `-s`.
    IovGiven(usize),
    /// A `struct iovec` array the call fills (readv): as [`Arg::IovGiven`], the bytes as far
    /// as the return value reaches (`iov_base=""` past it); its address when the call failed.
    IovFilled(usize),
    /// A `struct msghdr` the call is given (sendmsg): its name, iovecs (as [`Arg::IovGiven`])
    /// and control messages, as strace shows them.
    MsgGiven,
    /// A `struct msghdr` the call fills (recvmsg): as [`Arg::MsgGiven`], as the call left it,
    /// the name's length at entry beside its length after (`msg_namelen=128 => 16`, read by
    /// the entry: `SlotConfig::entry_int`); for a failed call, that length alone.
    MsgFilled,
    /// A timeout the call counts down and writes back (ppoll's and pselect6's `struct
    /// timespec`, select's `struct timeval`: `.0`): shown as it was given (read by the entry:
    /// `SlotConfig::entry_int`), and what was left beside a positive return (`left
    /// {tv_sec=0, tv_nsec=999997796}`, read after the call).
    TimeoutLeft(Struct),
    /// select's and pselect6's fd sets: `readfds` (`.0` = 0), `writefds` (1), `exceptfds` (2),
    /// `[3 4]`, as the call was given them (read by the entry: the call writes the ready sets
    /// over them), within `nfds` (argument 0). `readfds`' read holds all three, given and
    /// ready (`str_array::FDSETS`).
    FdSet(u8),
    /// pselect6's sixth argument, `{sigmask=[USR1], sigsetsize=8}` (read with its fd sets).
    PselectMask,
    /// A register strace does not show: preadv's `pos_h` (x86-64 passes the whole offset in
    /// `pos_l`).
    Unshown,
}

/// What a failed call shows of its [`Arg::SockLen`], as strace's net.c does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockLenFailed {
    /// The length it was given, `[16]` (getsockname, getpeername, recvfrom).
    Given,
    /// Its address (accept, accept4).
    Address,
}

/// Where clone(2)'s registers (flags, stack, parent_tid, child_tid, tls on x86-64) go in
/// strace's `child_stack=, flags=, parent_tid=, tls=, child_tidptr=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneArg {
    /// The flags register: `child_stack=STACK, flags=FLAGS`.
    StackAndFlags,
    /// Shown with the flags.
    Stack,
    /// `parent_tid=` with CLONE_PARENT_SETTID or CLONE_PIDFD.
    ParentTid,
    /// Shown after `tls=`.
    ChildTid,
    /// `tls=` with CLONE_SETTLS, then `child_tidptr=` with CLONE_CHILD_SETTID or
    /// CLONE_CHILD_CLEARTID.
    TlsAndChildTid,
}

/// The structures calls take and fill that strace decodes, read whole (`buffer_len::fixed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Struct {
    /// The two fds of pipe2(2) and socketpair(2): `[3, 4]`.
    FdPair,
    /// `struct stat` up to `st_size`: `{st_mode=S_IFREG|0644, st_size=3, ...}`.
    Stat,
    /// `struct statx` up to `stx_size`.
    Statx,
    /// `struct timespec`: `{tv_sec=0, tv_nsec=1000000}`.
    Timespec,
    /// `struct timeval`: `{tv_sec=0, tv_usec=1000}`.
    Timeval,
    /// wait4(2)'s status: `[{WIFEXITED(s) && WEXITSTATUS(s) == 0}]`.
    WaitStatus,
    /// `struct rlimit` of getrlimit(2) and setrlimit(2) (`RLIM_INFINITY`).
    Rlimit,
    /// `struct rlimit64` of prlimit64(2) (`RLIM64_INFINITY`).
    Rlimit64,
    /// A kernel `sigset_t` (8 bytes): `[INT TERM]`, `~[RTMIN RT_1]`.
    SigSet,
    /// The kernel's `struct sigaction`.
    SigAction,
    /// A `struct sockaddr` as long as argument `.0` says: AF_UNIX, AF_INET, AF_INET6 and
    /// AF_NETLINK by their fields, `{sa_family=AF_PACKET, ...}` for the others.
    SockAddr(usize),
    /// An `int` (setsockopt's value): `[1]`.
    Int,
    /// `struct utsname`'s first two fields: `{sysname="Linux", nodename="vm", ...}`.
    Utsname,
    /// `struct epoll_event` (packed on x86-64): `{events=EPOLLIN, data={u32=3, u64=3}}`.
    EpollEvent,
    /// epoll_wait's events, as many as it returned (the first [`ARRAY_SHOWN`]).
    EpollEvents,
    /// poll's `struct pollfd` array, as long as argument 1 says (the first [`ARRAY_SHOWN`]):
    /// `[{fd=3, events=POLLIN}]`, and with the return `([{fd=3, revents=POLLIN}])`.
    PollFds,
    /// `struct sysinfo`, every field: `{uptime=1212, loads=[166080, 135136, 89472], ...}`.
    Sysinfo,
    /// `struct statfs` up to `f_flags`: `{f_type=EXT2_SUPER_MAGIC, f_bsize=4096, ...}`.
    Statfs,
    /// `stack_t` (sigaltstack): `{ss_sp=NULL, ss_flags=SS_DISABLE, ss_size=0}`.
    StackT,
    /// A CPU mask, as long as argument 1 says (sched_setaffinity) or the call returned
    /// (sched_getaffinity), up to 1,024 CPUs: `[0 1]`.
    CpuSet,
    /// capget's and capset's `cap_user_header_t`: `{version=_LINUX_CAPABILITY_VERSION_3,
    /// pid=0}`.
    CapHeader,
    /// clone3(2)'s `struct clone_args` (88 bytes, version 2), as long as argument 1 says, in
    /// strace's words: `{flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f...,
    /// stack_size=0x9000}`, and with the return ` => {parent_tid=[N]}`.
    CloneArgs,
    /// A `gid_t` array (getgroups, setgroups), as many as argument 0 says (set) or the call
    /// returned (get), the first [`ARRAY_SHOWN`]: `[4, 24]`.
    Gids,
    /// A `uid_t` or `gid_t` the call fills (getresuid, getresgid): `[1000]`.
    Id,
    /// Their `cap_user_data_t`, two of them (versions 2 and 3, 64 bits a set):
    /// `{effective=1<<CAP_CHOWN|..., permitted=..., inheritable=0}`.
    CapData,
}

/// The elements of an array of structures shown before `...`: strace's 32 (its `-s`
/// default, which it also takes as the count of elements).
pub const ARRAY_SHOWN: usize = 32;

impl Struct {
    /// The bytes read: the structure, or its head up to the last field strace shows.
    pub const fn bytes(self) -> usize {
        match self {
            Struct::FdPair | Struct::SigSet => 8,
            Struct::WaitStatus => 4,
            Struct::Stat => 56,
            Struct::Statx => 48,
            Struct::Timespec | Struct::Timeval | Struct::Rlimit | Struct::Rlimit64 => 16,
            Struct::SigAction => 32,
            // sockaddr_un, the largest strace decodes; cut at the length given.
            Struct::SockAddr(_) => 110,
            Struct::Int => 4,
            Struct::Utsname => 130,
            Struct::EpollEvent => 12,
            Struct::EpollEvents => 12 * ARRAY_SHOWN,
            Struct::PollFds => 8 * ARRAY_SHOWN,
            Struct::Sysinfo => 112,
            Struct::Statfs => 88,
            Struct::StackT | Struct::CapData => 24,
            Struct::CpuSet => 128,
            Struct::CloneArgs => 88,
            Struct::CapHeader => 8,
            Struct::Gids => 4 * ARRAY_SHOWN,
            Struct::Id => 4,
        }
    }
}

/// Which of futex(2)'s arguments after the operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexArg {
    Val,
    /// `timeout`, or `val2` for the requeue operations.
    Timeout,
    Uaddr2,
    Val3,
}

/// How the return value is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    /// A number (or `-1 ERRNO (message)`).
    Int,
    /// An address in hex (mmap, brk), or an error.
    Hex,
    /// Never returns (`= ?`).
    None,
    /// A file mode in octal (umask's previous mask: `= 022`).
    Octal,
    /// fcntl(2)'s result, read by its command (argument `.0`): `= 0x8002 (flags
    /// O_RDWR|O_LARGEFILE)` for F_GETFL, `= 0x1 (flags FD_CLOEXEC)` for F_GETFD.
    Fcntl(usize),
    /// poll(2)'s result with the fds that have events (read of argument 0): `= 1 ([{fd=3,
    /// revents=POLLIN}])`, `= 0 (Timeout)`; ppoll's with the time left of its
    /// [`Arg::TimeoutLeft`]: `= 1 ([{fd=3, revents=POLLIN}], left {tv_sec=4, tv_nsec=7})`.
    Poll,
    /// prctl(2)'s result, read by its option: `= 1 (SUID_DUMP_USER)` for PR_GET_DUMPABLE,
    /// `= 0x10 (SECBIT_KEEP_CAPS)` for PR_GET_SECUREBITS.
    Prctl,
    /// select's and pselect6's result with the ready fds of each set (their
    /// [`Arg::FdSet`]s' read) and the time left: `= 2 (in [3], out [4], left {tv_sec=4,
    /// tv_usec=999})`, `= 0 (Timeout)`.
    Select,
}

/// strace's classes of calls (`-e trace=%file`).
pub mod class {
    pub const FILE: u8 = 1 << 0;
    pub const PROCESS: u8 = 1 << 1;
    pub const NETWORK: u8 = 1 << 2;
    pub const MEMORY: u8 = 1 << 3;
    pub const SIGNAL: u8 = 1 << 4;
    pub const DESC: u8 = 1 << 5;
    pub const IPC: u8 = 1 << 6;
    /// `%name` spellings, as strace takes them.
    pub const NAMES: [(&str, u8); 8] = [
        ("file", FILE),
        ("process", PROCESS),
        ("network", NETWORK),
        ("net", NETWORK),
        ("memory", MEMORY),
        ("signal", SIGNAL),
        ("desc", DESC),
        ("ipc", IPC),
    ];
    /// strace's classes that are lists of calls (`%stat`, `%%stat`, `%clock`, ...), as
    /// strace 6 defines them for x86-64 (the spellings without `%`; `%%stat` is `%stat`).
    pub const LISTS: [(&str, &[&str]); 9] = [
        ("stat", &["stat"]),
        ("lstat", &["lstat"]),
        ("fstat", &["fstat", "newfstatat", "statx"]),
        ("%stat", &["stat", "fstat", "lstat", "newfstatat", "statx"]),
        ("statfs", &["statfs"]),
        ("fstatfs", &["fstatfs"]),
        ("%statfs", &["statfs", "fstatfs", "ustat"]),
        (
            "clock",
            &[
                "time",
                "gettimeofday",
                "settimeofday",
                "adjtimex",
                "clock_settime",
                "clock_gettime",
                "clock_getres",
                "clock_adjtime",
            ],
        ),
        (
            "creds",
            &[
                "getuid",
                "getgid",
                "setuid",
                "setgid",
                "geteuid",
                "getegid",
                "setreuid",
                "setregid",
                "getgroups",
                "setgroups",
                "setresuid",
                "getresuid",
                "setresgid",
                "getresgid",
                "setfsuid",
                "setfsgid",
                "capget",
                "capset",
                "prctl",
            ],
        ),
    ];
}

/// One call's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub name: &'static str,
    pub classes: u8,
    pub args: &'static [Arg],
    pub ret: Ret,
}

mod shapes;
pub use shapes::SHAPES;

/// The shape of `name`, when it is one of [`SHAPES`].
pub fn shape_of(name: &str) -> Option<&'static Shape> {
    SHAPES.iter().find(|s| s.name == name)
}

/// Syscall numbers by name in this architecture's table.
pub fn number(name: &str) -> Option<u32> {
    name.parse::<Sysno>().ok().map(|s| s.id() as u32)
}

/// The name of syscall `nr`.
pub fn name(nr: u32) -> Option<&'static str> {
    Sysno::new(nr as usize).map(|s| s.name())
}

/// Every syscall of the table, by number.
pub fn all() -> impl Iterator<Item = (u32, &'static str)> {
    Sysno::iter().map(|s| (s.id() as u32, s.name()))
}

/// The calls of a class (`class::FILE`...).
pub fn in_class(bits: u8) -> impl Iterator<Item = &'static str> {
    SHAPES
        .iter()
        .filter(move |s| s.classes & bits != 0)
        .map(|s| s.name)
}

/// The kernel names its `syscalls:` events after each entry point's SYSCALL_DEFINE, which
/// differs from the table's name for these (event name, table name).
pub const EVENT_NAMES: [(&str, &str); 6] = [
    ("newstat", "stat"),
    ("newfstat", "fstat"),
    ("newlstat", "lstat"),
    ("newuname", "uname"),
    ("sendfile64", "sendfile"),
    ("umount", "umount2"),
];

/// The table's name of a `syscalls:` event's call (`newstat` -> `stat`).
pub fn table_name(event: &str) -> &str {
    EVENT_NAMES
        .iter()
        .find(|(e, _)| *e == event)
        .map_or(event, |(_, t)| *t)
}

/// The `syscalls:` event name of a table call (`stat` -> `newstat`).
pub fn event_name(call: &str) -> &str {
    EVENT_NAMES
        .iter()
        .find(|(_, t)| *t == call)
        .map_or(call, |(e, _)| *e)
}

#[cfg(test)]
mod tests {
    use super::Arg::*;
    use super::*;

    #[test]
    fn the_calls_with_iovec_arrays_are_the_ones_the_exit_program_reads() {
        let mut calls: Vec<u32> = (SHAPES.iter())
            .filter(|s| {
                (s.args.iter())
                    .any(|a| matches!(a, IovGiven(_) | IovFilled(_) | MsgGiven | MsgFilled))
            })
            .map(|s| number(s.name).expect("a number"))
            .collect();
        calls.sort();
        assert_eq!(calls, tracer_common::IOVEC_CALLS);
        // As the first read (the exit program copies it to the area's start): after the fd.
        for shape in (SHAPES.iter()).filter(|s| calls.contains(&number(s.name).unwrap())) {
            assert!(matches!(
                shape.args[..2],
                [Fd, IovGiven(_) | IovFilled(_) | MsgGiven | MsgFilled]
            ));
        }
    }

    #[test]
    fn every_shape_is_a_syscall_of_this_table_once() {
        for s in SHAPES {
            assert!(number(s.name).is_some(), "{} is not a syscall", s.name);
            assert_eq!(
                SHAPES.iter().filter(|t| t.name == s.name).count(),
                1,
                "{}",
                s.name
            );
        }
        assert_eq!(number("openat"), Some(257));
        assert_eq!(name(59), Some("execve"));
    }

    #[test]
    fn open_mode_and_buffer_lengths_name_arguments_that_exist() {
        for s in SHAPES {
            for a in s.args {
                if let OpenMode(i) | BufIn(i) = a {
                    assert!(*i < s.args.len(), "{}", s.name);
                }
            }
        }
    }

    #[test]
    fn classes_hold_the_calls_strace_puts_there() {
        let file: Vec<_> = in_class(class::FILE).collect();
        assert!(file.contains(&"openat") && file.contains(&"execve"));
        assert!(!file.contains(&"read"));
        let net: Vec<_> = in_class(class::NETWORK).collect();
        assert!(net.contains(&"connect") && !net.contains(&"openat"));
        assert_eq!(table_name("newstat"), "stat");
        assert_eq!(event_name("stat"), "newstat");
    }
}
