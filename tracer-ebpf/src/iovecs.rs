//! `tracer trace`'s reads at a call's exit that loop: a getdents call's entries, counted, and
//! its iovec arrays (readv, writev), alone or in a msghdr with its name and control data
//! (sendmsg, recvmsg); and select's fd sets, given (saved by the entry) and ready. Read by `trace_exit_reads` (a program of its own on `sys_exit`,
//! attached before `trace_exit`) into the scratch entry `scratch_at::IOVECS` and saved by task
//! in `TRACE_SAVED`; `trace_exit`, which runs next for the task, copies them into its event as
//! the call's first read (`reads::copy_iovecs`). The loop over the elements is walked once by
//! the verifier here: inside `trace_exit`, it was walked again for every path there, and
//! 5.10's verifier took 134 s under emulation (239,804 instructions), then refused the program
//! for its combined stack.

use aya_ebpf::programs::RawTracePointContext;
use core::ffi::c_void;
use tracer_common::{
    buffer_len, str_array, str_flag, trace_word, SlotConfig, TraceStart, FDSETS_SAVED, FDSET_BYTES,
    MSGHDR_BYTES, MSG_PART_MAX, PT_REGS_SYSCALL_ARGS, STRLEN_MAX, STR_AREA, STR_ENTRY,
    TRACE_SAVED_FDSETS,
};

use crate::maps::{scratch_at, Scratch, SCRATCH, TRACE_FDSETS, TRACE_SAVED};
use crate::reads::{put_buffer, put_header, put_iovecs, read_sized, syscall_arg};

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

/// Bytes of one fd set for `nfds` (a select's first argument, an `int`) descriptors, as
/// strace reads it: whole words; 0 for `nfds` of 0 or less (nothing is read, as the kernel
/// reads nothing).
#[inline(always)]
fn fdset_len(nfds: u64) -> u64 {
    let nfds = nfds as u32 as i32;
    match nfds > 0 {
        true => (nfds as u64).div_ceil(64) * 8,
        false => 0,
    }
}

/// Appends an entry of read 0 at byte `at` of the area (below 1,024: the fd sets' entries
/// are the area's first, 1,000 bytes at most): the `len` bytes at user address `ptr`, at
/// most `cap` (at most [`FDSET_BYTES`], marked cut past it), or a `FAULT` entry. Returns
/// where the next entry goes. Not `put_buffer`: its offset comes from map memory (unknown to
/// the verifier up to the area's end), and 5.10's verifier, walking its room checks with the
/// lengths here, lost the destination's type where the bounds crossed and refused the
/// program; these offsets are small and bounded by their masks.
#[inline(always)]
fn put_small(scratch: &mut Scratch, at: usize, ptr: u64, len: u64, cap: u32) -> usize {
    let at = small(at);
    let (size, flags) = match len > u64::from(cap) {
        true => (cap as usize, str_flag::TRUNCATED),
        false => (len as usize, 0),
    };
    // Masked through a volatile read, as in `put_buffer`: LLVM drops a mask it can prove
    // redundant, and 5.10's verifier then saw the size unbounded.
    // SAFETY: a read of a local.
    let size = unsafe { core::ptr::read_volatile(&size) } & (2 * FDSET_BYTES as usize - 1);
    // NULL (a set not given) is not read: a read that faults costs about 600 ns, three of
    // them most of a select's entry program (2,220 ns a call, 722 without them).
    // SAFETY: the destination is inside the area: `at` below 1,024 and `size` below 256; the
    // helper validates the source address itself and fails instead of faulting.
    let n = if ptr == 0 {
        -14
    } else {
        unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_user(
                scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void,
                size as u32,
                ptr as *const c_void,
            )
        }
    };
    let (size, flags) = match n {
        0 => (size, flags),
        _ => (0, str_flag::FAULT),
    };
    put_header(scratch, at, 0, flags, size);
    at + STR_ENTRY + size
}

/// An offset of the fd sets' entries, below 1,024 for the verifier: masked through a
/// volatile read, since LLVM drops a mask it can prove redundant (after a `min`) and 5.10's
/// verifier does not learn the bound from that comparison.
#[inline(always)]
fn small(at: usize) -> usize {
    // SAFETY: a read of a local.
    unsafe { core::ptr::read_volatile(&at) & 1023 }
}

/// The three fd sets a select or pselect6 is given (arguments 1 to 3, `nfds` in argument 0),
/// read by `trace_enter` into its scratch entry and saved in `TRACE_FDSETS` under
/// `pid_tgid`, before the call writes the ready sets over them. False when the map was full.
#[inline(always)]
pub(crate) fn save_fdsets(start: &mut TraceStart, pid_tgid: u64) -> bool {
    let Some(scratch) = SCRATCH.get_ptr_mut(scratch_at::TRACE_ENTER) else {
        return true;
    };
    // SAFETY: the entry program's own per-CPU entry (`scratch_at`), touched by no other
    // program until this invocation returns.
    let scratch = unsafe { &mut *scratch };
    let len = fdset_len(start.args[0]);
    let at = put_small(scratch, 0, start.args[1], len, FDSET_BYTES);
    let at = put_small(scratch, at, start.args[2], len, FDSET_BYTES);
    let at = put_small(scratch, at, start.args[3], len, FDSET_BYTES);
    // SAFETY: the area is `STR_BUFFER` bytes, more than `FDSETS_SAVED`; the update helper
    // copies it.
    let saved = unsafe { &*(scratch.area.as_ptr() as *const [u8; FDSETS_SAVED]) };
    if TRACE_FDSETS.insert(&pid_tgid, saved, 0).is_err() {
        return false;
    }
    start.flags |= TRACE_SAVED_FDSETS;
    start.used = at as u32;
    true
}

