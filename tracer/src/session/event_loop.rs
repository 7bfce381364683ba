//! The event loop: ring readiness, the 100 ms tick, SIGINT/SIGTERM, `-d`, and the launched
//! command's exit, handed to a command's [`Sink`].

use crate::Error;

/// Registers `fd` with the tokio reactor for readability.
///
/// The caller must keep the fd open, unchanged, for the life of the returned `AsyncFd`: rings
/// outlive the event loop's runtime (`EventLoop::run` consumes and drops it while the rings
/// are still open), and a pidfd is owned by its `AsyncFd`.
#[allow(unsafe_code)]
pub fn readable<T: std::os::fd::AsRawFd>(fd: T) -> std::io::Result<tokio::io::unix::AsyncFd<T>> {
    // SAFETY: per the contract above, the fd stays open and refers to the same file for the
    // whole life of the AsyncFd (tokio's I/O-safety requirement for register_with_interest).
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    Interrupted,
    /// `-d` elapsed.
    Duration,
    /// The sink said stop (`-c` reached).
    Count,
    /// The launched command exited with this status.
    CommandExited(i32),
    /// The sink saw its target go away (a watched process exited).
    TargetGone,
}

/// What a command does with the event loop's wakeups.
pub trait Sink {
    /// Drains the rings and handles the events; `true` stops the run (`-c` reached).
    fn drain(&mut self) -> Result<bool, Error>;
    /// Whether events stream through the rings. A sink that only counts in the kernel has
    /// nothing for the 10 ms drain of sparse events to show sooner: its loop wakes only at the
    /// 100 ms tick, and spares the traced CPUs the wakeups in between.
    fn streams(&self) -> bool {
        true
    }
    /// Called every 100 ms after a drain (loss reports, hints, `-I` reports); `true` ends the
    /// run because the target is gone (an adopted `-p PID` is checked by the loop itself).
    fn tick(&mut self) -> Result<bool, Error> {
        Ok(false)
    }
    /// For a sink that follows the command's descendants until the last one exits (`strace
    /// -f`): how many of the followed tasks still run. `None`, the default: the run ends when
    /// the command (or the `-p` process) exits.
    fn followed_left(&self) -> Result<Option<usize>, Error> {
        Ok(None)
    }
    /// The run is over: stop the sources in the kernel (`Bpf::stop`), so that the last drain,
    /// which follows, leaves nothing behind and the counters read after it are final.
    fn stop(&mut self) -> Result<(), Error>;
}

/// The async runtime and the handlers of the signals that end a run. Created before a command
/// prints its banner, so that a signal from then on ends the run cleanly (summary, exit 0)
/// instead of killing it.
pub struct EventLoop {
    runtime: tokio::runtime::Runtime,
    signals: Signals,
}

/// The signals that end a run cleanly: SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal went
/// away) and SIGQUIT (Ctrl-\\): each stops the probes, drains the rings and prints the summary.
pub struct Signals([tokio::signal::unix::Signal; 4]);

impl Signals {
    /// Installs the handlers; call inside the runtime.
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals([
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
            signal(SignalKind::quit())?,
        ]))
    }

    /// Waits for any of them.
    pub async fn recv(&mut self) {
        let [int, term, hup, quit] = &mut self.0;
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
            _ = quit.recv() => {}
        }
    }
}

/// A raw fd for tokio's readiness: the rings own the fds and outlive the loop.
struct Fd(std::os::fd::RawFd);

impl std::os::fd::AsRawFd for Fd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

