//! How a recording describes its sources: the file's own types, one per shape it stores,
//! converted to and from the probe layer's. A `.tracer` file outlives the build that wrote it,
//! so renaming a field of `probe::Decoder`, `probe::values::Values`, `kernel::params::Prototype`
//! or `kernel::format::Format` must not change what a recording holds: those types are not
//! serialized, these are, and `tests/fixtures/format-N.tracer` (one recording per format
//! version this build reads) is decoded by `tests/record_cli.rs` to what it decoded to when it
//! was written.
//!
//! The JSON these types make is the one format 3 has always had: a type's variants and
//! fields keep their names and order here even where the probe layer's change.

use serde::{Deserialize, Serialize};

use super::{Source, SourceKind};
use crate::kernel::format::{Field, FieldKind, Format};
use crate::kernel::params::{Kind, Param, Prototype};
use crate::probe::values::{Column, Memory, Place, Values};
use crate::probe::Decoder;

/// A [`Source`] record.
#[derive(Serialize, Deserialize)]
pub(super) struct SourceDesc {
    id: u32,
    name: String,
    what: SourceKindDesc,
}

#[derive(Serialize, Deserialize)]
enum SourceKindDesc {
    Probe {
        slot: u32,
        decoder: DecoderDesc,
    },
    Watch {
        slot: u32,
        addr: u64,
        len: u64,
        access: String,
        initial: Option<u64>,
    },
    Counter {
        event: String,
        sampling: String,
    },
}

#[derive(Serialize, Deserialize)]
enum DecoderDesc {
    Tracepoint {
        format: FormatDesc,
        strings: Vec<String>,
        selection: Vec<String>,
    },
    Entry(ValuesDesc),
    Return {
        proto: Option<PrototypeDesc>,
        #[serde(default)]
        args: Option<ValuesDesc>,
    },
}

#[derive(Serialize, Deserialize)]
struct FormatDesc {
    name: String,
    id: u64,
    common: Vec<FieldDesc>,
    fields: Vec<FieldDesc>,
    /// The print format's value names and addresses (`Format::symbolic`, `Format::addresses`):
    /// absent from recordings made before them, which decode as numbers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    symbolic: Vec<(String, Vec<(u64, String)>)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    addresses: Vec<(String, usize)>,
}

#[derive(Serialize, Deserialize)]
struct FieldDesc {
    name: String,
    c_type: String,
    offset: usize,
    size: usize,
    signed: bool,
    kind: FieldKindDesc,
}

#[derive(Serialize, Deserialize)]
enum FieldKindDesc {
    Int {
        bytes: usize,
        signed: bool,
    },
    Pointer,
    String {
        len: usize,
    },
    DataLoc {
        elem: usize,
    },
    Array {
        elem_bytes: usize,
        len: usize,
        signed: bool,
    },
    Other,
}

#[derive(Serialize, Deserialize)]
struct ValuesDesc {
    columns: Vec<ColumnDesc>,
    params: Vec<(String, KindDesc)>,
    #[serde(default)]
    strings: Vec<PlaceDesc>,
    memory: MemoryDesc,
    probe: String,
}

#[derive(Serialize, Deserialize)]
struct ColumnDesc {
    name: String,
    place: PlaceDesc,
    kind: KindDesc,
}

#[derive(Serialize, Deserialize)]
enum PlaceDesc {
    Register(usize),
    Field(usize),
}

#[derive(Serialize, Deserialize)]
enum MemoryDesc {
    User,
    ByAddress,
}

#[derive(Serialize, Deserialize)]
enum KindDesc {
    Signed(u8),
    Unsigned(u8),
    Bool,
    Enum {
        size: u8,
        values: Vec<(String, i64)>,
    },
    Str,
    Pointer {
        pointee: String,
    },
    Other {
        name: String,
    },
    Void,
    /// Added after format 3's fixture: last, so that the earlier variants keep their tags.
    Net {
        size: u8,
        addr: bool,
    },
}

#[derive(Serialize, Deserialize)]
struct PrototypeDesc {
    params: Vec<ParamDesc>,
    ret: KindDesc,
}

#[derive(Serialize, Deserialize)]
struct ParamDesc {
    name: String,
    kind: KindDesc,
}

impl From<Source> for SourceDesc {
    fn from(s: Source) -> SourceDesc {
        let what = match s.what {
            SourceKind::Probe { slot, decoder } => SourceKindDesc::Probe {
                slot,
                decoder: decoder.into(),
            },
            SourceKind::Watch {
                slot,
                addr,
                len,
                access,
                initial,
            } => SourceKindDesc::Watch {
                slot,
                addr,
                len,
                access,
                initial,
            },
            SourceKind::Counter { event, sampling } => SourceKindDesc::Counter { event, sampling },
        };
        SourceDesc {
            id: s.id,
            name: s.name,
            what,
        }
    }
}

