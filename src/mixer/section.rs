//! `[layers]`: the mixer's stack, bottom to top, and the fixed poses a tech artist or performer
//! adds to it.
//!
//! ```toml
//! [layers]
//! order = ["tracking", "smile"]
//!
//! [layers.smile]
//! mode = "add"
//! regions = ["mouth"]
//! values = { mouthSmileLeft = 0.25, mouthSmileRight = 0.25 }
//! targets = { "vrm:Joy" = 0.3 }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{BlendMode, RegionMask, LAYER_IDLE, LAYER_LIPSYNC, LAYER_REST, LAYER_TRACKING};
use crate::arkit::{Channel, MAX_ORDER};
use crate::diagnostic::nearest;

/// The fade time of a layer that does not set one, in seconds.
pub const DEFAULT_FADE: f32 = 0.3;

/// One `[layers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LayerSpec {
    /// How it blends: "override", "add" or "max".
    pub mode: BlendMode,
    /// The face regions it drives: any of eyes, gaze, brows, mouth, cheeks, tongue, head, or
    /// "all".
    pub regions: RegionMask,
    /// The most its weight reaches, 0 to 1.
    pub weight: f32,
    /// Seconds to fade in; `None`: [`DEFAULT_FADE`].
    pub fade_in: Option<f32>,
    /// Seconds to fade out; `None`: [`DEFAULT_FADE`].
    pub fade_out: Option<f32>,
    /// Whether it is on when facewire starts; `None`: on.
    pub enabled: Option<bool>,
    /// Fixed channel values by ARKit name (any spelling), 0 to 1.
    pub values: BTreeMap<String, f32>,
    /// Fixed values of the avatar's own morph targets (by name) or VRM expressions
    /// (`vrm:NAME`), 0 to 1, applied after the mapping by the layer's mode and weight.
    pub targets: BTreeMap<String, f32>,
}

impl Default for LayerSpec {
    fn default() -> LayerSpec {
        LayerSpec {
            mode: BlendMode::Override,
            regions: RegionMask::ALL,
            weight: 1.0,
            fade_in: None,
            fade_out: None,
            enabled: None,
            values: BTreeMap::new(),
            targets: BTreeMap::new(),
        }
    }
}

impl LayerSpec {
    /// The channel values, parsed (validation has checked the names).
    pub fn channel_values(&self) -> impl Iterator<Item = (Channel, f32)> + '_ {
        self.values
            .iter()
            .filter_map(|(name, v)| Channel::parse(name).map(|c| (c, *v)))
    }
}

/// `[layers]`: the order of the mixer's layers and their tables.
#[derive(Debug, Clone, PartialEq)]
pub struct LayersSection {
    /// Layer names, bottom to top; the rest pose is always beneath them.
    pub order: Vec<String>,
    /// `[layers.NAME]` tables.
    pub specs: BTreeMap<String, LayerSpec>,
}

impl Default for LayersSection {
    fn default() -> LayersSection {
        LayersSection {
            order: vec![LAYER_TRACKING.to_string()],
            specs: BTreeMap::new(),
        }
    }
}

impl LayersSection {
    /// The table of `name`, or the defaults.
    pub fn spec(&self, name: &str) -> LayerSpec {
        self.specs.get(name).cloned().unwrap_or_default()
    }

