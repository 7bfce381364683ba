//! What the kernel and debug info say of a probe: its prototype (BTF, DWARF), struct
//! members, a tracepoint's fields and strings, a syscall tracepoint's number.

use tracer_common::SlotConfig;

use crate::kernel::btf::KernelBtf;
use crate::kernel::elf;
use crate::kernel::format::Format;
use crate::kernel::params::{Member, Prototype};
use crate::output::notes;
use crate::plan::{self, ProbeSpec, Target, UserAt};
use crate::Error;

/// The bytes of a tracepoint record's head (its first `8 * DATA_WORDS`) that its printed
/// fields (`selection`, or all when empty; never `__syscall_nr` and the like) and its string
/// reads use, in whole words; `None` when one of them is a `__data_loc` (its data lies further
/// in the record).
pub(in crate::probe) fn record_head_used(
    format: &Format,
    selection: &[String],
    strings: &[String],
) -> Option<usize> {
    let mut end = 0;
    for field in &format.fields {
        let printed = !field.name.starts_with("common_")
            && !field.name.starts_with("__")
            && (selection.is_empty() || selection.contains(&field.name));
        if !printed && !strings.contains(&field.name) {
            continue;
        }
        if field.c_type.starts_with("__data_loc") {
            return None;
        }
        end = end.max(field.offset + field.size);
    }
    Some((end.div_ceil(8) * 8).min(8 * tracer_common::DATA_WORDS))
}

/// The hint for arguments asked of a return probe that cannot see them: the entry probe that
/// can, beside it.
pub(super) fn entry_hint(spec: &ProbeSpec) -> String {
    let entry = (spec.to_string())
        .replace("kretprobe:", "")
        .replace("uretprobe:", "uprobe:");
    format!(
        "probe the entry too: '{entry}({})' beside the return probe",
        spec.args.join(", ")
    )
}

/// A uprobe on a function's first instruction (`uprobe:BIN:FUNC`, no offset, not a return
/// probe): its user stacks need the return address at the stack pointer.
pub(in crate::probe) fn at_function_entry(spec: &ProbeSpec) -> bool {
    matches!(
        &spec.target,
        Target::User {
            at: UserAt::Symbol { offset: 0, .. },
            ..
        }
    ) && !spec.ret
}

/// Counting a `syscalls:` tracepoint by task, CPU or stack only: the raw tracepoint
/// (`sys_enter` or `sys_exit`), the syscall's number, and whether it is the exit. The raw
/// tracepoint skips the trace record the perf path fills for every hit and filters by number
/// in BPF (it saves little, because the program's helper calls dominate:
/// docs/benchmarks.md, "Figures the code cites",
/// `raw-syscall-count`). `None` when a key or value needs the record, or the
/// number is not known for the name.
pub(super) fn raw_syscall(
    spec: &ProbeSpec,
    config: &SlotConfig,
) -> Option<(&'static str, u32, bool)> {
    use tracer_common::{AGG_HIST, AGG_KEY_STRING, AGG_KEY_VALUE, AGG_SUM, SLOT_AGGREGATE};
    // A value filter needs the record, and so does a string key (its pointer).
    let counted_only = config.flags & SLOT_AGGREGATE != 0
        && config.agg & (AGG_KEY_VALUE | AGG_KEY_STRING | AGG_SUM | AGG_HIST) == 0
        && config.flags & tracer_common::SLOT_VALUE_FILTER == 0;
    match counted_only {
        true => syscall_of(spec),
        false => None,
    }
}

/// Whether a spec can go through the dispatching syscall programs.
pub fn dispatchable(spec: &ProbeSpec) -> bool {
    syscall_of(spec).is_some()
}

/// A `syscalls:` tracepoint's raw tracepoint (`sys_enter` or `sys_exit`), syscall number,
/// and whether it is the exit; `None` for other tracepoints and unknown names.
pub(super) fn syscall_of(spec: &ProbeSpec) -> Option<(&'static str, u32, bool)> {
    let Target::Tracepoint { category, name } = &spec.target else {
        return None;
    };
    if category != "syscalls" || !cfg!(target_arch = "x86_64") {
        return None;
    }
    let (tracepoint, exit, call) = match name.strip_prefix("sys_enter_") {
        Some(call) => ("sys_enter", false, call),
        None => ("sys_exit", true, name.strip_prefix("sys_exit_")?),
    };
    // The kernel only creates syscalls:* events for entry points in the 64-bit table.
    let call = crate::kernel::syscalls::table_name(call);
    let nr = crate::kernel::syscalls::number(call)?;
    Some((tracepoint, nr, exit))
}

