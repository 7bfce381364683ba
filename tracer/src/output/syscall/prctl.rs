//! prctl(2)'s arguments and result as strace 6.1's prctl.c shows them: each option's own
//! arguments (a capability, a signal, a count, flags), only as many as it takes, and the
//! others in hex; the name PR_SET_NAME gives and PR_GET_NAME fills (argument 1 is read as a
//! string at the exit, whatever the option: for the others it is a number, and the read
//! fails cleanly). The places the other options fill (PR_GET_PDEATHSIG's `int`) show their
//! address.

use libc::c_int;
use tracer_common::str_flag;

use super::{flags, signal, Read};
use crate::kernel::sysnames::{CAPABILITIES, PRCTL};

/// strace's print_prctl_args: a value in hex, 0 as `0`.
pub fn hex(value: u64) -> String {
    match value {
        0 => "0".into(),
        v => format!("{v:#x}"),
    }
}

/// A name of `names` by value, else the number with strace's `/* ??? */` comment.
fn xval(value: u64, names: &[(u64, &str)], unknown: &str) -> String {
    match names.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => (*name).into(),
        None => format!("{} /* {unknown} */", hex(value)),
    }
}

/// The option (argument 0, an `unsigned int`): `PR_SET_NAME`, `0x7ff /* PR_??? */`.
pub fn option(raw: u64) -> String {
    let option = raw as u32;
    match PRCTL.iter().find(|(v, _)| *v == i64::from(option as c_int)) {
        Some((_, name)) => (*name).into(),
        None => format!("{} /* PR_??? */", hex(u64::from(option))),
    }
}

fn capability(value: u64) -> String {
    match CAPABILITIES.get(value as usize) {
        Some(name) => (*name).into(),
        None => format!("{} /* CAP_??? */", hex(value)),
    }
}

// Options libc does not name (include/uapi/linux/prctl.h).
const PR_SET_IO_FLUSHER: u32 = 57;
const PR_SET_VMA: u32 = 0x53564d41;

const DUMPABLE: [(u64, &str); 3] = [
    (0, "SUID_DUMP_DISABLE"),
    (1, "SUID_DUMP_USER"),
    (2, "SUID_DUMP_ROOT"),
];

/// include/uapi/linux/securebits.h, in strace's order.
const SECBITS: [(u64, &str); 8] = [
    (1 << 0, "SECBIT_NOROOT"),
    (1 << 1, "SECBIT_NOROOT_LOCKED"),
    (1 << 2, "SECBIT_NO_SETUID_FIXUP"),
    (1 << 3, "SECBIT_NO_SETUID_FIXUP_LOCKED"),
    (1 << 4, "SECBIT_KEEP_CAPS"),
    (1 << 5, "SECBIT_KEEP_CAPS_LOCKED"),
    (1 << 6, "SECBIT_NO_CAP_AMBIENT_RAISE"),
    (1 << 7, "SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED"),
];

const CAP_AMBIENT: [(u64, &str); 4] = [
    (1, "PR_CAP_AMBIENT_IS_SET"),
    (2, "PR_CAP_AMBIENT_RAISE"),
    (3, "PR_CAP_AMBIENT_LOWER"),
    (4, "PR_CAP_AMBIENT_CLEAR_ALL"),
];

const SECCOMP_MODES: [(u64, &str); 3] = [
    (0, "SECCOMP_MODE_DISABLED"),
    (1, "SECCOMP_MODE_STRICT"),
    (2, "SECCOMP_MODE_FILTER"),
];

const TSC: [(u64, &str); 2] = [(1, "PR_TSC_ENABLE"), (2, "PR_TSC_SIGSEGV")];

const UNALIGN: [(u64, &str); 2] = [(1, "PR_UNALIGN_NOPRINT"), (2, "PR_UNALIGN_SIGBUS")];

/// The task name PR_SET_NAME gives or PR_GET_NAME filled (`read`, argument 1's), as strace's
/// printstr_ex shows it: at most 15 bytes given or 16 filled (TASK_COMM_LEN), and `...` when
/// no NUL came within them (a name of 15 bytes given is marked too, as strace marks it).
fn task_name(option: c_int, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let filled = option == libc::PR_GET_NAME;
    let (Some(read), Some((bytes, flags))) = (read, read.and_then(|r| r.entries.first())) else {
        return super::pointer(raw);
    };
    if raw == 0 || filled && ret.is_none_or(|r| r < 0) {
        return super::pointer(raw);
    }
    let most = match (filled, read.elements) {
        (true, 0) => 16,
        (false, 0) => 15,
        (true, n) => n.min(16),
        (false, n) => n.min(15),
    };
    let unread = flags & (str_flag::FAULT | str_flag::NO_ROOM);
    let (shown, cut) = match bytes.len() >= most {
        true => (&bytes[..most], str_flag::TRUNCATED),
        false => (&bytes[..], 0),
    };
    let mut out = String::new();
    super::string(shown, unread | cut, raw, read.hex, &mut out);
    out
}

