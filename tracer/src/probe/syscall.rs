//! System calls as `tracer trace` sees them: each traced call's layout (its arguments' names
//! from its tracepoint, their kinds from the syscall table or the tracepoint's C types, the
//! strings read), the slot config its calls run under, and one call's event decoded into the
//! output model.

use tracer_common::{
    buffer_len, src, str_array, str_entries, str_flag, str_from, str_mem, trace_kind, trace_word,
    word, Event, SlotConfig, StrRead, AGG_KEY_VALUE, AGG_SUM, ENTRY_TIMESPEC, FIELDS_OFFSET,
    MSGHDR_BYTES, SLOT_AGGREGATE, SLOT_FILTER_TRACKED, SLOT_STACK_USER, SLOT_TRACE_AT_ENTRY,
    SLOT_TRACE_CPU_TIME, SLOT_TRACE_DIRENTS, SLOT_TRACE_FAILED, SLOT_TRACE_FD_INODES,
    SLOT_TRACE_FORKS, SLOT_TRACE_NO_RETURN, SLOT_VALUE_FILTER, STRLEN_MAX, STR_READS,
};

use crate::kernel::format::Format;
use crate::kernel::syscalls::{self, Arg, CloneArg, FutexArg, Ret, Struct};
use crate::kernel::task_memory::TaskMemory;
use crate::kernel::tracefs::Tracefs;
use crate::output::syscall::{self as show, Read};
use crate::output::trace::{Call, CallEnd, Shown, Strings};

/// One argument of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: Arg,
}

/// How one traced call is read and shown.
#[derive(Clone, Debug)]
pub struct Layout {
    pub nr: u32,
    pub name: &'static str,
    pub params: Vec<Param>,
    pub ret: Ret,
    /// Read k's argument index.
    pub reads: Vec<usize>,
    /// strace's `-x` and `-xx`: strings in hexadecimal ([`Read::hex`]).
    pub hex: u8,
    /// strace's `-s`, which also bounds the elements of an array shown ([`Read::elements`]).
    pub strsize: u32,
}

impl Layout {
    /// The layout of call `nr`: the table's kinds when it has the call, else kinds from the
    /// tracepoint's C types; names from the tracepoint (`argN` without one).
    pub fn of(nr: u32, fs: &Tracefs) -> Option<Layout> {
        let name = syscalls::name(nr)?;
        let format = fs.format(
            "syscalls",
            &format!("sys_enter_{}", syscalls::event_name(name)),
        );
        let fields: Vec<(String, String)> = match &format {
            Ok(f) => own_fields(f),
            Err(_) => Vec::new(),
        };
        let (kinds, ret): (Vec<Arg>, Ret) = match syscalls::shape_of(name) {
            Some(shape) => (shape.args.to_vec(), shape.ret),
            None => (
                fields.iter().map(|(n, t)| kind_of(n, t)).collect(),
                Ret::Int,
            ),
        };
        let params: Vec<Param> = (kinds.iter().enumerate())
            .map(|(i, &kind)| Param {
                name: fields.get(i).map_or(format!("arg{i}"), |(n, _)| n.clone()),
                kind,
            })
            .collect();
        let reads = (params.iter().enumerate())
            .filter(|(_, p)| read_kind(p.kind))
            .map(|(i, _)| i)
            .take(STR_READS)
            .collect();
        Some(Layout {
            nr,
            name,
            params,
            ret,
            reads,
            hex: 0,
            strsize: STRLEN_MAX,
        })
    }

    /// The `int` the entry reads because the call may write over it
    /// (`SlotConfig::entry_int`: 1 + the argument, plus the byte offset there times 256), or
    /// 0: a filled sockaddr's length (`[128 => 16]`), recvmsg's `msg_namelen` (8 bytes into
    /// the msghdr), capget's and capset's version (the kernel writes its own over one it
    /// does not know), and ppoll's timeout ([`ENTRY_TIMESPEC`]: the kernel writes back what
    /// was left).
    fn entry_int_at(&self) -> u32 {
        (self.params.iter().enumerate())
            .find_map(|(at, p)| {
                let (offset, timespec) = match p.kind {
                    Arg::SockLen(_) | Arg::In(Struct::CapHeader) => (0, 0),
                    Arg::MsgFilled => (8, 0),
                    Arg::TimeoutLeft(_) => (0, ENTRY_TIMESPEC),
                    _ => return None,
                };
                Some((at as u32 + 1 + (offset << 8)) | timespec)
            })
            .unwrap_or(0)
    }

