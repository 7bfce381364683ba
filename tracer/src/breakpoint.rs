//! The breakpoint layer: watch targets resolved to addresses (ELF symbols of a process, or
//! kallsyms), hardware breakpoint perf events opened per thread or per CPU with their program
//! slot attached, and the hits they count.

use std::collections::BTreeMap;

use tracer_common::{AggKey, SlotConfig, SLOT_VALUE_KERNEL};

use crate::bpf::{Bpf, Slot, SlotKind};
use crate::kernel::symbols::{self, Process};
use crate::perf::{self, BreakpointType, EventKind, Options, Sampling, Scope};
use crate::plan::{self, WatchTarget};
use crate::stacks::Symbolizer;
use crate::Error;

/// x86 has four debug registers per CPU.
pub const MAX_TARGETS: usize = tracer_common::PERF_EVENT_SLOTS as usize;

/// One watched location.
pub struct Watch {
    pub name: String,
    pub addr: u64,
    pub len: u64,
    pub slot: Slot,
    /// The last value seen (the initial one read at start, then each hit's).
    pub last: Option<u64>,
    pub hits: u64,
    pub by_tid: BTreeMap<u32, u64>,
    /// Hits per instruction, with its `function+0xoff`.
    pub by_ip: BTreeMap<u64, (u64, String)>,
    /// Breakpoint events: one per thread (user) or per CPU (kernel). Dropping them detaches.
    _events: Vec<perf::Event>,
}

pub fn kind_name(kind: BreakpointType) -> &'static str {
    match kind {
        BreakpointType::Write => "writes",
        BreakpointType::ReadWrite => "reads and writes",
        BreakpointType::Execute => "executions",
        BreakpointType::Read => "reads",
    }
}

/// How a run's watchpoints are placed.
#[derive(Clone, Copy, Debug)]
pub struct WatchOptions {
    pub kind: BreakpointType,
    /// Bytes watched; `None`: the symbol's size when 1, 2, 4 or 8, else 8.
    pub len: Option<u64>,
    /// The process whose memory is watched (`None`: the kernel's).
    pub pid: Option<u32>,
    /// Kernel symbols and addresses.
    pub kernel: bool,
    /// The process is a `-- COMMAND` stopped at its exec: one inherited per-task event.
    pub launched: bool,
    /// The slot config every watchpoint starts from (stacks, or counting with `--summary`).
    pub template: SlotConfig,
}

/// Resolves `target` and opens its breakpoint events with the slot's program attached.
pub fn attach(
    bpf: &mut Bpf,
    target: &WatchTarget,
    options: &WatchOptions,
    process: Option<&mut Process>,
) -> Result<Watch, Error> {
    let name = target.to_string();
    let launched = options.launched;
    let (addr, size) = match (target, process.as_deref()) {
        (WatchTarget::Address(addr), _) => (*addr, None),
        (
            WatchTarget::Symbol {
                name: sym, offset, ..
            },
            _,
        ) if options.kernel => {
            let addr = symbols::kallsyms_address(sym)
                .filter(|a| *a != 0)
                .ok_or_else(|| Error::Runtime {
                    message: format!("no kernel symbol '{sym}' (or its address is hidden)"),
                    hints: if symbols::kallsyms_lists_data() {
                        vec!["kernel addresses need root (kptr_restrict); check /proc/kallsyms".into()]
                    } else {
                        vec!["this kernel's /proc/kallsyms lists no variables (CONFIG_KALLSYMS_ALL unset): give the address (0x...) from its System.map".into()]
                    },
                })?;
            (addr + offset, None)
        }
        (WatchTarget::Symbol { .. }, None) => unreachable!("user targets have a process"),
        (
            WatchTarget::Symbol {
                file,
                name: sym,
                offset,
            },
            Some(_),
        ) => {
            let process = process.expect("checked above");
            let resolved = process.resolve(file.as_deref(), sym).map_err(|_| {
                let similar = plan::similar(sym, process.data_symbols().iter().map(String::as_str).collect::<Vec<_>>(), 4)
                    .into_iter()
                    .map(str::to_string)
                    .collect::<Vec<_>>();
                let mut hints = Vec::new();
                if !similar.is_empty() {
                    hints.push(format!("did you mean: {}", similar.join(", ")));
                }
                if file.is_some() && launched {
                    hints.push("with -- COMMAND only the program's own symbols exist yet (libraries load later): use -p PID for library variables".into());
                }
                hints.push("give an address (0x...) instead".into());
                Error::Usage { message: format!("no symbol '{sym}' in {}", file.as_deref().unwrap_or("the process")), hints }
            })?;
            return attach_at(
                bpf,
                name,
                (resolved.addr + offset, resolved.size),
                options,
                Some(process),
            );
        }
    };
    attach_at(bpf, name, (addr, size), options, process)
}

