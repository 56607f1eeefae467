//! Corrective morph targets: a target named `a*b` fixes the shape of targets `a` and `b` of the
//! same mesh at full weight together, and its weight is the product of theirs.
//!
//! Morph targets add linearly, so two targets that move the same skin (a face-shape target and
//! an expression, say) combine as the sum of their offsets, which can leave blinked lids apart
//! or tear a reshaped mouth. A corrective holds the difference between that sum and the right
//! combined shape; weighting it by `w(a) × w(b)` makes it vanish when either input is at rest
//! and apply in full when both are at 1.

use super::{Avatar, Pose};

/// One corrective target and the two targets that drive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrective {
    /// The mesh the three targets belong to.
    pub mesh: usize,
    /// The corrective target's index.
    pub target: usize,
    /// The first input's index (the part of the name before `*`).
    pub a: usize,
    /// The second input's index (the part after `*`).
    pub b: usize,
}

/// Every corrective target of an avatar, found once from the target names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Correctives {
    /// The correctives, by mesh and then in target order.
    pub list: Vec<Corrective>,
}

impl Correctives {
    /// Finds, per mesh, every target named `a*b` where `a` and `b` are (exact) names of other
    /// targets of the same mesh. A name with no `*`, more than one, or an unknown side is an
    /// ordinary target.
    pub fn resolve(avatar: &Avatar) -> Correctives {
        let mut list = Vec::new();
        for (mesh, m) in avatar.meshes.iter().enumerate() {
            let index = |name: &str| m.target_names.iter().position(|n| n == name);
            for (target, name) in m.target_names.iter().enumerate() {
                let Some((a, b)) = name.split_once('*') else {
                    continue;
                };
                if b.contains('*') {
                    continue;
                }
                if let (Some(a), Some(b)) = (index(a), index(b)) {
                    if a != target && b != target {
                        list.push(Corrective { mesh, target, a, b });
                    }
                }
            }
        }
        Correctives { list }
    }

    /// Whether target `target` of mesh `mesh` is a corrective (set from its inputs).
    pub fn drives(&self, mesh: usize, target: usize) -> bool {
        self.list
            .iter()
            .any(|c| c.mesh == mesh && c.target == target)
    }

    /// Whether the avatar has no corrective target.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sets each corrective's weight in `pose` to the product of its inputs' weights, each
    /// clamped to [0, 1] (NaN counts as 0). Runs after every other weight is set; allocates
    /// nothing. Correctives whose mesh or targets lie beyond `pose`'s lists are skipped.
    pub fn apply(&self, pose: &mut Pose) {
        let unit = |w: f32| if w.is_nan() { 0.0 } else { w.clamp(0.0, 1.0) };
        for c in &self.list {
            let Some(weights) = pose.weights.get_mut(c.mesh) else {
                continue;
            };
            let (Some(&a), Some(&b)) = (weights.get(c.a), weights.get(c.b)) else {
                continue;
            };
            if let Some(w) = weights.get_mut(c.target) {
                *w = unit(a) * unit(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Mesh;

    fn avatar(meshes: &[&[&str]]) -> Avatar {
        Avatar {
            meshes: meshes
                .iter()
                .map(|names| Mesh {
                    name: None,
                    target_names: names.iter().map(|n| n.to_string()).collect(),
                    default_weights: vec![0.0; names.len()],
                    primitives: Vec::new(),
                })
                .collect(),
            ..Avatar::default()
        }
    }

    #[test]
    fn resolves_products_of_targets_of_the_same_mesh() {
        let a = avatar(&[
            &[
                "blink",
                "big",
                "big*blink",
                "big*nope",
                "x*y*z",
                "*blink",
                "blink*",
            ],
            &["big", "blink"],
        ]);
        let c = Correctives::resolve(&a);
        assert_eq!(
            c.list,
            vec![Corrective {
                mesh: 0,
                target: 2,
                a: 1,
                b: 0
            }]
        );
        // Names are matched exactly: no trimming, no case folding, no match across meshes.
        let b = avatar(&[&["Big", "blink", "big*blink", " Big*blink"], &["big*blink"]]);
        assert!(Correctives::resolve(&b).is_empty());
    }

    #[test]
    fn apply_sets_the_clamped_product() {
        let a = avatar(&[&["n"], &["a", "b", "a*b", "b*a"]]);
        let c = Correctives::resolve(&a);
        assert_eq!(c.list.len(), 2);
        let mut pose = a.rest_pose();
        for (wa, wb, want) in [
            (1.0, 1.0, 1.0),
            (0.5, 0.5, 0.25),
            (0.0, 1.0, 0.0),
            (2.0, 0.5, 0.5),
            (-1.0, 1.0, 0.0),
            (f32::NAN, 1.0, 0.0),
            (1.0, f32::INFINITY, 1.0),
        ] {
            pose.weights[1][0] = wa;
            pose.weights[1][1] = wb;
            pose.weights[1][2] = 7.0;
            c.apply(&mut pose);
            assert_eq!(pose.weights[1][2], want, "{wa} × {wb}");
            assert_eq!(pose.weights[1][3], want, "{wb} × {wa}");
        }
        assert_eq!(pose.weights[0], vec![0.0]);
    }

    #[test]
    fn apply_skips_targets_the_pose_lacks() {
        let a = avatar(&[&["a", "b", "a*b"]]);
        let c = Correctives::resolve(&a);
        let mut short = Pose {
            weights: vec![vec![1.0, 1.0]],
            rotations: Vec::new(),
            translations: Vec::new(),
            materials: Vec::new(),
            wrinkles: [0.0; crate::avatar::MAX_WRINKLE_MAPS],
        };
        c.apply(&mut short);
        assert_eq!(short.weights, vec![vec![1.0, 1.0]]);
        let mut none = Pose {
            weights: Vec::new(),
            rotations: Vec::new(),
            translations: Vec::new(),
            materials: Vec::new(),
            wrinkles: [0.0; crate::avatar::MAX_WRINKLE_MAPS],
        };
        c.apply(&mut none);
    }
}
