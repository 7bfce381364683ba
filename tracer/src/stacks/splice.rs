//! Joining the parts of a user stack: a function-entry hit's caller, and a CFI-unwound top
//! with its frame-pointer walk.

use crate::kernel::unwind;

/// Puts a function-entry hit's direct caller (`entry_ret`, the return address at the stack
/// pointer; 0 for none) back as the stack's second frame, where a frame-pointer walk from the
/// entry skipped it. Kernels that already unwind it there for uprobes (Debian's 6.1 on)
/// leave nothing to add; for execute breakpoints none does.
pub(super) fn with_entry_caller(ips: &mut Vec<u64>, entry_ret: u64) {
    if entry_ret != 0 && !ips.is_empty() && ips.get(1) != Some(&entry_ret) {
        ips.insert(1, entry_ret);
    }
}

/// Joins a stack's CFI-unwound top (`unwound`: its first address, then return addresses, as
/// far as the copied bytes reached, ended as `end` says) with its frame-pointer walk
/// (`walked`, from the same first address). The unwound frames come first. The walk goes on
/// after them from the deepest frame both have, when the unwound frames end there; with none
/// in common (a wrapper's caller, which the walk skips), from its second frame, when the
/// unwind ended at a frame that keeps a frame pointer (`Astray`: none was copied) or at code
/// without CFI, where the walk is right; not after an unwind that ran out of copied bytes in
/// code without frame pointers, where the walk reads garbage.
pub(super) fn spliced(unwound: &[u64], end: unwind::UnwindEnd, walked: &mut Vec<u64>) {
    if unwound.len() < 2 || walked.first() != unwound.first() {
        return;
    }
    let rest = walk_resumes(unwound, end, walked).map_or(&[][..], |at| &walked[at..]);
    *walked = unwound.iter().chain(rest).copied().collect();
}

/// Where the frame-pointer walk goes on after the unwound top ([`spliced`]): its index in
/// `walked`; `None` where it does not (nor when the two cannot be joined).
pub(super) fn walk_resumes(
    unwound: &[u64],
    end: unwind::UnwindEnd,
    walked: &[u64],
) -> Option<usize> {
    use unwind::UnwindEnd;
    if unwound.len() < 2 || walked.first() != unwound.first() {
        return None;
    }
    let common = (1..walked.len()).rev().find_map(|j| {
        let at = unwound.iter().position(|&a| a == walked[j]);
        at.map(|p| (j, p))
    });
    match (common, end) {
        (Some((j, p)), _) if p + 1 == unwound.len() => Some(j + 1),
        (Some(_), _) => None,
        (None, UnwindEnd::Astray | UnwindEnd::NoCfi) => Some(1),
        (None, _) => None,
    }
}

/// A cache key of an unwound top ([`spliced`]): its addresses hashed, never 0.
pub(super) fn top_key(top: &[u64]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    top.hash(&mut hasher);
    hasher.finish() | 1
}
