//! Tier 2: the perf layer against the running kernel, with exact counts from known workloads.
//! Needs root. Tests skip (saying why) only when the kernel lacks the feature.

mod common;

use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{has, Workload};
use tracer::bpf::{Bpf, Sizing, SlotKind};
use tracer::kernel::features::Feature;
use tracer::kernel::tracefs::Tracefs;
use tracer::perf::attr::{format, BreakpointType};
use tracer::perf::{self, EventKind, Options, Scope, Software, Wakeup};
use tracer::session::{Attached, OutputRings};
use tracer_common::{
    Event, SlotConfig, AGG_COMM, SLOT_AGGREGATE, SLOT_RETURN, USES_AGGREGATE, USES_STREAM,
};

fn count_options() -> Options {
    Options {
        read_format: format::TOTAL_TIME_ENABLED | format::TOTAL_TIME_RUNNING,
        ..Options::default()
    }
}

fn tracepoint(category: &str, name: &str) -> EventKind {
    let id = Tracefs::locate()
        .expect("tracefs")
        .tracepoint_id(category, name)
        .expect("tracepoint id");
    EventKind::Tracepoint(id)
}

fn uprobe_pmu() -> perf::pmu::Pmu {
    perf::pmu::Pmus::default()
        .get("uprobe")
        .unwrap()
        .expect("uprobe PMU")
}

fn testprog_uprobe(ret: bool) -> EventKind {
    let pmu = uprobe_pmu();
    EventKind::Uprobe {
        pmu_type: pmu.type_,
        path: CString::new(common::testprog().into_os_string().into_encoded_bytes()).unwrap(),
        offset: common::testprog_offset("tracer_testprog_target"),
        retprobe_bit: if ret {
            Some(pmu.flag_bit("retprobe").expect("retprobe bit"))
        } else {
            None
        },
        ref_ctr: 0,
    }
}

/// Clock `clock` now, in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

#[test]
fn software_group_reads_task_clock_and_page_faults_atomically() {
    if !has(Feature::SoftwareEvents, "software_group") {
        return;
    }
    let options = Options {
        flags: perf::attr::flag::DISABLED,
        read_format: format::GROUP
            | format::ID
            | format::TOTAL_TIME_ENABLED
            | format::TOTAL_TIME_RUNNING,
        ..Options::default()
    };
    let member = Options {
        flags: 0,
        ..options.clone()
    };
    let scope = Scope::CallingProcess { cpu: None };
    let mut leader = perf::Event::open(
        "task-clock",
        &EventKind::Software(Software::TaskClock),
        &options,
        &scope,
    )
    .unwrap();
    let faults = perf::Event::open_member(
        &mut leader,
        "page-faults",
        &EventKind::Software(Software::PageFaults),
        &member,
        &scope,
    )
    .unwrap();
    let cs = perf::Event::open_member(
        &mut leader,
        "context-switches",
        &EventKind::Software(Software::ContextSwitches),
        &member,
        &scope,
    )
    .unwrap();

    const PAGES: usize = 256;
    let page = perf::sys::page_size();
    let start_cpu = thread_cpu_ns();
    let start_wall = monotonic_ns();
    leader.enable(true).unwrap();
    // Touch PAGES fresh anonymous pages (no huge pages): each first write faults once.
    // SAFETY: a fresh private anonymous mapping; we write only inside it and unmap it below.
    let memory = unsafe {
        let len = PAGES * page;
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(ptr, libc::MAP_FAILED);
        libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE);
        for p in 0..PAGES {
            std::ptr::write_volatile(ptr.cast::<u8>().add(p * page), 1);
        }
        (ptr, len)
    };
    let mut x = 0u64;
    let until = thread_cpu_ns() + 30_000_000;
    while thread_cpu_ns() < until {
        x = x.wrapping_mul(31).wrapping_add(7);
    }
    std::hint::black_box(x);
    leader.disable(true).unwrap();
    let wall = monotonic_ns() - start_wall;
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(memory.0, memory.1) };
    let spent = thread_cpu_ns() - start_cpu;

    let counts = leader.read().unwrap();
    assert_eq!(counts.values.len(), 3, "one read returns the whole group");
    assert_eq!(counts.values[1].id, Some(faults.id().unwrap()));
    assert_eq!(counts.values[2].id, Some(cs.id().unwrap()));
    let task_clock = counts.values[0].value;
    // task-clock counts the time this thread was on a CPU while enabled, by the perf clock
    // (wall time): it can be no more than the wall time between enable and disable. The
    // thread's CPU time (CLOCK_THREAD_CPUTIME_ID) comes from the scheduler's runtime, which
    // leaves out time the hypervisor stole from the vCPU: on a host with steal, task-clock is
    // larger (CI counted 40.2 ms of task-clock for 30.9 ms of thread CPU time), never smaller
    // but for the edges of the measured span. So: CPU time - tolerance <= task-clock <= wall.
    // The tolerance is the larger of 5 ms or 15 %; on emulated CPUs (the VM tier) 7.3 once
    // counted 39.4 ms of task-clock for 49.6 ms of thread CPU time (20 %): there it is 40 %.
    // A counter on the wrong thread, or one that did not count, is still far outside.
    let percent = match common::emulated(
        "software_group_reads_task_clock",
        "task-clock within 40 % of the thread's CPU time, not 15 %",
    ) {
        true => 40,
        false => 15,
    };
    let tolerance = (spent * percent / 100).max(5_000_000);
    // The perf clock and CLOCK_MONOTONIC are read at different instants (and an emulated
    // guest's clocks may drift apart): 1 ms past the wall time on a real CPU, the tolerance in
    // a guest.
    let slack = if percent == 15 { 1_000_000 } else { tolerance };
    assert!(
        task_clock + tolerance >= spent && task_clock <= wall + slack,
        "task-clock {task_clock} outside [thread CPU time {spent} - {tolerance}, wall time {wall} + {slack}]"
    );
    assert!(
        task_clock >= 30_000_000,
        "task-clock {task_clock} < the 30 ms busy loop"
    );
    assert!(
        counts.values[1].value >= PAGES as u64,
        "page-faults {} < {PAGES}",
        counts.values[1].value
    );
    assert_eq!(
        counts.running_fraction(),
        1.0,
        "software events are never multiplexed"
    );
}

