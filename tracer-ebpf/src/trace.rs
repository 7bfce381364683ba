//! `tracer trace`: each system call's entry and exit paired in the kernel, per thread. The
//! entry keeps the arguments and the time (`TRACE_START`, by thread); the exit sends one
//! [`Event`] for the whole call (arguments, return value, duration, strings read after the
//! call: paths, what read(2) filled), through the probes' filters, `--filter` and counting.
//! The syscall's slot comes from `SYS_SLOTS` by its number: one pair of raw tracepoint
//! programs serves every traced syscall.

use aya_ebpf::helpers::{bpf_get_current_pid_tgid, bpf_get_smp_processor_id, bpf_ktime_get_ns};
use aya_ebpf::macros::{map, raw_tracepoint};
use aya_ebpf::maps::{HashMap, PerCpuArray};
use aya_ebpf::programs::RawTracePointContext;
use tracer_common::{
    drop, signal_word, stat_filtered, str_array, str_flag, str_from, trace_kind, trace_stat,
    trace_word, word, Event, SlotConfig, TraceStart, AT_EXECFN, ENTRY_TIMESPEC, FDSET_CALLS,
    IOVEC_CALLS, PT_REGS_SP, PT_REGS_SYSCALL_ARGS, SLOT_FILTER_TRACKED, SLOT_STACK_USER,
    SLOT_TRACE_AT_ENTRY, SLOT_TRACE_CPU_TIME, SLOT_TRACE_DIRENTS, SLOT_TRACE_FAILED,
    SLOT_TRACE_FD_INODES, SLOT_TRACE_FORKS, SLOT_TRACE_NO_RETURN, STRLEN_MAX, STR_AREA, STR_READS,
    SYSCALL_NRS, TRACE_EXIT_NR, TRACE_SAVED_FDSETS, TRACE_SAVED_IOVECS, TRACE_SAVED_STRINGS,
    TRACE_SIGNAL_NR, TRACK_ACTIVE, USES_CPU_TIME, USES_DIRENTS, USES_ENTRY_STRINGS, USES_FDSETS,
    USES_FD_INODES, USES_IOVECS, USES_NO_RETURN, USES_STRINGS, USES_TRACE,
};

use crate::filters::{filtered_out, refused_by};
use crate::maps::{
    bump, scratch, scratch_at, NO_ENTRY, SCHED_OFFSETS, SCRATCH, TRACE_FDSETS, TRACE_SAVED, TRACKED,
};
use crate::reads::{
    call_cpu_time, cpu_clock, fd_inodes, group_lives, put_array, put_string, read_strings, used,
};
use crate::slots::{begin, compat, finish, slot_of, syscall_nr};
use crate::uses;

/// rt_sigreturn(2) on x86-64. It restores the interrupted registers, `orig_ax` included
/// (-1: arch/x86/kernel/signal_64.c, "disable syscall checks"), so its exit reads no syscall
/// number.
const NR_RT_SIGRETURN: u64 = 15;
/// getdents(2) and getdents64(2) on x86-64, whose entries the exit counts.
const NR_GETDENTS: u64 = 78;
const NR_GETDENTS64: u64 = 217;
/// pselect6(2) on x86-64, whose sixth argument the exit reads besides its fd sets.
const NR_PSELECT6: u64 = 270;
/// SIGKILL: its delivery is the task's end, shown as `+++ killed by SIGKILL +++` only.
const SIGKILL: u64 = 9;

/// Calls in flight, by `pid_tgid`. Userspace sizes it ([`tracer_common::TRACE_ENTRIES`]) and
/// reads what is left at the end: the calls still blocked, shown unfinished.
#[map]
static TRACE_START: HashMap<u64, TraceStart> = HashMap::with_max_entries(1, 0);

/// The last signal sent to each traced process (by tgid), as `signal_generate` saw it. A
/// signal that will kill a process without a handler never reaches `signal_deliver` as
/// itself: the kernel turns it into SIGKILL for every thread when it is sent
/// (kernel/signal.c, complete_signal), and only the process's `group_exit_code` remembers
/// it. Its line is made from this, once, by the first thread that dies of it.
#[map]
static TRACE_FATAL: HashMap<u32, Sent> = HashMap::with_max_entries(1, 0);

/// A signal as it was sent: number, `si_code`, the siginfo's union words.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Sent {
    signo: u64,
    code: u64,
    union: [u64; signal_word::UNION_WORDS],
}

/// [`trace_stat`] counters.
#[map]
static TRACE_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(trace_stat::COUNT, 0);

#[inline(always)]
fn count(index: u32) {
    if let Some(c) = TRACE_STATS.get_ptr_mut(index) {
        crate::maps::add_to(c, 1);
    }
}

