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
#[derive(Debug)]
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
/// full buffer goes through the dynamic call (the other way round, each fragment was one,
/// enough to lose events to a slow pipe:
/// docs/benchmarks.md, "Figures the code cites", `output-buffer-outside`).
pub type Output = io::BufWriter<Box<dyn Write>>;

/// `-o -`: standard output, in every command (as `tracer record -o -` and `tracer report -`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How [`create`] opens a file that exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Emptied (`-o FILE` of every command).
    Truncate,
    /// Written after (`tracer stat --append`).
    Append,
    /// Renamed to `FILE.old` first, as perf record keeps perf.data.old (a recording).
    KeepOld,
}

/// Opens an output file, the one way every command does (`-o`, `--perfetto`, `stat
/// --output`, `stat record -o`, recordings, man pages): created if missing, its failed
/// writes naming it ([`NamedFile`]), a refused open said with the file and a hint.
pub fn create(path: &Path, existing: Existing) -> Result<NamedFile, Error> {
    if existing == Existing::KeepOld && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        let mut old = path.as_os_str().to_owned();
        old.push(".old");
        let _ = std::fs::rename(path, &old);
    }
    let append = existing == Existing::Append;
    let file = (std::fs::OpenOptions::new().create(true).write(true))
        .append(append)
        .truncate(!append)
        .open(path)
        .map_err(|e| Error::Runtime {
            message: match append {
                true => format!("cannot append to {}: {e}", path.display()),
                false => format!("cannot create {}: {e}", path.display()),
            },
            hints: vec!["check that the directory exists and is writable".into()],
        })?;
    Ok(NamedFile::new(file, path))
}

/// Writes a whole output file at once (truncated first), through [`create`]: a failed write
/// says `cannot write FILE: ...` as every other.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file = create(path, Existing::Truncate)?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(Error::Output)
}

/// Where a command's data goes: `-o FILE` (created, or truncated) or standard output (no
/// `-o`, or `-o -`), buffered.
pub fn destination(file: Option<&Path>) -> Result<Output, Error> {
    let inner: Box<dyn Write> = match file.filter(|path| !is_stdout(path)) {
        Some(path) => Box::new(create(path, Existing::Truncate)?),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_files_are_truncated_appended_to_or_kept_as_old() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        write_file(&path, b"first\n").unwrap();
        write_file(&path, b"second\n").unwrap();
        assert_eq!(read(&path), "second\n");
        let mut appended = create(&path, Existing::Append).unwrap();
        appended.write_all(b"third\n").unwrap();
        assert_eq!(read(&path), "second\nthird\n");
        let mut kept = create(&path, Existing::KeepOld).unwrap();
        kept.write_all(b"fourth\n").unwrap();
        assert_eq!(read(&path), "fourth\n");
        assert_eq!(read(&dir.path().join("out.old")), "second\nthird\n");
        let missing = dir.path().join("no/such/dir/out");
        match create(&missing, Existing::Truncate) {
            Err(Error::Runtime { message, hints }) => {
                assert_eq!(
                    message,
                    format!(
                        "cannot create {}: No such file or directory (os error 2)",
                        missing.display()
                    )
                );
                assert_eq!(hints, ["check that the directory exists and is writable"]);
            }
            other => panic!("{other:?}"),
        }
        match write_file(Path::new("/dev/full"), b"x") {
            Err(e @ Error::Output(_)) => {
                assert!(e.to_string().starts_with("cannot write /dev/full"))
            }
            other => panic!("{other:?}"),
        }
    }
}
