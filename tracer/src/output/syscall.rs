//! One system call's values as strace writes them: flags by name (`O_RDONLY|O_CLOEXEC`),
//! `AT_FDCWD`, octal modes, strings escaped strace's way and marked when cut (`"abc"...`),
//! and return values with their errno (`-1 ENOENT (No such file or directory)`).

use tracer_common::str_flag;

use crate::kernel::syscalls::{Arg, CloneArg, FutexArg, Ret, Struct};
use crate::kernel::sysnames::{self, AT_FLAGS, CLONE_FLAGS, MAP_FLAGS, OPEN_FLAGS, PROT, SIGNALS};

pub mod fdset;
mod ioctl;
mod msghdr;
mod prctl;
mod sockname;
pub use msghdr::{msghdr, MsgHdr};
pub use sockname::{sockname, SockName};

/// What was read of one string argument (a path, a buffer, an array's elements).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Read {
    /// The bytes and flags of each entry (one, or an array's elements).
    pub entries: Vec<(Vec<u8>, u8)>,
    /// An array (`argv`): its elements are `entries`.
    pub array: bool,
    /// The array had more elements than were read.
    pub more: bool,
    /// strace's `-x` (1: a string with a byte outside the printable ones and `\t\n\v\f\r`
    /// in hexadecimal) and `-xx` (2: every string).
    pub hex: u8,
    /// Elements of an array shown at most, then `...` (strace's `-s` bounds them too); 0 for
    /// no bound.
    pub elements: usize,
}

impl Read {
    /// A read's entries from the event's string area, in order (the first is an array's
    /// header when [`str_flag::ARRAY`] is set).
    pub fn from_entries<'a>(entries: impl Iterator<Item = tracer_common::StrEntry<'a>>) -> Read {
        let mut read = Read::default();
        for e in entries {
            if e.flags & str_flag::ARRAY != 0 {
                read.array = true;
            } else if e.flags & str_flag::MORE != 0 {
                read.more = true;
            } else {
                read.entries.push((e.bytes.to_vec(), e.flags));
            }
        }
        read
    }
}

/// `bytes` quoted and escaped as strace does: `\n`, `\t`, `\"`, `\\`, and octal for other
/// unprintable bytes (`\0`, `\177`; three digits when a digit follows).
pub fn quote(bytes: &[u8], out: &mut String) {
    out.push('"');
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let next_digit = bytes.get(i + 1).is_some_and(|n| (b'0'..=b'7').contains(n));
                match next_digit {
                    true => out.push_str(&format!("\\{b:03o}")),
                    false => out.push_str(&format!("\\{b:o}")),
                }
            }
        }
    }
    out.push('"');
}

/// `bytes` quoted in hexadecimal, as strace's `-x` and `-xx` write a string: `"\x7f\x45"`.
fn quote_hex(bytes: &[u8], out: &mut String) {
    out.push('"');
    for b in bytes {
        out.push_str(&format!("\\x{b:02x}"));
    }
    out.push('"');
}

/// One string entry as strace shows it: quoted (in hexadecimal as `hex` says: [`Read::hex`]),
/// `...` after a cut one; the address when it could not be read.
fn string(bytes: &[u8], flags: u8, raw: u64, hex: u8, out: &mut String) {
    if flags & (str_flag::FAULT | str_flag::NO_ROOM) != 0 {
        out.push_str(&pointer(raw));
        return;
    }
    let unprintable = |b: &u8| !(0x20..=0x7e).contains(b) && !b"\t\n\x0b\x0c\r".contains(b);
    match hex >= 2 || hex == 1 && bytes.iter().any(unprintable) {
        true => quote_hex(bytes, out),
        false => quote(bytes, out),
    }
    if flags & str_flag::TRUNCATED != 0 {
        out.push_str("...");
    }
}

/// An address: `NULL` or hex.
pub fn pointer(raw: u64) -> String {
    match raw {
        0 => "NULL".into(),
        _ => format!("{raw:#x}"),
    }
}

