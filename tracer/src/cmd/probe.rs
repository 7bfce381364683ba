//! `tracer probe`: kernel functions, user functions and tracepoints, one typed line per hit.
//!
//! Each probe opens one perf event (pid -1, CPU 0: a probe's BPF program runs for every hit
//! anyway) and attaches its own program slot with `PERF_EVENT_IOC_SET_BPF`; the pid, tid,
//! comm, CPU, cgroup and `-- COMMAND` filters run in the BPF program.

use std::ffi::CString;
use std::time::{Duration, Instant};

use tracer_common::{
    Event, SchedOffsets, SlotConfig, SLOT_RETURN, SLOT_STR_TP_USER, TRACK_PENDING,
};

use crate::bpf::{Bpf, RingBufSize, Sizing, Slot, SlotKind};
use crate::cli::{KprobeInterface, ProbeArgs, Transport};
use crate::cmd::values::{Memory, Values};
use crate::kernel::btf::KernelBtf;
use crate::kernel::features::Feature;
use crate::kernel::format::{Format, Value};
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::params::{Kind, Member, Prototype};
use crate::kernel::tracefs::Tracefs;
use crate::kernel::{self, elf};
use crate::launch;
use crate::output::events::{Decoded, EventWriter};
use crate::perf::{self, EventKind, KprobeTarget, Options, Scope, Wakeup};
use crate::plan::{self, ProbePlan, ProbeSpec, Target, UserAt};
use crate::session::{Attached, End, EventLoop, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::Error;

/// How a slot's events are turned into named values (kept in recorded traces, so that they
/// decode on another machine).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Decoder {
    Tracepoint {
        format: Format,
        /// The field whose user string the BPF program read (syscall tracepoints).
        string_field: Option<String>,
        /// The fields to print, in order (`CAT:NAME(a,b)`, `--args`); empty: all.
        selection: Vec<String>,
    },
    /// kprobe/uprobe entries: the registers and struct members, named and typed by the
    /// function's prototype when BTF or DWARF has it (else arg0..arg5).
    Entry(Values),
    /// kretprobe/uretprobe: the return value, typed by the prototype.
    Return { proto: Option<Prototype> },
}

/// One attached probe. Field order is drop order: the perf event goes before the legacy
/// kprobe it uses.
pub(crate) struct Probe {
    pub(crate) name: String,
    pub(crate) slot: Slot,
    pub(crate) decoder: Decoder,
    kernel_function: Option<String>,
    /// With `--count-by`: how the probe's values are read.
    sources: crate::cmd::counts::Sources,
    delivered: u64,
    /// Struct member reads that failed (bad pointers), printed as `?`.
    faults: u64,
    _attached: Attached,
    _legacy: Option<LegacyKprobe>,
}

impl Probe {
    /// Starts the probe's program (probes are attached disabled, then started together).
    pub(crate) fn enable(&self) -> Result<(), Error> {
        self._attached.enable()
    }
}

/// How kernel functions are probed on this kernel.
pub(crate) enum KernelInterface {
    Pmu {
        type_: u32,
        retprobe_bit: Option<u32>,
    },
    Tracefs,
}

