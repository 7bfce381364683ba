//! tracer's BPF programs: probe slots that emit [`Event`]s into per-CPU BPF_OUTPUT rings.
//!
//! Userspace opens the perf events (kprobe/uprobe PMUs, tracepoints, breakpoints) itself and
//! attaches these programs with `PERF_EVENT_IOC_SET_BPF`. There is no attach cookie on that path,
//! so each probe spec uses its own program instance ("slot"); the slot number is a constant
//! compiled into each instance and indexes the `CONFIG` map.
#![no_std]
#![no_main]

use core::ffi::c_void;

use aya_ebpf::bindings::BPF_F_CURRENT_CPU;
use aya_ebpf::helpers::{
    bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns,
    bpf_perf_event_output, bpf_probe_read_kernel_str_bytes, bpf_probe_read_user_str_bytes,
};
use aya_ebpf::macros::{kprobe, map, perf_event, tracepoint};
use aya_ebpf::maps::{Array, PerCpuArray, PerfEventArray};
use aya_ebpf::programs::{PerfEventContext, ProbeContext, RetProbeContext, TracePointContext};
use aya_ebpf::EbpfContext;
use tracer_common::{
    Event, SlotConfig, DATA_WORDS, SLOTS, SLOT_COUNT_ONLY, SLOT_RETURN, SLOT_STR_ARG_KERNEL,
    SLOT_STR_ARG_USER, SLOT_STR_TP_USER, STAT_COUNT, STAT_HITS, STAT_OUTPUT_FAILED, STR_LEN,
};

/// Per-CPU `PERF_COUNT_SW_BPF_OUTPUT` events opened by userspace (max_entries = possible CPUs).
#[map]
static EVENTS: PerfEventArray<Event> = PerfEventArray::new(0);

/// What each slot should capture and filter.
#[map]
static CONFIG: Array<SlotConfig> = Array::with_max_entries(SLOTS, 0);

/// Per-CPU counters: hits that passed the filters, and outputs that failed (ring full).
#[map]
static STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(STAT_COUNT, 0);

/// Scratch event per CPU: an [`Event`] is too big to build comfortably on the 512-byte stack.
#[map]
static SCRATCH: PerCpuArray<Event> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn bump(index: u32) {
    if let Some(counter) = STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU slot, and BPF programs do not preempt each other on one CPU for these
        // program types, so a plain increment does not race.
        unsafe { *counter += 1 };
    }
}

/// Fills the common part of the scratch event, or `None` when the hit is filtered out.
#[inline(always)]
fn begin(slot: u32) -> Option<(&'static mut Event, SlotConfig)> {
    let config = *CONFIG.get(slot)?;
    let pid_tgid = bpf_get_current_pid_tgid();
    if config.tgid != 0 && (pid_tgid >> 32) as u32 != config.tgid {
        return None;
    }
    bump(STAT_HITS);
    if config.flags & SLOT_COUNT_ONLY != 0 {
        return None;
    }
    // SAFETY: index 0 exists (max_entries 1); the per-CPU value is only touched by this program
    // invocation until it returns.
    let event = unsafe { &mut *SCRATCH.get_ptr_mut(0)? };
    // SAFETY: helpers without preconditions.
    event.time_ns = unsafe { bpf_ktime_get_ns() };
    event.cpu = unsafe { bpf_get_smp_processor_id() };
    event.pid_tgid = pid_tgid;
    event.slot = slot;
    event.str_len = 0;
    event.comm = bpf_get_current_comm().unwrap_or([0; 16]);
    Some((event, config))
}

#[inline(always)]
fn emit<C: EbpfContext>(ctx: &C, event: &mut Event) {
    // SAFETY: EVENTS is a PERF_EVENT_ARRAY map definition (`PerfEventArray` is
    // repr(transparent) over it); `event` is valid for `size_of::<Event>()` bytes.
    let ret = unsafe {
        bpf_perf_event_output(
            ctx.as_ptr(),
            &EVENTS as *const _ as *mut c_void,
            BPF_F_CURRENT_CPU,
            event as *mut Event as *mut c_void,
            Event::SIZE as u64,
        )
    };
    if ret != 0 {
        bump(STAT_OUTPUT_FAILED);
    }
}

