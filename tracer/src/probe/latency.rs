//! `tracer latency`'s pair of probes: the object loaded for the pair, the start and end opened
//! and given the latency programs, disabled until [`LatencyPair::enable`]; and the groups of
//! its histograms named.

use tracer_common::{
    HistKey, LatConfig, LatKeySrc, LAT_BY_COMM, LAT_BY_CPU, LAT_BY_FUNCTION, LAT_BY_NONE,
    LAT_BY_PID, LAT_BY_START, LAT_BY_TID, LAT_BY_VALUE, LAT_KEY_TID, LAT_USDT_END, LAT_USDT_START,
    SLOT_STACK_USER,
};

pub mod outliers;

use super::trampoline::{FunctionTarget, Trampolines, Via};
use super::values::{Memory, Values};
use super::{open_event, Opened};
use crate::bpf::{Bpf, Room, Rooms, Sizing, SlotKind};
use crate::kernel::format::Format;
use crate::kernel::tracefs::Tracefs;
use crate::plan::latency::{by_source, keys, KeySource, LatencyBy, LatencyPlan};
use crate::plan::{ProbeSpec, Target};
use crate::Error;

/// One end of a measured call: a perf event running a latency program (enabled with the
/// pair), or a kernel function's trampoline link (running from its link on).
pub enum PairEnd {
    Event(Box<Opened>),
    Linked(std::os::fd::OwnedFd),
}

impl PairEnd {
    fn enable(&self) -> Result<(), Error> {
        match self {
            PairEnd::Event(opened) => Ok(opened.event.enable(false)?),
            PairEnd::Linked(_) => Ok(()),
        }
    }
}

/// The start and end of a measured call.
pub struct LatencyPair {
    pub entry: PairEnd,
    pub exit: PairEnd,
    /// The start's parameters, named and typed as `tracer probe` shows them (BTF for kernel
    /// functions, DWARF for user functions, the note for USDT; `arg0..` untyped otherwise);
    /// `None` when the start is a tracepoint or a return probe.
    pub start_values: Option<Values>,
    /// The start's record format, when the start is a tracepoint: outliers show its fields.
    pub start_format: Option<Format>,
    /// `--by FIELD` of a tracepoint whose print format names its values (softirq vectors:
    /// `NET_RX`), or of a block device (`dev_t`): how to name them.
    pub by_names: ValueNames,
    /// How each end is served, where it is a kernel function (for the banner).
    pub via: [Option<Via>; 2],
    /// Ends on files replaced since (see [`LatencyPair::follow`]): still counting the
    /// processes that run the old code.
    pub replaced: Vec<Box<Opened>>,
    /// `tracer latency F1 F2 ...`: the start and end of each function after the first, linked
    /// with its index as attach cookie, and its parameters as outliers show them.
    pub more: Vec<MoreFunction>,
}

/// A function measured beside the first: its entry and return, each holding its link.
pub struct MoreFunction {
    pub ends: [(Opened, crate::perf::event::Link); 2],
    pub values: Option<Values>,
}

impl LatencyPair {
    /// User ends whose file was replaced at its path since it was opened (a deploy, a package
    /// upgrade; probe/follow.rs): the end's program is attached to the file there now, the
    /// old event kept for the processes still running the old code (dropped, once the new one
    /// runs, for a file rewritten in place). A line for each end followed, or why it was not.
    pub fn follow(&mut self, bpf: &Bpf, fs: &Tracefs, plan: &LatencyPlan) -> Vec<String> {
        let mut lines = Vec::new();
        for (index, spec, end) in [(0, &plan.start, None), (1, &plan.end, Some(plan.end.ret))] {
            let pair_end = match index {
                0 => &mut self.entry,
                _ => &mut self.exit,
            };
            let PairEnd::Event(opened) = pair_end else {
                continue;
            };
            let Some(old) = opened.binary.clone().filter(|b| b.replaced().is_some()) else {
                continue;
            };
            let new = (open_event(
                fs,
                spec,
                &mut None,
                plan.kprobe_interface,
                plan.whom.pid(),
                index,
            ))
            .and_then(|new| follow_end(bpf, new, opened, end));
            let new = match new {
                Ok(new) => new,
                Err(e) => {
                    // Not tried again until the file changes again.
                    if let Some(now) = old.replaced() {
                        opened.binary = Some(now);
                    }
                    lines.push(format!("{spec}: {}", crate::describe(&e)));
                    continue;
                }
            };
            let binary = new.binary.clone().unwrap_or(old.clone());
            let followed = super::follow::Followed {
                path: binary.path.clone(),
                inodes: (old.ino, binary.ino),
            };
            let old_end = std::mem::replace(opened, Box::new(new));
            if (old.dev, old.ino) != (binary.dev, binary.ino) {
                self.replaced.push(old_end);
            }
            lines.push(followed.line(&spec.to_string()));
        }
        lines
    }

