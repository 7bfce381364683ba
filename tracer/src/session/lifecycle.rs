//! The run every command shares: fork the `-- COMMAND` held (or adopt `-p PID`), follow its
//! process tree in BPF, start the signal handlers and print the banner, release the command,
//! run the event loop to its end, and word that end once for every command.

use std::time::{Duration, Instant};

use tracer_common::{TRACK_ACTIVE, TRACK_PENDING};

use super::event_loop::{EventLoop, RunEnd, Sink};
use crate::bpf::Bpf;
use crate::kernel::tracefs::Tracefs;
use crate::launch::{self, AtEnd, Fate, Launched};
use crate::output::summary::Banner;
use crate::perf;
use crate::plan::Whom;
use crate::probe;
use crate::Error;

/// Where a `-- COMMAND` waits until everything is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Blocked before its exec: the process filter catches it from the exec on.
    BeforeExec,
    /// Stopped right after its exec: its executable is mapped (watched symbols, PIE included,
    /// and stacks resolve) and it is the command already.
    AfterExec,
}

/// A run's target and the programs that keep its view right.
pub struct Session {
    launched: Option<Launched>,
    hold: Hold,
    command: Vec<String>,
    /// `-p PID`: the run ends when it exits, if the command's sink says so.
    adopted: Option<u32>,
    event_loop: Option<EventLoop>,
    /// Programs beside the probes (comm cache, tracking); closing them detaches.
    helpers: Vec<perf::Event>,
    /// Kills the command's tree should tracer be killed (guard.rs); dropped last.
    guard: Option<crate::guard::Guard>,
    /// [`Session::follow_before_probes`] left the exit tracking to [`Session::follow`].
    exit_to_follow: bool,
}

impl Session {
    /// Forks `-- COMMAND` held at `hold` (when `whom` is one), else adopts `-p`'s process
    /// (when it gave one); `at_end` says what becomes of the command if tracing ends first. Call before any thread exists: the
    /// child of a fork may only make async-signal-safe calls.
    pub fn start(whom: &Whom, hold: Hold, at_end: AtEnd) -> Result<Session, Error> {
        let (command, pid) = (whom.command(), whom.pid());
        if let Some(program) = command.first() {
            launch::check_executable(program)?;
        }
        let launched = match (command.is_empty(), hold) {
            (true, _) => None,
            (false, Hold::BeforeExec) => Some(launch::launch_held(command, at_end)?),
            (false, Hold::AfterExec) => Some(launch::launch_stopped_at_exec(command, at_end)?),
        };
        Ok(Session {
            launched,
            hold,
            command: command.to_vec(),
            adopted: pid,
            event_loop: None,
            helpers: Vec::new(),
            guard: None,
            exit_to_follow: false,
        })
    }

    /// The launched command's pid, else the adopted one.
    pub fn pid(&self) -> Option<u32> {
        self.launched.as_ref().map(Launched::pid).or(self.adopted)
    }

    pub fn is_launched(&self) -> bool {
        self.launched.is_some()
    }

    /// Whom the run watches, for banners: "`cmd args`", "process N", or nothing.
    pub fn whom(&self) -> Option<String> {
        match (&self.launched, self.adopted) {
            (Some(_), _) => Some(format!("`{}`", self.command.join(" "))),
            (None, Some(pid)) => Some(format!("process {pid}")),
            (None, None) => None,
        }
    }

    /// Keeps the comm cache's program attached for the run, when the kernel has its
    /// tracepoint. Call before any probe is attached: a rename it missed would stay cached.
    pub fn cache_comms(
        &mut self,
        bpf: &mut Bpf,
        rename_tracepoint: Option<u64>,
    ) -> Result<(), Error> {
        if rename_tracepoint.is_some() {
            probe::start_comm_cache(bpf)?;
        }
        Ok(())
    }

    /// `-- COMMAND`: the fork/exec/exit tracking programs follow its process tree, from its
    /// exec on (held before it) or from now (stopped after it).
    pub fn follow(&mut self, bpf: &mut Bpf, fs: &Tracefs) -> Result<(), Error> {
        let Some(pid) = self.launched.as_ref().map(Launched::pid) else {
            return Ok(());
        };
        match self.exit_to_follow {
            true => {
                bpf.attach_tracking_exit()?;
                self.exit_to_follow = false;
                self.guard(bpf);
                return Ok(());
            }
            false => self.helpers.extend(probe::start_tracking(bpf, fs, true)?),
        }
        let state = match self.hold {
            Hold::BeforeExec => TRACK_PENDING,
            Hold::AfterExec => TRACK_ACTIVE,
        };
        bpf.track(pid, state)?;
        self.guard(bpf);
        Ok(())
    }

