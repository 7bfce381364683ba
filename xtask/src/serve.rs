//! `cargo xtask bench serve`: what `tracer serve` costs. A counted hit (getppid by comm) against
//! `tracer probe --count-by comm` on the same workload, as workload time and as the kernel's
//! own accounting of the BPF program's run time; and the time of one scrape of 10,000 series.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::peers::{
    both_places, bpf_run_time, build, launching, per_event, report, s, time, Place, Spread,
};
use crate::section;

const ADDR: &str = "127.0.0.1:19435";
const TP: &str = "syscalls:sys_enter_getppid";

pub fn serve() -> Result<()> {
    section("bench: tracer serve (a counted hit; a scrape of 10,000 series)");
    let (tracer, prog) = build()?;
    let dir = std::env::temp_dir().join("tracer-bench-serve");
    std::fs::create_dir_all(&dir).context("cannot create the bench's config directory")?;
    let getppid = dir.join("getppid.toml");
    std::fs::write(
        &getppid,
        format!("[[metric]]\nname = \"getppid\"\nprobe = \"{TP}\"\ncount_by = [\"comm\"]\n"),
    )?;
    let getppid = getppid.display().to_string();
    let (big, small) = (1_000_000, 100_000);
    let rows = |place: Place| {
        let base = |n: u64| crate::peers::getppid(&prog, place, n);
        let probe = [&tracer, "probe", "--count-by", "comm", TP];
        vec![
            (
                "tracer probe --count-by comm".to_string(),
                per_event(
                    &|n| place.tool(launching(&probe, base(n))),
                    &base,
                    big,
                    small,
                ),
            ),
            (
                "tracer serve, count_by = [\"comm\"]".to_string(),
                served_per_event(&tracer, &getppid, place, &base, big, small),
            ),
        ]
    };
    let json = both_places("counted hit: cost per event", "event", &rows);
    let runs = 1_000_000;
    let script = dir.join("getppid.sh");
    std::fs::write(&script, format!("{prog} getppid {runs}\nsleep 1\n"))?;
    let script = script.display().to_string();
    let bpf_rows = vec![
        (
            "tracer probe --count-by comm".to_string(),
            bpf_run_time(
                &s(&[&tracer, "probe", "--count-by", "comm", TP, "--", "/bin/sh", &script]),
                runs,
            ),
        ),
        (
            "tracer serve, count_by = [\"comm\"]".to_string(),
            // The shell becomes tracer serve (exec), whose programs' run time is read; the
            // workload starts a second later, once it is attached.
            bpf_run_time(
                &s(&[
                    "/bin/sh",
                    "-c",
                    &format!(
                        "(sleep 1; /bin/sh {script}) & exec {tracer} serve {getppid} --listen {ADDR}"
                    ),
                ]),
                runs,
            ),
        ),
    ];
    let bpf_json = report(
        "counted hit: BPF program run time per hit (kernel.bpf_stats_enabled), median of 5",
        "hit",
        &bpf_rows,
    );
    let mut scrapes = Vec::new();
    let mut failed = None;
    for (what, metric, extra) in [
        ("counter", "calls_total", ""),
        ("histogram", "calls_count", "hist = \"arg0\"\n"),
    ] {
        let scrape = scrape_time(&tracer, &prog, &dir, metric, extra);
        scrapes.push(match &scrape {
            Ok(Scrape { series, lines, ms: (median, min, max), rss_kib }) => {
                println!(
                    "scrape of {series} {what} series ({lines} lines): median {median:.1} ms ({min:.1}..{max:.1}), target < 50 ms for counters; exporter {:.1} MB resident",
                    *rss_kib as f64 / 1024.0
                );
                serde_json::json!({"kind": what, "series": series, "lines": lines, "median_ms": median, "min_ms": min, "max_ms": max, "rss_kib": rss_kib})
            }
            Err(e) => {
                println!("scrape of 10,000 {what} series: failed: {e:#}");
                serde_json::json!({"kind": what, "error": format!("{e:#}")})
            }
        });
        failed = failed.or(scrape.err());
    }
    crate::bench::save(
        "serve",
        &serde_json::json!({"bench": "serve", "version": 3, "rows": json, "bpf_rows": bpf_json, "scrapes": scrapes})
            .to_string(),
    )?;
    failed.map_or(Ok(()), Err)
}

