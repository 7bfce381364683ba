//! What every probe of a run shares, and the parts of the BPF object they need.

use tracer_common::{SlotConfig, SLOT_FILTER_COMM, SLOT_FILTER_TRACKED};

use super::lookup::{record_strings, syscall_strings, tracepoint_selection};
use crate::bpf::{Room, Rooms};
use crate::kernel::btf::parse_access;
use crate::kernel::tracefs::Tracefs;
use crate::plan::filter::FilterPlan;
use crate::plan::{Aggregation, KeyPart, ProbeSpec, Scope, Target, UserAt, Whom};
use crate::probe::resolve::KprobeInterface;
use crate::stacks::Which;

/// The filters every slot of a run starts from, built at the BPF boundary from whom the plan
/// traces and its [`Scope`]. tracer's own work is never reported. A `-- COMMAND` (`launched`),
/// and `-p`'s process with its children when they are followed, go by the tracked-task set
/// in BPF, not by a process id; otherwise `-p`'s process id filters.
pub fn base_config(whom: &Whom, scope: &Scope, follow: bool, launched: bool) -> SlotConfig {
    let mut base = SlotConfig {
        exclude_tgid: std::process::id(),
        tgid: (!follow).then(|| whom.pid()).flatten().unwrap_or(0),
        tid: scope.tid.unwrap_or(0),
        cpu_mask: (scope.cpus.iter()).fold(0u64, |mask, &cpu| mask | 1 << cpu),
        cgroup_id: scope.cgroup_id.unwrap_or(0),
        ..SlotConfig::default()
    };
    if let Some(comm) = &scope.comm {
        base.comm[..comm.len()].copy_from_slice(comm.as_bytes());
        base.flags |= SLOT_FILTER_COMM;
    }
    if launched || follow {
        base.flags |= SLOT_FILTER_TRACKED;
    }
    base
}

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
    /// Whether hits of `spec` also copy the top of the user stack
    /// ([`str_from::STACK`](tracer_common::str_from::STACK)), which the symbolizer unwinds
    /// by CFI where the frame-pointer walk cannot go (code built without frame pointers:
    /// Debian's libraries and programs): any streamed probe with user stacks. At a tracepoint
    /// or a kernel function the user registers are the task's as it entered the kernel
    /// (`task_pt_regs`): a syscall's user stack, unwound as a uprobe's is.
    pub fn copies_stack_top(&self, spec: &ProbeSpec) -> bool {
        let user = matches!(spec.target, Target::User { .. });
        self.aggregation.is_none()
            && crate::stacks::flags_for(self.stack, user) & tracer_common::SLOT_STACK_USER != 0
    }

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
        if self.derefs(specs) {
            uses |= tracer_common::USES_DEREFS;
        }
        for spec in specs {
            if self.copies_stack_top(spec) {
                uses |= USES_STRINGS | USES_STR_MANY | tracer_common::USES_BUFFERS;
            }
            uses |= match &spec.target {
                // Streamed syscall entry records carry user pointers to strings (filename,
                // pathname, argv), other streamed records `__data_loc` strings; counted hits
                // read none.
                Target::Tracepoint { category, name } => {
                    let syscall_entry = category == "syscalls" && name.starts_with("sys_enter_");
                    let streamed = self.aggregation.is_none();
                    // Counted hits read a string only to key by it.
                    let keyed = self.aggregation.is_some_and(|a| a.key_value().is_some());
                    let format = (streamed || (syscall_entry && keyed))
                        .then(|| fs.format(category, name).ok())
                        .flatten();
                    let strings = format.as_ref().map_or(Vec::new(), |format| {
                        let selection = tracepoint_selection(spec, format).unwrap_or_default();
                        match syscall_entry {
                            true => syscall_strings(format, &selection),
                            false => (record_strings(format, &selection).into_iter())
                                .map(|name| (name, false))
                                .collect(),
                        }
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
                    // A key that is a string of the record (`__data_loc`, `char[N]`), read to
                    // count by it.
                    let key = self.aggregation.and_then(|a| a.key_value());
                    let string_key = key.is_some_and(|key| {
                        (fs.format(category, name).ok()).is_some_and(|format| {
                            format.field(key).is_some_and(super::record_string)
                        })
                    });
                    let keyed_string = match string_key {
                        true => USES_STRINGS,
                        false => 0,
                    };
                    reads | arrays | keyed_string
                }
                Target::User {
                    at: UserAt::Usdt { .. },
                    ..
                } => USES_STRINGS | USES_STR_MANY | USES_USDT,
                // String arguments (a return value's too) and struct member reads.
                Target::Kernel { .. }
                | Target::KernelAddr(_)
                | Target::User {
                    at: UserAt::Symbol { .. } | UserAt::Address(_),
                    ..
                } => USES_STRINGS | USES_STR_MANY | USES_FIELDS,
            };
        }
        uses
    }
}

impl AttachOptions<'_> {
    /// Whether a member read of these probes may load a pointer on its way: a name with two
    /// or more steps after its parameter (`a->b->c`; also `a->b.c`, whose kind is known only
    /// once resolved), in a list, a key, a value or the filter.
    fn derefs(&self, specs: &[ProbeSpec]) -> bool {
        let listed = specs.iter().flat_map(|spec| spec.args.iter());
        let aggregated = self.aggregation.into_iter().flat_map(|agg| {
            let keys = agg.keys.iter().filter_map(|key| match key {
                KeyPart::Value(name) => Some(name),
                _ => None,
            });
            keys.chain(agg.value.as_ref().map(|(_, name)| name))
        });
        let filtered = self
            .filter
            .into_iter()
            .flat_map(|f| f.atoms.iter().map(|a| &a.name));
        let inner = |name: &str| crate::plan::reader(name).1.to_string();
        (listed.chain(aggregated).chain(filtered))
            .any(|name| parse_access(&inner(name)).is_some_and(|(_, path)| path.len() > 1))
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
