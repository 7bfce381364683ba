//! Loading the object: the sizing a command asks for, the maps taken out of it by name, the
//! programs loaded by name, the end of a run in the kernel (`Bpf::stop`), `--debug-bpf`'s log,
//! and what the kernel says of each program (ids, fds, verified instructions, misses).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use aya::maps::{Array, HashMap, Map, MapData, PerCpuArray, PerCpuHashMap, StackTraceMap};
use aya::programs::{KProbe, PerfEvent, RawTracePoint, TracePoint};
use aya::{Ebpf, EbpfLoader};
use tracer_common::{
    names, AggKey, AggValue, HistKey, LatConfig, LatKey, LatStart, OffCpuConfig, RunCount,
    SchedOffsets, SlotConfig, AGG_ENTRIES, LAT_ENTRIES, STACK_ENTRIES,
};

use super::{Bpf, Error, Slot, SlotKind, BOOKKEEPING, OBJECT};

/// What a command needs of the object: room in its big maps (all start with one entry), and
/// which parts of the programs any slot may use.
#[derive(Debug, Clone, Copy)]
pub struct Sizing {
    /// The big maps given room: each is declared with one entry, because creating a
    /// preallocated map costs start-up time and memory whether or not it is ever used.
    pub rooms: Rooms,
    /// `USES_*` bits: the parts of the programs any slot of this run may use; the verifier
    /// skips the rest (start-up time). [`Bpf::take_slot`] refuses a config that needs more.
    pub uses: u32,
    /// Send events through the shared BPF ring buffer instead of the per-CPU perf rings.
    pub ringbuf: Option<RingBufSize>,
    /// `--filter`: room for a filter per slot and this many glob automaton rows, and the
    /// expression's shape (`FilterPlan::shape`) (`None`: no filter; the maps keep one entry).
    pub filter_globs: Option<(u32, u32)>,
}

/// Room in the object's big maps for one use of them. A new use is a new variant with its
/// maps in [`Room::maps`], not a new field of [`Sizing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    /// [`STACK_ENTRIES`] distinct stacks (preallocated: about 1 KiB per entry).
    Stacks,
    /// [`AGG_ENTRIES`] keys of in-kernel counts.
    Counts,
    /// [`tracer_common::STR_COUNT_ENTRIES`] counts keyed by a string's content.
    StrCounts,
    /// [`LAT_ENTRIES`] calls in flight and histogram keys (`tracer latency`).
    Latency,
    /// More tracepoints than constant slots: `SYS_SLOTS` for the dispatching syscall
    /// programs.
    Dispatch,
    /// `tracer profile --off-cpu`: [`tracer_common::OFFCPU_ENTRIES`] threads blocked at once.
    OffCpu,
    /// `tracer trace`: [`tracer_common::TRACE_ENTRIES`] calls in flight, saved execve
    /// strings, the fatal signals of tracked processes, and `SYS_SLOTS`.
    Trace,
}

impl Room {
    const ALL: [Room; 7] = [
        Room::Stacks,
        Room::Counts,
        Room::StrCounts,
        Room::Latency,
        Room::Dispatch,
        Room::OffCpu,
        Room::Trace,
    ];

    /// The maps this room sizes, with their entries.
    fn maps(self) -> &'static [(&'static str, u32)] {
        use tracer_common as c;
        match self {
            Room::Stacks => &[(names::STACKS, STACK_ENTRIES)],
            Room::Counts => &[(names::COUNTS, AGG_ENTRIES)],
            Room::StrCounts => &[(names::STR_COUNTS, c::STR_COUNT_ENTRIES)],
            Room::Latency => &[
                (names::LAT_START, LAT_ENTRIES),
                (names::LAT_HIST, LAT_ENTRIES),
                (names::LAT_OUTLIER, tracer_common::LAT_FUNCTIONS_MAX),
            ],
            Room::Dispatch => &[(names::SYS_SLOTS, 2 * c::SYSCALL_NRS)],
            Room::OffCpu => &[(names::OFFCPU_START, c::OFFCPU_ENTRIES)],
            Room::Trace => &[
                (names::SYS_SLOTS, 2 * c::SYSCALL_NRS),
                (names::TRACE_START, c::TRACE_ENTRIES),
                (names::TRACE_SAVED, c::TRACE_SAVED_ENTRIES),
                (names::TRACE_FATAL, c::TRACKED_MAX),
                (names::TRACE_FDSETS, c::TRACE_FDSETS_ENTRIES),
            ],
        }
    }
}

