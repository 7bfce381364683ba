//! `tracer stat` input -> a validated plan: the `-e` event grammar (names, `{groups}`,
//! `:modifiers`, raw `rNNNN`, `pmu/terms/`, `mem:` breakpoints, tracepoints, probes) and every
//! target and mode check. No side effects: what the kernel has (tracepoints, PMUs, symbols) is
//! looked up by the command.

use std::path::PathBuf;
use std::time::Duration;

use crate::output::stat::Format;
use crate::perf::attr::{flag, BreakpointType, CacheId, CacheOp, CacheResult, Hardware, Software};
use crate::perf::names;
use crate::plan::{self, ProbeSpec};
use crate::Error;

fn usage(message: impl Into<String>, hints: &[&str]) -> Error {
    Error::usage(message, hints.iter().map(|h| h.to_string()).collect())
}

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
                other => return Err(usage(
                    format!("unknown modifier '{other}' in event '{event}'"),
                    &[
                        "modifiers: u (user), k (kernel), h (hypervisor), G (guest), H (host), \
                           I (exclude idle), D (pinned), p/P (precise), W (weak group), S (sample read)",
                    ],
                )),
            }
        }
        if self.precise > 3 {
            return Err(usage(
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
                    return Err(usage(
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
                    return Err(usage(format!("unbalanced '}}' in '{text}'"), &[EVENT_HINT]));
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
        return Err(usage(format!("unclosed '{{' in '{text}'"), &[EVENT_HINT]));
    }
    if in_pmu {
        return Err(usage(
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

fn builtin(name: &str) -> Option<Source> {
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
    let addr = parse_number(addr)
        .ok_or_else(|| usage(format!("invalid address in breakpoint '{spec}'"), &[hint]))?;
    let len = match len {
        Some(len) => Some(
            parse_number(len)
                .ok_or_else(|| usage(format!("invalid length in breakpoint '{spec}'"), &[hint]))?,
        ),
        None => None,
    };
    let (access, mods) = match (parts.next(), parts.next()) {
        (Some(a), mods) if !a.is_empty() && a.chars().all(|c| matches!(c, 'r' | 'w' | 'x')) => {
            (a, mods.unwrap_or(""))
        }
        (Some(mods), None) => ("rw", mods),
        (None, _) => ("rw", ""),
        (Some(_), Some(_)) => {
            return Err(usage(
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
            return Err(usage(
                format!("breakpoint '{spec}' mixes execute with read/write"),
                &[hint],
            ))
        }
    };
    if cfg!(target_arch = "x86_64") && kind == BreakpointType::Read {
        return Err(usage(
            format!("breakpoint '{spec}' is read-only, which x86 cannot watch"),
            &["watch reads and writes with :rw"],
        ));
    }
    // perf's default length: 4 bytes (sizeof(long) for execute, set by the perf layer).
    let len = len.unwrap_or(4);
    if kind != BreakpointType::Execute {
        if ![1, 2, 4, 8].contains(&len) {
            return Err(usage(
                format!("breakpoint length {len} in '{spec}' is not 1, 2, 4 or 8"),
                &[hint],
            ));
        }
        if addr % len != 0 {
            return Err(usage(
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
        .ok_or_else(|| usage(format!("unclosed PMU event '{spec}'"), &[hint]))?;
    let mods = match after {
        "" => "",
        m => m.strip_prefix(':').ok_or_else(|| {
            usage(
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
                    usage(
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
        return Err(usage(format!("PMU event '{spec}' has no terms"), &[hint]));
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
        .ok_or_else(|| usage(format!("unclosed term list in '{spec}'"), &[hint]))?;
    let mods = match after {
        "" => "",
        m => m
            .strip_prefix(':')
            .ok_or_else(|| usage(format!("unexpected '{m}' after '{spec}'"), &[hint]))?,
    };
    let mut name = None;
    for term in body.split(',').filter(|t| !t.is_empty()) {
        match term.split_once('=') {
            Some(("name", value)) if !value.is_empty() => name = Some(value.to_string()),
            Some(("period" | "freq", value)) if parse_number(value).is_some() => {}
            _ => return Err(usage(format!("unknown term '{term}' in '{spec}'"), &[hint])),
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
        return Err(usage("empty event in the event list", &[EVENT_HINT]));
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
            return Err(usage(
                format!("'{spec}': tracer stat counts a kernel function's hits with a kprobe counter; fentry and fexit have none"),
                &[&format!(
                    "tracer stat -e {}:{function}, or count through fentry with tracer probe --count-by comm {spec}",
                    if ret { "kretprobe" } else { "kprobe" }
                )],
            ));
        }
    }
    for prefix in ["kprobe:", "kretprobe:", "uprobe:", "uretprobe:", "usdt:"] {
        if spec.starts_with(prefix) {
            let probe = plan::parse_bare_spec(spec, "stat")?;
            if probe.is_glob() {
                return Err(usage(
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
                return Err(usage(
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
            usage(
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
                let close = body
                    .rfind('}')
                    .ok_or_else(|| usage(format!("unclosed '{{' in '{part}'"), &[EVENT_HINT]))?;
                let (members, after) = (&body[..close], &body[close + 1..]);
                let group_mods = match after {
                    "" => "",
                    m => m.strip_prefix(':').ok_or_else(|| {
                        usage(
                            format!("unexpected '{m}' after group '{part}'"),
                            &[EVENT_HINT],
                        )
                    })?,
                };
                let members = split_top(members)?;
                if members.iter().all(|m| m.trim().is_empty()) {
                    return Err(usage(format!("empty group '{part}'"), &[EVENT_HINT]));
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

/// Whose events are counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `-- COMMAND` alone: the command and (unless `-i`) its children.
    Command,
    /// `-p`: every thread of these processes.
    Processes(Vec<u32>),
    /// `-t`: these threads.
    Threads(Vec<u32>),
    /// `-a` or `-C`: every task on these CPUs (`None`: all online CPUs).
    Cpus(Option<Vec<u32>>),
}

/// How counts are grouped into lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    Global,
    /// `-A`
    PerCpu,
    /// `--per-thread`
    PerThread,
    /// `--per-socket`
    PerSocket,
    /// `--per-die`
    PerDie,
    /// `--per-core`
    PerCore,
    /// `--per-node`
    PerNode,
    /// `--per-cache[=LEVEL]`: `None` is the last level.
    PerCache(Option<u8>),
}

impl Aggregation {
    /// Counts summed over the CPUs of a topology group.
    pub fn is_topology(self) -> bool {
        matches!(
            self,
            Aggregation::PerSocket
                | Aggregation::PerDie
                | Aggregation::PerCore
                | Aggregation::PerNode
                | Aggregation::PerCache(_)
        )
    }
}

/// perf's `-d` sets (`detailed_attrs`, `very_detailed_attrs`, `very_very_detailed_attrs`).
const DETAILED: [&[&str]; 3] = [
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

/// Where the report goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// perf stat's default: the command's own stdout stays clean.
    Stderr,
    File {
        path: PathBuf,
        append: bool,
    },
    Fd(i32),
}

/// A validated `tracer stat` invocation.
#[derive(Clone, Debug)]
pub struct StatPlan {
    pub events: Vec<EventSpec>,
    /// One entry per event (`-G`): the cgroup it is restricted to.
    pub cgroups: Vec<Option<String>>,
    pub target: Target,
    pub command: Vec<String>,
    /// The report title: `'cmd args'`, `'system wide'`, `process id '42'`...
    pub title: String,
    pub inherit: bool,
    pub aggregation: Aggregation,
    pub interval: Option<Duration>,
    pub interval_count: Option<u64>,
    pub timeout: Option<Duration>,
    pub delay: Option<Duration>,
    pub repeat: u32,
    pub null_run: bool,
    pub verbose: bool,
    pub scale: bool,
    pub format: Format,
    pub destination: Destination,
    /// `--summary`: the totals after the intervals; `--no-csv-summary` drops their label.
    pub summary: bool,
    pub csv_summary_label: bool,
    /// `--interval-clear`
    pub interval_clear: bool,
    /// `--quiet`: no report.
    pub quiet: bool,
    /// `--pre`/`--post`: shell commands around each run.
    pub pre: Option<String>,
    pub post: Option<String>,
    /// `-M`: the known metrics asked for (their events are in `events`), and the names
    /// no metric has.
    pub metrics: Vec<&'static str>,
    pub unknown_metrics: Vec<String>,
    pub metric_only: bool,
    pub topdown: bool,
    pub transaction: bool,
    /// `tracer stat record -o FILE`: the counts are also written to FILE.
    pub record: Option<PathBuf>,
}

fn id_list(text: &str, what: &str) -> Result<Vec<u32>, Error> {
    let ids: Result<Vec<u32>, _> = text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<u32>())
        .collect();
    match ids {
        Ok(ids) if !ids.is_empty() && !ids.contains(&0) => Ok(ids),
        _ => Err(usage(
            format!("invalid {what} list '{text}'"),
            &["give comma-separated ids from `ps`, e.g. 1234,5678"],
        )),
    }
}

/// Checks every `tracer stat` argument and builds the plan.
pub fn stat_plan(args: &crate::cli::StatArgs) -> Result<StatPlan, Error> {
    let command = args.command.clone();
    let mut events = parse_events(&args.events)?;
    let target = match (&args.pid, &args.tid, args.all_cpus || args.cpus.is_some()) {
        (Some(_), Some(_), _) => {
            return Err(usage(
                "-p and -t cannot be combined",
                &["give threads with -t only"],
            ))
        }
        (Some(_), _, true) | (_, Some(_), true) => {
            return Err(usage(
                "-p/-t cannot be combined with -a/-C",
                &["count either tasks or CPUs"],
            ))
        }
        (Some(p), None, false) => Target::Processes(id_list(p, "process id")?),
        (None, Some(t), false) => Target::Threads(id_list(t, "thread id")?),
        (None, None, true) => Target::Cpus(match &args.cpus {
            Some(list) => Some(
                crate::perf::cpus::parse_list(list)
                    .map_err(|e| usage(e.to_string(), &["CPU lists look like 0-3,5"]))?,
            ),
            None => None,
        }),
        // perf stat without a command or target counts the whole system until Ctrl-C.
        (None, None, false) if command.is_empty() => Target::Cpus(None),
        (None, None, false) => Target::Command,
    };
    // -p/-t with a command: perf counts the tasks for as long as the command runs.
    let system_wide = matches!(target, Target::Cpus(_));
    let title = match (&target, &args.cpus) {
        (Target::Command, _) => format!("'{}'", command.join(" ")),
        (Target::Processes(_), _) => format!("process id '{}'", args.pid.as_deref().unwrap_or("")),
        (Target::Threads(_), _) => format!("thread id '{}'", args.tid.as_deref().unwrap_or("")),
        (Target::Cpus(_), Some(list)) if !args.all_cpus => format!("'CPU(s) {list}'"),
        (Target::Cpus(_), _) => "'system wide'".into(),
    };
    if args.null_run && !events.is_empty() {
        return Err(usage(
            "-n counts nothing, but events were given",
            &["drop -n to count the events, or -e to time the command only"],
        ));
    }
    if args.transaction {
        if !events.is_empty() {
            return Err(usage("-T counts its own events: drop -e", &[]));
        }
        events = parse_events(&[TRANSACTION_EVENTS.to_string()])?;
    }
    let asked: Vec<String> = (args.metrics.iter())
        .flat_map(|m| m.split(','))
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    let mut metrics = Vec::new();
    let mut unknown_metrics = Vec::new();
    for name in asked {
        match METRICS
            .iter()
            .find(|(m, _, _)| m.eq_ignore_ascii_case(&name))
        {
            Some((metric, needs, _)) => {
                metrics.push(*metric);
                for need in *needs {
                    if !events.iter().any(|e| e.name == *need) {
                        events.push(EventSpec {
                            name: need.to_string(),
                            source: builtin(need).expect("built-in name"),
                            modifiers: Modifiers::default(),
                            group: None,
                        });
                    }
                }
            }
            None => unknown_metrics.push(name),
        }
    }
    // perf counts its default events when no metric was found either.
    if events.is_empty() && !args.null_run {
        events = default_events(system_wide);
    }
    if args.topdown && !system_wide {
        return Err(usage(
            "top down event configuration requires system-wide mode (-a)",
            &["add -a"],
        ));
    }
    if args.null_run && args.detailed > 0 {
        return Err(usage("-n counts nothing, but -d asks for more events", &[]));
    }
    // -d appends its sets to the events given or the default ones, as perf's.
    for set in DETAILED.iter().take(args.detailed.min(3) as usize) {
        events.extend(set.iter().map(|name| EventSpec {
            name: name.to_string(),
            source: builtin(name).expect("built-in name"),
            modifiers: Modifiers::default(),
            group: None,
        }));
    }
    if args.all_user || args.all_kernel {
        for event in &mut events {
            let m = &mut event.modifiers;
            m.exclude_user = args.all_kernel;
            m.exclude_kernel = args.all_user;
            m.exclude_hv = true;
        }
    }
    let per_cache = match args.per_cache.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(level) => {
            let n = level
                .strip_prefix(['L', 'l'])
                .unwrap_or(level)
                .parse::<u8>()
                .ok()
                .filter(|n| (1..=4).contains(n));
            match n {
                Some(n) => Some(Some(n)),
                None => {
                    return Err(usage(
                        format!("--per-cache={level}: not a cache level"),
                        &["give L1, L2 or L3, or no level for the last level cache"],
                    ))
                }
            }
        }
    };
    let topology = [
        (args.per_socket, "--per-socket", Aggregation::PerSocket),
        (args.per_die, "--per-die", Aggregation::PerDie),
        (args.per_core, "--per-core", Aggregation::PerCore),
        (args.per_node, "--per-node", Aggregation::PerNode),
        (
            per_cache.is_some(),
            "--per-cache",
            Aggregation::PerCache(per_cache.flatten()),
        ),
        (args.no_aggr, "-A", Aggregation::PerCpu),
    ]
    .into_iter()
    .find(|(on, _, _)| *on);
    let aggregation = match (topology, args.per_thread) {
        (Some((_, flag, _)), true) => {
            return Err(usage(
                format!("{flag} and --per-thread cannot be combined"),
                &[],
            ))
        }
        // perf: "both cgroup and no-aggregation modes only available in system-wide mode".
        (Some((_, flag, _)), false) if !system_wide => {
            return Err(usage(
                format!("{flag} needs system-wide counting"),
                &["add -a, or -C CPUS"],
            ))
        }
        (Some((_, _, aggregation)), false) => aggregation,
        (None, true) if matches!(target, Target::Cpus(Some(_))) => {
            return Err(usage(
                "--per-thread with -C is not supported",
                &["count every thread with -a --per-thread, or give -p/-t"],
            ))
        }
        (None, true) if target == Target::Command => {
            return Err(usage(
                "--per-thread needs threads to count: -p, -t or -a",
                &["e.g. tracer stat --per-thread -p 1234"],
            ))
        }
        // perf's words (it exits 234).
        (None, true) if args.metric_only => {
            return Err(usage(
                "--metric-only is not supported with --per-thread",
                &["drop --per-thread, or drop --metric-only"],
            ))
        }
        (None, true) => Aggregation::PerThread,
        (None, false) => Aggregation::Global,
    };
    // -G: one cgroup per event in order, a single one for all; empty entries mean none.
    let names: Vec<&str> = args.cgroup.iter().flat_map(|g| g.split(',')).collect();
    let cgroups: Vec<Option<String>> = if names.is_empty() {
        vec![None; events.len()]
    } else {
        if !system_wide {
            return Err(usage(
                "-G (cgroup) counting needs system-wide counting",
                &["add -a: cgroup events count on every CPU"],
            ));
        }
        if names.len() > events.len() {
            return Err(usage(
                format!("{} cgroups for {} events", names.len(), events.len()),
                &["each cgroup applies to the event in the same position; one cgroup applies to all"],
            ));
        }
        // Kept as given: perf prints `/` for the root cgroup (the counter layer opens it
        // relative to the cgroup mount).
        let cgroup = |n: &str| (!n.trim().is_empty()).then(|| n.trim().to_string());
        if names.len() == 1 {
            vec![cgroup(names[0]); events.len()]
        } else {
            (0..events.len())
                .map(|i| names.get(i).and_then(|n| cgroup(n)))
                .collect()
        }
    };
    let interval = match args.interval {
        Some(ms) if ms < 10 => {
            return Err(usage(
                format!("-I {ms}: the print interval must be at least 10 ms"),
                &["e.g. -I 100"],
            ))
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    if args.interval_count.is_some() && interval.is_none() {
        return Err(usage(
            "--interval-count needs -I",
            &["e.g. -I 100 --interval-count 10"],
        ));
    }
    if args.interval_count == Some(0) {
        return Err(usage(
            "--interval-count 0 would print nothing",
            &["give a positive count"],
        ));
    }
    let timeout = match args.timeout {
        Some(_) if interval.is_some() => {
            return Err(usage(
                "--timeout cannot be combined with -I",
                &["stop interval printing with --interval-count N"],
            ))
        }
        Some(ms) if ms < 10 => {
            return Err(usage(format!("--timeout {ms}: the minimum is 10 ms"), &[]))
        }
        Some(ms) => Some(Duration::from_millis(ms)),
        None => None,
    };
    let delay = match args.delay {
        Some(-1) => {
            return Err(usage(
                "-D -1 (start disabled) needs --control, which tracer stat does not implement",
                &["delay by a fixed time instead: -D MSECS"],
            ))
        }
        Some(ms) if ms < 0 => return Err(usage(format!("-D {ms} is not a delay"), &["-D MSECS"])),
        Some(0) | None => None,
        Some(ms) => Some(Duration::from_millis(ms as u64)),
    };
    let repeat = args.repeat.unwrap_or(1);
    if repeat == 0 || repeat > 100 {
        return Err(usage(
            format!("-r {repeat}: repeat between 1 and 100 times"),
            &["tracer stat does not repeat forever (perf's -r 0)"],
        ));
    }
    if repeat > 1 && args.metric_only {
        // perf's words (it exits 234).
        return Err(usage(
            "--metric-only is not supported with -r",
            &["drop -r, or drop --metric-only"],
        ));
    }
    if repeat > 1 && command.is_empty() {
        return Err(usage("-r repeats a command: give one after --", &[]));
    }
    if args.summary && interval.is_none() {
        return Err(usage(
            "--summary prints the totals after interval rows: it needs -I",
            &["e.g. -I 1000 --summary"],
        ));
    }
    if (args.pre.is_some() || args.post.is_some()) && command.is_empty() {
        return Err(usage(
            "--pre/--post run around a command: give one after --",
            &[],
        ));
    }
    // `-f json` is `-j`, as the other commands spell the format.
    let json = match (args.format, args.json) {
        (Some(crate::output::events::Format::Text), true) => {
            return Err(usage("-f text and -j cannot be combined", &[]))
        }
        (format, json) => json || format == Some(crate::output::events::Format::Json),
    };
    let format = match (&args.separator, json) {
        (Some(_), true) => return Err(usage("-x and -j cannot be combined", &[])),
        (Some(sep), false) if sep.is_empty() => {
            return Err(usage("-x needs a separator", &["e.g. -x, or -x ';'"]))
        }
        (Some(sep), false) => Format::Csv { sep: sep.clone() },
        (None, true) => Format::Json,
        (None, false) => Format::Human {
            big_num: !args.no_big_num,
        },
    };

    // `stat record`: -o names the recording, as perf stat record's -o names perf.data; the
    // report goes where it goes without -o.
    let record = match (args.record, &args.output) {
        (true, Some(path)) => Some(path.clone()),
        (true, None) => {
            return Err(usage(
                "tracer stat record needs -o FILE for the recording",
                &["e.g. tracer stat record -o counts.json -- ./prog, then tracer stat report -i counts.json"],
            ))
        }
        (false, _) => None,
    };
    let report_file = if record.is_some() {
        None
    } else {
        args.output.clone()
    };
    let destination = match (&report_file, args.log_fd) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "-o and --log-fd cannot be combined",
                &["choose one destination"],
            ))
        }
        (Some(path), None) if crate::output::is_stdout(path) => Destination::Fd(1),
        (Some(path), None) => Destination::File {
            path: path.clone(),
            append: args.append,
        },
        (None, Some(fd)) if fd < 0 => {
            return Err(usage(
                format!("--log-fd {fd} is not a file descriptor"),
                &[],
            ))
        }
        (None, Some(fd)) => Destination::Fd(fd),
        (None, None) => Destination::Stderr,
    };
    Ok(StatPlan {
        cgroups,
        events,
        target,
        command,
        title,
        inherit: !args.no_inherit,
        aggregation,
        interval,
        interval_count: args.interval_count,
        timeout,
        delay,
        repeat,
        null_run: args.null_run,
        verbose: args.verbose,
        scale: !args.no_scale,
        format,
        destination,
        summary: args.summary,
        csv_summary_label: !args.no_csv_summary,
        interval_clear: args.interval_clear,
        quiet: args.quiet,
        pre: args.pre.clone(),
        post: args.post.clone(),
        metrics,
        unknown_metrics,
        metric_only: args.metric_only,
        topdown: args.topdown,
        transaction: args.transaction,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<EventSpec> {
        parse_events(&[text.to_string()]).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn one(text: &str) -> EventSpec {
        let mut all = events(text);
        assert_eq!(all.len(), 1, "{text}");
        all.remove(0)
    }

    fn usage_hints(text: &str) -> Vec<String> {
        match parse_events(&[text.to_string()]) {
            Err(Error::Usage { hints, .. }) => hints,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn names_and_aliases() {
        assert_eq!(one("faults").source, Source::Software(Software::PageFaults));
        assert_eq!(
            one("cs").source,
            Source::Software(Software::ContextSwitches)
        );
        assert_eq!(one("cycles").source, Source::Hardware(Hardware::CpuCycles));
        assert_eq!(one("r1a8").source, Source::Raw(0x1a8));
        assert_eq!(
            one("ref-cycles").source,
            Source::Hardware(Hardware::RefCpuCycles)
        );
        assert_eq!(
            one("LLC-load-misses").source,
            Source::Cache {
                id: CacheId::Ll,
                op: CacheOp::Read,
                result: CacheResult::Miss
            }
        );
        assert_eq!(
            one("L1-dcache-stores").source,
            Source::Cache {
                id: CacheId::L1d,
                op: CacheOp::Write,
                result: CacheResult::Access
            }
        );
        assert_eq!(
            one("dTLB-prefetch-misses").source,
            Source::Cache {
                id: CacheId::Dtlb,
                op: CacheOp::Prefetch,
                result: CacheResult::Miss
            }
        );
        assert_eq!(
            one("LLC-misses").source,
            Source::Cache {
                id: CacheId::Ll,
                op: CacheOp::Read,
                result: CacheResult::Miss
            }
        );
        assert!(
            parse_cache("L1-icache-stores").is_none(),
            "L1i has no writes"
        );
        assert!(parse_cache("L1-dcache-loadz").is_none());
        // Every canonical cache name parses back.
        for name in cache_names() {
            assert!(parse_cache(&name).is_some(), "{name}");
        }
    }

    #[test]
    fn modifiers_follow_perf() {
        let u = one("page-faults:u");
        assert_eq!(u.name, "page-faults:u");
        assert!(u.modifiers.exclude_kernel && u.modifiers.exclude_hv && !u.modifiers.exclude_user);
        let uk = one("cycles:uk").modifiers;
        assert!(!uk.exclude_user && !uk.exclude_kernel && uk.exclude_hv);
        let k = one("cs:k").modifiers;
        assert_eq!(
            k.flags(),
            flag::EXCLUDE_USER | flag::EXCLUDE_HV,
            "k counts the kernel only"
        );
        let g = one("cycles:G").modifiers;
        assert!(g.exclude_host && !g.exclude_guest);
        let h = one("cycles:H").modifiers;
        assert!(!h.exclude_host && h.exclude_guest);
        assert_eq!(one("cycles:ppp").modifiers.precise, 3);
        assert!(one("cycles:D").modifiers.pinned);
        assert!(one("task-clock").modifiers.flags() == 0);
        assert!(matches!(
            parse_events(&["cycles:pppp".into()]),
            Err(Error::Usage { .. })
        ));
        assert!(usage_hints("cycles:z")[0].contains("modifiers"));
        assert_ne!(
            one("cycles:u").modifiers.context(),
            one("cycles").modifiers.context()
        );
    }

    #[test]
    fn groups_share_an_index_and_take_group_modifiers() {
        let all = events("{task-clock,page-faults}:u,cs,{cycles,instructions}");
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["task-clock", "page-faults", "cs", "cycles", "instructions"]
        );
        let groups: Vec<Option<usize>> = all.iter().map(|e| e.group).collect();
        assert_eq!(groups, [Some(0), Some(0), None, Some(1), Some(1)]);
        assert!(all[0].modifiers.exclude_kernel && all[1].modifiers.exclude_kernel);
        assert!(!all[2].modifiers.exclude_kernel);
        // Several -e, each comma-separated.
        let many = parse_events(&["task-clock".into(), "faults,cs".into()]).unwrap();
        assert_eq!(many.len(), 3);
        for bad in ["{a,{b}}", "{task-clock", "task-clock}", "{}", "{cs}x"] {
            assert!(
                matches!(parse_events(&[bad.into()]), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn pmu_breakpoint_tracepoint_and_probe_events() {
        let pmu = one("cpu/event=0x3c,umask=1,edge/");
        assert_eq!(pmu.name, "cpu/event=0x3c,umask=1,edge/");
        assert_eq!(
            pmu.source,
            Source::Pmu {
                pmu: "cpu".into(),
                terms: vec![
                    PmuTerm {
                        name: "event".into(),
                        value: Some(0x3c)
                    },
                    PmuTerm {
                        name: "umask".into(),
                        value: Some(1)
                    },
                    PmuTerm {
                        name: "edge".into(),
                        value: None
                    },
                ]
            }
        );
        // A PMU's commas do not split the list; name= renames; modifiers after the slash.
        let two = events("msr/tsc/,software/config=2,name=faults2/:u");
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].name, "faults2");
        assert!(two[1].modifiers.exclude_kernel);
        let bp = one("mem:0x1000/8:w");
        assert_eq!(
            bp.source,
            Source::Breakpoint {
                kind: BreakpointType::Write,
                addr: 0x1000,
                len: 8
            }
        );
        assert_eq!(
            one("mem:0x1000").source,
            Source::Breakpoint {
                kind: BreakpointType::ReadWrite,
                addr: 0x1000,
                len: 4
            }
        );
        let bpu = one("mem:0x1000:rw:u");
        assert_eq!(bpu.name, "mem:0x1000:rw");
        assert!(bpu.modifiers.exclude_kernel);
        for bad in ["mem:0x1001/4", "mem:0x1000/3", "mem:zz", "mem:0x1000:rx"] {
            assert!(
                matches!(parse_events(&[bad.into()]), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
        let tp = one("syscalls:sys_enter_getppid");
        assert_eq!(
            tp.source,
            Source::Tracepoint {
                category: "syscalls".into(),
                name: "sys_enter_getppid".into()
            }
        );
        assert!(one("syscalls:sys_enter_getppid:u").modifiers.exclude_kernel);
        assert!(matches!(
            one("sched:sched_*").source,
            Source::Tracepoint { .. }
        ));
        let up = one("uprobe:/bin/bash:readline");
        assert!(matches!(up.source, Source::Probe(_)));
        assert!(matches!(
            one("kprobe:do_sys_openat2").source,
            Source::Probe(_)
        ));
        assert!(matches!(
            parse_events(&["kprobe:vfs_*".into()]),
            Err(Error::Usage { .. })
        ));
    }

    #[test]
    fn unknown_names_suggest_similar_ones() {
        let hints = usage_hints("cycels");
        assert!(hints[0].starts_with("did you mean: cycles"), "{hints:?}");
        let hints = usage_hints("page-fault");
        assert!(
            hints[0].starts_with("did you mean: page-faults"),
            "{hints:?}"
        );
        assert!(usage_hints("zzzzzz")
            .iter()
            .any(|h| h.contains("tracer list")));
    }

    #[test]
    fn fentry_names_point_at_the_kprobe_counter() {
        assert_eq!(
            usage_hints("fexit:vfs_read"),
            ["tracer stat -e kretprobe:vfs_read, or count through fentry with tracer probe --count-by comm fexit:vfs_read"]
        );
        assert!(usage_hints("kfunc:vfs_read")[0].starts_with("tracer stat -e kprobe:vfs_read,"));
    }

    #[test]
    fn default_events_are_perfs() {
        let names: Vec<String> = default_events(false).into_iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "task-clock",
                "context-switches",
                "cpu-migrations",
                "page-faults",
                "cycles",
                "instructions",
                "branches",
                "branch-misses"
            ]
        );
        assert_eq!(default_events(true)[0].name, "cpu-clock");
    }

    fn args(line: &[&str]) -> crate::cli::StatArgs {
        use clap::Parser;
        let mut argv = vec!["tracer", "stat"];
        argv.extend(line);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parses")
            .command
        {
            crate::cli::Command::Stat(args) => args,
            _ => unreachable!(),
        }
    }

    fn plan_error(line: &[&str]) -> String {
        match stat_plan(&args(line)) {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("{line:?} gave {other:?}"),
        }
    }

    #[test]
    fn targets_and_modes() {
        let p = stat_plan(&args(&["-e", "cs", "--", "true", "x"])).unwrap();
        assert_eq!(p.target, Target::Command);
        assert_eq!(p.title, "'true x'");
        let p = stat_plan(&args(&["-a", "-A", "-e", "cs"])).unwrap();
        assert_eq!(p.target, Target::Cpus(None));
        assert_eq!(p.aggregation, Aggregation::PerCpu);
        assert_eq!(p.title, "'system wide'");
        let p = stat_plan(&args(&["-C", "1"])).unwrap();
        assert_eq!(p.target, Target::Cpus(Some(vec![1])));
        assert_eq!(p.title, "'CPU(s) 1'");
        assert_eq!(p.events[0].name, "cpu-clock");
        let p = stat_plan(&args(&["-p", "42,43", "--per-thread"])).unwrap();
        assert_eq!(p.target, Target::Processes(vec![42, 43]));
        assert_eq!(p.title, "process id '42,43'");
        let p = stat_plan(&args(&["-x", ";", "-r", "3", "true"])).unwrap();
        assert_eq!(p.format, Format::Csv { sep: ";".into() });
        assert_eq!(p.repeat, 3);
        assert_eq!(p.command, ["true"]);
        let p = stat_plan(&args(&["-n", "--", "true"])).unwrap();
        assert!(p.events.is_empty() && p.null_run);
        let p = stat_plan(&args(&["-a", "-G", "a,,b", "-e", "cs,cs,cs"])).unwrap();
        assert_eq!(p.cgroups, [Some("a".into()), None, Some("b".into())]);
        let p = stat_plan(&args(&["-a", "-G", "/a", "-e", "cs,faults"])).unwrap();
        assert_eq!(p.cgroups, [Some("/a".into()), Some("/a".into())]);
        assert!(plan_error(&["-A", "--", "true"]).contains("-A"));
        assert!(plan_error(&["--per-thread", "--", "true"]).contains("--per-thread"));
        assert_eq!(
            plan_error(&["-a", "--per-thread", "--metric-only"]),
            "--metric-only is not supported with --per-thread"
        );
        assert_eq!(
            plan_error(&["--metric-only", "-r", "2", "--", "true"]),
            "--metric-only is not supported with -r"
        );
        let p = stat_plan(&args(&["-a", "-A", "--metric-only", "-I", "100"])).unwrap();
        assert!(p.metric_only && p.interval.is_some());
        assert!(plan_error(&["-I", "5", "true"]).contains("10 ms"));
        assert!(plan_error(&["-I", "100", "--timeout", "100", "true"]).contains("--timeout"));
        assert!(plan_error(&["--interval-count", "2", "true"]).contains("-I"));
        assert!(plan_error(&["-r", "0", "true"]).contains("-r 0"));
        assert!(plan_error(&["-r", "2", "-a"]).contains("command"));
        assert_eq!(
            stat_plan(&args(&["-r", "2", "-I", "100", "true"]))
                .unwrap()
                .repeat,
            2
        );
        assert!(plan_error(&["-x,", "-j", "true"]).contains("-x"));
        let p = stat_plan(&args(&["-p", "1", "--", "true"])).unwrap();
        assert_eq!(p.target, Target::Processes(vec![1]));
        assert_eq!(p.command, ["true"]);
        let p = stat_plan(&args(&["-a", "--per-core", "-d", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerCore);
        assert_eq!(p.events.len(), 5);
        let p = stat_plan(&args(&["-a", "--per-cache=L2", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerCache(Some(2)));
        let p = stat_plan(&args(&["-a", "--per-thread", "-e", "cs"])).unwrap();
        assert_eq!(p.aggregation, Aggregation::PerThread);
        let p = stat_plan(&args(&["--all-user", "-e", "cs,faults:k", "true"])).unwrap();
        assert!(p.events.iter().all(|e| e.modifiers.exclude_kernel));
        assert!(p.events.iter().all(|e| !e.modifiers.exclude_user));
        let p = stat_plan(&args(&["-M", "IPC,nope", "true"])).unwrap();
        assert_eq!(p.metrics, ["IPC"]);
        assert_eq!(p.unknown_metrics, ["nope"]);
        let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["instructions", "cycles"]);
        let p = stat_plan(&args(&["-e", "duration_time,user_time", "true"])).unwrap();
        assert_eq!(p.events[0].source, Source::Tool(ToolEvent::DurationTime));
        assert!(plan_error(&["--per-socket", "--", "true"]).contains("system-wide"));
        assert!(plan_error(&["-a", "--per-cache=L9"]).contains("L9"));
        assert!(plan_error(&["--summary", "true"]).contains("-I"));
        assert!(plan_error(&["--pre", "true", "-a"]).contains("--pre"));
        assert!(plan_error(&["--topdown", "true"]).contains("system-wide"));
        assert!(plan_error(&["-n", "-e", "cs", "true"]).contains("-n"));
        assert!(plan_error(&["-D", "-1", "true"]).contains("--control"));
        assert!(plan_error(&["-G", "a", "true"]).contains("-G"));
        assert!(plan_error(&["-o", "f", "--log-fd", "3", "true"]).contains("--log-fd"));
        assert!(plan_error(&["-p", "x"]).contains("process id"));
    }
}
