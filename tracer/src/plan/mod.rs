//! Raw command-line input -> validated plans. No side effects: every user-input check lives here.

mod aggregation;
pub mod filter;
pub mod latency;
pub mod list;
pub mod profile;
pub mod record;
pub mod serve;
mod spec;
pub mod stat;
pub mod trace;
pub mod watch;

pub use crate::units::{parse_duration_ns, parse_seconds};
pub use watch::{parse_watch_target, WatchTarget};

use aggregation::valid_value_name;
pub use aggregation::{aggregation, linear, Aggregation, KeyPart, Linear, ValueOp};
pub use spec::{
    glob_match, is_kernel_address, parse_args, parse_bare_spec, parse_spec, reader, similar,
    ProbeSpec, Reader, Target, UserAt, MAX_PROBES_PER_KIND, MAX_TRACEPOINTS,
};
pub(crate) use spec::{parse_number, valid_name};

use crate::Error;

/// Where a command's data goes, and in what form (`-o FILE`, `-f text|json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub format: crate::output::events::Format,
    /// `None`: standard output.
    pub file: Option<std::path::PathBuf>,
}

/// `-o FILE` and `-f FORMAT`, checked: `-o` always names a file, so `-f json` (the format
/// flag of older tracers, and a natural guess) is refused rather than written to a file
/// named `json`; `-o ./json` writes that file.
pub fn output(args: &crate::cli::OutputArgs) -> Result<Output, Error> {
    if let Some(name) = (args.file.as_deref()).and_then(|f| f.to_str()) {
        if matches!(name, "json" | "text") {
            return Err(Error::usage_hints(format!("-o writes the output to a file; '{name}' is a format"), &[&format!("for {name} output use -f {name} (to write a file named {name}, give -o ./{name})")]));
        }
    }
    Ok(Output {
        format: args.format,
        file: args.file.clone(),
    })
}

/// Whom a run traces. Every command's plan says it in this one shape, and
/// `session::Session::start` takes it; the BPF programs' `SlotConfig` is built from it and the
/// [`Scope`] only at the BPF boundary (`probe::attach::base_config`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whom {
    /// `-- COMMAND`: started by tracer; what it starts is followed with it.
    Command(Vec<String>),
    /// `-p PID[,PID...]`: processes already running (at least one).
    Processes(Vec<u32>),
    /// Neither: every task (`profile -a`, `watch --kernel`, a probe with neither).
    Everyone,
}

impl Whom {
    /// From a command line's `-- COMMAND` and `-p` list (clap refuses both at once).
    pub fn of(command: &[String], pids: &[u32]) -> Whom {
        match (command.is_empty(), pids.is_empty()) {
            (false, _) => Whom::Command(command.to_vec()),
            (true, false) => Whom::Processes(pids.to_vec()),
            (true, true) => Whom::Everyone,
        }
    }

    /// `-- COMMAND`'s words (none otherwise).
    pub fn command(&self) -> &[String] {
        match self {
            Whom::Command(command) => command,
            Whom::Processes(_) | Whom::Everyone => &[],
        }
    }

    /// `-p`'s processes (none otherwise).
    pub fn pids(&self) -> &[u32] {
        match self {
            Whom::Processes(pids) => pids,
            Whom::Command(_) | Whom::Everyone => &[],
        }
    }

