//! Where the programs' events go: the per-CPU perf rings wired into `EVENTS`, or the shared BPF
//! ring buffer, and the per-CPU counts of what was written and lost.

use std::os::fd::{AsRawFd, BorrowedFd};

use aya::maps::{Map, MapData, RingBuf};
use tracer_common::{names, stat_failed, stat_filtered, stat_hits};

use super::{Bpf, Error};

/// The BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) shared by every CPU, mapped by aya.
pub struct SharedRing {
    ring: RingBuf<MapData>,
    /// Its data size.
    bytes: usize,
}

impl SharedRing {
    /// Hands the records committed now to `f` in ring order, releasing each after it: at most
    /// a ring's worth. The producers refill the ring while it is read, and a flood would
    /// otherwise keep one drain going for as long as it lasts, past `-d` and Ctrl-C (17 s of
    /// a `-d 0.5` run on an emulated CPU). A record is its 8-byte header and its data, padded
    /// to 8 bytes.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) {
        let mut read = 0;
        while read < self.bytes {
            let Some(item) = self.ring.next() else {
                break;
            };
            read += 8 + item.len().next_multiple_of(8);
            f(&item);
        }
    }
}

impl AsRawFd for SharedRing {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.ring.as_raw_fd()
    }
}

impl Bpf {
    /// Puts the per-CPU BPF_OUTPUT event of `cpu` into `EVENTS[cpu]`, so that
    /// `bpf_perf_event_output(BPF_F_CURRENT_CPU)` on that CPU writes into its ring.
    pub fn set_output(&mut self, cpu: u32, event: BorrowedFd<'_>) -> Result<(), Error> {
        self.maps
            .events
            .set(cpu, event.as_raw_fd() as u32, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::EVENTS,
                source,
            })
    }

    /// The BPF ring buffer events go to when the object was loaded with [`Sizing::ringbuf`]
    /// (once: it is moved out).
    pub fn take_ringbuf(&mut self) -> Result<SharedRing, Error> {
        let map = (self.maps.ringbuf.take()).ok_or(Error::Map {
            map: names::RINGBUF,
        })?;
        let bytes = match &map {
            Map::RingBuf(data) => data.info().map(|i| i.max_entries() as usize).ok(),
            _ => None,
        };
        let ring = RingBuf::try_from(map).map_err(|_| Error::Map {
            map: names::RINGBUF,
        })?;
        Ok(SharedRing {
            ring,
            bytes: bytes.ok_or(Error::Map {
                map: names::RINGBUF,
            })?,
        })
    }

    /// Failed outputs (events lost because a ring was full) per CPU, over all taken slots:
    /// exact, unlike `PERF_RECORD_LOST`, which the kernel only writes at the next successful
    /// output on that ring.
    pub fn lost_per_cpu(&self) -> Result<Vec<(u32, u64)>, Error> {
        let failed = self.per_cpu(stat_failed)?;
        Ok((failed.into_iter().enumerate())
            .map(|(cpu, n)| (cpu as u32, n))
            .collect())
    }

    /// Per CPU, the hits its programs have written or are writing into the output rings: hits
    /// less failed outputs and filtered hits, over all taken slots (for slots that stream every
    /// hit they count). A CPU's breakpoint programs run one after another (interrupts are off
    /// in the debug trap), each counting its hit before stamping it, so once a reader has
    /// received that many of a CPU's events it holds every event that CPU stamped before the
    /// counters were read.
    pub fn written_per_cpu(&self) -> Result<Vec<u64>, Error> {
        // Hits first: a hit's failure or filtering is counted after its hit.
        let hits = self.per_cpu(stat_hits)?;
        let gone = self.per_cpu(stat_failed)?;
        let filtered = self.per_cpu(stat_filtered)?;
        Ok((hits.iter().zip(gone).zip(filtered))
            .map(|((h, f), x)| h.saturating_sub(f + x))
            .collect())
    }

    /// One `STATS` counter of every taken slot, summed per CPU.
    fn per_cpu(&self, counter: fn(u32) -> u32) -> Result<Vec<u64>, Error> {
        let mut per_cpu: Vec<u64> = Vec::new();
        for &id in &self.used {
            let values =
                (self.maps.stats.get(&counter(id), 0)).map_err(|source| Error::MapUpdate {
                    map: names::STATS,
                    source,
                })?;
            per_cpu.resize(per_cpu.len().max(values.len()), 0);
            for (sum, n) in per_cpu.iter_mut().zip(values.iter()) {
                *sum += n;
            }
        }
        Ok(per_cpu)
    }
}
