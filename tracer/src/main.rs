//! The `tracer` binary: parse arguments, run the command, report errors with hints.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // perf stat's usage errors exit 129 (parse-options' usage_with_options): scripts written
    // against perf stat test for it.
    let stat = args.get(1).is_some_and(|a| a == "stat");
    let usage_code = |code: i32| if stat && code == 2 { 129 } else { code };
    let cli = match tracer::cli::parse(args) {
        Ok(cli) => cli,
        Err((err, hints)) => {
            // clap's own message and usage line (or --help, --version on stdout), then ours.
            let _ = err.print();
            for hint in hints {
                eprintln!("hint: {hint}");
            }
            std::process::exit(usage_code(err.exit_code()));
        }
    };
    let code = match tracer::cmd::run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            let code = usage_code(err.exit_code());
            if code != 0 {
                eprintln!("error: {}", tracer::describe(&err));
                for hint in err.hints() {
                    eprintln!("hint: {hint}");
                }
            }
            code
        }
    };
    // Tracepoint and probe events whose close waits for the kernel are closed by a child
    // after this process exits.
    tracer::detach::close_after_exit(tracer::perf::detach::take());
    std::process::exit(code);
}
