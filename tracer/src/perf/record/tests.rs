use super::*;

/// Builds a record byte by byte, the way the kernel lays it out.
#[derive(Default)]
struct Rec(Vec<u8>);

impl Rec {
    fn u16(mut self, v: u16) -> Self {
        self.0.extend(v.to_ne_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend(v.to_ne_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend(v.to_ne_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend(b);
        self
    }
    /// A NUL-terminated string padded to 8 bytes, as the kernel writes names.
    fn cstr(mut self, s: &str) -> Self {
        self.0.extend(s.as_bytes());
        self.0.push(0);
        while !self.0.len().is_multiple_of(8) {
            self.0.push(0);
        }
        self
    }
    fn finish(self, type_: u32, misc: u16) -> Vec<u8> {
        let size = (self.0.len() + 8) as u16;
        let mut out = Vec::new();
        out.extend(type_.to_ne_bytes());
        out.extend(misc.to_ne_bytes());
        out.extend(size.to_ne_bytes());
        out.extend(self.0);
        out
    }
}

fn layout(sample_type: u64) -> Layout {
    Layout {
        sample_type,
        ..Layout::default()
    }
}

/// Every prefix of a valid record, with the header's size patched to the prefix length, must
/// fail cleanly (or parse, for records whose tail is a string), never panic.
fn assert_truncations_are_errors(bytes: &[u8], layout: &Layout) {
    for len in 0..bytes.len() {
        let mut cut = bytes[..len].to_vec();
        if len >= 8 {
            cut[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
        }
        let _ = parse(&cut, layout);
        // The header still claiming the full size must be rejected as a bad size.
        if len >= 8 {
            let mut lying = bytes[..len].to_vec();
            lying[6..8].copy_from_slice(&(bytes.len() as u16).to_ne_bytes());
            assert!(matches!(
                parse(&lying, layout),
                Err(ParseError::BadSize { .. })
            ));
        }
    }
}

#[test]
fn sample_with_every_field_in_documented_order() {
    let st = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ADDR
        | sample::ID
        | sample::STREAM_ID
        | sample::CPU
        | sample::PERIOD
        | sample::READ
        | sample::CALLCHAIN
        | sample::RAW
        | sample::BRANCH_STACK
        | sample::REGS_USER
        | sample::STACK_USER
        | sample::WEIGHT
        | sample::DATA_SRC
        | sample::TRANSACTION
        | sample::REGS_INTR
        | sample::PHYS_ADDR
        | sample::CGROUP
        | sample::DATA_PAGE_SIZE
        | sample::CODE_PAGE_SIZE
        | sample::AUX;
    let layout = Layout {
        sample_type: st,
        read_format: format::GROUP | format::ID | format::TOTAL_TIME_ENABLED,
        regs_user: 2,
        regs_intr: 1,
        branch_hw_index: true,
        ..Layout::default()
    };
    let raw = [1u8, 2, 3, 4];
    let bytes = Rec::default()
        .u64(100) // identifier
        .u64(0xffff_0001234) // ip
        .u32(7)
        .u32(8) // pid, tid
        .u64(999) // time
        .u64(0xdead) // addr
        .u64(101) // id
        .u64(102) // stream_id
        .u32(1)
        .u32(0) // cpu, res
        .u64(5000) // period
        .u64(2) // read: nr
        .u64(77) // time_enabled
        .u64(10)
        .u64(201) // value, id
        .u64(20)
        .u64(202)
        .u64(3) // callchain nr
        .u64(0xa)
        .u64(0xb)
        .u64(0xc)
        .u32(4) // raw size
        .bytes(&raw)
        .u64(1) // bnr
        .u64(9) // hw_idx
        .u64(0x10)
        .u64(0x20)
        .u64(0x30) // branch entry
        .u64(2) // regs_user abi (64-bit)
        .u64(0x111)
        .u64(0x222)
        .u64(16) // stack size
        .bytes(&[0xee; 16])
        .u64(8) // dyn_size
        .u64(55) // weight
        .u64(66) // data_src
        .u64(77) // transaction
        .u64(2) // regs_intr abi
        .u64(0x333)
        .u64(0x4000) // phys_addr
        .u64(88) // cgroup
        .u64(4096) // data_page_size
        .u64(2 << 20) // code_page_size
        .u64(3) // aux size
        .bytes(&[9, 9, 9])
        .finish(kind::SAMPLE, misc::USER);
    let parsed = parse(&bytes, &layout).unwrap();
    assert_eq!(parsed.header.type_, kind::SAMPLE);
    let Record::Sample(s) = parsed.record else {
        panic!("not a sample")
    };
    assert_eq!(s.identifier, Some(100));
    assert_eq!(s.ip, Some(0xffff_0001234));
    assert_eq!((s.pid, s.tid), (Some(7), Some(8)));
    assert_eq!(s.time, Some(999));
    assert_eq!(s.addr, Some(0xdead));
    assert_eq!(s.id, Some(101));
    assert_eq!(s.stream_id, Some(102));
    assert_eq!(s.cpu, Some(1));
    assert_eq!(s.period, Some(5000));
    let read = s.read.as_ref().unwrap();
    assert_eq!(read.time_enabled, Some(77));
    assert_eq!(read.values.len(), 2);
    assert_eq!((read.values[1].value, read.values[1].id), (20, Some(202)));
    assert_eq!(s.callchain.as_deref(), Some(&[0xa, 0xb, 0xc][..]));
    assert_eq!(s.raw, Some(&raw[..]));
    assert_eq!(s.branch_hw_idx, Some(9));
    assert_eq!(
        s.branch_stack.as_deref(),
        Some(
            &[BranchEntry {
                from: 0x10,
                to: 0x20,
                flags: 0x30
            }][..]
        )
    );
    assert_eq!(s.regs_user.as_ref().unwrap().regs, vec![0x111, 0x222]);
    assert_eq!(s.stack_user, Some(&[0xee; 8][..]));
    assert_eq!(s.weight, Some(55));
    assert_eq!(s.data_src, Some(66));
    assert_eq!(s.transaction, Some(77));
    assert_eq!(s.regs_intr.as_ref().unwrap().regs, vec![0x333]);
    assert_eq!(s.phys_addr, Some(0x4000));
    assert_eq!(s.cgroup, Some(88));
    assert_eq!(s.data_page_size, Some(4096));
    assert_eq!(s.code_page_size, Some(2 << 20));
    assert_eq!(s.aux, Some(&[9u8, 9, 9][..]));
    assert_truncations_are_errors(&bytes, &layout);
}

#[test]
fn each_sample_field_alone() {
    // One field at a time: the parser must place it right after the header.
    for (bit, body) in [
        (sample::IP, Rec::default().u64(1)),
        (sample::TIME, Rec::default().u64(2)),
        (sample::ADDR, Rec::default().u64(3)),
        (sample::ID, Rec::default().u64(4)),
        (sample::STREAM_ID, Rec::default().u64(5)),
        (sample::PERIOD, Rec::default().u64(6)),
        (sample::WEIGHT_STRUCT, Rec::default().u64(7)),
        (sample::DATA_SRC, Rec::default().u64(8)),
        (sample::TRANSACTION, Rec::default().u64(9)),
        (sample::PHYS_ADDR, Rec::default().u64(10)),
        (sample::CGROUP, Rec::default().u64(11)),
        (sample::DATA_PAGE_SIZE, Rec::default().u64(12)),
        (sample::CODE_PAGE_SIZE, Rec::default().u64(13)),
        (sample::IDENTIFIER, Rec::default().u64(14)),
    ] {
        let bytes = body.finish(kind::SAMPLE, 0);
        let Record::Sample(s) = parse(&bytes, &layout(bit)).unwrap().record else {
            panic!()
        };
        let got = [
            s.ip,
            s.time,
            s.addr,
            s.id,
            s.stream_id,
            s.period,
            s.weight,
            s.data_src,
            s.transaction,
            s.phys_addr,
            s.cgroup,
            s.data_page_size,
            s.code_page_size,
            s.identifier,
        ];
        assert_eq!(got.iter().flatten().count(), 1, "bit {bit:#x}");
    }
}

#[test]
fn user_regs_abi_none_has_no_registers_and_empty_stack_has_no_dyn_size() {
    let layout = Layout {
        sample_type: sample::REGS_USER | sample::STACK_USER | sample::TIME,
        regs_user: 3,
        ..Layout::default()
    };
    let bytes = Rec::default().u64(42).u64(0).u64(0).finish(kind::SAMPLE, 0); // time, abi, stack size
    let Record::Sample(s) = parse(&bytes, &layout).unwrap().record else {
        panic!()
    };
    assert_eq!(
        s.regs_user,
        Some(Regs {
            abi: 0,
            regs: vec![]
        })
    );
    assert_eq!(s.stack_user, Some(&[][..]));
    assert_eq!(s.time, Some(42));
}

#[test]
fn hostile_counts_do_not_allocate_or_panic() {
    let bytes = Rec::default().u64(u64::MAX).finish(kind::SAMPLE, 0);
    assert!(parse(&bytes, &layout(sample::CALLCHAIN)).is_err());
    assert!(parse(&bytes, &layout(sample::BRANCH_STACK)).is_err());
    assert!(parse(&bytes, &layout(sample::STACK_USER)).is_err());
    assert!(parse(&bytes, &layout(sample::AUX)).is_err());
    let ns = Rec::default()
        .u32(1)
        .u32(1)
        .u64(u64::MAX)
        .finish(kind::NAMESPACES, 0);
    assert!(parse(&ns, &Layout::default()).is_err());
    let read = Rec::default()
        .u32(1)
        .u32(1)
        .u64(u64::MAX)
        .finish(kind::READ, 0);
    let group = Layout {
        read_format: format::GROUP,
        ..Layout::default()
    };
    assert!(parse(&read, &group).is_err());
    assert!(parse(&[], &Layout::default()).is_err());
    assert!(parse(&[1, 0, 0, 0, 0, 0, 4, 0], &Layout::default()).is_err());
}

#[test]
fn a_callchain_longer_than_its_cap_is_refused_though_the_record_holds_it() {
    let chain = |nr: u64| {
        let mut r = Rec::default().u64(nr);
        for i in 0..nr {
            r = r.u64(0x1000 + i);
        }
        r.finish(kind::SAMPLE, 0)
    };
    let capped = Layout {
        sample_type: sample::CALLCHAIN,
        max_callchain: Some(135),
        ..Layout::default()
    };
    let bytes = chain(135);
    let Record::Sample(s) = parse(&bytes, &capped).unwrap().record else {
        panic!("not a sample")
    };
    assert_eq!(s.callchain.map(|c| c.len()), Some(135));
    assert_eq!(
        parse(&chain(136), &capped).unwrap_err(),
        ParseError::CallchainTooLong { nr: 136, max: 135 }
    );
    // Without a cap, only the record's size bounds it.
    assert!(parse(&chain(136), &layout(sample::CALLCHAIN)).is_ok());
}

#[test]
fn callchains_split_at_their_context_markers() {
    use super::callchain::{split, HV, KERNEL, USER};
    assert_eq!(
        split(&[KERNEL, 0xffff_0001, 0xffff_0002, USER, 0x4001, 0x4002]),
        (vec![0xffff_0001, 0xffff_0002], vec![0x4001, 0x4002])
    );
    assert_eq!(split(&[USER, 0x4001]), (vec![], vec![0x4001]));
    // Unmarked and hypervisor frames belong to neither.
    assert_eq!(split(&[0x1, HV, 0x2, USER, 0x3]), (vec![], vec![0x3]));
    assert_eq!(split(&[]), (vec![], vec![]));
}

#[test]
fn raw_sample_fast_path_agrees_with_the_parser() {
    let layout = layout(sample::RAW);
    let payload: Vec<u8> = (0..180u8).collect();
    let bytes = Rec::default()
        .u32(180)
        .bytes(&payload)
        .finish(kind::SAMPLE, 0);
    assert_eq!(bytes.len(), 192);
    let Record::Sample(s) = parse(&bytes, &layout).unwrap().record else {
        panic!()
    };
    assert_eq!(raw_sample(&bytes, &layout), s.raw);
    assert_eq!(raw_sample(&bytes, &layout), Some(&payload[..]));
    // Other layouts and record types take the slow path.
    assert_eq!(raw_sample(&bytes, &Layout::default()), None);
    let lost = Rec::default().u64(1).u64(2).finish(kind::LOST, 0);
    assert_eq!(raw_sample(&lost, &layout), None);
    // A raw size beyond the record, and every truncation: None, never a panic.
    let mut lying = bytes.clone();
    lying[8..12].copy_from_slice(&1000u32.to_ne_bytes());
    assert_eq!(raw_sample(&lying, &layout), None);
    for len in 0..bytes.len() {
        let mut cut = bytes[..len].to_vec();
        if len >= 8 {
            cut[6..8].copy_from_slice(&(len as u16).to_ne_bytes());
        }
        if let Some(raw) = raw_sample(&cut, &layout) {
            assert!(12 + raw.len() <= len);
        }
    }
}

#[test]
fn sample_id_trailer_on_non_sample_records() {
    let st = sample::TID
        | sample::TIME
        | sample::ID
        | sample::STREAM_ID
        | sample::CPU
        | sample::IDENTIFIER;
    let layout = Layout {
        sample_type: st,
        sample_id_all: true,
        ..Layout::default()
    };
    assert_eq!(sample_id_size(st), 48);
    let bytes = Rec::default()
        .u64(3) // id
        .u64(17) // lost
        .u32(10)
        .u32(11)
        .u64(12345)
        .u64(5)
        .u64(6)
        .u32(1)
        .u32(0)
        .u64(7)
        .finish(kind::LOST, 0);
    let parsed = parse(&bytes, &layout).unwrap();
    assert_eq!(parsed.record, Record::Lost { id: 3, lost: 17 });
    assert_eq!(
        parsed.sample_id,
        SampleId {
            pid: Some(10),
            tid: Some(11),
            time: Some(12345),
            id: Some(7), // IDENTIFIER overrides ID: it is the same value, placed for lookup
            stream_id: Some(6),
            cpu: Some(1),
        }
    );
    assert_truncations_are_errors(&bytes, &layout);
}

#[test]
fn every_non_sample_record_type() {
    let l = Layout::default();
    let check = |bytes: Vec<u8>, want: Record<'_>| {
        let parsed = parse(&bytes, &l).unwrap();
        assert_eq!(parsed.record, want);
        assert_truncations_are_errors(&bytes, &l);
    };
    check(
        Rec::default()
            .u32(1)
            .u32(2)
            .u64(0x1000)
            .u64(0x2000)
            .u64(0)
            .cstr("/bin/ls")
            .finish(kind::MMAP, 0),
        Record::Mmap {
            pid: 1,
            tid: 2,
            addr: 0x1000,
            len: 0x2000,
            pgoff: 0,
            filename: b"/bin/ls",
        },
    );
    check(
        Rec::default()
            .u32(1)
            .u32(2)
            .u64(0x1000)
            .u64(0x2000)
            .u64(3)
            .u32(8)
            .u32(1)
            .u64(99)
            .u64(4)
            .u32(5)
            .u32(2)
            .cstr("/lib/libc.so.6")
            .finish(kind::MMAP2, 0),
        Record::Mmap2 {
            pid: 1,
            tid: 2,
            addr: 0x1000,
            len: 0x2000,
            pgoff: 3,
            file: Mmap2File::Inode {
                maj: 8,
                min: 1,
                ino: 99,
                ino_generation: 4,
            },
            prot: 5,
            flags: 2,
            filename: b"/lib/libc.so.6",
        },
    );
    let mut id = [0u8; 24];
    id[0] = 3;
    id[4..7].copy_from_slice(&[0xab, 0xcd, 0xef]);
    check(
        Rec::default()
            .u32(1)
            .u32(2)
            .u64(0)
            .u64(0)
            .u64(0)
            .bytes(&id)
            .u32(0)
            .u32(0)
            .cstr("x")
            .finish(kind::MMAP2, misc::BIT14),
        Record::Mmap2 {
            pid: 1,
            tid: 2,
            addr: 0,
            len: 0,
            pgoff: 0,
            file: Mmap2File::BuildId(&[0xab, 0xcd, 0xef]),
            prot: 0,
            flags: 0,
            filename: b"x",
        },
    );
    check(
        Rec::default().u64(9).finish(kind::LOST_SAMPLES, 0),
        Record::LostSamples { lost: 9 },
    );
    check(
        Rec::default()
            .u32(5)
            .u32(6)
            .cstr("cat")
            .finish(kind::COMM, misc::BIT13),
        Record::Comm {
            pid: 5,
            tid: 6,
            comm: b"cat",
            exec: true,
        },
    );
    let task = TaskRecord {
        pid: 1,
        ppid: 2,
        tid: 3,
        ptid: 4,
        time: 5,
    };
    let task_bytes = |t| {
        Rec::default()
            .u32(1)
            .u32(2)
            .u32(3)
            .u32(4)
            .u64(5)
            .finish(t, 0)
    };
    check(task_bytes(kind::EXIT), Record::Exit(task));
    check(task_bytes(kind::FORK), Record::Fork(task));
    check(
        Rec::default()
            .u64(1)
            .u64(2)
            .u64(3)
            .finish(kind::THROTTLE, 0),
        Record::Throttle {
            time: 1,
            id: 2,
            stream_id: 3,
        },
    );
    check(
        Rec::default()
            .u64(1)
            .u64(2)
            .u64(3)
            .finish(kind::UNTHROTTLE, 0),
        Record::Unthrottle {
            time: 1,
            id: 2,
            stream_id: 3,
        },
    );
    check(
        Rec::default().u32(1).u32(2).u64(42).finish(kind::READ, 0),
        Record::Read {
            pid: 1,
            tid: 2,
            values: Counts {
                values: vec![read::Value {
                    value: 42,
                    id: None,
                    lost: None,
                }],
                ..Counts::default()
            },
        },
    );
    check(
        Rec::default().u64(1).u64(2).u64(3).finish(kind::AUX, 0),
        Record::Aux {
            aux_offset: 1,
            aux_size: 2,
            flags: 3,
        },
    );
    check(
        Rec::default().u32(1).u32(2).finish(kind::ITRACE_START, 0),
        Record::ItraceStart { pid: 1, tid: 2 },
    );
    check(
        Rec::default().finish(kind::SWITCH, misc::BIT13 | misc::BIT14),
        Record::Switch {
            out: true,
            preempt: true,
        },
    );
    check(
        Rec::default()
            .u32(7)
            .u32(8)
            .finish(kind::SWITCH_CPU_WIDE, 0),
        Record::SwitchCpuWide {
            next_prev_pid: 7,
            next_prev_tid: 8,
            out: false,
            preempt: false,
        },
    );
    check(
        Rec::default()
            .u32(1)
            .u32(2)
            .u64(2)
            .u64(10)
            .u64(11)
            .u64(20)
            .u64(21)
            .finish(kind::NAMESPACES, 0),
        Record::Namespaces {
            pid: 1,
            tid: 2,
            namespaces: vec![(10, 11), (20, 21)],
        },
    );
    check(
        Rec::default()
            .u64(0xffff_0000)
            .u32(64)
            .u16(1)
            .u16(0)
            .cstr("bpf_prog_x")
            .finish(kind::KSYMBOL, 0),
        Record::Ksymbol {
            addr: 0xffff_0000,
            len: 64,
            ksym_type: 1,
            flags: 0,
            name: b"bpf_prog_x",
        },
    );
    check(
        Rec::default()
            .u16(1)
            .u16(0)
            .u32(33)
            .bytes(&[1, 2, 3, 4, 5, 6, 7, 8])
            .finish(kind::BPF_EVENT, 0),
        Record::BpfEvent {
            type_: 1,
            flags: 0,
            id: 33,
            tag: [1, 2, 3, 4, 5, 6, 7, 8],
        },
    );
    check(
        Rec::default()
            .u64(5)
            .cstr("/sys/fs/cgroup/a")
            .finish(kind::CGROUP, 0),
        Record::Cgroup {
            id: 5,
            path: b"/sys/fs/cgroup/a",
        },
    );
    check(
        Rec::default()
            .u64(0x100)
            .u16(2)
            .u16(3)
            .bytes(&[1, 2, 3, 4, 5, 0, 0, 0])
            .finish(kind::TEXT_POKE, 0),
        Record::TextPoke {
            addr: 0x100,
            old: &[1, 2],
            new: &[3, 4, 5],
        },
    );
    check(
        Rec::default().u64(4).finish(kind::AUX_OUTPUT_HW_ID, 0),
        Record::AuxOutputHwId { hw_id: 4 },
    );
    check(
        Rec::default().u64(1).finish(99, 0),
        Record::Unknown {
            type_: 99,
            body: &1u64.to_ne_bytes(),
        },
    );
}
