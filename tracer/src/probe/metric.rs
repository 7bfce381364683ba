//! A `tracer serve` metric, attached: its own BPF object and probes (a reload adds or drops it
//! alone, and the others keep counting), its in-kernel cells read as labelled series.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tracer_common::{SlotConfig, AGG_BUCKET_BELOW, HIST_BUCKETS, HIST_OVERFLOW, HIST_SUM};

use super::aggregate::{self, CellKey, Counted};
use super::latency::LatencyPair;
use super::series::SeriesTable;
use super::{AttachOptions, Attacher, Probe};
use crate::bpf::Bpf;
use crate::kernel::tracefs::Tracefs;
use crate::output::metrics::{Family, MetricKind, Series, Value};
use crate::plan::serve::{MetricPlan, Source};
use crate::plan::Linear;
use crate::Error;

/// What is attached for a metric. Field order is drop order: the probes' events go before
/// the object whose programs they run.
// One per metric, never moved once attached: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Attached {
    Counted { probes: Vec<Probe>, bpf: Bpf },
    Latency { _pair: LatencyPair, bpf: Bpf },
}

/// One metric, counting.
pub struct Metric {
    pub plan: MetricPlan,
    table: SeriesTable,
    attached: Attached,
}

/// A metric's hits and what became of them, from the kernel's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hits {
    /// Hits that passed the filter (latency: calls measured); those of them the map had no
    /// room for are also in `lost`.
    pub counted: u64,
    /// Refused by the metric's filter.
    pub filtered: u64,
    /// Hits lost, by reason: `map_full` (the count map had no room for a new key),
    /// `no_start` (a latency end without its start), `replaced_start` (a latency start
    /// overwritten before its end).
    pub lost: Vec<(&'static str, u64)>,
}

/// One label set's counts, and the cells they come from.
#[derive(Default)]
struct Group {
    count: u64,
    sum: i128,
    buckets: BTreeMap<u64, u64>,
    cells: Vec<CellKey>,
    latency_group: Option<[u8; 16]>,
}

impl Metric {
    /// Expands, opens and attaches the metric's probes in an object of its own, and starts
    /// them. `idle`: how long a label set may stay unchanged before it is dropped.
    pub fn attach(plan: MetricPlan, fs: &Tracefs, idle: Duration) -> Result<Metric, Error> {
        let attached = match &plan.source {
            Source::Counted {
                specs,
                aggregation,
                filter,
            } => {
                let specs = super::expand(specs, fs)?;
                // tracer's own work is never counted.
                let base = SlotConfig {
                    exclude_tgid: std::process::id(),
                    ..SlotConfig::default()
                };
                let options = AttachOptions {
                    base,
                    aggregation: Some(aggregation),
                    filter: filter.as_ref(),
                    dispatch: super::attach::dispatch(&specs),
                    ..AttachOptions::default()
                };
                let rename = super::rename_tracepoint(fs);
                // The same object and programs as `tracer probe --count-by`: the same cost
                // per hit.
                let mut bpf =
                    Bpf::load_with(options.sizing(&specs, fs, rename.is_some(), false, None))?;
                // Before any probe: a rename the cache missed would stay cached.
                if rename.is_some() {
                    super::start_comm_cache(&mut bpf)?;
                }
                let probes = Attacher::new(fs, options).attach_all(&mut bpf, &specs)?;
                for probe in &probes {
                    probe.enable()?;
                }
                Attached::Counted { probes, bpf }
            }
            Source::Latency(latency) => {
                let (bpf, pair) = super::latency::attach(latency, fs, false)?;
                pair.enable()?;
                Attached::Latency { _pair: pair, bpf }
            }
        };
        Ok(Metric {
            table: SeriesTable::new(plan.max_series, idle),
            plan,
            attached,
        })
    }

