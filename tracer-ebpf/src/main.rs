//! tracer's BPF programs: probe slots that emit [`Event`]s into per-CPU BPF_OUTPUT rings (or,
//! with `--transport ringbuf`, one BPF ring buffer).
//!
//! Userspace opens the perf events (kprobe/uprobe PMUs, tracepoints, breakpoints) itself and
//! attaches these programs with `PERF_EVENT_IOC_SET_BPF`. There is no attach cookie on that path,
//! so each probe spec uses its own program instance ("slot"); the slot number is a constant
//! compiled into each instance and indexes the `CONFIG` map.
#![no_std]
#![no_main]
// An atomic add (BPF_XADD) for the shared COMM_GEN counter: the BPF target has no
// compare-and-swap, so core's atomic types offer no fetch_add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

use core::ffi::c_void;

use aya_ebpf::bindings::{
    BPF_F_CURRENT_CPU, BPF_F_USER_STACK, BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP,
};
use aya_ebpf::helpers::generated;
use aya_ebpf::helpers::{
    bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid,
    bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_perf_event_output, bpf_probe_read_kernel,
    bpf_probe_read_user,
};
use aya_ebpf::macros::{fentry, fexit, kprobe, map, perf_event, raw_tracepoint};
use aya_ebpf::maps::{
    Array, HashMap, PerCpuArray, PerCpuHashMap, PerfEventArray, RingBuf, StackTrace,
};
use aya_ebpf::programs::tracing::StackIdContext;
use aya_ebpf::programs::{
    FEntryContext, FExitContext, PerfEventContext, ProbeContext, RawTracePointContext,
    RetProbeContext, TracePointContext,
};
use aya_ebpf::EbpfContext;
use aya_log_ebpf::debug;
use tracer_common::{
    buffer_len, cmp, drop, operand, stat_failed, stat_filtered, stat_hits, str_flag, str_from,
    str_mem, word, AggKey, AggValue, Event, Filter, FilterAtom, RunCount, SchedOffsets, SlotConfig,
    StrAggKey, StrRead, UsdtArgs, AGG_BUCKET_NEGATIVE, AGG_CGROUP, AGG_COMM, AGG_CPU, AGG_HIST,
    AGG_KEY_STRING, AGG_KEY_VALUE, AGG_PID, AGG_SUM, AGG_TID, ARRAY_ELEMENTS, DATA_WORDS,
    FIELD_AUTO, FIELD_READS, FIELD_USER, FILTER_ATOMS, GLOB_ACCEPT, GLOB_DEAD, GLOB_ROW,
    GLOB_STRLEN, KERNEL_SPACE_START, KEY_STRLEN, NO_STACK, PERF_EVENT_BASE, PT_REGS_CS,
    PT_REGS_ORIG_AX, PT_REGS_SYSCALL_ARGS, SLOTS, SLOT_AGGREGATE, SLOT_COUNT_ONLY,
    SLOT_FILTER_COMM, SLOT_FILTER_TRACKED, SLOT_RAW_SYS_EXIT, SLOT_RECORD_LEN, SLOT_RETURN,
    SLOT_RUN_AT_IP, SLOT_RUN_COUNT, SLOT_RUN_KEYED, SLOT_STACK_AT_ENTRY, SLOT_STACK_KERNEL,
    SLOT_STACK_USER, SLOT_STOPPED, SLOT_USDT, SLOT_VALUE_FILTER, SLOT_VALUE_KERNEL, SRC_SIGNED,
    STAT_COUNT, STRLEN_MAX, STR_AREA, STR_BUFFER, STR_ENTRY, STR_READS, SYSCALL_NRS,
    TRACEPOINT_BASE, TRACKED_MAX, TRACK_ACTIVE, TRACK_PENDING, USDT_MEM, USDT_REG, USER32_CS,
    USES_AGGREGATE, USES_AGG_VALUE, USES_ALL, USES_COMM_CACHE, USES_DEBUG, USES_FIELDS,
    USES_FILTERS, USES_RUN_COUNT, USES_RUN_KEYED, USES_STACKS, USES_STREAM, USES_STRINGS,
    USES_STR_ARRAYS, USES_STR_MANY, USES_TRACE, USES_TRACKED, USES_USDT, USES_VALUE_FILTER,
};

/// What this run's slots may do (`USES_*` bits), set by userspace before loading. It is in
/// .rodata, which aya freezes and the kernel maps read-only for programs, so the verifier reads
/// its value and skips the code behind cleared bits.
#[unsafe(no_mangle)]
static USES: u32 = USES_ALL;

/// Whether this run may use `bit`; a constant to the verifier.
#[inline(always)]
pub(crate) fn uses(bit: u32) -> bool {
    // SAFETY: a plain aligned read of our own static. Volatile, so that LLVM does not fold in
    // the compiled-in default: the value is the one userspace wrote before loading.
    unsafe { core::ptr::read_volatile(&USES) & bit != 0 }
}

/// What a program on a tracepoint returns: 1 lets the hit go on to the tracepoint's perf
/// events, everyone's (`perf_trace_run_bpf_submit`, `perf_syscall_enter`: a 0 from any BPF
/// program on a tracepoint hides the hit from every perf event counting it, so `perf stat -e
/// CAT:NAME` beside tracer read 0). tracer's own event on the tracepoint is scoped to tracer's
/// thread, so it is on a CPU's list of events (and counts the hit) only while tracer runs there.
const TRACEPOINT_PASS: u32 = 1;

/// A tracepoint program whose return value reaches the kernel. aya's `#[tracepoint]` returns
/// 0 whatever the function returns (aya-ebpf-macros 0.2), which is the value that hides the
/// hit from every other perf event on the tracepoint; this is what it expands to, otherwise.
macro_rules! tracepoint_program {
    ($name:ident => $body:expr) => {
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "tracepoint")]
        pub fn $name(ctx: *mut ::core::ffi::c_void) -> u32 {
            let body: fn(::aya_ebpf::programs::TracePointContext) -> u32 = $body;
            body(::aya_ebpf::programs::TracePointContext::new(ctx))
        }
    };
}
pub(crate) use tracepoint_program;

/// Per-CPU `PERF_COUNT_SW_BPF_OUTPUT` events opened by userspace (max_entries = possible CPUs).
#[map]
static EVENTS: PerfEventArray<Event> = PerfEventArray::new(0);

