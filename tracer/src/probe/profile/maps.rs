//! The mappings of processes that come and go during a profile, from the kernel's mmap, comm,
//! fork and exit records, lent to the symbolizer.

use crate::bpf::Bpf;
use crate::kernel::symbols::{self, Mapping};
use crate::perf::{self, EventKind, Options, Scope, Software};
use crate::stacks::Symbolizer;
use crate::Error;

/// The mappings of the processes profiled, from the kernel's `PERF_RECORD_MMAP2`, `COMM` (exec)
/// and `FORK` records on a dummy event per CPU: a process that lives for milliseconds, and is
/// gone before `/proc/PID/maps` could be read, still has its frames named (perf's way).
pub struct MapsTracker {
    /// The rings and what was read of them, shared with the reader thread.
    read: std::sync::Arc<std::sync::Mutex<Read>>,
    /// The reader: drains the rings every [`READ_EVERY`] while tracer is busy elsewhere
    /// (naming a new program's frames reads its DWARF: 86 ms for libc's debug file, where a
    /// shell loop's 15,000 mmaps a second overflowed a ring by 932 records).
    reader: Option<(std::thread::JoinHandle<()>, std::sync::mpsc::Sender<()>)>,
    maps: hashbrown::HashMap<u32, Vec<Mapping>>,
    /// The time of the latest record applied of each process ([`MapsTracker::apply`]).
    latest: hashbrown::HashMap<u32, u64>,
    /// Processes whose exit was seen since the last [`MapsTracker::prune`].
    exited: Vec<u32>,
    /// Processes that exec'd during the run: their mappings since are all in `maps`, and
    /// better than what /proc said before the exec.
    execed: hashbrown::HashSet<u32>,
    /// Processes whose mappings changed since the last [`MapsTracker::lend_to`].
    changed: hashbrown::HashSet<u32>,
    /// Processes lent to the symbolizer by [`MapsTracker::lend_to`] and not taken back.
    lent: hashbrown::HashSet<u32>,
    /// Records lost when a ring was full, and records that did not parse.
    pub lost: u64,
    pub malformed: u64,
}

/// How often the reader thread drains the rings.
const READ_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// The rings, and the changes read from them not applied yet.
struct Read {
    rings: Vec<perf::Ring>,
    changes: Vec<(u64, Change)>,
    lost: u64,
    malformed: u64,
}

impl MapsTracker {
    /// One dummy event and 256 KiB ring per online CPU, every task's records (`task`: only
    /// that task and, with `inherit`, what it starts). Nothing wakes tracer for them: a
    /// thread of the tracker's reads them every 20 ms, and [`MapsTracker::drain`] too.
    pub fn open(task: Option<u32>) -> Result<MapsTracker, Error> {
        use perf::attr::flag;
        let mut rings = Vec::new();
        for cpu in perf::cpus::online()? {
            let (scope, inherit) = match task {
                Some(pid) => (
                    Scope::Task {
                        pid,
                        cpu: Some(cpu),
                    },
                    flag::INHERIT,
                ),
                None => (Scope::Cpu(cpu), 0),
            };
            let options = |build_id: u64| Options {
                // MMAP_DATA too: an ELF file's offset-0 mapping, which places its symbols, is
                // not executable with separate code segments.
                flags: flag::MMAP
                    | flag::MMAP2
                    | flag::MMAP_DATA
                    | flag::COMM
                    | flag::TASK
                    | flag::SAMPLE_ID_ALL
                    | build_id
                    | inherit,
                // Timestamps, to apply the records of all CPUs in the order they happened.
                sample_type: perf::attr::sample::TIME,
                ..Options::default()
            };
            let open = |build_id: u64| {
                perf::Event::open(
                    format!("mappings on CPU {cpu}"),
                    &EventKind::Software(Software::Dummy),
                    &options(build_id),
                    &scope,
                )
            };
            // Build-ids in the mmap records (5.12+) where the kernel has them: they tell the
            // mapped file apart where its device does not match `stat`'s (overlayfs, as in
            // containers) once the process is gone. Older kernels refuse the bit.
            let event = match open(flag::BUILD_ID) {
                Ok(event) => event,
                Err(_) => open(0)?,
            };
            rings.push(perf::Ring::new(event, 64)?);
        }
        let read = std::sync::Arc::new(std::sync::Mutex::new(Read {
            rings,
            changes: Vec::new(),
            lost: 0,
            malformed: 0,
        }));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let shared = read.clone();
        let reader = std::thread::Builder::new()
            .name("tracer-maps".into())
            .spawn(move || {
                // Until the tracker is dropped (its sender with it).
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(READ_EVERY)
                {
                    match shared.lock() {
                        Ok(mut read) => read.read(),
                        Err(_) => return,
                    }
                }
            })
            .ok()
            .map(|handle| (handle, stop));
        Ok(MapsTracker {
            read,
            reader,
            maps: hashbrown::HashMap::new(),
            latest: hashbrown::HashMap::new(),
            exited: Vec::new(),
            execed: hashbrown::HashSet::new(),
            changed: hashbrown::HashSet::new(),
            lent: hashbrown::HashSet::new(),
            lost: 0,
            malformed: 0,
        })
    }