/// Opens the breakpoint events of one resolved location (`addr`, and the symbol's size).
fn attach_at(
    bpf: &mut Bpf,
    name: String,
    (addr, size): (u64, Option<u64>),
    options: &WatchOptions,
    process: Option<&mut Process>,
) -> Result<Watch, Error> {
    let WatchOptions {
        kind,
        len,
        pid,
        kernel,
        launched,
        template,
    } = *options;
    // The symbol's size when it is a watchable length, else 8; execute breakpoints ignore it.
    let len = match (len, size) {
        (Some(len), _) => len,
        (None, Some(s @ (1 | 2 | 4 | 8))) => s,
        (None, _) => 8,
    };
    if kind != BreakpointType::Execute && addr % len != 0 {
        return Err(Error::usage_hints(format!("{name} is at {addr:#x}, which is not aligned to the watch length {len}"), &["x86 watchpoints must be aligned to their length: pass a smaller --len, or the aligned address"]));
    }
    let initial = match &process {
        Some(p) if !p.is_mapped(addr) => {
            return Err(Error::Runtime {
                message: if name == format!("{addr:#x}") {
                    format!(
                        "address {addr:#x} is not mapped in process {}",
                        pid.unwrap_or(0)
                    )
                } else {
                    format!(
                        "{name} ({addr:#x}) is not mapped in process {}",
                        pid.unwrap_or(0)
                    )
                },
                hints: vec!["check the address against /proc/PID/maps".into()],
            })
        }
        Some(p) if kind != BreakpointType::Execute => {
            p.read(addr, len as usize).map(|v| mask(v, len))
        }
        _ => None,
    };
    // `-- COMMAND`: one per-task event on the command, single-threaded at its exec, with
    // inherit for every thread and child it creates. `-p PID`: one event per CPU, filtered by
    // tgid in BPF. Per-task events opened on the threads of an already running process, plus
    // inherit for its new threads, missed most hits in some runs here; per-CPU breakpoints see
    // every thread, existing or new, and the filter drops other processes that touch the same
    // virtual address.
    let per_task = launched && pid.is_some();
    // An execute breakpoint on a function's first byte, with user stacks: the program reads
    // the direct caller at the stack pointer (`word::ENTRY_RET`), as uprobes at an entry do.
    let at_entry = kind == BreakpointType::Execute
        && template.flags & tracer_common::SLOT_STACK_USER != 0
        && process.is_some_and(|p| p.symbol_at(addr).is_some_and(|(_, offset)| offset == 0));
    let config = SlotConfig {
        flags: template.flags
            | if kernel { SLOT_VALUE_KERNEL } else { 0 }
            | if at_entry {
                tracer_common::SLOT_STACK_AT_ENTRY
            } else {
                0
            },
        tgid: if per_task { 0 } else { pid.unwrap_or(0) },
        ..template
    };
    let slot = bpf.take_slot(SlotKind::PerfEvent, config)?;
    let event_kind = EventKind::Breakpoint { kind, addr, len };
    let options = Options {
        // Every hit overflows, so the BPF program runs on each; inherit covers new threads.
        sampling: Sampling::Period(1),
        flags: if per_task {
            perf::attr::flag::INHERIT
        } else {
            0
        },
        ..Options::default()
    };
    let scopes: Vec<Scope> = match pid {
        Some(pid) if per_task => vec![Scope::Task { pid, cpu: None }],
        _ => perf::cpus::online()?.into_iter().map(Scope::Cpu).collect(),
    };
    let mut events = Vec::new();
    for scope in &scopes {
        let event = perf::Event::open(format!("watch {name}"), &event_kind, &options, scope).map_err(|e| match e.errno() {
            Some(libc::ENOSPC) => Error::Runtime {
                message: format!("no free hardware breakpoint for {name}"),
                hints: vec![format!(
                    "x86 has {MAX_TARGETS} hardware breakpoint slots per CPU, shared with debuggers and other watchers; some are in use"
                )],
            },
            _ => e.into(),
        })?;
        event.set_bpf(bpf.program_fd(&slot)?)?;
        events.push(event);
    }
    Ok(Watch {
        name,
        addr,
        len,
        slot,
        last: initial,
        hits: 0,
        by_tid: BTreeMap::new(),
        by_ip: BTreeMap::new(),
        _events: events,
    })
}

pub fn mask(value: u64, len: u64) -> u64 {
    if len >= 8 {
        value
    } else {
        value & ((1u64 << (8 * len)) - 1)
    }
}

/// Fills `watch`'s hit counts from the in-kernel counts (`--summary`): keys of its slot, by
/// process, thread and instruction pointer.
pub fn count_hits(
    watch: &mut Watch,
    counts: &[(AggKey, tracer_common::AggValue)],
    symbolizer: &mut Symbolizer,
) {
    for (key, value) in counts.iter().filter(|(k, _)| k.slot == watch.slot.id) {
        watch.hits += value.count;
        *watch.by_tid.entry(key.tid).or_default() += value.count;
        let place = symbolizer.frame(key.pid, key.value).place();
        watch.by_ip.entry(key.value).or_insert((0, place)).0 += value.count;
    }
}
