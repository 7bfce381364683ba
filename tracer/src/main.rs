//! The `tracer` binary: parse arguments, run the command, report errors with hints.

/// Runs before Rust's runtime ignores SIGPIPE, so that a launched command gets the signal
/// dispositions, mask and limits tracer was given (launch.rs, `Inherited`).
#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_INHERITED: extern "C" fn() = tracer::launch::note_inherited;

fn main() {
    use tracer::output::notes::emit;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The guard of a launched command's tree (guard.rs), started by tracer itself.
    if args.get(1).is_some_and(|a| a == tracer::guard::GUARD_ARG) {
        std::process::exit(tracer::guard::run(&args[2..]));
    }
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
                emit(&format!("hint: {hint}\n"));
            }
            std::process::exit(usage_code(err.exit_code()));
        }
    };
    // A debug file fetched from a debuginfod server is said as a note (kernel/debuginfod.rs).
    tracer::kernel::debuginfod::set_reporter(|text| tracer::output::notes::note(text));
    let code = match tracer::cmd::run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            let code = usage_code(err.exit_code());
            if code != 0 {
                emit(&format!("error: {}\n", tracer::describe(&err)));
                for hint in err.hints() {
                    emit(&format!("hint: {hint}\n"));
                }
            }
            code
        }
    };
    // Tracepoint and probe events whose close waits for the kernel are closed by a child
    // after this process exits.
    tracer::closer::close_after_exit(tracer::perf::deferred::take());
    std::process::exit(code);
}
