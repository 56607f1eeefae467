//! The node hierarchy as the renderer walks it each frame: rest transforms, world matrices
//! computed into reused buffers, sanitised extra rotations and translations and normal matrices.

use glam::{Mat3, Mat4, Quat, Vec3};

use super::renderer::Renderer;
use crate::avatar::Pose;

/// The parts of a node the renderer needs each frame.
pub(super) struct NodeInfo {
    pub(super) children: Vec<usize>,
    pub(super) translation: Vec3,
    pub(super) rotation: Quat,
    pub(super) scale: Vec3,
    pub(super) mesh: Option<usize>,
}

impl Renderer {
    /// Computes this frame's world matrices into the reused buffers.
    pub(super) fn update_world(&mut self, pose: &Pose) {
        world_transforms_into(
            &self.nodes,
            &self.roots,
            pose,
            &mut self.world,
            &mut self.visited,
            &mut self.stack,
        );
    }
}

/// Computes world matrices for every node reached from `roots`, like
/// [`crate::avatar::Avatar::world_transforms`], into reused buffers (no allocation once `stack`
/// has grown). `visited[i]` tells whether node `i` was reached; unreached nodes keep the
/// identity.
fn world_transforms_into(
    nodes: &[NodeInfo],
    roots: &[usize],
    pose: &Pose,
    world: &mut [Mat4],
    visited: &mut [bool],
    stack: &mut Vec<(usize, Mat4)>,
) {
    world.fill(Mat4::IDENTITY);
    visited.fill(false);
    stack.clear();
    stack.extend(
        roots
            .iter()
            .filter(|&&r| r < nodes.len())
            .map(|&r| (r, Mat4::IDENTITY)),
    );
    while let Some((index, parent)) = stack.pop() {
        if std::mem::replace(&mut visited[index], true) {
            continue;
        }
        let node = &nodes[index];
        let extra = sanitize_rotation(pose.rotations.get(index).copied());
        let local = Mat4::from_scale_rotation_translation(
            node.scale,
            node.rotation * extra,
            node.translation + pose.translation(index),
        );
        world[index] = parent * local;
        for &child in &node.children {
            if child < nodes.len() {
                stack.push((child, world[index]));
            }
        }
    }
}

/// A node's extra rotation: identity when absent, non-finite or zero, otherwise normalised.
fn sanitize_rotation(q: Option<Quat>) -> Quat {
    match q {
        Some(q) if q.is_finite() && q.length_squared() > 1e-12 => q.normalize(),
        _ => Quat::IDENTITY,
    }
}

/// The inverse-transpose of the model matrix's upper 3x3 (the upper 3x3 itself when it is
/// singular; the shader renormalises either way).
pub(super) fn normal_matrix(model: &Mat4) -> Mat3 {
    let m = Mat3::from_mat4(*model);
    if m.determinant().abs() > 1e-12 {
        m.inverse().transpose()
    } else {
        m
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::avatar::{Avatar, Node};

    pub(in crate::render) fn node(
        parent: Option<usize>,
        children: Vec<usize>,
        t: Vec3,
        mesh: Option<usize>,
    ) -> Node {
        Node {
            name: None,
            parent,
            children,
            translation: t,
            rotation: Quat::from_rotation_y(0.3),
            scale: Vec3::splat(1.5),
            mesh,
            weights: None,
        }
    }

    #[test]
    fn normal_matrix_handles_singular_models() {
        let m = normal_matrix(&Mat4::from_scale(Vec3::new(2.0, 1.0, 1.0)));
        assert!((m.x_axis.x - 0.5).abs() < 1e-6);
        let s = normal_matrix(&Mat4::from_scale(Vec3::ZERO));
        assert!(s.is_finite());
    }

    #[test]
    fn rotations_are_sanitized() {
        assert_eq!(sanitize_rotation(None), Quat::IDENTITY);
        assert_eq!(
            sanitize_rotation(Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0))),
            Quat::IDENTITY
        );
        assert_eq!(
            sanitize_rotation(Some(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0))),
            Quat::IDENTITY
        );
        let q = sanitize_rotation(Some(Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)));
        assert!(q.abs_diff_eq(Quat::IDENTITY, 1e-6));
    }

    #[test]
    fn world_transforms_match_the_avatar() {
        let avatar = Avatar {
            nodes: vec![
                node(None, vec![1, 2], Vec3::new(0.0, 1.0, 0.0), None),
                node(Some(0), vec![], Vec3::new(0.5, 0.0, 0.0), Some(0)),
                node(Some(0), vec![], Vec3::new(0.0, 0.0, 0.2), None),
                node(None, vec![], Vec3::ONE, None),
            ],
            roots: vec![0],
            ..Default::default()
        };
        let mut pose = avatar.rest_pose();
        pose.rotations[0] = Quat::from_rotation_x(0.4);
        pose.rotations[1] = Quat::from_rotation_z(-0.2);
        pose.translations[1] = Vec3::new(0.003, 0.0, 0.0);
        pose.translations[2] = Vec3::NAN;
        let expect = avatar.world_transforms(&pose);
        let mut infos: Vec<NodeInfo> = avatar
            .nodes
            .iter()
            .map(|n| NodeInfo {
                children: n.children.clone(),
                translation: n.translation,
                rotation: n.rotation,
                scale: n.scale,
                mesh: n.mesh,
            })
            .collect();
        let (mut world, mut visited, mut stack) = (vec![Mat4::ZERO; 4], vec![true; 4], Vec::new());
        world_transforms_into(&infos, &[0], &pose, &mut world, &mut visited, &mut stack);
        for i in 0..3 {
            assert!(world[i].abs_diff_eq(expect[i], 1e-5), "node {i}");
        }
        assert_eq!(visited, [true, true, true, false]);
        assert_eq!(world[3], Mat4::IDENTITY);

        // Dangling root and child indices and a cycle are ignored rather than panicking.
        infos[2].children = vec![9, 0];
        world_transforms_into(&infos, &[0, 7], &pose, &mut world, &mut visited, &mut stack);
        assert!(world[1].abs_diff_eq(expect[1], 1e-5));
    }
}