/// Flag bits by name, in order; bits left over in hex. `zero` is shown for no bits.
pub(crate) fn flags(value: u64, names: &[(u64, &str)], zero: &str) -> String {
    if value == 0 {
        return zero.into();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut left = value;
    for &(bits, name) in names {
        if bits != 0 && left & bits == bits {
            parts.push(name.into());
            left &= !bits;
        }
    }
    if left != 0 {
        parts.push(format!("{left:#x}"));
    }
    parts.join("|")
}

/// One value of a table, else the number.
fn named(value: i64, names: &[(i64, &str)]) -> String {
    (names.iter().find(|(v, _)| *v == value)).map_or(value.to_string(), |(_, n)| (*n).to_string())
}

const O_CREAT: u64 = 0o100;
const O_TMPFILE_BIT: u64 = 0o20000000;

/// open(2) flags: the access mode, then the other bits by name, in strace's order.
pub fn open_flags(raw: u64) -> String {
    let raw = raw & 0xffff_ffff;
    let mode = match raw & 3 {
        0 => "O_RDONLY",
        1 => "O_WRONLY",
        2 => "O_RDWR",
        _ => "O_ACCMODE",
    };
    let mut parts = vec![mode.to_string()];
    let mut left = raw & !3;
    for &(bits, name) in &OPEN_FLAGS {
        if left & bits == bits {
            parts.push(name.to_string());
            left &= !bits;
        }
    }
    if left != 0 {
        parts.push(format!("{left:#o}"));
    }
    parts.join("|")
}

/// A signal's name (`SIGTERM`; real-time ones as strace names them, `SIGRT_2`).
pub fn signal(raw: u64) -> String {
    let n = raw as u32 as i32;
    match n {
        1..=31 => SIGNALS[n as usize].into(),
        // The kernel's SIGRTMIN is 32 (glibc keeps 32 and 33 for itself), as strace names it.
        32 => "SIGRTMIN".into(),
        33..=64 => format!("SIGRT_{}", n - 32),
        _ => n.to_string(),
    }
}

fn clone_flags(raw: u64) -> String {
    let sig = raw & 0xff;
    let mut text = flags(raw & !0xff, &CLONE_FLAGS, "");
    if sig != 0 {
        if !text.is_empty() {
            text.push('|');
        }
        text.push_str(&signal(sig));
    }
    if text.is_empty() {
        text.push('0');
    }
    text
}

fn sock_type(raw: u64) -> String {
    let raw = raw & 0xffff_ffff;
    let kind = named(
        (raw & 0xf) as i64,
        &[
            (1, "SOCK_STREAM"),
            (2, "SOCK_DGRAM"),
            (3, "SOCK_RAW"),
            (4, "SOCK_RDM"),
            (5, "SOCK_SEQPACKET"),
            (10, "SOCK_PACKET"),
        ],
    );
    let rest = flags(raw & !0xf, &sysnames::SOCK_FLAGS, "");
    match (raw & 0xf, rest.is_empty()) {
        (0, false) => rest,
        (_, true) => kind,
        _ => format!("{kind}|{rest}"),
    }
}

fn futex_op(raw: u64) -> String {
    let raw = raw as u32;
    const OPS: [&str; 14] = [
        "FUTEX_WAIT",
        "FUTEX_WAKE",
        "FUTEX_FD",
        "FUTEX_REQUEUE",
        "FUTEX_CMP_REQUEUE",
        "FUTEX_WAKE_OP",
        "FUTEX_LOCK_PI",
        "FUTEX_UNLOCK_PI",
        "FUTEX_TRYLOCK_PI",
        "FUTEX_WAIT_BITSET",
        "FUTEX_WAKE_BITSET",
        "FUTEX_WAIT_REQUEUE_PI",
        "FUTEX_CMP_REQUEUE_PI",
        "FUTEX_LOCK_PI2",
    ];
    let cmd = (raw & 0x7f) as usize;
    let mut text = match OPS.get(cmd) {
        Some(op) => op.to_string(),
        None => (raw & 0x7f).to_string(),
    };
    if raw & 128 != 0 {
        text.push_str("_PRIVATE");
    }
    if raw & 256 != 0 {
        text.push_str("|FUTEX_CLOCK_REALTIME");
    }
    text
}

/// A file mode as C's `%#03o` writes it, as strace does: `0644`, `000`.
fn mode(raw: u64) -> String {
    format!("{:0>3}", format!("0{:o}", raw as u32))
}

/// An argument of kind `arg` with register value `raw`; `read` is what was read of it (a
/// string argument), `args` all the call's registers (for lengths).
pub fn arg(arg: Arg, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let int = raw as u32 as i32;
    match arg {
        Arg::Int => int.to_string(),
        Arg::Fd => int.to_string(),
        Arg::UInt => raw.to_string(),
        Arg::Long => (raw as i64).to_string(),
        Arg::Ptr => pointer(raw),
        Arg::Hex => match raw {
            0 => "0".into(),
            _ => format!("{raw:#x}"),
        },
        Arg::DirFd => match int {
            -100 => "AT_FDCWD".into(),
            fd => fd.to_string(),
        },
        Arg::Path | Arg::BufIn(_) | Arg::BufOut => buffer(arg, raw, read, ret),
        // Shown with their lengths (`sockname`); alone, where they are.
        Arg::SockName(_) | Arg::SockLen(_) => pointer(raw),
        Arg::IovGiven(_) | Arg::IovFilled(_) => iovecs(arg, raw, read, ret),
        // Shown with the length its entry read (`msghdr`); alone, its address.
        Arg::MsgGiven | Arg::MsgFilled => pointer(raw),
        Arg::Unshown => String::new(),
        Arg::In(kind) | Arg::Out(kind) => structure(arg, kind, raw, read, ret),
        // As given, from the entry's word (`probe::syscall`); alone, as the call left it.
        Arg::TimeoutLeft(kind) => structure(Arg::In(kind), kind, raw, read, ret),
        // Read with `nfds` and each other (`fdset`); alone, their addresses.
        Arg::FdSet(_) | Arg::PselectMask => pointer(raw),
        Arg::Argv => argv(raw, read),
        // The counts come with the event (`environ`, `dirents` in `probe::syscall`).
        Arg::Dirents => pointer(raw),
        // Its read flag is the next word: `in_call` knows it.
        Arg::SigreturnMask => format!("{{mask={}}}", super::structs::sigset(raw)),
        Arg::Envp => match read {
            Some(r) if r.array => match r.more {
                true => format!("{} /* {}+ vars */", pointer(raw), r.entries.len()),
                false => format!("{} /* {} vars */", pointer(raw), r.entries.len()),
            },
            _ => pointer(raw),
        },
        Arg::Mode | Arg::OpenMode(_) => mode(raw),
        Arg::OpenFlags => open_flags(raw),
        Arg::AtFlags => flags(raw & 0xffff_ffff, &AT_FLAGS, "0"),
        Arg::AccessMode => flags(raw & 0xffff_ffff, &sysnames::ACCESS_MODES, "F_OK"),
        Arg::Prot => flags(raw & 0xffff_ffff, &PROT, "PROT_NONE"),
        Arg::MapFlags => map_flags(raw),
        Arg::CloneFlags => clone_flags(raw),
        Arg::Signal => signal(raw),
        Arg::Whence => named(int.into(), &sysnames::WHENCE),
        Arg::SigHow => named(int.into(), &sysnames::SIG_HOW),
        Arg::Domain => named(int.into(), &sysnames::FAMILIES),
        Arg::SockType => sock_type(raw),
        Arg::FcntlCmd => named(int.into(), &sysnames::FCNTL_CMDS),
        Arg::Clock => named(int.into(), &sysnames::CLOCKS),
        Arg::FutexOp => futex_op(raw),
        Arg::Rlimit => named(int.into(), &sysnames::RLIMITS),
        Arg::ArchCode => named(int.into(), &sysnames::ARCH_CODES),
        Arg::Ioctl => ioctl::request(raw),
        Arg::IoctlArg(_) => pointer(raw),
        Arg::ShutdownHow => named(
            int.into(),
            &crate::libc_names![i64; SHUT_RD, SHUT_WR, SHUT_RDWR],
        ),
        Arg::Madvise => named(int.into(), &sysnames::MADVISE),
        Arg::Fadvise => named(int.into(), &sysnames::FADVISE),
        Arg::Prctl => prctl::option(raw),
        // Alone (no option to read it by): as strace's print_prctl_args.
        Arg::PrctlArg(_) => prctl::hex(raw),
        Arg::EpollOp => named(int.into(), &sysnames::EPOLL_OPS),
        Arg::MremapFlags => flags(raw & 0xffff_ffff, &sysnames::MREMAP_FLAGS, "0"),
        Arg::StatxMask => flags(raw & 0xffff_ffff, &sysnames::STATX_MASK, "0"),
        Arg::StatxFlags => statx_flags(raw),
        Arg::PipeFlags => flags(raw & 0xffff_ffff, &sysnames::PIPE_FLAGS, "0"),
        Arg::AccessAtFlags => flags(raw & 0xffff_ffff, &sysnames::ACCESS_AT_FLAGS, "0"),
        // Read by another argument: `in_call` knows it; alone, the plain value.
        Arg::Protocol(_) | Arg::Futex(..) => int.to_string(),
        Arg::FcntlArg(_) => format!("{raw:#x}"),
        Arg::MremapAddr(_) => pointer(raw),
        Arg::Flags(names) => flags(raw & 0xffff_ffff, names, "0"),
        Arg::Named(names) => named(int.into(), names),
        Arg::SockOpt(_) => int.to_string(),
        Arg::Clone(_) => pointer(raw),
        Arg::WaitOptions => flags(raw & 0xffff_ffff, &sysnames::WAIT_OPTIONS, "0"),
    }
}

/// An exec's environment as strace shows it: its address and length (`0x7ffd... /* 1 var
/// */`, `/* 35 vars */`).
pub fn environ(raw: u64, count: u64) -> String {
    match count {
        1 => format!("{} /* 1 var */", pointer(raw)),
        n => format!("{} /* {n} vars */", pointer(raw)),
    }
}

/// A getdents buffer as strace shows it: its address and how many entries the call returned
/// (`/* 1 entries */`, strace's wording), `+` when there were more than were counted.
pub fn dirents(raw: u64, count: u64, more: bool) -> String {
    let more = if more { "+" } else { "" };
    format!("{} /* {count}{more} entries */", pointer(raw))
}

/// A path or buffer argument: the bytes read, or its address (a buffer the call filled is
/// only there when it succeeded).
fn buffer(arg: Arg, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let failed = arg == Arg::BufOut && ret.is_none_or(|r| r < 0);
    match (read.and_then(|r| r.entries.first()), raw, failed) {
        (_, 0, _) => "NULL".into(),
        (Some((bytes, flags)), _, false) => {
            let mut out = String::new();
            string(bytes, *flags, raw, read.map_or(0, |r| r.hex), &mut out);
            out
        }
        _ => pointer(raw),
    }
}

/// A `struct iovec` array as strace shows it (`[{iov_base="ab", iov_len=2}, ...]`, `...` for
/// the elements past those read; the bases' addresses where a call that fills them failed),
/// or its address: unreadable, or the call did not return.
fn iovecs(arg: Arg, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let Some(ret) = ret else {
        return pointer(raw);
    };
    let failed = matches!(arg, Arg::IovFilled(_)) && ret < 0;
    let Some((read, (pairs, 0))) = read.and_then(|r| Some((r, r.entries.first()?))) else {
        return pointer(raw);
    };
    if raw == 0 {
        return pointer(raw);
    }
    let shown = match read.elements {
        0 => usize::MAX,
        n => n,
    };
    let mut out = String::from("[");
    for (i, pair) in pairs.chunks_exact(16).take(shown).enumerate() {
        let word = |at: usize| u64::from_ne_bytes(pair[at..at + 8].try_into().expect("8 bytes"));
        let (base, len) = (word(0), word(8));
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str("{iov_base=");
        match read.entries.get(1 + i) {
            Some((bytes, flags)) if base != 0 && !failed => {
                string(bytes, *flags, base, read.hex, &mut out)
            }
            _ => out.push_str(&pointer(base)),
        }
        out.push_str(&format!(", iov_len={len}}}"));
    }
    if read.more || pairs.len() / 16 > shown {
        out.push_str(", ...");
    }
    out.push(']');
    out
}

/// A structure the call reads or fills, decoded as strace shows it, or its address. What a
/// call fills is there only when it succeeded (wait4: returned a child).
fn structure(arg: Arg, kind: Struct, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let filled = match (arg, kind) {
        (Arg::In(_), _) => true,
        (_, Struct::WaitStatus) => ret.is_some_and(|r| r > 0),
        _ => ret == Some(0),
    };
    let read = read.and_then(|r| r.entries.first());
    match (raw, read, filled) {
        (0, _, _) => "NULL".into(),
        (_, Some((bytes, 0)), true) => {
            super::structs::decode(kind, bytes).unwrap_or_else(|| pointer(raw))
        }
        _ => pointer(raw),
    }
}

/// An argv: its strings in brackets, `...` for those left out.
fn argv(raw: u64, read: Option<&Read>) -> String {
    let Some(r) = read.filter(|r| r.array) else {
        return pointer(raw);
    };
    let mut out = String::from("[");
    for (i, (bytes, flags)) in r.entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        string(bytes, *flags, 0, r.hex, &mut out);
    }
    if r.more {
        out.push_str(if r.entries.is_empty() { "..." } else { ", ..." });
    }
    out.push(']');
    out
}

