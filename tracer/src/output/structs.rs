//! The structures system calls take and fill, as strace prints them without `-v`: `struct
//! stat` (`{st_mode=S_IFREG|0644, st_size=3, ...}`), statx, timespec, wait4's status,
//! rlimits, signal sets and sigactions, fd pairs. Each reads the bytes BPF copied after the
//! call (`buffer_len::fixed`), x86-64 layouts.

use crate::kernel::syscalls::Struct;

use super::syscall::{flags, pointer, quote, signal};
use crate::kernel::sysnames;

/// `bytes` (at least `kind.bytes()` of them) as strace shows the structure.
pub fn decode(kind: Struct, bytes: &[u8]) -> Option<String> {
    let i32_at = |at: usize| i32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    match kind {
        Struct::SockAddr(_) => return sockaddr(bytes),
        // Arrays: as many elements as the caller cut `bytes` to.
        Struct::EpollEvents => {
            let events: Vec<String> = (bytes.chunks_exact(12))
                .filter_map(|e| decode(Struct::EpollEvent, e))
                .collect();
            return Some(format!("[{}]", events.join(", ")));
        }
        Struct::PollFds => {
            let fds: Vec<String> = (0..bytes.len() / 8)
                .map(|k| {
                    let events =
                        u64::from(u16::from_ne_bytes([bytes[8 * k + 4], bytes[8 * k + 5]]));
                    format!(
                        "{{fd={}, events={}}}",
                        i32_at(8 * k),
                        flags(events, &sysnames::POLL_EVENTS, "0")
                    )
                })
                .collect();
            return Some(format!("[{}]", fds.join(", ")));
        }
        _ => {}
    }
    if bytes.len() < kind.bytes() {
        return None;
    }
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    Some(match kind {
        Struct::FdPair => format!("[{}, {}]", u32_at(0) as i32, u32_at(4) as i32),
        Struct::Stat => {
            let mode = u32_at(24);
            let tail = match mode & S_IFMT {
                S_IFCHR | S_IFBLK => format!("st_rdev={}", makedev(u64_at(40))),
                _ => format!("st_size={}", u64_at(48) as i64),
            };
            format!("{{st_mode={}, {tail}, ...}}", file_mode(mode))
        }
        Struct::Statx => {
            let mask = flags(u64::from(u32_at(0)), &sysnames::STATX_MASK, "0");
            let attributes = flags(u64_at(8), &STATX_ATTRIBUTES, "0");
            format!(
                "{{stx_mask={mask}, stx_attributes={attributes}, stx_mode={}, stx_size={}, ...}}",
                file_mode(u32::from(bytes[28]) | u32::from(bytes[29]) << 8),
                u64_at(40)
            )
        }
        Struct::Timespec => format!(
            "{{tv_sec={}, tv_nsec={}}}",
            u64_at(0) as i64,
            u64_at(8) as i64
        ),
        Struct::WaitStatus => format!("[{{{}}}]", wait_status(u32_at(0))),
        Struct::Rlimit | Struct::Rlimit64 => {
            let infinity = match kind {
                Struct::Rlimit => "RLIM_INFINITY",
                _ => "RLIM64_INFINITY",
            };
            let limit = |v: u64| match v {
                u64::MAX => infinity.to_string(),
                // strace's print_rlim64_t: past 1024 and a multiple of it.
                v if v > 1024 && v % 1024 == 0 => format!("{}*1024", v / 1024),
                v => v.to_string(),
            };
            format!(
                "{{rlim_cur={}, rlim_max={}}}",
                limit(u64_at(0)),
                limit(u64_at(8))
            )
        }
        Struct::SigSet => sigset(u64_at(0)),
        Struct::SigAction => {
            let handler = match u64_at(0) {
                0 => "SIG_DFL".to_string(),
                1 => "SIG_IGN".to_string(),
                h => pointer(h),
            };
            let flags = u64_at(8);
            let mut text = format!(
                "{{sa_handler={handler}, sa_mask={}, sa_flags={}",
                sigset(u64_at(24)),
                self::flags(flags, &SA_FLAGS, "0")
            );
            if flags & SA_RESTORER != 0 {
                text.push_str(&format!(", sa_restorer={}", pointer(u64_at(16))));
            }
            text + "}"
        }
        Struct::SockAddr(_) | Struct::EpollEvents | Struct::PollFds => {
            unreachable!("decoded above")
        }
        Struct::Int => format!("[{}]", u32_at(0) as i32),
        Struct::Utsname => {
            let field = |at: usize| {
                let field = &bytes[at..at + 65];
                let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
                let mut out = String::new();
                quote(&field[..end], &mut out);
                out
            };
            format!("{{sysname={}, nodename={}, ...}}", field(0), field(65))
        }
        Struct::EpollEvent => {
            let data = u64_at(4);
            format!(
                "{{events={}, data={{u32={}, u64={data}}}}}",
                flags(u64::from(u32_at(0)), &sysnames::EPOLL_EVENTS, "0"),
                data as u32
            )
        }
    })
}

