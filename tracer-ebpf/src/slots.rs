//! The slot programs and their handlers, one per program type: kprobes and uprobes (constant
//! slots and attach cookies), fentry/fexit, tracepoints, raw syscall tracepoints, the
//! dispatched syscall programs, and perf events (breakpoints, software events).

use aya_ebpf::bindings::BPF_F_USER_STACK;
use aya_ebpf::helpers::{
    bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_probe_read_kernel,
    bpf_probe_read_user, generated,
};
use aya_ebpf::macros::{fentry, fexit, kprobe, perf_event, raw_tracepoint};
use aya_ebpf::programs::tracing::StackIdContext;
use aya_ebpf::programs::{
    FEntryContext, FExitContext, PerfEventContext, ProbeContext, RawTracePointContext,
    RetProbeContext, TracePointContext,
};
use aya_ebpf::EbpfContext;
use core::ffi::c_void;
use tracer_common::{
    drop, stat_hits, str_from, word, Event, SlotConfig, AGG_HIST, AGG_KEY_STRING, AGG_KEY_VALUE,
    AGG_SUM, PERF_EVENT_BASE, PT_REGS_CS, PT_REGS_ORIG_AX, PT_REGS_SYSCALL_ARGS, SLOT_AGGREGATE,
    SLOT_AT_EXEC, SLOT_COUNT_ONLY, SLOT_RAW_SYS_EXIT, SLOT_RETURN, SLOT_RUN_COUNT,
    SLOT_STACK_AT_ENTRY, SLOT_STACK_KERNEL, SLOT_STACK_USER, SLOT_STOPPED, SLOT_USDT,
    SLOT_VALUE_FILTER, SLOT_VALUE_KERNEL, STR_READS, SYSCALL_NRS, TRACEPOINT_BASE, USER32_CS,
    USES_AGGREGATE, USES_BUFFERS, USES_FIELDS, USES_FILTERS, USES_RUN_COUNT, USES_RUN_KEYED,
    USES_STREAM, USES_STRINGS, USES_USDT,
};

use crate::aggregate::{aggregate, continues_run, continues_run_at_ip};
use crate::caches::is_pending;
use crate::emit::{emit, stack_id, stack_ids_at};
use crate::filters::{debug_dropped, filtered_out, refused_by, refused_by_filters};
use crate::maps::{bump, scratch_at, zero_words, CONFIG, SCRATCH, SYS_SLOTS};
use crate::reads::{read_fields, read_record, read_strings, usdt_args, user_sp, STACK_AT};
use crate::{uses, TRACEPOINT_PASS};

/// Fills the common part of the scratch event, or `None` when the hit is filtered out or
/// only counted.
#[inline(always)]
pub(crate) fn begin<C: StackIdContext>(
    ctx: &C,
    slot: u32,
    at: u32,
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
    let mut refused = refused_by(config, pid_tgid, cpu);
    // The launched command's own exec, seen before the tracking program marks it
    // (SLOT_AT_EXEC): the finer filters still apply. Here, not in `refused_by`, which
    // `trace_exit` inlines too, at the edge of 5.10's combined stack limit (512 bytes).
    if refused == drop::UNTRACKED
        && config.flags & SLOT_AT_EXEC != 0
        && is_pending((pid_tgid >> 32) as u32)
    {
        refused = match uses(USES_FILTERS) {
            true => refused_by_filters(config, pid_tgid, cpu),
            false => 0,
        };
    }
    if refused != 0 {
        debug_dropped(slot, refused, pid_tgid, cpu);
        return None;
    }
    bump(stat_hits(slot));
    if config.flags & SLOT_COUNT_ONLY != 0 {
        return None;
    }
    // SAFETY: the per-CPU entry `at` is this program's (`scratch_at`): no other program
    // touches it until this invocation returns.
    let event = unsafe { &mut (*SCRATCH.get_ptr_mut(at)?).event };
    // A counted hit needs only what its key uses: no timestamp (and the comm only when keyed
    // by it, in `aggregate`).
    let counted = config.flags & SLOT_AGGREGATE != 0;
    event.cpu = cpu;
    event.pid_tgid = pid_tgid;
    event.slot = slot;
    event.str_bytes = 0;
    zero_words(&mut event.fields);
    event.field_faults = 0;
    // The comm is filled in last (output, aggregate): the cache's hit and miss paths then
    // rejoin just before the end, and the verifier checks little of the program twice.
    if counted {
        // A counted stack's id is never recycled (and the count has no time).
        event.kstack = stack_id(ctx, config.flags & SLOT_STACK_KERNEL != 0, 0);
        event.ustack = stack_id(
            ctx,
            config.flags & SLOT_STACK_USER != 0,
            BPF_F_USER_STACK as u64,
        );
    } else {
        // SAFETY: helper without preconditions.
        event.time_ns = unsafe { bpf_ktime_get_ns() };
        let span;
        (event.kstack, event.ustack, span) = stack_ids_at(ctx, config.flags, event.time_ns);
        // Its own bits (`STACK_SPAN_BIT` up); the fault bits below are set by the reads.
        event.field_faults = span;
    }
    Some((event, config))
}

