//! Tracepoint `format` files: parse a tracepoint's record layout and decode raw records with it.
//!
//! The kernel describes every tracepoint record in `events/CATEGORY/NAME/format` under tracefs
//! (Documentation/trace/events.rst, "Event formats"). Each `field:` line gives a C declaration,
//! an offset, a size and a signedness. Those numbers alone mislead: syscall tracepoints store
//! every argument in an 8-byte, `signed:0` slot (`field:int dfd; offset:16; size:8; signed:0;`),
//! so the C type decides how many of those bytes are the value and whether it is signed.

use std::fmt;

/// One tracepoint's record layout, as its `format` file states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    /// The tracepoint name without its category (`sys_enter_openat`).
    pub name: String,
    /// The id that `PERF_TYPE_TRACEPOINT` wants in `perf_event_attr.config`.
    pub id: u64,
    /// The fields every record starts with (`common_type`, `common_pid`, ...).
    pub common: Vec<Field>,
    /// The tracepoint's own fields, `__syscall_nr` included.
    pub fields: Vec<Field>,
    /// The names the print format gives a field's values (`__print_symbolic(REC->vec, { 0,
    /// "HI" }, ...)`), by field.
    pub symbolic: Vec<(String, Vec<(u64, String)>)>,
    /// Tables of `__print_symbolic` whose values are enumerators the kernel left unresolved
    /// (`{ TCP_SYN_SENT, "TCP_SYN_SENT" }`, no `TRACE_DEFINE_ENUM`), by field: the value's
    /// text, and its name. [`Format::resolve_enumerators`] makes them `symbolic` tables.
    pub enumerated: Vec<(String, Vec<(String, String)>)>,
    /// The fields the print format shows as IP addresses (`%pI4`, `%pI6c` of `REC->saddr`),
    /// with the address's length: 4 or 16 bytes.
    pub addresses: Vec<(String, usize)>,
}

/// One `field:` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The declared type without the name, array bounds kept: `const char *`, `char[16]`,
    /// `__data_loc char[]`, `unsigned long[6]`.
    pub c_type: String,
    pub offset: usize,
    pub size: usize,
    /// `signed:` as the file states it. [`Field::kind`] holds the signedness used to decode,
    /// which the C type overrides when it is known.
    pub signed: bool,
    pub kind: FieldKind,
}

/// How the bytes of a field are decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer whose value is the low `bytes` bytes of the `size`-byte slot.
    Int { bytes: usize, signed: bool },
    /// A kernel or user address, shown in hex.
    Pointer,
    /// `char name[len]`: a string up to the first NUL. `len == 0` is a flexible `char buf[]`.
    String { len: usize },
    /// `__data_loc TYPE[] name` (or `__rel_loc`): a u32 locating a variable-length array of
    /// `elem`-byte elements elsewhere in the record. `char` elements make a string.
    DataLoc { elem: usize },
    /// `TYPE name[len]` with `elem_bytes`-byte elements. `len == 0` is a flexible array.
    Array {
        elem_bytes: usize,
        len: usize,
        signed: bool,
    },
    /// Anything else (a struct by value, an odd size): shown as hex bytes.
    Other,
}

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Uint(u64),
    /// Pointers, and integers that hold bits (`flags`, `*mask*`), where hex reads better.
    Hex(u64),
    Str(String),
    /// The first bytes of a longer string (`--strlen`): text `"abc"...`, as strace marks
    /// one; JSON names it in `truncated`.
    Cut(String),
    /// An array's elements not shown (past [`tracer_common::ARRAY_ELEMENTS`], or no room):
    /// text `...`; left out of JSON arrays, whose name goes in `truncated`.
    Etc,
    /// Printed as it is, without quotes: a symbol's place (`work+0x12`), `-ENOENT (-2)`.
    Word(String),
    /// A C `bool` (`_Bool`): text `true`/`false`, a JSON boolean.
    Bool(bool),
    /// A number with a name (an enum constant): text the name, JSON the number beside it
    /// (`{"value": 5, "text": "GREEN"}`).
    Named(i64, String),
    Array(Vec<Value>),
    /// The field lies (partly) beyond the captured bytes, or its length is unknowable.
    Missing,
}

/// A `format` file that does not read as one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("format line {line}: {reason}: `{text}`")]
    Line {
        line: usize,
        text: String,
        reason: String,
    },
    #[error("format has no `{key}` line")]
    MissingKey { key: &'static str },
}

/// Parses the text of a tracefs `format` file.
pub fn parse(text: &str) -> Result<Format, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut in_fields = false;
    let mut saw_separator = false;
    let mut common = Vec::new();
    let mut fields = Vec::new();
    let (mut symbolic, mut enumerated) = (Vec::new(), Vec::new());
    let mut addresses = Vec::new();

    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let fail = |reason: &str| FormatError::Line {
            line: index + 1,
            text: line.to_string(),
            reason: reason.to_string(),
        };
        if line.starts_with("print fmt:") {
            // The print format is a C expression for the kernel's own printer; we render
            // values ourselves, and take from it only the names it gives values and the
            // fields it shows as addresses.
            (symbolic, enumerated) = print_symbolic(line);
            addresses = print_addresses(line);
            break;
        }
        if !in_fields {
            if line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or_else(|| fail("expected `key: value`"))?;
            match key.trim() {
                "name" => name = Some(value.trim().to_string()),
                "ID" => {
                    let value = value.trim();
                    id = Some(
                        value
                            .parse::<u64>()
                            .map_err(|_| fail("ID is not a number"))?,
                    );
                }
                "format" => in_fields = true,
                _ => return Err(fail("unknown header line (expected name, ID or format)")),
            }
            continue;
        }
        if line.is_empty() {
            // The kernel prints the common fields, a blank line, then the event's own fields;
            // libtraceevent splits them the same way.
            if !common.is_empty() {
                saw_separator = true;
            }
            continue;
        }
        let field = parse_field(line).map_err(|reason| fail(&reason))?;
        if saw_separator {
            fields.push(field);
        } else {
            common.push(field);
        }
    }

    if !saw_separator {
        // No blank line: fall back on the `common_` prefix every common field carries.
        let all = std::mem::take(&mut common);
        (common, fields) = all.into_iter().partition(|f| f.name.starts_with("common_"));
    }
    Ok(Format {
        name: name.ok_or(FormatError::MissingKey { key: "name" })?,
        id: id.ok_or(FormatError::MissingKey { key: "ID" })?,
        common,
        fields,
        symbolic,
        enumerated,
        addresses,
    })
}

