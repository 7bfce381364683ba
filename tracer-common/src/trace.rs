//! `tracer trace`: the call's words, kinds, signals and saved starts (`TraceStart`).

use crate::*;

/// What the words of a `tracer trace` [`Event`] hold: one completed system call, sent when it
/// returns. `data[0..6]` are its arguments, [`word::RETURN`] its return value.
pub mod trace_word {
    /// `data`: nanoseconds from entry to exit.
    pub const DURATION: usize = 7;
    /// `fields`: a [`trace_kind`](super::trace_kind).
    pub const KIND: usize = 0;
    /// `fields`: 1 when the call failed (returned -4095..-1), for `-c`'s error column.
    pub const FAILED: usize = 1;
    /// `fields`: an exec's environment length + 1 (strace's `/* 23 vars */`), 0 when it was
    /// not counted (unreadable, or longer than the walk).
    pub const ENVIRON: usize = 2;
    /// `fields`: the entries a getdents call returned + 1 (strace's `/* 144 entries */`), 0
    /// when not counted; [`ENTRIES_MORE`] set when the walk stopped before the end.
    pub const ENTRIES: usize = 3;
    /// In [`ENTRIES`]: more entries than the walk reads.
    pub const ENTRIES_MORE: u64 = 1 << 32;
    /// `fields` (with `SLOT_TRACE_FD_INODES`, calls that are neither execs nor getdents, so
    /// the words [`ENVIRON`] and [`ENTRIES`] are free): the inode numbers of the descriptor
    /// the call returned, or of the two a pipe or socketpair filled; 0 where unread.
    pub const INODES: usize = 2;
    /// `fields` (calls with `SlotConfig::entry_int`: accept, getsockname, recvfrom, recvmsg,
    /// capget, capset; none of them getdents, a pipe or a socketpair, which write this word):
    /// the `int` the call's in/out argument held when it entered (strace's `[128 => 16]`),
    /// with [`ENTRY_INT_READ`] set; 0 when it was not read.
    pub const ENTRY_INT: usize = 3;
    /// In [`ENTRY_INT`]: the entry read the `int`.
    pub const ENTRY_INT_READ: u64 = 1 << 32;
    /// In [`ENTRY_INT`], for a `struct timespec` the call overwrites (ppoll's timeout, with
    /// `SlotConfig::entry_int`'s [`ENTRY_TIMESPEC`](crate::ENTRY_TIMESPEC)): the entry read it,
    /// `tv_sec` in bits 30..63 and `tv_nsec` in bits 0..30. A timespec that does not fit
    /// (`tv_sec` of 2^33 or more, an invalid `tv_nsec`) is not packed: the word is 0.
    pub const ENTRY_TIMESPEC_READ: u64 = 1 << 63;
}

/// In `SlotConfig::entry_int`: the entry reads a `struct timespec` (16 bytes) in place of an
/// `int`, packed as [`trace_word::ENTRY_TIMESPEC_READ`] says.
pub const ENTRY_TIMESPEC: u32 = 1 << 16;

/// `fields[trace_word::KIND]` of a `tracer trace` event.
pub mod trace_kind {
    /// Entered and returned; `time_ns` is the entry's.
    pub const COMPLETE: u64 = 0;
    /// Never returns (exit, exit_group): sent at entry, no return value.
    pub const NO_RETURN: u64 = 1;
    /// A signal delivered to a traced task (`signal_deliver`): [`signal_word`] in `data`.
    pub const SIGNAL: u64 = 2;
    /// A traced task exited (`sched_process_exit`): its wait status (`exit_code`: the code
    /// in bits 8-15, or the signal that killed it in bits 0-6, 0x80 for a core dump) in
    /// `data[0]`.
    pub const EXIT: u64 = 3;
    /// The task ended inside the call (killed, or another thread's exit_group): sent at its
    /// exit (`sched_process_exit`), with the entry's arguments and no return value.
    pub const KILLED: u64 = 4;
    /// An exec by a thread that was not its process's leader gave it the leader's id
    /// (`sched_process_exec`): the thread's old id in `data[0]`. strace's `+++ superseded by
    /// execve in pid N +++`.
    pub const SUPERSEDED: u64 = 5;
}

/// `data` words of a [`trace_kind::SIGNAL`] event: the signal, its `si_code`, and the
/// siginfo's union (bytes 16 to 48 of `struct kernel_siginfo`: `si_pid`/`si_uid`,
/// `si_status`, `si_utime`, `si_stime` of SIGCHLD, `si_addr` of a fault), as read.
pub mod signal_word {
    pub const SIGNO: usize = 0;
    pub const CODE: usize = 1;
    /// The first of four words from byte 16 of the siginfo.
    pub const UNION: usize = 2;
    pub const UNION_WORDS: usize = 4;
}

