//! Where each CPU sits (socket, die, core, NUMA node, shared caches), read from sysfs the way
//! perf's `cpu_topology`/`aggr_cpu_id` reads it, for `--per-socket`, `--per-die`, `--per-core`,
//! `--per-node` and `--per-cache`.

use std::path::Path;

use crate::output::stat::TopoId;
use crate::plan::stat::Aggregation;

/// One CPU's place in the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuPlace {
    pub socket: u32,
    pub die: u32,
    pub core: u32,
    pub node: u32,
    /// Data and unified caches: (level, id), lowest level first.
    pub caches: Vec<(u8, u32)>,
}

fn number(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    let value: i64 = text.trim().parse().ok()?;
    // die_id is -1 on kernels and architectures without dies: perf prints die 0 then.
    Some(value.max(0) as u32)
}

/// Reads CPU `cpu`'s place under `root` (`/sys/devices/system` on a live machine).
pub fn read(root: &Path, cpu: u32) -> CpuPlace {
    let dir = root.join(format!("cpu/cpu{cpu}"));
    let topology = dir.join("topology");
    let node = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            name.to_str()?.strip_prefix("node")?.parse::<u32>().ok()
        })
        .min()
        .unwrap_or(0);
    let mut caches: Vec<(u8, u32)> = std::fs::read_dir(dir.join("cache"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("index"))
        })
        .filter_map(|e| {
            let kind = std::fs::read_to_string(e.path().join("type")).ok()?;
            if kind.trim() == "Instruction" {
                return None;
            }
            let level = number(&e.path().join("level"))? as u8;
            // Without an id file perf names a cache by its first CPU.
            let id = number(&e.path().join("id")).or_else(|| {
                let list = std::fs::read_to_string(e.path().join("shared_cpu_list")).ok()?;
                crate::perf::cpus::parse_list(list.trim())
                    .ok()?
                    .first()
                    .copied()
            })?;
            Some((level, id))
        })
        .collect();
    caches.sort_unstable();
    caches.dedup_by_key(|c| c.0);
    CpuPlace {
        socket: number(&topology.join("physical_package_id")).unwrap_or(0),
        die: number(&topology.join("die_id")).unwrap_or(0),
        core: number(&topology.join("core_id")).unwrap_or(cpu),
        node,
        caches,
    }
}

/// The live machine's places of `cpus`.
pub fn read_live(cpus: &[u32]) -> Vec<(u32, CpuPlace)> {
    let root = Path::new("/sys/devices/system");
    cpus.iter().map(|&c| (c, read(root, c))).collect()
}

/// The group a CPU's counts go to under `aggregation` (`None`: not a topology mode).
/// `--per-cache` without a level takes the CPU's last-level cache.
pub fn group(place: &CpuPlace, aggregation: Aggregation) -> Option<TopoId> {
    let (socket, die) = (place.socket, place.die);
    Some(match aggregation {
        Aggregation::PerSocket => TopoId::Socket(socket),
        Aggregation::PerDie => TopoId::Die { socket, die },
        Aggregation::PerCore => TopoId::Core {
            socket,
            die,
            core: place.core,
        },
        Aggregation::PerNode => TopoId::Node(place.node),
        Aggregation::PerCache(level) => {
            let cache = match level {
                Some(l) => place.caches.iter().find(|c| c.0 == l),
                None => place.caches.last(),
            };
            // A CPU without that cache is a group of its own, as perf's id -1.
            let (level, id) = cache.copied().unwrap_or((level.unwrap_or(0), u32::MAX));
            TopoId::Cache {
                socket,
                die,
                level,
                id,
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn sysfs_topology_is_read_like_perf() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (cpu, socket, core) in [(0, 0, 0), (1, 0, 1), (2, 1, 0)] {
            let t = format!("cpu/cpu{cpu}/topology");
            write(
                root,
                &format!("{t}/physical_package_id"),
                &format!("{socket}\n"),
            );
            write(root, &format!("{t}/die_id"), "-1\n");
            write(root, &format!("{t}/core_id"), &format!("{core}\n"));
            std::fs::create_dir_all(root.join(format!("cpu/cpu{cpu}/node{socket}"))).unwrap();
            let c = format!("cpu/cpu{cpu}/cache");
            for (i, level, kind, id) in [
                (0, 1, "Data", cpu),
                (1, 1, "Instruction", cpu),
                (2, 3, "Unified", socket),
            ] {
                write(root, &format!("{c}/index{i}/level"), &format!("{level}\n"));
                write(root, &format!("{c}/index{i}/type"), &format!("{kind}\n"));
                write(root, &format!("{c}/index{i}/id"), &format!("{id}\n"));
            }
        }
        let two = read(root, 2);
        assert_eq!(
            two,
            CpuPlace {
                socket: 1,
                die: 0,
                core: 0,
                node: 1,
                caches: vec![(1, 2), (3, 1)],
            }
        );
        assert_eq!(group(&two, Aggregation::PerSocket), Some(TopoId::Socket(1)));
        assert_eq!(
            group(&read(root, 1), Aggregation::PerCore),
            Some(TopoId::Core {
                socket: 0,
                die: 0,
                core: 1
            })
        );
        assert_eq!(
            group(&two, Aggregation::PerCache(None)),
            Some(TopoId::Cache {
                socket: 1,
                die: 0,
                level: 3,
                id: 1
            })
        );
        assert_eq!(
            group(&two, Aggregation::PerCache(Some(1))),
            Some(TopoId::Cache {
                socket: 1,
                die: 0,
                level: 1,
                id: 2
            })
        );
        assert_eq!(group(&two, Aggregation::PerCpu), None);
    }
}
