//! The profile layer: sampling perf events per CPU or per task (hardware cycles where the CPU has them,
//! else the cpu-clock software event) with a perf-event slot attached that counts each sample
//! in the kernel under its process, comm and stacks; the off-CPU program on
//! `sched:sched_switch`; and the counts read back as symbolized stacks.

use tracer_common::{
    AggKey, AggValue, OffCpuConfig, SlotConfig, AGG_COMM, AGG_PID, NO_STACK, SLOT_AGGREGATE,
};

use crate::bpf::{Bpf, Room, Rooms, Sizing, Slot, SlotKind};
use crate::kernel::tracefs::Tracefs;
use crate::output::profile::{Accounting, Entry, Frame, Measure, Profile};
use crate::output::stack::{Space, Stack};
use crate::perf::{self, EventKind, Hardware, Options, Sampling, Scope, Software};
use crate::stacks::{Symbolizer, NO_FRAMES};
use crate::Error;

mod maps;
mod unwound;

pub use maps::{before_batch, MapsTracker};
pub use unwound::{tally, user_stack, Unwound};

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
pub(super) fn sampling_event(
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
/// kept as `tracer profile -a` keeps them, and the counts are folded out of the maps as they
/// fill (as `tracer profile` folds): a 120 s profile at 1,000 Hz is whole.
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
    let mut folds = Folds::default();
    let mut watch = FillWatch::default();
    let started = Instant::now();
    sampler.enable()?;
    while let Some(left) = (duration.checked_sub(started.elapsed())).filter(|d| !d.is_zero()) {
        std::thread::sleep(left.min(Duration::from_millis(10)));
        if !watch.due(&bpf, &sampler.slot)? {
            continue;
        }
        tracker.drain();
        let (sampled, held) = remember_processes(&bpf, &sampler.slot, &mut folds.symbolizer)?;
        tracker.prune(&sampled);
        if held.filling() {
            folds.fold(&mut bpf, &sampler.slot, &mut tracker)?;
        }
    }
    bpf.stop()?;
    let seconds = started.elapsed().as_secs_f64();
    tracker.drain();
    let maps_lost = tracker.lost + tracker.malformed;
    folds.fold(&mut bpf, &sampler.slot, &mut tracker)?;
    let (hits, failed) = bpf.slot_stats(&sampler.slot)?;
    let accounting = Accounting {
        total: hits,
        not_counted: failed,
        maps_lost,
        exited: folds.symbolizer.exited,
        ..folds.accounting
    };
    let mut profile = Profile {
        measure: Measure::OnCpu {
            hz,
            event: sampler.event,
        },
        entries: folds.kept.sorted(),
        accounting,
        seconds,
    };
    profile.settle();
    Ok(profile)
}

/// What a profile of every CPU took out of the maps so far: its entries, merged, and what
/// they left out.
#[derive(Default)]
struct Folds {
    symbolizer: Symbolizer,
    kept: Merged,
    accounting: Accounting,
    taking: Taking,
}

impl Folds {
    /// Names what was counted since the last fold and takes it out of the maps.
    fn fold(&mut self, bpf: &mut Bpf, slot: &Slot, tracker: &mut MapsTracker) -> Result<(), Error> {
        let (entries, accounting, _) =
            (self.taking).take(bpf, slot, (&mut self.symbolizer, tracker), (true, false))?;
        entries.into_iter().for_each(|e| self.kept.add(e));
        self.accounting.add_taken(&accounting);
        Ok(())
    }
}

/// The counts a profile has read and not yet taken out of the maps, and the processes of
/// counts read that may still run: what each [`Taking::take`] starts from.
#[derive(Default)]
pub struct Taking {
    previous: hashbrown::HashMap<AggKey, AggValue>,
    seen: hashbrown::HashSet<u32>,
}

