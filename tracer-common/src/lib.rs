//! `#[repr(C)]` types that tracer's BPF programs and its userspace agree on, byte for byte.
#![no_std]

mod aggregate;
mod event;
mod fields;
mod filter;
mod latency;
mod profile;
mod slots;
mod strings;
mod trace;
mod tracking;
mod usdt;

pub use aggregate::*;
pub use event::*;
pub use fields::*;
pub use filter::*;
pub use latency::*;
pub use profile::*;
pub use slots::*;
pub use strings::*;
pub use trace::*;
pub use tracking::*;
pub use usdt::*;

/// Probe slots (kprobe, kretprobe, uprobe, uretprobe programs: `kp_0..`), global ids 0..16.
pub const PROBE_SLOTS: u32 = 16;
/// Tracepoint slots (`tp_0..`), global ids 16..32.
pub const TRACEPOINT_SLOTS: u32 = 16;
/// perf_event slots for breakpoints and software events (`pe_0..`), global ids 32..36.
pub const PERF_EVENT_SLOTS: u32 = 4;
/// First global id of each kind.
pub const PROBE_BASE: u32 = 0;
pub const TRACEPOINT_BASE: u32 = PROBE_SLOTS;
pub const PERF_EVENT_BASE: u32 = PROBE_SLOTS + TRACEPOINT_SLOTS;
/// Syscall tracepoint slots of a run with more tracepoints than [`TRACEPOINT_SLOTS`], global
/// ids from [`DISPATCH_BASE`]: two raw tracepoint programs on `sys_enter` and `sys_exit`
/// serve them all, finding the slot by the syscall's number in `SYS_SLOTS` (one attachment
/// for any number of syscalls, where a perf event each costs the kernel an RCU grace period
/// to take down). They build the record the `syscalls:` tracepoint would have (the number at
/// byte 8, the arguments or the return value from byte 16), so hits decode the same way. A
/// run of up to 16 tracepoints keeps the constant slots and pays nothing for the lookup.
pub const DISPATCH_SLOTS: u32 = 1024;
/// Syscall numbers `SYS_SLOTS` covers, per direction: entry `nr` at `nr`, exit at
/// `SYSCALL_NRS + nr`.
pub const SYSCALL_NRS: u32 = 1024;
/// `SYS_SLOTS` keys of `tracer trace`'s events that are not calls, past every real x86-64
/// syscall number (the table, x32's included, ends below 548): a task's exit
/// ([`trace_kind::EXIT`]) and a signal's delivery ([`trace_kind::SIGNAL`]).
pub const TRACE_EXIT_NR: u32 = SYSCALL_NRS - 2;
pub const TRACE_SIGNAL_NR: u32 = SYSCALL_NRS - 1;
pub const DISPATCH_BASE: u32 = PERF_EVENT_BASE + PERF_EVENT_SLOTS;
/// All slots. With `PERF_EVENT_IOC_SET_BPF` there is no attach cookie, so each probe uses its
/// own program instance ("slot") whose global id is a constant compiled into it (or, past the
/// constant ones, looked up: [`DISPATCH_SLOTS`]); the id indexes [`SlotConfig`] in `CONFIG`
/// and the per-slot counters in `STATS`, and tags every [`Event`].
pub const SLOTS: u32 = DISPATCH_BASE + DISPATCH_SLOTS;
/// `Event::slot` of outliers streamed by the latency programs (not a program slot).
pub const LATENCY_SLOT: u32 = 0xffff;

/// Words of raw event data carried per event (kprobe registers or the tracepoint record head).
pub const DATA_WORDS: usize = 8;

