//! Deterministic workloads for tracer's tests and benchmarks.
//!
//! `tracer-testprog [--wait] [--batch K] [--cpu C] MODE N [ARG]`
//!
//! - `--wait`: read one byte from stdin before working, so a tracer can attach to the pid first.
//! - `--batch K`: write one byte to stdout once started (ready: the dynamic loader's own opens
//!   are over), then work in batches of K units: before each batch read one byte from stdin
//!   (go), after it write one byte to stdout (done). Tests run phases this way without sleeping.
//! - `--cpu C`: pin the process to CPU C first.
//! - `--elapsed`: write `elapsed_ns N` to stderr at the end: the workload's own time, from after
//!   the arguments to its last unit (benchmarks take a tool's cost from it, not from wall time,
//!   which also holds the tool's start-up and exit work).
//!
//! Modes: `getppid N` (N getppid syscalls), `open N PATH` (N open+close of PATH),
//! `call N` (N calls of `tracer_testprog_target(i, 2*i)`, which returns 3*i),
//! `counter N` (N writes of `tracer_testprog_counter` from three threads, see [`counter`]),
//! `alternate N` (N writes of it from one thread, taking turns between
//! `tracer_testprog_bump` and `tracer_testprog_bump_unlocked`: two writing instructions),
//! `touch N` (N fresh anonymous pages written once each: exactly N page faults, see [`Pages`]),
//! `spin MS` (getppid in a loop for MS milliseconds, then the calls on stdout), `work N`, `nice N`.

use std::ffi::CString;
use std::io::Write;

/// The watchpoint target of `counter N`.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static tracer_testprog_counter: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

static COUNTER_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The one function that writes `tracer_testprog_counter`: returns the value it wrote. The
/// write is made under a lock, as shared counters are, so a watchpoint's trap (taken right
/// after the write, still inside the lock) sees exactly the value this call wrote.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn tracer_testprog_bump() -> u64 {
    let _guard = COUNTER_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    tracer_testprog_counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
}

/// The second function that writes `tracer_testprog_counter` (`alternate N`), without the
/// lock: a writing instruction of its own.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn tracer_testprog_bump_unlocked() -> u64 {
    tracer_testprog_counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
}

/// `counter N`: three threads write the counter N times in all. The first thread exists from
/// the start; with `--batch`, the program says ready, waits for go, and only then creates the
/// other two, so a watcher sees threads that existed and threads created after it attached.
fn counter(n: u64, batched: bool) {
    let share = move |k: u64| n / 3 + if k == 0 { n % 3 } else { 0 };
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let first = std::thread::spawn(move || {
        let _ = wait.recv();
        for _ in 0..share(0) {
            tracer_testprog_bump();
        }
    });
    if batched {
        signal(b"r");
        read_byte();
    }
    let later: Vec<_> = (1..3)
        .map(|k| {
            std::thread::spawn(move || {
                for _ in 0..share(k) {
                    tracer_testprog_bump();
                }
            })
        })
        .collect();
    let _ = go.send(());
    for t in std::iter::once(first).chain(later) {
        let _ = t.join();
    }
    if batched {
        signal(b"d");
    }
}

/// The unit of `work N` (N calls): a few hundred rounds of xorshift, about a third of a
/// microsecond here, with no system call and no memory traffic (the profile bench's
/// CPU-bound workload).
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn tracer_testprog_work(i: u64) -> u64 {
    let mut x = std::hint::black_box(i | 1);
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// The latency target of `sleeps`: sleeps `us` microseconds, returns `us`.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn tracer_testprog_sleep(us: u64) -> u64 {
    std::thread::sleep(std::time::Duration::from_micros(us));
    std::hint::black_box(us)
}

