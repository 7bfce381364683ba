//! What a hit reads besides its registers: strings, buffers and `char **` arrays into the
//! scratch's string area, struct members, USDT arguments, tracepoint records, and whether an
//! exiting task's thread group lives on.

use aya_ebpf::helpers::{bpf_probe_read_kernel, bpf_probe_read_user, generated};
use aya_ebpf::macros::map;
use aya_ebpf::maps::{Array, PerCpuArray};
use aya_ebpf::programs::{ProbeContext, TracePointContext};
use aya_ebpf::EbpfContext;
use core::ffi::c_void;
use tracer_common::{
    buffer_len, str_array, str_flag, str_from, str_mem, trace_word, word, Event, FieldRead,
    SlotConfig, StrRead, TraceStart, UsdtArgs, ARRAY_ELEMENTS, DATA_WORDS, FIELD_ADDRESS,
    FIELD_AUTO, FIELD_DEREFS, FIELD_READS, FIELD_USER, IOCTL_ARG_INT, IOCTL_ARG_MAX, IOVEC_BYTES,
    IOV_ELEMENTS, KERNEL_SPACE_START, PT_REGS_CS, PT_REGS_SP, PT_REGS_SYSCALL_ARGS, SLOTS,
    SLOT_RECORD_LEN, STRLEN_MAX, STR_AREA, STR_ENTRY, STR_READS, TRACE_STACK_TOP, USDT_MEM,
    USDT_REG, USES_BUFFERS, USES_DEREFS, USES_IOVECS, USES_STR_ARRAYS, USES_STR_MANY,
};

use crate::maps::{scratch, zero_words, Scratch, NO_ENTRY, SCHED_OFFSETS, TRACE_SAVED};
use crate::uses;

/// Where each USDT probe slot's arguments are (`SLOT_USDT`), by probe slot id.
#[map]
pub(crate) static USDT_ARGS: Array<UsdtArgs> = Array::with_max_entries(SLOTS, 0);

/// Scratch for the registers of a USDT hit, indexed by pt_regs offset / 8 (`usdt_args`).
#[map]
pub(crate) static USDT_REGS: PerCpuArray<[u64; 32]> = PerCpuArray::with_max_entries(1, 0);

/// Read `read`'s first string entry in the area: its offset (masked into the area), flag bits
/// and length; `None` when the read wrote none.
#[inline(always)]
pub(crate) fn entry_of(scratch: &Scratch, read: u32) -> Option<(usize, u8, usize)> {
    let at = scratch.first[(read as usize) & (STR_READS - 1)];
    if at == NO_ENTRY {
        return None;
    }
    let at = at as usize & (STR_AREA - 1);
    let len = u16::from_ne_bytes([scratch.area[at + 2], scratch.area[at + 3]]) as usize;
    Some((at, scratch.area[at + 1], len))
}

/// The area's next free offset. Kept in the scratch map, not in a register: a value loaded
/// from map memory is unknown to the verifier, so every path through a string read (read,
/// cut, failed, no room) ends in the same state and the next read is verified once, not once
/// per path before it (176,717 instructions verified for two reads and an array, held in a
/// local; see `put_string`).
#[inline(always)]
pub(crate) fn used(scratch: &Scratch) -> usize {
    // SAFETY: a plain aligned read of map memory; volatile so that LLVM keeps the load.
    unsafe { core::ptr::read_volatile(&scratch.used) as usize }
}

/// Appends a string entry for read `read`: the string at `ptr` (up to `strlen` bytes, marked
/// truncated when longer), or a failed one. False when the area is full: the entry then says
/// so, if even its header fits.
#[inline(never)]
pub(crate) fn put_string(
    scratch: &mut Scratch,
    read: u8,
    ptr: u64,
    user: bool,
    strlen: u32,
) -> bool {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return false;
    }
    // Masked, not only compared: the mask is what older verifiers keep (see `read_fields`).
    let at = at & (STR_AREA - 1);
    // One byte more than kept, to tell a string of exactly `strlen` bytes from a longer one.
    let size = strlen + 2;
    // SAFETY: the probe-read helpers validate the source address themselves and fail with a
    // negative errno instead of faulting; the destination is inside the buffer: `at` is
    // below STR_AREA and `size` at most STRLEN_MAX + 2 (`STR_BUFFER` has room for both).
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void;
        let src = ptr as *const c_void;
        match user {
            true => generated::bpf_probe_read_user_str(dst, size, src),
            false => generated::bpf_probe_read_kernel_str(dst, size, src),
        }
    };
    let (len, flags) = match n {
        n if n < 0 => (0, str_flag::FAULT),
        // An empty string: the kernels of Debian's 5.10, 6.1 and 6.12 return 0 for one
        // (strncpy_from_user_nofault adds the NUL only to a count above 0), 7.3 and 6.18
        // return 1; `""` read as a fault there.
        0 => (0, 0),
        n if n as u32 - 1 > strlen => (strlen as usize, str_flag::TRUNCATED),
        n => (n as usize - 1, 0),
    };
    let fits = at + STR_ENTRY + len <= STR_AREA;
    let (len, flags) = match fits {
        true => (len, flags),
        false => (0, str_flag::NO_ROOM),
    };
    put_header(scratch, at, read, flags, len);
    scratch.used = (at + STR_ENTRY + len) as u32;
    fits
}

