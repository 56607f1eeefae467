//! `[idle]`: idle life, the blinks, breathing and glances the avatar shows while the phone does
//! not track the face (and, faintly, under live tracking if asked).

use serde::Deserialize;

use crate::diagnostic::{key_offset, Located};

/// `[idle]`. See the README's "When tracking drops".
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdleConfig {
    /// Whether the face comes alive while tracking is lost; off, it rests still at the
    /// neutral, as before idle life.
    pub enabled: bool,
    /// How much idle life stays on under live tracking, 0 to 1 (0: none).
    pub under_tracking: f32,
    /// The shortest and longest time from one blink to the next, seconds.
    pub blink_interval: [f32; 2],
    /// The chance that a blink comes twice in quick succession, 0 to 1.
    pub double_blink: f32,
    /// How far the head nods with each breath, degrees.
    pub breathing_degrees: f32,
    /// Breaths per second.
    pub breathing_rate: f32,
    /// How far the head sways side to side, slowly, degrees.
    pub sway_degrees: f32,
    /// How far the eyes glance away from the centre, degrees.
    pub gaze_degrees: f32,
    /// The shortest and longest time between two glances, seconds.
    pub gaze_interval: [f32; 2],
}

impl Default for IdleConfig {
    fn default() -> IdleConfig {
        IdleConfig {
            enabled: true,
            under_tracking: 0.0,
            blink_interval: [2.0, 7.0],
            double_blink: 0.1,
            breathing_degrees: 0.6,
            breathing_rate: 0.25,
            sway_degrees: 0.8,
            gaze_degrees: 4.0,
            gaze_interval: [1.5, 4.0],
        }
    }
}

impl IdleConfig {
    /// Checks the ranges; an error names the key's line and column in `text` (the file at
    /// `path`) and what to use.
    pub(crate) fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        let [blink_lo, blink_hi] = self.blink_interval;
        let [gaze_lo, gaze_hi] = self.gaze_interval;
        let checks: [(&str, f32, (f32, f32), &str); 11] = [
            ("under_tracking", self.under_tracking, (0.0, 1.0), "0.0"),
            ("blink_interval", blink_lo, (0.5, 60.0), "[2.0, 7.0]"),
            ("blink_interval", blink_hi, (0.5, 60.0), "[2.0, 7.0]"),
            ("double_blink", self.double_blink, (0.0, 1.0), "0.1"),
            (
                "breathing_degrees",
                self.breathing_degrees,
                (0.0, 5.0),
                "0.6",
            ),
            ("breathing_rate", self.breathing_rate, (0.05, 1.0), "0.25"),
            ("sway_degrees", self.sway_degrees, (0.0, 5.0), "0.8"),
            ("gaze_degrees", self.gaze_degrees, (0.0, 20.0), "4.0"),
            ("gaze_interval", gaze_lo, (0.2, 60.0), "[1.5, 4.0]"),
            ("gaze_interval", gaze_hi, (0.2, 60.0), "[1.5, 4.0]"),
            // Checked last: the order of the two ends.
            (
                "blink_interval",
                blink_hi - blink_lo,
                (0.0, 60.0),
                "[2.0, 7.0]",
            ),
        ];
        let locate = |key: &str| {
            let section = text.find("[idle]");
            section
                .and_then(|s| key_offset(&text[s..], key).map(|k| s + k))
                .or_else(|| key_offset(text, key))
                .or(section)
                .unwrap_or(0)
        };
        for (i, (key, value, (lo, hi), example)) in checks.into_iter().enumerate() {
            if value.is_finite() && (lo..=hi).contains(&value) {
                continue;
            }
            let (message, hint) = if i == checks.len() - 1 {
                (
                    format!("blink_interval = [{blink_lo}, {blink_hi}] runs backwards"),
                    format!("give the shortest time first, e.g. {key} = {example}"),
                )
            } else {
                (
                    format!("{key}: {value} is out of range"),
                    format!("use {lo} to {hi}, e.g. {key} = {example}"),
                )
            };
            return Err(Located::at(path, text, locate(key), message, Some(hint)));
        }
        if gaze_hi < gaze_lo {
            return Err(Located::at(
                path,
                text,
                locate("gaze_interval"),
                format!("gaze_interval = [{gaze_lo}, {gaze_hi}] runs backwards"),
                Some("give the shortest time first, e.g. gaze_interval = [1.5, 4.0]".into()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn idle_life_is_on_by_default_and_values_are_read() {
        let c = Config::default();
        assert!(c.idle.enabled);
        assert_eq!(c.idle.under_tracking, 0.0);
        assert_eq!(c.idle.blink_interval, [2.0, 7.0]);
        let c = Config::parse(
            "[idle]\nenabled = false\nunder_tracking = 0.2\nblink_interval = [3, 5]\n\
             gaze_degrees = 6\n",
            "f.toml",
        )
        .unwrap();
        assert!(!c.idle.enabled);
        assert_eq!(c.idle.under_tracking, 0.2);
        assert_eq!(c.idle.blink_interval, [3.0, 5.0]);
        assert_eq!(c.idle.gaze_degrees, 6.0);
    }

    #[test]
    fn bad_values_are_located_with_a_suggestion() {
        let err = Config::parse(
            "[camera]\nzoom = 1.0\n[idle]\n  gaze_degrees = 90\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("f.toml:4:3:"), "{err}");
        assert!(err.contains("use 0 to 20"), "{err}");
        let err = Config::parse("[idle]\nblink_interval = [7.0, 2.0]\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("runs backwards"), "{err}");
        let err = Config::parse("[idle]\nblink_interval = [0.1, 2.0]\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("use 0.5 to 60"), "{err}");
        let err = Config::parse("[idle]\ngaze_interval = [4.0, 1.0]\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("gaze_interval"), "{err}");
        let err = Config::parse("[idle]\nbreathing_degree = 1\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("breathing_degrees"), "{err}");
    }
}
