//! The `tracer` binary: parse arguments, run the command, report errors with hints.

fn main() {
    let cli = match tracer::cli::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err((err, hints)) => {
            // clap's own message and usage line (or --help, --version on stdout), then ours.
            let _ = err.print();
            for hint in hints {
                eprintln!("hint: {hint}");
            }
            std::process::exit(err.exit_code());
        }
    };
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