    /// Starts both ends: the exit first, so that an end with no start is only counted, never
    /// mismatched. (Linked ends run from their link on, made in the same order.)
    pub fn enable(&self) -> Result<(), Error> {
        self.exit.enable()?;
        for more in &self.more {
            more.ends[1].0.event.enable(false)?;
        }
        self.entry.enable()?;
        for more in &self.more {
            more.ends[0].0.event.enable(false)?;
        }
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
    // Kernel functions through their trampolines where the kernel permits (a start at a
    // return has no trampoline program: a kprobe); the rest open their perf events.
    let mut trampolines = Trampolines::new(plan.kprobe_interface);
    let mut btf = None;
    let mut interface = None;
    let start_target = trampolines.target(&plan.start, &mut btf)?;
    let start_target = match (plan.start.ret, start_target) {
        (true, Some(target)) if target.forced => {
            return Err(Error::usage(
                format!(
                    "{}: a latency start at a return has no fentry program",
                    plan.start
                ),
                vec!["start at the entry (fentry:FUNC), or at kretprobe:FUNC".into()],
            ))
        }
        (true, _) => None,
        (false, target) => target,
    };
    let end_target = trampolines.target(&plan.end, &mut btf)?;
    let mut open = |spec: &ProbeSpec, index| {
        open_event(
            fs,
            spec,
            &mut interface,
            plan.kprobe_interface,
            plan.whom.pid(),
            index,
        )
    };
    let entry = match start_target {
        Some(_) => None,
        None => Some(open(&plan.start, 0)?),
    };
    let start_values = start_values(
        &plan.start,
        entry.as_ref().and_then(|o| o.format.as_ref()),
        entry.as_ref().and_then(|o| o.usdt.as_ref()),
    )?;
    let start_format = entry.as_ref().and_then(|o| o.format.clone());
    let more_values = (plan.more.iter())
        .map(|spec| self::start_values(spec, None, None))
        .collect::<Result<Vec<_>, Error>>()?;
    let shown: Vec<Option<&Values>> = std::iter::once(start_values.as_ref())
        .chain(more_values.iter().map(Option::as_ref))
        .collect();
    let outlier_reads = outlier_reads(plan, &shown);
    let mut bpf = load(plan, fs, filter.is_some(), outlier_reads)?;
    if let (Some(filter), Some(plan)) = (&filter, &plan.value_filter) {
        bpf.set_globs(&plan.globs)?;
        bpf.set_latency_filter(filter)?;
    }
    let exit = match end_target {
        Some(_) => None,
        None => Some(open(&plan.end, 1)?),
    };
    let formats = (
        entry.as_ref().and_then(|o| o.format.as_ref()),
        exit.as_ref().and_then(|o| o.format.as_ref()),
    );
    let start_params = (start_values.as_ref()).map_or(Vec::new(), Values::param_names);
    let (mut config, by_names) = lat_config(plan, launched, formats, &start_params)?;
    if filter.is_some() {
        config.filter.flags |= tracer_common::SLOT_VALUE_FILTER;
    }
    if outlier_reads.is_some() {
        let strings = !copies_stack_top(plan);
        for (function, values) in shown.iter().enumerate() {
            if let Some(values) = values {
                let outlier = outliers::configure(values, strings)?;
                bpf.set_latency_outlier(function as u32, outlier)?;
            }
        }
    }
    for (opened, end) in [(&entry, LAT_USDT_START), (&exit, LAT_USDT_END)] {
        if let Some(site) = opened.as_ref().and_then(|o| o.usdt.as_ref()) {
            bpf.set_latency_usdt_args(end, &site.places)?;
            config.usdt |= end;
        }
    }
    bpf.set_latency_config(config)?;
    // The end first, as `LatencyPair::enable` starts them.
    let (exit, exit_via) = end_of(
        &mut bpf,
        (&plan.end, Some(plan.end.ret)),
        (exit, end_target),
        &mut trampolines,
        &mut |spec| open(spec, 1),
    )?;
    let (entry, entry_via) = end_of(
        &mut bpf,
        (&plan.start, None),
        (entry, start_target),
        &mut trampolines,
        &mut |spec| open(spec, 0),
    )?;
    let more = attach_more(&mut bpf, plan, more_values, &mut open)?;
    Ok((
        bpf,
        LatencyPair {
            entry,
            exit,
            start_values,
            start_format,
            by_names,
            via: [entry_via, exit_via],
            replaced: Vec::new(),
            more,
        },
    ))
}

/// Opens the entry and return of each function after the first (`plan.more`) and links the
/// latency programs to them with the function's index as attach cookie (the first's is 0,
/// attached without one), disabled until [`LatencyPair::enable`].
fn attach_more(
    bpf: &mut Bpf,
    plan: &LatencyPlan,
    values: Vec<Option<Values>>,
    open: &mut dyn FnMut(&ProbeSpec, usize) -> Result<Opened, Error>,
) -> Result<Vec<MoreFunction>, Error> {
    let mut more = Vec::new();
    for ((i, spec), values) in plan.more.iter().enumerate().zip(values) {
        if super::usdt::is_usdt(spec) || super::usdt::is_usdt(&plan.start) {
            return Err(Error::usage(
                format!("{spec}: USDT probes are measured one per run"),
                vec!["give one USDT probe, or functions".into()],
            ));
        }
        let cookie = i as u64 + 1;
        let end = ProbeSpec {
            ret: true,
            args: Vec::new(),
            ..spec.clone()
        };
        let mut ends = Vec::new();
        for (at, (spec, end)) in [(spec, None), (&end, Some(true))].into_iter().enumerate() {
            let opened = open(spec, 2 + 2 * i + at)?;
            let program = bpf.load_latency_program(SlotKind::Probe, end)?;
            let link = opened
                .event
                .link_bpf(bpf.named_program_fd(program)?, cookie);
            let link = link.map_err(|e| Error::Runtime {
                message: format!("{spec}: {}", crate::describe(&Error::from(e))),
                hints: vec![
                    "several functions in one run need BPF attach cookies (Linux 5.15): \
                     measure one function per run"
                        .into(),
                ],
            })?;
            ends.push((opened, link));
        }
        let [start, end]: [(Opened, crate::perf::event::Link); 2] =
            ends.try_into().unwrap_or_else(|_| unreachable!("two ends"));
        more.push(MoreFunction {
            ends: [start, end],
            values,
        });
    }
    Ok(more)
}

/// The USES bits of outliers that read the start's strings when the call ends, or members
/// when it begins, of any function measured (`shown`: each one's start values); None when
/// they read neither. Beside a copy of the user stack's top (the one buffer an outlier
/// carries), strings are shown as their addresses.
fn outlier_reads(plan: &LatencyPlan, shown: &[Option<&Values>]) -> Option<u32> {
    plan.slower_than?;
    let shown = || shown.iter().flatten();
    let reads = shown().map(|v| v.string_reads()).max().unwrap_or(0);
    let members = shown().any(|v| v.member_reads() > 0);
    let derefs = shown().any(|v| v.pointer_loads());
    let mut uses = 0;
    if reads > 0 && copies_stack_top(plan) {
        crate::output::notes::note(format_args!(
            "{}: beside user stacks, outliers show strings as their addresses",
            plan.start
        ));
    } else if reads > 0 {
        uses |= tracer_common::USES_OUTLIER_STRINGS;
        if reads > 1 {
            uses |= tracer_common::USES_STR_MANY;
        }
    }
    if members {
        uses |= tracer_common::USES_LAT_MEMBERS;
    }
    if derefs {
        uses |= tracer_common::USES_DEREFS;
    }
    (uses != 0).then_some(uses)
}

/// The object for `plan`, its programs narrowed to what the pair uses: a value filter, a copy
/// of the user stack's top, USDT arguments, outliers' strings and members (`outlier_reads`'
/// bits).
fn load(
    plan: &LatencyPlan,
    fs: &Tracefs,
    filter: bool,
    outlier_reads: Option<u32>,
) -> Result<Bpf, Error> {
    // Whether an end is a USDT probe, known before loading (the programs' USES must say);
    // its site is found when it is opened.
    let usdt = super::usdt::is_usdt(&plan.start) || super::usdt::is_usdt(&plan.end);
    let mut bpf = Bpf::load_with(Sizing {
        rooms: Rooms::of([(Room::Latency, true), (Room::Stacks, plan.stack.is_some())]),
        uses: tracer_common::USES_ALL
            | if filter {
                tracer_common::USES_VALUE_FILTER
            } else {
                0
            }
            | if copies_stack_top(plan) {
                tracer_common::USES_BUFFERS
            } else {
                0
            }
            | if usdt { tracer_common::USES_USDT } else { 0 }
            | if plan.more.is_empty() {
                0
            } else {
                tracer_common::USES_LAT_FUNCTIONS
            }
            | outlier_reads.unwrap_or(0),
        filter_globs: (plan.value_filter.as_ref()).map(|f| f.sizing()),
        ..Sizing::default()
    })?;
    // A kernel end's copy of the user stack starts at the user registers on the task's kernel
    // stack, which the program finds by BTF offsets.
    if copies_stack_top(plan) && !matches!(plan.end.target, Target::User { .. }) {
        super::tasks::set_task_offsets(&mut bpf, fs)?;
    }
    Ok(bpf)
}

/// `new`, opened on an end's replaced file, running the end's program: what `old` ran.
fn follow_end(bpf: &Bpf, new: Opened, old: &Opened, end: Option<bool>) -> Result<Opened, Error> {
    let places = |o: &Opened| o.usdt.as_ref().map(|site| site.places);
    if places(&new) != places(old) {
        return Err(Error::Runtime {
            message: "the new file's USDT probe reads its arguments from other places: it is \
                      not probed"
                .into(),
            hints: vec!["restart tracer to measure the new file".into()],
        });
    }
    // Loaded with the pair.
    let program = crate::bpf::latency_program(SlotKind::Probe, end);
    new.event.set_bpf(bpf.named_program_fd(program)?)?;
    new.event.enable(false)?;
    Ok(new)
}

/// Attaches one end's latency program: through the function's trampoline (`target`), or to
/// its perf event (`opened`; opened now by `open` where the kernel refused the trampoline).
/// `end`: None for the start, else whether the end is at a return.
fn end_of(
    bpf: &mut Bpf,
    (spec, end): (&ProbeSpec, Option<bool>),
    (opened, target): (Option<Opened>, Option<FunctionTarget>),
    trampolines: &mut Trampolines,
    open: &mut dyn FnMut(&ProbeSpec) -> Result<Opened, Error>,
) -> Result<(PairEnd, Option<Via>), Error> {
    let kernel = matches!(spec.target, Target::Kernel { .. } | Target::KernelAddr(_));
    let opened = match (opened, target) {
        (Some(opened), _) => opened,
        (None, Some(target)) => {
            match bpf.link_latency_function(&target.function, target.btf_id, end) {
                Ok(link) => {
                    let via = if spec.ret { Via::Fexit } else { Via::Fentry };
                    return Ok((PairEnd::Linked(link), Some(via)));
                }
                Err(e) => {
                    trampolines.failed(spec, &target, e)?;
                    open(spec)?
                }
            }
        }
        (None, None) => unreachable!("an end is opened or has a trampoline"),
    };
    let kind = match opened.format {
        Some(_) => SlotKind::Tracepoint,
        None => SlotKind::Probe,
    };
    let program = bpf.load_latency_program(kind, end)?;
    opened.event.set_bpf(bpf.named_program_fd(program)?)?;
    Ok((
        PairEnd::Event(Box::new(opened)),
        kernel.then(|| Via::kprobe(spec)),
    ))
}

/// The start's parameters as an entry probe decodes them (see [`LatencyPair::start_values`]).
fn start_values(
    spec: &ProbeSpec,
    format: Option<&Format>,
    usdt: Option<&super::usdt::Site>,
) -> Result<Option<Values>, Error> {
    if format.is_some() || spec.ret {
        return Ok(None);
    }
    let mut btf = None;
    let proto = match usdt {
        Some(site) => Some(site.proto.clone()),
        None => super::attach::prototype(spec, &mut btf),
    };
    let memory = match spec.target {
        Target::User { .. } => Memory::User,
        Target::Kernel { .. } | Target::KernelAddr(_) | Target::Tracepoint { .. } => {
            Memory::ByAddress
        }
    };
    let mut members = super::attach::member_lookup(spec, &btf);
    let values = Values::new(
        &spec.to_string(),
        proto.as_ref(),
        &spec.args,
        memory,
        &mut members,
    )?;
    // Outliers carry what they show in six words: refused now, not when one is shown.
    outliers::places(&values)?;
    Ok(Some(values))
}

/// The latency programs' configuration: filters (tracer itself excluded, a `-- COMMAND`
/// followed), grouping, stacks, where each end reads its key, buckets and threshold.
fn lat_config(
    plan: &LatencyPlan,
    launched: bool,
    (entry, exit): (Option<&Format>, Option<&Format>),
    start_params: &[String],
) -> Result<(LatConfig, ValueNames), Error> {
    let filter = super::attach::base_config(&plan.whom, &plan.scope, plan.follow, launched);
    let (entry_key, exit_key) = match &plan.key {
        None => Default::default(),
        Some(key) => {
            let (start, end) = keys(
                key,
                (&plan.start, &entry.cloned()),
                (&plan.end, &exit.cloned()),
            )?;
            (start.map(key_word), end.map(key_word))
        }
    };
    let mut filter = filter;
    // A pair keyed by values may start in another task than the one it measures (a
    // sched_switch starts a task's run in the task leaving the CPU, often tracer itself): no
    // start is left out for running in tracer. (Not 0: that is the idle tasks' tgid.)
    if plan.key.is_some() {
        filter.exclude_tgid = u32::MAX;
    }
    if copies_stack_top(plan) {
        filter.strs[0] = tracer_common::StrRead::STACK_TOP;
    }
    let mut names = ValueNames::default();
    let (by, by_src) = match &plan.by {
        Some(LatencyBy::Value(name)) => {
            let pair = ((&plan.start, &entry.cloned()), (&plan.end, &exit.cloned()));
            match by_source(name, pair.0, pair.1, start_params)? {
                // `common_pid`: the thread, from the helper.
                (KeySource::Tid, _) => (LAT_BY_TID, 0),
                (source, from_start) => {
                    if let (Some(format), false) = (exit, from_start) {
                        let table = format.symbolic.iter().find(|(field, _)| field == name);
                        names
                            .table
                            .extend(table.into_iter().flat_map(|(_, t)| t.iter().cloned()));
                        names.devices = (format.field(name)).is_some_and(|f| f.c_type == "dev_t");
                        // An interrupt line by its handlers' names, as hardirqs shows them.
                        if name == "irq" && format.name.starts_with("irq_handler") {
                            names.table.extend(irq_names());
                        }
                    }
                    let start_bit = if from_start { LAT_BY_START } else { 0 };
                    (LAT_BY_VALUE, key_word(source) | start_bit)
                }
            }
        }
        other => (by_word(other.as_ref()), 0),
    };
    let config = LatConfig {
        filter,
        by,
        by_src,
        stack_flags: end_stack_flags(plan),
        entry_key,
        exit_key,
        linear_step: plan.linear_step.unwrap_or(0),
        // The threshold plus one: 0 is "no outliers", 1 every call.
        slower_than: plan.slower_than.map_or(0, |ns| ns + 1),
        usdt: 0,
    };
    Ok((config, names))
}

/// Each interrupt line's number and the names of its handlers, from /proc/interrupts: `34
/// virtio4-input` (after the per-CPU counts, the chip's two columns, then the names; lines
/// shared by several handlers list them all).
fn irq_names() -> hashbrown::HashMap<u64, String> {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    let cpus = text
        .lines()
        .next()
        .map_or(0, |l| l.split_whitespace().count());
    (text.lines().skip(1))
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let irq: u64 = words.first()?.strip_suffix(':')?.parse().ok()?;
            let names = words.get(cpus + 3..).filter(|n| !n.is_empty())?.join(" ");
            Some((irq, format!("{irq} {names}")))
        })
        .collect()
}

