//! The avatar renderer: uploads an [`Avatar`] once, then draws it each frame with new weights and
//! node rotations through the CPU or the GPU morph path.
//!
//! Skinned primitives are skinned in the vertex shader on both paths, after morphing (glTF's
//! order): each frame the joint matrices `world(joint) * inverseBind` of every skinned node go
//! into one RGBA32F buffer texture, four texels per joint, so skeletons of any size fit.
//!
//! Opaque and masked primitives are drawn first, in node order; blended ones after them, far to
//! near by their centroid's depth, without depth writes. MToon materials with an outline draw a
//! second, inverted-hull pass right after their surface.

#![allow(unsafe_code)]

use std::fmt;
use std::rc::Rc;

use glam::{Mat3, Mat4, Quat, Vec3, Vec4};
use glow::HasContext;

use super::debug::gl_string;
use super::objects::{bytes_of, Buffer, Program, Texture, VertexArray};
use super::RenderError;
use super::{check_gl, sanitize_weight, shader, Camera, DrawTarget, MorphMode, MorphPath};
use crate::avatar::blend::{CpuBlender, WEIGHT_EPSILON};
use crate::avatar::{AlphaMode, Avatar, OutlineMode, Pose, Primitive};

/// Floats per vertex in the interleaved position + normal buffer (the layout
/// [`CpuBlender::blend_interleaved`] writes).
const STRIDE: usize = 6;

/// The most non-zero weights one mesh can send to the GPU path's shader in a frame. Beyond
/// this, the largest weights (by magnitude) are kept.
pub const MAX_ACTIVE_TARGETS: usize = 128;

/// Draws one avatar. Holds every GL object the avatar needs; drop it before the context (see
/// the module docs of [`crate::render`]).
pub struct Renderer {
    /// The linked avatar programs, one per shading the avatar's materials use; the first is
    /// the standard one.
    programs: Vec<ShaderVariant>,
    /// For each `SHADING_*`, its index in `programs` (the standard one where not compiled).
    program_for: [usize; 3],
    /// A 1x1 white texture for materials without one.
    white: Texture,
    /// One entry per avatar texture; `None` where the texture could not be uploaded.
    textures: Vec<Option<Texture>>,
    /// One entry per avatar material.
    materials: Vec<GpuMaterial>,
    /// One entry per avatar mesh.
    meshes: Vec<GpuMesh>,
    /// The node hierarchy (rest transforms and meshes).
    nodes: Vec<NodeInfo>,
    /// One entry per avatar skin.
    skins: Vec<GpuSkin>,
    /// Per node: where its joint matrices go, when its mesh is drawn skinned.
    node_skins: Vec<Option<NodeSkin>>,
    /// The joint matrices of every skinned node, 16 floats per joint (reused each frame).
    joint_data: Vec<f32>,
    /// The buffer texture that holds `joint_data` (absent when nothing is skinned).
    joint_texture: Option<(Buffer, Texture)>,
    /// This frame's blended primitives, sorted for drawing (reused).
    blended: Vec<BlendedDraw>,
    /// Scene roots.
    roots: Vec<usize>,
    /// Per-frame world matrices, one per node (reused).
    world: Vec<Mat4>,
    /// Per-frame flags: whether each node was reached from a root this frame (reused).
    visited: Vec<bool>,
    /// Traversal stack (reused).
    stack: Vec<(usize, Mat4)>,
    /// The morph path in use.
    path: MorphPath,
    /// `GL_RENDERER`, for logs and the morph path decision.
    renderer_name: String,
    /// The GL context.
    gl: Rc<glow::Context>,
}

/// One linked avatar program and its uniform locations.
struct ShaderVariant {
    /// The program.
    program: Program,
    /// Its uniform locations, looked up once.
    uniforms: Uniforms,
}

/// Which program is in use while drawing, and which node's uniforms each holds.
struct Bound {
    /// The index in `Renderer::programs` of the program in use.
    program: usize,
    /// Per program, the node whose uniforms it holds this frame (`usize::MAX`: none yet).
    node: [usize; 3],
}

/// Uniform locations of an avatar program (`None` where the driver optimised one away).
struct Uniforms {
    model: Option<glow::UniformLocation>,
    normal_matrix: Option<glow::UniformLocation>,
    view_proj: Option<glow::UniformLocation>,
    base_color: Option<glow::UniformLocation>,
    key_dir: Option<glow::UniformLocation>,
    fill_dir: Option<glow::UniformLocation>,
    rim_dir: Option<glow::UniformLocation>,
    camera_pos: Option<glow::UniformLocation>,
    vertex_count: Option<glow::UniformLocation>,
    active_count: Option<glow::UniformLocation>,
    active_index: Option<glow::UniformLocation>,
    active_weight: Option<glow::UniformLocation>,
    uv_transform: Option<glow::UniformLocation>,
    skinned: Option<glow::UniformLocation>,
    joint_base: Option<glow::UniformLocation>,
    alpha_mode: Option<glow::UniformLocation>,
    alpha_cutoff: Option<glow::UniformLocation>,
    shade_color: Option<glow::UniformLocation>,
    shade_source: Option<glow::UniformLocation>,
    shading_shift: Option<glow::UniformLocation>,
    shading_toony: Option<glow::UniformLocation>,
    outline: Option<glow::UniformLocation>,
    outline_width: Option<glow::UniformLocation>,
    outline_mode: Option<glow::UniformLocation>,
    outline_color: Option<glow::UniformLocation>,
    outline_mix: Option<glow::UniformLocation>,
    aspect: Option<glow::UniformLocation>,
}

/// Texture units: base colour, morph deltas, MToon shade texture, joint matrices.
const UNIT_BASE: u32 = 0;
const UNIT_DELTAS: u32 = 1;
const UNIT_SHADE: u32 = 2;
const UNIT_JOINTS: u32 = 3;

/// The program variants: the portrait lighting, unlit (`KHR_materials_unlit`) and MToon. Each is
/// its own program rather than a branch in one: on llvmpipe the branching program made a frame of
/// a MToon avatar about a third slower (see BENCHMARKS.md).
const SHADING_STANDARD: usize = 0;
const SHADING_UNLIT: usize = 1;
const SHADING_TOON: usize = 2;

/// What a material needs at draw time.
struct GpuMaterial {
    /// Linear RGBA base colour factor.
    base_color: [f32; 4],
    /// Index into `Renderer::textures`, if the material has a usable texture.
    texture: Option<usize>,
    /// Whether back faces are drawn.
    double_sided: bool,
    /// glTF alpha mode.
    alpha_mode: AlphaMode,
    /// Mask cutoff.
    alpha_cutoff: f32,
    /// The base colour texture transform, column-major.
    uv_transform: [f32; 9],
    /// The program variant, `SHADING_*`.
    shading: usize,
    /// MToon parameters, when `shading` is `SHADING_TOON`.
    toon: Option<GpuToon>,
}

/// MToon parameters, sanitised.
struct GpuToon {
    /// Linear shade colour factor.
    shade_color: [f32; 3],
    /// Index into `Renderer::textures` of the shade texture.
    shade_texture: Option<usize>,
    /// Ramp shift.
    shift: f32,
    /// Ramp toony factor.
    toony: f32,
    /// Outline: mode (1 world, 2 screen), width, colour, lighting mix.
    outline: Option<(i32, f32, [f32; 3], f32)>,
    /// Blend materials: depth writes stay on.
    z_write: bool,
    /// Blend order offset.
    queue: i32,
}