    /// Whether the call's strings must be read when it enters: exec replaces the memory
    /// they are in.
    pub fn strings_at_entry(&self) -> bool {
        matches!(self.name, "execve" | "execveat")
    }

    /// The `--filter` view of the call's arguments.
    pub fn filter_params(&self) -> Vec<crate::probe::filter::CallParam<'_>> {
        (self.params.iter().enumerate())
            .map(|(i, p)| {
                let (size, signed) = register(p.kind);
                crate::probe::filter::CallParam {
                    name: &p.name,
                    string: self.reads.iter().position(|&r| r == i),
                    size,
                    signed,
                }
            })
            .collect()
    }

    /// The slot config of the call's calls.
    pub fn config(&self, options: &Options) -> SlotConfig {
        let mut config = SlotConfig {
            exclude_tgid: std::process::id(),
            strlen: STRLEN_MAX,
            buflen: options.strsize,
            ..SlotConfig::default()
        };
        if options.tracked {
            config.flags |= SLOT_FILTER_TRACKED;
        }
        if options.failed {
            config.flags |= SLOT_TRACE_FAILED;
        }
        if options.filter {
            config.flags |= SLOT_VALUE_FILTER;
        }
        if self.ret == Ret::None {
            config.flags |= SLOT_TRACE_NO_RETURN;
        }
        if matches!(self.name, "clone" | "clone3" | "fork" | "vfork") {
            config.flags |= SLOT_TRACE_FORKS;
        }
        if self.params.iter().any(|p| p.kind == Arg::Dirents) {
            config.flags |= SLOT_TRACE_DIRENTS;
        }
        let makes_inodes = ["socket", "socketpair", "pipe", "pipe2", "accept", "accept4"];
        if options.fd_inodes && makes_inodes.contains(&self.name) {
            config.flags |= SLOT_TRACE_FD_INODES;
        }
        if options.stacks {
            config.flags |= SLOT_STACK_USER;
        }
        if options.summary {
            // Counted by the call's slot and whether it failed, its time summed.
            config.flags |= SLOT_AGGREGATE;
            config.agg = AGG_KEY_VALUE | AGG_SUM;
            config.key_src = src(FIELDS_OFFSET + 8 * trace_word::FAILED as u32, 8, false);
            config.val_src = src(8 * trace_word::DURATION as u32, 8, false);
        }
        if options.cpu_time {
            config.flags |= SLOT_TRACE_CPU_TIME;
        }
        // Counted calls read strings only for a filter on them; a call that does not return
        // reads none (the entry program sends it without its string reads).
        if (!options.summary || options.filter) && self.ret != Ret::None {
            for (k, &at) in self.reads.iter().enumerate() {
                let kind = self.params[at].kind;
                // The exit program reads an iovec array as a call's first read only.
                debug_assert!(
                    k == 0
                        || !matches!(
                            kind,
                            Arg::IovGiven(_)
                                | Arg::IovFilled(_)
                                | Arg::MsgGiven
                                | Arg::MsgFilled
                                | Arg::FdSet(_)
                        )
                );
                config.strs[k] = StrRead {
                    at: at as u32,
                    from: str_from::ARG,
                    memory: str_mem::USER,
                    array: match kind {
                        Arg::Argv => str_array::STRINGS,
                        Arg::IovGiven(_) => str_array::IOVEC_GIVEN,
                        Arg::IovFilled(_) => str_array::IOVEC_FILLED,
                        Arg::MsgGiven => str_array::MSGHDR_GIVEN,
                        Arg::MsgFilled => str_array::MSGHDR_FILLED,
                        Arg::FdSet(_) => str_array::FDSETS,
                        _ => str_array::NONE,
                    },
                    len_from: match kind {
                        Arg::BufIn(len) => buffer_len::ARG0 + len as u8,
                        Arg::BufOut => buffer_len::RETURN,
                        Arg::In(s) | Arg::Out(s) => buffer_len::fixed(s.bytes()),
                        Arg::Futex(FutexArg::Timeout, _) => {
                            buffer_len::fixed(Struct::Timespec.bytes())
                        }
                        Arg::TimeoutLeft(timeout) => buffer_len::fixed(timeout.bytes()),
                        Arg::Clone(CloneArg::ParentTid) | Arg::SockLen(_) => {
                            buffer_len::fixed(Struct::Int.bytes())
                        }
                        Arg::IoctlArg(_) => buffer_len::IOCTL,
                        Arg::SockName(_) => buffer_len::fixed(Struct::SockAddr(0).bytes()),
                        // The count's argument.
                        Arg::IovGiven(count) | Arg::IovFilled(count) => {
                            buffer_len::ARG0 + count as u8
                        }
                        Arg::MsgGiven | Arg::MsgFilled => buffer_len::fixed(MSGHDR_BYTES as usize),
                        _ => 0,
                    },
                };
            }
        }
        // The length a filled sockaddr was given, read at entry: the call overwrites it.
        config.entry_int = self.entry_int_at();
        // -k: the top of the user stack at the return, after the call's own reads (none for
        // an exec, whose strings are read at entry, nor where every read is taken).
        let free = self.reads.len();
        if options.stacks && self.ret != Ret::None && !self.strings_at_entry() && free < STR_READS {
            config.strs[free] = StrRead::STACK_TOP;
        }
        // Also without strings: the flag lets the launched command's own exec be seen.
        if self.strings_at_entry() {
            // The entry program reads the path (read 0), the exit program `argv` (read 1,
            // the last): `tracer-ebpf/src/trace.rs`.
            debug_assert!(self.reads.len() <= 2);
            config.flags |= SLOT_TRACE_AT_ENTRY;
        }
        config
    }

    /// `-k`: the top of the user stack the exit program copied at the return
    /// ([`str_from::STACK`], the entry after the call's own reads), when it could.
    pub fn stack_top<'s>(&self, strings: &'s [u8]) -> Option<&'s [u8]> {
        super::strings::split_top(strings, Some(self.reads.len() as u8)).1
    }

    /// A call's event (or a call still in flight: `end` unfinished, `strings` empty) as the
    /// output model's call.
    pub fn call<'a>(&'a self, event: &Event, strings: &[u8], comm: &'a str) -> Call<'a> {
        let kind = event.fields[trace_word::KIND];
        let end = match kind {
            trace_kind::NO_RETURN => CallEnd::NoReturn,
            trace_kind::KILLED => CallEnd::Killed,
            _ => CallEnd::Returned,
        };
        self.shown(event, strings, comm, end)
    }

    /// The call as shown, ending as `end` says.
    pub fn shown<'a>(
        &'a self,
        event: &Event,
        strings: &[u8],
        comm: &'a str,
        end: CallEnd,
    ) -> Call<'a> {
        let reads = (0..self.reads.len())
            .map(|k| Read::from_entries(str_entries(strings).filter(|e| usize::from(e.read) == k)))
            .collect();
        self.shown_with(event, reads, comm, end)
    }

    /// A call still in flight (its `event` made of its entry), with what it was given read
    /// now by `memory` (`TaskMemory`: the task is inside the call, so what it passed is
    /// still there): paths, the buffers it writes out, the structures it reads (poll's fds).
    /// What the call fills, and arrays of pointers (iovecs, argv), stay addresses.
    pub fn in_flight<'a>(
        &'a self,
        event: &Event,
        memory: Option<&TaskMemory>,
        comm: &'a str,
        end: CallEnd,
    ) -> Call<'a> {
        let args = &event.data[..word::ARGS];
        let reads = (self.reads.iter())
            .map(|&at| {
                let mut read = Read::default();
                // NULL is shown as such; an unreadable address as itself.
                let (Some(memory), addr) = (memory, args[at]) else {
                    return read;
                };
                if self.params[at].kind == Arg::FdSet(0) {
                    read.entries = self.sets_in_flight(args, memory);
                    return read;
                }
                if addr == 0 {
                    return read;
                }
                let entry = match self.params[at].kind {
                    Arg::Path => memory
                        .string(addr, STRLEN_MAX as usize)
                        .map(|(bytes, cut)| (bytes, if cut { str_flag::TRUNCATED } else { 0 })),
                    Arg::BufIn(len) => {
                        let given = args.get(len).map_or(0, |&l| l as usize);
                        let wanted = given.min(self.strsize as usize);
                        let bytes = memory.bytes(addr, wanted);
                        let flags = if given > wanted {
                            str_flag::TRUNCATED
                        } else {
                            0
                        };
                        (bytes.len() == wanted).then_some((bytes, flags))
                    }
                    // Whole or not at all, as the exit program's read of it is.
                    Arg::In(_) | Arg::Futex(FutexArg::Timeout, _) => {
                        let len = match self.params[at].kind {
                            Arg::In(s) => s.bytes(),
                            _ => Struct::Timespec.bytes(),
                        };
                        let bytes = memory.bytes(addr, len);
                        (bytes.len() == len).then_some((bytes, 0))
                    }
                    _ => None,
                };
                read.entries.extend(entry);
                read
            })
            .collect();
        self.shown_with(event, reads, comm, end)
    }

    /// A select's fd sets as the entries of their read (`str_array::FDSETS`), read from the
    /// memory of a task still inside the call: the given sets (the call writes the ready ones
    /// when it returns), none ready, and pselect6's mask argument.
    fn sets_in_flight(&self, args: &[u64], memory: &TaskMemory) -> Vec<(Vec<u8>, u8)> {
        let nfds = args[0] as u32 as i32;
        let len = (nfds.max(0) as usize).div_ceil(64) * 8;
        let kept = len.min(tracer_common::FDSET_BYTES as usize);
        let whole = |addr: u64, len: usize, flags: u8| {
            let bytes = memory.bytes(addr, len);
            match addr != 0 && bytes.len() == len {
                true => (bytes, flags),
                false => (Vec::new(), str_flag::FAULT),
            }
        };
        let cut = if len > kept { str_flag::TRUNCATED } else { 0 };
        let mut entries: Vec<(Vec<u8>, u8)> = (1..=3).map(|i| whole(args[i], kept, cut)).collect();
        entries.extend(std::iter::repeat_n((Vec::new(), str_flag::FAULT), 3));
        if self.params.iter().any(|p| p.kind == Arg::PselectMask) {
            let head = whole(args[5], 16, 0);
            let ss = head
                .0
                .get(..8)
                .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8")));
            entries.push(head);
            entries.push(whole(ss, 8, 0));
        }
        entries
    }

    /// The call as shown with its reads, ending as `end` says.
    fn shown_with<'a>(
        &'a self,
        event: &Event,
        mut reads: Vec<Read>,
        comm: &'a str,
        end: CallEnd,
    ) -> Call<'a> {
        for read in &mut reads {
            read.hex = self.hex;
            read.elements = self.strsize as usize;
        }
        let raw_ret = event.data[word::RETURN];
        let ret = (end == CallEnd::Returned).then_some(raw_ret as i64);
        let args: &[u64] = &event.data[..word::ARGS];
        let sockname = self.sockname(event, &reads, ret);
        let shown_params = (self.params.iter()).filter(|p| show::shown(p.kind, args));
        // strace prints at entry the arguments before the first one the call fills.
        let at_entry = shown_params
            .take_while(|p| {
                !matches!(
                    p.kind,
                    Arg::BufOut
                        | Arg::Out(_)
                        | Arg::SockName(_)
                        | Arg::IovFilled(_)
                        | Arg::MsgFilled
                )
            })
            .count();
        let shown_args = (self.params.iter().enumerate())
            .filter(|(_, p)| show::shown(p.kind, args))
            .map(|(i, p)| {
                let read = self.reads.iter().position(|&r| r == i).map(|k| &reads[k]);
                let raw = args[i];
                let (size, signed) = register(p.kind);
                let value = match (size, signed) {
                    (4, true) => i128::from(raw as u32 as i32),
                    (_, true) => i128::from(raw as i64),
                    _ => i128::from(raw),
                };
                let text = match (p.kind, counted(p.kind, event), &sockname) {
                    (Arg::Envp, Some(count), _) => show::environ(raw, count),
                    (Arg::Dirents, Some(count), _) if ret.is_some_and(|r| r >= 0) => {
                        let more = event.fields[trace_word::ENTRIES] & trace_word::ENTRIES_MORE;
                        show::dirents(raw, count, more != 0)
                    }
                    (Arg::SockName(_), _, Some((addr, _))) => addr.clone(),
                    (Arg::SockLen(_), _, Some((_, len))) => len.clone(),
                    (Arg::In(Struct::CapHeader), _, _) => {
                        let given = given_version(read, entry_int(event));
                        show::in_call(p.kind, args, i, given.as_ref().or(read), ret)
                    }
                    (Arg::TimeoutLeft(timeout), _, _) => match entry_timespec(event, timeout) {
                        Some(given) if raw != 0 => given,
                        // Not read at entry: the call refused it (an invalid `tv_nsec`) and
                        // left it as it was, or it is past what the entry word packs.
                        _ => show::in_call(Arg::In(timeout), args, i, read, ret),
                    },
                    (Arg::FdSet(which), _, _) => {
                        show::fdset::given(which, args[0], raw, self.sets_read(&reads))
                    }
                    (Arg::PselectMask, _, _) => show::fdset::mask(raw, self.sets_read(&reads)),
                    (Arg::MsgGiven | Arg::MsgFilled, _, _) => show::msghdr(&show::MsgHdr {
                        raw,
                        read,
                        filled: p.kind == Arg::MsgFilled,
                        given: entry_int(event),
                        ret,
                    }),
                    _ => show::in_call(p.kind, args, i, read, ret),
                };
                Shown {
                    name: p.name.clone(),
                    value,
                    inner_fds: show::fdset::inner_fds(p.kind, &text),
                    text,
                    strings: read.and_then(|r| read_strings(p.kind, r)),
                    fd: matches!(p.kind, Arg::Fd | Arg::DirFd),
                }
            })
            .collect();
        let (ret_text, errno) = match end {
            CallEnd::Returned => (
                show::ret_in_call(self.ret, raw_ret, args, &self.ret_reads(&reads)),
                show::errno_of(raw_ret as i64).and_then(show::errno_name),
            ),
            _ => ("?".into(), None),
        };
        Call {
            time_ns: event.time_ns,
            pid: event.pid(),
            tid: event.tid(),
            comm,
            name: self.name,
            args: shown_args,
            at_entry,
            end,
            resumed: false,
            ret: raw_ret as i64,
            ret_text,
            errno,
            duration_ns: event.data[trace_word::DURATION],
            stacks: Vec::new(),
        }
    }

    /// What the return's text reads: argument 0's read (poll's fds), the time left of an
    /// [`Arg::TimeoutLeft`] given (not `NULL`), and a select's fd sets.
    fn ret_reads<'r>(&self, reads: &'r [Read]) -> show::RetReads<'r> {
        let read = |i: usize| self.reads.iter().position(|&r| r == i).map(|k| &reads[k]);
        let left = (self.params.iter()).position(|p| matches!(p.kind, Arg::TimeoutLeft(_)));
        let timeout = left.map_or(Struct::Timespec, |at| match self.params[at].kind {
            Arg::TimeoutLeft(kind) => kind,
            _ => Struct::Timespec,
        });
        show::RetReads {
            first: read(0),
            left: left.and_then(read),
            sets: self.sets_read(reads).map(|sets| (sets, timeout)),
        }
    }

    /// A select's fd sets, given and ready (the read of its first [`Arg::FdSet`]).
    fn sets_read<'r>(&self, reads: &'r [Read]) -> Option<&'r Read> {
        let at = (self.params.iter()).position(|p| p.kind == Arg::FdSet(0))?;
        let k = self.reads.iter().position(|&r| r == at)?;
        reads.get(k)
    }

    /// The texts of the sockaddr the call filled and of its length ([`Arg::SockName`],
    /// [`Arg::SockLen`]), as strace shows them; `None` for a call without one.
    fn sockname(
        &self,
        event: &Event,
        reads: &[Read],
        ret: Option<i64>,
    ) -> Option<(String, String)> {
        let at = (self.params.iter()).position(|p| matches!(p.kind, Arg::SockName(_)))?;
        let Arg::SockName(len_at) = self.params[at].kind else {
            return None;
        };
        let Arg::SockLen(failed) = self.params.get(len_at)?.kind else {
            return None;
        };
        let read = |i: usize| self.reads.iter().position(|&r| r == i).map(|k| &reads[k]);
        Some(show::sockname(&show::SockName {
            addr: event.data[at],
            addr_read: read(at),
            len: event.data[len_at],
            len_read: read(len_at),
            given: entry_int(event),
            ret,
            failed,
        }))
    }
}

