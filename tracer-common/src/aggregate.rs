//! Counting in the kernel: the key (`AggKey`, `StrAggKey`), the value (`AggValue`), its bits
//! (`AGG_*`) and buckets, the stacks.

use crate::*;

/// `SlotConfig::agg` bits: which parts of an [`AggKey`] are filled (the rest stay zero).
pub const AGG_COMM: u32 = 1 << 0;
pub const AGG_PID: u32 = 1 << 1;
pub const AGG_TID: u32 = 1 << 2;
pub const AGG_CPU: u32 = 1 << 3;
/// `AggKey::value` holds the value at `SlotConfig::key_src`.
pub const AGG_KEY_VALUE: u32 = 1 << 4;
/// `AggValue::sum` adds up the value at `SlotConfig::val_src` (`--sum`, `--hist`).
pub const AGG_SUM: u32 = 1 << 5;
/// `AggKey::bucket` is the bucket of the value at `val_src` (`--hist`): log2 (see
/// [`log2_bucket`]), or linear when `SlotConfig::hist_step` is set (see [`linear_bucket`]).
pub const AGG_HIST: u32 = 1 << 6;
/// Keyed by a string's content (`--count-by filename`): `key_src` is the index of the string
/// read, and the hit is counted in `STR_COUNTS` under a [`StrAggKey`].
pub const AGG_KEY_STRING: u32 = 1 << 7;
/// `AggKey::cgroup` is the task's cgroup v2 id (`--count-by cgroup|container|pod`).
pub const AGG_CGROUP: u32 = 1 << 8;
/// Every `AGG_*` key bit, in bit order.
pub const AGG_FLAGS: [u32; 9] = [
    AGG_COMM,
    AGG_PID,
    AGG_TID,
    AGG_CPU,
    AGG_KEY_VALUE,
    AGG_SUM,
    AGG_HIST,
    AGG_KEY_STRING,
    AGG_CGROUP,
];
const _: () = assert!(distinct_bits(&AGG_FLAGS), "two AGG_* bits are the same");
/// Bytes of a string that key a count: longer strings count under their first bytes, marked.
pub const KEY_STRLEN: usize = 128;
/// Capacity of `STR_COUNTS` when a run counts by a named value (which may be a string).
pub const STR_COUNT_ENTRIES: u32 = 4096;
/// `AggKey::bucket` of values below the histogram's range: negative values of a signed source
/// (log2), values under `SlotConfig::hist_min` (linear).
pub const AGG_BUCKET_BELOW: u64 = u64::MAX - 1;
/// `AggKey::bucket` of negative values of a signed log2 `--hist`: the row below its range.
pub const AGG_BUCKET_NEGATIVE: u64 = AGG_BUCKET_BELOW;
/// `AggKey::bucket` of values at or past the end of a linear histogram's range.
pub const AGG_BUCKET_ABOVE: u64 = u64::MAX;
/// Log2 buckets of a `--hist`: 0 holds the value 0, `k` (1..=64) the values `2^(k-1)` to
/// `2^k - 1` (so 0 and 1 are told apart).
pub const AGG_LOG2_BUCKETS: u64 = 65;
/// Most buckets of a linear `--hist` (`--linear STEP,MIN,MAX`), beside the two edge rows.
pub const AGG_LINEAR_BUCKETS: u64 = 1000;

/// The log2 `--hist` bucket of `value` (see [`AGG_LOG2_BUCKETS`]).
#[inline(always)]
pub const fn log2_bucket(value: u64) -> u64 {
    64 - value.leading_zeros() as u64
}

/// The linear `--hist` bucket of `value`: `(value - min) / step` inside `[min, min + step *
/// buckets)`, else [`AGG_BUCKET_BELOW`] or [`AGG_BUCKET_ABOVE`]; `min` and `value` compare as
/// signed numbers when the source is signed.
#[inline(always)]
pub const fn linear_bucket(value: u64, signed: bool, min: u64, step: u64, buckets: u64) -> u64 {
    let below = if signed {
        (value as i64) < (min as i64)
    } else {
        value < min
    };
    if below {
        return AGG_BUCKET_BELOW;
    }
    // value >= min: the difference is the distance, also for signed values.
    let b = match value.wrapping_sub(min).checked_div(step) {
        Some(b) => b,
        None => 0,
    };
    if b >= buckets {
        AGG_BUCKET_ABOVE
    } else {
        b
    }
}
/// Capacity of `COUNTS` when aggregating (distinct keys of one run or interval).
pub const AGG_ENTRIES: u32 = 10240;

