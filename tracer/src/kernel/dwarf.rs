//! The typed parameters of a user-space function, read from its ELF file's DWARF debug info, so
//! a uprobe can print `func(a=1, name="x")` instead of raw argument registers.

use std::borrow::Cow;
use std::path::Path;

use addr2line::gimli::{self, AttributeValue, DwAt, DwTag, EndianSlice, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSymbol};

use super::params::{Kind, Member, MemberError, Param, Prototype, RETURN_ARG};
use tracer_common::FIELD_DEREFS;

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;
type Unit<'a> = gimli::Unit<Reader<'a>>;
type Entry<'u, 'a> = gimli::DebuggingInformationEntry<'u, 'u, Reader<'a>>;
type Value<'a> = AttributeValue<Reader<'a>>;

/// Chains of typedefs, abstract origins and pointers are followed at most this deep, so a
/// cyclic (corrupt) DIE graph cannot loop forever.
const MAX_HOPS: usize = 32;

/// The sections read. The rest (locations, ranges, macros, type units) stay unloaded so a
/// compressed one is not inflated for nothing; `.debug_line` is here only because building a
/// `gimli::Unit` parses its line program header.
const SECTIONS: [gimli::SectionId; 7] = {
    use gimli::SectionId::*;
    [
        DebugInfo,
        DebugAbbrev,
        DebugStr,
        DebugStrOffsets,
        DebugLineStr,
        DebugAddr,
        DebugLine,
    ]
};

/// The most one debug section may inflate to (its compression header's claim is checked
/// before the buffer is reserved).
const MAX_INFLATED: u64 = 1 << 30;

