//! USDT probes' argument places (`UsdtArg`, `UsdtArgs`).

use crate::*;

/// Lowest kernel address on x86-64: pointers below are user memory.
pub const KERNEL_SPACE_START: u64 = 0xffff_8000_0000_0000;

/// [`UsdtArg::kind`]: no such argument (its word is 0).
pub const USDT_NONE: u8 = 0;
/// [`UsdtArg::kind`]: a constant, [`UsdtArg::value`] (`-4@$5`).
pub const USDT_CONST: u8 = 1;
/// [`UsdtArg::kind`]: the register at pt_regs offset [`UsdtArg::reg`] (`-4@%eax`).
pub const USDT_REG: u8 = 2;
/// [`UsdtArg::kind`]: [`UsdtArg::size`] bytes of user memory at that register plus
/// [`UsdtArg::value`] (`8@-16(%rbp)`; a `sym(%rip)` operand is the instruction pointer plus
/// the symbol's distance from the probe).
pub const USDT_MEM: u8 = 3;

/// Where one USDT argument is (the note's `SIZE@OPERAND`, decoded by userspace).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsdtArg {
    /// The constant ([`USDT_CONST`]) or the displacement ([`USDT_MEM`]).
    pub value: i64,
    /// Byte offset of the register in `struct pt_regs` ([`USDT_REG`], [`USDT_MEM`]).
    pub reg: u16,
    /// A `USDT_*` kind.
    pub kind: u8,
    /// Bytes read from memory: 1, 2, 4 or 8.
    pub size: u8,
    pub _pad: u32,
}

/// The arguments of one USDT probe slot: `Event::data[i]` is argument `i`, its upper bits as
/// the register held them (userspace types each by its size and sign).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsdtArgs {
    pub args: [UsdtArg; word::ARGS],
}
