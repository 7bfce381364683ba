//! `#[repr(C)]` types that tracer's BPF programs and its userspace agree on, byte for byte.
#![no_std]

/// Probe slots (kprobe, kretprobe, uprobe, uretprobe programs: `kp_0..`), global ids 0..16.
pub const PROBE_SLOTS: u32 = 16;
/// Tracepoint slots (`tp_0..`), global ids 16..32.
pub const TRACEPOINT_SLOTS: u32 = 16;
/// perf_event slots for breakpoints and software events (`pe_0..`), global ids 32..36.
pub const PERF_EVENT_SLOTS: u32 = 4;
/// First global id of each kind.
pub const PROBE_BASE: u32 = 0;
pub const TRACEPOINT_BASE: u32 = PROBE_SLOTS;
pub const PERF_EVENT_BASE: u32 = PROBE_SLOTS + TRACEPOINT_SLOTS;
/// Syscall tracepoint slots of a run with more tracepoints than [`TRACEPOINT_SLOTS`], global
/// ids from [`DISPATCH_BASE`]: two raw tracepoint programs on `sys_enter` and `sys_exit`
/// serve them all, finding the slot by the syscall's number in `SYS_SLOTS` (one attachment
/// for any number of syscalls, where a perf event each costs the kernel an RCU grace period
/// to take down). They build the record the `syscalls:` tracepoint would have (the number at
/// byte 8, the arguments or the return value from byte 16), so hits decode the same way. A
/// run of up to 16 tracepoints keeps the constant slots and pays nothing for the lookup.
pub const DISPATCH_SLOTS: u32 = 1024;
/// Syscall numbers `SYS_SLOTS` covers, per direction: entry `nr` at `nr`, exit at
/// `SYSCALL_NRS + nr`.
pub const SYSCALL_NRS: u32 = 1024;
/// `SYS_SLOTS` keys of `tracer trace`'s events that are not calls, past every real x86-64
/// syscall number (the table, x32's included, ends below 548): a task's exit
/// ([`trace_kind::EXIT`]) and a signal's delivery ([`trace_kind::SIGNAL`]).
pub const TRACE_EXIT_NR: u32 = SYSCALL_NRS - 2;
pub const TRACE_SIGNAL_NR: u32 = SYSCALL_NRS - 1;
pub const DISPATCH_BASE: u32 = PERF_EVENT_BASE + PERF_EVENT_SLOTS;
/// All slots. With `PERF_EVENT_IOC_SET_BPF` there is no attach cookie, so each probe uses its
/// own program instance ("slot") whose global id is a constant compiled into it (or, past the
/// constant ones, looked up: [`DISPATCH_SLOTS`]); the id indexes [`SlotConfig`] in `CONFIG`
/// and the per-slot counters in `STATS`, and tags every [`Event`].
pub const SLOTS: u32 = DISPATCH_BASE + DISPATCH_SLOTS;
/// `Event::slot` of outliers streamed by the latency programs (not a program slot).
pub const LATENCY_SLOT: u32 = 0xffff;

/// Words of raw event data carried per event (kprobe registers or the tracepoint record head).
pub const DATA_WORDS: usize = 8;

/// What each word of [`Event::data`] holds, by the kind of program that wrote it: both sides
/// index `data` through these names only.
pub mod word {
    /// kprobe/uprobe: argument `i` (0..[`ARGS`]) is `data[ARG0 + i]`.
    pub const ARG0: usize = 0;
    /// Arguments a kprobe/uprobe hit carries (the x86-64 and arm64 register arguments).
    pub const ARGS: usize = 6;
    /// kretprobe/uretprobe: the return value (0 for an entry probe).
    pub const RETURN: usize = 6;
    /// Watchpoint hit: the instruction pointer when the breakpoint trapped (after a data
    /// access; at an executed instruction).
    pub const WATCH_IP: usize = 0;
    /// Watchpoint hit: the address accessed.
    pub const WATCH_ADDR: usize = 1;
    /// Watchpoint hit: the watched word read after the access, when [`WATCH_VALUE_READ`] is 1.
    pub const WATCH_VALUE: usize = 2;
    /// Watchpoint hit: 1 when [`WATCH_VALUE`] holds a value (the read may fail; counted hits
    /// read none).
    pub const WATCH_VALUE_READ: usize = 3;
    /// Latency outlier: the call's duration, ns.
    pub const LAT_DURATION: usize = 0;
    /// Latency outlier: the start's argument `i` (0..[`ARGS`]) is `data[LAT_ARG0 + i]`.
    pub const LAT_ARG0: usize = 1;
    /// Latency outlier: the end's return value.
    pub const LAT_RETURN: usize = 7;
    /// Uprobe at a function's first instruction with user stacks ([`SLOT_STACK_AT_ENTRY`]; a
    /// latency outlier whose end is one, in place of [`LAT_RETURN`]): the return address at the
    /// stack pointer, the direct caller; 0 otherwise.
    ///
    /// [`SLOT_STACK_AT_ENTRY`]: super::SLOT_STACK_AT_ENTRY
    pub const ENTRY_RET: usize = 7;
}

/// The BPF object's maps and globals, by the names userspace looks them up with: each is the
/// name of a `static` in tracer-ebpf (`tracer/src/bpf/mod.rs` checks every one against the built
/// object).
pub mod names {
    pub const EVENTS: &str = "EVENTS";
    pub const RINGBUF: &str = "RINGBUF";
    pub const RINGBUF_WAKEUP: &str = "RINGBUF_WAKEUP";
    pub const USES: &str = "USES";
    pub const CONFIG: &str = "CONFIG";
    pub const STATS: &str = "STATS";
    pub const TRACKED: &str = "TRACKED";
    pub const RUN_COUNT: &str = "RUN_COUNT";
    pub const STACKS: &str = "STACKS";
    pub const COUNTS: &str = "COUNTS";
    pub const SCHED_OFFSETS: &str = "SCHED_OFFSETS";
    pub const LAT_CONFIG: &str = "LAT_CONFIG";
    pub const LAT_START: &str = "LAT_START";
    pub const LAT_HIST: &str = "LAT_HIST";
    pub const LAT_ARRAY: &str = "LAT_ARRAY";
    pub const LAT_STATS: &str = "LAT_STATS";
    /// aya-log's ring (`--debug-bpf`), defined by aya-log-ebpf.
    pub const AYA_LOGS: &str = "AYA_LOGS";
    pub const FILTERS: &str = "FILTERS";
    pub const GLOBS: &str = "GLOBS";
    pub const SYS_SLOTS: &str = "SYS_SLOTS";
    pub const STR_COUNTS: &str = "STR_COUNTS";
    pub const FILTER_SHAPE: &str = "FILTER_SHAPE";
    pub const USDT_ARGS: &str = "USDT_ARGS";
    pub const OFFCPU_CONFIG: &str = "OFFCPU_CONFIG";
    pub const OFFCPU_START: &str = "OFFCPU_START";
    pub const TRACE_START: &str = "TRACE_START";
    pub const TRACE_SAVED: &str = "TRACE_SAVED";
    pub const TRACE_STATS: &str = "TRACE_STATS";
    pub const TRACE_FATAL: &str = "TRACE_FATAL";
    /// Every name above.
    pub const ALL: [&str; 29] = [
        EVENTS,
        RINGBUF,
        RINGBUF_WAKEUP,
        USES,
        CONFIG,
        STATS,
        TRACKED,
        RUN_COUNT,
        STACKS,
        COUNTS,
        SCHED_OFFSETS,
        LAT_CONFIG,
        LAT_START,
        LAT_HIST,
        LAT_ARRAY,
        LAT_STATS,
        AYA_LOGS,
        FILTERS,
        GLOBS,
        SYS_SLOTS,
        FILTER_SHAPE,
        STR_COUNTS,
        USDT_ARGS,
        OFFCPU_CONFIG,
        OFFCPU_START,
        TRACE_START,
        TRACE_SAVED,
        TRACE_STATS,
        TRACE_FATAL,
    ];
}

