//! `tracer profile --off-cpu`: its slot, configuration and blocked starts; kernel addresses
//! named by the kernel, for the stacks of every command.

use crate::*;

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
    /// Counted by the program, not configured: blocks whose end it never saw (a task switched
    /// out again with its stamp still there: the tracepoint did not show its switch in),
    /// left uncounted. Read back at the end of the run.
    pub unended: u64,
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
    unsafe impl aya::Pod for super::LatOutlier {}
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

/// Kernel addresses one run of the `ksym_names` program names: a raw tracepoint run by
/// `BPF_PROG_TEST_RUN`, whose context is up to 12 words (the addresses).
pub const KSYM_BATCH: u32 = 12;
/// Bytes of one address's name in `KSYM_TEXT`, as the kernel's `%pS` writes it
/// (`name+0xOFF/0xSIZE [module]`), with its NUL: a kernel symbol's name is at most 512 bytes
/// (KSYM_NAME_LEN, 6.1+), a module's 56.
pub const KSYM_TEXT_LEN: usize = 640;
