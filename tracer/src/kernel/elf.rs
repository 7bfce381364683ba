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
    let data = std::fs::read(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })?;
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

/// File offset of the ELF entry point of `path`.
pub fn entry_offset(path: &Path) -> Result<u64, Error> {
    let data = std::fs::read(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })?;
    let file = object::File::parse(&*data).map_err(|e| parse_error(path, e))?;
    vaddr_to_offset(&data, path, file.entry())
}
