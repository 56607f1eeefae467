//! Rigged avatars and their materials: skinning after morphing on both morph paths, alpha modes,
//! vertex colours, texture transforms and MToon, on small GLBs built here, plus RobotExpressive
//! and Godette read in place.

use std::f32::consts::{FRAC_PI_2, PI};
use std::path::PathBuf;

use crate::support::changed_pixels;
use facewire::avatar::blend::{blend_reference, skin_reference};
use facewire::avatar::{self, AlphaMode, Avatar, AvatarError, Pose};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, MorphMode, Renderer};
use glam::{Mat4, Quat, Vec2, Vec3, Vec4};

const SIZE: u32 = 128;
/// The opaque background (straight sRGB), far from every colour drawn here.
const BACKGROUND: [f32; 4] = [0.0, 0.0, 0.0, 1.0];

/// Emission, MToon rim light and matcap, and expressions' material binds, drawn.
mod effects;

// ---------------------------------------------------------------------------------------------
// Building GLBs.
// ---------------------------------------------------------------------------------------------

/// Accumulates a GLB's binary chunk, buffer views and accessors.
#[derive(Default)]
struct Glb {
    bin: Vec<u8>,
    views: Vec<String>,
    accessors: Vec<String>,
}

impl Glb {
    /// Appends `bytes` as a buffer view and an accessor over it; returns the accessor index.
    fn accessor(
        &mut self,
        bytes: &[u8],
        component: u32,
        count: usize,
        ty: &str,
        extra: &str,
    ) -> usize {
        self.bin.resize(self.bin.len().next_multiple_of(4), 0);
        self.views.push(format!(
            r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#,
            self.bin.len(),
            bytes.len()
        ));
        self.bin.extend_from_slice(bytes);
        self.accessors.push(format!(
            r#"{{"bufferView":{},"componentType":{component},"count":{count},"type":"{ty}"{extra}}}"#,
            self.views.len() - 1
        ));
        self.accessors.len() - 1
    }

    fn floats(&mut self, values: &[f32], ty: &str) -> usize {
        let width = match ty {
            "SCALAR" => 1,
            "VEC2" => 2,
            "VEC3" => 3,
            "VEC4" => 4,
            "MAT4" => 16,
            _ => unreachable!(),
        };
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let extra = if ty == "VEC3" {
            // POSITION accessors need bounds.
            let mut min = [f32::MAX; 3];
            let mut max = [f32::MIN; 3];
            for p in values.chunks_exact(3) {
                for k in 0..3 {
                    min[k] = min[k].min(p[k]);
                    max[k] = max[k].max(p[k]);
                }
            }
            format!(r#","min":{min:?},"max":{max:?}"#)
        } else {
            String::new()
        };
        self.accessor(&bytes, 5126, values.len() / width, ty, &extra)
    }

    fn vec3s(&mut self, values: &[Vec3]) -> usize {
        let flat: Vec<f32> = values.iter().flat_map(|v| v.to_array()).collect();
        self.floats(&flat, "VEC3")
    }

    fn vec2s(&mut self, values: &[Vec2]) -> usize {
        let flat: Vec<f32> = values.iter().flat_map(|v| v.to_array()).collect();
        self.floats(&flat, "VEC2")
    }

    fn indices(&mut self, values: &[u16]) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.accessor(&bytes, 5123, values.len(), "SCALAR", "")
    }

    /// A PNG image as a buffer view; returns the view index.
    fn png(&mut self, image: &RgbaImage) -> usize {
        let png = image.to_png().expect("encode PNG");
        self.bin.resize(self.bin.len().next_multiple_of(4), 0);
        self.views.push(format!(
            r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#,
            self.bin.len(),
            png.len()
        ));
        self.bin.extend(png);
        self.views.len() - 1
    }

    /// The GLB: `body` (JSON members without `buffers`, `bufferViews` and `accessors`) plus this
    /// builder's data.
    fn build(self, body: &str) -> Vec<u8> {
        let json = format!(
            r#"{{"asset":{{"version":"2.0"}},{body},"buffers":[{{"byteLength":{}}}],"bufferViews":[{}],"accessors":[{}]}}"#,
            self.bin.len().next_multiple_of(4),
            self.views.join(","),
            self.accessors.join(",")
        );
        crate::support::glb(json.as_bytes(), &self.bin)
    }
}

/// An unlit material: its colour reaches the image exactly (sRGB-encoded).
fn unlit(name: &str, color: [f32; 4], extra: &str) -> String {
    format!(
        r#"{{"name":"{name}","pbrMetallicRoughness":{{"baseColorFactor":{color:?}}},"extensions":{{"KHR_materials_unlit":{{}}}}{extra}}}"#
    )
}

/// A quad in the XY plane at depth `z`, facing +Z, from `min` to `max`: positions, UVs (v down)
/// and indices.
fn quad(min: Vec2, max: Vec2, z: f32) -> ([Vec3; 4], [Vec2; 4], [u16; 6]) {
    (
        [
            Vec3::new(min.x, min.y, z),
            Vec3::new(max.x, min.y, z),
            Vec3::new(max.x, max.y, z),
            Vec3::new(min.x, max.y, z),
        ],
        [
            Vec2::new(0.0, 1.0),
            Vec2::new(1.0, 1.0),
            Vec2::new(1.0, 0.0),
            Vec2::new(0.0, 0.0),
        ],
        [0, 1, 2, 0, 2, 3],
    )
}

/// A mesh JSON with one quad primitive using `material` and `extra_attributes`.
fn quad_mesh(
    glb: &mut Glb,
    min: Vec2,
    max: Vec2,
    z: f32,
    material: usize,
    extra_attributes: &str,
) -> String {
    let (p, uv, i) = quad(min, max, z);
    let positions = glb.vec3s(&p);
    let normals = glb.vec3s(&[Vec3::Z; 4]);
    let uvs = glb.vec2s(&uv);
    let indices = glb.indices(&i);
    format!(
        r#"{{"primitives":[{{"attributes":{{"POSITION":{positions},"NORMAL":{normals},"TEXCOORD_0":{uvs}{extra_attributes}}},"indices":{indices},"material":{material}}}]}}"#
    )
}

