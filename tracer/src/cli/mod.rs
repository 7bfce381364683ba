//! Command-line definitions (clap) and nothing else.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

pub use crate::bpf::Transport;
pub use crate::kernel::kprobe_events::KprobeInterface;
use crate::output::events::Format;

mod record;
mod serve;
mod stat;

pub use record::{RecordArgs, ReportArgs};
pub use serve::{ServeArgs, DEFAULT_LISTEN};
pub use stat::{StatArgs, StatReportArgs};

/// Lets `-s`/`--stack` stand alone before a spec (`tracer watch -s counter -- ./prog`) and
/// still take a value as a separate word (`tracer probe -s user SPEC`): clap's optional value
/// would swallow the next word whatever it is, so `--stack` requires `=` and this rewrites
/// `-s WHICH` / `--stack WHICH` into `--stack=WHICH` when WHICH is exactly kernel, user or both,
/// in the commands that have the flag and before `--` (what follows is the traced command's).
pub fn normalize_args(mut args: Vec<OsString>) -> Vec<OsString> {
    // perf's `stat record` and `stat report`: `tracer stat record ...` is `tracer stat` with
    // the hidden --record flag; `tracer stat report ...` the hidden `stat-report` command.
    if args.get(1).is_some_and(|a| a == "stat") {
        match args.get(2).and_then(|a| a.to_str()) {
            Some("record") => args[2] = "--record".into(),
            Some("report") => {
                args.remove(2);
                args[1] = "stat-report".into();
            }
            _ => {}
        }
    }
    const WITH_STACK: [&str; 3] = ["probe", "watch", "latency"];
    const WHICH: [&str; 3] = ["kernel", "user", "both"];
    let is_stack = |a: &OsString| a == "-s" || a == "--stack";
    // The subcommand is the first word after the program name: tracer has no global options
    // that take values.
    if !args
        .get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|sub| WITH_STACK.contains(&sub))
    {
        return args;
    }
    let mut out = Vec::with_capacity(args.len());
    let mut words = args.into_iter();
    while let Some(arg) = words.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(words);
            break;
        }
        if is_stack(&arg) {
            let mut ahead = words.clone();
            if let Some(which) = ahead
                .next()
                .filter(|w| w.to_str().is_some_and(|w| WHICH.contains(&w)))
            {
                let mut joined = OsString::from("--stack=");
                joined.push(&which);
                out.push(joined);
                words = ahead;
                continue;
            }
        }
        out.push(arg);
    }
    out
}

