//! Registers and struct members a slot reads: `pt_regs` offsets, `FieldRead`.

/// Tracepoint slots with a raw twin (`rtp_N`) for counting syscalls.
pub const RAW_SYSCALL_SLOTS: u32 = 4;

/// x86-64 `struct pt_regs` offsets the raw syscall slots read: `orig_ax` and `cs`.
pub const PT_REGS_ORIG_AX: u64 = 120;
pub const PT_REGS_CS: u64 = 136;
/// x86-64 `struct pt_regs` offset of the user stack pointer: after a successful exec, the new
/// image's `argc`, then its `argv` pointers.
pub const PT_REGS_SP: u64 = 152;
/// The auxiliary vector's `AT_EXECFN`: the path the exec was given, on the new stack.
pub const AT_EXECFN: u64 = 31;
/// x86-64 `struct pt_regs` offsets of a syscall's six arguments: di, si, dx, r10, r8, r9.
pub const PT_REGS_SYSCALL_ARGS: [u64; 6] = [112, 104, 96, 56, 72, 64];
/// `cs` of 32-bit user code (`__USER32_CS`): its syscalls have other numbers and are not
/// traced by the `syscalls` tracepoints, so the raw slots skip them too.
pub const USER32_CS: u64 = 0x23;

/// Struct member reads per probe slot (`FUNC(how->flags)`), each into one `Event::fields` word.
pub const FIELD_READS: usize = 4;
/// [`FieldRead::flags`]: the struct is in user memory (uprobes).
pub const FIELD_USER: u8 = 1 << 0;
/// [`FieldRead::flags`]: user or kernel memory, told apart by the pointer's address (kprobes:
/// gcc-built kernels' BTF has no `__user` tags).
pub const FIELD_AUTO: u8 = 1 << 1;

/// [`FieldRead::flags`]: the value is the member's address, not its bytes (a `char[N]`
/// member, whose string a [`StrRead`](crate::StrRead) then reads in place).
pub const FIELD_ADDRESS: u8 = 1 << 2;
/// Pointers a member read loads on its way at most (`bio->bi_bdev->bd_disk->disk_name`: two,
/// after the parameter's own).
pub const FIELD_DEREFS: usize = 3;

/// One struct member read: `size` bytes at `offset` past the pointer in argument register
/// `arg`, after `hops` pointer loads: each replaces the address with the pointer at
/// `derefs[i]` past it (`a->b->c`: `derefs[0]` is `b`'s offset in `a`'s struct). A `size` of
/// 0 marks an unused entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldRead {
    pub offset: u32,
    /// Argument register index, 0..5.
    pub arg: u8,
    /// 1, 2, 4 or 8.
    pub size: u8,
    /// `FIELD_*` bits; neither [`FIELD_USER`] nor [`FIELD_AUTO`]: kernel memory.
    pub flags: u8,
    /// Pointer loads before the read, at most [`FIELD_DEREFS`].
    pub hops: u8,
    pub derefs: [u32; FIELD_DEREFS],
}
