//! tracer's BPF programs: probe slots that emit [`Event`]s into per-CPU BPF_OUTPUT rings (or,
//! with `--transport ringbuf`, one BPF ring buffer).
//!
//! Userspace opens the perf events (kprobe/uprobe PMUs, tracepoints, breakpoints) itself and
//! attaches these programs with `PERF_EVENT_IOC_SET_BPF`. There is no attach cookie on that path,
//! so each probe spec uses its own program instance ("slot"); the slot number is a constant
//! compiled into each instance and indexes the `CONFIG` map.
//!
//! The crate is divided by concern (ARCHITECTURE.md, "The BPF crate"); `tests/layers.rs`
//! holds each module to the ones below it:
//!
//! | module | what it holds |
//! |---|---|
//! | `maps` | the maps every concern shares, the scratch hit, the statistics |
//! | `caches` | the per-CPU comm and tracked-process caches, the task generation |
//! | `filters` | the run's scope, the task filters, `--filter`, `--debug-bpf`'s reasons |
//! | `emit` | both transports (perf rings, BPF ring buffer), stack ids |
//! | `reads` | strings, buffers, arrays, struct members, USDT arguments, records |
//! | `aggregate` | in-kernel counting: keys, count maps, per-CPU runs |
//! | `slots` | the slot programs and one handler per program type |
//! | `iovecs` | `tracer trace`'s iovec arrays, read by `trace_exit_reads` |
//! | `tracking` | following `-- COMMAND`'s process tree |
//! | `ksyms` | kernel addresses named by the kernel (`%pS`), for userspace's stacks |
//! | `latency`, `trace`, `profile` | the programs of `tracer latency`, `trace`, `profile` |
#![no_std]
#![no_main]
// An atomic add (BPF_XADD) for the shared COMM_GEN counter: the BPF target has no
// compare-and-swap, so core's atomic types offer no fetch_add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

use aya_log_ebpf::debug;
use tracer_common::USES_ALL;

/// What this run's slots may do (`USES_*` bits), set by userspace before loading. It is in
/// .rodata, which aya freezes and the kernel maps read-only for programs, so the verifier reads
/// its value and skips the code behind cleared bits.
#[unsafe(no_mangle)]
static USES: u32 = USES_ALL;

/// Whether this run may use `bit`; a constant to the verifier.
#[inline(always)]
pub(crate) fn uses(bit: u32) -> bool {
    // SAFETY: a plain aligned read of our own static. Volatile, so that LLVM does not fold in
    // the compiled-in default: the value is the one userspace wrote before loading.
    unsafe { core::ptr::read_volatile(&USES) & bit != 0 }
}

/// What a program on a tracepoint returns: 1 lets the hit go on to the tracepoint's perf
/// events, everyone's (`perf_trace_run_bpf_submit`, `perf_syscall_enter`: a 0 from any BPF
/// program on a tracepoint hides the hit from every perf event counting it, so `perf stat -e
/// CAT:NAME` beside tracer read 0). tracer's own event on the tracepoint is scoped to tracer's
/// thread, so it is on a CPU's list of events (and counts the hit) only while tracer runs there.
const TRACEPOINT_PASS: u32 = 1;

/// A tracepoint program whose return value reaches the kernel. aya's `#[tracepoint]` returns
/// 0 whatever the function returns (aya-ebpf-macros 0.2), which is the value that hides the
/// hit from every other perf event on the tracepoint; this is what it expands to, otherwise.
macro_rules! tracepoint_program {
    ($name:ident => $body:expr) => {
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "tracepoint")]
        pub fn $name(ctx: *mut ::core::ffi::c_void) -> u32 {
            let body: fn(::aya_ebpf::programs::TracePointContext) -> u32 = $body;
            body(::aya_ebpf::programs::TracePointContext::new(ctx))
        }
    };
}
pub(crate) use tracepoint_program;
/// The logging code, for its three callers (a refused hit, a full ring, a full count map);
/// inlined: LLVM keeps one copy (2,181 instructions for a tracepoint program, against 2,117 as
/// a BPF-to-BPF call), and a program without subprograms is JITed in one pass. At the crate's
/// root: each record carries the call's module path and file name, which are shortest here
/// (320 bytes of the logging code longer from `filters`).
#[inline(always)]
pub(crate) fn say_dropped(what: u64, pid_tgid: u64) {
    debug!(&(), "{} {}", what, pid_tgid);
}

mod aggregate;
mod caches;
mod emit;
mod filters;
mod iovecs;
mod ksyms;
mod latency;
mod maps;
mod profile;
mod reads;
mod slots;
mod trace;
mod tracking;

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
