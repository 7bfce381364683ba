//! An open perf event: scope, opening (with size negotiation), ioctls, and reading counts.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::attr::{self, EventKind, Options, RawAttr};
use super::error::{Error, EventClass};
use super::read::{self, Counts};
use super::sys;

/// Which tasks and CPUs an event covers (perf_event_open(2), "Arguments": pid and cpu).
///
/// The man page's invalid combination `pid == -1 && cpu == -1` cannot be built.
#[derive(Clone, Debug)]
pub enum Scope {
    /// The calling process (pid 0), on any CPU or on one.
    CallingProcess { cpu: Option<u32> },
    /// A process or thread by id, on any CPU or on one.
    Task { pid: u32, cpu: Option<u32> },
    /// Every task on one CPU (pid -1).
    Cpu(u32),
    /// Every task of a cgroup on one CPU (`PERF_FLAG_PID_CGROUP`; cgroup events need a CPU).
    Cgroup { dir: Arc<OwnedFd>, cpu: u32 },
}

impl Scope {
    fn pid_cpu_flags(&self) -> (i32, i32, libc::c_ulong) {
        let cpu = |c: &Option<u32>| c.map_or(-1, |c| c as i32);
        match self {
            Scope::CallingProcess { cpu: c } => (0, cpu(c), 0),
            Scope::Task { pid, cpu: c } => (*pid as i32, cpu(c), 0),
            Scope::Cpu(c) => (-1, *c as i32, 0),
            Scope::Cgroup { dir, cpu } => (dir.as_raw_fd(), *cpu as i32, sys::PERF_FLAG_PID_CGROUP),
        }
    }
}

/// `PERF_EVENT_IOC_*` request numbers (`_IO`/`_IOW`/`_IOR`/`_IOWR` with type `'$'`).
pub mod ioc {
    pub const ENABLE: libc::c_ulong = 0x2400;
    pub const DISABLE: libc::c_ulong = 0x2401;
    pub const REFRESH: libc::c_ulong = 0x2402;
    pub const RESET: libc::c_ulong = 0x2403;
    pub const PERIOD: libc::c_ulong = 0x4008_2404;
    pub const SET_OUTPUT: libc::c_ulong = 0x2405;
    pub const SET_FILTER: libc::c_ulong = 0x4008_2406;
    pub const ID: libc::c_ulong = 0x8008_2407;
    pub const SET_BPF: libc::c_ulong = 0x4004_2408;
    pub const PAUSE_OUTPUT: libc::c_ulong = 0x4004_2409;
    pub const QUERY_BPF: libc::c_ulong = 0xc008_240a;
    pub const MODIFY_ATTRIBUTES: libc::c_ulong = 0x4008_240b;
    /// `PERF_IOC_FLAG_GROUP`: apply ENABLE/DISABLE/RESET to the whole group.
    pub const FLAG_GROUP: libc::c_ulong = 1;
}

/// Whether closing an event of `kind` waits for the kernel's grace period (trace events:
/// tracepoints, kprobes, uprobes), and nothing looks for its effect at once: a uprobe with a
/// USDT semaphore lowers it at its close.
fn slow_to_close(kind: &EventKind) -> bool {
    match kind {
        EventKind::Tracepoint(_) | EventKind::Kprobe { .. } => true,
        EventKind::Uprobe { ref_ctr, .. } => *ref_ctr == 0,
        _ => false,
    }
}

/// A BPF link ([`Event::link_bpf`], or a trampoline's): closing it (drop) detaches its
/// program. A perf event's link is closed after tracer exits when its event is (see
/// [`super::deferred`]): closing a uprobe's link waits for a grace period of its own, one link
/// after another, seconds of a run of many uprobes' end before the prompt
/// (docs/benchmarks.md, "Figures the code cites",
/// `link-close`).
#[derive(Debug)]
pub struct Link {
    fd: OwnedFd,
    close_later: bool,
}

impl Link {
    /// A link closed when dropped (a trampoline's: nothing measured it slow).
    pub fn closed_on_drop(fd: OwnedFd) -> Link {
        Link {
            fd,
            close_later: false,
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if self.close_later {
            super::deferred::set_aside(self.fd.as_fd());
        }
    }
}

/// An open perf event. Closing it (drop) detaches everything attached to it.
#[derive(Debug)]
pub struct Event {
    fd: OwnedFd,
    name: String,
    /// The attribute as opened: MODIFY_ATTRIBUTES must be given it back with only the
    /// breakpoint fields changed.
    attr: RawAttr,
    read_format: u64,
    /// Members opened with this event as group leader, in order (for group reads).
    members: usize,
    /// Closed after tracer exits once closes are deferred (see [`super::detach`]).
    close_later: bool,
}

impl Drop for Event {
    fn drop(&mut self) {
        // The duplicate set aside keeps the file open: the close of `fd` that follows only
        // drops a reference.
        if self.close_later {
            super::deferred::set_aside(self.fd.as_fd());
        }
    }
}

impl Event {
    /// Opens `kind` with `options` in `scope`, as a group leader.
    pub fn open(
        name: impl Into<String>,
        kind: &EventKind,
        options: &Options,
        scope: &Scope,
    ) -> Result<Event, Error> {
        Self::open_in(name.into(), kind, options, scope, None)
    }