/// The BPF ring buffer transport (`--transport ringbuf`): one ring shared by every CPU, sized by
/// userspace when used (one page otherwise).
#[map]
static RINGBUF: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Which transport events take, set by userspace before loading (read-only to the programs,
/// like `USES`): 0 sends them to the per-CPU perf rings in `EVENTS`; otherwise they go to
/// `RINGBUF`, and an output wakes the reader once this many bytes are waiting, or when it is
/// its CPU's first in a new [`WAKE_TICK_SHIFT`] tick (otherwise it sends no wakeup: a wakeup
/// per event would cost the traced task an interrupt each during a flood).
#[unsafe(no_mangle)]
static RINGBUF_WAKEUP: u64 = 0;

/// A CPU's ring buffer outputs wake the reader at most once per 2^20 ns (about 1 ms) for being
/// first: a sparse event is read at once, and a flood sends about a thousand wakeups a second
/// per CPU besides those of the byte watermark.
const WAKE_TICK_SHIFT: u32 = 20;

/// What each slot should capture and filter, by global slot id.
#[map]
static CONFIG: Array<SlotConfig> = Array::with_max_entries(SLOTS, 0);

/// `--filter` per slot (`SLOT_VALUE_FILTER`), by global slot id. Sized by userspace only when
/// a run filters.
#[map]
static FILTERS: Array<Filter> = Array::with_max_entries(1, 0);

/// `--filter`'s shape, set by userspace before loading (read-only to the programs, like
/// `USES`): the number of comparisons in bits 0..8, and from bit 8 one bit per comparison
/// that is of strings.
#[unsafe(no_mangle)]
static FILTER_SHAPE: u32 = 0;

/// The glob automata of `--filter`'s string comparisons: one row per state, one next state per
/// byte. Sized by userspace to the rows the run's patterns need.
#[map]
static GLOBS: Array<[u8; GLOB_ROW]> = Array::with_max_entries(1, 0);

/// Syscall number (exits from `SYSCALL_NRS` on) -> global slot id, 0 for none, for the
/// dispatching raw syscall programs. Sized by userspace only when used.
#[map]
static SYS_SLOTS: Array<u32> = Array::with_max_entries(1, 0);

/// Where each USDT probe slot's arguments are (`SLOT_USDT`), by probe slot id.
#[map]
static USDT_ARGS: Array<UsdtArgs> = Array::with_max_entries(SLOTS, 0);

/// Scratch for the registers of a USDT hit, indexed by pt_regs offset / 8 (`usdt_args`).
#[map]
static USDT_REGS: PerCpuArray<[u64; 32]> = PerCpuArray::with_max_entries(1, 0);

/// Per-CPU counters per slot: hits that passed the filters, and outputs that failed.
#[map]
static STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(STAT_COUNT, 0);

/// The last comm read on each CPU, with the task and the rename generation it was read at
/// (`USES_COMM_CACHE`).
#[repr(C)]
struct CommCache {
    pid_tgid: u64,
    /// `COMM_GEN` + 1 when read, so that the zeroed entry matches nothing.
    stamp: u64,
    /// The name's 16 bytes as two words: copied with two loads and two stores (a `[u8; 16]`
    /// is copied a byte at a time).
    comm: [u64; 2],
}

#[map]
static COMM_CACHE: PerCpuArray<CommCache> = PerCpuArray::with_max_entries(1, 0);

/// The task generation: bumped by `comm_renamed` whenever any task is renamed (every CPU's
/// cached comm is then stale), and by the tracking programs whenever the `-- COMMAND` process
/// set changes (every run count's filter verdict may be). A global (in `.bss`) rather than a
/// map entry: programs address it directly, with no lookup that could fail.
#[unsafe(no_mangle)]
static mut COMM_GEN: u64 = 0;

/// The task generation + 1 (so that a zeroed cache or run matches nothing).
#[inline(always)]
fn generation_stamp() -> u64 {
    // SAFETY: the shared counter is read with one aligned volatile load.
    unsafe { core::ptr::read_volatile(&raw const COMM_GEN) + 1 }
}

/// Moves the task generation on (any CPU, any program: atomically, since a lost update could
/// bring back an old generation).
#[inline(always)]
fn next_generation() {
    use core::intrinsics::{atomic_xadd, AtomicOrdering};
    // SAFETY: the counter is only ever changed atomically.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(&raw mut COMM_GEN, 1) };
}

/// The last task found in `TRACKED` on each CPU, with the generation it was found at.
#[repr(C)]
struct TrackedCache {
    pid_tgid: u64,
    /// The task generation + 1 then (0 matches nothing).
    stamp: u64,
}

#[map]
static TRACKED_CACHE: PerCpuArray<TrackedCache> = PerCpuArray::with_max_entries(1, 0);

/// Each CPU's run of counted hits not yet in `COUNTS` (`USES_RUN_COUNT`).
#[map]
static RUN_COUNT: PerCpuArray<RunCount> = PerCpuArray::with_max_entries(1, 0);

/// Where a hit is built: its [`Event`], then its string entries (sent with it), then where
/// each read's first entry starts (for `--filter`).
#[repr(C)]
pub(crate) struct Scratch {
    pub(crate) event: Event,
    area: [u8; STR_BUFFER],
    /// Offset of read k's first entry in `area`, [`NO_ENTRY`] when it has none.
    first: [u32; STR_READS],
    /// The area's next free offset (see `used`).
    used: u32,
    /// The [`WAKE_TICK_SHIFT`] tick of this CPU's last wakeup of the ring buffer's reader.
    woke_tick: u32,
    /// This CPU's ring buffer outputs (wrapping): the ring's fill is asked every
    /// [`QUERY_EVERY`]th.
    outputs: u32,
    /// A `STR_COUNTS` key being built.
    str_key: StrAggKey,
    /// Room past the key's text for the verifier: the copy's length is masked to under
    /// twice the text (it is at most the text's, as it compares).
    _slack: [u8; KEY_STRLEN],
}

/// `Scratch::first` of a read that wrote no entry.
const NO_ENTRY: u32 = u32::MAX;

/// Scratch hit per CPU: far too big for the 512-byte stack.
#[map]
pub(crate) static SCRATCH: PerCpuArray<Scratch> = PerCpuArray::with_max_entries(1, 0);

/// The scratch hit an event is part of, to read.
#[inline(always)]
fn scratch_of(event: &Event) -> &Scratch {
    // SAFETY: as in `scratch`.
    unsafe { &*(event as *const Event as *const Scratch) }
}

/// The scratch hit an event is part of.
#[inline(always)]
fn scratch(event: &mut Event) -> &mut Scratch {
    // SAFETY: every `Event` these programs fill is `SCRATCH`'s (`begin` and `emit_raw` hand
    // out no other), the first field of the `repr(C)` `Scratch`; the borrow of the event is
    // the borrow of its scratch.
    unsafe { &mut *(event as *mut Event as *mut Scratch) }
}

/// Processes followed for `-- COMMAND`: tgid -> TRACK_PENDING (before its exec) or TRACK_ACTIVE.
#[map]
static TRACKED: HashMap<u32, u32> = HashMap::with_max_entries(TRACKED_MAX, 0);

/// Stack traces of hits (`-s`), by id. Userspace sizes it (`map_max_entries`) only when
/// stacks are asked for; ids are never reused (no BPF_F_REUSE_STACKID), so an id read later
/// still names the stack it was given for, and a full map shows as a negative id, counted.
#[map]
static STACKS: StackTrace = StackTrace::with_max_entries(1, 0);

/// In-kernel aggregation (`--count-by`, `--sum`, `--hist`): per-CPU counters per key, so a hit
/// costs one hash lookup and two adds, with no atomics. Sized by userspace only when used.
#[map]
static COUNTS: PerCpuHashMap<AggKey, AggValue> = PerCpuHashMap::with_max_entries(1, 0);

/// `COUNTS` for counts keyed by a string's content (`AGG_KEY_STRING`), sized by userspace
/// only for runs counted by a named value. Preallocated: 5.10's verifier refuses a
/// perf_event program that uses a hash map allocated at run time (and warns for the others).
#[map]
static STR_COUNTS: PerCpuHashMap<StrAggKey, AggValue> = PerCpuHashMap::with_max_entries(1, 0);

/// Offsets in scheduler tracepoint records, set by userspace from tracefs.
#[map]
static SCHED_OFFSETS: Array<SchedOffsets> = Array::with_max_entries(1, 0);

#[inline(always)]
fn bump(index: u32) {
    add(index, 1);
}

#[inline(always)]
fn add(index: u32, n: u64) {
    if let Some(counter) = STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU slot, and these program types do not nest on one CPU, so a plain
        // increment does not race.
        unsafe { *counter += n };
    }
}

mod latency;
mod profile;
mod trace;

