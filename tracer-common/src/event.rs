//! What a hit sends to userspace: the `Event` record, its data words (`word`) and the names of its
//! fields (`names`), and the string entries behind it.

use crate::*;

/// What each word of [`Event::data`] holds, by the kind of program that wrote it: both sides
/// index `data` through these names only.
pub mod word {
    /// kprobe/uprobe: argument `i` (0..[`ARGS`]) is `data[ARG0 + i]`.
    pub const ARG0: usize = 0;
    /// Arguments a kprobe/uprobe hit carries (the x86-64 and arm64 register arguments).
    pub const ARGS: usize = 6;
    /// kretprobe/uretprobe: the return value (0 for an entry probe).
    pub const RETURN: usize = 6;
    /// Watchpoint hit: the instruction pointer when the breakpoint trapped (after a data
    /// access; at an executed instruction).
    pub const WATCH_IP: usize = 0;
    /// Watchpoint hit: the address accessed.
    pub const WATCH_ADDR: usize = 1;
    /// Watchpoint hit: the watched word read after the access, when [`WATCH_VALUE_READ`] is 1.
    pub const WATCH_VALUE: usize = 2;
    /// Watchpoint hit: 1 when [`WATCH_VALUE`] holds a value (the read may fail; counted hits
    /// read none).
    pub const WATCH_VALUE_READ: usize = 3;
    /// Latency outlier: the call's duration, ns.
    pub const LAT_DURATION: usize = 0;
    /// Latency outlier: the start's argument `i` (0..[`ARGS`]) is `data[LAT_ARG0 + i]`.
    pub const LAT_ARG0: usize = 1;
    /// Latency outlier: the end's return value.
    pub const LAT_RETURN: usize = 7;
    /// Uprobe at a function's first instruction with user stacks ([`SLOT_STACK_AT_ENTRY`]; a
    /// latency outlier whose end is one, in place of [`LAT_RETURN`]): the return address at the
    /// stack pointer, the direct caller; 0 otherwise.
    ///
    /// [`SLOT_STACK_AT_ENTRY`]: super::SLOT_STACK_AT_ENTRY
    pub const ENTRY_RET: usize = 7;
    /// Latency outlier, in [`Event::fields`](super::Event::fields): the task that started
    /// the call (`pid_tgid`; the event's own is the end's).
    pub const LAT_START_TASK: usize = 0;
    /// Latency outlier, in `fields`: the start task's comm, two words.
    pub const LAT_START_COMM: usize = 1;
    /// Latency outlier, in `fields`: a tracepoint start's record bytes 56..64 (its bytes 8..56
    /// are the start's arguments, [`LAT_ARG0`]); a function's index among several measured
    /// (`tracer latency F1 F2`).
    pub const LAT_START_EXTRA: usize = 3;
}

/// The BPF object's maps and globals, by the names userspace looks them up with: each is the
/// name of a `static` in tracer-ebpf (`tracer/src/bpf/mod.rs` checks every one against the built
/// object).
pub mod names {
    pub const EVENTS: &str = "EVENTS";
    pub const RINGBUF: &str = "RINGBUF";
    pub const RINGBUF_WAKEUP: &str = "RINGBUF_WAKEUP";
    pub const USES: &str = "USES";
    pub const CONFIG: &str = "CONFIG";
    pub const STATS: &str = "STATS";
    pub const TRACKED: &str = "TRACKED";
    pub const RUN_COUNT: &str = "RUN_COUNT";
    pub const STACKS: &str = "STACKS";
    pub const COUNTS: &str = "COUNTS";
    pub const SCHED_OFFSETS: &str = "SCHED_OFFSETS";
    pub const LAT_CONFIG: &str = "LAT_CONFIG";
    pub const LAT_START: &str = "LAT_START";
    pub const LAT_OUTLIER: &str = "LAT_OUTLIER";
    pub const LAT_HIST: &str = "LAT_HIST";
    pub const LAT_ARRAY: &str = "LAT_ARRAY";
    pub const LAT_STATS: &str = "LAT_STATS";
    /// aya-log's ring (`--debug-bpf`), defined by aya-log-ebpf.
    pub const AYA_LOGS: &str = "AYA_LOGS";
    pub const FILTERS: &str = "FILTERS";
    pub const GLOBS: &str = "GLOBS";
    pub const SYS_SLOTS: &str = "SYS_SLOTS";
    pub const STR_COUNTS: &str = "STR_COUNTS";
    pub const FILTER_SHAPE: &str = "FILTER_SHAPE";
    pub const USDT_ARGS: &str = "USDT_ARGS";
    pub const OFFCPU_CONFIG: &str = "OFFCPU_CONFIG";
    pub const OFFCPU_START: &str = "OFFCPU_START";
    pub const TRACE_START: &str = "TRACE_START";
    pub const TRACE_SAVED: &str = "TRACE_SAVED";
    pub const TRACE_STATS: &str = "TRACE_STATS";
    pub const TRACE_FATAL: &str = "TRACE_FATAL";
    pub const TRACE_FDSETS: &str = "TRACE_FDSETS";
    pub const KSYM_TEXT: &str = "KSYM_TEXT";
    /// Every name above.
    pub const ALL: [&str; 32] = [
        EVENTS,
        RINGBUF,
        RINGBUF_WAKEUP,
        USES,
        CONFIG,
        STATS,
        TRACKED,
        RUN_COUNT,
        STACKS,
        COUNTS,
        SCHED_OFFSETS,
        LAT_CONFIG,
        LAT_START,
        LAT_OUTLIER,
        LAT_HIST,
        LAT_ARRAY,
        LAT_STATS,
        AYA_LOGS,
        FILTERS,
        GLOBS,
        SYS_SLOTS,
        FILTER_SHAPE,
        STR_COUNTS,
        USDT_ARGS,
        OFFCPU_CONFIG,
        OFFCPU_START,
        TRACE_START,
        TRACE_SAVED,
        TRACE_STATS,
        TRACE_FATAL,
        TRACE_FDSETS,
        KSYM_TEXT,
    ];
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
    /// Struct members read by a probe slot, as `SlotConfig::fields` lists them (zero-extended).
    pub fields: [u64; FIELD_READS],
    /// The global id of the program slot that fired.
    pub slot: u32,
    /// CPU the hit ran on.
    pub cpu: u32,
    /// Bytes of string entries sent behind the event (0: none); see [`STR_ENTRY`].
    pub str_bytes: i32,
    /// Kernel stack id in the `STACKS` map, [`NO_STACK`], or a negative errno.
    pub kstack: i32,
    /// User stack id in the `STACKS` map, [`NO_STACK`], or a negative errno.
    pub ustack: i32,
    /// Bit k set: the read of `fields[k]` failed (a bad or paged-out pointer).
    pub field_faults: u32,
    /// `bpf_get_current_comm()`.
    pub comm: [u8; 16],
}

