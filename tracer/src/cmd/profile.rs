//! `tracer profile`: what is on CPU, as sampled stacks counted in the kernel (a perf-event
//! slot on cycles or cpu-clock events, per CPU or per task, `PERF_EVENT_IOC_SET_BPF`), or,
//! with `--off-cpu`, how long tasks block and where (a program on `sched:sched_switch`).
//! Nothing streams: the counts and stacks are read and symbolized per `-I` interval, or, without
//! one, every [`FOLD_EVERY`] (sooner when the count map is half full), and taken out of the
//! maps once read: a run of any length never fills them.

use std::io::{IsTerminal as _, Write as _};
use std::time::Instant;

use crate::bpf::{Bpf, KernelNamer, Room, Rooms, Sizing, Slot};
use crate::cli::{ProfileArgs, ProfileFormat};
use crate::kernel::tracefs::Tracefs;
use crate::output::pprof;
use crate::output::profile::{self as out, Measure, Profile};
use crate::output::summary::{Banner, Summary};
use crate::plan::profile::{profile_plan, Mode, ProfilePlan, Unwind};
use crate::plan::Whom;
use crate::probe::profile::{self as sampling, Sampled, Sampler, Unwound};
use crate::session::{self, Hold, Outcome, Session, Sink};
use crate::stacks::Symbolizer;
use crate::Error;

pub fn run(args: ProfileArgs) -> Result<i32, Error> {
    let plan = profile_plan(&args, &session::ThisMachine)?;
    refuse_binary_to_terminal(&plan)?;
    let output = crate::output::destination(plan.file.as_deref())?;
    // Held right after its exec: its executable is mapped, so its stacks resolve even when it
    // is gone by the end of the run.
    let mut session = Session::start(&plan.whom, Hold::AfterExec, args.command_end.at_end())?;
    let off_cpu = matches!(plan.mode, Mode::OffCpu { .. });
    // Off-CPU blocks unwound from CFI are timed by perf's switch records, not by BPF.
    let frame_pointers = plan.unwind == Unwind::FramePointers;
    let off_cpu_bpf = off_cpu && frame_pointers;
    let mut bpf = load(frame_pointers, off_cpu_bpf)?;
    let launched = session.is_launched();
    // Children of -p are followed as the command's are: through the tracked-task map.
    let adopted = plan.whom.pid().filter(|_| plan.follow);
    let fs = match launched || off_cpu_bpf || adopted.is_some() {
        true => Some(Tracefs::locate()?),
        false => None,
    };
    if let Some(fs) = fs.as_ref().filter(|_| launched) {
        session.follow(&mut bpf, fs)?;
    }
    if let (Some(fs), Some(pid)) = (fs.as_ref(), adopted) {
        session.follow_adopted(&mut bpf, fs, &[pid])?;
    }
    let tgid = plan.whom.pid().filter(|_| !plan.follow).unwrap_or(0);
    let config = sampling::slot_config(
        stack_flags(&plan),
        tgid,
        launched || adopted.is_some(),
        off_cpu,
    );
    let skip_idle = plan.whom == Whom::Everyone && !off_cpu;
    // The profile's seconds are those it sampled: from here (off-CPU blocks are timed from
    // their program's attach) to the kernel's stop, not the run's, which begins later and
    // ends sooner (a loaded machine's samples outnumbered the run's clock ticks by 3%).
    let mut sampled_from = Instant::now();
    let (sampler, offcpu, unwound, measure) = start(
        &plan,
        &mut bpf,
        session.pid(),
        fs.as_ref(),
        config,
        skip_idle,
    )?;
    // The mappings of processes that come and go during the run, from the kernel's records.
    let command = session
        .pid()
        .filter(|_| matches!(plan.whom, Whom::Command(_)));
    let tracker = sampling::MapsTracker::open(command)?;
    let kernel_namer = plan.kernel.then(|| bpf.kernel_namer()).flatten();
    // Sampling before the banner: a user (or test) that starts the work on seeing it finds
    // every switch and sample of it counted.
    if !off_cpu_bpf {
        sampled_from = Instant::now();
    }
    sampler.as_ref().map(Sampler::enable).transpose()?;
    unwound.as_ref().map(Unwound::enable).transpose()?;
    session.begin(&banner(&plan, measure, session.whom()))?;
    // The counting slot: the sampler's or the off-CPU program's (none when unwound).
    let slot = (sampler.as_ref().map(|s| s.slot.clone()))
        .or_else(|| offcpu.as_ref().map(|(_, slot)| slot.clone()));
    let mut sink = ProfileSink {
        bpf: &mut bpf,
        reported: Default::default(),
        slot: slot.as_ref(),
        unwound,
        symbolizer: symbolizer_for(session.pid(), plan.shows_lines(), kernel_namer),
        pid: session.pid(),
        watch: Default::default(),
        tracker,
        output,
        intervals: intervals(&plan, measure, skip_idle, slot.is_some()),
        stopped: None,
    };
    let outcome = session.run(&mut sink, Vec::new(), plan.duration)?;
    if sink.intervals.is_some() {
        sink.report(true)?;
    }
    let ProfileSink {
        mut symbolizer,
        tracker,
        mut output,
        intervals,
        unwound,
        reported,
        stopped,
        ..
    } = sink;
    let (maps_lost, maps_malformed) = (tracker.lost, tracker.malformed);
    tracker.lend(&mut symbolizer);
    let (mut entries, mut accounting) = match (unwound, &slot) {
        (Some(mut unwound), _) => unwound.take_entries(&mut symbolizer),
        (None, Some(slot)) => sampling::entries(&bpf, slot, &mut symbolizer, skip_idle, off_cpu)?,
        (None, None) => unreachable!("a slot or unwound samples"),
    };
    accounting.missed = (offcpu.as_ref()).map_or(0, |_| bpf.recursion_misses("offcpu_switch"));
    if offcpu.is_some() {
        accounting.unended = bpf.offcpu_unended()?;
    }
    if let Some(iv) = intervals.filter(|_| slot.is_some()) {
        held_by_reports(reported, &mut entries, &mut accounting, iv.kept);
    }
    drop((sampler, offcpu));
    accounting.maps_lost = maps_lost + maps_malformed;
    let mut profile = Profile {
        measure,
        entries,
        accounting,
        seconds: (stopped.unwrap_or_else(Instant::now) - sampled_from).as_secs_f64(),
    };
    profile.settle();
    // With -I the intervals were the report.
    if plan.interval.is_none() {
        write_profile(&plan, &profile, &mut output, outcome.elapsed)?;
    }
    summary(&profile, &outcome).print();
    Ok(outcome.exit_code())
}

