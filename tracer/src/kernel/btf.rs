//! Kernel function prototypes and struct member offsets, read from the running kernel's BTF.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use btf_rs::{Backend, Btf, BtfType, FuncProto, Parameter, Struct, Type};

use super::params::{Kind, Member, MemberError, Param, Prototype, RETURN_ARG};
use tracer_common::FIELD_DEREFS;

/// Where the kernel publishes vmlinux BTF, and one split BTF file per loaded module.
pub const BTF_DIR: &str = "/sys/kernel/btf";

/// Deepest typedef/qualifier chain or anonymous-member nesting we follow: real kernels need a
/// handful, and a cycle in corrupt BTF must not hang us.
const MAX_DEPTH: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read kernel BTF at {path}")]
    NoBtf {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot parse BTF in {path}: {reason}")]
    Parse { path: String, reason: String },
    /// A type id or name that points nowhere: the file parsed, but does not hold together.
    #[error("inconsistent kernel BTF")]
    Corrupt {
        #[from]
        source: btf_rs::Error,
    },
    #[error("no BTF prototype for kernel function '{function}'")]
    NoFunction { function: String },
    #[error(transparent)]
    Member(#[from] MemberError),
}

impl Error {
    /// Concrete next steps, printed as `hint:` lines under the error.
    pub fn hints(&self) -> Vec<String> {
        const FALLBACK: &str = "typed arguments fall back to arg0..arg5";
        let hint = match self {
            Error::Member(e) => return e.hints(),
            Error::NoBtf { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                format!("this kernel was built without CONFIG_DEBUG_INFO_BTF; {FALLBACK}")
            }
            Error::NoBtf { .. } => format!("check that sysfs is mounted at /sys; {FALLBACK}"),
            Error::Parse { .. } | Error::Corrupt { .. } => {
                format!("this BTF may use features btf-rs does not know; {FALLBACK}")
            }
            Error::NoFunction { function } => {
                format!("is '{function}' inlined? check `grep -w {function} /proc/kallsyms`")
            }
        };
        vec![hint]
    }
}

/// Splits `how->flags`, `how.flags` or `how->a.b` into the parameter name and the member path.
/// `None` for a plain name, or text that is not a member access (empty parts, non-identifiers).
pub fn parse_access(text: &str) -> Option<(&str, Vec<&str>)> {
    let is_ident = |s: &&str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    // `->` and `.` mean the same here: the parameter is a pointer either way, and a pointer met
    // further along the path is loaded by `member` whichever separator reached it.
    let mut parts = text.split("->").flat_map(|part| part.split('.'));
    let param = parts.next().filter(is_ident)?;
    let path: Vec<&str> = parts.collect();
    (!path.is_empty() && path.iter().all(is_ident)).then_some((param, path))
}

/// The running kernel's BTF: vmlinux, plus every module's, read the first time a function is
/// not found in vmlinux.
pub struct KernelBtf {
    dir: PathBuf,
    vmlinux: Btf,
    /// Split BTF per module: each resolves vmlinux's type ids through its base.
    modules: OnceLock<Vec<Btf>>,
    /// vmlinux's structs found by name: each name lookup walks all of vmlinux's types, and a
    /// run asks for the members of a few structs many times
    /// (docs/benchmarks.md, "Figures the code cites", `btf-struct-once`).
    structs: std::cell::RefCell<std::collections::HashMap<String, Option<Struct>>>,
}

/// The value of a kernel enumerator (`TCP_SYN_SENT`, of any enum of vmlinux), from its BTF;
/// `None` where there is no BTF or no such name. Every enumerator is read once per run, on
/// the first call: print formats that name values by enumerator (tcp:tcp_retransmit_skb's
/// `{ TCP_SYN_SENT, "TCP_SYN_SENT" }`) left the kernel's own printer to resolve them.
pub fn enumerator(name: &str) -> Option<u64> {
    static ALL: OnceLock<hashbrown::HashMap<String, u64>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let mut all = hashbrown::HashMap::new();
        let Ok(kernel) = KernelBtf::open() else {
            return all;
        };
        let btf = &kernel.vmlinux;
        let named = |m: &dyn BtfType| btf.resolve_name(m).unwrap_or_default();
        let mut id = 1;
        while let Ok(t) = btf.resolve_type_by_id(id) {
            match t {
                Type::Enum(e) => {
                    for m in &e.members {
                        let value = match e.is_signed() {
                            true => m.val() as i32 as i64 as u64,
                            false => u64::from(m.val()),
                        };
                        all.insert(named(m), value);
                    }
                }
                Type::Enum64(e) => {
                    for m in &e.members {
                        all.insert(named(m), m.val());
                    }
                }
                _ => {}
            }
            id += 1;
        }
        all
    });
    all.get(name).copied()
}

impl KernelBtf {
    /// Opens /sys/kernel/btf/vmlinux.
    pub fn open() -> Result<KernelBtf, Error> {
        KernelBtf::open_at(Path::new(BTF_DIR))
    }

