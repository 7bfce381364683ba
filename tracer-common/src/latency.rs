//! `tracer latency`: histograms (`HIST_*`), the grouping and keys (`LAT_*`), its configuration
//! (`LatConfig`) and the start of a pair (`LatStart`).

use crate::*;

/// Histogram buckets (log2 of nanoseconds, or linear steps), then three extra "buckets": the
/// sum of all durations, the maximum and the minimum.
pub const HIST_BUCKETS: u64 = 64;
/// Linear latency buckets: the last one ([`HIST_BUCKETS`] - 1) is the overflow row, every
/// duration from `(HIST_BUCKETS - 1) * step` on.
pub const HIST_OVERFLOW: u64 = HIST_BUCKETS - 1;
/// `HistKey::bucket` of the per-key sum of durations (ns).
pub const HIST_SUM: u64 = 64;
/// `HistKey::bucket` of the per-key maximum duration (ns).
pub const HIST_MAX: u64 = 65;
/// `HistKey::bucket` of the per-key minimum duration, stored as `!min` (`u64::MAX - min`) so
/// that it is kept by maximum like [`HIST_MAX`], and 0 (no call) is never the minimum.
pub const HIST_MIN: u64 = 66;

/// Whether a latency cell is kept by maximum (summed over CPUs otherwise, and across reads).
pub const fn hist_kept_by_max(bucket: u64) -> bool {
    bucket == HIST_MAX || bucket == HIST_MIN
}
/// Capacity of the latency maps.
pub const LAT_ENTRIES: u32 = 16384;

/// `LatConfig::by`: one histogram in all.
pub const LAT_BY_NONE: u32 = 0;
pub const LAT_BY_COMM: u32 = 1;
pub const LAT_BY_PID: u32 = 2;
pub const LAT_BY_TID: u32 = 3;
pub const LAT_BY_CPU: u32 = 4;
/// One histogram per value read where [`LatConfig::by_src`] says: a field of the end's record
/// or an argument register of the end or, with [`LAT_BY_START`], of the start.
pub const LAT_BY_VALUE: u32 = 5;
/// In [`LatConfig::by_src`]: the value is one of the start's argument registers (kept with
/// its start time), not the end's.
pub const LAT_BY_START: LatKeySrc = 1 << 16;
/// `tracer latency F1 F2 ...`: one histogram per function, by the index its probes were
/// attached with (their BPF attach cookie).
pub const LAT_BY_FUNCTION: u32 = 6;

/// `LAT_STATS` counters.
pub const LAT_STAT_ENTRIES: u32 = 0;
pub const LAT_STAT_EXITS: u32 = 1;
/// Exits with no matching entry (tracing started mid-call, or the entry was evicted).
pub const LAT_STAT_NO_ENTRY: u32 = 2;
/// Outliers that could not be written to a ring.
pub const LAT_STAT_OUTLIER_LOST: u32 = 3;
/// Starts that replaced a start of the same key whose end never came (a missed return:
/// kretprobe maxactive overflow, recursion, a thread that left the call another way).
pub const LAT_STAT_REPLACED: u32 = 4;
/// Calls `--filter` refused (not measured).
pub const LAT_STAT_FILTERED: u32 = 5;
pub const LAT_STAT_COUNT: u32 = 6;
/// The `FILTERS` entry of `tracer latency --filter` (a latency run takes no probe slot).
pub const LAT_FILTER_SLOT: u32 = 0;

/// Parts of a latency key (`--key dev,sector`).
pub const LAT_KEY_PARTS: usize = 3;

/// Where a latency key part is read, as [`src`] without the sign bit: a byte range of the
/// tracepoint record, or of a probe's argument registers (`argN` at `8 * N`, size 8).
/// A size of 0 marks an unused part; all unused: start and end are matched by thread.
pub type LatKeySrc = u32;

/// A latency key part that is the current thread id, read with a helper, not from the record:
/// `common_pid`. Syscall tracepoints hand BPF programs their registers pointer where the
/// record's `common_*` fields would be (perf_call_bpf_enter/exit), so `common_pid` read from
/// the record is the upper half of a kernel pointer, the same for every task.
pub const LAT_KEY_TID: LatKeySrc = 0xff << 8;

