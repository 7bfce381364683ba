//! A syscall storm under `tracer trace` at the default ring size (issue #42): alone in its
//! test binary, as a user runs one tracer on this 2-core machine. Beside trace_cli's other
//! tests, which trace and run workloads of their own at the same time, the reader lost up to
//! 13,000 of its 400,000 calls in 1 run of 4 (said, with --ring-pages named), a loss of the
//! test's own making.

mod common;

use common::{require_root, text};

/// A one-process syscall storm at the default ring size: Debian's dd makes 200,000 one-byte
/// reads and as many writes, and every one is printed, none lost. Emulated CPUs run the
/// reader too slowly for that: there every call is printed or counted lost.
#[test]
fn a_syscall_storm_loses_nothing_at_the_default_size() {
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
    if common::emulated(
        "a_syscall_storm",
        "every call printed or counted lost, not none lost",
    ) {
        assert!(
            reads + writes + lost >= 400_000,
            "{reads} + {writes} + {lost}: {stderr}"
        );
        return;
    }
    assert_eq!((reads, writes, lost), (200_000, 200_000, 0), "{stderr}");
}
