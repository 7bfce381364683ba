//! `struct perf_event_attr` (perf_event_open(2), "Arguments") and typed event descriptions.

/// `PERF_ATTR_SIZE_VER7`: the layout below, up to and including `sig_data`.
pub const ATTR_SIZE_VER7: u32 = 128;
/// `PERF_ATTR_SIZE_VER0`: the smallest layout (up to `config1`).
pub const ATTR_SIZE_VER0: u32 = 64;

/// The kernel's `struct perf_event_attr`, field for field (VER7, 128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    /// `sample_period` or `sample_freq` (with the `freq` flag).
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word: see [`flag`].
    pub flags: u64,
    /// `wakeup_events` or `wakeup_watermark` (with the `watermark` flag).
    pub wakeup: u32,
    pub bp_type: u32,
    /// `bp_addr`, `kprobe_func`, `uprobe_path` or `config1`.
    pub config1: u64,
    /// `bp_len`, `kprobe_addr`, `probe_offset` or `config2`.
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
}

/// Bit positions in `perf_event_attr`'s flag word, in the man page's order.
pub mod flag {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const INHERIT_STAT: u64 = 1 << 11;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    /// Two bits: `precise_ip` 0..=3.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const MMAP_DATA: u64 = 1 << 17;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    pub const WRITE_BACKWARD: u64 = 1 << 27;
    pub const NAMESPACES: u64 = 1 << 28;
    pub const KSYMBOL: u64 = 1 << 29;
    pub const BPF_EVENT: u64 = 1 << 30;
    pub const AUX_OUTPUT: u64 = 1 << 31;
    pub const CGROUP: u64 = 1 << 32;
    pub const TEXT_POKE: u64 = 1 << 33;
    pub const BUILD_ID: u64 = 1 << 34;
    pub const INHERIT_THREAD: u64 = 1 << 35;
    pub const REMOVE_ON_EXEC: u64 = 1 << 36;
    pub const SIGTRAP: u64 = 1 << 37;
}

/// `sample_type` bits (`PERF_SAMPLE_*`).
pub mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `read_format` bits (`PERF_FORMAT_*`).
pub mod format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `PERF_TYPE_*`.
pub mod type_id {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// Generalized hardware events (`PERF_COUNT_HW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum Hardware {
    #[doc(alias = "PERF_COUNT_HW_CPU_CYCLES")]
    CpuCycles = 0,
    #[doc(alias = "PERF_COUNT_HW_INSTRUCTIONS")]
    Instructions = 1,
    #[doc(alias = "PERF_COUNT_HW_CACHE_REFERENCES")]
    CacheReferences = 2,
    #[doc(alias = "PERF_COUNT_HW_CACHE_MISSES")]
    CacheMisses = 3,
    #[doc(alias = "PERF_COUNT_HW_BRANCH_INSTRUCTIONS")]
    BranchInstructions = 4,
    #[doc(alias = "PERF_COUNT_HW_BRANCH_MISSES")]
    BranchMisses = 5,
    #[doc(alias = "PERF_COUNT_HW_BUS_CYCLES")]
    BusCycles = 6,
    #[doc(alias = "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND")]
    StalledCyclesFrontend = 7,
    #[doc(alias = "PERF_COUNT_HW_STALLED_CYCLES_BACKEND")]
    StalledCyclesBackend = 8,
    #[doc(alias = "PERF_COUNT_HW_REF_CPU_CYCLES")]
    RefCpuCycles = 9,
}

