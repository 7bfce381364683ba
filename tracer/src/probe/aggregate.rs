//! In-kernel aggregation (`--count-by/--sum/--hist`): what each probe's slot counts, and the
//! reports read back from the `COUNTS` map.

use std::collections::BTreeMap;

use hashbrown::{HashMap, HashSet};

use tracer_common::{
    src, str_flag, AggKey, AggValue, SlotConfig, AGG_BUCKET_ABOVE, AGG_BUCKET_BELOW, AGG_COMM,
    AGG_CPU, AGG_HIST, AGG_KEY_VALUE, AGG_PID, AGG_SUM, AGG_TID, KEY_STRLEN, NO_STACK,
    SLOT_AGGREGATE,
};

use super::values::{MemberLookup, Values};
use crate::bpf::{Bpf, Slot};
use crate::kernel::format::{shows_hex, Format, Value};
use crate::kernel::params::{Kind, Prototype};
use crate::output::counts::{Report, Row, Scale, Shape};
use crate::plan::{Aggregation, KeyPart, Linear, ProbeSpec, Target, UserAt, ValueOp};
use crate::stacks::Symbolizer;
use crate::Error;

/// How one probe's values are read: `None` for a probe without that value.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// The keyed value is signed (printed as such).
    pub key_signed: bool,
    /// The keyed value's kind where it prints other than as a number: in network byte order
    /// (`Kind::Net`), or one of named values (`Kind::Enum`: an `enum`, an `int cap`), printed
    /// as event lines print it.
    pub key_kind: Option<Kind>,
    /// The summed value is signed.
    pub val_signed: bool,
    /// The summed or histogrammed value is a size in bytes (see [`is_bytes`]).
    pub val_bytes: bool,
    /// The keyed value is a string, counted by its content (`AGG_KEY_STRING`): a
    /// tracepoint's is the field named, whose read the caller sets up (`key_src`).
    pub key_string: bool,
}

/// The kind of an entry's value `name`, or a return probe's `ret`, when it prints as more
/// than a number: in network byte order (`Kind::Net`) or named (`Kind::Enum`).
fn shown_kind(values: &mut ProbeValues<'_, '_>, name: &str) -> Option<Kind> {
    let kind = match values {
        ProbeValues::Entry(values, lookup) => values.column_of(name, lookup).ok()?.kind,
        ProbeValues::Return(proto) if name == "ret" => (*proto)?.ret.clone(),
        ProbeValues::Record(_) | ProbeValues::Return(_) => return None,
    };
    matches!(kind, Kind::Net { .. } | Kind::Enum { .. }).then_some(kind)
}

/// Whether `name` is a string counted by its content, and its read index where this can say
/// (entries, returns); a tracepoint's is left to the caller. An array of strings is refused.
fn string_key(
    spec: &ProbeSpec,
    values: &mut ProbeValues<'_, '_>,
    name: &str,
) -> Result<Option<Option<usize>>, Error> {
    match values {
        ProbeValues::Record(format) => {
            let syscall_entry = matches!(&spec.target, Target::Tracepoint { category, name }
                if category == "syscalls" && name.starts_with("sys_enter_"));
            let c_type = format.field(name).map_or("", |f| f.c_type.as_str());
            if format.field(name).is_some_and(super::attach::record_string) {
                return Ok(Some(None));
            }
            match super::attach::user_string(c_type) {
                Some(false) if syscall_entry => Ok(Some(None)),
                Some(true) if syscall_entry => Err(Error::usage(
                    format!("--count-by {name}: '{name}' of {spec} is an array of strings"),
                    vec!["count by a string field, or by comm".into()],
                )),
                _ => Ok(None),
            }
        }
        ProbeValues::Return(proto) if name == "ret" => {
            Ok(proto.is_some_and(|p| p.ret == Kind::Str).then_some(Some(0)))
        }
        ProbeValues::Return(_) => Ok(None),
        ProbeValues::Entry(values, lookup) => {
            let Ok(column) = values.column_of(name, lookup) else {
                return Ok(None);
            };
            if column.kind != Kind::Str {
                return Ok(None);
            }
            match values.read_string(&column) {
                Some(k) => Ok(Some(Some(k))),
                None => Err(Error::usage(
                    format!(
                        "--count-by {name}: {spec} reads {} strings per hit, and '{name}' is not one",
                        tracer_common::STR_READS
                    ),
                    vec!["pick fewer string arguments".into()],
                )),
            }
        }
    }
}

