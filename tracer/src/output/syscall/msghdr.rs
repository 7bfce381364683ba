//! A `struct msghdr` (sendmsg, recvmsg) as strace's msghdr.c writes it.

use super::{errno_of, flags, iovecs, pointer, quote_hex, Read};
use crate::kernel::syscalls::Arg;
use crate::kernel::sysnames;

/// A msghdr a call was given or filled, as read at its exit (`str_array::MSGHDR_*`).
pub struct MsgHdr<'a> {
    /// Its address.
    pub raw: u64,
    /// Its header, name, control data, then iovecs ([`tracer_common::str_array`]).
    pub read: Option<&'a Read>,
    /// recvmsg: the call fills it.
    pub filled: bool,
    /// recvmsg: `msg_namelen` at entry, when the entry read it.
    pub given: Option<u32>,
    /// The return value; `None` for a call that did not return.
    pub ret: Option<i64>,
}

/// The msghdr as strace writes it: `{msg_name=NULL, msg_namelen=0, msg_iov=[...],
/// msg_iovlen=1, msg_control=[{cmsg_len=20, ...}], msg_controllen=24, msg_flags=0}`, a
/// recvmsg's name length as `128 => 16` where the call changed it; a failed recvmsg as its
/// name length at entry (`{msg_namelen=16}`); its address when unread.
pub fn msghdr(m: &MsgHdr<'_>) -> String {
    let (Some(ret), Some(read)) = (m.ret, m.read) else {
        return pointer(m.raw);
    };
    let Some((head, 0)) = read.entries.first() else {
        return pointer(m.raw);
    };
    let word = |at: usize| head.get(at..at + 8).map_or(0, u64_of);
    if m.raw == 0 || head.len() < tracer_common::MSGHDR_BYTES as usize {
        return pointer(m.raw);
    }
    let (name, namelen, iov, iovlen) = (word(0), word(8) as u32, word(16), word(24));
    let (control, controllen, msg_flags) = (word(32), word(40), word(48) as u32);
    if m.filled && errno_of(ret).is_some() {
        return format!("{{msg_namelen={}}}", m.given.unwrap_or(namelen));
    }
    let part = |k: usize, len: u64| match read.entries.get(k) {
        Some((bytes, 0)) => Some(&bytes[..bytes.len().min(len as usize)]),
        _ => None,
    };
    let name_text = match (name, part(1, namelen.into())) {
        (0, _) => "NULL".to_string(),
        (_, Some(bytes)) => crate::output::structs::sockaddr(bytes).unwrap_or(pointer(name)),
        _ => pointer(name),
    };
    let namelen_text = match m.given {
        Some(given) if m.filled && given != namelen => format!("{given} => {namelen}"),
        _ => namelen.to_string(),
    };
    let iovecs_read = Read {
        entries: read.entries.get(3..).unwrap_or_default().to_vec(),
        ..read.clone()
    };
    let iov_kind = match m.filled {
        true => Arg::IovFilled(0),
        false => Arg::IovGiven(0),
    };
    let mut out = format!(
        "{{msg_name={name_text}, msg_namelen={namelen_text}, msg_iov={}, msg_iovlen={iovlen}",
        iovecs(iov_kind, iov, Some(&iovecs_read), Some(ret)),
    );
    if controllen != 0 {
        let cmsgs = match part(2, controllen) {
            Some(bytes) => cmsgs(bytes, controllen),
            None => pointer(control),
        };
        out.push_str(&format!(", msg_control={cmsgs}"));
    }
    let msg_flags = flags(msg_flags.into(), &sysnames::MSG_FLAGS, "0");
    out.push_str(&format!(
        ", msg_controllen={controllen}, msg_flags={msg_flags}}}"
    ));
    out
}

fn u64_of(bytes: &[u8]) -> u64 {
    u64::from_ne_bytes(bytes.try_into().expect("8 bytes"))
}