#[derive(Debug, Parser)]
#[command(
    name = "tracer",
    version = env!("TRACER_LONG_VERSION"),
    about = "What is the kernel (or this process) doing? Probes, watchpoints, latency and counters.",
    after_help = "Examples:\n  tracer features            what this kernel supports, and what is missing\n  tracer features --json     the same as one JSON object"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Trace kernel functions, user functions and tracepoints: one line per hit.
    Probe(ProbeArgs),
    /// Trace a program's system calls like strace: one line per call, arguments decoded,
    /// return value, errno and time spent, paired in the kernel.
    Trace(TraceArgs),
    /// Watch variables or addresses with hardware breakpoints: who touched them, and the value.
    Watch(WatchArgs),
    /// How long calls take: in-kernel histograms of a function, or of a start/end pair.
    Latency(LatencyArgs),
    /// What is on CPU (sampled stacks, counted in the kernel), or, with --off-cpu, where tasks
    /// block and for how long: a top-N report, folded stacks, a flame graph or JSON.
    Profile(ProfileArgs),
    /// Count events like perf stat: software, hardware, cache, raw, PMU, breakpoint,
    /// tracepoint and probe counters for a command, processes, threads, CPUs or cgroups.
    Stat(StatArgs),
    /// `tracer stat report -i FILE`: print a `tracer stat record` file's report again.
    #[command(name = "stat-report", hide = true)]
    StatReport(StatReportArgs),
    /// Record probes, watchpoints, sampled counters and scheduler events on one clock into a
    /// file, for `tracer report`.
    Record(RecordArgs),
    /// Read a `tracer record` file: the merged timeline as text or JSON, or a Perfetto trace.
    Report(ReportArgs),
    /// Export in-kernel counts and histograms as Prometheus metrics: a long-running exporter
    /// of the metrics a TOML config names, on /metrics.
    Serve(ServeArgs),
    /// Shell completions and manual pages, as packages install them.
    #[command(
        after_help = "Examples:\n  tracer generate complete-bash   bash's completion script, on stdout\n  tracer generate man ./man       tracer.1 and one page per subcommand, into ./man"
    )]
    Generate(GenerateArgs),
    /// List what can be probed or counted here: tracepoints, kernel functions, events, PMUs.
    #[command(
        after_help = "Examples:\n  tracer list 'syscalls:sys_enter_open*'\n  tracer list -v sched_switch\n  tracer list --binary /usr/bin/bash 'read*'\n  tracer list usdt:/usr/bin/python3   its USDT probes, with their arguments"
    )]
    List {
        /// Only specs matching this glob or spec (a plain word matches anywhere);
        /// `usdt:PATH[:PATTERN]` lists a binary's USDT probes with their argument specs.
        pattern: Option<String>,
        /// Show each tracepoint's fields.
        #[arg(short, long)]
        verbose: bool,
        /// List the function symbols of this binary or library (for uprobes).
        #[arg(long, value_name = "PATH")]
        binary: Option<PathBuf>,
    },
    /// Report what this kernel supports, found by trying it.
    #[command(
        after_help = "Examples:\n  tracer features\n  tracer features --json | jq .features.kprobes"
    )]
    Features {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer probe syscalls:sys_enter_openat -- cat /etc/hostname
  tracer probe 'syscalls:sys_enter_open*' -p 1234 -f json
  tracer probe 'uprobe:bash:readline(str(arg0))' 'uretprobe:bash:readline(str(ret))'   prompts, lines typed
  tracer probe -s user uprobe:./prog:handle -c 5          with user stacks
  tracer probe --count-by comm raw_syscalls:sys_enter -d 2  every syscall, counted in the kernel
  tracer probe --hist ret --count-by comm syscalls:sys_exit_read -I 1s
  tracer probe syscalls:sys_exit_openat --filter 'ret < 0' -- cat /nonexistent   failed opens only
  tracer probe do_sys_openat2 do_sys_openat2%return -c 10
  tracer probe 'do_sys_openat2(filename, how->flags)'      chosen arguments and members")]
#[command(
    mut_arg("stack", |a| a.help("Print the stack of each hit: kernel, user or both (alone: the probe's own side, user for uprobes, kernel for the rest)")),
    mut_arg("count", |a| a.help("Stop after N printed events").conflicts_with_all(["count_by", "sum", "hist"])),
)]
pub struct ProbeArgs {
    /// What to probe: FUNC[+OFF], FUNC%return, kprobe:FUNC, kretprobe:FUNC, kprobe:0xADDR,
    /// uprobe:PATH:SYMBOL[+OFF], uretprobe:PATH:SYMBOL, uprobe:PATH:0xADDR,
    /// usdt:PATH:[PROVIDER:]NAME (USDT; str(argN) reads an argument as a string), CAT:NAME
    /// (tracepoint); * and ? expand against the kernel's lists and the binary's notes.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<String>,
    #[command(flatten)]
    pub tasks: Tasks,
    /// Only this thread.
    #[arg(long)]
    pub tid: Option<u32>,
    #[command(flatten)]
    pub stop: Stop,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Data pages of the ring buffer, or of each CPU's ring with --transport perf (a power of
    /// two): more pages, fewer lost events [default: 8192 / CPUs per CPU, from 64 to 1024 (4
    /// MiB per CPU on up to 8 CPUs); the ring buffer has that times the CPUs]
    #[arg(long, value_name = "N")]
    pub ring_pages: Option<usize>,
    /// Wake the reader once N events without a string would fill what is waiting (default:
    /// when a quarter of the ring is full; also at each CPU's first event in a millisecond,
    /// and every 10 ms; with --transport perf, every N events, and every 10 ms).
    #[arg(long, value_name = "N")]
    pub wakeup_events: Option<u32>,
    /// How events reach tracer: one BPF ring buffer shared by the CPUs (the default; Linux 5.8+,
    /// which tracer needs anyway), or perf rings, one per CPU (`PERF_COUNT_SW_BPF_OUTPUT`;
    /// each CPU's events keep their own room; about 1.5x the cost per event).
    #[arg(long, value_enum, default_value = "ringbuf")]
    pub transport: Transport,
    /// Exit with status 1 if any event was lost.
    #[arg(long)]
    pub fail_on_loss: bool,
    #[command(flatten)]
    pub stack: StackArg,
    /// How counted user stacks are taken (--count-by with -s user or -s both): `fp`, walked
    /// by frame pointers and counted in the kernel (the default: cheapest, but cut short in
    /// code built without them, as Debian's is), or `dwarf`, each hit's stack unwound from
    /// .eh_frame as a streamed -s stack is, and counted in tracer
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Print only these values, in this order, for every probe without its own `(...)` list:
    /// parameter names, argN, tracepoint fields, or struct members PARAM->member[->member]
    /// (up to 3 pointers loaded on the way; ret->member at a return probe) read from kernel
    /// BTF or the binary's DWARF (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub args: Option<String>,
    /// Count hits in the kernel by these keys instead of printing each: comm, pid, tid, cpu,
    /// cgroup, container, pod, probe, stack, syscall (by name, on syscall tracepoints), argN,
    /// ret, a parameter, PARAM->member or a tracepoint field (comma-separated).
    #[arg(long, value_name = "KEYS")]
    pub count_by: Option<String>,
    /// Also add up this value per key (argN, ret, a parameter, PARAM->member or a tracepoint
    /// field).
    #[arg(long, value_name = "VALUE", conflicts_with = "hist")]
    pub sum: Option<String>,
    /// A histogram of this value per key (as for --sum): log2 buckets (0, 1, 2-3, 4-7...),
    /// or linear with --linear.
    #[arg(long, value_name = "VALUE")]
    pub hist: Option<String>,
    /// With --hist: linear buckets of width STEP from MIN to MAX (bpftrace's lhist; default
    /// 0 and 63 steps), with rows for values below MIN and from MAX on. K, M, G: binary units.
    #[arg(long, value_name = "STEP[,MIN,MAX]", allow_hyphen_values = true)]
    pub linear: Option<String>,
    /// With --count-by: only the N largest counts.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// With --count-by/--sum/--hist: print the counts of each interval (1s, 500ms; a bare
    /// number is milliseconds, as in perf stat).
    #[arg(short = 'I', long = "interval", value_name = "INTERVAL", value_parser = crate::units::parse_interval)]
    pub interval: Option<Duration>,
    /// Only hits for which EXPR holds, decided in the kernel before anything is sent or
    /// counted (ftrace's filter grammar): NAME OP VALUE with == != < <= > >= & on numbers,
    /// == != ~ (glob) on strings, joined by && || ! and parentheses. NAME is an argument or
    /// field as printed (ret, filename, argN, PARAM->member), comm, pid, tid or cpu.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Bytes of each string read (paths, char * arguments, argv elements), up to 4096; a
    /// longer string prints cut, marked `"..."...` (JSON: named in `truncated`).
    #[arg(long, value_name = "N", default_value_t = tracer_common::STRLEN_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=tracer_common::STRLEN_MAX as i64))]
    pub strlen: u32,
    /// Say on stderr why the BPF programs dropped hits (which filter refused them, a full
    /// ring or count map), as `bpf:` lines: for finding out why nothing shows. Costs a
    /// message per dropped hit; a normal run carries none of it.
    #[arg(long)]
    pub debug_bpf: bool,
    /// How kernel functions are attached: fentry (BPF trampolines: fentry/fexit), pmu (the
    /// kprobe PMU) or tracefs (kprobe_events). Default: fentry where the kernel permits it
    /// (the banner says which), kprobes otherwise.
    #[arg(long, value_enum, value_name = "HOW")]
    pub kprobe_interface: Option<KprobeInterface>,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// Start COMMAND and trace only it and its children; stop when it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer watch counter -- ./prog                 every write to the global `counter`
  tracer watch -p 1234 -t rw libc.so.6:environ  reads and writes in a running process
  tracer watch -t x my_function -- ./prog        count calls with an execute breakpoint
  tracer watch -s counter -- ./prog              with the writer's user stack
  tracer watch --kernel jiffies -c 5             a kernel variable")]
#[command(
    mut_arg("stack", |a| a.help("Print the stack of each hit: kernel, user or both (alone: user, or kernel with --kernel)")),
    mut_arg("count", |a| a.help("Stop after N printed hits")),
)]
pub struct WatchArgs {
    /// What to watch: 0xADDR, SYMBOL, SYMBOL+OFF or LIB:SYMBOL (up to 4).
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Watch in this running process (all its threads).
    #[arg(short, long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Watch a kernel symbol or address.
    #[arg(long)]
    pub kernel: bool,
    /// Access type: w (writes), rw (reads and writes), x (execution); r is not on x86.
    #[arg(short = 't', long = "type", value_enum, default_value = "w")]
    pub kind: WatchType,
    /// Bytes to watch: 1, 2, 4 or 8 (default: the symbol's size when one of those, else 8).
    #[arg(short, long)]
    pub len: Option<u64>,
    #[command(flatten)]
    pub stop: Stop,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub stack: StackArg,
    /// Count the hits in the kernel, by thread and instruction, and print only those counts
    /// (on stdout) at the end: no line per hit, the cheapest way to watch a busy location.
    #[arg(long)]
    pub summary: bool,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// Start COMMAND stopped right after its exec, watch it from its first instruction.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `tracer latency --stack-at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StackAt {
    Start,
    End,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer latency vfs_read                                   a kernel function, entry to return
  tracer latency uprobe:./prog:handle --slower-than 10ms    a user function, slow calls listed
  tracer latency --from syscalls:sys_enter_read --to syscalls:sys_exit_read -I 1s
  tracer latency --from sched:sched_wakeup --to sched:sched_switch --key pid/next_pid
  tracer latency --from block:block_rq_issue --to block:block_rq_complete --key dev,sector
  tracer latency --from uprobe:./srv:submit --to uprobe:./srv:complete --key arg0
  tracer latency --from irq:softirq_entry --to irq:softirq_exit --by vec    per softirq
  tracer latency uprobe:./prog:handle --slower-than 10ms -s     slow calls with their stacks
  tracer latency vfs_read vfs_write vfs_open vfs_fsync      one histogram per function")]
#[command(
    mut_arg("stack", |a| a.help("Print the stack of each slow call, taken at its end: kernel, user or both (alone: the end probe's own side)").requires("slower_than")),
    mut_arg("cpus", |a| a.help("Only calls ending on these CPUs (e.g. 0-3,5)")),
)]
pub struct LatencyArgs {
    /// A function: FUNC (kprobe + kretprobe) or uprobe:PATH:SYMBOL (uprobe + uretprobe);
    /// several: one histogram each, in one run.
    #[arg(value_name = "FUNCTION")]
    pub targets: Vec<String>,
    /// Start of what is measured (any probe spec), with --to.
    #[arg(long, value_name = "SPEC")]
    pub from: Option<String>,
    /// End of what is measured (any probe spec), with --from.
    #[arg(long, value_name = "SPEC")]
    pub to: Option<String>,
    /// Match start and end by up to 3 values instead of the thread: tracepoint fields or a
    /// probe's argN, comma-separated; START_KEYS/END_KEYS when the names differ.
    #[arg(long, value_name = "KEYS")]
    pub key: Option<String>,
    /// One histogram per comm, pid, tid or cpu, or per value of a field of the end's record
    /// (a tracepoint: --by dev, --by vec) or of an argument of the start (named, or argN).
    #[arg(long, value_name = "KEY")]
    pub by: Option<String>,
    /// Linear buckets of this width (e.g. 1ms) instead of powers of two: 63 of them, then an
    /// overflow row up to the longest call.
    #[arg(long, value_name = "DURATION")]
    pub linear: Option<String>,
    /// Print each call at least this slow (e.g. 10ms; 0: every call), with the task that
    /// started it and its arguments (a tracepoint start: its record's fields).
    #[arg(long, value_name = "DURATION")]
    pub slower_than: Option<String>,
    /// Only calls for which EXPR holds, decided in the kernel when the call ends (tracer
    /// probe's --filter grammar): on the start's arguments (named, or argN), the end's ret,
    /// comm, pid, tid, cpu. Refused calls are counted apart.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Where -s takes the stacks of slow calls: at their end (the default), or at their
    /// start (biostacks: the stack that queued a request, not the interrupt that completed
    /// it).
    #[arg(long, value_name = "WHERE", requires = "stack")]
    pub stack_at: Option<StackAt>,
    /// Print the histograms of each interval (1s, 500ms; a bare number is milliseconds, as
    /// in perf stat).
    #[arg(short = 'I', long = "interval", value_name = "INTERVAL", value_parser = crate::units::parse_interval)]
    pub interval: Option<Duration>,
    /// Stop after SECS seconds (or a duration with a unit: 500ms, 2s).
    #[arg(short, long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub duration: Option<Duration>,
    /// How kernel functions are attached: fentry (fentry/fexit), pmu (the kprobe PMU) or
    /// tracefs (kprobe_events). Default: fentry where the kernel permits it, else kprobes.
    #[arg(long, value_enum, value_name = "HOW")]
    pub kprobe_interface: Option<KprobeInterface>,
    #[command(flatten)]
    pub tasks: Tasks,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// Start COMMAND and measure only it and its children.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer profile -- ./busy                        on-CPU stacks of a command, busiest first
  tracer profile -a -d 2 -f svg -o cpu.svg        every CPU for 2 s, as a flame graph
  tracer profile -p 1234 -F 999 -d 10 -f folded   folded stacks, for flamegraph.pl or inferno
  tracer profile -a -d 2 -f pprof -o cpu.pb.gz    for go tool pprof, Parca, Pyroscope
  tracer profile --call-graph dwarf -- gzip -9 -f -k big.txt   a program without frame pointers
  tracer profile --off-cpu --min-block 1ms -p 1234 -d 10   where it blocks, and how long
  tracer profile --off-cpu --call-graph dwarf -p 1234 -d 10   the same, without frame pointers")]
#[command(mut_arg("leave_running", |a| a.conflicts_with("all")))]
pub struct ProfileArgs {
    /// Samples per second on each CPU (on-CPU; default 99).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Every task on every CPU (the default without -p or -- COMMAND).
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "command"])]
    pub all: bool,
    /// This process (all its threads) and the children it starts from now on (-i: the
    /// process alone).
    #[arg(short, long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// With -p: only the process itself. By default the children it starts from now on are
    /// profiled too, as `tracer probe -p`, `tracer stat -p` and perf follow them (perf's -i).
    #[arg(short = 'i', long = "no-inherit", requires = "pid")]
    pub no_inherit: bool,
    /// Stop after SECS seconds (or a duration with a unit: 500ms, 2s).
    #[arg(short, long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub duration: Option<Duration>,
    /// Print the top stacks of each interval (1s, 500ms; a bare number is milliseconds, as in
    /// perf stat); text only.
    #[arg(short = 'I', long = "interval", value_name = "INTERVAL", value_parser = crate::units::parse_interval)]
    pub interval: Option<Duration>,
    /// Accepted as perf record takes it (`perf record -g`): profile always takes whole call
    /// chains.
    #[arg(short = 'g')]
    pub call_graph: bool,
    /// How user stacks are walked, as perf record's option: `fp` (frame pointers, walked in
    /// the kernel; the default), or `dwarf[,SIZE]`: the top SIZE bytes of the stack (default
    /// 8192) copied with each sample and unwound by tracer from the binaries' .eh_frame, for
    /// programs built without frame pointers (most distribution packages). Off-CPU too: the
    /// stack as each task blocks, at every context switch.
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph_mode: Option<String>,
    /// Kernel stacks only.
    #[arg(long, conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// User stacks only.
    #[arg(long)]
    pub user_only: bool,
    /// Time blocked off CPU, by stack (from sched_switch out to back in), instead of samples.
    #[arg(long)]
    pub off_cpu: bool,
    /// With --off-cpu: leave out blocks shorter than this (a duration with its unit: 1ms,
    /// 500us; default 1us). A bare number is refused: no profiler agrees on its unit.
    #[arg(long, value_name = "DURATION")]
    pub min_block: Option<String>,
    /// The text report's number of stacks.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Output format: text (top stacks), folded (`comm;frame;frame N`), svg (flame graph),
    /// json (one object), pprof (gzipped profile.proto, with -o FILE or a pipe).
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: ProfileFormat,
    /// Write the data to FILE instead of standard output (the banner and summary stay on
    /// stderr).
    #[arg(id = "output_file", short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// Start COMMAND and profile only it and its children.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `tracer profile -f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileFormat {
    Text,
    Folded,
    Svg,
    Json,
    Pprof,
}

