//! The VM tier: boot a Debian distribution kernel under qemu (TCG) with the host's `/` as a
//! read-only 9p root plus a tmpfs overlay, run one command as root, and return its exit status.
//!
//! Kernel fetching (private apt configuration, `apt-get download` + `dpkg -x`, never installed)
//! and the initramfs build live in the shell scripts beside this crate (xtask/vm/); this module
//! prepares what is missing, runs qemu with a timeout and reads the exit marker off the console.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::run_cmd;

pub const ALL_KERNELS: [&str; 4] = ["5.10", "6.1", "6.12", "7.3"];

/// Whether tracer's fentry/fexit programs load and link on this kernel: `bpf_get_func_arg`
/// (5.17) and tracing-link cookies (5.19). 5.10 has neither, so kernel functions go through
/// kprobes there.
pub fn has_trampolines(kernel: &str) -> bool {
    kernel != "5.10"
}

/// A guest whose console has been silent this long is hung, and is killed. Every test prints a
/// line as it ends, and the longest takes 76 s under TCG on a loaded host; a whole run's
/// length depends on the host's load (the same suites took 481 s on one CI host and more than
/// 900 s on another, 2.8 times slower), so silence, not length, tells a hang.
const QUIET: Duration = Duration::from_secs(300);
/// A guest that keeps printing is still killed after this long, however busy: a guard
/// against a test that loops printing, not a time limit on the suites (about 500 s on an
/// ordinary host for the longest kernel).
const CEILING: Duration = Duration::from_secs(2400);

fn scripts() -> PathBuf {
    crate::root().join("xtask/vm")
}

fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACER_VM_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/tracer-vm")
}

fn read_env(path: &Path) -> Result<HashMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect())
}

fn newer(a: &Path, b: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(a), modified(b)), (Some(a), Some(b)) if a >= b)
}

/// Downloads and unpacks the kernel, extracts vmlinux and builds the initramfs, as needed.
/// Returns (kernel image, initramfs).
fn prepare(kernel: &str) -> Result<(PathBuf, PathBuf)> {
    let cache = cache_root();
    let dir = cache.join(kernel);
    let env_file = dir.join("kernel.env");
    if !env_file.exists() {
        println!("vm: fetching Debian kernel {kernel} into {}", dir.display());
        run_cmd(
            Command::new("bash")
                .arg(scripts().join("fetch-kernel.sh"))
                .arg(kernel)
                .arg(&cache),
        )
        .with_context(|| format!("cannot fetch kernel {kernel}"))?;
    }
    let env = read_env(&env_file)?;
    let vmlinuz = env.get("VMLINUZ").context("kernel.env has no VMLINUZ")?;
    // The uncompressed ELF boots through the PVH entry: no decompressor run under TCG.
    let vmlinux = dir.join("vmlinux");
    if !vmlinux.exists() {
        run_cmd(
            Command::new("python3")
                .arg(scripts().join("extract-vmlinux.py"))
                .arg(vmlinuz)
                .arg(&vmlinux),
        )
        .context("cannot extract vmlinux")?;
    }
    let initramfs = dir.join("initramfs.cpio");
    let fresh = ["init", "mkinitramfs.sh"]
        .iter()
        .all(|f| newer(&initramfs, &scripts().join(f)));
    if !fresh {
        run_cmd(
            Command::new("bash")
                .arg(scripts().join("mkinitramfs.sh"))
                .arg(kernel)
                .arg(&cache),
        )
        .context("cannot build the initramfs")?;
    }
    Ok((vmlinux, initramfs))
}

fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

