//! perf's metric and metric group names for the running CPU, so that `tracer stat -M NAME`
//! tells a metric perf has for this CPU from a name no table has.
//!
//! perf builds its metrics from JSON tables per CPU model (`tools/perf/pmu-events/arch`),
//! chosen by the CPUID string through `mapfile.csv`. tracer carries the names of one of them,
//! the table perf 6.1 picks on the machine the CLI tests run on (AMD family 19h: `amdzen3`),
//! with the events each metric's expression reads, as `perf list --details metrics` prints
//! them. It carries no event encodings and no expressions, so it computes none of these
//! metrics; it says which CPU events they need, and that this machine has them or not.

/// One metric of a table.
#[derive(Debug, PartialEq, Eq)]
pub struct TableMetric {
    pub name: &'static str,
    /// perf's `MetricGroup`.
    pub group: &'static str,
    /// The events its expression reads (CPU events of the table, not generic ones).
    pub events: &'static [&'static str],
}

/// One CPU's table.
#[derive(Debug, PartialEq, Eq)]
pub struct Table {
    /// perf's directory name (`arch/x86/amdzen3`).
    pub name: &'static str,
    pub metrics: &'static [TableMetric],
}

/// The running CPU as perf's `mapfile.csv` tells CPUs apart (x86: vendor and family).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuId {
    pub vendor: String,
    pub family: u32,
}

/// perf 6.1's `arch/x86/amdzen3` metrics (`recommended.json`), as `perf list --details
/// metrics` prints them on an AMD family 19h CPU.
const AMDZEN3: Table = Table {
    name: "amdzen3",
    metrics: &[
        TableMetric {
            name: "all_l2_cache_accesses",
            group: "l2_cache",
            events: &[
                "l2_request_g1.all_no_prefetch",
                "l2_pf_hit_l2",
                "l2_pf_miss_l2_hit_l3",
                "l2_pf_miss_l2_l3",
            ],
        },
        TableMetric {
            name: "all_l2_cache_hits",
            group: "l2_cache",
            events: &["l2_cache_req_stat.ic_dc_hit_in_l2", "l2_pf_hit_l2"],
        },
        TableMetric {
            name: "all_l2_cache_misses",
            group: "l2_cache",
            events: &[
                "l2_cache_req_stat.ic_dc_miss_in_l2",
                "l2_pf_miss_l2_hit_l3",
                "l2_pf_miss_l2_l3",
            ],
        },
        TableMetric {
            name: "all_remote_links_outbound",
            group: "data_fabric",
            events: &[
                "remote_outbound_data_controller_0",
                "remote_outbound_data_controller_1",
                "remote_outbound_data_controller_2",
                "remote_outbound_data_controller_3",
            ],
        },
        TableMetric {
            name: "branch_misprediction_ratio",
            group: "branch_prediction",
            events: &["ex_ret_brn_misp", "ex_ret_brn"],
        },
        TableMetric {
            name: "ic_fetch_miss_ratio",
            group: "l2_cache",
            events: &[
                "ic_tag_hit_miss.instruction_cache_miss",
                "ic_tag_hit_miss.all_instruction_cache_accesses",
            ],
        },
        TableMetric {
            name: "l1_itlb_misses",
            group: "tlb",
            events: &["bp_l1_tlb_miss_l2_tlb_hit", "bp_l1_tlb_miss_l2_tlb_miss"],
        },
        TableMetric {
            name: "l2_cache_accesses_from_l2_hwpf",
            group: "l2_cache",
            events: &["l2_pf_hit_l2", "l2_pf_miss_l2_hit_l3", "l2_pf_miss_l2_l3"],
        },
        TableMetric {
            name: "l2_cache_misses_from_l2_hwpf",
            group: "l2_cache",
            events: &["l2_pf_miss_l2_hit_l3", "l2_pf_miss_l2_l3"],
        },
        TableMetric {
            name: "l3_read_miss_latency",
            group: "l3_cache",
            events: &["xi_sys_fill_latency", "xi_ccx_sdp_req1"],
        },
        TableMetric {
            name: "macro_ops_dispatched",
            group: "decoder",
            events: &[
                "de_dis_cops_from_decoder.disp_op_type.any_integer_dispatch",
                "de_dis_cops_from_decoder.disp_op_type.any_fp_dispatch",
            ],
        },
        TableMetric {
            name: "nps1_die_to_dram",
            group: "data_fabric",
            events: &[
                "dram_channel_data_controller_0",
                "dram_channel_data_controller_1",
                "dram_channel_data_controller_2",
                "dram_channel_data_controller_3",
                "dram_channel_data_controller_4",
                "dram_channel_data_controller_5",
                "dram_channel_data_controller_6",
                "dram_channel_data_controller_7",
            ],
        },
        TableMetric {
            name: "op_cache_fetch_miss_ratio",
            group: "l2_cache",
            events: &[
                "op_cache_hit_miss.op_cache_miss",
                "op_cache_hit_miss.all_op_cache_accesses",
            ],
        },
    ],
};

