//! Globs in probe specs expanded against tracefs, the traceable kernel functions and ELF
//! symbols; the syscall tracepoints near a kernel function's name, for hints.

use crate::kernel::tracefs::Tracefs;
use crate::kernel::{self, elf};
use crate::plan::{self, ProbeSpec, Target, UserAt};
use crate::Error;

/// Expands globs against tracefs, the traceable functions and ELF symbols.
pub fn expand(specs: &[ProbeSpec], fs: &Tracefs) -> Result<Vec<ProbeSpec>, Error> {
    let mut out = Vec::new();
    for spec in specs {
        // A USDT spec names probes in a note, each compiled in at one or more places: always
        // expanded, into one uprobe per place.
        if let Target::User {
            at: UserAt::Usdt { .. },
            ..
        } = &spec.target
        {
            let sites = super::usdt::expand(spec)?;
            if sites.len() > plan::MAX_PROBES_PER_KIND {
                return Err(Error::usage(
                    format!(
                        "'{spec}' matches {} probe sites; at most {} can be attached in one run",
                        sites.len(),
                        plan::MAX_PROBES_PER_KIND
                    ),
                    vec![format!(
                        "narrow the pattern; the first matches are: {}",
                        sites
                            .iter()
                            .take(5)
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )],
                ));
            }
            if sites.len() > 1 {
                crate::output::notes::note(format_args!(
                    "'{spec}' matches {} probe sites",
                    sites.len()
                ));
            }
            out.extend(sites);
            continue;
        }
        if !spec.is_glob() {
            out.push(successor(spec, fs).unwrap_or_else(|| spec.clone()));
            continue;
        }
        let expanded: Vec<ProbeSpec> = match &spec.target {
            Target::Tracepoint { category, name } => fs
                .tracepoints()
                .into_iter()
                .filter(|(c, n)| plan::glob_match(category, c) && plan::glob_match(name, n))
                .map(|(category, name)| ProbeSpec {
                    target: Target::Tracepoint { category, name },
                    ret: false,
                    args: spec.args.clone(),
                })
                .collect(),
            Target::Kernel {
                function,
                offset,
                fentry,
            } => functions(fs)
                .into_iter()
                .filter(|f| plan::glob_match(function, f))
                .map(|f| ProbeSpec {
                    target: Target::Kernel {
                        function: f,
                        offset: *offset,
                        fentry: *fentry,
                    },
                    ret: spec.ret,
                    args: spec.args.clone(),
                })
                .collect(),
            Target::User {
                file,
                at: UserAt::Symbol { name, offset },
            } => {
                let path = elf::resolve_file(file)?;
                elf::function_symbols(&path)?
                    .into_iter()
                    .filter(|s| plan::glob_match(name, s))
                    .map(|s| ProbeSpec {
                        target: Target::User {
                            file: file.clone(),
                            at: UserAt::Symbol {
                                name: s,
                                offset: *offset,
                            },
                        },
                        ret: spec.ret,
                        args: spec.args.clone(),
                    })
                    .collect()
            }
            // USDT probes expand later, against the binary's notes.
            Target::KernelAddr(_)
            | Target::User {
                at: UserAt::Address(_) | UserAt::Usdt { .. },
                ..
            } => vec![spec.clone()],
        };
        if expanded.is_empty() {
            return Err(Error::usage(
                format!("'{spec}' matches nothing"),
                vec!["list what exists with `tracer list PATTERN`".into()],
            ));
        }
        let cap = cap(&spec.target);
        if expanded.len() > cap {
            return Err(Error::usage(
                format!("'{spec}' matches {} probes; at most {cap} of one kind can be attached in one run", expanded.len()),
                vec![format!("narrow the pattern; the first matches are: {}", expanded.iter().take(5).map(ToString::to_string).collect::<Vec<_>>().join(", "))],
            ));
        }
        crate::output::notes::note(format_args!("'{spec}' matches {} probes", expanded.len()));
        out.extend(expanded);
    }
    Ok(out)
}

