//! A probe spec resolved to its perf event: kernel functions through the kprobe PMU (or
//! `kprobe_events`), user functions through the uprobe PMU, tracepoints by id; unknown names
//! answered with did-you-mean hints.

use std::ffi::CString;
use std::os::fd::AsRawFd;

use super::expand::{functions, syscall_alternatives};
use crate::kernel::features::{Feature, Status};
use crate::kernel::format::Format;
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::tracefs::Tracefs;
use crate::kernel::{self, elf};
use crate::perf::{self, EventKind, KprobeTarget, Options, Scope};
use crate::plan::{self, ProbeSpec, Target, UserAt};
use crate::Error;

pub use crate::kernel::kprobe_events::KprobeInterface;

/// How kernel functions are probed on this kernel.
pub enum KernelInterface {
    Pmu {
        type_: u32,
        retprobe_bit: Option<u32>,
    },
    Tracefs,
}

/// A probe's perf event, opened disabled, with what it needs to be decoded and cleaned up.
pub struct Opened {
    pub event: perf::Event,
    /// Field order is drop order: the event above goes before the legacy kprobe it uses.
    pub legacy: Option<LegacyKprobe>,
    /// Tracepoints: the record format.
    pub format: Option<Format>,
    /// Kernel probes by name: the function (for hints).
    pub kernel_function: Option<String>,
    /// USDT probes: the site (where the slot reads the arguments, their types).
    pub usdt: Option<super::usdt::Site>,
    /// User probes: the file the kernel probes, as it was when the event was opened.
    pub binary: Option<Binary>,
}

/// The file a uprobe is placed in, by path and by what the kernel holds (device and inode): a
/// file replaced at its path (a deploy, a package upgrade: a new inode) leaves the probe in
/// the old one, which no new process runs; one rewritten in place (same inode, a new status
/// change time) may have moved the probed code.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binary {
    pub path: std::path::PathBuf,
    pub dev: u64,
    pub ino: u64,
    /// The status change time (`st_ctime`, ns): a write, a truncation, a chmod.
    pub changed: i128,
}

impl Binary {
    /// Whether the file at the path is no longer the one probed: `None` while nothing is
    /// there (a replacement under way), else the file now there.
    pub fn replaced(&self) -> Option<Binary> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&self.path).ok()?;
        let now = Binary {
            path: self.path.clone(),
            dev: meta.dev(),
            ino: meta.ino(),
            changed: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        };
        (now != *self).then_some(now)
    }
}

/// What one probe spec becomes before it is opened: the event, the legacy kprobe it may need
/// (kept alive as long as the event), the tracepoint format, the kernel function (for hints).
pub struct ProbeEvent {
    pub kind: EventKind,
    pub legacy: Option<LegacyKprobe>,
    pub format: Option<Format>,
    pub kernel_function: Option<String>,
    pub usdt: Option<super::usdt::Site>,
}

/// The retprobe format bit of a PMU for a return probe (`None` for an entry probe); an error
/// when the PMU cannot do return probes, rather than silently counting entries.
fn retprobe_bit(pmu: &str, bit: Option<u32>, ret: bool) -> Result<Option<u32>, Error> {
    match (ret, bit) {
        (false, _) => Ok(None),
        (true, Some(bit)) => Ok(Some(bit)),
        (true, None) => Err(Error::Runtime {
            message: format!("the {pmu} PMU has no retprobe format bit"),
            hints: vec![format!(
                "this kernel cannot do return probes through the {pmu} PMU"
            )],
        }),
    }
}

/// Resolves a probe spec to its perf event: kernel functions through the kprobe PMU (or
/// `kprobe_events`, with an explanation and alternatives when neither exists), user functions
/// through the uprobe PMU, tracepoints by id. Shared by `probe`, `latency` and `stat`.
pub fn event_kind(
    fs: &Tracefs,
    spec: &ProbeSpec,
    interface: &mut Option<KernelInterface>,
    choice: Option<KprobeInterface>,
    index: usize,
) -> Result<ProbeEvent, Error> {
    let plain = |kind, format| ProbeEvent {
        kind,
        legacy: None,
        format,
        kernel_function: None,
        usdt: None,
    };
    match &spec.target {
        Target::Tracepoint {
            category,
            name: event,
        } => {
            let format = fs
                .format(category, event)
                .map_err(|e| tracepoint_error(e, fs, category, event))?;
            Ok(plain(EventKind::Tracepoint(format.id), Some(format)))
        }
        Target::Kernel { .. } | Target::KernelAddr(_) => {
            kernel_event(fs, spec, interface, choice, index)
        }
        Target::User { file, at } => user_event(spec, file, at),
    }
}

