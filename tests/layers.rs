//! The layout's rules, read from the source: the top-level modules of `tracer/src` import
//! each other without a circle, no command imports another, and the trace file and the
//! output model import nothing from `cmd/`. (CONTRIBUTING.md: the pipeline is the layout.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("tracer/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its `#[cfg(test)]` module and comments: tests may reach
/// anywhere, and comments may name any path.
fn product_code(text: &str) -> String {
    let text = without_test_items(text);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without its `#[cfg(test)]` items: each from the attribute to the brace that closes
/// the item's block (code after a test module is product code too). Braces in strings, char
/// literals and comments do not count.
fn without_test_items(text: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at..];
        let Some(open) = item.find('{') else {
            return kept;
        };
        let end = block_end(&item[open..]).map_or(item.len(), |e| open + e);
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// Where the block that `code` opens (at its first byte, a `{`) ends: the byte after its
/// closing brace, skipping strings (raw too), char literals and comments.
fn block_end(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        let rest = &code[i..];
        i += match bytes[i] {
            b'{' => {
                depth += 1;
                1
            }
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
                1
            }
            b'/' if rest.starts_with("//") => rest.find('\n').unwrap_or(rest.len()),
            b'/' if rest.starts_with("/*") => rest.find("*/").map_or(rest.len(), |e| e + 2),
            b'r' if rest.starts_with("r\"") || rest.starts_with("r#") => {
                let hashes = rest[1..].bytes().take_while(|&b| b == b'#').count();
                let close = format!("\"{}", "#".repeat(hashes));
                match rest[1 + hashes..].strip_prefix('"') {
                    Some(body) => {
                        2 + hashes + body.find(&close).map_or(body.len(), |e| e + close.len())
                    }
                    None => 1,
                }
            }
            b'"' => {
                let mut j = 1;
                while j < rest.len() && bytes[i + j] != b'"' {
                    j += if bytes[i + j] == b'\\' { 2 } else { 1 };
                }
                j + 1
            }
            // A char literal ('{', '\'', '\u{7b}'), not a lifetime ('a).
            b'\'' => match rest[1..].chars().next() {
                Some('\\') => (rest.get(3..))
                    .and_then(|r| r.find('\''))
                    .map_or(1, |e| e + 4),
                Some(c) if rest[1 + c.len_utf8()..].starts_with('\'') => 2 + c.len_utf8(),
                _ => 1,
            },
            _ => rest.chars().next().map_or(1, char::len_utf8),
        };
    }
    None
}

#[test]
fn braces_in_literals_and_comments_do_not_end_a_test_item() {
    let text = concat!(
        "fn a() {}\n#[cfg(test)]\nmod tests {\n",
        "    const O: char = '{';\n    const Q: char = '\\'';\n",
        "    fn f<'a>(x: &'a str) -> &'a str { x }\n",
        "    // } in a comment\n    /* } */\n",
        "    const S: &str = \"}\\\"}\";\n    const R: &str = r#\"}\"}\"#;\n",
        "}\nfn b() {}\n"
    );
    assert_eq!(without_test_items(text), "fn a() {}\n\nfn b() {}\n");
}

