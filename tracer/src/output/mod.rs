//! Rendering: data model in, text or JSON out. Data goes to stdout, banners to stderr.

pub mod counts;
pub mod events;
pub mod features;
pub mod hist;
pub mod json;
pub mod latency;
pub mod list;
pub mod metrics;
pub mod notes;
pub mod perfetto;
pub mod pprof;
pub mod profile;
pub mod report;
pub mod stack;
pub mod stat;
pub mod structs;
pub mod summary;
pub mod syscall;
pub mod timeline;
pub mod trace;
pub mod watch;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// A file tracer writes its output to: a failed write names it (`cannot write t.tracer: No
/// space left on device`), however many writers it passes through on its way to `main`.
pub struct NamedFile {
    file: std::fs::File,
    path: PathBuf,
}

impl NamedFile {
    pub fn new(file: std::fs::File, path: &Path) -> NamedFile {
        NamedFile {
            file,
            path: path.to_path_buf(),
        }
    }

    fn named(&self, source: io::Error) -> io::Error {
        io::Error::new(
            source.kind(),
            FileError {
                path: self.path.clone(),
                source,
            },
        )
    }
}

impl Write for NamedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf).map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|e| self.named(e))
    }
}

/// The payload of a [`NamedFile`]'s write error: which file, and the system's error. It
/// displays as the system's error alone (the file goes into [`Error::Output`]'s message).
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    pub source: io::Error,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for FileError {}

/// Where a failed write went: the file it names, if it came from a [`NamedFile`], else
/// standard output.
pub fn failed_place(e: &io::Error) -> String {
    let named = e.get_ref().and_then(|e| e.downcast_ref::<FileError>());
    named.map_or("standard output".into(), |n| n.path.display().to_string())
}

/// A command's data output: a buffer in front of the file or standard output. The buffer is
/// the outer layer, so the many small writes of an event line are plain copies and only a
/// full buffer goes through the dynamic call (the other way round, each fragment was one:
/// +140 ns of CPU per streamed JSON event, enough to lose events to a slow pipe).
pub type Output = io::BufWriter<Box<dyn Write>>;

/// `-o -`: standard output, in every command (as `tracer record -o -` and `tracer report -`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Where a command's data goes: `-o FILE` (created, or truncated) or standard output (no
/// `-o`, or `-o -`), buffered.
pub fn destination(file: Option<&Path>) -> Result<Output, Error> {
    let inner: Box<dyn Write> = match file.filter(|path| !is_stdout(path)) {
        Some(path) => {
            let created = std::fs::File::create(path).map_err(|e| Error::Runtime {
                message: format!("cannot create {}: {e}", path.display()),
                hints: vec!["check that the directory exists and is writable".into()],
            })?;
            Box::new(NamedFile::new(created, path))
        }
        None => Box::new(std::io::stdout().lock()),
    };
    Ok(io::BufWriter::new(inner))
}

/// Writes `text` to stdout; a closed pipe becomes an [`Error::Output`] that exits 0.
pub fn write_stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Output)
}