/// Software events (`PERF_COUNT_SW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum Software {
    #[doc(alias = "PERF_COUNT_SW_CPU_CLOCK")]
    CpuClock = 0,
    #[doc(alias = "PERF_COUNT_SW_TASK_CLOCK")]
    TaskClock = 1,
    #[doc(alias = "PERF_COUNT_SW_PAGE_FAULTS")]
    PageFaults = 2,
    #[doc(alias = "PERF_COUNT_SW_CONTEXT_SWITCHES")]
    ContextSwitches = 3,
    #[doc(alias = "PERF_COUNT_SW_CPU_MIGRATIONS")]
    CpuMigrations = 4,
    #[doc(alias = "PERF_COUNT_SW_PAGE_FAULTS_MIN")]
    PageFaultsMin = 5,
    #[doc(alias = "PERF_COUNT_SW_PAGE_FAULTS_MAJ")]
    PageFaultsMaj = 6,
    #[doc(alias = "PERF_COUNT_SW_ALIGNMENT_FAULTS")]
    AlignmentFaults = 7,
    #[doc(alias = "PERF_COUNT_SW_EMULATION_FAULTS")]
    EmulationFaults = 8,
    #[doc(alias = "PERF_COUNT_SW_DUMMY")]
    Dummy = 9,
    #[doc(alias = "PERF_COUNT_SW_BPF_OUTPUT")]
    BpfOutput = 10,
    #[doc(alias = "PERF_COUNT_SW_CGROUP_SWITCHES")]
    CgroupSwitches = 11,
}

/// Hardware cache ids, operations and results (`PERF_COUNT_HW_CACHE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum CacheId {
    L1d = 0,
    L1i = 1,
    Ll = 2,
    Dtlb = 3,
    Itlb = 4,
    Bpu = 5,
    Node = 6,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum CacheOp {
    Read = 0,
    Write = 1,
    Prefetch = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum CacheResult {
    Access = 0,
    Miss = 1,
}

/// Breakpoint access kinds (`HW_BREAKPOINT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BreakpointType {
    #[doc(alias = "HW_BREAKPOINT_R")]
    Read,
    #[doc(alias = "HW_BREAKPOINT_W")]
    Write,
    #[doc(alias = "HW_BREAKPOINT_RW")]
    ReadWrite,
    #[doc(alias = "HW_BREAKPOINT_X")]
    Execute,
}

impl BreakpointType {
    pub fn bits(self) -> u32 {
        match self {
            BreakpointType::Read => 1,
            BreakpointType::Write => 2,
            BreakpointType::ReadWrite => 3,
            BreakpointType::Execute => 4,
        }
    }
}

/// What a perf event counts or samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    Hardware(Hardware),
    Software(Software),
    HwCache {
        id: CacheId,
        op: CacheOp,
        result: CacheResult,
    },
    /// `PERF_TYPE_RAW` with a model-specific config.
    Raw(u64),
    /// `PERF_TYPE_TRACEPOINT` with the id from tracefs `events/CAT/NAME/id`.
    Tracepoint(u64),
    Breakpoint {
        kind: BreakpointType,
        addr: u64,
        len: u64,
    },
    /// A kprobe on the dynamic `kprobe` PMU: `func+offset`, or an absolute address.
    Kprobe {
        pmu_type: u32,
        target: KprobeTarget,
        /// The `format/retprobe` bit position when this is a kretprobe.
        retprobe_bit: Option<u32>,
    },
    /// A uprobe on the dynamic `uprobe` PMU: file path and file offset.
    Uprobe {
        pmu_type: u32,
        path: std::ffi::CString,
        offset: u64,
        retprobe_bit: Option<u32>,
        /// `config` bits of the PMU's `ref_ctr_offset` field (a USDT semaphore's file offset,
        /// as the PMU's format encodes it), 0 for none: the kernel increments the counter in
        /// every process the probe is armed in while it is, and decrements it after.
        ref_ctr: u64,
    },
    /// Any other PMU by type number with config words already encoded from its format terms.
    Pmu {
        pmu_type: u32,
        config: u64,
        config1: u64,
        config2: u64,
    },
}

/// Where a kprobe goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KprobeTarget {
    Symbol {
        name: std::ffi::CString,
        offset: u64,
    },
    Address(u64),
}

/// Options of `perf_event_attr` beyond the event itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `flag::*` bits (excluding `precise_ip`, `freq` and `watermark`, set through the fields below).
    pub flags: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub sampling: Sampling,
    pub wakeup: Wakeup,
    pub precise_ip: u8,
    /// `use_clockid` + `clockid` (e.g. `libc::CLOCK_MONOTONIC`).
    pub clockid: Option<i32>,
    pub sample_max_stack: u16,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub sample_regs_intr: u64,
    pub branch_sample_type: u64,
    /// Value delivered in `si_perf_data` with `sigtrap`.
    pub sig_data: u64,
}

