//! The mmap ring of a perf event (perf_event_open(2), "MMAP layout"): 1 metadata page plus
//! 2^n data pages, read with the kernel's head/tail protocol.
#![allow(unsafe_code)]

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::Error;
use super::event::Event;
use super::record::Header;
use super::sys::{self, Mapping};

/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// What a drain found besides records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Records handed to the callback.
    pub records: u64,
    /// Bytes consumed.
    pub bytes: u64,
    /// Set when a header was impossible (size < 8 or beyond the head): the rest of the
    /// available data was skipped, because record boundaries can no longer be trusted.
    pub corrupt: bool,
}

/// A perf event with its mapped ring, read in batches.
pub struct Ring {
    event: Event,
    map: Mapping,
    data_offset: usize,
    data_size: usize,
    /// Scratch space for records that wrap around the end of the data area.
    scratch: Vec<u8>,
}

impl Ring {
    /// Maps `1 + data_pages` pages of `event`; `data_pages` must be a power of two.
    pub fn new(event: Event, data_pages: usize) -> Result<Ring, Error> {
        if !data_pages.is_power_of_two() {
            return Err(Error::Invalid {
                what: format!("ring size for {}", event.name()),
                reason: format!("{data_pages} data pages is not a power of two"),
            });
        }
        let page = sys::page_size();
        let len = (1 + data_pages) * page;
        let map = Mapping::new(event.as_fd(), len).map_err(|source| Error::Mmap {
            event: event.name().to_string(),
            pages: data_pages,
            source,
        })?;
        // SAFETY: the metadata page is at least 4096 bytes and these u64 fields sit at fixed,
        // 8-byte-aligned offsets inside it. Kernels before 4.1 leave data_offset/data_size 0.
        let (offset, size) = unsafe {
            let base = map.as_ptr();
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET).cast::<u64>()) as usize,
                std::ptr::read_volatile(base.add(DATA_SIZE).cast::<u64>()) as usize,
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, data_pages * page)
        } else {
            (offset, size)
        };
        Ok(Ring {
            event,
            map,
            data_offset,
            data_size,
            scratch: Vec::new(),
        })
    }

    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Bytes in the data area.
    pub fn capacity(&self) -> usize {
        self.data_size
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head is an 8-byte-aligned u64 in the mapped metadata page, which lives as
        // long as `self.map`; the kernel updates it concurrently, hence the atomic view.
        unsafe { &*self.map.as_ptr().add(DATA_HEAD).cast::<AtomicU64>() }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`; only this reader writes data_tail.
        unsafe { &*self.map.as_ptr().add(DATA_TAIL).cast::<AtomicU64>() }
    }

    /// Bytes written by the kernel and not yet consumed.
    pub fn pending(&self) -> u64 {
        let head = self.head().load(Ordering::Acquire);
        head.wrapping_sub(self.tail().load(Ordering::Relaxed))
    }

    /// Hands every complete record available now to `f` (as the whole record, header
    /// included), then publishes the new tail once. Records that wrap the end of the data area
    /// are copied into a scratch buffer first, so `f` always sees contiguous bytes.
    pub fn drain(&mut self, f: impl FnMut(&[u8])) -> DrainStats {
        // Acquire pairs with the kernel's store of data_head after it wrote the records
        // (perf_event_open(2): "the user-space reader should issue an rmb() after reading
        // data_head"), so the record bytes below are visible.
        let head = self.head().load(Ordering::Acquire);
        let tail = self.tail().load(Ordering::Relaxed);
        // SAFETY: [data_offset, data_offset + data_size) lies inside the mapping; bytes between
        // tail and head are complete records the kernel will not touch until tail moves past them.
        let data = unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(self.data_offset), self.data_size)
        };
        let (tail, stats) = drain_region(data, head, tail, &mut self.scratch, f);
        // Release orders our reads of the records before the kernel sees the space as free
        // ("issue an smp_mb() before writing data_tail").
        self.tail().store(tail, Ordering::Release);
        stats
    }
}

/// The ring protocol over a data area whose size is a power of two: hands each complete
/// record between `tail` and `head` (free-running byte counters) to `f` and returns the new
/// tail. A header that cannot be right (size < 8, not a multiple of 8, or beyond `head`) makes
/// the rest unreadable: it is skipped and `corrupt` set, never read out of bounds.
pub fn drain_region(
    data: &[u8],
    head: u64,
    mut tail: u64,
    scratch: &mut Vec<u8>,
    mut f: impl FnMut(&[u8]),
) -> (u64, DrainStats) {
    let mut stats = DrainStats::default();
    let size_total = data.len();
    if size_total == 0
        || !size_total.is_power_of_two()
        || head.wrapping_sub(tail) > size_total as u64
    {
        stats.corrupt = head != tail;
        return (head, stats);
    }
    let mask = (size_total - 1) as u64;
    while tail != head {
        let available = head.wrapping_sub(tail);
        let start = (tail & mask) as usize;
        // Headers are 8-byte aligned and the area is a multiple of 8: a header never wraps.
        let size = Header::parse(&data[start..]).map_or(0, |h| h.size as usize);
        if size < Header::SIZE || size as u64 > available || !size.is_multiple_of(8) {
            stats.corrupt = true;
            tail = head;
            break;
        }
        if start + size <= size_total {
            f(&data[start..start + size]);
        } else {
            let first = size_total - start;
            scratch.clear();
            scratch.extend_from_slice(&data[start..]);
            scratch.extend_from_slice(&data[..size - first]);
            f(scratch);
        }
        tail = tail.wrapping_add(size as u64);
        stats.records += 1;
        stats.bytes += size as u64;
    }
    (tail, stats)
}

impl AsFd for Ring {
    /// The event fd: readable (POLLIN) when the ring has reached its wakeup threshold.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.event.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes records of the given sizes (type = index) into a ring area starting at byte
    /// counter `start`, the way the kernel does; returns the new head.
    fn write(data: &mut [u8], start: u64, sizes: &[u16]) -> u64 {
        let mask = data.len() as u64 - 1;
        let mut head = start;
        for (i, &size) in sizes.iter().enumerate() {
            let mut record = vec![0xabu8; size as usize];
            record[0..4].copy_from_slice(&(i as u32).to_ne_bytes());
            record[4..6].copy_from_slice(&0u16.to_ne_bytes());
            record[6..8].copy_from_slice(&size.to_ne_bytes());
            for (j, b) in record.iter().enumerate() {
                data[(head.wrapping_add(j as u64) & mask) as usize] = *b;
            }
            head = head.wrapping_add(size as u64);
        }
        head
    }

    #[test]
    fn records_wrapping_the_end_arrive_whole_and_in_order() {
        let mut data = vec![0u8; 64];
        let mut scratch = Vec::new();
        // Start near the end so the second record straddles it; counters far from zero.
        let tail = u64::MAX - 23;
        let head = write(&mut data, tail, &[16, 24, 16]);
        let mut seen = Vec::new();
        let (new_tail, stats) = drain_region(&data, head, tail, &mut scratch, |r| {
            seen.push((
                u32::from_ne_bytes(r[0..4].try_into().unwrap()),
                r.len(),
                r[8..].iter().all(|&b| b == 0xab),
            ))
        });
        assert_eq!(seen, vec![(0, 16, true), (1, 24, true), (2, 16, true)]);
        assert_eq!(new_tail, head);
        assert_eq!(
            stats,
            DrainStats {
                records: 3,
                bytes: 56,
                corrupt: false
            }
        );
    }

    #[test]
    fn impossible_headers_skip_the_rest_without_reading_out_of_bounds() {
        let mut data = vec![0u8; 64];
        let mut scratch = Vec::new();
        let head = write(&mut data, 0, &[16]);
        // A header claiming more than is available.
        data[6..8].copy_from_slice(&40u16.to_ne_bytes());
        let (tail, stats) = drain_region(&data, head, 0, &mut scratch, |_| panic!("no record"));
        assert_eq!((tail, stats.corrupt, stats.records), (head, true, 0));
        // Size 0 and a misaligned size.
        for bad in [0u16, 12] {
            data[6..8].copy_from_slice(&bad.to_ne_bytes());
            let (_, stats) = drain_region(&data, head, 0, &mut scratch, |_| panic!("no record"));
            assert!(stats.corrupt);
        }
        // head more than a whole ring ahead of tail.
        let (tail, stats) = drain_region(&data, 1000, 0, &mut scratch, |_| panic!("no record"));
        assert_eq!((tail, stats.corrupt), (1000, true));
    }
}