#[test]
fn breakpoint_counts_exactly_n_writes() {
    if !has(Feature::Breakpoints, "breakpoint_counts") {
        return;
    }
    static TARGET: AtomicU64 = AtomicU64::new(0);
    static OTHER: AtomicU64 = AtomicU64::new(0);
    let kind = |addr: &AtomicU64| EventKind::Breakpoint {
        kind: BreakpointType::Write,
        addr: addr as *const AtomicU64 as u64,
        len: 8,
    };
    let event = perf::Event::open(
        "mem:TARGET:w",
        &kind(&TARGET),
        &count_options(),
        &Scope::CallingProcess { cpu: None },
    )
    .unwrap();
    for i in 0..23 {
        TARGET.store(i, Ordering::SeqCst);
        let _ = TARGET.load(Ordering::SeqCst); // reads do not count on a write watchpoint
    }
    assert_eq!(event.read().unwrap().values[0].value, 23);

    // Move the watchpoint without reopening: writes to TARGET stop counting, OTHER's count.
    event.modify_breakpoint(&kind(&OTHER)).unwrap();
    event.reset(false).unwrap();
    TARGET.store(1, Ordering::SeqCst);
    for i in 0..7 {
        OTHER.store(i, Ordering::SeqCst);
    }
    assert_eq!(event.read().unwrap().values[0].value, 7);
}

#[test]
fn tracepoint_counts_exactly_the_syscalls_of_a_child() {
    if !has(Feature::Tracepoints, "tracepoint_counts") {
        return;
    }
    let mut work = Workload::batched(1000, None, &["getppid", "1000"]);
    let event = perf::Event::open(
        "syscalls:sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &count_options(),
        &Scope::Task {
            pid: work.pid(),
            cpu: None,
        },
    )
    .unwrap();
    work.run_batch();
    work.finish();
    assert_eq!(event.read().unwrap().values[0].value, 1000);
}

#[test]
fn uprobe_counts_exactly_n_calls() {
    if !has(Feature::UprobePmu, "uprobe_counts") {
        return;
    }
    let mut work = Workload::batched(57, None, &["call", "57"]);
    let scope = Scope::Task {
        pid: work.pid(),
        cpu: None,
    };
    let entry =
        perf::Event::open("uprobe", &testprog_uprobe(false), &count_options(), &scope).unwrap();
    let ret = perf::Event::open(
        "uretprobe",
        &testprog_uprobe(true),
        &count_options(),
        &scope,
    )
    .unwrap();
    work.run_batch();
    work.finish();
    assert_eq!(entry.read().unwrap().values[0].value, 57);
    assert_eq!(ret.read().unwrap().values[0].value, 57);
}