pub fn run(args: ProbeArgs) -> Result<i32, Error> {
    let plan = plan::probe_plan(&args)?;
    let fs = Tracefs::locate()?;
    let specs = expand(&plan.specs, &fs)?;

    // Fork the command (held before exec) before any thread exists.
    let mut launched = match plan.command.is_empty() {
        true => None,
        false => Some(launch::launch(&plan.command)?),
    };
    let stack_keys = plan
        .aggregation
        .as_ref()
        .is_some_and(|a| a.keys.contains(&plan::KeyPart::Stack));
    let mut base = plan.filter;
    // tracer's own work (reading formats, draining rings) is never reported.
    base.exclude_tgid = std::process::id();
    if launched.is_some() {
        base.flags |= tracer_common::SLOT_FILTER_TRACKED;
    }
    // The comm of each hit comes from a per-CPU cache, kept right by a program on
    // task:task_rename (every kernel tracer supports has it; without it, the helper each time).
    let rename_tracepoint = fs.tracepoint_id("task", "task_rename").ok();
    // Counted hits of one task in a row on one CPU are added up in a per-CPU run first, kept
    // right by the same program (and the tracking programs, which also move the generation).
    let comm_cache = match (rename_tracepoint, &plan.aggregation) {
        (Some(_), Some(_)) => tracer_common::USES_COMM_CACHE | tracer_common::USES_RUN_COUNT,
        (Some(_), None) => tracer_common::USES_COMM_CACHE,
        (None, _) => 0,
    };
    let mut bpf = Bpf::load_with(Sizing {
        stacks: plan.stack.is_some() || stack_keys,
        counts: plan.aggregation.is_some(),
        latency: false,
        uses: uses(&plan, &specs, &base, stack_keys) | comm_cache,
        ringbuf: ringbuf_size(&plan),
    })?;
    let mut rings = match plan.transport {
        Transport::Ringbuf => OutputRings::open_ringbuf(&mut bpf)?,
        Transport::Perf => {
            let wakeup = match plan.wakeup_events {
                Some(n) => Wakeup::Events(n),
                // Wake the reader when a quarter of the ring is full; a 100 ms tick drains the
                // rest.
                None => crate::session::quarter_full(plan.ring_pages),
            };
            OutputRings::open(&mut bpf, plan.ring_pages, wakeup)?
        }
    };
    // Before any probe: raw tracepoint slots run from their attach on, and a rename the cache's
    // program missed would leave a stale name cached.
    let _comm_cache = match rename_tracepoint {
        Some(id) => Some(start_comm_cache(&mut bpf, id)?),
        None => None,
    };
    let mut probes = Vec::new();
    let mut interface = None;
    // Kernel BTF, opened at the first kernel function (`None` inside: not available).
    let mut btf = None;
    for (index, spec) in specs.iter().enumerate() {
        probes.push(attach(
            &mut bpf,
            &fs,
            spec,
            base,
            &plan,
            &mut interface,
            index,
            &mut btf,
        )?);
    }
    // `-- COMMAND`: follow the command's process tree, from its exec on.
    let mut _tracking = Vec::new();
    if let Some(child) = launched.as_mut() {
        _tracking = start_tracking(&mut bpf, &fs)?;
        bpf.track(child.pid(), TRACK_PENDING)?;
    }

    let event_loop = EventLoop::new()?;
    for probe in &probes {
        probe._attached.enable()?;
    }
    let start_ns = crate::session::monotonic_ns();
    let names: Vec<&str> = probes.iter().map(|p| p.name.as_str()).collect();
    let what = if names.len() == 1 {
        names[0].to_string()
    } else {
        format!("{} probes ({})", names.len(), names.join(", "))
    };
    let verb = match plan.aggregation {
        Some(_) => "Counting",
        None => "Tracing",
    };
    match &launched {
        Some(_) => eprintln!(
            "{verb} {what} in `{}`... Hit Ctrl-C to end.",
            plan.command.join(" ")
        ),
        None => eprintln!("{verb} {what}... Hit Ctrl-C to end."),
    }
    if let Some(agg) = &plan.aggregation {
        return run_counts(bpf, &probes, agg, &plan, launched, event_loop, &rings);
    }
    let mut writer = EventWriter::new(
        std::io::BufWriter::new(std::io::stdout().lock()),
        plan.output,
        start_ns,
    );
    // Flushed before the command runs: it writes to the same terminal.
    writer
        .header()
        .and_then(|()| writer.flush())
        .map_err(Error::Output)?;
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }

    let started = Instant::now();
    let mut state = LoopState {
        probes,
        rings: &mut rings,
        writer: &mut writer,
        bpf: &bpf,
        count: plan.count,
        delivered: 0,
        reported_lost: 0,
        started,
        hinted: false,
        symbolizer: Symbolizer::default(),
    };
    let ring_fds = state.rings.raw_fds();
    let end = event_loop.run(&mut state, ring_fds, launched.as_mut(), plan.duration)?;
    let elapsed = started.elapsed();
    summary(&state, &bpf, elapsed, &end, &plan)?;
    let (_, lost) = bpf.stats()?;
    if plan.fail_on_loss && lost > 0 {
        return Err(Error::Runtime {
            message: format!("{lost} events were lost (--fail-on-loss)"),
            hints: vec![format!("raise --ring-pages (now {})", plan.ring_pages)],
        });
    }
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

/// The BPF ring buffer of `--transport ringbuf`: `--ring-pages` pages, waking the reader when
/// a quarter is full, or with `--wakeup-events N` once N events' worth of bytes (counted at the
/// size of an event without a string) are waiting.
fn ringbuf_size(plan: &ProbePlan) -> Option<RingBufSize> {
    if plan.transport != Transport::Ringbuf {
        return None;
    }
    let bytes = plan.ring_pages * crate::perf::sys::page_size();
    let wakeup_bytes = match plan.wakeup_events {
        Some(n) => u64::from(n) * Event::SHORT_SIZE as u64,
        None => bytes as u64 / 4,
    };
    Some(RingBufSize {
        bytes: bytes as u32,
        // 0 would mean the perf rings to the programs.
        wakeup_bytes: wakeup_bytes.max(1),
    })
}

/// The rest of a `--count-by`/`--sum`/`--hist` run: nothing is streamed; the counts are read
/// every interval and at the end, then a summary of hits and of hits that could not be
/// counted (map full).
fn run_counts(
    bpf: Bpf,
    probes: &[Probe],
    agg: &plan::Aggregation,
    plan: &ProbePlan,
    mut launched: Option<launch::Launched>,
    event_loop: EventLoop,
    rings: &OutputRings,
) -> Result<i32, Error> {
    if let Some(child) = launched.as_mut() {
        child.release()?;
    }
    let started = Instant::now();
    let mut sink = crate::cmd::counts::CountSink {
        bpf: &bpf,
        probes: probes
            .iter()
            .map(|p| crate::cmd::counts::Counted {
                name: &p.name,
                slot: &p.slot,
                sources: p.sources,
            })
            .collect(),
        agg,
        symbolizer: Symbolizer::default(),
        out: std::io::BufWriter::new(std::io::stdout().lock()),
        format: plan.output,
        started,
        last: started,
        intervals: 0,
        previous: Default::default(),
    };
    let end = event_loop.run(&mut sink, rings.raw_fds(), launched.as_mut(), plan.duration)?;
    sink.print(false)?;
    let stacks = sink.symbolizer.summary();
    drop(sink);
    let why = end_reason(&end, started.elapsed(), 0);
    let (hits, failed) = bpf.stats()?;
    eprintln!(
        "\n{hits} hits counted in the kernel in {:.2} s, {why}; {failed} not counted",
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        eprintln!(
            "not counted: the count map holds {} keys; use fewer or coarser --count-by keys, or -I to empty it each interval",
            tracer_common::AGG_ENTRIES
        );
    }
    if let Some(line) = stacks {
        eprintln!("stacks: {line}");
    }
    Ok(match end {
        End::CommandExited(code) => code,
        _ => 0,
    })
}

