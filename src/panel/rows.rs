//! The model of the control panel's channel rows, free of egui: for each ARKit channel the raw,
//! calibrated and final values, each mixer layer's part, and the avatar targets it drives.

use crate::arkit::{Channel, FaceFrame};
use crate::avatar::{Avatar, Pose};
use crate::control::telemetry::TelemetrySnapshot;
use crate::mapping::CompiledMapping;
use crate::mixer::{BlendMode, LayerReport, MixerReport, RegionMask, LAYER_REST, LAYER_TRACKING};

/// One mixer layer's part in a channel: the layer's value of the channel and the weight the
/// layer blends with now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerCell {
    /// The layer's value of the channel, 0 to 1.
    pub value: f32,
    /// The layer's current weight, 0 to 1.
    pub weight: f32,
}

impl LayerCell {
    /// The value scaled by the weight: what the cell's meter shows.
    pub fn scaled(self) -> f32 {
        self.value * self.weight
    }
}

/// One channel's row of meters.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelRow {
    /// The channel.
    pub channel: Channel,
    /// Its value as the phone sent it, when the newest frame carries it.
    pub raw: Option<f32>,
    /// Its value after calibration and smoothing.
    pub calibrated: Option<f32>,
    /// Each of [`layer_columns`]' layers, in order: its part in this channel, `None` where the
    /// layer does not drive it. Empty without a mixer report.
    pub layers: Vec<Option<LayerCell>>,
    /// Its final value after the mixer, when the newest mixed frame carries it.
    pub mixed: Option<f32>,
    /// The avatar targets it drives, with their weights in the pose being drawn.
    pub targets: Vec<(String, f32)>,
}

impl ChannelRow {
    /// Whether the channel reads above zero: raw, calibrated or final.
    pub fn moving(&self) -> bool {
        [self.raw, self.calibrated, self.mixed]
            .into_iter()
            .flatten()
            .any(|v| v > 0.01)
    }
}

/// The layers of `report` that get a column of their own beside the channels: every layer but
/// the rest pose and the tracking layer (whose values are the calibrated column), bottom to top;
/// expressions and the API's injected values only while they show.
pub fn layer_columns(report: &MixerReport) -> impl Iterator<Item = &LayerReport> {
    report
        .layers
        .iter()
        .filter(|l| l.name != LAYER_REST && l.name != LAYER_TRACKING && shown(l))
}

/// Whether a layer is worth showing: an expression only while it has weight (there may be
/// many, mostly off), the API's layer only while a plugin injects values, any other layer
/// always.
fn shown(layer: &LayerReport) -> bool {
    if layer.name.starts_with(crate::expressions::LAYER_PREFIX) {
        layer.contribution.weight > 0.0
    } else if layer.name == crate::api::LAYER_API {
        !layer.contribution.present.is_empty()
    } else {
        true
    }
}

/// The regions whose channels `present` touches, in [`Region::ALL`] order.
/// The mixer's layers bottom to top with their weights, as one status line:
/// `layers: rest · tracking 1.00 · smile 0.42 (add, mouth)`. The brackets give the blend mode
/// when it is not `override` and the face regions the layer may drive when they are not all of
/// them. The rest pose has no weight (it is always under everything). Expressions and the
/// API's layer are listed while they show.
pub fn layers_line(report: &MixerReport) -> String {
    let parts: Vec<String> = report
        .layers
        .iter()
        .filter(|l| shown(l))
        .map(|layer| {
            if layer.name == LAYER_REST {
                return layer.name.clone();
            }
            let c = &layer.contribution;
            let mut notes = Vec::new();
            if c.mode != BlendMode::Override {
                notes.push(c.mode.name().to_string());
            }
            if c.mask != RegionMask::ALL {
                notes.push(c.mask.to_string());
            }
            let mut part = format!("{} {:.2}", layer.name, c.weight);
            if !notes.is_empty() {
                part.push_str(&format!(" ({})", notes.join(", ")));
            }
            part
        })
        .collect();
    format!("layers: {}", parts.join(" · "))
}

