//! Headless rendering on the EGL device platform (llvmpipe in CI): morph path agreement,
//! morph locality, node transforms, premultiplied alpha, weight sanitising, texture orientation
//! and lighting, the default head, and (with an X server) the stage window.
//!
//! Every test writes what it renders to `target/render-tests/*.png` for inspection.

use std::f32::consts::PI;
use std::path::PathBuf;

use crate::support::changed_pixels;
use facewire::avatar::{Avatar, Material, Mesh, MorphTarget, Node, Pose, Primitive, Texture};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, MorphMode, MorphPath, Renderer};
use glam::{Mat4, Quat, Vec2, Vec3};

/// Image size of the tests' renders.
const SIZE: u32 = 256;
/// An opaque dark background.
const BACKGROUND: [f32; 4] = [0.10, 0.11, 0.13, 1.0];
/// Head sphere radius.
const RADIUS: f32 = 0.1;
/// Morph target indices of the synthetic head.
const NOSE: usize = 0;
const JAW: usize = 1;
const BROW_LEFT: usize = 2;

// ---------------------------------------------------------------------------------------------
// The synthetic avatar: a textured UV-sphere head with three local morph targets (with normal
// deltas) and a second mesh of two untextured eyes, under a neck → head → eyes hierarchy.
// ---------------------------------------------------------------------------------------------

/// A UV sphere: rows from the north pole (v = 0, the texture's top row) to the south pole, the
/// texture seam at the back and u = 0.5 facing +Z, triangles counter-clockwise from outside.
fn uv_sphere(radius: f32, center: Vec3, rows: u32, columns: u32) -> Primitive {
    let mut prim = Primitive::default();
    for i in 0..=rows {
        let theta = PI * i as f32 / rows as f32;
        for j in 0..=columns {
            let phi = 2.0 * PI * j as f32 / columns as f32 - PI;
            let d = Vec3::new(
                theta.sin() * phi.sin(),
                theta.cos(),
                theta.sin() * phi.cos(),
            );
            prim.positions.push(center + d * radius);
            prim.normals.push(d);
            prim.uvs
                .push(Vec2::new(j as f32 / columns as f32, i as f32 / rows as f32));
        }
    }
    let at = |i: u32, j: u32| i * (columns + 1) + j;
    for i in 0..rows {
        for j in 0..columns {
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            prim.indices.extend_from_slice(&[a, b, c, a, c, d]);
        }
    }
    // Check the winding on a quad at the equator, facing out.
    let q = (rows / 2 * columns + columns / 2) as usize * 6;
    let [a, b, c] = [0, 1, 2].map(|k| prim.positions[prim.indices[q + k] as usize]);
    assert!(
        (b - a).cross(c - a).dot(a - center) > 0.0,
        "sphere winding is inward"
    );
    prim
}

/// Smooth vertex normals by area-weighted face accumulation.
fn accumulated_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut n = vec![Vec3::ZERO; positions.len()];
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| t[k] as usize);
        let face = (positions[b] - positions[a]).cross(positions[c] - positions[a]);
        for v in [a, b, c] {
            n[v] += face;
        }
    }
    n.into_iter().map(|v| v.normalize_or_zero()).collect()
}

/// A target that moves the sphere's vertices whose direction lies within `angle` of `towards`,
/// by `offset(direction) * falloff`, with normal deltas from re-accumulated normals.
fn local_target(
    base: &Primitive,
    center: Vec3,
    towards: Vec3,
    angle: f32,
    offset: impl Fn(Vec3) -> Vec3,
) -> MorphTarget {
    let towards = towards.normalize();
    let deltas: Vec<Vec3> = base
        .positions
        .iter()
        .map(|p| {
            let d = (*p - center).normalize();
            let cos = d.dot(towards);
            let lo = angle.cos();
            if cos <= lo {
                return Vec3::ZERO;
            }
            let t = (cos - lo) / (1.0 - lo);
            offset(d) * (t * t * (3.0 - 2.0 * t))
        })
        .collect();
    let moved: Vec<Vec3> = base
        .positions
        .iter()
        .zip(&deltas)
        .map(|(p, d)| *p + *d)
        .collect();
    let before = accumulated_normals(&base.positions, &base.indices);
    let after = accumulated_normals(&moved, &base.indices);
    let normals = deltas
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(d, (b, a))| {
            if *d == Vec3::ZERO {
                Vec3::ZERO
            } else {
                *a - *b
            }
        })
        .collect();
    MorphTarget {
        positions: deltas.into(),
        normals,
        ..MorphTarget::default()
    }
}

