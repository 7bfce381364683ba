//! Tier 2, continued: ioctls (SET_FILTER, SET_OUTPUT, PAUSE_OUTPUT, PERIOD, REFRESH), whole
//! SAMPLE records, inheritance across exec, cgroup scope and prctl, each with exact outcomes
//! from the deterministic workload. Needs root. Every event is scoped to (or filtered by) a
//! workload pid or the calling thread, so tests running in parallel cannot see each other.

mod common;

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{has, Workload};
use tracer::kernel::features::Feature;
use tracer::kernel::tracefs::Tracefs;
use tracer::perf::attr::{flag, format, sample, BreakpointType};
use tracer::perf::record::{self, misc, Layout, Record, SampleId, TaskRecord};
use tracer::perf::{self, EventKind, Options, Ring, Sampling, Scope};

// ---------------------------------------------------------------------------------------------
// Helpers

fn tracepoint_id(category: &str, name: &str) -> u64 {
    Tracefs::locate()
        .expect("tracefs")
        .tracepoint_id(category, name)
        .expect("tracepoint id")
}

fn tracepoint(category: &str, name: &str) -> EventKind {
    EventKind::Tracepoint(tracepoint_id(category, name))
}

fn task(pid: u32) -> Scope {
    Scope::Task { pid, cpu: None }
}

fn counting() -> Options {
    Options {
        read_format: format::TOTAL_TIME_ENABLED | format::TOTAL_TIME_RUNNING,
        ..Options::default()
    }
}

/// A sampling event's options: every `period`-th hit, records laid out by `sample_type`.
fn sampled(period: u64, sample_type: u64) -> Options {
    Options {
        sampling: Sampling::Period(period),
        sample_type,
        ..Options::default()
    }
}

fn layout_of(options: &Options) -> Layout {
    Layout {
        sample_type: options.sample_type,
        read_format: options.read_format,
        sample_id_all: options.flags & flag::SAMPLE_ID_ALL != 0,
        ..Layout::default()
    }
}

fn count(event: &perf::Event) -> u64 {
    event.read().unwrap().values[0].value
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call.
    let ret = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(ret, 0, "clock_gettime({clock})");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A SAMPLE record with its bytes copied out of the ring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct OwnedSample {
    misc: u16,
    identifier: Option<u64>,
    ip: Option<u64>,
    pid: Option<u32>,
    tid: Option<u32>,
    time: Option<u64>,
    addr: Option<u64>,
    id: Option<u64>,
    stream_id: Option<u64>,
    cpu: Option<u32>,
    period: Option<u64>,
    raw: Option<Vec<u8>>,
}

/// What a ring held, in ring order, copied out so it outlives the drain.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rec {
    Sample(OwnedSample),
    Lost {
        id: u64,
        lost: u64,
        sample_id: SampleId,
    },
    Exit(TaskRecord, SampleId),
    Fork(TaskRecord, SampleId),
    Comm {
        pid: u32,
        tid: u32,
        comm: Vec<u8>,
        sample_id: SampleId,
    },
    Other(u32),
}

/// Drains everything the ring holds now; every record must parse.
fn drain(ring: &mut Ring, layout: &Layout) -> Vec<Rec> {
    let mut out = Vec::new();
    let stats = ring.drain(|bytes| {
        let parsed = record::parse(bytes, layout).expect("record parses");
        out.push(match parsed.record {
            Record::Sample(s) => Rec::Sample(OwnedSample {
                misc: parsed.header.misc,
                identifier: s.identifier,
                ip: s.ip,
                pid: s.pid,
                tid: s.tid,
                time: s.time,
                addr: s.addr,
                id: s.id,
                stream_id: s.stream_id,
                cpu: s.cpu,
                period: s.period,
                raw: s.raw.map(<[u8]>::to_vec),
            }),
            Record::Lost { id, lost } => Rec::Lost {
                id,
                lost,
                sample_id: parsed.sample_id,
            },
            Record::Exit(t) => Rec::Exit(t, parsed.sample_id),
            Record::Fork(t) => Rec::Fork(t, parsed.sample_id),
            Record::Comm { pid, tid, comm, .. } => Rec::Comm {
                pid,
                tid,
                comm: comm.to_vec(),
                sample_id: parsed.sample_id,
            },
            _ => Rec::Other(parsed.header.type_),
        });
    });
    assert!(!stats.corrupt, "ring data is well formed");
    out
}

