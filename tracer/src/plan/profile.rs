//! `tracer profile` input -> a profile plan: on-CPU sampling or off-CPU time, whose tasks,
//! which stacks, for how long, and the report's form.

use std::time::Duration;

use super::{check_task, parse_duration_ns, Machine, Whom};
use crate::cli::{ProfileArgs, ProfileFormat};
use crate::Error;

/// On-CPU samples per second when `-F` is not given: 99, as perf's and BCC's profilers, off
/// the kernel's timer tick so samples do not lock step with periodic work.
pub const DEFAULT_HZ: u64 = 99;
/// The highest `-F` accepted: perf's default `kernel.perf_event_max_sample_rate` (100,000)
/// halved, the rate above which the kernel starts throttling sampling events.
pub const MAX_HZ: u64 = 50_000;
/// `--off-cpu` blocks shorter than this are left out unless `--min-block` says otherwise
/// (offcputime's default, 1 us: below it a switch is scheduling noise).
pub const DEFAULT_MIN_BLOCK_NS: u64 = 1_000;

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Samples of what runs, `hz` per second on each CPU.
    OnCpu { hz: u64 },
    /// Time blocked, by stack, for blocks of at least `min_block_ns`.
    OffCpu { min_block_ns: u64 },
}

/// How user stacks are walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwind {
    /// By frame pointers, in the kernel, and counted there.
    FramePointers,
    /// From the binaries' call frame information, in tracer, given each sample's registers
    /// and the top `stack_bytes` of its stack.
    Dwarf { stack_bytes: u32 },
}

/// perf's default stack copy for `--call-graph dwarf`.
pub const DEFAULT_STACK_BYTES: u32 = 8192;
pub use crate::kernel::unwind::MAX_STACK_BYTES;

/// A validated `tracer profile`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfilePlan {
    pub mode: Mode,
    /// Whose stacks are profiled: every task on every CPU (`-a`, or nothing given), `-p
    /// PID`'s threads (and with `follow` the children it starts from then on), or `--
    /// COMMAND` and its children.
    pub whom: Whom,
    /// `-p` without `-i`: the process's children started during the run are profiled too.
    pub follow: bool,
    pub kernel: bool,
    pub user: bool,
    pub unwind: Unwind,
    pub duration: Option<Duration>,
    /// `-I`: a text report of each interval.
    pub interval: Option<Duration>,
    pub top: usize,
    pub format: ProfileFormat,
    pub file: Option<std::path::PathBuf>,
}

impl ProfilePlan {
    /// Whether the output shows user frames' source lines (text, JSON, pprof): folded lines
    /// and flame graphs do not, and their run reads no DWARF line tables.
    pub fn shows_lines(&self) -> bool {
        !matches!(self.format, ProfileFormat::Folded | ProfileFormat::Svg)
    }
}

/// Every check of `tracer profile`'s input, before anything is opened.
pub fn profile_plan(args: &ProfileArgs, machine: &dyn Machine) -> Result<ProfilePlan, Error> {
    if let Some(name) = (args.file.as_deref()).and_then(|f| f.to_str()) {
        if matches!(name, "json" | "text" | "folded" | "svg") {
            return Err(Error::usage_hints(format!("-o writes the output to a file; '{name}' is a format"), &[&format!("for {name} output use -f {name} (to write a file named {name}, give -o ./{name})")]));
        }
    }
    let mode = match (args.off_cpu, args.freq, &args.min_block) {
        (true, Some(_), _) => {
            return Err(Error::usage_hints(
                "-F sets the on-CPU sampling rate; --off-cpu measures every block, unsampled",
                &["drop -F, or drop --off-cpu to sample what runs"],
            ))
        }
        (false, _, Some(_)) => {
            return Err(Error::usage_hints(
                "--min-block filters the blocks of --off-cpu",
                &["add --off-cpu, e.g. tracer profile --off-cpu --min-block 1ms -p PID"],
            ))
        }
        (true, None, min) => Mode::OffCpu {
            min_block_ns: match min {
                Some(text) => parse_duration_ns(text).map_err(|e| {
                    Error::usage_hints(e, &["e.g. --min-block 1ms, --min-block 500us"])
                })?,
                None => DEFAULT_MIN_BLOCK_NS,
            },
        },
        (false, hz, None) => {
            let hz = hz.unwrap_or(DEFAULT_HZ);
            if hz == 0 || hz > MAX_HZ {
                return Err(Error::usage_hints(
                    format!("-F {hz}: the sampling rate must be 1 to {MAX_HZ} per second"),
                    &["99 (the default) costs almost nothing; 999 gives finer shares"],
                ));
            }
            Mode::OnCpu { hz }
        }
    };
    let whom =
        match (args.pid, args.command.is_empty()) {
            (Some(pid), true) => {
                check_task(pid, false, machine)?;
                Whom::Processes(vec![pid])
            }
            (None, false) => Whom::Command(args.command.clone()),
            (None, true) => Whom::Everyone,
            (Some(_), false) => return Err(Error::usage_hints(
                "give either -p PID or -- COMMAND",
                &["profile either a running process (-p) or a command tracer starts (-- COMMAND)"],
            )),
        };
    if args.interval.is_some() && args.format != ProfileFormat::Text {
        let name = match args.format {
            ProfileFormat::Folded => "folded",
            ProfileFormat::Svg => "svg",
            ProfileFormat::Pprof => "pprof",
            _ => "json",
        };
        return Err(Error::usage_hints(
            format!(
                "-I prints a text report of each interval; -f {name} is written once, at the end"
            ),
            &[&format!(
                "drop -I for one {name} profile of the whole run, or drop -f for text reports"
            )],
        ));
    }
    let unwind = unwind(args)?;
    let follow = args.pid.is_some() && !args.no_inherit;
    if args.no_inherit && matches!(unwind, Unwind::Dwarf { .. }) {
        // The kernel samples what the process starts through `inherit`, with no BPF program
        // to tell a child's sample from the process's own.
        return Err(Error::usage_hints("-i with --call-graph dwarf: dwarf mode samples the process's threads and children alike", &["drop -i, or use frame pointers (--call-graph fp) to profile the process alone"]));
    }
    if args.top == 0 {
        return Err(Error::usage_hints(
            "--top 0 would show no stacks",
            &["give the number of stacks to list, e.g. --top 20"],
        ));
    }
    Ok(ProfilePlan {
        mode,
        whom,
        follow,
        kernel: !args.user_only,
        user: !args.kernel_only,
        unwind,
        duration: args.duration,
        interval: args.interval,
        top: args.top,
        format: args.format,
        file: args.file.clone(),
    })
}

