//! `tracer profile`'s report: stacks with their sample counts (on-CPU) or blocked time
//! (off-CPU), as a top-N text report, folded lines (`comm;outer;...;inner N`, what
//! flamegraph.pl and inferno read), an SVG flame graph (inferno) or one JSON object.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

pub use crate::kernel::cgroups::Identity;
pub use crate::output::stack::Mapped;

/// What the values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Samples of what ran, `hz` per second on each CPU, of `event` (cpu-clock, cycles).
    OnCpu { hz: u64, event: &'static str },
    /// Nanoseconds blocked, for blocks of at least `min_block_ns`.
    OffCpu { min_block_ns: u64 },
}

/// One frame of a profiled stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The function; else, for a user frame, `file+0xOFFSET`; else `[unknown]`.
    pub name: String,
    /// Whether a symbol named it (not only its file and offset).
    pub named: bool,
    pub kernel: bool,
    /// `file:line`, when the binary has DWARF.
    pub source: Option<String>,
    /// The address sampled (a return address for outer frames; of merged stacks, the
    /// first's), 0 for `[lost]`.
    pub addr: u64,
    /// User frames: the file mapping that holds `addr`, and the file's GNU build-id.
    pub mapped: Option<Mapped>,
    pub build_id: Option<String>,
}

impl Frame {
    /// The frame in the JSON model's one shape (`output::json::Frame`): a profile's frame
    /// merges its function's samples, so `addr` is one of them and `offset` is unknown.
    pub fn json(&self) -> serde_json::Value {
        // `file:line` as the symbolizer wrote it (`stack::Frame::source`), or a file alone.
        let (file, line) = match self.source.as_deref().map(|s| (s, s.rsplit_once(':'))) {
            Some((_, Some((file, line)))) if line.parse::<u32>().is_ok() => {
                (Some(file), line.parse().ok())
            }
            Some((source, _)) => (Some(source), None),
            None => (None, None),
        };
        let frame = super::json::Frame {
            space: if self.kernel { "kernel" } else { "user" },
            name: self.name.clone(),
            symbol: self.named.then_some(self.name.as_str()),
            offset: None,
            addr: (self.addr != 0).then(|| super::json::address(self.addr)),
            module: self.mapped.as_ref().map(|m| m.path.as_str()),
            build_id: self.build_id.as_deref(),
            file,
            line,
        };
        serde_json::to_value(frame).expect("a frame serializes")
    }
}

/// A stack and what it accounts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub comm: String,
    pub pid: u32,
    /// The task's cgroup (v2) and the container and pod it names; empty when not counted.
    pub cgroup: Identity,
    /// Innermost first: the kernel frames, then the user frames.
    pub frames: Vec<Frame>,
    /// Samples (on-CPU) or blocks (off-CPU).
    pub count: u64,
    /// Samples (on-CPU) or nanoseconds blocked (off-CPU).
    pub value: u64,
}

/// Where every sample (or block) of the run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Counted by the BPF program (samples of the tasks profiled, or blocks long enough).
    pub total: u64,
    /// Counted without a stack: `COUNTS` (or, off-CPU, the start map) was full.
    pub not_counted: u64,
    /// Samples or blocks whose kernel or user stack could not be captured (stack map bucket
    /// taken, or full): shown as `[lost]`.
    pub stacks_lost: u64,
    /// On-CPU with every task: samples of the idle task (CPU idle), left out of the stacks.
    pub idle: u64,
    /// On-CPU with every task: samples of tracer itself, left out of the stacks.
    pub own: u64,
    /// On-CPU, by frame pointers: samples counted that no stack holds, lost as their cell was
    /// taken out of the count map (a fold, a report) while the program added to it. Known
    /// only as what is left of the counted ones once the rest is placed ([`Profile::settle`]).
    pub raced: u64,
    /// Off-CPU: blocks shorter than the minimum, left out.
    pub short: u64,
    /// Off-CPU: context switches the program never saw (the kernel skips a tracepoint's
    /// program while another BPF program runs on that CPU): each may have lost a block.
    pub missed: u64,
    /// Off-CPU: blocks whose end the kernel's `sched_switch` never showed (the task ran again
    /// unseen), left out.
    pub unended: u64,
    /// Processes gone before their user stacks were read (frames `[unknown]`).
    pub exited: u64,
    /// Samples or blocks whose user stack, walked by frame pointers, left the process's code
    /// and ends there (see `Symbolizer::cut_astray`).
    pub fp_astray: u64,
    /// Mapping records lost (a full ring) or malformed: some frames may be `[unknown]`.
    pub maps_lost: u64,
    /// `--call-graph dwarf`: how the user stacks unwound (`None`: by frame pointers).
    pub unwound: Option<Unwound>,
    /// `-I` in text: the counts left the map at each report; what the reports held, in all.
    pub reported: Option<Reported>,
}

