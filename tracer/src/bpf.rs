//! The one place that touches aya: load the embedded BPF object, hand out program fds for
//! `PERF_EVENT_IOC_SET_BPF`, wire per-CPU output rings into the `EVENTS` map, read counters.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use aya::maps::{Array, HashMap, Map, MapData, PerCpuArray, PerCpuHashMap, RingBuf, StackTraceMap};
use aya::programs::{FEntry, FExit, KProbe, PerfEvent, ProgramError, RawTracePoint, TracePoint};
use aya::{Ebpf, EbpfLoader};

use crate::perf::sys::{bpf_link_tracing, TracingAttach};
use tracer_common::{
    names, stat_failed, stat_filtered, stat_hits, AggKey, AggValue, HistKey, LatConfig, LatKey,
    LatStart, OffCpuConfig, RunCount, SchedOffsets, SlotConfig, AGG_ENTRIES, LAT_ENTRIES,
    LAT_STAT_COUNT, PERF_EVENT_BASE, PERF_EVENT_SLOTS, PROBE_BASE, PROBE_SLOTS, STACK_ENTRIES,
    TRACEPOINT_BASE, TRACEPOINT_SLOTS,
};

/// Where the BPF programs write events for tracer to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// `PERF_COUNT_SW_BPF_OUTPUT` rings, one per CPU (`bpf_perf_event_output`).
    Perf,
    /// One `BPF_MAP_TYPE_RINGBUF` shared by every CPU (`bpf_ringbuf_output`).
    Ringbuf,
}

/// A verifier log that names a helper the kernel lacks: `unknown func bpf_get_func_arg#183`,
/// or on older verifiers `call unknown#174` (tracing programs got the attach cookie in 5.19).
fn unknown_helper(log: &str) -> bool {
    log.contains("unknown func ") || log.contains("call unknown#")
}

/// The programs that keep the process set and the comm cache (attached by
/// [`Bpf::attach_comm_cache`] and [`Bpf::attach_tracking`]), not probes: their misses are not
/// hits.
const BOOKKEEPING: [&str; 5] = [
    "comm_renamed",
    "track_exec",
    "track_exit",
    "track_fork",
    "track_fork_record",
];

/// The BPF object built from `tracer-ebpf` by build.rs.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer-probes"));

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot load tracer's BPF object")]
    Load(#[source] aya::EbpfError),
    #[error("cannot read the BPF programs' debug messages (--debug-bpf)")]
    DebugLog(#[source] aya_log::Error),
    #[error("cannot load BPF program '{program}'")]
    Program {
        program: String,
        #[source]
        source: ProgramError,
    },
    #[error("BPF map '{map}' is missing or of the wrong type")]
    Map { map: &'static str },
    #[error("cannot update BPF map '{map}'")]
    MapUpdate {
        map: &'static str,
        #[source]
        source: aya::maps::MapError,
    },
    #[error("no free {kind} program slot: at most {max} such probes at once")]
    NoSlot { kind: &'static str, max: u32 },
    #[error(
        "more than {max} {kind} in one run need BPF attach cookies (Linux 5.15), and this \
         kernel refused the program that reads them"
    )]
    NoCookies {
        kind: &'static str,
        max: u32,
        #[source]
        source: ProgramError,
    },

    #[error("cannot attach {attach} to kernel function '{function}' (BPF_LINK_CREATE)")]
    Trampoline {
        attach: &'static str,
        function: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a probe needs parts of tracer's BPF programs this run left out \
         (needs USES {needed:#x}, loaded with {loaded:#x})"
    )]
    NotLoaded { needed: u32, loaded: u32 },
}

impl Error {
    /// Whether a trampoline program's load failed for a reason of the kernel's, not of the
    /// function's: a permission error, or helpers the kernel lacks.
    pub fn kernel_refusal(&self) -> bool {
        self.load_error().is_some_and(|(io_error, log)| {
            matches!(io_error.raw_os_error(), Some(libc::EPERM | libc::EACCES))
                || unknown_helper(&log)
        })
    }

    /// A refused program load: its errno and the verifier's log.
    fn load_error(&self) -> Option<(&std::io::Error, String)> {
        match self {
            Error::Program {
                source:
                    ProgramError::LoadError {
                        io_error,
                        verifier_log,
                    },
                ..
            } => Some((io_error, verifier_log.to_string())),
            _ => None,
        }
    }

    /// Why the kernel refused a trampoline program ([`Bpf::take_function_slot`]), in a line:
    /// the kernel feature it lacks where that is known, else the errno and the verifier's
    /// first word.
    pub fn refusal(&self) -> String {
        if let Some((io_error, log)) = self.load_error() {
            if unknown_helper(&log) {
                return "this kernel's BPF lacks helpers tracer's fentry/fexit programs call \
                        (bpf_get_attach_cookie, bpf_get_func_arg: Linux 5.19 has them)"
                    .into();
            }
            let first = (log.lines().map(str::trim))
                .find(|l| l.contains("invalid") || l.contains("unknown") || l.contains("not"));
            return match first {
                Some(line) => format!("BPF_PROG_LOAD failed: {io_error} (verifier: {line})"),
                None => format!("BPF_PROG_LOAD failed: {io_error}"),
            };
        }
        match self {
            Error::Trampoline { source, .. } if source.raw_os_error() == Some(libc::EINVAL) => {
                "the kernel refused a tracing link with an attach cookie (Linux 5.19)".into()
            }
            Error::Trampoline { source, .. } => format!("BPF_LINK_CREATE failed: {source}"),
            other => crate::describe(other),
        }
    }

    pub fn hints(&self) -> Vec<String> {
        let os_errno = match self {
            Error::Load(aya::EbpfError::MapError(aya::maps::MapError::CreateError {
                io_error,
                ..
            })) => io_error.raw_os_error(),
            Error::Program {
                source: ProgramError::LoadError { io_error, .. },
                ..
            } => io_error.raw_os_error(),
            _ => None,
        };
        // A program the verifier refused has a log: a bug in tracer's programs (or a kernel
        // whose verifier is stricter than the ones tested), not a permission problem.
        let refused = matches!(self, Error::Program {
            source: ProgramError::LoadError { verifier_log, .. },
            ..
        } if !verifier_log.to_string().trim().is_empty());
        if let Error::Load(aya::EbpfError::MapError(aya::maps::MapError::CreateError {
            name,
            io_error,
        })) = self
        {
            if name == names::RINGBUF && io_error.raw_os_error() == Some(libc::EINVAL) {
                return vec![
                    "this kernel has no BPF ring buffer (Linux 5.8 and later have it): \
                     use --transport perf"
                        .into(),
                ];
            }
        }
        if refused {
            return vec![
                "the kernel's BPF verifier refused one of tracer's programs (log above): \
                 please report it with `uname -r` and the log"
                    .into(),
            ];
        }
        match os_errno {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                vec!["BPF needs root or CAP_BPF + CAP_PERFMON; also check \
                 /proc/sys/kernel/unprivileged_bpf_disabled and lockdown (`tracer features`)"
                    .into()]
            }
            Some(libc::ENOSYS) => vec!["this kernel was built without CONFIG_BPF_SYSCALL".into()],
            _ => match self {
                Error::NoSlot { .. } => vec!["trace fewer distinct probes in one run".into()],
                Error::NoCookies { max, .. } => vec![format!(
                    "trace at most {max} such probes per run on this kernel (syscalls:* \
                     tracepoints have no such limit)"
                )],
                Error::NotLoaded { .. } => vec![
                    "this is a bug in tracer (its plan missed a feature): please report the \
                     command line"
                        .into(),
                ],
                _ => Vec::new(),
            },
        }
    }
}

/// Which program type a slot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// kprobe, kretprobe, uprobe, uretprobe (BPF_PROG_TYPE_KPROBE).
    Probe,
    /// Tracepoints (BPF_PROG_TYPE_TRACEPOINT).
    Tracepoint,
    /// Breakpoints and software events (BPF_PROG_TYPE_PERF_EVENT).
    PerfEvent,
    /// Kernel functions through their BPF trampoline: fentry, fexit (BPF_PROG_TYPE_TRACING),
    /// one program load per function, the slot in the link's cookie.
    Function,
}

