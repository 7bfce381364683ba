//! Probe specs as the user writes them (`FUNC`, `kprobe:`, `fentry:`, `uprobe:PATH:SYM`,
//! `usdt:`, `CAT:NAME`), their argument lists, and the globs and did-you-means they use.

use std::fmt;

use super::valid_value_name;
use crate::Error;

/// Where a probe goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A kernel function, by name and offset: through its BPF trampoline (fentry/fexit) where
    /// the kernel permits, a kprobe otherwise. `fentry`: `fentry:`/`fexit:` asked for the
    /// trampoline (no kprobe fallback).
    Kernel {
        function: String,
        offset: u64,
        fentry: bool,
    },
    /// A kernel address (kprobe).
    KernelAddr(u64),
    /// A user-space function or address in an ELF file (uprobe). `file` is as the user wrote it
    /// (a path, a program on PATH or a library name); it is resolved later.
    User { file: String, at: UserAt },
    /// A tracepoint.
    Tracepoint { category: String, name: String },
}

/// A position in a user-space ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserAt {
    Symbol {
        name: String,
        offset: u64,
    },
    /// A virtual address as the ELF file's symbols give it (converted to a file offset later).
    Address(u64),
    /// A USDT probe (`.note.stapsdt`): `PROVIDER:NAME` or `NAME` of any provider (globs
    /// allowed). `site` picks one of several places the same probe is compiled in (after
    /// expansion; `None`: the only one).
    Usdt {
        provider: Option<String>,
        name: String,
        site: Option<usize>,
    },
}

/// One probe as the user asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    pub target: Target,
    /// A return probe (kretprobe / uretprobe).
    pub ret: bool,
    /// What to print per hit, as `FUNC(a, b->c)` or `--args` listed it: parameter names,
    /// `argN`, `PARAM->member[.member]` or tracepoint fields. Empty: every argument.
    pub args: Vec<String>,
}

impl ProbeSpec {
    /// Does the name contain glob characters to expand against the kernel's lists?
    pub fn is_glob(&self) -> bool {
        let glob = |s: &str| s.contains(['*', '?']);
        match &self.target {
            Target::Kernel { function, .. } => glob(function),
            Target::Tracepoint { category, name } => glob(category) || glob(name),
            Target::User {
                at: UserAt::Symbol { name, .. },
                ..
            } => glob(name),
            Target::User {
                at: UserAt::Usdt { provider, name, .. },
                ..
            } => glob(name) || provider.as_deref().is_some_and(glob),
            Target::KernelAddr(_)
            | Target::User {
                at: UserAt::Address(_),
                ..
            } => false,
        }
    }
}

impl fmt::Display for ProbeSpec {
    /// The canonical name shown in the PROBE column.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offset = |off: &u64| {
            if *off == 0 {
                String::new()
            } else {
                format!("+{off:#x}")
            }
        };
        match &self.target {
            Target::Tracepoint { category, name } => write!(f, "{category}:{name}"),
            Target::Kernel {
                function,
                offset: off,
                fentry,
            } => {
                let kind = match (fentry, self.ret) {
                    (true, false) => "fentry",
                    (true, true) => "fexit",
                    (false, false) => "kprobe",
                    (false, true) => "kretprobe",
                };
                write!(f, "{kind}:{function}{}", offset(off))
            }
            Target::KernelAddr(addr) => {
                let kind = if self.ret { "kretprobe" } else { "kprobe" };
                write!(f, "{kind}:{addr:#x}")
            }
            Target::User { file, at } => {
                let kind = if self.ret { "uretprobe" } else { "uprobe" };
                match at {
                    UserAt::Symbol { name, offset: off } => {
                        write!(f, "{kind}:{file}:{name}{}", offset(off))
                    }
                    UserAt::Address(addr) => write!(f, "{kind}:{file}:{addr:#x}"),
                    UserAt::Usdt {
                        provider,
                        name,
                        site,
                    } => {
                        write!(f, "usdt:{file}:")?;
                        if let Some(provider) = provider {
                            write!(f, "{provider}:")?;
                        }
                        write!(f, "{name}")?;
                        match site {
                            Some(site) => write!(f, "#{site}"),
                            None => Ok(()),
                        }
                    }
                }
            }
        }
    }
}

const SPEC_HINT: &str = "probe specs: FUNC[+OFF], FUNC%return, kprobe:FUNC, kretprobe:FUNC, \
     fentry:FUNC, fexit:FUNC, \
     kprobe:0xADDR, uprobe:PATH:SYMBOL[+OFF], uretprobe:PATH:SYMBOL, uprobe:PATH:0xADDR, \
     usdt:PATH:[PROVIDER:]NAME, CAT:NAME or tracepoint:CAT:NAME (globs * and ? allowed in names)";

