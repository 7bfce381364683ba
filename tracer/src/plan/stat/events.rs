//! `tracer stat`'s `-e` event grammar: names (perf's built-in and cache events), `{groups}`,
//! `:modifiers`, raw `rNNNN`, `pmu/terms/`, `mem:` breakpoints, tracepoints and probes; and
//! the event sets of `-d`, `-M` and `-T`.

use crate::perf::attr::{flag, BreakpointType, CacheId, CacheOp, CacheResult, Hardware, Software};
use crate::perf::names;
use crate::plan::{self, ProbeSpec};
use crate::Error;

const EVENT_HINT: &str =
    "events are NAME[:MODS] (see `tracer list`), CAT:NAME tracepoints, rHEX raw \
     events, PMU/TERM=VAL,.../, mem:ADDR[/LEN][:rwx], kprobe:FUNC, uprobe:PATH:SYMBOL, usdt:PATH:[PROVIDER:]NAME; \
     {a,b} counts a group together";

/// What the privilege modifiers leave counted (perf-list(1), "EVENT MODIFIERS"), applied
/// the way perf's `get_event_modifier` does: naming any of `u`, `k`, `h` excludes the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Modifiers {
    pub exclude_user: bool,
    pub exclude_kernel: bool,
    pub exclude_hv: bool,
    pub exclude_guest: bool,
    pub exclude_host: bool,
    pub exclude_idle: bool,
    pub pinned: bool,
    pub precise: u8,
    /// Some of u/k/h was given (later ones add to what is counted).
    privilege_set: bool,
    /// G or H was given.
    guest_host_set: bool,
}

impl Modifiers {
    /// Applies a modifier string (`uk`, `u`, `ppp`, `GH`, `D`) on top of `self`.
    pub fn apply(mut self, text: &str, event: &str) -> Result<Modifiers, Error> {
        for c in text.chars() {
            match c {
                'u' | 'k' | 'h' => {
                    if !self.privilege_set {
                        self.privilege_set = true;
                        self.exclude_user = true;
                        self.exclude_kernel = true;
                        self.exclude_hv = true;
                    }
                    if c == 'u' && !self.guest_host_set {
                        self.exclude_guest = true;
                    }
                    match c {
                        'u' => self.exclude_user = false,
                        'k' => self.exclude_kernel = false,
                        _ => self.exclude_hv = false,
                    }
                }
                'G' | 'H' => {
                    if !self.guest_host_set {
                        self.guest_host_set = true;
                        self.exclude_guest = true;
                        self.exclude_host = true;
                    }
                    if c == 'G' {
                        self.exclude_guest = false;
                    } else {
                        self.exclude_host = false;
                    }
                }
                'I' => self.exclude_idle = true,
                'D' => self.pinned = true,
                'p' => self.precise += 1,
                'P' => self.precise = 3,
                // Weak groups only matter for metric groups, and S (read the group on
                // samples) only for sampling: accepted and ignored, as perf stat does.
                'W' | 'S' => {}
                other => return Err(Error::usage_hints(format!("unknown modifier '{other}' in event '{event}'"), &[
                        "modifiers: u (user), k (kernel), h (hypervisor), G (guest), H (host), \
                           I (exclude idle), D (pinned), p/P (precise), W (weak group), S (sample read)",
                    ])),
            }
        }
        if self.precise > 3 {
            return Err(Error::usage_hints(
                format!("too many 'p' modifiers in event '{event}'"),
                &["precise_ip goes from 0 to 3: p, pp or ppp"],
            ));
        }
        Ok(self)
    }

