//! `--filter` resolved against one probe: each comparison's name found among the probe's own
//! values (tracepoint fields, parameters, struct members, `ret`) or the task's (comm, pid, tid,
//! cpu), its type checked against the comparison, and the whole made into its slot's BPF
//! [`Filter`].

use tracer_common::{cmp, operand, src, Filter, FilterAtom, STR_READS};

use super::aggregate::{value_source, ProbeValues};
use crate::kernel::format::{FieldKind, Format};
use crate::kernel::params::Kind;
use crate::plan::filter::{Atom, FilterPlan, Literal, Op, TASK_NAMES};
use crate::plan::{self, ProbeSpec};
use crate::Error;

/// What the slot must read for its filter, besides what it prints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// A string (a parameter, member or return value) is compared: the slot reads its
    /// strings even when it only counts.
    pub value_string: bool,
}

/// What a name is, for one probe.
enum Operand {
    Number {
        src: u32,
        signed: bool,
        /// The names its values go by (an enum's, a print format's `__print_symbolic`):
        /// compared with a name (`newstate == TCP_SYN_SENT`), it is that name's value.
        names: Vec<(u64, String)>,
    },
    /// A string the slot reads: read k of its strings.
    String(usize),
    /// A `char[N]` field of the record head.
    RecordChars {
        offset: u32,
        len: u32,
    },
    Comm,
    Task(u8),
    /// A number in network byte order (`Kind::Net`): compared for equality with the value as
    /// printed, which is swapped to the kernel's order here.
    Net {
        src: u32,
        size: u8,
        addr: bool,
    },
}

/// The slot's filter for `spec`, and what it needs read.
/// `strings` are the fields a tracepoint slot reads strings of (read k the kth); a string
/// field filtered on is added.
pub fn resolve(
    plan: &FilterPlan,
    spec: &ProbeSpec,
    values: &mut ProbeValues<'_, '_>,
    strings: &mut Vec<String>,
) -> Result<(Filter, Needs), Error> {
    let mut filter = Filter {
        table: plan.table,
        ..Filter::default()
    };
    let mut needs = Needs::default();
    for (k, atom) in plan.atoms.iter().enumerate() {
        let operand = operand(plan, atom, spec, values, &mut needs, strings)?;
        filter.atoms[k] = compile(plan, atom, spec, operand)?;
    }
    Ok((filter, needs))
}

/// `tracer latency --filter`: names resolved against what the latency programs have when a
/// call ends: the start's argument registers (named by its prototype when it is a function),
/// the end's return value (`ret`, when it is a return probe), and the task's comm, pid, tid
/// and cpu. They read no strings and no struct members: those are refused.
pub fn resolve_latency(
    plan: &FilterPlan,
    start: &ProbeSpec,
    end: &ProbeSpec,
) -> Result<Filter, Error> {
    use super::values::{Memory, Values};
    let mut btf = None;
    let function = !matches!(start.target, plan::Target::Tracepoint { .. }) && !start.ret;
    let start_proto = function
        .then(|| super::attach::prototype(start, &mut btf))
        .flatten();
    let end_proto = end
        .ret
        .then(|| super::attach::prototype(end, &mut btf))
        .flatten();
    let memory = match start.target {
        plan::Target::User { .. } => Memory::User,
        plan::Target::Kernel { .. }
        | plan::Target::KernelAddr(_)
        | plan::Target::Tracepoint { .. } => Memory::ByAddress,
    };
    let mut values = Values::new(
        &start.to_string(),
        start_proto.as_ref(),
        &[],
        memory,
        &mut |_, _| Err(Error::usage("no member reads", Vec::new())),
    )?;
    let mut filter = Filter {
        table: plan.table,
        ..Filter::default()
    };
    let mut needs = Needs::default();
    let mut strings = Vec::new();
    let refuse = |atom: &Atom, why: &str| {
        Err(plan.error_at(
            atom.name_span,
            format_args!("tracer latency --filter: '{}' {why}", atom.name),
            vec![format!(
                "name the start's arguments{}, comm, pid, tid or cpu",
                if end.ret { ", ret" } else { "" }
            )],
        ))
    };
    for (k, atom) in plan.atoms.iter().enumerate() {
        let name = atom.name.as_str();
        let what = match name {
            "ret" if end.ret => {
                let mut ret = ProbeValues::Return(end_proto.as_ref());
                operand(plan, atom, end, &mut ret, &mut needs, &mut strings)?
            }
            "ret" => return refuse(atom, &format!("is not known: {end} is not a return probe")),
            _ if !function && !matches!(name, "comm" | "pid" | "tid" | "cpu") => {
                return refuse(
                    atom,
                    &format!("is not known: {start} has no argument registers"),
                )
            }
            _ if name.contains("->") || name.contains('.') => {
                return refuse(atom, "is a struct member: latency reads none")
            }
            _ => {
                let mut lookup = |_: usize, _: &[&str]| -> Result<_, Error> {
                    Err(Error::usage("latency reads no struct members", Vec::new()))
                };
                let mut own = ProbeValues::Entry(&mut values, &mut lookup);
                operand(plan, atom, start, &mut own, &mut needs, &mut strings)?
            }
        };
        if let Operand::String(_) = what {
            return refuse(
                atom,
                "is a string: latency reads none (compare comm, or numbers)",
            );
        }
        filter.atoms[k] = compile(plan, atom, start, what)?;
    }
    Ok(filter)
}

