//! What a process's file descriptors refer to, as `/proc` tells while it runs: the link of
//! `/proc/PID/fd/N` (`/etc/hostname`, `pipe:[11543]`, `socket:[11539]`), its working
//! directory, and for `-yy` what a socket is (`TCP:[127.0.0.1:40236->127.0.0.1:39345]`, from
//! the process's `/proc/PID/net` tables) and what device a device file is (`char 1:3`).
//! Everything here is read at the moment it is asked, so a process that has exited tells
//! nothing: the callers keep what they learnt.

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use hashbrown::HashMap;

/// The link of `/proc/PID/fd/FD`: a path, or the kernel's `pipe:[N]`, `socket:[N]`,
/// `anon_inode:[eventfd]`...; `None` once the process or the descriptor is gone.
pub fn fd_link(pid: u32, fd: i32) -> Option<String> {
    link(&format!("/proc/{pid}/fd/{fd}"))
}

/// The process's working directory.
pub fn cwd(pid: u32) -> Option<String> {
    link(&format!("/proc/{pid}/cwd"))
}

/// Every descriptor the process has open now, with its link (a process adopted with -p).
pub fn open_fds(pid: u32) -> Vec<(i32, String)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    (dir.filter_map(Result::ok))
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|fd| Some((fd, fd_link(pid, fd)?)))
        .collect()
}

fn link(path: &str) -> Option<String> {
    let target = std::fs::read_link(path).ok()?;
    Some(target.to_string_lossy().into_owned())
}

/// A device file's kind and numbers as strace's -yy appends them (`char 1:3`, `block 8:0`);
/// `None` for anything else.
pub fn device(path: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let kind = match meta.file_type() {
        t if t.is_char_device() => "char",
        t if t.is_block_device() => "block",
        _ => return None,
    };
    let rdev = meta.rdev();
    Some(format!(
        "{kind} {}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ))
}

/// The inode of a `socket:[N]` link.
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The sockets of one network namespace by inode, from `/proc/PID/net/{tcp,tcp6,udp,udp6,
/// unix}` (tracer's own namespace's when the process is gone), as strace's -yy names them.
#[derive(Debug, Default)]
pub struct Sockets {
    by_inode: HashMap<u64, String>,
}

impl Sockets {
    /// The tables as the process `pid` sees them now.
    pub fn of(pid: u32) -> Sockets {
        let base = match std::path::Path::new(&format!("/proc/{pid}/net/tcp")).exists() {
            true => format!("/proc/{pid}/net"),
            false => "/proc/self/net".into(),
        };
        let mut sockets = Sockets::default();
        for (file, proto) in [
            ("tcp", "TCP"),
            ("tcp6", "TCPv6"),
            ("udp", "UDP"),
            ("udp6", "UDPv6"),
        ] {
            if let Ok(text) = std::fs::read_to_string(format!("{base}/{file}")) {
                sockets.read_inet(&text, proto);
            }
        }
        if let Ok(text) = std::fs::read_to_string(format!("{base}/unix")) {
            sockets.read_unix(&text);
        }
        sockets
    }

    /// `TCP:[127.0.0.1:39345]` (bound), `TCP:[127.0.0.1:40236->127.0.0.1:39345]`
    /// (connected), `UNIX-STREAM:[11542]`, `UNIX-STREAM:[11542,"/run/x.sock"]`.
    pub fn describe(&self, inode: u64) -> Option<&str> {
        self.by_inode.get(&inode).map(String::as_str)
    }

    /// One of `/proc/net/{tcp,udp}{,6}`: `sl local rem st ... uid timeout inode ...`, the
    /// addresses as the kernel's words in hex and the ports in hex.
    fn read_inet(&mut self, text: &str, proto: &str) {
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(inode)) = (cols.get(1), cols.get(2), cols.get(9))
            else {
                continue;
            };
            let (Some(local), Some(remote), Ok(inode)) =
                (endpoint(local), endpoint(remote), inode.parse::<u64>())
            else {
                continue;
            };
            if inode == 0 {
                continue;
            }
            let text = match (&local, &remote) {
                (_, r) if r.ends_with(":0") => format!("{proto}:[{local}]"),
                _ => format!("{proto}:[{local}->{remote}]"),
            };
            self.by_inode.insert(inode, text);
        }
    }

    /// `/proc/net/unix`: `Num RefCount Protocol Flags Type St Inode [Path]`.
    fn read_unix(&mut self, text: &str) {
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(kind), Some(Ok(inode))) = (cols.get(4), cols.get(6).map(|i| i.parse()))
            else {
                continue;
            };
            let kind = match *kind {
                "0001" => "STREAM",
                "0002" => "DGRAM",
                "0005" => "SEQPACKET",
                _ => continue,
            };
            let text = match cols.get(7) {
                Some(path) => format!("UNIX-{kind}:[{inode},\"{path}\"]"),
                None => format!("UNIX-{kind}:[{inode}]"),
            };
            self.by_inode.insert(inode, text);
        }
    }
}