/// The launched command's own exec: its process is still pending (held before the exec), and
/// the exec is the first call of the command.
#[inline(always)]
fn pending_exec(config: &SlotConfig, pid_tgid: u64) -> bool {
    if config.flags & (SLOT_FILTER_TRACKED | SLOT_TRACE_AT_ENTRY)
        != SLOT_FILTER_TRACKED | SLOT_TRACE_AT_ENTRY
    {
        return false;
    }
    crate::caches::is_pending((pid_tgid >> 32) as u32)
}

/// The six argument registers of the x86-64 syscall ABI.
#[inline(always)]
fn arguments(regs: u64) -> [u64; word::ARGS] {
    let mut args = [0u64; word::ARGS];
    for (i, offset) in PT_REGS_SYSCALL_ARGS.iter().enumerate() {
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        args[i] =
            unsafe { aya_ebpf::helpers::bpf_probe_read_kernel((regs + offset) as *const u64) }
                .unwrap_or(0);
    }
    args
}

/// `--failed` refuses a call that did not fail (counted as filtered).
#[inline(always)]
fn refused_as_not_failed(event: &Event, config: &SlotConfig) -> bool {
    if config.flags & SLOT_TRACE_FAILED != 0 && event.fields[trace_word::FAILED] == 0 {
        bump(stat_filtered(event.slot));
        return true;
    }
    false
}

/// Fills a call's event words: arguments, return value, duration and kind.
#[inline(always)]
fn fill(event: &mut Event, start: &TraceStart, ret: u64, now: u64, kind: u64) {
    event.time_ns = start.time_ns;
    event.data[..word::ARGS].copy_from_slice(&start.args);
    event.data[word::RETURN] = ret;
    event.data[trace_word::DURATION] = now.wrapping_sub(start.time_ns);
    event.fields[trace_word::KIND] = kind;
    event.fields[trace_word::ENTRY_INT] = start.entry_int;
    let failed = (ret as i64) < 0 && (ret as i64) >= -4095;
    event.fields[trace_word::FAILED] = u64::from(failed);
}

#[raw_tracepoint]
pub fn trace_enter(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        on_enter(&ctx);
    }
    0
}

/// `sys_exit`, attached before `trace_exit` (the kernel runs a tracepoint's programs in the
/// order they were attached): what a call's exit reads in a loop, for `trace_exit` to send: a
/// getdents call's entries, counted, and a readv's or writev's iovec array (`iovecs`). A
/// program of its own: walked where the event is built, the dirents loop was walked again by
/// the verifier for every path there (trace_exit gave up at a million instructions on 6.18,
/// where it takes about 27,000), and first thing in trace_exit still cost 290,000; alone,
/// 36,939. One program for both loops: a second program on every exit cost 87 ns a call
/// (bpf_stats, getppid), most of it the invocation and the slot's lookup.
#[raw_tracepoint]
pub fn trace_exit_reads(ctx: RawTracePointContext) -> u32 {
    if uses(USES_DIRENTS | USES_IOVECS) {
        on_exit_reads(&ctx);
    }
    0
}

/// Counts the entries of a getdents call, or reads the iovec array of a readv or writev, of
/// the run's (its slot reads them, and its task is traced): not every process's calls pay.
#[inline(always)]
fn on_exit_reads(ctx: &RawTracePointContext) {
    let regs: u64 = ctx.arg(0);
    if compat(regs) {
        return;
    }
    let nr = syscall_nr(ctx, regs, true);
    let getdents = nr == NR_GETDENTS64 || nr == NR_GETDENTS;
    if !getdents
        && !IOVEC_CALLS.iter().any(|&c| u64::from(c) == nr)
        && !FDSET_CALLS.iter().any(|&c| u64::from(c) == nr)
    {
        return;
    }
    let Some((_, config)) = slot_of(nr) else {
        return;
    };
    let wanted = match getdents {
        true => uses(USES_DIRENTS) && config.flags & SLOT_TRACE_DIRENTS != 0,
        false => uses(USES_IOVECS) && config.strs[0].array >= str_array::IOVEC_GIVEN,
    };
    if !wanted {
        return;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    // SAFETY: helper without preconditions.
    let cpu = unsafe { bpf_get_smp_processor_id() };
    if refused_by(config, pid_tgid, cpu) != 0 {
        return;
    }
    // What is read goes with the call's entry (by task, as `trace_exit` finds it): a call
    // without one is not shown, and its reads are not made.
    let Some(start) = TRACE_START.get_ptr_mut(&pid_tgid) else {
        return;
    };
    // SAFETY: this task's entry, which no other task's program touches; it is removed by this
    // task's `trace_exit`, after this program.
    let start = unsafe { &mut *start };
    if u64::from(start.nr) != nr {
        return;
    }
    if getdents {
        crate::iovecs::dirents(regs, ctx.arg(1), &mut start.dirents);
        return;
    }
    let read = match config.strs[0].array {
        str_array::FDSETS => crate::iovecs::fdsets(ctx, regs, start, pid_tgid, nr == NR_PSELECT6),
        _ => crate::iovecs::read(ctx, regs, config, pid_tgid),
    };
    match read {
        Some(used) => {
            start.used = used;
            start.flags |= TRACE_SAVED_IOVECS;
        }
        None => count(trace_stat::IOVECS_FULL),
    }
}

#[raw_tracepoint]
pub fn trace_exit(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        on_exit(&ctx);
    }
    0
}

