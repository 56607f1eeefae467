//! Skins and the node hierarchy: inverse bind matrices, joint index checks, node transforms,
//! parent and child links (which must form a forest) and the drawn scene's roots.

use super::accessor::{self, Kind};
use super::{finite_weights, label, AvatarError, Loader};
use crate::avatar::{Mesh, Node, Skin};
use glam::{Mat4, Quat, Vec3};

impl Loader<'_> {
    /// Every skin, with its joints and inverse bind matrices (identity where the file has none).
    pub(super) fn skins(&mut self) -> Result<Vec<Skin>, AvatarError> {
        let mut skins = Vec::new();
        for skin in self.document.skins() {
            let skin_label = label("skin", skin.name(), skin.index());
            let joints: Vec<usize> = skin.joints().map(|joint| joint.index()).collect();
            let inverse_bind = match skin.inverse_bind_matrices() {
                Some(accessor) => {
                    let index = accessor.index();
                    let usage = || format!("{skin_label} inverseBindMatrices");
                    let count = self.prepare(&accessor, Kind::Mat4F32, None, &usage)?;
                    let skin_error = |detail: String| AvatarError::Skin {
                        file: self.file.to_owned(),
                        skin: skin_label.clone(),
                        detail,
                    };
                    if count < joints.len() {
                        return Err(skin_error(format!(
                            "has {count} inverse bind matrices for {} joints",
                            joints.len()
                        )));
                    }
                    let mut matrices = accessor::read_mat4(accessor, count, self.buffers)
                        .map_err(|detail| self.accessor_error(index, &usage, detail))?;
                    if let Some(k) = matrices.iter().position(|m| !m.is_finite()) {
                        return Err(skin_error(format!("inverse bind matrix {k} is not finite")));
                    }
                    matrices.truncate(joints.len());
                    matrices
                }
                None => vec![Mat4::IDENTITY; joints.len()],
            };
            skins.push(Skin {
                name: skin.name().map(str::to_owned),
                joints,
                inverse_bind,
            });
        }
        Ok(skins)
    }

    /// Checks that every skinned node's primitives name only joints its skin has (influences
    /// with a zero weight are not checked: the loader zeroes their joint index).
    pub(super) fn check_joints(
        &self,
        meshes: &[Mesh],
        skins: &[Skin],
        nodes: &[Node],
        node_skins: &[Option<usize>],
    ) -> Result<(), AvatarError> {
        for (n, node) in nodes.iter().enumerate() {
            let (Some(mesh_index), Some(Some(skin_index))) = (node.mesh, node_skins.get(n)) else {
                continue;
            };
            let (Some(mesh), Some(skin)) = (meshes.get(mesh_index), skins.get(*skin_index)) else {
                continue;
            };
            let count = skin.joints.len();
            for (p, prim) in mesh.primitives.iter().enumerate() {
                let bad = prim.joints.iter().enumerate().find_map(|(v, joints)| {
                    joints
                        .iter()
                        .find(|&&j| usize::from(j) >= count)
                        .map(|&j| (v, j))
                });
                if let Some((v, j)) = bad {
                    let (accessor, gltf_primitive) = self
                        .joint_accessors
                        .get(&(mesh_index, p))
                        .copied()
                        .unwrap_or((0, p));
                    let mesh_label = label("mesh", mesh.name.as_deref(), mesh_index);
                    return Err(AvatarError::Accessor {
                        file: self.file.to_owned(),
                        accessor,
                        usage: format!("{mesh_label} primitive {gltf_primitive} JOINTS_0"),
                        detail: format!(
                            "joint index {j} at vertex {v} is out of range for skin {skin_index}, which has {count} joints (used by {})",
                            label("node", node.name.as_deref(), n)
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every node with its rest transform, linked into parents and children.
    pub(super) fn nodes(&self, meshes: &[Mesh]) -> Result<Vec<Node>, AvatarError> {
        let mut nodes = Vec::new();
        for node in self.document.nodes() {
            let node_label = label("node", node.name(), node.index());
            let node_error = |detail: String| AvatarError::Node {
                file: self.file.to_owned(),
                node: node_label.clone(),
                detail,
            };
            let (translation, rotation, scale) = match node.transform() {
                gltf::scene::Transform::Matrix { matrix } => {
                    let matrix = Mat4::from_cols_array_2d(&matrix);
                    if !matrix.is_finite() {
                        return Err(node_error("matrix is not finite".into()));
                    }
                    let (scale, rotation, translation) = matrix.to_scale_rotation_translation();
                    if scale.is_finite() && rotation.is_finite() && translation.is_finite() {
                        (translation, rotation.normalize(), scale)
                    } else {
                        // A singular matrix (a zero scale hides a node) has no rotation to recover.
                        tracing::warn!(
                            file = self.file,
                            node = %node_label,
                            "singular node matrix; keeping its translation only, scaled to zero"
                        );
                        (matrix.w_axis.truncate(), Quat::IDENTITY, Vec3::ZERO)
                    }
                }
                gltf::scene::Transform::Decomposed {
                    translation,
                    rotation,
                    scale,
                } => {
                    let (translation, rotation, scale) = (
                        Vec3::from(translation),
                        Quat::from_array(rotation),
                        Vec3::from(scale),
                    );
                    if !(translation.is_finite() && rotation.is_finite() && scale.is_finite()) {
                        return Err(node_error(
                            "translation, rotation or scale is not finite".into(),
                        ));
                    }
                    if rotation.length() < 1e-6 {
                        return Err(node_error("rotation is a zero quaternion".into()));
                    }
                    (translation, rotation.normalize(), scale)
                }
            };
            let mesh = node.mesh().map(|mesh| mesh.index());
            let target_count = mesh
                .and_then(|m| meshes.get(m))
                .map_or(0, Mesh::target_count);
            let weights = node.weights().and_then(|weights| {
                if weights.len() == target_count {
                    Some(finite_weights(weights, &node_label))
                } else {
                    tracing::warn!(
                        file = self.file,
                        node = %node_label,
                        weights = weights.len(),
                        targets = target_count,
                        "ignoring node weights that do not match its mesh's target count"
                    );
                    None
                }
            });
            nodes.push(Node {
                name: node.name().map(str::to_owned),
                parent: None,
                children: Vec::new(),
                translation,
                rotation,
                scale,
                mesh,
                weights,
            });
        }

        for node in self.document.nodes() {
            for child in node.children() {
                let c = child.index();
                let hierarchy_error = |detail: String| AvatarError::Node {
                    file: self.file.to_owned(),
                    node: label("node", child.name(), c),
                    detail,
                };
                if c == node.index() {
                    return Err(hierarchy_error("is its own child".into()));
                }
                match nodes[c].parent {
                    Some(parent) if parent == node.index() => {
                        return Err(hierarchy_error(format!(
                            "is listed twice as a child of node {parent}"
                        )));
                    }
                    Some(parent) => {
                        return Err(hierarchy_error(format!(
                            "has two parents, nodes {parent} and {}",
                            node.index()
                        )));
                    }
                    None => {}
                }
                nodes[c].parent = Some(node.index());
                nodes[node.index()].children.push(c);
            }
        }
        self.check_acyclic(&nodes)?;
        Ok(nodes)
    }

    /// Fails if following parents from some node never reaches a root.
    fn check_acyclic(&self, nodes: &[Node]) -> Result<(), AvatarError> {
        #[derive(Clone, Copy, PartialEq)]
        enum State {
            Unknown,
            OnPath,
            Rooted,
        }
        let mut state = vec![State::Unknown; nodes.len()];
        let mut path = Vec::new();
        for start in 0..nodes.len() {
            let mut at = Some(start);
            while let Some(i) = at {
                match state[i] {
                    State::Rooted => break,
                    State::OnPath => {
                        return Err(AvatarError::Node {
                            file: self.file.to_owned(),
                            node: label("node", nodes[i].name.as_deref(), i),
                            detail: "is part of a cycle in the node hierarchy".into(),
                        });
                    }
                    State::Unknown => {
                        state[i] = State::OnPath;
                        path.push(i);
                        at = nodes[i].parent;
                    }
                }
            }
            for i in path.drain(..) {
                state[i] = State::Rooted;
            }
        }
        Ok(())
    }

    /// The drawn scene's root nodes: the default scene, else scene 0, else every parentless node.
    pub(super) fn roots(&self, nodes: &[Node]) -> Vec<usize> {
        let scene = self
            .document
            .default_scene()
            .or_else(|| self.document.scenes().next());
        let Some(scene) = scene else {
            return (0..nodes.len())
                .filter(|&i| nodes[i].parent.is_none())
                .collect();
        };
        let mut roots: Vec<usize> = Vec::new();
        for node in scene.nodes() {
            let i = node.index();
            if nodes[i].parent.is_some() {
                tracing::warn!(
                    file = self.file,
                    scene = scene.index(),
                    node = i,
                    "scene lists a node that has a parent; drawing it through its parent only"
                );
            } else if !roots.contains(&i) {
                roots.push(i);
            }
        }
        roots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::load::load_slice;

    #[test]
    fn hierarchy_cycles_and_double_parents_are_errors() {
        let doc = |nodes: &str| {
            format!(r#"{{"asset":{{"version":"2.0"}},"nodes":{nodes}}}"#).into_bytes()
        };
        let cycle = load_slice(&doc(r#"[{"children":[1]},{"children":[0]}]"#), "cycle");
        assert!(matches!(cycle, Err(AvatarError::Node { .. })), "{cycle:?}");
        let two_parents = load_slice(&doc(r#"[{"children":[2]},{"children":[2]},{}]"#), "dag");
        assert!(
            matches!(two_parents, Err(AvatarError::Node { .. })),
            "{two_parents:?}"
        );
        let own_child = load_slice(&doc(r#"[{"children":[0]}]"#), "self");
        assert!(
            matches!(own_child, Err(AvatarError::Node { .. })),
            "{own_child:?}"
        );
        let forest = load_slice(
            &doc(r#"[{"children":[1]},{},{"matrix":[2,0,0,0,0,2,0,0,0,0,2,0,1,2,3,1]}]"#),
            "ok",
        )
        .unwrap();
        assert_eq!(forest.roots, vec![0, 2]);
        assert_eq!(forest.nodes[1].parent, Some(0));
        assert_eq!(forest.nodes[2].translation, Vec3::new(1.0, 2.0, 3.0));
        assert!((forest.nodes[2].scale - Vec3::splat(2.0)).length() < 1e-6);
    }
}
