//! Uploads of meshes and primitives: the vertex arrays and buffers (interleaved position and
//! normal, texture coordinates, joints and weights, colours, indices) and each mesh's per-frame
//! weight state.

#![expect(unsafe_code)]

use std::rc::Rc;

use glam::{Vec3, Vec4};
use glow::HasContext;

use super::morph::{cpu_morph, upload_deltas, PrimitiveMorph};
use super::objects::{bytes_of, Buffer, VertexArray};
use super::skins::joint_stats;
use super::{check_gl, MorphPath, RenderError};
use crate::avatar::{Avatar, Primitive};

/// Floats per vertex in the interleaved position + normal buffer (the layout
/// [`crate::avatar::blend::CpuBlender::blend_interleaved`] writes).
const STRIDE: usize = 6;

/// One mesh: its primitives and the per-frame weight state.
pub(super) struct GpuMesh {
    /// Uploaded primitives (invalid ones are skipped).
    pub(super) primitives: Vec<GpuPrimitive>,
    /// This frame's sanitised weights, one per target.
    pub(super) weights: Vec<f32>,
    /// CPU path: the weights the vertex buffers currently hold.
    pub(super) uploaded: Vec<f32>,
    /// GPU path: scratch list of non-zero target indices.
    pub(super) order: Vec<u32>,
    /// GPU path: the active list's target indices, padded to `MAX_ACTIVE`.
    pub(super) active_index: Vec<i32>,
    /// GPU path: the active list's weights, padded to `MAX_ACTIVE`.
    pub(super) active_weight: Vec<f32>,
    /// GPU path: the active list's length.
    pub(super) active_count: i32,
    /// Whether the "too many active targets" warning was logged.
    pub(super) warned_active: bool,
}

/// One primitive on the GPU.
pub(super) struct GpuPrimitive {
    /// The vertex array with the three attributes and the index buffer.
    pub(super) vao: VertexArray,
    /// Interleaved position + normal (base on the GPU path, blended on the CPU path).
    pub(super) vertex_buffer: Buffer,
    /// Texture coordinates.
    pub(super) _uv_buffer: Buffer,
    /// Joints and weights, when the primitive has both.
    pub(super) _skin_buffers: Option<(Buffer, Buffer)>,
    /// Vertex colours, when the primitive has them.
    pub(super) _color_buffer: Option<Buffer>,
    /// Triangle indices.
    pub(super) index_buffer: Buffer,
    /// The avatar primitive this one draws (its index in the mesh's list).
    pub(super) source: usize,
    /// How many of the indices, from the first, make the triangles some wrinkle map of the
    /// material may touch (set with the maps, which put those triangles first); the rest are
    /// flat under every map and draw with the plain program.
    pub(super) wrinkle_indices: i32,
    /// The largest joint index with a non-zero weight; `None` when the primitive is unskinned.
    pub(super) max_joint: Option<u16>,
    /// Rest-pose centroid of the vertices, in the mesh's (bind) space.
    pub(super) centroid: Vec3,
    /// The joint with the most total weight, whose matrix places the centroid when skinned.
    pub(super) dominant_joint: u16,
    /// Number of indices drawn.
    pub(super) index_count: i32,
    /// Number of vertices.
    pub(super) vertex_count: i32,
    /// Index into `Renderer::materials`.
    pub(super) material: Option<usize>,
    /// Morph data for the path in use.
    pub(super) morph: PrimitiveMorph,
}