/// A scene of one node per mesh, all roots.
fn flat_scene(meshes: &[String], materials: &[String], extra: &str) -> String {
    let nodes: Vec<String> = (0..meshes.len())
        .map(|m| format!(r#"{{"mesh":{m}}}"#))
        .collect();
    let roots: Vec<String> = (0..meshes.len()).map(|m| m.to_string()).collect();
    format!(
        r#""scene":0,"scenes":[{{"nodes":[{}]}}],"nodes":[{}],"meshes":[{}],"materials":[{}]{extra}"#,
        roots.join(","),
        nodes.join(","),
        meshes.join(","),
        materials.join(",")
    )
}

// ---------------------------------------------------------------------------------------------
// Rendering.
// ---------------------------------------------------------------------------------------------

fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

fn context(size: u32) -> HeadlessContext {
    init_logs();
    HeadlessContext::new(size, size).expect("headless context")
}

fn target(size: u32) -> DrawTarget {
    DrawTarget {
        width: size,
        height: size,
        clear_color: BACKGROUND,
        alpha: false,
    }
}

fn out_dir() -> PathBuf {
    let dir = crate::support::repo().join("target/render-tests");
    std::fs::create_dir_all(&dir).expect("create target/render-tests");
    dir
}

fn save(image: &RgbaImage, name: &str) {
    image
        .save_png(&out_dir().join(format!("materials_{name}.png")))
        .expect("write test PNG");
}

/// A camera looking down -Z at the box from `min` to `max`.
fn camera_on(min: Vec3, max: Vec3) -> Camera {
    Camera::framing(avatar::Aabb { min, max }, 1.0)
}

fn render(
    ctx: &HeadlessContext,
    renderer: &mut Renderer,
    pose: &Pose,
    camera: &Camera,
    size: u32,
) -> RgbaImage {
    ctx.bind();
    renderer.draw(pose, camera, &target(size));
    ctx.read_rgba()
}

/// Loads `glb` and renders its rest pose once on `mode`.
fn render_glb(glb: &[u8], label: &str, camera: &Camera, mode: MorphMode) -> (Avatar, RgbaImage) {
    let avatar = avatar::load_slice(glb, label).unwrap_or_else(|e| panic!("{e}"));
    let ctx = context(SIZE);
    let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).expect("renderer");
    let image = render(&ctx, &mut renderer, &avatar.rest_pose(), camera, SIZE);
    save(&image, label);
    (avatar, image)
}

/// Projects a world-space point to pixel coordinates (top-left origin).
fn to_pixel(camera: &Camera, p: Vec3, size: u32) -> (u32, u32) {
    let ndc = camera.view_proj().project_point3(p);
    let x = (ndc.x * 0.5 + 0.5) * size as f32;
    let y = (0.5 - ndc.y * 0.5) * size as f32;
    (
        x.clamp(0.0, size as f32 - 1.0) as u32,
        y.clamp(0.0, size as f32 - 1.0) as u32,
    )
}

/// The colour of the pixel at (`x`, `y`), without its alpha.
fn rgb(image: &RgbaImage, x: u32, y: u32) -> [u8; 3] {
    let p = image.pixel(x, y);
    [p[0], p[1], p[2]]
}

fn pixel_at(image: &RgbaImage, camera: &Camera, p: Vec3) -> [u8; 3] {
    let (x, y) = to_pixel(camera, p, image.width);
    rgb(image, x, y)
}

/// Linear to sRGB-encoded 0..=255, as the fragment shader writes it.
fn srgb(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    let e = if c <= 0.0031308 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    };
    e * 255.0
}

fn srgb3(c: [f32; 3]) -> [f32; 3] {
    c.map(srgb)
}

fn assert_near(got: [u8; 3], want: [f32; 3], tolerance: f32, what: &str) {
    let ok = got
        .iter()
        .zip(want)
        .all(|(&g, w)| (f32::from(g) - w).abs() <= tolerance);
    assert!(ok, "{what}: got {got:?}, want {want:?} (±{tolerance})");
}

fn is_background(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c < 4)
}

/// Asserts two renders agree within 1 level per channel on at least 99.9 % of pixels.
fn assert_agree(a: &RgbaImage, b: &RgbaImage, what: &str) {
    let diff = a.compare(b, 1).expect("same size");
    assert!(
        diff.fraction_within() >= 0.999,
        "{what}: only {:.4} % of pixels within 1 level (max diff {})",
        diff.fraction_within() * 100.0,
        diff.max_channel
    );
}

// ---------------------------------------------------------------------------------------------
// Skinning.
// ---------------------------------------------------------------------------------------------

/// Half the strip's width.
const HALF_WIDTH: f32 = 0.2;