impl Accounting {
    /// Adds what one take of the counts out of the maps left out of its stacks (a fold, an
    /// interval's report): the rest of the accounting is the run's, read at its end.
    pub fn add_taken(&mut self, taken: &Accounting) {
        self.stacks_lost += taken.stacks_lost;
        self.idle += taken.idle;
        self.own += taken.own;
        self.fp_astray += taken.fp_astray;
    }
}

/// What a run's interval reports held, in all (`-I`, whose counts leave the map once
/// reported): samples or blocks in stacks, their value, and the distinct stacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    pub count: u64,
    pub value: u64,
    pub stacks: u64,
}

/// `--call-graph dwarf`: samples lost before they were unwound, and how each user stack
/// unwound ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unwound {
    /// The stack bytes copied with each sample.
    pub stack_bytes: u32,
    /// Samples lost when the sample ring was full.
    pub lost: u64,
    /// Stacks unwound to their root (`_start`, a thread's `clone`).
    pub whole: u64,
    /// Cut where the copy of the stack ended.
    pub copy_ended: u64,
    /// Cut at code without unwind information (JIT code, a file that could not be read).
    pub no_cfi: u64,
    /// Cut where the unwind went astray (a wrong rule, or a frame pointer that was none).
    pub astray: u64,
    /// Cut at the deepest stack kept.
    pub depth: u64,
    /// Samples of kernel threads: no user stack.
    pub no_user: u64,
}

impl Unwound {
    /// How the user stacks unwound, for a run's summary: `user stacks unwound from .eh_frame:
    /// 290 whole, 3 cut short (3 past the 8192-byte stack copy)`, and a hint when many were
    /// deeper than the copy.
    pub fn said(&self) -> Vec<String> {
        let u = self;
        let cut = u.copy_ended + u.no_cfi + u.astray + u.depth;
        let mut line = format!(
            "user stacks unwound from .eh_frame: {} whole, {cut} cut short",
            u.whole
        );
        let reasons = [
            (
                u.copy_ended,
                format!("past the {}-byte stack copy", u.stack_bytes),
            ),
            (
                u.no_cfi,
                "at code without unwind information (JIT code or an unreadable file)".into(),
            ),
            (u.astray, "where the unwind went astray".into()),
            (
                u.depth,
                format!("at {} frames", crate::kernel::unwind::MAX_DEPTH),
            ),
        ];
        line += &crate::kernel::unwind::reasons_said(&reasons);
        if u.no_user > 0 {
            line += &format!("; {} samples of kernel threads", u.no_user);
        }
        let mut said = vec![line];
        if u.copy_ended * 20 > u.whole + cut {
            said.push(format!(
                "hint: more than 5% of the stacks were deeper than the copy: --call-graph dwarf,{}",
                (u.stack_bytes * 2).min(crate::kernel::unwind::MAX_STACK_BYTES)
            ));
        }
        said
    }
}

/// A finished profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub measure: Measure,
    /// Heaviest first.
    pub entries: Vec<Entry>,
    pub accounting: Accounting,
    pub seconds: f64,
}

/// Folded frame names cannot hold the separators of the format.
fn folded_name(frame: &Frame) -> String {
    let name = frame.name.replace(';', ":").replace(' ', "_");
    match frame.kernel {
        true => format!("{name}_[k]"),
        false => name,
    }
}

impl Profile {
    /// Counts what the on-CPU samples counted by the programs (by frame pointers) left out of
    /// every other account: those whose count was lost as its cell left the map. Called once
    /// the accounting is whole.
    pub fn settle(&mut self) {
        let a = &self.accounting;
        if matches!(self.measure, Measure::OnCpu { .. }) && a.unwound.is_none() {
            let placed = self.in_stacks().0 + a.idle + a.own + a.not_counted;
            self.accounting.raced = a.total.saturating_sub(placed);
        }
    }

    /// The samples (or blocks) in the stacks shown, and how many distinct stacks.
    fn in_stacks(&self) -> (u64, u64) {
        match self.accounting.reported {
            Some(reported) => (reported.count, reported.stacks),
            None => (
                self.entries.iter().map(|e| e.count).sum::<u64>(),
                self.entries.len() as u64,
            ),
        }
    }

    /// The sum of the values (samples, or ns blocked) of every stack shown.
    pub fn total_value(&self) -> u64 {
        match self.accounting.reported {
            Some(reported) => reported.value,
            None => self.entries.iter().map(|e| e.value).sum(),
        }
    }

