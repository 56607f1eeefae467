//! The avatar renderer: uploads an [`Avatar`] once, then draws it each frame with new weights and
//! node rotations through the CPU or the GPU morph path.

#![allow(unsafe_code)]

use std::fmt;
use std::rc::Rc;

use glam::{Mat3, Mat4, Quat, Vec3};
use glow::HasContext;

use super::debug::gl_string;
use super::objects::{bytes_of, Buffer, Program, Texture, VertexArray};
use super::RenderError;
use super::{check_gl, sanitize_weight, shader, Camera, DrawTarget, MorphMode, MorphPath};
use crate::avatar::blend::{CpuBlender, WEIGHT_EPSILON};
use crate::avatar::{Avatar, Pose, Primitive};

/// Floats per vertex in the interleaved position + normal buffer (the layout
/// [`CpuBlender::blend_interleaved`] writes).
const STRIDE: usize = 6;

/// The most non-zero weights one mesh can send to the GPU path's shader in a frame. Beyond
/// this, the largest weights (by magnitude) are kept.
pub const MAX_ACTIVE_TARGETS: usize = 128;

/// Draws one avatar. Holds every GL object the avatar needs; drop it before the context (see
/// the module docs of [`crate::render`]).
pub struct Renderer {
    /// The linked avatar program.
    program: Program,
    /// Its uniform locations, looked up once.
    uniforms: Uniforms,
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

/// Uniform locations of the avatar program (`None` where the driver optimised one away).
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
}

/// What a material needs at draw time.
struct GpuMaterial {
    /// Linear RGBA base colour factor.
    base_color: [f32; 4],
    /// Index into `Renderer::textures`, if the material has a usable texture.
    texture: Option<usize>,
    /// Whether back faces are drawn.
    double_sided: bool,
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
    /// Triangle indices.
    _index_buffer: Buffer,
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
        let program =
            shader::build_program(&gl, shader::AVATAR_VERT, shader::AVATAR_FRAG, &defines)?;
        let uniforms = Uniforms::lookup(&gl, &program);
        // SAFETY: the program was just linked on this context; sampler units are set once.
        unsafe {
            gl.use_program(Some(program.raw()));
            let tex = gl.get_uniform_location(program.raw(), "u_base_color_tex");
            gl.uniform_1_i32(tex.as_ref(), 0);
            let deltas = gl.get_uniform_location(program.raw(), "u_deltas");
            gl.uniform_1_i32(deltas.as_ref(), 1);
            gl.use_program(None);
        }
        check_gl!(&gl, "setting up the avatar program");

