//! The avatar's program variants (standard, unlit, MToon): compiling them with the defines the
//! avatar and the morph path need, their uniform locations and texture units, and setting the
//! per-frame and per-node uniforms.

#![expect(unsafe_code)]

use std::rc::Rc;

use glam::{Mat3, Vec3};
use glow::HasContext;

use super::effects::{moves_uvs, uses_emission, uses_rim};
use super::materials::{material_shading, GpuMaterial};
use super::nodes::normal_matrix;
use super::objects::Program;
use super::primitives::GpuMesh;
use super::renderer::Renderer;
use super::{check_gl, shader, Camera, MorphPath, RenderError};
use crate::avatar::{AlphaMode, Avatar};

/// One linked avatar program and its uniform locations.
pub(super) struct ShaderVariant {
    /// The program.
    pub(super) program: Program,
    /// Its uniform locations, looked up once.
    pub(super) uniforms: Uniforms,
}

/// Which program is in use while drawing, and which node's uniforms each holds.
pub(super) struct Bound {
    /// The index in `Renderer::programs` of the program in use.
    pub(super) program: usize,
    /// Per program, the node whose uniforms it holds this frame (`usize::MAX`: none yet): the
    /// plain programs first, then the wrinkle maps' ones.
    pub(super) node: [usize; 6],
}

/// Uniform locations of an avatar program (`None` where the driver optimised one away).
pub(super) struct Uniforms {
    pub(super) model: Option<glow::UniformLocation>,
    pub(super) normal_matrix: Option<glow::UniformLocation>,
    pub(super) view_proj: Option<glow::UniformLocation>,
    pub(super) base_color: Option<glow::UniformLocation>,
    pub(super) key_dir: Option<glow::UniformLocation>,
    pub(super) fill_dir: Option<glow::UniformLocation>,
    pub(super) rim_dir: Option<glow::UniformLocation>,
    pub(super) camera_pos: Option<glow::UniformLocation>,
    pub(super) vertex_count: Option<glow::UniformLocation>,
    pub(super) active_count: Option<glow::UniformLocation>,
    pub(super) active_index: Option<glow::UniformLocation>,
    pub(super) active_weight: Option<glow::UniformLocation>,
    pub(super) uv_transform: Option<glow::UniformLocation>,
    pub(super) skinned: Option<glow::UniformLocation>,
    pub(super) joint_base: Option<glow::UniformLocation>,
    pub(super) alpha_mode: Option<glow::UniformLocation>,
    pub(super) alpha_cutoff: Option<glow::UniformLocation>,
    pub(super) shade_color: Option<glow::UniformLocation>,
    pub(super) shade_source: Option<glow::UniformLocation>,
    pub(super) shading_shift: Option<glow::UniformLocation>,
    pub(super) shading_toony: Option<glow::UniformLocation>,
    pub(super) outline: Option<glow::UniformLocation>,
    pub(super) outline_width: Option<glow::UniformLocation>,
    pub(super) outline_mode: Option<glow::UniformLocation>,
    pub(super) outline_color: Option<glow::UniformLocation>,
    pub(super) outline_mix: Option<glow::UniformLocation>,
    pub(super) aspect: Option<glow::UniformLocation>,
    pub(super) emissive: Option<glow::UniformLocation>,
    pub(super) emissive_source: Option<glow::UniformLocation>,
    pub(super) rim_color: Option<glow::UniformLocation>,
    pub(super) rim_power: Option<glow::UniformLocation>,
    pub(super) rim_lift: Option<glow::UniformLocation>,
    pub(super) rim_mix: Option<glow::UniformLocation>,
    pub(super) rim_source: Option<glow::UniformLocation>,
    pub(super) matcap_color: Option<glow::UniformLocation>,
    pub(super) matcap_source: Option<glow::UniformLocation>,
    pub(super) view_rotation: Option<glow::UniformLocation>,
    pub(super) wrinkle_rg: Option<glow::UniformLocation>,
    pub(super) wrinkle_ba: Option<glow::UniformLocation>,
    pub(super) wrinkle_rect_rg: Option<glow::UniformLocation>,
    pub(super) wrinkle_rect_ba: Option<glow::UniformLocation>,
}

/// Texture units: base colour, morph deltas, MToon shade texture, joint matrices, emissive
/// texture, MToon rim multiply and matcap textures.
pub(super) const UNIT_BASE: u32 = 0;
pub(super) const UNIT_DELTAS: u32 = 1;
pub(super) const UNIT_SHADE: u32 = 2;
pub(super) const UNIT_JOINTS: u32 = 3;
pub(super) const UNIT_EMISSIVE: u32 = 4;
pub(super) const UNIT_RIM: u32 = 5;
pub(super) const UNIT_MATCAP: u32 = 6;
/// The first of the wrinkle maps' units (one per map, [`crate::avatar::MAX_WRINKLE_MAPS`]).
pub(super) const UNIT_WRINKLES: u32 = 7;

/// The program variants: the portrait lighting, unlit (`KHR_materials_unlit`) and MToon. Each is
/// its own program rather than a branch in one: on llvmpipe the branching program made a frame of
/// a MToon avatar about a third slower (see BENCHMARKS.md).
pub(super) const SHADING_STANDARD: usize = 0;
pub(super) const SHADING_UNLIT: usize = 1;
pub(super) const SHADING_TOON: usize = 2;

