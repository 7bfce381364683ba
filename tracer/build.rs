//! Builds tracer-ebpf for bpfel-unknown-none with aya-build; the object is embedded in the binary.

use std::path::Path;
use std::process::Command;

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer-ebpf");
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-changed=../tracer-common/src");
    build_identity();
    check_prerequisites()?;
    // aya-build passes every line the BPF sub-build prints on as a `warning:` of this crate
    // (41 of them, `Compiling ...`, at a `cargo install`): quiet, the sub-build prints only
    // its real warnings and errors. Set before the sub-build starts; no other thread runs.
    // SAFETY: build scripts are single-threaded here.
    unsafe { std::env::set_var("CARGO_TERM_QUIET", "true") };
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: root.to_str().expect("UTF-8 path"),
            ..Default::default()
        }],
        aya_build::Toolchain::Nightly,
    )?;
    strip_probes()
}

/// The git commit the binary is built from and whether tracked files differed from it, so
/// that two builds can be told apart across a fleet (`tracer --version`, `tracer_build_info`):
/// `TRACER_GIT_COMMIT` (`unknown` outside a git checkout), `TRACER_GIT_MODIFIED` (`true`,
/// `false`, `unknown`), `TRACER_LONG_VERSION` and `TRACER_BUILD_DATE`. Looked at again when HEAD, the index or
/// tracer's sources change.
fn build_identity() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let modified = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if changes.is_empty() => "false",
        Some(_) => "true",
        None => "unknown",
    };
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=src");
    let commit = commit.unwrap_or_else(|| "unknown".into());
    let version = env!("CARGO_PKG_VERSION");
    let long = match modified {
        "true" => format!("{version} (commit {commit}, modified)"),
        _ => format!("{version} (commit {commit})"),
    };
    println!("cargo:rustc-env=TRACER_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=TRACER_GIT_MODIFIED={modified}");
    println!("cargo:rustc-env=TRACER_LONG_VERSION={long}");
    // The man pages' date: the commit's, so that two builds of one commit write the same pages
    // (reproducible builds); empty outside git.
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_default();
    println!("cargo:rustc-env=TRACER_BUILD_DATE={date}");
}

/// Drops the DWARF and BTF sections from the probes object (2.1 MB -> 0.3 MB). tracer loads it
/// with BTF off (none of its programs needs CO-RE or BTF-typed maps), so those sections were
/// only parsed at every start and kept resident. The features object keeps its BTF: fentry
/// and tp_btf programs need it.
fn strip_probes() -> anyhow::Result<()> {
    let out = std::env::var("OUT_DIR")?;
    let object = Path::new(&out).join("tracer-probes");
    let objcopy = objcopy();
    let status = Command::new(&objcopy)
        .args([
            "--strip-debug",
            "--remove-section=.BTF",
            "--remove-section=.BTF.ext",
            "--remove-section=.rel.BTF",
            "--remove-section=.rel.BTF.ext",
        ])
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => anyhow::bail!(
            "{} could not strip {} (needed to keep tracer's start-up small)\n\
             hint: run `cargo xtask setup`, which installs LLVM 22 (llvm-objcopy comes with it)",
            objcopy.display(),
            object.display()
        ),
    }
}

/// LLVM 22's llvm-objcopy (the one bpf-linker is built against), else one on PATH.
fn objcopy() -> std::path::PathBuf {
    let prefix = std::env::var("LLVM_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let path = Path::new(&prefix).join("bin/llvm-objcopy");
    if path.exists() {
        path
    } else {
        "llvm-objcopy".into()
    }
}

/// Fails early, naming the command that fixes it, when the BPF toolchain is incomplete.
fn check_prerequisites() -> anyhow::Result<()> {
    let linker = Command::new("bpf-linker").arg("--version").output();
    if !matches!(linker, Ok(ref out) if out.status.success()) {
        anyhow::bail!(
            "bpf-linker is not installed (needed to link tracer's BPF programs)\n\
             hint: run `cargo xtask setup`, which installs it with LLVM 22"
        );
    }
    let sysroot = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--print", "sysroot"])
        .output();
    let Ok(sysroot) = sysroot else {
        anyhow::bail!(
            "rustup is not available to run the nightly toolchain\nhint: run `cargo xtask setup`"
        );
    };
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    if sysroot.is_empty()
        || !Path::new(&sysroot)
            .join("lib/rustlib/src/rust/library/core")
            .exists()
    {
        anyhow::bail!(
            "the nightly toolchain or its rust-src component is missing (needed for -Z build-std=core)\n\
             hint: run `cargo xtask setup` (or `rustup component add rust-src --toolchain nightly`)"
        );
    }
    Ok(())
}
