//! The source line of an address, from its file's DWARF, read one compilation unit at a time.
//!
//! A distribution's debug file is compressed: Debian's libc6-dbg holds 9.5 MiB of DWARF in
//! 3.7. addr2line's loader inflates every section and parses every unit's abbreviations before
//! its first lookup: most of a DWARF profile's CPU, for the lines of a handful of libc frames
//! (docs/benchmarks.md, "Figures the code cites", `lines-by-unit`). Here `.debug_aranges` says
//! which unit holds an address, and only that unit is read: the calls inlined into its
//! functions, and its line program. `.debug_info`, the largest section, is inflated only as far
//! as the units read reach. A file without `.debug_aranges` (clang's and rustc's do not write
//! it), or one that refers to a supplementary file (dwz's `.gnu_debugaltlink`), keeps
//! addr2line's loader.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use addr2line::gimli::{self, EndianSlice, Reader as _, RunTimeEndian, SectionId};
use object::{Object, ObjectSection};

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// The most one debug section may inflate to: a corrupt or hostile header may claim more.
const MAX_INFLATED: u64 = 1 << 30;

/// Inflated at a time, at least, when a unit past what was inflated is read.
const INFLATE_STEP: usize = 64 << 10;

/// The sections a unit's lines and inlined calls are read from, besides `.debug_info`.
const SECTIONS: [SectionId; 9] = {
    use SectionId::*;
    [
        DebugAbbrev,
        DebugLine,
        DebugLineStr,
        DebugStr,
        DebugStrOffsets,
        DebugAddr,
        DebugRanges,
        DebugRngLists,
        DebugAranges,
    ]
};

/// A file's source lines.
pub struct Lines(Inner);

enum Inner {
    ByUnit(ByUnit),
    Whole(Box<addr2line::Loader>),
}

impl Lines {
    /// The lines of the ELF file at `path`, `None` when it has no DWARF or cannot be read.
    pub fn open(path: &Path) -> Option<Lines> {
        match ByUnit::open(path) {
            Opened::ByUnit(lines) => Some(Lines(Inner::ByUnit(lines))),
            Opened::NoDwarf => None,
            Opened::Whole => addr2line::Loader::new(path)
                .ok()
                .map(|l| Lines(Inner::Whole(Box::new(l)))),
        }
    }

    /// The file name (without its directory) and line of the code at `addr` (a file address).
    /// Code inlined into a function is placed at its outermost call, so the line belongs to
    /// the function the symbol table names.
    pub fn location(&self, addr: u64) -> Option<(String, u32)> {
        match &self.0 {
            Inner::ByUnit(lines) => lines.location(addr),
            Inner::Whole(loader) => {
                let mut frames = loader.find_frames(addr).ok()?;
                let mut outermost = None;
                while let Ok(Some(frame)) = frames.next() {
                    if frame.location.is_some() {
                        outermost = frame.location;
                    }
                }
                let outermost = outermost?;
                Some((file_name(outermost.file?)?, outermost.line?))
            }
        }
    }

    /// Is this file read a unit at a time (see the module's comment)?
    #[cfg(test)]
    fn by_unit(&self) -> bool {
        matches!(self.0, Inner::ByUnit(_))
    }
}

/// A path's last component, as a `String`.
fn file_name(path: &str) -> Option<String> {
    Some(Path::new(path).file_name()?.to_string_lossy().into_owned())
}

enum Opened {
    ByUnit(ByUnit),
    /// No `.debug_info` or `.debug_line`: no lines to find.
    NoDwarf,
    /// To be read whole, by addr2line.
    Whole,
}

/// A file read a unit at a time.
struct ByUnit {
    data: super::file::Mapped,
    endian: RunTimeEndian,
    /// Address ranges and the offset in `.debug_info` of the unit each belongs to, by start.
    ranges: Vec<(u64, u64, usize)>,
    info: RefCell<Section>,
    /// [`SECTIONS`], in its order, inflated whole.
    rest: Vec<Section>,
    units: RefCell<HashMap<usize, Option<Rc<UnitLines>>>>,
}