/// `0100007F:9A01` -> `127.0.0.1:39425`; an IPv6 address (four words) -> `[::1]:53`.
fn endpoint(hex: &str) -> Option<String> {
    let (addr, port) = hex.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    // Each 8-digit group is a 32-bit word of the address as it lies in memory, printed as a
    // host-order (little-endian) number.
    let mut bytes = Vec::with_capacity(16);
    for i in (0..addr.len()).step_by(8) {
        let word = u32::from_str_radix(addr.get(i..i + 8)?, 16).ok()?;
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    match bytes.len() {
        4 => {
            let ip = std::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]);
            Some(format!("{ip}:{port}"))
        }
        16 => {
            let octets: [u8; 16] = bytes.try_into().ok()?;
            Some(format!("[{}]:{port}", std::net::Ipv6Addr::from(octets)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_rows_read_as_strace_names_sockets() {
        let mut sockets = Sockets::default();
        sockets.read_inet(
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: 0100007F:9A01 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11539 1 0 100 0 0 10 0\n\
             1: 0100007F:9D2C 0100007F:9A01 01 00000000:00000000 00:00000000 00000000     0        0 11540 1 0 20 4 30 10 -1\n",
            "TCP",
        );
        sockets.read_inet(
            "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
             0: 00000000000000000000000001000000:C911 00000000000000000000000001000000:0035 01 00000000:00000000 00:00000000 00000000     0        0 11544 2 0 0\n",
            "UDPv6",
        );
        sockets.read_unix(
            "Num       RefCount Protocol Flags    Type St Inode Path\n\
             0000000000000000: 00000002 00000000 00010000 0001 01 11542 /tmp/sock.x\n\
             0000000000000000: 00000002 00000000 00000000 0002 01 11545\n",
        );
        assert_eq!(sockets.describe(11539), Some("TCP:[127.0.0.1:39425]"));
        assert_eq!(
            sockets.describe(11540),
            Some("TCP:[127.0.0.1:40236->127.0.0.1:39425]")
        );
        assert_eq!(
            sockets.describe(11544),
            Some("UDPv6:[[::1]:51473->[::1]:53]")
        );
        assert_eq!(
            sockets.describe(11542),
            Some("UNIX-STREAM:[11542,\"/tmp/sock.x\"]")
        );
        assert_eq!(sockets.describe(11545), Some("UNIX-DGRAM:[11545]"));
        assert_eq!(sockets.describe(1), None);
        assert_eq!(socket_inode("socket:[11539]"), Some(11539));
        assert_eq!(socket_inode("pipe:[11539]"), None);
        assert_eq!(device("/dev/null").as_deref(), Some("char 1:3"));
        assert_eq!(device("/etc/hostname"), None);
    }
}