/// `-f pprof` is not written to a terminal.
fn refuse_binary_to_terminal(plan: &ProfilePlan) -> Result<(), Error> {
    let to_stdout = plan.file.as_deref().is_none_or(crate::output::is_stdout);
    if plan.format == ProfileFormat::Pprof && to_stdout && std::io::stdout().is_terminal() {
        return Err(Error::usage(
            "-f pprof writes a gzipped protobuf, not for a terminal",
            vec![
                "write it to a file: -f pprof -o cpu.pb.gz (then go tool pprof -top cpu.pb.gz)"
                    .into(),
            ],
        ));
    }
    Ok(())
}

/// The stacks the plan's samples take: kernel, user or both.
fn stack_flags(plan: &ProfilePlan) -> u32 {
    [
        (plan.kernel, tracer_common::SLOT_STACK_KERNEL),
        (plan.user, tracer_common::SLOT_STACK_USER),
    ]
    .iter()
    .filter(|(wanted, _)| *wanted)
    .fold(0, |flags, (_, bit)| flags | bit)
}

/// The command's symbolizer, its process's mappings read (and kept fresh while it runs);
/// without `lines`, frames get no source lines.
/// `namer`: the kernel's namer of kernel frames, loaded before sampling starts (loaded at the
/// end, its time would be sampled past the run's measured seconds).
fn symbolizer_for(pid: Option<u32>, lines: bool, namer: Option<KernelNamer>) -> Symbolizer {
    let mut symbolizer = Symbolizer::default();
    symbolizer.name_kernel_with(namer);
    symbolizer.without_lines = !lines;
    if let Some(pid) = pid {
        symbolizer.keep_mapped(pid);
    }
    symbolizer
}

/// What the run's reports held (`-I`, or the folds of a run without it, take the counts out of
/// the map): their accounting and their distinct stacks.
type Held = (out::Accounting, Distinct);

