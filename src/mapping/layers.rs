//! The avatar-space values of the mixer's layers (`targets` in a `[layers.NAME]` table): morph
//! targets by name and VRM expressions (`vrm:NAME`, through their morph binds), resolved against
//! the avatar once and applied after the mapping, each layer by its mode and the weight the
//! frame carries for it.

use super::compile::{expression_name, find_targets};
use crate::arkit::{FaceFrame, MAX_LAYERS};
use crate::avatar::vrm::Preset;
use crate::avatar::{Avatar, Pose};
use crate::diagnostic::nearest;
use crate::mixer::BlendMode;
use crate::mixer::LayersSection;

/// Why a layer's targets do not fit the avatar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} targets: {message}", table(layer))]
pub struct LayerTargetError {
    /// The layer.
    pub layer: String,
    /// What is wrong, with the nearest name when there is one.
    pub message: String,
}

/// The table a layer's targets are written in: `[expressions.NAME]` for an expression's
/// layer, else `[layers.NAME]`.
fn table(layer: &str) -> String {
    match layer.strip_prefix(crate::expressions::LAYER_PREFIX) {
        Some(name) => format!("[expressions.{name}]"),
        None => format!("[layers.{layer}]"),
    }
}

/// One layer's resolved targets.
#[derive(Debug, Clone, PartialEq)]
struct LayerSlots {
    /// The layer's place in `[layers].order` (its index in [`FaceFrame::layer_weights`]).
    layer: usize,
    /// How its values combine with the mapping's.
    mode: BlendMode,
    /// (mesh, target, value at full weight).
    slots: Vec<(usize, usize, f32)>,
}

/// Every layer's avatar-space values, resolved against one avatar.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LayerTargets {
    layers: Vec<LayerSlots>,
}

impl LayerTargets {
    /// Resolves the `targets` of every layer in `section` against `avatar`. A name that is a
    /// morph target moves every target of that name; `vrm:NAME` moves the expression's binds,
    /// each scaled by its bind weight (without the expression's snapping and overrides).
    pub fn compile(
        section: &LayersSection,
        avatar: &Avatar,
    ) -> Result<LayerTargets, LayerTargetError> {
        let mut layers = Vec::new();
        for (index, name) in section.order.iter().enumerate().take(MAX_LAYERS) {
            let Some(spec) = section.specs.get(name) else {
                continue;
            };
            let mut slots = Vec::new();
            for (target, &value) in &spec.targets {
                let error = |message: String| LayerTargetError {
                    layer: name.clone(),
                    message,
                };
                match expression_name(target) {
                    Some(expression) => {
                        let vrm = avatar.vrm.as_ref().ok_or_else(|| {
                            error(format!(
                                "`{target}` names a VRM expression, but the model is not a VRM \
                                 avatar"
                            ))
                        })?;
                        let found = vrm.expressions.iter().find(|e| {
                            e.name.eq_ignore_ascii_case(expression)
                                || e.preset
                                    .is_some_and(|p| p.name().eq_ignore_ascii_case(expression))
                        });
                        let Some(found) = found else {
                            let names = vrm.expressions.iter().flat_map(|e| {
                                std::iter::once(e.name.as_str()).chain(e.preset.map(Preset::name))
                            });
                            return Err(error(match nearest(expression, names) {
                                Some(best) => format!(
                                    "unknown expression `{target}`; did you mean `vrm:{best}`?"
                                ),
                                None => format!("the model has no expression `{target}`"),
                            }));
                        };
                        slots.extend(
                            found
                                .binds
                                .iter()
                                .map(|b| (b.mesh, b.target, b.weight * value)),
                        );
                    }
                    None => {
                        let found = find_targets(avatar, target);
                        if found.is_empty() {
                            let names = avatar
                                .meshes
                                .iter()
                                .flat_map(|m| m.target_names.iter().map(String::as_str));
                            return Err(error(match nearest(target, names) {
                                Some(best) => {
                                    format!(
                                        "unknown morph target `{target}`; did you mean `{best}`?"
                                    )
                                }
                                None => format!(
                                    "the model has no morph target `{target}` (`facewire sheet` \
                                     lists them)"
                                ),
                            }));
                        }
                        slots.extend(found.into_iter().map(|(m, t)| (m, t, value)));
                    }
                }
            }
            if !slots.is_empty() {
                layers.push(LayerSlots {
                    layer: index,
                    mode: spec.mode,
                    slots,
                });
            }
        }
        Ok(LayerTargets { layers })
    }