fn samples(records: &[Rec]) -> Vec<&OwnedSample> {
    records
        .iter()
        .filter_map(|r| match r {
            Rec::Sample(s) => Some(s),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. PERF_EVENT_IOC_SET_FILTER

#[test]
fn set_filter_drops_tracepoint_hits_that_do_not_match() {
    if !has(Feature::Tracepoints, "set_filter") {
        return;
    }
    const N: u64 = 120;
    let mut work = Workload::batched(N, None, &["getppid", &N.to_string()]);
    let pid = work.pid();
    let kind = tracepoint("syscalls", "sys_enter_getppid");
    let open = |name: &str| perf::Event::open(name, &kind, &counting(), &task(pid)).unwrap();
    let nobody = open("getppid common_pid == 1");
    let workload = open("getppid common_pid == workload");
    let unfiltered = open("getppid");
    nobody.set_filter("common_pid == 1").unwrap();
    workload
        .set_filter(&format!("common_pid == {pid}"))
        .unwrap();
    // The kernel parses the filter against the tracepoint's format: an unknown field is EINVAL,
    // not a filter that silently matches nothing.
    let err = unfiltered.set_filter("no_such_field == 1").unwrap_err();
    assert_eq!(err.errno(), Some(libc::EINVAL), "{err}");

    work.run_batch();
    work.finish();
    // A filtered-out hit is not counted at all (perf_tp_event_match runs before the count).
    assert_eq!(count(&nobody), 0);
    assert_eq!(count(&workload), N);
    assert_eq!(
        count(&unfiltered),
        N,
        "a rejected filter leaves the event as it was"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. PERF_EVENT_IOC_SET_OUTPUT

#[test]
fn set_output_merges_two_events_into_one_ring() {
    if !has(Feature::Tracepoints, "set_output") {
        return;
    }
    const N: u64 = 100;
    let mut work = Workload::batched(N, None, &["getppid", &N.to_string()]);
    let pid = work.pid();
    let st = sample::IDENTIFIER | sample::TID | sample::TIME | sample::ID;
    // Different periods so that each event's share of the ring is recognisable: every entry,
    // every second exit.
    let enter_options = sampled(1, st);
    let exit_options = sampled(2, st);
    let enter = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &enter_options,
        &task(pid),
    )
    .unwrap();
    let exit = perf::Event::open(
        "sys_exit_getppid",
        &tracepoint("syscalls", "sys_exit_getppid"),
        &exit_options,
        &task(pid),
    )
    .unwrap();
    let (enter_id, exit_id) = (enter.id().unwrap(), exit.id().unwrap());
    assert_ne!(enter_id, exit_id);
    let mut ring = Ring::new(enter, 8).unwrap();
    exit.set_output(ring.event()).unwrap();

    // A per-task ring only takes events of the same task (perf_event_set_output: "If its not a
    // per-cpu rb, it must be the same task"): an event on this thread is refused with EINVAL.
    let stranger = perf::Event::open(
        "sys_exit_getppid (this thread)",
        &tracepoint("syscalls", "sys_exit_getppid"),
        &exit_options,
        &Scope::CallingProcess { cpu: None },
    )
    .unwrap();
    let err = stranger.set_output(ring.event()).unwrap_err();
    assert_eq!(err.errno(), Some(libc::EINVAL), "{err}");

    work.run_batch();
    work.finish();
    let records = drain(&mut ring, &layout_of(&enter_options));
    let all = samples(&records);
    assert_eq!(records.len(), all.len(), "only samples: {records:?}");
    let of = |id: u64| all.iter().filter(|s| s.id == Some(id)).count() as u64;
    assert_eq!(of(enter_id), N);
    assert_eq!(of(exit_id), N / 2);
    assert_eq!(all.len() as u64, N + N / 2);
    for s in &all {
        assert_eq!(s.identifier, s.id, "IDENTIFIER and ID name the same event");
        assert_eq!((s.pid, s.tid), (Some(pid), Some(pid)));
    }
    // One ring, one writer at a time: records are in time order, entries and exits alternate
    // (enter, exit, enter, enter, exit, ...): every exit sample follows its own entry.
    assert!(all.windows(2).all(|w| w[0].time <= w[1].time));
    let order: Vec<bool> = all.iter().map(|s| s.id == Some(enter_id)).collect();
    let expected: Vec<bool> = (1..=N)
        .flat_map(|i| {
            if i % 2 == 0 {
                vec![true, false]
            } else {
                vec![true]
            }
        })
        .collect();
    assert_eq!(order, expected);
}

// ---------------------------------------------------------------------------------------------
// 3. PERF_EVENT_IOC_PAUSE_OUTPUT

#[test]
fn paused_ring_drops_samples_and_reports_them_lost() {
    if !has(Feature::Tracepoints, "pause_output") {
        return;
    }
    const PAUSED: u64 = 40;
    const RESUMED: u64 = 25;
    // Batches of 5: 8 while paused, then 5 after resuming.
    let mut work = Workload::batched(5, None, &["getppid", &(PAUSED + RESUMED).to_string()]);
    let pid = work.pid();
    let options = Options {
        read_format: format::LOST,
        flags: flag::SAMPLE_ID_ALL,
        ..sampled(1, sample::TID | sample::ID)
    };
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &options,
        &task(pid),
    )
    .unwrap();
    let id = event.id().unwrap();
    let mut ring = Ring::new(event, 4).unwrap();
    let layout = layout_of(&options);

    ring.event().pause_output(true).unwrap();
    for _ in 0..PAUSED / 5 {
        work.run_batch();
    }
    // Paused: nothing reaches the ring, and no LOST record either (it cannot be written yet),
    // but the event counted every hit and its PERF_FORMAT_LOST counter every dropped sample.
    assert_eq!(drain(&mut ring, &layout), vec![]);
    let read = ring.event().read().unwrap();
    assert_eq!(
        (read.values[0].value, read.values[0].lost),
        (PAUSED, Some(PAUSED))
    );

    ring.event().pause_output(false).unwrap();
    for _ in 0..RESUMED / 5 {
        work.run_batch();
    }
    work.finish();
    // The first output after resuming is preceded by one PERF_RECORD_LOST for everything
    // dropped while paused (ring_buffer.c __perf_output_begin: paused -> rb->lost++, then
    // the next writer emits the LOST record), as the man page says.
    let records = drain(&mut ring, &layout);
    assert_eq!(records.len() as u64, 1 + RESUMED, "{records:?}");
    match &records[0] {
        Rec::Lost {
            id: lost_id,
            lost,
            sample_id,
        } => {
            assert_eq!((*lost_id, *lost), (id, PAUSED));
            // The LOST record carries the writer's sample_id trailer: the workload thread.
            assert_eq!(
                (sample_id.pid, sample_id.tid, sample_id.id),
                (Some(pid), Some(pid), Some(id))
            );
        }
        other => panic!("expected LOST first, got {other:?}"),
    }
    assert!(records[1..]
        .iter()
        .all(|r| matches!(r, Rec::Sample(s) if s.id == Some(id) && s.pid == Some(pid))));
    let read = ring.event().read().unwrap();
    assert_eq!(
        (read.values[0].value, read.values[0].lost),
        (PAUSED + RESUMED, Some(PAUSED))
    );
}

// ---------------------------------------------------------------------------------------------
// 4. sample_period, PERF_EVENT_IOC_PERIOD and PERF_EVENT_IOC_REFRESH

#[test]
fn sample_period_and_set_period_sample_every_nth_hit() {
    if !has(Feature::Tracepoints, "set_period") {
        return;
    }
    let mut work = Workload::batched(100, None, &["getppid", "200"]);
    let pid = work.pid();
    let options = sampled(10, sample::TID | sample::ID);
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &options,
        &task(pid),
    )
    .unwrap();
    let mut ring = Ring::new(event, 4).unwrap();
    let layout = layout_of(&options);

    work.run_batch();
    let first = drain(&mut ring, &layout);
    assert_eq!(samples(&first).len(), 10, "100 hits, period 10");
    assert_eq!(first.len(), 10);

    ring.event().set_period(25).unwrap();
    work.run_batch();
    work.finish();
    let second = drain(&mut ring, &layout);
    assert_eq!(samples(&second).len(), 4, "100 hits, period 25");
    assert_eq!(second.len(), 4);
    assert_eq!(
        count(ring.event()),
        200,
        "the count is every hit, whatever the period"
    );
}

/// perf_swevent_event (kernel/events/core.c): a software or tracepoint event with a fixed
/// period and PERF_SAMPLE_PERIOD in sample_type writes a sample for *every* hit, carrying
/// period = 1 (the hit's weight), instead of every period-th hit. Tools that ask for PERIOD
/// on tracepoints get this; it is pinned here so it cannot surprise anyone.
#[test]
fn sample_type_period_makes_every_tracepoint_hit_a_sample() {
    if !has(Feature::Tracepoints, "period_bit") {
        return;
    }
    const N: u64 = 100;
    let mut work = Workload::batched(N, None, &["getppid", &N.to_string()]);
    let pid = work.pid();
    let options = sampled(10, sample::TID | sample::ID | sample::PERIOD);
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &options,
        &task(pid),
    )
    .unwrap();
    let mut ring = Ring::new(event, 4).unwrap();
    work.run_batch();
    work.finish();
    let records = drain(&mut ring, &layout_of(&options));
    let all = samples(&records);
    assert_eq!(all.len() as u64, N);
    assert!(all.iter().all(|s| s.period == Some(1)));
}

#[test]
fn refresh_enables_for_exactly_n_overflows_then_disables() {
    if !has(Feature::Tracepoints, "refresh") {
        return;
    }
    let mut work = Workload::batched(10, None, &["getppid", "40"]);
    let pid = work.pid();
    let options = Options {
        flags: flag::DISABLED,
        ..sampled(1, sample::TID | sample::ID)
    };
    let open = || {
        perf::Event::open(
            "sys_enter_getppid",
            &tracepoint("syscalls", "sys_enter_getppid"),
            &options,
            &task(pid),
        )
        .unwrap()
    };
    let mut once = Ring::new(open(), 4).unwrap();
    let mut twice = Ring::new(open(), 4).unwrap();
    let layout = layout_of(&options);

    // Opened disabled: nothing.
    work.run_batch();
    assert_eq!(drain(&mut once, &layout), vec![]);
    assert_eq!(count(once.event()), 0);

    once.event().refresh(3).unwrap();
    work.run_batch();
    assert_eq!(samples(&drain(&mut once, &layout)).len(), 3);
    assert_eq!(
        count(once.event()),
        3,
        "disabled right after the 3rd overflow"
    );

    // The limit is used up: the event stays disabled.
    work.run_batch();
    assert_eq!(drain(&mut once, &layout), vec![]);
    assert_eq!(count(once.event()), 3);

    // Refreshes add up ("Subsequent calls of this ioctl add the argument value to the current
    // count"): 3 + 2 overflows.
    //
    // Not tested: REFRESH (or ENABLE) *after* the limit was reached. Since "perf: Fix the
    // POLL_HUP delivery breakage" (6.16, in stable kernels too) __perf_event_overflow also
    // calls pmu->stop() at the limit; for tracepoints that sets PERF_HES_STOPPED, which
    // perf_trace_add() does not clear on the next sched-in, so the re-enabled event runs
    // (time_running advances) but drops every hit. Seen on 6.18: `once` would stay at 3.
    assert_eq!(drain(&mut twice, &layout), vec![]);
    twice.event().refresh(3).unwrap();
    twice.event().refresh(2).unwrap();
    work.run_batch();
    work.finish();
    assert_eq!(samples(&drain(&mut twice, &layout)).len(), 5);
    assert_eq!(count(twice.event()), 5);
    assert_eq!(drain(&mut once, &layout), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 5. Whole SAMPLE records

/// Byte offset of `field` in a tracepoint's format file.
fn field_offset(format: &str, field: &str) -> usize {
    let line = format
        .lines()
        .find(|l| {
            l.trim_start().starts_with("field:")
                && l.split(';').next().unwrap().ends_with(&format!(" {field}"))
        })
        .unwrap_or_else(|| panic!("no field {field} in\n{format}"));
    line.split(';')
        .find_map(|p| p.trim().strip_prefix("offset:"))
        .expect("offset")
        .parse()
        .expect("numeric offset")
}

/// The executable mappings of `pid` that contain `ip`.
fn mapping_of(pid: u32, ip: u64) -> Option<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines()
        .find(|l| {
            let mut parts = l.split_whitespace();
            let range = parts.next().unwrap_or("");
            let perms = parts.next().unwrap_or("");
            let (lo, hi) = range.split_once('-').unwrap_or(("0", "0"));
            let lo = u64::from_str_radix(lo, 16).unwrap_or(0);
            let hi = u64::from_str_radix(hi, 16).unwrap_or(0);
            perms.contains('x') && lo <= ip && ip < hi
        })
        .map(str::to_string)
}

#[test]
fn tracepoint_samples_carry_every_requested_field() {
    if !has(Feature::Tracepoints, "sample_fields") {
        return;
    }
    const N: u64 = 50;
    let tp_id = tracepoint_id("syscalls", "sys_enter_getppid");
    let fs = Tracefs::locate().unwrap();
    let format =
        std::fs::read_to_string(fs.root().join("events/syscalls/sys_enter_getppid/format"))
            .unwrap();
    let (type_at, pid_at, nr_at) = (
        field_offset(&format, "common_type"),
        field_offset(&format, "common_pid"),
        field_offset(&format, "__syscall_nr"),
    );
    let cpus = perf::cpus::online().unwrap();

    // Two batches of N: between them the workload waits, alive, for its next go byte.
    let mut work = Workload::batched(N, None, &["getppid", &(2 * N).to_string()]);
    let pid = work.pid();
    let options = Options {
        flags: flag::SAMPLE_ID_ALL | flag::COMM | flag::TASK,
        clockid: Some(libc::CLOCK_MONOTONIC),
        ..sampled(
            1,
            sample::IP
                | sample::TID
                | sample::TIME
                | sample::ADDR
                | sample::ID
                | sample::CPU
                | sample::PERIOD
                | sample::STREAM_ID
                | sample::RAW
                | sample::IDENTIFIER,
        )
    };
    let layout = layout_of(&options);
    let event = perf::Event::open(
        "sys_enter_getppid",
        &EventKind::Tracepoint(tp_id),
        &options,
        &task(pid),
    )
    .unwrap();
    let id = event.id().unwrap();
    let mut ring = Ring::new(event, 16).unwrap();

    // Every field of one sample, `time` on CLOCK_MONOTONIC within [from, to].
    let check = |s: &OwnedSample, ip: u64, from: u64, to: u64| {
        // sys_enter tracepoints sample the syscall's user registers: a user-mode IP, the
        // same call site in the C library's getppid every time.
        assert_eq!(s.misc & misc::CPUMODE_MASK, misc::USER);
        assert_eq!(s.ip, Some(ip));
        assert_eq!((s.pid, s.tid), (Some(pid), Some(pid)));
        let time = s.time.expect("time");
        assert!(
            (from..=to).contains(&time),
            "CLOCK_MONOTONIC sample time {time} outside [{from}, {to}]"
        );
        assert_eq!(s.addr, Some(0), "tracepoints have no data address");
        assert_eq!(
            (s.identifier, s.id, s.stream_id),
            (Some(id), Some(id), Some(id))
        );
        assert!(cpus.contains(&s.cpu.expect("cpu")));
        assert_eq!(s.period, Some(1));
        let raw = s.raw.as_deref().expect("raw");
        // The raw trace entry; the u32 size plus the data are padded to 8 bytes.
        assert!(
            raw.len() >= nr_at + 4 && (raw.len() + 4).is_multiple_of(8),
            "{raw:?}"
        );
        let u16_at = |o: usize| u16::from_ne_bytes(raw[o..o + 2].try_into().unwrap());
        let i32_at = |o: usize| i32::from_ne_bytes(raw[o..o + 4].try_into().unwrap());
        assert_eq!(u64::from(u16_at(type_at)), tp_id, "common_type");
        assert_eq!(i32_at(pid_at), pid as i32, "common_pid");
        assert_eq!(i64::from(i32_at(nr_at)), libc::SYS_getppid, "__syscall_nr");
    };

    let before = clock_ns(libc::CLOCK_MONOTONIC);
    work.run_batch();
    let after_batch = clock_ns(libc::CLOCK_MONOTONIC);
    let records = drain(&mut ring, &layout);
    let first = samples(&records);
    assert_eq!(first.len() as u64, N, "{records:?}");
    assert_eq!(
        records.len(),
        first.len(),
        "only samples so far: {records:?}"
    );
    let ip = first[0].ip.expect("ip");
    for s in &first {
        check(s, ip, before, after_batch);
    }
    assert!(
        first.windows(2).all(|w| w[0].time < w[1].time),
        "one thread's samples are in time order"
    );
    // Read while the workload is alive: its mappings vanish when it exits.
    let maps_line =
        mapping_of(pid, ip).expect("the sample IP lies in an executable mapping of the workload");
    assert!(
        maps_line.contains("libc"),
        "getppid's syscall instruction is in the C library: {maps_line}"
    );

    // finish() closes stdin: the workload runs its second batch without waiting, then exits.
    work.finish();
    let after_exit = clock_ns(libc::CLOCK_MONOTONIC);
    let records = drain(&mut ring, &layout);
    assert_eq!(records.len() as u64, N + 1, "{records:?}");
    for r in &records[..N as usize] {
        let Rec::Sample(s) = r else {
            panic!("expected a sample, got {r:?}");
        };
        check(s, ip, after_batch, after_exit);
    }
    // flag::TASK: the workload's exit is reported last, with the sample_id_all trailer. No
    // COMM (the workload did not exec or rename itself after the event was opened), no FORK.
    let Rec::Exit(exit, sid) = &records[N as usize] else {
        panic!("expected EXIT last, got {records:?}");
    };
    let me = std::process::id();
    assert_eq!((exit.pid, exit.tid, exit.ppid), (pid, pid, me));
    assert!((after_batch..=after_exit).contains(&exit.time));
    assert_eq!((sid.pid, sid.tid), (Some(pid), Some(pid)));
    assert_eq!((sid.id, sid.stream_id), (Some(id), Some(id)));
    let sid_time = sid.time.expect("time");
    assert!((after_batch..=after_exit).contains(&sid_time));
    assert!(cpus.contains(&sid.cpu.expect("cpu")));
}

// ---------------------------------------------------------------------------------------------
// 6. inherit + enable_on_exec on a launched command

/// Runs `/bin/sh -c script`, held before exec while an inherited, enable-on-exec counter of
/// sys_enter_getppid is opened on it; returns the count once the command has exited.
fn getppid_calls_of_command(script: &str) -> u64 {
    let argv: Vec<String> = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let mut child = tracer::launch::launch(&argv).unwrap();
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &Options {
            flags: flag::INHERIT | flag::ENABLE_ON_EXEC | flag::DISABLED,
            ..counting()
        },
        &task(child.pid()),
    )
    .unwrap();
    // Held before exec: disabled, never enabled.
    let held = event.read().unwrap();
    assert_eq!((held.values[0].value, held.time_enabled), (0, Some(0)));

    child.release().unwrap();
    // Waiting for the command to finish (not for something to maybe have happened).
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait() {
            break status;
        }
        assert!(Instant::now() < deadline, "'{script}' did not finish");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status, 0, "'{script}' failed");
    let counts = event.read().unwrap();
    assert!(counts.time_enabled.unwrap() > 0, "enabled at exec");
    counts.values[0].value
}

