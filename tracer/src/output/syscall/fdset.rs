//! select's and pselect6's fd sets, signal mask and result, as strace's desc.c writes them
//! (decode_select, do_pselect6): `select(5, [3], [4], NULL, {tv_sec=5, tv_usec=500}) = 2
//! (in [3], out [4], left {tv_sec=4, tv_usec=999})`.

use tracer_common::str_flag;

use super::{pointer, Read};
use crate::kernel::syscalls::{Arg, Struct};

/// Where each part is among the entries of the sets' read (`str_array::FDSETS`).
const GIVEN: usize = 0;
const READY: usize = 3;
const MASK_ARG: usize = 6;
const MASK: usize = 7;

/// strace's words for the ready sets, in order.
const READY_NAMES: [&str; 3] = ["in", "out", "except"];

/// The descriptors set in `bytes` (an `fd_set`), below `nfds`, in order.
fn members(bytes: &[u8], nfds: usize) -> impl Iterator<Item = usize> + '_ {
    (bytes.iter().enumerate())
        .flat_map(|(i, &byte)| {
            (0..8)
                .filter(move |b| byte >> b & 1 != 0)
                .map(move |b| 8 * i + b)
        })
        .take_while(move |&fd| fd < nfds)
}

/// `nfds` as the kernel takes it: the register's low 32 bits, an `int`.
fn nfds(raw: u64) -> i32 {
    raw as u32 as i32
}

/// Fd set `which` (0 `readfds`, 1 `writefds`, 2 `exceptfds`) at `raw` as the call was given
/// it: `[3 4]`, `NULL`, or its address where it was not read (strace reads nothing for an
/// `nfds` of 0 or less). A set longer than was read ends in `...`.
pub fn given(which: u8, nfds_raw: u64, raw: u64, sets: Option<&Read>) -> String {
    let n = nfds(nfds_raw);
    let entry = sets.and_then(|r| r.entries.get(GIVEN + usize::from(which)));
    match (raw, entry) {
        (0, _) => "NULL".into(),
        (_, Some((bytes, flags))) if n > 0 && flags & !str_flag::TRUNCATED == 0 => {
            let fds: Vec<String> = members(bytes, n as usize)
                .map(|fd| fd.to_string())
                .collect();
            let more = match flags & str_flag::TRUNCATED {
                0 => "",
                _ if fds.is_empty() => "...",
                _ => " ...",
            };
            format!("[{}{more}]", fds.join(" "))
        }
        _ => pointer(raw),
    }
}

/// pselect6's sixth argument: `{sigmask=[USR1], sigsetsize=8}`, the mask's address where
/// its size is not the kernel's 8 bytes (strace's print_sigset_addr_len_limit), `NULL`, or
/// the argument's address where it was not read.
pub fn mask(raw: u64, sets: Option<&Read>) -> String {
    let entry = |at: usize| match sets.and_then(|r| r.entries.get(at)) {
        Some((bytes, 0)) => Some(bytes.as_slice()),
        _ => None,
    };
    let word = |bytes: &[u8], at: usize| {
        u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
    };
    if raw == 0 {
        return "NULL".into();
    }
    let Some(head) = entry(MASK_ARG).filter(|b| b.len() >= 16) else {
        return pointer(raw);
    };
    let (ss, len) = (word(head, 0), word(head, 8));
    let sigmask = match (ss, len, entry(MASK).filter(|b| b.len() >= 8)) {
        (0, _, _) => "NULL".into(),
        (_, 8, Some(bytes)) => crate::output::structs::sigset(word(bytes, 0)),
        _ => pointer(ss),
    };
    format!("{{sigmask={sigmask}, sigsetsize={len}}}")
}

