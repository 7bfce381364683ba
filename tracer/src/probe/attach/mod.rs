//! Probe specs -> attached probes: each spec's perf event opened, its program slot configured
//! (filters, strings, member reads, aggregation) and attached with `PERF_EVENT_IOC_SET_BPF`, or
//! a raw syscall tracepoint where that counts the same for less.

use tracer_common::{
    str_from, str_mem, SlotConfig, StrRead, SLOT_RETURN, SLOT_VALUE_FILTER, STRLEN_DEFAULT,
};

use super::aggregate::{self, ProbeValues};
use super::resolve::{open_event, tracepoint_error, KernelInterface, Opened};
use super::trampoline::{FunctionTarget, Trampolines, Via};
use super::usdt;
use super::values::{Memory, Values};
use super::Attached;
use super::{Decoder, Probe};
use crate::bpf::{Bpf, SlotKind};
use crate::kernel::btf::KernelBtf;
use crate::kernel::format::{FieldKind, Format};
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::params::Prototype;
use crate::kernel::tracefs::Tracefs;
use crate::perf;
use crate::plan::{ProbeSpec, Target};
use crate::stacks::{self};
use crate::Error;

mod lookup;
mod options;

pub use lookup::dispatchable;
pub(in crate::probe) use lookup::{
    at_function_entry, data_loc_string, member_lookup, prototype, record_string, user_string,
};
use lookup::{
    entry_hint, raw_syscall, record_head_used, record_strings, syscall_of, syscall_strings,
    tracepoint_selection,
};
pub use options::{base_config, dispatch, AttachOptions};

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
    /// The task offsets the programs read are set (`probe::tasks::set_task_offsets`).
    task_offsets: bool,
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
            task_offsets: false,
            attached: 0,
        }
    }

    /// Opens, configures and attaches one probe, disabled ([`Probe::enable`] starts it).
    pub fn attach(&mut self, bpf: &mut Bpf, spec: &ProbeSpec) -> Result<Probe, Error> {
        let index = self.attached;
        if let (0, Some(filter)) = (index, self.options.filter) {
            bpf.set_globs(&filter.globs)?;
        }
        // A kernel-side probe's copy of the user stack starts at the user registers on the
        // task's kernel stack, which the program finds by BTF offsets: read once per run.
        let user = matches!(spec.target, Target::User { .. });
        if !user && !self.task_offsets && self.options.copies_stack_top(spec) {
            crate::probe::tasks::set_task_offsets(bpf, self.fs)?;
            self.task_offsets = true;
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

/// Attaches one probe in phases: its route, what opening the route finds, its decoder, its
/// slot's configuration, then where its program runs.
fn attach(
    bpf: &mut Bpf,
    fs: &Tracefs,
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    (interface, trampolines): (&mut Option<KernelInterface>, &mut Trampolines),
    index: usize,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<Probe, Error> {
    let trampoline = trampolines.target(spec, btf)?;
    let mut open = || {
        open_event(
            fs,
            spec,
            interface,
            options.kprobe_interface,
            options.pid,
            index,
        )
    };
    let (route, site) = Route::open(fs, spec, options, trampoline, &mut open)?;
    let via = (site.kernel_function.is_some() || matches!(spec.target, Target::KernelAddr(_)))
        .then(|| Via::kprobe(spec));
    let trampoline = matches!(route, Route::Trampoline(_));
    let (kind, mut decoder) = decoder(
        spec,
        options,
        site.format,
        site.usdt.as_ref(),
        trampoline,
        btf,
    )?;
    let mut config = slot_config(spec, options, site.usdt.is_some());
    let follow = (site.binary.clone()).map(|binary| super::follow::Follow {
        spec: spec.clone(),
        pid: options.pid,
        binary,
        places: site.usdt.as_ref().map(|u| u.places),
    });
    let sources = count(spec, options, &mut config, &mut decoder, btf)?;
    let filter = value_filter(spec, options, &mut config, &mut decoder, btf)?;
    let filtered_string = filter.as_ref().is_some_and(|(_, string)| *string);
    let streamed = options.aggregation.is_none() || sources.key_string;
    configure_reads(spec, &mut config, &decoder, streamed || filtered_string);
    let stack_top = match options.copies_stack_top(spec) {
        true => stack_top_read(&mut config),
        false => None,
    };
    narrow_record(options, &mut config, &decoder, filter.is_some());
    let slot = Unplaced {
        kind,
        config,
        filter: filter.map(|(filter, _)| filter),
        usdt: site.usdt,
        legacy: site.legacy,
        via,
    };
    let placed = place(bpf, spec, route, slot, &decoder, trampolines, &mut open)?;
    Ok(Probe {
        name: spec.to_string(),
        via: placed.via,
        at_entry: placed.config.flags & tracer_common::SLOT_STACK_AT_ENTRY != 0,
        stack_top,
        slot: placed.attached.slot.clone(),
        decoder,
        kernel_function: site.kernel_function,
        sources,
        attached: std::cell::RefCell::new(vec![placed.attached]),
        follow: std::cell::RefCell::new(follow),
        _legacy: placed.legacy,
    })
}

/// How a probe's hits reach its program.
enum Route {
    /// A `syscalls:` tracepoint served by the dispatching raw syscall programs
    /// ([`AttachOptions::dispatch`]): no perf event of its own.
    Dispatched { nr: u32, exit: bool },
    /// A kernel function through its BPF trampoline (fentry/fexit); where the kernel refuses
    /// the trampoline, its kprobe's perf event, opened at placement.
    Trampoline(FunctionTarget),
    /// A perf event of its own: a kprobe, uprobe, USDT probe or tracepoint (a counted syscall
    /// tracepoint may be served by its raw twin instead, at placement, and the event closed
    /// unused).
    PerfEvent(perf::Event),
}

impl Route {
    /// Decides the route and opens what it needs: a dispatched syscall's record format, or
    /// the probe's perf event (`open`).
    fn open(
        fs: &Tracefs,
        spec: &ProbeSpec,
        options: &AttachOptions<'_>,
        trampoline: Option<FunctionTarget>,
        open: &mut dyn FnMut() -> Result<Opened, Error>,
    ) -> Result<(Route, Site), Error> {
        if let (true, Target::Tracepoint { category, name }, Some((_, nr, exit))) =
            (options.dispatch, &spec.target, syscall_of(spec))
        {
            let format =
                (fs.format(category, name)).map_err(|e| tracepoint_error(e, fs, category, name))?;
            return Ok((Route::Dispatched { nr, exit }, Site::record(format)));
        }
        if let Some(target) = trampoline {
            let site = Site::function(&target.function);
            return Ok((Route::Trampoline(target), site));
        }
        let opened = open()?;
        let site = Site {
            legacy: opened.legacy,
            format: opened.format,
            kernel_function: opened.kernel_function,
            usdt: opened.usdt,
            binary: opened.binary,
        };
        Ok((Route::PerfEvent(opened.event), site))
    }
}

/// What routing a probe found: its record format, kernel function or USDT site.
struct Site {
    legacy: Option<LegacyKprobe>,
    /// Tracepoints: the record format.
    format: Option<Format>,
    /// Kernel functions by name (for the "may be inlined" hint).
    kernel_function: Option<String>,
    usdt: Option<usdt::Site>,
    /// User probes: the file probed.
    binary: Option<super::resolve::Binary>,
}

impl Site {
    fn record(format: Format) -> Site {
        Site {
            legacy: None,
            format: Some(format),
            kernel_function: None,
            usdt: None,
            binary: None,
        }
    }

    fn function(function: &str) -> Site {
        Site {
            legacy: None,
            format: None,
            kernel_function: Some(function.to_string()),
            usdt: None,
            binary: None,
        }
    }
}

/// The slot's program type and the probe's decoder: a tracepoint's record fields, a return
/// probe's value (and at fexit its arguments), or an entry's arguments.
fn decoder(
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    format: Option<Format>,
    usdt: Option<&usdt::Site>,
    trampoline: bool,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<(SlotKind, Decoder), Error> {
    let decoder = match format {
        Some(format) => tracepoint_decoder(spec, options, format)?,
        None if spec.ret => return_decoder(spec, trampoline, btf)?,
        None => entry_decoder(spec, usdt, btf)?,
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
    let kind = match decoder {
        Decoder::Tracepoint { .. } => SlotKind::Tracepoint,
        Decoder::Entry(_) | Decoder::Return { .. } => SlotKind::Probe,
    };
    Ok((kind, decoder))
}

/// A tracepoint's decoder: the fields asked for, and the strings its program reads.
fn tracepoint_decoder(
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    format: Format,
) -> Result<Decoder, Error> {
    let selection = tracepoint_selection(spec, &format)?;
    // Syscall entry tracepoints carry user pointers to strings (filename, pathname, argv):
    // the BPF program reads those printed. Only streamed events carry strings; a counted hit
    // reads none.
    let syscall_entry = matches!(&spec.target, Target::Tracepoint { category, name }
        if category == "syscalls" && name.starts_with("sys_enter_"));
    // Other tracepoints' `__data_loc` strings are read where the record holds them.
    let strings = match (options.aggregation.is_none(), syscall_entry) {
        (true, true) => (syscall_strings(&format, &selection).into_iter())
            .map(|(name, _)| name)
            .take(tracer_common::STR_READS)
            .collect(),
        (true, false) => (record_strings(&format, &selection).into_iter())
            .take(tracer_common::STR_READS)
            .collect(),
        (false, _) => Vec::new(),
    };
    Ok(Decoder::Tracepoint {
        format,
        strings,
        selection,
    })
}

/// A return probe's decoder: its return value, typed where BTF or DWARF say, and at fexit
/// the arguments asked for.
fn return_decoder(
    spec: &ProbeSpec,
    trampoline: bool,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<Decoder, Error> {
    let asked: Vec<String> = (spec.args.iter())
        .filter(|a| *a != "ret" && *a != "str(ret)")
        .cloned()
        .collect();
    // At fexit the trampoline still has the arguments (checked again at placement, should
    // the kernel refuse the trampoline for a kretprobe); what the function returned can be
    // read through anywhere (`ret->member`).
    if asked.iter().any(|a| !reads_return(a)) && !trampoline {
        let mut hints = vec![entry_hint(spec)];
        if matches!(spec.target, Target::Kernel { .. }) {
            hints.push(
                "fexit sees a kernel function's arguments and return value together \
                 (fexit:FUNC(a, ret)), where the kernel permits fentry (`tracer features`)"
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
        false => Some(Values::at_return(
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
    Ok(Decoder::Return { proto, args })
}

/// Whether a listed value is read through the return value (`ret->member`,
/// `str(ret->name)`).
fn reads_return(name: &str) -> bool {
    let bare = crate::plan::reader(name).1;
    crate::kernel::btf::parse_access(bare).is_some_and(|(param, _)| param == "ret")
}

/// An entry's decoder: its arguments, typed by the USDT note, BTF or DWARF.
fn entry_decoder(
    spec: &ProbeSpec,
    usdt: Option<&usdt::Site>,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<Decoder, Error> {
    let proto = match usdt {
        Some(site) => Some(site.proto.clone()),
        None => prototype(spec, btf),
    };
    let memory = match spec.target {
        Target::User { .. } => Memory::User,
        // gcc-built kernels' BTF does not mark __user pointers: the address tells.
        Target::Kernel { .. } | Target::KernelAddr(_) | Target::Tracepoint { .. } => {
            Memory::ByAddress
        }
    };
    let values = Values::new(
        &spec.to_string(),
        proto.as_ref(),
        &spec.args,
        memory,
        &mut member_lookup(spec, btf),
    )?;
    Ok(Decoder::Entry(values))
}

/// The slot's configuration before its values: the run's filters, then what the spec asks
/// of every hit (the return value, USDT arguments, stacks).
fn slot_config(spec: &ProbeSpec, options: &AttachOptions<'_>, usdt: bool) -> SlotConfig {
    let mut config = options.base;
    if config.strlen == 0 {
        config.strlen = STRLEN_DEFAULT;
    }
    if usdt {
        config.flags |= tracer_common::SLOT_USDT;
    }
    if spec.ret {
        config.flags |= SLOT_RETURN;
    }
    if matches!(&spec.target, Target::Tracepoint { category, name }
        if category == "sched" && name == "sched_process_exec")
    {
        config.flags |= tracer_common::SLOT_AT_EXEC;
    }
    config.flags |= stacks::flags_for(options.stack, matches!(spec.target, Target::User { .. }));
    if config.flags & tracer_common::SLOT_STACK_USER != 0 && at_function_entry(spec) {
        config.flags |= tracer_common::SLOT_STACK_AT_ENTRY;
    }
    config
}

/// `--count-by/--sum/--hist`: the slot counts in the kernel; how its key and value are read.
fn count(
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    config: &mut SlotConfig,
    decoder: &mut Decoder,
    btf: &Option<Option<KernelBtf>>,
) -> Result<aggregate::Sources, Error> {
    let Some(agg) = options.aggregation else {
        return Ok(Default::default());
    };
    let stack_flags = stacks::flags_for(
        Some(options.stack.flatten()),
        matches!(spec.target, Target::User { .. }),
    );
    let mut lookup = member_lookup(spec, btf);
    let values = match &mut *decoder {
        Decoder::Tracepoint { format, .. } => ProbeValues::Record(format),
        Decoder::Entry(values) => ProbeValues::Entry(values, &mut lookup),
        Decoder::Return { proto, .. } => ProbeValues::Return(proto.as_ref()),
    };
    let sources = aggregate::configure(config, agg, spec, values, stack_flags)?;
    // A tracepoint's string key: its field becomes one of the strings read.
    if let (true, Some(name), Decoder::Tracepoint { strings, .. }) =
        (sources.key_string, agg.key_value(), decoder)
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
    Ok(sources)
}

/// `--filter`, resolved against this probe's values: the slot's filter, and whether it
/// compares a string the hit must read.
fn value_filter(
    spec: &ProbeSpec,
    options: &AttachOptions<'_>,
    config: &mut SlotConfig,
    decoder: &mut Decoder,
    btf: &Option<Option<KernelBtf>>,
) -> Result<Option<(tracer_common::Filter, bool)>, Error> {
    let Some(plan) = options.filter else {
        return Ok(None);
    };
    let mut lookup = member_lookup(spec, btf);
    let mut none = Vec::new();
    let (mut values, strings) = match decoder {
        Decoder::Tracepoint {
            format, strings, ..
        } => (ProbeValues::Record(format), strings),
        Decoder::Entry(values) => (ProbeValues::Entry(values, &mut lookup), &mut none),
        Decoder::Return { proto, .. } => (ProbeValues::Return(proto.as_ref()), &mut none),
    };
    let (filter, needs) = super::filter::resolve(plan, spec, &mut values, strings)?;
    config.flags |= SLOT_VALUE_FILTER;
    Ok(Some((filter, needs.value_string)))
}

/// The strings and member reads the slot makes: those printed (`read`: the hit is streamed,
/// or filtered on a string) or counted by.
fn configure_reads(spec: &ProbeSpec, config: &mut SlotConfig, decoder: &Decoder, read: bool) {
    match decoder {
        Decoder::Entry(values) => values.configure(config, read),
        Decoder::Tracepoint {
            format, strings, ..
        } => {
            for (slot, name) in config.strs.iter_mut().zip(strings) {
                let field = format.field(name).expect("a field of this format");
                // A `__data_loc` string or a `char[N]` lies in the record (kernel memory);
                // the others are a syscall's user pointers.
                let offset = field.offset as u32;
                let (at, memory) = match field.kind {
                    _ if data_loc_string(&field.c_type) => {
                        (offset | str_from::RECORD_DATA_LOC, str_mem::KERNEL)
                    }
                    FieldKind::String { len } if len > 0 => {
                        (offset | str_from::RECORD_CHARS, str_mem::KERNEL)
                    }
                    _ => (offset, str_mem::USER),
                };
                *slot = StrRead {
                    at,
                    from: str_from::RECORD,
                    memory,
                    array: u8::from(user_string(&field.c_type) == Some(true)),
                    len_from: 0,
                };
            }
        }
        // A function returning `char *`: the string it returns, after the arguments' (fexit).
        Decoder::Return { proto, args } => {
            if let Some(values) = args {
                values.configure(config, read);
            }
            let at = args.as_ref().map_or(0, Values::string_reads);
            let string = proto
                .as_ref()
                .is_some_and(|p| p.ret == crate::kernel::params::Kind::Str);
            if let (true, true, Some(slot)) = (string, read, config.strs.get_mut(at)) {
                *slot = StrRead {
                    at: 0,
                    from: str_from::RETURN,
                    memory: match spec.target {
                        Target::User { .. } => str_mem::USER,
                        Target::Kernel { .. }
                        | Target::KernelAddr(_)
                        | Target::Tracepoint { .. } => str_mem::AUTO,
                    },
                    array: 0,
                    len_from: 0,
                };
            }
        }
    }
}

/// Makes the slot's first free string read the copy of the user stack's top, as `tracer trace
/// -k` does ([`StrRead::STACK_TOP`]); its read index, or `None` when the probe's own strings
/// take every read.
fn stack_top_read(config: &mut SlotConfig) -> Option<u8> {
    let (k, free) = (config.strs.iter_mut().enumerate()).find(|(_, r)| r.from == str_from::NONE)?;
    *free = StrRead::STACK_TOP;
    Some(k as u8)
}

/// A streamed tracepoint hit reads only the part of its record that is printed or read
/// strings from. A counted hit reads it only for its key or value already; a filter, or a
/// recording, reads the whole head.
fn narrow_record(
    options: &AttachOptions<'_>,
    config: &mut SlotConfig,
    decoder: &Decoder,
    filtered: bool,
) {
    let Decoder::Tracepoint {
        format,
        strings,
        selection,
    } = decoder
    else {
        return;
    };
    let narrow = !options.whole_record && options.aggregation.is_none() && !filtered;
    if let Some(len) = narrow
        .then(|| record_head_used(format, selection, strings))
        .flatten()
    {
        config.flags |= tracer_common::SLOT_RECORD_LEN;
        config.record_len = len as u64;
    }
}

/// A configured slot not yet given a program: what placing it needs.
struct Unplaced {
    kind: SlotKind,
    config: SlotConfig,
    filter: Option<tracer_common::Filter>,
    usdt: Option<usdt::Site>,
    legacy: Option<LegacyKprobe>,
    /// A kernel probe's interface, before the trampoline is tried.
    via: Option<Via>,
}

/// Where a probe's program runs.
struct Placed {
    attached: Attached,
    via: Option<Via>,
    /// The slot's configuration as taken (at a function's entry through its trampoline, with
    /// `SLOT_STACK_AT_ENTRY` for kernel stacks).
    config: SlotConfig,
    legacy: Option<LegacyKprobe>,
}

/// Takes the probe's slot and attaches its program, by route: a dispatched syscall slot; a
/// kernel function linked to its trampoline (or, where the kernel refuses that and it was not
/// asked for by name, its kprobe's event, opened now); a raw syscall twin where that counts
/// the same; otherwise the perf event opened for it.
fn place(
    bpf: &mut Bpf,
    spec: &ProbeSpec,
    route: Route,
    mut slot: Unplaced,
    decoder: &Decoder,
    trampolines: &mut Trampolines,
    open: &mut dyn FnMut() -> Result<Opened, Error>,
) -> Result<Placed, Error> {
    let attached = match route {
        Route::Dispatched { nr, exit } => {
            let filter = slot.filter.as_ref();
            Attached::raw(bpf.take_syscall_slot(slot.config, nr, exit, filter)?)
        }
        Route::Trampoline(target) => {
            through_trampoline(bpf, spec, &target, &mut slot, decoder, trampolines, open)?
        }
        // A raw tracepoint when it can count this; the perf tracepoint otherwise, or when the
        // raw one cannot be had (all raw slots taken, a kernel without raw tracepoints). The
        // perf event opened for it is then closed unused.
        Route::PerfEvent(event) => {
            let raw = raw_syscall(spec, &slot.config).and_then(|(tracepoint, nr, exit)| {
                let mut config = slot.config;
                config.raw_syscall = nr;
                if exit {
                    config.flags |= tracer_common::SLOT_RAW_SYS_EXIT;
                }
                bpf.take_raw_slot(config, tracepoint).ok()
            });
            match raw {
                Some(taken) => Attached::raw(taken),
                None => on_event(bpf, &slot, event)?,
            }
        }
    };
    Ok(Placed {
        attached,
        via: slot.via,
        config: slot.config,
        legacy: slot.legacy,
    })
}

/// A kernel function's slot linked to its trampoline; where the kernel refuses that (and the
/// trampoline was not asked for by name), its kprobe's event, opened now.
fn through_trampoline(
    bpf: &mut Bpf,
    spec: &ProbeSpec,
    target: &FunctionTarget,
    slot: &mut Unplaced,
    decoder: &Decoder,
    trampolines: &mut Trampolines,
    open: &mut dyn FnMut() -> Result<Opened, Error>,
) -> Result<Attached, Error> {
    // At the entry, kernel stacks get the function's address to begin with (see
    // `SLOT_STACK_AT_ENTRY`).
    let mut config = slot.config;
    if !spec.ret && config.flags & tracer_common::SLOT_STACK_KERNEL != 0 {
        config.flags |= tracer_common::SLOT_STACK_AT_ENTRY;
    }
    let filter = slot.filter.as_ref();
    match bpf.take_function_slot(config, filter, &target.function, target.btf_id, spec.ret) {
        Ok((taken, link)) => {
            trampolines.linked();
            slot.via = Some(if spec.ret { Via::Fexit } else { Via::Fentry });
            slot.config = config;
            Ok(Attached::linked(taken, link))
        }
        Err(e) => {
            let reason = e.refusal();
            trampolines.failed(spec, target, e)?;
            if let Decoder::Return {
                args: Some(values), ..
            } = decoder
            {
                if !(values.columns.iter()).all(|c| reads_return(&c.name)) {
                    return Err(Error::Runtime {
                        message: format!(
                            "cannot read the arguments of {spec} at its return: fexit was \
                         refused ({reason}), and a kretprobe sees only the return value"
                        ),
                        hints: vec![entry_hint(spec)],
                    });
                }
            }
            let opened = open()?;
            slot.legacy = opened.legacy;
            on_event(bpf, slot, opened.event)
        }
    }
}

/// A slot of the probe's kind on its perf event, with its USDT places and filter, attached
/// disabled.
fn on_event(bpf: &mut Bpf, slot: &Unplaced, event: perf::Event) -> Result<Attached, Error> {
    let taken = bpf.take_slot(slot.kind, slot.config)?;
    if let Some(site) = &slot.usdt {
        bpf.set_usdt_args(&taken, &site.places)?;
    }
    if let Some(filter) = &slot.filter {
        bpf.set_filter(&taken, filter)?;
    }
    Attached::disabled(bpf, taken, event)
}