/// mmap(2)'s flags: the mapping type, then the other bits.
fn map_flags(raw: u64) -> String {
    let kind = match raw & 0xf {
        1 => "MAP_SHARED",
        2 => "MAP_PRIVATE",
        3 => "MAP_SHARED_VALIDATE",
        _ => "",
    };
    let rest = flags(raw & 0xffff_fff0, &MAP_FLAGS, "");
    match (kind.is_empty(), rest.is_empty()) {
        (true, true) => format!("{:#x}", raw & 0xf),
        (false, true) => kind.into(),
        (true, false) => rest,
        (false, false) => format!("{kind}|{rest}"),
    }
}

/// statx(2)'s flags: the sync type, then the `AT_` bits.
fn statx_flags(raw: u64) -> String {
    let sync = match raw & 0x6000 {
        0x2000 => "AT_STATX_FORCE_SYNC",
        0x4000 => "AT_STATX_DONT_SYNC",
        0x6000 => "AT_STATX_SYNC_TYPE",
        _ => "AT_STATX_SYNC_AS_STAT",
    };
    match flags(raw & 0xffff_ffff & !0x6000, &AT_FLAGS, "") {
        rest if rest.is_empty() => sync.into(),
        rest => format!("{sync}|{rest}"),
    }
}

/// Argument `i` of a call whose registers are `args`, read by the other arguments it depends
/// on (a socket's protocol by its family, fcntl's argument by its command), else as [`arg`].
pub fn in_call(kind: Arg, args: &[u64], i: usize, read: Option<&Read>, ret: Option<i64>) -> String {
    let raw = args.get(i).copied().unwrap_or(0);
    let int = i64::from(raw as u32 as i32);
    let other = |at: usize| args.get(at).map_or(-1, |&v| i64::from(v as u32 as i32));
    match kind {
        Arg::Protocol(family) => match other(family) {
            f if f == i64::from(libc::AF_INET) || f == i64::from(libc::AF_INET6) => {
                named(int, &sysnames::IP_PROTOCOLS)
            }
            f if f == i64::from(libc::AF_NETLINK) => named(int, &sysnames::NETLINK_PROTOCOLS),
            _ => int.to_string(),
        },
        Arg::IoctlArg(request) => {
            let request = args.get(request).map_or(0, |r| r & 0xffff_ffff);
            ioctl::arg(request, raw, read, ret)
        }
        Arg::Futex(which, op) => {
            let op = futex_cmd(args.get(op).copied().unwrap_or(0));
            futex_arg(which, op, raw, read, ret)
        }
        Arg::FcntlArg(cmd) => match other(cmd) {
            c if c == i64::from(libc::F_SETFD) => {
                flags(raw & 0xffff_ffff, &sysnames::FD_FLAGS, "0")
            }
            c if c == i64::from(libc::F_SETFL) => open_flags(raw),
            c if FCNTL_LOCKS.contains(&c) => pointer(raw),
            _ => int.to_string(),
        },
        Arg::SockOpt(level) => {
            let names: &[(i64, &str)] = match other(level) {
                l if l == i64::from(libc::SOL_SOCKET) => &sysnames::SO_OPTIONS,
                l if l == i64::from(libc::SOL_TCP) => &sysnames::TCP_OPTIONS,
                l if l == i64::from(libc::SOL_IP) => &sysnames::IP_OPTIONS,
                l if l == i64::from(libc::SOL_IPV6) => &sysnames::IPV6_OPTIONS,
                _ => &[],
            };
            named(int, names)
        }
        Arg::Clone(part) => clone_arg(part, args, raw, read, ret),
        // A sockaddr is as long as the call says; epoll_ctl's DEL ignores its event.
        Arg::In(Struct::SockAddr(len)) => {
            let len = args.get(len).map_or(0, |&l| l as u32 as usize);
            cut_struct(raw, read, len, super::structs::sockaddr)
        }
        Arg::In(Struct::EpollEvent) if other(1) == i64::from(libc::EPOLL_CTL_DEL) => pointer(raw),
        Arg::SigreturnMask if args.get(1) != Some(&1) => "{mask=?}".into(),
        // Arrays: poll's as long as its nfds, epoll_wait's as many events as it returned.
        Arg::In(Struct::PollFds) => {
            let count = args.get(1).map_or(0, |&n| n as u32 as usize);
            struct_array(Struct::PollFds, 8, count, raw, read)
        }
        // clone3's arguments as long as the call was told, and the child's id the kernel wrote
        // to `parent_tid` (the id the call returns: strace reads it from there).
        Arg::In(Struct::CloneArgs) => {
            let size = args.get(1).map_or(0, |&l| l as usize);
            cut_struct(raw, read, size, |given| {
                let mut text = super::structs::decode(Struct::CloneArgs, given)?;
                let flags = u64::from_ne_bytes(given.get(..8)?.try_into().ok()?);
                if let Some(child) = ret.filter(|&r| r > 0 && flags & CLONE_PARENT_SETTID != 0) {
                    text.push_str(&format!(" => {{parent_tid=[{child}]}}"));
                }
                Some(text)
            })
        }
        // A CPU mask: as long as the call was told (set) or returned (get).
        Arg::In(Struct::CpuSet) | Arg::Out(Struct::CpuSet) => {
            let len = match kind {
                Arg::In(_) => args.get(1).map_or(0, |&l| l as u32 as usize),
                _ => ret.filter(|&n| n > 0).map_or(0, |n| n as usize),
            };
            cut_struct(raw, read, len, |mask| match mask.is_empty() {
                true => None,
                false => super::structs::decode(Struct::CpuSet, mask),
            })
        }
        Arg::PrctlArg(i) => prctl::arg(args, i, read, ret).unwrap_or_default(),
        // strace's print_groups: as many as the call was given (set) or returned (get), as an
        // `unsigned int`; past NGROUPS_MAX (an error's -1), the address.
        Arg::In(Struct::Gids) | Arg::Out(Struct::Gids) => {
            let count = match kind {
                Arg::In(_) => Some(other(0)),
                _ => ret,
            };
            match count.map(|n| n as u32) {
                Some(n) if n <= NGROUPS_MAX => match (raw, n) {
                    (0, _) => "NULL".into(),
                    (_, 0) => "[]".into(),
                    _ => struct_array(Struct::Gids, 4, n as usize, raw, read),
                },
                _ => pointer(raw),
            }
        }
        Arg::Out(Struct::EpollEvents) => match ret {
            Some(n) if n >= 0 => struct_array(Struct::EpollEvents, 12, n as usize, raw, read),
            _ => pointer(raw),
        },
        _ => arg(kind, raw, read, ret),
    }
}