/// Whether each of `flags` is one bit and no two are the same: the compile-time check of the
/// flag words (`SLOT_*`, `AGG_*`, `USES_*`), each of which lists its flags in bit order.
pub const fn distinct_bits(flags: &[u32]) -> bool {
    let mut seen = 0u32;
    let mut i = 0;
    while i < flags.len() {
        if flags[i].count_ones() != 1 || seen & flags[i] != 0 {
            return false;
        }
        seen |= flags[i];
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn log2_buckets_keep_0_and_1_apart() {
        let b: [u64; 8] = [0, 1, 2, 3, 4, 7, 8, u64::MAX].map(log2_bucket);
        assert_eq!(b, [0, 1, 2, 2, 3, 3, 4, 64]);
        assert_eq!(log2_bucket(1 << 63), AGG_LOG2_BUCKETS - 1);
    }

    #[test]
    fn linear_buckets_have_edge_rows() {
        // --linear 10,0,50: 5 buckets.
        let b = |v| linear_bucket(v, false, 0, 10, 5);
        assert_eq!([0, 9, 10, 49].map(b), [0, 0, 1, 4]);
        assert_eq!(b(50), AGG_BUCKET_ABOVE);
        assert_eq!(b(u64::MAX), AGG_BUCKET_ABOVE);
        // --linear 5,-10,10 on a signed source: 4 buckets.
        let s = |v: i64| linear_bucket(v as u64, true, -10i64 as u64, 5, 4);
        assert_eq!([-10, -6, -5, 0, 9].map(s), [0, 0, 1, 2, 3]);
        assert_eq!(s(-11), AGG_BUCKET_BELOW);
        assert_eq!(s(10), AGG_BUCKET_ABOVE);
        // Unsigned below min.
        assert_eq!(linear_bucket(3, false, 4, 1, 10), AGG_BUCKET_BELOW);
    }

    #[test]
    fn runs_are_counted_only_for_keys_a_task_keeps_on_a_cpu() {
        let counted = |agg, flags, cgroup_id| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            cgroup_id,
            ..SlotConfig::default()
        };
        assert!(counted(AGG_COMM | AGG_PID | AGG_TID | AGG_CPU, 0, 0).may_count_runs());
        assert!(counted(0, SLOT_FILTER_TRACKED | SLOT_FILTER_COMM, 0).may_count_runs());
        assert!(!counted(AGG_COMM | AGG_KEY_VALUE, 0, 0).may_count_runs());
        assert!(!counted(AGG_HIST, 0, 0).may_count_runs());
        assert!(!counted(AGG_SUM, 0, 0).may_count_runs());
        assert!(!counted(AGG_COMM, SLOT_STACK_USER, 0).may_count_runs());
        assert!(!counted(AGG_COMM, 0, 7).may_count_runs());
        assert!(!SlotConfig::default().may_count_runs(), "streamed");
        let runs = counted(AGG_COMM, SLOT_RUN_COUNT, 0);
        assert_eq!(runs.uses() & USES_RUN_COUNT, USES_RUN_COUNT);
    }

    #[test]
    fn keyed_runs_are_counted_for_keys_without_a_varying_value() {
        let counted = |agg, flags| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            ..SlotConfig::default()
        };
        // `tracer watch --summary`'s key: thread and instruction pointer.
        let watch = counted(AGG_PID | AGG_TID | AGG_KEY_VALUE, 0);
        assert!(watch.may_count_keyed_runs() && !watch.may_count_runs());
        assert!(counted(AGG_COMM, SLOT_STACK_KERNEL).may_count_keyed_runs());
        assert!(!counted(AGG_KEY_VALUE | AGG_SUM, 0).may_count_keyed_runs());
        assert!(!counted(AGG_HIST, 0).may_count_keyed_runs());
        assert!(!counted(AGG_KEY_VALUE | AGG_KEY_STRING, 0).may_count_keyed_runs());
        assert!(!SlotConfig::default().may_count_keyed_runs(), "streamed");
        let runs = counted(AGG_KEY_VALUE, SLOT_RUN_KEYED);
        assert_eq!(runs.uses() & USES_RUN_KEYED, USES_RUN_KEYED);
    }

    #[test]
    fn runs_at_an_instruction_are_continued_only_for_keys_of_task_and_ip() {
        let at_ip = SRC_WATCH_IP;
        let counted = |agg, flags, key_src| SlotConfig {
            flags: SLOT_AGGREGATE | flags,
            agg,
            key_src,
            ..SlotConfig::default()
        };
        // `tracer watch --summary`'s key.
        let watch = counted(AGG_PID | AGG_TID | AGG_KEY_VALUE, 0, at_ip);
        assert!(watch.may_count_runs_at_ip());
        assert!(counted(AGG_CPU | AGG_KEY_VALUE, SLOT_FILTER_TRACKED, at_ip).may_count_runs_at_ip());
        // The comm can change within a task's run.
        assert!(!counted(AGG_COMM | AGG_KEY_VALUE, 0, at_ip).may_count_runs_at_ip());
        assert!(!counted(AGG_TID | AGG_KEY_VALUE, SLOT_FILTER_COMM, at_ip).may_count_runs_at_ip());
        // Another value than the ip, or none: the ip alone does not say the key.
        let addr = src(8 * word::WATCH_ADDR as u32, 8, false);
        assert!(!counted(AGG_PID | AGG_KEY_VALUE, 0, addr).may_count_runs_at_ip());
        assert!(!counted(AGG_PID | AGG_TID, 0, at_ip).may_count_runs_at_ip());
        // Stacks and a value filter, which can differ from hit to hit within a task's run.
        for flags in [
            SLOT_STACK_USER,
            SLOT_STACK_KERNEL,
            SLOT_STACK_AT_ENTRY,
            SLOT_VALUE_FILTER,
        ] {
            assert!(!counted(AGG_TID | AGG_KEY_VALUE, flags, at_ip).may_count_runs_at_ip());
        }
        let cgroup = SlotConfig {
            cgroup_id: 7,
            ..watch
        };
        assert!(!cgroup.may_count_runs_at_ip());
        assert!(!counted(AGG_KEY_VALUE | AGG_SUM, 0, at_ip).may_count_runs_at_ip());
        assert!(!SlotConfig::default().may_count_runs_at_ip(), "streamed");
    }

    #[test]
    fn an_event_carries_its_strings_behind_it() {
        let mut event = Event::from_bytes(&[0u8; Event::SIZE]).unwrap();
        event.pid_tgid = 42 << 32 | 43;
        event.data[7] = 7;
        assert_eq!(event.wire_len(), Event::SIZE);
        let mut bytes = event.to_bytes().to_vec();
        // Raw data is padded to 8 bytes in the ring: trailing bytes are ignored.
        bytes.extend_from_slice(&[0; 4]);
        assert_eq!(Event::from_bytes(&bytes).unwrap(), event);
        assert_eq!(Event::from_bytes(&bytes[..Event::SIZE - 1]), None);
        // Two entries: "ab" of read 0, and a truncated "xyz" of read 2.
        let area = [
            0,
            0,
            2,
            0,
            b'a',
            b'b',
            2,
            str_flag::TRUNCATED,
            3,
            0,
            b'x',
            b'y',
            b'z',
        ];
        event.str_bytes = area.len() as i32;
        let mut bytes = event.to_bytes().to_vec();
        bytes.extend_from_slice(&area);
        let decoded = Event::from_bytes(&bytes).unwrap();
        assert_eq!(decoded, event);
        let entries: Vec<StrEntry> = str_entries(decoded.strings(&bytes)).collect();
        assert_eq!(
            entries,
            [
                StrEntry {
                    read: 0,
                    flags: 0,
                    bytes: b"ab"
                },
                StrEntry {
                    read: 2,
                    flags: str_flag::TRUNCATED,
                    bytes: b"xyz"
                },
            ]
        );
        // An event that claims more strings than it carries is malformed.
        assert_eq!(Event::from_bytes(&bytes[..bytes.len() - 1]), None);
        // An entry whose length passes the end ends the entries.
        assert_eq!(str_entries(&area[..12]).count(), 1);
    }

    #[test]
    fn a_config_uses_exactly_the_parts_its_flags_name() {
        assert_eq!(SlotConfig::default().uses(), USES_STREAM);
        let counted = SlotConfig {
            flags: SLOT_AGGREGATE | SLOT_FILTER_TRACKED | SLOT_STACK_USER,
            agg: AGG_COMM,
            ..Default::default()
        };
        assert_eq!(counted.uses(), USES_AGGREGATE | USES_TRACKED | USES_STACKS);
        let hist = SlotConfig {
            flags: SLOT_AGGREGATE,
            agg: AGG_HIST,
            tid: 7,
            ..Default::default()
        };
        assert_eq!(hist.uses(), USES_AGGREGATE | USES_AGG_VALUE | USES_FILTERS);
        let mut probe = SlotConfig::default();
        probe.strs[0].from = str_from::ARG;
        probe.fields[2].size = 4;
        assert_eq!(probe.uses(), USES_STREAM | USES_STRINGS | USES_FIELDS);
        probe.strs[1].from = str_from::RECORD;
        assert_eq!(probe.uses() & USES_STR_MANY, USES_STR_MANY);
        assert_eq!(probe.uses() & USES_STR_ARRAYS, 0);
        probe.strs[1].array = 1;
        assert_eq!(probe.uses() & USES_STR_ARRAYS, USES_STR_ARRAYS);
        assert_eq!(
            SlotConfig {
                flags: SLOT_COUNT_ONLY,
                ..Default::default()
            }
            .uses(),
            0
        );
    }

    /// The flag words' checks: a shared bit or a word that is not one bit fails the build, and
    /// each word's list is every flag of its prefix defined in the crate, in bit order (a new
    /// flag outside its block, or missing from the list, fails here).
    #[test]
    fn each_flag_word_is_one_block_of_distinct_bits_in_order() {
        assert!(distinct_bits(&[1 << 0, 1 << 4, 1 << 25]));
        assert!(!distinct_bits(&[1 << 3, 1 << 3]), "a shared bit");
        assert!(!distinct_bits(&[3]), "two bits in one flag");
        // Every file of the crate: a flag defined in another file than its word's fails too.
        let lib = include_str!("lib.rs");
        let source = [
            &lib[..lib.find("#[cfg(test)]").unwrap_or(lib.len())],
            include_str!("event.rs"),
            include_str!("strings.rs"),
            include_str!("slots.rs"),
            include_str!("tracking.rs"),
            include_str!("usdt.rs"),
            include_str!("filter.rs"),
            include_str!("fields.rs"),
            include_str!("aggregate.rs"),
            include_str!("trace.rs"),
            include_str!("latency.rs"),
            include_str!("profile.rs"),
        ]
        .concat();
        for (prefix, list) in [
            ("SLOT_", &SLOT_FLAGS[..]),
            ("AGG_", &AGG_FLAGS[..]),
            ("USES_", &USES_FLAGS[..]),
        ] {
            // `pub const PREFIX_NAME: u32 = 1 << N;`, in the order they are written.
            let defined: Vec<u32> = (source.lines())
                .filter_map(|l| l.strip_prefix("pub const ")?.strip_prefix(prefix))
                .filter_map(|l| l.split_once(": u32 = 1 << ")?.1.strip_suffix(';'))
                .map(|bit| 1 << bit.parse::<u32>().expect("a bit number"))
                .collect();
            assert_eq!(defined, list, "{prefix}* as written, against its list");
            assert!(
                list.windows(2).all(|w| w[0] < w[1]),
                "{prefix}* out of bit order"
            );
        }
    }
}
