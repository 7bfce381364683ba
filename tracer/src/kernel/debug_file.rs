//! Where a file's separate debug info is, as gdb and perf look for it: installed (by
//! build-id, by `.gnu_debuglink`), else from a debuginfod server (kernel/debuginfod.rs).

use std::path::{Path, PathBuf};

use object::Object;

use super::symbols::{hex, parse};

/// Where distributions keep separate debug info (Debian's -dbg and -dbgsym packages).
const DEBUG_ROOT: &str = "/usr/lib/debug";

/// The separate debug file of `file` (mapped as `named`) when `file` has no DWARF of its own,
/// searched where gdb and perf search: by build-id under /usr/lib/debug/.build-id/, else by
/// its `.gnu_debuglink` name beside `named`, in `.debug/` beside it, and under /usr/lib/debug
/// with `named`'s directory, else from the debuginfod servers of `DEBUGINFOD_URLS`. A
/// candidate with another build-id than `file` belongs to another build and is passed over
/// (that check stands for the link's CRC, which is not computed).
/// The file is returned mapped, with its path.
fn debug_file(named: &Path, file: &object::File) -> Option<(PathBuf, super::file::Mapped)> {
    if file.section_by_name(".debug_info").is_some() {
        return None;
    }
    let build_id = file.build_id().ok().flatten().filter(|id| id.len() >= 2);
    let by_id = build_id
        .map(hex)
        .map(|id| Path::new(DEBUG_ROOT).join(format!(".build-id/{}/{}.debug", &id[..2], &id[2..])));
    let linked = || -> Option<Vec<PathBuf>> {
        let (link, _crc) = file.gnu_debuglink().ok().flatten()?;
        let link = Path::new(std::str::from_utf8(link).ok()?);
        let dir = named.parent()?;
        let under_root = Path::new(DEBUG_ROOT).join(dir.strip_prefix("/").ok()?);
        Some(vec![
            dir.join(link),
            dir.join(".debug").join(link),
            under_root.join(link),
        ])
    };
    // Last, a debuginfod server's (kernel/debuginfod.rs), as gdb and perf look there last.
    let fetched = || {
        let id = build_id.map(hex)?;
        super::debuginfod::debug_file(named, &id)
    };
    let candidates = match by_id.filter(|p| p.is_file()) {
        Some(path) => vec![path],
        None => linked().unwrap_or_default(),
    };
    let found = |path: PathBuf| {
        if path == named {
            return None;
        }
        let data = super::file::map(&path).ok()?;
        let theirs = parse(&path, &data).ok()?.build_id().ok().flatten();
        (build_id.is_none() || theirs.is_none() || theirs == build_id).then_some((path, data))
    };
    (candidates.into_iter().find_map(found)).or_else(|| fetched().and_then(found))
}

/// `read` applied to the separate debug file of `file` (see [`debug_file`]) when it has one
/// that parses, with its path.
pub fn in_debug_file<T>(
    named: &Path,
    file: &object::File,
    read: impl FnOnce(&object::File) -> T,
) -> Option<(PathBuf, T)> {
    let (debug, data) = debug_file(named, file)?;
    let value = read(&parse(&debug, &data).ok()?);
    Some((debug, value))
}
