//! The strings a slot reads into an event's string area (`StrRead`, where each comes from, how it
//! is cut).

/// Strings one hit reads at most: the `char *` values it prints or filters on (a `char **`
/// array, argv or envp, is one of them).
pub const STR_READS: usize = 4;
/// Bytes of a string read when `--strlen` does not say.
pub const STRLEN_DEFAULT: u32 = 256;
/// The longest `--strlen`.
pub const STRLEN_MAX: u32 = 4096;
/// Elements of a `char **` array (argv, envp) read at most: execsnoop's default.
pub const ARRAY_ELEMENTS: u32 = 20;
/// Bytes of one hit's strings, sent behind its [`Event`]: a string that does not fit is
/// marked [`str_flag::NO_ROOM`], not sent.
pub const STR_AREA: usize = 8192;
/// Bytes of the user stack's top `tracer trace -k` copies at a call's return
/// ([`str_from::STACK`]): the most a fixed-length read takes ([`buffer_len::fixed`]), for
/// the wrapper's caller and the frames above it in code built without frame pointers.
pub const TRACE_STACK_TOP: usize = 956;
/// Bytes of a string entry's header: which read (`u8`), [`str_flag`] bits (`u8`), length
/// (`u16`, without a NUL), then the bytes.
pub const STR_ENTRY: usize = 4;
/// The BPF programs' string buffer: the area, and room to read one more whole string at its
/// last offset. A power of two at least `STR_AREA + STR_ENTRY + STRLEN_MAX + 2`, so that an
/// offset masked into the area is all the verifier needs to see every write in bounds.
pub const STR_BUFFER: usize = 16384;
const _: () = assert!(STR_BUFFER >= STR_AREA + STR_ENTRY + STRLEN_MAX as usize + 2);
/// Bytes of a string a `--filter` glob looks at: the verifier walks the matching loop once
/// per byte it may take.
pub const GLOB_STRLEN: usize = 256;

/// Where a [`StrRead`] finds its pointer.
pub mod str_from {
    /// Unused read.
    pub const NONE: u8 = 0;
    /// Argument register `at` (kprobe/uprobe).
    pub const ARG: u8 = 1;
    /// The pointer at byte `at` of the tracepoint record (syscalls' `filename`, `argv`); with
    /// [`RECORD_DATA_LOC`] in `at`, the string of the `__data_loc` field at byte `at & 0xffff`
    /// (`irq_handler_entry`'s `name`): in the record itself, where the field's low half says;
    /// with [`RECORD_CHARS`], the `char[N]` field at that byte.
    pub const RECORD: u8 = 2;
    /// In a [`RECORD`] read's `at`: the field is a `__data_loc` string.
    pub const RECORD_DATA_LOC: u32 = 1 << 16;
    /// In a [`RECORD`] read's `at`: the field is itself the string, a `char[N]` at byte
    /// `at & 0xffff` (`sched_switch`'s `next_comm`).
    pub const RECORD_CHARS: u32 = 1 << 17;
    /// Struct member read `at` (`Event::fields`, `FUNC(file->name)`).
    pub const FIELD: u8 = 3;
    /// The return value (kretprobe/uretprobe of a `char *` function).
    pub const RETURN: u8 = 4;
    /// `tracer trace -k`: the user stack pointer at the call's return, read with a fixed
    /// [`TRACE_STACK_TOP`](super::TRACE_STACK_TOP)-byte length: the top of the stack, where a
    /// system call wrapper that made no frame keeps its caller's return address (a frame
    /// pointer walk skips that caller). Given by the exit program's own source of pointers.
    pub const STACK: u8 = 5;
}

/// Which memory a [`StrRead`]'s pointer points into.
pub mod str_mem {
    pub const USER: u8 = 0;
    pub const KERNEL: u8 = 1;
    /// Told apart by the address (kernel functions whose BTF cannot say).
    pub const AUTO: u8 = 2;
}

/// Bits of a string entry (`Event` string area).
pub mod str_flag {
    /// The string was longer than `--strlen`: the entry holds its first bytes.
    pub const TRUNCATED: u8 = 1;
    /// The pointer could not be read (NULL, bad, or paged out): no bytes.
    pub const FAULT: u8 = 2;
    /// An array's last entry: it had more elements than [`ARRAY_ELEMENTS`](super::ARRAY_ELEMENTS).
    pub const MORE: u8 = 4;
    /// The hit's string area was full: this string (and any after it) was not read.
    pub const NO_ROOM: u8 = 8;
    /// An array read's first entry: the elements follow, each its own entry (none: empty).
    pub const ARRAY: u8 = 16;
}

/// One string a slot reads per hit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrRead {
    /// Argument index, record byte offset or field index, as `from` says.
    pub at: u32,
    /// A [`str_from`].
    pub from: u8,
    /// A [`str_mem`].
    pub memory: u8,
    /// A [`str_array`]: 0 for one string or buffer, else an array the pointer points at.
    pub array: u8,
    /// 0: a NUL-terminated string. Otherwise a buffer of bytes (`tracer trace`: what
    /// write(2) was given, what read(2) filled), as long as [`buffer_len`] says, cut at
    /// `SlotConfig::buflen`.
    pub len_from: u8,
}

