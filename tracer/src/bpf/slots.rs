//! Handing out program slots: the constant ones, the attach-cookie ones past them, the raw
//! syscall twins and the dispatched syscall slots, kernel functions through their trampolines,
//! the bookkeeping programs (`-- COMMAND` tracking, the comm cache), and what a slot is given
//! beside its config (its `--filter`, glob rows, USDT argument places).

use std::os::fd::{AsFd, OwnedFd};

use aya::programs::{FEntry, FExit, RawTracePoint};
use tracer_common::{names, SchedOffsets, SlotConfig};

use super::{Bpf, Error, Slot, SlotKind};
use crate::perf::sys::{bpf_link_tracing, TracingAttach};

impl Bpf {
    /// Takes a free slot of `kind`, writes its config and loads its program.
    ///
    /// Past the constant slots of its kind, a kernel or user probe or a tracepoint gets a slot
    /// of the cookie programs (`kp_cookie`, `tp_cookie`): one program for all of them, told
    /// the slot by the attach cookie of its BPF link (`perf::Event::link_bpf`), with an id from
    /// the same range as the dispatched syscalls'.
    pub fn take_slot(&mut self, kind: SlotKind, config: SlotConfig) -> Result<Slot, Error> {
        let config = self.counting_runs(kind, config);
        self.check_uses(&config)?;
        let (base, count) = kind.range();
        let index = match self.free_index(base, count, kind.prefix()) {
            Ok(index) => index,
            Err(Error::NoSlot { .. }) if kind != SlotKind::PerfEvent => {
                return self.take_cookie_slot(kind, config)
            }
            Err(e) => return Err(e),
        };
        let id = base + index;
        self.set_config(id, config)?;
        let name = format!("{}_{index}", kind.prefix());
        self.load_program(&name, kind)?;
        self.used.push(id);
        Ok(Slot {
            kind,
            id,
            name,
            cookie: false,
        })
    }

    /// A slot of the cookie programs ([`Bpf::take_slot`]), loading the program on first use.
    fn take_cookie_slot(&mut self, kind: SlotKind, config: SlotConfig) -> Result<Slot, Error> {
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS {
            return Err(Error::NoSlot {
                kind: kind.prefix(),
                max: kind.range().1 + tracer_common::DISPATCH_SLOTS,
            });
        }
        let name = format!("{}_cookie", kind.prefix());
        let loaded = (self.ebpf.program(&name)).is_some_and(|p| p.fd().is_ok());
        if !loaded {
            if let Err(Error::Program { source, .. }) = self.load_program(&name, kind) {
                return Err(Error::NoCookies {
                    kind: match kind {
                        SlotKind::Probe => "kernel or user probes",
                        _ => "tracepoints other than syscalls'",
                    },
                    max: kind.range().1,
                    source,
                });
            }
        }
        let id = tracer_common::DISPATCH_BASE + index;
        self.set_config(id, config)?;
        self.dispatched += 1;
        self.used.push(id);
        Ok(Slot {
            kind,
            id,
            name,
            cookie: true,
        })
    }