/// A set of [`Room`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rooms(u32);

impl Rooms {
    /// The rooms whose condition holds: `Rooms::of([(Room::Stacks, wanted), ...])`.
    pub fn of(rooms: impl IntoIterator<Item = (Room, bool)>) -> Rooms {
        (rooms.into_iter()).fold(Rooms(0), |set, (room, wanted)| match wanted {
            true => Rooms(set.0 | 1 << room as u32),
            false => set,
        })
    }

    pub fn has(self, room: Room) -> bool {
        self.0 & 1 << room as u32 != 0
    }
}

impl<const N: usize> From<[Room; N]> for Rooms {
    fn from(rooms: [Room; N]) -> Rooms {
        Rooms::of(rooms.map(|room| (room, true)))
    }
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
            rooms: Rooms::default(),
            uses: tracer_common::USES_ALL,
            ringbuf: None,
            filter_globs: None,
        }
    }
}

/// The object's maps, taken out of it once at load into their types (by the names in
/// `tracer_common::names`): a missing or mistyped map fails the load, not a later read.
pub(super) struct Maps {
    /// PERF_EVENT_ARRAY has u32 keys and u32 fd values. aya's PerfEventArray only stores fds
    /// it opened itself, so the map is held as a plain u32 array to store the rings we open.
    pub(super) events: Array<MapData, u32>,
    /// In a cell: [`Bpf::stop`] marks every slot stopped through the shared references the
    /// event loop's sinks hold.
    pub(super) config: std::cell::RefCell<Array<MapData, SlotConfig>>,
    pub(super) stats: PerCpuArray<MapData, u64>,
    pub(super) tracked: HashMap<MapData, u32, u32>,
    pub(super) run_count: PerCpuArray<MapData, RunCount>,
    pub(super) counts: PerCpuHashMap<MapData, AggKey, AggValue>,
    /// `COUNTS` again, for what aya does not do: take a cell out and read it in one step
    /// ([`Bpf::evict_counts`]); `None` once the kernel said it cannot (before 5.14).
    pub(super) counts_fd: std::cell::RefCell<Option<std::os::fd::OwnedFd>>,
    pub(super) str_counts: PerCpuHashMap<MapData, tracer_common::StrAggKey, AggValue>,
    pub(super) stacks: StackTraceMap<MapData>,
    pub(super) sched_offsets: Array<MapData, SchedOffsets>,
    pub(super) lat_config: std::cell::RefCell<Array<MapData, LatConfig>>,
    pub(super) lat_start: HashMap<MapData, LatKey, LatStart>,
    pub(super) lat_outlier: Array<MapData, tracer_common::LatOutlier>,
    pub(super) lat_hist: PerCpuHashMap<MapData, HistKey, u64>,
    pub(super) lat_array: PerCpuArray<MapData, u64>,
    pub(super) lat_stats: PerCpuArray<MapData, u64>,
    pub(super) sys_slots: Array<MapData, u32>,
    pub(super) filters: Array<MapData, tracer_common::Filter>,
    pub(super) globs: Array<MapData, [u8; tracer_common::GLOB_ROW]>,
    pub(super) usdt_args: Array<MapData, tracer_common::UsdtArgs>,
    pub(super) offcpu_config: Array<MapData, OffCpuConfig>,
    pub(super) trace_start: HashMap<MapData, u64, tracer_common::TraceStart>,
    pub(super) trace_stats: PerCpuArray<MapData, u64>,
    /// Moved out by [`Bpf::take_ringbuf`].
    pub(super) ringbuf: Option<Map>,
}

