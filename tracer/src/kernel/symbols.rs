//! Addresses in a running process: `/proc/PID/maps`, ELF symbols placed at their load bias,
//! and instruction pointers turned back into `function+0xoff`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use object::Object;

pub use super::elf_symbols::{ElfSymbols, Symbol};
use super::file_cache::FileCache;
use super::lines::Lines;
use super::Error;

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub perms: String,
    /// The mapped file's device (major, minor) and inode: which file it is, whatever is at
    /// its path now.
    pub dev: (u32, u32),
    pub inode: u64,
    /// The mapped file's GNU build-id as hex, where the kernel's mmap record carried it in
    /// place of the device and inode (`perf_event_attr.build_id`, 5.12+); `None` from
    /// /proc/PID/maps.
    pub build_id: Option<String>,
    /// As the kernel prints it: a file replaced or removed since it was mapped ends in
    /// ` (deleted)`.
    pub path: Option<PathBuf>,
}

/// Parses the text of `/proc/PID/maps` (lines that do not parse are skipped).
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (range, perms, offset) = (parts.next()?, parts.next()?, parts.next()?);
            let (dev, inode) = (parts.next()?, parts.next()?);
            let path = parts.collect::<Vec<_>>().join(" ");
            let (start, end) = range.split_once('-')?;
            let (major, minor) = dev.split_once(':')?;
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                perms: perms.to_string(),
                dev: (
                    u32::from_str_radix(major, 16).ok()?,
                    u32::from_str_radix(minor, 16).ok()?,
                ),
                inode: inode.parse().ok()?,
                build_id: None,
                path: kept_path(&path).then(|| PathBuf::from(path)),
            })
        })
        .collect()
}

/// How /proc/PID/maps names the vDSO: the kernel's ELF image mapped into every process, where
/// `clock_gettime` and `gettimeofday` run without a system call. Its symbols are read from the
/// process's memory.
pub const VDSO: &str = "[vdso]";

/// How /proc/PID/maps names the page the kernel maps into a process at its first uprobe hit:
/// the return trampoline of uretprobes (its first slot) and the out-of-line copies of probed
/// instructions. A frame there is named after it, as perf does: before 6.11 the kernel's
/// stacks show the trampoline in place of the caller of a function whose uretprobe is
/// pending.
pub const UPROBES: &str = "[uprobes]";

/// Whether a mapping's name is kept: files, and the kernel's mappings frames can be in.
pub fn kept_path(name: &str) -> bool {
    name.starts_with('/') || name == VDSO || name == UPROBES
}

