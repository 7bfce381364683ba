//! Programs `tracer features` loads to learn, for real, which attach types the kernel permits.
#![no_std]
#![no_main]

use aya_ebpf::macros::{btf_tracepoint, fentry, fexit, raw_tracepoint};
use aya_ebpf::programs::{BtfTracePointContext, FEntryContext, FExitContext, RawTracePointContext};

#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn feature_raw_tp(_ctx: RawTracePointContext) -> i32 {
    0
}

#[btf_tracepoint(function = "sys_enter")]
pub fn feature_tp_btf(_ctx: BtfTracePointContext) -> i32 {
    0
}

#[fentry(function = "vfs_read")]
pub fn feature_fentry(_ctx: FEntryContext) -> u32 {
    0
}

#[fexit(function = "vfs_read")]
pub fn feature_fexit(_ctx: FExitContext) -> u32 {
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
