//! Expressions: faces a key, a chat command or the API switches on and off (a smile, angry
//! brows, a wink), each one a layer of the mixer that fades in and out.
//!
//! An expression has ARKit channel values (mixed in ARKit space like any layer) and avatar-space
//! `targets` (morph targets or `vrm:NAME`, applied after the mapping as `[layers.NAME]
//! targets` are), fade times, a mode (`toggle` flips on each press, `hold` is on while the key
//! is down), a layer (a new expression on the same layer replaces the one there, fading; those
//! on different layers stack), the face regions it takes from the phone while on (`holds`) and
//! an optional stage key.
//!
//! [`ExpressionSet`] is the runtime: pure and driven by the instants it is given, like the
//! mixer, so it runs the same live, in a replay and in tests with simulated time. It turns
//! triggers into [`Change`]s for the mixer, and gives the mixer's layers, the regions held from
//! tracking and the hotkeys for the API.

mod key;
mod section;
mod set;
mod source;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

pub use key::{Key, KeyError, KEY_NAMES, MODIFIER_NAMES};
pub use section::{
    ExpressionSpec, ExpressionsError, ExpressionsSection, DEFAULT_EXPRESSION_FADE,
    DEFAULT_EXPRESSION_LAYER, MAX_EXPRESSION_FADE,
};
pub use set::{Change, ExpressionError, ExpressionSet, Hotkey, Trigger};
pub use source::{ExpressionInput, ExpressionNews, ExpressionSource, TriggerSource};

use crate::arkit::Channel;
use crate::mixer::LayerSpec;
use crate::mixer::{BlendMode, Fade, Layer, Region, RegionMask};

/// The prefix of an expression's layer name in the mixer: `expression:NAME`.
pub const LAYER_PREFIX: &str = "expression:";

/// How a key drives an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpressionMode {
    /// Each press flips it on or off.
    #[default]
    Toggle,
    /// On while the key is held, off when it is let go.
    Hold,
}

impl ExpressionMode {
    /// The name used in `facewire.toml`.
    pub fn name(self) -> &'static str {
        match self {
            ExpressionMode::Toggle => "toggle",
            ExpressionMode::Hold => "hold",
        }
    }
}

/// One expression, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// Its name, as in `[expressions.NAME]`.
    pub name: String,
    /// ARKit channel values, each 0 to 1.
    pub values: Vec<(Channel, f32)>,
    /// Avatar-space values: morph target names or `vrm:NAME`, each 0 to 1.
    pub targets: BTreeMap<String, f32>,
    /// Time to fade in.
    pub fade_in: Duration,
    /// Time to fade out.
    pub fade_out: Duration,
    /// Toggle or hold.
    pub mode: ExpressionMode,
    /// Its layer; expressions on the same layer replace each other.
    pub layer: String,
    /// The regions the phone's tracking stops driving while it is on.
    pub holds: RegionMask,
    /// The stage key that triggers it.
    pub key: Option<Key>,
    /// How its values blend with the layers below.
    pub blend: BlendMode,
}

/// Seconds made a duration; validation keeps them in range, and anything else becomes 0.
fn seconds(s: f32) -> Duration {
    Duration::try_from_secs_f32(s.clamp(0.0, MAX_EXPRESSION_FADE)).unwrap_or_default()
}

impl Expression {
    /// An expression called `name` with nothing in it: default fades, toggle, the default layer,
    /// override.
    pub fn new(name: &str) -> Expression {
        Expression {
            name: name.to_string(),
            values: Vec::new(),
            targets: BTreeMap::new(),
            fade_in: seconds(DEFAULT_EXPRESSION_FADE),
            fade_out: seconds(DEFAULT_EXPRESSION_FADE),
            mode: ExpressionMode::Toggle,
            layer: DEFAULT_EXPRESSION_LAYER.to_string(),
            holds: RegionMask::NONE,
            key: None,
            blend: BlendMode::Override,
        }
    }