/// The structs the BPF programs read (tracer-common's `#[repr(C)]` types), by name.
fn bpf_structs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("../tracer-common/src"), &mut files);
    let common: String = (files.iter())
        .map(|f| std::fs::read_to_string(f).expect("tracer-common's files are readable"))
        .collect::<Vec<_>>()
        .join("\n");
    let lines: Vec<&str> = common.lines().collect();
    (lines.windows(3))
        .filter(|w| w[0].starts_with("#[repr(C"))
        .filter_map(|w| w[1..].iter().find_map(|l| l.strip_prefix("pub struct ")))
        .map(|rest| {
            rest.split([' ', '<', '{'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Plans are pure and say what a run wants in their own terms (ARCHITECTURE.md, `plan/`):
/// no plan holds a struct the BPF programs read, which is built only at the BPF boundary
/// (the probe layer, `bpf/`), so a plan cannot carry half-set kernel flags.
#[test]
fn plans_hold_no_struct_the_bpf_programs_read() {
    let structs = bpf_structs();
    assert!(
        ["SlotConfig", "LatConfig", "OffCpuConfig", "Filter"]
            .iter()
            .all(|s| structs.iter().any(|t| t == s)),
        "tracer-common's #[repr(C)] structs: {structs:?}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/plan");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut named = Vec::new();
    for file in files {
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        let words: BTreeSet<&str> = code
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .collect();
        for s in structs.iter().filter(|s| words.contains(s.as_str())) {
            named.push(format!("{}: {s}", file.display()));
        }
    }
    assert!(named.is_empty(), "plans naming BPF structs: {named:?}");
}

/// The `crate::NAME` paths a piece of code names.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let name: String = (rest.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // `crate::{a, b}` names several.
        if name.is_empty() && rest.starts_with('{') {
            let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
            for part in group.split(',') {
                let part = part.trim();
                let name: String = (part.chars())
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.insert(name);
                }
            }
        } else if !name.is_empty() {
            names.insert(name);
        }
    }
    names
}

struct Tree {
    /// Top-level module -> the top-level modules it imports.
    modules: BTreeMap<String, BTreeSet<String>>,
    /// Each file under cmd/ -> the `super::NAME` and `crate::cmd::NAME` it names.
    commands: BTreeMap<String, BTreeSet<String>>,
}

fn tree() -> Tree {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut commands = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a name")
            .trim_end_matches(".rs")
            .to_string();
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        let mut imports: BTreeSet<String> = crate_paths(&code)
            .into_iter()
            .filter(|n| n.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .filter(|n| *n != top && n != "describe")
            .collect();
        imports.retain(|n| root.join(n).is_dir() || root.join(format!("{n}.rs")).is_file());
        if top == "cmd" && rel.file_name().is_some_and(|f| f != "mod.rs") {
            let mut named = BTreeSet::new();
            for prefix in ["super::", "crate::cmd::"] {
                let mut rest = code.as_str();
                while let Some(at) = rest.find(prefix) {
                    rest = &rest[at + prefix.len()..];
                    let name: String = (rest.chars())
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    named.insert(name);
                }
            }
            commands.insert(rel.display().to_string(), named);
        }
        modules.entry(top).or_default().extend(imports);
    }
    Tree { modules, commands }
}

/// A circle of imports through `from`, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        target: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == target {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, target, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_string()];
    walk(graph, from, from, &mut path, &mut BTreeSet::new()).then(|| {
        path.push(from.to_string());
        path
    })
}