#[test]
fn inherited_event_enabled_on_exec_counts_the_whole_command_tree() {
    if !has(Feature::Tracepoints, "enable_on_exec") {
        return;
    }
    let prog = common::testprog().display().to_string();
    // The shell itself may call getppid: dash and bash both do once at startup, to set $PPID.
    // Measure it with a command that forks nothing.
    let shell = getppid_calls_of_command(":");
    assert!(shell <= 1, "the shell alone called getppid {shell} times");
    // Both testprog children inherit the event (enabled since the shell's exec); their counts
    // are folded into the parent event when they exit.
    let total = getppid_calls_of_command(&format!("{prog} getppid 7; {prog} getppid 5"));
    assert_eq!(total, shell + 7 + 5);
}

// ---------------------------------------------------------------------------------------------
// 7. Cgroup scope

/// Where cgroup v2 is mounted (`/sys/fs/cgroup` or, on hybrid hosts, `/sys/fs/cgroup/unified`).
fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let fstype = post.split_whitespace().next()?;
        let mount_point = pre.split_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| mount_point.into())
    })
}

/// A fresh cgroup v2 directory, removed on drop (once its tasks are gone).
struct TempCgroup(std::path::PathBuf);

impl TempCgroup {
    fn open(&self) -> OwnedFd {
        let path = CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; the returned fd is checked and then owned.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        assert!(
            fd >= 0,
            "open {}: {}",
            self.0.display(),
            std::io::Error::last_os_error()
        );
        // SAFETY: a new fd nothing else owns.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    fn add(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("move {pid} into {}: {e}", self.0.display()));
    }
}