/// The return value as a buffer length: 0 for an error.
#[inline(always)]
pub(crate) fn event_ret(scratch: &Scratch) -> u64 {
    let ret = scratch.event.data[word::RETURN] as i64;
    ret.max(0) as u64
}

/// Appends a buffer entry for read `read` (`tracer trace`): the first of the `len` bytes at
/// user address `ptr`, at most `buflen` (and [`STRLEN_MAX`]), marked truncated when cut.
#[inline(always)]
pub(crate) fn put_buffer(scratch: &mut Scratch, read: u8, ptr: u64, len: u64, buflen: u32) {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return;
    }
    // Masked through a volatile read, as `size` below: the comparison above lets LLVM drop a
    // plain mask, and 5.10's verifier then saw the destination unbounded.
    // SAFETY: a read of a local.
    let at = unsafe { core::ptr::read_volatile(&at) } & (STR_AREA - 1);
    let keep = (buflen as u64).min(STRLEN_MAX as u64);
    let (size, flags) = match len > keep {
        true => (keep, str_flag::TRUNCATED),
        false => (len, 0),
    };
    // Bounded for the verifier: at most STRLEN_MAX (a power of two), so the mask keeps it.
    let size = (size as usize) & (2 * STRLEN_MAX as usize - 1);
    let size = size.min(STRLEN_MAX as usize);
    let fits = at + STR_ENTRY + size <= STR_AREA;
    let (size, flags) = match fits {
        true => (size, flags),
        false => (0, str_flag::NO_ROOM),
    };
    // Masked again through a volatile read: LLVM drops a mask it can prove redundant (size is
    // at most `keep`), and 5.10's verifier does not learn a bound from a comparison of two
    // registers (`len > keep`), so without it the size was unbounded there and the program
    // refused. The value is unchanged.
    // SAFETY: a read of a local.
    let size = unsafe { core::ptr::read_volatile(&size) } & (2 * STRLEN_MAX as usize - 1);
    // SAFETY: the helper validates the source address itself and fails with a negative
    // errno instead of faulting; the destination is inside the buffer: `at` below STR_AREA
    // and `size` below 2 * STRLEN_MAX (`Scratch` has room for both).
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void;
        generated::bpf_probe_read_user(dst, size as u32, ptr as *const c_void)
    };
    let (size, flags) = match n {
        0 => (size, flags),
        _ => (0, str_flag::FAULT),
    };
    put_header(scratch, at, read, flags, size);
    scratch.used = (at + STR_ENTRY + size) as u32;
}

/// [`put_buffer`] without a branch: the first of the `len` bytes at user address `ptr`, at
/// most `keep` (at most [`STRLEN_MAX`]); nothing when the area has no room for a header. For
/// the iovec loop, where each branch made two states that the verifier walked through the
/// elements after it (docs/benchmarks.md, "Figures the code cites", `verifier-paths`).
#[inline(always)]
fn put_element(scratch: &mut Scratch, read: u8, ptr: u64, len: u64, keep: u64) {
    let used = used(scratch);
    let full = below((STR_AREA - STR_ENTRY) as u64, used as u64);
    // SAFETY (both): reads of locals, volatile so that LLVM keeps the masks (see `put_buffer`).
    let at = unsafe { core::ptr::read_volatile(&used) } & (STR_AREA - 1);
    let cut = below(keep, len);
    let size = pick(cut, keep, len);
    let over = below((STR_AREA - STR_ENTRY - at) as u64, size) | full;
    let size = size & over.wrapping_sub(1);
    let size = unsafe { core::ptr::read_volatile(&size) } & (2 * STRLEN_MAX as u64 - 1);
    // SAFETY: as in `put_buffer`: `at` below STR_AREA and `size` below 2 * STRLEN_MAX.
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(at + STR_ENTRY) as *mut c_void;
        generated::bpf_probe_read_user(dst, size as u32, ptr as *const c_void)
    };
    // 1 when the helper failed (a negative errno).
    // SAFETY: a read of a local, volatile as in `below`.
    let failed = unsafe { core::ptr::read_volatile(&((n as u64) >> 63)) };
    let size = size & failed.wrapping_sub(1);
    let flags = pick(
        failed,
        u64::from(str_flag::FAULT),
        pick(
            over,
            u64::from(str_flag::NO_ROOM),
            cut * u64::from(str_flag::TRUNCATED),
        ),
    );
    // A full area's header goes past its end, where nothing reads it, and its end stays.
    let head = pick(full, STR_AREA as u64, at as u64) as usize & (2 * STR_AREA - 1);
    let header = u32::from(read) | (flags as u32) << 8 | (size as u32) << 16;
    // SAFETY: `head` is at most STR_AREA, so the header is inside the area (`STR_BUFFER`
    // bytes); the verifier, seeing it below 2 * STR_AREA, finds it inside the map value.
    unsafe { core::ptr::write_unaligned(scratch.area.as_mut_ptr().add(head) as *mut u32, header) };
    scratch.used = pick(full, used as u64, (at + STR_ENTRY) as u64 + size) as u32;
}