    /// The one process `-p` gave, when it gave one.
    pub fn pid(&self) -> Option<u32> {
        match self.pids() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// A validated `tracer probe` invocation.
#[derive(Clone, Debug)]
pub struct ProbePlan {
    pub specs: Vec<ProbeSpec>,
    /// `--tid`, `--comm`, `-C`, `--cgroup`: the tasks and CPUs every probe is narrowed to.
    pub scope: Scope,
    /// `-p PID` without `--no-inherit`: the children it starts are followed too (the process
    /// stays `whom`'s, for the session and for uprobes, which the kernel scopes to it).
    pub follow: bool,
    pub whom: Whom,
    /// `--strlen`: bytes of each string read.
    pub strlen: u32,
    pub count: Option<u64>,
    pub duration: Option<std::time::Duration>,
    pub output: Output,
    pub ring_pages: usize,
    pub wakeup_events: Option<u32>,
    pub transport: crate::cli::Transport,
    pub fail_on_loss: bool,
    pub kprobe_interface: Option<crate::cli::KprobeInterface>,
    /// `-s`: `Some(None)` is the probe's own side.
    pub stack: Option<Option<crate::stacks::Which>>,
    /// `--count-by`, `--sum`, `--hist`: count in the kernel instead of streaming.
    pub aggregation: Option<Aggregation>,
    /// `--call-graph dwarf` with `--count-by` and user stacks: the hits stream with the top of
    /// their user stack and are counted in tracer, by the stack unwound from CFI
    /// ([`ProbePlan::counted_in_kernel`] is false).
    pub unwound_counts: bool,
    /// `--debug-bpf`: the programs say why they dropped hits.
    pub debug_bpf: bool,
    /// `--filter`: which hits are sent or counted, decided in the kernel.
    pub value_filter: Option<filter::FilterPlan>,
    /// Notes to print before attaching: input that may match nothing.
    pub notes: Vec<String>,
}

/// What a plan needs to know about this machine. Commands pass `session::ThisMachine`; unit
/// tests pass their own answers, so that every plan is a pure function of its input.
pub trait Machine {
    /// CPUs online (at least 1).
    fn online_cpus(&self) -> usize;
    /// Whether CPU `cpu` is online (by default: one of the first `online_cpus`).
    fn cpu_online(&self, cpu: u32) -> bool {
        (cpu as usize) < self.online_cpus()
    }
    /// The online CPUs as a list (`0-1`), for messages.
    fn online_cpus_text(&self) -> String {
        match self.online_cpus() {
            1 => "0".into(),
            n => format!("0-{}", n - 1),
        }
    }
    /// The id of a cgroup v2 directory (its inode number, as `bpf_get_current_cgroup_id`
    /// gives it); `None` when `dir` is not a directory.
    fn cgroup_id(&self, dir: &std::path::Path) -> Option<u64>;
    /// The cgroup directories of the containers whose id starts with `prefix`.
    fn container_cgroups(&self, prefix: &str) -> Vec<std::path::PathBuf>;
    /// Whether process or thread `id` exists, and runs.
    fn task(&self, id: u32) -> Task;
    /// The largest process id plus one (`kernel.pid_max`): no id reaches it.
    fn pid_max(&self) -> u32;
}

/// What a process or thread id names on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// A task that runs (or sleeps), of the process `tgid` (`None`: its status could not be
    /// read, e.g. another user's under `hidepid`).
    Live { tgid: Option<u32> },
    /// A task that exited and waits for its parent to reap it (a zombie).
    Exited,
    /// No task has this id.
    Missing,
}

/// `-p PID` or `--tid TID` (`thread`), checked against the machine: a process or thread
/// that does not run would filter every event out, and the run would wait for nothing.
pub fn check_task(id: u32, thread: bool, machine: &dyn Machine) -> Result<Task, Error> {
    let (flag, what, ps) = match thread {
        false => ("--pid", "process", "`ps`"),
        true => ("--tid", "thread", "`ps -eL`"),
    };
    if id == 0 {
        return Err(Error::usage_hints(
            format!("{flag} 0 is not a {what}"),
            &[&format!("give a {what} id from {ps}")],
        ));
    }
    match machine.task(id) {
        Task::Missing if id >= machine.pid_max() => Err(Error::usage_hints(
            format!(
                "{flag} {id} is not a {what} id: ids here are below {} (kernel.pid_max)",
                machine.pid_max()
            ),
            &[&format!("give a {what} id from {ps}")],
        )),
        Task::Missing => Err(Error::usage_hints(
            format!("no {what} {id}"),
            &[&format!("check the id with {ps}; it may have exited")],
        )),
        Task::Exited => Err(Error::usage_hints(
            format!("{what} {id} has exited (a zombie its parent has not reaped)"),
            &["trace a running process, or start the command with -- COMMAND"],
        )),
        live => Ok(live),
    }
}

/// Data pages per CPU ring when `--ring-pages` is not given: 8192 pages (32 MiB) shared by
/// the online CPUs, at least 64 and at most 1024 per CPU (the largest power of two not above
/// the share). 1024 pages (4 MiB) was the least that lost nothing while streaming a flat-out
/// getppid loop as JSON here (64 pages lost 25% of it, 256 pages 0.2%, 512 pages up to 0.3%);
/// see docs/benchmarks.md.
pub fn default_ring_pages(cpus: usize) -> usize {
    let share = (8192 / cpus.max(1)).clamp(64, 1024);
    1 << (usize::BITS - 1 - share.leading_zeros())
}

/// Pages of the one BPF ring buffer when `--ring-pages` is not given: what the per-CPU perf
/// rings would take together (rounded up to a power of two, at most 65536).
pub fn default_shared_ring_pages(cpus: usize) -> usize {
    (default_ring_pages(cpus) * cpus.max(1))
        .next_power_of_two()
        .min(1 << 16)
}

/// Whether `-p PID`'s children are followed (in BPF, as a `-- COMMAND`'s are): by default,
/// unless `-i/--no-inherit` or `--tid` narrows the run to the process or one thread.
pub fn follows_children(tasks: &crate::cli::Tasks, tid: Option<u32>) -> bool {
    tasks.pid.is_some() && !tasks.no_inherit && tid.is_none()
}

/// The tasks and CPUs a run is narrowed to besides whom it traces (`--tid`, `--comm`, `-C`,
/// `--cgroup`, `--container`), checked; decided in the kernel, where the BPF boundary turns
/// them into the programs' filters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// `--tid`: this thread only.
    pub tid: Option<u32>,
    /// `--comm`: tasks of this name (1 to 15 bytes).
    pub comm: Option<String>,
    /// `-C`: these CPUs only (each under 64), ascending; empty for every CPU.
    pub cpus: Vec<u32>,
    /// `--cgroup` or `--container`: tasks in this v2 cgroup (the inode of its directory).
    pub cgroup_id: Option<u64>,
}

