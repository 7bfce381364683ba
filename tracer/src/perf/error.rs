//! Errors of the perf layer, each errno of perf_event_open(2)'s ERRORS section mapped to advice.

use std::io;

/// Which family an event belongs to, so an errno can be explained in its terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventClass {
    Hardware,
    Software,
    Tracepoint,
    Breakpoint,
    Kprobe,
    Uprobe,
    Pmu,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// perf_event_open failed.
    #[error("cannot open {event}")]
    Open {
        event: String,
        class: EventClass,
        #[source]
        source: io::Error,
    },
    /// An ioctl on an open event failed.
    #[error("{what} failed on {event}")]
    Ioctl {
        what: &'static str,
        event: String,
        #[source]
        source: io::Error,
    },
    /// read() of counter values failed or returned fewer bytes than the read_format implies.
    #[error("cannot read the counters of {event}")]
    Read {
        event: String,
        #[source]
        source: io::Error,
    },
    /// mmap of the ring failed.
    #[error("cannot map a {pages}-page ring for {event}")]
    Mmap {
        event: String,
        pages: usize,
        #[source]
        source: io::Error,
    },
    /// The request is invalid before any syscall is made.
    #[error("invalid {what}: {reason}")]
    Invalid { what: String, reason: String },
    /// A sysfs or tracefs file could not be read or parsed.
    #[error("cannot read {path}")]
    Sysfs {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Concrete things the user can do about this error, one per line.
    pub fn hints(&self) -> Vec<String> {
        match self {
            Error::Open { class, source, .. } => open_hints(*class, source),
            Error::Mmap { source, .. } if source.raw_os_error() == Some(libc::EPERM) => vec![
                "the ring exceeds the locked-memory limit: lower --ring-pages or raise \
                 /proc/sys/kernel/perf_event_mlock_kb"
                    .into(),
            ],
            Error::Mmap { .. } => {
                vec!["the ring must be 1 + 2^n pages: pass --ring-pages as a power of two".into()]
            }
            _ => Vec::new(),
        }
    }

    /// The errno behind this error, if any.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Open { source, .. }
            | Error::Ioctl { source, .. }
            | Error::Read { source, .. }
            | Error::Mmap { source, .. }
            | Error::Sysfs { source, .. } => source.raw_os_error(),
            Error::Invalid { .. } => None,
        }
    }
}

fn paranoid_hint() -> String {
    let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    format!(
        "perf_event_paranoid is {level}: run as root, grant CAP_PERFMON (and CAP_BPF for probes), \
         or lower it with `sysctl kernel.perf_event_paranoid=1`"
    )
}