    /// The expression `spec` describes (validated: names that do not parse are left out and
    /// values are clamped to [0, 1]).
    pub fn from_spec(name: &str, spec: &ExpressionSpec) -> Expression {
        let unit = |v: f32| {
            if v.is_finite() {
                v.clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        let holds = if spec
            .holds
            .iter()
            .any(|r| r.get_ref().trim().eq_ignore_ascii_case("all"))
        {
            RegionMask::ALL
        } else {
            let regions: Vec<Region> = spec
                .holds
                .iter()
                .filter_map(|r| Region::parse(r.get_ref()))
                .collect();
            RegionMask::of(&regions)
        };
        let fade = |f: &Option<toml::Spanned<f32>>| {
            seconds(f.as_ref().map_or(DEFAULT_EXPRESSION_FADE, |v| *v.get_ref()))
        };
        Expression {
            name: name.to_string(),
            values: spec
                .values
                .iter()
                .filter_map(|(c, v)| Channel::parse(c.get_ref()).map(|c| (c, unit(*v.get_ref()))))
                .collect(),
            targets: spec
                .targets
                .iter()
                .map(|(t, v)| (t.get_ref().clone(), unit(*v.get_ref())))
                .collect(),
            fade_in: fade(&spec.fade_in),
            fade_out: fade(&spec.fade_out),
            mode: spec.mode,
            layer: spec
                .layer
                .as_ref()
                .map(|l| l.get_ref().trim())
                .filter(|l| !l.is_empty())
                .unwrap_or(DEFAULT_EXPRESSION_LAYER)
                .to_string(),
            holds,
            key: spec.key.as_ref().and_then(|k| Key::parse(k.get_ref()).ok()),
            blend: spec.blend,
        }
    }

    /// The name of its layer in the mixer, `expression:NAME`.
    pub fn layer_name(&self) -> String {
        layer_name(&self.name)
    }

    /// The regions its channel values lie in: its mixer layer's mask.
    pub fn mask(&self) -> RegionMask {
        let regions: Vec<Region> = self.values.iter().map(|(c, _)| Region::of(*c)).collect();
        RegionMask::of(&regions)
    }

    /// Its mixer layer, off (weight 0), with its values, mask, blend mode and fade times.
    pub fn layer(&self) -> Layer {
        let mut layer = Layer::new(
            &self.layer_name(),
            self.blend,
            self.mask(),
            Fade::new(false, self.fade_in, self.fade_out),
        );
        for &(c, v) in &self.values {
            layer.values.set(c, v);
        }
        layer
    }

    /// The `[layers.NAME]` table its layer would have: its mode, mask, fades and targets, so
    /// that [`crate::mapping::LayerTargets`] resolves its avatar-space values like any layer's
    /// (see [`ExpressionSet::stacked_on`]).
    pub fn layer_spec(&self) -> LayerSpec {
        LayerSpec {
            mode: self.blend,
            regions: self.mask(),
            weight: 1.0,
            fade_in: Some(self.fade_in.as_secs_f32()),
            fade_out: Some(self.fade_out.as_secs_f32()),
            enabled: Some(false),
            values: self
                .values
                .iter()
                .map(|(c, v)| (c.name().to_string(), *v))
                .collect(),
            targets: self.targets.clone(),
        }
    }
}

/// The mixer layer name of the expression called `name`.
pub fn layer_name(name: &str) -> String {
    format!("{LAYER_PREFIX}{name}")
}

/// The VRM 1.0 preset expressions every VRM avatar may have, by name.
pub const VRM_PRESETS: [&str; 5] = ["happy", "angry", "sad", "relaxed", "surprised"];

/// The VRM preset expressions (happy, angry, sad, relaxed, surprised) that the avatar has,
/// ready without configuration: each moves its `vrm:NAME` expression fully, on the default
/// layer (so they replace each other); angry, sad and surprised hold the brows from the phone.
/// `avatar_has` says whether the avatar has the expression of a preset name (VRM 1.0 names;
/// a VRM 0.x model's `joy`, `sorrow` and `fun` answer to happy, sad and relaxed).
pub fn vrm_presets(avatar_has: impl Fn(&str) -> bool) -> Vec<Expression> {
    VRM_PRESETS
        .into_iter()
        .filter(|name| avatar_has(name))
        .map(|name| {
            let mut e = Expression::new(name);
            e.targets.insert(format!("vrm:{name}"), 1.0);
            if matches!(name, "angry" | "sad" | "surprised") {
                e.holds = RegionMask::of(&[Region::Brows]);
            }
            e
        })
        .collect()
}

/// The configured expressions followed by the presets whose names none of them takes (names
/// compared without regard to case): a configured `[expressions.happy]` replaces the preset.
pub fn with_presets(configured: Vec<Expression>, presets: Vec<Expression>) -> Vec<Expression> {
    let mut all = configured;
    for preset in presets {
        if !all
            .iter()
            .any(|e| e.name.eq_ignore_ascii_case(&preset.name))
        {
            all.push(preset);
        }
    }
    all
}

/// One expression as the chain last published it, for the control panel and the API.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressionStatus {
    /// Its name.
    pub name: String,
    /// Its stage key.
    pub key: Option<Key>,
    /// Toggle or hold.
    pub mode: ExpressionMode,
    /// Its layer (expressions on the same layer replace each other).
    pub layer: String,
    /// Whether it is switched on.
    pub on: bool,
    /// Its weight now, 0 to 1 (it fades in and out).
    pub weight: f32,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn presets_follow_what_the_avatar_has() {
        let presets = vrm_presets(|n| n != "surprised");
        let names: Vec<&str> = presets.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["happy", "angry", "sad", "relaxed"]);
        assert_eq!(presets[1].targets.get("vrm:angry"), Some(&1.0));
        assert!(presets[1].holds.contains(Region::Brows));
        assert_eq!(presets[0].holds, RegionMask::NONE);
        assert!(presets.iter().all(|e| e.layer == DEFAULT_EXPRESSION_LAYER));
        // Avatar-space only: the mixer layer drives no ARKit region.
        assert_eq!(presets[0].layer().mask, RegionMask::NONE);

        let mut mine = Expression::new("Happy");
        mine.values.push((Channel::MouthSmileLeft, 1.0));
        let all = with_presets(vec![mine], presets);
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Happy", "angry", "sad", "relaxed"]);
        assert!(vrm_presets(|_| false).is_empty());
    }

    #[test]
    fn an_expression_is_a_mixer_layer_and_a_layer_table() {
        let mut e = Expression::new("smile");
        e.values = vec![
            (Channel::MouthSmileLeft, 0.8),
            (Channel::CheekSquintLeft, 0.4),
        ];
        e.targets.insert("Blush".into(), 0.5);
        e.blend = BlendMode::Max;
        let layer = e.layer();
        assert_eq!(layer.name, "expression:smile");
        assert_eq!(layer.mode, BlendMode::Max);
        assert_eq!(
            layer.mask,
            RegionMask::of(&[Region::MouthJaw, Region::CheeksNose])
        );
        assert_eq!(layer.weight(), 0.0);
        assert_eq!(layer.fade.times(), (e.fade_in, e.fade_out));
        assert_eq!(layer.values.get(Channel::MouthSmileLeft), Some(0.8));
        let spec = e.layer_spec();
        assert_eq!(spec.targets.get("Blush"), Some(&0.5));
        assert_eq!(spec.mode, BlendMode::Max);
        assert_eq!(spec.enabled, Some(false));
    }
}
