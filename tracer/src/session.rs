//! What a tracing run owns: the BPF object, the attached perf events (closing them detaches),
//! and the per-CPU output rings, drained into typed events with every loss counted.

use std::os::fd::AsFd;

use tracer_common::Event;

use crate::bpf::{Bpf, SharedRing, Slot};
use crate::perf::{self, record, Ring, Wakeup};
use crate::Error;

/// Losses seen so far, per CPU and in total.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Losses {
    /// `PERF_RECORD_LOST` counts per CPU (ring full when the program emitted).
    pub per_cpu: Vec<(u32, u64)>,
    /// Records that could not be parsed (corrupt ring data or a short payload).
    pub malformed: u64,
}

impl Losses {
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().map(|(_, n)| n).sum::<u64>() + self.malformed
    }
}

/// Data pages per CPU ring when `--ring-pages` is not given: 8192 pages (32 MiB) shared by
/// the online CPUs, at least 64 and at most 1024 per CPU (a power of two). 1024 pages (4 MiB)
/// was the least that lost nothing while streaming a flat-out getppid loop as JSON here (64
/// pages lost 25% of it, 256 pages 0.2%, 512 pages up to 0.3%); see docs/benchmarks.md.
pub fn default_ring_pages() -> usize {
    let cpus = perf::cpus::online().map_or(1, |c| c.len().max(1));
    let share = (8192 / cpus).clamp(64, 1024);
    // The largest power of two not above the share.
    1 << (usize::BITS - 1 - share.leading_zeros())
}

/// Pages of the one BPF ring buffer when `--ring-pages` is not given: what the per-CPU perf
/// rings would take together (rounded up to a power of two, at most 65536).
pub fn default_shared_ring_pages() -> usize {
    let cpus = perf::cpus::online().map_or(1, |c| c.len().max(1));
    (default_ring_pages() * cpus)
        .next_power_of_two()
        .min(1 << 16)
}

/// Wake the reader when a ring of `pages` data pages is a quarter full (the event loop also
/// drains every 100 ms): one wakeup per event would cost the traced workload a context switch
/// per event.
pub fn quarter_full(pages: usize) -> Wakeup {
    Wakeup::Watermark((pages * perf::sys::page_size() / 4) as u32)
}

/// Where the programs' events arrive: the per-CPU `PERF_COUNT_SW_BPF_OUTPUT` rings behind the
/// BPF `EVENTS` map, or the one BPF ring buffer (`--transport ringbuf`).
pub struct OutputRings {
    rings: Rings,
    layout: record::Layout,
    losses: Losses,
}

enum Rings {
    Perf(Vec<(u32, Ring)>),
    Shared(SharedRing),
}

impl OutputRings {
    /// Opens one ring of `data_pages` pages per online CPU and stores each in `EVENTS`.
    pub fn open(bpf: &mut Bpf, data_pages: usize, wakeup: Wakeup) -> Result<OutputRings, Error> {
        let cpus = perf::cpus::online()?;
        let rings = perf::open_bpf_output_rings(&cpus, data_pages, wakeup)?;
        for (cpu, ring) in &rings {
            bpf.set_output(*cpu, ring.as_fd())?;
        }
        Ok(OutputRings {
            losses: Losses {
                per_cpu: cpus.iter().map(|&c| (c, 0)).collect(),
                malformed: 0,
            },
            rings: Rings::Perf(rings),
            layout: perf::bpf_output_layout(),
        })
    }

    /// Reads the BPF ring buffer of an object loaded with [`crate::bpf::Sizing::ringbuf`].
    /// Its lost events are only the programs' failed outputs ([`Bpf::stats`]): the ring
    /// buffer has no `PERF_RECORD_LOST`.
    pub fn open_ringbuf(bpf: &mut Bpf) -> Result<OutputRings, Error> {
        Ok(OutputRings {
            losses: Losses::default(),
            rings: Rings::Shared(bpf.take_ringbuf()?),
            layout: perf::bpf_output_layout(),
        })
    }