/// 1 when `a < b` (unsigned), else 0, in arithmetic alone (Hacker's Delight, 2-12): BPF has
/// no instruction that makes a value of a comparison, and LLVM makes a branch of `<`.
#[inline(always)]
fn below(a: u64, b: u64) -> u64 {
    let bit = ((!a & b) | (!(a ^ b) & a.wrapping_sub(b))) >> 63;
    // Through a volatile read: LLVM otherwise sees a sign test in the bit, and `pick` of it
    // as a select, which it makes a branch again.
    // SAFETY: a read of a local.
    unsafe { core::ptr::read_volatile(&bit) }
}

/// `a` when `which` is 1, `b` when it is 0, without a branch.
#[inline(always)]
fn pick(which: u64, a: u64, b: u64) -> u64 {
    let mask = which.wrapping_neg();
    (a & mask) | (b & !mask)
}

/// Appends an entry with no bytes (an array's start or end, a failed element), if it fits.
#[inline(always)]
pub(crate) fn put_mark(scratch: &mut Scratch, read: u8, flags: u8) -> bool {
    let at = used(scratch);
    if at + STR_ENTRY > STR_AREA {
        return false;
    }
    put_header(scratch, at, read, flags, 0);
    scratch.used = (at + STR_ENTRY) as u32;
    true
}

/// The top of the user stack at `sp` ([`TRACE_STACK_TOP`] bytes) as read 0's entry of an
/// empty string area: a latency outlier's one string (`str_from::STACK`). Constant offsets
/// throughout: `put_buffer`'s bounds, inlined into the latency end, lost their pointer in a
/// spill that 5.10's verifier refused.
#[inline(always)]
pub(crate) fn put_stack_top(scratch: &mut Scratch, sp: u64) {
    // SAFETY: the destination is the area's first bytes after one entry header (the area is
    // STR_AREA bytes, more than both); the helper validates the source address itself.
    let n = unsafe {
        let dst = scratch.area.as_mut_ptr().add(STR_ENTRY) as *mut c_void;
        generated::bpf_probe_read_user(dst, TRACE_STACK_TOP as u32, sp as *const c_void)
    };
    let (size, flags) = match n {
        0 => (TRACE_STACK_TOP, 0),
        _ => (0, str_flag::FAULT),
    };
    put_header(scratch, 0, 0, flags, size);
    scratch.used = (STR_ENTRY + size) as u32;
}

/// Writes a string entry's header at `at` (below `STR_AREA`).
#[inline(always)]
pub(crate) fn put_header(scratch: &mut Scratch, at: usize, read: u8, flags: u8, len: usize) {
    let at = at & (STR_AREA - 1);
    let len = (len as u16).to_ne_bytes();
    scratch.area[at] = read;
    scratch.area[at + 1] = flags;
    scratch.area[at + 2] = len[0];
    scratch.area[at + 3] = len[1];
}

/// A `char **` array (argv, envp): a header entry, then each element's string up to
/// `ARRAY_ELEMENTS`, and a `MORE` entry when there were more.
#[inline(never)]
pub(crate) fn put_array(scratch: &mut Scratch, read: u8, ptr: u64, user: bool, strlen: u32) {
    if !put_mark(scratch, read, str_flag::ARRAY) {
        return;
    }
    let mut i = 0;
    while i <= ARRAY_ELEMENTS {
        let slot = ptr.wrapping_add(8 * u64::from(i));
        let Some(element) = read_sized(slot, 8, user) else {
            put_mark(scratch, read, str_flag::FAULT);
            return;
        };
        if element == 0 {
            return;
        }
        if i == ARRAY_ELEMENTS {
            put_mark(scratch, read, str_flag::MORE);
            return;
        }
        if !put_string(scratch, read, element, user, strlen) {
            return;
        }
        i += 1;
    }
}

