//! The maps every concern shares: the slots' configuration, the per-CPU scratch hit, the
//! statistics, the tracked processes, the stack traces and the scheduler's offsets.

use aya_ebpf::macros::map;
use aya_ebpf::maps::{Array, HashMap, PerCpuArray, StackTrace};
use tracer_common::{
    Event, SchedOffsets, SlotConfig, StrAggKey, FDSETS_SAVED, KEY_STRLEN, SLOTS, STAT_COUNT,
    STR_AREA, STR_BUFFER, STR_READS, TRACKED_MAX,
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
    /// The bytes an iovec array read has left to show (`put_iovecs`), kept here for the
    /// reason `used` is: loaded from map memory, each element starts from a value unknown to
    /// the verifier, so its paths end in one state. Kept in a local, its range split the
    /// states at every element, and 5.10's verifier did not finish in 300 s.
    pub(crate) iov_left: u64,
    /// In `trace_exit`'s entry, for its reads: the length of the entries of the call's iovec
    /// array that `trace_exit_reads` saved in [`TRACE_SAVED`], plus one; 0 when none was.
    pub(crate) iov_saved: u64,
    /// A `STR_COUNTS` key being built.
    pub(crate) str_key: StrAggKey,
    /// Room past the key's text for the verifier: the copy's length is masked to under
    /// twice the text (it is at most the text's, as it compares).
    _slack: [u8; KEY_STRLEN],
}

/// `tracer trace`'s string areas kept by task (`pid_tgid`) from one program to another: an
/// execve's strings, read at its entry (`trace_enter`), and a call's iovec array (or msghdr),
/// read at its exit by `trace_exit_reads` for `trace_exit`. Not handed over per CPU: the task
/// can be preempted between two programs on one tracepoint, and another task's run the first
/// on its CPU (on 7.3, 25,455 of 38,001 writev calls of six processes showed another task's
/// array or none when they were).
#[map]
pub(crate) static TRACE_SAVED: HashMap<u64, [u8; STR_AREA]> = HashMap::with_max_entries(1, 0);

/// The fd sets a select or pselect6 was given, read by `trace_enter` (the call writes the
/// ready ones over them) as three entries of `FDSETS_SAVED` bytes at most, by task, for
/// `trace_exit_reads`: `TraceStart::used` says how long. Apart from [`TRACE_SAVED`]: a call
/// blocked in select holds its entry as long as it waits, and 396 bytes, not 8 KiB.
#[map]
pub(crate) static TRACE_FDSETS: HashMap<u64, [u8; FDSETS_SAVED]> = HashMap::with_max_entries(1, 0);

/// `Scratch::first` of a read that wrote no entry.
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// Which [`SCRATCH`] entry of a CPU a program builds its hit in ([`begin`], [`emit_raw`]).
///
/// One program does not run twice at once on a CPU: the kernel skips a program that would
/// nest in itself (counted as its recursion miss). Two programs may: a program on a raw
/// tracepoint or a trampoline runs with migration off but can be preempted (Linux 7.3's
/// `PREEMPT_LAZY`, any kernel booted `preempt=full`), and a perf event's program runs in an
/// interrupt. With one entry for all, a task's `sys_enter` program preempted the parent's
/// `sys_exit` on the 7.3 VM and wrote an execve's arguments into the parent's clone as it
/// was being sent. So each program that can be interrupted by another has its own entry.
/// Programs attached through perf events to kprobes, uprobes and tracepoints share
/// [`PERF`](scratch_at::PERF): the kernel runs them with preemption off, one at a time per
/// CPU (`bpf_prog_active`). Several fentry (or fexit, or raw tracepoint) slots of one run
/// share their kind's entry: two of them on one CPU at once is the case left.
///
/// [`begin`]: crate::slots::begin
/// [`emit_raw`]: crate::emit::emit_raw
pub(crate) mod scratch_at {
    pub(crate) const PERF: u32 = 0;
    /// Breakpoints and software events (`watch`), run in interrupt context.
    pub(crate) const PERF_EVENT: u32 = 1;
    /// The counting raw tracepoint slots on `sys_enter`/`sys_exit`.
    pub(crate) const RAW_SLOT: u32 = 2;
    pub(crate) const SYS_ENTER: u32 = 3;
    pub(crate) const SYS_EXIT: u32 = 4;
    /// fentry programs: probe slots and latency ends.
    pub(crate) const FENTRY: u32 = 5;
    pub(crate) const FEXIT: u32 = 6;
    /// `tracer trace`'s programs.
    pub(crate) const TRACE_ENTER: u32 = 7;
    pub(crate) const TRACE_EXIT: u32 = 8;
    pub(crate) const SIGNAL: u32 = 9;
    pub(crate) const EXEC: u32 = 10;
    pub(crate) const TASK_EXIT: u32 = 11;
    /// `trace_exit_reads`: a call's iovec array, for the `trace_exit` that runs after it.
    pub(crate) const IOVECS: u32 = 12;
    pub(crate) const COUNT: u32 = 13;
}

/// Scratch hits per CPU, one per [`scratch_at`] entry: far too big for the 512-byte stack.
#[map]
pub(crate) static SCRATCH: PerCpuArray<Scratch> =
    PerCpuArray::with_max_entries(scratch_at::COUNT, 0);

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
        add_to(counter, n);
    }
}

/// Adds `n` to a counter of this CPU atomically: two programs can interleave on one CPU (see
/// [`scratch_at`]), and a plain increment interrupted between its load and its store would
/// lose the other's. The result is not read, so this is `lock xadd`, which every kernel
/// tracer supports (the fetching forms need Linux 5.12).
#[inline(always)]
pub(crate) fn add_to(counter: *mut u64, n: u64) {
    use core::intrinsics::{atomic_xadd, AtomicOrdering};
    // SAFETY: `counter` is a map value of this CPU, valid while the program runs.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(counter, n) };
}

/// Zeroes `words` with one 8-byte store each. A plain `= [0; N]` compiles here to a call of
/// the linked `memset`, which stores a byte at a time
/// (docs/benchmarks.md, "Figures the code cites", `bpf-memset`);
/// volatile stores, so that LLVM does not merge them back
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
