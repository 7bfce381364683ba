//! Stack frames as data, and how they print: indented lines under an event, or JSON objects.

use std::cell::OnceCell;
use std::io::{self, Write};
use std::ops::Deref;
use std::rc::Rc;

/// Which side of the system call boundary a frame is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Kernel,
    User,
}

/// One symbolized frame, innermost first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub addr: u64,
    pub space: Space,
    /// The function (kernel modules as `name [module]`), when a symbol holds the address.
    pub symbol: Option<String>,
    pub offset: u64,
    /// Source file name and line, when the binary has DWARF.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// User frames: the GNU build-id of the mapped file (hex), to fetch its debug info.
    pub build_id: Option<String>,
    /// User frames: the file mapping that holds the address, so that a profile can say where
    /// the file lay (pprof's mappings, symbolized later by a server from the build-id).
    pub mapped: Option<Mapped>,
    /// User frames no symbol names: the start of the function that holds the address, as an
    /// offset in its file, from the function's FDE in `.eh_frame`.
    pub function: Option<u64>,
}

/// Where a user frame's file was mapped: `start..end` of the process's memory, from `offset`
/// of `path`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapped {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// A symbolized stack's frames, innermost first, shared by every event that has the stack:
/// its lines of text and its JSON are made once, when an event with it is first printed
/// (`probe -s` at a flat-out rate prints the same few stacks thousands of times a second).
#[derive(Debug, Default)]
pub struct Frames {
    list: Vec<Frame>,
    text: OnceCell<String>,
    json: OnceCell<String>,
    strace: OnceCell<String>,
}

impl Frames {
    pub fn new(list: Vec<Frame>) -> Rc<Frames> {
        Rc::new(Frames {
            list,
            ..Frames::default()
        })
    }

    /// Its lines under an event: each frame's [`Frame::text`], indented.
    fn text(&self) -> &str {
        self.text.get_or_init(|| {
            let lines = self.list.iter().map(|f| format!("        {}\n", f.text()));
            lines.collect()
        })
    }

    /// Its lines as strace -k prints them under a call ([`Frame::strace`]).
    fn strace(&self) -> &str {
        (self.strace).get_or_init(|| self.list.iter().map(|f| f.strace() + "\n").collect())
    }

    /// Its frames as JSON objects, comma-separated, without the array's brackets.
    fn json_items(&self) -> &str {
        self.json.get_or_init(|| {
            let items = self
                .list
                .iter()
                .map(|f| serde_json::to_string(&f.model()).expect("a frame serializes"));
            items.collect::<Vec<_>>().join(",")
        })
    }
}

impl Deref for Frames {
    type Target = [Frame];
    fn deref(&self) -> &[Frame] {
        &self.list
    }
}

impl PartialEq for Frames {
    fn eq(&self, other: &Frames) -> bool {
        self.list == other.list
    }
}

impl Eq for Frames {}

/// A stack of one hit: its frames, or why it is missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stack {
    Frames(Rc<Frames>),
    /// `bpf_get_stackid` failed with this errno (e.g. EEXIST: the stack map bucket was taken).
    NotCaptured(i32),
    /// Its id was removed from the stack map while it was still counted (`-I` forgets the
    /// stacks of exited processes): shown as `[lost]`.
    Evicted,
}

impl Frame {
    /// `function+0xoff`, or the address in hex when no symbol holds it.
    pub fn place(&self) -> String {
        match &self.symbol {
            Some(name) => format!("{name}+{:#x}", self.offset),
            None => format!("{:#x}", self.addr),
        }
    }

    /// `file+0xOFFSET`, the file's base name and the address's offset in it, for a frame
    /// no symbol names but whose mapped file is known (a stripped binary without its debug
    /// file): what `addr2line -e FILE 0xOFFSET` takes for the position-independent programs
    /// and libraries distributions ship, whose code lies at its file offset.
    ///
    /// Where the function holding the address is known from its FDE, the function's start:
    /// the samples of one function are one frame, as a symbol would make them.
    pub fn file_offset(&self) -> Option<String> {
        let mapped = self.mapped.as_ref()?;
        let base = mapped.path.rsplit('/').next().unwrap_or(&mapped.path);
        let offset = match self.function {
            Some(start) => start,
            None => (self.addr.checked_sub(mapped.start)?).checked_add(mapped.offset)?,
        };
        Some(format!("{base}+{offset:#x}"))
    }

    /// The function's name; else `file+0xOFFSET` ([`Frame::file_offset`]); else `[unknown]`.
    pub fn name(&self) -> String {
        (self.symbol.clone())
            .or_else(|| self.file_offset())
            .unwrap_or_else(|| "[unknown]".into())
    }