    /// Checks what serde cannot: `Err((key, message, hint))`, `key` being where to point.
    pub fn check(&self) -> Result<(), (String, String, String)> {
        let at_order = |message: String, hint: &str| Err(("order".into(), message, hint.into()));
        if self.order.len() > MAX_ORDER {
            return at_order(
                format!(
                    "{} layers; layers.order lists at most {MAX_ORDER}",
                    self.order.len()
                ),
                "combine fixed poses into fewer layers",
            );
        }
        for (i, name) in self.order.iter().enumerate() {
            if name == LAYER_REST {
                return at_order(
                    "`rest` is always the bottom layer and is not listed".into(),
                    "remove \"rest\" from layers.order",
                );
            }
            if self.order[..i].contains(name) {
                return at_order(
                    format!("layer `{name}` is listed twice"),
                    "list each layer once, bottom to top",
                );
            }
            let made = [LAYER_TRACKING, LAYER_LIPSYNC, LAYER_IDLE];
            if !made.contains(&name.as_str()) && !self.specs.contains_key(name) {
                let known: Vec<&str> = self.specs.keys().map(String::as_str).collect();
                let hint = match nearest(name, known.iter().copied()) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("add a [layers.{name}] table with its values"),
                };
                return at_order(
                    format!("layer `{name}` has no [layers.{name}] table"),
                    &hint,
                );
            }
        }
        if !self.order.iter().any(|n| n == LAYER_TRACKING) {
            return at_order(
                "layers.order has no `tracking` layer: the phone would drive nothing".into(),
                "put \"tracking\" in layers.order, usually first",
            );
        }
        for (name, spec) in &self.specs {
            let fail =
                |key: &str, message: String, hint: String| Err((key.to_string(), message, hint));
            if name == LAYER_LIPSYNC {
                return fail(
                    "order",
                    "[layers.lipsync] is made by lip sync, not by a table".into(),
                    "set lip sync up in [lipsync]; list \"lipsync\" in layers.order only to \
                     place it"
                        .into(),
                );
            }
            if name == LAYER_IDLE {
                return fail(
                    "order",
                    "[layers.idle] is made by idle life, not by a table".into(),
                    "set idle life up in [idle]; list \"idle\" in layers.order only to place it"
                        .into(),
                );
            }
            if !self.order.contains(name) {
                return fail(
                    "order",
                    format!("[layers.{name}] is not in layers.order"),
                    format!("add \"{name}\" to layers.order where it belongs (bottom to top)"),
                );
            }
            if !(0.0..=1.0).contains(&spec.weight) {
                return fail(
                    "weight",
                    format!("[layers.{name}] weight = {} is out of range", spec.weight),
                    "use 0 to 1, e.g. weight = 0.5".into(),
                );
            }
            for (key, value) in [("fade_in", spec.fade_in), ("fade_out", spec.fade_out)] {
                if let Some(v) = value {
                    if name == LAYER_TRACKING {
                        return fail(
                            key,
                            format!("[layers.tracking] takes no {key}"),
                            "the tracking layer fades by [tracking]'s hold, fade and ease_in"
                                .into(),
                        );
                    }
                    if !(0.0..=60.0).contains(&v) {
                        return fail(
                            key,
                            format!("[layers.{name}] {key} = {v} is out of range"),
                            "use 0 to 60 seconds, e.g. 0.3".into(),
                        );
                    }
                }
            }
            let tracking_extra = [
                ("values", !spec.values.is_empty()),
                ("targets", !spec.targets.is_empty()),
                ("enabled", spec.enabled.is_some()),
            ]
            .into_iter()
            .find(|(_, given)| *given);
            if let (true, Some((key, _))) = (name == LAYER_TRACKING, tracking_extra) {
                return fail(
                    key,
                    format!("[layers.tracking] takes no {key}"),
                    "the tracking layer's values come from the phone; it takes mode, regions \
                     and weight"
                        .into(),
                );
            }
            for (channel, v) in &spec.values {
                if Channel::parse(channel).is_none() {
                    let names = Channel::ALL.map(Channel::name);
                    let hint = match nearest(channel, names) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => "use ARKit names such as jawOpen or mouthSmileLeft".into(),
                    };
                    return fail(channel, format!("unknown channel `{channel}`"), hint);
                }
                if !v.is_finite() || !(0.0..=1.0).contains(v) {
                    return fail(
                        channel,
                        format!("[layers.{name}] {channel} = {v} is out of range"),
                        "channel values run from 0 to 1".into(),
                    );
                }
            }
            for (target, v) in &spec.targets {
                if target.trim().is_empty() {
                    return fail(
                        "targets",
                        format!("[layers.{name}] names an empty target"),
                        "write the avatar's morph target name, or vrm:NAME for an expression"
                            .into(),
                    );
                }
                if !v.is_finite() || !(0.0..=1.0).contains(v) {
                    return fail(
                        target,
                        format!("[layers.{name}] target {target} = {v} is out of range"),
                        "target values run from 0 to 1".into(),
                    );
                }
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for LayersSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LayersSection, D::Error> {
        struct Tables;

        impl<'de> Visitor<'de> for Tables {
            type Value = LayersSection;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`order = [...]` and [layers.NAME] tables")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LayersSection, A::Error> {
                let mut section = LayersSection::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "order" {
                        section.order = map.next_value()?;
                    } else {
                        let spec: LayerSpec = map.next_value()?;
                        section.specs.insert(key, spec);
                    }
                }
                Ok(section)
            }
        }