/// A 256² sRGB texture: warm upper half, cool lower half, a dark grid every 32 texels and a red
/// marker right of the front centre in the upper half (u 0.56..0.62, v 0.28..0.34).
fn head_texture() -> Texture {
    let size = 256u32;
    let mut rgba = Vec::with_capacity((size * size * 4) as usize);
    for y in 0..size {
        for x in 0..size {
            let (u, v) = (
                (x as f32 + 0.5) / size as f32,
                (y as f32 + 0.5) / size as f32,
            );
            let mut c = if v < 0.5 {
                [225u8, 175, 145]
            } else {
                [140, 160, 225]
            };
            if x % 32 == 0 || y % 32 == 0 {
                c = c.map(|k| k / 2);
            }
            if (0.56..0.62).contains(&u) && (0.28..0.34).contains(&v) {
                c = [230, 20, 20];
            }
            rgba.extend_from_slice(&[c[0], c[1], c[2], 255]);
        }
    }
    Texture {
        width: size,
        height: size,
        rgba: rgba.into(),
        sampler: Default::default(),
    }
}

/// The synthetic avatar used by every headless test.
fn synthetic_head() -> Avatar {
    let center = Vec3::ZERO;
    let mut head = uv_sphere(RADIUS, center, 48, 64);
    let r = RADIUS;
    let nose = local_target(&head, center, Vec3::Z, 0.45, |d| d * 0.35 * r);
    let jaw = local_target(&head, center, Vec3::new(0.0, -0.6, 0.8), 0.6, |_| {
        Vec3::new(0.0, -0.25 * r, 0.1 * r)
    });
    let brow = local_target(&head, center, Vec3::new(-0.4, 0.55, 0.73), 0.4, |_| {
        Vec3::new(0.0, 0.2 * r, 0.05 * r)
    });
    head.targets = vec![nose, jaw, brow];
    head.material = Some(0);

    let mut eyes = uv_sphere(r * 0.12, Vec3::new(-0.35 * r, 0.25 * r, 0.9 * r), 12, 16);
    let right = uv_sphere(r * 0.12, Vec3::new(0.35 * r, 0.25 * r, 0.9 * r), 12, 16);
    let offset = eyes.positions.len() as u32;
    eyes.positions.extend(right.positions);
    eyes.normals.extend(right.normals);
    eyes.uvs.extend(right.uvs);
    eyes.indices
        .extend(right.indices.iter().map(|i| i + offset));
    eyes.material = Some(1);

    let node = |name: &str, parent, children, translation, mesh| Node {
        name: Some(name.to_owned()),
        parent,
        children,
        translation,
        mesh,
        ..Node::default()
    };
    Avatar {
        source: "synthetic head".to_owned(),
        nodes: vec![
            node("neck", None, vec![1], Vec3::new(0.0, 1.5, 0.0), None),
            node("head", Some(0), vec![2], Vec3::new(0.0, 0.12, 0.0), Some(0)),
            node("eyes", Some(1), vec![], Vec3::ZERO, Some(1)),
        ],
        roots: vec![0],
        meshes: vec![
            Mesh {
                name: Some("head".to_owned()),
                target_names: vec!["nose".into(), "jaw".into(), "browLeft".into()],
                default_weights: vec![0.0; 3],
                primitives: vec![head],
            },
            Mesh {
                name: Some("eyes".to_owned()),
                target_names: vec![],
                default_weights: vec![],
                primitives: vec![eyes],
            },
        ],
        materials: vec![
            Material {
                name: Some("skin".to_owned()),
                base_color: [1.0, 0.95, 0.92, 1.0],
                base_color_texture: Some(0),
                double_sided: false,
                ..Material::default()
            },
            Material {
                name: Some("eye".to_owned()),
                base_color: [0.03, 0.04, 0.06, 1.0],
                base_color_texture: None,
                double_sided: false,
                ..Material::default()
            },
        ],
        textures: vec![head_texture()],
        ..Avatar::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------

/// Routes the library's tracing output into the test harness (filtered by `RUST_LOG`, off by
/// default), once per process.
fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A headless context of the given size, with logging set up.
fn context(width: u32, height: u32) -> HeadlessContext {
    init_logs();
    HeadlessContext::new(width, height).expect("headless context")
}

/// Where the tests write their PNGs.
fn out_dir() -> PathBuf {
    let dir = crate::support::repo().join("target/render-tests");
    std::fs::create_dir_all(&dir).expect("create target/render-tests");
    dir
}

/// Saves `image` as `target/render-tests/<name>.png`.
fn save(image: &RgbaImage, name: &str) {
    image
        .save_png(&out_dir().join(format!("{name}.png")))
        .expect("write test PNG");
}

/// The camera the tests use for `avatar`.
fn camera_for(avatar: &Avatar) -> Camera {
    Camera::framing(avatar.bounds().expect("avatar has geometry"), 1.0)
}

/// An opaque draw target over the dark background.
fn opaque() -> DrawTarget {
    DrawTarget {
        width: SIZE,
        height: SIZE,
        clear_color: BACKGROUND,
        alpha: false,
    }
}

/// Draws one frame and reads it back.
fn render(
    ctx: &HeadlessContext,
    renderer: &mut Renderer,
    pose: &Pose,
    camera: &Camera,
    target: &DrawTarget,
) -> RgbaImage {
    ctx.bind();
    renderer.draw(pose, camera, target);
    ctx.read_rgba()
}

/// A pose of `avatar` with the head mesh's weights set.
fn pose_with(avatar: &Avatar, weights: &[(usize, f32)]) -> Pose {
    let mut pose = avatar.rest_pose();
    for &(t, w) in weights {
        pose.weights[0][t] = w;
    }
    pose
}

/// Asserts that two renders agree within 1 level per channel on at least 99.9 % of pixels.
fn assert_agree(a: &RgbaImage, b: &RgbaImage, what: &str) {
    let diff = a.compare(b, 1).expect("same size");
    eprintln!(
        "{what}: {} of {} pixels differ by more than 1 (max {})",
        diff.pixels_over, diff.pixels, diff.max_channel
    );
    assert!(
        diff.fraction_within() >= 0.999,
        "{what}: only {:.4} % of pixels within 1 level (max diff {})",
        diff.fraction_within() * 100.0,
        diff.max_channel
    );
}

/// Whether a pixel differs clearly from the opaque background.
fn is_object(p: [u8; 4]) -> bool {
    let bg = BACKGROUND.map(|c| (c * 255.0).round() as u8);
    p.iter().zip(bg).take(3).any(|(a, b)| a.abs_diff(b) > 6)
}

/// Projects a world-space point to pixel coordinates (top-left origin).
fn to_pixel(view_proj: Mat4, p: Vec3) -> Vec2 {
    let ndc = view_proj.project_point3(p);
    Vec2::new(
        (ndc.x * 0.5 + 0.5) * SIZE as f32,
        (0.5 - ndc.y * 0.5) * SIZE as f32,
    )
}

/// Levels of detail (`MSFT_lod`) on a built GLB.
mod lod;

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn cpu_and_gpu_paths_agree() {
    init_logs();
    let avatar = synthetic_head();
    for samples in [0, 4] {
        let ctx = HeadlessContext::with_samples(SIZE, SIZE, samples).expect("headless context");
        eprintln!("device {}, samples {}", ctx.device(), ctx.samples());
        paths_agree_on(&ctx, &avatar, &format!("{}x", ctx.samples()));
    }
}

/// Renders the synthetic head through both paths in several poses and compares.
fn paths_agree_on(ctx: &HeadlessContext, avatar: &Avatar, label: &str) {
    let mut cpu = Renderer::new(ctx.gl(), avatar, MorphMode::Cpu).expect("cpu renderer");
    let mut gpu = Renderer::new(ctx.gl(), avatar, MorphMode::Gpu).expect("gpu renderer");
    assert_eq!(cpu.morph_path(), MorphPath::Cpu);
    assert_eq!(gpu.morph_path(), MorphPath::Gpu);
    let camera = camera_for(avatar);
    let head = avatar.find_node("head").unwrap();
    let cases: Vec<(&str, Pose)> = vec![
        ("neutral", avatar.rest_pose()),
        ("nose", pose_with(avatar, &[(NOSE, 1.0)])),
        (
            "jaw_brow",
            pose_with(avatar, &[(JAW, 0.7), (BROW_LEFT, 0.4)]),
        ),
        (
            "all",
            pose_with(avatar, &[(NOSE, 0.3), (JAW, 1.0), (BROW_LEFT, 1.5)]),
        ),
        ("negative", pose_with(avatar, &[(NOSE, -0.5), (JAW, 0.2)])),
        ("turned", {
            let mut p = pose_with(avatar, &[(JAW, 0.8), (NOSE, 0.6)]);
            p.rotations[head] = Quat::from_rotation_y(0.5) * Quat::from_rotation_x(0.2);
            p
        }),
    ];
    // Each case twice, in alternating order, so the CPU path's change detection is exercised
    // both ways (a re-blend after a change and a skipped re-blend when nothing changed).
    for (name, pose) in &cases {
        let a = render(ctx, &mut cpu, pose, &camera, &opaque());
        let b = render(ctx, &mut gpu, pose, &camera, &opaque());
        let a2 = render(ctx, &mut cpu, pose, &camera, &opaque());
        save(&a, &format!("agree_{name}_{label}_cpu"));
        save(&b, &format!("agree_{name}_{label}_gpu"));
        assert_eq!(
            a, a2,
            "{name} {label}: the CPU path is not stable across frames"
        );
        assert_agree(&a, &b, &format!("{name} {label}"));
    }
}

#[test]
fn auto_mode_picks_the_cpu_path_on_software_renderers() {
    let avatar = synthetic_head();
    let ctx = context(64, 64);
    let renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).expect("renderer");
    let software = facewire::render::is_software_renderer(renderer.gl_renderer());
    let expect = if software {
        MorphPath::Cpu
    } else {
        MorphPath::Gpu
    };
    assert_eq!(renderer.morph_path(), expect, "{}", renderer.gl_renderer());
}

#[test]
fn morph_target_changes_only_its_region() {
    let avatar = synthetic_head();
    let ctx = context(SIZE, SIZE);
    let camera = camera_for(&avatar);
    let head = avatar.find_node("head").unwrap();
    let world = avatar.world_transforms(&avatar.rest_pose())[head];
    let view_proj = camera.view_proj();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).expect("renderer");
        let neutral = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, &opaque());
        let brow = render(
            &ctx,
            &mut renderer,
            &pose_with(&avatar, &[(BROW_LEFT, 1.0)]),
            &camera,
            &opaque(),
        );
        save(&brow, &format!("region_brow_{mode}"));

        // The screen box of every triangle that touches a vertex the target moves, before and
        // after the move, plus a pixel of margin for antialiasing.
        let prim = &avatar.meshes[0].primitives[0];
        let target = &prim.targets[BROW_LEFT];
        let (mut lo, mut hi) = (Vec2::splat(f32::MAX), Vec2::splat(f32::MIN));
        for tri in prim.indices.chunks_exact(3) {
            if tri
                .iter()
                .all(|&v| target.positions[v as usize] == Vec3::ZERO)
            {
                continue;
            }
            for &v in tri {
                let (p, d) = (prim.positions[v as usize], target.positions[v as usize]);
                for q in [p, p + d] {
                    let s = to_pixel(view_proj, world.transform_point3(q));
                    lo = lo.min(s);
                    hi = hi.max(s);
                }
            }
        }
        let (lo, hi) = (lo - Vec2::splat(1.5), hi + Vec2::splat(1.5));
        let changed = changed_pixels(&neutral, &brow, 3);
        let inside = changed
            .iter()
            .filter(|(x, y)| {
                let (x, y) = (*x as f32 + 0.5, *y as f32 + 0.5);
                x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y
            })
            .count();
        let outside = changed.len() - inside;
        eprintln!("{mode}: {inside} changed pixels inside {lo}..{hi}, {outside} outside");
        assert!(
            inside > 150,
            "{mode}: the brow target barely changed the image ({inside})"
        );
        assert!(
            outside <= inside / 100,
            "{mode}: {outside} pixels changed outside the region"
        );
        // The region is the viewer's upper left, where the target was sculpted.
        assert!(
            hi.x < SIZE as f32 * 0.62 && hi.y < SIZE as f32 * 0.6,
            "{lo}..{hi}"
        );
    }
}

