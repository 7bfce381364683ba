//! `--call-graph dwarf`: samples with their registers and the top of their stack, unwound
//! from the binaries' CFI in tracer (framehop) and counted by stack: on-CPU, samples of a
//! clock; off-CPU, a sample at each context switch and the kernel's switch records, which
//! say when the task came back and whether it left blocked or preempted.

use super::{combined, frame_of, sampling_event, Sampled};
use crate::output::profile::{Accounting, Entry, Frame};
use crate::perf::{self, Scope};
use crate::plan::profile::Mode;
use crate::stacks::Symbolizer;
use crate::Error;

/// `--call-graph dwarf`: sampling events that carry each sample's user registers and the top
/// of its user stack to tracer (`PERF_SAMPLE_REGS_USER`, `PERF_SAMPLE_STACK_USER`, perf's
/// `--call-graph dwarf`), with the kernel's call chain; tracer unwinds each user stack as it
/// drains the rings, while the process still runs, and counts the stacks by their addresses.
/// No BPF program is attached: nothing in the kernel could unwind these stacks.
pub struct Unwound {
    mode: Mode,
    rings: Vec<perf::Ring>,
    /// Events whose samples go to a ring of the same CPU (`PERF_EVENT_IOC_SET_OUTPUT`).
    followers: Vec<perf::Event>,
    layout: perf::record::Layout,
    pub event: &'static str,
    skip_idle: bool,
    /// Samples (on-CPU) or blocks and the nanoseconds blocked (off-CPU), by stack.
    counts: hashbrown::HashMap<UnwoundKey, (u64, u64)>,
    /// Off-CPU: the tasks switched out, by tid, until they are switched back in.
    away: hashbrown::HashMap<u32, Away>,
    /// Off-CPU: blocks shorter than the minimum.
    short: u64,
    /// Thread names by tid, from the rings' comm and fork records and, for threads that were
    /// running before, from /proc.
    comms: hashbrown::HashMap<u32, String>,
    /// The threads whose exit was read, in order, with the drain and the time it was read
    /// in: a thread is sampled after its exit record too (the rest of do_exit), in the same
    /// drain or a later one; its name goes once two drains and [`EXITED_NAME_KEEP`] are over.
    exited: std::collections::VecDeque<(u32, u64, std::time::Instant)>,
    /// Drains read.
    drains: u64,
    /// Samples read, tracer's own and the idle task's, and how each unwind ended.
    total: u64,
    idle: u64,
    own: u64,
    ends: crate::output::profile::Unwound,
    malformed: u64,
}

/// How long an exited thread's name is kept at least: two drains were not always enough
/// under emulation (Debian's 6.12 in the VM tier: 4 of 235 samples of a python3 that had
/// exited went under `[unknown]`), where do_exit's last samples come late.
const EXITED_NAME_KEEP: std::time::Duration = std::time::Duration::from_secs(1);

