//! One module per subcommand: validated input -> kernel session -> report.

pub mod features;

use crate::cli::Command;
use crate::Error;

/// Runs a parsed command.
pub fn run(command: Command) -> Result<(), Error> {
    match command {
        Command::Features { json } => features::run(json),
    }
}
