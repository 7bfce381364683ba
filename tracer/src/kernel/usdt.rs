//! USDT probes of an ELF file: its `.note.stapsdt` notes (where each probe is, its semaphore,
//! provider, name and argument specs) and the x86-64 argument specs (`-4@%eax`,
//! `8@-16(%rbp)`, `-4@$5`, `-8@sym(%rip)`) decoded into where each argument lives.
//!
//! The note layout is systemtap's (<https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation>):
//! owner `stapsdt`, type 3, and a descriptor of three addresses (the probe, the link-time
//! address of `.stapsdt.base`, the semaphore) followed by three NUL-terminated strings.

use std::path::Path;

use object::{Object, ObjectSection};

use super::Error;

/// `NT_STAPSDT`.
const NT_STAPSDT: u32 = 3;

/// One probe site, as its note describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    pub provider: String,
    pub name: String,
    /// Link-time address of the probe's instruction (a `nop`), adjusted as libbpf and bcc do
    /// when the file was prelinked (`.stapsdt.base` moved since the note was written).
    pub address: u64,
    /// Link-time address of the probe's semaphore (a `unsigned short` the program tests
    /// before it computes the arguments), 0 when it has none.
    pub semaphore: u64,
    /// The argument specs, space-separated (`-4@%eax 8@-16(%rbp)`).
    pub args: String,
}

impl Note {
    /// `PROVIDER:NAME`.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }
}

fn parse_error(path: &Path, reason: impl ToString) -> Error {
    Error::Parse {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// The USDT notes of the ELF file `data` (none when it has no `.note.stapsdt`), in file order.
pub fn notes(data: &[u8], path: &Path) -> Result<Vec<Note>, Error> {
    let file = object::File::parse(data).map_err(|e| parse_error(path, e))?;
    let Some(section) = file.section_by_name(".note.stapsdt") else {
        return Ok(Vec::new());
    };
    let bytes = section.data().map_err(|e| parse_error(path, e))?;
    let base = file.section_by_name(".stapsdt.base").map(|s| s.address());
    parse_notes(bytes, base, file.is_little_endian()).map_err(|reason| parse_error(path, reason))
}

/// The notes in a `.note.stapsdt` section's bytes; `base` is the address of `.stapsdt.base`.
fn parse_notes(mut bytes: &[u8], base: Option<u64>, little: bool) -> Result<Vec<Note>, String> {
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        let word: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(match little {
            true => u32::from_le_bytes(word),
            false => u32::from_be_bytes(word),
        })
    };
    let u64_at = |b: &[u8], at: usize| -> Option<u64> {
        let word: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
        Some(match little {
            true => u64::from_le_bytes(word),
            false => u64::from_be_bytes(word),
        })
    };
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut notes = Vec::new();
    while !bytes.is_empty() {
        let truncated = || "truncated .note.stapsdt".to_string();
        let namesz = u32_at(bytes, 0).ok_or_else(truncated)? as usize;
        let descsz = u32_at(bytes, 4).ok_or_else(truncated)? as usize;
        let kind = u32_at(bytes, 8).ok_or_else(truncated)?;
        let desc_at = align4(12 + namesz).ok_or_else(truncated)?;
        let end = desc_at
            .checked_add(descsz)
            .and_then(align4)
            .ok_or_else(truncated)?;
        let owner = bytes.get(12..12 + namesz).ok_or_else(truncated)?;
        let desc = bytes.get(desc_at..desc_at + descsz).ok_or_else(truncated)?;
        bytes = bytes.get(end..).unwrap_or_default();
        if kind != NT_STAPSDT || owner != b"stapsdt\0" {
            continue;
        }
        let bad = || "malformed stapsdt note".to_string();
        let mut address = u64_at(desc, 0).ok_or_else(bad)?;
        let note_base = u64_at(desc, 8).ok_or_else(bad)?;
        let semaphore = u64_at(desc, 16).ok_or_else(bad)?;
        let mut strings = desc.get(24..).ok_or_else(bad)?.split(|&b| b == 0);
        let mut string = || -> Result<String, String> {
            let s = strings.next().ok_or_else(bad)?;
            String::from_utf8(s.to_vec()).map_err(|_| bad())
        };
        let (provider, name, args) = (string()?, string()?, string()?);
        // Prelinked: the file moved after the note was written; so did `.stapsdt.base`.
        if let (Some(base), true) = (base, note_base != 0) {
            address = address.wrapping_add(base).wrapping_sub(note_base);
        }
        notes.push(Note {
            provider,
            name,
            address,
            semaphore,
            args,
        });
    }
    Ok(notes)
}

/// Where one argument is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// `$5`.
    Const(i64),
    /// `%eax`: the register (its pt_regs offset).
    Reg { reg: u16 },
    /// `-16(%rbp)`: memory at the register plus a displacement.
    Mem { reg: u16, disp: i64 },
    /// `sym+16(%rip)`: memory at a symbol of the file plus an offset.
    Symbol { symbol: String, offset: i64 },
    /// What tracer cannot read (`(%rax,%rbx,8)`, `%ah`), as written.
    Unsupported(String),
}