    /// Hands every event available now to `f`, and counts losses; returns the event count.
    pub fn drain(&mut self, mut f: impl FnMut(&Event)) -> u64 {
        let mut events = 0;
        let layout = self.layout;
        let rings = match &mut self.rings {
            Rings::Perf(rings) => rings,
            Rings::Shared(ring) => {
                let malformed = &mut self.losses.malformed;
                ring.drain(|bytes| match Event::from_bytes(bytes) {
                    Some(event) => {
                        events += 1;
                        f(&event);
                    }
                    None => *malformed += 1,
                });
                return events;
            }
        };
        for (i, (_cpu, ring)) in rings.iter_mut().enumerate() {
            let lost = &mut self.losses.per_cpu[i].1;
            let malformed = &mut self.losses.malformed;
            let stats = ring.drain(|bytes| {
                // The hot path: BPF output samples without building a full Sample.
                if let Some(event) = record::raw_sample(bytes, &layout).and_then(Event::from_bytes)
                {
                    events += 1;
                    f(&event);
                    return;
                }
                match record::parse(bytes, &layout) {
                    Ok(parsed) => match parsed.record {
                        record::Record::Sample(sample) => {
                            match sample.raw.and_then(Event::from_bytes) {
                                Some(event) => {
                                    events += 1;
                                    f(&event);
                                }
                                None => *malformed += 1,
                            }
                        }
                        record::Record::Lost { lost: n, .. } => *lost += n,
                        _ => {}
                    },
                    Err(_) => *malformed += 1,
                }
            });
            if stats.corrupt {
                self.losses.malformed += 1;
            }
        }
        events
    }

    pub fn losses(&self) -> &Losses {
        &self.losses
    }

    /// The rings' event fds, for readiness polling (they stay owned by the rings).
    pub fn raw_fds(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match &self.rings {
            Rings::Perf(rings) => rings.iter().map(|(_, r)| r.as_fd().as_raw_fd()).collect(),
            Rings::Shared(ring) => vec![ring.as_raw_fd()],
        }
    }
}

