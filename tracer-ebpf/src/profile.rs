//! `tracer profile --off-cpu`: time blocked, by the stack that blocked. A program on
//! `sched:sched_switch` stamps a thread that blocks (with its stacks, captured then: the
//! tracepoint runs in the task switched out) and, when the thread is switched back in, adds the
//! time it was away to `COUNTS` under its stacks. Included into the probes object, which owns
//! the maps it shares (`CONFIG`, `STATS`, `STACKS`, `COUNTS`).
//!
//! On-CPU sampling needs nothing here: the perf-event slots (`pe_*`) count each sample of a
//! cpu-clock or cycles event under its process, comm and stacks (`SLOT_AGGREGATE`).

use aya_ebpf::bindings::BPF_F_USER_STACK;
use aya_ebpf::helpers::{
    bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns,
};
use aya_ebpf::macros::map;
use aya_ebpf::maps::{Array, LruHashMap};
use aya_ebpf::programs::TracePointContext;
use tracer_common::{
    stat_failed, stat_filtered, stat_hits, OffCpuConfig, OffCpuStart, OFFCPU_SLOT,
    SLOT_STACK_KERNEL, SLOT_STACK_USER, SLOT_STOPPED, SWITCH_BLOCKED_MASK,
};

use crate::aggregate::{add_count, zeroed_key};
use crate::emit::stack_id;
use crate::filters::passes;
use crate::maps::{bump, CONFIG};
use crate::TRACEPOINT_PASS;

/// Where `sched_switch` keeps its fields, and the minimum block time.
#[map]
static OFFCPU_CONFIG: Array<OffCpuConfig> = Array::with_max_entries(1, 0);

/// Blocked threads by tid: when and where they blocked. LRU, so threads that never come back
/// (exited while blocked) cannot fill it; sized by userspace when used.
#[map]
static OFFCPU_START: LruHashMap<u32, OffCpuStart> = LruHashMap::with_max_entries(1, 0);

tracepoint_program!(offcpu_switch => offcpu_switch_hit);
/// `sched:sched_switch`, in the context of the task switched out (`prev`).
fn offcpu_switch_hit(ctx: TracePointContext) -> u32 {
    let (Some(config), Some(offcpu)) = (CONFIG.get(OFFCPU_SLOT), OFFCPU_CONFIG.get(0)) else {
        return TRACEPOINT_PASS;
    };
    if config.flags & SLOT_STOPPED != 0 {
        return TRACEPOINT_PASS;
    }
    // SAFETY: helpers without preconditions.
    let (now, cpu) = unsafe { (bpf_ktime_get_ns(), bpf_get_smp_processor_id()) };
    // The task switched out: stamped when it blocks (not when it is preempted: it is then
    // runnable, waiting for a CPU) and passes the run's task filters.
    let pid_tgid = bpf_get_current_pid_tgid();
    // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly.
    let state = unsafe { ctx.read_at::<u64>(offcpu.prev_state as usize) }.unwrap_or(0);
    let tid = pid_tgid as u32;
    let ours = tid != 0 && passes(config, pid_tgid, cpu);
    // A stamp still there: stamped when it last blocked, yet it ran since, so the kernel's
    // tracepoint did not show its switch in (on this 6.18 host, up to 8 of 3,000 wakeups,
    // which bpftrace's sched_switch misses too). That block's end is unknown: its stamp goes,
    // so that it is not paired with a later switch in, and it is counted.
    if ours && OFFCPU_START.remove(&tid).is_ok() {
        if let Some(offcpu) = OFFCPU_CONFIG.get_ptr_mut(0) {
            // SAFETY: a field of the map's value, added to atomically.
            crate::maps::add_to(unsafe { &mut (*offcpu).unended }, 1);
        }
    }
    if ours && state & SWITCH_BLOCKED_MASK != 0 {
        let start = OffCpuStart {
            time_ns: now,
            pid_tgid,
            kstack: stack_id(&ctx, config.flags & SLOT_STACK_KERNEL != 0, 0),
            ustack: stack_id(
                &ctx,
                config.flags & SLOT_STACK_USER != 0,
                BPF_F_USER_STACK as u64,
            ),
            comm: bpf_get_current_comm().unwrap_or([0; 16]),
        };
        if OFFCPU_START.insert(&tid, &start, 0).is_err() {
            bump(stat_failed(OFFCPU_SLOT));
        }
    }
    // The task switched in: its block ends now.
    // SAFETY: as above.
    let Ok(next) = (unsafe { ctx.read_at::<u32>(offcpu.next_pid as usize) }) else {
        return TRACEPOINT_PASS;
    };
    // SAFETY: the value is copied out at once; no reference outlives the lookup.
    let Some(start) = (unsafe { OFFCPU_START.get(&next) }).copied() else {
        return TRACEPOINT_PASS;
    };
    let _ = OFFCPU_START.remove(&next);
    let blocked = now.saturating_sub(start.time_ns);
    if blocked < offcpu.min_ns {
        bump(stat_filtered(OFFCPU_SLOT));
        return TRACEPOINT_PASS;
    }
    bump(stat_hits(OFFCPU_SLOT));
    let mut key = zeroed_key();
    key.slot = OFFCPU_SLOT;
    key.pid = (start.pid_tgid >> 32) as u32;
    key.comm = start.comm;
    key.kstack = start.kstack;
    key.ustack = start.ustack;
    add_count(&key, 1, blocked);
    TRACEPOINT_PASS
}