#[inline(always)]
fn on_enter(ctx: &RawTracePointContext) {
    let regs: u64 = ctx.arg(0);
    // 32-bit code numbers its syscalls from another table.
    if compat(regs) {
        return;
    }
    let nr = syscall_nr(ctx, regs, false);
    let Some((slot, config)) = slot_of(nr) else {
        return;
    };
    let pid_tgid = bpf_get_current_pid_tgid();
    // SAFETY: helper without preconditions.
    let cpu = unsafe { bpf_get_smp_processor_id() };
    let refused = refused_by(config, pid_tgid, cpu);
    if refused != 0 && !(refused == drop::UNTRACKED && pending_exec(config, pid_tgid)) {
        return;
    }
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    let mut start = TraceStart {
        time_ns: now,
        args: arguments(regs),
        nr: nr as u32,
        ..TraceStart::default()
    };
    if nr == NR_RT_SIGRETURN {
        sigreturn_mask(&mut start, regs);
    }
    if config.entry_int != 0 {
        start.entry_int = entry_int(&start.args, config.entry_int);
    }
    if uses(USES_FDSETS)
        && config.strs[0].array == str_array::FDSETS
        && !crate::iovecs::save_fdsets(&mut start, pid_tgid)
    {
        count(trace_stat::FDSETS_FULL);
    }
    if uses(USES_CPU_TIME) && config.flags & SLOT_TRACE_CPU_TIME != 0 {
        if let Some((clock, sum)) = cpu_clock(now) {
            (start.cpu_clock, start.cpu_sum, start.cpu) = (clock, sum, cpu);
        }
    }
    if uses(USES_NO_RETURN) && config.flags & SLOT_TRACE_NO_RETURN != 0 {
        // Sent now: no exit will come.
        let Some((event, config)) = begin(ctx, slot, scratch_at::TRACE_ENTER) else {
            return;
        };
        fill(event, &start, 0, now, trace_kind::NO_RETURN);
        event.data[trace_word::DURATION] = 0;
        if refused_as_not_failed(event, config) {
            return;
        }
        // No string read (`begin` left the event without strings): the calls that do not
        // return (exit, exit_group) take none, and a second inlined copy of the reads cost
        // this program a third of its verification time.
        if filtered_out(event, config) {
            return;
        }
        finish(ctx, event, config);
        return;
    }
    if uses(USES_ENTRY_STRINGS)
        && config.flags & SLOT_TRACE_AT_ENTRY != 0
        && config.strs[0].from != str_from::NONE
    {
        save_strings(&mut start, config, pid_tgid);
    }
    if TRACE_START.insert(&pid_tgid, &start, 0).is_err() {
        count(trace_stat::START_FULL);
    }
}

/// rt_sigreturn(2) takes no arguments: its entry keeps, in their place, the signal mask the
/// frame restores (strace's `rt_sigreturn({mask=[INT]})`), and 1 beside it once read. The
/// frame is the stack's at the call: the handler's return popped `pretcode`, leaving the
/// stack pointer at the `ucontext`, whose `uc_sigmask` follows the flags, the link, the
/// `stack_t` and the `sigcontext` (x86-64: 8 + 8 + 24 + 256 bytes). Read at the entry: the
/// call restores the interrupted stack pointer.
#[inline(always)]
fn sigreturn_mask(start: &mut TraceStart, regs: u64) {
    const UC_SIGMASK: u64 = 296;
    // SAFETY: the probe-read helpers fail cleanly on a bad address.
    let sp = unsafe { aya_ebpf::helpers::bpf_probe_read_kernel((regs + PT_REGS_SP) as *const u64) };
    let mask = sp
        .ok()
        .and_then(|sp| user_word(sp.wrapping_add(UC_SIGMASK)));
    start.args[0] = mask.unwrap_or(0);
    start.args[1] = u64::from(mask.is_some());
}