impl SlotKind {
    fn prefix(self) -> &'static str {
        match self {
            SlotKind::Probe => "kp",
            SlotKind::Tracepoint => "tp",
            SlotKind::PerfEvent => "pe",
            SlotKind::Function => "fn",
        }
    }

    /// (first global id, count) of this kind's slots.
    fn range(self) -> (u32, u32) {
        match self {
            SlotKind::Probe => (PROBE_BASE, PROBE_SLOTS),
            SlotKind::Tracepoint => (TRACEPOINT_BASE, TRACEPOINT_SLOTS),
            SlotKind::PerfEvent => (PERF_EVENT_BASE, PERF_EVENT_SLOTS),
            // Ids of the cookie range ([`Bpf::take_function_slot`]), never constant slots.
            SlotKind::Function => (tracer_common::DISPATCH_BASE, 0),
        }
    }
}

/// What a command needs of the object: room in its big maps (all start with one entry), and
/// which parts of the programs any slot may use.
#[derive(Debug, Clone, Copy)]
pub struct Sizing {
    /// Room for [`STACK_ENTRIES`] distinct stacks (preallocated: about 1 KiB per entry).
    pub stacks: bool,
    /// Room for [`AGG_ENTRIES`] keys of in-kernel counts.
    pub counts: bool,
    /// Room for [`tracer_common::STR_COUNT_ENTRIES`] counts keyed by a string's content.
    pub str_counts: bool,
    /// Room for [`LAT_ENTRIES`] calls in flight and histogram keys (`tracer latency`).
    pub latency: bool,
    /// `USES_*` bits: the parts of the programs any slot of this run may use; the verifier
    /// skips the rest (start-up time). [`Bpf::take_slot`] refuses a config that needs more.
    pub uses: u32,
    /// Send events through the shared BPF ring buffer instead of the per-CPU perf rings.
    pub ringbuf: Option<RingBufSize>,
    /// `--filter`: room for a filter per slot and this many glob automaton rows, and the
    /// expression's shape (`FilterPlan::shape`) (`None`: no filter; the maps keep one entry).
    pub filter_globs: Option<(u32, u32)>,
    /// More tracepoints than constant slots: room in `SYS_SLOTS` for the dispatching syscall
    /// programs.
    pub dispatch: bool,
    /// `tracer profile --off-cpu`: room in `OFFCPU_START` for [`tracer_common::OFFCPU_ENTRIES`]
    /// threads blocked at once.
    pub offcpu: bool,
    /// `tracer trace`: room for [`tracer_common::TRACE_ENTRIES`] calls in flight, saved
    /// execve strings, and `SYS_SLOTS`.
    pub trace: bool,
}

/// The BPF ring buffer's size and wakeup point (`--transport ringbuf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingBufSize {
    /// Data bytes: a power of two number of pages.
    pub bytes: u32,
    /// An output wakes the reader once this many bytes are waiting; at least 1 (0 is the
    /// programs' sign for the perf rings).
    pub wakeup_bytes: u64,
}

impl Default for Sizing {
    fn default() -> Sizing {
        Sizing {
            stacks: false,
            counts: false,
            str_counts: false,
            latency: false,
            uses: tracer_common::USES_ALL,
            ringbuf: None,
            filter_globs: None,
            dispatch: false,
            offcpu: false,
            trace: false,
        }
    }
}

/// The object's maps, taken out of it once at load into their types (by the names in
/// `tracer_common::names`): a missing or mistyped map fails the load, not a later read.
struct Maps {
    /// PERF_EVENT_ARRAY has u32 keys and u32 fd values. aya's PerfEventArray only stores fds
    /// it opened itself, so the map is held as a plain u32 array to store the rings we open.
    events: Array<MapData, u32>,
    /// In a cell: [`Bpf::stop`] marks every slot stopped through the shared references the
    /// event loop's sinks hold.
    config: std::cell::RefCell<Array<MapData, SlotConfig>>,
    stats: PerCpuArray<MapData, u64>,
    tracked: HashMap<MapData, u32, u32>,
    run_count: PerCpuArray<MapData, RunCount>,
    counts: PerCpuHashMap<MapData, AggKey, AggValue>,
    str_counts: PerCpuHashMap<MapData, tracer_common::StrAggKey, AggValue>,
    stacks: StackTraceMap<MapData>,
    sched_offsets: Array<MapData, SchedOffsets>,
    lat_config: std::cell::RefCell<Array<MapData, LatConfig>>,
    lat_start: HashMap<MapData, LatKey, LatStart>,
    lat_hist: PerCpuHashMap<MapData, HistKey, u64>,
    lat_array: PerCpuArray<MapData, u64>,
    lat_stats: PerCpuArray<MapData, u64>,
    sys_slots: Array<MapData, u32>,
    filters: Array<MapData, tracer_common::Filter>,
    globs: Array<MapData, [u8; tracer_common::GLOB_ROW]>,
    usdt_args: Array<MapData, tracer_common::UsdtArgs>,
    offcpu_config: Array<MapData, OffCpuConfig>,
    trace_start: HashMap<MapData, u64, tracer_common::TraceStart>,
    trace_stats: PerCpuArray<MapData, u64>,
    /// Moved out by [`Bpf::take_ringbuf`].
    ringbuf: Option<Map>,
}

impl Maps {
    fn take(ebpf: &mut Ebpf) -> Result<Maps, Error> {
        let events = match ebpf.take_map(names::EVENTS) {
            Some(Map::PerfEventArray(data)) => {
                Array::try_from(Map::Array(data)).map_err(|_| Error::Map { map: names::EVENTS })?
            }
            _ => return Err(Error::Map { map: names::EVENTS }),
        };
        Ok(Maps {
            events,
            config: std::cell::RefCell::new(typed(ebpf, names::CONFIG)?),
            stats: typed(ebpf, names::STATS)?,
            tracked: typed(ebpf, names::TRACKED)?,
            run_count: typed(ebpf, names::RUN_COUNT)?,
            counts: typed(ebpf, names::COUNTS)?,
            str_counts: typed(ebpf, names::STR_COUNTS)?,
            stacks: typed(ebpf, names::STACKS)?,
            sched_offsets: typed(ebpf, names::SCHED_OFFSETS)?,
            lat_config: std::cell::RefCell::new(typed(ebpf, names::LAT_CONFIG)?),
            lat_start: typed(ebpf, names::LAT_START)?,
            lat_hist: typed(ebpf, names::LAT_HIST)?,
            lat_array: typed(ebpf, names::LAT_ARRAY)?,
            lat_stats: typed(ebpf, names::LAT_STATS)?,
            sys_slots: typed(ebpf, names::SYS_SLOTS)?,
            filters: typed(ebpf, names::FILTERS)?,
            globs: typed(ebpf, names::GLOBS)?,
            usdt_args: typed(ebpf, names::USDT_ARGS)?,
            offcpu_config: typed(ebpf, names::OFFCPU_CONFIG)?,
            trace_start: typed(ebpf, names::TRACE_START)?,
            trace_stats: typed(ebpf, names::TRACE_STATS)?,
            ringbuf: ebpf.take_map(names::RINGBUF),
        })
    }
}

/// The cells of a per-CPU count map (`name`), each summed over CPUs.
/// The keys of a per-CPU count map, without their values.
fn keys<K: aya::Pod>(
    map: &PerCpuHashMap<MapData, K, AggValue>,
    name: &'static str,
) -> Result<Vec<K>, Error> {
    (map.keys())
        .map(|key| key.map_err(|source| Error::MapUpdate { map: name, source }))
        .collect()
}

fn summed<K: aya::Pod>(
    map: &PerCpuHashMap<MapData, K, AggValue>,
    name: &'static str,
) -> Result<Vec<(K, AggValue)>, Error> {
    let mut cells = Vec::new();
    for item in map.iter() {
        let (key, values) = item.map_err(|source| Error::MapUpdate { map: name, source })?;
        let total = values.iter().fold(AggValue::default(), |a, v| AggValue {
            count: a.count + v.count,
            sum: a.sum.wrapping_add(v.sum),
        });
        cells.push((key, total));
    }
    Ok(cells)
}

/// A counted cell: its key, and the string it is keyed by (`STR_COUNTS`).
pub type CellKey = (AggKey, Option<[u8; tracer_common::KEY_STRLEN]>);

/// Moves map `name` out of the object as a `T`.
fn typed<T: TryFrom<Map>>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, Error> {
    let map = ebpf.take_map(name).ok_or(Error::Map { map: name })?;
    T::try_from(map).map_err(|_| Error::Map { map: name })
}

