//! Wrinkle maps in the mapping file: `[wrinkles.NAME]` tables naming a normal map the model
//! carries, the material it shades and the morph targets whose weights blend it in.
//!
//! ```toml
//! [wrinkles.forehead]
//! texture = "wrinkles_brow"   # a texture of the model, by its glTF name
//! channels = "rg"             # the map's two channels: "rg" (default) or "ba"
//! material = "Skin"           # the material it shades
//! weights = { browInnerUp = 0.6, browOuterUpLeft = 0.2, browOuterUpRight = 0.2 }
//! curve = { points = [[0.0, 0.0], [0.5, 0.3], [1.0, 1.0]] }   # optional, as in [map]
//! ```
//!
//! The weights name morph targets (after the mapping has set them), so a wrinkle follows the
//! expression whatever drives it: the phone, an expression hotkey or lip sync. The map's
//! strength is `clamp(curve(Σ weight·target), 0, 1)`.

use serde::Deserialize;
use toml::Spanned;

use super::compile::find_targets;
use super::curve::Curve;
use super::file::{CurveSpec, Finite, MappingError, MappingFile, Ordered};
use crate::avatar::{Avatar, Pose, MAX_WRINKLE_MAPS};
use crate::diagnostic::nearest;

/// One `[wrinkles.NAME]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrinkleSpec {
    /// The model's texture holding the map, by name.
    pub texture: Spanned<String>,
    /// `"rg"` or `"ba"`.
    #[serde(default)]
    pub channels: Option<Spanned<String>>,
    /// The material it shades, by name.
    pub material: Spanned<String>,
    /// Morph target name → weight.
    pub weights: Ordered<Finite>,
    /// The response curve over the weighted sum.
    #[serde(default)]
    pub curve: CurveSpec,
}

/// A wrinkle map resolved against the avatar.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledWrinkle {
    /// Its name in the mapping file.
    pub name: String,
    /// The avatar texture that holds it.
    pub texture: usize,
    /// Whether it is in the blue and alpha channels (else red and green).
    pub blue_alpha: bool,
    /// The materials it shades.
    pub materials: Vec<usize>,
    /// (mesh, target, weight) of every driving target.
    pub weights: Vec<(usize, usize, f32)>,
    /// The response curve.
    pub curve: Curve,
}

impl CompiledWrinkle {
    /// How strongly the map shows under `pose`'s target weights, in [0, 1].
    pub fn strength(&self, pose: &Pose) -> f32 {
        let sum: f32 = self
            .weights
            .iter()
            .map(|&(mesh, target, w)| {
                let v = pose
                    .weights
                    .get(mesh)
                    .and_then(|m| m.get(target))
                    .copied()
                    .unwrap_or(0.0);
                if v.is_finite() {
                    v * w
                } else {
                    0.0
                }
            })
            .sum();
        let y = self.curve.eval(sum);
        if y.is_finite() {
            y.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// Sets `pose.wrinkles` from the maps' driving targets (maps past the first
/// [`MAX_WRINKLE_MAPS`] are never compiled); the rest stay 0.
pub fn apply(wrinkles: &[CompiledWrinkle], pose: &mut Pose) {
    let mut strengths = [0.0; MAX_WRINKLE_MAPS];
    for (slot, w) in strengths.iter_mut().zip(wrinkles) {
        *slot = w.strength(pose);
    }
    pose.wrinkles = strengths;
}

/// Resolves every `[wrinkles.NAME]` against `avatar`, pushing each problem (with its position)
/// onto `errors`.
pub(super) fn compile(
    file: &MappingFile,
    avatar: &Avatar,
    errors: &mut Vec<(usize, MappingError)>,
) -> Vec<CompiledWrinkle> {
    let mut out = Vec::new();
    for (index, (name, spec)) in file.wrinkles.0.iter().enumerate() {
        let mut push = |span: std::ops::Range<usize>, message: String, hint: Option<String>| {
            errors.push((span.start, file.error_at(span, message, hint)));
        };
        if index >= MAX_WRINKLE_MAPS {
            push(
                name.span(),
                format!(
                    "[wrinkles.{}]: at most {MAX_WRINKLE_MAPS} wrinkle maps can be drawn",
                    name.get_ref()
                ),
                Some("pack two maps into one texture (\"rg\" and \"ba\") or merge maps".into()),
            );
            continue;
        }
        let texture_name = spec.texture.get_ref();
        let names = avatar.texture_names.iter().flatten().map(String::as_str);
        let texture = avatar
            .texture_names
            .iter()
            .position(|n| n.as_deref() == Some(texture_name.as_str()));
        let texture = match texture {
            Some(t) if avatar.texture_sampled(t) => {
                push(
                    spec.texture.span(),
                    format!("texture `{texture_name}` is a colour texture a material samples"),
                    Some("a wrinkle map is a normal map texture of its own".into()),
                );
                None
            }
            Some(t) => Some(t),
            None => {
                let hint = match nearest(texture_name, names) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "the model has no named texture; wrinkle maps are textures the \
                             model carries"
                        .into(),
                };
                push(
                    spec.texture.span(),
                    format!("unknown texture `{texture_name}`"),
                    Some(hint),
                );
                None
            }
        };
        let blue_alpha = match spec
            .channels
            .as_ref()
            .map(|c| (c.get_ref().as_str(), c.span()))
        {
            None | Some(("rg", _)) => false,
            Some(("ba", _)) => true,
            Some((other, span)) => {
                push(
                    span,
                    format!("channels = \"{other}\" is not a channel pair"),
                    Some("use \"rg\" (red and green) or \"ba\" (blue and alpha)".into()),
                );
                false
            }
        };
        let material_name = spec.material.get_ref();
        let materials: Vec<usize> = avatar
            .materials
            .iter()
            .enumerate()
            .filter(|(_, m)| m.name.as_deref() == Some(material_name.as_str()))
            .map(|(i, _)| i)
            .collect();
        if materials.is_empty() {
            let names = avatar.materials.iter().filter_map(|m| m.name.as_deref());
            let hint = nearest(material_name, names).map(|best| format!("did you mean `{best}`?"));
            push(
                spec.material.span(),
                format!("unknown material `{material_name}`"),
                hint,
            );
        }
        let mut weights = Vec::new();
        for (target, weight) in &spec.weights.0 {
            let found = find_targets(avatar, target.get_ref());
            if found.is_empty() {
                let names = avatar
                    .meshes
                    .iter()
                    .flat_map(|m| m.target_names.iter().map(String::as_str));
                let hint =
                    nearest(target.get_ref(), names).map(|best| format!("did you mean `{best}`?"));
                push(
                    target.span(),
                    format!("unknown target `{}`", target.get_ref()),
                    hint,
                );
            }
            weights.extend(found.into_iter().map(|(m, t)| (m, t, weight.0)));
        }
        if spec.weights.0.is_empty() {
            push(
                name.span(),
                format!("[wrinkles.{}] has no weights", name.get_ref()),
                Some("name the morph targets that deepen it, e.g. weights = { browDownLeft = 0.5, browDownRight = 0.5 }".into()),
            );
        }
        if let Some(texture) = texture {
            out.push(CompiledWrinkle {
                name: name.get_ref().clone(),
                texture,
                blue_alpha,
                materials,
                weights,
                curve: Curve::from_spec(&spec.curve),
            });
        }
    }
    out
}
