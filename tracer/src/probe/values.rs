//! What a kernel or user probe reads and prints per hit: its parameters, named and typed by
//! BTF or DWARF (else arg0..arg5), or those a `FUNC(a, b->c)` / `--args` list picks, with
//! struct members read in the BPF program; and where `--count-by`, `--sum` and `--hist` find
//! a value named the same way.

use tracer_common::{
    src, str_from, str_mem, word, Event, FieldRead, SlotConfig, StrRead, FIELDS_OFFSET,
    FIELD_ADDRESS, FIELD_AUTO, FIELD_DEREFS, FIELD_READS, FIELD_USER, STR_READS,
};

use crate::kernel::btf::parse_access;
use crate::kernel::format::{shows_hex, Value};
use crate::kernel::params::{Kind, Member, Prototype, RETURN_ARG};
use crate::Error;

/// Where a value is captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Argument register N (`Event::data[N]`).
    Register(usize),
    /// Struct member read N (`Event::fields[N]`).
    Field(usize),
}

/// One printed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// As the user wrote it, or the parameter's name.
    pub name: String,
    pub place: Place,
    pub kind: Kind,
    /// `usym(NAME)`: the value is an address, named by the function it is in when printed
    /// ([`super::decode::name_functions`]); decoded as hex.
    pub symbol: bool,
}

/// Which memory the probe's pointers point into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug)]
pub struct Values {
    pub columns: Vec<Column>,
    params: Vec<(String, Kind)>,
    /// What the BPF program reads; not needed to decode (a recorded trace keeps the rest).
    reads: Vec<FieldRead>,
    /// The columns whose strings the BPF program reads, read k the kth (at most
    /// [`STR_READS`]).
    strings: Vec<Place>,
    memory: Memory,
    probe: String,
    /// A return probe's return value, which `ret->member` reads through (`None` at an entry).
    ret: Option<Kind>,
    /// The function's return type, where its prototype says (a latency outlier's `ret`).
    returns: Option<Kind>,
}

const REGISTER_ARGS: usize = 6;

impl Values {
    /// Values as a recording kept them (`tracefile::desc`): what decodes a hit, without the
    /// reads, which only the BPF program needed.
    pub fn recorded(
        columns: Vec<Column>,
        params: Vec<(String, Kind)>,
        strings: Vec<Place>,
        memory: Memory,
        probe: String,
    ) -> Values {
        Values {
            columns,
            params,
            reads: Vec::new(),
            strings,
            memory,
            probe,
            ret: None,
            returns: None,
        }
    }