impl From<SourceDesc> for Source {
    fn from(s: SourceDesc) -> Source {
        let what = match s.what {
            SourceKindDesc::Probe { slot, decoder } => SourceKind::Probe {
                slot,
                decoder: decoder.into(),
            },
            SourceKindDesc::Watch {
                slot,
                addr,
                len,
                access,
                initial,
            } => SourceKind::Watch {
                slot,
                addr,
                len,
                access,
                initial,
            },
            SourceKindDesc::Counter { event, sampling } => SourceKind::Counter { event, sampling },
        };
        Source {
            id: s.id,
            name: s.name,
            what,
        }
    }
}

impl From<Decoder> for DecoderDesc {
    fn from(d: Decoder) -> DecoderDesc {
        match d {
            Decoder::Tracepoint {
                format,
                strings,
                selection,
            } => DecoderDesc::Tracepoint {
                format: format.into(),
                strings,
                selection,
            },
            Decoder::Entry(values) => DecoderDesc::Entry(values.into()),
            Decoder::Return { proto, args } => DecoderDesc::Return {
                proto: proto.map(Into::into),
                args: args.map(Into::into),
            },
        }
    }
}

impl From<DecoderDesc> for Decoder {
    fn from(d: DecoderDesc) -> Decoder {
        match d {
            DecoderDesc::Tracepoint {
                format,
                strings,
                selection,
            } => Decoder::Tracepoint {
                format: format.into(),
                strings,
                selection,
            },
            DecoderDesc::Entry(values) => Decoder::Entry(values.into()),
            DecoderDesc::Return { proto, args } => Decoder::Return {
                proto: proto.map(Into::into),
                args: args.map(Into::into),
            },
        }
    }
}

impl From<Format> for FormatDesc {
    fn from(f: Format) -> FormatDesc {
        FormatDesc {
            name: f.name,
            id: f.id,
            common: f.common.into_iter().map(Into::into).collect(),
            fields: f.fields.into_iter().map(Into::into).collect(),
            symbolic: f.symbolic,
            addresses: f.addresses,
        }
    }
}

impl From<FormatDesc> for Format {
    fn from(f: FormatDesc) -> Format {
        Format {
            name: f.name,
            id: f.id,
            common: f.common.into_iter().map(Into::into).collect(),
            fields: f.fields.into_iter().map(Into::into).collect(),
            symbolic: f.symbolic,
            // A recording keeps the tables its recorder resolved.
            enumerated: Vec::new(),
            addresses: f.addresses,
        }
    }
}

impl From<Field> for FieldDesc {
    fn from(f: Field) -> FieldDesc {
        FieldDesc {
            name: f.name,
            c_type: f.c_type,
            offset: f.offset,
            size: f.size,
            signed: f.signed,
            kind: f.kind.into(),
        }
    }
}

impl From<FieldDesc> for Field {
    fn from(f: FieldDesc) -> Field {
        Field {
            name: f.name,
            c_type: f.c_type,
            offset: f.offset,
            size: f.size,
            signed: f.signed,
            kind: f.kind.into(),
        }
    }
}

impl From<FieldKind> for FieldKindDesc {
    fn from(k: FieldKind) -> FieldKindDesc {
        match k {
            FieldKind::Int { bytes, signed } => FieldKindDesc::Int { bytes, signed },
            FieldKind::Pointer => FieldKindDesc::Pointer,
            FieldKind::String { len } => FieldKindDesc::String { len },
            FieldKind::DataLoc { elem } => FieldKindDesc::DataLoc { elem },
            FieldKind::Array {
                elem_bytes,
                len,
                signed,
            } => FieldKindDesc::Array {
                elem_bytes,
                len,
                signed,
            },
            FieldKind::Other => FieldKindDesc::Other,
        }
    }
}

impl From<FieldKindDesc> for FieldKind {
    fn from(k: FieldKindDesc) -> FieldKind {
        match k {
            FieldKindDesc::Int { bytes, signed } => FieldKind::Int { bytes, signed },
            FieldKindDesc::Pointer => FieldKind::Pointer,
            FieldKindDesc::String { len } => FieldKind::String { len },
            FieldKindDesc::DataLoc { elem } => FieldKind::DataLoc { elem },
            FieldKindDesc::Array {
                elem_bytes,
                len,
                signed,
            } => FieldKind::Array {
                elem_bytes,
                len,
                signed,
            },
            FieldKindDesc::Other => FieldKind::Other,
        }
    }
}