/// Watchpoint access types (`-t`), as the user spells them; the watch plan maps them to
/// breakpoint types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WatchType {
    R,
    W,
    Rw,
    X,
}

/// Whose events count: the task filters `probe` and `latency` share, checked by the BPF
/// programs before a hit is sent or counted.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Tasks {
    /// Every task on every CPU, as perf's -a (the default without -p or -- COMMAND).
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "command"])]
    pub all: bool,
    /// This process (all its threads) and the children it starts from now on (-i: the
    /// process alone).
    #[arg(short, long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Only tasks with this name.
    #[arg(long)]
    pub comm: Option<String>,
    /// Only hits on these CPUs (e.g. 0-3,5).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Only tasks in this cgroup (v2 directory).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Only tasks of this container (Docker, containerd, CRI-O or Podman id, or a unique
    /// prefix of it, as `docker ps` shows it): the tasks in its own cgroup.
    #[arg(long, value_name = "ID", conflicts_with = "cgroup")]
    pub container: Option<String>,
    /// With -p: only the process itself. By default the children it starts from now on are
    /// followed too, as `tracer trace -p`, `tracer stat -p` and perf follow them (perf's -i).
    #[arg(short = 'i', long = "no-inherit", requires = "pid")]
    pub no_inherit: bool,
}

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:
  tracer trace -- cat /etc/hostname                        every call of cat, strace's way
  tracer trace -e openat,read --failed -- cat /nope         failed opens and reads only
  tracer trace -e '!%memory,%signal' -- ls /etc             every call but memory and signal calls
  tracer trace -c -- ls /                                   calls, errors and time per call
  tracer trace -e openat --filter 'filename ~ \"/etc/*\"' -- cat /etc/hostname
  tracer trace -p 1234 -d 2s -o calls.txt                  a running process, its threads, its children
  tracer trace -a -e execve,openat -d 2                    every process's execs and opens (perf trace -a)
  tracer trace --format json -o calls.json -- true         one JSON object per call
  tracer trace -y -P /etc/hostname -- cat /etc/hostname    the calls on one file, descriptors named")]
