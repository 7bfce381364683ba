//! The programs that run beside the probes: the comm cache's invalidation on
//! `task:task_rename`, and the fork/exec/exit tracking of a `-- COMMAND`'s process tree.

use tracer_common::SchedOffsets;

use crate::bpf::Bpf;
use crate::kernel::tracefs::Tracefs;
use crate::perf::{self, EventKind, Options};
use crate::Error;

/// Attaches the comm cache's invalidation (`comm_renamed`) to `task:task_rename`, whose
/// tracepoint id is `id`; it runs until the returned event is closed. Call it before any
/// probe is attached: a rename it missed would leave a stale name cached.
pub fn start_comm_cache(bpf: &mut Bpf, id: u64) -> Result<perf::Event, Error> {
    let program = bpf.load_comm_cache()?;
    run_on_tracepoint(bpf, "task:task_rename", id, program)
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

/// Attaches the fork/exec/exit tracking programs to the scheduler tracepoints.
pub fn start_tracking(bpf: &mut Bpf, fs: &Tracefs) -> Result<Vec<perf::Event>, Error> {
    let fork = fs.format("sched", "sched_process_fork")?;
    let child = fork.field("child_pid").ok_or_else(|| Error::Runtime {
        message: "sched:sched_process_fork has no child_pid field".into(),
        hints: vec![
            "this kernel's scheduler tracepoints are not supported for -- COMMAND; use -p PID"
                .into(),
        ],
    })?;
    let names = bpf.load_tracking(SchedOffsets {
        fork_child_pid: child.offset as u32,
        _pad: 0,
    })?;
    let mut events = Vec::new();
    for (program, tracepoint) in names.iter().zip([
        "sched_process_exec",
        "sched_process_fork",
        "sched_process_exit",
    ]) {
        let id = fs.tracepoint_id("sched", tracepoint)?;
        events.push(run_on_tracepoint(
            bpf,
            &format!("sched:{tracepoint}"),
            id,
            program,
        )?);
    }
    Ok(events)
}

/// The id of `task:task_rename`, whose program keeps the comm cache right; `None` without it
/// (the programs then ask the helper for each hit's comm).
pub fn rename_tracepoint(fs: &Tracefs) -> Option<u64> {
    fs.tracepoint_id("task", "task_rename").ok()
}