/// Whether `addr` can be a kernel address: on x86-64 the kernel's half of the address space
/// has the top bit set (with 4- and 5-level paging alike), the user's half has it clear.
pub fn is_kernel_address(addr: u64) -> bool {
    match cfg!(target_arch = "x86_64") {
        true => addr >> 63 == 1,
        false => addr != 0,
    }
}

pub(crate) fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Kernel symbols and tracepoint names: C identifiers, plus `.` (e.g. `foo.isra.0`) and globs.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '*' | '?'))
}

/// `NAME[+OFF]` -> (name, offset).
fn name_offset(text: &str, spec: &str) -> Result<(String, u64), Error> {
    let (name, offset) = match text.split_once('+') {
        Some((name, off)) => {
            let off = parse_number(off).ok_or_else(|| {
                Error::usage_hints(
                    format!("invalid offset '{off}' in probe '{spec}'"),
                    &["offsets are decimal or 0x-prefixed hex"],
                )
            })?;
            (name, off)
        }
        None => (text, 0),
    };
    if !valid_name(name) {
        return Err(Error::usage_hints(
            format!("invalid function name '{name}' in probe '{spec}'"),
            &[SPEC_HINT],
        ));
    }
    Ok((name.to_string(), offset))
}

fn kernel(rest: &str, ret: bool, spec: &str) -> Result<ProbeSpec, Error> {
    kernel_via(rest, ret, false, spec)
}

/// `fentry:FUNC` / `fexit:FUNC`: a kernel function through its BPF trampoline only.
fn trampoline(rest: &str, ret: bool, spec: &str) -> Result<ProbeSpec, Error> {
    if rest.starts_with("0x") || rest.contains('+') {
        let kind = if ret { "fexit" } else { "fentry" };
        return Err(Error::usage_hints(
            format!(
                "probe '{spec}': {kind} attaches to a function by name, at its entry or return"
            ),
            &["name the function alone (fentry:vfs_read), or use kprobe:FUNC+OFF / kprobe:0xADDR"],
        ));
    }
    kernel_via(rest, ret, true, spec)
}

fn kernel_via(rest: &str, ret: bool, fentry: bool, spec: &str) -> Result<ProbeSpec, Error> {
    let target = if rest.starts_with("0x") {
        let addr = parse_number(rest).ok_or_else(|| {
            Error::usage_hints(format!("invalid address in probe '{spec}'"), &[SPEC_HINT])
        })?;
        if !is_kernel_address(addr) {
            return Err(Error::usage_hints(format!("probe '{spec}': {addr:#x} is not a kernel address"), &["kernel addresses have the top bit set (0xffff...); name the function instead, \
                 e.g. kprobe:do_sys_openat2 (see `tracer list 'kprobe:*'`)"]));
        }
        Target::KernelAddr(addr)
    } else {
        let (function, offset) = name_offset(rest, spec)?;
        if ret && offset != 0 {
            return Err(Error::usage_hints(
                format!("return probe '{spec}' cannot have an offset"),
                &["a kretprobe fires when the function returns: drop the +OFF"],
            ));
        }
        Target::Kernel {
            function,
            offset,
            fentry,
        }
    };
    Ok(ProbeSpec {
        target,
        ret,
        args: Vec::new(),
    })
}

fn user(rest: &str, ret: bool, spec: &str) -> Result<ProbeSpec, Error> {
    let Some((file, what)) = rest.rsplit_once(':') else {
        return Err(Error::usage_hints(
            format!("probe '{spec}' needs PATH:SYMBOL"),
            &[SPEC_HINT],
        ));
    };
    if file.is_empty() || what.is_empty() {
        return Err(Error::usage_hints(
            format!("probe '{spec}' needs PATH:SYMBOL"),
            &[SPEC_HINT],
        ));
    }
    let at = if what.starts_with("0x") {
        UserAt::Address(parse_number(what).ok_or_else(|| {
            Error::usage_hints(format!("invalid address in probe '{spec}'"), &[SPEC_HINT])
        })?)
    } else {
        let (name, offset) = name_offset(what, spec)?;
        if ret && offset != 0 {
            return Err(Error::usage_hints(
                format!("return probe '{spec}' cannot have an offset"),
                &["drop the +OFF"],
            ));
        }
        UserAt::Symbol { name, offset }
    };
    Ok(ProbeSpec {
        target: Target::User {
            file: file.to_string(),
            at,
        },
        ret,
        args: Vec::new(),
    })
}