impl From<Values> for ValuesDesc {
    fn from(v: Values) -> ValuesDesc {
        let (columns, params, strings, memory, probe) = v.into_recorded();
        ValuesDesc {
            columns: columns.into_iter().map(Into::into).collect(),
            params: (params.into_iter())
                .map(|(name, kind)| (name, kind.into()))
                .collect(),
            strings: strings.into_iter().map(Into::into).collect(),
            memory: memory.into(),
            probe,
        }
    }
}

impl From<ValuesDesc> for Values {
    fn from(v: ValuesDesc) -> Values {
        Values::recorded(
            v.columns.into_iter().map(Into::into).collect(),
            (v.params.into_iter())
                .map(|(name, kind)| (name, kind.into()))
                .collect(),
            v.strings.into_iter().map(Into::into).collect(),
            v.memory.into(),
            v.probe,
        )
    }
}

impl From<Column> for ColumnDesc {
    fn from(c: Column) -> ColumnDesc {
        ColumnDesc {
            name: c.name,
            place: c.place.into(),
            kind: c.kind.into(),
        }
    }
}

impl From<ColumnDesc> for Column {
    fn from(c: ColumnDesc) -> Column {
        Column {
            name: c.name,
            place: c.place.into(),
            kind: c.kind.into(),
            // A recording keeps a `usym()` value as its address.
            symbol: false,
        }
    }
}

impl From<Place> for PlaceDesc {
    fn from(p: Place) -> PlaceDesc {
        match p {
            Place::Register(n) => PlaceDesc::Register(n),
            Place::Field(n) => PlaceDesc::Field(n),
        }
    }
}

impl From<PlaceDesc> for Place {
    fn from(p: PlaceDesc) -> Place {
        match p {
            PlaceDesc::Register(n) => Place::Register(n),
            PlaceDesc::Field(n) => Place::Field(n),
        }
    }
}

impl From<Memory> for MemoryDesc {
    fn from(m: Memory) -> MemoryDesc {
        match m {
            Memory::User => MemoryDesc::User,
            Memory::ByAddress => MemoryDesc::ByAddress,
        }
    }
}

impl From<MemoryDesc> for Memory {
    fn from(m: MemoryDesc) -> Memory {
        match m {
            MemoryDesc::User => Memory::User,
            MemoryDesc::ByAddress => Memory::ByAddress,
        }
    }
}

impl From<Kind> for KindDesc {
    fn from(k: Kind) -> KindDesc {
        match k {
            Kind::Signed(n) => KindDesc::Signed(n),
            Kind::Unsigned(n) => KindDesc::Unsigned(n),
            Kind::Bool => KindDesc::Bool,
            Kind::Net { size, addr } => KindDesc::Net { size, addr },
            Kind::Enum { size, values } => KindDesc::Enum { size, values },
            Kind::Str => KindDesc::Str,
            Kind::Pointer { pointee } => KindDesc::Pointer { pointee },
            Kind::Other { name } => KindDesc::Other { name },
            Kind::Void => KindDesc::Void,
        }
    }
}

impl From<KindDesc> for Kind {
    fn from(k: KindDesc) -> Kind {
        match k {
            KindDesc::Signed(n) => Kind::Signed(n),
            KindDesc::Unsigned(n) => Kind::Unsigned(n),
            KindDesc::Bool => Kind::Bool,
            KindDesc::Net { size, addr } => Kind::Net { size, addr },
            KindDesc::Enum { size, values } => Kind::Enum { size, values },
            KindDesc::Str => Kind::Str,
            KindDesc::Pointer { pointee } => Kind::Pointer { pointee },
            KindDesc::Other { name } => Kind::Other { name },
            KindDesc::Void => Kind::Void,
        }
    }
}

impl From<Prototype> for PrototypeDesc {
    fn from(p: Prototype) -> PrototypeDesc {
        PrototypeDesc {
            params: (p.params.into_iter())
                .map(|p| ParamDesc {
                    name: p.name,
                    kind: p.kind.into(),
                })
                .collect(),
            ret: p.ret.into(),
        }
    }
}

impl From<PrototypeDesc> for Prototype {
    fn from(p: PrototypeDesc) -> Prototype {
        Prototype {
            params: (p.params.into_iter())
                .map(|p| Param {
                    name: p.name,
                    kind: p.kind.into(),
                })
                .collect(),
            ret: p.ret.into(),
        }
    }
}