/// A `struct iovec` array (`str_array::IOVEC_*`) of as many elements as the low half of
/// `counts` says: an entry of its first `IOV_ELEMENTS` pairs as they are in memory, then each
/// element's bytes, `total` bytes in all at most (what a readv filled), each cut at the high
/// half of `counts` (`SlotConfig::buflen`), and a `MORE` entry when there were more elements.
/// An array that cannot be read leaves its one entry marked `FAULT`.
#[inline(never)]
pub(crate) fn put_iovecs(scratch: &mut Scratch, read: u8, ptr: u64, counts: u64, total: u64) {
    let (count, buflen) = (counts & 0xffff_ffff, counts >> 32);
    // Without branches: each would make two states of all that follows.
    let max = u64::from(STRLEN_MAX);
    let keep = pick(below(max, buflen), max, buflen);
    let max = u64::from(IOV_ELEMENTS);
    let shown = pick(below(max, count), max, count);
    put_buffer(
        scratch,
        read,
        ptr,
        shown * u64::from(IOVEC_BYTES),
        STRLEN_MAX,
    );
    scratch.iov_left = total;
    let mut i = 0;
    while i < IOV_ELEMENTS {
        if u64::from(i) >= shown {
            break;
        }
        let at = ptr.wrapping_add(u64::from(i * IOVEC_BYTES));
        let (Some(base), Some(len)) = (read_sized(at, 8, true), read_sized(at + 8, 8, true)) else {
            return;
        };
        // SAFETY: a plain aligned read of map memory; volatile so that LLVM keeps the load.
        let left = unsafe { core::ptr::read_volatile(&scratch.iov_left) };
        let take = pick(below(len, left), len, left);
        scratch.iov_left = left - take;
        put_element(scratch, read, base, take, keep);
        i += 1;
    }
    if count > shown {
        put_mark(scratch, read, str_flag::MORE);
    }
}

/// The iovec array `trace_exit_reads` read for the current task's call and saved in
/// `TRACE_SAVED` (`Scratch::iov_saved`), copied to the start of this event's area (it is the
/// call's first read) and forgotten; a `FAULT` entry when none was saved.
#[inline(always)]
fn copy_iovecs(scratch: &mut Scratch) {
    let saved = scratch.iov_saved;
    scratch.iov_saved = 0;
    let pid_tgid = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    // SAFETY: the map value is only read, by the probe-read helper, before it is removed.
    let from = match saved {
        0 => None,
        _ => unsafe { TRACE_SAVED.get(&pid_tgid) },
    };
    let Some(from) = from else {
        put_mark(scratch, 0, str_flag::FAULT);
        return;
    };
    let len = ((saved - 1) as usize & (2 * STR_AREA - 1)).min(STR_AREA);
    // SAFETY: the area is `STR_BUFFER` bytes, more than the `STR_AREA` copied at most, and the
    // saved one `STR_AREA`; the helper fails cleanly instead of faulting.
    let copied = unsafe {
        generated::bpf_probe_read_kernel(
            scratch.area.as_mut_ptr() as *mut c_void,
            len as u32,
            from.as_ptr() as *const c_void,
        )
    };
    let _ = TRACE_SAVED.remove(&pid_tgid);
    match copied {
        0 => scratch.used = len as u32,
        _ => {
            put_mark(scratch, 0, str_flag::FAULT);
        }
    }
}

/// Reads the slot's strings (`SlotConfig::strs`) into the event's string area. `record`
/// gives the pointer at a tracepoint record's byte offset.
#[inline(always)]
pub(crate) fn read_strings<const ARRAYS: bool, const BUFFERS: bool, const READS: usize>(
    event: &mut Event,
    config: &SlotConfig,
    record: impl Fn(&Event, u32) -> u64,
) {
    // 1..=STRLEN_MAX without a branch (userspace writes that range): one verifier state.
    let strlen = ((config.strlen.wrapping_sub(1)) & (STRLEN_MAX - 1)) + 1;
    scratch(event).used = 0;
    // The verifier walks as many reads as this run's slots may have: one, or all.
    let reads = match uses(USES_STR_MANY) {
        true => READS,
        false => 1,
    };
    let mut k = 0;
    while k < reads {
        let read: StrRead = config.strs[k];
        if read.from == str_from::NONE {
            break;
        }
        // Index the captured words, not the context: the verifier refuses ctx accesses at a
        // runtime offset, while a bounded index into map memory is fine. Masked only, as in
        // `read_fields`.
        let ptr = match read.from {
            str_from::ARG => event.data[(read.at & 7) as usize],
            str_from::FIELD => event.fields[(read.at & 3) as usize],
            str_from::RETURN => event.data[word::RETURN],
            str_from::STACK => record(event, STACK_AT),
            _ => record(event, read.at),
        };
        let user = match read.memory {
            str_mem::USER => true,
            str_mem::KERNEL => false,
            _ => ptr < KERNEL_SPACE_START,
        };
        let scratch = scratch(event);
        let at = used(scratch);
        scratch.first[k] = match at + STR_ENTRY <= STR_AREA {
            true => at as u32,
            false => NO_ENTRY,
        };
        // An iovec array is a call's first read (readv, writev), read by `trace_exit_reads`.
        if BUFFERS && uses(USES_IOVECS) && k == 0 && read.array >= str_array::IOVEC_GIVEN {
            copy_iovecs(scratch);
        } else if BUFFERS && uses(USES_BUFFERS) && read.len_from != 0 {
            let (len, keep) = match read.len_from {
                buffer_len::RETURN => (event_ret(scratch), config.buflen),
                buffer_len::IOCTL => {
                    // Whole where its last byte can be read (a structure, also across two
                    // pages), else an `int` (one at the end of a mapping). No arithmetic on
                    // `ptr` but an addition: in a tracepoint's program it may point into
                    // the context, where the verifier refuses a mask.
                    let whole = u64::from(IOCTL_ARG_MAX);
                    match read_sized(ptr + whole - 1, 1, true) {
                        Some(_) => (whole, STRLEN_MAX),
                        None => (IOCTL_ARG_INT, STRLEN_MAX),
                    }
                }
                // A structure is read whole, whatever -s says.
                from if from >= buffer_len::FIXED => {
                    (u64::from(from - buffer_len::FIXED) * 4, STRLEN_MAX)
                }
                from => (
                    scratch.event.data[((from - buffer_len::ARG0) & 7) as usize],
                    config.buflen,
                ),
            };
            put_buffer(scratch, k as u8, ptr, len, keep);
        } else if ARRAYS && uses(USES_STR_ARRAYS) && read.array != 0 {
            put_array(scratch, k as u8, ptr, user, strlen);
        } else {
            put_string(scratch, k as u8, ptr, user, strlen);
        }
        k += 1;
    }
    // Reads past the last have no entry.
    let scratch = scratch(event);
    while k < STR_READS {
        scratch.first[k] = NO_ENTRY;
        k += 1;
    }
    event.str_bytes = used(scratch) as i32;
}

