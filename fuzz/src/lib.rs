//! What the fuzz targets share: tracer's perf layer, compiled from its own sources, and a
//! record [`Layout`](perf::record::Layout) decoded from the front of the fuzz input.

use arbitrary::{Result, Unstructured};

// The perf module depends on libc and thiserror only, so its files compile here as they are.
// Including `tracer` itself would run its build script (BPF programs, nightly, bpf-linker)
// under sanitizer flags.
#[path = "../../tracer/src/perf/mod.rs"]
pub mod perf;

use perf::record::Layout;

/// Any layout the parser may be handed: every `sample_type` and `read_format` bit (known or
/// not), and register counts up to 64 (the bits of a `sample_regs_*` mask).
pub fn layout(u: &mut Unstructured<'_>) -> Result<Layout> {
    let sample_type = u.arbitrary()?;
    let read_format = u.arbitrary()?;
    let flags: u8 = u.arbitrary()?;
    Ok(Layout {
        sample_type,
        read_format,
        sample_id_all: flags & 1 != 0,
        branch_hw_index: flags & 2 != 0,
        regs_user: u.int_in_range(0..=64)?,
        regs_intr: u.int_in_range(0..=64)?,
        // A cap on callchain entries, or none (only the record's size bounds them).
        max_callchain: match flags & 4 != 0 {
            true => Some(u.int_in_range(0..=200)?),
            false => None,
        },
    })
}