/// A kernel function or address: through the kprobe PMU, or a `kprobe_events` entry where
/// the kernel has no PMU (the interface is found at the first one and kept).
fn kernel_event(
    fs: &Tracefs,
    spec: &ProbeSpec,
    interface: &mut Option<KernelInterface>,
    choice: Option<KprobeInterface>,
    index: usize,
) -> Result<ProbeEvent, Error> {
    if interface.is_none() {
        *interface = Some(kernel_interface(spec, fs, choice)?);
    }
    match (interface.as_ref().expect("set above"), &spec.target) {
        (
            KernelInterface::Pmu {
                type_,
                retprobe_bit: bit,
            },
            target,
        ) => {
            let (target, function) = match target {
                Target::Kernel {
                    function, offset, ..
                } => {
                    let name = CString::new(function.as_str())
                        .map_err(|_| Error::usage("NUL in function name", Vec::new()))?;
                    (
                        KprobeTarget::Symbol {
                            name,
                            offset: *offset,
                        },
                        Some(function.clone()),
                    )
                }
                Target::KernelAddr(addr) => (KprobeTarget::Address(*addr), None),
                Target::User { .. } | Target::Tracepoint { .. } => {
                    unreachable!("inside the arm of kernel targets")
                }
            };
            let kind = EventKind::Kprobe {
                pmu_type: *type_,
                target,
                retprobe_bit: retprobe_bit("kprobe", *bit, spec.ret)?,
            };
            Ok(ProbeEvent {
                kind,
                legacy: None,
                format: None,
                kernel_function: function,
                usdt: None,
            })
        }
        (
            KernelInterface::Tracefs,
            Target::Kernel {
                function, offset, ..
            },
        ) => {
            LegacyKprobe::remove_stale(fs);
            let legacy = LegacyKprobe::create(fs, function, *offset, spec.ret, index)
                .map_err(|e| unknown_function(e.into(), fs, function))?;
            Ok(ProbeEvent {
                kind: EventKind::Tracepoint(legacy.id),
                legacy: Some(legacy),
                format: None,
                kernel_function: Some(function.clone()),
                usdt: None,
            })
        }
        (KernelInterface::Tracefs, _) => Err(Error::usage(
            "kprobes by address need the kprobe PMU",
            vec!["give a function name instead".into()],
        )),
    }
}

/// A user function, address or USDT probe: through the uprobe PMU, with a USDT probe's
/// semaphore raised while it is armed.
fn user_event(spec: &ProbeSpec, file: &str, at: &UserAt) -> Result<ProbeEvent, Error> {
    let plain = |kind, format| ProbeEvent {
        kind,
        legacy: None,
        format,
        kernel_function: None,
        usdt: None,
    };
    let usdt = super::usdt::of_spec(spec).transpose()?;
    let (path, offset, semaphore) = match &usdt {
        Some(site) => (site.path.clone(), site.offset, site.semaphore),
        None => {
            let (path, offset) = uprobe_location(file, at)?;
            (path, offset, None)
        }
    };
    let pmu = perf::pmu::Pmus::default()
        .get("uprobe")?
        .ok_or_else(|| Error::Runtime {
            message: format!("cannot probe {spec}: this kernel has no uprobe PMU"),
            hints: vec!["the kernel needs CONFIG_UPROBE_EVENTS; see `tracer features`".into()],
        })?;
    let kind = EventKind::Uprobe {
        pmu_type: pmu.type_,
        path: CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::usage("NUL in path", Vec::new()))?,
        offset,
        retprobe_bit: retprobe_bit("uprobe", pmu.flag_bit("retprobe"), spec.ret)?,
        ref_ctr: match semaphore {
            Some(at) => semaphore_bits(&pmu, spec, at)?,
            None => 0,
        },
    };
    Ok(ProbeEvent {
        usdt,
        ..plain(kind, None)
    })
}

/// A uprobe's file, opened (`O_PATH`: nothing read, nothing executed) and given to the kernel
/// as `/proc/self/fd/N` while its event opens, so that the inode probed is the one the
/// [`Binary`] names; other kinds are left as they are.
fn pin(kind: &mut EventKind) -> Result<Option<(Binary, std::os::fd::OwnedFd)>, Error> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let EventKind::Uprobe { path: named, .. } = kind else {
        return Ok(None);
    };
    let path = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(named.as_bytes()));
    let failed = |source| kernel::Error::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(&path)
        .map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    *named = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL");
    let binary = Binary {
        dev: meta.dev(),
        ino: meta.ino(),
        changed: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        path,
    };
    Ok(Some((binary, file.into())))
}

