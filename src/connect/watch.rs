//! When the connect card changes: a small state machine fed the frame count and the listener
//! reports periodically. It shows the card at start, updates its hints when they change (not on
//! every poll) and takes it away at the first frame, for good.

use std::time::Instant;

use super::card::{hint_lines, ConnectCard};
use super::hints::{hints, HintInput, Os};
use crate::ingest::ListenerReport;

/// A change of the connect card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectUpdate {
    /// Show this card (the first update).
    Show(ConnectCard),
    /// The hints changed: show this card, which carries them ([`ConnectCard::hints`]; empty
    /// when there is nothing to check any more).
    Hints(ConnectCard),
    /// The first frame arrived: take the card away. It does not come back.
    Connected {
        /// The app family and port the first frames came from, when a report names one
        /// (`Live Link Face on port 11111`).
        from: Option<String>,
    },
}

impl ConnectUpdate {
    /// The lines to print in the terminal for this change: the whole card when it is shown,
    /// only the hints when they change, one line at the first frame.
    pub fn terminal_lines(&self) -> Vec<String> {
        match self {
            ConnectUpdate::Show(card) => card.terminal_text().lines().map(String::from).collect(),
            ConnectUpdate::Hints(card) if card.hints().is_empty() => {
                vec!["  Data is arriving; waiting for the first face frame.".to_string()]
            }
            ConnectUpdate::Hints(card) => hint_lines(card.hints()),
            ConnectUpdate::Connected { from: Some(from) } => {
                vec![format!("Connected: face data from {from}.")]
            }
            ConnectUpdate::Connected { from: None } => vec!["Connected: face data.".to_string()],
        }
    }
}

/// Where the card stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Not shown yet.
    Start,
    /// On screen.
    Shown,
    /// Taken away at the first frame.
    Connected,
}

/// Says when the connect card should change. Feed it with [`ConnectWatch::update`] as often as
/// convenient (a few times a second); it answers only when something changed.
#[derive(Debug, Clone)]
pub struct ConnectWatch {
    card: ConnectCard,
    started: Instant,
    os: Os,
    stage: Stage,
}

impl ConnectWatch {
    /// A watch over `card`, listening since `started`, giving firewall instructions for `os`
    /// ([`Os::current`] in a live run).
    pub fn new(card: ConnectCard, started: Instant, os: Os) -> ConnectWatch {
        ConnectWatch {
            card,
            started,
            os,
            stage: Stage::Start,
        }
    }

    /// The card as it stands, with its current hints.
    pub fn card(&self) -> &ConnectCard {
        &self.card
    }

    /// Whether a frame has arrived (the card is gone for good).
    pub fn is_connected(&self) -> bool {
        self.stage == Stage::Connected
    }

