//! `tracer trace -y`/`-yy` and `-P`: what each traced process's file descriptors refer to,
//! kept from the calls it makes (an open's path, a dup's source, a close, a chdir, an exec's
//! close-on-exec, a fork's copy) and, for a descriptor no traced call made, read from
//! `/proc/PID/fd` (`kernel::fds`). strace reads `/proc` while the tracee is stopped; tracer
//! shows calls after they ended, when a short-lived process may be gone, so what the calls
//! said comes first and `/proc` fills in.

use hashbrown::{HashMap, HashSet};

use crate::kernel::fds::{self, Sockets};
use crate::output::trace::{Call, CallEnd};
use crate::plan::trace::FD_MAKERS;

/// `AT_FDCWD`: the working directory of the `*at` calls.
const AT_FDCWD: i128 = -100;
/// `O_CLOEXEC` in open(2)'s and dup3(2)'s flags.
const O_CLOEXEC: i128 = 0o2000000;
/// fcntl(2)'s duplicating commands.
const F_DUPFD: i128 = 0;
const F_DUPFD_CLOEXEC: i128 = 1030;
/// close_range(2)'s flag that marks instead of closing.
const CLOSE_RANGE_CLOEXEC: i128 = 4;

#[derive(Clone, Debug)]
struct Entry {
    /// The link as `/proc/PID/fd/N` shows it: an absolute path, `pipe:[N]`, `socket:[N]`...;
    /// `None` when the call that made it did not say and `/proc` could no longer tell.
    link: Option<String>,
    cloexec: bool,
}

#[derive(Clone, Debug, Default)]
struct Process {
    /// `None`: closed by a call the run saw (not looked up in `/proc`, where the number may
    /// since have been given to another file).
    fds: HashMap<i32, Option<Entry>>,
    cwd: Option<String>,
    /// Its table holds every descriptor it has (seeded at launch or adoption, or copied
    /// from such a parent): a number it lacks is not looked up in `/proc`, where it may since
    /// have been given to another file. `-a`'s processes are looked up.
    complete: bool,
}

/// The descriptors of every traced process, by process id.
pub struct FdTable {
    /// 0: `-P` alone (nothing shown), 1: `-y` (paths), 2: `-yy` (sockets' endpoints and
    /// devices' numbers too).
    level: u8,
    processes: HashMap<u32, Process>,
    /// `-yy`: the socket tables as of this batch of calls, per network namespace's process.
    sockets: HashMap<u32, Sockets>,
    devices: HashMap<String, Option<String>>,
    /// `-yy`: the protocol of each socket a traced call made, by inode (`TCP`, `UDPv6`,
    /// `UNIX-STREAM`), for a socket `/proc/PID/net` no longer lists (strace's `TCP:[11539]`).
    protocols: HashMap<u64, &'static str>,
    /// `-P`: the paths, as given (made absolute against tracer's directory) and resolved.
    paths: HashSet<String>,
}

impl FdTable {
    pub fn new(level: u8, paths: &[std::path::PathBuf]) -> FdTable {
        let here = std::env::current_dir().unwrap_or_default();
        let mut wanted = HashSet::new();
        for path in paths {
            let absolute = here.join(path);
            wanted.insert(lexical(&absolute.to_string_lossy()));
            if let Ok(real) = std::fs::canonicalize(&absolute) {
                wanted.insert(real.to_string_lossy().into_owned());
            }
        }
        FdTable {
            level,
            processes: HashMap::new(),
            sockets: HashMap::new(),
            devices: HashMap::new(),
            protocols: HashMap::new(),
            paths: wanted,
        }
    }

    /// What a process starts with: the launched command inherits tracer's standard streams
    /// and directory; an adopted process has what `/proc` lists.
    pub fn seed(&mut self, pid: u32, fds: Vec<(i32, String)>, cwd: Option<String>) {
        let process = self.processes.entry(pid).or_default();
        for (fd, link) in fds {
            let cloexec = false;
            let link = Some(link);
            process.fds.insert(fd, Some(Entry { link, cloexec }));
        }
        process.cwd = process.cwd.take().or(cwd);
        process.complete = true;
    }

    /// Whether the process has a table: seeded, forked from a known one, or adopted.
    pub fn knows(&self, pid: u32) -> bool {
        self.processes.contains_key(&pid)
    }

    /// A process whose fork the run did not see: its descriptors are read from `/proc`.
    pub fn adopt(&mut self, pid: u32) {
        self.process(pid);
    }

