//! Counts folded for printing: one counter's readings over `-r` runs per slot (a `Tally`),
//! per-place readings grouped into the printed slots, and the lines in perf's order.

use super::topology::{self, CpuPlace};
use super::{Counter, Place};
use crate::output::stat::{
    aggregate, fixunit, metric, Count, Line, Metric, MetricInput, Reading, Slot, Stats, TopoId,
};
use crate::plan::stat::Aggregation;

/// One counter's readings over `-r` runs in one slot.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub value: Stats,
    pub enabled: Stats,
    pub running: Stats,
    pub counted: bool,
}

impl Tally {
    pub fn push(&mut self, reading: Reading, scale: bool) {
        let scaled = reading.scaled(scale);
        self.counted |= scaled.is_some();
        self.value.push(scaled.unwrap_or(0.0));
        self.enabled.push(reading.enabled as f64);
        self.running.push(reading.running as f64);
    }
}

/// Every counter's tallies over the runs of `-r`, slot by slot.
#[derive(Debug)]
pub struct Totals {
    /// The printed slots (the first run's).
    pub slots: Vec<Slot>,
    /// Per counter and slot.
    pub tallies: Vec<Vec<Tally>>,
    /// Per counter: opened in every run.
    pub supported: Vec<bool>,
}

impl Totals {
    pub fn new(counters: usize) -> Totals {
        Totals {
            slots: Vec::new(),
            tallies: Vec::new(),
            supported: vec![true; counters],
        }
    }

    /// Adds one run's readings (per counter and slot) to the tallies.
    pub fn fold(
        &mut self,
        slots: Vec<Slot>,
        values: &[Vec<Option<Reading>>],
        supported: &[bool],
        scale: bool,
    ) {
        if self.tallies.is_empty() {
            self.tallies = vec![vec![Tally::default(); slots.len()]; self.supported.len()];
            self.slots = slots;
        }
        for (c, per_slot) in values.iter().enumerate() {
            for (s, reading) in per_slot.iter().enumerate() {
                if let (Some(t), Some(r)) = (self.tallies[c].get_mut(s), reading) {
                    t.push(*r, scale);
                }
            }
        }
        for (c, ok) in supported.iter().enumerate() {
            self.supported[c] &= *ok;
        }
    }
}

/// Groups per-place readings into printed slots: the global sum, or one slot per CPU/thread.
/// Returns the slots and, per counter and slot, the reading (`None`: never opened there).
pub fn slot_readings(
    aggregation: Aggregation,
    places: &[(Place, Slot)],
    readings: &[Vec<Option<Reading>>],
    topology: &[(u32, CpuPlace)],
) -> (Vec<Slot>, Vec<Vec<Option<Reading>>>) {
    if aggregation.is_topology() {
        // Each CPU's group, groups in perf's order (by id), readings summed per group.
        let group_of: Vec<Option<TopoId>> = (places.iter())
            .map(|(place, _)| match place {
                Place::Cpu(cpu) => (topology.iter())
                    .find(|(c, _)| c == cpu)
                    .and_then(|(_, p)| topology::group(p, aggregation)),
                Place::Task(_) => None,
            })
            .collect();
        let mut ids: Vec<TopoId> = group_of.iter().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let slots = (ids.iter())
            .map(|id| Slot::Group {
                id: *id,
                cpus: group_of.iter().filter(|g| *g == &Some(*id)).count() as u32,
            })
            .collect();
        let values = (readings.iter())
            .map(|per_place| {
                (ids.iter())
                    .map(|id| {
                        let opened: Vec<&Reading> = (per_place.iter().zip(&group_of))
                            .filter(|(_, g)| *g == &Some(*id))
                            .filter_map(|(r, _)| r.as_ref())
                            .collect();
                        (!opened.is_empty()).then(|| aggregate(opened))
                    })
                    .collect()
            })
            .collect();
        return (slots, values);
    }
    match aggregation {
        Aggregation::Global => (
            vec![Slot::Global],
            readings
                .iter()
                .map(|per_place| {
                    let opened: Vec<&Reading> = per_place.iter().flatten().collect();
                    vec![(!opened.is_empty()).then(|| aggregate(opened))]
                })
                .collect(),
        ),
        _ => (
            places.iter().map(|(_, slot)| slot.clone()).collect(),
            readings.to_vec(),
        ),
    }
}

