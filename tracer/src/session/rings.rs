//! Where the BPF programs' events arrive: the per-CPU `PERF_COUNT_SW_BPF_OUTPUT` rings or the
//! one BPF ring buffer, drained into typed events with every loss counted.

use std::os::fd::AsFd;

use tracer_common::Event;

/// Events drained at once ([`OutputRings::drain_batch`]): each with the range of its string
/// entries in `strings`.
#[derive(Default)]
pub struct Batch {
    pub events: Vec<(Event, std::ops::Range<usize>)>,
    pub strings: Vec<u8>,
}

use crate::bpf::{Bpf, RingBufSize, SharedRing};
use crate::perf::{self, record, Ring, Wakeup};
use crate::Error;

pub use crate::bpf::Transport;

/// The BPF ring buffer of `--transport ringbuf`: `pages` pages, waking the reader when a
/// quarter is full, or with `wakeup_events` once that many events' worth of bytes (counted at
/// the size of an event without strings) are waiting.
pub fn ringbuf_size(pages: usize, wakeup_events: Option<u32>) -> RingBufSize {
    let bytes = pages * perf::sys::page_size();
    let wakeup_bytes = match wakeup_events {
        Some(n) => u64::from(n) * Event::SIZE as u64,
        None => bytes as u64 / 4,
    };
    RingBufSize {
        bytes: bytes as u32,
        // 0 would mean the perf rings to the programs.
        wakeup_bytes: wakeup_bytes.max(1),
    }
}

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
    /// The rings of `transport`: the ring buffer the object was loaded with, or one perf ring
    /// of `pages` pages per CPU waking the reader every `wakeup_events` events (default: a
    /// quarter full; a 100 ms tick drains the rest).
    pub fn for_transport(
        bpf: &mut Bpf,
        transport: Transport,
        pages: usize,
        wakeup_events: Option<u32>,
    ) -> Result<OutputRings, Error> {
        match (transport, wakeup_events) {
            (Transport::Ringbuf, _) => OutputRings::open_ringbuf(bpf),
            (Transport::Perf, Some(n)) => OutputRings::open(bpf, pages, Wakeup::Events(n)),
            (Transport::Perf, None) => OutputRings::open(bpf, pages, quarter_full(pages)),
        }
    }

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

    /// Every event available now, with its strings kept in one buffer (a range each): no
    /// allocation per event.
    pub fn drain_batch(&mut self) -> Batch {
        let mut batch = Batch::default();
        self.drain(|e, s| {
            let start = batch.strings.len();
            batch.strings.extend_from_slice(s);
            batch.events.push((*e, start..batch.strings.len()));
        });
        batch
    }

    /// Hands every event available now to `f`, with its string entries, and counts losses;
    /// returns the event count.
    pub fn drain(&mut self, mut f: impl FnMut(&Event, &[u8])) -> u64 {
        let mut events = 0;
        let layout = self.layout;
        let rings = match &mut self.rings {
            Rings::Perf(rings) => rings,
            Rings::Shared(ring) => {
                let malformed = &mut self.losses.malformed;
                ring.drain(|bytes| match Event::from_bytes(bytes) {
                    Some(event) => {
                        events += 1;
                        f(&event, event.strings(bytes));
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
                if let Some(raw) = record::raw_sample(bytes, &layout) {
                    if let Some(event) = Event::from_bytes(raw) {
                        events += 1;
                        f(&event, event.strings(raw));
                        return;
                    }
                }
                match record::parse(bytes, &layout) {
                    Ok(parsed) => match parsed.record {
                        record::Record::Sample(sample) => {
                            match sample
                                .raw
                                .and_then(|raw| Some((Event::from_bytes(raw)?, raw)))
                            {
                                Some((event, raw)) => {
                                    events += 1;
                                    f(&event, event.strings(raw));
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
