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
    /// (mesh, target, weight) of each driving target name: one target per name (the first mesh
    /// that has it, outside the coarser levels of detail).
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
            // The mapping sets a name's targets alike in every mesh (and in every level of
            // detail), so one of them, the first outside the coarser levels, gives its weight;
            // summing them all would count the name once per mesh.
            let read = found
                .iter()
                .find(|&&(m, _)| !avatar.mesh_is_coarser_level(m))
                .or(found.first());
            weights.extend(read.map(|&(m, t)| (m, t, weight.0)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::CompiledMapping;

    fn head() -> Avatar {
        crate::avatar::load_slice(crate::headgen::DEFAULT_HEAD_GLB, "default head").unwrap()
    }

    fn compile_text(extra: &str) -> Result<CompiledMapping, Vec<String>> {
        let text = format!("version = 1\n[targets]\nauto = true\n{extra}");
        let file = MappingFile::parse(&text, "m.toml").map_err(|e| vec![e.to_string()])?;
        CompiledMapping::build(&file, &head())
            .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_wrinkle_map_resolves_its_texture_channels_material_and_targets() {
        let m = compile_text(
            "[wrinkles.frown]\ntexture = \"wrinkles_brow\"\nchannels = \"ba\"\n\
             material = \"Skin\"\nweights = { browDownLeft = 0.5, browDownRight = 0.5 }\n",
        )
        .unwrap();
        let avatar = head();
        let w = &m.wrinkles[0];
        assert_eq!(
            avatar.texture_names[w.texture].as_deref(),
            Some("wrinkles_brow")
        );
        assert!(w.blue_alpha);
        assert_eq!(w.materials.len(), 1);
        assert_eq!(
            avatar.materials[w.materials[0]].name.as_deref(),
            Some("Skin")
        );
        assert_eq!(w.weights.len(), 2);
        // Strength: the weighted sum of the targets, clamped.
        let mut pose = avatar.rest_pose();
        let (mesh, left, _) = w.weights[0];
        pose.weights[mesh][left] = 0.8;
        assert!((w.strength(&pose) - 0.4).abs() < 1e-6);
        pose.weights[mesh][w.weights[1].1] = f32::NAN;
        assert!((w.strength(&pose) - 0.4).abs() < 1e-6);
        apply(&m.wrinkles, &mut pose);
        assert_eq!(pose.wrinkles, [0.4, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn every_wrong_name_is_reported_with_its_position_and_the_nearest_name() {
        let errors = compile_text(
            "[wrinkles.frown]\ntexture = \"wrinkles_brw\"\nchannels = \"gb\"\n\
             material = \"Skn\"\nweights = { browDwnLeft = 1.0 }\n",
        )
        .unwrap_err();
        let all = errors.join("\n");
        assert_eq!(errors.len(), 4, "{all}");
        assert!(
            all.contains("m.toml:5:11: unknown texture `wrinkles_brw`"),
            "{all}"
        );
        assert!(all.contains("`wrinkles_brow`"), "{all}");
        assert!(all.contains("m.toml:6:12: channels = \"gb\""), "{all}");
        assert!(
            all.contains("unknown material `Skn`") && all.contains("`Skin`"),
            "{all}"
        );
        assert!(all.contains("unknown target `browDwnLeft`") && all.contains("browDownLeft"));
    }

    #[test]
    fn a_wrinkle_map_needs_weights_and_at_most_four_fit() {
        let errors = compile_text(
            "[wrinkles.a]\ntexture = \"wrinkles_brow\"\nmaterial = \"Skin\"\nweights = {}\n",
        )
        .unwrap_err();
        assert!(errors[0].contains("has no weights"), "{errors:?}");
        let mut text = String::new();
        for i in 0..5 {
            text.push_str(&format!(
                "[wrinkles.w{i}]\ntexture = \"wrinkles_smile\"\nmaterial = \"Skin\"\n\
                 weights = {{ jawOpen = 1.0 }}\n"
            ));
        }
        let errors = compile_text(&text).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("[wrinkles.w4]: at most 4"), "{errors:?}");
    }
}
