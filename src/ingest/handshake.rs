//! When the PC asks the phone to stream: the phone ports and the repeat schedule of the start messages.
//!
//! - iFacialMocap and Facemotion3d stream after one start string, but a phone that restarts or
//!   drops off the network needs another one. facewire sends the string while data of that
//!   protocol is missing: at once, then every [`TEXT_RETRY`] until frames arrive, and again once
//!   frames have been missing for [`TEXT_SILENCE`].
//! - VTube Studio and MeowFace stream only for the `time` a request names, so facewire sends a
//!   request every [`VTS_PERIOD`] with `time` = [`VTS_REQUEST_TIME_S`], as the official sample
//!   does; the phone stops about a second after facewire does.
//!
//! Start messages go only to the phone named in `ingest.phone`, or, when none is named, to the
//! address of the source facewire follows; never to a broadcast address.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tracing::warn;

use super::bind::BoundListener;
use super::config::IngestConfig;
use super::ifacialmocap::{self, TextSender};
use super::vts;
use crate::arkit::Protocol;

/// How often an iFacialMocap or Facemotion3d start string is repeated while no data comes.
pub const TEXT_RETRY: Duration = Duration::from_secs(2);

/// How long iFacialMocap or Facemotion3d data may be missing before the start string is sent again.
pub const TEXT_SILENCE: Duration = Duration::from_secs(1);

/// How often a VTube Studio request is sent (5 per second, as the official sample).
pub const VTS_PERIOD: Duration = Duration::from_millis(200);

/// The streaming time each VTube Studio request asks for, in seconds.
pub const VTS_REQUEST_TIME_S: f32 = 1.0;

/// The `sentBy` of facewire's VTube Studio requests.
pub const VTS_SENT_BY: &str = "facewire";

pub use super::section::PhonePorts;

/// The repeat rule of one start message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Send while data is missing: every `retry` until data comes, and once it has been missing
    /// for `silence` (iFacialMocap, Facemotion3d).
    WhileMissing {
        /// The repeat period while no data comes.
        retry: Duration,
        /// How long data may be missing before it counts as missing again.
        silence: Duration,
    },
    /// Send every `period`, data or not (VTube Studio).
    Every(Duration),
}

/// When one start message is due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// The rule.
    rule: Rule,
    /// When it was last sent.
    last_sent: Option<Instant>,
}

impl Schedule {
    /// A schedule that is due at once.
    pub(crate) fn new(rule: Rule) -> Schedule {
        Schedule {
            rule,
            last_sent: None,
        }
    }

    /// Whether the message is due at `now`, given when the last frame of its protocol arrived.
    pub(crate) fn due(&self, now: Instant, last_frame: Option<Instant>) -> bool {
        let since_sent = |period: Duration| {
            self.last_sent
                .is_none_or(|sent| now.saturating_duration_since(sent) >= period)
        };
        match self.rule {
            Rule::WhileMissing { retry, silence } => {
                let missing =
                    last_frame.is_none_or(|t| now.saturating_duration_since(t) >= silence);
                missing && since_sent(retry)
            }
            Rule::Every(period) => since_sent(period),
        }
    }

    /// Its rule.
    pub(crate) fn rule(&self) -> Rule {
        self.rule
    }

    /// Records a send (successful or not) at `now`.
    pub(crate) fn sent(&mut self, now: Instant) {
        self.last_sent = Some(now);
    }
}

/// One start message and when to send it.
pub(crate) struct Handshake {
    /// The protocol it starts.
    pub(crate) family: Protocol,
    /// The index of the socket it is sent from (the phone answers to the sender's address).
    pub(crate) socket: usize,
    /// The phone's port.
    pub(crate) port: u16,
    /// The datagram.
    pub(crate) message: Vec<u8>,
    /// When it is due.
    pub(crate) schedule: Schedule,
    /// The target it was last announced to in the log.
    pub(crate) announced: Option<SocketAddr>,
}

/// The start messages for the bound listeners that need one.
pub(crate) fn handshakes(config: &IngestConfig, listeners: &[BoundListener]) -> Vec<Handshake> {
    let first = |protocol| listeners.iter().position(|l| l.kind == protocol);
    let text_rule = Rule::WhileMissing {
        retry: TEXT_RETRY,
        silence: TEXT_SILENCE,
    };
    let mut out = Vec::new();
    if let Some(socket) = first(Protocol::IFacialMocap) {
        out.push(Handshake {
            family: Protocol::IFacialMocap,
            socket,
            port: config.phone_ports.ifacialmocap,
            message: ifacialmocap::handshake(TextSender::IFacialMocap, false).into_bytes(),
            schedule: Schedule::new(text_rule),
            announced: None,
        });
    }
    if let Some(socket) = first(Protocol::Facemotion3d) {
        out.push(Handshake {
            family: Protocol::Facemotion3d,
            socket,
            port: config.phone_ports.facemotion3d,
            message: ifacialmocap::handshake(TextSender::Facemotion3d, false).into_bytes(),
            schedule: Schedule::new(text_rule),
            announced: None,
        });
    }
    if let Some(socket) = first(Protocol::VTubeStudio) {
        // The phone streams to the request's source address on every port it names.
        let ports: Vec<u16> = listeners
            .iter()
            .filter(|l| l.kind == Protocol::VTubeStudio)
            .map(|l| l.addr.port())
            .take(vts::MAX_REQUEST_PORTS)
            .collect();
        match vts::vts_request(VTS_SENT_BY, &ports, VTS_REQUEST_TIME_S) {
            Ok(request) => out.push(Handshake {
                family: Protocol::VTubeStudio,
                socket,
                port: config.phone_ports.vtubestudio,
                message: request.into_bytes(),
                schedule: Schedule::new(Rule::Every(VTS_PERIOD)),
                announced: None,
            }),
            Err(err) => warn!(%err, "cannot build the VTube Studio request; not sending one"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_start_repeats_only_while_data_is_missing() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let mut schedule = Schedule::new(Rule::WhileMissing {
            retry: TEXT_RETRY,
            silence: TEXT_SILENCE,
        });
        assert!(schedule.due(t0, None));
        schedule.sent(t0);
        assert!(!schedule.due(s(1000), None));
        assert!(schedule.due(s(2000), None));
        schedule.sent(s(2000));
        // Data flows from 2.5 s to 10 s: nothing is sent.
        assert!(!schedule.due(s(5000), Some(s(4990))));
        assert!(!schedule.due(s(10_500), Some(s(10_000))));
        // One second of silence: sent again at once, then every two seconds.
        assert!(schedule.due(s(11_000), Some(s(10_000))));
        schedule.sent(s(11_000));
        assert!(!schedule.due(s(12_000), Some(s(10_000))));
        assert!(schedule.due(s(13_000), Some(s(10_000))));
    }

    #[test]
    fn vts_requests_go_out_at_a_fixed_rate() {
        let t0 = Instant::now();
        let mut schedule = Schedule::new(Rule::Every(VTS_PERIOD));
        assert!(schedule.due(t0, Some(t0)));
        schedule.sent(t0);
        assert!(!schedule.due(t0 + Duration::from_millis(100), Some(t0)));
        assert!(schedule.due(t0 + VTS_PERIOD, Some(t0)));
    }

    #[test]
    fn default_phone_ports() {
        let ports = PhonePorts::default();
        assert_eq!(
            (ports.ifacialmocap, ports.facemotion3d, ports.vtubestudio),
            (49983, 49993, 21412)
        );
    }
}