    /// A new batch of calls: sockets' states are read again when asked.
    pub fn new_batch(&mut self) {
        self.sockets.clear();
    }

    /// The process's leader has exited: its table goes (`-a`, where it is read from `/proc`
    /// again if another thread goes on).
    pub fn exited(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// Shows the call's descriptors (`-y`), keeps what it changed, and says whether it
    /// passes `-P` (always, without -P). `inodes`: those of the pipes or sockets it made, as
    /// the kernel read them at its exit (0: unread).
    pub fn observe(&mut self, call: &mut Call, inodes: [u64; 2]) -> bool {
        let pid = call.pid;
        let mut touched = Vec::new();
        // The arguments as they were when the call began (before a close or dup2).
        let mut shown = Vec::new();
        for (i, arg) in call.args.iter().enumerate() {
            if arg.fd && (arg.value >= 0 || arg.value == AT_FDCWD) {
                if let Some(link) = self.lookup(pid, arg.value as i32) {
                    shown.push((i, link));
                }
            }
        }
        for (i, link) in shown {
            let text = self.shown(pid, &link);
            touched.push(link);
            if self.level > 0 {
                let arg = &mut call.args[i];
                arg.text = format!("{}<{text}>", arg.text);
            }
        }
        if call.name == "recvmsg" && call.end == CallEnd::Returned && call.ret >= 0 {
            self.received(call);
        }
        for arg in call.args.iter_mut().filter(|a| !a.inner_fds.is_empty()) {
            // From the last, so that each offset still points past its number.
            for &end in arg.inner_fds.iter().rev() {
                let start = number_start(&arg.text, end);
                let Some(link) =
                    (arg.text[start..end].parse().ok()).and_then(|fd| self.lookup(pid, fd))
                else {
                    continue;
                };
                if self.level > 0 {
                    let text = self.shown(pid, &link);
                    arg.text.insert_str(end, &format!("<{text}>"));
                }
                touched.push(link);
            }
        }
        if !self.paths.is_empty() {
            touched.extend(self.named_paths(call));
        }
        if call.end == CallEnd::Returned && call.ret >= 0 {
            self.update(call, &mut touched, inodes);
        }
        self.paths.is_empty() || touched.iter().any(|t| self.paths.contains(t))
    }

    /// The descriptors a recvmsg received (`SCM_RIGHTS`: its message's inner descriptors),
    /// new in the process: what `/proc` says they are now, close-on-exec with
    /// `MSG_CMSG_CLOEXEC`.
    fn received(&mut self, call: &Call) {
        let cloexec = call
            .args
            .get(2)
            .is_some_and(|a| a.value & MSG_CMSG_CLOEXEC != 0);
        for arg in &call.args {
            for &end in &arg.inner_fds {
                let start = number_start(&arg.text, end);
                let Ok(fd) = arg.text[start..end].parse::<i32>() else {
                    continue;
                };
                let link = fds::fd_link(call.pid, fd);
                self.process(call.pid)
                    .fds
                    .insert(fd, Some(Entry { link, cloexec }));
            }
        }
    }

    /// The call's path arguments, resolved as the kernel would (against its directory
    /// argument or the working directory), for `-P`.
    fn named_paths(&mut self, call: &Call) -> Vec<String> {
        let dirfd = (call.args.first())
            .filter(|a| a.fd && a.strings.is_none())
            .map(|a| a.value as i32);
        let names: Vec<String> = (call.args.iter())
            .filter_map(|a| a.strings.as_ref())
            .filter(|s| !s.array && s.items.len() == 1)
            .map(|s| s.items[0].clone())
            .collect();
        let mut out = Vec::new();
        for name in names {
            let absolute = self.absolute(call.pid, dirfd, &name);
            if let Ok(real) = std::fs::canonicalize(&absolute) {
                out.push(real.to_string_lossy().into_owned());
            }
            out.push(absolute);
        }
        out
    }

    /// What a successful call changed: a new descriptor (shown in the return), a closed one,
    /// a new directory, an exec's closed descriptors, a child's copy.
    fn update(&mut self, call: &mut Call, touched: &mut Vec<String>, inodes: [u64; 2]) {
        let pid = call.pid;
        let ret = call.ret;
        let value = |i: usize| call.args.get(i).map(|a| a.value);
        let new_fd = match call.name {
            "fcntl" => matches!(value(1), Some(F_DUPFD | F_DUPFD_CLOEXEC)),
            name => FD_MAKERS.contains(&name),
        };
        match call.name {
            "close" => self.forget(pid, value(0), value(0)),
            "close_range" if value(2).unwrap_or(0) & CLOSE_RANGE_CLOEXEC == 0 => {
                self.forget(pid, value(0), value(1))
            }
            "chdir" => {
                let name = call.args.first().and_then(|a| a.strings.as_ref());
                if let Some(name) = name.and_then(|s| s.items.first()) {
                    let dir = self.absolute(pid, None, name);
                    self.process(pid).cwd = Some(real_or(dir));
                }
            }
            "fchdir" => {
                if let Some(link) = value(0).and_then(|fd| self.lookup(pid, fd as i32)) {
                    self.process(pid).cwd = Some(link);
                }
            }
            "execve" | "execveat" => {
                for entry in self.process(pid).fds.values_mut() {
                    if entry.as_ref().is_some_and(|e| e.cloexec) {
                        *entry = None;
                    }
                }
            }
            "clone" | "clone3" | "fork" | "vfork" if ret > 0 => {
                let thread = call.args.iter().any(|a| a.text.contains("CLONE_THREAD"));
                if !thread {
                    self.fork(pid, ret as u32);
                }
            }
            "pipe" | "pipe2" | "socketpair" => self.pair(call, touched, inodes),
            _ => {}
        }
        if new_fd {
            let fd = ret as i32;
            let entry = self.new_entry(call, inodes[0]);
            if let (Some(protocol), true) = (self.protocol(call), inodes[0] != 0) {
                self.protocols.insert(inodes[0], protocol);
            }
            self.process(pid).fds.insert(fd, Some(entry));
            if let Some(link) = self.lookup(pid, fd) {
                if self.level > 0 {
                    call.ret_text = format!("{}<{}>", call.ret_text, self.shown(pid, &link));
                }
                touched.push(link);
            }
        }
    }

    /// What the descriptor a call returned refers to: an open's path (resolved now, as
    /// `/proc` would show it), a dup's source, a socket's inode as the kernel read it, else
    /// `/proc`'s link now if it is of the kind the call makes (a number given again since
    /// to a file is not taken for the socket).
    fn new_entry(&mut self, call: &Call, inode: u64) -> Entry {
        let pid = call.pid;
        let flags = |i: usize| call.args.get(i).map_or(0, |a| a.value);
        let (link, cloexec) = match call.name {
            "open" | "openat" | "openat2" | "creat" => {
                let at = usize::from(call.name.starts_with("openat"));
                let dirfd = (at == 1).then(|| call.args[0].value as i32);
                let name =
                    (call.args.get(at)).and_then(|a| a.strings.as_ref()?.items.first().cloned());
                let link = name.map(|name| real_or(self.absolute(pid, dirfd, &name)));
                let cloexec = match call.name {
                    "open" | "openat" => flags(at + 1) & O_CLOEXEC != 0,
                    _ => false,
                };
                (link, cloexec)
            }
            "dup" | "dup2" | "dup3" | "fcntl" => {
                let fd = call.args.first().map(|a| a.value as i32);
                let link = fd.and_then(|fd| self.lookup(pid, fd));
                let cloexec = match call.name {
                    "dup3" => flags(2) & O_CLOEXEC != 0,
                    "fcntl" => flags(1) == F_DUPFD_CLOEXEC,
                    _ => false,
                };
                (link, cloexec)
            }
            name => {
                let link = inode_link(name, inode).or_else(|| fds::fd_link(pid, call.ret as i32));
                (link.filter(|l| made_by(name, l)), false)
            }
        };
        Entry { link, cloexec }
    }

    /// pipe, pipe2, socketpair: the two descriptors of the filled array, by the inodes the
    /// kernel read, else from `/proc` (a pipe's two ends are one pipe).
    fn pair(&mut self, call: &mut Call, touched: &mut Vec<String>, inodes: [u64; 2]) {
        let pid = call.pid;
        if let Some(protocol) = self.protocol(call) {
            for inode in inodes.into_iter().filter(|&i| i != 0) {
                self.protocols.insert(inode, protocol);
            }
        }
        let name = call.name;
        let Some(arg) = call.args.iter_mut().find(|a| a.text.starts_with('[')) else {
            return;
        };
        let inner = arg.text.trim_start_matches('[').trim_end_matches(']');
        let fds: Vec<i32> = inner.split(", ").filter_map(|f| f.parse().ok()).collect();
        let [a, b] = fds[..] else {
            return;
        };
        let mut links = [(a, inodes[0]), (b, inodes[1])].map(|(fd, inode)| {
            (inode_link(name, inode).or_else(|| fds::fd_link(pid, fd))).filter(|l| made_by(name, l))
        });
        if name != "socketpair" {
            let one = links[0].clone().or_else(|| links[1].clone());
            links = [one.clone(), one];
        }
        let mut texts = Vec::new();
        for (fd, link) in [a, b].into_iter().zip(links) {
            let text = match &link {
                Some(link) => {
                    touched.push(link.clone());
                    format!("{fd}<{}>", self.shown(pid, link))
                }
                None => fd.to_string(),
            };
            texts.push(text);
            let cloexec = false;
            self.process(pid)
                .fds
                .insert(fd, Some(Entry { link, cloexec }));
        }
        if self.level > 0 {
            arg.text = format!("[{}]", texts.join(", "));
        }
    }

    /// The protocol of the socket a socket, socketpair or accept call made, as strace's -yy
    /// names it: from the call's domain and type, or the listening socket's.
    fn protocol(&mut self, call: &Call) -> Option<&'static str> {
        let text = |i: usize| call.args.get(i).map_or("", |a| a.text.as_str());
        if call.name.starts_with("accept") {
            let listening = self.lookup(call.pid, call.args.first()?.value as i32)?;
            return self.protocols.get(&fds::socket_inode(&listening)?).copied();
        }
        if call.name != "socket" && call.name != "socketpair" {
            return None;
        }
        let kind = text(1);
        let stream = kind.starts_with("SOCK_STREAM");
        Some(match text(0) {
            "AF_INET" if stream => "TCP",
            "AF_INET" if kind.starts_with("SOCK_DGRAM") => "UDP",
            "AF_INET6" if stream => "TCPv6",
            "AF_INET6" if kind.starts_with("SOCK_DGRAM") => "UDPv6",
            "AF_UNIX" | "AF_LOCAL" if stream => "UNIX-STREAM",
            "AF_UNIX" | "AF_LOCAL" if kind.starts_with("SOCK_DGRAM") => "UNIX-DGRAM",
            "AF_UNIX" | "AF_LOCAL" if kind.starts_with("SOCK_SEQPACKET") => "UNIX-SEQPACKET",
            "AF_NETLINK" => "NETLINK",
            _ => return None,
        })
    }

