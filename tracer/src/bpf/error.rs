//! What can go wrong in the BPF layer, why the kernel refused, and what the user can do.

use aya::programs::ProgramError;
use tracer_common::names;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot load tracer's BPF object")]
    Load(#[source] aya::EbpfError),
    #[error("cannot read the BPF programs' debug messages (--debug-bpf)")]
    DebugLog(#[source] aya_log::Error),
    #[error("cannot load BPF program '{program}'")]
    Program {
        program: String,
        #[source]
        source: ProgramError,
    },
    #[error("BPF map '{map}' is missing or of the wrong type")]
    Map { map: &'static str },
    #[error("cannot update BPF map '{map}'")]
    MapUpdate {
        map: &'static str,
        #[source]
        source: aya::maps::MapError,
    },
    #[error("no free {kind} program slot: at most {max} such probes at once")]
    NoSlot { kind: &'static str, max: u32 },
    #[error(
        "more than {max} {kind} in one run need BPF attach cookies (Linux 5.15), and this \
         kernel refused the program that reads them"
    )]
    NoCookies {
        kind: &'static str,
        max: u32,
        #[source]
        source: ProgramError,
    },

    #[error("cannot attach {attach} to kernel function '{function}' (BPF_LINK_CREATE)")]
    Trampoline {
        attach: &'static str,
        function: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a probe needs parts of tracer's BPF programs this run left out \
         (needs USES {needed:#x}, loaded with {loaded:#x})"
    )]
    NotLoaded { needed: u32, loaded: u32 },
}

impl Error {
    /// Whether a trampoline program's load failed for a reason of the kernel's, not of the
    /// function's: a permission error, or helpers the kernel lacks.
    pub fn kernel_refusal(&self) -> bool {
        self.load_error().is_some_and(|(io_error, log)| {
            matches!(io_error.raw_os_error(), Some(libc::EPERM | libc::EACCES))
                || unknown_helper(&log)
        })
    }

    /// A refused program load: its errno and the verifier's log.
    fn load_error(&self) -> Option<(&std::io::Error, String)> {
        match self {
            Error::Program {
                source:
                    ProgramError::LoadError {
                        io_error,
                        verifier_log,
                    },
                ..
            } => Some((io_error, verifier_log.to_string())),
            _ => None,
        }
    }

    /// Why the kernel refused a trampoline program ([`Bpf::take_function_slot`]), in a line:
    /// the kernel feature it lacks where that is known, else the errno and the verifier's
    /// first word.
    pub fn refusal(&self) -> String {
        if let Some((io_error, log)) = self.load_error() {
            if unknown_helper(&log) {
                return "this kernel's BPF lacks helpers tracer's fentry/fexit programs call \
                        (bpf_get_attach_cookie, bpf_get_func_arg: Linux 5.19 has them)"
                    .into();
            }
            let first = (log.lines().map(str::trim))
                .find(|l| l.contains("invalid") || l.contains("unknown") || l.contains("not"));
            return match first {
                Some(line) => format!("BPF_PROG_LOAD failed: {io_error} (verifier: {line})"),
                None => format!("BPF_PROG_LOAD failed: {io_error}"),
            };
        }
        match self {
            Error::Trampoline { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                "the kernel refused a tracing link with an attach cookie (Linux 5.19)".into()
            }
            Error::Trampoline { source, .. } => format!("BPF_LINK_CREATE failed: {source}"),
            other => crate::describe(other),
        }
    }

    pub fn hints(&self) -> Vec<String> {
        let os_errno = match self {
            Error::Load(aya::EbpfError::MapError(aya::maps::MapError::CreateError {
                io_error,
                ..
            })) => io_error.raw_os_error(),
            Error::Program {
                source: ProgramError::LoadError { io_error, .. },
                ..
            } => io_error.raw_os_error(),
            _ => None,
        };
        // A program the verifier refused has a log: a bug in tracer's programs (or a kernel
        // whose verifier is stricter than the ones tested), not a permission problem.
        let refused = matches!(self, Error::Program {
            source: ProgramError::LoadError { verifier_log, .. },
            ..
        } if !verifier_log.to_string().trim().is_empty());
        if let Error::Load(aya::EbpfError::MapError(aya::maps::MapError::CreateError {
            name,
            io_error,
        })) = self
        {
            if name == names::RINGBUF && io_error.raw_os_error() == Some(libc::EINVAL) {
                return vec![
                    "this kernel has no BPF ring buffer (Linux 5.8 and later have it): \
                     use --transport perf"
                        .into(),
                ];
            }
        }
        if refused {
            return vec![
                "the kernel's BPF verifier refused one of tracer's programs (log above): \
                 please report it with `uname -r` and the log"
                    .into(),
            ];
        }
        match os_errno {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                vec!["BPF needs root or CAP_BPF + CAP_PERFMON; also check \
                 /proc/sys/kernel/unprivileged_bpf_disabled and lockdown (`tracer features`)"
                    .into()]
            }
            Some(libc::ENOSYS) => vec!["this kernel was built without CONFIG_BPF_SYSCALL".into()],
            _ => match self {
                Error::NoSlot { .. } => vec!["trace fewer distinct probes in one run".into()],
                Error::NoCookies { max, .. } => vec![format!(
                    "trace at most {max} such probes per run on this kernel (syscalls:* \
                     tracepoints have no such limit)"
                )],
                Error::NotLoaded { .. } => vec![
                    "this is a bug in tracer (its plan missed a feature): please report the \
                     command line"
                        .into(),
                ],
                _ => Vec::new(),
            },
        }
    }
}

/// A verifier log that names a helper the kernel lacks: `unknown func bpf_get_func_arg#183`,
/// or on older verifiers `call unknown#174` (tracing programs got the attach cookie in 5.19).
fn unknown_helper(log: &str) -> bool {
    log.contains("unknown func ") || log.contains("call unknown#")
}