/// A skin's joints and inverse bind matrices.
struct GpuSkin {
    /// Joint node indices.
    joints: Vec<usize>,
    /// One inverse bind matrix per joint.
    inverse_bind: Vec<Mat4>,
}

/// Where a skinned node's joint matrices live in the joint texture.
#[derive(Clone, Copy)]
struct NodeSkin {
    /// Index into `Renderer::skins`.
    skin: usize,
    /// The node's first joint in the joint texture.
    base: usize,
}

/// One blended primitive of this frame.
#[derive(Clone, Copy)]
struct BlendedDraw {
    /// The material's render queue offset (earlier when lower).
    queue: i32,
    /// Distance of the centroid along the view direction (farther first).
    depth: f32,
    /// The node drawing it.
    node: usize,
    /// The primitive's index in its mesh.
    primitive: usize,
}

/// One mesh: its primitives and the per-frame weight state.
struct GpuMesh {
    /// Uploaded primitives (invalid ones are skipped).
    primitives: Vec<GpuPrimitive>,
    /// This frame's sanitised weights, one per target.
    weights: Vec<f32>,
    /// CPU path: the weights the vertex buffers currently hold.
    uploaded: Vec<f32>,
    /// GPU path: scratch list of non-zero target indices.
    order: Vec<u32>,
    /// GPU path: the active list's target indices, padded to `MAX_ACTIVE`.
    active_index: Vec<i32>,
    /// GPU path: the active list's weights, padded to `MAX_ACTIVE`.
    active_weight: Vec<f32>,
    /// GPU path: the active list's length.
    active_count: i32,
    /// Whether the "too many active targets" warning was logged.
    warned_active: bool,
}

/// One primitive on the GPU.
struct GpuPrimitive {
    /// The vertex array with the three attributes and the index buffer.
    vao: VertexArray,
    /// Interleaved position + normal (base on the GPU path, blended on the CPU path).
    vertex_buffer: Buffer,
    /// Texture coordinates.
    _uv_buffer: Buffer,
    /// Joints and weights, when the primitive has both.
    _skin_buffers: Option<(Buffer, Buffer)>,
    /// Vertex colours, when the primitive has them.
    _color_buffer: Option<Buffer>,
    /// Triangle indices.
    _index_buffer: Buffer,
    /// The largest joint index with a non-zero weight; `None` when the primitive is unskinned.
    max_joint: Option<u16>,
    /// Rest-pose centroid of the vertices, in the mesh's (bind) space.
    centroid: Vec3,
    /// The joint with the most total weight, whose matrix places the centroid when skinned.
    dominant_joint: u16,
    /// Number of indices drawn.
    index_count: i32,
    /// Number of vertices.
    vertex_count: i32,
    /// Index into `Renderer::materials`.
    material: Option<usize>,
    /// Morph data for the path in use.
    morph: PrimitiveMorph,
}

/// A primitive's morph data.
enum PrimitiveMorph {
    /// No targets.
    None,
    /// CPU path: the sparse blender and its interleaved output buffer.
    Cpu {
        blender: CpuBlender,
        scratch: Vec<f32>,
    },
    /// GPU path: the deltas buffer and the buffer texture that views it.
    Gpu { _buffer: Buffer, texture: Texture },
}

/// The parts of a node the renderer needs each frame.
struct NodeInfo {
    children: Vec<usize>,
    translation: Vec3,
    rotation: Quat,
    scale: Vec3,
    mesh: Option<usize>,
}

