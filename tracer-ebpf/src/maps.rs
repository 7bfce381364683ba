//! The maps every concern shares: the slots' configuration, the per-CPU scratch hit, the
//! statistics, the tracked processes, the stack traces and the scheduler's offsets.

use aya_ebpf::macros::map;
use aya_ebpf::maps::{Array, HashMap, PerCpuArray, StackTrace};
use tracer_common::{
    Event, SchedOffsets, SlotConfig, StrAggKey, KEY_STRLEN, SLOTS, STAT_COUNT, STR_BUFFER,
    STR_READS, TRACKED_MAX,
};

/// What each slot should capture and filter, by global slot id.
#[map]
pub(crate) static CONFIG: Array<SlotConfig> = Array::with_max_entries(SLOTS, 0);

/// Syscall number (exits from `SYSCALL_NRS` on) -> global slot id, 0 for none, for the
/// dispatching raw syscall programs. Sized by userspace only when used.
#[map]
pub(crate) static SYS_SLOTS: Array<u32> = Array::with_max_entries(1, 0);

/// Per-CPU counters per slot: hits that passed the filters, and outputs that failed.
#[map]
pub(crate) static STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(STAT_COUNT, 0);

/// Where a hit is built: its [`Event`], then its string entries (sent with it), then where
/// each read's first entry starts (for `--filter`).
#[repr(C)]
pub(crate) struct Scratch {
    pub(crate) event: Event,
    pub(crate) area: [u8; STR_BUFFER],
    /// Offset of read k's first entry in `area`, [`NO_ENTRY`] when it has none.
    pub(crate) first: [u32; STR_READS],
    /// The area's next free offset (see `used`).
    pub(crate) used: u32,
    /// The [`WAKE_TICK_SHIFT`] tick of this CPU's last wakeup of the ring buffer's reader.
    pub(crate) woke_tick: u32,
    /// This CPU's ring buffer outputs (wrapping): the ring's fill is asked every
    /// [`QUERY_EVERY`]th.
    pub(crate) outputs: u32,
    /// A `STR_COUNTS` key being built.
    pub(crate) str_key: StrAggKey,
    /// Room past the key's text for the verifier: the copy's length is masked to under
    /// twice the text (it is at most the text's, as it compares).
    _slack: [u8; KEY_STRLEN],
}

/// `Scratch::first` of a read that wrote no entry.
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// Scratch hit per CPU: far too big for the 512-byte stack.
#[map]
pub(crate) static SCRATCH: PerCpuArray<Scratch> = PerCpuArray::with_max_entries(1, 0);

/// The scratch hit an event is part of, to read.
#[inline(always)]
pub(crate) fn scratch_of(event: &Event) -> &Scratch {
    // SAFETY: as in `scratch`.
    unsafe { &*(event as *const Event as *const Scratch) }
}

/// The scratch hit an event is part of.
#[inline(always)]
pub(crate) fn scratch(event: &mut Event) -> &mut Scratch {
    // SAFETY: every `Event` these programs fill is `SCRATCH`'s (`begin` and `emit_raw` hand
    // out no other), the first field of the `repr(C)` `Scratch`; the borrow of the event is
    // the borrow of its scratch.
    unsafe { &mut *(event as *mut Event as *mut Scratch) }
}

/// Processes followed for `-- COMMAND`: tgid -> TRACK_PENDING (before its exec) or TRACK_ACTIVE.
#[map]
pub(crate) static TRACKED: HashMap<u32, u32> = HashMap::with_max_entries(TRACKED_MAX, 0);

/// Stack traces of hits (`-s`), by id. Userspace sizes it (`map_max_entries`) only when
/// stacks are asked for; ids are never reused (no BPF_F_REUSE_STACKID), so an id read later
/// still names the stack it was given for, and a full map shows as a negative id, counted.
#[map]
pub(crate) static STACKS: StackTrace = StackTrace::with_max_entries(1, 0);

/// Offsets in scheduler tracepoint records, set by userspace from tracefs.
#[map]
pub(crate) static SCHED_OFFSETS: Array<SchedOffsets> = Array::with_max_entries(1, 0);

#[inline(always)]
pub(crate) fn bump(index: u32) {
    add(index, 1);
}

#[inline(always)]
pub(crate) fn add(index: u32, n: u64) {
    if let Some(counter) = STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU slot, and these program types do not nest on one CPU, so a plain
        // increment does not race.
        unsafe { *counter += n };
    }
}

/// Zeroes `words` with one 8-byte store each. A plain `= [0; N]` compiles here to a call of
/// the linked `memset`, which stores a byte at a time (32 rounds of a loop for the field words,
/// about 16 ns of every streamed hit); volatile stores, so that LLVM does not merge them back
/// into that call.
#[inline(always)]
pub(crate) fn zero_words<const N: usize>(words: &mut [u64; N]) {
    let mut i = 0;
    while i < N {
        // SAFETY: `i < N`: an aligned word of the array.
        unsafe { core::ptr::write_volatile(words.as_mut_ptr().add(i), 0) };
        i += 1;
    }
}
