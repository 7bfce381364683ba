//! `tracer list`: what can be probed or counted here, one spec per line (as `tracer probe`
//! and `tracer stat` accept it).

use std::path::{Path, PathBuf};

use crate::kernel::elf;
use crate::kernel::features::Feature;
use crate::kernel::tracefs::Tracefs;
use crate::output::{self, list::Entry};
use crate::perf::{self, names};
use crate::plan::list::ListPattern;
use crate::Error;

pub struct ListArgs {
    pub pattern: Option<String>,
    pub verbose: bool,
    pub binary: Option<PathBuf>,
}

pub fn run(args: ListArgs) -> Result<(), Error> {
    let pattern = ListPattern::new(args.pattern.as_deref());
    let mut out = Vec::new();
    // Why tracepoints and kernel functions are missing from the list, if they are.
    let mut unlisted = None;
    let usdt = (args.pattern.as_deref()).and_then(|p| p.strip_prefix("usdt:"));
    match (&args.binary, usdt) {
        (_, Some(rest)) => usdt_lines(rest, &mut out)?,
        (Some(binary), None) => binary_lines(binary, &pattern, &mut out)?,
        (None, None) => {
            match Tracefs::locate() {
                Ok(fs) => kernel_lines(&fs, &pattern, args.verbose, &mut out),
                Err(e) => unlisted = Some(e),
            }
            event_lines(&pattern, &mut out);
        }
    }
    if let (true, Some(p), None, None) = (out.is_empty(), &args.pattern, &args.binary, usdt) {
        // Nothing matches what could be read: the unreadable part may hold the match.
        if let Some(e @ crate::kernel::Error::TracefsDenied { .. }) = unlisted {
            return Err(e.into());
        }
        return Err(Error::usage(
            format!("nothing matches '{p}'"),
            vec!["try a shorter pattern, e.g. `tracer list open`".into()],
        ));
    }
    if let Some(e) = unlisted {
        output::notes::note(format_args!(
            "tracepoints and kernel functions are not listed: {e}"
        ));
    }
    output::write_stdout(&output::list::text(&out))
}

/// `usdt:PATH[:PATTERN]`: the binary's USDT probes (matching `PROVIDER:NAME` or `NAME`
/// globs), each with its arguments' types and specs.
fn usdt_lines(rest: &str, out: &mut Vec<Entry>) -> Result<(), Error> {
    let (file, pattern) = match rest.split_once(':') {
        Some((file, pattern)) => (file, Some(pattern)),
        None => (rest, None),
    };
    let listing = crate::probe::usdt::listing(file, pattern)?;
    if listing.is_empty() {
        return Err(Error::usage(
            format!(
                "no USDT probe of {file} matches '{}'",
                pattern.unwrap_or("*")
            ),
            vec![format!("list them all with `tracer list usdt:{file}`")],
        ));
    }
    for (spec, fields) in listing {
        let mut entry = Entry::new(spec);
        entry.fields = fields;
        out.push(entry);
    }
    Ok(())
}

/// `--binary`: its function symbols as uprobe specs.
fn binary_lines(binary: &Path, pattern: &ListPattern, out: &mut Vec<Entry>) -> Result<(), Error> {
    let path = elf::resolve_file(&binary.to_string_lossy())?;
    for symbol in elf::function_symbols(&path)? {
        if pattern.keeps_symbol(&symbol) {
            out.push(Entry::new(format!("uprobe:{}:{symbol}", path.display())));
        }
    }
    Ok(())
}

/// Tracepoints (with their fields when verbose) and, where a kprobe can actually attach to
/// them, kernel functions.
fn kernel_lines(fs: &Tracefs, pattern: &ListPattern, verbose: bool, out: &mut Vec<Entry>) {
    for (category, name) in fs.tracepoints() {
        let spec = format!("tracepoint:{category}:{name}");
        if !pattern.keeps(&spec) {
            continue;
        }
        let mut entry = Entry::new(spec);
        if let (true, Ok(format)) = (verbose, fs.format(&category, &name)) {
            entry.fields = (format.fields.iter())
                .filter(|f| !f.name.starts_with("__"))
                .map(|f| (f.c_type.clone(), f.name.clone()))
                .collect();
        }
        out.push(entry);
    }
    let pmu = (perf::pmu::Pmus::default().get("kprobe").ok())
        .flatten()
        .is_some();
    if pmu || fs.has_kprobe_events() {
        for function in fs.traceable_functions() {
            let spec = format!("kprobe:{function}");
            if pattern.keeps(&spec) {
                out.push(Entry::new(spec));
            }
        }
    }
}

/// Software events, hardware events where the CPU counts them, and PMUs.
fn event_lines(pattern: &ListPattern, out: &mut Vec<Entry>) {
    let software = names::SOFTWARE.iter().map(|(n, _)| format!("software:{n}"));
    let hardware = match Feature::HardwareCounters.check().is_available() {
        true => names::HARDWARE
            .iter()
            .map(|(n, _)| format!("hardware:{n}"))
            .collect(),
        false => Vec::new(),
    };
    let pmus = (perf::pmu::Pmus::default().names().into_iter()).map(|p| format!("pmu:{p}"));
    for spec in software.chain(hardware).chain(pmus) {
        if pattern.keeps(&spec) {
            out.push(Entry::new(spec));
        }
    }
}
