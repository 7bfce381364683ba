//! A probe's event decoded into named, typed values by its [`Decoder`].

use tracer_common::{word, Event};

use super::values::Values;
use super::Decoder;
use crate::kernel::format::Value;
use crate::kernel::params::Kind;

/// The event's named values, its return value, and the errno that return value stands for.
pub type DecodedValues<'a> = (Vec<(&'a str, Value)>, Option<Value>, Option<&'static str>);

/// Names the addresses `usym()` asked for (`columns`, from [`Decoder::symbol_columns`]) by
/// the function of process `pid` each is in: `worker`, or `worker+0x12` inside it; an address
/// no symbol covers stays hex.
pub fn name_functions(
    args: &mut [(&str, Value)],
    columns: &[usize],
    pid: u32,
    symbolizer: &mut crate::stacks::Symbolizer,
) {
    for &i in columns {
        let Some((_, value)) = args.get_mut(i) else {
            continue;
        };
        let Value::Hex(addr) = *value else { continue };
        let frame = symbolizer.frame(pid, addr);
        if let Some(name) = frame.symbol {
            *value = Value::Word(match frame.offset {
                0 => name,
                offset => format!("{name}+{offset:#x}"),
            });
        }
    }
}

/// The event's values; `strings` are the string entries it came with.
pub fn decode<'a>(decoder: &'a Decoder, event: &Event, strings: &[u8]) -> DecodedValues<'a> {
    let mut read = match strings.is_empty() {
        true => Default::default(),
        false => super::strings::values(strings),
    };
    match decoder {
        Decoder::Tracepoint {
            format,
            strings,
            selection,
        } => {
            // The captured record head as bytes, on the stack: this runs for every event.
            let mut bytes = [0u8; 8 * tracer_common::DATA_WORDS];
            for (chunk, word) in bytes.chunks_exact_mut(8).zip(event.data) {
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            // Fields named __* (the syscall number) are the tracepoint's plumbing, not arguments.
            let mut args: Vec<(&str, Value)> = format.decode(&bytes);
            args.retain(|(name, _)| !name.starts_with("__"));
            for (field, value) in strings.iter().zip(&mut read) {
                if let (Some(slot), Some(value)) = (
                    args.iter_mut().find(|(n, _)| *n == field.as_str()),
                    value.take(),
                ) {
                    slot.1 = value;
                }
            }
            if !selection.is_empty() {
                args = (selection.iter())
                    .filter_map(|name| args.iter().find(|(n, _)| n == name).cloned())
                    .collect();
            }
            (args, None, None)
        }
        Decoder::Return { proto, args } => {
            let raw = event.data[word::RETURN];
            // The return value's string is read after the arguments' strings.
            let ret_string = args.as_ref().map_or(0, Values::string_reads);
            let ret_string = read.get_mut(ret_string).and_then(Option::take);
            let args = match args {
                Some(values) => values.decode(event, &mut read),
                None => Vec::new(),
            };
            match proto.as_ref().map(|p| &p.ret) {
                Some(Kind::Void) => (args, None, None),
                Some(kind) => {
                    let value = kind.value(raw, ret_string);
                    (args, Some(value), kind.errno(raw))
                }
                None => (args, Some(Value::Int(raw as i64)), None),
            }
        }
        Decoder::Entry(values) => (values.decode(event, &mut read), None, None),
    }
}
