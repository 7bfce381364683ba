//! Sending a hit to userspace: the per-CPU perf rings (`EVENTS`) or the BPF ring buffer
//! (`RINGBUF`), with the wakeup policy of the latter, and the stack ids a hit carries.

use aya_ebpf::bindings::{
    BPF_F_CURRENT_CPU, BPF_F_USER_STACK, BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP,
};
use aya_ebpf::helpers::{
    bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_perf_event_output,
};
use aya_ebpf::macros::map;
use aya_ebpf::maps::{PerfEventArray, RingBuf};
use aya_ebpf::programs::tracing::StackIdContext;
use aya_ebpf::EbpfContext;
use core::ffi::c_void;
use tracer_common::{
    drop, stack_span_bits, stat_failed, str_from, Event, SlotConfig, DATA_WORDS, FIELD_READS,
    NO_STACK, SLOT_STACK_KERNEL, SLOT_STACK_USER, STACK_TAKEN_LATE, STR_BUFFER, STR_READS,
    USES_BUFFERS, USES_OUTLIER_STRINGS, USES_STACKS,
};

use crate::caches::{current_comm_words, put_comm};
use crate::filters::debug_dropped;
use crate::maps::{bump, scratch, Scratch, SCRATCH, STACKS};
use crate::reads::{put_stack_top, read_strings};
use crate::uses;

/// Per-CPU `PERF_COUNT_SW_BPF_OUTPUT` events opened by userspace (max_entries = possible CPUs).
#[map]
pub(crate) static EVENTS: PerfEventArray<Event> = PerfEventArray::new(0);

/// The BPF ring buffer transport (`--transport ringbuf`): one ring shared by every CPU, sized by
/// userspace when used (one page otherwise).
#[map]
pub(crate) static RINGBUF: RingBuf = RingBuf::with_byte_size(4096, 0);

/// Which transport events take, set by userspace before loading (read-only to the programs,
/// like `USES`): 0 sends them to the per-CPU perf rings in `EVENTS`; otherwise they go to
/// `RINGBUF`, and an output wakes the reader once this many bytes are waiting, or when it is
/// its CPU's first in a new [`WAKE_TICK_SHIFT`] tick (otherwise it sends no wakeup: a wakeup
/// per event would cost the traced task an interrupt each during a flood).
#[unsafe(no_mangle)]
pub(crate) static RINGBUF_WAKEUP: u64 = 0;

/// A CPU's ring buffer outputs wake the reader at most once per 2^20 ns (about 1 ms) for being
/// first: a sparse event is read at once, and a flood sends about a thousand wakeups a second
/// per CPU besides those of the byte watermark.
pub(crate) const WAKE_TICK_SHIFT: u32 = 20;

/// Emits a bare event (slot `LATENCY_SLOT`) with `data`, `fields` and stack ids from a
/// latency program; false when the ring was full. `top_sp`: a user stack pointer whose stack's
/// top the event carries (its one string entry, read 0: `str_from::STACK`), or 0; else the
/// strings `strings` reads from the data's argument words.
#[inline(always)]
pub(crate) fn emit_raw<C: EbpfContext>(
    ctx: &C,
    (data, fields): (&[u64; DATA_WORDS], &[u64; FIELD_READS]),
    (time_ns, kstack, ustack, span): (u64, i32, i32, u32),
    (at, top_sp, strings): (u32, u64, &SlotConfig),
) -> bool {
    // SAFETY: entry `at` of this CPU is this program's (`scratch_at`) until it returns.
    let Some(event) = SCRATCH.get_ptr_mut(at).map(|p| unsafe { &mut (*p).event }) else {
        return false;
    };
    event.time_ns = time_ns;
    // SAFETY: helper without preconditions.
    event.cpu = unsafe { bpf_get_smp_processor_id() };
    event.pid_tgid = bpf_get_current_pid_tgid();
    event.slot = tracer_common::LATENCY_SLOT;
    event.str_bytes = 0;
    event.kstack = kstack;
    event.ustack = ustack;
    event.data = *data;
    event.fields = *fields;
    event.field_faults = span;
    if uses(USES_BUFFERS) && top_sp != 0 {
        let area = scratch(event);
        put_stack_top(area, top_sp);
        let bytes = area.used;
        event.str_bytes = bytes as i32;
    } else if uses(USES_OUTLIER_STRINGS) && strings.strs[0].from == str_from::ARG {
        // The start's string arguments, from the pointers it was given (bpftrace's
        // gethostlatency reads them at the return too); never beside a stack top.
        read_strings::<false, false, STR_READS>(event, strings, |_, _| 0);
    }
    output(ctx, event)
}

/// The ids of the current kernel and user stacks (as [`stack_id`]) of a streamed event whose
/// time is `time_ns`, read just before, and the `field_faults` bits that say how long after
/// it they were taken (`STACK_SPAN_BIT`): the reader tells a recycled id's generations apart
/// by that span. Past what the bits hold, [`STACK_TAKEN_LATE`] in place of each id.
#[inline(always)]
pub(crate) fn stack_ids_at<C: StackIdContext>(
    ctx: &C,
    flags: u32,
    time_ns: u64,
) -> (i32, i32, u32) {
    let kstack = stack_id(ctx, flags & SLOT_STACK_KERNEL != 0, 0);
    let ustack = stack_id(ctx, flags & SLOT_STACK_USER != 0, BPF_F_USER_STACK as u64);
    if kstack < 0 && ustack < 0 {
        return (kstack, ustack, 0);
    }
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    match stack_span_bits(now.wrapping_sub(time_ns)) {
        Some(span) => (kstack, ustack, span),
        None => {
            let late = |id: i32| if id >= 0 { STACK_TAKEN_LATE } else { id };
            (late(kstack), late(ustack), 0)
        }
    }
}

/// The id of the current kernel or user stack in `STACKS`, or the helper's negative errno.
#[inline(always)]
pub(crate) fn stack_id<C: StackIdContext>(ctx: &C, wanted: bool, flags: u64) -> i32 {
    if !uses(USES_STACKS) || !wanted {
        return NO_STACK;
    }
    match ctx.get_stackid(&STACKS, flags) {
        Ok(id) => id as i32,
        Err(errno) => errno,
    }
}

/// How often a CPU asks the ring buffer how full it is (a helper call): every this many of its
/// outputs. The reader is woken when a quarter of the ring waits, so up to this many more
/// outputs per CPU before the wakeup are harmless; asked at every output, the helper was a
/// measurable part of every hit (docs/benchmarks.md, "Figures the code cites", `ringbuf-query`).
pub(crate) const QUERY_EVERY: u32 = 16;

/// Writes the event and its strings into the output ring (this CPU's perf ring, or the
/// shared BPF ring buffer); false when the ring was full.
#[inline(always)]
pub(crate) fn output<C: EbpfContext>(ctx: &C, event: &mut Event) -> bool {
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
            // by the output helper's memcpy, a `rep movsb` into memory the cache has not seen
            // (docs/benchmarks.md, "Figures the code cites", `ringbuf-copy`).
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
pub(crate) fn emit<C: EbpfContext>(ctx: &C, event: &mut Event) {
    if !output(ctx, event) {
        bump(stat_failed(event.slot));
        debug_dropped(event.slot, drop::RING_FULL, event.pid_tgid, event.cpu);
    }
}
