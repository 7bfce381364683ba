//! ioctl(2)'s request and argument as strace's ioctl.c and term.c write them: common requests
//! by name (`TCGETS`), others split (`_IOC(_IOC_READ, 0x54, 0x13, 0x8)`); for a terminal's
//! requests, the structure or `int` the argument points at (`TCGETS, {c_iflag=ICRNL|IXON,
//! ...}`, `TIOCGWINSZ, {ws_row=24, ...}`, `FIONBIO, [1]`), the value it is
//! (`TCFLSH, TCIFLUSH`), or nothing for those that take none (`FIOCLEX`).

use super::{arg as plain, flags, pointer, Read};
use crate::kernel::syscalls::Arg;
use crate::kernel::sysnames;

/// Requests whose argument points at an `int` the call fills (shown when it succeeded).
const INT_FILLED: [u64; 9] = [
    libc::TIOCGPGRP,
    libc::TIOCGSID,
    libc::TIOCGETD,
    libc::TIOCGSOFTCAR,
    libc::TIOCGPTN,
    libc::FIONREAD,
    libc::TIOCOUTQ,
    libc::TIOCGEXCL,
    libc::TIOCGDEV,
];
/// Requests whose argument points at an `int` the call is given.
const INT_GIVEN: [u64; 7] = [
    libc::TIOCSPGRP,
    libc::TIOCSETD,
    libc::FIONBIO,
    libc::FIOASYNC,
    libc::TIOCPKT,
    libc::TIOCSSOFTCAR,
    libc::TIOCSPTLCK,
];
/// Requests that fill a `struct termios`, and those given one.
const TERMIOS_FILLED: [u64; 2] = [libc::TCGETS, libc::TIOCGLCKTRMIOS];
const TERMIOS_GIVEN: [u64; 4] = [
    libc::TCSETS,
    libc::TCSETSW,
    libc::TCSETSF,
    libc::TIOCSLCKTRMIOS,
];
/// Requests whose argument is an `int` itself, shown in decimal.
const INT_VALUE: [u64; 3] = [libc::TCSBRK, libc::TCSBRKP, libc::TIOCSCTTY];
/// Requests that take no argument: strace shows none ([`shown`]).
const NO_ARG: [u64; 8] = [
    libc::TIOCSBRK,
    libc::TIOCCBRK,
    libc::TIOCCONS,
    libc::TIOCNOTTY,
    libc::TIOCEXCL,
    libc::TIOCNXCL,
    libc::FIOCLEX,
    libc::FIONCLEX,
];

/// Bytes of the kernel's `struct termios` on x86-64: four `tcflag_t`, `c_line`, `c_cc[19]`
/// (glibc's own is larger; the kernel's is what the call reads and writes).
const TERMIOS_BYTES: usize = 36;
const _: () = assert!(TERMIOS_BYTES <= tracer_common::IOCTL_ARG_MAX as usize);
/// Bytes of a `struct winsize`: four `unsigned short`.
const WINSIZE_BYTES: usize = 8;

/// Whether request `raw` (register 1) takes an argument strace shows.
pub(super) fn shown(raw: u64) -> bool {
    !NO_ARG.contains(&(raw & 0xffff_ffff))
}

/// The argument of request `request` (its low 32 bits), register `raw`, with the bytes the
/// exit read at it ([`TERMIOS_BYTES`], fewer where they cannot all be read): a terminal's
/// `struct termios` or `struct winsize`, filled (when the call succeeded) or given; the
/// `int` strace reads, given or filled, as `[1]`; the value of those whose argument is one
/// (`TCFLSH, TCIFLUSH`, `TCSBRK, 1`, FICLONE's source descriptor); an address for the other
/// requests strace names, a number for those it does not (it cannot know it is one).
pub(super) fn arg(request: u64, raw: u64, read: Option<&Read>, ret: Option<i64>) -> String {
    let bytes = match read.and_then(|r| r.entries.first()) {
        Some((bytes, 0)) if raw != 0 => Some(bytes.as_slice()),
        _ => None,
    };
    let int = bytes
        .and_then(|b| b.get(..4))
        .map(|b| i32::from_ne_bytes(b.try_into().expect("4 bytes")));
    let succeeded = ret == Some(0);
    let shown = |given: &[u64], filled: &[u64]| {
        given.contains(&request) || (filled.contains(&request) && succeeded)
    };
    let value = raw as u32 as i32;
    match (int, sysnames::IOCTLS.iter().any(|(r, _)| *r == request)) {
        _ if request == libc::FICLONE || INT_VALUE.contains(&request) => value.to_string(),
        _ if request == libc::TCXONC => tc_value(value, &TCXONC_VALUES),
        _ if request == libc::TCFLSH => tc_value(value, &TCFLSH_VALUES),
        (Some(n), _) if shown(&INT_GIVEN, &INT_FILLED) => format!("[{n}]"),
        _ if shown(&TERMIOS_GIVEN, &TERMIOS_FILLED) => {
            bytes.and_then(termios).unwrap_or_else(|| pointer(raw))
        }
        _ if shown(&[libc::TIOCSWINSZ], &[libc::TIOCGWINSZ]) => {
            bytes.and_then(winsize).unwrap_or_else(|| pointer(raw))
        }
        (_, true) => pointer(raw),
        (_, false) => plain(Arg::Hex, raw, None, None),
    }
}

