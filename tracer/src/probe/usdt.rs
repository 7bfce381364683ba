//! USDT probe specs resolved against a binary's `.note.stapsdt`: the sites a spec names, the
//! uprobe (file offset, semaphore offset) of each, and the argument places its BPF slot reads,
//! typed by size and sign (strings where the provider documents them).

use std::path::{Path, PathBuf};

use tracer_common::{UsdtArg, UsdtArgs, USDT_CONST, USDT_MEM, USDT_NONE, USDT_REG};

use crate::kernel::params::{Kind, Param, Prototype};
use crate::kernel::usdt::{self, Arg, Note, Operand};
use crate::kernel::{elf, file};
use crate::plan::{self, ProbeSpec, Target, UserAt};
use crate::Error;

/// One USDT probe site, ready to be opened as a uprobe.
#[derive(Clone, Debug)]
pub struct Site {
    pub path: PathBuf,
    pub note: Note,
    /// File offset of the probe's instruction.
    pub offset: u64,
    /// File offset of its semaphore (the uprobe PMU's `ref_ctr_offset`), if it has one.
    pub semaphore: Option<u64>,
    /// Where the BPF slot finds each argument.
    pub places: UsdtArgs,
    /// Names and types: arg0..argN, sized and signed as the note says.
    pub proto: Prototype,
}

/// The notes of the binary a spec names, or why there are none.
fn notes_of(file: &str) -> Result<(PathBuf, Vec<Note>), Error> {
    let path = elf::resolve_file(file)?;
    let data = file::map(&path)?;
    let notes = usdt::notes(&data, &path)?;
    if notes.is_empty() {
        return Err(Error::usage(
            format!("{} has no USDT probes (no .note.stapsdt section)", path.display()),
            vec![
                "USDT probes are compiled in with <sys/sdt.h> (DTRACE_PROBE, STAP_PROBE); Debian's python3 has them".into(),
                format!("probe its functions instead: tracer list --binary {}", path.display()),
            ],
        ));
    }
    Ok((path, notes))
}

fn matches(note: &Note, provider: Option<&str>, name: &str) -> bool {
    plan::glob_match(name, &note.name)
        && provider.is_none_or(|p| plan::glob_match(p, &note.provider))
}

/// The spec's probe, not found: the binary's probes, the nearest first.
fn unknown(spec: &ProbeSpec, path: &Path, notes: &[Note]) -> Error {
    let mut names: Vec<String> = notes.iter().map(Note::full_name).collect();
    names.sort();
    names.dedup();
    let wanted = match &spec.target {
        Target::User {
            at: UserAt::Usdt { provider, name, .. },
            ..
        } => match provider {
            Some(provider) => format!("{provider}:{name}"),
            None => name.clone(),
        },
        Target::User {
            at: UserAt::Symbol { .. } | UserAt::Address(_),
            ..
        }
        | Target::Kernel { .. }
        | Target::KernelAddr(_)
        | Target::Tracepoint { .. } => spec.to_string(),
    };
    // Near names of the same provider (or of any, when none is given), shown as specs.
    let (provider, bare) = match wanted.split_once(':') {
        Some((provider, name)) => (Some(provider), name),
        None => (None, wanted.as_str()),
    };
    let of_provider: Vec<&Note> = (notes.iter())
        .filter(|n| provider.is_none_or(|p| plan::glob_match(p, &n.provider)))
        .collect();
    let mut near: Vec<String> = Vec::new();
    for name in plan::similar(bare, of_provider.iter().map(|n| n.name.as_str()), 4) {
        for note in of_provider.iter().filter(|n| n.name == name) {
            let shown = match provider {
                Some(_) => note.full_name(),
                None => note.name.clone(),
            };
            if !near.contains(&shown) {
                near.push(shown);
            }
        }
    }
    let mut hints: Vec<String> = Vec::new();
    if !near.is_empty() {
        hints.push(format!("did you mean: {}", near.join(", ")));
    }
    const SHOWN: usize = 12;
    let mut list = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        list += &format!(
            ", ... ({} in all: tracer list usdt:{})",
            names.len(),
            path.display()
        );
    }
    hints.push(format!("its probes: {list}"));
    Error::usage(
        format!("no USDT probe '{wanted}' in {}", path.display()),
        hints,
    )
}