/// Syscalls and functions whose return value is a count of bytes (or a negative errno).
const BYTES_RETURNED: [&str; 22] = [
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendfile64",
    "splice",
    "tee",
    "copy_file_range",
    "getrandom",
    "readlink",
    "readlinkat",
    "getdents64",
];

/// Whether the value `name` of `spec` is a size in bytes, for human labels (`4K -> 8K`): a
/// value named `len`, `size`, `bytes`, `nbytes`, `length` or ending in `_len`, `_size`,
/// `_bytes`; `count` of a syscall (read's, write's: the buffer's length); `ret` of a
/// read/write-like syscall or function (`sys_exit_read`, `vfs_read%return`, `ksys_write`...).
pub fn is_bytes(spec: &ProbeSpec, name: &str) -> bool {
    let leaf = name.rsplit(['>', '.']).next().unwrap_or(name);
    if matches!(leaf, "len" | "size" | "bytes" | "nbytes" | "length")
        || ["_len", "_size", "_bytes"]
            .iter()
            .any(|s| leaf.ends_with(s))
    {
        return true;
    }
    let function = match &spec.target {
        Target::Tracepoint { category, name } if category == "syscalls" => {
            if leaf == "count" {
                return true;
            }
            name.strip_prefix("sys_exit_").unwrap_or("")
        }
        Target::Kernel { function, .. } => function.as_str(),
        Target::User {
            at: UserAt::Symbol { name, .. },
            ..
        } => name.as_str(),
        Target::Tracepoint { .. } | Target::KernelAddr(_) | Target::User { .. } => "",
    };
    let base = [
        "__x64_sys_",
        "__arm64_sys_",
        "__sys_",
        "ksys_",
        "vfs_",
        "sys_",
    ]
    .iter()
    .find_map(|p| function.strip_prefix(p))
    .unwrap_or(function);
    leaf == "ret" && BYTES_RETURNED.contains(&base)
}

/// What a value is when it is not a number: a string or a pointer (`--sum` and `--hist` add
/// up numbers only).
fn not_a_number(values: &mut ProbeValues<'_, '_>, name: &str) -> Result<Option<String>, Error> {
    let kind = match values {
        ProbeValues::Record(format) => {
            let c_type = format.field(name).map_or("", |f| f.c_type.as_str());
            return Ok(match (c_type.contains("char *"), c_type.contains('*')) {
                (true, _) => Some(format!("a string ({c_type})")),
                (false, true) => Some(format!("a pointer ({c_type})")),
                _ => None,
            });
        }
        ProbeValues::Return(proto) => proto.map_or(Kind::Signed(8), |p| p.ret.clone()),
        ProbeValues::Entry(values, lookup) => values.kind(name, lookup)?,
    };
    Ok(match kind {
        Kind::Str => Some(format!("a string ({kind})")),
        Kind::Pointer { .. } => Some(format!("a pointer ({kind})")),
        _ => None,
    })
}

