//! Strings as users expect them: every `const char *` of a syscall read (rename's two names),
//! argv as an array of strings (execsnoop's view), `--strlen` from 1 to 4096 with a visible
//! mark on a string cut short (text `"..."...`, JSON `truncated`), and a string exactly
//! `--strlen` long left unmarked. Workloads whose strings are known byte for byte: `mv` of one
//! file, `sh -c` running a command with known arguments, and `tracer-testprog open N PATH`
//! (exactly N openat calls with PATH) on paths of chosen lengths.

mod common;

use common::{has, json_lines, testprog, text};
use std::process::Output;
use tracer::kernel::features::Feature;

/// `tracer ARGS` as a user starts it, which must succeed.
fn succeeds(args: &[&str]) -> Output {
    common::Tracer::new(args).without_cargo_env().success()
}

/// The part of each text line after the probe's name, for lines of `probe`.
fn values<'a>(stdout: &'a str, probe: &str) -> Vec<&'a str> {
    let needle = format!(" {probe} ");
    (stdout.lines())
        .filter_map(|l| l.split_once(&needle).map(|(_, v)| v))
        .collect()
}

/// A directory path of exactly `len` bytes under a fresh temporary directory, created, and
/// the directory (dropped: removed).
fn path_of_len(len: usize) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut path = dir.path().display().to_string();
    // Components of at most 200 bytes (NAME_MAX is 255), never leaving 1 byte (a bare "/").
    while path.len() < len {
        let left = len - path.len();
        let part = match left {
            0..=201 => left - 1,
            202 => 199,
            _ => 200,
        };
        path = format!("{path}/{}", "d".repeat(part));
    }
    std::fs::create_dir_all(&path).unwrap();
    assert_eq!(path.len(), len);
    (dir, path)
}

#[test]
fn both_names_of_a_rename_are_read() {
    if !has(Feature::Tracepoints, "both_names_of_a_rename") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (from, to) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::write(&from, b"x").unwrap();
    let (from, to) = (from.display().to_string(), to.display().to_string());
    let probe = "syscalls:sys_enter_renameat2";
    let out = succeeds(&["probe", probe, "--", "mv", "-T", &from, &to]);
    let stdout = text(&out.stdout);
    assert_eq!(
        values(&stdout, probe),
        [format!(
            r#"olddfd=-100 oldname="{from}" newdfd=-100 newname="{to}" flags=0x1"#
        )],
        "{stdout}"
    );
}

#[test]
fn argv_is_read_as_an_array_and_envp_only_when_named() {
    if !has(Feature::Tracepoints, "argv_is_read_as_an_array") {
        return;
    }
    let probe = "syscalls:sys_enter_execve";
    // sh's own exec comes before it is traced; the command it runs is the one exec seen.
    let script = "/bin/true one 'two words' three; exit 0";
    let out = succeeds(&["probe", probe, "--", "sh", "-c", script]);
    let stdout = text(&out.stdout);
    let lines = values(&stdout, probe);
    assert_eq!(lines.len(), 1, "{stdout}");
    let (head, envp) = lines[0].split_once(" envp=").expect("envp");
    assert_eq!(
        head,
        r#"filename="/bin/true" argv=["/bin/true", "one", "two words", "three"]"#
    );
    assert!(envp.starts_with("0x"), "the environment's pointer: {envp}");

    // Named, the environment is read too; JSON has the arrays as arrays.
    let out = succeeds(&[
        "probe",
        "-f",
        "json",
        &format!("{probe}(argv, envp)"),
        "--",
        "env",
        "-i",
        "A=1",
        "B=two",
        "/bin/true",
        "x",
    ]);
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 1, "{}", text(&out.stdout));
    assert_eq!(
        events[0]["args"]["argv"],
        serde_json::json!(["/bin/true", "x"])
    );
    assert_eq!(
        events[0]["args"]["envp"],
        serde_json::json!(["A=1", "B=two"])
    );
    assert!(events[0].get("truncated").is_none(), "{}", events[0]);
}