/// Checks `-p`, `--tid`, `--comm`, `-C`, `--cgroup` and `--container` and gives the [`Scope`]
/// (`-p`'s process itself is the plan's [`Whom`]).
pub fn build_scope(
    tasks: &crate::cli::Tasks,
    tid: Option<u32>,
    machine: &dyn Machine,
) -> Result<Scope, Error> {
    let mut filter = Scope::default();
    if let Some(pid) = tasks.pid {
        if let Task::Live { tgid: Some(tgid) } = check_task(pid, false, machine)? {
            if tgid != pid {
                return Err(Error::usage_hints(
                    format!("{pid} is a thread of process {tgid}, not a process"),
                    &[&format!(
                        "give -p {tgid}, and --tid {pid} for this thread alone"
                    )],
                ));
            }
        }
    }
    if let Some(tid) = tid {
        let task = check_task(tid, true, machine)?;
        if let (Task::Live { tgid: Some(tgid) }, Some(pid)) = (task, tasks.pid) {
            if tgid != pid {
                return Err(Error::usage_hints(
                    format!("thread {tid} is not in process {pid} (it is in process {tgid})"),
                    &["give the thread's own process with -p, or drop -p"],
                ));
            }
        }
    }
    filter.tid = tid;
    if let Some(comm) = &tasks.comm {
        if comm.is_empty() || comm.len() > 15 {
            return Err(Error::usage_hints(
                format!("--comm '{comm}' must be 1 to 15 bytes"),
                &["the kernel keeps the first 15 bytes of a task name"],
            ));
        }
        filter.comm = Some(comm.clone());
    }
    if let Some(list) = &tasks.cpus {
        let cpus = crate::perf::cpus::parse_list(list)
            .map_err(|e| Error::usage_hints(e.to_string(), &["CPU lists look like 0-3,5"]))?;
        if let Some(big) = cpus.iter().find(|&&c| c >= 64) {
            return Err(Error::usage_hints(
                format!("CPU {big} cannot be filtered"),
                &["-C filters CPUs 0 to 63"],
            ));
        }
        let offline: Vec<String> = (cpus.iter())
            .filter(|&&c| !machine.cpu_online(c))
            .map(u32::to_string)
            .collect();
        if !offline.is_empty() {
            return Err(Error::usage_hints(
                format!(
                    "-C {list}: {} {} not online: nothing would ever be seen there",
                    match offline.len() {
                        1 => format!("CPU {}", offline[0]),
                        _ => format!("CPUs {}", offline.join(", ")),
                    },
                    if offline.len() == 1 { "is" } else { "are" }
                ),
                &[&format!(
                    "CPUs online here: {} (/sys/devices/system/cpu/online)",
                    machine.online_cpus_text()
                )],
            ));
        }
        filter.cpus = cpus;
        filter.cpus.sort_unstable();
        filter.cpus.dedup();
    }
    if let Some(path) = &tasks.cgroup {
        filter.cgroup_id = Some(machine.cgroup_id(path).ok_or_else(|| {
            Error::usage_hints(
                format!("--cgroup {} is not a cgroup directory", path.display()),
                &["give a directory under /sys/fs/cgroup"],
            )
        })?);
    }
    if let Some(prefix) = &tasks.container {
        let valid = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_hexdigit());
        let found = match valid {
            true => machine.container_cgroups(&prefix.to_ascii_lowercase()),
            false => Vec::new(),
        };
        let dir = match found.as_slice() {
            [dir] => dir,
            [] if !valid => {
                return Err(Error::usage_hints(format!("--container {prefix}: a container id is hexadecimal"), &["give its id as `docker ps`, `crictl ps` or `podman ps` shows it"]))
            }
            [] => {
                return Err(Error::usage_hints(format!("--container {prefix}: no container's cgroup has that id"), &["give the id of a running container (`docker ps`, `crictl ps`, `podman ps`), or its cgroup with --cgroup"]))
            }
            many => {
                return Err(Error::usage_hints(format!(
                        "--container {prefix}: {} containers' ids start so",
                        many.len()
                    ), &["give more of the id"]))
            }
        };
        filter.cgroup_id = Some(machine.cgroup_id(dir).ok_or_else(|| {
            Error::usage_hints(
                format!("--container {prefix}: its cgroup {} is gone", dir.display()),
                &["give the id of a running container"],
            )
        })?);
    }
    Ok(filter)
}

/// A note when `--comm NAME` is not the name the `-- COMMAND` runs under (the kernel names a
/// task after the file it executes, its first 15 bytes): the command itself is then filtered
/// out, and only a child of it (or itself after a rename) can match. Not refused: `-- sh -c
/// '...'` with `--comm` naming what the shell starts is the way to trace one of its children.
pub fn comm_note(comm: Option<&str>, command: &[String]) -> Option<String> {
    let (comm, program) = (comm?, command.first()?);
    let base = program.rsplit('/').next().unwrap_or(program);
    let name: String = base
        .chars()
        .scan(0, |bytes, c| {
            *bytes += c.len_utf8();
            (*bytes <= 15).then_some(c)
        })
        .collect();
    (name != comm).then(|| {
        format!(
            "--comm {comm} is not the name of `{}` (its task is named {name}): only its children (or itself after a rename) named {comm} will count",
            command.join(" ")
        )
    })
}