/// The names a `--by` field's values have ([`LatencyPair::by_names`]).
#[derive(Clone, Debug, Default)]
pub struct ValueNames {
    /// From the tracepoint's print format (`__print_symbolic`).
    pub table: hashbrown::HashMap<u64, String>,
    /// The field is a `dev_t`: a block device, by its numbers and name (`8:0 sda`).
    pub devices: bool,
}

impl ValueNames {
    /// `value` as a group's heading shows it.
    fn name(&self, value: u64) -> String {
        if let Some(name) = self.table.get(&value) {
            return name.clone();
        }
        if !self.devices {
            return value.to_string();
        }
        // The kernel's dev_t: the major number above 20 bits of minor.
        let numbers = format!("{}:{}", value >> 20, value & 0xf_ffff);
        let uevent = std::fs::read_to_string(format!("/sys/dev/block/{numbers}/uevent"));
        let name = (uevent.ok())
            .and_then(|u| (u.lines()).find_map(|l| l.strip_prefix("DEVNAME=").map(str::to_string)));
        match name {
            Some(name) => format!("{numbers} {name}"),
            None => numbers,
        }
    }
}

/// Whether outliers copy the top of the user stack at their end, unwound by CFI where the
/// frame-pointer walk cannot go: streamed outliers with user stacks (at a uretprobe the
/// registers are the caller's, at the return address; at a kernel end, those the task
/// entered the kernel with).
pub fn copies_stack_top(plan: &LatencyPlan) -> bool {
    let user = matches!(plan.end.target, Target::User { .. });
    let user_stacks = crate::stacks::flags_for(plan.stack, user) & SLOT_STACK_USER != 0;
    plan.slower_than.is_some() && user_stacks && !plan.stack_at_start
}

