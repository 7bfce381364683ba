//! The only place the perf layer makes system calls: perf_event_open, ioctl, read, mmap, prctl,
//! membarrier, and bpf(BPF_LINK_CREATE) to attach a program to an event with a cookie.
//!
//! Everything above this module is safe code over owned file descriptors.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

use super::attr::RawAttr;

/// `PERF_FLAG_FD_CLOEXEC`: always set, so no event fd leaks into a launched command.
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_FLAG_PID_CGROUP`: `pid` is a cgroup directory fd.
pub const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;

/// perf_event_open(2). On `E2BIG` the kernel has written the size it supports into `attr.size`.
pub fn perf_event_open(
    attr: &mut RawAttr,
    pid: i32,
    cpu: i32,
    group_fd: Option<BorrowedFd<'_>>,
    flags: libc::c_ulong,
) -> io::Result<OwnedFd> {
    let group = group_fd.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` is a valid, initialised `perf_event_attr` whose `size` field does not
    // exceed its real size, and the kernel only reads `size` bytes from it (and may write back
    // `size` on E2BIG, which `&mut` permits). The other arguments are plain integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *mut RawAttr,
            pid as libc::c_int,
            cpu as libc::c_int,
            group as libc::c_int,
            flags,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a non-negative return of perf_event_open is a new fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// Waits until every CPU has passed through a quiescent state: `membarrier(2)`'s
/// `MEMBARRIER_CMD_GLOBAL` is `synchronize_rcu()` in the kernel, so BPF programs that were
/// running when it was called (they run inside RCU read-side sections) have returned when it
/// does. Kernels with nohz_full CPUs refuse it (EINVAL); the caller then waits a moment instead.
pub fn synchronize_rcu() -> io::Result<()> {
    const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
    // SAFETY: membarrier takes two integers and a cpu id, and touches no memory of ours.
    let ret = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An ioctl whose argument is an integer (or unused).
pub fn ioctl_int(
    fd: BorrowedFd<'_>,
    request: libc::c_ulong,
    arg: libc::c_ulong,
) -> io::Result<i32> {
    // SAFETY: the perf ioctls called with an integer argument (ENABLE, DISABLE, RESET, REFRESH,
    // SET_OUTPUT, SET_BPF, PAUSE_OUTPUT) read no memory through it.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An ioctl whose argument points at a value the kernel reads or writes.
pub fn ioctl_ptr<T>(fd: BorrowedFd<'_>, request: libc::c_ulong, arg: &mut T) -> io::Result<i32> {
    // SAFETY: `arg` is a valid, exclusive reference to a `T` for the call; each caller passes
    // the `T` that the request's `_IOW`/`_IOR` encoding names (u64, a perf_event_attr, or a
    // perf_event_query_bpf header followed by its id array).
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as *mut T) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `PERF_EVENT_IOC_SET_FILTER` with a NUL-terminated filter string.
pub fn ioctl_str(fd: BorrowedFd<'_>, request: libc::c_ulong, arg: &CStr) -> io::Result<i32> {
    // SAFETY: `arg` is a valid NUL-terminated string that outlives the call; the kernel copies it.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg.as_ptr()) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// read(2) into `buf`, returning the byte count.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let ret = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// A shared, read-write mapping of an event fd, unmapped on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with the kernel; the ring reader synchronises with
// the kernel through atomics on data_head/data_tail, and `Mapping` itself has no thread affinity.
unsafe impl Send for Mapping {}

impl Mapping {
    /// mmap(2) `len` bytes of `fd` at offset 0, `PROT_READ | PROT_WRITE`, `MAP_SHARED`.
    pub fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh mapping at a kernel-chosen address aliases no Rust object.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping { ptr, len })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping this value created and nobody else unmaps.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// prctl(PR_TASK_PERF_EVENTS_ENABLE / _DISABLE): all counters of the calling process.
pub fn prctl_task_events(enable: bool) -> io::Result<()> {
    let op = if enable {
        libc::PR_TASK_PERF_EVENTS_ENABLE
    } else {
        libc::PR_TASK_PERF_EVENTS_DISABLE
    };
    // SAFETY: these prctl operations take no pointer arguments.
    let ret = unsafe { libc::prctl(op, 0, 0, 0, 0) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size <= 0 {
        4096
    } else {
        size as usize
    }
}

/// poll(2) on several fds for readability; returns the count of ready fds.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid slice of pollfd structures for the call.
    let ret = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// bpf(BPF_LINK_CREATE) for a perf event (BPF_PERF_EVENT, Linux 5.15+): attaches program
/// `prog` to `event` through a BPF link whose attach cookie the program reads
/// (`bpf_get_attach_cookie`). Closing the link detaches the program.
pub fn bpf_link_perf_event(
    prog: BorrowedFd<'_>,
    event: BorrowedFd<'_>,
    cookie: u64,
) -> io::Result<OwnedFd> {
    /// `union bpf_attr` as BPF_LINK_CREATE reads it for a perf event (include/uapi/linux/
    /// bpf.h): the program, the target, the attach type, flags, then the cookie.
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_fd: u32,
        attach_type: u32,
        flags: u32,
        bpf_cookie: u64,
        /// The rest of the union as far as this size goes: zero, as the kernel requires.
        _rest: [u64; 4],
    }
    const BPF_PERF_EVENT: u32 = 41;
    let attr = LinkCreate {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: event.as_raw_fd() as u32,
        attach_type: BPF_PERF_EVENT,
        flags: 0,
        bpf_cookie: cookie,
        _rest: [0; 4],
    };
    // SAFETY: `attr` is a fully initialised `union bpf_attr` prefix for BPF_LINK_CREATE;
    // both fds are open for the duration of the call.
    unsafe { link_create(&attr) }
}

/// Which end of a kernel function a tracing link attaches at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracingAttach {
    #[doc(alias = "BPF_TRACE_FENTRY")]
    Fentry,
    #[doc(alias = "BPF_TRACE_FEXIT")]
    Fexit,
}

/// bpf(BPF_LINK_CREATE) for a tracing program (fentry/fexit) loaded for its target function:
/// attaches it to that function's BPF trampoline through a link whose attach cookie the
/// program reads (`bpf_get_attach_cookie`; the `tracing.cookie` field, Linux 5.19: an older
/// kernel refuses the non-zero field with EINVAL). Closing the link detaches the program.
pub fn bpf_link_tracing(
    prog: BorrowedFd<'_>,
    attach: TracingAttach,
    cookie: u64,
) -> io::Result<OwnedFd> {
    /// `union bpf_attr` as BPF_LINK_CREATE reads it for a tracing program (include/uapi/
    /// linux/bpf.h): the program, no target fd, the attach type, flags, then `tracing`: a
    /// target BTF id (0: the one the program was loaded for), padding and the cookie.
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_fd: u32,
        attach_type: u32,
        flags: u32,
        target_btf_id: u32,
        padding: u32,
        cookie: u64,
        /// The rest of the union as far as this size goes: zero, as the kernel requires.
        _rest: [u64; 3],
    }
    let attr = LinkCreate {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: 0,
        attach_type: match attach {
            TracingAttach::Fentry => 24,
            TracingAttach::Fexit => 25,
        },
        flags: 0,
        target_btf_id: 0,
        padding: 0,
        cookie,
        _rest: [0; 3],
    };
    // SAFETY: `attr` is a fully initialised `union bpf_attr` prefix for BPF_LINK_CREATE; the
    // program fd is open for the duration of the call.
    unsafe { link_create(&attr) }
}

/// bpf(BPF_MAP_LOOKUP_AND_DELETE_ELEM): removes `key` from the hash map `map` and writes the
/// value it held, as it was when it left, into `value` (per-CPU maps: one slot of the value's
/// size rounded up to 8 per possible CPU). Hash maps since 5.14; before, EINVAL. `Ok(false)`:
/// the key was not there.
pub fn bpf_map_lookup_and_delete(
    map: BorrowedFd<'_>,
    key: &[u8],
    value: &mut [u8],
) -> io::Result<bool> {
    const BPF_MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
    #[repr(C)]
    struct MapElem {
        map_fd: u32,
        _pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let attr = MapElem {
        map_fd: map.as_raw_fd() as u32,
        _pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_mut_ptr() as u64,
        flags: 0,
    };
    // SAFETY: `attr` is a fully initialised `union bpf_attr` prefix for the command; the map
    // fd is open for the call; the kernel reads the map's key size from `key` and writes its
    // value size (per CPU, for per-CPU maps) into `value`, whose lengths the caller sized so.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_AND_DELETE_ELEM,
            &attr as *const MapElem,
            std::mem::size_of::<MapElem>(),
        )
    };
    match ret {
        0 => Ok(true),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            e => Err(e),
        },
    }
}