/// Why a run ended, for its summary line.
fn end_reason(end: &End, elapsed: Duration, events: u64) -> String {
    match end {
        End::Interrupted => "interrupted".to_string(),
        End::Duration => format!("after {:.1} s (-d)", elapsed.as_secs_f64()),
        End::Count => format!("after {events} events (-c)"),
        End::CommandExited(code) => format!("command exited with status {code}"),
        End::TargetGone => "the target is gone".to_string(),
    }
}

/// Expands globs against tracefs, the traceable functions and ELF symbols.
pub(crate) fn expand(specs: &[ProbeSpec], fs: &Tracefs) -> Result<Vec<ProbeSpec>, Error> {
    let mut out = Vec::new();
    for spec in specs {
        if !spec.is_glob() {
            out.push(spec.clone());
            continue;
        }
        let expanded: Vec<ProbeSpec> = match &spec.target {
            Target::Tracepoint { category, name } => fs
                .tracepoints()
                .into_iter()
                .filter(|(c, n)| plan::glob_match(category, c) && plan::glob_match(name, n))
                .map(|(category, name)| ProbeSpec {
                    target: Target::Tracepoint { category, name },
                    ret: false,
                    args: spec.args.clone(),
                })
                .collect(),
            Target::Kernel { function, offset } => functions(fs)
                .into_iter()
                .filter(|f| plan::glob_match(function, f))
                .map(|f| ProbeSpec {
                    target: Target::Kernel {
                        function: f,
                        offset: *offset,
                    },
                    ret: spec.ret,
                    args: spec.args.clone(),
                })
                .collect(),
            Target::User {
                file,
                at: UserAt::Symbol { name, offset },
            } => {
                let path = elf::resolve_file(file)?;
                elf::function_symbols(&path)?
                    .into_iter()
                    .filter(|s| plan::glob_match(name, s))
                    .map(|s| ProbeSpec {
                        target: Target::User {
                            file: file.clone(),
                            at: UserAt::Symbol {
                                name: s,
                                offset: *offset,
                            },
                        },
                        ret: spec.ret,
                        args: spec.args.clone(),
                    })
                    .collect()
            }
            _ => vec![spec.clone()],
        };
        if expanded.is_empty() {
            return Err(Error::usage(
                format!("'{spec}' matches nothing"),
                vec!["list what exists with `tracer list PATTERN`".into()],
            ));
        }
        let cap = plan::MAX_PROBES_PER_KIND;
        if expanded.len() > cap {
            return Err(Error::usage(
                format!("'{spec}' matches {} probes; at most {cap} of one kind can be attached in one run", expanded.len()),
                vec![format!("narrow the pattern; the first matches are: {}", expanded.iter().take(5).map(ToString::to_string).collect::<Vec<_>>().join(", "))],
            ));
        }
        eprintln!("'{spec}' matches {} probes", expanded.len());
        out.extend(expanded);
    }
    Ok(out)
}

/// Traceable kernel functions (ftrace's list, else kallsyms text symbols).
fn functions(fs: &Tracefs) -> Vec<String> {
    let list = fs.traceable_functions();
    if list.is_empty() {
        kernel::kallsyms_functions()
    } else {
        list
    }
}

/// A probe's perf event, opened disabled, with what it needs to be decoded and cleaned up.
pub(crate) struct Opened {
    pub event: perf::Event,
    /// Field order is drop order: the event above goes before the legacy kprobe it uses.
    pub legacy: Option<LegacyKprobe>,
    /// Tracepoints: the record format.
    pub format: Option<Format>,
    /// Kernel probes by name: the function (for hints).
    pub kernel_function: Option<String>,
}

/// What one probe spec becomes before it is opened: the event, the legacy kprobe it may need
/// (kept alive as long as the event), the tracepoint format, the kernel function (for hints).
pub(crate) struct ProbeEvent {
    pub kind: EventKind,
    pub legacy: Option<LegacyKprobe>,
    pub format: Option<Format>,
    pub kernel_function: Option<String>,
}

/// The retprobe format bit of a PMU for a return probe (`None` for an entry probe); an error
/// when the PMU cannot do return probes, rather than silently counting entries.
fn retprobe_bit(pmu: &str, bit: Option<u32>, ret: bool) -> Result<Option<u32>, Error> {
    match (ret, bit) {
        (false, _) => Ok(None),
        (true, Some(bit)) => Ok(Some(bit)),
        (true, None) => Err(Error::Runtime {
            message: format!("the {pmu} PMU has no retprobe format bit"),
            hints: vec![format!(
                "this kernel cannot do return probes through the {pmu} PMU"
            )],
        }),
    }
}