impl Taking {
    /// Names what `slot` counted since the last take (lent the tracker's mappings of the
    /// processes it names, some gone) and takes it out of the maps: its entries, what they
    /// left out (`skip_idle`, `timed`: see [`entries_of`]), and the processes now gone,
    /// forgotten by the symbolizer and the tracker.
    pub fn take(
        &mut self,
        bpf: &mut Bpf,
        slot: &Slot,
        (symbolizer, tracker): (&mut Symbolizer, &mut MapsTracker),
        (skip_idle, timed): (bool, bool),
    ) -> Result<(Vec<Entry>, Accounting, hashbrown::HashSet<u32>), Error> {
        let grown = since(slot_counts(bpf, slot)?, &mut self.previous);
        let named = grown.iter().map(|(key, _)| key.pid).collect();
        tracker.lend_some(symbolizer, &named);
        let gone = gone(&self.previous, &mut self.seen);
        let mut accounting = Accounting::default();
        let entries = entries_of(bpf, grown, symbolizer, skip_idle, timed, &mut accounting)?;
        drain(bpf, &mut self.previous, &gone, symbolizer)?;
        tracker.forget(&gone);
        Ok((entries, accounting, gone))
    }
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

/// A symbolized frame as the profile shows it.
pub(super) fn frame_of(f: &crate::output::stack::Frame) -> Frame {
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
        unended: 0,
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
/// the processes with samples so far, and how full the maps are.
pub fn remember_processes(
    bpf: &Bpf,
    slot: &Slot,
    symbolizer: &mut Symbolizer,
) -> Result<(hashbrown::HashSet<u32>, MapsHeld), Error> {
    let mut sampled = hashbrown::HashSet::new();
    let keys = bpf.count_keys()?;
    let mut stacks = hashbrown::HashSet::new();
    for key in &keys {
        stacks.extend(
            [side(key.kstack).0, side(key.ustack).0]
                .into_iter()
                .filter(|&id| id >= 0),
        );
    }
    let held = MapsHeld {
        keys: keys.len(),
        stacks: stacks.len(),
    };
    for key in keys {
        if key.slot == slot.id
            && key.pid != 0
            && sampled.insert(key.pid)
            && side(key.ustack).0 != NO_STACK
        {
            symbolizer.remember(key.pid);
        }
    }
    Ok((sampled, held))
}

/// How much of the count and stack maps the counts hold: their keys, and the distinct stacks
/// they refer to.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapsHeld {
    pub keys: usize,
    pub stacks: usize,
}

impl MapsHeld {
    /// Whether the maps should be emptied now (`profile`'s folds): the count map half full,
    /// or 128 stacks held (of the stack map's 16,384 buckets). A new stack whose bucket (by
    /// hash) another holds is lost, so the stacks held are the chance of the next one's loss:
    /// a shell loop of short processes under `profile -a` lost 1.2% of its stacks this way,
    /// where it lost 17% when the map was emptied only at the end (and 65,536 distinct stacks
    /// sampled at 4,999 Hz, 0.5-0.7% where it was 27%, looked at as [`FillWatch`] says).
    pub fn filling(&self) -> bool {
        self.keys >= tracer_common::AGG_ENTRIES as usize / 2
            || self.stacks >= tracer_common::STACK_ENTRIES as usize / 128
    }
}

/// When to look at how full the maps are ([`remember_processes`], which walks the count map,
/// then [`MapsHeld::filling`]): every 250 ms, for the processes sampled (their mappings read
/// while they run), and as soon as [`LOOK_AFTER_CELLS`] new count cells came in, read from
/// the programs' counter of them (one lookup, at each of the event loop's 10 ms drains). New
/// stacks come with new cells: a profile sampling new stacks at 4,999 Hz looked every 250 ms
/// held up to 1,250 more stacks each time, and lost 2.3-2.9% of its stacks to the stack map's
/// taken buckets. A profile of the same few stacks adds no cells and is looked at as before.
pub struct FillWatch {
    cells: u64,
    looked: std::time::Instant,
}

/// New count cells after which [`FillWatch`] looks at once: each cell brings at most two
/// new stacks (kernel and user), a quarter of what [`MapsHeld::filling`] folds at. Looking
/// after 64 cells instead lost 0.7-0.9% of stackmix's stacks at 4,999 Hz (0.5-0.7% now); a
/// look walks the count map's few keys held since the last fold.
pub const LOOK_AFTER_CELLS: u64 = tracer_common::STACK_ENTRIES as u64 / 512;

impl Default for FillWatch {
    fn default() -> FillWatch {
        FillWatch {
            cells: 0,
            looked: std::time::Instant::now(),
        }
    }
}

impl FillWatch {
    /// Whether to look now; if so, counts from now.
    pub fn due(&mut self, bpf: &Bpf, slot: &Slot) -> Result<bool, Error> {
        let cells = bpf.slot_cells(slot)?;
        let due = cells.saturating_sub(self.cells) >= LOOK_AFTER_CELLS
            || self.looked.elapsed() >= std::time::Duration::from_millis(250);
        if due {
            (self.cells, self.looked) = (cells, std::time::Instant::now());
        }
        Ok(due)
    }
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

/// The processes of counts reported (`-I`) that are gone now: those of `previous` and those
/// reported before (`seen`, which keeps the others). Their every sample has been read: a
/// sample after the read changed its cell, which then stays with its process. Kept across
/// reports because a drained process no longer has a cell when it exits.
pub fn gone(
    previous: &hashbrown::HashMap<AggKey, AggValue>,
    seen: &mut hashbrown::HashSet<u32>,
) -> hashbrown::HashSet<u32> {
    seen.extend(previous.keys().map(|key| key.pid).filter(|&pid| pid != 0));
    let gone: hashbrown::HashSet<u32> = (seen.iter().copied())
        .filter(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    seen.retain(|pid| !gone.contains(pid));
    gone
}

/// Takes the counts reported (`previous`, `-I`) out of the count map, and the stacks no count
/// left refers to out of the stack map ([`crate::probe::aggregate::drain`]): a count that grew
/// since it was read stays, and what it grew by is the next report's.
pub fn drain(
    bpf: &mut Bpf,
    previous: &mut hashbrown::HashMap<AggKey, AggValue>,
    gone: &hashbrown::HashSet<u32>,
    symbolizer: &mut Symbolizer,
) -> Result<(), Error> {
    let mut cells = (previous.drain())
        .map(|(key, value)| ((key, None), value))
        .collect();
    crate::probe::aggregate::drain(bpf, &mut cells, gone, symbolizer)?;
    previous.extend(cells.into_iter().map(|((key, _), value)| (key, value)));
    Ok(())
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
        // A stack taken out of the stack map by a fold as a new cell began to count it
        // (evicted), or not in it when read: lost, as a taken bucket loses one.
        let mut gone = false;
        for stack in stacks {
            match stack {
                Stack::Frames(list) => frames.extend(list.iter().map(frame_of)),
                Stack::Evicted | Stack::NotCaptured(_) => gone = true,
            }
        }
        if ulost || gone {
            frames.push(lost(false));
        }
        if gone && !klost && !ulost {
            accounting.stacks_lost += value.count;
        }
        if symbolizer.cut_short(key.pid, ustack) {
            accounting.fp_astray += value.count;
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
    Ok(combined(entries))
}

/// Entries of the same process, comm and functions added up, heaviest first: the kernel keeps
/// a stack per distinct return address, a report shows one per call chain. A frame whose
/// merged entries were at different lines keeps only its file.
pub fn combined(entries: Vec<Entry>) -> Vec<Entry> {
    let mut merged = Merged::default();
    entries.into_iter().for_each(|entry| merged.add(entry));
    merged.sorted()
}

/// Entries merged as they come ([`combined`]), indexed by a hash of their chain: `profile`'s
/// folds add each one's entries to the run's.
#[derive(Default)]
pub struct Merged {
    /// Hash of (pid, comm, cgroup, function names and sides) -> indexes in `out`.
    index: hashbrown::HashMap<u64, Vec<usize>>,
    out: Vec<Entry>,
}

impl Merged {
    /// Adds `entry`, to the entry of the same chain if there is one.
    pub fn add(&mut self, entry: Entry) {
        use std::hash::{BuildHasher as _, Hash as _, Hasher as _};
        let mut hasher = self.index.hasher().build_hasher();
        (entry.pid, &entry.comm, &entry.cgroup.path).hash(&mut hasher);
        for frame in &entry.frames {
            (&frame.name, frame.kernel).hash(&mut hasher);
        }
        let same = |kept: &Entry| {
            (kept.pid, &kept.comm, &kept.cgroup.path)
                == (entry.pid, &entry.comm, &entry.cgroup.path)
                && kept.frames.len() == entry.frames.len()
                && (kept.frames.iter().zip(&entry.frames))
                    .all(|(a, b)| a.kernel == b.kernel && a.name == b.name)
        };
        let at = self.index.entry(hasher.finish()).or_default();
        let Some(&i) = at.iter().find(|&&i| same(&self.out[i])) else {
            at.push(self.out.len());
            self.out.push(entry);
            return;
        };
        let kept = &mut self.out[i];
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

    /// The entries, heaviest first.
    pub fn sorted(self) -> Vec<Entry> {
        let mut entries = self.out;
        entries.sort_by(|a, b| (b.value, a.pid, &a.comm).cmp(&(a.value, b.pid, &b.comm)));
        entries
    }
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
        let merged = combined(vec![
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
