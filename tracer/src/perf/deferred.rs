//! Slow-to-close events set aside at the end of a run, to be closed after the process exits.
//!
//! The last close of a tracepoint, kprobe or uprobe event waits for the kernel to be sure no
//! CPU still runs its callback (`perf_trace_event_unreg` synchronizes RCU), under the trace
//! event mutex, one event after another. That was most of the time from a run's end to the
//! prompt (docs/benchmarks.md, "Figures the code cites", `event-close`).
//!
//! Once a run is over and its sources are stopped ([`defer_closes`]), such events, and the
//! BPF links to them ([`super::event::Link`]: a uprobe's link waits for a grace period of its
//! own, `link-close`), are not closed when dropped: their file is kept by a duplicate set aside
//! here, and at exit
//! `crate::closer::close_after_exit` has a child close them after tracer has exited, off the
//! user's clock. Nothing is lost by the wait: the programs attached to those events were
//! stopped before the last drain and output nothing more.
//!
//! Events whose close has an effect someone may look for at once close as before: a uprobe
//! raising a USDT semaphore (the kernel lowers it at the close), and a legacy kprobe whose
//! tracefs definition is removed after its event is closed ([`super::Event::close_on_drop`]).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static DEFERRING: AtomicBool = AtomicBool::new(false);
static SET_ASIDE: Mutex<Vec<OwnedFd>> = Mutex::new(Vec::new());

/// From now on, slow-to-close events dropped are closed after the process exits. Called when
/// a run has ended and its sources are stopped; before that (feature probes, a failed attach)
/// an event closes when dropped.
pub fn defer_closes() {
    DEFERRING.store(true, Ordering::Relaxed);
}

/// Keeps `fd`'s file open past its drop when closes are deferred. When they are not (or the
/// duplicate failed), the caller's close is the real one.
pub(super) fn set_aside(fd: BorrowedFd<'_>) {
    if !DEFERRING.load(Ordering::Relaxed) {
        return;
    }
    if let Ok(copy) = fd.try_clone_to_owned() {
        (SET_ASIDE.lock().unwrap_or_else(|e| e.into_inner())).push(copy);
    }
}

/// The files set aside so far (none are left here).
pub fn take() -> Vec<OwnedFd> {
    std::mem::take(&mut *SET_ASIDE.lock().unwrap_or_else(|e| e.into_inner()))
}