/// A capability header's read with the version the call was given (`given`, read at entry):
/// for a version it does not know (libcap asks with 0), the kernel writes its own back, and
/// strace shows the one given (`{version=0 /* _LINUX_CAPABILITY_VERSION_??? */, pid=0}`).
fn given_version(read: Option<&Read>, given: Option<u32>) -> Option<Read> {
    let (mut read, given) = (read?.clone(), given?);
    let (bytes, _) = read.entries.first_mut()?;
    bytes.get_mut(..4)?.copy_from_slice(&given.to_ne_bytes());
    Some(read)
}

/// The `struct timespec` (or, as `kind` says, `struct timeval`: the same two words) the
/// entry read ([`trace_word::ENTRY_TIMESPEC_READ`]), as strace shows it, if it did.
fn entry_timespec(event: &Event, kind: Struct) -> Option<String> {
    let word = event.fields[trace_word::ENTRY_INT];
    (word & trace_word::ENTRY_TIMESPEC_READ != 0).then(|| {
        let (sec, fraction) = (
            (word & !trace_word::ENTRY_TIMESPEC_READ) >> 30,
            word & 0x3fff_ffff,
        );
        match kind {
            Struct::Timeval => format!("{{tv_sec={sec}, tv_usec={fraction}}}"),
            _ => format!("{{tv_sec={sec}, tv_nsec={fraction}}}"),
        }
    })
}

