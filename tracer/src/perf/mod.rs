//! A safe layer over perf_event_open(2): event attributes, scopes, groups, ioctls, counter
//! reads, mmap rings and record parsing.
//!
//! This module depends on libc and thiserror only (no aya, tokio or clap), so it can be lifted
//! out as a library of its own.

pub mod attr;
pub mod cpus;
pub mod deferred;
pub mod error;
pub mod event;
pub mod names;
pub mod pmu;
pub mod read;
pub mod record;
pub mod ring;
pub mod sys;

pub use attr::{
    BreakpointType, EventKind, Hardware, KprobeTarget, Options, Sampling, Software, Wakeup,
};
pub use error::{Error, EventClass};
pub use event::{Event, Scope};
pub use read::Counts;
pub use ring::Ring;

/// Opens one `PERF_COUNT_SW_BPF_OUTPUT` event per CPU with a `data_pages`-page ring each:
/// the per-CPU slots of a BPF `PERF_EVENT_ARRAY` (`bpf_perf_event_output` with
/// `BPF_F_CURRENT_CPU` writes to the slot of the CPU it runs on, so each event must be bound
/// to that CPU).
pub fn open_bpf_output_rings(
    cpus: &[u32],
    data_pages: usize,
    wakeup: Wakeup,
) -> Result<Vec<(u32, Ring)>, Error> {
    let options = Options {
        sample_type: attr::sample::RAW,
        sampling: Sampling::Period(1),
        wakeup,
        ..Options::default()
    };
    cpus.iter()
        .map(|&cpu| {
            let event = Event::open(
                format!("bpf-output ring on CPU {cpu}"),
                &EventKind::Software(Software::BpfOutput),
                &options,
                &Scope::Cpu(cpu),
            )?;
            Ok((cpu, Ring::new(event, data_pages)?))
        })
        .collect()
}

/// The record layout of rings opened by [`open_bpf_output_rings`].
pub fn bpf_output_layout() -> record::Layout {
    record::Layout {
        sample_type: attr::sample::RAW,
        ..record::Layout::default()
    }
}