impl Maps {
    fn take(ebpf: &mut Ebpf) -> Result<Maps, Error> {
        let events = match ebpf.take_map(names::EVENTS) {
            Some(Map::PerfEventArray(data)) => {
                Array::try_from(Map::Array(data)).map_err(|_| Error::Map { map: names::EVENTS })?
            }
            _ => return Err(Error::Map { map: names::EVENTS }),
        };
        let counts_fd = match ebpf.map(names::COUNTS) {
            Some(Map::PerCpuHashMap(data)) => {
                use std::os::fd::AsFd as _;
                data.fd().as_fd().try_clone_to_owned().ok()
            }
            _ => None,
        };
        Ok(Maps {
            events,
            counts_fd: std::cell::RefCell::new(counts_fd),
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
            lat_outlier: typed(ebpf, names::LAT_OUTLIER)?,
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

/// Moves map `name` out of the object as a `T`.
fn typed<T: TryFrom<Map>>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, Error> {
    let map = ebpf.take_map(name).ok_or(Error::Map { map: name })?;
    T::try_from(map).map_err(|_| Error::Map { map: name })
}

/// The reader of the programs' aya-log ring (`AYA_LOGS`): each record's text is kept until
/// [`Bpf::debug_messages`] hands it out.
pub(super) struct DebugLog {
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

impl Bpf {
    /// Parses the embedded object and creates its maps. Programs are loaded one by one, only
    /// when a slot is taken. CO-RE relocation is off: our programs need none.
    pub fn load() -> Result<Bpf, Error> {
        Bpf::load_with(Sizing::default())
    }

    /// [`Bpf::load`], with the big maps given room only when the command uses them: each is
    /// declared with one entry, because creating a preallocated map costs start-up time and
    /// memory whether or not it is ever used
    /// (docs/benchmarks.md, "Figures the code cites", `map-prealloc`).
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
        for room in Room::ALL.into_iter().filter(|room| sizing.rooms.has(*room)) {
            for &(map, entries) in room.maps() {
                loader.map_max_entries(map, entries);
            }
        }
        if let Some((rows, shape)) = &sizing.filter_globs {
            loader.map_max_entries(names::FILTERS, tracer_common::SLOTS);
            loader.map_max_entries(names::GLOBS, (*rows).max(1));
            loader.override_global(names::FILTER_SHAPE, shape, true);
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
            attached_once: Vec::new(),
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

    pub(super) fn set_config(&mut self, index: u32, config: SlotConfig) -> Result<(), Error> {
        self.maps
            .config
            .get_mut()
            .set(index, config, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::CONFIG,
                source,
            })
    }

    /// Loads one program of the object by name (without attaching it).
    pub(super) fn load_program(&mut self, name: &str, kind: SlotKind) -> Result<(), Error> {
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

    /// Loads the raw tracepoint programs `names` that are not loaded yet, each on a thread of
    /// its own, without attaching them. The kernel verifies a program in the thread that
    /// loads it and lets privileged loads run side by side, so the verifier's walks, most of
    /// `tracer trace`'s start-up, take the longest one's time on enough CPUs instead of their
    /// sum (docs/benchmarks.md, "Figures the code cites", `parallel-load`).
    pub fn preload(&mut self, names: &[&str]) -> Result<(), Error> {
        let todo: Vec<_> = (self.ebpf.programs_mut())
            .filter(|(name, program)| names.contains(name) && program.fd().is_err())
            .collect();
        std::thread::scope(|scope| {
            let loads: Vec<_> = (todo.into_iter())
                .map(|(name, program)| {
                    scope.spawn(move || {
                        let wrap = |source| Error::Program {
                            program: name.to_string(),
                            source,
                        };
                        let p: &mut RawTracePoint = program.try_into().map_err(wrap)?;
                        p.load().map_err(wrap)
                    })
                })
                .collect();
            (loads.into_iter())
                .try_for_each(|load| load.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        })
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
}
