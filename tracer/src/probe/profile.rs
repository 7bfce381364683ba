//! The profile layer: sampling perf events per CPU or per task (hardware cycles where the CPU has them,
//! else the cpu-clock software event) with a perf-event slot attached that counts each sample
//! in the kernel under its process, comm and stacks; the off-CPU program on
//! `sched:sched_switch`; and the counts read back as symbolized stacks.

use tracer_common::{
    AggKey, AggValue, OffCpuConfig, SlotConfig, AGG_COMM, AGG_PID, NO_STACK, SLOT_AGGREGATE,
};

use crate::bpf::{Bpf, Room, Rooms, Sizing, Slot, SlotKind};
use crate::kernel::symbols::{self, Mapping};
use crate::kernel::tracefs::Tracefs;
use crate::output::profile::{Accounting, Entry, Frame, Measure, Profile};
use crate::output::stack::{Space, Stack};
use crate::perf::{self, EventKind, Hardware, Options, Sampling, Scope, Software};
use crate::stacks::{Symbolizer, NO_FRAMES};
use crate::Error;

/// The slot config of a profile: counted by process, comm and the stacks in `stack_flags`
/// (`SLOT_STACK_*`), with the run's task filters (`tgid`, `SLOT_FILTER_TRACKED`). With
/// `exclude_self`, tracer's own hits are dropped in the kernel (its blocks, off-CPU); else
/// they are counted, and [`entries`] sets them apart, so that every sample is accounted for.
pub fn slot_config(stack_flags: u32, tgid: u32, tracked: bool, exclude_self: bool) -> SlotConfig {
    SlotConfig {
        flags: SLOT_AGGREGATE
            | stack_flags
            | if tracked {
                tracer_common::SLOT_FILTER_TRACKED
            } else {
                0
            },
        agg: AGG_PID | AGG_COMM | tracer_common::AGG_CGROUP,
        tgid,
        // No process has the largest id: 0 would leave out the idle task.
        exclude_tgid: match exclude_self {
            true => std::process::id(),
            false => u32::MAX,
        },
        ..SlotConfig::default()
    }
}

/// Sampling events on every online CPU, with their slot: dropping it detaches.
pub struct Sampler {
    pub slot: Slot,
    /// `cycles` or `cpu-clock`.
    pub event: &'static str,
    events: Vec<perf::Event>,
}

/// Where the sampling events go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sampled {
    /// Every task: one event per online CPU.
    AllCpus,
    /// These tasks (a command held at its exec; the threads of `-p PID`), each with `inherit`,
    /// so that the threads and children they start are sampled too. A per-task clock event runs
    /// only while its task does, so each sample stands for one period of that task's CPU time,
    /// however busy the CPU is with others.
    Tasks(Vec<u32>),
}

impl Sampler {
    /// Opens the sampling events (disabled) and attaches `slot`'s program to each. Hardware
    /// cycles at `hz` (frequency mode) when the CPU has them; otherwise cpu-clock with a fixed
    /// period of 1/`hz` s, so each sample stands for exactly that much CPU time. Call
    /// [`Sampler::enable`] once the target is ready.
    pub fn open(
        bpf: &mut Bpf,
        config: SlotConfig,
        hz: u64,
        sampled: &Sampled,
    ) -> Result<Sampler, Error> {
        let slot = bpf.take_slot(SlotKind::PerfEvent, config)?;
        let (scopes, flags) = match sampled {
            Sampled::AllCpus => (
                (perf::cpus::online()?.into_iter())
                    .map(Scope::Cpu)
                    .collect::<Vec<_>>(),
                perf::attr::flag::DISABLED,
            ),
            Sampled::Tasks(tids) => (
                (tids.iter())
                    .map(|&pid| Scope::Task { pid, cpu: None })
                    .collect(),
                perf::attr::flag::DISABLED | perf::attr::flag::INHERIT,
            ),
        };
        let first = scopes.first().cloned().unwrap_or(Scope::Cpu(0));
        let (event, kind, options) = sampling_event(hz, flags, &first)?;
        let mut events = Vec::new();
        for scope in &scopes {
            let opened = match perf::Event::open(event, &kind, &options, scope) {
                Ok(opened) => opened,
                // A thread of -p that exited since it was listed.
                Err(e) if e.errno() == Some(libc::ESRCH) && scopes.len() > 1 => continue,
                Err(e) => return Err(e.into()),
            };
            opened.set_bpf(bpf.program_fd(&slot)?)?;
            events.push(opened);
        }
        Ok(Sampler {
            slot,
            event,
            events,
        })
    }