#[test]
fn node_rotation_changes_the_image_and_moves_children() {
    let avatar = synthetic_head();
    let ctx = context(SIZE, SIZE);
    let camera = camera_for(&avatar);
    let head = avatar.find_node("head").unwrap();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).expect("renderer");
        let rest = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, &opaque());
        let mut pose = avatar.rest_pose();
        // Turn the head to the viewer's right (a positive yaw turns +Z towards +X).
        pose.rotations[head] = Quat::from_rotation_y(0.6);
        let turned = render(&ctx, &mut renderer, &pose, &camera, &opaque());
        save(&rest, &format!("rotation_rest_{mode}"));
        save(&turned, &format!("rotation_turned_{mode}"));
        let changed = changed_pixels(&rest, &turned, 8).len();
        assert!(
            changed > 1500,
            "{mode}: turning the head changed only {changed} pixels"
        );
        // The eyes (a child mesh) follow the head: their dark pixels move right.
        let dark_centroid = |img: &RgbaImage| {
            let (mut sum, mut n) = (0.0, 0.0);
            for y in 0..SIZE {
                for x in 0..SIZE {
                    let p = img.pixel(x, y);
                    if is_object(p) && p[0].max(p[1]).max(p[2]) < 75 {
                        sum += x as f32;
                        n += 1.0;
                    }
                }
            }
            assert!(n > 10.0, "{mode}: no eye pixels");
            sum / n
        };
        let (before, after) = (dark_centroid(&rest), dark_centroid(&turned));
        assert!(
            after > before + 10.0,
            "{mode}: eyes at x {before} then {after}"
        );
    }
}

