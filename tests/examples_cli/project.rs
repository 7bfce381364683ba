//! The project's own commands the README shows: `cargo xtask`, the package.

use super::*;

pub(crate) fn xtask_run_probe(ctx: &Ctx, example: &str) {
    // `cargo xtask run -- ARGS` sets up, builds in release mode and runs `tracer ARGS`: the
    // tracer part is checked here (the build is what `cargo xtask test` already does).
    let args = example.strip_prefix("cargo xtask run -- ").unwrap();
    let (stdout, stderr) = ok(&ctx.run(&words(&format!("tracer {args}"), &[])));
    check_openat_cat(&stdout, &stderr);
}

pub(crate) fn xtask_test(_ctx: &Ctx, example: &str) {
    // Not run from here: it runs every tier, this test among them.
    let _ = writeln!(
        std::io::stderr(),
        "note: `{example}` is the runner of this test; it is not run from inside it"
    );
}

/// `cargo xtask test` runs it before the tiers and names the directory in TRACER_DIST: the
/// binary is there and static, the package named by the version.
pub(crate) fn xtask_dist(_ctx: &Ctx, example: &str) {
    let Some(dist) = std::env::var_os("TRACER_DIST").map(PathBuf::from) else {
        let _ = writeln!(
            std::io::stderr(),
            "note: `{example}` is checked under `cargo xtask test` (TRACER_DIST), which runs it"
        );
        return;
    };
    let out = Command::new("file")
        .arg(dist.join("tracer"))
        .output()
        .unwrap();
    let (file, _) = ok(&out);
    assert!(file.contains("static"), "{file}");
    let deb = format!("tracer_{}_amd64.deb", env!("CARGO_PKG_VERSION"));
    assert!(dist.join(&deb).exists(), "no {deb} in {}", dist.display());
}

/// The package README names is the one `cargo xtask dist` writes (its version is this
/// build's); tests/dist_vm.rs installs it, in a throwaway root.
pub(crate) fn readme_dpkg(_ctx: &Ctx, example: &str) {
    let deb = format!("target/dist/tracer_{}_amd64.deb", env!("CARGO_PKG_VERSION"));
    assert_eq!(example, format!("dpkg -i {deb}"));
    if let Some(dist) = std::env::var_os("TRACER_DIST").map(PathBuf::from) {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(
            std::fs::canonicalize(root.join(&deb)).unwrap(),
            std::fs::canonicalize(dist.join(deb.trim_start_matches("target/dist/"))).unwrap()
        );
    }
}

pub(crate) fn readme_transport(ctx: &Ctx, example: &str) {
    // README names the option; completed with the probe and command of its quick start.
    let full = format!("{example} syscalls:sys_enter_openat -- cat /etc/hostname");
    let (stdout, stderr) = ok(&ctx.run(&words(&full, &[])));
    check_openat_cat(&stdout, &stderr);
}