/// Registers `fd` with the tokio reactor for readability.
///
/// The caller must keep the fd open, unchanged, for the life of the returned `AsyncFd`: rings
/// outlive the event loop's runtime (`EventLoop::run` consumes and drops it while the rings
/// are still open), and a pidfd is owned by its `AsyncFd`.
#[allow(unsafe_code)]
pub fn readable<T: std::os::fd::AsRawFd>(fd: T) -> std::io::Result<tokio::io::unix::AsyncFd<T>> {
    // SAFETY: per the contract above, the fd stays open and refers to the same file for the
    // whole life of the AsyncFd (tokio's I/O-safety requirement for register_with_interest).
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// A perf event with a BPF program attached: dropping it detaches the program.
pub struct Attached {
    pub slot: Slot,
    /// The perf event the program is attached to; `None` for a raw tracepoint slot, which
    /// runs from its attach on.
    pub event: Option<perf::Event>,
}

impl Attached {
    /// Attaches the slot's program to `event` with `PERF_EVENT_IOC_SET_BPF` and enables it.
    pub fn new(bpf: &Bpf, slot: Slot, event: perf::Event) -> Result<Attached, Error> {
        let attached = Attached::disabled(bpf, slot, event)?;
        attached.enable()?;
        Ok(attached)
    }

    /// Attaches without enabling: the program runs once [`Attached::enable`] is called, so a
    /// command can attach all its probes first and start them together.
    pub fn disabled(bpf: &Bpf, slot: Slot, event: perf::Event) -> Result<Attached, Error> {
        event.set_bpf(bpf.program_fd(&slot)?)?;
        Ok(Attached {
            slot,
            event: Some(event),
        })
    }

    /// A slot attached to a raw tracepoint ([`Bpf::take_raw_slot`]).
    pub fn raw(slot: Slot) -> Attached {
        Attached { slot, event: None }
    }

    pub fn enable(&self) -> Result<(), Error> {
        match &self.event {
            Some(event) => Ok(event.enable(false)?),
            None => Ok(()),
        }
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// SIGINT or SIGTERM.
    Interrupted,
    /// `-d` elapsed.
    Duration,
    /// The sink said stop (`-c` reached).
    Count,
    /// The launched command exited with this status.
    CommandExited(i32),
    /// The sink saw its target go away (a watched process exited).
    TargetGone,
}

/// What a command does with the event loop's wakeups.
pub trait Sink {
    /// Drains the rings and handles the events; `true` stops the run (`-c` reached).
    fn drain(&mut self) -> Result<bool, Error>;
    /// Called every 100 ms after a drain (loss reports, hints); `true` ends the run because
    /// the target is gone.
    fn tick(&mut self) -> Result<bool, Error> {
        Ok(false)
    }
}

/// The async runtime and the SIGINT/SIGTERM handlers. Created before a command prints its
/// banner, so that a signal from then on ends the run cleanly (summary, exit 0) instead of
/// killing it.
pub struct EventLoop {
    runtime: tokio::runtime::Runtime,
    signals: Signals,
}

/// The signals that end a run: SIGINT, then SIGTERM.
pub type Signals = (tokio::signal::unix::Signal, tokio::signal::unix::Signal);

/// A raw fd for tokio's readiness: the rings own the fds and outlive the loop.
struct Fd(std::os::fd::RawFd);

impl std::os::fd::AsRawFd for Fd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

impl EventLoop {
    pub fn new() -> Result<EventLoop, Error> {
        use tokio::signal::unix::{signal, SignalKind};
        let runtime_error = |what: &str, e: std::io::Error| Error::Runtime {
            message: format!("cannot {what}: {e}"),
            hints: Vec::new(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| runtime_error("start the event loop", e))?;
        let (interrupt, terminate) = {
            let _context = runtime.enter();
            (
                signal(SignalKind::interrupt()).map_err(|e| runtime_error("handle signals", e))?,
                signal(SignalKind::terminate()).map_err(|e| runtime_error("handle signals", e))?,
            )
        };
        Ok(EventLoop {
            runtime,
            signals: (interrupt, terminate),
        })
    }

    /// The runtime and the signal handlers, for a command that drives its own waiting
    /// (`tracer stat`, which has counters instead of rings).
    pub fn parts(&mut self) -> (&tokio::runtime::Runtime, &mut Signals) {
        (&self.runtime, &mut self.signals)
    }

    /// Runs until a signal, the duration, the sink's stop or the command's exit; the rings are
    /// drained one last time in every case.
    pub fn run(
        mut self,
        sink: &mut impl Sink,
        ring_fds: Vec<std::os::fd::RawFd>,
        mut launched: Option<&mut crate::launch::Launched>,
        duration: Option<std::time::Duration>,
    ) -> Result<End, Error> {
        use std::time::Duration;
        let io_error = |e: std::io::Error| Error::Runtime {
            message: format!("event loop: {e}"),
            hints: Vec::new(),
        };
        let (interrupt, terminate) = (&mut self.signals.0, &mut self.signals.1);
        self.runtime.block_on(async move {
            // One readiness task per ring; any wakeup drains all rings.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
            for fd in ring_fds {
                let tx = tx.clone();
                let fd = readable(Fd(fd)).map_err(io_error)?;
                tokio::spawn(async move {
                    while let Ok(mut guard) = fd.readable().await {
                        // A per-task event whose task exited reports POLLHUP for good:
                        // readiness can no longer be cleared, and waiting again would spin.
                        // Its ring is still drained on every tick and at the end.
                        let hung_up = guard.ready().is_read_closed();
                        guard.clear_ready();
                        let _ = tx.try_send(());
                        if hung_up {
                            break;
                        }
                    }
                });
            }
            let pidfd = match launched.as_ref() {
                Some(child) => Some(readable(child.pidfd()?).map_err(io_error)?),
                None => None,
            };
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            let deadline = tokio::time::sleep(duration.unwrap_or(Duration::from_secs(u64::MAX / 4)));
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    _ = rx.recv() => { if sink.drain()? { return Ok(End::Count); } }
                    _ = tick.tick() => {
                        if sink.drain()? { return Ok(End::Count); }
                        if sink.tick()? {
                            // The target wrote its last events and exited after the drain
                            // above: they are all in the rings now, read them before ending.
                            sink.drain()?;
                            return Ok(End::TargetGone);
                        }
                    }
                    _ = interrupt.recv() => { sink.drain()?; return Ok(End::Interrupted); }
                    _ = terminate.recv() => { sink.drain()?; return Ok(End::Interrupted); }
                    _ = &mut deadline, if duration.is_some() => { sink.drain()?; return Ok(End::Duration); }
                    ready = async { pidfd.as_ref().expect("guarded").readable().await }, if pidfd.is_some() => {
                        let mut guard = ready.map_err(io_error)?;
                        guard.clear_ready();
                        if let Some(code) = launched.as_mut().and_then(|c| c.try_wait()) {
                            // Everything the command did is in the rings already: output is
                            // synchronous with the probe hit.
                            sink.drain()?;
                            return Ok(End::CommandExited(code));
                        }
                    }
                }
            }
        })
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of `bpf_ktime_get_ns()`.
#[allow(unsafe_code)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
