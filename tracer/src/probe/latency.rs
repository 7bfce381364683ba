//! `tracer latency`'s pair of probes: the object loaded for the pair, the start and end opened
//! and given the latency programs, disabled until [`LatencyPair::enable`]; and the groups of
//! its histograms named.

use tracer_common::{
    HistKey, LatConfig, LAT_BY_COMM, LAT_BY_CPU, LAT_BY_PID, LAT_BY_TID, LAT_USDT_END,
    LAT_USDT_START, SLOT_FILTER_TRACKED,
};

use super::values::{Memory, Values};
use super::{open_event, Opened};
use crate::bpf::{Bpf, Sizing, SlotKind};
use crate::kernel::tracefs::Tracefs;
use crate::plan::latency::{keys, LatencyPlan};
use crate::plan::{ProbeSpec, Target};
use crate::Error;

/// The start and end of a measured call, each a perf event running a latency program.
pub struct LatencyPair {
    pub entry: Opened,
    pub exit: Opened,
    /// The start's parameters, named and typed as `tracer probe` shows them (BTF for kernel
    /// functions, DWARF for user functions, the note for USDT; `arg0..` untyped otherwise);
    /// `None` when the start is a tracepoint or a return probe.
    pub start_values: Option<Values>,
}

impl LatencyPair {
    /// Starts both ends: the exit first, so that an end with no start is only counted, never
    /// mismatched.
    pub fn enable(&self) -> Result<(), Error> {
        self.exit.event.enable(false)?;
        self.entry.event.enable(false)?;
        Ok(())
    }
}

/// Loads the object for `plan` and attaches its start and end, disabled. `launched`: a
/// `-- COMMAND` is followed (its process set filters the calls).
pub fn attach(
    plan: &LatencyPlan,
    fs: &Tracefs,
    launched: bool,
) -> Result<(Bpf, LatencyPair), Error> {
    let filter = (plan.value_filter.as_ref())
        .map(|f| super::filter::resolve_latency(f, &plan.start, &plan.end))
        .transpose()?;
    // Whether an end is a USDT probe, known before loading (the programs' USES must say);
    // its site is found when it is opened below.
    let usdt = super::usdt::is_usdt(&plan.start) || super::usdt::is_usdt(&plan.end);
    let mut bpf = Bpf::load_with(Sizing {
        latency: true,
        stacks: plan.stack.is_some(),
        uses: tracer_common::USES_ALL
            | filter.map_or(0, |_| tracer_common::USES_VALUE_FILTER)
            | if usdt { tracer_common::USES_USDT } else { 0 },
        filter_globs: (plan.value_filter.as_ref()).map(|f| f.sizing()),
        ..Sizing::default()
    })?;
    if let (Some(filter), Some(plan)) = (&filter, &plan.value_filter) {
        bpf.set_globs(&plan.globs)?;
        bpf.set_latency_filter(filter)?;
    }
    let mut interface = None;
    let entry = open_event(fs, &plan.start, &mut interface, None, plan.pid, 0)?;
    let start_values = start_values(&plan.start, &entry)?;
    let exit = open_event(fs, &plan.end, &mut interface, None, plan.pid, 1)?;
    let mut config = lat_config(plan, launched, (&entry, &exit))?;
    if filter.is_some() {
        config.filter.flags |= tracer_common::SLOT_VALUE_FILTER;
    }
    for (opened, end) in [(&entry, LAT_USDT_START), (&exit, LAT_USDT_END)] {
        if let Some(site) = &opened.usdt {
            bpf.set_latency_usdt_args(end, &site.places)?;
            config.usdt |= end;
        }
    }
    let kind = |opened: &Opened| match opened.format {
        Some(_) => SlotKind::Tracepoint,
        None => SlotKind::Probe,
    };
    let (entry_prog, exit_prog) =
        bpf.load_latency(kind(&entry), kind(&exit), plan.end.ret, config)?;
    entry.event.set_bpf(bpf.named_program_fd(entry_prog)?)?;
    exit.event.set_bpf(bpf.named_program_fd(exit_prog)?)?;
    Ok((
        bpf,
        LatencyPair {
            entry,
            exit,
            start_values,
        },
    ))
}

/// The start's parameters as an entry probe decodes them (see [`LatencyPair::start_values`]).
fn start_values(spec: &ProbeSpec, opened: &Opened) -> Result<Option<Values>, Error> {
    if opened.format.is_some() || spec.ret {
        return Ok(None);
    }
    let mut btf = None;
    let proto = match &opened.usdt {
        Some(site) => Some(site.proto.clone()),
        None => super::attach::prototype(spec, &mut btf),
    };
    let memory = match spec.target {
        Target::User { .. } => Memory::User,
        _ => Memory::ByAddress,
    };
    let mut members = super::attach::member_lookup(spec, &btf);
    Values::new(&spec.to_string(), proto.as_ref(), &[], memory, &mut members).map(Some)
}

/// The latency programs' configuration: filters (tracer itself excluded, a `-- COMMAND`
/// followed), grouping, stacks, where each end reads its key, buckets and threshold.
fn lat_config(
    plan: &LatencyPlan,
    launched: bool,
    (entry, exit): (&Opened, &Opened),
) -> Result<LatConfig, Error> {
    let mut filter = plan.filter;
    filter.exclude_tgid = std::process::id();
    if launched {
        filter.flags |= SLOT_FILTER_TRACKED;
    }
    let (entry_key, exit_key) = match &plan.key {
        None => Default::default(),
        Some(key) => keys(key, (&plan.start, &entry.format), (&plan.end, &exit.format))?,
    };
    Ok(LatConfig {
        filter,
        by: plan.by,
        stack_flags: crate::stacks::flags_for(
            plan.stack,
            matches!(plan.end.target, Target::User { .. }),
        ),
        entry_key,
        exit_key,
        linear_step: plan.linear_step.unwrap_or(0),
        slower_than: plan.slower_than.unwrap_or(0),
        usdt: 0,
        _pad: 0,
    })
}

/// A histogram group's value under `by` (`LAT_BY_*`): the command name, or the number; empty
/// without grouping.
pub fn group_value(by: u32, key: &HistKey) -> String {
    let number = u64::from_ne_bytes(key.group[..8].try_into().expect("8 bytes"));
    match by {
        LAT_BY_COMM => {
            let end = key.group.iter().position(|&b| b == 0).unwrap_or(16);
            String::from_utf8_lossy(&key.group[..end]).into_owned()
        }
        LAT_BY_PID | LAT_BY_TID | LAT_BY_CPU => number.to_string(),
        _ => String::new(),
    }
}
