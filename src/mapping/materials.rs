//! VRM expressions' material binds, resolved once when a mapping is compiled: by material index
//! or name into the avatar's materials, with the change each makes at weight 1.

use crate::avatar::material_binds::{resolve, ResolvedBind};
use crate::avatar::vrm::Expression;
use crate::avatar::Material;

/// The material binds of `expression` that can be drawn, resolved against `materials`; the
/// others (an unknown material or property, a bad value) are skipped with a warning.
pub(super) fn resolve_material_binds(
    expression: &Expression,
    materials: &[Material],
) -> Vec<ResolvedBind> {
    expression
        .material_binds
        .iter()
        .filter_map(|bind| match resolve(bind, materials) {
            Ok(resolved) => Some(resolved),
            Err(reason) => {
                tracing::warn!(
                    expression = %expression.name,
                    %reason,
                    "VRM expression material bind skipped"
                );
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{frame, vrm_avatar};
    use super::super::CompiledMapping;
    use crate::arkit::Channel;
    use crate::avatar::vrm::{MaterialBind, MaterialRef};
    use crate::avatar::{Avatar, Material, TextureTransform};
    use glam::Vec2;

    /// The VRM test avatar with two materials, "Face" (white) and "Eyes", and material binds on
    /// its Joy expression: Face turns red, the Eyes' texture shifts, and a bind names a material
    /// the avatar lacks.
    fn avatar() -> Avatar {
        let mut a = vrm_avatar();
        a.materials = vec![
            Material {
                name: Some("Face".into()),
                ..Material::default()
            },
            Material {
                name: Some("Eyes".into()),
                base_color_transform: TextureTransform::IDENTITY,
                ..Material::default()
            },
        ];
        let bind = |material, property: &str, value: &[f32]| MaterialBind {
            material,
            property: property.into(),
            value: value.to_vec(),
        };
        let joy = &mut a.vrm.as_mut().unwrap().expressions[3];
        joy.material_binds = vec![
            bind(
                MaterialRef::Name("Face".into()),
                "color",
                &[1.0, 0.0, 0.0, 1.0],
            ),
            bind(MaterialRef::Name("Hair".into()), "color", &[0.0; 4]),
            bind(
                MaterialRef::Index(1),
                "textureTransform",
                &[1.0, 1.0, 0.5, 0.0],
            ),
        ];
        a
    }

    #[test]
    fn material_binds_resolve_once_and_skip_unknown_names() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let joy = m
            .expressions
            .iter()
            .find(|e| e.expression == 3)
            .expect("Joy is driven");
        let materials: Vec<usize> = joy.material_binds.iter().map(|b| b.material).collect();
        assert_eq!(materials, [0, 1], "Hair is skipped");
    }

    #[test]
    fn an_expression_turns_its_material_red_by_its_weight() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let smile = |w: f32| {
            let mut pose = a.rest_pose();
            m.apply(
                &frame(&[(Channel::MouthSmileLeft, w), (Channel::MouthSmileRight, w)]),
                &mut pose,
            );
            pose
        };
        let rest = smile(0.0);
        assert_eq!(rest.materials, a.rest_pose().materials);
        let full = smile(1.0);
        assert_eq!(full.materials[0].base_color, [1.0, 0.0, 0.0, 1.0]);
        let half = smile(0.5);
        assert_eq!(half.materials[0].base_color, [1.0, 0.5, 0.5, 1.0]);
        assert_eq!(half.materials[1].uv_offset, Vec2::new(0.25, 0.0));
        assert_eq!(half.materials[1].uv_scale, Vec2::ONE);
        assert_eq!(full.materials[1].uv_offset, Vec2::new(0.5, 0.0));
        // A frame without the expression's channels leaves the materials at rest.
        let mut pose = a.rest_pose();
        m.apply(&frame(&[(Channel::JawOpen, 1.0)]), &mut pose);
        assert_eq!(pose.materials, a.rest_pose().materials);
    }

    #[test]
    fn resetting_a_pose_from_rest_undoes_the_material_binds() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let rest = a.rest_pose();
        let mut pose = rest.clone();
        m.apply(
            &frame(&[
                (Channel::MouthSmileLeft, 1.0),
                (Channel::MouthSmileRight, 1.0),
            ]),
            &mut pose,
        );
        assert_ne!(pose.materials, rest.materials);
        pose.clone_from(&rest);
        assert_eq!(pose, rest);
    }
}
