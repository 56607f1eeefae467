//! The raw-datagram tap: every datagram a listener receives, as it arrived, before the guard.
//!
//! A [`Tap`] in [`IngestConfig::tap`](super::IngestConfig::tap) is called on the ingest thread
//! for every datagram received on any listener, before the allow-list, the source lock and
//! decoding, so it sees exactly what the network delivered (the recorder writes it to a `.fwrec`
//! file). It borrows the receive buffer: nothing is copied or kept per datagram unless the tap
//! does so itself. It runs on the ingest thread, so it should be quick.

use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use crate::arkit::Protocol;

/// One datagram as a listener received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDatagram<'a> {
    /// The datagram's bytes, exactly as received.
    pub data: &'a [u8],
    /// Who sent it.
    pub from: SocketAddr,
    /// The listener's bound address (its port tells which listener; an unspecified IP stays
    /// unspecified).
    pub local: SocketAddr,
    /// What the listener receives: a protocol family ([`Protocol::family`]), [`Protocol::Vmc`]
    /// for an OSC socket.
    pub listener: Protocol,
    /// When it was received; the same instant the guard and the decoders see.
    pub received: Instant,
}

/// A callback that sees every raw datagram on the ingest thread ([`RawDatagram`]).
pub struct Tap(Box<dyn FnMut(RawDatagram<'_>) + Send>);

impl Tap {
    /// A tap calling `f` for every datagram.
    pub fn new(f: impl FnMut(RawDatagram<'_>) + Send + 'static) -> Tap {
        Tap(Box::new(f))
    }

    /// Hands one datagram to the callback.
    pub fn call(&mut self, datagram: RawDatagram<'_>) {
        (self.0)(datagram)
    }
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tap(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_tap_sees_each_datagram_it_is_given() {
        let (tx, rx) = mpsc::channel();
        let mut tap = Tap::new(move |d: RawDatagram<'_>| {
            let _ = tx.send((d.data.to_vec(), d.from, d.local, d.listener));
        });
        let from: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let local: SocketAddr = "0.0.0.0:11111".parse().unwrap();
        tap.call(RawDatagram {
            data: b"abc",
            from,
            local,
            listener: Protocol::LiveLinkFace,
            received: Instant::now(),
        });
        assert_eq!(
            rx.try_recv().unwrap(),
            (b"abc".to_vec(), from, local, Protocol::LiveLinkFace)
        );
        assert_eq!(format!("{tap:?}"), "Tap(..)");
    }
}