/// `usdt:PATH:PROVIDER:NAME` or `usdt:PATH:NAME` (the part after `usdt:`).
fn usdt(rest: &str, spec: &str) -> Result<ProbeSpec, Error> {
    let hint = "USDT probes are usdt:PATH:PROVIDER:NAME or usdt:PATH:NAME (globs allowed); \
                `tracer list usdt:PATH` lists a binary's";
    let parts: Vec<&str> = rest.splitn(3, ':').collect();
    let (file, provider, name) = match parts[..] {
        [file, name] => (file, None, name),
        [file, provider, name] => (file, Some(provider), name),
        _ => {
            return Err(Error::usage_hints(
                format!("probe '{spec}' needs PATH:[PROVIDER:]NAME"),
                &[hint],
            ))
        }
    };
    let (name, site) = match name.split_once('#') {
        Some((name, site)) => match site.parse::<usize>() {
            Ok(site) => (name, Some(site)),
            Err(_) => {
                return Err(Error::usage_hints(
                    format!("invalid site '#{site}' in probe '{spec}'"),
                    &["#N picks the Nth place a probe is compiled in (0, 1, ...)"],
                ))
            }
        },
        None => (name, None),
    };
    let bad = |part: &str| part.is_empty() || !valid_name(part);
    if file.is_empty() || bad(name) || provider.is_some_and(bad) {
        return Err(Error::usage_hints(
            format!("invalid USDT probe '{spec}'"),
            &[hint],
        ));
    }
    Ok(ProbeSpec {
        target: Target::User {
            file: file.to_string(),
            at: UserAt::Usdt {
                provider: provider.map(str::to_string),
                name: name.to_string(),
                site,
            },
        },
        ret: false,
        args: Vec::new(),
    })
}

fn tracepoint(rest: &str, spec: &str) -> Result<ProbeSpec, Error> {
    match rest.split_once(':') {
        Some((category, name)) if valid_name(category) && valid_name(name) => Ok(ProbeSpec {
            target: Target::Tracepoint {
                category: category.to_string(),
                name: name.to_string(),
            },
            ret: false,
            args: Vec::new(),
        }),
        _ => Err(Error::usage_hints(
            format!("invalid tracepoint '{spec}'"),
            &["tracepoints are CAT:NAME, e.g. syscalls:sys_enter_openat"],
        )),
    }
}

/// Parses one probe spec, with the values to print in parentheses: `FUNC(a, b->c)`.
pub fn parse_spec(spec: &str) -> Result<ProbeSpec, Error> {
    let spec = spec.trim();
    if let Some(pointer) = bpftrace_pointer(spec) {
        return Err(pointer);
    }
    if let Some((head, list)) = spec.split_once('(') {
        let Some(list) = list.strip_suffix(')') else {
            return Err(Error::usage_hints(
                format!("probe '{spec}' has an unclosed or misplaced '('"),
                &["list values in parentheses at the end: 'do_sys_openat2(filename, how->flags)'"],
            ));
        };
        let mut parsed = parse_spec(head)?;
        parsed.args = parse_args(list).map_err(|e| match e {
            Error::Usage { message, hints } => Error::Usage {
                message: format!("{message} in probe '{spec}'"),
                hints,
            },
            other => other,
        })?;
        return Ok(parsed);
    }
    if spec.is_empty() {
        return Err(Error::usage_hints("empty probe spec", &[SPEC_HINT]));
    }
    if let Some((kind, rest)) = spec.split_once(':') {
        match kind {
            "kprobe" | "k" => return kernel(rest, false, spec),
            "kretprobe" | "kr" => return kernel(rest, true, spec),
            // bpftrace's names, and its older kfunc/kretfunc.
            "fentry" | "f" | "kfunc" => return trampoline(rest, false, spec),
            "fexit" | "fr" | "kretfunc" => return trampoline(rest, true, spec),
            "uprobe" | "u" => return user(rest, false, spec),
            "uretprobe" | "ur" => return user(rest, true, spec),
            "tracepoint" | "t" => return tracepoint(rest, spec),
            "usdt" | "U" => return usdt(rest, spec),
            _ => {}
        }
    }
    if let Some(function) = spec.strip_suffix("%return") {
        return kernel(function, true, spec);
    }
    if spec.contains(':') {
        return tracepoint(spec, spec);
    }
    kernel(spec, false, spec)
}

