//! What a run says on stderr around its data: the banner before it, the summary after it
//! (a headline, a table of per-source counts, notes), in one wording for every command.

use std::fmt::Write as _;

/// `Tracing X in `cmd` (detail)... Hit Ctrl-C to end.`
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Banner {
    /// Tracing, Counting, Watching, Recording.
    pub verb: &'static str,
    /// What is traced.
    pub what: String,
    /// Whom: "`cmd`", "process N", or nobody in particular.
    pub whom: Option<String>,
    /// Anything after the target: `(writes)`, `to FILE`.
    pub detail: Option<String>,
}

impl Banner {
    pub fn text(&self) -> String {
        let mut line = format!("{} {}", self.verb, self.what);
        if let Some(whom) = &self.whom {
            let _ = write!(line, " in {whom}");
        }
        if let Some(detail) = &self.detail {
            let _ = write!(line, " {detail}");
        }
        line + "... Hit Ctrl-C to end."
    }
}

pub fn print_banner(banner: &Banner) {
    super::notes::emit(&(banner.text() + "\n"));
}

/// The end of a run: `N UNIT in S s, WHY; TAIL`, a table, notes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub count: u64,
    /// events, hits, calls measured, hits counted in the kernel, records...
    pub unit: String,
    pub seconds: f64,
    /// Why the run ended (`session::Outcome::why`).
    pub why: String,
    /// What follows the semicolon: losses, unmatched calls.
    pub tail: String,
    pub table: Option<Table>,
    /// One line each, after the table.
    pub notes: Vec<String>,
}

/// A table of per-source counts: the first column left-aligned (40 wide), numbers right.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Widths of the columns after the first.
    pub widths: Vec<usize>,
}

impl Table {
    fn text(&self, out: &mut String) {
        let mut line = |cells: &[String]| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                match i {
                    0 => {
                        let _ = write!(text, "{cell:<40}");
                    }
                    _ => {
                        let width = self.widths.get(i - 1).copied().unwrap_or(10);
                        let _ = write!(text, " {cell:>width$}");
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        if !self.header.is_empty() {
            line(&self.header);
        }
        for row in &self.rows {
            line(row);
        }
    }
}

impl Summary {
    pub fn text(&self) -> String {
        let mut out = format!(
            "\n{} {} in {:.2} s, {}",
            self.count, self.unit, self.seconds, self.why
        );
        if !self.tail.is_empty() {
            let _ = write!(out, "; {}", self.tail);
        }
        out.push('\n');
        if let Some(table) = &self.table {
            table.text(&mut out);
        }
        for note in &self.notes {
            out.push_str(note);
            out.push('\n');
        }
        out
    }

    /// Prints the summary on stderr, where it does not mix with the data.
    pub fn print(&self) {
        super::notes::emit(&self.text());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_name_what_whom_and_detail() {
        let banner = Banner {
            verb: "Watching",
            what: "counter (0x10/8)".into(),
            whom: Some("`./prog`".into()),
            detail: Some("(writes)".into()),
        };
        assert_eq!(
            banner.text(),
            "Watching counter (0x10/8) in `./prog` (writes)... Hit Ctrl-C to end."
        );
        let bare = Banner {
            verb: "Tracing",
            what: "sched:sched_switch".into(),
            ..Banner::default()
        };
        assert_eq!(
            bare.text(),
            "Tracing sched:sched_switch... Hit Ctrl-C to end."
        );
    }

    #[test]
    fn a_summary_has_a_headline_a_table_and_notes() {
        let summary = Summary {
            count: 31,
            unit: "events".into(),
            seconds: 0.004,
            why: "command exited with status 0".into(),
            tail: "0 lost".into(),
            table: Some(Table {
                header: vec!["PROBE".into(), "HITS".into(), "LOST".into()],
                rows: vec![vec![
                    "syscalls:sys_enter_openat".into(),
                    "31".into(),
                    "0".into(),
                ]],
                widths: vec![10, 8],
            }),
            notes: vec!["stacks: 3 resolved".into()],
        };
        assert_eq!(
            summary.text(),
            "\n31 events in 0.00 s, command exited with status 0; 0 lost\n\
             PROBE                                          HITS     LOST\n\
             syscalls:sys_enter_openat                        31        0\n\
             stacks: 3 resolved\n"
        );
    }
}