pub struct TraceArgs {
    /// strace's -e: `[trace=][!]SET` the calls (names such as openat,read; strace's classes
    /// %file, %process, %network, %memory, %signal, %desc, %ipc, and its lists %stat, %lstat,
    /// %fstat, %%stat, %statfs, %fstatfs, %%statfs, %clock, %creds; `!` before the set for every
    /// other call), `signal=[!]SET` the signals whose `--- SIG... ---` lines show (none hides
    /// them), `status=failed` only failed calls. Each -e of a qualifier replaces the one
    /// before, as in strace. Default: every call and signal.
    #[arg(
        short = 'e',
        long = "expr",
        value_name = "SET",
        allow_hyphen_values = true
    )]
    pub sets: Vec<String>,
    /// Trace these running processes (comma-separated), all their threads and the children
    /// they start from now on.
    #[arg(short, long, value_name = "PID[,PID]", conflicts_with = "command")]
    pub pid: Option<String>,
    /// Every process on every CPU, as perf trace's -a (tracer itself left out); with
    /// -- COMMAND, for as long as the command runs. Each line names its thread and process.
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    pub all: bool,
    /// Only failed calls (strace's -Z), decided in the kernel.
    #[arg(short = 'Z', long)]
    pub failed: bool,
    /// Accepted as strace's -f and -ff: tracer trace always follows the children and threads
    /// (until the last one exits).
    #[arg(short = 'f', action = clap::ArgAction::Count)]
    pub follow: u8,
    /// Only calls for which EXPR holds, decided in the kernel: the filter grammar of `tracer
    /// probe` over the call's arguments by name (filename, fd, flags, count...), ret, comm,
    /// pid, tid and cpu.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Count calls, errors and time per call instead of printing them (strace's -c), in the
    /// kernel.
    #[arg(short = 'c', long = "summary-only")]
    pub summary: bool,
    /// Print the calls, then -c's table of them (strace's -C), counted as they are shown.
    #[arg(short = 'C', long = "summary", conflicts_with = "summary")]
    pub summary_with_calls: bool,
    /// With -c or -C, sum the time from each call's entry to its exit (strace's -w); without
    /// it, the table sums the CPU time spent in the call, as strace's does (time asleep or
    /// waiting in the call left out).
    #[arg(short = 'w', long = "summary-wall-clock")]
    pub wall_clock: bool,
    /// With -c or -C, order the table by SORTBY (strace's -S): time (the default), avg-time,
    /// calls, errors (most first), name, or nothing (the calls' numbers).
    #[arg(short = 'S', long = "summary-sort-by", value_name = "SORTBY")]
    pub sort_by: Option<String>,
    /// With -c or -C, the table's columns in this order (strace's -U): time-percent, total-time,
    /// avg-time, calls, errors, name (strace's other names for each too); the name is added
    /// last when left out.
    #[arg(short = 'U', long = "summary-columns", value_name = "COLUMNS")]
    pub columns: Option<String>,
    /// Bytes of each buffer (read, write) and string argument shown, as strace's -s; paths
    /// are read whole (up to 4096 bytes).
    #[arg(short = 's', long = "string-limit", value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(1..=tracer_common::STRLEN_MAX as i64))]
    pub strsize: u32,
    /// Prefix each line with the local time of day, as strace: -t HH:MM:SS, -tt with
    /// microseconds, -ttt seconds since the epoch.
    #[arg(short = 't', long = "time", action = clap::ArgAction::Count)]
    pub time: u8,
    /// Prefix each line with the time since the previous line's began, as strace's -r
    /// (`     0.000170 `; with -t, `12:33:41 (+     0.000170) `).
    #[arg(short = 'r', long = "relative-timestamps")]
    pub relative: bool,
    /// Show the time spent in each call, as strace's -T: `<0.000012>`.
    #[arg(short = 'T', long = "syscall-times")]
    pub durations: bool,
    /// Strings in hexadecimal, as strace's -x: -x those with a byte that is not printable
    /// (`"\x7f\x45\x4c\x46..."`; \t \n \v \f \r count as printable), -xx every string.
    #[arg(short = 'x', action = clap::ArgAction::Count)]
    pub hex: u8,
    /// Show what each file descriptor refers to, as strace's -y: `read(3</etc/hostname>,
    /// ...)`, `AT_FDCWD</tmp>`, `= 3</etc/hostname>`; -yy also a socket's endpoints
    /// (`TCP:[127.0.0.1:40236->127.0.0.1:9435]`) and a device's numbers (`</dev/null<char
    /// 1:3>>`).
    #[arg(short = 'y', long = "decode-fds", action = clap::ArgAction::Count)]
    pub decode_fds: u8,
    /// Only the calls that name PATH or use a descriptor of it, as strace's -P (repeat for
    /// more paths); the others are counted as filtered out.
    #[arg(short = 'P', long = "trace-path", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A stack per call, as strace's -k: the user stack where the call returned (entered,
    /// for exit and exit_group), one ` > FILE(FUNCTION+0xOFF) [0xOFFSET]` line per frame,
    /// walked by frame pointers and unwound by CFI from a copy of the stack's top.
    #[arg(short = 'k', long = "stack-trace")]
    pub stack_trace: bool,
    /// Show a call blocked this long at once, as `read(0,  <unfinished ...>`, and its end as
    /// `<... read resumed>` (strace's way); 0: only when tracing ends.
    #[arg(long, value_name = "SECS", default_value = "1s", value_parser = crate::units::parse_seconds)]
    pub unfinished_after: Duration,
    /// Stop after SECS seconds (or a duration with a unit: 500ms, 2s).
    #[arg(short, long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub duration: Option<Duration>,
    /// Output format: text (strace's lines), or json (one object per call). Only its long
    /// name here: -f is strace's.
    #[arg(long = "format", value_enum, default_value = "text")]
    pub format: Format,
    /// Write the calls to FILE (`-` for standard output). Without it, text goes to standard
    /// error (where strace writes it: the traced program keeps standard output to itself) and
    /// JSON to standard output.
    #[arg(id = "output_file", short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Pages per the shared BPF ring buffer (a power of two).
    #[arg(long, value_name = "N")]
    pub ring_pages: Option<usize>,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// The command to start and trace, with its children and threads (strace -f).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Where the data goes and in what form, the same in every command: `-o FILE` (perf's) and