/// The return of a select or pselect6 as strace shows it: `0 (Timeout)`; the ready fds of
/// each set, counted down from the return value (`2 (in [3], out [4])`), then the time left
/// when a timeout was given (`left {tv_sec=4, tv_usec=999}`, a `timeout` of the call's
/// kind). An error is the caller's to show, as any call's (`ret_in_call`).
pub fn ret(
    raw: u64,
    nfds_raw: u64,
    sets: Option<&Read>,
    left: Option<&Read>,
    timeout: Struct,
) -> String {
    let value = raw as i64;
    if value == 0 {
        return "0 (Timeout)".into();
    }
    let n = nfds(nfds_raw).max(0) as usize;
    let mut remaining = value;
    let mut parts = Vec::new();
    for (k, name) in READY_NAMES.iter().enumerate() {
        if remaining <= 0 {
            break;
        }
        let Some((bytes, 0)) = sets.and_then(|r| r.entries.get(READY + k)) else {
            continue;
        };
        let mut fds = Vec::new();
        for fd in members(bytes, n) {
            fds.push(fd.to_string());
            remaining -= 1;
            if remaining == 0 {
                break;
            }
        }
        if !fds.is_empty() {
            parts.push(format!("{name} [{}]", fds.join(" ")));
        }
    }
    let left = match left.and_then(|r| r.entries.first()) {
        Some((bytes, 0)) => crate::output::structs::decode(timeout, bytes),
        _ => None,
    };
    parts.extend(left.map(|left| format!("left {left}")));
    match parts.is_empty() {
        true => value.to_string(),
        false => format!("{value} ({})", parts.join(", ")),
    }
}

