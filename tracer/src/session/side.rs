//! `tracer record`'s side-band rings: one per CPU, owned by a dummy software event that reports
//! comm/fork/exit (and context switches), with every sampled counter on that CPU writing into
//! it (`PERF_EVENT_IOC_SET_OUTPUT`, samples told apart by `PERF_SAMPLE_IDENTIFIER`), parsed into
//! trace records on the same clock as the BPF events.

use std::collections::BTreeMap;

use hashbrown::HashMap;

use crate::perf::{self, attr, record as rec, EventKind, Options, Ring, Sampling, Scope};
use crate::plan::profile::Unwind;
use crate::tracefile::{self, Record};
use crate::Error;

/// The side rings' sample layout: the identifier first, so samples of several counters
/// sharing one ring can be told apart (perf_event_open(2), PERF_SAMPLE_IDENTIFIER). The
/// dummy event that owns a ring writes no samples; its records' `sample_id` trailer holds
/// only the bits below that `struct sample_id` has.
const SIDE_SAMPLE_TYPE: u64 = attr::sample::IDENTIFIER
    | attr::sample::TID
    | attr::sample::TIME
    | attr::sample::CPU
    | attr::sample::PERIOD;

/// What the counters' samples carry beyond the side layout: always the instruction pointer,
/// and with `-g` the call chain (frame pointers, walked by the kernel), as `perf record`; with
/// `--call-graph dwarf` the kernel's chain, and the user registers and the top of the user
/// stack, which tracer unwinds (perf record's `--call-graph dwarf`).
fn counter_sample_type(call_graph: Option<Unwind>) -> u64 {
    let chain = match call_graph {
        None => 0,
        Some(Unwind::FramePointers) => attr::sample::CALLCHAIN,
        Some(Unwind::Dwarf { .. }) => {
            attr::sample::CALLCHAIN | attr::sample::REGS_USER | attr::sample::STACK_USER
        }
    };
    SIDE_SAMPLE_TYPE | attr::sample::IP | chain
}

/// The deepest call chain asked of the kernel: PERF_MAX_STACK_DEPTH, or the
/// `kernel.perf_event_max_stack` sysctl when it is lower (a larger `sample_max_stack` fails
/// with EOVERFLOW, perf_event_open(2)).
fn max_stack() -> u16 {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|s| s.trim().parse::<u16>().ok());
    sysctl.map_or(rec::callchain::MAX_STACK_DEPTH, |n| {
        n.min(rec::callchain::MAX_STACK_DEPTH)
    })
}

/// One sampled counter: its name, event and modifier flags.
pub struct CounterSpec {
    pub name: String,
    pub kind: EventKind,
    pub flags: u64,
}

/// The per-CPU side rings and the counters writing into them.
pub struct SideRings {
    rings: Vec<(u32, Ring)>,
    /// Sample identifier -> counter source id.
    ids: HashMap<u64, u32>,
    layout: rec::Layout,
    _counters: Vec<perf::Event>,
    pub lost: BTreeMap<u32, u64>,
    pub malformed: u64,
}

fn clock_options() -> Options {
    Options {
        sample_type: SIDE_SAMPLE_TYPE,
        clockid: Some(libc::CLOCK_MONOTONIC),
        ..Options::default()
    }
}

impl SideRings {
    /// One dummy event per CPU owns the ring and reports comm/fork/exit (and context switches
    /// with `switches`); counters on the same CPU write into it. `task`: the command or
    /// process recorded (`inherit` follows its children), else every task.
    /// `call_graph`: the counters' samples carry their call chains (`-g`), or what unwinds
    /// them (`--call-graph dwarf`).
    pub fn open(
        counters: &[(u32, CounterSpec)],
        sampling: Sampling,
        (switches, call_graph): (bool, Option<Unwind>),
        task: Option<(u32, bool)>,
        pages: usize,
    ) -> Result<SideRings, Error> {
        let cpus = perf::cpus::online()?;
        let stack_depth = max_stack();
        let scope = |cpu| match task {
            Some((pid, _)) => Scope::Task {
                pid,
                cpu: Some(cpu),
            },
            None => Scope::Cpu(cpu),
        };
        let inherit = match task {
            Some((_, true)) => attr::flag::INHERIT,
            _ => 0,
        };
        let mut side = SideRings {
            rings: Vec::new(),
            ids: HashMap::new(),
            layout: rec::Layout {
                sample_type: counter_sample_type(call_graph),
                sample_id_all: true,
                // A chain longer than asked for is corrupt, not trusted.
                max_callchain: Some(u64::from(stack_depth) + rec::callchain::MAX_CONTEXTS),
                regs_user: match call_graph {
                    Some(Unwind::Dwarf { .. }) => crate::kernel::unwind::REGS_MASK.count_ones(),
                    _ => 0,
                },
                ..rec::Layout::default()
            },
            _counters: Vec::new(),
            lost: BTreeMap::new(),
            malformed: 0,
        };
        for &cpu in &cpus {
            let mut flags = attr::flag::COMM | attr::flag::TASK | attr::flag::SAMPLE_ID_ALL;
            if switches {
                flags |= attr::flag::CONTEXT_SWITCH;
            }
            let options = Options {
                flags: flags | inherit,
                wakeup: super::quarter_full(pages),
                ..clock_options()
            };
            let owner = perf::Event::open(
                format!("side-band ring on CPU {cpu}"),
                &EventKind::Software(perf::Software::Dummy),
                &options,
                &scope(cpu),
            )?;
            let ring = Ring::new(owner, pages)?;
            for (source, spec) in counters {
                let mut options = Options {
                    flags: spec.flags | attr::flag::SAMPLE_ID_ALL | inherit,
                    sampling,
                    sample_type: counter_sample_type(call_graph),
                    sample_max_stack: if call_graph.is_some() { stack_depth } else { 0 },
                    ..clock_options()
                };
                if let Some(Unwind::Dwarf { stack_bytes }) = call_graph {
                    options.flags |= attr::flag::EXCLUDE_CALLCHAIN_USER;
                    options.sample_regs_user = crate::kernel::unwind::REGS_MASK;
                    options.sample_stack_user = stack_bytes;
                }
                let event =
                    perf::Event::open(spec.name.clone(), &spec.kind, &options, &scope(cpu))?;
                event.set_output(ring.event())?;
                side.ids.insert(event.id()?, *source);
                side._counters.push(event);
            }
            side.lost.insert(cpu, 0);
            side.rings.push((cpu, ring));
        }
        Ok(side)
    }

