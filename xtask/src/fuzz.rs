//! The fuzz tier: run each libFuzzer target in fuzz/ (cargo-fuzz, nightly) for a bounded time
//! and fail on the first crash, naming the input libFuzzer saved.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Result};

use crate::run_cmd;

/// The targets in fuzz/fuzz_targets/: the record parser and the ring reader, the two places
/// that read bytes the kernel (or a hostile ring) wrote.
pub const TARGETS: [&str; 2] = ["record_parse", "ring_drain"];

/// Seconds per target in `cargo xtask test`: long enough to cover the parsers' branches from
/// the saved corpus, short enough to keep the tier under a minute.
pub const DEFAULT_SECONDS: u64 = 12;

/// A single input running this long is a hang, reported like a crash.
const INPUT_TIMEOUT_SECONDS: u64 = 10;

/// `cargo +nightly fuzz` from the repository root, where cargo-fuzz finds fuzz/.
fn cargo_fuzz() -> Command {
    // The rustup proxy, not $CARGO: `+nightly` selects the toolchain (sanitizer flags).
    let mut cmd = Command::new("cargo");
    cmd.current_dir(crate::root()).args(["+nightly", "fuzz"]);
    cmd
}

/// Builds every target once, then fuzzes each for `seconds` (the corpus in fuzz/corpus/ grows
/// across runs). Fails naming each target that crashed and the input it crashed on.
pub fn run(seconds: u64) -> Result<()> {
    run_cmd(cargo_fuzz().arg("build"))?;
    let mut failed = Vec::new();
    for target in TARGETS {
        println!("--- fuzz {target}: {seconds} s");
        let started = SystemTime::now();
        let result = run_cmd(cargo_fuzz().args([
            "run",
            target,
            "--",
            &format!("-max_total_time={seconds}"),
            &format!("-timeout={INPUT_TIMEOUT_SECONDS}"),
        ]));
        let Err(err) = result else {
            println!("--- fuzz {target}: passed");
            continue;
        };
        match newest_artifact(target, started) {
            Some(artifact) => {
                println!(
                    "--- fuzz {target}: FAILED, input saved to {}",
                    artifact.display()
                );
                println!(
                    "    reproduce: cargo +nightly fuzz run {target} {}",
                    artifact.display()
                );
                failed.push(format!("{target} ({})", artifact.display()));
            }
            None => {
                println!("--- fuzz {target}: FAILED (no input saved): {err:#}");
                failed.push(target.to_string());
            }
        }
    }
    if !failed.is_empty() {
        bail!("fuzzing found crashes in: {}", failed.join(", "));
    }
    Ok(())
}

/// The input libFuzzer wrote (crash-*, leak-*, timeout-*, oom-*) during this run: the newest
/// file in fuzz/artifacts/TARGET/ modified since `since`.
fn newest_artifact(target: &str, since: SystemTime) -> Option<PathBuf> {
    // Filesystem timestamps may be coarser than the clock.
    let since = since.checked_sub(Duration::from_secs(2))?;
    let dir = crate::root().join("fuzz/artifacts").join(target);
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let modified = entry.metadata().ok()?.modified().ok()?;
            (modified >= since).then(|| (modified, entry.path()))
        })
        .max()
        .map(|(_, path)| path)
}