    /// Starts sampling.
    pub fn enable(&self) -> Result<(), Error> {
        for event in &self.events {
            event.enable(false)?;
        }
        Ok(())
    }
}

/// The sampling event at `hz`: hardware cycles (frequency mode) when the CPU has them, else
/// cpu-clock with a fixed period of 1/`hz` s, so each sample stands for exactly that much CPU
/// time; with `flags`. The `first` scope decides: no cycles there (ENOENT on this VM,
/// EOPNOTSUPP without a sampling PMU) means none anywhere.
fn sampling_event(
    hz: u64,
    flags: u64,
    first: &Scope,
) -> Result<(&'static str, EventKind, Options), Error> {
    let cycles = (
        "cycles",
        EventKind::Hardware(Hardware::CpuCycles),
        Options {
            sampling: Sampling::Frequency(hz),
            flags,
            ..Options::default()
        },
    );
    let clock = (
        "cpu-clock",
        EventKind::Software(Software::CpuClock),
        Options {
            sampling: Sampling::Period(crate::units::clock_period_ns(hz)),
            flags,
            ..Options::default()
        },
    );
    match perf::Event::open("cycles", &cycles.1, &cycles.2, first) {
        Ok(_) => Ok(cycles),
        Err(e) if hardware_missing(&e) => Ok(clock),
        Err(e) => Err(e.into()),
    }
}

/// A profile of every task on every CPU for `duration`, at `hz`, kernel and user stacks: what
/// `tracer serve`'s `/debug/pprof/profile` hands out. It loads programs of its own and sleeps
/// on the calling thread for the duration; the mappings of processes that come and go are
/// kept as `tracer profile -a` keeps them.
pub fn profile_every_cpu(hz: u64, duration: std::time::Duration) -> Result<Profile, Error> {
    use std::time::{Duration, Instant};
    let mut bpf = Bpf::load_with(Sizing {
        rooms: Rooms::from([Room::Stacks, Room::Counts]),
        ..Sizing::default()
    })?;
    let stacks = tracer_common::SLOT_STACK_KERNEL | tracer_common::SLOT_STACK_USER;
    let config = slot_config(stacks, 0, false, false);
    let sampler = Sampler::open(&mut bpf, config, hz, &Sampled::AllCpus)?;
    let mut tracker = MapsTracker::open(None)?;
    let mut symbolizer = Symbolizer::default();
    let started = Instant::now();
    sampler.enable()?;
    while let Some(left) = (duration.checked_sub(started.elapsed())).filter(|d| !d.is_zero()) {
        std::thread::sleep(left.min(Duration::from_millis(250)));
        tracker.drain();
        let sampled = remember_processes(&bpf, &sampler.slot, &mut symbolizer)?;
        tracker.prune(&sampled);
    }
    bpf.stop()?;
    let seconds = started.elapsed().as_secs_f64();
    let maps_lost = tracker.lost + tracker.malformed;
    tracker.lend(&mut symbolizer);
    let (entries, mut accounting) = entries(&bpf, &sampler.slot, &mut symbolizer, true, false)?;
    accounting.maps_lost = maps_lost;
    Ok(Profile {
        measure: Measure::OnCpu {
            hz,
            event: sampler.event,
        },
        entries,
        accounting,
        seconds,
    })
}

/// The threads of process `pid` now (itself when they cannot be listed).
pub fn threads(pid: u32) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if tids.is_empty() {
        tids.push(pid);
    }
    tids.sort_unstable();
    tids
}

