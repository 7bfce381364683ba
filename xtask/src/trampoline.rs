//! `cargo xtask bench fentry_hit`: the cost of one hit of a kernel function probe through its
//! BPF trampoline (fentry) against a kprobe, tracer and bpftrace side by side, in a VM
//! booting a Debian kernel (this host permits neither kprobes nor fentry).
//!
//! The host boots the VM with this same xtask binary as its command (`guest-bench`), which
//! measures there as the host benches do ([`crate::peers::per_event`]) and prints its table
//! and a `BENCH-JSON` line; the host reads that line back from the console and saves it.
//!
//! The numbers are TCG's, an emulated CPU: a trap (the kprobe's int3) costs much more there
//! than on hardware, so the ratios are the result, not the nanoseconds.

use anyhow::{bail, Context, Result};

use crate::peers::{build, launching, per_event, report, s};
use crate::section;

/// The kernels measured: the oldest and the newest with tracer's trampoline programs.
const KERNELS: [&str; 2] = ["6.1", "7.3"];

/// The function every getppid(2) calls (through the inline `task_tgid_vnr`), in every kernel's BTF
/// (fentry needs that; the syscall wrapper `__x64_sys_getppid` is not in Debian's BTF).
const FUNCTION: &str = "__task_pid_nr_ns";

pub fn fentry_hit() -> Result<()> {
    section("bench: a kernel function hit, fentry vs kprobe (in a VM, TCG)");
    let (tracer, prog) = build()?;
    let xtask = std::env::current_exe().context("the xtask binary")?;
    let mut results = Vec::new();
    for kernel in KERNELS {
        let cmd = vec![
            xtask.display().to_string(),
            "guest-bench".to_string(),
            tracer.clone(),
            prog.clone(),
        ];
        let (code, lines) = crate::vm::run_capture(kernel, &cmd)?;
        if code != 0 {
            bail!("the bench inside the {kernel} VM failed (exit status {code}; console above)");
        }
        let json = (lines.iter())
            .find_map(|l| l.split_once("BENCH-JSON ").map(|(_, j)| j.to_string()))
            .context("the VM printed no BENCH-JSON line")?;
        let rows: serde_json::Value = serde_json::from_str(&json)?;
        results.push(serde_json::json!({"kernel": kernel, "rows": rows}));
    }
    crate::bench::save(
        "fentry_hit",
        &serde_json::json!({"bench": "fentry_hit", "version": 1, "function": FUNCTION,
            "machine_note": "qemu TCG (emulated CPU), 2 vCPUs", "kernels": results})
        .to_string(),
    )
}

/// Inside the VM: getppid calls counted by comm at [`FUNCTION`], through tracer's
/// fentry and kprobe and bpftrace's fentry and kprobe. Not pinned: a TCG VM's two vCPUs are
/// one host thread.
pub fn guest(args: &[String]) -> Result<()> {
    let [tracer, prog] = args else {
        bail!("usage: xtask guest-bench TRACER TESTPROG");
    };
    let base = |n: u64| s(&[prog, "--elapsed", "--cpu", "0", "getppid", &n.to_string()]);
    let (big, small) = (20_000, 2_000);
    let tracer_via = |how: &'static str| {
        move |n: u64| {
            let argv = [
                tracer,
                "probe",
                "--count-by",
                "comm",
                "--kprobe-interface",
                how,
            ];
            launching(&[&argv[..], &[FUNCTION]].concat(), base(n))
        }
    };
    let mut rows = vec![
        (
            "tracer --count-by comm (fentry)".to_string(),
            per_event(&tracer_via("fentry"), &base, big, small),
        ),
        (
            "tracer --count-by comm (kprobe)".to_string(),
            per_event(&tracer_via("pmu"), &base, big, small),
        ),
    ];
    // Debian's bpftrace (0.17) spells fentry `kfunc:` (its `fentry:` aborts).
    for (label, attach) in [("fentry", "kfunc"), ("kprobe", "kprobe")] {
        let script = format!("{attach}:{FUNCTION} {{ @[comm] = count(); }}");
        rows.push((
            format!("bpftrace @[comm] = count() ({label})"),
            per_event(
                &|n| s(&["bpftrace", "-e", &script, "-c", &base(n).join(" ")]),
                &base,
                big,
                small,
            ),
        ));
    }
    let json = report(
        &format!("{FUNCTION} hit, counted by comm: cost per hit, median of 5 rounds"),
        "hit",
        &rows,
    );
    println!("BENCH-JSON {json}");
    Ok(())
}