    /// The frame as strace -k prints it: ` > FILE(FUNCTION+0xOFF) [0xOFFSET]`, the offset the
    /// address's in its file; `FILE()` where no symbol names it; without a file, the address.
    pub fn strace(&self) -> String {
        let Some(m) = &self.mapped else {
            return format!(" > [unknown] [{:#x}]", self.addr);
        };
        let at = (self.addr.wrapping_sub(m.start)).wrapping_add(m.offset);
        match &self.symbol {
            Some(name) => format!(" > {}({name}+{:#x}) [{at:#x}]", m.path, self.offset),
            None => format!(" > {}() [{at:#x}]", m.path),
        }
    }

    /// `file:line`, when the binary has DWARF for the address.
    pub fn source(&self) -> Option<String> {
        Some(format!("{}:{}", self.file.as_ref()?, self.line?))
    }

    /// `function+0xoff`; when no symbol holds the address, `file+0xOFFSET` where its file is
    /// known (`file+0xSTART+0xoff` where the function's start is); else `None`.
    pub fn at(&self) -> Option<String> {
        match (&self.symbol, self.file_offset()) {
            (Some(_), _) => Some(self.place()),
            (None, Some(at)) => match (self.function, &self.mapped) {
                // The function's start and the offset in it, as `function+0xoff`.
                (Some(start), Some(m)) => {
                    let offset = (self.addr - m.start + m.offset).saturating_sub(start);
                    Some(format!("{at}+{offset:#x}"))
                }
                _ => Some(at),
            },
            (None, None) => None,
        }
    }

    /// `function+0xoff (file:line)`; when no symbol holds the address, `file+0xOFFSET`
    /// where its file is known, else `[unknown] 0xaddr`.
    pub fn text(&self) -> String {
        let mut text = (self.at()).unwrap_or_else(|| format!("[unknown] {:#x}", self.addr));
        if let (Some(file), Some(line)) = (&self.file, self.line) {
            text.push_str(&format!(" ({file}:{line})"));
        }
        text
    }

    /// The frame in the JSON model's one shape (`output::json::Frame`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self.model()).expect("a frame serializes")
    }

    fn model(&self) -> super::json::Frame<'_> {
        super::json::Frame {
            space: match self.space {
                Space::Kernel => "kernel",
                Space::User => "user",
            },
            name: self.name(),
            symbol: self.symbol.as_deref(),
            offset: self.symbol.is_some().then_some(self.offset),
            addr: Some(super::json::address(self.addr)),
            module: self.mapped.as_ref().map(|m| m.path.as_str()),
            build_id: self.build_id.as_deref(),
            file: self.file.as_deref(),
            line: self.line,
        }
    }
}

/// Why a stack is missing: `bpf_get_stackid`'s error. EFAULT is the kernel walking no frames
/// at all (the task was not on that side, or the hit's registers gave nothing to walk);
/// ESTALE is tracer's: a recycled stack no longer kept for the event read late, or one whose
/// id was reused while the hit took it.
fn not_captured(errno: i32) -> String {
    match -errno {
        libc::EFAULT => "the kernel gave no frames here".to_string(),
        // Not the kernel's: tracer's own recycling of the stack map (stacks.rs), or ids taken too
        // long after the event's time to say when (`STACK_TAKEN_LATE`).
        libc::ESTALE => "its stack map entry was reused around the time it was taken".to_string(),
        e => std::io::Error::from_raw_os_error(e).to_string(),
    }
}

/// Prints stacks under an event line, one frame per line, indented like bcc's and perf's.
pub fn write_text<W: Write + ?Sized>(out: &mut W, stacks: &[Stack]) -> io::Result<()> {
    for stack in stacks {
        match stack {
            Stack::Frames(frames) => out.write_all(frames.text().as_bytes())?,
            Stack::NotCaptured(errno) => writeln!(
                out,
                "        [stack not captured: {}]",
                not_captured(*errno)
            )?,
            Stack::Evicted => writeln!(out, "        [lost] (stack evicted while counted)")?,
        }
    }
    Ok(())
}

/// Prints stacks under a call as strace -k does: one ` > ` line per frame; a stack that could
/// not be captured says why in the same form.
pub fn write_strace<W: Write + ?Sized>(out: &mut W, stacks: &[Stack]) -> io::Result<()> {
    for stack in stacks {
        match stack {
            Stack::Frames(frames) => out.write_all(frames.strace().as_bytes())?,
            Stack::NotCaptured(errno) => {
                writeln!(out, " > [stack not captured: {}]", not_captured(*errno))?
            }
            Stack::Evicted => writeln!(out, " > [lost] (stack evicted while counted)")?,
        }
    }
    Ok(())
}

/// The `stack` field of a JSON line: every frame, kernel frames first; `null` entries are never
/// written, a stack that could not be captured adds `{"error": "..."}`.
pub fn json(stacks: &[Stack]) -> serde_json::Value {
    let mut out = Vec::new();
    write_json(&mut out, stacks).expect("writes to memory");
    serde_json::from_slice(&out).expect("the stack field is JSON")
}