impl ByUnit {
    fn open(path: &Path) -> Opened {
        let Ok(data) = super::file::map(path) else {
            return Opened::NoDwarf;
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Opened::NoDwarf;
        };
        let has = |name: &str| file.section_by_name(name).is_some();
        if !has(".debug_info") || !has(".debug_line") {
            return Opened::NoDwarf;
        }
        if !has(".debug_aranges") || has(".gnu_debugaltlink") {
            return Opened::Whole;
        }
        // A section compressed with zstd, or claiming to inflate past the bound, leaves the
        // file to addr2line (which inflates zstd).
        let section = |id: SectionId| match file.section_by_name(id.name()) {
            None => Some(Section::Absent),
            Some(s) => Section::new(s.compressed_file_range().ok()?),
        };
        let Some(info) = section(SectionId::DebugInfo) else {
            return Opened::Whole;
        };
        let mut rest = Vec::new();
        for id in SECTIONS {
            let Some(mut s) = section(id) else {
                return Opened::Whole;
            };
            if s.inflate(&data, usize::MAX).is_err() {
                return Opened::Whole;
            }
            rest.push(s);
        }
        let endian = match file.is_little_endian() {
            true => RunTimeEndian::Little,
            false => RunTimeEndian::Big,
        };
        drop(file);
        let mut lines = ByUnit {
            data,
            endian,
            ranges: Vec::new(),
            info: RefCell::new(info),
            rest,
            units: RefCell::default(),
        };
        match lines.read_aranges() {
            Ok(ranges) if !ranges.is_empty() => {
                lines.ranges = ranges;
                Opened::ByUnit(lines)
            }
            _ => Opened::Whole,
        }
    }

    fn bytes(&self, id: SectionId) -> &[u8] {
        match SECTIONS.iter().position(|&s| s == id) {
            Some(i) => self.rest[i].bytes(&self.data),
            None => &[],
        }
    }

    fn read_aranges(&self) -> Result<Vec<(u64, u64, usize)>, gimli::Error> {
        let section = EndianSlice::new(self.bytes(SectionId::DebugAranges), self.endian);
        let mut headers = gimli::DebugAranges::from(section).headers();
        let mut ranges = Vec::new();
        while let Some(header) = headers.next()? {
            let unit = header.debug_info_offset().0;
            let mut entries = header.entries();
            while let Some(entry) = entries.next()? {
                let range = entry.range();
                if range.begin < range.end {
                    ranges.push((range.begin, range.end, unit));
                }
            }
        }
        ranges.sort_unstable();
        Ok(ranges)
    }

    fn location(&self, addr: u64) -> Option<(String, u32)> {
        let i = self
            .ranges
            .partition_point(|r| r.0 <= addr)
            .checked_sub(1)?;
        let (_, end, unit) = self.ranges[i];
        if addr >= end {
            return None;
        }
        let known = self.units.borrow().get(&unit).cloned();
        let lines = match known {
            Some(lines) => lines,
            None => {
                let lines = self.read_unit(unit).ok().flatten().map(Rc::new);
                self.units.borrow_mut().insert(unit, lines.clone());
                lines
            }
        };
        lines?.location(addr)
    }

