//! Probe specs -> attached probes: each spec's perf event opened, its program slot configured
//! (filters, strings, member reads, aggregation) and attached with `PERF_EVENT_IOC_SET_BPF`, or
//! a raw syscall tracepoint where that counts the same for less.

use tracer_common::{
    str_from, str_mem, SlotConfig, StrRead, SLOT_RETURN, SLOT_VALUE_FILTER, STRLEN_DEFAULT,
};

use super::aggregate::{self, ProbeValues};
use super::resolve::{open_event, tracepoint_error, KernelInterface, KprobeInterface, Opened};
use super::trampoline::{Trampolines, Via};
use super::values::{Memory, Values};
use super::Attached;
use super::{Decoder, Probe};
use crate::bpf::{Bpf, Room, Rooms, SlotKind};
use crate::kernel::btf::KernelBtf;
use crate::kernel::elf;
use crate::kernel::format::Format;
use crate::kernel::params::{Member, Prototype};
use crate::kernel::tracefs::Tracefs;
use crate::output::notes;
use crate::plan::filter::FilterPlan;
use crate::plan::{self, Aggregation, KeyPart, ProbeSpec, Target, UserAt};
use crate::stacks::{self, Which};
use crate::Error;

/// What every probe of a run shares: the filters, the process uprobes are armed in, the
/// stacks and the aggregation.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttachOptions<'a> {
    /// The run's filters (pid, tid, comm, CPUs, cgroup, the `-- COMMAND` process set).
    pub base: SlotConfig,
    /// `-p PID`: uprobes are armed in this process only.
    pub pid: Option<u32>,
    /// Forces the kernel-function interface (tests exercise the fallback with it).
    pub kprobe_interface: Option<KprobeInterface>,
    /// `-s [WHICH]`: the stack each hit carries.
    pub stack: Option<Option<Which>>,
    /// `--count-by/--sum/--hist`: counted in the kernel instead of streamed.
    pub aggregation: Option<&'a Aggregation>,
    /// `--filter`: which hits are sent or counted.
    pub filter: Option<&'a FilterPlan>,
    /// Syscall tracepoints go through the dispatching raw syscall programs ([`dispatch`]; the
    /// object must be loaded with [`crate::bpf::Room::Dispatch`]).
    pub dispatch: bool,
    /// Tracepoint hits carry their record's whole head (`tracer record`: its report may decode
    /// any field), not only the fields printed ([`record_head_used`]).
    pub whole_record: bool,
}

impl AttachOptions<'_> {
    /// Whether a stack is a key of the aggregation.
    pub fn stack_keys(&self) -> bool {
        self.aggregation
            .is_some_and(|a| a.keys.contains(&KeyPart::Stack))
    }

    /// The parts of the BPF programs these probes may use (`USES_*`), worked out before any
    /// probe is opened: a superset of what [`Attacher::attach`] configures (which
    /// `Bpf::take_slot` checks), so the verifier sees only the code this run can reach.
    pub fn uses(&self, specs: &[ProbeSpec], fs: &Tracefs) -> u32 {
        use tracer_common::{
            USES_AGGREGATE, USES_AGG_VALUE, USES_FIELDS, USES_FILTERS, USES_STACKS, USES_STREAM,
            USES_STRINGS, USES_STR_ARRAYS, USES_STR_MANY, USES_TRACKED, USES_USDT,
        };
        let mut uses = self.base.uses() & (USES_FILTERS | USES_TRACKED);
        uses |= match self.aggregation {
            Some(agg) if agg.value.is_some() || agg.key_value().is_some() => {
                USES_AGGREGATE | USES_AGG_VALUE
            }
            Some(_) => USES_AGGREGATE,
            None => USES_STREAM,
        };
        if self.stack.is_some() || self.stack_keys() {
            uses |= USES_STACKS;
        }
        if self.filter.is_some() {
            // A filter may compare a string even where nothing prints one (any of them).
            uses |= tracer_common::USES_VALUE_FILTER | USES_STRINGS | USES_STR_MANY;
        }
        for spec in specs {
            uses |= match &spec.target {
                // Streamed syscall entry records carry user pointers to strings (filename,
                // pathname, argv); counted hits read none.
                Target::Tracepoint { category, name } => {
                    let syscall_entry = category == "syscalls" && name.starts_with("sys_enter_");
                    // Counted hits read a string only to key by it.
                    let keyed = self.aggregation.is_some_and(|a| a.key_value().is_some());
                    let format = (syscall_entry && (self.aggregation.is_none() || keyed))
                        .then(|| fs.format(category, name).ok())
                        .flatten();
                    let strings = format.as_ref().map_or(Vec::new(), |format| {
                        let selection = tracepoint_selection(spec, format).unwrap_or_default();
                        syscall_strings(format, &selection)
                    });
                    let arrays = match (strings.iter()).any(|(_, array)| *array) {
                        true => USES_STR_ARRAYS,
                        false => 0,
                    };
                    let reads = match strings.len() {
                        0 => 0,
                        1 => USES_STRINGS,
                        _ => USES_STRINGS | USES_STR_MANY,
                    };
                    reads | arrays
                }
                Target::User {
                    at: UserAt::Usdt { .. },
                    ..
                } => USES_STRINGS | USES_STR_MANY | USES_USDT,
                // String arguments (a return value's too) and struct member reads.
                _ => USES_STRINGS | USES_STR_MANY | USES_FIELDS,
            };
        }
        uses
    }
}