/// Strings one hit reads at most: the `char *` values it prints or filters on (a `char **`
/// array, argv or envp, is one of them).
pub const STR_READS: usize = 4;
/// Bytes of a string read when `--strlen` does not say.
pub const STRLEN_DEFAULT: u32 = 256;
/// The longest `--strlen`.
pub const STRLEN_MAX: u32 = 4096;
/// Elements of a `char **` array (argv, envp) read at most: execsnoop's default.
pub const ARRAY_ELEMENTS: u32 = 20;
/// Bytes of one hit's strings, sent behind its [`Event`]: a string that does not fit is
/// marked [`str_flag::NO_ROOM`], not sent.
pub const STR_AREA: usize = 8192;
/// Bytes of a string entry's header: which read (`u8`), [`str_flag`] bits (`u8`), length
/// (`u16`, without a NUL), then the bytes.
pub const STR_ENTRY: usize = 4;
/// The BPF programs' string buffer: the area, and room to read one more whole string at its
/// last offset. A power of two at least `STR_AREA + STR_ENTRY + STRLEN_MAX + 2`, so that an
/// offset masked into the area is all the verifier needs to see every write in bounds.
pub const STR_BUFFER: usize = 16384;
const _: () = assert!(STR_BUFFER >= STR_AREA + STR_ENTRY + STRLEN_MAX as usize + 2);
/// Bytes of a string a `--filter` glob looks at: the verifier walks the matching loop once
/// per byte it may take.
pub const GLOB_STRLEN: usize = 256;

/// Where a [`StrRead`] finds its pointer.
pub mod str_from {
    /// Unused read.
    pub const NONE: u8 = 0;
    /// Argument register `at` (kprobe/uprobe).
    pub const ARG: u8 = 1;
    /// The pointer at byte `at` of the tracepoint record (syscalls' `filename`, `argv`).
    pub const RECORD: u8 = 2;
    /// Struct member read `at` (`Event::fields`, `FUNC(file->name)`).
    pub const FIELD: u8 = 3;
    /// The return value (kretprobe/uretprobe of a `char *` function).
    pub const RETURN: u8 = 4;
}

/// Which memory a [`StrRead`]'s pointer points into.
pub mod str_mem {
    pub const USER: u8 = 0;
    pub const KERNEL: u8 = 1;
    /// Told apart by the address (kernel functions whose BTF cannot say).
    pub const AUTO: u8 = 2;
}

/// Bits of a string entry (`Event` string area).
pub mod str_flag {
    /// The string was longer than `--strlen`: the entry holds its first bytes.
    pub const TRUNCATED: u8 = 1;
    /// The pointer could not be read (NULL, bad, or paged out): no bytes.
    pub const FAULT: u8 = 2;
    /// An array's last entry: it had more elements than [`ARRAY_ELEMENTS`](super::ARRAY_ELEMENTS).
    pub const MORE: u8 = 4;
    /// The hit's string area was full: this string (and any after it) was not read.
    pub const NO_ROOM: u8 = 8;
    /// An array read's first entry: the elements follow, each its own entry (none: empty).
    pub const ARRAY: u8 = 16;
}

/// One string a slot reads per hit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrRead {
    /// Argument index, record byte offset or field index, as `from` says.
    pub at: u32,
    /// A [`str_from`].
    pub from: u8,
    /// A [`str_mem`].
    pub memory: u8,
    /// 1: the pointer is a `char **` array of strings, ended by NULL (argv, envp).
    pub array: u8,
    /// 0: a NUL-terminated string. Otherwise a buffer of bytes (`tracer trace`: what
    /// write(2) was given, what read(2) filled), as long as [`buffer_len`] says, cut at
    /// `SlotConfig::buflen`.
    pub len_from: u8,
}

/// Where a buffer read ([`StrRead::len_from`]) finds its length.
pub mod buffer_len {
    /// Argument `i` holds the length: `ARG0 + i` (write's `count`).
    pub const ARG0: u8 = 1;
    /// The return value, when positive (read's byte count).
    pub const RETURN: u8 = 7;
    /// `FIXED + n`: a structure of `4 * n` bytes, read whole, not cut at `-s` (an fd pair,
    /// a `struct stat`'s head, a timespec): [`fixed`].
    pub const FIXED: u8 = 16;

    /// The [`StrRead::len_from`](super::StrRead::len_from) of a `bytes`-long structure (at
    /// most 956 bytes).
    pub const fn fixed(bytes: usize) -> u8 {
        FIXED + bytes.div_ceil(4) as u8
    }
}

/// `STATS` has three per-CPU counters per slot: hits that passed the task filters at
/// `3 * slot`, `bpf_perf_event_output` failures (ring full) at `3 * slot + 1`, and hits the
/// value filter (`--filter`) refused at `3 * slot + 2`.
pub const STAT_COUNT: u32 = 3 * SLOTS;

/// `STATS` index of a slot's hit counter.
pub const fn stat_hits(slot: u32) -> u32 {
    3 * slot
}

/// `STATS` index of a slot's failed-output counter.
pub const fn stat_failed(slot: u32) -> u32 {
    3 * slot + 1
}

/// `STATS` index of a slot's counter of hits the value filter refused.
pub const fn stat_filtered(slot: u32) -> u32 {
    3 * slot + 2
}

/// Capacity of the `TRACKED` map (processes followed for `-- COMMAND`).
pub const TRACKED_MAX: u32 = 16384;
/// `TRACKED` value: the launched command before its exec (its events are not ours yet).
pub const TRACK_PENDING: u32 = 0;
/// `TRACKED` value: a traced process.
pub const TRACK_ACTIVE: u32 = 1;

/// Whether each of `flags` is one bit and no two are the same: the compile-time check of the
/// flag words (`SLOT_*`, `AGG_*`, `USES_*`), each of which lists its flags in bit order.
pub const fn distinct_bits(flags: &[u32]) -> bool {
    let mut seen = 0u32;
    let mut i = 0;
    while i < flags.len() {
        if flags[i].count_ones() != 1 || seen & flags[i] != 0 {
            return false;
        }
        seen |= flags[i];
        i += 1;
    }
    true
}

// `SlotConfig::flags`, in bit order: what a slot's program reads, filters and does with a
// hit. Bits 1, 2, 3, 11 and 12 are free; `SLOT_FLAGS` lists them all, and the build fails if
// two share a bit.