    /// [`Session::follow`] in two steps, for probes of the scheduler's tracepoints: before the
    /// probes are attached, the exec and fork tracking (run before the probes' programs at a
    /// tracepoint both use, so that a probe of `sched_process_exec` sees the command's own
    /// exec, when no other perf user of the tracepoint registered the kernel's perf callback
    /// first: the slot's `SLOT_AT_EXEC` covers that case); `follow`, after them, the exit
    /// tracking (run after them: a probe of `sched_process_exit` sees the process before it
    /// is forgotten).
    pub fn follow_before_probes(&mut self, bpf: &mut Bpf, fs: &Tracefs) -> Result<(), Error> {
        let Some(pid) = self.launched.as_ref().map(Launched::pid) else {
            return Ok(());
        };
        self.helpers.extend(probe::start_tracking(bpf, fs, false)?);
        let state = match self.hold {
            Hold::BeforeExec => TRACK_PENDING,
            Hold::AfterExec => TRACK_ACTIVE,
        };
        bpf.track(pid, state)?;
        self.exit_to_follow = true;
        Ok(())
    }

    /// Starts the guard that kills the command's tree should tracer be killed (guard.rs),
    /// once. [`Session::follow`] does; a command whose programs see every process (`trace
    /// -a`) calls it before they are attached, so that the guard's own start and its wait are
    /// not among the calls it shows. A command left running at the end (`--leave-running`)
    /// outlives tracer by design, and gets none.
    pub fn guard(&mut self, bpf: &Bpf) {
        let stops = self.launched.as_ref().map(Launched::at_end) == Some(AtEnd::Stop);
        if !stops || self.guard.is_some() {
            return;
        }
        match crate::guard::Guard::spawn(bpf.tracked_map()) {
            Ok(guard) => self.guard = Some(guard),
            Err(e) => crate::output::notes::note(format_args!(
                "the command's children would outlive tracer if it were killed: no guard \
                 process ({e})"
            )),
        }
    }

    /// `-p PID[,PID]` followed the way a `-- COMMAND` is: each process, all its threads, and
    /// the children it starts from now on.
    pub fn follow_adopted(
        &mut self,
        bpf: &mut Bpf,
        fs: &Tracefs,
        pids: &[u32],
    ) -> Result<(), Error> {
        if pids.is_empty() {
            return Ok(());
        }
        self.helpers.extend(probe::start_tracking(bpf, fs, true)?);
        for &pid in pids {
            if !alive(pid) {
                return Err(Error::usage(
                    format!("no process {pid}"),
                    vec!["check the id with `ps -p PID`".into()],
                ));
            }
            bpf.track(pid, TRACK_ACTIVE)?;
        }
        Ok(())
    }

    /// Starts the signal handlers (from now on Ctrl-C ends the run cleanly) and prints the
    /// banner. The command is still held.
    pub fn begin(&mut self, banner: &Banner) -> Result<(), Error> {
        self.event_loop = Some(EventLoop::new()?);
        crate::output::summary::print_banner(banner);
        Ok(())
    }

    /// Lets the held command run.
    pub fn release(&mut self) -> Result<(), Error> {
        match self.launched.as_mut() {
            Some(child) => child.release(),
            None => Ok(()),
        }
    }

    /// Releases the command and runs the event loop until a signal, `duration`, the sink's
    /// stop or the command's exit; the rings behind `ring_fds` are drained in every case.
    pub fn run(
        &mut self,
        sink: &mut impl Sink,
        ring_fds: Vec<std::os::fd::RawFd>,
        duration: Option<Duration>,
    ) -> Result<Outcome, Error> {
        let event_loop = match self.event_loop.take() {
            Some(event_loop) => event_loop,
            None => EventLoop::new()?,
        };
        self.release()?;
        let started = Instant::now();
        let (mut end, ended) = event_loop.run(
            sink,
            ring_fds,
            self.launched.as_mut(),
            self.adopted,
            duration,
        )?;
        // The run's length: up to its end, before the stop and the last drain.
        let elapsed = ended.duration_since(started);
        let mut fate = Fate::Exited;
        if let Some(child) = self.launched.as_mut() {
            if end == RunEnd::Interrupted {
                if let Some(code) = child.exits_within(Duration::from_millis(200)) {
                    end = RunEnd::CommandExited(code);
                }
            }
            if !matches!(end, RunEnd::CommandExited(_)) {
                fate = child.stop();
            }
        }
        Ok(Outcome {
            end,
            elapsed,
            adopted: self.adopted,
            stopped: fate == Fate::Stopped,
            left_running: (fate == Fate::LeftRunning).then(|| self.pid()).flatten(),
        })
    }
}

/// Whether process or thread `pid` still runs (an adopted `-p PID` that exits ends the run,
/// though its parent has not reaped it yet).
pub use crate::launch::alive;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub end: RunEnd,
    pub elapsed: Duration,
    adopted: Option<u32>,
    /// The launched command was still running when the run ended, and was stopped.
    pub stopped: bool,
    /// The launched command (this pid) was still running when the run ended, and was left
    /// running (`--leave-running`).
    pub left_running: Option<u32>,
}

