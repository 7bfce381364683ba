//! `#[repr(C)]` types that tracer's BPF programs and its userspace agree on, byte for byte.
#![no_std]

/// Program slots per program type compiled into the BPF object.
///
/// With `PERF_EVENT_IOC_SET_BPF` there is no attach cookie, so each distinct probe spec gets its
/// own program instance ("slot") whose number is a compile-time constant; the slot indexes
/// [`SlotConfig`] and tags every [`Event`].
pub const SLOTS: u32 = 8;

/// Bytes of raw event data carried per event (kprobe registers or the tracepoint record head).
pub const DATA_WORDS: usize = 8;

/// Bytes of one string argument captured in the kernel.
pub const STR_LEN: usize = 64;

/// Index of the per-CPU counter of hits that passed the filters (`STATS` map).
pub const STAT_HITS: u32 = 0;
/// Index of the per-CPU counter of hits whose `bpf_perf_event_output` failed (ring full).
pub const STAT_OUTPUT_FAILED: u32 = 1;
/// Number of entries in the `STATS` map.
pub const STAT_COUNT: u32 = 2;

/// `SlotConfig::flags`: the program reads the return value (kretprobe / uretprobe).
pub const SLOT_RETURN: u32 = 1 << 0;
/// `SlotConfig::flags`: `str_arg` names an argument register holding a user-space string pointer.
pub const SLOT_STR_ARG_USER: u32 = 1 << 1;
/// `SlotConfig::flags`: `str_arg` names a kernel-space string pointer argument.
pub const SLOT_STR_ARG_KERNEL: u32 = 1 << 2;
/// `SlotConfig::flags`: `str_arg` is a byte offset into the tracepoint record holding a user
/// pointer (syscall tracepoints' `filename`).
pub const SLOT_STR_TP_USER: u32 = 1 << 3;
/// `SlotConfig::flags`: only count the hit in `STATS`, emit nothing.
pub const SLOT_COUNT_ONLY: u32 = 1 << 4;

/// What userspace tells one program slot before attaching it (BPF `CONFIG` array map).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotConfig {
    /// `SLOT_*` bits.
    pub flags: u32,
    /// Argument index (kprobe/uprobe) or record byte offset (tracepoint) of the string to read.
    pub str_arg: u32,
    /// Only emit hits from this thread group (process id); 0 means any.
    pub tgid: u32,
    pub _pad: u32,
}

/// One probe hit as a BPF program writes it into the `PERF_COUNT_SW_BPF_OUTPUT` ring.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// `bpf_ktime_get_ns()`: CLOCK_MONOTONIC nanoseconds.
    pub time_ns: u64,
    /// `bpf_get_current_pid_tgid()`: thread group id in the upper 32 bits, thread id below.
    pub pid_tgid: u64,
    /// kprobe/uprobe: arg0..arg5 then the return value; tracepoint: the record's first bytes.
    pub data: [u64; DATA_WORDS],
    /// The program slot that fired.
    pub slot: u32,
    /// CPU the hit ran on.
    pub cpu: u32,
    /// Length of `str` including its NUL, 0 when no string was read, negative errno on failure.
    pub str_len: i32,
    pub _pad: u32,
    /// `bpf_get_current_comm()`.
    pub comm: [u8; 16],
    /// The captured string argument (NUL-terminated when `str_len > 0`).
    pub str: [u8; STR_LEN],
}

impl Event {
    /// Size of the record a BPF program emits.
    pub const SIZE: usize = core::mem::size_of::<Event>();

    /// Decodes an event from the bytes of a `PERF_RECORD_SAMPLE`'s raw data, which may carry
    /// trailing padding (raw data is padded to 8 bytes). `None` when the buffer is too short.
    pub fn from_bytes(bytes: &[u8]) -> Option<Event> {
        if bytes.len() < Self::SIZE {
            return None;
        }
        // SAFETY: `Event` is `repr(C)`, made only of integers and byte arrays (every bit pattern
        // is valid), and `bytes` holds at least `size_of::<Event>()` bytes; `read_unaligned`
        // copes with the ring's 4-byte alignment of raw data.
        Some(unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<Event>()) })
    }

    /// Process id (thread group id).
    pub fn pid(&self) -> u32 {
        (self.pid_tgid >> 32) as u32
    }

    /// Thread id.
    pub fn tid(&self) -> u32 {
        self.pid_tgid as u32
    }
}

#[cfg(feature = "user")]
// SAFETY: plain old data, `repr(C)`, no padding the kernel would not initialise (the explicit
// `_pad` fields are written by userspace as zero).
unsafe impl aya::Pod for SlotConfig {}