        let white = upload_texture(&gl, 1, 1, &[255; 4])?;
        let textures = upload_textures(&gl, avatar)?;
        let materials = avatar
            .materials
            .iter()
            .map(|m| GpuMaterial {
                base_color: m.base_color.map(|c| {
                    if c.is_finite() {
                        c.clamp(0.0, 1.0)
                    } else {
                        1.0
                    }
                }),
                texture: m
                    .base_color_texture
                    .filter(|&t| textures.get(t).is_some_and(Option::is_some)),
                double_sided: m.double_sided,
            })
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
        tracing::debug!(
            meshes = meshes.len(),
            primitives = meshes.iter().map(|m| m.primitives.len()).sum::<usize>(),
            textures = textures.len(),
            nodes = count,
            max_active,
            "avatar uploaded"
        );
        Ok(Renderer {
            program,
            uniforms,
            white,
            textures,
            materials,
            meshes,
            nodes,
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
    /// or zero quaternions count as identity); morphing happens before the node transforms.
    ///
    /// GL state changed and left behind: viewport, clear colour, depth test (on, `LESS`, depth
    /// writes on), colour mask (all on), blending, scissor test and `GL_FRAMEBUFFER_SRGB` (off),
    /// face culling and front face, the active texture unit (unit 0) and the textures bound on
    /// units 0 and 1, the array buffer binding (CPU path). The program and vertex array are
    /// unbound at the end. Nothing is allocated after the first frame.
    pub fn draw(&mut self, pose: &Pose, camera: &Camera, target: &DrawTarget) {
        self.update_weights(pose);
        match self.path {
            MorphPath::Cpu => self.upload_cpu_morphs(),
            MorphPath::Gpu => self.build_active_lists(),
        }
        self.update_world(pose);

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

        let u = &self.uniforms;
        let (right, up, forward) = camera.basis();
        let back = -forward;
        let key = (-0.55 * right + 0.55 * up + 0.62 * back).normalize();
        let fill = (0.75 * right - 0.10 * up + 0.65 * back).normalize();
        let rim = (0.30 * right + 0.50 * up - 0.80 * back).normalize();
        // SAFETY: as above.
        unsafe {
            gl.use_program(Some(self.program.raw()));
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
            gl.active_texture(glow::TEXTURE0);
        }

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
            let model = self.world[index];
            let normal = normal_matrix(&model);
            // SAFETY: as above.
            unsafe {
                gl.uniform_matrix_4_f32_slice(u.model.as_ref(), false, &model.to_cols_array());
                gl.uniform_matrix_3_f32_slice(
                    u.normal_matrix.as_ref(),
                    false,
                    &normal.to_cols_array(),
                );
                // A mirroring transform flips the winding of every triangle.
                gl.front_face(if model.determinant() < 0.0 {
                    glow::CW
                } else {
                    glow::CCW
                });
                if self.path == MorphPath::Gpu {
                    gl.uniform_1_i32(u.active_count.as_ref(), mesh.active_count);
                    gl.uniform_4_i32_slice(u.active_index.as_ref(), &mesh.active_index);
                    gl.uniform_4_f32_slice(u.active_weight.as_ref(), &mesh.active_weight);
                }
            }
            for prim in &mesh.primitives {
                let material = prim.material.and_then(|m| self.materials.get(m));
                let base = material.map_or([1.0; 4], |m| m.base_color);
                let texture = material
                    .and_then(|m| m.texture)
                    .and_then(|t| self.textures.get(t))
                    .and_then(Option::as_ref)
                    .unwrap_or(&self.white);
                let double_sided = material.is_some_and(|m| m.double_sided);
                // SAFETY: as above.
                unsafe {
                    gl.uniform_4_f32(u.base_color.as_ref(), base[0], base[1], base[2], base[3]);
                    gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
                    if double_sided {
                        gl.disable(glow::CULL_FACE);
                    } else {
                        gl.enable(glow::CULL_FACE);
                        gl.cull_face(glow::BACK);
                    }
                    match &prim.morph {
                        PrimitiveMorph::Gpu { texture, .. } => {
                            gl.active_texture(glow::TEXTURE1);
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
                        gl.uniform_1_i32(u.active_count.as_ref(), mesh.active_count);
                    }
                }
            }
        }
        // SAFETY: unbinding is always valid.
        unsafe {
            gl.bind_vertex_array(None);
            gl.use_program(None);
        }
        check_gl!(gl, "drawing the avatar");
        tracing::trace!(path = ?self.path, width = target.width, height = target.height, "avatar drawn");
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

    let vao = VertexArray::new(gl)?;
    let vertex_buffer = Buffer::new(gl)?;
    let uv_buffer = Buffer::new(gl)?;
    let index_buffer = Buffer::new(gl)?;
    let has_targets = !prim.targets.is_empty();
    let usage = if path == MorphPath::Cpu && has_targets {
        glow::DYNAMIC_DRAW
    } else {
        glow::STATIC_DRAW
    };
    let stride = (STRIDE * 4) as i32;
    // SAFETY: all objects are fresh and owned here; the attribute layout matches the buffers
    // (6 floats per vertex interleaved, 2 floats per uv) and the shader's locations 0, 1, 2.
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
        _index_buffer: index_buffer,
        index_count,
        vertex_count,
        material,
        morph,
    }))
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

    /// A two-node avatar: a textured, morphable quad under a parent node.
    fn quad_avatar() -> Avatar {
        let target = |d: Vec3| crate::avatar::MorphTarget {
            positions: vec![d, Vec3::ZERO, d, Vec3::ZERO],
            normals: vec![Vec3::X * 0.1; 4],
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
                primitives: vec![Primitive {
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
                }],
            }],
            materials: vec![crate::avatar::Material {
                base_color_texture: Some(0),
                ..Default::default()
            }],
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