/// Resolves a probe spec to its perf event: kernel functions through the kprobe PMU (or
/// `kprobe_events`, with an explanation and alternatives when neither exists), user functions
/// through the uprobe PMU, tracepoints by id. Shared by `probe`, `latency` and `stat`.
pub(crate) fn event_kind(
    fs: &Tracefs,
    spec: &ProbeSpec,
    interface: &mut Option<KernelInterface>,
    choice: Option<KprobeInterface>,
    index: usize,
) -> Result<ProbeEvent, Error> {
    let plain = |kind, format| ProbeEvent {
        kind,
        legacy: None,
        format,
        kernel_function: None,
    };
    match &spec.target {
        Target::Tracepoint {
            category,
            name: event,
        } => {
            let format = fs
                .format(category, event)
                .map_err(|e| tracepoint_error(e, fs, category, event))?;
            Ok(plain(EventKind::Tracepoint(format.id), Some(format)))
        }
        Target::Kernel { .. } | Target::KernelAddr(_) => {
            if interface.is_none() {
                *interface = Some(kernel_interface(spec, fs, choice)?);
            }
            match (interface.as_ref().expect("set above"), &spec.target) {
                (
                    KernelInterface::Pmu {
                        type_,
                        retprobe_bit: bit,
                    },
                    target,
                ) => {
                    let (target, function) = match target {
                        Target::Kernel { function, offset } => {
                            let name = CString::new(function.as_str())
                                .map_err(|_| Error::usage("NUL in function name", Vec::new()))?;
                            (
                                KprobeTarget::Symbol {
                                    name,
                                    offset: *offset,
                                },
                                Some(function.clone()),
                            )
                        }
                        Target::KernelAddr(addr) => (KprobeTarget::Address(*addr), None),
                        _ => unreachable!("kernel targets only"),
                    };
                    let kind = EventKind::Kprobe {
                        pmu_type: *type_,
                        target,
                        retprobe_bit: retprobe_bit("kprobe", *bit, spec.ret)?,
                    };
                    Ok(ProbeEvent {
                        kind,
                        legacy: None,
                        format: None,
                        kernel_function: function,
                    })
                }
                (KernelInterface::Tracefs, Target::Kernel { function, offset }) => {
                    LegacyKprobe::remove_stale(fs);
                    let legacy = LegacyKprobe::create(fs, function, *offset, spec.ret, index)
                        .map_err(|e| unknown_function(e.into(), fs, function))?;
                    Ok(ProbeEvent {
                        kind: EventKind::Tracepoint(legacy.id),
                        legacy: Some(legacy),
                        format: None,
                        kernel_function: Some(function.clone()),
                    })
                }
                (KernelInterface::Tracefs, _) => Err(Error::usage(
                    "kprobes by address need the kprobe PMU",
                    vec!["give a function name instead".into()],
                )),
            }
        }
        Target::User { file, at } => {
            let (path, offset) = uprobe_location(file, at)?;
            let pmu = perf::pmu::Pmus::default()
                .get("uprobe")?
                .ok_or_else(|| Error::Runtime {
                    message: format!("cannot probe {spec}: this kernel has no uprobe PMU"),
                    hints: vec![
                        "the kernel needs CONFIG_UPROBE_EVENTS; see `tracer features`".into(),
                    ],
                })?;
            let kind = EventKind::Uprobe {
                pmu_type: pmu.type_,
                path: CString::new(path.as_os_str().as_encoded_bytes())
                    .map_err(|_| Error::usage("NUL in path", Vec::new()))?,
                offset,
                retprobe_bit: retprobe_bit("uprobe", pmu.flag_bit("retprobe"), spec.ret)?,
            };
            Ok(plain(kind, None))
        }
    }
}

/// Opens the perf event of one probe spec, disabled. A uprobe is armed only in `pid` when one
/// is given; everything else opens with pid -1 on CPU 0: a probe's BPF program runs for every
/// hit whatever the event's scope, and the filters run in BPF.
pub(crate) fn open_event(
    fs: &Tracefs,
    spec: &ProbeSpec,
    interface: &mut Option<KernelInterface>,
    choice: Option<KprobeInterface>,
    pid: Option<u32>,
    index: usize,
) -> Result<Opened, Error> {
    let resolved = event_kind(fs, spec, interface, choice, index)?;
    let scope = match (&spec.target, pid) {
        (Target::User { .. }, Some(pid)) => Scope::Task { pid, cpu: None },
        _ => Scope::Cpu(0),
    };
    let options = Options {
        flags: perf::attr::flag::DISABLED,
        ..Options::default()
    };
    let event =
        perf::Event::open(spec.to_string(), &resolved.kind, &options, &scope).map_err(|e| {
            match &resolved.kernel_function {
                Some(f) if e.errno() == Some(libc::ENOENT) => unknown_function(e.into(), fs, f),
                _ => e.into(),
            }
        })?;
    Ok(Opened {
        event,
        legacy: resolved.legacy,
        format: resolved.format,
        kernel_function: resolved.kernel_function,
    })
}

