//! Following `-- COMMAND`'s process tree: its exec, its forks and its exits keep `TRACKED`.

use aya_ebpf::helpers::{bpf_get_current_pid_tgid, bpf_probe_read_kernel};
use aya_ebpf::macros::raw_tracepoint;
use aya_ebpf::programs::{RawTracePointContext, TracePointContext};
use tracer_common::{TRACK_ACTIVE, TRACK_PENDING, USES_TRACE};

use crate::caches::next_generation;
use crate::maps::{SCHED_OFFSETS, TRACKED};
use crate::reads::group_lives;
use crate::{uses, TRACEPOINT_PASS};

// The tracking programs and the comm cache's are raw tracepoints: detaching one returns at
// once, where closing a perf tracepoint event waits for an RCU grace period, one after
// another under the kernel's event_mutex, which every run paid at its exit
// (docs/benchmarks.md, "Figures the code cites", `event-close`).

#[raw_tracepoint]
/// `sched_process_exec(task, old_pid, bprm)`: the launched command becomes traced at its
/// exec, so nothing it did before (in tracer's fork) is reported; `tracer trace` follows an
/// exec by a thread that is not the leader (`trace::exec_by_thread`).
pub fn track_exec(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        crate::trace::exec_by_thread(&ctx);
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
pub(crate) fn tracked_fork(child: u32) {
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
pub(crate) fn track_fork_record_hit(ctx: TracePointContext) -> u32 {
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
