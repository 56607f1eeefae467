//! What each listener has heard: the connect card's hints are made from these reports.

use std::net::SocketAddr;

use crate::arkit::Protocol;

/// One listener's counts since it was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerReport {
    /// What it receives ([`super::BoundListener::kind`]).
    pub kind: Protocol,
    /// The bound address.
    pub addr: SocketAddr,
    /// Datagrams received on it, whatever became of them.
    pub datagrams: u64,
    /// Frames decoded from them.
    pub frames: u64,
    /// Datagrams that did not decode as what this listener receives.
    pub undecoded: u64,
    /// The app the last undecoded datagram looks like, when one was recognised.
    pub looks_like: Option<Protocol>,
    /// Datagrams the guard turned away: a sender outside `ingest.allow`.
    pub not_allowed: u64,
    /// The sender of the last datagram turned away by `ingest.allow`.
    pub last_not_allowed: Option<SocketAddr>,
}

impl ListenerReport {
    /// A report of nothing heard yet on `addr`.
    pub fn new(kind: Protocol, addr: SocketAddr) -> ListenerReport {
        ListenerReport {
            kind,
            addr,
            datagrams: 0,
            frames: 0,
            undecoded: 0,
            looks_like: None,
            not_allowed: 0,
            last_not_allowed: None,
        }
    }
}
