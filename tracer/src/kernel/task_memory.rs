//! A task's user memory, read from outside through `/proc/TID/mem` (proc(5); needs ptrace
//! read access, which root has). `tracer trace` reads there what a call still in flight was
//! given (its path, its buffer, its structures), which the BPF programs read only when the
//! call returns.

use std::fs::File;
use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;

/// An open `/proc/TID/mem`.
pub struct TaskMemory(File);

impl TaskMemory {
    /// The memory of task `tid`; `None` when it is gone or may not be read.
    pub fn open(tid: u32) -> Option<TaskMemory> {
        File::open(format!("/proc/{tid}/mem")).ok().map(TaskMemory)
    }

    /// Up to `len` bytes from `addr`: as many as are mapped from there on (a read stops at
    /// the first page that is not), none for an address that is not.
    pub fn bytes(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        let mut done = 0;
        while done < len {
            let at = addr.wrapping_add(done as u64);
            // One page at a time: a read that crosses into an unmapped page fails whole.
            let room = (PAGE - at % PAGE) as usize;
            let end = len.min(done + room);
            match self.0.read_at(&mut out[done..end], at) {
                Ok(0) | Err(_) => break,
                Ok(n) => done += n,
            }
        }
        out.truncate(done);
        out
    }

    /// The NUL-ended string at `addr`, without its NUL, at most `max` bytes, and whether it
    /// was longer; `None` when its first byte cannot be read, or its end (within `max`)
    /// cannot.
    pub fn string(&self, addr: u64, max: usize) -> Option<(Vec<u8>, bool)> {
        let mut out = Vec::new();
        loop {
            let at = addr.wrapping_add(out.len() as u64);
            let room = (PAGE - at % PAGE) as usize;
            let chunk = self.bytes(at, room.min(max + 1 - out.len()));
            if chunk.is_empty() {
                return None;
            }
            if let Some(nul) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..nul]);
                return Some((out, false));
            }
            out.extend_from_slice(&chunk);
            if out.len() > max {
                out.truncate(max);
                return Some((out, true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_bytes_read_as_they_are_in_memory() {
        let mem = TaskMemory::open(std::process::id()).expect("this process's memory");
        // A string that ends on a page's last byte, and one cut at `max`.
        let mut page = vec![b'x'; 4 * PAGE as usize];
        let base = page.as_mut_ptr() as u64;
        // At least 8191 bytes into the buffer, and in it.
        let end_of_page = (base / PAGE + 3) * PAGE - 1;
        let at = |addr: u64| (addr - base) as usize;
        page[at(end_of_page)] = 0;
        let start = end_of_page - 5000;
        let (text, cut) = mem.string(start, 6000).expect("readable");
        assert_eq!((text.len(), cut), (5000, false));
        let (text, cut) = mem.string(start, 100).expect("readable");
        assert_eq!((text.len(), cut), (100, true));
        assert_eq!(mem.bytes(start, 7), vec![b'x'; 7]);
        // Nothing is mapped at page 0.
        assert_eq!(mem.string(16, 10), None);
        assert!(mem.bytes(16, 10).is_empty());
    }
}
