//! `tracer latency`'s programs and maps: the pair's config, its programs (loaded, or linked to a
//! kernel function's trampoline), the histograms, counters and calls in flight.

use std::os::fd::OwnedFd;

use tracer_common::{names, HistKey, LatConfig, LAT_STAT_COUNT};

use super::{Bpf, Error, SlotKind};

/// The latency program of an end of `kind`: the start (`end` None), or an end at a function's
/// entry (`Some(false)`) or return (`Some(true)`).
pub fn latency_program(kind: SlotKind, end: Option<bool>) -> &'static str {
    match (kind, end) {
        (SlotKind::Tracepoint, None) => "lat_tp_entry",
        (_, None) => "lat_kp_entry",
        (SlotKind::Tracepoint, Some(_)) => "lat_tp_exit",
        (_, Some(true)) => "lat_kp_exit",
        (_, Some(false)) => "lat_kp_end",
    }
}

impl Bpf {
    /// Writes the latency programs' configuration (before any of them runs).
    pub fn set_latency_config(&mut self, config: LatConfig) -> Result<(), Error> {
        (self.maps.lat_config.get_mut().set(0, config, 0)).map_err(|source| Error::MapUpdate {
            map: names::LAT_CONFIG,
            source,
        })
    }

    /// Writes what the outliers of measured function `function` (0: the first) show of its
    /// start ([`tracer_common::LatOutlier`]).
    pub fn set_latency_outlier(
        &mut self,
        function: u32,
        outlier: tracer_common::LatOutlier,
    ) -> Result<(), Error> {
        (self.maps.lat_outlier.set(function, outlier, 0)).map_err(|source| Error::MapUpdate {
            map: names::LAT_OUTLIER,
            source,
        })
    }