/// The uprobe PMU's `config` bits that have the kernel raise a USDT probe's semaphore while
/// the probe is armed (`ref_ctr_offset`, Linux 4.20).
fn semaphore_bits(pmu: &perf::pmu::Pmu, spec: &ProbeSpec, offset: u64) -> Result<u64, Error> {
    match pmu.encode(&[("ref_ctr_offset".to_string(), offset)]) {
        Ok([config, 0, 0]) if config != 0 => Ok(config),
        _ => Err(Error::Runtime {
            message: format!(
                "cannot probe {spec}: its semaphore needs the uprobe PMU's ref_ctr_offset (Linux 4.20), which this kernel lacks"
            ),
            hints: vec![
                "the program only runs a semaphore-guarded probe's code while its semaphore is set; probe a function near it with uprobe:PATH:SYMBOL".into(),
            ],
        }),
    }
}

/// Opens the perf event of one probe spec, disabled. A uprobe is armed only in `pid` when one
/// is given; everything else opens with pid -1 on CPU 0: a probe's BPF program runs for every
/// hit whatever the event's scope, and the filters run in BPF.
/// The scope of a tracepoint event that only carries a BPF program. The program runs on every
/// hit whatever the event's scope; its return value lets the hit go on to the tracepoint's
/// perf events on that CPU (everyone's counters), and a CPU-wide event of ours would then count
/// each hit of that CPU too. Scoped to tracer's own thread, it is on a CPU's list only while
/// tracer runs there (a CPU-wide one cost every event of that CPU:
/// docs/benchmarks.md, "Figures the code cites", `carrier-scope`).
pub(super) fn program_carrier() -> Scope {
    Scope::Task {
        pid: std::process::id(),
        cpu: None,
    }
}

pub fn open_event(
    fs: &Tracefs,
    spec: &ProbeSpec,
    interface: &mut Option<KernelInterface>,
    choice: Option<KprobeInterface>,
    pid: Option<u32>,
    index: usize,
) -> Result<Opened, Error> {
    let mut resolved = event_kind(fs, spec, interface, choice, index)?;
    // Held until the event is open.
    let pinned = pin(&mut resolved.kind)?;
    let scope = match (&spec.target, pid) {
        (Target::User { .. }, Some(pid)) => Scope::Task { pid, cpu: None },
        (Target::Tracepoint { .. }, _) => program_carrier(),
        (Target::User { .. }, None) | (Target::Kernel { .. } | Target::KernelAddr(_), _) => {
            Scope::Cpu(0)
        }
    };
    let options = Options {
        flags: perf::attr::flag::DISABLED,
        ..Options::default()
    };
    let mut event =
        perf::Event::open(spec.to_string(), &resolved.kind, &options, &scope).map_err(|e| {
            match &resolved.kernel_function {
                Some(f) if e.errno() == Some(libc::ENOENT) => unknown_function(e.into(), fs, f),
                _ => e.into(),
            }
        })?;
    if resolved.legacy.is_some() {
        event.close_on_drop();
    }
    Ok(Opened {
        event,
        legacy: resolved.legacy,
        format: resolved.format,
        kernel_function: resolved.kernel_function,
        usdt: resolved.usdt,
        binary: pinned.map(|(binary, _fd)| binary),
    })
}

pub fn tracepoint_error(err: kernel::Error, fs: &Tracefs, category: &str, name: &str) -> Error {
    if !matches!(err, kernel::Error::NoTracepoint { .. }) {
        return err.into();
    }
    let all: Vec<String> = fs
        .tracepoints()
        .into_iter()
        .map(|(c, n)| format!("{c}:{n}"))
        .collect();
    let wanted = format!("{category}:{name}");
    let mut hints: Vec<String> = plan::did_you_mean(&wanted, all.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!(
        "list tracepoints with `tracer list '{category}:*'`"
    ));
    Error::Usage {
        message: format!("no tracepoint '{wanted}'"),
        hints,
    }
}

pub fn unknown_function(err: Error, fs: &Tracefs, function: &str) -> Error {
    let all = functions(fs);
    if all.iter().any(|f| f == function) {
        return err;
    }
    let mut hints: Vec<String> = plan::did_you_mean(function, all.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!("list functions with `tracer list '{function}*'`"));
    Error::Usage {
        message: format!("no traceable kernel function '{function}'"),
        hints,
    }
}