/// One argument of a system call, as `tracer trace --filter` names it.
#[derive(Clone, Debug)]
pub struct CallParam<'a> {
    pub name: &'a str,
    /// The string read of it (read k), for strings and buffers.
    pub string: Option<usize>,
    /// Bytes of the register that hold it (4 for an `int`), and whether it is signed.
    pub size: u32,
    pub signed: bool,
}

/// `tracer trace --filter` for one system call: names resolved against its arguments (by
/// the names its tracepoint gives them, or `argN`), `ret`, `duration` (ns) and the task's
/// comm, pid, tid and cpu. `Ok(None)` when the call has no argument of a name the filter
/// uses: its calls cannot pass. Errors are about the expression itself (a string compared
/// with <).
pub fn resolve_trace(
    plan: &FilterPlan,
    call: &str,
    params: &[CallParam<'_>],
) -> Result<Option<Filter>, Error> {
    let mut filter = Filter {
        table: plan.table,
        ..Filter::default()
    };
    for (k, atom) in plan.atoms.iter().enumerate() {
        let name = atom.name.as_str();
        let numbered = name
            .strip_prefix("arg")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| params.get(i));
        let param = params.iter().find(|p| p.name == name).or(numbered);
        let what = match (name, param) {
            (_, Some(p)) => match p.string {
                Some(read) => Operand::String(read),
                None => {
                    let i = params.iter().position(|q| q.name == p.name).unwrap_or(0);
                    Operand::Number {
                        src: src(8 * i as u32, p.size, p.signed),
                        signed: p.signed,
                        names: Vec::new(),
                    }
                }
            },
            ("ret", None) => Operand::Number {
                src: src(8 * tracer_common::word::RETURN as u32, 8, true),
                signed: true,
                names: Vec::new(),
            },
            ("duration", None) => Operand::Number {
                src: src(8 * tracer_common::trace_word::DURATION as u32, 8, false),
                signed: false,
                names: Vec::new(),
            },
            ("comm", None) => Operand::Comm,
            ("pid", None) => Operand::Task(operand::PID),
            ("tid", None) => Operand::Task(operand::TID),
            ("cpu", None) => Operand::Task(operand::CPU),
            (_, None) => return Ok(None),
        };
        filter.atoms[k] = compile(plan, atom, &call, what)?;
    }
    Ok(Some(filter))
}

