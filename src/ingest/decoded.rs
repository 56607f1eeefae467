//! What every phone decoder gives: the decoded datagram, the error that rejects one and the size cap.
//!
//! A leaf of ingest: the phone decoders (ifacialmocap.rs, livelink.rs, vts.rs, openseeface.rs) and
//! phone.rs, which picks and counts them, all import these types, and this file imports no other
//! ingest module.

use std::net::SocketAddr;
use std::time::Instant;

use thiserror::Error;

use crate::arkit::{FaceFrame, Protocol};

/// Largest phone datagram decoded (16 KiB). Real ones are about 1 KiB (iFacialMocap), 320 bytes
/// (Live Link Face), 3 KiB (VTube Studio) and 1785 bytes per face (OpenSeeFace); larger ones are
/// rejected before parsing, so that no per-datagram work grows with hostile input beyond this.
pub const MAX_PHONE_DATAGRAM: usize = 16 * 1024;

/// One decoded phone datagram: its frame and what was dropped from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decoded {
    /// The frame; `present` holds only the channels the datagram carried with finite values.
    pub frame: FaceFrame,
    /// Keys (blendshape names or blocks) that are not ARKit channels or known blocks, such as
    /// `trackingStatus`, `hapihapi`, `FM_SAD` or MeowFace's `headLeft`; ignored.
    pub unknown_keys: u32,
    /// NaN or infinite values (or values that overflow `f32`), dropped. A rotation with a
    /// non-finite component is dropped whole and counts once.
    pub non_finite_values: u32,
    /// Known keys whose value could not be used (not a number, or a block with the wrong number of
    /// components); dropped.
    pub bad_values: u32,
}

impl Decoded {
    /// A decoded datagram holding an empty frame and zero counters.
    pub fn empty(protocol: Protocol, from: SocketAddr, received: Instant) -> Decoded {
        Decoded {
            frame: FaceFrame::empty(protocol, from, received),
            unknown_keys: 0,
            non_finite_values: 0,
            bad_values: 0,
        }
    }
}

/// Why a phone datagram was rejected as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The datagram is larger than the cap for its protocol.
    #[error("datagram of {len} bytes is larger than the {max}-byte cap")]
    Oversized {
        /// The datagram's length.
        len: usize,
        /// The cap it exceeded.
        max: usize,
    },
    /// The datagram ends before the structure it announces (a length field pointing past the end,
    /// a text frame without its final `|`).
    #[error("datagram is truncated: {0}")]
    Truncated(&'static str),
    /// The datagram is not in the protocol's grammar.
    #[error("datagram is malformed: {0}")]
    Malformed(&'static str),
    /// A Live Link Face packet version this decoder does not know.
    #[error("unsupported packet version {0}")]
    UnsupportedVersion(u8),
    /// The datagram is not valid JSON, or not the JSON object the protocol defines.
    #[error("invalid JSON ({category}) at line {line}, column {column}")]
    Json {
        /// serde_json's error category: `syntax`, `data`, `eof` or `io`.
        category: &'static str,
        /// The 1-based line of the error.
        line: usize,
        /// The 1-based column of the error.
        column: usize,
    },
}

impl From<serde_json::Error> for ProtocolError {
    fn from(e: serde_json::Error) -> ProtocolError {
        let category = match e.classify() {
            serde_json::error::Category::Io => "io",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "eof",
        };
        ProtocolError::Json {
            category,
            line: e.line(),
            column: e.column(),
        }
    }
}

/// A phone protocol's pure decoder: one datagram, its sender and receive time in, at most one
/// frame out.
pub type DecodeFn = fn(&[u8], SocketAddr, Instant) -> Result<Decoded, ProtocolError>;