/// The reader of the programs' aya-log ring (`AYA_LOGS`): each record's text is kept until
/// [`Bpf::debug_messages`] hands it out.
struct DebugLog {
    logger: aya_log::EbpfLogger<Collect>,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// A `log::Log` that keeps each record's text (aya-log formats it; the caller prints it).
struct Collect(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl log::Log for Collect {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.push(record.args().to_string());
    }

    fn flush(&self) {}
}

impl DebugLog {
    fn new(ebpf: &mut Ebpf) -> Result<DebugLog, Error> {
        let lines = std::sync::Arc::default();
        let logger =
            aya_log::EbpfLogger::init_with_logger(ebpf, Collect(std::sync::Arc::clone(&lines)))
                .map_err(Error::DebugLog)?;
        Ok(DebugLog { logger, lines })
    }
}

/// The loaded object. Dropping it closes program and map fds; perf events that have a program
/// attached keep their own reference until they are closed.
pub struct Bpf {
    ebpf: Ebpf,
    maps: Maps,
    /// `--debug-bpf` (`USES_DEBUG`): the programs' aya-log ring, read on demand.
    debug_log: Option<std::cell::RefCell<DebugLog>>,
    /// Global ids of the slots taken.
    used: Vec<u32>,
    /// Slots of the shared tracepoint program taken.
    dispatched: u32,
    /// The `USES_*` bits the object was loaded with.
    uses: u32,
}

impl Bpf {
    /// Parses the embedded object and creates its maps. Programs are loaded one by one, only
    /// when a slot is taken. CO-RE relocation is off: our programs need none.
    pub fn load() -> Result<Bpf, Error> {
        Bpf::load_with(Sizing::default())
    }

    /// [`Bpf::load`], with the big maps given room only when the command uses them: each is
    /// declared with one entry, because creating a preallocated map costs start-up time
    /// (16,384 per-CPU hash entries took 9 ms) and memory whether or not it is ever used.
    pub fn load_with(sizing: Sizing) -> Result<Bpf, Error> {
        let mut loader = EbpfLoader::new();
        loader.btf(None);
        loader.override_global(names::USES, &sizing.uses, true);
        if sizing.uses & tracer_common::USES_DEBUG == 0 {
            // aya-log's ring, unused without --debug-bpf: one page instead of 128 KiB.
            loader.map_max_entries(names::AYA_LOGS, 4096);
        }
        if let Some(ring) = &sizing.ringbuf {
            loader.map_max_entries(names::RINGBUF, ring.bytes);
            loader.override_global(names::RINGBUF_WAKEUP, &ring.wakeup_bytes, true);
        }
        if sizing.stacks {
            loader.map_max_entries(names::STACKS, STACK_ENTRIES);
        }
        if sizing.counts {
            loader.map_max_entries(names::COUNTS, AGG_ENTRIES);
        }
        if sizing.str_counts {
            loader.map_max_entries(names::STR_COUNTS, tracer_common::STR_COUNT_ENTRIES);
        }
        if sizing.dispatch || sizing.trace {
            loader.map_max_entries(names::SYS_SLOTS, 2 * tracer_common::SYSCALL_NRS);
        }
        if sizing.trace {
            loader.map_max_entries(names::TRACE_START, tracer_common::TRACE_ENTRIES);
            loader.map_max_entries(names::TRACE_SAVED, tracer_common::TRACE_SAVED_ENTRIES);
            loader.map_max_entries(names::TRACE_FATAL, tracer_common::TRACKED_MAX);
        }
        if let Some((rows, shape)) = &sizing.filter_globs {
            loader.map_max_entries(names::FILTERS, tracer_common::SLOTS);
            loader.map_max_entries(names::GLOBS, (*rows).max(1));
            loader.override_global(names::FILTER_SHAPE, shape, true);
        }
        if sizing.offcpu {
            loader.map_max_entries(names::OFFCPU_START, tracer_common::OFFCPU_ENTRIES);
        }
        if sizing.latency {
            loader.map_max_entries(names::LAT_START, LAT_ENTRIES);
            loader.map_max_entries(names::LAT_HIST, LAT_ENTRIES);
        }
        let mut ebpf = loader.load(OBJECT).map_err(Error::Load)?;
        let maps = Maps::take(&mut ebpf)?;
        let debug_log = match sizing.uses & tracer_common::USES_DEBUG {
            0 => None,
            _ => Some(std::cell::RefCell::new(DebugLog::new(&mut ebpf)?)),
        };
        Ok(Bpf {
            ebpf,
            maps,
            debug_log,
            used: Vec::new(),
            dispatched: 0,
            uses: sizing.uses,
        })
    }

    /// Ends the run in the kernel, before the last drain: every slot taken (and the latency
    /// pair) is marked [`tracer_common::SLOT_STOPPED`], so its program returns at once, and the
    /// programs already running are waited for. From then on the rings and the counters hold
    /// everything the run will ever have: drained and read after this, `hits == printed + lost`
    /// holds exactly, whatever ended the run.
    pub fn stop(&self) -> Result<(), Error> {
        let update = |map: &'static str| move |source| Error::MapUpdate { map, source };
        let mut config = self.maps.config.borrow_mut();
        for &id in &self.used {
            let mut slot = config.get(&id, 0).map_err(update(names::CONFIG))?;
            slot.flags |= tracer_common::SLOT_STOPPED;
            config.set(id, slot, 0).map_err(update(names::CONFIG))?;
        }
        let mut lat = self.maps.lat_config.borrow_mut();
        let mut pair = lat.get(&0, 0).map_err(update(names::LAT_CONFIG))?;
        pair.filter.flags |= tracer_common::SLOT_STOPPED;
        lat.set(0, pair, 0).map_err(update(names::LAT_CONFIG))?;
        if crate::perf::sys::synchronize_rcu().is_err() {
            // nohz_full kernels refuse the grace period: a program runs for microseconds.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }

    /// The messages the programs logged since the last call (`--debug-bpf`; none without it).
    pub fn debug_messages(&self) -> Vec<String> {
        let Some(log) = &self.debug_log else {
            return Vec::new();
        };
        let mut log = log.borrow_mut();
        log.logger.flush();
        let mut lines = log.lines.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *lines)
    }

    /// Takes a free slot of `kind`, writes its config and loads its program.
    ///
    /// Past the constant slots of its kind, a kernel or user probe or a tracepoint gets a slot
    /// of the cookie programs (`kp_cookie`, `tp_cookie`): one program for all of them, told
    /// the slot by the attach cookie of its BPF link (`perf::Event::link_bpf`), with an id from
    /// the same range as the dispatched syscalls'.
    pub fn take_slot(&mut self, kind: SlotKind, config: SlotConfig) -> Result<Slot, Error> {
        let config = self.counting_runs(kind, config);
        self.check_uses(&config)?;
        let (base, count) = kind.range();
        let index = match self.free_index(base, count, kind.prefix()) {
            Ok(index) => index,
            Err(Error::NoSlot { .. }) if kind != SlotKind::PerfEvent => {
                return self.take_cookie_slot(kind, config)
            }
            Err(e) => return Err(e),
        };
        let id = base + index;
        self.set_config(id, config)?;
        let name = format!("{}_{index}", kind.prefix());
        self.load_program(&name, kind)?;
        self.used.push(id);
        Ok(Slot {
            kind,
            id,
            name,
            cookie: false,
        })
    }

    /// A slot of the cookie programs ([`Bpf::take_slot`]), loading the program on first use.
    fn take_cookie_slot(&mut self, kind: SlotKind, config: SlotConfig) -> Result<Slot, Error> {
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS {
            return Err(Error::NoSlot {
                kind: kind.prefix(),
                max: kind.range().1 + tracer_common::DISPATCH_SLOTS,
            });
        }
        let name = format!("{}_cookie", kind.prefix());
        let loaded = (self.ebpf.program(&name)).is_some_and(|p| p.fd().is_ok());
        if !loaded {
            if let Err(Error::Program { source, .. }) = self.load_program(&name, kind) {
                return Err(Error::NoCookies {
                    kind: match kind {
                        SlotKind::Probe => "kernel or user probes",
                        _ => "tracepoints other than syscalls'",
                    },
                    max: kind.range().1,
                    source,
                });
            }
        }
        let id = tracer_common::DISPATCH_BASE + index;
        self.set_config(id, config)?;
        self.dispatched += 1;
        self.used.push(id);
        Ok(Slot {
            kind,
            id,
            name,
            cookie: true,
        })
    }

    /// Takes a slot of the dispatching syscall programs for syscall `nr`'s entry or exit
    /// (the object must have been loaded with [`Sizing::dispatch`]): its config is written,
    /// the program of that direction is attached to the raw tracepoint on its first use, and
    /// `SYS_SLOTS` then sends the syscall's hits to the slot, from now on.
    pub fn take_syscall_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        exit: bool,
        filter: Option<&tracer_common::Filter>,
    ) -> Result<Slot, Error> {
        let config = self.counting_runs(SlotKind::Tracepoint, config);
        let program = match exit {
            true => ("sys_exit_any", "sys_exit"),
            false => ("sys_enter_any", "sys_enter"),
        };
        let key = nr + if exit { tracer_common::SYSCALL_NRS } else { 0 };
        self.dispatched_slot(config, nr, key, filter, &[program])
    }