/// The distinct stacks the reports held, by a hash of task and frames: kept per process while
/// it runs, and only counted once it is gone (its stacks cannot come back), so that a run of
/// any length over any number of processes holds the hashes of the live ones only.
#[derive(Default)]
struct Distinct {
    live: hashbrown::HashMap<u32, hashbrown::HashSet<u64>>,
    retired: u64,
}

impl Distinct {
    fn insert(&mut self, pid: u32, hash: u64) {
        self.live.entry(pid).or_default().insert(hash);
    }

    /// Counts the stacks of processes that are gone and forgets their hashes.
    fn retire(&mut self, gone: &hashbrown::HashSet<u32>) {
        for pid in gone {
            if let Some(stacks) = self.live.remove(pid) {
                self.retired += stacks.len() as u64;
            }
        }
    }

    fn len(&self) -> u64 {
        self.retired + self.live.values().map(|s| s.len() as u64).sum::<u64>()
    }
}

/// The run's accounting when its reports took the counts out of the map: what they held, with
/// what is left (`entries`, `accounting`). Folds (`kept`, a run without `-I`) kept their
/// entries, which join what is left: the run's profile. (`accounting.exited` is the run's
/// already: the symbolizer counts it.)
fn held_by_reports(
    mut reported: Held,
    entries: &mut Vec<out::Entry>,
    accounting: &mut out::Accounting,
    kept: Option<sampling::Merged>,
) {
    add_reported((&mut reported.0, &mut reported.1), entries, accounting);
    let (held, stacks) = reported;
    accounting.stacks_lost = held.stacks_lost;
    accounting.idle = held.idle;
    accounting.own = held.own;
    accounting.fp_astray = held.fp_astray;
    match kept {
        Some(mut kept) => {
            std::mem::take(entries)
                .into_iter()
                .for_each(|e| kept.add(e));
            *entries = kept.sorted();
        }
        None => {
            accounting.reported = held.reported.map(|r| out::Reported {
                stacks: stacks.len(),
                ..r
            })
        }
    }
}

/// Adds a report's stacks and accounting to what the run's reports held.
fn add_reported(
    (held, stacks): (&mut out::Accounting, &mut Distinct),
    entries: &[out::Entry],
    accounting: &out::Accounting,
) {
    use std::hash::{Hash, Hasher};
    let mut reported = held.reported.unwrap_or_default();
    for entry in entries {
        reported.count += entry.count;
        reported.value += entry.value;
        // Fixed keys: the same stack hashes alike in every report.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&entry.comm, entry.pid).hash(&mut hasher);
        for frame in &entry.frames {
            (&frame.name, frame.kernel).hash(&mut hasher);
        }
        stacks.insert(entry.pid, hasher.finish());
    }
    held.reported = Some(reported);
    held.add_taken(accounting);
}

/// The BPF object with room for stacks and counts where the kernel counts them (frame
/// pointers: `--call-graph dwarf` unwinds its samples in tracer and counts them there), and
/// for the off-CPU program's blocks. The two rooms are 17 MiB the kernel zeroes at creation
/// (docs/benchmarks.md, "Figures the code cites", `profile-rooms`).
fn load(frame_pointers: bool, off_cpu_bpf: bool) -> Result<Bpf, Error> {
    Ok(Bpf::load_with(Sizing {
        rooms: Rooms::of([
            (Room::Stacks, frame_pointers),
            (Room::Counts, frame_pointers),
            (Room::OffCpu, off_cpu_bpf),
        ]),
        ..Sizing::default()
    })?)
}

/// What samples the run: the counting slot's sampler (frame pointers), the off-CPU program,
/// or the unwound samples (`--call-graph dwarf`), and what is measured.
type Started = (
    Option<Sampler>,
    Option<(crate::perf::Event, Slot)>,
    Option<Unwound>,
    Measure,
);