#[test]
fn transparent_background_is_premultiplied() {
    let avatar = synthetic_head();
    let ctx = context(SIZE, SIZE);
    let camera = camera_for(&avatar);
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Gpu).expect("renderer");
    let pose = pose_with(&avatar, &[(JAW, 0.5)]);
    for (name, clear) in [
        ("clear", [0.0, 1.0, 0.0, 0.0]),
        ("half", [0.2, 0.4, 0.6, 0.5]),
    ] {
        let target = DrawTarget {
            width: SIZE,
            height: SIZE,
            clear_color: clear,
            alpha: true,
        };
        let img = render(&ctx, &mut renderer, &pose, &camera, &target);
        save(&img, &format!("premultiplied_{name}"));
        for p in img.data.chunks_exact(4) {
            assert!(
                p[0] <= p[3] && p[1] <= p[3] && p[2] <= p[3],
                "{name}: {p:?}"
            );
        }
        let expect = [0, 1, 2, 3].map(|k| {
            let a = clear[3];
            ((if k == 3 { a } else { clear[k] * a }) * 255.0).round() as i32
        });
        for (x, y) in [(0, 0), (SIZE - 1, 0), (0, SIZE - 1), (SIZE - 1, SIZE - 1)] {
            let p = img.pixel(x, y).map(i32::from);
            for k in 0..4 {
                assert!(
                    (p[k] - expect[k]).abs() <= 1,
                    "{name}: corner {p:?} vs {expect:?}"
                );
            }
        }
        assert_eq!(
            img.pixel(SIZE / 2, SIZE / 2)[3],
            255,
            "{name}: object not opaque"
        );
    }
    // Without alpha, the same clear colour gives an opaque chroma background.
    let target = DrawTarget {
        width: SIZE,
        height: SIZE,
        clear_color: [0.0, 1.0, 0.0, 0.0],
        alpha: false,
    };
    let img = render(&ctx, &mut renderer, &pose, &camera, &target);
    assert_eq!(img.pixel(0, 0), [0, 255, 0, 255]);
}

