//! Stat event specs resolved against this kernel: PMU terms encoded, tracepoints and probes
//! looked up, breakpoints placed.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::open::open_cgroup;
use super::*;
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::tracefs::Tracefs;
use crate::output::stat::Role;
use crate::perf::attr::{flag, CacheOp, CacheResult, Hardware, Software};
use crate::perf::{self, pmu::Pmus, EventKind};
use crate::plan;
use crate::plan::stat::{EventSpec, Source, StatPlan};
use crate::Error;

/// Resolves every event against this kernel: tracepoint ids, PMU types and terms, probe
/// targets, cgroup directories.
pub fn resolve(plan: &StatPlan, legacy: &mut Vec<LegacyKprobe>) -> Result<Vec<Counter>, Error> {
    let mut tracefs: Option<Tracefs> = None;
    let mut fs = || -> Result<Tracefs, Error> {
        if tracefs.is_none() {
            tracefs = Some(Tracefs::locate()?);
        }
        Ok(tracefs.clone().expect("set above"))
    };
    let pmus = Pmus::default();
    let mut cgroups: Vec<(String, Arc<OwnedFd>)> = Vec::new();
    let mut counters = Vec::new();
    for (index, (spec, cgroup)) in plan.events.iter().zip(&plan.cgroups).enumerate() {
        let cgroup = match cgroup {
            Some(name) => match cgroups.iter().find(|(n, _)| n == name) {
                Some((_, fd)) => Some((name.clone(), fd.clone())),
                None => {
                    let fd = open_cgroup(name)?;
                    cgroups.push((name.clone(), fd.clone()));
                    Some((name.clone(), fd))
                }
            },
            None => None,
        };
        for (name, kind, role, unit, scale) in resolve_one(spec, &mut fs, &pmus, legacy, index)? {
            let hardware = matches!(
                kind,
                EventKind::Hardware(_) | EventKind::HwCache { .. } | EventKind::Raw(_)
            );
            let mut flags = spec.modifiers.flags();
            // perf counts hardware events on the host only unless G/H/u say otherwise.
            if hardware && spec.modifiers == plan::stat::Modifiers::default() {
                flags |= flag::EXCLUDE_GUEST;
            }
            counters.push(Counter {
                name,
                kind,
                flags,
                precise: spec.modifiers.precise,
                group: spec.group,
                role,
                context: spec.modifiers.context(),
                unit,
                scale,
                cgroup: cgroup.as_ref().map(|(_, fd)| fd.clone()),
                cgroup_name: cgroup.as_ref().map(|(n, _)| n.clone()),
                tool: match spec.source {
                    Source::Tool(tool) => Some(tool),
                    _ => None,
                },
            });
        }
    }
    Ok(counters)
}

pub type Resolved = (String, EventKind, Role, String, f64);

pub fn resolve_one(
    spec: &EventSpec,
    fs: &mut dyn FnMut() -> Result<Tracefs, Error>,
    pmus: &Pmus,
    legacy: &mut Vec<LegacyKprobe>,
    index: usize,
) -> Result<Vec<Resolved>, Error> {
    let plain =
        |kind: EventKind, role: Role| vec![(spec.name.clone(), kind, role, String::new(), 1.0)];
    Ok(match &spec.source {
        Source::Software(sw) => {
            if matches!(sw, Software::TaskClock | Software::CpuClock) {
                vec![(
                    spec.name.clone(),
                    EventKind::Software(*sw),
                    Role::Clock,
                    "msec".into(),
                    1e-6,
                )]
            } else {
                plain(EventKind::Software(*sw), Role::Other)
            }
        }
        Source::Hardware(hw) => plain(EventKind::Hardware(*hw), hardware_role(*hw)),
        Source::Cache { id, op, result } => plain(
            EventKind::HwCache {
                id: *id,
                op: *op,
                result: *result,
            },
            match (op, result) {
                (CacheOp::Read, CacheResult::Access) => Role::CacheLoads(*id as u8),
                (CacheOp::Read, CacheResult::Miss) => Role::CacheLoadMisses(*id as u8),
                _ => Role::Other,
            },
        ),
        Source::Raw(config) => plain(EventKind::Raw(*config), Role::Other),
        // Never opened: the kind only fills the slot.
        Source::Tool(_) => vec![(
            spec.name.clone(),
            EventKind::Software(Software::Dummy),
            Role::Other,
            "ns".into(),
            1.0,
        )],
        Source::Breakpoint { kind, addr, len } => plain(
            EventKind::Breakpoint {
                kind: *kind,
                addr: *addr,
                len: *len,
            },
            Role::Other,
        ),
        Source::Pmu { pmu, terms } => vec![pmu_event(spec, pmus, pmu, terms)?],
        Source::Tracepoint { category, name } => tracepoints(spec, &fs()?, category, name)?,
        Source::Probe(probe) => resolve_probe(spec, probe, fs, legacy, index)?,
    })
}

