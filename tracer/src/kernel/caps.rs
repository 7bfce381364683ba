//! Effective capabilities of this process, from /proc/self/status.

/// Capability numbers (linux/capability.h).
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_PERFMON: u32 = 38;
pub const CAP_BPF: u32 = 39;

/// The `CapEff` mask, or 0 when it cannot be read.
pub fn effective() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| parse_cap_eff(&status))
        .unwrap_or(0)
}

/// Extracts `CapEff:` from the text of a /proc/PID/status file.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

pub fn has(mask: u64, cap: u32) -> bool {
    mask & (1u64 << cap) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        let mask = parse_cap_eff(status).unwrap();
        assert!(has(mask, CAP_BPF) && has(mask, CAP_PERFMON) && has(mask, CAP_SYS_ADMIN));
        let limited = parse_cap_eff("CapEff:\t0000004000000000\n").unwrap();
        assert!(has(limited, CAP_PERFMON) && !has(limited, CAP_BPF));
        assert_eq!(parse_cap_eff("nothing"), None);
    }
}
