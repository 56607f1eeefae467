//! The stage's cards: the calibration routine's prompt, and the connect card while facewire
//! waits for a phone. The connect card can be put away (`[window] connect_card`, `C` on the
//! stage, the panel's "Show on the stage"), and goes away by itself, once, when another source
//! (lip sync from the microphone, a stream tool through the API, an expression) drives the face,
//! so a streamer who uses no phone does not capture it over the avatar.

use crate::connect::ConnectCard;
use crate::control::PromptCard;
use crate::mixer::MixerReport;

/// The least weight, and the least value, with which a layer counts as driving the face.
const DRIVES: f32 = 0.05;

/// What the stage shows over the avatar, and whether its image must be drawn anew.
#[derive(Debug)]
pub(super) struct Cards {
    /// The calibration routine's card; it takes the connect card's place.
    prompt: Option<PromptCard>,
    /// The connect card, kept for the panel once data flows.
    connect: Option<Box<ConnectCard>>,
    /// No frame has arrived yet: the connect card belongs on the stage.
    waiting: bool,
    /// The streamer wants the connect card on the stage.
    shown: bool,
    /// The card was put away because another source drove the face (it happens once).
    put_away: bool,
    /// The card's image must be drawn anew (new content or a new stage width).
    dirty: bool,
}

impl Cards {
    /// No card yet; the connect card shows on the stage when `shown` (`[window] connect_card`).
    pub(super) fn new(shown: bool) -> Cards {
        Cards {
            prompt: None,
            connect: None,
            waiting: false,
            shown,
            put_away: false,
            dirty: false,
        }
    }

    /// The routine's card (`None`: the routine shows none now).
    pub(super) fn set_prompt(&mut self, prompt: Option<PromptCard>) {
        self.prompt = prompt;
        self.dirty = true;
    }

    /// The connect card as it is now, and whether facewire still waits for data.
    pub(super) fn set_connect(&mut self, card: Box<ConnectCard>, waiting: bool) {
        self.connect = Some(card);
        self.waiting = waiting;
        self.dirty = true;
    }

    /// The routine's card, if it shows one.
    pub(super) fn prompt(&self) -> Option<&PromptCard> {
        self.prompt.as_ref()
    }

    /// The connect card, for the panel (shown there whether or not it is on the stage).
    pub(super) fn connect(&self) -> Option<&ConnectCard> {
        self.connect.as_deref()
    }

    /// Whether facewire still waits for the first frame.
    pub(super) fn waiting(&self) -> bool {
        self.waiting
    }

    /// Whether the streamer wants the connect card on the stage.
    pub(super) fn shown(&self) -> bool {
        self.shown
    }

    /// The connect card, when it belongs on the stage now.
    pub(super) fn connect_on_stage(&self) -> Option<&ConnectCard> {
        self.connect
            .as_deref()
            .filter(|_| self.waiting && self.shown)
    }

    /// Shows or hides the connect card on the stage (the key or the panel); says whether that
    /// changed anything.
    pub(super) fn set_shown(&mut self, shown: bool) -> bool {
        let changed = self.shown != shown;
        self.shown = shown;
        self.dirty |= changed;
        changed
    }

    /// Whether the stage needs anything drawn over the avatar now.
    #[cfg(test)]
    fn any_on_stage(&self) -> bool {
        self.prompt.is_some() || self.connect_on_stage().is_some()
    }

    /// Whether the card's image must be drawn anew.
    pub(super) fn dirty(&self) -> bool {
        self.dirty
    }

    /// The card's image must be drawn anew (the stage changed size).
    pub(super) fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The card's image was drawn.
    pub(super) fn drawn(&mut self) {
        self.dirty = false;
    }

    /// Looks at the last mix: when the connect card is on the stage and another source than the
    /// phone drives the face, puts the card away (once; the key or the panel brings it back) and
    /// returns that source's layer.
    pub(super) fn note_mix(&mut self, report: &MixerReport) -> Option<String> {
        if self.put_away || self.connect_on_stage().is_none() {
            return None;
        }
        let layer = driving_layer(report)?;
        self.put_away = true;
        self.set_shown(false);
        Some(layer.to_string())
    }
}

