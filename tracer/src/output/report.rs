//! The end of `tracer report` (on stderr, after the timeline): records shown per source, what
//! the recording lost, records out of time order, how the file ended, and the Perfetto file.

use std::fmt::Write as _;
use std::path::PathBuf;

/// How reading the file ended (the trace file reader's finding, in the model's words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The end record was read.
    Complete,
    /// No end record after the last whole record.
    Unfinished,
    /// The file ends inside a record: `partial` bytes of one starting at `offset`.
    Truncated { offset: u64, partial: u64 },
}

/// What the recording counted while it ran (its stats record).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Probe and watch events the programs produced (recorded or lost).
    pub produced: u64,
    /// Probe and watch events lost per CPU.
    pub lost_bpf: Vec<(u32, u64)>,
    /// Sample and scheduler records lost per CPU.
    pub lost_side: Vec<(u32, u64)>,
    /// Records written after their reorder window closed.
    pub late: u64,
}

/// What a report read and showed.
#[derive(Debug, Default)]
pub struct ReportSummary {
    /// The file as the user named it.
    pub name: String,
    /// Records shown per source, in order of first appearance.
    pub shown: Vec<(String, u64)>,
    /// The recording's loss counts (`None`: it has no stats record).
    pub stats: Option<Stats>,
    /// Records earlier than one before them.
    pub out_of_order: u64,
    /// Why reading stopped early (a corrupt record); the records before it were shown.
    pub read_error: Option<String>,
    /// Corrupt records skipped (the first few, described), and how many in all.
    pub skipped: Vec<String>,
    pub skipped_count: u64,
    /// Records of kinds this tracer does not know, per kind.
    pub unknown: Vec<(u32, u64)>,
    /// Probe and watch event records in the file.
    pub events: u64,
    /// Complete records read.
    pub records: u64,
    pub ending: Option<Ending>,
    /// `--perfetto`: the file written.
    pub perfetto: Option<PathBuf>,
}

impl ReportSummary {
    /// Counts one shown record of `source`.
    pub fn show(&mut self, source: &str) {
        match self.shown.iter_mut().find(|(s, _)| s == source) {
            Some((_, n)) => *n += 1,
            None => self.shown.push((source.to_string(), 1)),
        }
    }

    /// Counts one record of a kind this tracer does not know.
    pub fn unknown_kind(&mut self, kind: u32) {
        match self.unknown.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.unknown.push((kind, 1)),
        }
    }

    /// Whether the file was found corrupt (the report then exits with status 1).
    pub fn corrupt(&self) -> bool {
        self.read_error.is_some() || self.skipped_count > 0
    }

    pub fn text(&self) -> String {
        let mut t = String::new();
        if let Some(e) = &self.read_error {
            let _ = writeln!(
                t,
                "error: {}: {e}; the records before it are shown",
                self.name
            );
        }
        if self.skipped_count > 0 {
            let _ = writeln!(
                t,
                "error: {}: {} corrupt records skipped; the records around them are shown",
                self.name, self.skipped_count
            );
            for skipped in &self.skipped {
                let _ = writeln!(t, "  {skipped}");
            }
            let more = self.skipped_count - self.skipped.len() as u64;
            if more > 0 {
                let _ = writeln!(t, "  and {more} more");
            }
        }
        if !self.unknown.is_empty() {
            let n: u64 = self.unknown.iter().map(|(_, n)| n).sum();
            let kinds: Vec<String> = (self.unknown.iter())
                .map(|(k, n)| format!("kind {k}: {n}"))
                .collect();
            t.push_str(&super::notes::render(
                super::notes::NoteKind::Note,
                &format_args!(
                    "{}: {n} records of kinds this tracer does not know were skipped ({}): written by a newer tracer, or corrupt",
                    self.name,
                    kinds.join(", ")
                ),
            ));
        }
        let total: u64 = self.shown.iter().map(|(_, n)| n).sum();
        let _ = writeln!(t, "\n{total} records shown");
        for (source, n) in &self.shown {
            let _ = writeln!(t, "  {source:<40} {n:>10}");
        }
        let late = match &self.stats {
            Some(s) => {
                let lost_bpf: u64 = s.lost_bpf.iter().map(|(_, n)| n).sum();
                let lost_side: u64 = s.lost_side.iter().map(|(_, n)| n).sum();
                let _ = writeln!(
                    t,
                    "probe/watch events: {} produced, {} recorded, {lost_bpf} lost ({})",
                    s.produced,
                    self.events,
                    per_cpu(&s.lost_bpf),
                );
                let missing = s.produced.saturating_sub(self.events + lost_bpf);
                if missing > 0 {
                    let _ = writeln!(
                        t,
                        "  {missing} produced are neither in the file nor counted lost"
                    );
                }
                let _ = writeln!(
                    t,
                    "sample/scheduler records: {lost_side} lost ({}); {} late (out of order)",
                    per_cpu(&s.lost_side),
                    s.late
                );
                s.late
            }
            None => {
                let _ = writeln!(t, "no loss counts: the recording did not finish");
                0
            }
        };
        if self.out_of_order > late {
            let _ = writeln!(t, "{} records are out of time order", self.out_of_order);
        }
        let (name, records) = (&self.name, self.records);
        match &self.ending {
            Some(Ending::Truncated { offset, partial }) => {
                let _ = writeln!(
                    t,
                    "{name} ends inside a record: recovered {records} records up to byte {offset}; the last {partial} bytes are an incomplete record (the recorder was stopped mid-write)",
                );
            }
            Some(Ending::Unfinished) => {
                let _ = writeln!(
                    t,
                    "{name} has no end record: recovered {records} complete records (the recorder did not finish)",
                );
            }
            Some(Ending::Complete) | None => {}
        }
        if let Some(path) = &self.perfetto {
            let _ = writeln!(
                t,
                "wrote {} (open it in https://ui.perfetto.dev or chrome://tracing)",
                path.display()
            );
        }
        t
    }

    /// Prints the summary on stderr (the timeline has stdout).
    pub fn print(&self) {
        super::notes::emit(&self.text());
    }
}