/// Uploads every mesh's primitives, with active-target lists of `max_active` entries. A
/// dangling material index is dropped with a warning (the default material is used).
pub(super) fn upload_meshes(
    gl: &Rc<glow::Context>,
    avatar: &Avatar,
    path: MorphPath,
    max_active: usize,
) -> Result<Vec<GpuMesh>, RenderError> {
    let mut meshes = Vec::with_capacity(avatar.meshes.len());
    for (mesh_index, mesh) in avatar.meshes.iter().enumerate() {
        let targets = mesh.target_count();
        let mut primitives = Vec::with_capacity(mesh.primitives.len());
        for (prim_index, prim) in mesh.primitives.iter().enumerate() {
            let material = prim.material.filter(|&m| {
                let ok = m < avatar.materials.len();
                if !ok {
                    tracing::warn!(
                        mesh = mesh_index,
                        primitive = prim_index,
                        material = m,
                        "material index out of range; using the default material"
                    );
                }
                ok
            });
            if let Some(p) =
                upload_primitive(gl, prim, material, path, targets, mesh_index, prim_index)?
            {
                primitives.push(p);
            }
        }
        meshes.push(GpuMesh {
            primitives,
            weights: vec![0.0; targets],
            uploaded: vec![0.0; targets],
            order: Vec::with_capacity(targets),
            active_index: vec![0; max_active],
            active_weight: vec![0.0; max_active],
            active_count: 0,
            warned_active: false,
        });
    }
    Ok(meshes)
}

