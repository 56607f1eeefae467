//! Skinning: each skin's joints and inverse binds, which nodes draw skinned and where their
//! joint matrices go, and the RGBA32F buffer texture of joint matrices updated each frame.

#![expect(unsafe_code)]

use std::rc::Rc;

use glam::Mat4;
use glow::HasContext;

use super::nodes::NodeInfo;
use super::objects::{bytes_of, Buffer, Texture};
use super::primitives::{GpuMesh, GpuPrimitive};
use super::renderer::Renderer;
use super::{check_gl, RenderError};
use crate::avatar::Avatar;

/// A skin's joints and inverse bind matrices.
pub(super) struct GpuSkin {
    /// Joint node indices.
    pub(super) joints: Vec<usize>,
    /// One inverse bind matrix per joint.
    pub(super) inverse_bind: Vec<Mat4>,
}

/// Where a skinned node's joint matrices live in the joint texture.
#[derive(Clone, Copy)]
pub(super) struct NodeSkin {
    /// Index into `Renderer::skins`.
    pub(super) skin: usize,
    /// The node's first joint in the joint texture.
    pub(super) base: usize,
}

impl Renderer {
    /// Whether `prim`, drawn by node `node`, is skinned.
    pub(super) fn is_skinned(&self, node: usize, prim: &GpuPrimitive) -> bool {
        match (self.node_skins[node], prim.max_joint) {
            (Some(s), Some(max)) => usize::from(max) < self.skins[s.skin].joints.len(),
            _ => false,
        }
    }

    /// The transform that places `prim` drawn by node `node` this frame: the node's world
    /// matrix, or the dominant joint's matrix when skinned.
    pub(super) fn placement(&self, node: usize, prim: &GpuPrimitive) -> Mat4 {
        match self.node_skins[node] {
            Some(s) if self.is_skinned(node, prim) => {
                let at = (s.base + usize::from(prim.dominant_joint)) * 16;
                self.joint_data
                    .get(at..at + 16)
                    .map_or(self.world[node], Mat4::from_cols_slice)
            }
            _ => self.world[node],
        }
    }

    /// Computes every skinned node's joint matrices (`world(joint) * inverseBind`) and uploads
    /// them. Non-finite results (from extreme poses) become the identity.
    pub(super) fn upload_joint_matrices(&mut self) {
        let Some((buffer, _)) = &self.joint_texture else {
            return;
        };
        for (node, slot) in self.node_skins.iter().enumerate() {
            let Some(slot) = slot else { continue };
            if !self.visited[node] {
                continue;
            }
            let skin = &self.skins[slot.skin];
            for (k, (&joint, inverse_bind)) in
                skin.joints.iter().zip(&skin.inverse_bind).enumerate()
            {
                let world = self.world.get(joint).copied().unwrap_or(Mat4::IDENTITY);
                let mut m = world * *inverse_bind;
                if !m.is_finite() {
                    m = Mat4::IDENTITY;
                }
                let at = (slot.base + k) * 16;
                if let Some(out) = self.joint_data.get_mut(at..at + 16) {
                    m.write_cols_to_slice(out);
                }
            }
        }
        let gl = &*self.gl;
        // SAFETY: the buffer holds exactly `joint_data.len()` floats (allocated from it).
        unsafe {
            gl.bind_buffer(glow::TEXTURE_BUFFER, Some(buffer.raw()));
            gl.buffer_sub_data_u8_slice(glow::TEXTURE_BUFFER, 0, bytes_of(&self.joint_data));
            gl.bind_buffer(glow::TEXTURE_BUFFER, None);
        }
        check_gl!(gl, "uploading joint matrices");
    }
}

/// Each avatar skin's joints and one inverse bind matrix per joint (the identity where the
/// skin lacks one or it is not finite).
pub(super) fn gpu_skins(avatar: &Avatar) -> Vec<GpuSkin> {
    avatar
        .skins
        .iter()
        .map(|skin| GpuSkin {
            joints: skin.joints.clone(),
            inverse_bind: (0..skin.joints.len())
                .map(|k| {
                    skin.inverse_bind
                        .get(k)
                        .copied()
                        .filter(Mat4::is_finite)
                        .unwrap_or(Mat4::IDENTITY)
                })
                .collect(),
        })
        .collect()
}