impl EventLoop {
    pub fn new() -> Result<EventLoop, Error> {
        let runtime_error = |what: &str, e: std::io::Error| Error::Runtime {
            message: format!("cannot {what}: {e}"),
            hints: Vec::new(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| runtime_error("start the event loop", e))?;
        let signals = {
            let _context = runtime.enter();
            Signals::new().map_err(|e| runtime_error("handle signals", e))?
        };
        Ok(EventLoop { runtime, signals })
    }

    /// The runtime and the signal handlers, for a command that drives its own waiting
    /// (`tracer stat`, which has counters instead of rings).
    pub fn parts(&mut self) -> (&tokio::runtime::Runtime, &mut Signals) {
        (&self.runtime, &mut self.signals)
    }

    /// Runs until a signal, the duration, the sink's stop or the command's exit; then the
    /// sink stops its sources and the rings are drained one last time, in every case. Returns
    /// why the run ended and when (before the stop and the last drain).
    pub fn run(
        mut self,
        sink: &mut impl Sink,
        ring_fds: Vec<std::os::fd::RawFd>,
        mut launched: Option<&mut crate::launch::Launched>,
        adopted: Option<u32>,
        duration: Option<std::time::Duration>,
    ) -> Result<(RunEnd, std::time::Instant), Error> {
        use std::time::Duration;
        let io_error = |e: std::io::Error| Error::Runtime {
            message: format!("event loop: {e}"),
            hints: Vec::new(),
        };
        let signals = &mut self.signals;
        let streams = sink.streams();
        let end = self.runtime.block_on(async {
            // One readiness task per ring; any wakeup drains all rings.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
            for fd in ring_fds {
                let tx = tx.clone();
                let fd = readable(Fd(fd)).map_err(io_error)?;
                tokio::spawn(async move {
                    while let Ok(mut guard) = fd.readable().await {
                        // A per-task event whose task exited reports POLLHUP for good:
                        // readiness can no longer be cleared, and waiting again would spin.
                        // Its ring is still drained on every tick and at the end.
                        let hung_up = guard.ready().is_read_closed();
                        guard.clear_ready();
                        let _ = tx.try_send(());
                        if hung_up {
                            break;
                        }
                    }
                });
            }
            let pidfd = match launched.as_ref() {
                Some(child) => Some(readable(child.pidfd()?).map_err(io_error)?),
                None => None,
            };
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            // Events too sparse to fill a ring to its wakeup point are drained every 10 ms, so
            // that one shows within about that of its firing; a flood still wakes the reader
            // by the watermark, in batches. A drain of empty rings reads two words per ring.
            let mut sparse = tokio::time::interval(SPARSE_DRAIN);
            sparse.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let deadline = tokio::time::sleep(duration.unwrap_or(Duration::from_secs(u64::MAX / 4)));
            tokio::pin!(deadline);
            // The target's end, held while tasks the sink follows still run (strace -f: a
            // background job that outlives its shell is traced to its own exit).
            let mut ended: Option<RunEnd> = None;
            loop {
                // The drivers that see signals, timers and the command's exit run only when
                // the loop yields: under a flood a wakeup is always waiting, and without this
                // they ran once per 128 drains, tokio's budget (`-d 0.5` ended after 5.5 s on
                // an emulated CPU, each drain taking ~40 ms there).
                tokio::task::yield_now().await;
                // Whether to ask the sink what it still follows: on the timers and the exit, not
                // on every ring wakeup (it walks a map and /proc).
                let mut look = true;
                // In this order: the ring wakeups are always ready under a flood, and a fair
                // pick among ready branches would take a signal or the deadline only now and
                // then. The 100 ms tick comes before the wakeups, which would starve it.
                tokio::select! {
                    biased;
                    _ = signals.recv() => return Ok(RunEnd::Interrupted),
                    _ = &mut deadline, if duration.is_some() => return Ok::<RunEnd, Error>(RunEnd::Duration),
                    ready = async { pidfd.as_ref().expect("guarded").readable().await }, if pidfd.is_some() && ended.is_none() => {
                        let mut guard = ready.map_err(io_error)?;
                        guard.clear_ready();
                        if let Some(code) = launched.as_mut().and_then(|c| c.try_wait()) {
                            ended = Some(RunEnd::CommandExited(code));
                        }
                    }
                    _ = tick.tick() => {
                        if sink.drain()? { return Ok(RunEnd::Count); }
                        // An adopted process (-p) that exits ends the run.
                        let gone = sink.tick()? || adopted.is_some_and(|pid| !super::alive(pid));
                        if gone && ended.is_none() {
                            ended = Some(RunEnd::TargetGone);
                        }
                    }
                    _ = rx.recv() => {
                        if sink.drain()? { return Ok(RunEnd::Count); }
                        look = false;
                    }
                    _ = sparse.tick(), if streams => { if sink.drain()? { return Ok(RunEnd::Count); } }
                }
                if let (Some(end), true) = (ended, look) {
                    if sink.followed_left()?.unwrap_or(0) == 0 {
                        return Ok(end);
                    }
                }
            }
        })?;
        let ended = std::time::Instant::now();
        // Whatever ended the run, hits may still be arriving: stop them in the kernel first,
        // then read what they left in the rings.
        sink.stop()?;
        sink.drain()?;
        // Nothing more comes from the sources: their slow closes can wait for tracer's exit.
        crate::perf::deferred::defer_closes();
        Ok((end, ended))
    }
}

/// How often the rings are drained when no wakeup came: the most a sparse event waits.
const SPARSE_DRAIN: std::time::Duration = std::time::Duration::from_millis(10);

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now, in nanoseconds: added to a kernel time stamp, the
/// wall-clock time of JSON's `time_unix_ns` (docs/json.md) and of trace's `-t`.
pub fn wall_offset_ns() -> i64 {
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    real - monotonic_ns() as i64
}

/// CLOCK_MONOTONIC now, in nanoseconds: the clock of `bpf_ktime_get_ns()`.
#[allow(unsafe_code)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
