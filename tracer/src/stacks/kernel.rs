//! Kernel frames' names: from the kernel itself, a batch of addresses at a time (the BPF
//! object's [`KernelNamer`], `%pS`), or from /proc/kallsyms.

use hashbrown::HashMap;

use crate::bpf::{KernelNamer, KernelSymbol};
use crate::kernel::symbols::Kallsyms;
use crate::output::stack::{Frame, Space};

/// Kernel addresses named by the kernel before /proc/kallsyms is read instead: about what
/// reading it costs, in test runs of the namer.
pub const KERNEL_NAMED_MAX: usize = 4096;

/// Names kernel addresses. Reading /proc/kallsyms has the kernel format every symbol it has
/// (120,000 lines, 40 ms of system time here) to name any one: most of what naming the few
/// kernel frames of a user-space profile cost. With a namer, addresses are named by the kernel
/// until [`KERNEL_NAMED_MAX`] are; past that, or where the kernel cannot run the namer,
/// kallsyms is read.
#[derive(Default)]
pub(super) struct KernelNames {
    kallsyms: Option<Kallsyms>,
    namer: Option<KernelNamer>,
    /// What the namer said of each address asked.
    named: HashMap<u64, Option<KernelSymbol>>,
}

impl KernelNames {
    pub(super) fn name_with(&mut self, namer: Option<KernelNamer>) {
        if self.kallsyms.is_none() {
            self.namer = namer;
        }
    }

    /// Names `ips` through the namer; `false` when kallsyms must be read instead.
    fn named_by_kernel(&mut self, ips: &[u64]) -> bool {
        let Some(namer) = self.namer.as_mut() else {
            return false;
        };
        let mut new: Vec<u64> = (ips.iter().copied())
            .filter(|a| !self.named.contains_key(a))
            .collect();
        new.sort_unstable();
        new.dedup();
        if new.is_empty() {
            return true;
        }
        let named = match self.named.len() + new.len() <= KERNEL_NAMED_MAX {
            true => namer.name(&new),
            false => None,
        };
        match named {
            Some(named) => {
                self.named.extend(new.into_iter().zip(named));
                true
            }
            None => {
                self.namer = None;
                false
            }
        }
    }

    /// The frames of a kernel stack's `ips`.
    pub(super) fn frames(&mut self, ips: &[u64]) -> Vec<Frame> {
        let by_kernel = self.kallsyms.is_none() && self.named_by_kernel(ips);
        let kallsyms = match by_kernel {
            true => None,
            false => {
                Some((self.kallsyms).get_or_insert_with(|| Kallsyms::load().unwrap_or_default()))
            }
        };
        let named = &self.named;
        (ips.iter())
            .map(|&addr| {
                let symbol = match kallsyms {
                    Some(ref kallsyms) => kallsyms.containing(addr),
                    None => (named.get(&addr).and_then(Option::as_ref))
                        .map(|k| (k.name.as_str(), k.offset)),
                };
                Frame {
                    addr,
                    space: Space::Kernel,
                    symbol: symbol.map(|(name, _)| name.to_string()),
                    offset: symbol.map_or(0, |(_, offset)| offset),
                    file: None,
                    line: None,
                    build_id: None,
                    mapped: None,
                    function: None,
                }
            })
            .collect()
    }
}
