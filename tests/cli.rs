//! Tier 4: the real `tracer` binary, checked for what a user sees (output, exit status).

mod common;

use std::process::{Command, Output};

use tracer::kernel::features::{Feature, Status};

fn tracer(args: &[&str]) -> Output {
    Command::new(common::tracer_bin())
        .args(args)
        .output()
        .expect("run tracer")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn features_text_agrees_with_the_feature_checks() {
    common::require_root();
    let out = tracer(&["features"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        text.starts_with(&format!("kernel               {}\n", release.trim())),
        "{text}"
    );
    for feature in Feature::ALL {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(feature.label()))
            .unwrap_or_else(|| panic!("no line for {}", feature.label()));
        let word = line.split_whitespace().nth(1).unwrap();
        let expected = if feature.check().is_available() {
            "available"
        } else {
            "unavailable"
        };
        assert_eq!(word, expected, "{line}");
    }
    // Every unavailable feature says what the user loses.
    for feature in Feature::ALL {
        if let Status::Unavailable { .. } = feature.check() {
            assert!(
                text.contains(&format!("-> {}", feature.consequence())),
                "{}",
                feature.label()
            );
        }
    }
}

#[test]
fn features_json_is_one_versioned_object() {
    common::require_root();
    let out = tracer(&["features", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "one JSON object on one line");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["version"], 1);
    assert_eq!(
        doc["features"].as_object().unwrap().len(),
        Feature::ALL.len()
    );
    let kprobes = &doc["features"]["kprobes"];
    match Feature::KprobePmu.check() {
        Status::Available { detail } => assert_eq!(kprobes["detail"], detail.as_str()),
        Status::Unavailable { reason, .. } => assert_eq!(kprobes["reason"], reason.as_str()),
    }
    assert!(doc["settings"]["cap_bpf"].is_boolean());
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let out = tracer(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unrecognized subcommand 'no-such-command'"),
        "{}",
        stderr(&out)
    );
    let out = tracer(&["features", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_ends_with_examples() {
    let out = tracer(&["features", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(
        help.trim_end()
            .ends_with("tracer features --json | jq .features.kprobes"),
        "{help}"
    );
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    common::require_root();
    // `true` exits at once, while tracer is still running its checks: tracer's write then fails
    // with EPIPE, which must end it quietly with status 0.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} features | true; echo \"${{PIPESTATUS[0]}}\"",
            common::tracer_bin().display()
        ))
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim(), "0");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}
