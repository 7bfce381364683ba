//! Stack ids captured in BPF -> symbolized frames: kernel frames named by the kernel or from
//! kallsyms (`kernel`), user frames from the process's mappings, ELF symbols and DWARF lines,
//! each cached for the run.
//! User stacks of binaries without frame pointers are unwound here from sampled registers and
//! stack copies (`--call-graph dwarf`, see `kernel::unwind`).

use std::rc::Rc;

use hashbrown::{HashMap, HashSet};

use tracer_common::{Event, NO_STACK, STACK_TAKEN_LATE};

use crate::bpf::{Bpf, KernelNamer};
use crate::kernel::file_cache::FileCache;
use crate::kernel::symbols::Process;
use crate::kernel::unwind::{self, Cfi, Unwinder};
use crate::output::stack::{Frame, Frames, Mapped, Space, Stack};
use crate::Error;

mod kernel;
mod splice;
mod summary;
use splice::{spliced, top_key, walk_resumes, with_entry_caller};

/// Which stacks a command captures (`-s/--stack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    Kernel,
    #[default]
    User,
    Both,
}

impl Which {
    /// The `SLOT_STACK_*` bits of a slot config.
    pub fn flags(self) -> u32 {
        match self {
            Which::Kernel => tracer_common::SLOT_STACK_KERNEL,
            Which::User => tracer_common::SLOT_STACK_USER,
            Which::Both => tracer_common::SLOT_STACK_KERNEL | tracer_common::SLOT_STACK_USER,
        }
    }
}

/// The `SLOT_STACK_*` bits of `-s` for one probe: alone, the side the probe is on.
pub fn flags_for(choice: Option<Option<Which>>, user_probe: bool) -> u32 {
    match choice {
        None => 0,
        Some(Some(which)) => which.flags(),
        Some(None) if user_probe => Which::User.flags(),
        Some(None) => Which::Kernel.flags(),
    }
}

/// `bpf_get_stackid`'s answer for a side the task was not on (a user-mode hit's kernel stack,
/// a kernel thread's user stack): no frames on that side, not a loss.
pub const NO_FRAMES: i32 = -libc::EFAULT;

/// How long a recycled stack is kept for events taken before its removal and read after: a
/// backlog of 5 s behind the rings (their events are read within 10 ms unless tracer is
/// starved of CPU).
const RETIRED_FOR_NS: u64 = 5_000_000_000;

/// A stack's instruction pointers as read from the map, shared by the id's cache, its
/// retired generations and the frames made of it (handing them on is a count, not a copy).
type Ips = Rc<[u64]>;

/// A symbolized stack: the ips it was made from, and its frames.
type Made = (Ips, Rc<Frames>);

/// When a recycled stack id left the map: its removal happened within `lo..=hi`. An event
/// whose ids were taken between its time and its span's end ([`Event::stack_taken`]) may have
/// been given the id on either side of a removal that overlaps them, and is told by what the
/// map holds then.
#[derive(Clone, Copy, Debug)]
struct Removal {
    lo: u64,
    hi: u64,
}

/// What a streamed event's stack id held when the event was taken, for an id recycled since.
enum Held {
    /// The map's current stack (cached, or read now).
    Current,
    /// A stack that left the map since.
    Retired(Ips),
    /// This stack or the map's current one: the event was taken as the id left the map.
    ThisOrCurrent(Ips),
    /// Unknown: taken as the id left the map, between two different stacks, or so long ago
    /// that the stack is no longer kept.
    Unknown,
}

/// Resolves the stacks of events. Stack ids are not reused within a run (the BPF side does
/// not pass BPF_F_REUSE_STACKID) unless tracer removes them from the map ([`Symbolizer::forget`]
/// is told; streamed stacks are recycled by [`Symbolizer::recycle`], which keeps what each id
/// held), so each id is read from the map once per use; a process is read from /proc when its
/// first stack arrives, and an address outside its known mappings makes it reread them once
/// (a library loaded later).
#[derive(Default)]
pub struct Symbolizer {
    kernel: kernel::KernelNames,
    /// `None`: the process had exited before its first stack was read.
    processes: HashMap<u32, Option<Process>>,
    /// Instruction pointers by stack id.
    ips: HashMap<u32, Ips>,
    /// Symbolized user stacks by (pid, id, entry caller), kernel stacks by (0, id, 0) (pid 0 is
    /// never a user), with the ips they were made from (a recycled id may hold another).
    frames: HashMap<(u32, u32, u64), Made>,
    /// Single addresses (watchpoint hits) by (pid, address).
    addresses: HashMap<(u32, u64), Frame>,
    /// Stacks that `bpf_get_stackid` could not capture.
    pub not_captured: u64,
    /// Hits whose every stack asked for had no frames ([`NO_FRAMES`]): not a side the task
    /// was off, since no other side had any (a syscall tracepoint's kernel stack on kernels
    /// before 6.12, which hand BPF the user registers there).
    pub no_frames: u64,
    /// Counted stacks, as (pid, kernel id, user id), whose id was removed from the stack map
    /// while they were still being counted (see `probe::aggregate::evict`): shown as lost.
    lost: HashSet<(u32, i32, i32)>,
    /// Counted stacks shown as lost for that reason.
    pub evicted: u64,
    /// Processes gone before their stacks could be symbolized.
    pub exited: u64,
    /// Distinct user stacks walked by frame pointers that left the process's code, cut
    /// there ([`Symbolizer::cut_astray`]), and which they were, as (pid, stack id).
    pub fp_astray: u64,
    astray: HashSet<(u32, u32)>,
    /// Kernel stacks cut short at a return probe's trampoline: kernels before 5.15 cannot
    /// unwind through `kretprobe_trampoline` (it stands in for the return address).
    pub kretprobe_cut: u64,
    /// The innermost ip is just past the instruction of interest (data watchpoints trap after
    /// the access), so it is looked up like a return address.
    pub trap_after: bool,
    /// Streamed stacks read from the map since the last [`Symbolizer::recycle`].
    read_since: HashSet<u32>,
    /// Streamed stacks recycled, by id: (when they left the map, their ips), oldest first. An
    /// event taken before then with that id had that stack.
    retired: HashMap<u32, Vec<(Removal, Ips)>>,
    /// When each recycled id last left the map: an event taken before then whose stack is no
    /// longer kept is not given the map's newer one.
    last_removed: HashMap<u32, Removal>,
    /// Streamed stacks whose id was recycled around the time it was taken without telling
    /// which stack it held, or too long before their event was read, or that were taken too
    /// long after their event's time to say when ([`STACK_TAKEN_LATE`]): shown as not
    /// captured.
    pub recycled_late: u64,
    /// `--call-graph dwarf`: an unwinder per process, with the mappings' version it was
    /// built from.
    unwinders: HashMap<u32, (u64, Unwinder)>,
    /// Unwind information by the file read (`None`: it could not be read).
    cfi: FileCache<std::path::PathBuf, Cfi>,
    vdso_cfi: unwind::VdsoCfi,
    /// When the files no process uses were last let go ([`Symbolizer::forget`]).
    swept: Option<std::time::Instant>,
    /// How the user stacks whose top was copied ended.
    pub tops: unwind::TopEnds,
    /// User frames get no source line, and no file's DWARF line tables are read: for output
    /// that shows none (a folded profile; libc's tables alone are about 55 MB when its debug
    /// file is installed).
    pub without_lines: bool,
}