/// Syscall argument `i` (0 to 5) from the `pt_regs` at `regs`, as the entry found it (at the
/// exit too: x86-64's syscall path leaves the argument registers there, the return value
/// going to `ax`); 0 when unreadable or past the sixth. A constant offset per argument: 5.10's
/// verifier refuses a stack read at a variable one.
#[inline(always)]
pub(crate) fn syscall_arg(regs: u64, i: u32) -> u64 {
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
    unsafe { bpf_probe_read_kernel((regs + offset) as *const u64) }.unwrap_or(0)
}

/// `size` bytes at `addr` from user or kernel memory, zero-extended; `None` when unreadable.
#[inline(always)]
pub(crate) fn read_sized(addr: u64, size: u8, user: bool) -> Option<u64> {
    // SAFETY: the probe-read helpers validate the source address themselves and fail with a
    // negative errno instead of faulting.
    unsafe {
        macro_rules! read {
            ($t:ty) => {
                if user {
                    bpf_probe_read_user(addr as *const $t)
                        .ok()
                        .map(|v| v as u64)
                } else {
                    bpf_probe_read_kernel(addr as *const $t)
                        .ok()
                        .map(|v| v as u64)
                }
            };
        }
        match size {
            1 => read!(u8),
            2 => read!(u16),
            4 => read!(u32),
            _ => read!(u64),
        }
    }
}

/// Whether `read`'s memory at `addr` is user memory: uprobes' always, kprobes' by address.
#[inline(always)]
fn in_user(read: &FieldRead, addr: u64) -> bool {
    read.flags & FIELD_USER != 0 || (read.flags & FIELD_AUTO != 0 && addr < KERNEL_SPACE_START)
}

/// The address of `read`'s member past pointer `base`: the pointers on the way loaded first
/// (`a->b->c`); `None` when one of them cannot be read. A NULL pointer on the way fails in the
/// helper, as any bad address does.
#[inline(always)]
fn member_address(base: u64, read: &FieldRead) -> Option<u64> {
    let mut addr = base;
    if !uses(USES_DEREFS) {
        return Some(addr.wrapping_add(read.offset as u64));
    }
    // Unrolled, each load behind a constant index; `hops` is 0 for a plain member.
    macro_rules! hop {
        ($h:literal) => {
            if read.hops > $h {
                let at = addr.wrapping_add(read.derefs[$h] as u64);
                addr = read_sized(at, 8, in_user(read, at))?;
            }
        };
    }
    hop!(0);
    hop!(1);
    hop!(2);
    const _: () = assert!(FIELD_DEREFS == 3, "one hop! per pointer load");
    Some(addr.wrapping_add(read.offset as u64))
}

/// The slot's struct member reads (`FUNC(how->flags)`): each pointer argument plus the
/// member's offset, into `event.fields`; a failed read sets its bit in `field_faults`.
#[inline(always)]
pub(crate) fn read_fields(event: &mut Event, config: &SlotConfig) {
    read_members(
        &event.data,
        config,
        (&mut event.fields, &mut event.field_faults),
    );
}