/// What a probe's named values are read from.
pub enum ProbeValues<'a, 'l> {
    /// A tracepoint: fields of the record head.
    Record(&'a Format),
    /// A function entry: parameters, `argN` and struct members.
    Entry(&'a mut Values, &'a mut MemberLookup<'l>),
    /// A function return: `ret`, typed by the prototype when known.
    Return(Option<&'a Prototype>),
}

/// Where a value named by the user lives for one probe: registers and struct members for
/// kprobe and uprobe entries, the return register (`ret`) for return probes, a field of the
/// record head for tracepoints (`argN` is the Nth field after the common ones). Returns the
/// source and its signedness.
pub fn value_source(
    spec: &ProbeSpec,
    values: &mut ProbeValues<'_, '_>,
    name: &str,
) -> Result<(u32, bool), Error> {
    let format = match values {
        ProbeValues::Record(format) => *format,
        ProbeValues::Return(proto) => {
            let kind = proto.map_or(Kind::Signed(8), |p| p.ret.clone());
            return match name {
                "ret" if kind == Kind::Void => Err(Error::usage(
                    format!("{spec} returns void"),
                    vec!["count by comm, pid, tid, cpu, probe or stack".into()],
                )),
                "ret" => {
                    let signed = matches!(kind, Kind::Signed(_) | Kind::Enum { .. });
                    Ok((src(48, u32::from(kind.size()), signed), signed))
                }
                _ if name.starts_with("ret->") || name.starts_with("ret.") => Err(Error::usage(
                    format!("'{name}' of {spec}: members of 'ret' are printed, not yet counted or filtered on"),
                    vec![format!("print it: '{spec}({name})'")],
                )),
                _ => Err(Error::usage(
                    format!("{spec} has only 'ret': the arguments are gone when it returns"),
                    vec![format!("count '{name}' on the function's entry probe")],
                )),
            };
        }
        ProbeValues::Entry(..) if name == "ret" => {
            return Err(Error::usage(
                format!("'ret' of {spec}: the probe is not a return probe"),
                vec!["use FUNC%return, kretprobe:FUNC or uretprobe:PATH:SYMBOL".into()],
            ))
        }
        ProbeValues::Entry(values, lookup) => return values.source(name, *lookup),
    };
    // perf_call_bpf_enter/exit put a registers pointer where a syscall record's common fields
    // are: read from there, common_pid is half a kernel pointer, the same for every task.
    let syscall =
        matches!(&spec.target, Target::Tracepoint { category, .. } if category == "syscalls");
    if syscall && name.starts_with("common_") {
        return Err(Error::usage(
            format!("'{name}' of {spec} cannot be read: syscall tracepoints hand BPF programs a registers pointer in place of the common fields"),
            vec!["count by tid or pid (the task), or by the syscall's own fields".into()],
        ));
    }
    let arg = name
        .strip_prefix("arg")
        .and_then(|n| n.parse::<usize>().ok());
    let fields: Vec<_> = format
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("common_") && !f.name.starts_with("__"))
        .collect();
    let field = match (format.field(name), arg) {
        (Some(field), _) => Some(field),
        (None, Some(n)) => fields.get(n).copied(),
        (None, None) => None,
    };
    let names = || {
        fields
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let field = field.ok_or_else(|| {
        Error::usage(
            format!("{spec} has no field '{name}'"),
            vec![format!("its fields: {}", names())],
        )
    })?;
    let countable = |f: &crate::kernel::format::Field| {
        matches!(f.size, 1 | 2 | 4 | 8)
            && !f.c_type.contains('[')
            && !f.c_type.contains("__data_loc")
            && f.offset + f.size <= 8 * tracer_common::DATA_WORDS
    };
    if !countable(field) {
        // Only the fields that can be: the others' names would be refused the same way.
        let can: Vec<&str> = (fields.iter())
            .filter(|f| countable(f))
            .map(|f| f.name.as_str())
            .collect();
        let hint = match can.as_slice() {
            [] => format!("{spec} has no integer field in the first {} bytes of its record: count by comm, pid, tid, cpu or stack", 8 * tracer_common::DATA_WORDS),
            _ => format!(
                "count by an integer field within the first {} bytes of the record: {}",
                8 * tracer_common::DATA_WORDS,
                can.join(", ")
            ),
        };
        return Err(Error::usage(
            format!(
                "field '{}' of {spec} ({}, at byte {}) cannot be counted",
                field.name, field.c_type, field.offset
            ),
            vec![hint],
        ));
    }
    // The C type's width and sign, as the value prints: syscall records keep each argument
    // in a long (`int dfd` is 8 bytes, `signed:0`), of which the type's bytes are the value.
    let (bytes, signed) = match field.kind {
        crate::kernel::format::FieldKind::Int { bytes, signed } => (bytes, signed),
        _ => (field.size, field.signed),
    };
    Ok((src(field.offset as u32, bytes as u32, signed), signed))
}

/// Sets a probe slot's config for the aggregation: what the BPF program keys and adds up.
pub fn configure(
    config: &mut SlotConfig,
    agg: &Aggregation,
    spec: &ProbeSpec,
    mut values: ProbeValues<'_, '_>,
    stack_flags: u32,
) -> Result<Sources, Error> {
    let mut sources = Sources::default();
    config.flags |= SLOT_AGGREGATE;
    for key in &agg.keys {
        config.agg |= match key {
            KeyPart::Comm => AGG_COMM,
            KeyPart::Pid => AGG_PID,
            KeyPart::Tid => AGG_TID,
            KeyPart::Cpu => AGG_CPU,
            KeyPart::Cgroup | KeyPart::Container | KeyPart::Pod => tracer_common::AGG_CGROUP,
            // The slot is always in the key; rows merge probes unless `probe` is asked for.
            KeyPart::Probe => 0,
            KeyPart::Stack => {
                config.flags |= stack_flags;
                // User addresses mean something only within one process.
                if stack_flags & tracer_common::SLOT_STACK_USER != 0 {
                    AGG_PID
                } else {
                    0
                }
            }
            KeyPart::Value(name) => match string_key(spec, &mut values, name)? {
                Some(read) => {
                    config.key_src = read.unwrap_or(0) as u32;
                    sources.key_string = true;
                    tracer_common::AGG_KEY_STRING
                }
                None => {
                    let (source, signed) = value_source(spec, &mut values, name)?;
                    config.key_src = source;
                    sources.key_signed = signed;
                    sources.key_kind = shown_kind(&mut values, name);
                    AGG_KEY_VALUE
                }
            },
            KeyPart::Syscall => {
                let field = match &spec.target {
                    Target::Tracepoint { category, .. } if category == "raw_syscalls" => "id",
                    Target::Tracepoint { category, .. } if category == "syscalls" => {
                        "__syscall_nr"
                    }
                    Target::Tracepoint { .. }
                    | Target::Kernel { .. }
                    | Target::KernelAddr(_)
                    | Target::User { .. } => {
                        return Err(Error::usage(
                            format!("--count-by syscall: {spec} is not a syscall tracepoint"),
                            vec![
                                "count raw_syscalls:sys_enter (every syscall, by name) or syscalls:* tracepoints by syscall".into(),
                            ],
                        ))
                    }
                };
                let (source, _) = value_source(spec, &mut values, field)?;
                config.key_src = source;
                AGG_KEY_VALUE
            }
        };
    }
    // Counted user stacks (`-s` with any key): their addresses mean something only within one
    // process, so the pid is in the key, as for `--count-by stack`, and the rows symbolize.
    if config.flags & tracer_common::SLOT_STACK_USER != 0 {
        config.agg |= AGG_PID;
    }
    if let Some((op, name)) = &agg.value {
        let (source, signed) = value_source(spec, &mut values, name)?;
        let flag = match op {
            ValueOp::Sum => "--sum",
            ValueOp::Hist => "--hist",
        };
        if let Some(what) = not_a_number(&mut values, name)? {
            return Err(Error::usage(
                format!("{flag} {name}: '{name}' of {spec} is {what}, not a number"),
                vec![format!(
                    "{flag} takes a number: argN, ret, a numeric parameter, PARAM->member or tracepoint field; count by the pointer with --count-by {name}"
                )],
            ));
        }
        config.val_src = source;
        sources.val_signed = signed;
        sources.val_bytes = is_bytes(spec, name);
        config.agg |= AGG_SUM | if *op == ValueOp::Hist { AGG_HIST } else { 0 };
        if let (ValueOp::Hist, Some(linear)) = (op, &agg.linear) {
            if linear.min < 0 && !signed {
                return Err(Error::usage(
                    format!(
                        "--linear starts at {}, but '{name}' of {spec} is unsigned",
                        linear.min
                    ),
                    vec!["start an unsigned value's buckets at 0 or above".into()],
                ));
            }
            config.hist_step = linear.step;
            config.hist_min = linear.min as u64;
            config.hist_buckets = linear.buckets;
        }
    }
    Ok(sources)
}

/// One attached probe as the report needs it.
pub struct Counted<'a> {
    pub name: &'a str,
    pub slot: &'a Slot,
    pub sources: &'a Sources,
    /// What names a tracepoint's values (its print format's tables).
    pub decoder: &'a super::Decoder,
}

/// The report's column name of a key part.
pub fn column(part: &KeyPart) -> Option<String> {
    Some(match part {
        KeyPart::Comm => "COMM".into(),
        KeyPart::Pid => "PID".into(),
        KeyPart::Tid => "TID".into(),
        KeyPart::Cpu => "CPU".into(),
        KeyPart::Probe => "PROBE".into(),
        KeyPart::Stack => return None,
        KeyPart::Value(name) => name.to_uppercase(),
        KeyPart::Syscall => "SYSCALL".into(),
        KeyPart::Cgroup => "CGROUP".into(),
        KeyPart::Container => "CONTAINER".into(),
        KeyPart::Pod => "POD".into(),
    })
}

pub use crate::bpf::CellKey;

/// Reads `COUNTS` (and `STR_COUNTS`) into a report: one row per distinct visible key, of what
/// was counted since the totals in `previous` (which are then updated).
pub fn report(
    bpf: &Bpf,
    probes: &[Counted<'_>],
    agg: &Aggregation,
    symbolizer: &mut Symbolizer,
    previous: &mut HashMap<CellKey, AggValue>,
) -> Result<Report, Error> {
    let mut cells = Vec::new();
    let plain = bpf.counts()?.into_iter().map(|(k, v)| ((k, None), v));
    let strings = (bpf.str_counts()?.into_iter()).map(|(k, v)| ((k.key, Some(k.text)), v));
    for (key, total) in plain.chain(strings) {
        let before = previous.insert(key, total).unwrap_or_default();
        let delta = AggValue {
            count: total.count - before.count,
            sum: total.sum.wrapping_sub(before.sum),
        };
        if delta.count > 0 {
            cells.push((key, delta));
        }
    }
    let hist = matches!(agg.value, Some((ValueOp::Hist, _))).then(|| Shape {
        scale: match agg.linear {
            Some(Linear { step, min, buckets }) => Scale::Linear { step, min, buckets },
            None => Scale::Log2,
        },
        // Human sizes when every probe's value is one.
        bytes: !probes.is_empty() && probes.iter().all(|p| p.sources.val_bytes),
    });
    // Grouped by the shown key columns plus what is not shown but tells rows apart: the
    // stack ids, and the pid their user addresses belong to.
    let mut rows: BTreeMap<(Vec<String>, u32, i32, i32, u64), Row> = BTreeMap::new();
    for ((key, text), value) in cells {
        let Some(probe) = probes.iter().find(|p| p.slot.id == key.slot) else {
            continue;
        };
        let keys: Vec<String> = agg
            .keys
            .iter()
            .filter_map(|part| shown(part, &key, text.as_ref(), probe))
            .collect();
        let row = rows
            .entry((keys.clone(), key.pid, key.kstack, key.ustack, key.entry_ret))
            .or_insert_with(|| Row {
                keys,
                stacks: Vec::new(),
                count: 0,
                sum: agg.value.as_ref().map(|_| 0),
                buckets: hist.map_or(Vec::new(), |shape| vec![0; shape.buckets()]),
                below: 0,
                above: 0,
            });
        row.count += value.count;
        if let Some(sum) = row.sum.as_mut() {
            *sum += match probe.sources.val_signed {
                true => i128::from(value.sum as i64),
                false => i128::from(value.sum),
            };
        }
        if let Some(shape) = &hist {
            match key.bucket {
                AGG_BUCKET_BELOW => row.below += value.count,
                AGG_BUCKET_ABOVE => row.above += value.count,
                b => row.buckets[(b as usize).min(shape.buckets() - 1)] += value.count,
            }
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    for ((_, pid, kstack, ustack, entry_ret), mut row) in rows {
        if kstack != NO_STACK || ustack != NO_STACK {
            row.stacks = symbolizer.stacks_of(bpf, pid, kstack, ustack, entry_ret)?;
        }
        out.push(row);
    }
    Ok(Report::new(
        agg.keys.iter().filter_map(column).collect(),
        agg.value.as_ref().map(|(_, name)| name.clone()),
        hist,
        out,
        agg.top,
    ))
}

/// The process (or, keyed by tid alone, the thread) a cell counts hits of; `None` when the
/// key has neither (pid 0 is the idle task, never gone).
fn owner(key: &AggKey) -> Option<u32> {
    [key.pid, key.tid].into_iter().find(|&id| id != 0)
}

/// The processes (or threads) that own cells already reported.
pub fn owners(previous: &HashMap<CellKey, AggValue>) -> HashSet<u32> {
    previous.keys().filter_map(|(key, _)| owner(key)).collect()
}

/// The owners of cells already reported that are gone now (no /proc entry: reaped, so they
/// cannot hit again). Asked before the next read: every hit of theirs is then in it.
pub fn gone(previous: &HashMap<CellKey, AggValue>) -> HashSet<u32> {
    (owners(previous).into_iter())
        .filter(|id| !std::path::Path::new(&format!("/proc/{id}")).exists())
        .collect()
}

/// Evicts, after a report, the cells of `gone` owners (see [`gone`]): they are removed from
/// the count maps and from `previous`, their stacks from the stack map when no cell left
/// refers to them, and the symbolizer forgets those processes and stacks, so that a run
/// that sees many short processes holds only the recent ones. Nothing reported is lost: a
/// cell that changed since it was read stays (its pid taken by a new process) and a stack
/// that a new cell began to count before its removal is shown as lost and counted. Returns
/// the cells removed.
pub fn evict(
    bpf: &mut Bpf,
    previous: &mut HashMap<CellKey, AggValue>,
    gone: &HashSet<u32>,
    symbolizer: &mut Symbolizer,
) -> Result<usize, Error> {
    let of_gone = |key: &AggKey| owner(key).is_some_and(|id| gone.contains(&id));
    evict_where(bpf, previous, of_gone, gone, symbolizer)
}

/// [`evict`] of every cell reported (`previous`) whatever its owner, after a report that is
/// the last word on them (`profile -I`): the map then holds only what was counted since,
/// and a run of any length never fills it. Only `gone` processes are forgotten.
pub fn drain(
    bpf: &mut Bpf,
    previous: &mut HashMap<CellKey, AggValue>,
    gone: &HashSet<u32>,
    symbolizer: &mut Symbolizer,
) -> Result<usize, Error> {
    evict_where(bpf, previous, |_| true, gone, symbolizer)
}

/// Evicts the cells of `previous` that `pick` names (see [`evict`]).
fn evict_where(
    bpf: &mut Bpf,
    previous: &mut HashMap<CellKey, AggValue>,
    pick: impl Fn(&AggKey) -> bool,
    gone: &HashSet<u32>,
    symbolizer: &mut Symbolizer,
) -> Result<usize, Error> {
    let cells: Vec<(CellKey, AggValue)> = (previous.iter())
        .filter(|((key, _), _)| pick(key))
        .map(|(key, value)| (*key, *value))
        .collect();
    if cells.is_empty() {
        return Ok(0);
    }
    let removed = bpf.evict_counts(&cells)?;
    let mut ids: HashSet<u32> = HashSet::new();
    let mut kept: HashSet<u32> = HashSet::new();
    for ((key, _), removed) in cells.iter().zip(&removed) {
        match removed {
            true => {
                previous.remove(key);
                ids.extend(stack_ids(&key.0));
            }
            false => kept.extend(owner(&key.0)),
        }
    }
    // Stacks other cells still count stay.
    for (key, _) in previous.keys() {
        for id in stack_ids(key) {
            ids.remove(&id);
        }
    }
    let dropped: Vec<u32> = ids.iter().copied().collect();
    bpf.forget_stacks(&dropped);
    if !dropped.is_empty() {
        // A cell that began between the read and the removal may hold a removed id: its
        // stack is lost (the id may now hold another stack).
        let strings = bpf.str_count_keys()?.into_iter().map(|k| k.key);
        for key in bpf.count_keys()?.into_iter().chain(strings) {
            if stack_ids(&key).any(|id| ids.contains(&id)) {
                symbolizer.mark_lost(key.pid, key.kstack, key.ustack);
            }
        }
    }
    let pids: HashSet<u32> = gone.difference(&kept).copied().collect();
    symbolizer.forget(&pids, &ids);
    Ok(removed.iter().filter(|&&r| r).count())
}

/// The stack ids a cell refers to (none for [`NO_STACK`] or a failed capture).
fn stack_ids(key: &AggKey) -> impl Iterator<Item = u32> {
    [key.kstack, key.ustack]
        .into_iter()
        .filter_map(|id| u32::try_from(id).ok())
}

/// One counted cell as an exporter needs it: where it is, the values of its key parts (the
/// report's columns, in order), and its running total.
pub struct Cell {
    pub key: CellKey,
    pub labels: Vec<String>,
    pub value: AggValue,
    /// The summed value is signed (`value.sum` is two's complement).
    pub signed: bool,
}

/// Every cell of `COUNTS` and `STR_COUNTS` with its key parts shown as the report shows them:
/// running totals, never reset (`tracer serve` exports them as counters).
pub fn cells(bpf: &Bpf, probes: &[Counted<'_>], agg: &Aggregation) -> Result<Vec<Cell>, Error> {
    let plain = bpf.counts()?.into_iter().map(|(k, v)| ((k, None), v));
    let strings = (bpf.str_counts()?.into_iter()).map(|(k, v)| ((k.key, Some(k.text)), v));
    let mut cells = Vec::new();
    for ((key, text), value) in plain.chain(strings) {
        let Some(probe) = probes.iter().find(|p| p.slot.id == key.slot) else {
            continue;
        };
        cells.push(Cell {
            labels: (agg.keys.iter())
                .filter_map(|part| shown(part, &key, text.as_ref(), probe))
                .collect(),
            key: (key, text),
            value,
            signed: probe.sources.val_signed,
        });
    }
    Ok(cells)
}

/// A key part as its column shows it; `text` is the string keyed by.
fn shown(
    part: &KeyPart,
    key: &AggKey,
    text: Option<&[u8; KEY_STRLEN]>,
    probe: &Counted<'_>,
) -> Option<String> {
    // A tracepoint field's value its print format names (`vec` 3 as `NET_RX`), as event
    // lines show it.
    if let (KeyPart::Value(name), super::Decoder::Tracepoint { format, .. }) = (part, probe.decoder)
    {
        let table = (format.symbolic.iter()).find(|(field, _)| field == name);
        let named = table.and_then(|(_, t)| t.iter().find(|(v, _)| *v == key.value));
        if let Some((_, text)) = named {
            return Some(text.clone());
        }
    }
    Some(match part {
        KeyPart::Comm => {
            let end = key.comm.iter().position(|&b| b == 0).unwrap_or(16);
            String::from_utf8_lossy(&key.comm[..end]).into_owned()
        }
        KeyPart::Pid => key.pid.to_string(),
        KeyPart::Tid => key.tid.to_string(),
        KeyPart::Cpu => key.cpu.to_string(),
        KeyPart::Probe => probe.name.to_string(),
        KeyPart::Stack => return None,
        // Empty outside a container or pod (an absent label, to Prometheus).
        KeyPart::Cgroup => crate::kernel::cgroups::identity(key.cgroup).path,
        KeyPart::Container => {
            (crate::kernel::cgroups::identity(key.cgroup).container).unwrap_or_default()
        }
        KeyPart::Pod => crate::kernel::cgroups::identity(key.cgroup)
            .pod
            .unwrap_or_default(),
        // As in event lines: quoted, and marked when cut (at --strlen, or at the key's
        // length); `?` for a string that could not be read.
        KeyPart::Value(_) if probe.sources.key_string => {
            let flags = key.value as u8;
            let text = text.map_or(&[][..], |t| &t[..]);
            let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            let value = match flags {
                f if f & str_flag::FAULT != 0 => Value::Missing,
                f if f & (str_flag::TRUNCATED | str_flag::NO_ROOM) != 0 => {
                    Value::Cut(String::from_utf8_lossy(&text[..end]).into_owned())
                }
                _ => Value::Str(String::from_utf8_lossy(&text[..end]).into_owned()),
            };
            value.to_string()
        }
        // As in event lines: `flags` and `*mask*` hold bits (even when their C type is int).
        KeyPart::Value(name) if shows_hex(name.rsplit(['>', '.']).next().unwrap_or(name)) => {
            format!("{:#x}", key.value)
        }
        KeyPart::Value(_) if probe.sources.key_kind.is_some() => {
            let kind = probe.sources.key_kind.as_ref().unwrap_or(&Kind::Void);
            kind.value(key.value, None).to_string()
        }
        KeyPart::Value(_) if probe.sources.key_signed => (key.value as i64).to_string(),
        KeyPart::Value(_) => key.value.to_string(),
        // -1: a syscall the kernel did not find (raw_syscalls' id of an unknown number).
        KeyPart::Syscall => match usize::try_from(key.value)
            .ok()
            .and_then(syscalls::Sysno::new)
        {
            Some(sysno) => sysno.name().to_string(),
            None => (key.value as i64).to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_bytes_are_told_by_name() {
        let spec = |text: &str| crate::plan::parse_spec(text).unwrap();
        let read = spec("syscalls:sys_enter_read");
        assert!(is_bytes(&read, "count"));
        assert!(!is_bytes(&read, "fd"));
        assert!(is_bytes(&spec("syscalls:sys_exit_read"), "ret"));
        assert!(is_bytes(&spec("syscalls:sys_exit_pwrite64"), "ret"));
        assert!(!is_bytes(&spec("syscalls:sys_exit_openat"), "ret"));
        assert!(is_bytes(&spec("vfs_read%return"), "ret"));
        assert!(is_bytes(&spec("ksys_write%return"), "ret"));
        assert!(is_bytes(&spec("uretprobe:/lib/libc.so.6:read"), "ret"));
        assert!(!is_bytes(&spec("vfs_open%return"), "ret"));
        // `count` outside syscalls may count anything.
        assert!(!is_bytes(&spec("sched:sched_switch"), "count"));
        let any = spec("tcp_sendmsg");
        assert!(is_bytes(&any, "size"));
        assert!(is_bytes(&any, "msg->msg_iter.count_bytes"));
        assert!(is_bytes(&any, "skb->len"));
        assert!(is_bytes(&any, "buf_len"));
        assert!(!is_bytes(&any, "flags"));
    }
}