/// How long what was read of a file (symbols, lines, unwind tables) is kept once no process
/// uses it, and how often that is checked.
const FILES_KEPT_UNUSED: std::time::Duration = std::time::Duration::from_secs(60);
const FILES_SWEPT_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Process `pid` as known to a symbolizer, read from /proc the first time (`exited` counts
/// one already gone), with partial mappings completed ([`Process::complete`]).
fn process_of<'a>(
    processes: &'a mut HashMap<u32, Option<Process>>,
    exited: &mut u64,
    pid: u32,
) -> &'a mut Option<Process> {
    let process = processes.entry(pid).or_insert_with(|| {
        let process = Process::new(pid).ok();
        if process.is_none() {
            *exited += 1;
        }
        process
    });
    if let Some(p) = process.as_mut() {
        p.complete();
    }
    process
}

/// Whether two reads of a stack hold the same ips: the same read (the common case, a pointer
/// compare) or equal ones.
fn same(a: &Ips, b: &Ips) -> bool {
    Rc::ptr_eq(a, b) || a == b
}

/// A stack taken in a BPF trampoline program (fentry, fexit) starts in the program and the
/// trampoline (`bpf_prog_..._fn_entry [bpf]`, `bpf_trampoline_... [bpf]`): tracer's machinery,
/// not the traced code. Those leading frames go, so the stack starts at the function (fentry:
/// `vfs_read+0x9`) or, at its return, at its caller (fexit), as kprobe stacks do.
fn without_trampoline(frames: &mut Vec<Frame>) {
    let bpf = |f: &Frame| f.symbol.as_deref().is_some_and(|s| s.ends_with(" [bpf]"));
    if let Some(last) = (frames.iter().take(4)).rposition(bpf) {
        if last + 1 < frames.len() {
            frames.drain(..=last);
        }
    }
}

/// The start of the function holding runtime address `at` of `file` (mapped as `m`) in
/// process `p`, as an offset in the file, from the function's FDE: for addresses no symbol
/// names (a stripped file without its debug file).
fn function_of(
    p: &mut Process,
    cfi: &mut FileCache<std::path::PathBuf, Cfi>,
    file: &std::path::Path,
    m: &Mapped,
    at: u64,
) -> Option<u64> {
    let source = p.source_of(file)?;
    let cfi = cfi.get_or_read(source.clone(), || Cfi::load(&source).ok())?;
    let bias = p.load_bias(file, cfi.base)?;
    let svma = at.checked_sub(bias)?;
    let start = cfi.function_start(svma)?;
    // The start's distance back from `at` is the same in the file as in memory.
    let offset = (at.checked_sub(m.start)?).checked_add(m.offset)?;
    offset.checked_sub(svma - start)
}

impl Symbolizer {
    /// The stacks of `event`: kernel first, then user, each only when it was captured.
    /// `entry_ret`: `word::ENTRY_RET` of a slot with `SLOT_STACK_AT_ENTRY`, else 0: a user
    /// address is the user stack's direct caller at a function's entry (a uprobe, an execute
    /// breakpoint), put back second; a kernel address is a fentry hit's function, put first
    /// where the unwinder from the trampoline left it out. `top`: the bytes the program
    /// copied at the user stack pointer (`tracer trace -k` at a call's return, `probe -s` at a
    /// user probe's hit): the stack is unwound from them by CFI as far as they reach (the
    /// caller of a wrapper such as libc's `syscall()`, which makes no frame, and code without
    /// frame pointers) and joined with the frame-pointer walk ([`spliced`]).
    pub fn stacks(
        &mut self,
        bpf: &Bpf,
        event: &Event,
        entry_ret: u64,
        top: Option<&[u8]>,
    ) -> Result<Vec<Stack>, Error> {
        let ids = (event.kstack, event.ustack);
        self.stacks_at(
            bpf,
            event.pid(),
            ids,
            entry_ret,
            Some(event.stack_taken()),
            top,
        )
    }

