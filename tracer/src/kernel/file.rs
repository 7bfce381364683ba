//! Files a user names as input (programs, libraries, their debug info): refused unless they are
//! regular files, then memory-mapped rather than read whole, so that naming a device, a FIFO
//! or a huge file costs tracer no memory and never blocks.
#![allow(unsafe_code)]

use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use super::Error;

/// What a file that is not a regular file is, in words (`None` for a regular file).
pub fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

fn read_error(path: &Path, source: std::io::Error) -> Error {
    Error::Read {
        path: path.display().to_string(),
        source,
    }
}

fn refuse(path: &Path, kind: std::fs::FileType) -> Result<(), Error> {
    match not_regular(kind) {
        None => Ok(()),
        Some(what) => Err(Error::NotAFile {
            path: path.display().to_string(),
            what,
        }),
    }
}

/// The bytes of a regular file, mapped read-only (an empty file maps nothing), or an image
/// read from memory ([`Mapped::of_bytes`]: the vDSO, which is no file).
pub struct Mapped {
    map: Option<memmap2::Mmap>,
    bytes: Vec<u8>,
}

impl Mapped {
    /// Bytes read, not mapped, read as a file's would be.
    pub fn of_bytes(bytes: Vec<u8>) -> Mapped {
        Mapped { map: None, bytes }
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&self.bytes)
    }
}

/// Maps the regular file at `path`; anything else (a device such as `/dev/zero`, a FIFO, a
/// directory) is refused with [`Error::NotAFile`] before it is opened: opening a FIFO would
/// block, and reading a device may never end.
pub fn map(path: &Path) -> Result<Mapped, Error> {
    let meta = std::fs::metadata(path).map_err(|e| read_error(path, e))?;
    refuse(path, meta.file_type())?;
    // O_NONBLOCK: should the path have become a FIFO since the check, the open returns
    // instead of waiting for a writer (and the check of the open file refuses it).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| read_error(path, e))?;
    let meta = file.metadata().map_err(|e| read_error(path, e))?;
    refuse(path, meta.file_type())?;
    if meta.len() == 0 {
        return Ok(Mapped::of_bytes(Vec::new()));
    }
    // SAFETY: a read-only shared mapping of a regular file, kept alive by `Mapped` for as long
    // as its bytes are borrowed. memmap2 requires that the file not change while mapped: a
    // write would change bytes behind the `&[u8]`, a truncation would fault (SIGBUS) on the
    // lost pages. tracer maps programs and libraries in place, as perf, gdb and addr2line's
    // own loader do; they are replaced by rename (package managers, linkers), which leaves
    // this mapping on the old inode untouched.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| read_error(path, e))?;
    Ok(Mapped {
        map: Some(map),
        bytes: Vec::new(),
    })
}

/// Checks that `path` is a regular file without opening it.
pub fn check_regular(path: &Path) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| read_error(path, e))?;
    refuse(path, meta.file_type())
}

/// Whether `path` is on overlayfs, where `stat` gives the overlay's device while the kernel's
/// maps and mmap records give the device of the layer the file lives on (its inode number is
/// the layer's, unless overlayfs was mounted with `xino`).
pub fn on_overlayfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `path` is NUL-terminated and `fs` is a writable statfs the call fills.
    let rc = unsafe { libc::statfs(path.as_ptr(), fs.as_mut_ptr()) };
    // SAFETY: statfs filled the struct when it returned 0.
    rc == 0 && unsafe { fs.assume_init() }.f_type == libc::OVERLAYFS_SUPER_MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_maps_and_the_rest_is_refused_unopened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"\x7fELF").unwrap();
        assert_eq!(&*map(&file).unwrap(), b"\x7fELF");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(map(&empty).unwrap().is_empty());
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, what) in [
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
            // Opening it would block until a writer came: it is refused from its metadata.
            (fifo.as_path(), "a FIFO"),
        ] {
            let err = map(path).err().expect("refused");
            assert_eq!(
                err.to_string(),
                format!("{} is {what}, not a regular file", path.display())
            );
            assert!(check_regular(path).is_err());
        }
        assert!(matches!(
            map(&dir.path().join("absent")),
            Err(Error::Read { .. })
        ));
    }
}
