//! `ring::drain_region` over any data area, head and tail: it must never panic, and every
//! record it hands out must be whole (8-byte multiple, as long as its header says, the bytes
//! the ring holds at that position). Each record then goes through `record::parse`.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tracer_fuzz::perf::record::{self, ParseError};
use tracer_fuzz::perf::ring;

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(layout) = tracer_fuzz::layout(&mut u) else {
        return;
    };
    let (Ok(mode), Ok(tail), Ok(head)) = (
        u.arbitrary::<u8>(),
        u.arbitrary::<u64>(),
        u.arbitrary::<u64>(),
    ) else {
        return;
    };
    let mut data = u.take_rest();
    // Random lengths and counters are almost never a valid ring, so the mode byte can make
    // them one: a power-of-two area, and head at most one area ahead of tail.
    if mode & 1 != 0 && !data.is_empty() {
        data = &data[..1 << data.len().ilog2()];
    }
    let head = if mode & 2 != 0 {
        tail.wrapping_add(head % (data.len() as u64 + 1))
    } else {
        head
    };

    let mut scratch = Vec::new();
    let mut pos = tail;
    let (mut records, mut bytes) = (0u64, 0u64);
    let (new_tail, stats) = ring::drain_region(data, head, tail, &mut scratch, |r| {
        let len = r.len();
        assert!(len >= 8, "record of {len} bytes");
        assert_eq!(len % 8, 0, "record of {len} bytes");
        let size = u16::from_ne_bytes([r[6], r[7]]);
        assert_eq!(len, usize::from(size), "record length vs header size");
        // Records come from the ring in order, wrapped or not, byte for byte.
        let mask = data.len() as u64 - 1;
        for (i, &b) in r.iter().enumerate() {
            let at = (pos.wrapping_add(i as u64) & mask) as usize;
            assert_eq!(b, data[at], "record byte {i} differs from ring byte {at}");
        }
        pos = pos.wrapping_add(len as u64);
        records += 1;
        bytes += len as u64;
        // Whatever the body, a record whose size matches its length is never a BadSize.
        if let Err(err @ ParseError::BadSize { .. }) = record::parse(r, &layout) {
            panic!("drained record rejected: {err}");
        }
    });
    // All available bytes are consumed or skipped as corrupt.
    assert_eq!(new_tail, head);
    assert_eq!((stats.records, stats.bytes), (records, bytes));
    if !stats.corrupt {
        assert_eq!(bytes, head.wrapping_sub(tail));
    }
});
