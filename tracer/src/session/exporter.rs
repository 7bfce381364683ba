//! `tracer serve`'s lifecycle: a loopback (or any) HTTP listener on a single-threaded tokio
//! runtime, serving `/metrics`, `/debug/pprof/profile` and `/` from an [`Exporter`], SIGHUP
//! reloading it, a tick for its housekeeping, and SIGTERM or SIGINT ending it.

use std::cell::RefCell;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};

use crate::output::metrics::Exposition;
use crate::Error;

/// What the server asks of the command.
pub trait Exporter {
    /// `/metrics`: the exposition in `format`.
    fn metrics(&mut self, format: Exposition) -> Result<String, Error>;
    /// `/`: an HTML page listing what is exported.
    fn index(&mut self) -> String;
    /// What a reload's work gives back, from its thread ([`Exporter::reload`]).
    type Reloaded: Send + 'static;
    /// SIGHUP: read the config again; the work that takes long (attaching what is new), to
    /// run on a thread of its own while the running metrics are served, or `None` when
    /// there is none (the config was refused, and why was said).
    fn reload(&mut self) -> Option<Box<dyn FnOnce() -> Self::Reloaded + Send>>;
    /// The reload's work done: apply it (or keep the running set, saying why); `None` when
    /// its thread ended without a result.
    fn reloaded(&mut self, done: Option<Self::Reloaded>);
    /// Every tick: housekeeping (idle series).
    fn tick(&mut self);
    /// `/debug/pprof/profile?QUERY`: the profile the query asks for, to run on a thread of
    /// its own, `None` when profiles are not served, or why it cannot be (the query's error).
    fn profile(&mut self, query: Option<&str>) -> Result<Option<ProfileJob>, Error>;
}

/// `/debug/pprof/profile`'s work: how long it takes, and the work itself, run on a thread of
/// its own while scrapes go on; its bytes (a gzipped profile.proto) are the response.
pub struct ProfileJob {
    pub seconds: u64,
    pub run: Box<dyn FnOnce() -> Result<Vec<u8>, Error> + Send>,
}

/// When the profile being taken ends, if one is: one runs at a time, as net/http/pprof's.
type Profiling = Arc<Mutex<Option<Instant>>>;

/// Binds `addr`, with the fix for each way that fails.
pub fn listen(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr).map_err(|e| {
        let hint = match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                "another program (another tracer serve?) listens there: give another port with --listen".to_string()
            }
            std::io::ErrorKind::PermissionDenied => format!(
                "ports below 1024 need CAP_NET_BIND_SERVICE: use a higher port, e.g. --listen {}:9435",
                addr.ip()
            ),
            std::io::ErrorKind::AddrNotAvailable => format!(
                "{} is not an address of this machine: give one of its own, 127.0.0.1 or 0.0.0.0",
                addr.ip()
            ),
            _ => "give another address with --listen".to_string(),
        };
        Error::Runtime {
            message: format!("cannot listen on {addr}: {e}"),
            hints: vec![hint],
        }
    })
}

/// What one exporter gives its clients, whoever they are: any local user can connect to a
/// loopback port, so no client may hold more than this (docs/serve.md).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Connections at once; a new one past it closes the oldest.
    pub max_connections: usize,
    /// A request's headers must arrive within this.
    pub header_timeout: Duration,
    /// A connection lives at most this long (a scraper reconnects).
    pub lifetime: Duration,
    /// The most a connection buffers of a request (hyper's smallest is 8 KiB).
    pub max_request_bytes: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
            lifetime: Duration::from_secs(300),
            max_request_bytes: 16 << 10,
        }
    }
}

/// Where profiles are fetched, by the convention of Go's net/http/pprof (what `go tool pprof`,
/// Parca and Pyroscope ask for).
const PROFILE_PATH: &str = "/debug/pprof/profile";

