//! UDP ingest: VMC, Face Cap and the phone apps' protocols decoded into `FaceFrame`s; bad packets counted, never fatal.
//!
//! - [`Decoder`] (decoder.rs) is pure: one datagram in, committed frames out through a callback,
//!   with bounded per-sender state. The protocol parsers live in vmc.rs and facecap.rs, strict
//!   OSC decoding in osc.rs, and every axis/sign convention in one table in [`axes`].
//! - [`spawn`] (server.rs) runs the `facewire-ingest` thread: a current-thread tokio runtime that
//!   receives on every configured UDP address (OSC and each phone protocol on its own port),
//!   hands each datagram to the optional raw [`tap`] (the recorder's), passes it through the
//!   [`guard`] (allow-list, one followed source at a time),
//!   decodes it and sends the phones their start messages ([`handshake`]).
//! - [`IngestConfig`] (config.rs) says where to listen and which listeners must bind; bind.rs
//!   binds them, and a port that cannot be bound is an [`IngestError::Bind`] naming the process
//!   that holds it ([`udp_port_holder`], holder.rs) and the setting that moves facewire.
//! - Each listener's [`ListenerReport`] (report.rs: datagrams, frames, undecoded, guard
//!   rejections) is read through [`IngestHandle::reports`] or an [`IngestProbe`]; [`sniff`] says
//!   which app an undecoded datagram looks like.
//! - [`Stats`] (stats.rs) counts every datagram exactly once; see its identities.
//! - The apps that send one whole frame per datagram have pure decoders of their own:
//!   [`ifacialmocap`] (iFacialMocap and Facemotion3d text), [`livelink`] (Live Link Face packets),
//!   [`vts`] (VTube Studio and MeowFace JSON) and [`openseeface`] (OpenSeeFace's webcam tracker,
//!   face records). They share [`Decoded`], [`ProtocolError`] and
//!   [`MAX_PHONE_DATAGRAM`] (decoded.rs, a leaf that imports no other ingest module);
//!   [`phone_decoder`] picks one by protocol and the counting [`PhoneDecoder`] wraps it (phone.rs).
//! - Protocols are named by [`Protocol`](crate::arkit::Protocol) everywhere; a listener socket is
//!   named by its protocol family ([`Protocol::family`](crate::arkit::Protocol::family)), VMC for
//!   the OSC socket that also takes Face Cap.

pub mod axes;
mod bind;
mod config;
mod decoded;
mod decoder;
mod facecap;
pub mod guard;
pub mod handshake;
mod holder;
pub mod ifacialmocap;
pub mod livelink;
mod names;
mod net;
pub mod openseeface;
mod osc;
mod phone;
mod report;
mod section;
mod server;
pub mod sniff;
mod stats;
pub mod tap;
mod vmc;
mod vmc_out;
pub mod vts;

pub use bind::{BoundListener, IngestError};
pub use config::{
    default_addr, default_port, IngestConfig, PhoneListen, DEFAULT_LOCK_RELEASE, DEFAULT_PORT,
};
pub use decoded::{DecodeFn, Decoded, ProtocolError, MAX_PHONE_DATAGRAM};
pub use decoder::{DatagramClass, Decoder, KeyEvent, Outcome, MAX_DATAGRAM, MAX_KEYS, MAX_SENDERS};
pub use guard::{GuardStats, Subnet, SubnetError, ESTABLISHED_AFTER};
pub use handshake::PhonePorts;
pub use holder::{udp_port_holder, usual_holder, PortHolder};
pub use ifacialmocap::{TextSender, FM3D_PORT, FM3D_START, IFM_PORT, IFM_START, IFM_V2_SUFFIX};
pub use livelink::LiveLinkPacket;
pub use osc::MAX_BUNDLE_DEPTH;
pub use phone::{phone_decoder, PhoneDecoder, PhoneStats};
pub use report::{IngestProbe, ListenerReport};
pub use section::{ForwardNames, ForwardSection, IngestSection, MAX_VTS_REQUEST_PORTS};
pub use server::{spawn, FrameSink, IngestHandle, NetStats, TICK_PERIOD};
pub use sniff::looks_like;
pub use stats::{RateLimiter, Stats};
pub use tap::{RawDatagram, Tap};
pub use vmc_out::encode_vmc;
pub use vts::{vts_request, RequestError};