/// Uploads one primitive, or returns `None` (with a warning) when it cannot be drawn.
pub(super) fn upload_primitive(
    gl: &Rc<glow::Context>,
    prim: &Primitive,
    material: Option<usize>,
    path: MorphPath,
    mesh_targets: usize,
    mesh: usize,
    primitive: usize,
) -> Result<Option<GpuPrimitive>, RenderError> {
    let count = prim.positions.len();
    let usable_indices = prim.indices.len() - prim.indices.len() % 3;
    let (Ok(vertex_count), Ok(index_count)) = (i32::try_from(count), i32::try_from(usable_indices))
    else {
        tracing::warn!(mesh, primitive, "primitive too large to draw; skipped");
        return Ok(None);
    };
    if count == 0 || index_count == 0 {
        tracing::debug!(mesh, primitive, "empty primitive skipped");
        return Ok(None);
    }
    if prim.indices.iter().any(|&i| i as usize >= count) {
        tracing::warn!(
            mesh,
            primitive,
            vertices = count,
            "primitive has out-of-range indices; skipped"
        );
        return Ok(None);
    }
    if prim.normals.len() != count {
        tracing::warn!(
            mesh,
            primitive,
            "normal count does not match the vertices; using +Z"
        );
    }
    if !prim.uvs.is_empty() && prim.uvs.len() != count {
        tracing::warn!(
            mesh,
            primitive,
            "uv count does not match the vertices; using zeros"
        );
    }

    let mut base = Vec::with_capacity(count * STRIDE);
    for (v, p) in prim.positions.iter().enumerate() {
        let n = prim
            .normals
            .get(v)
            .copied()
            .filter(|_| prim.normals.len() == count);
        let n = n.unwrap_or(Vec3::Z);
        base.extend_from_slice(&[p.x, p.y, p.z, n.x, n.y, n.z]);
    }
    let uvs: Vec<f32> = if prim.uvs.len() == count {
        prim.uvs.iter().flat_map(|uv| [uv.x, uv.y]).collect()
    } else {
        vec![0.0; count * 2]
    };

    // Joints and weights only when both cover every vertex; a joint past u16 is impossible.
    let skinned = prim.joints.len() == count && prim.joint_weights.len() == count;
    let partly_skinned = !(prim.joints.is_empty() && prim.joint_weights.is_empty());
    if partly_skinned && !skinned {
        tracing::warn!(
            mesh,
            primitive,
            "joint or weight count does not match the vertices; drawing unskinned"
        );
    }
    let weights: Vec<f32> = if skinned {
        prim.joint_weights
            .iter()
            .flat_map(|w| {
                let w = if w.is_finite() {
                    w.max(Vec4::ZERO)
                } else {
                    Vec4::ZERO
                };
                w.to_array()
            })
            .collect()
    } else {
        Vec::new()
    };
    let joints: Vec<u16> = if skinned {
        prim.joints.iter().flatten().copied().collect()
    } else {
        Vec::new()
    };
    let (max_joint, dominant_joint) = if skinned {
        joint_stats(&prim.joints, &weights)
    } else {
        (None, 0)
    };
    let colors: Vec<f32> = if prim.colors.len() == count {
        prim.colors
            .iter()
            .flat_map(|c| {
                c.to_array()
                    .map(|v| if v.is_finite() { v.max(0.0) } else { 1.0 })
            })
            .collect()
    } else {
        if !prim.colors.is_empty() {
            tracing::warn!(
                mesh,
                primitive,
                "vertex colour count does not match the vertices; ignoring them"
            );
        }
        Vec::new()
    };
    let centroid = prim.positions.iter().copied().sum::<Vec3>() / count as f32;

    let vao = VertexArray::new(gl)?;
    let vertex_buffer = Buffer::new(gl)?;
    let uv_buffer = Buffer::new(gl)?;
    let index_buffer = Buffer::new(gl)?;
    let skin_buffers = if skinned {
        Some((Buffer::new(gl)?, Buffer::new(gl)?))
    } else {
        None
    };
    let color_buffer = if colors.is_empty() {
        None
    } else {
        Some(Buffer::new(gl)?)
    };
    let has_targets = !prim.targets.is_empty();
    let usage = if path == MorphPath::Cpu && has_targets {
        glow::DYNAMIC_DRAW
    } else {
        glow::STATIC_DRAW
    };
    let stride = (STRIDE * 4) as i32;
    // SAFETY: all objects are fresh and owned here; the attribute layout matches the buffers
    // (6 floats per vertex interleaved, 2 floats per uv, 4 u16 joints, 4 float weights, 4 float
    // colours) and the shader's locations 0 to 5.
    unsafe {
        gl.bind_vertex_array(Some(vao.raw()));
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(vertex_buffer.raw()));
        gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of(&base), usage);
        gl.enable_vertex_attrib_array(0);
        gl.vertex_attrib_pointer_f32(0, 3, glow::FLOAT, false, stride, 0);
        gl.enable_vertex_attrib_array(1);
        gl.vertex_attrib_pointer_f32(1, 3, glow::FLOAT, false, stride, 12);
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(uv_buffer.raw()));
        gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of(&uvs), glow::STATIC_DRAW);
        gl.enable_vertex_attrib_array(2);
        gl.vertex_attrib_pointer_f32(2, 2, glow::FLOAT, false, 8, 0);
        if let Some((joint_buffer, weight_buffer)) = &skin_buffers {
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(joint_buffer.raw()));
            gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of(&joints), glow::STATIC_DRAW);
            gl.enable_vertex_attrib_array(3);
            gl.vertex_attrib_pointer_i32(3, 4, glow::UNSIGNED_SHORT, 8, 0);
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(weight_buffer.raw()));
            gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of(&weights), glow::STATIC_DRAW);
            gl.enable_vertex_attrib_array(4);
            gl.vertex_attrib_pointer_f32(4, 4, glow::FLOAT, false, 16, 0);
        }
        if let Some(color_buffer) = &color_buffer {
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(color_buffer.raw()));
            gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, bytes_of(&colors), glow::STATIC_DRAW);
            gl.enable_vertex_attrib_array(5);
            gl.vertex_attrib_pointer_f32(5, 4, glow::FLOAT, false, 16, 0);
        }
        gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, Some(index_buffer.raw()));
        gl.buffer_data_u8_slice(
            glow::ELEMENT_ARRAY_BUFFER,
            bytes_of(&prim.indices[..usable_indices]),
            glow::STATIC_DRAW,
        );
        gl.bind_vertex_array(None);
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, None);
    }
    check_gl!(gl, "uploading a primitive");

    let morph = match (has_targets, path) {
        (false, _) => PrimitiveMorph::None,
        (true, MorphPath::Cpu) => cpu_morph(prim, count, base),
        (true, MorphPath::Gpu) => upload_deltas(gl, prim, count, mesh_targets, mesh, primitive)?,
    };
    Ok(Some(GpuPrimitive {
        vao,
        vertex_buffer,
        _uv_buffer: uv_buffer,
        _skin_buffers: skin_buffers,
        _color_buffer: color_buffer,
        index_buffer,
        source: primitive,
        wrinkle_indices: index_count,
        max_joint,
        centroid,
        dominant_joint,
        index_count,
        vertex_count,
        material,
        morph,
    }))
}
