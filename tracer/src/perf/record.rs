//! Parsing `PERF_RECORD_*` records (perf_event_open(2), "MMAP layout") from bytes.
//!
//! Input is untrusted: every read is bounds-checked, and malformed or truncated input yields a
//! [`ParseError`], never a panic or an out-of-bounds read.

use bytes::Buf;

use super::attr::{format, sample};
use super::read::{self, Counts};

/// `PERF_RECORD_*` type numbers.
pub mod kind {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
}

/// `PERF_RECORD_MISC_*` bits of the header's `misc` field.
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    /// `MMAP_DATA` on mmap records, `COMM_EXEC` on comm, `SWITCH_OUT` on switch records.
    pub const BIT13: u16 = 1 << 13;
    /// `EXACT_IP` on samples, `SWITCH_OUT_PREEMPT` on switch, `MMAP_BUILD_ID` on mmap2.
    pub const BIT14: u16 = 1 << 14;
}

/// `struct perf_event_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub type_: u32,
    pub misc: u16,
    pub size: u16,
}

impl Header {
    pub const SIZE: usize = 8;

    pub fn parse(bytes: &[u8]) -> Option<Header> {
        let b = bytes.get(..8)?;
        Some(Header {
            type_: u32::from_ne_bytes(b[0..4].try_into().ok()?),
            misc: u16::from_ne_bytes(b[4..6].try_into().ok()?),
            size: u16::from_ne_bytes(b[6..8].try_into().ok()?),
        })
    }
}

/// What the parser must know of the event's attributes to lay out its records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub sample_type: u64,
    pub read_format: u64,
    /// `sample_id_all`: non-sample records carry a `struct sample_id` trailer.
    pub sample_id_all: bool,
    /// Number of set bits in `sample_regs_user`.
    pub regs_user: u32,
    /// Number of set bits in `sample_regs_intr`.
    pub regs_intr: u32,
    /// `PERF_SAMPLE_BRANCH_HW_INDEX` in `branch_sample_type`: branch stacks carry `hw_idx`.
    pub branch_hw_index: bool,
    /// The most callchain entries a sample may claim (the event's `sample_max_stack` plus its
    /// context markers); `None`: only the record's size bounds it.
    pub max_callchain: Option<u64>,
}

/// The callchain's context markers (`enum perf_callchain_context` in
/// include/uapi/linux/perf_event.h): the entries after one are of that context.
pub mod callchain {
    #[doc(alias = "PERF_CONTEXT_HV")]
    pub const HV: u64 = -32i64 as u64;
    #[doc(alias = "PERF_CONTEXT_KERNEL")]
    pub const KERNEL: u64 = -128i64 as u64;
    #[doc(alias = "PERF_CONTEXT_USER")]
    pub const USER: u64 = -512i64 as u64;
    #[doc(alias = "PERF_CONTEXT_MAX")]
    pub const MAX: u64 = -4095i64 as u64;
    /// The kernel's default `kernel.perf_event_max_stack` (`PERF_MAX_STACK_DEPTH`).
    #[doc(alias = "PERF_MAX_STACK_DEPTH")]
    pub const MAX_STACK_DEPTH: u16 = 127;
    /// The kernel's default `kernel.perf_event_max_contexts_per_stack`
    /// (`PERF_MAX_CONTEXTS_PER_STACK`): markers a callchain may hold besides its frames.
    #[doc(alias = "PERF_MAX_CONTEXTS_PER_STACK")]
    pub const MAX_CONTEXTS: u64 = 8;

