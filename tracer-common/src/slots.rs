//! A slot's configuration (`SlotConfig`), its flag word (`SLOT_*`), the parts of the programs a run
//! uses (`USES_*`), its per-slot counters in `STATS`, why a hit was dropped, and counted runs
//! (`RunCount`).

use crate::*;

/// `STATS` has four per-CPU counters per slot: hits that passed the task filters at
/// `4 * slot`, `bpf_perf_event_output` failures (ring full) at `4 * slot + 1`, hits the value
/// filter (`--filter`) refused at `4 * slot + 2`, and the cells the slot added to a count map
/// at `4 * slot + 3`.
pub const STAT_COUNT: u32 = 4 * SLOTS;

/// `STATS` index of a slot's hit counter.
pub const fn stat_hits(slot: u32) -> u32 {
    4 * slot
}

/// `STATS` index of a slot's failed-output counter.
pub const fn stat_failed(slot: u32) -> u32 {
    4 * slot + 1
}

/// `STATS` index of a slot's counter of hits the value filter refused.
pub const fn stat_filtered(slot: u32) -> u32 {
    4 * slot + 2
}

/// `STATS` index of a slot's counter of new cells in a count map (`COUNTS`, `STR_COUNTS`): a
/// profile reads it to know, with one lookup, when new stacks may have come in.
pub const fn stat_cells(slot: u32) -> u32 {
    4 * slot + 3
}

// `SlotConfig::flags`, in bit order: what a slot's program reads, filters and does with a
// hit. Bits 2, 3, 11 and 12 are free; `SLOT_FLAGS` lists them all, and the build fails if
// two share a bit.

/// `SlotConfig::flags`: the program reads the return value (kretprobe / uretprobe).
pub const SLOT_RETURN: u32 = 1 << 0;

/// `SlotConfig::flags` (with [`SLOT_FILTER_TRACKED`]; `sched:sched_process_exec` slots): a
/// process still pending in `TRACKED` passes too. It is the launched command at its own exec,
/// which the tracking program marks active from its own callback of the tracepoint, and
/// the kernel runs a perf event's program before it whenever another perf user of the
/// tracepoint registered the perf callback first (another run, another tool).
pub const SLOT_AT_EXEC: u32 = 1 << 1;

/// `SlotConfig::flags`: only count the hit in `STATS`, emit nothing.
pub const SLOT_COUNT_ONLY: u32 = 1 << 4;

/// `SlotConfig::flags`: only hits from processes in `TRACKED` (state active).
pub const SLOT_FILTER_TRACKED: u32 = 1 << 5;

/// `SlotConfig::flags`: only hits whose comm equals `SlotConfig::comm`.
pub const SLOT_FILTER_COMM: u32 = 1 << 6;

/// `SlotConfig::flags` (perf_event slots): the watched address is kernel memory.
pub const SLOT_VALUE_KERNEL: u32 = 1 << 7;

/// `SlotConfig::flags`: capture the kernel stack of each hit (`Event::kstack`).
pub const SLOT_STACK_KERNEL: u32 = 1 << 8;

/// `SlotConfig::flags`: capture the user stack of each hit (`Event::ustack`).
pub const SLOT_STACK_USER: u32 = 1 << 9;

/// `SlotConfig::flags`: count the hit in the `COUNTS` map (`--count-by`, `--sum`, `--hist`)
/// instead of emitting it.
pub const SLOT_AGGREGATE: u32 = 1 << 10;

/// `SlotConfig::flags` (raw tracepoint slots on `sys_exit`): the syscall number is read from
/// the registers' `orig_ax`; on `sys_enter` it is the tracepoint's second argument.
pub const SLOT_RAW_SYS_EXIT: u32 = 1 << 13;

/// `SlotConfig::flags` (with `SLOT_AGGREGATE`, keyed by nothing but comm, pid, tid and CPU,
/// and no cgroup filter): hits of the same task in a row on one CPU are counted in that CPU's
/// [`RunCount`] and added to `COUNTS` only when another task's hit ends the run, which spares
/// each repeated hit the filters and the hash update. Needs [`USES_RUN_COUNT`].
pub const SLOT_RUN_COUNT: u32 = 1 << 14;