/// [`read_fields`] from the argument words `data` into `fields`, failed reads' bits into
/// `faults` (a latency start's, kept until its end: `LatStart::fields`).
#[inline(always)]
pub(crate) fn read_members(
    data: &[u64; DATA_WORDS],
    config: &SlotConfig,
    (fields, faults): (&mut [u64; FIELD_READS], &mut u32),
) {
    // Unrolled with constant indexes: no bounds checks (whose panic path the verifier
    // refuses) and no loop for it to walk.
    macro_rules! field {
        ($k:literal) => {
            let read = config.fields[$k];
            // The index is only masked, not also compared: LLVM drops a mask it can prove
            // redundant after a comparison, and older verifiers (6.1) lose the comparison's
            // bound when the register is spilled and filled in between. Userspace writes
            // argument indexes 0..5; the words past them are ours, not out of bounds.
            if read.size != 0 {
                let base = data[(read.arg & 7) as usize];
                match member_address(base, &read) {
                    Some(addr) if read.flags & FIELD_ADDRESS != 0 => fields[$k] = addr,
                    Some(addr) => match read_sized(addr, read.size, in_user(&read, addr)) {
                        Some(value) => fields[$k] = value,
                        None => *faults |= 1 << $k,
                    },
                    None => *faults |= 1 << $k,
                }
            }
        };
    }
    field!(0);
    field!(1);
    field!(2);
    field!(3);
    const _: () = assert!(FIELD_READS == 4, "one field! per read");
}

/// x86-64's `struct pt_regs`, copied word by word into `saved` (its byte offset / 8 is the
/// index). The verifier refuses context loads at a runtime offset; rather than a helper call
/// per argument (`bpf_probe_read_kernel`, as libbpf's usdt.bpf.h does), 21 constant-offset
/// loads into map memory, which can be indexed at run time (and a sixth fewer instructions
/// to verify).
#[inline(always)]
pub(crate) fn save_registers(ctx: &ProbeContext, saved: &mut [u64; 32]) {
    let regs = ctx.regs;
    macro_rules! save {
        ($($index:literal => $field:ident),*) => {
            $(
                // SAFETY: `regs` is this kprobe-type program's context, a `struct pt_regs`:
                // a load at a constant offset inside it, which the verifier checks as such.
                saved[$index] = unsafe { core::ptr::addr_of!((*regs).$field).read() };
            )*
        };
    }
    save!(0 => r15, 1 => r14, 2 => r13, 3 => r12, 4 => rbp, 5 => rbx, 6 => r11, 7 => r10,
        8 => r9, 9 => r8, 10 => rax, 11 => rcx, 12 => rdx, 13 => rsi, 14 => rdi, 15 => orig_rax,
        16 => rip, 17 => cs, 18 => eflags, 19 => rsp, 20 => ss);
}

/// A USDT probe's arguments, as `USDT_ARGS[index]` describes its note's specs: a constant (an
/// unreadable argument is the constant 0), a register, or user memory at a register plus a
/// displacement (read as 8 bytes: an argument in the last bytes of a mapping reads as
/// failed). A failed memory read sets bit `8 + i` of `faults` (`Event::field_faults`: printed
/// as `?`).
///
/// Every path leaves each word an unknown number (never a constant such as 0), and the fault
/// bits go to `faults` in map memory, which the verifier does not track: the paths through one
/// argument then end in the same state and the verifier checks the next argument once, not
/// once per path so far (38,827 instructions to verify, against 1,430 for a plain uprobe
/// slot, before).
#[inline(always)]
pub(crate) fn usdt_args(
    ctx: &ProbeContext,
    index: u32,
    args: &mut [u64; word::ARGS],
    faults: &mut u32,
) {
    let Some(spec) = USDT_ARGS.get(index) else {
        return;
    };
    let Some(saved) = USDT_REGS.get_ptr_mut(0) else {
        return;
    };
    // SAFETY: index 0 exists (max_entries 1); the per-CPU value is only touched by this
    // program invocation until it returns.
    let saved = unsafe { &mut *saved };
    save_registers(ctx, saved);
    let mut i = 0;
    while i < word::ARGS {
        let arg = spec.args[i];
        let mut value = arg.value as u64;
        if arg.kind == USDT_REG || arg.kind == USDT_MEM {
            // Masked, not compared: the verifier needs the index bounded; userspace writes
            // pt_regs offsets (0..160), so the words past them are ours, not out of bounds.
            value = saved[(arg.reg as usize >> 3) & 31];
            if arg.kind == USDT_MEM {
                // Eight bytes whatever the size, zero-extended from it by shifts: one helper
                // call per argument rather than one per size.
                let addr = value.wrapping_add(arg.value as u64);
                // SAFETY: the helper validates the user address itself and fails instead of
                // faulting.
                match unsafe { bpf_probe_read_user(addr as *const u64) } {
                    Ok(read) => {
                        let unused = (64 - 8 * (arg.size as u64 & 15).clamp(1, 8)) & 63;
                        value = read << unused >> unused;
                    }
                    Err(_) => *faults |= 1 << (8 + i),
                }
            }
        }
        args[i] = value;
        i += 1;
    }
}