/// `SlotConfig::flags`: the program reads the return value (kretprobe / uretprobe).
pub const SLOT_RETURN: u32 = 1 << 0;

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

/// Every `SLOT_*` flag, in bit order.
pub const SLOT_FLAGS: [u32; 21] = [
    SLOT_RETURN,
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
];
const _: () = assert!(distinct_bits(&SLOT_FLAGS), "two SLOT_* flags share a bit");

/// Lowest kernel address on x86-64: pointers below are user memory.
pub const KERNEL_SPACE_START: u64 = 0xffff_8000_0000_0000;

/// [`UsdtArg::kind`]: no such argument (its word is 0).
pub const USDT_NONE: u8 = 0;
/// [`UsdtArg::kind`]: a constant, [`UsdtArg::value`] (`-4@$5`).
pub const USDT_CONST: u8 = 1;
/// [`UsdtArg::kind`]: the register at pt_regs offset [`UsdtArg::reg`] (`-4@%eax`).
pub const USDT_REG: u8 = 2;
/// [`UsdtArg::kind`]: [`UsdtArg::size`] bytes of user memory at that register plus
/// [`UsdtArg::value`] (`8@-16(%rbp)`; a `sym(%rip)` operand is the instruction pointer plus
/// the symbol's distance from the probe).
pub const USDT_MEM: u8 = 3;

/// Where one USDT argument is (the note's `SIZE@OPERAND`, decoded by userspace).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsdtArg {
    /// The constant ([`USDT_CONST`]) or the displacement ([`USDT_MEM`]).
    pub value: i64,
    /// Byte offset of the register in `struct pt_regs` ([`USDT_REG`], [`USDT_MEM`]).
    pub reg: u16,
    /// A `USDT_*` kind.
    pub kind: u8,
    /// Bytes read from memory: 1, 2, 4 or 8.
    pub size: u8,
    pub _pad: u32,
}

/// The arguments of one USDT probe slot: `Event::data[i]` is argument `i`, its upper bits as
/// the register held them (userspace types each by its size and sign).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsdtArgs {
    pub args: [UsdtArg; word::ARGS],
}

/// Comparisons in one [`Filter`]: `--filter`'s expression is these, combined by a truth table
/// of one word (2^6 combinations). More would take a table lookup at an index the verifier
/// must then track exactly, which stops it pruning the paths through the comparisons.
pub const FILTER_ATOMS: usize = 6;

/// What a [`FilterAtom`] compares.
pub mod operand {
    /// Unused atom (false).
    pub const NONE: u8 = 0;
    /// A number at [`FilterAtom::src`](super::FilterAtom) (a [`src`](super::src) in the
    /// captured words).
    pub const VALUE: u8 = 1;
    pub const PID: u8 = 2;
    pub const TID: u8 = 3;
    pub const CPU: u8 = 4;
    /// A string the slot read (its first entry of read [`FilterAtom::src`](super::FilterAtom)
    /// in the event's string area), matched by a glob automaton.
    pub const STRING: u8 = 5;
    /// The task's comm, matched by a glob automaton.
    pub const COMM: u8 = 6;
    /// A `char[N]` of the record head at [`FilterAtom::src`](super::FilterAtom)'s offset, up
    /// to its size or a NUL, matched by a glob automaton.
    pub const RECORD_CHARS: u8 = 7;
}

/// How a [`FilterAtom`] compares (numbers; strings only match their automaton).
pub mod cmp {
    pub const EQ: u8 = 0;
    pub const NE: u8 = 1;
    pub const LT: u8 = 2;
    pub const LE: u8 = 3;
    pub const GT: u8 = 4;
    pub const GE: u8 = 5;
    /// Any bit in common: `(value & constant) != 0`.
    pub const AND: u8 = 6;
}

/// One comparison of a [`Filter`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterAtom {
    /// The constant compared with (numbers).
    pub value: u64,
    /// [`src`] of the number ([`operand::VALUE`]).
    pub src: u32,
    /// Strings: the automaton's first row in `GLOBS`.
    pub glob: u32,
    /// An [`operand`].
    pub operand: u8,
    /// A [`cmp`].
    pub cmp: u8,
    /// Numbers: compared as signed. Strings: the empty string matches.
    pub signed_or_empty: u8,
    pub _pad: [u8; 5],
}

/// `--filter` for one slot: each atom gives a bit, and bit `i` of the table (i = the atoms'
/// bits, atom k at bit k) says whether that combination passes. Any expression of `&&`, `||`,
/// `!` and parentheses over the atoms is one table, so the program evaluates a fixed number
/// of comparisons and one lookup, with no stack machine for the verifier to walk.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub table: u64,
    pub atoms: [FilterAtom; FILTER_ATOMS],
}

/// Bytes of a glob automaton's row (one next state per byte value).
pub const GLOB_ROW: usize = 256;
/// A row entry's bit: the state it leads to accepts (the string read so far matches).
pub const GLOB_ACCEPT: u8 = 0x80;
/// A row entry leading nowhere: no continuation can match.
pub const GLOB_DEAD: u8 = 0x7f;
/// States of one automaton (the rest of the byte is [`GLOB_ACCEPT`]; [`GLOB_DEAD`] is none).
pub const GLOB_STATES: usize = 127;

/// Tracepoint slots with a raw twin (`rtp_N`) for counting syscalls.
pub const RAW_SYSCALL_SLOTS: u32 = 4;

/// x86-64 `struct pt_regs` offsets the raw syscall slots read: `orig_ax` and `cs`.
pub const PT_REGS_ORIG_AX: u64 = 120;
pub const PT_REGS_CS: u64 = 136;
/// x86-64 `struct pt_regs` offset of the user stack pointer: after a successful exec, the new
/// image's `argc`, then its `argv` pointers.
pub const PT_REGS_SP: u64 = 152;
/// The auxiliary vector's `AT_EXECFN`: the path the exec was given, on the new stack.
pub const AT_EXECFN: u64 = 31;
/// x86-64 `struct pt_regs` offsets of a syscall's six arguments: di, si, dx, r10, r8, r9.
pub const PT_REGS_SYSCALL_ARGS: [u64; 6] = [112, 104, 96, 56, 72, 64];
/// `cs` of 32-bit user code (`__USER32_CS`): its syscalls have other numbers and are not
/// traced by the `syscalls` tracepoints, so the raw slots skip them too.
pub const USER32_CS: u64 = 0x23;

/// Struct member reads per probe slot (`FUNC(how->flags)`), each into one `Event::fields` word.
pub const FIELD_READS: usize = 4;
/// [`FieldRead::flags`]: the struct is in user memory (uprobes).
pub const FIELD_USER: u8 = 1 << 0;
/// [`FieldRead::flags`]: user or kernel memory, told apart by the pointer's address (kprobes:
/// gcc-built kernels' BTF has no `__user` tags).
pub const FIELD_AUTO: u8 = 1 << 1;

/// One struct member read: `size` bytes at `offset` past the pointer in argument register
/// `arg`. A `size` of 0 marks an unused entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldRead {
    pub offset: u32,
    /// Argument register index, 0..5.
    pub arg: u8,
    /// 1, 2, 4 or 8.
    pub size: u8,
    /// `FIELD_*` bits; neither bit: kernel memory.
    pub flags: u8,
    pub _pad: u8,
}

