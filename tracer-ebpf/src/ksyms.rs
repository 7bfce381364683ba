//! Kernel addresses named by the kernel: `ksym_names`, run by userspace through
//! `BPF_PROG_TEST_RUN` with up to [`KSYM_BATCH`] addresses as its context, writes each one's
//! `%pS` (`name+0xOFF/0xSIZE [module]`, the kernel's own lookup) into `KSYM_TEXT`. A run that
//! names the few kernel frames of a profile so costs a binary search per address, where
//! reading /proc/kallsyms formats all of its 120,000 lines (docs/benchmarks.md).

use aya_ebpf::helpers::generated::bpf_snprintf;
use aya_ebpf::macros::{map, raw_tracepoint};
use aya_ebpf::maps::Array;
use aya_ebpf::programs::RawTracePointContext;
use tracer_common::{KSYM_BATCH, KSYM_TEXT_LEN};

/// One name per address of the run, at the address's index (untouched for a zero address).
#[map]
static KSYM_TEXT: Array<[u8; KSYM_TEXT_LEN]> = Array::with_max_entries(KSYM_BATCH, 0);

/// `bpf_snprintf` takes its format from read-only map memory only: .rodata, which aya freezes.
#[unsafe(no_mangle)]
static KSYM_FORMAT: [u8; 4] = *b"%pS\0";

#[raw_tracepoint]
/// Names the addresses of its context (see the module).
pub fn ksym_names(ctx: RawTracePointContext) -> u32 {
    // The context is read at constant offsets only (the verifier refuses a variable one).
    name_at::<0>(&ctx);
    name_at::<1>(&ctx);
    name_at::<2>(&ctx);
    name_at::<3>(&ctx);
    name_at::<4>(&ctx);
    name_at::<5>(&ctx);
    name_at::<6>(&ctx);
    name_at::<7>(&ctx);
    name_at::<8>(&ctx);
    name_at::<9>(&ctx);
    name_at::<10>(&ctx);
    name_at::<11>(&ctx);
    0
}

#[inline(always)]
fn name_at<const I: u32>(ctx: &RawTracePointContext) {
    const { assert!(I < KSYM_BATCH) };
    let mut addr: [u64; 1] = [ctx.arg(I as usize)];
    if addr[0] == 0 {
        return;
    }
    let Some(text) = KSYM_TEXT.get_ptr_mut(I) else {
        return;
    };
    // SAFETY: `text` is a map value of KSYM_TEXT_LEN bytes; the format is a NUL-terminated
    // string in frozen .rodata, and `addr` the one word it formats.
    unsafe {
        bpf_snprintf(
            text.cast(),
            KSYM_TEXT_LEN as u32,
            KSYM_FORMAT.as_ptr().cast(),
            addr.as_mut_ptr(),
            8,
        );
    }
}
