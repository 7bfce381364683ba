//! A [`Profile`] as pprof's `profile.proto` (github.com/google/pprof, proto/profile.proto),
//! gzipped: what `go tool pprof`, Parca, Pyroscope and Grafana read. On-CPU profiles carry
//! `samples/count` and `cpu/nanoseconds` (each sample one period of 1/hz s, as Go's own CPU
//! profiles), off-CPU ones `blocks/count` and `off-cpu/nanoseconds`. Every user frame keeps
//! its address and the mapping of the file it lies in, with the file's build-id, so a server
//! can symbolize it again; kernel frames lie in one `[kernel.kallsyms]` mapping with the
//! running kernel's build-id. Each sample is labelled with its process's `comm` and `pid`, and
//! its `cgroup` path, `container` id and `pod` UID where it has them;
//! the run's accounting (what was left out, and why) is in the profile's comments.

use std::io::Write as _;

use hashbrown::HashMap;

use crate::output::profile::{Frame, Measure, Profile};

/// What the profile itself does not hold: when it started, the kernel's build-id.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The start of the run, in ns since the Unix epoch.
    pub time_nanos: i64,
    pub kernel_build_id: Option<String>,
}

impl Context {
    /// A profile started at `started`, of a kernel with this build-id.
    pub fn new(started: std::time::SystemTime, kernel_build_id: Option<String>) -> Context {
        Context {
            time_nanos: (started.duration_since(std::time::UNIX_EPOCH))
                .map_or(0, |d| d.as_nanos() as i64),
            kernel_build_id,
        }
    }
}

/// Where kernel addresses begin on x86-64: the kernel mapping's start.
const KERNEL_START: u64 = tracer_common::KERNEL_SPACE_START;

/// The profile, encoded and gzipped.
pub fn encode(profile: &Profile, context: &Context) -> Vec<u8> {
    use prost::Message as _;
    let bytes = message(profile, context).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(&bytes);
    gz.finish().unwrap_or_default()
}

/// The profile as profile.proto's message.
pub fn message(profile: &Profile, context: &Context) -> proto::Profile {
    let mut b = Builder::default();
    b.strings.push(String::new());
    let mut out = proto::Profile::default();
    let (types, period_type, period) = match profile.measure {
        Measure::OnCpu { hz, .. } => (
            [("samples", "count"), ("cpu", "nanoseconds")],
            ("cpu", "nanoseconds"),
            crate::units::clock_period_ns(hz) as i64,
        ),
        Measure::OffCpu { .. } => (
            [("blocks", "count"), ("off-cpu", "nanoseconds")],
            ("blocks", "count"),
            1,
        ),
    };
    out.sample_type = types.iter().map(|(t, u)| b.value_type(t, u)).collect();
    out.period_type = Some(b.value_type(period_type.0, period_type.1));
    out.period = period;
    let (comm_key, pid_key) = (b.string("comm"), b.string("pid"));
    for entry in &profile.entries {
        let mut location_id = Vec::with_capacity(entry.frames.len());
        for (i, frame) in entry.frames.iter().enumerate() {
            // The first frame of each side is where the task was; the others are return
            // addresses, which pprof wants inside their call instruction.
            let innermost = i == 0 || entry.frames[i - 1].kernel != frame.kernel;
            location_id.push(b.location(frame, innermost, context));
        }
        let value = match profile.measure {
            Measure::OnCpu { .. } => vec![entry.value as i64, (entry.value as i64) * period],
            Measure::OffCpu { .. } => vec![entry.count as i64, entry.value as i64],
        };
        let mut label = vec![
            proto::Label {
                key: comm_key,
                str: b.string(&entry.comm),
                ..proto::Label::default()
            },
            proto::Label {
                key: pid_key,
                num: entry.pid as i64,
                ..proto::Label::default()
            },
        ];
        let cgroup = &entry.cgroup;
        let named = [
            ("cgroup", Some(&cgroup.path).filter(|p| !p.is_empty())),
            ("container", cgroup.container.as_ref()),
            ("pod", cgroup.pod.as_ref()),
        ];
        for (key, value) in named {
            if let Some(value) = value {
                label.push(proto::Label {
                    key: b.string(key),
                    str: b.string(value),
                    ..proto::Label::default()
                });
            }
        }
        out.sample.push(proto::Sample {
            location_id,
            value,
            label,
        });
    }
    let what = match profile.measure {
        Measure::OnCpu { hz, event } => format!("tracer profile: {event} at {hz} Hz"),
        Measure::OffCpu { min_block_ns } => format!(
            "tracer profile --off-cpu: blocks of {} and more",
            crate::output::profile::duration(min_block_ns)
        ),
    };
    out.comment = std::iter::once(what)
        .chain(profile.summary_notes())
        .map(|c| b.string(&c))
        .collect();
    out.time_nanos = context.time_nanos;
    out.duration_nanos = (profile.seconds * 1e9) as i64;
    out.mapping = b.mappings;
    out.location = b.locations;
    out.function = b.functions;
    out.string_table = b.strings;
    out
}

