//! The structures system calls take and fill, as strace prints them without `-v`: `struct
//! stat` (`{st_mode=S_IFREG|0644, st_size=3, ...}`), statx, timespec, wait4's status,
//! rlimits, signal sets and sigactions, fd pairs. Each reads the bytes BPF copied after the
//! call (`buffer_len::fixed`), x86-64 layouts.

use crate::kernel::syscalls::Struct;

use super::syscall::{flags, pointer, quote, signal};
use crate::kernel::sysnames;

/// `bytes` (at least `kind.bytes()` of them) as strace shows the structure.
pub fn decode(kind: Struct, bytes: &[u8]) -> Option<String> {
    let i32_at = |at: usize| u32_at(bytes, at) as i32;
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
        Struct::CpuSet => return Some(cpu_set(bytes)),
        Struct::Gids => return Some(gids(bytes)),
        Struct::CloneArgs => return clone_args(bytes),
        _ => {}
    }
    if bytes.len() < kind.bytes() {
        return None;
    }
    let u32_at = |at: usize| u32_at(bytes, at);
    let u64_at = |at: usize| u64_at(bytes, at);
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
        Struct::Timeval => format!(
            "{{tv_sec={}, tv_usec={}}}",
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
        Struct::SigAction => sigaction(bytes),
        Struct::SockAddr(_)
        | Struct::EpollEvents
        | Struct::PollFds
        | Struct::CpuSet
        | Struct::Gids
        | Struct::CloneArgs => unreachable!("decoded above"),
        Struct::Id => format!("[{}]", id_text(u32_at(0))),
        Struct::Sysinfo => sysinfo(bytes),
        Struct::Statfs => statfs(bytes),
        Struct::StackT => stack_t(bytes),
        Struct::CapHeader => cap_header(bytes),
        Struct::CapData => cap_data(bytes),
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

/// A `u32` at byte `at` of a structure read (the caller checked its length).
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// A `u64` at byte `at` of a structure read (the caller checked its length).
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// `struct sysinfo`, every field.
fn sysinfo(b: &[u8]) -> String {
    format!(
        "{{uptime={}, loads=[{}, {}, {}], totalram={}, freeram={}, sharedram={}, \
         bufferram={}, totalswap={}, freeswap={}, procs={}, totalhigh={}, freehigh={}, \
         mem_unit={}}}",
        u64_at(b, 0) as i64,
        u64_at(b, 8),
        u64_at(b, 16),
        u64_at(b, 24),
        u64_at(b, 32),
        u64_at(b, 40),
        u64_at(b, 48),
        u64_at(b, 56),
        u64_at(b, 64),
        u64_at(b, 72),
        u16::from_ne_bytes([b[80], b[81]]),
        u64_at(b, 88),
        u64_at(b, 96),
        u32_at(b, 104)
    )
}

/// `struct statfs` up to `f_flags`, the filesystem type by its magic's name.
fn statfs(b: &[u8]) -> String {
    let magic = u64_at(b, 0) as i64;
    let fs = (sysnames::FS_MAGICS.iter().find(|(m, _)| *m == magic))
        .map_or_else(|| format!("{magic:#x}"), |(_, name)| name.to_string());
    let hex = |v: u32| match v {
        0 => "0".to_string(),
        v => format!("{v:#x}"),
    };
    format!(
        "{{f_type={fs}, f_bsize={}, f_blocks={}, f_bfree={}, f_bavail={}, f_files={}, \
         f_ffree={}, f_fsid={{val=[{}, {}]}}, f_namelen={}, f_frsize={}, f_flags={}}}",
        u64_at(b, 8) as i64,
        u64_at(b, 16),
        u64_at(b, 24),
        u64_at(b, 32),
        u64_at(b, 40),
        u64_at(b, 48),
        hex(u32_at(b, 56)),
        hex(u32_at(b, 60)),
        u64_at(b, 64) as i64,
        u64_at(b, 72) as i64,
        flags(u64_at(b, 80), &sysnames::STATFS_FLAGS, "0")
    )
}

/// sigaltstack's `stack_t`.
fn stack_t(b: &[u8]) -> String {
    format!(
        "{{ss_sp={}, ss_flags={}, ss_size={}}}",
        pointer(u64_at(b, 0)),
        flags(u64::from(u32_at(b, 8)), &sysnames::SS_FLAGS, "0"),
        u64_at(b, 16)
    )
}

/// capget's and capset's header: the version by name, the pid.
fn cap_header(b: &[u8]) -> String {
    let version = i64::from(u32_at(b, 0));
    let version = match sysnames::CAP_VERSIONS.iter().find(|(v, _)| *v == version) {
        Some((_, name)) => name.to_string(),
        None if version == 0 => "0 /* _LINUX_CAPABILITY_VERSION_??? */".to_string(),
        None => format!("{version:#x} /* _LINUX_CAPABILITY_VERSION_??? */"),
    };
    format!("{{version={version}, pid={}}}", u32_at(b, 4) as i32)
}

/// capget's and capset's sets: two `{effective, permitted, inheritable}` of 32 bits, the low
/// and high halves of each set.
fn cap_data(b: &[u8]) -> String {
    let set = |at: usize| u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 12)) << 32;
    format!(
        "{{effective={}, permitted={}, inheritable={}}}",
        capabilities(set(0)),
        capabilities(set(4)),
        capabilities(set(8))
    )
}

