//! One lifecycle for every command: launch or adopt the target, attach, run the event loop,
//! stop, drain, and say why the run ended. Also what a run owns: the attached events (closing
//! them detaches) and the output rings, drained with every loss counted.

mod attached;
mod event_loop;
mod lifecycle;
pub mod recorder;
mod rings;
pub mod side;

pub use attached::Attached;
pub use event_loop::{monotonic_ns, readable, End, EventLoop, Signals, Sink};
pub use lifecycle::{alive, Hold, Outcome, Session};
pub use rings::{
    default_ring_pages, default_shared_ring_pages, quarter_full, ringbuf_size, Losses, OutputRings,
    Transport,
};