/// Kernel functions that a kernel version turned into a thin wrapper its compiler inlines into
/// every caller, so that a probe on them attaches and never fires, with the function that
/// does the work now and the reason, as users are told.
const SUCCESSORS: &[(&str, &str, &str)] = &[(
    "do_sys_open",
    "do_sys_openat2",
    "do_sys_open is inlined into its callers since Linux 5.6, so a probe on it never fires; \
     open(2), openat(2) and openat2(2) all run through do_sys_openat2",
)];

/// `do_sys_open` -> `do_sys_openat2` where the kernel has the successor and can probe kernel
/// functions, said at once (a probe that never fires would say nothing). A spec that picks
/// arguments by name keeps its function: the successor's parameters differ.
fn successor(spec: &ProbeSpec, fs: &Tracefs) -> Option<ProbeSpec> {
    let Target::Kernel {
        function,
        offset: 0,
        fentry,
    } = &spec.target
    else {
        return None;
    };
    let &(_, next, why) = SUCCESSORS.iter().find(|(old, _, _)| old == function)?;
    let probes = crate::kernel::features::Feature::KprobePmu
        .check()
        .is_available()
        || fs.has_kprobe_events();
    if !spec.args.is_empty() || !probes || !functions(fs).iter().any(|f| f == next) {
        return None;
    }
    crate::output::notes::note(format_args!("{why}: tracing {next} instead"));
    Some(ProbeSpec {
        target: Target::Kernel {
            function: next.to_string(),
            offset: 0,
            fentry: *fentry,
        },
        ret: spec.ret,
        args: Vec::new(),
    })
}

/// Traceable kernel functions (ftrace's list, else kallsyms text symbols).
pub(super) fn functions(fs: &Tracefs) -> Vec<String> {
    let list = fs.traceable_functions();
    if list.is_empty() {
        kernel::kallsyms_functions()
    } else {
        list
    }
}

/// Syscall tracepoints related to a kernel function name (`do_sys_open` -> the open family,
/// `tcp_connect` -> connect).
pub fn syscall_alternatives(fs: &Tracefs, function: &str) -> Vec<String> {
    let mut base = function;
    for prefix in [
        "__x64_sys_",
        "__ia32_sys_",
        "__se_sys_",
        "__do_sys_",
        "do_sys_",
        "ksys_",
        "sys_",
        "do_",
        "vfs_",
        "__sys_",
        "tcp_v4_",
        "tcp_v6_",
        "tcp_",
        "udp_",
        "inet_",
    ] {
        if let Some(rest) = base.strip_prefix(prefix) {
            base = rest;
            break;
        }
    }
    let base = base.trim_end_matches(|c: char| c.is_ascii_digit());
    if base.len() < 3 {
        return Vec::new();
    }
    let syscalls: Vec<String> = fs
        .tracepoints()
        .into_iter()
        .filter(|(c, _)| c == "syscalls")
        .map(|(_, n)| n)
        .collect();
    let mut found: Vec<&str> = syscalls
        .iter()
        .filter_map(|n| n.strip_prefix("sys_enter_"))
        .filter(|s| s.starts_with(base))
        .collect();
    // The closest names first: open, openat, openat2, then the rest.
    found.sort_by_key(|s| (s.len(), *s));
    found.truncate(3);
    // creat(2) is an open in all but name.
    if base == "open" && syscalls.iter().any(|n| n == "sys_enter_creat") {
        found.push("creat");
    }
    found
        .iter()
        .map(|s| format!("syscalls:sys_enter_{s}"))
        .collect()
}

/// The most probes one glob of this kind may expand to.
fn cap(target: &Target) -> usize {
    match target {
        Target::Tracepoint { .. } => plan::MAX_TRACEPOINTS,
        Target::Kernel { .. } | Target::KernelAddr(_) | Target::User { .. } => {
            plan::MAX_PROBES_PER_KIND
        }
    }
}
