//! The probe layer: probe specs expanded, resolved to perf events, attached with their program
//! slots configured, and their hits decoded or counted. Commands compose it; `tracefile` keeps
//! its [`Decoder`] in recordings.

pub mod aggregate;
pub mod attach;
mod attached;
pub mod decode;
pub mod expand;
pub mod fds;
pub mod filter;
pub mod follow;
pub mod latency;
pub mod metric;
pub mod profile;
pub mod resolve;
pub mod series;
pub mod strings;
pub mod syscall;
pub mod tally;
pub mod tasks;
pub mod trampoline;
pub mod usdt;
pub mod values;

pub use attach::{AttachOptions, Attacher};
pub use attached::Attached;
pub use decode::{decode, DecodedValues};
pub use expand::{expand, syscall_alternatives};
pub use resolve::{event_kind, open_event, tracepoint_error, KprobeInterface, Opened};
pub use tasks::{rename_tracepoint, start_comm_cache, start_tracking};

use crate::bpf::Slot;
use crate::kernel::format::Format;
use crate::kernel::kprobe_events::LegacyKprobe;
use crate::kernel::params::Prototype;
use crate::Error;
use values::Values;

/// How a slot's events are turned into named values (kept in recorded traces, so that they
/// decode on another machine).
#[derive(Clone, Debug)]
pub enum Decoder {
    Tracepoint {
        format: Format,
        /// The fields whose user strings the BPF program reads (syscall tracepoints), read k
        /// the kth.
        strings: Vec<String>,
        /// The fields to print, in order (`CAT:NAME(a,b)`, `--args`); empty: all.
        selection: Vec<String>,
    },
    /// kprobe/uprobe entries: the registers and struct members, named and typed by the
    /// function's prototype when BTF or DWARF has it (else arg0..arg5).
    Entry(Values),
    /// kretprobe/uretprobe/fexit: the return value, typed by the prototype; the members of
    /// what it points to asked for (`FUNC%return(ret->pid)`); at fexit also the arguments
    /// asked for (`fexit:FUNC(a, b->c, ret)`), which the trampoline still has.
    Return {
        proto: Option<Prototype>,
        args: Option<Values>,
    },
}

impl Decoder {
    /// The values `usym()` asks to name, by their index in the decoded values.
    pub fn symbol_columns(&self) -> Vec<usize> {
        match self {
            Decoder::Entry(values)
            | Decoder::Return {
                args: Some(values), ..
            } => (values.columns.iter().enumerate())
                .filter(|(_, c)| c.symbol)
                .map(|(i, _)| i)
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// One attached probe. Field order is drop order: the perf event goes before the legacy
/// kprobe it uses.
pub struct Probe {
    pub name: String,
    /// A kernel probe: how it is served (fentry, fexit, kprobe, kretprobe), for the banner.
    pub via: Option<trampoline::Via>,
    /// A uprobe at a function's entry with user stacks: each hit's `word::ENTRY_RET` is its
    /// stack's missing direct caller.
    pub at_entry: bool,
    /// Streamed user probes with user stacks: the string read that copies the top of the
    /// user stack at each hit (`str_from::STACK`), unwound by CFI.
    pub stack_top: Option<u8>,
    pub slot: Slot,
    pub decoder: Decoder,
    /// Kernel probes by name: the function (for the "may be inlined" hint).
    pub kernel_function: Option<String>,
    /// With `--count-by`: how the probe's values are read.
    pub sources: aggregate::Sources,
    /// The program on its event, then (user probes whose file was replaced at its path) on
    /// the files that replaced it, oldest first ([`Probe::follow`]).
    attached: std::cell::RefCell<Vec<Attached>>,
    /// User probes: what following the file needs.
    follow: std::cell::RefCell<Option<follow::Follow>>,
    _legacy: Option<LegacyKprobe>,
}

impl Probe {
    /// Starts the probe's program (probes are attached disabled, then started together).
    pub fn enable(&self) -> Result<(), Error> {
        self.attached.borrow().iter().try_for_each(Attached::enable)
    }
}