    /// Takes a `tracer trace` slot for syscall `nr` (the object loaded with
    /// [`Sizing::trace`]): as [`Bpf::take_syscall_slot`], with the paired `trace_exit` and
    /// `trace_enter` programs (the exit attached first: an entry is never left without its
    /// exit's program), found by the entry's key.
    pub fn take_trace_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        filter: Option<&tracer_common::Filter>,
    ) -> Result<Slot, Error> {
        let programs = [("trace_exit", "sys_exit"), ("trace_enter", "sys_enter")];
        self.dispatched_slot(config, nr, nr, filter, &programs)
    }

    /// Takes the `tracer trace` slot of events that are not calls (`nr`:
    /// [`tracer_common::TRACE_SIGNAL_NR`] or [`tracer_common::TRACE_EXIT_NR`]), with
    /// `programs` (name, raw tracepoint) attached. Take the exit's before the tracking
    /// programs start: it must run before `track_exit` forgets the task.
    pub fn take_trace_event_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        programs: &[(&str, &str)],
    ) -> Result<Slot, Error> {
        self.dispatched_slot(config, nr, nr, None, programs)
    }

    /// The next slot of the range the syscall programs share: config and filter written,
    /// `programs` (name, raw tracepoint) attached on their first use, and `SYS_SLOTS[key]`
    /// pointing at it.
    fn dispatched_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        key: u32,
        filter: Option<&tracer_common::Filter>,
        programs: &[(&str, &str)],
    ) -> Result<Slot, Error> {
        self.check_uses(&config)?;
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS || nr >= tracer_common::SYSCALL_NRS {
            return Err(Error::NoSlot {
                kind: "syscall",
                max: tracer_common::DISPATCH_SLOTS,
            });
        }
        let slot = tracer_common::DISPATCH_BASE + index;
        self.set_config(slot, config)?;
        if let Some(filter) = filter {
            self.write_filter(slot, filter)?;
        }
        for (name, tracepoint) in programs {
            self.attach_raw(name, tracepoint, true)?;
        }
        (self.maps.sys_slots.set(key, slot, 0)).map_err(|source| Error::MapUpdate {
            map: names::SYS_SLOTS,
            source,
        })?;
        self.dispatched += 1;
        self.used.push(slot);
        Ok(Slot {
            kind: SlotKind::Tracepoint,
            id: slot,
            name: programs.last().map_or("", |(name, _)| name).to_string(),
            cookie: false,
        })
    }

    /// The `tracer trace` calls still in flight (entered, not returned), by thread.
    pub fn trace_in_flight(&self) -> Result<Vec<(u64, tracer_common::TraceStart)>, Error> {
        let wrap = |source| Error::MapUpdate {
            map: names::TRACE_START,
            source,
        };
        (self.maps.trace_start.iter())
            .map(|item| item.map_err(wrap))
            .collect()
    }

    /// The `tracer trace` counters ([`tracer_common::trace_stat`]), summed over CPUs.
    pub fn trace_stats(&self) -> Result<[u64; tracer_common::trace_stat::COUNT as usize], Error> {
        let mut out = [0; tracer_common::trace_stat::COUNT as usize];
        for (i, total) in out.iter_mut().enumerate() {
            let values =
                (self.maps.trace_stats.get(&(i as u32), 0)).map_err(|source| Error::MapUpdate {
                    map: names::TRACE_STATS,
                    source,
                })?;
            *total = values.iter().sum();
        }
        Ok(out)
    }

    /// Takes a free tracepoint slot for its raw twin (`rtp_N`: the same global id as `tp_N`),
    /// writes its config, and attaches it to the kernel's raw tracepoint `tracepoint` with
    /// BPF_RAW_TRACEPOINT_OPEN: it runs from now on, until the object is dropped. A failed
    /// attach leaves the slot free.
    pub fn take_raw_slot(&mut self, config: SlotConfig, tracepoint: &str) -> Result<Slot, Error> {
        let config = self.counting_runs(SlotKind::Tracepoint, config);
        self.check_uses(&config)?;
        let base = SlotKind::Tracepoint.range().0;
        let index = self.free_index(base, tracer_common::RAW_SYSCALL_SLOTS, "rtp")?;
        let id = base + index;
        self.set_config(id, config)?;
        let name = format!("rtp_{index}");
        self.attach_raw(&name, tracepoint, false)?;
        self.used.push(id);
        Ok(Slot {
            kind: SlotKind::Tracepoint,
            id,
            name,
            cookie: false,
        })
    }

    /// Loads raw tracepoint program `name` if it is not yet, and attaches it to `tracepoint`
    /// with BPF_RAW_TRACEPOINT_OPEN (`once`: only when it was not loaded before, for a
    /// program that serves many slots from one attachment).
    fn attach_raw(&mut self, name: &str, tracepoint: &str, once: bool) -> Result<(), Error> {
        let program = self
            .ebpf
            .program_mut(name)
            .ok_or(Error::Map { map: "program" })?;
        let wrap = |source| Error::Program {
            program: name.to_string(),
            source,
        };
        let p: &mut RawTracePoint = program.try_into().map_err(wrap)?;
        let loaded = p.fd().is_ok();
        if !loaded {
            p.load().map_err(wrap)?;
        }
        if !(once && loaded) {
            p.attach(tracepoint).map_err(wrap)?;
        }
        Ok(())
    }

    /// `config` counting its hits in runs when this load has run counts and its key allows
    /// them: runs of a task (`SLOT_RUN_COUNT`), else runs of a key (`SLOT_RUN_KEYED`), which
    /// a breakpoint or software-event slot keyed by task and instruction continues from those
    /// alone (`SLOT_RUN_AT_IP`).
    fn counting_runs(&self, kind: SlotKind, mut config: SlotConfig) -> SlotConfig {
        if self.uses & tracer_common::USES_RUN_COUNT != 0 && config.may_count_runs() {
            config.flags |= tracer_common::SLOT_RUN_COUNT;
        } else if self.uses & tracer_common::USES_RUN_KEYED != 0 && config.may_count_keyed_runs() {
            config.flags |= tracer_common::SLOT_RUN_KEYED;
            if kind == SlotKind::PerfEvent && config.may_count_runs_at_ip() {
                config.flags |= tracer_common::SLOT_RUN_AT_IP;
            }
        }
        config
    }

    /// Whether the programs may hold counted hits in per-CPU runs (`RUN_COUNT`).
    fn has_runs(&self) -> bool {
        self.uses & (tracer_common::USES_RUN_COUNT | tracer_common::USES_RUN_KEYED) != 0
    }

    /// Refuses a config that needs parts of the programs the object was loaded without.
    fn check_uses(&self, config: &SlotConfig) -> Result<(), Error> {
        let needed = config.uses();
        match needed & !self.uses {
            0 => Ok(()),
            _ => Err(Error::NotLoaded {
                needed,
                loaded: self.uses,
            }),
        }
    }

    /// The first of `count` slots from global id `base` not taken yet.
    fn free_index(&self, base: u32, count: u32, kind: &'static str) -> Result<u32, Error> {
        (0..count)
            .find(|i| !self.used.contains(&(base + i)))
            .ok_or(Error::NoSlot { kind, max: count })
    }

    /// Loads one program of the object by name (without attaching it).
    fn load_program(&mut self, name: &str, kind: SlotKind) -> Result<(), Error> {
        let program = self
            .ebpf
            .program_mut(name)
            .ok_or(Error::Map { map: "program" })?;
        let wrap = |source| Error::Program {
            program: name.to_string(),
            source,
        };
        match kind {
            SlotKind::Probe => {
                let p: &mut KProbe = program.try_into().map_err(wrap)?;
                p.load().map_err(wrap)
            }
            SlotKind::Tracepoint => {
                let p: &mut TracePoint = program.try_into().map_err(wrap)?;
                p.load().map_err(wrap)
            }
            SlotKind::PerfEvent => {
                let p: &mut PerfEvent = program.try_into().map_err(wrap)?;
                p.load().map_err(wrap)
            }
            SlotKind::Function => unreachable!("function slots load per function"),
        }
    }

    /// Takes a slot for kernel function `function` (vmlinux BTF id `btf_id`) served through
    /// its BPF trampoline: fentry at its entry, fexit (`exit`) at its return. The program is
    /// loaded for that function and linked with the slot's id as attach cookie (its config
    /// and value filter written first); the returned link runs it from now on, until closed.
    pub fn take_function_slot(
        &mut self,
        config: SlotConfig,
        filter: Option<&tracer_common::Filter>,
        function: &str,
        btf_id: u32,
        exit: bool,
    ) -> Result<(Slot, OwnedFd), Error> {
        let config = self.counting_runs(SlotKind::Function, config);
        self.check_uses(&config)?;
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS {
            return Err(Error::NoSlot {
                kind: "kernel function",
                max: tracer_common::DISPATCH_SLOTS,
            });
        }
        let id = tracer_common::DISPATCH_BASE + index;
        self.set_config(id, config)?;
        if let Some(filter) = filter {
            self.write_filter(id, filter)?;
        }
        let name = if exit { "fn_exit" } else { "fn_entry" };
        let link = self.link_function(name, function, btf_id, exit, u64::from(id))?;
        self.dispatched += 1;
        self.used.push(id);
        let slot = Slot {
            kind: SlotKind::Function,
            id,
            name: name.to_string(),
            cookie: true,
        };
        Ok((slot, link))
    }

    /// Loads tracing program `name` (an fentry, or with `exit` an fexit, program) for kernel
    /// function `function` (vmlinux BTF id `btf_id`) and links it to the function's
    /// trampoline with `cookie`. The object's copy is unloaded again at once (the link holds
    /// the program in the kernel), so the same program can be loaded for the next function.
    fn link_function(
        &mut self,
        name: &'static str,
        function: &str,
        btf_id: u32,
        exit: bool,
        cookie: u64,
    ) -> Result<OwnedFd, Error> {
        let program = (self.ebpf.program_mut(name)).ok_or(Error::Map { map: "program" })?;
        let wrap = |source| Error::Program {
            program: name.to_string(),
            source,
        };
        macro_rules! link {
            ($type:ty, $attach:expr) => {{
                let p: &mut $type = program.try_into().map_err(wrap)?;
                if p.fd().is_ok() {
                    p.unload().map_err(wrap)?;
                }
                p.load_by_id(btf_id).map_err(wrap)?;
                let linked = bpf_link_tracing(p.fd().map_err(wrap)?.as_fd(), $attach, cookie);
                // A failed unload must not hide a failed link (the link's error says what
                // went wrong); after a good link, it is an error of its own.
                let unloaded = p.unload();
                match linked {
                    Ok(link) => unloaded.map(|()| link).map_err(wrap)?,
                    Err(source) => {
                        return Err(Error::Trampoline {
                            attach: if exit { "fexit" } else { "fentry" },
                            function: function.to_string(),
                            source,
                        })
                    }
                }
            }};
        }
        Ok(match exit {
            false => link!(FEntry, TracingAttach::Fentry),
            true => link!(FExit, TracingAttach::Fexit),
        })
    }

    /// Links the latency program for one end at kernel function `function` (vmlinux BTF id
    /// `btf_id`) through its trampoline: the start (`end` None), or an end at its entry
    /// (`Some(false)`) or return (`Some(true)`, fexit). [`Bpf::set_latency_config`] first:
    /// it runs from its link on.
    pub fn link_latency_function(
        &mut self,
        function: &str,
        btf_id: u32,
        end: Option<bool>,
    ) -> Result<OwnedFd, Error> {
        let name = match end {
            None => "lat_fn_entry",
            Some(false) => "lat_fn_end",
            Some(true) => "lat_fn_exit",
        };
        self.link_function(name, function, btf_id, end == Some(true), 0)
    }

    /// Attaches the program that keeps the per-CPU comm caches honest (`USES_COMM_CACHE`) to
    /// the raw tracepoint `task_rename`, until the object is dropped.
    pub fn attach_comm_cache(&mut self) -> Result<(), Error> {
        self.attach_raw("comm_renamed", "task_rename", true)
    }

    /// Attaches the process-tracking programs (`-- COMMAND`, `-p`) to the raw tracepoints of
    /// exec, fork and exit, until the object is dropped. Without `task_struct`'s `pid` offset
    /// (`offsets.task_pid` 0: no BTF), the fork program is loaded for a perf tracepoint event
    /// instead, which reads the record's `child_pid`: its name is returned for
    /// [`Bpf::named_program_fd`].
    pub fn attach_tracking(
        &mut self,
        offsets: SchedOffsets,
    ) -> Result<Option<&'static str>, Error> {
        self.maps
            .sched_offsets
            .set(0, offsets, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::SCHED_OFFSETS,
                source,
            })?;
        self.attach_raw("track_exec", "sched_process_exec", true)?;
        self.attach_raw("track_exit", "sched_process_exit", true)?;
        if offsets.task_pid != 0 {
            self.attach_raw("track_fork", "sched_process_fork", true)?;
            return Ok(None);
        }
        let name = "track_fork_record";
        self.load_program(name, SlotKind::Tracepoint)?;
        Ok(Some(name))
    }

    /// Configures and loads the off-CPU program (`tracer profile --off-cpu`, for
    /// `sched:sched_switch`): `config` (task filters, stack bits) goes to the reserved slot
    /// [`tracer_common::OFFCPU_SLOT`], which [`Bpf::stop`] then stops and whose counters
    /// [`Bpf::slot_stats`] reads. Returns the program's name for [`Bpf::named_program_fd`] and
    /// the slot.
    pub fn load_offcpu(
        &mut self,
        config: SlotConfig,
        offcpu: OffCpuConfig,
    ) -> Result<(&'static str, Slot), Error> {
        self.check_uses(&config)?;
        let id = tracer_common::OFFCPU_SLOT;
        if self.used.contains(&id) {
            return Err(Error::NoSlot {
                kind: "off-cpu",
                max: 1,
            });
        }
        self.set_config(id, config)?;
        (self.maps.offcpu_config.set(0, offcpu, 0)).map_err(|source| Error::MapUpdate {
            map: names::OFFCPU_CONFIG,
            source,
        })?;
        let name = "offcpu_switch";
        self.load_program(name, SlotKind::Tracepoint)?;
        self.used.push(id);
        Ok((
            name,
            Slot {
                kind: SlotKind::Tracepoint,
                id,
                name: name.to_string(),
                cookie: false,
            },
        ))
    }

    /// Writes the latency programs' configuration (before any of them runs).
    pub fn set_latency_config(&mut self, config: LatConfig) -> Result<(), Error> {
        (self.maps.lat_config.get_mut().set(0, config, 0)).map_err(|source| Error::MapUpdate {
            map: names::LAT_CONFIG,
            source,
        })
    }

    /// Loads the latency program for one end at a perf event of kind `kind`: the start
    /// (`end` None), or the end at an entry (`Some(false)`) or a return (`Some(true)`).
    /// Returns its name for [`Bpf::named_program_fd`].
    pub fn load_latency_program(
        &mut self,
        kind: SlotKind,
        end: Option<bool>,
    ) -> Result<&'static str, Error> {
        let name = match (kind, end) {
            (SlotKind::Tracepoint, None) => "lat_tp_entry",
            (_, None) => "lat_kp_entry",
            (SlotKind::Tracepoint, Some(_)) => "lat_tp_exit",
            (_, Some(true)) => "lat_kp_exit",
            (_, Some(false)) => "lat_kp_end",
        };
        self.load_program(name, kind)?;
        Ok(name)
    }

    /// The latency histograms summed over CPUs: running totals, which are never cleared
    /// (removing a cell raced with the other CPU's updates and lost calls). With `reset_max`
    /// (interval mode) the maximum and minimum cells are zeroed after reading: they are the
    /// statistics that have no difference of totals.
    pub fn latency_histogram(&mut self, reset_max: bool) -> Result<Vec<(HistKey, u64)>, Error> {
        let hist = &mut self.maps.lat_hist;
        let mut cells = Vec::new();
        for item in hist.iter() {
            let (key, values) = item.map_err(|source| Error::MapUpdate {
                map: names::LAT_HIST,
                source,
            })?;
            cells.push((
                key,
                values.iter().fold(0u64, |a, v| {
                    if tracer_common::hist_kept_by_max(key.bucket) {
                        a.max(*v)
                    } else {
                        a + v
                    }
                }),
            ));
        }
        if reset_max {
            for (key, _) in cells
                .iter()
                .filter(|(k, _)| tracer_common::hist_kept_by_max(k.bucket))
            {
                let _ = hist.remove(key);
            }
        }
        // Without --by the histogram lives in a per-CPU array (cheaper per call): buckets,
        // then sum, max and min, under the all-zero group.
        let array = &mut self.maps.lat_array;
        for bucket in 0..=tracer_common::HIST_MIN {
            let values = array
                .get(&(bucket as u32), 0)
                .map_err(|source| Error::MapUpdate {
                    map: names::LAT_ARRAY,
                    source,
                })?;
            let value = if tracer_common::hist_kept_by_max(bucket) {
                values.iter().copied().max().unwrap_or(0)
            } else {
                values.iter().sum()
            };
            if value > 0 {
                cells.push((
                    HistKey {
                        group: [0; 16],
                        bucket,
                    },
                    value,
                ));
                if reset_max && tracer_common::hist_kept_by_max(bucket) {
                    let zeros = aya::maps::PerCpuValues::try_from(vec![0u64; values.len()])
                        .map_err(|e| Error::MapUpdate {
                            map: names::LAT_ARRAY,
                            source: aya::maps::MapError::IoError(e),
                        })?;
                    array
                        .set(bucket as u32, zeros, 0)
                        .map_err(|source| Error::MapUpdate {
                            map: names::LAT_ARRAY,
                            source,
                        })?;
                }
            }
        }
        Ok(cells)
    }

    /// `LAT_STATS` summed over CPUs: [entries, exits, exits without entry, outliers lost,
    /// starts replaced before their end].
    pub fn latency_stats(&self) -> Result<[u64; LAT_STAT_COUNT as usize], Error> {
        let stats = &self.maps.lat_stats;
        let mut out = [0u64; LAT_STAT_COUNT as usize];
        for (i, slot) in out.iter_mut().enumerate() {
            let values = stats
                .get(&(i as u32), 0)
                .map_err(|source| Error::MapUpdate {
                    map: names::LAT_STATS,
                    source,
                })?;
            *slot = values.iter().sum();
        }
        Ok(out)
    }

    /// Calls started and not (yet) ended: the entries left in `LAT_START`.
    pub fn latency_in_flight(&self) -> Result<u64, Error> {
        Ok(self.maps.lat_start.keys().filter(Result::is_ok).count() as u64)
    }

    /// The in-kernel counts (`COUNTS`), summed over CPUs. Cells are never removed: a removal
    /// races with hits on other CPUs and would lose them, so intervals are deltas of these
    /// ever-growing totals.
    ///
    /// With run counts (`USES_RUN_COUNT`), each CPU's current run is added to its key. The
    /// runs are read before and after `COUNTS`: a CPU whose run ended in between (its hits
    /// may or may not be in what was read of `COUNTS`) makes the read start again, a few
    /// times; after that its run is left out of this read (counted late, never twice).
    pub fn counts(&self) -> Result<Vec<(AggKey, AggValue)>, Error> {
        let runs = self.has_runs();
        let mut attempts = 1;
        loop {
            let before = if runs { self.runs()? } else { Vec::new() };
            let mut cells = self.counted()?;
            let after = if runs { self.runs()? } else { Vec::new() };
            let settled = before.iter().zip(&after).all(|(b, a)| b.ended == a.ended);
            if !settled && attempts < 5 {
                attempts += 1;
                continue;
            }
            for (b, run) in before.iter().zip(&after) {
                // Whole (not copied mid-change), not ended while COUNTS was read, begun.
                if b.ended == run.ended && run.ended == run.ended_check && run.count != 0 {
                    match cells.iter_mut().find(|(key, _)| *key == run.key) {
                        Some((_, total)) => total.count += run.count,
                        None => cells.push((
                            run.key,
                            AggValue {
                                count: run.count,
                                sum: 0,
                            },
                        )),
                    }
                }
            }
            return Ok(cells);
        }
    }

    /// The keys in `COUNTS` now, without their per-CPU values (one syscall per key: cheap
    /// enough to look for new processes while a profile runs).
    pub fn count_keys(&self) -> Result<Vec<AggKey>, Error> {
        keys(&self.maps.counts, names::COUNTS)
    }

    /// The keys in `STR_COUNTS` now, without their values (as [`Bpf::count_keys`]).
    pub fn str_count_keys(&self) -> Result<Vec<tracer_common::StrAggKey>, Error> {
        keys(&self.maps.str_counts, names::STR_COUNTS)
    }

    /// `COUNTS`, summed over CPUs.
    fn counted(&self) -> Result<Vec<(AggKey, AggValue)>, Error> {
        summed(&self.maps.counts, names::COUNTS)
    }

    /// `STR_COUNTS` (counts keyed by a string's content), summed over CPUs.
    pub fn str_counts(&self) -> Result<Vec<(tracer_common::StrAggKey, AggValue)>, Error> {
        summed(&self.maps.str_counts, names::STR_COUNTS)
    }

    /// Removes counted cells (`tracer serve`: series idle past their timeout), a string-keyed
    /// cell from `STR_COUNTS`. A cell that some CPU's current run still adds to is kept: its
    /// run would recreate it later with part of its hits. Returns the cells left in place.
    ///
    /// A hit that lands between the caller's last read and the removal is lost with the cell:
    /// callers remove only cells that have not changed for a long time.
    pub fn forget_counts(
        &mut self,
        cells: &[(AggKey, Option<[u8; tracer_common::KEY_STRLEN]>)],
    ) -> Result<usize, Error> {
        let running: Vec<AggKey> = match self.has_runs() {
            false => Vec::new(),
            true => (self.runs()?.into_iter())
                .filter(|r| r.count != 0)
                .map(|r| r.key)
                .collect(),
        };
        let mut kept = 0;
        for (key, text) in cells {
            if running.contains(key) {
                kept += 1;
                continue;
            }
            // Already gone (ENOENT) is what was asked.
            let _ = match text {
                Some(text) => self.maps.str_counts.remove(&tracer_common::StrAggKey {
                    key: *key,
                    text: *text,
                }),
                None => self.maps.counts.remove(key),
            };
        }
        Ok(kept)
    }

    /// Removes counted cells whose owner is gone (`-I` reports, see
    /// `probe::aggregate::evict`): each only while its total is still the `expected` one the
    /// caller read and reported, and no CPU's current run adds to it (its run would recreate
    /// it with hits already reported). Returns, per cell, whether it was removed.
    pub fn evict_counts(&mut self, cells: &[(CellKey, AggValue)]) -> Result<Vec<bool>, Error> {
        let running: Vec<AggKey> = match self.has_runs() {
            false => Vec::new(),
            true => (self.runs()?.into_iter())
                .filter(|r| r.count != 0)
                .map(|r| r.key)
                .collect(),
        };
        let total = |values: &[AggValue]| {
            values.iter().fold(AggValue::default(), |a, v| AggValue {
                count: a.count + v.count,
                sum: a.sum.wrapping_add(v.sum),
            })
        };
        let mut removed = Vec::with_capacity(cells.len());
        for ((key, text), expected) in cells {
            if running.contains(key) {
                removed.push(false);
                continue;
            }
            // A cell that changed since it was read (its pid taken by a new process) is kept.
            let done = match text {
                Some(text) => {
                    let key = tracer_common::StrAggKey {
                        key: *key,
                        text: *text,
                    };
                    let now = self.maps.str_counts.get(&key, 0).map(|v| total(&v));
                    now.is_ok_and(|now| now == *expected)
                        && self.maps.str_counts.remove(&key).is_ok()
                }
                None => {
                    let now = self.maps.counts.get(key, 0).map(|v| total(&v));
                    now.is_ok_and(|now| now == *expected) && self.maps.counts.remove(key).is_ok()
                }
            };
            removed.push(done);
        }
        Ok(removed)
    }

    /// Removes stacks from `STACKS` (their counts are reported and gone): their buckets take
    /// new stacks again, and each id may come back holding another stack.
    pub fn forget_stacks(&mut self, ids: &[u32]) {
        for id in ids {
            // Already gone (ENOENT) is what was asked.
            let _ = self.maps.stacks.remove(id);
        }
    }

    /// Removes the latency histogram cells of `groups` (`tracer serve`: idle series).
    pub fn forget_latency_groups(&mut self, groups: &[[u8; 16]]) -> Result<(), Error> {
        let keys: Vec<HistKey> = (self.maps.lat_hist.keys())
            .filter_map(Result::ok)
            .filter(|k| groups.contains(&k.group))
            .collect();
        for key in keys {
            let _ = self.maps.lat_hist.remove(&key);
        }
        Ok(())
    }

    /// Each CPU's run count (`RUN_COUNT`).
    fn runs(&self) -> Result<Vec<RunCount>, Error> {
        let values = self
            .maps
            .run_count
            .get(&0, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::RUN_COUNT,
                source,
            })?;
        Ok(values.iter().copied().collect())
    }

    /// The instruction pointers of stack `id` (innermost first), as `bpf_get_stackid` stored
    /// them; `None` when the id is unknown.
    pub fn stack(&self, id: u32) -> Result<Option<Vec<u64>>, Error> {
        match self.maps.stacks.get(&id, 0) {
            Ok(trace) => Ok(Some(trace.frames().iter().map(|f| f.ip).collect())),
            Err(aya::maps::MapError::KeyNotFound) => Ok(None),
            Err(source) => Err(Error::MapUpdate {
                map: names::STACKS,
                source,
            }),
        }
    }

    /// Marks `tgid` in the `TRACKED` map with `state` (`TRACK_PENDING` / `TRACK_ACTIVE`).
    pub fn track(&mut self, tgid: u32, state: u32) -> Result<(), Error> {
        self.maps
            .tracked
            .insert(tgid, state, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::TRACKED,
                source,
            })
    }

    /// The tasks in the `TRACKED` map (the followed processes, and threads they started), as
    /// the tracking programs left it.
    pub fn tracked(&self) -> Vec<u32> {
        (self.maps.tracked.keys()).filter_map(Result::ok).collect()
    }

    /// The fd of a loaded program that is not a slot (the tracking programs).
    pub fn named_program_fd(&self, name: &str) -> Result<BorrowedFd<'_>, Error> {
        let program = self
            .ebpf
            .program(name)
            .ok_or(Error::Map { map: "program" })?;
        let fd = program.fd().map_err(|source| Error::Program {
            program: name.to_string(),
            source,
        })?;
        Ok(fd.as_fd())
    }

    /// How many times the kernel skipped program `name` because another BPF program was
    /// running on that CPU (`recursion_misses` in its fdinfo, Linux 5.12+; 0 when unknown):
    /// each is a hit the program never saw.
    pub fn recursion_misses(&self, name: &str) -> u64 {
        let Ok(fd) = self.named_program_fd(name) else {
            return 0;
        };
        let path = format!("/proc/self/fdinfo/{}", fd.as_raw_fd());
        (std::fs::read_to_string(path).ok())
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("recursion_misses:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    /// Probe hits that no program of this object saw: the sum of [`Bpf::recursion_misses`]
    /// over the loaded programs that serve probes (not the process-set and comm bookkeeping
    /// ones, whose misses are forks, execs and renames, not hits). Where the kernel runs a
    /// program preemptibly (the syscall tracepoints of Debian's 7.3, lazy preemption), a task
    /// preempted inside it makes the kernel skip it for every other task on that CPU until it
    /// resumes.
    pub fn missed(&self) -> u64 {
        (self.ebpf.programs())
            .filter(|(name, _)| !BOOKKEEPING.contains(name))
            .map(|(name, _)| self.recursion_misses(name))
            .sum()
    }

    /// The times the kernel skipped the bookkeeping programs, as [`Bpf::missed`] counts them:
    /// (forks, execs and exits the process set did not see; renames the comm cache did not).
    pub fn bookkeeping_missed(&self) -> (u64, u64) {
        let sum = |names: &[&str]| names.iter().map(|n| self.recursion_misses(n)).sum();
        (sum(&BOOKKEEPING[1..]), sum(&BOOKKEEPING[..1]))
    }

    fn set_config(&mut self, index: u32, config: SlotConfig) -> Result<(), Error> {
        self.maps
            .config
            .get_mut()
            .set(index, config, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::CONFIG,
                source,
            })
    }

    /// The program fd of a taken slot, for `PERF_EVENT_IOC_SET_BPF`.
    pub fn program_fd(&self, slot: &Slot) -> Result<BorrowedFd<'_>, Error> {
        let program = self.ebpf.program(&slot.name).ok_or(Error::Map {
            map: "program slot",
        })?;
        let wrap = |source| Error::Program {
            program: slot.name.clone(),
            source,
        };
        Ok(program.fd().map_err(wrap)?.as_fd())
    }

    /// The kernel's id of a taken slot's program (as `PERF_EVENT_IOC_QUERY_BPF` reports it).
    pub fn program_id(&self, slot: &Slot) -> Result<u32, Error> {
        Ok(self.program_info(slot)?.id())
    }

    /// How many instructions the verifier processed to load a slot's program (kernels 5.16+):
    /// what start-up paid for it.
    pub fn verified_instructions(&self, slot: &Slot) -> Result<Option<u32>, Error> {
        Ok(self.program_info(slot)?.verified_instruction_count())
    }

    fn program_info(&self, slot: &Slot) -> Result<aya::programs::ProgramInfo, Error> {
        let program = self.ebpf.program(&slot.name).ok_or(Error::Map {
            map: "program slot",
        })?;
        program.info().map_err(|source| Error::Program {
            program: slot.name.clone(),
            source,
        })
    }

    /// Puts the per-CPU BPF_OUTPUT event of `cpu` into `EVENTS[cpu]`, so that
    /// `bpf_perf_event_output(BPF_F_CURRENT_CPU)` on that CPU writes into its ring.
    pub fn set_output(&mut self, cpu: u32, event: BorrowedFd<'_>) -> Result<(), Error> {
        self.maps
            .events
            .set(cpu, event.as_raw_fd() as u32, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::EVENTS,
                source,
            })
    }

    /// The BPF ring buffer events go to when the object was loaded with [`Sizing::ringbuf`]
    /// (once: it is moved out).
    pub fn take_ringbuf(&mut self) -> Result<SharedRing, Error> {
        let map = (self.maps.ringbuf.take()).ok_or(Error::Map {
            map: names::RINGBUF,
        })?;
        let bytes = match &map {
            Map::RingBuf(data) => data.info().map(|i| i.max_entries() as usize).ok(),
            _ => None,
        };
        let ring = RingBuf::try_from(map).map_err(|_| Error::Map {
            map: names::RINGBUF,
        })?;
        Ok(SharedRing {
            ring,
            bytes: bytes.ok_or(Error::Map {
                map: names::RINGBUF,
            })?,
        })
    }

    /// Writes `--filter`'s glob automata (once, before any slot uses them).
    pub fn set_globs(&mut self, rows: &[[u8; tracer_common::GLOB_ROW]]) -> Result<(), Error> {
        for (i, row) in rows.iter().enumerate() {
            (self.maps.globs.set(i as u32, *row, 0)).map_err(|source| Error::MapUpdate {
                map: names::GLOBS,
                source,
            })?;
        }
        Ok(())
    }

    /// Writes a slot's `--filter` (its config carries `SLOT_VALUE_FILTER`).
    /// Where a USDT probe slot (`SLOT_USDT`) finds its arguments.
    pub fn set_usdt_args(
        &mut self,
        slot: &Slot,
        args: &tracer_common::UsdtArgs,
    ) -> Result<(), Error> {
        self.write_usdt_args(slot.id, args)
    }

    /// Where a USDT start or end of the latency programs finds its arguments (`end`:
    /// `LAT_USDT_START` or `LAT_USDT_END`, also set in `LatConfig::usdt`).
    pub fn set_latency_usdt_args(
        &mut self,
        end: u32,
        args: &tracer_common::UsdtArgs,
    ) -> Result<(), Error> {
        self.write_usdt_args(end, args)
    }

    fn write_usdt_args(&mut self, index: u32, args: &tracer_common::UsdtArgs) -> Result<(), Error> {
        (self.maps.usdt_args.set(index, *args, 0)).map_err(|source| Error::MapUpdate {
            map: names::USDT_ARGS,
            source,
        })
    }

    pub fn set_filter(&mut self, slot: &Slot, filter: &tracer_common::Filter) -> Result<(), Error> {
        self.write_filter(slot.id, filter)
    }

    /// `tracer latency --filter` (the object must have been loaded with the filter's sizing).
    pub fn set_latency_filter(&mut self, filter: &tracer_common::Filter) -> Result<(), Error> {
        self.write_filter(tracer_common::LAT_FILTER_SLOT, filter)
    }

    fn write_filter(&mut self, id: u32, filter: &tracer_common::Filter) -> Result<(), Error> {
        (self.maps.filters.set(id, *filter, 0)).map_err(|source| Error::MapUpdate {
            map: names::FILTERS,
            source,
        })
    }

    /// One `STATS` counter summed over CPUs.
    fn stat(&self, index: u32) -> Result<u64, Error> {
        let values = (self.maps.stats.get(&index, 0)).map_err(|source| Error::MapUpdate {
            map: names::STATS,
            source,
        })?;
        Ok(values.iter().sum())
    }

    /// Hits of a slot that its `--filter` refused, summed over CPUs.
    pub fn slot_filtered(&self, slot: &Slot) -> Result<u64, Error> {
        self.stat(stat_filtered(slot.id))
    }

    /// A slot's counters summed over CPUs: (hits that passed the filters, failed outputs).
    pub fn slot_stats(&self, slot: &Slot) -> Result<(u64, u64), Error> {
        Ok((
            self.stat(stat_hits(slot.id))?,
            self.stat(stat_failed(slot.id))?,
        ))
    }

    /// Failed outputs (events lost because a ring was full) per CPU, over all taken slots:
    /// exact, unlike `PERF_RECORD_LOST`, which the kernel only writes at the next successful
    /// output on that ring.
    pub fn lost_per_cpu(&self) -> Result<Vec<(u32, u64)>, Error> {
        let failed = self.per_cpu(stat_failed)?;
        Ok((failed.into_iter().enumerate())
            .map(|(cpu, n)| (cpu as u32, n))
            .collect())
    }

    /// Per CPU, the hits its programs have written or are writing into the output rings: hits
    /// less failed outputs and filtered hits, over all taken slots (for slots that stream every
    /// hit they count). A CPU's breakpoint programs run one after another (interrupts are off
    /// in the debug trap), each counting its hit before stamping it, so once a reader has
    /// received that many of a CPU's events it holds every event that CPU stamped before the
    /// counters were read.
    pub fn written_per_cpu(&self) -> Result<Vec<u64>, Error> {
        // Hits first: a hit's failure or filtering is counted after its hit.
        let hits = self.per_cpu(stat_hits)?;
        let gone = self.per_cpu(stat_failed)?;
        let filtered = self.per_cpu(stat_filtered)?;
        Ok((hits.iter().zip(gone).zip(filtered))
            .map(|((h, f), x)| h.saturating_sub(f + x))
            .collect())
    }

    /// One `STATS` counter of every taken slot, summed per CPU.
    fn per_cpu(&self, counter: fn(u32) -> u32) -> Result<Vec<u64>, Error> {
        let mut per_cpu: Vec<u64> = Vec::new();
        for &id in &self.used {
            let values =
                (self.maps.stats.get(&counter(id), 0)).map_err(|source| Error::MapUpdate {
                    map: names::STATS,
                    source,
                })?;
            per_cpu.resize(per_cpu.len().max(values.len()), 0);
            for (sum, n) in per_cpu.iter_mut().zip(values.iter()) {
                *sum += n;
            }
        }
        Ok(per_cpu)
    }

    /// Hits the value filters of all taken slots refused.
    pub fn filtered(&self) -> Result<u64, Error> {
        (self.used.iter()).try_fold(0, |n, &id| Ok(n + self.stat(stat_filtered(id))?))
    }

    /// All taken slots' counters summed: (hits, failed outputs).
    pub fn stats(&self) -> Result<(u64, u64), Error> {
        (self.used.iter()).try_fold((0, 0), |(hits, failed), &id| {
            Ok((
                hits + self.stat(stat_hits(id))?,
                failed + self.stat(stat_failed(id))?,
            ))
        })
    }
}

