//! UDP ingest: VMC and Face Cap over OSC decoded into `FaceFrame`s; bad packets counted, never fatal.
//!
//! - [`Decoder`] (decoder.rs) is pure: one datagram in, committed frames out through a callback,
//!   with bounded per-sender state. The protocol parsers live in vmc.rs and facecap.rs, strict
//!   OSC decoding in osc.rs, and every axis/sign convention in one table in [`axes`].
//! - [`spawn`] (server.rs) runs the `facewire-ingest` thread: a current-thread tokio runtime that
//!   receives on every configured UDP address and feeds one decoder.
//! - [`Stats`] (stats.rs) counts every datagram exactly once; see its identities.
//! - The phone apps that send one whole frame per datagram have pure decoders of their own:
//!   [`ifacialmocap`] (iFacialMocap and Facemotion3d text), [`livelink`] (Live Link Face packets)
//!   and [`vts`] (VTube Studio and MeowFace JSON), sharing [`Decoded`], [`ProtocolError`] and the
//!   counting [`PhoneDecoder`] (phone.rs).

pub mod axes;
mod decoder;
mod facecap;
pub mod ifacialmocap;
pub mod livelink;
mod osc;
mod phone;
mod server;
mod stats;
mod vmc;
pub mod vts;

pub use decoder::{DatagramClass, Decoder, Outcome, MAX_DATAGRAM, MAX_SENDERS};
pub use ifacialmocap::{TextSender, FM3D_PORT, FM3D_START, IFM_PORT, IFM_START, IFM_V2_SUFFIX};
pub use livelink::LiveLinkPacket;
pub use osc::MAX_BUNDLE_DEPTH;
pub use phone::{
    Decoded, PhoneDecoder, PhoneProtocol, PhoneStats, ProtocolError, MAX_PHONE_DATAGRAM,
};
pub use server::{
    spawn, FrameSink, IngestConfig, IngestError, IngestHandle, DEFAULT_PORT, TICK_PERIOD,
};
pub use stats::{RateLimiter, Stats};
pub use vts::{vts_request, RequestError};