    /// Follows each uprobe whose file was replaced at its path ([`Probe::follow`]): what was
    /// done, a line each (a latency metric's ends are not followed).
    pub fn follow(&self, fs: &Tracefs) -> Vec<Result<String, Error>> {
        let Attached::Counted { probes, bpf } = &self.attached else {
            return Vec::new();
        };
        (probes.iter())
            .filter_map(|probe| {
                let followed = probe.follow(bpf, fs).transpose()?;
                Some(followed.map(|f| f.line(&probe.name)))
            })
            .collect()
    }

    /// The probes attached, by name (a spec's expansion is one probe per match).
    pub fn probes(&self) -> Vec<String> {
        match &self.attached {
            Attached::Counted { probes, .. } => probes.iter().map(|p| p.name.clone()).collect(),
            Attached::Latency { .. } => self.plan.probe_names(),
        }
    }

    /// Label sets refused by the cap, and exported now.
    pub fn series_counts(&self) -> (u64, usize) {
        (self.table.dropped(), self.table.exported())
    }

    /// Reads the cells now: the family of the label sets exported.
    pub fn read(&mut self, now: Instant) -> Result<Family, Error> {
        let groups = self.groups()?;
        self.table.update(
            now,
            groups
                .iter()
                .map(|(labels, g)| (labels.as_slice(), g.count)),
        );
        let names = &self.plan.labels;
        let mut series: Vec<Series> = (groups.into_iter())
            .filter(|(labels, _)| self.table.is_exported(labels))
            .map(|(labels, group)| Series {
                labels: names.iter().cloned().zip(labels).collect(),
                value: self.value(group),
            })
            .collect();
        // A metric without labels has one series, 0 before its first hit: Prometheus's
        // rate() and increase() need the sample from the start.
        if names.is_empty() && series.is_empty() {
            series.push(Series {
                labels: Vec::new(),
                value: self.value(Group::default()),
            });
        }
        Ok(Family {
            name: self.plan.family(),
            help: self.plan.help.clone(),
            kind: match self.plan.is_histogram() {
                true => MetricKind::Histogram,
                false => MetricKind::Counter,
            },
            series,
        })
    }

    /// Drops the label sets idle for the timeout at `now`, and frees their cells in the kernel
    /// (room for new keys: a process's pid is never seen again once it exits).
    pub fn expire(&mut self, now: Instant) -> Result<(), Error> {
        let groups = self.groups()?;
        self.table.update(
            now,
            groups
                .iter()
                .map(|(labels, g)| (labels.as_slice(), g.count)),
        );
        let retired = self.table.expire(now);
        if retired.is_empty() {
            return Ok(());
        }
        let (mut cells, mut latency_groups) = (Vec::new(), Vec::new());
        for labels in &retired {
            if let Some(group) = groups.get(labels) {
                cells.extend_from_slice(&group.cells);
                latency_groups.extend(group.latency_group);
            }
        }
        match &mut self.attached {
            Attached::Counted { bpf, .. } => {
                bpf.forget_counts(&cells)?;
            }
            Attached::Latency { bpf, .. } => bpf.forget_latency_groups(&latency_groups)?,
        }
        Ok(())
    }

    /// What the kernel counted of the metric's hits.
    pub fn hits(&self) -> Result<Hits, Error> {
        Ok(match &self.attached {
            Attached::Counted { bpf, .. } => {
                let (hits, failed) = bpf.stats()?;
                let filtered = bpf.filtered()?;
                Hits {
                    counted: hits.saturating_sub(filtered),
                    filtered,
                    lost: vec![("map_full", failed)],
                }
            }
            Attached::Latency { bpf, .. } => {
                let [_, exits, no_start, _, replaced, filtered] = bpf.latency_stats()?;
                Hits {
                    counted: exits,
                    filtered,
                    lost: vec![("no_start", no_start), ("replaced_start", replaced)],
                }
            }
        })
    }

