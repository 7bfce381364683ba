//! `tracer list`: what can be probed or counted here, one spec per line (as `tracer probe`
//! and `tracer stat` accept it).

use std::fmt::Write;
use std::path::PathBuf;

use crate::kernel::elf;
use crate::kernel::features::Feature;
use crate::kernel::tracefs::Tracefs;
use crate::output;
use crate::perf::{self, names};
use crate::plan;
use crate::Error;

pub struct ListArgs {
    pub pattern: Option<String>,
    pub verbose: bool,
    pub binary: Option<PathBuf>,
}

pub fn run(args: ListArgs) -> Result<(), Error> {
    // A plain word matches anywhere; a glob or a spec (with `:`) matches the whole spec or the
    // part after its kind, as `bpftrace -l` does.
    let pattern = args.pattern.as_deref().map(|p| {
        if p.contains(['*', '?', ':']) {
            p.to_string()
        } else {
            format!("*{p}*")
        }
    });
    let wanted = |spec: &str| match &pattern {
        None => true,
        Some(p) => {
            plan::glob_match(p, spec)
                || spec
                    .split_once(':')
                    .is_some_and(|(_, rest)| plan::glob_match(p, rest))
        }
    };
    let mut out = String::new();
    if let Some(binary) = &args.binary {
        let path = elf::resolve_file(&binary.to_string_lossy())?;
        for symbol in elf::function_symbols(&path)? {
            let spec = format!("uprobe:{}:{symbol}", path.display());
            // The pattern is about the symbol, not the path every line shares.
            if pattern
                .as_deref()
                .is_none_or(|p| plan::glob_match(p, &symbol))
            {
                let _ = writeln!(out, "{spec}");
            }
        }
        return output::write_stdout(&out);
    }
    let fs = Tracefs::locate().ok();
    if let Some(fs) = &fs {
        for (category, name) in fs.tracepoints() {
            let spec = format!("tracepoint:{category}:{name}");
            if !wanted(&spec) {
                continue;
            }
            let _ = writeln!(out, "{spec}");
            if args.verbose {
                if let Ok(format) = fs.format(&category, &name) {
                    for field in format.fields.iter().filter(|f| !f.name.starts_with("__")) {
                        let _ = writeln!(out, "    {} {}", field.c_type, field.name);
                    }
                }
            }
        }
        // Kernel functions only where a kprobe can actually attach to them.
        let pmu = perf::pmu::Pmus::default()
            .get("kprobe")
            .ok()
            .flatten()
            .is_some();
        if pmu || fs.has_kprobe_events() {
            for function in fs.traceable_functions() {
                let spec = format!("kprobe:{function}");
                if wanted(&spec) {
                    let _ = writeln!(out, "{spec}");
                }
            }
        }
    }
    for (name, _) in names::SOFTWARE {
        let spec = format!("software:{name}");
        if wanted(&spec) {
            let _ = writeln!(out, "{spec}");
        }
    }
    if Feature::HardwareCounters.check().is_available() {
        for (name, _) in names::HARDWARE {
            let spec = format!("hardware:{name}");
            if wanted(&spec) {
                let _ = writeln!(out, "{spec}");
            }
        }
    }
    for pmu in perf::pmu::Pmus::default().names() {
        let spec = format!("pmu:{pmu}");
        if wanted(&spec) {
            let _ = writeln!(out, "{spec}");
        }
    }
    if out.is_empty() {
        if let Some(p) = &args.pattern {
            return Err(Error::usage(
                format!("nothing matches '{p}'"),
                vec!["try a shorter pattern, e.g. `tracer list open`".into()],
            ));
        }
    }
    output::write_stdout(&out)
}
