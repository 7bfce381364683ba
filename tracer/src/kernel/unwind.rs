//! User stacks of programs built without frame pointers (Debian's packages, most distribution
//! binaries): unwound in user space from a copy of the top of the stack and the registers the
//! kernel took with the sample (`PERF_SAMPLE_REGS_USER`, `PERF_SAMPLE_STACK_USER`), by the
//! call frame information every x86-64 ELF file carries for exceptions (`.eh_frame`, indexed
//! by `.eh_frame_hdr`; `.debug_frame` where a file has it). perf's `--call-graph dwarf`
//! design; the unwinder is `framehop` (samply's), which falls back to the frame pointer where
//! an address has no unwind information (JIT code, a file that could not be read), so that a
//! stack mixing both comes out whole.

use std::ops::{Deref, Range};
use std::path::Path;
use std::rc::Rc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::Unwinder as _;
use object::{Object as _, ObjectSection as _, ObjectSegment as _};

use super::file::Mapped;
use super::Error;

/// `PERF_REG_X86_BP`, `_SP` and `_IP` (arch/x86/include/uapi/asm/perf_regs.h): the registers
/// an unwind starts from, given by the kernel in this order (the mask's bit order).
pub const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);

/// The largest stack copy a sample can carry (a sample record's size is 16 bits; perf's
/// limit for `--call-graph dwarf,SIZE`).
pub const MAX_STACK_BYTES: u32 = 65528;

/// The deepest user stack kept (perf's `kernel.perf_event_max_stack` default).
pub const MAX_DEPTH: usize = 127;

/// A section's bytes inside a mapped file, shared with the other sections of the file.
#[derive(Clone)]
pub struct Section {
    file: Rc<Mapped>,
    bytes: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.file[self.bytes.clone()]
    }
}

/// The unwind information of one ELF file: its sections' link-time addresses and where their
/// bytes are in the file.
pub struct Cfi {
    file: Rc<Mapped>,
    /// The lowest segment's page, as the symbolizer computes a file's load bias.
    pub base: u64,
    text: Option<(Range<u64>, Range<usize>)>,
    eh_frame: Option<(Range<u64>, Range<usize>)>,
    eh_frame_hdr: Option<(Range<u64>, Range<usize>)>,
    debug_frame: Option<Range<usize>>,
    got: Option<Range<u64>>,
}

impl Cfi {
    /// Reads the unwind sections of the ELF file at `path` (mapped, not read).
    pub fn load(path: &Path) -> Result<Cfi, Error> {
        Cfi::parse(
            Rc::new(super::file::map(path)?),
            &path.display().to_string(),
        )
    }

    /// The unwind sections of an ELF image read from memory (`name`: what errors call it).
    pub fn of_image(bytes: Vec<u8>, name: &str) -> Result<Cfi, Error> {
        Cfi::parse(Rc::new(Mapped::of_bytes(bytes)), name)
    }

    fn parse(file: Rc<Mapped>, name: &str) -> Result<Cfi, Error> {
        let elf = object::File::parse(&**file).map_err(|e| Error::Parse {
            path: name.to_string(),
            reason: e.to_string(),
        })?;
        let section = |name: &str| {
            let s = elf.section_by_name(name)?;
            let (offset, size) = s.file_range()?;
            let bytes = usize::try_from(offset).ok()?..usize::try_from(offset + size).ok()?;
            (bytes.end <= file.len()).then(|| (s.address()..s.address() + s.size(), bytes))
        };
        let cfi = Cfi {
            base: elf.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff,
            text: section(".text"),
            eh_frame: section(".eh_frame"),
            eh_frame_hdr: section(".eh_frame_hdr"),
            debug_frame: section(".debug_frame").map(|(_, bytes)| bytes),
            got: section(".got").map(|(svma, _)| svma),
            file: file.clone(),
        };
        Ok(cfi)
    }

