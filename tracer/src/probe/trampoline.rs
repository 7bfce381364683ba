//! Kernel functions through their BPF trampolines (fentry at the entry, fexit at the return):
//! which probes of a run go that way, and what the run learned when the kernel refused.
//!
//! A trampoline program is loaded once per function (its target is fixed at load), reads the
//! arguments and return value through `bpf_get_func_arg`/`bpf_get_func_ret` (Linux 5.17) and
//! its slot through the link's cookie (Linux 5.19). bpftrace prefers fentry for the same
//! reasons: no breakpoint trap per hit, and fexit sees the return value and the arguments.
//! Where the kernel refuses (no BTF, tracing programs forbidden, an older kernel), kernel
//! functions go through kprobes, unless `fentry:`/`fexit:` or `--kprobe-interface fentry`
//! asked for trampolines only.

use super::KprobeInterface;
use crate::kernel::btf::KernelBtf;
use crate::plan::{ProbeSpec, Target};
use crate::Error;

/// How one kernel probe of the run is served: the names the banner and `tracer features` use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Fentry,
    Fexit,
    Kprobe,
    Kretprobe,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Fentry => "fentry",
            Via::Fexit => "fexit",
            Via::Kprobe => "kprobe",
            Via::Kretprobe => "kretprobe",
        }
    }

    /// How `spec`, a kernel probe, is served when it does not go through its trampoline.
    pub fn kprobe(spec: &ProbeSpec) -> Via {
        match spec.ret {
            true => Via::Kretprobe,
            false => Via::Kprobe,
        }
    }
}

/// A kernel function to serve through its trampoline: the name, and its vmlinux BTF id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionTarget {
    pub function: String,
    pub btf_id: u32,
    /// `fentry:`/`fexit:` or `--kprobe-interface fentry`: a refusal is an error, not a
    /// fallback to kprobes.
    pub forced: bool,
    /// Forced by `--kprobe-interface fentry` (the hint then says to leave it out).
    pub by_flag: bool,
}

/// The run's choice between trampolines and kprobes.
#[derive(Debug, Default)]
pub struct Trampolines {
    choice: Option<KprobeInterface>,
    /// Why the kernel refused a trampoline program, once it has: the rest of the run uses
    /// kprobes without trying again.
    refused: Option<String>,
    /// A function has been linked this run: a later EINVAL is that function's, not a kernel
    /// without tracing-link cookies.
    linked: bool,
}

impl Trampolines {
    pub fn new(choice: Option<KprobeInterface>) -> Trampolines {
        Trampolines {
            choice,
            refused: None,
            linked: false,
        }
    }

    /// Where `spec` goes through its trampoline, the function and its BTF id; `None` for a
    /// kprobe (or anything that is not a kernel function). Asked-for trampolines that cannot
    /// be had are errors that say why.
    pub fn target(
        &self,
        spec: &ProbeSpec,
        btf: &mut Option<Option<KernelBtf>>,
    ) -> Result<Option<FunctionTarget>, Error> {
        let forced_all = self.choice == Some(KprobeInterface::Fentry);
        let (function, offset, forced) = match &spec.target {
            Target::Kernel {
                function,
                offset,
                fentry,
            } => (function, *offset, *fentry || forced_all),
            Target::KernelAddr(addr) if forced_all => {
                return Err(Error::usage(
                    format!(
                        "kprobe:{addr:#x}: fentry attaches to functions by name, not addresses"
                    ),
                    vec!["name the function, or leave out --kprobe-interface fentry".into()],
                ))
            }
            Target::KernelAddr(_) | Target::User { .. } | Target::Tracepoint { .. } => {
                return Ok(None)
            }
        };
        if !forced && self.choice.is_some() {
            return Ok(None);
        }
        if offset != 0 {
            return match forced {
                true => Err(Error::usage(
                    format!("{spec}: fentry attaches at a function's entry, not at an offset"),
                    vec!["leave out --kprobe-interface fentry to use a kprobe at +OFF".into()],
                )),
                false => Ok(None),
            };
        }
        if let Some(reason) = &self.refused {
            return match forced {
                true => Err(refused(spec, reason, forced_all)),
                false => Ok(None),
            };
        }
        let btf = btf.get_or_insert_with(|| KernelBtf::open().ok());
        let Some(btf) = btf else {
            return match forced {
                true => Err(refused(
                    spec,
                    "the kernel has no BTF (/sys/kernel/btf/vmlinux)",
                    forced_all,
                )),
                false => Ok(None),
            };
        };
        match btf.vmlinux_function_id(function) {
            Ok(Some(btf_id)) => Ok(Some(FunctionTarget {
                function: function.clone(),
                btf_id,
                forced,
                by_flag: forced_all,
            })),
            _ if !forced => Ok(None),
            _ => Err(Error::usage(
                format!("{spec}: vmlinux's BTF has no function '{function}'"),
                vec![
                    "a module's function, one inlined everywhere, or one pahole leaves out of BTF \
                     (the syscall wrappers __x64_sys_*): probe it as kprobe:FUNC"
                        .into(),
                    format!("list traceable functions with `tracer list 'kprobe:{function}*'`"),
                ],
            )),
        }
    }

    /// `target` was linked: later failures are that function's own, not the kernel's.
    pub fn linked(&mut self) {
        self.linked = true;
    }

    /// Linking `target` failed with `err`. Asked for: the error, with its cause. Otherwise
    /// the probe falls back to a kprobe (`Ok`). A refusal of the kernel's (a permission error,
    /// helpers it lacks, EINVAL at the first link: no tracing-link cookies) sends the rest of
    /// the run there too, without loading again; one function's refusal (its prototype, a
    /// deny list) only that function. What is no refusal at all (no slot left, a map that
    /// cannot be written) is the error it is.
    pub fn failed(
        &mut self,
        spec: &ProbeSpec,
        target: &FunctionTarget,
        err: crate::bpf::Error,
    ) -> Result<(), Error> {
        use crate::bpf::Error as Bpf;
        let whole_run = match &err {
            Bpf::Program { .. } => err.kernel_refusal(),
            Bpf::Trampoline { source, .. } => {
                !self.linked && source.raw_os_error() == Some(libc::EINVAL)
            }
            _ => return Err(err.into()),
        };
        if target.forced {
            return Err(refused(spec, &err.refusal(), target.by_flag));
        }
        if whole_run && self.refused.is_none() {
            self.refused = Some(err.refusal());
        }
        Ok(())
    }
}

/// The banner's word on how a run's kernel probes are served: `(via fentry)`, `(via fentry,
/// fexit)`, `(via kprobe)`; `None` without kernel probes.
pub fn banner_detail(vias: impl Iterator<Item = Option<Via>>) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for via in vias.flatten() {
        if !names.contains(&via.name()) {
            names.push(via.name());
        }
    }
    (!names.is_empty()).then(|| format!("(via {})", names.join(", ")))
}

fn refused(spec: &ProbeSpec, reason: &str, by_flag: bool) -> Error {
    let instead = match by_flag {
        true => "leave out --kprobe-interface fentry to use kprobes where fentry cannot serve",
        false => "kprobe:FUNC / kretprobe:FUNC use kprobes instead",
    };
    Error::Runtime {
        message: format!("cannot attach {spec} through fentry/fexit: {reason}"),
        hints: vec![format!(
            "{instead}; `tracer features` says which this kernel permits"
        )],
    }
}