/// A `struct sockaddr` of `bytes.len()` bytes, as strace shows AF_UNIX (`sun_path="/run/x"`,
/// `@"abstract"`), AF_INET, AF_INET6 and AF_NETLINK; `None` for other families.
pub fn sockaddr(bytes: &[u8]) -> Option<String> {
    let family = u16::from_ne_bytes(bytes.get(..2)?.try_into().ok()?);
    let name = sysnames::FAMILIES
        .iter()
        .find(|(f, _)| *f == i64::from(family))
        .map_or_else(|| family.to_string(), |(_, n)| n.to_string());
    let be16 = |at: usize| Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let fields = match i32::from(family) {
        libc::AF_UNIX => match bytes.get(2..) {
            Some([]) | None => String::new(),
            Some([0, abstract_name @ ..]) => {
                let mut out = String::from(", sun_path=@");
                quote(abstract_name, &mut out);
                out
            }
            Some(path) => {
                let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                let mut out = String::from(", sun_path=");
                quote(&path[..end], &mut out);
                out
            }
        },
        libc::AF_INET => {
            let addr: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            format!(
                ", sin_port=htons({}), sin_addr=inet_addr(\"{}\")",
                be16(2)?,
                std::net::Ipv4Addr::from(addr)
            )
        }
        libc::AF_INET6 => {
            let addr: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            let flow = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?);
            let scope = u32::from_ne_bytes(bytes.get(24..28)?.try_into().ok()?);
            format!(
                ", sin6_port=htons({}), sin6_flowinfo=htonl({flow}), \
                 inet_pton(AF_INET6, \"{}\", &sin6_addr), sin6_scope_id={scope}",
                be16(2)?,
                std::net::Ipv6Addr::from(addr)
            )
        }
        libc::AF_NETLINK => {
            let word = |at: usize| -> Option<u32> {
                Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
            };
            format!(", nl_pid={}, nl_groups={:08x}", word(4)?, word(8)?)
        }
        _ => return None,
    };
    Some(format!("{{sa_family={name}{fields}}}"))
}

const S_IFMT: u32 = 0o170000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;

/// `S_IFREG|0644`, `S_IFREG|S_ISUID|0755`.
fn file_mode(mode: u32) -> String {
    let kind = match mode & S_IFMT {
        0o140000 => "S_IFSOCK",
        0o120000 => "S_IFLNK",
        0o100000 => "S_IFREG",
        S_IFBLK => "S_IFBLK",
        0o040000 => "S_IFDIR",
        S_IFCHR => "S_IFCHR",
        0o010000 => "S_IFIFO",
        _ => "",
    };
    let mut parts: Vec<String> = Vec::new();
    if !kind.is_empty() {
        parts.push(kind.into());
    }
    for (bit, name) in [
        (0o4000, "S_ISUID"),
        (0o2000, "S_ISGID"),
        (0o1000, "S_ISVTX"),
    ] {
        if mode & bit != 0 {
            parts.push(name.into());
        }
    }
    parts.push(format!("{:0>3}", format!("0{:o}", mode & 0o777)));
    parts.join("|")
}

/// A device number as strace writes it: `makedev(0x1, 0x3)` (the kernel's new_encode_dev).
fn makedev(dev: u64) -> String {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    format!("makedev({major:#x}, {minor:#x})")
}

/// wait4's status: `WIFEXITED(s) && WEXITSTATUS(s) == 0`.
fn wait_status(status: u32) -> String {
    let sig = status & 0x7f;
    match (sig, status & 0xff) {
        (0, _) => format!("WIFEXITED(s) && WEXITSTATUS(s) == {}", (status >> 8) & 0xff),
        (0x7f, _) => format!(
            "WIFSTOPPED(s) && WSTOPSIG(s) == {}",
            signal(u64::from((status >> 8) & 0xff))
        ),
        _ if status == 0xffff => "WIFCONTINUED(s)".into(),
        _ => format!(
            "WIFSIGNALED(s) && WTERMSIG(s) == {}{}",
            signal(u64::from(sig)),
            if status & 0x80 != 0 {
                " && WCOREDUMP(s)"
            } else {
                ""
            }
        ),
    }
}