        d.deserialize_map(Tables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixer::Region;

    fn parse(text: &str) -> Result<LayersSection, String> {
        #[derive(Deserialize)]
        struct File {
            layers: LayersSection,
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        file.layers
            .check()
            .map_err(|(key, m, h)| format!("{key}: {m} ({h})"))?;
        Ok(file.layers)
    }

    #[test]
    fn a_fixed_pose_layer_parses() {
        let layers = parse(
            "[layers]\norder = [\"tracking\", \"smile\"]\n\n[layers.smile]\nmode = \"add\"\n\
             regions = [\"mouth\"]\nfade_in = 0.5\nvalues = { MouthSmile_L = 0.25 }\n",
        )
        .unwrap();
        assert_eq!(layers.order, ["tracking", "smile"]);
        let smile = layers.spec("smile");
        assert_eq!(smile.mode, BlendMode::Add);
        assert_eq!(smile.regions, RegionMask::of(&[Region::MouthJaw]));
        assert_eq!(smile.fade_in, Some(0.5));
        let values: Vec<_> = smile.channel_values().collect();
        assert_eq!(values, [(Channel::MouthSmileLeft, 0.25)]);
        assert_eq!(layers.spec("tracking"), LayerSpec::default());
    }

    #[test]
    fn mistakes_are_named_with_a_fix() {
        let cases = [
            ("[layers]\norder = []\n", "no `tracking` layer"),
            (
                "[layers]\norder = [\"rest\", \"tracking\"]\n",
                "`rest` is always",
            ),
            (
                "[layers]\norder = [\"tracking\", \"smile\"]\n",
                "no [layers.smile] table",
            ),
            (
                "[layers]\norder = [\"tracking\"]\n[layers.smile]\nvalues = { jawOpen = 1.0 }\n",
                "not in layers.order",
            ),
            (
                "[layers]\norder = [\"tracking\", \"a\"]\n[layers.a]\nvalues = { jawOpn = 1.0 }\n",
                "did you mean `jawOpen`?",
            ),
            (
                "[layers]\norder = [\"tracking\", \"a\"]\n[layers.a]\nvalues = { jawOpen = 2.0 }\n",
                "out of range",
            ),
            (
                "[layers.tracking]\nfade_in = 1.0\n",
                "[tracking]'s hold, fade and ease_in",
            ),
            (
                "[layers.tracking]\nvalues = { jawOpen = 1.0 }\n",
                "come from the phone",
            ),
            (
                "[layers]\norder = [\"tracking\", \"a\"]\n[layers.a]\nregions = [\"lips\"]\n",
                "unknown face region",
            ),
            (
                "[layers]\norder = [\"tracking\", \"a\"]\n[layers.a]\nmood = \"add\"\n",
                "unknown field `mood`",
            ),
        ];
        for (text, expected) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(expected), "{text}\n=> {e}");
        }
    }
}
