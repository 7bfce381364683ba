//! What a kernel or user probe reads and prints per hit: its parameters, named and typed by
//! BTF or DWARF (else arg0..arg5), or those a `FUNC(a, b->c)` / `--args` list picks, with
//! struct members read in the BPF program; and where `--count-by`, `--sum` and `--hist` find
//! a value named the same way.

use tracer_common::{
    src, word, Event, FieldRead, SlotConfig, FIELDS_OFFSET, FIELD_AUTO, FIELD_READS, FIELD_USER,
    SLOT_STR2_FIELDS, SLOT_STR_ARG_AUTO, SLOT_STR_ARG_USER, SLOT_STR_FIELD, STR2_FAULT,
};

use crate::kernel::btf::parse_access;
use crate::kernel::format::{shows_hex, Value};
use crate::kernel::params::{Kind, Member, Prototype};
use crate::Error;

/// Where a value is captured.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Argument register N (`Event::data[N]`).
    Register(usize),
    /// Struct member read N (`Event::fields[N]`).
    Field(usize),
}

/// One printed value.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// As the user wrote it, or the parameter's name.
    pub name: String,
    pub place: Place,
    pub kind: Kind,
}

/// Which memory the probe's pointers point into.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// uprobes: the traced process's.
    User,
    /// kprobes: user or kernel, told apart by address (gcc-built kernels' BTF has no
    /// `__user` tags).
    ByAddress,
}

/// Resolves `PARAM->a.b` (parameter index and member path) to an offset and kind.
pub type MemberLookup<'a> = dyn FnMut(usize, &[&str]) -> Result<Member, Error> + 'a;

/// A probe's values: what its BPF slot reads and how each is printed.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct Values {
    pub columns: Vec<Column>,
    params: Vec<(String, Kind)>,
    /// What the BPF program reads; not needed to decode (a recorded trace keeps the rest).
    #[serde(skip)]
    reads: Vec<FieldRead>,
    /// The column whose string the BPF program reads (one per hit).
    string: Option<Place>,
    /// A second string column (an argument register), read into the member words when the
    /// probe reads no members (`SLOT_STR2_FIELDS`).
    #[serde(default)]
    string2: Option<Place>,
    memory: Memory,
    probe: String,
}

const REGISTER_ARGS: usize = 6;

impl Values {
    /// The values of an entry probe of `probe`: every parameter when `selection` is empty,
    /// else the listed ones in order. `proto` is `None` when neither BTF nor DWARF describes
    /// the function: registers arg0..arg5, untyped.
    pub fn new(
        probe: &str,
        proto: Option<&Prototype>,
        selection: &[String],
        memory: Memory,
        members: &mut MemberLookup<'_>,
    ) -> Result<Values, Error> {
        let params = match proto {
            Some(proto) => (proto.params.iter().take(REGISTER_ARGS))
                .map(|p| (p.name.clone(), p.kind.clone()))
                .collect(),
            None => (0..REGISTER_ARGS)
                .map(|i| (format!("arg{i}"), untyped()))
                .collect(),
        };
        let mut values = Values {
            columns: Vec::new(),
            params,
            reads: Vec::new(),
            string: None,
            string2: None,
            memory,
            probe: probe.to_string(),
        };
        if selection.is_empty() {
            values.columns = (values.params.iter().enumerate())
                .map(|(i, (name, kind))| Column {
                    name: name.clone(),
                    place: Place::Register(i),
                    kind: kind.clone(),
                })
                .collect();
        } else {
            for name in selection {
                let column = values.column(name, members)?;
                values.columns.push(column);
            }
        }
        let mut strings = (values.columns.iter()).filter(|c| c.kind == Kind::Str);
        values.string = strings.next().map(|c| c.place);
        // Without member reads their words are free for a second string (an argument).
        let second = strings
            .next()
            .filter(|c| values.reads.is_empty() && matches!(c.place, Place::Register(_)));
        values.string2 = second.map(|c| c.place);
        let skip = 1 + usize::from(values.string2.is_some());
        let unread = (values.columns.iter())
            .filter(|c| c.kind == Kind::Str)
            .skip(skip);
        for column in unread {
            let read = match skip {
                1 => "one string is read per hit",
                _ => "two strings are read per hit",
            };
            crate::output::notes::note(format_args!(
                "{probe}: {read}; '{}' prints as a pointer",
                column.name
            ));
        }
        Ok(values)
    }