/// The parts of the BPF programs this run's slots may use (`USES_*`), worked out before any
/// probe is opened: a superset of what [`attach`] configures (which `Bpf::take_slot` checks),
/// so the verifier sees only the code this run can reach.
fn uses(plan: &ProbePlan, specs: &[ProbeSpec], base: &SlotConfig, stack_keys: bool) -> u32 {
    use tracer_common::{
        USES_AGGREGATE, USES_AGG_VALUE, USES_FIELDS, USES_FILTERS, USES_STACKS, USES_STREAM,
        USES_STRINGS, USES_TRACKED,
    };
    let mut uses = base.uses() & (USES_FILTERS | USES_TRACKED);
    uses |= match &plan.aggregation {
        Some(agg) if agg.value.is_some() || agg.key_value().is_some() => {
            USES_AGGREGATE | USES_AGG_VALUE
        }
        Some(_) => USES_AGGREGATE,
        None => USES_STREAM,
    };
    if plan.stack.is_some() || stack_keys {
        uses |= USES_STACKS;
    }
    for spec in specs {
        uses |= match &spec.target {
            // Streamed syscall entry records carry user pointers to strings (filename,
            // pathname); counted hits read none.
            Target::Tracepoint { category, name } => {
                let syscall_entry = category == "syscalls" && name.starts_with("sys_enter_");
                match syscall_entry && plan.aggregation.is_none() {
                    true => USES_STRINGS,
                    false => 0,
                }
            }
            // String arguments and struct member reads.
            _ => USES_STRINGS | USES_FIELDS,
        };
    }
    uses
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn attach(
    bpf: &mut Bpf,
    fs: &Tracefs,
    spec: &ProbeSpec,
    base: SlotConfig,
    plan: &ProbePlan,
    interface: &mut Option<KernelInterface>,
    index: usize,
    btf: &mut Option<Option<KernelBtf>>,
) -> Result<Probe, Error> {
    let pid = (plan.filter.tgid != 0).then_some(plan.filter.tgid);
    let opened = open_event(fs, spec, interface, plan.kprobe_interface, pid, index)?;
    let mut config = base;
    if spec.ret {
        config.flags |= SLOT_RETURN;
    }
    config.flags |=
        crate::stacks::flags_for(plan.stack, matches!(spec.target, Target::User { .. }));
    let (kind, mut decoder) = match opened.format {
        Some(format) => {
            let selection = tracepoint_selection(spec, &format)?;
            // Syscall entry tracepoints carry user pointers to strings (filename, pathname):
            // the BPF program reads the first one printed.
            let string_field = match &spec.target {
                Target::Tracepoint { category, name }
                    if category == "syscalls" && name.starts_with("sys_enter_") =>
                {
                    let printed =
                        |name: &str| selection.is_empty() || selection.iter().any(|s| s == name);
                    format
                        .fields
                        .iter()
                        .find(|f| f.c_type.contains("char *") && printed(&f.name))
                        .map(|f| {
                            // Only streamed events carry strings; a counted hit reads none.
                            if plan.aggregation.is_none() {
                                config.flags |= SLOT_STR_TP_USER;
                                config.str_arg = f.offset as u32;
                            }
                            f.name.clone()
                        })
                }
                _ => None,
            };
            (
                SlotKind::Tracepoint,
                Decoder::Tracepoint {
                    format,
                    string_field,
                    selection,
                },
            )
        }
        None if spec.ret => {
            if spec.args.iter().any(|a| a != "ret") {
                return Err(Error::usage(
                    format!(
                        "{spec} sees only the return value; '{}' is gone by then",
                        spec.args.join(", ")
                    ),
                    vec![format!(
                        "probe the entry too: '{}({})' beside the return probe",
                        spec.to_string()
                            .replace("kretprobe:", "")
                            .replace("uretprobe:", "uprobe:"),
                        spec.args.join(", ")
                    )],
                ));
            }
            let proto = prototype(spec, btf);
            (SlotKind::Probe, Decoder::Return { proto })
        }
        None => {
            let proto = prototype(spec, btf);
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
    let sources = match &plan.aggregation {
        Some(agg) => {
            let stack_flags = crate::stacks::flags_for(
                Some(plan.stack.flatten()),
                matches!(spec.target, Target::User { .. }),
            );
            let mut lookup = member_lookup(spec, btf);
            let values = match &mut decoder {
                Decoder::Tracepoint { format, .. } => {
                    crate::cmd::counts::ProbeValues::Record(format)
                }
                Decoder::Entry(values) => {
                    crate::cmd::counts::ProbeValues::Entry(values, &mut lookup)
                }
                Decoder::Return { proto } => {
                    crate::cmd::counts::ProbeValues::Return(proto.as_ref())
                }
            };
            crate::cmd::counts::configure(&mut config, agg, spec, values, stack_flags)?
        }
        None => Default::default(),
    };
    if let Decoder::Entry(values) = &decoder {
        values.configure(&mut config, plan.aggregation.is_none());
    }
    // A raw tracepoint when it can count this; the perf tracepoint otherwise, or when the raw
    // one cannot be had (all raw slots taken, a kernel without raw tracepoints). The perf
    // event opened above is then closed unused.
    let raw = raw_syscall(spec, &config).and_then(|(tracepoint, nr, exit)| {
        let mut raw_config = config;
        raw_config.raw_syscall = nr;
        if exit {
            raw_config.flags |= tracer_common::SLOT_RAW_SYS_EXIT;
        }
        bpf.take_raw_slot(raw_config, tracepoint).ok()
    });
    let attached = match raw {
        Some(slot) => Attached::raw(slot),
        None => {
            let slot = bpf.take_slot(kind, config)?;
            Attached::disabled(bpf, slot, opened.event)?
        }
    };
    let slot = attached.slot.clone();
    Ok(Probe {
        name: spec.to_string(),
        slot,
        decoder,
        kernel_function: opened.kernel_function,
        sources,
        delivered: 0,
        faults: 0,
        _attached: attached,
        _legacy: opened.legacy,
    })
}

/// Counting a `syscalls:` tracepoint by task, CPU or stack only: the raw tracepoint
/// (`sys_enter` or `sys_exit`), the syscall's number, and whether it is the exit. The raw
/// tracepoint skips the trace record the perf path fills for every hit and filters by number
/// in BPF (on this VM it saves little, +320 vs +345 ns per hit, because the program's helper
/// calls dominate; docs/benchmarks.md). `None` when a key or value needs the record, or the
/// number is not known for the name.
fn raw_syscall(spec: &ProbeSpec, config: &SlotConfig) -> Option<(&'static str, u32, bool)> {
    use tracer_common::{AGG_HIST, AGG_KEY_VALUE, AGG_SUM, SLOT_AGGREGATE};
    let counted_only = config.flags & SLOT_AGGREGATE != 0
        && config.agg & (AGG_KEY_VALUE | AGG_SUM | AGG_HIST) == 0;
    let Target::Tracepoint { category, name } = &spec.target else {
        return None;
    };
    if !counted_only || category != "syscalls" || !cfg!(target_arch = "x86_64") {
        return None;
    }
    let (tracepoint, exit, call) = match name.strip_prefix("sys_enter_") {
        Some(call) => ("sys_enter", false, call),
        None => ("sys_exit", true, name.strip_prefix("sys_exit_")?),
    };
    // The kernel only creates syscalls:* events for entry points in the 64-bit table, named
    // after them; the table names the crate knows are the same but for renamed entry points
    // (newstat, newuname, sendfile64, umount), which it does not know: those keep the perf
    // path.
    let nr = call.parse::<syscalls::Sysno>().ok()?.id();
    Some((tracepoint, u32::try_from(nr).ok()?, exit))
}

pub(crate) fn tracepoint_error(
    err: kernel::Error,
    fs: &Tracefs,
    category: &str,
    name: &str,
) -> Error {
    if !matches!(err, kernel::Error::NoTracepoint { .. }) {
        return err.into();
    }
    let all: Vec<String> = fs
        .tracepoints()
        .into_iter()
        .map(|(c, n)| format!("{c}:{n}"))
        .collect();
    let wanted = format!("{category}:{name}");
    let mut hints: Vec<String> = plan::did_you_mean(&wanted, all.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!(
        "list tracepoints with `tracer list '{category}:*'`"
    ));
    Error::Usage {
        message: format!("no tracepoint '{wanted}'"),
        hints,
    }
}

pub(crate) fn unknown_function(err: Error, fs: &Tracefs, function: &str) -> Error {
    let all = functions(fs);
    if all.iter().any(|f| f == function) {
        return err;
    }
    let mut hints: Vec<String> = plan::did_you_mean(function, all.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!("list functions with `tracer list '{function}*'`"));
    Error::Usage {
        message: format!("no traceable kernel function '{function}'"),
        hints,
    }
}

pub(crate) fn unknown_symbol(err: kernel::Error, path: &std::path::Path, symbol: &str) -> Error {
    if !matches!(err, kernel::Error::NoSymbol { .. }) {
        return err.into();
    }
    let symbols = elf::function_symbols(path).unwrap_or_default();
    let mut hints: Vec<String> = plan::did_you_mean(symbol, symbols.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!(
        "list its functions with `tracer list --binary {}`",
        path.display()
    ));
    Error::Usage {
        message: format!("no function '{symbol}' in {}", path.display()),
        hints,
    }
}

/// Where a uprobe goes: the ELF file a spec names and the file offset of its symbol (plus
/// offset) or address.
pub(crate) fn uprobe_location(file: &str, at: &UserAt) -> Result<(std::path::PathBuf, u64), Error> {
    let path = elf::resolve_file(file)?;
    let offset = match at {
        UserAt::Symbol {
            name: symbol,
            offset,
        } => {
            elf::symbol_offset(&path, symbol).map_err(|e| unknown_symbol(e, &path, symbol))?
                + offset
        }
        UserAt::Address(addr) => {
            let data = std::fs::read(&path).map_err(|source| kernel::Error::Read {
                path: path.display().to_string(),
                source,
            })?;
            elf::vaddr_to_offset(&data, &path, *addr)?
        }
    };
    Ok((path, offset))
}

/// Picks the kprobe PMU, else legacy kprobe_events; when neither exists, explains why and
/// what can be traced instead.
fn kernel_interface(
    spec: &ProbeSpec,
    fs: &Tracefs,
    choice: Option<KprobeInterface>,
) -> Result<KernelInterface, Error> {
    let pmu = perf::pmu::Pmus::default().get("kprobe")?;
    match (choice, pmu) {
        (Some(KprobeInterface::Tracefs), _) if fs.has_kprobe_events() => {
            return Ok(KernelInterface::Tracefs)
        }
        (None | Some(KprobeInterface::Pmu), Some(pmu)) => {
            return Ok(KernelInterface::Pmu {
                type_: pmu.type_,
                retprobe_bit: pmu.flag_bit("retprobe"),
            })
        }
        (None, None) if fs.has_kprobe_events() => return Ok(KernelInterface::Tracefs),
        _ => {}
    }
    let function = match &spec.target {
        Target::Kernel { function, .. } => function.clone(),
        _ => String::new(),
    };
    let fentry = match Feature::Fentry.check() {
        crate::kernel::features::Status::Available { .. } => {
            "fentry is available, but tracer cannot attach through it yet".to_string()
        }
        crate::kernel::features::Status::Unavailable { reason, .. } => {
            format!("fentry is not permitted either ({reason})")
        }
    };
    let mut hints = Vec::new();
    let alternatives = syscall_alternatives(fs, &function);
    if !alternatives.is_empty() {
        hints.push(format!(
            "trace the syscalls that lead there instead: tracer probe {}",
            alternatives.join(" ")
        ));
    }
    hints.push("user-space functions (uprobe:PATH:SYMBOL) and tracepoints (CAT:NAME) work here; see `tracer features`".into());
    Err(Error::Runtime {
        message: format!("cannot probe kernel function '{function}': this kernel has no kprobes (built without CONFIG_KPROBES), and {fentry}"),
        hints,
    })
}

/// Syscall tracepoints related to a kernel function name (`do_sys_open` -> the open family).
pub fn syscall_alternatives(fs: &Tracefs, function: &str) -> Vec<String> {
    let mut base = function;
    for prefix in [
        "__x64_sys_",
        "__ia32_sys_",
        "__se_sys_",
        "__do_sys_",
        "do_sys_",
        "ksys_",
        "sys_",
        "do_",
        "vfs_",
    ] {
        if let Some(rest) = base.strip_prefix(prefix) {
            base = rest;
            break;
        }
    }
    let base = base.trim_end_matches(|c: char| c.is_ascii_digit());
    if base.len() < 3 {
        return Vec::new();
    }
    let syscalls: Vec<String> = fs
        .tracepoints()
        .into_iter()
        .filter(|(c, _)| c == "syscalls")
        .map(|(_, n)| n)
        .collect();
    let mut found: Vec<&str> = syscalls
        .iter()
        .filter_map(|n| n.strip_prefix("sys_enter_"))
        .filter(|s| s.starts_with(base))
        .collect();
    // The closest names first: open, openat, openat2, then the rest.
    found.sort_by_key(|s| (s.len(), *s));
    found.truncate(3);
    // creat(2) is an open in all but name.
    if base == "open" && syscalls.iter().any(|n| n == "sys_enter_creat") {
        found.push("creat");
    }
    found
        .iter()
        .map(|s| format!("syscalls:sys_enter_{s}"))
        .collect()
}

/// Attaches the comm cache's invalidation (`comm_renamed`) to `task:task_rename`, whose
/// tracepoint id is `id`; it runs until the returned event is closed. Call it before any
/// probe is attached: a rename it missed would leave a stale name cached.
pub(crate) fn start_comm_cache(bpf: &mut Bpf, id: u64) -> Result<perf::Event, Error> {
    let program = bpf.load_comm_cache()?;
    run_on_tracepoint(bpf, "task:task_rename", id, program)
}

/// Runs the loaded `program` on every hit of tracepoint `id` (named `name`), on every CPU (a
/// tracepoint's BPF programs run wherever it fires, whichever CPU the perf event is bound to),
/// until the returned event is closed.
fn run_on_tracepoint(bpf: &Bpf, name: &str, id: u64, program: &str) -> Result<perf::Event, Error> {
    let event = perf::Event::open(
        name.to_string(),
        &EventKind::Tracepoint(id),
        &Options::default(),
        &Scope::Cpu(0),
    )?;
    event.set_bpf(bpf.named_program_fd(program)?)?;
    event.enable(false)?;
    Ok(event)
}

/// Attaches the fork/exec/exit tracking programs to the scheduler tracepoints.
pub(crate) fn start_tracking(bpf: &mut Bpf, fs: &Tracefs) -> Result<Vec<perf::Event>, Error> {
    let fork = fs.format("sched", "sched_process_fork")?;
    let child = fork.field("child_pid").ok_or_else(|| Error::Runtime {
        message: "sched:sched_process_fork has no child_pid field".into(),
        hints: vec![
            "this kernel's scheduler tracepoints are not supported for -- COMMAND; use -p PID"
                .into(),
        ],
    })?;
    let names = bpf.load_tracking(SchedOffsets {
        fork_child_pid: child.offset as u32,
        _pad: 0,
    })?;
    let mut events = Vec::new();
    for (program, tracepoint) in names.iter().zip([
        "sched_process_exec",
        "sched_process_fork",
        "sched_process_exit",
    ]) {
        let id = fs.tracepoint_id("sched", tracepoint)?;
        events.push(run_on_tracepoint(
            bpf,
            &format!("sched:{tracepoint}"),
            id,
            program,
        )?);
    }
    Ok(events)
}

struct LoopState<'a, W: std::io::Write> {
    probes: Vec<Probe>,
    rings: &'a mut OutputRings,
    writer: &'a mut EventWriter<W>,
    bpf: &'a Bpf,
    count: Option<u64>,
    delivered: u64,
    reported_lost: u64,
    started: Instant,
    hinted: bool,
    symbolizer: Symbolizer,
}

impl<W: std::io::Write> Sink for LoopState<'_, W> {
    fn drain(&mut self) -> Result<bool, Error> {
        self.print_events()
    }

    fn tick(&mut self) -> Result<bool, Error> {
        self.report_losses()?;
        if !self.hinted && self.started.elapsed() > Duration::from_secs(3) {
            self.hinted = true;
            no_hit_hints(self);
        }
        Ok(false)
    }
}

impl<W: std::io::Write> LoopState<'_, W> {
    /// Reports losses since the last report, from the exact BPF-side counters.
    fn report_losses(&mut self) -> Result<(), Error> {
        let (_, lost) = self.bpf.stats()?;
        if lost > self.reported_lost {
            eprintln!(
                "lost {} events (ring full): raise --ring-pages",
                lost - self.reported_lost
            );
            self.reported_lost = lost;
        }
        Ok(())
    }

    /// Drains every ring, prints the events in time order; true once `-c` is reached.
    fn print_events(&mut self) -> Result<bool, Error> {
        let mut batch: Vec<Event> = Vec::new();
        self.rings.drain(|e| batch.push(*e));
        batch.sort_by_key(|e| e.time_ns);
        for event in &batch {
            if self.count.is_some_and(|n| self.delivered >= n) {
                break;
            }
            let Some(probe) = self.probes.iter_mut().find(|p| p.slot.id == event.slot) else {
                continue;
            };
            probe.delivered += 1;
            probe.faults += u64::from(Values::faults(event));
            self.delivered += 1;
            let (args, ret, errno) = decode(&probe.decoder, event);
            let stacks = self.symbolizer.stacks(self.bpf, event)?;
            self.writer
                .write(&Decoded {
                    event,
                    probe: &probe.name,
                    args,
                    ret,
                    errno,
                    stacks,
                })
                .map_err(Error::Output)?;
        }
        self.writer.flush().map_err(Error::Output)?;
        Ok(self.count.is_some_and(|n| self.delivered >= n))
    }
}