/// Starts sampling as the plan says, for the command's process (`pid`) or as `plan.whom`
/// says; `fs` is located for `--off-cpu`.
fn start(
    plan: &ProfilePlan,
    bpf: &mut Bpf,
    pid: Option<u32>,
    fs: Option<&Tracefs>,
    config: tracer_common::SlotConfig,
    skip_idle: bool,
) -> Result<Started, Error> {
    let sampled = match (&plan.whom, pid) {
        (Whom::Processes(pids), _) => Sampled::Tasks(
            pids.iter()
                .flat_map(|&pid| sampling::threads(pid))
                .collect(),
        ),
        (Whom::Command(_), Some(pid)) => Sampled::Tasks(vec![pid]),
        (Whom::Command(_), None) | (Whom::Everyone, _) => Sampled::AllCpus,
    };
    let unwound = match plan.unwind {
        Unwind::Dwarf { stack_bytes } => Some(Unwound::open(
            plan.mode,
            &sampled,
            stack_bytes,
            plan.kernel,
            skip_idle,
        )?),
        Unwind::FramePointers => None,
    };
    Ok(match plan.mode {
        Mode::OnCpu { hz } => match unwound {
            Some(unwound) => {
                let event = unwound.event;
                (None, None, Some(unwound), Measure::OnCpu { hz, event })
            }
            None => {
                let sampler = Sampler::open(bpf, config, hz, &sampled)?;
                let event = sampler.event;
                (Some(sampler), None, None, Measure::OnCpu { hz, event })
            }
        },
        Mode::OffCpu { min_block_ns } => match unwound {
            Some(unwound) => (None, None, Some(unwound), Measure::OffCpu { min_block_ns }),
            None => {
                let fs = fs.expect("located for --off-cpu");
                let started = sampling::start_offcpu(bpf, fs, config, min_block_ns)?;
                (None, Some(started), None, Measure::OffCpu { min_block_ns })
            }
        },
    })
}

/// How often a run without `-I` takes its counts out of the map (a fold), at the latest.
const FOLD_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// `-I`: a report of each interval, from now on; without it, when the kernel counts (`counted`,
/// not `--call-graph dwarf`), a fold every [`FOLD_EVERY`], kept for the end.
fn intervals(
    plan: &ProfilePlan,
    measure: Measure,
    skip_idle: bool,
    counted: bool,
) -> Option<Intervals> {
    let (every, kept) = match plan.interval {
        Some(every) => (every, None),
        None if counted => (FOLD_EVERY, Some(sampling::Merged::default())),
        None => return None,
    };
    Some(Intervals {
        every,
        kept,
        pending: Default::default(),
        pending_accounting: Default::default(),
        started: Instant::now(),
        last: Instant::now(),
        reports: 0,
        taking: Default::default(),
        top: plan.top,
        measure,
        skip_idle,
    })
}

/// The profile in the plan's format.
fn write_profile(
    plan: &ProfilePlan,
    profile: &Profile,
    output: &mut crate::output::Output,
    elapsed: std::time::Duration,
) -> Result<(), Error> {
    let written = match plan.format {
        ProfileFormat::Text => write!(output, "{}", profile.text(plan.top)),
        ProfileFormat::Folded => profile
            .folded()
            .iter()
            .try_for_each(|line| writeln!(output, "{line}")),
        ProfileFormat::Svg => profile.svg(output),
        ProfileFormat::Json => writeln!(output, "{}", profile.json()),
        ProfileFormat::Pprof => {
            let context = pprof::Context::new(
                std::time::SystemTime::now() - elapsed,
                crate::kernel::symbols::kernel_build_id(),
            );
            output.write_all(&pprof::encode(profile, &context))
        }
    };
    written.and_then(|()| output.flush()).map_err(Error::Output)
}

/// The end-of-run summary: samples or blocks, and what was lost.
fn summary(profile: &Profile, outcome: &Outcome) -> Summary {
    let (count, unit) = match profile.measure {
        Measure::OnCpu { .. } => (profile.total_value(), "samples"),
        Measure::OffCpu { .. } => (profile.accounting.total, "blocks"),
    };
    Summary {
        count,
        unit: unit.into(),
        seconds: profile.seconds,
        why: outcome.why(count, unit),
        tail: match profile.measure {
            // Not counted for want of room in the map; or, unwound, lost when a ring was full.
            Measure::OnCpu { .. } => format!(
                "{} lost",
                profile.accounting.not_counted
                    + profile.accounting.raced
                    + profile.accounting.unwound.map_or(0, |u| u.lost)
            ),
            Measure::OffCpu { .. } => format!(
                "{} blocked; {} lost",
                out::duration(profile.total_value()),
                profile.accounting.not_counted + profile.accounting.unwound.map_or(0, |u| u.lost)
            ),
        },
        table: None,
        notes: profile.summary_notes(),
    }
}

