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
    let max_connections = args.max_connections as usize;
    let mut metrics = Vec::new();
    let mut fds_each = 0;
    // Counted once, around the first metric (a read of /proc/self/fd each).
    let (before, _) = crate::launch::open_files();
    for m in plan.metrics.clone() {
        metrics.push(attach(m, &fs, plan.idle_timeout, &args.config)?);
        if metrics.len() == 1 {
            // The first metric's cost tells whether the rest can fit, before they are
            // attached one by one (a thousand take tens of seconds).
            fds_each = crate::launch::open_files().0.saturating_sub(before).max(1);
            room_for(
                plan.metrics.len(),
                1,
                fds_each,
                max_connections,
                &args.config,
            )?;
        }
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
        fds_each,
        max_connections,
    };
    let budget = exporter::Budget {
        max_connections,
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
    /// The open files the first metric took: what each new one is taken to need.
    fds_each: u64,
    /// Connections the server may hold (`--max-connections`), an open file each.
    max_connections: usize,
}

/// Whether `more` metrics past the `done` attached fit in the open files this process may have,
/// at `each` per metric with `connections` served beside them; refused before they are
/// attached, rather than failing at the one that does not fit.
fn room_for(
    total: usize,
    done: usize,
    each: u64,
    connections: usize,
    config: &Path,
) -> Result<(), Error> {
    let (open, limit) = crate::launch::open_files();
    let more = total.saturating_sub(done) as u64;
    // A few for the runtime, a profile's thread and reading the config.
    let needed = open + more * each + connections as u64 + 32;
    if needed <= limit {
        return Ok(());
    }
    Err(Error::Runtime {
        message: format!(
            "{}: {total} metrics need about {needed} open files ({each} each, and one per \
             connection), and this process may have {limit}",
            config.display()
        ),
        hints: vec![
            format!("raise the limit: `ulimit -n {needed}` in the shell, LimitNOFILE={needed} in a systemd unit"),
            "or count in fewer metrics: one metric's `probe` may list several probes, and `count_by` splits them".into(),
        ],
    })
}

/// A reload's metrics attached on its thread, and what applying them needs.
struct Reload {
    plan: ServePlan,
    /// For each metric of the new plan, the running metric it keeps (the same table).
    kept: Vec<Option<usize>>,
    /// The new and changed metrics, in the plan's order; on failure the ones attached before
    /// were dropped (detached).
    attached: Result<Vec<Metric>, Error>,
}

impl Served {
    /// Reads the config as it is now; the running metrics whose table did not change are
    /// kept, the new and changed ones are to be attached (by the work returned).
    fn read_again(&mut self) -> Result<Box<dyn FnOnce() -> Reload + Send>, Error> {
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
        let new: Vec<MetricPlan> = (plan.metrics.iter().zip(&kept))
            .filter(|(_, k)| k.is_none())
            .map(|(m, _)| m.clone())
            .collect();
        // The new ones are attached before the old ones are detached.
        let running = self.metrics.len();
        room_for(
            running + new.len(),
            running,
            self.fds_each,
            self.max_connections,
            &self.config,
        )?;
        let (fs, config) = (self.fs.clone(), self.config.clone());
        Ok(Box::new(move || {
            let idle = plan.idle_timeout;
            let attached = (new.into_iter())
                .map(|m| attach(m, &fs, idle, &config))
                .collect();
            Reload {
                plan,
                kept,
                attached,
            }
        }))
    }

    /// Applies a reload: the new metrics take their places, the removed and replaced ones
    /// are detached. Gives (kept, attached, detached).
    fn apply(&mut self, reload: Reload) -> Result<(usize, usize, usize), Error> {
        let attached = reload.attached?;
        let added = attached.len();
        let mut attached = attached.into_iter();
        let mut running: Vec<Option<Metric>> = self.metrics.drain(..).map(Some).collect();
        for k in &reload.kept {
            let metric = match k {
                Some(i) => running[*i].take(),
                None => attached.next(),
            };
            self.metrics.extend(metric);
        }
        let removed = running.iter().flatten().count();
        drop(running);
        self.plan = reload.plan;
        Ok((self.metrics.len() - added, added, removed))
    }

    /// A reload refused: the running metrics stay, and the error says why.
    fn refused(&self, e: &Error) {
        let mut text = format!(
            "error: reload of {} failed, the running metrics stay: {}",
            self.config.display(),
            crate::describe(e)
        );
        for hint in e.hints() {
            text.push_str(&format!("\nhint: {hint}"));
        }
        notes::emit(&(text + "\n"));
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

    type Reloaded = Reload;

    fn reload(&mut self) -> Option<Box<dyn FnOnce() -> Reload + Send>> {
        match self.read_again() {
            Ok(work) => Some(work),
            Err(e) => {
                self.refused(&e);
                None
            }
        }
    }

    fn reloaded(&mut self, done: Option<Reload>) {
        let applied = match done {
            Some(reload) => self.apply(reload),
            None => Err(Error::Runtime {
                message: "the reload's thread ended without its metrics".into(),
                hints: Vec::new(),
            }),
        };
        match applied {
            Ok((kept, added, removed)) => notes::note(format!(
                "reloaded {}: {kept} metrics kept counting, {added} attached, {removed} detached",
                self.config.display()
            )),
            Err(e) => self.refused(&e),
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