/// A vertical strip from y = 0 to y = 2 (rows at 0, 1 and 2), skinned to two joints: the root
/// at the origin and a child at y = 1 that carries the top row. Joints and weights are unsigned
/// bytes, the weights deliberately not summing to 255. One morph target pushes the top row by
/// +0.3 along x. The mesh node sits at x = 5, which skinning must ignore. `bad_joint` replaces
/// one joint index.
fn skinned_strip(bad_joint: Option<u8>) -> Vec<u8> {
    let mut glb = Glb::default();
    let mut positions = Vec::new();
    for y in [0.0, 1.0, 2.0] {
        positions.push(Vec3::new(-HALF_WIDTH, y, 0.0));
        positions.push(Vec3::new(HALF_WIDTH, y, 0.0));
    }
    let p = glb.vec3s(&positions);
    let n = glb.vec3s(&[Vec3::Z; 6]);
    let uv = glb.vec2s(&[Vec2::ZERO; 6]);
    let mut joints: Vec<u8> = vec![
        0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
    ];
    if let Some(bad) = bad_joint {
        joints[16] = bad;
    }
    let j = glb.accessor(&joints, 5121, 6, "VEC4", "");
    // Bottom rows: all root (as 200 of 255); top row: all child (as 100 + 0).
    let weights: Vec<u8> = vec![
        200, 0, 0, 0, 200, 0, 0, 0, 128, 127, 0, 0, 128, 127, 0, 0, 100, 0, 0, 0, 100, 0, 0, 0,
    ];
    let w = glb.accessor(&weights, 5121, 6, "VEC4", r#","normalized":true"#);
    let mut lift = vec![Vec3::ZERO; 6];
    lift[4] = Vec3::new(0.3, 0.0, 0.0);
    lift[5] = Vec3::new(0.3, 0.0, 0.0);
    let t = glb.vec3s(&lift);
    let indices = glb.indices(&[0, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4]);
    let inverse_bind: Vec<f32> = Mat4::IDENTITY
        .to_cols_array()
        .into_iter()
        .chain(Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0)).to_cols_array())
        .collect();
    let ibm = glb.floats(&inverse_bind, "MAT4");
    let body = format!(
        r#""scene":0,"scenes":[{{"nodes":[0,1]}}],
"nodes":[{{"name":"strip","mesh":0,"skin":0,"translation":[5,0,0]}},{{"name":"root","children":[2]}},{{"name":"bend","translation":[0,1,0]}}],
"skins":[{{"joints":[1,2],"inverseBindMatrices":{ibm}}}],
"meshes":[{{"name":"strip","extras":{{"targetNames":["lift"]}},"primitives":[{{"attributes":{{"POSITION":{p},"NORMAL":{n},"TEXCOORD_0":{uv},"JOINTS_0":{j},"WEIGHTS_0":{w}}},"indices":{indices},"material":0,"targets":[{{"POSITION":{t}}}]}}]}}],
"materials":[{}]"#,
        unlit("strip", [1.0, 0.5, 0.2, 1.0], r#","doubleSided":true"#)
    );
    glb.build(&body)
}

/// The strip's camera: it sees x from -2 to 2 and y from -1 to 3.
fn strip_camera() -> Camera {
    camera_on(Vec3::new(-2.0, -1.0, -0.1), Vec3::new(2.0, 3.0, 0.1))
}

#[test]
fn skinned_strip_loads_its_skin_and_renormalises_weights() {
    let avatar = avatar::load_slice(&skinned_strip(None), "strip").unwrap();
    assert_eq!(avatar.skins.len(), 1);
    assert_eq!(avatar.skins[0].joints, vec![1, 2]);
    assert_eq!(avatar.node_skin(0), Some(0));
    assert_eq!(avatar.node_skin(1), None);
    let prim = &avatar.meshes[0].primitives[0];
    assert_eq!(prim.joints[4], [1, 0, 0, 0]);
    for w in &prim.joint_weights {
        assert!((w.element_sum() - 1.0).abs() < 1e-6, "{w}");
    }
    assert_eq!(prim.joint_weights[0], Vec4::new(1.0, 0.0, 0.0, 0.0));
    assert!((prim.joint_weights[2].x - 128.0 / 255.0).abs() < 1e-6);
    // The mesh node's translation is ignored: the rest pose is the bind pose.
    let bounds = avatar.bounds().unwrap();
    assert!(
        bounds
            .min
            .abs_diff_eq(Vec3::new(-HALF_WIDTH, 0.0, 0.0), 1e-5),
        "{bounds:?}"
    );
    assert!(
        bounds
            .max
            .abs_diff_eq(Vec3::new(HALF_WIDTH, 2.0, 0.0), 1e-5),
        "{bounds:?}"
    );
}

#[test]
fn joint_index_out_of_range_is_an_error() {
    let error = avatar::load_slice(&skinned_strip(Some(7)), "bad-joint").unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, AvatarError::Accessor { .. }), "{message}");
    assert!(
        message.contains("\"strip\" (mesh 0)")
            && message.contains("JOINTS_0")
            && message.contains("joint index 7"),
        "{message}"
    );
}

#[test]
fn bending_a_joint_moves_the_skinned_strip_on_both_paths_after_morphing() {
    let avatar = avatar::load_slice(&skinned_strip(None), "strip").unwrap();
    let camera = strip_camera();
    let ctx = context(SIZE);
    let bend = avatar.find_node("bend").unwrap();
    let mut pose = avatar.rest_pose();
    pose.weights[0][0] = 1.0;
    pose.rotations[bend] = Quat::from_rotation_z(FRAC_PI_2);

    // The CPU reference: morph in bind space, then skin.
    let prim = &avatar.meshes[0].primitives[0];
    let mut morphed = vec![Vec3::ZERO; prim.positions.len()];
    blend_reference(
        &prim.positions,
        &[&prim.targets[0].positions.to_vec()],
        &[1.0],
        &mut morphed,
    );
    let world = avatar.world_transforms(&pose);
    let matrices = avatar.joint_matrices(0, &world);
    let (skinned, _) = skin_reference(prim, &morphed, &[], &matrices, world[0]);
    // The top row (bind (0.1 ± 0.2, 2) after the lift) turns a quarter about (0, 1).
    let top = (skinned[4] + skinned[5]) * 0.5;
    assert!(top.abs_diff_eq(Vec3::new(-1.0, 1.3, 0.0), 1e-5), "{top}");

    let mut images = Vec::new();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).unwrap();
        let rest = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, SIZE);
        let bent = render(&ctx, &mut renderer, &pose, &camera, SIZE);
        save(&rest, &format!("strip_rest_{mode}"));
        save(&bent, &format!("strip_bent_{mode}"));
        let color = srgb3([1.0, 0.5, 0.2]);
        // At rest the strip stands at x = 0 (not at the node's x = 5).
        assert_near(
            pixel_at(&rest, &camera, Vec3::new(0.0, 1.8, 0.0)),
            color,
            2.0,
            "rest top",
        );
        assert!(is_background(pixel_at(
            &rest,
            &camera,
            Vec3::new(-0.9, 1.3, 0.0)
        )));
        // Bent: the top is where the reference puts it, and gone from where it stood.
        assert_near(
            pixel_at(&bent, &camera, top + Vec3::X * 0.1),
            color,
            2.0,
            &format!("{mode} bent top"),
        );
        assert!(
            is_background(pixel_at(&bent, &camera, Vec3::new(0.0, 1.8, 0.0))),
            "{mode}"
        );
        // Skinning then morphing would put the top at x = -0.7 and y = 1.0 ± 0.2.
        assert!(
            is_background(pixel_at(&bent, &camera, Vec3::new(-0.6, 0.9, 0.0))),
            "{mode}: the target was applied after skinning"
        );
        // The lower half does not move.
        assert_near(
            pixel_at(&bent, &camera, Vec3::new(0.0, 0.5, 0.0)),
            color,
            2.0,
            "bottom",
        );
        images.push(bent);
    }
    assert_agree(&images[0], &images[1], "bent strip, cpu vs gpu");
}