/// Control messages (`struct cmsghdr`, each 8-byte aligned) as strace writes them: the
/// descriptors of `SCM_RIGHTS`, the `{pid, uid, gid}` of `SCM_CREDENTIALS`, `IP_TOS`,
/// `IP_TTL` and `IP_PKTINFO` as strace does, other data of those two levels in hexadecimal,
/// and other levels' messages without data (strace's way); `...` where the data read ends
/// before `controllen`.
/// A `struct in_pktinfo` as strace writes it: the interface by name where it has one now.
fn ip_pktinfo(data: &[u8]) -> String {
    let index = u32::from_ne_bytes(data[0..4].try_into().expect("4 bytes"));
    let address = |at: usize| {
        let octets: [u8; 4] = data[at..at + 4].try_into().expect("4 bytes");
        std::net::Ipv4Addr::from(octets)
    };
    // The name the index has now (/sys/class/net/NAME/ifindex), as if_indextoname reads it.
    let name = (std::fs::read_dir("/sys/class/net")
        .into_iter()
        .flatten()
        .flatten())
    .find(|e| {
        std::fs::read_to_string(e.path().join("ifindex"))
            .is_ok_and(|i| i.trim().parse() == Ok(index))
    });
    let interface = match name {
        Some(entry) => format!("if_nametoindex({:?})", entry.file_name().to_string_lossy()),
        None => index.to_string(),
    };
    format!(
        "{{ipi_ifindex={interface}, ipi_spec_dst=inet_addr(\"{}\"), ipi_addr=inet_addr(\"{}\")}}",
        address(4),
        address(8)
    )
}