/// `SlotConfig::agg` bits: which parts of an [`AggKey`] are filled (the rest stay zero).
pub const AGG_COMM: u32 = 1 << 0;
pub const AGG_PID: u32 = 1 << 1;
pub const AGG_TID: u32 = 1 << 2;
pub const AGG_CPU: u32 = 1 << 3;
/// `AggKey::value` holds the value at `SlotConfig::key_src`.
pub const AGG_KEY_VALUE: u32 = 1 << 4;
/// `AggValue::sum` adds up the value at `SlotConfig::val_src` (`--sum`, `--hist`).
pub const AGG_SUM: u32 = 1 << 5;
/// `AggKey::bucket` is the bucket of the value at `val_src` (`--hist`): log2 (see
/// [`log2_bucket`]), or linear when `SlotConfig::hist_step` is set (see [`linear_bucket`]).
pub const AGG_HIST: u32 = 1 << 6;
/// Keyed by a string's content (`--count-by filename`): `key_src` is the index of the string
/// read, and the hit is counted in `STR_COUNTS` under a [`StrAggKey`].
pub const AGG_KEY_STRING: u32 = 1 << 7;
/// `AggKey::cgroup` is the task's cgroup v2 id (`--count-by cgroup|container|pod`).
pub const AGG_CGROUP: u32 = 1 << 8;
/// Every `AGG_*` key bit, in bit order.
pub const AGG_FLAGS: [u32; 9] = [
    AGG_COMM,
    AGG_PID,
    AGG_TID,
    AGG_CPU,
    AGG_KEY_VALUE,
    AGG_SUM,
    AGG_HIST,
    AGG_KEY_STRING,
    AGG_CGROUP,
];
const _: () = assert!(distinct_bits(&AGG_FLAGS), "two AGG_* bits are the same");
/// Bytes of a string that key a count: longer strings count under their first bytes, marked.
pub const KEY_STRLEN: usize = 128;
/// Capacity of `STR_COUNTS` when a run counts by a named value (which may be a string).
pub const STR_COUNT_ENTRIES: u32 = 4096;
/// `AggKey::bucket` of values below the histogram's range: negative values of a signed source
/// (log2), values under `SlotConfig::hist_min` (linear).
pub const AGG_BUCKET_BELOW: u64 = u64::MAX - 1;
/// `AggKey::bucket` of negative values of a signed log2 `--hist`: the row below its range.
pub const AGG_BUCKET_NEGATIVE: u64 = AGG_BUCKET_BELOW;
/// `AggKey::bucket` of values at or past the end of a linear histogram's range.
pub const AGG_BUCKET_ABOVE: u64 = u64::MAX;
/// Log2 buckets of a `--hist`: 0 holds the value 0, `k` (1..=64) the values `2^(k-1)` to
/// `2^k - 1` (so 0 and 1 are told apart).
pub const AGG_LOG2_BUCKETS: u64 = 65;
/// Most buckets of a linear `--hist` (`--linear STEP,MIN,MAX`), beside the two edge rows.
pub const AGG_LINEAR_BUCKETS: u64 = 1000;

/// The log2 `--hist` bucket of `value` (see [`AGG_LOG2_BUCKETS`]).
#[inline(always)]
pub const fn log2_bucket(value: u64) -> u64 {
    64 - value.leading_zeros() as u64
}

/// The linear `--hist` bucket of `value`: `(value - min) / step` inside `[min, min + step *
/// buckets)`, else [`AGG_BUCKET_BELOW`] or [`AGG_BUCKET_ABOVE`]; `min` and `value` compare as
/// signed numbers when the source is signed.
#[inline(always)]
pub const fn linear_bucket(value: u64, signed: bool, min: u64, step: u64, buckets: u64) -> u64 {
    let below = if signed {
        (value as i64) < (min as i64)
    } else {
        value < min
    };
    if below {
        return AGG_BUCKET_BELOW;
    }
    // value >= min: the difference is the distance, also for signed values.
    let b = match value.wrapping_sub(min).checked_div(step) {
        Some(b) => b,
        None => 0,
    };
    if b >= buckets {
        AGG_BUCKET_ABOVE
    } else {
        b
    }
}
/// Capacity of `COUNTS` when aggregating (distinct keys of one run or interval).
pub const AGG_ENTRIES: u32 = 10240;

/// Where a value comes from: a byte range of [`Event::data`] (registers arg0..arg5 at
/// 0..48 and the return value at 48 for probes; the record head for tracepoints) or, from
/// byte 64 on ([`FIELDS_OFFSET`]), of [`Event::fields`] (struct members read by the probe):
/// `offset | size << 8 | SRC_SIGNED`.
pub const fn src(offset: u32, size: u32, signed: bool) -> u32 {
    offset | size << 8 | if signed { SRC_SIGNED } else { 0 }
}
/// The [`src`] of a breakpoint or software-event hit's instruction pointer (data word
/// [`word::WATCH_IP`]): `tracer watch --summary`'s key value.
pub const SRC_WATCH_IP: u32 = src(8 * word::WATCH_IP as u32, 8, false);
/// First [`src`] offset of `Event::fields`: `data` and `fields` are adjacent in [`Event`].
pub const FIELDS_OFFSET: u32 = 8 * DATA_WORDS as u32;
/// A source whose value is sign-extended from its size.
pub const SRC_SIGNED: u32 = 1 << 16;

/// One cell of the `COUNTS` map: the parts `SlotConfig::agg` asks for, zero elsewhere.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AggKey {
    pub slot: u32,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: [u8; 16],
    /// The keyed argument, return value or field (sign-extended when signed).
    pub value: u64,
    /// Stack ids (as in [`Event`]); [`NO_STACK`] when not keyed by stack.
    pub kstack: i32,
    pub ustack: i32,
    /// `--hist`: the value's bucket ([`log2_bucket`], [`linear_bucket`]), or
    /// [`AGG_BUCKET_BELOW`] / [`AGG_BUCKET_ABOVE`].
    pub bucket: u64,
    /// With [`SLOT_STACK_AT_ENTRY`]: the user stack's missing direct caller
    /// ([`word::ENTRY_RET`]); 0 otherwise.
    pub entry_ret: u64,
    /// With [`AGG_CGROUP`]: the task's cgroup v2 id (`bpf_get_current_cgroup_id`).
    pub cgroup: u64,
}

/// A `STR_COUNTS` key: the parts of an [`AggKey`], and the string's first [`KEY_STRLEN`] bytes
/// (zero-padded); `key.value` holds the string entry's [`str_flag`] bits, with
/// [`str_flag::TRUNCATED`] also for a string longer than the key keeps.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrAggKey {
    pub key: AggKey,
    pub text: [u8; KEY_STRLEN],
}

impl Default for StrAggKey {
    fn default() -> StrAggKey {
        StrAggKey {
            key: AggKey::default(),
            text: [0; KEY_STRLEN],
        }
    }
}