impl Outcome {
    pub fn new(end: RunEnd, elapsed: Duration, adopted: Option<u32>) -> Outcome {
        Outcome {
            end,
            elapsed,
            adopted,
            stopped: false,
            left_running: None,
        }
    }

    /// Why the run ended, worded once for every command; `counted` is what `-c` counts, in
    /// `unit`s.
    pub fn why(&self, counted: u64, unit: &str) -> String {
        let why = self.end_reason(counted, unit);
        match (self.stopped, self.left_running) {
            (true, _) => format!("{why}, command stopped (SIGTERM to it and its children)"),
            (false, Some(pid)) => format!("{why}, command left running (pid {pid})"),
            (false, None) => why,
        }
    }

    fn end_reason(&self, counted: u64, unit: &str) -> String {
        match self.end {
            RunEnd::Interrupted => "interrupted".to_string(),
            RunEnd::Duration => format!("after {:.1} s (-d)", self.elapsed.as_secs_f64()),
            RunEnd::Count => format!("after {counted} {unit} (-c)"),
            RunEnd::CommandExited(code) => format!("command exited with status {code}"),
            RunEnd::TargetGone => match self.adopted {
                Some(pid) => format!("process {pid} exited"),
                None => "the target is gone".to_string(),
            },
        }
    }

    /// The process exit status: the command's own when it ended the run, else 0.
    pub fn exit_code(&self) -> i32 {
        match self.end {
            RunEnd::CommandExited(code) => code,
            _ => 0,
        }
    }
}

/// A launched command's process tree followed for its guard alone (guard.rs): `stat`, which
/// loads no programs of its own, has its command's background jobs die with a killed tracer
/// as the other commands do. Dropped once the run has ended as it should.
pub struct TreeGuard {
    // Dropped in this order: the guard told first, then the tracking programs.
    _guard: crate::guard::Guard,
    _tracking: Option<perf::Event>,
    _bpf: Bpf,
}

/// Follows the tree of `pid` (held before its exec) with the tracking programs only, and
/// starts its guard. Without BPF (an unprivileged `stat`), it says what that leaves.
pub fn guard_tree(pid: u32) -> Option<TreeGuard> {
    let follow = || -> Result<TreeGuard, Error> {
        let fs = Tracefs::locate()?;
        let mut bpf = Bpf::load_with(crate::bpf::Sizing {
            uses: tracer_common::USES_TRACKED,
            ..Default::default()
        })?;
        let tracking = probe::start_tracking(&mut bpf, &fs, true)?;
        bpf.track(pid, TRACK_PENDING)?;
        let guard = crate::guard::Guard::spawn(bpf.tracked_map()).map_err(|e| Error::Runtime {
            message: e.to_string(),
            hints: Vec::new(),
        })?;
        Ok(TreeGuard {
            _guard: guard,
            _tracking: tracking,
            _bpf: bpf,
        })
    };
    match follow() {
        Ok(tree) => Some(tree),
        Err(e) => {
            crate::output::notes::note(format_args!(
                "the command's children would outlive tracer if it were killed: no guard \
                 process ({e})"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_end_is_worded_once() {
        let at = |end, adopted| Outcome::new(end, Duration::from_millis(1500), adopted);
        assert_eq!(
            at(RunEnd::Interrupted, None).why(3, "events"),
            "interrupted"
        );
        assert_eq!(
            at(RunEnd::Duration, None).why(3, "events"),
            "after 1.5 s (-d)"
        );
        assert_eq!(at(RunEnd::Count, None).why(3, "hits"), "after 3 hits (-c)");
        assert_eq!(
            at(RunEnd::CommandExited(7), None).why(0, "events"),
            "command exited with status 7"
        );
        assert_eq!(
            at(RunEnd::TargetGone, Some(42)).why(0, "hits"),
            "process 42 exited"
        );
        assert_eq!(
            at(RunEnd::TargetGone, None).why(0, "hits"),
            "the target is gone"
        );
        let mut stopped = at(RunEnd::Duration, None);
        stopped.stopped = true;
        assert_eq!(
            stopped.why(0, "events"),
            "after 1.5 s (-d), command stopped (SIGTERM to it and its children)"
        );
        let mut left = at(RunEnd::Count, None);
        left.left_running = Some(4321);
        assert_eq!(
            left.why(1, "events"),
            "after 1 events (-c), command left running (pid 4321)"
        );
    }

    #[test]
    fn the_command_status_passes_through() {
        let at = |end| Outcome::new(end, Duration::ZERO, None).exit_code();
        assert_eq!(at(RunEnd::CommandExited(3)), 3);
        assert_eq!(at(RunEnd::Interrupted), 0);
        assert_eq!(at(RunEnd::Count), 0);
    }
}
