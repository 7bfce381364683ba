//! Reading what the programs counted: in-kernel aggregation (`COUNTS`, `STR_COUNTS`, the
//! per-CPU runs not yet in them), stack traces, and each slot's hits, failed outputs and
//! filtered hits (`STATS`).

use aya::maps::{MapData, PerCpuHashMap};
use tracer_common::{
    names, stat_cells, stat_failed, stat_filtered, stat_hits, AggKey, AggValue, RunCount,
};

use super::{Bpf, CellKey, Error, Slot};

/// The keys of a per-CPU count map, without their values.
pub(super) fn keys<K: aya::Pod>(
    map: &PerCpuHashMap<MapData, K, AggValue>,
    name: &'static str,
) -> Result<Vec<K>, Error> {
    (map.keys())
        .map(|key| key.map_err(|source| Error::MapUpdate { map: name, source }))
        .collect()
}

/// The cells of a per-CPU count map (`name`), each summed over CPUs.
pub(super) fn summed<K: aya::Pod>(
    map: &PerCpuHashMap<MapData, K, AggValue>,
    name: &'static str,
) -> Result<Vec<(K, AggValue)>, Error> {
    let mut cells = Vec::new();
    for item in map.iter() {
        let (key, values) = item.map_err(|source| Error::MapUpdate { map: name, source })?;
        let total = values.iter().fold(AggValue::default(), |a, v| AggValue {
            count: a.count + v.count,
            sum: a.sum.wrapping_add(v.sum),
        });
        cells.push((key, total));
    }
    Ok(cells)
}

impl Bpf {
    /// The in-kernel counts (`COUNTS`), summed over CPUs. Cells are never removed: a removal
    /// races with hits on other CPUs and would lose them, so intervals are deltas of these
    /// ever-growing totals.
    ///
    /// With run counts (`USES_RUN_COUNT`), each CPU's current run is added to its key. The
    /// runs are read before and after `COUNTS`: a CPU whose run ended in between (its hits
    /// may or may not be in what was read of `COUNTS`) makes the read start again, a few
    /// times; after that its run is left out of this read (counted late, never twice).
    pub fn counts(&self) -> Result<Vec<(AggKey, AggValue)>, Error> {
        let runs = self.has_runs();
        let mut attempts = 1;
        loop {
            let before = if runs { self.runs()? } else { Vec::new() };
            let mut cells = self.counted()?;
            let after = if runs { self.runs()? } else { Vec::new() };
            let settled = before.iter().zip(&after).all(|(b, a)| b.ended == a.ended);
            if !settled && attempts < 5 {
                attempts += 1;
                continue;
            }
            for (b, run) in before.iter().zip(&after) {
                // Whole (not copied mid-change), not ended while COUNTS was read, begun.
                if b.ended == run.ended && run.ended == run.ended_check && run.count != 0 {
                    match cells.iter_mut().find(|(key, _)| *key == run.key) {
                        Some((_, total)) => total.count += run.count,
                        None => cells.push((
                            run.key,
                            AggValue {
                                count: run.count,
                                sum: 0,
                            },
                        )),
                    }
                }
            }
            return Ok(cells);
        }
    }

    /// The keys in `COUNTS` now, without their per-CPU values (one syscall per key: cheap
    /// enough to look for new processes while a profile runs).
    pub fn count_keys(&self) -> Result<Vec<AggKey>, Error> {
        keys(&self.maps.counts, names::COUNTS)
    }

    /// The keys in `STR_COUNTS` now, without their values (as [`Bpf::count_keys`]).
    pub fn str_count_keys(&self) -> Result<Vec<tracer_common::StrAggKey>, Error> {
        keys(&self.maps.str_counts, names::STR_COUNTS)
    }

    /// `COUNTS`, summed over CPUs.
    pub(super) fn counted(&self) -> Result<Vec<(AggKey, AggValue)>, Error> {
        summed(&self.maps.counts, names::COUNTS)
    }

    /// `STR_COUNTS` (counts keyed by a string's content), summed over CPUs.
    pub fn str_counts(&self) -> Result<Vec<(tracer_common::StrAggKey, AggValue)>, Error> {
        summed(&self.maps.str_counts, names::STR_COUNTS)
    }