/// A structure read whole and cut at the `len` bytes the call was given or returned, as
/// `decode` shows it; `NULL`, or its address where it was not read or does not decode.
fn cut_struct(
    raw: u64,
    read: Option<&Read>,
    len: usize,
    decode: impl FnOnce(&[u8]) -> Option<String>,
) -> String {
    match (raw, read.and_then(|r| r.entries.first())) {
        (0, _) => "NULL".into(),
        (_, Some((bytes, 0))) => {
            decode(&bytes[..len.min(bytes.len())]).unwrap_or_else(|| pointer(raw))
        }
        _ => pointer(raw),
    }
}

/// A futex(2) argument, as its operation `op` uses it.
fn futex_arg(which: FutexArg, op: u64, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    match which {
        FutexArg::Val => (raw as u32).to_string(),
        FutexArg::Timeout => match op {
            FUTEX_REQUEUE | FUTEX_CMP_REQUEUE | FUTEX_WAKE_OP | FUTEX_CMP_REQUEUE_PI => {
                (raw as u32).to_string()
            }
            _ => arg(Arg::In(Struct::Timespec), raw, read, ret),
        },
        FutexArg::Uaddr2 => pointer(raw),
        FutexArg::Val3 => match raw as u32 {
            u32::MAX => "FUTEX_BITSET_MATCH_ANY".into(),
            v if op == FUTEX_WAKE_OP => format!("{v:#x}"),
            v => v.to_string(),
        },
    }
}

/// A part of clone(2)'s arguments, in strace's order and words.
fn clone_arg(
    part: CloneArg,
    args: &[u64],
    raw: u64,
    read: Option<&Read>,
    ret: Option<i64>,
) -> String {
    let at = |i: usize| args.get(i).copied().unwrap_or(0);
    let flags = at(0);
    match part {
        CloneArg::StackAndFlags => {
            format!(
                "child_stack={}, flags={}",
                pointer(at(1)),
                clone_flags(flags)
            )
        }
        CloneArg::ParentTid => match read.and_then(|r| r.entries.first()) {
            Some((bytes, 0)) if bytes.len() >= 4 && ret.is_some_and(|r| r > 0) => {
                let tid = i32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes"));
                format!("parent_tid=[{tid}]")
            }
            _ => format!("parent_tid={}", pointer(raw)),
        },
        CloneArg::TlsAndChildTid => {
            let mut parts = Vec::new();
            if flags & CLONE_SETTLS != 0 {
                parts.push(format!("tls={}", pointer(at(4))));
            }
            if flags & (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID) != 0 {
                parts.push(format!("child_tidptr={}", pointer(at(3))));
            }
            parts.join(", ")
        }
        CloneArg::Stack | CloneArg::ChildTid => pointer(raw),
    }
}

/// An array of `count` structures of `size` bytes (poll's fds, epoll_wait's events), the
/// first [`crate::kernel::syscalls::ARRAY_SHOWN`] decoded and `...` for the rest.
fn struct_array(kind: Struct, size: usize, count: usize, raw: u64, read: Option<&Read>) -> String {
    let shown = count.min(crate::kernel::syscalls::ARRAY_SHOWN);
    match (raw, read.and_then(|r| r.entries.first())) {
        (0, _) => "NULL".into(),
        (_, Some((bytes, 0))) if bytes.len() >= size * shown => {
            let mut text = super::structs::decode(kind, &bytes[..size * shown])
                .unwrap_or_else(|| pointer(raw));
            if count > shown {
                text.insert_str(text.len() - 1, ", ...");
            }
            text
        }
        _ => pointer(raw),
    }
}

