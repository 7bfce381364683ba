//! What a run says on stderr beside its data that is neither banner nor summary: notes
//! (something the user should know about the output), and `-v` progress lines. One wording,
//! one place: layers hand their notes here instead of printing.

use std::fmt::Display;
use std::io::Write;

/// The prefix of a note's first line: a note explains the output; a hint says what to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `note: ...`
    Note,
    /// `hint: ...`
    Hint,
    /// `bpf: ...`: a message of the BPF programs (`--debug-bpf`).
    Bpf,
}

/// A note's text as it is printed.
pub fn render(kind: Kind, text: &dyn Display) -> String {
    let prefix = match kind {
        Kind::Note => "note",
        Kind::Hint => "hint",
        Kind::Bpf => "bpf",
    };
    format!("{prefix}: {text}\n")
}

/// A `-v` progress line of a command (`tracer stat: counting`): tests and scripts wait on
/// them, so their wording is kept.
pub fn render_progress(command: &str, text: &dyn Display) -> String {
    format!("tracer {command}: {text}\n")
}

/// Prints a note on stderr (a failed write to stderr has nowhere to be reported).
pub fn note(text: impl Display) {
    emit(&render(Kind::Note, &text));
}

/// Prints a hint on stderr.
pub fn hint(text: impl Display) {
    emit(&render(Kind::Hint, &text));
}

/// Prints a message of the BPF programs (`--debug-bpf`) on stderr.
pub fn bpf(text: impl Display) {
    emit(&render(Kind::Bpf, &text));
}

/// Prints a `-v` progress line on stderr.
pub fn progress(command: &str, text: impl Display) {
    emit(&render_progress(command, &text));
}

fn emit(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_hints_and_progress_lines_are_worded_once() {
        assert_eq!(render(Kind::Note, &"a b"), "note: a b\n");
        assert_eq!(
            render(Kind::Hint, &"raise --ring-pages"),
            "hint: raise --ring-pages\n"
        );
        assert_eq!(
            render_progress("stat", &"counting"),
            "tracer stat: counting\n"
        );
    }
}
