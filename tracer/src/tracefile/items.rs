//! Trace-file records -> timeline items (`tracer report`, `tracer record --live`): sources,
//! symbol snapshots and task names are kept as they stream by.

use hashbrown::HashMap;

use tracer_common::{word, Event};

use super::{Record, SourceKind};
use crate::breakpoint;
use crate::kernel::format::Value;
use crate::output::stack::{Frame, Space};
use crate::output::timeline::{Item, ItemKind};
use crate::probe;
use crate::tracefile;

/// Decodes records into timeline items: sources, symbol snapshots and task names are kept
/// as they stream by.
#[derive(Default)]
pub struct ItemDecoder {
    sources: HashMap<u32, tracefile::Source>,
    /// BPF slot -> source id.
    slots: HashMap<u32, u32>,
    symbols: HashMap<(u32, u64), tracefile::Symbol>,
    comms: HashMap<u32, String>,
    /// The last value seen per watch source.
    last: HashMap<u32, Option<u64>>,
}

fn comm_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl ItemDecoder {
    fn comm(&self, tid: u32) -> String {
        self.comms.get(&tid).cloned().unwrap_or_default()
    }

    /// A sampled address of process `pid` as its symbol record named it (kernel addresses
    /// under pid 0), or unnamed.
    fn frame(&self, pid: u32, addr: u64) -> Frame {
        let kernel = addr >= tracer_common::KERNEL_SPACE_START;
        let symbol = self.symbols.get(&(if kernel { 0 } else { pid }, addr));
        // `function+0xoff`, as `Frame::place` wrote it.
        let named = symbol.and_then(|s| {
            let (name, offset) = s.at.rsplit_once("+0x")?;
            Some((name.to_string(), u64::from_str_radix(offset, 16).ok()?))
        });
        let location = (symbol.and_then(|s| s.source.as_deref()))
            .and_then(|l| l.rsplit_once(':'))
            .and_then(|(file, line)| Some((file.to_string(), line.parse().ok()?)));
        Frame {
            addr,
            space: if kernel { Space::Kernel } else { Space::User },
            offset: named.as_ref().map_or(0, |(_, offset)| *offset),
            symbol: named.map(|(name, _)| name),
            file: location.as_ref().map(|(file, _)| file.clone()),
            line: location.map(|(_, line)| line),
            build_id: None,
            mapped: None,
            function: None,
        }
    }

    /// The timeline item of a record (`None` for descriptions, which are kept).
    pub fn item(&mut self, record: Record) -> Option<Item> {
        match record {
            Record::Source(source) => {
                match &source.what {
                    SourceKind::Probe { slot, .. } => {
                        self.slots.insert(*slot, source.id);
                    }
                    SourceKind::Watch { slot, initial, .. } => {
                        self.slots.insert(*slot, source.id);
                        self.last.insert(source.id, *initial);
                    }
                    SourceKind::Counter { .. } => {}
                }
                self.sources.insert(source.id, source);
                None
            }
            Record::Symbol(s) => {
                self.symbols.insert((s.pid, s.addr), s);
                None
            }
            Record::Event(e, strings) => self.event(&e, &strings),
            Record::Sample(s) => {
                let ip = self.frame(s.pid, s.ip);
                let ip = match ip.symbol {
                    Some(_) => ip.text(),
                    None => format!("{:#x}", s.ip),
                };
                let stack = (s.kernel.iter().chain(&s.user))
                    .map(|&addr| self.frame(s.pid, addr))
                    .collect();
                Some(Item {
                    time_ns: s.time_ns,
                    cpu: s.cpu,
                    pid: s.pid,
                    tid: s.tid,
                    comm: self.comm(s.tid),
                    source: (self.sources.get(&s.source))
                        .map_or_else(|| format!("counter#{}", s.source), |c| c.name.clone()),
                    kind: ItemKind::Sample,
                    args: vec![
                        ("period".into(), Value::Uint(s.period)),
                        ("ip".into(), Value::Word(ip)),
                    ],
                    ret: None,
                    errno: None,
                    stack,
                })
            }
            Record::Switch(s) => Some(Item {
                time_ns: s.time_ns,
                cpu: s.cpu,
                pid: s.pid,
                tid: s.tid,
                comm: self.comm(s.tid),
                source: if s.out {
                    "sched:switch-out"
                } else {
                    "sched:switch-in"
                }
                .into(),
                kind: ItemKind::Switch,
                args: if s.out {
                    vec![("preempted".into(), Value::Bool(s.preempted))]
                } else {
                    Vec::new()
                },
                ret: None,
                errno: None,
                stack: Vec::new(),
            }),
            Record::Task(t) => {
                let (source, args) = match t.what {
                    tracefile::TaskWhat::Comm => {
                        let name = comm_of(&t.comm);
                        self.comms.insert(t.tid, name.clone());
                        ("task:comm", vec![("comm".into(), Value::Str(name))])
                    }
                    tracefile::TaskWhat::Fork => {
                        if let Some(parent) = self.comms.get(&t.ptid).cloned() {
                            self.comms.entry(t.tid).or_insert(parent);
                        }
                        (
                            "task:fork",
                            vec![
                                ("parent_pid".into(), Value::Uint(t.ppid.into())),
                                ("parent_tid".into(), Value::Uint(t.ptid.into())),
                            ],
                        )
                    }
                    tracefile::TaskWhat::Exit => ("task:exit", Vec::new()),
                };
                Some(Item {
                    time_ns: t.time_ns,
                    cpu: t.cpu,
                    pid: t.pid,
                    tid: t.tid,
                    comm: self.comm(t.tid),
                    source: source.into(),
                    kind: ItemKind::Task,
                    args,
                    ret: None,
                    errno: None,
                    stack: Vec::new(),
                })
            }
            Record::Meta(_) | Record::Stats(_) | Record::End | Record::Unknown(_) => None,
        }
    }

    fn event(&mut self, e: &Event, strings: &[u8]) -> Option<Item> {
        let comm = comm_of(&e.comm);
        if !comm.is_empty() {
            self.comms.insert(e.tid(), comm.clone());
        }
        let id = *self.slots.get(&e.slot)?;
        let source = self.sources.get(&id)?;
        let mut item = Item {
            time_ns: e.time_ns,
            cpu: e.cpu,
            pid: e.pid(),
            tid: e.tid(),
            comm,
            source: source.name.clone(),
            kind: ItemKind::Probe,
            args: Vec::new(),
            ret: None,
            errno: None,
            stack: Vec::new(),
        };
        match &source.what {
            SourceKind::Probe { decoder, .. } => {
                if matches!(decoder, probe::Decoder::Return { .. }) {
                    item.kind = ItemKind::Return;
                }
                let (args, ret, errno) = probe::decode(decoder, e, strings);
                item.args = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
                item.ret = ret;
                item.errno = errno;
            }
            SourceKind::Watch { len, access, .. } => {
                item.kind = ItemKind::Watch;
                let ip = e.data[word::WATCH_IP];
                let new = (e.data[word::WATCH_VALUE_READ] == 1 && access != "x")
                    .then(|| breakpoint::mask(e.data[word::WATCH_VALUE], *len));
                let last = self.last.entry(id).or_default();
                let old = *last;
                if new.is_some() {
                    *last = new;
                }
                let shown = |v: Option<u64>| v.map_or(Value::Missing, Value::Uint);
                if access != "x" {
                    item.args.push(("old".into(), shown(old)));
                    item.args.push(("new".into(), shown(new)));
                }
                let at = match self.symbols.get(&(e.pid(), ip)) {
                    Some(s) => match &s.source {
                        Some(line) => format!("{} ({line})", s.at),
                        None => s.at.clone(),
                    },
                    None => format!("{ip:#x}"),
                };
                item.args.push(("at".into(), Value::Word(at)));
            }
            SourceKind::Counter { .. } => return None,
        }
        Some(item)
    }
}