/// The `int` the entry read (`SlotConfig::entry_int`), if it did.
fn entry_int(event: &Event) -> Option<u32> {
    let word = event.fields[trace_word::ENTRY_INT];
    (word & trace_word::ENTRY_INT_READ != 0).then_some(word as u32)
}

/// What the kernel counted for an argument of kind `kind` (`trace_word::ENVIRON`,
/// `trace_word::ENTRIES`), if it did.
fn counted(kind: Arg, event: &Event) -> Option<u64> {
    let word = match kind {
        Arg::Envp => event.fields[trace_word::ENVIRON],
        Arg::Dirents => event.fields[trace_word::ENTRIES] & !trace_word::ENTRIES_MORE,
        _ => return None,
    };
    word.checked_sub(1)
}

/// A path's or argv's strings as read, for JSON; `None` for other kinds, a pointer that
/// could not be read, or a string area that was full.
fn read_strings(kind: Arg, read: &Read) -> Option<Strings> {
    let unread = str_flag::FAULT | str_flag::NO_ROOM;
    if !matches!(kind, Arg::Path | Arg::Argv) || read.entries.iter().any(|(_, f)| f & unread != 0) {
        return None;
    }
    if kind == Arg::Path && (read.array || read.entries.len() != 1) {
        return None;
    }
    Some(Strings {
        items: (read.entries.iter())
            .map(|(bytes, _)| String::from_utf8_lossy(bytes).into_owned())
            .collect(),
        array: kind == Arg::Argv,
        cut: read.more || (read.entries.iter()).any(|(_, f)| f & str_flag::TRUNCATED != 0),
    })
}