pub(super) fn parse<'a>(path: &Path, data: &'a [u8]) -> Result<object::File<'a>, Error> {
    object::File::parse(data).map_err(|e| Error::Parse {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The path of a mapped file as the maps name it, without the ` (deleted)` the kernel adds to
/// one replaced or removed since.
fn on_disk(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    PathBuf::from(text.strip_suffix(" (deleted)").unwrap_or(&text))
}

/// A mapped file, whatever its path: by (device major, minor, inode), or by build-id where
/// the kernel's mmap record gave that instead.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum FileId {
    Inode(u32, u32, u64),
    Build(String),
}

/// The GNU build-id of the ELF file at `path`, as hex.
fn file_build_id(path: &Path) -> Option<String> {
    let data = super::file::map(path).ok()?;
    let id = parse(path, &data).ok()?.build_id().ok().flatten()?;
    Some(hex(id))
}

thread_local! {
    /// Symbols of mapped files by [`FileId`], shared by every process that maps them: a
    /// library that hundreds of processes map is read once (a system-wide profile read the
    /// same large libraries once per process: gigabytes).
    static ELF_CACHE: RefCell<FileCache<FileId, ElfSymbols>> = RefCell::default();
    /// DWARF line tables by [`FileId`], shared the same way.
    static LINE_CACHE: RefCell<FileCache<FileId, Lines>> = RefCell::default();
}

/// Lets go of the symbols and line tables of files that no process has held for `after`
/// (see [`FileCache::sweep`]): the caller forgets processes as they exit.
pub fn sweep_files(after: std::time::Duration) {
    let now = std::time::Instant::now();
    ELF_CACHE.with(|c| c.borrow_mut().sweep(now, after));
    LINE_CACHE.with(|c| c.borrow_mut().sweep(now, after));
}

/// A process's mappings and the symbols of its mapped files (loaded on first use, shared
/// with the other processes that map the same file).
pub struct Process {
    pid: u32,
    maps: Vec<Mapping>,
    elfs: HashMap<PathBuf, Option<Rc<ElfSymbols>>>,
    /// DWARF line tables per file (`None`: no debug info).
    lines: HashMap<PathBuf, Option<Rc<Lines>>>,
    /// Where each mapped path is read from (see [`Process::source`]).
    sources: HashMap<PathBuf, Option<PathBuf>>,
    /// A JIT's names for its code, from `/tmp/perf-PID.map`.
    jit: PerfMap,
    /// Each path's loaded image ([`Process::image`]), found once per version of `maps`: it is
    /// asked for every frame named.
    images: RefCell<HashMap<PathBuf, Option<(u64, u64)>>>,
    /// Changes whenever `maps` does (from a counter shared by every process, so that a
    /// process read afresh never has an old one's number): what was built from the mappings
    /// (an unwinder) is rebuilt when it differs.
    version: u64,
    /// Known from mmap records made since some point, not read from /proc: see
    /// [`Process::with_later_maps`].
    partial: bool,
}

fn next_version() -> u64 {
    static VERSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    VERSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A file mapped executable in a process, for an unwinder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeFile {
    /// As the maps name it.
    pub path: PathBuf,
    /// From its first mapping's start to its last one's end.
    pub avma: std::ops::Range<u64>,
    /// Where the file is read from (see [`Process::source`]).
    pub source: PathBuf,
}

/// The names a JIT gives the code it generated in anonymous memory, from
/// `/tmp/perf-PID.map`: lines `START SIZE NAME` (hex), the convention perf reads, written by
/// Node's `--perf-basic-prof`, the JVM's perf-map-agent and Python 3.12's `-X perf`. The
/// file only grows while the JIT runs: it is read again when its length changed.
#[derive(Debug, Default)]
struct PerfMap {
    read_len: u64,
    /// `(start, end, name)`, sorted by start; a later line for the same range wins.
    entries: Vec<(u64, u64, String)>,
}

impl PerfMap {
    fn lookup(&mut self, pid: u32, addr: u64) -> Option<(String, u64)> {
        let path = format!("/tmp/perf-{pid}.map");
        let len = std::fs::metadata(&path).ok()?.len();
        if len != self.read_len {
            let text = std::fs::read_to_string(&path).ok()?;
            let mut entries: Vec<(u64, u64, String)> = (text.lines())
                .filter_map(|line| {
                    let mut words = line.splitn(3, ' ');
                    let start = u64::from_str_radix(words.next()?, 16).ok()?;
                    let size = u64::from_str_radix(words.next()?, 16).ok()?;
                    Some((start, start.checked_add(size)?, words.next()?.to_string()))
                })
                .collect();
            // Stable: of two lines for one start, the later is last, and found first below.
            entries.sort_by_key(|e| e.0);
            self.entries = entries;
            self.read_len = len;
        }
        let after = self.entries.partition_point(|e| e.0 <= addr);
        (self.entries[..after].iter().rev())
            .take(64)
            .find(|(start, end, _)| (*start..*end).contains(&addr))
            .map(|(start, _, name)| (name.clone(), addr - start))
    }
}

/// A symbol's name as people read it: Rust's without its hash (`{:#}`), C++'s as c++filt
/// and `perf report` show it (`ns::Class<int>::run(int) const`), others as they are.
pub fn demangle(name: &str) -> String {
    if let Ok(rust) = rustc_demangle::try_demangle(name) {
        return format!("{rust:#}");
    }
    if name.starts_with("_Z") {
        let options = cpp_demangle::DemangleOptions::default();
        if let Some(text) =
            (cpp_demangle::Symbol::new(name).ok()).and_then(|symbol| symbol.demangle(&options).ok())
        {
            return text;
        }
    }
    name.to_string()
}

/// Where a symbol lives at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub addr: u64,
    /// The symbol's size, when it has one.
    pub size: Option<u64>,
    /// The file it came from.
    pub file: PathBuf,
}

impl Process {
    pub fn new(pid: u32) -> Result<Process, Error> {
        let mut process = Process {
            pid,
            maps: Vec::new(),
            elfs: HashMap::new(),
            lines: HashMap::new(),
            sources: HashMap::new(),
            jit: PerfMap::default(),
            images: RefCell::default(),
            version: next_version(),
            partial: false,
        };
        process.refresh()?;
        Ok(process)
    }

    /// A process known by `maps` (the kernel's mmap records) rather than by /proc: one that
    /// has exited. Its files are read from their paths while they are the files it mapped.
    pub fn with_maps(pid: u32, maps: Vec<Mapping>) -> Process {
        Process {
            pid,
            maps,
            elfs: HashMap::new(),
            lines: HashMap::new(),
            sources: HashMap::new(),
            jit: PerfMap::default(),
            images: RefCell::default(),
            version: next_version(),
            partial: false,
        }
    }

    /// A process known by the mmap records it made since some point (the tracker opened after
    /// its exec), which miss what it mapped before: its program's first mappings among them,
    /// which place the program's symbols. [`Process::complete`] reads /proc in their place
    /// while it runs.
    pub fn with_later_maps(pid: u32, maps: Vec<Mapping>) -> Process {
        Process {
            partial: true,
            ..Process::with_maps(pid, maps)
        }
    }

    /// Reads /proc for a process known by part of its mappings
    /// ([`Process::with_later_maps`]), once: one that has exited keeps what is known.
    pub fn complete(&mut self) {
        if std::mem::take(&mut self.partial) {
            let _ = self.refresh();
        }
    }

    /// [`Process::new`] for a process the user named (`-p PID`): one that is gone, or that
    /// this user may not read, is said to be so.
    pub fn adopt(pid: u32) -> Result<Process, Error> {
        Process::new(pid).map_err(|e| match e {
            Error::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::NoProcess { pid }
            }
            Error::Read { path, source }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Error::ProcessDenied { pid, path }
            }
            other => other,
        })
    }

    /// Rereads `/proc/PID/maps` (after the process mapped more libraries). A process that is
    /// exiting has no mappings left to read: the last ones read are kept, so that its
    /// addresses still resolve.
    pub fn refresh(&mut self) -> Result<(), Error> {
        let path = format!("/proc/{}/maps", self.pid);
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read { path, source })?;
        let maps = parse_maps(&text);
        if !maps.is_empty() && maps != self.maps {
            self.maps = maps;
            self.version = next_version();
            self.images.get_mut().clear();
        }
        Ok(())
    }

    /// Takes mappings the kernel's records gave since some point (`newer`, newest first): they
    /// stand where they lie, and the mappings known before stay where none of them does (a
    /// process adopted at its exec, whose libraries were mapped after). Its files' tables
    /// are kept.
    pub fn add_newer(&mut self, newer: Vec<Mapping>) {
        let covered = |old: &Mapping| newer.iter().any(|m| m.start < old.end && old.start < m.end);
        let kept: Vec<Mapping> = self.maps.iter().filter(|m| !covered(m)).cloned().collect();
        let maps: Vec<Mapping> = newer.iter().cloned().chain(kept).collect();
        if maps != self.maps {
            self.maps = maps;
            self.version = next_version();
            self.images.get_mut().clear();
        }
    }

    /// Changes whenever the mappings do.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The files mapped with execute permission (the vDSO and the uprobes page are no
    /// files), each once, with the file to read for it.
    pub fn code_files(&mut self) -> Vec<CodeFile> {
        let mut files: Vec<CodeFile> = Vec::new();
        let executable = (self.maps.iter())
            .filter(|m| m.perms.contains('x'))
            .filter_map(|m| m.path.clone())
            .filter(|p| p.as_os_str() != VDSO && p.as_os_str() != UPROBES);
        let mut paths: Vec<PathBuf> = Vec::new();
        for path in executable {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        for path in paths {
            let Some((start, end)) = self.image(&path) else {
                continue;
            };
            if let Some(source) = self.source(&path) {
                files.push(CodeFile {
                    path,
                    avma: start..end,
                    source,
                });
            }
        }
        files
    }

    /// The file to read for the mapped `path` (see [`Process::source`]).
    pub fn source_of(&mut self, path: &Path) -> Option<PathBuf> {
        self.source(path)
    }

    /// Where link-time address 0 of `path` lies in this process, given the file's lowest
    /// segment page `base`.
    pub fn load_bias(&self, path: &Path, base: u64) -> Option<u64> {
        self.bias(path, base)
    }

    pub fn maps(&self) -> &[Mapping] {
        &self.maps
    }

    /// The executable's path.
    pub fn exe(&self) -> Option<PathBuf> {
        std::fs::read_link(format!("/proc/{}/exe", self.pid)).ok()
    }

    /// The file to read for the mapped `path`: the path itself when it still names the mapped
    /// file (same device and inode), otherwise `/proc/PID/map_files/START-END`, which opens
    /// the very file mapped even after it was replaced or removed (an upgrade while the
    /// process runs), while the process lives. `None` when neither can be read: its frames
    /// are then unnamed rather than named from another file's symbols.
    fn source(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some(source) = self.sources.get(path) {
            return source.clone();
        }
        let mapping = self
            .maps
            .iter()
            .find(|m| m.path.as_deref() == Some(path))?
            .clone();
        let on_disk = on_disk(path);
        // The same file: the same device and inode; or, where the record gave a build-id,
        // the same build-id (a container's overlayfs reports another device than `stat`);
        // or on overlayfs without build-ids (before 5.12), the same inode number.
        let same = std::fs::metadata(&on_disk).is_ok_and(|md| {
            use std::os::unix::fs::MetadataExt;
            let dev = (libc::major(md.dev()), libc::minor(md.dev()));
            let built = || {
                let ids = self.maps.iter().filter(|m| m.path.as_deref() == Some(path));
                let wanted = ids.filter_map(|m| m.build_id.as_deref()).next();
                wanted.is_some_and(|id| file_build_id(&on_disk).as_deref() == Some(id))
            };
            (md.ino() == mapping.inode && dev == mapping.dev)
                || built()
                || (md.ino() == mapping.inode && super::file::on_overlayfs(&on_disk))
        });
        let source = if same {
            Some(on_disk)
        } else {
            let mapped = PathBuf::from(format!(
                "/proc/{}/map_files/{:x}-{:x}",
                self.pid, mapping.start, mapping.end
            ));
            std::fs::File::open(&mapped).is_ok().then_some(mapped)
        };
        self.sources.insert(path.to_path_buf(), source.clone());
        source
    }

    /// Which file is mapped at `path` (`None` for an inode 0 without a build-id: nothing to
    /// share by).
    fn file_id(&self, path: &Path) -> Option<FileId> {
        let mut maps = self.maps.iter().filter(|m| m.path.as_deref() == Some(path));
        let by_inode = maps.clone().find(|m| m.inode != 0);
        match by_inode {
            Some(m) => Some(FileId::Inode(m.dev.0, m.dev.1, m.inode)),
            None => maps.find_map(|m| m.build_id.clone()).map(FileId::Build),
        }
    }

    fn elf(&mut self, path: &Path) -> Option<&ElfSymbols> {
        if !self.elfs.contains_key(path) {
            let id = self.file_id(path);
            let cached = id
                .as_ref()
                .and_then(|id| ELF_CACHE.with(|c| c.borrow_mut().get(id)));
            let loaded = match cached {
                Some(loaded) => loaded,
                None if path == Path::new(VDSO) => self.vdso().map(Rc::new),
                None if path == Path::new(UPROBES) => None,
                None => {
                    let loaded = (self.source(path))
                        .and_then(|s| ElfSymbols::load_named(&s, &on_disk(path)).ok())
                        .map(Rc::new);
                    if let Some(id) = id {
                        ELF_CACHE.with(|c| c.borrow_mut().insert(id, loaded.clone()));
                    }
                    loaded
                }
            };
            self.elfs.insert(path.to_path_buf(), loaded);
        }
        self.elfs.get(path)?.as_deref()
    }

    /// The vDSO's symbols, from its image ([`Process::vdso_image`]).
    fn vdso(&self) -> Option<ElfSymbols> {
        let (data, _) = self.vdso_image()?;
        ElfSymbols::parse(Path::new(VDSO), &data, None).ok()
    }

    /// Where the vDSO is mapped in this process.
    pub fn vdso_range(&self) -> Option<Range<u64>> {
        let mapping = (self.maps.iter()).find(|m| m.path.as_deref() == Some(Path::new(VDSO)))?;
        Some(mapping.start..mapping.end)
    }

    /// The vDSO's image, and where it is mapped in this process: read from the process's
    /// memory, or, once it is gone, from tracer's own (every 64-bit process of a kernel maps
    /// the same image, and one of another size is another image).
    pub fn vdso_image(&self) -> Option<(Vec<u8>, Range<u64>)> {
        let range = self.vdso_range()?;
        let len = (range.end - range.start) as usize;
        let image = |pid: &str, start: u64| {
            use std::os::unix::fs::FileExt;
            let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
            let mut data = vec![0; len];
            mem.read_exact_at(&mut data, start).ok()?;
            Some(data)
        };
        let own = || {
            let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
            let mine = parse_maps(&maps).into_iter().find(|m| {
                m.path.as_deref() == Some(Path::new(VDSO)) && m.end - m.start == len as u64
            })?;
            image("self", mine.start)
        };
        let data = image(&self.pid.to_string(), range.start).or_else(own)?;
        Some((data, range))
    }

    /// The GNU build-id of the file mapped at `path`, as hex (to fetch its debug info).
    pub fn build_id(&mut self, path: &Path) -> Option<String> {
        self.elf(path)?.build_id.clone()
    }

    /// The mapped file holding runtime address `addr`, as the maps name it.
    pub fn file_at(&self, addr: u64) -> Option<&Path> {
        self.mapping_at(addr)?.path.as_deref()
    }

    /// The mapping holding runtime address `addr`.
    pub fn mapping_at(&self, addr: u64) -> Option<&Mapping> {
        self.maps.iter().find(|m| addr >= m.start && addr < m.end)
    }

    /// The load bias of `path` in this process: where the offset-0 mapping of its loaded
    /// image starts ([`Process::image`]), minus the link-time address that mapping holds.
    /// Zero for non-PIE executables.
    fn bias(&self, path: &Path, base: u64) -> Option<u64> {
        self.image(path).map(|(start, _)| start.wrapping_sub(base))
    }

    /// Where the image of `path` the loader mapped lies: from the start of its offset-0
    /// mapping to the end of its last mapping. A file can be mapped besides, by the process
    /// itself (a profiler or a debugger reading a library it runs, tracer among them; a
    /// package manager): such a mapping is not code and may lie anywhere, so the image's
    /// offset-0 mapping is the nearest below its first executable one, and the image ends
    /// before the next offset-0 mapping of the file.
    fn image(&self, path: &Path) -> Option<(u64, u64)> {
        if let Some(&image) = self.images.borrow().get(path) {
            return image;
        }
        let image = self.find_image(path);
        self.images.borrow_mut().insert(path.to_path_buf(), image);
        image
    }

    fn find_image(&self, path: &Path) -> Option<(u64, u64)> {
        // Compared as bytes: a Path's `==` walks both by components (the kernel's paths are
        // canonical).
        let path = path.as_os_str();
        let mine =
            || (self.maps.iter()).filter(|m| m.path.as_deref().map(Path::as_os_str) == Some(path));
        let code = mine()
            .filter(|m| m.perms.contains('x'))
            .map(|m| m.start)
            .min();
        let firsts = || mine().filter(|m| m.offset == 0).map(|m| m.start);
        let start = match code {
            Some(code) => firsts().filter(|&s| s <= code).max(),
            None => None,
        }
        .or_else(|| firsts().min())?;
        let next = firsts().filter(|&s| s > start).min().unwrap_or(u64::MAX);
        let end = (mine().filter(|m| m.start >= start && m.start < next))
            .map(|m| m.end)
            .max()?;
        Some((start, end))
    }

    /// Files mapped in the process, the executable first.
    fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        if let Some(exe) = self.exe() {
            files.push(exe);
        }
        for m in &self.maps {
            // Symbols are looked up in files, to probe them: the vDSO is no file, nor is
            // the uprobes page.
            let file = |p: &&PathBuf| *p != Path::new(VDSO) && *p != Path::new(UPROBES);
            if let Some(p) = m.path.as_ref().filter(file) {
                if !files.contains(p) {
                    files.push(p.clone());
                }
            }
        }
        files
    }

    /// Finds `symbol` in `file` (a path or a basename prefix such as `libc`), or in the
    /// executable then every mapped file.
    pub fn resolve(&mut self, file: Option<&str>, symbol: &str) -> Result<Resolved, Error> {
        let files: Vec<PathBuf> = self
            .files()
            .into_iter()
            .filter(|p| match file {
                None => true,
                Some(f) if f.contains('/') => p == Path::new(f),
                Some(f) => p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(f)),
            })
            .collect();
        for path in &files {
            let Some((addr, size, base)) = self
                .elf(path)
                .and_then(|elf| elf.find(symbol).map(|s| (s.addr, s.size, elf.base)))
            else {
                continue;
            };
            if let Some(bias) = self.bias(path, base) {
                return Ok(Resolved {
                    addr: bias.wrapping_add(addr),
                    size: (size != 0).then_some(size),
                    file: path.clone(),
                });
            }
        }
        Err(Error::NoSymbol {
            path: match file {
                Some(f) => f.to_string(),
                None => format!("process {}", self.pid),
            },
            symbol: symbol.to_string(),
        })
    }

    /// Data symbols of the executable, for did-you-mean.
    pub fn data_symbols(&mut self) -> Vec<String> {
        let Some(exe) = self.exe() else {
            return Vec::new();
        };
        self.elf(&exe)
            .map(|e| e.names(false).map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// The mapped file holding runtime address `addr` and its load bias.
    fn placed(&mut self, addr: u64) -> Option<(PathBuf, u64)> {
        let path = self.file_at(addr)?.to_path_buf();
        let base = self.elf(&path)?.base;
        let bias = self.bias(&path, base)?;
        Some((path, bias))
    }

    /// The function holding runtime address `addr` ([`demangle`]d) and the offset into it:
    /// from the mapped file's symbols, or for code outside any ELF file from the JIT's
    /// `/tmp/perf-PID.map`; `None` when neither names it.
    pub fn symbol_at(&mut self, addr: u64) -> Option<(String, u64)> {
        if let Some(start) = self.uprobes_page(addr) {
            return Some((UPROBES.to_string(), addr - start));
        }
        let Some((path, bias)) = self.placed(addr) else {
            // Not in a mapped ELF file (anonymous memory, or Node's `//anon`): code a JIT
            // generated, named in its perf map if it has one.
            return self.jit.lookup(self.pid, addr);
        };
        let (symbol, offset) = self.elf(&path)?.containing(addr.wrapping_sub(bias))?;
        Some((demangle(symbol.name), offset))
    }

    /// `function+0xoff` for a runtime address (see [`Process::symbol_at`]).
    pub fn symbolize(&mut self, addr: u64) -> Option<String> {
        let (name, offset) = self.symbol_at(addr)?;
        Some(format!("{name}+{offset:#x}"))
    }

    /// The source file's name and line of a runtime address from the file's DWARF, when it has
    /// debug info. The outermost frame is used, so the line belongs to the function
    /// `symbol_at` names even when the instruction came from inlined code.
    pub fn location(&mut self, addr: u64) -> Option<(String, u32)> {
        let (path, bias) = self.placed(addr)?;
        if !self.lines.contains_key(&path) {
            let id = self.file_id(&path);
            let cached = id
                .as_ref()
                .and_then(|id| LINE_CACHE.with(|c| c.borrow_mut().get(id)));
            let loader = match cached {
                Some(loader) => loader,
                None => {
                    // The separate debug file's DWARF when the file has one, else its own.
                    let debug = self.elf(&path).and_then(|elf| elf.debug.clone());
                    let loader = debug
                        .or_else(|| self.source(&path))
                        // The loader maps the file: a device or FIFO mapped into a process is
                        // not one.
                        .filter(|s| super::file::check_regular(s).is_ok())
                        .and_then(|s| Lines::open(&s))
                        .map(Rc::new);
                    if let Some(id) = id {
                        LINE_CACHE.with(|c| c.borrow_mut().insert(id, loader.clone()));
                    }
                    loader
                }
            };
            self.lines.insert(path.clone(), loader);
        }
        let lines = self.lines.get(&path)?.as_ref()?;
        lines.location(addr.wrapping_sub(bias))
    }

    /// `file:line` of a runtime address (see [`Process::location`]).
    pub fn source_line(&mut self, addr: u64) -> Option<String> {
        let (file, line) = self.location(addr)?;
        Some(format!("{file}:{line}"))
    }

    /// Where the uprobes page starts, when `addr` is in it (see [`UPROBES`]).
    pub fn uprobes_page(&self, addr: u64) -> Option<u64> {
        // The mapping first, then its name as bytes (see `bias`): this runs for every frame.
        (self.mapping_at(addr))
            .filter(|m| m.path.as_deref().map(Path::as_os_str) == Some(UPROBES.as_ref()))
            .map(|m| m.start)
    }

    /// Is `addr` inside a mapping of the process?
    pub fn is_mapped(&self, addr: u64) -> bool {
        self.maps.iter().any(|m| addr >= m.start && addr < m.end)
    }

    /// Reads `len` bytes at `addr` from the process's memory (`/proc/PID/mem`).
    pub fn read(&self, addr: u64, len: usize) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(format!("/proc/{}/mem", self.pid)).ok()?;
        let mut buf = [0u8; 8];
        file.read_exact_at(&mut buf[..len.min(8)], addr).ok()?;
        Some(u64::from_ne_bytes(buf))
    }
}