/// `--call-graph dwarf`: sampling events that carry each sample's user registers and the top
/// of its user stack to tracer (`PERF_SAMPLE_REGS_USER`, `PERF_SAMPLE_STACK_USER`, perf's
/// `--call-graph dwarf`), with the kernel's call chain; tracer unwinds each user stack as it
/// drains the rings, while the process still runs, and counts the stacks by their addresses.
/// No BPF program is attached: nothing in the kernel could unwind these stacks.
pub struct Unwound {
    rings: Vec<perf::Ring>,
    /// Events whose samples go to a ring of the same CPU (`PERF_EVENT_IOC_SET_OUTPUT`).
    followers: Vec<perf::Event>,
    layout: perf::record::Layout,
    pub event: &'static str,
    skip_idle: bool,
    counts: hashbrown::HashMap<UnwoundKey, u64>,
    /// Thread names by tid, from the rings' comm and fork records and, for threads that were
    /// running before, from /proc.
    comms: hashbrown::HashMap<u32, String>,
    /// Samples read, tracer's own and the idle task's, and how each unwind ended.
    total: u64,
    idle: u64,
    own: u64,
    ends: crate::output::profile::Unwound,
    malformed: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct UnwoundKey {
    pid: u32,
    comm: String,
    cgroup: u64,
    /// Innermost first.
    kernel: Vec<u64>,
    user: Vec<u64>,
}

/// Data pages per CPU ring: 1 MiB, about 120 samples of 8 KiB stacks, drained every 10 ms
/// (10 samples per CPU at 999 Hz).
const UNWOUND_RING_PAGES: usize = 256;

impl Unwound {
    /// Opens the sampling events (disabled), a ring per CPU. `kernel`: the kernel call chain
    /// too. `skip_idle`: samples of the idle task are counted apart.
    pub fn open(
        hz: u64,
        sampled: &Sampled,
        stack_bytes: u32,
        kernel: bool,
        skip_idle: bool,
    ) -> Result<Unwound, Error> {
        use perf::attr::{flag, sample};
        let cpus = perf::cpus::online()?;
        // Each task's events on each CPU: the kernel maps no ring of an inherited event that
        // follows its task across CPUs (perf_mmap refuses it).
        let per_cpu: Vec<Vec<Scope>> = match sampled {
            Sampled::AllCpus => cpus.iter().map(|&cpu| vec![Scope::Cpu(cpu)]).collect(),
            Sampled::Tasks(tids) => (cpus.iter())
                .map(|&cpu| {
                    (tids.iter())
                        .map(|&pid| Scope::Task {
                            pid,
                            cpu: Some(cpu),
                        })
                        .collect()
                })
                .collect(),
        };
        let inherit = match sampled {
            Sampled::AllCpus => 0,
            Sampled::Tasks(_) => flag::INHERIT,
        };
        let flags = flag::DISABLED
            | flag::COMM
            | flag::TASK
            | flag::SAMPLE_ID_ALL
            | flag::EXCLUDE_CALLCHAIN_USER
            | inherit;
        let probe = (per_cpu.first().and_then(|s| s.first()).cloned()).unwrap_or(Scope::Cpu(0));
        let (event, kind, mut options) = sampling_event(hz, flags, &probe)?;
        let callchain = if kernel { sample::CALLCHAIN } else { 0 };
        options.sample_type = sample::TID
            | sample::TIME
            | callchain
            | sample::REGS_USER
            | sample::STACK_USER
            | sample::CGROUP;
        options.sample_regs_user = crate::kernel::unwind::REGS_MASK;
        options.sample_stack_user = stack_bytes;
        options.sample_max_stack = perf::record::callchain::MAX_STACK_DEPTH;
        // PERF_SAMPLE_CGROUP is 5.7's: without it, no container labels.
        if perf::Event::open(event, &kind, &options, &probe).is_err() {
            options.sample_type &= !sample::CGROUP;
        }
        let mut rings = Vec::new();
        let mut followers = Vec::new();
        for scopes in &per_cpu {
            let mut ring: Option<perf::Ring> = None;
            for scope in scopes {
                let opened = match perf::Event::open(event, &kind, &options, scope) {
                    Ok(opened) => opened,
                    // A thread of -p that exited since it was listed.
                    Err(e) if e.errno() == Some(libc::ESRCH) && scopes.len() > 1 => continue,
                    Err(e) => return Err(e.into()),
                };
                match &ring {
                    None => ring = Some(perf::Ring::new(opened, UNWOUND_RING_PAGES)?),
                    Some(ring) => {
                        opened.set_output(ring.event())?;
                        followers.push(opened);
                    }
                }
            }
            rings.extend(ring);
        }
        let layout = perf::record::Layout {
            sample_type: options.sample_type,
            sample_id_all: true,
            regs_user: crate::kernel::unwind::REGS_MASK.count_ones(),
            max_callchain: Some(
                perf::record::callchain::MAX_STACK_DEPTH as u64
                    + perf::record::callchain::MAX_CONTEXTS,
            ),
            ..perf::record::Layout::default()
        };
        Ok(Unwound {
            rings,
            followers,
            layout,
            event,
            skip_idle,
            counts: hashbrown::HashMap::new(),
            comms: hashbrown::HashMap::new(),
            total: 0,
            idle: 0,
            own: 0,
            ends: crate::output::profile::Unwound {
                stack_bytes,
                ..Default::default()
            },
            malformed: 0,
        })
    }

