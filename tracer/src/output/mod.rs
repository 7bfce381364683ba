//! Rendering: data model in, text or JSON out. Data goes to stdout, banners to stderr.

pub mod counts;
pub mod events;
pub mod features;
pub mod hist;
pub mod latency;
pub mod list;
pub mod notes;
pub mod perfetto;
pub mod report;
pub mod stack;
pub mod stat;
pub mod summary;
pub mod timeline;
pub mod watch;

use std::io::Write;

use crate::Error;

/// Writes `text` to stdout; a closed pipe becomes an [`Error::Output`] that exits 0.
pub fn write_stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Output)
}