    #[cfg(test)]
    fn without_rings() -> MapsTracker {
        MapsTracker {
            read: std::sync::Arc::new(std::sync::Mutex::new(Read {
                rings: Vec::new(),
                changes: Vec::new(),
                lost: 0,
                malformed: 0,
            })),
            reader: None,
            maps: Default::default(),
            latest: Default::default(),
            exited: Vec::new(),
            execed: Default::default(),
            changed: Default::default(),
            lent: Default::default(),
            lost: 0,
            malformed: 0,
        }
    }

    /// Reads the records waiting in the rings, in time order: each CPU has its own ring, and
    /// a process that moved between CPUs while it exec'd wrote its exec on one and the
    /// mappings of its new program on another.
    pub fn drain(&mut self) {
        let mut changes = match self.read.lock() {
            Ok(mut read) => {
                read.read();
                (self.lost, self.malformed) = (read.lost, read.malformed);
                std::mem::take(&mut read.changes)
            }
            Err(_) => return,
        };
        changes.sort_by_key(|(time, _)| *time);
        self.apply(changes);
    }

    /// Applies records in time order. The rings are read one after the other, so a record
    /// can come a pass later than a newer one of the same process: a child's fork, written on
    /// its parent's CPU just after that ring was read, after its exec and its program's
    /// mappings, written on another CPU the same pass read later. Such a fork or exec, older
    /// than what is known of the process, is out of date: a fork would give the child its
    /// parent's mappings back, an exec would drop its new program's.
    fn apply(&mut self, changes: Vec<(u64, Change)>) {
        for (time, change) in changes {
            let pid = change.pid();
            let latest = self.latest.entry(pid).or_default();
            let out_of_date = *latest > time;
            *latest = time.max(*latest);
            match change {
                Change::Mapped(pid, mapping) => {
                    place(self.maps.entry(pid).or_default(), mapping);
                    self.changed.insert(pid);
                }
                Change::Exec(pid) => {
                    if !out_of_date {
                        self.maps.remove(&pid);
                    }
                    self.execed.insert(pid);
                    self.changed.insert(pid);
                }
                Change::Fork(pid, parent) => {
                    if let Some(parent) = self.maps.get(&parent).filter(|_| !out_of_date) {
                        self.maps.insert(pid, parent.clone());
                        self.changed.insert(pid);
                    }
                }
                Change::Exit(pid) => self.exited.push(pid),
            }
        }
    }

    /// The mappings seen of `pid` (since tracking began, or since its exec), oldest first,
    /// and whether it exec'd during the run (then they are all it has mapped since).
    pub fn mappings(&self, pid: u32) -> (&[Mapping], bool) {
        let maps = self.maps.get(&pid).map_or(&[][..], Vec::as_slice);
        (maps, self.execed.contains(&pid))
    }

    /// Forgets the mappings of the processes that exited without a sample (`sampled` says
    /// which had one; their samples were counted before they exited): what the run keeps then
    /// grows with the processes profiled, not with every process the machine ran.
    pub fn prune(&mut self, sampled: &hashbrown::HashSet<u32>) {
        for pid in self.exited.drain(..) {
            if !sampled.contains(&pid) {
                self.maps.remove(&pid);
                self.latest.remove(&pid);
                self.execed.remove(&pid);
                self.changed.remove(&pid);
            }
        }
    }

