//! The recorder: what `tracer record` writes. The header (metadata, sources, the task names
//! as they are now), then every ring record merged across CPUs into time order within the
//! reorder window, a symbol record for each watch hit's instruction (named while the process
//! lives), and the loss counts and end record at the close. `--live` decodes each record as
//! it is written and prints its timeline line.

use hashbrown::{HashMap, HashSet};
use std::io::Write;

use tracer_common::{word, Event};

use crate::bpf::Bpf;
use crate::kernel::symbols::Mapping;
use crate::output::events::Format;
use crate::output::timeline::TimelineWriter;
use crate::output::Existing;
use crate::perf;
use crate::plan::profile::Unwind;
use crate::plan::record::RecordPlan;
use crate::probe::profile::{tally, user_stack, MapsTracker};
use crate::session::side::SideRings;
use crate::session::{self, OutputRings, Sink};
use crate::stacks::Symbolizer;
use crate::tracefile::items::ItemDecoder;
use crate::tracefile::{self, reorder::Reorder, Record, SourceKind};
use crate::Error;

/// The trace file, or standard output (`-o -`) as taken before the command started.
pub fn create_output(
    plan: &RecordPlan,
    stdout: Option<std::fs::File>,
) -> Result<Box<dyn Write>, Error> {
    Ok(match (stdout, &plan.file) {
        (Some(data), _) => Box::new(data),
        // As perf record keeps perf.data.old: a recording is not lost to the next.
        (None, Some(path)) => Box::new(crate::output::create(path, Existing::KeepOld)?),
        (None, None) => unreachable!("standard output is taken when there is no file"),
    })
}

/// Writes the recording's metadata, its sources and the task names as they are now (perf only
/// reports a comm when it changes), like perf record's synthesized events.
pub fn write_header(
    out: Box<dyn Write>,
    plan: &RecordPlan,
    start_ns: u64,
    sources: &[tracefile::Source],
    comms: &[Record],
) -> Result<tracefile::Writer<std::io::BufWriter<Box<dyn Write>>>, Error> {
    let mut writer = tracefile::Writer::new(std::io::BufWriter::with_capacity(1 << 20, out))
        .map_err(Error::Output)?;
    let meta = tracefile::Meta {
        tracer: env!("CARGO_PKG_VERSION").into(),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        hostname: read_trim("/proc/sys/kernel/hostname"),
        argv: std::env::args().collect(),
        start_ns,
        cpus: perf::cpus::online()?,
        reorder_window_ns: plan.reorder_window_ns,
        wall_offset_ns: Some(super::wall_offset_ns()),
    };
    let sources = sources.iter().map(|s| Record::Source(s.clone()));
    for record in std::iter::once(Record::Meta(meta))
        .chain(sources)
        .chain(comms.iter().cloned())
    {
        writer.write(&record).map_err(Error::Output)?;
    }
    writer.flush().map_err(Error::Output)?;
    Ok(writer)
}

/// `--live`: a decoder that knows the sources and task names, and the timeline on stdout.
pub fn live_view(
    sources: &[tracefile::Source],
    comms: Vec<Record>,
    start_ns: u64,
) -> Result<Live, Error> {
    let mut decoder = ItemDecoder::default();
    for record in sources
        .iter()
        .map(|s| Record::Source(s.clone()))
        .chain(comms)
    {
        decoder.item(record);
    }
    let mut out = TimelineWriter::new(std::io::stdout().lock(), Format::Text, start_ns);
    out.header().map_err(Error::Output)?;
    Ok((decoder, out))
}

/// A comm record for each thread of `pid`, stamped `time_ns`.
pub fn current_comms(pid: u32, time_ns: u64) -> Vec<Record> {
    (crate::kernel::tasks::thread_names(pid).into_iter())
        .map(|(tid, name)| comm_record(pid, tid, &name, time_ns))
        .collect()
}

/// A comm record for every thread on the machine (a recording of every task): perf reports a
/// comm only when it changes, so without these the samples and switches of tasks started
/// before the recording would have no name. Threads gone while /proc is read are left out.
pub fn all_comms(time_ns: u64) -> Vec<Record> {
    (crate::kernel::tasks::all_thread_names().into_iter())
        .filter(|(_, _, name)| !name.is_empty())
        .map(|(pid, tid, name)| comm_record(pid, tid, &name, time_ns))
        .collect()
}