    /// The `perf_event_attr` flag bits these modifiers set.
    pub fn flags(&self) -> u64 {
        let bit = |on: bool, bit: u64| if on { bit } else { 0 };
        bit(self.exclude_user, flag::EXCLUDE_USER)
            | bit(self.exclude_kernel, flag::EXCLUDE_KERNEL)
            | bit(self.exclude_hv, flag::EXCLUDE_HV)
            | bit(self.exclude_guest, flag::EXCLUDE_GUEST)
            | bit(self.exclude_host, flag::EXCLUDE_HOST)
            | bit(self.exclude_idle, flag::EXCLUDE_IDLE)
            | bit(self.pinned, flag::PINNED)
    }

    /// The privilege context, for pairing counters in metrics (perf's `evsel_context`).
    pub fn context(&self) -> u8 {
        u8::from(self.exclude_kernel)
            | u8::from(self.exclude_user) << 1
            | u8::from(self.exclude_hv) << 2
            | u8::from(self.exclude_host) << 3
            | u8::from(self.exclude_idle) << 4
    }
}

/// A `pmu/.../` term: `name=value` or a bare `name` (a one-bit format field or an event alias).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuTerm {
    pub name: String,
    pub value: Option<u64>,
}

/// What an event counts, before the kernel is asked about names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Software(Software),
    Hardware(Hardware),
    Cache {
        id: CacheId,
        op: CacheOp,
        result: CacheResult,
    },
    Raw(u64),
    /// `pmu/terms/`: the PMU by its sysfs name.
    Pmu {
        pmu: String,
        terms: Vec<PmuTerm>,
    },
    Breakpoint {
        kind: BreakpointType,
        addr: u64,
        len: u64,
    },
    /// `CAT:NAME`; `*` and `?` expand against tracefs.
    Tracepoint {
        category: String,
        name: String,
    },
    /// `kprobe:`, `kretprobe:`, `uprobe:`, `uretprobe:` hit counts.
    Probe(ProbeSpec),
    /// `duration_time`, `user_time`, `system_time`.
    Tool(ToolEvent),
}

/// One event as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The name printed: as typed (a group's own modifiers are not added, as in perf).
    pub name: String,
    pub source: Source,
    pub modifiers: Modifiers,
    /// Events of one `{group}` share an index and are adjacent, leader first.
    pub group: Option<usize>,
}

/// Splits at commas outside `{...}` and outside a `pmu/.../` term list.
fn split_top(text: &str) -> Result<Vec<String>, Error> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut in_pmu = false;
    // Where the current event (since the last ',' or '{') starts in `current`.
    let mut segment = 0usize;
    for c in text.chars() {
        match c {
            '{' if !in_pmu => {
                if depth > 0 {
                    return Err(Error::usage_hints(
                        format!("nested groups in '{text}'"),
                        &["groups cannot contain groups: {a,b},{c,d}"],
                    ));
                }
                depth += 1;
                current.push(c);
                segment = current.len();
            }
            '}' if !in_pmu => {
                if depth == 0 {
                    return Err(Error::usage_hints(
                        format!("unbalanced '}}' in '{text}'"),
                        &[EVENT_HINT],
                    ));
                }
                depth -= 1;
                current.push(c);
            }
            '/' => {
                let before = &current[segment..];
                if in_pmu {
                    in_pmu = false;
                } else if !before.is_empty()
                    && before
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                {
                    in_pmu = true;
                }
                current.push(c);
            }
            ',' if !in_pmu && depth == 0 => {
                parts.push(std::mem::take(&mut current));
                segment = 0;
            }
            ',' if !in_pmu => {
                current.push(c);
                segment = current.len();
            }
            _ => current.push(c),
        }
    }
    if depth > 0 {
        return Err(Error::usage_hints(
            format!("unclosed '{{' in '{text}'"),
            &[EVENT_HINT],
        ));
    }
    if in_pmu {
        return Err(Error::usage_hints(
            format!("unclosed PMU term list in '{text}'"),
            &["PMU events look like msr/tsc/ or PMU/config=0x3c/"],
        ));
    }
    parts.push(current);
    Ok(parts)
}