    /// The start (link-time address) of the function holding link-time address `svma`, from
    /// its FDE in `.eh_frame`, found through `.eh_frame_hdr`'s sorted table: what names a
    /// function of a stripped file that has no symbol for it.
    pub fn function_start(&self, svma: u64) -> Option<u64> {
        use gimli::{BaseAddresses, EhFrame, EhFrameHdr, LittleEndian, UnwindSection as _};
        let (hdr_svma, hdr_bytes) = self.eh_frame_hdr.as_ref()?;
        let (eh_svma, eh_bytes) = self.eh_frame.as_ref()?;
        let mut bases = BaseAddresses::default()
            .set_eh_frame_hdr(hdr_svma.start)
            .set_eh_frame(eh_svma.start);
        if let Some((text, _)) = &self.text {
            bases = bases.set_text(text.start);
        }
        let hdr = EhFrameHdr::new(&self.file[hdr_bytes.clone()], LittleEndian);
        let parsed = hdr.parse(&bases, 8).ok()?;
        let table = parsed.table()?;
        let eh_frame = EhFrame::new(&self.file[eh_bytes.clone()], LittleEndian);
        let fde =
            (table.fde_for_address(&eh_frame, &bases, svma, EhFrame::cie_from_offset)).ok()?;
        (fde.initial_address() <= svma && svma < fde.end_address()).then(|| fde.initial_address())
    }

    /// Whether the file has call frame information at all.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// The file as a module of a process: mapped over `avma`, its link-time address 0 at
    /// `bias`.
    fn module(&self, name: String, avma: Range<u64>, bias: u64) -> framehop::Module<Section> {
        let section = |bytes: &Range<usize>| Section {
            file: self.file.clone(),
            bytes: bytes.clone(),
        };
        let info = framehop::ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.as_ref().map(|(svma, _)| svma.clone()),
            text: self.text.as_ref().map(|(_, bytes)| section(bytes)),
            got_svma: self.got.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|(svma, _)| svma.clone()),
            eh_frame: self.eh_frame.as_ref().map(|(_, bytes)| section(bytes)),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|(svma, _)| svma.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|(_, bytes)| section(bytes)),
            debug_frame: self.debug_frame.as_ref().map(section),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        framehop::Module::new(name, avma, bias, info)
    }
}

/// The registers and stack bytes of a sample, as the kernel dumped them.
#[derive(Clone, Copy, Debug)]
pub struct Sampled<'a> {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    /// The stack from `sp` up, at most the size asked for (less near the stack's top).
    pub stack: &'a [u8],
}

/// How an unwind ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnwindEnd {
    /// At the root: the unwind information says the outermost frame has no caller (`_start`,
    /// `clone`'s child), or the frame pointer chain ended.
    Root,
    /// The next frame's return address lies past the copied stack (`--call-graph dwarf,SIZE`
    /// would reach it).
    CopyEnded,
    /// At an address no module's unwind information covers (JIT code, a file not read), where
    /// the frame pointer did not lead on.
    NoCfi,
    /// The unwind led somewhere that is no stack (a register rule gone wrong) or did not move.
    Astray,
    /// [`MAX_DEPTH`] frames.
    Depth,
}

/// The vDSO's unwind information (`clock_gettime`, `gettimeofday`: where programs that time
/// their work are often sampled), read from a process's image of it, which is no file: the
/// same for every 64-bit process of the kernel, so read once per image size.
#[derive(Default)]
pub struct VdsoCfi {
    image: Option<(u64, Option<Cfi>)>,
}

impl VdsoCfi {
    /// Adds the vDSO of `process`, where it has one, to its unwinder.
    pub fn add_to(&mut self, unwinder: &mut Unwinder, process: &super::symbols::Process) {
        let Some(avma) = process.vdso_range() else {
            return;
        };
        let len = avma.end - avma.start;
        if self.image.as_ref().map(|(l, _)| *l) != Some(len) {
            let image = process.vdso_image().map(|(bytes, _)| bytes);
            let cfi = image.and_then(|bytes| Cfi::of_image(bytes, super::symbols::VDSO).ok());
            self.image = Some((len, cfi));
        }
        if let Some((_, Some(cfi))) = &self.image {
            let bias = avma.start.wrapping_sub(cfi.base);
            unwinder.add(super::symbols::VDSO.into(), cfi, avma, bias);
        }
    }
}