    pub fn raw_fds(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::{AsFd, AsRawFd};
        self.rings
            .iter()
            .map(|(_, r)| r.event().as_fd().as_raw_fd())
            .collect()
    }

    /// Parses every record available now into trace records; a sample with its user
    /// registers and stack (`--call-graph dwarf`) has its user frames from `unwind`.
    pub fn drain(
        &mut self,
        mut unwind: impl FnMut(&rec::Sample<'_>) -> Vec<u64>,
        mut f: impl FnMut(Record),
    ) {
        let layout = self.layout;
        for (cpu, ring) in self.rings.iter_mut() {
            let cpu = *cpu;
            let lost = self.lost.entry(cpu).or_default();
            let malformed = &mut self.malformed;
            let ids = &self.ids;
            let stats = ring.drain(|bytes| {
                let Ok(parsed) = rec::parse(bytes, &layout) else {
                    *malformed += 1;
                    return;
                };
                let id = parsed.sample_id;
                let (pid, tid, time) = (
                    id.pid.unwrap_or(0),
                    id.tid.unwrap_or(0),
                    id.time.unwrap_or(0),
                );
                let task = |what, pid, tid, ppid, ptid, time_ns, comm: [u8; 16]| {
                    Record::Task(tracefile::Task {
                        what,
                        cpu,
                        pid,
                        tid,
                        ppid,
                        ptid,
                        time_ns,
                        comm,
                    })
                };
                match parsed.record {
                    rec::Record::Sample(s) => {
                        let Some(source) = s.identifier.and_then(|i| ids.get(&i)) else {
                            *malformed += 1;
                            return;
                        };
                        let (kernel, mut user) =
                            rec::callchain::split(s.callchain.as_deref().unwrap_or_default());
                        if s.regs_user.is_some() {
                            user = unwind(&s);
                        }
                        f(Record::Sample(tracefile::Sample {
                            source: *source,
                            cpu: s.cpu.unwrap_or(cpu),
                            pid: s.pid.unwrap_or(0),
                            tid: s.tid.unwrap_or(0),
                            time_ns: s.time.unwrap_or(0),
                            period: s.period.unwrap_or(0),
                            ip: s.ip.unwrap_or(0),
                            kernel,
                            user,
                        }));
                    }
                    rec::Record::Comm {
                        pid: p,
                        tid: t,
                        comm,
                        ..
                    } => {
                        let mut name = [0u8; 16];
                        let n = comm
                            .iter()
                            .position(|&b| b == 0)
                            .unwrap_or(comm.len())
                            .min(15);
                        name[..n].copy_from_slice(&comm[..n]);
                        f(task(tracefile::TaskWhat::Comm, p, t, 0, 0, time, name));
                    }
                    rec::Record::Fork(t) => f(task(
                        tracefile::TaskWhat::Fork,
                        t.pid,
                        t.tid,
                        t.ppid,
                        t.ptid,
                        t.time,
                        [0; 16],
                    )),
                    rec::Record::Exit(t) => f(task(
                        tracefile::TaskWhat::Exit,
                        t.pid,
                        t.tid,
                        t.ppid,
                        t.ptid,
                        t.time,
                        [0; 16],
                    )),
                    rec::Record::Switch { out, preempt }
                    | rec::Record::SwitchCpuWide { out, preempt, .. } => {
                        f(Record::Switch(tracefile::Switch {
                            cpu,
                            pid,
                            tid,
                            out,
                            preempted: preempt,
                            time_ns: time,
                        }))
                    }
                    rec::Record::Lost { lost: n, .. } => *lost += n,
                    _ => {}
                }
            });
            if stats.corrupt {
                self.malformed += 1;
            }
        }
    }
}
