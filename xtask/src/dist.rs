//! `cargo xtask dist`: what a user installs without a Rust toolchain, LLVM or bpf-linker.
//!
//! - `target/dist/tracer`: one static x86-64 binary (glibc linked in, `+crt-static`), stripped,
//!   with the BPF object embedded as in every build. No musl: rustup cannot fetch the musl
//!   target's standard library here, and glibc's static build needs nothing tracer does not
//!   have (tracer resolves no user or host names, so glibc's NSS, which static binaries cannot
//!   load, is never called).
//! - `target/dist/tracer_VERSION_amd64.deb`: that binary, `tracer(1)` and one page per
//!   subcommand, bash, zsh and fish completions (all written by `tracer generate` from the clap
//!   model), a systemd unit for `tracer serve` with an example config (a conffile), the
//!   copyright file. It depends on nothing.
//!
//! tests/dist_vm.rs checks both in the VM tier: the binary in an empty root on every kernel,
//! the package installed, used and removed on the guest's throwaway root.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, root, run_cmd, section};

const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Builds both artifacts; returns `target/dist`.
pub fn run() -> Result<PathBuf> {
    section("dist: a static binary and a Debian package");
    let dist = root().join("target/dist");
    let binary = static_binary(&dist)?;
    let deb = package(&dist, &binary)?;
    println!(
        "dist: {} ({} bytes, static), {} ({} bytes)",
        binary.display(),
        std::fs::metadata(&binary)?.len(),
        deb.display(),
        std::fs::metadata(&deb)?.len()
    );
    Ok(dist)
}

fn static_binary(dist: &Path) -> Result<PathBuf> {
    // The target-specific variable, so that build scripts and proc macros (which cannot be
    // static) are built as usual, and the BPF sub-build is left alone. `--locked`: the lock
    // file the tests ran against.
    run_cmd(
        cargo()
            .args(["build", "--locked", "--profile", "dist", "--target", TARGET])
            .args(["-p", "tracer", "--bin", "tracer"])
            .env(
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
                "-C target-feature=+crt-static",
            ),
    )?;
    let built = root().join(format!("target/{TARGET}/dist/tracer"));
    let image =
        std::fs::read(&built).with_context(|| format!("cannot read {}", built.display()))?;
    if has_interpreter(&image)? {
        bail!(
            "{} asks for a dynamic loader (PT_INTERP): the static build did not take",
            built.display()
        );
    }
    std::fs::create_dir_all(dist)?;
    let binary = dist.join("tracer");
    std::fs::copy(&built, &binary)?;
    Ok(binary)
}

/// Whether an ELF64 executable names a program interpreter, i.e. is not static.
fn has_interpreter(image: &[u8]) -> Result<bool> {
    const PT_INTERP: u32 = 3;
    if image.len() < 64 || &image[..4] != b"\x7fELF" || image[4] != 2 {
        bail!("not an ELF64 file");
    }
    let u16_at = |at: usize| u16::from_le_bytes([image[at], image[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(image[0x20..0x28].try_into()?) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    Ok((0..count).any(|i| {
        let at = phoff + i * size;
        image
            .get(at..at + 4)
            .is_some_and(|t| u32::from_le_bytes(t.try_into().unwrap()) == PT_INTERP)
    }))
}

fn version() -> Result<String> {
    let manifest = std::fs::read_to_string(root().join("tracer/Cargo.toml"))?;
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .map(str::to_string)
        .context("no version in tracer/Cargo.toml")
}

fn package(dist: &Path, binary: &Path) -> Result<PathBuf> {
    let version = version()?;
    let tree = dist.join("deb");
    if tree.exists() {
        std::fs::remove_dir_all(&tree)?;
    }
    let place = |path: &str| -> Result<PathBuf> {
        let full = tree.join(path);
        std::fs::create_dir_all(full.parent().expect("a file in a directory"))?;
        Ok(full)
    };
    std::fs::copy(binary, place("usr/bin/tracer")?)?;
    // Man pages, gzipped without a timestamp (-n), as dh_compress does.
    let man = place("usr/share/man/man1/tracer.1")?
        .parent()
        .unwrap()
        .to_path_buf();
    run_cmd(Command::new(binary).arg("generate").arg("man").arg(&man))?;
    for page in std::fs::read_dir(&man)? {
        run_cmd(Command::new("gzip").arg("-9n").arg(page?.path()))?;
    }
    for (what, path) in [
        (
            "complete-bash",
            "usr/share/bash-completion/completions/tracer",
        ),
        ("complete-zsh", "usr/share/zsh/vendor-completions/_tracer"),
        (
            "complete-fish",
            "usr/share/fish/vendor_completions.d/tracer.fish",
        ),
    ] {
        let out = Command::new(binary).args(["generate", what]).output()?;
        if !out.status.success() {
            bail!("tracer generate {what} failed");
        }
        std::fs::write(place(path)?, out.stdout)?;
    }
    let files = root().join("dist");
    for (from, to) in [
        (
            "tracer-serve.service",
            "usr/lib/systemd/system/tracer-serve.service",
        ),
        ("serve.toml", "etc/tracer/serve.toml"),
        ("copyright", "usr/share/doc/tracer/copyright"),
    ] {
        std::fs::copy(files.join(from), place(to)?)?;
    }
    control(&tree, &version)?;
    let deb = dist.join(format!("tracer_{version}_amd64.deb"));
    run_cmd(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&tree)
            .arg(&deb),
    )?;
    Ok(deb)
}

/// DEBIAN/control, conffiles and md5sums.
fn control(tree: &Path, version: &str) -> Result<()> {
    let mut files = Vec::new();
    walk(tree, &mut files)?;
    // Installed-Size as dpkg-gencontrol counts it: KiB per file, rounded up.
    let kib: u64 = files
        .iter()
        .map(|f| Ok(std::fs::metadata(f)?.len().div_ceil(1024)))
        .sum::<Result<u64>>()?;
    let meta = tree.join("DEBIAN");
    std::fs::create_dir_all(&meta)?;
    std::fs::write(
        meta.join("control"),
        format!(
            "Package: tracer\n\
             Version: {version}\n\
             Architecture: amd64\n\
             Maintainer: The tracer developers <tracer@localhost>\n\
             Installed-Size: {kib}\n\
             Section: devel\n\
             Priority: optional\n\
             Description: what is the kernel, or this process, doing?\n \
             tracer traces and counts with BPF and perf events, from one static binary\n \
             that needs no compiler at run time: kernel and user probes and tracepoints\n \
             (tracer probe), system calls as strace shows them (tracer trace), hardware\n \
             watchpoints (tracer watch), latency histograms (tracer latency), CPU and\n \
             off-CPU profiles (tracer profile), perf-stat counters (tracer stat), recorded\n \
             timelines (tracer record, report) and a Prometheus exporter (tracer serve).\n"
        ),
    )?;
    std::fs::write(meta.join("conffiles"), "/etc/tracer/serve.toml\n")?;
    let mut sums = String::new();
    for file in files.iter().filter(|f| !f.starts_with(tree.join("etc"))) {
        let relative = file.strip_prefix(tree)?;
        let out = Command::new("md5sum").arg(file).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let sum = text
            .split_whitespace()
            .next()
            .context("md5sum printed nothing")?;
        sums.push_str(&format!("{sum}  {}\n", relative.display()));
    }
    std::fs::write(meta.join("md5sums"), sums)?;
    Ok(())
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}