/// The run is ending: userspace sets it on every slot before its last drain, and the program
/// returns at once, counting and sending nothing. After it and an RCU grace period (the
/// programs already running have returned), the counters and the rings hold all there will
/// ever be, so the summary's `hits == printed + lost` is exact at any stop.
pub const SLOT_STOPPED: u32 = 1 << 15;

/// `SlotConfig::flags`: the slot's [`Filter`] (`--filter`) decides, after the values are
/// read, whether the hit is sent or counted.
pub const SLOT_VALUE_FILTER: u32 = 1 << 16;

/// `SlotConfig::flags` (probe slots): a USDT probe. Its argument words are not the ABI's
/// argument registers but what the probe's note says (`-4@%eax`, `8@-16(%rbp)`, `-4@$5`),
/// read as the slot's entry in `USDT_ARGS` ([`UsdtArgs`]) describes.
pub const SLOT_USDT: u32 = 1 << 17;

/// `SlotConfig::flags` (`tracer trace`: execve, execveat): the call's strings are read when it
/// enters, kept in `TRACE_SAVED` and sent with its end (after a successful exec they are
/// gone); and the launched command's own exec, made while it is still pending, is traced.
pub const SLOT_TRACE_AT_ENTRY: u32 = 1 << 18;

/// `SlotConfig::flags` (`tracer trace`): the call never returns (exit, exit_group): it is sent
/// when it enters, with [`trace_kind::NO_RETURN`].
pub const SLOT_TRACE_NO_RETURN: u32 = 1 << 19;

/// `SlotConfig::flags` (`tracer trace --failed`): only calls that failed (returned -4095..-1)
/// are sent or counted; the others count as filtered.
pub const SLOT_TRACE_FAILED: u32 = 1 << 20;

/// `SlotConfig::flags` (`tracer trace`: clone, clone3, fork, vfork): a new task returns from
/// the call without having entered it; that end is the child's start, not a lost entry.
pub const SLOT_TRACE_FORKS: u32 = 1 << 21;

/// `SlotConfig::flags`: a uprobe on a function's first instruction, with user stacks. There the
/// function has not pushed its frame yet, so a frame-pointer walk from it skips its direct
/// caller (Debian's 5.10 unwinds so; 6.1 on handle it); the program sends the return address
/// at the stack pointer in [`word::ENTRY_RET`] (and in [`AggKey::entry_ret`]), and userspace
/// puts it back where the kernel's walk left it out. On a fentry slot with kernel stacks, the
/// word is the traced function's address instead (`bpf_get_func_ip`), which userspace puts
/// first where the unwinder from the trampoline left the function out: a kernel address,
/// never a user return address, so one word tells them apart.
pub const SLOT_STACK_AT_ENTRY: u32 = 1 << 22;

/// `SlotConfig::flags` (with `SLOT_AGGREGATE`, for a key [`SLOT_RUN_COUNT`] does not allow
/// but that has no summed, histogrammed or string part): hits with the same key in a row on
/// one CPU are counted in that CPU's [`RunCount`]. The hit passes the filters and builds its
/// key as usual; a key equal to the run's then costs a compare instead of the hash update
/// (`tracer watch --summary`: the same thread at the same instruction, hit after hit). Needs
/// [`USES_RUN_KEYED`].
pub const SLOT_RUN_KEYED: u32 = 1 << 23;

/// `SlotConfig::flags` (tracepoint slots): read only the first `SlotConfig::record_len` bytes
/// of the record, the part the run uses (0: none); the other data words are zero. Without it,
/// all [`DATA_WORDS`] words are read.
pub const SLOT_RECORD_LEN: u32 = 1 << 24;

/// `SlotConfig::flags` (breakpoint and software-event slots, with [`SLOT_RUN_KEYED`], keyed
/// by task parts and the trapping instruction pointer only: see
/// [`SlotConfig::may_count_runs_at_ip`]): a hit of the run's task at the run's instruction,
/// in the run's task generation, continues the run first thing, before the filters, the
/// scratch event and the key (which would all come out the same).
pub const SLOT_RUN_AT_IP: u32 = 1 << 25;

/// `SlotConfig::flags` (`tracer trace`, getdents and getdents64): count the directory
/// entries the call returned (`trace_word::ENTRIES`). Needs [`USES_DIRENTS`].
pub const SLOT_TRACE_DIRENTS: u32 = 1 << 26;