    /// Every label set read now, with its counts and cells.
    fn groups(&mut self) -> Result<BTreeMap<Vec<String>, Group>, Error> {
        let mut groups: BTreeMap<Vec<String>, Group> = BTreeMap::new();
        match (&mut self.attached, &self.plan.source) {
            (Attached::Counted { probes, bpf, .. }, Source::Counted { aggregation, .. }) => {
                let counted: Vec<Counted> = (probes.iter())
                    .map(|p| Counted {
                        name: &p.name,
                        slot: &p.slot,
                        sources: &p.sources,
                        decoder: &p.decoder,
                    })
                    .collect();
                for cell in aggregate::cells(bpf, &counted, aggregation)? {
                    let group = groups.entry(cell.labels).or_default();
                    group.count += cell.value.count;
                    group.sum += match cell.signed {
                        true => i128::from(cell.value.sum as i64),
                        false => i128::from(cell.value.sum),
                    };
                    *group.buckets.entry(cell.key.0.bucket).or_default() += cell.value.count;
                    group.cells.push(cell.key);
                }
            }
            (Attached::Latency { bpf, .. }, Source::Latency(plan)) => {
                for (key, total) in bpf.latency_histogram(false)? {
                    let labels = match &plan.by {
                        None => Vec::new(),
                        // A metric's latency is grouped by task keys only: no value names.
                        Some(by) => {
                            let names = super::latency::ValueNames::default();
                            vec![super::latency::group_value(by, &names, &key)]
                        }
                    };
                    let group = groups.entry(labels).or_default();
                    group.latency_group = plan.by.is_some().then_some(key.group);
                    match key.bucket {
                        HIST_SUM => group.sum = i128::from(total),
                        b if b < HIST_BUCKETS => {
                            group.count += total;
                            *group.buckets.entry(b).or_default() += total;
                        }
                        _ => {}
                    }
                }
                // A group whose calls all left (a sum cell alone) is not a series.
                groups.retain(|_, g| g.count > 0);
            }
            _ => unreachable!("a metric is attached as its plan says"),
        }
        Ok(groups)
    }

    /// A label set's exported value: its count, or its histogram.
    fn value(&self, group: Group) -> Value {
        match &self.plan.source {
            Source::Counted { aggregation, .. } if aggregation.value.is_none() => {
                Value::Number(group.count)
            }
            Source::Counted { aggregation, .. } => Value::Histogram {
                sum: group.sum as f64,
                count: group.count,
                buckets: value_buckets(&group.buckets, aggregation.linear),
            },
            Source::Latency(plan) => Value::Histogram {
                sum: group.sum as f64 / 1e9,
                count: group.count,
                buckets: latency_buckets(&group.buckets, plan.linear_step),
            },
        }
    }
}

/// The log2 buckets of a `hist` value a series exports: values 0 up to `2^VALUE_LOG2_TOP - 1`
/// (4 GiB for bytes), larger ones in `+Inf` only. Every series of a metric exports the same
/// list from its first scrape, as Prometheus requires to add series up by `le`.
pub const VALUE_LOG2_TOP: u64 = 32;

/// The log2 buckets of a latency a series exports: `le` from 128 ns (`2^7`, the calls quicker
/// than that in it too) doubling to about 68.7 s (`2^36` ns), longer calls in `+Inf` only.
pub const LATENCY_LOG2: std::ops::RangeInclusive<u64> = 6..=35;