/// The `int` at the user address in argument `(which & 0xff) - 1`, `(which >> 8) & 0xff`
/// bytes on (`SlotConfig::entry_int`), with `ENTRY_INT_READ` set, or with
/// [`ENTRY_TIMESPEC`] the `struct timespec` there packed as [`trace_word::ENTRY_TIMESPEC_READ`]
/// says; 0 when it cannot be read. A constant index per argument: the verifier of 5.10
/// refuses a stack read at a variable offset.
#[inline(always)]
fn entry_int(args: &[u64; word::ARGS], which: u32) -> u64 {
    let ptr = match which & 0xff {
        1 => args[0],
        2 => args[1],
        3 => args[2],
        4 => args[3],
        5 => args[4],
        6 => args[5],
        _ => return 0,
    };
    let ptr = ptr.wrapping_add(u64::from((which >> 8) & 0xff));
    if which & ENTRY_TIMESPEC != 0 {
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        return match unsafe { aya_ebpf::helpers::bpf_probe_read_user(ptr as *const [u64; 2]) } {
            Ok([sec, nsec]) if sec < 1 << 33 && nsec < 1 << 30 => {
                trace_word::ENTRY_TIMESPEC_READ | sec << 30 | nsec
            }
            _ => 0,
        };
    }
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    match unsafe { aya_ebpf::helpers::bpf_probe_read_user(ptr as *const u32) } {
        Ok(value) => trace_word::ENTRY_INT_READ | u64::from(value),
        Err(_) => 0,
    }
}

/// Reads an execve's strings now (its memory is gone once it succeeds) into `TRACE_SAVED`.
#[inline(always)]
fn save_strings(start: &mut TraceStart, config: &SlotConfig, pid_tgid: u64) {
    // SAFETY: the entry program's own per-CPU entry (`scratch_at`), touched by no other
    // program until this invocation returns.
    let Some(scratch_ptr) = SCRATCH.get_ptr_mut(scratch_at::TRACE_ENTER) else {
        return;
    };
    // SAFETY: as above.
    let event = unsafe { &mut (*scratch_ptr).event };
    event.data[..word::ARGS].copy_from_slice(&start.args);
    event.data[word::RETURN] = 0;
    // An exec's reads (`probe::syscall`) are its path and `argv`: only the path is read here,
    // and `argv` at the exit (`exec_argv`). With the array's loop read here too, 6.1's and
    // 5.10's verifiers gave up on this program (a million instructions walked; 32,323 on
    // 6.18 for every read of every kind, 1,996 now).
    read_strings::<false, false, 1>(event, config, |_, _| 0);
    let scratch = scratch(event);
    // SAFETY: the area is `STR_BUFFER` bytes, more than `STR_AREA`.
    let area = unsafe { &*(scratch.area.as_ptr() as *const [u8; STR_AREA]) };
    if TRACE_SAVED.insert(&pid_tgid, area, 0).is_err() {
        count(trace_stat::SAVED_FULL);
        return;
    }
    start.flags |= TRACE_SAVED_STRINGS;
    start.used = scratch.used;
    start.first = scratch.first;
}

#[inline(always)]
fn on_exit(ctx: &RawTracePointContext) {
    let regs: u64 = ctx.arg(0);
    if compat(regs) {
        return;
    }
    let pid_tgid = bpf_get_current_pid_tgid();
    let mut nr = syscall_nr(ctx, regs, true);
    if nr >= u64::from(SYSCALL_NRS) {
        // SAFETY: the value is copied out at once.
        let entered = unsafe { TRACE_START.get(&pid_tgid) }.map(|s| u64::from(s.nr));
        if entered == Some(NR_RT_SIGRETURN) {
            nr = NR_RT_SIGRETURN;
        }
    }
    let Some((slot, config)) = slot_of(nr) else {
        return;
    };
    // SAFETY: the value is copied out at once.
    let Some(start) = (unsafe { TRACE_START.get(&pid_tgid) }).copied() else {
        // SAFETY: helper without preconditions.
        let cpu = unsafe { bpf_get_smp_processor_id() };
        if config.flags & SLOT_TRACE_FORKS == 0 && refused_by(config, pid_tgid, cpu) == 0 {
            count(trace_stat::NO_ENTRY);
        }
        return;
    };
    let _ = TRACE_START.remove(&pid_tgid);
    if uses(USES_FDSETS) && start.flags & TRACE_SAVED_FDSETS != 0 {
        // Saved by the entry and not taken by `trace_exit_reads` (skipped by the kernel).
        let _ = TRACE_FDSETS.remove(&pid_tgid);
    }
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    let ret: u64 = ctx.arg(1);
    // What `TRACE_SAVED` holds of the call (strings from its entry, an iovec array from
    // `trace_exit_reads`) is removed on every way out: by the reads that use it, or here.
    let saved = start.flags & (TRACE_SAVED_STRINGS | TRACE_SAVED_IOVECS) != 0;
    if start.nr as u64 != nr {
        if saved {
            let _ = TRACE_SAVED.remove(&pid_tgid);
        }
        count(trace_stat::NO_ENTRY);
        return;
    }
    let Some((event, config)) = begin(ctx, slot, scratch_at::TRACE_EXIT) else {
        if saved {
            let _ = TRACE_SAVED.remove(&pid_tgid);
        }
        return;
    };
    fill(event, &start, ret, now, trace_kind::COMPLETE);
    if uses(USES_CPU_TIME) && config.flags & SLOT_TRACE_CPU_TIME != 0 && start.cpu_clock != 0 {
        // SAFETY: helper without preconditions.
        let cpu = unsafe { bpf_get_smp_processor_id() };
        if let Some(spent) = call_cpu_time(&start, now, cpu) {
            event.data[trace_word::DURATION] = spent;
        }
    }
    if refused_as_not_failed(event, config) {
        if saved {
            let _ = TRACE_SAVED.remove(&pid_tgid);
        }
        return;
    }
    if uses(USES_FD_INODES) && config.flags & SLOT_TRACE_FD_INODES != 0 && (ret as i64) >= 0 {
        fd_inodes(event, nr, ret);
    }
    if uses(USES_DIRENTS) && config.flags & SLOT_TRACE_DIRENTS != 0 && (ret as i64) >= 0 {
        event.fields[trace_word::ENTRIES] = start.dirents;
    }
    if uses(USES_STRINGS) {
        if start.flags & TRACE_SAVED_STRINGS != 0 {
            restore_strings(event, &start, pid_tgid);
            exec_argv(event, config, regs, ret);
        } else {
            // An array is read by `exec_argv` only (an exec's argv: `SLOT_TRACE_AT_ENTRY`):
            // one copy of its loop here, not two, halves this program's verification (6.18:
            // 51,360 instructions walked for execve, about 24,000 now).
            // -k's copy of the stack's top (`str_from::STACK`) reads from the user stack
            // pointer: the only pointer a trace read takes from elsewhere than its arguments.
            let sp = match config.flags & SLOT_STACK_USER {
                0 => 0,
                // SAFETY: the probe-read helper fails cleanly on a bad address.
                _ => unsafe {
                    aya_ebpf::helpers::bpf_probe_read_kernel((regs + PT_REGS_SP) as *const u64)
                }
                .unwrap_or(0),
            };
            scratch(event).iov_saved = match start.flags & TRACE_SAVED_IOVECS {
                0 => 0,
                _ => u64::from(start.used) + 1,
            };
            read_strings::<false, true, STR_READS>(event, config, |_, _| sp);
        }
    } else if saved {
        let _ = TRACE_SAVED.remove(&pid_tgid);
    }
    if filtered_out(event, config) {
        return;
    }
    finish(ctx, event, config);
}