    /// The column for a name: a parameter, `argN`, or a member access.
    fn column(&mut self, name: &str, members: &mut MemberLookup<'_>) -> Result<Column, Error> {
        if let Some(inner) = name.strip_prefix("str(").and_then(|n| n.strip_suffix(')')) {
            let (index, _) = self.param(inner)?;
            return Ok(Column {
                name: inner.to_string(),
                place: Place::Register(index),
                kind: Kind::Str,
            });
        }
        let Some((param, path)) = parse_access(name) else {
            let (index, kind) = self.param(name)?;
            return Ok(Column {
                name: name.to_string(),
                place: Place::Register(index),
                kind,
            });
        };
        let (index, _) = self.param(param)?;
        let member = members(index, &path)?;
        let size = member.kind.size();
        let scalar = matches!(
            member.kind,
            Kind::Signed(_)
                | Kind::Unsigned(_)
                | Kind::Bool
                | Kind::Enum { .. }
                | Kind::Str
                | Kind::Pointer { .. }
        );
        if !scalar || !matches!(size, 1 | 2 | 4 | 8) {
            return Err(Error::usage(
                format!(
                    "'{name}' of {} is {}, not a number, pointer or string",
                    self.probe, member.kind
                ),
                vec![format!("name one of its members: {name}.MEMBER")],
            ));
        }
        let read = FieldRead {
            offset: member.offset,
            arg: index as u8,
            size,
            flags: match self.memory {
                Memory::User => FIELD_USER,
                Memory::ByAddress => FIELD_AUTO,
            },
            _pad: 0,
        };
        let slot = match self.reads.iter().position(|r| *r == read) {
            Some(slot) => slot,
            None if self.reads.len() < FIELD_READS => {
                // The member words held the second string: it prints as a pointer now.
                self.string2 = None;
                self.reads.push(read);
                self.reads.len() - 1
            }
            None => {
                return Err(Error::usage(
                    format!(
                        "{} reads more than {FIELD_READS} struct members",
                        self.probe
                    ),
                    vec![format!(
                        "pick at most {FIELD_READS}, or attach the probe twice with other lists"
                    )],
                ))
            }
        };
        Ok(Column {
            name: name.to_string(),
            place: Place::Field(slot),
            kind: member.kind,
        })
    }

    /// A parameter by name or as `argN`.
    fn param(&self, name: &str) -> Result<(usize, Kind), Error> {
        if let Some(index) = self.params.iter().position(|(n, _)| n == name) {
            return Ok((index, self.params[index].1.clone()));
        }
        let arg = name
            .strip_prefix("arg")
            .and_then(|n| n.parse::<usize>().ok());
        match arg {
            Some(n) if n < REGISTER_ARGS => {
                Ok((n, self.params.get(n).map_or_else(untyped, |p| p.1.clone())))
            }
            _ => {
                let names: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
                let mut hints = vec![format!(
                    "its parameters: {} (or arg0..arg5)",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )];
                if let Some(near) = crate::plan::did_you_mean(name, names.iter().copied()) {
                    hints.insert(0, near);
                }
                Err(Error::usage(
                    format!("{} has no parameter '{name}'", self.probe),
                    hints,
                ))
            }
        }
    }

    /// The column a name reads (a parameter, `argN` or a member, read if no column reads it
    /// yet), whether or not it is printed.
    pub fn column_of(
        &mut self,
        name: &str,
        members: &mut MemberLookup<'_>,
    ) -> Result<Column, Error> {
        match self.columns.iter().find(|c| c.name == name) {
            Some(column) => Ok(column.clone()),
            None => self.column(name, members),
        }
    }

    /// Makes `column` the string the slot reads, unless another one is read already (one per
    /// hit); false then.
    pub fn read_string(&mut self, column: &Column) -> bool {
        match self.string {
            Some(place) => place == column.place,
            None => {
                self.string = Some(column.place);
                true
            }
        }
    }

    /// The parameters' names (for hints).
    pub fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The type of a named value (a parameter, `argN` or a member), as [`Values::source`]
    /// finds it.
    pub fn kind(&mut self, name: &str, members: &mut MemberLookup<'_>) -> Result<Kind, Error> {
        match self.columns.iter().find(|c| c.name == name) {
            Some(column) => Ok(column.kind.clone()),
            None => Ok(self.column(name, members)?.kind),
        }
    }