impl Drop for TempCgroup {
    fn drop(&mut self) {
        // An exited, reaped task leaves its cgroup asynchronously: wait until it is empty.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::remove_dir(&self.0).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn cgroup_scope_counts_exactly_the_tasks_of_the_cgroup() {
    if !has(Feature::Tracepoints, "cgroup_scope") {
        return;
    }
    let Some(mount) = cgroup2_mount() else {
        common::skip("SKIPPED cgroup_scope: cgroup v2 is not mounted (tests do not mount it)");
        return;
    };
    // perf_event follows the v2 hierarchy unless a v1 hierarchy claimed it (/proc/cgroups
    // column 2 is that hierarchy's id, 0 for v2).
    let cgroups = std::fs::read_to_string("/proc/cgroups").unwrap_or_default();
    let v1 = cgroups.lines().any(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        cols.first() == Some(&"perf_event") && cols.get(1).is_some_and(|h| *h != "0")
    });
    if v1 {
        common::skip("SKIPPED cgroup_scope: the perf_event controller is on a cgroup v1 hierarchy");
        return;
    }
    const N: u64 = 77;
    let mut work = Workload::batched(N, None, &["getppid", &N.to_string()]);
    let pid = work.pid();
    let nanos = clock_ns(libc::CLOCK_MONOTONIC);
    let cgroup = TempCgroup(mount.join(format!("tracer-test-{}-{nanos}", std::process::id())));
    std::fs::create_dir(&cgroup.0).unwrap();
    let dir = Arc::new(cgroup.open());
    cgroup.add(pid);

