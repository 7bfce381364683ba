//! Typed function parameters, as BTF (kernel functions) or DWARF (user functions) describe
//! them: what the BPF program must capture and how userspace prints each value.

use std::fmt;

use super::format::Value;

/// How one parameter (or a return value, or a struct member) is read and printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// A signed integer of this many bytes (1, 2, 4 or 8).
    Signed(u8),
    /// An unsigned integer of this many bytes.
    Unsigned(u8),
    /// `bool` / `_Bool`.
    Bool,
    /// An integer in network byte order (the kernel's `__be16`, `__be32`, `__be64`): shown in
    /// host order, the port or protocol number a user knows; a 4-byte one whose name says it
    /// is an address (`*addr*`: `skc_daddr`, `saddr`) as an IPv4 address, `127.0.0.1`.
    Net { size: u8, addr: bool },
    /// An enum of this many bytes, with its named values.
    Enum {
        size: u8,
        values: Vec<(String, i64)>,
    },
    /// `char *` / `const char *`: a NUL-terminated string the BPF program reads.
    Str,
    /// Any other pointer, printed in hex. `pointee` names the type pointed to (`struct open_how`)
    /// for messages and member access.
    Pointer { pointee: String },
    /// Anything else passed in a register (a struct by value, a float): printed as raw hex.
    Other { name: String },
    /// `void` (return type of a function that returns nothing).
    #[default]
    Void,
}

impl Kind {
    /// Bytes this kind occupies in a register or in memory (8 for pointers).
    pub fn size(&self) -> u8 {
        match self {
            Kind::Signed(n) | Kind::Unsigned(n) => *n,
            Kind::Enum { size, .. } | Kind::Net { size, .. } => *size,
            Kind::Bool => 1,
            Kind::Str | Kind::Pointer { .. } | Kind::Other { .. } => 8,
            Kind::Void => 0,
        }
    }
}

impl fmt::Display for Kind {
    /// A C-like type name for messages (`s32`, `char *`, `struct open_how *`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Signed(n) => write!(f, "s{}", n * 8),
            Kind::Unsigned(n) => write!(f, "u{}", n * 8),
            Kind::Bool => f.write_str("bool"),
            Kind::Net { size, .. } => write!(f, "__be{}", size * 8),
            Kind::Enum { .. } => f.write_str("enum"),
            Kind::Str => f.write_str("char *"),
            Kind::Pointer { pointee } => write!(f, "{pointee} *"),
            Kind::Other { name } => f.write_str(name),
            Kind::Void => f.write_str("void"),
        }
    }
}

impl Kind {
    /// A register's raw bits as this kind's value. `string` is what the BPF program read for
    /// a `char *` argument (`None`: not read, the pointer is shown).
    pub fn value(&self, raw: u64, string: Option<Value>) -> Value {
        let bits = u32::from(self.size().min(8)) * 8;
        let low = if bits == 0 || bits >= 64 {
            raw
        } else {
            raw & ((1u64 << bits) - 1)
        };
        let signed = || -> i64 {
            match bits {
                0 | 64.. => raw as i64,
                _ => ((low << (64 - bits)) as i64) >> (64 - bits),
            }
        };
        match self {
            Kind::Signed(_) => Value::Int(signed()),
            Kind::Unsigned(_) => Value::Uint(low),
            Kind::Bool => Value::Bool(low != 0),
            Kind::Net {
                size: 4,
                addr: true,
            } => Value::Word(std::net::Ipv4Addr::from((low as u32).to_le_bytes()).to_string()),
            Kind::Net { size, .. } => Value::Uint(net_to_host(low, *size)),
            Kind::Enum { values, .. } => {
                let v = signed();
                match values.iter().find(|(_, n)| *n == v) {
                    Some((name, _)) => Value::Named(v, name.clone()),
                    None => Value::Int(v),
                }
            }
            Kind::Str => string.unwrap_or(Value::Hex(raw)),
            Kind::Pointer { .. } | Kind::Other { .. } | Kind::Void => Value::Hex(raw),
        }
    }

    /// The errno a return value of this kind stands for: a signed integer from -4095 to -1
    /// with a known name (`ENOENT` for -2).
    pub fn errno(&self, raw: u64) -> Option<&'static str> {
        match (self, self.value(raw, None)) {
            (Kind::Signed(_), Value::Int(v)) if (-4095..0).contains(&v) => super::errno::name(-v),
            _ => None,
        }
    }
}

/// A `size`-byte integer as stored in network byte order (read little-endian from memory), in
/// host order; and back, the same swap.
pub fn net_to_host(raw: u64, size: u8) -> u64 {
    match size {
        2 => u64::from((raw as u16).swap_bytes()),
        4 => u64::from((raw as u32).swap_bytes()),
        8 => raw.swap_bytes(),
        _ => raw,
    }
}

/// Whether a 4-byte network-order value named `name` is an IPv4 address (`skc_daddr`,
/// `saddr`, `ipv4_addr`).
pub fn names_an_address(name: &str) -> bool {
    name.to_ascii_lowercase().contains("addr")
}

/// A parameter as messages name it; `ret`, the return value.
fn which_param(param: &str) -> String {
    match param {
        "ret" => "the return value".to_string(),
        _ => format!("parameter '{param}'"),
    }
}