impl fmt::Debug for Renderer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Renderer")
            .field("path", &self.path)
            .field("renderer", &self.renderer_name)
            .field("meshes", &self.meshes.len())
            .field("textures", &self.textures.len())
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// Uploads `avatar` (vertices, indices, textures, and morph deltas for the GPU path) to the
    /// current context and compiles the shader for the resolved morph path.
    ///
    /// `morph` is resolved once against `GL_RENDERER` (see [`MorphMode::resolve`]); the GPU
    /// path falls back to the CPU path, with a warning, when a primitive's deltas exceed the
    /// driver's buffer-texture size. Invalid data is skipped with a warning, never a panic:
    /// primitives without vertices or with out-of-range indices, textures whose byte count does
    /// not match their size, dangling material, texture, mesh and node indices.
    pub fn new(
        gl: Rc<glow::Context>,
        avatar: &Avatar,
        morph: MorphMode,
    ) -> Result<Renderer, RenderError> {
        let renderer_name = gl_string(&gl, glow::RENDERER);
        let mut path = morph.resolve(&renderer_name);
        if path == MorphPath::Gpu {
            // SAFETY: querying a limit on the current context.
            let limit = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_BUFFER_SIZE) };
            if let Some((texels, name)) = largest_delta_texels(avatar) {
                if texels > limit.max(0) as u64 {
                    tracing::warn!(
                        texels,
                        limit,
                        mesh = %name,
                        "morph deltas exceed the driver's buffer texture size; using the CPU morph path"
                    );
                    path = MorphPath::Cpu;
                }
            }
        }
        tracing::info!(?morph, ?path, renderer = %renderer_name, "morph path resolved");

        let max_targets = avatar
            .meshes
            .iter()
            .map(|m| m.target_count())
            .max()
            .unwrap_or(0);
        let max_active = (max_targets.div_ceil(4) * 4).clamp(4, MAX_ACTIVE_TARGETS);
        let mut defines = vec![("MAX_ACTIVE", max_active.to_string())];
        if path == MorphPath::Gpu {
            defines.push(("MORPH_GPU", "1".to_owned()));
        }
        defines.extend(
            feature_defines(avatar)
                .into_iter()
                .map(|name| (name, "1".to_owned())),
        );
        let used = |shading: usize| {
            shading == SHADING_STANDARD
                || avatar
                    .materials
                    .iter()
                    .any(|m| material_shading(m) == shading)
        };
        let outlines = avatar
            .materials
            .iter()
            .filter_map(|m| m.toon.as_ref())
            .any(|t| t.outline.is_some());
        let mut programs = Vec::with_capacity(3);
        let mut program_for = [0; 3];
        for (shading, extra) in [
            (SHADING_STANDARD, None),
            (SHADING_UNLIT, Some("SHADING_UNLIT")),
            (SHADING_TOON, Some("SHADING_TOON")),
        ] {
            if !used(shading) {
                continue;
            }
            let mut defines = defines.clone();
            defines.extend(extra.map(|name| (name, "1".to_owned())));
            if shading == SHADING_TOON && outlines {
                defines.push(("OUTLINE", "1".to_owned()));
            }
            program_for[shading] = programs.len();
            programs.push(build_variant(&gl, &defines)?);
        }

        let white = upload_texture(&gl, 1, 1, &[255; 4])?;
        let textures = upload_textures(&gl, avatar)?;
        let materials: Vec<GpuMaterial> = avatar
            .materials
            .iter()
            .map(|m| gpu_material(m, &textures))
            .collect();

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
                    upload_primitive(&gl, prim, material, path, targets, mesh_index, prim_index)?
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

        let nodes: Vec<NodeInfo> = avatar
            .nodes
            .iter()
            .map(|n| NodeInfo {
                children: n.children.clone(),
                translation: n.translation,
                rotation: n.rotation,
                scale: n.scale,
                mesh: n.mesh.filter(|&m| m < avatar.meshes.len()),
            })
            .collect();
        let count = nodes.len();

        let skins: Vec<GpuSkin> = avatar
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
            .collect();
        let node_skins = assign_skins(avatar, &nodes, &meshes, &skins);
        let joint_count = node_skins
            .iter()
            .flatten()
            .map(|s| s.base + skins[s.skin].joints.len())
            .max()
            .unwrap_or(0);
        let joint_data = vec![0.0f32; joint_count * 16];
        let joint_texture = if joint_count > 0 {
            Some(upload_joint_texture(&gl, &joint_data)?)
        } else {
            None
        };
        // Room for every blended primitive any node draws, so sorting them never allocates.
        let blended_capacity: usize = nodes
            .iter()
            .filter_map(|n| n.mesh.and_then(|m| meshes.get(m)))
            .map(|m| {
                m.primitives
                    .iter()
                    .filter(|p| {
                        p.material
                            .and_then(|i| materials.get(i))
                            .is_some_and(|m| m.alpha_mode == AlphaMode::Blend)
                    })
                    .count()
            })
            .sum();
        tracing::debug!(
            meshes = meshes.len(),
            primitives = meshes.iter().map(|m| m.primitives.len()).sum::<usize>(),
            textures = textures.len(),
            nodes = count,
            max_active,
            skinned_joints = joint_count,
            "avatar uploaded"
        );
        Ok(Renderer {
            programs,
            program_for,
            white,
            textures,
            materials,
            meshes,
            nodes,
            skins,
            node_skins,
            joint_data,
            joint_texture,
            blended: Vec::with_capacity(blended_capacity),
            roots: avatar.roots.clone(),
            world: vec![Mat4::IDENTITY; count],
            visited: vec![false; count],
            stack: Vec::with_capacity(count),
            path,
            renderer_name,
            gl,
        })
    }

    /// The morph path in use.
    pub fn morph_path(&self) -> MorphPath {
        self.path
    }

    /// The `GL_RENDERER` string of the context.
    pub fn gl_renderer(&self) -> &str {
        &self.renderer_name
    }

    /// Draws one frame into the framebuffer currently bound for drawing.
    ///
    /// Weights come from `pose.weights[mesh][target]`: each is passed through
    /// [`sanitize_weight`], missing entries count as 0 and extra ones are ignored. Node
    /// rotations from `pose.rotations` are applied after each node's rest rotation (non-finite
    /// or zero quaternions count as identity); morphing happens before skinning and the node
    /// transforms.
    ///
    /// GL state changed and left behind: viewport, clear colour, depth test (on, `LESS`, depth
    /// writes on), colour mask (all on), blending (off; its function `ONE, ONE_MINUS_SRC_ALPHA`
    /// when the avatar has blended materials), scissor test and `GL_FRAMEBUFFER_SRGB` (off),
    /// face culling, cull face and front face, the active texture unit (unit 0) and the textures
    /// bound on units 0 to 3, the array and texture buffer bindings, and the current value of
    /// vertex attribute 5. The program and vertex array are unbound at the end. Nothing is
    /// allocated after the first frame.
    pub fn draw(&mut self, pose: &Pose, camera: &Camera, target: &DrawTarget) {
        self.update_weights(pose);
        match self.path {
            MorphPath::Cpu => self.upload_cpu_morphs(),
            MorphPath::Gpu => self.build_active_lists(),
        }
        self.update_world(pose);
        self.upload_joint_matrices();

        let gl = &*self.gl;
        let clear = target.effective_clear();
        // SAFETY: every object used below was created on this context and is alive (owned by
        // self); the context is current (the drop-order and threading rules of the module).
        unsafe {
            gl.disable(glow::FRAMEBUFFER_SRGB);
            gl.disable(glow::BLEND);
            gl.disable(glow::SCISSOR_TEST);
            gl.color_mask(true, true, true, true);
            gl.enable(glow::DEPTH_TEST);
            gl.depth_func(glow::LESS);
            gl.depth_mask(true);
            gl.viewport(
                0,
                0,
                target.width.min(i32::MAX as u32) as i32,
                target.height.min(i32::MAX as u32) as i32,
            );
            gl.clear_color(clear[0], clear[1], clear[2], clear[3]);
            gl.clear(glow::COLOR_BUFFER_BIT | glow::DEPTH_BUFFER_BIT);
        }
        check_gl!(gl, "clearing the frame");
        if target.width == 0 || target.height == 0 {
            return;
        }

        let (right, up, forward) = camera.basis();
        let back = -forward;
        let lights = [
            (-0.55 * right + 0.55 * up + 0.62 * back).normalize(),
            (0.75 * right - 0.10 * up + 0.65 * back).normalize(),
            (0.30 * right + 0.50 * up - 0.80 * back).normalize(),
        ];
        let aspect = target.width as f32 / target.height as f32;
        for program in &self.programs {
            set_globals(gl, program, camera, lights, aspect);
        }
        // SAFETY: as above.
        unsafe {
            // Primitives without vertex colours read this constant instead.
            gl.vertex_attrib_4_f32(5, 1.0, 1.0, 1.0, 1.0);
            if let Some((_, texture)) = &self.joint_texture {
                gl.active_texture(glow::TEXTURE0 + UNIT_JOINTS);
                gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
            }
            gl.active_texture(glow::TEXTURE0);
            gl.use_program(self.programs.first().map(|p| p.program.raw()));
        }
        let mut bound = Bound {
            program: 0,
            node: [usize::MAX; 3],
        };

        // Opaque and masked primitives, in node order; blended ones are listed for later.
        let mut blended = std::mem::take(&mut self.blended);
        blended.clear();
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(mesh_index) = node.mesh else {
                continue;
            };
            if !self.visited[index] {
                continue;
            }
            let Some(mesh) = self.meshes.get(mesh_index) else {
                continue;
            };
            for (p, prim) in mesh.primitives.iter().enumerate() {
                let material = prim.material.and_then(|m| self.materials.get(m));
                if material.is_some_and(|m| m.alpha_mode == AlphaMode::Blend) {
                    blended.push(BlendedDraw {
                        queue: material
                            .and_then(|m| m.toon.as_ref())
                            .map_or(0, |t| t.queue),
                        depth: (self.centroid(index, prim) - camera.eye).dot(forward),
                        node: index,
                        primitive: p,
                    });
                    continue;
                }
                let u = self.bind(&mut bound, material, index, mesh);
                self.draw_primitive(u, index, prim, material, false);
                if material
                    .and_then(|m| m.toon.as_ref())
                    .is_some_and(|t| t.outline.is_some())
                {
                    self.draw_primitive(u, index, prim, material, true);
                }
            }
        }

        // Blended primitives: lower queues first, then far to near, without depth writes
        // (unless an MToon material asks for them), over what is already drawn.
        if !blended.is_empty() {
            blended.sort_unstable_by(|a, b| {
                a.queue
                    .cmp(&b.queue)
                    .then_with(|| b.depth.total_cmp(&a.depth))
            });
            // SAFETY: plain state changes on the current context.
            unsafe {
                gl.enable(glow::BLEND);
                gl.blend_func(glow::ONE, glow::ONE_MINUS_SRC_ALPHA);
            }
            for draw in &blended {
                let Some(mesh) = self.nodes[draw.node].mesh.and_then(|m| self.meshes.get(m)) else {
                    continue;
                };
                let Some(prim) = mesh.primitives.get(draw.primitive) else {
                    continue;
                };
                let material = prim.material.and_then(|m| self.materials.get(m));
                let z_write = material
                    .and_then(|m| m.toon.as_ref())
                    .is_some_and(|t| t.z_write);
                let u = self.bind(&mut bound, material, draw.node, mesh);
                // SAFETY: as above.
                unsafe { gl.depth_mask(z_write) };
                self.draw_primitive(u, draw.node, prim, material, false);
            }
            // SAFETY: as above.
            unsafe {
                gl.disable(glow::BLEND);
                gl.depth_mask(true);
            }
        }
        self.blended = blended;

        // SAFETY: unbinding is always valid.
        unsafe {
            gl.bind_vertex_array(None);
            gl.use_program(None);
        }
        check_gl!(gl, "drawing the avatar");
        tracing::trace!(path = ?self.path, width = target.width, height = target.height, "avatar drawn");
    }

    /// Makes the program variant `material` needs current, with node `node`'s uniforms, and
    /// returns its uniform locations.
    fn bind(
        &self,
        bound: &mut Bound,
        material: Option<&GpuMaterial>,
        node: usize,
        mesh: &GpuMesh,
    ) -> &Uniforms {
        let shading = material.map_or(SHADING_STANDARD, |m| m.shading);
        let index = self.program_for.get(shading).copied().unwrap_or(0);
        let shader = &self.programs[index];
        if bound.program != index {
            // SAFETY: the program was linked on this context and is owned by self.
            unsafe { self.gl.use_program(Some(shader.program.raw())) };
            bound.program = index;
        }
        if bound.node[index] != node {
            self.set_node_uniforms(&shader.uniforms, node, mesh);
            bound.node[index] = node;
        }
        &shader.uniforms
    }

    /// Sets the per-node uniforms of the program in use: model and normal matrices, the GPU
    /// path's active list, and where the node's joint matrices start.
    fn set_node_uniforms(&self, u: &Uniforms, index: usize, mesh: &GpuMesh) {
        let gl = &*self.gl;
        let model = self.world[index];
        let normal = normal_matrix(&model);
        let joint_base = self.node_skins[index].map_or(0, |s| s.base);
        // SAFETY: the program is in use and every location belongs to it.
        unsafe {
            gl.uniform_matrix_4_f32_slice(u.model.as_ref(), false, &model.to_cols_array());
            gl.uniform_matrix_3_f32_slice(u.normal_matrix.as_ref(), false, &normal.to_cols_array());
            gl.uniform_1_i32(u.joint_base.as_ref(), joint_base as i32);
            if self.path == MorphPath::Gpu {
                gl.uniform_1_i32(u.active_count.as_ref(), mesh.active_count);
                gl.uniform_4_i32_slice(u.active_index.as_ref(), &mesh.active_index);
                gl.uniform_4_f32_slice(u.active_weight.as_ref(), &mesh.active_weight);
            }
        }
    }

    /// Whether `prim`, drawn by node `node`, is skinned.
    fn is_skinned(&self, node: usize, prim: &GpuPrimitive) -> bool {
        match (self.node_skins[node], prim.max_joint) {
            (Some(s), Some(max)) => usize::from(max) < self.skins[s.skin].joints.len(),
            _ => false,
        }
    }

    /// The transform that places `prim` drawn by node `node` this frame: the node's world
    /// matrix, or the dominant joint's matrix when skinned.
    fn placement(&self, node: usize, prim: &GpuPrimitive) -> Mat4 {
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

    /// This frame's world-space centroid of `prim` drawn by node `node`.
    fn centroid(&self, node: usize, prim: &GpuPrimitive) -> Vec3 {
        self.placement(node, prim).transform_point3(prim.centroid)
    }

    /// Draws one primitive with its material: the surface, or (`outline`) its MToon outline's
    /// inverted hull: front faces culled, pushed out along the normals, in the outline colour.
    fn draw_primitive(
        &self,
        u: &Uniforms,
        node: usize,
        prim: &GpuPrimitive,
        material: Option<&GpuMaterial>,
        outline: bool,
    ) {
        const IDENTITY_UV: [f32; 9] = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        let gl = &*self.gl;
        let base = material.map_or([1.0; 4], |m| m.base_color);
        let texture = self.texture_or_white(material.and_then(|m| m.texture));
        let double_sided = material.is_some_and(|m| m.double_sided);
        let toon = material.and_then(|m| m.toon.as_ref());
        let skinned = self.is_skinned(node, prim);
        // A mirroring transform flips the winding of every triangle (for a skinned primitive,
        // the transform of its dominant joint decides).
        let mirrored = self.placement(node, prim).determinant() < 0.0;
        // SAFETY: the program is in use; every object bound was created on this context and is
        // owned by self.
        unsafe {
            gl.uniform_4_f32(u.base_color.as_ref(), base[0], base[1], base[2], base[3]);
            gl.uniform_matrix_3_f32_slice(
                u.uv_transform.as_ref(),
                false,
                material.map_or(&IDENTITY_UV, |m| &m.uv_transform),
            );
            gl.uniform_1_i32(
                u.alpha_mode.as_ref(),
                match material.map_or(AlphaMode::Opaque, |m| m.alpha_mode) {
                    AlphaMode::Opaque => 0,
                    AlphaMode::Mask => 1,
                    AlphaMode::Blend => 2,
                },
            );
            gl.uniform_1_f32(
                u.alpha_cutoff.as_ref(),
                material.map_or(0.5, |m| m.alpha_cutoff),
            );
            gl.uniform_1_i32(u.skinned.as_ref(), i32::from(skinned));
            gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
            if let Some(toon) = toon {
                gl.uniform_3_f32_slice(u.shade_color.as_ref(), &toon.shade_color);
                gl.uniform_1_f32(u.shading_shift.as_ref(), toon.shift);
                gl.uniform_1_f32(u.shading_toony.as_ref(), toon.toony);
                // The shade texture is often the base colour texture itself: reuse its sample.
                let source = match toon.shade_texture {
                    None => 0,
                    Some(t) if Some(t) == material.and_then(|m| m.texture) => 1,
                    Some(t) => {
                        gl.active_texture(glow::TEXTURE0 + UNIT_SHADE);
                        gl.bind_texture(
                            glow::TEXTURE_2D,
                            Some(self.texture_or_white(Some(t)).raw()),
                        );
                        gl.active_texture(glow::TEXTURE0);
                        2
                    }
                };
                gl.uniform_1_i32(u.shade_source.as_ref(), source);
            }
            match (outline, toon.and_then(|t| t.outline)) {
                (true, Some((mode, width, color, mix))) => {
                    gl.uniform_1_i32(u.outline.as_ref(), 1);
                    gl.uniform_1_f32(u.outline_width.as_ref(), width);
                    gl.uniform_1_i32(u.outline_mode.as_ref(), mode);
                    gl.uniform_3_f32_slice(u.outline_color.as_ref(), &color);
                    gl.uniform_1_f32(u.outline_mix.as_ref(), mix);
                    gl.enable(glow::CULL_FACE);
                    gl.cull_face(glow::FRONT);
                }
                _ => {
                    if double_sided {
                        gl.disable(glow::CULL_FACE);
                    } else {
                        gl.enable(glow::CULL_FACE);
                        gl.cull_face(glow::BACK);
                    }
                }
            }
            gl.front_face(if mirrored { glow::CW } else { glow::CCW });
            match &prim.morph {
                PrimitiveMorph::Gpu { texture, .. } => {
                    gl.active_texture(glow::TEXTURE0 + UNIT_DELTAS);
                    gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
                    gl.active_texture(glow::TEXTURE0);
                    gl.uniform_1_i32(u.vertex_count.as_ref(), prim.vertex_count);
                }
                PrimitiveMorph::Cpu { .. } | PrimitiveMorph::None => {
                    // A primitive without deltas must not read another's.
                    gl.uniform_1_i32(u.active_count.as_ref(), 0);
                }
            }
            gl.bind_vertex_array(Some(prim.vao.raw()));
            gl.draw_elements(glow::TRIANGLES, prim.index_count, glow::UNSIGNED_INT, 0);
            if self.path == MorphPath::Gpu && matches!(prim.morph, PrimitiveMorph::None) {
                let mesh_active = self.nodes[node]
                    .mesh
                    .and_then(|m| self.meshes.get(m))
                    .map_or(0, |m| m.active_count);
                gl.uniform_1_i32(u.active_count.as_ref(), mesh_active);
            }
            if outline {
                gl.uniform_1_i32(u.outline.as_ref(), 0);
                gl.uniform_1_f32(u.outline_width.as_ref(), 0.0);
            }
        }
    }

    /// The uploaded texture `index`, or the white placeholder.
    fn texture_or_white(&self, index: Option<usize>) -> &Texture {
        index
            .and_then(|t| self.textures.get(t))
            .and_then(Option::as_ref)
            .unwrap_or(&self.white)
    }

    /// Computes every skinned node's joint matrices (`world(joint) * inverseBind`) and uploads
    /// them. Non-finite results (from extreme poses) become the identity.
    fn upload_joint_matrices(&mut self) {
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

    /// Copies the pose's weights into each mesh's sanitised weight array.
    fn update_weights(&mut self, pose: &Pose) {
        for (index, mesh) in self.meshes.iter_mut().enumerate() {
            let given = pose.weights.get(index).map_or(&[][..], Vec::as_slice);
            for (t, w) in mesh.weights.iter_mut().enumerate() {
                *w = given.get(t).copied().map_or(0.0, sanitize_weight);
            }
        }
    }

    /// CPU path: re-blends and uploads the primitives of meshes whose weights changed.
    fn upload_cpu_morphs(&mut self) {
        let gl = &*self.gl;
        for mesh in &mut self.meshes {
            if mesh.weights == mesh.uploaded {
                continue;
            }
            for prim in &mut mesh.primitives {
                if let PrimitiveMorph::Cpu { blender, scratch } = &mut prim.morph {
                    if let Err(e) = blender.blend_interleaved(&mesh.weights, scratch) {
                        // The scratch buffer is sized from the same vertex count at
                        // construction, so this cannot happen; never upload stale sizes.
                        tracing::error!(error = %e, "CPU blend buffer mismatch; frame not morphed");
                        continue;
                    }
                    // SAFETY: the buffer was allocated with exactly `scratch.len()` floats at
                    // construction, so the sub-upload stays in range.
                    unsafe {
                        gl.bind_buffer(glow::ARRAY_BUFFER, Some(prim.vertex_buffer.raw()));
                        gl.buffer_sub_data_u8_slice(glow::ARRAY_BUFFER, 0, bytes_of(scratch));
                    }
                }
            }
            mesh.uploaded.copy_from_slice(&mesh.weights);
        }
        check_gl!(gl, "uploading CPU-blended vertices");
    }

    /// GPU path: lists each mesh's non-zero weights in increasing target order, keeping the
    /// largest [`MAX_ACTIVE_TARGETS`] (by magnitude) when there are more. "Non-zero" means at
    /// least [`WEIGHT_EPSILON`] in magnitude, the same threshold [`CpuBlender`] skips below, so
    /// both paths sum the same targets.
    fn build_active_lists(&mut self) {
        for mesh in &mut self.meshes {
            let (count, dropped) = fill_active_list(
                &mesh.weights,
                &mut mesh.order,
                &mut mesh.active_index,
                &mut mesh.active_weight,
            );
            if dropped > 0 && !mesh.warned_active {
                tracing::warn!(
                    active = count + dropped,
                    max = mesh.active_index.len(),
                    "more non-zero morph weights than the GPU path takes; the smallest are dropped"
                );
                mesh.warned_active = true;
            }
            mesh.active_count = count as i32;
        }
    }

    /// Computes this frame's world matrices into the reused buffers.
    fn update_world(&mut self, pose: &Pose) {
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

/// Lists the weights of at least [`WEIGHT_EPSILON`] magnitude into `index`/`weight` (both the
/// same length, the list's capacity), in increasing target order, zero-padded. When there are
/// more than fit, the largest by magnitude are kept. `order` is scratch space. Returns how many
/// were listed and how many were dropped.
fn fill_active_list(
    weights: &[f32],
    order: &mut Vec<u32>,
    index: &mut [i32],
    weight: &mut [f32],
) -> (usize, usize) {
    let max = index.len().min(weight.len());
    order.clear();
    order.extend(
        weights
            .iter()
            .enumerate()
            .filter(|(_, w)| w.abs() >= WEIGHT_EPSILON)
            .map(|(t, _)| t as u32),
    );
    let mut dropped = 0;
    if order.len() > max {
        dropped = order.len() - max;
        if max > 0 {
            order.select_nth_unstable_by(max - 1, |a, b| {
                weights[*b as usize]
                    .abs()
                    .total_cmp(&weights[*a as usize].abs())
            });
        }
        order.truncate(max);
        order.sort_unstable();
    }
    index.fill(0);
    weight.fill(0.0);
    for (slot, &t) in order.iter().enumerate() {
        index[slot] = t as i32;
        weight[slot] = weights[t as usize];
    }
    (order.len(), dropped)
}

/// Computes world matrices for every node reached from `roots`, like
/// [`Avatar::world_transforms`], into reused buffers (no allocation once `stack` has grown).
/// `visited[i]` tells whether node `i` was reached; unreached nodes keep the identity.
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
            node.translation,
        );
        world[index] = parent * local;
        for &child in &node.children {
            if child < nodes.len() {
                stack.push((child, world[index]));
            }
        }
    }
}