/// The stacks outliers capture at the end: a uprobe end at a function's first instruction also
/// reads its direct caller (`SLOT_STACK_AT_ENTRY`), as a probe there does.
fn end_stack_flags(plan: &LatencyPlan) -> u32 {
    // `--stack-at start`: the start's own side, walked by frame pointers (no copy of the
    // user stack's top is kept from the start to the end).
    if plan.stack_at_start {
        let user = matches!(plan.start.target, Target::User { .. });
        return crate::stacks::flags_for(plan.stack, user) | tracer_common::LAT_STACK_AT_START;
    }
    let user = matches!(plan.end.target, Target::User { .. });
    let flags = crate::stacks::flags_for(plan.stack, user);
    match flags & SLOT_STACK_USER != 0 && super::attach::at_function_entry(&plan.end) {
        true => flags | tracer_common::SLOT_STACK_AT_ENTRY,
        false => flags,
    }
}

/// Where the latency programs read a key part: the BPF word of a [`KeySource`].
fn key_word(part: KeySource) -> LatKeySrc {
    match part {
        KeySource::Unused => 0,
        KeySource::Tid => LAT_KEY_TID,
        KeySource::Field { offset, size } => tracer_common::src(offset, size, false),
        KeySource::Arg(n) => tracer_common::src(8 * n, 8, false),
    }
}

