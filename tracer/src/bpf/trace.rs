//! `tracer trace`'s slots (a syscall's paired entry and exit programs, the signal and exit
//! events) and what it reads at the end (calls in flight, its counters).

use tracer_common::{names, SlotConfig};

use super::{Bpf, Error, Slot};

impl Bpf {
    /// Takes a `tracer trace` slot for syscall `nr` (the object loaded with
    /// [`super::Room::Trace`]): as [`Bpf::take_syscall_slot`], with the paired `trace_exit` and
    /// `trace_enter` programs (the exit attached first: an entry is never left without its
    /// exit's program), found by the entry's key.
    pub fn take_trace_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        filter: Option<&tracer_common::Filter>,
    ) -> Result<Slot, Error> {
        let programs = [("trace_exit", "sys_exit"), ("trace_enter", "sys_enter")];
        self.dispatched_slot(config, nr, nr, filter, &programs)
    }

    /// Attaches `trace_exit_reads`, which counts the entries of getdents calls and reads the
    /// iovec arrays of readv and writev calls for `trace_exit` (the object loaded with
    /// `USES_DIRENTS` or `USES_IOVECS`). Before any [`Bpf::take_trace_slot`]: the kernel
    /// runs a tracepoint's programs in the order they were attached, and what it reads must
    /// come before the exit's event.
    pub fn read_at_exit(&mut self) -> Result<(), Error> {
        self.attach_raw("trace_exit_reads", "sys_exit", true)
    }

    /// Takes the `tracer trace` slot of events that are not calls (`nr`:
    /// [`tracer_common::TRACE_SIGNAL_NR`] or [`tracer_common::TRACE_EXIT_NR`]), with
    /// `programs` (name, raw tracepoint) attached. Take the exit's before the tracking
    /// programs start: it must run before `track_exit` forgets the task.
    pub fn take_trace_event_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        programs: &[(&str, &str)],
    ) -> Result<Slot, Error> {
        self.dispatched_slot(config, nr, nr, None, programs)
    }

    /// The `tracer trace` calls still in flight (entered, not returned), by thread.
    pub fn trace_in_flight(&self) -> Result<Vec<(u64, tracer_common::TraceStart)>, Error> {
        let wrap = |source| Error::MapUpdate {
            map: names::TRACE_START,
            source,
        };
        (self.maps.trace_start.iter())
            .map(|item| item.map_err(wrap))
            .collect()
    }

    /// The `tracer trace` counters ([`tracer_common::trace_stat`]), summed over CPUs.
    pub fn trace_stats(&self) -> Result<[u64; tracer_common::trace_stat::COUNT as usize], Error> {
        let mut out = [0; tracer_common::trace_stat::COUNT as usize];
        for (i, total) in out.iter_mut().enumerate() {
            let values =
                (self.maps.trace_stats.get(&(i as u32), 0)).map_err(|source| Error::MapUpdate {
                    map: names::TRACE_STATS,
                    source,
                })?;
            *total = values.iter().sum();
        }
        Ok(out)
    }
}