/// The strings `save_strings` kept, back into the event's area.
#[inline(always)]
fn restore_strings(event: &mut Event, start: &TraceStart, pid_tgid: u64) {
    let scratch = scratch(event);
    // SAFETY: the value is copied into the scratch area (map memory) at once, by the
    // probe-read helper (one call, where a copy loop would be 1,024 loads and stores); the
    // destination is `STR_BUFFER` bytes, more than `STR_AREA`.
    let copied = match unsafe { TRACE_SAVED.get(&pid_tgid) } {
        // SAFETY: as above.
        Some(area) => unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_kernel(
                scratch.area.as_mut_ptr() as *mut core::ffi::c_void,
                STR_AREA as u32,
                area.as_ptr() as *const core::ffi::c_void,
            ) == 0
        },
        None => false,
    };
    match copied {
        true => {
            scratch.used = start.used & (STR_AREA as u32 * 2 - 1);
            scratch.first = start.first;
        }
        false => {
            scratch.used = 0;
            scratch.first = [u32::MAX; STR_READS];
        }
    }
    let _ = TRACE_SAVED.remove(&pid_tgid);
    event.str_bytes = (scratch.used as usize).min(STR_AREA) as i32;
}

/// Environment pointers walked past to find the auxiliary vector, and its entries searched for
/// `AT_EXECFN`: bounds for the verifier, far above what a shell passes (a longer environment
/// leaves an unreadable path as its address).
const ENV_WALK: u32 = 512;
const AUXV_WALK: u32 = 64;