/// A task switched out: its stacks and time as the switch's sample gave them (`None` until it
/// is read), and whether it left runnable (preempted: no block), from the switch record; the
/// two come in either order.
#[derive(Default)]
struct Away {
    sampled: Option<(u64, UnwoundKey, UserEnd)>,
    preempted: Option<bool>,
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
        mode: Mode,
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
        let (event, kind, mut options) = match mode {
            Mode::OnCpu { hz } => sampling_event(hz, flags, &probe)?,
            // perf's `-e cs`: a sample in the task switched out, as it leaves (the user
            // registers are those it entered the kernel with), and the switch records
            // (`context_switch`), out with `SWITCH_OUT_PREEMPT` when it was still runnable,
            // and in when it runs again.
            Mode::OffCpu { .. } => (
                "context-switches",
                perf::EventKind::Software(perf::Software::ContextSwitches),
                perf::Options {
                    sampling: perf::Sampling::Period(1),
                    flags: flags | flag::CONTEXT_SWITCH,
                    ..perf::Options::default()
                },
            ),
        };
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
            mode,
            rings,
            followers,
            layout,
            event,
            skip_idle,
            counts: hashbrown::HashMap::new(),
            away: hashbrown::HashMap::new(),
            short: 0,
            comms: names_now(sampled),
            exited: Default::default(),
            drains: 0,
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
        let (rings, layout, malformed) = (&mut self.rings, &self.layout, &mut self.malformed);
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
            self.read(bytes, symbolizer);
        }
        self.drains += 1;
        while let Some(&(tid, drain, at)) = self.exited.front() {
            if self.drains < drain + 2 || at.elapsed() < EXITED_NAME_KEEP {
                break;
            }
            self.comms.remove(&tid);
            self.exited.pop_front();
        }
    }

    /// One record, in time order.
    fn read(&mut self, bytes: &[u8], symbolizer: &mut Symbolizer) {
        use perf::record::{self as rec, Record};
        let Ok(parsed) = rec::parse(bytes, &self.layout) else {
            self.malformed += 1;
            return;
        };
        match parsed.record {
            Record::Sample(sample) => self.sampled(&sample, symbolizer),
            Record::Comm { tid, comm, .. } => {
                let name = comm.split(|&b| b == 0).next().unwrap_or_default();
                (self.comms).insert(tid, String::from_utf8_lossy(name).into_owned());
            }
            // A new thread or process starts with its creator's name.
            Record::Fork(t) => {
                let name = comm_of(&mut self.comms, t.ppid, t.ptid);
                self.comms.insert(t.tid, name);
            }
            Record::Lost { lost, .. } => self.ends.lost += lost,
            Record::Switch { out, preempt } | Record::SwitchCpuWide { out, preempt, .. } => {
                if let (Mode::OffCpu { min_block_ns }, Some(tid)) =
                    (self.mode, parsed.sample_id.tid)
                {
                    let time = parsed.sample_id.time.unwrap_or(0);
                    let tallies = (&mut self.short, &mut self.total, &mut self.ends);
                    let switch = (tid, time, out, preempt);
                    switched(
                        &mut self.away,
                        &mut self.counts,
                        tallies,
                        switch,
                        min_block_ns,
                    );
                }
            }
            // Its samples came before (time order), but for those of the rest of its exit:
            // its name goes two drains and a second on (`exited`), what else was kept to
            // read them now, so that a long run keeps what its live tasks need.
            Record::Exit(t) => {
                (self.exited).push_back((t.tid, self.drains, std::time::Instant::now()));
                self.away.remove(&t.tid);
                if t.pid == t.tid {
                    symbolizer.drop_unwinder(t.pid);
                }
            }
            _ => {}
        }
    }

    /// A sample: on-CPU, counted under its stacks; off-CPU, kept with its task until the
    /// task comes back (`switched`).
    fn sampled(&mut self, sample: &perf::record::Sample<'_>, symbolizer: &mut Symbolizer) {
        let (Some(pid), Some(tid)) = (sample.pid, sample.tid) else {
            self.malformed += 1;
            return;
        };
        let off_cpu = matches!(self.mode, Mode::OffCpu { .. });
        // Off-CPU, a switch is counted when its block ends (`switched`).
        self.total += u64::from(!off_cpu);
        // Off-CPU, the idle task's switches are no blocks, and tracer's own are left out as
        // the BPF program leaves them (neither is counted).
        if (self.skip_idle || off_cpu) && pid == 0 {
            self.idle += u64::from(!off_cpu);
            return;
        }
        if pid == std::process::id() {
            self.own += u64::from(!off_cpu);
            return;
        }
        let kernel = (sample.callchain.as_deref())
            .map(|chain| perf::record::callchain::split(chain).0)
            .unwrap_or_default();
        let (user, end) = user_stack(symbolizer, pid, sample);
        let key = UnwoundKey {
            pid,
            comm: comm_of(&mut self.comms, pid, tid),
            cgroup: sample.cgroup.unwrap_or(0),
            kernel,
            user,
        };
        match off_cpu {
            true => {
                let time = sample.time.unwrap_or(0);
                self.away.entry(tid).or_default().sampled = Some((time, key, end));
            }
            false => {
                tally(&mut self.ends, end);
                let count = self.counts.entry(key).or_default();
                *count = (count.0 + 1, count.1 + 1);
            }
        }
    }

    /// What was counted since the last call, as symbolized entries heaviest first, and where
    /// every sample read went (`-I` takes each interval's; the end of a run takes the rest).
    pub fn take_entries(&mut self, symbolizer: &mut Symbolizer) -> (Vec<Entry>, Accounting) {
        let mut entries = Vec::new();
        for (key, (count, value)) in std::mem::take(&mut self.counts) {
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
                value,
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
            short: std::mem::take(&mut self.short),
            exited: symbolizer.exited,
            unwound: Some(std::mem::replace(&mut self.ends, fresh)),
            ..Accounting::default()
        };
        (combined(entries), accounting)
    }
}