    /// What a recording keeps of these values: the parts [`Values::recorded`] takes.
    #[allow(clippy::type_complexity)]
    pub fn into_recorded(self) -> (Vec<Column>, Vec<(String, Kind)>, Vec<Place>, Memory, String) {
        (
            self.columns,
            self.params,
            self.strings,
            self.memory,
            self.probe,
        )
    }

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
        let mut values = Values::empty(probe, proto, memory);
        values.select(selection, members)?;
        Ok(values)
    }

    /// Values with no columns yet.
    fn empty(probe: &str, proto: Option<&Prototype>, memory: Memory) -> Values {
        let params = match proto {
            Some(proto) => (proto.params.iter().take(REGISTER_ARGS))
                .map(|p| (p.name.clone(), p.kind.clone()))
                .collect(),
            None => (0..REGISTER_ARGS)
                .map(|i| (format!("arg{i}"), untyped()))
                .collect(),
        };
        Values {
            columns: Vec::new(),
            params,
            reads: Vec::new(),
            strings: Vec::new(),
            memory,
            probe: probe.to_string(),
            ret: None,
            returns: proto.map(|p| p.ret.clone()),
        }
    }

    /// The values a return probe reads besides its return value: the arguments asked for (at
    /// fexit, where the trampoline still has them) and members of what it returned
    /// (`ret->member`, anywhere), `ret` typed as `proto` says.
    pub fn at_return(
        probe: &str,
        proto: Option<&Prototype>,
        selection: &[String],
        memory: Memory,
        members: &mut MemberLookup<'_>,
    ) -> Result<Values, Error> {
        let mut values = Values::empty(probe, proto, memory);
        values.ret = Some(proto.map_or_else(untyped, |p| p.ret.clone()));
        values.select(selection, members)?;
        Ok(values)
    }

    /// Sets the columns: every parameter when `selection` is empty, else the listed ones in
    /// order; then the strings they print.
    fn select(
        &mut self,
        selection: &[String],
        members: &mut MemberLookup<'_>,
    ) -> Result<(), Error> {
        let probe = self.probe.clone();
        if selection.is_empty() {
            self.columns = (self.params.iter().enumerate())
                .map(|(i, (name, kind))| Column {
                    name: name.clone(),
                    place: Place::Register(i),
                    kind: kind.clone(),
                    symbol: false,
                })
                .collect();
        } else {
            for name in selection {
                let column = self.column(name, members)?;
                self.columns.push(column);
            }
        }
        let strings: Vec<Column> = (self.columns.iter())
            .filter(|c| c.kind == Kind::Str)
            .cloned()
            .collect();
        for column in strings {
            if self.read_string(&column).is_none() {
                crate::output::notes::note(format_args!(
                    "{probe}: {STR_READS} strings are read per hit; '{}' prints as a pointer",
                    column.name
                ));
            }
        }
        Ok(())
    }

    /// The column for a name: a parameter, `argN`, or a member access; `str(NAME)` reads it
    /// as a string and `usym(NAME)` names the function at its address ([`crate::plan::Reader`]).
    fn column(&mut self, name: &str, members: &mut MemberLookup<'_>) -> Result<Column, Error> {
        let (reader, inner) = crate::plan::reader(name);
        if reader != crate::plan::Reader::Plain {
            let column = self.column(inner, members)?;
            let (kind, symbol, not, hint) = match reader {
                crate::plan::Reader::Str => (
                    Kind::Str,
                    false,
                    "a pointer",
                    "str() reads a pointer's string",
                ),
                _ => (
                    column.kind.clone(),
                    true,
                    "an address",
                    "usym() names the function at an address",
                ),
            };
            if column.kind.size() != 8 {
                return Err(Error::usage(
                    format!("'{inner}' of {} is {}, not {not}", self.probe, column.kind),
                    vec![format!("{hint}: write '{inner}'")],
                ));
            }
            return Ok(Column {
                kind,
                symbol,
                ..column
            });
        }
        let Some((param, path)) = parse_access(name) else {
            let (index, kind) = self.param(name)?;
            return Ok(Column {
                name: name.to_string(),
                place: Place::Register(index),
                kind,
                symbol: false,
            });
        };
        let (index, _) = self.param(param)?;
        let member = members(index, &path)?;
        let size = member.kind.size();
        let scalar = matches!(
            member.kind,
            Kind::Signed(_)
                | Kind::Unsigned(_)
                | Kind::Net { .. }
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
        let mut derefs = [0; FIELD_DEREFS];
        derefs[..member.derefs.len()].copy_from_slice(&member.derefs);
        let memory = match self.memory {
            Memory::User => FIELD_USER,
            Memory::ByAddress => FIELD_AUTO,
        };
        let read = FieldRead {
            offset: member.offset,
            arg: index as u8,
            size,
            flags: match member.in_place {
                true => memory | FIELD_ADDRESS,
                false => memory,
            },
            hops: member.derefs.len() as u8,
            derefs,
        };
        let slot = match self.reads.iter().position(|r| *r == read) {
            Some(slot) => slot,
            None if self.reads.len() < FIELD_READS => {
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
            symbol: false,
        })
    }

    /// A parameter by name or as `argN`; `ret` at a return probe.
    fn param(&self, name: &str) -> Result<(usize, Kind), Error> {
        if let (Some(kind), "ret") = (&self.ret, name) {
            return Ok((RETURN_ARG, kind.clone()));
        }
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

    /// Makes the slot read `column`'s string; its read index, or `None` when the slot reads
    /// [`STR_READS`] others already.
    pub fn read_string(&mut self, column: &Column) -> Option<usize> {
        if let Some(k) = self.strings.iter().position(|p| *p == column.place) {
            return Some(k);
        }
        if self.strings.len() == STR_READS {
            return None;
        }
        self.strings.push(column.place);
        Some(self.strings.len() - 1)
    }

    /// A return value of the function, as its prototype types it (`int` -2, not 4294967294);
    /// the register as it is where no prototype says.
    pub fn returned(&self, raw: u64) -> i64 {
        match self.returns.as_ref().map(|kind| kind.value(raw, None)) {
            Some(Value::Int(v)) => v,
            Some(Value::Uint(v)) => v as i64,
            _ => raw as i64,
        }
    }

    /// The probe these values are of, as the user wrote it (for messages).
    pub fn probe(&self) -> &str {
        &self.probe
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

    /// How many struct members the slot reads for these values.
    pub fn member_reads(&self) -> usize {
        self.reads.len()
    }

    /// Whether a member read loads a pointer on the way (`a->b->c`: `USES_DEREFS`).
    pub fn pointer_loads(&self) -> bool {
        self.reads.iter().any(|r| r.hops > 0)
    }

    /// How many strings the slot reads for these values (the first of [`STR_READS`]).
    pub fn string_reads(&self) -> usize {
        self.strings.len()
    }

    /// Sets what the slot reads: the member reads, and the strings (unless `strings` is
    /// false: counting never prints them).
    pub fn configure(&self, config: &mut SlotConfig, strings: bool) {
        for (slot, read) in config.fields.iter_mut().zip(&self.reads) {
            *slot = *read;
        }
        if !strings {
            return;
        }
        for (slot, place) in config.strs.iter_mut().zip(&self.strings) {
            let (from, at) = match *place {
                Place::Register(n) => (str_from::ARG, n as u32),
                Place::Field(n) => (str_from::FIELD, n as u32),
            };
            *slot = StrRead {
                at,
                from,
                memory: match self.memory {
                    Memory::User => str_mem::USER,
                    Memory::ByAddress => str_mem::AUTO,
                },
                ..StrRead::default()
            };
        }
    }

    /// The named values of one hit, given its strings by read index (taken). A member whose
    /// read failed (a bad pointer) is [`Value::Missing`]: `?` in text, `null` in JSON.
    pub fn decode(
        &self,
        event: &Event,
        strings: &mut [Option<Value>; STR_READS],
    ) -> Vec<(&str, Value)> {
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
                let string = (self.strings.iter().position(|p| *p == column.place))
                    .and_then(|k| strings[k].clone());
                let value = match raw.map(|raw| match column.symbol {
                    true => Value::Hex(raw),
                    false => column.kind.value(raw, string),
                }) {
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
        Ok(Member::at(arg, offset, kind))
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
        event
    }

    /// Read 0's string, as the program sends it.
    fn strings() -> [Option<Value>; STR_READS] {
        [Some(Value::Str("/etc".into())), None, None, None]
    }

    fn read(from: u8, at: u32) -> StrRead {
        StrRead {
            at,
            from,
            memory: str_mem::AUTO,
            ..StrRead::default()
        }
    }

    #[test]
    fn every_parameter_without_a_selection() {
        let v = values(&[]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.strs[0], read(str_from::ARG, 1));
        assert_eq!(config.strs[1], StrRead::default());
        assert_eq!(config.fields, [FieldRead::default(); FIELD_READS]);
        assert_eq!(
            v.decode(&event(), &mut strings()),
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
            ..FieldRead::default()
        };
        assert_eq!(config.fields[..2], [read(8), read(0)]);
        assert_eq!(config.fields[2].size, 0);
        let mut hit = event();
        hit.fields = [0o644, 0o2_000_000, 0, 0];
        assert_eq!(
            v.decode(&hit, &mut strings()),
            vec![
                ("how->mode", Value::Uint(0o644)),
                ("filename", Value::Str("/etc".into())),
                ("arg0", Value::Int(-100)),
                ("how->flags", Value::Hex(0o2_000_000)),
            ]
        );
        hit.field_faults = 0b10;
        assert_eq!(
            v.decode(&hit, &mut strings())[3],
            ("how->flags", Value::Missing)
        );
        assert_eq!(Values::faults(&hit), 1);
    }

    #[test]
    fn a_string_member_is_the_string_read() {
        let v = values(&["how->name", "dfd"]).expect("values");
        let mut config = SlotConfig::default();
        v.configure(&mut config, true);
        assert_eq!(config.strs[0], read(str_from::FIELD, 0));
        assert_eq!(
            v.decode(&event(), &mut strings())[0],
            ("how->name", Value::Str("/etc".into()))
        );
        // Counting never prints strings, so it does not read them.
        let mut config = SlotConfig::default();
        v.configure(&mut config, false);
        assert_eq!(config.strs[0], StrRead::default());
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
        assert_eq!(
            config.strs[0],
            StrRead {
                at: 1,
                from: str_from::ARG,
                memory: str_mem::USER,
                ..StrRead::default()
            }
        );
        let mut hit = event();
        // Bit 8 + n: argument n's memory could not be read (USDT).
        hit.field_faults = 1 << 8;
        assert_eq!(
            v.decode(&hit, &mut strings()),
            vec![
                ("arg0", Value::Missing),
                ("arg1", Value::Str("/etc".into()))
            ]
        );
    }

    #[test]
    fn str_reads_untyped_registers_as_strings_up_to_four() {
        let selection: Vec<String> = ["str(arg0)", "str(arg1)", "str(arg2)", "arg3"]
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
        let user = |at| StrRead {
            at,
            from: str_from::ARG,
            memory: str_mem::USER,
            ..StrRead::default()
        };
        assert_eq!(config.strs[..3], [user(0), user(1), user(2)]);
        assert_eq!(config.strs[3], StrRead::default());
        let mut read = [
            Some(Value::Str("/etc".into())),
            Some(Value::Str("tick".into())),
            None,
            None,
        ];
        let decoded = v.decode(&event(), &mut read);
        assert_eq!(decoded[0], ("arg0", Value::Str("/etc".into())));
        assert_eq!(decoded[1], ("arg1", Value::Str("tick".into())));
        // A string that could not be read prints as its pointer.
        assert_eq!(decoded[2], ("arg2", Value::Hex(0xffff_c900_0000_1000)));
        // str() of something that is not a pointer is refused.
        let err = Values::new(
            "kprobe:do_sys_openat2",
            Some(&proto()),
            &["str(dfd)".to_string()],
            Memory::ByAddress,
            &mut lookup,
        )
        .expect_err("an int");
        assert!(
            err.to_string()
                .contains("'dfd' of kprobe:do_sys_openat2 is s32, not a pointer"),
            "{err}"
        );
    }

    #[test]
    fn untyped_registers_are_hex_and_unsigned() {
        let mut v =
            Values::new("uprobe:/bin/x:f", None, &[], Memory::User, &mut lookup).expect("values");
        assert_eq!(v.columns.len(), 6);
        assert_eq!(
            v.decode(&event(), &mut strings())[0],
            ("arg0", Value::Hex(0xffff_ff9c))
        );
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