/// An exec's `argv` (read 1, the last, after the path the entry read: `probe::syscall` lays
/// them out so), read at its exit. A failed exec's is in the caller's memory, unchanged. A
/// successful one's is read from the image it built: the kernel just wrote the new stack
/// (`sp` points at `argc`, the pointers follow). Read at entry, a string in a page the
/// process had not touched yet (a forked child's string literals: the fork did not map the
/// binary's read-only data into it) could not be read, since BPF cannot fault pages in; so a
/// path the entry could not read is the new image's `AT_EXECFN`.
#[inline(always)]
fn exec_argv(event: &mut Event, config: &SlotConfig, regs: u64, ret: u64) {
    let (path, argv) = (config.strs[0], config.strs[1]);
    if argv.array == 0 || path.array != 0 || path.len_from != 0 {
        return;
    }
    let strlen = ((config.strlen.wrapping_sub(1)) & (STRLEN_MAX - 1)) + 1;
    let ptr = match ret {
        0 => {
            // SAFETY: the probe-read helper fails cleanly on a bad address.
            let Ok(sp) = (unsafe {
                aya_ebpf::helpers::bpf_probe_read_kernel((regs + PT_REGS_SP) as *const u64)
            }) else {
                return;
            };
            let Some(argc) = user_word(sp) else {
                return;
            };
            // The environment's pointers follow argc, argv's and its NULL.
            let env = environ(sp.wrapping_add(8 * argc.wrapping_add(2)));
            event.fields[trace_word::ENVIRON] = env.map_or(0, |(count, _)| count + 1);
            let scratch = scratch(event);
            let path_at = scratch.first[0];
            let path_read = (path_at as usize) < STR_AREA
                && scratch.area[(path_at as usize + 1) & (STR_AREA - 1)] & str_flag::FAULT == 0;
            if !path_read {
                scratch.used = 0;
                scratch.first[0] = 0;
                let execfn = env.map_or(0, |(_, end)| exec_fn(end.wrapping_add(8)));
                put_string(scratch, 0, execfn, true, strlen);
            }
            sp.wrapping_add(8)
        }
        _ => {
            // A failed exec's environment is the caller's, the argument after argv.
            let envp = event.data[(argv.at.wrapping_add(1) & 7) as usize];
            let env = environ(envp);
            event.fields[trace_word::ENVIRON] = env.map_or(0, |(count, _)| count + 1);
            event.data[(argv.at & 7) as usize]
        }
    };
    let scratch = scratch(event);
    let at = used(scratch);
    scratch.first[1] = match at + tracer_common::STR_ENTRY <= STR_AREA {
        true => at as u32,
        false => NO_ENTRY,
    };
    // Each argument is cut at `-s`, as strace cuts it (the path is not).
    let arglen = ((config.buflen.wrapping_sub(1)) & (STRLEN_MAX - 1)) + 1;
    put_array(scratch, 1, ptr, true, arglen);
    event.str_bytes = used(scratch) as i32;
}

/// A word of user memory, `None` where it cannot be read.
#[inline(always)]
fn user_word(addr: u64) -> Option<u64> {
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    unsafe { aya_ebpf::helpers::bpf_probe_read_user(addr as *const u64) }.ok()
}

/// The length of the NULL-ended pointer array at `at` (an exec's environment) and the
/// address of its NULL; `None` when it cannot be read or is longer than [`ENV_WALK`].
#[inline(always)]
fn environ(at: u64) -> Option<(u64, u64)> {
    let mut at = at;
    let mut i = 0;
    while i < ENV_WALK {
        match user_word(at) {
            Some(0) => return Some((u64::from(i), at)),
            Some(_) => at = at.wrapping_add(8),
            None => return None,
        }
        i += 1;
    }
    None
}

/// The new image's `AT_EXECFN` (0 when not found), in the auxiliary vector's pairs at `auxv`
/// (past the environment's NULL).
#[inline(always)]
fn exec_fn(auxv: u64) -> u64 {
    let mut at = auxv;
    let mut j = 0;
    while j < AUXV_WALK {
        match (user_word(at), user_word(at.wrapping_add(8))) {
            (Some(AT_EXECFN), Some(value)) => return value,
            (Some(0), _) | (None, _) | (_, None) => return 0,
            _ => at = at.wrapping_add(16),
        }
        j += 1;
    }
    0
}

#[raw_tracepoint]
/// `signal_deliver(sig, info, ka)`, in the task that takes the signal: strace's `--- SIGUSR1
/// {si_signo=SIGUSR1, si_code=SI_USER, ...} ---` line.
pub fn trace_signal(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        on_signal(&ctx);
    }
    0
}

#[inline(always)]
fn on_signal(ctx: &RawTracePointContext) {
    let mut signo: u64 = ctx.arg::<u64>(0) & 0xffff_ffff;
    let info: u64 = ctx.arg(1);
    let mut sent = read_siginfo(info);
    if signo == SIGKILL {
        // SEND_SIG_NOINFO with SIGKILL: the process is dying of the signal it was sent.
        match (info, fatal_signal()) {
            (0, Some(fatal)) => {
                signo = fatal.signo;
                sent = fatal;
            }
            _ => return,
        }
    }
    let Some((slot, _)) = slot_of(u64::from(TRACE_SIGNAL_NR)) else {
        return;
    };
    let Some((event, config)) = begin(ctx, slot, scratch_at::SIGNAL) else {
        return;
    };
    event.fields[trace_word::KIND] = trace_kind::SIGNAL;
    event.data[trace_word::DURATION] = 0;
    event.data[signal_word::SIGNO] = signo;
    event.data[signal_word::CODE] = sent.code;
    event.data[signal_word::UNION..signal_word::UNION + signal_word::UNION_WORDS]
        .copy_from_slice(&sent.union);
    finish(ctx, event, config);
}

