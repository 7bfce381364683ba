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
        let from_mounts = mounts.lines().filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, dir, fstype) = (fields.next()?, fields.next()?, fields.next()?);
            (fstype == "tracefs").then(|| PathBuf::from(dir))
        });
        from_mounts
            .chain(["/sys/kernel/tracing", "/sys/kernel/debug/tracing"].map(PathBuf::from))
            .find(|dir| dir.join("events").is_dir())
            .map(|root| Tracefs { root })
            .ok_or(Error::NoTracefs)
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
}