/// A USDT spec expanded into one spec per site: every probe its (glob) names match, and for
/// a probe compiled in at several places, each place (`#0`, `#1`, ...).
pub fn expand(spec: &ProbeSpec) -> Result<Vec<ProbeSpec>, Error> {
    let Target::User {
        file,
        at: UserAt::Usdt {
            provider,
            name,
            site,
        },
    } = &spec.target
    else {
        return Ok(vec![spec.clone()]);
    };
    let (path, notes) = notes_of(file)?;
    let found: Vec<&Note> = (notes.iter())
        .filter(|n| matches(n, provider.as_deref(), name))
        .collect();
    if found.is_empty() {
        return Err(unknown(spec, &path, &notes));
    }
    let mut out = Vec::new();
    for (i, note) in found.iter().enumerate() {
        let same = |n: &&&Note| n.provider == note.provider && n.name == note.name;
        let sites = found.iter().filter(same).count();
        let index = found[..i].iter().filter(same).count();
        if site.is_some_and(|s| s != index) {
            continue;
        }
        out.push(ProbeSpec {
            target: Target::User {
                file: file.clone(),
                at: UserAt::Usdt {
                    provider: Some(note.provider.clone()),
                    name: note.name.clone(),
                    site: (sites > 1).then_some(index),
                },
            },
            ret: false,
            args: spec.args.clone(),
        });
    }
    if out.is_empty() {
        return Err(Error::usage(
            format!("{spec}: no such site"),
            vec![format!("its sites are #0 to #{}", found.len() - 1)],
        ));
    }
    Ok(out)
}

