//! The typed parameters of a user-space function, read from its ELF file's DWARF debug info, so
//! a uprobe can print `func(a=1, name="x")` instead of raw argument registers.

use std::borrow::Cow;
use std::path::Path;

use addr2line::gimli::{self, AttributeValue, DwAt, DwTag, EndianSlice, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSymbol};

use super::params::{Kind, Param, Prototype};

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

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {path} as ELF: {reason}")]
    Elf { path: String, reason: String },
    #[error("cannot read the DWARF debug info of {path}: {reason}")]
    Dwarf { path: String, reason: String },
}

impl Error {
    /// Concrete next steps, printed as `hint:` lines under the error.
    pub fn hints(&self) -> Vec<String> {
        const FALLBACK: &str = "without debug info, arguments print as arg0..arg5";
        match self {
            Error::Read { .. } => Vec::new(),
            Error::Elf { path, .. } => {
                vec![format!("uprobes need an ELF file; check `file {path}`")]
            }
            Error::Dwarf { path, .. } => vec![
                format!("check `readelf --debug-dump=info {path}`, or rebuild it with -g"),
                format!("`strip -g {path}` drops the debug info; {FALLBACK}"),
            ],
        }
    }
}

/// The prototype of `function` (its linkage or plain name, as the symbol table has it; Rust
/// mangled names may be matched by DW_AT_linkage_name) from `path`'s DWARF. Ok(None) when the
/// file has no debug info or no subprogram of that name (the caller then falls back to
/// arg0..arg5), and also when the symbol table lacks `function` or it is a GCC clone.
pub fn prototype(path: &Path, function: &str) -> Result<Option<Prototype>, Error> {
    let path_str = || path.display().to_string();
    let data = std::fs::read(path).map_err(|source| Error::Read {
        path: path_str(),
        source,
    })?;
    let elf_error = |e: object::Error| Error::Elf {
        path: path_str(),
        reason: e.to_string(),
    };
    let file = object::File::parse(&*data).map_err(elf_error)?;
    // GCC's `.isra.N`, `.constprop.N` and `.part.N` clones take other arguments than the
    // source says, though their DIEs name the original through DW_AT_abstract_origin.
    if [".isra.", ".constprop.", ".part."]
        .iter()
        .any(|c| function.contains(c))
    {
        return Ok(None);
    }
    // The symbol's address picks the DIE of the code a uprobe hits: a name alone may also be a
    // static function of another file. Debug info in a separate file (.gnu_debuglink, split
    // DWARF) is not looked up.
    let symbol = (file.symbols().chain(file.dynamic_symbols()))
        .find(|s| s.name() == Ok(function) && s.address() != 0);
    let (Some(symbol), Some(_)) = (symbol, file.section_by_name(".debug_info")) else {
        return Ok(None);
    };
    let dwarf_error = |e: &dyn std::fmt::Display| Error::Dwarf {
        path: path_str(),
        reason: e.to_string(),
    };
    // Compressed sections (SHF_COMPRESSED, .zdebug_*) inflate here: addr2line's `loader`
    // feature turns on object's `compression`, which cargo unifies with our object features.
    let sections = gimli::DwarfSections::load(|id| match file.section_by_name(id.name()) {
        Some(section) if SECTIONS.contains(&id) => section.uncompressed_data(),
        _ => Ok(Cow::Borrowed(&[][..])),
    });
    let sections = sections.map_err(|e| dwarf_error(&e))?;
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let find = || {
        let debug = Debug::new(sections.borrow(|s| EndianSlice::new(s, endian)))?;
        let function = debug.find(function, symbol.address())?;
        function.map(|die| debug.prototype(die)).transpose()
    };
    find().map_err(|e| dwarf_error(&e))
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
        // A concrete out-of-line instance may list no parameters when its abstract instance
        // (or declaration) does.
        let (mut params, mut at) = (Vec::new(), Some(function));
        for _ in 0..MAX_HOPS {
            let Some(die) = at.filter(|_| params.is_empty()) else {
                break;
            };
            params = self.params(die)?;
            at = self.origin(die)?;
        }
        let ret = match self.type_of(function)? {
            Ty::Void => Kind::Void,
            ty => self.kind(ty)?,
        };
        Ok(Prototype { params, ret })
    }

    /// The DW_TAG_formal_parameter children of `function`, in order. Artificial ones (C++
    /// `this`) are kept: they take an argument register like any other.
    fn params(&self, function: Die) -> gimli::Result<Vec<Param>> {
        let mut params = Vec::new();
        for die in self.children(function, gimli::DW_TAG_formal_parameter)? {
            let name = self.string(die, gimli::DW_AT_name)?;
            let name = name.unwrap_or_else(|| format!("arg{}", params.len()));
            let kind = self.kind(self.type_of(die)?)?;
            params.push(Param { name, kind });
        }
        Ok(params)
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
        let (source, out) = (dir.join("prog.c"), dir.join(name));
        std::fs::write(&source, SOURCE).unwrap();
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
        assert!(matches!(err, Error::Read { .. }), "{err:?}");
    }
}
