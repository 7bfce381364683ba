//! `--count-by`, `--sum`, `--hist` and `--linear`: how probe hits are counted in the kernel.

use crate::Error;

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
        return Err(Error::usage_hints(
            "--linear shapes a --hist histogram",
            &["add --hist VALUE, e.g. --hist ret --linear 10"],
        ));
    }
    let parts: Vec<Option<i64>> = text.split(',').map(linear_number).collect();
    let (step, min, max) = match parts.as_slice() {
        [Some(step)] => (*step, 0, step.saturating_mul(63)),
        [Some(step), Some(min), Some(max)] => (*step, *min, *max),
        _ => {
            return Err(Error::usage_hints(
                format!("--linear '{text}' is not STEP or STEP,MIN,MAX"),
                &[HINT],
            ))
        }
    };
    if step <= 0 || max <= min {
        return Err(Error::usage_hints(
            format!("--linear '{text}' needs a positive STEP and MIN below MAX"),
            &[HINT],
        ));
    }
    let span = (max as i128) - (min as i128);
    if span % step as i128 != 0 {
        return Err(Error::usage_hints(
            format!("--linear '{text}': MAX - MIN ({span}) is not a multiple of STEP ({step})"),
            &[&format!(
                "e.g. --linear {step},{min},{}",
                min as i128 + (span / step as i128 + 1) * step as i128
            )],
        ));
    }
    let buckets = (span / step as i128) as u64;
    if buckets > tracer_common::AGG_LINEAR_BUCKETS {
        return Err(Error::usage_hints(
            format!(
                "--linear '{text}' makes {buckets} buckets, more than {}",
                tracer_common::AGG_LINEAR_BUCKETS
            ),
            &["use a larger STEP or a narrower MIN,MAX"],
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
pub(super) fn valid_value_name(name: &str) -> bool {
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
            return Err(Error::usage_hints(
                "--sum and --hist cannot be combined",
                &["--hist also reports the sum and average of each histogram"],
            ))
        }
        (Some(v), None) => Some((ValueOp::Sum, v)),
        (None, Some(v)) => Some((ValueOp::Hist, v)),
        (None, None) => None,
    };
    if count_by.is_none() && value.is_none() {
        if top.is_some() || interval.is_some() {
            return Err(Error::usage_hints(
                "--top and -I go with --count-by, --sum or --hist",
                &["e.g. --count-by comm --top 10 -I 1s"],
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
                return Err(Error::usage_hints(
                    format!("'{other}' is not a --count-by key"),
                    &[KEYS_HINT],
                ))
            }
        };
        if keys.contains(&part) {
            return Err(Error::usage_hints(
                format!("--count-by names '{}' twice", word.trim()),
                &[KEYS_HINT],
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
        return Err(Error::usage_hints(
            "--count-by takes at most one argument, return value, field or syscall",
            &["count by one value, and add others with --sum or --hist"],
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
            return Err(Error::usage_hints(
                format!("{flag} '{name}' is not a numeric value"),
                &["give argN (N = 0..5), ret or a numeric tracepoint field"],
            ));
        }
    }
    if top == Some(0) {
        return Err(Error::usage_hints(
            "--top 0 would show nothing",
            &["give a positive count"],
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