/// Checks every `tracer probe` argument and builds the plan.
pub fn probe_plan(args: &crate::cli::ProbeArgs, machine: &dyn Machine) -> Result<ProbePlan, Error> {
    let output = output(&args.output)?;
    let mut specs = args
        .specs
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(list) = &args.args {
        let list = parse_args(list).map_err(|e| match e {
            Error::Usage { message, hints } => Error::Usage {
                message: format!("--args: {message}"),
                hints,
            },
            other => other,
        })?;
        for spec in specs.iter_mut().filter(|s| s.args.is_empty()) {
            spec.args = list.clone();
        }
    }
    let scope = build_scope(&args.tasks, args.tid, machine)?;
    let cpus = machine.online_cpus();
    let ring_pages = args.ring_pages.unwrap_or_else(|| match args.transport {
        crate::cli::Transport::Perf => default_ring_pages(cpus),
        crate::cli::Transport::Ringbuf => default_shared_ring_pages(cpus),
    });
    if ring_pages == 0 || !ring_pages.is_power_of_two() || ring_pages > 1 << 16 {
        return Err(Error::usage_hints(
            format!("--ring-pages {ring_pages} is not a power of two from 1 to 65536"),
            &["e.g. --ring-pages 256"],
        ));
    }
    if args.stop.count == Some(0) {
        return Err(Error::usage_hints(
            "--count 0 would stop before the first event",
            &["give a positive count"],
        ));
    }
    let aggregation = aggregation(
        args.count_by.as_deref(),
        args.sum.as_deref(),
        args.hist.as_deref(),
        args.top,
        args.interval,
    )?;
    let linear = linear(args.linear.as_deref(), args.hist.is_some())?;
    let aggregation = aggregation.map(|a| Aggregation { linear, ..a });
    let unwound_counts = unwound_counts(args, &specs, aggregation.as_ref())?;
    Ok(ProbePlan {
        specs,
        scope,
        follow: follows_children(&args.tasks, args.tid),
        whom: Whom::of(&args.command, args.tasks.pid.as_slice()),
        strlen: args.strlen,
        count: args.stop.count,
        duration: args.stop.duration,
        output,
        ring_pages,
        wakeup_events: args.wakeup_events,
        transport: args.transport,
        fail_on_loss: args.fail_on_loss,
        kprobe_interface: args.kprobe_interface,
        stack: args.stack.stack,
        aggregation,
        unwound_counts,
        debug_bpf: args.debug_bpf,
        value_filter: args.filter.as_deref().map(filter::parse).transpose()?,
        notes: comm_note(args.tasks.comm.as_deref(), &args.command)
            .into_iter()
            .collect(),
    })
}

impl ProbePlan {
    /// Counted in the kernel (`--count-by`, `--sum`, `--hist`, without `--call-graph
    /// dwarf`): the programs aggregate, and nothing streams.
    pub fn counted_in_kernel(&self) -> Option<&Aggregation> {
        self.aggregation.as_ref().filter(|_| !self.unwound_counts)
    }
}

/// `probe --call-graph MODE` (perf's spelling): `dwarf` counts user stacks unwound from CFI
/// in tracer, which reads only what a streamed event carries: the keys of its header
/// (`comm`, `pid`, `tid`, `cpu`, `probe`) and its stacks.
fn unwound_counts(
    args: &crate::cli::ProbeArgs,
    specs: &[ProbeSpec],
    aggregation: Option<&Aggregation>,
) -> Result<bool, Error> {
    let Some(mode) = args.call_graph.as_deref() else {
        return Ok(false);
    };
    let dwarf = match mode {
        "fp" => false,
        "dwarf" => true,
        _ => {
            return Err(Error::usage_hints(
                format!("unknown --call-graph mode '{mode}'"),
                &["--call-graph fp (frame pointers, the default) or --call-graph dwarf"],
            ))
        }
    };
    let user = specs.iter().any(|spec| {
        let user_probe = matches!(spec.target, Target::User { .. });
        crate::stacks::flags_for(args.stack.stack, user_probe) & tracer_common::SLOT_STACK_USER != 0
    });
    let Some(agg) = aggregation.filter(|_| user) else {
        return Err(Error::usage_hints(
            format!("--call-graph {mode} chooses how counted user stacks are taken"),
            &[
                "with --count-by ... -s user (or -s both); -s alone streams each hit's user stack \
               unwound from .eh_frame already",
            ],
        ));
    };
    let header_only = (agg.keys.iter()).all(|k| {
        matches!(
            k,
            KeyPart::Comm
                | KeyPart::Pid
                | KeyPart::Tid
                | KeyPart::Cpu
                | KeyPart::Probe
                | KeyPart::Stack
        )
    });
    if dwarf && (!header_only || agg.value.is_some() || agg.interval.is_some()) {
        return Err(Error::usage_hints(
            "--call-graph dwarf counts in tracer by comm, pid, tid, cpu and probe, and stack",
            &["drop the other --count-by keys, --sum, --hist and -I, or count them in the kernel \
               without --call-graph dwarf"],
        ));
    }
    Ok(dwarf)
}

