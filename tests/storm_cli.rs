//! A syscall storm under `tracer trace` at the default ring size (issue #42): alone in its
//! test binary, as a user runs one tracer on this 2-core machine. Beside trace_cli's other
//! tests, which trace and run workloads of their own at the same time, the reader lost up to
//! 13,000 of its 400,000 calls in 1 run of 4 (said, with --ring-pages named), a loss of the
//! test's own making. Alone it lost none in most runs, and 4,014 in one full run of
//! 2026-11-29 (the reader and dd unpinned on 2 cores): how many a reader keeps up with is a
//! benchmark's question (`trace_call`, docs/benchmarks.md), so this test asserts what must
//! hold on any machine, that every call is printed or counted lost.

mod common;

use common::{require_root, text};

/// A one-process syscall storm at the default ring size: Debian's dd makes 200,000 one-byte
/// reads and as many writes, and every one is printed or counted lost (said with
/// --ring-pages named); the reads and writes printed read as strace's.
/// dd's calls besides its reads and writes, at most.
const OTHERS_MAX: usize = 400;

#[test]
fn a_syscall_storm_is_printed_or_counted_lost() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.txt");
    let out = common::tracer(&[
        "trace",
        "-o",
        calls.to_str().unwrap(),
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=200000",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let calls = std::fs::read_to_string(&calls).unwrap();
    let count = |call: &str| calls.lines().filter(|l| *l == call).count();
    let (reads, writes) = (
        count("read(0, \"\\0\", 1) = 1"),
        count("write(1, \"\\0\", 1) = 1"),
    );
    let lost: usize = (stderr.split(" lost,").next())
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no loss count in:\n{stderr}"));
    // dd's own other calls (start-up, the report) are a few hundred (127 with no locale set,
    // 269 with the test's, which loads the locale's files): a lost one of those counts too,
    // so the lost may exceed the reads and writes missing by the others not printed, never
    // more. The bound was 200 until a run lost 11 of the 269.
    let others = calls.lines().count() - reads - writes;
    let other_lines: std::collections::BTreeSet<&str> = (calls.lines())
        .filter(|l| !matches!(*l, "read(0, \"\\0\", 1) = 1" | "write(1, \"\\0\", 1) = 1"))
        .collect();
    assert!(reads <= 200_000 && writes <= 200_000, "{stderr}");
    let missing = 400_000 - reads - writes;
    assert!(
        missing <= lost && lost <= missing + OTHERS_MAX - others.min(OTHERS_MAX),
        "{reads} reads + {writes} writes printed, {lost} lost, {others} other calls: {stderr}\n\
         {other_lines:#?}"
    );
    if lost > 0 {
        assert!(
            stderr.contains("the ring buffer was full; raise --ring-pages (now 512)"),
            "{stderr}"
        );
        eprintln!("note: {lost} of 400,000 calls lost at the default ring size in this run");
    }
}