impl Uniforms {
    /// Looks every uniform up once.
    fn lookup(gl: &glow::Context, program: &Program) -> Uniforms {
        let find = |name: &str| {
            // SAFETY: the program is linked and alive; the name has no NUL bytes.
            let location = unsafe { gl.get_uniform_location(program.raw(), name) };
            if location.is_none() {
                tracing::trace!(name, "uniform not active in this program");
            }
            location
        };
        Uniforms {
            model: find("u_model"),
            normal_matrix: find("u_normal_matrix"),
            view_proj: find("u_view_proj"),
            base_color: find("u_base_color"),
            key_dir: find("u_key_dir"),
            fill_dir: find("u_fill_dir"),
            rim_dir: find("u_rim_dir"),
            camera_pos: find("u_camera_pos"),
            vertex_count: find("u_vertex_count"),
            active_count: find("u_active_count"),
            active_index: find("u_active_index"),
            active_weight: find("u_active_weight"),
            uv_transform: find("u_uv_transform"),
            skinned: find("u_skinned"),
            joint_base: find("u_joint_base"),
            alpha_mode: find("u_alpha_mode"),
            alpha_cutoff: find("u_alpha_cutoff"),
            shade_color: find("u_shade_color"),
            shade_source: find("u_shade_source"),
            shading_shift: find("u_shading_shift"),
            shading_toony: find("u_shading_toony"),
            outline: find("u_outline"),
            outline_width: find("u_outline_width"),
            outline_mode: find("u_outline_mode"),
            outline_color: find("u_outline_color"),
            outline_mix: find("u_outline_mix"),
            aspect: find("u_aspect"),
        }
    }
}

