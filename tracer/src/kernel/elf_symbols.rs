//! The symbols of one ELF file (with its separate debug file's), sorted by address, their
//! names in one string.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

use super::symbols::{hex, parse};
use super::Error;

/// A symbol of an ELF file, at its link-time address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    pub name: &'a str,
    pub addr: u64,
    pub size: u64,
    pub code: bool,
}

/// A symbol as [`ElfSymbols`] keeps it: its name is a span of the file's one string of names
/// (the high bit of `len` says code). A String per symbol cost 230 bytes a symbol where
/// compilers' libraries have 300,000 (a profile of a machine building Rust held 220 MB of
/// rustc's and LLVM's symbols); this costs 24 and the name's bytes.
#[derive(Clone, Copy, Debug)]
struct Kept {
    addr: u64,
    size: u64,
    name_at: u32,
    len: u32,
}

const CODE_BIT: u32 = 1 << 31;

/// The symbols and the lowest loadable address of one ELF file.
#[derive(Clone, Debug, Default)]
pub struct ElfSymbols {
    /// Sorted by address.
    symbols: Vec<Kept>,
    names: Box<str>,
    /// The page-aligned p_vaddr of the first PT_LOAD: what the file's offset-0 mapping maps.
    pub(super) base: u64,
    /// The GNU build-id note, as hex.
    pub build_id: Option<String>,
    /// The file's separate debug info (see [`debug_file`]): its full symbol table was read
    /// too, and its DWARF gives the lines.
    pub debug: Option<PathBuf>,
}

/// The text and data symbols of `file` (its symbol table and its dynamic one), each with how
/// good a name it is for its address (see [`name_rank`]).
fn symbols_of<'a>(file: &'a object::File) -> impl Iterator<Item = (u8, Symbol<'a>)> + 'a {
    (file.symbols().chain(file.dynamic_symbols()))
        .filter(|s| s.address() != 0 && matches!(s.kind(), SymbolKind::Text | SymbolKind::Data))
        .filter_map(|s| {
            let name = s.name().ok()?;
            Some((
                name_rank(name, s.is_global() && !s.is_weak()),
                Symbol {
                    name,
                    addr: s.address(),
                    size: s.size(),
                    code: s.kind() == SymbolKind::Text,
                },
            ))
        })
}

/// Of the names one address has (libc's debug symbols give `clock_gettime`,
/// `clock_gettime@GLIBC_2.2.5`, `__clock_gettime` and `__GI___clock_gettime` to one function),
/// the one a frame shows ranks highest, as perf chooses: an unversioned name over a versioned
/// one, a global over a weak or local one, fewer leading underscores.
fn name_rank(name: &str, global: bool) -> u8 {
    let underscores = name.len() - name.trim_start_matches('_').len();
    (u8::from(!name.contains('@')) << 5)
        | (u8::from(global) << 4)
        | (15 - underscores.min(15) as u8)
}

impl ElfSymbols {
    /// The symbols of the file at `path`, with those of its separate debug file when it has
    /// one (a stripped binary keeps only its dynamic symbols: its own functions are named
    /// from the debug file's table).
    pub fn load(path: &Path) -> Result<ElfSymbols, Error> {
        ElfSymbols::load_named(path, path)
    }

    /// [`ElfSymbols::load`] of a file read at `path` (`/proc/PID/map_files/...`) but known
    /// by `named`, beside which a `.gnu_debuglink` is looked for.
    pub fn load_named(path: &Path, named: &Path) -> Result<ElfSymbols, Error> {
        let data = super::file::map(path)?;
        ElfSymbols::parse(path, &data, Some(named))
    }

    /// The symbols of the ELF image `data` (read from `path`), and with `named` those of its
    /// separate debug file.
    pub(super) fn parse(
        path: &Path,
        data: &[u8],
        named: Option<&Path>,
    ) -> Result<ElfSymbols, Error> {
        let file = parse(path, data)?;
        // The debug file is mapped only while it is read: its names are copied into one
        // string. The file's own are borrowed from its mapping until the arena is built.
        let mut debug_names = String::new();
        let mut debug_symbols: Vec<(u8, std::ops::Range<usize>, Symbol<'static>)> = Vec::new();
        let debug = named
            .and_then(|named| {
                super::debug_file::in_debug_file(named, &file, |debug| {
                    for (rank, s) in symbols_of(debug) {
                        let at = debug_names.len();
                        debug_names.push_str(s.name);
                        let name = at..debug_names.len();
                        debug_symbols.push((rank, name, Symbol { name: "", ..s }));
                    }
                })
            })
            .map(|(path, ())| path);
        let mut ranked: Vec<(u8, Symbol)> = symbols_of(&file).collect();
        ranked.extend((debug_symbols.into_iter()).map(|(rank, name, s)| {
            let name = &debug_names[name];
            (rank, Symbol { name, ..s })
        }));
        // By address, and at one address the best name last: `containing` takes the last.
        ranked.sort_by(|(ra, a), (rb, b)| (a.addr, ra, a.name).cmp(&(b.addr, rb, b.name)));
        ranked.dedup_by(|(_, a), (_, b)| a.addr == b.addr && a.name == b.name);
        let mut names = String::with_capacity(ranked.iter().map(|(_, s)| s.name.len()).sum());
        let symbols = (ranked.into_iter())
            .filter_map(|(_, s)| {
                let name_at = u32::try_from(names.len()).ok()?;
                let len = u32::try_from(s.name.len())
                    .ok()
                    .filter(|l| l & CODE_BIT == 0)?;
                names.push_str(s.name);
                let code = if s.code { CODE_BIT } else { 0 };
                Some(Kept {
                    addr: s.addr,
                    size: s.size,
                    name_at,
                    len: len | code,
                })
            })
            .collect();
        let base = file.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
        let build_id = file.build_id().ok().flatten().map(hex);
        Ok(ElfSymbols {
            symbols,
            names: names.into_boxed_str(),
            base,
            build_id,
            debug,
        })
    }

    fn symbol(&self, kept: &Kept) -> Symbol<'_> {
        let at = kept.name_at as usize;
        Symbol {
            name: &self.names[at..at + (kept.len & !CODE_BIT) as usize],
            addr: kept.addr,
            size: kept.size,
            code: kept.len & CODE_BIT != 0,
        }
    }

    fn all(&self) -> impl Iterator<Item = Symbol<'_>> {
        self.symbols.iter().map(|kept| self.symbol(kept))
    }

    pub fn find(&self, name: &str) -> Option<Symbol<'_>> {
        self.all().find(|s| s.name == name)
    }

    /// The symbol containing link-time address `addr`, and the offset into it.
    pub fn containing(&self, addr: u64) -> Option<(Symbol<'_>, u64)> {
        let index = self
            .symbols
            .partition_point(|s| s.addr <= addr)
            .checked_sub(1)?;
        let symbol = self.symbol(&self.symbols[index]);
        let offset = addr - symbol.addr;
        // Symbols without a size (hand-written assembly) still name what follows them.
        (symbol.size == 0 || offset < symbol.size).then_some((symbol, offset))
    }

    pub fn names(&self, code: bool) -> impl Iterator<Item = &str> {
        self.all().filter(move |s| s.code == code).map(|s| s.name)
    }
}