/// `SlotConfig::flags` (`tracer trace -c` without `-w`): a call's time is the CPU time its
/// task spent in it (strace -c's system time), not the time from its entry to its exit: the
/// time off the CPU (asleep, waiting, preempted) is left out. Needs [`USES_CPU_TIME`] and
/// the `sched_entity` offsets in `SchedOffsets`; without them the time stays the wall's.
pub const SLOT_TRACE_CPU_TIME: u32 = 1 << 27;

/// `SlotConfig::flags` (`tracer trace -y` and `-P`: socket, socketpair, pipe, pipe2, accept,
/// accept4): send the inode numbers of the descriptors the call made
/// (`trace_word::INODES`), read from the task's descriptor table at the call's exit, so that
/// userspace names a pipe or socket the process has closed, or exited with, by the time the
/// call is shown. Needs [`USES_FD_INODES`] and the `files` offsets in `SchedOffsets`.
pub const SLOT_TRACE_FD_INODES: u32 = 1 << 28;

/// Every `SLOT_*` flag, in bit order.
pub const SLOT_FLAGS: [u32; 25] = [
    SLOT_RETURN,
    SLOT_AT_EXEC,
    SLOT_COUNT_ONLY,
    SLOT_FILTER_TRACKED,
    SLOT_FILTER_COMM,
    SLOT_VALUE_KERNEL,
    SLOT_STACK_KERNEL,
    SLOT_STACK_USER,
    SLOT_AGGREGATE,
    SLOT_RAW_SYS_EXIT,
    SLOT_RUN_COUNT,
    SLOT_STOPPED,
    SLOT_VALUE_FILTER,
    SLOT_USDT,
    SLOT_TRACE_AT_ENTRY,
    SLOT_TRACE_NO_RETURN,
    SLOT_TRACE_FAILED,
    SLOT_TRACE_FORKS,
    SLOT_STACK_AT_ENTRY,
    SLOT_RUN_KEYED,
    SLOT_RECORD_LEN,
    SLOT_RUN_AT_IP,
    SLOT_TRACE_DIRENTS,
    SLOT_TRACE_CPU_TIME,
    SLOT_TRACE_FD_INODES,
];
const _: () = assert!(distinct_bits(&SLOT_FLAGS), "two SLOT_* flags share a bit");

/// What userspace tells one program slot before attaching it (BPF `CONFIG` array map).
/// Zero in a filter field means "any".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotConfig {
    /// `SLOT_*` bits.
    pub flags: u32,
    /// Bytes of each string read (`--strlen`, at most [`STRLEN_MAX`]).
    pub strlen: u32,
    /// Only hits from this thread group (process id).
    pub tgid: u32,
    /// Only hits from this thread.
    pub tid: u32,
    /// Only hits on these CPUs (bit n = CPU n; CPUs 64 and up are not filterable).
    pub cpu_mask: u64,
    /// Only hits from tasks in this cgroup (v2 cgroup id: the inode of its directory).
    pub cgroup_id: u64,
    /// With `SLOT_FILTER_COMM`: the task name, NUL-padded.
    pub comm: [u8; 16],
    /// Never hits from this thread group (tracer itself), 0 for none.
    pub exclude_tgid: u32,
    /// `AGG_*` bits, with `SLOT_AGGREGATE`.
    pub agg: u32,
    /// [`src`] of the keyed value (`AGG_KEY_VALUE`).
    pub key_src: u32,
    /// [`src`] of the summed or histogrammed value (`AGG_SUM`, `AGG_HIST`).
    pub val_src: u32,
    /// Struct members to read (probe slots), into `Event::fields` in this order.
    pub fields: [FieldRead; FIELD_READS],
    /// The strings to read, in this order, into the event's string area (after the member
    /// reads: a string may be a member's pointer).
    pub strs: [StrRead; STR_READS],
    /// Raw tracepoint slots on `sys_enter`/`sys_exit`: the number of the syscall counted.
    pub raw_syscall: u32,
    /// Bytes of a buffer read ([`StrRead::len_from`]) kept at most (`tracer trace -s`).
    pub buflen: u32,
    /// `AGG_HIST`: linear buckets of this width (`--linear STEP`); 0 for log2 buckets.
    pub hist_step: u64,
    /// `AGG_HIST` linear: the first bucket's low end (as `i64` for a signed source).
    pub hist_min: u64,
    /// `AGG_HIST` linear: buckets between the edge rows (at most [`AGG_LINEAR_BUCKETS`]).
    pub hist_buckets: u64,
    /// With [`SLOT_RECORD_LEN`]: the bytes of the record read (at most `8 * DATA_WORDS`).
    pub record_len: u64,
    /// `tracer trace`: 1 + the argument pointing at an `int` the call reads and writes
    /// (accept's and getsockname's `socklen_t *`), plus its byte offset there times 256
    /// (recvmsg's `msg_namelen`, in the msghdr), which the entry reads
    /// ([`trace_word::ENTRY_INT`](crate::trace_word::ENTRY_INT)); with [`ENTRY_TIMESPEC`], a
    /// `struct timespec` there in place of the `int` (ppoll's timeout); 0 for none.
    pub entry_int: u32,
    pub _pad: u32,
}