/// The fields a print format line shows as IP addresses: each `%pI4`/`%pI6`/`%pI6c`
/// conversion whose argument is a plain `REC->FIELD`, with the address's length.
fn print_addresses(line: &str) -> Vec<(String, usize)> {
    let Some(rest) = line.strip_prefix("print fmt:").map(str::trim_start) else {
        return Vec::new();
    };
    let Some(body) = rest.strip_prefix('"') else {
        return Vec::new();
    };
    let Some(end) = body.find('"') else {
        return Vec::new();
    };
    let (text, args) = (&body[..end], &body[end + 1..]);
    // Each conversion in order: the address length it shows, or 0.
    let mut conversions = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            continue;
        }
        // Flags, width, precision and length, then the conversion.
        let mut conversion = None;
        for c in chars.by_ref() {
            if c.is_ascii_alphabetic() && !"hlLqjzt".contains(c) {
                conversion = Some(c);
                break;
            }
        }
        let len = match conversion {
            Some('p') => {
                let ext: String = (chars.clone())
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                match ext.as_str() {
                    e if e.starts_with("I4") || e.starts_with("i4") => 4,
                    e if e.starts_with("I6") || e.starts_with("i6") => 16,
                    _ => 0,
                }
            }
            _ => 0,
        };
        conversions.push(len);
    }
    // The arguments, split at the commas outside parentheses and braces.
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in args.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(args[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(args[from..].trim());
    // The first part is what precedes the first comma: nothing.
    (conversions.iter().zip(parts.iter().skip(1)))
        .filter(|(&len, _)| len != 0)
        .filter_map(|(&len, arg)| Some((arg.strip_prefix("REC->")?.to_string(), len)))
        .filter(|(name, _)| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect()
}
/// A `__print_symbolic` table: by field, each value's text and its name.
type TextTable = (String, Vec<(String, String)>);

/// The value names of each `__print_symbolic(REC->FIELD, { VALUE, "NAME" }, ...)` of a print
/// format line: tables whose values are numbers, and those with an enumerator among their
/// values (as text, for [`Format::resolve_enumerators`]); a table that does not parse (a
/// value that is an expression) is left out.
#[allow(clippy::type_complexity)]
fn print_symbolic(line: &str) -> (Vec<(String, Vec<(u64, String)>)>, Vec<TextTable>) {
    let (mut numbers, mut enumerated) = (Vec::new(), Vec::new());
    for (_, rest) in line
        .match_indices("__print_symbolic(REC->")
        .map(|(at, m)| line.split_at(at + m.len()))
    {
        let Some((field, mut rest)) = rest.split_once(',') else {
            continue;
        };
        let mut names = Vec::new();
        let whole = loop {
            let trimmed = rest.trim_start();
            if trimmed.starts_with(')') {
                break true;
            }
            let Some(pair) = trimmed.strip_prefix('{') else {
                break false;
            };
            let Some((inside, after)) = pair.split_once('}') else {
                break false;
            };
            let Some((value, name)) = inside.split_once(',') else {
                break false;
            };
            let value = value.trim();
            let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            let name = name
                .trim()
                .strip_prefix('"')
                .and_then(|n| n.strip_suffix('"'));
            let (false, Some(name)) = (value.is_empty() || !value.chars().all(word), name) else {
                break false;
            };
            names.push((value.to_string(), name.to_string()));
            rest = after.trim_start().strip_prefix(',').unwrap_or(after);
        };
        if !whole || names.is_empty() {
            continue;
        }
        let field = field.trim().to_string();
        let values: Option<Vec<(u64, String)>> = (names.iter())
            .map(|(value, name)| Some((number(value)?, name.clone())))
            .collect();
        match values {
            Some(values) => numbers.push((field, values)),
            None => enumerated.push((field, names)),
        }
    }
    (numbers, enumerated)
}

/// A C integer constant of a print format: decimal or `0x` hex.
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}
/// Parses one trimmed `field:DECL; offset:N; size:N; signed:N;` line.
fn parse_field(line: &str) -> Result<Field, String> {
    // Very old kernels mark some fields `field special:`; the rest of the line is the same.
    let rest = line
        .strip_prefix("field:")
        .or_else(|| line.strip_prefix("field special:"))
        .ok_or("expected `field:` or `print fmt:`")?;
    let mut parts = rest.split(';');
    let decl = parts.next().unwrap_or_default().trim();
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once(':')
            .ok_or(format!("expected `key:value`, found `{part}`"))?;
        let number = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{} is not a number", key.trim()))
        };
        match key.trim() {
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = Some(number()? != 0),
            // Newer kernels may add attributes; the layout only needs these three.
            _ => {}
        }
    }
    let offset = offset.ok_or("no offset")?;
    let size = size.ok_or("no size")?;
    // Kernels before 2.6.33 printed no `signed:`; the C type decides there.
    let signed = signed.unwrap_or(false);
    let (ty, name, dims) = split_decl(decl)?;
    let kind = kind_of(&ty, dims.as_deref(), size, signed);
    let c_type = match &dims {
        Some(dims) => format!("{ty}{dims}"),
        None => ty,
    };
    Ok(Field {
        name,
        c_type,
        offset,
        size,
        signed,
        kind,
    })
}

/// Splits `const char * filename` into (`const char *`, `filename`, None) and
/// `unsigned long args[6]` into (`unsigned long`, `args`, Some(`[6]`)).
fn split_decl(decl: &str) -> Result<(String, String, Option<String>), String> {
    let (ty, last) = decl
        .rsplit_once(char::is_whitespace)
        .ok_or("expected `TYPE NAME`")?;
    // `void *p` (no space after the star) still names `p`.
    let stars = last.len() - last.trim_start_matches('*').len();
    let ty = match stars {
        0 => ty.to_string(),
        _ => format!("{} {}", ty.trim(), &last[..stars]),
    };
    let last = &last[stars..];
    let (name, dims) = match last.find('[') {
        Some(at) => (&last[..at], Some(last[at..].to_string())),
        None => (last, None),
    };
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident(name) {
        return Err(format!("`{name}` is not a field name"));
    }
    let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    if ty.is_empty() {
        return Err("no type".into());
    }
    Ok((ty, name.to_string(), dims))
}

/// What a C type says about its values, before the slot size is considered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// The type fixes the width, whatever the slot size.
    Fixed {
        bytes: usize,
        signed: bool,
    },
    /// `long` and its typedefs: as wide as the kernel's long, which the slot size tells.
    Long {
        signed: bool,
    },
    /// Plain `char`: its signedness is a compiler flag (the kernel builds with
    /// `-funsigned-char` since 6.2), so `signed:` decides.
    Char,
    /// An enum: at most an int wide; its signedness depends on its values, so `signed:` decides.
    Enum,
    Pointer,
    /// A struct or union by value.
    Aggregate,
    /// A typedef we do not know: `size:` and `signed:` decide.
    Unknown,
}

/// Words that do not change how a value is decoded.
const QUALIFIERS: [&str; 6] = [
    "const", "volatile", "__user", "__rcu", "__iomem", "__percpu",
];

fn classify(ty: &str) -> Class {
    if ty.contains('*') {
        return Class::Pointer;
    }
    let words: Vec<&str> = ty
        .split_whitespace()
        .filter(|w| !QUALIFIERS.contains(w))
        .collect();
    match words.first() {
        None => return Class::Unknown,
        Some(&"struct") | Some(&"union") => return Class::Aggregate,
        Some(&"enum") => return Class::Enum,
        Some(_) => {}
    }
    if words.iter().all(|w| {
        matches!(
            *w,
            "signed" | "unsigned" | "char" | "short" | "int" | "long"
        )
    }) {
        let unsigned = words.contains(&"unsigned");
        let longs = words.iter().filter(|w| **w == "long").count();
        return if words.contains(&"char") {
            match (unsigned, words.contains(&"signed")) {
                (true, _) => fixed(1, false),
                (false, true) => fixed(1, true),
                (false, false) => Class::Char,
            }
        } else if words.contains(&"short") {
            fixed(2, !unsigned)
        } else if longs >= 2 {
            fixed(8, !unsigned)
        } else if longs == 1 {
            Class::Long { signed: !unsigned }
        } else {
            fixed(4, !unsigned)
        };
    }
    if words.len() != 1 {
        return Class::Unknown;
    }
    // Kernel typedefs that appear in tracepoints, from include/linux/types.h and
    // include/uapi/asm-generic/posix_types.h.
    match words[0] {
        "bool" | "_Bool" | "u8" | "__u8" | "uint8_t" => fixed(1, false),
        "s8" | "__s8" | "int8_t" => fixed(1, true),
        "u16" | "__u16" | "uint16_t" | "umode_t" => fixed(2, false),
        "s16" | "__s16" | "int16_t" => fixed(2, true),
        "u32" | "__u32" | "uint32_t" | "uint" | "uid_t" | "gid_t" | "qid_t" | "dev_t" | "gfp_t"
        | "fmode_t" | "blk_opf_t" | "errseq_t" => fixed(4, false),
        "s32" | "__s32" | "int32_t" | "pid_t" | "clockid_t" | "key_t" | "mqd_t" | "timer_t"
        | "key_serial_t" | "rwf_t" => fixed(4, true),
        "u64" | "__u64" | "uint64_t" | "sector_t" | "blkcnt_t" => fixed(8, false),
        "s64" | "__s64" | "int64_t" | "loff_t" | "time64_t" | "ktime_t" => fixed(8, true),
        "size_t" | "ino_t" | "aio_context_t" | "uintptr_t" | "vm_flags_t" | "__kernel_ulong_t" => {
            Class::Long { signed: false }
        }
        "ssize_t" | "off_t" | "ptrdiff_t" | "intptr_t" | "__kernel_long_t" => {
            Class::Long { signed: true }
        }
        // Pointer typedefs: capget(2)'s arguments, file lock owners, initcall functions.
        "cap_user_header_t" | "cap_user_data_t" | "fl_owner_t" | "initcall_t" => Class::Pointer,
        _ => Class::Unknown,
    }
}

