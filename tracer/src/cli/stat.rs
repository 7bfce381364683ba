//! `tracer stat` and `tracer stat report`: perf stat's flags.

use std::path::PathBuf;

use crate::output::events::Format;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The report goes to stderr, as perf stat's does (the command's stdout stays \
clean); -o FILE or --log-fd N send it elsewhere.

Examples:
  tracer stat -- make                                        perf stat's default counters
  tracer stat -e syscalls:sys_enter_openat,page-faults -- ls
  tracer stat -e '{task-clock,page-faults}' -x, -- ./prog    a group, as CSV
  tracer stat -a -A -e cs -I 1000                            per CPU, every second
  tracer stat -p 1234 --per-thread --timeout 5000            each thread for 5 s
  tracer stat -r 5 -e page-faults:u -- ./prog                mean and spread of 5 runs
  tracer stat -a --per-core -e task-clock -I 1000             per physical core
  tracer stat -p 1234 -- sleep 1                             a running process, for 1 s
  tracer stat record -o counts.json -a -e cs -- ./prog        the counts kept in a file
  tracer stat report -i counts.json -A                        and printed again, per CPU"
)]
pub struct StatArgs {
    /// Events, comma-separated (repeatable): NAME[:MODS] (task-clock, page-faults, cycles,
    /// L1-dcache-load-misses...), CAT:NAME tracepoints, rHEX raw, PMU/TERM=VAL,.../,
    /// mem:ADDR[/LEN][:rwx], kprobe:FUNC, uprobe:PATH:SYMBOL, usdt:PATH:[PROVIDER:]NAME;
    /// {a,b} is a group. Modifiers: u, k, h, G, H, I, D, p.
    #[arg(short, long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Count every task on every CPU.
    #[arg(short, long = "all-cpus")]
    pub all_cpus: bool,
    /// Count every task on these CPUs (e.g. 0-3,5).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Count these processes, all their threads (comma-separated).
    #[arg(short, long, value_name = "PIDS")]
    pub pid: Option<String>,
    /// Count these threads (comma-separated).
    #[arg(short, long, value_name = "TIDS")]
    pub tid: Option<String>,
    /// Only tasks of these cgroups, one per event in order (one name applies to all; needs -a).
    #[arg(short = 'G', long = "cgroup", value_name = "NAMES")]
    pub cgroup: Vec<String>,
    /// Children of the counted tasks are not counted.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// One line per CPU instead of the sum (with -a or -C).
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// One line per thread (with -p or -t; with -a, every thread that exists at the start).
    #[arg(long)]
    pub per_thread: bool,
    /// One line per processor socket (topology from sysfs; with -a or -C).
    #[arg(long, conflicts_with_all = ["per_die", "per_core", "per_node", "per_cache", "no_aggr", "per_thread"])]
    pub per_socket: bool,
    /// One line per processor die.
    #[arg(long, conflicts_with_all = ["per_core", "per_node", "per_cache", "no_aggr", "per_thread"])]
    pub per_die: bool,
    /// One line per physical core.
    #[arg(long, conflicts_with_all = ["per_node", "per_cache", "no_aggr", "per_thread"])]
    pub per_core: bool,
    /// One line per NUMA node.
    #[arg(long, conflicts_with_all = ["per_cache", "no_aggr", "per_thread"])]
    pub per_node: bool,
    /// One line per shared cache: L1, L2, L3 (alone: the last level).
    #[arg(long, num_args = 0..=1, default_missing_value = "", require_equals = true, value_name = "LEVEL", conflicts_with_all = ["no_aggr", "per_thread"])]
    pub per_cache: Option<String>,
    /// Do not merge events of the same name from several PMUs (accepted: tracer opens one
    /// event per name, so there is nothing to merge).
    #[arg(long)]
    pub no_merge: bool,
    /// Detailed run: add L1-dcache and LLC loads and misses; -dd adds L1-icache, dTLB and
    /// iTLB; -ddd adds L1-dcache prefetches.
    #[arg(short = 'd', long = "detailed", action = clap::ArgAction::Count)]
    pub detailed: u8,
    /// Metrics or metric groups (comma-separated): IPC, branch_miss_rate, cache_miss_rate,
    /// l1d_miss_rate, CPUs_utilized, computed from their events where this machine has them.
    #[arg(short = 'M', long = "metrics", value_name = "METRICS")]
    pub metrics: Vec<String>,
    /// Only print the computed metrics, no raw counts.
    #[arg(long)]
    pub metric_only: bool,
    /// Top-down statistics (needs the CPU's topdown events and -a).
    #[arg(long)]
    pub topdown: bool,
    /// Hardware transaction statistics (needs the CPU's TSX events).
    #[arg(short = 'T', long = "transaction")]
    pub transaction: bool,
    /// Print counts with thousands separators, as the locale has them (the default).
    #[arg(short = 'B', long = "big-num", overrides_with = "no_big_num")]
    pub big_num: bool,
    /// With -I: also print the totals of the whole run at the end.
    #[arg(long)]
    pub summary: bool,
    /// With --summary and -x: no `summary` label in the total rows' first field.
    #[arg(long)]
    pub no_csv_summary: bool,
    /// Count user space only in every event (as :u on each).
    #[arg(long, conflicts_with = "all_kernel")]
    pub all_user: bool,
    /// Count kernel space only in every event (as :k on each).
    #[arg(long)]
    pub all_kernel: bool,
    /// `tracer stat record`: also write the counts to the -o FILE, for `tracer stat report`.
    #[arg(long, hide = true)]
    pub record: bool,
    /// Run this shell command before each run of the counted command.
    #[arg(long, value_name = "COMMAND")]
    pub pre: Option<String>,
    /// Run this shell command after each run of the counted command.
    #[arg(long, value_name = "COMMAND")]
    pub post: Option<String>,
    /// Print nothing (no report, no warnings): for the exit status, or with `stat record`.
    #[arg(long)]
    pub quiet: bool,
    /// With -I: clear the screen before each interval.
    #[arg(long)]
    pub interval_clear: bool,
    /// Print the counts of each MSECS interval (or with a unit: 1s, 500ms).
    #[arg(short = 'I', long = "interval-print", value_name = "MSECS", value_parser = crate::units::parse_millis)]
    pub interval: Option<u64>,
    /// Stop after N intervals.
    #[arg(long, value_name = "N")]
    pub interval_count: Option<u64>,
    /// Stop after MSECS milliseconds (a command is sent SIGTERM).
    #[arg(long, value_name = "MSECS")]
    pub timeout: Option<u64>,
    /// Start counting MSECS after the command starts.
    #[arg(
        short = 'D',
        long = "delay",
        value_name = "MSECS",
        allow_negative_numbers = true
    )]
    pub delay: Option<i64>,
    /// Run the command N times; print means and their relative standard error.
    #[arg(short, long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Count nothing: time the command only.
    #[arg(short, long = "null")]
    pub null_run: bool,
    /// Say why events are not supported, and how each counter was opened and read.
    #[arg(short, long)]
    pub verbose: bool,
    /// CSV with this separator (perf stat's -x field order).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub separator: Option<String>,
    /// One JSON object per counter line.
    #[arg(short, long = "json-output", visible_alias = "json")]
    pub json: bool,
    /// Output format: text, or json (the same as -j), as in the other commands.
    #[arg(short = 'f', long = "format", value_enum)]
    pub format: Option<Format>,
    /// Write the report to FILE (`-`: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Append to the -o file (or the --log-fd file) instead of truncating it.
    #[arg(long)]
    pub append: bool,
    /// Write the report to this open file descriptor.
    #[arg(long, value_name = "N")]
    pub log_fd: Option<i32>,
    /// Print counts without thousands separators.
    #[arg(long, overrides_with = "big_num")]
    pub no_big_num: bool,
    /// Print raw counts, not scaled up for multiplexing.
    #[arg(long)]
    pub no_scale: bool,
    /// The command to run and count (`--` before it is optional, as in perf stat).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `tracer stat report`'s arguments (perf stat report's); its examples are `tracer stat`'s.
#[derive(Debug, clap::Args)]
pub struct StatReportArgs {
    /// The file `tracer stat record -o FILE` wrote.
    #[arg(short, long, value_name = "FILE")]
    pub input: PathBuf,
    /// One line per CPU (a system-wide recording).
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// One line per processor socket (a system-wide recording).
    #[arg(long, conflicts_with_all = ["per_die", "per_core", "per_node", "no_aggr"])]
    pub per_socket: bool,
    /// One line per processor die.
    #[arg(long, conflicts_with_all = ["per_core", "per_node", "no_aggr"])]
    pub per_die: bool,
    /// One line per physical core.
    #[arg(long, conflicts_with_all = ["per_node", "no_aggr"])]
    pub per_core: bool,
    /// One line per NUMA node.
    #[arg(long, conflicts_with = "no_aggr")]
    pub per_node: bool,
    /// CSV with this separator.
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "json"
    )]
    pub separator: Option<String>,
    /// One JSON object per counter line.
    #[arg(short, long = "json-output")]
    pub json: bool,
}
