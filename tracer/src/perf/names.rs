//! Event names as perf(1) and perf-stat(1) spell them.

use super::attr::{Hardware, Software};

/// Software events, with perf's aliases.
pub const SOFTWARE: &[(&str, Software)] = &[
    ("cpu-clock", Software::CpuClock),
    ("task-clock", Software::TaskClock),
    ("page-faults", Software::PageFaults),
    ("faults", Software::PageFaults),
    ("context-switches", Software::ContextSwitches),
    ("cs", Software::ContextSwitches),
    ("cpu-migrations", Software::CpuMigrations),
    ("migrations", Software::CpuMigrations),
    ("minor-faults", Software::PageFaultsMin),
    ("major-faults", Software::PageFaultsMaj),
    ("alignment-faults", Software::AlignmentFaults),
    ("emulation-faults", Software::EmulationFaults),
    ("dummy", Software::Dummy),
    ("bpf-output", Software::BpfOutput),
    ("cgroup-switches", Software::CgroupSwitches),
];

/// Generalized hardware events, with perf's aliases.
pub const HARDWARE: &[(&str, Hardware)] = &[
    ("cpu-cycles", Hardware::CpuCycles),
    ("cycles", Hardware::CpuCycles),
    ("instructions", Hardware::Instructions),
    ("cache-references", Hardware::CacheReferences),
    ("cache-misses", Hardware::CacheMisses),
    ("branch-instructions", Hardware::BranchInstructions),
    ("branches", Hardware::BranchInstructions),
    ("branch-misses", Hardware::BranchMisses),
    ("bus-cycles", Hardware::BusCycles),
    ("stalled-cycles-frontend", Hardware::StalledCyclesFrontend),
    ("idle-cycles-frontend", Hardware::StalledCyclesFrontend),
    ("stalled-cycles-backend", Hardware::StalledCyclesBackend),
    ("idle-cycles-backend", Hardware::StalledCyclesBackend),
    ("ref-cycles", Hardware::RefCpuCycles),
];

pub fn software(name: &str) -> Option<Software> {
    SOFTWARE.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
}

pub fn hardware(name: &str) -> Option<Hardware> {
    HARDWARE.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_has_a_name_and_aliases_agree() {
        assert_eq!(software("cs"), software("context-switches"));
        assert_eq!(hardware("cycles"), Some(Hardware::CpuCycles));
        assert_eq!(software("nope"), None);
        for sw in [
            Software::CpuClock,
            Software::TaskClock,
            Software::PageFaults,
            Software::ContextSwitches,
            Software::CpuMigrations,
            Software::PageFaultsMin,
            Software::PageFaultsMaj,
            Software::AlignmentFaults,
            Software::EmulationFaults,
            Software::Dummy,
            Software::BpfOutput,
            Software::CgroupSwitches,
        ] {
            assert!(SOFTWARE.iter().any(|(_, e)| *e == sw), "{sw:?}");
        }
    }
}