fn cmsgs(bytes: &[u8], controllen: u64) -> String {
    let i32_at = |b: &[u8], at: usize| {
        b.get(at..at + 4)
            .map(|w| i32::from_ne_bytes(w.try_into().expect("4 bytes")))
    };
    let mut parts = Vec::new();
    let mut at: usize = 0;
    while at.saturating_add(16) <= bytes.len() {
        let len = u64_of(&bytes[at..at + 8]) as usize;
        let (level, kind) = (
            i32_at(bytes, at + 8).unwrap_or(0),
            i32_at(bytes, at + 12).unwrap_or(0),
        );
        if len < 16 {
            break;
        }
        // The lengths are the traced program's: one past the data read ends the list.
        let data = &bytes[at + 16..bytes.len().min(at.saturating_add(len))];
        let level_text = match level {
            libc::SOL_SOCKET => "SOL_SOCKET".to_string(),
            libc::SOL_IP => "SOL_IP".to_string(),
            libc::SOL_IPV6 => "SOL_IPV6".to_string(),
            n => n.to_string(),
        };
        let (kind_text, data_text) = match (level, kind) {
            (libc::SOL_SOCKET, libc::SCM_RIGHTS) => {
                let fds: Vec<String> = (data.chunks_exact(4))
                    .map(|w| i32::from_ne_bytes(w.try_into().expect("4 bytes")).to_string())
                    .collect();
                (
                    "SCM_RIGHTS".to_string(),
                    Some(format!("[{}]", fds.join(", "))),
                )
            }
            (libc::SOL_SOCKET, libc::SCM_CREDENTIALS) if data.len() >= 12 => {
                let word = |i: usize| i32_at(data, 4 * i).unwrap_or(0);
                let creds = format!(
                    "{{pid={}, uid={}, gid={}}}",
                    word(0),
                    word(1) as u32,
                    word(2) as u32
                );
                ("SCM_CREDENTIALS".to_string(), Some(creds))
            }
            (libc::SOL_IP, libc::IP_TOS) if !data.is_empty() => {
                ("IP_TOS".to_string(), Some(format!("[{:#x}]", data[0])))
            }
            (libc::SOL_IP, libc::IP_TTL) if data.len() >= 4 => (
                "IP_TTL".to_string(),
                Some(format!("[{}]", i32_at(data, 0).unwrap_or(0))),
            ),
            (libc::SOL_IP, libc::IP_PKTINFO) if data.len() >= 12 => {
                ("IP_PKTINFO".to_string(), Some(ip_pktinfo(data)))
            }
            // strace 6.1 names no other level's types and leaves their data out.
            (libc::SOL_SOCKET | libc::SOL_IP, _) => {
                let mut hex = String::new();
                quote_hex(data, &mut hex);
                (kind.to_string(), Some(hex))
            }
            _ => (format!("{kind:#x}"), None),
        };
        let data_text = data_text.map_or(String::new(), |d| format!(", cmsg_data={d}"));
        parts.push(format!(
            "{{cmsg_len={len}, cmsg_level={level_text}, cmsg_type={kind_text}{data_text}}}"
        ));
        at = at.saturating_add(len.div_ceil(8).saturating_mul(8));
    }
    if (bytes.len() as u64) < controllen && at < controllen as usize {
        parts.push("...".into());
    }
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: u64, namelen: u32, controllen: u64, msg_flags: u32) -> Vec<u8> {
        let mut head = Vec::new();
        for word in [
            name,
            namelen.into(),
            0x3000,
            1,
            0x4000,
            controllen,
            msg_flags.into(),
        ] {
            head.extend_from_slice(&word.to_ne_bytes());
        }
        head
    }

    fn read(entries: Vec<Vec<u8>>) -> Read {
        Read {
            entries: entries.into_iter().map(|e| (e, 0)).collect(),
            ..Read::default()
        }
    }

    fn iov(base: u64, len: u64) -> Vec<u8> {
        [base.to_ne_bytes(), len.to_ne_bytes()].concat()
    }

    #[test]
    fn messages_read_as_straces_msghdr_c_writes_them() {
        // sendmsg of "po" with one descriptor passed.
        let mut control = Vec::new();
        control.extend_from_slice(&20u64.to_ne_bytes());
        control.extend_from_slice(&libc::SOL_SOCKET.to_ne_bytes());
        control.extend_from_slice(&libc::SCM_RIGHTS.to_ne_bytes());
        control.extend_from_slice(&5i32.to_ne_bytes());
        control.extend_from_slice(&[0; 4]);
        let sent = read(vec![
            header(0, 0, 24, 0),
            vec![],
            control,
            iov(0x5000, 2),
            b"po".to_vec(),
        ]);
        let msg = |read: &Read, filled, given, ret| {
            msghdr(&MsgHdr {
                raw: 0x1000,
                read: Some(read),
                filled,
                given,
                ret: Some(ret),
            })
        };
        assert_eq!(
            msg(&sent, false, None, 2),
            "{msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base=\"po\", iov_len=2}], \
             msg_iovlen=1, msg_control=[{cmsg_len=20, cmsg_level=SOL_SOCKET, \
             cmsg_type=SCM_RIGHTS, cmsg_data=[5]}], msg_controllen=24, msg_flags=0}"
        );
        // recvmsg of a datagram from 127.0.0.1:80 into a 16-byte buffer, the name's length
        // 128 at entry; failed, the length it was given.
        let mut inet = vec![2, 0, 0, 80, 127, 0, 0, 1];
        inet.resize(16, 0);
        let got = read(vec![
            header(0x2000, 16, 0, libc::MSG_TRUNC as u32),
            inet,
            vec![],
            iov(0x5000, 16),
            b"pong".to_vec(),
        ]);
        assert_eq!(
            msg(&got, true, Some(128), 4),
            "{msg_name={sa_family=AF_INET, sin_port=htons(80), \
             sin_addr=inet_addr(\"127.0.0.1\")}, msg_namelen=128 => 16, \
             msg_iov=[{iov_base=\"pong\", iov_len=16}], msg_iovlen=1, msg_controllen=0, \
             msg_flags=MSG_TRUNC}"
        );
        assert_eq!(msg(&got, true, Some(16), -9), "{msg_namelen=16}");
        // Not returned, or not read: its address.
        let unread = msghdr(&MsgHdr {
            raw: 0x1000,
            read: Some(&got),
            filled: true,
            given: None,
            ret: None,
        });
        assert_eq!(unread, "0x1000");
        let mut faulted = got.clone();
        faulted.entries[0].1 = tracer_common::str_flag::FAULT;
        assert_eq!(msg(&faulted, true, Some(16), 4), "0x1000");
    }

    #[test]
    fn a_control_length_past_the_data_ends_the_list() {
        let mut huge = Vec::new();
        huge.extend_from_slice(&u64::MAX.to_ne_bytes());
        huge.extend_from_slice(&libc::SOL_SOCKET.to_ne_bytes());
        huge.extend_from_slice(&libc::SCM_RIGHTS.to_ne_bytes());
        huge.extend_from_slice(&7i32.to_ne_bytes());
        assert_eq!(
            cmsgs(&huge, 20),
            format!(
                "[{{cmsg_len={}, cmsg_level=SOL_SOCKET, cmsg_type=SCM_RIGHTS, cmsg_data=[7]}}]",
                u64::MAX
            )
        );
    }

    #[test]
    fn ip_messages_are_decoded_and_other_levels_named_by_number_alone() {
        let cmsg = |level: i32, kind: i32, data: &[u8]| {
            let mut c = Vec::new();
            c.extend_from_slice(&(16 + data.len() as u64).to_ne_bytes());
            c.extend_from_slice(&level.to_ne_bytes());
            c.extend_from_slice(&kind.to_ne_bytes());
            c.extend_from_slice(data);
            c.resize(c.len().div_ceil(8) * 8, 0);
            c
        };
        // strace 6.1's lines for IPv6's hop limit and traffic class, and IPv4's TTL and TOS.
        let mut v6 = cmsg(libc::SOL_IPV6, libc::IPV6_HOPLIMIT, &64i32.to_ne_bytes());
        v6.extend(cmsg(
            libc::SOL_IPV6,
            libc::IPV6_TCLASS,
            &0x20i32.to_ne_bytes(),
        ));
        assert_eq!(
            cmsgs(&v6, v6.len() as u64),
            "[{cmsg_len=20, cmsg_level=SOL_IPV6, cmsg_type=0x34}, \
             {cmsg_len=20, cmsg_level=SOL_IPV6, cmsg_type=0x43}]"
        );
        let mut v4 = cmsg(libc::SOL_IP, libc::IP_TTL, &64i32.to_ne_bytes());
        v4.extend(cmsg(libc::SOL_IP, libc::IP_TOS, &[0x10]));
        assert_eq!(
            cmsgs(&v4, v4.len() as u64),
            "[{cmsg_len=20, cmsg_level=SOL_IP, cmsg_type=IP_TTL, cmsg_data=[64]}, \
             {cmsg_len=17, cmsg_level=SOL_IP, cmsg_type=IP_TOS, cmsg_data=[0x10]}]"
        );
        // An index no interface has: the number.
        let mut info = u32::MAX.to_ne_bytes().to_vec();
        info.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
        let pktinfo = cmsg(libc::SOL_IP, libc::IP_PKTINFO, &info);
        assert_eq!(
            cmsgs(&pktinfo, pktinfo.len() as u64),
            "[{cmsg_len=28, cmsg_level=SOL_IP, cmsg_type=IP_PKTINFO, \
             cmsg_data={ipi_ifindex=4294967295, ipi_spec_dst=inet_addr(\"127.0.0.1\"), \
             ipi_addr=inet_addr(\"127.0.0.1\")}}]"
        );
    }

    #[test]
    fn control_messages_past_the_read_end_in_dots() {
        let mut creds = Vec::new();
        creds.extend_from_slice(&28u64.to_ne_bytes());
        creds.extend_from_slice(&libc::SOL_SOCKET.to_ne_bytes());
        creds.extend_from_slice(&libc::SCM_CREDENTIALS.to_ne_bytes());
        for w in [42i32, 1000, 100] {
            creds.extend_from_slice(&w.to_ne_bytes());
        }
        creds.extend_from_slice(&[0; 4]);
        assert_eq!(
            cmsgs(&creds, 32),
            "[{cmsg_len=28, cmsg_level=SOL_SOCKET, cmsg_type=SCM_CREDENTIALS, \
             cmsg_data={pid=42, uid=1000, gid=100}}]"
        );
        assert_eq!(
            cmsgs(&creds, 200),
            "[{cmsg_len=28, cmsg_level=SOL_SOCKET, cmsg_type=SCM_CREDENTIALS, \
             cmsg_data={pid=42, uid=1000, gid=100}}, ...]"
        );
    }
}