// ---------------------------------------------------------------------------------------------
// Alpha modes.
// ---------------------------------------------------------------------------------------------

/// An 8x8 texture whose left half is opaque white and right half white at alpha 0.2.
fn half_transparent() -> RgbaImage {
    let mut data = Vec::new();
    for _ in 0..8 {
        for x in 0..8 {
            data.extend([255, 255, 255, if x < 4 { 255 } else { 51 }]);
        }
    }
    RgbaImage {
        width: 8,
        height: 8,
        data,
    }
}

#[test]
fn mask_cutoff_leaves_holes() {
    let mut glb = Glb::default();
    let view = glb.png(&half_transparent());
    let mesh = quad_mesh(&mut glb, Vec2::splat(-1.0), Vec2::splat(1.0), 0.0, 0, "");
    let material = r#"{"pbrMetallicRoughness":{"baseColorFactor":[0,1,0,1],"baseColorTexture":{"index":0}},"alphaMode":"MASK","alphaCutoff":0.5,"extensions":{"KHR_materials_unlit":{}}}"#.to_owned();
    let body = flat_scene(
        &[mesh],
        &[material],
        &format!(
            r#","textures":[{{"source":0}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]"#
        ),
    );
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let (avatar, image) = render_glb(&glb.build(&body), "mask", &camera, MorphMode::Auto);
    assert_eq!(avatar.materials[0].alpha_mode, AlphaMode::Mask);
    assert_near(
        pixel_at(&image, &camera, Vec3::new(-0.5, 0.0, 0.0)),
        [0.0, 255.0, 0.0],
        1.0,
        "opaque half",
    );
    assert!(
        is_background(pixel_at(&image, &camera, Vec3::new(0.5, 0.0, 0.0))),
        "the masked half is a hole"
    );
}

