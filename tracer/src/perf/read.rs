//! Decoding what read(2) returns for each `read_format` (perf_event_open(2), "Reading results").

use super::attr::format;

/// One counter's value as read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Value {
    pub value: u64,
    /// `PERF_FORMAT_ID`.
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`: samples lost by this event.
    pub lost: Option<u64>,
}

/// A decoded read(): one value, or the leader's whole group in open order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`, nanoseconds.
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`, nanoseconds.
    pub time_running: Option<u64>,
    pub values: Vec<Value>,
}

impl Counts {
    /// Fraction of the enabled time the counter was on the PMU (1.0 when times were not read or
    /// the event was never enabled).
    pub fn running_fraction(&self) -> f64 {
        match (self.time_enabled, self.time_running) {
            (Some(enabled), Some(running)) if enabled > 0 => running as f64 / enabled as f64,
            _ => 1.0,
        }
    }

    /// `value * time_enabled / time_running`: the multiplexing estimate perf stat prints.
    /// `None` when the counter never ran (perf stat's `<not counted>`).
    pub fn scaled(&self, index: usize) -> Option<u64> {
        let raw = self.values.get(index)?.value;
        match (self.time_enabled, self.time_running) {
            (Some(_), Some(0)) => None,
            (Some(enabled), Some(running)) if running < enabled => {
                Some((raw as u128 * enabled as u128 / running as u128) as u64)
            }
            _ => Some(raw),
        }
    }
}

/// Bytes read() may return for `read_format` and `events` counters (1 without GROUP).
pub fn buffer_size(read_format: u64, events: usize) -> usize {
    let per_value = 1
        + usize::from(read_format & format::ID != 0)
        + usize::from(read_format & format::LOST != 0);
    let times = usize::from(read_format & format::TOTAL_TIME_ENABLED != 0)
        + usize::from(read_format & format::TOTAL_TIME_RUNNING != 0);
    let words = if read_format & format::GROUP != 0 {
        1 + times + per_value * events
    } else {
        per_value + times
    };
    words * 8
}

/// Decodes `bytes` per `read_format`; `None` if they are shorter than the layout requires.
pub fn decode(read_format: u64, bytes: &[u8]) -> Option<Counts> {
    let mut words = bytes
        .chunks_exact(8)
        .map(|w| u64::from_ne_bytes(w.try_into().expect("chunks_exact(8)")));
    let mut next = || words.next();
    let has = |bit| read_format & bit != 0;
    let mut counts = Counts::default();
    let value = |next: &mut dyn FnMut() -> Option<u64>, first: Option<u64>| -> Option<Value> {
        let value = match first {
            Some(v) => v,
            None => next()?,
        };
        Some(Value {
            value,
            id: if has(format::ID) { Some(next()?) } else { None },
            lost: if has(format::LOST) {
                Some(next()?)
            } else {
                None
            },
        })
    };
    if has(format::GROUP) {
        let nr = next()?;
        if has(format::TOTAL_TIME_ENABLED) {
            counts.time_enabled = Some(next()?);
        }
        if has(format::TOTAL_TIME_RUNNING) {
            counts.time_running = Some(next()?);
        }
        for _ in 0..nr {
            counts.values.push(value(&mut next, None)?);
        }
    } else {
        // Single value: value, time_enabled, time_running, id, lost.
        let raw = next()?;
        if has(format::TOTAL_TIME_ENABLED) {
            counts.time_enabled = Some(next()?);
        }
        if has(format::TOTAL_TIME_RUNNING) {
            counts.time_running = Some(next()?);
        }
        counts.values.push(value(&mut next, Some(raw))?);
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn every_read_format_combination_decodes() {
        // All 32 combinations of the five bits, for a group of 2 and a single counter.
        for rf in 0..32u64 {
            let times = [
                (format::TOTAL_TIME_ENABLED, 1000u64),
                (format::TOTAL_TIME_RUNNING, 500),
            ];
            let extra = |base: u64| {
                let mut v = vec![base];
                if rf & format::ID != 0 {
                    v.push(base + 1);
                }
                if rf & format::LOST != 0 {
                    v.push(base + 2);
                }
                v
            };
            let mut words = Vec::new();
            let group = rf & format::GROUP != 0;
            if group {
                words.push(2);
                for (bit, t) in times {
                    if rf & bit != 0 {
                        words.push(t);
                    }
                }
                words.extend(extra(10));
                words.extend(extra(20));
            } else {
                words.push(10);
                for (bit, t) in times {
                    if rf & bit != 0 {
                        words.push(t);
                    }
                }
                words.extend(&extra(10)[1..]);
            }
            let n = if group { 2 } else { 1 };
            assert_eq!(buffer_size(rf, n), words.len() * 8, "size for {rf:#b}");
            let counts = decode(rf, &bytes(&words)).expect("decodes");
            assert_eq!(counts.values.len(), n);
            assert_eq!(counts.values[0].value, 10);
            assert_eq!(counts.values[0].id, (rf & format::ID != 0).then_some(11));
            assert_eq!(
                counts.values[0].lost,
                (rf & format::LOST != 0).then_some(12)
            );
            if group {
                assert_eq!(counts.values[1].value, 20);
            }
            assert_eq!(
                counts.time_enabled,
                (rf & format::TOTAL_TIME_ENABLED != 0).then_some(1000)
            );
            assert_eq!(
                counts.time_running,
                (rf & format::TOTAL_TIME_RUNNING != 0).then_some(500)
            );
            // Truncated input is an error, never a panic.
            let all = bytes(&words);
            assert!(
                decode(rf, &all[..all.len() - 8]).is_none(),
                "truncated {rf:#b}"
            );
        }
    }

    #[test]
    fn multiplexed_counts_are_scaled() {
        let counts = Counts {
            time_enabled: Some(1000),
            time_running: Some(250),
            values: vec![Value {
                value: 100,
                ..Value::default()
            }],
        };
        assert_eq!(counts.scaled(0), Some(400));
        assert_eq!(counts.running_fraction(), 0.25);
        let never = Counts {
            time_running: Some(0),
            ..counts.clone()
        };
        assert_eq!(never.scaled(0), None);
        let full = Counts {
            time_running: Some(1000),
            ..counts
        };
        assert_eq!(full.scaled(0), Some(100));
    }
}