#[test]
fn non_finite_and_huge_weights_are_sanitized() {
    let avatar = synthetic_head();
    let ctx = context(SIZE, SIZE);
    let camera = camera_for(&avatar);
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).expect("renderer");
        let zero = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, &opaque());
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            // Go through a non-zero frame first, so a stale upload cannot pass for a sanitised
            // one.
            render(
                &ctx,
                &mut renderer,
                &pose_with(&avatar, &[(NOSE, 1.0)]),
                &camera,
                &opaque(),
            );
            let pose = pose_with(&avatar, &[(NOSE, bad), (JAW, bad), (BROW_LEFT, bad)]);
            let img = render(&ctx, &mut renderer, &pose, &camera, &opaque());
            assert_eq!(img, zero, "{mode}: weight {bad} did not render as 0");
        }
        let two = render(
            &ctx,
            &mut renderer,
            &pose_with(&avatar, &[(NOSE, 2.0)]),
            &camera,
            &opaque(),
        );
        let huge = render(
            &ctx,
            &mut renderer,
            &pose_with(&avatar, &[(NOSE, 1e30)]),
            &camera,
            &opaque(),
        );
        save(&huge, &format!("sanitized_huge_{mode}"));
        assert_eq!(huge, two, "{mode}: a huge weight was not clamped to 2");
        // Short and missing weight arrays count as zeros; extra entries are ignored.
        let mut pose = avatar.rest_pose();
        pose.weights[0] = vec![0.0, 0.0, 0.0, 1.0, 1.0];
        pose.weights.truncate(1);
        pose.rotations.truncate(1);
        assert_eq!(render(&ctx, &mut renderer, &pose, &camera, &opaque()), zero);
    }
}

#[test]
fn texture_orientation_and_lighting_read_well() {
    let avatar = synthetic_head();
    let ctx = context(SIZE, SIZE);
    let camera = camera_for(&avatar);
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Cpu).expect("renderer");
    let img = render(&ctx, &mut renderer, &avatar.rest_pose(), &camera, &opaque());
    save(&img, "lighting_neutral");

    let head = avatar.world_transforms(&avatar.rest_pose())[avatar.find_node("head").unwrap()];
    let vp = camera.view_proj();
    let at = |d: Vec3| {
        let s = to_pixel(vp, head.transform_point3(d.normalize() * RADIUS));
        img.pixel(s.x as u32, s.y as u32)
    };
    // v = 0 (the texture's top row, warm) is the top of the head; the lower half is cool.
    let upper = at(Vec3::new(0.0, 0.6, 0.8));
    let lower = at(Vec3::new(0.0, -0.6, 0.8));
    assert!(
        upper[0] > upper[2] + 30,
        "upper face is not warm: {upper:?}"
    );
    assert!(
        lower[2] > lower[0] + 20,
        "lower face is not cool: {lower:?}"
    );
    // The red marker (u 0.56..0.62, v 0.28..0.34) sits right of centre, in the upper half.
    let (mut sum, mut n) = (Vec2::ZERO, 0.0);
    for y in 0..SIZE {
        for x in 0..SIZE {
            let p = img.pixel(x, y);
            if p[0] > 120 && p[1] < 60 && p[2] < 60 {
                sum += Vec2::new(x as f32, y as f32);
                n += 1.0;
            }
        }
    }
    assert!(n > 5.0, "red marker not visible");
    let centre = to_pixel(vp, head.transform_point3(Vec3::ZERO));
    let marker = sum / n;
    assert!(
        marker.x > centre.x + 3.0 && marker.y < centre.y - 3.0,
        "marker at {marker}, head centre {centre}"
    );

    // The key light comes from the viewer's upper left: that side is brighter than the lower
    // right, and no part of the lit face falls to black.
    let luma = |p: [u8; 4]| 0.2126 * p[0] as f32 + 0.7152 * p[1] as f32 + 0.0722 * p[2] as f32;
    let upper_left = luma(at(Vec3::new(-0.5, 0.3, 0.8)));
    let upper_right = luma(at(Vec3::new(0.5, 0.3, 0.8)));
    assert!(
        upper_left > upper_right + 5.0,
        "key side {upper_left} vs fill side {upper_right}"
    );
    let mut darkest = f32::MAX;
    for y in 0..SIZE {
        for x in 0..SIZE {
            let p = img.pixel(x, y);
            // Skin pixels only: skip the background, the eyes, the grid lines and the marker.
            if is_object(p) && (p[0] > 40 || p[2] > 40) {
                let skin = p[0].max(p[2]);
                if skin > 0 {
                    darkest = darkest.min(luma(p));
                }
            }
        }
    }
    assert!(darkest > 12.0, "some skin is nearly black: luma {darkest}");
}