    /// The stack unwound by CFI from `top` (the bytes at the stack pointer) and `ip`, its
    /// first address, as far as the copy reaches: the wrapper's caller, and past it through
    /// code built without frame pointers; with how the unwind ended.
    fn unwound_top(&mut self, pid: u32, ip: u64, top: &[u8]) -> (Vec<u64>, unwind::UnwindEnd) {
        // Any base will do: the unwind reads nothing but the copy, at offsets from it. No
        // frame pointer was copied: one below the copy makes a frame whose rule needs it end
        // the unwind as `Astray`, where the frame-pointer walk goes on (0 would read as the
        // stack's root).
        const SP: u64 = 0x7ff0_0000_0000;
        let sampled = unwind::Sampled {
            ip,
            sp: SP,
            bp: SP - (1 << 20),
            stack: top,
        };
        self.unwind(pid, &sampled)
    }

    /// A streamed event's stacks taken in another task and at another time than its own: in
    /// process `pid`, within `taken` (a latency outlier's start); with no direct caller to
    /// put back and no copy of the top.
    pub fn stacks_taken_at(
        &mut self,
        bpf: &Bpf,
        (event, pid): (&Event, u32),
        taken: (u64, u64),
    ) -> Result<Vec<Stack>, Error> {
        let ids = (event.kstack, event.ustack);
        self.stacks_at(bpf, pid, ids, 0, Some(taken), None)
    }

    /// The stacks with these ids ([`NO_STACK`] for none) of process `pid`; `entry_ret` as for
    /// [`Symbolizer::stacks`].
    pub fn stacks_of(
        &mut self,
        bpf: &Bpf,
        pid: u32,
        kstack: i32,
        ustack: i32,
        entry_ret: u64,
    ) -> Result<Vec<Stack>, Error> {
        self.stacks_at(bpf, pid, (kstack, ustack), entry_ret, None, None)
    }

    /// [`Symbolizer::stacks_of`]; `taken`: when a streamed event took its stack ids (between
    /// its time and its span's end), whose stacks may have been recycled since
    /// ([`Symbolizer::recycle`]).
    fn stacks_at(
        &mut self,
        bpf: &Bpf,
        pid: u32,
        (kstack, ustack): (i32, i32),
        entry_ret: u64,
        taken: Option<(u64, u64)>,
        top: Option<&[u8]>,
    ) -> Result<Vec<Stack>, Error> {
        // No stack asked for (every streamed event without `-s`): nothing to look up.
        if kstack == NO_STACK && ustack == NO_STACK {
            return Ok(Vec::new());
        }
        if self.lost.contains(&(pid, kstack, ustack)) {
            return Ok(vec![Stack::Evicted]);
        }
        let mut out = Vec::new();
        // A side without frames is the side the task was not on only when the other side has
        // a stack; alone, it is a stack the kernel did not give, and said so.
        let neither = |id: i32| id == NO_STACK || id == NO_FRAMES;
        if neither(kstack) && neither(ustack) && (kstack == NO_FRAMES || ustack == NO_FRAMES) {
            self.no_frames += 1;
            out.push(Stack::NotCaptured(NO_FRAMES));
            return Ok(out);
        }
        for (id, space) in [(kstack, Space::Kernel), (ustack, Space::User)] {
            if neither(id) {
                continue;
            }
            let Ok(id) = u32::try_from(id) else {
                match id == STACK_TAKEN_LATE {
                    true => self.recycled_late += 1,
                    false => self.not_captured += 1,
                }
                out.push(Stack::NotCaptured(id));
                continue;
            };
            // A kernel `entry_ret` is a fentry hit's function; a user one a uprobe's caller.
            let kernel_entry = entry_ret >= tracer_common::KERNEL_SPACE_START;
            let (pid, entry_ret) = match (space, kernel_entry) {
                (Space::Kernel, true) => (0, entry_ret),
                (Space::Kernel, false) => (0, 0),
                (Space::User, true) => (pid, 0),
                (Space::User, false) => (pid, entry_ret),
            };
            let ips = match self.ips_taken(bpf, id, taken)? {
                Ok(ips) => ips,
                Err(stack) => {
                    out.push(stack);
                    continue;
                }
            };
            let unwound = match (space, top, ips.first()) {
                (Space::User, Some(top), Some(&ip)) => Some(self.unwound_top(pid, ip, top)),
                _ => None,
            };
            if let Some((top, end)) = &unwound {
                self.tally_top(top, *end, &ips, entry_ret);
            }
            // The unwound top is part of the stack: one stack id may have several (a walk cut
            // short in code without frame pointers).
            let key = match &unwound {
                Some((top, _)) if top.len() > 1 => top_key(top),
                _ => entry_ret,
            };
            match self.frames.get(&(pid, id, key)) {
                Some((made_of, frames)) if same(made_of, &ips) => {
                    out.push(Stack::Frames(Rc::clone(frames)));
                    continue;
                }
                _ => {}
            }
            let made_of = Rc::clone(&ips);
            let mut ips = ips.to_vec();
            let frames = match space {
                Space::Kernel => {
                    let mut frames = self.kernel_frames(&ips);
                    if entry_ret != 0 {
                        let function = self.kernel_frames(&[entry_ret]).remove(0);
                        if frames.first().map(|f| &f.symbol) != Some(&function.symbol) {
                            frames.insert(0, function);
                        }
                    }
                    frames
                }
                Space::User => {
                    with_entry_caller(&mut ips, entry_ret);
                    match &unwound {
                        Some((top, end)) => spliced(top, *end, &mut ips),
                        None => {
                            if self.cut_astray(pid, &mut ips) {
                                self.astray.insert((pid, id));
                            }
                        }
                    }
                    self.user_frames(pid, &ips)
                }
            };
            let frames = Frames::new(frames);
            (self.frames).insert((pid, id, key), (made_of, Rc::clone(&frames)));
            out.push(Stack::Frames(frames));
        }
        Ok(out)
    }