/// Compiles the program variants `avatar`'s materials use (the standard one always), with room
/// for `max_active` active targets and the defines of `path` and of the avatar's features
/// (`wrinkle_textures`: how many textures the mapping's wrinkle maps use, 0 for none).
/// Returns them with, for each `SHADING_*`, its index in the list (the standard one where not
/// compiled).
pub(super) fn build_programs(
    gl: &Rc<glow::Context>,
    avatar: &Avatar,
    path: MorphPath,
    max_active: usize,
    wrinkle_textures: usize,
) -> Result<(Vec<ShaderVariant>, [usize; 3]), RenderError> {
    let mut defines = vec![("MAX_ACTIVE", max_active.to_string())];
    if path == MorphPath::Gpu {
        defines.push(("MORPH_GPU", "1".to_owned()));
    }
    if wrinkle_textures > 0 {
        defines.push(("WRINKLES", "1".to_owned()));
        defines.push(("WRINKLE_TEXTURES", wrinkle_textures.to_string()));
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
    let rim = uses_rim(avatar);
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
        if shading == SHADING_TOON && rim {
            defines.push(("RIM", "1".to_owned()));
        }
        program_for[shading] = programs.len();
        programs.push(build_variant(gl, &defines)?);
    }
    Ok((programs, program_for))
}

impl Renderer {
    /// Makes the program variant `material` needs current (`wrinkled`: the one that blends
    /// the wrinkle maps), with node `node`'s uniforms, and returns its uniform locations.
    pub(super) fn bind(
        &self,
        bound: &mut Bound,
        material: Option<&GpuMaterial>,
        wrinkled: bool,
        node: usize,
        mesh: &GpuMesh,
    ) -> &Uniforms {
        let shading = material.map_or(SHADING_STANDARD, |m| m.shading);
        let (programs, program_for, offset) = match self.wrinkles.programs() {
            Some((programs, program_for)) if wrinkled => (programs, program_for, 3),
            _ => (&self.programs[..], &self.program_for, 0),
        };
        let local = program_for.get(shading).copied().unwrap_or(0);
        let shader = &programs[local];
        let index = local + offset;
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
    pub(super) fn set_node_uniforms(&self, u: &Uniforms, index: usize, mesh: &GpuMesh) {
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
            emissive: find("u_emissive"),
            emissive_source: find("u_emissive_source"),
            rim_color: find("u_rim_color"),
            rim_power: find("u_rim_power"),
            rim_lift: find("u_rim_lift"),
            rim_mix: find("u_rim_mix"),
            rim_source: find("u_rim_source"),
            matcap_color: find("u_matcap_color"),
            matcap_source: find("u_matcap_source"),
            wrinkle_rg: find("u_wrinkle_rg"),
            wrinkle_ba: find("u_wrinkle_ba"),
            wrinkle_rect_rg: find("u_wrinkle_rect_rg"),
            wrinkle_rect_ba: find("u_wrinkle_rect_ba"),
            view_rotation: find("u_view_rotation"),
        }
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
            ("u_emissive_tex", UNIT_EMISSIVE),
            ("u_rim_tex", UNIT_RIM),
            ("u_matcap_tex", UNIT_MATCAP),
            ("u_wrinkle_tex0", UNIT_WRINKLES),
            ("u_wrinkle_tex1", UNIT_WRINKLES + 1),
            ("u_wrinkle_tex2", UNIT_WRINKLES + 2),
            ("u_wrinkle_tex3", UNIT_WRINKLES + 3),
        ] {
            let location = gl.get_uniform_location(program.raw(), name);
            gl.uniform_1_i32(location.as_ref(), unit as i32);
        }
        gl.use_program(None);
    }
    check_gl!(gl, "setting up an avatar program");
    Ok(ShaderVariant { program, uniforms })
}

/// Sets the per-frame uniforms of one program: the camera (and its world-to-view rotation), the
/// lights (key, fill, rim) and the viewport's aspect; outlines start switched off. Leaves the
/// program in use.
pub(super) fn set_globals(
    gl: &glow::Context,
    shader: &ShaderVariant,
    camera: &Camera,
    lights: [Vec3; 3],
    aspect: f32,
) {
    let u = &shader.uniforms;
    let [key, fill, rim] = lights;
    let (right, up, forward) = camera.basis();
    let view_rotation = Mat3::from_cols(right, up, -forward).transpose();
    let view_rotation = if view_rotation.is_finite() {
        view_rotation
    } else {
        Mat3::IDENTITY
    };
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
        gl.uniform_matrix_3_f32_slice(
            u.view_rotation.as_ref(),
            false,
            &view_rotation.to_cols_array(),
        );
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
        .any(|m| !m.base_color_transform.is_identity())
        || moves_uvs(avatar);
    let alpha = materials.iter().any(|m| m.alpha_mode != AlphaMode::Opaque);
    [
        (skinning, "SKINNING"),
        (colors, "VERTEX_COLORS"),
        (uv_transform, "UV_TRANSFORM"),
        (alpha, "ALPHA_MODES"),
        (uses_emission(avatar), "EMISSION"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect()
}