/// The config of `tracer trace`'s slots for a task's signals and exit: the same tasks as the
/// calls', no strings.
pub fn task_event_config(options: &Options) -> SlotConfig {
    let mut config = SlotConfig {
        exclude_tgid: std::process::id(),
        ..SlotConfig::default()
    };
    if options.tracked {
        config.flags |= SLOT_FILTER_TRACKED;
    }
    config
}

/// What every traced call shares.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Only the `-- COMMAND`'s or `-p`'s process trees (`TRACKED`).
    pub tracked: bool,
    pub failed: bool,
    pub filter: bool,
    pub summary: bool,
    /// A call's duration is the CPU time it spent (what strace's -c and -C sum), not the
    /// time from its entry to its exit.
    pub cpu_time: bool,
    /// `-y`, `-P`: the calls that make pipes and sockets send their inode numbers.
    pub fd_inodes: bool,
    pub strsize: u32,
    /// `-k`: each call's user stack (where it returned; entered, for the calls that do not).
    pub stacks: bool,
}

/// The tracepoint's own fields (after `__syscall_nr`): name and C type.
fn own_fields(format: &Format) -> Vec<(String, String)> {
    (format.fields.iter())
        .filter(|f| f.name != "__syscall_nr")
        .map(|f| (f.name.clone(), f.c_type.clone()))
        .collect()
}