/// `did you mean: a, b` for the names most like `name`, if any are close.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let similar = similar(name, candidates, 4);
    (!similar.is_empty()).then(|| format!("did you mean: {}", similar.join(", ")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A machine for plans under test: its CPUs, the cgroup directories it has, and its tasks
    /// (id, process, zombie).
    pub(crate) struct FakeMachine {
        pub cpus: usize,
        pub cgroups: &'static [(&'static str, u64)],
        pub tasks: &'static [(u32, u32, bool)],
    }

    impl FakeMachine {
        /// 128 CPUs (64 pages per ring, the floor), one cgroup, /sys/fs/cgroup/app (id 77),
        /// and process 100 with threads 100 and 101, process 200, and zombie 300; pid_max
        /// is 32768.
        pub(crate) const CPUS_128: FakeMachine = FakeMachine {
            cpus: 128,
            cgroups: &[("/sys/fs/cgroup/app", 77)],
            tasks: &[
                (100, 100, false),
                (101, 100, false),
                (200, 200, false),
                (300, 300, true),
            ],
        };
    }

    impl Machine for FakeMachine {
        fn online_cpus(&self) -> usize {
            self.cpus
        }
        fn cgroup_id(&self, dir: &std::path::Path) -> Option<u64> {
            (self.cgroups.iter())
                .find(|(path, _)| std::path::Path::new(path) == dir)
                .map(|&(_, id)| id)
        }
        fn container_cgroups(&self, prefix: &str) -> Vec<std::path::PathBuf> {
            (self.cgroups.iter())
                .filter(|(path, _)| {
                    crate::kernel::cgroups::container_of(path)
                        .is_some_and(|c| c.starts_with(prefix))
                })
                .map(|(path, _)| std::path::PathBuf::from(path))
                .collect()
        }
        fn task(&self, id: u32) -> Task {
            match self.tasks.iter().find(|t| t.0 == id) {
                Some(&(_, _, true)) => Task::Exited,
                Some(&(_, tgid, false)) => Task::Live { tgid: Some(tgid) },
                None => Task::Missing,
            }
        }
        fn pid_max(&self) -> u32 {
            32768
        }
    }

    #[test]
    fn pids_and_tids_name_running_tasks() {
        let m = FakeMachine::CPUS_128;
        let filter = |pid: Option<u32>, tid: Option<u32>| {
            let tasks = crate::cli::Tasks {
                pid,
                ..Default::default()
            };
            match build_scope(&tasks, tid, &m) {
                Ok(f) => Ok(f.tid),
                Err(Error::Usage { message, hints }) => Err(format!("{message} | {}", hints[0])),
                Err(other) => panic!("{other:?}"),
            }
        };
        assert_eq!(filter(Some(100), Some(101)), Ok(Some(101)));
        assert_eq!(filter(None, Some(101)), Ok(Some(101)));
        assert_eq!(filter(Some(200), None), Ok(None));
        let refused = [
            (
                Some(0),
                None,
                "--pid 0 is not a process | give a process id from `ps`",
            ),
            (
                None,
                Some(0),
                "--tid 0 is not a thread | give a thread id from `ps -eL`",
            ),
            (
                Some(12345),
                None,
                "no process 12345 | check the id with `ps`; it may have exited",
            ),
            (
                None,
                Some(12345),
                "no thread 12345 | check the id with `ps -eL`; it may have exited",
            ),
            (
                Some(99999999),
                None,
                "--pid 99999999 is not a process id: ids here are below 32768 (kernel.pid_max) \
                 | give a process id from `ps`",
            ),
            (
                Some(300),
                None,
                "process 300 has exited (a zombie its parent has not reaped) | trace a running \
                 process, or start the command with -- COMMAND",
            ),
            (
                Some(101),
                None,
                "101 is a thread of process 100, not a process | give -p 100, and --tid 101 \
                 for this thread alone",
            ),
            (
                Some(200),
                Some(101),
                "thread 101 is not in process 200 (it is in process 100) | give the thread's \
                 own process with -p, or drop -p",
            ),
        ];
        for (pid, tid, message) in refused {
            assert_eq!(
                filter(pid, tid),
                Err(message.to_string()),
                "{pid:?} {tid:?}"
            );
        }
    }

    #[test]
    fn ring_pages_default_from_the_cpu_count() {
        // 8192 pages shared, 64..1024 per CPU, a power of two.
        assert_eq!(default_ring_pages(1), 1024);
        assert_eq!(default_ring_pages(2), 1024);
        assert_eq!(default_ring_pages(12), 512);
        assert_eq!(default_ring_pages(128), 64);
        assert_eq!(default_ring_pages(0), 1024);
        assert_eq!(default_shared_ring_pages(2), 2048);
        assert_eq!(default_shared_ring_pages(12), 8192);
        assert_eq!(default_shared_ring_pages(1024), 65536);
    }

    #[test]
    fn a_container_is_its_cgroup_found_by_a_unique_prefix() {
        const A: &str = "/sys/fs/cgroup/system.slice/docker-aa11000000000000000000000000000000000000000000000000000000000000.scope";
        const B: &str = "/sys/fs/cgroup/kubepods/podx/aa22000000000000000000000000000000000000000000000000000000000000";
        let m = FakeMachine {
            cgroups: &[(A, 5), (B, 6)],
            ..FakeMachine::CPUS_128
        };
        let tasks = |id: &str| crate::cli::Tasks {
            container: Some(id.into()),
            ..Default::default()
        };
        assert_eq!(
            build_scope(&tasks("aa11"), None, &m).unwrap().cgroup_id,
            Some(5)
        );
        assert_eq!(
            build_scope(&tasks("AA22"), None, &m).unwrap().cgroup_id,
            Some(6)
        );
        for (id, says) in [
            ("aa", "--container aa: 2 containers' ids start so"),
            ("ab", "--container ab: no container's cgroup has that id"),
            ("web-1", "--container web-1: a container id is hexadecimal"),
        ] {
            match build_scope(&tasks(id), None, &m) {
                Err(Error::Usage { message, .. }) => assert_eq!(message, says),
                other => panic!("{id}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_cgroup_filter_is_the_directory_id_and_a_missing_one_is_refused() {
        let m = FakeMachine::CPUS_128;
        let app = std::path::Path::new("/sys/fs/cgroup/app");
        let tasks = |cpus: Option<&str>, cgroup: &std::path::Path| crate::cli::Tasks {
            cpus: cpus.map(String::from),
            cgroup: Some(cgroup.to_path_buf()),
            ..Default::default()
        };
        let f = build_scope(&tasks(Some("0,2"), app), None, &m).unwrap();
        assert_eq!((f.cgroup_id, f.cpus), (Some(77), vec![0, 2]));
        let missing = std::path::Path::new("/sys/fs/cgroup/nope");
        match build_scope(&tasks(None, missing), None, &m) {
            Err(Error::Usage { message, .. }) => {
                assert_eq!(
                    message,
                    "--cgroup /sys/fs/cgroup/nope is not a cgroup directory"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cpus_that_are_not_online_are_refused() {
        let m = FakeMachine {
            cpus: 2,
            ..FakeMachine::CPUS_128
        };
        let tasks = |cpus: &str| crate::cli::Tasks {
            cpus: Some(cpus.into()),
            ..Default::default()
        };
        assert_eq!(build_scope(&tasks("0-1"), None, &m).unwrap().cpus, [0, 1]);
        match build_scope(&tasks("1,3-4"), None, &m) {
            Err(Error::Usage { message, hints }) => assert_eq!(
                (message.as_str(), hints[0].as_str()),
                (
                    "-C 1,3-4: CPUs 3, 4 are not online: nothing would ever be seen there",
                    "CPUs online here: 0-1 (/sys/devices/system/cpu/online)"
                )
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_comm_that_the_command_does_not_have_is_noted() {
        let command = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(comm_note(Some("prog"), &command(&["./prog", "-x"])), None);
        assert_eq!(comm_note(Some("cat"), &[]), None, "no command");
        assert_eq!(comm_note(None, &command(&["ls"])), None);
        assert_eq!(
            comm_note(Some("long-name"), &command(&["/x/tracer-testprog-long-name", "1"])),
            Some("--comm long-name is not the name of `/x/tracer-testprog-long-name 1` (its task is named tracer-testprog): only its children (or itself after a rename) named long-name will count".into())
        );
        assert_eq!(
            comm_note(
                Some("tracer-testprog"),
                &command(&["/x/tracer-testprog-long-name"])
            ),
            None,
            "the kernel keeps 15 bytes of the name"
        );
    }

    #[test]
    fn linear_histograms_are_step_min_max() {
        let l = |text| linear(Some(text), true);
        let ok = |step, min, buckets| Some(Linear { step, min, buckets });
        assert_eq!(l("10").unwrap(), ok(10, 0, 63));
        assert_eq!(l("10,0,50").unwrap(), ok(10, 0, 5));
        assert_eq!(l("4K,0,64K").unwrap(), ok(4096, 0, 16));
        assert_eq!(l("5,-50,50").unwrap(), ok(5, -50, 20));
        assert_eq!(linear(None, false).unwrap(), None);
        let refused = |r: Result<Option<Linear>, Error>| match r {
            Err(Error::Usage { message, hints }) => format!("{message} | {}", hints[0]),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            refused(linear(Some("10"), false)),
            "--linear shapes a --hist histogram | add --hist VALUE, e.g. --hist ret --linear 10"
        );
        assert_eq!(
            refused(l("10,0,55")),
            "--linear '10,0,55': MAX - MIN (55) is not a multiple of STEP (10) | e.g. --linear 10,0,60"
        );
        assert!(refused(l("0")).starts_with("--linear '0' needs a positive STEP"));
        assert!(refused(l("10,5")).starts_with("--linear '10,5' is not STEP or STEP,MIN,MAX"));
        assert!(refused(l("1,0,1001")).starts_with("--linear '1,0,1001' makes 1001 buckets"));
    }

    #[test]
    fn aggregation_keys_values_and_their_errors() {
        let a = aggregation(Some("comm,arg2"), Some("ret"), None, Some(5), None)
            .unwrap()
            .unwrap();
        assert_eq!(a.keys, vec![KeyPart::Comm, KeyPart::Value("arg2".into())]);
        assert_eq!(a.key_value(), Some("arg2"));
        assert_eq!(a.value, Some((ValueOp::Sum, "ret".into())));
        assert_eq!(a.top, Some(5));
        let h = aggregation(None, None, Some("ret"), None, None)
            .unwrap()
            .unwrap();
        assert!(h.keys.is_empty());
        assert_eq!(h.value, Some((ValueOp::Hist, "ret".into())));
        assert_eq!(aggregation(None, None, None, None, None).unwrap(), None);
        let usage_err = |r: Result<Option<Aggregation>, Error>| match r {
            Err(Error::Usage { message, .. }) => message,
            other => panic!("expected a usage error, got {other:?}"),
        };
        assert_eq!(
            usage_err(aggregation(Some("comm,comm"), None, None, None, None)),
            "--count-by names 'comm' twice"
        );
        assert_eq!(
            usage_err(aggregation(Some("arg1,ret"), None, None, None, None)),
            "--count-by takes at most one argument, return value, field or syscall"
        );
        assert_eq!(
            usage_err(aggregation(Some("co-mm"), None, None, None, None)),
            "'co-mm' is not a --count-by key"
        );
        assert_eq!(
            usage_err(aggregation(None, Some("ret"), Some("ret"), None, None)),
            "--sum and --hist cannot be combined"
        );
        assert_eq!(
            usage_err(aggregation(None, Some("comm"), None, None, None)),
            "--sum 'comm' is not a numeric value"
        );
        assert_eq!(
            usage_err(aggregation(None, None, None, Some(3), None)),
            "--top and -I go with --count-by, --sum or --hist"
        );
        assert_eq!(
            usage_err(aggregation(Some("pid"), None, None, Some(0), None)),
            "--top 0 would show nothing"
        );
    }

    fn spec(text: &str) -> ProbeSpec {
        parse_spec(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn kernel(function: &str, offset: u64, ret: bool) -> ProbeSpec {
        ProbeSpec {
            target: Target::Kernel {
                function: function.into(),
                offset,
                fentry: false,
            },
            ret,
            args: Vec::new(),
        }
    }

    #[test]
    fn kernel_specs() {
        assert_eq!(spec("do_sys_open"), kernel("do_sys_open", 0, false));
        assert_eq!(spec("do_sys_open+0x10"), kernel("do_sys_open", 16, false));
        assert_eq!(spec("kprobe:vfs_read+8"), kernel("vfs_read", 8, false));
        assert_eq!(
            spec("do_sys_openat2%return"),
            kernel("do_sys_openat2", 0, true)
        );
        assert_eq!(spec("kretprobe:vfs_read"), kernel("vfs_read", 0, true));
        assert_eq!(
            spec("kprobe:0xffffffff81000000").target,
            Target::KernelAddr(0xffff_ffff_8100_0000)
        );
        assert_eq!(spec("kretprobe:vfs_read").to_string(), "kretprobe:vfs_read");
        assert_eq!(spec("vfs_read+0x8").to_string(), "kprobe:vfs_read+0x8");
        assert!(spec("vfs_*").is_glob());
    }

    #[test]
    fn user_and_tracepoint_specs() {
        let u = spec("uprobe:/bin/bash:readline+4");
        assert_eq!(
            u.target,
            Target::User {
                file: "/bin/bash".into(),
                at: UserAt::Symbol {
                    name: "readline".into(),
                    offset: 4
                }
            }
        );
        assert_eq!(u.to_string(), "uprobe:/bin/bash:readline+0x4");
        let ur = spec("uretprobe:libc:malloc");
        assert!(ur.ret);
        assert_eq!(
            spec("uprobe:./a.out:0x1139").target,
            Target::User {
                file: "./a.out".into(),
                at: UserAt::Address(0x1139)
            }
        );
        let tp = spec("syscalls:sys_enter_openat");
        assert_eq!(tp, spec("tracepoint:syscalls:sys_enter_openat"));
        assert_eq!(tp.to_string(), "syscalls:sys_enter_openat");
        assert!(spec("tracepoint:syscalls:sys_enter_open*").is_glob());
    }

    #[test]
    fn listed_values_name_how_they_are_read() {
        let u = spec("uprobe:libc.so.6:pthread_create(usym(arg2), str(arg3), arg1)");
        assert_eq!(u.args, ["usym(arg2)", "str(arg3)", "arg1"]);
        let readers: Vec<_> = u.args.iter().map(|a| reader(a)).collect();
        assert_eq!(
            readers,
            [
                (Reader::Usym, "arg2"),
                (Reader::Str, "arg3"),
                (Reader::Plain, "arg1")
            ]
        );
        // Not a name inside: refused with the hint that spells both.
        let Err(Error::Usage { hints, .. }) = parse_spec("uprobe:libc.so.6:free(usym(1))") else {
            panic!("usym(1) accepted")
        };
        assert!(hints[0].contains("usym(NAME) names"), "{hints:?}");
    }

    #[test]
    fn bad_specs_are_usage_errors_with_hints() {
        for bad in [
            "",
            "kprobe:",
            "do sys open",
            "uprobe:/bin/ls",
            "uprobe::x",
            "a:b:c:d",
            "vfs_read+zz",
            "do_sys_openat2+4%return",
            "kretprobe:f+4",
            "kprobe:0xzz",
            "kprobe:0x0",
            "kretprobe:0x1000",
        ] {
            match parse_spec(bad) {
                Err(Error::Usage { hints, .. }) => assert!(!hints.is_empty(), "{bad}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn bpftrace_spellings_point_at_the_tracer_way() {
        let refused = |spec: &str| match parse_spec(spec) {
            Err(Error::Usage { message, hints }) => (message, hints.join("\n")),
            other => panic!("{spec:?} gave {other:?}"),
        };
        let (m, h) = refused("watchpoint:0x1000:8:w");
        assert_eq!(
            m,
            "'watchpoint:0x1000:8:w': hardware watchpoints are `tracer watch`"
        );
        assert_eq!(h, "e.g. tracer watch -t rw 0x1000");
        let (m, h) = refused("software:page-faults:1");
        assert!(m.contains("`tracer stat`"), "{m}");
        assert_eq!(
            h,
            "e.g. tracer stat -e page-faults, tracer record -o t.tracer -e page-faults"
        );
        assert_eq!(
            refused("interval:s:1").1,
            "e.g. tracer probe --count-by comm -I 1s CAT:NAME"
        );
        let (m, h) = refused("profile:hz:999");
        assert!(m.contains("`tracer profile`"), "{m}");
        assert_eq!(h, "e.g. tracer profile -F 999 -- COMMAND");
        // bpftrace's fentry names (and its older kfunc) are tracer's too.
        let fentry = |function: &str, ret| ProbeSpec {
            target: Target::Kernel {
                function: function.into(),
                offset: 0,
                fentry: true,
            },
            ret,
            args: Vec::new(),
        };
        assert_eq!(
            parse_spec("fentry:vfs_read").unwrap(),
            fentry("vfs_read", false)
        );
        assert_eq!(
            parse_spec("kfunc:vfs_read").unwrap(),
            fentry("vfs_read", false)
        );
        assert_eq!(
            parse_spec("fexit:vfs_read").unwrap(),
            fentry("vfs_read", true)
        );
        assert_eq!(
            parse_spec("fr:vfs_read").unwrap().to_string(),
            "fexit:vfs_read"
        );
        for offset in ["fentry:vfs_read+4", "fexit:0xffffffff81000000"] {
            let err = parse_spec(offset).unwrap_err().to_string();
            assert!(err.contains("attaches to a function by name"), "{err}");
        }
        let usdt = |provider: Option<&str>, name: &str, site| Target::User {
            file: "/usr/bin/python3".into(),
            at: UserAt::Usdt {
                provider: provider.map(str::to_string),
                name: name.into(),
                site,
            },
        };
        let python = parse_spec("usdt:/usr/bin/python3:python:function__entry").unwrap();
        assert_eq!(python.target, usdt(Some("python"), "function__entry", None));
        assert_eq!(
            python.to_string(),
            "usdt:/usr/bin/python3:python:function__entry"
        );
        let bare = parse_spec("U:/usr/bin/python3:function__*(arg1)").unwrap();
        assert_eq!(bare.target, usdt(None, "function__*", None));
        assert!(bare.is_glob());
        assert_eq!(bare.args, ["arg1"]);
        let site = parse_spec("usdt:/usr/bin/python3:python:line#1").unwrap();
        assert_eq!(site.target, usdt(Some("python"), "line", Some(1)));
        assert_eq!(site.to_string(), "usdt:/usr/bin/python3:python:line#1");
        for bad in [
            "usdt:/bin/x",
            "usdt::p:n",
            "usdt:/bin/x:p:",
            "usdt:/bin/x:n#x",
            "usdt:/x:a b",
        ] {
            assert!(matches!(parse_spec(bad), Err(Error::Usage { .. })), "{bad}");
        }
        let (m, h) = refused("tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }");
        assert_eq!(
            m,
            "'tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }' is a bpftrace program"
        );
        assert_eq!(h, "tracer takes probe specs and flags, not programs: tracer probe 'tracepoint:syscalls:sys_enter_openat' prints each hit; @[comm] = count() is --count-by comm");
        assert!(refused("BEGIN").0.contains("bpftrace program"));
        assert_eq!(
            refused("hardware:cache-misses:1000000").1,
            "e.g. tracer stat -e cache-misses, tracer record -o t.tracer -e cache-misses"
        );
        assert!(
            refused("t:syscalls:sys_exit_read { @ = lhist(args.ret, 0, 100, 10); }")
                .1
                .ends_with("; lhist(x, MIN, MAX, STEP) is --hist x --linear STEP,MIN,MAX")
        );
        // tracer's own spellings still parse.
        for ok in [
            "sched:sched_switch",
            "k:vfs_read",
            "t:sched:sched_switch",
            "vfs_read",
        ] {
            assert!(parse_spec(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("sys_enter_open*", "sys_enter_openat2"));
        assert!(glob_match("vfs_?ead", "vfs_read"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("vfs_*", "do_vfs"));
        assert!(glob_match("*open*", "do_sys_openat2"));
        assert!(!glob_match("a?c", "ac"));
    }

    #[test]
    fn did_you_mean() {
        let names = ["do_sys_openat2", "do_sys_open", "vfs_open", "ksys_read"];
        assert_eq!(
            similar("do_sys_opn", names, 2),
            vec!["do_sys_open", "do_sys_openat2"]
        );
        assert!(similar("zzzz", names, 3).is_empty());
    }
}