    /// Where `--count-by`/`--sum`/`--hist` find a named value (a parameter, `argN` or a
    /// member, read if no column reads it yet), as a [`src`], and whether it is signed.
    pub fn source(
        &mut self,
        name: &str,
        members: &mut MemberLookup<'_>,
    ) -> Result<(u32, bool), Error> {
        let column = self.column_of(name, members)?;
        let signed = matches!(column.kind, Kind::Signed(_) | Kind::Enum { .. });
        let size = u32::from(column.kind.size());
        let offset = match column.place {
            Place::Register(n) => 8 * n as u32,
            Place::Field(n) => FIELDS_OFFSET + 8 * n as u32,
        };
        Ok((src(offset, size, signed), signed))
    }

    /// Sets what the slot reads: the member reads, and the string (unless `strings` is false:
    /// counting never prints it).
    pub fn configure(&self, config: &mut SlotConfig, strings: bool) {
        for (slot, read) in config.fields.iter_mut().zip(&self.reads) {
            *slot = *read;
        }
        let Some(place) = self.string.filter(|_| strings) else {
            return;
        };
        config.flags |= match self.memory {
            Memory::User => SLOT_STR_ARG_USER,
            Memory::ByAddress => SLOT_STR_ARG_AUTO,
        };
        if let Some(Place::Register(n)) = self.string2 {
            config.flags |= SLOT_STR2_FIELDS;
            config.str_arg2 = n as u32;
        }
        config.str_arg = match place {
            Place::Register(n) => n as u32,
            Place::Field(n) => {
                config.flags |= SLOT_STR_FIELD;
                n as u32
            }
        };
    }

    /// The named values of one hit. A member whose read failed (a bad pointer) is
    /// [`Value::Missing`]: `?` in text, `null` in JSON.
    pub fn decode(&self, event: &Event) -> Vec<(&str, Value)> {
        (self.columns.iter())
            .map(|column| {
                let raw = match column.place {
                    // Bit 8 + n: a USDT argument in memory that could not be read.
                    Place::Register(n) => (event.field_faults & (1 << (8 + n)) == 0)
                        .then_some(event.data[word::ARG0 + n]),
                    Place::Field(n) => {
                        (event.field_faults & (1 << n) == 0).then_some(event.fields[n])
                    }
                };
                let second = (self.string2 == Some(column.place) && self.string != self.string2)
                    .then(|| string2(event))
                    .flatten();
                let string = match second {
                    Some(ref bytes) => Some(bytes.as_slice()),
                    None => (self.string == Some(column.place))
                        .then(|| event.string())
                        .flatten(),
                };
                let value = match raw.map(|raw| column.kind.value(raw, string)) {
                    // As for tracepoint fields: `flags` and `*mask*` hold bits.
                    Some(Value::Uint(bits)) if shows_hex(leaf(&column.name)) => Value::Hex(bits),
                    Some(value) => value,
                    None => Value::Missing,
                };
                (column.name.as_str(), value)
            })
            .collect()
    }

    /// Member reads of one hit that failed.
    pub fn faults(event: &Event) -> u32 {
        // The member reads' bits only (USDT arguments and a second string have their own).
        (event.field_faults & ((1 << FIELD_READS) - 1)).count_ones()
    }
}