    /// Starts sampling.
    pub fn enable(&self) -> Result<(), Error> {
        let events = (self.rings.iter().map(|r| r.event())).chain(&self.followers);
        for event in events {
            event.enable(false)?;
        }
        Ok(())
    }

    /// Stops sampling; what the rings hold is still read by the next drain.
    pub fn disable(&self) -> Result<(), Error> {
        let events = (self.rings.iter().map(|r| r.event())).chain(&self.followers);
        for event in events {
            event.disable(false)?;
        }
        Ok(())
    }

    /// Reads the samples waiting in the rings and unwinds their user stacks now, while their
    /// processes run (their files are read through /proc/PID/map_files when replaced).
    pub fn drain(&mut self, symbolizer: &mut Symbolizer) {
        use perf::record::{self as rec, Record};
        let own = std::process::id();
        let Unwound {
            rings,
            layout,
            skip_idle,
            counts,
            comms,
            total,
            idle,
            own: own_count,
            ends,
            malformed,
            ..
        } = self;
        // Every CPU's records in time order: a process that exec'd on one CPU has its new
        // name in that CPU's ring, and its samples in the others'.
        let mut records: Vec<(u64, Vec<u8>)> = Vec::new();
        for ring in rings.iter_mut() {
            let stats = ring.drain(|bytes| {
                let time = match rec::parse(bytes, layout) {
                    Ok(parsed) => match &parsed.record {
                        Record::Sample(sample) => sample.time.unwrap_or(0),
                        _ => parsed.sample_id.time.unwrap_or(0),
                    },
                    Err(_) => 0,
                };
                records.push((time, bytes.to_vec()));
            });
            if stats.corrupt {
                *malformed += 1;
            }
        }
        records.sort_by_key(|(time, _)| *time);
        for (_, bytes) in &records {
            (|| {
                let Ok(parsed) = rec::parse(bytes, layout) else {
                    *malformed += 1;
                    return;
                };
                let sample = match parsed.record {
                    Record::Sample(sample) => sample,
                    Record::Comm { tid, comm, .. } => {
                        let name = comm.split(|&b| b == 0).next().unwrap_or_default();
                        comms.insert(tid, String::from_utf8_lossy(name).into_owned());
                        return;
                    }
                    // A new thread or process starts with its creator's name.
                    Record::Fork(t) => {
                        let name = comm_of(comms, t.ppid, t.ptid);
                        comms.insert(t.tid, name);
                        return;
                    }
                    Record::Lost { lost, .. } => {
                        ends.lost += lost;
                        return;
                    }
                    // Its samples came before (time order): what was kept to read them goes,
                    // so that a long run keeps what its live tasks need.
                    Record::Exit(t) => {
                        comms.remove(&t.tid);
                        if t.pid == t.tid {
                            symbolizer.drop_unwinder(t.pid);
                        }
                        return;
                    }
                    _ => return,
                };
                let (Some(pid), Some(tid)) = (sample.pid, sample.tid) else {
                    *malformed += 1;
                    return;
                };
                *total += 1;
                if *skip_idle && pid == 0 {
                    *idle += 1;
                    return;
                }
                if pid == own {
                    *own_count += 1;
                    return;
                }
                let kernel = (sample.callchain.as_deref())
                    .map(|chain| rec::callchain::split(chain).0)
                    .unwrap_or_default();
                let user = user_stack(symbolizer, pid, &sample, ends);
                let key = UnwoundKey {
                    pid,
                    comm: comm_of(comms, pid, tid),
                    cgroup: sample.cgroup.unwrap_or(0),
                    kernel,
                    user,
                };
                *counts.entry(key).or_default() += 1;
            })();
        }
    }