/// One metric's scrapes: its series and exposition lines, the time of a scrape, and the
/// exporter's resident memory after them.
struct Scrape {
    series: usize,
    lines: usize,
    ms: Spread,
    rss_kib: u64,
}

/// ns per event of `work` while `tracer serve CONFIG` (on CPU 1 when pinned) counts it, over
/// the same work with nothing attached; each round starts and stops its own exporter.
fn served_per_event(
    tracer: &str,
    config: &str,
    place: Place,
    work: &dyn Fn(u64) -> Vec<String>,
    big: u64,
    small: u64,
) -> Result<Spread> {
    let mut costs = Vec::new();
    for _ in 0..crate::peers::ROUNDS {
        let served = Served::start(tracer, config, place)?;
        let traced = time(&work(big))? - time(&work(small))?;
        served.stop()?;
        let untraced = time(&work(big))? - time(&work(small))?;
        costs.push((traced - untraced) * 1e9 / (big - small) as f64);
    }
    costs.sort_by(f64::total_cmp);
    let n = costs.len();
    Ok((costs[n / 2], costs[0], costs[n - 1]))
}

/// Milliseconds per `GET /metrics` of a metric with 10,000 label sets (a uprobe counted by its
/// first argument, called with 10,000 values; with `extra`, a histogram of it): median, min and
/// max of 20 scrapes; series counted by the lines of `tracer_{family}{` (a histogram's
/// `_count`).
fn scrape_time(
    tracer: &str,
    prog: &str,
    dir: &std::path::Path,
    family: &str,
    extra: &str,
) -> Result<Scrape> {
    let config = dir.join("calls.toml");
    std::fs::write(
        &config,
        format!("[[metric]]\nname = \"calls\"\nprobe = \"uprobe:{prog}:tracer_testprog_target\"\ncount_by = [\"arg0\"]\n{extra}"),
    )?;
    let served = Served::start(tracer, &config.display().to_string(), Place::Pinned)?;
    let status = Command::new(prog)
        .args(["call", "10000"])
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("{prog} call 10000: {status}");
    }
    let body = get_metrics()?;
    let lines = body.lines().count();
    let series = body
        .lines()
        .filter(|l| l.starts_with(&format!("tracer_{family}{{")))
        .count();
    let mut times = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        get_metrics()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let rss_kib = std::fs::read_to_string(format!("/proc/{}/status", served.0.id()))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0);
    served.stop()?;
    times.sort_by(f64::total_cmp);
    Ok(Scrape {
        series,
        lines,
        ms: (times[times.len() / 2], times[0], times[times.len() - 1]),
        rss_kib,
    })
}

/// `GET /metrics` of the exporter on [`ADDR`]: the body.
fn get_metrics() -> Result<String> {
    let mut stream = TcpStream::connect(ADDR)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => bail!(
            "GET /metrics: {}",
            text.lines().next().unwrap_or("no answer")
        ),
    }
}

/// `tracer serve CONFIG` on CPU 1, answering on [`ADDR`].
struct Served(Child);

impl Served {
    fn start(tracer: &str, config: &str, place: Place) -> Result<Served> {
        let argv = place.tool(s(&[tracer, "serve", config, "--listen", ADDR]));
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run tracer serve")?;
        let mut served = Served(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while get_metrics().is_err() {
            if Instant::now() > deadline || served.0.try_wait()?.is_some() {
                bail!("tracer serve {config} did not answer on {ADDR}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(served)
    }

    /// SIGTERM, and its exit.
    fn stop(mut self) -> Result<()> {
        let status = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()?;
        if !status.success() {
            bail!("kill -TERM {}: {status}", self.0.id());
        }
        self.0.wait()?;
        Ok(())
    }
}