    /// Reads the unit at `offset` in `.debug_info`, inflating the section that far.
    fn read_unit(&self, offset: usize) -> Result<Option<UnitLines>, gimli::Error> {
        {
            let mut info = self.info.borrow_mut();
            // The unit's initial length, then the whole unit.
            info.inflate(&self.data, offset.saturating_add(12))?;
            let mut head = EndianSlice::new(info.bytes(&self.data), self.endian);
            head.skip(offset)?;
            let (length, format) = head.read_initial_length()?;
            let end = (offset + format.initial_length_size() as usize).saturating_add(length);
            info.inflate(&self.data, end)?;
        }
        let info = self.info.borrow();
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader<'_>, gimli::Error> {
            let bytes = match id {
                SectionId::DebugInfo => info.bytes(&self.data),
                _ => self.bytes(id),
            };
            Ok(EndianSlice::new(bytes, self.endian))
        })?;
        let header = dwarf
            .debug_info
            .header_from_offset(gimli::DebugInfoOffset(offset))?;
        if !matches!(header.type_(), gimli::UnitType::Compilation) {
            return Ok(None);
        }
        let unit = dwarf.unit(header)?;
        UnitLines::read(&dwarf, &unit).map(Some)
    }
}

/// A debug section: a part of the mapped file, or inflated from it as far as it was read.
enum Section {
    Absent,
    Plain(std::ops::Range<usize>),
    Inflating(Box<Inflating>),
}

struct Inflating {
    /// The compressed stream, in the mapped file.
    input: std::ops::Range<usize>,
    /// Of `input`, consumed.
    consumed: usize,
    out: Vec<u8>,
    /// What the section's header says it inflates to.
    size: usize,
    state: flate2::Decompress,
    ended: bool,
}

impl Section {
    fn new(range: object::CompressedFileRange) -> Option<Section> {
        let start = usize::try_from(range.offset).ok()?;
        let input = start..start.checked_add(usize::try_from(range.compressed_size).ok()?)?;
        Some(match range.format {
            object::CompressionFormat::None => Section::Plain(input),
            object::CompressionFormat::Zlib if range.uncompressed_size <= MAX_INFLATED => {
                Section::Inflating(Box::new(Inflating {
                    input,
                    consumed: 0,
                    out: Vec::new(),
                    size: range.uncompressed_size as usize,
                    state: flate2::Decompress::new(true),
                    ended: false,
                }))
            }
            _ => return None,
        })
    }

    fn bytes<'a>(&'a self, data: &'a [u8]) -> &'a [u8] {
        match self {
            Section::Absent => &[],
            Section::Plain(range) => data.get(range.clone()).unwrap_or(&[]),
            Section::Inflating(z) => &z.out,
        }
    }

    /// Inflates the section up to `end` bytes (or its end).
    fn inflate(&mut self, data: &[u8], end: usize) -> Result<(), gimli::Error> {
        let Section::Inflating(z) = self else {
            return Ok(());
        };
        let input = data
            .get(z.input.clone())
            .ok_or(gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(
                z.input.start as u64,
            )))?;
        let end = end.min(z.size);
        while z.out.len() < end && !z.ended {
            let from = z.out.len();
            z.out.resize(end.max(from + INFLATE_STEP).min(z.size), 0);
            let (read, wrote) = (z.state.total_in(), z.state.total_out());
            let status = (z.state)
                .decompress(
                    &input[z.consumed..],
                    &mut z.out[from..],
                    flate2::FlushDecompress::None,
                )
                .map_err(|_| gimli::Error::BadLength)?;
            let wrote = (z.state.total_out() - wrote) as usize;
            let read = (z.state.total_in() - read) as usize;
            z.consumed += read;
            z.out.truncate(from + wrote);
            // The stream's end, or no progress (its input ran out: a truncated file).
            z.ended = status == flate2::Status::StreamEnd || (wrote == 0 && read == 0);
        }
        Ok(())
    }
}

/// What one unit says of the lines of its code.
struct UnitLines {
    /// The calls inlined into the unit's functions themselves (not into other inlined code):
    /// start and end address, the call's file (an index into `files`) and line.
    calls: Vec<(u64, u64, u64, u32)>,
    /// The line program's rows by address: (address, file, line); `file` is `u64::MAX` at the
    /// end of a sequence (no line after it).
    rows: Vec<(u64, u64, u32)>,
    /// File names (without directories) by index.
    files: HashMap<u64, Rc<str>>,
}