/// Emits the event, or counts it when the slot aggregates.
#[inline(always)]
pub(crate) fn finish<C: EbpfContext>(ctx: &C, event: &mut Event, config: &SlotConfig) {
    if config.flags & SLOT_AGGREGATE != 0 {
        if uses(USES_AGGREGATE) {
            aggregate(event, config);
        }
    } else if uses(USES_STREAM) {
        emit(ctx, event);
    }
}

/// The end of a kernel or user probe's hit, its argument words in place: the member reads and
/// strings, the value filter, then the output or the count. `sp`: the user stack pointer
/// (a user probe's), where a [`str_from::STACK`] read copies the stack's top from.
#[inline(always)]
pub(crate) fn read_then_finish<C: EbpfContext>(
    ctx: &C,
    event: &mut Event,
    config: &SlotConfig,
    sp: u64,
) {
    if uses(USES_FIELDS) {
        read_fields(event, config);
    }
    if uses(USES_STRINGS) && config.strs[0].from != str_from::NONE {
        // A probe's only read with a pointer of neither an argument, a member nor the return
        // value is the stack's top (`str_from::STACK`).
        read_strings::<true, true, STR_READS>(event, config, |_, _| sp);
    }
    if filtered_out(event, config) {
        return;
    }
    finish(ctx, event, config);
}

