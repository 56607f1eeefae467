//! Every avatar in the fixtures, rendered: each morph target at full weight changes the image,
//! and only where that target's vertices move (their triangles projected with the same camera,
//! skins applied on the CPU), on the cpu morph path. A target whose vertices are all hidden may
//! change nothing; every model must have targets that change something.

use std::path::{Path, PathBuf};

use facewire::avatar::{self, blend, Avatar};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, MorphMode, Renderer};
use glam::{Mat4, Vec2, Vec3};

/// Image size of these renders.
const SIZE: u32 = 192;
/// Background of these renders, far from any model's colours.
const BACKGROUND: [f32; 4] = [0.05, 0.0, 0.1, 1.0];
/// At most this many targets per mesh are rendered (the first ones), to keep the test short.
const TARGETS_PER_MESH: usize = 12;
/// A pixel changed when a channel differs by more than this.
const THRESHOLD: u8 = 6;
/// Pixels of slack around the projected region (rasterisation, multisampling, outlines).
const SLACK: f32 = 4.0;

/// Every model file in the glTF and VRM fixture folders.
fn models(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("gltf"), root.join("vrm")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "gltf" | "glb" | "vrm"))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// World positions of one primitive's vertices in the rest pose, with `delta` (one per vertex,
/// or none) added in bind space, skinned where the primitive is.
fn world_positions(
    avatar: &Avatar,
    node: usize,
    prim: &avatar::Primitive,
    world: &[Mat4],
    delta: Option<&[Vec3]>,
) -> Vec<Vec3> {
    let joints = avatar
        .node_skin(node)
        .map(|skin| avatar.joint_matrices(skin, world));
    let skinned = joints.as_deref().filter(|_| {
        prim.joints.len() == prim.positions.len()
            && prim.joint_weights.len() == prim.positions.len()
    });
    prim.positions
        .iter()
        .enumerate()
        .map(|(v, p)| {
            let model = match skinned {
                Some(m) => {
                    blend::skin_matrix(prim.joints[v], prim.joint_weights[v], m, world[node])
                }
                None => world[node],
            };
            let d = delta.and_then(|d| d.get(v)).copied().unwrap_or(Vec3::ZERO);
            model.transform_point3(*p + d)
        })
        .collect()
}

/// The screen box of the triangles of `mesh` that have a vertex moved by `target`, at rest and
/// displaced; `None` when the target moves nothing.
fn moving_region(
    avatar: &Avatar,
    mesh: usize,
    target: usize,
    camera: &Camera,
) -> Option<(Vec2, Vec2)> {
    let world = avatar.world_transforms(&avatar.rest_pose());
    let view_proj = camera.view_proj();
    let to_pixel = |p: Vec3| {
        let ndc = view_proj.project_point3(p);
        Vec2::new(
            (ndc.x * 0.5 + 0.5) * SIZE as f32,
            (0.5 - ndc.y * 0.5) * SIZE as f32,
        )
    };
    let mut region: Option<(Vec2, Vec2)> = None;
    for (node, n) in avatar.nodes.iter().enumerate() {
        if n.mesh != Some(mesh) {
            continue;
        }
        for prim in &avatar.meshes[mesh].primitives {
            let Some(t) = prim.targets.get(target) else {
                continue;
            };
            let moves = |v: usize| {
                t.positions.get(v).is_some_and(|d| d.length() > 1e-6)
                    || t.normals.get(v).is_some_and(|d| d.length() > 1e-4)
            };
            let rest = world_positions(avatar, node, prim, &world, None);
            let moved = world_positions(avatar, node, prim, &world, Some(&t.positions.to_vec()));
            for tri in prim.indices.chunks_exact(3) {
                if !tri.iter().any(|&v| moves(v as usize)) {
                    continue;
                }
                for &v in tri {
                    for p in [rest[v as usize], moved[v as usize]] {
                        let q = to_pixel(p);
                        region = Some(match region {
                            Some((lo, hi)) => (lo.min(q), hi.max(q)),
                            None => (q, q),
                        });
                    }
                }
            }
        }
    }
    region
}

fn changed(a: &RgbaImage, b: &RgbaImage) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for y in 0..a.height {
        for x in 0..a.width {
            let (p, q) = (a.pixel(x, y), b.pixel(x, y));
            if p.iter()
                .zip(q)
                .take(3)
                .any(|(m, n)| m.abs_diff(n) > THRESHOLD)
            {
                out.push((x, y));
            }
        }
    }
    out
}

#[test]
fn every_fixture_target_changes_the_image_only_where_it_moves() {
    let Some(root) = crate::support::fixtures("the fixture render check") else {
        return;
    };
    let ctx = HeadlessContext::new(SIZE, SIZE).expect("headless context");
    let target = DrawTarget {
        width: SIZE,
        height: SIZE,
        clear_color: BACKGROUND,
        alpha: false,
    };
    let out = crate::support::repo().join("target/fixture-render");
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    for path in models(&root) {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let avatar = avatar::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Some(bounds) = avatar.bounds() else {
            continue;
        };
        let reach = avatar.deformation_bounds().unwrap_or(bounds);
        let camera = Camera::framing(bounds, 1.0).reaching(reach);
        let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Cpu).expect("renderer");
        let draw = |renderer: &mut Renderer, pose: &avatar::Pose| {
            ctx.bind();
            renderer.draw(pose, &camera, &target);
            ctx.read_rgba()
        };
        let rest_pose = avatar.rest_pose();
        let rest = draw(&mut renderer, &rest_pose);
        let mut visible = 0;
        for (mesh, m) in avatar.meshes.iter().enumerate() {
            for t in 0..m.target_count().min(TARGETS_PER_MESH) {
                let mut pose = rest_pose.clone();
                // Full weight, or none where the model rests at full weight.
                let w = &mut pose.weights[mesh][t];
                *w = if *w > 0.5 { 0.0 } else { 1.0 };
                let image = draw(&mut renderer, &pose);
                let diff = changed(&rest, &image);
                if diff.is_empty() {
                    continue;
                }
                visible += 1;
                let label = format!("{name} mesh {mesh} target {t} ({})", m.target_names[t]);
                let (lo, hi) = moving_region(&avatar, mesh, t, &camera)
                    .unwrap_or_else(|| panic!("{label}: the image changed, but no vertex moves"));
                let outside: Vec<&(u32, u32)> = diff
                    .iter()
                    .filter(|&&(x, y)| {
                        let (x, y) = (x as f32 + 0.5, y as f32 + 0.5);
                        x < lo.x - SLACK || x > hi.x + SLACK || y < lo.y - SLACK || y > hi.y + SLACK
                    })
                    .collect();
                if !outside.is_empty() {
                    image
                        .save_png(&out.join(format!("{name}-{mesh}-{t}.png")))
                        .unwrap();
                    rest.save_png(&out.join(format!("{name}-rest.png")))
                        .unwrap();
                }
                assert!(
                    outside.len() * 200 <= diff.len(),
                    "{label}: {} of {} changed pixels lie outside the moving region \
                     {lo:?}..{hi:?}, e.g. {:?}",
                    outside.len(),
                    diff.len(),
                    &outside[..outside.len().min(5)]
                );
            }
        }
        let targets: usize = avatar.meshes.iter().map(|m| m.target_count()).sum();
        eprintln!("{name}: {visible} visible targets checked of {targets}");
        if targets > 0 {
            assert!(visible > 0, "{name}: no target changes the image");
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} fixture models rendered");
}
