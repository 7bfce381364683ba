//! Tier 4: chosen values and struct members (`FUNC(a, p->m)`, `--args`) through the real
//! binary, on the C workload tests/workloads/chain.c whose arguments are known per call:
//! chain_target(count=i, name="chain", where=&{i, -i, "b-point"}, odd=i%2, shade=GREEN), and
//! chain_peek(NULL on odd calls, &{i, -i, "even"} on even ones); and pointer chains on
//! tests/workloads/nest.c, a ring of three nodes visited in turn.

mod common;

use common::{c_workload, chain_program, has, json_lines, text, traced_chain, tracer, Tracer};
use tracer::kernel::features::Feature;

fn usable(test: &str) -> bool {
    has(Feature::UprobePmu, test) && has(Feature::Bpf, test)
}

fn spec(function_and_list: &str) -> String {
    format!("uprobe:{}:{function_and_list}", chain_program().display())
}

#[test]
fn a_list_picks_orders_and_reads_struct_members() {
    if !usable("args_members") {
        return;
    }
    let (out, stderr) = traced_chain(
        4,
        &[
            "probe",
            "-c",
            "4",
            &spec("chain_target(where->y, where->label, count, where->x, name)"),
        ],
    );
    let lines: Vec<String> = text(&out.stdout)
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    for (i, line) in (1..).zip(&lines) {
        let values = line.split_once(":chain_target ").map(|(_, v)| v);
        assert_eq!(
            values,
            // Both strings are read: a member's and a parameter's.
            Some(
                format!(
                    r#"where->y=-{i} where->label="b-point" count={i} where->x={i} name="chain""#
                )
                .as_str()
            ),
            "{line}"
        );
    }
}

#[test]
fn args_applies_to_every_probe_without_its_own_list() {
    if !usable("args_flag") {
        return;
    }
    let (out, stderr) = traced_chain(
        2,
        &[
            "probe",
            "-c",
            "4",
            "-f",
            "json",
            "--args",
            "arg0",
            &spec("chain_target"),
            &spec("chain_a(i)"),
        ],
    );
    let events = json_lines(&out.stdout);
    assert_eq!(events.len(), 4, "{stderr}");
    for event in &events {
        let args = event["args"].as_object().unwrap();
        let (key, value) = args.iter().next().unwrap();
        assert_eq!(args.len(), 1, "{event}");
        match event["probe"].as_str().unwrap() {
            p if p.ends_with(":chain_target") => assert_eq!(key, "arg0"),
            p if p.ends_with(":chain_a") => assert_eq!(key, "i"),
            other => panic!("{other}"),
        }
        assert!(matches!(value.as_i64(), Some(1 | 2)), "{event}");
    }
}