    /// One folded line per distinct (comm, stack), heaviest first then by text: `comm;outer;
    /// ...;inner N`, kernel frames suffixed `_[k]` (as perf's stackcollapse writes them), N in
    /// samples (on-CPU) or microseconds blocked (off-CPU, as offcputime -f).
    pub fn folded(&self) -> Vec<String> {
        let mut merged: BTreeMap<String, u64> = BTreeMap::new();
        for entry in &self.entries {
            let mut line = entry.comm.replace([';', ' '], "_");
            for frame in entry.frames.iter().rev() {
                line.push(';');
                line.push_str(&folded_name(frame));
            }
            *merged.entry(line).or_default() += entry.value;
        }
        let scale = match self.measure {
            Measure::OnCpu { .. } => 1,
            Measure::OffCpu { .. } => 1000,
        };
        let mut lines: Vec<(String, u64)> = (merged.into_iter())
            .map(|(line, value)| (line, value / scale))
            .filter(|(_, value)| *value > 0)
            .collect();
        lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        (lines.into_iter())
            .map(|(line, value)| format!("{line} {value}"))
            .collect()
    }

    /// The top `top` stacks, innermost frame first (kernel, a `--` line, user), each under a
    /// line with its share: what BCC's profile and offcputime print, heaviest first.
    pub fn text(&self, top: usize) -> String {
        let total = self.total_value().max(1);
        let mut out = String::new();
        for (rank, entry) in self.entries.iter().take(top).enumerate() {
            if rank > 0 {
                out.push('\n');
            }
            let share = 100.0 * entry.value as f64 / total as f64;
            let amount = match self.measure {
                Measure::OnCpu { .. } => match entry.value {
                    1 => "1 sample".to_string(),
                    n => format!("{n} samples"),
                },
                Measure::OffCpu { .. } => format!(
                    "{} in {} block{}",
                    duration(entry.value),
                    entry.count,
                    if entry.count == 1 { "" } else { "s" }
                ),
            };
            let _ = writeln!(
                out,
                "#{:<3} {amount} ({share:.1}%)  {} [{}]{}",
                rank + 1,
                entry.comm,
                entry.pid,
                in_container(&entry.cgroup)
            );
            let mut kernel_seen = false;
            for frame in &entry.frames {
                if !frame.kernel && kernel_seen {
                    let _ = writeln!(out, "    --");
                }
                kernel_seen = frame.kernel;
                let _ = match &frame.source {
                    Some(source) => writeln!(out, "    {} ({source})", frame.name),
                    None => writeln!(out, "    {}", frame.name),
                };
            }
        }
        if self.entries.len() > top {
            let rest: u64 = self.entries[top..].iter().map(|e| e.value).sum();
            let _ = writeln!(
                out,
                "\n{} more stacks ({:.1}%): --top N lists more, -f folded lists all",
                self.entries.len() - top,
                100.0 * rest as f64 / total as f64
            );
        }
        out
    }