/// `sleeps N`: N rounds of 4.5 ms x 20, 17.5 ms x 10, 70 ms x 5. A sleep never ends early, so
/// each duration sits just above a power-of-two boundary with most of its log2 bucket above it
/// as headroom for scheduling delays (4.19-8.39 ms, 16.8-33.6 ms, 67.1-134 ms).
///
/// Each call's duration as measured here is printed to stderr (`slept NS DELAY BLOCKS`), so
/// tests can compare a tracer's histogram with what actually happened, whatever the scheduler
/// did. DELAY is the time this thread waited for a CPU meanwhile (the scheduler's `run_delay`):
/// a wait between a clock read and the call is in NS but not in the call itself. BLOCKS is
/// how many times the thread blocked meanwhile (its voluntary context switches): 0 when the
/// timer expired before the thread reached the switch that would have blocked it (its vCPU
/// held by the hypervisor, which DELAY does not see), a sleep no off-CPU pair can measure.
fn sleeps(rounds: u64) {
    let mut measured = Vec::new();
    for _ in 0..rounds {
        for (us, times) in [(4_500, 20), (17_500, 10), (70_000, 5)] {
            for _ in 0..times {
                let waited = run_delay_ns();
                let switched = voluntary_switches();
                let start = std::time::Instant::now();
                tracer_testprog_sleep(us);
                let ns = start.elapsed().as_nanos();
                let blocks = voluntary_switches() - switched;
                measured.push((ns, run_delay_ns().saturating_sub(waited), blocks));
            }
        }
    }
    let mut err = std::io::stderr().lock();
    for (ns, delay, blocks) in measured {
        let _ = writeln!(err, "slept {ns} {delay} {blocks}");
    }
}

/// This thread's voluntary context switches so far (`getrusage(RUSAGE_THREAD)`'s `ru_nvcsw`).
fn voluntary_switches() -> i64 {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage this function owns.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    usage.ru_nvcsw
}

/// Nanoseconds this thread has waited on a run queue (`/proc/thread-self/schedstat`, second
/// field); 0 where the kernel does not say.
fn run_delay_ns() -> u64 {
    (std::fs::read_to_string("/proc/thread-self/schedstat").ok())
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// `touch N`: N fresh anonymous pages, mapped (not touched) before the work starts, with huge
/// pages (THP and mTHP) disabled; unit `i` writes one byte to page `i`, which faults in exactly
/// that page. With `--batch N` the counted phase has exactly N page faults and no others.
struct Pages {
    addr: usize,
    page: usize,
}

impl Pages {
    fn map(n: u64) -> Pages {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = (n as usize).max(1) * page;
        // SAFETY: a new private anonymous mapping; nothing else refers to it. It lives until
        // the process exits.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            eprintln!("cannot map {n} pages: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
        // SAFETY: advice on the mapping made above.
        unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
        Pages {
            addr: addr as usize,
            page,
        }
    }

    fn touch(&self, i: u64) -> u64 {
        // SAFETY: `i` < N (the main loop's bound), so the byte lies in page `i` of the mapping.
        unsafe { std::ptr::write_volatile((self.addr + i as usize * self.page) as *mut u8, 1) };
        i
    }
}

/// `spin MS`: getppid in a loop for MS milliseconds (the clock is read through the vDSO, so
/// getppid is the only syscall of the loop); prints the number of calls.
fn spin(ms: u64) {
    let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    let mut calls = 0u64;
    while std::time::Instant::now() < end {
        for _ in 0..100 {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        calls += 100;
    }
    println!("{calls}");
}

/// The uprobe target: not inlined, unmangled, so tests can find it in the symbol table.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn tracer_testprog_target(a: u64, b: u64) -> u64 {
    std::hint::black_box(a + b)
}

fn usage() -> ! {
    eprintln!(
        "usage: tracer-testprog [--wait] [--batch K] [--cpu C] [--rename-at I NAME] [--elapsed] \
         getppid N | open N PATH | call N | counter N | alternate N | touch N | spin MS | sleeps N | work N | nice N"
    );
    std::process::exit(2);
}

/// Writes one protocol byte to stdout (ready, done).
fn signal(byte: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(byte).and_then(|()| out.flush());
}

/// Reads one protocol byte from stdin with one read(2) into the stack: std's buffered stdin
/// would allocate (and fault in) its buffer on first use, inside a counted phase.
fn read_byte() {
    let mut byte = 0u8;
    // SAFETY: reads at most one byte into a valid one-byte buffer.
    let _ = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
}

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
            std::process::exit(1);
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut batch = None;
    // Before call I, the thread renames itself (prctl PR_SET_NAME): comm caches must notice.
    let mut rename: Option<(u64, CString)> = None;
    let mut elapsed = false;
    loop {
        match args.first().map(String::as_str) {
            Some("--wait") => {
                args.remove(0);
                read_byte();
            }
            Some("--batch") => {
                args.remove(0);
                batch = Some(
                    args.remove(0)
                        .parse::<u64>()
                        .unwrap_or_else(|_| usage())
                        .max(1),
                );
            }
            Some("--elapsed") => {
                args.remove(0);
                elapsed = true;
            }
            Some("--cpu") => {
                args.remove(0);
                pin(args.remove(0).parse().unwrap_or_else(|_| usage()));
            }
            Some("--rename-at") if args.len() >= 3 => {
                args.remove(0);
                let at = args.remove(0).parse().unwrap_or_else(|_| usage());
                let name = CString::new(args.remove(0)).unwrap_or_else(|_| usage());
                rename = Some((at, name));
            }
            _ => break,
        }
    }
    let start = std::time::Instant::now();
    run(&args, batch, rename);
    if elapsed {
        eprintln!("elapsed_ns {}", start.elapsed().as_nanos());
    }
}

