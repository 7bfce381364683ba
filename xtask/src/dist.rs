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
    ] {
        std::fs::copy(files.join(from), place(to)?)?;
    }
    // The copyright file: tracer's own terms, then every crate built into the binary.
    let mut copyright = std::fs::read_to_string(files.join("copyright"))?;
    copyright.push_str(&third_party(&tree.join("usr/share/doc/tracer/licenses"))?);
    std::fs::write(place("usr/share/doc/tracer/copyright")?, copyright)?;
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

/// The crates built into the binary (the normal dependencies of tracer, tracer-common and
/// the BPF crate, for x86-64 Linux, at the lock file's versions): a copyright paragraph
/// listing each with its declared license, and each crate's own license files (with their
/// copyright lines, which the MIT and BSD licenses require be kept) copied under `dir` as
/// `NAME-VERSION/`.
fn third_party(dir: &Path) -> Result<String> {
    let out = cargo()
        .args(["metadata", "--locked", "--format-version", "1"])
        .args(["--filter-platform", TARGET])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let packages: std::collections::HashMap<&str, &serde_json::Value> =
        (meta["packages"].as_array().context("no packages")?.iter())
            .filter_map(|p| Some((p["id"].as_str()?, p)))
            .collect();
    let nodes: std::collections::HashMap<&str, &serde_json::Value> = (meta["resolve"]["nodes"]
        .as_array()
        .context("no resolve graph")?
        .iter())
    .filter_map(|n| Some((n["id"].as_str()?, n)))
    .collect();
    let members: std::collections::HashSet<&str> = (meta["workspace_members"].as_array())
        .context("no workspace members")?
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let ours = ["tracer", "tracer-common", "tracer-ebpf"];
    let mut todo: Vec<&str> = (members.iter().copied())
        .filter(|id| ours.contains(&packages[id]["name"].as_str().unwrap_or("")))
        .collect();
    let mut linked = std::collections::BTreeSet::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        if !members.contains(id) {
            let p = packages[id];
            let name = p["name"].as_str().unwrap_or("?").to_string();
            let version = p["version"].as_str().unwrap_or("?").to_string();
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or(""));
            let license = p["license"].as_str().map(str::to_string);
            linked.insert((name, version, license, manifest));
        }
        for dep in nodes[id]["deps"].as_array().into_iter().flatten() {
            let normal =
                (dep["dep_kinds"].as_array().into_iter().flatten()).any(|k| k["kind"].is_null());
            if let (true, Some(pkg)) = (normal, dep["pkg"].as_str()) {
                todo.push(pkg);
            }
        }
    }
    let mut text = String::from(
        "\nFiles: usr/share/doc/tracer/licenses/*\n\
         License: various\n \
         The crates built into usr/bin/tracer, at the versions of tracer's Cargo.lock, each\n \
         with the license its Cargo.toml declares. Each crate's own license files, with\n \
         their copyright lines, are in /usr/share/doc/tracer/licenses/NAME-VERSION/.\n .\n",
    );
    let mut without = Vec::new();
    for (name, version, license, manifest) in &linked {
        let Some(license) = license else {
            bail!("{name} {version} declares no license: cannot package it");
        };
        let crate_dir = manifest.parent().context("a manifest in a directory")?;
        let mut copied = 0;
        for entry in std::fs::read_dir(crate_dir)? {
            let path = entry?.path();
            let file_name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
            let upper = file_name.to_ascii_uppercase();
            let is_license = [
                "LICENSE",
                "LICENCE",
                "COPYING",
                "COPYRIGHT",
                "NOTICE",
                "UNLICENSE",
            ]
            .iter()
            .any(|prefix| upper.starts_with(prefix));
            if is_license && path.is_file() {
                let to = dir.join(format!("{name}-{version}")).join(file_name);
                std::fs::create_dir_all(to.parent().expect("a directory"))?;
                std::fs::copy(&path, &to)?;
                copied += 1;
            }
        }
        if copied == 0 {
            without.push(name.as_str());
        }
        text.push_str(&format!(" {name} {version}: {license}\n"));
    }
    if !without.is_empty() {
        text.push_str(&format!(
            " .\n These crates ship no license file of their own (their repository's applies): {}.\n",
            without.join(", ")
        ));
    }
    text.push_str(
        " .\n On Debian systems the Apache License 2.0 and the GNU LGPL 2.1 are in\n \
         /usr/share/common-licenses/.\n",
    );
    println!("dist: {} crates listed in the copyright file", linked.len());
    Ok(text)
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