fn per_cpu(lost: &[(u32, u64)]) -> String {
    (lost.iter())
        .map(|(c, n)| format!("CPU {c}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_recording_says_what_was_recovered_and_lost() {
        let mut summary = ReportSummary {
            name: "t.tracer".into(),
            stats: None,
            out_of_order: 2,
            records: 7,
            ending: Some(Ending::Truncated {
                offset: 512,
                partial: 20,
            }),
            ..ReportSummary::default()
        };
        summary.show("probe:a");
        summary.show("watch:b");
        summary.show("probe:a");
        assert_eq!(
            summary.text(),
            "\n3 records shown\n  probe:a                                           2\n  \
             watch:b                                           1\n\
             no loss counts: the recording did not finish\n\
             2 records are out of time order\n\
             t.tracer ends inside a record: recovered 7 records up to byte 512; the last 20 \
             bytes are an incomplete record (the recorder was stopped mid-write)\n"
        );
    }

    #[test]
    fn losses_are_given_per_cpu_and_late_records_are_not_counted_twice() {
        let mut summary = ReportSummary {
            name: "t.tracer".into(),
            stats: Some(Stats {
                produced: 20,
                lost_bpf: vec![(0, 3), (1, 4)],
                lost_side: vec![],
                late: 5,
            }),
            events: 13,
            out_of_order: 5,
            ending: Some(Ending::Complete),
            ..ReportSummary::default()
        };
        assert_eq!(
            summary.text(),
            "\n0 records shown\nprobe/watch events: 20 produced, 13 recorded, 7 lost (CPU 0: 3, \
             CPU 1: 4)\nsample/scheduler records: 0 lost (); 5 late (out of order)\n"
        );
        assert!(!summary.corrupt());
        // Events the file should hold and does not.
        summary.events = 10;
        assert!(summary.text().contains(
            "7 lost (CPU 0: 3, CPU 1: 4)\n  3 produced are neither in the file nor counted lost\n"
        ));
    }

    #[test]
    fn skipped_corrupt_records_and_unknown_kinds_are_reported() {
        let mut summary = ReportSummary {
            name: "t.tracer".into(),
            skipped: vec!["record 4 (kind 6) at byte 300: unknown task record 9".into()],
            skipped_count: 3,
            ending: Some(Ending::Complete),
            ..ReportSummary::default()
        };
        summary.unknown_kind(99);
        summary.unknown_kind(7);
        summary.unknown_kind(99);
        assert!(summary.corrupt());
        assert_eq!(
            summary.text(),
            "error: t.tracer: 3 corrupt records skipped; the records around them are shown\n  \
             record 4 (kind 6) at byte 300: unknown task record 9\n  and 2 more\n\
             note: t.tracer: 3 records of kinds this tracer does not know were skipped (kind 99: \
             2, kind 7: 1): written by a newer tracer, or corrupt\n\
             \n0 records shown\nno loss counts: the recording did not finish\n"
        );
    }
}
