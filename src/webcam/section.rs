//! `[webcam]`: face tracking from a webcam instead of a phone: whether, which camera, and what
//! to ask of it.

use serde::Deserialize;

use crate::diagnostic::{key_offset, Located};

/// `[webcam]`. See the README's "No phone? Use a webcam".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebcamConfig {
    /// Track the webcam instead of listening for a phone (`--webcam` on `run` and `relay` turns
    /// it on for one run).
    pub enabled: bool,
    /// The camera: `""` the first, a number as `facewire webcam --list` prints it, or (part
    /// of) its name or device (`/dev/video2`).
    pub device: String,
    /// Frame width asked of the camera, pixels; it gives the nearest it has.
    pub width: u32,
    /// Frame height asked of the camera, pixels.
    pub height: u32,
    /// Frames a second asked of the camera.
    pub fps: u32,
}

impl Default for WebcamConfig {
    fn default() -> WebcamConfig {
        WebcamConfig {
            enabled: false,
            device: String::new(),
            width: 640,
            height: 480,
            fps: 30,
        }
    }
}

impl WebcamConfig {
    /// The camera asked for, `None` for the first.
    pub fn device(&self) -> Option<&str> {
        let d = self.device.trim();
        (!d.is_empty()).then_some(d)
    }

    /// Checks the ranges; an error names the key's line and column in `text` (the file at
    /// `path`) and what to use.
    pub(crate) fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        let checks: [(&str, u32, (u32, u32), &str); 3] = [
            ("width", self.width, (64, 4096), "640"),
            ("height", self.height, (64, 4096), "480"),
            ("fps", self.fps, (1, 240), "30"),
        ];
        for (key, value, (lo, hi), example) in checks {
            if (lo..=hi).contains(&value) {
                continue;
            }
            // `width` and `height` are [window]'s keys too: look inside [webcam] first.
            let offset = text
                .find("[webcam]")
                .map(|s| key_offset(&text[s..], key).map_or(s, |k| s + k))
                .unwrap_or(0);
            return Err(Located::at(
                path,
                text,
                offset,
                format!("[webcam] {key} = {value} is out of range"),
                Some(format!("use {lo} to {hi}, e.g. {key} = {example}")),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_of_range_size_is_placed_in_the_webcam_section() {
        let text = "[window]\nwidth = 1280\n\n[webcam]\nenabled = true\nwidth = 20\n";
        let config: WebcamConfig = toml::from_str(text.split("[webcam]").nth(1).unwrap()).unwrap();
        let error = config.validate(text, "facewire.toml").unwrap_err();
        let shown = error.to_string();
        assert!(shown.contains("facewire.toml:6:1"), "{shown}");
        assert!(shown.contains("width = 20 is out of range"), "{shown}");
        assert!(shown.contains("64 to 4096"), "{shown}");
        assert_eq!(WebcamConfig::default().validate("", "f"), Ok(()));
        let named = WebcamConfig {
            device: " c920 ".into(),
            ..WebcamConfig::default()
        };
        assert_eq!(named.device(), Some("c920"));
        assert_eq!(WebcamConfig::default().device(), None);
    }
}