/// Resolves `PARAM->member` for a probe: kernel BTF for kernel functions, the binary's DWARF
/// for user functions.
pub(in crate::probe) fn member_lookup<'a>(
    spec: &'a ProbeSpec,
    btf: &'a Option<Option<KernelBtf>>,
) -> impl FnMut(usize, &[&str]) -> Result<Member, Error> + 'a {
    move |arg, path| match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
            ..
        } => match btf {
            Some(Some(btf)) => btf
                .member(function, arg, path)
                .map_err(|e| Error::usage(crate::describe(&e), e.hints())),
            _ => Err(Error::usage(
                format!("cannot read struct members in {spec}: no kernel BTF"),
                vec![
                    "member access needs /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF=y)".into(),
                ],
            )),
        },
        Target::User {
            file,
            at: UserAt::Symbol { name, offset: 0 },
        } => {
            let binary = elf::resolve_file(file)?;
            crate::kernel::dwarf::member(&binary, name, arg, path)
                .map_err(|e| Error::usage(crate::describe(&e), e.hints()))
        }
        Target::Kernel { .. }
        | Target::KernelAddr(_)
        | Target::User { .. }
        | Target::Tracepoint { .. } => Err(Error::usage(
            format!("{spec}: struct members need the function's prototype"),
            vec![
                "probe a function's entry by name (FUNC or uprobe:PATH:SYMBOL), without +OFF"
                    .into(),
            ],
        )),
    }
}

/// The fields a tracepoint's `(a, b)` list names, checked against its format.
pub(super) fn tracepoint_selection(
    spec: &ProbeSpec,
    format: &Format,
) -> Result<Vec<String>, Error> {
    let fields: Vec<&str> = (format.fields.iter())
        .map(|f| f.name.as_str())
        .filter(|n| !n.starts_with("common_") && !n.starts_with("__"))
        .collect();
    // `argN` is the Nth field after the common ones, as in --count-by.
    let by_index = |name: &str| {
        let n = name.strip_prefix("arg")?.parse::<usize>().ok()?;
        fields.get(n).map(|f| f.to_string())
    };
    let selection: Vec<String> = (spec.args.iter())
        .map(|a| match fields.contains(&a.as_str()) {
            true => a.clone(),
            false => by_index(a).unwrap_or_else(|| a.clone()),
        })
        .collect();
    if let Some(name) = selection.iter().find(|a| !fields.contains(&a.as_str())) {
        let mut hints = vec![format!("its fields: {}", fields.join(", "))];
        if name.contains("->") || name.contains('.') {
            hints.insert(
                0,
                "tracepoint fields print whole; struct members need a kprobe or uprobe".into(),
            );
        } else if plan::reader(name).0 != plan::Reader::Plain {
            hints.insert(
                0,
                "tracepoint fields print as their format types them; str() and usym() are for \
                 kernel and user function arguments"
                    .into(),
            );
        } else if let Some(near) = plan::did_you_mean(name, fields.iter().copied()) {
            hints.insert(0, near);
        }
        return Err(Error::usage(format!("{spec} has no field '{name}'"), hints));
    }
    Ok(selection)
}

/// The prototype of a probe on a function's entry or return: BTF for kernel functions, DWARF
/// for user functions; `None` (arg0..arg5) when neither describes it.
pub(in crate::probe) fn prototype(
    spec: &ProbeSpec,
    btf: &mut Option<Option<KernelBtf>>,
) -> Option<Prototype> {
    match &spec.target {
        Target::Kernel {
            function,
            offset: 0,
            ..
        } => {
            let btf = btf.get_or_insert_with(|| match KernelBtf::open() {
                Ok(btf) => Some(btf),
                Err(e) => {
                    notes::note(format_args!(
                        "kernel function arguments untyped (arg0..arg5): {}",
                        crate::describe(&e)
                    ));
                    None
                }
            });
            btf.as_ref()?
                .prototype(function)
                .unwrap_or_else(|e| untyped(spec, &e))
        }
        Target::User {
            file,
            at: UserAt::Symbol { name, offset: 0 },
        } => {
            let path = elf::resolve_file(file).ok()?;
            crate::kernel::dwarf::prototype(&path, name).unwrap_or_else(|e| untyped(spec, &e))
        }
        // At an offset, or not a function: nothing describes its arguments.
        Target::Kernel { .. }
        | Target::KernelAddr(_)
        | Target::User { .. }
        | Target::Tracepoint { .. } => None,
    }
}

/// Says why a probe's arguments fall back to arg0..arg5 when its BTF or DWARF could not be
/// read (a function they do not describe falls back silently: that is the common case).
fn untyped(spec: &ProbeSpec, err: &dyn std::error::Error) -> Option<Prototype> {
    notes::note(format_args!(
        "{spec}: arguments shown as arg0..arg5: {}",
        crate::describe(err)
    ));
    None
}

/// The `__data_loc` strings of a tracepoint that are printed (`selection`, or all when empty):
/// the program reads them where the record holds them, which may lie past the record's head
/// that events carry (`oom:mark_victim`'s `comm`).
pub(super) fn record_strings(format: &Format, selection: &[String]) -> Vec<String> {
    (format.fields.iter())
        .filter(|f| selection.is_empty() || selection.contains(&f.name))
        .filter(|f| data_loc_string(&f.c_type))
        .map(|f| f.name.clone())
        .collect()
}