/// The meters of every channel, in canonical order: raw, calibrated and final (mixed) values
/// from `telemetry`, each [`layer_columns`] layer's part from its mixer report, and for each
/// channel the targets of `avatar` that `mapping` drives from it, with their weights in `pose`.
pub fn channel_rows(
    telemetry: &TelemetrySnapshot,
    mapping: &CompiledMapping,
    avatar: &Avatar,
    pose: &Pose,
) -> Vec<ChannelRow> {
    let value = |frame: &Option<FaceFrame>, c: Channel| frame.as_ref().and_then(|f| f.get(c));
    let columns: Vec<&LayerReport> = telemetry
        .mix
        .as_deref()
        .map(|r| layer_columns(r).collect())
        .unwrap_or_default();
    let mut rows: Vec<ChannelRow> = Channel::ALL
        .iter()
        .map(|&channel| ChannelRow {
            channel,
            raw: value(&telemetry.raw, channel),
            calibrated: value(&telemetry.calibrated, channel),
            layers: columns
                .iter()
                .map(|l| {
                    let c = &l.contribution;
                    c.present.contains(channel).then(|| LayerCell {
                        value: c.weights[channel.index()],
                        weight: c.weight,
                    })
                })
                .collect(),
            mixed: value(&telemetry.mixed, channel),
            targets: Vec::new(),
        })
        .collect();
    for binding in &mapping.targets {
        let Some(driver) = mapping.drivers.get(binding.driver) else {
            continue;
        };
        if avatar.mesh_is_coarser_level(binding.mesh) {
            continue;
        }
        let name = target_label(avatar, binding.mesh, binding.target);
        let weight = pose
            .weights
            .get(binding.mesh)
            .and_then(|w| w.get(binding.target))
            .copied()
            .unwrap_or(0.0);
        for channel in driver.sources.iter().filter_map(|(s, _)| s.channel()) {
            add(&mut rows, channel, &name, weight);
        }
    }
    // A VRM avatar moves its face through its expressions (blink, the vowels, the presets),
    // its eyes and jaw through bones: each is named where its channels drive it.
    let mixed = telemetry.mixed.as_ref();
    let expressions = avatar.vrm.as_ref().map_or(&[][..], |v| &v.expressions[..]);
    for binding in &mapping.expressions {
        let Some(driver) = mapping.drivers.get(binding.driver) else {
            continue;
        };
        let Some(expression) = expressions.get(binding.expression) else {
            continue;
        };
        let name = format!("expression {}", expression.name);
        let weight = mixed
            .and_then(|f| binding.weight(&mapping.drivers, f))
            .unwrap_or(0.0);
        for channel in driver.sources.iter().filter_map(|(s, _)| s.channel()) {
            add(&mut rows, channel, &name, weight);
        }
    }
    let value = |c: Channel| mixed.and_then(|f| f.get(c)).unwrap_or(0.0);
    use Channel::*;
    let eyes = [
        (
            mapping.left_eye,
            "left eye bone",
            [
                EyeLookUpLeft,
                EyeLookDownLeft,
                EyeLookInLeft,
                EyeLookOutLeft,
            ],
        ),
        (
            mapping.right_eye,
            "right eye bone",
            [
                EyeLookUpRight,
                EyeLookDownRight,
                EyeLookInRight,
                EyeLookOutRight,
            ],
        ),
    ];
    for (node, name, channels) in eyes {
        if node.is_some() {
            for channel in channels {
                add(&mut rows, channel, name, value(channel));
            }
        }
    }
    if let Some(channel) = mapping.jaw.as_ref().and_then(|j| j.source.channel()) {
        add(&mut rows, channel, "jaw bone", value(channel));
    }
    rows
}

