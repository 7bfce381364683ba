//! tracer: what is the kernel (or this process) doing?
//!
//! The modules follow the data, from the bottom: `perf`, `units`, `launch`, `bpf`, `kernel`,
//! `output`, `stacks`, `cli`, `plan`, the `probe`/`breakpoint`/`counter` layers, `tracefile`,
//! `session`, `cmd` (ARCHITECTURE.md; `tests/layers.rs` holds them to it).
#![deny(unsafe_code)]

/// `[(value, "NAME"), ...]` from the `libc` crate's constants of these names: the numbers of a
/// kernel ABI table come from a maintained crate, never typed by hand.
macro_rules! libc_names {
    ($ty:ty; $($name:ident),* $(,)?) => {
        [$((libc::$name as $ty, stringify!($name))),*]
    };
}
pub(crate) use libc_names;

pub mod bpf;
pub mod breakpoint;
pub mod cli;
pub mod closer;
pub mod cmd;
pub mod counter;
pub mod guard;
pub mod kernel;
pub mod launch;
pub mod output;
pub mod perf;
pub mod plan;
pub mod probe;
pub mod session;
pub mod stacks;
pub mod tracefile;
pub mod units;

use std::io;

/// Every error a command can end with. `main` prints it with its causes and hints.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Perf(#[from] perf::Error),
    #[error(transparent)]
    Bpf(#[from] bpf::Error),
    #[error(transparent)]
    Kernel(#[from] kernel::Error),
    /// Bad input: exit status 2.
    #[error("{message}")]
    Usage { message: String, hints: Vec<String> },
    /// The command after `--` cannot be executed (found before anything is attached): exit
    /// status 127 when it is not found, 126 when it is found but cannot run, the shell's
    /// codes (CONTRIBUTING.md), which scripts test for. `tracer stat` keeps perf stat's 255.
    #[error("{message}")]
    Exec {
        message: String,
        hints: Vec<String>,
        errno: i32,
    },
    /// A runtime failure that is not one of the above.
    #[error("{message}")]
    Runtime { message: String, hints: Vec<String> },
    /// A write to standard output, or to a file (an [`output::NamedFile`] names it).
    #[error("cannot write {}", output::failed_place(.0))]
    Output(#[source] io::Error),
}

impl Error {
    pub fn usage(message: impl Into<String>, hints: Vec<String>) -> Error {
        Error::Usage {
            message: message.into(),
            hints,
        }
    }

    /// [`Error::usage`] with its hints as words, the form the plans' checks write them in
    /// (`&["add -a"]`, `&[]`): the one shorthand, where each plan had its own.
    pub fn usage_hints(message: impl Into<String>, hints: &[&str]) -> Error {
        Error::usage(message, hints.iter().map(|h| h.to_string()).collect())
    }

    /// Concrete next steps for the user.
    pub fn hints(&self) -> Vec<String> {
        match self {
            Error::Perf(e) => e.hints(),
            Error::Bpf(e) => e.hints(),
            Error::Kernel(e) => e.hints(),
            Error::Usage { hints, .. }
            | Error::Runtime { hints, .. }
            | Error::Exec { hints, .. } => hints.clone(),
            Error::Output(e) if e.kind() == io::ErrorKind::StorageFull => {
                vec![format!(
                    "the file system holding {} is full: free space, or write elsewhere",
                    output::failed_place(e)
                )]
            }
            Error::Output(_) => Vec::new(),
        }
    }

    /// The process exit status for this error (CONTRIBUTING.md: 1 runtime, 2 usage; a closed pipe
    /// is a normal end).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage { .. } => 2,
            Error::Kernel(e) if e.is_usage() => 2,
            Error::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
            Error::Exec { errno, .. } if *errno == libc::ENOENT => 127,
            Error::Exec { .. } => 126,
            _ => 1,
        }
    }
}

/// An error and its causes on one line: `cannot open x: No such file or directory`.
pub fn describe(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