/// A signal set as strace writes it: the signals without `SIG` (`[INT TERM]`), or those not
/// in it after `~` when more than half are (`~[RTMIN RT_1]`).
pub fn sigset(bits: u64) -> String {
    let (mark, shown) = match bits.count_ones() > 32 {
        true => ("~", !bits),
        false => ("", bits),
    };
    let names: Vec<String> = (1..=64u32)
        .filter(|n| shown & (1 << (n - 1)) != 0)
        .map(|n| {
            let name = signal(u64::from(n));
            name.strip_prefix("SIG").unwrap_or(&name).to_string()
        })
        .collect();
    format!("{mark}[{}]", names.join(" "))
}

const SA_RESTORER: u64 = 0x0400_0000;

/// sigaction's flags, in strace's order.
const SA_FLAGS: [(u64, &str); 8] = [
    (SA_RESTORER, "SA_RESTORER"),
    (0x0800_0000, "SA_ONSTACK"),
    (0x1000_0000, "SA_RESTART"),
    (0x4000_0000, "SA_NODEFER"),
    (0x8000_0000, "SA_RESETHAND"),
    (4, "SA_SIGINFO"),
    (2, "SA_NOCLDWAIT"),
    (1, "SA_NOCLDSTOP"),
];

/// statx's `stx_attributes` (include/uapi/linux/stat.h).
const STATX_ATTRIBUTES: [(u64, &str); 9] = [
    (0x4, "STATX_ATTR_COMPRESSED"),
    (0x10, "STATX_ATTR_IMMUTABLE"),
    (0x20, "STATX_ATTR_APPEND"),
    (0x40, "STATX_ATTR_NODUMP"),
    (0x800, "STATX_ATTR_ENCRYPTED"),
    (0x1000, "STATX_ATTR_AUTOMOUNT"),
    (0x2000, "STATX_ATTR_MOUNT_ROOT"),
    (0x100000, "STATX_ATTR_VERITY"),
    (0x200000, "STATX_ATTR_DAX"),
];