/// Kprobe, kretprobe, uprobe and uretprobe slots (all BPF_PROG_TYPE_KPROBE).
#[inline(always)]
pub(crate) fn on_probe(ctx: &ProbeContext, slot: u32) {
    let Some((event, config)) = begin(ctx, slot, scratch_at::PERF) else {
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
    // The user stack pointer a `str_from::STACK` read copies from: a uprobe's registers
    // are the user's; a kprobe's are the kernel's (its code segment's privilege level 0), and
    // the user's are those the task entered the kernel with.
    // SAFETY: as above, fixed-offset loads of the context.
    let (cs, rsp) = unsafe { ((*ctx.regs).cs, (*ctx.regs).rsp) };
    let sp = match cs & 3 {
        3 => rsp,
        _ if uses(USES_BUFFERS) => user_sp(),
        _ => 0,
    };
    read_then_finish(ctx, event, config, sp);
}

/// Tracepoint slots: the first bytes of the record, decoded in userspace from its format file.
#[inline(always)]
pub(crate) fn on_tracepoint(ctx: &TracePointContext, slot: u32) {
    let Some((event, config)) = begin(ctx, slot, scratch_at::PERF) else {
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
            // `probe -s` at a tracepoint: the stack's top, from the user registers.
            STACK_AT => user_sp(),
            0..=63 => {
                // Masked after a volatile read: with the arm above LLVM dropped the mask,
                // which the range makes redundant to it but not to 6.18's verifier
                // ("R2 unbounded memory access").
                // SAFETY: a read of a local.
                let at = unsafe { core::ptr::read_volatile(&offset) };
                event.data[((at / 8) & 7) as usize]
            }
            // A `char[N]` field: the string is in the record, at the field.
            offset if offset & str_from::RECORD_CHARS != 0 => {
                ctx.as_ptr() as u64 + u64::from(offset & 0xffff)
            }
            // A `__data_loc` string: its field's low half is where it starts in the record,
            // its high half its length (0 would be the record's own start: none).
            offset if offset & str_from::RECORD_DATA_LOC != 0 => {
                // SAFETY: as below.
                let loc = unsafe { ctx.read_at::<u32>((offset & 0xffff) as usize) }.unwrap_or(0);
                match loc & 0xffff {
                    0 => 0,
                    at => ctx.as_ptr() as u64 + u64::from(at),
                }
            }
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
pub(crate) fn syscall_nr(ctx: &RawTracePointContext, regs: u64, exit: bool) -> u64 {
    match exit {
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        true => unsafe { bpf_probe_read_kernel((regs + PT_REGS_ORIG_AX) as *const u64) }
            .unwrap_or(u64::MAX),
        false => ctx.arg(1),
    }
}

/// `tracer trace`'s slot and config for syscall `nr`, or `None` when `nr` is not traced (or
/// the run is ending).
#[inline(always)]
pub(crate) fn slot_of(nr: u64) -> Option<(u32, &'static SlotConfig)> {
    if nr >= u64::from(SYSCALL_NRS) {
        return None;
    }
    let slot = match SYS_SLOTS.get(nr as u32) {
        Some(&slot) if slot != 0 => slot,
        _ => return None,
    };
    let config = CONFIG.get(slot)?;
    match config.flags & SLOT_STOPPED {
        0 => Some((slot, config)),
        _ => None,
    }
}

/// Whether the syscall came from 32-bit code (its `cs`), whose numbers are another table's.
#[inline(always)]
pub(crate) fn compat(regs: u64) -> bool {
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let cs = unsafe { bpf_probe_read_kernel((regs + PT_REGS_CS) as *const u64) }.unwrap_or(0);
    cs == USER32_CS
}

/// Raw tracepoint slots on `sys_enter`/`sys_exit` (counting a `syscalls:` tracepoint only):
/// the kernel calls them with the registers and the syscall id or return value, with no trace
/// record to fill. They run for every syscall, so a hit of another syscall leaves at the first
/// comparison.
#[inline(always)]
pub(crate) fn on_raw_syscall(ctx: &RawTracePointContext, slot: u32) {
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
    let Some((event, config)) = begin(ctx, slot, scratch_at::RAW_SLOT) else {
        return;
    };
    aggregate(event, &config);
}

/// Breakpoint and software-event slot: the interrupted instruction pointer, the watched
/// address (`bp_addr`), and the 8 bytes at it after the access (data breakpoints trap after
/// the instruction, so this is the new value).
#[inline(always)]
pub(crate) fn on_perf_event(ctx: &PerfEventContext, slot: u32) {
    if uses(USES_RUN_KEYED) && continues_run_at_ip(ctx, slot) {
        return;
    }
    let Some((event, config)) = begin(ctx, slot, scratch_at::PERF_EVENT) else {
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
        // `watch -s` on a user address: the top of the user stack (`str_from::STACK`, its one
        // read), which userspace unwinds by CFI where the frame-pointer walk cannot go.
        if uses(USES_BUFFERS) && config.strs[0].from == str_from::STACK {
            let sp = core::ptr::read_volatile(&(*data).regs.rsp);
            read_strings::<false, true, 1>(event, config, |_, _| sp);
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
pub(crate) fn cookie_slot<C: EbpfContext>(ctx: &C) -> u32 {
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
pub(crate) fn function_words<C: EbpfContext>(
    ctx: &C,
    event: &mut Event,
    config: &SlotConfig,
    exit: bool,
) {
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
pub(crate) fn on_function<C: StackIdContext>(ctx: &C, exit: bool) {
    let at = match exit {
        true => scratch_at::FEXIT,
        false => scratch_at::FENTRY,
    };
    let Some((event, config)) = begin(ctx, cookie_slot(ctx), at) else {
        return;
    };
    function_words(ctx, event, config, exit);
    // A kernel function's `-s user` copy starts at the registers the task entered with.
    let sp = match uses(USES_BUFFERS) {
        true => user_sp(),
        false => 0,
    };
    read_then_finish(ctx, event, config, sp);
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
pub(crate) fn on_syscall_dispatch(ctx: &RawTracePointContext, exit: bool) {
    let at = match exit {
        true => scratch_at::SYS_EXIT,
        false => scratch_at::SYS_ENTER,
    };
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
    let Some((event, config)) = begin(ctx, slot, at) else {
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
