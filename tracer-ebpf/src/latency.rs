//! Latency programs: an entry stamps a start time per key, the matching exit turns the delta
//! into a histogram bucket (per CPU, per `--by` group), keeps sum and max, and streams calls
//! slower than a threshold. Included into the probes object, which owns the maps they share.

use aya_ebpf::macros::{kprobe, map, tracepoint};
use aya_ebpf::maps::{Array, LruHashMap, PerCpuArray, PerCpuHashMap};
use aya_ebpf::programs::{ProbeContext, RetProbeContext, TracePointContext};
use aya_ebpf::EbpfContext;
use tracer_common::{
    HistKey, LatConfig, LatStart, HIST_BUCKETS, HIST_MAX, HIST_SUM, LAT_BY_COMM, LAT_BY_CPU,
    LAT_BY_NONE, LAT_BY_PID, LAT_BY_TID, LAT_STAT_COUNT, LAT_STAT_ENTRIES, LAT_STAT_EXITS,
    LAT_STAT_NO_ENTRY, LAT_STAT_OUTLIER_LOST,
};

use crate::{emit_raw, passes};

#[map]
static LAT_CONFIG: Array<LatConfig> = Array::with_max_entries(1, 0);

/// Start times by key; LRU, so entries whose exit never comes cannot fill it up.
#[map]
static LAT_START: LruHashMap<u64, LatStart> = LruHashMap::with_max_entries(1, 0);

#[map]
static LAT_HIST: PerCpuHashMap<HistKey, u64> = PerCpuHashMap::with_max_entries(1, 0);

/// The one histogram when there is no `--by`: buckets, then sum and max, in a per-CPU array
/// (an array lookup is much cheaper than a hash lookup on this per-call path).
#[map]
static LAT_ARRAY: PerCpuArray<u64> = PerCpuArray::with_max_entries(HIST_MAX as u32 + 1, 0);

#[map]
static LAT_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(LAT_STAT_COUNT, 0);

#[inline(always)]
fn count(index: u32) {
    if let Some(c) = LAT_STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU counter; these programs do not nest on one CPU.
        unsafe { *c += 1 };
    }
}

/// The key of a call: the thread, or a tracepoint record field.
#[inline(always)]
fn key(config: &LatConfig, ctx: Option<&TracePointContext>, offset: u32) -> u64 {
    match ctx {
        Some(tp) if config.key_size != 0 => {
            // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly.
            let raw = unsafe { tp.read_at::<u64>(offset as usize) }.unwrap_or(0);
            if config.key_size >= 8 {
                raw
            } else {
                raw & ((1u64 << (8 * config.key_size)) - 1)
            }
        }
        _ => aya_ebpf::helpers::bpf_get_current_pid_tgid(),
    }
}

#[inline(always)]
fn entry(args: [u64; 6], tp: Option<&TracePointContext>) {
    let Some(config) = LAT_CONFIG.get(0) else {
        return;
    };
    let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    // SAFETY: helper without preconditions.
    let cpu = unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() };
    if !passes(&config.filter, pid_tgid, cpu) {
        return;
    }
    count(LAT_STAT_ENTRIES);
    let start = LatStart {
        // SAFETY: helper without preconditions.
        time_ns: unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() },
        args,
    };
    let _ = LAT_START.insert(&key(config, tp, config.entry_key_offset), &start, 0);
}

#[inline(always)]
fn bucket(config: &LatConfig, delta: u64) -> u64 {
    if config.linear_step != 0 {
        let b = delta / config.linear_step;
        if b >= HIST_BUCKETS {
            HIST_BUCKETS - 1
        } else {
            b
        }
    } else {
        // log2: the index of the highest set bit (0 for 0 and 1).
        if delta == 0 {
            0
        } else {
            63 - delta.leading_zeros() as u64
        }
    }
}