#[test]
fn top_level_modules_import_each_other_without_a_circle() {
    let tree = tree();
    assert!(tree.modules.len() > 10, "read {:?}", tree.modules.keys());
    let circles: Vec<String> = (tree.modules.keys())
        .filter_map(|m| circle(&tree.modules, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn no_command_imports_another_and_lower_layers_import_no_command() {
    let tree = tree();
    let cmd_files: BTreeSet<String> = (tree.commands.keys())
        .map(|f| {
            f.trim_start_matches("cmd/")
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    assert!(cmd_files.contains("probe") && cmd_files.contains("stat"));
    for (file, named) in &tree.commands {
        let others: Vec<&String> = named.iter().filter(|n| cmd_files.contains(*n)).collect();
        assert!(others.is_empty(), "{file} imports the commands {others:?}");
    }
    for (module, imports) in &tree.modules {
        if module != "cmd" && module != "main" && module != "lib" {
            assert!(!imports.contains("cmd"), "{module} imports cmd");
        }
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(
        circle(&graph, "a").map(|c| c.join(" -> ")),
        Some("a -> b -> c -> a".to_string())
    );
    assert_eq!(circle(&graph, "d"), None);
    assert_eq!(
        without_test_items("a\n#[cfg(test)]\nmod tests {\n    fn t() { x() }\n}\nb\n"),
        "a\n\nb\n"
    );
    assert_eq!(
        crate_paths("use crate::{perf, kernel::x}; crate::plan::y"),
        ["kernel", "perf", "plan"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}

/// The print macros a line of code calls (`eprintln!(`, `print!(`...).
fn print_macros(code: &str) -> Vec<&'static str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for name in ["eprintln!", "eprint!", "println!", "print!"] {
        let call = format!("{name}(");
        for (at, _) in code.match_indices(&call) {
            if !code[..at].chars().next_back().is_some_and(ident) {
                found.push(name);
            }
        }
    }
    found
}

/// `println!` and `eprintln!` panic when the stream is a closed pipe (`tracer ... 2>&1 | head`
/// exited 101): product code writes through `output` (its writers return the error, stderr's
/// notes drop it), never through the print macros.
#[test]
fn no_product_code_prints_through_the_panicking_macros() {
    assert_eq!(
        print_macros(r#"eprintln!("a"); print!("b"); x.eprint(); sprint!(c); println!()"#),
        ["eprintln!", "println!", "print!"]
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut found = Vec::new();
    for file in files {
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        for (n, line) in code.lines().enumerate() {
            for name in print_macros(line) {
                found.push(format!("{}:{}: {name}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "print macros in product code: {found:#?}");
}

/// The BPF crate's modules, lowest first (ARCHITECTURE.md, "The BPF crate"): each imports only
/// the crate's root and the modules before it.
const BPF_LAYERS: &[&str] = &[
    "maps",
    "caches",
    "reads",
    "filters",
    "emit",
    "aggregate",
    "slots",
    "iovecs",
    "latency",
    "trace",
    "profile",
    "tracking",
    "ksyms",
];

/// Each module's imports that break `order`: one that is not in it, or not before it.
fn layer_violations(order: &[&str], graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| *o == m);
    let mut wrong = Vec::new();
    for (module, imports) in graph {
        let Some(at) = rank(module) else {
            wrong.push(format!("{module} is not in the layer order"));
            continue;
        };
        for import in imports {
            match rank(import) {
                Some(to) if to < at => {}
                Some(_) => wrong.push(format!("{module} imports {import}, a layer above it")),
                None => wrong.push(format!("{module} imports {import}, which is in no layer")),
            }
        }
    }
    wrong
}

/// tracer-ebpf's modules (all but the root and the features object) -> the crate modules
/// each names.
fn bpf_modules() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer-ebpf/src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut graph = BTreeMap::new();
    for file in files {
        let name = file.file_stem().and_then(|s| s.to_str()).expect("a name");
        if matches!(name, "main" | "features") {
            continue;
        }
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        let imports = crate_paths(&code)
            .into_iter()
            .filter(|n| n.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
            .filter(|n| root.join(format!("{n}.rs")).is_file() && n != name)
            .collect();
        graph.insert(name.to_string(), imports);
    }
    graph
}

#[test]
fn the_bpf_crates_modules_import_only_the_layers_below_them() {
    let graph = bpf_modules();
    assert!(
        graph.contains_key("maps") && graph.contains_key("slots"),
        "read {:?}",
        graph.keys()
    );
    let wrong = layer_violations(BPF_LAYERS, &graph);
    assert!(wrong.is_empty(), "tracer-ebpf's layers: {wrong:#?}");
    // The check fails on what it is for: a module reaching up, one outside the order.
    let broken: BTreeMap<String, BTreeSet<String>> = [
        ("maps", &["slots"][..]),
        ("slots", &["maps"][..]),
        ("stray", &[][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(
        layer_violations(&["maps", "slots"], &broken),
        [
            "maps imports slots, a layer above it",
            "stray is not in the layer order"
        ]
    );
}

/// `bpf/` is the one place that touches aya (ARCHITECTURE.md, the `bpf/` row), and its files
/// meet only in its `mod.rs`: each concern's file imports the layer's shared items
/// (`super::NAME`), never another concern's file (`super::FILE::`), so that a concern can move
/// or grow without the others.
#[test]
fn aya_is_touched_only_in_bpf_whose_files_meet_only_in_its_mod_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let (mut outside, mut across) = (Vec::new(), Vec::new());
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src").to_path_buf();
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        let in_bpf = rel.starts_with("bpf");
        if !in_bpf && (code.contains("aya::") || code.contains("aya_log::")) {
            outside.push(rel.display().to_string());
        }
        if in_bpf && rel.file_name().is_some_and(|f| f != "mod.rs") {
            across.extend(reaches_into_siblings(&code).map(|s| format!("{}: {s}", rel.display())));
        }
    }
    assert!(
        outside.len() + across.len() == 0,
        "aya outside bpf/: {outside:?}; bpf/ files reaching into each other: {across:?}"
    );
    assert_eq!(
        reaches_into_siblings("use super::{Bpf, Error};\nsuper::load::Maps::take(x)")
            .collect::<Vec<_>>(),
        ["super::load::"]
    );
}

/// Plans are pure descriptions (ARCHITECTURE.md, the `plan/` row): from the BPF side's shared
/// crate they take only its limits (constants, to refuse input past them), never a type, a
/// flag word's builder or a function; the BPF structs are made from a plan where the programs
/// are configured (`probe/`).
#[test]
fn plans_take_only_the_bpf_sides_limits() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/plan");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut taken = Vec::new();
    for file in files {
        let code = product_code(&std::fs::read_to_string(&file).expect("readable"));
        let rel = file
            .strip_prefix(&root)
            .expect("under plan/")
            .display()
            .to_string();
        taken.extend(bpf_items_not_limits(&code).map(|item| format!("plan/{rel}: {item}")));
    }
    assert!(
        taken.is_empty(),
        "plans naming BPF types or functions: {taken:?}"
    );
    let sample = "use tracer_common::{LAT_KEY_PARTS, LatKeySrc};\nlet w = tracer_common::src(0, 8, false);\nlet n = tracer_common::SYSCALL_NRS;";
    assert_eq!(
        bpf_items_not_limits(sample).collect::<Vec<_>>(),
        ["LatKeySrc", "src"]
    );
}

/// The items of `tracer_common` that `code` names (in a `use` list or as a path) and that are
/// not constants (all capitals).
fn bpf_items_not_limits(code: &str) -> impl Iterator<Item = String> + '_ {
    let word = |rest: &str| -> String {
        (rest.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    code.match_indices("tracer_common::")
        .flat_map(move |(at, _)| {
            let rest = &code[at + "tracer_common::".len()..];
            match rest.strip_prefix('{') {
                Some(list) => list[..list.find('}').unwrap_or(list.len())]
                    .split(',')
                    .map(|item| word(item.trim()))
                    .collect::<Vec<_>>(),
                None => vec![word(rest)],
            }
        })
        .filter(|item| !item.is_empty() && item.chars().any(|c| c.is_ascii_lowercase()))
}

/// The `super::NAME::` paths of a piece of code: a file reaching into a sibling module.
fn reaches_into_siblings(code: &str) -> impl Iterator<Item = String> + '_ {
    code.match_indices("super::").filter_map(move |(at, _)| {
        let rest = &code[at + "super::".len()..];
        let name: String = (rest.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let lower = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
        (lower && rest[name.len()..].starts_with("::")).then(|| format!("super::{name}::"))
    })
}

/// The recording format owns its types (ARCHITECTURE.md, the `tracefile/` row): no type of
/// another layer that `tracefile/` names derives serde's traits, so renaming one of its fields
/// cannot change what a `.tracer` file holds (`tracefile/desc.rs` converts them).
#[test]
fn the_recording_format_serializes_only_its_own_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let code: Vec<(PathBuf, String)> = (files.into_iter())
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable");
            (f, product_code(&text))
        })
        .collect();
    // The type names tracefile/ imports from the layers a recording describes.
    let mut named = BTreeSet::new();
    for (file, text) in &code {
        if !file
            .strip_prefix(&root)
            .is_ok_and(|r| r.starts_with("tracefile"))
        {
            continue;
        }
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("use crate::"))
        {
            if !["crate::probe", "crate::kernel"]
                .iter()
                .any(|l| line.contains(l))
            {
                continue;
            }
            let names = line.rsplit("::").next().unwrap_or_default();
            for name in names.trim_matches(|c| "{};".contains(c)).split(',') {
                let name = name.trim();
                if name.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                    named.insert(name.to_string());
                }
            }
        }
    }
    assert!(
        named.contains("Decoder") && named.contains("Values"),
        "read {named:?}"
    );
    let serialized = serde_derived(&code);
    let wrong: Vec<&String> = named.iter().filter(|n| serialized.contains(*n)).collect();
    assert!(
        wrong.is_empty(),
        "a recording serializes other layers' types: {wrong:?}"
    );
    let sample = vec![(
        PathBuf::from("x.rs"),
        "#[derive(Clone, serde::Serialize)]\npub struct Kept {}\n#[derive(Debug)]\npub enum Plain {}"
            .to_string(),
    )];
    assert_eq!(serde_derived(&sample), BTreeSet::from(["Kept".to_string()]));
}

/// The structs and enums whose derive list names `Serialize` or `Deserialize`.
fn serde_derived(code: &[(PathBuf, String)]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (_, text) in code {
        let mut derives_serde = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[derive(") {
                derives_serde |= line.contains("Serialize") || line.contains("Deserialize");
                continue;
            }
            if line.starts_with("#[") || line.is_empty() {
                continue;
            }
            let item = (line.split_whitespace())
                .skip_while(|w| w.starts_with("pub"))
                .collect::<Vec<_>>();
            if derives_serde && matches!(item.first(), Some(&"struct") | Some(&"enum")) {
                let name: String = (item.get(1).unwrap_or(&""))
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                found.insert(name);
            }
            derives_serde = false;
        }
    }
    found
}

/// The product code's functions longer than `max` lines, as `path:line name (lines)`: a
/// function runs from its `fn` line to the closing brace at its indentation; tests (after
/// `#[cfg(test)]`, or a file named tests.rs) are left out.
fn long_functions(files: &[(String, String)], max: usize) -> Vec<String> {
    let mut long = Vec::new();
    for (path, text) in files {
        if path.ends_with("tests.rs") {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        let end = (lines.iter())
            .position(|l| l.starts_with("#[cfg(test)]"))
            .unwrap_or(lines.len());
        for (at, line) in lines[..end].iter().enumerate() {
            let code = line.trim_start();
            let indent = &line[..line.len() - code.len()];
            let words: Vec<&str> = code.split_whitespace().collect();
            let Some(fn_at) = words.iter().position(|w| *w == "fn") else {
                continue;
            };
            let qualifiers = [
                "pub",
                "pub(crate)",
                "pub(super)",
                "const",
                "unsafe",
                "async",
            ];
            if !words[..fn_at].iter().all(|w| qualifiers.contains(w)) || code.ends_with(';') {
                continue;
            }
            let close = format!("{indent}}}");
            let Some(length) = lines[at..].iter().position(|l| *l == close) else {
                continue;
            };
            if length + 1 > max {
                let name = words
                    .get(fn_at + 1)
                    .map_or("", |w| w.split(['<', '(']).next().unwrap_or(""));
                long.push(format!("{path}:{} {name} ({} lines)", at + 1, length + 1));
            }
        }
    }
    long
}

/// The source files of tracer/src, tracer-ebpf/src and tracer-common/src, with their text.
fn product_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("../tracer-ebpf/src"), &mut files);
    sources(&root.join("../tracer-common/src"), &mut files);
    (files.into_iter())
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("readable");
            (f.display().to_string(), text)
        })
        .collect()
}

/// No function outside tests is over 120 lines (CONTRIBUTING.md, "Small pieces"): a longer
/// one is a composition waiting to be named.
#[test]
fn no_function_is_over_120_lines() {
    let long = long_functions(&product_files(), 120);
    assert!(long.is_empty(), "functions over 120 lines: {long:#?}");
    let sample = format!(
        "fn short() {{\n}}\npub(crate) fn long() {{\n{}}}\n#[cfg(test)]\nfn in_tests() {{\n{}}}\n",
        "    x();\n".repeat(3),
        "    y();\n".repeat(9),
    );
    assert_eq!(
        long_functions(&[("a.rs".into(), sample)], 4),
        ["a.rs:3 long (5 lines)"]
    );
}

/// The product files over `max` lines before their tests (`#[cfg(test)]`), as `path (lines)`.
fn long_files(files: &[(String, String)], max: usize) -> Vec<String> {
    (files.iter())
        .filter(|(path, _)| !path.ends_with("tests.rs"))
        .filter_map(|(path, text)| {
            let lines = (text.lines())
                .take_while(|l| !l.starts_with("#[cfg(test)]"))
                .count();
            (lines > max).then(|| format!("{path} ({lines} lines)"))
        })
        .collect()
}

/// No file of tracer/src, tracer-ebpf/src or tracer-common/src is over 900 lines before its
/// tests (CONTRIBUTING.md, "Small pieces").
#[test]
fn no_file_is_over_900_lines() {
    let long = long_files(&product_files(), 900);
    assert!(long.is_empty(), "files over 900 lines: {long:#?}");
    let sample = format!("{}#[cfg(test)]\n{}", "x\n".repeat(3), "y\n".repeat(9));
    assert_eq!(
        long_files(&[("a.rs".into(), sample)], 2),
        ["a.rs (3 lines)"]
    );
}

/// The figures code comments rest on are rows of docs/benchmarks.md's "Figures the code
/// cites" (CONTRIBUTING.md, "Small pieces"): every row a comment names exists, and every row
/// is named by some comment.
#[test]
fn every_figure_the_code_cites_is_a_row_of_the_benchmarks_and_each_row_is_cited() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../docs/benchmarks.md")).expect("readable");
    let section = doc
        .split("## Figures the code cites")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/benchmarks.md has a section \"Figures the code cites\"");
    let rows: BTreeSet<String> = (section.lines())
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next().map(String::from))
        .collect();
    assert!(rows.len() >= 10, "rows: {rows:?}");
    let cited = figures_cited(&product_files());
    let missing: Vec<_> = (cited.iter())
        .filter(|(_, row)| !rows.contains(row))
        .collect();
    let uncited: Vec<_> = (rows.iter())
        .filter(|row| !cited.iter().any(|(_, r)| r == *row))
        .collect();
    assert!(
        missing.is_empty() && uncited.is_empty(),
        "cited rows the table lacks: {missing:?}; rows no comment cites: {uncited:?}"
    );
    let sample = "// as measured (docs/benchmarks.md, \"Figures the code cites\",\n// `a-row`).";
    assert_eq!(
        figures_cited(&[("a.rs".into(), sample.into())]),
        [("a.rs".to_string(), "a-row".to_string())]
    );
}

/// The rows of "Figures the code cites" that the files' comments name: the first backquoted
/// word after each mention of the section, as `(file, row)`.
fn figures_cited(files: &[(String, String)]) -> Vec<(String, String)> {
    let mut cited = Vec::new();
    for (path, text) in files {
        for (at, _) in text.match_indices("Figures the code cites\"") {
            let row = (text[at..].split('`').nth(1)).unwrap_or_default();
            cited.push((path.clone(), row.to_string()));
        }
    }
    cited
}

/// The test suites start tracer through one builder, `common::Tracer` (tests/common/mod.rs):
/// no other test file builds a command of the binary itself, nor keeps a local `fn tracer`
/// that would start it its own way.
#[test]
fn tests_start_tracer_through_the_one_builder() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let mut files = Vec::new();
    sources(&tests, &mut files);
    let mut own = Vec::new();
    let builder_and_this = ["common/mod.rs", "layers.rs"];
    for file in (files.iter()).filter(|f| !builder_and_this.iter().any(|b| f.ends_with(b))) {
        let text = std::fs::read_to_string(file).expect("readable");
        own.extend(own_starts(&text).map(|s| format!("{}: {s}", file.display())));
    }
    assert!(
        own.is_empty(),
        "tracer started outside common::Tracer: {own:?}"
    );
    let sample = "fn tracer(args: &[&str]) {}\nlet c = Command::new(common::tracer_bin());";
    assert_eq!(own_starts(sample).count(), 2);
}

/// The places in `text` that start tracer without the builder.
fn own_starts(text: &str) -> impl Iterator<Item = &'static str> + '_ {
    const OWN: [&str; 3] = [
        "Command::new(tracer_bin",
        "Command::new(common::tracer_bin",
        "fn tracer(",
    ];
    OWN.into_iter().filter(move |p| text.contains(p))
}