/// Events of one slot from `pid`, in ring order.
fn collect(rings: &mut OutputRings, pid: u32, slot: u32, out: &mut Vec<Event>) {
    rings.drain(|e, _| {
        if e.pid() == pid && e.slot == slot {
            out.push(*e);
        }
    });
}

#[test]
fn bpf_output_ring_delivers_exactly_n_records_from_a_tracepoint() {
    if !has(Feature::Bpf, "bpf_output_ring") || !has(Feature::Tracepoints, "bpf_output_ring") {
        return;
    }
    let mut bpf = Bpf::load().unwrap();
    let mut rings = OutputRings::open(&mut bpf, 64, Wakeup::Default).unwrap();
    let mut work = Workload::batched(311, None, &["getppid", "311"]);
    let slot = bpf
        .take_slot(
            SlotKind::Tracepoint,
            SlotConfig {
                tgid: work.pid(),
                ..Default::default()
            },
        )
        .unwrap();
    // A tracepoint keeps one BPF program array for all its perf events, and the program runs for
    // every hit on every CPU whatever the event's scope: attach once, filter by tgid in BPF.
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &Options::default(),
        &Scope::Cpu(0),
    )
    .unwrap();
    let attached = Attached::new(&bpf, slot.clone(), event).unwrap();
    // The program is attached: the kernel lists it on the tracepoint (other tests running at the
    // same time may have programs there too: the array is per tracepoint).
    let id = bpf.program_id(&slot).unwrap();
    assert!(attached
        .event
        .as_ref()
        .expect("a perf event")
        .query_bpf()
        .unwrap()
        .contains(&id));
    work.run_batch();
    let pid = work.pid();
    work.finish();
    let mut events = Vec::new();
    collect(&mut rings, pid, slot.id, &mut events);
    assert_eq!(events.len(), 311);
    assert!(events
        .iter()
        .all(|e| e.tid() == pid && e.comm.starts_with(b"tracer-testprog")));
    assert!(events
        .windows(2)
        .all(|w| w[0].cpu != w[1].cpu || w[0].time_ns <= w[1].time_ns));
    let (hits, failed) = bpf.stats().unwrap();
    assert_eq!((hits, failed), (311, 0));
    assert_eq!(rings.losses().total(), 0);
}

#[test]
fn an_object_loaded_for_streaming_verifies_less_and_refuses_counting_slots() {
    if !has(Feature::Bpf, "narrowed_object") || !has(Feature::Tracepoints, "narrowed_object") {
        return;
    }
    let verified = |uses| {
        let mut bpf = Bpf::load_with(Sizing {
            uses,
            ..Sizing::default()
        })
        .unwrap();
        let slot = bpf
            .take_slot(SlotKind::Tracepoint, SlotConfig::default())
            .unwrap();
        bpf.verified_instructions(&slot).unwrap()
    };
    let (all, streaming) = (verified(tracer_common::USES_ALL), verified(USES_STREAM));
    println!(
        "verifier processed {all:?} instructions with every part, {streaming:?} streaming only"
    );
    // The kernel reports the count (`bpf_prog_info.verified_insns`) from 5.16 on.
    match (all, streaming) {
        (Some(all), Some(streaming)) => assert!(streaming < all, "{streaming} !< {all}"),
        _ => common::skip("SKIPPED narrowed_object's instruction counts: this kernel does not report verified instructions (5.16+)"),
    }

    let mut bpf = Bpf::load_with(Sizing {
        uses: USES_STREAM,
        ..Sizing::default()
    })
    .unwrap();
    let counting = SlotConfig {
        flags: SLOT_AGGREGATE,
        agg: AGG_COMM,
        ..Default::default()
    };
    let err = bpf.take_slot(SlotKind::Tracepoint, counting).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "a probe needs parts of tracer's BPF programs this run left out \
             (needs USES {USES_AGGREGATE:#x}, loaded with {USES_STREAM:#x})"
        )
    );
    assert_eq!(err.hints().len(), 1);
}