    /// A new process gets a copy of its parent's table (what it already learnt stays).
    fn fork(&mut self, parent: u32, child: u32) {
        let Some(from) = self.processes.get(&parent).cloned() else {
            return;
        };
        let to = self.process(child);
        for (fd, entry) in from.fds {
            to.fds.entry(fd).or_insert(entry);
        }
        to.cwd = to.cwd.take().or(from.cwd);
        to.complete |= from.complete;
    }

    /// Closed: descriptors `first..=last`.
    fn forget(&mut self, pid: u32, first: Option<i128>, last: Option<i128>) {
        let (Some(first), Some(last)) = (first, last) else {
            return;
        };
        let (first, last) = (first as u32 as i64, last as u32 as i64);
        let process = self.process(pid);
        // Each closed number the table knows, and the one a close names.
        let known: Vec<i32> = process.fds.keys().copied().collect();
        for fd in known.into_iter().chain([first as i32]) {
            if (first..=last).contains(&i64::from(fd)) {
                process.fds.insert(fd, None);
            }
        }
    }

    fn process(&mut self, pid: u32) -> &mut Process {
        self.processes.entry(pid).or_default()
    }

    /// What descriptor `fd` (or `AT_FDCWD`'s directory) of the process refers to: as its
    /// calls said, else as `/proc` says now (kept).
    fn lookup(&mut self, pid: u32, fd: i32) -> Option<String> {
        if i128::from(fd) == AT_FDCWD {
            let process = self.process(pid);
            if process.cwd.is_none() {
                process.cwd = fds::cwd(pid);
            }
            return process.cwd.clone();
        }
        let process = self.process(pid);
        if let Some(entry) = process.fds.get(&fd) {
            return entry.as_ref().and_then(|e| e.link.clone());
        }
        if process.complete {
            return None;
        }
        let link = fds::fd_link(pid, fd)?;
        let cloexec = false;
        let entry = Entry {
            link: Some(link.clone()),
            cloexec,
        };
        self.process(pid).fds.insert(fd, Some(entry));
        Some(link)
    }