impl AttachOptions<'_> {
    /// The BPF object's maps and reachable code for these probes. `comm_cache`: the rename
    /// tracepoint exists, so the comm of each hit comes from a per-CPU cache, and counted hits
    /// of one task in a row on one CPU are added up in a per-CPU run first (both kept right by
    /// the same program); `debug`: `--debug-bpf`; `ringbuf`: streamed through the BPF ring
    /// buffer.
    pub fn sizing(
        &self,
        specs: &[ProbeSpec],
        fs: &Tracefs,
        comm_cache: bool,
        debug: bool,
        ringbuf: Option<crate::bpf::RingBufSize>,
    ) -> crate::bpf::Sizing {
        let debug = match debug {
            true => tracer_common::USES_DEBUG,
            false => 0,
        };
        let caches = match (comm_cache, self.aggregation) {
            (true, Some(_)) => tracer_common::USES_COMM_CACHE | tracer_common::USES_RUN_COUNT,
            (true, None) => tracer_common::USES_COMM_CACHE,
            (false, _) => 0,
        };
        let rooms = Rooms::of([
            (Room::Stacks, self.stack.is_some() || self.stack_keys()),
            (Room::Counts, self.aggregation.is_some()),
            (
                Room::StrCounts,
                (self.aggregation).is_some_and(|a| a.key_value().is_some()),
            ),
            (Room::Dispatch, dispatch(specs)),
        ]);
        crate::bpf::Sizing {
            rooms,
            uses: self.uses(specs, fs) | caches | debug,
            ringbuf,
            filter_globs: self.filter.map(|f| f.sizing()),
        }
    }
}

/// Whether `specs` need the dispatching syscall programs (more tracepoints than constant
/// slots: [`crate::bpf::Room::Dispatch`]).
pub fn dispatch(specs: &[ProbeSpec]) -> bool {
    let tracepoints = (specs.iter())
        .filter(|s| matches!(s.target, Target::Tracepoint { .. }))
        .count();
    tracepoints > tracer_common::TRACEPOINT_SLOTS as usize
}

/// Attaches a run's probes one after another, sharing what the first kernel function looked
/// up (the kernel interface, kernel BTF).
pub struct Attacher<'a> {
    fs: &'a Tracefs,
    options: AttachOptions<'a>,
    interface: Option<KernelInterface>,
    /// Which kernel functions go through their trampolines (fentry/fexit).
    trampolines: Trampolines,
    /// Kernel BTF, opened at the first kernel function (`None` inside: not available).
    btf: Option<Option<KernelBtf>>,
    attached: usize,
}