fn banner(plan: &ProfilePlan, measure: Measure, whom: Option<String>) -> Banner {
    let sides = match (plan.kernel, plan.user) {
        (true, true) => "",
        (true, false) => " (kernel stacks)",
        _ => " (user stacks)",
    };
    match measure {
        Measure::OnCpu { hz, event } => Banner {
            verb: "Sampling",
            what: format!("on-CPU stacks{sides}"),
            whom: whom.or(Some("every task".into())),
            detail: Some(format!(
                "({event} at {hz} Hz {}{})",
                match plan.whom {
                    Whom::Everyone => "on each CPU",
                    Whom::Command(_) | Whom::Processes(_) => "of its CPU time",
                },
                match plan.unwind {
                    Unwind::FramePointers => String::new(),
                    Unwind::Dwarf { stack_bytes } =>
                        format!("; user stacks unwound from .eh_frame, {stack_bytes}-byte copies"),
                }
            )),
        },
        Measure::OffCpu { min_block_ns } => Banner {
            verb: "Timing",
            what: format!("off-CPU stacks{sides}"),
            whom: whom.or(Some("every task".into())),
            detail: Some(match plan.unwind {
                Unwind::FramePointers => format!(
                    "(sched:sched_switch, blocks of {} and more)",
                    out::duration(min_block_ns)
                ),
                Unwind::Dwarf { stack_bytes } => format!(
                    "(context switches, blocks of {} and more; user stacks unwound from .eh_frame, {stack_bytes}-byte copies)",
                    out::duration(min_block_ns)
                ),
            }),
        },
    }
}

/// Nothing streams: the run keeps the target's mappings fresh, reads those of every new
/// process counted when the [`sampling::FillWatch`] says (every 250 ms, sooner when new
/// stacks come fast; a process that exits before the end keeps its frames), with
/// `-I` prints what each interval added (without it, folds it), and stops the programs at its
/// end.
struct ProfileSink<'a> {
    bpf: &'a mut Bpf,
    /// What the reports and folds held, for the run's summary (its stacks by a hash of
    /// their task and frames).
    reported: Held,
    /// The counting slot (frame pointers, off-CPU); `None` with `--call-graph dwarf`, whose
    /// samples are unwound and counted by tracer (`unwound`).
    slot: Option<&'a Slot>,
    unwound: Option<Unwound>,
    symbolizer: Symbolizer,
    pid: Option<u32>,
    watch: sampling::FillWatch,
    tracker: sampling::MapsTracker,
    output: crate::output::Output,
    intervals: Option<Intervals>,
    /// When the kernel stopped sampling (the sink's stop).
    stopped: Option<Instant>,
}

/// `-I`: when the last report was printed, and the counts it covered. Each report is the last
/// word on what it counts: its cells leave the count map, so that it never fills. A run
/// without `-I` folds instead (`kept`): the same, the entries kept for the end, not printed.
struct Intervals {
    every: std::time::Duration,
    kept: Option<sampling::Merged>,
    /// `-I`: what the interval's folds took out of the maps, for its report.
    pending: sampling::Merged,
    pending_accounting: out::Accounting,
    started: Instant,
    last: Instant,
    reports: u64,
    taking: sampling::Taking,
    top: usize,
    measure: Measure,
    skip_idle: bool,
}