/// GCC's `.isra.N`, `.constprop.N` and `.part.N` clones take other arguments than the source
/// says, though their DIEs name the original through DW_AT_abstract_origin.
const CLONES: [&str; 3] = [".isra.", ".constprop.", ".part."];

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read, or is not a regular file.
    #[error(transparent)]
    Input(#[from] super::Error),
    #[error("cannot parse {path} as ELF: {reason}")]
    Elf { path: String, reason: String },
    #[error("cannot read the DWARF debug info of {path}: {reason}")]
    Dwarf { path: String, reason: String },
    #[error("{path} has no DWARF debug info")]
    NoDebugInfo { path: String },
    #[error("no symbol '{function}' in {path}")]
    NoSymbol { path: String, function: String },
    #[error("no DWARF subprogram for '{function}' in {path}")]
    NoFunction { path: String, function: String },
    #[error("'{function}' is a compiler clone whose arguments differ from the source's")]
    CompilerClone { function: String, original: String },
    #[error(transparent)]
    Member(#[from] MemberError),
}

impl Error {
    /// Concrete next steps, printed as `hint:` lines under the error.
    pub fn hints(&self) -> Vec<String> {
        const FALLBACK: &str = "without debug info, arguments print as arg0..arg5";
        let hint = match self {
            Error::Member(e) => return e.hints(),
            Error::Input(e) => return e.hints(),
            Error::Elf { path, .. } => format!("uprobes need an ELF file; check `file {path}`"),
            Error::Dwarf { path, .. } => {
                return vec![
                    format!("check `readelf --debug-dump=info {path}`, or rebuild it with -g"),
                    format!("`strip -g {path}` drops the debug info; {FALLBACK}"),
                ]
            }
            Error::NoDebugInfo { path } => format!(
                "rebuild {path} with -g; arguments are not typed from a separate debug \
                 file (.gnu_debuglink, build-id, debuginfod), though its symbols and lines \
                 are read"
            ),
            Error::NoSymbol { path, .. } => {
                format!("list its symbols with `tracer list --binary {path}`")
            }
            Error::NoFunction { path, function } => format!(
                "was '{function}' built without -g? check \
                 `readelf --debug-dump=info {path} | grep -w {function}`"
            ),
            Error::CompilerClone { original, .. } => format!("trace '{original}' itself"),
        };
        vec![hint]
    }

    /// The file or the function is not described: the caller of [`prototype`] then falls back
    /// to arg0..arg5 without a word, the common case.
    fn is_missing(&self) -> bool {
        matches!(
            self,
            Error::NoDebugInfo { .. }
                | Error::NoSymbol { .. }
                | Error::NoFunction { .. }
                | Error::CompilerClone { .. }
        )
    }
}

/// A failure while reading loaded DWARF: the DWARF itself (given the file's path by
/// [`with_function`]), or what was asked of it.
enum Fault {
    Dwarf(gimli::Error),
    Request(Error),
}

impl From<gimli::Error> for Fault {
    fn from(e: gimli::Error) -> Self {
        Fault::Dwarf(e)
    }
}

impl From<Error> for Fault {
    fn from(e: Error) -> Self {
        Fault::Request(e)
    }
}

impl From<MemberError> for Fault {
    fn from(e: MemberError) -> Self {
        Fault::Request(e.into())
    }
}

/// The prototype of `function` (its linkage or plain name, as the symbol table has it; Rust
/// mangled names may be matched by DW_AT_linkage_name) from `path`'s DWARF. Ok(None) when the
/// file has no debug info or no subprogram of that name (the caller then falls back to
/// arg0..arg5), and also when the symbol table lacks `function` or it is a GCC clone.
pub fn prototype(path: &Path, function: &str) -> Result<Option<Prototype>, Error> {
    match with_function(path, function, |debug, die| Ok(debug.prototype(die)?)) {
        Ok(prototype) => Ok(Some(prototype)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Resolves `members` (`["flags"]` for `how->flags`, `["a", "b"]` for `p->a.b`) through
/// pointer parameter `arg` of `function` in `path`'s DWARF to a byte offset and the member's
/// kind, as [`super::btf::KernelBtf::member`] does for kernel functions. The function is found
/// as [`prototype`] finds it; `arg` counts its parameters in the same order. An empty path is
/// the pointed-to struct itself.
pub fn member(path: &Path, function: &str, arg: usize, members: &[&str]) -> Result<Member, Error> {
    with_function(path, function, |debug, die| {
        debug.member(die, function, arg, members)
    })
}

/// Loads `path`'s DWARF, finds the subprogram of `function` and hands both to `read`.
fn with_function<T>(
    path: &Path,
    function: &str,
    read: impl FnOnce(&Debug<'_>, Die) -> Result<T, Fault>,
) -> Result<T, Error> {
    let path_str = || path.display().to_string();
    let data = super::file::map(path)?;
    let elf_error = |e: object::Error| Error::Elf {
        path: path_str(),
        reason: e.to_string(),
    };
    let file = object::File::parse(&*data).map_err(elf_error)?;
    if let Some((original, _)) = CLONES.iter().find_map(|c| function.split_once(c)) {
        return Err(Error::CompilerClone {
            function: function.into(),
            original: original.into(),
        });
    }
    // A separate debug file (by build-id or .gnu_debuglink), split DWARF (.dwo) and
    // debuginfod are not looked up here: each function's arguments would inflate and walk the
    // whole file's DWARF again
    // (docs/benchmarks.md, "Figures the code cites", `dwarf-args-debug-file`).
    // Symbols and lines do come from the debug file (`symbols::debug_file`).
    if file.section_by_name(".debug_info").is_none() {
        return Err(Error::NoDebugInfo { path: path_str() });
    }
    // The symbol's address picks the DIE of the code a uprobe hits: a name alone may also be a
    // static function of another file.
    let symbol = (file.symbols().chain(file.dynamic_symbols()))
        .find(|s| s.name() == Ok(function) && s.address() != 0)
        .ok_or_else(|| Error::NoSymbol {
            path: path_str(),
            function: function.into(),
        })?;
    let dwarf_error = |e: &dyn std::fmt::Display| Error::Dwarf {
        path: path_str(),
        reason: e.to_string(),
    };
    // Compressed sections (SHF_COMPRESSED, .zdebug_*) inflate here: addr2line's `loader`
    // feature turns on object's `compression`, which cargo unifies with our object features.
    // A section's header says how large it inflates: a corrupt or hostile one may claim
    // gigabytes, which are refused before anything is allocated.
    let sections = gimli::DwarfSections::load(|id| match file.section_by_name(id.name()) {
        Some(section) if SECTIONS.contains(&id) => {
            let claimed = (section.compressed_data())
                .map_err(|e| e.to_string())?
                .uncompressed_size;
            if claimed > MAX_INFLATED {
                return Err(format!(
                    "{} claims to inflate to {claimed} bytes (at most {MAX_INFLATED} are read)",
                    id.name()
                ));
            }
            section.uncompressed_data().map_err(|e| e.to_string())
        }
        _ => Ok(Cow::Borrowed(&[][..])),
    });
    let sections = sections.map_err(|e| dwarf_error(&e))?;
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let debug = Debug::new(sections.borrow(|s| EndianSlice::new(s, endian)));
    let debug = debug.map_err(|e| dwarf_error(&e))?;
    let die = debug.find(function, symbol.address());
    let die = die
        .map_err(|e| dwarf_error(&e))?
        .ok_or_else(|| Error::NoFunction {
            path: path_str(),
            function: function.into(),
        })?;
    read(&debug, die).map_err(|fault| match fault {
        Fault::Dwarf(e) => dwarf_error(&e),
        Fault::Request(e) => e,
    })
}

/// A DIE anywhere in `.debug_info`: the index of its unit in [`Debug::units`], and its offset.
#[derive(Clone, Copy)]
struct Die(usize, gimli::UnitOffset);

/// What a `DW_AT_type` names. `Unknown` is a reference this module does not follow (a type
/// unit signature, a supplementary file), reported rather than mistaken for `void`.
#[derive(Clone, Copy)]
enum Ty {
    Void,
    Die(Die),
    Unknown,
}

/// What a type is to a member walk (`p->a.b`), through typedefs and qualifiers.
#[derive(Clone, Copy)]
enum Shape {
    /// A struct, union or class with its members laid out.
    Aggregate(Die),
    /// A struct, union or class only declared in this unit: no layout.
    Declared,
    /// A pointer (or C++ reference) to this type.
    Pointer(Ty),
    Other,
}

/// Said of a struct the DWARF only declares.
const DECLARED: &str = " (only declared: the DWARF has no layout for it)";

/// A member found by name, relative to the struct searched.
struct Found {
    /// None: an offset this reader cannot compute (a location expression, an overflow).
    offset: Option<u64>,
    /// Bitfields have no byte address, so one probe read cannot fetch them.
    bitfield: bool,
    ty: Ty,
}

struct Debug<'a> {
    dwarf: gimli::Dwarf<Reader<'a>>,
    units: Vec<Unit<'a>>,
    /// Per unit: written in Rust, whose type names get no `struct` prefix.
    rust: Vec<bool>,
}

impl<'a> Debug<'a> {
    fn new(dwarf: gimli::Dwarf<Reader<'a>>) -> gimli::Result<Self> {
        let (mut units, mut rust) = (Vec::new(), Vec::new());
        let mut headers = dwarf.units();
        while let Some(header) = headers.next()? {
            let unit = dwarf.unit(header)?;
            let mut tree = unit.entries_tree(None)?;
            let language = tree.root()?.entry().attr_value(gimli::DW_AT_language)?;
            rust.push(language == Some(AttributeValue::Language(gimli::DW_LANG_Rust)));
            units.push(unit);
        }
        Ok(Debug { dwarf, units, rust })
    }

    /// The subprogram whose code starts at `address`, where the symbol `function` is. One split
    /// into DW_AT_ranges (hot and cold parts) is matched by name instead: its linkage name, or
    /// its plain name when it has none (so `main` does not match Rust's `app::main`). Names
    /// come through DW_AT_abstract_origin / DW_AT_specification: the out-of-line copy of an
    /// inline function, or a C++ method defined outside its class, carries only the code.
    fn find(&self, function: &str, address: u64) -> gimli::Result<Option<Die>> {
        let names = [
            gimli::DW_AT_linkage_name,
            gimli::DW_AT_MIPS_linkage_name,
            gimli::DW_AT_name,
        ];
        for (index, unit) in self.units.iter().enumerate() {
            let mut cursor = unit.entries();
            while let Some((_, entry)) = cursor.next_dfs()? {
                if entry.tag() != gimli::DW_TAG_subprogram {
                    continue;
                }
                let die = Die(index, entry.offset());
                match self.low_pc(unit, entry)? {
                    Some(low_pc) if low_pc == address => return Ok(Some(die)),
                    Some(_) => continue,
                    None if entry.attr_value(gimli::DW_AT_ranges)?.is_none() => continue,
                    None => {}
                }
                let mut name = None;
                for attr in names {
                    if name.is_none() {
                        name = self.string(die, attr)?;
                    }
                }
                if name.as_deref() == Some(function) {
                    return Ok(Some(die));
                }
            }
        }
        Ok(None)
    }

    /// Where the code of a subprogram starts. Linkers leave the DWARF of functions they
    /// discard (`--gc-sections`, COMDAT) with a tombstone address, 0 or -1: no code.
    fn low_pc(&self, unit: &Unit<'a>, entry: &Entry<'_, 'a>) -> gimli::Result<Option<u64>> {
        let low_pc = match entry.attr_value(gimli::DW_AT_low_pc)? {
            Some(value) => self.dwarf.attr_address(unit, value)?,
            None => None,
        };
        Ok(low_pc.filter(|&pc| pc != 0 && pc != u64::MAX))
    }

    fn prototype(&self, function: Die) -> gimli::Result<Prototype> {
        let ret = match self.type_of(function)? {
            Ty::Void => Kind::Void,
            ty => self.kind(ty)?,
        };
        Ok(Prototype {
            params: self.params(function)?,
            ret,
        })
    }

    /// The parameters of `function`, named and typed.
    fn params(&self, function: Die) -> gimli::Result<Vec<Param>> {
        let dies = self.param_dies(function)?.into_iter().enumerate();
        dies.map(|(i, die)| {
            let name = self.param_name(die, i)?;
            let kind = self.kind(self.type_of(die)?)?;
            Ok(Param { name, kind })
        })
        .collect()
    }

    /// The DW_TAG_formal_parameter children of `function`, in order. Artificial ones (C++
    /// `this`) are kept: they take an argument register like any other. A concrete
    /// out-of-line instance may list none when its abstract instance (or declaration) does.
    fn param_dies(&self, function: Die) -> gimli::Result<Vec<Die>> {
        let (mut dies, mut at) = (Vec::new(), Some(function));
        for _ in 0..MAX_HOPS {
            let Some(die) = at.filter(|_| dies.is_empty()) else {
                break;
            };
            dies = self.children(die, gimli::DW_TAG_formal_parameter)?;
            at = self.origin(die)?;
        }
        Ok(dies)
    }

    /// The name of parameter `index`, `die`; `argN` when the DWARF has none.
    fn param_name(&self, die: Die, index: usize) -> gimli::Result<String> {
        let name = self.string(die, gimli::DW_AT_name)?;
        Ok(name.unwrap_or_else(|| format!("arg{index}")))
    }

    /// [`member`]'s walk: `path` through pointer parameter `arg` of `function`, which is named
    /// `name` (for messages).
    fn member(
        &self,
        function: Die,
        name: &str,
        arg: usize,
        path: &[&str],
    ) -> Result<Member, Fault> {
        let params = self.param_dies(function)?;
        let (param_name, param_ty) = match (arg, params.get(arg)) {
            (RETURN_ARG, _) => ("ret".to_string(), self.type_of(function)?),
            (_, Some(&param)) => (self.param_name(param, arg)?, self.type_of(param)?),
            (_, None) => {
                let names = params
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| self.param_name(p, i));
                return Err(MemberError::NoParam {
                    function: name.into(),
                    arg,
                    params: names.collect::<gimli::Result<_>>()?,
                }
                .into());
            }
        };
        // The parameter's own pointer is the one dereference the BPF side makes.
        let (pointee, mut shape) = match self.shape(param_ty)? {
            Shape::Pointer(pointee) => (pointee, self.shape(pointee)?),
            _ => (Ty::Unknown, Shape::Other),
        };
        if !matches!(shape, Shape::Aggregate(_)) {
            let mut kind = self.kind(param_ty)?.to_string();
            if matches!(shape, Shape::Declared) {
                kind.push_str(DECLARED);
            }
            return Err(MemberError::NotAStructPointer {
                param: param_name,
                kind,
            }
            .into());
        }
        let (mut offset, mut ty, mut derefs) = (0u64, pointee, Vec::new());
        // The walk so far as C spells it (`->` after each pointer loaded), for messages.
        let (mut walked, mut fresh) = (param_name.clone(), true);
        for &member in path {
            // A pointer on the way is loaded, and the walk goes on in what it points to.
            if let Shape::Pointer(target) = shape {
                let kind = || Ok::<_, Fault>(self.kind(ty)?.to_string());
                match self.shape(target)? {
                    inner @ Shape::Aggregate(_) if derefs.len() < FIELD_DEREFS => {
                        derefs.push(self.offset_u32(offset, pointee, path)?);
                        (offset, ty, shape, fresh) = (0, target, inner, true);
                    }
                    Shape::Aggregate(_) => {
                        let (member, kind) = (walked.clone(), kind()?);
                        let max = FIELD_DEREFS;
                        return Err(MemberError::TooDeep { member, kind, max }.into());
                    }
                    Shape::Declared => {
                        let (member, kind) = (walked.clone(), kind()? + DECLARED);
                        return Err(MemberError::NotAStruct { member, kind }.into());
                    }
                    Shape::Pointer(_) | Shape::Other => {}
                }
            }
            let Shape::Aggregate(aggregate) = shape else {
                let (member, kind) = (walked.clone(), self.kind(ty)?.to_string());
                return Err(MemberError::NotAStruct { member, kind }.into());
            };
            let (strukt, member) = (self.type_name(ty, 0)?, member.to_string());
            let Some(found) = self.find_member(aggregate, &member, 0)? else {
                let mut members = Vec::new();
                self.member_names(aggregate, &mut members, 0)?;
                return Err(MemberError::NoMember {
                    strukt,
                    member,
                    members,
                }
                .into());
            };
            if found.bitfield {
                return Err(MemberError::Bitfield { strukt, member }.into());
            }
            let Some(sum) = found.offset.and_then(|o| o.checked_add(offset)) else {
                return Err(MemberError::Location { strukt, member }.into());
            };
            let step = if fresh { "->" } else { "." };
            (walked, fresh) = (format!("{walked}{step}{member}"), false);
            (offset, ty) = (sum, found.ty);
            shape = self.shape(ty)?;
        }
        let in_place = self.is_char_array(ty)?;
        Ok(Member {
            arg,
            derefs,
            offset: self.offset_u32(offset, pointee, path)?,
            kind: match in_place {
                true => Kind::Str,
                false => self.kind(ty)?,
            },
            in_place,
        })
    }

    /// A member offset as the BPF side takes it.
    fn offset_u32(&self, offset: u64, pointee: Ty, path: &[&str]) -> Result<u32, Fault> {
        u32::try_from(offset).or_else(|_| {
            let strukt = self.type_name(pointee, 0)?;
            let member = path.join(".");
            Err(MemberError::Location { strukt, member }.into())
        })
    }

    /// Whether `ty` is an array of `char`, `signed char` or `unsigned char`: a string read in
    /// place.
    fn is_char_array(&self, ty: Ty) -> gimli::Result<bool> {
        let Ty::Die(die) = self.strip(ty, true)? else {
            return Ok(false);
        };
        if self.entry(die)?.tag() != gimli::DW_TAG_array_type {
            return Ok(false);
        }
        match self.strip(self.type_of(die)?, false)? {
            Ty::Die(element) => self.is_char(element),
            _ => Ok(false),
        }
    }

    /// What `ty` is to a member walk, through typedefs and qualifiers.
    fn shape(&self, ty: Ty) -> gimli::Result<Shape> {
        let Ty::Die(die) = self.strip(ty, true)? else {
            return Ok(Shape::Other);
        };
        let entry = self.entry(die)?;
        Ok(match entry.tag() {
            tag if is_pointer(tag) => Shape::Pointer(self.type_of(die)?),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type => {
                if is_declaration(&entry)? {
                    Shape::Declared
                } else {
                    Shape::Aggregate(die)
                }
            }
            _ => Shape::Other,
        })
    }

    /// The data members of `aggregate`: not C++ static members, which are declarations.
    fn data_members(&self, aggregate: Die) -> gimli::Result<Vec<Die>> {
        let mut kept = Vec::new();
        for die in self.children(aggregate, gimli::DW_TAG_member)? {
            if !is_declaration(&self.entry(die)?)? {
                kept.push(die);
            }
        }
        Ok(kept)
    }

    /// Finds `name` in `aggregate`, searching into anonymous struct/union members the way C
    /// lets `p->lo` skip the unnamed levels.
    fn find_member(
        &self,
        aggregate: Die,
        name: &str,
        depth: usize,
    ) -> gimli::Result<Option<Found>> {
        for die in self.data_members(aggregate)? {
            match self.string(die, gimli::DW_AT_name)? {
                Some(member) if member == name => {
                    let (offset, bitfield) = self.placement(die)?;
                    let ty = self.type_of(die)?;
                    return Ok(Some(Found {
                        offset,
                        bitfield,
                        ty,
                    }));
                }
                None if depth < MAX_HOPS => {
                    let Shape::Aggregate(inner) = self.shape(self.type_of(die)?)? else {
                        continue;
                    };
                    if let Some(found) = self.find_member(inner, name, depth + 1)? {
                        let (outer, _) = self.placement(die)?;
                        let offset = found.offset.zip(outer).and_then(|(a, b)| a.checked_add(b));
                        return Ok(Some(Found { offset, ..found }));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// The names `find_member` can reach in `aggregate`, for the "no member" message.
    fn member_names(
        &self,
        aggregate: Die,
        out: &mut Vec<String>,
        depth: usize,
    ) -> gimli::Result<()> {
        for die in self.data_members(aggregate)? {
            match self.string(die, gimli::DW_AT_name)? {
                Some(name) => out.push(name),
                None if depth < MAX_HOPS => {
                    if let Shape::Aggregate(inner) = self.shape(self.type_of(die)?)? {
                        self.member_names(inner, out, depth + 1)?;
                    }
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Where member `die` lies in its struct: the byte offset (None when it is not a constant
    /// this reader knows), and whether it is a bitfield, which has no byte address. Union
    /// members have no location: they are at 0.
    fn placement(&self, die: Die) -> gimli::Result<(Option<u64>, bool)> {
        let entry = self.entry(die)?;
        let attr = |name| entry.attr_value(name);
        let data_bit_offset = attr(gimli::DW_AT_data_bit_offset)?;
        let offset = match (attr(gimli::DW_AT_data_member_location)?, &data_bit_offset) {
            (Some(location), _) => location.udata_value().or_else(|| {
                let encoding = self.units[die.0].encoding();
                location
                    .exprloc_value()
                    .and_then(|e| plus_uconst(e, encoding))
            }),
            (None, Some(bits)) => bits.udata_value().map(|bits| bits / 8),
            (None, None) => Some(0),
        };
        // DWARF 4+ bitfields have DW_AT_bit_size and DW_AT_data_bit_offset; DWARF 2 and 3 ones
        // DW_AT_bit_size and DW_AT_bit_offset (from the storage unit's high end).
        let unaligned = data_bit_offset
            .and_then(|b| b.udata_value())
            .is_some_and(|b| b % 8 != 0);
        let bitfield = unaligned
            || attr(gimli::DW_AT_bit_size)?.is_some()
            || attr(gimli::DW_AT_bit_offset)?.is_some();
        Ok((offset, bitfield))
    }

    /// How a value of type `ty` is read and printed.
    fn kind(&self, ty: Ty) -> gimli::Result<Kind> {
        let ty = self.strip(ty, true)?;
        let Ty::Die(die) = ty else {
            return self.other(ty);
        };
        let entry = self.entry(die)?;
        let size = byte_size(&entry)?.and_then(|s| u8::try_from(s).ok());
        let size = size.filter(|s| matches!(s, 1 | 2 | 4 | 8));
        let kind = match (entry.tag(), entry.attr_value(gimli::DW_AT_encoding)?, size) {
            (gimli::DW_TAG_base_type, Some(AttributeValue::Encoding(encoding)), Some(n)) => {
                match encoding {
                    gimli::DW_ATE_signed | gimli::DW_ATE_signed_char => Kind::Signed(n),
                    gimli::DW_ATE_unsigned | gimli::DW_ATE_unsigned_char => Kind::Unsigned(n),
                    gimli::DW_ATE_boolean => Kind::Bool,
                    _ => self.other(ty)?,
                }
            }
            (gimli::DW_TAG_enumeration_type, _, Some(size)) => {
                let values = self.enumerators(die)?;
                Kind::Enum { size, values }
            }
            (tag, _, _) if is_pointer(tag) => {
                let pointee = self.type_of(die)?;
                // Typedefs are not followed, as in btf.rs: `uint8_t *` is more often bytes.
                match self.strip(pointee, false)? {
                    Ty::Die(target) if self.is_char(target)? => Kind::Str,
                    _ => {
                        let pointee = self.type_name(pointee, 0)?;
                        Kind::Pointer { pointee }
                    }
                }
            }
            _ => self.other(ty)?,
        };
        Ok(kind)
    }

    fn other(&self, ty: Ty) -> gimli::Result<Kind> {
        let name = self.type_name(ty, 0)?;
        Ok(Kind::Other { name })
    }

    /// `char`, `signed char` or `unsigned char`: a pointer to one is printed as a string.
    fn is_char(&self, die: Die) -> gimli::Result<bool> {
        let entry = self.entry(die)?;
        let name = self.string(die, gimli::DW_AT_name)?.unwrap_or_default();
        Ok(entry.tag() == gimli::DW_TAG_base_type
            && byte_size(&entry)? == Some(1)
            && ["char", "signed char", "unsigned char"].contains(&name.as_str()))
    }

    /// Named values of an enumeration. GCC writes non-negative values as unsigned
    /// DW_FORM_dataN (200 may be the single byte 0xc8) and only negative ones as
    /// DW_FORM_sdata, so only sdata is sign-extended.
    fn enumerators(&self, enumeration: Die) -> gimli::Result<Vec<(String, i64)>> {
        let mut values = Vec::new();
        for die in self.children(enumeration, gimli::DW_TAG_enumerator)? {
            let value = match self.entry(die)?.attr_value(gimli::DW_AT_const_value)? {
                Some(AttributeValue::Sdata(v)) => Some(v),
                other => other.and_then(|v| v.udata_value()).map(|v| v as i64),
            };
            if let (Some(name), Some(value)) = (self.string(die, gimli::DW_AT_name)?, value) {
                values.push((name, value));
            }
        }
        Ok(values)
    }

    /// A C-like name for messages, as btf.rs writes them: `int`, `struct point`, `char *`.
    /// Qualifiers are dropped; typedef names are kept, as the source spells them.
    fn type_name(&self, ty: Ty, depth: usize) -> gimli::Result<String> {
        let die = match self.strip(ty, false)? {
            Ty::Void => return Ok("void".into()),
            Ty::Die(die) if depth < MAX_HOPS => die,
            _ => return Ok("?".into()),
        };
        let tag = self.entry(die)?.tag();
        if is_pointer(tag) || tag == gimli::DW_TAG_array_type {
            let suffix = if is_pointer(tag) { " *" } else { "[]" };
            return Ok(self.type_name(self.type_of(die)?, depth + 1)? + suffix);
        }
        let keyword = match tag {
            gimli::DW_TAG_subroutine_type => return Ok("func-proto".into()),
            _ if self.rust[die.0] => "",
            gimli::DW_TAG_structure_type => "struct ",
            gimli::DW_TAG_union_type => "union ",
            gimli::DW_TAG_enumeration_type => "enum ",
            _ => "",
        };
        let name = self.string(die, gimli::DW_AT_name)?;
        Ok(keyword.to_string() + name.as_deref().unwrap_or("(anon)"))
    }

    /// Follows `ty` through const/volatile/restrict/_Atomic, and through typedefs if asked.
    fn strip(&self, mut ty: Ty, typedefs: bool) -> gimli::Result<Ty> {
        for _ in 0..MAX_HOPS {
            let Ty::Die(die) = ty else { return Ok(ty) };
            match self.entry(die)?.tag() {
                gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => {}
                gimli::DW_TAG_typedef if typedefs => {}
                _ => return Ok(ty),
            }
            ty = self.type_of(die)?;
        }
        Ok(Ty::Unknown)
    }

    /// The DW_AT_type of `die` (or of its abstract origin); none means `void`.
    fn type_of(&self, die: Die) -> gimli::Result<Ty> {
        Ok(match self.attr(die, gimli::DW_AT_type)? {
            None => Ty::Void,
            Some((at, value)) => self.reference(at, value).map_or(Ty::Unknown, Ty::Die),
        })
    }

    /// The string attribute `name` of `die` or of its abstract origin.
    fn string(&self, die: Die, name: DwAt) -> gimli::Result<Option<String>> {
        let Some((at, value)) = self.attr(die, name)? else {
            return Ok(None);
        };
        let text = self.dwarf.attr_string(&self.units[at.0], value)?;
        Ok(Some(text.to_string_lossy().into_owned()))
    }

    /// Attribute `name` of `die`, or of the DIE it is a concrete instance or definition of,
    /// with the DIE that holds it (references in the value are relative to that DIE's unit).
    fn attr(&self, die: Die, name: DwAt) -> gimli::Result<Option<(Die, Value<'a>)>> {
        let mut at = Some(die);
        for _ in 0..MAX_HOPS {
            let Some(die) = at else { break };
            if let Some(value) = self.entry(die)?.attr_value(name)? {
                return Ok(Some((die, value)));
            }
            at = self.origin(die)?;
        }
        Ok(None)
    }

    fn origin(&self, die: Die) -> gimli::Result<Option<Die>> {
        let entry = self.entry(die)?;
        let value = match entry.attr_value(gimli::DW_AT_abstract_origin)? {
            None => entry.attr_value(gimli::DW_AT_specification)?,
            origin => origin,
        };
        Ok(value.and_then(|value| self.reference(die, value)))
    }

    /// Resolves a reference within the unit of `from`, or across units (DW_FORM_ref_addr, as
    /// LTO writes when it inlines across files).
    fn reference(&self, from: Die, value: Value<'a>) -> Option<Die> {
        match value {
            AttributeValue::UnitRef(offset) => Some(Die(from.0, offset)),
            AttributeValue::DebugInfoRef(offset) => (self.units.iter().enumerate())
                .find_map(|(i, unit)| Some(Die(i, offset.to_unit_offset(&unit.header)?))),
            _ => None,
        }
    }

    /// The direct children of `parent` with tag `tag`.
    fn children(&self, parent: Die, tag: DwTag) -> gimli::Result<Vec<Die>> {
        let mut tree = self.units[parent.0].entries_tree(Some(parent.1))?;
        let (mut children, mut found) = (tree.root()?.children(), Vec::new());
        while let Some(child) = children.next()? {
            if child.entry().tag() == tag {
                found.push(Die(parent.0, child.entry().offset()));
            }
        }
        Ok(found)
    }

    fn entry(&self, die: Die) -> gimli::Result<Entry<'_, 'a>> {
        self.units[die.0].entry(die.1)
    }
}

fn byte_size(entry: &Entry<'_, '_>) -> gimli::Result<Option<u64>> {
    let size = entry.attr_value(gimli::DW_AT_byte_size)?;
    Ok(size.and_then(|v| v.udata_value()))
}

/// Whether `entry` only declares (a struct without its members, a C++ static member).
fn is_declaration(entry: &Entry<'_, '_>) -> gimli::Result<bool> {
    let flag = entry.attr_value(gimli::DW_AT_declaration)?;
    Ok(flag == Some(AttributeValue::Flag(true)))
}

/// The offset in a DWARF 2 style member location, `DW_OP_plus_uconst n` alone; None for any
/// other expression.
fn plus_uconst(
    expression: gimli::Expression<Reader<'_>>,
    encoding: gimli::Encoding,
) -> Option<u64> {
    let mut operations = expression.operations(encoding);
    match (operations.next(), operations.next()) {
        (Ok(Some(gimli::Operation::PlusConstant { value })), Ok(None)) => Some(value),
        _ => None,
    }
}

/// C pointers, and C++ references (passed as pointers).
fn is_pointer(tag: DwTag) -> bool {
    tag == gimli::DW_TAG_pointer_type
        || tag == gimli::DW_TAG_reference_type
        || tag == gimli::DW_TAG_rvalue_reference_type
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::process::Command;

    const SOURCE: &str = r#"
struct point { int x, y; };
enum color { RED, GREEN = 200, BLUE = -1 };
typedef const char *label_t;
typedef unsigned char u8;
int target(int count, const char *name, unsigned long size, struct point *p, _Bool flag,
           enum color c) { return count + name[0] + (int)size + p->x + flag + c; }
long mixed(short s, unsigned char *text, u8 *bytes, double d, struct point by_value,
           void *opaque, label_t label, const struct point *cp) { return s + (long)d; }
void noop(void) {}
/* At -O2 this is inlined into main and also emitted out of line (it is extern): that copy's
   DIE names neither itself nor its parameters, only its DW_AT_abstract_origin does. */
int helper(int left, signed char right) { return left * 3 + right; }
int main(int argc, char **argv) {
    struct point pt = { argc, 2 };
    noop();
    return target(argc, argv[0], 2, &pt, 1, GREEN) + helper(argc, 1)
        + (int)mixed(1, 0, 0, 1.5, pt, 0, "x", &pt);
}
"#;

    /// Compiles SOURCE with `flags`; a missing `cc` fails the test rather than skipping it.
    fn compile(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
        compile_source(dir, name, SOURCE, flags)
    }

    /// Compiles the C program `text` into `dir/name`.
    fn compile_source(dir: &Path, name: &str, text: &str, flags: &[&str]) -> PathBuf {
        let (source, out) = (dir.join(format!("{name}.c")), dir.join(name));
        std::fs::write(&source, text).unwrap();
        let status = Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .status();
        assert!(
            status
                .expect("cc is needed to build the test program")
                .success(),
            "cc {flags:?}"
        );
        out
    }

    fn proto(params: &[(&str, Kind)], ret: Kind) -> Option<Prototype> {
        let params = params.iter().map(|(n, k)| Param {
            name: n.to_string(),
            kind: k.clone(),
        });
        Some(Prototype {
            params: params.collect(),
            ret,
        })
    }

    fn pointer(pointee: &str) -> Kind {
        Kind::Pointer {
            pointee: pointee.into(),
        }
    }

    fn other(name: &str) -> Kind {
        Kind::Other { name: name.into() }
    }

    #[test]
    fn reads_c_prototypes_plain_and_compressed() {
        let dir = tempfile::tempdir().unwrap();
        for (name, flags) in [
            ("prog", &["-g", "-O0"][..]),
            ("gz", &["-g", "-O0", "-gz=zlib"]),
        ] {
            let prog = compile(dir.path(), name, flags);
            let values = [("RED", 0), ("GREEN", 200), ("BLUE", -1)];
            let values = values.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let target = [
                ("count", Kind::Signed(4)),
                ("name", Kind::Str),
                ("size", Kind::Unsigned(8)),
                ("p", pointer("struct point")),
                ("flag", Kind::Bool),
                ("c", Kind::Enum { size: 4, values }),
            ];
            assert_eq!(
                prototype(&prog, "target").unwrap(),
                proto(&target, Kind::Signed(4))
            );
            let mixed = [
                ("s", Kind::Signed(2)),
                ("text", Kind::Str),
                ("bytes", pointer("u8")),
                ("d", other("double")),
                ("by_value", other("struct point")),
                ("opaque", pointer("void")),
                ("label", Kind::Str),
                ("cp", pointer("struct point")),
            ];
            assert_eq!(
                prototype(&prog, "mixed").unwrap(),
                proto(&mixed, Kind::Signed(8))
            );
            assert_eq!(prototype(&prog, "noop").unwrap(), proto(&[], Kind::Void));
            let main = [("argc", Kind::Signed(4)), ("argv", pointer("char *"))];
            assert_eq!(
                prototype(&prog, "main").unwrap(),
                proto(&main, Kind::Signed(4))
            );
            assert_eq!(prototype(&prog, "missing").unwrap(), None);
        }
    }

    #[test]
    fn follows_abstract_origin_of_out_of_line_copy() {
        let dir = tempfile::tempdir().unwrap();
        let prog = compile(dir.path(), "prog", &["-g", "-O2"]);
        let helper = [("left", Kind::Signed(4)), ("right", Kind::Signed(1))];
        assert_eq!(
            prototype(&prog, "helper").unwrap(),
            proto(&helper, Kind::Signed(4))
        );
    }

    #[test]
    fn no_debug_info_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let plain = compile(dir.path(), "plain", &["-O0"]);
        assert_eq!(prototype(&plain, "target").unwrap(), None);
        let stripped = compile(dir.path(), "stripped", &["-g", "-O0"]);
        let status = Command::new("strip").arg("-g").arg(&stripped).status();
        assert!(status.expect("strip is needed").success());
        assert_eq!(prototype(&stripped, "target").unwrap(), None);
    }

    #[test]
    fn not_elf_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        let err = prototype(&script, "target").unwrap_err();
        assert!(matches!(err, Error::Elf { .. }), "{err:?}");
        assert!(err.to_string().starts_with("cannot parse "), "{err}");
        assert!(!err.hints().is_empty());
        let err = prototype(&dir.path().join("absent"), "target").unwrap_err();
        assert!(matches!(err, Error::Input(_)), "{err:?}");
    }

    /// Structs for member walks. x86-64 layout of `struct outer`: tag 0, inner 8 (a 8, b 16),
    /// the anonymous union 24, the anonymous struct 28 (lo 28, hi 30), the bitfields 32,
    /// next 40, name 48.
    const MEMBERS: &str = r#"
struct point { int x, y; };
struct inner { char a; long b; };
struct outer {
    int tag;
    struct inner inner;
    union { int as_int; float as_float; };
    struct { short lo, hi; };
    unsigned flag : 1, mode : 3;
    struct point *next;
    const char *name;
    char label[8];
    struct outer *self;
    struct opaque *hidden;
};
typedef struct outer outer_t;
struct opaque;
/* A function with a symbol but no DWARF subprogram. */
__asm__(".text\n.globl bare\n.type bare, @function\nbare:\n\tret\n");
int where_y(struct point *where) { return where->y; }
long walk(const outer_t *p, int n, struct opaque *o, struct point by_value) {
    return p->inner.b + n + p->as_int + p->hi + p->flag + p->next->x + p->name[0] + (o != 0)
        + by_value.x;
}
int main(void) {
    struct point pt = { 1, 2 };
    struct outer out = { 0 };
    out.next = &pt;
    out.name = "x";
    return where_y(&pt) + (int)walk(&out, 1, 0, pt);
}
"#;

    fn at(arg: usize, offset: u32, kind: Kind) -> Member {
        Member::at(arg, offset, kind)
    }

    #[test]
    fn resolves_members_in_every_dwarf_version() {
        let dir = tempfile::tempdir().unwrap();
        // DWARF 2 writes member locations as `DW_OP_plus_uconst n`, and DWARF 2 to 4 bitfields
        // with DW_AT_bit_offset; -O2 leaves the parameters to the abstract origin.
        for (name, flags) in [
            ("v5", &["-g", "-O0"][..]),
            ("v4", &["-gdwarf-4", "-O0"]),
            ("v2", &["-gdwarf-2", "-O0"]),
            ("o2", &["-g", "-O2"]),
        ] {
            let prog = compile_source(dir.path(), name, MEMBERS, flags);
            let walk = |members: &[&str]| member(&prog, "walk", 0, members);
            assert_eq!(
                member(&prog, "where_y", 0, &["y"]).unwrap(),
                at(0, 4, Kind::Signed(4)),
                "{name}"
            );
            assert_eq!(walk(&["inner", "b"]).unwrap(), at(0, 16, Kind::Signed(8)));
            assert_eq!(walk(&["inner", "a"]).unwrap(), at(0, 8, Kind::Signed(1)));
            assert_eq!(walk(&["as_float"]).unwrap(), at(0, 24, other("float")));
            assert_eq!(walk(&["as_int"]).unwrap(), at(0, 24, Kind::Signed(4)));
            assert_eq!(walk(&["hi"]).unwrap(), at(0, 30, Kind::Signed(2)));
            assert_eq!(walk(&["next"]).unwrap(), at(0, 40, pointer("struct point")));
            assert_eq!(walk(&["name"]).unwrap(), at(0, 48, Kind::Str));
            // Pointers on the way are loaded; a char array is a string in place.
            let chained = |derefs: Vec<u32>, m: Member| Member { derefs, ..m };
            let next_y = chained(vec![40], at(0, 4, Kind::Signed(4)));
            assert_eq!(walk(&["next", "y"]).unwrap(), next_y, "{name}");
            let label = Member {
                in_place: true,
                ..at(0, 56, Kind::Str)
            };
            assert_eq!(walk(&["label"]).unwrap(), label, "{name}");
            let far = walk(&["self", "self", "self", "label"]).unwrap();
            assert_eq!(far, chained(vec![64, 64, 64], label.clone()), "{name}");
            assert_eq!(walk(&["inner"]).unwrap(), at(0, 8, other("struct inner")));
            assert_eq!(walk(&[]).unwrap(), at(0, 0, other("struct outer")));
            // DWARF 5 puts `flag` at bit 256, a byte boundary: its DW_AT_bit_size still tells.
            for field in ["flag", "mode"] {
                let err = walk(&[field]).unwrap_err();
                assert!(
                    matches!(&err, Error::Member(MemberError::Bitfield { strukt, member })
                        if strukt == "outer_t" && member == field),
                    "{name}: {err:?}"
                );
            }
        }
    }

    #[test]
    fn refuses_member_walks_it_cannot_make() {
        let dir = tempfile::tempdir().unwrap();
        let prog = compile_source(dir.path(), "prog", MEMBERS, &["-g", "-O0"]);
        let walk = |arg, members: &[&str]| member(&prog, "walk", arg, members).unwrap_err();

        let err = walk(0, &["self", "self", "self", "self", "tag"]);
        assert_eq!(
            err.to_string(),
            "'p->self->self->self->self' is struct outer *: a member read loads at most 3 \
             pointers after the parameter"
        );
        assert!(
            matches!(err, Error::Member(MemberError::TooDeep { max: 3, .. })),
            "{err:?}"
        );
        let err = walk(0, &["hidden", "x"]);
        assert!(
            matches!(&err, Error::Member(MemberError::NotAStruct { member, kind })
                if member == "p->hidden"
                    && kind == "struct opaque * (only declared: the DWARF has no layout for it)"),
            "{err:?}"
        );
        let err = walk(0, &["name", "x"]);
        assert!(
            matches!(&err, Error::Member(MemberError::NotAStruct { member, kind })
                if member == "p->name" && kind == "char *"),
            "{err:?}"
        );
        let err = walk(0, &["tag", "x"]);
        assert!(
            matches!(&err, Error::Member(MemberError::NotAStruct { member, kind }) if member == "p->tag" && kind == "s32"),
            "{err:?}"
        );
        let err = walk(0, &["inner", "c"]);
        assert_eq!(err.to_string(), "struct inner has no member 'c'");

        let err = walk(0, &["nope"]);
        assert_eq!(err.to_string(), "outer_t has no member 'nope'");
        let members = "tag, inner, as_int, as_float, lo, hi, flag, mode, next, name, label, self, \
                       hidden";
        assert_eq!(err.hints(), [format!("members of outer_t: {members}")]);

        let err = walk(4, &["tag"]);
        assert_eq!(err.to_string(), "'walk' has no parameter 4 (it takes 4)");
        assert_eq!(err.hints(), ["its parameters: p, n, o, by_value"]);

        let err = walk(1, &["tag"]);
        assert_eq!(
            err.to_string(),
            "parameter 'n' is s32, not a pointer to a struct or union"
        );
        assert_eq!(err.hints(), ["print 'n' itself"]);
        let err = walk(3, &["x"]);
        assert!(
            matches!(&err, Error::Member(MemberError::NotAStructPointer { kind, .. }) if kind == "struct point"),
            "{err:?}"
        );
        let err = walk(2, &["x"]);
        assert!(
            matches!(&err, Error::Member(MemberError::NotAStructPointer { kind, .. })
                if kind == "struct opaque * (only declared: the DWARF has no layout for it)"),
            "{err:?}"
        );
        let err = member(&prog, "main", 0, &["x"]).unwrap_err();
        assert!(
            matches!(err, Error::Member(MemberError::NoParam { ref params, .. }) if params.is_empty())
        );
    }

    #[test]
    fn member_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let prog = compile_source(dir.path(), "prog", MEMBERS, &["-g", "-O0"]);
        let err = member(&prog, "absent", 0, &["x"]).unwrap_err();
        assert!(matches!(err, Error::NoSymbol { .. }), "{err:?}");
        assert!(
            err.to_string().starts_with("no symbol 'absent' in "),
            "{err}"
        );
        let err = member(&prog, "walk.isra.0", 0, &["x"]).unwrap_err();
        assert!(matches!(&err, Error::CompilerClone { original, .. } if original == "walk"));
        assert_eq!(err.hints(), ["trace 'walk' itself"]);
        assert_eq!(prototype(&prog, "walk.isra.0").unwrap(), None);

        let plain = compile_source(dir.path(), "plain", MEMBERS, &["-O0"]);
        let err = member(&plain, "walk", 0, &["tag"]).unwrap_err();
        assert!(matches!(err, Error::NoDebugInfo { .. }), "{err:?}");
        assert!(!err.hints().is_empty());
        assert_eq!(prototype(&plain, "walk").unwrap(), None);

        let err = member(&prog, "bare", 0, &["x"]).unwrap_err();
        assert!(matches!(err, Error::NoFunction { .. }), "{err:?}");
        assert_eq!(prototype(&prog, "bare").unwrap(), None);
    }
}