fn operand(
    plan: &FilterPlan,
    atom: &Atom,
    spec: &ProbeSpec,
    values: &mut ProbeValues<'_, '_>,
    needs: &mut Needs,
    strings: &mut Vec<String>,
) -> Result<Operand, Error> {
    let name = atom.name.as_str();
    let own = match values {
        ProbeValues::Record(format) => record_operand(format, spec, name, strings),
        ProbeValues::Entry(values, lookup) => match values.column_of(name, *lookup) {
            Ok(column) if column.kind == Kind::Str => {
                let Some(k) = values.read_string(&column) else {
                    return Err(plan.error_at(
                        atom.name_span,
                        format_args!(
                            "{spec} reads {STR_READS} strings per hit, and '{name}' is not one"
                        ),
                        vec!["filter on a string argument that is printed".into()],
                    ));
                };
                needs.value_string = true;
                Ok(Operand::String(k))
            }
            Ok(column) => {
                let net = match column.kind {
                    Kind::Net { size, addr } => Some((size, addr)),
                    _ => None,
                };
                let names = enum_names(&column.kind);
                values.source(name, *lookup).map(|(src, signed)| match net {
                    Some((size, addr)) => Operand::Net { src, size, addr },
                    None => Operand::Number { src, signed, names },
                })
            }
            Err(e) => Err(e),
        },
        ProbeValues::Return(proto)
            if name == "ret" && proto.is_some_and(|p| p.ret == Kind::Str) =>
        {
            needs.value_string = true;
            Ok(Operand::String(0))
        }
        ProbeValues::Return(proto) => {
            let names = (*proto).map_or(Vec::new(), |p| enum_names(&p.ret));
            value_source(spec, values, name).map(|(src, signed)| Operand::Number {
                src,
                signed,
                names,
            })
        }
    };
    let err = match own {
        Ok(operand) => return Ok(operand),
        Err(err) => err,
    };
    match name {
        "comm" => return Ok(Operand::Comm),
        "pid" => return Ok(Operand::Task(operand::PID)),
        "tid" => return Ok(Operand::Task(operand::TID)),
        "cpu" => return Ok(Operand::Task(operand::CPU)),
        _ => {}
    }
    let (message, mut hints) = match err {
        Error::Usage { message, hints } => (message, hints),
        other => return Err(other),
    };
    let names = own_names(spec, values);
    if !hints.iter().any(|h| h.starts_with("did you mean")) {
        let all = names.iter().map(String::as_str).chain(TASK_NAMES);
        if let Some(near) = plan::did_you_mean(name, all) {
            hints.insert(0, near);
        }
    }
    hints.push(format!("every probe also has {}", TASK_NAMES.join(", ")));
    Err(plan.error_at(atom.name_span, message, hints))
}

/// The names a probe's values go by (for hints).
fn own_names(spec: &ProbeSpec, values: &ProbeValues<'_, '_>) -> Vec<String> {
    match values {
        ProbeValues::Record(format) => (format.fields.iter())
            .filter(|f| !f.name.starts_with("__") && !f.name.starts_with("common_"))
            .map(|f| f.name.clone())
            .collect(),
        ProbeValues::Entry(values, _) => values.param_names(),
        ProbeValues::Return(_) if spec.ret => vec!["ret".into()],
        ProbeValues::Return(_) => Vec::new(),
    }
}

/// The string read of tracepoint field `name` (a syscall's user string, a `__data_loc`
/// string), added to the slot's `strings` if it is not one of them yet.
fn string_read(spec: &ProbeSpec, name: &str, strings: &mut Vec<String>) -> Result<Operand, Error> {
    if let Some(k) = strings.iter().position(|s| s == name) {
        return Ok(Operand::String(k));
    }
    if strings.len() == STR_READS {
        return Err(Error::usage(
            format!("{spec} reads {STR_READS} strings per hit, and '{name}' is not one"),
            vec![format!("print fewer: {spec}({name}, ...)")],
        ));
    }
    strings.push(name.to_string());
    Ok(Operand::String(strings.len() - 1))
}