impl ProfileSink<'_> {
    /// What was counted since the last take, symbolized and taken out of the maps (`None`
    /// without intervals or folds).
    fn take(&mut self, last: bool) -> Result<Option<(Vec<out::Entry>, out::Accounting)>, Error> {
        let Some(iv) = self.intervals.as_mut() else {
            return Ok(None);
        };
        if last {
            // The last records: a process's exec or mappings just before the end.
            self.tracker.drain();
        }
        let (entries, accounting, gone) = match (&mut self.unwound, self.slot) {
            (Some(unwound), _) => {
                let (entries, accounting) = unwound.take_entries(&mut self.symbolizer);
                (entries, accounting, Default::default())
            }
            (None, Some(slot)) => {
                let timed = matches!(iv.measure, Measure::OffCpu { .. });
                (iv.taking).take(
                    self.bpf,
                    slot,
                    (&mut self.symbolizer, &mut self.tracker),
                    (iv.skip_idle, timed),
                )?
            }
            (None, None) => unreachable!("a slot or unwound samples"),
        };
        if self.unwound.is_none() {
            let (held, stacks) = &mut self.reported;
            add_reported((held, stacks), &entries, &accounting);
            stacks.retire(&gone);
        }
        Ok(Some((entries, accounting)))
    }

    /// Takes the counts out of the maps before they fill (their stack map's buckets taken
    /// make new stacks collide), keeping them for the run's end (a run without `-I`) or for
    /// the interval's report.
    fn fold(&mut self, last: bool) -> Result<(), Error> {
        let Some((entries, accounting)) = self.take(last)? else {
            return Ok(());
        };
        let iv = self.intervals.as_mut().expect("taken");
        match iv.kept.as_mut() {
            Some(kept) => {
                entries.into_iter().for_each(|e| kept.add(e));
                iv.last = Instant::now();
            }
            None => {
                entries.into_iter().for_each(|e| iv.pending.add(e));
                iv.pending_accounting.add_taken(&accounting);
            }
        }
        Ok(())
    }

    /// Reads the mappings of the processes sampled and folds the counts if the maps fill,
    /// when the [`sampling::FillWatch`] says it is time.
    fn look(&mut self) -> Result<(), Error> {
        let Some(slot) = self.slot else {
            return Ok(());
        };
        if !self.watch.due(self.bpf, slot)? {
            return Ok(());
        }
        let (sampled, held) = sampling::remember_processes(self.bpf, slot, &mut self.symbolizer)?;
        self.tracker.prune(&sampled);
        if held.filling() {
            self.fold(false)?;
        }
        Ok(())
    }

    /// Prints the top stacks of what was counted since the last report, under a
    /// `--- T s (interval N) ---` line (as `tracer probe -I` heads its reports); without
    /// `-I`, a fold.
    fn report(&mut self, last: bool) -> Result<(), Error> {
        if self.intervals.as_ref().is_some_and(|iv| iv.kept.is_some()) {
            return self.fold(last);
        }
        let Some((entries, mut accounting)) = self.take(last)? else {
            return Ok(());
        };
        let iv = self.intervals.as_mut().expect("taken");
        iv.reports += 1;
        let seconds = iv.last.elapsed().as_secs_f64();
        iv.last = Instant::now();
        // What the folds of the interval took, with the rest.
        let mut pending = std::mem::take(&mut iv.pending);
        entries.into_iter().for_each(|e| pending.add(e));
        accounting.add_taken(&std::mem::take(&mut iv.pending_accounting));
        let profile = Profile {
            measure: iv.measure,
            entries: pending.sorted(),
            accounting,
            seconds,
        };
        let what = if last { "last interval" } else { "interval" };
        let body = match profile.entries.is_empty() {
            true => "no stacks\n".to_string(),
            false => profile.text(iv.top),
        };
        let time = iv.started.elapsed().as_secs_f64();
        (write!(
            self.output,
            "--- {time:.2} s ({what} {}) ---\n{body}",
            iv.reports
        ))
        .and_then(|()| self.output.flush())
        .map_err(Error::Output)
    }
}

impl Sink for ProfileSink<'_> {
    fn drain(&mut self) -> Result<bool, Error> {
        match self.unwound.as_mut() {
            // The mappings first: a sample's process may have exec'd since it was read.
            Some(unwound) => {
                self.tracker.lend_to(&mut self.symbolizer);
                unwound.drain(&mut self.symbolizer);
            }
            None => self.tracker.drain(),
        }
        self.look()?;
        Ok(false)
    }

    fn tick(&mut self) -> Result<bool, Error> {
        if let Some(pid) = self.pid.filter(|&pid| session::alive(pid)) {
            self.symbolizer.keep_mapped(pid);
        }
        if (self.intervals.as_ref()).is_some_and(|iv| iv.last.elapsed() >= iv.every) {
            self.report(false)?;
        }
        Ok(false)
    }

    fn stop(&mut self) -> Result<(), Error> {
        if let Some(unwound) = &self.unwound {
            unwound.disable()?;
        }
        self.bpf.stop()?;
        self.stopped = Some(Instant::now());
        Ok(())
    }
}
