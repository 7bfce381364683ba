//! What this kernel can do, found by trying it (opening the event, loading the program), not by
//! reading a config file. `tracer features`, every command and the tests ask the same checks.

use std::path::Path;
use std::sync::atomic::AtomicU64;

use serde::Serialize;

use crate::bpf;
use crate::kernel::{caps, elf, tracefs::Tracefs};
use crate::perf::{
    self, BreakpointType, EventKind, Hardware, KprobeTarget, Options, Scope, Software,
};

/// One capability of the kernel that tracer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    Bpf,
    Btf,
    Tracefs,
    Tracepoints,
    KprobePmu,
    UprobePmu,
    KprobeEvents,
    Fentry,
    Fexit,
    RawTracepoints,
    BtfTracepoints,
    Breakpoints,
    HardwareCounters,
    SoftwareEvents,
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    Available {
        detail: String,
    },
    Unavailable {
        /// Why, as the kernel told us.
        reason: String,
        /// What the user cannot do because of it.
        consequence: String,
    },
}

impl Status {
    pub fn is_available(&self) -> bool {
        matches!(self, Status::Available { .. })
    }
}

impl Feature {
    pub const ALL: [Feature; 14] = [
        Feature::Bpf,
        Feature::Btf,
        Feature::Tracefs,
        Feature::Tracepoints,
        Feature::KprobePmu,
        Feature::UprobePmu,
        Feature::KprobeEvents,
        Feature::Fentry,
        Feature::Fexit,
        Feature::RawTracepoints,
        Feature::BtfTracepoints,
        Feature::Breakpoints,
        Feature::HardwareCounters,
        Feature::SoftwareEvents,
    ];

    /// The label `tracer features` prints.
    pub fn label(self) -> &'static str {
        match self {
            Feature::Bpf => "bpf",
            Feature::Btf => "btf",
            Feature::Tracefs => "tracefs",
            Feature::Tracepoints => "tracepoints",
            Feature::KprobePmu => "kprobes",
            Feature::UprobePmu => "uprobes",
            Feature::KprobeEvents => "kprobe_events",
            Feature::Fentry => "fentry",
            Feature::Fexit => "fexit",
            Feature::RawTracepoints => "raw_tracepoints",
            Feature::BtfTracepoints => "btf_tracepoints",
            Feature::Breakpoints => "breakpoints",
            Feature::HardwareCounters => "hw_counters",
            Feature::SoftwareEvents => "sw_events",
        }
    }

    /// Runs the check against the running kernel.
    pub fn check(self) -> Status {
        let result = match self {
            Feature::Bpf => check_bpf(),
            Feature::Btf => check_btf(),
            Feature::Tracefs => Tracefs::locate()
                .map(|fs| fs.root().display().to_string())
                .map_err(|e| e.to_string()),
            Feature::Tracepoints => check_tracepoints(),
            Feature::KprobePmu => check_kprobe_pmu(),
            Feature::UprobePmu => check_uprobe_pmu(),
            Feature::KprobeEvents => check_kprobe_events(),
            Feature::Fentry => check_trampoline(false),
            Feature::Fexit => check_trampoline(true),
            Feature::RawTracepoints => bpf::probe_attach_type(bpf::ProbeType::RawTracepoint)
                .map(|()| "raw_tp sys_enter attached".into())
                .map_err(|e| e.to_string()),
            Feature::BtfTracepoints => bpf::probe_attach_type(bpf::ProbeType::BtfTracepoint)
                .map(|()| "tp_btf sys_enter attached".into())
                .map_err(|e| e.to_string()),
            Feature::Breakpoints => check_breakpoints(),
            Feature::HardwareCounters => {
                open_counter(EventKind::Hardware(Hardware::CpuCycles), "cycles")
            }
            Feature::SoftwareEvents => {
                open_counter(EventKind::Software(Software::TaskClock), "task-clock")
            }
        };
        match result {
            Ok(detail) => Status::Available { detail },
            Err(reason) => Status::Unavailable {
                reason,
                consequence: self.consequence().into(),
            },
        }
    }

    /// What a user loses when the feature is missing.
    pub fn consequence(self) -> &'static str {
        match self {
            Feature::Bpf => "no probe, watch or latency command can run: only `tracer stat` counting works",
            Feature::Btf => "no typed kernel arguments; fentry/fexit and BTF tracepoints cannot load",
            Feature::Tracefs => "tracepoints cannot be named (their ids live in tracefs)",
            Feature::Tracepoints => "`tracer probe CAT:NAME` and tracepoint counting cannot work",
            Feature::KprobePmu => "`tracer probe FUNC` cannot attach to kernel functions through the kprobe PMU",
            Feature::UprobePmu => "`tracer probe uprobe:...` cannot attach to user functions",
            Feature::KprobeEvents => "no legacy tracefs fallback for kernel probes",
            Feature::Fentry | Feature::Fexit => {
                "kernel function probes cannot use fentry/fexit; they need kprobes instead"
            }
            Feature::RawTracepoints => "no raw tracepoint attach (used for cheap in-kernel counting)",
            Feature::BtfTracepoints => "no BTF-typed tracepoint attach",
            Feature::Breakpoints => "`tracer watch` cannot set hardware watchpoints",
            Feature::HardwareCounters => {
                "hardware counters (cycles, instructions, caches) are <not supported>; software events still count"
            }
            Feature::SoftwareEvents => "`tracer stat` cannot count software events",
        }
    }
}