/// The event's named values, its return value, and the errno that return value stands for.
pub(crate) type DecodedValues<'a> = (Vec<(&'a str, Value)>, Option<Value>, Option<&'static str>);

pub(crate) fn decode<'a>(decoder: &'a Decoder, event: &Event) -> DecodedValues<'a> {
    match decoder {
        Decoder::Tracepoint {
            format,
            string_field,
            selection,
        } => {
            // The captured record head as bytes, on the stack: this runs for every event.
            let mut bytes = [0u8; 8 * tracer_common::DATA_WORDS];
            for (chunk, word) in bytes.chunks_exact_mut(8).zip(event.data) {
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            // Fields named __* (the syscall number) are the tracepoint's plumbing, not arguments.
            let mut args: Vec<(&str, Value)> = format.decode(&bytes);
            args.retain(|(name, _)| !name.starts_with("__"));
            if let (Some(field), Some(text)) = (string_field, event.string()) {
                if let Some(slot) = args.iter_mut().find(|(n, _)| *n == field.as_str()) {
                    slot.1 = Value::Str(String::from_utf8_lossy(text).into_owned());
                }
            }
            if !selection.is_empty() {
                args = (selection.iter())
                    .filter_map(|name| args.iter().find(|(n, _)| n == name).cloned())
                    .collect();
            }
            (args, None, None)
        }
        Decoder::Return { proto } => {
            let raw = event.data[6];
            match proto.as_ref().map(|p| &p.ret) {
                Some(Kind::Void) => (Vec::new(), None, None),
                Some(kind) => (Vec::new(), Some(kind.value(raw, None)), kind.errno(raw)),
                None => (Vec::new(), Some(Value::Int(raw as i64)), None),
            }
        }
        Decoder::Entry(values) => (values.decode(event), None, None),
    }
}