/// The unwinder of one process: its files as modules, and a cache of the rules it used.
pub struct Unwinder {
    inner: UnwinderX86_64<Section>,
    cache: CacheX86_64,
    /// The modules' ranges with unwind information, sorted.
    covered: Vec<Range<u64>>,
}

impl Default for Unwinder {
    fn default() -> Self {
        Unwinder {
            inner: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            covered: Vec::new(),
        }
    }
}

impl Unwinder {
    /// Adds a file mapped over `avma`, its link-time address 0 at `bias`.
    pub fn add(&mut self, name: String, cfi: &Cfi, avma: Range<u64>, bias: u64) {
        if cfi.has_cfi() {
            self.covered.push(avma.clone());
            self.covered.sort_by_key(|r| r.start);
        }
        self.inner.add_module(cfi.module(name, avma, bias));
    }

    fn covers(&self, addr: u64) -> bool {
        self.covered.iter().any(|r| r.contains(&addr))
    }

    /// The addresses of the stack, innermost first (the sampled ip, then return addresses),
    /// and how the unwind ended.
    pub fn unwind(&mut self, sampled: &Sampled) -> (Vec<u64>, UnwindEnd) {
        let Sampled { ip, sp, bp, stack } = *sampled;
        let mut read = |addr: u64| {
            let at = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let word = stack.get(at..at.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_ne_bytes(word.try_into().map_err(|_| ())?))
        };
        let regs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut frames = self.inner.iter_frames(ip, regs, &mut self.cache, &mut read);
        let mut ips = Vec::new();
        let end = loop {
            match frames.next() {
                Ok(Some(frame)) if ips.len() < MAX_DEPTH => ips.push(frame.address()),
                Ok(Some(_)) => break UnwindEnd::Depth,
                Ok(None) => break UnwindEnd::Root,
                Err(framehop::Error::CouldNotReadStack(addr)) => {
                    let copied = sp..sp.saturating_add(stack.len() as u64);
                    // Just past the copy (an unwind that went on as it should) rather than
                    // anywhere else (a rule that went wrong).
                    break match addr >= copied.end && addr < copied.end + (1 << 20) {
                        true => UnwindEnd::CopyEnded,
                        false => UnwindEnd::Astray,
                    };
                }
                Err(_) => break UnwindEnd::Astray,
            }
        };
        // An unwind that stopped short at code no unwind information covers: that is why.
        let end = match (end, ips.last()) {
            (UnwindEnd::Astray, Some(&last)) if !self.covers(last.saturating_sub(1)) => {
                UnwindEnd::NoCfi
            }
            (end, _) => end,
        };
        (ips, end)
    }
}

/// How the streamed user stacks whose top was copied ended (`Symbolizer::stacks`): for the
/// run's summary, as `profile --call-graph dwarf` says it of its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopEnds {
    /// Unwound to their root (`_start`, a thread's `clone`).
    pub whole: u64,
    /// Unwound as far as the copy or the unwind information went, and joined there to the
    /// frame-pointer walk, which went on.
    pub joined: u64,
    /// Cut short: where the copy ended, at code without unwind information, where the unwind
    /// went astray, at the deepest stack kept.
    pub copy_ended: u64,
    pub no_cfi: u64,
    pub astray: u64,
    pub depth: u64,
}

impl TopEnds {
    /// Counts one stack: its unwind ended as `end`, and the frame-pointer walk went on after
    /// it (`resumes`) or not.
    pub fn tally(&mut self, resumes: bool, end: UnwindEnd) {
        let count = match (resumes, end) {
            (true, _) => &mut self.joined,
            (false, UnwindEnd::Root) => &mut self.whole,
            (false, UnwindEnd::CopyEnded) => &mut self.copy_ended,
            (false, UnwindEnd::NoCfi) => &mut self.no_cfi,
            (false, UnwindEnd::Astray) => &mut self.astray,
            (false, UnwindEnd::Depth) => &mut self.depth,
        };
        *count += 1;
    }

