//! `tracer stat record`'s file: what a report needs to be printed again (`tracer stat
//! report`), as one versioned JSON object: the counters as printed, the places they were read
//! on, the CPUs' topology, and each run's raw readings. perf stat record writes perf.data;
//! this is tracer's own format, not perf's.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::topology::CpuPlace;
use super::{Counter, Place};
use crate::output::stat::{Reading, Role, Slot};
use crate::perf::attr::Software;
use crate::perf::EventKind;
use crate::Error;

pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Debug)]
pub struct SavedCounter {
    pub name: String,
    pub unit: String,
    pub scale: f64,
    pub role: String,
    pub context: u8,
    pub cgroup: Option<String>,
}

/// Where a set of readings was taken.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(rename_all = "snake_case")]
pub enum SavedPlace {
    Task { tid: u32 },
    Thread { comm: String, tid: u32 },
    Cpu { cpu: u32 },
}

#[derive(Serialize, Deserialize, Debug)]
pub struct SavedCpu {
    pub cpu: u32,
    pub socket: u32,
    pub die: u32,
    pub core: u32,
    pub node: u32,
    pub caches: Vec<(u8, u32)>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct SavedRun {
    pub elapsed_ns: u64,
    /// The command's user and system seconds.
    pub rusage: Option<(f64, f64)>,
    pub supported: Vec<bool>,
    /// Per counter and place: `[value, enabled, running]`, or null where not opened.
    pub readings: Vec<Vec<Option<[u64; 3]>>>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Saved {
    pub version: u32,
    pub title: String,
    /// A command was counted (the footer's user and system lines).
    pub command: bool,
    pub counters: Vec<SavedCounter>,
    pub places: Vec<SavedPlace>,
    pub topology: Vec<SavedCpu>,
    pub runs: Vec<SavedRun>,
}

fn role_name(role: Role) -> String {
    match role {
        Role::Clock => "clock".into(),
        Role::Cycles => "cycles".into(),
        Role::Instructions => "instructions".into(),
        Role::Branches => "branches".into(),
        Role::BranchMisses => "branch-misses".into(),
        Role::CacheReferences => "cache-references".into(),
        Role::CacheMisses => "cache-misses".into(),
        Role::StalledFrontend => "stalled-frontend".into(),
        Role::StalledBackend => "stalled-backend".into(),
        Role::CacheLoads(id) => format!("cache-loads:{id}"),
        Role::CacheLoadMisses(id) => format!("cache-load-misses:{id}"),
        Role::Other => "other".into(),
    }
}

fn role_of(name: &str) -> Role {
    let cache = |prefix: &str| name.strip_prefix(prefix).and_then(|id| id.parse().ok());
    match name {
        "clock" => Role::Clock,
        "cycles" => Role::Cycles,
        "instructions" => Role::Instructions,
        "branches" => Role::Branches,
        "branch-misses" => Role::BranchMisses,
        "cache-references" => Role::CacheReferences,
        "cache-misses" => Role::CacheMisses,
        "stalled-frontend" => Role::StalledFrontend,
        "stalled-backend" => Role::StalledBackend,
        _ => match (cache("cache-loads:"), cache("cache-load-misses:")) {
            (Some(id), _) => Role::CacheLoads(id),
            (_, Some(id)) => Role::CacheLoadMisses(id),
            _ => Role::Other,
        },
    }
}

impl Saved {
    pub fn new(
        title: &str,
        command: bool,
        counters: &[Counter],
        places: &[(Place, Slot)],
        topology: &[(u32, CpuPlace)],
    ) -> Saved {
        Saved {
            version: VERSION,
            title: title.to_string(),
            command,
            counters: (counters.iter())
                .map(|c| SavedCounter {
                    name: c.name.clone(),
                    unit: c.unit.clone(),
                    scale: c.scale,
                    role: role_name(c.role),
                    context: c.context,
                    cgroup: c.cgroup_name.clone(),
                })
                .collect(),
            places: (places.iter())
                .map(|(place, slot)| match (place, slot) {
                    (Place::Cpu(cpu), _) => SavedPlace::Cpu { cpu: *cpu },
                    (Place::Task(_), Slot::Thread { comm, tid }) => SavedPlace::Thread {
                        comm: comm.clone(),
                        tid: *tid,
                    },
                    (Place::Task(tid), _) => SavedPlace::Task { tid: *tid },
                })
                .collect(),
            topology: (topology.iter())
                .map(|(cpu, p)| SavedCpu {
                    cpu: *cpu,
                    socket: p.socket,
                    die: p.die,
                    core: p.core,
                    node: p.node,
                    caches: p.caches.clone(),
                })
                .collect(),
            runs: Vec::new(),
        }
    }

    pub fn push_run(
        &mut self,
        elapsed_ns: u64,
        rusage: Option<(f64, f64)>,
        supported: &[bool],
        readings: &[Vec<Option<Reading>>],
    ) {
        self.runs.push(SavedRun {
            elapsed_ns,
            rusage,
            supported: supported.to_vec(),
            readings: (readings.iter())
                .map(|per_place| {
                    (per_place.iter())
                        .map(|r| r.map(|r| [r.value, r.enabled, r.running]))
                        .collect()
                })
                .collect(),
        });
    }

    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let text = serde_json::to_string(self).map_err(|e| Error::Runtime {
            message: format!("cannot encode the counts: {e}"),
            hints: Vec::new(),
        })?;
        crate::output::write_file(path, (text + "\n").as_bytes())
    }

    pub fn read(path: &Path) -> Result<Saved, Error> {
        let hint = || {
            vec![format!(
                "{} must be a file `tracer stat record -o FILE` wrote",
                path.display()
            )]
        };
        let text = std::fs::read_to_string(path).map_err(|e| Error::Runtime {
            message: format!("cannot read {}: {e}", path.display()),
            hints: hint(),
        })?;
        let saved: Saved = serde_json::from_str(&text).map_err(|e| Error::Runtime {
            message: format!("{} is not a tracer stat recording: {e}", path.display()),
            hints: hint(),
        })?;
        if saved.version != VERSION {
            return Err(Error::Runtime {
                message: format!(
                    "{} is a version {} recording; this tracer reads version {VERSION}",
                    path.display(),
                    saved.version
                ),
                hints: vec!["report it with the tracer that recorded it".into()],
            });
        }
        let (counters, places) = (saved.counters.len(), saved.places.len());
        let consistent = saved.runs.iter().all(|r| {
            r.supported.len() == counters
                && r.readings.len() == counters
                && r.readings.iter().all(|p| p.len() == places)
        });
        if !consistent {
            return Err(Error::Runtime {
                message: format!("{} has runs that do not match its counters", path.display()),
                hints: hint(),
            });
        }
        Ok(saved)
    }

    /// The counters as the tally layer takes them (never opened again).
    pub fn counters(&self) -> Vec<Counter> {
        (self.counters.iter())
            .map(|c| Counter {
                name: c.name.clone(),
                kind: EventKind::Software(Software::Dummy),
                flags: 0,
                precise: 0,
                group: None,
                role: role_of(&c.role),
                context: c.context,
                unit: c.unit.clone(),
                scale: c.scale,
                cgroup: None,
                cgroup_name: c.cgroup.clone(),
                tool: None,
            })
            .collect()
    }

    pub fn places(&self) -> Vec<(Place, Slot)> {
        (self.places.iter())
            .map(|p| match p {
                SavedPlace::Cpu { cpu } => (Place::Cpu(*cpu), Slot::Cpu(*cpu)),
                SavedPlace::Task { tid } => (Place::Task(*tid), Slot::Global),
                SavedPlace::Thread { comm, tid } => (
                    Place::Task(*tid),
                    Slot::Thread {
                        comm: comm.clone(),
                        tid: *tid,
                    },
                ),
            })
            .collect()
    }

    pub fn topology(&self) -> Vec<(u32, CpuPlace)> {
        (self.topology.iter())
            .map(|c| {
                (
                    c.cpu,
                    CpuPlace {
                        socket: c.socket,
                        die: c.die,
                        core: c.core,
                        node: c.node,
                        caches: c.caches.clone(),
                    },
                )
            })
            .collect()
    }
}

impl SavedRun {
    pub fn readings(&self) -> Vec<Vec<Option<Reading>>> {
        (self.readings.iter())
            .map(|per_place| {
                (per_place.iter())
                    .map(|r| {
                        r.map(|[value, enabled, running]| Reading {
                            value,
                            enabled,
                            running,
                        })
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_survive_the_file() {
        for role in [
            Role::Clock,
            Role::CacheLoads(3),
            Role::CacheLoadMisses(0),
            Role::BranchMisses,
            Role::Other,
        ] {
            assert_eq!(role_of(&role_name(role)), role);
        }
    }
}