impl StrRead {
    /// The copy of the user stack's top at the hit ([`str_from::STACK`], [`TRACE_STACK_TOP`]
    /// bytes), which userspace unwinds by CFI: `tracer trace -k`, `probe -s` at user probes,
    /// `watch -s`.
    pub const STACK_TOP: StrRead = StrRead {
        at: 0,
        from: str_from::STACK,
        memory: str_mem::USER,
        array: 0,
        len_from: buffer_len::fixed(TRACE_STACK_TOP),
    };
}

/// What array a [`StrRead`] reads ([`StrRead::array`]).
pub mod str_array {
    /// One string or buffer.
    pub const NONE: u8 = 0;
    /// A `char **` array of strings, ended by NULL (argv, envp).
    pub const STRINGS: u8 = 1;
    /// `tracer trace`: a `struct iovec` array the call is given (writev), as many as
    /// argument [`StrRead::len_from`]` - buffer_len::ARG0` says: an entry of the first
    /// [`IOV_ELEMENTS`](super::IOV_ELEMENTS) `{iov_base, iov_len}` pairs, then each one's bytes
    /// (cut at `SlotConfig::buflen`), then a [`MORE`](super::str_flag::MORE) entry when
    /// there were more.
    pub const IOVEC_GIVEN: u8 = 2;
    /// As [`IOVEC_GIVEN`], for an array the call fills (readv): the bytes as far as the
    /// return value reaches.
    pub const IOVEC_FILLED: u8 = 3;
    /// `tracer trace`: a `struct msghdr` the call is given (sendmsg): an entry of its
    /// [`MSGHDR_BYTES`](super::MSGHDR_BYTES), one of its `msg_name` (`msg_namelen` bytes) and
    /// one of its `msg_control` (`msg_controllen` bytes), each at most
    /// [`MSG_PART_MAX`](super::MSG_PART_MAX), then its `msg_iov` as [`IOVEC_GIVEN`] reads it.
    pub const MSGHDR_GIVEN: u8 = 4;
    /// As [`MSGHDR_GIVEN`], for one the call fills (recvmsg): the header, name and control
    /// as the call left them, and `msg_iov` as [`IOVEC_FILLED`] reads it.
    pub const MSGHDR_FILLED: u8 = 5;
    /// `tracer trace`: select's and pselect6's fd sets (the read's pointer is the first,
    /// `readfds`; argument 0 is `nfds`): the three as the call was given them (read by the
    /// entry, [`FDSET_BYTES`](crate::FDSET_BYTES) each at most), the three ready ones after
    /// it (read when it returned more than 0; marked `FAULT` otherwise), and for pselect6 its
    /// sixth argument's `{sigmask, sigsetsize}` and the 8-byte mask it points at. An entry
    /// each, in that order; a set not given or unreadable is a `FAULT` entry.
    pub const FDSETS: u8 = 6;
}

/// Elements of a `struct iovec` array `tracer trace` reads at most (`str_array::IOVEC_*`):
/// as many as strace shows at its default `-s` (32).
pub const IOV_ELEMENTS: u32 = 32;
/// The x86-64 calls whose first read is an iovec array, alone (readv, writev, preadv, pwritev,
/// preadv2, pwritev2) or in a msghdr (sendmsg, recvmsg), in order: `trace_exit_reads` looks
/// up no other call's slot for one (the lookup cost every call 27 ns).
pub const IOVEC_CALLS: [u32; 8] = [19, 20, 46, 47, 295, 296, 327, 328];
/// Bytes of a `struct iovec` on x86-64.
pub const IOVEC_BYTES: u32 = 16;
/// Bytes of a `struct msghdr` on x86-64: `msg_name` at 0, `msg_namelen` at 8, `msg_iov` at
/// 16, `msg_iovlen` at 24, `msg_control` at 32, `msg_controllen` at 40, `msg_flags` at 48.
pub const MSGHDR_BYTES: u32 = 56;
/// Bytes of a msghdr's name or control data read at most (`str_array::MSGHDR_*`): a
/// `sockaddr_storage`, and control data for 24 descriptors.
pub const MSG_PART_MAX: u32 = 128;

/// What a [`buffer_len::IOCTL`] read takes: the kernel's `struct termios` on x86-64, or an
/// `int` where the last of those bytes cannot be read.
pub const IOCTL_ARG_MAX: u32 = 36;
pub const IOCTL_ARG_INT: u64 = 4;

/// Where a buffer read ([`StrRead::len_from`]) finds its length.
pub mod buffer_len {
    /// Argument `i` holds the length: `ARG0 + i` (write's `count`).
    pub const ARG0: u8 = 1;
    /// The return value, when positive (read's byte count).
    pub const RETURN: u8 = 7;
    /// An ioctl's argument, which may be an `int` or a `struct termios`:
    /// [`IOCTL_ARG_MAX`](super::IOCTL_ARG_MAX) bytes where the last of them can be read (a
    /// termios across two pages is read whole), else an `int` (one at the end of a mapping,
    /// where a read of 36 bytes would fault).
    pub const IOCTL: u8 = 8;
    /// `FIXED + n`: a structure of `4 * n` bytes, read whole, not cut at `-s` (an fd pair,
    /// a `struct stat`'s head, a timespec): [`fixed`].
    pub const FIXED: u8 = 16;

    /// The [`StrRead::len_from`](super::StrRead::len_from) of a `bytes`-long structure (at
    /// most 956 bytes).
    pub const fn fixed(bytes: usize) -> u8 {
        FIXED + bytes.div_ceil(4) as u8
    }
}