/// Emits a bare event (slot `LATENCY_SLOT`) with `data` and stack ids from a latency program;
/// false when the ring was full.
#[inline(always)]
fn emit_raw<C: EbpfContext>(ctx: &C, data: &[u64; DATA_WORDS], kstack: i32, ustack: i32) -> bool {
    // SAFETY: index 0 exists; the per-CPU scratch event is ours until this program returns.
    let Some(event) = SCRATCH.get_ptr_mut(0).map(|p| unsafe { &mut (*p).event }) else {
        return false;
    };
    // SAFETY: helpers without preconditions.
    event.time_ns = unsafe { bpf_ktime_get_ns() };
    event.cpu = unsafe { bpf_get_smp_processor_id() };
    event.pid_tgid = bpf_get_current_pid_tgid();
    event.slot = tracer_common::LATENCY_SLOT;
    event.str_bytes = 0;
    event.kstack = kstack;
    event.ustack = ustack;
    event.data = *data;
    zero_words(&mut event.fields);
    event.field_faults = 0;
    output(ctx, event)
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

/// An [`AggKey`] in words.
const KEY_WORDS: usize = core::mem::size_of::<AggKey>() / 8;
const _: () = assert!(core::mem::size_of::<AggKey>() == KEY_WORDS * 8);

/// A key as its words (`AggKey` is `repr(C)`, 8-byte aligned, a whole number of words and free
/// of padding, all plain integers: any words are a valid key).
#[inline(always)]
fn key_words(key: &AggKey) -> &[u64; KEY_WORDS] {
    // SAFETY: as said above.
    unsafe { &*(key as *const AggKey as *const [u64; KEY_WORDS]) }
}

/// Whether two keys are equal, word by word (a derived `==` compares field by field, the comm
/// a byte at a time).
#[inline(always)]
fn same_key(a: &AggKey, b: &AggKey) -> bool {
    let (a, b) = (key_words(a), key_words(b));
    let mut i = 0;
    while i < KEY_WORDS {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// An all-zero [`AggKey`], in nine stores (`AggKey::default()` is two byte-at-a-time memset
/// calls here, 52 rounds of their loop per counted hit; see `zero_words`).
#[inline(always)]
pub(crate) fn zeroed_key() -> AggKey {
    let mut key = core::mem::MaybeUninit::<AggKey>::uninit();
    // SAFETY: `KEY_WORDS` words are a valid key (see `key_words`), zeroed ones included.
    unsafe {
        zero_words(&mut *(key.as_mut_ptr() as *mut [u64; KEY_WORDS]));
        key.assume_init()
    }
}

/// The current task's comm (see `current_comm_words`), as bytes.
#[inline(always)]
fn current_comm(pid_tgid: u64) -> [u8; 16] {
    let words = current_comm_words(pid_tgid);
    // SAFETY: 16 plain bytes either way.
    unsafe { core::mem::transmute::<[u64; 2], [u8; 16]>(words) }
}

/// Stores a comm's words as an event's name: two stores.
#[inline(always)]
fn put_comm(comm: &mut [u8; 16], words: [u64; 2]) {
    let to = comm.as_mut_ptr() as *mut u64;
    // SAFETY: every `[u8; 16]` comm this is given sits at an 8-byte aligned offset of an
    // 8-byte aligned struct (`Event::comm` at 136, `AggKey::comm`), so both words are aligned.
    unsafe {
        core::ptr::write_volatile(to, words[0]);
        core::ptr::write_volatile(to.add(1), words[1]);
    }
}

/// The current task's comm: from this CPU's cache when the same task was the last one seen
/// and no task has been renamed since, else from the helper (then cached).
///
/// A task renamed from another CPU (a write to /proc/PID/comm) while it runs here can leave
/// its old name cached: `task:task_rename` fires just before the name is copied, so a read
/// on this CPU in between sees the new generation with the old name. Exec and prctl rename
/// the running task itself, with no event of it in between.
#[inline(always)]
fn current_comm_words(pid_tgid: u64) -> [u64; 2] {
    if !uses(USES_COMM_CACHE) {
        let comm = bpf_get_current_comm().unwrap_or([0; 16]);
        // SAFETY: 16 plain bytes either way.
        return unsafe { core::mem::transmute::<[u8; 16], [u64; 2]>(comm) };
    }
    // Index 0 exists: the lookup does not fail.
    let Some(cache) = COMM_CACHE.get_ptr_mut(0) else {
        return [0; 2];
    };
    // SAFETY: the per-CPU entry is only touched by this program invocation (these program
    // types do not nest on one CPU).
    let (cache, stamp) = unsafe { (&mut *cache, generation_stamp()) };
    if cache.pid_tgid != pid_tgid || cache.stamp != stamp {
        // Straight into the cache: the helper fills all 16 bytes (zero-padded, or zeroed when
        // it fails).
        // SAFETY: the 16 bytes of the cache's comm are writable map memory.
        unsafe { generated::bpf_get_current_comm(cache.comm.as_mut_ptr() as *mut c_void, 16) };
        cache.pid_tgid = pid_tgid;
        cache.stamp = stamp;
    }
    cache.comm
}

#[raw_tracepoint]
/// `task_rename` (`USES_COMM_CACHE`): a task is being renamed, so every cached comm may be
/// stale.
pub fn comm_renamed(_ctx: RawTracePointContext) -> u32 {
    next_generation();
    0
}

/// Does the current task pass the slot's filters?
#[inline(always)]
pub(crate) fn passes(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> bool {
    refused_by(config, pid_tgid, cpu) == 0
}

/// The filter that refuses the current task (a [`tracer_common::drop`] reason), or 0.
#[inline(always)]
fn refused_by(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> u32 {
    let tgid = (pid_tgid >> 32) as u32;
    if tgid == config.exclude_tgid {
        return drop::SELF;
    }
    if config.tgid != 0 && tgid != config.tgid {
        return drop::PID;
    }
    // The run's scope before the finer filters, so that --debug-bpf names the reason a user
    // would give: a process outside the command's tree is that, whatever its comm.
    if uses(USES_TRACKED) && config.flags & SLOT_FILTER_TRACKED != 0 && !is_tracked(pid_tgid) {
        return drop::UNTRACKED;
    }
    if uses(USES_FILTERS) {
        return refused_by_filters(config, pid_tgid, cpu);
    }
    0
}

/// `--debug-bpf`: says why `slot` dropped a hit of `pid_tgid` on `cpu` (a
/// [`tracer_common::drop`] reason). Behind `USES_DEBUG`, a constant to the verifier, so a
/// normal run verifies and runs none of it. One aya-log call site for every reason, with
/// numbers only (userspace words them, `drop::describe`): each expansion of the macro is
/// hundreds of instructions in every slot program, which every run loads.
#[inline(always)]
fn debug_dropped(slot: u32, reason: u32, pid_tgid: u64, cpu: u32) {
    // Hits outside the run (tracer's own, another process than -p's or the command's tree)
    // are not the run's hits: saying so would bury the lines asked for under every other
    // task's, and flood aya-log's ring, which drops what does not fit.
    if uses(USES_DEBUG) && !matches!(reason, drop::SELF | drop::PID | drop::UNTRACKED) {
        say_dropped(drop::pack(slot, reason, cpu), pid_tgid);
    }
}

/// The logging code, for its three callers (a refused hit, a full ring, a full count map);
/// inlined: LLVM keeps one copy (2,181 instructions for a tracepoint program, against 2,117 as
/// a BPF-to-BPF call), and a program without subprograms is JITed in one pass.
#[inline(always)]
fn say_dropped(what: u64, pid_tgid: u64) {
    debug!(&(), "{} {}", what, pid_tgid);
}

/// Is the current task's process in the `-- COMMAND` set (`TRACKED`, active)? With the task
/// generation kept (`USES_COMM_CACHE`: the tracking programs move it whenever the set
/// changes), the last task found in it on this CPU is remembered, which spares its further
/// hits the hash lookup.
#[inline(always)]
fn is_tracked(pid_tgid: u64) -> bool {
    let cache = match uses(USES_COMM_CACHE) {
        // SAFETY: this CPU's entry; these programs do not nest on one CPU.
        true => TRACKED_CACHE.get_ptr_mut(0).map(|c| unsafe { &mut *c }),
        false => None,
    };
    // Read before the lookup: a change of the set after it makes the entry stale.
    let stamp = match &cache {
        Some(cache) => {
            let stamp = generation_stamp();
            if cache.pid_tgid == pid_tgid && cache.stamp == stamp {
                return true;
            }
            stamp
        }
        None => 0,
    };
    let tgid = (pid_tgid >> 32) as u32;
    // SAFETY: the value is copied out at once; no reference outlives the lookup.
    let active = matches!(unsafe { TRACKED.get(&tgid) }, Some(&state) if state == TRACK_ACTIVE);
    if let (true, Some(cache)) = (active, cache) {
        cache.pid_tgid = pid_tgid;
        cache.stamp = stamp;
    }
    active
}

/// The thread, CPU, cgroup and comm filters: the one that refuses the task, or 0.
#[inline(always)]
fn refused_by_filters(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> u32 {
    if config.tid != 0 && pid_tgid as u32 != config.tid {
        return drop::TID;
    }
    if config.cpu_mask != 0 && (cpu >= 64 || config.cpu_mask & (1u64 << cpu) == 0) {
        return drop::CPU;
    }
    // SAFETY: helper without preconditions.
    if config.cgroup_id != 0 && unsafe { bpf_get_current_cgroup_id() } != config.cgroup_id {
        return drop::CGROUP;
    }
    // The comm is only fetched when a filter needs it: it costs a helper call per hit.
    if config.flags & SLOT_FILTER_COMM != 0 && current_comm(pid_tgid) != config.comm {
        return drop::COMM;
    }
    0
}

/// The id of the current kernel or user stack in `STACKS`, or the helper's negative errno.
#[inline(always)]
fn stack_id<C: StackIdContext>(ctx: &C, wanted: bool, flags: u64) -> i32 {
    if !uses(USES_STACKS) || !wanted {
        return NO_STACK;
    }
    match ctx.get_stackid(&STACKS, flags) {
        Ok(id) => id as i32,
        Err(errno) => errno,
    }
}

/// Fills the common part of the scratch event, or `None` when the hit is filtered out or
/// only counted.
#[inline(always)]
fn begin<C: StackIdContext>(
    ctx: &C,
    slot: u32,
) -> Option<(&'static mut Event, &'static SlotConfig)> {
    // By reference: a copy would take about half of the 512-byte stack.
    let config = CONFIG.get(slot)?;
    if config.flags & SLOT_STOPPED != 0 {
        return None;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    // Another hit of the task this CPU counted last: it passed the filters then, and its key
    // is the same.
    if uses(USES_RUN_COUNT)
        && config.flags & SLOT_RUN_COUNT != 0
        && continues_run(slot, pid_tgid, None)
    {
        bump(stat_hits(slot));
        return None;
    }
    // SAFETY: helper without preconditions.
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let refused = refused_by(config, pid_tgid, cpu);
    if refused != 0 {
        debug_dropped(slot, refused, pid_tgid, cpu);
        return None;
    }
    bump(stat_hits(slot));
    if config.flags & SLOT_COUNT_ONLY != 0 {
        return None;
    }
    // SAFETY: index 0 exists (max_entries 1); the per-CPU value is only touched by this program
    // invocation until it returns.
    let event = unsafe { &mut (*SCRATCH.get_ptr_mut(0)?).event };
    // A counted hit needs only what its key uses: no timestamp (and the comm only when keyed
    // by it, in `aggregate`).
    let counted = config.flags & SLOT_AGGREGATE != 0;
    if !counted {
        // SAFETY: helper without preconditions.
        event.time_ns = unsafe { bpf_ktime_get_ns() };
    }
    event.cpu = cpu;
    event.pid_tgid = pid_tgid;
    event.slot = slot;
    event.str_bytes = 0;
    zero_words(&mut event.fields);
    event.field_faults = 0;
    // The comm is filled in last (output, aggregate): the cache's hit and miss paths then
    // rejoin just before the end, and the verifier checks little of the program twice.
    event.kstack = stack_id(ctx, config.flags & SLOT_STACK_KERNEL != 0, 0);
    event.ustack = stack_id(
        ctx,
        config.flags & SLOT_STACK_USER != 0,
        BPF_F_USER_STACK as u64,
    );
    Some((event, config))
}

/// How often a CPU asks the ring buffer how full it is (a helper call): every this many of its
/// outputs. The reader is woken when a quarter of the ring waits, so up to this many more
/// outputs per CPU before the wakeup are harmless; the helper cost about 7 ns of every hit.
const QUERY_EVERY: u32 = 16;

/// Writes the event and its strings into the output ring (this CPU's perf ring, or the
/// shared BPF ring buffer); false when the ring was full.
#[inline(always)]
fn output<C: EbpfContext>(ctx: &C, event: &mut Event) -> bool {
    put_comm(&mut event.comm, current_comm_words(event.pid_tgid));
    // Masked for the verifier: the strings never pass the area, nor then the buffer.
    let size = Event::SIZE + (event.str_bytes as usize & (STR_BUFFER - 1));
    // SAFETY: a plain aligned read of our own static, volatile for the reason given in `uses`.
    let wakeup = unsafe { core::ptr::read_volatile(&RINGBUF_WAKEUP) };
    if wakeup != 0 {
        // SAFETY: `event` is the head of its `Scratch` (repr(C), this CPU's, used by this
        // invocation alone), so the pointer is the scratch's.
        let scratch = unsafe { &mut *(event as *mut Event as *mut Scratch) };
        let tick = (event.time_ns >> WAKE_TICK_SHIFT) as u32;
        scratch.outputs = scratch.outputs.wrapping_add(1);
        let flags = if tick != scratch.woke_tick {
            scratch.woke_tick = tick;
            BPF_RB_FORCE_WAKEUP
        } else if scratch.outputs % QUERY_EVERY == 0
            && RINGBUF.query(BPF_RB_AVAIL_DATA as u64) >= wakeup
        {
            BPF_RB_FORCE_WAKEUP
        } else {
            BPF_RB_NO_WAKEUP
        };
        if event.str_bytes == 0 {
            // A bare event is copied into the ring by the program, word by word, rather than
            // by the output helper's memcpy (a `rep movsb` into memory the cache has not
            // seen, about 30 ns of each hit, against about 10 for the words).
            let Some(mut entry) = RINGBUF.reserve::<Event>(0) else {
                return false;
            };
            let from = event as *const Event as *const u64;
            let to = entry.as_mut_ptr() as *mut u64;
            let mut i = 0;
            while i < Event::SIZE / 8 {
                // SAFETY: both are `Event`s (8-byte aligned, `Event::SIZE` bytes, a multiple
                // of 8): the scratch one and the ring's reserved one; volatile stores, so
                // that LLVM does not make the loop a memcpy call again.
                unsafe { core::ptr::write_volatile(to.add(i), *from.add(i)) };
                i += 1;
            }
            entry.submit(flags as u64);
            return true;
        }
        // SAFETY: `event` is the head of its `Scratch`, valid for `size_of::<Event>()` bytes
        // and the string buffer behind them, and `size` is at most that.
        let bytes =
            unsafe { core::slice::from_raw_parts(event as *const Event as *const u8, size) };
        return RINGBUF.output::<[u8]>(bytes, flags as u64).is_ok();
    }
    // SAFETY: EVENTS is a PERF_EVENT_ARRAY map definition (`PerfEventArray` is
    // repr(transparent) over it); `event` is the head of its `Scratch`, valid for
    // `size_of::<Event>()` bytes and the string buffer behind them, and `size` is at most that.
    let ret = unsafe {
        bpf_perf_event_output(
            ctx.as_ptr(),
            &EVENTS as *const _ as *mut c_void,
            BPF_F_CURRENT_CPU,
            event as *mut Event as *mut c_void,
            size as u64,
        )
    };
    ret == 0
}

#[inline(always)]
fn emit<C: EbpfContext>(ctx: &C, event: &mut Event) {
    if !output(ctx, event) {
        bump(stat_failed(event.slot));
        debug_dropped(event.slot, drop::RING_FULL, event.pid_tgid, event.cpu);
    }
}

/// The value a [`tracer_common::src`] names in the captured data words and member reads:
/// `size` bytes at `offset`, sign-extended when signed. Fields are naturally aligned, so a
/// value never spans two words.
#[inline(always)]
fn read_src(event: &Event, src: u32) -> u64 {
    let offset = src & 0xff;
    let size = (src >> 8) & 0xff;
    // The mask bounds the word for the verifier: LLVM merges the two adjacent arrays into one
    // indexed load (hoisted above the range checks), which stays inside the event only if
    // the index itself is bounded.
    let word = match (offset / 8) & 15 {
        w @ 0..=7 => event.data[(w & 7) as usize],
        w @ 8..=11 => event.fields[((w - 8) & 3) as usize],
        _ => 0,
    };
    let value = word >> ((offset % 8) * 8);
    if size == 0 || size >= 8 {
        return value;
    }
    let bits = size * 8;
    let value = value & ((1u64 << bits) - 1);
    if src & SRC_SIGNED != 0 && (value >> (bits - 1)) & 1 == 1 {
        value | !((1u64 << bits) - 1)
    } else {
        value
    }
}

/// Whether the hit passes the slot's `--filter`: each atom's result is a bit, and the
/// table's bit at the atoms' bits is the verdict. The bits are never used to address memory
/// (a shift of the table, not an index), so the verifier need not track their values, and
/// the paths through the comparisons prune at the loop's head.
#[inline(always)]
pub(crate) fn filter_passes(event: &Event, slot: u32) -> bool {
    let Some(filter) = FILTERS.get(slot) else {
        return true;
    };
    // SAFETY: a plain aligned read of our own static, volatile as in `uses`.
    let shape = unsafe { core::ptr::read_volatile(&FILTER_SHAPE) };
    let mut bits: u64 = 0;
    let mut k = 0;
    while k < FILTER_ATOMS {
        // The expression's shape is a constant to the verifier: it walks the comparisons the
        // expression has, each as a number or a string, and no other.
        if k as u32 >= shape & 0xff {
            break;
        }
        let string = shape >> (8 + k) & 1 != 0;
        if atom_holds(event, &filter.atoms[k], string) {
            bits |= 1 << k;
        }
        k += 1;
    }
    (filter.table >> (bits & 63)) & 1 != 0
}

/// One comparison of a filter: of strings (`string`), or of numbers.
#[inline(always)]
fn atom_holds(event: &Event, atom: &FilterAtom, string: bool) -> bool {
    if string {
        return string_holds(event, atom);
    }
    let value = match atom.operand {
        operand::VALUE => read_src(event, atom.src),
        operand::PID => u64::from(event.pid()),
        operand::TID => u64::from(event.tid()),
        operand::CPU => u64::from(event.cpu),
        _ => return false,
    };
    let signed = atom.signed_or_empty != 0;
    let (a, b) = (value, atom.value);
    match atom.cmp {
        cmp::EQ => a == b,
        cmp::NE => a != b,
        cmp::LT if signed => (a as i64) < (b as i64),
        cmp::LT => a < b,
        cmp::LE if signed => (a as i64) <= (b as i64),
        cmp::LE => a <= b,
        cmp::GT if signed => (a as i64) > (b as i64),
        cmp::GT => a > b,
        cmp::GE if signed => (a as i64) >= (b as i64),
        cmp::GE => a >= b,
        cmp::AND => a & b != 0,
        _ => false,
    }
}

/// A string comparison: a string the slot read, the comm, or a `char[N]` of the record.
#[inline(always)]
fn string_holds(event: &Event, atom: &FilterAtom) -> bool {
    match atom.operand {
        operand::STRING => {
            let scratch = scratch_of(event);
            // A string that could not be read matches nothing (`!=` included: its value is
            // unknown).
            match entry_of(scratch, atom.src) {
                Some((at, flags, len))
                    if flags & (str_flag::FAULT | str_flag::NO_ROOM | str_flag::ARRAY) == 0 =>
                {
                    glob_matches::<STR_BUFFER, GLOB_STRLEN>(
                        &scratch.area,
                        at + STR_ENTRY,
                        len,
                        atom,
                    )
                }
                _ => false,
            }
        }
        operand::COMM => {
            let comm = current_comm(event.pid_tgid);
            glob_matches::<16, 16>(&comm, 0, comm.len(), atom)
        }
        operand::RECORD_CHARS => {
            // SAFETY: the words are plain bytes, 8-byte aligned; u8 has no alignment.
            let head = unsafe { &*(&event.data as *const [u64; DATA_WORDS] as *const [u8; 64]) };
            let start = (atom.src & 0xff) as usize;
            let len = ((atom.src >> 8) & 0xff) as usize;
            glob_matches::<64, 64>(head, start, len, atom)
        }
        _ => false,
    }
}

/// Runs the atom's glob automaton over `text` from `start`, up to `len` bytes, a NUL or `MAX`
/// bytes (the verifier walks the loop once per byte it may take); `cmp::NE` inverts. `N` is a
/// power of two: the index is masked into the buffer (the verifier needs its bound;
/// `start + len <= N` anyway).
#[inline(always)]
fn glob_matches<const N: usize, const MAX: usize>(
    text: &[u8; N],
    start: usize,
    len: usize,
    atom: &FilterAtom,
) -> bool {
    let mut state: u32 = 0;
    let mut accepts = atom.signed_or_empty != 0;
    let mut i = 0;
    while i < MAX {
        if i >= len {
            break;
        }
        let byte = text[(start + i) & (N - 1)];
        if byte == 0 {
            break;
        }
        let Some(row) = GLOBS.get(atom.glob + state) else {
            accepts = false;
            break;
        };
        let next = row[byte as usize];
        accepts = next & GLOB_ACCEPT != 0;
        state = u32::from(next & !GLOB_ACCEPT);
        if state == u32::from(GLOB_DEAD) {
            break;
        }
        i += 1;
    }
    accepts != (atom.cmp == cmp::NE)
}

/// Whether the slot's `--filter` refuses the hit (counted as filtered).
#[inline(always)]
fn filtered_out(event: &Event, config: &SlotConfig) -> bool {
    if uses(USES_VALUE_FILTER)
        && config.flags & SLOT_VALUE_FILTER != 0
        && !filter_passes(event, event.slot)
    {
        bump(stat_filtered(event.slot));
        return true;
    }
    false
}

/// Counts a hit in `COUNTS` under the key parts the slot asks for; a full map counts as a
/// failed output (reported as not counted).
#[inline(always)]
fn aggregate(event: &mut Event, config: &SlotConfig) {
    // Read before the key's comm: a rename after it ends the run this hit may begin.
    let stamp = generation_stamp();
    let agg = config.agg;
    let mut key = zeroed_key();
    key.slot = event.slot;
    key.kstack = event.kstack;
    key.ustack = event.ustack;
    if config.flags & SLOT_STACK_AT_ENTRY != 0 {
        key.entry_ret = event.data[word::ENTRY_RET];
    }
    if agg & AGG_CPU != 0 {
        key.cpu = event.cpu;
    }
    if agg & AGG_PID != 0 {
        key.pid = event.pid();
    }
    if agg & AGG_TID != 0 {
        key.tid = event.tid();
    }
    if agg & AGG_COMM != 0 {
        put_comm(&mut key.comm, current_comm_words(event.pid_tgid));
    }
    if agg & AGG_CGROUP != 0 {
        // SAFETY: helper without preconditions.
        key.cgroup = unsafe { bpf_get_current_cgroup_id() };
    }
    if uses(USES_AGG_VALUE) && agg & AGG_KEY_VALUE != 0 {
        key.value = read_src(event, config.key_src);
    }
    let value = if uses(USES_AGG_VALUE) && agg & (AGG_SUM | AGG_HIST) != 0 {
        read_src(event, config.val_src)
    } else {
        0
    };
    if uses(USES_AGG_VALUE) && agg & AGG_HIST != 0 {
        let signed = config.val_src & SRC_SIGNED != 0;
        key.bucket = if config.hist_step != 0 {
            tracer_common::linear_bucket(
                value,
                signed,
                config.hist_min,
                config.hist_step,
                config.hist_buckets,
            )
        } else if signed && (value as i64) < 0 {
            AGG_BUCKET_NEGATIVE
        } else {
            tracer_common::log2_bucket(value)
        };
    }
    let keyed = uses(USES_RUN_KEYED) && config.flags & SLOT_RUN_KEYED != 0;
    if keyed || uses(USES_RUN_COUNT) && config.flags & SLOT_RUN_COUNT != 0 {
        if let Some(run) = RUN_COUNT.get_ptr_mut(0) {
            // SAFETY: this CPU's entry; these programs do not nest on one CPU.
            let run = unsafe { &mut *run };
            // A task's run continues in `begin`; a key's, here, once the key is known.
            if keyed && run.count != 0 && same_key(&run.key, &key) {
                run.count += 1;
                return;
            }
            if run.count != 0 {
                add_count(&run.key, run.count, 0);
            }
            begin_run(run, &key, event.pid_tgid, stamp);
            return;
        }
    }
    if uses(USES_STRINGS) && agg & AGG_KEY_STRING != 0 {
        count_string(event, &key, config.key_src, value);
        return;
    }
    add_count(&key, 1, value);
}

/// Counts the hit under `key` and the content of its string read `read` (`AGG_KEY_STRING`).
#[inline(always)]
fn count_string(event: &mut Event, key: &AggKey, read: u32, sum: u64) {
    let scratch = scratch(event);
    scratch.str_key.key = *key;
    // SAFETY: the text is `KEY_STRLEN` (a multiple of 8) plain bytes at an 8-byte aligned
    // offset of the `repr(C)` key, which the scratch aligns.
    zero_words(unsafe { &mut *(scratch.str_key.text.as_mut_ptr() as *mut [u64; KEY_STRLEN / 8]) });
    let mut flags = str_flag::FAULT;
    if let Some((at, entry_flags, len)) = entry_of(scratch, read) {
        flags = entry_flags;
        let len = match len > KEY_STRLEN {
            true => {
                flags |= str_flag::TRUNCATED;
                KEY_STRLEN
            }
            false => len & (2 * KEY_STRLEN - 1),
        };
        // SAFETY: both buffers are ours; `len` is at most KEY_STRLEN, the key text's size,
        // and the source range lies in the string buffer (`at` below STR_AREA).
        unsafe {
            let src = scratch.area.as_ptr().add(at + STR_ENTRY) as *const c_void;
            let dst = scratch.str_key.text.as_mut_ptr() as *mut c_void;
            generated::bpf_probe_read_kernel(dst, len as u32, src);
        }
    }
    scratch.str_key.key.value = u64::from(flags);
    add_cell(&STR_COUNTS, &scratch.str_key, key.slot, 1, sum);
}

/// Counts the hit in this CPU's run when it continues it: the same slot, task and generation,
/// and with `ip` the same key value (`SLOT_RUN_AT_IP`: the trapping instruction). A CPU's
/// run before its first has stamp 0, which no generation matches.
#[inline(always)]
fn continues_run(slot: u32, pid_tgid: u64, ip: Option<u64>) -> bool {
    let Some(run) = RUN_COUNT.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: this CPU's entry; these programs do not nest on one CPU.
    let run = unsafe { &mut *run };
    if run.key.slot != slot
        || run.pid_tgid != pid_tgid
        || run.stamp != generation_stamp()
        || ip.is_some_and(|ip| run.key.value != ip)
    {
        return false;
    }
    run.count += 1;
    true
}

/// Counts a breakpoint hit in this CPU's run when it continues it (`SLOT_RUN_AT_IP`): the same
/// slot, task, task generation and trapping instruction as the run's. The filters it would
/// pass and the key it would build are then the run's, so it skips them, the scratch event
/// and the key's compare (`tracer watch --summary`: a thread writing in a loop).
#[inline(always)]
fn continues_run_at_ip(ctx: &PerfEventContext, slot: u32) -> bool {
    let Some(config) = CONFIG.get(slot) else {
        return false;
    };
    if config.flags & (SLOT_RUN_AT_IP | SLOT_STOPPED) != SLOT_RUN_AT_IP {
        return false;
    }
    // SAFETY: a plain load of the context's registers, which the verifier rewrites into a
    // load from the real pt_regs (see `on_perf_event`).
    let ip = unsafe { core::ptr::read_volatile(&(*ctx.ctx).regs.rip) };
    if !continues_run(slot, bpf_get_current_pid_tgid(), Some(ip)) {
        return false;
    }
    bump(stat_hits(slot));
    true
}

/// Starts a run of `key` with this hit, the previous run being in `COUNTS` already. `ended`
/// moves first and `ended_check` last, so a reader copying the entry meanwhile sees them
/// differ (volatile: the stores stay in this order).
#[inline(always)]
fn begin_run(run: &mut RunCount, key: &AggKey, pid_tgid: u64, stamp: u64) {
    let ended = run.ended + 1;
    // SAFETY: `run` is a valid, exclusive reference to this CPU's entry.
    unsafe {
        core::ptr::write_volatile(&mut run.ended, ended);
        core::ptr::write_volatile(&mut run.pid_tgid, pid_tgid);
        core::ptr::write_volatile(&mut run.stamp, stamp);
        core::ptr::write_volatile(&mut run.count, 1);
        core::ptr::write_volatile(&mut run.key, *key);
        core::ptr::write_volatile(&mut run.ended_check, ended);
    }
}

/// Adds `count` hits and `sum` to `key`'s cell; hits that find `COUNTS` full are counted as
/// failed.
#[inline(always)]
fn add_count(key: &AggKey, count: u64, sum: u64) {
    add_cell(&COUNTS, key, key.slot, count, sum);
}

/// Adds `count` hits and `sum` to `key`'s cell of a count map (`COUNTS`, `STR_COUNTS`); hits
/// that find it full are counted as failed for `slot`.
#[inline(always)]
fn add_cell<K>(map: &PerCpuHashMap<K, AggValue>, key: &K, slot: u32, count: u64, sum: u64) {
    match map.get_ptr_mut(key) {
        Some(cell) => {
            // SAFETY: a per-CPU value of this CPU; these programs do not nest on one CPU.
            unsafe {
                (*cell).count += count;
                (*cell).sum = (*cell).sum.wrapping_add(sum);
            }
        }
        None => {
            let cell = AggValue { count, sum };
            if map.insert(key, &cell, 0).is_err() {
                add(stat_failed(slot), count);
                debug_dropped(slot, drop::MAP_FULL, bpf_get_current_pid_tgid(), 0);
            }
        }
    }
}

/// Emits the event, or counts it when the slot aggregates.
#[inline(always)]
fn finish<C: EbpfContext>(ctx: &C, event: &mut Event, config: &SlotConfig) {
    if config.flags & SLOT_AGGREGATE != 0 {
        if uses(USES_AGGREGATE) {
            aggregate(event, config);
        }
    } else if uses(USES_STREAM) {
        emit(ctx, event);
    }
}

/// Read `read`'s first string entry in the area: its offset (masked into the area), flag bits
/// and length; `None` when the read wrote none.
#[inline(always)]
fn entry_of(scratch: &Scratch, read: u32) -> Option<(usize, u8, usize)> {
    let at = scratch.first[(read as usize) & (STR_READS - 1)];
    if at == NO_ENTRY {
        return None;
    }
    let at = at as usize & (STR_AREA - 1);
    let len = u16::from_ne_bytes([scratch.area[at + 2], scratch.area[at + 3]]) as usize;
    Some((at, scratch.area[at + 1], len))
}

/// The area's next free offset. Kept in the scratch map, not in a register: a value loaded
/// from map memory is unknown to the verifier, so every path through a string read (read,
/// cut, failed, no room) ends in the same state and the next read is verified once, not once
/// per path before it (176,717 instructions verified for two reads and an array, held in a
/// local; see `put_string`).
#[inline(always)]
fn used(scratch: &Scratch) -> usize {
    // SAFETY: a plain aligned read of map memory; volatile so that LLVM keeps the load.
    unsafe { core::ptr::read_volatile(&scratch.used) as usize }
}

/// Appends a string entry for read `read`: the string at `ptr` (up to `strlen` bytes, marked
/// truncated when longer), or a failed one. False when the area is full: the entry then says
/// so, if even its header fits.
#[inline(never)]
fn put_string(scratch: &mut Scratch, read: u8, ptr: u64, user: bool, strlen: u32) -> bool {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return false;
    }
    // Masked, not only compared: the mask is what older verifiers keep (see `read_fields`).
    let at = at & (STR_AREA - 1);
    // One byte more than kept, to tell a string of exactly `strlen` bytes from a longer one.
    let size = strlen + 2;
    // SAFETY: the probe-read helpers validate the source address themselves and fail with a
    // negative errno instead of faulting; the destination is inside the buffer: `at` is
    // below STR_AREA and `size` at most STRLEN_MAX + 2 (`STR_BUFFER` has room for both).
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void;
        let src = ptr as *const c_void;
        match user {
            true => generated::bpf_probe_read_user_str(dst, size, src),
            false => generated::bpf_probe_read_kernel_str(dst, size, src),
        }
    };
    let (len, flags) = match n {
        n if n < 0 => (0, str_flag::FAULT),
        // An empty string: the kernels of Debian's 5.10, 6.1 and 6.12 return 0 for one
        // (strncpy_from_user_nofault adds the NUL only to a count above 0), 7.3 and 6.18
        // return 1; `""` read as a fault there.
        0 => (0, 0),
        n if n as u32 - 1 > strlen => (strlen as usize, str_flag::TRUNCATED),
        n => (n as usize - 1, 0),
    };
    let fits = at + STR_ENTRY + len <= STR_AREA;
    let (len, flags) = match fits {
        true => (len, flags),
        false => (0, str_flag::NO_ROOM),
    };
    put_header(scratch, at, read, flags, len);
    scratch.used = (at + STR_ENTRY + len) as u32;
    fits
}

/// The return value as a buffer length: 0 for an error.
#[inline(always)]
fn event_ret(scratch: &Scratch) -> u64 {
    let ret = scratch.event.data[word::RETURN] as i64;
    ret.max(0) as u64
}

/// Appends a buffer entry for read `read` (`tracer trace`): the first of the `len` bytes at
/// user address `ptr`, at most `buflen` (and [`STRLEN_MAX`]), marked truncated when cut.
#[inline(always)]
fn put_buffer(scratch: &mut Scratch, read: u8, ptr: u64, len: u64, buflen: u32) {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return;
    }
    // Masked through a volatile read, as `size` below: the comparison above lets LLVM drop a
    // plain mask, and 5.10's verifier then saw the destination unbounded.
    // SAFETY: a read of a local.
    let at = unsafe { core::ptr::read_volatile(&at) } & (STR_AREA - 1);
    let keep = (buflen as u64).min(STRLEN_MAX as u64);
    let (size, flags) = match len > keep {
        true => (keep, str_flag::TRUNCATED),
        false => (len, 0),
    };
    // Bounded for the verifier: at most STRLEN_MAX (a power of two), so the mask keeps it.
    let size = (size as usize) & (2 * STRLEN_MAX as usize - 1);
    let size = size.min(STRLEN_MAX as usize);
    let fits = at + STR_ENTRY + size <= STR_AREA;
    let (size, flags) = match fits {
        true => (size, flags),
        false => (0, str_flag::NO_ROOM),
    };
    // Masked again through a volatile read: LLVM drops a mask it can prove redundant (size is
    // at most `keep`), and 5.10's verifier does not learn a bound from a comparison of two
    // registers (`len > keep`), so without it the size was unbounded there and the program
    // refused. The value is unchanged.
    // SAFETY: a read of a local.
    let size = unsafe { core::ptr::read_volatile(&size) } & (2 * STRLEN_MAX as usize - 1);
    // SAFETY: the helper validates the source address itself and fails with a negative
    // errno instead of faulting; the destination is inside the buffer: `at` below STR_AREA
    // and `size` below 2 * STRLEN_MAX (`Scratch` has room for both).
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void;
        generated::bpf_probe_read_user(dst, size as u32, ptr as *const c_void)
    };
    let (size, flags) = match n {
        0 => (size, flags),
        _ => (0, str_flag::FAULT),
    };
    put_header(scratch, at, read, flags, size);
    scratch.used = (at + STR_ENTRY + size) as u32;
}

/// Appends an entry with no bytes (an array's start or end, a failed element), if it fits.
#[inline(always)]
fn put_mark(scratch: &mut Scratch, read: u8, flags: u8) -> bool {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return false;
    }
    put_header(scratch, at, read, flags, 0);
    scratch.used = (at + STR_ENTRY) as u32;
    true
}

/// Writes a string entry's header at `at` (below `STR_AREA`).
#[inline(always)]
fn put_header(scratch: &mut Scratch, at: usize, read: u8, flags: u8, len: usize) {
    let at = at & (STR_AREA - 1);
    let len = (len as u16).to_ne_bytes();
    scratch.area[at] = read;
    scratch.area[at + 1] = flags;
    scratch.area[at + 2] = len[0];
    scratch.area[at + 3] = len[1];
}

/// A `char **` array (argv, envp): a header entry, then each element's string up to
/// `ARRAY_ELEMENTS`, and a `MORE` entry when there were more.
#[inline(never)]
fn put_array(scratch: &mut Scratch, read: u8, ptr: u64, user: bool, strlen: u32) {
    if !put_mark(scratch, read, str_flag::ARRAY) {
        return;
    }
    let mut i = 0;
    while i <= ARRAY_ELEMENTS {
        let slot = ptr.wrapping_add(8 * u64::from(i));
        let Some(element) = read_sized(slot, 8, user) else {
            put_mark(scratch, read, str_flag::FAULT);
            return;
        };
        if element == 0 {
            return;
        }
        if i == ARRAY_ELEMENTS {
            put_mark(scratch, read, str_flag::MORE);
            return;
        }
        if !put_string(scratch, read, element, user, strlen) {
            return;
        }
        i += 1;
    }
}

/// Reads the slot's strings (`SlotConfig::strs`) into the event's string area. `record`
/// gives the pointer at a tracepoint record's byte offset.
#[inline(always)]
fn read_strings<const ARRAYS: bool, const BUFFERS: bool, const READS: usize>(
    event: &mut Event,
    config: &SlotConfig,
    record: impl Fn(&Event, u32) -> u64,
) {
    // 1..=STRLEN_MAX without a branch (userspace writes that range): one verifier state.
    let strlen = ((config.strlen.wrapping_sub(1)) & (STRLEN_MAX - 1)) + 1;
    scratch(event).used = 0;
    // The verifier walks as many reads as this run's slots may have: one, or all.
    let reads = match uses(USES_STR_MANY) {
        true => READS,
        false => 1,
    };
    let mut k = 0;
    while k < reads {
        let read: StrRead = config.strs[k];
        if read.from == str_from::NONE {
            break;
        }
        // Index the captured words, not the context: the verifier refuses ctx accesses at a
        // runtime offset, while a bounded index into map memory is fine. Masked only, as in
        // `read_fields`.
        let ptr = match read.from {
            str_from::ARG => event.data[(read.at & 7) as usize],
            str_from::FIELD => event.fields[(read.at & 3) as usize],
            str_from::RETURN => event.data[word::RETURN],
            _ => record(event, read.at),
        };
        let user = match read.memory {
            str_mem::USER => true,
            str_mem::KERNEL => false,
            _ => ptr < KERNEL_SPACE_START,
        };
        let scratch = scratch(event);
        let at = used(scratch);
        scratch.first[k] = match at + STR_ENTRY <= STR_AREA {
            true => at as u32,
            false => NO_ENTRY,
        };
        if BUFFERS && uses(USES_TRACE) && read.len_from != 0 {
            let (len, keep) = match read.len_from {
                buffer_len::RETURN => (event_ret(scratch), config.buflen),
                // A structure is read whole, whatever -s says.
                from if from >= buffer_len::FIXED => {
                    (u64::from(from - buffer_len::FIXED) * 4, STRLEN_MAX)
                }
                from => (
                    scratch.event.data[((from - buffer_len::ARG0) & 7) as usize],
                    config.buflen,
                ),
            };
            put_buffer(scratch, k as u8, ptr, len, keep);
        } else if ARRAYS && uses(USES_STR_ARRAYS) && read.array != 0 {
            put_array(scratch, k as u8, ptr, user, strlen);
        } else {
            put_string(scratch, k as u8, ptr, user, strlen);
        }
        k += 1;
    }
    // Reads past the last have no entry.
    let scratch = scratch(event);
    while k < STR_READS {
        scratch.first[k] = NO_ENTRY;
        k += 1;
    }
    event.str_bytes = used(scratch) as i32;
}

/// `size` bytes at `addr` from user or kernel memory, zero-extended; `None` when unreadable.
#[inline(always)]
fn read_sized(addr: u64, size: u8, user: bool) -> Option<u64> {
    // SAFETY: the probe-read helpers validate the source address themselves and fail with a
    // negative errno instead of faulting.
    unsafe {
        macro_rules! read {
            ($t:ty) => {
                if user {
                    bpf_probe_read_user(addr as *const $t)
                        .ok()
                        .map(|v| v as u64)
                } else {
                    bpf_probe_read_kernel(addr as *const $t)
                        .ok()
                        .map(|v| v as u64)
                }
            };
        }
        match size {
            1 => read!(u8),
            2 => read!(u16),
            4 => read!(u32),
            _ => read!(u64),
        }
    }
}

/// The slot's struct member reads (`FUNC(how->flags)`): each pointer argument plus the
/// member's offset, into `event.fields`; a failed read sets its bit in `field_faults`.
#[inline(always)]
fn read_fields(event: &mut Event, config: &SlotConfig) {
    // Unrolled with constant indexes: no bounds checks (whose panic path the verifier
    // refuses) and no loop for it to walk.
    macro_rules! field {
        ($k:literal) => {
            let read = config.fields[$k];
            // The index is only masked, not also compared: LLVM drops a mask it can prove
            // redundant after a comparison, and older verifiers (6.1) lose the comparison's
            // bound when the register is spilled and filled in between. Userspace writes
            // argument indexes 0..5; the words past them are ours, not out of bounds.
            if read.size != 0 {
                let base = event.data[(read.arg & 7) as usize];
                let user = read.flags & FIELD_USER != 0
                    || (read.flags & FIELD_AUTO != 0 && base < KERNEL_SPACE_START);
                match read_sized(base.wrapping_add(read.offset as u64), read.size, user) {
                    Some(value) => event.fields[$k] = value,
                    None => event.field_faults |= 1 << $k,
                }
            }
        };
    }
    field!(0);
    field!(1);
    field!(2);
    field!(3);
    const _: () = assert!(FIELD_READS == 4, "one field! per read");
}

/// x86-64's `struct pt_regs`, copied word by word into `saved` (its byte offset / 8 is the
/// index). The verifier refuses context loads at a runtime offset; rather than a helper call
/// per argument (`bpf_probe_read_kernel`, as libbpf's usdt.bpf.h does), 21 constant-offset
/// loads into map memory, which can be indexed at run time (and a sixth fewer instructions
/// to verify).
#[inline(always)]
fn save_registers(ctx: &ProbeContext, saved: &mut [u64; 32]) {
    let regs = ctx.regs;
    macro_rules! save {
        ($($index:literal => $field:ident),*) => {
            $(
                // SAFETY: `regs` is this kprobe-type program's context, a `struct pt_regs`:
                // a load at a constant offset inside it, which the verifier checks as such.
                saved[$index] = unsafe { core::ptr::addr_of!((*regs).$field).read() };
            )*
        };
    }
    save!(0 => r15, 1 => r14, 2 => r13, 3 => r12, 4 => rbp, 5 => rbx, 6 => r11, 7 => r10,
        8 => r9, 9 => r8, 10 => rax, 11 => rcx, 12 => rdx, 13 => rsi, 14 => rdi, 15 => orig_rax,
        16 => rip, 17 => cs, 18 => eflags, 19 => rsp, 20 => ss);
}

/// A USDT probe's arguments, as `USDT_ARGS[index]` describes its note's specs: a constant (an
/// unreadable argument is the constant 0), a register, or user memory at a register plus a
/// displacement (read as 8 bytes: an argument in the last bytes of a mapping reads as
/// failed). A failed memory read sets bit `8 + i` of `faults` (`Event::field_faults`: printed
/// as `?`).
///
/// Every path leaves each word an unknown number (never a constant such as 0), and the fault
/// bits go to `faults` in map memory, which the verifier does not track: the paths through one
/// argument then end in the same state and the verifier checks the next argument once, not
/// once per path so far (38,827 instructions to verify, against 1,430 for a plain uprobe
/// slot, before).
#[inline(always)]
pub(crate) fn usdt_args(
    ctx: &ProbeContext,
    index: u32,
    args: &mut [u64; word::ARGS],
    faults: &mut u32,
) {
    let Some(spec) = USDT_ARGS.get(index) else {
        return;
    };
    let Some(saved) = USDT_REGS.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: index 0 exists (max_entries 1); the per-CPU value is only touched by this
    // program invocation until it returns.
    let saved = unsafe { &mut *saved };
    save_registers(ctx, saved);
    let mut i = 0;
    while i < word::ARGS {
        let arg = spec.args[i];
        let mut value = arg.value as u64;
        if arg.kind == USDT_REG || arg.kind == USDT_MEM {
            // Masked, not compared: the verifier needs the index bounded; userspace writes
            // pt_regs offsets (0..160), so the words past them are ours, not out of bounds.
            value = saved[(arg.reg as usize >> 3) & 31];
            if arg.kind == USDT_MEM {
                // Eight bytes whatever the size, zero-extended from it by shifts: one helper
                // call per argument rather than one per size.
                let addr = value.wrapping_add(arg.value as u64);
                // SAFETY: the helper validates the user address itself and fails instead of
                // faulting.
                match unsafe { bpf_probe_read_user(addr as *const u64) } {
                    Ok(read) => {
                        let unused = (64 - 8 * (arg.size as u64 & 15).clamp(1, 8)) & 63;
                        value = read << unused >> unused;
                    }
                    Err(_) => *faults |= 1 << (8 + i),
                }
            }
        }
        args[i] = value;
        i += 1;
    }
}

/// The end of a kernel or user probe's hit, its argument words in place: the member reads and
/// strings, the value filter, then the output or the count.
#[inline(always)]
fn read_then_finish<C: EbpfContext>(ctx: &C, event: &mut Event, config: &SlotConfig) {
    if uses(USES_FIELDS) {
        read_fields(event, config);
    }
    if uses(USES_STRINGS) && config.strs[0].from != str_from::NONE {
        read_strings::<true, true, STR_READS>(event, config, |_, _| 0);
    }
    if filtered_out(event, config) {
        return;
    }
    finish(ctx, event, config);
}

/// Kprobe, kretprobe, uprobe and uretprobe slots (all BPF_PROG_TYPE_KPROBE).
#[inline(always)]
fn on_probe(ctx: &ProbeContext, slot: u32) {
    let Some((event, config)) = begin(ctx, slot) else {
        return;
    };
    if uses(USES_USDT) && config.flags & SLOT_USDT != 0 {
        let mut args = [0u64; word::ARGS];
        usdt_args(ctx, slot, &mut args, &mut event.field_faults);
        let mut i = 0;
        while i < word::ARGS {
            event.data[word::ARG0 + i] = args[i];
            i += 1;
        }
    } else {
        let mut i = 0;
        while i < word::ARGS {
            event.data[word::ARG0 + i] = ctx.arg::<u64>(i).unwrap_or(0);
            i += 1;
        }
    }
    event.data[word::RETURN] = if config.flags & SLOT_RETURN != 0 {
        RetProbeContext::new(ctx.regs as *mut c_void).ret::<u64>()
    } else {
        0
    };
    // The last word: at a function's first instruction, the return address at the stack
    // pointer (the direct caller, which a frame-pointer walk from there skips).
    event.data[word::ENTRY_RET] = match config.flags & SLOT_STACK_AT_ENTRY {
        0 => 0,
        // SAFETY: `regs` is the probe's context (a fixed-offset load the verifier checks);
        // the probe-read helper fails cleanly on a bad user address.
        _ => unsafe { bpf_probe_read_user((*ctx.regs).rsp as *const u64) }.unwrap_or(0),
    };
    read_then_finish(ctx, event, config);
}

/// The record's first `DATA_WORDS` words, or with `SLOT_RECORD_LEN` its first `record_len`
/// bytes (the rest zero). Through the probe-read helper, not plain context
/// loads: the kernel refuses to attach a tracepoint program whose context reads reach past the
/// event's record (`max_ctx_offset`), and most records are shorter than 64 bytes. Records
/// shorter than that sit in the per-CPU trace buffer (or, for syscalls, a 64-byte record on
/// the kernel stack), so the tail read stays in kernel memory.
#[inline(always)]
fn read_record(ctx: &TracePointContext, event: &mut Event, config: &SlotConfig) {
    // Only the part of the record the run uses, when userspace says which (a getppid record
    // has nothing printed; the helper's call was about 6% of each streamed hit).
    // Bounded as the 64-bit value it is loaded as: a bound on a narrowed copy would leave the
    // register the helper is given unbounded for the verifier.
    let mut len = (DATA_WORDS * 8) as u64;
    if config.flags & SLOT_RECORD_LEN != 0 {
        zero_words(&mut event.data);
        len = config.record_len;
        if len > (DATA_WORDS * 8) as u64 {
            len = (DATA_WORDS * 8) as u64;
        }
        if len == 0 {
            return;
        }
    }
    // Straight into the event, which the helper zeroes when the read fails.
    // SAFETY: the event's data words are writable map memory of that size; the helper fails
    // cleanly on a bad source.
    unsafe {
        generated::bpf_probe_read_kernel(
            event.data.as_mut_ptr() as *mut c_void,
            len as u32,
            ctx.as_ptr(),
        )
    };
}

/// Tracepoint slots: the first bytes of the record, decoded in userspace from its format file.
#[inline(always)]
fn on_tracepoint(ctx: &TracePointContext, slot: u32) {
    let Some((event, config)) = begin(ctx, slot) else {
        return;
    };
    // A counted hit reads the record only when a key or value comes from it.
    let counted = config.flags & SLOT_AGGREGATE != 0;
    if !counted
        || config.agg & (AGG_KEY_VALUE | AGG_KEY_STRING | AGG_SUM | AGG_HIST) != 0
        || config.flags & SLOT_VALUE_FILTER != 0
    {
        read_record(ctx, event, config);
    }
    // Userspace asks for strings only when they are printed or filtered on.
    if uses(USES_STRINGS) && config.strs[0].from != str_from::NONE {
        // Syscall records keep their pointers in the words just read (streamed events always
        // read them); a pointer further in is read through the helper (the verifier refuses
        // context loads at a runtime offset).
        read_strings::<true, true, STR_READS>(event, &config, |event, offset| match offset {
            0..=63 => event.data[((offset / 8) & 7) as usize],
            // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly.
            offset => unsafe { ctx.read_at::<u64>(offset as usize) }.unwrap_or(0),
        });
    }
    if filtered_out(event, &config) {
        return;
    }
    finish(ctx, event, &config);
}

/// The syscall a raw `sys_enter` (its second argument) or `sys_exit` (the registers'
/// `orig_ax`) hit is of; `u64::MAX` when the registers cannot be read.
#[inline(always)]
fn syscall_nr(ctx: &RawTracePointContext, regs: u64, exit: bool) -> u64 {
    match exit {
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        true => unsafe { bpf_probe_read_kernel((regs + PT_REGS_ORIG_AX) as *const u64) }
            .unwrap_or(u64::MAX),
        false => ctx.arg(1),
    }
}

/// Whether the syscall came from 32-bit code (its `cs`), whose numbers are another table's.
#[inline(always)]
fn compat(regs: u64) -> bool {
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let cs = unsafe { bpf_probe_read_kernel((regs + PT_REGS_CS) as *const u64) }.unwrap_or(0);
    cs == USER32_CS
}

/// Raw tracepoint slots on `sys_enter`/`sys_exit` (counting a `syscalls:` tracepoint only):
/// the kernel calls them with the registers and the syscall id or return value, with no trace
/// record to fill. They run for every syscall, so a hit of another syscall leaves at the first
/// comparison.
#[inline(always)]
fn on_raw_syscall(ctx: &RawTracePointContext, slot: u32) {
    // Raw slots only count: a run that does not count has none (and no code here to verify).
    if !uses(USES_AGGREGATE) {
        return;
    }
    let Some(config) = CONFIG.get(slot) else {
        return;
    };
    let regs: u64 = ctx.arg(0);
    if syscall_nr(ctx, regs, config.flags & SLOT_RAW_SYS_EXIT != 0) != config.raw_syscall as u64 {
        return;
    }
    // 32-bit code numbers its syscalls differently: not this one.
    if compat(regs) {
        return;
    }
    let Some((event, config)) = begin(ctx, slot) else {
        return;
    };
    aggregate(event, &config);
}

/// Breakpoint and software-event slot: the interrupted instruction pointer, the watched
/// address (`bp_addr`), and the 8 bytes at it after the access (data breakpoints trap after
/// the instruction, so this is the new value).
#[inline(always)]
fn on_perf_event(ctx: &PerfEventContext, slot: u32) {
    if uses(USES_RUN_KEYED) && continues_run_at_ip(ctx, slot) {
        return;
    }
    let Some((event, config)) = begin(ctx, slot) else {
        return;
    };
    let data = ctx.ctx;
    zero_words(&mut event.data);
    // SAFETY: ctx.ctx is this invocation's context. Its fields must be read with plain loads:
    // the verifier rewrites `ctx->regs.*` and `ctx->addr` into loads from the real pt_regs
    // and sample data (a probe-read would see the kernel's internal struct instead). The
    // probe-read of the watched address fails cleanly when it is not readable.
    unsafe {
        let ip = core::ptr::read_volatile(&(*data).regs.rip);
        let addr = core::ptr::read_volatile(&(*data).addr);
        event.data[word::WATCH_IP] = ip;
        event.data[word::WATCH_ADDR] = addr;
        // Counted hits (`tracer watch --summary`) are keyed by thread and ip: no value.
        if addr != 0 && config.flags & SLOT_AGGREGATE == 0 {
            let value = if config.flags & SLOT_VALUE_KERNEL != 0 {
                bpf_probe_read_kernel(addr as *const u64)
            } else {
                bpf_probe_read_user(addr as *const u64)
            };
            if let Ok(v) = value {
                event.data[word::WATCH_VALUE] = v;
                event.data[word::WATCH_VALUE_READ] = 1;
            }
        }
        // An execute breakpoint on a function's first instruction traps before the function
        // pushed its frame: the return address at the stack pointer is its direct caller,
        // which the frame-pointer walk skips (the kernel puts it back for uprobes only).
        if config.flags & SLOT_STACK_AT_ENTRY != 0 {
            let sp = core::ptr::read_volatile(&(*data).regs.rsp);
            event.data[word::ENTRY_RET] = bpf_probe_read_user(sp as *const u64).unwrap_or(0);
        }
    }
    finish(ctx, event, &config);
}

/// Slots of the program types whose return value only matters to tracer's own event (a kprobe
/// or uprobe of the PMU is not shared with other users; raw tracepoints and perf events ignore
/// it): 0 spares the kernel building a perf sample. Tracepoints are `tracepoint_slots!`.
macro_rules! slots {
    ($attr:ident, $ctx:ty, $handler:ident, $base:expr; $($name:ident = $index:literal),*) => {$(
        #[$attr]
        pub fn $name(ctx: $ctx) -> u32 {
            $handler(&ctx, $base + $index);
            0
        }
    )*};
}

slots!(kprobe, ProbeContext, on_probe, 0;
    kp_0 = 0, kp_1 = 1, kp_2 = 2, kp_3 = 3, kp_4 = 4, kp_5 = 5, kp_6 = 6, kp_7 = 7,
    kp_8 = 8, kp_9 = 9, kp_10 = 10, kp_11 = 11, kp_12 = 12, kp_13 = 13, kp_14 = 14, kp_15 = 15);

/// The slot a program attached through a BPF perf link serves: the link's attach cookie
/// (Linux 5.15+), so one program serves any number of slots past the constant ones.
#[inline(always)]
fn cookie_slot<C: EbpfContext>(ctx: &C) -> u32 {
    // SAFETY: the helper reads the cookie of the link this program runs from; the context
    // pointer is the program's own.
    unsafe { generated::bpf_get_attach_cookie(ctx.as_ptr()) as u32 }
}

/// Kernel and user probes past the 16 constant slots (`kp_N`), one slot per attach cookie.
#[kprobe]
pub fn kp_cookie(ctx: ProbeContext) -> u32 {
    on_probe(&ctx, cookie_slot(&ctx));
    0
}

/// A kernel function's arguments through its BPF trampoline (`bpf_get_func_arg`, Linux 5.17:
/// a number past the function's own is refused at run time, read as 0), and with `exit` its
/// return value (`bpf_get_func_ret`).
#[inline(always)]
fn function_words<C: EbpfContext>(ctx: &C, event: &mut Event, config: &SlotConfig, exit: bool) {
    let args = function_args(ctx);
    let mut i = 0;
    while i < word::ARGS {
        event.data[word::ARG0 + i] = args[i];
        i += 1;
    }
    let mut ret = 0u64;
    if exit {
        // SAFETY: as above; this program is attached as fexit, where the helper is allowed.
        unsafe { generated::bpf_get_func_ret(ctx.as_ptr(), &mut ret) };
    }
    event.data[word::RETURN] = ret;
    // At the entry, with kernel stacks: the function's own address, for the kernels whose
    // unwinder skips the function's frame from the trampoline (7.3 with an fexit beside it).
    event.data[word::ENTRY_RET] = match config.flags & SLOT_STACK_AT_ENTRY {
        0 => 0,
        // SAFETY: helper on our own context (fentry: the traced function's address).
        _ => unsafe { generated::bpf_get_func_ip(ctx.as_ptr()) },
    };
}

/// A kernel function's argument words through its trampoline (0 past its last argument).
#[inline(always)]
pub(crate) fn function_args<C: EbpfContext>(ctx: &C) -> [u64; word::ARGS] {
    let mut args = [0u64; word::ARGS];
    let mut i = 0;
    while i < word::ARGS {
        // SAFETY: the helper reads the trampoline's saved arguments through our own context
        // into a valid stack slot, and fails cleanly past the function's last argument.
        unsafe { generated::bpf_get_func_arg(ctx.as_ptr(), i as u32, &mut args[i]) };
        i += 1;
    }
    args
}

/// A kernel function slot served through fentry or fexit (BPF_PROG_TYPE_TRACING): loaded once
/// per function (a trampoline program's target is fixed at load), told its slot by the
/// tracing link's attach cookie (Linux 5.19).
#[inline(always)]
fn on_function<C: StackIdContext>(ctx: &C, exit: bool) {
    let Some((event, config)) = begin(ctx, cookie_slot(ctx)) else {
        return;
    };
    function_words(ctx, event, config, exit);
    read_then_finish(ctx, event, config);
}

#[fentry]
pub fn fn_entry(ctx: FEntryContext) -> u32 {
    on_function(&ctx, false);
    0
}

#[fexit]
pub fn fn_exit(ctx: FExitContext) -> u32 {
    on_function(&ctx, true);
    0
}

tracepoint_program!(tp_cookie => |ctx| {
    on_tracepoint(&ctx, cookie_slot(&ctx));
    TRACEPOINT_PASS
});
macro_rules! tracepoint_slots {
    ($($name:ident = $index:literal),*) => {$(
        tracepoint_program!($name => |ctx| {
            on_tracepoint(&ctx, TRACEPOINT_BASE + $index);
            TRACEPOINT_PASS
        });
    )*};
}
tracepoint_slots!(
    tp_0 = 0,
    tp_1 = 1,
    tp_2 = 2,
    tp_3 = 3,
    tp_4 = 4,
    tp_5 = 5,
    tp_6 = 6,
    tp_7 = 7,
    tp_8 = 8,
    tp_9 = 9,
    tp_10 = 10,
    tp_11 = 11,
    tp_12 = 12,
    tp_13 = 13,
    tp_14 = 14,
    tp_15 = 15
);
/// `sys_enter`/`sys_exit` for every syscall tracepoint of a run past the constant slots: the
/// syscall's number names the slot, and the hit is given the record its `syscalls:`
/// tracepoint would have had (8 bytes of header, the number, then the six arguments or the
/// return value), so that it decodes, filters and counts as that tracepoint's.
#[inline(always)]
fn on_syscall_dispatch(ctx: &RawTracePointContext, exit: bool) {
    let regs: u64 = ctx.arg(0);
    // 32-bit code numbers its syscalls differently; its `syscalls:` events do not fire.
    if compat(regs) {
        return;
    }
    let nr = syscall_nr(ctx, regs, exit);
    if nr >= u64::from(SYSCALL_NRS) {
        return;
    }
    let index = nr as u32 + if exit { SYSCALL_NRS } else { 0 };
    let slot = match SYS_SLOTS.get(index) {
        Some(&slot) if slot != 0 => slot,
        _ => return,
    };
    let Some((event, config)) = begin(ctx, slot) else {
        return;
    };
    zero_words(&mut event.data);
    event.data[1] = nr;
    if exit {
        event.data[2] = ctx.arg(1);
    } else {
        // SAFETY: as above; the six argument registers of the x86-64 syscall ABI.
        unsafe {
            for (i, offset) in PT_REGS_SYSCALL_ARGS.iter().enumerate() {
                event.data[2 + i] =
                    bpf_probe_read_kernel((regs + offset) as *const u64).unwrap_or(0);
            }
        }
    }
    if uses(USES_STRINGS) && config.strs[0].from != str_from::NONE {
        read_strings::<true, true, STR_READS>(event, &config, |event, offset| {
            event.data[((offset / 8) & 7) as usize]
        });
    }
    if filtered_out(event, &config) {
        return;
    }
    finish(ctx, event, &config);
}

#[raw_tracepoint]
pub fn sys_enter_any(ctx: RawTracePointContext) -> u32 {
    on_syscall_dispatch(&ctx, false);
    0
}

#[raw_tracepoint]
pub fn sys_exit_any(ctx: RawTracePointContext) -> u32 {
    on_syscall_dispatch(&ctx, true);
    0
}

// Raw twins of the first tracepoint slots (`RAW_SYSCALL_SLOTS`), with the same global ids:
// one of each pair is loaded. More counted syscalls use the perf tracepoint path.
slots!(raw_tracepoint, RawTracePointContext, on_raw_syscall, TRACEPOINT_BASE;
    rtp_0 = 0, rtp_1 = 1, rtp_2 = 2, rtp_3 = 3);
slots!(perf_event, PerfEventContext, on_perf_event, PERF_EVENT_BASE;
    pe_0 = 0, pe_1 = 1, pe_2 = 2, pe_3 = 3);

// The tracking programs and the comm cache's are raw tracepoints: detaching one returns at
// once, where closing a perf tracepoint event waits for an RCU grace period (about 75 ms here,
// one after another under the kernel's event_mutex), which every run paid at its exit.

#[raw_tracepoint]
/// `sched_process_exec(task, old_pid, bprm)`: the launched command becomes traced at its
/// exec, so nothing it did before (in tracer's fork) is reported; `tracer trace` follows an
/// exec by a thread that is not the leader (`trace::exec_by_thread`).
pub fn track_exec(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        trace::exec_by_thread(&ctx);
    }
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // SAFETY: the value is copied out at once.
    if let Some(&state) = unsafe { TRACKED.get(&tgid) } {
        if state == TRACK_PENDING {
            let _ = TRACKED.insert(&tgid, &TRACK_ACTIVE, 0);
            next_generation();
        }
    }
    0
}

/// Children of traced processes are traced (`parent` is the current task's process).
#[inline(always)]
fn tracked_fork(child: u32) {
    let parent = (bpf_get_current_pid_tgid() >> 32) as u32;
    // SAFETY: the value is copied out at once.
    let active = matches!(unsafe { TRACKED.get(&parent) }, Some(&s) if s == TRACK_ACTIVE);
    if active && child != 0 {
        let _ = TRACKED.insert(&child, &TRACK_ACTIVE, 0);
        next_generation();
    }
}

#[raw_tracepoint]
/// `sched_process_fork(parent, child)`, where BTF gives `task_struct`'s `pid` offset.
pub fn track_fork(ctx: RawTracePointContext) -> u32 {
    let Some(offsets) = SCHED_OFFSETS.get(0) else {
        return 0;
    };
    let child: u64 = ctx.arg(1);
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let pid = unsafe { bpf_probe_read_kernel((child + u64::from(offsets.task_pid)) as *const u32) };
    tracked_fork(pid.unwrap_or(0));
    0
}

tracepoint_program!(track_fork_record => track_fork_record_hit);
/// `sched:sched_process_fork` (runs in the parent) as a perf tracepoint event, for a kernel
/// without BTF: the child's pid from the record.
fn track_fork_record_hit(ctx: TracePointContext) -> u32 {
    if let Some(offsets) = SCHED_OFFSETS.get(0) {
        // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly.
        let child = unsafe { ctx.read_at::<u32>(offsets.fork_child_pid as usize) };
        tracked_fork(child.unwrap_or(0));
    }
    TRACEPOINT_PASS
}

#[raw_tracepoint]
/// `sched_process_exit(task)` (per thread): forget exited tasks so the map does not fill up.
/// A process is forgotten when its last thread exits: its leader may exit first
/// (`pthread_exit` in `main`, or an exec by another thread), and its other threads go on
/// being traced.
pub fn track_exit(ctx: RawTracePointContext) -> u32 {
    let pid_tgid = bpf_get_current_pid_tgid();
    let (tid, tgid) = (pid_tgid as u32, (pid_tgid >> 32) as u32);
    let task: u64 = ctx.arg(0);
    let mut forgot = tid != tgid && TRACKED.remove(&tid).is_ok();
    let group_dead = match group_lives(task) {
        Some(lives) => !lives,
        None => tid == tgid,
    };
    // A run counted for this process must not go on for another that gets its pid.
    if group_dead {
        forgot |= TRACKED.remove(&tgid).is_ok();
    }
    if forgot {
        next_generation();
    }
    0
}

/// Whether the thread group of `task`, which is exiting, has threads that are not (its
/// `signal_struct`'s `live`); `None` without the BTF offsets.
#[inline(always)]
pub(crate) fn group_lives(task: u64) -> Option<bool> {
    let offsets = SCHED_OFFSETS.get(0)?;
    if offsets.task_signal == 0 || offsets.signal_live == 0 {
        return None;
    }
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let live = unsafe {
        let signal = aya_ebpf::helpers::bpf_probe_read_kernel(
            (task + u64::from(offsets.task_signal)) as *const u64,
        )
        .ok()?;
        aya_ebpf::helpers::bpf_probe_read_kernel(
            (signal + u64::from(offsets.signal_live)) as *const i32,
        )
        .ok()?
    };
    Some(live > 0)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
