//! What was read of a file (its symbols, its line tables), shared by every process that maps
//! it, and let go once no process has used it for a while: a profile of a machine that runs
//! a compiler now and then keeps the compiler's 150 MB library's symbols only while it runs
//! (each build's new binaries, too, would otherwise stay for the whole run).

use std::hash::Hash;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// `None` values are files that could not be read: tried again once swept.
pub struct FileCache<K, T> {
    entries: hashbrown::HashMap<K, Entry<T>>,
}

struct Entry<T> {
    value: Option<Rc<T>>,
    /// Since when neither a process held it nor a lookup asked for it, as sweeps saw it
    /// (`None`: held or asked for since the last sweep).
    unused_since: Option<Instant>,
}

impl<K, T> Default for FileCache<K, T> {
    fn default() -> Self {
        FileCache {
            entries: hashbrown::HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, T> FileCache<K, T> {
    /// The value read for `key`, if it was; a lookup counts as a use.
    pub fn get(&mut self, key: &K) -> Option<Option<Rc<T>>> {
        let entry = self.entries.get_mut(key)?;
        entry.unused_since = None;
        Some(entry.value.clone())
    }

    /// The value for `key`, read by `read` when it was not (or was swept).
    pub fn get_or_read(&mut self, key: K, read: impl FnOnce() -> Option<T>) -> Option<Rc<T>> {
        if let Some(value) = self.get(&key) {
            return value;
        }
        let value = read().map(Rc::new);
        self.insert(key, value.clone());
        value
    }

    pub fn insert(&mut self, key: K, value: Option<Rc<T>>) {
        let unused_since = None;
        self.entries.insert(
            key,
            Entry {
                value,
                unused_since,
            },
        );
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        self.entries.len()
    }

    /// Drops what only the cache has held, and no lookup asked for, for `after` or longer
    /// (at a sweep, such a value starts its wait; one held or asked for again stops it).
    pub fn sweep(&mut self, now: Instant, after: Duration) {
        self.entries.retain(|_, entry| {
            let held = (entry.value.as_ref()).is_some_and(|v| Rc::strong_count(v) > 1);
            if held {
                entry.unused_since = None;
                return true;
            }
            let since = *entry.unused_since.get_or_insert(now);
            now.duration_since(since) < after
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_no_process_holds_goes_after_a_while() {
        let mut cache: FileCache<u32, String> = FileCache::default();
        let held = Rc::new("libc".to_string());
        cache.insert(1, Some(Rc::clone(&held)));
        cache.insert(2, Some(Rc::new("cc1".into())));
        cache.insert(3, None);
        let start = Instant::now();
        let minute = Duration::from_secs(60);
        cache.sweep(start, minute);
        assert_eq!(cache.count(), 3, "nothing waited a minute yet");
        cache.sweep(start + Duration::from_secs(59), minute);
        assert_eq!(cache.count(), 3);
        // Taken again by a new process before its minute ended: its wait starts over.
        let again = cache.get(&2).unwrap();
        cache.sweep(start + Duration::from_secs(59), minute);
        cache.sweep(start + Duration::from_secs(60), minute);
        assert_eq!(
            cache.count(),
            2,
            "the file that could not be read is tried again"
        );
        drop(again);
        cache.sweep(start + Duration::from_secs(61), minute);
        cache.sweep(start + Duration::from_secs(120), minute);
        assert_eq!(cache.count(), 2);
        cache.sweep(start + Duration::from_secs(121), minute);
        assert_eq!(cache.count(), 1);
        // Asked for between sweeps, though held by no process: a use.
        let read = cache.get_or_read(4, || Some("eh_frame".to_string()));
        drop(read);
        cache.sweep(start + Duration::from_secs(130), minute);
        // Asked for again before its minute ended: the wait starts at the next sweep.
        assert_eq!(
            cache.get(&4).unwrap().as_deref(),
            Some(&"eh_frame".to_string())
        );
        cache.sweep(start + Duration::from_secs(189), minute);
        cache.sweep(start + Duration::from_secs(248), minute);
        assert_eq!(cache.count(), 2);
        cache.sweep(start + Duration::from_secs(249), minute);
        assert_eq!(cache.count(), 1);
        assert_eq!(cache.get(&1).unwrap().as_deref(), Some(&"libc".to_string()));
        drop(held);
    }
}