/// A `hist` value's buckets with Prometheus upper bounds (values are integers: a bucket's
/// bound is its largest value), the same list for every series of the metric whatever it
/// has seen: log2 bucket `b` ends at `2^b - 1` (`b` up to [`VALUE_LOG2_TOP`]), negative
/// values at -1; linear bucket `b` at `min + (b + 1) * step - 1`, the values below `min` at
/// `min - 1`, those past the last bucket in `+Inf`.
pub fn value_buckets(cells: &BTreeMap<u64, u64>, linear: Option<Linear>) -> Vec<(f64, u64)> {
    let count = |b: u64| cells.get(&b).copied().unwrap_or(0);
    let (below_at, last) = match linear {
        Some(Linear { min, buckets, .. }) => ((i128::from(min) - 1) as f64, buckets.max(1) - 1),
        None => (-1.0, VALUE_LOG2_TOP),
    };
    let bound = |b: u64| -> f64 {
        match linear {
            Some(Linear { step, min, .. }) => {
                (i128::from(min) + i128::from(b + 1) * i128::from(step) - 1) as f64
            }
            None if b == 0 => 0.0,
            None => ((1u128 << b) - 1) as f64,
        }
    };
    let mut buckets = vec![(below_at, count(AGG_BUCKET_BELOW))];
    buckets.extend((0..=last).map(|b| (bound(b), count(b))));
    // Past the list: the linear overflow cell, and log2 buckets above the top.
    let above: u64 = (cells.iter())
        .filter(|(&b, _)| b != AGG_BUCKET_BELOW && b > last)
        .map(|(_, n)| n)
        .sum();
    buckets.push((f64::INFINITY, above));
    buckets
}

/// A latency histogram's buckets in seconds, the same list for every series: log2 bucket `b`
/// holds `[2^b, 2^(b+1))` ns (0 also holds 0), exported from [`LATENCY_LOG2`]'s first
/// (which takes the quicker calls too) to its last (the slower ones go to `+Inf`); linear
/// bucket `b` `[b * step, (b + 1) * step)`, all of them, the overflow row `+Inf`.
pub fn latency_buckets(cells: &BTreeMap<u64, u64>, linear_step: Option<u64>) -> Vec<(f64, u64)> {
    let count = |b: u64| cells.get(&b).copied().unwrap_or(0);
    let mut buckets: Vec<(f64, u64)> = match linear_step {
        Some(step) => (0..HIST_OVERFLOW)
            .map(|b| ((b + 1) as f64 * step as f64 / 1e9, count(b)))
            .collect(),
        None => {
            let (first, last) = (*LATENCY_LOG2.start(), *LATENCY_LOG2.end());
            let mut rows: Vec<(f64, u64)> = (first..=last)
                .map(|b| ((1u128 << (b + 1)) as f64 / 1e9, count(b)))
                .collect();
            rows[0].1 = (0..=first).map(count).sum();
            rows
        }
    };
    let shown = match linear_step {
        Some(_) => HIST_OVERFLOW,
        None => *LATENCY_LOG2.end() + 1,
    };
    let above = (shown..HIST_BUCKETS).map(count).sum();
    buckets.push((f64::INFINITY, above));
    buckets
}