/// Shorthand for [`Class::Fixed`].
const fn fixed(bytes: usize, signed: bool) -> Class {
    Class::Fixed { bytes, signed }
}

/// Whether `size` is a width we can read as one integer.
fn is_width(size: usize) -> bool {
    matches!(size, 1 | 2 | 4 | 8)
}

/// The integer layout of one `size`-byte value of class `class`, or None if it is not one.
fn int_of(class: Class, size: usize, signed_flag: bool) -> Option<(usize, bool)> {
    if !is_width(size) {
        return None;
    }
    match class {
        // A type narrower than its slot is the low bytes (syscall arguments); a type wider
        // than its slot cannot be, so the slot wins.
        Class::Fixed { bytes, signed } => Some((bytes.min(size), signed)),
        Class::Long { signed } => Some((size, signed)),
        Class::Char => Some((1, signed_flag)),
        Class::Enum => Some((size.min(4), signed_flag)),
        Class::Unknown => Some((size, signed_flag)),
        Class::Pointer | Class::Aggregate => None,
    }
}

fn kind_of(ty: &str, dims: Option<&str>, size: usize, signed: bool) -> FieldKind {
    if let Some(elem_ty) = ty
        .strip_prefix("__data_loc ")
        .or_else(|| ty.strip_prefix("__rel_loc "))
    {
        if size != 4 {
            return FieldKind::Other;
        }
        let elem_ty = elem_ty.trim_end_matches("[]").trim();
        let elem = elem_width(classify(elem_ty), elem_ty);
        return FieldKind::DataLoc { elem };
    }
    let class = classify(ty);
    let Some(dims) = dims else {
        return match class {
            Class::Pointer if is_width(size) => FieldKind::Pointer,
            _ => match int_of(class, size, signed) {
                Some((bytes, signed)) => FieldKind::Int { bytes, signed },
                None => FieldKind::Other,
            },
        };
    };
    // `[6]`, `[]` (flexible: size 0), `[TASK_COMM_LEN]` (old kernels), `[2][4]`.
    let flexible = size == 0 || dims.contains("[]");
    let len = dims
        .split(']')
        .map(|d| d.trim_start_matches('[').trim())
        .filter(|d| !d.is_empty())
        .try_fold(1usize, |len, d| {
            d.parse::<usize>().ok().and_then(|n| len.checked_mul(n))
        });
    if class == Class::Char {
        return FieldKind::String {
            len: if flexible { 0 } else { size },
        };
    }
    if flexible {
        return FieldKind::Array {
            elem_bytes: elem_width(class, ty),
            len: 0,
            signed: is_signed(class),
        };
    }
    // A symbolic bound leaves the length to the element type's width.
    let len = match (len, class) {
        (Some(len), _) if len > 0 => len,
        (_, Class::Fixed { bytes, .. }) => size / bytes,
        _ => return FieldKind::Other,
    };
    if !size.is_multiple_of(len) {
        return FieldKind::Other;
    }
    let elem_bytes = size / len;
    if class == Class::Pointer {
        return match is_width(elem_bytes) {
            true => FieldKind::Array {
                elem_bytes,
                len,
                signed: false,
            },
            false => FieldKind::Other,
        };
    }
    match int_of(class, elem_bytes, signed) {
        Some((bytes, signed)) if bytes == elem_bytes => FieldKind::Array {
            elem_bytes,
            len,
            signed,
        },
        _ => FieldKind::Other,
    }
}

/// The width of one element of type `ty` where no field size tells it (`__data_loc`, `[]`).
fn elem_width(class: Class, ty: &str) -> usize {
    // The tracer runs on the kernel whose records it reads, so its long is the kernel's.
    let long = std::mem::size_of::<std::ffi::c_ulong>();
    match class {
        Class::Fixed { bytes, .. } => bytes,
        Class::Long { .. } | Class::Pointer => long,
        // cpumask_t is a bitmap of unsigned longs.
        Class::Unknown if ty == "cpumask_t" => long,
        Class::Enum => 4,
        Class::Char | Class::Aggregate | Class::Unknown => 1,
    }
}

/// Whether the type alone says its values are signed.
fn is_signed(class: Class) -> bool {
    matches!(
        class,
        Class::Fixed { signed: true, .. } | Class::Long { signed: true }
    )
}

/// Integers with these names hold bits, which read better in hex.
pub(crate) fn shows_hex(name: &str) -> bool {
    name.ends_with("flags") || name.contains("mask")
}

/// `size` bytes at `offset`, if all of them were captured.
fn bytes_at(record: &[u8], offset: usize, size: usize) -> Option<&[u8]> {
    record.get(offset..offset.checked_add(size)?)
}