/// poll's fds that have events, from the array it filled: `[{fd=3, revents=POLLIN}]`.
pub fn poll_revents(bytes: &[u8]) -> Option<String> {
    let fds: Vec<String> = (bytes.chunks_exact(8))
        .filter_map(|fd| {
            let revents = u16::from_ne_bytes([fd[6], fd[7]]);
            (revents != 0).then(|| {
                format!(
                    "{{fd={}, revents={}}}",
                    i32::from_ne_bytes(fd[..4].try_into().expect("4 bytes")),
                    flags(u64::from(revents), &sysnames::POLL_EVENTS, "0")
                )
            })
        })
        .collect();
    Some(format!("[{}]", fds.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[(usize, u64, usize)], len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        for &(at, value, size) in words {
            out[at..at + size].copy_from_slice(&value.to_ne_bytes()[..size]);
        }
        out
    }

    /// As strace 6.1 printed them for tests/workloads/structs.c.
    #[test]
    fn structures_read_as_strace_writes_them() {
        let stat = |mode: u64, rdev: u64, size: u64| {
            let raw = bytes(&[(24, mode, 4), (40, rdev, 8), (48, size, 8)], 56);
            decode(Struct::Stat, &raw).unwrap()
        };
        assert_eq!(
            stat(0o100644, 0, 36047),
            "{st_mode=S_IFREG|0644, st_size=36047, ...}"
        );
        assert_eq!(
            stat(0o020666, 0x103, 0),
            "{st_mode=S_IFCHR|0666, st_rdev=makedev(0x1, 0x3), ...}"
        );
        assert_eq!(
            stat(0o104755, 0, 1),
            "{st_mode=S_IFREG|S_ISUID|0755, st_size=1, ...}"
        );
        let statx = bytes(&[(0, 0x17ff, 4), (28, 0o100755, 2), (40, 3, 8)], 48);
        assert_eq!(
            decode(Struct::Statx, &statx).unwrap(),
            "{stx_mask=STATX_BASIC_STATS|STATX_MNT_ID, stx_attributes=0, \
             stx_mode=S_IFREG|0755, stx_size=3, ...}"
        );
        let ts = bytes(&[(0, 0, 8), (8, 1_000_000, 8)], 16);
        assert_eq!(
            decode(Struct::Timespec, &ts).unwrap(),
            "{tv_sec=0, tv_nsec=1000000}"
        );
        let wait = |s: u64| decode(Struct::WaitStatus, &bytes(&[(0, s, 4)], 4)).unwrap();
        assert_eq!(wait(7 << 8), "[{WIFEXITED(s) && WEXITSTATUS(s) == 7}]");
        assert_eq!(wait(9), "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL}]");
        assert_eq!(
            wait(0x80 | 11),
            "[{WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV && WCOREDUMP(s)}]"
        );
        assert_eq!(wait(0x137f), "[{WIFSTOPPED(s) && WSTOPSIG(s) == SIGSTOP}]");
        let rlim = bytes(&[(0, 8192 * 1024, 8), (8, u64::MAX, 8)], 16);
        assert_eq!(
            decode(Struct::Rlimit64, &rlim).unwrap(),
            "{rlim_cur=8192*1024, rlim_max=RLIM64_INFINITY}"
        );
        let rlim = bytes(&[(0, 20000, 8), (8, 20000, 8)], 16);
        assert_eq!(
            decode(Struct::Rlimit64, &rlim).unwrap(),
            "{rlim_cur=20000, rlim_max=20000}"
        );
        // As strace printed RLIMIT_NOFILE in Debian 7.3's VM.
        let rlim = bytes(&[(0, 1024, 8), (8, 4096, 8)], 16);
        assert_eq!(
            decode(Struct::Rlimit64, &rlim).unwrap(),
            "{rlim_cur=1024, rlim_max=4*1024}"
        );
        let bit = |n: u32| 1u64 << (n - 1);
        assert_eq!(sigset(bit(2) | bit(15)), "[INT TERM]");
        assert_eq!(sigset(0), "[]");
        assert_eq!(sigset(!(bit(32) | bit(33))), "~[RTMIN RT_1]");
        let act = bytes(
            &[
                (0, 0x555c_d302_2279, 8),
                (8, 0x1400_0000, 8),
                (16, 0x7f31_49cd_6050, 8),
                (24, bit(12), 8),
            ],
            32,
        );
        assert_eq!(
            decode(Struct::SigAction, &act).unwrap(),
            "{sa_handler=0x555cd3022279, sa_mask=[USR2], sa_flags=SA_RESTORER|SA_RESTART, \
             sa_restorer=0x7f3149cd6050}"
        );
        assert_eq!(
            decode(Struct::SigAction, &[0u8; 32]).unwrap(),
            "{sa_handler=SIG_DFL, sa_mask=[], sa_flags=0}"
        );
        let pair = bytes(&[(0, 3, 4), (4, 4, 4)], 8);
        assert_eq!(decode(Struct::FdPair, &pair).unwrap(), "[3, 4]");
        assert_eq!(decode(Struct::Stat, &[0u8; 8]), None);
    }

    /// strace 6.1's lines for the same addresses (`strace -e trace=connect,bind`).
    #[test]
    fn sockaddrs_read_as_strace_writes_them() {
        let mut inet6 = vec![10, 0, 0x01, 0xbb, 0, 0, 0, 0];
        inet6.extend(std::net::Ipv6Addr::LOCALHOST.octets());
        inet6.extend([0, 0, 0, 0]);
        assert_eq!(
            sockaddr(&inet6).unwrap(),
            "{sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), \
             inet_pton(AF_INET6, \"::1\", &sin6_addr), sin6_scope_id=0}"
        );
        let inet = [2, 0, 0x1f, 0x90, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            sockaddr(&inet).unwrap(),
            "{sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr(\"127.0.0.1\")}"
        );
        let mut path = vec![1, 0];
        path.extend(b"/run/x\0\0\0");
        assert_eq!(
            sockaddr(&path).unwrap(),
            "{sa_family=AF_UNIX, sun_path=\"/run/x\"}"
        );
        assert_eq!(
            sockaddr(b"\x01\0\0name").unwrap(),
            "{sa_family=AF_UNIX, sun_path=@\"name\"}"
        );
        assert_eq!(sockaddr(&[1, 0]).unwrap(), "{sa_family=AF_UNIX}");
        assert_eq!(sockaddr(&[17, 0, 0, 0]), None);
        let event = [0x01, 0, 0, 0x80, 15, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            decode(Struct::EpollEvent, &event).unwrap(),
            "{events=EPOLLIN|EPOLLET, data={u32=15, u64=15}}"
        );
    }

    /// As strace 6.1 writes them (`poll([{fd=3, events=POLLIN|POLLPRI}], ...)`).
    #[test]
    fn pollfds_and_epoll_events() {
        let mut fds = Vec::new();
        for (fd, events, revents) in [(3i32, 3u16, 1u16), (-1, 4, 0)] {
            fds.extend(fd.to_ne_bytes());
            fds.extend(events.to_ne_bytes());
            fds.extend(revents.to_ne_bytes());
        }
        assert_eq!(
            decode(Struct::PollFds, &fds).unwrap(),
            "[{fd=3, events=POLLIN|POLLPRI}, {fd=-1, events=POLLOUT}]"
        );
        assert_eq!(poll_revents(&fds).unwrap(), "[{fd=3, revents=POLLIN}]");
        assert_eq!(decode(Struct::EpollEvents, &[]).unwrap(), "[]");
    }
}
