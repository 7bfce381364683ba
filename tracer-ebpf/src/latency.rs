//! Latency programs: an entry stamps a start time per key, the matching exit turns the delta
//! into a histogram bucket (per CPU, per `--by` group), keeps sum and max, and streams calls
//! slower than a threshold. Included into the probes object, which owns the maps they share.

use aya_ebpf::helpers::{bpf_probe_read_user, generated};
use aya_ebpf::macros::{fentry, fexit, kprobe, map};
use aya_ebpf::maps::{Array, LruHashMap, PerCpuArray, PerCpuHashMap};
use aya_ebpf::programs::tracing::StackIdContext;
use aya_ebpf::programs::{
    FEntryContext, FExitContext, ProbeContext, RetProbeContext, TracePointContext,
};
use aya_ebpf::EbpfContext;
use tracer_common::{
    str_from, word, HistKey, LatConfig, LatKey, LatKeySrc, LatOutlier, LatStart, DATA_WORDS,
    FIELD_READS, HIST_MAX, HIST_MIN, HIST_OVERFLOW, HIST_SUM, LAT_BY_COMM, LAT_BY_CPU,
    LAT_BY_FUNCTION, LAT_BY_NONE, LAT_BY_PID, LAT_BY_START, LAT_BY_TID, LAT_BY_VALUE,
    LAT_FILTER_SLOT, LAT_KEY_PARTS, LAT_STACK_AT_START, LAT_STAT_COUNT, LAT_STAT_ENTRIES,
    LAT_STAT_EXITS, LAT_STAT_FILTERED, LAT_STAT_NO_ENTRY, LAT_STAT_OUTLIER_LOST, LAT_STAT_REPLACED,
    LAT_USDT_END, LAT_USDT_START, LAT_WORD_FIELD, SLOT_STACK_AT_ENTRY, SLOT_STOPPED,
    SLOT_VALUE_FILTER, USES_BUFFERS, USES_LAT_FUNCTIONS, USES_LAT_MEMBERS, USES_OUTLIER_STRINGS,
    USES_USDT, USES_VALUE_FILTER,
};

use crate::caches::{current_comm, current_comm_words};
use crate::emit::{emit_raw, stack_ids_at};
use crate::filters::{filter_passes, passes};
use crate::maps::{scratch_at, zero_words, SCRATCH};
use crate::reads::{read_members, usdt_args, user_sp};
use crate::slots::function_args;
use crate::uses;

#[map]
static LAT_CONFIG: Array<LatConfig> = Array::with_max_entries(1, 0);

/// Start times by key; LRU, so entries whose exit never comes cannot fill it up.
#[map]
static LAT_START: LruHashMap<LatKey, LatStart> = LruHashMap::with_max_entries(1, 0);

/// What each measured function's outliers show of its start ([`LatOutlier`]), by the
/// function's index; as many entries as functions.
#[map]
static LAT_OUTLIER: Array<LatOutlier> = Array::with_max_entries(1, 0);

#[map]
static LAT_HIST: PerCpuHashMap<HistKey, u64> = PerCpuHashMap::with_max_entries(1, 0);

/// The one histogram when there is no `--by`: buckets, then sum, max and min, in a per-CPU array
/// (an array lookup is much cheaper than a hash lookup on this per-call path).
#[map]
static LAT_ARRAY: PerCpuArray<u64> = PerCpuArray::with_max_entries(HIST_MIN as u32 + 1, 0);

#[map]
static LAT_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(LAT_STAT_COUNT, 0);

#[inline(always)]
fn count(index: u32) {
    if let Some(c) = LAT_STATS.get_ptr_mut(index) {
        crate::maps::add_to(c, 1);
    }
}