impl<'a> Attacher<'a> {
    pub fn new(fs: &'a Tracefs, options: AttachOptions<'a>) -> Attacher<'a> {
        Attacher {
            fs,
            options,
            interface: None,
            trampolines: Trampolines::new(options.kprobe_interface),
            btf: None,
            attached: 0,
        }
    }

    /// Opens, configures and attaches one probe, disabled ([`Probe::enable`] starts it).
    pub fn attach(&mut self, bpf: &mut Bpf, spec: &ProbeSpec) -> Result<Probe, Error> {
        let index = self.attached;
        if let (0, Some(filter)) = (index, self.options.filter) {
            bpf.set_globs(&filter.globs)?;
        }
        let probe = attach(
            bpf,
            self.fs,
            spec,
            &self.options,
            (&mut self.interface, &mut self.trampolines),
            index,
            &mut self.btf,
        )?;
        self.attached += 1;
        Ok(probe)
    }

    /// Attaches every spec, in order.
    pub fn attach_all(&mut self, bpf: &mut Bpf, specs: &[ProbeSpec]) -> Result<Vec<Probe>, Error> {
        specs.iter().map(|spec| self.attach(bpf, spec)).collect()
    }
}

fn attach(
    bpf: &mut Bpf,
    fs: &Tracefs,
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    (interface, trampolines): (&mut Option<KernelInterface>, &mut Trampolines),
    index: usize,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<Probe, Error> {
    // A syscall tracepoint served by the dispatching programs needs its format, not an event.
    let dispatched = syscall_of(spec).filter(|_| options.dispatch);
    // A kernel function through its trampoline opens no perf event either (unless the kernel
    // refuses it there: then its kprobe's, below).
    let trampoline = trampolines.target(spec, btf)?;
    let open = |interface: &mut Option<KernelInterface>| {
        open_event(
            fs,
            spec,
            interface,
            options.kprobe_interface,
            options.pid,
            index,
        )
    };
    let (event, opened) = match (&dispatched, &spec.target, &trampoline) {
        (Some(_), Target::Tracepoint { category, name }, _) => {
            let format =
                (fs.format(category, name)).map_err(|e| tracepoint_error(e, fs, category, name))?;
            (None, (None, Some(format), None, None))
        }
        (_, _, Some(target)) => (None, (None, None, Some(target.function.clone()), None)),
        _ => {
            let Opened {
                event,
                legacy,
                format,
                kernel_function,
                usdt,
            } = open(interface)?;
            (Some(event), (legacy, format, kernel_function, usdt))
        }
    };
    let (mut legacy, format, kernel_function, usdt) = opened;
    let mut config = options.base;
    if config.strlen == 0 {
        config.strlen = STRLEN_DEFAULT;
    }
    if usdt.is_some() {
        config.flags |= tracer_common::SLOT_USDT;
    }
    if spec.ret {
        config.flags |= SLOT_RETURN;
    }
    config.flags |= stacks::flags_for(options.stack, matches!(spec.target, Target::User { .. }));
    if config.flags & tracer_common::SLOT_STACK_USER != 0 && at_function_entry(spec) {
        config.flags |= tracer_common::SLOT_STACK_AT_ENTRY;
    }
    let (kind, mut decoder) = match format {
        Some(format) => {
            let selection = tracepoint_selection(spec, &format)?;
            // Syscall entry tracepoints carry user pointers to strings (filename, pathname,
            // argv): the BPF program reads those printed. Only streamed events carry strings;
            // a counted hit reads none.
            let strings = match &spec.target {
                Target::Tracepoint { category, name }
                    if category == "syscalls"
                        && name.starts_with("sys_enter_")
                        && options.aggregation.is_none() =>
                {
                    (syscall_strings(&format, &selection).into_iter())
                        .map(|(name, _)| name)
                        .take(tracer_common::STR_READS)
                        .collect()
                }
                _ => Vec::new(),
            };
            (
                SlotKind::Tracepoint,
                Decoder::Tracepoint {
                    format,
                    strings,
                    selection,
                },
            )
        }
        None if spec.ret => {
            let asked: Vec<String> = (spec.args.iter())
                .filter(|a| *a != "ret" && *a != "str(ret)")
                .cloned()
                .collect();
            // At fexit the trampoline still has the arguments (checked again below, should
            // the kernel refuse the trampoline for a kretprobe).
            if !asked.is_empty() && trampoline.is_none() {
                let mut hints = vec![entry_hint(spec)];
                if matches!(spec.target, Target::Kernel { .. }) {
                    hints.push(
                        "fexit sees a kernel function's arguments and return value together \
                         (fexit:FUNC(a, ret)), where the kernel permits fentry (`tracer \
                         features`)"
                            .into(),
                    );
                }
                return Err(Error::usage(
                    format!(
                        "{spec} sees only the return value; '{}' is gone by then",
                        spec.args.join(", ")
                    ),
                    hints,
                ));
            }
            let mut proto = prototype(spec, btf);
            let args = match asked.is_empty() {
                true => None,
                false => Some(Values::new(
                    &spec.to_string(),
                    proto.as_ref(),
                    &asked,
                    Memory::ByAddress,
                    &mut member_lookup(spec, btf),
                )?),
            };
            // `str(ret)`: a `char *` the debug info does not say is one (no DWARF).
            if spec.args.iter().any(|a| a == "str(ret)") {
                proto = Some(Prototype {
                    params: proto.map(|p| p.params).unwrap_or_default(),
                    ret: crate::kernel::params::Kind::Str,
                });
            }
            (SlotKind::Probe, Decoder::Return { proto, args })
        }
        None => {
            let proto = match &usdt {
                Some(site) => Some(site.proto.clone()),
                None => prototype(spec, btf),
            };
            let memory = match spec.target {
                Target::User { .. } => Memory::User,
                // gcc-built kernels' BTF does not mark __user pointers: the address tells.
                _ => Memory::ByAddress,
            };
            let values = Values::new(
                &spec.to_string(),
                proto.as_ref(),
                &spec.args,
                memory,
                &mut member_lookup(spec, btf),
            )?;
            (SlotKind::Probe, Decoder::Entry(values))
        }
    };
    // At fexit with string arguments, the return value's string is read after theirs, where
    // the filter and the keys (which read string 0) do not look yet.
    if let Decoder::Return {
        args: Some(values),
        proto: Some(proto),
    } = &decoder
    {
        let string_ret = proto.ret == crate::kernel::params::Kind::Str;
        if string_ret
            && values.string_reads() > 0
            && (options.filter.is_some() || options.aggregation.is_some())
        {
            return Err(Error::usage(
                format!("{spec}: --filter and --count-by cannot use a string return value beside string arguments yet"),
                vec!["drop the string arguments from the list, or the --filter / --count-by".into()],
            ));
        }
    }
    let sources = match options.aggregation {
        Some(agg) => {
            let stack_flags = stacks::flags_for(
                Some(options.stack.flatten()),
                matches!(spec.target, Target::User { .. }),
            );
            let mut lookup = member_lookup(spec, btf);
            let values = match &mut decoder {
                Decoder::Tracepoint { format, .. } => ProbeValues::Record(format),
                Decoder::Entry(values) => ProbeValues::Entry(values, &mut lookup),
                Decoder::Return { proto, .. } => ProbeValues::Return(proto.as_ref()),
            };
            let sources = aggregate::configure(&mut config, agg, spec, values, stack_flags)?;
            // A tracepoint's string key: its field becomes one of the strings read.
            if let (true, Some(name), Decoder::Tracepoint { strings, .. }) =
                (sources.key_string, agg.key_value(), &mut decoder)
            {
                let k = match strings.iter().position(|s| s == name) {
                    Some(k) => k,
                    None => {
                        strings.push(name.to_string());
                        strings.len() - 1
                    }
                };
                config.key_src = k as u32;
            }
            sources
        }
        None => Default::default(),
    };
    let filter = match options.filter {
        Some(plan) => {
            let mut lookup = member_lookup(spec, btf);
            let mut none = Vec::new();
            let (mut values, strings) = match &mut decoder {
                Decoder::Tracepoint {
                    format, strings, ..
                } => (ProbeValues::Record(format), strings),
                Decoder::Entry(values) => (ProbeValues::Entry(values, &mut lookup), &mut none),
                Decoder::Return { proto, .. } => (ProbeValues::Return(proto.as_ref()), &mut none),
            };
            let (filter, needs) = super::filter::resolve(plan, spec, &mut values, strings)?;
            config.flags |= SLOT_VALUE_FILTER;
            Some((filter, needs.value_string))
        }
        None => None,
    };
    let filtered_string = filter.as_ref().is_some_and(|(_, string)| *string);
    let streamed = options.aggregation.is_none() || sources.key_string;
    match &decoder {
        Decoder::Entry(values) => values.configure(&mut config, streamed || filtered_string),
        Decoder::Tracepoint {
            format, strings, ..
        } => {
            for (slot, name) in config.strs.iter_mut().zip(strings) {
                let field = format.field(name).expect("a field of this format");
                *slot = StrRead {
                    at: field.offset as u32,
                    from: str_from::RECORD,
                    memory: str_mem::USER,
                    array: u8::from(user_string(&field.c_type) == Some(true)),
                    len_from: 0,
                };
            }
        }
        // A function returning `char *`: the string it returns, after the arguments' (fexit).
        Decoder::Return { proto, args } => {
            if let Some(values) = args {
                values.configure(&mut config, streamed || filtered_string);
            }
            let at = args.as_ref().map_or(0, Values::string_reads);
            let string = proto
                .as_ref()
                .is_some_and(|p| p.ret == crate::kernel::params::Kind::Str);
            if let (true, true, Some(slot)) =
                (string, streamed || filtered_string, config.strs.get_mut(at))
            {
                *slot = StrRead {
                    at: 0,
                    from: str_from::RETURN,
                    memory: match spec.target {
                        Target::User { .. } => str_mem::USER,
                        _ => str_mem::AUTO,
                    },
                    array: 0,
                    len_from: 0,
                };
            }
        }
    }
    // A streamed tracepoint hit reads only the part of its record that is printed or read
    // strings from. A counted hit reads it only for its key or value already; a filter, or a
    // recording, reads the whole head.
    if let Decoder::Tracepoint {
        format,
        strings,
        selection,
    } = &decoder
    {
        let narrow = !options.whole_record && options.aggregation.is_none() && filter.is_none();
        if let Some(len) = narrow
            .then(|| record_head_used(format, selection, strings))
            .flatten()
        {
            config.flags |= tracer_common::SLOT_RECORD_LEN;
            config.record_len = len as u64;
        }
    }
    // A raw tracepoint when it can count this; the perf tracepoint otherwise, or when the raw
    // one cannot be had (all raw slots taken, a kernel without raw tracepoints). The perf
    // event opened above is then closed unused.
    let raw = match dispatched {
        Some(_) => None,
        None => raw_syscall(spec, &config).and_then(|(tracepoint, nr, exit)| {
            let mut raw_config = config;
            raw_config.raw_syscall = nr;
            if exit {
                raw_config.flags |= tracer_common::SLOT_RAW_SYS_EXIT;
            }
            bpf.take_raw_slot(raw_config, tracepoint).ok()
        }),
    };
    let mut via = (kernel_function.is_some() || matches!(spec.target, Target::KernelAddr(_)))
        .then(|| Via::kprobe(spec));
    // Through the trampoline; or, where the kernel refuses it there (and it was not asked for
    // by name), the kprobe's event, opened now.
    let mut event = event;
    let mut linked = None;
    if let Some(target) = &trampoline {
        let filter = filter.as_ref().map(|(f, _)| f);
        // At the entry, kernel stacks get the function's address to begin with (see
        // `SLOT_STACK_AT_ENTRY`).
        let mut linked_config = config;
        if !spec.ret && config.flags & tracer_common::SLOT_STACK_KERNEL != 0 {
            linked_config.flags |= tracer_common::SLOT_STACK_AT_ENTRY;
        }
        match bpf.take_function_slot(
            linked_config,
            filter,
            &target.function,
            target.btf_id,
            spec.ret,
        ) {
            Ok(slot_link) => {
                trampolines.linked();
                via = Some(if spec.ret { Via::Fexit } else { Via::Fentry });
                linked = Some(slot_link);
                config = linked_config;
            }
            Err(e) => {
                let reason = e.refusal();
                trampolines.failed(spec, target, e)?;
                if let Decoder::Return { args: Some(_), .. } = &decoder {
                    return Err(Error::Runtime {
                        message: format!(
                            "cannot read the arguments of {spec} at its return: fexit was \
                             refused ({reason}), and a kretprobe sees only the return value"
                        ),
                        hints: vec![entry_hint(spec)],
                    });
                }
                let opened = open(interface)?;
                legacy = opened.legacy;
                event = Some(opened.event);
            }
        }
    }
    let attached = match (raw, dispatched, event) {
        (Some(slot), _, _) => Attached::raw(slot),
        (None, Some((_, nr, exit)), _) => {
            let filter = filter.as_ref().map(|(f, _)| f);
            Attached::raw(bpf.take_syscall_slot(config, nr, exit, filter)?)
        }
        (None, None, None) => {
            let (slot, link) =
                linked.expect("only dispatched syscalls and trampolines open no event");
            Attached::linked(slot, link)
        }
        (None, None, Some(event)) => {
            let slot = bpf.take_slot(kind, config)?;
            if let Some(site) = &usdt {
                bpf.set_usdt_args(&slot, &site.places)?;
            }
            if let Some((filter, _)) = &filter {
                bpf.set_filter(&slot, filter)?;
            }
            Attached::disabled(bpf, slot, event)?
        }
    };
    let slot = attached.slot.clone();
    Ok(Probe {
        name: spec.to_string(),
        via,
        at_entry: config.flags & tracer_common::SLOT_STACK_AT_ENTRY != 0,
        slot,
        decoder,
        kernel_function,
        sources,
        attached,
        _legacy: legacy,
    })
}

/// The bytes of a tracepoint record's head (its first `8 * DATA_WORDS`) that its printed
/// fields (`selection`, or all when empty; never `__syscall_nr` and the like) and its string
/// reads use, in whole words; `None` when one of them is a `__data_loc` (its data lies further
/// in the record).
pub(super) fn record_head_used(
    format: &Format,
    selection: &[String],
    strings: &[String],
) -> Option<usize> {
    let mut end = 0;
    for field in &format.fields {
        let printed = !field.name.starts_with("common_")
            && !field.name.starts_with("__")
            && (selection.is_empty() || selection.contains(&field.name));
        if !printed && !strings.contains(&field.name) {
            continue;
        }
        if field.c_type.starts_with("__data_loc") {
            return None;
        }
        end = end.max(field.offset + field.size);
    }
    Some((end.div_ceil(8) * 8).min(8 * tracer_common::DATA_WORDS))
}

/// The hint for arguments asked of a return probe that cannot see them: the entry probe that
/// can, beside it.
fn entry_hint(spec: &ProbeSpec) -> String {
    let entry = (spec.to_string())
        .replace("kretprobe:", "")
        .replace("uretprobe:", "uprobe:");
    format!(
        "probe the entry too: '{entry}({})' beside the return probe",
        spec.args.join(", ")
    )
}

/// A uprobe on a function's first instruction (`uprobe:BIN:FUNC`, no offset, not a return
/// probe): its user stacks need the return address at the stack pointer.
pub(super) fn at_function_entry(spec: &ProbeSpec) -> bool {
    matches!(
        &spec.target,
        Target::User {
            at: UserAt::Symbol { offset: 0, .. },
            ..
        }
    ) && !spec.ret
}

/// Counting a `syscalls:` tracepoint by task, CPU or stack only: the raw tracepoint
/// (`sys_enter` or `sys_exit`), the syscall's number, and whether it is the exit. The raw
/// tracepoint skips the trace record the perf path fills for every hit and filters by number
/// in BPF (on this VM it saves little, +320 vs +345 ns per hit, because the program's helper
/// calls dominate; docs/benchmarks.md). `None` when a key or value needs the record, or the
/// number is not known for the name.
fn raw_syscall(spec: &ProbeSpec, config: &SlotConfig) -> Option<(&'static str, u32, bool)> {
    use tracer_common::{AGG_HIST, AGG_KEY_STRING, AGG_KEY_VALUE, AGG_SUM, SLOT_AGGREGATE};
    // A value filter needs the record, and so does a string key (its pointer).
    let counted_only = config.flags & SLOT_AGGREGATE != 0
        && config.agg & (AGG_KEY_VALUE | AGG_KEY_STRING | AGG_SUM | AGG_HIST) == 0
        && config.flags & tracer_common::SLOT_VALUE_FILTER == 0;
    match counted_only {
        true => syscall_of(spec),
        false => None,
    }
}

/// Whether a spec can go through the dispatching syscall programs.
pub fn dispatchable(spec: &ProbeSpec) -> bool {
    syscall_of(spec).is_some()
}

/// A `syscalls:` tracepoint's raw tracepoint (`sys_enter` or `sys_exit`), syscall number,
/// and whether it is the exit; `None` for other tracepoints and unknown names.
fn syscall_of(spec: &ProbeSpec) -> Option<(&'static str, u32, bool)> {
    let Target::Tracepoint { category, name } = &spec.target else {
        return None;
    };
    if category != "syscalls" || !cfg!(target_arch = "x86_64") {
        return None;
    }
    let (tracepoint, exit, call) = match name.strip_prefix("sys_enter_") {
        Some(call) => ("sys_enter", false, call),
        None => ("sys_exit", true, name.strip_prefix("sys_exit_")?),
    };
    // The kernel only creates syscalls:* events for entry points in the 64-bit table.
    let call = crate::kernel::syscalls::table_name(call);
    let nr = crate::kernel::syscalls::number(call)?;
    Some((tracepoint, nr, exit))
}

/// Resolves `PARAM->member` for a probe: kernel BTF for kernel functions, the binary's DWARF
/// for user functions.
pub(super) fn member_lookup<'a>(
    spec: &'a ProbeSpec,
    btf: &'a Option<Option<KernelBtf>>,
) -> impl FnMut(usize, &[&str]) -> Result<Member, Error> + 'a {
    move |arg, path| match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
            ..
        } => match btf {
            Some(Some(btf)) => btf
                .member(function, arg, path)
                .map_err(|e| Error::usage(crate::describe(&e), e.hints())),
            _ => Err(Error::usage(
                format!("cannot read struct members in {spec}: no kernel BTF"),
                vec![
                    "member access needs /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF=y)".into(),
                ],
            )),
        },
        Target::User {
            file,
            at: UserAt::Symbol { name, offset: 0 },
        } => {
            let binary = elf::resolve_file(file)?;
            crate::kernel::dwarf::member(&binary, name, arg, path)
                .map_err(|e| Error::usage(crate::describe(&e), e.hints()))
        }
        _ => Err(Error::usage(
            format!("{spec}: struct members need the function's prototype"),
            vec![
                "probe a function's entry by name (FUNC or uprobe:PATH:SYMBOL), without +OFF"
                    .into(),
            ],
        )),
    }
}

