//! Whether a hit is the run's: the scope (the process, `-- COMMAND`'s tree), the thread, CPU,
//! cgroup and comm filters, `--filter`'s expression with its glob automata, and `--debug-bpf`'s
//! word on each refused hit.

use aya_ebpf::helpers::bpf_get_current_cgroup_id;
use aya_ebpf::macros::map;
use aya_ebpf::maps::Array;
use tracer_common::{
    cmp, drop, operand, stat_filtered, str_flag, Event, Filter, FilterAtom, SlotConfig, DATA_WORDS,
    FILTER_ATOMS, GLOB_ACCEPT, GLOB_DEAD, GLOB_ROW, GLOB_STRLEN, SLOT_FILTER_COMM,
    SLOT_FILTER_TRACKED, SLOT_VALUE_FILTER, SRC_SIGNED, STR_BUFFER, STR_ENTRY, USES_DEBUG,
    USES_FILTERS, USES_TRACKED, USES_VALUE_FILTER,
};

use crate::caches::{current_comm, is_tracked};
use crate::maps::{bump, scratch_of};
use crate::reads::entry_of;
use crate::{say_dropped, uses};

/// `--filter` per slot (`SLOT_VALUE_FILTER`), by global slot id. Sized by userspace only when
/// a run filters.
#[map]
pub(crate) static FILTERS: Array<Filter> = Array::with_max_entries(1, 0);

/// `--filter`'s shape, set by userspace before loading (read-only to the programs, like
/// `USES`): the number of comparisons in bits 0..8, and from bit 8 one bit per comparison
/// that is of strings.
#[unsafe(no_mangle)]
pub(crate) static FILTER_SHAPE: u32 = 0;

/// The glob automata of `--filter`'s string comparisons: one row per state, one next state per
/// byte. Sized by userspace to the rows the run's patterns need.
#[map]
pub(crate) static GLOBS: Array<[u8; GLOB_ROW]> = Array::with_max_entries(1, 0);