    /// Counts how a stack's copied top unwound ([`unwind::TopEnds`]): every event's, also
    /// when its frames are cached.
    fn tally_top(&mut self, top: &[u64], end: unwind::UnwindEnd, ips: &[u64], entry_ret: u64) {
        let mut walked = ips.to_vec();
        with_entry_caller(&mut walked, entry_ret);
        let resumes = walk_resumes(top, end, &walked).is_some_and(|at| at < walked.len());
        self.tops.tally(resumes, end);
    }

    /// The addresses of stack `id` as an event or count took it (`taken`: when a streamed
    /// event took it, see [`Symbolizer::stacks_at`]), or what shows in their place: a stack
    /// recycled since (`ESTALE`), or a counted one taken out of the map (a fold) as its cell
    /// began (the map holds no stack without frames).
    fn ips_taken(
        &mut self,
        bpf: &Bpf,
        id: u32,
        taken: Option<(u64, u64)>,
    ) -> Result<Result<Ips, Stack>, Error> {
        let held = taken.map_or(Held::Current, |at| self.held(id, at));
        let retired = match held {
            Held::Current => None,
            Held::Retired(ips) => Some(ips),
            // An event taken after the removal put its stack back in the map, where it
            // stays until recycled (a generation of its own): none there, or the same
            // one, and the event's is this one.
            Held::ThisOrCurrent(ips) => match self.current_ips(bpf, id, true)? {
                None => Some(ips),
                Some(current) if current.is_empty() || same(&current, &ips) => Some(ips),
                Some(_) => {
                    self.recycled_late += 1;
                    return Ok(Err(Stack::NotCaptured(-libc::ESTALE)));
                }
            },
            Held::Unknown => {
                self.recycled_late += 1;
                return Ok(Err(Stack::NotCaptured(-libc::ESTALE)));
            }
        };
        let ips = match retired {
            Some(ips) => ips,
            None => (self.current_ips(bpf, id, taken.is_some())?).unwrap_or_else(|| Rc::new([])),
        };
        if ips.is_empty() && taken.is_none() {
            self.evicted += 1;
            return Ok(Err(Stack::Evicted));
        }
        Ok(Ok(ips))
    }

    /// The ips of stack `id` as the map holds it now, read once per generation (`streamed`:
    /// then recycled, [`Symbolizer::recycle`]); `None` when the map has no such id.
    fn current_ips(&mut self, bpf: &Bpf, id: u32, streamed: bool) -> Result<Option<Ips>, Error> {
        if let Some(ips) = self.ips.get(&id) {
            return Ok(Some(Rc::clone(ips)));
        }
        let ips: Option<Ips> = bpf.stack(id)?.map(Rc::from);
        match (&ips, streamed) {
            // Not in the map: a streamed id is read again when asked (an event may put it
            // back); a counted one is gone for good.
            (None, true) => {}
            (None, false) => {
                self.ips.insert(id, Rc::new([]));
            }
            (Some(read), _) => {
                self.ips.insert(id, Rc::clone(read));
                if streamed {
                    self.read_since.insert(id);
                }
            }
        }
        Ok(ips)
    }

