//! The examples of `tracer serve`: its help and docs/serve.md.

use super::*;

/// docs/serve.md's config, as the page shows it (the check fails when they differ).
pub(crate) const SERVE_TOML: &str = r#"[[metric]]
name = "syscalls_getppid"
help = "getppid calls by command"
probe = "syscalls:sys_enter_getppid"
count_by = ["comm"]
filter = 'comm != "sshd"'

[[metric]]
name = "read_bytes"
help = "bytes returned by read(2)"
probe = "syscalls:sys_exit_read"
hist = "ret"

[[metric]]
name = "read_latency_seconds"
help = "read(2) latency by command"
from = "syscalls:sys_enter_read"
to = "syscalls:sys_exit_read"
count_by = ["comm"]
"#;

/// `tracer serve serve.toml [--listen ...]` with the page's config: 500 getppid calls of
/// `./tracer-testprog` are on /metrics (loopback port 9435 either way), exactly; Ctrl-C ends it
/// with 0.
pub(crate) fn serve_docs_config(ctx: &Ctx, example: &str) {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/serve.md")).unwrap();
    assert!(
        page.contains(SERVE_TOML),
        "docs/serve.md's config is not SERVE_TOML"
    );
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.command(&words(example, &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    ctx.workload("./tracer-testprog", &["getppid", "500"]);
    let mut stream = std::net::TcpStream::connect("127.0.0.1:9435").unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).unwrap();
    assert!(
        body.contains("\ntracer_syscalls_getppid_total{comm=\"tracer-testprog\"} 500\n"),
        "{body}"
    );
    assert!(
        body.contains("\n# TYPE tracer_read_latency_seconds histogram\n"),
        "{body}"
    );
    let (stdout, stderr) = running.interrupted();
    assert_shown(example, &stdout, &stderr, &[]);
}

/// `tracer serve serve.toml --pprof`: the page's config, its banner naming the profile path,
/// and a profile of every CPU answered there while `./busy` runs.
pub(crate) fn serve_docs_pprof(ctx: &Ctx, example: &str) {
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.command(&words(example, &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    let mut busy = Command::new(ctx.path("busy"))
        .args(["3000", "0", "0", "0", "0"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stream = std::net::TcpStream::connect("127.0.0.1:9435").unwrap();
    stream
        .write_all(b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let _ = busy.kill();
    let _ = busy.wait();
    let head = String::from_utf8_lossy(&response[..response.len().min(200)]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("application/octet-stream"), "{head}");
    let (stdout, stderr) = running.interrupted();
    assert_shown(example, &stdout, &stderr, &[]);
}

/// docs/serve.md: `go tool pprof` fetching 2 s of every CPU from `tracer serve --pprof` while
/// `./busy` spins: its hot function is on top, as shown.
pub(crate) fn serve_docs_go_pprof(ctx: &Ctx, example: &str) {
    if !Path::new("/usr/bin/go").exists() {
        go_pprof_run(ctx, &[]);
        return;
    }
    std::fs::write(ctx.path("serve.toml"), SERVE_TOML).unwrap();
    let mut running = Running::spawn(ctx.command(&words("tracer serve serve.toml --pprof", &[])));
    running.wait_for(|l| l.starts_with("Serving"));
    let mut busy = Command::new(ctx.path("busy"))
        .args(["8000", "0", "0", "0", "0"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let args = shell_words(example, &[]);
    let args: Vec<&str> = args[3..].iter().map(String::as_str).collect();
    let fetched = go_pprof_run(ctx, &args);
    let _ = busy.kill();
    let _ = busy.wait();
    let _ = running.interrupted();
    let (stdout, stderr) = fetched.unwrap();
    assert!(
        first_top_line(&stdout).ends_with(" profile_spin"),
        "{stdout}"
    );
    assert_shown(example, &stdout, &stderr, &[]);
}
