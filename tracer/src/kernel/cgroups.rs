//! Cgroup v2 identity: a cgroup id (what `bpf_get_current_cgroup_id` returns, the inode number
//! of the cgroup's directory on the cgroup2 mount) as its path, and the container and pod that
//! path names, by the layouts container managers give their cgroups:
//!
//! | manager | container | pod |
//! |---|---|---|
//! | Docker | `/docker/ID` (cgroupfs driver), `/system.slice/docker-ID.scope` (systemd driver) | |
//! | containerd (CRI) | `.../cri-containerd-ID.scope`, `/kubepods/.../podUID/ID` | |
//! | CRI-O | `.../crio-ID.scope` (its `crio-conmon-ID.scope` is the monitor, not the container) | |
//! | Podman | `.../libpod-ID.scope`, `/libpod_parent/libpod-ID` | |
//! | Kubernetes | | `kubepods[-QOS]-podUID.slice` (`_` for `-` in the UID), `/kubepods/[QOS/]podUID` |
//!
//! ID is 64 hex digits; the innermost component that names one is the container (a container
//! running systemd has cgroups of its own below its scope).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hashbrown::HashMap;

/// A cgroup as tracer shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    /// From the cgroup2 root, as /proc/PID/cgroup writes it (`/system.slice/cron.service`);
    /// the id in decimal when the cgroup is gone (removed before it was looked up).
    pub path: String,
    /// The container's 64-hex-digit id, when the path names one.
    pub container: Option<String>,
    /// The Kubernetes pod's UID, when the path names one.
    pub pod: Option<String>,
}

impl Identity {
    /// The identity of a cgroup at `path` (from the cgroup2 root).
    pub fn of_path(path: &str) -> Identity {
        Identity {
            path: path.to_string(),
            container: container_of(path),
            pod: pod_of(path),
        }
    }
}

/// Where the cgroup2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
/// hybrid systemd machine), from /proc/self/mountinfo.
pub fn mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (fields, rest) = line.split_once(" - ")?;
        let mount_point = fields.split(' ').nth(4)?;
        (rest.split(' ').next()? == "cgroup2").then(|| PathBuf::from(mount_point))
    })
}

/// The identity of cgroup `id`, looked up in a cache of the hierarchy that is read again (at
/// most once a second) when an id is not in it.
pub fn identity(id: u64) -> Identity {
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(Cache::default);
    if let Some(found) = cache.paths.get(&id) {
        return found.clone();
    }
    if cache
        .read
        .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
    {
        cache.read = Some(Instant::now());
        if let Some(root) = mount() {
            cache.paths.clear();
            walk(&root, &root, &mut |id, path| {
                cache.paths.insert(id, Identity::of_path(path));
            });
        }
    }
    (cache.paths.get(&id).cloned()).unwrap_or_else(|| Identity {
        path: id.to_string(),
        ..Identity::default()
    })
}

#[derive(Default)]
struct Cache {
    paths: HashMap<u64, Identity>,
    read: Option<Instant>,
}

/// Calls `found(id, path from the root)` for `dir` and every cgroup below it.
fn walk(root: &Path, dir: &Path, found: &mut impl FnMut(u64, &str)) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    let relative = dir.strip_prefix(root).unwrap_or(dir);
    found(meta.ino(), &format!("/{}", relative.display()));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &entry.path(), found);
        }
    }
}

/// The cgroup directories (absolute paths) of the containers whose id starts with `prefix`.
pub fn containers(prefix: &str) -> Vec<PathBuf> {
    let Some(root) = mount() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&root, &root, &mut |_, path| {
        // The container's own cgroup: the innermost that names it, not its children.
        let own = path.rsplit('/').next().and_then(container_in);
        if own.is_some_and(|id| id.starts_with(prefix)) {
            out.push(root.join(path.trim_start_matches('/')));
        }
    });
    out
}

/// The container id a cgroup path names: its innermost component that does.
pub fn container_of(path: &str) -> Option<String> {
    path.rsplit('/').find_map(container_in).map(str::to_string)
}

/// The container id one path component names: `ID`, or `PREFIX-ID` of a runtime, with a
/// `.scope` suffix under systemd.
fn container_in(component: &str) -> Option<&str> {
    let name = component.strip_suffix(".scope").unwrap_or(component);
    let id = [
        "docker-",
        "cri-containerd-",
        "crio-",
        "libpod-",
        "containerd-",
    ]
    .iter()
    .find_map(|prefix| name.strip_prefix(prefix))
    .unwrap_or(name);
    (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// The Kubernetes pod UID a cgroup path names: `podUID` (cgroupfs driver) or
/// `kubepods[-QOS]-podUID.slice` with `_` for each `-` of the UID (systemd driver).
pub fn pod_of(path: &str) -> Option<String> {
    path.rsplit('/').find_map(|component| {
        let name = component.strip_suffix(".slice").unwrap_or(component);
        let uid = match name.strip_prefix("pod") {
            Some(uid) => uid,
            None if name.starts_with("kubepods") => name.rsplit_once("-pod")?.1,
            None => return None,
        };
        let uid = uid.replace('_', "-");
        let uuid = uid.len() == 36
            && (uid.char_indices()).all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit(),
            });
        uuid.then_some(uid)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1d3c2b1a0918273645546372819a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f";
    const UID: &str = "0d9c1e6a-3b2f-4c5d-8e7f-112233445566";

    #[test]
    fn containers_are_named_in_every_runtime_layout() {
        let uid_ = UID.replace('-', "_");
        for path in [
            format!("/docker/{ID}"),
            format!("/system.slice/docker-{ID}.scope"),
            format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"),
            format!("/kubepods/burstable/pod{UID}/{ID}"),
            format!("/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"),
            format!("/machine.slice/libpod-{ID}.scope"),
            format!("/libpod_parent/libpod-{ID}"),
            // systemd inside the container: its own cgroups below the scope.
            format!("/system.slice/docker-{ID}.scope/init.scope"),
        ] {
            assert_eq!(container_of(&path).as_deref(), Some(ID), "{path}");
        }
        for path in [
            "/",
            "/user.slice/user-0.slice/session-1.scope",
            "/system.slice/docker.service",
            &format!("/machine.slice/libpod-conmon-{ID}.scope"),
            &format!("/kubepods.slice/kubepods-pod{uid_}.slice/crio-conmon-{ID}.scope"),
            &format!("/docker/{}", &ID[..63]),
        ] {
            assert_eq!(container_of(path), None, "{path}");
        }
    }

    #[test]
    fn pods_are_named_by_either_cgroup_driver() {
        let uid_ = UID.replace('-', "_");
        for path in [
            format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"),
            format!("/kubepods.slice/kubepods-pod{uid_}.slice"),
            format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice"),
            format!("/kubepods/burstable/pod{UID}/{ID}"),
            format!("/kubepods/pod{UID}"),
        ] {
            assert_eq!(pod_of(&path).as_deref(), Some(UID), "{path}");
        }
        for path in [
            "/",
            "/kubepods.slice",
            "/kubepods/burstable",
            "/podman/pod123",
            &format!("/docker/{ID}"),
        ] {
            assert_eq!(pod_of(path), None, "{path}");
        }
    }
}