/// What the latency programs do (`LAT_CONFIG[0]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatConfig {
    /// Which hits count (the same filters as probes).
    pub filter: SlotConfig,
    /// `LAT_BY_*`.
    pub by: u32,
    /// `SLOT_STACK_*` bits: stacks captured for outliers, at the end (`SLOT_STACK_AT_ENTRY`
    /// when it is a uprobe at a function's first instruction) or, with
    /// [`LAT_STACK_AT_START`], at the start.
    pub stack_flags: u32,
    /// The key parts read at the start and at the end, in the same order.
    pub entry_key: [LatKeySrc; LAT_KEY_PARTS],
    pub exit_key: [LatKeySrc; LAT_KEY_PARTS],
    /// `LAT_USDT_*` bits: which end is a USDT probe, whose argument words are read as
    /// `USDT_ARGS` entry [`LAT_USDT_START`] or [`LAT_USDT_END`] says.
    pub usdt: u32,
    /// With [`LAT_BY_VALUE`]: where the group's value is read, as a key part is
    /// ([`LatKeySrc`]), [`LAT_BY_START`] for the start's registers.
    pub by_src: LatKeySrc,
    /// Linear buckets of this many ns (0: log2 buckets).
    pub linear_step: u64,
    /// Calls at least this long (ns) less one are streamed as outliers: 0 streams none, 1
    /// every call (`--slower-than 0`).
    pub slower_than: u64,
}

/// In [`LatConfig::stack_flags`], beside the `SLOT_STACK_*` bits: outliers carry the stacks
/// their start took (`--stack-at start`: biostacks' stack that queued the request), not their
/// end's.
pub const LAT_STACK_AT_START: u32 = 1 << 31;

/// `LatConfig::usdt` bit, and `USDT_ARGS` index, of a USDT start.
pub const LAT_USDT_START: u32 = 1;
/// `LatConfig::usdt` bit, and `USDT_ARGS` index, of a USDT end.
pub const LAT_USDT_END: u32 = 2;

/// The key of a call in flight: the thread (`pid_tgid` in the first part), or the values of
/// the `--key` parts, zero-extended.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LatKey {
    pub parts: [u64; LAT_KEY_PARTS],
}

/// A start time in `LAT_START`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatStart {
    pub time_ns: u64,
    /// kprobe/uprobe entries: the argument registers, for outlier reports; a tracepoint
    /// start's record from its first field (bytes 8..56), with `--slower-than`.
    pub args: [u64; 6],
    /// A tracepoint start's record bytes 56..64, with `--slower-than`; a function's index
    /// among several (`tracer latency F1 F2`); 0 otherwise.
    pub extra: u64,
    /// The task that started the call, with `--slower-than` (0 otherwise): outliers are
    /// shown as its (a block I/O completes in an interrupt of another task).
    pub pid_tgid: u64,
    /// That task's comm, with `--slower-than`.
    pub comm: [u64; 2],
    /// With [`LAT_STACK_AT_START`]: the stacks the start took (ids in `STACKS`, or
    /// `NO_STACK`/an errno as `Event::kstack`).
    pub kstack: i32,
    pub ustack: i32,
    /// With [`USES_LAT_MEMBERS`] and `--slower-than`: the struct members the start read, as
    /// its function's [`LatOutlier::reads`] lists them (`iocb->ki_pos` as it was when the
    /// call began, not as the call left it).
    pub fields: [u64; FIELD_READS],
    /// Bit k set: the read of `fields[k]` failed (`Event::field_faults`).
    pub field_faults: u32,
    pub _pad: u32,
}

/// What the outliers of one measured function show of its start (`LAT_OUTLIER`, by the
/// function's index among those measured, 0 for the first): the struct members its start
/// reads ([`SlotConfig::fields`]), the strings its end reads from the outlier's words
/// ([`SlotConfig::strs`], `str_from::ARG` at `word::LAT_ARG0 + j`), and, with
/// [`USES_LAT_MEMBERS`], which of the start's words each of the outlier's six argument words
/// carries. A probe's own slot configuration serves one probe; several functions measured in
/// one run each have their own parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatOutlier {
    pub reads: SlotConfig,
    /// For the outlier's word `word::LAT_ARG0 + j`: argument register `words[j]` (below
    /// [`LAT_WORD_FIELD`]), or member read `words[j] - LAT_WORD_FIELD` of the start.
    pub words: [u8; 8],
}

const _: () = assert!(
    core::mem::size_of::<LatOutlier>() == core::mem::size_of::<SlotConfig>() + 8,
    "LatOutlier must stay free of padding"
);

/// How many functions one `tracer latency F1 F2 ...` run measures at most (`LAT_OUTLIER`'s
/// entries).
pub const LAT_FUNCTIONS_MAX: u32 = 64;

/// In [`LatOutlier::words`]: a member read of the start, not an argument register.
pub const LAT_WORD_FIELD: u8 = 8;

/// A histogram cell: which group (`--by`) and which bucket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HistKey {
    /// The group: the comm, or a number (pid, tid, cpu) in the first 8 bytes; zeros for none.
    pub group: [u8; 16],
    pub bucket: u64,
}