    /// Splits a callchain into its kernel and user frames, innermost first; frames of other
    /// contexts (hypervisor, guest) are left out.
    pub fn split(chain: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let (mut kernel, mut user) = (Vec::new(), Vec::new());
        // Before any marker: the kernel writes one first, so no frame is taken unmarked.
        let mut into: Option<bool> = None;
        for &ip in chain {
            if ip >= MAX {
                into = match ip {
                    KERNEL => Some(true),
                    USER => Some(false),
                    _ => None,
                };
                continue;
            }
            match into {
                Some(true) => kernel.push(ip),
                Some(false) => user.push(ip),
                None => {}
            }
        }
        (kernel, user)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("record of type {type_} is truncated: needs more than its {size} bytes")]
    Truncated { type_: u32, size: usize },
    #[error("record header claims {claimed} bytes but {available} are available")]
    BadSize { claimed: usize, available: usize },
    #[error("sample claims a callchain of {nr} entries (at most {max})")]
    CallchainTooLong { nr: u64, max: u64 },
}

/// `struct sample_id`: the trailer of non-sample records with `sample_id_all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
}

/// A branch stack entry (`struct perf_branch_entry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    pub from: u64,
    pub to: u64,
    pub flags: u64,
}

/// `PERF_SAMPLE_REGS_*`: the ABI word and the registers in mask order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    pub abi: u64,
    pub regs: Vec<u64>,
}

/// A `PERF_RECORD_SAMPLE`, each field present when its `PERF_SAMPLE_*` bit was requested.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    pub identifier: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub read: Option<Counts>,
    pub callchain: Option<Vec<u64>>,
    /// `PERF_SAMPLE_RAW` bytes, borrowed from the ring (BPF output payloads live here).
    pub raw: Option<&'a [u8]>,
    pub branch_hw_idx: Option<u64>,
    pub branch_stack: Option<Vec<BranchEntry>>,
    pub regs_user: Option<Regs>,
    /// `PERF_SAMPLE_STACK_USER`: the dumped bytes (already cut to `dyn_size`).
    pub stack_user: Option<&'a [u8]>,
    pub weight: Option<u64>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub regs_intr: Option<Regs>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
    pub aux: Option<&'a [u8]>,
}

/// A parsed record. String fields borrow from the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    Sample(Box<Sample<'a>>),
    Mmap {
        pid: u32,
        tid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        filename: &'a [u8],
    },
    Mmap2 {
        pid: u32,
        tid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        file: Mmap2File<'a>,
        prot: u32,
        flags: u32,
        filename: &'a [u8],
    },
    Lost {
        id: u64,
        lost: u64,
    },
    LostSamples {
        lost: u64,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: &'a [u8],
        exec: bool,
    },
    Exit(TaskRecord),
    Fork(TaskRecord),
    Throttle {
        time: u64,
        id: u64,
        stream_id: u64,
    },
    Unthrottle {
        time: u64,
        id: u64,
        stream_id: u64,
    },
    Read {
        pid: u32,
        tid: u32,
        values: Counts,
    },
    Aux {
        aux_offset: u64,
        aux_size: u64,
        flags: u64,
    },
    ItraceStart {
        pid: u32,
        tid: u32,
    },
    Switch {
        out: bool,
        preempt: bool,
    },
    SwitchCpuWide {
        next_prev_pid: u32,
        next_prev_tid: u32,
        out: bool,
        preempt: bool,
    },
    Namespaces {
        pid: u32,
        tid: u32,
        /// `(dev, inode)` per namespace, in the kernel's index order.
        namespaces: Vec<(u64, u64)>,
    },
    Ksymbol {
        addr: u64,
        len: u32,
        ksym_type: u16,
        flags: u16,
        name: &'a [u8],
    },
    BpfEvent {
        type_: u16,
        flags: u16,
        id: u32,
        tag: [u8; 8],
    },
    Cgroup {
        id: u64,
        path: &'a [u8],
    },
    TextPoke {
        addr: u64,
        old: &'a [u8],
        new: &'a [u8],
    },
    AuxOutputHwId {
        hw_id: u64,
    },
    /// A record type this parser does not know (a newer kernel): kept, not dropped.
    Unknown {
        type_: u32,
        body: &'a [u8],
    },
}

/// The file identity of an MMAP2 record: device/inode, or a build id (MMAP_BUILD_ID).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mmap2File<'a> {
    Inode {
        maj: u32,
        min: u32,
        ino: u64,
        ino_generation: u64,
    },
    BuildId(&'a [u8]),
}