    /// The processes whose exit the drains so far saw (each said once): for a stream, whose
    /// events of them were all read by its next batch.
    pub fn take_exited(&mut self) -> hashbrown::HashSet<u32> {
        self.exited.drain(..).collect()
    }

    /// [`MapsTracker::lend`] of the processes whose mappings changed since the last call, the
    /// tracker kept: for reports made while the run goes on (`tracer probe --count-by -s
    /// user -I`), whose processes may be gone before /proc could be read.
    pub fn lend_to(&mut self, symbolizer: &mut Symbolizer) {
        self.drain();
        for pid in std::mem::take(&mut self.changed) {
            if let Some(maps) = self.maps.get(&pid) {
                let mut maps = maps.clone();
                maps.reverse();
                symbolizer.remember_maps(pid, maps, self.execed.contains(&pid));
                self.lent.insert(pid);
            }
        }
    }

    /// [`MapsTracker::lend_to`] of only the processes in `wanted` (those a report names):
    /// the others stay to be lent when one is, so that the symbolizer holds no process that
    /// was never sampled (every process the machine ran, in `profile -a`: it grew by 1.5 MiB
    /// a minute with a thousand short ones).
    pub fn lend_some(&mut self, symbolizer: &mut Symbolizer, wanted: &hashbrown::HashSet<u32>) {
        self.drain();
        let lend: Vec<u32> = (self.changed.iter())
            .filter(|pid| wanted.contains(*pid))
            .copied()
            .collect();
        for pid in lend {
            self.changed.remove(&pid);
            if let Some(maps) = self.maps.get(&pid) {
                let mut maps = maps.clone();
                maps.reverse();
                symbolizer.remember_maps(pid, maps, self.execed.contains(&pid));
                self.lent.insert(pid);
            }
        }
    }

    /// The processes lent since that are not in `keep` (those whose stacks a report holds):
    /// for the symbolizer to forget, since most processes a tracker sees never hit a probe.
    /// The tracker keeps their mappings (until [`MapsTracker::prune`]) and lends them again
    /// at the next [`MapsTracker::lend_to`].
    pub fn take_back(&mut self, keep: &hashbrown::HashSet<u32>) -> hashbrown::HashSet<u32> {
        let back: hashbrown::HashSet<u32> = (self.lent.iter())
            .filter(|pid| !keep.contains(*pid))
            .copied()
            .collect();
        for pid in &back {
            self.lent.remove(pid);
            if self.maps.contains_key(pid) {
                self.changed.insert(*pid);
            }
        }
        back
    }

    /// Forgets `pids` (processes whose counts were printed and evicted).
    pub fn forget(&mut self, pids: &hashbrown::HashSet<u32>) {
        self.maps.retain(|pid, _| !pids.contains(pid));
        self.latest.retain(|pid, _| !pids.contains(pid));
        self.execed.retain(|pid| !pids.contains(pid));
        self.changed.retain(|pid| !pids.contains(pid));
        self.lent.retain(|pid| !pids.contains(pid));
    }

    /// Hands the symbolizer the mappings seen of every process it could not read itself, and
    /// of every process that exec'd during the run (/proc may have been read before the exec:
    /// a child of a shell, still the shell).
    pub fn lend(mut self, symbolizer: &mut Symbolizer) {
        self.drain();
        for (pid, mut maps) in std::mem::take(&mut self.maps) {
            // The latest mapping of an address range first: a range unmapped and mapped again
            // holds the later file.
            maps.reverse();
            symbolizer.remember_maps(pid, maps, self.execed.contains(&pid));
        }
    }
}

impl Drop for MapsTracker {
    /// Stops the reader thread (its channel closes) and waits for it.
    fn drop(&mut self) {
        if let Some((handle, stop)) = self.reader.take() {
            drop(stop);
            _ = handle.join();
        }
    }
}

