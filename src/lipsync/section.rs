//! `[lipsync]`: lip sync from the microphone (or a WAV file): which device, how it mixes with
//! the phone, how loud speech is and how the mouth moves.

use serde::Deserialize;

use super::{Level, LipMode, LipSettings};
use crate::diagnostic::{key_offset, Located};

/// `[lipsync]`. See the README's lip-sync section.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LipsyncConfig {
    /// How the audio mixes with the phone: `off`, `when_lost` (the default), `blend` or
    /// `always`.
    pub mode: LipMode,
    /// The input device, by (part of) its name as `facewire lipsync --list-devices` prints it;
    /// empty: the system's default input.
    pub device: String,
    /// Below this level (dB full scale) the mouth rests. Unset (the default), the gate follows
    /// the voice: its ceiling the speaker's recent peaks, its floor the room's noise. Setting
    /// either fixes both.
    pub floor_db: Option<f32>,
    /// At and above this level the mouth opens fully (see `floor_db`).
    pub ceiling_db: Option<f32>,
    /// Milliseconds a shape takes to rise most of the way.
    pub attack_ms: f32,
    /// Milliseconds a shape takes to fall most of the way.
    pub release_ms: f32,
    /// The shortest time one vowel shows before another takes over, milliseconds.
    pub hold_ms: f32,
    /// How far the mouth leads the sound of a played WAV file, milliseconds (a live
    /// microphone cannot lead: delay the microphone in OBS by this much instead).
    pub lead_ms: f32,
    /// How far the audio opens the mouth, 0 to 1.
    pub strength: f32,
}

impl Default for LipsyncConfig {
    fn default() -> LipsyncConfig {
        let s = LipSettings::default();
        LipsyncConfig {
            mode: LipMode::default(),
            device: String::new(),
            floor_db: None,
            ceiling_db: None,
            attack_ms: s.attack * 1000.0,
            release_ms: s.release * 1000.0,
            hold_ms: s.hold * 1000.0,
            lead_ms: 0.0,
            strength: 1.0,
        }
    }
}

impl LipsyncConfig {
    /// The analysis settings.
    pub fn settings(&self) -> LipSettings {
        let d = LipSettings::default();
        let fixed = self.floor_db.is_some() || self.ceiling_db.is_some();
        // One bound given: the other keeps the default's distance from it.
        let span = d.ceiling_db - d.floor_db;
        let (floor_db, ceiling_db) = match (self.floor_db, self.ceiling_db) {
            (Some(f), Some(c)) => (f, c),
            (Some(f), None) => (f, (f + span).min(0.0)),
            (None, Some(c)) => (c - span, c),
            (None, None) => (d.floor_db, d.ceiling_db),
        };
        LipSettings {
            floor_db,
            ceiling_db,
            level: if fixed { Level::Fixed } else { Level::Auto },
            attack: self.attack_ms / 1000.0,
            release: self.release_ms / 1000.0,
            hold: self.hold_ms / 1000.0,
        }
    }

    /// The device asked for, `None` for the default input.
    pub fn device(&self) -> Option<&str> {
        let d = self.device.trim();
        (!d.is_empty()).then_some(d)
    }

    /// Checks the ranges; an error names the key's line and column in `text` (the file at
    /// `path`) and what to use.
    pub(crate) fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        let settings = self.settings();
        let checks: [(&str, f32, (f32, f32), &str); 7] = [
            (
                "floor_db",
                self.floor_db.unwrap_or(-50.0),
                (-120.0, 0.0),
                "-50",
            ),
            (
                "ceiling_db",
                self.ceiling_db.unwrap_or(-30.0),
                (-120.0, 0.0),
                "-30",
            ),
            ("attack_ms", self.attack_ms, (0.0, 1000.0), "30"),
            ("release_ms", self.release_ms, (0.0, 1000.0), "80"),
            ("hold_ms", self.hold_ms, (0.0, 1000.0), "100"),
            ("lead_ms", self.lead_ms, (0.0, 500.0), "0"),
            ("strength", self.strength, (0.0, 1.0), "1.0"),
        ];
        let locate = |key: &str| {
            let section = text.find("[lipsync]");
            section
                .and_then(|s| key_offset(&text[s..], key).map(|k| s + k))
                .or_else(|| key_offset(text, key))
                .or(section)
                .unwrap_or(0)
        };
        for (key, value, (lo, hi), example) in checks {
            if value.is_finite() && (lo..=hi).contains(&value) {
                continue;
            }
            return Err(Located::at(
                path,
                text,
                locate(key),
                format!("{key} = {value} is out of range"),
                Some(format!("use {lo} to {hi}, e.g. {key} = {example}")),
            ));
        }
        if settings.ceiling_db <= settings.floor_db {
            return Err(Located::at(
                path,
                text,
                locate("ceiling_db"),
                format!(
                    "ceiling_db = {} is not above floor_db = {}",
                    settings.ceiling_db, settings.floor_db
                ),
                Some(
                    "the mouth opens from floor_db to ceiling_db: e.g. floor_db = -50, \
                     ceiling_db = -30"
                        .to_string(),
                ),
            ));
        }
        Ok(())
    }
}