/// FORK and EXIT bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub ptid: u32,
    pub time: u64,
}

/// A parsed record with its header and `sample_id` trailer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub header: Header,
    pub record: Record<'a>,
    /// The trailer of a non-sample record (all `None` without `sample_id_all`).
    pub sample_id: SampleId,
}

/// A bounds-checked reader over a record body: a `bytes::Buf` over the bytes not read yet,
/// whose short reads become [`ParseError::Truncated`] for the whole record.
struct Cursor<'a> {
    rest: &'a [u8],
    /// The whole record's size (header included), for the error.
    size: usize,
    type_: u32,
}

impl<'a> Cursor<'a> {
    fn new(body: &'a [u8], type_: u32) -> Cursor<'a> {
        Cursor {
            rest: body,
            size: body.len() + Header::SIZE,
            type_,
        }
    }

    fn truncated(&self) -> ParseError {
        ParseError::Truncated {
            type_: self.type_,
            size: self.size,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ParseError> {
        if self.rest.remaining() < n {
            return Err(self.truncated());
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, ParseError> {
        self.rest.try_get_u16_ne().map_err(|_| self.truncated())
    }

    fn u32(&mut self) -> Result<u32, ParseError> {
        self.rest.try_get_u32_ne().map_err(|_| self.truncated())
    }

    fn u64(&mut self) -> Result<u64, ParseError> {
        self.rest.try_get_u64_ne().map_err(|_| self.truncated())
    }

    /// `n` u64 words, with `n` taken from the input: bounded by the bytes left, so a hostile
    /// count cannot make us allocate more than the record holds.
    fn u64s(&mut self, n: u64) -> Result<Vec<u64>, ParseError> {
        if n > self.rest.remaining() as u64 / 8 {
            return Err(self.truncated());
        }
        (0..n).map(|_| self.u64()).collect()
    }

    fn opt_u64(&mut self, present: bool) -> Result<Option<u64>, ParseError> {
        if present {
            self.u64().map(Some)
        } else {
            Ok(None)
        }
    }

    /// The rest of the body up to its first NUL (strings are NUL-padded to 8 bytes).
    fn cstr_rest(&mut self) -> &'a [u8] {
        let rest = std::mem::take(&mut self.rest);
        rest.iter()
            .position(|&b| b == 0)
            .map_or(rest, |n| &rest[..n])
    }

    fn read_format(&mut self, read_format: u64) -> Result<Counts, ParseError> {
        // A group's length depends on its `nr` word; peek it to size the slice.
        let len = if read_format & format::GROUP != 0 {
            let nr = { self.rest }
                .try_get_u64_ne()
                .map_err(|_| self.truncated())?;
            if nr > self.rest.remaining() as u64 / 8 {
                return Err(self.truncated());
            }
            read::buffer_size(read_format, nr as usize)
        } else {
            read::buffer_size(read_format, 1)
        };
        let bytes = self.take(len)?;
        read::decode(read_format, bytes).ok_or_else(|| self.truncated())
    }

    fn regs(&mut self, count: u32) -> Result<Regs, ParseError> {
        let abi = self.u64()?;
        // PERF_SAMPLE_REGS_ABI_NONE (0): no registers follow (a kernel thread, for user regs).
        let regs = if abi == 0 {
            Vec::new()
        } else {
            self.u64s(count.into())?
        };
        Ok(Regs { abi, regs })
    }
}

/// Size of the `sample_id` trailer for `sample_type`.
pub fn sample_id_size(sample_type: u64) -> usize {
    let bits = [
        sample::TID,
        sample::TIME,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::IDENTIFIER,
    ];
    bits.iter().filter(|&&b| sample_type & b != 0).count() * 8
}

fn parse_sample_id(bytes: &[u8], sample_type: u64, type_: u32) -> Result<SampleId, ParseError> {
    let mut c = Cursor::new(bytes, type_);
    let has = |b| sample_type & b != 0;
    let mut id = SampleId::default();
    if has(sample::TID) {
        id.pid = Some(c.u32()?);
        id.tid = Some(c.u32()?);
    }
    id.time = c.opt_u64(has(sample::TIME))?;
    id.id = c.opt_u64(has(sample::ID))?;
    id.stream_id = c.opt_u64(has(sample::STREAM_ID))?;
    if has(sample::CPU) {
        id.cpu = Some(c.u32()?);
        c.u32()?;
    }
    if let Some(identifier) = c.opt_u64(has(sample::IDENTIFIER))? {
        id.id = Some(identifier);
    }
    Ok(id)
}

fn parse_sample<'a>(c: &mut Cursor<'a>, layout: &Layout) -> Result<Sample<'a>, ParseError> {
    let st = layout.sample_type;
    let has = |b| st & b != 0;
    let mut s = Sample {
        identifier: c.opt_u64(has(sample::IDENTIFIER))?,
        ip: c.opt_u64(has(sample::IP))?,
        ..Sample::default()
    };
    if has(sample::TID) {
        s.pid = Some(c.u32()?);
        s.tid = Some(c.u32()?);
    }
    s.time = c.opt_u64(has(sample::TIME))?;
    s.addr = c.opt_u64(has(sample::ADDR))?;
    s.id = c.opt_u64(has(sample::ID))?;
    s.stream_id = c.opt_u64(has(sample::STREAM_ID))?;
    if has(sample::CPU) {
        s.cpu = Some(c.u32()?);
        c.u32()?; // res
    }
    s.period = c.opt_u64(has(sample::PERIOD))?;
    if has(sample::READ) {
        s.read = Some(c.read_format(layout.read_format)?);
    }
    if has(sample::CALLCHAIN) {
        let nr = c.u64()?;
        if let Some(max) = layout.max_callchain.filter(|&max| nr > max) {
            return Err(ParseError::CallchainTooLong { nr, max });
        }
        s.callchain = Some(c.u64s(nr)?);
    }
    if has(sample::RAW) {
        let size = c.u32()? as usize;
        s.raw = Some(c.take(size)?);
    }
    if has(sample::BRANCH_STACK) {
        let bnr = c.u64()?;
        if layout.branch_hw_index {
            s.branch_hw_idx = Some(c.u64()?);
        }
        let words = c.u64s(bnr.checked_mul(3).ok_or_else(|| c.truncated())?)?;
        s.branch_stack = Some(
            words
                .chunks_exact(3)
                .map(|w| BranchEntry {
                    from: w[0],
                    to: w[1],
                    flags: w[2],
                })
                .collect(),
        );
    }
    if has(sample::REGS_USER) {
        s.regs_user = Some(c.regs(layout.regs_user)?);
    }
    if has(sample::STACK_USER) {
        let size = c.u64()?;
        let size = usize::try_from(size).map_err(|_| c.truncated())?;
        let data = c.take(size)?;
        // dyn_size follows only when size is non-zero; it says how much of the dump is valid.
        let data = if size != 0 {
            let dyn_size = usize::try_from(c.u64()?).unwrap_or(usize::MAX);
            &data[..dyn_size.min(data.len())]
        } else {
            data
        };
        s.stack_user = Some(data);
    }
    s.weight = c.opt_u64(has(sample::WEIGHT) || has(sample::WEIGHT_STRUCT))?;
    s.data_src = c.opt_u64(has(sample::DATA_SRC))?;
    s.transaction = c.opt_u64(has(sample::TRANSACTION))?;
    if has(sample::REGS_INTR) {
        s.regs_intr = Some(c.regs(layout.regs_intr)?);
    }
    s.phys_addr = c.opt_u64(has(sample::PHYS_ADDR))?;
    s.cgroup = c.opt_u64(has(sample::CGROUP))?;
    s.data_page_size = c.opt_u64(has(sample::DATA_PAGE_SIZE))?;
    s.code_page_size = c.opt_u64(has(sample::CODE_PAGE_SIZE))?;
    if has(sample::AUX) {
        let size = usize::try_from(c.u64()?).map_err(|_| c.truncated())?;
        s.aux = Some(c.take(size)?);
    }
    Ok(s)
}

/// The raw payload of a `PERF_RECORD_SAMPLE` whose layout is `PERF_SAMPLE_RAW` alone (BPF
/// output rings), without building a [`Sample`]: the hot path of the ring reader. `None` for
/// any other record or layout, or a malformed one; callers then use [`parse`], which reports
/// why. Same bounds checks as `parse`, no allocation.
#[inline]
pub fn raw_sample<'a>(bytes: &'a [u8], layout: &Layout) -> Option<&'a [u8]> {
    if layout.sample_type != sample::RAW {
        return None;
    }
    let header = Header::parse(bytes)?;
    let size = header.size as usize;
    if header.type_ != kind::SAMPLE || size < Header::SIZE + 4 || size > bytes.len() {
        return None;
    }
    let raw_size = u32::from_ne_bytes(bytes[8..12].try_into().ok()?) as usize;
    let end = 12usize.checked_add(raw_size)?;
    if end > size {
        return None;
    }
    bytes.get(12..end)
}