/// [`json`], written: the frames' JSON made once per stack ([`Frames`]).
pub fn write_json<W: Write + ?Sized>(out: &mut W, stacks: &[Stack]) -> io::Result<()> {
    out.write_all(b"[")?;
    let mut first = true;
    for stack in stacks {
        let error = match stack {
            Stack::Frames(frames) if frames.is_empty() => continue,
            Stack::Frames(_) => None,
            Stack::NotCaptured(errno) => Some(not_captured(*errno)),
            Stack::Evicted => Some("stack evicted while counted".to_string()),
        };
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        match (stack, error) {
            (Stack::Frames(frames), _) => out.write_all(frames.json_items().as_bytes())?,
            (_, Some(error)) => {
                serde_json::to_writer(&mut *out, &serde_json::json!({ "error": error }))?
            }
            (_, None) => {}
        }
    }
    out.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(symbol: Option<&str>, file: Option<(&str, u32)>) -> Frame {
        Frame {
            build_id: None,
            mapped: None,
            function: None,
            addr: 0x401136,
            space: Space::User,
            symbol: symbol.map(str::to_string),
            offset: 0x1d,
            file: file.map(|(f, _)| f.to_string()),
            line: file.map(|(_, l)| l),
        }
    }

    #[test]
    fn unnamed_frames_are_named_by_file_and_offset() {
        let mut f = frame(None, None);
        f.addr = 0x5555_5555_8336;
        f.mapped = Some(Mapped {
            start: 0x5555_5555_7000,
            end: 0x5555_5556_6000,
            offset: 0x3000,
            path: "/usr/bin/gzip".into(),
        });
        // Offset 0x4336 in the file.
        assert_eq!(f.file_offset().as_deref(), Some("gzip+0x4336"));
        assert_eq!(f.name(), "gzip+0x4336");
        assert_eq!(f.text(), "gzip+0x4336");
        // In a function that starts at 0x4290 (its FDE): one name for all of it.
        f.function = Some(0x4290);
        assert_eq!(f.name(), "gzip+0x4290");
        assert_eq!(f.text(), "gzip+0x4290+0xa6");
        f.mapped = None;
        assert_eq!(f.name(), "[unknown]");
    }

    #[test]
    fn frames_print_indented_with_source_lines() {
        let mut out = Vec::new();
        let stacks = [
            Stack::Frames(Frames::new(vec![
                frame(Some("b"), Some(("chain.c", 17))),
                frame(None, None),
            ])),
            Stack::NotCaptured(-libc::EEXIST),
        ];
        write_text(&mut out, &stacks).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "        b+0x1d (chain.c:17)\n        [unknown] 0x401136\n        [stack not captured: File exists (os error 17)]\n"
        );
    }

    #[test]
    fn strace_lines_name_the_file_function_and_offset() {
        let mapped = Mapped {
            start: 0x7f00_0002_8000,
            end: 0x7f00_0017_d000,
            offset: 0x28000,
            path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
        };
        let mut named = frame(Some("__write"), None);
        (named.addr, named.offset) = (0x7f00_000f_8350, 0x10);
        named.mapped = Some(mapped.clone());
        let mut bare = frame(None, None);
        bare.addr = 0x7f00_0002_8901;
        bare.mapped = Some(mapped);
        let stacks = [
            Stack::Frames(Frames::new(vec![named, bare, frame(None, None)])),
            Stack::NotCaptured(-libc::EFAULT),
        ];
        let mut out = Vec::new();
        write_strace(&mut out, &stacks).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            " > /usr/lib/x86_64-linux-gnu/libc.so.6(__write+0x10) [0xf8350]\n \
             > /usr/lib/x86_64-linux-gnu/libc.so.6() [0x28901]\n \
             > [unknown] [0x401136]\n \
             > [stack not captured: the kernel gave no frames here]\n"
        );
    }

    #[test]
    fn json_frames_have_the_models_one_shape() {
        let v = json(&[Stack::Frames(Frames::new(vec![
            frame(Some("b"), Some(("chain.c", 17))),
            frame(None, None),
        ]))]);
        assert_eq!(v[0]["addr"], "0x401136");
        assert_eq!(v[0]["name"], "b");
        assert_eq!(v[0]["space"], "user");
        assert_eq!(v[0]["symbol"], "b");
        assert_eq!(v[0]["offset"], 0x1d);
        assert_eq!(v[0]["file"], "chain.c");
        assert_eq!(v[0]["line"], 17);
        assert_eq!(v[0]["module"], serde_json::Value::Null);
        assert_eq!(v[1]["name"], "[unknown]");
        assert_eq!(v[1]["symbol"], serde_json::Value::Null);
        assert_eq!(v[1]["offset"], serde_json::Value::Null);
    }
}