/// A colour channel made safe for the GPU: finite and within 0..=1 (non-finite becomes `fallback`).
fn unit(c: f32, fallback: f32) -> f32 {
    if c.is_finite() {
        c.clamp(0.0, 1.0)
    } else {
        fallback
    }
}

/// What a material needs at draw time, sanitised: colours clamped to 0..=1, dangling textures
/// dropped (white is used), a non-finite cutoff or texture transform replaced by the default.
fn gpu_material(m: &crate::avatar::Material, textures: &[Option<Texture>]) -> GpuMaterial {
    let usable = |t: Option<usize>| t.filter(|&t| textures.get(t).is_some_and(Option::is_some));
    let uv = m.base_color_transform.matrix();
    let toon = m.toon.as_ref().map(|t| GpuToon {
        shade_color: t.shade_color.map(|c| unit(c, 0.0)),
        shade_texture: usable(t.shade_texture),
        shift: if t.shading_shift.is_finite() {
            t.shading_shift.clamp(-2.0, 2.0)
        } else {
            0.0
        },
        toony: unit(t.shading_toony, 0.9),
        outline: t
            .outline
            .filter(|o| o.width.is_finite() && o.width > 0.0)
            .map(|o| {
                let mode = match o.mode {
                    OutlineMode::World => 1,
                    OutlineMode::Screen => 2,
                };
                // Beyond a tenth of the screen (or ten centimetres) an outline is a mistake.
                let width = o.width.min(0.1);
                (
                    mode,
                    width,
                    o.color.map(|c| unit(c, 0.0)),
                    unit(o.lighting_mix, 1.0),
                )
            }),
        z_write: t.transparent_with_z_write,
        queue: t.render_queue_offset.clamp(-9, 9),
    });
    GpuMaterial {
        base_color: m.base_color.map(|c| unit(c, 1.0)),
        texture: usable(m.base_color_texture),
        double_sided: m.double_sided,
        alpha_mode: m.alpha_mode,
        alpha_cutoff: if m.alpha_cutoff.is_finite() {
            m.alpha_cutoff
        } else {
            0.5
        },
        uv_transform: if uv.is_finite() {
            uv.to_cols_array()
        } else {
            Mat3::IDENTITY.to_cols_array()
        },
        shading: material_shading(m),
        toon,
    }
}