/// The record's first `DATA_WORDS` words, or with `SLOT_RECORD_LEN` its first `record_len`
/// bytes (the rest zero). Through the probe-read helper, not plain context
/// loads: the kernel refuses to attach a tracepoint program whose context reads reach past the
/// event's record (`max_ctx_offset`), and most records are shorter than 64 bytes. Records
/// shorter than that sit in the per-CPU trace buffer (or, for syscalls, a 64-byte record on
/// the kernel stack), so the tail read stays in kernel memory.
#[inline(always)]
pub(crate) fn read_record(ctx: &TracePointContext, event: &mut Event, config: &SlotConfig) {
    // Only the part of the record the run uses, when userspace says which (a getppid record
    // has nothing printed; the helper's call was about 6% of each streamed hit).
    // Bounded as the 64-bit value it is loaded as: a bound on a narrowed copy would leave the
    // register the helper is given unbounded for the verifier.
    let mut len = (DATA_WORDS * 8) as u64;
    if config.flags & SLOT_RECORD_LEN != 0 {
        zero_words(&mut event.data);
        len = config.record_len;
        if len > (DATA_WORDS * 8) as u64 {
            len = (DATA_WORDS * 8) as u64;
        }
        if len == 0 {
            return;
        }
    }
    // Straight into the event, which the helper zeroes when the read fails.
    // SAFETY: the event's data words are writable map memory of that size; the helper fails
    // cleanly on a bad source.
    unsafe {
        generated::bpf_probe_read_kernel(
            event.data.as_mut_ptr() as *mut c_void,
            len as u32,
            ctx.as_ptr(),
        )
    };
}

/// What [`read_strings`] asks its `record` source for the user stack pointer of a
/// [`str_from::STACK`] read (no record offset is this large).
pub(crate) const STACK_AT: u32 = u32::MAX;

/// x86-64's kernel stack (`THREAD_SIZE`, without KASAN) and `struct pt_regs`, at its top
/// below `TOP_OF_KERNEL_STACK_PADDING`: 0, or 16 in kernels built with FRED (6.9+, Debian's
/// 7.3). The user code and stack segments (`__USER_CS`, `__USER_DS`) tell which.
const THREAD_SIZE: u64 = 16384;
const PT_REGS_SIZE: u64 = 168;
const PT_REGS_SS: u64 = 160;
const USER_CS: u64 = 0x33;
const USER_SS: u64 = 0x2b;

/// The current task's user stack pointer, from the registers it entered the kernel with, at
/// the top of its kernel stack (`task_pt_regs`, found through the BTF offset of
/// `task_struct.stack`); 0 without the offset, or when no place there holds a user mode's
/// registers (another stack size, a kernel thread).
#[inline(always)]
pub(crate) fn user_sp() -> u64 {
    let Some(offsets) = SCHED_OFFSETS.get(0) else {
        return 0;
    };
    if offsets.task_stack == 0 {
        return 0;
    }
    // SAFETY: helper without preconditions; the probe-read helper fails cleanly on a bad
    // address.
    let stack = unsafe {
        let task = aya_ebpf::helpers::bpf_get_current_task();
        aya_ebpf::helpers::bpf_probe_read_kernel(
            (task + u64::from(offsets.task_stack)) as *const u64,
        )
    };
    let Ok(stack) = stack else {
        return 0;
    };
    let word = |at: u64| {
        // SAFETY: as above.
        unsafe { aya_ebpf::helpers::bpf_probe_read_kernel(at as *const u64) }.unwrap_or(0)
    };
    let user = |regs: u64| {
        word(regs + PT_REGS_CS) & 0xffff == USER_CS && word(regs + PT_REGS_SS) & 0xffff == USER_SS
    };
    let regs = stack.wrapping_add(THREAD_SIZE - PT_REGS_SIZE);
    if user(regs) {
        return word(regs + PT_REGS_SP);
    }
    let regs = regs.wrapping_sub(16);
    match user(regs) {
        true => word(regs + PT_REGS_SP),
        false => 0,
    }
}

/// Whether the thread group of `task`, which is exiting, has threads that are not (its
/// `signal_struct`'s `live`); `None` without the BTF offsets.
#[inline(always)]
pub(crate) fn group_lives(task: u64) -> Option<bool> {
    let offsets = SCHED_OFFSETS.get(0)?;
    if offsets.task_signal == 0 || offsets.signal_live == 0 {
        return None;
    }
    // SAFETY: the probe-read helper fails cleanly on a bad address.
    let live = unsafe {
        let signal = aya_ebpf::helpers::bpf_probe_read_kernel(
            (task + u64::from(offsets.task_signal)) as *const u64,
        )
        .ok()?;
        aya_ebpf::helpers::bpf_probe_read_kernel(
            (signal + u64::from(offsets.signal_live)) as *const i32,
        )
        .ok()?
    };
    Some(live > 0)
}