/// Bits of the object-wide `USES` constant: what any slot of this run may do. Userspace sets it
/// before the object is loaded; it lives in frozen read-only memory, so the verifier knows it
/// and checks no code behind a cleared bit (the tracepoint program's aggregation path alone
/// was 60% of its 5.8 ms verification). A slot whose config needs more is refused at
/// `take_slot`, never run with parts missing.
pub const USES_STREAM: u32 = 1 << 0;
/// In-kernel aggregation (`COUNTS`).
pub const USES_AGGREGATE: u32 = 1 << 1;
/// Aggregation keyed or valued by a captured word (`AGG_KEY_VALUE`, `AGG_SUM`, `AGG_HIST`).
pub const USES_AGG_VALUE: u32 = 1 << 2;
/// Stack ids (`SLOT_STACK_*`).
pub const USES_STACKS: u32 = 1 << 3;
/// String reads (`SlotConfig::strs`).
pub const USES_STRINGS: u32 = 1 << 4;
/// Struct member reads (`SlotConfig::fields`).
pub const USES_FIELDS: u32 = 1 << 5;
/// Thread, CPU, cgroup and comm filters.
pub const USES_FILTERS: u32 = 1 << 6;
/// The `-- COMMAND` process set (`SLOT_FILTER_TRACKED`).
pub const USES_TRACKED: u32 = 1 << 7;
/// Every part: the object's default, for commands that do not narrow it. It leaves out
/// [`USES_COMM_CACHE`], which is only right while its invalidating program is attached.
pub const USES_ALL: u32 = (1 << 8) - 1;
/// Take the current task's comm from a per-CPU cache (`COMM_CACHE`) instead of the
/// `bpf_get_current_comm` helper (which cost about 100 ns per event here). Set only by a
/// command that has attached the `comm_renamed` program to `task:task_rename`, which
/// invalidates every cache when any task changes its name (exec, prctl, /proc/PID/comm).
pub const USES_COMM_CACHE: u32 = 1 << 8;
/// Run counts (`SLOT_RUN_COUNT`, `RUN_COUNT`). Like the comm cache, only right while
/// `comm_renamed` runs: a run ends when the task generation moves (any rename, and any change
/// of the `-- COMMAND` process set), since the key's comm or the filters' verdict may have
/// changed.
pub const USES_RUN_COUNT: u32 = 1 << 9;
/// `--debug-bpf`: the programs say through aya-log (`AYA_LOGS`) why they dropped a hit (which
/// filter refused it, a full ring or count map). A normal run leaves it clear, so the verifier
/// checks none of the logging code and no hit pays for it.
pub const USES_DEBUG: u32 = 1 << 10;
/// Value filters (`--filter`, `SLOT_VALUE_FILTER`).
pub const USES_VALUE_FILTER: u32 = 1 << 11;
/// More than one string read per hit (`SlotConfig::strs[1..]`): without it the verifier
/// walks the first read only.
pub const USES_STR_MANY: u32 = 1 << 12;
/// `char **` string arrays (`StrRead::array`: argv, envp).
pub const USES_STR_ARRAYS: u32 = 1 << 13;
/// USDT argument reads (`SLOT_USDT`).
pub const USES_USDT: u32 = 1 << 14;
/// `tracer trace`: the paired `sys_enter`/`sys_exit` programs.
pub const USES_TRACE: u32 = 1 << 15;
/// Counted hits may be counted in runs of one key ([`SLOT_RUN_KEYED`]). Only for a command
/// whose keys repeat hit after hit (`tracer watch --summary`: a thread at one instruction): a
/// key that changes at every hit would pay for a run's start and end each time, and a run may
/// hold a key the full count map has no room for.
pub const USES_RUN_KEYED: u32 = 1 << 16;
/// `tracer trace`'s walk of the entries a getdents call returned ([`SLOT_TRACE_DIRENTS`]).
pub const USES_DIRENTS: u32 = 1 << 17;
/// `tracer trace -c`'s CPU time per call ([`SLOT_TRACE_CPU_TIME`]).
pub const USES_CPU_TIME: u32 = 1 << 18;
/// `tracer trace -y`'s inodes of the descriptors a call made ([`SLOT_TRACE_FD_INODES`]).
pub const USES_FD_INODES: u32 = 1 << 19;
/// Struct member reads that load pointers on the way (`a->b->c`, [`FieldRead::hops`]):
/// without it the verifier walks the plain reads only (a uprobe slot on 6.18: 2,879
/// instructions, 3,784 with the loads).
pub const USES_DEREFS: u32 = 1 << 20;
/// `tracer trace`'s iovec arrays (readv, writev: [`str_array::IOVEC_GIVEN`](crate::str_array)),
/// read at the exit by `trace_exit_reads`, a program of its own.
pub const USES_IOVECS: u32 = 1 << 21;
/// `tracer trace`'s strings read when a call enters (an exec's path: [`SLOT_TRACE_AT_ENTRY`]
/// with a string read): without it the entry program has no string reads for the verifier to
/// walk.
pub const USES_ENTRY_STRINGS: u32 = 1 << 22;
/// `tracer trace`'s calls that do not return (exit, exit_group: [`SLOT_TRACE_NO_RETURN`]),
/// sent by the entry program: without it that program sends nothing.
pub const USES_NO_RETURN: u32 = 1 << 23;
/// Reads of a given or fixed length ([`StrRead::len_from`]): `tracer trace`'s buffers and
/// structures, and the top of the user stack ([`str_from::STACK`]) that `-k` and `probe -s`
/// copy.
pub const USES_BUFFERS: u32 = 1 << 24;
/// `tracer latency`'s outliers read the start's string arguments (`LatOutlier::reads`'
/// `strs`) when the call ends: without it the latency ends have no string reads to walk.
pub const USES_OUTLIER_STRINGS: u32 = 1 << 25;
/// `tracer latency F1 F2 ...`: the latency probes read which function they are at from
/// their attach cookie (Linux 5.15), which keys each call and groups its histogram.
pub const USES_LAT_FUNCTIONS: u32 = 1 << 26;
/// `tracer latency`'s starts read struct members (`LatOutlier::reads`) for the outliers to
/// show, which carry them in place of argument words (`LatOutlier::words`).
pub const USES_LAT_MEMBERS: u32 = 1 << 27;
/// `tracer trace`'s select and pselect6 fd sets ([`str_array::FDSETS`](crate::str_array)),
/// which the entry reads: without it the entry program has no such reads to walk.
pub const USES_FDSETS: u32 = 1 << 28;
/// Every `USES_*` bit, in bit order.
pub const USES_FLAGS: [u32; 29] = [
    USES_STREAM,
    USES_AGGREGATE,
    USES_AGG_VALUE,
    USES_STACKS,
    USES_STRINGS,
    USES_FIELDS,
    USES_FILTERS,
    USES_TRACKED,
    USES_COMM_CACHE,
    USES_RUN_COUNT,
    USES_DEBUG,
    USES_VALUE_FILTER,
    USES_STR_MANY,
    USES_STR_ARRAYS,
    USES_USDT,
    USES_TRACE,
    USES_RUN_KEYED,
    USES_DIRENTS,
    USES_CPU_TIME,
    USES_FD_INODES,
    USES_DEREFS,
    USES_IOVECS,
    USES_ENTRY_STRINGS,
    USES_NO_RETURN,
    USES_BUFFERS,
    USES_OUTLIER_STRINGS,
    USES_LAT_FUNCTIONS,
    USES_LAT_MEMBERS,
    USES_FDSETS,
];
const _: () = assert!(distinct_bits(&USES_FLAGS), "two USES_* bits are the same");