/// The one site a USDT spec names (after [`expand`], or a spec naming a single site).
pub fn site(
    spec: &ProbeSpec,
    file: &str,
    provider: Option<&str>,
    name: &str,
    site: Option<usize>,
) -> Result<Site, Error> {
    let (path, notes) = notes_of(file)?;
    let found: Vec<&Note> = notes
        .iter()
        .filter(|n| matches(n, provider, name))
        .collect();
    let note = match (found.len(), site) {
        (0, _) => return Err(unknown(spec, &path, &notes)),
        (_, Some(i)) => *found.get(i).ok_or_else(|| {
            Error::usage(
                format!("{spec}: no such site"),
                vec![format!("its sites are #0 to #{}", found.len() - 1)],
            )
        })?,
        (1, None) => found[0],
        (n, None) => {
            return Err(Error::usage(
                format!("{spec} names {n} probe sites; this command attaches to one"),
                vec![format!(
                    "pick one: {}",
                    (0..n)
                        .map(|i| format!("{spec}#{i}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )],
            ))
        }
    };
    let data = file::map(&path)?;
    let offset = elf::code_offset(&data, &path, note.address)?;
    let semaphore = match note.semaphore {
        0 => None,
        vaddr => Some(elf::data_offset(&data, &path, vaddr)?),
    };
    let args = usdt::parse_args(&note.args);
    let places = places(&args, note.address, &mut |symbol| {
        let found = elf::symbol_address(&data, &path, symbol).ok();
        if found.is_none() {
            crate::output::notes::note(format_args!(
                "{spec}: no symbol '{symbol}' in {} (stripped?): an argument read at it prints as 0x0",
                path.display()
            ));
        }
        found
    });
    let mut proto = prototype(note, &args);
    // What cannot be read prints as a raw 0x0, not as a typed 0.
    let texts = note.args.split_whitespace();
    for ((param, place), text) in proto.params.iter_mut().zip(&places.args).zip(texts) {
        if place.kind == USDT_NONE {
            param.kind = Kind::Other {
                name: text.to_string(),
            };
        }
    }
    for (i, arg) in args.iter().enumerate() {
        if let Operand::Unsupported(text) = &arg.operand {
            crate::output::notes::note(format_args!(
                "{spec}: arg{i} ('{text}') is not readable by tracer; it prints as 0x0"
            ));
        }
    }
    if args.len() > tracer_common::word::ARGS {
        crate::output::notes::note(format_args!(
            "{spec}: only the first {} of its {} arguments are read",
            tracer_common::word::ARGS,
            args.len()
        ));
    }
    Ok(Site {
        path,
        note: note.clone(),
        offset,
        semaphore,
        places,
        proto,
    })
}

/// Whether a spec names a USDT probe.
pub fn is_usdt(spec: &ProbeSpec) -> bool {
    matches!(
        spec.target,
        Target::User {
            at: UserAt::Usdt { .. },
            ..
        }
    )
}

/// The site of a spec if it is a USDT probe (`None` for any other spec).
pub fn of_spec(spec: &ProbeSpec) -> Option<Result<Site, Error>> {
    match &spec.target {
        Target::User {
            file,
            at:
                UserAt::Usdt {
                    provider,
                    name,
                    site: which,
                },
        } => Some(site(spec, file, provider.as_deref(), name, *which)),
        Target::User {
            at: UserAt::Symbol { .. } | UserAt::Address(_),
            ..
        }
        | Target::Kernel { .. }
        | Target::KernelAddr(_)
        | Target::Tracepoint { .. } => None,
    }
}

/// One listed probe: its spec and, per argument, (type, `argN (SPEC)`), then its semaphore.
pub type Listed = (String, Vec<(String, String)>);

/// A binary's USDT probes whose `PROVIDER:NAME` matches `pattern` (a glob; `None`: all), as
/// `tracer probe` accepts them (a probe compiled in at several places once per place, `#N`),
/// sorted by name,
/// each with its arguments' types and specs, and its semaphore.
pub fn listing(file: &str, pattern: Option<&str>) -> Result<Vec<Listed>, Error> {
    let (_, notes) = notes_of(file)?;
    let mut out = Vec::new();
    for (i, note) in notes.iter().enumerate() {
        if pattern.is_some_and(|p| {
            !plan::glob_match(p, &note.full_name()) && !plan::glob_match(p, &note.name)
        }) {
            continue;
        }
        let same = |n: &&Note| n.provider == note.provider && n.name == note.name;
        let sites = notes.iter().filter(same).count();
        let index = notes[..i].iter().filter(same).count();
        // The file as the user named it, as `tracer probe` shows it.
        let mut spec = format!("usdt:{file}:{}", note.full_name());
        if sites > 1 {
            spec += &format!("#{index}");
        }
        let args = usdt::parse_args(&note.args);
        let proto = prototype(note, &args);
        let mut fields: Vec<(String, String)> =
            (proto.params.iter().zip(note.args.split_whitespace()))
                .map(|(p, text)| (p.kind.to_string(), format!("{} ({text})", p.name)))
                .collect();
        if note.semaphore != 0 {
            fields.push((
                "semaphore".into(),
                format!("{:#x} (raised while traced)", note.semaphore),
            ));
        }
        out.push(((note.full_name(), index), (spec, fields)));
    }
    // By name, then site: a listing to read, whatever order the linker left them in.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, listed)| listed).collect())
}

/// Where the BPF program reads each argument. A `sym(%rip)` operand is read at the
/// instruction pointer plus the symbol's distance from the probe: at a uprobe's hit the
/// registers' ip is the probed address, wherever the file is loaded.
fn places(args: &[Arg], probe: u64, symbol: &mut dyn FnMut(&str) -> Option<u64>) -> UsdtArgs {
    let mut out = UsdtArgs::default();
    for (slot, arg) in out.args.iter_mut().zip(args) {
        let (kind, reg, value) = match &arg.operand {
            Operand::Const(value) => (USDT_CONST, 0, *value),
            Operand::Reg { reg } => (USDT_REG, *reg, 0),
            Operand::Mem { reg, disp } => (USDT_MEM, *reg, *disp),
            Operand::Symbol {
                symbol: name,
                offset,
            } => match symbol(name) {
                Some(address) => (
                    USDT_MEM,
                    usdt::RIP,
                    (address.wrapping_add(*offset as u64)).wrapping_sub(probe) as i64,
                ),
                None => (USDT_NONE, 0, 0),
            },
            Operand::Unsupported(_) => (USDT_NONE, 0, 0),
        };
        *slot = UsdtArg {
            value,
            reg,
            kind,
            size: arg.size,
            _pad: 0,
        };
    }
    out
}

/// Strings the providers document (their probes' arguments are otherwise untyped numbers):
/// (provider, probe, argument indexes that are `char *`).
const STRINGS: &[(&str, &str, &[usize])] = &[
    // CPython's Doc/howto/instrumentation.rst: (filename, funcname, lineno).
    ("python", "function__entry", &[0, 1]),
    ("python", "function__return", &[0, 1]),
    ("python", "line", &[0, 1]),
    ("python", "import__find__load__start", &[0]),
    ("python", "import__find__load__done", &[0]),
    ("python", "audit", &[0]),
];

/// The probe's arguments as parameters: `argN`, an integer of the note's size and sign, or a
/// string where [`STRINGS`] says so.
fn prototype(note: &Note, args: &[Arg]) -> Prototype {
    let strings = (STRINGS.iter())
        .find(|(p, n, _)| *p == note.provider && *n == note.name)
        .map_or(&[][..], |(_, _, s)| *s);
    let params = (args.iter().enumerate().take(tracer_common::word::ARGS))
        .map(|(i, arg)| Param {
            name: format!("arg{i}"),
            kind: match (strings.contains(&i), &arg.operand, arg.signed) {
                (true, _, _) => Kind::Str,
                (_, Operand::Unsupported(text), _) => Kind::Other { name: text.clone() },
                (_, _, true) => Kind::Signed(arg.size),
                (_, _, false) => Kind::Unsigned(arg.size),
            },
        })
        .collect();
    Prototype {
        params,
        ret: Kind::Void,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_follow_the_specs() {
        let args = usdt::parse_args("-4@%eax 8@-16(%rbp) -4@$5 -4@counter(%rip) 8@(%rax,%rbx,8)");
        let places = places(&args, 0x1139, &mut |s| (s == "counter").then_some(0x4010));
        let at = |kind, reg, value, size| UsdtArg {
            value,
            reg,
            kind,
            size,
            _pad: 0,
        };
        assert_eq!(
            places.args,
            [
                at(USDT_REG, 80, 0, 4),
                at(USDT_MEM, 32, -16, 8),
                at(USDT_CONST, 0, 5, 4),
                at(USDT_MEM, usdt::RIP, 0x4010 - 0x1139, 4),
                at(USDT_NONE, 0, 0, 8),
                UsdtArg::default(),
            ]
        );
    }

    #[test]
    fn python_documents_its_strings() {
        let note = Note {
            provider: "python".into(),
            name: "function__entry".into(),
            address: 0,
            semaphore: 0,
            args: "8@%rbp 8@%r12 -4@%eax".into(),
        };
        let proto = prototype(&note, &usdt::parse_args(&note.args));
        let kinds: Vec<Kind> = proto.params.iter().map(|p| p.kind.clone()).collect();
        assert_eq!(kinds, [Kind::Str, Kind::Str, Kind::Signed(4)]);
        let other = Note {
            provider: "tracer".into(),
            ..note
        };
        let proto = prototype(&other, &usdt::parse_args(&other.args));
        assert_eq!(proto.params[0].kind, Kind::Unsigned(8));
        assert_eq!(proto.params[2].name, "arg2");
    }
}
