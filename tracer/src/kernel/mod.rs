//! Facts about the running kernel: tracefs, capabilities, ELF files, and feature checks.

pub mod btf;
pub mod caps;
pub mod dwarf;
pub mod elf;
pub mod features;
pub mod file;
pub mod format;
pub mod kprobe_events;
pub mod params;
pub mod symbols;
pub mod tracefs;

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("tracefs is not mounted")]
    NoTracefs,
    #[error("no tracepoint '{category}:{name}'")]
    NoTracepoint { category: String, name: String },
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot parse {path}: {reason}")]
    Parse { path: String, reason: String },
    #[error("no symbol '{symbol}' in {path}")]
    NoSymbol { path: String, symbol: String },
    #[error("cannot find '{file}' (not a path, a program on PATH, or a library)")]
    NoFile { file: String },
    /// A device, FIFO or directory where a file is read (`/dev/zero` would never end).
    #[error("{path} is {what}, not a regular file")]
    NotAFile { path: String, what: &'static str },
    /// A uprobe's address that is not code.
    #[error("{vaddr:#x} in {path} is not code: {why}")]
    NotCode {
        path: String,
        vaddr: u64,
        why: String,
    },
}

impl Error {
    pub fn hints(&self) -> Vec<String> {
        match self {
            Error::NoTracefs => vec![
                "mount it: `mount -t tracefs nodev /sys/kernel/tracing` (or run `cargo xtask setup`)"
                    .into(),
            ],
            Error::NoTracepoint { category, .. } => {
                vec![format!("list what exists with `tracer list '{category}:*'`")]
            }
            Error::NoSymbol { path, .. } => vec![format!("list its symbols with `tracer list --binary {path}`")],
            Error::NoFile { .. } => vec!["give the full path of the program or library".into()],
            Error::NotCode { path, .. } => vec![format!(
                "probe a function (see `tracer list --binary {path}`), or an instruction's address from `objdump -d {path}`"
            )],
            Error::NotAFile { .. } => {
                vec!["name an ELF program or shared library, e.g. uprobe:/usr/bin/bash:readline".into()]
            }
            _ => Vec::new(),
        }
    }

    /// Bad input rather than a failure of the machine: exit status 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::NotAFile { .. } | Error::NotCode { .. })
    }
}

/// Reads a small text file, mapping failures to [`Error::Read`].
pub(crate) fn read_text(path: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Kernel text symbols from /proc/kallsyms (names only), for did-you-mean when tracefs has no
/// `available_filter_functions`.
pub fn kallsyms_functions() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (_, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
            matches!(kind, "t" | "T").then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}