impl Read {
    /// Reads the records waiting in the rings into `changes`.
    fn read(&mut self) {
        use perf::record::{self as rec, Mmap2File, Record};
        let layout = rec::Layout {
            sample_type: perf::attr::sample::TIME,
            sample_id_all: true,
            ..rec::Layout::default()
        };
        let (lost, malformed, changes) = (&mut self.lost, &mut self.malformed, &mut self.changes);
        for ring in &mut self.rings {
            let stats = ring.drain(|bytes| {
                let Ok(parsed) = rec::parse(bytes, &layout) else {
                    *malformed += 1;
                    return;
                };
                let time = parsed.sample_id.time.unwrap_or(0);
                let change = match parsed.record {
                    Record::Mmap2 {
                        pid,
                        addr,
                        len,
                        pgoff,
                        file,
                        prot,
                        filename,
                        ..
                    } => {
                        let (dev, inode, build_id) = match file {
                            Mmap2File::Inode { maj, min, ino, .. } => ((maj, min), ino, None),
                            Mmap2File::BuildId(id) => ((0, 0), 0, Some(symbols::hex(id))),
                        };
                        let name = filename.split(|&b| b == 0).next().unwrap_or_default();
                        let path = std::str::from_utf8(name)
                            .map_or(name.first() == Some(&b'/'), symbols::kept_path)
                            .then(|| {
                                use std::os::unix::ffi::OsStrExt;
                                std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name))
                            });
                        let flag = |bit: i32, c: char| if prot & bit as u32 != 0 { c } else { '-' };
                        let perms = format!(
                            "{}{}{}p",
                            flag(libc::PROT_READ, 'r'),
                            flag(libc::PROT_WRITE, 'w'),
                            flag(libc::PROT_EXEC, 'x')
                        );
                        Change::Mapped(
                            pid,
                            Mapping {
                                start: addr,
                                end: addr.saturating_add(len),
                                offset: pgoff,
                                perms,
                                dev,
                                inode,
                                build_id,
                                path,
                            },
                        )
                    }
                    // An exec replaces the process's mappings (perf_event_open(2): misc
                    // PERF_RECORD_MISC_COMM_EXEC).
                    Record::Comm { pid, .. } if parsed.header.misc & rec::misc::BIT13 != 0 => {
                        Change::Exec(pid)
                    }
                    // A new process starts with its parent's mappings.
                    Record::Fork(t) if t.pid != t.ppid => Change::Fork(t.pid, t.ppid),
                    // A process (not a thread) ended.
                    Record::Exit(t) if t.pid == t.tid => Change::Exit(t.pid),
                    Record::Lost { lost: n, .. } => {
                        *lost += n;
                        return;
                    }
                    _ => return,
                };
                changes.push((time, change));
            });
            if stats.corrupt {
                *malformed += 1;
            }
        }
    }
}

/// What one side-band record says of a process's mappings.
/// Adds a process's new mapping, as the kernel placed it: whatever was mapped where it lies
/// is gone (perf reports no munmap), so older mappings keep only the parts outside it, each
/// with its file offset. A process that maps and unmaps files for as long as it runs (a
/// reader of files by mmap; another tracer) then holds what it has mapped now, not every
/// mapping it ever made: `profile -a` grew by 2 MiB a minute from them in the soak.
fn place(maps: &mut Vec<Mapping>, new: Mapping) {
    if maps.iter().any(|m| m.start < new.end && new.start < m.end) {
        let old = std::mem::take(maps);
        for m in old {
            if !(m.start < new.end && new.start < m.end) {
                maps.push(m);
                continue;
            }
            if m.start < new.start {
                maps.push(Mapping {
                    end: new.start,
                    ..m.clone()
                });
            }
            if new.end < m.end {
                maps.push(Mapping {
                    start: new.end,
                    offset: m.offset + (new.end - m.start),
                    ..m
                });
            }
        }
    }
    maps.push(new);
}

#[derive(Debug, PartialEq)]
enum Change {
    Mapped(u32, Mapping),
    Exec(u32),
    /// A new process and its parent.
    Fork(u32, u32),
    Exit(u32),
}

impl Change {
    /// The process the record is of.
    fn pid(&self) -> u32 {
        match *self {
            Change::Mapped(pid, _)
            | Change::Exec(pid)
            | Change::Fork(pid, _)
            | Change::Exit(pid) => pid,
        }
    }
}