/// Lines in perf's order (event by event, then slot by slot; threads by decreasing count).
pub fn build_lines(
    counters: &[Counter],
    supported: &[bool],
    slots: &[Slot],
    tallies: &[Vec<Tally>],
    wall_ns: f64,
    repeated: bool,
    skip_zero: bool,
) -> Vec<Line> {
    let mut lines = Vec::new();
    let metrics_of = |s: usize| -> Vec<MetricInput> {
        counters
            .iter()
            .enumerate()
            .map(|(c, counter)| MetricInput {
                role: counter.role,
                context: counter.context,
                value: (supported[c] && tallies[c][s].value.n > 0)
                    .then_some(tallies[c][s].value.mean),
            })
            .collect()
    };
    let inputs: Vec<Vec<MetricInput>> = (0..slots.len()).map(metrics_of).collect();
    for (c, counter) in counters.iter().enumerate() {
        let mut order: Vec<usize> = (0..slots.len()).collect();
        if matches!(slots.first(), Some(Slot::Thread { .. })) {
            order.sort_by(|&a, &b| {
                tallies[c][b]
                    .value
                    .mean
                    .total_cmp(&tallies[c][a].value.mean)
            });
        }
        for s in order {
            let tally = &tallies[c][s];
            // perf's `-a --per-thread` leaves out the threads that counted nothing.
            if skip_zero && (!tally.counted || tally.value.mean == 0.0) {
                continue;
            }
            let count = if !supported[c] {
                Count::NotSupported
            } else if !tally.counted {
                Count::NotCounted
            } else {
                Count::Value(tally.value.mean * counter.scale)
            };
            let (running, enabled) = match count {
                Count::NotSupported => (0, 0),
                _ => (tally.running.mean as u64, tally.enabled.mean as u64),
            };
            let noise = repeated.then(|| match slots[s] {
                Slot::Global if tally.counted => tally.value.relative_pct(),
                _ => 0.0,
            });
            let metric = match count {
                Count::Value(_) => metric(&inputs[s], c, wall_ns),
                _ => Metric::None,
            };
            // perf counts a group's CPUs as it sums them (`aggr_cb`) and stops at the first
            // whose counter did not run: a counter that ran on none of them shows 1.
            let slot = match (&slots[s], count) {
                (Slot::Group { id, .. }, Count::NotSupported | Count::NotCounted) => {
                    Slot::Group { id: *id, cpus: 1 }
                }
                (slot, _) => slot.clone(),
            };
            lines.push((
                s,
                Line {
                    slot,
                    count,
                    unit: counter.unit.clone(),
                    fractional: counter.scale.fract() != 0.0,
                    event: counter.name.clone(),
                    cgroup: counter.cgroup_name.clone(),
                    running,
                    enabled,
                    noise,
                    metric,
                },
            ));
        }
    }
    // perf prints topology groups group by group (`print_aggr`), CPUs and threads event by
    // event.
    if matches!(slots.first(), Some(Slot::Group { .. })) {
        lines.sort_by_key(|(s, _)| *s);
    }
    lines.into_iter().map(|(_, line)| line).collect()
}