    /// A name the process used, made absolute against `dirfd` (or its working directory),
    /// without resolving links.
    fn absolute(&mut self, pid: u32, dirfd: Option<i32>, name: &str) -> String {
        if name.starts_with('/') {
            return lexical(name);
        }
        let base = self.lookup(pid, dirfd.unwrap_or(AT_FDCWD as i32));
        match base {
            Some(base) => lexical(&format!("{base}/{name}")),
            None => name.to_string(),
        }
    }

    /// A link as `-y` (the link) or `-yy` (a socket's endpoints, a device's numbers) shows it.
    fn shown(&mut self, pid: u32, link: &str) -> String {
        if self.level < 2 {
            return link.to_string();
        }
        if let Some(inode) = fds::socket_inode(link) {
            let sockets = self.sockets.entry(pid).or_insert_with(|| Sockets::of(pid));
            return match (sockets.describe(inode), self.protocols.get(&inode)) {
                (Some(described), _) => described.to_string(),
                (None, Some(protocol)) => format!("{protocol}:[{inode}]"),
                (None, None) => link.to_string(),
            };
        }
        if !link.starts_with("/dev/") {
            return link.to_string();
        }
        let device = (self.devices.entry(link.to_string()))
            .or_insert_with(|| fds::device(link))
            .clone();
        match device {
            Some(device) => format!("{link}<{device}>"),
            None => link.to_string(),
        }
    }
}