/// A tracepoint field: a number of the record head, a syscall's user string, a `__data_loc`
/// string, or a `char[N]` of the record head.
fn record_operand(
    format: &Format,
    spec: &ProbeSpec,
    name: &str,
    strings: &mut Vec<String>,
) -> Result<Operand, Error> {
    if let Some(field) = format.field(name) {
        let syscall_entry = matches!(&spec.target, plan::Target::Tracepoint { category, name }
            if category == "syscalls" && name.starts_with("sys_enter_"));
        let data_loc = super::attach::data_loc_string(&field.c_type);
        match super::attach::user_string(&field.c_type) {
            _ if data_loc => return string_read(spec, name, strings),
            Some(false) if syscall_entry => {
                return string_read(spec, name, strings);
            }
            Some(true) if syscall_entry => {
                return Err(Error::usage(
                    format!("'{name}' of {spec} is an array of strings: it cannot be compared"),
                    vec!["filter on comm, or on a string or number field".into()],
                ))
            }
            _ => {}
        }
        let head = 8 * tracer_common::DATA_WORDS;
        if let FieldKind::String { len } = field.kind {
            if len > 0 && field.offset + len <= head {
                return Ok(Operand::RecordChars {
                    offset: field.offset as u32,
                    len: len as u32,
                });
            }
        }
        let names = (format.symbolic.iter())
            .find(|(field, _)| field == name)
            .map_or(Vec::new(), |(_, names)| names.clone());
        return value_source(spec, &mut ProbeValues::Record(format), name)
            .map(|(src, signed)| Operand::Number { src, signed, names })
            .map_err(|_| {
                Error::usage(
                    format!(
                        "field '{name}' of {spec} ({}, at byte {}) cannot be filtered on",
                        field.c_type, field.offset
                    ),
                    vec![format!(
                        "filter on a number or char[N] field within the first {head} bytes of the record"
                    )],
                )
            });
    }
    let arg = name
        .strip_prefix("arg")
        .and_then(|n| n.parse::<usize>().ok());
    match arg {
        Some(_) => {
            value_source(spec, &mut ProbeValues::Record(format), name).map(|(src, signed)| {
                Operand::Number {
                    src,
                    signed,
                    names: Vec::new(),
                }
            })
        }
        None => Err(Error::usage(
            format!("{spec} has no field '{name}'"),
            vec![format!(
                "its fields: {}",
                own_names(spec, &ProbeValues::Record(format)).join(", ")
            )],
        )),
    }
}

/// A comparison of a network-order value with the value as printed (`skc_dport == 8080`,
/// `skc_daddr == 127.0.0.1`, the address unquoted): only equality, since the kernel compares
/// the raw bytes, whose order is not the number's.
fn net(
    plan: &FilterPlan,
    atom: &Atom,
    spec: &dyn std::fmt::Display,
    src: u32,
    (size, addr): (u8, bool),
) -> Result<FilterAtom, Error> {
    let name = &atom.name;
    let cmp = match atom.op {
        Op::Eq => cmp::EQ,
        Op::Ne => cmp::NE,
        _ => {
            return Err(plan.error_at(
                atom.name_span,
                format_args!(
                    "'{name}' of {spec} is in network byte order: compare it with == or !="
                ),
                vec![format!(
                    "e.g. '{name} == {}' (the value as printed)",
                    if addr { "127.0.0.1" } else { "8080" }
                )],
            ))
        }
    };
    let bits = u32::from(size) * 8;
    let value = match &atom.literal {
        Literal::Number {
            value,
            negative: false,
        } if bits >= 64 || *value >> bits == 0 => crate::kernel::params::net_to_host(*value, size),
        Literal::Word(text) if addr => match text.parse::<std::net::Ipv4Addr>() {
            Ok(ip) => u64::from(u32::from_le_bytes(ip.octets())),
            Err(_) => {
                return Err(plan.error_at(
                    atom.literal_span,
                    format_args!("'{text}' is not an IPv4 address"),
                    vec![format!("e.g. '{name} == 127.0.0.1'")],
                ))
            }
        },
        _ => {
            return Err(plan.error_at(
                atom.literal_span,
                format_args!(
                    "'{name}' of {spec} is {}",
                    if addr {
                        "an IPv4 address".to_string()
                    } else {
                        format!("a {bits}-bit number")
                    }
                ),
                vec![match addr {
                    true => format!("compare it with an address, unquoted: '{name} == 127.0.0.1'"),
                    false => format!(
                        "compare it with the value as printed, from 0 to {}",
                        if bits >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << bits) - 1
                        }
                    ),
                }],
            ))
        }
    };
    Ok(FilterAtom {
        value,
        src,
        operand: operand::VALUE,
        cmp,
        ..FilterAtom::default()
    })
}