#[test]
fn msaa_and_single_sample_contexts_both_work() {
    // By default, software rasterisers get no MSAA and hardware gets 4x.
    let auto = context(16, 16);
    let probe = Renderer::new(auto.gl(), &Avatar::default(), MorphMode::Auto).expect("renderer");
    let software = facewire::render::is_software_renderer(probe.gl_renderer());
    drop(probe);
    assert_eq!(auto.samples() == 0, software, "{}", auto.device());
    drop(auto);

    let avatar = synthetic_head();
    let camera = camera_for(&avatar);
    let plain = HeadlessContext::with_samples(SIZE, SIZE, 0).expect("headless context");
    assert_eq!(plain.samples(), 0);
    let mut renderer = Renderer::new(plain.gl(), &avatar, MorphMode::Gpu).expect("renderer");
    let a = render(
        &plain,
        &mut renderer,
        &avatar.rest_pose(),
        &camera,
        &opaque(),
    );
    drop(renderer);
    drop(plain);
    let msaa = HeadlessContext::with_samples(SIZE, SIZE, 4).expect("headless context");
    assert!(
        msaa.samples() >= 2,
        "4x MSAA is available on every GL 3.3 driver"
    );
    let mut renderer = Renderer::new(msaa.gl(), &avatar, MorphMode::Gpu).expect("renderer");
    let b = render(
        &msaa,
        &mut renderer,
        &avatar.rest_pose(),
        &camera,
        &opaque(),
    );
    save(&a, "samples_1");
    save(&b, "samples_msaa");
    // Same picture; only silhouette pixels differ.
    let diff = a.compare(&b, 12).unwrap();
    assert!(diff.fraction_within() > 0.97, "{diff:?}");
}

#[test]
fn hostile_avatar_data_is_skipped_not_fatal() {
    let good = synthetic_head();
    let camera = camera_for(&good);
    let mut avatar = good.clone();
    // A second primitive in the head mesh with every kind of broken data.
    let mut bad = uv_sphere(RADIUS * 0.5, Vec3::new(0.0, -RADIUS, 0.0), 6, 8);
    bad.normals.truncate(3);
    bad.uvs.truncate(5);
    bad.targets = vec![MorphTarget {
        positions: vec![Vec3::Y * 0.1; 7].into(),
        normals: vec![Vec3::X; 2].into(),
        ..MorphTarget::default()
    }];
    bad.material = Some(42);
    avatar.meshes[0].primitives.push(bad);
    let mut out_of_range = uv_sphere(RADIUS, Vec3::ZERO, 4, 4);
    out_of_range.indices.push(10_000);
    avatar.meshes[0].primitives.push(out_of_range);
    avatar.meshes[0].primitives.push(Primitive::default());
    avatar.materials.push(Material {
        base_color: [f32::NAN, 2.0, -1.0, 1.0],
        base_color_texture: Some(7),
        ..Material::default()
    });
    avatar.materials[1].base_color_texture = Some(1);
    avatar.textures.push(Texture {
        width: 4,
        height: 4,
        rgba: vec![0; 10].into(),
        sampler: Default::default(),
    });
    avatar.textures.push(Texture {
        width: 0,
        height: 0,
        rgba: Vec::new().into(),
        sampler: Default::default(),
    });
    avatar.nodes[2].mesh = Some(99);
    avatar.nodes[2].children = vec![0, 77];
    avatar.roots.push(1234);

    let ctx = context(SIZE, SIZE);
    let mut images = Vec::new();
    for mode in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, mode).expect("renderer");
        let mut pose = pose_with(&avatar, &[(NOSE, 0.5), (JAW, 1.0)]);
        pose.rotations[1] = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 0.0);
        let img = render(&ctx, &mut renderer, &pose, &camera, &opaque());
        save(&img, &format!("hostile_{mode}"));
        images.push(img);
    }
    assert_agree(&images[0], &images[1], "hostile");
    let object = images[0]
        .data
        .chunks_exact(4)
        .filter(|p| is_object([p[0], p[1], p[2], p[3]]))
        .count();
    assert!(object > 1000, "the valid parts were not drawn");
}

#[test]
fn bad_sizes_are_errors_not_panics() {
    assert!(HeadlessContext::new(0, 10).is_err());
    assert!(HeadlessContext::new(10, 1 << 30).is_err());
}