/// The calls that fill an array of two descriptors.
const NR_PIPE: u64 = 22;
const NR_PIPE2: u64 = 293;
const NR_SOCKETPAIR: u64 = 53;

/// The current task's CPU clock at `now` (ktime), `now + se.sum_exec_runtime -
/// se.exec_start`, and `se.sum_exec_runtime`. While the task runs, the scheduler's updates add
/// the same time to both fields, so their difference moves only while it is off the CPU
/// (switching it in sets `exec_start` to its runqueue's clock then): on one CPU, the clock at
/// a call's exit minus the clock at its entry is the time the task spent on the CPU in
/// between, strace -c's system time. The runqueue's clock and ktime differ by an offset that
/// cancels in that difference on one CPU (less the interrupt and steal time the runqueue's
/// clock leaves out); between two CPUs it does not, and `call_cpu_time` takes the sums'
/// difference instead. `None` without the offsets (no BTF).
#[inline(always)]
pub(crate) fn cpu_clock(now: u64) -> Option<(u64, u64)> {
    let offsets = SCHED_OFFSETS.get(0)?;
    if offsets.task_sum_exec_runtime == 0 || offsets.task_exec_start == 0 {
        return None;
    }
    // SAFETY: helper without preconditions.
    let task = unsafe { aya_ebpf::helpers::bpf_get_current_task() };
    let field = |offset: u32| {
        let at = task.wrapping_add(u64::from(offset)) as *const u64;
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        unsafe { aya_ebpf::helpers::bpf_probe_read_kernel(at) }.ok()
    };
    let sum = field(offsets.task_sum_exec_runtime)?;
    let exec_start = field(offsets.task_exec_start)?;
    Some((now.wrapping_add(sum).wrapping_sub(exec_start), sum))
}

/// The CPU time of a call that entered as `start` and ends `now` on `cpu`: the CPU clocks'
/// difference on one CPU; across CPUs the runtime sums' (off by the time since each sum's
/// last update, under a scheduler tick); never below 0 nor above the time from entry to exit.
#[inline(always)]
pub(crate) fn call_cpu_time(start: &TraceStart, now: u64, cpu: u32) -> Option<u64> {
    let (clock, sum) = cpu_clock(now)?;
    let spent = match cpu == start.cpu {
        true => clock.wrapping_sub(start.cpu_clock) as i64,
        false => sum.wrapping_sub(start.cpu_sum) as i64,
    };
    let wall = now.wrapping_sub(start.time_ns) as i64;
    Some(match spent {
        s if s < 0 => 0,
        s if s > wall => wall as u64,
        s => s as u64,
    })
}

/// The inode numbers of the descriptors a call made (`trace_word::INODES`): the one it
/// returned, or the two of the array a pipe or socketpair filled.
#[inline(always)]
pub(crate) fn fd_inodes(event: &mut Event, nr: u64, ret: u64) {
    let array = match nr {
        NR_PIPE | NR_PIPE2 => event.data[0],
        NR_SOCKETPAIR => event.data[3],
        _ => {
            event.fields[trace_word::INODES] = inode_of(ret).unwrap_or(0);
            return;
        }
    };
    // SAFETY: the probe-read helpers fail cleanly on a bad address.
    let fds = unsafe { aya_ebpf::helpers::bpf_probe_read_user(array as *const [i32; 2]) };
    if let Ok([a, b]) = fds {
        event.fields[trace_word::INODES] = inode_of(a as u64).unwrap_or(0);
        event.fields[trace_word::INODES + 1] = inode_of(b as u64).unwrap_or(0);
    }
}

/// The inode number of the current task's descriptor `fd`:
/// `task->files->fdt->fd[fd]->f_inode->i_ino`, by the offsets userspace found in BTF.
#[inline(always)]
fn inode_of(fd: u64) -> Option<u64> {
    let o = SCHED_OFFSETS.get(0)?;
    if o.task_files == 0 || o.inode_ino == 0 {
        return None;
    }
    let read = |at: u64, offset: u64| {
        let at = at.wrapping_add(offset) as *const u64;
        // SAFETY: the probe-read helper fails cleanly on a bad address.
        unsafe { aya_ebpf::helpers::bpf_probe_read_kernel(at) }.ok()
    };
    // SAFETY: helper without preconditions.
    let task = unsafe { aya_ebpf::helpers::bpf_get_current_task() };
    let files = read(task, u64::from(o.task_files))?;
    let fdt = read(files, u64::from(o.files_fdt))?;
    let max = read(fdt, u64::from(o.fdt_max_fds))? & 0xffff_ffff;
    if fd >= max {
        return None;
    }
    let slots = read(fdt, u64::from(o.fdt_fd))?;
    let file = read(slots, fd * 8)?;
    let inode = read(file, u64::from(o.file_inode))?;
    read(inode, u64::from(o.inode_ino))
}