/// How long `accept` rests after failing for want of fds (EMFILE, ENFILE): the connections
/// waiting in the backlog are taken once some close, not polled for in a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `exporter` on `listener` until SIGTERM or SIGINT, within `budget`.
pub fn run<E: Exporter + 'static>(
    listener: TcpListener,
    exporter: E,
    tick: Duration,
    budget: Budget,
) -> Result<(), Error> {
    let failed = |what: &str, e: std::io::Error| Error::Runtime {
        message: format!("cannot {what}: {e}"),
        hints: Vec::new(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| failed("start the async runtime", e))?;
    // One thread: the BPF objects and the exporter stay on it (connections are local tasks).
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        use tokio::signal::unix::{signal, SignalKind};
        listener
            .set_nonblocking(true)
            .map_err(|e| failed("listen", e))?;
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| failed("listen", e))?;
        let handlers = |kind| signal(kind).map_err(|e| failed("handle signals", e));
        // SIGQUIT (Ctrl-\\) ends it as SIGINT and SIGTERM do, as in every other command.
        let (mut term, mut int, mut quit, mut hup) = (
            handlers(SignalKind::terminate())?,
            handlers(SignalKind::interrupt())?,
            handlers(SignalKind::quit())?,
            handlers(SignalKind::hangup())?,
        );
        let exporter = Rc::new(RefCell::new(exporter));
        let profiling = Profiling::default();
        let mut ticks = tokio::time::interval(tick);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The connections served, oldest first: (number, its task).
        let open: Rc<RefCell<std::collections::VecDeque<(u64, tokio::task::AbortHandle)>>> =
            Rc::default();
        let mut next_id = 0u64;
        // The reload under way, and whether another SIGHUP came meanwhile (the config is read
        // again once it is done: the last signal's file is the one applied).
        let mut reloading: Option<tokio::sync::oneshot::Receiver<E::Reloaded>> = None;
        let mut again = false;
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                            continue;
                        }
                        // A connection reset before it was taken ends that one alone.
                        Err(_) => continue,
                    };
                    // At the cap, the oldest connection makes room: whoever holds many open
                    // loses its own first, and a scraper's fresh one is served.
                    while open.borrow().len() >= budget.max_connections {
                        let Some((_, oldest)) = open.borrow_mut().pop_front() else { break };
                        oldest.abort();
                    }
                    let (id, exporter, open_list) = (next_id, Rc::clone(&exporter), Rc::clone(&open));
                    let profiling = Arc::clone(&profiling);
                    next_id += 1;
                    let task = tokio::task::spawn_local(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let (exporter, profiling) = (Rc::clone(&exporter), Arc::clone(&profiling));
                            async move {
                                Ok::<_, Infallible>(respond(&request, &exporter, &profiling).await)
                            }
                        });
                        let io = hyper_util::rt::TokioIo::new(stream);
                        let connection = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(budget.header_timeout)
                            .max_buf_size(budget.max_request_bytes)
                            .serve_connection(io, service);
                        // A client that goes away mid-request, or outlives the connection's
                        // lifetime, is its own business.
                        let _ = tokio::time::timeout(budget.lifetime, connection).await;
                        open_list.borrow_mut().retain(|(other, _)| *other != id);
                    });
                    open.borrow_mut().push_back((id, task.abort_handle()));
                }
                _ = hup.recv() => match reloading {
                    Some(_) => again = true,
                    None => reloading = start_reload(&mut *exporter.borrow_mut()),
                },
                done = async { reloading.as_mut().expect("guarded").await }, if reloading.is_some() => {
                    reloading = None;
                    exporter.borrow_mut().reloaded(done.ok());
                    if std::mem::take(&mut again) {
                        reloading = start_reload(&mut *exporter.borrow_mut());
                    }
                }
                _ = ticks.tick() => exporter.borrow_mut().tick(),
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = quit.recv() => break,
            }
        }
        Ok(())
    })
}

/// Starts a reload: its work on a thread of its own, whose result comes back on the channel
/// returned (closed without one if the thread could not start or panicked).
fn start_reload<E: Exporter>(
    exporter: &mut E,
) -> Option<tokio::sync::oneshot::Receiver<E::Reloaded>> {
    let work = exporter.reload()?;
    let (send, receive) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("tracer-reload".into())
        .spawn(move || {
            let _ = send.send(work());
        });
    // Not started: the channel's sender went with the closure, and the loop learns it.
    drop(spawned);
    Some(receive)
}