/// Before a streamed batch's stacks are symbolized: the batch's stacks are read and leave the
/// map ([`Symbolizer::prefetch`]: a long run's never fill it), the tracker's new mappings are
/// lent, and the processes whose exit was seen before the batch was read, and that have no
/// event in it, are forgotten (they made all their events before it). `now`: the events'
/// clock, as [`Symbolizer::recycle`] takes it.
pub fn before_batch(
    tracker: Option<&mut MapsTracker>,
    symbolizer: &mut Symbolizer,
    bpf: &mut Bpf,
    events: &[(tracer_common::Event, std::ops::Range<usize>)],
    now: fn() -> u64,
) -> Result<(), Error> {
    symbolizer.prefetch(bpf, events.iter().map(|(e, _)| e), now)?;
    let Some(tracker) = tracker.filter(|_| !events.is_empty()) else {
        return Ok(());
    };
    let exited = tracker.take_exited();
    // Drained after the events were read: an event's process has its records by now.
    tracker.lend_to(symbolizer);
    tracker.forget(&exited);
    let in_batch: hashbrown::HashSet<u32> = events.iter().map(|(e, _)| e.pid()).collect();
    let done = exited.difference(&in_batch).copied().collect();
    symbolizer.forget(&done, &Default::default());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(start: u64, end: u64, offset: u64, perms: &str) -> Mapping {
        Mapping {
            start,
            end,
            offset,
            perms: perms.into(),
            dev: (8, 1),
            inode: 42,
            build_id: None,
            path: Some("/usr/lib/libx.so".into()),
        }
    }

    #[test]
    fn a_fork_or_exec_read_after_newer_records_of_its_process_is_out_of_date() {
        let program = mapping(0x1000, 0x2000, 0, "r--p");
        let parents = mapping(0x9000, 0xa000, 0, "rw-p");
        let mut tracker = MapsTracker::without_rings();
        tracker.apply(vec![(10, Change::Mapped(1, parents.clone()))]);
        // A pass reads the child's exec and program (CPU 1); the next, its fork (CPU 0),
        // written just after the first pass read CPU 0's ring.
        tracker.apply(vec![
            (105, Change::Exec(7)),
            (106, Change::Mapped(7, program.clone())),
        ]);
        tracker.apply(vec![(103, Change::Fork(7, 1))]);
        assert_eq!(tracker.mappings(7), (&[program.clone()][..], true));
        // An exec read after its program's first mapping keeps it.
        let lib = mapping(0x5000, 0x6000, 0, "r-xp");
        tracker.apply(vec![(210, Change::Mapped(8, lib.clone()))]);
        tracker.apply(vec![
            (205, Change::Exec(8)),
            (220, Change::Mapped(8, program.clone())),
        ]);
        assert_eq!(tracker.mappings(8), (&[lib, program.clone()][..], true));
        // In order, and for a pid used again after its process's exit, each applies.
        tracker.apply(vec![(300, Change::Exit(7)), (310, Change::Fork(7, 1))]);
        assert_eq!(tracker.mappings(7).0, [parents]);
        tracker.apply(vec![(320, Change::Exec(7))]);
        assert_eq!(tracker.mappings(7), (&[][..], true));
    }

    #[test]
    fn a_new_mapping_replaces_what_it_covers() {
        // ld.so reserves a library's whole span from offset 0, then maps its code over the
        // middle: the reservation keeps its two ends, the right one at its own offset.
        let mut maps = Vec::new();
        place(&mut maps, mapping(0x10000, 0x20000, 0, "r--p"));
        place(&mut maps, mapping(0x12000, 0x15000, 0x2000, "r-xp"));
        let spans: Vec<(u64, u64, u64, &str)> = (maps.iter())
            .map(|m| (m.start, m.end, m.offset, m.perms.as_str()))
            .collect();
        assert_eq!(
            spans,
            [
                (0x10000, 0x12000, 0, "r--p"),
                (0x15000, 0x20000, 0x5000, "r--p"),
                (0x12000, 0x15000, 0x2000, "r-xp"),
            ]
        );
        // A file mapped and unmapped over and over at one address is one mapping.
        let mut maps = Vec::new();
        for _ in 0..1000 {
            place(&mut maps, mapping(0x40000, 0x48000, 0, "r--s"));
        }
        assert_eq!(maps.len(), 1);
        // Beside, not over: both stay.
        place(&mut maps, mapping(0x48000, 0x50000, 0, "r--s"));
        assert_eq!(maps.len(), 2);
    }
}