    /// Reads the stacks of a batch of streamed events from the map and removes them from it
    /// ([`Symbolizer::recycle`]) before any is symbolized: the map then holds only the stacks
    /// of events not read yet, while this batch is symbolized.
    pub fn prefetch<'e>(
        &mut self,
        bpf: &mut Bpf,
        events: impl Iterator<Item = &'e Event>,
        now: fn() -> u64,
    ) -> Result<(), Error> {
        for event in events {
            for id in [event.kstack, event.ustack] {
                let Ok(id) = u32::try_from(id) else {
                    continue;
                };
                if matches!(self.held(id, event.stack_taken()), Held::Current) {
                    self.current_ips(bpf, id, true)?;
                }
            }
        }
        self.recycle(bpf, now);
        Ok(())
    }

    /// What stack `id` held for an event that took it within `from..=by` ([`Held`]).
    fn held(&self, id: u32, (from, by): (u64, u64)) -> Held {
        let generations = (self.retired.get(&id)).map_or(&[][..], Vec::as_slice);
        for (k, (removal, ips)) in generations.iter().enumerate() {
            if by < removal.lo {
                return Held::Retired(Rc::clone(ips));
            }
            if from <= removal.hi {
                return match generations.get(k + 1) {
                    Some((_, next)) if same(next, ips) => Held::Retired(Rc::clone(ips)),
                    Some(_) => Held::Unknown,
                    None => Held::ThisOrCurrent(Rc::clone(ips)),
                };
            }
        }
        match self.last_removed.get(&id) {
            // Its generation is no longer kept.
            Some(removal) if from <= removal.hi && generations.is_empty() => Held::Unknown,
            _ => Held::Current,
        }
    }

    /// Removes the streamed stacks read since the last call from the map, so that it holds
    /// only stacks no event has been read with yet: a long run's stacks never fill it, and
    /// only those taken between two calls can meet in a hash bucket (`bpf_get_stackid`'s
    /// EEXIST). An event taken before the removal but read after it still has its stack,
    /// kept here for [`RETIRED_FOR_NS`]; one taken after it has the map's (a hot stack is
    /// read again once per call). `now`: the events' clock (CLOCK_MONOTONIC), read once the
    /// stacks are removed: a stack taken in the instant between its id's removal and that
    /// reading, hashed to the same bucket as another, would be shown as the older one.
    pub fn recycle(&mut self, bpf: &mut Bpf, now: fn() -> u64) {
        if self.read_since.is_empty() {
            return;
        }
        let ids: Vec<u32> = self.read_since.drain().collect();
        let mut newest = 0;
        for id in &ids {
            let lo = now();
            bpf.forget_stacks(&[*id]);
            let hi = now();
            newest = hi;
            let removal = Removal { lo, hi };
            self.last_removed.insert(*id, removal);
            let Some(ips) = self.ips.remove(id) else {
                continue;
            };
            let generations = self.retired.entry(*id).or_default();
            match generations.last_mut() {
                // The same stack again (a hot one): its generation lasts until now.
                Some(last) if same(&last.1, &ips) => last.0 = removal,
                _ => generations.push((removal, ips)),
            }
        }
        let oldest = newest.saturating_sub(RETIRED_FOR_NS);
        self.retired.retain(|_, generations| {
            generations.retain(|(removal, _)| removal.hi >= oldest);
            !generations.is_empty()
        });
    }

    /// The frame of one address of process `pid` (the innermost frame of a stack: a
    /// watchpoint hit's ip); kernel addresses are named as in stacks.
    pub fn frame(&mut self, pid: u32, addr: u64) -> Frame {
        if let Some(frame) = self.addresses.get(&(pid, addr)) {
            return frame.clone();
        }
        let frame = match addr >= tracer_common::KERNEL_SPACE_START {
            true => self.kernel_frames(&[addr]).remove(0),
            false => self.user_frames(pid, &[addr]).remove(0),
        };
        self.addresses.insert((pid, addr), frame.clone());
        frame
    }

    /// The frame of one address of a sampled call chain of `pid` (a perf sample's): `exact`
    /// for an interrupted instruction (the sample's ip), else a return address, looked up at
    /// the call before it. Kernel addresses are named as in stacks. Not cached: the caller
    /// names each address once.
    pub fn sampled_frame(&mut self, pid: u32, addr: u64, exact: bool) -> Frame {
        if addr >= tracer_common::KERNEL_SPACE_START {
            return self.kernel_frames(&[addr]).remove(0);
        }
        let trap_after = std::mem::replace(&mut self.trap_after, !exact);
        let frame = self.user_frames(pid, &[addr]).remove(0);
        self.trap_after = trap_after;
        frame
    }

    /// Adds mappings the kernel reported of `pid` (`maps`, oldest first: its mmap records) to
    /// those known of it, so that the libraries of a process gone before its frames are named
    /// are still named; with `whole` (it exec'd, and they are all it mapped since) they replace
    /// what is known. Nothing changes when they are all known already.
    pub fn add_maps(&mut self, pid: u32, maps: &[crate::kernel::symbols::Mapping], whole: bool) {
        let known = match self.processes.get(&pid) {
            Some(Some(p)) if !whole => p.maps().to_vec(),
            _ => Vec::new(),
        };
        // The latest mapping of an address range first, as `remember_maps` takes them.
        let mut all: Vec<_> = (maps.iter().rev())
            .filter(|m| !known.contains(m))
            .cloned()
            .collect();
        if all.is_empty() {
            return;
        }
        all.extend(known);
        self.remember_maps(pid, all, true);
    }

    /// Kernel addresses are named by the kernel, batch by batch (`namer`: the BPF object's
    /// [`KernelNamer`]), rather than from /proc/kallsyms ([`kernel::KernelNames`]).
    pub fn name_kernel_with(&mut self, namer: Option<KernelNamer>) {
        self.kernel.name_with(namer);
    }

    /// A symbolizer for the stacks `-s [WHICH]` asks of `bpf`'s programs: its kernel frames
    /// named by the kernel ([`Symbolizer::name_kernel_with`]) when they are shown.
    pub fn for_stacks(bpf: &mut Bpf, stack: Option<Option<Which>>) -> Symbolizer {
        let mut symbolizer = Symbolizer::default();
        let kernel = tracer_common::SLOT_STACK_KERNEL;
        if (flags_for(stack, false) | flags_for(stack, true)) & kernel != 0 {
            symbolizer.name_kernel_with(bpf.kernel_namer());
        }
        symbolizer
    }

    fn kernel_frames(&mut self, ips: &[u64]) -> Vec<Frame> {
        let mut frames = self.kernel.frames(ips);
        without_trampoline(&mut frames);
        let last = frames.last().and_then(|f| f.symbol.as_deref());
        if matches!(
            last,
            Some("kretprobe_trampoline" | "__kretprobe_trampoline")
        ) {
            self.kretprobe_cut += 1;
        }
        frames
    }

    /// Cuts a user stack walked by frame pointers (no copy of its top to unwind) where the
    /// walk left the process's code: a return address outside every executable mapping is
    /// what a frame pointer walk reads through code built without frame pointers (Debian's
    /// programs and libraries), and every frame after it is as wrong. Counted in
    /// [`Symbolizer::fp_astray`]; true when cut.
    fn cut_astray(&mut self, pid: u32, ips: &mut Vec<u64>) -> bool {
        let process = process_of(&mut self.processes, &mut self.exited, pid);
        let Some(p) = process.as_mut() else {
            return false;
        };
        let code = |p: &Process, addr: u64| {
            let at = addr.saturating_sub(1);
            p.mapping_at(at).is_some_and(|m| m.perms.contains('x'))
        };
        // The first address is where the task was: code, whatever the walk did after.
        let Some(cut) = (1..ips.len()).find(|&i| {
            if !code(p, ips[i]) && !p.is_mapped(ips[i].saturating_sub(1)) {
                // A library mapped since the process was read.
                let _ = p.refresh();
            }
            !code(p, ips[i])
        }) else {
            return false;
        };
        ips.truncate(cut);
        self.fp_astray += 1;
        true
    }

    /// Was process `pid`'s user stack `ustack` cut where its frame-pointer walk left the
    /// process's code ([`Symbolizer::cut_astray`])? Asked after its frames were made.
    pub fn cut_short(&self, pid: u32, ustack: i32) -> bool {
        u32::try_from(ustack).is_ok_and(|id| self.astray.contains(&(pid, id)))
    }

    fn user_frames(&mut self, pid: u32, ips: &[u64]) -> Vec<Frame> {
        let (trap_after, cfi) = (self.trap_after, &mut self.cfi);
        let without_lines = self.without_lines;
        let process = process_of(&mut self.processes, &mut self.exited, pid);
        ips.iter()
            .enumerate()
            .map(|(depth, &addr)| {
                // Outer frames hold return addresses, which point after the call: look up
                // the call itself, so a call that ends a function is not put in the next one.
                // A library mapped after the process was first read: reread its maps.
                if let Some(p) = process.as_mut().filter(|p| !p.is_mapped(addr)) {
                    let _ = p.refresh();
                }
                // A return address that is the uretprobe trampoline (the uprobes page's
                // start) has no call before it to look up.
                let in_uprobes = process
                    .as_ref()
                    .is_some_and(|p| p.uprobes_page(addr).is_some());
                let at = if (depth == 0 && !trap_after) || in_uprobes {
                    addr
                } else {
                    addr.saturating_sub(1)
                };
                let (symbol, location, build_id, mapped, function) = match process.as_mut() {
                    Some(p) => {
                        let mapping = p.mapping_at(at);
                        let mapped = mapping.and_then(|m| {
                            Some(Mapped {
                                start: m.start,
                                end: m.end,
                                offset: m.offset,
                                path: m.path.as_ref()?.display().to_string(),
                            })
                        });
                        let file = mapping.and_then(|m| m.path.clone());
                        let build_id = file.as_ref().and_then(|f| p.build_id(f));
                        let symbol = p.symbol_at(at);
                        let function = match (&symbol, &file, &mapped) {
                            (None, Some(file), Some(m)) => function_of(p, cfi, file, m, at),
                            _ => None,
                        };
                        let location = match without_lines {
                            true => None,
                            false => p.location(at),
                        };
                        (symbol, location, build_id, mapped, function)
                    }
                    None => (None, None, None, None, None),
                };
                Frame {
                    addr,
                    space: Space::User,
                    offset: symbol
                        .as_ref()
                        .map_or(0, |(_, offset)| offset + (addr - at)),
                    symbol: symbol.map(|(name, _)| name),
                    file: location.as_ref().map(|(file, _)| file.clone()),
                    line: location.map(|(_, line)| line),
                    build_id,
                    mapped,
                    function,
                }
            })
            .collect()
    }

    /// Unwinds a user stack of process `pid` from a sample's registers and stack copy
    /// (`--call-graph dwarf`): its addresses, innermost first, and how the unwind ended. The
    /// process's mappings are reread when the sampled ip lies outside them (a library loaded
    /// since), and its unwinder rebuilt when they changed. A process gone before its first
    /// sample was read, and not lent by the mmap records, keeps only its ip.
    pub fn unwind(&mut self, pid: u32, sampled: &unwind::Sampled) -> (Vec<u64>, unwind::UnwindEnd) {
        let process = process_of(&mut self.processes, &mut self.exited, pid);
        let Some(process) = process.as_mut() else {
            return (vec![sampled.ip], unwind::UnwindEnd::NoCfi);
        };
        if !process.is_mapped(sampled.ip) {
            let _ = process.refresh();
        }
        let version = process.version();
        let built = self.unwinders.get(&pid).is_some_and(|(v, _)| *v == version);
        if !built {
            let mut unwinder = Unwinder::default();
            for file in process.code_files() {
                let source = &file.source;
                let cfi = (self.cfi).get_or_read(source.clone(), || Cfi::load(source).ok());
                let Some(cfi) = cfi.as_ref() else { continue };
                let Some(bias) = process.load_bias(&file.path, cfi.base) else {
                    continue;
                };
                let name = file.path.display().to_string();
                unwinder.add(name, cfi, file.avma, bias);
            }
            self.vdso_cfi.add_to(&mut unwinder, process);
            self.unwinders.insert(pid, (version, unwinder));
        }
        let (_, unwinder) = self.unwinders.get_mut(&pid).expect("built above");
        unwinder.unwind(sampled)
    }

    /// Forgets the unwinder of `pid` (it exited; its samples were unwound): its frames are
    /// still named from its mappings.
    pub fn drop_unwinder(&mut self, pid: u32) {
        self.unwinders.remove(&pid);
    }

    /// The frames of an unwound user stack of `pid` (from [`Symbolizer::unwind`]): the first
    /// address is the sampled instruction, the others return addresses.
    pub fn unwound_frames(&mut self, pid: u32, ips: &[u64]) -> Vec<Frame> {
        let trap_after = std::mem::replace(&mut self.trap_after, false);
        let frames = self.user_frames(pid, ips);
        self.trap_after = trap_after;
        frames
    }

    /// Takes over a process already read (a watched one): its symbols are not loaded twice,
    /// and a command that exits before its last hits are read still resolves from it.
    pub fn adopt(&mut self, pid: u32, process: Process) {
        self.processes.insert(pid, Some(process));
    }

    /// Rereads the mappings of `pid` while it runs (read first if unknown), so that its
    /// stacks still resolve, libraries included, when they are only read after it exited
    /// (counted stacks are symbolized at the end of a run).
    pub fn keep_mapped(&mut self, pid: u32) {
        match self.processes.get_mut(&pid) {
            Some(Some(process)) => {
                let _ = process.refresh();
            }
            _ => {
                if let Ok(process) = Process::new(pid) {
                    self.processes.insert(pid, Some(process));
                }
            }
        }
    }

    /// Reads the mappings of `pid` if it is not known yet (and runs); a process known, or
    /// gone, is left as it is.
    pub fn remember(&mut self, pid: u32) {
        if !self.processes.contains_key(&pid) {
            // A process that is exiting has no mappings left to read: not known yet, then.
            if let Some(process) = Process::new(pid).ok().filter(|p| !p.maps().is_empty()) {
                self.processes.insert(pid, Some(process));
            }
        }
    }

    /// Takes `maps` (from the kernel's mmap records) as the mappings of `pid` when it was not
    /// read from /proc (it exited first), or `whole` (they are all it mapped since its exec):
    /// its frames are then named from those files. Otherwise they are newer than what was
    /// read, and join it (`Process::add_newer`).
    pub fn remember_maps(
        &mut self,
        pid: u32,
        maps: Vec<crate::kernel::symbols::Mapping>,
        whole: bool,
    ) {
        if maps.is_empty() {
            return;
        }
        // Known, and the records are not whole (the tracker opened after its exec): they add
        // to what was read, as `watch -- COMMAND`'s libraries, mapped after it was adopted.
        if let Some(Some(process)) = self.processes.get_mut(&pid) {
            if !whole && !process.maps().is_empty() {
                process.add_newer(maps);
                return;
            }
        }
        // Counted as exited when /proc could not be read: it is not, now.
        if let Some(None) = self.processes.remove(&pid) {
            self.exited = self.exited.saturating_sub(1);
        }
        // Not whole: the records began after its exec (a process started just before the
        // tracker opened), and /proc is read in their place while it runs.
        let process = match whole {
            true => Process::with_maps(pid, maps),
            false => Process::with_later_maps(pid, maps),
        };
        self.processes.insert(pid, Some(process));
    }

    /// Forgets processes that have exited and whose stacks are printed (their mappings, stacks
    /// and addresses: a new process that takes the pid is read afresh), and stacks removed
    /// from the stack map (the id may come back holding another stack).
    pub fn forget(&mut self, pids: &HashSet<u32>, ids: &HashSet<u32>) {
        self.processes.retain(|pid, _| !pids.contains(pid));
        self.unwinders.retain(|pid, _| !pids.contains(pid));
        self.frames
            .retain(|(pid, id, _), _| !pids.contains(pid) && !ids.contains(id));
        self.addresses.retain(|(pid, _), _| !pids.contains(pid));
        self.ips.retain(|id, _| !ids.contains(id));
        self.lost.retain(|(pid, _, _)| !pids.contains(pid));
        (self.astray).retain(|(pid, id)| !pids.contains(pid) && !ids.contains(id));
        // What was read of files no process has used for a minute goes (checked every 10 s).
        let now = std::time::Instant::now();
        if self
            .swept
            .is_none_or(|at| now.duration_since(at) >= FILES_SWEPT_EVERY)
        {
            self.swept = Some(now);
            self.cfi.sweep(now, FILES_KEPT_UNUSED);
            crate::kernel::symbols::sweep_files(FILES_KEPT_UNUSED);
        }
    }

    /// Marks the counted stack (`pid`, `kstack`, `ustack`) lost: one of its ids was removed
    /// from the stack map after it began to be counted.
    pub fn mark_lost(&mut self, pid: u32, kstack: i32, ustack: i32) {
        if self.lost.insert((pid, kstack, ustack)) {
            self.evicted += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        spliced, with_entry_caller, without_trampoline, Frame, Held, Removal, Space, Symbolizer,
        STACK_TAKEN_LATE,
    };
    use crate::kernel::unwind::UnwindEnd;

    #[test]
    fn a_recycled_id_is_told_by_when_it_was_taken() {
        let mut symbolizer = Symbolizer::default();
        let old: super::Ips = std::rc::Rc::from(&[1u64, 2][..]);
        let removal = Removal { lo: 100, hi: 200 };
        symbolizer.retired.insert(7, vec![(removal, old)]);
        symbolizer.last_removed.insert(7, removal);
        // Taken before the removal began: the retired stack, however late its event is read.
        assert!(matches!(symbolizer.held(7, (40, 99)), Held::Retired(_)));
        // A span that reaches into the removal (a slow walk, a preemption): either side.
        assert!(matches!(
            symbolizer.held(7, (40, 100)),
            Held::ThisOrCurrent(_)
        ));
        assert!(matches!(
            symbolizer.held(7, (150, 150)),
            Held::ThisOrCurrent(_)
        ));
        // Taken after it: the map's stack.
        assert!(matches!(symbolizer.held(7, (201, 260)), Held::Current));
        // An id never recycled: the map's.
        assert!(matches!(symbolizer.held(8, (40, 99)), Held::Current));
    }

    #[test]
    fn stack_spans_round_up_and_end_at_the_late_mark() {
        use tracer_common::{stack_span_bits, Event, STACK_SPAN_MAX, STACK_SPAN_SHIFT};
        let unit = 1u64 << STACK_SPAN_SHIFT;
        let by = |ns| {
            // The span's bits above the fault bits, which it leaves alone.
            let event = Event {
                time_ns: 1_000,
                pid_tgid: 0,
                data: [0; tracer_common::DATA_WORDS],
                fields: [0; tracer_common::FIELD_READS],
                slot: 0,
                cpu: 0,
                str_bytes: 0,
                kstack: 0,
                ustack: 0,
                field_faults: stack_span_bits(ns).unwrap() | 0b101,
                comm: [0; 16],
            };
            event.stack_taken().1
        };
        // Never earlier than the ids were taken: rounded up to the next unit.
        assert_eq!(by(0), 1_000 + unit);
        assert_eq!(by(unit - 1), 1_000 + unit);
        assert_eq!(by(unit), 1_000 + 2 * unit);
        // The fault bits below are left alone.
        assert_eq!(stack_span_bits(0).unwrap() & 0xffff, 0);
        let longest = (u64::from(STACK_SPAN_MAX) - 1) * unit;
        assert!(stack_span_bits(longest).is_some());
        assert_eq!(stack_span_bits(longest + unit), None);
    }

    #[test]
    fn ids_taken_late_read_as_the_recycled_stack_errno() {
        // The BPF side has no libc: its constant must be the errno the output names.
        assert_eq!(STACK_TAKEN_LATE, -libc::ESTALE);
    }

    #[test]
    fn trampoline_frames_leave_the_stack() {
        let frame = |symbol: &str| Frame {
            addr: 1,
            space: Space::Kernel,
            symbol: Some(symbol.to_string()),
            offset: 0,
            file: None,
            line: None,
            build_id: None,
            mapped: None,
            function: None,
        };
        let names = |frames: &[Frame]| -> Vec<String> {
            frames.iter().map(|f| f.symbol.clone().unwrap()).collect()
        };
        let mut frames = vec![
            frame("bpf_prog_f76b4b433cba6a05_fn_entry [bpf]"),
            frame("bpf_trampoline_6442575054 [bpf]"),
            frame("vfs_read"),
            frame("ksys_read"),
        ];
        without_trampoline(&mut frames);
        assert_eq!(names(&frames), ["vfs_read", "ksys_read"]);
        // A kprobe's stack, and a stack that would be left empty, stay as they are.
        let mut frames = vec![frame("vfs_read"), frame("ksys_read")];
        without_trampoline(&mut frames);
        assert_eq!(names(&frames), ["vfs_read", "ksys_read"]);
        let mut frames = vec![frame("bpf_trampoline_1 [bpf]")];
        without_trampoline(&mut frames);
        assert_eq!(names(&frames), ["bpf_trampoline_1 [bpf]"]);
    }

    #[test]
    fn an_entry_hit_gets_its_caller_back_once() {
        // 5.10: the walk from the entry skipped the caller (0x20).
        let mut ips = vec![0x10, 0x30, 0x40];
        with_entry_caller(&mut ips, 0x20);
        assert_eq!(ips, [0x10, 0x20, 0x30, 0x40]);
        // 6.1 on: the kernel already has it.
        let mut ips = vec![0x10, 0x20, 0x30];
        with_entry_caller(&mut ips, 0x20);
        assert_eq!(ips, [0x10, 0x20, 0x30]);
        // Not an entry hit, or the read failed; an empty stack stays empty.
        let mut ips = vec![0x10, 0x30];
        with_entry_caller(&mut ips, 0);
        assert_eq!(ips, [0x10, 0x30]);
        let mut ips = Vec::new();
        with_entry_caller(&mut ips, 0x20);
        assert!(ips.is_empty());
    }

    /// The CFI-unwound top and the frame-pointer walk of one stack, joined: 1 is the first
    /// address, the others return addresses.
    #[test]
    fn a_process_known_by_its_later_records_is_named_from_proc() {
        // The records of a process started just before the tracker opened: its program's
        // code mapping, without the offset-0 mapping that places its symbols.
        #[inline(never)]
        fn marker() -> u64 {
            std::hint::black_box(7)
        }
        let pid = std::process::id();
        let addr = marker as *const () as u64;
        let maps = crate::kernel::symbols::parse_maps(
            &std::fs::read_to_string("/proc/self/maps").unwrap(),
        );
        let code: Vec<_> = maps
            .into_iter()
            .filter(|m| addr >= m.start && addr < m.end)
            .collect();
        assert_eq!(code.len(), 1, "{code:?}");
        assert_ne!(code[0].offset, 0);
        let named = |whole| {
            let mut symbolizer = Symbolizer::default();
            symbolizer.remember_maps(pid, code.clone(), whole);
            symbolizer.frame(pid, addr).symbol
        };
        let symbol = named(false).unwrap_or_default();
        assert!(symbol.ends_with("::marker"), "{symbol}");
        // Whole (its exec was seen), they are all there is: not placed.
        assert_eq!(named(true), None);
    }

    #[test]
    fn an_unwound_top_is_joined_with_the_walk_where_they_meet() {
        let joined = |unwound: &[u64], end, walked: &[u64]| {
            let mut walked = walked.to_vec();
            spliced(unwound, end, &mut walked);
            walked
        };
        // A wrapper that made no frame: the walk skipped its caller 2; the unwind stopped at
        // 2's frame pointer (none copied), where the walk is right.
        assert_eq!(joined(&[1, 2], UnwindEnd::Astray, &[1, 3, 4]), [1, 2, 3, 4]);
        // Code without frame pointers: the walk went astray after 2; the unwind went deeper.
        assert_eq!(
            joined(&[1, 2, 5, 6], UnwindEnd::CopyEnded, &[1, 2, 99]),
            [1, 2, 5, 6]
        );
        // The two meet at the unwind's last frame: the walk goes on from there.
        assert_eq!(
            joined(&[1, 2, 3], UnwindEnd::Astray, &[1, 3, 4]),
            [1, 2, 3, 4]
        );
        // Nothing in common and the copy ran out in code without frame pointers: the walk's
        // frames are garbage there, left out.
        assert_eq!(
            joined(&[1, 2, 5], UnwindEnd::CopyEnded, &[1, 98, 99]),
            [1, 2, 5]
        );
        // An unwind of one frame, or of another stack, changes nothing.
        assert_eq!(joined(&[1], UnwindEnd::Astray, &[1, 3]), [1, 3]);
        assert_eq!(joined(&[7, 2], UnwindEnd::Astray, &[1, 3]), [1, 3]);
    }
}
