//! The separate object of feature probes (`tracer features`): attach types that only a load
//! and an attach can confirm.

use aya::programs::{BtfTracePoint, ProgramError, RawTracePoint};
use aya::{Btf, EbpfLoader};

/// The separate object of feature-probe programs (see tracer-ebpf/src/features.rs).
static FEATURES_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer-features"));

/// Attach types that only a load-and-attach attempt can confirm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeType {
    RawTracepoint,
    BtfTracepoint,
}

impl ProbeType {
    /// The feature object's program of this type.
    fn program(self) -> &'static str {
        match self {
            ProbeType::RawTracepoint => "feature_raw_tp",
            ProbeType::BtfTracepoint => "feature_tp_btf",
        }
    }
}

/// Why an attach type is not available: the displayed text is `tracer features`' reason.
#[derive(Debug, thiserror::Error)]
pub enum AttachTypeError {
    /// BTF tracepoints need the kernel's BTF (`/sys/kernel/btf/vmlinux`).
    #[error("no kernel BTF: {}", chain(.0))]
    NoBtf(#[source] aya::BtfError),
    #[error("{}", chain(.0))]
    Object(#[source] aya::EbpfError),
    #[error("{0} missing from object")]
    Missing(&'static str),
    /// The kernel refused the program's load: its errno, and the verifier's first line when
    /// it wrote one (a permission error leaves the log empty).
    #[error("BPF_PROG_LOAD failed: {errno}{}", verifier.as_ref().map(|l| format!(" (verifier: {l})")).unwrap_or_default())]
    Refused {
        errno: std::io::Error,
        verifier: Option<String>,
    },
    /// Another failure of the program's load or attach.
    #[error("{}", chain(.0))]
    Program(#[source] ProgramError),
}

impl From<ProgramError> for AttachTypeError {
    fn from(e: ProgramError) -> AttachTypeError {
        match e {
            ProgramError::LoadError {
                io_error,
                verifier_log,
            } => AttachTypeError::refused(io_error, &verifier_log.to_string()),
            other => AttachTypeError::Program(other),
        }
    }
}

impl AttachTypeError {
    /// A refused load, with the first line of its verifier log that says something.
    fn refused(errno: std::io::Error, log: &str) -> AttachTypeError {
        let first = (log.lines().map(str::trim)).find(|l| !l.is_empty() && *l != ":");
        AttachTypeError::Refused {
            errno,
            verifier: first.map(str::to_string),
        }
    }
}

/// An error and its sources, joined by `: `.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Loads and attaches the feature program for `kind` (then detaches it); the error says why
/// the kernel refused. Kernel BTF is needed for all but raw tracepoints.
pub fn probe_attach_type(kind: ProbeType) -> Result<(), AttachTypeError> {
    let mut ebpf = match kind {
        ProbeType::RawTracepoint => EbpfLoader::new().btf(None).load(FEATURES_OBJECT),
        ProbeType::BtfTracepoint => EbpfLoader::new().load(FEATURES_OBJECT),
    }
    .map_err(AttachTypeError::Object)?;
    let name = kind.program();
    let program = (ebpf.program_mut(name)).ok_or(AttachTypeError::Missing(name))?;
    match kind {
        ProbeType::RawTracepoint => {
            let p: &mut RawTracePoint = program.try_into()?;
            p.load()?;
            p.attach("sys_enter")?;
        }
        ProbeType::BtfTracepoint => {
            let btf = Btf::from_sys_fs().map_err(AttachTypeError::NoBtf)?;
            let p: &mut BtfTracePoint = program.try_into()?;
            p.load("sys_enter", &btf)?;
            p.attach()?;
        }
    }
    // Dropping `ebpf` detaches and unloads.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tracer features` words a refused load as before the error was typed.
    #[test]
    fn a_refused_load_reads_as_the_errno_and_the_verifiers_first_line() {
        let refused = |log: &str| {
            let errno = std::io::Error::from_raw_os_error(libc::EPERM);
            AttachTypeError::refused(errno, log).to_string()
        };
        assert_eq!(
            refused(""),
            "BPF_PROG_LOAD failed: Operation not permitted (os error 1)"
        );
        assert_eq!(
            refused(":\n  invalid func unknown#183\n"),
            "BPF_PROG_LOAD failed: Operation not permitted (os error 1) (verifier: invalid func \
             unknown#183)"
        );
        assert_eq!(
            AttachTypeError::Missing("feature_raw_tp").to_string(),
            "feature_raw_tp missing from object"
        );
    }
}
