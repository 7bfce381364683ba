//! `cargo xtask setup`: everything a fresh machine needs, each step skipped when satisfied.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::run_cmd;

/// Debian packages: LLVM 22 for bpf-linker (and the llvm-objcopy that strips the BPF object),
/// qemu and busybox for the VM tier, cpio/xz/zstd to build initramfs images and unpack kernel
/// modules, linux-perf for the `tracer stat` tests that compare with /usr/bin/perf, gcc for the
/// C workload the stack and DWARF tests trace, systemtap-sdt-dev for the <sys/sdt.h> of the USDT
/// workload, Debian's python3 (built with USDT probes) for the Python probe test, libc6-dbg
/// (libc's separate debug info, found by build-id) so that user stacks name libc's own
/// functions with their lines, as the docs show and the stack tests expect.
const APT_PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libzstd-dev",
    "zlib1g-dev",
    "qemu-system-x86",
    "busybox-static",
    "cpio",
    "xz-utils",
    "zstd",
    "linux-perf",
    "gcc",
    "systemtap-sdt-dev",
    "python3",
    "libc6-dbg",
    // `tracer serve`'s integration test scrapes it with a real Prometheus server.
    "prometheus",
    // `go tool pprof` reads `tracer profile -f pprof`'s files and fetches serve's profiles.
    "golang-go",
    // The peers `tracer trace` is compared with, and the corpus's node program.
    "strace",
    "nodejs",
    // tests/dist_vm.rs: the package's completion is loaded as bash-completion loads it, its
    // pages read with man, its exporter scraped with curl in a namespace set up with ip.
    "bash-completion",
    "man-db",
    "curl",
    "iproute2",
    // tests/examples_cli.rs: `cargo xtask dist`'s binary is static, as file(1) says.
    "file",
    // tests/profile_cli.rs serves a stripped program's debug file from a local debuginfod.
    "debuginfod",
    // docs/tools.md's TLS tools: the test's certificate is made with openssl req.
    "openssl",
    // docs/tools.md's xfsdist, xfsslower, ext4slower: the VM tier makes XFS and ext4 images.
    "xfsprogs",
    "e2fsprogs",
    // docs/tools.md's mdflush: the VM tier makes an md array of two loop devices.
    "mdadm",
];

const BPF_LINKER_VERSION: &str = "0.13.0";

pub fn all() -> Result<()> {
    crate::section("setup");
    rust_src()?;
    apt_packages()?;
    bpf_linker()?;
    cargo_fuzz()?;
    tracefs()?;
    Ok(())
}

fn ok(step: &str, detail: &str) {
    println!("setup: {step}: {detail}");
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn rust_src() -> Result<()> {
    let Some(sysroot) =
        output(Command::new("rustup").args(["run", "nightly", "rustc", "--print", "sysroot"]))
    else {
        bail!(
            "the nightly Rust toolchain is missing (the BPF programs need -Z build-std)\n\
             hint: rustup toolchain install nightly --profile minimal"
        );
    };
    if Path::new(&sysroot)
        .join("lib/rustlib/src/rust/library/core")
        .exists()
    {
        ok("rust-src", "present in the nightly toolchain");
        return Ok(());
    }
    ok("rust-src", "installing for nightly");
    run_cmd(Command::new("rustup").args(["component", "add", "rust-src", "--toolchain", "nightly"]))
        .context("cannot add rust-src to the nightly toolchain")
}

fn installed(package: &str) -> bool {
    output(Command::new("dpkg-query").args(["-W", "-f=${Status}", package]))
        .is_some_and(|s| s.ends_with("installed") && !s.contains("not-installed"))
}

fn apt_packages() -> Result<()> {
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|p| !installed(p))
        .collect();
    if missing.is_empty() {
        ok("apt packages", "all installed");
        return Ok(());
    }
    ok("apt packages", &format!("installing {}", missing.join(" ")));
    run_cmd(Command::new("apt-get").args(["update", "-qq"]))
        .context("apt-get update failed (run as root)")?;
    run_cmd(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .context("apt-get install failed (run as root)")
}

fn bpf_linker() -> Result<()> {
    if let Some(version) = output(Command::new("bpf-linker").arg("--version")) {
        if version.contains(BPF_LINKER_VERSION) {
            ok("bpf-linker", &version);
            return Ok(());
        }
    }
    ok(
        "bpf-linker",
        &format!("building {BPF_LINKER_VERSION} against LLVM 22 (about a minute)"),
    );
    run_cmd(
        Command::new("cargo")
            .args([
                "install",
                "--locked",
                &format!("bpf-linker@{BPF_LINKER_VERSION}"),
                "--no-default-features",
                "--features",
                "llvm-22,llvm-link-static",
            ])
            .env("LLVM_PREFIX", "/usr/lib/llvm-22"),
    )
    .context("cannot build bpf-linker (needs llvm-22-dev, libzstd-dev, zlib1g-dev)")
}

/// cargo-fuzz drives the fuzz targets in fuzz/ (the fuzz step of `cargo xtask test`).
fn cargo_fuzz() -> Result<()> {
    if let Some(version) = output(Command::new("cargo").args(["fuzz", "--version"])) {
        ok("cargo-fuzz", &version);
        return Ok(());
    }
    ok("cargo-fuzz", "installing (about a minute)");
    run_cmd(Command::new("cargo").args(["install", "--locked", "cargo-fuzz"]))
        .context("cannot install cargo-fuzz")
}

fn tracefs() -> Result<()> {
    if Path::new("/sys/kernel/tracing/events").is_dir() {
        ok("tracefs", "mounted at /sys/kernel/tracing");
        return Ok(());
    }
    ok("tracefs", "mounting at /sys/kernel/tracing");
    run_cmd(Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]))
        .context("cannot mount tracefs (run as root)")
}