/// `-f text|json` (bpftrace's).
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Output format: text, or json (JSON Lines: one object per line).
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: Format,
    /// Write the data to FILE instead of standard output (`-`: standard output; the banner
    /// and summary stay on stderr).
    #[arg(id = "output_file", short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// When a streaming run stops on its own: after N events or after a time.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Stop {
    /// Stop after N events.
    #[arg(short, long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after SECS seconds (or a duration with a unit: 500ms, 2s).
    #[arg(short, long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub duration: Option<Duration>,
}

/// What becomes of a `-- COMMAND` still running when tracing ends (`-c`, `-d`, Ctrl-C), the
/// same in every command that starts one.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommandEnd {
    /// Leave COMMAND running when tracing ends before it does (by default it and the
    /// processes it started get SIGTERM, and it dies with tracer).
    #[arg(long, requires = "command", conflicts_with = "pid")]
    pub leave_running: bool,
}

impl CommandEnd {
    pub fn at_end(&self) -> crate::launch::AtEnd {
        match self.leave_running {
            true => crate::launch::AtEnd::LeaveRunning,
            false => crate::launch::AtEnd::Stop,
        }
    }
}

/// `-s`/`--stack [WHICH]` (each command says in its help what `-s` alone takes).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StackArg {
    /// Print the stack of each hit: kernel, user or both.
    #[arg(short = 's', long = "stack", value_enum, num_args = 0..=1, require_equals = true, value_name = "WHICH")]
    pub stack: Option<Option<crate::stacks::Which>>,
}