/// Why a hit was dropped (`--debug-bpf`): the filter that refused it.
pub mod drop {
    /// Another process than `-p`'s (not reported: not a hit of the run).
    pub const PID: u32 = 1;
    /// Another thread than `--tid`'s.
    pub const TID: u32 = 2;
    /// A CPU outside `-C`.
    pub const CPU: u32 = 3;
    /// A task outside `--cgroup`.
    pub const CGROUP: u32 = 4;
    /// A task whose comm is not `--comm`.
    pub const COMM: u32 = 5;
    /// A process outside the `-- COMMAND` set (not reported: not a hit of the run).
    pub const UNTRACKED: u32 = 6;
    /// tracer itself (never reported: saying so would make more hits of its own).
    pub const SELF: u32 = 7;
    /// The event was lost: the output ring was full.
    pub const RING_FULL: u32 = 8;
    /// The count was lost: the count map was full.
    pub const MAP_FULL: u32 = 9;

    /// The slot, the reason and the CPU in one word (the BPF side logs numbers only).
    pub const fn pack(slot: u32, reason: u32, cpu: u32) -> u64 {
        (slot as u64) << 40 | (reason as u64 & 0xff) << 32 | cpu as u64
    }

    /// (slot, reason, cpu) of a [`pack`]ed word.
    pub const fn unpack(word: u64) -> (u32, u32, u32) {
        ((word >> 40) as u32, (word >> 32) as u32 & 0xff, word as u32)
    }