/// A 1, 2, 4 or 8-byte integer in the kernel's (this machine's) byte order, zero-extended.
fn read_uint(record: &[u8], offset: usize, size: usize) -> Option<u64> {
    let b = bytes_at(record, offset, size)?;
    Some(match size {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes(b.try_into().ok()?)),
        4 => u64::from(u32::from_ne_bytes(b.try_into().ok()?)),
        8 => u64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// The value of the low `bytes` bytes of `raw`, in hex if `hex`.
fn int_value(raw: u64, bytes: usize, signed: bool, hex: bool) -> Value {
    let bits = (bytes.clamp(1, 8) * 8) as u32;
    let low = if bits == 64 {
        raw
    } else {
        raw & ((1u64 << bits) - 1)
    };
    if hex {
        Value::Hex(low)
    } else if signed {
        // Shift the sign bit to the top and back to sign-extend.
        Value::Int(((low << (64 - bits)) as i64) >> (64 - bits))
    } else {
        Value::Uint(low)
    }
}

/// The text up to the first NUL, with invalid UTF-8 replaced.
fn c_string(bytes: &[u8]) -> Value {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Value::Str(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

impl Field {
    /// Decodes this field from `record` (starting at `common_type`), which may be truncated.
    pub fn decode(&self, record: &[u8]) -> Value {
        self.try_decode(record).unwrap_or(Value::Missing)
    }

    fn try_decode(&self, record: &[u8]) -> Option<Value> {
        let hex = shows_hex(&self.name);
        match self.kind {
            FieldKind::Int { bytes, signed } => {
                let raw = read_uint(record, self.offset, self.size)?;
                Some(int_value(raw, bytes, signed, hex))
            }
            FieldKind::Pointer => read_uint(record, self.offset, self.size).map(Value::Hex),
            FieldKind::String { len: 0 } => {
                // A flexible `char buf[]` runs to its NUL; without one in the captured bytes
                // the end is unknown.
                let rest = record.get(self.offset..)?;
                rest.contains(&0).then(|| c_string(rest))
            }
            FieldKind::String { .. } => bytes_at(record, self.offset, self.size).map(c_string),
            FieldKind::DataLoc { elem } => {
                let loc = read_uint(record, self.offset, 4)?;
                let (len, at) = ((loc >> 16) as usize, (loc & 0xffff) as usize);
                // __rel_loc counts from the end of the field itself (include/trace/stages).
                let base = if self.c_type.starts_with("__rel_loc") {
                    self.offset.checked_add(4)?
                } else {
                    0
                };
                let data = bytes_at(record, base.checked_add(at)?, len)?;
                let elem_ty = self
                    .c_type
                    .split_once(' ')
                    .map_or("", |(_, t)| t)
                    .trim_end_matches("[]");
                let class = classify(elem_ty);
                if class == Class::Char {
                    return Some(c_string(data));
                }
                let (signed, hex) = (is_signed(class), hex || class == Class::Pointer);
                let values = data
                    .chunks_exact(elem.max(1))
                    .filter_map(|chunk| read_uint(chunk, 0, chunk.len()))
                    .map(|raw| int_value(raw, elem, signed, hex))
                    .collect();
                Some(Value::Array(values))
            }
            FieldKind::Array { len: 0, .. } => None,
            FieldKind::Array {
                elem_bytes,
                len,
                signed,
            } => {
                let data = bytes_at(record, self.offset, elem_bytes.checked_mul(len)?)?;
                let hex = hex || self.c_type.contains('*');
                let values = data
                    .chunks_exact(elem_bytes.max(1))
                    .map(|chunk| {
                        read_uint(chunk, 0, elem_bytes).map_or(Value::Missing, |raw| {
                            int_value(raw, elem_bytes, signed, hex)
                        })
                    })
                    .collect();
                Some(Value::Array(values))
            }
            FieldKind::Other => {
                let data = bytes_at(record, self.offset, self.size)?;
                if is_width(self.size) {
                    return read_uint(data, 0, self.size).map(Value::Hex);
                }
                Some(Value::Array(
                    data.iter().map(|&b| Value::Hex(u64::from(b))).collect(),
                ))
            }
        }
    }
}

impl Format {
    /// Makes each table of enumerator values a table of numbers, its enumerators valued by
    /// `value_of` (the kernel's BTF, [`super::btf::enumerator`]); a table with an enumerator
    /// `value_of` does not know stays as it is.
    pub fn resolve_enumerators(&mut self, value_of: impl Fn(&str) -> Option<u64>) {
        let value = |text: &str| number(text).or_else(|| value_of(text));
        self.enumerated.retain(|(field, names)| {
            let values: Option<Vec<(u64, String)>> = (names.iter())
                .map(|(text, name)| Some((value(text)?, name.clone())))
                .collect();
            match values {
                Some(values) => {
                    self.symbolic.push((field.clone(), values));
                    false
                }
                None => true,
            }
        });
    }

    /// Decodes the non-common fields from `record` (the tracepoint record starting at offset
    /// 0, i.e. `common_type` first). `record` may be shorter than the full record (BPF captures
    /// only a prefix): fields not wholly inside get [`Value::Missing`]. Never panics.
    pub fn decode(&self, record: &[u8]) -> Vec<(&str, Value)> {
        self.fields
            .iter()
            .map(|f| (f.name.as_str(), self.shown(f, f.decode(record))))
            .collect()
    }

    /// A field's value as the print format shows it: by the name its `__print_symbolic`
    /// gives the number (`TCP_ESTABLISHED`), as an IP address (`127.0.0.1`, `::1`), a device
    /// number as MAJOR:MINOR.
    fn shown(&self, f: &Field, value: Value) -> Value {
        let field = f.name.as_str();
        let number = match value {
            Value::Int(n) => Some(n as u64),
            Value::Uint(n) | Value::Hex(n) => Some(n),
            _ => None,
        };
        let names = self.symbolic.iter().find(|(f, _)| f == field);
        if let (Some(n), Some((_, names))) = (number, names) {
            if let Some((_, name)) = names.iter().find(|(v, _)| *v == n) {
                return Value::Named(n as i64, name.clone());
            }
        }
        // A device number by its major and minor, as /sys/dev names it (the kernel's dev_t:
        // 20 bits of minor); its print format shows the same two numbers.
        if let (Some(n), "dev_t") = (number, f.c_type.as_str()) {
            return Value::Word(format!("{}:{}", n >> 20, n & 0xf_ffff));
        }
        let Some(&(_, len)) = self.addresses.iter().find(|(f, _)| f == field) else {
            return value;
        };
        let bytes: Option<Vec<u8>> = match &value {
            Value::Array(items) => (items.iter())
                .map(|v| match v {
                    Value::Uint(b) | Value::Hex(b) => u8::try_from(*b).ok(),
                    Value::Int(b) => u8::try_from(*b).ok(),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        match bytes {
            Some(b) if b.len() == len && len == 4 => {
                Value::Word(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string())
            }
            Some(b) if b.len() == len && len == 16 => {
                let octets: [u8; 16] = b.try_into().expect("16 bytes");
                Value::Word(std::net::Ipv6Addr::from(octets).to_string())
            }
            _ => value,
        }
    }

    /// A field by name, the tracepoint's own first, then the common ones (`filename` gives the
    /// offset the BPF side reads a user string pointer from).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .chain(&self.common)
            .find(|f| f.name == name)
    }

    /// Bytes up to the end of the last fixed-size field: how much to capture to decode all
    /// but `__data_loc` payloads and flexible arrays.
    pub fn fixed_size(&self) -> usize {
        self.common
            .iter()
            .chain(&self.fields)
            .map(|f| f.offset.saturating_add(f.size))
            .max()
            .unwrap_or(0)
    }
}

impl Value {
    /// Whether the value was cut short: a string at `--strlen`, an array with elements left
    /// out.
    pub fn is_cut(&self) -> bool {
        match self {
            Value::Cut(_) | Value::Etc => true,
            Value::Array(items) => items.iter().any(Value::is_cut),
            _ => false,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Cut(s) => write!(f, "{s:?}..."),
            Value::Etc => f.write_str("..."),
            Value::Word(w) => f.write_str(w),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Named(_, name) => f.write_str(name),
            Value::Array(values) => {
                f.write_str("[")?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Missing => f.write_str("?"),
        }
    }
}

/// `name=value name=value`, the way `perf script` and bpftrace print tracepoint arguments.
pub fn render(values: &[(&str, Value)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in values.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(name);
        out.push('=');
        out.push_str(&value.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_the_fields_the_print_format_shows_as_ip() {
        let line = r#"print fmt: "family=%s sport=%hu saddr=%pI4 daddr=%pI4 v6=%pI6c x=%p 100%% y=%pI4", __print_symbolic(REC->family, { 2, "AF_INET" }, { 10, "AF_INET6" }), REC->sport, REC->saddr, REC->daddr, REC->saddr_v6, REC->x, REC->y[0]"#;
        assert_eq!(
            print_addresses(line),
            [
                ("saddr".to_string(), 4),
                ("daddr".to_string(), 4),
                ("saddr_v6".to_string(), 16)
            ]
        );
        let format = parse(&format!(
            "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:__u16 family;\toffset:8;\tsize:2;\tsigned:0;\n\tfield:__u8 saddr[4];\toffset:12;\tsize:4;\tsigned:0;\n\tfield:__u8 saddr_v6[16];\toffset:16;\tsize:16;\tsigned:0;\n\n{line}\n"
        ))
        .unwrap();
        let mut record = vec![0u8; 32];
        record[8] = 10;
        record[12..16].copy_from_slice(&[127, 0, 0, 1]);
        record[31] = 1;
        assert_eq!(
            format.decode(&record),
            [
                ("family", Value::Named(10, "AF_INET6".into())),
                ("saddr", Value::Word("127.0.0.1".into())),
                ("saddr_v6", Value::Word("::1".into())),
            ]
        );
    }

    #[test]
    fn device_numbers_show_as_major_and_minor() {
        let format = parse(
            "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:unsigned int n;\toffset:12;\tsize:4;\tsigned:0;\n\nprint fmt: \"%d,%d %u\", ((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->n\n",
        )
        .unwrap();
        let mut record = vec![0u8; 16];
        let dev: u32 = 254 << 20 | 3;
        record[8..12].copy_from_slice(&dev.to_ne_bytes());
        record[12..16].copy_from_slice(&dev.to_ne_bytes());
        assert_eq!(
            format.decode(&record),
            [
                ("dev", Value::Word("254:3".into())),
                ("n", Value::Uint(u64::from(dev)))
            ]
        );
    }

    #[test]
    fn value_names_come_from_the_print_formats_symbolic_tables() {
        let line = r#"print fmt: "vec=%u [action=%s]", REC->vec, __print_symbolic(REC->vec, { 0, "HI" }, { 1, "TIMER" }, { 0x3, "NET_RX" }), __print_symbolic(REC->x, { y, "Y" }, { 7, "SEVEN" }), __print_symbolic(REC->z, { 1 << 2, "Z" })"#;
        let (numbers, enumerated) = print_symbolic(line);
        assert_eq!(
            numbers,
            [(
                "vec".to_string(),
                vec![
                    (0, "HI".to_string()),
                    (1, "TIMER".to_string()),
                    (3, "NET_RX".to_string())
                ]
            )]
        );
        // An enumerator is kept as text, its table apart; an expression leaves its table out.
        let text = |v: &str, n: &str| (v.to_string(), n.to_string());
        assert_eq!(
            enumerated,
            [("x".to_string(), vec![text("y", "Y"), text("7", "SEVEN")])]
        );
        let (numbers, enumerated) = print_symbolic("print fmt: \"%d\", REC->x");
        assert!(numbers.is_empty() && enumerated.is_empty());
    }

    /// tcp:tcp_retransmit_skb names its states by enumerators the kernel leaves to its own
    /// printer: they are valued from BTF (here, a stand-in), and a table with one unknown
    /// stays apart.
    #[test]
    fn enumerator_tables_are_valued_by_name() {
        let mut format = parse(OPENAT_ENTER).unwrap();
        let text = |v: &str, n: &str| (v.to_string(), n.to_string());
        format.enumerated = vec![
            (
                "state".into(),
                vec![text("TCP_SYN_SENT", "TCP_SYN_SENT"), text("9", "NINE")],
            ),
            ("other".into(), vec![text("NOT_KNOWN", "NOT_KNOWN")]),
        ];
        format.resolve_enumerators(|name| (name == "TCP_SYN_SENT").then_some(2));
        let state = (format.symbolic.iter()).find(|(field, _)| field == "state");
        let want = vec![(2, "TCP_SYN_SENT".to_string()), (9, "NINE".to_string())];
        assert_eq!(state.map(|(_, values)| values), Some(&want));
        assert_eq!(format.enumerated.len(), 1);
        assert_eq!(format.enumerated[0].0, "other");
    }

    /// `syscalls/sys_enter_openat/format` from a 6.x x86_64 kernel, tabs and all.
    const OPENAT_ENTER: &str = r#"name: sys_enter_openat
ID: 782
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:int dfd;	offset:16;	size:8;	signed:0;
	field:const char * filename;	offset:24;	size:8;	signed:0;
	field:int flags;	offset:32;	size:8;	signed:0;
	field:umode_t mode;	offset:40;	size:8;	signed:0;

print fmt: "dfd: 0x%08lx, filename: 0x%08lx, flags: 0x%08lx, mode: 0x%08lx", ((unsigned long)(REC->dfd)), ((unsigned long)(REC->filename)), ((unsigned long)(REC->flags)), ((unsigned long)(REC->mode))
"#;

    /// `syscalls/sys_exit_openat/format` from a 6.x x86_64 kernel, tabs and all.
    const OPENAT_EXIT: &str = r#"name: sys_exit_openat
ID: 781
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:long ret;	offset:16;	size:8;	signed:1;

print fmt: "0x%lx", REC->ret
"#;

    /// `sched/sched_switch/format` from a 6.x x86_64 kernel, tabs and all.
    const SCHED_SWITCH: &str = r#"name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio
"#;

    /// `sched/sched_process_exec/format` from a 6.x x86_64 kernel, tabs and all.
    const PROCESS_EXEC: &str = r#"name: sched_process_exec
ID: 365
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
	field:pid_t pid;	offset:12;	size:4;	signed:1;
	field:pid_t old_pid;	offset:16;	size:4;	signed:1;

print fmt: "filename=%s pid=%d old_pid=%d", __get_str(filename), REC->pid, REC->old_pid
"#;

    /// `raw_syscalls/sys_enter/format` from a 6.x x86_64 kernel, tabs and all.
    const RAW_SYS_ENTER: &str = r#"name: sys_enter
ID: 443
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:unsigned long args[6];	offset:16;	size:48;	signed:0;

print fmt: "NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]
"#;

    /// `ipi/ipi_send_cpumask/format` from a 6.x x86_64 kernel, tabs and all.
    const IPI_SEND_CPUMASK: &str = r#"name: ipi_send_cpumask
ID: 353
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc cpumask_t cpumask;	offset:8;	size:4;	signed:0;
	field:void * callsite;	offset:16;	size:8;	signed:0;
	field:void * callback;	offset:24;	size:8;	signed:0;

print fmt: "cpumask=%s callsite=%pS callback=%pS", __get_cpumask(cpumask), REC->callsite, REC->callback
"#;

    /// A zeroed record of `len` bytes.
    fn record(len: usize) -> Vec<u8> {
        vec![0; len]
    }

    fn put(record: &mut [u8], offset: usize, bytes: &[u8]) {
        record[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// A format file with the usual common fields and `lines` as the event's own.
    fn synthetic(lines: &str) -> String {
        let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                      \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";
        format!("name: synthetic\nID: 7\nformat:\n{common}\n{lines}\nprint fmt: \"\"\n")
    }

    fn kind(format: &Format, name: &str) -> FieldKind {
        format
            .field(name)
            .map(|f| f.kind)
            .unwrap_or_else(|| panic!("no field {name}"))
    }

    fn openat_record(dfd: u64) -> Vec<u8> {
        let mut rec = record(48);
        put(&mut rec, 0, &782u16.to_ne_bytes());
        put(&mut rec, 4, &4321i32.to_ne_bytes());
        put(&mut rec, 8, &257i32.to_ne_bytes());
        put(&mut rec, 16, &dfd.to_ne_bytes());
        put(&mut rec, 24, &0x7ffd_1234u64.to_ne_bytes());
        put(&mut rec, 32, &0u64.to_ne_bytes());
        put(&mut rec, 40, &0u64.to_ne_bytes());
        rec
    }

    #[test]
    fn parses_openat_layout_with_types_overriding_slot_sizes() {
        let f = parse(OPENAT_ENTER).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sys_enter_openat", 782));
        let common: Vec<_> = f.common.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            common,
            [
                "common_type",
                "common_flags",
                "common_preempt_count",
                "common_pid"
            ]
        );
        let names: Vec<_> = f.fields.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["__syscall_nr", "dfd", "filename", "flags", "mode"]);

        let dfd = f.field("dfd").unwrap();
        assert_eq!(
            (dfd.c_type.as_str(), dfd.offset, dfd.size, dfd.signed),
            ("int", 16, 8, false)
        );
        assert_eq!(
            dfd.kind,
            FieldKind::Int {
                bytes: 4,
                signed: true
            }
        );
        let filename = f.field("filename").unwrap();
        assert_eq!(
            (filename.c_type.as_str(), filename.offset, filename.kind),
            ("const char *", 24, FieldKind::Pointer)
        );
        assert_eq!(
            kind(&f, "mode"),
            FieldKind::Int {
                bytes: 2,
                signed: false
            }
        );
        assert_eq!(
            kind(&f, "__syscall_nr"),
            FieldKind::Int {
                bytes: 4,
                signed: true
            }
        );
        assert_eq!(
            kind(&f, "common_type"),
            FieldKind::Int {
                bytes: 2,
                signed: false
            }
        );
        assert_eq!(f.fixed_size(), 48);
        assert!(f.field("nonexistent").is_none());
    }

    #[test]
    fn parses_strings_data_locs_and_arrays() {
        let exit = parse(OPENAT_EXIT).unwrap();
        assert_eq!(exit.id, 781);
        assert_eq!(
            kind(&exit, "ret"),
            FieldKind::Int {
                bytes: 8,
                signed: true
            }
        );

        let switch = parse(SCHED_SWITCH).unwrap();
        assert_eq!(switch.id, 372);
        let comm = switch.field("prev_comm").unwrap();
        assert_eq!(
            (comm.c_type.as_str(), comm.offset, comm.kind),
            ("char[16]", 8, FieldKind::String { len: 16 })
        );
        assert_eq!(
            kind(&switch, "prev_state"),
            FieldKind::Int {
                bytes: 8,
                signed: true
            }
        );
        assert_eq!(
            kind(&switch, "next_pid"),
            FieldKind::Int {
                bytes: 4,
                signed: true
            }
        );
        assert_eq!(switch.field("next_prio").map(|f| f.offset), Some(60));

        let exec = parse(PROCESS_EXEC).unwrap();
        let filename = exec.field("filename").unwrap();
        assert_eq!(
            (filename.c_type.as_str(), filename.size),
            ("__data_loc char[]", 4)
        );
        assert_eq!(filename.kind, FieldKind::DataLoc { elem: 1 });

        let raw = parse(RAW_SYS_ENTER).unwrap();
        assert_eq!((raw.name.as_str(), raw.id), ("sys_enter", 443));
        let args = raw.field("args").unwrap();
        assert_eq!(args.c_type, "unsigned long[6]");
        assert_eq!(
            args.kind,
            FieldKind::Array {
                elem_bytes: 8,
                len: 6,
                signed: false
            }
        );
        assert_eq!(
            kind(&raw, "id"),
            FieldKind::Int {
                bytes: 8,
                signed: true
            }
        );

        let ipi = parse(IPI_SEND_CPUMASK).unwrap();
        assert_eq!(kind(&ipi, "cpumask"), FieldKind::DataLoc { elem: 8 });
        assert_eq!(kind(&ipi, "callsite"), FieldKind::Pointer);
    }

    #[test]
    fn decodes_openat_whether_the_kernel_sign_extended_dfd_or_not() {
        let f = parse(OPENAT_ENTER).unwrap();
        let expected = "__syscall_nr=257 dfd=-100 filename=0x7ffd1234 flags=0x0 mode=0";
        for dfd in [0x0000_0000_ffff_ff9c_u64, 0xffff_ffff_ffff_ff9c] {
            assert_eq!(
                render(&f.decode(&openat_record(dfd))),
                expected,
                "dfd slot {dfd:#x}"
            );
        }
        let mut rec = openat_record(3);
        put(&mut rec, 32, &0x80241u64.to_ne_bytes()); // O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC
        put(&mut rec, 40, &0o644u64.to_ne_bytes());
        assert_eq!(
            render(&f.decode(&rec)),
            "__syscall_nr=257 dfd=3 filename=0x7ffd1234 flags=0x80241 mode=420"
        );
    }

    #[test]
    fn decodes_negative_return_values() {
        let f = parse(OPENAT_EXIT).unwrap();
        let mut rec = record(24);
        put(&mut rec, 8, &257i32.to_ne_bytes());
        put(&mut rec, 16, &(-2i64).to_ne_bytes());
        assert_eq!(render(&f.decode(&rec)), "__syscall_nr=257 ret=-2");
    }

    #[test]
    fn fields_beyond_the_captured_bytes_are_missing() {
        let f = parse(OPENAT_ENTER).unwrap();
        let rec = openat_record(0xffff_ff9c);
        assert_eq!(
            render(&f.decode(&rec[..32])),
            "__syscall_nr=257 dfd=-100 filename=0x7ffd1234 flags=? mode=?"
        );
        // One byte short of `mode` is still short: a field must be wholly inside.
        assert_eq!(f.decode(&rec[..47])[4], ("mode", Value::Missing));
        assert_eq!(
            render(&f.decode(&[])),
            "__syscall_nr=? dfd=? filename=? flags=? mode=?"
        );
    }

    #[test]
    fn decodes_sched_switch_comms_up_to_their_nul() {
        let f = parse(SCHED_SWITCH).unwrap();
        let mut rec = record(64);
        put(&mut rec, 8, b"bash\0garbage");
        put(&mut rec, 24, &1234i32.to_ne_bytes());
        put(&mut rec, 28, &120i32.to_ne_bytes());
        put(&mut rec, 32, &1i64.to_ne_bytes());
        // A full 16-byte comm has no NUL; the field's end ends it.
        put(&mut rec, 40, b"0123456789abcdef");
        put(&mut rec, 56, &0i32.to_ne_bytes());
        put(&mut rec, 60, &(-1i32).to_ne_bytes());
        assert_eq!(
            render(&f.decode(&rec)),
            "prev_comm=\"bash\" prev_pid=1234 prev_prio=120 prev_state=1 \
             next_comm=\"0123456789abcdef\" next_pid=0 next_prio=-1"
        );
    }

    #[test]
    fn decodes_data_loc_strings_inside_the_captured_bytes_only() {
        let f = parse(PROCESS_EXEC).unwrap();
        let path = b"/bin/true\0";
        let mut rec = record(20 + path.len());
        put(
            &mut rec,
            8,
            &(((path.len() as u32) << 16) | 20).to_ne_bytes(),
        );
        put(&mut rec, 12, &42i32.to_ne_bytes());
        put(&mut rec, 16, &41i32.to_ne_bytes());
        put(&mut rec, 20, path);
        assert_eq!(
            render(&f.decode(&rec)),
            "filename=\"/bin/true\" pid=42 old_pid=41"
        );
        assert_eq!(
            render(&f.decode(&rec[..25])),
            "filename=? pid=42 old_pid=41"
        );

        // A location pointing far outside the record is missing, not a panic.
        put(&mut rec, 8, &u32::MAX.to_ne_bytes());
        assert_eq!(render(&f.decode(&rec)), "filename=? pid=42 old_pid=41");
    }

    #[test]
    fn decodes_arrays_and_data_loc_arrays() {
        let f = parse(RAW_SYS_ENTER).unwrap();
        let mut rec = record(64);
        put(&mut rec, 8, &257i64.to_ne_bytes());
        for (i, arg) in [(-100i64) as u64, 0x7ffd_1234, 0x80000, 0, 0, 7]
            .iter()
            .enumerate()
        {
            put(&mut rec, 16 + 8 * i, &arg.to_ne_bytes());
        }
        // 64 bytes is what the BPF side captures: raw_syscalls:sys_enter fits exactly.
        assert_eq!(
            render(&f.decode(&rec)),
            "id=257 args=[18446744073709551516, 2147291700, 524288, 0, 0, 7]"
        );
        assert_eq!(render(&f.decode(&rec[..63])), "id=257 args=?");

        let f = parse(IPI_SEND_CPUMASK).unwrap();
        let mut rec = record(40);
        put(&mut rec, 8, &((8u32 << 16) | 32).to_ne_bytes());
        put(&mut rec, 16, &0xffff_ffff_8100_0000u64.to_ne_bytes());
        put(&mut rec, 24, &0u64.to_ne_bytes());
        put(&mut rec, 32, &0b1011u64.to_ne_bytes());
        assert_eq!(
            render(&f.decode(&rec)),
            "cpumask=[0xb] callsite=0xffffffff81000000 callback=0x0"
        );
    }

    #[test]
    fn names_with_flags_or_mask_show_in_hex_and_nothing_else_does() {
        let f = parse(&synthetic(
            "\tfield:int flags;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned int gfp_flags;\toffset:12;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned long cpumask_bits;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:int flag;\toffset:24;\tsize:4;\tsigned:1;\n\
             \tfield:umode_t mode;\toffset:28;\tsize:2;\tsigned:0;\n\
             \tfield:unsigned long masks[2];\toffset:32;\tsize:16;\tsigned:0;\n",
        ))
        .unwrap();
        let mut rec = record(48);
        put(&mut rec, 8, &(-1i32).to_ne_bytes());
        put(&mut rec, 12, &0xcc0u32.to_ne_bytes());
        put(&mut rec, 16, &3u64.to_ne_bytes());
        put(&mut rec, 24, &(-1i32).to_ne_bytes());
        put(&mut rec, 28, &0o755u16.to_ne_bytes());
        put(&mut rec, 32, &16u64.to_ne_bytes());
        assert_eq!(
            render(&f.decode(&rec)),
            "flags=0xffffffff gfp_flags=0xcc0 cpumask_bits=0x3 flag=-1 mode=493 masks=[0x10, 0x0]"
        );
    }

    #[test]
    fn values_display_like_rust_literals() {
        assert_eq!(Value::Int(-5).to_string(), "-5");
        assert_eq!(Value::Uint(u64::MAX).to_string(), "18446744073709551615");
        assert_eq!(Value::Hex(255).to_string(), "0xff");
        assert_eq!(
            Value::Str("a\"b\n\u{1}".into()).to_string(),
            r#""a\"b\n\u{1}""#
        );
        assert_eq!(
            Value::Array(vec![Value::Int(1), Value::Missing]).to_string(),
            "[1, ?]"
        );
        assert_eq!(Value::Array(vec![]).to_string(), "[]");
        assert_eq!(render(&[]), "");
    }

    #[test]
    fn parses_the_rarer_declarations() {
        let f = parse(&synthetic(
            "\tfield:void *p;\toffset:8;\tsize:8;\tsigned:0;\n\
             \tfield:char comm[TASK_COMM_LEN];\toffset:16;\tsize:16;\tsigned:0;\n\
             \tfield:struct timespec64 ts;\toffset:32;\tsize:16;\tsigned:0;\n\
             \tfield:const enum landlock_rule_type rule_type;\toffset:48;\tsize:8;\tsigned:0;\n\
             \tfield:u8 addr[6];\toffset:56;\tsize:6;\tsigned:0;\n\
             \tfield:signed char s;\toffset:62;\tsize:1;\tsigned:1;\n\
             \tfield:char c;\toffset:63;\tsize:1;\tsigned:0;\n\
             \tfield:long long ll;\toffset:64;\tsize:8;\tsigned:1;\n\
             \tfield:cap_user_header_t header;\toffset:72;\tsize:8;\tsigned:0;\n\
             \tfield:xfs_ino_t ino;\toffset:80;\tsize:8;\tsigned:0;\n\
             \tfield:xfs_daddr_t daddr;\toffset:88;\tsize:8;\tsigned:1;\n\
             \tfield:__rel_loc char[] rel;\toffset:96;\tsize:4;\tsigned:0;\n\
             \tfield special:int old;\toffset:100;\tsize:4;\n\
             \tfield:unsigned long args[];\toffset:104;\tsize:0;\tsigned:0;\n\
             \tfield:char buf[];\toffset:104;\tsize:0;\tsigned:0;\n",
        ))
        .unwrap();
        assert_eq!(f.field("p").map(|p| p.c_type.as_str()), Some("void *"));
        assert_eq!(kind(&f, "p"), FieldKind::Pointer);
        assert_eq!(kind(&f, "comm"), FieldKind::String { len: 16 });
        assert_eq!(kind(&f, "ts"), FieldKind::Other);
        assert_eq!(
            kind(&f, "rule_type"),
            FieldKind::Int {
                bytes: 4,
                signed: false
            }
        );
        assert_eq!(
            kind(&f, "addr"),
            FieldKind::Array {
                elem_bytes: 1,
                len: 6,
                signed: false
            }
        );
        assert_eq!(
            kind(&f, "s"),
            FieldKind::Int {
                bytes: 1,
                signed: true
            }
        );
        assert_eq!(
            kind(&f, "c"),
            FieldKind::Int {
                bytes: 1,
                signed: false
            }
        );
        assert_eq!(
            kind(&f, "ll"),
            FieldKind::Int {
                bytes: 8,
                signed: true
            }
        );
        assert_eq!(kind(&f, "header"), FieldKind::Pointer);
        assert_eq!(
            kind(&f, "ino"),
            FieldKind::Int {
                bytes: 8,
                signed: false
            }
        );
        assert_eq!(
            kind(&f, "daddr"),
            FieldKind::Int {
                bytes: 8,
                signed: true
            }
        );
        assert_eq!(kind(&f, "rel"), FieldKind::DataLoc { elem: 1 });
        assert_eq!(
            f.field("old").map(|o| (o.kind, o.signed)),
            Some((
                FieldKind::Int {
                    bytes: 4,
                    signed: true
                },
                false
            ))
        );
        assert_eq!(
            kind(&f, "args"),
            FieldKind::Array {
                elem_bytes: 8,
                len: 0,
                signed: false
            }
        );
        assert_eq!(kind(&f, "buf"), FieldKind::String { len: 0 });

        let mut rec = record(120);
        put(&mut rec, 8, &0xdead_beefu64.to_ne_bytes());
        put(&mut rec, 16, b"kworker/0:1\0");
        put(&mut rec, 32, &[1, 2, 3]);
        put(&mut rec, 48, &5u64.to_ne_bytes());
        put(&mut rec, 56, &[0x02, 0x42, 0xac, 0x11, 0x00, 0x02]);
        rec[62] = 0xff;
        rec[63] = 0xff;
        put(&mut rec, 64, &(-7i64).to_ne_bytes());
        // __rel_loc counts from the end of its own 4 bytes: 100 + 4 = 104 + 0.
        put(&mut rec, 96, &((3u32 << 16) | 4).to_ne_bytes());
        put(&mut rec, 100, &9i32.to_ne_bytes());
        put(&mut rec, 104, b"hi\0");
        let values = f.decode(&rec);
        let get = |name: &str| {
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        };
        assert_eq!(get("p").as_deref(), Some("0xdeadbeef"));
        assert_eq!(get("comm").as_deref(), Some("\"kworker/0:1\""));
        assert_eq!(
            get("ts").as_deref(),
            Some(
                "[0x1, 0x2, 0x3, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0]"
            )
        );
        assert_eq!(get("rule_type").as_deref(), Some("5"));
        assert_eq!(get("addr").as_deref(), Some("[2, 66, 172, 17, 0, 2]"));
        assert_eq!(get("s").as_deref(), Some("-1"));
        assert_eq!(get("c").as_deref(), Some("255"));
        assert_eq!(get("ll").as_deref(), Some("-7"));
        assert_eq!(get("rel").as_deref(), Some("\"hi\""));
        assert_eq!(get("old").as_deref(), Some("9"));
        // A flexible array's length is not in the format; a flexible string ends at its NUL.
        assert_eq!(get("args").as_deref(), Some("?"));
        assert_eq!(get("buf").as_deref(), Some("\"hi\""));
        assert_eq!(
            f.decode(&rec[..106])
                .iter()
                .find(|(n, _)| *n == "buf")
                .map(|(_, v)| v),
            Some(&Value::Missing)
        );
    }

    #[test]
    fn a_format_without_the_blank_separator_splits_on_the_common_prefix() {
        let text = "name: x\nID: 1\nformat:\n\
                    \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
                    \tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n";
        let f = parse(text).unwrap();
        assert_eq!(f.common.len(), 1);
        assert_eq!(
            f.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["v"]
        );
    }

    #[test]
    fn malformed_text_names_the_line() {
        let bad_offset = OPENAT_ENTER.replace("offset:16;", "offset:sixteen;");
        let err = parse(&bad_offset).unwrap_err();
        assert!(
            matches!(&err, FormatError::Line { line: 10, text, .. } if text.contains("int dfd")),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "format line 10: offset is not a number: \
             `field:int dfd;\toffset:sixteen;\tsize:8;\tsigned:0;`"
        );

        let no_size = OPENAT_ENTER.replace("offset:24;\tsize:8;", "offset:24;");
        assert!(
            matches!(parse(&no_size), Err(FormatError::Line { line: 11, reason, .. }) if reason == "no size")
        );

        let junk = OPENAT_ENTER.replace("\tfield:int flags;", "\tfeld:int flags;");
        assert!(matches!(
            parse(&junk),
            Err(FormatError::Line { line: 12, .. })
        ));

        let no_name = OPENAT_ENTER.replace("field:umode_t mode;", "field:umode_t;");
        assert!(matches!(
            parse(&no_name),
            Err(FormatError::Line { line: 13, .. })
        ));

        let bad_id = OPENAT_ENTER.replace("ID: 782", "ID: -1");
        assert!(matches!(
            parse(&bad_id),
            Err(FormatError::Line { line: 2, .. })
        ));

        let no_id = OPENAT_ENTER.replace("ID: 782\n", "");
        assert_eq!(parse(&no_id), Err(FormatError::MissingKey { key: "ID" }));
        assert_eq!(parse(""), Err(FormatError::MissingKey { key: "name" }));

        let header = OPENAT_ENTER.replace("ID: 782", "banana");
        assert!(matches!(
            parse(&header),
            Err(FormatError::Line { line: 2, .. })
        ));
    }

    /// A small deterministic generator, so failures reproduce.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    const ALL: [&str; 6] = [
        OPENAT_ENTER,
        OPENAT_EXIT,
        SCHED_SWITCH,
        PROCESS_EXEC,
        RAW_SYS_ENTER,
        IPI_SEND_CPUMASK,
    ];

    #[test]
    fn every_prefix_of_any_record_decodes_without_panicking() {
        let mut rng = Lcg(1);
        for text in ALL {
            let f = parse(text).unwrap();
            for _ in 0..50 {
                let full: Vec<u8> = (0..f.fixed_size() + 40).map(|_| rng.next() as u8).collect();
                for len in 0..=full.len() {
                    let prefix = &full[..len];
                    let values = f.decode(prefix);
                    assert_eq!(values.len(), f.fields.len());
                    for (field, (_, value)) in f.fields.iter().zip(&values) {
                        let inside = field.offset + field.size <= len;
                        if matches!(
                            field.kind,
                            FieldKind::Int { .. }
                                | FieldKind::Pointer
                                | FieldKind::String { .. }
                                | FieldKind::Array { .. }
                        ) {
                            assert_eq!(
                                *value != Value::Missing,
                                inside,
                                "{} {} at {len}",
                                f.name,
                                field.name
                            );
                        } else if !inside {
                            assert_eq!(
                                *value,
                                Value::Missing,
                                "{} {} at {len}",
                                f.name,
                                field.name
                            );
                        }
                    }
                    let _ = render(&values);
                }
            }
        }
    }

    #[test]
    fn hand_built_fields_with_nonsense_layouts_do_not_panic() {
        let kinds = [
            FieldKind::Int {
                bytes: 0,
                signed: true,
            },
            FieldKind::Int {
                bytes: 99,
                signed: true,
            },
            FieldKind::Pointer,
            FieldKind::String { len: 0 },
            FieldKind::String { len: usize::MAX },
            FieldKind::DataLoc { elem: 0 },
            FieldKind::DataLoc { elem: 3 },
            FieldKind::Array {
                elem_bytes: 0,
                len: usize::MAX,
                signed: false,
            },
            FieldKind::Array {
                elem_bytes: 3,
                len: 2,
                signed: true,
            },
            FieldKind::Array {
                elem_bytes: usize::MAX,
                len: 2,
                signed: true,
            },
            FieldKind::Other,
        ];
        let rec: Vec<u8> = (0..=255).collect();
        for kind in kinds {
            for (offset, size) in [
                (0, 0),
                (3, 3),
                (250, 8),
                (usize::MAX, 8),
                (8, usize::MAX),
                (usize::MAX, usize::MAX),
            ] {
                for c_type in ["int", "__rel_loc char[]", "__data_loc u32[]"] {
                    let field = Field {
                        name: "f".into(),
                        c_type: c_type.into(),
                        offset,
                        size,
                        signed: true,
                        kind,
                    };
                    let _ = field.decode(&rec).to_string();
                }
            }
        }
    }

    #[test]
    fn truncated_or_mangled_format_text_never_panics() {
        for text in ALL {
            for (at, _) in text.char_indices() {
                let _ = parse(&text[..at]);
            }
            let lines: Vec<&str> = text.lines().collect();
            for skip in 0..lines.len() {
                let mangled: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, l)| *l)
                    .collect();
                let _ = parse(&mangled.join("\n"));
            }
        }
    }

    /// Real kernels are the best source of syntax we have not seen: parse every format file here.
    #[test]
    fn every_format_file_on_this_machine_parses() {
        let tracefs = match crate::kernel::tracefs::Tracefs::locate() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipped: {e}; no format files to parse");
                return;
            }
        };
        let events = tracefs.root().join("events");
        let categories = match std::fs::read_dir(&events) {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("skipped: cannot list {}: {e}", events.display());
                return;
            }
        };
        let (mut parsed, mut failures) = (0, Vec::new());
        for category in categories.flatten().filter(|c| c.path().is_dir()) {
            for event in std::fs::read_dir(category.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = event.path().join("format");
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let format = match parse(&text) {
                    Ok(f) => f,
                    Err(e) => {
                        failures.push(format!("{}: {e}", path.display()));
                        continue;
                    }
                };
                parsed += 1;
                let id = std::fs::read_to_string(event.path().join("id")).ok();
                if let Some(id) = id.and_then(|s| s.trim().parse::<u64>().ok()) {
                    if id != format.id {
                        failures.push(format!(
                            "{}: ID {} but id file says {id}",
                            path.display(),
                            format.id
                        ));
                    }
                }
                if format.common.is_empty()
                    || format.common.iter().any(|c| !c.name.starts_with("common_"))
                {
                    failures.push(format!(
                        "{}: common fields {:?}",
                        path.display(),
                        format.common
                    ));
                }
                if let Some(f) = format.fields.iter().find(|f| f.name.starts_with("common_")) {
                    failures.push(format!(
                        "{}: common field {} among the event's own",
                        path.display(),
                        f.name
                    ));
                }
                // Syscall arguments are all integers or pointers: none may fall through to Other.
                if category.file_name() == "syscalls" {
                    if let Some(f) = format.fields.iter().find(|f| f.kind == FieldKind::Other) {
                        failures.push(format!(
                            "{}: {} ({}) decodes as Other",
                            path.display(),
                            f.name,
                            f.c_type
                        ));
                    }
                }
            }
        }
        if parsed == 0 {
            eprintln!(
                "skipped: no readable format files under {}",
                events.display()
            );
            return;
        }
        eprintln!("parsed {parsed} format files under {}", events.display());
        assert!(
            failures.is_empty(),
            "{} of {parsed} format files failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
