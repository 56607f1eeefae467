//! What each listener has heard: the connect card's hints are made from these reports.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

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
    /// Datagrams the guard turned away before decoding them: a sender outside `ingest.allow`
    /// (also counted in `not_allowed`) or another source than the followed one.
    pub rejected: u64,
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
            rejected: 0,
            not_allowed: 0,
            last_not_allowed: None,
        }
    }
}

/// Whether a datagram of `protocol` is what a `kind` listener receives: the same family, or
/// either text dialect on a text socket (it takes both).
fn receives(kind: Protocol, protocol: Protocol) -> bool {
    let text = |p: Protocol| matches!(p, Protocol::IFacialMocap | Protocol::Facemotion3d);
    kind.same_family(protocol) || (text(kind) && text(protocol))
}

/// What became of one datagram on one listener, for its report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Heard {
    /// Frames it committed to the sink.
    pub frames: u64,
    /// It did not decode as what the listener receives; with the app it looks like, if any.
    pub undecoded: Option<Option<Protocol>>,
    /// The guard turned its sender away (not in `ingest.allow`).
    pub not_allowed: Option<SocketAddr>,
    /// The guard turned it away undecoded (`not_allowed`, or another source than the followed
    /// one).
    pub rejected: bool,
}

/// Every listener's report and the frame total: shared by the ingest thread, which updates it
/// once per datagram, and the [`IngestProbe`]s that read it.
#[derive(Debug, Default)]
pub(super) struct Reports {
    /// One report per bound listener, in bind order.
    listeners: Vec<ListenerReport>,
    /// Frames committed over every listener.
    frames: u64,
}

impl Reports {
    /// Empty reports for these listeners.
    pub(super) fn new(listeners: impl IntoIterator<Item = (Protocol, SocketAddr)>) -> Reports {
        Reports {
            listeners: listeners
                .into_iter()
                .map(|(kind, addr)| ListenerReport::new(kind, addr))
                .collect(),
            frames: 0,
        }
    }

    /// Counts one datagram heard on listener `index` (ignored when out of range).
    pub(super) fn record(&mut self, index: usize, heard: Heard) {
        let Some(report) = self.listeners.get_mut(index) else {
            return;
        };
        report.datagrams += 1;
        report.frames += heard.frames;
        self.frames += heard.frames;
        if let Some(looks_like) = heard.undecoded {
            report.undecoded += 1;
            report.looks_like = looks_like.filter(|&p| !receives(report.kind, p));
        }
        report.rejected += u64::from(heard.rejected);
        if let Some(from) = heard.not_allowed {
            report.not_allowed += 1;
            report.last_not_allowed = Some(from);
        }
    }
}

/// A cheap, cloneable reader of the ingest thread's listener reports and frame count, for
/// another thread to poll (the connect card) while the [`IngestHandle`](super::IngestHandle) is
/// elsewhere. It stays valid after the thread stopped (the counts then stay as they were).
#[derive(Debug, Clone)]
pub struct IngestProbe {
    /// The reports the ingest thread updates.
    shared: Arc<Mutex<Reports>>,
}

impl IngestProbe {
    /// A reader of `shared`.
    pub(super) fn new(shared: Arc<Mutex<Reports>>) -> IngestProbe {
        IngestProbe { shared }
    }

    /// One report per bound listener, in [`IngestHandle::listeners`](super::IngestHandle::listeners)
    /// order.
    pub fn reports(&self) -> Vec<ListenerReport> {
        self.lock().listeners.clone()
    }

    /// Frames committed so far over every protocol.
    pub fn frames(&self) -> u64 {
        self.lock().frames
    }

    /// The shared reports, even after a panic elsewhere (they are plain counters).
    fn lock(&self) -> std::sync::MutexGuard<'_, Reports> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_report_counts_what_one_listener_heard() {
        let mut reports =
            Reports::new([(Protocol::Vmc, addr(1)), (Protocol::IFacialMocap, addr(2))]);
        reports.record(
            0,
            Heard {
                frames: 2,
                ..Heard::default()
            },
        );
        // Face Cap on the OSC socket, Facemotion3d on the text socket: not another app.
        reports.record(
            0,
            Heard {
                undecoded: Some(Some(Protocol::FaceCap)),
                ..Heard::default()
            },
        );
        reports.record(
            1,
            Heard {
                undecoded: Some(Some(Protocol::Facemotion3d)),
                ..Heard::default()
            },
        );
        let probe = IngestProbe::new(Arc::new(Mutex::new(reports)));
        let [osc, text] = probe.reports().try_into().unwrap();
        assert_eq!((osc.datagrams, osc.frames, osc.undecoded), (2, 2, 1));
        assert_eq!(osc.looks_like, None);
        assert_eq!(
            (text.datagrams, text.undecoded, text.looks_like),
            (1, 1, None)
        );
        assert_eq!(probe.frames(), 2);

        let mut shared = probe.shared.lock().unwrap();
        shared.record(
            1,
            Heard {
                undecoded: Some(Some(Protocol::LiveLinkFace)),
                not_allowed: None,
                frames: 0,
                rejected: false,
            },
        );
        assert_eq!(shared.listeners[1].looks_like, Some(Protocol::LiveLinkFace));
        // The last undecoded datagram decides; one that looks like nothing clears the hint.
        shared.record(
            1,
            Heard {
                undecoded: Some(None),
                ..Heard::default()
            },
        );
        assert_eq!(shared.listeners[1].looks_like, None);
        shared.record(
            1,
            Heard {
                not_allowed: Some(addr(9)),
                rejected: true,
                ..Heard::default()
            },
        );
        shared.record(5, Heard::default());
        let text = shared.listeners[1];
        assert_eq!((text.datagrams, text.undecoded), (4, 3));
        assert_eq!(
            (text.not_allowed, text.last_not_allowed),
            (1, Some(addr(9)))
        );
        assert_eq!(text.rejected, 1);
    }
}