/// One argument spec: `SIZE@OPERAND`, the size negative for a signed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// 1, 2, 4 or 8.
    pub size: u8,
    pub signed: bool,
    pub operand: Operand,
}

/// `struct pt_regs` offset of the x86-64 general register that `name` (without `%`) names,
/// in any of its widths (`rax`, `eax`, `ax`, `al`, `r8d`); `None` for others (`ah`: its bits
/// are not the low ones).
pub fn register(name: &str) -> Option<u16> {
    const REGS: [(&str, [&str; 4], u16); 17] = [
        ("rax", ["eax", "ax", "al", ""], 80),
        ("rbx", ["ebx", "bx", "bl", ""], 40),
        ("rcx", ["ecx", "cx", "cl", ""], 88),
        ("rdx", ["edx", "dx", "dl", ""], 96),
        ("rsi", ["esi", "si", "sil", ""], 104),
        ("rdi", ["edi", "di", "dil", ""], 112),
        ("rbp", ["ebp", "bp", "bpl", ""], 32),
        ("rsp", ["esp", "sp", "spl", ""], 152),
        ("r8", ["r8d", "r8w", "r8b", "r8l"], 72),
        ("r9", ["r9d", "r9w", "r9b", "r9l"], 64),
        ("r10", ["r10d", "r10w", "r10b", "r10l"], 56),
        ("r11", ["r11d", "r11w", "r11b", "r11l"], 48),
        ("r12", ["r12d", "r12w", "r12b", "r12l"], 24),
        ("r13", ["r13d", "r13w", "r13b", "r13l"], 16),
        ("r14", ["r14d", "r14w", "r14b", "r14l"], 8),
        ("r15", ["r15d", "r15w", "r15b", "r15l"], 0),
        ("rip", ["eip", "", "", ""], 128),
    ];
    REGS.iter()
        .find(|(full, others, _)| *full == name || others.contains(&name))
        .map(|&(_, _, offset)| offset)
}

/// `%rip`'s pt_regs offset.
pub const RIP: u16 = 128;

fn number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok()?
        }
        None => return None,
    };
    Some(if negative { -value } else { value })
}

/// Decodes one operand (after `SIZE@`).
fn operand(text: &str) -> Operand {
    let unsupported = || Operand::Unsupported(text.to_string());
    if let Some(value) = text.strip_prefix('$') {
        return number(value).map_or_else(unsupported, Operand::Const);
    }
    if let Some(name) = text.strip_prefix('%') {
        return register(name)
            .filter(|&r| r != RIP)
            .map_or_else(unsupported, |reg| Operand::Reg { reg });
    }
    let Some((disp, rest)) = text.split_once('(') else {
        return unsupported();
    };
    let Some(name) = rest.strip_suffix(')').and_then(|r| r.strip_prefix('%')) else {
        return unsupported();
    };
    let Some(reg) = register(name) else {
        return unsupported();
    };
    if let Some(disp) = (disp.is_empty()).then_some(0).or_else(|| number(disp)) {
        // A numeric displacement from %rip is relative to the next instruction, which the
        // note does not say.
        return match reg {
            RIP => unsupported(),
            _ => Operand::Mem { reg, disp },
        };
    }
    if reg != RIP {
        return unsupported();
    }
    // `sym`, `sym+16`, `sym-8`, and gcc's `16+sym`.
    let (symbol, offset) = match disp.split_once('+') {
        Some((a, b)) => match (number(a), number(b)) {
            (Some(offset), None) => (b, offset),
            (None, Some(offset)) => (a, offset),
            _ => return unsupported(),
        },
        None => match disp.split_once('-') {
            Some((a, b)) => match number(b) {
                Some(offset) => (a, -offset),
                None => return unsupported(),
            },
            None => (disp, 0),
        },
    };
    let symbolic = !symbol.is_empty()
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'));
    match symbolic {
        true => Operand::Symbol {
            symbol: symbol.to_string(),
            offset,
        },
        false => unsupported(),
    }
}

/// Decodes one argument spec (`-4@%eax`); a spec without `SIZE@` (old notes) is a signed
/// 8-byte value.
pub fn parse_arg(text: &str) -> Arg {
    let (size, signed, rest) = match text.split_once('@') {
        Some((size, rest)) => match size.parse::<i8>() {
            Ok(n @ (-8 | -4 | -2 | -1)) => (n.unsigned_abs(), true, rest),
            Ok(n @ (1 | 2 | 4 | 8)) => (n as u8, false, rest),
            _ => {
                return Arg {
                    size: 8,
                    signed: false,
                    operand: Operand::Unsupported(text.to_string()),
                }
            }
        },
        None => (8, true, text),
    };
    Arg {
        size,
        signed,
        operand: operand(rest),
    }
}