    /// Opens `kind` as a member of `leader`'s group (same scope rules as the leader).
    pub fn open_member(
        leader: &mut Event,
        name: impl Into<String>,
        kind: &EventKind,
        options: &Options,
        scope: &Scope,
    ) -> Result<Event, Error> {
        let event = Self::open_in(name.into(), kind, options, scope, Some(leader.fd.as_fd()))?;
        leader.members += 1;
        Ok(event)
    }

    fn open_in(
        name: String,
        kind: &EventKind,
        options: &Options,
        scope: &Scope,
        group: Option<BorrowedFd<'_>>,
    ) -> Result<Event, Error> {
        check(kind, &name)?;
        let mut raw = attr::build(kind, options);
        let (pid, cpu, flags) = scope.pid_cpu_flags();
        let flags = flags | sys::PERF_FLAG_FD_CLOEXEC;
        let result = match sys::perf_event_open(&mut raw, pid, cpu, group, flags) {
            // E2BIG: the kernel's attr is smaller than ours. It wrote its size back; if every
            // field we set fits in a smaller published layout, retry with that size.
            Err(e) if e.raw_os_error() == Some(libc::E2BIG) => {
                let size = attr::minimal_size(&raw);
                if size < attr::ATTR_SIZE_VER7 {
                    raw.size = size;
                    sys::perf_event_open(&mut raw, pid, cpu, group, flags)
                } else {
                    Err(e)
                }
            }
            other => other,
        };
        let fd = result.map_err(|source| Error::Open {
            event: name.clone(),
            class: class_of(kind),
            source,
        })?;
        Ok(Event {
            fd,
            name,
            attr: raw,
            read_format: options.read_format,
            members: 0,
            close_later: slow_to_close(kind),
        })
    }

