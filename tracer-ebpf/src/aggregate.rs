//! In-kernel counting (`--count-by`, `--sum`, `--hist`): keys, the count maps, and the per-CPU
//! run that counts a task's repeated hits without a hash lookup each.

use aya_ebpf::helpers::{bpf_get_current_cgroup_id, bpf_get_current_pid_tgid, generated};
use aya_ebpf::macros::map;
use aya_ebpf::maps::{PerCpuArray, PerCpuHashMap};
use aya_ebpf::programs::PerfEventContext;
use core::ffi::c_void;
use tracer_common::{
    drop, stat_cells, stat_failed, stat_hits, str_flag, word, AggKey, AggValue, Event, RunCount,
    SlotConfig, StrAggKey, AGG_BUCKET_NEGATIVE, AGG_CGROUP, AGG_COMM, AGG_CPU, AGG_HIST,
    AGG_KEY_STRING, AGG_KEY_VALUE, AGG_PID, AGG_SUM, AGG_TID, KEY_STRLEN, SLOT_RUN_AT_IP,
    SLOT_RUN_COUNT, SLOT_RUN_KEYED, SLOT_STACK_AT_ENTRY, SLOT_STOPPED, SRC_SIGNED, STR_ENTRY,
    USES_AGG_VALUE, USES_RUN_COUNT, USES_RUN_KEYED, USES_STRINGS,
};

use crate::caches::{current_comm_words, generation_stamp, put_comm};
use crate::filters::{debug_dropped, read_src};
use crate::maps::{add, bump, scratch, zero_words, CONFIG};
use crate::reads::entry_of;
use crate::uses;

/// Each CPU's run of counted hits not yet in `COUNTS` (`USES_RUN_COUNT`).
#[map]
pub(crate) static RUN_COUNT: PerCpuArray<RunCount> = PerCpuArray::with_max_entries(1, 0);

/// In-kernel aggregation (`--count-by`, `--sum`, `--hist`): per-CPU counters per key, so a hit
/// costs one hash lookup and two adds, with no atomics. Sized by userspace only when used.
#[map]
pub(crate) static COUNTS: PerCpuHashMap<AggKey, AggValue> = PerCpuHashMap::with_max_entries(1, 0);

/// `COUNTS` for counts keyed by a string's content (`AGG_KEY_STRING`), sized by userspace
/// only for runs counted by a named value. Preallocated: 5.10's verifier refuses a
/// perf_event program that uses a hash map allocated at run time (and warns for the others).
#[map]
pub(crate) static STR_COUNTS: PerCpuHashMap<StrAggKey, AggValue> =
    PerCpuHashMap::with_max_entries(1, 0);

/// An [`AggKey`] in words.
pub(crate) const KEY_WORDS: usize = core::mem::size_of::<AggKey>() / 8;
const _: () = assert!(core::mem::size_of::<AggKey>() == KEY_WORDS * 8);

/// A key as its words (`AggKey` is `repr(C)`, 8-byte aligned, a whole number of words and free
/// of padding, all plain integers: any words are a valid key).
#[inline(always)]
pub(crate) fn key_words(key: &AggKey) -> &[u64; KEY_WORDS] {
    // SAFETY: as said above.
    unsafe { &*(key as *const AggKey as *const [u64; KEY_WORDS]) }
}

/// Whether two keys are equal, word by word (a derived `==` compares field by field, the comm
/// a byte at a time).
#[inline(always)]
pub(crate) fn same_key(a: &AggKey, b: &AggKey) -> bool {
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

/// Counts a hit in `COUNTS` under the key parts the slot asks for; a full map counts as a
/// failed output (reported as not counted).
#[inline(always)]
pub(crate) fn aggregate(event: &mut Event, config: &SlotConfig) {
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
pub(crate) fn count_string(event: &mut Event, key: &AggKey, read: u32, sum: u64) {
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
pub(crate) fn continues_run(slot: u32, pid_tgid: u64, ip: Option<u64>) -> bool {
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
pub(crate) fn continues_run_at_ip(ctx: &PerfEventContext, slot: u32) -> bool {
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
pub(crate) fn begin_run(run: &mut RunCount, key: &AggKey, pid_tgid: u64, stamp: u64) {
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
pub(crate) fn add_count(key: &AggKey, count: u64, sum: u64) {
    add_cell(&COUNTS, key, key.slot, count, sum);
}

/// Adds `count` hits and `sum` to `key`'s cell of a count map (`COUNTS`, `STR_COUNTS`); hits
/// that find it full are counted as failed for `slot`.
#[inline(always)]
pub(crate) fn add_cell<K>(
    map: &PerCpuHashMap<K, AggValue>,
    key: &K,
    slot: u32,
    count: u64,
    sum: u64,
) {
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
            match map.insert(key, &cell, 0) {
                Ok(()) => add(stat_cells(slot), 1),
                Err(_) => {
                    add(stat_failed(slot), count);
                    debug_dropped(slot, drop::MAP_FULL, bpf_get_current_pid_tgid(), 0);
                }
            }
        }
    }
}