/// The tables of a profile as it is built, each entry once.
#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    mappings: Vec<proto::Mapping>,
    /// (start, end, offset, path) or, for the kernel, all zero and empty -> mapping id.
    mapping_ids: HashMap<(u64, u64, u64, String), u64>,
    functions: Vec<proto::Function>,
    /// (name, file) -> function id.
    function_ids: HashMap<(String, String), u64>,
    locations: Vec<proto::Location>,
    /// (mapping id, address, function id, line) -> location id.
    location_ids: HashMap<(u64, u64, u64, i64), u64>,
}

impl Builder {
    fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> proto::ValueType {
        proto::ValueType {
            r#type: self.string(kind),
            unit: self.string(unit),
        }
    }

    /// The mapping of `frame` (0 for none): its file's, or the kernel's.
    fn mapping(&mut self, frame: &Frame, context: &Context) -> u64 {
        let key = match (&frame.mapped, frame.kernel) {
            (_, true) => (0, 0, 0, String::new()),
            (Some(m), false) => (m.start, m.end, m.offset, m.path.clone()),
            (None, false) => return 0,
        };
        let id = match self.mapping_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.mappings.len() as u64 + 1;
                let (filename, build_id) = match frame.kernel {
                    true => (
                        "[kernel.kallsyms]".into(),
                        context.kernel_build_id.as_deref(),
                    ),
                    false => (file_name(&key.3), frame.build_id.as_deref()),
                };
                let (start, limit) = match frame.kernel {
                    true => (KERNEL_START, u64::MAX),
                    false => (key.0, key.1),
                };
                let mapping = proto::Mapping {
                    id,
                    memory_start: start,
                    memory_limit: limit,
                    file_offset: key.2,
                    filename: self.string(&filename),
                    build_id: self.string(build_id.unwrap_or_default()),
                    // Every frame was looked up (in the file's symbols and debug file): a
                    // reader that looks again finds no more, and `go tool pprof` would, for a
                    // profile fetched from serve, ask serve's /debug/pprof/symbol, which cannot
                    // know which process an address was of.
                    has_functions: true,
                    ..proto::Mapping::default()
                };
                self.mappings.push(mapping);
                self.mapping_ids.insert(key, id);
                id
            }
        };
        let mapping = &mut self.mappings[id as usize - 1];
        mapping.has_filenames |= frame.source.is_some();
        mapping.has_line_numbers |= frame.source.as_deref().is_some_and(|s| line(s).1 > 0);
        id
    }

    /// The location of `frame`: its mapping and address, and its function and line where it
    /// was named. An unnamed frame in a known mapping is left as its address, for a server
    /// with the file's symbols (found by build-id) to name; one in none is named `[unknown]`,
    /// as the text report names it.
    fn location(&mut self, frame: &Frame, innermost: bool, context: &Context) -> u64 {
        let mapping_id = self.mapping(frame, context);
        let address = match (innermost, frame.addr) {
            (_, 0) | (true, _) => frame.addr,
            (false, addr) => addr - 1,
        };
        let (file, line) = frame.source.as_deref().map_or(("", 0), line);
        let function_id = match (frame.named, mapping_id) {
            (false, id) if id != 0 => 0,
            _ => self.function(&frame.name, file),
        };
        let key = (mapping_id, address, function_id, line);
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address,
            line: match function_id {
                0 => Vec::new(),
                function_id => vec![proto::Line { function_id, line }],
            },
            is_folded: false,
        });
        self.location_ids.insert(key, id);
        id
    }

    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (name.to_string(), file.to_string());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let function = proto::Function {
            id,
            name: self.string(name),
            system_name: self.string(name),
            filename: self.string(file),
            start_line: 0,
        };
        self.functions.push(function);
        self.function_ids.insert(key, id);
        id
    }
}