/// The running kernel's GNU build-id, as hex, from the ELF notes it exports in
/// `/sys/kernel/notes` (what `perf buildid-list -k` reads): the key under which a symbol
/// server or debuginfod finds its vmlinux.
pub fn kernel_build_id() -> Option<String> {
    build_id_note(&std::fs::read("/sys/kernel/notes").ok()?)
}

/// The `NT_GNU_BUILD_ID` descriptor among ELF notes: each a name size, a descriptor size and a
/// type (native-endian u32s), then the name and the descriptor, each padded to 4 bytes.
fn build_id_note(mut notes: &[u8]) -> Option<String> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |b: &[u8], at: usize| Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let padded = |n: u32| (n as usize).div_ceil(4) * 4;
    while notes.len() >= 12 {
        let (name_size, desc_size, kind) = (word(notes, 0)?, word(notes, 4)?, word(notes, 8)?);
        let name = notes.get(12..12 + name_size as usize)?;
        let desc_at = 12 + padded(name_size);
        let desc = notes.get(desc_at..desc_at + desc_size as usize)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(hex(desc));
        }
        notes = notes.get(desc_at + padded(desc_size)..)?;
    }
    None
}

/// Kernel text symbols from /proc/kallsyms, sorted by address, for kernel stack frames.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    /// (address, name): functions of the kernel and its modules (`name [module]`).
    symbols: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Reads /proc/kallsyms. Without privileges every address reads as zero: the result then
    /// holds nothing and every frame shows as an address.
    pub fn load() -> Result<Kallsyms, Error> {
        let text = super::read_text(Path::new("/proc/kallsyms"))?;
        Ok(Kallsyms::parse(&text))
    }

    /// Parses the text of /proc/kallsyms (text symbols only; lines that do not parse are
    /// skipped).
    pub fn parse(text: &str) -> Kallsyms {
        let mut symbols: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let (addr, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
                if !matches!(kind, "t" | "T" | "w" | "W") {
                    return None;
                }
                let addr = u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0)?;
                Some(match parts.next() {
                    Some(module) => (addr, format!("{name} {module}")),
                    None => (addr, name.to_string()),
                })
            })
            .collect();
        symbols.sort();
        Kallsyms { symbols }
    }

    /// The function holding `addr` and the offset into it. kallsyms has no sizes, so the
    /// nearest symbol below is taken.
    pub fn containing(&self, addr: u64) -> Option<(&str, u64)> {
        let index = self
            .symbols
            .partition_point(|(a, _)| *a <= addr)
            .checked_sub(1)?;
        let (start, name) = &self.symbols[index];
        Some((name, addr - start))
    }
}