const _: () = assert!(Event::SIZE == 152, "Event must stay free of padding");

impl Event {
    /// Size of an event's fixed part; its strings (`str_bytes` of them) follow it.
    pub const SIZE: usize = core::mem::size_of::<Event>();

    /// How many bytes the event takes on the wire: itself and its strings.
    pub fn wire_len(&self) -> usize {
        Self::SIZE + self.str_bytes.max(0) as usize
    }

    /// Decodes an event from the bytes of a `PERF_RECORD_SAMPLE`'s raw data (or a ring buffer
    /// record), which may carry trailing padding (raw data is padded to 8 bytes). `None` when
    /// the buffer is shorter than the event and the strings it claims.
    pub fn from_bytes(bytes: &[u8]) -> Option<Event> {
        if bytes.len() < Self::SIZE {
            return None;
        }
        // SAFETY: `Event` is `repr(C)`, made only of integers and byte arrays (every bit
        // pattern is valid), and `bytes` holds at least `size_of::<Event>()` bytes;
        // `read_unaligned` copes with the ring's 4-byte alignment of raw data.
        let event: Event = unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<Event>()) };
        match event.str_bytes >= 0 && bytes.len() >= event.wire_len() {
            true => Some(event),
            false => None,
        }
    }

    /// The string entries behind the event in `bytes` (what [`Event::from_bytes`] read it
    /// from).
    pub fn strings<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(Self::SIZE..self.wire_len()).unwrap_or(&[])
    }

    /// The event's fixed part as the BPF program wrote it (a recorded trace stores it, then
    /// the strings).
    pub fn to_bytes(&self) -> [u8; Event::SIZE] {
        // SAFETY: `Event` is `repr(C)` with no padding (its fields are 8-byte words followed by
        // 4-byte words and byte arrays, 152 bytes in all: checked below), so every byte of it
        // is initialized and can be read as a byte array.
        unsafe { core::mem::transmute_copy(self) }
    }

    /// When a streamed event took its stack ids: from its time to the end of the span its
    /// program measured ([`STACK_SPAN_BIT`](crate::STACK_SPAN_BIT)).
    pub fn stack_taken(&self) -> (u64, u64) {
        let units = u64::from(self.field_faults >> crate::STACK_SPAN_BIT);
        (
            self.time_ns,
            self.time_ns + (units << crate::STACK_SPAN_SHIFT),
        )
    }

    /// Process id (thread group id).
    pub fn pid(&self) -> u32 {
        (self.pid_tgid >> 32) as u32
    }

    /// Thread id.
    pub fn tid(&self) -> u32 {
        self.pid_tgid as u32
    }

    /// The task name up to its NUL.
    pub fn comm(&self) -> &[u8] {
        let end = self
            .comm
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.comm.len());
        &self.comm[..end]
    }
}

/// One entry of an event's string area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrEntry<'a> {
    /// The [`StrRead`] (index in `SlotConfig::strs`) it is of.
    pub read: u8,
    /// [`str_flag`] bits.
    pub flags: u8,
    pub bytes: &'a [u8],
}

/// The entries of a string area, in the order the program wrote them; stops at a malformed
/// one (a length past the end).
pub fn str_entries(area: &[u8]) -> StrEntries<'_> {
    StrEntries { area }
}

/// Iterator of [`str_entries`].
pub struct StrEntries<'a> {
    area: &'a [u8],
}

impl<'a> Iterator for StrEntries<'a> {
    type Item = StrEntry<'a>;

    fn next(&mut self) -> Option<StrEntry<'a>> {
        let head = self.area.get(..STR_ENTRY)?;
        let len = u16::from_ne_bytes([head[2], head[3]]) as usize;
        let bytes = self.area.get(STR_ENTRY..STR_ENTRY + len)?;
        let entry = StrEntry {
            read: head[0],
            flags: head[1],
            bytes,
        };
        self.area = &self.area[STR_ENTRY + len..];
        Some(entry)
    }
}
