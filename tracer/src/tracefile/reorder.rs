//! Merges records from many per-CPU rings into one stream ordered by timestamp.
//!
//! Each ring is in time order on its own, but a drain reads the rings one after another, and a
//! record stamped just before a drain may still be on its way into another CPU's ring. So
//! records wait in a heap until they are older than the drain time minus a window; then they
//! leave in timestamp order. A record that arrives after a later-stamped one has already left
//! (its window closed) is emitted at once and counted as late: never silently misordered.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A record waiting for its turn: ordered by time, then by arrival.
struct Pending<T> {
    time_ns: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Pending<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.time_ns, self.seq) == (other.time_ns, other.seq)
    }
}
impl<T> Eq for Pending<T> {}
impl<T> PartialOrd for Pending<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Pending<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time_ns, self.seq).cmp(&(other.time_ns, other.seq))
    }
}

pub struct Reorder<T> {
    heap: BinaryHeap<Reverse<Pending<T>>>,
    window_ns: u64,
    seq: u64,
    /// The newest timestamp emitted so far.
    last_ns: u64,
    /// Records emitted after a later-stamped one.
    pub late: u64,
}

impl<T> Reorder<T> {
    pub fn new(window_ns: u64) -> Reorder<T> {
        Reorder {
            heap: BinaryHeap::new(),
            window_ns,
            seq: 0,
            last_ns: 0,
            late: 0,
        }
    }

    pub fn push(&mut self, time_ns: u64, item: T) {
        self.seq += 1;
        self.heap.push(Reverse(Pending {
            time_ns,
            seq: self.seq,
            item,
        }));
    }

    /// Hands `f` every record stamped before `now_ns - window`, oldest first.
    pub fn release(&mut self, now_ns: u64, f: impl FnMut(T)) {
        self.release_until(now_ns.saturating_sub(self.window_ns), f);
    }

    /// Hands `f` everything still waiting (the run ended: every ring was drained).
    pub fn finish(&mut self, f: impl FnMut(T)) {
        self.release_until(u64::MAX, f);
    }

    /// Hands `f` every record stamped at or before `limit`, oldest first.
    pub fn release_until(&mut self, limit: u64, mut f: impl FnMut(T)) {
        while self.heap.peek().is_some_and(|p| p.0.time_ns <= limit) {
            let Reverse(p) = self.heap.pop().expect("peeked");
            if p.time_ns < self.last_ns {
                self.late += 1;
            } else {
                self.last_ns = p.time_ns;
            }
            f(p.item);
        }
    }

    pub fn waiting(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn released(r: &mut Reorder<&'static str>, now: u64) -> Vec<&'static str> {
        let mut out = Vec::new();
        r.release(now, |x| out.push(x));
        out
    }

    #[test]
    fn records_leave_in_time_order_once_their_window_passed() {
        let mut r = Reorder::new(10);
        // Two rings drained one after the other: CPU 1's older record arrives second.
        r.push(105, "cpu0 b");
        r.push(100, "cpu0 a");
        r.push(103, "cpu1 a");
        r.push(120, "cpu1 b");
        assert_eq!(released(&mut r, 114), vec!["cpu0 a", "cpu1 a"]);
        assert_eq!(released(&mut r, 115), vec!["cpu0 b"]);
        assert_eq!(r.waiting(), 1);
        // Same timestamp: arrival order.
        r.push(120, "cpu0 c");
        let mut rest = Vec::new();
        r.finish(|x| rest.push(x));
        assert_eq!(rest, vec!["cpu1 b", "cpu0 c"]);
        assert_eq!(r.late, 0);
    }

    #[test]
    fn a_record_later_than_its_window_is_counted() {
        let mut r = Reorder::new(10);
        r.push(100, "a");
        assert_eq!(released(&mut r, 200), vec!["a"]);
        r.push(99, "late");
        r.push(150, "b");
        assert_eq!(released(&mut r, 200), vec!["late", "b"]);
        assert_eq!(r.late, 1);
    }
}