/// Parses one whole record (header included) as laid out by `layout`.
pub fn parse<'a>(bytes: &'a [u8], layout: &Layout) -> Result<Parsed<'a>, ParseError> {
    let header = Header::parse(bytes).ok_or(ParseError::BadSize {
        claimed: Header::SIZE,
        available: bytes.len(),
    })?;
    let size = header.size as usize;
    if size < Header::SIZE || size > bytes.len() {
        return Err(ParseError::BadSize {
            claimed: size,
            available: bytes.len(),
        });
    }
    let mut body = &bytes[Header::SIZE..size];
    let mut sample_id = SampleId::default();
    if header.type_ != kind::SAMPLE
        && layout.sample_id_all
        && header.type_ <= kind::AUX_OUTPUT_HW_ID
    {
        let trailer = sample_id_size(layout.sample_type);
        let split = body
            .len()
            .checked_sub(trailer)
            .ok_or(ParseError::Truncated {
                type_: header.type_,
                size,
            })?;
        sample_id = parse_sample_id(&body[split..], layout.sample_type, header.type_)?;
        body = &body[..split];
    }
    let record = record(&header, body, layout)?;
    Ok(Parsed {
        header,
        record,
        sample_id,
    })
}

/// A record's body (without its `sample_id` trailer) as the record its type says.
fn record<'a>(header: &Header, body: &'a [u8], layout: &Layout) -> Result<Record<'a>, ParseError> {
    let mut c = Cursor::new(body, header.type_);
    let bit13 = header.misc & misc::BIT13 != 0;
    let bit14 = header.misc & misc::BIT14 != 0;
    Ok(match header.type_ {
        kind::SAMPLE => Record::Sample(Box::new(parse_sample(&mut c, layout)?)),
        kind::MMAP => Record::Mmap {
            pid: c.u32()?,
            tid: c.u32()?,
            addr: c.u64()?,
            len: c.u64()?,
            pgoff: c.u64()?,
            filename: c.cstr_rest(),
        },
        kind::MMAP2 => mmap2(&mut c, bit14)?,
        kind::LOST => Record::Lost {
            id: c.u64()?,
            lost: c.u64()?,
        },
        kind::LOST_SAMPLES => Record::LostSamples { lost: c.u64()? },
        kind::COMM => Record::Comm {
            pid: c.u32()?,
            tid: c.u32()?,
            comm: c.cstr_rest(),
            exec: bit13,
        },
        kind::EXIT | kind::FORK => {
            let task = TaskRecord {
                pid: c.u32()?,
                ppid: c.u32()?,
                tid: c.u32()?,
                ptid: c.u32()?,
                time: c.u64()?,
            };
            match header.type_ {
                kind::EXIT => Record::Exit(task),
                _ => Record::Fork(task),
            }
        }
        kind::THROTTLE | kind::UNTHROTTLE => throttle(&mut c, header.type_ == kind::THROTTLE)?,
        kind::READ => Record::Read {
            pid: c.u32()?,
            tid: c.u32()?,
            values: c.read_format(layout.read_format)?,
        },
        kind::AUX => Record::Aux {
            aux_offset: c.u64()?,
            aux_size: c.u64()?,
            flags: c.u64()?,
        },
        kind::ITRACE_START => Record::ItraceStart {
            pid: c.u32()?,
            tid: c.u32()?,
        },
        kind::SWITCH => Record::Switch {
            out: bit13,
            preempt: bit14,
        },
        kind::SWITCH_CPU_WIDE => Record::SwitchCpuWide {
            next_prev_pid: c.u32()?,
            next_prev_tid: c.u32()?,
            out: bit13,
            preempt: bit14,
        },
        kind::NAMESPACES => namespaces(&mut c)?,
        kind::KSYMBOL => Record::Ksymbol {
            addr: c.u64()?,
            len: c.u32()?,
            ksym_type: c.u16()?,
            flags: c.u16()?,
            name: c.cstr_rest(),
        },
        kind::BPF_EVENT => Record::BpfEvent {
            type_: c.u16()?,
            flags: c.u16()?,
            id: c.u32()?,
            tag: c.take(8)?.try_into().expect("8 bytes"),
        },
        kind::CGROUP => Record::Cgroup {
            id: c.u64()?,
            path: c.cstr_rest(),
        },
        kind::TEXT_POKE => {
            let (addr, old_len, new_len) = (c.u64()?, c.u16()?, c.u16()?);
            Record::TextPoke {
                addr,
                old: c.take(old_len.into())?,
                new: c.take(new_len.into())?,
            }
        }
        kind::AUX_OUTPUT_HW_ID => Record::AuxOutputHwId { hw_id: c.u64()? },
        type_ => Record::Unknown { type_, body },
    })
}

