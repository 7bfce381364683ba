//! Legacy kprobes through tracefs `kprobe_events`, for kernels with kprobes but no kprobe PMU.
//! Each probe gets a unique name in tracer's own group and is removed when dropped.

use std::io::Write;

use super::tracefs::Tracefs;
use super::Error;

/// The kernel interface for kprobes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KprobeInterface {
    /// perf_event_open on the kprobe PMU.
    Pmu,
    /// Legacy tracefs kprobe_events.
    Tracefs,
    /// BPF trampolines: fentry at a function's entry, fexit at its return (no kprobe
    /// fallback; the default uses them where the kernel permits, kprobes otherwise).
    Fentry,
}

/// The tracefs event group tracer's legacy probes live in.
pub const GROUP: &str = "tracer";

/// A kprobe created in `kprobe_events`; dropping it removes it.
#[derive(Debug)]
pub struct LegacyKprobe {
    fs: Tracefs,
    event: String,
    /// The tracepoint id to open with `PERF_TYPE_TRACEPOINT`.
    pub id: u64,
}

fn append(fs: &Tracefs, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(fs.root().join("kprobe_events"))?;
    file.write_all(format!("{line}\n").as_bytes())
}

impl LegacyKprobe {
    /// Creates `p:tracer/NAME FUNC+OFF` (or `r:` for a return probe). `NAME` is unique per
    /// process and index: `k<pid>_<index>`.
    pub fn create(
        fs: &Tracefs,
        function: &str,
        offset: u64,
        ret: bool,
        index: usize,
    ) -> Result<LegacyKprobe, Error> {
        let event = format!("k{}_{index}", std::process::id());
        let kind = if ret { 'r' } else { 'p' };
        let line = format!("{kind}:{GROUP}/{event} {function}+{offset}");
        append(fs, &line).map_err(|source| Error::Read {
            path: format!(
                "{} (writing '{line}')",
                fs.root().join("kprobe_events").display()
            ),
            source,
        })?;
        // Built before the id lookup, so that a failure below still removes the probe.
        let mut probe = LegacyKprobe {
            fs: fs.clone(),
            event,
            id: 0,
        };
        probe.id = fs.tracepoint_id(GROUP, &probe.event)?;
        Ok(probe)
    }

    /// Removes probes of tracer processes that are gone (a run killed with SIGKILL cannot clean
    /// up after itself); returns how many were removed.
    pub fn remove_stale(fs: &Tracefs) -> usize {
        let Ok(entries) = std::fs::read_dir(fs.root().join("events").join(GROUP)) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix('k')
                .and_then(|r| r.split('_').next())
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid {
                if !std::path::Path::new(&format!("/proc/{pid}")).exists()
                    && append(fs, &format!("-:{GROUP}/{name}")).is_ok()
                {
                    removed += 1;
                }
            }
        }
        removed
    }
}

impl Drop for LegacyKprobe {
    fn drop(&mut self) {
        // The perf event using it must be closed first (it is: the attachment is dropped
        // before this guard); a failure here leaves a probe `remove_stale` cleans up later.
        let _ = append(&self.fs, &format!("-:{GROUP}/{}", self.event));
    }
}