/// Decides which nodes draw skinned and where their joint matrices go: a node with a mesh and a
/// skin whose primitives' joints all exist in that skin gets the next free run of joints. A node
/// whose primitives name joints its skin lacks is drawn unskinned, with a warning.
pub(super) fn assign_skins(
    avatar: &Avatar,
    nodes: &[NodeInfo],
    meshes: &[GpuMesh],
    skins: &[GpuSkin],
) -> Vec<Option<NodeSkin>> {
    let mut next = 0;
    let mut out = vec![None; nodes.len()];
    for (index, node) in nodes.iter().enumerate() {
        let (Some(mesh), Some(skin)) = (node.mesh, avatar.node_skin(index)) else {
            continue;
        };
        let Some(gpu_skin) = skins.get(skin) else {
            continue;
        };
        let joints = gpu_skin.joints.len();
        let max = meshes
            .get(mesh)
            .into_iter()
            .flat_map(|m| &m.primitives)
            .filter_map(|p| p.max_joint)
            .max();
        match max {
            None => continue,
            Some(max) if usize::from(max) >= joints => {
                tracing::warn!(
                    node = index,
                    skin,
                    joint = max,
                    joints,
                    "skinned mesh names a joint its skin lacks; drawing it unskinned"
                );
            }
            Some(_) => {
                out[index] = Some(NodeSkin { skin, base: next });
                next += joints;
            }
        }
    }
    out
}

/// Creates the buffer texture of joint matrices (RGBA32F, four texels per joint) with room for
/// `data`.
pub(super) fn upload_joint_texture(
    gl: &Rc<glow::Context>,
    data: &[f32],
) -> Result<(Buffer, Texture), RenderError> {
    let buffer = Buffer::new(gl)?;
    let texture = Texture::new(gl)?;
    // SAFETY: fresh objects owned here; the buffer texture views the whole buffer.
    unsafe {
        gl.bind_buffer(glow::TEXTURE_BUFFER, Some(buffer.raw()));
        gl.buffer_data_u8_slice(glow::TEXTURE_BUFFER, bytes_of(data), glow::DYNAMIC_DRAW);
        gl.bind_buffer(glow::TEXTURE_BUFFER, None);
        gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
        gl.tex_buffer(glow::TEXTURE_BUFFER, glow::RGBA32F, Some(buffer.raw()));
        gl.bind_texture(glow::TEXTURE_BUFFER, None);
    }
    check_gl!(gl, "creating the joint matrix texture");
    Ok((buffer, texture))
}

/// The largest joint index with a non-zero weight (`None` when every weight is zero), and the
/// joint with the most total weight. `weights` holds four floats per vertex.
pub(super) fn joint_stats(joints: &[[u16; 4]], weights: &[f32]) -> (Option<u16>, u16) {
    let mut max: Option<u16> = None;
    let mut totals: Vec<f32> = Vec::new();
    for (joint, w) in joints.iter().zip(weights.chunks_exact(4)) {
        for (&j, &w) in joint.iter().zip(w) {
            if w > 0.0 {
                max = Some(max.map_or(j, |m| m.max(j)));
                let slot = usize::from(j);
                if totals.len() <= slot {
                    totals.resize(slot + 1, 0.0);
                }
                totals[slot] += w;
            }
        }
    }
    let dominant = totals
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(j, _)| j as u16);
    (max, dominant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joint_stats_find_the_largest_and_the_dominant_joint() {
        let joints = [[0, 3, 9, 0], [2, 0, 0, 0]];
        let weights = [0.5, 0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        assert_eq!(joint_stats(&joints, &weights), (Some(3), 2));
        assert_eq!(joint_stats(&joints, &[0.0; 8]), (None, 0));
    }
}