    /// What was counted since the last call, as symbolized entries heaviest first, and where
    /// every sample read went (`-I` takes each interval's; the end of a run takes the rest).
    pub fn take_entries(&mut self, symbolizer: &mut Symbolizer) -> (Vec<Entry>, Accounting) {
        let mut entries = Vec::new();
        for (key, count) in std::mem::take(&mut self.counts) {
            let mut frames: Vec<Frame> = (key.kernel.iter().enumerate())
                .map(|(depth, &addr)| {
                    frame_of(&symbolizer.sampled_frame(key.pid, addr, depth == 0))
                })
                .collect();
            let user = symbolizer.unwound_frames(key.pid, &key.user);
            frames.extend(user.iter().map(frame_of));
            entries.push(Entry {
                comm: key.comm,
                pid: key.pid,
                cgroup: match key.cgroup {
                    0 => Default::default(),
                    id => crate::kernel::cgroups::identity(id),
                },
                frames,
                count,
                value: count,
            });
        }
        // A sample that did not parse is a sample lost.
        self.ends.lost += std::mem::take(&mut self.malformed);
        let fresh = crate::output::profile::Unwound {
            stack_bytes: self.ends.stack_bytes,
            ..Default::default()
        };
        let accounting = Accounting {
            total: std::mem::take(&mut self.total),
            idle: std::mem::take(&mut self.idle),
            own: std::mem::take(&mut self.own),
            exited: symbolizer.exited,
            unwound: Some(std::mem::replace(&mut self.ends, fresh)),
            ..Accounting::default()
        };
        let mut entries = merged(entries);
        entries.sort_by(|a, b| (b.value, a.pid, &a.comm).cmp(&(a.value, b.pid, &b.comm)));
        (entries, accounting)
    }
}

/// The name of thread `tid` of `pid`: as the rings said it, else as /proc says it now.
fn comm_of(comms: &mut hashbrown::HashMap<u32, String>, pid: u32, tid: u32) -> String {
    comms
        .entry(tid)
        .or_insert_with(|| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .map(|c| c.trim_end_matches('\n').to_string())
                .unwrap_or_else(|_| "[unknown]".into())
        })
        .clone()
}

/// A symbolized frame as the profile shows it.
fn frame_of(f: &crate::output::stack::Frame) -> Frame {
    Frame {
        name: f.name(),
        named: f.symbol.is_some(),
        kernel: f.space == Space::Kernel,
        source: f.source(),
        addr: f.addr,
        mapped: f.mapped.clone(),
        build_id: f.build_id.clone(),
    }
}

/// The mappings of the processes profiled, from the kernel's `PERF_RECORD_MMAP2`, `COMM` (exec)
/// and `FORK` records on a dummy event per CPU: a process that lives for milliseconds, and is
/// gone before `/proc/PID/maps` could be read, still has its frames named (perf's way).
pub struct MapsTracker {
    rings: Vec<perf::Ring>,
    maps: hashbrown::HashMap<u32, Vec<Mapping>>,
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

impl MapsTracker {
    /// One dummy event and 256 KiB ring per online CPU, every task's records (`task`: only
    /// that task and, with `inherit`, what it starts). Nothing wakes tracer for them: the
    /// rings are drained every 100 ms.
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
        Ok(MapsTracker {
            rings,
            maps: hashbrown::HashMap::new(),
            exited: Vec::new(),
            execed: hashbrown::HashSet::new(),
            changed: hashbrown::HashSet::new(),
            lent: hashbrown::HashSet::new(),
            lost: 0,
            malformed: 0,
        })
    }