#[test]
fn a_tracepoint_list_picks_fields_by_name_or_position() {
    if !has(Feature::Tracepoints, "args_tracepoint") || !has(Feature::Bpf, "args_tracepoint") {
        return;
    }
    let out = tracer(&[
        "probe",
        "syscalls:sys_enter_openat(flags, arg1)",
        "-f",
        "json",
        "--",
        "sh",
        "-c",
        "cat /etc/hostname >/dev/null",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let last = json_lines(&out.stdout).pop().expect("cat's opens");
    let args = last["args"].as_object().unwrap();
    assert_eq!(args.len(), 2, "{last}");
    assert_eq!(
        (&args["flags"], &args["filename"]),
        (&0.into(), &"/etc/hostname".into())
    );
}

#[test]
fn a_member_read_through_a_null_pointer_is_shown_unknown_and_counted() {
    if !usable("args_fault") {
        return;
    }
    let (out, stderr) = traced_chain(
        4,
        &["probe", "-c", "4", "-f", "json", &spec("chain_peek(p->y)")],
    );
    let values: Vec<serde_json::Value> = json_lines(&out.stdout)
        .iter()
        .map(|e| e["args"]["p->y"].clone())
        .collect();
    assert_eq!(
        values,
        [
            serde_json::Value::Null,
            (-2).into(),
            serde_json::Value::Null,
            (-4).into()
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains(":chain_peek: 2 struct member reads failed"),
        "{stderr}"
    );
}

#[test]
fn counting_by_a_member_and_summing_a_parameter() {
    if !usable("args_count") {
        return;
    }
    let prog = chain_program().display().to_string();
    let out = tracer(&[
        "probe",
        "--count-by",
        "where->y",
        "--sum",
        "count",
        "-f",
        "json",
        &spec("chain_target"),
        "--",
        "sh",
        "-c",
        &format!("printf g | {prog} 3 >/dev/null"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reports = json_lines(&out.stdout);
    let mut rows: Vec<(i64, u64, i64)> = reports[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                // Numeric key columns are numbers (docs/json.md).
                r["where->y"].as_i64().unwrap(),
                r["count"].as_u64().unwrap(),
                r["sum"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(rows, [(-3, 1, 3), (-2, 1, 2), (-1, 1, 1)], "{}", reports[0]);
}

/// An enum parameter counted: its rows are named as event lines name its values (one row,
/// GREEN, for chain_b's three calls), in text and in JSON; filtered by the names of its
/// values.
#[test]
fn counting_by_an_enum_names_its_values() {
    if !usable("args_count_enum") {
        return;
    }
    let prog = chain_program().display().to_string();
    let run = |format: &str, filter: &str| {
        let out = tracer(&[
            "probe",
            "--count-by",
            "shade",
            "--filter",
            filter,
            "-f",
            format,
            &spec("chain_target"),
            "--",
            "sh",
            "-c",
            &format!("printf g | {prog} 3 >/dev/null"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out.stdout
    };
    // Compared with a name, the value is the name's (BLUE is 6: none passes).
    let reports = json_lines(&run("json", "shade == GREEN"));
    assert_eq!(
        reports[0]["rows"],
        serde_json::json!([{"shade": "GREEN", "count": 3}]),
        "{}",
        reports[0]
    );
    let reports = json_lines(&run("json", "shade == BLUE"));
    assert_eq!(reports[0]["rows"], serde_json::json!([]), "{}", reports[0]);
    let text_out = text(&run("text", "shade != BLUE"));
    let rows: Vec<Vec<&str>> = (text_out.lines())
        .map(|l| l.split_whitespace().collect())
        .filter(|w: &Vec<&str>| w.first() == Some(&"GREEN"))
        .collect();
    assert_eq!(rows, [["GREEN", "3"]], "{text_out}");
}

#[test]
fn bad_lists_are_usage_errors_that_say_what_exists() {
    let cases = [
        (
            spec("chain_target(where->z)"),
            "error: struct point has no member 'z'\nhint: members of struct point: x, y, label\n",
        ),
        (
            spec("chain_target(cont)"),
            "has no parameter 'cont'\nhint: did you mean: count\n",
        ),
        (
            spec("chain_target(count->x)"),
            "error: parameter 'count' is s32, not a pointer to a struct or union\n",
        ),
        (
            "syscalls:sys_enter_openat(filenme)".to_string(),
            "error: syscalls:sys_enter_openat has no field 'filenme'\nhint: did you mean: filename\n",
        ),
        (
            "syscalls:sys_enter_openat(a,,b)".to_string(),
            "error: empty value in the argument list in probe 'syscalls:sys_enter_openat(a,,b)'\n",
        ),
    ];
    for (probe, expected) in cases {
        let out = tracer(&["probe", &probe, "-c", "1"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{probe}: {stderr}");
        assert!(stderr.contains(expected), "{probe}: {stderr}");
    }
    // A latency start's values are shown with its slow calls: without --slower-than, none.
    let out = tracer(&["latency", &spec("chain_target(count)")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("the values in parentheses are shown with each slow call: add --slower-than"),
        "{}",
        text(&out.stderr)
    );
    // Its end shows none.
    let (from, to) = (spec("chain_target"), spec("chain_target(count)"));
    let out = tracer(&[
        "latency",
        "--from",
        &from,
        "--to",
        &to,
        "--slower-than",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("tracer latency prints no per-hit values: drop '(count)'"),
        "{}",
        text(&out.stderr)
    );
}

/// Members through more than one pointer and `char[N]` members, on nest.c's ring: call i
/// visits node i % 3, named "n0".."n2", whose next is node (i + 1) % 3 and whose
/// `link.up->owner` is node 2; `hole` is NULL.
#[test]
fn members_are_read_through_pointer_chains() {
    if !usable("args_chains") {
        return;
    }
    let nest = c_workload("nest");
    let spec = |list: &str| format!("uprobe:{}:nest_visit({list})", nest.display());
    let list = "call, n->name, n->next->id, n->next->next->name, n->link.up->owner->id";
    let out = Tracer::new(["probe", &spec(list), "--", nest.to_str().unwrap(), "6"]).success();
    let lines: Vec<String> = (text(&out.stdout).lines().skip(1))
        .map(|line| line.split_once(":nest_visit ").expect(line).1.to_string())
        .collect();
    let expected: Vec<String> = (1..=6)
        .map(|i| {
            let (this, next, after) = (i % 3, (i + 1) % 3, (i + 2) % 3);
            format!(
                r#"call={i} n->name="n{this}" n->next->id={next} n->next->next->name="n{after}" n->link.up->owner->id=2"#
            )
        })
        .collect();
    assert_eq!(lines, expected, "{}", text(&out.stderr));

    // A NULL pointer on the way fails the read: `?`, and counted.
    let out = Tracer::new(["probe", &spec("n->hole->id, call"), "--"])
        .command()
        .args([nest.to_str().unwrap(), "2"])
        .output()
        .expect("run tracer");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let values: Vec<&str> = (stdout.lines().skip(1))
        .filter_map(|line| line.split_once(":nest_visit ").map(|(_, v)| v))
        .collect();
    assert_eq!(values, ["n->hole->id=? call=1", "n->hole->id=? call=2"]);
    assert!(
        stderr.contains(":nest_visit: 2 struct member reads failed"),
        "{stderr}"
    );

    // Counted by a string two pointers away, in the kernel: n0 for calls 1, 4, 7.
    let bare = format!("uprobe:{}:nest_visit", nest.display());
    let out = Tracer::new([
        "probe",
        &bare,
        "--count-by",
        "n->next->next->name",
        "-f",
        "json",
    ])
    .command()
    .args(["--", nest.to_str().unwrap(), "7"])
    .output()
    .expect("run tracer");
    let rows = &json_lines(&out.stdout)[0]["rows"];
    let counts: Vec<(String, u64)> = (rows.as_array().expect("rows").iter())
        .map(|r| {
            let key = r["n->next->next->name"].as_str().expect("key");
            (key.to_string(), r["count"].as_u64().unwrap())
        })
        .collect();
    let expected = [("n0", 3), ("n1", 2), ("n2", 2)].map(|(k, n)| (k.to_string(), n));
    assert_eq!(counts, expected, "{}", text(&out.stderr));

    // At the return, through what was returned: node (i + 1) % 3 and its next's name.
    let spec_ret = |list: &str| format!("uretprobe:{}:nest_next({list})", nest.display());
    let list = "ret->id, ret->name, ret->next->name";
    let out = Tracer::new(["probe", &spec_ret(list), "--", nest.to_str().unwrap(), "4"]).success();
    let lines: Vec<String> = (text(&out.stdout).lines().skip(1))
        .map(|line| line.split_once(":nest_next ").expect(line).1.to_string())
        .collect();
    let expected: Vec<String> = (1..=4)
        .map(|i| {
            let (ret, next) = ((i + 1) % 3, (i + 2) % 3);
            format!(r#"ret->id={ret} ret->name="n{ret}" ret->next->name="n{next}" ret=0x"#)
        })
        .collect();
    let cut: Vec<String> = (lines.iter())
        .map(|l| l[..l.find("ret=0x").map_or(l.len(), |at| at + 6)].to_string())
        .collect();
    assert_eq!(cut, expected, "{}", text(&out.stderr));
    // Arguments are gone at a uretprobe: refused, with the entry probe as the way.
    let out = tracer(&["probe", &spec_ret("n->id"), "-c", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("sees only the return value; 'n->id' is gone by then"),
        "{}",
        text(&out.stderr)
    );

    // Past three loads, refused with the walk as C spells it.
    let out = tracer(&["probe", &spec("n->next->next.next->next->id"), "-c", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "error: 'n->next->next->next->next' is struct node *: a member read loads at most \
             3 pointers after the parameter\n"
        ),
        "{}",
        text(&out.stderr)
    );
}
