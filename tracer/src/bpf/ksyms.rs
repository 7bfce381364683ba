//! Kernel addresses named by the kernel (tracer-ebpf's `ksyms`): [`KernelNamer`] runs
//! `ksym_names` through `BPF_PROG_TEST_RUN`, [`KSYM_BATCH`] addresses a run, and reads back
//! each one's `%pS`. The symbolizer asks it before it reads /proc/kallsyms, whose text the
//! kernel formats whole (120,000 lines here) for any one name.

use std::os::fd::AsFd as _;

use aya::maps::{Array, MapData};
use aya::programs::{ProgramFd, RawTracePoint};
use tracer_common::{names, KSYM_BATCH, KSYM_TEXT_LEN};

use super::Bpf;

/// A kernel address's function, as the kernel's `%pS` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// The function, with ` [module]` after it for a module's, as /proc/kallsyms lists it.
    pub name: String,
    /// The address's offset into it.
    pub offset: u64,
}

/// The loaded `ksym_names` program and its output map, moved out of the object: it names
/// addresses after the run's programs are gone.
pub struct KernelNamer {
    program: ProgramFd,
    texts: Array<MapData, [u8; KSYM_TEXT_LEN]>,
}

impl Bpf {
    /// The kernel's namer of its addresses, or `None` where the kernel cannot run it (before
    /// 5.13: no `bpf_snprintf`; the verifier's refusal is the test), the caller then reads
    /// /proc/kallsyms. Loads one small program, once per object.
    pub fn kernel_namer(&mut self) -> Option<KernelNamer> {
        let program: &mut RawTracePoint = self.ebpf.program_mut("ksym_names")?.try_into().ok()?;
        program.load().ok()?;
        let program = program.fd().ok()?.try_clone().ok()?;
        let texts = Array::try_from(self.ebpf.take_map(names::KSYM_TEXT)?).ok()?;
        Some(KernelNamer { program, texts })
    }
}

impl KernelNamer {
    /// Each address's function, in order: `None` for one the kernel has no symbol for (it
    /// prints those as numbers). `None`: the program could not be run.
    pub fn name(&mut self, addrs: &[u64]) -> Option<Vec<Option<KernelSymbol>>> {
        let mut named = Vec::with_capacity(addrs.len());
        for batch in addrs.chunks(KSYM_BATCH as usize) {
            // The whole context, zeros after the batch: the kernel refuses one shorter than
            // the program reads (`max_ctx_offset`).
            let mut context = [0u64; KSYM_BATCH as usize];
            context[..batch.len()].copy_from_slice(batch);
            crate::perf::sys::bpf_test_run_raw_tp(self.program.as_fd(), &context).ok()?;
            for (i, &addr) in batch.iter().enumerate() {
                let text = match addr {
                    0 => None,
                    _ => self.texts.get(&(i as u32), 0).ok(),
                };
                named.push(text.as_ref().and_then(|t| parse_symbol(t)));
            }
        }
        Some(named)
    }
}

/// `%pS`'s `name+0xOFF/0xSIZE` or `name+0xOFF/0xSIZE [module]`: the name (with its module as
/// kallsyms lists it) and the offset. A bare number (no symbol) or a text that filled the
/// buffer (a name cut short) is `None`.
fn parse_symbol(text: &[u8]) -> Option<KernelSymbol> {
    let len = text.iter().position(|&b| b == 0)?;
    let text = std::str::from_utf8(&text[..len]).ok()?;
    let (name, rest) = text.rsplit_once("+0x")?;
    let (offset, rest) = rest.split_once('/')?;
    let offset = u64::from_str_radix(offset, 16).ok()?;
    let module = rest.split_once(' ').map(|(_, m)| m);
    let name = match module {
        Some(module) => format!("{name} {module}"),
        None => name.to_string(),
    };
    Some(KernelSymbol { name, offset })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Vec<u8> {
        let mut t = s.as_bytes().to_vec();
        t.push(0);
        t
    }

    #[test]
    fn percent_ps_names_its_function_module_and_offset() {
        let named = |s: &str| parse_symbol(&text(s)).map(|k| (k.name, k.offset));
        assert_eq!(
            named("handle_softirqs+0x1c4/0x2b0"),
            Some(("handle_softirqs".into(), 0x1c4))
        );
        assert_eq!(
            named("xfs_file_read_iter+0x0/0x110 [xfs]"),
            Some(("xfs_file_read_iter [xfs]".into(), 0))
        );
        // A name with `+0x` in it: the last one is the offset's.
        assert_eq!(named("a+0xb+0x10/0x20"), Some(("a+0xb".into(), 0x10)));
        // No symbol: the kernel prints the number.
        assert_eq!(named("0xffffffffc0001000"), None);
        // Filled to the end: no NUL, a name cut short.
        assert_eq!(parse_symbol(&[b'a'; 16]), None);
    }
}