    /// Closed when dropped, even once closes are deferred: a legacy kprobe's tracefs
    /// definition can be removed only after its event is closed.
    pub fn close_on_drop(&mut self) {
        self.close_later = false;
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn read_format(&self) -> u64 {
        self.read_format
    }

    fn ioctl(
        &self,
        what: &'static str,
        request: libc::c_ulong,
        arg: libc::c_ulong,
    ) -> Result<i32, Error> {
        sys::ioctl_int(self.fd.as_fd(), request, arg).map_err(|source| Error::Ioctl {
            what,
            event: self.name.clone(),
            source,
        })
    }

    fn group_flag(group: bool) -> libc::c_ulong {
        if group {
            ioc::FLAG_GROUP
        } else {
            0
        }
    }

    /// `PERF_EVENT_IOC_ENABLE`; with `group`, the leader's whole group.
    pub fn enable(&self, group: bool) -> Result<(), Error> {
        self.ioctl("enable", ioc::ENABLE, Self::group_flag(group))
            .map(drop)
    }

    /// `PERF_EVENT_IOC_DISABLE`; with `group`, the leader's whole group.
    pub fn disable(&self, group: bool) -> Result<(), Error> {
        self.ioctl("disable", ioc::DISABLE, Self::group_flag(group))
            .map(drop)
    }

    /// `PERF_EVENT_IOC_RESET`; with `group`, the leader's whole group.
    pub fn reset(&self, group: bool) -> Result<(), Error> {
        self.ioctl("reset", ioc::RESET, Self::group_flag(group))
            .map(drop)
    }

    /// `PERF_EVENT_IOC_REFRESH`: enable for `count` more overflows.
    pub fn refresh(&self, count: u32) -> Result<(), Error> {
        self.ioctl("refresh", ioc::REFRESH, count.into()).map(drop)
    }

    /// `PERF_EVENT_IOC_PERIOD`: a new sampling period.
    pub fn set_period(&self, mut period: u64) -> Result<(), Error> {
        sys::ioctl_ptr(self.fd.as_fd(), ioc::PERIOD, &mut period)
            .map(drop)
            .map_err(|source| self.ioctl_error("set period", source))
    }

    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records to `target`'s ring.
    pub fn set_output(&self, target: &Event) -> Result<(), Error> {
        self.ioctl(
            "set output",
            ioc::SET_OUTPUT,
            target.fd.as_raw_fd() as libc::c_ulong,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_SET_FILTER`: an ftrace filter for a tracepoint (e.g. `common_pid == 42`).
    pub fn set_filter(&self, filter: &str) -> Result<(), Error> {
        let filter = CString::new(filter).map_err(|_| Error::Invalid {
            what: format!("filter for {}", self.name),
            reason: "contains a NUL byte".into(),
        })?;
        sys::ioctl_str(self.fd.as_fd(), ioc::SET_FILTER, &filter)
            .map(drop)
            .map_err(|source| self.ioctl_error("set filter", source))
    }

    /// `PERF_EVENT_IOC_ID`: the kernel's unique id of this event.
    pub fn id(&self) -> Result<u64, Error> {
        let mut id = 0u64;
        sys::ioctl_ptr(self.fd.as_fd(), ioc::ID, &mut id)
            .map_err(|source| self.ioctl_error("get id", source))?;
        Ok(id)
    }

    /// `PERF_EVENT_IOC_SET_BPF`: attach a loaded BPF program (kprobe, uprobe, tracepoint or
    /// perf_event type) to this event.
    pub fn set_bpf(&self, prog: BorrowedFd<'_>) -> Result<(), Error> {
        self.ioctl(
            "attach BPF program (SET_BPF)",
            ioc::SET_BPF,
            prog.as_raw_fd() as libc::c_ulong,
        )
        .map(drop)
    }

    /// Attaches a loaded BPF program to this event through a BPF link carrying `cookie`
    /// (Linux 5.15+; the program reads it with `bpf_get_attach_cookie`). The program stays
    /// attached while the returned link is open; its close is deferred with the event's (as
    /// the event is set now, after any [`Event::close_on_drop`]).
    pub fn link_bpf(&self, prog: BorrowedFd<'_>, cookie: u64) -> Result<Link, Error> {
        let fd = sys::bpf_link_perf_event(prog, self.fd.as_fd(), cookie).map_err(|source| {
            Error::Ioctl {
                what: "attach BPF program (BPF_LINK_CREATE)",
                event: self.name.clone(),
                source,
            }
        })?;
        Ok(Link {
            fd,
            close_later: self.close_later,
        })
    }

    /// `PERF_EVENT_IOC_PAUSE_OUTPUT`: stop (true) or resume (false) writing to the ring.
    pub fn pause_output(&self, pause: bool) -> Result<(), Error> {
        self.ioctl("pause output", ioc::PAUSE_OUTPUT, pause.into())
            .map(drop)
    }

    /// `PERF_EVENT_IOC_QUERY_BPF`: ids of the BPF programs attached to this tracepoint or probe.
    pub fn query_bpf(&self) -> Result<Vec<u32>, Error> {
        #[repr(C)]
        struct Query {
            ids_len: u32,
            prog_cnt: u32,
            ids: [u32; 64],
        }
        let mut query = Query {
            ids_len: 64,
            prog_cnt: 0,
            ids: [0; 64],
        };
        sys::ioctl_ptr(self.fd.as_fd(), ioc::QUERY_BPF, &mut query)
            .map_err(|source| self.ioctl_error("query BPF programs", source))?;
        let n = (query.prog_cnt as usize).min(query.ids.len());
        Ok(query.ids[..n].to_vec())
    }

    /// `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`: move a breakpoint without reopening (the kernel
    /// only allows changing breakpoint address, length and type this way).
    pub fn modify_breakpoint(&self, kind: &EventKind) -> Result<(), Error> {
        if !kind.is_breakpoint() {
            return Err(Error::Invalid {
                what: format!("modify attributes of {}", self.name),
                reason: "only breakpoints can be modified in place".into(),
            });
        }
        check(kind, &self.name)?;
        // The kernel compares the whole attr with the event's own and rejects any difference
        // outside bp_addr, bp_len, bp_type and disabled (hw_breakpoint.c).
        let (_, _, addr, len, bp_type) = kind.encode();
        let mut raw = self.attr;
        raw.config1 = addr;
        raw.config2 = len;
        raw.bp_type = bp_type;
        sys::ioctl_ptr(self.fd.as_fd(), ioc::MODIFY_ATTRIBUTES, &mut raw)
            .map(drop)
            .map_err(|source| self.ioctl_error("modify breakpoint", source))
    }

    fn ioctl_error(&self, what: &'static str, source: io::Error) -> Error {
        Error::Ioctl {
            what,
            event: self.name.clone(),
            source,
        }
    }

    /// Reads the counter (or, with `PERF_FORMAT_GROUP` on a leader, the whole group) in one
    /// read(2), decoded according to the event's read_format.
    pub fn read(&self) -> Result<Counts, Error> {
        let mut buf = vec![0u8; read::buffer_size(self.read_format, self.members + 1)];
        let n = sys::read(self.fd.as_fd(), &mut buf).map_err(|source| Error::Read {
            event: self.name.clone(),
            source,
        })?;
        read::decode(self.read_format, &buf[..n]).ok_or_else(|| Error::Read {
            event: self.name.clone(),
            source: io::Error::new(io::ErrorKind::UnexpectedEof, "short read"),
        })
    }
}

impl AsFd for Event {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Enables (true) or disables every counter of the calling process (prctl(2)).
pub fn enable_all_in_process(enable: bool) -> io::Result<()> {
    sys::prctl_task_events(enable)
}

fn class_of(kind: &EventKind) -> EventClass {
    match kind {
        EventKind::Hardware(_) | EventKind::HwCache { .. } | EventKind::Raw(_) => {
            EventClass::Hardware
        }
        EventKind::Software(_) => EventClass::Software,
        EventKind::Tracepoint(_) => EventClass::Tracepoint,
        EventKind::Breakpoint { .. } => EventClass::Breakpoint,
        EventKind::Kprobe { .. } => EventClass::Kprobe,
        EventKind::Uprobe { .. } => EventClass::Uprobe,
        EventKind::Pmu { .. } => EventClass::Pmu,
    }
}

/// Checks what the kernel would reject with a bare EINVAL, so the error can say why.
fn check(kind: &EventKind, name: &str) -> Result<(), Error> {
    if let EventKind::Breakpoint {
        kind: bp,
        addr,
        len,
    } = kind
    {
        let invalid = |reason: String| Error::Invalid {
            what: format!("breakpoint {name}"),
            reason,
        };
        if cfg!(target_arch = "x86_64") && *bp == attr::BreakpointType::Read {
            return Err(invalid(
                "x86 has no read-only watchpoints; watch reads and writes with type rw".into(),
            ));
        }
        if *bp != attr::BreakpointType::Execute {
            if ![1, 2, 4, 8].contains(len) {
                return Err(invalid(format!("length {len} is not 1, 2, 4 or 8")));
            }
            if addr % len != 0 {
                return Err(invalid(format!(
                    "address {addr:#x} is not aligned to its length {len}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::attr::BreakpointType;

    #[test]
    fn scope_encodes_pid_and_cpu() {
        assert_eq!(
            Scope::CallingProcess { cpu: None }.pid_cpu_flags(),
            (0, -1, 0)
        );
        assert_eq!(
            Scope::Task {
                pid: 42,
                cpu: Some(1)
            }
            .pid_cpu_flags(),
            (42, 1, 0)
        );
        assert_eq!(Scope::Cpu(3).pid_cpu_flags(), (-1, 3, 0));
    }

    #[test]
    fn ioctl_numbers_match_the_uapi_header() {
        // _IOW('$', 4, __u64) and friends, computed: dir << 30 | size << 16 | '$' << 8 | nr.
        let iow = |nr: u64, size: u64| (1u64 << 30 | size << 16 | 0x24 << 8 | nr) as libc::c_ulong;
        let ior = |nr: u64, size: u64| (2u64 << 30 | size << 16 | 0x24 << 8 | nr) as libc::c_ulong;
        let iowr = |nr: u64, size: u64| (3u64 << 30 | size << 16 | 0x24 << 8 | nr) as libc::c_ulong;
        assert_eq!(ioc::PERIOD, iow(4, 8));
        assert_eq!(ioc::SET_FILTER, iow(6, 8));
        assert_eq!(ioc::ID, ior(7, 8));
        assert_eq!(ioc::SET_BPF, iow(8, 4));
        assert_eq!(ioc::PAUSE_OUTPUT, iow(9, 4));
        assert_eq!(ioc::QUERY_BPF, iowr(10, 8));
        assert_eq!(ioc::MODIFY_ATTRIBUTES, iow(11, 8));
    }

    #[test]
    fn breakpoint_rules_are_checked_before_the_syscall() {
        let bp = |kind, addr, len| EventKind::Breakpoint { kind, addr, len };
        let reason = |kind: &EventKind| match check(kind, "x") {
            Err(Error::Invalid { reason, .. }) => reason,
            other => panic!("expected Invalid, got {other:?}"),
        };
        assert!(reason(&bp(BreakpointType::Write, 0x1001, 4)).contains("not aligned"));
        assert!(reason(&bp(BreakpointType::Write, 0x1000, 3)).contains("not 1, 2, 4 or 8"));
        if cfg!(target_arch = "x86_64") {
            assert!(reason(&bp(BreakpointType::Read, 0x1000, 4)).contains("rw"));
        }
        assert!(check(&bp(BreakpointType::ReadWrite, 0x1000, 8), "x").is_ok());
        assert!(check(&bp(BreakpointType::Execute, 0x1003, 1), "x").is_ok());
    }
}