    /// One JSON object: the measure, the accounting and every stack, innermost frame first.
    pub fn json(&self) -> serde_json::Value {
        let (mode, unit) = match self.measure {
            Measure::OnCpu { .. } => ("on-cpu", "samples"),
            Measure::OffCpu { .. } => ("off-cpu", "ns"),
        };
        let mut object = serde_json::json!({
            "type": "profile",
            "version": super::json::SCHEMA_VERSION,
            "mode": mode,
            "unit": unit,
            "seconds": self.seconds,
            "total": self.total_value(),
            "accounting": {
                "counted": self.accounting.total,
                "not_counted": self.accounting.not_counted,
                "stacks_lost": self.accounting.stacks_lost,
                "idle": self.accounting.idle,
                "own": self.accounting.own,
                "raced": self.accounting.raced,
                "short": self.accounting.short,
                "missed": self.accounting.missed,
                "unended": self.accounting.unended,
                "exited": self.accounting.exited,
                "fp_astray": self.accounting.fp_astray,
                "maps_lost": self.accounting.maps_lost,
                "unwound": self.accounting.unwound.map(|u| serde_json::json!({
                    "stack_bytes": u.stack_bytes,
                    "lost": u.lost,
                    "whole": u.whole,
                    "copy_ended": u.copy_ended,
                    "no_cfi": u.no_cfi,
                    "astray": u.astray,
                    "depth": u.depth,
                    "no_user": u.no_user,
                })),
            },
            "stacks": self.entries.iter().map(|e| serde_json::json!({
                "comm": e.comm,
                "pid": e.pid,
                "cgroup": e.cgroup.path,
                "container": e.cgroup.container,
                "pod": e.cgroup.pod,
                "count": e.count,
                "value": e.value,
                "frames": e.frames.iter().map(Frame::json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        match self.measure {
            Measure::OnCpu { hz, event } => {
                object["hz"] = hz.into();
                object["event"] = event.into();
            }
            Measure::OffCpu { min_block_ns } => object["min_block_ns"] = min_block_ns.into(),
        }
        object
    }

    /// The flame graph of the folded lines, as SVG.
    pub fn svg(&self, out: &mut impl Write) -> io::Result<()> {
        use inferno::flamegraph::color::{BasicPalette, Palette};
        let lines = self.folded();
        let mut options = inferno::flamegraph::Options::default();
        match self.measure {
            Measure::OnCpu { hz, event } => {
                options.title = "On-CPU profile".into();
                options.subtitle = Some(format!(
                    "tracer profile: {event} at {hz} Hz, {} samples in {:.1} s",
                    self.total_value(),
                    self.seconds
                ));
                options.count_name = "samples".into();
            }
            Measure::OffCpu { min_block_ns } => {
                options.title = "Off-CPU time".into();
                options.subtitle = Some(format!(
                    "tracer profile --off-cpu: blocks of {} and more, {} blocked in {:.1} s",
                    duration(min_block_ns),
                    duration(self.total_value()),
                    self.seconds
                ));
                options.count_name = "us".into();
                options.colors = Palette::Basic(BasicPalette::Blue);
            }
        }
        if lines.is_empty() {
            // inferno refuses an empty profile; an empty graph still says what was measured.
            options.notes = "no stacks".into();
            return inferno::flamegraph::from_lines(&mut options, ["[no samples] 1"], out);
        }
        inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)
    }

    /// The end-of-run accounting, for stderr: every sample or block, and where it went.
    pub fn summary_notes(&self) -> Vec<String> {
        let a = &self.accounting;
        let mut notes = Vec::new();
        let (unit, total) = match self.measure {
            Measure::OnCpu { .. } => ("samples", a.total),
            Measure::OffCpu { .. } => ("blocks", a.total),
        };
        let (in_stacks, stacks) = self.in_stacks();
        let mut parts = vec![format!(
            "{total} {unit} counted: {in_stacks} in {stacks} stacks"
        )];
        if a.idle > 0 {
            parts.push(format!("{} of the idle task left out", a.idle));
        }
        if a.own > 0 {
            parts.push(format!("{} of tracer itself left out", a.own));
        }
        if a.short > 0 {
            parts.push(format!("{} shorter than the minimum left out", a.short));
        }
        parts.push(format!("{} not counted (map full)", a.not_counted));
        if a.raced > 0 {
            parts.push(format!("{} lost as their cell left the count map", a.raced));
        }
        if a.missed > 0 {
            parts.push(format!(
                "{} context switches missed (another BPF program was running on that CPU)",
                a.missed
            ));
        }
        if a.unended > 0 {
            parts.push(format!(
                "{} whose end the kernel's sched_switch did not show left out (--call-graph dwarf times blocks by perf's switch records)",
                a.unended
            ));
        }
        parts.push(format!("{} with a stack lost", a.stacks_lost));
        notes.push(parts.join(", "));
        if a.not_counted > 0 || a.stacks_lost * 100 > a.total {
            notes.push(
                "hint: a stack is lost when its bucket in the stack map (16384 buckets, by hash) \
                 holds another stack, or the count map is full: profile for less time (-d), one \
                 process (-p, -- COMMAND) or one side (--user-only, --kernel-only)"
                    .into(),
            );
        }
        if let Some(u) = a.unwound {
            let mut said = u.said();
            if u.lost > 0 {
                said.insert(
                    1,
                    format!(
                        "{} samples lost: the sample ring was full (each carries {} stack bytes): \
                         a lower -F or a smaller --call-graph dwarf,SIZE",
                        u.lost, u.stack_bytes
                    ),
                );
            }
            notes.extend(said);
        }
        if a.maps_lost > 0 {
            notes.push(format!(
                "{} mapping records lost: frames of processes started during the run may be [unknown]",
                a.maps_lost
            ));
        }
        if a.fp_astray > 0 {
            notes.push(format!(
                "{} with a user stack that left the process's code, walked by frame pointers \
                 (code built without them: Debian's programs and libraries), and ends there; \
                 --call-graph dwarf unwinds such code from .eh_frame",
                a.fp_astray
            ));
        }
        if a.exited > 0 {
            notes.push(format!(
                "{} exited before their mappings were read: their user frames are [unknown]",
                match a.exited {
                    1 => "1 process".to_string(),
                    n => format!("{n} processes"),
                }
            ));
        }
        notes
    }
}

/// ` in container ID` (its first 12 digits, as `docker ps` shows it) and ` of pod UID`, for
/// a task in one.
fn in_container(cgroup: &Identity) -> String {
    let mut out = String::new();
    if let Some(id) = &cgroup.container {
        let _ = write!(out, " in container {}", &id[..id.len().min(12)]);
    }
    if let Some(pod) = &cgroup.pod {
        let _ = write!(out, " of pod {pod}");
    }
    out
}

/// A duration in ns, in the unit that reads best.
pub fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, kernel: bool) -> Frame {
        Frame {
            named: name != "[unknown]",
            name: name.into(),
            kernel,
            source: None,
            addr: 0,
            mapped: None,
            build_id: None,
        }
    }

    fn profile() -> Profile {
        let user = |names: &[&str]| names.iter().map(|n| frame(n, false)).collect::<Vec<_>>();
        Profile {
            measure: Measure::OnCpu {
                hz: 99,
                event: "cpu-clock",
            },
            entries: vec![
                Entry {
                    comm: "prog".into(),
                    pid: 7,
                    cgroup: Identity::default(),
                    frames: user(&["spin", "b", "a", "main"]),
                    count: 75,
                    value: 75,
                },
                Entry {
                    comm: "prog".into(),
                    pid: 7,
                    cgroup: Identity::default(),
                    frames: [vec![frame("clear_page", true)], user(&["c", "main"])].concat(),
                    count: 20,
                    value: 20,
                },
                Entry {
                    comm: "prog".into(),
                    pid: 8,
                    cgroup: Identity::default(),
                    frames: user(&["spin", "b", "a", "main"]),
                    count: 5,
                    value: 5,
                },
            ],
            accounting: Accounting {
                total: 100,
                ..Accounting::default()
            },
            seconds: 1.0,
        }
    }

    #[test]
    fn folded_lines_merge_processes_and_put_the_root_first() {
        assert_eq!(
            profile().folded(),
            ["prog;main;a;b;spin 80", "prog;main;c;clear_page_[k] 20"]
        );
    }

    #[test]
    fn samples_no_account_holds_are_said_lost_to_a_race() {
        let mut p = profile();
        p.settle();
        assert_eq!(p.accounting.raced, 0);
        (p.accounting.total, p.accounting.idle) = (103, 1);
        p.settle();
        assert_eq!(p.accounting.raced, 2);
        assert_eq!(
            p.summary_notes()[0],
            "103 samples counted: 100 in 3 stacks, 1 of the idle task left out, 0 not counted \
             (map full), 2 lost as their cell left the count map, 0 with a stack lost"
        );
        // Off-CPU, a block that failed to start is not counted: nothing is left to infer.
        p.measure = Measure::OffCpu { min_block_ns: 0 };
        p.accounting.raced = 0;
        p.settle();
        assert_eq!(p.accounting.raced, 0);
    }

    #[test]
    fn off_cpu_folds_microseconds() {
        let mut p = profile();
        p.measure = Measure::OffCpu { min_block_ns: 0 };
        p.entries.truncate(1);
        p.entries[0].value = 1_000_999;
        assert_eq!(p.folded(), ["prog;main;a;b;spin 1000"]);
    }

    #[test]
    fn the_text_report_ranks_and_separates_kernel_from_user() {
        let text = profile().text(2);
        assert_eq!(
            text,
            "#1   75 samples (75.0%)  prog [7]\n    spin\n    b\n    a\n    main\n\n\
             #2   20 samples (20.0%)  prog [7]\n    clear_page\n    --\n    c\n    main\n\n\
             1 more stacks (5.0%): --top N lists more, -f folded lists all\n"
        );
    }

    #[test]
    fn json_carries_the_accounting_and_frames() {
        let json = profile().json();
        assert_eq!(json["type"], "profile");
        assert_eq!(json["mode"], "on-cpu");
        assert_eq!(json["hz"], 99);
        assert_eq!(json["total"], 100);
        assert_eq!(json["stacks"][1]["frames"][0]["space"], "kernel");
        assert_eq!(json["stacks"][0]["frames"][3]["name"], "main");
    }

    #[test]
    fn the_svg_is_a_flame_graph() {
        let mut svg = Vec::new();
        profile().svg(&mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"), "{}", &svg[..100]);
        assert!(svg.contains("spin (80 samples, 80.00%)"), "{svg}");
    }
}
