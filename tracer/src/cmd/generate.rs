//! `tracer generate`: completion scripts and man pages, written from the same clap model that
//! parses the command line, so that neither can drift from the flags (ripgrep's
//! `--generate`). The Debian package (`cargo xtask dist`) installs what this writes.

use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateArgs, Generated};
use crate::output;
use crate::Error;

pub fn run(args: GenerateArgs) -> Result<(), Error> {
    let shell = match args.what {
        Generated::Man => {
            let Some(dir) = args.dir else {
                return Err(Error::usage(
                    "`tracer generate man` needs the directory to write the pages into",
                    vec!["e.g. `tracer generate man ./man`".into()],
                ));
            };
            return man_pages(&dir);
        }
        Generated::CompleteBash => Shell::Bash,
        Generated::CompleteZsh => Shell::Zsh,
        Generated::CompleteFish => Shell::Fish,
    };
    if let Some(dir) = args.dir {
        return Err(Error::usage(
            format!(
                "a completion script goes to stdout, not into {}",
                dir.display()
            ),
            vec![format!(
                "redirect it: `tracer generate {} > FILE`",
                shell_word(args.what)
            )],
        ));
    }
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "tracer", &mut script);
    output::write_stdout(&String::from_utf8_lossy(&script))
}

fn shell_word(what: Generated) -> &'static str {
    match what {
        Generated::Man => "man",
        Generated::CompleteBash => "complete-bash",
        Generated::CompleteZsh => "complete-zsh",
        Generated::CompleteFish => "complete-fish",
    }
}

/// tracer.1, and tracer-SUBCOMMAND.1 for each visible subcommand (git's and perf's naming:
/// `man tracer-probe`).
fn man_pages(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Runtime {
        message: format!("cannot create {}: {e}", dir.display()),
        hints: vec!["choose a directory you can write".into()],
    })?;
    // `tracer help SUBCOMMAND` has no page of its own: `man tracer-SUBCOMMAND` is its page.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    write_page(dir, "tracer", root.clone())?;
    // `help` is clap's own; hidden commands are spellings of visible ones.
    for sub in root
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("tracer-{}", sub.get_name());
        // The page's NAME and SYNOPSIS read `tracer-probe`, as git's and perf's pages do.
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(name.replace('-', " "));
        write_page(dir, &name, page)?;
    }
    Ok(())
}

/// One of clap_mangen's section renderers.
type Section = fn(&clap_mangen::Man, &mut Vec<u8>) -> std::io::Result<()>;

fn write_page(dir: &Path, name: &str, command: clap::Command) -> Result<(), Error> {
    let examples = command.get_after_help().map(|text| text.to_string());
    let has_subcommands = command.get_subcommands().any(|s| !s.is_hide_set());
    let man = clap_mangen::Man::new(command)
        .date(env!("TRACER_BUILD_DATE"))
        .source(format!("tracer {}", env!("CARGO_PKG_VERSION")))
        .manual("tracer manual");
    let mut page = Vec::new();
    // clap_mangen's sections but its EXTRA, whose after_help it fills and justifies: the
    // examples go under EXAMPLES, as man-pages(7) names it, unfilled, so that each line can
    // be copied as it stands.
    let sections: [Section; 5] = [
        |m, w| m.render_title(w),
        |m, w| m.render_name_section(w),
        |m, w| m.render_synopsis_section(w),
        |m, w| m.render_description_section(w),
        |m, w| m.render_options_section(w),
    ];
    for section in sections {
        section(&man, &mut page).map_err(Error::Output)?;
    }
    if has_subcommands {
        man.render_subcommands_section(&mut page)
            .map_err(Error::Output)?;
    }
    if let Some(text) = examples {
        page.extend_from_slice(examples_section(&text).as_bytes());
    }
    // The version is in every page's footer (`source`).
    let path = dir.join(format!("{name}.1"));
    crate::output::write_file(&path, &page)
}

/// An after_help's examples as a roff EXAMPLES section: lines kept as they are, `-` as the
/// ASCII minus (`\-`) so that a copied command runs, and no line read as a roff request.
fn examples_section(after_help: &str) -> String {
    let body = after_help
        .strip_prefix("Examples:")
        .unwrap_or(after_help)
        .trim_matches('\n');
    let mut roff = String::from(".SH EXAMPLES\n.nf\n");
    for line in body.lines() {
        roff.push_str("\\&");
        roff.push_str(&line.replace('\\', "\\e").replace('-', "\\-"));
        roff.push('\n');
    }
    roff.push_str(".fi\n");
    roff
}
