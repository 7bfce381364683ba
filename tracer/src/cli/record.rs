//! `tracer record` and `tracer report`.

use std::path::PathBuf;
use std::time::Duration;

use super::{CommandEnd, OutputArgs};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer record -P syscalls:sys_enter_openat -- cat /etc/hostname     writes tracer.data
  tracer record -o t.tracer -P syscalls:sys_enter_openat -- cat /etc/hostname
  tracer record -o t.tracer -W counter -P uprobe:./prog:work -e task-clock -F 999 -- ./prog
  tracer record -o t.tracer -e page-faults --period 1 --switches -d 2
  tracer record -o t.tracer --live -P 'syscalls:sys_enter_open*' -d 2   watch it as it records
  tracer record -o - -P 'syscalls:sys_enter_open*' | tracer report -     the same through a pipe")]
pub struct RecordArgs {
    /// Where to write the recording (`-` for standard output, to pipe into `tracer report -`);
    /// as perf record does with perf.data, an existing file is kept as FILE.old.
    #[arg(short, long, value_name = "FILE", default_value = "tracer.data")]
    pub output: PathBuf,
    /// A probe, as `tracer probe` takes it (repeatable).
    #[arg(short = 'P', long = "probe", value_name = "SPEC")]
    pub probes: Vec<String>,
    /// Only the -P probes' hits for which EXPR holds, decided in the kernel (as `tracer probe
    /// --filter` takes it).
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// A hardware watchpoint: TARGET[:w|rw|x[:LEN]] with TARGET as `tracer watch` takes it
    /// (repeatable; needs -p or -- COMMAND).
    #[arg(short = 'W', long = "watch", value_name = "TARGET")]
    pub watches: Vec<String>,
    /// A sampled counter (repeatable): a software, hardware, cache or raw event.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Sample counters at this frequency (samples per second per CPU).
    #[arg(
        short = 'F',
        long = "freq",
        value_name = "HZ",
        conflicts_with = "period"
    )]
    pub freq: Option<u64>,
    /// Sample counters every N events.
    #[arg(long, value_name = "N")]
    pub period: Option<u64>,
    /// Record each sample's call chain, kernel and user, walked by frame pointers (as `perf
    /// record -g`; every sample has its instruction pointer without it).
    #[arg(short = 'g')]
    pub call_graph_fp: bool,
    /// How to record samples' call chains, as perf record takes it: `fp` (frame pointers, the
    /// same as -g) or `dwarf[,SIZE]` (each sample's user registers and the top SIZE bytes of
    /// its stack, 8192 by default, unwound from the binaries' .eh_frame as they are drained:
    /// whole stacks of programs built without frame pointers).
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Record scheduler context switches (in and out, per thread).
    #[arg(long)]
    pub switches: bool,
    /// Every task on every CPU, as perf record's -a (the default without -p or -- COMMAND).
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "command"])]
    pub all: bool,
    /// Only this process (and with -W: the process whose memory is watched).
    #[arg(short, long, conflicts_with = "command")]
    pub pid: Option<u32>,
    /// Stop after SECS seconds (or a duration with a unit: 500ms, 2s).
    #[arg(short, long, value_name = "SECS", value_parser = crate::units::parse_seconds)]
    pub duration: Option<Duration>,
    /// Data pages per CPU ring (a power of two): more pages, fewer lost events [default:
    /// 8192 / CPUs, from 64 to 1024: 4 MiB per CPU on up to 8 CPUs]
    #[arg(long, value_name = "N")]
    pub ring_pages: Option<usize>,
    /// How long a record may trail a later-stamped one on another CPU and still be put in
    /// order (e.g. 10ms).
    #[arg(long, default_value = "10ms", value_name = "TIME", value_parser = crate::units::parse_duration_ns)]
    pub reorder_window: u64,
    /// Also print the timeline as it is recorded, as `tracer report` would.
    #[arg(long)]
    pub live: bool,
    #[command(flatten)]
    pub command_end: CommandEnd,
    /// The command to launch and record (its whole process tree).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer report                                        reads tracer.data
  tracer report t.tracer
  tracer report t.tracer --pid 1234 --source 'watch:*' --since 0.5 --until 2
  tracer report t.tracer -f json | jq .
  tracer report t.tracer --perfetto t.json     then open t.json in ui.perfetto.dev")]
pub struct ReportArgs {
    /// The recording (`-` for standard input), `tracer record`'s tracer.data by default.
    #[arg(default_value = "tracer.data")]
    pub file: PathBuf,
    /// Only this process.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Only this thread.
    #[arg(long)]
    pub tid: Option<u32>,
    /// Only tasks with this name.
    #[arg(long)]
    pub comm: Option<String>,
    /// Only these sources (a name or glob, comma-separated: `uprobe:*`, `watch:counter`).
    #[arg(long, value_name = "NAMES")]
    pub source: Option<String>,
    /// Only records at or after this many seconds into the recording.
    #[arg(long, value_name = "SECS")]
    pub since: Option<f64>,
    /// Only records before this many seconds into the recording.
    #[arg(long, value_name = "SECS")]
    pub until: Option<f64>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also write the timeline as Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}