/// The fields a tracepoint's `(a, b)` list names, checked against its format.
fn tracepoint_selection(spec: &ProbeSpec, format: &Format) -> Result<Vec<String>, Error> {
    let fields: Vec<&str> = (format.fields.iter())
        .map(|f| f.name.as_str())
        .filter(|n| !n.starts_with("common_") && !n.starts_with("__"))
        .collect();
    // `argN` is the Nth field after the common ones, as in --count-by.
    let by_index = |name: &str| {
        let n = name.strip_prefix("arg")?.parse::<usize>().ok()?;
        fields.get(n).map(|f| f.to_string())
    };
    let selection: Vec<String> = (spec.args.iter())
        .map(|a| match fields.contains(&a.as_str()) {
            true => a.clone(),
            false => by_index(a).unwrap_or_else(|| a.clone()),
        })
        .collect();
    if let Some(name) = selection.iter().find(|a| !fields.contains(&a.as_str())) {
        let mut hints = vec![format!("its fields: {}", fields.join(", "))];
        if name.contains("->") || name.contains('.') {
            hints.insert(
                0,
                "tracepoint fields print whole; struct members need a kprobe or uprobe".into(),
            );
        } else if let Some(near) = plan::did_you_mean(name, fields.iter().copied()) {
            hints.insert(0, near);
        }
        return Err(Error::usage(format!("{spec} has no field '{name}'"), hints));
    }
    Ok(selection)
}

