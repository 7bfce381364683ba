//! Where the examples run (`Ctx`: the directory of workloads), a started tracer
//! (`Running`), and the small readers every check shares.

use super::*;

/// Where the examples run: a directory with `./prog`, `./srv`, a Makefile, and the docs'
/// `./tracer-testprog`, `./chain`, `./tracer-chain` and `./tl`.
pub(crate) struct Ctx {
    pub(crate) dir: tempfile::TempDir,
}

impl Ctx {
    pub(crate) fn new() -> Ctx {
        // Not tmpfs: the block-layer example needs its writes to reach a disk.
        let dir = tempfile::Builder::new()
            .prefix("examples-")
            .tempdir_in(common::bin_dir())
            .unwrap();
        let workloads = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/workloads");
        for (name, extra) in [("prog", &[][..]), ("srv", &["-pthread"][..])] {
            let status = Command::new("cc")
                .args(["-g", "-O0", "-fno-omit-frame-pointer"])
                .args(extra)
                .arg("-o")
                .arg(dir.path().join(name))
                .arg(workloads.join(format!("{name}.c")))
                .status()
                .expect("run cc: the example workloads need a C compiler (apt-get install gcc)");
            assert!(status.success(), "cc failed on {name}.c");
        }
        std::fs::write(dir.path().join("Makefile"), "all:\n\t@true\n").unwrap();
        // docs/probe.md's Python script: the generator `tick` started three times.
        std::fs::write(
            dir.path().join("ticks.py"),
            "def tick(n):\n    yield n * 2\n\nfor i in range(3):\n    next(tick(i))\n",
        )
        .unwrap();
        // docs/tools.md's TLS workload: one connection to itself over loopback, a handshake
        // on each side, "hello" written and read each way (certificate: `tls_certificate`).
        std::fs::write(dir.path().join("tls.py"), TLS_PY).unwrap();
        // The docs' workloads, under the names the docs give them.
        for (name, built) in [
            ("tracer-testprog", testprog()),
            ("chain", common::chain_program()),
            ("tracer-chain", common::chain_program()),
            ("tl", common::timeline_program()),
            ("usdt", common::usdt_program()),
            ("busy", common::profile_program()),
            ("spin", common::spin_program()),
        ] {
            std::fs::copy(&built, dir.path().join(name))
                .unwrap_or_else(|e| panic!("copy {} to {name}: {e}", built.display()));
        }
        Ctx { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `tracer ARGS` in the examples' directory.
    pub(crate) fn command(&self, args: &[String]) -> Command {
        common::Tracer::new(args).dir(self.dir.path()).command()
    }

    pub(crate) fn run(&self, args: &[String]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Starts `tracer ARGS` and waits for its banner on stderr.
    pub(crate) fn start(&self, args: &[String]) -> Running {
        let mut running = Running::spawn(self.command(args));
        running.wait_for(|l| {
            l.starts_with("Tracing")
                || l.starts_with("Watching")
                || l.starts_with("Counting")
                || l.starts_with("Recording")
                || l.starts_with("Sampling")
                || l.starts_with("Timing")
        });
        running
    }

    /// Runs `./prog` (or any command) in the examples' directory; returns its pid.
    pub(crate) fn workload(&self, program: &str, args: &[&str]) -> u32 {
        // As a user runs it: cargo's LD_LIBRARY_PATH (the test's) would have the loader look
        // for libgcc_s in every hwcaps directory under target/, about 150 calls more on a CPU
        // with x86-64-v4 (a count of the workload's calls went from 1,062 to 1,218).
        let mut child = Command::new(program)
            .args(args)
            .env_remove("LD_LIBRARY_PATH")
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        let pid = child.id();
        let status = child.wait().unwrap();
        assert!(status.success(), "{program}: {status}");
        pid
    }

    /// dd's eight synchronous 4 KiB writes straight to the disk, to a file `name` here (not
    /// tmpfs: the block layer sees them); returns dd's pid.
    pub(crate) fn direct_writes(&self, name: &str) -> u32 {
        let out = self.path(name);
        let of = format!("of={}", out.display());
        let args = [
            "if=/dev/zero",
            &of,
            "bs=4096",
            "count=8",
            "oflag=direct,sync",
        ];
        self.workload("dd", &args)
    }

    /// `./prog --wait` ready to be traced by pid.
    pub(crate) fn waiting_prog(&self) -> Workload {
        let mut cmd = Command::new(self.path("prog"));
        cmd.arg("--wait");
        Workload::start(cmd)
    }
}

/// A running tracer whose stderr lines are collected as they come.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) lines: mpsc::Receiver<String>,
    pub(crate) stderr: String,
    /// Taken by [`Running::finish`].
    pub(crate) stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// A check that fails (panics) before `finish` leaves no tracer behind: a `tracer serve`
/// still listening on its port would fail the next example that wants it.
impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Running {
    pub(crate) fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tracer");
        let (tx, lines) = mpsc::channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines() {
                if tx.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            buf
        });
        Running {
            child,
            lines,
            stderr: String::new(),
            stdout: Some(stdout),
        }
    }

    /// Waits (at most 60 s in all) for a stderr line matching `pred`; on a timeout the tracer
    /// is killed, so a failed check leaves nothing running.
    pub(crate) fn wait_for(&mut self, pred: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = pred(&line);
                    self.stderr.push_str(&line);
                    self.stderr.push('\n');
                    if hit {
                        return;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!("tracer's stderr: {e}; so far:\n{}", self.stderr)
                }
            }
        }
    }

    pub(crate) fn interrupt(&self) {
        // SAFETY: kill(2) on our own child's pid, which it keeps until we wait for it.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
    }

    /// Waits for the exit; returns the status, stdout and the whole stderr.
    pub(crate) fn finish(mut self) -> (ExitStatus, String, String) {
        let status = self.child.wait().unwrap();
        let stdout = self.stdout.take().expect("finished once").join().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.stderr.push_str(&line);
            self.stderr.push('\n');
        }
        (status, text(&stdout), std::mem::take(&mut self.stderr))
    }

    pub(crate) fn interrupted(self) -> (String, String) {
        self.interrupt();
        let (status, stdout, stderr) = self.finish();
        assert_eq!(status.code(), Some(0), "Ctrl-C ends a run with 0\n{stderr}");
        (stdout, stderr)
    }
}