    /// Whether no layer has avatar-space values.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Blends each layer's values into `pose` (after the mapping wrote it) by the layer's
    /// weight in `frame`. Allocates nothing; every weight written is finite.
    pub fn apply(&self, frame: &FaceFrame, pose: &mut Pose) {
        for layer in &self.layers {
            let w = frame.layer_weights[layer.layer];
            // Off, or not a number: nothing to add.
            if w.is_nan() || w <= 0.0 {
                continue;
            }
            let w = w.min(1.0);
            for &(mesh, target, x) in &layer.slots {
                let Some(slot) = pose.weights.get_mut(mesh).and_then(|m| m.get_mut(target)) else {
                    continue;
                };
                let v = *slot;
                let mixed = match layer.mode {
                    BlendMode::Override => v + (x - v) * w,
                    BlendMode::Add => v + x * w,
                    BlendMode::Max => v.max(x * w),
                };
                if mixed.is_finite() {
                    *slot = mixed;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Protocol;
    use crate::mixer::LayerSpec;
    use std::time::Instant;

    fn section(targets: &[(&str, f32)], mode: BlendMode) -> LayersSection {
        let mut section = LayersSection::default();
        section.order.push("pose".into());
        let mut spec = LayerSpec {
            mode,
            ..LayerSpec::default()
        };
        for (n, v) in targets {
            spec.targets.insert((*n).into(), *v);
        }
        section.specs.insert("pose".into(), spec);
        section
    }

    fn head() -> Avatar {
        let glb = include_bytes!("../../models/default_head.glb");
        crate::avatar::load_slice(glb, "default head").unwrap()
    }

    #[test]
    fn targets_resolve_by_name_and_blend_by_weight_and_mode() {
        let avatar = head();
        let name = avatar
            .meshes
            .iter()
            .flat_map(|m| m.target_names.iter())
            .next()
            .unwrap()
            .clone();
        let layers =
            LayerTargets::compile(&section(&[(&name, 0.8)], BlendMode::Override), &avatar).unwrap();
        assert!(!layers.is_empty());
        let slots = find_targets(&avatar, &name);
        let mut frame = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        let at = |pose: &Pose| pose.weights[slots[0].0][slots[0].1];
        // Weight 0 (off, or before the mixer): the pose is untouched.
        let mut pose = avatar.rest_pose();
        layers.apply(&frame, &mut pose);
        assert_eq!(at(&pose), 0.0);
        frame.layer_weights[1] = 0.5;
        layers.apply(&frame, &mut pose);
        assert!((at(&pose) - 0.4).abs() < 1e-6);
        let add =
            LayerTargets::compile(&section(&[(&name, 0.8)], BlendMode::Add), &avatar).unwrap();
        let mut pose = avatar.rest_pose();
        pose.weights[slots[0].0][slots[0].1] = 0.5;
        add.apply(&frame, &mut pose);
        assert!((at(&pose) - 0.9).abs() < 1e-6);
    }

    #[test]
    fn unknown_names_suggest_the_nearest() {
        let avatar = head();
        let e = LayerTargets::compile(&section(&[("jawOpn", 1.0)], BlendMode::Override), &avatar)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("[layers.pose] targets: unknown morph target `jawOpn`"),
            "{e}"
        );
        assert!(e.contains("did you mean `jawOpen`?"), "{e}");
        let e = LayerTargets::compile(&section(&[("vrm:Joy", 1.0)], BlendMode::Override), &avatar)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a VRM avatar"), "{e}");
    }
}
