//! `tracer serve`: the config's metrics counted in the kernel, exported to Prometheus; SIGHUP
//! reloads the config (the unchanged metrics keep counting), SIGTERM ends it.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::ServeArgs;
use crate::kernel::tracefs::Tracefs;
use crate::output::metrics::{self, Exposition, IndexRow};
use crate::output::notes;
use crate::output::pprof;
use crate::plan::serve::{profile_request, serve_plan, MetricPlan, ServePlan};
use crate::probe::metric::{self as metric, Metric};
use crate::probe::profile as sampling;
use crate::session::exporter::{self, Exporter, ProfileJob};
use crate::Error;

pub fn run(args: ServeArgs) -> Result<i32, Error> {
    let plan = read_plan(&args.config, &args.listen)?;
    let listener = exporter::listen(plan.listen)?;
    let fs = Tracefs::locate()?;
    // Each metric's object holds its maps' and programs' fds, each probe an event, each
    // scraper a connection, and a reload attaches before it detaches.
    crate::launch::raise_open_files(1024);
    let mut metrics = Vec::new();
    for m in plan.metrics.clone() {
        metrics.push(attach(m, &fs, plan.idle_timeout, &args.config)?);
    }
    crate::output::summary::print_banner(&crate::output::summary::Banner {
        verb: "Serving",
        what: format!(
            "{} metrics of {} on http://{}/metrics",
            metrics.len(),
            args.config.display(),
            plan.listen,
        ),
        whom: None,
        detail: args
            .pprof
            .then(|| format!("(profiles on http://{}/debug/pprof/profile)", plan.listen)),
    });
    // Idle series are looked for ten times per timeout, at most every 10 s.
    let tick = (plan.idle_timeout / 10).clamp(Duration::from_millis(100), Duration::from_secs(10));
    let served = Served {
        config: args.config,
        listen: args.listen,
        plan,
        fs,
        metrics,
        pprof: args.pprof,
    };
    let budget = exporter::Budget {
        max_connections: args.max_connections as usize,
        ..exporter::Budget::default()
    };
    exporter::run(listener, served, tick, budget)?;
    Ok(0)
}

/// Reads and checks the config; nothing is attached before the whole file is valid.
fn read_plan(config: &Path, listen: &str) -> Result<ServePlan, Error> {
    let text = read_config(config)?;
    serve_plan(&config.display().to_string(), &text, listen)
}

