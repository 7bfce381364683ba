//! ELF lookups for uprobes: symbol and virtual address to file offset (the uprobe PMU's
//! `probe_offset` is a file offset, not an address).

use std::path::Path;

use object::{Object, ObjectSegment, ObjectSymbol};

use super::Error;

fn parse_error(path: &Path, reason: impl ToString) -> Error {
    Error::Parse {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// File offset of virtual address `vaddr` in `path`: the PT_LOAD segment holding it maps
/// `vaddr - segment.vaddr + segment.file_offset`. Works the same for PIE, non-PIE and shared
/// objects, because both sides are link-time addresses.
pub fn vaddr_to_offset(data: &[u8], path: &Path, vaddr: u64) -> Result<u64, Error> {
    let file = object::File::parse(data).map_err(|e| parse_error(path, e))?;
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        if vaddr >= segment.address() && vaddr < segment.address() + size {
            return Ok(vaddr - segment.address() + offset);
        }
    }
    Err(parse_error(
        path,
        format!("address {vaddr:#x} is in no loaded segment"),
    ))
}

/// File offset of `symbol` (from .symtab, else .dynsym) in the ELF file at `path`.
pub fn symbol_offset(path: &Path, symbol: &str) -> Result<u64, Error> {
    let data = super::file::map(path)?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    let address = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(symbol) && s.address() != 0)
        .map(|s| s.address())
        .ok_or_else(|| Error::NoSymbol {
            path: path.display().to_string(),
            symbol: symbol.to_string(),
        })?;
    vaddr_to_offset(&data, path, address)
}

/// Finds the ELF file a uprobe names: a path (contains `/`), a program on `PATH`, or a library
/// name such as `libc` or `libc.so.6` in the usual library directories.
pub fn resolve_file(file: &str) -> Result<std::path::PathBuf, Error> {
    let not_found = || Error::NoFile {
        file: file.to_string(),
    };
    if file.contains('/') {
        let path = Path::new(file);
        return std::fs::canonicalize(path).map_err(|_| not_found());
    }
    let path_dirs = std::env::var("PATH").unwrap_or_default();
    for dir in path_dirs.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(file);
        if candidate.is_file() {
            return std::fs::canonicalize(candidate).map_err(|_| not_found());
        }
    }
    let lib_dirs = [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
        "/usr/local/lib",
    ];
    let stem = if file.starts_with("lib") {
        file.to_string()
    } else {
        format!("lib{file}")
    };
    for dir in lib_dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut matches: Vec<_> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name == file || name.starts_with(&format!("{stem}.so")))
            .collect();
        // Prefer the versioned runtime name (libc.so.6) over the linker script (libc.so).
        matches.sort_by_key(|n| (n == &format!("{stem}.so"), n.len()));
        if let Some(name) = matches.first() {
            return std::fs::canonicalize(Path::new(dir).join(name)).map_err(|_| not_found());
        }
    }
    Err(not_found())
}

/// Function symbols of an ELF file (`.symtab` and `.dynsym`), sorted and deduplicated.
pub fn function_symbols(path: &Path) -> Result<Vec<String>, Error> {
    let data = super::file::map(path)?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    let mut names: Vec<String> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// File offset of the ELF entry point of `path`.
pub fn entry_offset(path: &Path) -> Result<u64, Error> {
    let data = super::file::map(path)?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    vaddr_to_offset(&data, path, file.entry())
}
