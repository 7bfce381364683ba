//! tracefs: where it is mounted and the ids of tracepoints.

use std::path::{Path, PathBuf};

use super::{read_text, Error};

/// A tracefs mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The mounted tracefs: `/sys/kernel/tracing`, or the debugfs path older systems use.
    pub fn locate() -> Result<Tracefs, Error> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        Tracefs::locate_in(&mounts, |dir| std::fs::metadata(dir).map(|m| m.is_dir()))
    }

    /// [`Tracefs::locate`] with the mount table's text and a way to ask whether a path is a
    /// directory (tests pass their own). A tracefs this user may not look into (its root is
    /// mode 0700 by default) is [`Error::TracefsDenied`], not a missing one.
    pub fn locate_in(
        mounts: &str,
        is_dir: impl Fn(&Path) -> std::io::Result<bool>,
    ) -> Result<Tracefs, Error> {
        let from_mounts = mounts.lines().filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, dir, fstype) = (fields.next()?, fields.next()?, fields.next()?);
            (fstype == "tracefs").then(|| PathBuf::from(dir))
        });
        let mut denied = None;
        for root in from_mounts
            .chain(["/sys/kernel/tracing", "/sys/kernel/debug/tracing"].map(PathBuf::from))
        {
            match is_dir(&root.join("events")) {
                Ok(true) => return Ok(Tracefs { root }),
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    denied.get_or_insert(root);
                }
                _ => {}
            }
        }
        match denied {
            Some(root) => Err(Error::TracefsDenied {
                path: root.display().to_string(),
            }),
            None => Err(Error::NoTracefs),
        }
    }

    /// A tracefs tree at `root` (a fixture in tests).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The id of `category:name` for `PERF_TYPE_TRACEPOINT` (`events/CAT/NAME/id`).
    pub fn tracepoint_id(&self, category: &str, name: &str) -> Result<u64, Error> {
        let bad = category.contains(['/', '.']) || name.contains(['/', '.']) || category.is_empty();
        let path = self
            .root
            .join("events")
            .join(category)
            .join(name)
            .join("id");
        if bad || !path.exists() {
            return Err(Error::NoTracepoint {
                category: category.to_string(),
                name: name.to_string(),
            });
        }
        let text = read_text(&path)?;
        text.trim().parse().map_err(|_| Error::Parse {
            path: path.display().to_string(),
            reason: format!("{:?} is not a number", text.trim()),
        })
    }

    /// Does the legacy `kprobe_events` interface exist?
    pub fn has_kprobe_events(&self) -> bool {
        self.root.join("kprobe_events").exists()
    }

    /// The parsed `events/CAT/NAME/format` of a tracepoint.
    pub fn format(&self, category: &str, name: &str) -> Result<super::format::Format, Error> {
        self.tracepoint_id(category, name)?;
        let path = self
            .root
            .join("events")
            .join(category)
            .join(name)
            .join("format");
        let text = read_text(&path)?;
        let mut format = super::format::parse(&text).map_err(|e| Error::Parse {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        if !format.enumerated.is_empty() {
            format.resolve_enumerators(super::btf::enumerator);
        }
        Ok(format)
    }

    /// Every tracepoint as (category, name), sorted.
    pub fn tracepoints(&self) -> Vec<(String, String)> {
        let mut all = self.tracepoints_in_directory_order();
        all.sort();
        all
    }

    /// Every tracepoint as (category, name) in the order readdir(3) gives them: the order
    /// perf stat expands a glob in (`parse_events_add_tracepoint_multi_sys`).
    pub fn tracepoints_in_directory_order(&self) -> Vec<(String, String)> {
        let mut all = Vec::new();
        let Ok(categories) = std::fs::read_dir(self.root.join("events")) else {
            return all;
        };
        for category in categories.flatten().filter(|e| e.path().is_dir()) {
            let Ok(events) = std::fs::read_dir(category.path()) else {
                continue;
            };
            for event in events.flatten() {
                if event.path().join("id").exists() {
                    all.push((
                        category.file_name().to_string_lossy().into_owned(),
                        event.file_name().to_string_lossy().into_owned(),
                    ));
                }
            }
        }
        all
    }

    /// Kernel functions that can be probed (`available_filter_functions`: name, then the
    /// module in brackets for module functions), sorted and deduplicated. Empty when the
    /// kernel has no function tracer.
    pub fn traceable_functions(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.root.join("available_filter_functions"))
            .unwrap_or_default();
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| !n.starts_with("__ftrace_invalid_address__"))
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tracepoint_ids_from_a_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let tp = dir.path().join("events/syscalls/sys_enter_openat");
        std::fs::create_dir_all(&tp).unwrap();
        std::fs::write(tp.join("id"), "642\n").unwrap();
        let fs = Tracefs::at(dir.path());
        assert_eq!(
            fs.tracepoint_id("syscalls", "sys_enter_openat").unwrap(),
            642
        );
        assert!(matches!(
            fs.tracepoint_id("syscalls", "sys_enter_nope"),
            Err(Error::NoTracepoint { .. })
        ));
        assert!(fs.tracepoint_id("..", "x").is_err());
        assert!(!fs.has_kprobe_events());
    }

    #[test]
    fn a_tracefs_this_user_cannot_enter_is_denied_not_missing() {
        use std::io::{Error as Io, ErrorKind};
        let mounts = "sysfs /sys sysfs rw 0 0\nnodev /mnt/trace tracefs rw 0 0\n";
        let denied = |p: &Path| match p.starts_with("/mnt/trace") {
            true => Err(Io::from(ErrorKind::PermissionDenied)),
            false => Err(Io::from(ErrorKind::NotFound)),
        };
        let err = Tracefs::locate_in(mounts, denied).unwrap_err();
        assert_eq!(
            err.to_string(),
            "permission denied: this user cannot read tracefs at /mnt/trace"
        );
        assert_eq!(
            err.hints()[0],
            "run tracer as root (sudo): tracefs is root's alone by default (mode 0700)"
        );
        // Denied at the mount, found at a default path: the readable one is used.
        let found = |p: &Path| match p.starts_with("/sys/kernel/tracing") {
            true => Ok(true),
            false => Err(Io::from(ErrorKind::PermissionDenied)),
        };
        assert_eq!(
            Tracefs::locate_in(mounts, found).unwrap().root(),
            Path::new("/sys/kernel/tracing")
        );
        let missing = |_: &Path| Err(Io::from(ErrorKind::NotFound));
        assert!(matches!(
            Tracefs::locate_in("", missing),
            Err(Error::NoTracefs)
        ));
    }
}