/// The file of a row that ends a sequence.
const END: u64 = u64::MAX;

impl UnitLines {
    fn read(
        dwarf: &gimli::Dwarf<Reader<'_>>,
        unit: &gimli::Unit<Reader<'_>>,
    ) -> Result<Self, gimli::Error> {
        let mut calls = Vec::new();
        // The tags of the entry's ancestors, outermost first.
        let mut ancestors: Vec<gimli::DwTag> = Vec::new();
        let mut depth: isize = 0;
        let mut entries = unit.entries();
        while let Some((delta, entry)) = entries.next_dfs()? {
            depth += delta;
            ancestors.truncate(depth.max(0) as usize);
            let tag = entry.tag();
            let in_function = ancestors.iter().rev().find(|t| {
                matches!(
                    **t,
                    gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
                )
            });
            if tag == gimli::DW_TAG_inlined_subroutine
                && in_function == Some(&gimli::DW_TAG_subprogram)
            {
                let file = match entry.attr_value(gimli::DW_AT_call_file)? {
                    Some(gimli::AttributeValue::FileIndex(file)) => file,
                    _ => END,
                };
                let line = (entry.attr_value(gimli::DW_AT_call_line)?)
                    .and_then(|v| v.udata_value())
                    .unwrap_or(0) as u32;
                let mut ranges = dwarf.die_ranges(unit, entry)?;
                while let Some(range) = ranges.next()? {
                    if range.begin < range.end {
                        calls.push((range.begin, range.end, file, line));
                    }
                }
            }
            ancestors.push(tag);
        }
        calls.sort_unstable();
        let mut rows = Vec::new();
        let mut files = HashMap::new();
        if let Some(program) = unit.line_program.clone() {
            let mut program = program.rows();
            while let Some((header, row)) = program.next_row()? {
                if row.end_sequence() {
                    rows.push((row.address(), END, 0));
                    continue;
                }
                let line = row.line().map_or(0, |l| l.get() as u32);
                rows.push((row.address(), row.file_index(), line));
                name_file(&mut files, dwarf, unit, header, row.file_index());
            }
            let header = program.header();
            for &(_, _, file, _) in &calls {
                name_file(&mut files, dwarf, unit, header, file);
            }
        }
        // Sequences may come in any order: by address, a sequence's end before another's
        // start at the same address; rows at one address in a sequence keep their order, and
        // the last of them is the one looked up.
        rows.sort_by_key(|&(address, file, _)| (address, file != END));
        Ok(UnitLines { calls, rows, files })
    }

    fn location(&self, addr: u64) -> Option<(String, u32)> {
        let call = self.calls.partition_point(|c| c.0 <= addr).checked_sub(1);
        let (file, line) = match call.map(|i| self.calls[i]) {
            Some((_, end, file, line)) if addr < end => (file, line),
            _ => {
                let i = self.rows.partition_point(|r| r.0 <= addr).checked_sub(1)?;
                let (_, file, line) = self.rows[i];
                (file, line)
            }
        };
        if file == END || line == 0 {
            return None;
        }
        Some((self.files.get(&file)?.to_string(), line))
    }
}

/// Names file `index` of a line program in `files`, once.
fn name_file(
    files: &mut HashMap<u64, Rc<str>>,
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    header: &gimli::LineProgramHeader<Reader<'_>>,
    index: u64,
) {
    if let std::collections::hash_map::Entry::Vacant(e) = files.entry(index) {
        if let Some(name) = file_of(dwarf, unit, header, index) {
            e.insert(name);
        }
    }
}