/// The latency programs' `LAT_BY_*` word for a task `--by` (a value's is `LAT_BY_VALUE`).
fn by_word(by: Option<&LatencyBy>) -> u32 {
    match by {
        None => LAT_BY_NONE,
        Some(LatencyBy::Comm) => LAT_BY_COMM,
        Some(LatencyBy::Pid) => LAT_BY_PID,
        Some(LatencyBy::Tid) => LAT_BY_TID,
        Some(LatencyBy::Cpu) => LAT_BY_CPU,
        Some(LatencyBy::Value(_)) => LAT_BY_VALUE,
        Some(LatencyBy::Function(_)) => LAT_BY_FUNCTION,
    }
}

/// A histogram group's value under `by`: the command name, or the number (a value the
/// tracepoint's print format names, by its name: `NET_RX`).
pub fn group_value(by: &LatencyBy, names: &ValueNames, key: &HistKey) -> String {
    let number = u64::from_ne_bytes(key.group[..8].try_into().expect("8 bytes"));
    match by {
        LatencyBy::Comm => {
            let end = key.group.iter().position(|&b| b == 0).unwrap_or(16);
            String::from_utf8_lossy(&key.group[..end]).into_owned()
        }
        LatencyBy::Pid | LatencyBy::Tid | LatencyBy::Cpu => number.to_string(),
        LatencyBy::Value(_) => names.name(number),
        LatencyBy::Function(names) => {
            (names.get(number as usize).cloned()).unwrap_or_else(|| format!("function {number}"))
        }
    }
}