/// Per-CPU counters of one [`AggKey`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggValue {
    pub count: u64,
    /// Sum of the `val_src` values (wrapping: signed values add up as two's complement).
    pub sum: u64,
}

/// `Event::kstack` / `Event::ustack` when that stack was not asked for. Other negative values
/// are the errno of a failed `bpf_get_stackid` (e.g. -EEXIST: the stack map bucket was taken).
pub const NO_STACK: i32 = i32::MIN;
/// Capacity of the `STACKS` map when stacks are captured (distinct stacks of one run). Without
/// `-s` the map is created with one entry, so start-up does not pay for it.
pub const STACK_ENTRIES: u32 = 16384;

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
/// `tracer trace`: the paired `sys_enter`/`sys_exit` programs and buffer reads
/// ([`StrRead::len_from`]).
pub const USES_TRACE: u32 = 1 << 15;
/// Counted hits may be counted in runs of one key ([`SLOT_RUN_KEYED`]). Only for a command
/// whose keys repeat hit after hit (`tracer watch --summary`: a thread at one instruction): a
/// key that changes at every hit would pay for a run's start and end each time, and a run may
/// hold a key the full count map has no room for.
pub const USES_RUN_KEYED: u32 = 1 << 16;
/// Every `USES_*` bit, in bit order.
pub const USES_FLAGS: [u32; 17] = [
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
];
const _: () = assert!(distinct_bits(&USES_FLAGS), "two USES_* bits are the same");

/// What the words of a `tracer trace` [`Event`] hold: one completed system call, sent when it
/// returns. `data[0..6]` are its arguments, [`word::RETURN`] its return value.
pub mod trace_word {
    /// `data`: nanoseconds from entry to exit.
    pub const DURATION: usize = 7;
    /// `fields`: a [`trace_kind`](super::trace_kind).
    pub const KIND: usize = 0;
    /// `fields`: 1 when the call failed (returned -4095..-1), for `-c`'s error column.
    pub const FAILED: usize = 1;
}

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
    pub args: [u64; word::ARGS],
    pub nr: u32,
    /// [`TRACE_SAVED_STRINGS`]: its strings are in `TRACE_SAVED`.
    pub flags: u32,
    /// With [`TRACE_SAVED_STRINGS`]: the string area's length and each read's first entry.
    pub used: u32,
    pub first: [u32; STR_READS],
    pub _pad: u32,
}

/// [`TraceStart::flags`]: the strings were read at entry and saved.
pub const TRACE_SAVED_STRINGS: u32 = 1;
/// Calls in flight `TRACE_START` holds: threads inside a traced syscall at once.
pub const TRACE_ENTRIES: u32 = 16384;
/// Strings saved at entry (execve) at once.
pub const TRACE_SAVED_ENTRIES: u32 = 64;
/// `TRACE_STATS` counters (per CPU).
pub mod trace_stat {
    /// A traced task's call ended with no entry seen (it began before tracing did).
    pub const NO_ENTRY: u32 = 0;
    /// A call's entry found `TRACE_START` full: its end is not paired (also a `NO_ENTRY`).
    pub const START_FULL: u32 = 1;
    /// An execve's strings found `TRACE_SAVED` full: they are read at its end instead.
    pub const SAVED_FULL: u32 = 2;
    pub const COUNT: u32 = 3;
}

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
        if self.strs[1..].iter().any(|r| r.from != str_from::NONE) {
            uses |= USES_STR_MANY;
        }
        if self.strs.iter().any(|r| r.array != 0) {
            uses |= USES_STR_ARRAYS;
        }
        if self.fields.iter().any(|f| f.size != 0) {
            uses |= USES_FIELDS;
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
            uses |= USES_TRACE;
        }
        uses
    }
}

/// Byte offsets the fork tracking reads, which differ between kernel versions; found by
/// userspace and stored in the `SCHED_OFFSETS` array map.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedOffsets {
    /// `sched:sched_process_fork`'s record (tracefs): offset of `child_pid`.
    pub fork_child_pid: u32,
    /// `struct task_struct` (BTF): offset of `pid`, for the raw tracepoint's `child` argument.
    pub task_pid: u32,
    /// `struct task_struct` (BTF): offset of `exit_code`, for `tracer trace`'s exit lines; 0
    /// without BTF (no exit events then).
    pub task_exit_code: u32,
    /// `struct task_struct` (BTF): offsets of `tgid` and of `signal` (the `signal_struct`
    /// pointer), and `struct signal_struct`'s of `group_exit_code`: `tracer trace` finds the
    /// signal that ends a process; 0 without BTF.
    pub task_tgid: u32,
    pub task_signal: u32,
    pub signal_group_exit_code: u32,
    /// `struct signal_struct` (BTF): offset of `live`, the threads of the group not yet
    /// exiting (do_exit counts the exiting one out before its exit tracepoint): a process is
    /// gone when its last thread exits, not its leader (`pthread_exit` in `main`, an exec by
    /// another thread). 0 without BTF: the leader's exit ends the process then.
    pub signal_live: u32,
}

/// Histogram buckets (log2 of nanoseconds, or linear steps), then three extra "buckets": the
/// sum of all durations, the maximum and the minimum.
pub const HIST_BUCKETS: u64 = 64;
/// Linear latency buckets: the last one ([`HIST_BUCKETS`] - 1) is the overflow row, every
/// duration from `(HIST_BUCKETS - 1) * step` on.
pub const HIST_OVERFLOW: u64 = HIST_BUCKETS - 1;
/// `HistKey::bucket` of the per-key sum of durations (ns).
pub const HIST_SUM: u64 = 64;
/// `HistKey::bucket` of the per-key maximum duration (ns).
pub const HIST_MAX: u64 = 65;
/// `HistKey::bucket` of the per-key minimum duration, stored as `!min` (`u64::MAX - min`) so
/// that it is kept by maximum like [`HIST_MAX`], and 0 (no call) is never the minimum.
pub const HIST_MIN: u64 = 66;

/// Whether a latency cell is kept by maximum (summed over CPUs otherwise, and across reads).
pub const fn hist_kept_by_max(bucket: u64) -> bool {
    bucket == HIST_MAX || bucket == HIST_MIN
}
/// Capacity of the latency maps.
pub const LAT_ENTRIES: u32 = 16384;

/// `LatConfig::by`: one histogram in all.
pub const LAT_BY_NONE: u32 = 0;
pub const LAT_BY_COMM: u32 = 1;
pub const LAT_BY_PID: u32 = 2;
pub const LAT_BY_TID: u32 = 3;
pub const LAT_BY_CPU: u32 = 4;

/// `LAT_STATS` counters.
pub const LAT_STAT_ENTRIES: u32 = 0;
pub const LAT_STAT_EXITS: u32 = 1;
/// Exits with no matching entry (tracing started mid-call, or the entry was evicted).
pub const LAT_STAT_NO_ENTRY: u32 = 2;
/// Outliers that could not be written to a ring.
pub const LAT_STAT_OUTLIER_LOST: u32 = 3;
/// Starts that replaced a start of the same key whose end never came (a missed return:
/// kretprobe maxactive overflow, recursion, a thread that left the call another way).
pub const LAT_STAT_REPLACED: u32 = 4;
/// Calls `--filter` refused (not measured).
pub const LAT_STAT_FILTERED: u32 = 5;
pub const LAT_STAT_COUNT: u32 = 6;
/// The `FILTERS` entry of `tracer latency --filter` (a latency run takes no probe slot).
pub const LAT_FILTER_SLOT: u32 = 0;

