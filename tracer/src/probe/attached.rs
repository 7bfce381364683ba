//! A perf event with a BPF program attached.

use crate::bpf::{Bpf, Slot};
use crate::perf;
use crate::Error;

/// A perf event with a BPF program attached: dropping it detaches the program.
pub struct Attached {
    pub slot: Slot,
    /// A cookie slot's BPF link (closed before the event: the program is detached first).
    _link: Option<perf::event::Link>,
    /// The perf event the program is attached to; `None` for a raw tracepoint slot, which
    /// runs from its attach on.
    pub event: Option<perf::Event>,
}

impl Attached {
    /// Attaches the slot's program to `event` with `PERF_EVENT_IOC_SET_BPF` and enables it.
    pub fn new(bpf: &Bpf, slot: Slot, event: perf::Event) -> Result<Attached, Error> {
        let attached = Attached::disabled(bpf, slot, event)?;
        attached.enable()?;
        Ok(attached)
    }

    /// Attaches without enabling: the program runs once [`Attached::enable`] is called, so a
    /// command can attach all its probes first and start them together. A cookie slot is
    /// attached through a BPF link carrying its id ([`Bpf::link`]).
    pub fn disabled(bpf: &Bpf, slot: Slot, event: perf::Event) -> Result<Attached, Error> {
        let link = match slot.cookie {
            true => Some(event.link_bpf(bpf.program_fd(&slot)?, u64::from(slot.id))?),
            false => {
                event.set_bpf(bpf.program_fd(&slot)?)?;
                None
            }
        };
        Ok(Attached {
            slot,
            _link: link,
            event: Some(event),
        })
    }

    /// A kernel function slot linked to its trampoline ([`Bpf::take_function_slot`]): it
    /// runs from its link on.
    pub fn linked(slot: Slot, link: std::os::fd::OwnedFd) -> Attached {
        Attached {
            slot,
            _link: Some(perf::event::Link::closed_on_drop(link)),
            event: None,
        }
    }

    /// A slot attached to a raw tracepoint ([`Bpf::take_raw_slot`]).
    pub fn raw(slot: Slot) -> Attached {
        Attached {
            slot,
            _link: None,
            event: None,
        }
    }

    pub fn enable(&self) -> Result<(), Error> {
        match &self.event {
            Some(event) => Ok(event.enable(false)?),
            None => Ok(()),
        }
    }
}
