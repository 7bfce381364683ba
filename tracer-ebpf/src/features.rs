//! Programs `tracer features` loads to learn, for real, which attach types the kernel permits
//! (fentry and fexit are checked with tracer's own trampoline programs: see
//! `kernel::features`).
#![no_std]
#![no_main]

use aya_ebpf::macros::{btf_tracepoint, raw_tracepoint};
use aya_ebpf::programs::{BtfTracePointContext, RawTracePointContext};

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn feature_raw_tp(_ctx: RawTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sys_enter")]
pub fn feature_tp_btf(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