/// bpftrace's probe types that tracer spells differently, and pasted bpftrace programs: the
/// tracer command or flag that does the job, instead of "no tracepoint".
fn bpftrace_pointer(spec: &str) -> Option<Error> {
    if spec.contains('{') || matches!(spec, "BEGIN" | "END") {
        let probe = spec.split(['{', '/']).next().unwrap_or("").trim();
        let mut hint = format!(
            "tracer takes probe specs and flags, not programs: tracer probe '{probe}' prints each hit"
        );
        if spec.contains("count()") {
            hint += "; @[comm] = count() is --count-by comm";
        }
        if spec.contains("lhist(") {
            hint += "; lhist(x, MIN, MAX, STEP) is --hist x --linear STEP,MIN,MAX";
        } else if spec.contains("hist(") {
            hint += "; hist(x) is --hist x";
        }
        if spec.contains("nsecs") {
            hint += "; timing a function is tracer latency FUNC";
        }
        return Some(Error::usage_hints(
            format!("'{spec}' is a bpftrace program"),
            &[&hint],
        ));
    }
    let (kind, rest) = spec.split_once(':')?;
    let (message, hint) = match kind {
        "watchpoint" | "w" | "asyncwatchpoint" | "aw" => (
            "hardware watchpoints are `tracer watch`",
            format!("e.g. tracer watch -t rw {}", rest.split(':').next().unwrap_or("ADDR")),
        ),
        "software" | "s" | "hardware" | "h" => (
            "software and hardware events are counted by `tracer stat` and sampled by `tracer record`",
            format!("e.g. tracer stat -e {0}, tracer record -o t.tracer -e {0}", rest.split(':').next().unwrap_or("EVENT")),
        ),
        "interval" | "i" => (
            "periodic output is the -I flag",
            "e.g. tracer probe --count-by comm -I 1s CAT:NAME".to_string(),
        ),
        "profile" | "p" => (
            "CPU profiles are `tracer profile`",
            format!("e.g. tracer profile -F {} -- COMMAND", rest.trim_start_matches("hz:").split(':').next().filter(|f| !f.is_empty()).unwrap_or("99")),
        ),
        "rawtracepoint" | "rt" => (
            "tracepoints are CAT:NAME (tracer uses raw tracepoints itself where they are cheaper)",
            "tracer list 'CAT:*' lists them".to_string(),
        ),
        _ => return None,
    };
    Some(Error::usage_hints(format!("'{spec}': {message}"), &[&hint]))
}

/// Parses a probe spec for a command that prints no per-hit values (`latency`, `stat`): a
/// `(...)` list is refused rather than ignored.
pub fn parse_bare_spec(spec: &str, command: &str) -> Result<ProbeSpec, Error> {
    let parsed = parse_spec(spec)?;
    if !parsed.args.is_empty() {
        return Err(Error::usage_hints(
            format!(
                "tracer {command} prints no per-hit values: drop '({})' from '{spec}'",
                parsed.args.join(", ")
            ),
            &["values in parentheses select what `tracer probe` prints"],
        ));
    }
    Ok(parsed)
}

/// How a listed value is read and shown, as bpftrace spells it: `str(NAME)` reads it as a
/// string (a `char *` the debug info does not type, an untyped argN, a USDT argument),
/// `usym(NAME)` names the function at the address it holds (a thread's start routine, a
/// callback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    Plain,
    Str,
    Usym,
}

/// A listed value's [`Reader`] and the name inside it.
pub fn reader(word: &str) -> (Reader, &str) {
    for (prefix, reader) in [("str(", Reader::Str), ("usym(", Reader::Usym)] {
        if let Some(inner) = word.strip_prefix(prefix).and_then(|w| w.strip_suffix(')')) {
            return (reader, inner);
        }
    }
    (Reader::Plain, word)
}

/// Parses a list of values to print (`--args`, or inside `FUNC(...)`): parameter or field
/// names, `argN`, `ret`, and member accesses `PARAM->member[->member]`, comma-separated; any of
/// them as `str(NAME)` or `usym(NAME)` ([`Reader`]).
pub fn parse_args(list: &str) -> Result<Vec<String>, Error> {
    const HINT: &str = "name parameters, argN, ret, tracepoint fields or members (str(NAME) reads a string, usym(NAME) names a function's address): filename,how->flags";
    let mut args = Vec::new();
    for word in list.split(',').map(str::trim) {
        let name = reader(word).1;
        let plain = valid_value_name(name);
        if !plain && crate::kernel::btf::parse_access(name).is_none() {
            let message = match word.is_empty() {
                true => "empty value in the argument list".to_string(),
                false => format!("'{word}' is not a name or member access"),
            };
            return Err(Error::usage_hints(message, &[HINT]));
        }
        if args.iter().any(|a| a == word) {
            return Err(Error::usage_hints(
                format!("'{word}' is listed twice"),
                &[HINT],
            ));
        }
        args.push(word.to_string());
    }
    Ok(args)
}

/// Shell-style glob match (`*` any run, `?` one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The most similar names to `name` among `candidates` (for "did you mean"), best first.
pub fn similar<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(max).map(|(_, c)| c).collect()
}

/// Kernel and user probes one run can attach: the constant slots, then the cookie program's
/// (Linux 5.15+; an older kernel stops at the constant ones, and says so).
pub const MAX_PROBES_PER_KIND: usize =
    (tracer_common::PROBE_SLOTS + tracer_common::DISPATCH_SLOTS) as usize;
/// Tracepoints one run can attach: the constant slots, then the shared program's.
pub const MAX_TRACEPOINTS: usize =
    (tracer_common::TRACEPOINT_SLOTS + tracer_common::DISPATCH_SLOTS) as usize;