/// Parts of a latency key (`--key dev,sector`).
pub const LAT_KEY_PARTS: usize = 3;

/// Where a latency key part is read, as [`src`] without the sign bit: a byte range of the
/// tracepoint record, or of a probe's argument registers (`argN` at `8 * N`, size 8).
/// A size of 0 marks an unused part; all unused: start and end are matched by thread.
pub type LatKeySrc = u32;

/// A latency key part that is the current thread id, read with a helper, not from the record:
/// `common_pid`. Syscall tracepoints hand BPF programs their registers pointer where the
/// record's `common_*` fields would be (perf_call_bpf_enter/exit), so `common_pid` read from
/// the record is the upper half of a kernel pointer, the same for every task.
pub const LAT_KEY_TID: LatKeySrc = 0xff << 8;

/// What the latency programs do (`LAT_CONFIG[0]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatConfig {
    /// Which hits count (the same filters as probes).
    pub filter: SlotConfig,
    /// `LAT_BY_*`.
    pub by: u32,
    /// `SLOT_STACK_*` bits: stacks captured (at the end) for outliers; `SLOT_STACK_AT_ENTRY`
    /// when the end is a uprobe at a function's first instruction.
    pub stack_flags: u32,
    /// The key parts read at the start and at the end, in the same order.
    pub entry_key: [LatKeySrc; LAT_KEY_PARTS],
    pub exit_key: [LatKeySrc; LAT_KEY_PARTS],
    /// `LAT_USDT_*` bits: which end is a USDT probe, whose argument words are read as
    /// `USDT_ARGS` entry [`LAT_USDT_START`] or [`LAT_USDT_END`] says.
    pub usdt: u32,
    pub _pad: u32,
    /// Linear buckets of this many ns (0: log2 buckets).
    pub linear_step: u64,
    /// Calls at least this long (ns) are streamed as outliers (0: none).
    pub slower_than: u64,
}

/// `LatConfig::usdt` bit, and `USDT_ARGS` index, of a USDT start.
pub const LAT_USDT_START: u32 = 1;
/// `LatConfig::usdt` bit, and `USDT_ARGS` index, of a USDT end.
pub const LAT_USDT_END: u32 = 2;

/// The key of a call in flight: the thread (`pid_tgid` in the first part), or the values of
/// the `--key` parts, zero-extended.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LatKey {
    pub parts: [u64; LAT_KEY_PARTS],
}

/// A start time in `LAT_START`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatStart {
    pub time_ns: u64,
    /// kprobe/uprobe entries: the argument registers, for outlier reports.
    pub args: [u64; 6],
}

/// A histogram cell: which group (`--by`) and which bucket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HistKey {
    /// The group: the comm, or a number (pid, tid, cpu) in the first 8 bytes; zeros for none.
    pub group: [u8; 16],
    pub bucket: u64,
}

/// One probe hit as a BPF program writes it into the `PERF_COUNT_SW_BPF_OUTPUT` ring.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// `bpf_ktime_get_ns()`: CLOCK_MONOTONIC nanoseconds.
    pub time_ns: u64,
    /// `bpf_get_current_pid_tgid()`: thread group id in the upper 32 bits, thread id below.
    pub pid_tgid: u64,
    /// kprobe/uprobe: arg0..arg5 then the return value; tracepoint: the record's first bytes.
    pub data: [u64; DATA_WORDS],
    /// Struct members read by a probe slot, as `SlotConfig::fields` lists them (zero-extended).
    pub fields: [u64; FIELD_READS],
    /// The global id of the program slot that fired.
    pub slot: u32,
    /// CPU the hit ran on.
    pub cpu: u32,
    /// Bytes of string entries sent behind the event (0: none); see [`STR_ENTRY`].
    pub str_bytes: i32,
    /// Kernel stack id in the `STACKS` map, [`NO_STACK`], or a negative errno.
    pub kstack: i32,
    /// User stack id in the `STACKS` map, [`NO_STACK`], or a negative errno.
    pub ustack: i32,
    /// Bit k set: the read of `fields[k]` failed (a bad or paged-out pointer).
    pub field_faults: u32,
    /// `bpf_get_current_comm()`.
    pub comm: [u8; 16],
}

const _: () = assert!(Event::SIZE == 152, "Event must stay free of padding");

impl Event {
    /// Size of an event's fixed part; its strings (`str_bytes` of them) follow it.
    pub const SIZE: usize = core::mem::size_of::<Event>();

    /// How many bytes the event takes on the wire: itself and its strings.
    pub fn wire_len(&self) -> usize {
        Self::SIZE + self.str_bytes.max(0) as usize
    }

    /// Decodes an event from the bytes of a `PERF_RECORD_SAMPLE`'s raw data (or a ring buffer
    /// record), which may carry trailing padding (raw data is padded to 8 bytes). `None` when
    /// the buffer is shorter than the event and the strings it claims.
    pub fn from_bytes(bytes: &[u8]) -> Option<Event> {
        if bytes.len() < Self::SIZE {
            return None;
        }
        // SAFETY: `Event` is `repr(C)`, made only of integers and byte arrays (every bit
        // pattern is valid), and `bytes` holds at least `size_of::<Event>()` bytes;
        // `read_unaligned` copes with the ring's 4-byte alignment of raw data.
        let event: Event = unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<Event>()) };
        match event.str_bytes >= 0 && bytes.len() >= event.wire_len() {
            true => Some(event),
            false => None,
        }
    }

    /// The string entries behind the event in `bytes` (what [`Event::from_bytes`] read it
    /// from).
    pub fn strings<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(Self::SIZE..self.wire_len()).unwrap_or(&[])
    }

    /// The event's fixed part as the BPF program wrote it (a recorded trace stores it, then
    /// the strings).
    pub fn to_bytes(&self) -> [u8; Event::SIZE] {
        // SAFETY: `Event` is `repr(C)` with no padding (its fields are 8-byte words followed by
        // 4-byte words and byte arrays, 152 bytes in all: checked below), so every byte of it
        // is initialized and can be read as a byte array.
        unsafe { core::mem::transmute_copy(self) }
    }

    /// Process id (thread group id).
    pub fn pid(&self) -> u32 {
        (self.pid_tgid >> 32) as u32
    }

    /// Thread id.
    pub fn tid(&self) -> u32 {
        self.pid_tgid as u32
    }

    /// The task name up to its NUL.
    pub fn comm(&self) -> &[u8] {
        let end = self
            .comm
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.comm.len());
        &self.comm[..end]
    }
}

/// One entry of an event's string area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrEntry<'a> {
    /// The [`StrRead`] (index in `SlotConfig::strs`) it is of.
    pub read: u8,
    /// [`str_flag`] bits.
    pub flags: u8,
    pub bytes: &'a [u8],
}