/// The hint for a conflict clap found between two flags: what to do instead. clap names the
/// flags as it prints them (`--pid <PID>`, `[COMMAND]...`); an entry matches when both the
/// first flag and one of the others were given, in either order.
const CONFLICT_HINTS: &[(&str, &[&str], &str)] = &[
    ("--pid", &["[COMMAND]"], "trace either a running process (-p) or a command tracer starts (-- COMMAND)"),
    ("--sum", &["--hist"], "--hist also reports the sum and average of each histogram: drop --sum"),
    ("--count", &["--count-by", "--sum", "--hist"], "-c counts printed events; with --count-by/--sum/--hist nothing is printed per event: end the run with -d SECS, Ctrl-C, or -- COMMAND"),
    ("--leave-running", &["--pid", "--all-cpus"], "--leave-running is about a command tracer starts (-- COMMAND); a process traced with -p is never stopped"),
    ("--freq", &["--period"], "sample either at a frequency (-F HZ) or every N events (--period N)"),
    ("--all-cpus", &["--pid", "[COMMAND]"], "-a traces every task, the default: drop it to trace one process (-p) or a command tracer starts (-- COMMAND)"),
];

/// The hint for a flag clap found missing (another flag `requires` it).
const REQUIRED_HINTS: &[(&str, &str)] = &[
    (
        "--slower-than",
        "-s prints the stacks of the slow calls: add --slower-than DURATION, e.g. --slower-than 10ms -s",
    ),
    (
        "<COMMAND>",
        "--leave-running is about a command tracer starts (-- COMMAND); a process traced with -p is never stopped",
    ),
];