/// A histogram group's name as `tracer latency` heads it: `comm NAME`, `pid N`, `vec
/// NET_RX`, ...; empty without grouping.
pub fn group_name(by: Option<&LatencyBy>, names: &ValueNames, key: &HistKey) -> String {
    let Some(by) = by else {
        return String::new();
    };
    let word = match by {
        LatencyBy::Comm => "comm",
        LatencyBy::Pid => "pid",
        LatencyBy::Tid => "tid",
        LatencyBy::Cpu => "cpu",
        LatencyBy::Value(name) => name,
        LatencyBy::Function(_) => "function",
    };
    format!("{word} {}", group_value(by, names, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_values_are_named_by_table_or_as_block_devices() {
        let mut names = ValueNames::default();
        names.table.insert(3, "NET_RX".into());
        assert_eq!(
            (names.name(3), names.name(4)),
            ("NET_RX".into(), "4".into())
        );
        // A block device of this machine, as the kernel's dev_t packs its numbers.
        let Some(numbers) = std::fs::read_dir("/sys/dev/block")
            .ok()
            .and_then(|mut d| d.next()?.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
        else {
            eprintln!("skipped the device half: no /sys/dev/block entry");
            return;
        };
        let (major, minor) = numbers.split_once(':').unwrap();
        let value = major.parse::<u64>().unwrap() << 20 | minor.parse::<u64>().unwrap();
        let uevent = std::fs::read_to_string(format!("/sys/dev/block/{numbers}/uevent")).unwrap();
        let name = uevent
            .lines()
            .find_map(|l| l.strip_prefix("DEVNAME="))
            .unwrap();
        names.devices = true;
        assert_eq!(names.name(value), format!("{numbers} {name}"));
        assert_eq!(names.name(4095 << 20), "4095:0");
    }
}
