//! CPU lists as sysfs and users write them (`0-3,5,7-8`).

use super::error::Error;

/// Parses a CPU list such as `0-3,5`; sorted, without duplicates.
pub fn parse_list(text: &str) -> Result<Vec<u32>, Error> {
    let invalid = |reason: String| Error::Invalid {
        what: format!("CPU list '{}'", text.trim()),
        reason,
    };
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo, hi),
            None => (part, part),
        };
        let lo: u32 = lo
            .trim()
            .parse()
            .map_err(|_| invalid(format!("'{part}' is not a CPU number or range")))?;
        let hi: u32 = hi
            .trim()
            .parse()
            .map_err(|_| invalid(format!("'{part}' is not a CPU number or range")))?;
        if lo > hi {
            return Err(invalid(format!("range '{part}' runs backwards")));
        }
        if hi - lo > 65_535 {
            return Err(invalid(format!("range '{part}' is too large")));
        }
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        return Err(invalid("no CPUs listed".into()));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// CPUs that are online now (`/sys/devices/system/cpu/online`).
pub fn online() -> Result<Vec<u32>, Error> {
    let path = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(path).map_err(|source| Error::Sysfs {
        path: path.into(),
        source,
    })?;
    parse_list(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_list("0-3,5\n").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_list("1,1,0").unwrap(), vec![0, 1]);
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("a").is_err());
        assert!(parse_list("").is_err());
        assert!(parse_list("0-4294967295").is_err());
    }
}
