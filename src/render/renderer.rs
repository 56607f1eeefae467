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
//!
//! This module holds construction and the per-frame orchestration; the sibling modules own the
//! parts: `variants` (programs and uniforms), `materials` (materials and textures),
//! `primitives` (mesh uploads), `morph` (both morph paths), `skins` (joint matrices), `nodes`
//! (world transforms), `lod` (levels of detail) and `passes` (draw order and drawing one
//! primitive).

#![expect(unsafe_code)]

use std::fmt;
use std::rc::Rc;

use glam::Mat4;
use glow::HasContext;

use super::debug::gl_string;
use super::effects::{GpuEffects, LiveMaterial};
use super::lod::Lods;
use super::materials::{gpu_material, upload_texture, upload_textures, GpuMaterial};
use super::morph::{resolve_path, MAX_ACTIVE_TARGETS};
use super::nodes::NodeInfo;
use super::objects::{Buffer, Texture};
use super::passes::{count_blended, BlendedDraw};
use super::primitives::{upload_meshes, GpuMesh};
use super::skins::{assign_skins, gpu_skins, upload_joint_texture, GpuSkin, NodeSkin};
use super::variants::{build_programs, set_globals, Bound, ShaderVariant, UNIT_JOINTS};
use super::RenderError;
use super::{check_gl, Camera, DrawTarget, LodMode, MorphMode, MorphPath};
use crate::avatar::{Avatar, Pose, Sampler};