    /// Reads the records waiting in the rings, in time order: each CPU has its own ring, and
    /// a process that moved between CPUs while it exec'd wrote its exec on one and the
    /// mappings of its new program on another.
    pub fn drain(&mut self) {
        use perf::record::{self as rec, Mmap2File, Record};
        let layout = rec::Layout {
            sample_type: perf::attr::sample::TIME,
            sample_id_all: true,
            ..rec::Layout::default()
        };
        let mut changes: Vec<(u64, Change)> = Vec::new();
        let (lost, malformed) = (&mut self.lost, &mut self.malformed);
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
        changes.sort_by_key(|(time, _)| *time);
        for (_, change) in changes {
            match change {
                Change::Mapped(pid, mapping) => {
                    self.maps.entry(pid).or_default().push(mapping);
                    self.changed.insert(pid);
                }
                Change::Exec(pid) => {
                    self.maps.remove(&pid);
                    self.execed.insert(pid);
                    self.changed.insert(pid);
                }
                Change::Fork(pid, parent) => {
                    if let Some(parent) = self.maps.get(&parent).cloned() {
                        self.maps.insert(pid, parent);
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
        self.execed.retain(|pid| !pids.contains(pid));
        self.changed.retain(|pid| !pids.contains(pid));
        self.lent.retain(|pid| !pids.contains(pid));
    }

    /// Hands the symbolizer the mappings seen of every process it could not read itself, and
    /// of every process that exec'd during the run (/proc may have been read before the exec:
    /// a child of a shell, still the shell).
    pub fn lend(mut self, symbolizer: &mut Symbolizer) {
        self.drain();
        for (pid, mut maps) in self.maps {
            // The latest mapping of an address range first: a range unmapped and mapped again
            // holds the later file.
            maps.reverse();
            symbolizer.remember_maps(pid, maps, self.execed.contains(&pid));
        }
    }
}

/// What one side-band record says of a process's mappings.
enum Change {
    Mapped(u32, Mapping),
    Exec(u32),
    /// A new process and its parent.
    Fork(u32, u32),
    Exit(u32),
}

/// No hardware cycles to sample here (the errnos perf_event_open(2) gives for a missing or
/// non-sampling PMU).
fn hardware_missing(e: &perf::Error) -> bool {
    matches!(
        e.errno(),
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL)
    )
}

/// Attaches the off-CPU program to `sched:sched_switch`, with the run's task filters and
/// stacks in `config`, counting blocks of at least `min_ns`; it runs until the returned event
/// is closed.
pub fn start_offcpu(
    bpf: &mut Bpf,
    fs: &Tracefs,
    config: SlotConfig,
    min_ns: u64,
) -> Result<(perf::Event, Slot), Error> {
    let format = fs.format("sched", "sched_switch")?;
    let field = |name: &str| {
        format
            .field(name)
            .map(|f| f.offset as u32)
            .ok_or_else(|| Error::Runtime {
                message: format!("sched:sched_switch has no {name} field"),
                hints: vec![
                    "this kernel's sched_switch record is not supported by --off-cpu".into(),
                ],
            })
    };
    let offsets = OffCpuConfig {
        min_ns,
        prev_state: field("prev_state")?,
        next_pid: field("next_pid")?,
    };
    let (program, slot) = bpf.load_offcpu(config, offsets)?;
    let id = fs.tracepoint_id("sched", "sched_switch")?;
    let event = super::tasks::run_on_tracepoint(bpf, "sched:sched_switch", id, program)?;
    Ok((event, slot))
}

/// A key's stack id for the symbolizer, and whether the stack was lost: [`NO_FRAMES`] is no
/// stack on that side, other errnos are losses (EEXIST: the bucket was taken by another stack).
fn side(id: i32) -> (i32, bool) {
    match id {
        NO_FRAMES => (NO_STACK, false),
        id if id < 0 && id != NO_STACK => (NO_STACK, true),
        id => (id, false),
    }
}

/// Reads the mappings of every process with stacks counted so far that tracer does not know
/// yet, while it runs: one that exits before the end of the run (when stacks are symbolized)
/// keeps its frames. Only `/proc/PID/maps` is read here; symbols wait for the end. Returns
/// the processes with samples so far.
pub fn remember_processes(
    bpf: &Bpf,
    slot: &Slot,
    symbolizer: &mut Symbolizer,
) -> Result<hashbrown::HashSet<u32>, Error> {
    let mut sampled = hashbrown::HashSet::new();
    for key in bpf.count_keys()? {
        if key.slot == slot.id
            && key.pid != 0
            && sampled.insert(key.pid)
            && side(key.ustack).0 != NO_STACK
        {
            symbolizer.remember(key.pid);
        }
    }
    Ok(sampled)
}

/// The counts of `slot` as symbolized entries, heaviest first, and where every counted sample
/// went. With `skip_idle`, samples of the idle task (pid 0) are counted apart; `timed`
/// (off-CPU) values are the nanoseconds summed, else the samples.
pub fn entries(
    bpf: &Bpf,
    slot: &Slot,
    symbolizer: &mut Symbolizer,
    skip_idle: bool,
    timed: bool,
) -> Result<(Vec<Entry>, Accounting), Error> {
    let counts = slot_counts(bpf, slot)?;
    let (hits, failed) = bpf.slot_stats(slot)?;
    let mut accounting = Accounting {
        total: hits,
        not_counted: failed,
        short: bpf.slot_filtered(slot)?,
        ..Accounting::default()
    };
    let entries = entries_of(bpf, counts, symbolizer, skip_idle, timed, &mut accounting)?;
    Ok((entries, accounting))
}

/// The counts of `slot` so far (totals: cells are never cleared).
pub fn slot_counts(bpf: &Bpf, slot: &Slot) -> Result<Vec<(AggKey, AggValue)>, Error> {
    Ok((bpf.counts()?.into_iter())
        .filter(|(key, _)| key.slot == slot.id)
        .collect())
}

/// The growth of each count since `previous` (`-I`), which becomes `now`.
pub fn since(
    now: Vec<(AggKey, AggValue)>,
    previous: &mut hashbrown::HashMap<AggKey, AggValue>,
) -> Vec<(AggKey, AggValue)> {
    let mut grown = Vec::new();
    for (key, value) in now {
        let before = previous.insert(key, value).unwrap_or_default();
        let delta = AggValue {
            count: value.count.saturating_sub(before.count),
            sum: value.sum.wrapping_sub(before.sum),
        };
        if delta.count > 0 {
            grown.push((key, delta));
        }
    }
    grown
}

/// `counts` as symbolized entries, heaviest first; what is left out is added to `accounting`.
pub fn entries_of(
    bpf: &Bpf,
    counts: Vec<(AggKey, AggValue)>,
    symbolizer: &mut Symbolizer,
    skip_idle: bool,
    timed: bool,
    accounting: &mut Accounting,
) -> Result<Vec<Entry>, Error> {
    let mut entries = Vec::new();
    for (key, value) in counts {
        if skip_idle && key.pid == 0 {
            accounting.idle += value.count;
            continue;
        }
        if key.pid == std::process::id() {
            accounting.own += value.count;
            continue;
        }
        let ((kstack, klost), (ustack, ulost)) = (side(key.kstack), side(key.ustack));
        if klost || ulost {
            accounting.stacks_lost += value.count;
        }
        let mut frames = Vec::new();
        let stacks = symbolizer.stacks_of(bpf, key.pid, kstack, ustack, 0)?;
        let lost = |kernel| Frame {
            name: "[lost]".into(),
            named: true,
            kernel,
            source: None,
            addr: 0,
            mapped: None,
            build_id: None,
        };
        if klost {
            frames.push(lost(true));
        }
        for stack in stacks {
            if let Stack::Frames(list) = stack {
                frames.extend(list.iter().map(frame_of));
            }
        }
        if ulost {
            frames.push(lost(false));
        }
        let comm_end = key.comm.iter().position(|&b| b == 0).unwrap_or(16);
        entries.push(Entry {
            comm: String::from_utf8_lossy(&key.comm[..comm_end]).into_owned(),
            pid: key.pid,
            cgroup: match key.cgroup {
                0 => Default::default(),
                id => crate::kernel::cgroups::identity(id),
            },
            frames,
            count: value.count,
            value: if timed { value.sum } else { value.count },
        });
    }
    accounting.exited = symbolizer.exited;
    let mut entries = merged(entries);
    entries.sort_by(|a, b| (b.value, a.pid, &a.comm).cmp(&(a.value, b.pid, &b.comm)));
    Ok(entries)
}

/// Entries of the same process, comm and functions added up: the kernel keeps a stack per
/// distinct return address, a report shows one per call chain. A frame whose merged entries
/// were at different lines keeps only its file.
fn merged(entries: Vec<Entry>) -> Vec<Entry> {
    // (pid, comm, cgroup, function names and sides) -> index in `out`.
    type Chain = (u32, String, String, Vec<(String, bool)>);
    let mut index: hashbrown::HashMap<Chain, usize> = hashbrown::HashMap::new();
    let mut out: Vec<Entry> = Vec::new();
    for entry in entries {
        let names = (entry.frames.iter())
            .map(|f| (f.name.clone(), f.kernel))
            .collect::<Vec<_>>();
        match index.entry((
            entry.pid,
            entry.comm.clone(),
            entry.cgroup.path.clone(),
            names,
        )) {
            hashbrown::hash_map::Entry::Occupied(at) => {
                let kept = &mut out[*at.get()];
                kept.count += entry.count;
                kept.value += entry.value;
                fn file(source: &Option<String>) -> Option<&str> {
                    let source = source.as_deref()?;
                    Some(source.rsplit_once(':').map_or(source, |(file, _)| file))
                }
                for (frame, other) in kept.frames.iter_mut().zip(&entry.frames) {
                    if frame.source != other.source {
                        frame.source = match (file(&frame.source), file(&other.source)) {
                            (Some(a), Some(b)) if a == b => Some(a.to_string()),
                            _ => None,
                        };
                    }
                }
            }
            hashbrown::hash_map::Entry::Vacant(slot) => {
                slot.insert(out.len());
                out.push(entry);
            }
        }
    }
    out
}

/// A sample's user stack unwound from its registers and stack copy (none for a kernel
/// thread, ABI 0), with how its walk ended counted in `ends`.
fn user_stack(
    symbolizer: &mut Symbolizer,
    pid: u32,
    sample: &perf::record::Sample<'_>,
    ends: &mut crate::output::profile::Unwound,
) -> Vec<u64> {
    use crate::kernel::unwind::{End, Sampled as Regs};
    let Some(regs) = (sample.regs_user.as_ref()).filter(|r| r.abi != 0 && r.regs.len() == 3) else {
        ends.no_user += 1;
        return Vec::new();
    };
    let regs = Regs {
        bp: regs.regs[0],
        sp: regs.regs[1],
        ip: regs.regs[2],
        stack: sample.stack_user.unwrap_or_default(),
    };
    let (ips, end) = symbolizer.unwind(pid, &regs);
    match end {
        End::Root => ends.whole += 1,
        End::CopyEnded => ends.copy_ended += 1,
        End::NoCfi => ends.no_cfi += 1,
        End::Astray => ends.astray += 1,
        End::Depth => ends.depth += 1,
    }
    ips
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, names: &[(&str, &str)], value: u64) -> Entry {
        Entry {
            comm: "prog".into(),
            pid,
            cgroup: Default::default(),
            frames: (names.iter())
                .map(|(name, source)| Frame {
                    name: name.to_string(),
                    named: true,
                    kernel: false,
                    source: Some(source.to_string()),
                    addr: 0,
                    mapped: None,
                    build_id: None,
                })
                .collect(),
            count: value,
            value,
        }
    }

    #[test]
    fn intervals_count_what_grew() {
        let key = |pid| AggKey {
            pid,
            ..AggKey::default()
        };
        let value = |count, sum| AggValue { count, sum };
        let mut previous = hashbrown::HashMap::new();
        let first = since(vec![(key(1), value(3, 30))], &mut previous);
        assert_eq!(first, [(key(1), value(3, 30))]);
        let second = since(
            vec![(key(1), value(3, 30)), (key(2), value(1, 5))],
            &mut previous,
        );
        assert_eq!(second, [(key(2), value(1, 5))]);
        let third = since(vec![(key(1), value(7, 90))], &mut previous);
        assert_eq!(third, [(key(1), value(4, 60))]);
    }

    #[test]
    fn stacks_of_one_call_chain_are_merged() {
        let merged = merged(vec![
            entry(7, &[("spin", "p.c:33"), ("main", "p.c:69")], 40),
            entry(7, &[("spin", "p.c:34"), ("main", "p.c:69")], 26),
            entry(8, &[("spin", "p.c:34"), ("main", "p.c:69")], 1),
            entry(7, &[("spin", "p.c:35"), ("main", "p.c:69")], 2),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].value, 68);
        assert_eq!(merged[0].frames[0].source.as_deref(), Some("p.c"));
        assert_eq!(merged[0].frames[1].source.as_deref(), Some("p.c:69"));
        assert_eq!(merged[1].pid, 8);
    }
}