/// The entries of a string area, in the order the program wrote them; stops at a malformed
/// one (a length past the end).
pub fn str_entries(area: &[u8]) -> StrEntries<'_> {
    StrEntries { area }
}

/// Iterator of [`str_entries`].
pub struct StrEntries<'a> {
    area: &'a [u8],
}

impl<'a> Iterator for StrEntries<'a> {
    type Item = StrEntry<'a>;

    fn next(&mut self) -> Option<StrEntry<'a>> {
        let head = self.area.get(..STR_ENTRY)?;
        let len = u16::from_ne_bytes([head[2], head[3]]) as usize;
        let bytes = self.area.get(STR_ENTRY..STR_ENTRY + len)?;
        let entry = StrEntry {
            read: head[0],
            flags: head[1],
            bytes,
        };
        self.area = &self.area[STR_ENTRY + len..];
        Some(entry)
    }
}

/// `tracer profile --off-cpu`: the global slot id whose `CONFIG` entry (task filters, stack
/// bits) and `STATS` cells the off-CPU program on `sched:sched_switch` uses: hits are blocks
/// counted, filtered are blocks shorter than the minimum, failed are blocks that found the
/// start map or `COUNTS` full. It is the last perf-event slot, which an off-CPU run does not
/// otherwise take (on-CPU sampling takes the first).
pub const OFFCPU_SLOT: u32 = PERF_EVENT_BASE + PERF_EVENT_SLOTS - 1;
/// Threads blocked at once that `OFFCPU_START` can follow (an LRU map: the oldest block is
/// forgotten first, and counted by userspace as what it is, a block never seen to end).
pub const OFFCPU_ENTRIES: u32 = 16384;

/// `OFFCPU_CONFIG`: where `sched:sched_switch` keeps its fields (from tracefs) and which blocks
/// count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuConfig {
    /// Blocks shorter than this (ns) are counted as filtered, not by stack.
    pub min_ns: u64,
    /// Record offset of `prev_state` (a `long`).
    pub prev_state: u32,
    /// Record offset of `next_pid`.
    pub next_pid: u32,
}

/// `OFFCPU_START`, by thread id: a blocked thread's switch-out, with the stack it blocked in
/// (captured then: at the switch-in the tracepoint runs in the other task).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OffCpuStart {
    pub time_ns: u64,
    pub pid_tgid: u64,
    pub kstack: i32,
    pub ustack: i32,
    pub comm: [u8; 16],
}

/// Bits of `sched_switch`'s `prev_state` that say the task blocked: any task state
/// (`TASK_REPORT`, S D T t X Z P I). A preempted task reports `TASK_REPORT_MAX` (0x100, "R+"),
/// a task that yields 0 ("R"): both are runnable, waiting for a CPU, not blocked.
pub const SWITCH_BLOCKED_MASK: u64 = 0xff;

#[cfg(feature = "user")]
mod pod {
    // SAFETY: plain old data, `repr(C)`, no implicit padding (explicit `_pad` fields are
    // written as zero by userspace).
    unsafe impl aya::Pod for super::SlotConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::SchedOffsets {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::LatConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::LatStart {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::LatKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::HistKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::AggKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::AggValue {}
    // SAFETY: as above (an AggKey, 8-byte aligned, then bytes: 56 + 128, no padding).
    unsafe impl aya::Pod for super::StrAggKey {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::FieldRead {}
    // SAFETY: as above (the key is 8-byte aligned after four u64s).
    unsafe impl aya::Pod for super::RunCount {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::Filter {}
    // SAFETY: as above (`_pad` written as zero).
    unsafe impl aya::Pod for super::UsdtArgs {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::OffCpuConfig {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::OffCpuStart {}
    // SAFETY: as above (`_pad` written as zero; 8 + 48 + 4 * 8 bytes, no implicit padding).
    unsafe impl aya::Pod for super::TraceStart {}
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn log2_buckets_keep_0_and_1_apart() {
        let b: [u64; 8] = [0, 1, 2, 3, 4, 7, 8, u64::MAX].map(log2_bucket);
        assert_eq!(b, [0, 1, 2, 2, 3, 3, 4, 64]);
        assert_eq!(log2_bucket(1 << 63), AGG_LOG2_BUCKETS - 1);
    }

    #[test]
    fn linear_buckets_have_edge_rows() {
        // --linear 10,0,50: 5 buckets.
        let b = |v| linear_bucket(v, false, 0, 10, 5);
        assert_eq!([0, 9, 10, 49].map(b), [0, 0, 1, 4]);
        assert_eq!(b(50), AGG_BUCKET_ABOVE);
        assert_eq!(b(u64::MAX), AGG_BUCKET_ABOVE);
        // --linear 5,-10,10 on a signed source: 4 buckets.
        let s = |v: i64| linear_bucket(v as u64, true, -10i64 as u64, 5, 4);
        assert_eq!([-10, -6, -5, 0, 9].map(s), [0, 0, 1, 2, 3]);
        assert_eq!(s(-11), AGG_BUCKET_BELOW);
        assert_eq!(s(10), AGG_BUCKET_ABOVE);
        // Unsigned below min.
        assert_eq!(linear_bucket(3, false, 4, 1, 10), AGG_BUCKET_BELOW);
    }

    #[test]
    fn runs_are_counted_only_for_keys_a_task_keeps_on_a_cpu() {
        let counted = |agg, flags, cgroup_id| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            cgroup_id,
            ..SlotConfig::default()
        };
        assert!(counted(AGG_COMM | AGG_PID | AGG_TID | AGG_CPU, 0, 0).may_count_runs());
        assert!(counted(0, SLOT_FILTER_TRACKED | SLOT_FILTER_COMM, 0).may_count_runs());
        assert!(!counted(AGG_COMM | AGG_KEY_VALUE, 0, 0).may_count_runs());
        assert!(!counted(AGG_HIST, 0, 0).may_count_runs());
        assert!(!counted(AGG_SUM, 0, 0).may_count_runs());
        assert!(!counted(AGG_COMM, SLOT_STACK_USER, 0).may_count_runs());
        assert!(!counted(AGG_COMM, 0, 7).may_count_runs());
        assert!(!SlotConfig::default().may_count_runs(), "streamed");
        let runs = counted(AGG_COMM, SLOT_RUN_COUNT, 0);
        assert_eq!(runs.uses() & USES_RUN_COUNT, USES_RUN_COUNT);
    }

    #[test]
    fn keyed_runs_are_counted_for_keys_without_a_varying_value() {
        let counted = |agg, flags| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            ..SlotConfig::default()
        };
        // `tracer watch --summary`'s key: thread and instruction pointer.
        let watch = counted(AGG_PID | AGG_TID | AGG_KEY_VALUE, 0);
        assert!(watch.may_count_keyed_runs() && !watch.may_count_runs());
        assert!(counted(AGG_COMM, SLOT_STACK_KERNEL).may_count_keyed_runs());
        assert!(!counted(AGG_KEY_VALUE | AGG_SUM, 0).may_count_keyed_runs());
        assert!(!counted(AGG_HIST, 0).may_count_keyed_runs());
        assert!(!counted(AGG_KEY_VALUE | AGG_KEY_STRING, 0).may_count_keyed_runs());
        assert!(!SlotConfig::default().may_count_keyed_runs(), "streamed");
        let runs = counted(AGG_KEY_VALUE, SLOT_RUN_KEYED);
        assert_eq!(runs.uses() & USES_RUN_KEYED, USES_RUN_KEYED);
    }