    /// Loads the latency program for one end at a perf event of kind `kind`: the start
    /// (`end` None), or the end at an entry (`Some(false)`) or a return (`Some(true)`).
    /// Returns its name for [`Bpf::named_program_fd`].
    pub fn load_latency_program(
        &mut self,
        kind: SlotKind,
        end: Option<bool>,
    ) -> Result<&'static str, Error> {
        let name = latency_program(kind, end);
        // Several functions share the programs: loaded for the first.
        if self.named_program_fd(name).is_ok() {
            return Ok(name);
        }
        match self.load_program(name, kind) {
            // Told apart by their attach cookies, which the kernel may not have.
            Err(Error::Program { source, .. })
                if self.uses & tracer_common::USES_LAT_FUNCTIONS != 0 =>
            {
                Err(Error::NoCookies {
                    kind: "functions measured",
                    max: 1,
                    source,
                })
            }
            other => other.map(|()| name),
        }
    }

    /// Links the latency program for one end at kernel function `function` (vmlinux BTF id
    /// `btf_id`) through its trampoline: the start (`end` None), or an end at its entry
    /// (`Some(false)`) or return (`Some(true)`, fexit). [`Bpf::set_latency_config`] first:
    /// it runs from its link on.
    pub fn link_latency_function(
        &mut self,
        function: &str,
        btf_id: u32,
        end: Option<bool>,
    ) -> Result<OwnedFd, Error> {
        let name = match end {
            None => "lat_fn_entry",
            Some(false) => "lat_fn_end",
            Some(true) => "lat_fn_exit",
        };
        self.link_function(name, function, btf_id, end == Some(true), 0)
    }

    /// `tracer latency --filter` (the object must have been loaded with the filter's sizing).
    pub fn set_latency_filter(&mut self, filter: &tracer_common::Filter) -> Result<(), Error> {
        self.write_filter(tracer_common::LAT_FILTER_SLOT, filter)
    }

    /// Where a USDT start or end of the latency programs finds its arguments (`end`:
    /// `LAT_USDT_START` or `LAT_USDT_END`, also set in `LatConfig::usdt`).
    pub fn set_latency_usdt_args(
        &mut self,
        end: u32,
        args: &tracer_common::UsdtArgs,
    ) -> Result<(), Error> {
        self.write_usdt_args(end, args)
    }

    /// The latency histograms summed over CPUs: running totals, which are never cleared
    /// (removing a cell raced with the other CPU's updates and lost calls). With `reset_max`
    /// (interval mode) the maximum and minimum cells are zeroed after reading: they are the
    /// statistics that have no difference of totals.
    pub fn latency_histogram(&mut self, reset_max: bool) -> Result<Vec<(HistKey, u64)>, Error> {
        let hist = &mut self.maps.lat_hist;
        let mut cells = Vec::new();
        for item in hist.iter() {
            let (key, values) = item.map_err(|source| Error::MapUpdate {
                map: names::LAT_HIST,
                source,
            })?;
            cells.push((
                key,
                values.iter().fold(0u64, |a, v| {
                    if tracer_common::hist_kept_by_max(key.bucket) {
                        a.max(*v)
                    } else {
                        a + v
                    }
                }),
            ));
        }
        if reset_max {
            for (key, _) in cells
                .iter()
                .filter(|(k, _)| tracer_common::hist_kept_by_max(k.bucket))
            {
                let _ = hist.remove(key);
            }
        }
        // Without --by the histogram lives in a per-CPU array (cheaper per call): buckets,
        // then sum, max and min, under the all-zero group.
        let array = &mut self.maps.lat_array;
        for bucket in 0..=tracer_common::HIST_MIN {
            let values = array
                .get(&(bucket as u32), 0)
                .map_err(|source| Error::MapUpdate {
                    map: names::LAT_ARRAY,
                    source,
                })?;
            let value = if tracer_common::hist_kept_by_max(bucket) {
                values.iter().copied().max().unwrap_or(0)
            } else {
                values.iter().sum()
            };
            if value > 0 {
                cells.push((
                    HistKey {
                        group: [0; 16],
                        bucket,
                    },
                    value,
                ));
                if reset_max && tracer_common::hist_kept_by_max(bucket) {
                    let zeros = aya::maps::PerCpuValues::try_from(vec![0u64; values.len()])
                        .map_err(|e| Error::MapUpdate {
                            map: names::LAT_ARRAY,
                            source: aya::maps::MapError::IoError(e),
                        })?;
                    array
                        .set(bucket as u32, zeros, 0)
                        .map_err(|source| Error::MapUpdate {
                            map: names::LAT_ARRAY,
                            source,
                        })?;
                }
            }
        }
        Ok(cells)
    }

    /// `LAT_STATS` summed over CPUs: [entries, exits, exits without entry, outliers lost,
    /// starts replaced before their end].
    pub fn latency_stats(&self) -> Result<[u64; LAT_STAT_COUNT as usize], Error> {
        let stats = &self.maps.lat_stats;
        let mut out = [0u64; LAT_STAT_COUNT as usize];
        for (i, slot) in out.iter_mut().enumerate() {
            let values = stats
                .get(&(i as u32), 0)
                .map_err(|source| Error::MapUpdate {
                    map: names::LAT_STATS,
                    source,
                })?;
            *slot = values.iter().sum();
        }
        Ok(out)
    }

    /// Calls started and not (yet) ended: the entries left in `LAT_START`.
    pub fn latency_in_flight(&self) -> Result<u64, Error> {
        Ok(self.maps.lat_start.keys().filter(Result::is_ok).count() as u64)
    }

    /// Removes the latency histogram cells of `groups` (`tracer serve`: idle series).
    pub fn forget_latency_groups(&mut self, groups: &[[u8; 16]]) -> Result<(), Error> {
        let keys: Vec<HistKey> = (self.maps.lat_hist.keys())
            .filter_map(Result::ok)
            .filter(|k| groups.contains(&k.group))
            .collect();
        for key in keys {
            let _ = self.maps.lat_hist.remove(&key);
        }
        Ok(())
    }
}
