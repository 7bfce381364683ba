//! What a run says on stderr beside its data that is neither banner nor summary: notes
//! (something the user should know about the output), and `-v` progress lines. One wording,
//! one place: layers hand their notes here instead of printing.

use std::fmt::Display;
use std::io::Write;

/// The prefix of a note's first line: a note explains the output; a hint says what to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// `note: ...`
    Note,
    /// `hint: ...`
    Hint,
    /// `bpf: ...`: a message of the BPF programs (`--debug-bpf`).
    Bpf,
}

/// A note's text as it is printed.
pub fn render(kind: NoteKind, text: &dyn Display) -> String {
    let prefix = match kind {
        NoteKind::Note => "note",
        NoteKind::Hint => "hint",
        NoteKind::Bpf => "bpf",
    };
    format!("{prefix}: {text}\n")
}

/// A `-v` progress line of a command (`tracer stat: counting`): tests and scripts wait on
/// them, so their wording is kept.
pub fn render_progress(command: &str, text: &dyn Display) -> String {
    format!("tracer {command}: {text}\n")
}

/// The note for hits no program saw ([`crate::bpf::Bpf::missed`]), if there were any: an upper
/// bound, since a program that serves every system call (the raw syscall programs of
/// `--count-by`) is skipped for calls that are not traced too.
fn missed(runs: u64) -> Option<String> {
    (runs > 0).then(|| {
        format!(
            "up to {runs} hits missed: the kernel skipped tracer's programs {runs} times \
             because a BPF program was already running on that CPU (the hit came in an \
             interrupt of it; or a task was preempted inside it, on kernels that run syscall \
             tracepoint programs preemptibly, such as Debian's 7.3, which skip programs for \
             the other tasks on that CPU until it resumes)"
        )
    })
}

/// Every note on the kernel's skips of a run's programs: those serving its probes
/// ([`missed`], `Bpf::missed`) and its bookkeeping ([`bookkeeping_missed`],
/// `Bpf::bookkeeping_missed`). Each subcommand that loads programs says them in its summary.
pub fn skipped(runs: u64, bookkeeping: (u64, u64)) -> Vec<String> {
    (missed(runs).into_iter())
        .chain(bookkeeping_missed(bookkeeping))
        .collect()
}

/// What the kernel's skips of the bookkeeping programs ([`crate::bpf::Bpf::bookkeeping_missed`])
/// may have cost: hits of processes the process set did not see, names of renamed tasks.
fn bookkeeping_missed((tracking, renames): (u64, u64)) -> Vec<String> {
    let mut notes = Vec::new();
    if tracking > 0 {
        notes.push(format!(
            "the kernel skipped tracer's process-set programs {tracking} times (one was \
             already running on that CPU): hits of processes whose fork or exec they did not \
             see may have been filtered out"
        ));
    }
    if renames > 0 {
        notes.push(format!(
            "the kernel skipped tracer's rename program {renames} times (one was already \
             running on that CPU): some hits may show a task's former name"
        ));
    }
    notes
}

/// Prints a note on stderr (a failed write to stderr has nowhere to be reported).
pub fn note(text: impl Display) {
    emit(&render(NoteKind::Note, &text));
}

/// Prints a loss while running on stderr, as it happens and without a prefix (`lost 12 events
/// (ring full): raise --ring-pages`); the end-of-run summary counts them all again.
pub fn lost(text: impl Display) {
    emit(&format!("{text}\n"));
}

/// Prints a hint on stderr.
pub fn hint(text: impl Display) {
    emit(&render(NoteKind::Hint, &text));
}

/// Prints a message of the BPF programs (`--debug-bpf`) on stderr.
pub fn bpf(text: impl Display) {
    emit(&render(NoteKind::Bpf, &text));
}

/// `Attaching N probes...` on a terminal (bpftrace's words), before a long attach; off a
/// terminal nothing, so that logs and tests see only the banner.
pub fn attaching(count: usize) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "Attaching {count} probes...").and_then(|()| err.flush());
    }
}

/// Ends [`attaching`]'s line with how many were attached and how long it took.
pub fn attached(count: usize, took: std::time::Duration) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        emit(&format!(" {count} attached in {} ms\n", took.as_millis()));
    }
}

/// Prints a `-v` progress line on stderr.
pub fn progress(command: &str, text: impl Display) {
    emit(&render_progress(command, &text));
}

/// `PACKED PID_TGID` from the programs -> `syscalls:sys_enter_getppid: dropped a hit of
/// 42/43: comm is not --comm`.
pub fn describe_drop<'a>(
    message: &str,
    mut probes: impl Iterator<Item = (u32, &'a str)>,
) -> String {
    use tracer_common::drop;
    let mut words = message.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(packed)), Some(Ok(pid_tgid)), None) = (words.next(), words.next(), words.next())
    else {
        return message.to_string();
    };
    let (slot, reason, cpu) = drop::unpack(packed);
    let name = (probes.find(|&(id, _)| id == slot))
        .map_or_else(|| format!("slot {slot}"), |(_, name)| name.to_string());
    let (pid, tid) = (pid_tgid >> 32, pid_tgid & 0xffff_ffff);
    let what = match reason {
        drop::RING_FULL | drop::MAP_FULL => format!("a hit of {pid}/{tid} on CPU {cpu}"),
        _ => format!("dropped a hit of {pid}/{tid} on CPU {cpu}"),
    };
    format!("{name}: {what}: {}", drop::describe(reason))
}

/// Writes `text` on stderr. A closed or full stderr (`2>&1 | head`) is no reason to stop, and
/// `eprint!` would panic on it: the write is dropped, and a run whose data goes to stderr
/// (`tracer trace`) meets the closed pipe through its own writer and ends there.
pub fn emit(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_messages_name_their_probe_and_reason() {
        use tracer_common::drop;
        let probes = [(16, "sched:a"), (17, "sched:b")];
        let said = |slot, reason, cpu, pid_tgid: u64| {
            let message = format!("{} {pid_tgid}", drop::pack(slot, reason, cpu));
            describe_drop(&message, probes.iter().copied())
        };
        assert_eq!(
            said(17, drop::COMM, 1, 42 << 32 | 43),
            "sched:b: dropped a hit of 42/43 on CPU 1: comm is not --comm"
        );
        assert_eq!(
            said(9, drop::RING_FULL, 0, 5 << 32 | 5),
            "slot 9: a hit of 5/5 on CPU 0: lost: the output ring was full"
        );
        assert_eq!(describe_drop("other", probes.iter().copied()), "other");
    }

    #[test]
    fn bookkeeping_misses_say_what_they_may_have_cost() {
        assert!(bookkeeping_missed((0, 0)).is_empty());
        assert_eq!(
            bookkeeping_missed((2, 1)),
            [
                "the kernel skipped tracer's process-set programs 2 times (one was already \
                 running on that CPU): hits of processes whose fork or exec they did not see \
                 may have been filtered out",
                "the kernel skipped tracer's rename program 1 times (one was already running \
                 on that CPU): some hits may show a task's former name"
            ]
        );
    }

    #[test]
    fn notes_hints_and_progress_lines_are_worded_once() {
        assert_eq!(render(NoteKind::Note, &"a b"), "note: a b\n");
        assert_eq!(
            render(NoteKind::Hint, &"raise --ring-pages"),
            "hint: raise --ring-pages\n"
        );
        assert_eq!(
            render_progress("stat", &"counting"),
            "tracer stat: counting\n"
        );
    }
}