pub(crate) fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// perf's hardware cache names (`evsel__hw_cache*`), aliases included.
const CACHES: &[(CacheId, &[&str])] = &[
    (CacheId::L1d, &["L1-dcache", "l1-d", "l1d", "L1-data"]),
    (
        CacheId::L1i,
        &["L1-icache", "l1-i", "l1i", "L1-instruction"],
    ),
    (CacheId::Ll, &["LLC", "L2"]),
    (CacheId::Dtlb, &["dTLB", "d-tlb", "Data-TLB"]),
    (CacheId::Itlb, &["iTLB", "i-tlb", "Instruction-TLB"]),
    (CacheId::Bpu, &["branch", "branches", "bpu", "btb", "bpc"]),
    (CacheId::Node, &["node"]),
];
const CACHE_OPS: &[(CacheOp, &[&str])] = &[
    (CacheOp::Read, &["load", "loads", "read"]),
    (CacheOp::Write, &["store", "stores", "write"]),
    (
        CacheOp::Prefetch,
        &[
            "prefetch",
            "prefetches",
            "speculative-read",
            "speculative-load",
        ],
    ),
];
const CACHE_RESULTS: &[(CacheResult, &[&str])] = &[
    (CacheResult::Access, &["refs", "Reference", "ops", "access"]),
    (CacheResult::Miss, &["misses", "miss"]),
];

/// Which operations each cache supports (perf's `evsel__hw_cache_stat`).
fn cache_op_valid(id: CacheId, op: CacheOp) -> bool {
    match id {
        CacheId::L1i => op != CacheOp::Write,
        CacheId::Itlb | CacheId::Bpu => op == CacheOp::Read,
        _ => true,
    }
}

/// Strips the longest alias of `table` that prefixes `text` (case-insensitively).
fn strip_alias<'t, T: Copy>(text: &'t str, table: &[(T, &[&str])]) -> Option<(T, &'t str)> {
    let mut best: Option<(T, &str)> = None;
    for (value, aliases) in table {
        for alias in *aliases {
            let n = alias.len();
            if text.len() >= n
                && text.is_char_boundary(n)
                && text[..n].eq_ignore_ascii_case(alias)
                && (text.len() == n || text[n..].starts_with('-'))
                && best.is_none_or(|(_, rest)| text.len() - rest.len() < n)
            {
                best = Some((*value, &text[n..]));
            }
        }
    }
    best
}

/// `L1-dcache-load-misses`, `LLC-loads`, `dTLB-store-misses`, `branch-load-misses`...
pub fn parse_cache(name: &str) -> Option<(CacheId, CacheOp, CacheResult)> {
    let (id, mut rest) = strip_alias(name, CACHES)?;
    let (mut op, mut result) = (None, None);
    while let Some(next) = rest.strip_prefix('-') {
        if op.is_none() {
            if let Some((o, r)) = strip_alias(next, CACHE_OPS) {
                op = Some(o);
                rest = r;
                continue;
            }
        }
        if result.is_none() {
            if let Some((res, r)) = strip_alias(next, CACHE_RESULTS) {
                result = Some(res);
                rest = r;
                continue;
            }
        }
        return None;
    }
    if !rest.is_empty() {
        return None;
    }
    let op = op.unwrap_or(CacheOp::Read);
    cache_op_valid(id, op).then_some((id, op, result.unwrap_or(CacheResult::Access)))
}

/// The canonical cache event names (`perf list`'s spelling), for did-you-mean and `--help`.
pub fn cache_names() -> Vec<String> {
    let mut names = Vec::new();
    for (id, aliases) in CACHES {
        for (op, word) in [
            (CacheOp::Read, "load"),
            (CacheOp::Write, "store"),
            (CacheOp::Prefetch, "prefetch"),
        ] {
            if cache_op_valid(*id, op) {
                let plural = if op == CacheOp::Prefetch { "es" } else { "s" };
                names.push(format!("{}-{word}{plural}", aliases[0]));
                names.push(format!("{}-{word}-misses", aliases[0]));
            }
        }
    }
    names
}