/// The prototype of a probe on a function's entry or return: BTF for kernel functions, DWARF
/// for user functions; `None` (arg0..arg5) when neither describes it.
pub(super) fn prototype(
    spec: &ProbeSpec,
    btf: &mut Option<Option<KernelBtf>>,
) -> Option<Prototype> {
    match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
            ..
        } => {
            let btf = btf.get_or_insert_with(|| match KernelBtf::open() {
                Ok(btf) => Some(btf),
                Err(e) => {
                    notes::note(format_args!(
                        "kernel function arguments untyped (arg0..arg5): {}",
                        crate::describe(&e)
                    ));
                    None
                }
            });
            btf.as_ref()?
                .prototype(function)
                .unwrap_or_else(|e| untyped(spec, &e))
        }
        Target::User {
            file,
            at: UserAt::Symbol { name, offset: 0 },
        } => {
            let path = elf::resolve_file(file).ok()?;
            crate::kernel::dwarf::prototype(&path, name).unwrap_or_else(|e| untyped(spec, &e))
        }
        _ => None,
    }
}

/// Says why a probe's arguments fall back to arg0..arg5 when its BTF or DWARF could not be
/// read (a function they do not describe falls back silently: that is the common case).
fn untyped(spec: &ProbeSpec, err: &dyn std::error::Error) -> Option<Prototype> {
    notes::note(format_args!(
        "{spec}: arguments shown as arg0..arg5: {}",
        crate::describe(err)
    ));
    None
}