/// Where a value comes from: a byte range of [`Event::data`] (registers arg0..arg5 at
/// 0..48 and the return value at 48 for probes; the record head for tracepoints) or, from
/// byte 64 on ([`FIELDS_OFFSET`]), of [`Event::fields`] (struct members read by the probe):
/// `offset | size << 8 | SRC_SIGNED`.
pub const fn src(offset: u32, size: u32, signed: bool) -> u32 {
    offset | size << 8 | if signed { SRC_SIGNED } else { 0 }
}
/// The [`src`] of a breakpoint or software-event hit's instruction pointer (data word
/// [`word::WATCH_IP`]): `tracer watch --summary`'s key value.
pub const SRC_WATCH_IP: u32 = src(8 * word::WATCH_IP as u32, 8, false);
/// First [`src`] offset of `Event::fields`: `data` and `fields` are adjacent in [`Event`].
pub const FIELDS_OFFSET: u32 = 8 * DATA_WORDS as u32;
/// A source whose value is sign-extended from its size.
pub const SRC_SIGNED: u32 = 1 << 16;

/// One cell of the `COUNTS` map: the parts `SlotConfig::agg` asks for, zero elsewhere.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AggKey {
    pub slot: u32,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: [u8; 16],
    /// The keyed argument, return value or field (sign-extended when signed).
    pub value: u64,
    /// Stack ids (as in [`Event`]); [`NO_STACK`] when not keyed by stack.
    pub kstack: i32,
    pub ustack: i32,
    /// `--hist`: the value's bucket ([`log2_bucket`], [`linear_bucket`]), or
    /// [`AGG_BUCKET_BELOW`] / [`AGG_BUCKET_ABOVE`].
    pub bucket: u64,
    /// With [`SLOT_STACK_AT_ENTRY`]: the user stack's missing direct caller
    /// ([`word::ENTRY_RET`]); 0 otherwise.
    pub entry_ret: u64,
    /// With [`AGG_CGROUP`]: the task's cgroup v2 id (`bpf_get_current_cgroup_id`).
    pub cgroup: u64,
}

/// A `STR_COUNTS` key: the parts of an [`AggKey`], and the string's first [`KEY_STRLEN`] bytes
/// (zero-padded); `key.value` holds the string entry's [`str_flag`] bits, with
/// [`str_flag::TRUNCATED`] also for a string longer than the key keeps.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrAggKey {
    pub key: AggKey,
    pub text: [u8; KEY_STRLEN],
}

impl Default for StrAggKey {
    fn default() -> StrAggKey {
        StrAggKey {
            key: AggKey::default(),
            text: [0; KEY_STRLEN],
        }
    }
}

/// Per-CPU counters of one [`AggKey`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggValue {
    pub count: u64,
    /// Sum of the `val_src` values (wrapping: signed values add up as two's complement).
    pub sum: u64,
}

/// `Event::kstack` / `Event::ustack` when that stack was not asked for. Other negative values
/// are the errno of a failed `bpf_get_stackid` (e.g. -EEXIST: the stack map bucket was taken).
pub const NO_STACK: i32 = i32::MIN;
/// `Event::field_faults` bits from this one up: how long after `Event::time_ns` a streamed
/// hit took its stack ids, in units of 2^[`STACK_SPAN_SHIFT`] ns, rounded up (0: taken at
/// once, or none). The reader recycles the ids of the stacks it has read and tells an id's
/// generations apart by when the id was taken, so it must know between which times that was:
/// `time_ns` and this much later. A walk takes microseconds natively, over a millisecond in
/// an emulated guest, and longer when the task is preempted between (uprobe programs can
/// be). Below are the fields' fault bits and USDT's (0..14).
pub const STACK_SPAN_BIT: u32 = 16;
/// The unit of the span ([`STACK_SPAN_BIT`]): 4.096 us.
pub const STACK_SPAN_SHIFT: u32 = 12;
/// The longest span the bits hold (about 268 ms); ids taken later are sent as
/// [`STACK_TAKEN_LATE`].
pub const STACK_SPAN_MAX: u32 = (1 << (32 - STACK_SPAN_BIT)) - 1;
/// The stack ids of a hit that took them later than [`STACK_SPAN_MAX`] units after its time:
/// -ESTALE, counted and shown as a stack not known, never as another's.
pub const STACK_TAKEN_LATE: i32 = -116;

/// The `field_faults` bits that say a span of `ns` between an event's time and its stack ids
/// ([`STACK_SPAN_BIT`]), or `None` past [`STACK_SPAN_MAX`].
#[inline(always)]
pub const fn stack_span_bits(ns: u64) -> Option<u32> {
    let units = (ns >> STACK_SPAN_SHIFT) + 1;
    match units <= STACK_SPAN_MAX as u64 {
        true => Some((units as u32) << STACK_SPAN_BIT),
        false => None,
    }
}

/// Capacity of the `STACKS` map when stacks are captured (distinct stacks of one run). Without
/// `-s` the map is created with one entry, so start-up does not pay for it.
pub const STACK_ENTRIES: u32 = 16384;