/// Every built-in event name: software, hardware, cache.
pub fn builtin_names() -> Vec<String> {
    names::SOFTWARE
        .iter()
        .map(|(n, _)| n.to_string())
        .chain(names::HARDWARE.iter().map(|(n, _)| n.to_string()))
        .chain(cache_names())
        .collect()
}

pub(super) fn builtin(name: &str) -> Option<Source> {
    if let Some(tool) = ToolEvent::from_name(name) {
        return Some(Source::Tool(tool));
    }
    if let Some(sw) = names::software(name) {
        return Some(Source::Software(sw));
    }
    if let Some(hw) = names::hardware(name) {
        return Some(Source::Hardware(hw));
    }
    parse_cache(name).map(|(id, op, result)| Source::Cache { id, op, result })
}

fn unknown_event(name: &str) -> Error {
    let all = builtin_names();
    let mut hints: Vec<String> = plan::did_you_mean(name, all.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push("list the events with `tracer list` (tracepoints are CAT:NAME)".into());
    Error::usage(format!("unknown event '{name}'"), hints)
}

/// `mem:ADDR[/LEN][:ACCESS][:MODS]`.
fn breakpoint(spec: &str) -> Result<(Source, String), Error> {
    let hint =
        "breakpoints are mem:ADDR[/LEN][:ACCESS] with LEN 1, 2, 4 or 8 and ACCESS r, w, rw or x, \
                e.g. mem:0x601040/8:w";
    let rest = &spec["mem:".len()..];
    let mut parts = rest.splitn(3, ':');
    let at = parts.next().unwrap_or("");
    let (addr, len) = match at.split_once('/') {
        Some((addr, len)) => (addr, Some(len)),
        None => (at, None),
    };
    let addr = parse_number(addr).ok_or_else(|| {
        Error::usage_hints(format!("invalid address in breakpoint '{spec}'"), &[hint])
    })?;
    let len = match len {
        Some(len) => Some(parse_number(len).ok_or_else(|| {
            Error::usage_hints(format!("invalid length in breakpoint '{spec}'"), &[hint])
        })?),
        None => None,
    };
    let (access, mods) = match (parts.next(), parts.next()) {
        (Some(a), mods) if !a.is_empty() && a.chars().all(|c| matches!(c, 'r' | 'w' | 'x')) => {
            (a, mods.unwrap_or(""))
        }
        (Some(mods), None) => ("rw", mods),
        (None, _) => ("rw", ""),
        (Some(_), Some(_)) => {
            return Err(Error::usage_hints(
                format!("invalid access in breakpoint '{spec}'"),
                &[hint],
            ))
        }
    };
    let mut sorted: Vec<char> = access.chars().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let kind = match sorted.iter().collect::<String>().as_str() {
        "r" => BreakpointType::Read,
        "w" => BreakpointType::Write,
        "rw" => BreakpointType::ReadWrite,
        "x" => BreakpointType::Execute,
        _ => {
            return Err(Error::usage_hints(
                format!("breakpoint '{spec}' mixes execute with read/write"),
                &[hint],
            ))
        }
    };
    if cfg!(target_arch = "x86_64") && kind == BreakpointType::Read {
        return Err(Error::usage_hints(
            format!("breakpoint '{spec}' is read-only, which x86 cannot watch"),
            &["watch reads and writes with :rw"],
        ));
    }
    // perf's default length: 4 bytes (sizeof(long) for execute, set by the perf layer).
    let len = len.unwrap_or(4);
    if kind != BreakpointType::Execute {
        if ![1, 2, 4, 8].contains(&len) {
            return Err(Error::usage_hints(
                format!("breakpoint length {len} in '{spec}' is not 1, 2, 4 or 8"),
                &[hint],
            ));
        }
        if addr % len != 0 {
            return Err(Error::usage_hints(
                format!(
                    "breakpoint address {addr:#x} in '{spec}' is not aligned to its length {len}"
                ),
                &["the address must be a multiple of the length"],
            ));
        }
    }
    Ok((Source::Breakpoint { kind, addr, len }, mods.to_string()))
}

/// `pmu/term=value,term/[:MODS]`; returns the source, the display name (a `name=` term
/// overrides it) and the modifiers.
fn pmu_event(spec: &str) -> Result<(Source, Option<String>, String), Error> {
    let hint = "PMU events are PMU/TERM=VALUE,.../ with terms from \
                /sys/bus/event_source/devices/PMU/format, or an event alias: msr/tsc/";
    let (pmu, rest) = spec.split_once('/').expect("caller checked");
    let (body, after) = rest
        .split_once('/')
        .ok_or_else(|| Error::usage_hints(format!("unclosed PMU event '{spec}'"), &[hint]))?;
    let mods = match after {
        "" => "",
        m => m.strip_prefix(':').ok_or_else(|| {
            Error::usage_hints(
                format!("unexpected '{m}' after PMU event '{spec}'"),
                &[hint],
            )
        })?,
    };
    let mut terms = Vec::new();
    let mut name = None;
    for term in body.split(',').filter(|t| !t.is_empty()) {
        match term.split_once('=') {
            Some(("name", value)) => name = Some(value.to_string()),
            Some((key, value)) => {
                let value = parse_number(value).ok_or_else(|| {
                    Error::usage_hints(
                        format!("invalid value '{value}' for term '{key}' in '{spec}'"),
                        &["term values are decimal or 0x-prefixed hex"],
                    )
                })?;
                terms.push(PmuTerm {
                    name: key.to_string(),
                    value: Some(value),
                });
            }
            None => terms.push(PmuTerm {
                name: term.to_string(),
                value: None,
            }),
        }
    }
    if terms.is_empty() {
        return Err(Error::usage_hints(
            format!("PMU event '{spec}' has no terms"),
            &[hint],
        ));
    }
    Ok((
        Source::Pmu {
            pmu: pmu.to_string(),
            terms,
        },
        name,
        mods.to_string(),
    ))
}

/// `task-clock/name=foo/`, `page-faults/period=1/:u`: a named event with perf's terms. Only
/// `name=` (the printed name) changes what stat prints; sampling terms (`period=`, `freq=`)
/// are accepted and mean nothing when counting, as in perf stat.
fn named_with_terms(
    spec: &str,
    head: &str,
    source: Source,
) -> Result<(Source, String, String), Error> {
    let hint = "terms of a named event: name=NAME, period=N, freq=N, e.g. task-clock/name=busy/";
    let rest = &spec[head.len() + 1..];
    let (body, after) = rest
        .split_once('/')
        .ok_or_else(|| Error::usage_hints(format!("unclosed term list in '{spec}'"), &[hint]))?;
    let mods = match after {
        "" => "",
        m => m.strip_prefix(':').ok_or_else(|| {
            Error::usage_hints(format!("unexpected '{m}' after '{spec}'"), &[hint])
        })?,
    };
    let mut name = None;
    for term in body.split(',').filter(|t| !t.is_empty()) {
        match term.split_once('=') {
            Some(("name", value)) if !value.is_empty() => name = Some(value.to_string()),
            Some(("period" | "freq", value)) if parse_number(value).is_some() => {}
            _ => {
                return Err(Error::usage_hints(
                    format!("unknown term '{term}' in '{spec}'"),
                    &[hint],
                ))
            }
        }
    }
    let shown = name.unwrap_or_else(|| match mods {
        "" => spec.to_string(),
        m => spec[..spec.len() - m.len() - 1].to_string(),
    });
    Ok((source, shown, mods.to_string()))
}

fn valid_tracepoint_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 255
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?'))
}

