//! Typed function parameters, as BTF (kernel functions) or DWARF (user functions) describe
//! them: what the BPF program must capture and how userspace prints each value.

use std::fmt;

/// How one parameter (or a return value, or a struct member) is read and printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A signed integer of this many bytes (1, 2, 4 or 8).
    Signed(u8),
    /// An unsigned integer of this many bytes.
    Unsigned(u8),
    /// `bool` / `_Bool`.
    Bool,
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
    Void,
}

impl Kind {
    /// Bytes this kind occupies in a register or in memory (8 for pointers).
    pub fn size(&self) -> u8 {
        match self {
            Kind::Signed(n) | Kind::Unsigned(n) => *n,
            Kind::Enum { size, .. } => *size,
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
            Kind::Enum { .. } => f.write_str("enum"),
            Kind::Str => f.write_str("char *"),
            Kind::Pointer { pointee } => write!(f, "{pointee} *"),
            Kind::Other { name } => f.write_str(name),
            Kind::Void => f.write_str("void"),
        }
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

/// A member reached through a pointer parameter (`how->flags`): where to read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Index of the pointer parameter.
    pub arg: usize,
    /// Byte offset of the member in the pointed-to struct (nested members added up).
    pub offset: u32,
    pub kind: Kind,
}
