//! `tracer trace`'s iovec arrays (readv, writev), alone or in a msghdr with its name and
//! control data (sendmsg, recvmsg): read at a call's exit by `trace_exit_reads`
//! (a program of its own on `sys_exit`, attached before `trace_exit`), into the scratch entry
//! `scratch_at::IOVECS`, and saved by task in `TRACE_SAVED`; `trace_exit`, which runs next for
//! the task, copies them into its event as the call's first read (`reads::copy_iovecs`). The
//! loop over the elements is walked
//! once by the verifier here: inside `trace_exit`, it was walked again for every path there,
//! and 5.10's verifier took 134 s under emulation (239,804 instructions), then refused the
//! program for its combined stack.

use aya_ebpf::programs::RawTracePointContext;
use tracer_common::{
    buffer_len, str_array, SlotConfig, MSGHDR_BYTES, MSG_PART_MAX, STRLEN_MAX, STR_AREA,
};

use crate::maps::{scratch_at, Scratch, SCRATCH, TRACE_SAVED};
use crate::reads::{put_buffer, put_iovecs, read_sized, syscall_arg};

/// Reads the iovec array (or msghdr) of a call whose slot's first read is one
/// (`config.strs[0]`), at its exit, for the current task (`pid_tgid`), which its slot traces,
/// and saves its entries in `TRACE_SAVED` under `pid_tgid`. Their length; `None` when the
/// map was full (or no scratch entry).
#[inline(always)]
pub(crate) fn read(
    ctx: &RawTracePointContext,
    regs: u64,
    config: &SlotConfig,
    pid_tgid: u64,
) -> Option<u32> {
    let read = config.strs[0];
    let scratch = SCRATCH.get_ptr_mut(scratch_at::IOVECS)?;
    // SAFETY: `trace_exit_reads`'s own per-CPU entry (`scratch_at::IOVECS`), touched by no
    // other program; a program does not nest in itself on a CPU, even preempted (the kernel
    // skips the other task's run).
    let scratch = unsafe { &mut *scratch };
    let ptr = syscall_arg(regs, read.at);
    let ret: u64 = ctx.arg(1);
    let total = match read.array {
        str_array::IOVEC_FILLED | str_array::MSGHDR_FILLED => (ret as i64).max(0) as u64,
        _ => u64::MAX,
    };
    scratch.used = 0;
    let (ptr, count) = match read.array {
        str_array::MSGHDR_GIVEN | str_array::MSGHDR_FILLED => msghdr(scratch, ptr),
        _ => (
            ptr,
            syscall_arg(
                regs,
                u32::from(read.len_from.wrapping_sub(buffer_len::ARG0)),
            ),
        ),
    };
    // Five arguments at most for a BPF function: the count and the cut share a word.
    let counts = (count & 0xffff_ffff) | u64::from(config.buflen) << 32;
    put_iovecs(scratch, 0, ptr, counts, total);
    // SAFETY: the area is `STR_BUFFER` bytes, more than `STR_AREA`; the update helper copies it.
    let area = unsafe { &*(scratch.area.as_ptr() as *const [u8; STR_AREA]) };
    TRACE_SAVED.insert(&pid_tgid, area, 0).ok()?;
    Some(scratch.used)
}

/// The entries of the `struct msghdr` at user address `ptr` before its iovecs
/// (`str_array::MSGHDR_GIVEN`): the header, the name and the control data, each as long as
/// the header says, at most `MSG_PART_MAX`. Returns where its `msg_iov` is and how long.
#[inline(always)]
fn msghdr(scratch: &mut Scratch, ptr: u64) -> (u64, u64) {
    let word = |at: u64, size: u8| read_sized(ptr.wrapping_add(at), size, true).unwrap_or(0);
    let part_max = u64::from(MSG_PART_MAX);
    // Through a volatile read: with the constant, LLVM specialised `put_buffer`'s room check
    // into two comparisons of the offset with 8133, and 5.10's verifier, walking the branch
    // that cannot be taken (its bounds crossed), lost the destination's type and refused it.
    // SAFETY: a read of a local.
    let head = unsafe { core::ptr::read_volatile(&u64::from(MSGHDR_BYTES)) };
    put_buffer(scratch, 0, ptr, head, STRLEN_MAX);
    put_buffer(scratch, 0, word(0, 8), word(8, 4).min(part_max), STRLEN_MAX);
    put_buffer(
        scratch,
        0,
        word(32, 8),
        word(40, 8).min(part_max),
        STRLEN_MAX,
    );
    (word(16, 8), word(24, 8))
}