/// perf stat's role of a generic hardware event (what its shadow metrics read it as).
fn hardware_role(hw: Hardware) -> Role {
    match hw {
        Hardware::CpuCycles => Role::Cycles,
        Hardware::Instructions => Role::Instructions,
        Hardware::BranchInstructions => Role::Branches,
        Hardware::BranchMisses => Role::BranchMisses,
        Hardware::CacheReferences => Role::CacheReferences,
        Hardware::CacheMisses => Role::CacheMisses,
        Hardware::StalledCyclesFrontend => Role::StalledFrontend,
        Hardware::StalledCyclesBackend => Role::StalledBackend,
        _ => Role::Other,
    }
}

/// `pmu/terms/`: the PMU by name (with a did-you-mean), its terms encoded.
fn pmu_event(
    spec: &EventSpec,
    pmus: &Pmus,
    pmu: &str,
    terms: &[plan::stat::PmuTerm],
) -> Result<Resolved, Error> {
    let found = pmus.get(pmu)?.ok_or_else(|| {
        let names = pmus.names();
        let similar = plan::similar(pmu, names.iter().map(String::as_str), 3);
        let mut hints = vec![format!("PMUs here: {}", names.join(", "))];
        if let Some(best) = similar.first() {
            hints.insert(0, format!("did you mean '{best}'?"));
        }
        Error::usage(format!("no PMU '{pmu}' in event '{}'", spec.name), hints)
    })?;
    let (words, unit, scale) = encode_pmu(pmus, &found, terms, &spec.name)?;
    Ok((
        spec.name.clone(),
        EventKind::Pmu {
            pmu_type: found.type_,
            config: words[0],
            config1: words[1],
            config2: words[2],
        },
        Role::Other,
        unit,
        scale,
    ))
}

/// A tracepoint by name, or every one a glob matches in the kernel's directory order (as
/// perf prints them).
fn tracepoints(
    spec: &EventSpec,
    fs: &Tracefs,
    category: &str,
    name: &str,
) -> Result<Vec<Resolved>, Error> {
    let glob = |s: &str| s.contains(['*', '?']);
    if !glob(category) && !glob(name) {
        // The same did-you-mean as `tracer probe`.
        let id = fs
            .tracepoint_id(category, name)
            .map_err(|e| crate::probe::tracepoint_error(e, fs, category, name))?;
        return Ok(vec![(
            spec.name.clone(),
            EventKind::Tracepoint(id),
            Role::Other,
            String::new(),
            1.0,
        )]);
    }
    let matches: Vec<(String, String)> = fs
        .tracepoints_in_directory_order()
        .into_iter()
        .filter(|(c, n)| plan::glob_match(category, c) && plan::glob_match(name, n))
        .collect();
    if matches.is_empty() {
        return Err(Error::usage(
            format!("'{category}:{name}' matches no tracepoint"),
            vec![format!("list them with `tracer list '{category}:*'`")],
        ));
    }
    let mut out = Vec::new();
    for (c, n) in matches {
        let id = fs.tracepoint_id(&c, &n)?;
        out.push((
            format!("{c}:{n}"),
            EventKind::Tracepoint(id),
            Role::Other,
            String::new(),
            1.0,
        ));
    }
    Ok(out)
}