fn nonce() -> Result<String> {
    let mut bytes = [0u8; 6];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs `cmd` (host paths; the working directory is kept) as root in a VM booting Debian
/// kernel `kernel`, streaming the console. Returns the command's exit status.
pub fn run(kernel: &str, cmd: &[String]) -> Result<i32> {
    run_capture(kernel, cmd).map(|(code, _)| code)
}

/// [`run`], also returning the command's console lines (from its start marker on), for a
/// caller that reads what the command printed.
pub fn run_capture(kernel: &str, cmd: &[String]) -> Result<(i32, Vec<String>)> {
    if !ALL_KERNELS.contains(&kernel) {
        bail!(
            "unknown kernel '{kernel}': choose one of {}",
            ALL_KERNELS.join(", ")
        );
    }
    let (image, initramfs) = prepare(kernel)?;
    // A stock kernel booting under TCG now and then oopses while it patches its own text,
    // before init runs (seen: 7.3, int3 in sched_clock_cpu). That is no test outcome, so such a
    // boot is tried again, up to 3 boots; a command that started is never run twice.
    for attempt in 1..=3 {
        match boot(kernel, &image, &initramfs, cmd)? {
            Some(done) => return Ok(done),
            None if attempt < 3 => {
                println!("vm: kernel {kernel} died while booting, before the command started: booting it again")
            }
            None => {}
        }
    }
    bail!("kernel {kernel} died 3 times while booting, before the command started (console above)")
}

/// One boot running `cmd`: its exit status and console lines, or `None` when the kernel died
/// before the command started.
fn boot(
    kernel: &str,
    image: &Path,
    initramfs: &Path,
    cmd: &[String],
) -> Result<Option<(i32, Vec<String>)>> {
    let runs = cache_root().join("runs");
    std::fs::create_dir_all(&runs)?;
    let nonce = nonce()?;
    // The command travels as a script on the host filesystem, which the guest sees over 9p at
    // the same path: no quoting through the kernel command line. TRACER_EMULATED tells the
    // tests their CPUs are emulated (see `common::emulated`).
    let script = runs.join(format!("run-{nonce}.sh"));
    let cwd = std::env::current_dir()?;
    let quoted: Vec<String> = cmd.iter().map(|a| shell_quote(a)).collect();
    std::fs::write(
        &script,
        format!(
            "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb TRACER_EMULATED=tcg\n\
             cd {} || exit 254\nexec {}\n",
            shell_quote(&cwd.display().to_string()),
            quoted.join(" ")
        ),
    )?;
    let cmdline = format!(
        "console=ttyS0 quiet loglevel=4 panic=-1 oops=panic mitigations=off rdinit=/init \
         vmtest.script={} vmtest.nonce={nonce}",
        script.display()
    );
    let started = Instant::now();
    // Single-threaded TCG: with one host thread per vCPU, the kernel's int3-based text patching
    // (static keys at boot, kprobes) raced under emulation and oopsed now and then (7.3: int3
    // in sched_clock_cpu while booting, in __schedule while a kprobe was armed). Round-robin
    // vCPUs keep both CPUs for the tests at the same speed here.
    let mut child = Command::new("qemu-system-x86_64")
        .args([
            "-accel",
            "tcg,thread=single",
            "-cpu",
            "max",
            "-machine",
            "pc",
            "-m",
            "1024",
            "-smp",
            "2",
        ])
        .args([
            "-nographic",
            "-no-reboot",
            "-nodefaults",
            "-serial",
            "stdio",
        ])
        .arg("-kernel")
        .arg(image)
        .arg("-initrd")
        .arg(initramfs)
        .args(["-append", &cmdline])
        .args([
            "-fsdev",
            "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap",
        ])
        .args(["-device", "virtio-9p-pci,fsdev=root,mount_tag=hostroot"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start qemu-system-x86_64 (run `cargo xtask setup`)")?;
    let stdout = child.stdout.take().context("qemu stdout")?;
    let marker = format!(" nonce={nonce} ");
    let tag = kernel.to_string();
    // Milliseconds since `started` of the last console line, for the silence watchdog.
    let heard = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let heard_by_reader = heard.clone();
    let reader = std::thread::spawn(move || {
        let (mut began, mut exit, mut lines) = (false, None, Vec::new());
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let line = line.trim_end_matches('\r').to_string();
            heard_by_reader.store(
                started.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            // The time since qemu started, so a slow test shows in the log (a test's line ends
            // when it does).
            println!("[{tag} {:>5.1}s] {line}", started.elapsed().as_secs_f64());
            if began {
                lines.push(line.clone());
            }
            // Markers carry a per-run nonce, so test output cannot forge them; console noise
            // (SeaBIOS escapes) may precede them on the same line.
            if line.contains("VMTEST-START") && line.contains(&marker) {
                began = true;
            }
            if let Some(at) = line.find("VMTEST-EXIT=") {
                if line[at..].contains(&marker) {
                    let rest = &line[at + "VMTEST-EXIT=".len()..];
                    exit = rest
                        .split_whitespace()
                        .next()
                        .and_then(|c| c.parse::<i32>().ok());
                }
            }
        }
        (began, exit, lines)
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        let now = started.elapsed();
        let last = Duration::from_millis(heard.load(std::sync::atomic::Ordering::Relaxed));
        if now > CEILING || now - last.min(now) > QUIET {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (began, exit, lines) = reader.join().unwrap_or((false, None, Vec::new()));
    let _ = std::fs::remove_file(&script);
    println!(
        "vm: kernel {kernel}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    match (status, exit) {
        (None, _) if started.elapsed() > CEILING => bail!(
            "the VM was killed after running {} s, its ceiling (console above)",
            CEILING.as_secs()
        ),
        (None, _) => bail!(
            "the VM hung: its console was silent for {} s, and it was killed (console above)",
            QUIET.as_secs()
        ),
        (_, Some(code)) => Ok(Some((code, lines))),
        (Some(_), None) if !began => Ok(None),
        (Some(status), None) => {
            bail!("the VM ended ({status}) without reporting an exit status (console above)")
        }
    }
}
