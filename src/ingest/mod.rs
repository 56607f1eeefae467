//! UDP ingest: VMC and Face Cap over OSC decoded into `FaceFrame`s; bad packets counted, never fatal.
//!
//! - [`Decoder`] (decoder.rs) is pure: one datagram in, committed frames out through a callback,
//!   with bounded per-sender state. The protocol parsers live in vmc.rs and facecap.rs, strict
//!   OSC decoding in osc.rs, and every axis/sign convention in one table in [`axes`].
//! - [`spawn`] (server.rs) runs the `facewire-ingest` thread: a current-thread tokio runtime that
//!   receives on every configured UDP address and feeds one decoder.
//! - [`Stats`] (stats.rs) counts every datagram exactly once; see its identities.

pub mod axes;
mod decoder;
mod facecap;
mod osc;
mod server;
mod stats;
mod vmc;

pub use decoder::{DatagramClass, Decoder, Outcome, MAX_DATAGRAM, MAX_SENDERS};
pub use osc::MAX_BUNDLE_DEPTH;
pub use server::{
    spawn, FrameSink, IngestConfig, IngestError, IngestHandle, DEFAULT_PORT, TICK_PERIOD,
};
pub use stats::{RateLimiter, Stats};