/// `--call-graph MODE`, perf record's spelling: `fp`, `dwarf` or `dwarf,SIZE`.
fn unwind(args: &ProfileArgs) -> Result<Unwind, Error> {
    let Some(mode) = args.call_graph_mode.as_deref() else {
        return Ok(Unwind::FramePointers);
    };
    let unwind = call_graph(mode)?;
    if let Unwind::Dwarf { .. } = unwind {
        if args.kernel_only {
            return Err(Error::usage_hints("--call-graph dwarf unwinds user stacks; --kernel-only takes none", &["drop --kernel-only, or --call-graph (kernel stacks need no unwind information)"]));
        }
    }
    Ok(unwind)
}

/// A `--call-graph MODE` as perf record spells it (`fp`, `dwarf`, `dwarf,SIZE`), for `tracer
/// profile` and `tracer record`.
pub fn call_graph(mode: &str) -> Result<Unwind, Error> {
    let (kind, size) = match mode.split_once(',') {
        Some((kind, size)) => (kind, Some(size)),
        None => (mode, None),
    };
    let unwind = match (kind, size) {
        ("fp", None) => Unwind::FramePointers,
        ("dwarf", size) => {
            let stack_bytes = match size {
                None => DEFAULT_STACK_BYTES,
                Some(text) => match text.parse::<u32>() {
                    Ok(n) if (8..=MAX_STACK_BYTES).contains(&n) && n % 8 == 0 => n,
                    _ => {
                        return Err(Error::usage_hints(format!("--call-graph {mode}: the stack size must be a multiple of 8 from 8 to {MAX_STACK_BYTES}"), &["e.g. --call-graph dwarf,16384 (perf's default, and tracer's, is 8192)"]))
                    }
                },
            };
            Unwind::Dwarf { stack_bytes }
        }
        ("lbr", _) => {
            return Err(Error::usage_hints(
                "--call-graph lbr needs Intel's last branch records, which tracer does not read",
                &["use --call-graph dwarf for programs without frame pointers"],
            ))
        }
        _ => {
            return Err(Error::usage_hints(
                format!("unknown --call-graph mode '{mode}'"),
                &["use fp (frame pointers) or dwarf[,SIZE] (unwound from .eh_frame)"],
            ))
        }
    };
    Ok(unwind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::FakeMachine;

    fn plan(line: &str) -> Result<ProfilePlan, Error> {
        let mut words = vec!["tracer", "profile"];
        words.extend(line.split_whitespace());
        let cli = crate::cli::parse(words.into_iter().map(Into::into).collect())
            .map_err(|(e, _)| Error::usage(e.to_string(), vec![]))?;
        let crate::cli::Command::Profile(args) = cli.command else {
            unreachable!()
        };
        profile_plan(&args, &FakeMachine::CPUS_128)
    }

    fn refused(line: &str) -> (String, Vec<String>) {
        match plan(line) {
            Err(Error::Usage { message, hints }) => (message, hints),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn defaults_sample_every_cpu_at_99_hz_with_both_stacks() {
        let p = plan("").unwrap();
        assert_eq!(p.mode, Mode::OnCpu { hz: 99 });
        assert_eq!(p.whom, Whom::Everyone);
        assert!(p.kernel && p.user);
        assert_eq!(p.top, 10);
        assert_eq!(crate::units::clock_period_ns(99), 10_101_010);
    }

    #[test]
    fn only_formats_that_show_source_lines_read_them() {
        let shown = |f: &str| plan(&format!("-f {f} -o /tmp/x")).unwrap().shows_lines();
        let formats = ["text", "json", "pprof", "folded", "svg"];
        assert_eq!(
            formats.map(shown),
            [true, true, true, false, false],
            "{formats:?}"
        );
    }

    #[test]
    fn off_cpu_takes_a_minimum_block_time() {
        let p = plan("--off-cpu --min-block 2ms -- sleep 1").unwrap();
        assert_eq!(
            p.mode,
            Mode::OffCpu {
                min_block_ns: 2_000_000
            }
        );
        assert_eq!(p.whom, Whom::Command(vec!["sleep".into(), "1".into()]));
        assert_eq!(
            plan("--off-cpu").unwrap().mode,
            Mode::OffCpu { min_block_ns: 1000 }
        );
    }

    #[test]
    fn bad_input_is_explained() {
        assert!(refused("-F 0").0.contains("1 to 50000"));
        assert!(refused("-F 1000000").0.contains("-F 1000000"));
        assert!(refused("--off-cpu -F 99").1[0].contains("drop -F"));
        assert!(refused("--min-block 1ms").1[0].contains("--off-cpu"));
        assert!(refused("--off-cpu --min-block soon").1[0].contains("--min-block 1ms"));
        // The help says a unit is needed: a bare number is refused, with the units.
        assert!(refused("--off-cpu --min-block 1000")
            .0
            .contains("needs a unit"));
        assert!(refused("-o svg").1[0].contains("-f svg"));
        assert!(refused("--top 0").0.contains("--top 0"));
        assert!(refused("-I 1s -f svg").1[0].contains("drop -I"));
        assert_eq!(
            plan("-I 500ms").unwrap().interval,
            Some(Duration::from_millis(500))
        );
        assert!(refused("-p 0").0.contains("--pid 0"));
        assert!(refused("-p 300").0.contains("has exited"));
        assert_eq!(plan("-p 100").unwrap().whom, Whom::Processes(vec![100]));
    }

    /// `-p` follows the children the process starts, as in probe, latency and stat; `-i`
    /// keeps to the process, and needs `-p`.
    #[test]
    fn a_process_is_followed_into_its_children_unless_no_inherit() {
        assert!(plan("-p 100").unwrap().follow);
        assert!(!plan("-p 100 -i").unwrap().follow);
        assert!(!plan("-- sleep 1").unwrap().follow);
        assert!(plan("-i").is_err());
        let (error, hints) = refused("-p 100 -i --call-graph dwarf");
        assert!(error.contains("-i with --call-graph dwarf"), "{error}");
        assert!(hints[0].contains("--call-graph fp"), "{hints:?}");
    }

    #[test]
    fn call_graph_takes_perfs_modes() {
        assert_eq!(plan("").unwrap().unwind, Unwind::FramePointers);
        assert_eq!(
            plan("--call-graph fp").unwrap().unwind,
            Unwind::FramePointers
        );
        assert_eq!(
            plan("--call-graph dwarf").unwrap().unwind,
            Unwind::Dwarf { stack_bytes: 8192 }
        );
        assert_eq!(
            plan("--call-graph dwarf,16384 -- gzip").unwrap().unwind,
            Unwind::Dwarf { stack_bytes: 16384 }
        );
        assert!(refused("--call-graph dwarf,100")
            .0
            .contains("multiple of 8"));
        assert!(refused("--call-graph dwarf,65536").0.contains("65528"));
        assert!(refused("--call-graph lbr").1[0].contains("dwarf"));
        assert!(refused("--call-graph dwarfs").0.contains("unknown"));
        let off = plan("--call-graph dwarf --off-cpu --min-block 1ms").unwrap();
        assert_eq!(
            off.mode,
            Mode::OffCpu {
                min_block_ns: 1_000_000
            }
        );
        assert_eq!(off.unwind, Unwind::Dwarf { stack_bytes: 8192 });
        assert!(refused("--call-graph dwarf --kernel-only")
            .0
            .contains("--kernel-only"));
    }

    #[test]
    fn stack_sides_can_be_narrowed() {
        let p = plan("--kernel-only").unwrap();
        assert!(p.kernel && !p.user);
        let p = plan("--user-only -F 999").unwrap();
        assert!(!p.kernel && p.user);
        assert_eq!(p.mode, Mode::OnCpu { hz: 999 });
    }
}
