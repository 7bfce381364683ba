//! The sockaddr a call filled and its length, as strace's net.c writes them.

use super::{cut_struct, errno_of, pointer, Read};
use crate::kernel::syscalls::SockLenFailed;

/// A sockaddr a call filled and its `socklen_t *`, as the call left them.
pub struct SockName<'a> {
    pub addr: u64,
    pub addr_read: Option<&'a Read>,
    pub len: u64,
    pub len_read: Option<&'a Read>,
    /// The length at entry, when the entry read it.
    pub given: Option<u32>,
    /// The return value; `None` for a call that did not return.
    pub ret: Option<i64>,
    pub failed: SockLenFailed,
}

/// The texts of a filled sockaddr and its length, as strace's net.c writes them
/// (decode_sockname, do_accept, recvfrom): the address as long as the shorter of the lengths
/// before and after (shorter than a family, its address), the length as `[16]` or, changed,
/// `[128 => 16]`; for a failed call the address and, as [`SockLenFailed`] says, the length it
/// was given or its address; where either pointer is NULL, both as addresses.
pub fn sockname(s: &SockName<'_>) -> (String, String) {
    let addresses = || (pointer(s.addr), pointer(s.len));
    let int = |read: Option<&Read>| match read.and_then(|r| r.entries.first()) {
        Some((bytes, 0)) => Some(u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?)),
        _ => None,
    };
    let (Some(ret), Some(given)) = (s.ret, s.given) else {
        return addresses();
    };
    if s.addr == 0 || s.len == 0 {
        return addresses();
    }
    if errno_of(ret).is_some() {
        return match s.failed {
            SockLenFailed::Given => (pointer(s.addr), format!("[{given}]")),
            SockLenFailed::Address => addresses(),
        };
    }
    let Some(after) = int(s.len_read) else {
        return addresses();
    };
    let addr = cut_struct(
        s.addr,
        s.addr_read,
        given.min(after) as usize,
        crate::output::structs::sockaddr,
    );
    let len = match given == after {
        true => format!("[{after}]"),
        false => format!("[{given} => {after}]"),
    };
    (addr, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_addresses_and_their_lengths_read_as_straces_net_c() {
        let bytes = |b: &[u8]| Read {
            entries: vec![(b.to_vec(), 0)],
            ..Read::default()
        };
        // AF_INET 127.0.0.1:80, then the rest of the 110 bytes read.
        let mut inet = vec![2, 0, 0, 80, 127, 0, 0, 1];
        inet.resize(110, 0);
        let (inet, sixteen, zero) = (bytes(&inet), bytes(&16u32.to_ne_bytes()), bytes(&[0; 4]));
        let name = |len_read: &Read, given: Option<u32>, ret: i64, failed| {
            sockname(&SockName {
                addr: 0x1000,
                addr_read: Some(&inet),
                len: 0x2000,
                len_read: Some(len_read),
                given,
                ret: Some(ret),
                failed,
            })
        };
        let addr = "{sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr(\"127.0.0.1\")}";
        let given = SockLenFailed::Given;
        assert_eq!(
            name(&sixteen, Some(16), 0, given),
            (addr.into(), "[16]".into())
        );
        assert_eq!(name(&sixteen, Some(128), 5, given).1, "[128 => 16]");
        // Shorter than a family: the address (recvfrom on a connected socket).
        assert_eq!(
            name(&zero, Some(16), 5, given),
            ("0x1000".into(), "[16 => 0]".into())
        );
        // As long as the shorter length: an unnamed AF_UNIX socket's family alone.
        let unix = bytes(&[1, 0, b'/', b'x', 0]);
        let two = bytes(&2u32.to_ne_bytes());
        let unnamed = sockname(&SockName {
            addr: 0x1000,
            addr_read: Some(&unix),
            len: 0x2000,
            len_read: Some(&two),
            given: Some(110),
            ret: Some(4),
            failed: given,
        });
        assert_eq!(unnamed, ("{sa_family=AF_UNIX}".into(), "[110 => 2]".into()));
        assert_eq!(
            name(&sixteen, Some(16), -107, given),
            ("0x1000".into(), "[16]".into())
        );
        assert_eq!(
            name(&sixteen, Some(16), -11, SockLenFailed::Address),
            ("0x1000".into(), "0x2000".into())
        );
        // Not read at entry: both addresses, as strace when it cannot fetch the length.
        assert_eq!(name(&sixteen, None, 0, given).1, "0x2000");
        let null = sockname(&SockName {
            addr: 0,
            addr_read: None,
            len: 0,
            len_read: None,
            given: None,
            ret: Some(1),
            failed: given,
        });
        assert_eq!(null, ("NULL".into(), "NULL".into()));
    }
}