/// Decodes a note's argument specs, in order.
pub fn parse_args(specs: &str) -> Vec<Arg> {
    specs.split_whitespace().map(parse_arg).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_specs_decode_to_places() {
        let arg = |size, signed, operand| Arg {
            size,
            signed,
            operand,
        };
        assert_eq!(
            parse_args("-4@%eax 8@-16(%rbp) 8@%rdx -4@$5 -8@counter(%rip) 8@tab+16(%rip)"),
            vec![
                arg(4, true, Operand::Reg { reg: 80 }),
                arg(8, false, Operand::Mem { reg: 32, disp: -16 }),
                arg(8, false, Operand::Reg { reg: 96 }),
                arg(4, true, Operand::Const(5)),
                arg(
                    8,
                    true,
                    Operand::Symbol {
                        symbol: "counter".into(),
                        offset: 0
                    }
                ),
                arg(
                    8,
                    false,
                    Operand::Symbol {
                        symbol: "tab".into(),
                        offset: 16
                    }
                ),
            ]
        );
        assert_eq!(parse_arg("-1@%r8b").operand, Operand::Reg { reg: 72 });
        assert_eq!(
            parse_arg("2@(%rsp)").operand,
            Operand::Mem { reg: 152, disp: 0 }
        );
        assert_eq!(
            parse_arg("4@0x10(%r15)").operand,
            Operand::Mem { reg: 0, disp: 16 }
        );
        assert_eq!(parse_arg("-4@$-7").operand, Operand::Const(-7));
        assert_eq!(
            parse_arg("-4@112(%rsp)").operand,
            Operand::Mem {
                reg: 152,
                disp: 112
            }
        );
        assert_eq!(
            parse_arg("8@sym-8(%rip)").operand,
            Operand::Symbol {
                symbol: "sym".into(),
                offset: -8
            }
        );
        assert_eq!(
            parse_arg("-2@6+small(%rip)").operand,
            Operand::Symbol {
                symbol: "small".into(),
                offset: 6
            }
        );
        for odd in [
            "8@(%rax,%rbx,8)",
            "1@%ah",
            "8@16(%rip)",
            "3@%eax",
            "8@sym(%rax)",
        ] {
            assert!(
                matches!(parse_arg(odd).operand, Operand::Unsupported(_)),
                "{odd}"
            );
        }
        let old = parse_arg("%rdi");
        assert_eq!((old.size, old.signed), (8, true));
    }

    fn note(provider: &str, name: &str, addr: u64, base: u64, sema: u64, args: &str) -> Vec<u8> {
        let mut desc = Vec::new();
        for word in [addr, base, sema] {
            desc.extend_from_slice(&word.to_le_bytes());
        }
        for s in [provider, name, args] {
            desc.extend_from_slice(s.as_bytes());
            desc.push(0);
        }
        let mut out = Vec::new();
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&NT_STAPSDT.to_le_bytes());
        out.extend_from_slice(b"stapsdt\0");
        out.extend_from_slice(&desc);
        while out.len() % 4 != 0 {
            out.push(0);
        }
        out
    }

    #[test]
    fn notes_are_read_in_order_and_moved_with_a_prelinked_base() {
        let mut bytes = note(
            "python",
            "function__entry",
            0x4f20a1,
            0x8cc5a0,
            0xa84260,
            "8@%rbp 8@%r12 -4@%eax",
        );
        bytes.extend(note("tracer", "tick", 0x1139, 0x2004, 0, ""));
        let notes = parse_notes(&bytes, Some(0x8cc5a0), true).expect("notes");
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].full_name(), "python:function__entry");
        assert_eq!((notes[0].address, notes[0].semaphore), (0x4f20a1, 0xa84260));
        assert_eq!(notes[0].args, "8@%rbp 8@%r12 -4@%eax");
        // `.stapsdt.base` at 0x8cc5a0, the note written when it was at 0x2004.
        assert_eq!(notes[1].address, 0x1139 + 0x8cc5a0 - 0x2004);
        assert_eq!(notes[1].args, "");
        // Cut anywhere, the section is an error, never a panic (or the notes before the cut,
        // cut in a note's trailing padding).
        let first = note(
            "python",
            "function__entry",
            0x4f20a1,
            0x8cc5a0,
            0xa84260,
            "8@%rbp 8@%r12 -4@%eax",
        )
        .len();
        for cut in 1..bytes.len() {
            match parse_notes(&bytes[..cut], None, true) {
                Ok(notes) => {
                    let end = match notes.len() {
                        1 => first,
                        _ => bytes.len(),
                    };
                    assert!(cut + 3 >= end && cut <= end, "{cut}")
                }
                Err(reason) => assert_eq!(reason, "truncated .note.stapsdt"),
            }
        }
    }
}
