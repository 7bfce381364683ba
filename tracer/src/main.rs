//! The `tracer` binary: parse arguments, run the command, report errors with hints.

use clap::Parser;

fn main() {
    let cli =
        tracer::cli::Cli::parse_from(tracer::cli::normalize_args(std::env::args_os().collect()));
    let code = match tracer::cmd::run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            let code = err.exit_code();
            if code != 0 {
                eprintln!("error: {}", tracer::describe(&err));
                for hint in err.hints() {
                    eprintln!("hint: {hint}");
                }
            }
            code
        }
    };
    std::process::exit(code);
}