fn open_hints(class: EventClass, source: &io::Error) -> Vec<String> {
    let Some(errno) = source.raw_os_error() else {
        return Vec::new();
    };
    match (errno, class) {
        (libc::EPERM, EventClass::Breakpoint) => vec![
            "the kernel refused the breakpoint: on x86 the address must be aligned to its length \
             and lie in the target's address space (user addresses for a process)"
                .into(),
            paranoid_hint(),
        ],
        (libc::EACCES | libc::EPERM, _) => vec![paranoid_hint()],
        (libc::ENOENT, EventClass::Hardware) | (libc::EOPNOTSUPP, EventClass::Hardware) => vec![
            "this machine exposes no hardware counters (common in VMs): the event is <not supported>; \
             use software events such as task-clock instead"
                .into(),
        ],
        (libc::ENOENT, EventClass::Kprobe) => vec![
            "no such traceable kernel function: see `tracer list 'PATTERN'` or \
             /sys/kernel/tracing/available_filter_functions"
                .into(),
        ],
        (libc::ENOENT, EventClass::Tracepoint) => {
            vec!["no such tracepoint: see `tracer list 'CAT:*'`".into()]
        }
        (libc::ENOENT, EventClass::Uprobe) => {
            vec!["the file does not exist or the offset lies outside it".into()]
        }
        (libc::ENOENT, _) | (libc::ENODEV, _) | (libc::EOPNOTSUPP, _) => vec![
            "this kernel or CPU does not support the event: check `tracer features`".into(),
        ],
        (libc::ENOSPC, EventClass::Breakpoint) => vec![
            "no free hardware breakpoint slot: x86 has 4 debug registers per CPU, shared with \
             debuggers and other watchers; close some watches"
                .into(),
        ],
        (libc::EINVAL, EventClass::Breakpoint) => vec![
            "check the breakpoint: length 1, 2, 4 or 8 aligned to the address; x86 has no \
             read-only watchpoints (use rw); execute breakpoints take length 8"
                .into(),
        ],
        (libc::EINVAL, EventClass::Kprobe) => vec![
            "the kernel rejected the probe point: the offset may not be an instruction boundary, \
             or the function is blacklisted (see /sys/kernel/debug/kprobes/blacklist)"
                .into(),
        ],
        (libc::EINVAL, EventClass::Uprobe) => {
            vec!["the offset must point at an instruction in an executable mapping".into()]
        }
        (libc::EINVAL, _) => vec![
            "the kernel rejected an attribute: a flag or sample type this kernel does not know, \
             or a CPU number out of range"
                .into(),
        ],
        (libc::E2BIG, _) => vec![
            "this kernel is older than an attribute field we set: upgrade the kernel or leave \
             that option out"
                .into(),
        ],
        (libc::EMFILE, _) => vec![
            "too many open files: raise the limit with `ulimit -n 65536` or trace fewer events/CPUs"
                .into(),
        ],
        (libc::ESRCH, _) => vec!["the process does not exist (it may have exited)".into()],
        (libc::EBUSY, _) => vec![
            "another user holds the PMU exclusively: stop it, or retry without exclusive/pinned"
                .into(),
        ],
        (libc::EOVERFLOW, _) => vec![
            "sample_max_stack is larger than /proc/sys/kernel/perf_event_max_stack".into(),
        ],
        (libc::ENOSYS, _) => vec![
            "this architecture does not support user stack sampling (PERF_SAMPLE_STACK_USER)"
                .into(),
        ],
        (libc::EINTR, _) => vec![
            "ftrace is using this uprobe: remove it from /sys/kernel/tracing/uprobe_events".into(),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(class: EventClass, errno: i32) -> Error {
        Error::Open {
            event: "x".into(),
            class,
            source: io::Error::from_raw_os_error(errno),
        }
    }

    #[test]
    fn user_facing_errnos_have_hints() {
        for (class, errno, needle) in [
            (EventClass::Software, libc::EACCES, "perf_event_paranoid"),
            (EventClass::Kprobe, libc::EPERM, "CAP_PERFMON"),
            (EventClass::Hardware, libc::ENOENT, "<not supported>"),
            (EventClass::Kprobe, libc::ENOENT, "tracer list"),
            (EventClass::Breakpoint, libc::ENOSPC, "4 debug registers"),
            (EventClass::Breakpoint, libc::EINVAL, "aligned"),
            (EventClass::Software, libc::E2BIG, "older"),
            (EventClass::Software, libc::EMFILE, "ulimit"),
            (EventClass::Software, libc::ESRCH, "does not exist"),
            (EventClass::Pmu, libc::EBUSY, "exclusive"),
            (
                EventClass::Software,
                libc::EOVERFLOW,
                "perf_event_max_stack",
            ),
        ] {
            let hints = open(class, errno).hints();
            assert!(
                hints.iter().any(|h| h.contains(needle)),
                "{class:?} errno {errno}: {hints:?} lacks {needle:?}"
            );
        }
    }

    #[test]
    fn display_does_not_repeat_the_source() {
        let err = open(EventClass::Software, libc::ENOENT);
        assert_eq!(err.to_string(), "cannot open x");
    }
}
