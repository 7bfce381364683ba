//! `--filter` decided in the kernel: comparisons (`FilterAtom`), their tree (`Filter`) and the glob
//! automata.

/// Comparisons in one [`Filter`]: `--filter`'s expression is these, combined by a truth table
/// of one word (2^6 combinations). More would take a table lookup at an index the verifier
/// must then track exactly, which stops it pruning the paths through the comparisons.
pub const FILTER_ATOMS: usize = 6;

/// What a [`FilterAtom`] compares.
pub mod operand {
    /// Unused atom (false).
    pub const NONE: u8 = 0;
    /// A number at [`FilterAtom::src`](super::FilterAtom) (a [`src`](super::src) in the
    /// captured words).
    pub const VALUE: u8 = 1;
    pub const PID: u8 = 2;
    pub const TID: u8 = 3;
    pub const CPU: u8 = 4;
    /// A string the slot read (its first entry of read [`FilterAtom::src`](super::FilterAtom)
    /// in the event's string area), matched by a glob automaton.
    pub const STRING: u8 = 5;
    /// The task's comm, matched by a glob automaton.
    pub const COMM: u8 = 6;
    /// A `char[N]` of the record head at [`FilterAtom::src`](super::FilterAtom)'s offset, up
    /// to its size or a NUL, matched by a glob automaton.
    pub const RECORD_CHARS: u8 = 7;
}

/// How a [`FilterAtom`] compares (numbers; strings only match their automaton).
pub mod cmp {
    pub const EQ: u8 = 0;
    pub const NE: u8 = 1;
    pub const LT: u8 = 2;
    pub const LE: u8 = 3;
    pub const GT: u8 = 4;
    pub const GE: u8 = 5;
    /// Any bit in common: `(value & constant) != 0`.
    pub const AND: u8 = 6;
}

/// One comparison of a [`Filter`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterAtom {
    /// The constant compared with (numbers).
    pub value: u64,
    /// [`src`] of the number ([`operand::VALUE`]).
    pub src: u32,
    /// Strings: the automaton's first row in `GLOBS`.
    pub glob: u32,
    /// An [`operand`].
    pub operand: u8,
    /// A [`cmp`].
    pub cmp: u8,
    /// Numbers: compared as signed. Strings: the empty string matches.
    pub signed_or_empty: u8,
    pub _pad: [u8; 5],
}

/// `--filter` for one slot: each atom gives a bit, and bit `i` of the table (i = the atoms'
/// bits, atom k at bit k) says whether that combination passes. Any expression of `&&`, `||`,
/// `!` and parentheses over the atoms is one table, so the program evaluates a fixed number
/// of comparisons and one lookup, with no stack machine for the verifier to walk.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub table: u64,
    pub atoms: [FilterAtom; FILTER_ATOMS],
}

/// Bytes of a glob automaton's row (one next state per byte value).
pub const GLOB_ROW: usize = 256;
/// A row entry's bit: the state it leads to accepts (the string read so far matches).
pub const GLOB_ACCEPT: u8 = 0x80;
/// A row entry leading nowhere: no continuation can match.
pub const GLOB_DEAD: u8 = 0x7f;
/// States of one automaton (the rest of the byte is [`GLOB_ACCEPT`]; [`GLOB_DEAD`] is none).
pub const GLOB_STATES: usize = 127;