/// One request's response: `/metrics` in the format the `Accept` header asks for, a profile,
/// `/`, or an error status.
async fn respond<E: Exporter>(
    request: &Request<Incoming>,
    exporter: &RefCell<E>,
    profiling: &Profiling,
) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    if !matches!(*request.method(), Method::GET | Method::HEAD)
        || (path == PROFILE_PATH && request.method() != Method::GET)
    {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            format!("GET /metrics, {PROFILE_PATH} or /\n").into(),
        );
    }
    match path {
        PROFILE_PATH => profile(request, exporter, profiling).await,
        "/metrics" => {
            let accept =
                (request.headers().get(hyper::header::ACCEPT)).and_then(|a| a.to_str().ok());
            let format = Exposition::from_accept(accept);
            match exporter.borrow_mut().metrics(format) {
                Ok(text) => reply(StatusCode::OK, format.content_type(), text.into()),
                Err(e) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    format!("error: {}\n", crate::describe(&e)).into(),
                ),
            }
        }
        "/" => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            exporter.borrow_mut().index().into(),
        ),
        _ => reply(
            StatusCode::NOT_FOUND,
            TEXT,
            format!("not found: tracer serve has /metrics, {PROFILE_PATH} and /\n").into(),
        ),
    }
}

/// The content type of tracer's own texts (errors, refusals).
const TEXT: &str = "text/plain; charset=utf-8";

/// A response of `status` with `body` as `content_type`.
fn reply(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// An error as tracer words it on the command line, `error:` then its `hint:` lines.
fn failed(status: StatusCode, e: &Error) -> Response<Full<Bytes>> {
    let mut text = format!("error: {}\n", crate::describe(e));
    for hint in e.hints() {
        text.push_str(&format!("hint: {hint}\n"));
    }
    reply(status, TEXT, text.into())
}

/// `GET /debug/pprof/profile`: one profile at a time, taken on a thread of its own (it ends
/// whether or not its client waits); a second request meanwhile is told when to retry.
async fn profile<E: Exporter>(
    request: &Request<Incoming>,
    exporter: &RefCell<E>,
    profiling: &Profiling,
) -> Response<Full<Bytes>> {
    // A bad query is refused whether or not a profile is being taken.
    let job = match exporter.borrow_mut().profile(request.uri().query()) {
        Ok(Some(job)) => job,
        Ok(None) => {
            return reply(
                StatusCode::NOT_FOUND,
                TEXT,
                "not found: profiles are served only with tracer serve --pprof\n".into(),
            )
        }
        Err(e) => return failed(StatusCode::BAD_REQUEST, &e),
    };
    {
        let mut running = profiling.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(end) = *running {
            let left = end.saturating_duration_since(Instant::now()).as_secs() + 1;
            let mut busy = reply(
                StatusCode::TOO_MANY_REQUESTS,
                TEXT,
                format!("a profile is being taken: one at a time; retry in {left} s\n").into(),
            );
            busy.headers_mut()
                .insert(hyper::header::RETRY_AFTER, left.into());
            return busy;
        }
        *running = Some(Instant::now() + Duration::from_secs(job.seconds));
    }
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let running = Arc::clone(profiling);
    let spawned = std::thread::Builder::new()
        .name("profile".into())
        .spawn(move || {
            let result = (job.run)();
            *running.lock().unwrap_or_else(|e| e.into_inner()) = None;
            let _ = sender.send(result);
        });
    if let Err(e) = spawned {
        *profiling.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let e = Error::Runtime {
            message: format!("cannot start the profile's thread: {e}"),
            hints: Vec::new(),
        };
        return failed(StatusCode::INTERNAL_SERVER_ERROR, &e);
    }
    match receiver.await {
        Ok(Ok(profile)) => {
            let mut response = reply(StatusCode::OK, "application/octet-stream", profile);
            response.headers_mut().insert(
                hyper::header::CONTENT_DISPOSITION,
                hyper::header::HeaderValue::from_static("attachment; filename=\"profile\""),
            );
            response
        }
        Ok(Err(e)) => failed(StatusCode::INTERNAL_SERVER_ERROR, &e),
        Err(_) => {
            // The thread panicked: its lock is released by `into_inner` above.
            *profiling.lock().unwrap_or_else(|e| e.into_inner()) = None;
            let e = Error::Runtime {
                message: "the profile's thread ended without a profile".into(),
                hints: Vec::new(),
            };
            failed(StatusCode::INTERNAL_SERVER_ERROR, &e)
        }
    }
}