/// The program variant a material is drawn with: MToon takes precedence over unlit.
fn material_shading(m: &crate::avatar::Material) -> usize {
    if m.toon.is_some() {
        SHADING_TOON
    } else if m.unlit {
        SHADING_UNLIT
    } else {
        SHADING_STANDARD
    }
}

/// Compiles and links one avatar program with `defines`, looks its uniforms up and assigns its
/// texture units.
fn build_variant(
    gl: &Rc<glow::Context>,
    defines: &[(&str, String)],
) -> Result<ShaderVariant, RenderError> {
    let program = shader::build_program(gl, shader::AVATAR_VERT, shader::AVATAR_FRAG, defines)?;
    let uniforms = Uniforms::lookup(gl, &program);
    // SAFETY: the program was just linked on this context; sampler units are set once.
    unsafe {
        gl.use_program(Some(program.raw()));
        for (name, unit) in [
            ("u_base_color_tex", UNIT_BASE),
            ("u_deltas", UNIT_DELTAS),
            ("u_shade_tex", UNIT_SHADE),
            ("u_joint_matrices", UNIT_JOINTS),
        ] {
            let location = gl.get_uniform_location(program.raw(), name);
            gl.uniform_1_i32(location.as_ref(), unit as i32);
        }
        gl.use_program(None);
    }
    check_gl!(gl, "setting up an avatar program");
    Ok(ShaderVariant { program, uniforms })
}

/// Sets the per-frame uniforms of one program: the camera, the lights (key, fill, rim) and the
/// viewport's aspect; outlines start switched off. Leaves the program in use.
fn set_globals(
    gl: &glow::Context,
    shader: &ShaderVariant,
    camera: &Camera,
    lights: [Vec3; 3],
    aspect: f32,
) {
    let u = &shader.uniforms;
    let [key, fill, rim] = lights;
    // SAFETY: the program was linked on this context; every location belongs to it.
    unsafe {
        gl.use_program(Some(shader.program.raw()));
        gl.uniform_matrix_4_f32_slice(
            u.view_proj.as_ref(),
            false,
            &camera.view_proj().to_cols_array(),
        );
        gl.uniform_3_f32(u.key_dir.as_ref(), key.x, key.y, key.z);
        gl.uniform_3_f32(u.fill_dir.as_ref(), fill.x, fill.y, fill.z);
        gl.uniform_3_f32(u.rim_dir.as_ref(), rim.x, rim.y, rim.z);
        gl.uniform_3_f32(
            u.camera_pos.as_ref(),
            camera.eye.x,
            camera.eye.y,
            camera.eye.z,
        );
        gl.uniform_1_f32(u.aspect.as_ref(), aspect);
        gl.uniform_1_f32(u.outline_width.as_ref(), 0.0);
        gl.uniform_1_i32(u.outline.as_ref(), 0);
    }
}

