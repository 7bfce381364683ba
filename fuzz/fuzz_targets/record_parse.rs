//! `record::parse` on any bytes with any layout: it must return an error, never panic or read
//! out of bounds.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tracer_fuzz::perf::record::{self, Header};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(layout) = tracer_fuzz::layout(&mut u) else {
        return;
    };
    let bytes = u.take_rest();
    if let Ok(parsed) = record::parse(bytes, &layout) {
        // A record it accepts is one whose header fits the input.
        let size = usize::from(parsed.header.size);
        assert!(
            size >= Header::SIZE && size <= bytes.len(),
            "accepted size {size}"
        );
    }
});