/// Argument `i` (1 to 4) of a prctl whose registers are `args`, as its option reads it;
/// `None` where strace shows no such argument for the option. `read` is argument 1's read
/// (a string), `ret` the call's return.
pub fn arg(args: &[u64], i: u8, read: Option<&Read>, ret: Option<i64>) -> Option<String> {
    let at = |k: u8| args.get(usize::from(k)).copied().unwrap_or(0);
    let (a2, i) = (at(1), u64::from(i));
    // The rest in hex from argument `first` on (strace's print_prctl_args).
    let rest_from = |first: u64| (i >= first).then(|| hex(at(i as u8)));
    Some(match at(0) as u32 as c_int {
        libc::PR_GET_KEEPCAPS
        | libc::PR_GET_SECCOMP
        | libc::PR_GET_TIMERSLACK
        | libc::PR_GET_TIMING
        | libc::PR_GET_DUMPABLE
        | libc::PR_GET_SECUREBITS
        | libc::PR_TASK_PERF_EVENTS_DISABLE
        | libc::PR_TASK_PERF_EVENTS_ENABLE => return None,
        // The place the call fills, or a string: their address.
        libc::PR_GET_CHILD_SUBREAPER
        | libc::PR_GET_ENDIAN
        | libc::PR_GET_FPEMU
        | libc::PR_GET_FPEXC
        | libc::PR_GET_PDEATHSIG
        | libc::PR_GET_TID_ADDRESS
        | libc::PR_GET_TSC
        | libc::PR_GET_UNALIGN => return (i == 1).then(|| super::pointer(a2)),
        o @ (libc::PR_SET_NAME | libc::PR_GET_NAME) => {
            return (i == 1).then(|| task_name(o, a2, read, ret));
        }
        libc::PR_SET_CHILD_SUBREAPER
        | libc::PR_SET_ENDIAN
        | libc::PR_SET_FPEMU
        | libc::PR_SET_FPEXC
        | libc::PR_SET_KEEPCAPS
        | libc::PR_SET_TIMING => return (i == 1).then(|| a2.to_string()),
        libc::PR_SET_DUMPABLE => return (i == 1).then(|| xval(a2, &DUMPABLE, "SUID_DUMP_???")),
        libc::PR_CAPBSET_DROP | libc::PR_CAPBSET_READ => return (i == 1).then(|| capability(a2)),
        libc::PR_CAP_AMBIENT => match i {
            1 => xval(a2, &CAP_AMBIENT, "PR_CAP_AMBIENT_???"),
            2 if (1..=3).contains(&a2) => capability(at(2)),
            _ => return rest_from(2),
        },
        libc::PR_SET_PDEATHSIG => match (i, a2) {
            (1, s) if s > 128 => s.to_string(),
            (1, s) => signal(s),
            _ => return None,
        },
        libc::PR_SET_PTRACER => match i {
            1 if a2 as c_int == -1 => "PR_SET_PTRACER_ANY".into(),
            1 => (a2 as c_int).to_string(),
            _ => return None,
        },
        libc::PR_SET_SECCOMP => match (i, a2) {
            (1, _) => xval(a2, &SECCOMP_MODES, "SECCOMP_MODE_???"),
            (_, 1) => return None,
            // The filter program: its address (strace decodes the BPF).
            (2, 2) => super::pointer(at(2)),
            (_, 2) => return None,
            _ => return rest_from(2),
        },
        libc::PR_SET_SECUREBITS => {
            return (i == 1).then(|| flags(a2, &SECBITS, "0"));
        }
        libc::PR_SET_TIMERSLACK => return (i == 1).then(|| (a2 as i64).to_string()),
        libc::PR_SET_TSC => return (i == 1).then(|| xval(a2, &TSC, "PR_TSC_???")),
        libc::PR_SET_UNALIGN => return (i == 1).then(|| flags(a2, &UNALIGN, "0")),
        libc::PR_SET_NO_NEW_PRIVS | libc::PR_SET_THP_DISABLE => match i {
            1 => a2.to_string(),
            _ => return rest_from(2),
        },
        o if o as u32 == PR_SET_IO_FLUSHER => match i {
            1 => a2.to_string(),
            _ => return rest_from(2),
        },
        o if o as u32 == PR_SET_VMA => match (i, a2) {
            (1, _) => xval(a2, &[(0, "PR_SET_VMA_ANON_NAME")], "PR_SET_VMA_???"),
            (3, 0) => at(3).to_string(),
            (_, 0) => super::pointer(at(i as u8)),
            _ => return rest_from(2),
        },
        _ => return rest_from(1),
    })
}