    /// What a reason means, as `--debug-bpf` prints it.
    pub fn describe(reason: u32) -> &'static str {
        match reason {
            PID => "not the traced process",
            TID => "not the --tid thread",
            CPU => "outside -C",
            CGROUP => "outside --cgroup",
            COMM => "comm is not --comm",
            UNTRACKED => "not in the -- COMMAND process tree",
            RING_FULL => "lost: the output ring was full",
            MAP_FULL => "not counted: the count map was full",
            _ => "unknown reason",
        }
    }
}

/// The run of counted hits on one CPU that is not in `COUNTS` yet (`SLOT_RUN_COUNT`): the
/// same slot, task and generation each time, so the same key. Userspace adds `count` to
/// `key`'s total when it reads the counts; `ended` and `ended_check` move each time a run is
/// added to `COUNTS` and another begins, so a reader can tell whether that happened while it
/// read.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCount {
    /// Moves (before the other fields change) each time a run ends and another begins.
    pub ended: u64,
    pub pid_tgid: u64,
    /// The task generation + 1 when the run began (0 matches nothing).
    pub stamp: u64,
    pub count: u64,
    pub key: AggKey,
    /// `ended` again, written last: a copy with the two different was taken mid-change.
    pub ended_check: u64,
}

impl SlotConfig {
    /// Whether hits of this config may be counted in runs (`SLOT_RUN_COUNT`): aggregated by
    /// parts that stay the same while one task runs on one CPU, and filtered by nothing that
    /// can change without a new task generation (a task's cgroup can).
    pub fn may_count_runs(&self) -> bool {
        self.flags & SLOT_AGGREGATE != 0
            && self.agg & !(AGG_COMM | AGG_PID | AGG_TID | AGG_CPU) == 0
            && self.flags & (SLOT_STACK_KERNEL | SLOT_STACK_USER) == 0
            && self.cgroup_id == 0
            && self.flags & SLOT_VALUE_FILTER == 0
    }

    /// Whether hits with one key in a row may be counted in a run ([`SLOT_RUN_KEYED`]): a
    /// counted slot whose key has no summed, histogrammed or string part.
    pub fn may_count_keyed_runs(&self) -> bool {
        self.flags & SLOT_AGGREGATE != 0 && self.agg & (AGG_SUM | AGG_HIST | AGG_KEY_STRING) == 0
    }

