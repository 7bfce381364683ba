//! `tracer serve`.

use std::path::PathBuf;

/// `--listen`'s default: loopback, the port after node_exporter's neighbours (9435 is free in
/// Prometheus's default port allocations list).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9435";

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tracer serve serve.toml                              /metrics on 127.0.0.1:9435
  tracer serve serve.toml --listen 0.0.0.0:9435        on every interface
  tracer serve serve.toml --pprof                      and CPU profiles for go tool pprof

SIGHUP reloads CONFIG (unchanged metrics keep counting); SIGTERM detaches and exits 0.
A config holds one [[metric]] table per metric (docs/serve.md):
  [[metric]]
  name = \"syscalls_getppid\"             # exported as tracer_syscalls_getppid_total
  probe = \"syscalls:sys_enter_getppid\"
  count_by = [\"comm\"]")]
pub struct ServeArgs {
    /// The TOML config: one [[metric]] table per metric.
    #[arg(value_name = "CONFIG")]
    pub config: PathBuf,
    /// Where to serve /metrics and / (IP:PORT).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// Connections served at once; past it the oldest is closed for the newest, so that a
    /// scraper is served while others hold connections open (each buffers 16 KiB at most).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_connections: u32,
    /// Also serve /debug/pprof/profile?seconds=N&hz=N: on-CPU profiles of every CPU (pprof),
    /// one at a time, to whoever can connect (they show every process's functions).
    #[arg(long)]
    pub pprof: bool,
}
