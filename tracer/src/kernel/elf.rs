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

/// The PT_LOAD segment holding `vaddr` (in memory: `.bss` too): the file offset of `vaddr`
/// when its bytes are in the file, and the segment's `p_flags`.
fn segment_of(file: &object::File<'_>, vaddr: u64) -> Option<(Option<u64>, u32)> {
    file.segments().find_map(|segment| {
        let (offset, file_size) = segment.file_range();
        let start = segment.address();
        let flags = match segment.flags() {
            object::SegmentFlags::Elf { p_flags } => p_flags,
            _ => 0,
        };
        let at = vaddr.checked_sub(start)?;
        (at < segment.size().max(file_size)).then(|| ((at < file_size).then(|| at + offset), flags))
    })
}

/// File offset of code at virtual address `vaddr` in `path`, for a uprobe: the PT_LOAD segment
/// holding it maps `vaddr - segment.vaddr + segment.file_offset` (the same for PIE, non-PIE and
/// shared objects, because both sides are link-time addresses), and it must be executable (a uprobe elsewhere is accepted by the kernel and
/// never fires, or fails when the file is mapped).
pub fn code_offset(data: &[u8], path: &Path, vaddr: u64) -> Result<u64, Error> {
    let file = object::File::parse(data).map_err(|e| parse_error(path, e))?;
    let not_code = |why: String| Error::NotCode {
        path: path.display().to_string(),
        vaddr,
        why,
    };
    match segment_of(&file, vaddr) {
        Some((Some(offset), flags)) if flags & object::elf::PF_X != 0 => Ok(offset),
        Some((None, flags)) if flags & object::elf::PF_X != 0 => Err(not_code(
            "it is past its segment's bytes in the file".into(),
        )),
        Some((_, flags)) => {
            let perm = |bit, c| if flags & bit != 0 { c } else { '-' };
            Err(not_code(format!(
                "its segment is {}{}{}, not executable",
                perm(object::elf::PF_R, 'r'),
                perm(object::elf::PF_W, 'w'),
                perm(object::elf::PF_X, 'x'),
            )))
        }
        None => Err(not_code("it is in no loaded segment".into())),
    }
}

/// File offset of data at virtual address `vaddr` in `path` (a USDT semaphore: the uprobe
/// PMU's `ref_ctr_offset` is a file offset too); its bytes must be in the file.
pub fn data_offset(data: &[u8], path: &Path, vaddr: u64) -> Result<u64, Error> {
    let file = object::File::parse(data).map_err(|e| parse_error(path, e))?;
    match segment_of(&file, vaddr) {
        Some((Some(offset), _)) => Ok(offset),
        _ => Err(parse_error(
            path,
            format!("{vaddr:#x} is in no loaded segment's bytes"),
        )),
    }
}

/// Link-time address of `symbol` (from .symtab, else .dynsym, else the symbol table of the
/// file's separate debug info: a stripped program's own functions) in the ELF file `data`.
pub fn symbol_address(data: &[u8], path: &Path, symbol: &str) -> Result<u64, Error> {
    let file = object::File::parse(data).map_err(|e| parse_error(path, e))?;
    let find = |file: &object::File| {
        (file.symbols().chain(file.dynamic_symbols()))
            .find(|s| s.name() == Ok(symbol) && s.address() != 0)
            .map(|s| s.address())
    };
    find(&file)
        .or_else(|| super::debug_file::in_debug_file(path, &file, find)?.1)
        .ok_or_else(|| Error::NoSymbol {
            path: path.display().to_string(),
            symbol: symbol.to_string(),
        })
}

/// File offset of the code of `symbol` (from .symtab, else .dynsym) in the ELF file at `path`.
pub fn symbol_offset(path: &Path, symbol: &str) -> Result<u64, Error> {
    let data = super::file::map(path)?;
    let address = symbol_address(&data, path, symbol)?;
    code_offset(&data, path, address)
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

/// Function symbols of an ELF file (`.symtab` and `.dynsym`, and its separate debug info's
/// `.symtab`), sorted and deduplicated.
pub fn function_symbols(path: &Path) -> Result<Vec<String>, Error> {
    let data = super::file::map(path)?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    let functions = |file: &object::File| -> Vec<String> {
        (file.symbols().chain(file.dynamic_symbols()))
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect()
    };
    let mut names = functions(&file);
    if let Some((_, more)) = super::debug_file::in_debug_file(path, &file, functions) {
        names.extend(more);
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Whether `path` is stripped (no symbol table) and no separate debug file of it was found
/// (kernel/symbols.rs, `debug_file`): only its exported functions have names.
pub fn stripped_without_debug(path: &Path) -> bool {
    let Ok(data) = super::file::map(path) else {
        return false;
    };
    let Ok(file) = object::File::parse(&*data) else {
        return false;
    };
    file.section_by_name(".symtab").is_none()
        && super::debug_file::in_debug_file(path, &file, |_| ()).is_none()
}

/// File offset of the ELF entry point of `path`.
pub fn entry_offset(path: &Path) -> Result<u64, Error> {
    let data = super::file::map(path)?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    code_offset(&data, path, file.entry())
}