/// The kernel's NGROUPS_MAX (`sysconf(_SC_NGROUPS_MAX)`), past which strace shows a group
/// list's address.
const NGROUPS_MAX: u32 = 65536;

const CLONE_SETTLS: u64 = libc::CLONE_SETTLS as u64;
const CLONE_PARENT_SETTID: u64 = libc::CLONE_PARENT_SETTID as u64;
const CLONE_PIDFD: u64 = libc::CLONE_PIDFD as u64;
const CLONE_CHILD_SETTID: u64 = libc::CLONE_CHILD_SETTID as u64;
const CLONE_CHILD_CLEARTID: u64 = libc::CLONE_CHILD_CLEARTID as u64;

const FUTEX_WAIT: u64 = 0;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
const FUTEX_CMP_REQUEUE_PI: u64 = 12;
const FUTEX_LOCK_PI2: u64 = 13;

/// futex(2)'s command, without `FUTEX_PRIVATE_FLAG` and `FUTEX_CLOCK_REALTIME`.
fn futex_cmd(op: u64) -> u64 {
    op & 0x7f
}

/// Whether futex(2)'s argument `which` is one operation `op` uses (strace's futex.c).
fn futex_uses(which: FutexArg, op: u64) -> bool {
    let op = futex_cmd(op);
    let pi = [
        FUTEX_LOCK_PI,
        FUTEX_UNLOCK_PI,
        FUTEX_TRYLOCK_PI,
        FUTEX_LOCK_PI2,
    ];
    match which {
        FutexArg::Val => !pi.contains(&op),
        FutexArg::Timeout => [
            FUTEX_WAIT,
            FUTEX_REQUEUE,
            FUTEX_CMP_REQUEUE,
            FUTEX_WAKE_OP,
            FUTEX_LOCK_PI,
            FUTEX_WAIT_BITSET,
            FUTEX_WAIT_REQUEUE_PI,
            FUTEX_CMP_REQUEUE_PI,
            FUTEX_LOCK_PI2,
        ]
        .contains(&op),
        FutexArg::Uaddr2 => [
            FUTEX_REQUEUE,
            FUTEX_CMP_REQUEUE,
            FUTEX_WAKE_OP,
            FUTEX_WAIT_REQUEUE_PI,
            FUTEX_CMP_REQUEUE_PI,
        ]
        .contains(&op),
        FutexArg::Val3 => [
            FUTEX_CMP_REQUEUE,
            FUTEX_WAKE_OP,
            FUTEX_WAIT_BITSET,
            FUTEX_WAKE_BITSET,
            FUTEX_CMP_REQUEUE_PI,
        ]
        .contains(&op),
    }
}

/// fcntl(2)'s commands that take no argument (strace shows none).
const FCNTL_GETS: [i64; 7] = [1, 3, 9, 11, 1025, 1032, 1034];
/// fcntl(2)'s record-lock commands (a `struct flock *`), OFD locks included.
const FCNTL_LOCKS: [i64; 6] = [5, 6, 7, 36, 37, 38];

/// Whether argument `arg` is shown at all, as strace does: open's mode only when the flags
/// create a file, fcntl's argument and ioctl's only for a command or request that takes one,
/// mremap's new address only with MREMAP_FIXED.
pub fn shown(arg: Arg, args: &[u64]) -> bool {
    let at = |i: usize| args.get(i).copied().unwrap_or(0);
    match arg {
        Arg::OpenMode(flags) => at(flags) & O_CREAT != 0 || at(flags) & O_TMPFILE_BIT != 0,
        Arg::FcntlArg(cmd) => !FCNTL_GETS.contains(&i64::from(at(cmd) as u32 as i32)),
        Arg::MremapAddr(flags) => at(flags) & libc::MREMAP_FIXED as u64 != 0,
        Arg::Futex(which, op) => futex_uses(which, at(op)),
        Arg::IoctlArg(request) => ioctl::shown(at(request)),
        Arg::PrctlArg(i) => prctl::arg(args, i, None, None).is_some(),
        Arg::Clone(CloneArg::Stack | CloneArg::ChildTid) | Arg::Unshown => false,
        Arg::Clone(CloneArg::ParentTid) => at(0) & (CLONE_PARENT_SETTID | CLONE_PIDFD) != 0,
        Arg::Clone(CloneArg::TlsAndChildTid) => {
            at(0) & (CLONE_SETTLS | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID) != 0
        }
        _ => true,
    }
}

/// The errno of a failed call's return value (-4095..-1), as its number.
pub fn errno_of(ret: i64) -> Option<i64> {
    (-4095..0).contains(&ret).then_some(-ret)
}

/// strace's words for the kernel-internal restart codes a call interrupted by a signal
/// returns (never seen by the program).
fn restart(errno: i64) -> Option<&'static str> {
    match errno {
        512 => Some("To be restarted if SA_RESTART is set"),
        513 => Some("To be restarted"),
        514 => Some("To be restarted if no handler"),
        516 => Some("Interrupted by signal"),
        _ => None,
    }
}

/// The name of errno `n` (`ENOENT`), also the kernel's internal codes (`ERESTARTSYS`).
pub fn errno_name(n: i64) -> Option<&'static str> {
    crate::kernel::errno::name(n)
}

