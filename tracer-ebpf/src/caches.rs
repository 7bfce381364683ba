//! Per-CPU caches that spare a hit a helper call or a hash lookup: the current task's comm and
//! whether its process is tracked, both kept valid by the task generation (`COMM_GEN`).

use aya_ebpf::helpers::{bpf_get_current_comm, generated};
use aya_ebpf::macros::{map, raw_tracepoint};
use aya_ebpf::maps::PerCpuArray;
use aya_ebpf::programs::RawTracePointContext;
use core::ffi::c_void;
use tracer_common::{TRACK_ACTIVE, TRACK_PENDING, USES_COMM_CACHE};

use crate::maps::TRACKED;
use crate::uses;

/// The last comm read on each CPU, with the task and the rename generation it was read at
/// (`USES_COMM_CACHE`).
#[repr(C)]
pub(crate) struct CommCache {
    pid_tgid: u64,
    /// `COMM_GEN` + 1 when read, so that the zeroed entry matches nothing.
    stamp: u64,
    /// The name's 16 bytes as two words: copied with two loads and two stores (a `[u8; 16]`
    /// is copied a byte at a time).
    comm: [u64; 2],
}

#[map]
pub(crate) static COMM_CACHE: PerCpuArray<CommCache> = PerCpuArray::with_max_entries(1, 0);

/// The task generation: bumped by `comm_renamed` whenever any task is renamed (every CPU's
/// cached comm is then stale), and by the tracking programs whenever the `-- COMMAND` process
/// set changes (every run count's filter verdict may be). A global (in `.bss`) rather than a
/// map entry: programs address it directly, with no lookup that could fail.
#[unsafe(no_mangle)]
pub(crate) static mut COMM_GEN: u64 = 0;

/// The task generation + 1 (so that a zeroed cache or run matches nothing).
#[inline(always)]
pub(crate) fn generation_stamp() -> u64 {
    // SAFETY: the shared counter is read with one aligned volatile load.
    unsafe { core::ptr::read_volatile(&raw const COMM_GEN) + 1 }
}

/// Moves the task generation on (any CPU, any program: atomically, since a lost update could
/// bring back an old generation).
#[inline(always)]
pub(crate) fn next_generation() {
    use core::intrinsics::{atomic_xadd, AtomicOrdering};
    // SAFETY: the counter is only ever changed atomically.
    unsafe { atomic_xadd::<u64, u64, { AtomicOrdering::Relaxed }>(&raw mut COMM_GEN, 1) };
}

/// The last task found in `TRACKED` on each CPU, with the generation it was found at.
#[repr(C)]
pub(crate) struct TrackedCache {
    pid_tgid: u64,
    /// The task generation + 1 then (0 matches nothing).
    stamp: u64,
}

#[map]
pub(crate) static TRACKED_CACHE: PerCpuArray<TrackedCache> = PerCpuArray::with_max_entries(1, 0);

/// The current task's comm (see `current_comm_words`), as bytes.
#[inline(always)]
pub(crate) fn current_comm(pid_tgid: u64) -> [u8; 16] {
    let words = current_comm_words(pid_tgid);
    // SAFETY: 16 plain bytes either way.
    unsafe { core::mem::transmute::<[u64; 2], [u8; 16]>(words) }
}

/// Stores a comm's words as an event's name: two stores.
#[inline(always)]
pub(crate) fn put_comm(comm: &mut [u8; 16], words: [u64; 2]) {
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
pub(crate) fn current_comm_words(pid_tgid: u64) -> [u64; 2] {
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

/// Is `tgid` the launched command's process before its exec (`TRACKED`, pending)?
#[inline(always)]
pub(crate) fn is_pending(tgid: u32) -> bool {
    // SAFETY: the value is copied out at once.
    matches!(unsafe { TRACKED.get(&tgid) }, Some(&state) if state == TRACK_PENDING)
}

/// Is the current task's process in the `-- COMMAND` set (`TRACKED`, active)? With the task
/// generation kept (`USES_COMM_CACHE`: the tracking programs move it whenever the set
/// changes), the last task found in it on this CPU is remembered, which spares its further
/// hits the hash lookup.
#[inline(always)]
pub(crate) fn is_tracked(pid_tgid: u64) -> bool {
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