/// The result of a prctl whose registers are `args` (not an error), as strace shows it.
pub fn ret(raw: u64, args: &[u64]) -> String {
    let value = raw as i64;
    match args.first().map_or(-1, |&o| o as u32 as c_int) {
        libc::PR_GET_DUMPABLE => match DUMPABLE.iter().find(|(v, _)| *v == raw) {
            Some((_, name)) => format!("{value} ({name})"),
            None => value.to_string(),
        },
        libc::PR_GET_SECUREBITS if value != 0 => {
            format!("{raw:#x} ({})", flags(raw, &SECBITS, "0"))
        }
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(args: [u64; 5]) -> Vec<String> {
        (1..=4).filter_map(|i| arg(&args, i, None, None)).collect()
    }

    #[test]
    fn a_task_name_is_cut_where_strace_cuts_it() {
        let name = |option: c_int, bytes: &[u8], ret: i64| {
            let read = Read {
                entries: vec![(bytes.to_vec(), 0)],
                elements: 32,
                ..Read::default()
            };
            arg(&[option as u64, 0x1000, 0, 0, 0], 1, Some(&read), Some(ret)).unwrap()
        };
        assert_eq!(name(libc::PR_SET_NAME, b"worker", 0), "\"worker\"");
        assert_eq!(
            name(libc::PR_SET_NAME, b"a-name-past-fifteen", 0),
            "\"a-name-past-fif\"..."
        );
        assert_eq!(
            name(libc::PR_SET_NAME, b"exactly-fifteen", 0),
            "\"exactly-fifteen\"..."
        );
        assert_eq!(
            name(libc::PR_GET_NAME, b"exactly-fifteen", 0),
            "\"exactly-fifteen\""
        );
        assert_eq!(name(libc::PR_GET_NAME, b"worker", -14), "0x1000");
        let args = [libc::PR_SET_NAME as u64, 0x1000, 0, 0, 0];
        assert_eq!(arg(&args, 1, None, None).unwrap(), "0x1000");
        assert_eq!(arg(&args, 2, None, None), None);
    }

    #[test]
    fn each_option_shows_the_arguments_strace_shows() {
        let read = libc::PR_CAPBSET_READ as u64;
        assert_eq!(shown([read, 0, 0, 9, 7]), ["CAP_CHOWN"]);
        assert_eq!(shown([read, 0x30, 0, 0, 0]), ["0x30 /* CAP_??? */"]);
        let ambient = libc::PR_CAP_AMBIENT as u64;
        assert_eq!(
            shown([ambient, 1, 0, 0, 0]),
            ["PR_CAP_AMBIENT_IS_SET", "CAP_CHOWN", "0", "0"]
        );
        assert_eq!(
            shown([ambient, 4, 0, 0, 0]),
            ["PR_CAP_AMBIENT_CLEAR_ALL", "0", "0", "0"]
        );
        let securebits = libc::PR_SET_SECUREBITS as u64;
        assert_eq!(
            shown([securebits, 0x30, 0, 0, 0]),
            ["SECBIT_KEEP_CAPS|SECBIT_KEEP_CAPS_LOCKED"]
        );
        assert!(shown([libc::PR_GET_SECUREBITS as u64, 1, 2, 3, 4]).is_empty());
        assert_eq!(
            shown([libc::PR_SET_PDEATHSIG as u64, 9, 0, 0, 0]),
            ["SIGKILL"]
        );
        assert_eq!(
            shown([libc::PR_SET_DUMPABLE as u64, 1, 0, 0, 0]),
            ["SUID_DUMP_USER"]
        );
        assert_eq!(
            shown([libc::PR_SET_PTRACER as u64, u64::MAX, 0, 0, 0]),
            ["PR_SET_PTRACER_ANY"]
        );
        assert_eq!(
            shown([libc::PR_SET_NO_NEW_PRIVS as u64, 1, 0, 0, 0]),
            ["1", "0", "0", "0"]
        );
        assert_eq!(
            shown([libc::PR_SET_SECCOMP as u64, 1, 0, 0, 0]),
            ["SECCOMP_MODE_STRICT"]
        );
        assert_eq!(shown([0x7ff, 1, 2, 3, 4]), ["0x1", "0x2", "0x3", "0x4"]);
        assert_eq!(option(0x7ff), "0x7ff /* PR_??? */");
        assert_eq!(option(u64::from(u32::MAX)), "0xffffffff /* PR_??? */");
        assert_eq!(option(libc::PR_SET_NAME as u64), "PR_SET_NAME");
    }

    #[test]
    fn results_read_by_their_option() {
        let dumpable = [libc::PR_GET_DUMPABLE as u64, 0, 0, 0, 0];
        assert_eq!(ret(1, &dumpable), "1 (SUID_DUMP_USER)");
        let securebits = [libc::PR_GET_SECUREBITS as u64, 0, 0, 0, 0];
        assert_eq!(ret(0x10, &securebits), "0x10 (SECBIT_KEEP_CAPS)");
        assert_eq!(ret(0, &securebits), "0");
        assert_eq!(ret(1, &[libc::PR_CAPBSET_READ as u64]), "1");
    }
}
