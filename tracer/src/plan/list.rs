//! `tracer list`'s pattern, as `bpftrace -l` reads one: a plain word matches anywhere; a glob
//! or a spec (with `:`) matches the whole spec or the part after its kind.

use super::glob_match;

/// Which specs a listing keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListPattern(Option<String>);

impl ListPattern {
    pub fn new(pattern: Option<&str>) -> ListPattern {
        ListPattern(pattern.map(|p| match p.contains(['*', '?', ':']) {
            true => p.to_string(),
            false => format!("*{p}*"),
        }))
    }

    /// Whether `spec` (`KIND:REST`) is listed.
    pub fn keeps(&self, spec: &str) -> bool {
        match &self.0 {
            None => true,
            Some(p) => {
                glob_match(p, spec)
                    || (spec.split_once(':')).is_some_and(|(_, rest)| glob_match(p, rest))
            }
        }
    }

    /// Whether a binary's symbol is listed: the pattern is about the symbol, not the path
    /// every line shares.
    pub fn keeps_symbol(&self, symbol: &str) -> bool {
        self.0.as_deref().is_none_or(|p| glob_match(p, symbol))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_anywhere_globs_and_specs_whole_or_after_the_kind() {
        let word = ListPattern::new(Some("open"));
        assert!(word.keeps("tracepoint:syscalls:sys_enter_openat"));
        assert!(!word.keeps("software:page-faults"));
        let glob = ListPattern::new(Some("syscalls:sys_enter_open*"));
        assert!(glob.keeps("tracepoint:syscalls:sys_enter_openat"));
        assert!(!glob.keeps("tracepoint:syscalls:sys_exit_openat"));
        let whole = ListPattern::new(Some("kprobe:vfs_*"));
        assert!(whole.keeps("kprobe:vfs_read"));
        assert!(!whole.keeps("tracepoint:vfs:vfs_read"));
        assert!(ListPattern::new(None).keeps("pmu:cpu"));
        let symbol = ListPattern::new(Some("read*"));
        assert!(symbol.keeps_symbol("readline"));
        assert!(!symbol.keeps_symbol("xreadline"));
    }
}
