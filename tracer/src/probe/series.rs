//! The label sets of one exported metric over time (`tracer serve`): which are exported (at
//! most the metric's cap; those past it are refused and counted once each), and which have not
//! changed for the idle timeout (an exited process's), to be dropped and their cells freed.

use std::time::{Duration, Instant};

use hashbrown::HashMap;

/// Where a label set stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Exported,
    /// Past the cap when it appeared: counted in `dropped`, not exported.
    Refused,
    /// Idle past the timeout: not exported; its cells are being freed. Seen again with the same
    /// total (a cell the kernel still holds), it stays retired; with another, it comes back.
    Retired,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    total: u64,
    changed: Instant,
    state: State,
    seen: bool,
}

/// The label sets of one metric.
#[derive(Debug)]
pub struct SeriesTable {
    max: usize,
    idle: Duration,
    entries: HashMap<Vec<String>, Entry>,
    exported: usize,
    dropped: u64,
}

impl SeriesTable {
    pub fn new(max: usize, idle: Duration) -> SeriesTable {
        SeriesTable {
            max,
            idle,
            entries: HashMap::new(),
            exported: 0,
            dropped: 0,
        }
    }

    /// Label sets refused by the cap since the start, each counted once.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Label sets exported now.
    pub fn exported(&self) -> usize {
        self.exported
    }

    /// Takes one read of the metric at `now`: every label set with its total (any number that
    /// grows with each hit). Label sets not in it are forgotten (their cells are gone).
    pub fn update<'a>(
        &mut self,
        now: Instant,
        read: impl IntoIterator<Item = (&'a [String], u64)>,
    ) {
        for entry in self.entries.values_mut() {
            entry.seen = false;
        }
        for (labels, total) in read {
            match self.entries.get_mut(labels) {
                Some(entry) => {
                    entry.seen = true;
                    if entry.total == total {
                        continue;
                    }
                    entry.total = total;
                    entry.changed = now;
                    match entry.state {
                        State::Exported => {}
                        State::Refused if self.exported < self.max => {
                            entry.state = State::Exported;
                            self.exported += 1;
                        }
                        State::Refused => {}
                        State::Retired => {
                            entry.state = admit(&mut self.exported, &mut self.dropped, self.max);
                        }
                    }
                }
                None => {
                    let state = admit(&mut self.exported, &mut self.dropped, self.max);
                    self.entries.insert(
                        labels.to_vec(),
                        Entry {
                            total,
                            changed: now,
                            state,
                            seen: true,
                        },
                    );
                }
            }
        }
        let exported = &mut self.exported;
        self.entries.retain(|_, e| {
            if !e.seen && e.state == State::Exported {
                *exported -= 1;
            }
            e.seen
        });
    }

    /// Retires label sets unchanged for the idle timeout at `now`, and returns every retired
    /// label set still read (their cells are to be freed).
    pub fn expire(&mut self, now: Instant) -> Vec<Vec<String>> {
        let mut retired = Vec::new();
        for (labels, entry) in self.entries.iter_mut() {
            if entry.state != State::Retired && now.duration_since(entry.changed) >= self.idle {
                if entry.state == State::Exported {
                    self.exported -= 1;
                }
                entry.state = State::Retired;
            }
            if entry.state == State::Retired {
                retired.push(labels.clone());
            }
        }
        retired
    }

    /// Whether `labels` is exported.
    pub fn is_exported(&self, labels: &[String]) -> bool {
        self.entries
            .get(labels)
            .is_some_and(|e| e.state == State::Exported)
    }
}

/// A label set that appears (or comes back): exported while there is room, else refused and
/// counted.
fn admit(exported: &mut usize, dropped: &mut u64, max: usize) -> State {
    match *exported < max {
        true => {
            *exported += 1;
            State::Exported
        }
        false => {
            *dropped += 1;
            State::Refused
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(name: &str) -> Vec<String> {
        vec![name.to_string()]
    }

    #[test]
    fn the_cap_refuses_and_counts_each_label_set_once() {
        let t0 = Instant::now();
        let mut table = SeriesTable::new(2, Duration::from_secs(60));
        let (a, b, c) = (labels("a"), labels("b"), labels("c"));
        table.update(t0, [(&a[..], 1), (&b[..], 1), (&c[..], 1)]);
        assert_eq!((table.exported(), table.dropped()), (2, 1));
        let refused = [&a, &b, &c]
            .iter()
            .filter(|l| !table.is_exported(l))
            .count();
        assert_eq!(refused, 1);
        // Read again, changed or not: still one refused label set.
        table.update(t0, [(&a[..], 2), (&b[..], 2), (&c[..], 2)]);
        assert_eq!((table.exported(), table.dropped()), (2, 1));
    }

    #[test]
    fn idle_label_sets_retire_and_come_back_when_they_count_again() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(60);
        let mut table = SeriesTable::new(10, idle);
        let (a, b) = (labels("a"), labels("b"));
        table.update(t0, [(&a[..], 5), (&b[..], 5)]);
        let t1 = t0 + Duration::from_secs(30);
        table.update(t1, [(&a[..], 5), (&b[..], 6)]);
        assert!(table.expire(t1).is_empty());
        let t2 = t0 + idle;
        // a has not changed for the timeout: retired; b changed at t1.
        assert_eq!(table.expire(t2), std::slice::from_ref(&a));
        assert!(!table.is_exported(&a) && table.is_exported(&b));
        assert_eq!(table.exported(), 1);
        // Its cell still there, unchanged: still retired, and handed out again to be freed.
        table.update(t2, [(&a[..], 5), (&b[..], 6)]);
        assert!(!table.is_exported(&a));
        assert_eq!(table.expire(t2), std::slice::from_ref(&a));
        // Freed: forgotten. Counting again later: a new series.
        table.update(t2, [(&b[..], 6)]);
        assert!(table.expire(t2).is_empty());
        table.update(t2, [(&a[..], 1), (&b[..], 6)]);
        assert!(table.is_exported(&a));
        assert_eq!((table.exported(), table.dropped()), (2, 0));
    }

    #[test]
    fn a_retired_label_set_makes_room_under_the_cap() {
        let t0 = Instant::now();
        let mut table = SeriesTable::new(1, Duration::from_secs(1));
        let (a, b) = (labels("a"), labels("b"));
        table.update(t0, [(&a[..], 1), (&b[..], 1)]);
        assert!(table.is_exported(&a) && !table.is_exported(&b));
        let t1 = t0 + Duration::from_secs(1);
        table.expire(t1);
        table.update(t1, [(&b[..], 2)]);
        assert!(table.is_exported(&b));
        assert_eq!((table.exported(), table.dropped()), (1, 1));
    }
}