/// The shader features `avatar` uses, shared by all its programs, as the defines that switch
/// them on: an avatar that needs none of them (the default head) gets exactly the plain shader,
/// at its cost.
fn feature_defines(avatar: &Avatar) -> Vec<&'static str> {
    let primitives = || avatar.meshes.iter().flat_map(|m| &m.primitives);
    let skinning = avatar.nodes.iter().enumerate().any(|(index, node)| {
        avatar.node_skin(index).is_some()
            && node
                .mesh
                .and_then(|m| avatar.meshes.get(m))
                .is_some_and(|m| m.primitives.iter().any(|p| !p.joints.is_empty()))
    });
    let colors = primitives().any(|p| !p.colors.is_empty() && p.colors.len() == p.positions.len());
    let materials = &avatar.materials;
    let uv_transform = materials
        .iter()
        .any(|m| !m.base_color_transform.is_identity());
    let alpha = materials.iter().any(|m| m.alpha_mode != AlphaMode::Opaque);
    [
        (skinning, "SKINNING"),
        (colors, "VERTEX_COLORS"),
        (uv_transform, "UV_TRANSFORM"),
        (alpha, "ALPHA_MODES"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}

/// Decides which nodes draw skinned and where their joint matrices go: a node with a mesh and a
/// skin whose primitives' joints all exist in that skin gets the next free run of joints. A node
/// whose primitives name joints its skin lacks is drawn unskinned, with a warning.
fn assign_skins(
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
fn upload_joint_texture(
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

/// A node's extra rotation: identity when absent, non-finite or zero, otherwise normalised.
fn sanitize_rotation(q: Option<Quat>) -> Quat {
    match q {
        Some(q) if q.is_finite() && q.length_squared() > 1e-12 => q.normalize(),
        _ => Quat::IDENTITY,
    }
}

/// The inverse-transpose of the model matrix's upper 3x3 (the upper 3x3 itself when it is
/// singular; the shader renormalises either way).
fn normal_matrix(model: &Mat4) -> Mat3 {
    let m = Mat3::from_mat4(*model);
    if m.determinant().abs() > 1e-12 {
        m.inverse().transpose()
    } else {
        m
    }
}

/// The largest number of buffer-texture texels one primitive's deltas need, with its mesh's
/// name, or `None` when no primitive has targets.
fn largest_delta_texels(avatar: &Avatar) -> Option<(u64, String)> {
    avatar
        .meshes
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            m.primitives.iter().map(move |p| {
                let targets = p.targets.len().max(m.target_count());
                let texels = p.positions.len() as u64 * targets as u64 * 2;
                (texels, m.name.clone().unwrap_or_else(|| format!("#{i}")))
            })
        })
        .filter(|(t, _)| *t > 0)
        .max_by_key(|(t, _)| *t)
}

/// Uploads every avatar texture; unusable ones (wrong byte count, zero or too large a size)
/// become `None` with a warning, and their materials use white.
fn upload_textures(
    gl: &Rc<glow::Context>,
    avatar: &Avatar,
) -> Result<Vec<Option<Texture>>, RenderError> {
    // SAFETY: querying a limit on the current context.
    let max = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_SIZE) }.max(1) as u32;
    avatar
        .textures
        .iter()
        .enumerate()
        .map(|(index, t)| {
            let expected = t.width as u64 * t.height as u64 * 4;
            if t.width == 0 || t.height == 0 || t.rgba.len() as u64 != expected {
                tracing::warn!(
                    texture = index,
                    width = t.width,
                    height = t.height,
                    bytes = t.rgba.len(),
                    "texture data does not match its size; using white"
                );
                return Ok(None);
            }
            if t.width > max || t.height > max {
                tracing::warn!(
                    texture = index,
                    width = t.width,
                    height = t.height,
                    max,
                    "texture larger than the driver allows; using white"
                );
                return Ok(None);
            }
            upload_texture(gl, t.width, t.height, &t.rgba).map(Some)
        })
        .collect()
}

/// Uploads one sRGB RGBA8 texture (rows top to bottom, as glTF UVs expect: v = 0 is the first
/// row) with mipmaps, trilinear filtering and repeat wrapping.
fn upload_texture(
    gl: &Rc<glow::Context>,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> Result<Texture, RenderError> {
    let texture = Texture::new(gl)?;
    // SAFETY: the texture is fresh; `rgba` holds exactly width * height * 4 bytes (checked by
    // the caller) and the unpack alignment is 1, so the driver reads inside the slice.
    unsafe {
        gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
        gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
        gl.tex_image_2d(
            glow::TEXTURE_2D,
            0,
            glow::SRGB8_ALPHA8 as i32,
            width as i32,
            height as i32,
            0,
            glow::RGBA,
            glow::UNSIGNED_BYTE,
            glow::PixelUnpackData::Slice(Some(rgba)),
        );
        gl.generate_mipmap(glow::TEXTURE_2D);
        let params = [
            (glow::TEXTURE_MIN_FILTER, glow::LINEAR_MIPMAP_LINEAR),
            (glow::TEXTURE_MAG_FILTER, glow::LINEAR),
            (glow::TEXTURE_WRAP_S, glow::REPEAT),
            (glow::TEXTURE_WRAP_T, glow::REPEAT),
        ];
        for (name, value) in params {
            gl.tex_parameter_i32(glow::TEXTURE_2D, name, value as i32);
        }
        gl.bind_texture(glow::TEXTURE_2D, None);
    }
    check_gl!(gl, "uploading a texture");
    Ok(texture)
}

/// Uploads one primitive, or returns `None` (with a warning) when it cannot be drawn.
fn upload_primitive(
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
        (true, MorphPath::Cpu) => {
            // The blender copies its base from the primitive; give it the same fallback
            // normals as the vertex buffer so a blend never writes zero-length normals.
            let blender = if prim.normals.len() == count {
                CpuBlender::new(prim)
            } else {
                let mut fixed = prim.clone();
                fixed.normals = vec![Vec3::Z; count];
                CpuBlender::new(&fixed)
            };
            PrimitiveMorph::Cpu {
                blender,
                scratch: base,
            }
        }
        (true, MorphPath::Gpu) => upload_deltas(gl, prim, count, mesh_targets, mesh, primitive)?,
    };
    Ok(Some(GpuPrimitive {
        vao,
        vertex_buffer,
        _uv_buffer: uv_buffer,
        _skin_buffers: skin_buffers,
        _color_buffer: color_buffer,
        _index_buffer: index_buffer,
        max_joint,
        centroid,
        dominant_joint,
        index_count,
        vertex_count,
        material,
        morph,
    }))
}