/// The table perf 6.1 picks for a CPU, among those tracer carries: `mapfile.csv`'s
/// `AuthenticAMD-25-[[:xdigit:]]+` is `amdzen3`.
pub fn table_for(cpu: &CpuId) -> Option<&'static Table> {
    match (cpu.vendor.as_str(), cpu.family) {
        ("AuthenticAMD", 25) => Some(&AMDZEN3),
        _ => None,
    }
}

impl Table {
    /// The metrics `-M name` selects: a metric, a group's metrics, or `all`, named without
    /// regard to case (perf's `match_metric`). Empty when the table has no such name.
    pub fn lookup(&self, name: &str) -> Vec<&'static TableMetric> {
        let metrics: &'static [TableMetric] = self.metrics;
        (metrics.iter())
            .filter(|m| {
                name.eq_ignore_ascii_case("all")
                    || m.name.eq_ignore_ascii_case(name)
                    || m.group.eq_ignore_ascii_case(name)
            })
            .collect()
    }

    /// The groups of the table, sorted and once each (`perf list metricgroups`).
    pub fn groups(&self) -> Vec<&'static str> {
        let metrics: &'static [TableMetric] = self.metrics;
        let mut groups: Vec<&'static str> = metrics.iter().map(|m| m.group).collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

/// The first CPU's vendor and family from `/proc/cpuinfo`'s text (x86's `vendor_id` and
/// `cpu family` lines); `None` where it has neither (other architectures).
pub fn parse_cpuinfo(text: &str) -> Option<CpuId> {
    let field = |key: &str| {
        (text.lines())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().to_string())
    };
    Some(CpuId {
        vendor: field("vendor_id")?,
        family: field("cpu family")?.parse().ok()?,
    })
}

/// The running CPU's table, if tracer carries it.
pub fn running_table() -> Option<&'static Table> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    table_for(&parse_cpuinfo(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_groups_and_all_select_as_perfs_match_metric() {
        let cpuinfo =
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n";
        let cpu = parse_cpuinfo(cpuinfo).unwrap();
        assert_eq!(cpu.family, 25);
        let table = table_for(&cpu).unwrap();
        assert_eq!(table.name, "amdzen3");
        let names = |found: Vec<&TableMetric>| found.iter().map(|m| m.name).collect::<Vec<_>>();
        assert_eq!(
            names(table.lookup("Branch_Misprediction_Ratio")),
            ["branch_misprediction_ratio"]
        );
        assert_eq!(
            names(table.lookup("data_fabric")),
            ["all_remote_links_outbound", "nps1_die_to_dram"]
        );
        assert_eq!(table.lookup("L2_CACHE").len(), 7);
        assert_eq!(table.lookup("all").len(), 13);
        assert!(table.lookup("TopdownL1").is_empty());
        assert_eq!(
            table.groups(),
            [
                "branch_prediction",
                "data_fabric",
                "decoder",
                "l2_cache",
                "l3_cache",
                "tlb"
            ]
        );
        // Other CPUs' tables are not carried; other architectures have no such lines.
        let intel = "vendor_id\t: GenuineIntel\ncpu family\t: 6\n";
        assert_eq!(table_for(&parse_cpuinfo(intel).unwrap()), None);
        assert_eq!(parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n"), None);
    }
}