/// A `tracer trace` call in flight (`TRACE_START`, by `pid_tgid`): what its end needs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStart {
    pub time_ns: u64,
    /// With [`SLOT_TRACE_CPU_TIME`](crate::SLOT_TRACE_CPU_TIME): the task's CPU clock at entry
    /// (see `tracer-ebpf`'s `cpu_clock`), 0 when it could not be read, and its
    /// `se.sum_exec_runtime` then (for a call that ends on another CPU).
    pub cpu_clock: u64,
    pub cpu_sum: u64,
    pub args: [u64; word::ARGS],
    pub nr: u32,
    /// [`TRACE_SAVED_STRINGS`], [`TRACE_SAVED_IOVECS`]: what of it is in `TRACE_SAVED`;
    /// [`TRACE_SAVED_FDSETS`]: in `TRACE_FDSETS`.
    pub flags: u32,
    /// With [`TRACE_SAVED_STRINGS`]: the string area's length and each read's first entry;
    /// with [`TRACE_SAVED_IOVECS`], the length of its iovec array's entries; with
    /// [`TRACE_SAVED_FDSETS`], of the given fd sets' entries.
    pub used: u32,
    pub first: [u32; STR_READS],
    /// The CPU the call entered on (with `SLOT_TRACE_CPU_TIME`).
    pub cpu: u32,
    /// [`trace_word::ENTRY_INT`]: the `int` `SlotConfig::entry_int` names, as it was at entry.
    pub entry_int: u64,
    /// A getdents call's entries, counted at its exit by `trace_exit_reads`
    /// ([`trace_word::ENTRIES`]'s value); 0 when not counted.
    pub dirents: u64,
}

/// [`TraceStart::flags`]: the strings were read at entry and saved.
pub const TRACE_SAVED_STRINGS: u32 = 1;
/// [`TraceStart::flags`]: the iovec array (or msghdr) was read at exit by `trace_exit_reads`
/// and saved for `trace_exit`, by task: between the two programs the task may be preempted
/// (7.3, `PREEMPT_LAZY`) and another task's `trace_exit_reads` run on the same CPU.
pub const TRACE_SAVED_IOVECS: u32 = 2;
/// [`TraceStart::flags`]: the fd sets a select or pselect6 was given were read at entry
/// (`str_array::FDSETS`: the call overwrites them with the ready ones) and saved in
/// `TRACE_FDSETS`, `used` bytes of entries; `trace_exit_reads` takes them.
pub const TRACE_SAVED_FDSETS: u32 = 4;
/// The x86-64 calls whose first read is their fd sets ([`str_array::FDSETS`](crate::str_array)):
/// select and pselect6.
pub const FDSET_CALLS: [u32; 2] = [23, 270];
/// Bytes of one fd set read at most: `FD_SETSIZE` (1,024) descriptors, glibc's `fd_set`. A
/// longer set (`nfds` above 1,024) is read this far and marked cut.
pub const FDSET_BYTES: u32 = 128;
/// Bytes of the entries a select's entry saves: its three sets, each an entry.
pub const FDSETS_SAVED: usize = 3 * (crate::STR_ENTRY + FDSET_BYTES as usize);
/// selects and pselect6s in flight whose given sets `TRACE_FDSETS` holds at once.
pub const TRACE_FDSETS_ENTRIES: u32 = 1024;
/// Calls in flight `TRACE_START` holds: threads inside a traced syscall at once.
pub const TRACE_ENTRIES: u32 = 16384;
/// Strings saved at entry (execve) and iovec arrays between a call's two exit programs, at
/// once.
pub const TRACE_SAVED_ENTRIES: u32 = 64;
/// `TRACE_STATS` counters (per CPU).
pub mod trace_stat {
    /// A traced task's call ended with no entry seen (it began before tracing did).
    pub const NO_ENTRY: u32 = 0;
    /// A call's entry found `TRACE_START` full: its end is not paired (also a `NO_ENTRY`).
    pub const START_FULL: u32 = 1;
    /// An execve's strings found `TRACE_SAVED` full: they are read at its end instead.
    pub const SAVED_FULL: u32 = 2;
    /// An iovec array (or msghdr) found `TRACE_SAVED` full at exit: shown as its address.
    pub const IOVECS_FULL: u32 = 3;
    /// A select's given fd sets found `TRACE_FDSETS` full at entry: shown as addresses.
    pub const FDSETS_FULL: u32 = 4;
    pub const COUNT: u32 = 5;
}
