//! Builds tracer-ebpf for bpfel-unknown-none with aya-build; the object is embedded in the binary.

use std::path::Path;
use std::process::Command;

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tracer-ebpf");
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-changed=../tracer-common/src");
    check_prerequisites()?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracer-ebpf",
            root_dir: root.to_str().expect("UTF-8 path"),
            ..Default::default()
        }],
        aya_build::Toolchain::Nightly,
    )
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
