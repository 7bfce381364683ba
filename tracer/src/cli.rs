//! Command-line definitions (clap) and nothing else.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tracer",
    version,
    about = "What is the kernel (or this process) doing? Probes, watchpoints, latency and counters.",
    after_help = "Examples:\n  tracer features            what this kernel supports, and what is missing\n  tracer features --json     the same as one JSON object"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