/// The kernel's `struct sigaction` (x86-64: handler, flags, restorer, mask).
fn sigaction(bytes: &[u8]) -> String {
    let u64_at = |at: usize| u64_at(bytes, at);
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

/// clone3's arguments as strace shows them (`bytes` cut at the size the call was given): the
/// flags, then the fields the flags use, as strace's clone3 decoder picks them.
fn clone_args(bytes: &[u8]) -> Option<String> {
    const CLONE_PIDFD: u64 = 0x1000;
    const CLONE_SETTLS: u64 = 0x80000;
    const CLONE_PARENT_SETTID: u64 = 0x100000;
    const CLONE_CHILD_SETTID_OR_CLEARTID: u64 = 0x1000000 | 0x200000;
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    const CLONE3_FLAGS: [(u64, &str); 2] = [
        (0x1_0000_0000, "CLONE_CLEAR_SIGHAND"),
        (CLONE_INTO_CGROUP, "CLONE_INTO_CGROUP"),
    ];
    // Version 0 ends at `tls`; the later fields only where the call gave them.
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    let flags = word(0)?;
    let named = match flags & 0xffff_ffff {
        0 => String::new(),
        low => self::flags(low, &sysnames::CLONE_FLAGS, "0"),
    };
    let high = match flags >> 32 {
        0 => String::new(),
        _ => self::flags(flags & !0xffff_ffff, &CLONE3_FLAGS, "0"),
    };
    let flags_text = match (named.is_empty(), high.is_empty()) {
        (true, true) => "0".to_string(),
        (false, true) => named,
        (true, false) => high,
        (false, false) => format!("{named}|{high}"),
    };
    let mut out = format!("{{flags={flags_text}");
    if flags & CLONE_PIDFD != 0 {
        out.push_str(&format!(", pidfd={}", pointer(word(8)?)));
    }
    if flags & CLONE_CHILD_SETTID_OR_CLEARTID != 0 {
        out.push_str(&format!(", child_tid={}", pointer(word(16)?)));
    }
    if flags & CLONE_PARENT_SETTID != 0 {
        out.push_str(&format!(", parent_tid={}", pointer(word(24)?)));
    }
    out.push_str(&format!(", exit_signal={}", signal(word(32)?)));
    out.push_str(&format!(", stack={}", pointer(word(40)?)));
    out.push_str(&match word(48)? {
        0 => ", stack_size=0".to_string(),
        size => format!(", stack_size={size:#x}"),
    });
    if flags & CLONE_SETTLS != 0 {
        out.push_str(&format!(", tls={}", pointer(word(56)?)));
    }
    if let (Some(set_tid), Some(set_tid_size)) = (word(64), word(72)) {
        if set_tid != 0 || set_tid_size != 0 {
            out.push_str(&format!(
                ", set_tid={}, set_tid_size={set_tid_size}",
                pointer(set_tid)
            ));
        }
    }
    if flags & CLONE_INTO_CGROUP != 0 {
        if let Some(cgroup) = word(80) {
            out.push_str(&format!(", cgroup={cgroup}"));
        }
    }
    out.push('}');
    Some(out)
}

/// A CPU mask as strace shows it, the numbers of the CPUs in it: `[0 1]`.
fn cpu_set(bytes: &[u8]) -> String {
    let cpus: Vec<String> = (bytes.iter().enumerate())
        .flat_map(|(i, &byte)| {
            (0..8)
                .filter(move |b| byte >> b & 1 != 0)
                .map(move |b| 8 * i + b)
        })
        .map(|cpu| cpu.to_string())
        .collect();
    format!("[{}]", cpus.join(" "))
}

/// A `gid_t` array: `[4, 24]`, `[]`.
fn gids(bytes: &[u8]) -> String {
    let ids: Vec<String> = (bytes.chunks_exact(4))
        .map(|id| id_text(u32::from_ne_bytes([id[0], id[1], id[2], id[3]])))
        .collect();
    format!("[{}]", ids.join(", "))
}

/// A user or group id as strace's printuid shows it: `-1` for `(uid_t) -1`, else unsigned.
fn id_text(id: u32) -> String {
    match id {
        u32::MAX => "-1".into(),
        id => id.to_string(),
    }
}

/// A capability set as strace shows it: `1<<CAP_CHOWN|1<<CAP_KILL`, `0` for none, bits past
/// the known capabilities in hex.
fn capabilities(set: u64) -> String {
    if set == 0 {
        return "0".into();
    }
    let mut parts: Vec<String> = (sysnames::CAPABILITIES.iter().enumerate())
        .filter(|(bit, _)| set >> bit & 1 != 0)
        .map(|(_, name)| format!("1<<{name}"))
        .collect();
    let rest = set & !((1u64 << sysnames::CAPABILITIES.len()) - 1);
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
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

/// poll's fds that have events, from the part of the array it filled that was read:
/// `[{fd=3, revents=POLLIN}]`. `ready` (the call's return) says how many have them: `...`
/// stands for those past the part read, as for those past the first
/// [`crate::kernel::syscalls::ARRAY_SHOWN`] (strace's `[{fd=3, revents=POLLIN}, ...]`).
pub fn poll_revents(bytes: &[u8], ready: u64) -> Option<String> {
    let mut fds: Vec<String> = (bytes.chunks_exact(8))
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
        .take(crate::kernel::syscalls::ARRAY_SHOWN)
        .collect();
    if ready > fds.len() as u64 {
        fds.push("...".into());
    }
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

    /// As strace 6.1 printed them on this machine (statfs of / and /proc, sysinfo,
    /// sigaltstack, sched_getaffinity, capget as root in the VM).
    #[test]
    fn system_structures_read_as_strace_writes_them() {
        let statfs = bytes(
            &[
                (0, 0xef53, 8),
                (8, 4096, 8),
                (16, 66_053_021, 8),
                (24, 62_009_773, 8),
                (32, 19_778_224, 8),
                (40, 16_777_216, 8),
                (48, 16_343_014, 8),
                (56, 0x2081_c329, 4),
                (60, 0x19f0_ae3c, 4),
                (64, 255, 8),
                (72, 4096, 8),
                (80, 0x1020, 8),
            ],
            88,
        );
        assert_eq!(
            decode(Struct::Statfs, &statfs).unwrap(),
            "{f_type=EXT2_SUPER_MAGIC, f_bsize=4096, f_blocks=66053021, f_bfree=62009773, \
             f_bavail=19778224, f_files=16777216, f_ffree=16343014, \
             f_fsid={val=[0x2081c329, 0x19f0ae3c]}, f_namelen=255, f_frsize=4096, \
             f_flags=ST_VALID|ST_RELATIME}"
        );
        let proc = bytes(
            &[
                (0, 0x9fa0, 8),
                (8, 4096, 8),
                (56, 0x15, 4),
                (64, 255, 8),
                (72, 4096, 8),
            ],
            88,
        );
        assert_eq!(
            decode(Struct::Statfs, &proc).unwrap(),
            "{f_type=PROC_SUPER_MAGIC, f_bsize=4096, f_blocks=0, f_bfree=0, f_bavail=0, \
             f_files=0, f_ffree=0, f_fsid={val=[0x15, 0]}, f_namelen=255, f_frsize=4096, \
             f_flags=0}"
        );
        let info = bytes(
            &[
                (0, 1212, 8),
                (8, 166_080, 8),
                (16, 135_136, 8),
                (24, 89_472, 8),
                (32, 25_276_510_208, 8),
                (40, 18_307_383_296, 8),
                (48, 9_068_544, 8),
                (56, 92_364_800, 8),
                (80, 76, 2),
                (104, 1, 4),
            ],
            112,
        );
        assert_eq!(
            decode(Struct::Sysinfo, &info).unwrap(),
            "{uptime=1212, loads=[166080, 135136, 89472], totalram=25276510208, \
             freeram=18307383296, sharedram=9068544, bufferram=92364800, totalswap=0, \
             freeswap=0, procs=76, totalhigh=0, freehigh=0, mem_unit=1}"
        );
        let stack = bytes(&[(0, 0x562f_2ee6_12a0, 8), (16, 65536, 8)], 24);
        assert_eq!(
            decode(Struct::StackT, &stack).unwrap(),
            "{ss_sp=0x562f2ee612a0, ss_flags=0, ss_size=65536}"
        );
        assert_eq!(
            decode(Struct::StackT, &bytes(&[(8, 2, 4)], 24)).unwrap(),
            "{ss_sp=NULL, ss_flags=SS_DISABLE, ss_size=0}"
        );
        assert_eq!(decode(Struct::CpuSet, &[3, 0, 0, 0]).unwrap(), "[0 1]");
        let ids = [4u32, 24, u32::MAX].map(u32::to_ne_bytes).concat();
        assert_eq!(decode(Struct::Gids, &ids).unwrap(), "[4, 24, -1]");
        assert_eq!(decode(Struct::Gids, &[]).unwrap(), "[]");
        assert_eq!(
            decode(Struct::Id, &1000u32.to_ne_bytes()).unwrap(),
            "[1000]"
        );
        assert_eq!(decode(Struct::CpuSet, &[0, 0x81]).unwrap(), "[8 15]");
        let header = |version: u64| decode(Struct::CapHeader, &bytes(&[(0, version, 4)], 8));
        assert_eq!(
            header(0x2008_0522).unwrap(),
            "{version=_LINUX_CAPABILITY_VERSION_3, pid=0}"
        );
        assert_eq!(
            header(0).unwrap(),
            "{version=0 /* _LINUX_CAPABILITY_VERSION_??? */, pid=0}"
        );
        // CAP_CHOWN and CAP_KILL effective, CAP_BPF (39) permitted: in the second half.
        let caps = bytes(&[(0, 0x21, 4), (4, 1, 4), (16, 1 << 7, 4)], 24);
        assert_eq!(
            decode(Struct::CapData, &caps).unwrap(),
            "{effective=1<<CAP_CHOWN|1<<CAP_KILL, permitted=1<<CAP_CHOWN|1<<CAP_BPF, \
             inheritable=0}"
        );
    }

    /// clone3's arguments for pthread_create and posix_spawn, as strace 6.1 printed them here.
    #[test]
    fn clone3_arguments_read_as_strace_writes_them() {
        let thread = bytes(
            &[
                (0, 0x3d0f00, 8),
                (16, 0x7fdd_4339_2990, 8),
                (24, 0x7fdd_4339_2990, 8),
                (40, 0x7fdd_42b9_2000, 8),
                (48, 0x7fff80, 8),
                (56, 0x7fdd_4339_26c0, 8),
            ],
            88,
        );
        assert_eq!(
            decode(Struct::CloneArgs, &thread).unwrap(),
            "{flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|\
             CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7fdd43392990, \
             parent_tid=0x7fdd43392990, exit_signal=0, stack=0x7fdd42b92000, \
             stack_size=0x7fff80, tls=0x7fdd433926c0}"
        );
        let spawn = bytes(
            &[
                (0, 0x4100, 8),
                (32, 17, 8),
                (40, 0x7fdd_4357_8000, 8),
                (48, 0x9000, 8),
            ],
            88,
        );
        assert_eq!(
            decode(Struct::CloneArgs, &spawn).unwrap(),
            "{flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7fdd43578000, \
             stack_size=0x9000}"
        );
        // Version 0 (64 bytes) has no set_tid; a shorter size is not a clone_args.
        assert!(decode(Struct::CloneArgs, &spawn[..64]).is_some());
        assert_eq!(decode(Struct::CloneArgs, &spawn[..40]), None);
    }

    /// `FS_MAGICS` against the kernel's header, where it is installed: every name it has is
    /// there with its number (Debian 12's header, from Linux 6.1, predates bcachefs's;
    /// configfs's is defined in its own source, fs/configfs, not in the header).
    #[test]
    fn filesystem_magics_are_the_headers() {
        let Ok(header) = std::fs::read_to_string("/usr/include/linux/magic.h") else {
            eprintln!("skipped: /usr/include/linux/magic.h is not installed (linux-libc-dev)");
            return;
        };
        let mut absent = Vec::new();
        for (value, name) in sysnames::FS_MAGICS {
            let defined = (header.lines())
                .filter_map(|l| l.strip_prefix("#define "))
                .find_map(|l| {
                    let mut words = l.split_whitespace();
                    (words.next() == Some(name)).then(|| words.next()).flatten()
                });
            let Some(defined) = defined else {
                absent.push(name);
                continue;
            };
            let number = i64::from_str_radix(defined.trim_start_matches("0x"), 16)
                .unwrap_or_else(|_| panic!("{name} {defined}"));
            assert_eq!(value, number, "{name}");
        }
        assert!(
            (absent.iter()).all(|n| ["BCACHEFS_SUPER_MAGIC", "CONFIGFS_MAGIC"].contains(n)),
            "not in linux/magic.h: {absent:?}"
        );
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
        assert_eq!(poll_revents(&fds, 1).unwrap(), "[{fd=3, revents=POLLIN}]");
        // More ready than were read (past the fds read): strace's `...`.
        assert_eq!(
            poll_revents(&fds, 2).unwrap(),
            "[{fd=3, revents=POLLIN}, ...]"
        );
        assert_eq!(poll_revents(&fds[8..], 1).unwrap(), "[...]");
        // At most 32 shown.
        let forty = fds[..8].repeat(40);
        let shown = poll_revents(&forty, 40).unwrap();
        assert_eq!(shown.matches("revents=POLLIN").count(), 32);
        assert!(shown.ends_with("}, ...]"), "{shown}");
        assert_eq!(decode(Struct::EpollEvents, &[]).unwrap(), "[]");
    }
}