/// Resolves `PARAM->member` for a probe: kernel BTF for kernel functions, the binary's DWARF
/// for user functions.
fn member_lookup<'a>(
    spec: &'a ProbeSpec,
    btf: &'a Option<Option<KernelBtf>>,
) -> impl FnMut(usize, &[&str]) -> Result<Member, Error> + 'a {
    move |arg, path| match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
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
fn prototype(spec: &ProbeSpec, btf: &mut Option<Option<KernelBtf>>) -> Option<Prototype> {
    match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
        } => {
            let btf = btf.get_or_insert_with(|| match KernelBtf::open() {
                Ok(btf) => Some(btf),
                Err(e) => {
                    eprintln!(
                        "note: kernel function arguments untyped (arg0..arg5): {}",
                        crate::describe(&e)
                    );
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
    eprintln!(
        "note: {spec}: arguments shown as arg0..arg5: {}",
        crate::describe(err)
    );
    None
}

/// One hint per kernel probe that has not fired in its first seconds.
fn no_hit_hints<W: std::io::Write>(state: &LoopState<'_, W>) {
    let bpf = state.bpf;
    for probe in &state.probes {
        let Some(function) = &probe.kernel_function else {
            continue;
        };
        if bpf
            .slot_stats(&probe.slot)
            .map(|(hits, _)| hits)
            .unwrap_or(1)
            == 0
        {
            eprintln!(
                "hint: {} has not fired in 3 s: the function may be inlined into its callers on this kernel{}",
                probe.name,
                if function == "do_sys_open" { "; try do_sys_openat2" } else { "; try its callers" }
            );
        }
    }
}

fn summary<W: std::io::Write>(
    state: &LoopState<'_, W>,
    bpf: &Bpf,
    elapsed: Duration,
    end: &End,
    plan: &ProbePlan,
) -> Result<(), Error> {
    let (_, lost) = bpf.stats()?;
    let count_reached = state.count.is_some_and(|n| state.delivered >= n);
    let why = match count_reached {
        true => format!("after {} events (-c)", state.delivered),
        false => end_reason(end, elapsed, state.delivered),
    };
    eprintln!(
        "\n{} events in {:.2} s, {why}; {lost} lost",
        state.delivered,
        elapsed.as_secs_f64(),
    );
    eprintln!(
        "{:<40} {:>10} {:>10} {:>8}",
        "PROBE", "HITS", "PRINTED", "LOST"
    );
    for probe in &state.probes {
        let (hits, failed) = bpf.slot_stats(&probe.slot)?;
        eprintln!(
            "{:<40} {:>10} {:>10} {:>8}",
            probe.name, hits, probe.delivered, failed
        );
    }
    if let Some(line) = state.symbolizer.summary() {
        eprintln!("stacks: {line}");
    }
    for probe in state.probes.iter().filter(|p| p.faults > 0) {
        eprintln!(
            "{}: {} struct member reads failed (bad or paged-out pointers), printed as ?",
            probe.name, probe.faults
        );
    }
    if lost > 0 {
        let per_cpu: Vec<String> = bpf
            .lost_per_cpu()?
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("CPU {c}: {n}"))
            .collect();
        eprintln!(
            "lost per CPU: {}; raise --ring-pages (now {}) or trace fewer events",
            per_cpu.join(", "),
            plan.ring_pages
        );
    }
    Ok(())
}
