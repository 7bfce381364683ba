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
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> DrainStats {
        // Acquire pairs with the kernel's store of data_head after it wrote the records
        // (perf_event_open(2): "the user-space reader should issue an rmb() after reading
        // data_head"), so the record bytes below are visible.
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        let mut stats = DrainStats::default();
        let mask = (self.data_size - 1) as u64;
        // SAFETY: [data_offset, data_offset + data_size) lies inside the mapping; bytes between
        // tail and head are complete records the kernel will not touch until tail moves past them.
        let data = unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(self.data_offset), self.data_size)
        };
        while tail != head {
            let available = head.wrapping_sub(tail);
            let start = (tail & mask) as usize;
            // Headers are 8-byte aligned and data_size is a multiple of 8: a header never wraps.
            let header = Header::parse(&data[start..]);
            let size = header.map_or(0, |h| h.size as usize);
            if size < Header::SIZE || size as u64 > available || size % 8 != 0 {
                stats.corrupt = true;
                tail = head;
                break;
            }
            if start + size <= self.data_size {
                f(&data[start..start + size]);
            } else {
                let first = self.data_size - start;
                self.scratch.clear();
                self.scratch.extend_from_slice(&data[start..]);
                self.scratch.extend_from_slice(&data[..size - first]);
                f(&self.scratch);
            }
            tail = tail.wrapping_add(size as u64);
            stats.records += 1;
            stats.bytes += size as u64;
        }
        // Release orders our reads of the records before the kernel sees the space as free
        // ("issue an smp_mb() before writing data_tail").
        self.tail().store(tail, Ordering::Release);
        stats
    }
}

impl AsFd for Ring {
    /// The event fd: readable (POLLIN) when the ring has reached its wakeup threshold.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.event.as_fd()
    }
}

#[cfg(test)]
mod tests {
    // The ring protocol is exercised against the real kernel in tests/perf_host.rs
    // (BPF_OUTPUT records, wraparound with a 1-page ring, LOST records); the pure
    // wraparound copy is tested here through a fake mapping-free model.
    use super::super::record::Header;

    /// The wrap arithmetic `drain` uses, on a plain buffer.
    fn split_copy(data: &[u8], start: usize, size: usize) -> Vec<u8> {
        if start + size <= data.len() {
            data[start..start + size].to_vec()
        } else {
            let first = data.len() - start;
            let mut v = data[start..].to_vec();
            v.extend_from_slice(&data[..size - first]);
            v
        }
    }

    #[test]
    fn wrapped_record_is_reassembled() {
        let mut data = vec![0u8; 64];
        // A 24-byte record starting at offset 48 wraps after 16 bytes.
        let record: Vec<u8> = (0..24u8).collect();
        data[48..].copy_from_slice(&record[..16]);
        data[..8].copy_from_slice(&record[16..]);
        assert_eq!(split_copy(&data, 48, 24), record);
        assert!(Header::parse(&data[48..]).is_some());
    }
}