    /// Takes a slot of the dispatching syscall programs for syscall `nr`'s entry or exit
    /// (the object must have been loaded with [`super::Room::Dispatch`]): its config is written,
    /// the program of that direction is attached to the raw tracepoint on its first use, and
    /// `SYS_SLOTS` then sends the syscall's hits to the slot, from now on.
    pub fn take_syscall_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        exit: bool,
        filter: Option<&tracer_common::Filter>,
    ) -> Result<Slot, Error> {
        let config = self.counting_runs(SlotKind::Tracepoint, config);
        let program = match exit {
            true => ("sys_exit_any", "sys_exit"),
            false => ("sys_enter_any", "sys_enter"),
        };
        let key = nr + if exit { tracer_common::SYSCALL_NRS } else { 0 };
        self.dispatched_slot(config, nr, key, filter, &[program])
    }

    /// The next slot of the range the syscall programs share: config and filter written,
    /// `programs` (name, raw tracepoint) attached on their first use, and `SYS_SLOTS[key]`
    /// pointing at it.
    pub(super) fn dispatched_slot(
        &mut self,
        config: SlotConfig,
        nr: u32,
        key: u32,
        filter: Option<&tracer_common::Filter>,
        programs: &[(&str, &str)],
    ) -> Result<Slot, Error> {
        self.check_uses(&config)?;
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS || nr >= tracer_common::SYSCALL_NRS {
            return Err(Error::NoSlot {
                kind: "syscall",
                max: tracer_common::DISPATCH_SLOTS,
            });
        }
        let slot = tracer_common::DISPATCH_BASE + index;
        self.set_config(slot, config)?;
        if let Some(filter) = filter {
            self.write_filter(slot, filter)?;
        }
        for (name, tracepoint) in programs {
            self.attach_raw(name, tracepoint, true)?;
        }
        (self.maps.sys_slots.set(key, slot, 0)).map_err(|source| Error::MapUpdate {
            map: names::SYS_SLOTS,
            source,
        })?;
        self.dispatched += 1;
        self.used.push(slot);
        Ok(Slot {
            kind: SlotKind::Tracepoint,
            id: slot,
            name: programs.last().map_or("", |(name, _)| name).to_string(),
            cookie: false,
        })
    }

    /// Takes a free tracepoint slot for its raw twin (`rtp_N`: the same global id as `tp_N`),
    /// writes its config, and attaches it to the kernel's raw tracepoint `tracepoint` with
    /// BPF_RAW_TRACEPOINT_OPEN: it runs from now on, until the object is dropped. A failed
    /// attach leaves the slot free.
    pub fn take_raw_slot(&mut self, config: SlotConfig, tracepoint: &str) -> Result<Slot, Error> {
        let config = self.counting_runs(SlotKind::Tracepoint, config);
        self.check_uses(&config)?;
        let base = SlotKind::Tracepoint.range().0;
        let index = self.free_index(base, tracer_common::RAW_SYSCALL_SLOTS, "rtp")?;
        let id = base + index;
        self.set_config(id, config)?;
        let name = format!("rtp_{index}");
        self.attach_raw(&name, tracepoint, false)?;
        self.used.push(id);
        Ok(Slot {
            kind: SlotKind::Tracepoint,
            id,
            name,
            cookie: false,
        })
    }

    /// Loads raw tracepoint program `name` if it is not yet, and attaches it to `tracepoint`
    /// with BPF_RAW_TRACEPOINT_OPEN (`once`: only on its first call for `name`, for a program
    /// that serves many slots from one attachment; it may have been loaded before, by
    /// [`Bpf::preload`]).
    pub(super) fn attach_raw(
        &mut self,
        name: &str,
        tracepoint: &str,
        once: bool,
    ) -> Result<(), Error> {
        let program = self
            .ebpf
            .program_mut(name)
            .ok_or(Error::Map { map: "program" })?;
        let wrap = |source| Error::Program {
            program: name.to_string(),
            source,
        };
        let p: &mut RawTracePoint = program.try_into().map_err(wrap)?;
        if p.fd().is_err() {
            p.load().map_err(wrap)?;
        }
        let attached = self.attached_once.iter().any(|n| n == name);
        if !(once && attached) {
            p.attach(tracepoint).map_err(wrap)?;
        }
        if once && !attached {
            self.attached_once.push(name.to_string());
        }
        Ok(())
    }

    /// `config` counting its hits in runs when this load has run counts and its key allows
    /// them: runs of a task (`SLOT_RUN_COUNT`), else runs of a key (`SLOT_RUN_KEYED`), which
    /// a breakpoint or software-event slot keyed by task and instruction continues from those
    /// alone (`SLOT_RUN_AT_IP`).
    fn counting_runs(&self, kind: SlotKind, mut config: SlotConfig) -> SlotConfig {
        if self.uses & tracer_common::USES_RUN_COUNT != 0 && config.may_count_runs() {
            config.flags |= tracer_common::SLOT_RUN_COUNT;
        } else if self.uses & tracer_common::USES_RUN_KEYED != 0 && config.may_count_keyed_runs() {
            config.flags |= tracer_common::SLOT_RUN_KEYED;
            if kind == SlotKind::PerfEvent && config.may_count_runs_at_ip() {
                config.flags |= tracer_common::SLOT_RUN_AT_IP;
            }
        }
        config
    }

    /// Whether the programs may hold counted hits in per-CPU runs (`RUN_COUNT`).
    pub(super) fn has_runs(&self) -> bool {
        self.uses & (tracer_common::USES_RUN_COUNT | tracer_common::USES_RUN_KEYED) != 0
    }

    /// Refuses a config that needs parts of the programs the object was loaded without.
    pub(super) fn check_uses(&self, config: &SlotConfig) -> Result<(), Error> {
        let needed = config.uses();
        match needed & !self.uses {
            0 => Ok(()),
            _ => Err(Error::NotLoaded {
                needed,
                loaded: self.uses,
            }),
        }
    }

    /// The first of `count` slots from global id `base` not taken yet.
    fn free_index(&self, base: u32, count: u32, kind: &'static str) -> Result<u32, Error> {
        (0..count)
            .find(|i| !self.used.contains(&(base + i)))
            .ok_or(Error::NoSlot { kind, max: count })
    }

    /// Takes a slot for kernel function `function` (vmlinux BTF id `btf_id`) served through
    /// its BPF trampoline: fentry at its entry, fexit (`exit`) at its return. The program is
    /// loaded for that function and linked with the slot's id as attach cookie (its config
    /// and value filter written first); the returned link runs it from now on, until closed.
    pub fn take_function_slot(
        &mut self,
        config: SlotConfig,
        filter: Option<&tracer_common::Filter>,
        function: &str,
        btf_id: u32,
        exit: bool,
    ) -> Result<(Slot, OwnedFd), Error> {
        let config = self.counting_runs(SlotKind::Function, config);
        self.check_uses(&config)?;
        let index = self.dispatched;
        if index >= tracer_common::DISPATCH_SLOTS {
            return Err(Error::NoSlot {
                kind: "kernel function",
                max: tracer_common::DISPATCH_SLOTS,
            });
        }
        let id = tracer_common::DISPATCH_BASE + index;
        self.set_config(id, config)?;
        if let Some(filter) = filter {
            self.write_filter(id, filter)?;
        }
        let name = if exit { "fn_exit" } else { "fn_entry" };
        let link = self.link_function(name, function, btf_id, exit, u64::from(id))?;
        self.dispatched += 1;
        self.used.push(id);
        let slot = Slot {
            kind: SlotKind::Function,
            id,
            name: name.to_string(),
            cookie: true,
        };
        Ok((slot, link))
    }

    /// Loads tracing program `name` (an fentry, or with `exit` an fexit, program) for kernel
    /// function `function` (vmlinux BTF id `btf_id`) and links it to the function's
    /// trampoline with `cookie`. The object's copy is unloaded again at once (the link holds
    /// the program in the kernel), so the same program can be loaded for the next function.
    pub(super) fn link_function(
        &mut self,
        name: &'static str,
        function: &str,
        btf_id: u32,
        exit: bool,
        cookie: u64,
    ) -> Result<OwnedFd, Error> {
        let program = (self.ebpf.program_mut(name)).ok_or(Error::Map { map: "program" })?;
        let wrap = |source| Error::Program {
            program: name.to_string(),
            source,
        };
        macro_rules! link {
            ($type:ty, $attach:expr) => {{
                let p: &mut $type = program.try_into().map_err(wrap)?;
                if p.fd().is_ok() {
                    p.unload().map_err(wrap)?;
                }
                p.load_by_id(btf_id).map_err(wrap)?;
                let linked = bpf_link_tracing(p.fd().map_err(wrap)?.as_fd(), $attach, cookie);
                // A failed unload must not hide a failed link (the link's error says what
                // went wrong); after a good link, it is an error of its own.
                let unloaded = p.unload();
                match linked {
                    Ok(link) => unloaded.map(|()| link).map_err(wrap)?,
                    Err(source) => {
                        return Err(Error::Trampoline {
                            attach: if exit { "fexit" } else { "fentry" },
                            function: function.to_string(),
                            source,
                        })
                    }
                }
            }};
        }
        Ok(match exit {
            false => link!(FEntry, TracingAttach::Fentry),
            true => link!(FExit, TracingAttach::Fexit),
        })
    }

    /// Attaches the program that keeps the per-CPU comm caches honest (`USES_COMM_CACHE`) to
    /// the raw tracepoint `task_rename`, until the object is dropped.
    pub fn attach_comm_cache(&mut self) -> Result<(), Error> {
        self.attach_raw("comm_renamed", "task_rename", true)
    }

    /// Attaches the process-tracking programs (`-- COMMAND`, `-p`) to the raw tracepoints of
    /// exec, fork and, `with_exit`, exit ([`Bpf::attach_tracking_exit`] attaches it later:
    /// after the probes, so that the probes of an exit see the process before it is
    /// forgotten), until the object is dropped. Without `task_struct`'s `pid` offset
    /// (`offsets.task_pid` 0: no BTF), the fork program is loaded for a perf tracepoint event
    /// instead, which reads the record's `child_pid`: its name is returned for
    /// [`Bpf::named_program_fd`].
    pub fn attach_tracking(
        &mut self,
        offsets: SchedOffsets,
        with_exit: bool,
    ) -> Result<Option<&'static str>, Error> {
        self.set_sched_offsets(offsets)?;
        self.attach_raw("track_exec", "sched_process_exec", true)?;
        if with_exit {
            self.attach_tracking_exit()?;
        }
        if offsets.task_pid != 0 {
            self.attach_raw("track_fork", "sched_process_fork", true)?;
            return Ok(None);
        }
        let name = "track_fork_record";
        self.load_program(name, SlotKind::Tracepoint)?;
        Ok(Some(name))
    }

    /// Attaches the exit program of the tracking (see [`Bpf::attach_tracking`]).
    pub fn attach_tracking_exit(&mut self) -> Result<(), Error> {
        self.attach_raw("track_exit", "sched_process_exit", true)
    }

    /// The kernel offsets the tracking and `tracer trace` programs read (`SCHED_OFFSETS`).
    pub fn set_sched_offsets(&mut self, offsets: SchedOffsets) -> Result<(), Error> {
        (self.maps.sched_offsets.set(0, offsets, 0)).map_err(|source| Error::MapUpdate {
            map: names::SCHED_OFFSETS,
            source,
        })
    }

    /// Marks `tgid` in the `TRACKED` map with `state` (`TRACK_PENDING` / `TRACK_ACTIVE`).
    pub fn track(&mut self, tgid: u32, state: u32) -> Result<(), Error> {
        self.maps
            .tracked
            .insert(tgid, state, 0)
            .map_err(|source| Error::MapUpdate {
                map: names::TRACKED,
                source,
            })
    }

    /// The tasks in the `TRACKED` map (the followed processes, and threads they started), as
    /// the tracking programs left it.
    pub fn tracked(&self) -> Vec<u32> {
        (self.maps.tracked.keys()).filter_map(Result::ok).collect()
    }

    /// The `TRACKED` map's file, for the guard that reads it once tracer is gone
    /// (`crate::guard`).
    pub fn tracked_map(&self) -> std::os::fd::BorrowedFd<'_> {
        use aya::maps::IterableMap as _;
        self.maps.tracked.map().fd().as_fd()
    }

    /// Writes `--filter`'s glob automata (once, before any slot uses them).
    pub fn set_globs(&mut self, rows: &[[u8; tracer_common::GLOB_ROW]]) -> Result<(), Error> {
        for (i, row) in rows.iter().enumerate() {
            (self.maps.globs.set(i as u32, *row, 0)).map_err(|source| Error::MapUpdate {
                map: names::GLOBS,
                source,
            })?;
        }
        Ok(())
    }

    /// Writes a slot's `--filter` (its config carries `SLOT_VALUE_FILTER`).
    pub fn set_filter(&mut self, slot: &Slot, filter: &tracer_common::Filter) -> Result<(), Error> {
        self.write_filter(slot.id, filter)
    }

    pub(super) fn write_filter(
        &mut self,
        id: u32,
        filter: &tracer_common::Filter,
    ) -> Result<(), Error> {
        (self.maps.filters.set(id, *filter, 0)).map_err(|source| Error::MapUpdate {
            map: names::FILTERS,
            source,
        })
    }

    /// Where a USDT probe slot (`SLOT_USDT`) finds its arguments.
    pub fn set_usdt_args(
        &mut self,
        slot: &Slot,
        args: &tracer_common::UsdtArgs,
    ) -> Result<(), Error> {
        self.write_usdt_args(slot.id, args)
    }

    pub(super) fn write_usdt_args(
        &mut self,
        index: u32,
        args: &tracer_common::UsdtArgs,
    ) -> Result<(), Error> {
        (self.maps.usdt_args.set(index, *args, 0)).map_err(|source| Error::MapUpdate {
            map: names::USDT_ARGS,
            source,
        })
    }
}

/// The tasks in a `TRACKED` map known by its file ([`Bpf::tracked_map`]'s, in the guard);
/// none when it cannot be read.
pub fn tracked_in(map: std::os::fd::BorrowedFd) -> Vec<u32> {
    let Ok(data) = map.try_clone_to_owned().map(aya::maps::MapData::from_fd) else {
        return Vec::new();
    };
    let Ok(data) = data else {
        return Vec::new();
    };
    match aya::maps::HashMap::<_, u32, u32>::try_from(aya::maps::Map::HashMap(data)) {
        Ok(tracked) => tracked.keys().filter_map(Result::ok).collect(),
        Err(_) => Vec::new(),
    }
}