/// tracer's own families: build info, probes attached, label sets refused by the caps and
/// exported, hits counted, filtered out and lost, per metric.
pub fn own_families(metrics: &[Metric]) -> Result<Vec<Family>, Error> {
    let family = |name: &str, help: &str, kind| Family {
        name: name.into(),
        help: help.into(),
        kind,
        series: Vec::new(),
    };
    let mut build = family(
        "tracer_build",
        "tracer's version, git commit and whether the tree was modified",
        MetricKind::Info,
    );
    build.series.push(Series {
        labels: vec![
            ("version".into(), env!("CARGO_PKG_VERSION").into()),
            ("commit".into(), env!("TRACER_GIT_COMMIT").into()),
            ("modified".into(), env!("TRACER_GIT_MODIFIED").into()),
        ],
        value: Value::Number(1),
    });
    let mut attached = family(
        "tracer_probe_attached",
        "1 for each probe attached, by metric and probe",
        MetricKind::Gauge,
    );
    let mut dropped = family(
        "tracer_dropped_series",
        "label sets not exported because the metric's max_series was reached",
        MetricKind::Counter,
    );
    let mut series = family(
        "tracer_series",
        "label sets exported now",
        MetricKind::Gauge,
    );
    let mut hits = family(
        "tracer_hits",
        "hits counted in the kernel",
        MetricKind::Counter,
    );
    let mut filtered = family(
        "tracer_filtered_hits",
        "hits the metric's filter refused",
        MetricKind::Counter,
    );
    let mut lost = family(
        "tracer_lost_hits",
        "hits not counted, by reason (map_full: no room for a new key)",
        MetricKind::Counter,
    );
    let metric_label = |m: &Metric| ("metric".to_string(), m.plan.family());
    for m in metrics {
        let number = |n: u64| Value::Number(n);
        for probe in m.probes() {
            attached.series.push(Series {
                labels: vec![metric_label(m), ("probe".into(), probe)],
                value: number(1),
            });
        }
        let (refused, exported) = m.series_counts();
        dropped.series.push(Series {
            labels: vec![metric_label(m)],
            value: number(refused),
        });
        series.series.push(Series {
            labels: vec![metric_label(m)],
            value: number(exported as u64),
        });
        let h = m.hits()?;
        hits.series.push(Series {
            labels: vec![metric_label(m)],
            value: number(h.counted),
        });
        filtered.series.push(Series {
            labels: vec![metric_label(m)],
            value: number(h.filtered),
        });
        for (reason, n) in h.lost {
            lost.series.push(Series {
                labels: vec![metric_label(m), ("reason".into(), reason.into())],
                value: number(n),
            });
        }
    }
    Ok(vec![build, attached, dropped, series, hits, filtered, lost])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracer_common::AGG_BUCKET_ABOVE;

    #[test]
    fn log2_value_buckets_are_one_fixed_list() {
        let cells = BTreeMap::from([(0, 1), (1, 2), (3, 4), (40, 6), (AGG_BUCKET_BELOW, 5)]);
        let buckets = value_buckets(&cells, None);
        // -1, 0, 1, 3, 7, ... 2^32 - 1, +Inf whatever the cells.
        assert_eq!(buckets.len(), 1 + 33 + 1);
        assert_eq!(
            &buckets[..5],
            [(-1.0, 5), (0.0, 1), (1.0, 2), (3.0, 0), (7.0, 4)]
        );
        assert_eq!(buckets[33], (4294967295.0, 0));
        assert_eq!(buckets[34], (f64::INFINITY, 6));
        let empty = value_buckets(&BTreeMap::new(), None);
        let bounds = |b: &[(f64, u64)]| b.iter().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(bounds(&empty), bounds(&buckets));
    }

    #[test]
    fn linear_value_buckets_are_min_to_max() {
        let linear = Some(Linear {
            step: 10,
            min: 0,
            buckets: 5,
        });
        let cells = BTreeMap::from([(1, 3), (AGG_BUCKET_ABOVE, 2)]);
        assert_eq!(
            value_buckets(&cells, linear),
            [
                (-1.0, 0),
                (9.0, 0),
                (19.0, 3),
                (29.0, 0),
                (39.0, 0),
                (49.0, 0),
                (f64::INFINITY, 2)
            ]
        );
    }

    #[test]
    fn latency_buckets_are_seconds_in_one_fixed_list() {
        let cells = BTreeMap::from([(0, 1), (6, 1), (10, 2), (40, 3)]);
        let log2 = latency_buckets(&cells, None);
        assert_eq!(log2.len(), 30 + 1);
        assert_eq!(log2[0], (128e-9, 2));
        assert_eq!(log2[4], (2048e-9, 2));
        assert_eq!(log2[29], ((1u64 << 36) as f64 / 1e9, 0));
        assert_eq!(log2[30], (f64::INFINITY, 3));
        let linear = latency_buckets(&BTreeMap::from([(1, 4), (HIST_OVERFLOW, 1)]), Some(1000));
        assert_eq!(linear.len(), 64);
        assert_eq!(&linear[..2], [(1e-6, 0), (2e-6, 4)]);
        assert_eq!(linear[63], (f64::INFINITY, 1));
    }
}