/// bpf(BPF_PROG_TEST_RUN) of raw tracepoint program `prog` (Linux 5.10+), with `args` as its
/// context (the tracepoint's arguments, at most 12). The program's return value.
pub fn bpf_test_run_raw_tp(prog: BorrowedFd<'_>, args: &[u64]) -> io::Result<u32> {
    const BPF_PROG_TEST_RUN: libc::c_long = 10;
    /// `union bpf_attr` as BPF_PROG_TEST_RUN reads it (include/uapi/linux/bpf.h, `test`):
    /// a raw tracepoint takes its context only (no data in or out, no repeat).
    #[repr(C)]
    struct TestRun {
        prog_fd: u32,
        retval: u32,
        data_size_in: u32,
        data_size_out: u32,
        data_in: u64,
        data_out: u64,
        repeat: u32,
        duration: u32,
        ctx_size_in: u32,
        ctx_size_out: u32,
        ctx_in: u64,
        ctx_out: u64,
        flags: u32,
        cpu: u32,
        batch_size: u32,
        _pad: u32,
    }
    if args.len() > 12 {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    let mut attr = TestRun {
        prog_fd: prog.as_raw_fd() as u32,
        retval: 0,
        data_size_in: 0,
        data_size_out: 0,
        data_in: 0,
        data_out: 0,
        repeat: 0,
        duration: 0,
        ctx_size_in: std::mem::size_of_val(args) as u32,
        ctx_size_out: 0,
        ctx_in: args.as_ptr() as u64,
        ctx_out: 0,
        flags: 0,
        cpu: 0,
        batch_size: 0,
        _pad: 0,
    };
    // SAFETY: `attr` is a fully initialised `union bpf_attr` prefix for the command; the
    // program fd is open for the call; the kernel reads `ctx_size_in` bytes at `ctx_in`, a
    // live slice of that size, and writes `retval` into `attr`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            &mut attr as *mut TestRun,
            std::mem::size_of::<TestRun>(),
        )
    };
    match ret {
        0 => Ok(attr.retval),
        _ => Err(io::Error::last_os_error()),
    }
}

/// bpf(BPF_LINK_CREATE) with `attr`; the new link's fd.
///
/// # Safety
/// `attr` must be a fully initialised `union bpf_attr` prefix as BPF_LINK_CREATE reads it,
/// whose fds stay open for the call.
unsafe fn link_create<T>(attr: &T) -> io::Result<OwnedFd> {
    const BPF_LINK_CREATE: libc::c_long = 28;
    // SAFETY: the caller's contract: a live attr of the size passed, which the kernel only
    // reads.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_LINK_CREATE,
            attr as *const T,
            std::mem::size_of::<T>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd the kernel just returned, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