/// Runs the workload MODE N [ARG] of `args`.
fn run(args: &[String], batch: Option<u64>, rename: Option<(u64, CString)>) {
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage());
    let path = args
        .get(2)
        .map(|p| CString::new(p.clone()).unwrap_or_else(|_| usage()));
    let unit: Box<dyn Fn(u64) -> u64> = match args.first().map(String::as_str) {
        // SAFETY: getppid has no preconditions.
        Some("getppid") => Box::new(|_| unsafe { libc::getppid() } as u64),
        Some("open") => {
            let path = path.unwrap_or_else(|| usage());
            Box::new(move |_| {
                // SAFETY: `path` is a valid NUL-terminated string; the fd is closed right away.
                unsafe {
                    let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
                    if fd >= 0 {
                        libc::close(fd);
                    }
                    fd as u64
                }
            })
        }
        // Lowering its nice value takes CAP_SYS_NICE (one capability check, `cap_capable`
        // with cap 23); raising it back takes none.
        // SAFETY: setpriority has no memory preconditions.
        Some("nice") => Box::new(|_| unsafe {
            let lowered = libc::setpriority(libc::PRIO_PROCESS, 0, -1);
            libc::setpriority(libc::PRIO_PROCESS, 0, 0);
            lowered as u64
        }),
        Some("call") => Box::new(|i| tracer_testprog_target(i, 2 * i)),
        Some("work") => Box::new(|i| tracer_testprog_work(i)),
        Some("alternate") => Box::new(|i| match i % 2 {
            0 => tracer_testprog_bump(),
            _ => tracer_testprog_bump_unlocked(),
        }),
        Some("counter") => {
            counter(n, batch.is_some());
            return;
        }
        Some("touch") => {
            let pages = Pages::map(n);
            Box::new(move |i| pages.touch(i))
        }
        Some("spin") => {
            spin(n);
            return;
        }
        Some("sleeps") => {
            sleeps(n);
            return;
        }
        _ => usage(),
    };
    if batch.is_some() {
        signal(b"r");
    }
    let mut sum = 0u64;
    let mut i = 0;
    while i < n {
        let end = batch.map_or(n, |k| (i + k).min(n));
        if batch.is_some() {
            read_byte();
        }
        while i < end {
            if let Some((_, name)) = rename.as_ref().filter(|(at, _)| *at == i) {
                // SAFETY: PR_SET_NAME reads a NUL-terminated string (truncated to 15 bytes).
                unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
            }
            sum = sum.wrapping_add(unit(i));
            i += 1;
        }
        if batch.is_some() {
            signal(b"d");
        }
    }
    std::hint::black_box(sum);
}