/// Adds `name` at `weight` to what `channel`'s row drives, once.
fn add(rows: &mut [ChannelRow], channel: Channel, name: &str, weight: f32) {
    let row = &mut rows[channel.index()];
    if !row.targets.iter().any(|(n, _)| n == name) {
        row.targets.push((name.to_string(), weight.clamp(0.0, 1.0)));
    }
}

/// `mesh/target` as the panel names a morph target (the target's index where it has no name).
pub fn target_label(avatar: &Avatar, mesh: usize, target: usize) -> String {
    let Some(m) = avatar.meshes.get(mesh) else {
        return format!("mesh {mesh}/{target}");
    };
    let mesh_name = m.name.clone().unwrap_or_else(|| format!("mesh {mesh}"));
    match m.target_names.get(target).filter(|n| !n.is_empty()) {
        Some(name) if avatar.meshes.len() == 1 => name.clone(),
        Some(name) => format!("{mesh_name}/{name}"),
        None => format!("{mesh_name}/#{target}"),
    }
}

/// Every target weight of the pose being drawn, as (label, weight), in mesh and target order.
/// Meshes drawn only as a coarser level of detail are left out: they repeat the finest level's
/// targets and weights.
pub fn target_weights(avatar: &Avatar, pose: &Pose) -> Vec<(String, f32)> {
    let mut out = Vec::new();
    for (mesh, weights) in pose.weights.iter().enumerate() {
        if avatar.mesh_is_coarser_level(mesh) {
            continue;
        }
        for (target, &w) in weights.iter().enumerate() {
            out.push((target_label(avatar, mesh, target), w));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{LodGroup, Mesh, Node};
    use crate::control::telemetry::Telemetry;
    use crate::mapping::{Driver, TargetBinding};
    use std::time::Instant;

    /// A face (node 0, mesh 0) with one coarser level (node 1, mesh 1) carrying the same
    /// target, both bound to jawOpen.
    fn two_levels() -> (Avatar, CompiledMapping, Pose) {
        let mesh = |name: &str| Mesh {
            name: Some(name.into()),
            target_names: vec!["jawOpen".into()],
            default_weights: vec![0.0],
            primitives: Vec::new(),
        };
        let node = |mesh: usize| Node {
            mesh: Some(mesh),
            ..Node::default()
        };
        let avatar = Avatar {
            meshes: vec![mesh("Face"), mesh("Face_LOD1")],
            nodes: vec![node(0), node(1)],
            roots: vec![0, 1],
            lods: vec![LodGroup {
                levels: vec![0, 1],
                coverage: Vec::new(),
            }],
            ..Avatar::default()
        };
        let mut mapping = CompiledMapping::auto(&Avatar::default());
        mapping.drivers = vec![Driver::identity(Channel::JawOpen)];
        mapping.targets = (0..2)
            .map(|mesh| TargetBinding {
                mesh,
                target: 0,
                driver: 0,
            })
            .collect();
        let pose = Pose {
            weights: vec![vec![0.5], vec![0.5]],
            rotations: Vec::new(),
            translations: Vec::new(),
            materials: Vec::new(),
            wrinkles: [0.0; crate::avatar::MAX_WRINKLE_MAPS],
        };
        (avatar, mapping, pose)
    }

    #[test]
    fn coarser_levels_are_not_listed_twice() {
        let (avatar, mapping, pose) = two_levels();
        assert!(avatar.mesh_is_coarser_level(1) && !avatar.mesh_is_coarser_level(0));
        let snapshot = Telemetry::new(Instant::now()).snapshot();
        let rows = channel_rows(&snapshot, &mapping, &avatar, &pose);
        assert_eq!(
            rows[Channel::JawOpen.index()].targets,
            [("Face/jawOpen".to_string(), 0.5)]
        );
        assert_eq!(
            target_weights(&avatar, &pose),
            [("Face/jawOpen".to_string(), 0.5)]
        );
    }
}