fn errno_text(e: &perf::Error) -> String {
    let mut text = e.to_string();
    if let Some(errno) = e.errno() {
        text.push_str(&format!(": {}", std::io::Error::from_raw_os_error(errno)));
    }
    text
}

fn open_counter(kind: EventKind, name: &str) -> Result<String, String> {
    perf::Event::open(
        name,
        &kind,
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .map(|_| format!("{name} opened"))
    .map_err(|e| errno_text(&e))
}

fn check_bpf() -> Result<String, String> {
    let mut loaded = bpf::Bpf::load().map_err(|e| crate::describe(&e))?;
    loaded
        .take_slot(bpf::SlotKind::Tracepoint, Default::default())
        .map_err(|e| crate::describe(&e))?;
    Ok("maps created, tracepoint program loaded".into())
}

/// Links tracer's own trampoline program (the one `tracer probe` uses for kernel functions:
/// arguments through `bpf_get_func_arg`, the slot through the link's cookie) to `vfs_read`,
/// stopped, then lets it go: what the kernel permits tracer, not only the attach type.
fn check_trampoline(exit: bool) -> Result<String, String> {
    let btf = crate::kernel::btf::KernelBtf::open().map_err(|e| crate::describe(&e))?;
    let id = (btf.vmlinux_function_id("vfs_read"))
        .map_err(|e| crate::describe(&e))?
        .ok_or("vmlinux's BTF has no vfs_read")?;
    let mut loaded = bpf::Bpf::load().map_err(|e| crate::describe(&e))?;
    let config = tracer_common::SlotConfig {
        flags: tracer_common::SLOT_STOPPED,
        ..Default::default()
    };
    loaded
        .take_function_slot(config, None, "vfs_read", id, exit)
        .map_err(|e| e.refusal())?;
    let kind = if exit { "fexit" } else { "fentry" };
    Ok(format!("tracer's {kind} program attached to vfs_read"))
}

fn check_btf() -> Result<String, String> {
    let path = Path::new("/sys/kernel/btf/vmlinux");
    std::fs::metadata(path)
        .map(|m| format!("{} ({} KiB)", path.display(), m.len() / 1024))
        .map_err(|_| {
            "the kernel exposes no /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF unset)".into()
        })
}

fn check_tracepoints() -> Result<String, String> {
    let fs = Tracefs::locate().map_err(|e| e.to_string())?;
    let id = fs
        .tracepoint_id("syscalls", "sys_enter_getppid")
        .or_else(|_| fs.tracepoint_id("sched", "sched_process_exec"))
        .map_err(|e| e.to_string())?;
    perf::Event::open(
        "tracepoint",
        &EventKind::Tracepoint(id),
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .map(|_| "tracepoint perf event opened".to_string())
    .map_err(|e| errno_text(&e))
}

/// Did the kernel get built without kprobes at all? (No PMU and no legacy interface.)
fn kprobes_compiled_out() -> bool {
    !Path::new(perf::pmu::SYSFS_PMUS).join("kprobe").exists()
        && !Tracefs::locate().is_ok_and(|fs| fs.has_kprobe_events())
}

fn check_kprobe_pmu() -> Result<String, String> {
    let pmu = perf::pmu::Pmus::default()
        .get("kprobe")
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            if kprobes_compiled_out() {
                "no kprobe PMU (kernel built without CONFIG_KPROBES)".to_string()
            } else {
                "no kprobe PMU in /sys/bus/event_source/devices".to_string()
            }
        })?;
    let retprobe = pmu.flag_bit("retprobe");
    let name = std::ffi::CString::new("vfs_read").expect("no NUL");
    let kind = EventKind::Kprobe {
        pmu_type: pmu.type_,
        target: KprobeTarget::Symbol { name, offset: 0 },
        retprobe_bit: None,
    };
    perf::Event::open(
        "kprobe:vfs_read",
        &kind,
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .map_err(|e| errno_text(&e))?;
    Ok(match retprobe {
        Some(bit) => format!("type {}, retprobe bit config:{bit}", pmu.type_),
        None => format!("type {}, no retprobe format bit", pmu.type_),
    })
}

fn check_uprobe_pmu() -> Result<String, String> {
    let pmu = perf::pmu::Pmus::default()
        .get("uprobe")
        .map_err(|e| e.to_string())?
        .ok_or("no uprobe PMU (kernel built without CONFIG_UPROBE_EVENTS)")?;
    let exe = std::fs::read_link("/proc/self/exe").map_err(|e| e.to_string())?;
    let offset = elf::entry_offset(&exe).map_err(|e| e.to_string())?;
    let path =
        std::ffi::CString::new(exe.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let kind = EventKind::Uprobe {
        pmu_type: pmu.type_,
        path,
        offset,
        retprobe_bit: None,
        ref_ctr: 0,
    };
    perf::Event::open(
        "uprobe:self",
        &kind,
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .map_err(|e| errno_text(&e))?;
    Ok(match pmu.flag_bit("retprobe") {
        Some(bit) => format!("type {}, retprobe bit config:{bit}", pmu.type_),
        None => format!("type {}", pmu.type_),
    })
}

fn check_kprobe_events() -> Result<String, String> {
    let fs = Tracefs::locate().map_err(|e| e.to_string())?;
    if fs.has_kprobe_events() {
        Ok(fs.root().join("kprobe_events").display().to_string())
    } else if kprobes_compiled_out() {
        Err("no kprobe_events in tracefs (kernel built without CONFIG_KPROBES)".into())
    } else {
        Err("no kprobe_events in tracefs (CONFIG_KPROBE_EVENTS unset)".into())
    }
}

/// A variable for the breakpoint check to watch.
static WATCHED: AtomicU64 = AtomicU64::new(0);

fn check_breakpoints() -> Result<String, String> {
    let kind = EventKind::Breakpoint {
        kind: BreakpointType::Write,
        addr: &WATCHED as *const AtomicU64 as u64,
        len: 8,
    };
    perf::Event::open(
        "mem:self/8:w",
        &kind,
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .map(|_| "write watchpoint opened".to_string())
    .map_err(|e| errno_text(&e))
}

/// Facts that are settings rather than features.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub release: String,
    pub perf_event_paranoid: Option<i32>,
    pub lockdown: String,
    pub cap_bpf: bool,
    pub cap_perfmon: bool,
    pub cap_sys_admin: bool,
}

pub fn settings() -> Settings {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let caps = caps::effective();
    Settings {
        release: read("/proc/sys/kernel/osrelease").unwrap_or_else(|_| "unknown".into()),
        perf_event_paranoid: read("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.parse().ok()),
        lockdown: read("/sys/kernel/security/lockdown")
            .map(|s| parse_lockdown(&s))
            .unwrap_or_else(|_| "unknown (securityfs not mounted or no lockdown LSM)".into()),
        cap_bpf: caps::has(caps, caps::CAP_BPF),
        cap_perfmon: caps::has(caps, caps::CAP_PERFMON),
        cap_sys_admin: caps::has(caps, caps::CAP_SYS_ADMIN),
    }
}

/// The bracketed, active mode of `/sys/kernel/security/lockdown` (`[none] integrity confidentiality`).
pub fn parse_lockdown(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or("unknown")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockdown_mode() {
        assert_eq!(parse_lockdown("[none] integrity confidentiality\n"), "none");
        assert_eq!(
            parse_lockdown("none [integrity] confidentiality"),
            "integrity"
        );
        assert_eq!(parse_lockdown(""), "unknown");
    }

    #[test]
    fn every_feature_has_a_distinct_label_and_a_consequence() {
        let mut labels: Vec<_> = Feature::ALL.iter().map(|f| f.label()).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), Feature::ALL.len());
        assert!(Feature::ALL.iter().all(|f| !f.consequence().is_empty()));
    }
}