/// The system's words for errno `n` (`No such file or directory`).
pub fn errno_message(n: i64) -> String {
    if let Some(words) = restart(n) {
        return words.into();
    }
    let text = std::io::Error::from_raw_os_error(n as i32).to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// What a call's return text reads besides its registers ([`ret_in_call`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct RetReads<'r> {
    /// Argument 0's read: poll's fds, for their `revents`.
    pub first: Option<&'r Read>,
    /// A ppoll's timeout as the call left it (`Arg::TimeoutLeft`), when it was given one.
    pub left: Option<&'r Read>,
    /// A select's fd sets (`Arg::FdSet`'s read), and the kind of its timeout.
    pub sets: Option<(&'r Read, Struct)>,
}

/// The return value of a call whose registers are `args`, as strace shows it: [`ret`], poll's
/// and ppoll's with their fds' events and the time left (`1 ([{fd=3, revents=POLLIN}], left
/// {tv_sec=4, tv_nsec=7})`), and fcntl's by its command (`0x8002 (flags O_RDWR|O_LARGEFILE)`
/// for F_GETFL).
pub fn ret_in_call(kind: Ret, raw: u64, args: &[u64], reads: &RetReads<'_>) -> String {
    let value = raw as i64;
    if errno_of(value).is_some() {
        return ret(Ret::Int, raw);
    }
    if kind == Ret::Select {
        let (sets, timeout) = reads
            .sets
            .map_or((None, Struct::Timespec), |(r, t)| (Some(r), t));
        let nfds = args.first().copied().unwrap_or(0);
        return fdset::ret(raw, nfds, sets, reads.left, timeout);
    }
    if kind == Ret::Poll {
        if value == 0 {
            return "0 (Timeout)".into();
        }
        let fds = match reads.first.and_then(|r| r.entries.first()) {
            Some((bytes, 0)) => {
                let count = args.get(1).map_or(0, |&n| n as u32 as usize);
                let whole = (8 * count.min(crate::kernel::syscalls::ARRAY_SHOWN)).min(bytes.len());
                super::structs::poll_revents(&bytes[..whole], value as u64)
            }
            _ => None,
        };
        let left = match reads.left.and_then(|r| r.entries.first()) {
            Some((bytes, 0)) => super::structs::decode(Struct::Timespec, bytes),
            _ => None,
        };
        return match (fds, left) {
            (Some(fds), Some(left)) => format!("{value} ({fds}, left {left})"),
            (Some(fds), None) => format!("{value} ({fds})"),
            (None, Some(left)) => format!("{value} (left {left})"),
            (None, None) => value.to_string(),
        };
    }
    if kind == Ret::Prctl {
        return prctl::ret(raw, args);
    }
    let Ret::Fcntl(cmd) = kind else {
        return ret(kind, raw);
    };
    let cmd = args.get(cmd).map_or(-1, |&c| i64::from(c as u32 as i32));
    match cmd {
        c if c == i64::from(libc::F_GETFD) && value != 0 => {
            let set = flags(raw, &sysnames::FD_FLAGS, "0");
            format!("{raw:#x} (flags {set})")
        }
        c if c == i64::from(libc::F_GETFL) => match value {
            0 => format!("0 (flags {})", open_flags(raw)),
            _ => format!("{raw:#x} (flags {})", open_flags(raw)),
        },
        _ => value.to_string(),
    }
}

/// The return value as strace shows it: `3`, `0x7f..` (addresses), `-1 ENOENT (No such file
/// or directory)`, `? ERESTARTSYS (...)`, or `?` (no return).
pub fn ret(kind: Ret, raw: u64) -> String {
    let value = raw as i64;
    if kind == Ret::None {
        return "?".into();
    }
    if let Some(errno) = errno_of(value) {
        let name = errno_name(errno).map_or(format!("E{errno}"), str::to_string);
        let lead = match restart(errno) {
            Some(_) => "?",
            None => "-1",
        };
        return format!("{lead} {name} ({})", errno_message(errno));
    }
    match kind {
        Ret::Hex => format!("{raw:#x}"),
        Ret::Octal => mode(raw),
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_flags_read_as_strace_writes_them() {
        assert_eq!(open_flags(0o2000000), "O_RDONLY|O_CLOEXEC");
        assert_eq!(open_flags(0o1101), "O_WRONLY|O_CREAT|O_TRUNC");
        assert_eq!(open_flags(0o4010000), "O_RDONLY|O_SYNC");
        assert_eq!(
            open_flags(0o2202000),
            "O_RDONLY|O_APPEND|O_CLOEXEC|O_DIRECTORY"
        );
    }

    #[test]
    fn strings_are_escaped_and_cut_ones_marked() {
        let mut s = String::new();
        quote(b"a\"b\\\n\x7fELF\x02\x01\x00", &mut s);
        assert_eq!(s, r#""a\"b\\\n\177ELF\2\1\0""#);
        let mut s = String::new();
        quote(b"\x001", &mut s);
        assert_eq!(s, r#""\0001""#);
        let read = Read {
            entries: vec![(b"root:x".to_vec(), str_flag::TRUNCATED)],
            ..Read::default()
        };
        assert_eq!(
            arg(Arg::BufOut, 0x1000, Some(&read), Some(32)),
            r#""root:x"..."#
        );
        // A failed read filled nothing: the address.
        assert_eq!(arg(Arg::BufOut, 0x1000, Some(&read), Some(-9)), "0x1000");
    }

    #[test]
    fn numbers_flags_and_names() {
        assert_eq!(arg(Arg::DirFd, 0xffff_ff9c, None, None), "AT_FDCWD");
        assert_eq!(arg(Arg::DirFd, (-100i64) as u64, None, None), "AT_FDCWD");
        assert_eq!(arg(Arg::Prot, 3, None, None), "PROT_READ|PROT_WRITE");
        assert_eq!(arg(Arg::Prot, 0, None, None), "PROT_NONE");
        assert_eq!(
            arg(Arg::MapFlags, 0x22, None, None),
            "MAP_PRIVATE|MAP_ANONYMOUS"
        );
        assert_eq!(
            arg(Arg::MapFlags, 0x812, None, None),
            "MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE"
        );
        assert_eq!(arg(Arg::Mode, 0o644, None, None), "0644");
        assert_eq!(arg(Arg::Mode, 0, None, None), "000");
        assert_eq!(arg(Arg::AccessMode, 0, None, None), "F_OK");
        assert_eq!(arg(Arg::AccessMode, 6, None, None), "R_OK|W_OK");
        assert_eq!(
            arg(Arg::CloneFlags, 0x1200011, None, None),
            "CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD"
        );
        assert_eq!(arg(Arg::Signal, 15, None, None), "SIGTERM");
        assert_eq!(arg(Arg::FutexOp, 128, None, None), "FUTEX_WAIT_PRIVATE");
        assert_eq!(arg(Arg::Ptr, 0, None, None), "NULL");
        assert_eq!(
            arg(Arg::SockType, 0o2000001, None, None),
            "SOCK_STREAM|SOCK_CLOEXEC"
        );
        assert!(!shown(Arg::OpenMode(2), &[0, 0, 0o2000000, 0]));
        assert!(shown(Arg::OpenMode(2), &[0, 0, 0o101, 0o644]));
    }

    #[test]
    fn return_values_with_their_errno() {
        assert_eq!(ret(Ret::Int, 3), "3");
        assert_eq!(
            ret(Ret::Int, (-2i64) as u64),
            "-1 ENOENT (No such file or directory)"
        );
        assert_eq!(ret(Ret::Hex, 0x7f00_0000_0000), "0x7f0000000000");
        assert_eq!(
            ret(Ret::Int, (-512i64) as u64),
            "? ERESTARTSYS (To be restarted if SA_RESTART is set)"
        );
        assert_eq!(ret(Ret::None, 0), "?");
        assert_eq!(
            ret(Ret::Int, (-107i64) as u64),
            "-1 ENOTCONN (Transport endpoint is not connected)"
        );
        assert_eq!(ret(Ret::Octal, 0o22), "022");
    }

    /// Values read by another argument, as strace 6.1 printed them for
    /// tests/workloads/names.c.
    /// strace's comments on an exec's environment and a getdents buffer (strace 6.1).
    #[test]
    fn counts_read_as_strace_writes_them() {
        assert_eq!(environ(0x7ffe_57e2_d720, 1), "0x7ffe57e2d720 /* 1 var */");
        assert_eq!(
            environ(0x7ffd_3bf2_8d68, 35),
            "0x7ffd3bf28d68 /* 35 vars */"
        );
        assert_eq!(environ(0x7ffd_3bf2_8d68, 0), "0x7ffd3bf28d68 /* 0 vars */");
        assert_eq!(
            dirents(0x55dd_acd8_62a0, 144, false),
            "0x55ddacd862a0 /* 144 entries */"
        );
        assert_eq!(
            dirents(0x7ffd_a76f_5090, 1, false),
            "0x7ffda76f5090 /* 1 entries */"
        );
        assert_eq!(dirents(0x1000, 1024, true), "0x1000 /* 1024+ entries */");
    }

    #[test]
    fn arguments_and_results_read_by_their_command() {
        let fcntl = |cmd: i32, arg: u64| [3, cmd as u64, arg];
        let third = |args: &[u64]| match shown(Arg::FcntlArg(1), args) {
            true => Some(in_call(Arg::FcntlArg(1), args, 2, None, None)),
            false => None,
        };
        assert_eq!(third(&fcntl(libc::F_GETFD, 0x55)), None);
        assert_eq!(third(&fcntl(libc::F_GETFL, 0x55)), None);
        assert_eq!(
            third(&fcntl(libc::F_SETFD, 1)).as_deref(),
            Some("FD_CLOEXEC")
        );
        assert_eq!(
            third(&fcntl(libc::F_SETFL, 0o4000)).as_deref(),
            Some("O_RDONLY|O_NONBLOCK")
        );
        assert_eq!(
            third(&fcntl(libc::F_DUPFD_CLOEXEC, 20)).as_deref(),
            Some("20")
        );
        let result = |cmd: i32, raw: u64| {
            ret_in_call(Ret::Fcntl(1), raw, &fcntl(cmd, 0), &RetReads::default())
        };
        assert_eq!(result(libc::F_GETFD, 0), "0");
        assert_eq!(result(libc::F_GETFD, 1), "0x1 (flags FD_CLOEXEC)");
        assert_eq!(result(libc::F_GETFL, 0), "0 (flags O_RDONLY)");
        assert_eq!(
            result(libc::F_GETFL, 0x8002),
            "0x8002 (flags O_RDWR|O_LARGEFILE)"
        );
        assert_eq!(result(libc::F_GETPIPE_SZ, 65536), "65536");
        assert_eq!(
            result(libc::F_GETFL, (-9i64) as u64),
            "-1 EBADF (Bad file descriptor)"
        );
        let protocol =
            |family: i32, p: u64| in_call(Arg::Protocol(0), &[family as u64, 1, p], 2, None, None);
        assert_eq!(protocol(libc::AF_INET, 0), "IPPROTO_IP");
        assert_eq!(protocol(libc::AF_INET6, 17), "IPPROTO_UDP");
        assert_eq!(protocol(libc::AF_UNIX, 0), "0");
        assert_eq!(protocol(libc::AF_NETLINK, 0), "NETLINK_ROUTE");
        assert_eq!(arg(Arg::Ioctl, 0x541b, None, None), "FIONREAD");
        assert_eq!(arg(Arg::Ioctl, 0x5413, None, None), "TIOCGWINSZ");
        assert_eq!(
            arg(Arg::Ioctl, 0x1234, None, None),
            "_IOC(_IOC_NONE, 0x12, 0x34, 0)"
        );
        assert_eq!(
            arg(Arg::Ioctl, 0x8008_6601, None, None),
            "_IOC(_IOC_READ, 0x66, 0x1, 0x8)"
        );
        assert_eq!(arg(Arg::StatxMask, 0xfff, None, None), "STATX_ALL");
        assert_eq!(
            arg(Arg::StatxMask, 0x201, None, None),
            "STATX_TYPE|STATX_SIZE"
        );
        assert_eq!(arg(Arg::StatxFlags, 0, None, None), "AT_STATX_SYNC_AS_STAT");
        assert_eq!(
            arg(Arg::StatxFlags, 0x100, None, None),
            "AT_STATX_SYNC_AS_STAT|AT_SYMLINK_NOFOLLOW"
        );
        assert_eq!(
            arg(Arg::StatxFlags, 0x5000, None, None),
            "AT_STATX_DONT_SYNC|AT_EMPTY_PATH"
        );
        assert_eq!(arg(Arg::PipeFlags, 0, None, None), "0");
        assert_eq!(arg(Arg::PipeFlags, 0o2000000, None, None), "O_CLOEXEC");
        assert_eq!(arg(Arg::AccessAtFlags, 0x200, None, None), "AT_EACCESS");
        assert_eq!(arg(Arg::Madvise, 4, None, None), "MADV_DONTNEED");
        assert_eq!(arg(Arg::Fadvise, 2, None, None), "POSIX_FADV_SEQUENTIAL");
        assert_eq!(arg(Arg::MremapFlags, 0, None, None), "0");
        assert_eq!(arg(Arg::MremapFlags, 1, None, None), "MREMAP_MAYMOVE");
        assert!(!shown(Arg::MremapAddr(3), &[0, 0, 0, 1, 0]));
        assert!(shown(Arg::MremapAddr(3), &[0, 0, 0, 3, 0x1000]));
        assert_eq!(arg(Arg::Prctl, 4, None, None), "PR_SET_DUMPABLE");
        assert_eq!(arg(Arg::EpollOp, 1, None, None), "EPOLL_CTL_ADD");
        // futex: only the arguments the operation uses, as strace shows them.
        let futex = |op: u64, regs: [u64; 4]| -> String {
            let args = [0x1000, op, regs[0], regs[1], regs[2], regs[3]];
            let kinds = [
                Arg::Futex(FutexArg::Val, 1),
                Arg::Futex(FutexArg::Timeout, 1),
                Arg::Futex(FutexArg::Uaddr2, 1),
                Arg::Futex(FutexArg::Val3, 1),
            ];
            (kinds.iter().enumerate())
                .filter(|(_, k)| shown(**k, &args))
                .map(|(i, k)| in_call(*k, &args, i + 2, None, Some(0)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        assert_eq!(futex(129, [1, 7, 7, 7]), "1");
        assert_eq!(futex(128, [2, 0, 7, 7]), "2, NULL");
        assert_eq!(
            futex(128 | 256 | 9, [0, 0, 7, u32::MAX as u64]),
            "0, NULL, FUTEX_BITSET_MATCH_ANY"
        );
        assert_eq!(futex(4, [1, 5, 0x2000, 3]), "1, 5, 0x2000, 3");
        assert_eq!(futex(128 | 6, [9, 0, 7, 7]), "NULL");
        let pair = Read {
            entries: vec![([3i32.to_ne_bytes(), 4i32.to_ne_bytes()].concat(), 0)],
            ..Read::default()
        };
        let fd_pair = Arg::Out(Struct::FdPair);
        assert_eq!(arg(fd_pair, 0x1000, Some(&pair), Some(0)), "[3, 4]");
        assert_eq!(arg(fd_pair, 0x1000, Some(&pair), Some(-24)), "0x1000");
        assert_eq!(arg(fd_pair, 0, Some(&pair), Some(-14)), "NULL");
        let ioctl = |request: u64| in_call(Arg::IoctlArg(1), &[3, request, 0], 2, None, None);
        assert_eq!((ioctl(0x541b), ioctl(0x1234)), ("NULL".into(), "0".into()));
        let one = Read {
            entries: vec![(1i32.to_ne_bytes().to_vec(), 0)],
            ..Read::default()
        };
        let ioctl = |request: libc::c_ulong, ret| {
            let args = [3, request, 0x7ff0];
            in_call(Arg::IoctlArg(1), &args, 2, Some(&one), ret)
        };
        assert_eq!(ioctl(libc::FIONBIO, Some(0)), "[1]");
        assert_eq!(ioctl(libc::FIONREAD, Some(0)), "[1]");
        assert_eq!(ioctl(libc::FIONREAD, Some(-25)), "0x7ff0");
        assert_eq!(ioctl(libc::TCGETS, Some(0)), "0x7ff0");
        let clone = [4, libc::FICLONE, 3];
        assert_eq!(in_call(Arg::IoctlArg(1), &clone, 2, None, Some(-95)), "3");
        assert_eq!(ioctl::request(libc::FICLONE), "BTRFS_IOC_CLONE or FICLONE");
        assert_eq!(ioctl::request(libc::TCSETSW), "SNDCTL_TMR_STOP or TCSETSW");
    }

    /// A terminal's structures as strace 6.1 wrote them for a pty's TCGETS and TIOCGWINSZ
    /// (a run of tests/trace_cli.rs's workload); a structure cut at its page's end, or of a
    /// failed call, is its address.
    #[test]
    fn terminal_ioctls_read_as_strace_writes_them() {
        let words = |w: [u32; 4]| Read {
            entries: vec![(
                w.iter()
                    .flat_map(|v| v.to_ne_bytes())
                    .chain([0; 20])
                    .collect(),
                0,
            )],
            ..Read::default()
        };
        let ioctl = |request: libc::c_ulong, read: &Read, ret| {
            in_call(
                Arg::IoctlArg(1),
                &[4, request, 0x7ff0],
                2,
                Some(read),
                Some(ret),
            )
        };
        let cooked = words([0x500, 0x5, 0xbf, 0x8a3b]);
        assert_eq!(
            ioctl(libc::TCGETS, &cooked, 0),
            "{c_iflag=ICRNL|IXON, c_oflag=NL0|CR0|TAB0|BS0|VT0|FF0|OPOST|ONLCR, \
             c_cflag=B38400|CS8|CREAD, c_lflag=ISIG|ICANON|ECHO|ECHOE|ECHOK|IEXTEN|ECHOCTL|\
             ECHOKE, ...}"
        );
        let raw = words([0, 0, 0xbf | 0o4000, 0]);
        assert_eq!(
            ioctl(libc::TCSETSW, &raw, 0),
            "{c_iflag=, c_oflag=NL0|CR0|TAB0|BS0|VT0|FF0|, c_cflag=B38400|CS8|CREAD|CLOCAL, \
             c_lflag=, ...}"
        );
        assert_eq!(ioctl(libc::TCGETS, &cooked, -25), "0x7ff0");
        let cut = Read {
            entries: vec![(vec![0; 4], 0)],
            ..Read::default()
        };
        assert_eq!(ioctl(libc::TCSETS, &cut, 0), "0x7ff0");
        let size = Read {
            entries: vec![(
                [24u16, 80, 640, 480]
                    .iter()
                    .flat_map(|v| v.to_ne_bytes())
                    .collect(),
                0,
            )],
            ..Read::default()
        };
        assert_eq!(
            ioctl(libc::TIOCGWINSZ, &size, 0),
            "{ws_row=24, ws_col=80, ws_xpixel=640, ws_ypixel=480}"
        );
        let pgrp = Read {
            entries: vec![(1234i32.to_ne_bytes().to_vec(), 0)],
            ..Read::default()
        };
        assert_eq!(ioctl(libc::TIOCGPGRP, &pgrp, 0), "[1234]");
        assert_eq!(ioctl(libc::TIOCGPGRP, &pgrp, -25), "0x7ff0");
        let value = |request, v| in_call(Arg::IoctlArg(1), &[4, request, v], 2, None, Some(0));
        assert_eq!(value(libc::TCFLSH, 0), "TCIFLUSH");
        assert_eq!(value(libc::TCXONC, 1), "TCOON");
        assert_eq!(value(libc::TCXONC, 9), "0x9 /* TC??? */");
        assert_eq!(value(libc::TCSBRK, 1), "1");
        assert!(!shown(Arg::IoctlArg(1), &[4, libc::FIOCLEX, 0]));
        assert!(shown(Arg::IoctlArg(1), &[4, libc::TCGETS, 0x7ff0]));
    }

    #[test]
    fn iovec_arrays_read_as_strace_writes_them() {
        // Three elements: "ab" at 0x10, NULL of 0 bytes, "cd" at 0x20; the pairs, then each
        // element's bytes as read.
        let pairs: Vec<u8> = [[0x10u64, 2], [0, 0], [0x20, 2]]
            .iter()
            .flat_map(|[base, len]| [base.to_ne_bytes(), len.to_ne_bytes()].concat())
            .collect();
        let entries = vec![
            (pairs, 0),
            (b"ab".to_vec(), 0),
            (vec![], 0),
            (b"cd".to_vec(), 0),
        ];
        let read = |elements| Read {
            entries: entries.clone(),
            elements,
            ..Read::default()
        };
        let all = "[{iov_base=\"ab\", iov_len=2}, {iov_base=NULL, iov_len=0}, \
                   {iov_base=\"cd\", iov_len=2}]";
        let given = Arg::IovGiven(2);
        assert_eq!(arg(given, 0x1000, Some(&read(0)), Some(4)), all);
        assert_eq!(arg(given, 0x1000, Some(&read(32)), Some(4)), all);
        // -s 2: two elements, as strace's -s bounds arrays.
        assert_eq!(
            arg(given, 0x1000, Some(&read(2)), Some(4)),
            "[{iov_base=\"ab\", iov_len=2}, {iov_base=NULL, iov_len=0}, ...]"
        );
        // A readv that failed: the bases' addresses; one that did not return: the array's.
        assert_eq!(
            arg(Arg::IovFilled(2), 0x1000, Some(&read(0)), Some(-9)),
            "[{iov_base=0x10, iov_len=2}, {iov_base=NULL, iov_len=0}, {iov_base=0x20, iov_len=2}]"
        );
        assert_eq!(
            arg(Arg::IovFilled(2), 0x1000, Some(&read(0)), None),
            "0x1000"
        );
    }
}