pub fn unknown_symbol(err: kernel::Error, path: &std::path::Path, symbol: &str) -> Error {
    if !matches!(err, kernel::Error::NoSymbol { .. }) {
        return err.into();
    }
    let symbols = elf::function_symbols(path).unwrap_or_default();
    let mut hints: Vec<String> = plan::did_you_mean(symbol, symbols.iter().map(String::as_str))
        .into_iter()
        .collect();
    hints.push(format!(
        "list its functions with `tracer list --binary {}`",
        path.display()
    ));
    if elf::stripped_without_debug(path) {
        let fetch = match std::env::var_os("DEBUGINFOD_URLS") {
            Some(_) => "",
            None => {
                ", or set DEBUGINFOD_URLS (Debian's: https://debuginfod.debian.net) to fetch it"
            }
        };
        hints.push(format!(
            "{} is stripped and has no debug file here: install its debug package \
             (Debian's -dbgsym){fetch}",
            path.display()
        ));
    }
    Error::Usage {
        message: format!("no function '{symbol}' in {}", path.display()),
        hints,
    }
}

/// Where a uprobe goes: the ELF file a spec names and the file offset of its symbol (plus
/// offset) or address.
pub fn uprobe_location(file: &str, at: &UserAt) -> Result<(std::path::PathBuf, u64), Error> {
    let path = elf::resolve_file(file)?;
    let data = kernel::file::map(&path)?;
    let vaddr = match at {
        UserAt::Symbol {
            name: symbol,
            offset,
        } => elf::symbol_address(&data, &path, symbol)
            .map_err(|e| unknown_symbol(e, &path, symbol))?
            .checked_add(*offset)
            .ok_or_else(|| {
                Error::usage(
                    format!("offset {offset:#x} past '{symbol}' is beyond any address"),
                    vec!["give an offset inside the function".into()],
                )
            })?,
        UserAt::Address(addr) => *addr,
        UserAt::Usdt { .. } => unreachable!("USDT sites are found by usdt::site"),
    };
    Ok((path.clone(), elf::code_offset(&data, &path, vaddr)?))
}

/// Picks the kprobe PMU, else legacy kprobe_events; when neither exists, explains why and
/// what can be traced instead.
fn kernel_interface(
    spec: &ProbeSpec,
    fs: &Tracefs,
    choice: Option<KprobeInterface>,
) -> Result<KernelInterface, Error> {
    let pmu = perf::pmu::Pmus::default().get("kprobe")?;
    match (choice, pmu) {
        (Some(KprobeInterface::Tracefs), _) if fs.has_kprobe_events() => {
            return Ok(KernelInterface::Tracefs)
        }
        (None | Some(KprobeInterface::Pmu), Some(pmu)) => {
            return Ok(KernelInterface::Pmu {
                type_: pmu.type_,
                retprobe_bit: pmu.flag_bit("retprobe"),
            })
        }
        (None, None) if fs.has_kprobe_events() => return Ok(KernelInterface::Tracefs),
        (Some(KprobeInterface::Fentry), _) => {
            return Err(Error::usage(
                format!("{spec} cannot go through fentry, which --kprobe-interface fentry asks"),
                vec!["leave out --kprobe-interface fentry to use a kprobe".into()],
            ))
        }
        _ => {}
    }
    let (function, what) = match &spec.target {
        Target::Kernel { function, .. } => (function.clone(), format!("function '{function}'")),
        Target::KernelAddr(addr) => (String::new(), format!("address {addr:#x}")),
        Target::User { .. } | Target::Tracepoint { .. } => (String::new(), spec.to_string()),
    };
    let fentry = match Feature::Fentry.check() {
        Status::Available { .. } => "fentry cannot serve this probe (an offset, an address, \
             or a function vmlinux's BTF does not have)"
            .to_string(),
        Status::Unavailable { reason, .. } => {
            format!("fentry is not permitted either ({reason})")
        }
    };
    let mut hints = Vec::new();
    let alternatives = match function.is_empty() {
        true => Vec::new(),
        false => syscall_alternatives(fs, &function),
    };
    if !alternatives.is_empty() {
        hints.push(format!(
            "trace the syscalls that lead there instead: tracer probe {}",
            alternatives.join(" ")
        ));
    }
    hints.push("user-space functions (uprobe:PATH:SYMBOL) and tracepoints (CAT:NAME) work here; see `tracer features`".into());
    Err(Error::Runtime {
        message: format!("cannot probe kernel {what}: this kernel has no kprobes (built without CONFIG_KPROBES), and {fentry}"),
        hints,
    })
}