/// A siginfo's code and union words. SEND_SIG_NOINFO (0) and SEND_SIG_PRIV (1) stand for a
/// signal from a user and from the kernel (include/linux/sched/signal.h): no fields.
#[inline(always)]
fn read_siginfo(info: u64) -> Sent {
    let read = |at: u64| {
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        unsafe { aya_ebpf::helpers::bpf_probe_read_kernel((info + at) as *const u64) }.unwrap_or(0)
    };
    let mut sent = Sent {
        signo: 0,
        code: match info {
            0 => 0,
            1 => 0x80,
            _ => read(8) & 0xffff_ffff,
        },
        union: [0; signal_word::UNION_WORDS],
    };
    if info > 1 {
        let mut k = 0;
        while k < signal_word::UNION_WORDS {
            sent.union[k] = read(16 + 8 * k as u64);
            k += 1;
        }
    }
    sent
}

/// The signal this process is dying of, as it was sent, when its `group_exit_code` names one
/// (not SIGKILL itself, not an exit_group's code); taken once.
#[inline(always)]
fn fatal_signal() -> Option<Sent> {
    let offsets = SCHED_OFFSETS.get(0)?;
    if offsets.task_signal == 0 || offsets.signal_group_exit_code == 0 {
        return None;
    }
    // SAFETY: helper without preconditions; the probe-read helper fails cleanly on a bad
    // address.
    let code = unsafe {
        let task = aya_ebpf::helpers::bpf_get_current_task();
        let signal = aya_ebpf::helpers::bpf_probe_read_kernel(
            (task + u64::from(offsets.task_signal)) as *const u64,
        )
        .ok()?;
        aya_ebpf::helpers::bpf_probe_read_kernel(
            (signal + u64::from(offsets.signal_group_exit_code)) as *const u32,
        )
        .ok()?
    };
    let signo = u64::from(code & 0x7f);
    if signo == 0 || signo == SIGKILL {
        return None;
    }
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // SAFETY: the value is copied out at once.
    let sent = unsafe { TRACE_FATAL.get(&tgid) }.copied()?;
    let _ = TRACE_FATAL.remove(&tgid);
    (sent.signo == signo).then_some(sent)
}

#[raw_tracepoint]
/// `signal_generate(sig, info, task, group, result)`, in the sender: keeps the last signal
/// sent to each traced process for [`fatal_signal`].
pub fn trace_signal_sent(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        on_signal_sent(&ctx);
    }
    0
}

/// `TRACE_SIGNAL_DELIVERED` of include/trace/events/signal.h: queued for the task.
const SIGNAL_DELIVERED: u64 = 0;

#[inline(always)]
fn on_signal_sent(ctx: &RawTracePointContext) {
    let Some(offsets) = SCHED_OFFSETS.get(0) else {
        return;
    };
    let signo: u64 = ctx.arg::<u64>(0) & 0xffff_ffff;
    let result: u64 = ctx.arg::<u64>(4) & 0xffff_ffff;
    if offsets.task_tgid == 0 || signo == SIGKILL || result != SIGNAL_DELIVERED {
        return;
    }
    let task: u64 = ctx.arg(2);
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let tgid = unsafe {
        aya_ebpf::helpers::bpf_probe_read_kernel(
            (task + u64::from(offsets.task_tgid)) as *const u32,
        )
    };
    let Ok(tgid) = tgid else {
        return;
    };
    // SAFETY: the value is copied out at once.
    if !matches!(unsafe { TRACKED.get(&tgid) }, Some(&state) if state == TRACK_ACTIVE) {
        return;
    }
    let info: u64 = ctx.arg(1);
    let mut sent = read_siginfo(info);
    sent.signo = signo;
    if info == 0 {
        // SEND_SIG_NOINFO: the kernel fills in the sender, which is the current task.
        let uid = aya_ebpf::helpers::bpf_get_current_uid_gid() & 0xffff_ffff;
        sent.union[0] = (bpf_get_current_pid_tgid() >> 32) | (uid << 32);
    }
    let _ = TRACE_FATAL.insert(&tgid, &sent, 0);
}

/// An execve by a thread that is not its process's leader: on success the thread takes the
/// leader's id (the kernel's `de_thread`) before the call returns, so its entry, kept under
/// the thread's old id, moves to the new one, where the call's exit looks. Without it the
/// exec was shown unfinished at the run's end, its strings as addresses.
#[inline(always)]
pub fn exec_by_thread(ctx: &RawTracePointContext) {
    let old_tid: u64 = ctx.arg(1);
    let old_tid = old_tid & 0xffff_ffff;
    let pid_tgid = bpf_get_current_pid_tgid();
    if old_tid == pid_tgid & 0xffff_ffff {
        return;
    }
    superseded(ctx, old_tid);
    let old = (pid_tgid & !0xffff_ffff) | old_tid;
    // SAFETY: the value is copied out at once.
    let Some(start) = (unsafe { TRACE_START.get(&old) }).copied() else {
        return;
    };
    let _ = TRACE_START.remove(&old);
    if TRACE_START.insert(&pid_tgid, &start, 0).is_err() {
        count(trace_stat::START_FULL);
    }
    if start.flags & TRACE_SAVED_STRINGS == 0 {
        return;
    }
    // SAFETY: the map value is handed to the update helper, which copies it.
    if let Some(area) = unsafe { TRACE_SAVED.get(&old) } {
        if TRACE_SAVED.insert(&pid_tgid, area, 0).is_err() {
            count(trace_stat::SAVED_FULL);
        }
    }
    let _ = TRACE_SAVED.remove(&old);
}