/// Draws one avatar. Holds every GL object the avatar needs; drop it before the context (see
/// the module docs of [`crate::render`]).
pub struct Renderer {
    /// The linked avatar programs, one per shading the avatar's materials use; the first is
    /// the standard one.
    pub(super) programs: Vec<ShaderVariant>,
    /// For each `SHADING_*`, its index in `programs` (the standard one where not compiled).
    pub(super) program_for: [usize; 3],
    /// A 1x1 white texture for materials without one.
    pub(super) white: Texture,
    /// One entry per avatar texture; `None` where the texture could not be uploaded.
    pub(super) textures: Vec<Option<Rc<Texture>>>,
    /// One entry per avatar material.
    pub(super) materials: Vec<GpuMaterial>,
    /// One entry per avatar material: emission, rim and matcap, and its own colours.
    pub(super) effects: Vec<GpuEffects>,
    /// One entry per avatar material: this frame's colours and UV transform (reused).
    pub(super) live: Vec<LiveMaterial>,
    /// One entry per avatar mesh.
    pub(super) meshes: Vec<GpuMesh>,
    /// The node hierarchy (rest transforms and meshes).
    pub(super) nodes: Vec<NodeInfo>,
    /// One entry per avatar skin.
    pub(super) skins: Vec<GpuSkin>,
    /// Per node: where its joint matrices go, when its mesh is drawn skinned.
    pub(super) node_skins: Vec<Option<NodeSkin>>,
    /// The joint matrices of every skinned node, 16 floats per joint (reused each frame).
    pub(super) joint_data: Vec<f32>,
    /// The buffer texture that holds `joint_data` (absent when nothing is skinned).
    pub(super) joint_texture: Option<(Buffer, Texture)>,
    /// Room for this many active targets in the GPU path's programs.
    pub(super) max_active: usize,
    /// The wrinkle maps the mapping declares, and this frame's weights.
    pub(super) wrinkles: super::wrinkles::GpuWrinkles,
    /// This frame's blended primitives, sorted for drawing (reused).
    pub(super) blended: Vec<BlendedDraw>,
    /// Scene roots.
    pub(super) roots: Vec<usize>,
    /// Per-frame world matrices, one per node (reused).
    pub(super) world: Vec<Mat4>,
    /// Per-frame flags: whether each node was reached from a root this frame (reused).
    pub(super) visited: Vec<bool>,
    /// Traversal stack (reused).
    pub(super) stack: Vec<(usize, Mat4)>,
    /// Levels of detail: the mode, this frame's choice, and the nodes and meshes it hides.
    pub(super) lods: Lods,
    /// The morph path in use.
    pub(super) path: MorphPath,
    /// `GL_RENDERER`, for logs and the morph path decision.
    pub(super) renderer_name: String,
    /// The GL context.
    pub(super) gl: Rc<glow::Context>,
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
    ///
    /// Every level of detail is uploaded; the renderer starts in [`LodMode::Auto`] (see
    /// [`Renderer::set_lod`]).
    pub fn new(
        gl: Rc<glow::Context>,
        avatar: &Avatar,
        morph: MorphMode,
    ) -> Result<Renderer, RenderError> {
        let renderer_name = gl_string(&gl, glow::RENDERER);
        let path = resolve_path(&gl, avatar, morph, &renderer_name);
        tracing::info!(?morph, ?path, renderer = %renderer_name, "morph path resolved");

        let max_targets = avatar
            .meshes
            .iter()
            .map(|m| m.target_count())
            .max()
            .unwrap_or(0);
        let max_active = (max_targets.div_ceil(4) * 4).clamp(4, MAX_ACTIVE_TARGETS);
        let (programs, program_for) = build_programs(&gl, avatar, path, max_active, 0)?;

        let white = upload_texture(&gl, 1, 1, &[255; 4], Sampler::default())?;
        let textures = upload_textures(&gl, avatar)?;
        let materials: Vec<GpuMaterial> = avatar
            .materials
            .iter()
            .map(|m| gpu_material(m, &textures))
            .collect();
        let effects: Vec<GpuEffects> = avatar
            .materials
            .iter()
            .map(|m| GpuEffects::new(m, &textures))
            .collect();
        let live = effects.iter().map(|e| e.live(None)).collect();

        let meshes = upload_meshes(&gl, avatar, path, max_active)?;

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

        let skins = gpu_skins(avatar);
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
        let blended_capacity = count_blended(&nodes, &meshes, &materials);
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
            effects,
            live,
            meshes,
            nodes,
            skins,
            node_skins,
            joint_data,
            joint_texture,
            max_active,
            wrinkles: Default::default(),
            blended: Vec::with_capacity(blended_capacity),
            roots: avatar.roots.clone(),
            world: vec![Mat4::IDENTITY; count],
            visited: vec![false; count],
            stack: Vec::with_capacity(count),
            lods: Lods::new(avatar, LodMode::Auto),
            path,
            renderer_name,
            gl,
        })
    }

    /// Replaces avatar texture `index` with `texture` (a repainted atlas, say); the old GL
    /// texture is deleted and every material that samples it draws the new one. Pixels whose
    /// byte count does not match their size, or an index the avatar does not have, change
    /// nothing and are refused.
    pub fn replace_texture(
        &mut self,
        index: usize,
        texture: &crate::avatar::Texture,
    ) -> Result<(), RenderError> {
        let expected = texture.width as u64 * texture.height as u64 * 4;
        if index >= self.textures.len()
            || texture.width == 0
            || texture.height == 0
            || texture.rgba.len() as u64 != expected
        {
            return Err(RenderError::Texture(format!(
                "texture {index}: {}x{} with {} bytes does not fit the avatar's {} textures",
                texture.width,
                texture.height,
                texture.rgba.len(),
                self.textures.len()
            )));
        }
        let uploaded = upload_texture(
            &self.gl,
            texture.width,
            texture.height,
            &texture.rgba,
            texture.sampler,
        )?;
        self.textures[index] = Some(Rc::new(uploaded));
        Ok(())
    }

    /// How many GL textures hold the avatar's textures: one per image and sampler, however many
    /// textures draw from it.
    pub fn texture_objects(&self) -> usize {
        let objects: std::collections::HashSet<*const Texture> =
            self.textures.iter().flatten().map(Rc::as_ptr).collect();
        objects.len()
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
    /// [`sanitize_weight`](super::sanitize_weight), missing entries count as 0 and extra ones
    /// are ignored. One level of each level-of-detail group is drawn (see [`Renderer::set_lod`]);
    /// the others, with their subtrees, are skipped, and so is the morph work of meshes only
    /// they draw. Node rotations from `pose.rotations` are applied after each node's rest
    /// rotation (non-finite or zero quaternions count as identity), and translations from
    /// `pose.translations` are added to its rest translation (non-finite ones count as zero); morphing happens before
    /// skinning and the node transforms. Each material's colours and UV scale and offset come
    /// from `pose.materials` (clamped to 0..=1; non-finite values and missing entries take the
    /// material's own).
    ///
    /// GL state changed and left behind: viewport, clear colour, depth test (on, `LESS`, depth
    /// writes on), colour mask (all on), blending (off; its function `ONE, ONE_MINUS_SRC_ALPHA`
    /// when the avatar has blended materials), scissor test and `GL_FRAMEBUFFER_SRGB` (off),
    /// face culling, cull face and front face, the active texture unit (unit 0) and the textures
    /// bound on units 0 to 6, the array and texture buffer bindings, and the current value of
    /// vertex attribute 5. The program and vertex array are unbound at the end. Nothing is
    /// allocated after the first frame.
    pub fn draw(&mut self, pose: &Pose, camera: &Camera, target: &DrawTarget) {
        self.update_weights(pose);
        self.wrinkles.weights = super::wrinkles::sanitize(&pose.wrinkles);
        self.update_materials(pose);
        self.update_world(pose);
        self.upload_joint_matrices();
        // After the transforms, which auto mode measures by; before the morphs, which hidden
        // levels skip.
        self.select_lods(camera);
        match self.path {
            MorphPath::Cpu => self.upload_cpu_morphs(),
            MorphPath::Gpu => self.build_active_lists(),
        }

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
        if let Some((programs, _)) = self.wrinkles.programs() {
            for program in programs {
                set_globals(gl, program, camera, lights, aspect);
            }
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
            node: [usize::MAX; 6],
        };

        // Opaque and masked primitives, in node order; blended ones are listed for later.
        let mut blended = std::mem::take(&mut self.blended);
        self.draw_opaque(&mut bound, &mut blended, camera, forward);
        self.draw_blended(&mut bound, &mut blended);
        self.blended = blended;

        // SAFETY: unbinding is always valid.
        unsafe {
            gl.bind_vertex_array(None);
            gl.use_program(None);
        }
        check_gl!(gl, "drawing the avatar");
        tracing::trace!(path = ?self.path, width = target.width, height = target.height, "avatar drawn");
    }
}

