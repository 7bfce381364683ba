//! The one place that touches aya: load the embedded BPF object, hand out program fds for
//! `PERF_EVENT_IOC_SET_BPF`, wire per-CPU output rings into the `EVENTS` map, read counters.
//!
//! One file per concern, each with its own `impl Bpf` block (ARCHITECTURE.md, the
//! `bpf/` row): `load` (sizing, maps, programs by name, the stop), `slots` (handing out program
//! slots and what each is given), `counts` (in-kernel counts, stacks, per-slot counters),
//! `rings` (the transports), `ksyms` (the kernel's names of its addresses), `latency`, `trace`
//! and `profile` (their commands' programs and maps), `features` (the feature-probe object)
//! and `error`.

use aya::Ebpf;
use tracer_common::{
    AggKey, PERF_EVENT_BASE, PERF_EVENT_SLOTS, PROBE_BASE, PROBE_SLOTS, TRACEPOINT_BASE,
    TRACEPOINT_SLOTS,
};

mod counts;
mod error;
mod features;
mod ksyms;
mod latency;
mod load;
mod profile;
mod rings;
mod slots;
mod trace;

pub use error::Error;
pub use features::{probe_attach_type, AttachTypeError, ProbeType};
pub use ksyms::{KernelNamer, KernelSymbol};
pub use latency::latency_program;
pub use load::{RingBufSize, Room, Rooms, Sizing};
pub use rings::SharedRing;
pub use slots::tracked_in;

use load::{DebugLog, Maps};

/// Where the BPF programs write events for tracer to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// `PERF_COUNT_SW_BPF_OUTPUT` rings, one per CPU (`bpf_perf_event_output`).
    Perf,
    /// One `BPF_MAP_TYPE_RINGBUF` shared by every CPU (`bpf_ringbuf_output`).
    Ringbuf,
}

/// The programs that keep the process set and the comm cache (attached by
/// [`Bpf::attach_comm_cache`] and [`Bpf::attach_tracking`]), not probes: their misses are not
/// hits.
const BOOKKEEPING: [&str; 5] = [
    "comm_renamed",
    "track_exec",
    "track_exit",
    "track_fork",
    "track_fork_record",
];

/// The BPF object built from `tracer-ebpf` by build.rs.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer-probes"));

/// Which program type a slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// kprobe, kretprobe, uprobe, uretprobe (BPF_PROG_TYPE_KPROBE).
    Probe,
    /// Tracepoints (BPF_PROG_TYPE_TRACEPOINT).
    Tracepoint,
    /// Breakpoints and software events (BPF_PROG_TYPE_PERF_EVENT).
    PerfEvent,
    /// Kernel functions through their BPF trampoline: fentry, fexit (BPF_PROG_TYPE_TRACING),
    /// one program load per function, the slot in the link's cookie.
    Function,
}

impl SlotKind {
    fn prefix(self) -> &'static str {
        match self {
            SlotKind::Probe => "kp",
            SlotKind::Tracepoint => "tp",
            SlotKind::PerfEvent => "pe",
            SlotKind::Function => "fn",
        }
    }

    /// (first global id, count) of this kind's slots.
    fn range(self) -> (u32, u32) {
        match self {
            SlotKind::Probe => (PROBE_BASE, PROBE_SLOTS),
            SlotKind::Tracepoint => (TRACEPOINT_BASE, TRACEPOINT_SLOTS),
            SlotKind::PerfEvent => (PERF_EVENT_BASE, PERF_EVENT_SLOTS),
            // Ids of the cookie range ([`Bpf::take_function_slot`]), never constant slots.
            SlotKind::Function => (tracer_common::DISPATCH_BASE, 0),
        }
    }
}

/// A counted cell: its key, and the string it is keyed by (`STR_COUNTS`).
pub type CellKey = (AggKey, Option<[u8; tracer_common::KEY_STRLEN]>);

/// The loaded object. Dropping it closes program and map fds; perf events that have a program
/// attached keep their own reference until they are closed.
pub struct Bpf {
    ebpf: Ebpf,
    maps: Maps,
    /// `--debug-bpf` (`USES_DEBUG`): the programs' aya-log ring, read on demand.
    debug_log: Option<std::cell::RefCell<DebugLog>>,
    /// Global ids of the slots taken.
    used: Vec<u32>,
    /// Slots of the shared tracepoint program taken.
    dispatched: u32,
    /// The `USES_*` bits the object was loaded with.
    uses: u32,
    /// The programs attached once for all their slots (`Bpf::attach_raw`'s `once`).
    attached_once: Vec<String>,
}

/// A taken program slot.
#[derive(Clone, Debug)]
pub struct Slot {
    pub kind: SlotKind,
    /// The global slot id: what [`tracer_common::Event::slot`] carries.
    pub id: u32,
    name: String,
    /// A slot of a cookie program: attached with [`Bpf::link`], not `PERF_EVENT_IOC_SET_BPF`.
    pub cookie: bool,
}

#[cfg(test)]
mod tests {
    use object::{Object, ObjectSymbol};

    /// The names userspace looks maps and globals up with are the object's symbols.
    #[test]
    fn every_contract_name_is_in_the_object() {
        let file = object::File::parse(super::OBJECT).expect("the built object is ELF");
        let symbols: Vec<&str> = file.symbols().filter_map(|s| s.name().ok()).collect();
        let missing: Vec<&str> = (tracer_common::names::ALL.iter().copied())
            .filter(|name| !symbols.contains(name))
            .collect();
        assert!(missing.is_empty(), "not in the BPF object: {missing:?}");
    }
}