/// Where key parts are read at one end of the pair.
enum Source<'a> {
    /// A tracepoint: its record.
    Record(&'a TracePointContext),
    /// A kprobe or uprobe: its argument registers.
    Args(&'a [u64; 6]),
    /// A return probe: nothing but the thread.
    Thread,
}

/// The key of a call: the thread (and the function, of several measured), or the `--key`
/// parts read from the record or registers.
#[inline(always)]
fn key(parts: &[LatKeySrc; LAT_KEY_PARTS], source: &Source, function: u64) -> LatKey {
    let mut key = LatKey::default();
    if parts[0] >> 8 & 0xff == 0 {
        key.parts[0] = aya_ebpf::helpers::bpf_get_current_pid_tgid();
        key.parts[1] = function;
        return key;
    }
    let mut i = 0;
    while i < LAT_KEY_PARTS {
        if parts[i] == tracer_common::LAT_KEY_TID {
            key.parts[i] = aya_ebpf::helpers::bpf_get_current_pid_tgid() & 0xffff_ffff;
        } else if parts[i] >> 8 & 0xff != 0 {
            key.parts[i] = value_at(parts[i], source);
        }
        i += 1;
    }
    key
}

/// The value a [`LatKeySrc`] names in `source`, zero-extended from its size.
#[inline(always)]
fn value_at(part: LatKeySrc, source: &Source) -> u64 {
    let (offset, size) = (part & 0xff, part >> 8 & 0xff);
    let raw = match source {
        // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly.
        Source::Record(tp) => unsafe { tp.read_at::<u64>(offset as usize) }.unwrap_or(0),
        // Constant indices: no variable stack offset for the verifier to refuse.
        Source::Args(args) => match offset / 8 {
            0 => args[0],
            1 => args[1],
            2 => args[2],
            3 => args[3],
            4 => args[4],
            _ => args[5],
        },
        Source::Thread => 0,
    };
    if size >= 8 {
        raw
    } else {
        raw & ((1u64 << (8 * size)) - 1)
    }
}

/// `function`: which of several measured functions this is (its attach cookie), else 0.
#[inline(always)]
fn entry<C: StackIdContext>(ctx: &C, args: [u64; 6], source: &Source, function: u64) {
    let Some(config) = LAT_CONFIG.get(0) else {
        return;
    };
    if config.filter.flags & SLOT_STOPPED != 0 {
        return;
    }
    let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    // SAFETY: helper without preconditions.
    let cpu = unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() };
    if !passes(&config.filter, pid_tgid, cpu) {
        return;
    }
    count(LAT_STAT_ENTRIES);
    let mut start = LatStart {
        // SAFETY: helper without preconditions.
        time_ns: unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() },
        args,
        extra: function,
        ..LatStart::default()
    };
    // Outliers show who started the call and, at a tracepoint, its record: read only when
    // there are outliers to show, off the histogram-only path.
    if config.slower_than != 0 {
        start.pid_tgid = pid_tgid;
        start.comm = current_comm_words(pid_tgid);
        if config.stack_flags & LAT_STACK_AT_START != 0 {
            (start.kstack, start.ustack, _) = stack_ids_at(ctx, config.stack_flags, start.time_ns);
        }
        // The members outliers show, read as the call begins (a position the call moves).
        if uses(USES_LAT_MEMBERS) {
            if let Some(out) = LAT_OUTLIER.get(function as u32) {
                let mut words = [0u64; DATA_WORDS];
                let mut i = 0;
                while i < 6 {
                    words[i] = args[i];
                    i += 1;
                }
                let faults = (&mut start.fields, &mut start.field_faults);
                read_members(&words, &out.reads, faults);
            }
        }
        if let Source::Record(tp) = source {
            // SAFETY: read_at uses bpf_probe_read_kernel, which fails cleanly. The record's
            // buffer is the tracepoint's per-CPU one, longer than these 64 bytes.
            unsafe {
                start.args = tp.read_at::<[u64; 6]>(8).unwrap_or([0; 6]);
                start.extra = tp.read_at::<u64>(56).unwrap_or(0);
            }
        }
    }
    // BPF_NOEXIST first: a start already there is a call whose end was missed; count it, then
    // replace it (the newer start is the one whose end can still come).
    let key = key(&config.entry_key, source, function);
    if LAT_START.insert(&key, &start, 1).is_err() {
        count(LAT_STAT_REPLACED);
        let _ = LAT_START.insert(&key, &start, 0);
    }
}

