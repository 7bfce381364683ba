//! Raw command-line input -> validated plans. No side effects: every user-input check lives here.

pub mod filter;
pub mod latency;
pub mod list;
pub mod profile;
pub mod record;
pub mod serve;
pub mod stat;
pub mod trace;
pub mod watch;

pub use crate::units::{parse_duration_ns, parse_seconds};
pub use watch::{parse_watch_target, WatchTarget};

use std::fmt;

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

fn usage(message: String, hint: &str) -> Error {
    Error::usage(message, vec![hint.to_string()])
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
                usage(
                    format!("invalid offset '{off}' in probe '{spec}'"),
                    "offsets are decimal or 0x-prefixed hex",
                )
            })?;
            (name, off)
        }
        None => (text, 0),
    };
    if !valid_name(name) {
        return Err(usage(
            format!("invalid function name '{name}' in probe '{spec}'"),
            SPEC_HINT,
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
        return Err(usage(
            format!(
                "probe '{spec}': {kind} attaches to a function by name, at its entry or return"
            ),
            "name the function alone (fentry:vfs_read), or use kprobe:FUNC+OFF / kprobe:0xADDR",
        ));
    }
    kernel_via(rest, ret, true, spec)
}

fn kernel_via(rest: &str, ret: bool, fentry: bool, spec: &str) -> Result<ProbeSpec, Error> {
    let target = if rest.starts_with("0x") {
        let addr = parse_number(rest)
            .ok_or_else(|| usage(format!("invalid address in probe '{spec}'"), SPEC_HINT))?;
        if !is_kernel_address(addr) {
            return Err(usage(
                format!("probe '{spec}': {addr:#x} is not a kernel address"),
                "kernel addresses have the top bit set (0xffff...); name the function instead, \
                 e.g. kprobe:do_sys_openat2 (see `tracer list 'kprobe:*'`)",
            ));
        }
        Target::KernelAddr(addr)
    } else {
        let (function, offset) = name_offset(rest, spec)?;
        if ret && offset != 0 {
            return Err(usage(
                format!("return probe '{spec}' cannot have an offset"),
                "a kretprobe fires when the function returns: drop the +OFF",
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
        return Err(usage(
            format!("probe '{spec}' needs PATH:SYMBOL"),
            SPEC_HINT,
        ));
    };
    if file.is_empty() || what.is_empty() {
        return Err(usage(
            format!("probe '{spec}' needs PATH:SYMBOL"),
            SPEC_HINT,
        ));
    }
    let at = if what.starts_with("0x") {
        UserAt::Address(
            parse_number(what)
                .ok_or_else(|| usage(format!("invalid address in probe '{spec}'"), SPEC_HINT))?,
        )
    } else {
        let (name, offset) = name_offset(what, spec)?;
        if ret && offset != 0 {
            return Err(usage(
                format!("return probe '{spec}' cannot have an offset"),
                "drop the +OFF",
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
            return Err(usage(
                format!("probe '{spec}' needs PATH:[PROVIDER:]NAME"),
                hint,
            ))
        }
    };
    let (name, site) = match name.split_once('#') {
        Some((name, site)) => match site.parse::<usize>() {
            Ok(site) => (name, Some(site)),
            Err(_) => {
                return Err(usage(
                    format!("invalid site '#{site}' in probe '{spec}'"),
                    "#N picks the Nth place a probe is compiled in (0, 1, ...)",
                ))
            }
        },
        None => (name, None),
    };
    let bad = |part: &str| part.is_empty() || !valid_name(part);
    if file.is_empty() || bad(name) || provider.is_some_and(bad) {
        return Err(usage(format!("invalid USDT probe '{spec}'"), hint));
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
        _ => Err(usage(
            format!("invalid tracepoint '{spec}'"),
            "tracepoints are CAT:NAME, e.g. syscalls:sys_enter_openat",
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
            return Err(usage(
                format!("probe '{spec}' has an unclosed or misplaced '('"),
                "list values in parentheses at the end: 'do_sys_openat2(filename, how->flags)'",
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
        return Err(usage("empty probe spec".into(), SPEC_HINT));
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
        return Some(usage(format!("'{spec}' is a bpftrace program"), &hint));
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
    Some(usage(format!("'{spec}': {message}"), &hint))
}

/// Parses a probe spec for a command that prints no per-hit values (`latency`, `stat`): a
/// `(...)` list is refused rather than ignored.
pub fn parse_bare_spec(spec: &str, command: &str) -> Result<ProbeSpec, Error> {
    let parsed = parse_spec(spec)?;
    if !parsed.args.is_empty() {
        return Err(usage(
            format!(
                "tracer {command} prints no per-hit values: drop '({})' from '{spec}'",
                parsed.args.join(", ")
            ),
            "values in parentheses select what `tracer probe` prints",
        ));
    }
    Ok(parsed)
}

/// Parses a list of values to print (`--args`, or inside `FUNC(...)`): parameter or field
/// names, `argN`, `ret`, and member accesses `PARAM->member[.member]`, comma-separated; any of
/// them as `str(NAME)` to read it as a string.
pub fn parse_args(list: &str) -> Result<Vec<String>, Error> {
    const HINT: &str = "name parameters, argN, ret, tracepoint fields or members (str(NAME) reads a string): filename,how->flags";
    let mut args = Vec::new();
    for word in list.split(',').map(str::trim) {
        // `str(NAME)`: a value read as a string (a `char *` the debug info does not type, an
        // untyped argN, a USDT argument), as bpftrace spells it.
        let name = (word.strip_prefix("str(").and_then(|w| w.strip_suffix(')'))).unwrap_or(word);
        let plain = valid_value_name(name);
        if !plain && crate::kernel::btf::parse_access(name).is_none() {
            let message = match word.is_empty() {
                true => "empty value in the argument list".to_string(),
                false => format!("'{word}' is not a name or member access"),
            };
            return Err(usage(message, HINT));
        }
        if args.iter().any(|a| a == word) {
            return Err(usage(format!("'{word}' is listed twice"), HINT));
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

/// Where a command's data goes, and in what form (`-o FILE`, `-f text|json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub format: crate::output::events::Format,
    /// `None`: standard output.
    pub file: Option<std::path::PathBuf>,
}

/// `-o FILE` and `-f FORMAT`, checked: `-o` always names a file, so `-f json` (the format
/// flag of older tracers, and a natural guess) is refused rather than written to a file
/// named `json`; `-o ./json` writes that file.
pub fn output(args: &crate::cli::OutputArgs) -> Result<Output, Error> {
    if let Some(name) = (args.file.as_deref()).and_then(|f| f.to_str()) {
        if matches!(name, "json" | "text") {
            return Err(usage(
                format!("-o writes the output to a file; '{name}' is a format"),
                &format!("for {name} output use -f {name} (to write a file named {name}, give -o ./{name})"),
            ));
        }
    }
    Ok(Output {
        format: args.format,
        file: args.file.clone(),
    })
}

/// Whom a run traces. Every command's plan says it in this one shape, and
/// `session::Session::start` takes it; the BPF programs' `SlotConfig` carries the process
/// only from the BPF boundary on (`filter.tgid`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whom {
    /// `-- COMMAND`: started by tracer; what it starts is followed with it.
    Command(Vec<String>),
    /// `-p PID[,PID...]`: processes already running (at least one).
    Processes(Vec<u32>),
    /// Neither: every task (`profile -a`, `watch --kernel`, a probe with neither).
    Everyone,
}

impl Whom {
    /// From a command line's `-- COMMAND` and `-p` list (clap refuses both at once).
    pub fn of(command: &[String], pids: &[u32]) -> Whom {
        match (command.is_empty(), pids.is_empty()) {
            (false, _) => Whom::Command(command.to_vec()),
            (true, false) => Whom::Processes(pids.to_vec()),
            (true, true) => Whom::Everyone,
        }
    }

    /// `-- COMMAND`'s words (none otherwise).
    pub fn command(&self) -> &[String] {
        match self {
            Whom::Command(command) => command,
            Whom::Processes(_) | Whom::Everyone => &[],
        }
    }

    /// `-p`'s processes (none otherwise).
    pub fn pids(&self) -> &[u32] {
        match self {
            Whom::Processes(pids) => pids,
            Whom::Command(_) | Whom::Everyone => &[],
        }
    }

    /// The one process `-p` gave, when it gave one.
    pub fn pid(&self) -> Option<u32> {
        match self.pids() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// A validated `tracer probe` invocation.
#[derive(Clone, Debug)]
pub struct ProbePlan {
    pub specs: Vec<ProbeSpec>,
    /// The filters every slot gets (flags carry `SLOT_FILTER_COMM` when --comm is given).
    pub filter: tracer_common::SlotConfig,
    /// `-p PID` without `--no-inherit`: the children it starts are followed too (`filter.tgid`
    /// stays the process, for the session and for uprobes, which the kernel scopes to it).
    pub follow: bool,
    pub whom: Whom,
    pub count: Option<u64>,
    pub duration: Option<std::time::Duration>,
    pub output: Output,
    pub ring_pages: usize,
    pub wakeup_events: Option<u32>,
    pub transport: crate::cli::Transport,
    pub fail_on_loss: bool,
    pub kprobe_interface: Option<crate::cli::KprobeInterface>,
    /// `-s`: `Some(None)` is the probe's own side.
    pub stack: Option<Option<crate::stacks::Which>>,
    /// `--count-by`, `--sum`, `--hist`: count in the kernel instead of streaming.
    pub aggregation: Option<Aggregation>,
    /// `--debug-bpf`: the programs say why they dropped hits.
    pub debug_bpf: bool,
    /// `--filter`: which hits are sent or counted, decided in the kernel.
    pub value_filter: Option<filter::FilterPlan>,
    /// Notes to print before attaching: input that may match nothing.
    pub notes: Vec<String>,
}

/// One part of an aggregation key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyPart {
    Comm,
    Pid,
    Tid,
    Cpu,
    Probe,
    Stack,
    /// `argN`, `ret` or a tracepoint field: resolved per probe when it is attached.
    Value(String),
    /// The syscall of a syscall tracepoint (`raw_syscalls:*`'s `id`, `syscalls:*`'s
    /// number), shown by name as syscount does.
    Syscall,
    /// The task's cgroup v2 path, its container's id, its Kubernetes pod's UID (all from the
    /// cgroup id counted in the kernel; `kernel::cgroups`).
    Cgroup,
    Container,
    Pod,
}

/// What is done with a value per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueOp {
    Sum,
    Hist,
}

/// A validated `--count-by` / `--sum` / `--hist` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregation {
    pub keys: Vec<KeyPart>,
    /// The value to add up or histogram, and which.
    pub value: Option<(ValueOp, String)>,
    pub top: Option<usize>,
    pub interval: Option<std::time::Duration>,
    /// `--hist` with `--linear`: linear buckets instead of log2.
    pub linear: Option<Linear>,
}

/// `--linear STEP[,MIN,MAX]` of a `--hist`: `buckets` buckets of `step` from `min`, with a row
/// below `min` and one from `min + step * buckets` on (bpftrace's lhist).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linear {
    pub step: u64,
    pub min: i64,
    pub buckets: u64,
}

/// A `--linear` number: an integer, optionally with a binary size suffix (`4K`, `1M`, `2G`).
fn linear_number(text: &str) -> Option<i64> {
    let t = text.trim();
    let (digits, scale) = match t.strip_suffix(['K', 'k']) {
        Some(d) => (d, 1i64 << 10),
        None => match t.strip_suffix('M') {
            Some(d) => (d, 1 << 20),
            None => match t.strip_suffix('G') {
                Some(d) => (d, 1 << 30),
                None => (t, 1),
            },
        },
    };
    digits.parse::<i64>().ok()?.checked_mul(scale)
}

/// Parses probe's `--linear STEP[,MIN,MAX]` (`hist`: whether `--hist` is given). Without MIN
/// and MAX: from 0, 63 steps (as `tracer latency --linear`), then the overflow row.
pub fn linear(text: Option<&str>, hist: bool) -> Result<Option<Linear>, Error> {
    const HINT: &str =
        "e.g. --linear 10 (from 0, 63 buckets of 10), --linear 4K,0,64K or --linear 5,-50,50";
    let Some(text) = text else {
        return Ok(None);
    };
    if !hist {
        return Err(usage(
            "--linear shapes a --hist histogram".into(),
            "add --hist VALUE, e.g. --hist ret --linear 10",
        ));
    }
    let parts: Vec<Option<i64>> = text.split(',').map(linear_number).collect();
    let (step, min, max) = match parts.as_slice() {
        [Some(step)] => (*step, 0, step.saturating_mul(63)),
        [Some(step), Some(min), Some(max)] => (*step, *min, *max),
        _ => {
            return Err(usage(
                format!("--linear '{text}' is not STEP or STEP,MIN,MAX"),
                HINT,
            ))
        }
    };
    if step <= 0 || max <= min {
        return Err(usage(
            format!("--linear '{text}' needs a positive STEP and MIN below MAX"),
            HINT,
        ));
    }
    let span = (max as i128) - (min as i128);
    if span % step as i128 != 0 {
        return Err(usage(
            format!("--linear '{text}': MAX - MIN ({span}) is not a multiple of STEP ({step})"),
            &format!(
                "e.g. --linear {step},{min},{}",
                min as i128 + (span / step as i128 + 1) * step as i128
            ),
        ));
    }
    let buckets = (span / step as i128) as u64;
    if buckets > tracer_common::AGG_LINEAR_BUCKETS {
        return Err(usage(
            format!(
                "--linear '{text}' makes {buckets} buckets, more than {}",
                tracer_common::AGG_LINEAR_BUCKETS
            ),
            "use a larger STEP or a narrower MIN,MAX",
        ));
    }
    Ok(Some(Linear {
        step: step as u64,
        min,
        buckets,
    }))
}

impl Aggregation {
    /// The keyed value (`argN`, `ret`, a field), if any: at most one per run.
    pub fn key_value(&self) -> Option<&str> {
        self.keys.iter().find_map(|k| match k {
            KeyPart::Value(name) => Some(name.as_str()),
            KeyPart::Syscall => Some("syscall"),
            _ => None,
        })
    }
}

/// `argN`, `ret` and tracepoint field names: C identifiers.
fn valid_value_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `--count-by`, `--sum`, `--hist`, `--top` and `-I` into an [`Aggregation`], or `None`
/// when none of the first three is given.
pub fn aggregation(
    count_by: Option<&str>,
    sum: Option<&str>,
    hist: Option<&str>,
    top: Option<usize>,
    interval: Option<std::time::Duration>,
) -> Result<Option<Aggregation>, Error> {
    const KEYS_HINT: &str =
        "keys are comm, pid, tid, cpu, cgroup, container, pod, probe, stack, syscall (syscall tracepoints), argN (N = 0..5), ret, a parameter, PARAM->member or a tracepoint field";
    let value = match (sum, hist) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--sum and --hist cannot be combined".into(),
                "--hist also reports the sum and average of each histogram",
            ))
        }
        (Some(v), None) => Some((ValueOp::Sum, v)),
        (None, Some(v)) => Some((ValueOp::Hist, v)),
        (None, None) => None,
    };
    if count_by.is_none() && value.is_none() {
        if top.is_some() || interval.is_some() {
            return Err(usage(
                "--top and -I go with --count-by, --sum or --hist".into(),
                "e.g. --count-by comm --top 10 -I 1s",
            ));
        }
        return Ok(None);
    }
    let mut keys = Vec::new();
    for word in count_by
        .unwrap_or("")
        .split(',')
        .filter(|w| !w.trim().is_empty())
    {
        let part = match word.trim() {
            "comm" => KeyPart::Comm,
            "pid" => KeyPart::Pid,
            "tid" => KeyPart::Tid,
            "cpu" => KeyPart::Cpu,
            "probe" => KeyPart::Probe,
            "stack" => KeyPart::Stack,
            "syscall" => KeyPart::Syscall,
            "cgroup" => KeyPart::Cgroup,
            "container" => KeyPart::Container,
            "pod" => KeyPart::Pod,
            other
                if valid_value_name(other) || crate::kernel::btf::parse_access(other).is_some() =>
            {
                KeyPart::Value(other.to_string())
            }
            other => {
                return Err(usage(
                    format!("'{other}' is not a --count-by key"),
                    KEYS_HINT,
                ))
            }
        };
        if keys.contains(&part) {
            return Err(usage(
                format!("--count-by names '{}' twice", word.trim()),
                KEYS_HINT,
            ));
        }
        keys.push(part);
    }
    if keys
        .iter()
        .filter(|k| matches!(k, KeyPart::Value(_) | KeyPart::Syscall))
        .count()
        > 1
    {
        return Err(usage(
            "--count-by takes at most one argument, return value, field or syscall".into(),
            "count by one value, and add others with --sum or --hist",
        ));
    }
    if let Some((op, name)) = value {
        if !(valid_value_name(name) || crate::kernel::btf::parse_access(name).is_some())
            || matches!(name, "comm" | "pid" | "tid" | "cpu" | "probe" | "stack")
        {
            let flag = if op == ValueOp::Sum {
                "--sum"
            } else {
                "--hist"
            };
            return Err(usage(
                format!("{flag} '{name}' is not a numeric value"),
                "give argN (N = 0..5), ret or a numeric tracepoint field",
            ));
        }
    }
    if top == Some(0) {
        return Err(usage(
            "--top 0 would show nothing".into(),
            "give a positive count",
        ));
    }
    Ok(Some(Aggregation {
        keys,
        value: value.map(|(op, name)| (op, name.to_string())),
        top,
        interval,
        linear: None,
    }))
}

/// What a plan needs to know about this machine. Commands pass `session::ThisMachine`; unit
/// tests pass their own answers, so that every plan is a pure function of its input.
pub trait Machine {
    /// CPUs online (at least 1).
    fn online_cpus(&self) -> usize;
    /// Whether CPU `cpu` is online (by default: one of the first `online_cpus`).
    fn cpu_online(&self, cpu: u32) -> bool {
        (cpu as usize) < self.online_cpus()
    }
    /// The online CPUs as a list (`0-1`), for messages.
    fn online_cpus_text(&self) -> String {
        match self.online_cpus() {
            1 => "0".into(),
            n => format!("0-{}", n - 1),
        }
    }
    /// The id of a cgroup v2 directory (its inode number, as `bpf_get_current_cgroup_id`
    /// gives it); `None` when `dir` is not a directory.
    fn cgroup_id(&self, dir: &std::path::Path) -> Option<u64>;
    /// The cgroup directories of the containers whose id starts with `prefix`.
    fn container_cgroups(&self, prefix: &str) -> Vec<std::path::PathBuf>;
    /// Whether process or thread `id` exists, and runs.
    fn task(&self, id: u32) -> Task;
    /// The largest process id plus one (`kernel.pid_max`): no id reaches it.
    fn pid_max(&self) -> u32;
}

/// What a process or thread id names on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// A task that runs (or sleeps), of the process `tgid` (`None`: its status could not be
    /// read, e.g. another user's under `hidepid`).
    Live { tgid: Option<u32> },
    /// A task that exited and waits for its parent to reap it (a zombie).
    Exited,
    /// No task has this id.
    Missing,
}

/// `-p PID` or `--tid TID` (`thread`), checked against the machine: a process or thread
/// that does not run would filter every event out, and the run would wait for nothing.
pub fn check_task(id: u32, thread: bool, machine: &dyn Machine) -> Result<Task, Error> {
    let (flag, what, ps) = match thread {
        false => ("--pid", "process", "`ps`"),
        true => ("--tid", "thread", "`ps -eL`"),
    };
    if id == 0 {
        return Err(usage(
            format!("{flag} 0 is not a {what}"),
            &format!("give a {what} id from {ps}"),
        ));
    }
    match machine.task(id) {
        Task::Missing if id >= machine.pid_max() => Err(usage(
            format!(
                "{flag} {id} is not a {what} id: ids here are below {} (kernel.pid_max)",
                machine.pid_max()
            ),
            &format!("give a {what} id from {ps}"),
        )),
        Task::Missing => Err(usage(
            format!("no {what} {id}"),
            &format!("check the id with {ps}; it may have exited"),
        )),
        Task::Exited => Err(usage(
            format!("{what} {id} has exited (a zombie its parent has not reaped)"),
            "trace a running process, or start the command with -- COMMAND",
        )),
        live => Ok(live),
    }
}

/// Data pages per CPU ring when `--ring-pages` is not given: 8192 pages (32 MiB) shared by
/// the online CPUs, at least 64 and at most 1024 per CPU (the largest power of two not above
/// the share). 1024 pages (4 MiB) was the least that lost nothing while streaming a flat-out
/// getppid loop as JSON here (64 pages lost 25% of it, 256 pages 0.2%, 512 pages up to 0.3%);
/// see docs/benchmarks.md.
pub fn default_ring_pages(cpus: usize) -> usize {
    let share = (8192 / cpus.max(1)).clamp(64, 1024);
    1 << (usize::BITS - 1 - share.leading_zeros())
}

/// Pages of the one BPF ring buffer when `--ring-pages` is not given: what the per-CPU perf
/// rings would take together (rounded up to a power of two, at most 65536).
pub fn default_shared_ring_pages(cpus: usize) -> usize {
    (default_ring_pages(cpus) * cpus.max(1))
        .next_power_of_two()
        .min(1 << 16)
}

/// Whether `-p PID`'s children are followed (in BPF, as a `-- COMMAND`'s are): by default,
/// unless `-i/--no-inherit` or `--tid` narrows the run to the process or one thread.
pub fn follows_children(tasks: &crate::cli::Tasks, tid: Option<u32>) -> bool {
    tasks.pid.is_some() && !tasks.no_inherit && tid.is_none()
}

/// The in-kernel filters of `-p`, `--tid`, `--comm`, `-C` and `--cgroup`, checked.
pub fn build_filter(
    tasks: &crate::cli::Tasks,
    tid: Option<u32>,
    machine: &dyn Machine,
) -> Result<tracer_common::SlotConfig, Error> {
    let mut filter = tracer_common::SlotConfig::default();
    if let Some(pid) = tasks.pid {
        if let Task::Live { tgid: Some(tgid) } = check_task(pid, false, machine)? {
            if tgid != pid {
                return Err(usage(
                    format!("{pid} is a thread of process {tgid}, not a process"),
                    &format!("give -p {tgid}, and --tid {pid} for this thread alone"),
                ));
            }
        }
        filter.tgid = pid;
    }
    if let Some(tid) = tid {
        let task = check_task(tid, true, machine)?;
        if let (Task::Live { tgid: Some(tgid) }, Some(pid)) = (task, tasks.pid) {
            if tgid != pid {
                return Err(usage(
                    format!("thread {tid} is not in process {pid} (it is in process {tgid})"),
                    "give the thread's own process with -p, or drop -p",
                ));
            }
        }
    }
    filter.tid = tid.unwrap_or(0);
    if let Some(comm) = &tasks.comm {
        if comm.is_empty() || comm.len() > 15 {
            return Err(usage(
                format!("--comm '{comm}' must be 1 to 15 bytes"),
                "the kernel keeps the first 15 bytes of a task name",
            ));
        }
        filter.comm[..comm.len()].copy_from_slice(comm.as_bytes());
        filter.flags |= tracer_common::SLOT_FILTER_COMM;
    }
    if let Some(list) = &tasks.cpus {
        let cpus = crate::perf::cpus::parse_list(list)
            .map_err(|e| usage(e.to_string(), "CPU lists look like 0-3,5"))?;
        if let Some(big) = cpus.iter().find(|&&c| c >= 64) {
            return Err(usage(
                format!("CPU {big} cannot be filtered"),
                "-C filters CPUs 0 to 63",
            ));
        }
        let offline: Vec<String> = (cpus.iter())
            .filter(|&&c| !machine.cpu_online(c))
            .map(u32::to_string)
            .collect();
        if !offline.is_empty() {
            return Err(usage(
                format!(
                    "-C {list}: {} {} not online: nothing would ever be seen there",
                    match offline.len() {
                        1 => format!("CPU {}", offline[0]),
                        _ => format!("CPUs {}", offline.join(", ")),
                    },
                    if offline.len() == 1 { "is" } else { "are" }
                ),
                &format!(
                    "CPUs online here: {} (/sys/devices/system/cpu/online)",
                    machine.online_cpus_text()
                ),
            ));
        }
        filter.cpu_mask = cpus.iter().fold(0u64, |mask, c| mask | 1 << c);
    }
    if let Some(path) = &tasks.cgroup {
        filter.cgroup_id = machine.cgroup_id(path).ok_or_else(|| {
            usage(
                format!("--cgroup {} is not a cgroup directory", path.display()),
                "give a directory under /sys/fs/cgroup",
            )
        })?;
    }
    if let Some(prefix) = &tasks.container {
        let valid = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_hexdigit());
        let found = match valid {
            true => machine.container_cgroups(&prefix.to_ascii_lowercase()),
            false => Vec::new(),
        };
        let dir = match found.as_slice() {
            [dir] => dir,
            [] if !valid => {
                return Err(usage(
                    format!("--container {prefix}: a container id is hexadecimal"),
                    "give its id as `docker ps`, `crictl ps` or `podman ps` shows it",
                ))
            }
            [] => {
                return Err(usage(
                    format!("--container {prefix}: no container's cgroup has that id"),
                    "give the id of a running container (`docker ps`, `crictl ps`, `podman ps`), or its cgroup with --cgroup",
                ))
            }
            many => {
                return Err(usage(
                    format!(
                        "--container {prefix}: {} containers' ids start so",
                        many.len()
                    ),
                    "give more of the id",
                ))
            }
        };
        filter.cgroup_id = machine.cgroup_id(dir).ok_or_else(|| {
            usage(
                format!("--container {prefix}: its cgroup {} is gone", dir.display()),
                "give the id of a running container",
            )
        })?;
    }
    Ok(filter)
}

/// A note when `--comm NAME` is not the name the `-- COMMAND` runs under (the kernel names a
/// task after the file it executes, its first 15 bytes): the command itself is then filtered
/// out, and only a child of it (or itself after a rename) can match. Not refused: `-- sh -c
/// '...'` with `--comm` naming what the shell starts is the way to trace one of its children.
pub fn comm_note(comm: Option<&str>, command: &[String]) -> Option<String> {
    let (comm, program) = (comm?, command.first()?);
    let base = program.rsplit('/').next().unwrap_or(program);
    let name: String = base
        .chars()
        .scan(0, |bytes, c| {
            *bytes += c.len_utf8();
            (*bytes <= 15).then_some(c)
        })
        .collect();
    (name != comm).then(|| {
        format!(
            "--comm {comm} is not the name of `{}` (its task is named {name}): only its children (or itself after a rename) named {comm} will count",
            command.join(" ")
        )
    })
}

/// Checks every `tracer probe` argument and builds the plan.
pub fn probe_plan(args: &crate::cli::ProbeArgs, machine: &dyn Machine) -> Result<ProbePlan, Error> {
    let output = output(&args.output)?;
    let mut specs = args
        .specs
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(list) = &args.args {
        let list = parse_args(list).map_err(|e| match e {
            Error::Usage { message, hints } => Error::Usage {
                message: format!("--args: {message}"),
                hints,
            },
            other => other,
        })?;
        for spec in specs.iter_mut().filter(|s| s.args.is_empty()) {
            spec.args = list.clone();
        }
    }
    let mut filter = build_filter(&args.tasks, args.tid, machine)?;
    filter.strlen = args.strlen;
    let cpus = machine.online_cpus();
    let ring_pages = args.ring_pages.unwrap_or_else(|| match args.transport {
        crate::cli::Transport::Perf => default_ring_pages(cpus),
        crate::cli::Transport::Ringbuf => default_shared_ring_pages(cpus),
    });
    if ring_pages == 0 || !ring_pages.is_power_of_two() || ring_pages > 1 << 16 {
        return Err(usage(
            format!("--ring-pages {ring_pages} is not a power of two from 1 to 65536"),
            "e.g. --ring-pages 256",
        ));
    }
    if args.stop.count == Some(0) {
        return Err(usage(
            "--count 0 would stop before the first event".into(),
            "give a positive count",
        ));
    }
    let aggregation = aggregation(
        args.count_by.as_deref(),
        args.sum.as_deref(),
        args.hist.as_deref(),
        args.top,
        args.interval,
    )?;
    let linear = linear(args.linear.as_deref(), args.hist.is_some())?;
    let aggregation = aggregation.map(|a| Aggregation { linear, ..a });
    Ok(ProbePlan {
        specs,
        filter,
        follow: follows_children(&args.tasks, args.tid),
        whom: Whom::of(&args.command, args.tasks.pid.as_slice()),
        count: args.stop.count,
        duration: args.stop.duration,
        output,
        ring_pages,
        wakeup_events: args.wakeup_events,
        transport: args.transport,
        fail_on_loss: args.fail_on_loss,
        kprobe_interface: args.kprobe_interface,
        stack: args.stack.stack,
        aggregation,
        debug_bpf: args.debug_bpf,
        value_filter: args.filter.as_deref().map(filter::parse).transpose()?,
        notes: comm_note(args.tasks.comm.as_deref(), &args.command)
            .into_iter()
            .collect(),
    })
}

/// `did you mean: a, b` for the names most like `name`, if any are close.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let similar = similar(name, candidates, 4);
    (!similar.is_empty()).then(|| format!("did you mean: {}", similar.join(", ")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A machine for plans under test: its CPUs, the cgroup directories it has, and its tasks
    /// (id, process, zombie).
    pub(crate) struct FakeMachine {
        pub cpus: usize,
        pub cgroups: &'static [(&'static str, u64)],
        pub tasks: &'static [(u32, u32, bool)],
    }

    impl FakeMachine {
        /// 128 CPUs (64 pages per ring, the floor), one cgroup, /sys/fs/cgroup/app (id 77),
        /// and process 100 with threads 100 and 101, process 200, and zombie 300; pid_max
        /// is 32768.
        pub(crate) const CPUS_128: FakeMachine = FakeMachine {
            cpus: 128,
            cgroups: &[("/sys/fs/cgroup/app", 77)],
            tasks: &[
                (100, 100, false),
                (101, 100, false),
                (200, 200, false),
                (300, 300, true),
            ],
        };
    }

    impl Machine for FakeMachine {
        fn online_cpus(&self) -> usize {
            self.cpus
        }
        fn cgroup_id(&self, dir: &std::path::Path) -> Option<u64> {
            (self.cgroups.iter())
                .find(|(path, _)| std::path::Path::new(path) == dir)
                .map(|&(_, id)| id)
        }
        fn container_cgroups(&self, prefix: &str) -> Vec<std::path::PathBuf> {
            (self.cgroups.iter())
                .filter(|(path, _)| {
                    crate::kernel::cgroups::container_of(path)
                        .is_some_and(|c| c.starts_with(prefix))
                })
                .map(|(path, _)| std::path::PathBuf::from(path))
                .collect()
        }
        fn task(&self, id: u32) -> Task {
            match self.tasks.iter().find(|t| t.0 == id) {
                Some(&(_, _, true)) => Task::Exited,
                Some(&(_, tgid, false)) => Task::Live { tgid: Some(tgid) },
                None => Task::Missing,
            }
        }
        fn pid_max(&self) -> u32 {
            32768
        }
    }

    #[test]
    fn pids_and_tids_name_running_tasks() {
        let m = FakeMachine::CPUS_128;
        let filter = |pid: Option<u32>, tid: Option<u32>| {
            let tasks = crate::cli::Tasks {
                pid,
                ..Default::default()
            };
            match build_filter(&tasks, tid, &m) {
                Ok(f) => Ok((f.tgid, f.tid)),
                Err(Error::Usage { message, hints }) => Err(format!("{message} | {}", hints[0])),
                Err(other) => panic!("{other:?}"),
            }
        };
        assert_eq!(filter(Some(100), Some(101)), Ok((100, 101)));
        assert_eq!(filter(None, Some(101)), Ok((0, 101)));
        assert_eq!(filter(Some(200), None), Ok((200, 0)));
        let refused = [
            (
                Some(0),
                None,
                "--pid 0 is not a process | give a process id from `ps`",
            ),
            (
                None,
                Some(0),
                "--tid 0 is not a thread | give a thread id from `ps -eL`",
            ),
            (
                Some(12345),
                None,
                "no process 12345 | check the id with `ps`; it may have exited",
            ),
            (
                None,
                Some(12345),
                "no thread 12345 | check the id with `ps -eL`; it may have exited",
            ),
            (
                Some(99999999),
                None,
                "--pid 99999999 is not a process id: ids here are below 32768 (kernel.pid_max) \
                 | give a process id from `ps`",
            ),
            (
                Some(300),
                None,
                "process 300 has exited (a zombie its parent has not reaped) | trace a running \
                 process, or start the command with -- COMMAND",
            ),
            (
                Some(101),
                None,
                "101 is a thread of process 100, not a process | give -p 100, and --tid 101 \
                 for this thread alone",
            ),
            (
                Some(200),
                Some(101),
                "thread 101 is not in process 200 (it is in process 100) | give the thread's \
                 own process with -p, or drop -p",
            ),
        ];
        for (pid, tid, message) in refused {
            assert_eq!(
                filter(pid, tid),
                Err(message.to_string()),
                "{pid:?} {tid:?}"
            );
        }
    }

    #[test]
    fn ring_pages_default_from_the_cpu_count() {
        // 8192 pages shared, 64..1024 per CPU, a power of two.
        assert_eq!(default_ring_pages(1), 1024);
        assert_eq!(default_ring_pages(2), 1024);
        assert_eq!(default_ring_pages(12), 512);
        assert_eq!(default_ring_pages(128), 64);
        assert_eq!(default_ring_pages(0), 1024);
        assert_eq!(default_shared_ring_pages(2), 2048);
        assert_eq!(default_shared_ring_pages(12), 8192);
        assert_eq!(default_shared_ring_pages(1024), 65536);
    }

    #[test]
    fn a_container_is_its_cgroup_found_by_a_unique_prefix() {
        const A: &str = "/sys/fs/cgroup/system.slice/docker-aa11000000000000000000000000000000000000000000000000000000000000.scope";
        const B: &str = "/sys/fs/cgroup/kubepods/podx/aa22000000000000000000000000000000000000000000000000000000000000";
        let m = FakeMachine {
            cgroups: &[(A, 5), (B, 6)],
            ..FakeMachine::CPUS_128
        };
        let tasks = |id: &str| crate::cli::Tasks {
            container: Some(id.into()),
            ..Default::default()
        };
        assert_eq!(build_filter(&tasks("aa11"), None, &m).unwrap().cgroup_id, 5);
        assert_eq!(build_filter(&tasks("AA22"), None, &m).unwrap().cgroup_id, 6);
        for (id, says) in [
            ("aa", "--container aa: 2 containers' ids start so"),
            ("ab", "--container ab: no container's cgroup has that id"),
            ("web-1", "--container web-1: a container id is hexadecimal"),
        ] {
            match build_filter(&tasks(id), None, &m) {
                Err(Error::Usage { message, .. }) => assert_eq!(message, says),
                other => panic!("{id}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_cgroup_filter_is_the_directory_id_and_a_missing_one_is_refused() {
        let m = FakeMachine::CPUS_128;
        let app = std::path::Path::new("/sys/fs/cgroup/app");
        let tasks = |cpus: Option<&str>, cgroup: &std::path::Path| crate::cli::Tasks {
            cpus: cpus.map(String::from),
            cgroup: Some(cgroup.to_path_buf()),
            ..Default::default()
        };
        let f = build_filter(&tasks(Some("0,2"), app), None, &m).unwrap();
        assert_eq!((f.cgroup_id, f.cpu_mask), (77, 0b101));
        let missing = std::path::Path::new("/sys/fs/cgroup/nope");
        match build_filter(&tasks(None, missing), None, &m) {
            Err(Error::Usage { message, .. }) => {
                assert_eq!(
                    message,
                    "--cgroup /sys/fs/cgroup/nope is not a cgroup directory"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cpus_that_are_not_online_are_refused() {
        let m = FakeMachine {
            cpus: 2,
            ..FakeMachine::CPUS_128
        };
        let tasks = |cpus: &str| crate::cli::Tasks {
            cpus: Some(cpus.into()),
            ..Default::default()
        };
        assert_eq!(
            build_filter(&tasks("0-1"), None, &m).unwrap().cpu_mask,
            0b11
        );
        match build_filter(&tasks("1,3-4"), None, &m) {
            Err(Error::Usage { message, hints }) => assert_eq!(
                (message.as_str(), hints[0].as_str()),
                (
                    "-C 1,3-4: CPUs 3, 4 are not online: nothing would ever be seen there",
                    "CPUs online here: 0-1 (/sys/devices/system/cpu/online)"
                )
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_comm_that_the_command_does_not_have_is_noted() {
        let command = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(comm_note(Some("prog"), &command(&["./prog", "-x"])), None);
        assert_eq!(comm_note(Some("cat"), &[]), None, "no command");
        assert_eq!(comm_note(None, &command(&["ls"])), None);
        assert_eq!(
            comm_note(Some("long-name"), &command(&["/x/tracer-testprog-long-name", "1"])),
            Some("--comm long-name is not the name of `/x/tracer-testprog-long-name 1` (its task is named tracer-testprog): only its children (or itself after a rename) named long-name will count".into())
        );
        assert_eq!(
            comm_note(
                Some("tracer-testprog"),
                &command(&["/x/tracer-testprog-long-name"])
            ),
            None,
            "the kernel keeps 15 bytes of the name"
        );
    }

    #[test]
    fn linear_histograms_are_step_min_max() {
        let l = |text| linear(Some(text), true);
        let ok = |step, min, buckets| Some(Linear { step, min, buckets });
        assert_eq!(l("10").unwrap(), ok(10, 0, 63));
        assert_eq!(l("10,0,50").unwrap(), ok(10, 0, 5));
        assert_eq!(l("4K,0,64K").unwrap(), ok(4096, 0, 16));
        assert_eq!(l("5,-50,50").unwrap(), ok(5, -50, 20));
        assert_eq!(linear(None, false).unwrap(), None);
        let refused = |r: Result<Option<Linear>, Error>| match r {
            Err(Error::Usage { message, hints }) => format!("{message} | {}", hints[0]),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(linear(Some("10"), false)),
            "--linear shapes a --hist histogram | add --hist VALUE, e.g. --hist ret --linear 10"
        );
        assert_eq!(
            refused(l("10,0,55")),
            "--linear '10,0,55': MAX - MIN (55) is not a multiple of STEP (10) | e.g. --linear 10,0,60"
        );
        assert!(refused(l("0")).starts_with("--linear '0' needs a positive STEP"));
        assert!(refused(l("10,5")).starts_with("--linear '10,5' is not STEP or STEP,MIN,MAX"));
        assert!(refused(l("1,0,1001")).starts_with("--linear '1,0,1001' makes 1001 buckets"));
    }

    #[test]
    fn aggregation_keys_values_and_their_errors() {
        let a = aggregation(Some("comm,arg2"), Some("ret"), None, Some(5), None)
            .unwrap()
            .unwrap();
        assert_eq!(a.keys, vec![KeyPart::Comm, KeyPart::Value("arg2".into())]);
        assert_eq!(a.key_value(), Some("arg2"));
        assert_eq!(a.value, Some((ValueOp::Sum, "ret".into())));
        assert_eq!(a.top, Some(5));
        let h = aggregation(None, None, Some("ret"), None, None)
            .unwrap()
            .unwrap();
        assert!(h.keys.is_empty());
        assert_eq!(h.value, Some((ValueOp::Hist, "ret".into())));
        assert_eq!(aggregation(None, None, None, None, None).unwrap(), None);
        let usage_err = |r: Result<Option<Aggregation>, Error>| match r {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("expected a usage error, got {other:?}"),
        };
        assert_eq!(
            usage_err(aggregation(Some("comm,comm"), None, None, None, None)),
            "--count-by names 'comm' twice"
        );
        assert_eq!(
            usage_err(aggregation(Some("arg1,ret"), None, None, None, None)),
            "--count-by takes at most one argument, return value, field or syscall"
        );
        assert_eq!(
            usage_err(aggregation(Some("co-mm"), None, None, None, None)),
            "'co-mm' is not a --count-by key"
        );
        assert_eq!(
            usage_err(aggregation(None, Some("ret"), Some("ret"), None, None)),
            "--sum and --hist cannot be combined"
        );
        assert_eq!(
            usage_err(aggregation(None, Some("comm"), None, None, None)),
            "--sum 'comm' is not a numeric value"
        );
        assert_eq!(
            usage_err(aggregation(None, None, None, Some(3), None)),
            "--top and -I go with --count-by, --sum or --hist"
        );
        assert_eq!(
            usage_err(aggregation(Some("pid"), None, None, Some(0), None)),
            "--top 0 would show nothing"
        );
    }

    fn spec(text: &str) -> ProbeSpec {
        parse_spec(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn kernel(function: &str, offset: u64, ret: bool) -> ProbeSpec {
        ProbeSpec {
            target: Target::Kernel {
                function: function.into(),
                offset,
                fentry: false,
            },
            ret,
            args: Vec::new(),
        }
    }

    #[test]
    fn kernel_specs() {
        assert_eq!(spec("do_sys_open"), kernel("do_sys_open", 0, false));
        assert_eq!(spec("do_sys_open+0x10"), kernel("do_sys_open", 16, false));
        assert_eq!(spec("kprobe:vfs_read+8"), kernel("vfs_read", 8, false));
        assert_eq!(
            spec("do_sys_openat2%return"),
            kernel("do_sys_openat2", 0, true)
        );
        assert_eq!(spec("kretprobe:vfs_read"), kernel("vfs_read", 0, true));
        assert_eq!(
            spec("kprobe:0xffffffff81000000").target,
            Target::KernelAddr(0xffff_ffff_8100_0000)
        );
        assert_eq!(spec("kretprobe:vfs_read").to_string(), "kretprobe:vfs_read");
        assert_eq!(spec("vfs_read+0x8").to_string(), "kprobe:vfs_read+0x8");
        assert!(spec("vfs_*").is_glob());
    }

    #[test]
    fn user_and_tracepoint_specs() {
        let u = spec("uprobe:/bin/bash:readline+4");
        assert_eq!(
            u.target,
            Target::User {
                file: "/bin/bash".into(),
                at: UserAt::Symbol {
                    name: "readline".into(),
                    offset: 4
                }
            }
        );
        assert_eq!(u.to_string(), "uprobe:/bin/bash:readline+0x4");
        let ur = spec("uretprobe:libc:malloc");
        assert!(ur.ret);
        assert_eq!(
            spec("uprobe:./a.out:0x1139").target,
            Target::User {
                file: "./a.out".into(),
                at: UserAt::Address(0x1139)
            }
        );
        let tp = spec("syscalls:sys_enter_openat");
        assert_eq!(tp, spec("tracepoint:syscalls:sys_enter_openat"));
        assert_eq!(tp.to_string(), "syscalls:sys_enter_openat");
        assert!(spec("tracepoint:syscalls:sys_enter_open*").is_glob());
    }

    #[test]
    fn bad_specs_are_usage_errors_with_hints() {
        for bad in [
            "",
            "kprobe:",
            "do sys open",
            "uprobe:/bin/ls",
            "uprobe::x",
            "a:b:c:d",
            "vfs_read+zz",
            "do_sys_openat2+4%return",
            "kretprobe:f+4",
            "kprobe:0xzz",
            "kprobe:0x0",
            "kretprobe:0x1000",
        ] {
            match parse_spec(bad) {
                Err(Error::Usage { hints, .. }) => assert!(!hints.is_empty(), "{bad}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn bpftrace_spellings_point_at_the_tracer_way() {
        let refused = |spec: &str| match parse_spec(spec) {
            Err(Error::Usage { message, hints }) => (message, hints.join("\n")),
            other => panic!("{spec:?} gave {other:?}"),
        };
        let (m, h) = refused("watchpoint:0x1000:8:w");
        assert_eq!(
            m,
            "'watchpoint:0x1000:8:w': hardware watchpoints are `tracer watch`"
        );
        assert_eq!(h, "e.g. tracer watch -t rw 0x1000");
        let (m, h) = refused("software:page-faults:1");
        assert!(m.contains("`tracer stat`"), "{m}");
        assert_eq!(
            h,
            "e.g. tracer stat -e page-faults, tracer record -o t.tracer -e page-faults"
        );
        assert_eq!(
            refused("interval:s:1").1,
            "e.g. tracer probe --count-by comm -I 1s CAT:NAME"
        );
        let (m, h) = refused("profile:hz:999");
        assert!(m.contains("`tracer profile`"), "{m}");
        assert_eq!(h, "e.g. tracer profile -F 999 -- COMMAND");
        // bpftrace's fentry names (and its older kfunc) are tracer's too.
        let fentry = |function: &str, ret| ProbeSpec {
            target: Target::Kernel {
                function: function.into(),
                offset: 0,
                fentry: true,
            },
            ret,
            args: Vec::new(),
        };
        assert_eq!(
            parse_spec("fentry:vfs_read").unwrap(),
            fentry("vfs_read", false)
        );
        assert_eq!(
            parse_spec("kfunc:vfs_read").unwrap(),
            fentry("vfs_read", false)
        );
        assert_eq!(
            parse_spec("fexit:vfs_read").unwrap(),
            fentry("vfs_read", true)
        );
        assert_eq!(
            parse_spec("fr:vfs_read").unwrap().to_string(),
            "fexit:vfs_read"
        );
        for offset in ["fentry:vfs_read+4", "fexit:0xffffffff81000000"] {
            let err = parse_spec(offset).unwrap_err().to_string();
            assert!(err.contains("attaches to a function by name"), "{err}");
        }
        let usdt = |provider: Option<&str>, name: &str, site| Target::User {
            file: "/usr/bin/python3".into(),
            at: UserAt::Usdt {
                provider: provider.map(str::to_string),
                name: name.into(),
                site,
            },
        };
        let python = parse_spec("usdt:/usr/bin/python3:python:function__entry").unwrap();
        assert_eq!(python.target, usdt(Some("python"), "function__entry", None));
        assert_eq!(
            python.to_string(),
            "usdt:/usr/bin/python3:python:function__entry"
        );
        let bare = parse_spec("U:/usr/bin/python3:function__*(arg1)").unwrap();
        assert_eq!(bare.target, usdt(None, "function__*", None));
        assert!(bare.is_glob());
        assert_eq!(bare.args, ["arg1"]);
        let site = parse_spec("usdt:/usr/bin/python3:python:line#1").unwrap();
        assert_eq!(site.target, usdt(Some("python"), "line", Some(1)));
        assert_eq!(site.to_string(), "usdt:/usr/bin/python3:python:line#1");
        for bad in [
            "usdt:/bin/x",
            "usdt::p:n",
            "usdt:/bin/x:p:",
            "usdt:/bin/x:n#x",
            "usdt:/x:a b",
        ] {
            assert!(matches!(parse_spec(bad), Err(Error::Usage { .. })), "{bad}");
        }
        let (m, h) = refused("tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }");
        assert_eq!(
            m,
            "'tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }' is a bpftrace program"
        );
        assert_eq!(h, "tracer takes probe specs and flags, not programs: tracer probe 'tracepoint:syscalls:sys_enter_openat' prints each hit; @[comm] = count() is --count-by comm");
        assert!(refused("BEGIN").0.contains("bpftrace program"));
        assert_eq!(
            refused("hardware:cache-misses:1000000").1,
            "e.g. tracer stat -e cache-misses, tracer record -o t.tracer -e cache-misses"
        );
        assert!(
            refused("t:syscalls:sys_exit_read { @ = lhist(args.ret, 0, 100, 10); }")
                .1
                .ends_with("; lhist(x, MIN, MAX, STEP) is --hist x --linear STEP,MIN,MAX")
        );
        // tracer's own spellings still parse.
        for ok in [
            "sched:sched_switch",
            "k:vfs_read",
            "t:sched:sched_switch",
            "vfs_read",
        ] {
            assert!(parse_spec(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("sys_enter_open*", "sys_enter_openat2"));
        assert!(glob_match("vfs_?ead", "vfs_read"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("vfs_*", "do_vfs"));
        assert!(glob_match("*open*", "do_sys_openat2"));
        assert!(!glob_match("a?c", "ac"));
    }

    #[test]
    fn did_you_mean() {
        let names = ["do_sys_openat2", "do_sys_open", "vfs_open", "ksys_read"];
        assert_eq!(
            similar("do_sys_opn", names, 2),
            vec!["do_sys_open", "do_sys_openat2"]
        );
        assert!(similar("zzzz", names, 3).is_empty());
    }
}