/// The largest joint index with a non-zero weight (`None` when every weight is zero), and the
/// joint with the most total weight. `weights` holds four floats per vertex.
fn joint_stats(joints: &[[u16; 4]], weights: &[f32]) -> (Option<u16>, u16) {
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

/// GPU path: puts every target's position and normal deltas into one RGBA32F buffer texture,
/// target-major (`(t * vertices + v) * 2` and `+ 1`). Like [`CpuBlender`], entries missing from
/// a short target count as zero and extra ones are ignored; targets the mesh names but the
/// primitive lacks are zeros.
fn upload_deltas(
    gl: &Rc<glow::Context>,
    prim: &Primitive,
    count: usize,
    mesh_targets: usize,
    mesh: usize,
    primitive: usize,
) -> Result<PrimitiveMorph, RenderError> {
    // Room for every target the mesh's weights can name, so no index the shader gets reads
    // past the buffer, even when this primitive lists fewer targets than its mesh.
    let mut data = vec![0.0f32; prim.targets.len().max(mesh_targets) * count * 8];
    for (t, target) in prim.targets.iter().enumerate() {
        if target.positions.len() != count
            || !(target.normals.is_empty() || target.normals.len() == count)
        {
            tracing::warn!(
                mesh,
                primitive,
                target = t,
                positions = target.positions.len(),
                normals = target.normals.len(),
                vertices = count,
                "morph target size does not match the vertices; missing deltas count as zero"
            );
        }
        for v in 0..count {
            let p = target.positions.get(v).copied().unwrap_or(Vec3::ZERO);
            let n = target.normals.get(v).copied().unwrap_or(Vec3::ZERO);
            let at = (t * count + v) * 8;
            data[at..at + 3].copy_from_slice(&p.to_array());
            data[at + 4..at + 7].copy_from_slice(&n.to_array());
        }
    }
    let buffer = Buffer::new(gl)?;
    let texture = Texture::new(gl)?;
    // SAFETY: fresh objects owned here; the buffer texture views the whole buffer.
    unsafe {
        gl.bind_buffer(glow::TEXTURE_BUFFER, Some(buffer.raw()));
        gl.buffer_data_u8_slice(glow::TEXTURE_BUFFER, bytes_of(&data), glow::STATIC_DRAW);
        gl.bind_buffer(glow::TEXTURE_BUFFER, None);
        gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture.raw()));
        gl.tex_buffer(glow::TEXTURE_BUFFER, glow::RGBA32F, Some(buffer.raw()));
        gl.bind_texture(glow::TEXTURE_BUFFER, None);
    }
    check_gl!(gl, "uploading morph deltas");
    Ok(PrimitiveMorph::Gpu {
        _buffer: buffer,
        texture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{Mesh, Node};

    fn node(parent: Option<usize>, children: Vec<usize>, t: Vec3, mesh: Option<usize>) -> Node {
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
    fn active_list_keeps_order_and_the_largest_weights() {
        let mut order = Vec::new();
        let (mut index, mut weight) = (vec![9; 4], vec![9.0; 4]);
        let weights = [0.0, 0.5, 1e-9, -0.25];
        assert_eq!(
            fill_active_list(&weights, &mut order, &mut index, &mut weight),
            (2, 0)
        );
        assert_eq!(index, [1, 3, 0, 0]);
        assert_eq!(weight, [0.5, -0.25, 0.0, 0.0]);

        let weights = [0.1, -0.9, 0.3, 0.2, 0.05, 0.8, -0.4];
        assert_eq!(
            fill_active_list(&weights, &mut order, &mut index, &mut weight),
            (4, 3)
        );
        assert_eq!(index, [1, 2, 5, 6]);
        assert_eq!(weight, [-0.9, 0.3, 0.8, -0.4]);
    }

    #[test]
    fn joint_stats_find_the_largest_and_the_dominant_joint() {
        let joints = [[0, 3, 9, 0], [2, 0, 0, 0]];
        let weights = [0.5, 0.5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        assert_eq!(joint_stats(&joints, &weights), (Some(3), 2));
        assert_eq!(joint_stats(&joints, &[0.0; 8]), (None, 0));
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
    fn largest_delta_texels_counts_two_per_vertex_and_target() {
        let mut avatar = Avatar::default();
        assert!(largest_delta_texels(&avatar).is_none());
        avatar.meshes.push(Mesh {
            name: Some("head".into()),
            target_names: vec!["a".into(), "b".into()],
            default_weights: vec![0.0; 2],
            primitives: vec![Primitive {
                positions: vec![Vec3::ZERO; 10],
                targets: vec![Default::default(), Default::default()],
                ..Default::default()
            }],
        });
        assert_eq!(largest_delta_texels(&avatar), Some((40, "head".into())));
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

    /// Counts heap allocations made by the current thread while counting is switched on; a
    /// pass-through everywhere else (it serves the whole unit-test binary).
    struct CountingAllocator;

    thread_local! {
        static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    // SAFETY: every call is forwarded unchanged to the system allocator; the counters are
    // const-initialised thread locals accessed with `try_with`, which never allocates and
    // never panics during thread teardown.
    unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            count();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { std::alloc::System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(
            &self,
            ptr: *mut u8,
            layout: std::alloc::Layout,
            new_size: usize,
        ) -> *mut u8 {
            count();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
        }
    }

    fn count() {
        let on = COUNTING.try_with(std::cell::Cell::get).unwrap_or(false);
        if on {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    }

    #[global_allocator]
    static ALLOCATOR: CountingAllocator = CountingAllocator;

    /// A two-node avatar: a textured, morphable quad under a parent node, skinned to both
    /// nodes, with a second, blended MToon quad with an outline.
    fn quad_avatar() -> Avatar {
        let target = |d: Vec3| crate::avatar::MorphTarget {
            positions: vec![d, Vec3::ZERO, d, Vec3::ZERO],
            normals: vec![Vec3::X * 0.1; 4],
            ..Default::default()
        };
        Avatar {
            nodes: vec![
                node(None, vec![1], Vec3::ZERO, None),
                node(Some(0), vec![], Vec3::ZERO, Some(0)),
            ],
            roots: vec![0],
            meshes: vec![Mesh {
                name: None,
                target_names: vec!["a".into(), "b".into()],
                default_weights: vec![0.0; 2],
                primitives: vec![
                    Primitive {
                        positions: vec![
                            Vec3::new(-1.0, -1.0, 0.0),
                            Vec3::new(1.0, -1.0, 0.0),
                            Vec3::new(1.0, 1.0, 0.0),
                            Vec3::new(-1.0, 1.0, 0.0),
                        ],
                        normals: vec![Vec3::Z; 4],
                        uvs: vec![glam::Vec2::ZERO; 4],
                        indices: vec![0, 1, 2, 0, 2, 3],
                        material: Some(0),
                        targets: vec![target(Vec3::Y * 0.2), target(Vec3::Z * 0.3)],
                        joints: vec![[0, 1, 0, 0]; 4],
                        joint_weights: vec![Vec4::new(0.5, 0.5, 0.0, 0.0); 4],
                        ..Default::default()
                    },
                    Primitive {
                        positions: vec![
                            Vec3::new(-1.0, -1.0, 0.5),
                            Vec3::new(1.0, -1.0, 0.5),
                            Vec3::new(1.0, 1.0, 0.5),
                        ],
                        normals: vec![Vec3::Z; 3],
                        indices: vec![0, 1, 2],
                        material: Some(1),
                        ..Default::default()
                    },
                ],
            }],
            materials: vec![
                crate::avatar::Material {
                    base_color_texture: Some(0),
                    toon: Some(crate::avatar::Toon {
                        outline: Some(crate::avatar::Outline {
                            mode: OutlineMode::Screen,
                            width: 0.01,
                            color: [1.0, 0.0, 0.0],
                            lighting_mix: 0.5,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                crate::avatar::Material {
                    alpha_mode: AlphaMode::Blend,
                    ..Default::default()
                },
            ],
            skins: vec![crate::avatar::Skin {
                name: None,
                joints: vec![0, 1],
                inverse_bind: vec![Mat4::IDENTITY; 2],
            }],
            node_skins: vec![None, Some(0)],
            textures: vec![crate::avatar::Texture {
                width: 2,
                height: 2,
                rgba: vec![200; 16],
            }],
            ..Default::default()
        }
    }

    #[test]
    fn draw_does_not_allocate_after_the_first_frame() {
        let ctx = match super::super::headless::HeadlessContext::new(32, 32) {
            Ok(ctx) => ctx,
            Err(e) => panic!("headless context: {e}"),
        };
        let avatar = quad_avatar();
        let camera = Camera::framing(avatar.bounds().unwrap(), 1.0);
        let target = DrawTarget {
            width: 32,
            height: 32,
            clear_color: [0.0, 0.0, 0.0, 0.0],
            alpha: true,
        };
        // The counter itself works.
        COUNTING.with(|c| c.set(true));
        drop(std::hint::black_box(Vec::<u8>::with_capacity(8)));
        COUNTING.with(|c| c.set(false));
        assert_eq!(ALLOCATIONS.with(|n| n.replace(0)), 1);

        for mode in [MorphMode::Cpu, MorphMode::Gpu] {
            let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).unwrap();
            let mut pose = avatar.rest_pose();
            ctx.bind();
            renderer.draw(&pose, &camera, &target);
            ALLOCATIONS.with(|n| n.set(0));
            COUNTING.with(|c| c.set(true));
            for frame in 0..20 {
                let t = frame as f32 * 0.1;
                pose.weights[0][0] = t.sin();
                pose.weights[0][1] = if frame % 3 == 0 { f32::NAN } else { 0.5 };
                pose.rotations[1] = Quat::from_rotation_y(t);
                renderer.draw(&pose, &camera, &target);
            }
            COUNTING.with(|c| c.set(false));
            assert_eq!(
                ALLOCATIONS.with(|n| n.get()),
                0,
                "{mode} path allocated per frame"
            );
        }
    }
}