#[test]
fn uprobe_and_uretprobe_programs_report_arguments_and_return_values() {
    if !has(Feature::Bpf, "uprobe_bpf") || !has(Feature::UprobePmu, "uprobe_bpf") {
        return;
    }
    let mut bpf = Bpf::load().unwrap();
    let mut rings = OutputRings::open(&mut bpf, 64, Wakeup::Default).unwrap();
    let mut work = Workload::batched(40, None, &["call", "40"]);
    let scope = Scope::Task {
        pid: work.pid(),
        cpu: None,
    };
    let entry_slot = bpf
        .take_slot(SlotKind::Probe, SlotConfig::default())
        .unwrap();
    let ret_slot = bpf
        .take_slot(
            SlotKind::Probe,
            SlotConfig {
                flags: SLOT_RETURN,
                ..Default::default()
            },
        )
        .unwrap();
    let _entry = Attached::new(
        &bpf,
        entry_slot.clone(),
        perf::Event::open(
            "uprobe",
            &testprog_uprobe(false),
            &Options::default(),
            &scope,
        )
        .unwrap(),
    )
    .unwrap();
    let _ret = Attached::new(
        &bpf,
        ret_slot.clone(),
        perf::Event::open(
            "uretprobe",
            &testprog_uprobe(true),
            &Options::default(),
            &scope,
        )
        .unwrap(),
    )
    .unwrap();
    work.run_batch();
    let pid = work.pid();
    work.finish();
    let (mut entries, mut returns) = (Vec::new(), Vec::new());
    rings.drain(|e, _| {
        if e.pid() == pid {
            if e.slot == entry_slot.id {
                entries.push((e.time_ns, e.data[0], e.data[1]));
            } else if e.slot == ret_slot.id {
                returns.push((e.time_ns, e.data[6]));
            }
        }
    });
    entries.sort();
    returns.sort();
    let args: Vec<(u64, u64)> = entries.iter().map(|&(_, a, b)| (a, b)).collect();
    let rets: Vec<u64> = returns.iter().map(|&(_, r)| r).collect();
    assert_eq!(args, (0..40).map(|i| (i, 2 * i)).collect::<Vec<_>>());
    assert_eq!(rets, (0..40).map(|i| 3 * i).collect::<Vec<_>>());
}

#[test]
fn a_tiny_ring_reports_exactly_the_records_it_lost() {
    if !has(Feature::Bpf, "lost_records") || !has(Feature::Tracepoints, "lost_records") {
        return;
    }
    let cpu = perf::cpus::online().unwrap()[0];
    let mut bpf = Bpf::load().unwrap();
    // One data page holds about 21 events: a burst of 2000 must overflow it.
    let mut rings = OutputRings::open(&mut bpf, 1, Wakeup::Default).unwrap();
    let mut work = Workload::batched(2000, Some(cpu), &["getppid", "2001"]);
    let pid = work.pid();
    let slot = bpf
        .take_slot(
            SlotKind::Tracepoint,
            SlotConfig {
                tgid: pid,
                ..Default::default()
            },
        )
        .unwrap();
    let event = perf::Event::open(
        "sys_enter_getppid",
        &tracepoint("syscalls", "sys_enter_getppid"),
        &Options::default(),
        &Scope::Cpu(cpu),
    )
    .unwrap();
    let _attached = Attached::new(&bpf, slot.clone(), event).unwrap();
    let mut events = Vec::new();
    work.run_batch(); // 2000 calls, ring overflows
    collect(&mut rings, pid, slot.id, &mut events);
    // The kernel writes PERF_RECORD_LOST at the next successful output once there is room.
    work.run_batch(); // 1 more call
    collect(&mut rings, pid, slot.id, &mut events);
    work.finish();
    let lost = rings.losses().total();
    let (hits, failed) = bpf.stats().unwrap();
    assert_eq!(hits, 2001);
    assert!(lost > 0, "a 1-page ring cannot hold 2000 events");
    assert_eq!(
        failed, lost,
        "BPF-side output failures equal the kernel's LOST count"
    );
    assert_eq!(
        events.len() as u64 + lost,
        2001,
        "delivered + lost == produced"
    );
}

#[test]
fn records_that_wrap_the_ring_arrive_whole_and_in_order() {
    if !has(Feature::Bpf, "ring_wrap") || !has(Feature::UprobePmu, "ring_wrap") {
        return;
    }
    let mut bpf = Bpf::load().unwrap();
    let mut rings = OutputRings::open(&mut bpf, 1, Wakeup::Default).unwrap();
    // 15 events (~2.9 KiB) per batch into a 4 KiB ring drained between batches: the write
    // position walks around the ring and records straddle its end.
    let mut work = Workload::batched(15, None, &["call", "300"]);
    let pid = work.pid();
    let slot = bpf
        .take_slot(SlotKind::Probe, SlotConfig::default())
        .unwrap();
    let scope = Scope::Task { pid, cpu: None };
    let _a = Attached::new(
        &bpf,
        slot.clone(),
        perf::Event::open(
            "uprobe",
            &testprog_uprobe(false),
            &Options::default(),
            &scope,
        )
        .unwrap(),
    )
    .unwrap();
    let mut events = Vec::new();
    for _ in 0..20 {
        work.run_batch();
        collect(&mut rings, pid, slot.id, &mut events);
    }
    work.finish();
    let args: Vec<u64> = events.iter().map(|e| e.data[0]).collect();
    assert_eq!(args, (0..300).collect::<Vec<_>>());
    assert_eq!(rings.losses().total(), 0);
}