/// The `--by` group of a call ending now: the task's comm, pid, tid or CPU, or a value of the
/// end's record or registers, or of the start's ([`LAT_BY_START`]); zeros for none.
#[inline(always)]
fn group_of(config: &LatConfig, source: &Source, start: &LatStart) -> [u8; 16] {
    let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    let mut group = [0u8; 16];
    match config.by {
        LAT_BY_COMM => group = current_comm(pid_tgid),
        LAT_BY_PID => group[..8].copy_from_slice(&(pid_tgid >> 32).to_ne_bytes()),
        LAT_BY_TID => group[..8].copy_from_slice(&(pid_tgid & 0xffff_ffff).to_ne_bytes()),
        // SAFETY: helper without preconditions.
        LAT_BY_CPU => group[..8].copy_from_slice(
            &(unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() } as u64).to_ne_bytes(),
        ),
        LAT_BY_FUNCTION => group[..8].copy_from_slice(&start.extra.to_ne_bytes()),
        LAT_BY_VALUE => {
            let value = match config.by_src & LAT_BY_START {
                0 => value_at(config.by_src, source),
                _ => value_at(config.by_src & 0xffff, &Source::Args(&start.args)),
            };
            group[..8].copy_from_slice(&value.to_ne_bytes());
        }
        _ => {}
    }
    group
}