fn comm_record(pid: u32, tid: u32, name: &str, time_ns: u64) -> Record {
    let mut comm = [0u8; 16];
    let n = name.len().min(15);
    comm[..n].copy_from_slice(&name.as_bytes()[..n]);
    Record::Task(tracefile::Task {
        what: tracefile::TaskWhat::Comm,
        cpu: 0,
        pid,
        tid,
        ppid: 0,
        ptid: 0,
        time_ns,
        comm,
    })
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Records written per source, context switches, task records; mmap records lost.
#[derive(Default)]
pub struct Counts {
    pub per_source: Vec<u64>,
    pub switches: u64,
    pub tasks: u64,
    pub maps_lost: u64,
    /// `--call-graph dwarf`: how each sample's user stack unwound.
    pub unwound: Option<crate::output::profile::Unwound>,
}

pub type Live = (ItemDecoder, TimelineWriter<std::io::StdoutLock<'static>>);

/// Gives `symbolizer` the file mappings `tracker` has of `pid` since `lent` says it was last
/// given them; `false` when there are none new.
fn lend(
    tracker: Option<&MapsTracker>,
    lent: &mut HashMap<u32, (usize, bool)>,
    symbolizer: &mut Symbolizer,
    pid: u32,
) -> bool {
    let Some(tracker) = tracker else {
        return false;
    };
    let (maps, execed) = tracker.mappings(pid);
    // Counted first: with --call-graph dwarf this runs for every sample, and the mappings
    // rarely change between two.
    let count = maps.iter().filter(|m| m.path.is_some()).count();
    // A shell's child given its parent's mappings before its exec has as many after it, at
    // some point: the exec makes them new too.
    let lent = lent.entry(pid).or_default();
    if count == 0 || (count, execed) == *lent {
        return false;
    }
    *lent = (count, execed);
    let files: Vec<Mapping> = maps.iter().filter(|m| m.path.is_some()).cloned().collect();
    symbolizer.add_maps(pid, &files, execed);
    true
}

pub struct RecordSink<'a, W: Write> {
    /// `--live`: records are also decoded and printed as they are written.
    live: Option<Live>,
    pub rings: &'a mut OutputRings,
    pub side: &'a mut SideRings,
    /// Stopped before the last drain.
    bpf: &'a Bpf,
    reorder: Reorder<Record>,
    writer: tracefile::Writer<W>,
    pub watch_slots: Vec<u32>,
    /// BPF slot -> source id.
    slots: HashMap<u32, u32>,
    counts: Counts,
    /// (pid, ip) already written as symbol records.
    symbolized: HashSet<(u32, u64)>,
    symbolizer: Symbolizer,
    /// With sampled counters: the mappings the kernel reports, for the frames of processes
    /// gone before their samples are named.
    pub maps: Option<MapsTracker>,
    /// How many of each process's file mappings the symbolizer was given, and whether they
    /// were those since an exec.
    lent: HashMap<u32, (usize, bool)>,
    /// Processes with samples, from when they are read from the rings (their mappings are
    /// kept).
    sampled: HashSet<u32>,
    error: Option<std::io::Error>,
    /// The probes, whose user files are followed (a deploy, an upgrade) in long runs.
    pub follow: Option<(&'a [crate::probe::Probe], crate::probe::follow::Follower)>,
}

/// What a recording reads: the BPF programs' output rings and the counters' side rings, and
/// the object whose programs are stopped before the last drain.
pub struct Inputs<'a> {
    pub rings: &'a mut OutputRings,
    pub side: &'a mut SideRings,
    pub bpf: &'a Bpf,
}

impl<'a, W: Write> RecordSink<'a, W> {
    pub fn new(
        live: Option<Live>,
        Inputs { rings, side, bpf }: Inputs<'a>,
        writer: tracefile::Writer<W>,
        plan: &RecordPlan,
        sources: &[tracefile::Source],
        symbolizer: Symbolizer,
    ) -> Self {
        RecordSink {
            live,
            rings,
            side,
            bpf,
            reorder: Reorder::new(plan.reorder_window_ns),
            writer,
            watch_slots: Vec::new(),
            follow: None,
            slots: (sources.iter())
                .filter_map(|s| match s.what {
                    SourceKind::Probe { slot, .. } | SourceKind::Watch { slot, .. } => {
                        Some((slot, s.id))
                    }
                    _ => None,
                })
                .collect(),
            counts: Counts {
                per_source: vec![0; sources.len()],
                unwound: match plan.call_graph {
                    Some(Unwind::Dwarf { stack_bytes }) => Some(crate::output::profile::Unwound {
                        stack_bytes,
                        ..Default::default()
                    }),
                    _ => None,
                },
                ..Counts::default()
            },
            symbolized: HashSet::new(),
            symbolizer,
            maps: None,
            lent: HashMap::new(),
            sampled: HashSet::new(),
            error: None,
        }
    }

    /// Writes the loss counts and the end record; returns the records and bytes written, the
    /// stats, and the counts.
    pub fn close(self, bpf: &Bpf) -> Result<(u64, u64, tracefile::Stats, Counts), Error> {
        // Hits the value filter refused were never produced.
        let (hits, _) = bpf.stats()?;
        let produced = hits - bpf.filtered()?;
        let (maps_lost, maps_malformed) =
            (self.maps.as_ref()).map_or((0, 0), |t| (t.lost, t.malformed));
        let stats = tracefile::Stats {
            lost_side: self.side.lost.iter().map(|(c, n)| (*c, *n)).collect(),
            lost_bpf: bpf.lost_per_cpu()?,
            late: self.reorder.late,
            malformed: self.side.malformed + self.rings.losses().malformed + maps_malformed,
            produced,
        };
        let mut writer = self.writer;
        writer
            .write(&Record::Stats(stats.clone()))
            .map_err(Error::Output)?;
        let (records, bytes) = (writer.records + 1, writer.bytes + 8);
        writer.finish().map_err(Error::Output)?;
        let mut counts = self.counts;
        counts.maps_lost = maps_lost;
        Ok((records, bytes, stats, counts))
    }

    fn collect(&mut self) {
        // The mappings first: a process whose exit they show took all its samples before,
        // and those are in the side rings now, so its pid is in `sampled` before the next
        // prune (which would otherwise drop the mappings of a process whose samples still
        // wait in the reorder window). Samples name their addresses a reorder window later,
        // by when the mappings made before them have been read.
        if let Some(tracker) = self.maps.as_mut() {
            tracker.drain();
        }
        let (reorder, sampled) = (&mut self.reorder, &mut self.sampled);
        self.rings.drain(|e, strings| {
            reorder.push(e.time_ns, Record::Event(Box::new(*e), strings.to_vec()))
        });
        // `--call-graph dwarf`: each user stack unwound now, while its process lives (or
        // from the mappings the kernel reported of it), as profile's are.
        let (symbolizer, lent, unwound) = (
            &mut self.symbolizer,
            &mut self.lent,
            &mut self.counts.unwound,
        );
        let tracker = self.maps.as_ref();
        let unwind = |s: &perf::record::Sample<'_>| {
            let Some(pid) = s.pid else {
                return Vec::new();
            };
            lend(tracker, lent, symbolizer, pid);
            let (user, end) = user_stack(symbolizer, pid, s);
            if let Some(ends) = unwound.as_mut() {
                tally(ends, end);
            }
            user
        };
        self.side.drain(unwind, |r| {
            if let Record::Sample(s) = &r {
                sampled.insert(s.pid);
            }
            let t = r.time_ns().unwrap_or(0);
            reorder.push(t, r);
        });
    }

    /// Gives the symbolizer the file mappings the kernel reported of `pid` since it was last
    /// given them; `false` when there are none new.
    fn lend(&mut self, pid: u32) -> bool {
        lend(
            self.maps.as_ref(),
            &mut self.lent,
            &mut self.symbolizer,
            pid,
        )
    }

    fn write(&mut self, record: Record) {
        if self.error.is_some() {
            return;
        }
        match &record {
            Record::Event(e, _) => {
                if let Some(source) = self.slots.get(&e.slot) {
                    self.counts.per_source[*source as usize] += 1;
                }
                if self.watch_slots.contains(&e.slot) {
                    self.snapshot_symbol(e);
                }
            }
            Record::Sample(s) => {
                self.counts.per_source[s.source as usize] += 1;
                self.snapshot_sample(s);
            }
            Record::Switch(_) => self.counts.switches += 1,
            Record::Task(_) => self.counts.tasks += 1,
            _ => {}
        }
        if let Err(e) = self.writer.write(&record) {
            self.error = Some(e);
        }
        self.show(record);
    }

    /// `--live`: prints the record's timeline line.
    fn show(&mut self, record: Record) {
        if let Some((decoder, out)) = self.live.as_mut() {
            if let Some(item) = decoder.item(record) {
                if let Err(e) = out.write(&item) {
                    self.error.get_or_insert(e);
                }
            }
        }
    }

    /// A watch hit's instruction, named now (the process may be gone at report time).
    fn snapshot_symbol(&mut self, e: &Event) {
        let ip = e.data[word::WATCH_IP];
        if !self.symbolized.insert((e.pid(), ip)) {
            return;
        }
        let frame = self.symbolizer.frame(e.pid(), ip);
        let symbol = tracefile::Symbol {
            pid: e.pid(),
            addr: ip,
            at: frame.place(),
            source: frame.source(),
        };
        let record = Record::Symbol(symbol);
        if let Err(e) = self.writer.write(&record) {
            self.error = Some(e);
        }
        self.show(record);
    }

    /// A sample's ip and call chain, named now: each address once per process (kernel
    /// addresses once, under pid 0). Addresses no symbol holds are named by their file and offset, or left to be shown in hex.
    fn snapshot_sample(&mut self, s: &tracefile::Sample) {
        // The interrupted instructions (the ip, and the user instruction a kernel sample
        // returns to) are named as they are; the other frames are return addresses. User
        // addresses first: the process may exit while kallsyms loads for the first kernel one.
        let exact = |i: usize| i == 0;
        let addresses = (s.user.iter().enumerate().map(|(i, &a)| (a, exact(i))))
            .chain(std::iter::once((s.ip, true)))
            .chain(s.kernel.iter().enumerate().map(|(i, &a)| (a, exact(i))));
        let mut records = Vec::new();
        for (addr, exact) in addresses {
            let kernel = addr >= tracer_common::KERNEL_SPACE_START;
            let pid = if kernel { 0 } else { s.pid };
            if addr == 0 || !self.symbolized.insert((pid, addr)) {
                continue;
            }
            let mut frame = self.symbolizer.sampled_frame(s.pid, addr, exact);
            // Unnamed from what /proc said (or could not say: the process is gone): from the
            // mappings the kernel reported.
            if frame.symbol.is_none() && !kernel && self.lend(s.pid) {
                frame = self.symbolizer.sampled_frame(s.pid, addr, exact);
            }
            // A frame no symbol names, in a known file, as `gzip+0x2440+0x13` (its function's
            // start in the file, from its FDE, and the offset in it), which the report reads
            // as a name and an offset, as profile names such frames.
            if let Some(at) = frame.at() {
                records.push(Record::Symbol(tracefile::Symbol {
                    pid,
                    addr,
                    at,
                    source: frame.source(),
                }));
            }
        }
        for record in records {
            if let Err(e) = self.writer.write(&record) {
                self.error.get_or_insert(e);
            }
            self.show(record);
        }
    }

    pub fn finish(&mut self) -> Result<(), Error> {
        self.collect();
        let mut ready = Vec::new();
        self.reorder.finish(|r| ready.push(r));
        for r in ready {
            self.write(r);
        }
        if let Some((_, out)) = self.live.as_mut() {
            out.flush().map_err(Error::Output)?;
        }
        match self.error.take() {
            Some(e) => Err(Error::Output(e)),
            None => Ok(()),
        }
    }
}

impl<W: Write> Sink for RecordSink<'_, W> {
    fn stop(&mut self) -> Result<(), Error> {
        Ok(self.bpf.stop()?)
    }

    fn tick(&mut self) -> Result<bool, Error> {
        // The mappings of processes that exited without a sample are not needed.
        if let Some(tracker) = self.maps.as_mut() {
            tracker.prune(&self.sampled);
        }
        if let Some((probes, follower)) = self.follow.as_mut() {
            (follower.check(self.bpf, probes.iter()))
                .into_iter()
                .for_each(crate::output::notes::note);
        }
        Ok(false)
    }

    fn drain(&mut self) -> Result<bool, Error> {
        // Taken before draining: every record stamped earlier than this (minus the window
        // for records still being written on another CPU) is in hand after the drain.
        let now = session::monotonic_ns();
        self.collect();
        let mut ready = Vec::new();
        self.reorder.release(now, |r| ready.push(r));
        for r in ready {
            self.write(r);
        }
        self.writer.flush().map_err(Error::Output)?;
        if let Some((_, out)) = self.live.as_mut() {
            out.flush().map_err(Error::Output)?;
        }
        match self.error.take() {
            Some(e) => Err(Error::Output(e)),
            None => Ok(false),
        }
    }
}
