//! `tracer watch` output: one line (or JSON object) per hit, and the hits by thread and
//! instruction of each watched location.

use std::io::{self, Write};

use serde::Serialize;

use super::events::Format;
use super::stack::{self, Frame, Stack};

/// One watchpoint hit, as printed.
#[derive(Clone, Debug)]
pub struct Hit<'a> {
    pub time_ns: u64,
    /// JSON's wall-clock time (docs/json.md).
    pub time_unix_ns: Option<u64>,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub target: &'a str,
    pub addr: u64,
    pub old: Option<u64>,
    pub new: Option<u64>,
    /// The instruction that hit it (for a write, the one after it).
    pub at: Frame,
    /// What happened, for the text line: `1 -> 2`, `5 (unchanged)`, `executed`.
    pub change: String,
    pub stacks: Vec<Stack>,
}

/// The column header of streamed hits (text only).
pub fn header(out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<10} {:<3} {:<15} {:<16} WATCH",
        "TIME(s)", "CPU", "PID/TID", "COMM"
    )
}

impl Hit<'_> {
    /// Writes the hit; `start_ns` is the run's start, for the text line's seconds.
    pub fn write(&self, out: &mut dyn Write, format: Format, start_ns: u64) -> io::Result<()> {
        match format {
            Format::Text => {
                let secs = self.time_ns.saturating_sub(start_ns) as f64 / 1e9;
                let place = match self.at.source() {
                    Some(line) => format!("{} ({line})", self.at.place()),
                    None => self.at.place(),
                };
                writeln!(
                    out,
                    "{secs:<10.6} {:<3} {:<15} {:<16} {}: {} at {place}",
                    self.cpu,
                    format!("{}/{}", self.pid, self.tid),
                    self.comm,
                    self.target,
                    self.change
                )?;
                stack::write_text(out, &self.stacks)
            }
            Format::Json => {
                let mut line = serde_json::json!({
                    "type": "hit",
                    "time_ns": self.time_ns,
                    "time_unix_ns": self.time_unix_ns,
                    "cpu": self.cpu,
                    "pid": self.pid,
                    "tid": self.tid,
                    "comm": self.comm,
                    "target": self.target,
                    "addr": super::json::address(self.addr),
                    "old": self.old,
                    "new": self.new,
                    "at": self.at.json(),
                });
                if !self.stacks.is_empty() {
                    line["stack"] = stack::json(&self.stacks);
                }
                writeln!(out, "{line}")
            }
        }
    }
}

/// A watched location's hits by thread and by instruction (JSON `"type":"hits"`).
#[derive(Clone, Debug, Serialize)]
pub struct Counts<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target: &'a str,
    #[serde(serialize_with = "hex")]
    pub addr: u64,
    pub len: u64,
    pub hits: u64,
    pub threads: Vec<ThreadHits>,
    pub at: Vec<PlaceHits>,
    /// Streaming: the kernel's count of traps that passed the filters, next to the printed hits.
    #[serde(skip)]
    pub trapped: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ThreadHits {
    pub tid: u32,
    pub hits: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlaceHits {
    #[serde(serialize_with = "hex")]
    pub ip: u64,
    pub at: String,
    pub hits: u64,
}

impl Counts<'_> {
    pub fn write(&self, out: &mut dyn Write, format: Format) -> io::Result<()> {
        if format == Format::Json {
            // Keys sorted, as every JSON line tracer prints.
            let line = serde_json::to_value(self).expect("counts serialize");
            return writeln!(out, "{line}");
        }
        let trapped = self
            .trapped
            .map_or(String::new(), |n| format!(" ({n} trapped in the kernel)"));
        writeln!(
            out,
            "{} ({:#x}/{}): {} hits{trapped}",
            self.target, self.addr, self.len, self.hits
        )?;
        for t in &self.threads {
            writeln!(out, "  thread {:<10} {:>10}", t.tid, t.hits)?;
        }
        for p in &self.at {
            writeln!(out, "  at {:<40} {:>10}", p.at, p.hits)?;
        }
        Ok(())
    }
}

/// An address as the JSON model writes one (`output::json::address`).
fn hex<S: serde::Serializer>(addr: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&super::json::address(*addr))
}

/// The summary's note on hits that came after a later hit of their watch was printed (a CPU
/// held its hit for over a second): their old values are unknown.
pub fn late_note(late: u64) -> Option<String> {
    (late > 0).then(|| {
        format!(
            "{late} hit{} arrived after a later hit of the same watch was printed: old value shown as ?",
            if late == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_hits_are_noted_only_when_there_were_some() {
        assert_eq!(late_note(0), None);
        assert_eq!(
            late_note(1).unwrap(),
            "1 hit arrived after a later hit of the same watch was printed: old value shown as ?"
        );
        assert_eq!(
            late_note(2).unwrap(),
            "2 hits arrived after a later hit of the same watch was printed: old value shown as ?"
        );
    }

    #[test]
    fn counts_render_as_text_and_json() {
        let counts = Counts {
            kind: "hits",
            target: "counter",
            addr: 0x10,
            len: 8,
            hits: 3,
            threads: vec![ThreadHits { tid: 7, hits: 3 }],
            at: vec![PlaceHits {
                ip: 0x401000,
                at: "bump+0x4".into(),
                hits: 3,
            }],
            trapped: Some(3),
        };
        let mut text = Vec::new();
        counts.write(&mut text, Format::Text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "counter (0x10/8): 3 hits (3 trapped in the kernel)\n  thread 7                   3\n  at bump+0x4                                          3\n"
        );
        let mut json = Vec::new();
        counts.write(&mut json, Format::Json).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            "{\"addr\":\"0x10\",\"at\":[{\"at\":\"bump+0x4\",\"hits\":3,\"ip\":\"0x401000\"}],\"hits\":3,\"len\":8,\"target\":\"counter\",\"threads\":[{\"hits\":3,\"tid\":7}],\"type\":\"hits\"}\n"
        );
    }
}
