//! `[pose]`: how a humanoid avatar stands at rest, its arms relaxed or as modelled.

use serde::Deserialize;

use crate::avatar::ArmRest;
use crate::diagnostic::{key_offset, Located};

/// What happens to a humanoid's arms when the model loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArmsMode {
    /// Arms modelled in a T-pose or an A-pose come down to hang relaxed.
    #[default]
    Relaxed,
    /// Arms stay as the model has them.
    AsModelled,
}

/// `[pose]`: the rest pose of a humanoid avatar (VRM humanoid bones, or a rig whose bone names
/// say where the head, neck and chest are); other avatars are never changed. Read when the
/// model loads, from the avatar's mapping file when it has a `[pose]` section, else from
/// `facewire.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoseConfig {
    /// `relaxed` (the default) or `as_modelled`.
    pub arms: ArmsMode,
    /// Relaxed upper arms point this many degrees down from horizontal, seen from the front
    /// (0 to 90; 90 hangs them straight down).
    pub arm_down_degrees: f32,
    /// ...and swing this many degrees forward (-30 to 45; negative swings them back).
    pub arm_forward_degrees: f32,
    /// The elbows bend this many degrees, forearms forward (0 to 120).
    pub elbow_degrees: f32,
}

impl Default for PoseConfig {
    fn default() -> PoseConfig {
        let rest = ArmRest::default();
        PoseConfig {
            arms: ArmsMode::Relaxed,
            arm_down_degrees: rest.down_degrees,
            arm_forward_degrees: rest.forward_degrees,
            elbow_degrees: rest.elbow_degrees,
        }
    }
}

impl PoseConfig {
    /// The allowed range of `arm_down_degrees`.
    pub const DOWN_RANGE: (f32, f32) = (0.0, 90.0);
    /// The allowed range of `arm_forward_degrees`.
    pub const FORWARD_RANGE: (f32, f32) = (-30.0, 45.0);
    /// The allowed range of `elbow_degrees`.
    pub const ELBOW_RANGE: (f32, f32) = (0.0, 120.0);

    /// Where relaxed arms hang, or `None` when the arms stay as modelled.
    pub fn arm_rest(&self) -> Option<ArmRest> {
        (self.arms == ArmsMode::Relaxed).then_some(ArmRest {
            down_degrees: self.arm_down_degrees,
            forward_degrees: self.arm_forward_degrees,
            elbow_degrees: self.elbow_degrees,
        })
    }

    /// Checks the ranges; an error names the key's line and column in `text` (the file at
    /// `path`) and the range to use.
    pub(crate) fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        let checks = [
            ("arm_down_degrees", self.arm_down_degrees, Self::DOWN_RANGE),
            (
                "arm_forward_degrees",
                self.arm_forward_degrees,
                Self::FORWARD_RANGE,
            ),
            ("elbow_degrees", self.elbow_degrees, Self::ELBOW_RANGE),
        ];
        let default = PoseConfig::default();
        for (key, value, (lo, hi)) in checks {
            if value.is_finite() && (lo..=hi).contains(&value) {
                continue;
            }
            let example = match key {
                "arm_down_degrees" => default.arm_down_degrees,
                "arm_forward_degrees" => default.arm_forward_degrees,
                _ => default.elbow_degrees,
            };
            // The key inside `[pose]`, else wherever it is set, else the section.
            let section = text.find("[pose]");
            let offset = section
                .and_then(|s| key_offset(&text[s..], key).map(|k| s + k))
                .or_else(|| key_offset(text, key))
                .or(section)
                .unwrap_or(0);
            return Err(Located::at(
                path,
                text,
                offset,
                format!("{key} = {value} is out of range"),
                Some(format!(
                    "use {lo} to {hi} degrees, e.g. {key} = {example}, or arms = \"as_modelled\" \
                     to keep the arms as modelled"
                )),
            ));
        }
        Ok(())
    }
}