/// Parses one event (no commas outside a PMU term list): the source, the display name, and
/// the modifier string.
fn parse_event(spec: &str) -> Result<(Source, String, String), Error> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(Error::usage_hints(
            "empty event in the event list",
            &[EVENT_HINT],
        ));
    }
    if spec.starts_with("mem:") {
        let (source, mods) = breakpoint(spec)?;
        let name = match mods.as_str() {
            "" => spec.to_string(),
            m => spec[..spec.len() - m.len() - 1].to_string(),
        };
        return Ok((source, name, mods));
    }
    for prefix in ["fentry:", "fexit:", "kfunc:", "kretfunc:"] {
        if let Some(function) = spec.strip_prefix(prefix) {
            let ret = matches!(prefix, "fexit:" | "kretfunc:");
            return Err(Error::usage_hints(format!("'{spec}': tracer stat counts a kernel function's hits with a kprobe counter; fentry and fexit have none"), &[&format!(
                    "tracer stat -e {}:{function}, or count through fentry with tracer probe --count-by comm {spec}",
                    if ret { "kretprobe" } else { "kprobe" }
                )]));
        }
    }
    for prefix in ["kprobe:", "kretprobe:", "uprobe:", "uretprobe:", "usdt:"] {
        if spec.starts_with(prefix) {
            let probe = plan::parse_bare_spec(spec, "stat")?;
            if probe.is_glob() {
                return Err(Error::usage_hints(
                    format!("'{spec}': tracer stat counts named probes, not patterns"),
                    &["name each function, or find them with `tracer list 'PATTERN'`"],
                ));
            }
            return Ok((Source::Probe(probe), spec.to_string(), String::new()));
        }
    }
    if let Some((head, _)) = spec.split_once('/') {
        if let Some(source) = builtin(head) {
            return named_with_terms(spec, head, source);
        }
        if !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            let (source, name, mods) = pmu_event(spec)?;
            let shown = name.unwrap_or_else(|| match mods.as_str() {
                "" => spec.to_string(),
                m => spec[..spec.len() - m.len() - 1].to_string(),
            });
            return Ok((source, shown, mods));
        }
    }
    let (head, mods) = match spec.split_once(':') {
        Some((head, rest)) if builtin(head).is_some() || is_raw(head) => (head, rest),
        Some((category, rest)) => {
            // CAT:NAME[:MODS]
            let (name, mods) = rest.split_once(':').unwrap_or((rest, ""));
            if !valid_tracepoint_part(category) || !valid_tracepoint_part(name) {
                return Err(Error::usage_hints(
                    format!("invalid tracepoint '{spec}'"),
                    &["tracepoints are CAT:NAME, e.g. syscalls:sys_enter_openat"],
                ));
            }
            return Ok((
                Source::Tracepoint {
                    category: category.into(),
                    name: name.into(),
                },
                spec.to_string(),
                mods.to_string(),
            ));
        }
        None => (spec, ""),
    };
    let source = if is_raw(head) {
        Source::Raw(u64::from_str_radix(&head[1..], 16).map_err(|_| {
            Error::usage_hints(
                format!("raw event '{head}' does not fit 64 bits"),
                &["raw events are r followed by up to 16 hex digits"],
            )
        })?)
    } else {
        builtin(head).ok_or_else(|| unknown_event(head))?
    };
    Ok((source, spec.to_string(), mods.to_string()))
}