    /// Opens `dir/vmlinux`; the other files of `dir` are modules' split BTF.
    pub fn open_at(dir: &Path) -> Result<KernelBtf, Error> {
        let path = dir.join("vmlinux");
        // Mmap skips hashing the names of every type up front
        // (docs/benchmarks.md, "Figures the code cites",
        // `btf-mmap`).
        // Kernels before 6.16 refuse to map this sysfs file: its bytes are copied into memory
        // that can be mapped (a memfd) instead, and read as lazily; the hashing reader is the
        // last resort.
        let vmlinux = Btf::from_file_with_backend(&path, Backend::Mmap)
            .or_else(|_| mapped_copy(&path))
            .or_else(|_| Btf::from_file(&path))
            .map_err(|e| open_error(&path, e))?;
        Ok(KernelBtf {
            dir: dir.to_path_buf(),
            vmlinux,
            modules: OnceLock::new(),
            structs: Default::default(),
        })
    }

    /// The prototype of a kernel function, from vmlinux or else from the module defining it.
    /// `Ok(None)` when no BTF FUNC of that name exists.
    pub fn prototype(&self, function: &str) -> Result<Option<Prototype>, Error> {
        let Some((btf, proto)) = self.find(function)? else {
            return Ok(None);
        };
        // A trailing `...` has no type; the caller still has the raw registers.
        let fixed = proto.parameters.iter().take_while(|p| !p.is_variadic());
        let params = fixed.enumerate().map(|(i, p)| {
            let name = param_name(btf, p, i);
            Ok(Param {
                kind: named_kind_of(btf, type_id(p), &name)?,
                name,
            })
        });
        let params = params.collect::<Result<_, Error>>()?;
        Ok(Some(Prototype {
            params,
            ret: kind_of(btf, proto.return_type_id())?,
        }))
    }

    /// Resolves `path` (`["flags"]` for `how->flags`, `["a", "b"]` for `how->a.b`) through
    /// pointer parameter `arg` of `function` (or its return value, [`RETURN_ARG`]) to a byte
    /// offset and the member's kind. An empty
    /// path is the pointed-to struct itself.
    pub fn member(&self, function: &str, arg: usize, path: &[&str]) -> Result<Member, Error> {
        let (btf, proto) = self.find(function)?.ok_or_else(|| Error::NoFunction {
            function: function.into(),
        })?;
        let param = proto.parameters.get(arg).filter(|p| !p.is_variadic());
        let (param_name, param_type) = match (arg, param) {
            (RETURN_ARG, _) => ("ret".to_string(), proto.return_type_id()),
            (_, Some(param)) => (param_name(btf, param, arg), type_id(param)),
            (_, None) => {
                let params = proto
                    .parameters
                    .iter()
                    .enumerate()
                    .map(|(i, p)| param_name(btf, p, i));
                let (function, params) = (function.into(), params.collect());
                return Err(MemberError::NoParam {
                    function,
                    arg,
                    params,
                }
                .into());
            }
        };
        // The parameter's own pointer is the one dereference the BPF side makes.
        let pointee = match strip(btf, param_type)? {
            Type::Ptr(ptr) => type_id(&ptr),
            _ => 0,
        };
        let mut current = strip(btf, pointee)?;
        if pointee == 0 || !matches!(current, Type::Struct(_) | Type::Union(_)) {
            let mut kind = kind_of(btf, param_type)?.to_string();
            if matches!(current, Type::Fwd(_)) {
                kind.push_str(DECLARED);
            }
            return Err(MemberError::NotAStructPointer {
                param: param_name,
                kind,
            }
            .into());
        }
        let (mut offset, mut member_id, mut derefs) = (0, pointee, Vec::new());
        // The walk so far as C spells it (`->` after each pointer loaded), for messages.
        let (mut walked, mut fresh) = (param_name.clone(), true);
        for &name in path {
            // A pointer on the way is loaded, and the walk goes on in what it points to.
            if let Type::Ptr(ptr) = &current {
                let target = strip(btf, type_id(ptr))?;
                let kind = || Ok::<_, Error>(kind_of(btf, member_id)?.to_string());
                match target {
                    Type::Struct(_) | Type::Union(_) if derefs.len() < FIELD_DEREFS => {
                        derefs.push(offset);
                        (offset, member_id, current, fresh) = (0, type_id(ptr), target, true);
                    }
                    Type::Struct(_) | Type::Union(_) => {
                        let (member, kind) = (walked.clone(), kind()?);
                        let max = FIELD_DEREFS;
                        return Err(MemberError::TooDeep { member, kind, max }.into());
                    }
                    Type::Fwd(_) => {
                        let (member, kind) = (walked.clone(), kind()? + DECLARED);
                        return Err(MemberError::NotAStruct { member, kind }.into());
                    }
                    _ => {}
                }
            }
            let s = match &current {
                Type::Struct(s) | Type::Union(s) => s,
                _ => {
                    let (member, kind) = (walked.clone(), kind_of(btf, member_id)?.to_string());
                    return Err(MemberError::NotAStruct { member, kind }.into());
                }
            };
            let (strukt, member) = (c_name(btf, member_id)?, name.to_string());
            let Some(found) = find_member(btf, s, name, 0)? else {
                let mut members = Vec::new();
                member_names(btf, s, &mut members, 0)?;
                return Err(MemberError::NoMember {
                    strukt,
                    member,
                    members,
                }
                .into());
            };
            if found.bitfield {
                return Err(MemberError::Bitfield { strukt, member }.into());
            }
            offset += found.bit_offset / 8;
            member_id = found.type_id;
            current = strip(btf, member_id)?;
            let step = if fresh { "->" } else { "." };
            (walked, fresh) = (format!("{walked}{step}{name}"), false);
        }
        let name = path.last().copied().unwrap_or_default();
        let in_place = is_char_array(btf, &current)?;
        Ok(Member {
            arg,
            derefs,
            offset,
            kind: match in_place {
                true => Kind::Str,
                false => named_kind_of(btf, member_id, name)?,
            },
            in_place,
        })
    }