#[test]
fn default_head_renders_on_both_paths() {
    let path = crate::support::repo().join("models/default_head.glb");
    if !path.exists() {
        eprintln!(
            "note: {} is absent; skipping the default head render",
            path.display()
        );
        return;
    }
    let avatar = match facewire::avatar::load(&path) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("note: the default head does not load yet ({e}); skipping");
            return;
        }
    };
    let ctx = context(SIZE, SIZE);
    let camera = Camera::framing(avatar.bounds().expect("head has geometry"), 1.0);
    let mut cpu = Renderer::new(ctx.gl(), &avatar, MorphMode::Cpu).expect("cpu renderer");
    let mut gpu = Renderer::new(ctx.gl(), &avatar, MorphMode::Gpu).expect("gpu renderer");
    let mut poses = vec![("neutral", avatar.rest_pose())];
    let mut expressive = avatar.rest_pose();
    for (m, weights) in expressive.weights.iter_mut().enumerate() {
        for (t, w) in weights.iter_mut().enumerate() {
            *w = ((m * 7 + t * 13) % 10) as f32 / 10.0;
        }
    }
    // As the runtime poses it: a face-shape slider drives one of its two ends, and corrective
    // targets follow their inputs, so no more targets are active than the GPU path keeps.
    for (m, mesh) in avatar.meshes.iter().enumerate() {
        for (t, name) in mesh.target_names.iter().enumerate() {
            if name.starts_with("look_") && name.ends_with("_down") {
                expressive.weights[m][t] = 0.0;
            }
        }
    }
    facewire::avatar::correctives::Correctives::resolve(&avatar).apply(&mut expressive);
    poses.push(("expressive", expressive));
    for (name, pose) in &poses {
        let a = render(&ctx, &mut cpu, pose, &camera, &opaque());
        let b = render(&ctx, &mut gpu, pose, &camera, &opaque());
        save(&a, &format!("default_head_{name}_cpu"));
        save(&b, &format!("default_head_{name}_gpu"));
        assert_agree(&a, &b, name);
        let object = a
            .data
            .chunks_exact(4)
            .filter(|p| is_object([p[0], p[1], p[2], p[3]]))
            .count();
        assert!(
            object > (SIZE * SIZE / 10) as usize,
            "{name}: the head covers only {object} pixels"
        );
    }
}

/// The stage window under an X server (CI runs these under Xvfb): a frame is drawn and read
/// back from the window's framebuffer, and a transparent request either gets alpha or falls
/// back to an opaque window without panicking. Skipped without `DISPLAY`.
#[test]
fn window_renders_under_x11() {
    use winit::application::ApplicationHandler;
    use winit::event::WindowEvent;
    use winit::event_loop::{ActiveEventLoop, EventLoop};
    use winit::platform::x11::EventLoopBuilderExtX11;
    use winit::window::WindowId;

    use facewire::render::window::{self, GlWindow, WindowOptions};

    init_logs();
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("note: DISPLAY is not set; skipping the window test");
        return;
    }
    let event_loop = match EventLoop::builder().with_any_thread(true).build() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("note: no usable X server ({e}); skipping the window test");
            return;
        }
    };

    struct App {
        avatar: Avatar,
        // Declared before the window so it drops first (its GL objects need the context).
        renderer: Option<Renderer>,
        window: Option<GlWindow>,
        transparent: bool,
        result: Option<Result<(RgbaImage, bool), String>>,
        deadline: std::time::Instant,
    }
    impl ApplicationHandler for App {
        fn resumed(&mut self, event_loop: &ActiveEventLoop) {
            if self.window.is_some() {
                return;
            }
            let options = WindowOptions {
                title: "facewire render test".into(),
                width: 200,
                height: 160,
                transparent: self.transparent,
                vsync: false,
                position: None,
                multisample: true,
            };
            match window::create(event_loop, &options) {
                Ok(w) => {
                    match Renderer::new(w.gl(), &self.avatar, MorphMode::Auto) {
                        Ok(r) => self.renderer = Some(r),
                        Err(e) => self.result = Some(Err(e.to_string())),
                    }
                    w.window().request_redraw();
                    self.window = Some(w);
                }
                Err(e) => self.result = Some(Err(e.to_string())),
            }
            if self.result.is_some() {
                event_loop.exit();
            }
        }

        fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
            let (Some(w), Some(r)) = (&mut self.window, &mut self.renderer) else {
                return;
            };
            match event {
                WindowEvent::Resized(size) => w.resize(size.width, size.height),
                WindowEvent::RedrawRequested => {
                    let (width, height) = w.size();
                    let target = w.draw_target([0.0, 1.0, 0.0, 0.0]);
                    let camera = Camera::framing(
                        self.avatar.bounds().unwrap(),
                        width as f32 / height as f32,
                    );
                    w.bind();
                    r.draw(&self.avatar.rest_pose(), &camera, &target);
                    let img = w.read_rgba();
                    let _ = w.swap_buffers();
                    self.result = Some(Ok((img, w.has_alpha())));
                    event_loop.exit();
                }
                _ => {}
            }
        }

        fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
            if std::time::Instant::now() > self.deadline {
                self.result
                    .get_or_insert(Err("no redraw within the deadline".into()));
                event_loop.exit();
            }
        }
    }

    let mut app = App {
        avatar: synthetic_head(),
        renderer: None,
        window: None,
        transparent: true,
        result: None,
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(20),
    };
    event_loop.set_control_flow(winit::event_loop::ControlFlow::Poll);
    event_loop.run_app(&mut app).expect("event loop");
    drop(app.renderer.take());
    drop(app.window.take());
    let (img, has_alpha) = app.result.expect("the app ran").expect("window frame");
    save(&img, "window_frame");
    let centre = img.pixel(img.width / 2, img.height / 2);
    assert!(
        is_object(centre) && centre[1] < 250,
        "centre shows no head: {centre:?}"
    );
    let corner = img.pixel(0, 0);
    if has_alpha {
        assert_eq!(corner, [0, 0, 0, 0], "transparent window corner");
    } else {
        assert_eq!(&corner[..3], &[0, 255, 0], "opaque chroma corner");
    }
    eprintln!("window: has_alpha = {has_alpha}");
}

