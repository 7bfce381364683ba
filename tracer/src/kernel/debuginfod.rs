//! Separate debug files fetched by build-id from debuginfod servers, as gdb, perf and
//! systemtap fetch them through elfutils' client: the servers are `DEBUGINFOD_URLS` (several,
//! separated by spaces, tried in order), and what they give is kept in elfutils' cache, so
//! that a file one of those tools fetched is tracer's too and the other way round.
//!
//! The cache: `$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `$HOME/.cache/debuginfod_client`; a build-id's file is `BUILDID/debuginfo` in it. A server
//! that had no such file leaves an empty `debuginfo` there (elfutils' negative entry), which
//! stands for `cache_miss_s` seconds (the number in that file at the cache's root, 600 when
//! there is none) before the servers are asked again. `DEBUGINFOD_TIMEOUT` (seconds to connect
//! and to get an answer, 90 by default) and `DEBUGINFOD_MAXTIME` (seconds for a whole
//! download, none by default) are elfutils' too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The elfutils client's defaults (debuginfod-client.c): seconds a negative entry stands, and
/// seconds to connect or to get an answer.
const CACHE_MISS_SECS: u64 = 600;
const TIMEOUT_SECS: u64 = 90;

/// Where a run's fetches are told: set once by the binary to its note printer, so that the
/// user knows why a run waits and where the file went (gdb says `Downloading separate debug
/// info for ...` likewise). Unset (the library's tests), nothing is said.
static REPORT: OnceLock<fn(&str)> = OnceLock::new();

/// The build-ids no server had in this run, so that each is asked for once.
static MISSED: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub fn set_reporter(report: fn(&str)) {
    let _ = REPORT.set(report);
}

fn report(text: &str) {
    if let Some(report) = REPORT.get() {
        report(text);
    }
}

/// Where the servers are and where their files are kept, from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub urls: Vec<String>,
    pub cache: PathBuf,
    pub timeout: Duration,
    pub max_time: Option<Duration>,
}

