//! perf stat's shadow metrics: what a line prints beside its count (`insn per cycle`,
//! `of all branches`, `CPUs utilized`, rates per second).

use super::Role;
/// How a metric value is printed (perf's printf formats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricFormat {
    /// `%8.3f`
    Ratio,
    /// `%7.2f ` (insn per cycle)
    PerCycle,
    /// `%7.2f%%`
    Percent,
    /// `%8.3f %%` (of all cache refs)
    WidePercent,
}

impl MetricFormat {
    pub(super) fn apply(self, value: f64) -> String {
        match self {
            MetricFormat::Ratio => format!("{value:8.3}"),
            MetricFormat::PerCycle => format!("{value:7.2} "),
            MetricFormat::Percent => format!("{value:7.2}%"),
            MetricFormat::WidePercent => format!("{value:8.3} %"),
        }
    }
}

/// The derived metric after `#`.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// No metric for this counter.
    None,
    /// The metric exists but its other operand was not counted (perf prints blanks).
    Blank(&'static str),
    Value {
        value: f64,
        format: MetricFormat,
        unit: String,
    },
}

/// One counter in one aggregation slot, as metrics need it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricInput {
    pub role: Role,
    /// Privilege context (the exclude_* modifiers): metrics pair counters of the same context.
    pub context: u8,
    /// The scaled count in the counter's own unit (ns for clocks); `None` if unsupported.
    /// A counter that is supported but did not run counts as 0, as in perf.
    pub value: Option<f64>,
}

fn cache_unit(id: u8) -> &'static str {
    match id {
        0 => "of all L1-dcache accesses",
        1 => "of all L1-icache accesses",
        2 => "of all LL-cache accesses",
        3 => "of all dTLB cache accesses",
        4 => "of all iTLB cache accesses",
        _ => "of all cache accesses",
    }
}

/// perf's `convert_unit_double`: a rate with a K/M/G prefix.
pub(super) fn per_second(rate: f64) -> (f64, String) {
    if rate >= 1e9 {
        (rate / 1e9, "G/sec".into())
    } else if rate >= 1e6 {
        (rate / 1e6, "M/sec".into())
    } else if rate >= 1e3 {
        (rate / 1e3, "K/sec".into())
    } else {
        (rate, "/sec".into())
    }
}

/// The metric of `slot[index]` given every counter of the same slot (all counters of one CPU,
/// one thread, or the global totals) and the wall time the counts cover, in ns.
pub fn metric(slot: &[MetricInput], index: usize, wall_ns: f64) -> Metric {
    let me = slot[index];
    let Some(value) = me.value else {
        return Metric::None;
    };
    let find = |role: Role| {
        slot.iter()
            .find(|c| c.role == role && c.context == me.context)
            .and_then(|c| c.value)
    };
    let clocks: Vec<f64> = slot
        .iter()
        .filter(|c| c.role == Role::Clock)
        .filter_map(|c| c.value)
        .collect();
    let nsecs = (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64);
    let ratio =
        |unit: &'static str, other: Option<f64>, format: MetricFormat, pct: bool| match other {
            Some(total) => Metric::Value {
                value: if total != 0.0 {
                    value / total * if pct { 100.0 } else { 1.0 }
                } else {
                    0.0
                },
                format,
                unit: unit.into(),
            },
            None => Metric::Blank(unit),
        };
    match me.role {
        Role::Clock => {
            if wall_ns > 0.0 {
                Metric::Value {
                    value: value / wall_ns,
                    format: MetricFormat::Ratio,
                    unit: "CPUs utilized".into(),
                }
            } else {
                Metric::Blank("CPUs utilized")
            }
        }
        Role::Cycles => match nsecs {
            Some(ns) if ns > 0.0 => Metric::Value {
                value: value / ns,
                format: MetricFormat::Ratio,
                unit: "GHz".into(),
            },
            // perf's spelling in this case.
            _ => Metric::Blank("Ghz"),
        },
        Role::Instructions => match find(Role::Cycles) {
            Some(cycles) if cycles > 0.0 => Metric::Value {
                value: value / cycles,
                format: MetricFormat::PerCycle,
                unit: "insn per cycle".into(),
            },
            _ => Metric::Blank("insn per cycle"),
        },
        Role::BranchMisses => ratio(
            "of all branches",
            find(Role::Branches),
            MetricFormat::Percent,
            true,
        ),
        Role::CacheMisses => ratio(
            "of all cache refs",
            find(Role::CacheReferences),
            MetricFormat::WidePercent,
            true,
        ),
        Role::CacheLoadMisses(id) => ratio(
            cache_unit(id),
            find(Role::CacheLoads(id)),
            MetricFormat::Percent,
            true,
        ),
        Role::StalledFrontend | Role::StalledBackend => {
            let unit = if me.role == Role::StalledFrontend {
                "frontend cycles idle"
            } else {
                "backend cycles idle"
            };
            ratio(
                unit,
                Some(find(Role::Cycles).unwrap_or(0.0)),
                MetricFormat::Percent,
                true,
            )
        }
        Role::Branches | Role::CacheReferences | Role::CacheLoads(_) | Role::Other => match nsecs {
            Some(ns) => {
                let (value, unit) = if ns != 0.0 {
                    per_second(1e9 * value / ns)
                } else {
                    (0.0, "/sec".into())
                };
                Metric::Value {
                    value,
                    format: MetricFormat::Ratio,
                    unit,
                }
            }
            None => Metric::None,
        },
    }
}