/// The most bytes a config may hold: thousands of metrics fit in a tenth of it.
const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The config's text, from a regular file of at most [`CONFIG_MAX_BYTES`]: a device
/// (`/dev/zero` would be read until memory ran out), a FIFO (whose read would wait for a
/// writer, and stop every scrape meanwhile) or a directory is refused, at start as at reload.
fn read_config(config: &Path) -> Result<String, Error> {
    let refuse = |what: String| {
        Error::usage(
            format!("config {}: {what}", config.display()),
            vec!["give a TOML file of [[metric]] tables (docs/serve.md)".into()],
        )
    };
    // O_NONBLOCK: opening a FIFO must not wait for its writer either.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(config)
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    let meta = (file.metadata()).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    let kind = meta.file_type();
    let not_regular = match () {
        _ if kind.is_file() => None,
        _ if kind.is_dir() => Some("a directory"),
        _ if kind.is_fifo() => Some("a FIFO"),
        _ if kind.is_char_device() => Some("a character device"),
        _ if kind.is_block_device() => Some("a block device"),
        _ if kind.is_socket() => Some("a socket"),
        _ => Some("not a file"),
    };
    if let Some(kind) = not_regular {
        return Err(refuse(format!("is {kind}, not a regular file")));
    }
    let too_big = || {
        refuse(format!(
            "is larger than {} KiB, the most a config may hold",
            CONFIG_MAX_BYTES >> 10
        ))
    };
    if meta.len() > CONFIG_MAX_BYTES {
        return Err(too_big());
    }
    // Bounded also if the file grows while it is read.
    let mut text = String::new();
    (file.take(CONFIG_MAX_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if text.len() as u64 > CONFIG_MAX_BYTES {
        return Err(too_big());
    }
    Ok(text)
}

struct Served {
    config: PathBuf,
    listen: String,
    plan: ServePlan,
    fs: Tracefs,
    metrics: Vec<Metric>,
    /// `--pprof`: `/debug/pprof/profile` is served.
    pprof: bool,
}

impl Served {
    /// Applies the config as it is now: metrics whose table did not change keep counting;
    /// the new and changed ones are attached before any is detached, and if one cannot be,
    /// the running set stays as it was.
    fn apply(&mut self) -> Result<(usize, usize, usize), Error> {
        let plan = read_plan(&self.config, &self.listen)?;
        if plan.listen != self.plan.listen {
            notes::note(format!(
                "--listen is fixed for the process: still on {}",
                self.plan.listen
            ));
        }
        // Names are unique in a config, and an identity holds the name: one match at most.
        let kept: Vec<Option<usize>> = (plan.metrics.iter())
            .map(|m| (self.metrics.iter()).position(|o| o.plan.identity == m.identity))
            .collect();
        let mut attached = Vec::new();
        for (m, _) in plan.metrics.iter().zip(&kept).filter(|(_, k)| k.is_none()) {
            // On failure the ones attached so far are dropped (detached) with `attached`.
            attached.push(attach(
                m.clone(),
                &self.fs,
                plan.idle_timeout,
                &self.config,
            )?);
        }
        let added = attached.len();
        let mut attached = attached.into_iter();
        let mut running: Vec<Option<Metric>> = self.metrics.drain(..).map(Some).collect();
        for k in &kept {
            let metric = match k {
                Some(i) => running[*i].take(),
                None => attached.next(),
            };
            self.metrics.extend(metric);
        }
        let removed = running.iter().flatten().count();
        drop(running);
        self.plan = plan;
        Ok((self.metrics.len() - added, added, removed))
    }
}

impl Served {
    /// Uprobes whose file was replaced are attached to the new file (a stat each, at each
    /// scrape and tick: the first scrape after a deploy counts the new binary's calls).
    fn follow(&mut self) {
        for m in &mut self.metrics {
            for done in m.follow(&self.fs) {
                match done {
                    Ok(line) => notes::note(format!("metric '{}': {line}", m.plan.name)),
                    Err(e) => {
                        notes::note(format!("metric '{}': {}", m.plan.name, crate::describe(&e)))
                    }
                }
            }
        }
    }
}

impl Exporter for Served {
    fn metrics(&mut self, format: Exposition) -> Result<String, Error> {
        self.follow();
        let now = Instant::now();
        let mut families = Vec::with_capacity(self.metrics.len() + 7);
        for m in &mut self.metrics {
            families.push(m.read(now)?);
        }
        families.extend(metric::own_families(&self.metrics)?);
        Ok(metrics::render(families, format))
    }

    fn index(&mut self) -> String {
        let rows: Vec<IndexRow> = (self.metrics.iter())
            .map(|m| IndexRow {
                name: m.plan.family(),
                kind: if m.plan.is_histogram() {
                    "histogram"
                } else {
                    "counter"
                },
                help: m.plan.help.clone(),
                probes: m.probes(),
                series: m.series_counts().1,
            })
            .collect();
        metrics::index_html(&rows, &self.config.display().to_string())
    }

    fn reload(&mut self) {
        match self.apply() {
            Ok((kept, added, removed)) => notes::note(format!(
                "reloaded {}: {kept} metrics kept counting, {added} attached, {removed} detached",
                self.config.display()
            )),
            Err(e) => {
                let mut text = format!(
                    "error: reload of {} failed, the running metrics stay: {}",
                    self.config.display(),
                    crate::describe(&e)
                );
                for hint in e.hints() {
                    text.push_str(&format!("\nhint: {hint}"));
                }
                notes::emit(&(text + "\n"));
            }
        }
    }

    /// With `--pprof`: every CPU, as the query asks; the profile is taken with programs of its own, so the
    /// metrics count on meanwhile.
    fn profile(&mut self, query: Option<&str>) -> Result<Option<ProfileJob>, Error> {
        if !self.pprof {
            return Ok(None);
        }
        let request = profile_request(query)?;
        Ok(Some(ProfileJob {
            seconds: request.seconds,
            run: Box::new(move || {
                let started = std::time::SystemTime::now();
                let duration = Duration::from_secs(request.seconds);
                let profile = sampling::profile_every_cpu(request.hz, duration)?;
                let context =
                    pprof::Context::new(started, crate::kernel::symbols::kernel_build_id());
                Ok(pprof::encode(&profile, &context))
            }),
        }))
    }

    fn tick(&mut self) {
        self.follow();
        let now = Instant::now();
        for m in &mut self.metrics {
            if let Err(e) = m.expire(now) {
                notes::note(format!("{}: {}", m.plan.family(), crate::describe(&e)));
            }
        }
    }
}

/// [`Metric::attach`], with a usage error found only now (a filter over a field its
/// tracepoint lacks) placed as the config's own errors are: `FILE:LINE: metric 'NAME':`,
/// and the key's name where the message speaks of the flag (`--filter` is the key `filter`).
fn attach(m: MetricPlan, fs: &Tracefs, idle: Duration, config: &Path) -> Result<Metric, Error> {
    let (line, name) = (m.line, m.name.clone());
    Metric::attach(m, fs, idle).map_err(|e| match e {
        Error::Usage { message, hints } => {
            let message = match message.strip_prefix("--filter: ") {
                Some(rest) => format!("key 'filter': {rest}"),
                None => message,
            };
            Error::Usage {
                message: format!("{}:{line}: metric '{name}': {message}", config.display()),
                hints,
            }
        }
        other => other,
    })
}