/// Parses the command line; a usage error comes back with tracer's hints for it.
/// `tracer generate`'s arguments.
#[derive(Debug, clap::Args)]
pub struct GenerateArgs {
    /// What to write: `man` (pages into DIR), or a completion script on stdout.
    pub what: Generated,
    /// The directory the man pages go into (created if missing); only with `man`.
    pub dir: Option<PathBuf>,
}

/// What `tracer generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generated {
    /// tracer.1 and tracer-SUBCOMMAND.1, roff, from this command-line model.
    Man,
    /// For bash (bash-completion loads it from /usr/share/bash-completion/completions/tracer).
    CompleteBash,
    /// For zsh (`_tracer`, in a directory of $fpath).
    CompleteZsh,
    /// For fish (vendor_completions.d/tracer.fish).
    CompleteFish,
}

pub fn parse(args: Vec<OsString>) -> Result<Cli, (clap::Error, Vec<String>)> {
    Cli::try_parse_from(normalize_args(args)).map_err(|e| {
        let hints = hints_for(&e);
        (e, hints)
    })
}

/// tracer's hints for a clap error (a conflict, or a flag that needs another).
pub fn hints_for(err: &clap::Error) -> Vec<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        err.kind(),
        ErrorKind::ArgumentConflict | ErrorKind::MissingRequiredArgument
    ) {
        return Vec::new();
    }
    let names = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(v)) => v.clone(),
        _ => Vec::new(),
    };
    let mut flags = names(ContextKind::InvalidArg);
    flags.extend(names(ContextKind::PriorArg));
    // `--count <N>` names --count, `--count-by <KEYS>` does not.
    let given = |name: &str| {
        flags.iter().any(|f| {
            f.starts_with(name)
                && !f[name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let hint = match err.kind() {
        ErrorKind::ArgumentConflict => (CONFLICT_HINTS.iter())
            .find(|(a, others, _)| given(a) && others.iter().any(|b| given(b)))
            .map(|(_, _, hint)| hint),
        _ => (REQUIRED_HINTS.iter())
            .find(|(missing, _)| given(missing))
            .map(|(_, hint)| hint),
    };
    hint.map(|h| h.to_string()).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    fn normalized(line: &str) -> String {
        let out = normalize_args(words(line));
        out.iter()
            .map(|w| w.to_str().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_separate_stack_value_is_joined_to_the_flag() {
        assert_eq!(
            normalized("tracer probe -s user uprobe:./prog:handle -c 5"),
            "tracer probe --stack=user uprobe:./prog:handle -c 5"
        );
        assert_eq!(
            normalized("tracer latency --stack kernel vfs_read"),
            "tracer latency --stack=kernel vfs_read"
        );
        assert_eq!(
            normalized("tracer watch counter -s both"),
            "tracer watch counter --stack=both"
        );
    }

    #[test]
    fn a_lone_stack_flag_and_other_words_are_left_alone() {
        for line in [
            "tracer watch -s counter -- ./prog",
            "tracer probe -s syscalls:sys_enter_getppid",
            "tracer probe --stack=user uprobe:./prog:handle",
            "tracer latency uprobe:./prog:handle --slower-than 10ms -s",
            "tracer probe -s User x",
        ] {
            assert_eq!(normalized(line), line);
        }
    }

    #[test]
    fn the_traced_command_and_other_subcommands_are_not_rewritten() {
        for line in [
            "tracer probe -s tp:x -- ls -s user",
            "tracer stat ls -s user",
            "tracer stat -- ls --stack kernel",
        ] {
            assert_eq!(normalized(line), line);
        }
        assert_eq!(normalize_args(Vec::new()), Vec::<OsString>::new());
    }

    fn stack_of(line: &str) -> Option<Option<crate::stacks::Which>> {
        let cli = Cli::try_parse_from(normalize_args(words(line))).unwrap();
        match cli.command {
            Command::Probe(a) => a.stack.stack,
            Command::Watch(a) => a.stack.stack,
            Command::Latency(a) => a.stack.stack,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stack_parses_alone_with_a_value_and_with_equals() {
        use crate::stacks::Which;
        assert_eq!(stack_of("tracer watch -s counter"), Some(None));
        assert_eq!(
            stack_of("tracer probe -s syscalls:sys_enter_getppid"),
            Some(None)
        );
        assert_eq!(
            stack_of("tracer probe -s user uprobe:p:f"),
            Some(Some(Which::User))
        );
        assert_eq!(
            stack_of("tracer probe --stack kernel a:b"),
            Some(Some(Which::Kernel))
        );
        assert_eq!(
            stack_of("tracer probe --stack=both a:b"),
            Some(Some(Which::Both))
        );
        assert_eq!(
            stack_of("tracer probe -s=user a:b"),
            Some(Some(Which::User))
        );
        assert_eq!(
            stack_of("tracer latency uprobe:p:f --slower-than 10ms -s"),
            Some(None)
        );
        assert_eq!(stack_of("tracer watch counter"), None);
        let err = Cli::try_parse_from(normalize_args(words("tracer probe --stack=sideways a:b")))
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    }

    /// A usage error clap found, with tracer's hints, for a command line.
    fn refused(line: &str) -> (clap::error::ErrorKind, Vec<String>) {
        let (err, hints) = parse(words(line)).expect_err("refused");
        (err.kind(), hints)
    }

    #[test]
    fn declared_conflicts_are_refused_with_a_hint() {
        use clap::error::ErrorKind::{ArgumentConflict, MissingRequiredArgument};
        let pid_or_command =
            "trace either a running process (-p) or a command tracer starts (-- COMMAND)";
        for line in [
            "tracer probe -p 1 tp:x -- ls",
            "tracer latency f --pid 1 -- ls",
            "tracer watch -p 1 counter -- ./prog",
            "tracer record -o t -p 1 --switches -- ls",
        ] {
            assert_eq!(
                refused(line),
                (ArgumentConflict, vec![pid_or_command.to_string()]),
                "{line}"
            );
        }
        let (kind, hints) = refused("tracer probe --sum ret --hist ret tp:x");
        assert_eq!(kind, ArgumentConflict);
        assert_eq!(
            hints,
            ["--hist also reports the sum and average of each histogram: drop --sum"]
        );
        for line in [
            "tracer probe -c 5 --count-by comm tp:x",
            "tracer probe --hist ret tp:x -c 5",
            "tracer probe --sum ret -c 1 tp:x",
        ] {
            let (kind, hints) = refused(line);
            assert_eq!(kind, ArgumentConflict, "{line}");
            assert!(
                hints[0].starts_with("-c counts printed events;"),
                "{line}: {hints:?}"
            );
        }
        assert_eq!(
            refused("tracer latency f -s"),
            (
                MissingRequiredArgument,
                vec!["-s prints the stacks of the slow calls: add --slower-than DURATION, e.g. --slower-than 10ms -s".to_string()]
            )
        );
        let leave = "--leave-running is about a command tracer starts (-- COMMAND); a process traced with -p is never stopped";
        for line in [
            "tracer probe --leave-running tp:x",
            "tracer latency --leave-running f",
            "tracer record -o t --leave-running -e cs",
        ] {
            assert_eq!(
                refused(line),
                (MissingRequiredArgument, vec![leave.to_string()]),
                "{line}"
            );
        }
        for line in [
            "tracer probe --leave-running -p 1 tp:x",
            "tracer watch --leave-running -p 1 counter",
            "tracer latency -p 1 --leave-running f",
            "tracer trace --leave-running -p 1",
            "tracer profile --leave-running -p 1",
            "tracer profile --leave-running -a",
            "tracer record -o t --leave-running -p 1 -e cs",
        ] {
            assert_eq!(
                refused(line),
                (ArgumentConflict, vec![leave.to_string()]),
                "{line}"
            );
        }
        for line in [
            "tracer probe --leave-running -c 1 tp:x -- ls",
            "tracer watch --leave-running counter -- ./prog",
            "tracer latency --leave-running f -- ls",
            "tracer profile --leave-running -- ls",
            "tracer trace --leave-running -- ls",
            "tracer record -o t --leave-running -e cs -- ls",
        ] {
            assert!(parse(words(line)).is_ok(), "{line}");
        }
        assert_eq!(
            refused("tracer record -o t -e cs -F 9 --period 2"),
            (
                ArgumentConflict,
                vec![
                    "sample either at a frequency (-F HZ) or every N events (--period N)"
                        .to_string()
                ]
            )
        );
        // Other usage errors get clap's words alone.
        assert_eq!(refused("tracer probe --nope x").1, Vec::<String>::new());
    }

    fn tasks(t: &Tasks) -> (Option<u32>, Option<&str>, Option<&str>) {
        (t.pid, t.comm.as_deref(), t.cpus.as_deref())
    }

    #[test]
    fn shared_groups_parse_the_same_in_every_command() {
        let cli = parse(words("tracer probe -p 7 --comm x -C 0-1 -c 3 -d 2 tp:x")).unwrap();
        let Command::Probe(a) = cli.command else {
            panic!()
        };
        assert_eq!(tasks(&a.tasks), (Some(7), Some("x"), Some("0-1")));
        assert_eq!(
            (a.stop.count, a.stop.duration),
            (Some(3), Some(Duration::from_secs(2)))
        );
        let cli = parse(words("tracer latency f -p 7 --comm x -C 0-1 -d 2")).unwrap();
        let Command::Latency(a) = cli.command else {
            panic!()
        };
        assert_eq!(tasks(&a.tasks), (Some(7), Some("x"), Some("0-1")));
        let cli = parse(words("tracer watch -c 3 -d 2 counter -- ./prog")).unwrap();
        let Command::Watch(a) = cli.command else {
            panic!()
        };
        assert_eq!(
            (a.stop.count, a.stop.duration),
            (Some(3), Some(Duration::from_secs(2)))
        );
    }
}