/// The BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) shared by every CPU, mapped by aya.
pub struct SharedRing {
    ring: RingBuf<MapData>,
    /// Its data size.
    bytes: usize,
}

impl SharedRing {
    /// Hands the records committed now to `f` in ring order, releasing each after it: at most
    /// a ring's worth. The producers refill the ring while it is read, and a flood would
    /// otherwise keep one drain going for as long as it lasts, past `-d` and Ctrl-C (17 s of
    /// a `-d 0.5` run on an emulated CPU). A record is its 8-byte header and its data, padded
    /// to 8 bytes.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) {
        let mut read = 0;
        while read < self.bytes {
            let Some(item) = self.ring.next() else {
                break;
            };
            read += 8 + item.len().next_multiple_of(8);
            f(&item);
        }
    }
}

impl AsRawFd for SharedRing {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.ring.as_raw_fd()
    }
}

/// A taken program slot.
#[derive(Clone, Debug)]
pub struct Slot {
    pub kind: SlotKind,
    /// The global slot id: what [`tracer_common::Event::slot`] carries.
    pub id: u32,
    name: String,
    /// A slot of a cookie program: attached with [`Bpf::link`], not `PERF_EVENT_IOC_SET_BPF`.
    pub cookie: bool,
}

/// The separate object of feature-probe programs (see tracer-ebpf/src/features.rs).
static FEATURES_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracer-features"));