/// Why `PARAM->member` cannot be read, from BTF or DWARF alike.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("'{function}' has no parameter {arg} (it takes {})", params.len())]
    NoParam {
        function: String,
        arg: usize,
        params: Vec<String>,
    },
    #[error("{} is {kind}, not a pointer to a struct or union", which_param(.param))]
    NotAStructPointer { param: String, kind: String },
    #[error("{strukt} has no member '{member}'")]
    NoMember {
        strukt: String,
        member: String,
        members: Vec<String>,
    },
    #[error("'{member}' of {strukt} is a bitfield, which has no byte offset")]
    Bitfield { strukt: String, member: String },
    #[error(
        "'{member}' is {kind}: a member read loads at most {max} pointers after the parameter"
    )]
    TooDeep {
        member: String,
        kind: String,
        max: usize,
    },
    #[error("'{member}' is {kind}, not a struct or union, so it has no members")]
    NotAStruct { member: String, kind: String },
    #[error("'{member}' of {strukt} has no constant byte offset")]
    Location { strukt: String, member: String },
}

impl MemberError {
    /// Concrete next steps, printed as `hint:` lines under the error.
    pub fn hints(&self) -> Vec<String> {
        let hint = match self {
            MemberError::NoParam { params, .. } => {
                format!("its parameters: {}", params.join(", "))
            }
            MemberError::NotAStructPointer { param, .. } => format!("print '{param}' itself"),
            MemberError::NoMember {
                strukt, members, ..
            } => format!("members of {strukt}: {}", members.join(", ")),
            MemberError::Bitfield { strukt, .. } | MemberError::Location { strukt, .. } => {
                format!("print a whole neighbouring member of {strukt} instead")
            }
            MemberError::TooDeep { member, .. } => {
                format!("trace a function that takes '{member}' as a parameter")
            }
            MemberError::NotAStruct { member, .. } => format!("print '{member}' itself"),
        };
        vec![hint]
    }
}

/// One named parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: Kind,
}

/// A function's prototype: parameters in register order, and the return kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prototype {
    pub params: Vec<Param>,
    pub ret: Kind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_registers_become_typed_values() {
        assert_eq!(Kind::Signed(4).value(0xffff_ff9c, None), Value::Int(-100));
        assert_eq!(Kind::Signed(8).value(u64::MAX, None), Value::Int(-1));
        assert_eq!(Kind::Unsigned(1).value(0x1ff, None), Value::Uint(0xff));
        // Network order, read little-endian from memory: port 80 is the bytes 00 50; 127.0.0.1
        // the bytes 7f 00 00 01.
        let port = Kind::Net {
            size: 2,
            addr: false,
        };
        assert_eq!(port.value(0x5000, None), Value::Uint(80));
        assert_eq!(port.value(0xdead_5000, None), Value::Uint(80));
        let addr = Kind::Net {
            size: 4,
            addr: true,
        };
        assert_eq!(
            addr.value(0x0100_007f, None),
            Value::Word("127.0.0.1".into())
        );
        let seq = Kind::Net {
            size: 4,
            addr: false,
        };
        assert_eq!(seq.value(0x0100_0000, None), Value::Uint(1));
        assert_eq!(net_to_host(net_to_host(0x1234, 2), 2), 0x1234);
        assert!(names_an_address("skc_rcv_saddr") && !names_an_address("skc_dport"));
        assert_eq!(Kind::Bool.value(0x100, None), Value::Bool(false));
        let color = Kind::Enum {
            size: 4,
            values: vec![("RED".into(), 0), ("GREEN".into(), 5)],
        };
        assert_eq!(color.value(5, None), Value::Named(5, "GREEN".into()));
        assert_eq!(color.value(7, None), Value::Int(7));
        assert_eq!(
            Kind::Str.value(0x1000, Some(Value::Str("/etc".into()))),
            Value::Str("/etc".into())
        );
        assert_eq!(Kind::Str.value(0x1000, None), Value::Hex(0x1000));
        let ptr = Kind::Pointer {
            pointee: "struct open_how".into(),
        };
        assert_eq!(ptr.value(0xffff_c900, None), Value::Hex(0xffff_c900));
    }

    #[test]
    fn negative_errno_returns_are_named() {
        let int = Kind::Signed(4);
        assert_eq!(int.errno((-2i64) as u64), Some("ENOENT"));
        assert_eq!(
            int.errno(0xffff_fffe),
            Some("ENOENT"),
            "an int in a 64-bit register"
        );
        assert_eq!(int.errno(3), None);
        assert_eq!(int.errno((-4000i64) as u64), None);
        assert_eq!(Kind::Unsigned(8).errno(u64::MAX), None);
        assert_eq!(super::super::errno::name(40), Some("ELOOP"));
    }
}

/// The `arg` of a [`Member`] read through the function's return value (`ret->member`, on a
/// return probe): where the event carries it.
pub const RETURN_ARG: usize = tracer_common::word::RETURN;

/// A member reached through a pointer parameter (`how->flags`, `file->f_path.dentry->d_name`):
/// where to read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Member {
    /// Index of the pointer parameter, or [`RETURN_ARG`].
    pub arg: usize,
    /// The pointers loaded on the way, in order: each one's byte offset in the struct reached
    /// so far (`file->f_path.dentry`: `f_path.dentry`'s offset in `struct file`). At most
    /// [`FIELD_DEREFS`](tracer_common::FIELD_DEREFS).
    pub derefs: Vec<u32>,
    /// Byte offset of the member in the last struct reached (nested members added up).
    pub offset: u32,
    pub kind: Kind,
    /// A `char[N]` member: its value is its address, and its string is read in place
    /// (`kind` is then [`Kind::Str`]).
    pub in_place: bool,
}

impl Member {
    /// A member of the parameter's own struct (no pointer loaded on the way).
    pub fn at(arg: usize, offset: u32, kind: Kind) -> Member {
        Member {
            arg,
            offset,
            kind,
            ..Member::default()
        }
    }
}