/// The link `/proc` shows for a pipe's or socket's inode (`pipe:[24698]`), if call `name`
/// makes pipes or sockets and the kernel read one.
fn inode_link(name: &str, inode: u64) -> Option<String> {
    let kind = match name {
        "socket" | "socketpair" | "accept" | "accept4" => "socket",
        "pipe" | "pipe2" => "pipe",
        _ => return None,
    };
    (inode != 0).then(|| format!("{kind}:[{inode}]"))
}

/// Whether `/proc`'s link is of the kind call `name` makes: a socket of socket(2), a pipe
/// of pipe(2), an anonymous inode of eventfd(2)...
fn made_by(name: &str, link: &str) -> bool {
    let kind = match name {
        "socket" | "socketpair" | "accept" | "accept4" => "socket:[",
        "pipe" | "pipe2" => "pipe:[",
        "memfd_create" => "/memfd:",
        "memfd_secret" => "secretmem",
        "open_by_handle_at" | "mq_open" => "/",
        _ => "anon_inode:",
    };
    link.starts_with(kind)
}

/// The path with its links resolved, where it still exists.
fn real_or(path: String) -> String {
    match std::fs::canonicalize(&path) {
        Ok(real) => real.to_string_lossy().into_owned(),
        Err(_) => path,
    }
}

/// `.` and `..` and repeated slashes taken out of an absolute path, without reading links.
fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Where the number that ends at byte `end` of `text` starts.
fn number_start(text: &str, end: usize) -> usize {
    text[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |s| s + 1)
}