/// The string fields of a syscall entry record its program reads (name, and whether an
/// array): those printed.
fn syscall_strings(format: &Format, selection: &[String]) -> Vec<(String, bool)> {
    // The environment only when asked for by name (strace, too, shows its pointer unless
    // told otherwise): every exec would print all of it.
    let printed = |name: &str| match selection.is_empty() {
        true => name != "envp",
        false => selection.iter().any(|s| s == name),
    };
    (format.fields.iter())
        .filter(|f| printed(&f.name))
        .filter_map(|f| Some((f.name.clone(), user_string(&f.c_type)?)))
        .collect()
}

/// Whether a syscall tracepoint field of this C type points to a user string the call reads
/// (`Some(false)`: `const char *`) or an array of them (`Some(true)`: `const char *const *`,
/// argv and envp). A `char *` without `const` is a buffer the call fills (read's `buf`):
/// nothing is in it at the entry.
pub(super) fn user_string(c_type: &str) -> Option<bool> {
    let words: Vec<&str> = c_type.split_whitespace().collect();
    let t = words.join(" ");
    let rest = t.strip_prefix("const char")?;
    match rest.replace("const", "").replace(' ', "").as_str() {
        "*" => Some(false),
        "**" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod string_tests {
    use super::{record_head_used, user_string};

    #[test]
    fn a_streamed_record_is_read_only_as_far_as_its_printed_fields() {
        let format = |fields: &str| {
            let text = format!(
                "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t\
                 size:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\t\
                 signed:1;\n\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
                 {fields}\nprint fmt: \"\"\n"
            );
            crate::kernel::format::parse(&text).unwrap()
        };
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // sys_enter_getppid: nothing printed, nothing read.
        assert_eq!(record_head_used(&format(""), &[], &[]), Some(0));
        let openat = format(
            "\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n\
             \tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n",
        );
        assert_eq!(
            record_head_used(&openat, &[], &names(&["filename"])),
            Some(48)
        );
        assert_eq!(record_head_used(&openat, &names(&["dfd"]), &[]), Some(24));
        assert_eq!(
            record_head_used(&openat, &names(&["dfd"]), &names(&["filename"])),
            Some(32)
        );
        // A field past the head: the head, no more.
        let long = format("\tfield:u64 far;\toffset:72;\tsize:8;\tsigned:0;\n");
        assert_eq!(record_head_used(&long, &[], &[]), Some(64));
        let dynamic = format("\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n");
        assert_eq!(record_head_used(&dynamic, &[], &[]), None);
    }

    #[test]
    fn syscall_string_fields_are_the_const_char_pointers() {
        assert_eq!(user_string("const char *"), Some(false));
        assert_eq!(user_string("const char *const *"), Some(true));
        assert_eq!(user_string("const char * const *"), Some(true));
        assert_eq!(user_string("char *"), None, "a buffer the call fills");
        assert_eq!(user_string("const unsigned char *"), None);
        assert_eq!(user_string("const char"), None);
    }
}
