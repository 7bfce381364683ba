//! The strings a hit carries behind its event (`SlotConfig::strs`, read by the BPF program into
//! string entries), as values: a string, a string cut at `--strlen`, an array of them (argv),
//! or nothing (the pointer could not be read: its value is shown instead).

use tracer_common::{str_entries, str_flag, STR_ENTRY, STR_READS};

use crate::kernel::format::Value;

/// Each read's value, by read index; `None` where the read has no value (not read, or its
/// pointer could not be read).
pub fn values(area: &[u8]) -> [Option<Value>; STR_READS] {
    let mut values: [Option<Value>; STR_READS] = Default::default();
    let mut open_array = None;
    for entry in str_entries(area) {
        let read = usize::from(entry.read);
        let Some(slot) = values.get_mut(read) else {
            continue;
        };
        if entry.flags & str_flag::ARRAY != 0 {
            *slot = Some(Value::Array(Vec::new()));
            open_array = Some(read);
            continue;
        }
        if open_array == Some(read) {
            let Some(Value::Array(items)) = slot else {
                continue;
            };
            match entry.flags {
                // A NULL or unreadable element pointer ended the array.
                f if f & str_flag::FAULT != 0 => {}
                f if f & (str_flag::MORE | str_flag::NO_ROOM) != 0 => items.push(Value::Etc),
                _ => items.push(string(entry.flags, entry.bytes)),
            }
            continue;
        }
        open_array = None;
        *slot = match entry.flags {
            f if f & str_flag::FAULT != 0 => None,
            f if f & str_flag::NO_ROOM != 0 => Some(Value::Cut(String::new())),
            f => Some(string(f, entry.bytes)),
        };
    }
    values
}

/// The string area without the entry of read `top`, the copy of the user stack's top
/// (`str_from::STACK`, a slot's last read, so its entry is the area's last), and that copy
/// when it could be made.
pub fn split_top(area: &[u8], top: Option<u8>) -> (&[u8], Option<&[u8]>) {
    let Some(top) = top else {
        return (area, None);
    };
    match str_entries(area).find(|entry| entry.read == top) {
        Some(entry) => {
            // The entry's header is just before its bytes, inside `area`.
            let start = entry.bytes.as_ptr() as usize - area.as_ptr() as usize - STR_ENTRY;
            let copied = entry.flags & (str_flag::FAULT | str_flag::NO_ROOM) == 0;
            (&area[..start], copied.then_some(entry.bytes))
        }
        None => (area, None),
    }
}

fn string(flags: u8, bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes).into_owned();
    match flags & str_flag::TRUNCATED != 0 {
        true => Value::Cut(text),
        false => Value::Str(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(area: &mut Vec<u8>, read: u8, flags: u8, text: &[u8]) {
        area.extend_from_slice(&[read, flags]);
        area.extend_from_slice(&(text.len() as u16).to_ne_bytes());
        area.extend_from_slice(text);
    }

    #[test]
    fn the_stack_top_entry_is_split_from_the_values() {
        let mut area = Vec::new();
        entry(&mut area, 0, 0, b"/etc/hostname");
        let values_end = area.len();
        entry(&mut area, 1, 0, &[7; 24]);
        let (values, top) = split_top(&area, Some(1));
        assert_eq!((values, top), (&area[..values_end], Some(&[7u8; 24][..])));
        // Not copied (a fault, no room): the values alone, no top.
        let mut faulted = area[..values_end].to_vec();
        entry(&mut faulted, 1, str_flag::FAULT, b"");
        assert_eq!(split_top(&faulted, Some(1)), (&area[..values_end], None));
        // No such read, or none asked for: the whole area.
        assert_eq!(split_top(&area, Some(2)), (&area[..], None));
        assert_eq!(split_top(&area, None), (&area[..], None));
    }

    #[test]
    fn strings_cut_strings_arrays_and_faults_decode_by_read() {
        let mut area = Vec::new();
        entry(&mut area, 0, 0, b"/etc/hostname");
        entry(&mut area, 1, str_flag::ARRAY, b"");
        entry(&mut area, 1, 0, b"ls");
        entry(&mut area, 1, str_flag::TRUNCATED, b"-l");
        entry(&mut area, 1, str_flag::MORE, b"");
        entry(&mut area, 2, str_flag::FAULT, b"");
        entry(&mut area, 3, str_flag::NO_ROOM, b"");
        let values = values(&area);
        assert_eq!(values[0], Some(Value::Str("/etc/hostname".into())));
        let argv = Value::Array(vec![
            Value::Str("ls".into()),
            Value::Cut("-l".into()),
            Value::Etc,
        ]);
        assert_eq!(values[1], Some(argv.clone()));
        assert_eq!(values[2], None);
        assert_eq!(values[3], Some(Value::Cut(String::new())));
        assert_eq!(argv.to_string(), r#"["ls", "-l"..., ...]"#);
        assert!(argv.is_cut() && !values[0].as_ref().unwrap().is_cut());
    }

    #[test]
    fn an_empty_array_and_one_ended_by_a_bad_pointer_show_what_was_read() {
        let mut area = Vec::new();
        entry(&mut area, 0, str_flag::ARRAY, b"");
        entry(&mut area, 1, str_flag::ARRAY, b"");
        entry(&mut area, 1, 0, b"a");
        entry(&mut area, 1, str_flag::FAULT, b"");
        let values = values(&area);
        assert_eq!(values[0], Some(Value::Array(vec![])));
        assert_eq!(values[1], Some(Value::Array(vec![Value::Str("a".into())])));
    }
}