/// Does /proc/kallsyms list kernel variables? Without CONFIG_KALLSYMS_ALL it holds functions
/// and a few section markers only.
pub fn kallsyms_lists_data() -> bool {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    text.lines()
        .filter(|l| matches!(l.split_whitespace().nth(1), Some("d" | "D" | "b" | "B")))
        .take(100)
        .count()
        >= 100
}

/// A kernel symbol's address from /proc/kallsyms (zeros when not permitted to see them).
pub fn kallsyms_address(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        let (addr, _kind, sym) = (parts.next()?, parts.next()?, parts.next()?);
        (sym == name)
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tracer's own maps while it profiled: it maps libc whole (shared, read-only) to read
    /// its tables, below where the loader put it. libc's bias is the loader's image's, and
    /// the image is the loader's mappings only (the stray mapping named libc's frames
    /// `libc.so.6+0x98109` in a profile of tracer).
    #[test]
    fn a_file_the_process_maps_itself_does_not_move_its_image() {
        let text = "7efe54e1d000-7efe54ff4000 r--s 00000000 fe:00 326279 /usr/lib/libc.so.6\n\
                    7efe5547b000-7efe554a1000 r--p 00000000 fe:00 326279 /usr/lib/libc.so.6\n\
                    7efe554a1000-7efe555f7000 r-xp 00026000 fe:00 326279 /usr/lib/libc.so.6\n\
                    7efe555f7000-7efe5564a000 r--p 0017c000 fe:00 326279 /usr/lib/libc.so.6\n\
                    7efe5564e000-7efe55650000 rw-p 001d3000 fe:00 326279 /usr/lib/libc.so.6\n\
                    7efe55700000-7efe55710000 r--s 00000000 fe:00 326279 /usr/lib/libc.so.6\n";
        let process = Process::with_maps(1, parse_maps(text));
        let libc = Path::new("/usr/lib/libc.so.6");
        assert_eq!(process.load_bias(libc, 0), Some(0x7efe5547b000));
        assert_eq!(process.image(libc), Some((0x7efe5547b000, 0x7efe55650000)));
        // A file mapped by the process only (no code): its one offset-0 mapping.
        let data = parse_maps("7000000-7001000 r--s 00000000 fe:01 9 /data/file\n");
        let data = Process::with_maps(1, data);
        assert_eq!(
            data.image(Path::new("/data/file")),
            Some((0x7000000, 0x7001000))
        );
    }

    #[test]
    fn newer_mappings_join_those_read_and_stand_where_they_overlap() {
        let text = "5555000-5556000 r-xp 00001000 fe:01 11 /usr/bin/prog\n\
                    7000000-7001000 r--p 00000000 fe:01 22 /usr/lib/old.so\n";
        let mut process = Process::with_maps(1, parse_maps(text));
        let before = process.version();
        let newer = parse_maps(
            "7000800-7002000 r-xp 00000000 fe:01 33 /usr/lib/new.so\n\
             7f00000-7f01000 r-xp 00001000 fe:01 44 /usr/lib/libc.so.6\n",
        );
        process.add_newer(newer.clone());
        let paths: Vec<String> = (process.maps().iter())
            .map(|m| m.path.as_ref().unwrap().display().to_string())
            .collect();
        assert_eq!(
            paths,
            ["/usr/lib/new.so", "/usr/lib/libc.so.6", "/usr/bin/prog"]
        );
        assert_ne!(process.version(), before);
        let again = process.version();
        process.add_newer(newer);
        assert_eq!(process.version(), again, "nothing new: the same version");
    }

    #[test]
    fn the_build_id_note_is_found_among_others() {
        let note = |name: &[u8], kind: u32, desc: &[u8]| {
            let mut b = Vec::new();
            b.extend((name.len() as u32).to_ne_bytes());
            b.extend((desc.len() as u32).to_ne_bytes());
            b.extend(kind.to_ne_bytes());
            b.extend(name);
            b.resize(b.len().div_ceil(4) * 4, 0);
            b.extend(desc);
            b.resize(b.len().div_ceil(4) * 4, 0);
            b
        };
        let notes = [
            note(b"Xen\0", 6, b"\x01\x01"),
            note(b"GNU\0", 3, &[0x24, 0xa3, 0x59]),
        ]
        .concat();
        assert_eq!(build_id_note(&notes).as_deref(), Some("24a359"));
        assert_eq!(build_id_note(&notes[..20]), None);
    }

    #[test]
    fn kallsyms_text_symbols_nearest_below() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81001000 t do_one\n\
             ffffffff81002000 D some_data\n\
             0000000000000000 T hidden\n\
             ffffffffc0001000 t mod_fn\t[ext4]\n\
             junk\n",
        );
        assert_eq!(k.containing(0xffffffff81001010), Some(("do_one", 0x10)));
        // Data symbols do not end a function: the nearest text symbol below is kept.
        assert_eq!(k.containing(0xffffffff81002008), Some(("do_one", 0x1008)));
        assert_eq!(k.containing(0xffffffffc0001004), Some(("mod_fn [ext4]", 4)));
        assert_eq!(k.containing(0x1000), None);
    }

    #[test]
    fn maps_lines() {
        let text = "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1234  /usr/bin/cat\n\
                    7ffd1000-7ffd2000 rw-p 00000000 00:00 0          [stack]\n\
                    garbage\n\
                    7f00-7f10 r-xp 00001000 fe:01 99 /lib/with space.so\n";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].start, 0x55d0_c0a0_0000);
        assert_eq!((maps[0].dev, maps[0].inode), ((0xfe, 1), 1234));
        assert_eq!(maps[0].path.as_deref(), Some(Path::new("/usr/bin/cat")));
        assert_eq!(maps[1].path, None);
        assert_eq!(maps[2].offset, 0x1000);
        assert_eq!(
            maps[2].path.as_deref(),
            Some(Path::new("/lib/with space.so"))
        );
    }

    #[test]
    fn frames_in_the_uprobes_page_are_named_after_it() {
        let text = "7fffffffe000-7ffffffff000 r-xp 00000000 00:00 0  [uprobes]\n";
        let mut p = Process::with_maps(1, parse_maps(text));
        assert_eq!(p.uprobes_page(0x7fff_ffff_e000), Some(0x7fff_ffff_e000));
        assert_eq!(p.uprobes_page(0x7fff_ffff_dfff), None);
        // The return trampoline (the page's first slot), and an out-of-line copy.
        assert_eq!(p.symbol_at(0x7fff_ffff_e000), Some((UPROBES.into(), 0)));
        assert_eq!(
            p.symbolize(0x7fff_ffff_e080).as_deref(),
            Some("[uprobes]+0x80")
        );
        // No file to look symbols up in when probing.
        assert!(p.files().is_empty());
    }

    #[test]
    fn the_vdso_is_named_from_memory() {
        let mut me = Process::new(std::process::id()).unwrap();
        let vdso = me.vdso().expect("this process maps a vDSO");
        // x86-64's vDSO exports __vdso_clock_gettime and its weak alias clock_gettime: the
        // global name is shown, as perf shows it.
        let addr = vdso.find("__vdso_clock_gettime").expect("in the vDSO").addr;
        let start = (me.maps().iter())
            .find(|m| m.path.as_deref() == Some(Path::new(VDSO)))
            .unwrap()
            .start;
        let at = start.wrapping_sub(vdso.base) + addr + 1;
        assert_eq!(me.symbol_at(at), Some(("__vdso_clock_gettime".into(), 1)));
        // It is no file to probe.
        assert!(me.files().iter().all(|f| f != Path::new(VDSO)));
    }

    #[test]
    fn resolves_and_symbolizes_in_this_process() {
        // A static of this test binary: its runtime address is known to Rust. (no_mangle counts
        // as unsafe code: it could clash with another symbol; this name cannot.)
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        static TRACER_SYMBOLS_TEST_VAR: std::sync::atomic::AtomicU64 =
            std::sync::atomic::AtomicU64::new(7);
        let mut me = Process::new(std::process::id()).unwrap();
        let resolved = me.resolve(None, "TRACER_SYMBOLS_TEST_VAR").unwrap();
        assert_eq!(resolved.addr, &TRACER_SYMBOLS_TEST_VAR as *const _ as u64);
        assert_eq!(resolved.size, Some(8));
        assert_eq!(me.read(resolved.addr, 8), Some(7));
        assert_eq!(
            me.symbolize(resolved.addr + 3).as_deref(),
            Some("TRACER_SYMBOLS_TEST_VAR+0x3")
        );
        assert!(matches!(
            me.resolve(None, "no_such_symbol_here"),
            Err(Error::NoSymbol { .. })
        ));
    }
}