    /// Removes counted cells (`tracer serve`: series idle past their timeout), a string-keyed
    /// cell from `STR_COUNTS`. A cell that some CPU's current run still adds to is kept: its
    /// run would recreate it later with part of its hits. Returns the cells left in place.
    ///
    /// A hit that lands between the caller's last read and the removal is lost with the cell:
    /// callers remove only cells that have not changed for a long time.
    pub fn forget_counts(
        &mut self,
        cells: &[(AggKey, Option<[u8; tracer_common::KEY_STRLEN]>)],
    ) -> Result<usize, Error> {
        let running: Vec<AggKey> = match self.has_runs() {
            false => Vec::new(),
            true => (self.runs()?.into_iter())
                .filter(|r| r.count != 0)
                .map(|r| r.key)
                .collect(),
        };
        let mut kept = 0;
        for (key, text) in cells {
            if running.contains(key) {
                kept += 1;
                continue;
            }
            // Already gone (ENOENT) is what was asked.
            let _ = match text {
                Some(text) => self.maps.str_counts.remove(&tracer_common::StrAggKey {
                    key: *key,
                    text: *text,
                }),
                None => self.maps.counts.remove(key),
            };
        }
        Ok(kept)
    }

    /// Takes `key`'s cell out of `COUNTS` with what each CPU counted in it when it left, in one
    /// step (a hit is either in the values or in a cell it made anew); `None` where the kernel
    /// cannot (before 5.14), said once and remembered.
    #[allow(unsafe_code)]
    fn take_count(&self, key: &AggKey) -> Option<std::io::Result<Option<Vec<AggValue>>>> {
        use std::os::fd::AsFd as _;
        let mut fd = self.maps.counts_fd.borrow_mut();
        let map = fd.as_ref()?;
        let cpus = aya::util::nr_cpus().ok()?;
        let mut values = vec![AggValue::default(); cpus];
        // SAFETY: AggKey and AggValue are plain `repr(C)` data (aya::Pod) of the map's key and
        // (8-aligned) value sizes; `values` has one value per possible CPU, as the kernel
        // writes a per-CPU map's.
        let (key_bytes, value_bytes) = unsafe {
            (
                std::slice::from_raw_parts(
                    (key as *const AggKey).cast::<u8>(),
                    size_of::<AggKey>(),
                ),
                std::slice::from_raw_parts_mut(
                    values.as_mut_ptr().cast::<u8>(),
                    cpus * size_of::<AggValue>(),
                ),
            )
        };
        match crate::perf::sys::bpf_map_lookup_and_delete(map.as_fd(), key_bytes, value_bytes) {
            Ok(true) => Some(Ok(Some(values))),
            Ok(false) => Some(Ok(None)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | 524 /* ENOTSUPP */)) => {
                *fd = None;
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// Puts a cell taken out by [`Bpf::take_count`] back where no hit made it anew (in one
    /// step: `BPF_NOEXIST`), else adds it to the one made.
    fn put_back_count(&mut self, key: &AggKey, mut values: Vec<AggValue>) -> Result<(), Error> {
        const BPF_NOEXIST: u64 = 1;
        let error = |source| Error::MapUpdate {
            map: names::COUNTS,
            source,
        };
        let io = |io_error| {
            error(aya::maps::MapError::SyscallError(aya::sys::SyscallError {
                call: "bpf_map_update_elem",
                io_error,
            }))
        };
        let whole = aya::maps::PerCpuValues::try_from(values.clone()).map_err(io)?;
        if self.maps.counts.insert(key, whole, BPF_NOEXIST).is_ok() {
            return Ok(());
        }
        if let Ok(now) = self.maps.counts.get(key, 0) {
            for (value, more) in values.iter_mut().zip(now.iter()) {
                value.count += more.count;
                value.sum = value.sum.wrapping_add(more.sum);
            }
        }
        let values = aya::maps::PerCpuValues::try_from(values).map_err(io)?;
        self.maps.counts.insert(key, values, 0).map_err(error)
    }

    /// Removes counted cells whose owner is gone (`-I` reports, see
    /// `probe::aggregate::evict`): each only while its total is still the `expected` one the
    /// caller read and reported, and no CPU's current run adds to it (its run would recreate
    /// it with hits already reported). Returns, per cell, whether it was removed.
    pub fn evict_counts(&mut self, cells: &[(CellKey, AggValue)]) -> Result<Vec<bool>, Error> {
        let running: Vec<AggKey> = match self.has_runs() {
            false => Vec::new(),
            true => (self.runs()?.into_iter())
                .filter(|r| r.count != 0)
                .map(|r| r.key)
                .collect(),
        };
        let total = |values: &[AggValue]| {
            values.iter().fold(AggValue::default(), |a, v| AggValue {
                count: a.count + v.count,
                sum: a.sum.wrapping_add(v.sum),
            })
        };
        let mut removed = Vec::with_capacity(cells.len());
        for ((key, text), expected) in cells {
            if running.contains(key) {
                removed.push(false);
                continue;
            }
            // A cell that changed since it was read (its pid taken by a new process) is kept.
            let done = match text {
                Some(text) => {
                    let key = tracer_common::StrAggKey {
                        key: *key,
                        text: *text,
                    };
                    let now = self.maps.str_counts.get(&key, 0).map(|v| total(&v));
                    now.is_ok_and(|now| now == *expected)
                        && self.maps.str_counts.remove(&key).is_ok()
                }
                None => {
                    // A cell that grew since the read stays as it is (a hot cell would only be
                    // made again); one that did not is taken out and read in one step, and
                    // goes back whole if a hit came in between (the read, then the removal,
                    // lost such a hit).
                    let now = self.maps.counts.get(key, 0).map(|v| total(&v));
                    if !now.is_ok_and(|now| now == *expected) {
                        removed.push(false);
                        continue;
                    }
                    match self.take_count(key) {
                        Some(Ok(Some(values))) => {
                            let same = total(&values) == *expected;
                            if !same {
                                self.put_back_count(key, values)?;
                            }
                            same
                        }
                        Some(Ok(None)) => false,
                        Some(Err(source)) => {
                            return Err(Error::MapUpdate {
                                map: names::COUNTS,
                                source: aya::maps::MapError::SyscallError(aya::sys::SyscallError {
                                    call: "bpf_map_lookup_and_delete_elem",
                                    io_error: source,
                                }),
                            })
                        }
                        // Kernels before 5.14: removed after the read (a hit between the two
                        // is lost with the cell).
                        None => self.maps.counts.remove(key).is_ok(),
                    }
                }
            };
            removed.push(done);
        }
        Ok(removed)
    }

    /// Each CPU's run count (`RUN_COUNT`).
    pub(super) fn runs(&self) -> Result<Vec<RunCount>, Error> {
        let values = self
            .maps
            .run_count
            .get(&0, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::RUN_COUNT,
                source,
            })?;
        Ok(values.iter().copied().collect())
    }

    /// Removes stacks from `STACKS` (their counts are reported and gone): their buckets take
    /// new stacks again, and each id may come back holding another stack.
    pub fn forget_stacks(&mut self, ids: &[u32]) {
        for id in ids {
            // Already gone (ENOENT) is what was asked.
            let _ = self.maps.stacks.remove(id);
        }
    }

    /// The instruction pointers of stack `id` (innermost first), as `bpf_get_stackid` stored
    /// them; `None` when the id is unknown.
    pub fn stack(&self, id: u32) -> Result<Option<Vec<u64>>, Error> {
        match self.maps.stacks.get(&id, 0) {
            Ok(trace) => Ok(Some(trace.frames().iter().map(|f| f.ip).collect())),
            Err(aya::maps::MapError::KeyNotFound) => Ok(None),
            Err(source) => Err(Error::MapUpdate {
                map: names::STACKS,
                source,
            }),
        }
    }

    /// One `STATS` counter summed over CPUs.
    fn stat(&self, index: u32) -> Result<u64, Error> {
        let values = (self.maps.stats.get(&index, 0)).map_err(|source| Error::MapUpdate {
            map: names::STATS,
            source,
        })?;
        Ok(values.iter().sum())
    }

    /// The cells a slot has added to the count maps so far, summed over CPUs (one lookup).
    pub fn slot_cells(&self, slot: &Slot) -> Result<u64, Error> {
        self.stat(stat_cells(slot.id))
    }

    /// Hits of a slot that its `--filter` refused, summed over CPUs.
    pub fn slot_filtered(&self, slot: &Slot) -> Result<u64, Error> {
        self.stat(stat_filtered(slot.id))
    }

    /// A slot's counters summed over CPUs: (hits that passed the filters, failed outputs).
    pub fn slot_stats(&self, slot: &Slot) -> Result<(u64, u64), Error> {
        Ok((
            self.stat(stat_hits(slot.id))?,
            self.stat(stat_failed(slot.id))?,
        ))
    }

    /// Hits the value filters of all taken slots refused.
    pub fn filtered(&self) -> Result<u64, Error> {
        (self.used.iter()).try_fold(0, |n, &id| Ok(n + self.stat(stat_filtered(id))?))
    }

    /// All taken slots' counters summed: (hits, failed outputs).
    pub fn stats(&self) -> Result<(u64, u64), Error> {
        (self.used.iter()).try_fold((0, 0), |(hits, failed), &id| {
            Ok((
                hits + self.stat(stat_hits(id))?,
                failed + self.stat(stat_failed(id))?,
            ))
        })
    }
}