/// The string fields of a syscall entry record its program reads (name, and whether an
/// array): those printed.
pub(super) fn syscall_strings(format: &Format, selection: &[String]) -> Vec<(String, bool)> {
    // The environment only when asked for by name (strace, too, shows its pointer unless
    // told otherwise): every exec would print all of it.
    let printed = |name: &str| match selection.is_empty() {
        true => name != "envp",
        false => selection.iter().any(|s| s == name),
    };
    (format.fields.iter())
        .filter(|f| printed(&f.name))
        .filter_map(|f| Some((f.name.clone(), user_string(&f.c_type)?)))
        .collect()
}

/// Whether a tracepoint field is a string held in the record, which the programs read there
/// (`str_from::RECORD_DATA_LOC`, `RECORD_CHARS`): a `__data_loc` string or a `char[N]`.
pub(in crate::probe) fn record_string(field: &crate::kernel::format::Field) -> bool {
    data_loc_string(&field.c_type)
        || matches!(field.kind, crate::kernel::format::FieldKind::String { len } if len > 0)
}

/// Whether a tracepoint field of C type `c_type` is a `__data_loc` string (`__data_loc char[]
/// name`): its bytes lie further in the record, where the field says.
pub(in crate::probe) fn data_loc_string(c_type: &str) -> bool {
    let words: Vec<&str> = c_type.split_whitespace().collect();
    matches!(words[..], ["__data_loc", .., "char[]"])
}

/// Whether a syscall tracepoint field of this C type points to a user string the call reads
/// (`Some(false)`: `const char *`) or an array of them (`Some(true)`: `const char *const *`,
/// argv and envp). A `char *` without `const` is a buffer the call fills (read's `buf`):
/// nothing is in it at the entry.
pub(in crate::probe) fn user_string(c_type: &str) -> Option<bool> {
    let words: Vec<&str> = c_type.split_whitespace().collect();
    let t = words.join(" ");
    let rest = t.strip_prefix("const char")?;
    match rest.replace("const", "").replace(' ', "").as_str() {
        "*" => Some(false),
        "**" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod string_tests {
    use super::{data_loc_string, record_head_used, record_strings, user_string};

    #[test]
    fn a_streamed_record_is_read_only_as_far_as_its_printed_fields() {
        let format = |fields: &str| {
            let text = format!(
                "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t\
                 size:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\t\
                 signed:1;\n\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
                 {fields}\nprint fmt: \"\"\n"
            );
            crate::kernel::format::parse(&text).unwrap()
        };
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // sys_enter_getppid: nothing printed, nothing read.
        assert_eq!(record_head_used(&format(""), &[], &[]), Some(0));
        let openat = format(
            "\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n\
             \tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n",
        );
        assert_eq!(
            record_head_used(&openat, &[], &names(&["filename"])),
            Some(48)
        );
        assert_eq!(record_head_used(&openat, &names(&["dfd"]), &[]), Some(24));
        assert_eq!(
            record_head_used(&openat, &names(&["dfd"]), &names(&["filename"])),
            Some(32)
        );
        // A field past the head: the head, no more.
        let long = format("\tfield:u64 far;\toffset:72;\tsize:8;\tsigned:0;\n");
        assert_eq!(record_head_used(&long, &[], &[]), Some(64));
        let dynamic = format("\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n");
        assert_eq!(record_head_used(&dynamic, &[], &[]), None);
    }

    /// oom:mark_victim's fields, as 6.18 gives them: its one string, `comm`, is read by the
    /// program when printed (it lies past the record's head).
    #[test]
    fn data_loc_strings_are_read_when_printed() {
        let text = "name: mark_victim\nID: 1\nformat:\n\tfield:unsigned short common_type;\t\
                    offset:0;\tsize:2;\tsigned:0;\n\n\tfield:int pid;\toffset:8;\tsize:4;\t\
                    signed:1;\n\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;\n\
                    \tfield:unsigned long total_vm;\toffset:16;\tsize:8;\tsigned:0;\n\n\
                    print fmt: \"\"\n";
        let format = crate::kernel::format::parse(text).unwrap();
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(record_strings(&format, &[]), ["comm"]);
        assert_eq!(record_strings(&format, &names(&["comm", "pid"])), ["comm"]);
        assert!(record_strings(&format, &names(&["pid"])).is_empty());
        assert!(data_loc_string("__data_loc char[]"));
        assert!(!data_loc_string("__data_loc u32[]"));
        assert!(!data_loc_string("char[16]"));
    }

    #[test]
    fn syscall_string_fields_are_the_const_char_pointers() {
        assert_eq!(user_string("const char *"), Some(false));
        assert_eq!(user_string("const char *const *"), Some(true));
        assert_eq!(user_string("const char * const *"), Some(true));
        assert_eq!(user_string("char *"), None, "a buffer the call fills");
        assert_eq!(user_string("const unsigned char *"), None);
        assert_eq!(user_string("const char"), None);
    }
}
