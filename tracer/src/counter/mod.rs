//! The counter layer of `tracer stat`: event specs resolved against this kernel (PMUs,
//! tracepoints, probes, breakpoints), opened per task, CPU or cgroup in perf's groups,
//! enabled together and read with `PERF_FORMAT_GROUP`.

pub mod cpu_metrics;
pub mod open;
pub mod os;
pub mod resolve;
pub mod run;
pub mod saved;
pub mod tally;
pub mod topology;

use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::output::stat::Role;
use crate::perf::{Event, EventKind};
use crate::plan::stat::ToolEvent;

/// One counter to open: an event resolved against this kernel.
pub struct Counter {
    pub name: String,
    pub kind: EventKind,
    /// Modifier flags (`exclude_*`, `pinned`).
    pub flags: u64,
    pub precise: u8,
    pub group: Option<usize>,
    pub role: Role,
    pub context: u8,
    pub unit: String,
    /// Display scale: 1e-6 turns task-clock's ns into msec.
    pub scale: f64,
    pub cgroup: Option<Arc<OwnedFd>>,
    pub cgroup_name: Option<String>,
    /// A perf "tool" event: measured by tracer, not opened in the kernel.
    pub tool: Option<ToolEvent>,
}

/// Where one set of counters is opened.
#[derive(Clone, Debug)]
pub enum Place {
    Task(u32),
    Cpu(u32),
}

/// A group (or a lone event) opened on one place.
pub struct Unit {
    pub leader: Event,
    pub _members: Vec<Event>,
    /// Counter indices in read order, leader first.
    pub counters: Vec<usize>,
    pub place: usize,
}

/// The counters of one run.
pub struct Opened {
    pub units: Vec<Unit>,
    /// Per counter: opened on at least one place.
    pub supported: Vec<bool>,
}
/// perf stat treats these errnos from perf_event_open as "the event is not supported here"
/// (`stat_handle_error`): the run goes on and prints `<not supported>`.
pub const NOT_SUPPORTED: [i32; 6] = [
    libc::EINVAL,
    libc::ENOSYS,
    libc::ENOENT,
    libc::EOPNOTSUPP,
    libc::ENXIO,
    libc::ENODEV,
];