/// `sample_period` vs `freq` + `sample_freq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sampling {
    /// Counting only (period 0).
    #[default]
    None,
    Period(u64),
    Frequency(u64),
}

/// When the kernel wakes the reader of the mmap ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wakeup {
    /// The kernel default (`wakeup_events` = 0, which wakes on every sample).
    #[default]
    Default,
    /// `wakeup_events`: every N samples (for BPF output: every N outputs).
    Events(u32),
    /// `watermark` + `wakeup_watermark`: once N bytes are pending.
    Watermark(u32),
}

impl EventKind {
    /// The `(type, config, config1, config2, bp_type)` words. Pointer-valued fields (kprobe
    /// function name, uprobe path) point into `self`, which must outlive the syscall.
    pub fn encode(&self) -> (u32, u64, u64, u64, u32) {
        match self {
            EventKind::Hardware(hw) => (type_id::HARDWARE, *hw as u64, 0, 0, 0),
            EventKind::Software(sw) => (type_id::SOFTWARE, *sw as u64, 0, 0, 0),
            EventKind::HwCache { id, op, result } => (
                type_id::HW_CACHE,
                (*id as u64) | ((*op as u64) << 8) | ((*result as u64) << 16),
                0,
                0,
                0,
            ),
            EventKind::Raw(config) => (type_id::RAW, *config, 0, 0, 0),
            EventKind::Tracepoint(id) => (type_id::TRACEPOINT, *id, 0, 0, 0),
            EventKind::Breakpoint { kind, addr, len } => {
                // Execute breakpoints take no length from the caller: the man page says to set
                // bp_len to sizeof(long) for them.
                let len = if *kind == BreakpointType::Execute {
                    std::mem::size_of::<libc::c_long>() as u64
                } else {
                    *len
                };
                (type_id::BREAKPOINT, 0, *addr, len, kind.bits())
            }
            EventKind::Kprobe {
                pmu_type,
                target,
                retprobe_bit,
            } => {
                let config = retprobe_bit.map_or(0, |bit| 1u64 << bit);
                match target {
                    KprobeTarget::Symbol { name, offset } => {
                        (*pmu_type, config, name.as_ptr() as u64, *offset, 0)
                    }
                    KprobeTarget::Address(addr) => (*pmu_type, config, 0, *addr, 0),
                }
            }
            EventKind::Uprobe {
                pmu_type,
                path,
                offset,
                retprobe_bit,
                ref_ctr,
            } => {
                let config = retprobe_bit.map_or(0, |bit| 1u64 << bit) | ref_ctr;
                (*pmu_type, config, path.as_ptr() as u64, *offset, 0)
            }
            EventKind::Pmu {
                pmu_type,
                config,
                config1,
                config2,
            } => (*pmu_type, *config, *config1, *config2, 0),
        }
    }

    /// Is this a hardware breakpoint?
    pub fn is_breakpoint(&self) -> bool {
        matches!(self, EventKind::Breakpoint { .. })
    }
}

/// Builds the raw attribute for `kind` with `options`.
pub fn build(kind: &EventKind, options: &Options) -> RawAttr {
    let (type_, config, config1, config2, bp_type) = kind.encode();
    let mut flags = options.flags & !(flag::FREQ | flag::WATERMARK | flag::USE_CLOCKID);
    flags &= !(0b11 << flag::PRECISE_IP_SHIFT);
    flags |= u64::from(options.precise_ip & 0b11) << flag::PRECISE_IP_SHIFT;
    let sample_period_or_freq = match options.sampling {
        Sampling::None => 0,
        Sampling::Period(period) => period,
        Sampling::Frequency(freq) => {
            flags |= flag::FREQ;
            freq
        }
    };
    let wakeup = match options.wakeup {
        Wakeup::Default => 0,
        Wakeup::Events(n) => n,
        Wakeup::Watermark(bytes) => {
            flags |= flag::WATERMARK;
            bytes
        }
    };
    let clockid = match options.clockid {
        Some(id) => {
            flags |= flag::USE_CLOCKID;
            id
        }
        None => 0,
    };
    RawAttr {
        type_,
        size: ATTR_SIZE_VER7,
        config,
        sample_period_or_freq,
        sample_type: options.sample_type,
        read_format: options.read_format,
        flags,
        wakeup,
        bp_type,
        config1,
        config2,
        branch_sample_type: options.branch_sample_type,
        sample_regs_user: options.sample_regs_user,
        sample_stack_user: options.sample_stack_user,
        clockid,
        sample_regs_intr: options.sample_regs_intr,
        aux_watermark: 0,
        sample_max_stack: options.sample_max_stack,
        reserved_2: 0,
        aux_sample_size: 0,
        reserved_3: 0,
        sig_data: options.sig_data,
    }
}