/// The names of an enum's values (none for another kind), as two's complement numbers.
fn enum_names(kind: &Kind) -> Vec<(u64, String)> {
    match kind {
        Kind::Enum { values, .. } => (values.iter())
            .map(|(name, value)| (*value as u64, name.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The value `word` names among `names` (of `atom`'s operand), or an error that lists them.
fn named_value(
    plan: &FilterPlan,
    atom: &Atom,
    spec: &dyn std::fmt::Display,
    word: &str,
    names: &[(u64, String)],
) -> Result<u64, Error> {
    if let Some((value, _)) = names.iter().find(|(_, n)| n == word) {
        return Ok(*value);
    }
    let mut hints = Vec::new();
    if let Some(near) = plan::did_you_mean(word, names.iter().map(|(_, n)| n.as_str())) {
        hints.push(near);
    }
    let listed: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).take(12).collect();
    let more = if names.len() > listed.len() {
        ", ..."
    } else {
        ""
    };
    hints.push(format!("its values: {}{more}", listed.join(", ")));
    Err(plan.error_at(
        atom.literal_span,
        format_args!("'{word}' is not a value of '{}' of {spec}", atom.name),
        hints,
    ))
}

/// One atom for the BPF program, type-checked.
fn compile(
    plan: &FilterPlan,
    atom: &Atom,
    spec: &dyn std::fmt::Display,
    what: Operand,
) -> Result<FilterAtom, Error> {
    let name = &atom.name;
    let string = |operand: u8, src: u32| -> Result<FilterAtom, Error> {
        let (glob, empty) = match (atom.op.for_strings(), atom.glob) {
            (true, Some(glob)) => glob,
            (false, _) => {
                return Err(plan.error_at(
                    atom.name_span,
                    format_args!("'{name}' is a string: compare it with ==, != or ~"),
                    vec![format!("e.g. '{name} ~ \"/etc/*\"'")],
                ))
            }
            (true, None) => {
                return Err(plan.error_at(
                    atom.literal_span,
                    format_args!("'{name}' is a string: quote the value"),
                    vec![format!("e.g. '{name} == \"text\"'")],
                ))
            }
        };
        Ok(FilterAtom {
            operand,
            src,
            glob,
            cmp: if atom.op == Op::Ne { cmp::NE } else { cmp::EQ },
            signed_or_empty: u8::from(empty),
            ..FilterAtom::default()
        })
    };
    let (operand, src, signed, names) = match what {
        Operand::String(k) => return string(operand::STRING, k as u32),
        Operand::Comm => return string(operand::COMM, 0),
        Operand::RecordChars { offset, len } => {
            return string(operand::RECORD_CHARS, src(offset, len, false))
        }
        Operand::Number { src, signed, names } => (operand::VALUE, src, signed, names),
        Operand::Net { src, size, addr } => return net(plan, atom, spec, src, (size, addr)),
        Operand::Task(operand) => (operand, 0, false, Vec::new()),
    };
    if atom.op == Op::Glob {
        return Err(plan.error_at(
            atom.name_span,
            format_args!("'{name}' of {spec} is a number: ~ matches strings"),
            vec!["compare numbers with == != < <= > >= or &".into()],
        ));
    }
    let value = match &atom.literal {
        Literal::Number { value, negative } => {
            let ordered = matches!(atom.op, Op::Lt | Op::Le | Op::Gt | Op::Ge);
            if *negative && !signed && ordered {
                return Err(plan.error_at(
                    atom.literal_span,
                    format_args!("'{name}' of {spec} is unsigned: it is never below 0"),
                    vec!["compare with 0 or a positive number".into()],
                ));
            }
            *value
        }
        Literal::Word(word) if !names.is_empty() => named_value(plan, atom, spec, word, &names)?,
        Literal::Str(_) | Literal::Word(_) => {
            return Err(plan.error_at(
                atom.literal_span,
                format_args!("'{name}' of {spec} is a number, not a string"),
                vec!["compare it with a number: 42, -2, 0x40".into()],
            ))
        }
    };
    let cmp = match atom.op {
        Op::Eq => cmp::EQ,
        Op::Ne => cmp::NE,
        Op::Lt => cmp::LT,
        Op::Le => cmp::LE,
        Op::Gt => cmp::GT,
        Op::Ge => cmp::GE,
        Op::BitAnd => cmp::AND,
        Op::Glob => unreachable!("refused above"),
    };
    Ok(FilterAtom {
        value,
        src,
        operand,
        cmp,
        signed_or_empty: u8::from(signed),
        ..FilterAtom::default()
    })
}