#[cfg(test)]
mod tests {
    use super::super::nodes::tests::node;
    use super::*;
    use crate::avatar::{AlphaMode, Mesh, OutlineMode, Primitive};
    use glam::{Quat, Vec3, Vec4};

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
            positions: vec![d, Vec3::ZERO, d, Vec3::ZERO].into(),
            normals: vec![Vec3::X * 0.1; 4].into(),
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
                    emissive: [0.2, 0.0, 0.0],
                    emissive_texture: Some(0),
                    toon: Some(crate::avatar::Toon {
                        rim_color: [0.0, 0.5, 0.0],
                        matcap_texture: Some(0),
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
                rgba: vec![200; 16].into(),
                sampler: Default::default(),
            }],
            ..Default::default()
        }
    }

    /// [`quad_avatar`] with a second level: a copy of its mesh on a sibling node.
    fn lod_avatar() -> Avatar {
        let mut avatar = quad_avatar();
        avatar.meshes.push(avatar.meshes[0].clone());
        avatar.nodes.push(node(Some(0), vec![], Vec3::X, Some(1)));
        avatar.nodes[0].children.push(2);
        avatar.lods = vec![crate::avatar::LodGroup {
            levels: vec![1, 2],
            coverage: Vec::new(),
        }];
        avatar
    }

    #[test]
    fn hidden_levels_get_no_morph_work_and_switching_does_not_allocate() {
        let ctx = match super::super::headless::HeadlessContext::new(32, 32) {
            Ok(ctx) => ctx,
            Err(e) => panic!("headless context: {e}"),
        };
        let avatar = lod_avatar();
        let near = Camera::framing(avatar.bounds().unwrap(), 1.0);
        let far = Camera {
            eye: near.eye + (near.eye - near.target) * 50.0,
            far: near.far * 100.0,
            ..near
        };
        let target = DrawTarget {
            width: 32,
            height: 32,
            clear_color: [0.0, 0.0, 0.0, 0.0],
            alpha: true,
        };
        for mode in [MorphMode::Cpu, MorphMode::Gpu] {
            let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).unwrap();
            let mut pose = avatar.rest_pose();
            pose.weights[0][0] = 0.7;
            pose.weights[1][0] = 0.7;
            renderer.set_lod(LodMode::Fixed(1));
            ctx.bind();
            renderer.draw(&pose, &near, &target);
            assert_eq!(renderer.lod_levels(), [1]);
            assert_eq!(renderer.lods.mesh_drawn, [false, true], "{mode}");
            assert_eq!(renderer.lods.hidden, [false, true, false], "{mode}");
            match mode {
                MorphMode::Cpu => {
                    assert_eq!(
                        renderer.meshes[0].uploaded,
                        [0.0, 0.0],
                        "hidden: not blended"
                    );
                    assert_eq!(renderer.meshes[1].uploaded, [0.7, 0.0]);
                }
                _ => {
                    assert_eq!(renderer.meshes[0].active_count, 0, "hidden: no list");
                    assert_eq!(renderer.meshes[1].active_count, 1);
                }
            }
            // Back on level 0, its mesh catches up.
            renderer.set_lod(LodMode::Fixed(0));
            renderer.draw(&pose, &near, &target);
            assert_eq!(renderer.lods.mesh_drawn, [true, false]);
            if mode == MorphMode::Cpu {
                assert_eq!(renderer.meshes[0].uploaded, [0.7, 0.0]);
            } else {
                assert_eq!(renderer.meshes[0].active_count, 1);
            }

            ALLOCATIONS.with(|n| n.set(0));
            COUNTING.with(|c| c.set(true));
            for frame in 0..24 {
                renderer.set_lod(match frame % 3 {
                    0 => LodMode::Auto,
                    1 => LodMode::Fixed(1),
                    _ => LodMode::Fixed(7),
                });
                pose.weights[frame % 2][1] = frame as f32 * 0.05;
                let camera = if frame % 4 < 2 { &near } else { &far };
                renderer.draw(&pose, camera, &target);
            }
            COUNTING.with(|c| c.set(false));
            assert_eq!(
                ALLOCATIONS.with(|n| n.get()),
                0,
                "{mode} path allocated while switching levels"
            );
            renderer.set_lod(LodMode::Auto);
            renderer.draw(&pose, &near, &target);
            assert_eq!(renderer.lod_levels(), [0], "near: level 0");
            renderer.draw(&pose, &far, &target);
            assert_eq!(renderer.lod_levels(), [1], "far: the last level");
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
                pose.materials[0].base_color[0] = if frame % 4 == 0 { f32::NAN } else { t };
                pose.materials[0].uv_offset.x = t;
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