/// The smallest `PERF_ATTR_SIZE_VER*` that holds every non-zero field of `attr`, so that an
/// older kernel, which rejects non-zero bytes past its own size with E2BIG, can be retried.
pub fn minimal_size(attr: &RawAttr) -> u32 {
    if attr.sig_data != 0 {
        128
    } else if attr.aux_sample_size != 0 {
        120
    } else if attr.aux_watermark != 0 || attr.sample_max_stack != 0 {
        112
    } else if attr.sample_regs_intr != 0 {
        104
    } else if attr.sample_regs_user != 0 || attr.sample_stack_user != 0 || attr.clockid != 0 {
        96
    } else if attr.branch_sample_type != 0 {
        80
    } else if attr.config2 != 0 {
        72
    } else {
        ATTR_SIZE_VER0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_kernel_header() {
        // Offsets from include/uapi/linux/perf_event.h (PERF_ATTR_SIZE_VER0..VER7).
        assert_eq!(size_of::<RawAttr>(), 128);
        assert_eq!(offset_of!(RawAttr, config), 8);
        assert_eq!(offset_of!(RawAttr, sample_period_or_freq), 16);
        assert_eq!(offset_of!(RawAttr, sample_type), 24);
        assert_eq!(offset_of!(RawAttr, read_format), 32);
        assert_eq!(offset_of!(RawAttr, flags), 40);
        assert_eq!(offset_of!(RawAttr, wakeup), 48);
        assert_eq!(offset_of!(RawAttr, bp_type), 52);
        assert_eq!(offset_of!(RawAttr, config1), 56);
        assert_eq!(offset_of!(RawAttr, config2), 64); // VER0 ends at 64
        assert_eq!(offset_of!(RawAttr, branch_sample_type), 72); // VER1 ends at 72
        assert_eq!(offset_of!(RawAttr, sample_regs_user), 80); // VER2 ends at 80
        assert_eq!(offset_of!(RawAttr, sample_stack_user), 88);
        assert_eq!(offset_of!(RawAttr, clockid), 92);
        assert_eq!(offset_of!(RawAttr, sample_regs_intr), 96); // VER3 ends at 96
        assert_eq!(offset_of!(RawAttr, aux_watermark), 104); // VER4 ends at 104
        assert_eq!(offset_of!(RawAttr, sample_max_stack), 108);
        assert_eq!(offset_of!(RawAttr, aux_sample_size), 112); // VER5 ends at 112
        assert_eq!(offset_of!(RawAttr, sig_data), 120); // VER6 ends at 120
    }

    #[test]
    fn flag_bits_follow_the_man_page_order() {
        // Each flag's position is its index in the man page's bitfield list.
        let ordered = [
            flag::DISABLED,
            flag::INHERIT,
            flag::PINNED,
            flag::EXCLUSIVE,
            flag::EXCLUDE_USER,
            flag::EXCLUDE_KERNEL,
            flag::EXCLUDE_HV,
            flag::EXCLUDE_IDLE,
            flag::MMAP,
            flag::COMM,
            flag::FREQ,
            flag::INHERIT_STAT,
            flag::ENABLE_ON_EXEC,
            flag::TASK,
            flag::WATERMARK,
        ];
        for (i, bit) in ordered.iter().enumerate() {
            assert_eq!(*bit, 1 << i, "flag #{i}");
        }
        // precise_ip takes bits 15 and 16.
        let after_precise = [
            flag::MMAP_DATA,
            flag::SAMPLE_ID_ALL,
            flag::EXCLUDE_HOST,
            flag::EXCLUDE_GUEST,
            flag::EXCLUDE_CALLCHAIN_KERNEL,
            flag::EXCLUDE_CALLCHAIN_USER,
            flag::MMAP2,
            flag::COMM_EXEC,
            flag::USE_CLOCKID,
            flag::CONTEXT_SWITCH,
            flag::WRITE_BACKWARD,
            flag::NAMESPACES,
            flag::KSYMBOL,
            flag::BPF_EVENT,
            flag::AUX_OUTPUT,
            flag::CGROUP,
            flag::TEXT_POKE,
            flag::BUILD_ID,
            flag::INHERIT_THREAD,
            flag::REMOVE_ON_EXEC,
            flag::SIGTRAP,
        ];
        for (i, bit) in after_precise.iter().enumerate() {
            assert_eq!(*bit, 1 << (17 + i), "flag after precise_ip #{i}");
        }
    }

    #[test]
    fn options_set_the_mode_bits() {
        let options = Options {
            flags: flag::DISABLED | flag::FREQ, // FREQ is derived from `sampling`, not copied
            sampling: Sampling::Period(1000),
            wakeup: Wakeup::Watermark(4096),
            precise_ip: 2,
            clockid: Some(libc::CLOCK_MONOTONIC),
            ..Options::default()
        };
        let attr = build(&EventKind::Software(Software::TaskClock), &options);
        assert_eq!(attr.type_, type_id::SOFTWARE);
        assert_eq!(attr.config, 1);
        assert_eq!(attr.sample_period_or_freq, 1000);
        assert_eq!(
            attr.flags,
            flag::DISABLED | flag::WATERMARK | flag::USE_CLOCKID | (2 << 15)
        );
        assert_eq!(attr.wakeup, 4096);
        assert_eq!(attr.clockid, libc::CLOCK_MONOTONIC);
        assert_eq!(attr.size, ATTR_SIZE_VER7);

        let freq = build(
            &EventKind::Software(Software::CpuClock),
            &Options {
                sampling: Sampling::Frequency(99),
                ..Options::default()
            },
        );
        assert_eq!(freq.flags, flag::FREQ);
        assert_eq!(freq.sample_period_or_freq, 99);
    }

    #[test]
    fn event_encodings() {
        let cache = EventKind::HwCache {
            id: CacheId::Ll,
            op: CacheOp::Read,
            result: CacheResult::Miss,
        };
        assert_eq!(cache.encode(), (3, 0x1_00_02, 0, 0, 0));
        let bp = EventKind::Breakpoint {
            kind: BreakpointType::Write,
            addr: 0x1000,
            len: 4,
        };
        assert_eq!(bp.encode(), (5, 0, 0x1000, 4, 2));
        let x = EventKind::Breakpoint {
            kind: BreakpointType::Execute,
            addr: 0x2000,
            len: 1,
        };
        assert_eq!(x.encode(), (5, 0, 0x2000, 8, 4));
        let kret = EventKind::Kprobe {
            pmu_type: 6,
            target: KprobeTarget::Address(0xffff_ffff_8100_0000),
            retprobe_bit: Some(0),
        };
        assert_eq!(kret.encode(), (6, 1, 0, 0xffff_ffff_8100_0000, 0));
        let name = std::ffi::CString::new("do_sys_openat2").unwrap();
        let kp = EventKind::Kprobe {
            pmu_type: 6,
            target: KprobeTarget::Symbol {
                name: name.clone(),
                offset: 0x10,
            },
            retprobe_bit: None,
        };
        let (t, config, func, off, _) = kp.encode();
        assert_eq!((t, config, off), (6, 0, 0x10));
        if let EventKind::Kprobe {
            target: KprobeTarget::Symbol { name, .. },
            ..
        } = &kp
        {
            assert_eq!(func, name.as_ptr() as u64);
        }
    }

    #[test]
    fn minimal_size_tracks_the_highest_non_zero_field() {
        let mut attr = build(&EventKind::Software(Software::Dummy), &Options::default());
        assert_eq!(minimal_size(&attr), 64);
        attr.config2 = 1;
        assert_eq!(minimal_size(&attr), 72);
        attr.clockid = 1;
        assert_eq!(minimal_size(&attr), 96);
        attr.sample_max_stack = 10;
        assert_eq!(minimal_size(&attr), 112);
        attr.sig_data = 1;
        assert_eq!(minimal_size(&attr), 128);
    }
}