/// The name (without directories) of file `index` of a line program.
fn file_of(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    header: &gimli::LineProgramHeader<Reader<'_>>,
    index: u64,
) -> Option<Rc<str>> {
    let entry = header.file(index)?;
    let path = dwarf.attr_string(unit, entry.path_name()).ok()?;
    let path = path.to_string_lossy();
    Some(file_name(&path)?.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ObjectSymbol;

    /// libc's debug file (Debian's libc6-dbg, which the test setup installs).
    fn libc_debug_file() -> Option<std::path::PathBuf> {
        let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let data = std::fs::read(libc).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let id = file.build_id().ok()??;
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let path = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        Path::new(&path).exists().then(|| path.into())
    }

    /// Compares, over every function of `path` at its start and seven points inside, the
    /// lines found a unit at a time with addr2line's over the whole file: (addresses, found
    /// by addr2line, found alike, placed at an inlined call rather than at their own line).
    fn agreement(path: &Path) -> (usize, usize, usize, usize) {
        let lines = Lines::open(path).expect("DWARF");
        assert!(lines.by_unit(), "{} has .debug_aranges", path.display());
        let loader = addr2line::Loader::new(path).unwrap();
        let own_line = |addr| {
            let l = loader.find_location(addr).ok()??;
            Some((file_name(l.file?)?, l.line?))
        };
        let inlined = addrs_of(path).into_iter().filter(|&a| {
            let outer = lines.location(a);
            outer.is_some() && outer != own_line(a)
        });
        let inlined = inlined.count();
        let whole = Lines(Inner::Whole(Box::new(
            addr2line::Loader::new(path).unwrap(),
        )));
        let addrs = addrs_of(path);
        let (mut found, mut same) = (0, 0);
        for &addr in &addrs {
            let (ours, theirs) = (lines.location(addr), whole.location(addr));
            found += usize::from(theirs.is_some());
            match ours == theirs {
                true => same += 1,
                false => eprintln!(
                    "{} {addr:#x}: {ours:?}, addr2line {theirs:?}",
                    path.display()
                ),
            }
        }
        (addrs.len(), found, same, inlined)
    }

    /// Every function's start and seven points inside it.
    fn addrs_of(path: &Path) -> Vec<u64> {
        let data = std::fs::read(path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let mut addrs: Vec<u64> = (file.symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
            .flat_map(|s| (0..8).map(move |i| s.address() + s.size() * i / 8))
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        addrs
    }

    /// libc's, compressed, read as far as each unit.
    #[test]
    fn a_unit_at_a_time_finds_the_lines_addr2line_finds() {
        let Some(path) = libc_debug_file() else {
            eprintln!("skipped: no debug file for libc (Debian's libc6-dbg)");
            return;
        };
        let (addrs, found, same, inlined) = agreement(&path);
        eprintln!("{addrs} addresses, {found} with a line, {inlined} at an inlined call");
        // Debian 13's libc: 29,122 addresses, 29,041 with a line.
        assert!(found > 20_000, "{found} of {addrs} found");
        assert!(inlined > 1_000, "{inlined} at inlined calls");
        assert_eq!(same, addrs);
    }

    /// Programs built with inlining, their DWARF plain and compressed.
    #[test]
    fn inlined_calls_are_placed_as_addr2line_places_them() {
        let dir = tempfile::tempdir().unwrap();
        let workloads = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads");
        for name in ["chain", "deep", "nest", "stackmix", "structs", "syscalls"] {
            for (suffix, flags) in [("", &["-O2", "-g"][..]), ("-gz", &["-O2", "-g", "-gz"])] {
                let out = dir.path().join(format!("{name}{suffix}"));
                let status = std::process::Command::new("cc")
                    .args(flags)
                    .arg("-o")
                    .arg(&out)
                    .arg(workloads.join(format!("{name}.c")))
                    .status()
                    .expect("cc is needed to build the test programs");
                assert!(status.success(), "cc {flags:?} {name}.c");
                let (addrs, found, same, inlined) = agreement(&out);
                eprintln!(
                    "{name}{suffix}: {addrs} addresses, {found} with a line, {inlined} inlined"
                );
                assert!(found > 0, "{name}{suffix}: no lines");
                assert_eq!(same, addrs, "{name}{suffix}");
            }
        }
    }
}