/// The second string of a hit (`SLOT_STR2_FIELDS`), up to its NUL; `None` when its read failed.
fn string2(event: &Event) -> Option<Vec<u8>> {
    if event.field_faults & STR2_FAULT != 0 {
        return None;
    }
    let bytes: Vec<u8> = event.fields.iter().flat_map(|w| w.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(bytes[..end].to_vec())
}

/// The last name of a member path (`flags` of `how->flags`).
fn leaf(name: &str) -> &str {
    name.rsplit(['>', '.']).next().unwrap_or(name)
}

/// The kind of a register no BTF or DWARF describes: printed in hex, counted as unsigned.
fn untyped() -> Kind {
    Kind::Other {
        name: "unsigned long".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::params::Param;

    fn proto() -> Prototype {
        let param = |name: &str, kind| Param {
            name: name.into(),
            kind,
        };
        Prototype {
            params: vec![
                param("dfd", Kind::Signed(4)),
                param("filename", Kind::Str),
                param(
                    "how",
                    Kind::Pointer {
                        pointee: "struct open_how".into(),
                    },
                ),
            ],
            ret: Kind::Signed(8),
        }
    }

    /// `how->flags` at 0 (u64), `how->mode` at 8 (u64), `how->name` a string at 16.
    fn lookup(arg: usize, path: &[&str]) -> Result<Member, Error> {
        let (offset, kind) = match path {
            ["flags"] => (0, Kind::Unsigned(8)),
            ["mode"] => (8, Kind::Unsigned(8)),
            ["name"] => (16, Kind::Str),
            ["inner"] => (
                24,
                Kind::Other {
                    name: "struct inner".into(),
                },
            ),
            _ => return Err(Error::usage("no such member", Vec::new())),
        };
        Ok(Member { arg, offset, kind })
    }

    fn values(selection: &[&str]) -> Result<Values, Error> {
        let selection: Vec<String> = selection.iter().map(|s| s.to_string()).collect();
        Values::new(
            "kprobe:do_sys_openat2",
            Some(&proto()),
            &selection,
            Memory::ByAddress,
            &mut lookup,
        )
    }

    fn event() -> Event {
        let mut event = Event::from_bytes(&[0; Event::SIZE]).expect("size");
        event.data[0] = 0xffff_ff9c;
        event.data[1] = 0x7ffd_0000;
        event.data[2] = 0xffff_c900_0000_1000;
        event.fields = [0o2_000_000, 0o644, 0, 0];
        event.str[..5].copy_from_slice(b"/etc\0");
        event.str_len = 5;
        event
    }

    #[test]
    fn every_parameter_without_a_selection() {
        let v = values(&[]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.flags, SLOT_STR_ARG_AUTO);
        assert_eq!(config.str_arg, 1);
        assert_eq!(config.fields, [FieldRead::default(); FIELD_READS]);
        assert_eq!(
            v.decode(&event()),
            vec![
                ("dfd", Value::Int(-100)),
                ("filename", Value::Str("/etc".into())),
                ("how", Value::Hex(0xffff_c900_0000_1000)),
            ]
        );
    }

    #[test]
    fn a_selection_picks_reorders_and_reads_members() {
        let v = values(&["how->mode", "filename", "arg0", "how->flags"]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        let read = |offset| FieldRead {
            offset,
            arg: 2,
            size: 8,
            flags: FIELD_AUTO,
            _pad: 0,
        };
        assert_eq!(config.fields[..2], [read(8), read(0)]);
        assert_eq!(config.fields[2].size, 0);
        let mut hit = event();
        hit.fields = [0o644, 0o2_000_000, 0, 0];
        assert_eq!(
            v.decode(&hit),
            vec![
                ("how->mode", Value::Uint(0o644)),
                ("filename", Value::Str("/etc".into())),
                ("arg0", Value::Int(-100)),
                ("how->flags", Value::Hex(0o2_000_000)),
            ]
        );
        hit.field_faults = 0b10;
        assert_eq!(v.decode(&hit)[3], ("how->flags", Value::Missing));
        assert_eq!(Values::faults(&hit), 1);
    }

    #[test]
    fn a_string_member_is_the_string_read() {
        let v = values(&["how->name", "dfd"]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.flags, SLOT_STR_ARG_AUTO | SLOT_STR_FIELD);
        assert_eq!(config.str_arg, 0);
        assert_eq!(
            v.decode(&event())[0],
            ("how->name", Value::Str("/etc".into()))
        );
        // Counting never prints strings, so it does not read them.
        let mut config = SlotConfig::default();
        v.configure(&mut config, false);
        assert_eq!(config.flags, 0);
    }

    #[test]
    fn sources_for_counting() {
        let mut v = values(&["filename"]).expect("values");
        assert_eq!(
            v.source("dfd", &mut lookup).expect("dfd"),
            (src(0, 4, true), true)
        );
        assert_eq!(
            v.source("arg2", &mut lookup).expect("arg2"),
            (src(16, 8, false), false)
        );
        assert_eq!(
            v.source("how->mode", &mut lookup).expect("member"),
            (src(FIELDS_OFFSET, 8, false), false)
        );
        let mut config = SlotConfig::default();
        v.configure(&mut config, false);
        assert_eq!(config.fields[0].offset, 8);
    }

    #[test]
    fn kinds_tell_numbers_from_strings_and_pointers() {
        let mut v = values(&["filename"]).expect("values");
        assert_eq!(v.kind("dfd", &mut lookup).unwrap(), Kind::Signed(4));
        assert_eq!(v.kind("filename", &mut lookup).unwrap(), Kind::Str);
        assert!(matches!(
            v.kind("how", &mut lookup).unwrap(),
            Kind::Pointer { .. }
        ));
        assert_eq!(v.kind("how->mode", &mut lookup).unwrap(), Kind::Unsigned(8));
    }

    #[test]
    fn an_unreadable_usdt_argument_is_missing_and_str_reads_a_string() {
        let selection = ["arg0".to_string(), "str(arg1)".to_string()];
        let v = Values::new(
            "usdt:/bin/x:p:n",
            None,
            &selection,
            Memory::User,
            &mut lookup,
        )
        .expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!((config.flags, config.str_arg), (SLOT_STR_ARG_USER, 1));
        let mut hit = event();
        // Bit 8 + n: argument n's memory could not be read (USDT).
        hit.field_faults = 1 << 8;
        assert_eq!(
            v.decode(&hit),
            vec![
                ("arg0", Value::Missing),
                ("arg1", Value::Str("/etc".into()))
            ]
        );
    }

    #[test]
    fn a_second_string_is_read_into_the_member_words_when_no_member_is_read() {
        let selection: Vec<String> = ["str(arg0)", "str(arg1)", "str(arg2)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let v = Values::new(
            "usdt:/bin/x:p:n",
            None,
            &selection,
            Memory::User,
            &mut lookup,
        )
        .expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.flags, SLOT_STR_ARG_USER | SLOT_STR2_FIELDS);
        assert_eq!((config.str_arg, config.str_arg2), (0, 1));
        let mut hit = event();
        hit.fields = [u64::from_le_bytes(*b"tick\0\0\0\0"), 0, 0, 0];
        let decoded = v.decode(&hit);
        assert_eq!(decoded[0], ("arg0", Value::Str("/etc".into())));
        assert_eq!(decoded[1], ("arg1", Value::Str("tick".into())));
        // A third string prints as its pointer.
        assert_eq!(decoded[2], ("arg2", Value::Hex(0xffff_c900_0000_1000)));
        // A failed read prints the pointer too.
        hit.field_faults = STR2_FAULT;
        assert_eq!(v.decode(&hit)[1], ("arg1", Value::Hex(0x7ffd_0000)));
        // With a member read, the member words are the member's: one string.
        let v = values(&["filename", "how->name", "how->flags"]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.flags & SLOT_STR2_FIELDS, 0);
    }

    #[test]
    fn untyped_registers_are_hex_and_unsigned() {
        let mut v =
            Values::new("uprobe:/bin/x:f", None, &[], Memory::User, &mut lookup).expect("values");
        assert_eq!(v.columns.len(), 6);
        assert_eq!(v.decode(&event())[0], ("arg0", Value::Hex(0xffff_ff9c)));
        assert_eq!(
            v.source("arg1", &mut lookup).expect("arg1"),
            (src(8, 8, false), false)
        );
    }

    #[test]
    fn bad_selections_say_what_exists() {
        let message = |r: Result<Values, Error>| match r {
            Err(Error::Usage { message, hints }) => format!("{message} | {}", hints.join(" | ")),
            other => panic!("expected a usage error, got {other:?}"),
        };
        assert_eq!(
            message(values(&["filenme"])),
            "kprobe:do_sys_openat2 has no parameter 'filenme' | did you mean: filename | its parameters: dfd, filename, how (or arg0..arg5)"
        );
        assert_eq!(
            message(values(&["how->inner"])),
            "'how->inner' of kprobe:do_sys_openat2 is struct inner, not a number, pointer or string | name one of its members: how->inner.MEMBER"
        );
        assert_eq!(
            message(values(&["arg6"])),
            "kprobe:do_sys_openat2 has no parameter 'arg6' | its parameters: dfd, filename, how (or arg0..arg5)"
        );
    }
}
