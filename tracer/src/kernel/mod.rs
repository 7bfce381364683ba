//! Facts about the running kernel: tracefs, capabilities, ELF files, and feature checks.

pub mod btf;
pub mod caps;
pub mod cgroups;
pub mod debug_file;
pub mod debuginfod;
pub mod dwarf;
pub mod elf;
pub mod elf_symbols;
pub mod errno;
pub mod fds;
pub mod features;
pub mod file;
pub mod file_cache;
pub mod format;
pub mod kprobe_events;
pub mod lines;
pub mod params;
pub mod symbols;
pub mod syscalls;
pub mod sysnames;
pub mod task_memory;
pub mod tasks;
pub mod tracefs;
pub mod unwind;
pub mod usdt;

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("tracefs is not mounted")]
    NoTracefs,
    /// tracefs is mounted, but this user may not enter it (its root is mode 0700 by default).
    #[error("permission denied: this user cannot read tracefs at {path}")]
    TracefsDenied { path: String },
    #[error("no process {pid}")]
    NoProcess { pid: u32 },
    /// `/proc/PID/maps` needs ptrace read access to the process.
    #[error("permission denied: this user cannot read the memory map of process {pid} ({path})")]
    ProcessDenied { pid: u32, path: String },
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
            Error::TracefsDenied { path } => vec![
                "run tracer as root (sudo): tracefs is root's alone by default (mode 0700)".into(),
                format!(
                    "or let a group in: `mount -o remount,gid=GROUP,mode=0750 {path}` (as root) and add the user \
                     to GROUP; probes then need CAP_BPF and CAP_PERFMON: `setcap cap_bpf,cap_perfmon+ep $(command -v tracer)`"
                ),
                format!(
                    "without CAP_PERFMON, perf_event_paranoid (now {}) decides: `sysctl kernel.perf_event_paranoid=1` \
                     lets a user count tracepoints in their own processes (tracer stat)",
                    paranoid()
                ),
            ],
            Error::NoProcess { .. } => {
                vec!["check the pid with `ps`; it may have exited".into()]
            }
            Error::ProcessDenied { .. } => vec![
                "reading another user's process needs ptrace read access: run as its user, or as root (CAP_SYS_PTRACE)".into(),
                "a non-dumpable process (setuid, prctl PR_SET_DUMPABLE 0) or one in another user namespace refuses even root".into(),
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

/// `kernel.perf_event_paranoid`, as the kernel prints it (`?` when it cannot be read).
fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map_or_else(|_| "?".into(), |s| s.trim().to_string())
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