/// A layer of `report` that moves the face for the performer without a phone: lip sync, the
/// API, or an expression, with some weight and some value.
fn driving_layer(report: &MixerReport) -> Option<&str> {
    report
        .layers
        .iter()
        .filter(|l| {
            l.name == crate::mixer::LAYER_LIPSYNC
                || l.name == crate::api::LAYER_API
                || l.name.starts_with(crate::expressions::LAYER_PREFIX)
        })
        .find(|l| {
            let c = &l.contribution;
            c.weight >= DRIVES
                && c.present
                    .iter()
                    .any(|channel| c.weights[channel.index()] >= DRIVES)
        })
        .map(|l| l.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Channel;
    use crate::connect::{AddressKind, LanAddress};
    use crate::mixer::{BlendMode, Contribution, LayerReport, RegionMask};

    fn card() -> Box<ConnectCard> {
        let lan = [LanAddress {
            ip: "192.168.1.20".parse().unwrap(),
            interface: "wlan0".into(),
            kind: AddressKind::Lan,
        }];
        Box::new(ConnectCard::new(&[], &lan, None))
    }

    fn report(name: &str, weight: f32, jaw: f32) -> MixerReport {
        let mut contribution = Contribution {
            weights: [0.0; crate::arkit::COUNT],
            present: Default::default(),
            weight,
            mode: BlendMode::Override,
            mask: RegionMask::default(),
        };
        contribution.weights[Channel::JawOpen.index()] = jaw;
        contribution.present.insert(Channel::JawOpen);
        MixerReport {
            layers: vec![LayerReport {
                name: name.into(),
                contribution,
            }],
        }
    }

    #[test]
    fn the_connect_card_shows_while_waiting_and_hides_on_request() {
        let mut cards = Cards::new(true);
        assert!(cards.connect_on_stage().is_none(), "no card yet");
        cards.set_connect(card(), true);
        assert!(cards.connect_on_stage().is_some());
        assert!(cards.dirty());
        cards.drawn();
        assert!(cards.set_shown(false));
        assert!(cards.connect_on_stage().is_none());
        assert!(cards.dirty(), "hiding redraws");
        assert!(!cards.set_shown(false), "already hidden");
        assert!(cards.set_shown(true));
        assert!(cards.connect_on_stage().is_some());
        cards.set_connect(card(), false);
        assert!(
            cards.connect_on_stage().is_none(),
            "data flows: off the stage"
        );
        assert!(cards.connect().is_some(), "the panel keeps it");
    }

    #[test]
    fn the_setting_keeps_it_off_the_stage_from_the_start() {
        let mut cards = Cards::new(false);
        cards.set_connect(card(), true);
        assert!(cards.connect_on_stage().is_none());
        assert!(!cards.any_on_stage());
        assert!(cards.set_shown(true), "the key still brings it");
        assert!(cards.connect_on_stage().is_some());
    }

    #[test]
    fn another_source_driving_the_face_puts_the_card_away_once() {
        let mut cards = Cards::new(true);
        cards.set_connect(card(), true);
        assert_eq!(
            cards.note_mix(&report(crate::mixer::LAYER_IDLE, 1.0, 0.3)),
            None
        );
        assert_eq!(cards.note_mix(&report("tracking", 1.0, 0.3)), None);
        assert_eq!(cards.note_mix(&report("lipsync", 0.0, 0.8)), None, "silent");
        assert_eq!(cards.note_mix(&report("lipsync", 1.0, 0.01)), None, "still");
        assert!(cards.connect_on_stage().is_some());
        assert_eq!(
            cards.note_mix(&report("lipsync", 1.0, 0.6)).as_deref(),
            Some("lipsync")
        );
        assert!(cards.connect_on_stage().is_none());
        assert!(!cards.shown());
        // Brought back by hand, it stays: the voice goes on driving the mouth.
        cards.set_shown(true);
        assert_eq!(cards.note_mix(&report("api", 1.0, 0.6)), None);
        assert!(cards.connect_on_stage().is_some());
        let mut cards = Cards::new(true);
        cards.set_connect(card(), true);
        assert_eq!(
            cards
                .note_mix(&report("expression:smile", 1.0, 1.0))
                .as_deref(),
            Some("expression:smile")
        );
    }

    #[test]
    fn the_prompt_takes_the_stage() {
        let mut cards = Cards::new(true);
        assert!(!cards.any_on_stage());
        cards.set_prompt(Some(PromptCard {
            step: 1,
            steps: 3,
            title: "Relax".into(),
            instruction: "Look ahead".into(),
            status: String::new(),
            progress: 0.0,
        }));
        assert!(cards.any_on_stage());
        assert_eq!(cards.prompt().map(|p| p.step), Some(1));
        cards.set_prompt(None);
        assert!(!cards.any_on_stage());
    }
}
