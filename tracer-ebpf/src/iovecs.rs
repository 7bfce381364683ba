//! `tracer trace`'s iovec arrays (readv, writev): read at a call's exit by `trace_exit_reads`
//! (a program of its own on `sys_exit`, attached before `trace_exit`), into the scratch entry
//! `scratch_at::IOVECS`; `trace_exit`, which runs next on the same CPU, copies them into its
//! event as the call's first read (`reads::copy_iovecs`). The loop over the elements is walked
//! once by the verifier here: inside `trace_exit`, it was walked again for every path there,
//! and 5.10's verifier took 134 s under emulation (239,804 instructions), then refused the
//! program for its combined stack.

use aya_ebpf::programs::RawTracePointContext;
use tracer_common::{buffer_len, str_array, SlotConfig, PT_REGS_SYSCALL_ARGS};

use crate::maps::{scratch_at, SCRATCH};
use crate::reads::put_iovecs;

/// Reads the iovec array of a call whose slot's first read is one (`config.strs[0]`), at its
/// exit, for the current task (`pid_tgid`), which its slot traces.
#[inline(always)]
pub(crate) fn read(ctx: &RawTracePointContext, regs: u64, config: &SlotConfig, pid_tgid: u64) {
    let read = config.strs[0];
    let Some(scratch) = SCRATCH.get_ptr_mut(scratch_at::IOVECS) else {
        return;
    };
    // SAFETY: `trace_exit_reads`'s own per-CPU entry (`scratch_at::IOVECS`), touched by no
    // other program but `trace_exit`, which runs after it on this CPU.
    let scratch = unsafe { &mut *scratch };
    // The arguments at the exit are the entry's: x86-64's syscall path leaves them in
    // pt_regs (the return value goes to `ax`).
    // A constant offset per argument: 5.10's verifier refuses a stack read at a variable one.
    let arg = |i: u8| {
        let offset = match i {
            0 => PT_REGS_SYSCALL_ARGS[0],
            1 => PT_REGS_SYSCALL_ARGS[1],
            2 => PT_REGS_SYSCALL_ARGS[2],
            3 => PT_REGS_SYSCALL_ARGS[3],
            4 => PT_REGS_SYSCALL_ARGS[4],
            5 => PT_REGS_SYSCALL_ARGS[5],
            _ => return 0,
        };
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        unsafe { aya_ebpf::helpers::bpf_probe_read_kernel((regs + offset) as *const u64) }
            .unwrap_or(0)
    };
    let ptr = arg(read.at as u8);
    let count = arg(read.len_from.wrapping_sub(buffer_len::ARG0));
    let ret: u64 = ctx.arg(1);
    let total = match read.array {
        str_array::IOVEC_FILLED => (ret as i64).max(0) as u64,
        _ => u64::MAX,
    };
    scratch.used = 0;
    scratch.iov_owner = 0;
    // Five arguments at most for a BPF function: the count and the cut share a word.
    let counts = (count & 0xffff_ffff) | u64::from(config.buflen) << 32;
    put_iovecs(scratch, 0, ptr, counts, total);
    scratch.iov_owner = pid_tgid;
}