/// Attach types that only a load-and-attach attempt can confirm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeType {
    RawTracepoint,
    BtfTracepoint,
}

/// Loads and attaches the feature program for `kind` (then detaches it); the error says why
/// the kernel refused. Kernel BTF is needed for all but raw tracepoints.
pub fn probe_attach_type(kind: ProbeType) -> Result<(), String> {
    use aya::programs::{BtfTracePoint, RawTracePoint};
    use aya::Btf;
    let describe = |e: &dyn std::error::Error| {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
    };
    let btf = || Btf::from_sys_fs().map_err(|e| format!("no kernel BTF: {}", describe(&e)));
    let mut ebpf = match kind {
        ProbeType::RawTracepoint => EbpfLoader::new().btf(None).load(FEATURES_OBJECT),
        _ => EbpfLoader::new().load(FEATURES_OBJECT),
    }
    .map_err(|e| describe(&e))?;
    let name = match kind {
        ProbeType::RawTracepoint => "feature_raw_tp",
        ProbeType::BtfTracepoint => "feature_tp_btf",
    };
    let program = ebpf
        .program_mut(name)
        .ok_or_else(|| format!("{name} missing from object"))?;
    let err = |e: ProgramError| match e {
        // The verifier log of a refused load is empty for permission errors; say it plainly.
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            let log = verifier_log.to_string();
            let first = log
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && *l != ":");
            match first {
                Some(line) => format!("BPF_PROG_LOAD failed: {io_error} (verifier: {line})"),
                None => format!("BPF_PROG_LOAD failed: {io_error}"),
            }
        }
        other => describe(&other),
    };
    match kind {
        ProbeType::RawTracepoint => {
            let p: &mut RawTracePoint = program.try_into().map_err(err)?;
            p.load().map_err(err)?;
            p.attach("sys_enter").map_err(err)?;
        }
        ProbeType::BtfTracepoint => {
            let p: &mut BtfTracePoint = program.try_into().map_err(err)?;
            p.load("sys_enter", &btf()?).map_err(err)?;
            p.attach().map_err(err)?;
        }
    }
    // Dropping `ebpf` detaches and unloads.
    Ok(())
}

#[cfg(test)]
mod tests {
    use object::{Object, ObjectSymbol};

    /// The names userspace looks maps and globals up with are the object's symbols.
    #[test]
    fn every_contract_name_is_in_the_object() {
        let file = object::File::parse(super::OBJECT).expect("the built object is ELF");
        let symbols: Vec<&str> = file.symbols().filter_map(|s| s.name().ok()).collect();
        let missing: Vec<&str> = (tracer_common::names::ALL.iter().copied())
            .filter(|name| !symbols.contains(name))
            .collect();
        assert!(missing.is_empty(), "not in the BPF object: {missing:?}");
    }
}
