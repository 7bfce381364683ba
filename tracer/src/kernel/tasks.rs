//! The threads running now and their names, from /proc. The kernel's comm records (perf's)
//! come when a task is named: at its exec, or when it renames itself. A run that names tasks
//! by them has these for the tasks that started before it.

/// The threads of process `pid` and their names, by thread id in order; none for a process
/// gone. A thread gone while they are read is left out.
pub fn thread_names(pid: u32) -> Vec<(u32, String)> {
    (numbered(&format!("/proc/{pid}/task")).into_iter())
        .filter_map(|tid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
            Some((tid, comm.trim_end_matches('\n').to_string()))
        })
        .collect()
}

/// Every thread on the machine and its name, as (pid, tid, name), by process then thread id.
pub fn all_thread_names() -> Vec<(u32, u32, String)> {
    (numbered("/proc").into_iter())
        .flat_map(|pid| (thread_names(pid).into_iter()).map(move |(tid, name)| (pid, tid, name)))
        .collect()
}

/// The entries of directory `dir` named by a number (pids, tids), in order; none when it
/// cannot be read (a process gone).
fn numbered(dir: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_its_threads_are_named() {
        let me = std::process::id();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready) = std::sync::mpsc::channel::<()>();
        // Named before it runs its closure: once it says so, /proc has the name.
        let named = std::thread::Builder::new()
            .name("tasks-test".into())
            .spawn(move || {
                ready_tx.send(()).unwrap();
                rx.recv()
            })
            .unwrap();
        ready.recv().unwrap();
        let mine = thread_names(me);
        let own = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert_eq!(mine[0], (me, own.trim_end().to_string()));
        assert!(
            mine.iter().any(|(_, name)| name == "tasks-test"),
            "{mine:?}"
        );
        let all = all_thread_names();
        assert!(all.iter().any(|(pid, tid, _)| (*pid, *tid) == (me, me)));
        assert!(all.iter().any(|(pid, _, _)| *pid == 1));
        drop(tx);
        named.join().unwrap().unwrap_err();
        assert!(thread_names(u32::MAX).is_empty());
    }
}