    /// The byte offset of `member` in vmlinux's `struct strukt` (anonymous members searched
    /// through); `Ok(None)` when BTF has no such struct or member, or it is a bitfield.
    pub fn struct_member_offset(&self, strukt: &str, member: &str) -> Result<Option<u32>, Error> {
        let Some(s) = self.vmlinux_struct(strukt)? else {
            return Ok(None);
        };
        Ok(find_member(&self.vmlinux, &s, member, 0)?
            .filter(|found| !found.bitfield)
            .map(|found| found.bit_offset / 8))
    }

    /// vmlinux's `struct strukt`, looked up once per name.
    fn vmlinux_struct(&self, strukt: &str) -> Result<Option<Struct>, Error> {
        if let Some(known) = self.structs.borrow().get(strukt) {
            return Ok(known.clone());
        }
        let mut found = None;
        for id in self.vmlinux.resolve_ids_by_name(strukt)? {
            if let Type::Struct(s) = self.vmlinux.resolve_type_by_id(id)? {
                found = Some(s);
                break;
            }
        }
        (self.structs.borrow_mut()).insert(strukt.to_string(), found.clone());
        Ok(found)
    }

    /// The type id of `function`'s BTF FUNC in vmlinux (not modules): what a fentry or fexit
    /// program is loaded against. `Ok(None)` when vmlinux's BTF has no such FUNC (a module's
    /// function, or one pahole left out).
    pub fn vmlinux_function_id(&self, function: &str) -> Result<Option<u32>, Error> {
        for id in self.vmlinux.resolve_ids_by_name(function)? {
            if let Type::Func(_) = self.vmlinux.resolve_type_by_id(id)? {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The BTF holding `function`'s FUNC, and its prototype.
    fn find(&self, function: &str) -> Result<Option<(&Btf, FuncProto)>, Error> {
        let ids = self.vmlinux.resolve_ids_by_name(function)?;
        if let Some(proto) = func_proto(&self.vmlinux, &ids)? {
            return Ok(Some((&self.vmlinux, proto)));
        }
        for module in self.modules()? {
            // Only the module's own types: its base, vmlinux, was searched above.
            let Some(split) = module.split() else {
                continue;
            };
            if let Some(proto) = func_proto(module, &split.resolve_ids_by_name(function)?)? {
                return Ok(Some((module, proto)));
            }
        }
        Ok(None)
    }

    /// Every module's split BTF, read once; a failure is returned, not remembered.
    fn modules(&self) -> Result<&[Btf], Error> {
        if let Some(modules) = self.modules.get() {
            return Ok(modules);
        }
        let mut paths = std::fs::read_dir(&self.dir)
            .and_then(|dir| {
                dir.map(|entry| Ok(entry?.path()))
                    .collect::<io::Result<Vec<_>>>()
            })
            .map_err(|source| Error::NoBtf {
                path: self.dir.display().to_string(),
                source,
            })?;
        paths.retain(|path| path.file_name().is_some_and(|name| name != "vmlinux"));
        paths.sort(); // a stable order makes "first module wins" reproducible
        let modules = paths
            .iter()
            .map(|path| Btf::from_split_file(path, &self.vmlinux).map_err(|e| open_error(path, e)));
        let modules = modules.collect::<Result<Vec<_>, _>>()?;
        Ok(self.modules.get_or_init(|| modules))
    }
}

/// `path`'s BTF read lazily from a copy of its bytes in a memfd, which unlike the sysfs file
/// of kernels before 6.16 can be mapped. Under emulation (the VM tier) the hashing reader took
/// most of a second at each start of a `-- COMMAND` run, which reads task_struct's layout.
#[allow(unsafe_code)]
fn mapped_copy(path: &Path) -> Result<Btf, btf_rs::Error> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd};
    let bytes = std::fs::read(path)?;
    // SAFETY: a NUL-terminated name and a valid flag; the result is checked before use.
    let fd = unsafe { libc::memfd_create(c"tracer-btf".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let mut copy = unsafe { std::fs::File::from_raw_fd(fd) };
    copy.write_all(&bytes)?;
    // The mapping made through the fd's /proc path outlives the fd, closed on return.
    Btf::from_file_with_backend(format!("/proc/self/fd/{}", copy.as_raw_fd()), Backend::Mmap)
}

fn open_error(path: &Path, e: btf_rs::Error) -> Error {
    let path = path.display().to_string();
    match e {
        btf_rs::Error::IO(source) => Error::NoBtf { path, source },
        other => Error::Parse {
            path,
            reason: other.to_string(),
        },
    }
}

/// The FUNC_PROTO of the first FUNC among `ids` (a struct can share a function's name). pahole
/// drops functions whose static copies disagree on their prototype, so the first FUNC speaks
/// for all copies.
fn func_proto(btf: &Btf, ids: &[u32]) -> Result<Option<FuncProto>, Error> {
    for &id in ids {
        if let Type::Func(func) = btf.resolve_type_by_id(id)? {
            if let Type::FuncProto(proto) = btf.resolve_chained_type(&func)? {
                return Ok(Some(proto));
            }
        }
    }
    Ok(None)
}

/// A parameter's name, or `argN` where BTF has none.
fn param_name(btf: &Btf, p: &Parameter, i: usize) -> String {
    match btf.resolve_name(p).unwrap_or_default() {
        name if name.is_empty() => format!("arg{i}"),
        name => name,
    }
}

/// The type id a BTF entry refers to (0, void, for none).
fn type_id(t: &dyn BtfType) -> u32 {
    t.get_type_id().unwrap_or(0)
}

/// Follows typedefs, qualifiers and type tags to the type that decides size and layout.
/// With `typedefs` false, stops at a typedef (for the `char *` test).
fn strip_with(btf: &Btf, mut id: u32, typedefs: bool) -> Result<Type, Error> {
    for _ in 0..MAX_DEPTH {
        match btf.resolve_type_by_id(id)? {
            Type::Typedef(t) if typedefs => id = type_id(&t),
            Type::Const(t) | Type::Volatile(t) | Type::Restrict(t) => id = type_id(&t),
            Type::TypeTag(t) => id = type_id(&t),
            other => return Ok(other),
        }
    }
    let reason = format!("type chain from id {id} is longer than {MAX_DEPTH}");
    Err(btf_rs::Error::Format(reason).into())
}

fn strip(btf: &Btf, id: u32) -> Result<Type, Error> {
    strip_with(btf, id, true)
}

/// The size of a network-byte-order typedef on the way from `id` to its type (`__be16`,
/// `__be32`, `__be64`, through `const` and other typedefs), if there is one.
fn net_order(btf: &Btf, mut id: u32) -> Result<Option<u8>, Error> {
    for _ in 0..MAX_DEPTH {
        match btf.resolve_type_by_id(id)? {
            Type::Typedef(t) => match btf.resolve_name(&t).unwrap_or_default().as_str() {
                "__be16" => return Ok(Some(2)),
                "__be32" => return Ok(Some(4)),
                "__be64" => return Ok(Some(8)),
                _ => id = type_id(&t),
            },
            Type::Const(t) | Type::Volatile(t) | Type::Restrict(t) => id = type_id(&t),
            Type::TypeTag(t) => id = type_id(&t),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// [`kind_of`] for a value named `name` (a parameter or a member): a network-order value
/// whose name says it is an address shows as one.
fn named_kind_of(btf: &Btf, id: u32, name: &str) -> Result<Kind, Error> {
    Ok(match kind_of(btf, id)? {
        Kind::Net { size: 4, .. } if crate::kernel::params::names_an_address(name) => Kind::Net {
            size: 4,
            addr: true,
        },
        // An `int cap` (cap_capable, ns_capable, capable): a capability, named as BCC's
        // capable tool and strace's capget show it.
        Kind::Signed(4) | Kind::Unsigned(4) if name == "cap" => Kind::Enum {
            size: 4,
            values: (crate::kernel::sysnames::CAPABILITIES.iter().enumerate())
                .map(|(n, cap)| (cap.to_string(), n as i64))
                .collect(),
        },
        kind => kind,
    })
}

/// How a value of type `id` is captured and printed.
fn kind_of(btf: &Btf, id: u32) -> Result<Kind, Error> {
    if let Some(size) = net_order(btf, id)? {
        return Ok(Kind::Net { size, addr: false });
    }
    let name = |t: &dyn BtfType| btf.resolve_name(t).unwrap_or_default();
    // BTF only has 1-, 2-, 4- and 8-byte enums; anything else would be corrupt, and 8 reads all.
    let enum_size = |size: usize| u8::try_from(size).unwrap_or(8);
    Ok(match strip(btf, id)? {
        Type::Void => Kind::Void,
        Type::Int(i) if i.is_bool() || name(&i) == "_Bool" => Kind::Bool,
        Type::Int(i) => match u8::try_from(i.size()) {
            Ok(n @ (1 | 2 | 4 | 8)) if i.is_signed() => Kind::Signed(n),
            Ok(n @ (1 | 2 | 4 | 8)) => Kind::Unsigned(n),
            _ => Kind::Other { name: name(&i) }, // __int128 does not fit one register
        },
        Type::Enum(e) => {
            // The kind flag says whether the 32-bit values are to be read as signed.
            let value = |v: u32| {
                if e.is_signed() {
                    i64::from(v as i32)
                } else {
                    i64::from(v)
                }
            };
            let values = e
                .members
                .iter()
                .map(|m| (name(m), value(m.val())))
                .collect();
            Kind::Enum {
                size: enum_size(e.size()),
                values,
            }
        }
        Type::Enum64(e) => {
            // Unsigned values above i64::MAX wrap: the bit pattern is what the kernel stores.
            let values = e
                .members
                .iter()
                .map(|m| (name(m), m.val() as i64))
                .collect();
            Kind::Enum {
                size: enum_size(e.size()),
                values,
            }
        }
        Type::Ptr(p) => match strip_with(btf, type_id(&p), false)? {
            // Typedefs are not followed here: `u8 *` is far more often bytes than a string.
            Type::Int(c) if matches!(&*name(&c), "char" | "signed char" | "unsigned char") => {
                Kind::Str
            }
            _ => Kind::Pointer {
                pointee: c_name(btf, type_id(&p))?,
            },
        },
        _ => Kind::Other {
            name: c_name(btf, id)?,
        },
    })
}

/// A C-like name for messages and `Kind::Pointer`: `struct open_how`, `u64`, `char *`, `u8[16]`.
/// Qualifiers are dropped; typedef names are kept, as the source spells them.
fn c_name(btf: &Btf, id: u32) -> Result<String, Error> {
    let named = |prefix: &str, t: &dyn BtfType| match btf.resolve_name(t).unwrap_or_default() {
        n if n.is_empty() => format!("{prefix}(anon)"),
        n => format!("{prefix}{n}"),
    };
    Ok(match btf.resolve_type_by_id(id)? {
        Type::Void => "void".into(),
        Type::Const(t) | Type::Volatile(t) | Type::Restrict(t) => c_name(btf, type_id(&t))?,
        Type::TypeTag(t) => c_name(btf, type_id(&t))?,
        Type::Ptr(p) => format!("{} *", c_name(btf, type_id(&p))?),
        Type::Array(a) => format!("{}[{}]", c_name(btf, type_id(&a))?, a.len()),
        Type::Struct(s) => named("struct ", &s),
        Type::Union(u) => named("union ", &u),
        Type::Enum(e) => named("enum ", &e),
        Type::Enum64(e) => named("enum ", &e),
        Type::Fwd(f) if f.is_union() => named("union ", &f),
        Type::Fwd(f) => named("struct ", &f),
        Type::Int(t) => named("", &t),
        Type::Typedef(t) => named("", &t),
        Type::Float(t) => named("", &t),
        other => other.name().into(), // "func-proto" for a function pointer's pointee
    })
}

/// Said of a struct BTF only declares.
const DECLARED: &str = " (only declared: BTF has no layout for it)";

/// Whether `t` is an array of `char`, `signed char` or `unsigned char` (`task->comm`,
/// `disk_name`): a string read in place.
fn is_char_array(btf: &Btf, t: &Type) -> Result<bool, Error> {
    let Type::Array(a) = t else {
        return Ok(false);
    };
    Ok(match strip_with(btf, type_id(a), false)? {
        Type::Int(c) => matches!(
            &*btf.resolve_name(&c).unwrap_or_default(),
            "char" | "signed char" | "unsigned char"
        ),
        _ => false,
    })
}

/// A member found by name, relative to the struct searched.
struct Found {
    bit_offset: u32,
    /// Bitfields have no byte address, so one probe read cannot fetch them.
    bitfield: bool,
    type_id: u32,
}

/// Finds `name` in `s`, searching into anonymous struct/union members the way C lets
/// `skb->next` skip the unnamed levels.
fn find_member(btf: &Btf, s: &Struct, name: &str, depth: usize) -> Result<Option<Found>, Error> {
    for m in &s.members {
        let member_name = btf.resolve_name(m).unwrap_or_default();
        if member_name == name {
            // With the struct's kind flag set, members carry their bitfield size; without it,
            // a bitfield shows as an offset that is not byte-aligned.
            let bitfield = m.bitfield_size().is_some_and(|n| n > 0) || m.bit_offset() % 8 != 0;
            return Ok(Some(Found {
                bit_offset: m.bit_offset(),
                bitfield,
                type_id: type_id(m),
            }));
        }
        if member_name.is_empty() && depth < MAX_DEPTH {
            if let Type::Struct(inner) | Type::Union(inner) = strip(btf, type_id(m))? {
                if let Some(found) = find_member(btf, &inner, name, depth + 1)? {
                    return Ok(Some(Found {
                        bit_offset: found.bit_offset + m.bit_offset(),
                        ..found
                    }));
                }
            }
        }
    }
    Ok(None)
}

/// The names `find_member` can reach in `s`, for the "no member" message.
fn member_names(btf: &Btf, s: &Struct, out: &mut Vec<String>, depth: usize) -> Result<(), Error> {
    for m in &s.members {
        match btf.resolve_name(m).unwrap_or_default() {
            name if !name.is_empty() => out.push(name),
            _ if depth < MAX_DEPTH => {
                if let Type::Struct(inner) | Type::Union(inner) = strip(btf, type_id(m))? {
                    member_names(btf, &inner, out, depth + 1)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running kernel's BTF. These tests check exact prototypes of this machine's kernel
    /// (6.18); they skip, saying why, only where the kernel has no BTF at all.
    fn kernel() -> Option<KernelBtf> {
        if !Path::new(BTF_DIR).join("vmlinux").exists() {
            eprintln!("skipped: no {BTF_DIR}/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF)");
            return None;
        }
        Some(KernelBtf::open().expect("open vmlinux BTF"))
    }

    fn param(name: &str, kind: Kind) -> Param {
        let name = name.into();
        Param { name, kind }
    }

    fn proto(params: Vec<Param>, ret: Kind) -> Prototype {
        Prototype { params, ret }
    }

    fn pointer(pointee: &str) -> Kind {
        let pointee = pointee.into();
        Kind::Pointer { pointee }
    }

    fn other(name: &str) -> Kind {
        let name = name.into();
        Kind::Other { name }
    }

    /// A fresh directory for fixture files, removed by the caller.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tracer-btf-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn parse_access_splits_member_paths() {
        assert_eq!(parse_access("how->flags"), Some(("how", vec!["flags"])));
        assert_eq!(parse_access("how.flags"), Some(("how", vec!["flags"])));
        let nested = Some(("file", vec!["f_path", "dentry"]));
        assert_eq!(parse_access("file->f_path.dentry"), nested);
        assert_eq!(parse_access("a->b->c"), Some(("a", vec!["b", "c"])));
        for text in [
            "how",
            "how->",
            "->flags",
            "how..flags",
            "how->1x",
            "how->a b",
            "",
        ] {
            assert_eq!(parse_access(text), None, "{text:?}");
        }
    }

    /// The copy that kernels before 6.16 are read from holds the same types as the file.
    #[test]
    fn a_mapped_copy_reads_as_the_file() {
        let Some(btf) = kernel() else { return };
        let copy = KernelBtf {
            dir: PathBuf::from(BTF_DIR),
            vmlinux: mapped_copy(&Path::new(BTF_DIR).join("vmlinux")).unwrap(),
            modules: OnceLock::new(),
            structs: Default::default(),
        };
        let pid = |b: &KernelBtf| b.struct_member_offset("task_struct", "pid").unwrap();
        assert!(pid(&btf).is_some());
        assert_eq!(pid(&copy), pid(&btf));
        assert_eq!(
            copy.prototype("do_sys_openat2").unwrap(),
            btf.prototype("do_sys_openat2").unwrap()
        );
    }

    #[test]
    fn open_and_one_lookup_is_fast() {
        let start = std::time::Instant::now();
        let Some(btf) = kernel() else { return };
        assert!(btf.prototype("do_sys_openat2").unwrap().is_some());
        // Printed for the record (`--nocapture`); the bound only catches pathological regressions.
        let elapsed = start.elapsed();
        println!("open() + prototype(): {elapsed:?}");
        assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    }

    #[test]
    fn prototypes_match_the_kernel_source() {
        let Some(btf) = kernel() else { return };
        let get = |f: &str| {
            btf.prototype(f)
                .unwrap()
                .unwrap_or_else(|| panic!("no BTF for {f}"))
        };
        // `static int do_sys_openat2(int, const char __user *, struct open_how *)`: it returned
        // `long` when it was added (5.6); this kernel's BTF says int.
        let how = pointer("struct open_how");
        let params = vec![param("dfd", Kind::Signed(4)), param("filename", Kind::Str)];
        let params = [params, vec![param("how", how)]].concat();
        assert_eq!(get("do_sys_openat2"), proto(params, Kind::Signed(4)));
        // ssize_t -> __kernel_ssize_t -> __kernel_long_t -> long; `loff_t *` keeps its typedef.
        let read = get("vfs_read");
        assert_eq!(read.ret, Kind::Signed(8));
        assert_eq!(read.params[1], param("buf", Kind::Str));
        assert_eq!(read.params[2], param("count", Kind::Unsigned(8)));
        assert_eq!(read.params[3], param("pos", pointer("loff_t")));
        // Both picked by dumping this BTF. `bool head_stolen`: typedef bool -> _Bool, BOOL
        // encoding.
        let skb = param("skb", pointer("struct sk_buff"));
        let params = vec![skb, param("head_stolen", Kind::Bool)];
        assert_eq!(get("kfree_skb_partial"), proto(params, Kind::Void));
        // `enum pid_type` has had these five values since PIDTYPE_TGID was added (4.19).
        let values = [
            "PIDTYPE_PID",
            "PIDTYPE_TGID",
            "PIDTYPE_PGID",
            "PIDTYPE_SID",
            "PIDTYPE_MAX",
        ];
        let values = values.iter().zip(0..).map(|(n, v)| (n.to_string(), v));
        let pid_type = Kind::Enum {
            size: 4,
            values: values.collect(),
        };
        let pid_nr = get("__task_pid_nr_ns");
        assert_eq!(pid_nr.params[1], param("type", pid_type));
        assert_eq!(
            pid_nr.params[2],
            param("ns", pointer("struct pid_namespace"))
        );
        assert_eq!(pid_nr.ret, Kind::Signed(4));
        let params = vec![param("object", pointer("void"))];
        assert_eq!(get("kfree"), proto(params, Kind::Void));
        assert_eq!(btf.prototype("no_such_function_xyz").unwrap(), None);
    }

    /// cap_capable's `int cap` is a capability, shown by name.
    #[test]
    fn a_capability_argument_is_named() {
        let Some(btf) = kernel() else { return };
        let proto = (btf.prototype("cap_capable").unwrap()).expect("cap_capable in vmlinux BTF");
        let cap = proto
            .params
            .iter()
            .find(|p| p.name == "cap")
            .expect("cap_capable's cap");
        assert_eq!(
            cap.kind.value(21, None),
            crate::kernel::format::Value::Named(21, "CAP_SYS_ADMIN".into())
        );
        assert_eq!(
            cap.kind.value(40, None),
            crate::kernel::format::Value::Named(40, "CAP_CHECKPOINT_RESTORE".into())
        );
        assert_eq!(
            cap.kind.value(41, None),
            crate::kernel::format::Value::Int(41)
        );
    }

    /// sock_common's ports and addresses are `__be16`/`__be32`: read as network-order values,
    /// an address by its name; the host-order `skc_num` stays a plain u16.
    #[test]
    fn network_order_members_are_known_by_their_typedef() {
        let Some(btf) = kernel() else { return };
        let kind = |path: &[&str]| btf.member("tcp_connect", 0, path).unwrap().kind;
        let common = "__sk_common";
        assert_eq!(
            kind(&[common, "skc_dport"]),
            Kind::Net {
                size: 2,
                addr: false
            }
        );
        assert_eq!(
            kind(&[common, "skc_daddr"]),
            Kind::Net {
                size: 4,
                addr: true
            }
        );
        assert_eq!(
            kind(&[common, "skc_rcv_saddr"]),
            Kind::Net {
                size: 4,
                addr: true
            }
        );
        assert_eq!(kind(&[common, "skc_num"]), Kind::Unsigned(2));
        assert_eq!(
            btf.member("tcp_connect", 0, &[common, "skc_num"])
                .unwrap()
                .offset,
            14
        );
    }

    #[test]
    fn members_resolve_to_offsets() {
        let Some(btf) = kernel() else { return };
        // struct open_how { __u64 flags; __u64 mode; __u64 resolve; }: uapi, fixed layout.
        for (name, offset) in [("flags", 0), ("mode", 8), ("resolve", 16)] {
            let member = btf.member("do_sys_openat2", 2, &[name]).unwrap();
            let kind = Kind::Unsigned(8);
            assert_eq!(member, Member::at(2, offset, kind), "{name}");
        }
        // `prev` sits inside sk_buff's anonymous union { struct { next; prev; ... }; ... }.
        let prev = btf.member("kfree_skb_partial", 0, &["prev"]).unwrap();
        let kind = pointer("struct sk_buff");
        assert_eq!(prev, Member::at(0, 8, kind));
        // An embedded struct: file->f_path.dentry is 8 bytes into struct path { mnt; dentry; }.
        let f_path = btf.member("vfs_read", 0, &["f_path"]).unwrap();
        assert_eq!(f_path.kind, other("struct path"));
        let dentry = btf.member("vfs_read", 0, &["f_path", "dentry"]).unwrap();
        assert_eq!(dentry.offset, f_path.offset + 8);
        assert_eq!(dentry.kind, pointer("struct dentry"));
        let how = btf.member("do_sys_openat2", 2, &[]).unwrap();
        assert_eq!(how.kind, other("struct open_how"));
    }

    /// Pointers on the way are loaded (`file->f_path.dentry->d_name.name`), each offset
    /// checked against the struct's own layout; `char[N]` members are strings in place.
    #[test]
    fn chains_load_each_pointer_on_the_way() {
        let Some(btf) = kernel() else { return };
        let off = |strukt: &str, member: &str| {
            (btf.struct_member_offset(strukt, member).unwrap()).expect(member)
        };
        let name = btf
            .member("vfs_read", 0, &["f_path", "dentry", "d_name", "name"])
            .unwrap();
        let dentry = off("file", "f_path") + off("path", "dentry");
        let d_name = off("dentry", "d_name") + off("qstr", "name");
        assert_eq!((name.derefs, name.offset), (vec![dentry], d_name));
        assert_eq!((name.kind, name.in_place), (Kind::Str, false));
        // `->` and `.` mean the same: the pointer's kind decides.
        let dotted = btf.member("vfs_read", 0, &["f_path", "dentry", "d_inode", "i_ino"]);
        let dotted = dotted.unwrap();
        assert_eq!(dotted.derefs, vec![dentry, off("dentry", "d_inode")]);
        assert_eq!(dotted.offset, off("inode", "i_ino"));
        assert_eq!(dotted.kind, Kind::Unsigned(8));
        // A char array is the string at its address: task->comm, the parent's comm.
        let comm = btf.member("wake_up_new_task", 0, &["comm"]).unwrap();
        let task_comm = off("task_struct", "comm");
        assert_eq!(
            comm,
            Member {
                in_place: true,
                ..Member::at(0, task_comm, Kind::Str)
            }
        );
        let parent = btf
            .member("wake_up_new_task", 0, &["real_parent", "comm"])
            .unwrap();
        assert_eq!(parent.derefs, vec![off("task_struct", "real_parent")]);
        assert_eq!((parent.offset, parent.in_place), (task_comm, true));
        let tgid = btf
            .member("wake_up_new_task", 0, &["real_parent", "tgid"])
            .unwrap();
        assert_eq!(
            (tgid.offset, tgid.kind),
            (off("task_struct", "tgid"), Kind::Signed(4))
        );
    }

    /// `ret->member` walks the function's return type: copy_process returns the new task.
    #[test]
    fn members_of_the_return_value() {
        let Some(btf) = kernel() else { return };
        let off = |strukt: &str, member: &str| {
            (btf.struct_member_offset(strukt, member).unwrap()).expect(member)
        };
        let pid = btf.member("copy_process", RETURN_ARG, &["pid"]).unwrap();
        assert_eq!(
            pid,
            Member::at(RETURN_ARG, off("task_struct", "pid"), Kind::Signed(4))
        );
        let e = btf.member("vfs_read", RETURN_ARG, &["x"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the return value is s64, not a pointer to a struct or union"
        );
    }

    #[test]
    fn member_errors_name_what_is_wrong() {
        let Some(btf) = kernel() else { return };
        let err = |f: &str, arg: usize, path: &[&str]| btf.member(f, arg, path).unwrap_err();
        let e = err("do_sys_openat2", 2, &["flagz"]);
        assert_eq!(e.to_string(), "struct open_how has no member 'flagz'");
        assert_eq!(
            e.hints(),
            ["members of struct open_how: flags, mode, resolve"]
        );
        let e = err("do_sys_openat2", 0, &["x"]);
        let msg = "parameter 'dfd' is s32, not a pointer to a struct or union";
        assert_eq!(e.to_string(), msg);
        let e = err("do_sys_openat2", 1, &["x"]);
        assert!(
            matches!(e, Error::Member(MemberError::NotAStructPointer { kind, .. }) if kind == "char *")
        );
        let e = err("do_sys_openat2", 3, &["x"]);
        assert_eq!(
            e.to_string(),
            "'do_sys_openat2' has no parameter 3 (it takes 3)"
        );
        assert_eq!(e.hints(), ["its parameters: dfd, filename, how"]);
        let parents = [
            "f_path", "dentry", "d_parent", "d_parent", "d_parent", "d_name",
        ];
        let e = err("vfs_read", 0, &parents);
        let msg =
            "'file->f_path.dentry->d_parent->d_parent->d_parent' is struct dentry *: a member \
                   read loads at most 3 pointers after the parameter";
        assert_eq!(e.to_string(), msg);
        let e = err("vfs_read", 0, &["f_path", "dentry", "d_name", "name", "x"]);
        assert!(
            matches!(&e, Error::Member(MemberError::NotAStruct { member, kind })
                if member == "file->f_path.dentry->d_name.name" && kind == "char *"),
            "{e:?}"
        );
        let e = err("do_sys_openat2", 2, &["flags", "x"]);
        assert!(
            matches!(e, Error::Member(MemberError::NotAStruct { member, .. }) if member == "how->flags")
        );
        // `__u8 cloned:1` in struct sk_buff.
        let e = err("kfree_skb_partial", 0, &["cloned"]);
        assert_eq!(
            e.to_string(),
            "'cloned' of struct sk_buff is a bitfield, which has no byte offset"
        );
        let e = err("no_such_function_xyz", 0, &["x"]);
        assert!(matches!(e, Error::NoFunction { .. }), "{e}");
    }

    #[test]
    fn missing_or_garbled_btf_is_reported() {
        let e = KernelBtf::open_at(Path::new("/nonexistent/btf"))
            .err()
            .unwrap();
        assert!(
            matches!(&e, Error::NoBtf { source, .. } if source.kind() == io::ErrorKind::NotFound)
        );
        assert!(
            e.hints()[0].contains("CONFIG_DEBUG_INFO_BTF"),
            "{:?}",
            e.hints()
        );
        let dir = scratch("garbled");
        std::fs::write(dir.join("vmlinux"), b"not BTF at all, just some bytes").unwrap();
        let e = KernelBtf::open_at(&dir).err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(e, Some(Error::Parse { .. })), "{e:?}");
    }

    /// Split BTF as the kernel writes a module's: `int tracer_fake_fn(int fake_arg)`, with type
    /// ids and string offsets going on from vmlinux's (see Documentation/bpf/btf.rst).
    fn fake_module(base: &Btf, base_str_len: u32) -> Vec<u8> {
        let ints = base.resolve_ids_by_name("int").unwrap().into_iter();
        let int = ints.filter(|&id| matches!(base.resolve_type_by_id(id), Ok(Type::Int(_))));
        let int = int.min().unwrap();
        let proto_id = base.base().type_id_range().1 + 1;
        let strings = b"\0tracer_fake_fn\0fake_arg\0";
        let (fn_name, arg_name) = (base_str_len + 1, base_str_len + 16);
        let func_proto = [0, 13 << 24 | 1, int, arg_name, int]; // vlen 1, then its btf_param
        let func = [fn_name, 12 << 24 | 1, proto_id]; // global linkage
        let type_len = 4 * (func_proto.len() + func.len()) as u32;
        let mut out = 0xeb9f_u16.to_ne_bytes().to_vec();
        out.extend_from_slice(&[1, 0]); // version 1, no flags
        let header = [24, 0, type_len, type_len, strings.len() as u32];
        for word in header.iter().chain(&func_proto).chain(&func) {
            out.extend_from_slice(&word.to_ne_bytes());
        }
        out.extend_from_slice(strings);
        out
    }

    #[test]
    fn functions_in_modules_are_found_in_split_btf() {
        let Some(btf) = kernel() else { return };
        // A fixture module next to the real vmlinux: runs whatever modules are loaded.
        let dir = scratch("modules");
        let vmlinux = Path::new(BTF_DIR).join("vmlinux");
        std::os::unix::fs::symlink(&vmlinux, dir.join("vmlinux")).unwrap();
        let header = std::fs::read(&vmlinux).unwrap();
        let base_str_len = u32::from_ne_bytes(header[20..24].try_into().unwrap());
        let module = fake_module(&btf.vmlinux, base_str_len);
        std::fs::write(dir.join("fake_mod"), module).unwrap();
        let fixture = KernelBtf::open_at(&dir)
            .unwrap()
            .prototype("tracer_fake_fn");
        std::fs::remove_dir_all(&dir).unwrap();
        let params = vec![param("fake_arg", Kind::Signed(4))];
        assert_eq!(fixture.unwrap(), Some(proto(params, Kind::Signed(4))));

        // And a function of a module loaded on this machine, if any.
        let Some(module) = btf.modules().unwrap().first() else {
            eprintln!("skipped real-module check: no module BTF in {BTF_DIR} (no modules loaded)");
            return;
        };
        let (first, last) = module.split().unwrap().type_id_range();
        let mut funcs = (first..=last).filter_map(|id| match module.resolve_type_by_id(id) {
            Ok(Type::Func(f)) => Some(module.resolve_name(&f).unwrap()),
            _ => None,
        });
        let name = funcs.next().expect("a module with BTF but no functions");
        assert!(btf.prototype(&name).unwrap().is_some(), "{name}");
    }
}
