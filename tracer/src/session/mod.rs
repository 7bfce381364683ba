//! One lifecycle for every command: launch or adopt the target, attach, run the event loop,
//! stop, drain, and say why the run ended. Also what a run owns: the attached events (closing
//! them detaches) and the output rings, drained with every loss counted.

mod event_loop;
pub mod exporter;
mod lifecycle;
pub mod recorder;
mod rings;
pub mod side;

pub use crate::probe::Attached;
pub use event_loop::{monotonic_ns, readable, wall_offset_ns, EventLoop, RunEnd, Signals, Sink};
pub use lifecycle::{alive, guard_tree, Hold, Outcome, Session, TreeGuard};
pub use rings::{quarter_full, ringbuf_size, Batch, Losses, OutputRings, Transport};

/// The machine the plans ask about: this one, read when a plan asks.
pub struct ThisMachine;

impl crate::plan::Machine for ThisMachine {
    fn online_cpus(&self) -> usize {
        crate::perf::cpus::online().map_or(1, |c| c.len().max(1))
    }

    fn cpu_online(&self, cpu: u32) -> bool {
        // Unreadable: say yes, and let the kernel decide.
        crate::perf::cpus::online().map_or(true, |c| c.contains(&cpu))
    }

    fn online_cpus_text(&self) -> String {
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
    }

    fn cgroup_id(&self, dir: &std::path::Path) -> Option<u64> {
        use std::os::unix::fs::MetadataExt;
        // A cgroup v2 id is the inode number of its directory (bpf_get_current_cgroup_id).
        let meta = std::fs::metadata(dir).ok()?;
        meta.is_dir().then(|| meta.ino())
    }

    fn container_cgroups(&self, prefix: &str) -> Vec<std::path::PathBuf> {
        crate::kernel::cgroups::containers(prefix)
    }

    fn task(&self, id: u32) -> crate::plan::Task {
        use crate::plan::Task;
        // /proc/ID answers for a thread id too, though only processes are listed.
        match std::fs::read_to_string(format!("/proc/{id}/status")) {
            Ok(status) => {
                let field = |name: &str| {
                    (status.lines())
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::trim)
                };
                match field("State:").and_then(|s| s.chars().next()) {
                    Some('Z' | 'X') => Task::Exited,
                    _ => Task::Live {
                        tgid: field("Tgid:").and_then(|t| t.parse().ok()),
                    },
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Task::Missing,
            // Hidden (`hidepid`) or unreadable: it exists, whose it is is unknown.
            Err(_) => Task::Live { tgid: None },
        }
    }

    fn pid_max(&self) -> u32 {
        // PID_MAX_LIMIT on 64-bit kernels, when the sysctl cannot be read.
        std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(4 << 20)
    }
}