/// `PERF_RECORD_MMAP2`: with `build_id` (misc bit 14) the file's build id, else its inode.
fn mmap2<'a>(c: &mut Cursor<'a>, build_id: bool) -> Result<Record<'a>, ParseError> {
    let (pid, tid, addr, len, pgoff) = (c.u32()?, c.u32()?, c.u64()?, c.u64()?, c.u64()?);
    let file = if build_id {
        let id = c.take(24)?;
        let n = (id[0] as usize).min(20);
        Mmap2File::BuildId(&id[4..4 + n])
    } else {
        Mmap2File::Inode {
            maj: c.u32()?,
            min: c.u32()?,
            ino: c.u64()?,
            ino_generation: c.u64()?,
        }
    };
    Ok(Record::Mmap2 {
        pid,
        tid,
        addr,
        len,
        pgoff,
        file,
        prot: c.u32()?,
        flags: c.u32()?,
        filename: c.cstr_rest(),
    })
}

/// `PERF_RECORD_THROTTLE` (`throttled`) or `_UNTHROTTLE`.
fn throttle<'a>(c: &mut Cursor<'a>, throttled: bool) -> Result<Record<'a>, ParseError> {
    let (time, id, stream_id) = (c.u64()?, c.u64()?, c.u64()?);
    Ok(match throttled {
        true => Record::Throttle {
            time,
            id,
            stream_id,
        },
        false => Record::Unthrottle {
            time,
            id,
            stream_id,
        },
    })
}

/// `PERF_RECORD_NAMESPACES`: `nr` (dev, inode) pairs.
fn namespaces<'a>(c: &mut Cursor<'a>) -> Result<Record<'a>, ParseError> {
    let (pid, tid, nr) = (c.u32()?, c.u32()?, c.u64()?);
    let words = c.u64s(nr.checked_mul(2).ok_or_else(|| c.truncated())?)?;
    Ok(Record::Namespaces {
        pid,
        tid,
        namespaces: words.chunks_exact(2).map(|w| (w[0], w[1])).collect(),
    })
}

#[cfg(test)]
mod tests;