    // Some kernels refuse cgroup-scoped events altogether (built without CONFIG_CGROUP_PERF:
    // Debian's kernels in the VM tier, where perf stat -G says <not supported> too).
    let probe = perf::Event::open(
        "task-clock cgroup cpu0",
        &EventKind::Software(perf::Software::TaskClock),
        &counting(),
        &Scope::Cgroup {
            dir: dir.clone(),
            cpu: 0,
        },
    );
    if let Err(e) = probe {
        common::skip(&format!(
            "SKIPPED cgroup_scope: this kernel refuses cgroup-scoped perf events: {e}"
        ));
        return;
    }
    let kind = tracepoint("syscalls", "sys_enter_getppid");
    let cpus = perf::cpus::online().unwrap();
    let events: Vec<perf::Event> = cpus
        .iter()
        .map(|&cpu| {
            perf::Event::open(
                format!("sys_enter_getppid cgroup cpu{cpu}"),
                &kind,
                &counting(),
                &Scope::Cgroup {
                    dir: dir.clone(),
                    cpu,
                },
            )
            .unwrap()
        })
        .collect();
    work.run_batch();
    work.finish();
    let total: u64 = events.iter().map(count).sum();
    assert_eq!(
        total,
        N,
        "per CPU: {:?}",
        events.iter().map(count).collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------------
// 8. prctl(PR_TASK_PERF_EVENTS_DISABLE / ENABLE)

#[test]
fn prctl_disables_and_enables_the_events_this_thread_opened() {
    if !has(Feature::Breakpoints, "prctl") || !has(Feature::Tracepoints, "prctl") {
        return;
    }
    static TARGET: AtomicU64 = AtomicU64::new(0);
    let watch = perf::Event::open(
        "mem:TARGET:w",
        &EventKind::Breakpoint {
            kind: BreakpointType::Write,
            addr: &TARGET as *const AtomicU64 as u64,
            len: 8,
        },
        &counting(),
        &Scope::CallingProcess { cpu: None },
    )
    .unwrap();
    // prctl acts on the events this thread *created*, whatever they watch: an event on another
    // process is switched too (perf_event_task_disable walks current->perf_event_list).
    let mut work = Workload::batched(30, None, &["getppid", "60"]);
    let remote = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &counting(),
        &task(work.pid()),
    )
    .unwrap();

    perf::event::enable_all_in_process(false).unwrap();
    for i in 0..5 {
        TARGET.store(i, Ordering::SeqCst);
    }
    work.run_batch();
    perf::event::enable_all_in_process(true).unwrap();
    for i in 0..3 {
        TARGET.store(i, Ordering::SeqCst);
    }
    work.run_batch();
    work.finish();
    assert_eq!(count(&watch), 3);
    assert_eq!(count(&remote), 30);
}