/// TCXONC's and TCFLSH's values.
const TCXONC_VALUES: [(i32, &str); 4] = [
    (libc::TCOOFF, "TCOOFF"),
    (libc::TCOON, "TCOON"),
    (libc::TCIOFF, "TCIOFF"),
    (libc::TCION, "TCION"),
];
const TCFLSH_VALUES: [(i32, &str); 3] = [
    (libc::TCIFLUSH, "TCIFLUSH"),
    (libc::TCOFLUSH, "TCOFLUSH"),
    (libc::TCIOFLUSH, "TCIOFLUSH"),
];

/// A value by name, else in hex with strace's comment for an unknown one.
fn tc_value(value: i32, names: &[(i32, &str)]) -> String {
    match names.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => (*name).into(),
        None => format!("{:#x} /* TC??? */", value as u32),
    }
}

/// A field's value by name, else in hex.
fn field(value: u32, names: &[(u32, &str)]) -> String {
    match names.iter().find(|(v, _)| *v == value) {
        Some((_, name)) => (*name).into(),
        None => format!("{value:#x}"),
    }
}

/// A `struct termios` as strace abbreviates it: the four flag words, then `...`. Flags that
/// are all clear are written as strace 6.1 writes them: nothing (`c_iflag=`, and
/// `c_oflag=NL0|CR0|TAB0|BS0|VT0|FF0|` after the delay fields).
fn termios(bytes: &[u8]) -> Option<String> {
    if bytes.len() < TERMIOS_BYTES {
        return None;
    }
    let word = |i: usize| u32::from_ne_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let (iflag, oflag, cflag, lflag) = (word(0), word(1), word(2), word(3));
    Some(format!(
        "{{c_iflag={}, c_oflag={}, c_cflag={}, c_lflag={}, ...}}",
        flags(iflag.into(), &TERM_IFLAGS, ""),
        oflags(oflag),
        cflags(cflag),
        flags(lflag.into(), &TERM_LFLAGS, ""),
    ))
}

/// A `struct winsize`.
fn winsize(bytes: &[u8]) -> Option<String> {
    let half = |i: usize| u16::from_ne_bytes([bytes[2 * i], bytes[2 * i + 1]]);
    (bytes.len() >= WINSIZE_BYTES).then(|| {
        format!(
            "{{ws_row={}, ws_col={}, ws_xpixel={}, ws_ypixel={}}}",
            half(0),
            half(1),
            half(2),
            half(3)
        )
    })
}

/// c_oflag: each delay field's value by name (`NL0|CR0|TAB0|BS0|VT0|FF0`), then the flags.
fn oflags(value: u32) -> String {
    let mut parts = Vec::new();
    let mut left = value;
    for (mask, names) in OFLAG_DELAYS {
        parts.push(field(left & mask, names));
        left &= !mask;
    }
    parts.push(flags(left.into(), &TERM_OFLAGS, ""));
    parts.join("|")
}

/// c_cflag: the output speed by name, the input speed when it differs (`B9600<<IBSHIFT`),
/// the character size, then the flags.
fn cflags(value: u32) -> String {
    let mut parts = vec![field(value & libc::CBAUD, &BAUDS)];
    if value & libc::CIBAUD != 0 {
        let input = (value & libc::CIBAUD) >> libc::IBSHIFT;
        parts.push(format!("{}<<IBSHIFT", field(input, &BAUDS)));
    }
    parts.push(
        match value & libc::CSIZE {
            libc::CS5 => "CS5",
            libc::CS6 => "CS6",
            libc::CS7 => "CS7",
            _ => "CS8",
        }
        .into(),
    );
    let left = value & !(libc::CBAUD | libc::CIBAUD | libc::CSIZE);
    parts.push(flags(left.into(), &TERM_CFLAGS, ""));
    parts.join("|")
}