/// recvmsg's flag that makes the descriptors it receives close-on-exec.
const MSG_CMSG_CLOEXEC: i128 = 0x4000_0000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::trace::{Shown, Strings};

    fn arg(value: i128, text: &str, fd: bool, path: Option<&str>) -> Shown {
        Shown {
            name: String::new(),
            value,
            text: text.into(),
            strings: path.map(|p| Strings {
                items: vec![p.into()],
                array: false,
                cut: false,
            }),
            fd,
            inner_fds: Vec::new(),
        }
    }

    fn call(name: &'static str, pid: u32, args: Vec<Shown>, ret: i64) -> Call<'static> {
        Call {
            time_ns: 0,
            pid,
            tid: pid,
            comm: "t",
            name,
            args,
            at_entry: 0,
            end: CallEnd::Returned,
            resumed: false,
            ret,
            ret_text: ret.to_string(),
            errno: None,
            duration_ns: 0,
            stacks: Vec::new(),
        }
    }

    /// A process that is not running (pid 0 has no /proc entry): only its calls tell.
    #[test]
    fn calls_keep_the_table_as_the_kernel_does() {
        let mut table = FdTable::new(1, &[]);
        table.seed(0, vec![(1, "/dev/null".into())], Some("/tmp".into()));
        let open = |dir: i128, name: &str, flags: i128| {
            vec![
                arg(dir, "AT_FDCWD", true, None),
                arg(0x1000, "\"x\"", false, Some(name)),
                arg(flags, "O_RDONLY", false, None),
            ]
        };
        let mut c = call("openat", 0, open(AT_FDCWD, "nope/../a.txt", O_CLOEXEC), 3);
        assert!(table.observe(&mut c, [0, 0]));
        assert_eq!(c.args[0].text, "AT_FDCWD</tmp>");
        assert_eq!(c.ret_text, "3</tmp/a.txt>");
        let mut c = call(
            "dup2",
            0,
            vec![arg(3, "3", true, None), arg(1, "1", true, None)],
            1,
        );
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.args[0].text, "3</tmp/a.txt>");
        assert_eq!(c.args[1].text, "1</dev/null>");
        assert_eq!(c.ret_text, "1</tmp/a.txt>");
        let mut c = call("close", 0, vec![arg(3, "3", true, None)], 0);
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.args[0].text, "3</tmp/a.txt>");
        // Gone: shown as the number, as strace shows a descriptor it cannot name.
        let mut c = call("read", 0, vec![arg(3, "3", true, None)], -9);
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.args[0].text, "3");
        // A fork copies; an exec closes the close-on-exec ones (none left here but 1).
        let mut c = call(
            "clone",
            0,
            vec![arg(0x1200011, "CLONE_CHILD_SETTID", false, None)],
            9,
        );
        table.observe(&mut c, [0, 0]);
        let mut c = call("execve", 9, vec![], 0);
        table.observe(&mut c, [0, 0]);
        let mut c = call("write", 9, vec![arg(1, "1", true, None)], 1);
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.args[0].text, "1</tmp/a.txt>");
        // chdir moves AT_FDCWD.
        let mut c = call(
            "chdir",
            9,
            vec![arg(0x1000, "\"..\"", false, Some(".."))],
            0,
        );
        table.observe(&mut c, [0, 0]);
        let mut c = call("openat", 9, open(AT_FDCWD, "b", 0), 4);
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.ret_text, "4</b>");
        // A pipe by the inodes the kernel read at the call's exit (the process is gone).
        let fds = vec![arg(0x1000, "[5, 6]", false, None), arg(0, "0", false, None)];
        let mut c = call("pipe2", 9, fds, 0);
        table.observe(&mut c, [24698, 24698]);
        assert_eq!(c.args[0].text, "[5<pipe:[24698]>, 6<pipe:[24698]>]");
        let mut c = call("close", 9, vec![arg(6, "6", true, None)], 0);
        table.observe(&mut c, [0, 0]);
        assert_eq!(c.args[0].text, "6<pipe:[24698]>");
        let socket = vec![
            arg(2, "AF_INET", false, None),
            arg(1, "SOCK_STREAM|SOCK_CLOEXEC", false, None),
        ];
        let mut c = call("socket", 9, socket.clone(), 7);
        table.observe(&mut c, [11539, 0]);
        assert_eq!(c.ret_text, "7<socket:[11539]>");
        // -yy: a socket /proc/net no longer lists is named by the protocol its call made.
        let mut yy = FdTable::new(2, &[]);
        yy.seed(0, Vec::new(), None);
        let mut c = call("socket", 0, socket, 7);
        yy.observe(&mut c, [11539, 0]);
        assert_eq!(c.ret_text, "7<TCP:[11539]>");
    }

    #[test]
    fn dash_p_keeps_the_calls_that_name_the_path_or_use_a_descriptor_of_it() {
        let mut table = FdTable::new(0, &["/tmp/p.txt".into()]);
        table.seed(0, Vec::new(), Some("/tmp".into()));
        let mut c = call(
            "openat",
            0,
            vec![
                arg(AT_FDCWD, "AT_FDCWD", true, None),
                arg(0x1000, "\"p.txt\"", false, Some("p.txt")),
            ],
            3,
        );
        assert!(table.observe(&mut c, [0, 0]));
        // -P alone shows nothing more.
        assert_eq!(c.ret_text, "3");
        let mut c = call("read", 0, vec![arg(3, "3", true, None)], 1);
        assert!(table.observe(&mut c, [0, 0]));
        let mut c = call("read", 0, vec![arg(0, "0", true, None)], 1);
        assert!(!table.observe(&mut c, [0, 0]));
        let mut c = call("close", 0, vec![arg(3, "3", true, None)], 0);
        assert!(table.observe(&mut c, [0, 0]));
        let mut c = call("read", 0, vec![arg(3, "3", true, None)], -9);
        assert!(!table.observe(&mut c, [0, 0]));
        assert_eq!(lexical("/a//b/./c/../d"), "/a/b/d");
    }
}