    #[test]
    fn runs_at_an_instruction_are_continued_only_for_keys_of_task_and_ip() {
        let at_ip = SRC_WATCH_IP;
        let counted = |agg, flags, key_src| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            key_src,
            ..SlotConfig::default()
        };
        // `tracer watch --summary`'s key.
        let watch = counted(AGG_PID | AGG_TID | AGG_KEY_VALUE, 0, at_ip);
        assert!(watch.may_count_runs_at_ip());
        assert!(counted(AGG_CPU | AGG_KEY_VALUE, SLOT_FILTER_TRACKED, at_ip).may_count_runs_at_ip());
        // The comm can change within a task's run.
        assert!(!counted(AGG_COMM | AGG_KEY_VALUE, 0, at_ip).may_count_runs_at_ip());
        assert!(!counted(AGG_TID | AGG_KEY_VALUE, SLOT_FILTER_COMM, at_ip).may_count_runs_at_ip());
        // Another value than the ip, or none: the ip alone does not say the key.
        let addr = src(8 * word::WATCH_ADDR as u32, 8, false);
        assert!(!counted(AGG_PID | AGG_KEY_VALUE, 0, addr).may_count_runs_at_ip());
        assert!(!counted(AGG_PID | AGG_TID, 0, at_ip).may_count_runs_at_ip());
        // Stacks and a value filter, which can differ from hit to hit within a task's run.
        for flags in [
            SLOT_STACK_USER,
            SLOT_STACK_KERNEL,
            SLOT_STACK_AT_ENTRY,
            SLOT_VALUE_FILTER,
        ] {
            assert!(!counted(AGG_TID | AGG_KEY_VALUE, flags, at_ip).may_count_runs_at_ip());
        }
        let cgroup = SlotConfig {
            cgroup_id: 7,
            ..watch
        };
        assert!(!cgroup.may_count_runs_at_ip());
        assert!(!counted(AGG_KEY_VALUE | AGG_SUM, 0, at_ip).may_count_runs_at_ip());
        assert!(!SlotConfig::default().may_count_runs_at_ip(), "streamed");
    }

    #[test]
    fn an_event_carries_its_strings_behind_it() {
        let mut event = Event::from_bytes(&[0u8; Event::SIZE]).unwrap();
        event.pid_tgid = 42 << 32 | 43;
        event.data[7] = 7;
        assert_eq!(event.wire_len(), Event::SIZE);
        let mut bytes = event.to_bytes().to_vec();
        // Raw data is padded to 8 bytes in the ring: trailing bytes are ignored.
        bytes.extend_from_slice(&[0; 4]);
        assert_eq!(Event::from_bytes(&bytes).unwrap(), event);
        assert_eq!(Event::from_bytes(&bytes[..Event::SIZE - 1]), None);
        // Two entries: "ab" of read 0, and a truncated "xyz" of read 2.
        let area = [
            0,
            0,
            2,
            0,
            b'a',
            b'b',
            2,
            str_flag::TRUNCATED,
            3,
            0,
            b'x',
            b'y',
            b'z',
        ];
        event.str_bytes = area.len() as i32;
        let mut bytes = event.to_bytes().to_vec();
        bytes.extend_from_slice(&area);
        let decoded = Event::from_bytes(&bytes).unwrap();
        assert_eq!(decoded, event);
        let entries: Vec<StrEntry> = str_entries(decoded.strings(&bytes)).collect();
        assert_eq!(
            entries,
            [
                StrEntry {
                    read: 0,
                    flags: 0,
                    bytes: b"ab"
                },
                StrEntry {
                    read: 2,
                    flags: str_flag::TRUNCATED,
                    bytes: b"xyz"
                },
            ]
        );
        // An event that claims more strings than it carries is malformed.
        assert_eq!(Event::from_bytes(&bytes[..bytes.len() - 1]), None);
        // An entry whose length passes the end ends the entries.
        assert_eq!(str_entries(&area[..12]).count(), 1);
    }

    #[test]
    fn a_config_uses_exactly_the_parts_its_flags_name() {
        assert_eq!(SlotConfig::default().uses(), USES_STREAM);
        let counted = SlotConfig {
            flags: SLOT_AGGREGATE | SLOT_FILTER_TRACKED | SLOT_STACK_USER,
            agg: AGG_COMM,
            ..Default::default()
        };
        assert_eq!(counted.uses(), USES_AGGREGATE | USES_TRACKED | USES_STACKS);
        let hist = SlotConfig {
            flags: SLOT_AGGREGATE,
            agg: AGG_HIST,
            tid: 7,
            ..Default::default()
        };
        assert_eq!(hist.uses(), USES_AGGREGATE | USES_AGG_VALUE | USES_FILTERS);
        let mut probe = SlotConfig::default();
        probe.strs[0].from = str_from::ARG;
        probe.fields[2].size = 4;
        assert_eq!(probe.uses(), USES_STREAM | USES_STRINGS | USES_FIELDS);
        probe.strs[1].from = str_from::RECORD;
        assert_eq!(probe.uses() & USES_STR_MANY, USES_STR_MANY);
        assert_eq!(probe.uses() & USES_STR_ARRAYS, 0);
        probe.strs[1].array = 1;
        assert_eq!(probe.uses() & USES_STR_ARRAYS, USES_STR_ARRAYS);
        assert_eq!(
            SlotConfig {
                flags: SLOT_COUNT_ONLY,
                ..Default::default()
            }
            .uses(),
            0
        );
    }

    /// The flag words' checks: a shared bit or a word that is not one bit fails the build, and
    /// each word's list is every flag of its prefix defined in this file, in bit order (a new
    /// flag outside its block, or missing from the list, fails here).
    #[test]
    fn each_flag_word_is_one_block_of_distinct_bits_in_order() {
        assert!(distinct_bits(&[1 << 0, 1 << 4, 1 << 25]));
        assert!(!distinct_bits(&[1 << 3, 1 << 3]), "a shared bit");
        assert!(!distinct_bits(&[3]), "two bits in one flag");
        let source = include_str!("lib.rs");
        let source = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        for (prefix, list) in [
            ("SLOT_", &SLOT_FLAGS[..]),
            ("AGG_", &AGG_FLAGS[..]),
            ("USES_", &USES_FLAGS[..]),
        ] {
            // `pub const PREFIX_NAME: u32 = 1 << N;`, in the order they are written.
            let defined: Vec<u32> = (source.lines())
                .filter_map(|l| l.strip_prefix("pub const ")?.strip_prefix(prefix))
                .filter_map(|l| l.split_once(": u32 = 1 << ")?.1.strip_suffix(';'))
                .map(|bit| 1 << bit.parse::<u32>().expect("a bit number"))
                .collect();
            assert_eq!(defined, list, "{prefix}* as written, against its list");
            assert!(
                list.windows(2).all(|w| w[0] < w[1]),
                "{prefix}* out of bit order"
            );
        }
    }
}
