//! The end-of-run summary's line on stacks: what was missing, cut short or unresolved.

use super::Symbolizer;

impl Symbolizer {
    /// A line for the end-of-run summary when stacks were missing or unresolved.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.not_captured > 0 {
            parts.push(format!(
                "{} stacks not captured (stack map full or hash bucket taken)",
                self.not_captured
            ));
        }
        if self.recycled_late > 0 {
            parts.push(format!(
                "{} stacks not known: their stack map entries were reused around the time they were taken",
                self.recycled_late
            ));
        }
        if self.no_frames > 0 {
            parts.push(format!(
                "{} hits without frames: the kernel gave no stack there (for a syscalls: \
                 tracepoint before Linux 6.12, which hands BPF the user registers, \
                 raw_syscalls:sys_enter with --filter 'id == N' has kernel stacks)",
                self.no_frames
            ));
        }
        if self.evicted > 0 {
            parts.push(format!(
                "{} counted stacks lost: taken out of the stack map (a process that shared them evicted, or the counts folded) as they were counted",
                self.evicted
            ));
        }
        if self.fp_astray > 0 {
            parts.push(format!(
                "{} distinct user stacks walked by frame pointers left the process's code (code \
                 built without them: Debian's programs and libraries) and end there; \
                 --call-graph dwarf unwinds such code from .eh_frame",
                self.fp_astray
            ));
        }
        if self.exited > 0 {
            parts.push(format!(
                "{} processes exited before their user stacks were read: frames shown as [unknown]",
                self.exited
            ));
        }
        parts.extend(self.tops.said());
        if self.kretprobe_cut > 0 {
            parts.push(format!(
                "{} kernel stacks end at kretprobe_trampoline: this kernel cannot unwind through \
                 a return probe (Linux 5.15 can; fexit, which tracer uses where the kernel \
                 permits, needs 5.19)",
                self.kretprobe_cut
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