    /// The summary's words, when any top was unwound.
    pub fn said(&self) -> Option<String> {
        let cut = self.copy_ended + self.no_cfi + self.astray + self.depth;
        if self.whole + self.joined + cut == 0 {
            return None;
        }
        let mut line = format!(
            "user stacks unwound from .eh_frame: {} whole, {} joined to the frame-pointer walk, {cut} cut short",
            self.whole, self.joined
        );
        let reasons = [
            (self.copy_ended, "past the copy of the stack's top"),
            (
                self.no_cfi,
                "at code without unwind information (JIT code or an unreadable file)",
            ),
            (self.astray, "where the unwind went astray"),
            (self.depth, "at the deepest stack kept"),
        ];
        line += &reasons_said(&reasons);
        Some(line)
    }
}

/// The reasons counted (`(count, why)`), those not 0, as a summary line's parenthesis: ` (3
/// past the copy, 1 where the unwind went astray)`; empty when every count is 0.
pub fn reasons_said<S: AsRef<str>>(reasons: &[(u64, S)]) -> String {
    let said: Vec<String> = (reasons.iter())
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {}", why.as_ref()))
        .collect();
    match said.is_empty() {
        true => String::new(),
        false => format!(" ({})", said.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary (Rust, built with unwind tables) unwinds itself from its own
    /// registers and stack, through frames the compiler may lay out without frame pointers.
    #[test]
    #[inline(never)]
    #[allow(unsafe_code)]
    fn a_stack_of_this_process_unwinds_to_its_root() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let cfi = Cfi::load(&exe).unwrap();
        assert!(cfi.has_cfi());
        let maps = crate::kernel::symbols::parse_maps(
            &std::fs::read_to_string("/proc/self/maps").unwrap(),
        );
        let mut unwinder = Unwinder::default();
        let mine = || {
            maps.iter()
                .filter(|m| m.path.as_deref() == Some(exe.as_path()))
        };
        let first = mine().map(|m| m.start).min().unwrap();
        let last = mine().map(|m| m.end).max().unwrap();
        let zero = mine().find(|m| m.offset == 0).unwrap().start;
        unwinder.add("self".into(), &cfi, first..last, zero - cfi.base);
        // Other files (libc) are left out: the unwind must end at their first frame, where
        // no module covers the address, or go on by frame pointer; in both cases it has
        // passed through this function's caller chain inside the test binary.
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers into locals; no memory is touched.
        unsafe {
            std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp",
                ip = out(reg) ip, sp = out(reg) sp, bp = out(reg) bp);
        }
        // The stack from sp to the end of its mapping, at most 64 KiB.
        let top = (maps.iter().find(|m| (m.start..m.end).contains(&sp)))
            .map_or(sp, |m| m.end)
            .min(sp + (64 << 10));
        let mut stack = vec![0u8; (top - sp) as usize];
        // SAFETY: [sp, top) lies inside this thread's stack mapping, which is live (this
        // frame is on it); it is copied out at once, as the kernel copies a sample's stack.
        unsafe { std::ptr::copy_nonoverlapping(sp as *const u8, stack.as_mut_ptr(), stack.len()) };
        let stack = &stack[..];
        let (ips, end) = unwinder.unwind(&Sampled { ip, sp, bp, stack });
        assert!(ips.len() >= 3, "{ips:x?} {end:?}");
        assert!(ips.iter().all(|&a| a != 0));
        assert_eq!(ips[0], ip);
        assert!(ips[1..].iter().any(|a| (first..last).contains(a)));
        // This very function's start, by its FDE, is the address its symbol gives.
        let me = a_stack_of_this_process_unwinds_to_its_root as *const () as u64;
        let bias = zero - cfi.base;
        assert_eq!(cfi.function_start(ip - bias), Some(me - bias));
        assert_eq!(cfi.function_start(u64::MAX / 2), None);
    }
}