/// Off-CPU: a switch record of task `tid` at `time`, `out` or in, out `preempt`ed or not.
/// A task switched in again after it left blocked has its block counted under the stacks its
/// switch's sample gave, if it lasted `min_block_ns`; a preempted task's switch is no block.
fn switched(
    away: &mut hashbrown::HashMap<u32, Away>,
    counts: &mut hashbrown::HashMap<UnwoundKey, (u64, u64)>,
    (short, total, ends): (&mut u64, &mut u64, &mut crate::output::profile::Unwound),
    (tid, time, out, preempt): (u32, u64, bool, bool),
    min_block_ns: u64,
) {
    if tid == 0 {
        return;
    }
    if out {
        away.entry(tid).or_default().preempted = Some(preempt);
        return;
    }
    let Some(Away {
        sampled: Some((left, key, end)),
        preempted: Some(false),
    }) = away.remove(&tid)
    else {
        return;
    };
    let blocked = time.saturating_sub(left);
    if blocked < min_block_ns {
        *short += 1;
        return;
    }
    *total += 1;
    tally(ends, end);
    let count = counts.entry(key).or_default();
    *count = (count.0 + 1, count.1 + blocked);
}

/// The names of the tasks sampled, as they run now (perf synthesizes them likewise): the
/// rings tell a task's name only when it is given (an exec, a rename), and a task that started
/// before the run, sampled and gone before its samples were read, had none (`[unknown]`).
fn names_now(sampled: &Sampled) -> hashbrown::HashMap<u32, String> {
    use crate::kernel::tasks;
    match sampled {
        Sampled::AllCpus => (tasks::all_thread_names().into_iter())
            .map(|(_, tid, name)| (tid, name))
            .collect(),
        // A command held at its exec, or the threads of -p: their process's threads.
        Sampled::Tasks(tids) => (tids.iter())
            .flat_map(|&tid| tasks::thread_names(tid))
            .collect(),
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

/// How a sample's user stack ended: unwound (how), or none (a kernel thread).
pub type UserEnd = Option<crate::kernel::unwind::UnwindEnd>;

/// A sample's user stack unwound from its registers and stack copy (none for a kernel
/// thread, ABI 0), and how its walk ended.
pub fn user_stack(
    symbolizer: &mut Symbolizer,
    pid: u32,
    sample: &perf::record::Sample<'_>,
) -> (Vec<u64>, UserEnd) {
    use crate::kernel::unwind::Sampled as Regs;
    let Some(regs) = (sample.regs_user.as_ref()).filter(|r| r.abi != 0 && r.regs.len() == 3) else {
        return (Vec::new(), None);
    };
    let regs = Regs {
        bp: regs.regs[0],
        sp: regs.regs[1],
        ip: regs.regs[2],
        stack: sample.stack_user.unwrap_or_default(),
    };
    let (ips, end) = symbolizer.unwind(pid, &regs);
    (ips, Some(end))
}

/// Counts how a counted stack's unwind ended in `ends`.
pub fn tally(ends: &mut crate::output::profile::Unwound, end: UserEnd) {
    use crate::kernel::unwind::UnwindEnd;
    match end {
        None => ends.no_user += 1,
        Some(UnwindEnd::Root) => ends.whole += 1,
        Some(UnwindEnd::CopyEnded) => ends.copy_ended += 1,
        Some(UnwindEnd::NoCfi) => ends.no_cfi += 1,
        Some(UnwindEnd::Astray) => ends.astray += 1,
        Some(UnwindEnd::Depth) => ends.depth += 1,
    }
}