/// Does the current task pass the slot's filters?
#[inline(always)]
pub(crate) fn passes(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> bool {
    refused_by(config, pid_tgid, cpu) == 0
}

/// The filter that refuses the current task (a [`tracer_common::drop`] reason), or 0.
#[inline(always)]
pub(crate) fn refused_by(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> u32 {
    let tgid = (pid_tgid >> 32) as u32;
    if tgid == config.exclude_tgid {
        return drop::SELF;
    }
    if config.tgid != 0 && tgid != config.tgid {
        return drop::PID;
    }
    // The run's scope before the finer filters, so that --debug-bpf names the reason a user
    // would give: a process outside the command's tree is that, whatever its comm.
    if uses(USES_TRACKED) && config.flags & SLOT_FILTER_TRACKED != 0 && !is_tracked(pid_tgid) {
        return drop::UNTRACKED;
    }
    if uses(USES_FILTERS) {
        return refused_by_filters(config, pid_tgid, cpu);
    }
    0
}

/// `--debug-bpf`: says why `slot` dropped a hit of `pid_tgid` on `cpu` (a
/// [`tracer_common::drop`] reason). Behind `USES_DEBUG`, a constant to the verifier, so a
/// normal run verifies and runs none of it. One aya-log call site for every reason, with
/// numbers only (userspace words them, `drop::describe`): each expansion of the macro is
/// hundreds of instructions in every slot program, which every run loads.
#[inline(always)]
pub(crate) fn debug_dropped(slot: u32, reason: u32, pid_tgid: u64, cpu: u32) {
    // Hits outside the run (tracer's own, another process than -p's or the command's tree)
    // are not the run's hits: saying so would bury the lines asked for under every other
    // task's, and flood aya-log's ring, which drops what does not fit.
    if uses(USES_DEBUG) && !matches!(reason, drop::SELF | drop::PID | drop::UNTRACKED) {
        say_dropped(drop::pack(slot, reason, cpu), pid_tgid);
    }
}

/// The thread, CPU, cgroup and comm filters: the one that refuses the task, or 0.
#[inline(always)]
pub(crate) fn refused_by_filters(config: &SlotConfig, pid_tgid: u64, cpu: u32) -> u32 {
    if config.tid != 0 && pid_tgid as u32 != config.tid {
        return drop::TID;
    }
    if config.cpu_mask != 0 && (cpu >= 64 || config.cpu_mask & (1u64 << cpu) == 0) {
        return drop::CPU;
    }
    // SAFETY: helper without preconditions.
    if config.cgroup_id != 0 && unsafe { bpf_get_current_cgroup_id() } != config.cgroup_id {
        return drop::CGROUP;
    }
    // The comm is only fetched when a filter needs it: it costs a helper call per hit.
    if config.flags & SLOT_FILTER_COMM != 0 && current_comm(pid_tgid) != config.comm {
        return drop::COMM;
    }
    0
}

/// The value a [`tracer_common::src`] names in the captured data words and member reads:
/// `size` bytes at `offset`, sign-extended when signed. Fields are naturally aligned, so a
/// value never spans two words.
#[inline(always)]
pub(crate) fn read_src(event: &Event, src: u32) -> u64 {
    let offset = src & 0xff;
    let size = (src >> 8) & 0xff;
    // The mask bounds the word for the verifier: LLVM merges the two adjacent arrays into one
    // indexed load (hoisted above the range checks), which stays inside the event only if
    // the index itself is bounded.
    let word = match (offset / 8) & 15 {
        w @ 0..=7 => event.data[(w & 7) as usize],
        w @ 8..=11 => event.fields[((w - 8) & 3) as usize],
        _ => 0,
    };
    let value = word >> ((offset % 8) * 8);
    if size == 0 || size >= 8 {
        return value;
    }
    let bits = size * 8;
    let value = value & ((1u64 << bits) - 1);
    if src & SRC_SIGNED != 0 && (value >> (bits - 1)) & 1 == 1 {
        value | !((1u64 << bits) - 1)
    } else {
        value
    }
}

/// Whether the hit passes the slot's `--filter`: each atom's result is a bit, and the
/// table's bit at the atoms' bits is the verdict. The bits are never used to address memory
/// (a shift of the table, not an index), so the verifier need not track their values, and
/// the paths through the comparisons prune at the loop's head.
#[inline(always)]
pub(crate) fn filter_passes(event: &Event, slot: u32) -> bool {
    let Some(filter) = FILTERS.get(slot) else {
        return true;
    };
    // SAFETY: a plain aligned read of our own static, volatile as in `uses`.
    let shape = unsafe { core::ptr::read_volatile(&FILTER_SHAPE) };
    let mut bits: u64 = 0;
    let mut k = 0;
    while k < FILTER_ATOMS {
        // The expression's shape is a constant to the verifier: it walks the comparisons the
        // expression has, each as a number or a string, and no other.
        if k as u32 >= shape & 0xff {
            break;
        }
        let string = shape >> (8 + k) & 1 != 0;
        if atom_holds(event, &filter.atoms[k], string) {
            bits |= 1 << k;
        }
        k += 1;
    }
    (filter.table >> (bits & 63)) & 1 != 0
}

/// One comparison of a filter: of strings (`string`), or of numbers.
#[inline(always)]
pub(crate) fn atom_holds(event: &Event, atom: &FilterAtom, string: bool) -> bool {
    if string {
        return string_holds(event, atom);
    }
    let value = match atom.operand {
        operand::VALUE => read_src(event, atom.src),
        operand::PID => u64::from(event.pid()),
        operand::TID => u64::from(event.tid()),
        operand::CPU => u64::from(event.cpu),
        _ => return false,
    };
    let signed = atom.signed_or_empty != 0;
    let (a, b) = (value, atom.value);
    match atom.cmp {
        cmp::EQ => a == b,
        cmp::NE => a != b,
        cmp::LT if signed => (a as i64) < (b as i64),
        cmp::LT => a < b,
        cmp::LE if signed => (a as i64) <= (b as i64),
        cmp::LE => a <= b,
        cmp::GT if signed => (a as i64) > (b as i64),
        cmp::GT => a > b,
        cmp::GE if signed => (a as i64) >= (b as i64),
        cmp::GE => a >= b,
        cmp::AND => a & b != 0,
        _ => false,
    }
}

/// A string comparison: a string the slot read, the comm, or a `char[N]` of the record; or a
/// number's equality with a value given by name.
#[inline(always)]
pub(crate) fn string_holds(event: &Event, atom: &FilterAtom) -> bool {
    match atom.operand {
        operand::STRING => {
            let scratch = scratch_of(event);
            // A string that could not be read matches nothing (`!=` included: its value is
            // unknown).
            match entry_of(scratch, atom.src) {
                Some((at, flags, len))
                    if flags & (str_flag::FAULT | str_flag::NO_ROOM | str_flag::ARRAY) == 0 =>
                {
                    glob_matches::<STR_BUFFER, GLOB_STRLEN>(
                        &scratch.area,
                        at + STR_ENTRY,
                        len,
                        atom,
                    )
                }
                _ => false,
            }
        }
        operand::COMM => {
            let comm = current_comm(event.pid_tgid);
            glob_matches::<16, 16>(&comm, 0, comm.len(), atom)
        }
        operand::RECORD_CHARS => {
            // SAFETY: the words are plain bytes, 8-byte aligned; u8 has no alignment.
            let head = unsafe { &*(&event.data as *const [u64; DATA_WORDS] as *const [u8; 64]) };
            let start = (atom.src & 0xff) as usize;
            let len = ((atom.src >> 8) & 0xff) as usize;
            glob_matches::<64, 64>(head, start, len, atom)
        }
        // A number compared with a word that names one of its values (`newstate ==
        // TCP_SYN_SENT`): the plan took the word for a string, userspace resolved its value.
        operand::VALUE => (read_src(event, atom.src) == atom.value) != (atom.cmp == cmp::NE),
        _ => false,
    }
}

/// Runs the atom's glob automaton over `text` from `start`, up to `len` bytes, a NUL or `MAX`
/// bytes (the verifier walks the loop once per byte it may take); `cmp::NE` inverts. `N` is a
/// power of two: the index is masked into the buffer (the verifier needs its bound;
/// `start + len <= N` anyway).
#[inline(always)]
pub(crate) fn glob_matches<const N: usize, const MAX: usize>(
    text: &[u8; N],
    start: usize,
    len: usize,
    atom: &FilterAtom,
) -> bool {
    let mut state: u32 = 0;
    let mut accepts = atom.signed_or_empty != 0;
    let mut i = 0;
    while i < MAX {
        if i >= len {
            break;
        }
        let byte = text[(start + i) & (N - 1)];
        if byte == 0 {
            break;
        }
        let Some(row) = GLOBS.get(atom.glob + state) else {
            accepts = false;
            break;
        };
        let next = row[byte as usize];
        accepts = next & GLOB_ACCEPT != 0;
        state = u32::from(next & !GLOB_ACCEPT);
        if state == u32::from(GLOB_DEAD) {
            break;
        }
        i += 1;
    }
    accepts != (atom.cmp == cmp::NE)
}

/// Whether the slot's `--filter` refuses the hit (counted as filtered).
#[inline(always)]
pub(crate) fn filtered_out(event: &Event, config: &SlotConfig) -> bool {
    if uses(USES_VALUE_FILTER)
        && config.flags & SLOT_VALUE_FILTER != 0
        && !filter_passes(event, event.slot)
    {
        bump(stat_filtered(event.slot));
        return true;
    }
    false
}