/// Whether an argument of this kind is read as a string or buffer.
fn read_kind(kind: Arg) -> bool {
    matches!(
        kind,
        Arg::Path
            | Arg::BufIn(_)
            | Arg::BufOut
            | Arg::In(_)
            | Arg::Out(_)
            | Arg::Argv
            | Arg::Futex(FutexArg::Timeout, _)
            | Arg::TimeoutLeft(_)
            | Arg::FdSet(0)
            | Arg::IoctlArg(_)
            | Arg::Clone(CloneArg::ParentTid)
            | Arg::SockName(_)
            | Arg::SockLen(_)
            | Arg::IovGiven(_)
            | Arg::IovFilled(_)
            | Arg::MsgGiven
            | Arg::MsgFilled
            | Arg::PrctlArg(1)
    )
}

/// Bytes of the register an argument of this kind holds, and whether it is signed.
fn register(kind: Arg) -> (u32, bool) {
    match kind {
        Arg::Int
        | Arg::Fd
        | Arg::DirFd
        | Arg::Signal
        | Arg::Whence
        | Arg::SigHow
        | Arg::Domain
        | Arg::FcntlCmd
        | Arg::Clock
        | Arg::Rlimit
        | Arg::ArchCode
        | Arg::Madvise
        | Arg::Fadvise
        | Arg::Prctl
        | Arg::EpollOp
        | Arg::Protocol(_)
        | Arg::ShutdownHow => (4, true),
        Arg::Long => (8, true),
        _ => (8, false),
    }
}