#[inline(always)]
fn read_string(event: &mut Event, ptr: u64, user: bool) {
    let src = ptr as *const u8;
    // SAFETY: the probe-read helpers validate the source address themselves and fail with a
    // negative errno instead of faulting; the destination is our own buffer.
    let result = unsafe {
        if user {
            bpf_probe_read_user_str_bytes(src, &mut event.str)
        } else {
            bpf_probe_read_kernel_str_bytes(src, &mut event.str)
        }
    };
    event.str_len = match result {
        Ok(bytes) => (bytes.len() + 1).min(STR_LEN) as i32,
        Err(errno) => errno as i32,
    };
}

/// Kprobe, kretprobe, uprobe and uretprobe slots (all BPF_PROG_TYPE_KPROBE).
#[inline(always)]
fn on_probe(ctx: &ProbeContext, slot: u32) {
    let Some((event, config)) = begin(slot) else {
        return;
    };
    let mut i = 0;
    while i < 6 {
        event.data[i] = ctx.arg::<u64>(i).unwrap_or(0);
        i += 1;
    }
    event.data[6] = if config.flags & SLOT_RETURN != 0 {
        RetProbeContext::new(ctx.regs as *mut c_void).ret::<u64>()
    } else {
        0
    };
    event.data[7] = 0;
    if config.flags & (SLOT_STR_ARG_USER | SLOT_STR_ARG_KERNEL) != 0 && config.str_arg < 6 {
        // Index the captured registers, not the context: the verifier refuses ctx accesses at
        // a runtime offset, while a bounded index into map memory is fine.
        let ptr = event.data[config.str_arg as usize];
        read_string(event, ptr, config.flags & SLOT_STR_ARG_USER != 0);
    }
    emit(ctx, event);
}

/// Tracepoint slots: the first bytes of the record, decoded in userspace from its format file.
#[inline(always)]
fn on_tracepoint(ctx: &TracePointContext, slot: u32) {
    let Some((event, config)) = begin(slot) else {
        return;
    };
    // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly; records shorter than
    // DATA_WORDS words sit in the per-CPU trace buffer, so the tail read stays in kernel memory.
    event.data = unsafe { ctx.read_at::<[u64; DATA_WORDS]>(0) }.unwrap_or([0; DATA_WORDS]);
    if config.flags & SLOT_STR_TP_USER != 0 {
        // SAFETY: as above.
        let ptr = unsafe { ctx.read_at::<u64>(config.str_arg as usize) }.unwrap_or(0);
        read_string(event, ptr, true);
    }
    emit(ctx, event);
}

/// Breakpoint and software-event slot: the interrupted instruction pointer and the address.
#[inline(always)]
fn on_perf_event(ctx: &PerfEventContext, slot: u32) {
    let Some((event, _config)) = begin(slot) else {
        return;
    };
    // SAFETY: ctx.ctx points at the kernel's bpf_perf_event_data for this program invocation;
    // fields are read with probe_read, which fails cleanly.
    let data = ctx.ctx;
    event.data = [0; DATA_WORDS];
    unsafe {
        event.data[0] = aya_ebpf::helpers::bpf_probe_read_kernel(&(*data).regs.rip).unwrap_or(0);
        event.data[1] = aya_ebpf::helpers::bpf_probe_read_kernel(&(*data).addr).unwrap_or(0);
    }
    emit(ctx, event);
}

macro_rules! slots {
    ($attr:ident, $ctx:ty, $handler:ident: $($name:ident = $slot:literal),*) => {$(
        #[$attr]
        pub fn $name(ctx: $ctx) -> u32 {
            $handler(&ctx, $slot);
            0
        }
    )*};
}

slots!(kprobe, ProbeContext, on_probe: kp_0 = 0, kp_1 = 1, kp_2 = 2, kp_3 = 3, kp_4 = 4, kp_5 = 5, kp_6 = 6, kp_7 = 7);
slots!(tracepoint, TracePointContext, on_tracepoint: tp_0 = 0, tp_1 = 1, tp_2 = 2, tp_3 = 3, tp_4 = 4, tp_5 = 5, tp_6 = 6, tp_7 = 7);
slots!(perf_event, PerfEventContext, on_perf_event: pe_0 = 0, pe_1 = 1, pe_2 = 2, pe_3 = 3);

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