#[test]
fn blend_draws_after_opaque_far_to_near_and_mixes_colours() {
    let mut glb = Glb::default();
    // Listed near to far and blended first, so only deferred, sorted drawing gets this right.
    let blue = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, -1.0),
        Vec2::new(0.5, 1.0),
        0.6,
        0,
        "",
    );
    let green = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, -1.0),
        Vec2::new(1.0, 0.0),
        0.3,
        1,
        "",
    );
    let red = quad_mesh(&mut glb, Vec2::splat(-1.0), Vec2::splat(1.0), 0.0, 2, "");
    let body = flat_scene(
        &[blue, green, red],
        &[
            unlit("blue", [0.0, 0.0, 1.0, 0.5], r#","alphaMode":"BLEND""#),
            unlit("green", [0.0, 1.0, 0.0, 0.5], r#","alphaMode":"BLEND""#),
            unlit("red", [1.0, 0.0, 0.0, 1.0], ""),
        ],
        "",
    );
    let camera = camera_on(Vec3::new(-1.0, -1.0, 0.0), Vec3::new(1.0, 1.0, 0.6));
    let glb = glb.build(&body);
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let (_, image) = render_glb(&glb, &format!("blend_{mode}"), &camera, mode);
        // Blending happens on the sRGB-encoded values, premultiplied.
        assert_near(
            pixel_at(&image, &camera, Vec3::new(0.8, 0.5, 0.0)),
            [255.0, 0.0, 0.0],
            1.0,
            "red alone",
        );
        assert_near(
            pixel_at(&image, &camera, Vec3::new(-0.3, 0.5, 0.6)),
            [127.5, 0.0, 127.5],
            2.0,
            "blue over red",
        );
        assert_near(
            pixel_at(&image, &camera, Vec3::new(0.8, -0.5, 0.3)),
            [127.5, 127.5, 0.0],
            2.0,
            "green over red",
        );
        // Far to near: green first, then blue over both.
        assert_near(
            pixel_at(&image, &camera, Vec3::new(-0.3, -0.5, 0.6)),
            [63.75, 63.75, 127.5],
            2.0,
            "blue over green over red",
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Vertex colours and texture transforms.
// ---------------------------------------------------------------------------------------------

#[test]
fn vertex_colours_tint_the_base_colour() {
    let mut glb = Glb::default();
    let colors = glb.accessor(
        &[0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 255, 0],
        5121,
        4,
        "VEC3",
        r#","normalized":true"#,
    );
    let tinted = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, -1.0),
        Vec2::new(0.0, 1.0),
        0.0,
        0,
        &format!(r#","COLOR_0":{colors}"#),
    );
    let colors = glb.floats(&[0.5, 0.5, 1.0, 1.0].repeat(4), "VEC4");
    let lit = quad_mesh(
        &mut glb,
        Vec2::new(0.0, -1.0),
        Vec2::new(1.0, 1.0),
        0.0,
        1,
        &format!(r#","COLOR_0":{colors}"#),
    );
    let body = flat_scene(
        &[tinted, lit],
        &[
            unlit("white", [1.0, 1.0, 0.5, 1.0], ""),
            r#"{"pbrMetallicRoughness":{"baseColorFactor":[1,1,1,1]}}"#.to_owned(),
        ],
        "",
    );
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let (avatar, image) = render_glb(
        &glb.build(&body),
        "vertex_colours",
        &camera,
        MorphMode::Auto,
    );
    let prim = &avatar.meshes[0].primitives[0];
    assert_eq!(prim.colors, vec![Vec4::new(0.0, 1.0, 0.0, 1.0); 4]);
    assert_near(
        pixel_at(&image, &camera, Vec3::new(-0.5, 0.0, 0.0)),
        [0.0, 255.0, 0.0],
        1.0,
        "colour x factor",
    );
    // Lit: blue stays the strongest channel, red and green equal.
    let p = pixel_at(&image, &camera, Vec3::new(0.5, 0.0, 0.0));
    assert!(p[2] > p[0] + 40 && p[2] > p[1] + 40, "{p:?}");
}

/// An 8x1 texture: red on the left half, blue on the right (wide enough that filtering does not
/// mix the two at the quarters).
fn red_blue() -> RgbaImage {
    let mut data = [255, 0, 0, 255].repeat(4);
    data.extend([0, 0, 255, 255].repeat(4));
    RgbaImage {
        width: 8,
        height: 1,
        data,
    }
}

#[test]
fn texture_transform_shifts_the_texture_and_picks_its_uv_set() {
    let mut glb = Glb::default();
    let view = glb.png(&red_blue());
    // Mesh 0: plain. Mesh 1: offset by half the texture. Mesh 2: its TEXCOORD_0 is all zeros;
    // the transform's texCoord picks TEXCOORD_1, which holds the real coordinates.
    let plain = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, 0.4),
        Vec2::new(1.0, 1.0),
        0.0,
        0,
        "",
    );
    let shifted = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, -0.3),
        Vec2::new(1.0, 0.3),
        0.0,
        1,
        "",
    );
    let (_, uv, _) = quad(Vec2::ZERO, Vec2::ONE, 0.0);
    let set1 = glb.vec2s(&uv);
    let zeros = glb.vec2s(&[Vec2::ZERO; 4]);
    let (p, _, i) = quad(Vec2::new(-1.0, -1.0), Vec2::new(1.0, -0.4), 0.0);
    let (p, n, i) = (glb.vec3s(&p), glb.vec3s(&[Vec3::Z; 4]), glb.indices(&i));
    let second_set = format!(
        r#"{{"primitives":[{{"attributes":{{"POSITION":{p},"NORMAL":{n},"TEXCOORD_0":{zeros},"TEXCOORD_1":{set1}}},"indices":{i},"material":2}}]}}"#
    );
    let material = |transform: &str| {
        format!(
            r#"{{"pbrMetallicRoughness":{{"baseColorTexture":{{"index":0{transform}}}}},"extensions":{{"KHR_materials_unlit":{{}}}}}}"#
        )
    };
    let body = flat_scene(
        &[plain, shifted, second_set],
        &[
            material(""),
            material(r#","extensions":{"KHR_texture_transform":{"offset":[0.5,0]}}"#),
            material(r#","extensions":{"KHR_texture_transform":{"texCoord":1}}"#),
        ],
        &format!(
            r#","extensionsUsed":["KHR_texture_transform","KHR_materials_unlit"],"textures":[{{"source":0}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]"#
        ),
    );
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let (avatar, image) = render_glb(
        &glb.build(&body),
        "texture_transform",
        &camera,
        MorphMode::Auto,
    );
    assert_eq!(
        avatar.materials[1].base_color_transform.offset,
        Vec2::new(0.5, 0.0)
    );
    assert_eq!(avatar.materials[2].base_color_tex_coord, 1);
    assert_eq!(avatar.meshes[2].primitives[0].uvs, uv.to_vec());
    let (red, blue) = ([255.0, 0.0, 0.0], [0.0, 0.0, 255.0]);
    let at = |x: f32, y: f32| pixel_at(&image, &camera, Vec3::new(x, y, 0.0));
    assert_near(at(-0.5, 0.7), red, 2.0, "plain, left");
    assert_near(at(0.5, 0.7), blue, 2.0, "plain, right");
    assert_near(at(-0.5, 0.0), blue, 2.0, "shifted, left");
    assert_near(at(0.5, 0.0), red, 2.0, "shifted, right (wrapped)");
    assert_near(at(-0.5, -0.7), red, 2.0, "TEXCOORD_1, left");
    assert_near(at(0.5, -0.7), blue, 2.0, "TEXCOORD_1, right");
}

#[test]
fn texture_transform_rotation_follows_the_extension() {
    // KHR_texture_transform rotates the UVs counter-clockwise: (1, 0) goes to (0, -1).
    let t = avatar::TextureTransform {
        offset: Vec2::new(0.5, 0.25),
        rotation: FRAC_PI_2,
        scale: Vec2::new(2.0, 1.0),
    };
    assert!(t
        .apply(Vec2::new(0.5, 0.0))
        .abs_diff_eq(Vec2::new(0.5, -0.75), 1e-6));
    assert!(avatar::TextureTransform::IDENTITY.apply(Vec2::new(0.3, 0.7)) == Vec2::new(0.3, 0.7));
}

// ---------------------------------------------------------------------------------------------
// MToon.
// ---------------------------------------------------------------------------------------------

/// A UV sphere of radius 1 at the origin: positions (which are also its normals), UVs (u around
/// from the back, v down from the north pole) and indices.
fn sphere_geometry() -> (Vec<Vec3>, Vec<Vec2>, Vec<u16>) {
    let (rows, columns) = (24u16, 32u16);
    let mut positions = Vec::new();
    let mut uvs = Vec::new();
    for i in 0..=rows {
        let theta = PI * f32::from(i) / f32::from(rows);
        for j in 0..=columns {
            let phi = 2.0 * PI * f32::from(j) / f32::from(columns);
            positions.push(Vec3::new(
                theta.sin() * phi.sin(),
                theta.cos(),
                theta.sin() * phi.cos(),
            ));
            uvs.push(Vec2::new(
                f32::from(j) / f32::from(columns),
                f32::from(i) / f32::from(rows),
            ));
        }
    }
    let mut indices = Vec::new();
    let at = |i: u16, j: u16| i * (columns + 1) + j;
    for i in 0..rows {
        for j in 0..columns {
            indices.extend([
                at(i, j),
                at(i + 1, j),
                at(i + 1, j + 1),
                at(i, j),
                at(i + 1, j + 1),
                at(i, j + 1),
            ]);
        }
    }
    (positions, uvs, indices)
}

/// A UV sphere of radius 1 at the origin, as a mesh JSON.
fn sphere(glb: &mut Glb, material: usize) -> String {
    let (positions, _, indices) = sphere_geometry();
    let p = glb.vec3s(&positions);
    let n = glb.vec3s(&positions);
    let i = glb.indices(&indices);
    format!(
        r#"{{"primitives":[{{"attributes":{{"POSITION":{p},"NORMAL":{n}}},"indices":{i},"material":{material}}}]}}"#
    )
}

/// A sphere with a VRM 1.0 MToon material: lit (1, 0.8, 0.6), shade (0.2, 0.3, 0.8), a hard
/// ramp, and `outline` (extra JSON members of the extension).
fn mtoon_sphere(outline: &str) -> Vec<u8> {
    let mut glb = Glb::default();
    let mesh = sphere(&mut glb, 0);
    let material = format!(
        r#"{{"pbrMetallicRoughness":{{"baseColorFactor":[1,0.8,0.6,1]}},"extensions":{{"VRMC_materials_mtoon":{{"specVersion":"1.0","shadeColorFactor":[0.2,0.3,0.8],"shadingShiftFactor":0,"shadingToonyFactor":0.95{outline}}}}}}}"#
    );
    glb.build(&flat_scene(
        &[mesh],
        &[material],
        r#","extensionsUsed":["VRMC_materials_mtoon"]"#,
    ))
}

#[test]
fn mtoon_shades_two_tones_near_its_factors() {
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let (avatar, image) = render_glb(&mtoon_sphere(""), "mtoon", &camera, MorphMode::Auto);
    let toon = avatar.materials[0].toon.as_ref().expect("MToon parsed");
    assert_eq!(toon.shade_color, [0.2, 0.3, 0.8]);
    let (right, up, forward) = camera.basis();
    let back = -forward;
    // The key light comes from the upper left front, fixed to the camera.
    let lit_normal = (-0.55 * right + 0.55 * up + 0.62 * back).normalize();
    let shade_normal = (0.6 * right - 0.6 * up + 0.5 * back).normalize();
    let lit = [1.0, 0.8, 0.6];
    let shade = [0.2, 0.3, 0.8];
    // The lit side shows the base colour; the shade side the shade colour with a little of the
    // ambient's lit colour (85 % direct light, 15 % even ambient).
    let shade_mix = [0, 1, 2].map(|k| 0.85 * shade[k] + 0.15 * lit[k]);
    assert_near(
        pixel_at(&image, &camera, lit_normal),
        srgb3(lit),
        3.0,
        "lit side",
    );
    assert_near(
        pixel_at(&image, &camera, shade_normal),
        srgb3(shade_mix),
        3.0,
        "shade side",
    );
}

/// sRGB-encoded 0..=255 to linear.
fn linear(c: u8) -> f32 {
    let c = f32::from(c) / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// The MToon sphere with a uniform grey base colour texture (sRGB 188) and, as its shade
/// texture, either that texture or (`own_shade`) a darker one (sRGB 128).
fn textured_mtoon_sphere(own_shade: bool) -> Vec<u8> {
    let mut glb = Glb::default();
    let mesh = sphere(&mut glb, 0);
    let grey = glb.png(&RgbaImage::filled(2, 2, [188, 188, 188, 255]));
    let dark = glb.png(&RgbaImage::filled(2, 2, [128, 128, 128, 255]));
    let shade = usize::from(own_shade);
    let material = format!(
        r#"{{"pbrMetallicRoughness":{{"baseColorFactor":[1,0.8,0.6,1],"baseColorTexture":{{"index":0}}}},"extensions":{{"VRMC_materials_mtoon":{{"specVersion":"1.0","shadeColorFactor":[0.2,0.3,0.8],"shadeMultiplyTexture":{{"index":{shade}}},"shadingToonyFactor":0.95}}}}}}"#
    );
    let extra = format!(
        r#","textures":[{{"source":0}},{{"source":1}}],"images":[{{"bufferView":{grey},"mimeType":"image/png"}},{{"bufferView":{dark},"mimeType":"image/png"}}]"#
    );
    glb.build(&flat_scene(&[mesh], &[material], &extra))
}

#[test]
fn mtoon_shade_texture_multiplies_the_shade_colour() {
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let (right, up, forward) = camera.basis();
    let shade_normal = (0.6 * right - 0.6 * up - 0.5 * forward).normalize();
    let lit = [1.0, 0.8, 0.6].map(|c| c * linear(188));
    for (own_shade, texture) in [(false, linear(188)), (true, linear(128))] {
        let label = format!("mtoon_shade_texture_{own_shade}");
        let (_, image) = render_glb(
            &textured_mtoon_sphere(own_shade),
            &label,
            &camera,
            MorphMode::Auto,
        );
        let shade = [0.2, 0.3, 0.8].map(|c| c * texture);
        let want = [0, 1, 2].map(|k| 0.85 * shade[k] + 0.15 * lit[k]);
        assert_near(
            pixel_at(&image, &camera, shade_normal),
            srgb3(want),
            3.0,
            &label,
        );
    }
}

#[test]
fn mtoon_outline_rings_the_silhouette() {
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let outline = r#","outlineWidthMode":"screenCoordinates","outlineWidthFactor":0.05,"outlineColorFactor":[1,0,0],"outlineLightingMixFactor":0"#;
    let (avatar, with) = render_glb(
        &mtoon_sphere(outline),
        "mtoon_outline",
        &camera,
        MorphMode::Auto,
    );
    assert!(avatar.materials[0].toon.as_ref().unwrap().outline.is_some());
    let (_, without) = render_glb(&mtoon_sphere(""), "mtoon_plain", &camera, MorphMode::Auto);
    // Just outside the silhouette, left and right: background without, red with.
    let (right, _, _) = camera.basis();
    let (cx, cy) = to_pixel(&camera, Vec3::ZERO, SIZE);
    let (ex, _) = to_pixel(&camera, right, SIZE);
    let radius = ex - cx;
    for x in [cx - radius - 4, cx + radius + 4] {
        let p = rgb(&without, x, cy);
        assert!(is_background(p), "{x}: {p:?}");
        let q = with.pixel(x, cy);
        assert!(
            q[0] > 200 && q[1] < 30 && q[2] < 30,
            "outline at {x}: {q:?}"
        );
    }
    // The outline does not cover the surface's middle.
    assert_eq!(with.pixel(cx, cy), without.pixel(cx, cy));
}

// ---------------------------------------------------------------------------------------------
// An avatar's own wrinkle map.
// ---------------------------------------------------------------------------------------------

/// A lit sphere whose glTF carries a morph target `Raise` (no deltas) and a texture `lines`: a
/// tangent-space normal map (red/green) with ridges on its top quarter, which no material uses.
fn wrinkled_sphere() -> Vec<u8> {
    let mut glb = Glb::default();
    let (positions, uvs, indices) = sphere_geometry();
    let (p, n, uv, i) = (
        glb.vec3s(&positions),
        glb.vec3s(&positions),
        glb.vec2s(&uvs),
        glb.indices(&indices),
    );
    let dp = glb.vec3s(&vec![Vec3::ZERO; positions.len()]);
    let mesh = format!(
        r#"{{"primitives":[{{"attributes":{{"POSITION":{p},"NORMAL":{n},"TEXCOORD_0":{uv}}},"indices":{i},"material":0,"targets":[{{"POSITION":{dp}}}]}}],"extras":{{"targetNames":["Raise"]}}}}"#
    );
    // Rows of the map tilt the normal up and down in turn (red/green = x/y at 128 = flat), on
    // v < 0.25 only: the sphere's cap above 45 degrees of latitude.
    let size = 64;
    let mut data = Vec::new();
    for y in 0..size {
        let tilt: u8 = match (y < size / 4, (y / 2) % 2) {
            (true, 0) => 40,
            (true, _) => 216,
            (false, _) => 128,
        };
        for _ in 0..size {
            data.extend([128, tilt, 128, 255]);
        }
    }
    let map = RgbaImage {
        width: size,
        height: size,
        data,
    };
    let view = glb.png(&map);
    let material = r#"{"name":"Ball","pbrMetallicRoughness":{"baseColorFactor":[0.8,0.7,0.6,1],"metallicFactor":0,"roughnessFactor":0.6}}"#;
    glb.build(&flat_scene(
        &[mesh],
        &[material.to_string()],
        &format!(
            r#","images":[{{"bufferView":{view},"mimeType":"image/png"}}],"textures":[{{"name":"lines","source":0}}]"#
        ),
    ))
}

/// The sphere through a mapping that drives `Raise` from browInnerUp, with or without its
/// `[wrinkles.lines]` table, at browInnerUp = `brow`.
fn render_wrinkled_sphere(wrinkles: bool, brow: f32) -> RgbaImage {
    use facewire::mapping::{CompiledMapping, MappingFile};
    let avatar = avatar::load_slice(&wrinkled_sphere(), "wrinkled sphere").expect("loads");
    let mut text = String::from("version = 1\n[map]\nRaise = \"browInnerUp\"\n");
    if wrinkles {
        text.push_str(
            "[wrinkles.lines]\ntexture = \"lines\"\nchannels = \"rg\"\nmaterial = \"Ball\"\n\
             weights = { Raise = 1.0 }\n",
        );
    }
    let file = MappingFile::parse(&text, "sphere.toml").expect("parses");
    let mapping = CompiledMapping::compile(&file, &avatar).expect("compiles");
    assert_eq!(mapping.wrinkles.len(), usize::from(wrinkles));
    let ctx = context(SIZE);
    let mut scene = facewire::app::Scene::new(ctx.gl(), avatar, MorphMode::Cpu).expect("scene");
    scene.set_mapping(mapping);
    let frame = crate::support::frame(&[(facewire::arkit::Channel::BrowInnerUp, brow)]);
    scene.set_frame(Some(&frame));
    scene.draw_image(&ctx, BACKGROUND, false)
}

#[test]
fn a_gltf_avatar_declares_its_own_wrinkle_map_in_its_mapping() {
    let plain = render_wrinkled_sphere(false, 0.0);
    // At rest the map changes no pixel; the target alone (no deltas) changes none either.
    assert!(changed_pixels(&plain, &render_wrinkled_sphere(true, 0.0), 0).is_empty());
    assert!(changed_pixels(&plain, &render_wrinkled_sphere(false, 1.0), 0).is_empty());
    let raised = render_wrinkled_sphere(true, 1.0);
    save(&plain, "wrinkle_sphere_rest");
    save(&raised, "wrinkle_sphere_raised");
    // Raised, the ridges shade the cap and nothing below it.
    let rows: Vec<u32> = (0..plain.height)
        .filter(|&y| (0..plain.width).any(|x| !is_background(rgb(&plain, x, y))))
        .collect();
    let (top, bottom) = (rows[0], rows[rows.len() - 1]);
    let centre = (top + bottom) / 2;
    let changed = changed_pixels(&plain, &raised, 2);
    assert!(changed.len() > 100, "{} pixels changed", changed.len());
    assert!(
        changed.iter().all(|&(_, y)| y < centre),
        "a changed pixel lies below the sphere's equator (row {centre}): {:?}",
        changed.iter().max_by_key(|p| p.1)
    );
}

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

#[test]
fn morph_targets_keep_their_tangent_deltas() {
    let Some(dir) = crate::support::fixtures("khronos glTF samples") else {
        return;
    };
    let path = dir.join("gltf/khronos/AnimatedMorphCube/glTF/AnimatedMorphCube.gltf");
    let avatar = avatar::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let prim = &avatar.meshes[0].primitives[0];
    for target in &prim.targets {
        assert_eq!(target.tangents.len(), prim.positions.len());
        assert!(target.tangents.iter().all(|t| t.is_finite()));
    }
    // The sample's tangent deltas are all zero; a built quad checks the values themselves.
    let mut glb = Glb::default();
    let (p, uv, i) = quad(Vec2::splat(-1.0), Vec2::splat(1.0), 0.0);
    let (p, n, uv, i) = (
        glb.vec3s(&p),
        glb.vec3s(&[Vec3::Z; 4]),
        glb.vec2s(&uv),
        glb.indices(&i),
    );
    let dp = glb.vec3s(&[Vec3::ZERO; 4]);
    let tangents = [Vec3::X, Vec3::Y, Vec3::Z, Vec3::new(0.5, -0.25, 0.0)];
    let dt = glb.vec3s(&tangents);
    let mesh = format!(
        r#"{{"primitives":[{{"attributes":{{"POSITION":{p},"NORMAL":{n},"TEXCOORD_0":{uv}}},"indices":{i},"material":0,"targets":[{{"POSITION":{dp},"TANGENT":{dt}}}]}}]}}"#
    );
    let body = flat_scene(&[mesh], &[unlit("m", [1.0; 4], "")], "");
    let avatar = avatar::load_slice(&glb.build(&body), "tangents").unwrap();
    assert_eq!(avatar.meshes[0].primitives[0].targets[0].tangents, tangents);
}

/// The pixels of `image` that are not background, as a count.
fn object_pixels(image: &RgbaImage) -> usize {
    let mut n = 0;
    for y in 0..image.height {
        for x in 0..image.width {
            n += usize::from(!is_background(rgb(image, x, y)));
        }
    }
    n
}

#[test]
fn robot_expressive_hands_follow_their_skin() {
    let Some(dir) = crate::support::fixtures("RobotExpressive") else {
        return;
    };
    let avatar = avatar::load(&dir.join("gltf/RobotExpressive/RobotExpressive.glb"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.skins.len(), 4);
    let hand = avatar.find_node("HandL_1").unwrap();
    let forearm = avatar.find_node("LowerArmL").unwrap();
    let skin = avatar.node_skin(hand).expect("the hand is skinned");

    // At rest the skinned hand sits at the palm joint, at the end of the forearm, nowhere near
    // where its own node (which skinning ignores) would put it.
    let world = avatar.world_transforms(&avatar.rest_pose());
    let matrices = avatar.joint_matrices(skin, &world);
    let prim = &avatar.meshes[avatar.nodes[hand].mesh.unwrap()].primitives[0];
    let (skinned, _) = skin_reference(prim, &prim.positions, &[], &matrices, world[hand]);
    let centroid = skinned.iter().copied().sum::<Vec3>() / skinned.len() as f32;
    let palm = world[avatar.find_node("Palm2L").unwrap()].transform_point3(Vec3::ZERO);
    let unskinned = prim
        .positions
        .iter()
        .map(|p| world[hand].transform_point3(*p))
        .sum::<Vec3>()
        / prim.positions.len() as f32;
    let size = avatar.bounds().unwrap().size().y;
    assert!(
        (centroid - palm).length() < 0.1 * size,
        "hand {centroid}, palm joint {palm}"
    );
    assert!(
        (unskinned - palm).length() > 0.3 * size,
        "unskinned {unskinned}, palm joint {palm}"
    );

    let ctx = context(SIZE);
    let camera = Camera::framing(avatar.bounds().unwrap(), 1.0);
    let mut pose = avatar.rest_pose();
    pose.rotations[forearm] = Quat::from_rotation_x(1.2);
    let mut bent = Vec::new();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).unwrap();
        let rest = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, SIZE);
        let moved = render(&ctx, &mut renderer, &pose, &camera, SIZE);
        save(&rest, &format!("robot_rest_{mode}"));
        save(&moved, &format!("robot_forearm_{mode}"));
        // The hand is drawn where the CPU reference skins it.
        assert!(!is_background(pixel_at(&rest, &camera, centroid)), "{mode}");
        // No rigid mesh hangs under the forearm: only the skinned hand can move with it.
        let changed = changed_pixels(&rest, &moved, 8).len();
        assert!(changed > 30, "{mode}: {changed} pixels changed");
        bent.push(moved);
    }
    assert_agree(&bent[0], &bent[1], "robot, cpu vs gpu");
}