/// The names of a `--metric-only` header, counter by counter. perf 6.1 asks each counter's
/// metric with a zero count against the first slot's other counts (`print_metric_headers`:
/// `perf_stat__print_shadow_stats(config, counter, 0, 0, ...)`), so a counter that is not
/// supported still names its metric (`Ghz` where no clock was counted, as perf spells it).
/// perf 6.1 names them with -A only: in the other modes its metric-only header has no names
/// (Debian's perf 6.1 on the test machine), and tracer's neither.
pub fn metric_header_units(
    counters: &[Counter],
    supported: &[bool],
    slots: &[Slot],
    tallies: &[Vec<Tally>],
    wall_ns: f64,
) -> Vec<String> {
    if !matches!(slots.first(), Some(Slot::Cpu(_))) {
        return Vec::new();
    }
    let first: Vec<MetricInput> = (counters.iter().enumerate())
        .map(|(c, counter)| MetricInput {
            role: counter.role,
            context: counter.context,
            value: (supported[c] && tallies[c][0].value.n > 0).then_some(tallies[c][0].value.mean),
        })
        .collect();
    (counters.iter().enumerate())
        .filter_map(|(c, counter)| {
            let mut inputs = first.clone();
            inputs[c].value = Some(0.0);
            match metric(&inputs, c, wall_ns) {
                Metric::Value { unit, .. } => Some(fixunit(&unit, &counter.name)),
                Metric::Blank(unit) => Some(fixunit(unit, &counter.name)),
                Metric::None => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::stat::Role;
    use crate::perf::{attr::Software, EventKind};

    fn counter(name: &str, role: Role, unit: &str, scale: f64) -> Counter {
        Counter {
            name: name.into(),
            kind: EventKind::Software(Software::PageFaults),
            flags: 0,
            precise: 0,
            group: None,
            role,
            context: 0,
            unit: unit.into(),
            scale,
            cgroup: None,
            cgroup_name: None,
            tool: None,
        }
    }

    fn reading(value: u64, enabled: u64, running: u64) -> Reading {
        Reading {
            value,
            enabled,
            running,
        }
    }

    #[test]
    fn the_global_slot_sums_places_and_skips_unopened_ones() {
        let places = [(Place::Cpu(0), Slot::Cpu(0)), (Place::Cpu(1), Slot::Cpu(1))];
        let readings = vec![
            vec![Some(reading(3, 10, 10)), Some(reading(4, 10, 5))],
            vec![None, None],
        ];
        let (slots, values) = slot_readings(Aggregation::Global, &places, &readings, &[]);
        assert_eq!(slots, [Slot::Global]);
        assert_eq!(values, [vec![Some(reading(7, 20, 15))], vec![None]]);
    }

    #[test]
    fn runs_fold_into_means_and_a_counter_missing_once_is_unsupported() {
        let mut totals = Totals::new(2);
        for (value, second_opened) in [(10, true), (30, false)] {
            let values = vec![vec![Some(reading(value, 5, 5))], vec![None]];
            totals.fold(vec![Slot::Global], &values, &[true, second_opened], true);
        }
        assert_eq!(totals.slots, [Slot::Global]);
        assert_eq!(totals.tallies[0][0].value.mean, 20.0);
        assert_eq!(totals.tallies[0][0].value.n, 2);
        assert_eq!(totals.tallies[1][0].value.n, 0);
        assert_eq!(totals.supported, [true, false]);
    }

    #[test]
    fn lines_scale_clocks_mark_unsupported_and_sort_threads_by_count() {
        let counters = [
            counter("task-clock", Role::Clock, "msec", 1e-6),
            counter("page-faults", Role::Other, "", 1.0),
        ];
        let slots = [
            Slot::Thread {
                comm: "a".into(),
                tid: 1,
            },
            Slot::Thread {
                comm: "b".into(),
                tid: 2,
            },
        ];
        let tally = |value: u64| {
            let mut t = Tally::default();
            t.push(reading(value, 100, 100), true);
            t
        };
        let tallies = vec![
            vec![tally(2_000_000), tally(5_000_000)],
            vec![tally(9), tally(1)],
        ];
        let lines = build_lines(
            &counters,
            &[true, false],
            &slots,
            &tallies,
            1e9,
            false,
            false,
        );
        let got: Vec<(&str, u32, Count)> = (lines.iter())
            .map(|l| match &l.slot {
                Slot::Thread { tid, .. } => (l.event.as_str(), *tid, l.count),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("task-clock", 2, Count::Value(5.0)),
                ("task-clock", 1, Count::Value(2.0)),
                ("page-faults", 1, Count::NotSupported),
                ("page-faults", 2, Count::NotSupported),
            ]
        );
        assert!(lines[0].fractional && !lines[2].fractional);
        assert_eq!((lines[2].running, lines[2].enabled), (0, 0));
    }

    #[test]
    fn metric_only_headers_name_metrics_per_cpu_only() {
        let counters = [
            counter("task-clock", Role::Clock, "msec", 1e-6),
            counter("cycles", Role::Cycles, "", 1.0),
            counter("instructions", Role::Instructions, "", 1.0),
            counter("page-faults", Role::Other, "", 1.0),
            counter("branch-misses", Role::BranchMisses, "", 1.0),
        ];
        let supported = [true, false, false, true, false];
        let counted = |value: u64| {
            let mut t = Tally::default();
            t.push(reading(value, 100, 100), true);
            t
        };
        let tallies: Vec<Vec<Tally>> = [2_000_000, 0, 0, 7, 0]
            .iter()
            .map(|v| vec![counted(*v), counted(*v)])
            .collect();
        let cpus = [Slot::Cpu(0), Slot::Cpu(1)];
        // Named whether counted or not, as perf's `print_metric_headers` names them.
        assert_eq!(
            metric_header_units(&counters, &supported, &cpus, &tallies, 1e8),
            [
                "CPUs utilized",
                "GHz",
                "insn per cycle",
                "/sec",
                "branch-misses of all branches"
            ]
        );
        // Without a counted clock, perf's spelling.
        let no_clock = [false, false, false, true, false];
        assert_eq!(
            metric_header_units(&counters, &no_clock, &cpus, &tallies, 1e8)[1],
            "Ghz"
        );
        // perf 6.1 names none outside -A.
        let global = [Slot::Global];
        assert!(metric_header_units(&counters, &supported, &global, &tallies, 1e8).is_empty());
    }

    #[test]
    fn a_group_line_that_did_not_count_names_one_cpu_as_perfs() {
        let counters = [
            counter("cycles", Role::Cycles, "", 1.0),
            counter("task-clock", Role::Clock, "msec", 1e-6),
        ];
        let mut counted = Tally::default();
        counted.push(reading(2_000_000, 100, 100), true);
        let tallies = vec![vec![Tally::default()], vec![counted]];
        let socket = Slot::Group {
            id: TopoId::Socket(0),
            cpus: 2,
        };
        let lines = build_lines(
            &counters,
            &[false, true],
            std::slice::from_ref(&socket),
            &tallies,
            1e8,
            false,
            false,
        );
        let cpus: Vec<u32> = (lines.iter())
            .map(|l| match l.slot {
                Slot::Group { cpus, .. } => cpus,
                _ => 0,
            })
            .collect();
        assert_eq!(cpus, [1, 2]);
    }
}
