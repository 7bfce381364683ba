//! `tracer list`: one spec per line, as `tracer probe` and `tracer stat` accept it, with a
//! tracepoint's fields under it when asked.

use std::fmt::Write;

/// One listed spec.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    /// `tracepoint:CAT:NAME`, `kprobe:FUNC`, `uprobe:PATH:SYMBOL`, `software:NAME`...
    pub spec: String,
    /// `-v`: a tracepoint's fields, (C type, name).
    pub fields: Vec<(String, String)>,
}

impl Entry {
    pub fn new(spec: String) -> Entry {
        Entry {
            spec,
            fields: Vec::new(),
        }
    }
}

/// The text of a listing.
pub fn text(entries: &[Entry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let _ = writeln!(out, "{}", entry.spec);
        for (c_type, name) in &entry.fields {
            let _ = writeln!(out, "    {c_type} {name}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_one_per_line_with_fields_indented() {
        let mut tp = Entry::new("tracepoint:sched:sched_switch".into());
        tp.fields = vec![("char[16]".into(), "prev_comm".into())];
        let listing = [tp, Entry::new("software:cs".into())];
        assert_eq!(
            text(&listing),
            "tracepoint:sched:sched_switch\n    char[16] prev_comm\nsoftware:cs\n"
        );
    }
}
