//! `tracer serve`'s lifecycle: a loopback (or any) HTTP listener on a single-threaded tokio
//! runtime, serving `/metrics` and `/` from an [`Exporter`], SIGHUP reloading it, a tick for
//! its housekeeping, and SIGTERM or SIGINT ending it.

use std::cell::RefCell;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};

use crate::output::metrics::Format;
use crate::Error;

/// What the server asks of the command.
pub trait Exporter {
    /// `/metrics`: the exposition in `format`.
    fn metrics(&mut self, format: Format) -> Result<String, Error>;
    /// `/`: an HTML page listing what is exported.
    fn index(&mut self) -> String;
    /// SIGHUP: read the config again and apply it (or keep the running one, saying why).
    fn reload(&mut self);
    /// Every tick: housekeeping (idle series).
    fn tick(&mut self);
}

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
        let (mut term, mut int, mut hup) = (
            handlers(SignalKind::terminate())?,
            handlers(SignalKind::interrupt())?,
            handlers(SignalKind::hangup())?,
        );
        let exporter = Rc::new(RefCell::new(exporter));
        let mut ticks = tokio::time::interval(tick);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The connections served, oldest first: (number, its task).
        let open: Rc<RefCell<std::collections::VecDeque<(u64, tokio::task::AbortHandle)>>> =
            Rc::default();
        let mut next_id = 0u64;
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
                    next_id += 1;
                    let task = tokio::task::spawn_local(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let response = respond(&request, &exporter);
                            async move { Ok::<_, Infallible>(response) }
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
                _ = hup.recv() => exporter.borrow_mut().reload(),
                _ = ticks.tick() => exporter.borrow_mut().tick(),
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        Ok(())
    })
}

/// One request's response: `/metrics` in the format the `Accept` header asks for, `/`, or an
/// error status.
fn respond<E: Exporter>(
    request: &Request<Incoming>,
    exporter: &RefCell<E>,
) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = content_type.parse() {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    };
    const TEXT: &str = "text/plain; charset=utf-8";
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "GET /metrics or /\n".into(),
        );
    }
    match request.uri().path() {
        "/metrics" => {
            let accept =
                (request.headers().get(hyper::header::ACCEPT)).and_then(|a| a.to_str().ok());
            let format = Format::from_accept(accept);
            match exporter.borrow_mut().metrics(format) {
                Ok(text) => reply(StatusCode::OK, format.content_type(), text),
                Err(e) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    format!("error: {}\n", crate::describe(&e)),
                ),
            }
        }
        "/" => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            exporter.borrow_mut().index(),
        ),
        _ => reply(
            StatusCode::NOT_FOUND,
            TEXT,
            "not found: tracer serve has /metrics and /\n".into(),
        ),
    }
}
