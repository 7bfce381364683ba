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

    pub fn text(&self) -> String {
        let mut t = String::new();
        if let Some(e) = &self.read_error {
            let _ = writeln!(
                t,
                "error: {}: {e}; the records before it are shown",
                self.name
            );
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
                    "lost while recording: {lost_bpf} probe/watch events ({}), {lost_side} sample/scheduler records ({}); {} late (out of order)",
                    per_cpu(&s.lost_bpf),
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
        eprint!("{}", self.text());
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
        let summary = ReportSummary {
            name: "t.tracer".into(),
            stats: Some(Stats {
                lost_bpf: vec![(0, 3), (1, 4)],
                lost_side: vec![],
                late: 5,
            }),
            out_of_order: 5,
            ending: Some(Ending::Complete),
            ..ReportSummary::default()
        };
        assert_eq!(
            summary.text(),
            "\n0 records shown\nlost while recording: 7 probe/watch events (CPU 0: 3, CPU 1: \
             4), 0 sample/scheduler records (); 5 late (out of order)\n"
        );
    }
}