/// `rNNNN`: r and hex digits (perf-stat(1): the raw PMU event encoding).
fn is_raw(text: &str) -> bool {
    text.len() > 1 && text.starts_with('r') && text[1..].chars().all(|c| c.is_ascii_hexdigit())
}

/// Parses `-e` arguments (each comma-separated, with `{groups}`) into events in order.
pub fn parse_events(args: &[String]) -> Result<Vec<EventSpec>, Error> {
    let mut events = Vec::new();
    let mut groups = 0usize;
    for arg in args {
        for part in split_top(arg)? {
            let part = part.trim();
            if let Some(body) = part.strip_prefix('{') {
                let close = body.rfind('}').ok_or_else(|| {
                    Error::usage_hints(format!("unclosed '{{' in '{part}'"), &[EVENT_HINT])
                })?;
                let (members, after) = (&body[..close], &body[close + 1..]);
                let group_mods = match after {
                    "" => "",
                    m => m.strip_prefix(':').ok_or_else(|| {
                        Error::usage_hints(
                            format!("unexpected '{m}' after group '{part}'"),
                            &[EVENT_HINT],
                        )
                    })?,
                };
                let members = split_top(members)?;
                if members.iter().all(|m| m.trim().is_empty()) {
                    return Err(Error::usage_hints(
                        format!("empty group '{part}'"),
                        &[EVENT_HINT],
                    ));
                }
                for member in members {
                    let (source, name, mods) = parse_event(&member)?;
                    let modifiers = Modifiers::default()
                        .apply(&mods, &name)?
                        .apply(group_mods, part)?;
                    events.push(EventSpec {
                        name,
                        source,
                        modifiers,
                        group: Some(groups),
                    });
                }
                groups += 1;
            } else {
                let (source, name, mods) = parse_event(part)?;
                let modifiers = Modifiers::default().apply(&mods, &name)?;
                events.push(EventSpec {
                    name,
                    source,
                    modifiers,
                    group: None,
                });
            }
        }
    }
    Ok(events)
}