/// A mapping's name as pprof's readers take it: a file's path, or a name in brackets for
/// what no file holds (`[vdso]`, and `//anon`, where Node keeps its JIT code), which they do
/// not try to open.
fn file_name(path: &str) -> String {
    match path.strip_prefix('/') {
        Some(rest) if !rest.starts_with('/') => path.to_string(),
        _ if path.starts_with('[') => path.to_string(),
        _ => format!("[{}]", path.trim_start_matches('/')),
    }
}

/// `file:line` (or `file`, when merged stacks were at different lines) as (file, line or 0).
fn line(source: &str) -> (&str, i64) {
    match source.rsplit_once(':') {
        Some((file, line)) => match line.parse() {
            Ok(line) => (file, line),
            Err(_) => (source, 0),
        },
        None => (source, 0),
    }
}

/// profile.proto's messages, field numbers as the proto file gives them (the fields tracer
/// does not write are left out: a reader skips what is absent).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Innermost first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::profile::{Accounting, Entry, Mapped};

    fn frame(name: &str, kernel: bool, addr: u64, source: Option<&str>) -> Frame {
        Frame {
            named: name != "[unknown]",
            name: name.into(),
            kernel,
            source: source.map(str::to_string),
            addr,
            mapped: (!kernel).then(|| Mapped {
                start: 0x400000,
                end: 0x401000,
                offset: 0x1000,
                path: "/usr/bin/prog".into(),
            }),
            build_id: (!kernel).then(|| "abcd".into()),
        }
    }

    fn profile(measure: Measure) -> Profile {
        Profile {
            measure,
            entries: vec![
                Entry {
                    comm: "prog".into(),
                    pid: 7,
                    cgroup: crate::kernel::cgroups::Identity::of_path(
                        "/system.slice/docker-4f1d3c2b1a0918273645546372819a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f.scope",
                    ),
                    frames: vec![
                        frame("clear_page", true, 0xffffffff81000010, None),
                        frame("spin", false, 0x400100, Some("p.c:33")),
                        frame("main", false, 0x400200, Some("p.c:69")),
                    ],
                    count: 3,
                    value: 30,
                },
                Entry {
                    comm: "prog".into(),
                    pid: 7,
                    cgroup: Default::default(),
                    frames: vec![
                        frame("[unknown]", false, 0x400300, None),
                        frame("main", false, 0x400200, Some("p.c:69")),
                    ],
                    count: 1,
                    value: 10,
                },
            ],
            accounting: Accounting {
                total: 4,
                ..Accounting::default()
            },
            seconds: 2.5,
        }
    }

    fn string(p: &proto::Profile, id: i64) -> &str {
        &p.string_table[id as usize]
    }

    #[test]
    fn on_cpu_samples_carry_count_and_cpu_time() {
        let context = Context {
            time_nanos: 5,
            kernel_build_id: Some("feed".into()),
        };
        let p = message(
            &profile(Measure::OnCpu {
                hz: 100,
                event: "cpu-clock",
            }),
            &context,
        );
        assert_eq!(p.string_table[0], "");
        let types: Vec<_> = (p.sample_type.iter())
            .map(|t| (string(&p, t.r#type), string(&p, t.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        assert_eq!(p.period, 10_000_000);
        assert_eq!(p.sample[0].value, [30, 300_000_000]);
        assert_eq!(p.duration_nanos, 2_500_000_000);
        assert_eq!(p.time_nanos, 5);
        // Kernel, then the user mapping; `main` is one location in both samples.
        assert_eq!(p.mapping.len(), 2);
        assert_eq!(string(&p, p.mapping[0].filename), "[kernel.kallsyms]");
        assert_eq!(string(&p, p.mapping[0].build_id), "feed");
        assert_eq!(string(&p, p.mapping[1].build_id), "abcd");
        assert_eq!(p.mapping[1].file_offset, 0x1000);
        assert!(p.mapping[1].has_functions && p.mapping[1].has_line_numbers);
        assert_eq!(p.sample[0].location_id[2], p.sample[1].location_id[1]);
        // The leaf of each side at its address, return addresses inside their call.
        let address = |id: u64| p.location[id as usize - 1].address;
        let ids = &p.sample[0].location_id;
        assert_eq!(
            [address(ids[0]), address(ids[1]), address(ids[2])],
            [0xffffffff81000010, 0x400100, 0x4001ff]
        );
        // The unnamed user frame is left for the reader to symbolize: no line.
        let unknown = &p.location[p.sample[1].location_id[0] as usize - 1];
        assert!(unknown.line.is_empty() && unknown.mapping_id == 2);
        let main = &p.location[ids[2] as usize - 1];
        assert_eq!(main.line[0].line, 69);
        let function = &p.function[main.line[0].function_id as usize - 1];
        assert_eq!(
            (string(&p, function.name), string(&p, function.filename)),
            ("main", "p.c")
        );
        let label = &p.sample[0].label;
        assert_eq!(
            (string(&p, label[0].key), string(&p, label[0].str)),
            ("comm", "prog")
        );
        assert_eq!((string(&p, label[1].key), label[1].num), ("pid", 7));
        let strings: Vec<_> = (label[2..].iter())
            .map(|l| (string(&p, l.key), string(&p, l.str)))
            .collect();
        assert_eq!(
            strings,
            [
                ("cgroup", "/system.slice/docker-4f1d3c2b1a0918273645546372819a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f.scope"),
                ("container", "4f1d3c2b1a0918273645546372819a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f"),
            ]
        );
        assert_eq!(p.sample[1].label.len(), 2, "no cgroup: no labels for it");
        assert_eq!(
            string(&p, p.comment[0]),
            "tracer profile: cpu-clock at 100 Hz"
        );
    }

    #[test]
    fn off_cpu_samples_carry_blocks_and_time_blocked() {
        let p = message(
            &profile(Measure::OffCpu { min_block_ns: 0 }),
            &Context::default(),
        );
        let types: Vec<_> = (p.sample_type.iter())
            .map(|t| (string(&p, t.r#type), string(&p, t.unit)))
            .collect();
        assert_eq!(types, [("blocks", "count"), ("off-cpu", "nanoseconds")]);
        assert_eq!(p.sample[0].value, [3, 30]);
    }

    #[test]
    fn mappings_without_a_file_are_named_in_brackets() {
        assert_eq!(file_name("/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
        assert_eq!(file_name("//anon"), "[anon]");
        assert_eq!(file_name("[vdso]"), "[vdso]");
        assert_eq!(file_name("memfd:x (deleted)"), "[memfd:x (deleted)]");
    }

    #[test]
    fn the_encoding_is_gzip_of_the_message() {
        use prost::Message as _;
        let profile = profile(Measure::OffCpu { min_block_ns: 0 });
        let gz = encode(&profile, &Context::default());
        assert_eq!(&gz[..2], [0x1f, 0x8b]);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut bytes).unwrap();
        let decoded = proto::Profile::decode(&bytes[..]).unwrap();
        assert_eq!(decoded, message(&profile, &Context::default()));
    }
}