/// A call the table does not know: its argument's kind from the tracepoint's C type.
fn kind_of(name: &str, c_type: &str) -> Arg {
    let t = c_type.trim();
    if t.contains("char *const *") || t.contains("char * const *") {
        return match name {
            "envp" => Arg::Envp,
            _ => Arg::Argv,
        };
    }
    if t.contains("const char *") {
        return Arg::Path;
    }
    if t.contains('*') {
        return Arg::Ptr;
    }
    match name {
        "fd" | "oldfd" | "newfd" | "fd_in" | "fd_out" | "epfd" => return Arg::Fd,
        "dfd" | "olddfd" | "newdfd" | "dirfd" => return Arg::DirFd,
        "mode" => return Arg::Mode,
        _ => {}
    }
    match t {
        "int" | "pid_t" | "key_t" | "clockid_t" | "timer_t" | "uid_t" | "gid_t" | "qid_t" => {
            Arg::Int
        }
        "long" | "loff_t" | "off_t" => Arg::Long,
        "umode_t" => Arg::Mode,
        _ => Arg::UInt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_calls_take_their_kinds_from_the_c_types() {
        assert_eq!(kind_of("filename", "const char *"), Arg::Path);
        assert_eq!(kind_of("argv", "const char *const *"), Arg::Argv);
        assert_eq!(kind_of("envp", "const char *const *"), Arg::Envp);
        assert_eq!(kind_of("buf", "char *"), Arg::Ptr);
        assert_eq!(kind_of("fd", "unsigned int"), Arg::Fd);
        assert_eq!(kind_of("dfd", "int"), Arg::DirFd);
        assert_eq!(kind_of("pid", "pid_t"), Arg::Int);
        assert_eq!(kind_of("len", "size_t"), Arg::UInt);
    }

    #[test]
    fn a_call_decodes_as_strace_shows_it() {
        let layout = Layout {
            nr: 257,
            name: "openat",
            params: [
                ("dfd", Arg::DirFd),
                ("filename", Arg::Path),
                ("flags", Arg::OpenFlags),
                ("mode", Arg::OpenMode(2)),
            ]
            .iter()
            .map(|(n, k)| Param {
                name: n.to_string(),
                kind: *k,
            })
            .collect(),
            ret: Ret::Int,
            reads: vec![1],
            hex: 0,
            strsize: STRLEN_MAX,
        };
        let mut event = Event::from_bytes(&[0u8; Event::SIZE]).unwrap();
        event.data[0] = (-100i64) as u64;
        event.data[1] = 0x1000;
        event.data[2] = 0o2000000;
        event.data[word::RETURN] = 3;
        event.data[trace_word::DURATION] = 12_000;
        let mut strings = vec![0u8, 0, 13, 0];
        strings.extend_from_slice(b"/etc/hostname");
        let call = layout.call(&event, &strings, "cat");
        let args: Vec<&str> = call.args.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(
            args,
            ["AT_FDCWD", "\"/etc/hostname\"", "O_RDONLY|O_CLOEXEC"]
        );
        assert_eq!(call.ret_text, "3");
        assert_eq!(call.args[0].value, -100);
        let config = layout.config(&Options {
            strsize: 32,
            ..Options::default()
        });
        assert_eq!(config.strs[0].at, 1);
        assert_eq!(config.strs[0].len_from, 0);
        assert_eq!(config.buflen, 32);
    }
}