/// The words of an example as a shell splits them (single and double quotes), without the
/// leading `tracer`, with whole words replaced as `subs` says.
pub(crate) fn words(example: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let mut out = shell_words(example, subs);
    assert_eq!(out.first().map(String::as_str), Some("tracer"), "{example}");
    out.remove(0);
    out
}

/// Every word of `example` as the shell splits it (quotes removed), with `subs` applied.
pub(crate) fn shell_words(example: &str, subs: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in example.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, ' ') => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quotes in {example:?}");
    out.extend(word);
    for w in &mut out {
        if let Some((_, to)) = subs.iter().find(|(from, _)| w == from) {
            *w = to.to_string();
        }
    }
    out
}

pub(crate) fn ok(out: &Output) -> (String, String) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Lines of `text` containing `needle`.
pub(crate) fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// `prog.c:N` for the first line of tests/workloads/prog.c containing `needle`.
pub(crate) fn prog_line(needle: &str) -> String {
    source_line("tests/workloads/prog.c", needle)
}

/// `NAME:N` for the first line of the repository's file `path` containing `needle`.
pub(crate) fn source_line(path: &str, needle: &str) -> String {
    let source = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(path),
    )
    .unwrap();
    let n = source
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} in {path}"))
        + 1;
    let name = Path::new(path).file_name().unwrap().to_string_lossy();
    format!("{name}:{n}")
}

pub(crate) fn available(feature: Feature) -> bool {
    matches!(feature.check(), Status::Available { .. })
}

/// docs/tools.md's TLS workload (`python3 tls.py`): a server thread and a client in one
/// process, each one handshake, one write and one read, with `cert.pem` and `key.pem` here.
const TLS_PY: &str = r#"import socket, ssl, threading
srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
srv.load_cert_chain("cert.pem", "key.pem")
cli = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cli.load_verify_locations("cert.pem")
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
def serve():
    c, _ = ls.accept()
    s = srv.wrap_socket(c, server_side=True)
    s.sendall(s.recv(100).upper())
t = threading.Thread(target=serve)
t.start()
s = cli.wrap_socket(socket.create_connection(ls.getsockname()), server_hostname="localhost")
s.sendall(b"hello")
print(s.recv(100).decode())
t.join()
"#;