    /// Whether a breakpoint or software-event slot's keyed runs may be continued from the
    /// task and the trapping instruction alone ([`SLOT_RUN_AT_IP`]): keyed by the instruction
    /// pointer (data word [`word::WATCH_IP`]) and otherwise by the process, thread or CPU,
    /// which a run cannot change, with no stack and no filter that can change within a run.
    /// The comm can (a rename), and its generation moves only where the comm cache is
    /// loaded: a key or filter of comm is not continued this way.
    pub fn may_count_runs_at_ip(&self) -> bool {
        self.may_count_keyed_runs()
            && self.agg & AGG_KEY_VALUE != 0
            && self.key_src == SRC_WATCH_IP
            && self.agg & !(AGG_PID | AGG_TID | AGG_CPU | AGG_KEY_VALUE) == 0
            && self.flags
                & (SLOT_STACK_KERNEL | SLOT_STACK_USER | SLOT_STACK_AT_ENTRY | SLOT_FILTER_COMM)
                == 0
            && self.cgroup_id == 0
            && self.flags & SLOT_VALUE_FILTER == 0
    }

    /// The `USES_*` bits this config needs.
    pub fn uses(&self) -> u32 {
        let mut uses = 0;
        if self.flags & SLOT_AGGREGATE != 0 {
            uses |= USES_AGGREGATE;
            if self.agg & (AGG_KEY_VALUE | AGG_SUM | AGG_HIST) != 0 {
                uses |= USES_AGG_VALUE;
            }
        } else if self.flags & SLOT_COUNT_ONLY == 0 {
            uses |= USES_STREAM;
        }
        if self.flags & (SLOT_STACK_KERNEL | SLOT_STACK_USER) != 0 {
            uses |= USES_STACKS;
        }
        if self.strs.iter().any(|r| r.from != str_from::NONE) {
            uses |= USES_STRINGS;
        }
        if self.flags & SLOT_TRACE_DIRENTS != 0 {
            uses |= USES_DIRENTS;
        }
        if self.flags & SLOT_TRACE_CPU_TIME != 0 {
            uses |= USES_CPU_TIME;
        }
        if self.flags & SLOT_TRACE_FD_INODES != 0 {
            uses |= USES_FD_INODES;
        }
        if self
            .strs
            .iter()
            .any(|r| r.array >= crate::str_array::IOVEC_GIVEN)
        {
            uses |= USES_IOVECS;
        }
        if self.strs[0].array == crate::str_array::FDSETS {
            uses |= USES_FDSETS;
        }
        if self.strs[1..].iter().any(|r| r.from != str_from::NONE) {
            uses |= USES_STR_MANY;
        }
        if self.strs.iter().any(|r| r.array != 0) {
            uses |= USES_STR_ARRAYS;
        }
        if self.fields.iter().any(|f| f.size != 0) {
            uses |= USES_FIELDS;
        }
        if self.fields.iter().any(|f| f.size != 0 && f.hops != 0) {
            uses |= USES_DEREFS;
        }
        if self.tid != 0
            || self.cpu_mask != 0
            || self.cgroup_id != 0
            || self.flags & SLOT_FILTER_COMM != 0
        {
            uses |= USES_FILTERS;
        }
        if self.flags & SLOT_FILTER_TRACKED != 0 {
            uses |= USES_TRACKED;
        }
        if self.flags & SLOT_RUN_COUNT != 0 {
            uses |= USES_RUN_COUNT;
        }
        if self.flags & SLOT_RUN_KEYED != 0 {
            uses |= USES_RUN_KEYED;
        }
        if self.flags & SLOT_VALUE_FILTER != 0 {
            uses |= USES_VALUE_FILTER;
        }
        if self.flags & SLOT_USDT != 0 {
            uses |= USES_USDT;
        }
        if self.strs.iter().any(|r| r.len_from != 0) {
            uses |= USES_BUFFERS;
        }
        if self.flags & SLOT_TRACE_AT_ENTRY != 0 && self.strs[0].from != str_from::NONE {
            uses |= USES_ENTRY_STRINGS;
        }
        if self.flags & SLOT_TRACE_NO_RETURN != 0 {
            uses |= USES_NO_RETURN;
        }
        uses
    }
}
