//! The programs that run beside the probes: the comm cache's invalidation on
//! `task:task_rename`, and the fork/exec/exit tracking of a `-- COMMAND`'s process tree.

use tracer_common::SchedOffsets;

use crate::bpf::Bpf;
use crate::kernel::btf::KernelBtf;
use crate::kernel::tracefs::Tracefs;
use crate::perf::{self, EventKind, Options};
use crate::Error;

/// Attaches the comm cache's invalidation (`comm_renamed`) to `task_rename`; it runs until the
/// object is dropped. Call it before any probe is attached: a rename it missed would leave a
/// stale name cached.
pub fn start_comm_cache(bpf: &mut Bpf) -> Result<(), Error> {
    Ok(bpf.attach_comm_cache()?)
}

/// Runs the loaded `program` on every hit of tracepoint `id` (named `name`), on every CPU (a
/// tracepoint's BPF programs run wherever it fires, whichever CPU the perf event is bound to),
/// until the returned event is closed.
pub(super) fn run_on_tracepoint(
    bpf: &Bpf,
    name: &str,
    id: u64,
    program: &str,
) -> Result<perf::Event, Error> {
    let event = perf::Event::open(
        name.to_string(),
        &EventKind::Tracepoint(id),
        &Options::default(),
        &super::resolve::program_carrier(),
    )?;
    event.set_bpf(bpf.named_program_fd(program)?)?;
    event.enable(false)?;
    Ok(event)
}

/// Attaches the fork/exec/exit tracking programs to the scheduler's raw tracepoints (without
/// exit's unless `with_exit`: `Bpf::attach_tracking_exit`). The returned event (a perf
/// tracepoint event for fork, on a kernel without BTF) runs the fork program until it is
/// closed.
pub fn start_tracking(
    bpf: &mut Bpf,
    fs: &Tracefs,
    with_exit: bool,
) -> Result<Option<perf::Event>, Error> {
    let record = bpf.attach_tracking(sched_offsets(fs)?, with_exit)?;
    let Some(program) = record else {
        return Ok(None);
    };
    let id = fs.tracepoint_id("sched", "sched_process_fork")?;
    run_on_tracepoint(bpf, "sched:sched_process_fork", id, program).map(Some)
}

/// `tracer trace -a`, and probes at tracepoints that copy the user stack's top: the offsets
/// their programs read (a task's exit code, its thread group, its kernel stack) without the
/// tracking programs, which set them where something is tracked.
pub fn set_task_offsets(bpf: &mut Bpf, fs: &Tracefs) -> Result<(), Error> {
    Ok(bpf.set_sched_offsets(sched_offsets(fs)?)?)
}

/// The offsets the tracking and trace programs read, from kernel BTF (0 where it has none;
/// the fork record's `child_pid` then, from tracefs).
fn sched_offsets(fs: &Tracefs) -> Result<SchedOffsets, Error> {
    let btf = KernelBtf::open().ok();
    let offset = |strukt: &str, name: &str| {
        (btf.as_ref()).and_then(|btf| btf.struct_member_offset(strukt, name).ok().flatten())
    };
    let member = |name: &str| offset("task_struct", name);
    // A member of the task's `sched_entity` (`task_struct.se`).
    let in_se = |name: &str| Some(member("se")? + offset("sched_entity", name)?);
    let task_pid = member("pid");
    let fork_child_pid = match task_pid {
        Some(_) => 0,
        None => {
            let fork = fs.format("sched", "sched_process_fork")?;
            let child = fork.field("child_pid").ok_or_else(|| Error::Runtime {
                message: "sched:sched_process_fork has no child_pid field".into(),
                hints: vec![
                    "this kernel's scheduler tracepoints are not supported for -- COMMAND; use -p PID"
                        .into(),
                ],
            })?;
            child.offset as u32
        }
    };
    Ok(SchedOffsets {
        fork_child_pid,
        task_pid: task_pid.unwrap_or(0),
        task_exit_code: member("exit_code").unwrap_or(0),
        task_tgid: member("tgid").unwrap_or(0),
        task_signal: member("signal").unwrap_or(0),
        signal_group_exit_code: offset("signal_struct", "group_exit_code").unwrap_or(0),
        signal_live: offset("signal_struct", "live").unwrap_or(0),
        task_sum_exec_runtime: in_se("sum_exec_runtime").unwrap_or(0),
        task_exec_start: in_se("exec_start").unwrap_or(0),
        task_files: member("files").unwrap_or(0),
        files_fdt: offset("files_struct", "fdt").unwrap_or(0),
        fdt_max_fds: offset("fdtable", "max_fds").unwrap_or(0),
        fdt_fd: offset("fdtable", "fd").unwrap_or(0),
        file_inode: offset("file", "f_inode").unwrap_or(0),
        inode_ino: offset("inode", "i_ino").unwrap_or(0),
        task_stack: member("stack").unwrap_or(0),
    })
}

/// The id of `task:task_rename`, whose program keeps the comm cache right; `None` without it
/// (the programs then ask the helper for each hit's comm).
pub fn rename_tracepoint(fs: &Tracefs) -> Option<u64> {
    fs.tracepoint_id("task", "task_rename").ok()
}