impl Config {
    /// The configuration `var` gives (a lookup of the environment), `None` when no server is
    /// set: then nothing is fetched, as with elfutils. Words of `DEBUGINFOD_URLS` that are
    /// not URLs (newer elfutils' `ima:` policies) are passed over.
    pub fn from(var: impl Fn(&str) -> Option<String>) -> Option<Config> {
        let urls: Vec<String> = var("DEBUGINFOD_URLS")?
            .split_whitespace()
            .filter(|u| u.contains("://"))
            .map(|u| u.trim_end_matches('/').to_string())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        let cache = set("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| set("XDG_CACHE_HOME").map(|d| Path::new(&d).join("debuginfod_client")))
            .or_else(|| set("HOME").map(|d| Path::new(&d).join(".cache/debuginfod_client")))?;
        let secs = |name: &str| set(name)?.trim().parse::<u64>().ok();
        Some(Config {
            urls,
            cache,
            timeout: Duration::from_secs(secs("DEBUGINFOD_TIMEOUT").unwrap_or(TIMEOUT_SECS)),
            max_time: secs("DEBUGINFOD_MAXTIME")
                .filter(|s| *s > 0)
                .map(Duration::from_secs),
        })
    }

    fn from_env() -> Option<Config> {
        Config::from(|name| std::env::var(name).ok())
    }

    /// Where the debug file of `build_id` (hex) is kept.
    pub fn entry(&self, build_id: &str) -> PathBuf {
        self.cache.join(build_id).join("debuginfo")
    }

    /// How long a negative entry stands: the cache's `cache_miss_s`, else elfutils' 600 s.
    fn miss_time(&self) -> Duration {
        let secs = std::fs::read_to_string(self.cache.join("cache_miss_s"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(CACHE_MISS_SECS);
        Duration::from_secs(secs)
    }
}

/// What the cache holds for one build-id.
#[derive(Debug, PartialEq, Eq)]
enum Cached {
    File(PathBuf),
    /// A server said it has none, recently enough that it is not asked again.
    Missing,
    Unknown,
}

fn cached(config: &Config, build_id: &str) -> Cached {
    let path = config.entry(build_id);
    let Ok(meta) = std::fs::metadata(&path) else {
        return Cached::Unknown;
    };
    if meta.len() > 0 {
        return Cached::File(path);
    }
    let age = (meta.modified().ok())
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    match age < config.miss_time() {
        true => Cached::Missing,
        false => Cached::Unknown,
    }
}

/// The debug file of the ELF file `named` whose build-id is `build_id` (hex), from the cache
/// or fetched from the servers of `DEBUGINFOD_URLS` into it; `None` when no server is set or
/// none has it (said once per run and build-id, with each server's answer).
pub fn debug_file(named: &Path, build_id: &str) -> Option<PathBuf> {
    let config = Config::from_env()?;
    match cached(&config, build_id) {
        Cached::File(path) => return Some(path),
        Cached::Missing => return None,
        Cached::Unknown => {}
    }
    let mut missed = MISSED.lock().unwrap_or_else(|e| e.into_inner());
    if missed.iter().any(|m| m == build_id) {
        return None;
    }
    match fetch(&config, named, build_id) {
        Ok(path) => Some(path),
        Err(answers) => {
            report(&format!(
                "no debug info for {} (build-id {build_id}) from DEBUGINFOD_URLS: {}",
                named.display(),
                answers.join("; ")
            ));
            missed.push(build_id.to_string());
            None
        }
    }
}

/// Asks each server in turn; the file is written beside its place and renamed into it, so a
/// reader never sees half of one. On failure, each server's answer; when every server
/// answered that it has no such file, a negative entry is left.
fn fetch(config: &Config, named: &Path, build_id: &str) -> Result<PathBuf, Vec<String>> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(config.timeout))
        .timeout_recv_response(Some(config.timeout))
        .timeout_global(config.max_time)
        .http_status_as_error(false)
        .user_agent(concat!("tracer/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let entry = config.entry(build_id);
    let mut answers = Vec::new();
    let mut all_missing = true;
    for url in &config.urls {
        let address = format!("{url}/buildid/{build_id}/debuginfo");
        report(&format!(
            "downloading debug info for {} (build-id {build_id}) from {url}",
            named.display()
        ));
        let answer = match agent.get(&address).call() {
            Ok(response) if response.status() == 200 => {
                match store(&entry, response.into_body().as_reader()) {
                    Ok(size) => {
                        report(&format!(
                            "kept {} ({size} bytes) for {}",
                            entry.display(),
                            named.display()
                        ));
                        return Ok(entry);
                    }
                    Err(e) => {
                        all_missing = false;
                        format!("{url}: {e}")
                    }
                }
            }
            Ok(response) => {
                let status = response.status();
                all_missing &= status == 404;
                format!("{url}: {status}")
            }
            Err(e) => {
                all_missing = false;
                format!("{url}: {e}")
            }
        };
        answers.push(answer);
    }
    if all_missing {
        let _ = write_entry(&entry, &mut std::io::empty());
    }
    Err(answers)
}

fn store(entry: &Path, mut body: impl std::io::Read) -> std::io::Result<u64> {
    let size = write_entry(entry, &mut body)?;
    if size == 0 {
        let _ = std::fs::remove_file(entry);
        return Err(std::io::Error::other("the server sent an empty file"));
    }
    Ok(size)
}

/// Writes `body` as the entry at `entry` through a file of this process beside it.
fn write_entry(entry: &Path, body: &mut impl std::io::Read) -> std::io::Result<u64> {
    let dir = entry.parent().expect("an entry has a directory");
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(format!(".debuginfo.tracer.{}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&partial)?;
        let size = std::io::copy(body, &mut file)?;
        file.flush()?;
        std::fs::rename(&partial, entry)?;
        Ok(size)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Option<Config> {
        let vars: Vec<(String, String)> = (vars.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from(|name| {
            (vars.iter())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_environment_as_elfutils_reads_it() {
        assert_eq!(config(&[("HOME", "/root")]), None);
        assert_eq!(config(&[("DEBUGINFOD_URLS", " "), ("HOME", "/root")]), None);
        let c = config(&[
            (
                "DEBUGINFOD_URLS",
                "https://a.example/ ima:permissive http://127.0.0.1:8002",
            ),
            ("HOME", "/root"),
        ])
        .unwrap();
        assert_eq!(c.urls, ["https://a.example", "http://127.0.0.1:8002"]);
        assert_eq!(c.cache, Path::new("/root/.cache/debuginfod_client"));
        assert_eq!((c.timeout, c.max_time), (Duration::from_secs(90), None));
        let c = config(&[
            ("DEBUGINFOD_URLS", "http://h"),
            ("HOME", "/root"),
            ("XDG_CACHE_HOME", "/x"),
            ("DEBUGINFOD_TIMEOUT", "5"),
            ("DEBUGINFOD_MAXTIME", "60"),
        ])
        .unwrap();
        assert_eq!(c.cache, Path::new("/x/debuginfod_client"));
        assert_eq!(
            c.entry("ab12"),
            Path::new("/x/debuginfod_client/ab12/debuginfo")
        );
        assert_eq!(
            (c.timeout, c.max_time),
            (Duration::from_secs(5), Some(Duration::from_secs(60)))
        );
        let c = config(&[
            ("DEBUGINFOD_URLS", "http://h"),
            ("DEBUGINFOD_CACHE_PATH", "/c"),
        ]);
        assert_eq!(c.unwrap().cache, Path::new("/c"));
    }

    #[test]
    fn a_negative_entry_stands_for_cache_miss_s() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&[
            ("DEBUGINFOD_URLS", "http://h"),
            ("DEBUGINFOD_CACHE_PATH", &dir.path().display().to_string()),
        ])
        .unwrap();
        assert_eq!(cached(&c, "ab"), Cached::Unknown);
        write_entry(&c.entry("ab"), &mut std::io::empty()).unwrap();
        assert_eq!(cached(&c, "ab"), Cached::Missing);
        std::fs::write(dir.path().join("cache_miss_s"), "0\n").unwrap();
        assert_eq!(cached(&c, "ab"), Cached::Unknown);
        assert_eq!(store(&c.entry("cd"), &b"ELF"[..]).unwrap(), 3);
        assert_eq!(cached(&c, "cd"), Cached::File(c.entry("cd")));
        assert!(store(&c.entry("ef"), &b""[..]).is_err());
        assert_eq!(cached(&c, "ef"), Cached::Unknown);
        // Nothing of the writes is left beside the entries.
        let left: Vec<_> = std::fs::read_dir(c.cache.join("cd")).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
