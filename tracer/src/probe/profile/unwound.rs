//! `--call-graph dwarf`: samples with their registers and the top of their stack, unwound
//! from the binaries' CFI in tracer (framehop) and counted by stack.

use super::{frame_of, merged, sampling_event, Sampled};
use crate::output::profile::{Accounting, Entry, Frame};
use crate::perf::{self, Scope};
use crate::stacks::Symbolizer;
use crate::Error;

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

/// A sample's user stack unwound from its registers and stack copy (none for a kernel
/// thread, ABI 0), with how its walk ended counted in `ends`.
fn user_stack(
    symbolizer: &mut Symbolizer,
    pid: u32,
    sample: &perf::record::Sample<'_>,
    ends: &mut crate::output::profile::Unwound,
) -> Vec<u64> {
    use crate::kernel::unwind::{Sampled as Regs, UnwindEnd};
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
        UnwindEnd::Root => ends.whole += 1,
        UnwindEnd::CopyEnded => ends.copy_ended += 1,
        UnwindEnd::NoCfi => ends.no_cfi += 1,
        UnwindEnd::Astray => ends.astray += 1,
        UnwindEnd::Depth => ends.depth += 1,
    }
    ips
}