/// An overlay image lands 1:1 at its pixel position, blends by its alpha, and keeps the frame
/// premultiplied over a transparent background.
#[test]
fn overlay_is_placed_in_pixels_and_stays_premultiplied() {
    use facewire::app::Scene;
    use facewire::headgen::DEFAULT_HEAD_GLB;
    use facewire::image::RgbaImage;
    use facewire::render::overlay::Overlay;
    use facewire::render::{DrawTarget, MorphMode};

    let ctx = facewire::render::headless::HeadlessContext::with_samples(160, 120, 0).unwrap();
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").unwrap();
    let mut scene = Scene::new(ctx.gl(), avatar, MorphMode::Cpu).unwrap();
    let mut overlay = Overlay::new(ctx.gl()).unwrap();
    // A 20x10 image: left half opaque white, right half half-transparent red.
    let mut image = RgbaImage::filled(20, 10, [255, 255, 255, 255]);
    for y in 0..10 {
        for x in 10..20 {
            let i = (y * 20 + x) * 4;
            image.data[i..i + 4].copy_from_slice(&[255, 0, 0, 128]);
        }
    }
    overlay.set_image(&image);
    assert_eq!(overlay.size(), (20, 10));
    ctx.bind();
    scene.set_frame(None);
    scene.draw(&DrawTarget {
        width: 160,
        height: 120,
        clear_color: [0.0, 0.0, 0.0, 0.0],
        alpha: true,
    });
    overlay.draw((160, 120), 5, 7);
    let out = ctx.read_rgba();
    assert_eq!(out.pixel(6, 8), [255, 255, 255, 255], "opaque part");
    let red = out.pixel(20, 12);
    assert!(
        red[0] >= 126 && red[0] <= 129 && red[1] == 0 && red[3] >= 126 && red[3] <= 129,
        "{red:?}"
    );
    assert_eq!(out.pixel(4, 8), [0, 0, 0, 0], "left of the overlay");
    assert_eq!(out.pixel(6, 18), [0, 0, 0, 0], "below the overlay");
    for p in out.data.chunks_exact(4) {
        assert!(
            p[0] <= p[3] && p[1] <= p[3] && p[2] <= p[3],
            "not premultiplied: {p:?}"
        );
    }
}

/// The stage's avatar keeps no second copy of its texture pixels once the GL holds them, and it
/// still draws textured (the skin is not the white a missing texture gives).
#[test]
fn the_scene_frees_texture_pixels_after_upload_and_still_draws_them() {
    use facewire::app::Scene;
    use facewire::headgen::DEFAULT_HEAD_GLB;
    use facewire::render::{DrawTarget, MorphMode};

    let ctx = facewire::render::headless::HeadlessContext::with_samples(96, 96, 0).unwrap();
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").unwrap();
    let sizes: Vec<_> = avatar
        .textures
        .iter()
        .map(|t| (t.width, t.height))
        .collect();
    assert!(avatar.textures.iter().all(|t| !t.rgba.is_empty()));
    let mut scene = Scene::new(ctx.gl(), avatar, MorphMode::Cpu).unwrap();
    let kept = &scene.avatar().textures;
    // The colour atlas's pixels are freed; the wrinkle maps, which no material samples, keep
    // theirs until a mapping asks for them.
    for (index, t) in kept.iter().enumerate() {
        assert_eq!(
            t.rgba.is_empty(),
            scene.avatar().texture_sampled(index),
            "texture {index}"
        );
    }
    assert!(kept[0].rgba.is_empty(), "the atlas's pixels are freed");
    assert_eq!(
        kept.iter().map(|t| (t.width, t.height)).collect::<Vec<_>>(),
        sizes
    );
    ctx.bind();
    scene.set_frame(None);
    scene.draw(&DrawTarget {
        width: 96,
        height: 96,
        clear_color: [0.0, 0.0, 0.0, 1.0],
        alpha: false,
    });
    let image = ctx.read_rgba();
    // The hair's texture is brown: somewhere in the frame red clearly exceeds blue.
    let brown = image
        .data
        .chunks_exact(4)
        .filter(|p| p[0] > 60 && u16::from(p[0]) > u16::from(p[2]) + 30)
        .count();
    assert!(brown > 50, "textured pixels: {brown}");
}