#[inline(always)]
fn bucket(config: &LatConfig, delta: u64) -> u64 {
    if config.linear_step != 0 {
        // Past the last step: the overflow row, which userspace labels as such.
        let b = delta / config.linear_step;
        if b >= HIST_OVERFLOW {
            HIST_OVERFLOW
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
    match LAT_HIST.get_ptr_mut(key) {
        // SAFETY: the pointer is this CPU's value, used at once.
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

/// `ret`: the end's return value (a return probe), else 0. `entry_sp`: a uprobe or uretprobe
/// end's stack pointer, else 0 (a kernel end: [`user_sp`] finds the user's): at a
/// function's first instruction ([`SLOT_STACK_AT_ENTRY`])
/// the word there is the direct caller, which the frame-pointer walk skips on kernels that do
/// not repair it.
/// `function` as for [`entry`].
#[inline(always)]
fn exit<C: StackIdContext>(
    ctx: &C,
    (source, function): (&Source, u64),
    ret: u64,
    entry_sp: u64,
    at: u32,
) {
    let Some(config) = LAT_CONFIG.get(0) else {
        return;
    };
    if config.filter.flags & SLOT_STOPPED != 0 {
        return;
    }
    let k = key(&config.exit_key, source, function);
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
    // `--filter`: on the start's argument registers, the end's return value and the task,
    // laid out as a probe hit's (arguments, then the return value), so it compiles the same.
    if uses(USES_VALUE_FILTER) && config.filter.flags & SLOT_VALUE_FILTER != 0 {
        // SAFETY: entry `at` of this CPU is this program's (`scratch_at`) until it returns.
        let Some(event) = SCRATCH.get_ptr_mut(at).map(|p| unsafe { &mut (*p).event }) else {
            return;
        };
        event.pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
        // SAFETY: helper without preconditions.
        event.cpu = unsafe { aya_ebpf::helpers::bpf_get_smp_processor_id() };
        event.str_bytes = 0;
        zero_words(&mut event.fields);
        let mut i = 0;
        while i < word::ARGS {
            event.data[word::ARG0 + i] = start.args[i];
            i += 1;
        }
        event.data[word::RETURN] = ret;
        event.data[DATA_WORDS - 1] = 0;
        if !filter_passes(event, LAT_FILTER_SLOT) {
            count(LAT_STAT_FILTERED);
            return;
        }
    }
    count(LAT_STAT_EXITS);
    // SAFETY: helpers without preconditions.
    let now = unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() };
    let delta = now.saturating_sub(start.time_ns);
    let group = group_of(config, source, &start);
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
            if let Some(c) = cell(HIST_MIN) {
                if !delta > *c {
                    *c = !delta;
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
        add(
            &HistKey {
                group,
                bucket: HIST_MIN,
            },
            !delta,
            true,
        );
    }
    // `slower_than` is the threshold plus one (0: no outliers).
    if config.slower_than != 0 && delta >= config.slower_than - 1 {
        outlier(ctx, config, (&start, function), ret, entry_sp, delta, at);
    }
}

/// A call slower than `--slower-than`: streamed with its arguments, return value and stacks.
/// `function` as for [`entry`].
#[inline(always)]
fn outlier<C: StackIdContext>(
    ctx: &C,
    config: &LatConfig,
    (start, function): (&LatStart, u64),
    ret: u64,
    entry_sp: u64,
    delta: u64,
    at: u32,
) {
    let mut data = [0u64; DATA_WORDS];
    data[word::LAT_DURATION] = delta;
    let out = match uses(USES_OUTLIER_STRINGS) || uses(USES_LAT_MEMBERS) {
        true => LAT_OUTLIER.get(function as u32),
        false => None,
    };
    let mut i = 0;
    while i < word::ARGS {
        data[word::LAT_ARG0 + i] = match out {
            Some(out) if uses(USES_LAT_MEMBERS) => start_word(start, out.words[i]),
            _ => start.args[i],
        };
        i += 1;
    }
    data[word::LAT_RETURN] = ret;
    // An end at a function's entry has no return value: the word carries its caller.
    if config.stack_flags & SLOT_STACK_AT_ENTRY != 0 {
        // SAFETY: the probe-read helper fails cleanly on a bad user address.
        data[word::ENTRY_RET] = unsafe { bpf_probe_read_user(entry_sp as *const u64) }.unwrap_or(0);
    }
    // SAFETY: helper without preconditions.
    let now = unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() };
    // Stacks at the start: taken then, which userspace knows from the duration.
    let (kstack, ustack, span) = match config.stack_flags & LAT_STACK_AT_START {
        0 => stack_ids_at(ctx, config.stack_flags, now),
        _ => (start.kstack, start.ustack, 0),
    };
    let mut start_task = [0u64; FIELD_READS];
    start_task[word::LAT_START_TASK] = start.pid_tgid;
    start_task[word::LAT_START_COMM] = start.comm[0];
    start_task[word::LAT_START_COMM + 1] = start.comm[1];
    start_task[word::LAT_START_EXTRA] = start.extra;
    // The end's user stack top (`str_from::STACK`), unwound by CFI in userspace: from a
    // uprobe's registers, else (a kernel end) from those the task entered the kernel with.
    let top_sp = match (config.filter.strs[0].from == str_from::STACK, entry_sp) {
        (false, _) => 0,
        (true, 0) if uses(USES_BUFFERS) => user_sp(),
        (true, sp) => sp,
    };
    let strings = (at, top_sp, out.map_or(&config.filter, |out| &out.reads));
    let faults = match uses(USES_LAT_MEMBERS) {
        true => start.field_faults & ((1 << FIELD_READS) - 1),
        false => 0,
    };
    let stamp = (now, kstack, ustack, span | faults);
    if !emit_raw(ctx, (&data, &start_task), stamp, strings) {
        count(LAT_STAT_OUTLIER_LOST);
    }
}

/// The start's word an outlier carries where [`LatOutlier::words`] says: an argument
/// register, or a member the start read. Constant indices: no variable stack offset for the
/// verifier to refuse.
#[inline(always)]
fn start_word(start: &LatStart, which: u8) -> u64 {
    match which {
        0 => start.args[0],
        1 => start.args[1],
        2 => start.args[2],
        3 => start.args[3],
        4 => start.args[4],
        5 => start.args[5],
        LAT_WORD_FIELD => start.fields[0],
        9 => start.fields[1],
        10 => start.fields[2],
        11 => start.fields[3],
        _ => 0,
    }
}
const _: () = assert!(
    FIELD_READS == 4 && LAT_WORD_FIELD == 8,
    "start_word lists each member read"
);

/// The argument words of a start or end probe (`end`: [`LAT_USDT_END`]): a USDT probe's as its
/// note says, else the argument registers.
#[inline(always)]
fn registers(ctx: &ProbeContext, end: u32) -> [u64; 6] {
    let mut args = [0u64; 6];
    if uses(USES_USDT) {
        let usdt = LAT_CONFIG.get(0).map_or(0, |c| c.usdt);
        if usdt & end != 0 {
            let mut faults = 0;
            usdt_args(ctx, end, &mut args, &mut faults);
            return args;
        }
    }
    let mut i = 0;
    while i < 6 {
        args[i] = ctx.arg::<u64>(i).unwrap_or(0);
        i += 1;
    }
    args
}

/// A uprobe's stack pointer; 0 at a kprobe, whose registers are the kernel's (its code
/// segment's privilege level 0).
#[inline(always)]
fn user_mode_sp(ctx: &ProbeContext) -> u64 {
    // SAFETY: `regs` is the probe's context (fixed-offset loads the verifier checks).
    let (cs, sp) = unsafe { ((*ctx.regs).cs, (*ctx.regs).rsp) };
    match cs & 3 {
        3 => sp,
        _ => 0,
    }
}

/// Which of several measured functions a probe is at: its attach cookie (`USES_LAT_FUNCTIONS`
/// only: the helper is Linux 5.15's), else 0.
#[inline(always)]
fn function_of(ctx: &ProbeContext) -> u64 {
    match uses(USES_LAT_FUNCTIONS) {
        // SAFETY: the helper reads the cookie of the link the program runs from.
        true => unsafe { generated::bpf_get_attach_cookie(ctx.as_ptr()) },
        false => 0,
    }
}

#[kprobe]
pub fn lat_kp_entry(ctx: ProbeContext) -> u32 {
    let args = registers(&ctx, LAT_USDT_START);
    entry(&ctx, args, &Source::Args(&args), function_of(&ctx));
    0
}

/// The end at a kprobe or uprobe (not a return probe): the key may be an argument.
#[kprobe]
pub fn lat_kp_end(ctx: ProbeContext) -> u32 {
    let args = registers(&ctx, LAT_USDT_END);
    exit(
        &ctx,
        (&Source::Args(&args), 0),
        0,
        user_mode_sp(&ctx),
        scratch_at::PERF,
    );
    0
}

/// The end at a kretprobe or uretprobe: keyed by thread, with the return value. A uretprobe's
/// registers are the caller's at the return address (the kernel sets the instruction pointer
/// back before the handlers run): its stack top is copied from there.
#[kprobe]
pub fn lat_kp_exit(ctx: ProbeContext) -> u32 {
    let ret = RetProbeContext::new(ctx.regs as *mut core::ffi::c_void).ret::<u64>();
    exit(
        &ctx,
        (&Source::Thread, function_of(&ctx)),
        ret,
        user_mode_sp(&ctx),
        scratch_at::PERF,
    );
    0
}

/// The start at a kernel function's entry through fentry (loaded for that function).
#[fentry]
pub fn lat_fn_entry(ctx: FEntryContext) -> u32 {
    let args = function_args(&ctx);
    entry(&ctx, args, &Source::Args(&args), 0);
    0
}

/// The end at a kernel function's entry through fentry: the key may be an argument.
#[fentry]
pub fn lat_fn_end(ctx: FEntryContext) -> u32 {
    let args = function_args(&ctx);
    exit(&ctx, (&Source::Args(&args), 0), 0, 0, scratch_at::FENTRY);
    0
}

/// The end at a kernel function's return through fexit: keyed by thread, with the return
/// value.
#[fexit]
pub fn lat_fn_exit(ctx: FExitContext) -> u32 {
    let mut ret = 0u64;
    // SAFETY: the helper reads the return value the trampoline saved into a valid stack slot.
    unsafe { generated::bpf_get_func_ret(ctx.as_ptr(), &mut ret) };
    exit(&ctx, (&Source::Thread, 0), ret, 0, scratch_at::FEXIT);
    0
}

crate::tracepoint_program!(lat_tp_entry => lat_tp_entry_hit);
fn lat_tp_entry_hit(ctx: TracePointContext) -> u32 {
    entry(&ctx, [0; 6], &Source::Record(&ctx), 0);
    crate::TRACEPOINT_PASS
}

crate::tracepoint_program!(lat_tp_exit => lat_tp_exit_hit);
fn lat_tp_exit_hit(ctx: TracePointContext) -> u32 {
    exit(&ctx, (&Source::Record(&ctx), 0), 0, 0, scratch_at::PERF);
    crate::TRACEPOINT_PASS
}