/// A select's or pselect6's sets at its exit ([`str_array::FDSETS`]): the given ones its
/// entry saved (three `FAULT` entries when it could not), the ready ones when it returned
/// more than 0, and pselect6's (`pselect`) signal mask argument, saved in `TRACE_SAVED` under
/// `pid_tgid` as `read` saves an iovec array. Their length; `None` when the map was full.
#[inline(always)]
pub(crate) fn fdsets(
    ctx: &RawTracePointContext,
    regs: u64,
    start: &mut TraceStart,
    pid_tgid: u64,
    pselect: bool,
) -> Option<u32> {
    let scratch = SCRATCH.get_ptr_mut(scratch_at::IOVECS)?;
    // SAFETY: as in `read`: this program's own per-CPU entry.
    let scratch = unsafe { &mut *scratch };
    // SAFETY: the value is only read, by the probe-read helper, before it is removed.
    let given = match start.flags & TRACE_SAVED_FDSETS {
        0 => None,
        _ => unsafe { TRACE_FDSETS.get(&pid_tgid) },
    };
    start.flags &= !TRACE_SAVED_FDSETS;
    // SAFETY: the area is `STR_BUFFER` bytes, more than the `FDSETS_SAVED` copied; the helper
    // fails cleanly instead of faulting.
    let copied = given.is_some_and(|from| unsafe {
        aya_ebpf::helpers::generated::bpf_probe_read_kernel(
            scratch.area.as_mut_ptr() as *mut c_void,
            FDSETS_SAVED as u32,
            from.as_ptr() as *const c_void,
        ) == 0
    });
    if given.is_some() {
        let _ = TRACE_FDSETS.remove(&pid_tgid);
    }
    let mut at = match copied {
        true => (start.used as usize).min(FDSETS_SAVED),
        false => {
            put_header(scratch, 0, 0, str_flag::FAULT, 0);
            put_header(scratch, STR_ENTRY, 0, str_flag::FAULT, 0);
            put_header(scratch, 2 * STR_ENTRY, 0, str_flag::FAULT, 0);
            3 * STR_ENTRY
        }
    };
    let len = fdset_len(syscall_arg(regs, 0));
    let ret: u64 = ctx.arg(1);
    let ready = (ret as i64) > 0;
    let mut i = 1;
    while i <= 3 {
        at = match ready {
            true => put_small(scratch, at, syscall_arg(regs, i), len, FDSET_BYTES),
            false => {
                let at = small(at);
                put_header(scratch, at, 0, str_flag::FAULT, 0);
                at + STR_ENTRY
            }
        };
        i += 1;
    }
    if pselect {
        // `{const sigset_t *ss; size_t ss_len}`, and the mask it points at.
        let arg = syscall_arg(regs, 5);
        at = put_small(scratch, at, arg, 16, 16);
        let mask = read_sized(arg, 8, true).unwrap_or(0);
        at = put_small(scratch, at, mask, 8, 8);
    }
    scratch.used = at as u32;
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

/// Directory entries counted at most per getdents call (more show as `1024+`): glibc's 32 KiB
/// buffer holds 1,024 records of names of 5 bytes or more (32-byte records), 1,365 of the
/// shortest. The verifier walks each step: 1,024 cost the dirents program 36,939 instructions on
/// 6.18.
const DIRENT_WALK: u64 = 1024;

/// Directory entries a getdents call read (strace's `/* 144 entries */`), into `out` (the
/// call's `TraceStart::dirents`) for the exit's event: `linux_dirent` and `linux_dirent64`
/// both keep their record length at byte 16, and the buffer is the call's second argument,
/// still in its register.
/// The count + 1, with [`trace_word::ENTRIES_MORE`] when [`DIRENT_WALK`] records did not
/// reach the end; 0 when a record could not be read.
#[inline(always)]
pub(crate) fn dirents(regs: u64, ret: u64, out: &mut u64) {
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let buf = unsafe {
        aya_ebpf::helpers::bpf_probe_read_kernel((regs + PT_REGS_SYSCALL_ARGS[1]) as *const u64)
    }
    .unwrap_or(0);
    let len = match (ret as i64) < 0 {
        true => 0,
        false => ret,
    };
    *out = 1;
    // The count is stored at each step, so that nothing the loop computed is live after it:
    // the verifier then walks what follows once, not once per way out of each step.
    let mut at = 0u64;
    let mut count = 0u64;
    while count < DIRENT_WALK && at < len {
        let mut reclen = 0u16;
        // SAFETY: the helper writes at most 2 bytes into `reclen` (zero on a fault).
        unsafe {
            aya_ebpf::helpers::generated::bpf_probe_read_user(
                &mut reclen as *mut u16 as *mut core::ffi::c_void,
                2,
                buf.wrapping_add(at + 16) as *const core::ffi::c_void,
            )
        };
        count += 1;
        if reclen == 0 {
            *out = 0;
            return;
        }
        at += u64::from(reclen);
        *out = count + 1;
    }
    if at < len {
        *out |= trace_word::ENTRIES_MORE;
    }
}