/// strace's `+++ superseded by execve in pid OLD +++`, in the leader's id the thread took.
#[inline(always)]
fn superseded(ctx: &RawTracePointContext, old_tid: u64) {
    let Some((slot, _)) = slot_of(u64::from(TRACE_EXIT_NR)) else {
        return;
    };
    let Some((event, config)) = begin(ctx, slot, scratch_at::EXEC) else {
        return;
    };
    event.fields[trace_word::KIND] = trace_kind::SUPERSEDED;
    event.data[trace_word::DURATION] = 0;
    event.data[0] = old_tid;
    finish(ctx, event, config);
}

/// A call the exiting task entered and whose exit this program never saw: sent as strace
/// shows such a call, `read(0,  <unfinished ...>) = ?`, and forgotten. A guard: the kernel
/// passes a call's exit tracepoint even for a killed task (SIGKILL in clock_nanosleep and
/// SIGTERM in read, tried), so no test reaches it; an entry that outlived its task would be
/// paired with the first return of a later task given the same ids (a new thread's `clone`
/// = 0), a stray line with another call's arguments, as seen once on 7.3.
#[inline(always)]
fn never_returned(ctx: &RawTracePointContext, pid_tgid: u64) {
    // What a call saved whose `trace_exit` the kernel skipped (another task preempted inside
    // it on that CPU) stays until the task saves again or ends: here, whatever its entry says.
    if uses(USES_IOVECS | USES_ENTRY_STRINGS) {
        let _ = TRACE_SAVED.remove(&pid_tgid);
    }
    if uses(USES_FDSETS) {
        let _ = TRACE_FDSETS.remove(&pid_tgid);
    }
    // SAFETY: the value is copied out at once.
    let Some(start) = (unsafe { TRACE_START.get(&pid_tgid) }).copied() else {
        return;
    };
    // None once the run is over (`SLOT_STOPPED`) and its command being stopped: the entry
    // stays, and userspace shows it `<unfinished ...>`, as strace does at its end.
    let Some((slot, _)) = slot_of(u64::from(start.nr)) else {
        return;
    };
    let _ = TRACE_START.remove(&pid_tgid);
    let Some((event, config)) = begin(ctx, slot, scratch_at::TASK_EXIT) else {
        return;
    };
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    fill(event, &start, 0, now, trace_kind::KILLED);
    if refused_as_not_failed(event, config) || filtered_out(event, config) {
        return;
    }
    finish(ctx, event, config);
}

#[raw_tracepoint]
/// `sched_process_exit(task)`, in the exiting task: strace's `+++ exited with N +++`. It must
/// run before `track_exit` forgets the task: userspace attaches it first, and the kernel
/// calls a tracepoint's programs in the order they were attached.
pub fn trace_task_exit(ctx: RawTracePointContext) -> u32 {
    if uses(USES_TRACE) {
        on_task_exit(&ctx);
    }
    0
}

#[inline(always)]
fn on_task_exit(ctx: &RawTracePointContext) {
    let task: u64 = ctx.arg(0);
    let offset = match SCHED_OFFSETS.get(0) {
        Some(offsets) if offsets.task_exit_code != 0 => u64::from(offsets.task_exit_code),
        _ => return,
    };
    let pid_tgid = bpf_get_current_pid_tgid();
    if pid_tgid >> 32 == pid_tgid & 0xffff_ffff {
        // The process ends: a signal sent to it that did not kill it is no longer wanted.
        let _ = TRACE_FATAL.remove(&((pid_tgid >> 32) as u32));
    }
    never_returned(ctx, pid_tgid);
    if pid_tgid >> 32 == pid_tgid & 0xffff_ffff && group_lives(task) == Some(true) {
        // A leader whose threads go on: strace shows the process's exit when its last thread
        // has exited, with the process's status (userspace writes it from the wait status).
        return;
    }
    let Some((slot, _)) = slot_of(u64::from(TRACE_EXIT_NR)) else {
        return;
    };
    let Some((event, config)) = begin(ctx, slot, scratch_at::TASK_EXIT) else {
        return;
    };
    event.fields[trace_word::KIND] = trace_kind::EXIT;
    event.data[trace_word::DURATION] = 0;
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let code = unsafe { aya_ebpf::helpers::bpf_probe_read_kernel((task + offset) as *const u32) };
    event.data[0] = u64::from(code.unwrap_or(0));
    finish(ctx, event, config);
}