/// Where `-y` shows what a descriptor inside an argument's text refers to, as strace's
/// printfd does there: after each number of a given fd set (`[3<pipe:[9]> 4<...>]`), each
/// `fd=` of poll's array, and each descriptor an `SCM_RIGHTS` message passes
/// (`cmsg_data=[3<...>]`). Byte offsets just past each number, in order.
pub fn inner_fds(kind: Arg, text: &str) -> Vec<usize> {
    let digits_from = |at: usize| {
        let len = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        (len > 0).then_some(at + len)
    };
    match kind {
        Arg::FdSet(_) if text.starts_with('[') => (text.char_indices())
            .filter(|&(i, c)| {
                c.is_ascii_digit() && (i == 0 || !text.as_bytes()[i - 1].is_ascii_digit())
            })
            .filter_map(|(i, _)| digits_from(i))
            .collect(),
        Arg::In(Struct::PollFds) => (text.match_indices("{fd="))
            .filter_map(|(i, m)| digits_from(i + m.len()))
            .collect(),
        Arg::MsgGiven | Arg::MsgFilled => {
            // Past the iovecs, whose bytes are the program's: the control part is last.
            let Some(control) = text.rfind("msg_control=[") else {
                return Vec::new();
            };
            let mark = "cmsg_type=SCM_RIGHTS, cmsg_data=[";
            let mut ends = Vec::new();
            for (i, m) in text[control..].match_indices(mark) {
                let mut at = control + i + m.len();
                while let Some(end) = digits_from(at) {
                    ends.push(end);
                    match text[end..].starts_with(", ") {
                        true => at = end + 2,
                        false => break,
                    }
                }
            }
            ends
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(fds: &[usize]) -> Vec<u8> {
        let mut bytes = vec![0u8; 16];
        for &fd in fds {
            bytes[fd / 8] |= 1 << (fd % 8);
        }
        bytes
    }

    fn sets(entries: Vec<(Vec<u8>, u8)>) -> Read {
        Read {
            entries,
            ..Read::default()
        }
    }

    const FAULT: u8 = str_flag::FAULT;

    #[test]
    fn given_sets_read_as_strace_writes_them() {
        let read = sets(vec![
            (set(&[3, 100]), 0),
            (set(&[]), 0),
            (Vec::new(), FAULT),
            (set(&[0, 5]), str_flag::TRUNCATED),
        ]);
        assert_eq!(given(0, 101, 0x10, Some(&read)), "[3 100]");
        // Bits at or past nfds are not the call's.
        assert_eq!(given(0, 100, 0x10, Some(&read)), "[3]");
        assert_eq!(given(1, 101, 0x10, Some(&read)), "[]");
        assert_eq!(given(2, 101, 0x7ff0, Some(&read)), "0x7ff0");
        assert_eq!(given(2, 101, 0, Some(&read)), "NULL");
        // nfds of 0 or less: nothing read, the address shown (strace's `select(-1, 0x7ff...`).
        assert_eq!(given(0, (-1i64) as u64, 0x10, Some(&read)), "0x10");
        assert_eq!(given(0, 0, 0x10, Some(&read)), "0x10");
        assert_eq!(given(0, 101, 0x10, None), "0x10");
        let cut = sets(vec![(set(&[0, 5]), str_flag::TRUNCATED)]);
        assert_eq!(given(0, 2000, 0x10, Some(&cut)), "[0 5 ...]");
    }

    #[test]
    fn the_return_counts_ready_fds_down_and_adds_the_time_left() {
        let mut entries = vec![(Vec::new(), FAULT); 3];
        entries.extend([(set(&[3]), 0), (set(&[4]), 0), (set(&[0]), 0)]);
        let read = sets(entries);
        let timeval = [5u64.to_ne_bytes(), 498u64.to_ne_bytes()].concat();
        let left = sets(vec![(timeval, 0)]);
        assert_eq!(
            ret(2, 5, Some(&read), Some(&left), Struct::Timeval),
            "2 (in [3], out [4], left {tv_sec=5, tv_usec=498})"
        );
        assert_eq!(
            ret(3, 5, Some(&read), None, Struct::Timeval),
            "3 (in [3], out [4], except [0])"
        );
        assert_eq!(
            ret(0, 5, Some(&read), Some(&left), Struct::Timeval),
            "0 (Timeout)"
        );
        assert_eq!(ret(1, 5, None, None, Struct::Timespec), "1");
    }

    #[test]
    fn descriptors_inside_arguments_are_found_for_dash_y() {
        fn ends(kind: Arg, text: &str) -> Vec<&str> {
            (inner_fds(kind, text).into_iter())
                .map(|end| {
                    let start = text[..end]
                        .rfind(|c: char| !c.is_ascii_digit())
                        .map_or(0, |s| s + 1);
                    &text[start..end]
                })
                .collect()
        }
        assert_eq!(ends(Arg::FdSet(0), "[3 100 7]"), ["3", "100", "7"]);
        assert_eq!(ends(Arg::FdSet(1), "0x7ff0"), Vec::<&str>::new());
        assert_eq!(
            ends(
                Arg::In(Struct::PollFds),
                "[{fd=3, events=POLLIN}, {fd=-1, events=0}, {fd=12, events=POLLOUT}]"
            ),
            ["3", "12"]
        );
        let msg = "{msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base=\"cmsg_type=SCM_RIGHTS, cmsg_data=[9]\", \
                   iov_len=1}], msg_iovlen=1, msg_control=[{cmsg_len=24, cmsg_level=SOL_SOCKET, \
                   cmsg_type=SCM_RIGHTS, cmsg_data=[3, 14]}, {cmsg_len=20, cmsg_level=SOL_IP, \
                   cmsg_type=IP_TTL, cmsg_data=[64]}], msg_controllen=48, msg_flags=0}";
        assert_eq!(ends(Arg::MsgGiven, msg), ["3", "14"]);
        assert_eq!(ends(Arg::Fd, "3"), Vec::<&str>::new());
    }

    #[test]
    fn pselect6s_mask_reads_as_strace_writes_it() {
        let head = |ss: u64, len: u64| [ss.to_ne_bytes(), len.to_ne_bytes()].concat();
        let mut entries = vec![(Vec::new(), FAULT); 6];
        entries.extend([
            (head(0x7000, 8), 0),
            ((1u64 << 9).to_ne_bytes().to_vec(), 0),
        ]);
        let read = sets(entries.clone());
        assert_eq!(mask(0x10, Some(&read)), "{sigmask=[USR1], sigsetsize=8}");
        assert_eq!(mask(0, Some(&read)), "NULL");
        entries[6] = (head(0x7000, 4), 0);
        assert_eq!(
            mask(0x10, Some(&sets(entries.clone()))),
            "{sigmask=0x7000, sigsetsize=4}"
        );
        entries[6] = (head(0, 8), 0);
        assert_eq!(
            mask(0x10, Some(&sets(entries.clone()))),
            "{sigmask=NULL, sigsetsize=8}"
        );
        entries[6] = (Vec::new(), FAULT);
        assert_eq!(mask(0x10, Some(&sets(entries))), "0x10");
    }
}