#[test]
fn unknown_tracepoint_and_bad_breakpoints_are_explained() {
    require_errors_have_hints();
}

fn require_errors_have_hints() {
    common::require_root();
    let err = Tracefs::locate()
        .unwrap()
        .tracepoint_id("syscalls", "sys_enter_nope")
        .unwrap_err();
    assert_eq!(err.to_string(), "no tracepoint 'syscalls:sys_enter_nope'");
    assert!(err.hints()[0].contains("tracer list"));
    let bad = EventKind::Breakpoint {
        kind: BreakpointType::Write,
        addr: 0x1001,
        len: 4,
    };
    let err = perf::Event::open(
        "mem:0x1001/4:w",
        &bad,
        &Options::default(),
        &Scope::CallingProcess { cpu: None },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid breakpoint mem:0x1001/4:w: address 0x1001 is not aligned to its length 4"
    );
    // A real errno from the kernel: a process that does not exist.
    let err = perf::Event::open(
        "task-clock",
        &EventKind::Software(Software::TaskClock),
        &Options::default(),
        &Scope::Task {
            pid: i32::MAX as u32,
            cpu: None,
        },
    )
    .unwrap_err();
    assert_eq!(err.errno(), Some(libc::ESRCH));
    assert!(err.hints()[0].contains("does not exist"));
}

/// The kernel's names of its addresses (`ksym_names`, `%pS` through BPF_PROG_TEST_RUN) are
/// kallsyms's: 200 functions of /proc/kallsyms spread over its text (each the only symbol at
/// its address, so that no alias is chosen differently), at their start and one byte in, in
/// one call (17 runs of the program), and an address past every symbol unnamed.
#[test]
fn kernel_addresses_named_by_the_kernel_are_kallsyms_s() {
    common::require_root();
    let text = std::fs::read_to_string("/proc/kallsyms").expect("/proc/kallsyms");
    let lines: Vec<(u64, &str, &str)> = (text.lines())
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
            let (kind, name) = (parts.next()?, parts.next()?);
            // Modules' symbols (a fourth column) are left to the namer's own unit tests.
            parts.next().is_none().then_some((addr, kind, name))
        })
        .collect();
    let mut sorted: Vec<u64> = lines.iter().map(|l| l.0).collect();
    sorted.sort_unstable();
    let alone = |a: u64| {
        let at = sorted.partition_point(|&x| x < a);
        sorted.get(at + 1).is_none_or(|&next| next > a + 1) && (at == 0 || sorted[at - 1] < a)
    };
    let functions: Vec<(u64, &str)> = (lines.iter())
        .filter(|(a, kind, name)| {
            matches!(*kind, "t" | "T") && *a != 0 && !name.starts_with("__pfx_") && alone(*a)
        })
        .map(|&(a, _, name)| (a, name))
        .collect();
    assert!(functions.len() > 1000, "{} functions", functions.len());
    let step = functions.len() / 100;
    let mut addrs = Vec::new();
    let mut expected = Vec::new();
    for &(a, name) in functions.iter().step_by(step).take(100) {
        addrs.extend([a, a + 1]);
        expected.extend([Some((name.to_string(), 0)), Some((name.to_string(), 1))]);
    }
    addrs.push(u64::MAX - 0xfff);
    expected.push(None);
    let mut bpf = Bpf::load_with(Sizing::default()).expect("load");
    let Some(mut namer) = bpf.kernel_namer() else {
        let (major, minor) = common::kernel_version();
        assert!(
            (major, minor) < (5, 13),
            "the namer loads from 5.13 on (bpf_snprintf)"
        );
        return common::skip("the kernel has no bpf_snprintf (5.13): kallsyms names all");
    };
    let named: Vec<Option<(String, u64)>> = (namer.name(&addrs).expect("runs"))
        .into_iter()
        .map(|k| k.map(|k| (k.name, k.offset)))
        .collect();
    assert_eq!(named, expected);
}
