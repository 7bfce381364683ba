//! The examples of `tracer features`, `tracer generate` and the JSON pages.

use super::*;

pub(crate) fn features_text(ctx: &Ctx, example: &str) {
    let (stdout, _) = ok(&ctx.run(&words(example, &[])));
    for feature in Feature::ALL {
        let want = if available(feature) {
            "available"
        } else {
            "unavailable"
        };
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(feature.label()))
            .unwrap_or_else(|| panic!("no {} line:\n{stdout}", feature.label()));
        assert_eq!(line.split_whitespace().nth(1), Some(want), "{line}");
    }
}

/// The script bash sources: `tracer pro<TAB>` offers probe and profile, `tracer trace
/// --fa<TAB>` --failed.
pub(crate) fn generate_bash(ctx: &Ctx, example: &str) {
    let (script, _) = ok(&ctx.run(&words(example, &[])));
    assert!(script.contains("complete -F _tracer"), "{script}");
    let file = ctx.dir.path().join("tracer.bash");
    std::fs::write(&file, &script).unwrap();
    for (line, want) in [
        ("tracer pro", "probe profile"),
        ("tracer trace --fa", "--failed"),
    ] {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
                 _tracer tracer \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\" | sort | paste -sd' '",
                file.display()
            ))
            .output()
            .unwrap();
        let (got, _) = ok(&out);
        assert_eq!(got.trim_end(), want, "completing `{line}`");
    }
}

/// One page per subcommand `tracer --help` lists, and tracer.1; a page's EXAMPLES are its
/// `--help` examples, line for line, as man shows them.
pub(crate) fn generate_man(ctx: &Ctx, example: &str) {
    ok(&ctx.run(&words(example, &[])));
    let dir = ctx.dir.path().join("man");
    let (help, _) = ok(&ctx.run(&words("tracer --help", &[])));
    let subcommands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    let mut want: Vec<String> = subcommands
        .iter()
        .map(|s| format!("tracer-{s}.1"))
        .collect();
    want.push("tracer.1".into());
    want.sort();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(pages, want);
    let (help, _) = ok(&ctx.run(&words("tracer trace --help", &[])));
    let examples: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Examples:")
        .skip(1)
        .map(str::trim_end)
        .collect();
    assert!(examples.len() >= 5, "{help}");
    let out = Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(dir.join("tracer-trace.1"))
        .env("MANWIDTH", "200")
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    let (page, _) = ok(&out);
    let shown: Vec<&str> = page
        .lines()
        .skip_while(|l| *l != "EXAMPLES")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.strip_prefix("       ").unwrap_or(l).trim_end())
        .collect();
    assert_eq!(shown, examples, "{page}");
}

pub(crate) fn features_json_value(ctx: &Ctx) -> serde_json::Value {
    let (stdout, _) = ok(&ctx.run(&words("tracer features --json", &[])));
    serde_json::from_str(&stdout).unwrap()
}

pub(crate) fn features_json(ctx: &Ctx, _example: &str) {
    let json = features_json_value(ctx);
    for feature in Feature::ALL {
        let want = if available(feature) {
            "available"
        } else {
            "unavailable"
        };
        assert_eq!(json["features"][feature.label()]["status"], want, "{json}");
    }
}

/// `| jq FILTER` through a shell when jq is installed; otherwise the JSON is parsed here.
pub(crate) fn jq_or_parse(ctx: &Ctx, example: &str) -> Vec<serde_json::Value> {
    let (tracer_part, _) = example.split_once(" | jq ").unwrap();
    let stdout = match jq_stdout(ctx, example) {
        Some(stdout) => stdout,
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "note: jq is not installed: `{tracer_part}` checked without the pipe"
            );
            ok(&ctx.run(&words(tracer_part, &[]))).0
        }
    };
    serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// `example` (a `tracer ... | jq ...` line) run by the shell as written: its stdout; `None`
/// without jq.
pub(crate) fn jq_stdout(ctx: &Ctx, example: &str) -> Option<String> {
    let jq = Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    jq.then(|| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(example.replacen("tracer", &tracer_bin().display().to_string(), 1))
            .current_dir(ctx.dir.path())
            .output()
            .unwrap();
        ok(&out).0
    })
}

pub(crate) fn features_jq(ctx: &Ctx, example: &str) {
    let values = jq_or_parse(ctx, example);
    let values = if values.len() == 1 && values[0].get("features").is_some() {
        vec![values[0]["features"]["kprobes"].clone()]
    } else {
        values
    };
    let want = if available(Feature::KprobePmu) {
        "available"
    } else {
        "unavailable"
    };
    assert_eq!(values.len(), 1, "{values:?}");
    assert_eq!(values[0]["status"], want, "{values:?}");
    assert_eq!(values[0], features_json_value(ctx)["features"]["kprobes"]);
}

/// docs/json.md's jq over `tracer trace`'s JSON: head's one open of /etc/hostname, its
/// arguments typed as the model says. Without jq, the lines are selected here.
pub(crate) fn docs_json_jq(ctx: &Ctx, example: &str) {
    let opens: Vec<serde_json::Value> = (jq_or_parse(ctx, example).into_iter())
        .filter(|c| c["args"]["filename"] == "/etc/hostname")
        .collect();
    assert_eq!(opens.len(), 1, "{opens:?}");
    let open = &opens[0];
    assert_eq!(
        (&open["type"], &open["name"], &open["comm"]),
        (&"call".into(), &"openat".into(), &"head".into())
    );
    assert_eq!(
        open["args"]["dfd"],
        serde_json::json!({"value": -100, "text": "AT_FDCWD"})
    );
    assert_eq!(
        open["args"]["flags"],
        serde_json::json!({"value": 0, "text": "O_RDONLY"})
    );
    assert!(open["ret"].as_i64().is_some_and(|fd| fd >= 0), "{open}");
    // The line as jq prints it, in tracer's key order, against the page's.
    if let Some(stdout) = jq_stdout(ctx, example) {
        assert_shown(example, &stdout, "", &[]);
    }
}
