//! `tracer features` output.

use std::fmt::Write;

use crate::kernel::features::{Feature, Settings, Status};

pub fn text(settings: &Settings, results: &[(Feature, Status)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<20} {}", "kernel", settings.release);
    for (feature, status) in results {
        match status {
            Status::Available { detail } => {
                let _ = writeln!(
                    out,
                    "{:<20} {:<12} {}",
                    feature.label(),
                    "available",
                    detail
                );
            }
            Status::Unavailable {
                reason,
                consequence,
            } => {
                let _ = writeln!(
                    out,
                    "{:<20} {:<12} {}",
                    feature.label(),
                    "unavailable",
                    reason
                );
                let _ = writeln!(out, "{:<20} {:<12} -> {}", "", "", consequence);
            }
        }
    }
    let paranoid = settings
        .perf_event_paranoid
        .map_or_else(|| "unknown".to_string(), |p| p.to_string());
    let _ = writeln!(out, "{:<20} {}", "perf_event_paranoid", paranoid);
    let _ = writeln!(out, "{:<20} {}", "lockdown", settings.lockdown);
    let caps: Vec<&str> = [
        (settings.cap_bpf, "CAP_BPF"),
        (settings.cap_perfmon, "CAP_PERFMON"),
        (settings.cap_sys_admin, "CAP_SYS_ADMIN"),
    ]
    .iter()
    .filter(|(has, _)| *has)
    .map(|(_, name)| *name)
    .collect();
    let caps = if caps.is_empty() {
        "none of CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN".to_string()
    } else {
        caps.join(" ")
    };
    let _ = writeln!(out, "{:<20} {}", "capabilities", caps);
    out
}

pub fn json(settings: &Settings, results: &[(Feature, Status)]) -> String {
    let features: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(f, s)| {
            (
                f.label().to_string(),
                serde_json::to_value(s).unwrap_or_default(),
            )
        })
        .collect();
    let doc = serde_json::json!({
        "type": "features",
        "version": super::json::SCHEMA_VERSION,
        "kernel": settings.release,
        "features": features,
        "settings": settings,
    });
    format!("{doc}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Settings, Vec<(Feature, Status)>) {
        let settings = Settings {
            release: "6.18.0".into(),
            perf_event_paranoid: Some(2),
            lockdown: "none".into(),
            cap_bpf: true,
            cap_perfmon: false,
            cap_sys_admin: true,
        };
        let results = vec![
            (
                Feature::Bpf,
                Status::Available {
                    detail: "ok".into(),
                },
            ),
            (
                Feature::KprobePmu,
                Status::Unavailable {
                    reason: "no kprobe PMU".into(),
                    consequence: Feature::KprobePmu.consequence().into(),
                },
            ),
        ];
        (settings, results)
    }

    #[test]
    fn text_shows_reason_and_consequence() {
        let (settings, results) = sample();
        let out = text(&settings, &results);
        assert!(out.contains("kprobes              unavailable  no kprobe PMU\n"));
        assert!(out.contains("-> `tracer probe FUNC` cannot attach"));
        assert!(out.contains("capabilities         CAP_BPF CAP_SYS_ADMIN\n"));
    }

    #[test]
    fn json_is_one_versioned_object() {
        let (settings, results) = sample();
        let v: serde_json::Value = serde_json::from_str(&json(&settings, &results)).unwrap();
        assert_eq!(v["type"], "features");
        assert_eq!(v["version"], 2);
        assert_eq!(v["features"]["kprobes"]["status"], "unavailable");
        assert_eq!(v["features"]["bpf"]["detail"], "ok");
        assert_eq!(v["settings"]["perf_event_paranoid"], 2);
    }
}
