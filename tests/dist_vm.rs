//! What `cargo xtask dist` builds (xtask/src/dist.rs), checked where a user meets it: the static
//! binary in a root that holds nothing else, and the Debian package installed with `dpkg -i`,
//! its man pages read with `man`, its bash completion loaded by bash-completion, its systemd
//! unit's command line serving /metrics, then removed and purged.
//!
//! `cargo xtask test` builds the artifacts first and names their directory in TRACER_DIST, for
//! the host tier and the VM tier: the binary runs on every kernel; the package is installed on
//! the host only, in a throwaway overlay of its root (under TCG, dpkg reading its database
//! over 9p took 140 s; the package does not depend on the kernel). Without TRACER_DIST the
//! tests say so and pass.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::{require_root, skip, text};

/// The directory holding `tracer` and `tracer_VERSION_amd64.deb`, when given.
fn dist(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TRACER_DIST").map(PathBuf::from);
    if dir.is_none() {
        skip(&format!(
            "{test}: skipped: needs `cargo xtask dist`'s artifacts in TRACER_DIST and a root it \
             may change (the VM tier of `cargo xtask test` gives both)"
        ));
    }
    dir
}

fn sh(script: &str) -> Output {
    Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("sh")
}

#[test]
fn the_static_binary_traces_in_a_root_that_holds_nothing_else() {
    let Some(dist) = dist("static binary") else {
        return;
    };
    require_root();
    // The root: the binary, a static busybox to trace, and the kernel's file systems.
    let root = tempfile::tempdir().unwrap();
    let r = root.path().display().to_string();
    std::fs::copy(dist.join("tracer"), root.path().join("tracer")).unwrap();
    std::fs::copy("/bin/busybox", root.path().join("busybox")).unwrap();
    for dir in ["proc", "sys", "dev"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    let listing: Vec<String> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listing.len(), 5, "{listing:?}");
    // A mount namespace of its own, so that the mounts go with it.
    let out = sh(&format!(
        "unshare -m sh -c 'mount -t proc proc {r}/proc && mount -t sysfs sysfs {r}/sys && \
         (mount -t tracefs tracefs {r}/sys/kernel/tracing 2>/dev/null; true) && \
         mount --bind /dev {r}/dev && \
         chroot {r} /tracer trace -e execve,write -- /busybox echo hello'"
    ));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}\n{stdout}{stderr}", out.status);
    assert_eq!(stdout, "hello\n", "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        lines.iter().any(|l| l
            .starts_with(r#"execve("/busybox", ["/busybox", "echo", "hello"], "#)
            && l.ends_with(" = 0")),
        "{stderr}"
    );
    assert!(lines.contains(&r#"write(1, "hello\n", 6) = 6"#), "{stderr}");
    // The summary, after the exit line; after it only the note of programs the kernel
    // skipped (Debian's 7.3 under emulation: other tasks' calls, the two above are here).
    let summary = (lines.iter().position(|l| l.starts_with("2 calls in ")))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(lines[summary].contains(" status 0; 0 lost, "), "{stderr}");
    assert_eq!(lines[summary - 1], "+++ exited with 0 +++", "{stderr}");
    assert!(
        lines[summary + 1..]
            .iter()
            .all(|l| l.starts_with("up to ") && l.contains(" hits missed: ")),
        "{stderr}"
    );
}

/// The steps the package test takes inside its throwaway root, each printed between markers
/// (`=== NAME` ... `=== rc N`) for the test to read. `$1` is the root's directory, `$2` the
/// package. The root is an overlay of the host's `/` with a tmpfs on top, in a mount and
/// network namespace of its own: what dpkg writes goes with it, and the exporter's port is
/// the namespace's loopback.
const IN_A_THROWAWAY_ROOT: &str = r#"
set -u
R=$1 DEB=$2
mount -t tmpfs tmpfs "$R" && mkdir "$R/upper" "$R/work" "$R/root" || exit 90
mount -t overlay overlay -o "lowerdir=/,upperdir=$R/upper,workdir=$R/work" "$R/root" || exit 91
M=$R/root
mount -t proc proc "$M/proc" && mount -t sysfs sysfs "$M/sys" && mount --rbind /dev "$M/dev" || exit 92
mount -t tracefs tracefs "$M/sys/kernel/tracing" 2>/dev/null
mount -t tmpfs tmpfs "$M/tmp" && cp "$DEB" "$M/tmp/tracer.deb" || exit 93
ip link set lo up || exit 94
step() { name=$1; shift; echo "=== $name"; chroot "$M" "$@" 2>&1; echo "=== rc $?"; }
step install dpkg -i /tmp/tracer.deb
step status dpkg -s tracer
step version tracer --version
step man env MANWIDTH=100 LANG=C.UTF-8 man -P cat tracer-probe
step man-path man -w tracer
step copyright sh -c 'cat /usr/share/doc/tracer/copyright; ls /usr/share/doc/tracer/licenses/inferno-*/'
step complete-sub bash -c "$COMPLETE" complete 'tracer pro'
step complete-flag bash -c "$COMPLETE" complete 'tracer trace --fa'
step serve sh -c "$SERVE"
step remove dpkg -r tracer
step after-remove sh -c 'ls /usr/bin/tracer /usr/share/man/man1/tracer-probe.1.gz /usr/share/bash-completion/completions/tracer /usr/lib/systemd/system/tracer-serve.service /etc/tracer/serve.toml 2>&1'
step purge dpkg -P tracer
step after-purge sh -c 'ls /etc/tracer 2>&1; dpkg -s tracer 2>&1'
"#;

/// What bash offers at TAB after the line in `$1`, as an interactive bash with
/// bash-completion would: the completion is loaded on demand by name (from where the package
/// put it), then called as bash calls it.
const COMPLETE: &str = r#"
line=$1
source /usr/share/bash-completion/bash_completion
__load_completion tracer || exit 3
spec=$(complete -p tracer) || exit 4
fn=${spec#*-F }; fn=${fn%% *}
read -ra COMP_WORDS <<<"$line"
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE=$line; COMP_POINT=${#line}
$fn tracer "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' '
"#;

/// The unit's ExecStart= started as systemd starts it (its words, no shell), scraped until a
/// scrape holds a count (series appear with their first hit), stopped with SIGTERM as
/// `systemctl stop` does; prints the scrape and the exporter's exit status.
const SERVE: &str = r#"
exec=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/tracer-serve.service)
listen=$(echo "$exec" | sed -n 's/.*--listen \([^ ]*\).*/\1/p')
[ -n "$listen" ] || { echo "no --listen in ExecStart=$exec"; exit 5; }
$exec >/tmp/serve.out 2>&1 &
pid=$!
for i in $(seq 300); do
  curl -s "http://$listen/metrics" >/tmp/metrics && grep -q '^tracer_syscalls_total{' /tmp/metrics && break
  sleep 0.2
done
kill -TERM $pid; wait $pid; rc=$?
cat /tmp/metrics
echo "exporter exit status $rc"
"#;

/// The output of each step, by name, and its exit status.
fn steps(out: &str) -> Vec<(String, String, i32)> {
    let mut steps = Vec::new();
    let mut lines = out.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("=== ") else {
            continue;
        };
        let mut body = String::new();
        for line in lines.by_ref() {
            if let Some(rc) = line.strip_prefix("=== rc ") {
                steps.push((name.to_string(), body, rc.parse().unwrap()));
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
    }
    steps
}

#[test]
fn the_package_installs_documents_completes_serves_and_purges() {
    let Some(dist) = dist("package") else {
        return;
    };
    if std::env::var_os("TRACER_EMULATED").is_some() {
        skip(
            "package: skipped in the VM tier: the package does not depend on the kernel, and \
             dpkg reading its database over 9p took 140 s under TCG; the host tier installs it",
        );
        return;
    }
    require_root();
    let version = env!("CARGO_PKG_VERSION");
    let deb = dist.join(format!("tracer_{version}_amd64.deb"));
    assert!(deb.exists(), "no {}", deb.display());
    let root = tempfile::tempdir().unwrap();
    let out = Command::new("unshare")
        .args(["--mount", "--net", "--propagation", "private", "sh", "-c"])
        .arg(IN_A_THROWAWAY_ROOT)
        .arg("sh")
        .arg(root.path())
        .arg(&deb)
        .env("COMPLETE", COMPLETE)
        .env("SERVE", SERVE)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let all = text(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {all}{}",
        out.status,
        text(&out.stderr)
    );
    let steps = steps(&all);
    let names: Vec<&str> = steps.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "install",
            "status",
            "version",
            "man",
            "man-path",
            "copyright",
            "complete-sub",
            "complete-flag",
            "serve",
            "remove",
            "after-remove",
            "purge",
            "after-purge"
        ],
        "{all}"
    );
    let step = |name: &str| -> (&str, i32) {
        let (_, body, rc) = steps.iter().find(|(n, ..)| n == name).unwrap();
        (body.as_str(), *rc)
    };
    let ran = |name: &str| -> &str {
        let (body, rc) = step(name);
        assert_eq!(rc, 0, "{name}: {body}");
        body
    };
    ran("install");
    assert!(ran("status").contains("Status: install ok installed"));
    assert!(ran("version").starts_with(&format!("tracer {version} (commit ")));

    // man finds the page by name; its examples are there to copy, with ASCII hyphens.
    let page = ran("man");
    assert!(
        page.contains("tracer-probe - Trace kernel functions, user functions and tracepoints"),
        "{page}"
    );
    assert!(page.contains("\nEXAMPLES\n"), "{page}");
    assert!(
        page.contains("tracer probe syscalls:sys_enter_openat -- cat /etc/hostname"),
        "{page}"
    );
    assert_eq!(ran("man-path"), "/usr/share/man/man1/tracer.1.gz\n");

    // The copyright file lists every crate built in, at the lock file's version, with its
    // license; each crate's own license file is installed beside it.
    let copyright = ran("copyright");
    let lock =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
    let locked = |name: &str| -> String {
        let at = lock
            .find(&format!("name = \"{name}\"\nversion = \""))
            .expect(name);
        lock[at..].lines().nth(1).unwrap()["version = \"".len()..]
            .trim_end_matches('"')
            .into()
    };
    for (name, license) in [
        ("btf-rs", "LGPL-2.1-or-later"),
        ("inferno", "CDDL-1.0"),
        ("framehop", "MIT OR Apache-2.0"),
    ] {
        let line = format!("\n {name} {}: {license}\n", locked(name));
        assert!(copyright.contains(&line), "{line:?} in:\n{copyright}");
    }
    assert!(
        copyright.ends_with("\nLICENSE\n"),
        "inferno's LICENSE: {copyright}"
    );

    assert_eq!(ran("complete-sub"), "probe profile\n");
    assert_eq!(ran("complete-flag"), "--failed\n");

    let metrics = ran("serve");
    assert!(
        metrics.contains("\ntracer_syscalls_total{comm=\""),
        "{metrics}"
    );
    assert!(
        metrics.contains("\ntracer_read_bytes_bucket{le=\"+Inf\"} "),
        "{metrics}"
    );
    assert!(metrics.ends_with("exporter exit status 0\n"), "{metrics}");

    ran("remove");
    // Every file is gone but the config, a conffile: kept by remove, deleted by purge.
    let (left, _) = step("after-remove");
    let left: Vec<&str> = left
        .lines()
        .filter(|l| !l.contains("No such file"))
        .collect();
    assert_eq!(left, ["/etc/tracer/serve.toml"]);
    ran("purge");
    let (after, _) = step("after-purge");
    assert!(after.contains("ls: cannot access '/etc/tracer'"), "{after}");
    assert!(
        after.contains("package 'tracer' is not installed"),
        "{after}"
    );
}
