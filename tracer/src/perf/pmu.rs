//! Dynamic PMUs from sysfs (`/sys/bus/event_source/devices/NAME/{type,format/*}`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::Error;

/// Where the kernel lists PMUs.
pub const SYSFS_PMUS: &str = "/sys/bus/event_source/devices";

/// One `format/` term: which config word and bit range a named field occupies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatField {
    /// 0 for `config`, 1 for `config1`, 2 for `config2`.
    pub word: u8,
    /// Bit ranges, low..=high, in the order the file lists them.
    pub ranges: Vec<(u32, u32)>,
}

/// A PMU as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmu {
    pub name: String,
    pub type_: u32,
    pub format: BTreeMap<String, FormatField>,
}

/// The PMU directory tree, rooted at [`SYSFS_PMUS`] or at a fixture.
#[derive(Clone, Debug)]
pub struct Pmus {
    root: PathBuf,
}

impl Default for Pmus {
    fn default() -> Self {
        Pmus::at(SYSFS_PMUS)
    }
}

impl Pmus {
    pub fn at(root: impl Into<PathBuf>) -> Pmus {
        Pmus { root: root.into() }
    }

    /// The PMU called `name`, or `None` when the kernel has no such PMU.
    pub fn get(&self, name: &str) -> Result<Option<Pmu>, Error> {
        let dir = self.root.join(name);
        let type_path = dir.join("type");
        let type_ = match std::fs::read_to_string(&type_path) {
            Ok(s) => s.trim().parse::<u32>().map_err(|_| Error::Sysfs {
                path: type_path.display().to_string(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not a number"),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::Sysfs {
                    path: type_path.display().to_string(),
                    source,
                })
            }
        };
        let mut format = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(dir.join("format")) {
            for entry in entries.flatten() {
                let field = entry.file_name().to_string_lossy().into_owned();
                let text =
                    std::fs::read_to_string(entry.path()).map_err(|source| Error::Sysfs {
                        path: entry.path().display().to_string(),
                        source,
                    })?;
                let parsed = parse_format(&text).ok_or_else(|| Error::Sysfs {
                    path: entry.path().display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("unrecognised format {:?}", text.trim()),
                    ),
                })?;
                format.insert(field, parsed);
            }
        }
        Ok(Some(Pmu {
            name: name.to_string(),
            type_,
            format,
        }))
    }

    /// Names of every PMU, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Pmu {
    /// The single bit of a one-bit flag field such as kprobe's `retprobe` (`config:0`).
    pub fn flag_bit(&self, field: &str) -> Option<u32> {
        let f = self.format.get(field)?;
        match f.ranges.as_slice() {
            [(lo, hi)] if lo == hi && f.word == 0 => Some(*lo),
            _ => None,
        }
    }

    /// Encodes `field=value` terms (as in `pmu/event=0x3c,umask=1/`) into config words.
    pub fn encode(&self, terms: &[(String, u64)]) -> Result<[u64; 3], Error> {
        let mut words = [0u64; 3];
        for (name, value) in terms {
            let field = self.format.get(name).ok_or_else(|| Error::Invalid {
                what: format!("term '{name}' for PMU {}", self.name),
                reason: format!(
                    "the PMU's format has: {}",
                    self.format.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            })?;
            let mut rest = *value;
            for &(lo, hi) in &field.ranges {
                let width = hi - lo + 1;
                let mask = if width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                words[field.word as usize] |= (rest & mask) << lo;
                rest = if width >= 64 { 0 } else { rest >> width };
            }
            if rest != 0 {
                return Err(Error::Invalid {
                    what: format!("term '{name}={value:#x}' for PMU {}", self.name),
                    reason: "the value does not fit the field's bits".into(),
                });
            }
        }
        Ok(words)
    }
}

/// Parses a format file: `config:0`, `config:0-7`, `config1:0-31,40-47`.
pub fn parse_format(text: &str) -> Option<FormatField> {
    let (word, bits) = text.trim().split_once(':')?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return None,
    };
    let mut ranges = Vec::new();
    for part in bits.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse().ok()?, hi.parse().ok()?),
            None => {
                let bit = part.parse().ok()?;
                (bit, bit)
            }
        };
        if lo > hi || hi > 63 {
            return None;
        }
        ranges.push((lo, hi));
    }
    Some(FormatField { word, ranges })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let kprobe = dir.path().join("kprobe");
        std::fs::create_dir_all(kprobe.join("format")).unwrap();
        std::fs::write(kprobe.join("type"), "8\n").unwrap();
        std::fs::write(kprobe.join("format/retprobe"), "config:0\n").unwrap();
        let cpu = dir.path().join("cpu");
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(cpu.join("format/split"), "config1:0-3,8-11\n").unwrap();
        dir
    }

    #[test]
    fn reads_type_and_retprobe_bit() {
        let dir = fixture();
        let pmus = Pmus::at(dir.path());
        let kprobe = pmus.get("kprobe").unwrap().unwrap();
        assert_eq!(kprobe.type_, 8);
        assert_eq!(kprobe.flag_bit("retprobe"), Some(0));
        assert_eq!(pmus.get("uprobe").unwrap(), None);
        assert_eq!(pmus.names(), vec!["cpu".to_string(), "kprobe".to_string()]);
    }

    #[test]
    fn encodes_terms_into_config_words() {
        let dir = fixture();
        let cpu = Pmus::at(dir.path()).get("cpu").unwrap().unwrap();
        let words = cpu
            .encode(&[
                ("event".into(), 0x3c),
                ("umask".into(), 0x1),
                ("split".into(), 0xab),
            ])
            .unwrap();
        assert_eq!(words, [0x013c, 0x0a0b, 0]);
        assert!(cpu.encode(&[("event".into(), 0x100)]).is_err());
        assert!(cpu.encode(&[("nope".into(), 1)]).is_err());
    }

    #[test]
    fn format_parsing() {
        assert_eq!(parse_format("config:0").unwrap().ranges, vec![(0, 0)]);
        assert_eq!(parse_format("config2:3-9\n").unwrap().word, 2);
        assert!(parse_format("config:9-3").is_none());
        assert!(parse_format("config:0-64").is_none());
        assert!(parse_format("bogus:1").is_none());
        assert!(parse_format("config").is_none());
    }
}
