//! One module per subcommand: validated input -> kernel session -> report.

pub mod features;
pub mod generate;
pub mod latency;
pub mod list;
pub mod probe;
pub mod profile;
pub mod record;
pub mod report;
pub mod serve;
pub mod stat;
pub mod trace;
pub mod watch;

use crate::cli::Command;
use crate::Error;

/// Runs a parsed command; returns the exit status (a launched command's status passes through).
pub fn run(command: Command) -> Result<i32, Error> {
    match command {
        Command::Features { json } => features::run(json).map(|()| 0),
        Command::Probe(args) => probe::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Watch(args) => watch::run(args),
        Command::Latency(args) => latency::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Stat(args) => stat::run(args),
        Command::StatReport(args) => stat::report(args),
        Command::Record(args) => record::run(args),
        Command::Report(args) => report::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Generate(args) => generate::run(args).map(|()| 0),
        Command::List {
            pattern,
            verbose,
            binary,
        } => list::run(list::ListArgs {
            pattern,
            verbose,
            binary,
        })
        .map(|()| 0),
    }
}