/// perf stat's default events: the software set and the generalized hardware ones (printed
/// `<not supported>` where the CPU has no counters). System-wide runs count cpu-clock.
pub fn default_events(system_wide: bool) -> Vec<EventSpec> {
    let clock = if system_wide {
        "cpu-clock"
    } else {
        "task-clock"
    };
    [
        clock,
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "cycles",
        "instructions",
        "branches",
        "branch-misses",
    ]
    .iter()
    .map(|name| EventSpec {
        name: name.to_string(),
        source: builtin(name).expect("built-in name"),
        modifiers: Modifiers::default(),
        group: None,
    })
    .collect()
}

/// perf's `-d` sets (`detailed_attrs`, `very_detailed_attrs`, `very_very_detailed_attrs`).
pub(super) const DETAILED: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// The metrics `-M` knows, each computed by perf's shadow metrics from generic events:
/// name, events, and the unit its value is printed with.
pub const METRICS: &[(&str, &[&str], &str)] = &[
    ("IPC", &["instructions", "cycles"], "insn per cycle"),
    (
        "branch_miss_rate",
        &["branch-misses", "branches"],
        "of all branches",
    ),
    (
        "cache_miss_rate",
        &["cache-misses", "cache-references"],
        "of all cache refs",
    ),
    (
        "l1d_miss_rate",
        &["L1-dcache-load-misses", "L1-dcache-loads"],
        "of all L1-dcache accesses",
    ),
    ("CPUs_utilized", &["task-clock"], "CPUs utilized"),
];

/// perf's transaction set (`-T`, `transaction_attrs`): TSX events of the `cpu` PMU.
pub const TRANSACTION_EVENTS: &str =
    "task-clock,{instructions,cycles,cpu/cycles-t/,cpu/tx-start/,cpu/el-start/,cpu/cycles-ct/}";

/// perf's "tool" events: numbers tracer measures itself, printed in ns like perf's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolEvent {
    /// Wall time of the run.
    DurationTime,
    /// The command's user CPU time (getrusage(2), RUSAGE_CHILDREN).
    UserTime,
    /// The command's system CPU time.
    SystemTime,
}

impl ToolEvent {
    pub fn from_name(name: &str) -> Option<ToolEvent> {
        match name {
            "duration_time" => Some(ToolEvent::DurationTime),
            "user_time" => Some(ToolEvent::UserTime),
            "system_time" => Some(ToolEvent::SystemTime),
            _ => None,
        }
    }
}
