//! The processes a run follows (`TRACKED`) and the kernel offsets its fork tracking reads
//! (`SchedOffsets`).

/// Capacity of the `TRACKED` map (processes followed for `-- COMMAND`).
pub const TRACKED_MAX: u32 = 16384;
/// `TRACKED` value: the launched command before its exec (its events are not ours yet).
pub const TRACK_PENDING: u32 = 0;
/// `TRACKED` value: a traced process.
pub const TRACK_ACTIVE: u32 = 1;

/// Byte offsets the fork tracking reads, which differ between kernel versions; found by
/// userspace and stored in the `SCHED_OFFSETS` array map.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedOffsets {
    /// `sched:sched_process_fork`'s record (tracefs): offset of `child_pid`.
    pub fork_child_pid: u32,
    /// `struct task_struct` (BTF): offset of `pid`, for the raw tracepoint's `child` argument.
    pub task_pid: u32,
    /// `struct task_struct` (BTF): offset of `exit_code`, for `tracer trace`'s exit lines; 0
    /// without BTF (no exit events then).
    pub task_exit_code: u32,
    /// `struct task_struct` (BTF): offsets of `tgid` and of `signal` (the `signal_struct`
    /// pointer), and `struct signal_struct`'s of `group_exit_code`: `tracer trace` finds the
    /// signal that ends a process; 0 without BTF.
    pub task_tgid: u32,
    pub task_signal: u32,
    pub signal_group_exit_code: u32,
    /// `struct signal_struct` (BTF): offset of `live`, the threads of the group not yet
    /// exiting (do_exit counts the exiting one out before its exit tracepoint): a process is
    /// gone when its last thread exits, not its leader (`pthread_exit` in `main`, an exec by
    /// another thread). 0 without BTF: the leader's exit ends the process then.
    pub signal_live: u32,
    /// `struct task_struct` (BTF): offsets of `se.sum_exec_runtime` and `se.exec_start` (the
    /// task's `sched_entity`): `tracer trace -c` takes a call's CPU time from them
    /// ([`SLOT_TRACE_CPU_TIME`](crate::SLOT_TRACE_CPU_TIME)); 0 without BTF.
    pub task_sum_exec_runtime: u32,
    pub task_exec_start: u32,
    /// The path from a task to a descriptor's inode number (BTF): `task_struct.files`,
    /// `files_struct.fdt`, `fdtable.max_fds` and `.fd`, `file.f_inode`, `inode.i_ino`, for
    /// [`SLOT_TRACE_FD_INODES`](crate::SLOT_TRACE_FD_INODES); 0 without BTF.
    pub task_files: u32,
    pub files_fdt: u32,
    pub fdt_max_fds: u32,
    pub fdt_fd: u32,
    pub file_inode: u32,
    pub inode_ino: u32,
    /// `struct task_struct` (BTF): offset of `stack`, the task's kernel stack, at whose top
    /// x86-64 keeps the user registers (`task_pt_regs`): `probe -s` at a tracepoint copies
    /// the top of the user stack from their stack pointer. 0 without BTF.
    pub task_stack: u32,
}