#[test]
fn godette_renders_skinned_and_turns_her_head() {
    let Some(dir) = crate::support::fixtures("Godette") else {
        return;
    };
    let avatar = avatar::load(&dir.join("vrm/godot-vrm/Godette_vrm_v4.vrm"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(avatar.materials.iter().filter(|m| m.toon.is_some()).count() >= 2);
    let head = avatar
        .nodes
        .iter()
        .position(|n| n.name.as_deref() == Some("head_Armature"))
        .expect("head bone");
    let bounds = avatar.bounds().unwrap();
    let ctx = context(SIZE);
    let camera = Camera::framing(bounds, 1.0);
    let mut turned = avatar.rest_pose();
    turned.rotations[head] = Quat::from_rotation_y(0.7);
    // A blink (the face mesh's targets) on top, so morphing and skinning meet.
    let face = avatar
        .meshes
        .iter()
        .position(|m| m.target_count() > 0)
        .expect("face mesh");
    turned.weights[face]
        .iter_mut()
        .take(1)
        .for_each(|w| *w = 1.0);
    let mut images = Vec::new();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).unwrap();
        let rest = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, SIZE);
        let moved = render(&ctx, &mut renderer, &turned, &camera, SIZE);
        save(&rest, &format!("godette_rest_{mode}"));
        save(&moved, &format!("godette_head_{mode}"));
        // Rest pose: a standing figure filling a good part of the frame.
        assert!(object_pixels(&rest) > (SIZE * SIZE / 10) as usize, "{mode}");
        // The head turned; the legs (the lower third) did not move.
        let changed = changed_pixels(&rest, &moved, 8);
        let (_, neck_y) = to_pixel(
            &camera,
            bounds.center() + Vec3::Y * 0.25 * bounds.size().y,
            SIZE,
        );
        assert!(
            changed.iter().filter(|(_, y)| *y < neck_y).count() > 40,
            "{mode}: head pixels"
        );
        assert!(
            changed.iter().all(|(_, y)| *y < SIZE * 2 / 3),
            "{mode}: only the head moves"
        );
        images.push(moved);
    }
    assert_agree(&images[0], &images[1], "godette, cpu vs gpu");
}
