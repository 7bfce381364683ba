//! tracer's symbolizer (`tracer::stacks::Symbolizer`: kallsyms, per-process mappings, ELF
//! symbols through `object`, lines through `addr2line`) against blazesym (libbpf's symbolizer)
//! on the same addresses, one implementation per process so that each one's memory is its own.
//!
//! `symbench kernel IMPL` symbolizes every 8th text symbol of /proc/kallsyms (at +4);
//! `symbench user IMPL PID` every function symbol (at +1) of the executable and the libraries
//! mapped by PID. IMPL is `tracer` or `blazesym`. Two passes over the addresses: the first
//! (cold) reads the files, the second (warm) only looks up. Prints one JSON line: times, peak
//! RSS growth, how many addresses got a name and a source line, and each address's name (the
//! bench compares the two implementations' names).

use std::time::Instant;

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};
use blazesym::{MaybeDefault, Pid};

/// What an address was named: the function, and the source line when there was one.
type Named = Option<(String, Option<u32>)>;

enum Impl {
    Tracer(Box<tracer::stacks::Symbolizer>),
    Blaze(Box<Blaze>),
}

impl Impl {
    fn pass(&mut self, pid: u32, addrs: &[u64]) -> Vec<Named> {
        match self {
            Impl::Tracer(sym) => addrs
                .iter()
                .map(|&addr| {
                    // Not cached by address (as `frame` is): each pass looks every address up.
                    let frame = sym.sampled_frame(pid, addr, true);
                    frame.symbol.map(|s| (s, frame.line))
                })
                .collect(),
            Impl::Blaze(sym) => {
                let source = match pid {
                    0 => Source::Kernel(Kernel {
                        // kallsyms, as tracer reads: no vmlinux search.
                        vmlinux: MaybeDefault::None,
                        debug_syms: false,
                        ..Kernel::default()
                    }),
                    pid => Source::Process(Process::new(Pid::from(pid))),
                };
                let found = sym
                    .symbolize(&source, Input::AbsAddr(addrs))
                    .expect("blazesym symbolizes");
                found
                    .into_iter()
                    .map(|s| match s {
                        Symbolized::Sym(sym) => Some((
                            sym.name.into_owned(),
                            sym.code_info.as_ref().and_then(|c| c.line),
                        )),
                        Symbolized::Unknown(_) => None,
                    })
                    .collect()
            }
        }
    }
}

/// Peak resident memory of this process so far, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmHWM:")?
                .trim()
                .strip_suffix(" kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Every 8th text symbol of /proc/kallsyms, 4 bytes in.
fn kernel_addresses() -> Vec<u64> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
    let mut addrs: Vec<u64> = kallsyms
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?;
            let module = l.contains('[');
            (matches!(kind, "t" | "T") && addr != 0 && !module).then_some(addr + 4)
        })
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs.into_iter().step_by(8).collect()
}

/// Function symbols (at +1) of the executable and libraries PID maps executable, by the
/// file's symbol tables (`nm`, dynamic ones where the static table was stripped).
fn user_addresses(pid: u32) -> Vec<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("read the maps");
    let mut addrs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(perms), Some(offset), Some(path)) =
            (f.first(), f.get(1), f.get(2), f.get(5))
        else {
            continue;
        };
        if !perms.contains('x') || !path.starts_with('/') || !seen.insert(path.to_string()) {
            continue;
        }
        let start = u64::from_str_radix(range.split('-').next().unwrap_or("0"), 16).unwrap_or(0);
        let offset = u64::from_str_radix(offset, 16).unwrap_or(0);
        // Debian's objects load their text at file offset == address offset.
        let bias = start - offset;
        let pie_or_so = std::process::Command::new("readelf")
            .args(["-h", path])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).contains("DYN"))
            .unwrap_or(true);
        let bias = if pie_or_so { bias } else { 0 };
        for dynamic in [false, true] {
            let mut nm = std::process::Command::new("nm");
            nm.args(["--defined-only", "-S"]);
            if dynamic {
                nm.arg("-D");
            }
            let out = nm.arg(path).output().expect("run nm");
            let text = String::from_utf8_lossy(&out.stdout);
            let before = addrs.len();
            for l in text.lines() {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() == 4 && matches!(f[2], "t" | "T" | "W" | "i") {
                    let (Ok(value), Ok(size)) =
                        (u64::from_str_radix(f[0], 16), u64::from_str_radix(f[1], 16))
                    else {
                        continue;
                    };
                    if size > 1 {
                        addrs.push(bias + value + 1);
                    }
                }
            }
            if addrs.len() > before {
                break;
            }
        }
    }
    addrs.sort_unstable();
    addrs.dedup();
    addrs
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, which) = (args[0].as_str(), args[1].as_str());
    let pid: u32 = match kind {
        "kernel" => 0,
        _ => args[2].parse().expect("PID"),
    };
    let addrs = match kind {
        "kernel" => kernel_addresses(),
        _ => user_addresses(pid),
    };
    let base = peak_kib();
    let mut sym = match which {
        "tracer" => Impl::Tracer(Box::default()),
        _ => Impl::Blaze(Box::new(Blaze::new())),
    };
    let start = Instant::now();
    let cold_names = sym.pass(pid, &addrs);
    let cold = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let warm_names = sym.pass(pid, &addrs);
    let warm = start.elapsed().as_secs_f64();
    assert_eq!(cold_names, warm_names, "two passes named the same");
    let named = cold_names.iter().flatten().count();
    let lines = cold_names
        .iter()
        .flatten()
        .filter(|(_, l)| l.is_some())
        .count();
    let names: Vec<serde_json::Value> = addrs
        .iter()
        .zip(&cold_names)
        .map(|(a, n)| serde_json::json!([a, n.as_ref().map(|(s, l)| (s, l))]))
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "kind": kind, "impl": which, "addresses": addrs.len(),
            "cold_ms": cold * 1e3, "warm_ms": warm * 1e3,
            "peak_growth_kib": peak_kib().saturating_sub(base),
            "named": named, "with_line": lines, "names": names,
        })
    );
}