/// c_iflag's flags, in strace's order (its xlat/term_iflags.in).
const TERM_IFLAGS: [(u64, &str); 15] = libc_names![u64;
    IGNBRK, BRKINT, IGNPAR, PARMRK, INPCK, ISTRIP, INLCR, IGNCR, ICRNL, IUCLC, IXON, IXANY,
    IXOFF, IMAXBEL, IUTF8,
];
/// c_oflag's flags after its delay fields (xlat/term_oflags.in).
const TERM_OFLAGS: [(u64, &str); 8] = libc_names![u64;
    OPOST, OLCUC, ONLCR, OCRNL, ONOCR, ONLRET, OFILL, OFDEL,
];
/// c_cflag's flags after its speeds and size (xlat/term_cflags.in).
const TERM_CFLAGS: [(u64, &str); 8] = libc_names![u64;
    CSTOPB, CREAD, PARENB, PARODD, HUPCL, CLOCAL, CMSPAR, CRTSCTS,
];
/// c_lflag's flags (xlat/term_lflags.in: IEXTEN before ECHOCTL, TOSTOP near the end).
const TERM_LFLAGS: [(u64, &str); 16] = libc_names![u64;
    ISIG, ICANON, XCASE, ECHO, ECHOE, ECHOK, ECHONL, NOFLSH, IEXTEN, ECHOCTL, ECHOPRT,
    ECHOKE, FLUSHO, PENDIN, TOSTOP, EXTPROC,
];
/// c_oflag's delay fields: the mask and each value's name.
const OFLAG_DELAYS: [(u32, &[(u32, &str)]); 6] = [
    (libc::NLDLY, &[(libc::NL0, "NL0"), (libc::NL1, "NL1")]),
    (
        libc::CRDLY,
        &[
            (libc::CR0, "CR0"),
            (libc::CR1, "CR1"),
            (libc::CR2, "CR2"),
            (libc::CR3, "CR3"),
        ],
    ),
    (
        libc::TABDLY,
        &[
            (libc::TAB0, "TAB0"),
            (libc::TAB1, "TAB1"),
            (libc::TAB2, "TAB2"),
            (libc::TAB3, "TAB3"),
        ],
    ),
    (libc::BSDLY, &[(libc::BS0, "BS0"), (libc::BS1, "BS1")]),
    (libc::VTDLY, &[(libc::VT0, "VT0"), (libc::VT1, "VT1")]),
    (libc::FFDLY, &[(libc::FF0, "FF0"), (libc::FF1, "FF1")]),
];
/// The speeds of c_cflag's CBAUD field (xlat/baud_options.in, those x86-64 has).
const BAUDS: [(u32, &str); 32] = libc_names![u32;
    B0, B50, B75, B110, B134, B150, B200, B300, B600, B1200, B1800, B2400, B4800, B9600,
    B19200, B38400, B57600, B115200, B230400, B460800, B500000, B576000, B921600, B1000000,
    B1152000, B1500000, B2000000, B2500000, B3000000, B3500000, B4000000, BOTHER,
];

/// Requests with two names (one number for each): strace gives both. OSS's timer requests
/// (`_IO('T', n)`) share their numbers with the terminal's.
const TWO_NAMES: [(u64, &str); 4] = [
    (libc::FICLONE, "BTRFS_IOC_CLONE or FICLONE"),
    (libc::TCSETS, "SNDCTL_TMR_START or TCSETS"),
    (libc::TCSETSW, "SNDCTL_TMR_STOP or TCSETSW"),
    (libc::TCSETSF, "SNDCTL_TMR_CONTINUE or TCSETSF"),
];

/// An ioctl request strace's common ones do not name, as strace splits it:
/// `_IOC(_IOC_READ, 0x54, 0x13, 0x8)` (direction, type, number, size).
pub(super) fn request(raw: u64) -> String {
    let request = raw & 0xffff_ffff;
    if let Some((_, names)) = TWO_NAMES.iter().find(|(r, _)| *r == request) {
        return (*names).into();
    }
    if let Some((_, name)) = sysnames::IOCTLS.iter().find(|(r, _)| *r == request) {
        return (*name).into();
    }
    let direction = match request >> 30 {
        0 => "_IOC_NONE",
        1 => "_IOC_WRITE",
        2 => "_IOC_READ",
        _ => "_IOC_READ|_IOC_WRITE",
    };
    let hex = |v: u64| match v {
        0 => "0".to_string(),
        v => format!("{v:#x}"),
    };
    format!(
        "_IOC({direction}, {}, {}, {})",
        hex((request >> 8) & 0xff),
        hex(request & 0xff),
        hex((request >> 16) & 0x3fff)
    )
}