    /// Takes `frames` (decoded so far, all listeners) and `reports` (what each listener has
    /// heard) at `now`; says what changed, if anything: [`ConnectUpdate::Show`] on the first
    /// call, [`ConnectUpdate::Hints`] when the hints' content changes, and
    /// [`ConnectUpdate::Connected`] once at the first frame (also on the first call, when frames
    /// already flow: the card is then never shown). Afterwards always `None`.
    pub fn update(
        &mut self,
        now: Instant,
        frames: u64,
        reports: &[ListenerReport],
    ) -> Option<ConnectUpdate> {
        match self.stage {
            Stage::Connected => return None,
            _ if frames > 0 => {
                self.stage = Stage::Connected;
                let from = reports
                    .iter()
                    .find(|r| r.frames > 0)
                    .map(|r| format!("{} on port {}", r.kind.listener_label(), r.addr.port()));
                return Some(ConnectUpdate::Connected { from });
            }
            Stage::Start => {
                self.stage = Stage::Shown;
                return Some(ConnectUpdate::Show(self.card.clone()));
            }
            Stage::Shown => {}
        }
        let fresh = hints(&HintInput {
            elapsed: now.saturating_duration_since(self.started),
            frames,
            reports,
            addresses: self.card.addresses(),
            phone: self.card.phone(),
            os: self.os,
        });
        if fresh == self.card.hints() {
            return None;
        }
        self.card.set_hints(fresh);
        Some(ConnectUpdate::Hints(self.card.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::*;
    use crate::arkit::Protocol;
    use crate::connect::hints::{HintKind, NO_DATA_HINT};
    use crate::connect::lan::{AddressKind, LanAddress};
    use crate::ingest::BoundListener;

    fn setup() -> (ConnectWatch, Vec<ListenerReport>, Instant) {
        let addr: SocketAddr = "0.0.0.0:39539".parse().unwrap();
        let lan = [LanAddress {
            ip: "192.168.1.20".parse().unwrap(),
            interface: "wlan0".into(),
            kind: AddressKind::Lan,
        }];
        let card = ConnectCard::new(
            &[BoundListener {
                kind: Protocol::Vmc,
                addr,
            }],
            &lan,
            None,
        );
        let t0 = Instant::now();
        (
            ConnectWatch::new(card, t0, Os::Linux),
            vec![ListenerReport::new(Protocol::Vmc, addr)],
            t0,
        )
    }

    fn hint_kinds(update: &Option<ConnectUpdate>) -> Vec<HintKind> {
        match update {
            Some(ConnectUpdate::Hints(card)) => card.hints().iter().map(|h| h.kind).collect(),
            other => panic!("expected hints, got {other:?}"),
        }
    }

    #[test]
    fn shown_at_start_then_hints_once_then_gone_at_the_first_frame() {
        let (mut watch, mut reports, t0) = setup();
        let first = watch.update(t0, 0, &reports);
        let Some(ConnectUpdate::Show(card)) = &first else {
            panic!("expected the card, got {first:?}");
        };
        assert!(card.hints().is_empty());
        let printed = first.as_ref().unwrap().terminal_lines();
        assert_eq!(
            printed[0],
            "Connect your phone (phone and PC on the same Wi-Fi)"
        );

        // Polled often before the wait is over: nothing changes.
        for ms in (100..5000).step_by(100) {
            let now = t0 + Duration::from_millis(ms);
            assert_eq!(watch.update(now, 0, &reports), None, "at {ms} ms");
        }
        let hinted = watch.update(t0 + NO_DATA_HINT, 0, &reports);
        assert_eq!(
            hint_kinds(&hinted),
            [HintKind::SameNetwork, HintKind::Firewall, HintKind::Target]
        );
        let lines = hinted.as_ref().unwrap().terminal_lines();
        assert_eq!(lines[0], "  No face data yet. Check:");
        assert!(lines.contains(&"      sudo ufw allow 39539/udp".to_string()));
        assert_eq!(watch.card().hints().len(), 3);

        // The same hints on later polls are not repeated.
        for s in 6..20 {
            assert_eq!(watch.update(t0 + Duration::from_secs(s), 0, &reports), None);
        }

        // Packets of another app arrive: the hints change once.
        reports[0].datagrams = 10;
        reports[0].undecoded = 10;
        reports[0].looks_like = Some(Protocol::LiveLinkFace);
        let changed = watch.update(t0 + Duration::from_secs(21), 0, &reports);
        assert_eq!(hint_kinds(&changed), [HintKind::NotListening]);
        reports[0].datagrams = 50;
        reports[0].undecoded = 50;
        assert_eq!(
            watch.update(t0 + Duration::from_secs(22), 0, &reports),
            None
        );

        // The first frame: the card goes, once, and never comes back.
        reports[0].frames = 1;
        assert_eq!(
            watch.update(t0 + Duration::from_secs(23), 1, &reports),
            Some(ConnectUpdate::Connected {
                from: Some("VMC and Face Cap on port 39539".into())
            })
        );
        assert!(watch.is_connected());
        assert_eq!(
            watch.update(t0 + Duration::from_secs(90), 1, &reports),
            None
        );
        assert_eq!(
            watch.update(t0 + Duration::from_secs(91), 1, &reports),
            None,
            "later silence is tracking loss, not the connect card's business"
        );
    }

    #[test]
    fn frames_at_the_first_poll_skip_the_card() {
        let (mut watch, reports, t0) = setup();
        let update = watch.update(t0, 3, &reports);
        assert_eq!(update, Some(ConnectUpdate::Connected { from: None }));
        assert_eq!(update.unwrap().terminal_lines(), ["Connected: face data."]);
        assert_eq!(
            watch.update(t0 + Duration::from_secs(10), 3, &reports),
            None
        );
    }

    #[test]
    fn hints_that_clear_say_that_data_arrives() {
        let (mut watch, mut reports, t0) = setup();
        watch.update(t0, 0, &reports);
        assert!(watch.update(t0 + NO_DATA_HINT, 0, &reports).is_some());
        // Datagrams arrive and decode, but no frame is complete yet.
        reports[0].datagrams = 4;
        let cleared = watch.update(t0 + Duration::from_secs(6), 0, &reports);
        let Some(ConnectUpdate::Hints(card)) = &cleared else {
            panic!("expected cleared hints, got {cleared:?}");
        };
        assert!(card.hints().is_empty());
        assert_eq!(
            cleared.unwrap().terminal_lines(),
            ["  Data is arriving; waiting for the first face frame."]
        );
        // A clock that steps back is treated as no time passed.
        assert_eq!(watch.update(t0, 0, &reports), None);
    }
}
