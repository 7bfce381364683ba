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

/// The most a write to a pipe may hold and still be written whole, never interleaved with
/// another writer's (pipe(7): `PIPE_BUF`).
const PIPE_BUF: usize = libc::PIPE_BUF;

/// A stream that tracer shares with the command it runs (standard output and error), written
/// whole lines at a time, in writes of at most [`PIPE_BUF`] bytes: the kernel keeps such a
/// write to a pipe in one piece, so the command's output falls between tracer's lines, never
/// inside one (a buffer's 8 KiB write to a full pipe is split where the reader made room, and
/// the command's `vm` once landed in the middle of an event line). A line longer than
/// `PIPE_BUF` cannot be kept whole and goes in pieces; a line not yet ended waits for its end
/// or a flush.
pub struct WholeLines<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> WholeLines<W> {
    pub fn new(inner: W) -> Self {
        WholeLines {
            inner,
            pending: Vec::with_capacity(2 * PIPE_BUF),
        }
    }

    /// Writes the pending whole lines (and, at `end`, the rest) in writes of whole lines of
    /// at most `PIPE_BUF` bytes.
    fn write_pending(&mut self, end: bool) -> io::Result<()> {
        let mut start = 0;
        while start < self.pending.len() {
            let rest = &self.pending[start..];
            let window = &rest[..rest.len().min(PIPE_BUF)];
            let take = match window.iter().rposition(|&b| b == b'\n') {
                Some(newline) => newline + 1,
                None if rest.len() > PIPE_BUF || end => window.len(),
                None => break,
            };
            let written = self.inner.write(&rest[..take]);
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => start += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pending.drain(..start);
                    return Err(e);
                }
            }
        }
        self.pending.drain(..start);
        Ok(())
    }
}

impl<W: Write> Write for WholeLines<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(data);
        if data.contains(&b'\n') || self.pending.len() > PIPE_BUF {
            self.write_pending(false)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for WholeLines<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Standard output as tracer writes its lines there ([`WholeLines`]).
pub fn stdout_lines() -> WholeLines<io::Stdout> {
    WholeLines::new(io::stdout())
}

/// Standard error as tracer writes its lines there ([`WholeLines`]).
pub fn stderr_lines() -> WholeLines<io::Stderr> {
    WholeLines::new(io::stderr())
}

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
        None => Box::new(stdout_lines()),
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

    /// Each write a writer was given.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            // A pipe: a write of up to PIPE_BUF bytes is whole; a longer one may be cut
            // where the reader made room, and the rest comes in the next.
            let n = match data.len() <= PIPE_BUF {
                true => data.len(),
                false => PIPE_BUF / 2,
            };
            self.0.push(data[..n].to_vec());
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn shared_streams_are_written_whole_lines_at_a_time() {
        let line = |k: usize| format!("{k:>6} {}\n", "x".repeat(90 + k % 50));
        let text: String = (0..500).map(line).collect();
        let mut out = WholeLines::new(Writes::default());
        // Through a buffer that cuts lines anywhere, as the commands' outputs do.
        for piece in text.as_bytes().chunks(8192) {
            out.write_all(piece).unwrap();
        }
        let long = format!("{}\n", "y".repeat(2 * PIPE_BUF + 10));
        out.write_all(long.as_bytes()).unwrap();
        out.write_all(b"unended").unwrap();
        let before_flush = out.inner.0.len();
        out.flush().unwrap();
        let writes = std::mem::take(&mut out.inner.0);
        assert_eq!(
            writes.concat(),
            [text.as_bytes(), long.as_bytes(), b"unended"].concat()
        );
        // Every write of the short lines is whole lines, within PIPE_BUF.
        let short: Vec<&Vec<u8>> = writes.iter().take_while(|w| w[0] != b'y').collect();
        assert!(short.len() > 500 * 100 / PIPE_BUF, "{}", short.len());
        for w in &short {
            assert!(w.len() <= PIPE_BUF && w.ends_with(b"\n"), "{}", w.len());
        }
        // The unended line waited for the flush.
        assert_eq!(writes[before_flush..], [b"unended".to_vec()]);
    }

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