/// Encodes `pmu/terms/`: format fields, `config*` words directly, and event aliases from
/// `events/NAME` (with their `.unit` and `.scale`).
pub fn encode_pmu(
    pmus: &Pmus,
    pmu: &perf::pmu::Pmu,
    terms: &[plan::stat::PmuTerm],
    event: &str,
) -> Result<([u64; 3], String, f64), Error> {
    let mut words = [0u64; 3];
    let mut fields: Vec<(String, u64)> = Vec::new();
    let (mut unit, mut scale) = (String::new(), 1.0);
    let events_dir = pmus.root().join(&pmu.name).join("events");
    for term in terms {
        match (term.name.as_str(), term.value) {
            ("config", Some(v)) => words[0] |= v,
            ("config1", Some(v)) => words[1] |= v,
            ("config2", Some(v)) => words[2] |= v,
            (name, Some(v)) => fields.push((name.to_string(), v)),
            (name, None) if pmu.format.contains_key(name) => fields.push((name.to_string(), 1)),
            (name, None) => {
                let alias = std::fs::read_to_string(events_dir.join(name)).map_err(|_| {
                    let mut known: Vec<String> = pmu.format.keys().cloned().collect();
                    if let Ok(dir) = std::fs::read_dir(&events_dir) {
                        known.extend(
                            dir.flatten()
                                .map(|e| e.file_name().to_string_lossy().into_owned())
                                .filter(|n| !n.contains('.')),
                        );
                    }
                    let similar = plan::similar(name, known.iter().map(String::as_str), 1);
                    let mut hints = vec![format!(
                        "{} knows: {}",
                        pmu.name,
                        if known.is_empty() {
                            "no terms".to_string()
                        } else {
                            known.join(", ")
                        }
                    )];
                    if let Some(best) = similar.first() {
                        hints.insert(0, format!("did you mean '{best}'?"));
                    }
                    Error::usage(format!("unknown term '{name}' in event '{event}'"), hints)
                })?;
                for part in alias.trim().split(',').filter(|p| !p.is_empty()) {
                    let (key, value) = part.split_once('=').unwrap_or((part, "1"));
                    let value = plan::stat::parse_number(value).ok_or_else(|| Error::Runtime {
                        message: format!("cannot parse {}/{name}: '{part}'", events_dir.display()),
                        hints: Vec::new(),
                    })?;
                    match key {
                        "config" => words[0] |= value,
                        "config1" => words[1] |= value,
                        "config2" => words[2] |= value,
                        _ => fields.push((key.to_string(), value)),
                    }
                }
                if let Ok(u) = std::fs::read_to_string(events_dir.join(format!("{name}.unit"))) {
                    unit = u.trim().to_string();
                }
                if let Ok(s) = std::fs::read_to_string(events_dir.join(format!("{name}.scale"))) {
                    scale = s.trim().parse().unwrap_or(1.0);
                }
            }
        }
    }
    let encoded = pmu.encode(&fields).map_err(|e| match e {
        perf::Error::Invalid { what, reason } => {
            Error::usage(format!("invalid {what} in event '{event}'"), vec![reason])
        }
        other => other.into(),
    })?;
    for (w, e) in words.iter_mut().zip(encoded) {
        *w |= e;
    }
    Ok((words, unit, scale))
}

/// `kprobe:`/`uprobe:` events, resolved exactly as `tracer probe` resolves them (kprobe PMU or
/// `kprobe_events`, the same errors and alternatives); the legacy kprobe is kept in `legacy`
/// for as long as the counters live.
pub fn resolve_probe(
    spec: &EventSpec,
    probe: &plan::ProbeSpec,
    fs: &mut dyn FnMut() -> Result<Tracefs, Error>,
    legacy: &mut Vec<LegacyKprobe>,
    index: usize,
) -> Result<Vec<Resolved>, Error> {
    let fs = fs()?;
    let resolved = crate::probe::event_kind(&fs, probe, &mut None, None, index)?;
    legacy.extend(resolved.legacy);
    Ok(vec![(
        spec.name.clone(),
        resolved.kind,
        Role::Other,
        String::new(),
        1.0,
    )])
}

/// perf's `evsel__fallback` for EACCES: with `kernel.perf_event_paranoid` above 1 and neither
/// CAP_PERFMON nor CAP_SYS_ADMIN, the kernel refuses to count kernel space for this user
/// (perf_event_open(2), "perf_event_paranoid"), so events that count both user and kernel
/// space count user space only, and are renamed as perf renames them (`task-clock:u`).
/// Returns the paranoid level when it applied.
pub fn user_only_fallback(counters: &mut [Counter]) -> Option<i32> {
    use crate::kernel::caps;
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let mask = caps::effective();
    if paranoid <= 1 || caps::has(mask, caps::CAP_PERFMON) || caps::has(mask, caps::CAP_SYS_ADMIN) {
        return None;
    }
    let mut applied = false;
    for counter in counters.iter_mut() {
        if counter.tool.is_some()
            || counter.flags & (flag::EXCLUDE_KERNEL | flag::EXCLUDE_USER) != 0
        {
            continue;
        }
        counter.flags |= flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV;
        let sep = match counter.name.contains('/') || counter.name.contains(':') {
            true => "",
            false => ":",
        };
        counter.name = format!("{}{sep}u", counter.name);
        applied = true;
    }
    applied.then_some(paranoid)
}