#[inline(always)]
fn add(key: &HistKey, value: u64, max: bool) {
    // SAFETY: the pointer is this CPU's value, used at once.
    match LAT_HIST.get_ptr_mut(key) {
        Some(cell) => unsafe {
            if max {
                if value > *cell {
                    *cell = value;
                }
            } else {
                *cell += value;
            }
        },
        None => {
            let _ = LAT_HIST.insert(key, &value, 0);
        }
    }
}

#[inline(always)]
fn exit<C: EbpfContext>(ctx: &C, tp: Option<&TracePointContext>, ret: u64) {
    let Some(config) = LAT_CONFIG.get(0) else {
        return;
    };
    let k = key(config, tp, config.exit_key_offset);
    // SAFETY: the value is copied out at once.
    let Some(start) = (unsafe { LAT_START.get(&k) }).copied() else {
        // Only count exits of calls we would have counted: filter like the entry did.
        let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
        // SAFETY: helper without preconditions.
        let cpu = unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() };
        if passes(&config.filter, pid_tgid, cpu) {
            count(LAT_STAT_NO_ENTRY);
        }
        return;
    };
    let _ = LAT_START.remove(&k);
    count(LAT_STAT_EXITS);
    // SAFETY: helpers without preconditions.
    let now = unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() };
    let delta = now.saturating_sub(start.time_ns);
    let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    let mut group = [0u8; 16];
    match config.by {
        LAT_BY_COMM => group = aya_ebpf::helpers::bpf_get_current_comm().unwrap_or([0; 16]),
        LAT_BY_PID => group[..8].copy_from_slice(&(pid_tgid >> 32).to_ne_bytes()),
        LAT_BY_TID => group[..8].copy_from_slice(&(pid_tgid & 0xffff_ffff).to_ne_bytes()),
        // SAFETY: helper without preconditions.
        LAT_BY_CPU => group[..8].copy_from_slice(
            &(unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() } as u64).to_ne_bytes(),
        ),
        _ => {}
    }
    if config.by == LAT_BY_NONE {
        // One histogram: per-CPU array cells, much cheaper than hash lookups per call.
        let cell = |index: u64| LAT_ARRAY.get_ptr_mut(index as u32);
        // SAFETY: this CPU's cells, used at once; these programs do not nest on one CPU.
        unsafe {
            if let Some(c) = cell(bucket(config, delta)) {
                *c += 1;
            }
            if let Some(c) = cell(HIST_SUM) {
                *c += delta;
            }
            if let Some(c) = cell(HIST_MAX) {
                if delta > *c {
                    *c = delta;
                }
            }
        }
    } else {
        add(
            &HistKey {
                group,
                bucket: bucket(config, delta),
            },
            1,
            false,
        );
        add(
            &HistKey {
                group,
                bucket: HIST_SUM,
            },
            delta,
            false,
        );
        add(
            &HistKey {
                group,
                bucket: HIST_MAX,
            },
            delta,
            true,
        );
    }
    if config.slower_than != 0 && delta >= config.slower_than {
        let mut data = [0u64; 8];
        data[0] = delta;
        let mut i = 0;
        while i < 6 {
            data[i + 1] = start.args[i];
            i += 1;
        }
        data[7] = ret;
        if !emit_raw(ctx, &data) {
            count(LAT_STAT_OUTLIER_LOST);
        }
    }
}

#[kprobe]
pub fn lat_kp_entry(ctx: ProbeContext) -> u32 {
    let mut args = [0u64; 6];
    let mut i = 0;
    while i < 6 {
        args[i] = ctx.arg::<u64>(i).unwrap_or(0);
        i += 1;
    }
    entry(args, None);
    0
}

#[kprobe]
pub fn lat_kp_exit(ctx: ProbeContext) -> u32 {
    let ret = RetProbeContext::new(ctx.regs as *mut core::ffi::c_void).ret::<u64>();
    exit(&ctx, None, ret);
    0
}

#[tracepoint]
pub fn lat_tp_entry(ctx: TracePointContext) -> u32 {
    entry([0; 6], Some(&ctx));
    0
}

#[tracepoint]
pub fn lat_tp_exit(ctx: TracePointContext) -> u32 {
    exit(&ctx, Some(&ctx), 0);
    0
}