#[test]
fn an_argv_past_20_elements_is_marked() {
    if !has(Feature::Tracepoints, "an_argv_past_20_elements") {
        return;
    }
    let probe = "syscalls:sys_enter_execve";
    let args: Vec<String> = (1..=25).map(|i| i.to_string()).collect();
    let script = format!("/bin/true {}; exit 0", args.join(" "));
    let out = succeeds(&["probe", probe, "--", "sh", "-c", &script]);
    let stdout = text(&out.stdout);
    let shown: Vec<String> = std::iter::once("\"/bin/true\"".to_string())
        .chain((1..=19).map(|i| format!("\"{i}\"")))
        .collect();
    let expected = format!(r#"argv=[{}, ...]"#, shown.join(", "));
    assert!(
        values(&stdout, probe).iter().any(|v| v.contains(&expected)),
        "{stdout}"
    );
    let out = succeeds(&["probe", "-f", "json", probe, "--", "sh", "-c", &script]);
    let events = json_lines(&out.stdout);
    assert_eq!(events[0]["args"]["argv"].as_array().map(Vec::len), Some(20));
    assert_eq!(events[0]["truncated"], serde_json::json!(["argv"]));
}

#[test]
fn strlen_cuts_strings_and_says_so() {
    if !has(Feature::Tracepoints, "strlen_cuts_strings") {
        return;
    }
    let prog = testprog().display().to_string();
    let probe = "syscalls:sys_enter_openat";
    // A 300-byte path: past the default 256.
    let (_dir, path) = path_of_len(300);
    let opens = |strlen: &str, format: &str| {
        let out = succeeds(&[
            "probe",
            "--strlen",
            strlen,
            "-f",
            format,
            &format!("{probe}(filename)"),
            "--filter",
            "filename ~ \"/tmp/*\"",
            "--",
            &prog,
            "open",
            "2",
            &path,
        ]);
        text(&out.stdout)
    };
    let cut = |n: usize| format!(r#"filename="{}"..."#, &path[..n]);
    assert_eq!(
        values(&opens("256", "text"), probe),
        [cut(256), cut(256)],
        "the default"
    );
    assert_eq!(values(&opens("5", "text"), probe), [cut(5), cut(5)]);
    let whole = format!(r#"filename="{path}""#);
    assert_eq!(values(&opens("4096", "text"), probe), [&whole, &whole]);
    // Exactly as long as --strlen: whole, not marked.
    assert_eq!(values(&opens("300", "text"), probe), [&whole, &whole]);
    assert_eq!(values(&opens("299", "text"), probe), [cut(299), cut(299)]);

    let events = json_lines(opens("5", "json").as_bytes());
    assert_eq!(events.len(), 2);
    for event in events {
        assert_eq!(event["args"]["filename"], "/tmp/");
        assert_eq!(event["truncated"], serde_json::json!(["filename"]));
    }
    let events = json_lines(opens("300", "json").as_bytes());
    assert!(events.iter().all(|e| e.get("truncated").is_none()));
}

#[test]
fn strlen_out_of_range_is_a_usage_error() {
    for n in ["0", "4097"] {
        let out = common::Tracer::new(["probe", "--strlen", n, "syscalls:sys_enter_openat"])
            .command()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{n}");
        assert!(
            text(&out.stderr).contains("--strlen"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn counts_are_keyed_by_a_strings_content() {
    if !has(Feature::Tracepoints, "counts_keyed_by_a_string") {
        return;
    }
    let prog = testprog().display().to_string();
    // A path past the key's 128 bytes counts under its first 128, marked.
    let (_dir, long) = path_of_len(200);
    let script = format!("{prog} open 7 /etc/hostname; {prog} open 3 {long}");
    let out = succeeds(&[
        "probe",
        "--count-by",
        "filename",
        "syscalls:sys_enter_openat",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stdout = text(&out.stdout);
    let rows: Vec<(String, u64)> = (stdout.lines().skip(1))
        .filter_map(|l| {
            let (key, count) = l.trim_end().rsplit_once(' ')?;
            Some((key.trim().to_string(), count.parse().ok()?))
        })
        .collect();
    assert_eq!(
        stdout
            .lines()
            .next()
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["FILENAME", "COUNT"]),
        "{stdout}"
    );
    let count = |key: &str| rows.iter().find(|(k, _)| k == key).map(|r| r.1);
    assert_eq!(count("\"/etc/hostname\""), Some(7), "{stdout}");
    assert_eq!(
        count(&format!("\"{}\"...", &long[..128])),
        Some(3),
        "{stdout}"
    );
    // Every hit is in a row.
    let total: u64 = rows.iter().map(|r| r.1).sum();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("\n{total} hits counted in the kernel in ")),
        "{total}\n{stdout}\n{stderr}"
    );

    // JSON: the strings themselves, cut ones named in `truncated`; --strlen cuts keys too.
    let out = succeeds(&[
        "probe",
        "--strlen",
        "8",
        "-f",
        "json",
        "--count-by",
        "filename",
        "syscalls:sys_enter_openat",
        "--",
        &prog,
        "open",
        "7",
        "/etc/hostname",
    ]);
    let report = &json_lines(&out.stdout)[0];
    let rows = report["rows"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["filename"] == "/etc/hos")
        .expect("the row");
    assert_eq!(row["count"], 7, "{report}");
    assert_eq!(row["truncated"], serde_json::json!(["filename"]));
}
